//! The swap cache (mm/swap_state.c): folios that have swap slots and are (or were
//! just) in memory — a folio between folio_alloc_swap and its freeing after writeback,
//! and pages read in by swap readahead. A whole THP is one entry with 512 slots.
//! Frames carry PG_swapcache; the maps here give slot -> page and folio -> slots.
//! swapin_readahead → swap_vma_readahead: for devices without SWP_SYNCHRONOUS_IO a
//! fault reads a window of neighbouring swap PTEs (swapin_nr_pages: the window grows
//! with readahead hits up to 1 << page_cluster = 8 pages), counting swap_ra for pages
//! read ahead and swap_ra_hit when a later fault finds one.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::memory::Mapping;
use crate::mm_types::*;
use crate::page_alloc::GFP_HIGHUSER_MOVABLE;
use crate::swapfile::*;
use crate::vmstat::Ev;

/// vm.page-cluster default: readahead of up to 1 << 3 pages.
pub const PAGE_CLUSTER: u32 = 3;

impl Kernel {
    #[inline]
    pub fn folio_head(&self, pfn: u64) -> u64 {
        if compound(self.pm.frames[pfn as usize]) == COMPOUND_TAIL {
            hpage_pfn_align(pfn)
        } else {
            pfn
        }
    }
    /// folio_mapped(): is any page of the folio mapped?
    pub fn folio_mapped(&self, head: u64) -> bool {
        let f = self.pm.frames[head as usize];
        if compound(f) != COMPOUND_HEAD {
            return rmap(f).is_some();
        }
        (0..HPAGE_PMD_NR).any(|i| rmap(self.pm.frames[(head + i) as usize]).is_some())
    }

    /// add_to_swap_cache(): the folio at `head` now caches slots `slot..slot + nr`.
    pub fn add_to_swap_cache(&mut self, head: u64, slot: u32, nr: u32) {
        for i in 0..nr {
            self.swap.cache.insert(slot + i, (head + i as u64) as u32);
            *self.swap.map_mut(slot + i) |= SWAP_HAS_CACHE;
        }
        self.swap.cache_of.insert(head as u32, (slot, nr));
        let f = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_swapcache(f, true);
        self.charge(self.costs.page_alloc_ns);
        self.lock_acquire(crate::locking::LockId::SwapCache, self.costs.page_free_ns);
    }

    /// delete_from_swap_cache() + put_swap_folio(): the folio leaves the cache; slots no
    /// swap PTE references any more are released.
    pub fn delete_from_swap_cache(&mut self, head: u64) {
        let Some((slot, nr)) = self.swap.cache_of.remove(&(head as u32)) else { return };
        let f = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_swapcache(f, false);
        for s in slot..slot + nr {
            self.swap.cache.remove(&s);
            self.swapcache_clear(s);
        }
        self.charge(self.costs.page_free_ns);
        self.lock_acquire(crate::locking::LockId::SwapCache, self.costs.page_free_ns);
    }

    /// The swap cache's slots of a folio.
    pub fn swap_slots_of(&self, head: u64) -> Option<(u32, u32)> {
        self.swap.cache_of.get(&(head as u32)).copied()
    }

    /// Move a cached folio's entries to new frames (migration of a swap-cache folio).
    pub fn swap_cache_move(&mut self, src: u64, dst: u64) {
        if let Some((slot, nr)) = self.swap.cache_of.remove(&(src as u32)) {
            for i in 0..nr {
                self.swap.cache.insert(slot + i, (dst + i as u64) as u32);
            }
            self.swap.cache_of.insert(dst as u32, (slot, nr));
        }
    }

    /// folio_free_swap(): drop a folio's swap copy when no swap PTE still needs it
    /// (a write to a swap-cache page: its slot is stale).
    pub fn folio_free_swap(&mut self, head: u64) -> bool {
        let Some((slot, nr)) = self.swap_slots_of(head) else { return false };
        if (slot..slot + nr).any(|s| self.swap.map(s) & SWAP_COUNT_MASK != 0) {
            return false;
        }
        self.delete_from_swap_cache(head);
        true
    }

    /// swapin_nr_pages(): the readahead window for a fault at `slot`.
    fn swapin_nr_pages(&mut self, slot: u32) -> u32 {
        let max = 1u32 << PAGE_CLUSTER;
        let hits = std::mem::take(&mut self.swap.ra_hits) as u32;
        let prev = self.swap.ra_prev;
        self.swap.ra_prev = slot;
        let mut pages = hits + 2;
        if pages == 2 {
            // no hits: readahead only on sequential faults
            if slot != prev.wrapping_add(1) && slot != prev.wrapping_sub(1) {
                pages = 1;
            }
        } else {
            pages = pages.next_power_of_two();
        }
        pages.min(max)
    }

    /// swap_vma_readahead(): read a window of the VMA's other swap PTEs around `addr` into
    /// the swap cache, then the faulting slot itself last, as the kernel does (its final
    /// __read_swap_cache_async() takes the reference the fault maps): a target read first
    /// would sit clean on the LRU, where the direct reclaim of a later readahead allocation
    /// could free it. Returns the page for the fault, or None when memory ran out (or the
    /// OOM killer chose this mm).
    pub fn swap_vma_readahead(&mut self, mm: MmId, addr: u64, slot: u32) -> Option<u64> {
        let win = self.swapin_nr_pages(slot) as u64;
        let page = addr >> PAGE_SHIFT;
        let (vs, ve) = self.mms[mm]
            .find_vma(addr)
            .map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT))
            .unwrap_or((page, page + 1));
        // the window is aligned to its size and clipped to the VMA and the PMD
        let pmd0 = page & !(PTRS_PER_PTE as u64 - 1);
        let start = (page & !(win - 1)).max(vs).max(pmd0);
        let end = (start + win).min(ve).min(pmd0 + PTRS_PER_PTE as u64);
        for p in start..end {
            if p == page {
                continue;
            }
            let Mapping::Swap(s) = self.follow(mm, p << PAGE_SHIFT) else { continue };
            if self.read_swap_cache_async(mm, s, true) == SwapRead::NoMemory {
                break;
            }
        }
        match self.read_swap_cache_async(mm, slot, false) {
            SwapRead::Page(pfn) => Some(pfn),
            SwapRead::Freed | SwapRead::NoMemory => None,
        }
    }

    /// __read_swap_cache_async(): the swap-cache page of `slot`, read into a new page when
    /// it is not cached (marked as readahead when `readahead`). An entry freed meanwhile
    /// (swapcache_prepare() fails) gives Freed.
    fn read_swap_cache_async(&mut self, mm: MmId, s: u32, readahead: bool) -> SwapRead {
        loop {
            let m = self.swap.map(s);
            if m & SWAP_COUNT_MASK == 0 {
                return SwapRead::Freed;
            }
            if m & SWAP_HAS_CACHE != 0 {
                return self.swap.cache.get(&s).map_or(SwapRead::Freed, |&x| SwapRead::Page(x as u64));
            }
            let nid = self.mms[mm].node;
            let Some(Pfn(pfn)) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return SwapRead::NoMemory };
            if !self.mms[mm].alive {
                // the allocation's OOM kill chose this mm: its swap entries are gone
                self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
                return SwapRead::NoMemory;
            }
            let m = self.swap.map(s);
            if m & SWAP_COUNT_MASK == 0 || m & SWAP_HAS_CACHE != 0 {
                // the entry changed while we allocated: look again
                self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
                continue;
            }
            self.pm.frames[pfn as usize] = make_anon(COMPOUND_BASE);
            self.charge(self.costs.fault_4k_ns / 4);
            self.add_to_swap_cache(pfn, s, 1);
            self.swap_read_folio(pfn, 1, s);
            // the read is clean: the copy on swap is valid
            self.lru_add(pfn, 1, false);
            if readahead {
                *self.swap.map_mut(s) |= SWAP_READAHEAD;
                self.rec.vm.count(Ev::SWAP_RA);
            }
            return SwapRead::Page(pfn);
        }
    }

    /// swap_cache_get_folio(): the cached page for `slot`, counting a readahead hit.
    pub fn swap_cache_lookup(&mut self, slot: u32) -> Option<u64> {
        let m = self.swap.map(slot);
        if m & SWAP_HAS_CACHE == 0 {
            return None;
        }
        let pfn = *self.swap.cache.get(&slot)? as u64;
        if m & SWAP_READAHEAD != 0 {
            *self.swap.map_mut(slot) &= !SWAP_READAHEAD;
            self.rec.vm.count(Ev::SWAP_RA_HIT);
            self.swap.ra_hits += 1;
        }
        Some(pfn)
    }
}

/// What __read_swap_cache_async() found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SwapRead {
    Page(u64),
    /// the entry was freed (no longer swapped)
    Freed,
    /// no page could be allocated
    NoMemory,
}
