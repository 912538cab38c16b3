//! The cost profile: what each kernel primitive costs in simulated time.
//! Defaults are documented estimates for a ~2.5 GHz x86-64 server core; `thplab calibrate`
//! measures the host and writes a profile of the same shape (TOML), which
//! `thplab run --costs FILE` uses. Every field is optional in a file: missing
//! fields keep their defaults. All times in nanoseconds.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Per-content-class figures for a zram compressor (ns per 4 KiB page, compressed bytes).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CompressorCosts {
    /// Detecting a same-filled page (page_same_filled) and storing it: no compression.
    pub same_ns: u64,
    pub sparse_compress_ns: u64,
    pub text_compress_ns: u64,
    pub random_compress_ns: u64,
    pub sparse_decompress_ns: u64,
    pub text_decompress_ns: u64,
    /// Incompressible pages are stored raw (ZRAM_HUGE): a copy.
    pub random_decompress_ns: u64,
    pub sparse_bytes: u64,
    pub text_bytes: u64,
    /// Stored uncompressed when compression does not pay (>= huge_class_size).
    pub random_bytes: u64,
}
impl Default for CompressorCosts {
    fn default() -> Self {
        // lzo-rle class figures: ~1.5 GB/s on sparse input, ~400 MB/s on text, ~250 MB/s on random.
        CompressorCosts {
            same_ns: 250,
            sparse_compress_ns: 2_500,
            text_compress_ns: 10_000,
            random_compress_ns: 16_000,
            sparse_decompress_ns: 1_200,
            text_decompress_ns: 3_000,
            random_decompress_ns: 400,
            sparse_bytes: 48,
            text_bytes: 1_400,
            random_bytes: 4_096,
        }
    }
}

/// A block device's service model: latency per request plus size / bandwidth.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceCosts {
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Extra latency when a request is not sequential to the previous one (seek).
    pub random_penalty_ns: u64,
    pub read_mb_per_s: u64,
    pub write_mb_per_s: u64,
}
impl Default for DeviceCosts {
    fn default() -> Self {
        DeviceCosts {
            read_latency_ns: 100_000,
            write_latency_ns: 50_000,
            random_penalty_ns: 0,
            read_mb_per_s: 2_000,
            write_mb_per_s: 1_500,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CostProfile {
    pub name: String,
    /// Where the numbers come from ("documented defaults", "calibrated on <host> <date>").
    pub source: String,
    pub cpu_ghz: f64,

    // ---- page faults (mm/memory.c, mm/huge_memory.c) ----
    /// Exception entry/exit plus handle_mm_fault for a 4 KiB anonymous fault, without clearing.
    pub fault_4k_ns: u64,
    /// The same for a PMD (THP) fault, without clearing (do_huge_pmd_anonymous_page).
    pub fault_2m_ns: u64,
    /// A read fault that maps the shared zero page.
    pub fault_zero_ns: u64,
    /// clear_page_erms of 4 KiB.
    pub clear_4k_ns: u64,
    /// clear_huge_page of 2 MiB.
    pub clear_2m_ns: u64,
    /// copy_user_highpage of 4 KiB.
    pub copy_4k_ns: u64,
    /// Copying 2 MiB (collapse, THP migration).
    pub copy_2m_ns: u64,
    /// memchr_inv over a whole 4 KiB page (the zero check); cost scales with the offset reached.
    pub memchr_inv_4k_ns: u64,
    /// Writing one byte to an already-mapped page (store + cache miss), per page touched by a write op.
    pub touch_page_ns: u64,

    // ---- syscalls and page-table work ----
    pub syscall_ns: u64,
    /// Per 4 KiB PTE visited by munmap/madvise/mprotect walks.
    pub pte_walk_ns: u64,
    /// Per PMD entry visited.
    pub pmd_walk_ns: u64,
    /// Allocating and freeing a page through the buddy allocator.
    pub page_alloc_ns: u64,
    pub page_free_ns: u64,
    /// Local TLB flush of a range.
    pub tlb_flush_ns: u64,
    /// A TLB-shootdown IPI to another CPU.
    pub tlb_ipi_ns: u64,

    // ---- split / migration / reclaim (later issues) ----
    pub split_pmd_ns: u64,
    pub split_folio_ns: u64,
    /// Migrating one 4 KiB anonymous page (migrate_folio: unmap through the rmap, copy,
    /// remap, TLB flush). Calibrated from a live vm.compact_memory run (calibrate.rs).
    pub migrate_4k_ns: u64,
    pub reclaim_scan_page_ns: u64,
    pub unmap_page_ns: u64,

    // ---- compaction (mm/compaction.c) ----
    /// One step of the migrate scanner (isolate_migratepages_block: one struct page
    /// looked at; a free buddy or a compound folio is stepped over in one step).
    /// Calibrated from a live vm.compact_memory run (calibrate.rs).
    pub compact_scan_migrate_ns: u64,
    /// One step of the free scanner (isolate_freepages_block, with its stride).
    pub compact_scan_free_ns: u64,
    /// A pageblock considered by a scanner's block loop (pageblock_pfn_to_page, the skip
    /// bit, the migratetype).
    pub compact_block_ns: u64,
    /// A free-list entry examined by fast_find_migrateblock / fast_isolate_freepages
    /// (a cache-cold struct page under the zone lock).
    pub compact_freelist_ns: u64,
    /// Isolating one page from its LRU list (folio_get, lru_lock, list removal).
    pub compact_isolate_ns: u64,

    // ---- memory access and TLB (the TLB model) ----
    /// Cycles an access costs when its translation hits the L1 dTLB.
    pub access_cycles: f64,
    /// Extra cycles for an L1 dTLB miss that hits the STLB.
    pub stlb_hit_cycles: f64,
    /// Extra cycles for a page walk (STLB miss), 4 KiB and 2 MiB translations.
    pub walk_4k_cycles: f64,
    pub walk_2m_cycles: f64,

    // ---- virtual machine ----
    /// First touch of a 2 MiB block the guest reported free to the host (free page reporting).
    pub refault_reported_2m_ns: u64,

    // ---- swap devices (issue: reclaim and swap) ----
    pub zram: BTreeMap<String, CompressorCosts>,
    pub disk: DeviceCosts,
    pub ssd: DeviceCosts,
    pub pmem: DeviceCosts,
    pub file: DeviceCosts,

    /// Spread of each measured primitive over repetitions (calibrated profiles): name -> relative stddev.
    pub spread: BTreeMap<String, f64>,
}

impl Default for CostProfile {
    fn default() -> Self {
        let mut zram = BTreeMap::new();
        zram.insert("lzo-rle".to_string(), CompressorCosts::default());
        zram.insert("lzo".to_string(), CompressorCosts { sparse_compress_ns: 2_800, ..CompressorCosts::default() });
        zram.insert(
            "lz4".to_string(),
            CompressorCosts {
                sparse_compress_ns: 1_500,
                text_compress_ns: 6_000,
                random_compress_ns: 5_000,
                sparse_decompress_ns: 600,
                text_decompress_ns: 1_200,
                text_bytes: 1_700,
                ..CompressorCosts::default()
            },
        );
        CostProfile {
            name: "default".into(),
            source: "documented defaults (estimates for a ~2.5 GHz x86-64 server core; run `thplab calibrate` for this host)".into(),
            cpu_ghz: 2.5,
            fault_4k_ns: 700,
            fault_2m_ns: 2_500,
            fault_zero_ns: 500,
            clear_4k_ns: 160,
            clear_2m_ns: 85_000,
            copy_4k_ns: 250,
            copy_2m_ns: 140_000,
            memchr_inv_4k_ns: 350,
            touch_page_ns: 60,
            syscall_ns: 250,
            pte_walk_ns: 12,
            pmd_walk_ns: 20,
            page_alloc_ns: 90,
            page_free_ns: 80,
            tlb_flush_ns: 150,
            tlb_ipi_ns: 2_500,
            split_pmd_ns: 3_000,
            split_folio_ns: 12_000,
            migrate_4k_ns: 900,
            compact_scan_migrate_ns: 8,
            compact_scan_free_ns: 6,
            compact_block_ns: 15,
            compact_freelist_ns: 40,
            compact_isolate_ns: 100,
            reclaim_scan_page_ns: 60,
            unmap_page_ns: 150,
            access_cycles: 1.0,
            stlb_hit_cycles: 7.0,
            walk_4k_cycles: 30.0,
            walk_2m_cycles: 22.0,
            refault_reported_2m_ns: 2_000_000,
            zram,
            disk: DeviceCosts { read_latency_ns: 150_000, write_latency_ns: 150_000, random_penalty_ns: 6_000_000, read_mb_per_s: 180, write_mb_per_s: 160 },
            ssd: DeviceCosts { read_latency_ns: 80_000, write_latency_ns: 30_000, random_penalty_ns: 0, read_mb_per_s: 2_500, write_mb_per_s: 1_800 },
            pmem: DeviceCosts { read_latency_ns: 1_000, write_latency_ns: 1_500, random_penalty_ns: 0, read_mb_per_s: 10_000, write_mb_per_s: 6_000 },
            file: DeviceCosts { read_latency_ns: 150_000, write_latency_ns: 150_000, random_penalty_ns: 6_000_000, read_mb_per_s: 180, write_mb_per_s: 160 },
            spread: BTreeMap::new(),
        }
    }
}

impl CostProfile {
    /// Parse a TOML profile; missing fields keep defaults, unknown fields are errors.
    pub fn from_toml(text: &str) -> Result<CostProfile, String> {
        toml::from_str(text).map_err(|e| format!("cost profile: {e}"))
    }
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("serialise costs")
    }
    pub fn validate(&self) -> Result<(), String> {
        if !(self.cpu_ghz > 0.1 && self.cpu_ghz < 20.0) {
            return Err("cost profile: cpu_ghz must be between 0.1 and 20".into());
        }
        for v in [self.access_cycles, self.stlb_hit_cycles, self.walk_4k_cycles, self.walk_2m_cycles] {
            if !(v.is_finite() && v >= 0.0) {
                return Err("cost profile: cycle figures must be finite and non-negative".into());
            }
        }
        Ok(())
    }
    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        cycles / self.cpu_ghz
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn toml_roundtrip_and_partial() {
        let d = CostProfile::default();
        let t = d.to_toml();
        assert_eq!(CostProfile::from_toml(&t).unwrap(), d);
        let p = CostProfile::from_toml("clear_4k_ns = 99\n").unwrap();
        assert_eq!(p.clear_4k_ns, 99);
        assert_eq!(p.clear_2m_ns, d.clear_2m_ns);
        assert!(CostProfile::from_toml("bogus = 1\n").unwrap_err().contains("bogus"));
    }
}
