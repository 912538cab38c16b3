//! A data-TLB model: an L1 dTLB for 4 KiB and one for 2 MiB translations, and a unified
//! second-level TLB (STLB), each set-associative with LRU replacement. Driven by the
//! workload's access streams; counts what perf would call dTLB-load-misses and
//! dTLB-store-misses (misses that cause a page walk), STLB hits, walks and their cycles.
//! Range flushes follow flush_tlb_mm_range(): up to tlb_single_page_flush_ceiling (33)
//! pages are invalidated one by one, larger ranges flush the whole TLB.

use crate::consts::*;
use thplab_workload::costs::CostProfile;
use thplab_workload::machine::TlbSpec;
use thplab_workload::result::TlbStats;

pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

#[derive(Clone, Debug)]
struct SetAssoc {
    sets: u64,
    ways: usize,
    tags: Vec<u64>,
    stamp: Vec<u32>,
    clock: u32,
}
const EMPTY: u64 = u64::MAX;

impl SetAssoc {
    fn new(entries: u32, ways: u32) -> SetAssoc {
        let n = entries as usize;
        SetAssoc {
            sets: (entries / ways) as u64,
            ways: ways as usize,
            tags: vec![EMPTY; n],
            stamp: vec![0; n],
            clock: 0,
        }
    }
    #[inline]
    fn set_of(&self, key: u64) -> usize {
        // index by the low bits of the page number (the size bit is the key's lowest bit)
        (((key >> 1) % self.sets) as usize) * self.ways
    }
    #[inline]
    fn lookup(&mut self, key: u64) -> bool {
        let base = self.set_of(key);
        self.clock = self.clock.wrapping_add(1);
        for w in base..base + self.ways {
            if self.tags[w] == key {
                self.stamp[w] = self.clock;
                return true;
            }
        }
        false
    }
    fn insert(&mut self, key: u64) {
        let base = self.set_of(key);
        let mut victim = base;
        for w in base..base + self.ways {
            if self.tags[w] == EMPTY {
                victim = w;
                break;
            }
            if self.stamp[w].wrapping_sub(self.stamp[victim]) > u32::MAX / 2 {
                // older (wrapping compare)
                victim = w;
            }
        }
        self.clock = self.clock.wrapping_add(1);
        self.tags[victim] = key;
        self.stamp[victim] = self.clock;
    }
    fn invalidate(&mut self, key: u64) {
        let base = self.set_of(key);
        for w in base..base + self.ways {
            if self.tags[w] == key {
                self.tags[w] = EMPTY;
            }
        }
    }
    fn flush(&mut self) {
        self.tags.iter_mut().for_each(|t| *t = EMPTY);
    }
}

/// The last-level data cache the access streams go through: physically indexed 64-byte
/// lines, 16-way set-associative with LRU replacement, of the cost profile's cache_bytes.
/// Only the access op's loads and stores fill it (a fault's clear, a copy or the kernel's
/// own walks are not traced through it); a line missing costs cache_miss_ns. The table is
/// allocated at the first access.
#[derive(Clone, Debug, Default)]
pub struct DataCache {
    lines: Option<SetAssoc>,
    pub misses: u64,
}

pub const CACHE_LINE: u64 = 64;
const CACHE_WAYS: u32 = 16;

impl DataCache {
    /// One access to physical line `line` (the frame number times 64 plus the line in the
    /// page) of a cache of `bytes`; true when it hit. A cache of 0 bytes always hits.
    #[inline]
    pub fn access(&mut self, line: u64, bytes: u64) -> bool {
        let nlines = (bytes / CACHE_LINE) as u32;
        if nlines < CACHE_WAYS {
            return true;
        }
        let c = self.lines.get_or_insert_with(|| SetAssoc::new(nlines / CACHE_WAYS * CACHE_WAYS, CACHE_WAYS));
        // the set index takes the key without its lowest bit (the TLB's size bit)
        let k = line << 1;
        if c.lookup(k) {
            return true;
        }
        c.insert(k);
        self.misses += 1;
        false
    }
}

#[derive(Clone, Debug)]
pub struct Tlb {
    l1_4k: SetAssoc,
    l1_2m: SetAssoc,
    stlb: SetAssoc,
    last: u64,
    pub stats: TlbStats,
    pub flushes: u64,
    /// entries were inserted since the last full flush (an empty TLB needs no clearing)
    filled: bool,
}

#[inline]
fn key(addr: u64, huge: bool) -> u64 {
    if huge {
        ((addr >> PMD_SHIFT) << 1) | 1
    } else {
        (addr >> PAGE_SHIFT) << 1
    }
}

impl Tlb {
    pub fn new(s: &TlbSpec) -> Tlb {
        Tlb {
            l1_4k: SetAssoc::new(s.l1_4k_entries, s.l1_4k_ways),
            l1_2m: SetAssoc::new(s.l1_2m_entries, s.l1_2m_ways),
            stlb: SetAssoc::new(s.stlb_entries, s.stlb_ways),
            last: EMPTY,
            stats: TlbStats::default(),
            flushes: 0,
            filled: false,
        }
    }

    /// One load or store through the TLB; returns the cycles it cost.
    #[inline]
    pub fn access(&mut self, addr: u64, huge: bool, write: bool, c: &CostProfile) -> f64 {
        self.stats.accesses += 1;
        let k = key(addr, huge);
        if k == self.last {
            return c.access_cycles;
        }
        self.last = k;
        let l1 = if huge { &mut self.l1_2m } else { &mut self.l1_4k };
        if l1.lookup(k) {
            return c.access_cycles;
        }
        if self.stlb.lookup(k) {
            self.stats.stlb_hits += 1;
            let l1 = if huge { &mut self.l1_2m } else { &mut self.l1_4k };
            l1.insert(k);
            return c.access_cycles + c.stlb_hit_cycles;
        }
        self.stats.page_walks += 1;
        self.filled = true;
        if write {
            self.stats.dtlb_store_misses += 1;
        } else {
            self.stats.dtlb_load_misses += 1;
        }
        let walk = if huge { c.walk_2m_cycles } else { c.walk_4k_cycles };
        self.stats.walk_cycles += walk as u64;
        self.stlb.insert(k);
        let l1 = if huge { &mut self.l1_2m } else { &mut self.l1_4k };
        l1.insert(k);
        c.access_cycles + c.stlb_hit_cycles + walk
    }

    /// flush_tlb_mm_range() for [start, end).
    pub fn flush_range(&mut self, start: u64, end: u64) {
        self.flushes += 1;
        self.last = EMPTY;
        if !self.filled {
            return;
        }
        let pages = (end - start) / PAGE_SIZE;
        if pages > TLB_SINGLE_PAGE_FLUSH_CEILING {
            self.filled = false;
            self.l1_4k.flush();
            self.l1_2m.flush();
            self.stlb.flush();
            return;
        }
        let mut a = start;
        while a < end {
            for huge in [false, true] {
                let k = key(a, huge);
                self.l1_4k.invalidate(k);
                self.l1_2m.invalidate(k);
                self.stlb.invalidate(k);
            }
            a += PAGE_SIZE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_data_cache_holds_its_capacity_and_no_more() {
        // 1 MiB of cache: 16384 lines. Half of that read twice: the second pass hits.
        let mut c = DataCache::default();
        for _ in 0..2 {
            for l in 0..8192 {
                c.access(l, 1 << 20);
            }
        }
        assert_eq!(c.misses, 8192);
        // twice the capacity, line by line, twice: LRU keeps none of it for the second pass
        let mut c = DataCache::default();
        for _ in 0..2 {
            for l in 0..32768 {
                c.access(l, 1 << 20);
            }
        }
        assert_eq!(c.misses, 65536);
        // no cache: every access hits, nothing is allocated
        let mut c = DataCache::default();
        assert!(c.access(5, 0));
        assert!(c.lines.is_none() && c.misses == 0);
    }
    #[test]
    fn huge_pages_cover_more() {
        let c = CostProfile::default();
        let spec = TlbSpec::default();
        // 128 MiB touched page by page, twice: 4 KiB translations overflow the STLB,
        // 2 MiB ones (64 of them) fit in it.
        let mut t4 = Tlb::new(&spec);
        let mut t2 = Tlb::new(&spec);
        for _ in 0..2 {
            for p in 0..(128u64 << 20) / 4096 {
                t4.access(p * 4096, false, false, &c);
                t2.access(p * 4096, true, false, &c);
            }
        }
        assert_eq!(t4.stats.page_walks, 2 * 32768);
        assert_eq!(t2.stats.page_walks, 64, "second pass hits the STLB");
        t2.flush_range(0, 128 << 20);
        t2.access(0, true, true, &c);
        assert_eq!(t2.stats.dtlb_store_misses, 1);
    }
}
