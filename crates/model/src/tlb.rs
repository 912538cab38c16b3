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

/// A set-associative array with true LRU replacement, kept by position: in each set, way 0
/// holds the most recently used key and empty ways (EMPTY) are at the end. A hit moves its
/// key to the front; an insert pushes the set down, so the last way, the least recently used
/// or an empty one, falls out.
#[derive(Clone, Debug)]
struct SetAssoc {
    sets: u64,
    ways: usize,
    tags: Vec<u64>,
}
const EMPTY: u64 = u64::MAX;

/// Ways 0..i move down one, `key` goes to way 0 (way i's old key is dropped).
#[inline(always)]
fn move_to_front<T: Copy>(set: &mut [T], i: usize, key: T) {
    let mut j = i;
    while j > 0 {
        set[j] = set[j - 1];
        j -= 1;
    }
    set[0] = key;
}

impl SetAssoc {
    fn new(entries: u32, ways: u32) -> SetAssoc {
        SetAssoc { sets: (entries / ways) as u64, ways: ways as usize, tags: vec![EMPTY; entries as usize] }
    }
    #[inline]
    fn set(&mut self, key: u64) -> &mut [u64] {
        // index by the low bits of the page number (the size bit is the key's lowest bit)
        let base = (((key >> 1) % self.sets) as usize) * self.ways;
        &mut self.tags[base..base + self.ways]
    }
    #[inline]
    fn lookup(&mut self, key: u64) -> bool {
        let set = self.set(key);
        match set.iter().position(|&t| t == key) {
            Some(i) => {
                move_to_front(set, i, key);
                true
            }
            None => false,
        }
    }
    /// A key known not to be in its set.
    #[inline]
    fn insert(&mut self, key: u64) {
        let set = self.set(key);
        move_to_front(set, set.len() - 1, key);
    }
    fn invalidate(&mut self, key: u64) {
        let set = self.set(key);
        if let Some(i) = set.iter().position(|&t| t == key) {
            set[i..].rotate_left(1);
            set[set.len() - 1] = EMPTY;
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
    /// one host cache line per set: the tags (line / number of sets), most recent first
    sets: Vec<LineSet>,
    pub misses: u64,
}

pub const CACHE_LINE: u64 = 64;
const CACHE_WAYS: usize = 16;
const NO_LINE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct LineSet([u32; CACHE_WAYS]);

impl DataCache {
    /// One access to physical line `line` (the frame number times 64 plus the line in the
    /// page) of a cache of `bytes`; true when it hit. A cache of 0 bytes always hits.
    #[inline]
    pub fn access(&mut self, line: u64, bytes: u64) -> bool {
        let nsets = bytes / CACHE_LINE / CACHE_WAYS as u64;
        if nsets == 0 {
            return true;
        }
        if self.sets.is_empty() {
            self.sets = vec![LineSet([NO_LINE; CACHE_WAYS]); nsets as usize];
        }
        let tag = (line / nsets) as u32;
        debug_assert!(tag != NO_LINE);
        let set = &mut self.sets[(line % nsets) as usize].0;
        let hit = set.iter().position(|&t| t == tag);
        // to the front; a miss overwrites the last way (the least recently used, or empty)
        move_to_front(set, hit.unwrap_or(CACHE_WAYS - 1), tag);
        if hit.is_none() {
            self.misses += 1;
        }
        hit.is_some()
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
        assert!(c.sets.is_empty() && c.misses == 0);
    }
    #[test]
    fn a_set_evicts_its_least_recently_used_way_and_fills_holes_first() {
        // one set of 4 ways; keys carry the size bit, so page numbers 0, 1, 2 ... are 0, 2, 4
        let mut s = SetAssoc::new(4, 4);
        for p in 0..4u64 {
            s.insert(p << 1);
        }
        assert!(s.lookup(0), "page 0 is in, and now the most recent");
        s.insert(4 << 1); // evicts page 1, the least recent
        assert!(!s.lookup(1 << 1) && s.lookup(0) && s.lookup(2 << 1) && s.lookup(3 << 1) && s.lookup(4 << 1));
        s.invalidate(2 << 1);
        s.insert(5 << 1); // takes the hole: nothing evicted
        assert!(s.lookup(0) && s.lookup(3 << 1) && s.lookup(4 << 1) && s.lookup(5 << 1) && !s.lookup(2 << 1));
        // the same for the data cache's sets: 64 KiB is 64 sets; lines 0, 64, 128 ... share set 0
        let mut c = DataCache::default();
        let b = 64 << 10;
        for l in 0..16u64 {
            assert!(!c.access(l * 64, b));
        }
        assert!(c.access(0, b), "line 0 is in, and now the most recent");
        assert!(!c.access(16 * 64, b)); // evicts line 64
        assert!(c.access(0, b) && !c.access(64, b) && c.misses == 18);
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
