//! Page faults and unmapping (mm/memory.c): handle_mm_fault, do_anonymous_page
//! (zero page on read, fresh page on write), wp_page_copy from the zero page,
//! zap_pte_range/zap_huge_pmd, free_pgtables, exit_mmap; plus the LRU add/remove of
//! new folios (mm/swap.c: folio_add_lru_vma) and folio freeing.

use crate::consts::*;
use crate::content;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::mmap::{VM_LOCKED, VM_WRITE};
use crate::page_alloc::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use crate::pgtable::*;
use crate::vmstat::{Ev, NodeStat};

/// Result of a fault, as the fault handler's VM_FAULT_* bits would tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Ok,
    /// VM_FAULT_SIGSEGV: no VMA or a protection violation
    Segv,
    /// VM_FAULT_OOM: the allocation failed even after the OOM killer
    Oom,
}

/// What a virtual address maps to right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    None,
    /// (pfn, mapped by a huge PMD)
    Page(Pfn, bool),
    Zero,
    HugeZero,
    Swap(u32),
    Migration(u64),
}

impl Kernel {
    /// follow_page(): the current translation of `addr` in `mm`.
    pub fn follow(&self, mm: MmId, addr: u64) -> Mapping {
        let Some(sid) = self.mms[mm].pmds.lookup(addr >> PMD_SHIFT) else { return Mapping::None };
        let idx = pte_index(addr) as u32;
        match &self.slots.get(sid).pmd {
            Pmd::Huge(head) => Mapping::Page(Pfn(*head as u64 + idx as u64), true),
            Pmd::HugeZero => Mapping::HugeZero,
            Pmd::SwapPmd(s) => Mapping::Swap(*s + idx),
            Pmd::Table(t) => {
                let p = t[idx as usize];
                match pte_kind(p) {
                    K_PRESENT => Mapping::Page(Pfn(pte_payload(p) as u64), false),
                    K_ZERO => Mapping::Zero,
                    K_SWAP => Mapping::Swap(pte_payload(p)),
                    K_MIGRATION => Mapping::Migration(pte_payload(p) as u64),
                    _ => Mapping::None,
                }
            }
        }
    }

    /// pte_alloc_one(): a page-table page (GFP_PGTABLE_USER), unmovable.
    pub fn alloc_pgtable(&mut self, mm: MmId) -> Option<u32> {
        let nid = self.mms[mm].node;
        let Pfn(pfn) = self.alloc_pages(GFP_KERNEL, 0, nid)?;
        if !self.mms[mm].alive {
            // the allocation's OOM kill chose this very mm (exit_mm ran already): a table
            // installed now would never be freed
            self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
            return None;
        }
        self.pm.frames[pfn as usize] = make_pgtable();
        self.mod_node_page_state(pfn, NodeStat::NrPagetable, 1);
        self.charge(self.costs.clear_4k_ns);
        Some(pfn as u32)
    }
    pub fn free_pgtable(&mut self, pfn: u32) {
        self.mod_node_page_state(pfn as u64, NodeStat::NrPagetable, -1);
        self.pm.free_pages(Pfn(pfn as u64), 0, &mut self.rec.vm);
    }

    /// Install a slot (PMD entry + owned table page) for pmd index `idx`.
    pub fn new_slot(&mut self, mm: MmId, idx: u64, pmd: Pmd, table_pfn: u32) -> u32 {
        let sid = self.slots.insert(Slot { mm, index: idx, pmd, table_pfn });
        self.mms[mm].pmds.insert(idx, sid);
        sid
    }

    /// __pte_alloc(): make sure the PMD points to a PTE table; returns the slot.
    fn pte_table(&mut self, mm: MmId, idx: u64) -> Option<u32> {
        if let Some(sid) = self.mms[mm].pmds.lookup(idx) {
            return Some(sid);
        }
        let t = self.alloc_pgtable(mm)?;
        Some(self.new_slot(mm, idx, Pmd::Table(Box::new([PTE_NONE; PTRS_PER_PTE])), t))
    }

    /// handle_mm_fault() for an anonymous private mapping.
    pub fn handle_mm_fault(&mut self, mm: MmId, addr: u64, write: bool) -> Fault {
        if !self.mms[mm].alive {
            return Fault::Segv;
        }
        let Some(vma) = self.mms[mm].find_vma(addr).cloned() else { return Fault::Segv };
        if write && vma.flags & VM_WRITE == 0 {
            return Fault::Segv;
        }
        self.rec.vm.count(Ev::PGFAULT);
        let idx = addr >> PMD_SHIFT;
        let haddr = idx << PMD_SHIFT;
        if let Some(sid) = self.mms[mm].pmds.lookup(idx) {
            if let Pmd::SwapPmd(first) = self.slots.get(sid).pmd {
                // seed 003: a PMD swap entry (do_huge_pmd_swap_page)
                return self.do_huge_pmd_swap_page(mm, &vma, sid, first, addr, write);
            }
        }
        match self.mms[mm].pmds.lookup(idx).map(|s| (s, matches!(self.slots.get(s).pmd, Pmd::HugeZero))) {
            None => {
                if self.thp_vma_allowable(mm, &vma, haddr) {
                    let t0 = self.clock.cost;
                    let r = self.do_huge_pmd_anonymous_page(mm, &vma, haddr, write);
                    if self.rec.record_latency && r.is_some() {
                        self.rec.latency_thp_fault.push(self.clock.cost - t0);
                    }
                    if let Some(f) = r {
                        return f;
                    }
                }
            }
            Some((sid, true)) => {
                if !write {
                    return Fault::Ok;
                }
                if let Some(f) = self.do_huge_zero_wp_pmd(mm, &vma, sid, haddr) {
                    return f;
                }
                self.split_huge_pmd(mm, sid);
            }
            Some(_) => {}
        }
        self.do_pte_fault(mm, vma.flags, addr, write)
    }

    /// do_anonymous_page() / do_wp_page() from the zero page / touching a present page.
    fn do_pte_fault(&mut self, mm: MmId, vm_flags: u32, addr: u64, write: bool) -> Fault {
        let idx = addr >> PMD_SHIFT;
        let i = pte_index(addr);
        let Some(sid) = self.pte_table(mm, idx) else { return self.fault_oom(mm) };
        let pte = match &self.slots.get(sid).pmd {
            Pmd::Table(t) => t[i],
            Pmd::Huge(_) => return Fault::Ok,
            _ => return Fault::Ok,
        };
        match pte_kind(pte) {
            K_PRESENT => {
                let pfn = pte_payload(pte) as usize;
                let f = self.pm.frames[pfn];
                self.pm.frames[pfn] = set_dirty(set_young(f, true), write || dirty(f));
                Fault::Ok
            }
            K_SWAP => self.do_swap_page(mm, addr, write),
            K_MIGRATION => Fault::Ok,
            k => {
                if !write && k == pgtable_none() {
                    // read fault: map the shared zero page (no RSS)
                    self.set_pte(sid, i, PTE_ZERO);
                    self.charge(self.costs.fault_zero_ns);
                    return Fault::Ok;
                }
                // write to none or to the zero page (wp_page_copy): a new page
                let nid = self.mms[mm].node;
                let Some(Pfn(pfn)) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return self.fault_oom(mm) };
                if !self.mms[mm].alive {
                    // the OOM killer chose this very process while we allocated
                    self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
                    return Fault::Oom;
                }
                self.charge(self.costs.fault_4k_ns + self.costs.clear_4k_ns);
                self.map_new_page(mm, sid, i, pfn, vm_flags, true);
                if k == K_ZERO {
                    self.mms[mm].tlb.flush_range(addr & PAGE_MASK, (addr & PAGE_MASK) + PAGE_SIZE);
                }
                Fault::Ok
            }
        }
    }

    fn fault_oom(&mut self, mm: MmId) -> Fault {
        // VM_FAULT_OOM -> pagefault_out_of_memory(): the OOM killer already ran in the
        // allocator; if this process survived, it retries, else it is dead.
        let alive = self.mms[mm].alive;
        let killed_another = alive && self.out_of_memory(0, self.mms[mm].node);
        if killed_another && self.mms[mm].alive {
            return Fault::Ok;
        }
        Fault::Oom
    }

    /// do_swap_page(): a fault on a PTE swap entry. The page comes from the swap cache
    /// when it is there (a minor fault; swap_ra_hit for a readahead page); on a
    /// SWP_SYNCHRONOUS_IO device with one reference it is read straight into a new
    /// order-0 folio that skips the swap cache (alloc_swap_folio: mTHP orders below PMD
    /// are per-size knobs the model keeps at their default 'never', and PMD order is
    /// excluded, so the folio is order 0); otherwise through swap readahead into the
    /// swap cache. The slot is freed with its last reference; a write fault (or a swap
    /// more than half full, vm_swap_full) also drops the swap-cache copy.
    pub fn do_swap_page(&mut self, mm: MmId, addr: u64, write: bool) -> Fault {
        let idx = addr >> PMD_SHIFT;
        let i = pte_index(addr);
        let Some(&sid) = self.mms[mm].pmds.get(&idx) else { return Fault::Ok };
        let pte = match &self.slots.get(sid).pmd {
            Pmd::Table(t) => t[i],
            _ => return Fault::Ok,
        };
        if pte_kind(pte) != K_SWAP {
            return Fault::Ok;
        }
        let slot = pte_payload(pte);
        let vm_flags = self.mms[mm].find_vma(addr).map_or(0, |v| v.flags);
        self.charge(self.costs.fault_4k_ns);
        let (pfn, cached) = if let Some(p) = self.swap_cache_lookup(slot) {
            (p, true)
        } else if self.swap_is_sync(slot) && self.swap_count(slot) == 1 {
            let nid = self.mms[mm].node;
            let Some(Pfn(p)) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return self.fault_oom(mm) };
            if !self.swap_pte_same(mm, idx, sid, i, pte) {
                self.pm.free_pages(Pfn(p), 0, &mut self.rec.vm);
                return if self.mms[mm].alive { Fault::Ok } else { Fault::Oom };
            }
            self.pm.frames[p as usize] = make_anon(COMPOUND_BASE);
            if self.swap_read_folio(p, 1, slot) {
                self.rec.vm.count(Ev::PGMAJFAULT);
            }
            (p, false)
        } else {
            let Some(p) = self.swap_vma_readahead(mm, addr, slot) else { return self.fault_oom(mm) };
            self.rec.vm.count(Ev::PGMAJFAULT);
            if !self.swap_pte_same(mm, idx, sid, i, pte) {
                if lru(self.pm.frames[p as usize]) == LRU_NONE && tag(self.pm.frames[p as usize]) == TAG_ANON {
                    self.lru_add(p, 1, false);
                }
                return if self.mms[mm].alive { Fault::Ok } else { Fault::Oom };
            }
            (p, true)
        };
        debug_assert_eq!(compound(self.pm.frames[pfn as usize]), COMPOUND_BASE);
        let f = with_rmap(self.pm.frames[pfn as usize], Some((sid, i as u32)));
        self.pm.frames[pfn as usize] = set_dirty(set_young(f, true), write || !cached);
        self.set_pte(sid, i, mk_pte(K_PRESENT, pfn as u32));
        self.mms[mm].rss_anon += 1;
        self.mms[mm].swap_ents -= 1;
        self.mod_node_page_state(pfn, NodeStat::NrAnonMapped, 1);
        self.swap_free(slot);
        if cached && (write || self.vm_swap_full()) {
            self.folio_free_swap(pfn);
        }
        if lru(self.pm.frames[pfn as usize]) == LRU_NONE {
            self.lru_add(pfn, 1, vm_flags & VM_LOCKED != 0);
        }
        Fault::Ok
    }

    /// pte_same() after an allocation that may have reclaimed or killed: is the swap
    /// PTE still there?
    fn swap_pte_same(&self, mm: MmId, idx: u64, sid: u32, i: usize, pte: u32) -> bool {
        self.mms[mm].alive
            && self.mms[mm].pmds.get(&idx) == Some(&sid)
            && matches!(&self.slots.get(sid).pmd, Pmd::Table(t) if t[i] == pte)
    }

    /// Seed 003 (Huang Ying 2018): do_huge_pmd_swap_page(). When swapin_enabled allows it
    /// (always; madvise: VM_HUGEPAGE only; never VM_NOHUGEPAGE or a THP-disabled mm) the
    /// 2 MiB comes back whole — one THP, one sequential read of its 512 slots
    /// (thp_swpin) — else, or when no THP can be allocated (thp_swpin_fallback), the PMD
    /// swap entry is split into 512 PTE swap entries and the page is swapped in alone.
    /// The model frees the slots at once (the THP does not stay in the swap cache).
    pub fn do_huge_pmd_swap_page(
        &mut self,
        mm: MmId,
        vma: &crate::mmap::Vma,
        sid: u32,
        first: u32,
        addr: u64,
        write: bool,
    ) -> Fault {
        use crate::config::ThpMode;
        let allowed = !self.mms[mm].thp_disable
            && vma.flags & crate::mmap::VM_NOHUGEPAGE == 0
            && match self.cfg.swapin_enabled {
                ThpMode::Always => true,
                ThpMode::Madvise => vma.flags & crate::mmap::VM_HUGEPAGE != 0,
                _ => false,
            };
        let idx = addr >> PMD_SHIFT;
        if allowed {
            let gfp = self.vma_thp_gfp_mask(vma.flags);
            let nid = self.mms[mm].node;
            match self.alloc_thp(gfp, nid) {
                Some(Pfn(head)) => {
                    if !(self.mms[mm].alive
                        && self.mms[mm].pmds.get(&idx) == Some(&sid)
                        && matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(s) if s == first))
                    {
                        self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
                        return if self.mms[mm].alive { Fault::Ok } else { Fault::Oom };
                    }
                    self.charge(self.costs.fault_2m_ns);
                    for k in 0..HPAGE_PMD_NR {
                        let c = if k == 0 { COMPOUND_HEAD } else { COMPOUND_TAIL };
                        self.pm.frames[(head + k) as usize] = with_rmap(make_anon(c), Some((sid, k as u32)));
                    }
                    if self.swap_read_folio(head, HPAGE_PMD_NR as u32, first) {
                        self.rec.vm.count(Ev::PGMAJFAULT);
                    }
                    let h = self.pm.frames[head as usize];
                    // not in the swap cache any more: the folio is the only copy (dirty)
                    self.pm.frames[head as usize] = set_dirty(set_young(h, true), true);
                    self.slots.get_mut(sid).pmd = Pmd::Huge(head as u32);
                    self.mms[mm].rss_anon += HPAGE_PMD_NR;
                    self.mms[mm].swap_ents -= HPAGE_PMD_NR;
                    self.mod_node_page_state(head, NodeStat::NrAnonMapped, HPAGE_PMD_NR as i64);
                    self.mod_node_page_state(head, NodeStat::NrAnonThps, 1);
                    for k in 0..HPAGE_PMD_NR as u32 {
                        self.swap_free(first + k);
                    }
                    self.lru_add(head, HPAGE_PMD_NR, vma.flags & VM_LOCKED != 0);
                    self.deferred_split_folio(head, false);
                    self.rec.vm.count(Ev::THP_SWPIN);
                    return Fault::Ok;
                }
                None => {
                    if !self.mms[mm].alive {
                        return Fault::Oom;
                    }
                    self.rec.vm.count(Ev::THP_SWPIN_FALLBACK);
                }
            }
        }
        if self.mms[mm].pmds.get(&idx) == Some(&sid) && matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)) {
            self.split_swap_pmd(mm, sid);
        }
        self.do_swap_page(mm, addr, write)
    }

    #[inline]
    pub fn set_pte(&mut self, sid: u32, i: usize, v: u32) {
        if let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd {
            t[i] = v;
        }
    }

    /// Map a freshly allocated order-0 anonymous page (folio_add_new_anon_rmap + lru add).
    fn map_new_page(&mut self, mm: MmId, sid: u32, i: usize, pfn: u64, vm_flags: u32, write: bool) {
        let f = with_rmap(make_anon(COMPOUND_BASE), Some((sid, i as u32)));
        self.pm.frames[pfn as usize] = set_dirty(set_young(f, true), write);
        self.set_pte(sid, i, mk_pte(K_PRESENT, pfn as u32));
        self.mms[mm].rss_anon += 1;
        self.mod_node_page_state(pfn, NodeStat::NrAnonMapped, 1);
        self.lru_add(pfn, 1, vm_flags & VM_LOCKED != 0);
    }

    /// lruvec_add_folio() / lruvec_add_folio_tail(): put the folio on list `l` of its
    /// node's lruvec (a lazy-free folio on the matching file list, see lru_index).
    pub(crate) fn lruvec_add_folio(&mut self, head: u64, nr: u64, l: u64, tail: bool) {
        let f = with_lru(self.pm.frames[head as usize], l);
        self.pm.frames[head as usize] = f;
        let node = self.pm.node_of(head);
        let list = &mut self.pgdat[node].lruvec[lru_index(f)];
        if tail {
            list.push_tail(&mut self.pm.links, head as u32, nr);
        } else {
            list.push_head(&mut self.pm.links, head as u32, nr);
        }
    }

    /// folio_add_lru_vma(): new anonymous folios go to the inactive anon list
    /// (unevictable for VM_LOCKED).
    pub fn lru_add(&mut self, pfn: u64, nr: u64, locked: bool) {
        let node = self.pm.node_of(pfn);
        let l = if locked { LRU_UNEVICTABLE } else { LRU_INACTIVE_ANON };
        let f = self.pm.frames[pfn as usize];
        self.pm.frames[pfn as usize] = set_mlocked(with_lru(f, l), locked);
        let li = lru_index(self.pm.frames[pfn as usize]);
        self.pgdat[node].lruvec[li].push_head(&mut self.pm.links, pfn as u32, nr);
    }
    pub fn lru_del(&mut self, pfn: u64, nr: u64) {
        let f = self.pm.frames[pfn as usize];
        let l = lru(f);
        if l == LRU_NONE {
            return;
        }
        let node = self.pm.node_of(pfn);
        self.pgdat[node].lruvec[lru_index(f)].remove(&mut self.pm.links, pfn as u32, nr);
        self.pm.frames[pfn as usize] = with_lru(f, LRU_NONE);
    }

    /// Free a whole folio (folio_put on the last reference): off the LRU and the deferred
    /// split queue, back to the buddy allocator.
    pub fn free_folio(&mut self, head: Pfn) {
        let head = head.0;
        let f = self.pm.frames[head as usize];
        debug_assert_eq!(tag(f), TAG_ANON);
        let order = if compound(f) == COMPOUND_HEAD { HPAGE_PMD_ORDER } else { 0 };
        if swapcache(f) {
            self.delete_from_swap_cache(head);
        }
        self.lru_del(head, 1 << order);
        if order == HPAGE_PMD_ORDER {
            self.deferred_split_remove(head);
            self.pm.mapcount.remove(&(head as u32));
        }
        self.charge(self.costs.page_free_ns);
        self.pm.free_pages(Pfn(head), order, &mut self.rec.vm);
    }

    /// Unmap one PTE-mapped page: base pages are freed, THP subpages lose their mapping
    /// (the folio is freed with its last mapping, else queued for deferred split).
    pub(crate) fn zap_present_pte(&mut self, mm: MmId, pfn: u64) {
        let f = self.pm.frames[pfn as usize];
        self.mms[mm].rss_anon -= 1;
        self.mod_node_page_state(pfn, NodeStat::NrAnonMapped, -1);
        self.pm.frames[pfn as usize] = with_rmap(f, None);
        if compound(f) == COMPOUND_BASE {
            self.free_folio(Pfn(pfn));
            return;
        }
        let head = hpage_pfn_align(pfn);
        let left = {
            let c = self.pm.mapcount.get_mut(&(head as u32)).expect("PTE-mapped THP has a mapcount");
            *c -= 1;
            *c
        };
        if left == 0 {
            self.free_folio(Pfn(head));
        } else {
            self.deferred_split_folio(head, true);
        }
    }

    /// zap_page_range_single / unmap_page_range over [start, end) of one mm.
    /// With `free_tables`, page tables of PMD ranges no VMA covers any more are freed
    /// (free_pgtables after munmap).
    pub fn zap_range(&mut self, mm: MmId, start: u64, end: u64, free_tables: bool) {
        if start >= end {
            return;
        }
        let idxs: Vec<(u64, u32)> =
            self.mms[mm].pmds.range(start >> PMD_SHIFT..=(end - 1) >> PMD_SHIFT).map(|(k, v)| (*k, *v)).collect();
        for (idx, sid) in idxs {
            let s = (idx << PMD_SHIFT).max(start);
            let e = ((idx + 1) << PMD_SHIFT).min(end);
            let whole = e - s == 1 << PMD_SHIFT;
            self.charge(self.costs.pmd_walk_ns);
            let is_huge = matches!(self.slots.get(sid).pmd, Pmd::Huge(_) | Pmd::HugeZero)
                || (whole && matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)));
            if is_huge && whole {
                self.zap_huge_pmd(mm, sid);
            } else {
                if matches!(self.slots.get(sid).pmd, Pmd::Huge(_) | Pmd::HugeZero) {
                    // __split_huge_pmd(): partial unmap of a huge mapping
                    self.split_huge_pmd(mm, sid);
                }
                if matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)) {
                    self.split_swap_pmd(mm, sid);
                }
                let (i0, i1) = (pte_index(s), pte_index(e - 1));
                for i in i0..=i1 {
                    let pte = match &self.slots.get(sid).pmd {
                        Pmd::Table(t) => t[i],
                        _ => PTE_NONE,
                    };
                    self.charge(self.costs.pte_walk_ns);
                    match pte_kind(pte) {
                        K_PRESENT => self.zap_present_pte(mm, pte_payload(pte) as u64),
                        K_SWAP => self.free_swap_entry(mm, pte_payload(pte)),
                        _ => {}
                    }
                    self.set_pte(sid, i, PTE_NONE);
                }
            }
            if free_tables && self.mms[mm].pmds.contains_key(&idx) && !self.mms[mm].pmd_range_used(idx) {
                let slot = self.slots.remove(sid);
                self.mms[mm].pmds.remove(&idx);
                self.free_pgtable(slot.table_pfn);
            }
        }
        self.mms[mm].tlb.flush_range(start, end);
        self.charge(self.costs.tlb_flush_ns);
    }

    /// zap_huge_pmd(): drop a whole huge mapping, free the folio and the deposited table.
    fn zap_huge_pmd(&mut self, mm: MmId, sid: u32) {
        let slot = self.slots.remove(sid);
        self.mms[mm].pmds.remove(&slot.index);
        match slot.pmd {
            Pmd::Huge(head) => {
                self.mms[mm].rss_anon -= HPAGE_PMD_NR;
                self.mod_node_page_state(head as u64, NodeStat::NrAnonMapped, -(HPAGE_PMD_NR as i64));
                self.mod_node_page_state(head as u64, NodeStat::NrAnonThps, -1);
                for p in head as u64..head as u64 + HPAGE_PMD_NR {
                    let f = self.pm.frames[p as usize];
                    self.pm.frames[p as usize] = with_rmap(f, None);
                }
                self.free_folio(Pfn(head as u64));
            }
            Pmd::SwapPmd(s) => {
                for k in 0..HPAGE_PMD_NR as u32 {
                    self.free_swap_entry(mm, s + k);
                }
            }
            _ => {}
        }
        self.free_pgtable(slot.table_pfn);
    }

    /// free_swap_and_cache() for a swap PTE (or one of a PMD swap entry's 512) being zapped.
    pub fn free_swap_entry(&mut self, mm: MmId, entry: u32) {
        self.mms[mm].swap_ents -= 1;
        self.free_swap_and_cache(entry);
    }

    /// Seed 003: __split_huge_swap_pmd(): a PMD swap entry becomes 512 PTE swap entries in
    /// the slot's deposited table (partial munmap/mprotect/madvise, a fault that swaps
    /// in 4 KiB). Non-present entries: no TLB flush.
    pub fn split_swap_pmd(&mut self, _mm: MmId, sid: u32) {
        if let Pmd::SwapPmd(s) = self.slots.get(sid).pmd {
            let mut t = Box::new([PTE_NONE; PTRS_PER_PTE]);
            for (k, e) in t.iter_mut().enumerate() {
                *e = mk_pte(K_SWAP, s + k as u32);
            }
            self.slots.get_mut(sid).pmd = Pmd::Table(t);
            self.charge(self.costs.split_pmd_ns);
        }
    }

    /// change_pmd_range() for mprotect over [start, end): a huge PMD (or, seed 003, a PMD
    /// swap entry) only partly covered is split first.
    pub fn mprotect_split_pmds(&mut self, mm: MmId, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let idxs: Vec<(u64, u32)> =
            self.mms[mm].pmds.range(start >> PMD_SHIFT..=(end - 1) >> PMD_SHIFT).map(|(k, v)| (*k, *v)).collect();
        for (idx, sid) in idxs {
            let whole = start <= idx << PMD_SHIFT && end >= (idx + 1) << PMD_SHIFT;
            if whole {
                continue;
            }
            match self.slots.get(sid).pmd {
                Pmd::Huge(_) | Pmd::HugeZero => self.split_huge_pmd(mm, sid),
                Pmd::SwapPmd(_) => self.split_swap_pmd(mm, sid),
                _ => {}
            }
        }
    }

    /// exit_mmap(): unmap everything, free page tables, drop the huge zero page reference.
    pub fn exit_mm(&mut self, mm: MmId) {
        if !self.mms[mm].alive {
            return;
        }
        let ranges: Vec<(u64, u64)> = self.mms[mm].vmas.values().map(|v| (v.start, v.end)).collect();
        for (s, e) in ranges {
            self.zap_range(mm, s, e, false);
        }
        self.mms[mm].vmas.clear();
        // free_pgtables(): every table goes, after every VMA was zapped
        let left: Vec<(u64, u32)> = self.mms[mm].pmds.iter().map(|(k, v)| (*k, *v)).collect();
        for (idx, _) in left {
            self.zap_range(mm, idx << PMD_SHIFT, (idx + 1) << PMD_SHIFT, true);
        }
        self.mm_put_huge_zero_folio(mm);
        self.khugepaged_exit(mm);
        self.mms[mm].alive = false;
    }

    /// Write `bytes` bytes of `data` at `byte` in the page at `addr`, faulting it in first.
    pub fn write_page(
        &mut self,
        mm: MmId,
        addr: u64,
        byte: u32,
        bytes: u32,
        data: &thplab_workload::workload::WriteData,
    ) -> Fault {
        let pfn = match self.follow(mm, addr) {
            Mapping::Page(Pfn(pfn), _) => pfn,
            _ => {
                let r = self.handle_mm_fault(mm, addr, true);
                if r != Fault::Ok {
                    return r;
                }
                match self.follow(mm, addr) {
                    Mapping::Page(Pfn(pfn), _) => pfn,
                    _ => return Fault::Segv,
                }
            }
        };
        let f = self.pm.frames[pfn as usize];
        let c = content::apply_write(content(f), byte, bytes, data);
        self.pm.frames[pfn as usize] = with_content(f, c);
        self.touch_folio(pfn, true);
        self.charge(self.costs.touch_page_ns);
        Fault::Ok
    }

    /// A load from the page at `addr`, faulting it in (zero page) if needed.
    pub fn read_page(&mut self, mm: MmId, addr: u64) -> Fault {
        match self.follow(mm, addr) {
            Mapping::Page(Pfn(pfn), _) => {
                self.touch_folio(pfn, false);
                self.charge(self.costs.touch_page_ns);
                Fault::Ok
            }
            Mapping::Zero | Mapping::HugeZero => Fault::Ok,
            _ => self.handle_mm_fault(mm, addr, false),
        }
    }

    /// The hardware sets the accessed (and dirty) bits: on the folio's head here.
    #[inline]
    pub fn touch_folio(&mut self, pfn: u64, write: bool) {
        let f = self.pm.frames[pfn as usize];
        let head = if compound(f) == COMPOUND_BASE { pfn } else { hpage_pfn_align(pfn) };
        let h = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_dirty(set_young(h, true), write || dirty(h));
        if write && head != pfn {
            self.pm.frames[pfn as usize] = set_dirty(f, true);
        }
        if write && swapcache(h) {
            // do_wp_page() reusing an exclusive swap-cache folio: folio_free_swap()
            self.folio_free_swap(head);
        }
    }
}

#[inline]
fn pgtable_none() -> u32 {
    pte_kind(PTE_NONE)
}
