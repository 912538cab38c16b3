//! Nodes, zones and pageblocks (include/linux/mmzone.h), laid out from a machine
//! description the way x86-64 firmware does it, and the watermarks
//! (mm/page_alloc.c: calculate_min_free_kbytes, __setup_per_zone_wmarks,
//! setup_per_zone_lowmem_reserve; mm/khugepaged.c: set_recommended_min_free_kbytes).

use crate::consts::*;
use crate::mm_types::List;
use thplab_workload::machine::MachineSpec;

/// enum migratetype (no CMA: x86 defconfig kernels print these five in pagetypeinfo).
pub const MIGRATE_UNMOVABLE: u8 = 0;
pub const MIGRATE_MOVABLE: u8 = 1;
pub const MIGRATE_RECLAIMABLE: u8 = 2;
pub const MIGRATE_HIGHATOMIC: u8 = 3;
pub const MIGRATE_ISOLATE: u8 = 4;
pub const MIGRATE_PCPTYPES: u8 = 3;
/// Free lists kept per zone and order (ISOLATE is printed, never used).
pub const NR_FREE_LISTS: usize = 4;
pub const MIGRATE_TYPES: usize = 5;
pub const MIGRATETYPE_NAMES: [&str; MIGRATE_TYPES] = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"];

/// fallbacks[] in mm/page_alloc.c
pub fn fallbacks(mt: u8) -> [u8; 2] {
    match mt {
        MIGRATE_UNMOVABLE => [MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE],
        MIGRATE_MOVABLE => [MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE],
        _ => [MIGRATE_UNMOVABLE, MIGRATE_MOVABLE],
    }
}

pub const ZONE_DMA: usize = 0;
pub const ZONE_DMA32: usize = 1;
pub const ZONE_NORMAL: usize = 2;
pub const ZONE_MOVABLE: usize = 3;
pub const MAX_NR_ZONES: usize = 4;
pub const ZONE_NAMES: [&str; MAX_NR_ZONES] = ["DMA", "DMA32", "Normal", "Movable"];
/// sysctl_lowmem_reserve_ratio defaults
pub const LOWMEM_RESERVE_RATIO: [u64; MAX_NR_ZONES] = [256, 256, 32, 0];

pub const WMARK_MIN: usize = 0;
pub const WMARK_LOW: usize = 1;
pub const WMARK_HIGH: usize = 2;
pub const WMARK_PROMO: usize = 3;

/// One free_area: a free list per migratetype (struct list_head free_list[]), threaded
/// through PhysMem's links for order 0 and through each block's second frame above it
/// (mm_types.rs `TailCells`), plus nr_free per migratetype.
/// Allocation takes the head; frees go to the head, or to the tail when the block is
/// likely to merge soon (buddy_merge_likely) or at boot (FPI_TO_TAIL).
#[derive(Clone, Default)]
pub struct FreeArea {
    pub lists: [List; NR_FREE_LISTS],
    pub nr_free: [u64; NR_FREE_LISTS],
}

#[derive(Clone)]
pub struct Zone {
    pub node: usize,
    pub idx: usize,
    pub name: &'static str,
    pub start_pfn: u64,
    pub spanned: u64,
    pub present: u64,
    pub managed: u64,
    pub free_area: Vec<FreeArea>,
    pub free_pages: u64,
    pub watermark: [u64; 4],
    pub watermark_boost: u64,
    pub boosted: bool,
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    /// Compaction state (mm/compaction.c), used by the compaction issue.
    pub compact_cached_free_pfn: u64,
    pub compact_cached_migrate_pfn: [u64; 2],
    pub compact_considered: u32,
    pub compact_defer_shift: u32,
    pub compact_order_failed: i32,
    /// compaction: the scanners met in a direct compaction; kswapd clears the skip bits
    pub compact_blockskip_flush: bool,
    /// where __reset_isolation_suitable() last found a migration source / free target
    pub compact_init_migrate_pfn: u64,
    pub compact_init_free_pfn: u64,
    /// ZONE_BELOW_HIGH: an allocation found the zone below its high watermark (the per-CPU
    /// lists then hold less); cleared when a pcp free finds it above again
    pub below_high: bool,
    /// ZONE_RECLAIM_ACTIVE: kswapd is balancing the node (the per-CPU lists hold less)
    pub reclaim_active: bool,
    /// pageset_batch, pageset_high_min, pageset_high_max (zone_set_pageset_high_and_batch)
    pub pcp_batch: u64,
    pub pcp_high_min: u64,
    pub pcp_high_max: u64,
}

impl Zone {
    /// A zone as the boot code sets it up (free_area_init_core): empty free lists, no
    /// watermarks yet, compaction state cleared.
    pub fn new(zl: &ZoneLayout, present: u64, free_area: Vec<FreeArea>) -> Zone {
        Zone {
            node: zl.node,
            idx: zl.idx,
            name: ZONE_NAMES[zl.idx],
            start_pfn: zl.start_pfn,
            spanned: zl.spanned,
            present,
            managed: present - zl.reserved,
            free_area,
            free_pages: 0,
            watermark: [0; 4],
            watermark_boost: 0,
            boosted: false,
            lowmem_reserve: [0; MAX_NR_ZONES],
            compact_cached_free_pfn: (zl.start_pfn + zl.spanned - 1) & !(PAGEBLOCK_NR_PAGES - 1),
            compact_cached_migrate_pfn: [zl.start_pfn; 2],
            compact_considered: 0,
            compact_defer_shift: 0,
            compact_order_failed: 0,
            compact_blockskip_flush: false,
            compact_init_migrate_pfn: 0,
            compact_init_free_pfn: 0,
            below_high: false,
            reclaim_active: false,
            pcp_batch: 0,
            pcp_high_min: 0,
            pcp_high_max: 0,
        }
    }
    pub fn end_pfn(&self) -> u64 {
        self.start_pfn + self.spanned
    }
    pub fn spans(&self, pfn: u64) -> bool {
        pfn >= self.start_pfn && pfn < self.end_pfn()
    }
    pub fn populated(&self) -> bool {
        self.present > 0
    }
    /// wmark_pages(): the watermark plus the boost.
    pub fn wmark(&self, w: usize) -> u64 {
        self.watermark[w] + self.watermark_boost
    }
    /// NR_FREE_PAGES_BLOCKS (v6.15+): free pages in blocks of order >= pageblock_order.
    pub fn free_pages_blocks(&self) -> u64 {
        (PAGEBLOCK_ORDER as usize..NR_PAGE_ORDERS).map(|o| self.nr_free_order(o) << o).sum()
    }
    pub fn nr_free_order(&self, order: usize) -> u64 {
        self.free_area[order].nr_free.iter().sum()
    }
}

#[derive(Clone)]
pub struct Node {
    pub id: usize,
    pub zones: Vec<usize>,
    pub start_pfn: u64,
    pub end_pfn: u64,
    pub cpus: Vec<u32>,
    pub present: u64,
}

/// A zone-to-be: (node, zone idx, start, spanned, present-holes list, reserved pages).
pub struct ZoneLayout {
    pub node: usize,
    pub idx: usize,
    pub start_pfn: u64,
    pub spanned: u64,
    /// pfn ranges inside the span that are not present (firmware holes)
    pub holes: Vec<(u64, u64)>,
    /// pages taken by the kernel at boot (memmap, kernel image, firmware), never managed
    pub reserved: u64,
}

const GIB_PAGES: u64 = (1 << 30) >> PAGE_SHIFT;
const DMA_END: u64 = (16 << 20) >> PAGE_SHIFT;
const DMA32_LOW_END: u64 = 3 * GIB_PAGES; // RAM below the PCI hole
const NORMAL_START: u64 = 4 * GIB_PAGES;

/// Lay out the machine's zones. Node 0: DMA [1, 16M) with the 640K-1M hole (present 3998
/// pages, as on a real PC), DMA32 up to 3 GiB, ZONE_NORMAL from 4 GiB. Further nodes
/// start on the next 1 GiB boundary with ZONE_NORMAL only. Reserved (never-managed)
/// pages: the struct-page array (64 bytes per present page) in each node's highest zone,
/// the kernel's own reserve in node 0's DMA32 zone, 158 pages of DMA (BIOS, trampoline).
pub fn layout(m: &MachineSpec) -> Result<Vec<ZoneLayout>, String> {
    let mut out = vec![];
    let kernel_reserve = m.kernel_reserve.map_or(36 << 20, |s| s.0) >> PAGE_SHIFT;
    let mut next_start = 0u64;
    for (n, node) in m.nodes.iter().enumerate() {
        let pages = node.mem.0 >> PAGE_SHIFT;
        let memmap = (pages * 64).div_ceil(PAGE_SIZE);
        let mut zones: Vec<ZoneLayout> = vec![];
        if n == 0 {
            let dma_present = 3998u64;
            zones.push(ZoneLayout {
                node: 0,
                idx: ZONE_DMA,
                start_pfn: 1,
                spanned: DMA_END - 1,
                holes: vec![(159, 256)],
                reserved: 158,
            });
            let mut left = pages.saturating_sub(dma_present + 98); // pfn 0 and the hole are not RAM
            let dma32 = left.min(DMA32_LOW_END - DMA_END);
            left -= dma32;
            zones.push(ZoneLayout {
                node: 0,
                idx: ZONE_DMA32,
                start_pfn: DMA_END,
                spanned: dma32,
                holes: vec![],
                reserved: kernel_reserve,
            });
            if left > 0 {
                zones.push(ZoneLayout {
                    node: 0,
                    idx: ZONE_NORMAL,
                    start_pfn: NORMAL_START,
                    spanned: left,
                    holes: vec![],
                    reserved: 0,
                });
                next_start = NORMAL_START + left;
            } else {
                next_start = DMA_END + dma32;
            }
        } else {
            let start = next_start.div_ceil(GIB_PAGES) * GIB_PAGES;
            zones.push(ZoneLayout {
                node: n,
                idx: ZONE_NORMAL,
                start_pfn: start,
                spanned: pages,
                holes: vec![],
                reserved: 0,
            });
            next_start = start + pages;
        }
        zones.last_mut().unwrap().reserved += memmap;
        for z in &zones {
            let present = z.spanned - z.holes.iter().map(|(a, b)| b - a).sum::<u64>();
            if z.reserved + 1024 > present {
                return Err(format!(
                    "machine.nodes[{n}].mem: {} MiB is too small for the kernel's own reserve ({} pages in zone {})",
                    node.mem.0 >> 20,
                    z.reserved,
                    ZONE_NAMES[z.idx]
                ));
            }
        }
        out.extend(zones);
    }
    if next_start >= (1u64 << 29) {
        return Err("machine: physical address space beyond 2 TiB is not supported".into());
    }
    Ok(out)
}

/// The pages the buddy allocator manages on a freshly booted `m` (MemTotal, and MemFree
/// before anything allocates): each zone's present pages less its reserve, from the layout
/// alone (no frame array).
pub fn managed_pages(m: &MachineSpec) -> Result<u64, String> {
    Ok(layout(m)?.iter().map(|z| z.spanned - z.holes.iter().map(|(a, b)| b - a).sum::<u64>() - z.reserved).sum())
}

pub fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// calculate_min_free_kbytes(): sqrt(lowmem_kbytes * 16), clamped to [128, 262144].
pub fn calculate_min_free_kbytes(lowmem_pages: u64) -> u64 {
    let lowmem_kbytes = lowmem_pages * 4;
    int_sqrt(lowmem_kbytes * 16).clamp(128, 262144)
}

/// set_recommended_min_free_kbytes() (mm/khugepaged.c) while PMD THP is enabled:
/// 2 pageblocks per zone plus MIGRATE_PCPTYPES^2 pageblocks per zone, capped at 5 % of lowmem.
pub fn recommended_min_free_kbytes(nr_zones: u64, lowmem_pages: u64) -> u64 {
    let mut rec = PAGEBLOCK_NR_PAGES * nr_zones * 2;
    rec += PAGEBLOCK_NR_PAGES * nr_zones * (MIGRATE_PCPTYPES as u64) * (MIGRATE_PCPTYPES as u64);
    rec = rec.min(lowmem_pages / 20);
    rec * 4
}

/// __setup_per_zone_wmarks() for one zone.
pub fn zone_wmarks(min_free_kbytes: u64, managed: u64, lowmem_pages: u64, watermark_scale_factor: u64) -> [u64; 4] {
    let pages_min = min_free_kbytes >> 2;
    let min = (pages_min * managed).checked_div(lowmem_pages).unwrap_or(0);
    let tmp = (min >> 2).max(managed * watermark_scale_factor / 10000);
    [min, min + tmp, min + 2 * tmp, min + 3 * tmp]
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn live_machine_watermarks() {
        // The 24 GiB VM this project runs on: managed pages read from /proc/zoneinfo,
        // min_free_kbytes 67584 = the THP floor for 3 zones. Expected values are the
        // kernel's own (/proc/zoneinfo min/low/high), worked by hand from the formulas.
        let managed = [3840u64, 772915, 294912];
        let lowmem: u64 = managed.iter().sum();
        assert_eq!(calculate_min_free_kbytes(lowmem), 8281); // sqrt(4286668*16)
        assert_eq!(recommended_min_free_kbytes(3, lowmem), 67584);
        assert_eq!(zone_wmarks(67584, managed[0], lowmem, 10)[..3], [60, 75, 90]);
        assert_eq!(zone_wmarks(67584, managed[1], lowmem, 10)[..3], [12185, 15231, 18277]);
        assert_eq!(zone_wmarks(67584, managed[2], lowmem, 10)[..3], [4649, 5811, 6973]);
    }
    #[test]
    fn layout_24g() {
        let m = MachineSpec::parse_shorthand("24G").unwrap();
        let l = layout(&m).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].start_pfn, l[0].spanned), (1, 4095));
        assert_eq!((l[1].start_pfn, l[1].spanned), (4096, 782336)); // as /proc/zoneinfo
        assert_eq!(l[2].start_pfn, 1048576);
        let m = MachineSpec::parse_shorthand("2x512G").unwrap();
        let l = layout(&m).unwrap();
        assert_eq!(l.len(), 4);
        assert_eq!(l[3].start_pfn % GIB_PAGES, 0);
        assert!(layout(&MachineSpec::parse_shorthand("64M").unwrap()).is_ok());
    }
}
