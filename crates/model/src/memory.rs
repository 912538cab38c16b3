//! Page faults and unmapping (mm/memory.c): handle_mm_fault, do_anonymous_page
//! (zero page on read, fresh page on write), wp_page_copy from the zero page,
//! zap_pte_range/zap_huge_pmd, free_pgtables, exit_mmap; plus the LRU add/remove of
//! new folios (mm/swap.c: folio_add_lru_vma) and folio freeing.

use crate::content;
use crate::kernel::{Fault, Kernel};
use crate::mm_types::*;
use crate::mmap::{VM_LOCKED, VM_WRITE};
use crate::page_alloc::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use crate::pgtable::*;
use crate::vmstat::Ev;

pub const PMD_SHIFT: u32 = 21;

/// What a virtual address maps to right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    None,
    /// (pfn, mapped by a huge PMD)
    Page(u64, bool),
    Zero,
    HugeZero,
    Swap(u32),
    Migration(u64),
}

impl Kernel {
    /// follow_page(): the current translation of `addr` in `mm`.
    pub fn follow(&self, mm: usize, addr: u64) -> Mapping {
        let Some(sid) = self.mms[mm].pmds.lookup(addr >> PMD_SHIFT) else { return Mapping::None };
        let idx = ((addr >> 12) & 511) as u32;
        match &self.slots.get(sid).pmd {
            Pmd::Huge(head) => Mapping::Page(*head as u64 + idx as u64, true),
            Pmd::HugeZero => Mapping::HugeZero,
            Pmd::SwapPmd(s) => Mapping::Swap(*s + idx),
            Pmd::Table(t) => {
                let p = t[idx as usize];
                match pte_kind(p) {
                    K_PRESENT => Mapping::Page(pte_payload(p) as u64, false),
                    K_ZERO => Mapping::Zero,
                    K_SWAP => Mapping::Swap(pte_payload(p)),
                    K_MIGRATION => Mapping::Migration(pte_payload(p) as u64),
                    _ => Mapping::None,
                }
            }
        }
    }

    /// pte_alloc_one(): a page-table page (GFP_PGTABLE_USER), unmovable.
    pub fn alloc_pgtable(&mut self, mm: usize) -> Option<u32> {
        let nid = self.mms[mm].node;
        let pfn = self.alloc_pages(GFP_KERNEL, 0, nid)?;
        self.pm.frames[pfn as usize] = make_pgtable();
        self.nr_pgtable_pages += 1;
        self.charge(self.costs.clear_4k_ns);
        Some(pfn as u32)
    }
    pub fn free_pgtable(&mut self, pfn: u32) {
        self.nr_pgtable_pages -= 1;
        self.pm.free_pages(pfn as u64, 0, &mut self.vm);
    }

    /// Install a slot (PMD entry + owned table page) for pmd index `idx`.
    pub fn new_slot(&mut self, mm: usize, idx: u64, pmd: Pmd, table_pfn: u32) -> u32 {
        let sid = self.slots.insert(Slot { mm: mm as u32, index: idx, pmd, table_pfn });
        self.mms[mm].pmds.insert(idx, sid);
        sid
    }

    /// __pte_alloc(): make sure the PMD points to a PTE table; returns the slot.
    fn pte_table(&mut self, mm: usize, idx: u64) -> Option<u32> {
        if let Some(sid) = self.mms[mm].pmds.lookup(idx) {
            return Some(sid);
        }
        let t = self.alloc_pgtable(mm)?;
        Some(self.new_slot(mm, idx, Pmd::Table(Box::new([PTE_NONE; 512])), t))
    }

    /// handle_mm_fault() for an anonymous private mapping.
    pub fn handle_mm_fault(&mut self, mm: usize, addr: u64, write: bool) -> Fault {
        if !self.mms[mm].alive {
            return Fault::Segv;
        }
        let Some(vma) = self.mms[mm].find_vma(addr).cloned() else { return Fault::Segv };
        if write && vma.flags & VM_WRITE == 0 {
            return Fault::Segv;
        }
        self.vm.count(Ev::PGFAULT);
        let idx = addr >> PMD_SHIFT;
        let haddr = idx << PMD_SHIFT;
        match self.mms[mm].pmds.lookup(idx).map(|s| (s, matches!(self.slots.get(s).pmd, Pmd::HugeZero))) {
            None => {
                if self.thp_vma_allowable(mm, &vma, haddr) {
                    let t0 = self.cost;
                    let r = self.do_huge_pmd_anonymous_page(mm, &vma, haddr, write);
                    if self.record_latency && r.is_some() {
                        self.latency_thp_fault.push(self.cost - t0);
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
    fn do_pte_fault(&mut self, mm: usize, vm_flags: u32, addr: u64, write: bool) -> Fault {
        let idx = addr >> PMD_SHIFT;
        let i = ((addr >> 12) & 511) as usize;
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
                let Some(pfn) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return self.fault_oom(mm) };
                if !self.mms[mm].alive {
                    // the OOM killer chose this very process while we allocated
                    self.pm.free_pages(pfn, 0, &mut self.vm);
                    return Fault::Oom;
                }
                self.charge(self.costs.fault_4k_ns + self.costs.clear_4k_ns);
                self.map_new_page(mm, sid, i, pfn, vm_flags, true);
                if k == K_ZERO {
                    self.mms[mm].tlb.flush_range(addr & !4095, (addr & !4095) + 4096);
                }
                Fault::Ok
            }
        }
    }

    fn fault_oom(&mut self, mm: usize) -> Fault {
        // VM_FAULT_OOM -> pagefault_out_of_memory(): the OOM killer already ran in the
        // allocator; if this process survived, it retries, else it is dead.
        if self.mms[mm].alive {
            if self.out_of_memory(0, self.mms[mm].node) && self.mms[mm].alive {
                return Fault::Ok;
            }
        }
        Fault::Oom
    }

    /// do_swap_page(): filled in by the reclaim/swap issue.
    pub fn do_swap_page(&mut self, _mm: usize, _addr: u64, _write: bool) -> Fault {
        Fault::Oom
    }

    #[inline]
    pub fn set_pte(&mut self, sid: u32, i: usize, v: u32) {
        if let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd {
            t[i] = v;
        }
    }

    /// Map a freshly allocated order-0 anonymous page (folio_add_new_anon_rmap + lru add).
    fn map_new_page(&mut self, mm: usize, sid: u32, i: usize, pfn: u64, vm_flags: u32, write: bool) {
        let f = with_rmap(make_anon(COMPOUND_BASE), Some((sid, i as u32)));
        self.pm.frames[pfn as usize] = set_dirty(set_young(f, true), write);
        self.set_pte(sid, i, mk_pte(K_PRESENT, pfn as u32));
        self.mms[mm].rss_anon += 1;
        self.nr_anon_pages += 1;
        self.lru_add(pfn, 1, vm_flags & VM_LOCKED != 0);
    }

    /// folio_add_lru_vma(): new anonymous folios go to the inactive anon list
    /// (unevictable for VM_LOCKED).
    pub fn lru_add(&mut self, pfn: u64, nr: u64, locked: bool) {
        let node = self.pm.node_of(pfn);
        let l = if locked { LRU_UNEVICTABLE } else { LRU_INACTIVE_ANON };
        let f = self.pm.frames[pfn as usize];
        self.pm.frames[pfn as usize] = set_mlocked(with_lru(f, l), locked);
        self.pm.lru[node][l as usize].push_head(&mut self.pm.links, pfn as u32, nr);
    }
    pub fn lru_del(&mut self, pfn: u64, nr: u64) {
        let f = self.pm.frames[pfn as usize];
        let l = lru(f);
        if l == LRU_NONE {
            return;
        }
        let node = self.pm.node_of(pfn);
        self.pm.lru[node][l as usize].remove(&mut self.pm.links, pfn as u32, nr);
        self.pm.frames[pfn as usize] = with_lru(f, LRU_NONE);
    }

    /// Free a whole folio (folio_put on the last reference): off the LRU and the deferred
    /// split queue, back to the buddy allocator.
    pub fn free_folio(&mut self, head: u64) {
        let f = self.pm.frames[head as usize];
        debug_assert_eq!(tag(f), TAG_ANON);
        let order = if compound(f) == COMPOUND_HEAD { 9 } else { 0 };
        self.lru_del(head, 1 << order);
        if order == 9 {
            self.deferred_split_remove(head);
            self.thp_mapcount.remove(&(head as u32));
            self.count_mthp("nr_anon", 0);
        }
        self.charge(self.costs.page_free_ns);
        self.pm.free_pages(head, order, &mut self.vm);
    }

    /// Unmap one PTE-mapped page: base pages are freed, THP subpages lose their mapping
    /// (the folio is freed with its last mapping, else queued for deferred split).
    pub(crate) fn zap_present_pte(&mut self, mm: usize, pfn: u64) {
        let f = self.pm.frames[pfn as usize];
        self.mms[mm].rss_anon -= 1;
        self.nr_anon_pages -= 1;
        self.pm.frames[pfn as usize] = with_rmap(f, None);
        if compound(f) == COMPOUND_BASE {
            self.free_folio(pfn);
            return;
        }
        let head = pfn & !511;
        let left = {
            let c = self.thp_mapcount.get_mut(&(head as u32)).expect("PTE-mapped THP has a mapcount");
            *c -= 1;
            *c
        };
        if left == 0 {
            self.free_folio(head);
        } else {
            self.deferred_split_folio(head, true);
        }
    }

    /// zap_page_range_single / unmap_page_range over [start, end) of one mm.
    /// With `free_tables`, page tables of PMD ranges no VMA covers any more are freed
    /// (free_pgtables after munmap).
    pub fn zap_range(&mut self, mm: usize, start: u64, end: u64, free_tables: bool) {
        if start >= end {
            return;
        }
        let idxs: Vec<(u64, u32)> = self.mms[mm].pmds.range(start >> PMD_SHIFT..=(end - 1) >> PMD_SHIFT).map(|(k, v)| (*k, *v)).collect();
        for (idx, sid) in idxs {
            let s = (idx << PMD_SHIFT).max(start);
            let e = ((idx + 1) << PMD_SHIFT).min(end);
            let whole = e - s == 1 << PMD_SHIFT;
            self.charge(self.costs.pmd_walk_ns);
            let is_huge = matches!(self.slots.get(sid).pmd, Pmd::Huge(_) | Pmd::HugeZero);
            if is_huge && whole {
                self.zap_huge_pmd(mm, sid);
            } else {
                if is_huge {
                    // __split_huge_pmd(): partial unmap of a huge mapping
                    self.split_huge_pmd(mm, sid);
                }
                if matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)) {
                    self.split_swap_pmd(mm, sid);
                }
                let (i0, i1) = (((s >> 12) & 511) as usize, (((e - 1) >> 12) & 511) as usize);
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
    fn zap_huge_pmd(&mut self, mm: usize, sid: u32) {
        let slot = self.slots.remove(sid);
        self.mms[mm].pmds.remove(&slot.index);
        match slot.pmd {
            Pmd::Huge(head) => {
                self.mms[mm].rss_anon -= 512;
                self.nr_anon_pages -= 512;
                self.nr_anon_thp -= 1;
                for p in head as u64..head as u64 + 512 {
                    let f = self.pm.frames[p as usize];
                    self.pm.frames[p as usize] = with_rmap(f, None);
                }
                self.free_folio(head as u64);
            }
            Pmd::SwapPmd(s) => {
                for k in 0..512 {
                    self.free_swap_entry(mm, s + k);
                }
            }
            _ => {}
        }
        self.free_pgtable(slot.table_pfn);
    }

    /// swap_free for a swap PTE being zapped: filled in by the swap issue.
    pub fn free_swap_entry(&mut self, mm: usize, _entry: u32) {
        self.mms[mm].swap_ents = self.mms[mm].swap_ents.saturating_sub(1);
    }
    /// Split a PMD swap entry into 512 PTE swap entries (seed 003): swap issue.
    pub fn split_swap_pmd(&mut self, _mm: usize, sid: u32) {
        if let Pmd::SwapPmd(s) = self.slots.get(sid).pmd {
            let mut t = Box::new([PTE_NONE; 512]);
            for (k, e) in t.iter_mut().enumerate() {
                *e = mk_pte(K_SWAP, s + k as u32);
            }
            self.slots.get_mut(sid).pmd = Pmd::Table(t);
        }
    }

    /// exit_mmap(): unmap everything, free page tables, drop the huge zero page reference.
    pub fn exit_mm(&mut self, mm: usize) {
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
        if self.mms[mm].huge_zero_ref {
            self.mms[mm].huge_zero_ref = false;
            self.huge_zero_users -= 1;
        }
        self.khugepaged_exit(mm);
        self.mms[mm].alive = false;
    }

    /// Write `bytes` bytes of `data` at `byte` in the page at `addr`, faulting it in first.
    pub fn write_page(&mut self, mm: usize, addr: u64, byte: u32, bytes: u32, data: &thplab_workload::workload::WriteData) -> Fault {
        let pfn = match self.follow(mm, addr) {
            Mapping::Page(pfn, _) => pfn,
            _ => {
                let r = self.handle_mm_fault(mm, addr, true);
                if r != Fault::Ok {
                    return r;
                }
                match self.follow(mm, addr) {
                    Mapping::Page(pfn, _) => pfn,
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
    pub fn read_page(&mut self, mm: usize, addr: u64) -> Fault {
        match self.follow(mm, addr) {
            Mapping::Page(pfn, _) => {
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
        let head = if compound(f) == COMPOUND_BASE { pfn } else { pfn & !511 };
        let h = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_dirty(set_young(h, true), write || dirty(h));
        if write && head != pfn {
            self.pm.frames[pfn as usize] = set_dirty(f, true);
        }
    }
}

#[inline]
fn pgtable_none() -> u32 {
    pte_kind(PTE_NONE)
}
