//! Transparent huge pages (mm/huge_memory.c): thp_vma_allowable_order for PMD order,
//! vma_thp_gfp_mask (the defrag table), do_huge_pmd_anonymous_page, the huge zero page
//! (mm_get_huge_zero_folio), do_huge_zero_wp_pmd (v6.13+: a write to the huge zero
//! page allocates a THP, splitting only on failure), __split_huge_pmd, and the
//! deferred split queue (deferred_split_folio).

use crate::config::{Defrag, ThpMode};
use crate::consts::*;
use crate::kernel::Kernel;
use crate::memory::Fault;
use crate::mm_types::*;
use crate::mmap::{Vma, VM_HUGEPAGE, VM_LOCKED, VM_NOHUGEPAGE};
use crate::page_alloc::*;
use crate::pgtable::*;
use crate::trace::trace_event;
use crate::vmstat::{Ev, NodeStat};

/// The huge zero folio (huge_zero_folio, huge_zero_refcount): allocated on first use,
/// one reference per mm that maps it (MMF_HUGE_ZERO_PAGE).
#[derive(Clone, Default)]
pub struct HugeZeroFolio {
    pub pfn: Option<u64>,
    pub users: u64,
}

/// thp_vma_suitable_order(vma, vma->vm_end - HPAGE_PMD_SIZE, PMD_ORDER): the size check
/// of __thp_vma_allowable_orders() outside the fault path — the VMA holds a whole
/// naturally aligned 2 MiB range.
pub fn thp_vma_fits_pmd(v: &Vma) -> bool {
    let Some(last) = v.end.checked_sub(HPAGE_PMD_SIZE) else { return false };
    let haddr = last & !(HPAGE_PMD_SIZE - 1);
    haddr >= v.start && haddr + HPAGE_PMD_SIZE <= v.end
}

impl Kernel {
    /// thp_vma_allowable_order(vma, vm_flags, TVA_PAGEFAULT, PMD_ORDER) plus
    /// thp_vma_suitable_order(): may this fault map a PMD THP at `haddr`?
    pub fn thp_vma_allowable(&self, mm: MmId, vma: &Vma, haddr: u64) -> bool {
        self.thp_vma_allowable_flags(mm, vma.flags) && haddr >= vma.start && haddr + HPAGE_PMD_SIZE <= vma.end
    }

    /// The flag part of thp_vma_allowable_order (no range check).
    pub fn thp_vma_allowable_flags(&self, mm: MmId, vm_flags: u32) -> bool {
        if self.mms[mm].thp_disable || vm_flags & VM_NOHUGEPAGE != 0 {
            return false;
        }
        match self.cfg.pmd_mode() {
            ThpMode::Always => true,
            ThpMode::Madvise => vm_flags & VM_HUGEPAGE != 0,
            _ => false,
        }
    }

    /// vma_thp_gfp_mask(): the gfp of a THP fault per transparent_hugepage/defrag.
    pub fn vma_thp_gfp_mask(&self, vm_flags: u32) -> Gfp {
        let madvised = vm_flags & VM_HUGEPAGE != 0;
        match self.cfg.defrag {
            Defrag::Always => GFP_TRANSHUGE | if madvised { 0 } else { __GFP_NORETRY },
            Defrag::Defer => GFP_TRANSHUGE_LIGHT | __GFP_KSWAPD_RECLAIM,
            Defrag::DeferMadvise => {
                GFP_TRANSHUGE_LIGHT | if madvised { __GFP_DIRECT_RECLAIM } else { __GFP_KSWAPD_RECLAIM }
            }
            Defrag::Madvise => GFP_TRANSHUGE_LIGHT | if madvised { __GFP_DIRECT_RECLAIM } else { 0 },
            Defrag::Never => GFP_TRANSHUGE_LIGHT,
        }
    }

    /// alloc_pages_mpol() for PMD order: the local node only (THISNODE|NORETRY) first;
    /// other nodes (and full reclaim/compaction) only when direct reclaim is allowed.
    pub fn alloc_thp(&mut self, gfp: Gfp, nid: usize) -> Option<Pfn> {
        if let Some(p) = self.alloc_pages(gfp | __GFP_THISNODE | __GFP_NORETRY, HPAGE_PMD_ORDER, nid) {
            return Some(p);
        }
        if gfp & __GFP_DIRECT_RECLAIM == 0 {
            return None;
        }
        self.alloc_pages(gfp, HPAGE_PMD_ORDER, nid)
    }

    /// vma_alloc_anon_folio_pmd(): allocate and clear a THP for a fault, counting
    /// thp_fault_alloc / thp_fault_fallback and the per-size anon_fault_* stats.
    fn vma_alloc_anon_folio_pmd(&mut self, mm: MmId, vm_flags: u32) -> Option<u64> {
        let gfp = self.vma_thp_gfp_mask(vm_flags);
        let nid = self.mms[mm].node;
        let t0 = self.clock.cost;
        let page = self.alloc_thp(gfp, nid);
        if self.rec.record_latency && page.is_some() {
            self.rec.latency("thp_alloc", mm.idx(), self.clock.cost - t0);
        }
        match page {
            None => {
                self.rec.vm.count(Ev::THP_FAULT_FALLBACK);
                self.count_mthp("anon_fault_fallback", 1);
                None
            }
            Some(Pfn(pfn)) => {
                self.rec.vm.count(Ev::THP_FAULT_ALLOC);
                self.count_mthp("anon_fault_alloc", 1);
                self.charge(self.costs.fault_2m_ns + self.costs.clear_2m_ns);
                Some(pfn)
            }
        }
    }

    /// map_anon_folio_pmd(): set up the THP's frames, map it by a huge PMD in slot `sid`.
    pub(crate) fn map_anon_folio_pmd(&mut self, mm: MmId, sid: u32, head: u64, vm_flags: u32, write: bool) {
        for i in 0..HPAGE_PMD_NR {
            let c = if i == 0 { COMPOUND_HEAD } else { COMPOUND_TAIL };
            self.pm.frames[(head + i) as usize] = with_rmap(make_anon(c), Some((sid, i as u32)));
        }
        let h = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_dirty(set_young(h, true), write);
        self.slots.get_mut(sid).pmd = Pmd::Huge(head as u32);
        self.mms[mm].rss_anon += HPAGE_PMD_NR;
        self.mod_node_page_state(head, NodeStat::NrAnonMapped, HPAGE_PMD_NR as i64);
        self.mod_node_page_state(head, NodeStat::NrAnonThps, 1);
        self.lru_add(head, HPAGE_PMD_NR, vm_flags & VM_LOCKED != 0);
        self.folio_add_new_anon(head, HPAGE_PMD_ORDER);
        self.deferred_split_folio(head, false);
    }

    /// The part of folio_add_new_anon_rmap() every new anonymous large folio shares
    /// (fault, swap-in, collapse, migration target): record the order in the first
    /// tail (folio_set_order) and count it (mod_mthp_stat(order, MTHP_STAT_NR_ANON, 1)).
    pub(crate) fn folio_add_new_anon(&mut self, head: u64, order: u32) {
        if order >= 2 {
            let t = head as usize + 1;
            self.pm.frames[t] = with_first_tail_order(self.pm.frames[t], order);
            self.count_mthp_order(order, "nr_anon", 1);
        }
    }

    /// do_huge_pmd_anonymous_page(). Returns None for VM_FAULT_FALLBACK (the caller
    /// then takes the PTE path), Some(result) otherwise.
    pub fn do_huge_pmd_anonymous_page(&mut self, mm: MmId, vma: &Vma, haddr: u64, write: bool) -> Option<Fault> {
        // vmf_anon_prepare(), then khugepaged_enter_vma(vma, vma->vm_flags): the first THP
        // fault of an eligible VMA registers the mm, a read fault (huge zero page) too
        self.mms[mm].anon_vma_prepare(haddr);
        let vma = &self.mms[mm].vmas[&vma.start].clone();
        self.khugepaged_enter_vma(mm, vma, vma.flags);
        let idx = haddr >> PMD_SHIFT;
        if !write && self.cfg.use_zero_page {
            let Some(pgtable) = self.alloc_pgtable(mm) else { return Some(Fault::Oom) };
            if !self.mm_get_huge_zero_folio(mm) {
                self.free_pgtable(pgtable);
                return None;
            }
            self.new_slot(mm, idx, Pmd::HugeZero, pgtable);
            self.charge(self.costs.fault_zero_ns);
            return Some(Fault::Ok);
        }
        let head = self.vma_alloc_anon_folio_pmd(mm, vma.flags)?;
        if !self.mms[mm].alive {
            self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
            return Some(Fault::Oom);
        }
        let Some(pgtable) = self.alloc_pgtable(mm) else {
            self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
            return Some(Fault::Oom);
        };
        let sid = self.new_slot(mm, idx, Pmd::HugeZero, pgtable);
        self.map_anon_folio_pmd(mm, sid, head, vma.flags, write);
        Some(Fault::Ok)
    }

    /// mm_get_huge_zero_folio(): take a reference on the huge zero page, allocating it
    /// on first use ((GFP_TRANSHUGE | __GFP_ZERO) & ~__GFP_MOVABLE), counting
    /// thp_zero_page_alloc / thp_zero_page_alloc_failed.
    fn mm_get_huge_zero_folio(&mut self, mm: MmId) -> bool {
        if self.mms[mm].huge_zero_ref {
            return true;
        }
        if self.huge_zero.pfn.is_none() {
            let nid = self.mms[mm].node;
            match self.alloc_pages((GFP_TRANSHUGE | __GFP_ZERO) & !__GFP_MOVABLE, HPAGE_PMD_ORDER, nid) {
                None => {
                    self.rec.vm.count(Ev::THP_ZERO_PAGE_ALLOC_FAILED);
                    return false;
                }
                Some(Pfn(pfn)) => {
                    for p in pfn..pfn + HPAGE_PMD_NR {
                        self.pm.frames[p as usize] = make_zero_frame();
                    }
                    self.charge(self.costs.clear_2m_ns);
                    self.rec.vm.count(Ev::THP_ZERO_PAGE_ALLOC);
                    self.huge_zero.pfn = Some(pfn);
                }
            }
        }
        self.mms[mm].huge_zero_ref = true;
        self.huge_zero.users += 1;
        true
    }

    /// The huge zero folio as a run finds it kept from earlier use (thplab.huge_zero_folio=
    /// kept): allocated as get_huge_zero_folio() does, at boot (before the counters' and the
    /// clock's start: no thp_zero_page_alloc, no time), held by no mm, so the shrinker may
    /// free it (shrink_huge_zero_folio_count() counts it while only its own reference is
    /// left).
    pub fn keep_huge_zero_folio(&mut self) {
        if self.huge_zero.pfn.is_some() {
            return;
        }
        let got = self.alloc_pages((GFP_TRANSHUGE | __GFP_ZERO) & !__GFP_MOVABLE, HPAGE_PMD_ORDER, 0);
        if let Some(Pfn(pfn)) = got {
            for p in pfn..pfn + HPAGE_PMD_NR {
                self.pm.frames[p as usize] = make_zero_frame();
            }
            self.huge_zero.pfn = Some(pfn);
        }
    }

    /// mm_put_huge_zero_folio(): an exiting mm drops its reference.
    pub fn mm_put_huge_zero_folio(&mut self, mm: MmId) {
        if self.mms[mm].huge_zero_ref {
            self.mms[mm].huge_zero_ref = false;
            self.huge_zero.users -= 1;
        }
    }

    /// Put a folio that was on the deferred split queue back on it (migration moved it:
    /// the copy carries PG_partially_mapped).
    pub(crate) fn deferred_split_requeue(&mut self, head: u64) {
        let t = head as usize + 1;
        self.pm.frames[t] = with_lru(self.pm.frames[t], 1);
        let node = self.pm.node_of(head);
        let nr = self.folio_nr_pages(head);
        self.pgdat[node].deferred_split.push_tail(&mut self.pm.links, t as u32, nr);
    }

    /// Folios on node `nid`'s deferred split queue (the shrinker's count_objects).
    pub fn deferred_split_count(&self, nid: usize) -> u64 {
        self.pgdat[nid].deferred_split.len
    }

    /// shrink_huge_zero_folio_scan(): free the huge zero page when no mm uses it.
    pub fn shrink_huge_zero_page(&mut self) {
        if self.huge_zero.users == 0 {
            if let Some(pfn) = self.huge_zero.pfn.take() {
                self.pm.free_pages(Pfn(pfn), HPAGE_PMD_ORDER, &mut self.rec.vm);
            }
        }
    }

    /// do_huge_zero_wp_pmd(): replace the huge zero PMD with a fresh THP. None = fallback.
    pub fn do_huge_zero_wp_pmd(&mut self, mm: MmId, vma: &Vma, sid: u32, _haddr: u64) -> Option<Fault> {
        let head = self.vma_alloc_anon_folio_pmd(mm, vma.flags)?;
        if !self.mms[mm].alive {
            self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
            return Some(Fault::Oom);
        }
        self.map_anon_folio_pmd(mm, sid, head, vma.flags, true);
        let i = self.slots.get(sid).index;
        self.mms[mm].tlb.flush_range(i << PMD_SHIFT, (i + 1) << PMD_SHIFT);
        self.charge(self.costs.tlb_flush_ns);
        Some(Fault::Ok)
    }

    /// __split_huge_pmd_locked(): turn a huge PMD into a PTE table (the deposited one),
    /// counting thp_split_pmd. The folio stays whole; its subpages are now PTE-mapped.
    pub fn split_huge_pmd(&mut self, mm: MmId, sid: u32) {
        let pmd = std::mem::replace(&mut self.slots.get_mut(sid).pmd, Pmd::Table(Box::new([PTE_NONE; PTRS_PER_PTE])));
        self.rec.vm.count(Ev::THP_SPLIT_PMD);
        self.charge(self.costs.split_pmd_ns);
        match pmd {
            Pmd::HugeZero => {
                if let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd {
                    t.iter_mut().for_each(|e| *e = PTE_ZERO);
                }
            }
            Pmd::Huge(head) => {
                if let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd {
                    for (i, e) in t.iter_mut().enumerate() {
                        *e = mk_pte(K_PRESENT, head + i as u32);
                    }
                }
                self.mod_node_page_state(head as u64, NodeStat::NrAnonThps, -1);
                self.pm.mapcount.insert(head, HPAGE_PMD_NR as u16);
            }
            other => {
                self.slots.get_mut(sid).pmd = other;
            }
        }
        let i = self.slots.get(sid).index;
        self.mms[mm].tlb.flush_range(i << PMD_SHIFT, (i + 1) << PMD_SHIFT);
    }

    // ---- the deferred split queue: links of head+1, flags in head+1's frame ----

    fn on_deferred(&self, head: u64) -> bool {
        lru(self.pm.frames[head as usize + 1]) == 1
    }
    pub fn folio_partially_mapped(&self, head: u64) -> bool {
        mlocked(self.pm.frames[head as usize + 1])
    }

    /// deferred_split_folio(folio, partially_mapped): any anonymous large folio of order
    /// 2 or more; thp_deferred_split_page counts PMD-order folios only, the per-size
    /// split_deferred and nr_anon_partially_mapped every order.
    pub fn deferred_split_folio(&mut self, head: u64, partially_mapped: bool) {
        if !partially_mapped && !self.cfg.shrink_underused {
            return;
        }
        let order = folio_order(&self.pm.frames, head);
        if order <= 1 {
            return;
        }
        let t = head as usize + 1;
        if partially_mapped && !self.folio_partially_mapped(head) {
            self.pm.frames[t] = set_mlocked(self.pm.frames[t], true);
            if order == HPAGE_PMD_ORDER {
                self.rec.vm.count(Ev::THP_DEFERRED_SPLIT_PAGE);
            }
            self.count_mthp_order(order, "split_deferred", 1);
            self.count_mthp_order(order, "nr_anon_partially_mapped", 1);
        }
        if !self.on_deferred(head) {
            self.pm.frames[t] = with_lru(self.pm.frames[t], 1);
            let node = self.pm.node_of(head);
            self.pgdat[node].deferred_split.push_tail(&mut self.pm.links, t as u32, 1 << order);
        }
    }

    /// __folio_unqueue_deferred_split(): off the queue; a partially mapped folio loses
    /// PG_partially_mapped and stops counting in nr_anon_partially_mapped.
    pub fn deferred_split_remove(&mut self, head: u64) {
        self.deferred_split_unlink(head);
        let order = folio_order(&self.pm.frames, head);
        if order >= 2 && self.folio_partially_mapped(head) {
            let t = head as usize + 1;
            self.count_mthp_order(order, "nr_anon_partially_mapped", -1);
            self.pm.frames[t] = set_mlocked(self.pm.frames[t], false);
        }
    }

    /// list_del_init(&folio->_deferred_list) alone (deferred_split_scan): off the queue,
    /// PG_partially_mapped kept until the split.
    fn deferred_split_unlink(&mut self, head: u64) {
        if self.on_deferred(head) {
            let t = head as usize + 1;
            let node = self.pm.node_of(head);
            let order = folio_order(&self.pm.frames, head);
            self.pgdat[node].deferred_split.remove(&mut self.pm.links, t as u32, 1 << order);
            self.pm.frames[t] = with_lru(self.pm.frames[t], 0);
        }
    }

    /// shrink_slab(): the shrinkers thplab models — the THP deferred-split queue
    /// (deferred_split_scan; filled in by the split issue) and the huge zero page.
    pub fn shrink_slab(&mut self) {
        for n in 0..self.pgdat.len() {
            let len = self.pgdat[n].deferred_split.len;
            self.deferred_split_scan(n, len);
        }
        self.shrink_huge_zero_page();
    }

    pub fn deferred_split_len(&self) -> u64 {
        self.pgdat.iter().map(|n| n.deferred_split.len).sum()
    }
}

use crate::config::SplitZero;
use crate::migrate::{SplitFailed, SplitReason};

impl Kernel {
    /// split_folio() / __folio_split() of a PMD-order anonymous folio to order 0:
    /// unmap (a huge PMD is split first: thp_split_pmd), split the compound page, remap.
    /// At remap, an all-zero subpage that was mapped is
    ///  - `mainline` (v6.12+, every anon split): remapped to the shared zero page
    ///    (try_to_map_unused_to_zeropage), its frame freed;
    ///  - `seed` (Yu Zhao 2021, isolated splits only): not remapped, PTE cleared
    ///    (patch 3, try_to_unmap_clean: thp_split_unmap); then every tail page left with
    ///    no mapping — those just unmapped and those zapped before — is freed at once
    ///    (patch 2, __split_huge_page's page_ref_freeze(subpage, 2): thp_split_free);
    ///  - `none`: remapped like any page.
    ///
    /// mlocked folios and VM_LOCKED VMAs keep their zero pages. The zero check costs
    /// what memchr_inv costs: up to the first non-zero byte.
    /// Returns the head pfns of the order-0 folios left (mapped or not, not freed).
    pub fn split_folio(&mut self, head: Pfn, reason: SplitReason) -> Result<Vec<Pfn>, SplitFailed> {
        let head = head.0;
        let f = self.pm.frames[head as usize];
        if tag(f) != TAG_ANON || compound(f) != COMPOUND_HEAD {
            self.rec.vm.count(Ev::THP_SPLIT_PAGE_FAILED);
            self.count_mthp("split_failed", 1);
            return Err(SplitFailed);
        }
        // any large folio: PMD order or mTHP; split to order 0 (uniform split)
        let order = folio_order(&self.pm.frames, head);
        let nr = 1u64 << order;
        if self.split_refused(head, order) {
            return Err(SplitFailed);
        }
        let swap_slots = if swapcache(f) { self.swap_slots_of(head) } else { None };
        self.unmap_folio_partially_mapped(head, nr);
        // unmap_folio(): a PMD mapping is frozen whole (split_huge_pmd_locked(freeze): the
        // model splits the PMD to PTEs, as it does); PTEs are unmapped one at a time
        // (try_to_migrate_one per PTE: split_unmap_pte_ns each, counted in the loop below)
        let mut pmd_frozen = false;
        if let Some((sid, _)) = rmap(f) {
            if matches!(self.slots.get(sid).pmd, Pmd::Huge(_)) {
                let mm = self.slots.get(sid).mm;
                self.split_huge_pmd(mm, sid);
                pmd_frozen = true;
            }
        }
        let isolated = reason.isolated();
        let policy = self.cfg.split_zero;
        let lru_list = lru(f);
        let young_ = young(f);
        let referenced_ = referenced(f);
        let dirty_ = dirty(f);
        // an isolated folio is off its list: PG_mlocked tells
        let mlocked_ = lru_list == LRU_UNEVICTABLE || mlocked(f);
        if lru_list != LRU_NONE {
            self.lru_del(head, nr);
        }
        self.deferred_split_remove(head);
        self.pm.mapcount.remove(&(head as u32));
        // __split_folio_to_order(): the old order stops counting; order-0 pieces have no stats
        self.count_mthp_order(order, "nr_anon", -1);
        // a fixed part (the anon_vma lock, unmap_folio's rmap walk and flush, the refcount
        // freeze, the queues) and a part per subpage (each entry back to a PTE, each struct
        // page made a folio): split_folio_ns is calibrated on PMD THPs, so an mTHP pays the
        // fixed part and its share of the rest
        let fixed = self.costs.split_folio_fixed_ns.min(self.costs.split_folio_ns);
        self.charge(fixed + (self.costs.split_folio_ns - fixed) * nr / HPAGE_PMD_NR);
        let mut left = vec![];
        let mut freed = vec![];
        let mut flushed: Option<(MmId, u64)> = None;
        let mut pte_mapped = 0u64;
        for i in 0..nr {
            let p = head + i;
            let mut pf = self.pm.frames[p as usize];
            if i == 1 {
                // the first tail's order field (young/isolated/swapcache bits) goes
                pf = with_first_tail_order(pf, HPAGE_PMD_ORDER);
            }
            // every subpage becomes an order-0 folio with the folio's flags
            // (__split_folio_to_order: PG_referenced, PG_dirty, PG_swapcache, ...)
            let mut nf = with_compound(pf, COMPOUND_BASE);
            nf = set_referenced(set_dirty(set_young(nf, young_), dirty_ || dirty(pf)), referenced_);
            nf = set_swapcache(with_lru(nf, LRU_NONE), swap_slots.is_some());
            self.pm.frames[p as usize] = nf;
            match rmap(pf) {
                None => {
                    // already zapped (partially unmapped THP): the split's reference was the last
                    if policy == SplitZero::Seed && isolated {
                        self.rec.vm.count(Ev::THP_SPLIT_FREE);
                    }
                    freed.push(p);
                }
                Some((sid, idx)) => {
                    pte_mapped += 1;
                    let mm = self.slots.get(sid).mm;
                    let check = match policy {
                        SplitZero::Mainline => true,
                        SplitZero::Seed => isolated,
                        SplitZero::None => false,
                    } && !mlocked_;
                    let zero = check && self.split_subpage_is_zero(sid, idx, pf);
                    flushed.get_or_insert((mm, self.slots.get(sid).index));
                    if zero {
                        let pte = if policy == SplitZero::Mainline { PTE_ZERO } else { PTE_NONE };
                        if policy == SplitZero::Seed {
                            // patch 3's try_to_unmap_clean() leaves the subpage unmapped with
                            // the isolation's and lru_add_page_tail()'s references only, so
                            // patch 2's page_ref_freeze(subpage, 2) frees it (thp_split_free)
                            self.rec.vm.count(Ev::THP_SPLIT_UNMAP);
                            self.rec.vm.count(Ev::THP_SPLIT_FREE);
                        }
                        // try_to_map_unused_to_zeropage() (or the seed's cleared PTE), and
                        // the free of the subpage as the split ends; mainline leaves an
                        // isolated folio's pieces to its caller (reclaim: reclaim_unmapped_ns,
                        // fitted per zero subpage of a reclaim split, covers both), the seed's
                        // patch 2 frees them in the split
                        if !isolated || policy == SplitZero::Seed {
                            self.charge(self.costs.split_zero_subpage_ns);
                        }
                        self.set_pte(sid, idx as usize, pte);
                        self.pm.frames[p as usize] = with_rmap(nf, None);
                        self.mms[mm].rss_anon -= 1;
                        self.mod_node_page_state(p, NodeStat::NrAnonMapped, -1);
                        freed.push(p);
                    } else {
                        self.charge(self.costs.pte_walk_ns);
                        left.push(Pfn(p));
                    }
                }
            }
        }
        if !pmd_frozen {
            // each PTE's unmap and its flush: a process on one CPU has that CPU alone in its
            // mm_cpumask, so try_to_migrate_one() clears each PTE with ptep_clear_flush()
            // (arch_tlbbatch_should_defer() batches only when another CPU is in the mask);
            // calibrate's probes and the live runner's processes run so (host::fork_on)
            self.charge(self.costs.split_unmap_pte_ns * pte_mapped);
        }
        self.split_free_pieces(head, nr, swap_slots, freed);
        if !isolated {
            // lru_add_split_folio(): the pieces of a folio that was on the LRU go back on it;
            // an isolated folio's pieces stay on the caller's list (reclaim, migration)
            for &Pfn(p) in &left {
                let l = if lru_list == LRU_NONE { crate::mm_types::LRU_INACTIVE_ANON } else { lru_list };
                // lazy-free pieces go back to the file list (lru_index)
                self.lruvec_add_folio(p, 1, l, false);
            }
        }
        if let Some((mm, ix)) = flushed {
            self.mms[mm].tlb.flush_range(ix << PMD_SHIFT, (ix + 1) << PMD_SHIFT);
            self.charge(self.costs.tlb_flush_ns);
        }
        if order == HPAGE_PMD_ORDER {
            self.rec.vm.count(Ev::THP_SPLIT_PAGE);
        }
        self.count_mthp_order(order, "split", 1);
        trace_event!(
            self,
            thplab_split_huge_page,
            pfn = head,
            reason = format!("{reason:?}"),
            zero_subpages = format!("{policy:?}"),
            nr_freed = nr - left.len() as u64,
            nr_left = left.len(),
        );
        Ok(left)
    }

    /// try_to_map_unused_to_zeropage()'s test of a mapped subpage at a split: not in a
    /// VM_LOCKED VMA, and all zero (memchr_inv, charged up to its first non-zero byte).
    fn split_subpage_is_zero(&mut self, sid: u32, idx: u32, pf: u64) -> bool {
        let mm = self.slots.get(sid).mm;
        let addr = pte_addr(self.slots.get(sid).index, idx as u64);
        if self.mms[mm].find_vma(addr).is_some_and(|v| v.flags & crate::mmap::VM_LOCKED != 0) {
            return false;
        }
        self.charge(self.costs.memchr_inv_4k_ns * crate::content::memchr_inv_bytes(content(pf)) / PAGE_SIZE);
        crate::content::is_zero(content(pf))
    }

    /// The checks __folio_split() makes before it unmaps anything. A folio under
    /// writeback is refused at once (return -EBUSY, nothing counted); a swap-cache folio
    /// that is not is split, its swap-cache entries with it. An unmapped folio has no
    /// anon_vma to lock (folio_get_anon_vma): -EBUSY, counted as a failed split.
    fn split_refused(&mut self, head: u64, order: u32) -> bool {
        if swapcache(self.pm.frames[head as usize]) && self.folio_under_writeback(head) {
            return true;
        }
        if !self.folio_mapped(head) {
            if order == HPAGE_PMD_ORDER {
                self.rec.vm.count(Ev::THP_SPLIT_PAGE_FAILED);
            }
            self.count_mthp_order(order, "split_failed", 1);
            return true;
        }
        false
    }

    /// The end of a split: a swap-cache folio's pieces each cache their own slot
    /// (__swap_cache_replace_folio; new_folio->swap = folio->swap + i; the model's slot ->
    /// page map is per page already), then the unmapped pieces go
    /// (free_folio_and_swap_cache: out of the swap cache, free_swap_cache ->
    /// folio_free_swap, and freed).
    fn split_free_pieces(&mut self, head: u64, nr: u64, swap_slots: Option<(u32, u32)>, freed: Vec<u64>) {
        if let Some((slot, _)) = swap_slots {
            self.swap.cache_of.remove(&(head as u32));
            self.swap.writeback.remove(&(head as u32));
            for i in 0..nr {
                self.swap.cache_of.insert((head + i) as u32, (slot + i as u32, 1));
            }
        }
        for p in freed {
            if swap_slots.is_some() {
                self.delete_from_swap_cache(p);
            }
            self.pm.free_pages(Pfn(p), 0, &mut self.rec.vm);
        }
    }

    /// unmap_folio() -> try_to_unmap_one() at the start of a split: a PMD mapping is frozen
    /// whole, but the PTEs of a swap-backed folio go one by one (folio_unmap_pte_batch
    /// batches lazy-free folios only), so a folio with two or more mapped pages is
    /// partially mapped after the first: __folio_remove_rmap() queues it (split_deferred),
    /// unless it is in the swap cache (deferred_split_folio).
    fn unmap_folio_partially_mapped(&mut self, head: u64, nr: u64) {
        let f = self.pm.frames[head as usize];
        let (mut mapped, mut pmd_mapped) = (0u64, false);
        for i in 0..nr {
            if let Some((sid, _)) = rmap(self.pm.frames[(head + i) as usize]) {
                mapped += 1;
                pmd_mapped |= matches!(self.slots.get(sid).pmd, Pmd::Huge(_));
            }
        }
        if !pmd_mapped && mapped >= 2 && !lazyfree(f) && !swapcache(f) {
            self.deferred_split_folio(head, true);
        }
    }

    /// thp_underused(): more than max_ptes_none zero subpages (never at the default 511).
    pub fn thp_underused(&mut self, head: u64) -> bool {
        let max_none = self.cfg.max_ptes_none as u64;
        if max_none == MAX_PTES_NONE_ANY as u64 {
            return false;
        }
        let (mut zero, mut filled) = (0u64, 0u64);
        for i in 0..self.folio_nr_pages(head) {
            let c = content(self.pm.frames[(head + i) as usize]);
            self.charge(self.costs.memchr_inv_4k_ns * crate::content::memchr_inv_bytes(c) / PAGE_SIZE);
            if crate::content::is_zero(c) {
                zero += 1;
                if zero > max_none {
                    return true;
                }
            } else {
                filled += 1;
                if filled >= HPAGE_PMD_NR - max_none {
                    return false;
                }
            }
        }
        false
    }

    /// deferred_split_scan(): walk up to `nr_to_scan` queued folios: split partially
    /// mapped ones, split underused ones (thp_underused_split_page), drop used ones from
    /// the queue. Returns the number split.
    pub fn deferred_split_scan(&mut self, node: usize, nr_to_scan: u64) -> u64 {
        let mut split = 0;
        let mut scanned = 0;
        let mut keep: Vec<u64> = vec![];
        while scanned < nr_to_scan {
            let t = self.pgdat[node].deferred_split.head;
            if t == NIL {
                break;
            }
            scanned += 1;
            // taken off the queue (folio_try_get, list_del_init), its reference dropped at the end
            self.charge(self.costs.deferred_split_scan_ns);
            let head = t as u64 - 1;
            let partially = self.folio_partially_mapped(head);
            self.deferred_split_unlink(head);
            if partially {
                if self.split_folio(Pfn(head), SplitReason::Deferred).is_ok() {
                    split += 1;
                } else {
                    // still partially mapped: back on the queue
                    self.deferred_split_folio(head, true);
                }
                continue;
            }
            // v6.18 also skips mlocked folios
            if lru(self.pm.frames[head as usize]) == LRU_UNEVICTABLE {
                keep.push(head);
                continue;
            }
            if self.thp_underused(head) && self.split_folio(Pfn(head), SplitReason::Underused).is_ok() {
                self.rec.vm.count(Ev::THP_UNDERUSED_SPLIT_PAGE);
                split += 1;
            }
            // otherwise "used": it stays off the queue
        }
        for h in keep {
            self.deferred_split_folio(h, false);
        }
        split
    }
}
