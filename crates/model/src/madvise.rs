//! madvise(2) for anonymous memory (mm/madvise.c): MADV_HUGEPAGE / MADV_NOHUGEPAGE
//! (hugepage_madvise: VMA flags, khugepaged entry), MADV_DONTNEED (zap), MADV_WILLNEED
//! (swap-in ahead into the swap cache), MADV_COLD / MADV_PAGEOUT / MADV_FREE (reclaim issue,
//! below) and MADV_COLLAPSE (khugepaged issue). Errors are the kernel's errno names.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::migrate::SplitReason;
use crate::mm_types::*;
use crate::mmap::{Vma, VM_HUGEPAGE, VM_LOCKED, VM_NOHUGEPAGE};
use crate::pgtable::*;
use crate::vmstat::Ev;
use thplab_workload::workload::Advice;

impl Kernel {
    /// do_madvise() over [start, end). Returns the errno name on failure.
    pub fn madvise(&mut self, mm: MmId, start: u64, end: u64, advice: Advice) -> Result<(), &'static str> {
        if start & !PAGE_MASK != 0 {
            return Err("EINVAL");
        }
        self.charge(self.costs.syscall_ns);
        // madvise_do_behavior(): the walk runs under a block plug (page_io.rs)
        self.blk_start_plug();
        let r = self.madvise_do_behavior(mm, start, end, advice);
        self.blk_finish_plug();
        r
    }

    fn madvise_do_behavior(&mut self, mm: MmId, start: u64, end: u64, advice: Advice) -> Result<(), &'static str> {
        let mapped_all = self.mms[mm].fully_mapped(start, end);
        match advice {
            Advice::Hugepage | Advice::Nohugepage => {
                let (set, clear) = if advice == Advice::Hugepage {
                    (VM_HUGEPAGE, VM_NOHUGEPAGE)
                } else {
                    (VM_NOHUGEPAGE, VM_HUGEPAGE)
                };
                let newf = |f: u32| (f | set) & !clear;
                // madvise_update_vma() -> split_vma(): -ENOMEM at vm.max_map_count, which
                // madvise_vma_behavior() returns as EAGAIN ("resources temporarily unavailable")
                if !self.mms[mm].modify_splits_ok(start, end, self.cfg.max_map_count, newf) {
                    return Err("EAGAIN");
                }
                if advice == Advice::Hugepage {
                    // hugepage_madvise(): khugepaged_enter_vma(vma, new flags) on each VMA
                    // the range touches, whole and before it is split, even when it already has VM_HUGEPAGE
                    // (madvise_vma_behavior)
                    let orig: Vec<Vma> =
                        self.mms[mm].vmas.values().filter(|v| v.end > start && v.start < end).cloned().collect();
                    for v in orig {
                        self.khugepaged_enter_vma(mm, &v, newf(v.flags));
                    }
                }
                // madvise_update_vma() -> vma_modify_flags(): a merge enters its target
                let (_, merged) = self.mms[mm].modify_flags(start, end, newf);
                for at in merged {
                    self.khugepaged_enter_vma_at(mm, at);
                }
            }
            Advice::Dontneed => {
                // madvise_dontneed_single_vma(): zap with reclaim_pt
                for (s, e, _) in self.mms[mm].vmas_in(start, end) {
                    self.zap_range(mm, s, e, false);
                    self.reclaim_empty_pte_tables(mm, s, e);
                }
            }
            Advice::Willneed => {
                for (s, e, _) in self.mms[mm].vmas_in(start, end) {
                    self.madvise_willneed(mm, s, e);
                }
            }
            Advice::Cold | Advice::Pageout | Advice::Free => {
                for (s, e, flags) in self.mms[mm].vmas_in(start, end) {
                    // can_madv_lru_vma(): not on VM_LOCKED mappings
                    if flags & VM_LOCKED != 0 {
                        return Err("EINVAL");
                    }
                    self.madvise_cold_or_pageout(mm, s, e, advice);
                }
                if advice != Advice::Pageout {
                    self.khugepaged_cold_to_tail(mm); // seed 002 v1 (thplab.khugepaged_cold_to_tail)
                }
            }
            Advice::Collapse => {
                return self.madvise_collapse(mm, start, end);
            }
        }
        if mapped_all {
            Ok(())
        } else {
            Err("ENOMEM")
        }
    }

    /// MADV_COLD / MADV_PAGEOUT / MADV_FREE over one VMA piece
    /// (madvise_cold_or_pageout_pte_range, madvise_free_pte_range), one PMD at a time:
    ///  - a huge PMD wholly in the range is handled as one folio; partly in the range, the
    ///    folio is split first (split_folio: the zero-subpage policy applies) and its
    ///    pages in the range handled one by one; a PTE-mapped THP only partly in the
    ///    range is split the same way;
    ///  - COLD clears the accessed bits and deactivates; PAGEOUT clears the folios'
    ///    referenced and young flags (not the PTEs'), isolates the folios and reclaims each
    ///    PMD's at once, ignoring references (one reclaim_pages() call per PMD);
    ///  - FREE clears dirty and accessed bits and marks folios lazy-free
    ///    (folio_mark_lazyfree: pglazyfree, onto the inactive file list); swap entries in
    ///    the range are freed (the contents are discarded);
    ///  - a PMD swap entry (seed 003) only partly in the range is split into PTE entries.
    pub fn madvise_cold_or_pageout(&mut self, mm: MmId, s: u64, e: u64, advice: Advice) {
        if s >= e {
            return;
        }
        let idxs: Vec<(u64, u32)> =
            self.mms[mm].pmds.range(s >> PMD_SHIFT..=(e - 1) >> PMD_SHIFT).map(|(k, v)| (*k, *v)).collect();
        for (idx, sid) in idxs {
            if !self.mms[mm].alive || self.mms[mm].pmds.get(&idx) != Some(&sid) {
                continue;
            }
            let ps = (idx << PMD_SHIFT).max(s);
            let pe = ((idx + 1) << PMD_SHIFT).min(e);
            let whole = pe - ps == PMD_SIZE;
            self.charge(self.costs.pmd_walk_ns);
            let mut list = vec![];
            match self.slots.get(sid).pmd {
                Pmd::HugeZero => continue,
                Pmd::SwapPmd(first) => {
                    if !whole {
                        self.split_swap_pmd(mm, sid);
                    } else {
                        if advice == Advice::Free {
                            // the seed's madvise_free_huge_pmd(): the whole entry's slots go
                            self.slots.get_mut(sid).pmd = Pmd::Table(Box::new([PTE_NONE; PTRS_PER_PTE]));
                            self.free_swap_entries(mm, first, HPAGE_PMD_NR as u32);
                        }
                        continue;
                    }
                }
                Pmd::Huge(head) => {
                    let head = head as u64;
                    if whole {
                        self.madvise_folio(head, HPAGE_PMD_NR, advice, &mut list);
                        if advice == Advice::Pageout {
                            self.reclaim_pages(list);
                        } else {
                            self.mms[mm].tlb.flush_range(idx << PMD_SHIFT, (idx + 1) << PMD_SHIFT);
                            self.charge(self.costs.tlb_flush_ns);
                        }
                        continue;
                    }
                    if self.split_folio(Pfn(head), SplitReason::Other).is_err() {
                        continue;
                    }
                }
                Pmd::Table(_) => {}
            }
            // the PTE walk
            let (i0, i1) = (pte_index(ps), pte_index(pe - 1));
            let mut i = i0;
            while i <= i1 {
                let pte = match &self.slots.get(sid).pmd {
                    Pmd::Table(t) => t[i],
                    _ => break,
                };
                self.charge(self.costs.pte_walk_ns);
                match pte_kind(pte) {
                    K_SWAP if advice == Advice::Free => {
                        // madvise_free_pte_range(): a swap_pte_batch() at a time
                        i += self.zap_swap_run(mm, sid, i, i1);
                        continue;
                    }
                    K_PRESENT => {
                        let pfn = pte_payload(pte) as u64;
                        let f = self.pm.frames[pfn as usize];
                        if compound(f) != COMPOUND_BASE {
                            let head = self.folio_head(pfn);
                            let nr = self.folio_nr_pages(head);
                            // madvise_folio_pte_batch(): is the whole folio mapped here, in
                            // order, inside the range? (a PMD THP or an mTHP)
                            let covered = head == pfn
                                && i + nr as usize - 1 <= i1
                                && self.pm.mapcount.get(&(head as u32)) == Some(&(nr as u16))
                                && match &self.slots.get(sid).pmd {
                                    Pmd::Table(t) => (0..nr as usize).all(|k| {
                                        pte_kind(t[i + k]) == K_PRESENT
                                            && pte_payload(t[i + k]) as u64 == pfn + k as u64
                                    }),
                                    _ => false,
                                };
                            if covered {
                                self.madvise_folio(head, nr, advice, &mut list);
                                i += nr as usize;
                                continue;
                            }
                            if self.split_folio(Pfn(head), SplitReason::Other).is_err() {
                                i += 1;
                            }
                            // re-read this PTE: the page is order 0 now (or the zero page)
                            continue;
                        }
                        self.madvise_folio(pfn, 1, advice, &mut list);
                    }
                    _ => {}
                }
                i += 1;
            }
            // PAGEOUT leaves the PTEs' accessed bits alone and gathers no TLB entries: its
            // flushes are try_to_unmap's, per folio, in the reclaim (the mmu_gather of
            // madvise_cold_or_pageout_pte_range flushes only what COLD cleared)
            if advice == Advice::Pageout {
                self.reclaim_pages(list);
            } else {
                self.mms[mm].tlb.flush_range(ps, pe);
                self.charge(self.costs.tlb_flush_ns);
            }
        }
    }

    /// MADV_WILLNEED on anonymous memory (swapin_walk_pmd_entry → read_swap_cache_async):
    /// every PTE swap entry in the range is read into the swap cache (unmapped, clean, on
    /// the inactive list); the faults that follow are swap-cache hits. PMD swap entries
    /// (seed 003) are left for the fault.
    fn madvise_willneed(&mut self, mm: MmId, s: u64, e: u64) {
        let mut a = s & PAGE_MASK;
        while a < e {
            self.charge(self.costs.pte_walk_ns);
            if let crate::memory::Mapping::Swap(slot) = self.follow(mm, a) {
                let is_pte = self.mms[mm]
                    .pmds
                    .get(&(a >> PMD_SHIFT))
                    .is_some_and(|&sid| matches!(self.slots.get(sid).pmd, Pmd::Table(_)));
                if is_pte && !self.swap_has_cache(slot) {
                    let nid = self.mms[mm].node;
                    let Some(Pfn(pfn)) = self.alloc_pages(crate::page_alloc::GFP_HIGHUSER_MOVABLE, 0, nid) else {
                        return;
                    };
                    if !self.mms[mm].alive || self.follow(mm, a) != crate::memory::Mapping::Swap(slot) {
                        self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
                        return;
                    }
                    self.pm.frames[pfn as usize] = make_anon(COMPOUND_BASE);
                    self.add_to_swap_cache(pfn, slot, 1);
                    self.swap_read_folio(pfn, 1, slot, false);
                    self.lru_add(pfn, 1, false);
                }
            }
            a += PAGE_SIZE;
        }
    }

    /// One folio (head, nr pages) under MADV_COLD / MADV_PAGEOUT / MADV_FREE.
    fn madvise_folio(&mut self, head: u64, nr: u64, advice: Advice, list: &mut Vec<u64>) {
        let f = self.pm.frames[head as usize];
        if lru(f) == LRU_UNEVICTABLE {
            return;
        }
        match advice {
            Advice::Cold => self.deactivate_folio(head, nr),
            Advice::Pageout => {
                self.pm.frames[head as usize] = set_referenced(set_young(f, false), false);
                // folio_isolate_lru(): one folio under the node's lru_lock
                if lru(f) != LRU_NONE {
                    self.lock_acquire(crate::locking::LockId::Lru(self.pm.node_of(head)), 1);
                    self.lru_del(head, nr);
                    list.push(head);
                }
            }
            Advice::Free => {
                if swapcache(f) && !self.folio_free_swap(head) {
                    return;
                }
                for k in 0..nr {
                    let pf = self.pm.frames[(head + k) as usize];
                    self.pm.frames[(head + k) as usize] = set_dirty(pf, false);
                }
                let f = self.pm.frames[head as usize];
                self.pm.frames[head as usize] = set_young(f, false);
                // folio_mark_lazyfree() -> lru_lazyfree(): swap-backed folios only
                if lazyfree(f) || lru(f) == LRU_NONE {
                    return;
                }
                self.lru_del(head, nr);
                for k in 0..nr {
                    let pf = self.pm.frames[(head + k) as usize];
                    self.pm.frames[(head + k) as usize] = set_referenced(set_lazyfree(pf, true), false);
                }
                self.lruvec_add_folio(head, nr, LRU_INACTIVE_ANON, false);
                self.rec.vm.add(Ev::PGLAZYFREE, nr);
            }
            _ => {}
        }
    }

    /// MADV_COLLAPSE (madvise_collapse(), v6.1+): each VMA piece in turn, the first
    /// failing piece's errno; a hole in the range gives ENOMEM at the end (as
    /// madvise_walk_vmas does). The mm does not join the khugepaged list.
    pub fn madvise_collapse(&mut self, mm: MmId, s: u64, e: u64) -> Result<(), &'static str> {
        if e <= s {
            return if e == s { Ok(()) } else { Err("EINVAL") };
        }
        let mapped_all = self.mms[mm].fully_mapped(s, e);
        let pieces = self.mms[mm].vmas_in(s, e);
        if pieces.is_empty() {
            return Err("ENOMEM");
        }
        for (ps, pe, flags) in pieces {
            self.madvise_collapse_vma(mm, ps, pe, flags)?;
        }
        if mapped_all {
            Ok(())
        } else {
            Err("ENOMEM")
        }
    }
}
