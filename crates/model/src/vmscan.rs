//! Reclaim (mm/vmscan.c): the LRU scan (shrink_lruvec → shrink_active_list /
//! shrink_inactive_list → shrink_folio_list), kswapd (balance_pgdat, kswapd_try_to_sleep),
//! direct reclaim (try_to_free_pages), reclaim_pages() for MADV_PAGEOUT, and the rmap
//! side of unmapping a folio (mm/rmap.c: folio_referenced, try_to_unmap_one).
//!
//! LRU lists per node: inactive/active anon, unevictable, and inactive/active "file",
//! which here holds only lazy-free anonymous folios (MADV_FREE makes them !swapbacked;
//! there is no page cache in the model). New anonymous folios start on the inactive
//! list; a scan finding a folio young sets PG_referenced and keeps it, young again with
//! PG_referenced set activates it (folio_check_references). Active anon folios are
//! deactivated when the inactive list is low (inactive_is_low, int_sqrt(10 × GB) ratio).
//!
//! Swap-out (shrink_folio_list, folio_alloc_swap): a THP gets 512 contiguous slots in a
//! free cluster and is written whole (thp_swpout); unmapping splits its PMD into 512
//! PTE swap entries (thp_split_pmd) — or, with the seed-003 policy
//! (thplab.pmd_swap_entries=1), leaves one PMD swap entry. When no cluster is free
//! (or CONFIG_THP_SWAP=n, or the device cannot take large allocations) the folio is
//! split first (split_folio with SplitReason::Reclaim: the zero-subpage policy applies)
//! and counted in thp_swpout_fallback; pages that then get no slot are activated.
//! Clean lazy-free folios are discarded without I/O (pglazyfreed; v6.12+ even a
//! PMD-mapped THP whole), dirty ones become swap-backed again.
//!
//! Writeback: on synchronous devices (zram, pmem) the folio is freed right after its
//! write, as the kernel does ("a synchronous write - probably a ramdisk"); on other
//! devices the write is asynchronous (page_io.rs): the folio, a THP too, stays in the
//! swap cache under writeback (PAGE_SUCCESS with folio_test_writeback: keep), clean, at
//! the tail of the inactive list (folio_rotate_reclaimable), and a pass after its write
//! completed frees it without I/O; a pass before that activates it (the writeback
//! "case 2"), a fault before that is a swap-cache hit (a whole THP is mapped back by
//! PTEs when its 512 swap entries are still in place), and the zap of its last swap
//! entry leaves it for reclaim (folio_swapcache_freeable). Documented simplifications:
//! a folio whose write fails (zram out of memory) is dropped from the swap cache and
//! activated while still mapped (the model writes before it unmaps); the shrinkers run
//! once per shrink_node pass.
//!
//! Costs: each folio scanned costs reclaim_scan_page_ns (isolation and the rmap walk of
//! folio_referenced; less reclaim_swapout_ns when its pass stops short of the swap-out,
//! e.g. at folio_alloc_swap()'s failure with no swap device), each PTE or PMD unmapped
//! unmap_page_ns, each folio freed remove_mapping_ns; each piece a split for reclaim
//! leaves unmapped (a zero subpage remapped to the zero page) reclaim_unmapped_ns for the
//! pass of shrink_folio_list it still takes (reclaim_activate_ns when no swap slot is
//! left: split_for_reclaim); each reclaim_pages() call (MADV_PAGEOUT: one per PMD)
//! reclaim_pages_ns. Shared locks are
//! simulated (locking.rs): the node's lru_lock taken once per isolated batch and once for
//! the putback (isolate_lru_folios, move_folios_to_lru; once per folio by MADV_PAGEOUT's
//! folio_isolate_lru), the swap device's si->lock when the allocator takes a cluster from
//! its lists, and each swap cluster's ci->lock for the slots' swap-map and swap-table work
//! (allocation, swap-cache insertion and removal, swap_duplicate at unmap, swap_free): a
//! THP's 512 entries take it once, 512 base pages 512 times. A CPU that finds a lock held in
//! simulated time spins until it is free, and the spin time is counted (lock_wait_ns).
//! TLB shootdowns: try_to_unmap_flush_dirty() before each dirty folio's writeback
//! flushes the mm's TLB; when that mm runs on another CPU the
//! flush is an IPI (tlb_ipi_ns, counted in tlb_ipis).

use crate::consts::*;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::kthread::KthreadNext;
use crate::locking::LockId;
use crate::mm_types::*;
use crate::mmzone::{WMARK_HIGH, ZONE_NORMAL};
use crate::page_alloc::*;
use crate::pgtable::*;
use crate::trace::{trace_enabled, trace_event};
use crate::vmstat::{Ev, NodeStat};

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: u32 = 12;
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// The LRU lists' names as the mm_vmscan_lru_isolate tracepoint prints them.
const LRU_NAMES: [&str; NR_LRU_LISTS] =
    ["none", "inactive_anon", "active_anon", "unevictable", "inactive_file", "active_file"];

/// Who reclaims (reclaimer_offset: pgscan_kswapd / pgscan_direct ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclaimer {
    Kswapd,
    Direct,
    /// reclaim_pages() for MADV_PAGEOUT: no pgscan/pgsteal counters
    Madvise,
}

/// struct scan_control, the parts the model uses.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub nr_scanned: u64,
    pub priority: u32,
    pub may_swap: bool,
    pub ignore_references: bool,
    pub who: Reclaimer,
}

/// What shrink_folio_list decided for one folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Freed(u64),
    Activate,
    Keep,
    /// split; its pieces were queued for processing
    Split,
    /// written to a non-synchronous device: kept in the swap cache until a later pass
    Written,
}

/// folio_check_references()
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refs {
    Activate,
    Keep,
    Reclaim,
}

/// Per-node kswapd state (pgdat->kswapd_order, kswapd_failures, the balance_pgdat run).
#[derive(Clone, Debug, Default)]
pub struct KswapdState {
    /// pgdat->kswapd_order: the order wakers asked for; during a balance_pgdat run, the
    /// order reclaim is balancing for (sc.order: dropped to 0 after compact_gap pages)
    pub order: u32,
    pub failures: u32,
    pub running: bool,
    pub priority: u32,
    pub reclaimed: u64,
    /// the order the current run was woken for (alloc_order): kcompactd gets it
    pub alloc_order: u32,
    /// the boost the run started with (balance_pgdat's nr_boost_reclaim)
    pub boosted: bool,
    /// kswapd_try_to_sleep()'s short (HZ/10) sleep: the order it was balanced for
    pub short_sleep: Option<u32>,
}

/// kswapd_try_to_sleep()'s first, short sleep: HZ/10.
pub const KSWAPD_SHORT_SLEEP_NS: u64 = 100_000_000;

impl Kernel {
    /// flush_tlb_mm_range() of [start, end) of `mm` from reclaim: an IPI when the mm
    /// runs on another CPU than the reclaimer.
    pub fn reclaim_flush_tlb(&mut self, mm: MmId, start: u64, end: u64) {
        self.mms[mm].tlb.flush_range(start, end);
        self.rec.tlb_flushes += 1;
        self.charge(self.costs.tlb_flush_ns);
        if self.mms[mm].alive && self.mms[mm].cpu != self.clock.cpu {
            self.rec.tlb_ipis += 1;
            self.charge(self.costs.tlb_ipi_ns);
        }
    }

    // ---------------- LRU moves ----------------

    fn lru_putback(&mut self, head: u64, nr: u64, l: u64) {
        let f = self.pm.frames[head as usize];
        let l = if lru(f) == LRU_UNEVICTABLE || mlocked(f) { LRU_UNEVICTABLE } else { l };
        self.lru_del(head, nr);
        self.lruvec_add_folio(head, nr, l, false);
    }

    /// folio_activate(): onto the active list (pgactivate).
    fn activate(&mut self, head: u64, nr: u64) {
        self.lru_putback(head, nr, LRU_ACTIVE_ANON);
        self.rec.vm.add(Ev::PGACTIVATE, nr);
    }

    /// MADV_COLD's folio_deactivate() (lru_deactivate): an active folio moves to the
    /// inactive list; accessed bit and PG_referenced are cleared either way.
    pub fn deactivate_folio(&mut self, head: u64, nr: u64) {
        let f = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_referenced(set_young(f, false), false);
        if lru(f) != LRU_ACTIVE_ANON {
            return;
        }
        self.lru_putback(head, nr, LRU_INACTIVE_ANON);
        self.rec.vm.add(Ev::PGDEACTIVATE, nr);
    }

    /// folio_check_references(): test-and-clear the accessed bit (the rmap walk).
    fn folio_check_references(&mut self, head: u64) -> Refs {
        let f = self.pm.frames[head as usize];
        let young_ = young(f);
        let referenced_folio = referenced(f);
        let mut nf = set_young(set_referenced(f, false), false);
        if let Some((sid, idx)) = rmap(f) {
            let s = self.slots.get(sid);
            let addr = pte_addr(s.index, idx as u64);
            let mm = s.mm;
            if self.mms[mm].find_vma(addr).is_some_and(|v| v.flags & crate::mmap::VM_LOCKED != 0) {
                self.pm.frames[head as usize] = nf;
                return Refs::Activate;
            }
        }
        let r = if young_ && (rmap(f).is_some() || self.folio_mapped(head)) {
            nf = set_referenced(nf, true);
            if referenced_folio {
                Refs::Activate
            } else {
                Refs::Keep
            }
        } else {
            Refs::Reclaim
        };
        self.pm.frames[head as usize] = nf;
        r
    }

    // ---------------- unmapping (mm/rmap.c) ----------------

    /// try_to_unmap(folio, TTU_SPLIT_HUGE_PMD | TTU_BATCH_FLUSH): every mapping of the
    /// folio becomes a swap entry for its slot (`slot` = the folio's first slot), or
    /// none for a discarded lazy-free folio (`slot` = None). A huge PMD is split into
    /// PTEs first (thp_split_pmd) unless the seed-003 policy leaves a PMD swap entry,
    /// or the folio is lazy-free (discarded whole, v6.12+ unmap_huge_pmd_locked).
    /// Flushes the TLB of each mm touched (batched: once per PMD range).
    fn try_to_unmap(&mut self, head: u64, slot: Option<u32>) {
        let f = self.pm.frames[head as usize];
        if let Some(s) = slot {
            // swap_duplicate() of each entry, under the cluster lock (taken once for the
            // folio's entries here)
            let nr = if compound(f) == COMPOUND_HEAD { HPAGE_PMD_NR } else { 1 };
            self.swap_cluster_lock(s, nr);
        }
        // (mm, first, last) address of the PTEs cleared, per PMD range
        let mut flush: Vec<(MmId, u64, u64)> = vec![];
        if compound(f) == COMPOUND_HEAD {
            if let Some((sid, _)) = rmap(f) {
                if matches!(self.slots.get(sid).pmd, Pmd::Huge(_)) {
                    let mm = self.slots.get(sid).mm;
                    let idx = self.slots.get(sid).index;
                    self.charge(self.costs.unmap_page_ns);
                    match slot {
                        Some(s) if self.cfg.pmd_swap_entries => {
                            // seed 003: set_pmd_swap_entry()
                            self.slots.get_mut(sid).pmd = Pmd::SwapPmd(s);
                            for i in 0..HPAGE_PMD_NR {
                                let pf = self.pm.frames[(head + i) as usize];
                                self.pm.frames[(head + i) as usize] = with_rmap(pf, None);
                                self.swap_duplicate(s + i as u32);
                            }
                            self.mms[mm].rss_anon -= HPAGE_PMD_NR;
                            self.mms[mm].swap_ents += HPAGE_PMD_NR;
                            self.mod_node_page_state(head, NodeStat::NrAnonMapped, -(HPAGE_PMD_NR as i64));
                            self.mod_node_page_state(head, NodeStat::NrAnonThps, -1);
                            // one huge TLB entry
                            self.reclaim_flush_tlb(mm, idx << PMD_SHIFT, (idx << PMD_SHIFT) + PAGE_SIZE);
                            return;
                        }
                        None => {
                            // a clean lazy-free THP is discarded whole: the PMD goes
                            // with its deposited table
                            let slot_ = self.slots.remove(sid);
                            self.mms[mm].pmds.remove(&slot_.index);
                            for i in 0..HPAGE_PMD_NR {
                                let pf = self.pm.frames[(head + i) as usize];
                                self.pm.frames[(head + i) as usize] = with_rmap(pf, None);
                            }
                            self.mms[mm].rss_anon -= HPAGE_PMD_NR;
                            self.mod_node_page_state(head, NodeStat::NrAnonMapped, -(HPAGE_PMD_NR as i64));
                            self.mod_node_page_state(head, NodeStat::NrAnonThps, -1);
                            self.free_pgtable(slot_.table_pfn);
                            self.reclaim_flush_tlb(mm, idx << PMD_SHIFT, (idx << PMD_SHIFT) + PAGE_SIZE);
                            return;
                        }
                        Some(_) => self.split_huge_pmd(mm, sid),
                    }
                }
            }
            for i in 0..self.folio_nr_pages(head) {
                let p = head + i;
                let pf = self.pm.frames[p as usize];
                if let Some((sid, pi)) = rmap(pf) {
                    self.unmap_pte(p, sid, pi, slot.map(|s| s + i as u32), &mut flush);
                }
            }
            self.pm.mapcount.remove(&(head as u32));
        } else if let Some((sid, pi)) = rmap(f) {
            self.unmap_pte(head, sid, pi, slot, &mut flush);
        }
        for (mm, a, b) in flush {
            self.reclaim_flush_tlb(mm, a, b + PAGE_SIZE);
        }
    }

    fn unmap_pte(&mut self, p: u64, sid: u32, pi: u32, slot: Option<u32>, flush: &mut Vec<(MmId, u64, u64)>) {
        let (mm, idx) = {
            let s = self.slots.get(sid);
            (s.mm, s.index)
        };
        let pte = match slot {
            Some(s) => {
                self.swap_duplicate(s);
                self.mms[mm].swap_ents += 1;
                mk_pte(K_SWAP, s)
            }
            None => PTE_NONE,
        };
        self.set_pte(sid, pi as usize, pte);
        let mut pf = self.pm.frames[p as usize];
        if slot.is_some() && compound(pf) == COMPOUND_TAIL {
            // a tail's dirty bit is its PTE's: the PTE is gone, and the folio was written
            // with it (the folio's PG_dirty is the head's, which the write path manages)
            pf = set_dirty(pf, false);
        }
        self.pm.frames[p as usize] = with_rmap(pf, None);
        self.mms[mm].rss_anon -= 1;
        self.mod_node_page_state(p, NodeStat::NrAnonMapped, -1);
        self.charge(self.costs.unmap_page_ns);
        let addr = pte_addr(idx, pi as u64);
        match flush.iter_mut().find(|(m, a, _)| *m == mm && *a >> PMD_SHIFT == idx) {
            Some(e) => {
                e.1 = e.1.min(addr);
                e.2 = e.2.max(addr);
            }
            None => flush.push((mm, addr, addr)),
        }
    }

    // ---------------- shrink_folio_list ----------------

    /// shrink_folio_list() over isolated folios (off the LRU). Returns pages freed.
    /// Folios not freed go back to the LRU (activated or kept).
    pub fn shrink_folio_list(&mut self, list: Vec<u64>, sc: &mut ScanControl) -> u64 {
        let mut work: std::collections::VecDeque<u64> = list.into();
        let mut freed = 0;
        while let Some(head) = work.pop_front() {
            let nr = self.folio_nr_pages(head);
            let mut pieces = vec![];
            let fate = self.shrink_folio(head, sc, &mut pieces);
            match fate {
                Fate::Freed(n) => freed += n,
                Fate::Activate => {
                    if self.pm.frames[head as usize] >> TAG_SHIFT == TAG_ANON {
                        self.activate(head, nr);
                    }
                }
                Fate::Keep => self.lru_putback(head, nr, LRU_INACTIVE_ANON),
                Fate::Written => {}
                Fate::Split => {
                    for p in pieces.into_iter().rev() {
                        work.push_front(p);
                    }
                }
            }
        }
        sc.nr_reclaimed += freed;
        freed
    }

    /// The part of a folio's pass of shrink_folio_list that only a folio going on to swap
    /// pays (folio_alloc_swap's slots and swap-cache entry, pageout's set-up): the profile's
    /// reclaim_swapout_ns, none where it has none (its reclaim_scan_page_ns is the whole
    /// pass for every folio).
    fn reclaim_swapout_cost(&self) -> u64 {
        self.costs.reclaim_swapout_ns.unwrap_or(0).min(self.costs.reclaim_scan_page_ns)
    }

    /// thp_swpout_fallback (PMD order) and the per-size swpout_fallback.
    fn count_swpout_fallback(&mut self, order: u32) {
        if order == HPAGE_PMD_ORDER {
            self.rec.vm.count(Ev::THP_SWPOUT_FALLBACK);
        }
        self.count_mthp_order(order, "swpout_fallback", 1);
    }

    fn shrink_folio(&mut self, head: u64, sc: &ScanControl, pieces: &mut Vec<u64>) -> Fate {
        let f = self.pm.frames[head as usize];
        let thp = compound(f) == COMPOUND_HEAD; // folio_test_large: PMD THP or mTHP
        let nr: u64 = self.folio_nr_pages(head);
        // the pass up to the swap-out; a folio going on to swap pays the rest below
        self.charge(self.costs.reclaim_scan_page_ns - self.reclaim_swapout_cost());
        if lru(f) == LRU_UNEVICTABLE || mlocked(f) {
            return Fate::Keep;
        }
        if swapcache(f) && self.folio_under_writeback(head) {
            // still being written (before the references are looked at): folio_set_reclaim,
            // activate_locked (shrink_folio_list's writeback "case 2")
            return Fate::Activate;
        }
        if !sc.ignore_references {
            match self.folio_check_references(head) {
                Refs::Activate => return Fate::Activate,
                Refs::Keep => return Fate::Keep,
                Refs::Reclaim => {}
            }
        } else if let Some((sid, idx)) = rmap(f) {
            let s = self.slots.get(sid);
            let addr = pte_addr(s.index, idx as u64);
            if self.mms[s.mm].find_vma(addr).is_some_and(|v| v.flags & crate::mmap::VM_LOCKED != 0) {
                return Fate::Activate;
            }
        }
        let f = self.pm.frames[head as usize];
        if lazyfree(f) {
            if dirty(f) {
                // written since MADV_FREE: swap-backed again (folio_set_swapbacked)
                for i in 0..nr {
                    let pf = self.pm.frames[(head + i) as usize];
                    self.pm.frames[(head + i) as usize] = set_lazyfree(pf, false);
                }
                self.lru_del(head, nr);
                return Fate::Activate;
            }
            self.try_to_unmap(head, None);
            self.lru_del(head, nr);
            if thp {
                self.deferred_split_remove(head);
            }
            self.free_folio(Pfn(head));
            self.rec.vm.add(Ev::PGLAZYFREED, nr);
            return Fate::Freed(nr);
        }
        if swapcache(f) {
            // already has slots: unmapped if still mapped, written again only when
            // dirtied since (pageout), freed when the write is done (__remove_mapping)
            let (slot, n) = self.swap_slots_of(head).expect("swap-cache folio has slots");
            self.charge(self.reclaim_swapout_cost());
            if dirty(f) && self.swap_writepage(head, n, slot).is_err() {
                return Fate::Activate;
            }
            if self.folio_mapped(head) {
                self.try_to_unmap(head, Some(slot));
            }
            return self.folio_written(head, nr);
        }
        if thp && self.folio_partially_mapped(head) {
            // split partially mapped folios right away: the unmapped pages go without I/O
            self.lru_del(head, nr);
            return self.split_for_reclaim(head, nr, None, pieces);
        }
        let order = folio_order(&self.pm.frames, head);
        // folio_alloc_swap(): a large folio needs a free cluster of its order
        let slot = match self.get_swap_pages(order) {
            Some(s) => s,
            None if thp => {
                // fall back to swapping base pages
                self.lru_del(head, nr);
                return self.split_for_reclaim(head, nr, Some(order), pieces);
            }
            None => return Fate::Activate,
        };
        self.charge(self.reclaim_swapout_cost());
        let sync = self.swap_is_sync(slot);
        // folio_alloc_swap() → add_to_swap_cache(). On a synchronous device the folio is
        // freed before this call returns, so the model takes the lock without filling
        // the cache maps
        if sync {
            self.swap_cluster_lock(slot, nr);
        } else {
            self.add_to_swap_cache(head, slot, nr as u32);
        }
        // try_to_unmap_flush_dirty() then pageout(): write the folio
        trace_event!(
            self,
            mm_vmscan_write_folio,
            pfn = head,
            nr_pages = nr,
            slot = slot,
            reclaim_flags = if sync { "RECLAIM_WB_ANON|RECLAIM_WB_SYNC" } else { "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC" },
        );
        if self.swap_writepage(head, nr as u32, slot).is_err() {
            if sync {
                for s in slot..slot + nr as u32 {
                    self.swapcache_clear(s);
                }
            } else {
                self.delete_from_swap_cache(head);
            }
            return Fate::Activate;
        }
        self.try_to_unmap(head, Some(slot));
        if sync {
            // __remove_mapping(): out of the swap cache (the PTEs keep the slots), freed
            self.lru_del(head, nr);
            self.swap_cluster_lock(slot, nr);
            for s in slot..slot + nr as u32 {
                self.swapcache_clear(s);
            }
            self.charge(self.costs.remove_mapping_ns);
            self.free_folio(Pfn(head));
            return Fate::Freed(nr);
        }
        self.folio_written(head, nr)
    }

    /// split_folio_to_list() from shrink_folio_list(): the pieces left mapped go back on
    /// the reclaim list (`pieces`); `fallback` is the order of a folio split because it
    /// got no swap slots (thp_swpout_fallback). The pieces left with no mapping (zero
    /// subpages remapped to the shared zero page, subpages zapped before) are freed by the
    /// model at the split, but in the kernel __folio_split() keeps them on the list too
    /// (lru_add_split_folio) and each takes a pass of shrink_folio_list: a swap slot
    /// allocated and given back (swap_writeout → folio_free_swap), __remove_mapping, the
    /// free: reclaim_unmapped_ns each. With no swap slot left (no swap device, or swap
    /// full) the pass ends at folio_alloc_swap()'s failure instead (activate_locked_split:
    /// the folio is marked active, and reclaim_folio_list()'s folio_putback_lru() puts it
    /// on the LRU through the lru_add batch, whose drop of the last reference takes it off
    /// and frees it): reclaim_activate_ns each. With the seed policy, patch 2 frees them
    /// inside the split (page_ref_freeze(subpage, 2)): no pass.
    fn split_for_reclaim(&mut self, head: u64, nr: u64, fallback: Option<u32>, pieces: &mut Vec<u64>) -> Fate {
        match self.split_folio(Pfn(head), crate::migrate::SplitReason::Reclaim) {
            Ok(p) => {
                if let Some(order) = fallback {
                    self.count_swpout_fallback(order);
                }
                if self.cfg.split_zero != crate::config::SplitZero::Seed {
                    let pass = if self.can_reclaim_anon() {
                        self.costs.reclaim_unmapped_ns
                    } else {
                        self.costs.reclaim_activate_ns
                    };
                    self.charge(pass * (nr - p.len() as u64));
                }
                // the order shrink_folio_list() goes on in: the head at once (it retries
                // folio_alloc_swap() as an order-0 folio), then the tails, which
                // lru_add_split_folio() added in ascending order with list_add_tail() to
                // the list that lru_to_folio() takes from its tail: the last tail first.
                // So a split folio's pieces get their swap slots head first, then from
                // the last piece down (seen with /proc/self/pagemap on 6.18: 64 KiB folios
                // paged out to a swap file hold slots 1, 16, 15, .., 2), which the zap's
                // swap_pte_batch() cannot batch
                let mut v: Vec<u64> = p.into_iter().map(|x| x.0).collect();
                let tails = usize::from(v.first() == Some(&head));
                v[tails..].reverse();
                *pieces = v;
                Fate::Split
            }
            Err(_) => Fate::Activate,
        }
    }

    /// After pageout() of a swap-cache folio (its PTEs are swap entries now): under
    /// asynchronous writeback it is kept (PAGE_SUCCESS with the folio under writeback:
    /// keep), clean, at the inactive tail where folio_rotate_reclaimable puts it when the
    /// write completes, and a later pass (or the zap of its last swap entry) frees it
    /// without I/O; a fault before that finds it in the swap cache. Written already (or
    /// clean): __remove_mapping frees it now.
    fn folio_written(&mut self, head: u64, nr: u64) -> Fate {
        if self.folio_under_writeback(head) {
            let f = self.pm.frames[head as usize];
            self.pm.frames[head as usize] = set_dirty(f, false);
            self.lru_del(head, nr);
            self.lruvec_add_folio(head, nr, LRU_INACTIVE_ANON, true);
            return Fate::Written;
        }
        self.lru_del(head, nr);
        self.charge(self.costs.remove_mapping_ns);
        self.delete_from_swap_cache(head);
        self.free_folio(Pfn(head));
        Fate::Freed(nr)
    }

    // ---------------- the LRU scan ----------------

    /// isolate_lru_folios(): up to `nr_to_scan` pages from the tail of list `idx`.
    fn isolate_lru_folios(&mut self, node: usize, idx: usize, nr_to_scan: u64) -> (Vec<u64>, u64) {
        let mut out = vec![];
        let mut scanned = 0;
        while scanned < nr_to_scan {
            let t = self.pgdat[node].lruvec[idx].tail;
            if t == NIL {
                break;
            }
            let head = t as u64;
            let nr = self.folio_nr_pages(head);
            self.lru_del(head, nr);
            scanned += nr;
            out.push(head);
        }
        // the batch is taken under one lru_lock
        self.lock_acquire(LockId::Lru(node), out.len() as u64);
        trace_event!(
            self,
            mm_vmscan_lru_isolate,
            highest_zoneidx = ZONE_NORMAL,
            order = 0,
            nr_requested = nr_to_scan,
            nr_scanned = scanned,
            nr_skipped = 0,
            nr_taken = scanned,
            lru = LRU_NAMES[idx],
        );
        (out, scanned)
    }

    /// shrink_inactive_list()
    fn shrink_inactive_list(&mut self, node: usize, idx: usize, nr_to_scan: u64, sc: &mut ScanControl) -> u64 {
        let (list, scanned) = self.isolate_lru_folios(node, idx, nr_to_scan);
        if list.is_empty() {
            return 0;
        }
        let list_len = list.len() as u64;
        sc.nr_scanned += scanned;
        let anon = idx == LRU_INACTIVE_ANON as usize;
        match sc.who {
            Reclaimer::Kswapd => self.rec.vm.add(Ev::PGSCAN_KSWAPD, scanned),
            Reclaimer::Direct => self.rec.vm.add(Ev::PGSCAN_DIRECT, scanned),
            Reclaimer::Madvise => {}
        }
        if anon {
            self.rec.vm.add(Ev::PGSCAN_ANON, scanned);
        }
        let freed = self.shrink_folio_list(list, sc);
        match sc.who {
            Reclaimer::Kswapd => self.rec.vm.add(Ev::PGSTEAL_KSWAPD, freed),
            Reclaimer::Direct => self.rec.vm.add(Ev::PGSTEAL_DIRECT, freed),
            Reclaimer::Madvise => {}
        }
        if anon {
            self.rec.vm.add(Ev::PGSTEAL_ANON, freed);
        }
        trace_event!(
            self,
            mm_vmscan_lru_shrink_inactive,
            nid = node,
            nr_scanned = scanned,
            nr_reclaimed = freed,
            priority = sc.priority,
            reclaim_flags = if anon { "RECLAIM_WB_ANON" } else { "RECLAIM_WB_FILE" },
        );
        // move_folios_to_lru(): the survivors go back under one lru_lock
        let back = list_len.saturating_sub(freed.min(list_len));
        self.lock_acquire(LockId::Lru(node), back.max(1));
        freed
    }

    /// shrink_active_list(): active folios go to the inactive list (anon folios whatever
    /// their accessed bit, which folio_referenced clears).
    fn shrink_active_list(&mut self, node: usize, idx: usize, nr_to_scan: u64) {
        let (list, scanned) = self.isolate_lru_folios(node, idx, nr_to_scan);
        self.rec.vm.add(Ev::PGREFILL, scanned);
        let mut moved = 0;
        for head in list {
            let nr = self.folio_nr_pages(head);
            self.charge(self.costs.reclaim_scan_page_ns - self.reclaim_swapout_cost());
            let f = self.pm.frames[head as usize];
            self.pm.frames[head as usize] = set_young(f, false);
            self.lru_putback(head, nr, LRU_INACTIVE_ANON);
            moved += nr;
        }
        self.rec.vm.add(Ev::PGDEACTIVATE, moved);
        trace_event!(
            self,
            mm_vmscan_lru_shrink_active,
            nid = node,
            nr_taken = scanned,
            nr_active = 0,
            nr_deactivated = moved
        );
    }

    /// inactive_is_low()
    fn inactive_is_low(&self, node: usize, inactive_idx: usize) -> bool {
        let inactive = self.pgdat[node].lruvec[inactive_idx].pages;
        let active = self.pgdat[node].lruvec[inactive_idx + 1].pages;
        let gb = (inactive + active) >> (30 - PAGE_SHIFT);
        let ratio = if gb > 0 { crate::mmzone::int_sqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// can_reclaim_anon_pages(): swap space is left.
    pub fn can_reclaim_anon(&self) -> bool {
        self.nr_swap_pages() > 0
    }

    /// shrink_lruvec() for one node at sc.priority (get_scan_count, then the lists).
    fn shrink_lruvec(&mut self, node: usize, sc: &mut ScanControl) {
        let anon_ok = sc.may_swap && self.can_reclaim_anon();
        let ia = LRU_INACTIVE_ANON as usize;
        let iff = LRU_INACTIVE_FILE as usize;
        // get_scan_count(): lazy-free folios are the only file pages
        let file_pages = self.pgdat[node].lruvec[iff].pages + self.pgdat[node].lruvec[iff + 1].pages;
        let (mut scan_anon, mut scan_file) = (0u64, 0u64);
        let anon_size = self.pgdat[node].lruvec[ia].pages + self.pgdat[node].lruvec[ia + 1].pages;
        if anon_ok {
            scan_anon = (anon_size >> sc.priority).max(if sc.priority == 0 { anon_size } else { 0 });
            if scan_anon == 0 && anon_size > 0 {
                scan_anon = anon_size.min(SWAP_CLUSTER_MAX);
            }
        }
        if file_pages > 0 {
            scan_file = (file_pages >> sc.priority).max(file_pages.min(SWAP_CLUSTER_MAX));
            // swappiness weighs anon against file when both can be scanned
            if anon_ok && self.cfg.swappiness < 200 && sc.priority > 0 {
                let s = self.cfg.swappiness;
                scan_anon = scan_anon * s / 200 * 2;
                scan_file = scan_file * (200 - s) / 200 * 2;
            }
        }
        // deactivate when the inactive list is low (prepare_scan_control)
        if anon_ok && self.inactive_is_low(node, ia) {
            self.shrink_active_list(node, ia + 1, scan_anon.max(SWAP_CLUSTER_MAX));
        }
        if file_pages > 0 && self.inactive_is_low(node, iff) {
            self.shrink_active_list_file(node, scan_file.max(SWAP_CLUSTER_MAX));
        }
        let mut left_anon = scan_anon;
        let mut left_file = scan_file;
        // the scan loop runs under a block plug (page_io.rs)
        self.blk_start_plug();
        while (left_anon > 0 || left_file > 0) && sc.nr_reclaimed < sc.nr_to_reclaim {
            if left_file > 0 {
                let n = left_file.min(SWAP_CLUSTER_MAX);
                left_file -= n;
                if self.pgdat[node].lruvec[iff].pages == 0 {
                    left_file = 0;
                } else {
                    self.shrink_inactive_list(node, iff, n, sc);
                }
            }
            if left_anon > 0 {
                let n = left_anon.min(SWAP_CLUSTER_MAX);
                left_anon = left_anon.saturating_sub(n);
                if self.pgdat[node].lruvec[ia].pages == 0 {
                    if self.pgdat[node].lruvec[ia + 1].pages > 0 {
                        self.shrink_active_list(node, ia + 1, SWAP_CLUSTER_MAX);
                    } else {
                        left_anon = 0;
                    }
                } else {
                    self.shrink_inactive_list(node, ia, n, sc);
                }
            }
        }
        self.blk_finish_plug();
        if anon_ok && self.inactive_is_low(node, ia) {
            self.shrink_active_list(node, ia + 1, SWAP_CLUSTER_MAX);
        }
    }

    /// Lazy-free folios on the active file list go back to the inactive file list.
    fn shrink_active_list_file(&mut self, node: usize, nr: u64) {
        let idx = LRU_ACTIVE_FILE as usize;
        let (list, scanned) = self.isolate_lru_folios(node, idx, nr);
        self.rec.vm.add(Ev::PGREFILL, scanned);
        for head in list {
            let n = self.folio_nr_pages(head);
            let f = self.pm.frames[head as usize];
            self.pm.frames[head as usize] = set_young(f, false);
            self.lru_putback(head, n, LRU_INACTIVE_ANON);
            self.rec.vm.add(Ev::PGDEACTIVATE, n);
        }
    }

    /// shrink_node(): the LRU lists, then the shrinkers (shrink_slab: the deferred split
    /// queue, scanned 2 × (len >> priority) per pass as do_shrink_slab does).
    pub fn shrink_node(&mut self, node: usize, sc: &mut ScanControl) {
        self.shrink_lruvec(node, sc);
        let len = self.deferred_split_count(node);
        if len > 0 {
            let delta = 2 * (len >> sc.priority);
            if delta >= 128 || delta >= len || sc.priority == 0 {
                let before = self.nr_free_pages();
                self.deferred_split_scan(node, delta.min(len).max(1));
                // pages the shrinker freed count as reclaimed (reclaim_state)
                sc.nr_reclaimed += self.nr_free_pages().saturating_sub(before);
            }
        }
    }

    /// compaction_ready(): the zone has enough free memory for compaction to go ahead
    /// (the allocation could already succeed, or compaction_suitable() at the high
    /// watermark), so direct reclaim for a costly order stops freeing there.
    fn compaction_ready(&self, zi: usize, order: u32) -> bool {
        let z = &self.pm.zones[zi];
        if self.pm.zone_watermark_ok(zi, order, z.wmark(crate::mmzone::WMARK_MIN), ZONE_NORMAL, 0) {
            return true;
        }
        self.compaction_suitable(zi, order, z.wmark(WMARK_HIGH), ZONE_NORMAL)
    }

    /// should_continue_reclaim() in reclaim/compaction mode (a costly order, or any order
    /// at high priority): keep reclaiming a node while the last pass freed something,
    /// compaction still could not run and the inactive lists exceed compact_gap(order).
    fn should_continue_reclaim(&self, node: usize, nr_reclaimed: u64, sc: &ScanControl, order: u32) -> bool {
        let in_reclaim_compaction = order > 0 && (order > PAGE_ALLOC_COSTLY_ORDER || sc.priority < DEF_PRIORITY - 2);
        if !in_reclaim_compaction || nr_reclaimed == 0 {
            return false;
        }
        for &zi in &self.pm.nodes[node].zones {
            let z = &self.pm.zones[zi];
            if z.managed == 0 {
                continue;
            }
            let min = z.wmark(crate::mmzone::WMARK_MIN);
            if self.pm.zone_watermark_ok(zi, order, min, ZONE_NORMAL, 0)
                || self.compaction_suitable(zi, order, min, ZONE_NORMAL)
            {
                return false;
            }
        }
        let mut inactive = self.pgdat[node].lruvec[LRU_INACTIVE_FILE as usize].pages;
        if sc.may_swap && self.can_reclaim_anon() {
            inactive += self.pgdat[node].lruvec[LRU_INACTIVE_ANON as usize].pages;
        }
        inactive > 2u64 << order
    }

    /// zone_reclaimable_pages(): the zone's share of its node's reclaimable LRU pages
    /// (file, and anon when swap is left). The model keeps LRU lists per node; a zone's
    /// share is its share of the node's used pages.
    pub fn zone_reclaimable_pages(&self, zi: usize) -> u64 {
        let z = &self.pm.zones[zi];
        let node = z.node;
        let l = &self.pgdat[node].lruvec;
        let mut nr = l[LRU_INACTIVE_FILE as usize].pages + l[LRU_ACTIVE_FILE as usize].pages;
        if self.can_reclaim_anon() {
            nr += l[LRU_INACTIVE_ANON as usize].pages + l[LRU_ACTIVE_ANON as usize].pages;
        }
        let used = |zi: usize| self.pm.zones[zi].managed.saturating_sub(self.pm.zones[zi].free_pages);
        let node_used: u64 = self.pm.nodes[node].zones.iter().map(|&o| used(o)).sum();
        (nr as u128 * used(zi) as u128 / node_used.max(1) as u128) as u64
    }

    /// shrink_zones(): each node of the zonelist once; for a costly order, a zone where
    /// compaction is ready is left alone (sc.compaction_ready).
    fn shrink_zones(&mut self, zonelist: &[usize], sc: &mut ScanControl, order: u32, compaction_ready: &mut bool) {
        let mut last_node = usize::MAX;
        for &zi in zonelist {
            if order > PAGE_ALLOC_COSTLY_ORDER && self.compaction_ready(zi, order) {
                *compaction_ready = true;
                continue;
            }
            let node = self.pm.zones[zi].node;
            if node == last_node {
                continue;
            }
            last_node = node;
            loop {
                let before = sc.nr_reclaimed;
                self.shrink_node(node, sc);
                if !self.should_continue_reclaim(node, sc.nr_reclaimed - before, sc, order) {
                    break;
                }
            }
        }
    }

    /// try_to_free_pages() / do_try_to_free_pages(): direct reclaim of SWAP_CLUSTER_MAX
    /// pages from the allocation's zonelist (one node under __GFP_THISNODE), raising the
    /// priority until done; stops early when compaction is ready for a costly order.
    /// Returns the pages reclaimed, or 1 when reclaim stopped for compaction.
    pub fn try_to_free_pages(&mut self, gfp: Gfp, order: u32, zonelist: &[usize]) -> u64 {
        trace_event!(self, mm_vmscan_direct_reclaim_begin, order = order, gfp_flags = gfp);
        self.rec.vm.count(if gfp & __GFP_MOVABLE != 0 { Ev::ALLOCSTALL_MOVABLE } else { Ev::ALLOCSTALL_NORMAL });
        let mut sc = ScanControl {
            nr_to_reclaim: SWAP_CLUSTER_MAX,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority: DEF_PRIORITY,
            may_swap: true,
            ignore_references: false,
            who: Reclaimer::Direct,
        };
        let mut compaction_ready = false;
        loop {
            self.shrink_zones(zonelist, &mut sc, order, &mut compaction_ready);
            if sc.nr_reclaimed >= sc.nr_to_reclaim || compaction_ready || sc.priority == 0 {
                break;
            }
            sc.priority -= 1;
        }
        if sc.nr_reclaimed > 0 {
            for n in &mut self.pgdat {
                n.kswapd.failures = 0;
            }
        }
        trace_event!(self, mm_vmscan_direct_reclaim_end, nr_reclaimed = sc.nr_reclaimed);
        if sc.nr_reclaimed == 0 && compaction_ready {
            return 1;
        }
        sc.nr_reclaimed
    }

    /// reclaim_pages(): MADV_PAGEOUT's isolated folios, references ignored. Each call costs
    /// reclaim_pages_ns beside its folios (reclaim_folio_list's pass of shrink_folio_list and
    /// the putback); MADV_PAGEOUT makes one per PMD with folios to reclaim.
    pub fn reclaim_pages(&mut self, list: Vec<u64>) -> u64 {
        if list.is_empty() {
            return 0;
        }
        self.charge(self.costs.reclaim_pages_ns);
        let mut sc = ScanControl {
            nr_to_reclaim: u64::MAX,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority: DEF_PRIORITY,
            may_swap: true,
            ignore_references: true,
            who: Reclaimer::Madvise,
        };
        let traced = trace_enabled!(self, mm_vmscan_reclaim_pages).then(|| {
            let nr = |h: &u64| self.folio_nr_pages(*h);
            (self.pm.node_of(list[0]), list.iter().map(nr).sum::<u64>())
        });
        let freed = self.shrink_folio_list(list, &mut sc);
        if let Some((nid, scanned)) = traced {
            trace_event!(self, mm_vmscan_reclaim_pages, nid = nid, nr_scanned = scanned, nr_reclaimed = freed);
        }
        freed
    }

    // ---------------- kswapd ----------------

    fn kswapd_state(&mut self, nid: usize) -> &mut KswapdState {
        &mut self.pgdat[nid].kswapd
    }

    /// pgdat_kswapd_lock / kswapd_is_running(): is the node's kswapd reclaiming now?
    pub fn kswapd_is_running(&self, nid: usize) -> bool {
        self.pgdat.get(nid).is_some_and(|n| n.kswapd.running)
    }

    /// pgdat_balanced(): every populated zone of the node is above its high watermark
    /// (plus the boost when `boost`) for `order`.
    fn pgdat_balanced(&self, nid: usize, order: u32, boost: bool) -> bool {
        let zones = self.pm.nodes[nid].zones.clone();
        let mut any = false;
        for zi in zones {
            let z = &self.pm.zones[zi];
            if z.managed == 0 {
                continue;
            }
            any = true;
            let mark = if boost { z.wmark(WMARK_HIGH) } else { z.watermark[WMARK_HIGH] };
            if self.pm.zone_watermark_ok(zi, order, mark, ZONE_NORMAL, 0) {
                return true;
            }
        }
        !any
    }

    /// wakeup_kswapd(zone, gfp, order, highest_zoneidx): record the request; wake the
    /// node's kswapd when a zone is below its high watermark (or boosted). A hopeless node
    /// (kswapd_failures) or a balanced one is left alone, but an allocation that may not
    /// compact itself (no __GFP_DIRECT_RECLAIM) wakes kcompactd instead.
    pub fn wakeup_kswapd(&mut self, nid: usize, gfp: Gfp, order: u32) {
        let st = self.kswapd_state(nid);
        st.order = st.order.max(order);
        if self.pgdat[nid].kswapd.running {
            // not waiting on kswapd_wait: it sees the new order when it next looks
            return;
        }
        let boosted = self.pm.nodes[nid].zones.iter().any(|&z| self.pm.zones[z].watermark_boost > 0);
        if self.pgdat[nid].kswapd.failures >= MAX_RECLAIM_RETRIES || (self.pgdat_balanced(nid, order, true) && !boosted)
        {
            if gfp & __GFP_DIRECT_RECLAIM == 0 {
                self.wakeup_kcompactd(nid, order, ZONE_NORMAL);
            }
            return;
        }
        trace_event!(self, mm_vmscan_wakeup_kswapd, nid = nid, zid = ZONE_NORMAL, order = order);
        self.wake(Kthread::Kswapd(nid));
    }

    /// One step of kswapd: a slice of balance_pgdat() (one priority level, stopping at a
    /// SWAP_CLUSTER_MAX boundary once the engine has another event due), or
    /// kswapd_try_to_sleep() when the node is balanced.
    pub fn kswapd_step(&mut self, nid: usize) -> KthreadNext {
        if let Some(reclaim_order) = self.pgdat[nid].kswapd.short_sleep.take() {
            return self.kswapd_after_short_sleep(nid, reclaim_order);
        }
        let boosted = self.pm.nodes[nid].zones.iter().any(|&z| self.pm.zones[z].watermark_boost > 0);
        if !self.pgdat[nid].kswapd.running {
            let st = &mut self.pgdat[nid].kswapd;
            st.running = true;
            st.priority = DEF_PRIORITY;
            st.reclaimed = 0;
            st.alloc_order = st.order;
            st.boosted = boosted;
            self.set_reclaim_active(nid, true);
            self.rec.vm.count(Ev::PAGEOUTRUN);
            let order = self.pgdat[nid].kswapd.order;
            trace_event!(self, mm_vmscan_kswapd_wake, nid = nid, zid = ZONE_NORMAL, order = order);
        }
        let order = self.pgdat[nid].kswapd.order;
        let balanced = self.pgdat_balanced(nid, order, true);
        let unboosted = self.pgdat_balanced(nid, order, false);
        if balanced || self.pgdat[nid].kswapd.failures >= MAX_RECLAIM_RETRIES {
            return self.balance_pgdat_done(nid);
        }
        // boosted reclaim only (balanced without the boost): no swapping (may_swap = 0)
        let boost_only = unboosted;
        // kswapd_shrink_node(): reclaim the zones' high watermarks' worth per pass
        let mut target = 0u64;
        for &zi in &self.pm.nodes[nid].zones {
            let z = &self.pm.zones[zi];
            if z.managed > 0 {
                target += z.wmark(WMARK_HIGH).max(SWAP_CLUSTER_MAX);
            }
        }
        let prio = self.pgdat[nid].kswapd.priority;
        let mut sc = ScanControl {
            nr_to_reclaim: 0,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority: prio,
            may_swap: !boost_only,
            ignore_references: false,
            who: Reclaimer::Kswapd,
        };
        let yield_at = self.clock.yield_at;
        let mut passes = 0u64;
        while sc.nr_reclaimed < target {
            let before = sc.nr_reclaimed;
            sc.nr_to_reclaim = (sc.nr_reclaimed + SWAP_CLUSTER_MAX).min(target);
            self.shrink_node(nid, &mut sc);
            passes += 1;
            if sc.nr_reclaimed == before || self.clock.now + self.clock.cost >= yield_at {
                break;
            }
        }
        let _ = passes;
        sc.nr_to_reclaim = target;
        let st = &mut self.pgdat[nid].kswapd;
        st.reclaimed += sc.nr_reclaimed;
        // fragmentation: after reclaiming compact_gap(order), balance at order 0
        if st.order > 0 && st.reclaimed >= 2 << st.order {
            st.order = 0;
        }
        if boost_only && sc.nr_reclaimed == 0 {
            // boosting makes no progress: stop
            return self.balance_pgdat_done(nid);
        }
        if sc.nr_reclaimed < sc.nr_to_reclaim {
            if st.priority <= 1 {
                if st.reclaimed == 0 {
                    st.failures += 1;
                }
                return self.balance_pgdat_done(nid);
            }
            st.priority -= 1;
        }
        KthreadNext::Again
    }

    /// ZONE_RECLAIM_ACTIVE on the node's zones while kswapd balances (the per-CPU lists
    /// hold less then).
    fn set_reclaim_active(&mut self, nid: usize, active: bool) {
        for zi in self.pm.nodes[nid].zones.clone() {
            self.pm.zones[zi].reclaim_active = active;
        }
    }

    /// The end of balance_pgdat(): the boost is spent; if the run was boosted, kcompactd
    /// is woken at pageblock order to defragment. Then kswapd_try_to_sleep().
    fn balance_pgdat_done(&mut self, nid: usize) -> KthreadNext {
        self.set_reclaim_active(nid, false);
        let st = &mut self.pgdat[nid].kswapd;
        st.running = false;
        let (boosted, alloc_order, reclaim_order) = (st.boosted, st.alloc_order, st.order);
        if boosted {
            for zi in self.pm.nodes[nid].zones.clone() {
                self.pm.zones[zi].watermark_boost = 0;
            }
            self.wakeup_kcompactd(nid, PAGEBLOCK_ORDER, ZONE_NORMAL);
        }
        self.kswapd_try_to_sleep(nid, alloc_order, reclaim_order)
    }

    /// kswapd_try_to_sleep(): when balanced for the order reclaim ended at, clear the
    /// compaction skip bits of zones where direct compaction failed
    /// (reset_isolation_suitable), wake kcompactd for the order kswapd was woken for, and
    /// sleep HZ/10; if still balanced then, sleep until woken.
    fn kswapd_try_to_sleep(&mut self, nid: usize, alloc_order: u32, reclaim_order: u32) -> KthreadNext {
        if self.prepare_kswapd_sleep(nid, reclaim_order) {
            self.reset_isolation_suitable(nid);
            self.wakeup_kcompactd(nid, alloc_order, ZONE_NORMAL);
            let st = &mut self.pgdat[nid].kswapd;
            st.short_sleep = Some(reclaim_order);
            st.order = 0;
            return KthreadNext::Sleep(KSWAPD_SHORT_SLEEP_NS);
        }
        self.rec.vm.count(Ev::KSWAPD_HIGH_WMARK_HIT_QUICKLY);
        KthreadNext::Again
    }

    /// The second half of kswapd_try_to_sleep(): woken early (a new request) or still
    /// unbalanced after the short sleep: reclaim again; otherwise sleep until woken.
    fn kswapd_after_short_sleep(&mut self, nid: usize, reclaim_order: u32) -> KthreadNext {
        let woken_early = self.pgdat[nid].kswapd.order > 0 || !self.pgdat_balanced(nid, 0, true);
        if !woken_early && self.prepare_kswapd_sleep(nid, reclaim_order) {
            trace_event!(self, mm_vmscan_kswapd_sleep, nid = nid);
            return KthreadNext::Wait;
        }
        self.rec.vm.count(if self.pgdat[nid].kswapd.order > 0 {
            Ev::KSWAPD_LOW_WMARK_HIT_QUICKLY
        } else {
            Ev::KSWAPD_HIGH_WMARK_HIT_QUICKLY
        });
        KthreadNext::Again
    }

    /// prepare_kswapd_sleep(): a hopeless node, or a balanced one.
    fn prepare_kswapd_sleep(&self, nid: usize, order: u32) -> bool {
        self.pgdat[nid].kswapd.failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced(nid, order, true)
    }
}
