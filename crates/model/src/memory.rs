//! Page faults and unmapping (mm/memory.c): handle_mm_fault, do_anonymous_page
//! (zero page on read, fresh page on write), wp_page_copy from the zero page,
//! zap_pte_range/zap_huge_pmd, free_pgtables, exit_mmap; plus the LRU add/remove of
//! new folios (mm/swap.c: folio_add_lru_vma) and folio freeing.

use crate::consts::*;
use crate::content;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::mmap::{VM_LOCKED, VM_WRITE};
use crate::page_alloc::{pcp_allowed_order, GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
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

thread_local! {
    /// Debug switch (tests compare runs with it off): the write op's pages go through
    /// write_page_fast() (read when a write step starts).
    pub static USE_WRITE_FAST_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}
#[cfg(test)]
thread_local! {
    /// Faults taken by write_page_fast()'s fast path (tests: the path was used).
    pub static WRITE_FAST_FAULTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Debug switch for zap_base_run() (tests compare runs with it off).
    pub static USE_ZAP_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// The bytes of a cache line: a store that covers whole lines of a page just cleared by
/// its fault does not pay touch_after_fault_ns.
const CACHE_LINE: u32 = 64;

/// x86's tlb_single_page_flush_ceiling (arch/x86/mm/tlb.c): a flush of a range of more
/// strides than this is a full flush (flush_tlb_local), a shorter one an invlpg per stride.
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// A zap's mmu_gather range (include/asm-generic/tlb.h __tlb_adjust_range): from the lowest
/// to the highest address it cleared an entry at, and whether any was a PTE
/// (tlb_get_unmap_shift: a page stride if so, else a PMD stride).
#[derive(Default)]
struct FlushRange {
    range: Option<(u64, u64)>,
    ptes: bool,
}

impl FlushRange {
    fn adjust(&mut self, a: u64, b: u64) {
        self.range = Some(self.range.map_or((a, b), |(s, e)| (s.min(a), e.max(b))));
    }
    /// PTEs cleared over [a, b) (tlb_remove_tlb_entry)
    fn pages(&mut self, a: u64, b: u64) {
        self.adjust(a, b);
        self.ptes = true;
    }
    /// a huge PMD cleared at `a` (tlb_remove_pmd_tlb_entry: cleared_pmds, a PMD of range)
    fn pmd(&mut self, a: u64) {
        self.adjust(a, a + PMD_SIZE);
    }
    /// a PTE table freed at `a` (pte_free_tlb: tlb_flush_pmd_range over one page)
    fn table(&mut self, a: u64) {
        self.adjust(a, a + PAGE_SIZE);
    }
    /// The strides flush_tlb_func() would invalidate one by one (ranges over the ceiling are
    /// flushed whole), none when nothing was cleared.
    fn invalidations(&self) -> Option<u64> {
        let shift = if self.ptes { PAGE_SHIFT } else { PMD_SHIFT };
        self.range.map(|(s, e)| (e - s).div_ceil(1 << shift).max(1))
    }
}

/// The large folio a CPU's last fault mapped by PTEs (mTHP orders, up to 256 pages) and
/// which of its pages were accessed since. The first access to each of the others right
/// after the fault costs touch_after_fault_ns (measured, not explained: see the cost's doc).
#[derive(Clone, Copy, Default, Debug)]
pub struct JustFaulted {
    head: u64,
    /// 0: none (the CPU faulted again since)
    nr: u64,
    seen: [u64; 4],
}
impl JustFaulted {
    /// Mark `pfn` accessed; true when it is a page of the folio not accessed before.
    #[inline]
    fn mark(&mut self, pfn: u64) -> bool {
        let k = pfn.wrapping_sub(self.head);
        if k >= self.nr.min(256) {
            return false;
        }
        let (w, b) = ((k / 64) as usize, 1u64 << (k % 64));
        let first = self.seen[w] & b == 0;
        self.seen[w] |= b;
        first
    }
}

/// What write_page_fast() carries from one page of a write step to the next.
pub struct WriteHint {
    /// the fast path is off (USE_WRITE_FAST_PATH)
    off: bool,
    /// the VMA of an earlier page of this step
    vma: Option<crate::mmap::Vma>,
    /// faults in `vma` take no mTHP order (alloc_anon_folio() returns at once)
    no_mthp: bool,
}
impl WriteHint {
    pub fn new() -> WriteHint {
        WriteHint { off: !USE_WRITE_FAST_PATH.with(|c| c.get()), vma: None, no_mthp: false }
    }
}
impl Default for WriteHint {
    fn default() -> Self {
        Self::new()
    }
}

/// Folios per per-CPU folio batch (include/linux/pagevec.h: PAGEVEC_SIZE, the size of a
/// folio_batch).
pub const FOLIO_BATCH_SIZE: u64 = 31;

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

    /// __pte_alloc(): make sure the PMD points to a PTE table; returns the slot. A new
    /// table costs pte_alloc_ns beyond its page (pte_alloc_one's accounting and
    /// constructor, pmd_install).
    fn pte_table(&mut self, mm: MmId, idx: u64) -> Option<u32> {
        if let Some(sid) = self.mms[mm].pmds.lookup(idx) {
            return Some(sid);
        }
        let t = self.alloc_pgtable(mm)?;
        self.charge(self.costs.pte_alloc_ns);
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
        self.fault_begins();
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
                        self.rec.latency("thp_fault", mm.idx(), self.clock.cost - t0);
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
        self.do_pte_fault(mm, &vma, addr, write)
    }

    /// do_anonymous_page() / do_wp_page() from the zero page / touching a present page.
    /// A write to a none PTE takes alloc_anon_folio() (mTHP orders first); a read maps
    /// the 4 KiB zero page whatever the enabled orders; a write to the zero page copies
    /// into an order-0 page (wp_page_copy).
    fn do_pte_fault(&mut self, mm: MmId, vma: &crate::mmap::Vma, addr: u64, write: bool) -> Fault {
        let vm_flags = vma.flags;
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
                // the accessed/dirty bits: on the folio's head (a large folio's first
                // tail holds its order, see mm_types.rs)
                let pfn = pte_payload(pte) as u64;
                let head = self.folio_head(pfn);
                let f = self.pm.frames[head as usize];
                self.pm.frames[head as usize] = set_dirty(set_young(f, true), write || dirty(f));
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
                // do_anonymous_page() / wp_page_copy(): anon_vma_prepare() before allocating
                // (a no-op once the VMA has its anon_vma: skip the VMA lookup then)
                if vma.anon_vma.is_none() {
                    self.mms[mm].anon_vma_prepare(addr);
                }
                if k == pgtable_none() {
                    if let Some(r) = self.alloc_anon_folio(mm, vma, sid, addr) {
                        return r;
                    }
                }
                match self.fault_new_base_page(mm, sid, i, addr, k, vm_flags) {
                    Ok(_) => Fault::Ok,
                    Err(f) => f,
                }
            }
        }
    }

    /// The order-0 end of do_anonymous_page() (a write to a none PTE) or wp_page_copy()
    /// (a write to the zero page, `k` == K_ZERO): allocate, clear and map a new page.
    /// Returns the page mapped, or the fault's failure.
    fn fault_new_base_page(
        &mut self,
        mm: MmId,
        sid: u32,
        i: usize,
        addr: u64,
        k: u32,
        vm_flags: u32,
    ) -> Result<u64, Fault> {
        let nid = self.mms[mm].node;
        let Some(Pfn(pfn)) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return Err(self.fault_oom(mm)) };
        if !self.mms[mm].alive {
            // the OOM killer chose this very process while we allocated
            self.pm.free_pages(Pfn(pfn), 0, &mut self.rec.vm);
            return Err(Fault::Oom);
        }
        self.charge(self.costs.fault_4k_ns + self.costs.clear_4k_ns);
        self.map_new_page(mm, sid, i, pfn, vm_flags, true);
        if k == K_ZERO {
            self.mms[mm].tlb.flush_range(addr & PAGE_MASK, (addr & PAGE_MASK) + PAGE_SIZE);
        }
        Ok(pfn)
    }

    /// The orders below PMD order an anonymous fault in `vma` may try
    /// (thp_vma_allowable_orders for the mTHP sizes): none when the process or the VMA
    /// disables THP, else the per-size knobs' mask.
    fn anon_mthp_orders(&self, mm: MmId, vma: &crate::mmap::Vma) -> u32 {
        if self.mms[mm].thp_disable || vma.flags & crate::mmap::VM_NOHUGEPAGE != 0 {
            return 0;
        }
        self.cfg.anon_orders_mask(vma.flags & crate::mmap::VM_HUGEPAGE != 0) & ((1 << HPAGE_PMD_ORDER) - 1)
    }

    /// alloc_anon_folio() and the large-folio part of do_anonymous_page(): the orders
    /// below PMD order the per-size knobs allow for this VMA (thp_vma_allowable_orders),
    /// that fit inside the VMA (thp_vma_suitable_orders), and whose naturally aligned
    /// PTE range is all none (pte_range_none; a zero-page or swap PTE is not none);
    /// the highest is tried first, each failed allocation counts anon_fault_fallback for
    /// its size and the next lower order is tried. On success the folio is mapped by
    /// 1 << order PTEs (no PMD mapping below PMD order) and anon_fault_alloc counted.
    /// None: no mTHP order applies or all failed; the caller allocates order 0.
    fn alloc_anon_folio(&mut self, mm: MmId, vma: &crate::mmap::Vma, sid: u32, addr: u64) -> Option<Fault> {
        let mask = self.anon_mthp_orders(mm, vma);
        if mask == 0 {
            return None;
        }
        let fits = |o: u32| {
            let a = addr & !((PAGE_SIZE << o) - 1);
            a >= vma.start && a + (PAGE_SIZE << o) <= vma.end
        };
        let range_none = |k: &Kernel, o: u32| {
            let i0 = pte_index(addr & !((PAGE_SIZE << o) - 1));
            match &k.slots.get(sid).pmd {
                Pmd::Table(t) => t[i0..i0 + (1 << o)].iter().all(|&p| pte_kind(p) == pgtable_none()),
                _ => false,
            }
        };
        let mut orders: Vec<u32> = (2..HPAGE_PMD_ORDER).rev().filter(|&o| mask & (1 << o) != 0 && fits(o)).collect();
        // the highest order whose range is all none; every lower one is then none too
        while let Some(&o) = orders.first() {
            self.charge(self.costs.pte_walk_ns);
            if range_none(self, o) {
                break;
            }
            orders.remove(0);
        }
        if orders.is_empty() {
            return None;
        }
        let gfp = self.vma_thp_gfp_mask(vma.flags);
        let nid = self.mms[mm].node;
        for o in orders {
            // vma_alloc_folio(): PMD order alone takes the THISNODE first try
            match self.alloc_pages(gfp, o, nid) {
                Some(Pfn(head)) => {
                    if !self.mms[mm].alive {
                        self.pm.free_pages(Pfn(head), o, &mut self.rec.vm);
                        return Some(Fault::Oom);
                    }
                    let nr = 1u64 << o;
                    // reclaim inside the allocation may have changed the range
                    if self.mms[mm].pmds.get(&(addr >> PMD_SHIFT)) != Some(&sid) || !range_none(self, o) {
                        self.pm.free_pages(Pfn(head), o, &mut self.rec.vm);
                        return Some(Fault::Ok);
                    }
                    // folio_zero_user(): the folio is cleared a subpage at a time
                    self.charge(self.costs.fault_4k_ns + self.costs.clear_folio_4k_ns * nr);
                    self.map_anon_folio_pte(mm, sid, addr, head, o, vma.flags);
                    return Some(Fault::Ok);
                }
                None => {
                    if !self.mms[mm].alive {
                        return Some(Fault::Oom);
                    }
                    self.count_mthp_order(o, "anon_fault_fallback", 1);
                }
            }
        }
        None
    }

    /// A new anonymous folio of 2^order pages just mapped whole by PTEs (the fault path's
    /// large folio, a large folio swapped in whole): the head is young,
    /// folio_add_new_anon_rmap() with every PTE mapping it, MM_ANONPAGES and NR_ANON_MAPPED.
    fn account_new_anon_ptes(&mut self, mm: MmId, head: u64, order: u32) {
        let nr = 1u64 << order;
        let h = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_young(h, true);
        self.folio_add_new_anon(head, order);
        self.pm.mapcount.insert(head as u32, nr as u16);
        self.mms[mm].rss_anon += nr;
        self.mod_node_page_state(head, NodeStat::NrAnonMapped, nr as i64);
    }

    /// do_anonymous_page() for a large folio of order `order` < PMD order: set_ptes()
    /// over the aligned range, folio_add_new_anon_rmap(), folio_add_lru_vma(). The
    /// folio is PTE-mapped from the start (its mapcount = nr pages).
    fn map_anon_folio_pte(&mut self, mm: MmId, sid: u32, addr: u64, head: u64, order: u32, vm_flags: u32) {
        let nr = 1u64 << order;
        let i0 = pte_index(addr & !((PAGE_SIZE << order) - 1));
        for k in 0..nr {
            let c = if k == 0 { COMPOUND_HEAD } else { COMPOUND_TAIL };
            let f = with_rmap(make_anon(c), Some((sid, (i0 as u64 + k) as u32)));
            // the PTEs are made dirty (pte_mkdirty for a writable VMA)
            self.pm.frames[(head + k) as usize] = set_dirty(f, true);
            self.set_pte(sid, i0 + k as usize, mk_pte(K_PRESENT, (head + k) as u32));
        }
        self.account_new_anon_ptes(mm, head, order);
        self.lru_add(head, nr, vm_flags & VM_LOCKED != 0);
        self.count_mthp_order(order, "anon_fault_alloc", 1);
        self.just_faulted(head, nr, head + pte_index(addr) as u64 - i0 as u64);
    }

    /// A fault starts on this CPU: the large folio its last fault mapped is no longer
    /// "just faulted" (touch_after_fault_ns).
    #[inline]
    fn fault_begins(&mut self) {
        if let Some(j) = self.just_faulted.get_mut(self.clock.cpu as usize) {
            j.nr = 0;
        }
    }

    /// The fault mapped the `nr` pages of the folio at `head` by PTEs for an access to
    /// `pfn`, which is accessed already.
    fn just_faulted(&mut self, head: u64, nr: u64, pfn: u64) {
        let cpu = self.clock.cpu as usize;
        if self.just_faulted.len() <= cpu {
            self.just_faulted.resize(cpu + 1, JustFaulted::default());
        }
        let mut j = JustFaulted { head, nr, seen: [0; 4] };
        j.mark(pfn);
        self.just_faulted[cpu] = j;
    }

    /// What the access to `pfn` costs beside its data: touch_after_fault_ns for the first
    /// access to another page of the large folio this CPU's last fault mapped (`partial`:
    /// a load, or a store that leaves a cache line partly written), else touch_page_ns.
    #[inline]
    fn touch_ns(&mut self, pfn: u64, partial: bool) -> u64 {
        if let (Some(t), true) = (self.costs.touch_after_fault_ns, partial) {
            if let Some(j) = self.just_faulted.get_mut(self.clock.cpu as usize) {
                if j.mark(pfn) {
                    return t;
                }
            }
        }
        self.costs.touch_page_ns
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
            if compound(self.pm.frames[p as usize]) != COMPOUND_BASE {
                return self.do_swap_page_large(mm, sid, i, slot, p, write, vm_flags);
            }
            (p, true)
        } else if self.swap_is_sync(slot) && self.swap_count(slot) == 1 {
            if let Some(r) = self.swapin_large_folio(mm, sid, addr, slot) {
                return r;
            }
            self.charge(self.costs.swapin_ns);
            let nid = self.mms[mm].node;
            let Some(Pfn(p)) = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) else { return self.fault_oom(mm) };
            if !self.swap_pte_same(mm, idx, sid, i, pte) {
                self.pm.free_pages(Pfn(p), 0, &mut self.rec.vm);
                return if self.mms[mm].alive { Fault::Ok } else { Fault::Oom };
            }
            self.pm.frames[p as usize] = make_anon(COMPOUND_BASE);
            if self.swap_read_folio(p, 1, slot, true) {
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

    /// alloc_swap_folio() and the large-folio part of do_swap_page() on a
    /// SWP_SYNCHRONOUS_IO device (zram, pmem): the mTHP orders the per-size knobs allow and
    /// the VMA fits, whose first swap offset is aligned like the address
    /// (thp_swap_suitable_orders), highest whose aligned PTE range holds contiguous swap
    /// entries of one device, all in the zeromap or none, none in the swap cache
    /// (can_swapin_thp); each failed allocation counts swpin_fallback for its size. The
    /// folio is read whole (swpin, unless all zero), mapped by its PTEs, the slots freed.
    /// None: order 0 as before (zswap is never enabled in the model).
    fn swapin_large_folio(&mut self, mm: MmId, sid: u32, addr: u64, slot: u32) -> Option<Fault> {
        let vma = self.mms[mm].find_vma(addr).cloned()?;
        let mask = self.anon_mthp_orders(mm, &vma);
        if mask == 0 {
            return None;
        }
        let di = self.swap.dev_of(slot);
        let base = self.swap.devs[di].base;
        let off = slot - base;
        let i = pte_index(addr);
        let can_swapin = |k: &Kernel, o: u32| -> bool {
            let nr = 1usize << o;
            let a = addr & !((PAGE_SIZE << o) - 1);
            if a < vma.start || a + (PAGE_SIZE << o) > vma.end {
                return false;
            }
            if ((addr >> PAGE_SHIFT) % nr as u64) != (off as u64 % nr as u64) {
                return false;
            }
            let i0 = pte_index(a);
            let Some(first) = slot.checked_sub((i - i0) as u32) else { return false };
            if first < base || first - base + nr as u32 > k.swap.devs[di].map.len() as u32 {
                return false;
            }
            let Pmd::Table(t) = &k.slots.get(sid).pmd else { return false };
            let zero0 = k.swap.map(first) & crate::swapfile::SWAP_ZEROMAP != 0;
            (0..nr).all(|j| {
                let s = first + j as u32;
                t[i0 + j] == mk_pte(K_SWAP, s)
                    && (k.swap.map(s) & crate::swapfile::SWAP_ZEROMAP != 0) == zero0
                    && !k.swap_has_cache(s)
            })
        };
        let mut orders: Vec<u32> = (2..HPAGE_PMD_ORDER).rev().filter(|&o| mask & (1 << o) != 0).collect();
        while let Some(&o) = orders.first() {
            self.charge(self.costs.pte_walk_ns);
            if can_swapin(self, o) {
                break;
            }
            orders.remove(0);
        }
        let gfp = self.vma_thp_gfp_mask(vma.flags);
        let nid = self.mms[mm].node;
        for o in orders {
            let Some(Pfn(head)) = self.alloc_pages(gfp, o, nid) else {
                if !self.mms[mm].alive {
                    return Some(Fault::Oom);
                }
                self.count_mthp_order(o, "swpin_fallback", 1);
                continue;
            };
            // the allocation may have reclaimed, swapped in or killed
            if !self.mms[mm].alive || self.mms[mm].pmds.get(&(addr >> PMD_SHIFT)) != Some(&sid) || !can_swapin(self, o)
            {
                self.pm.free_pages(Pfn(head), o, &mut self.rec.vm);
                return Some(if self.mms[mm].alive { Fault::Ok } else { Fault::Oom });
            }
            let nr = 1u64 << o;
            let i0 = pte_index(addr & !((PAGE_SIZE << o) - 1));
            let first = slot - (i - i0) as u32;
            for k in 0..nr {
                let c = if k == 0 { COMPOUND_HEAD } else { COMPOUND_TAIL };
                // not in the swap cache: the folio is the only copy (dirty)
                let f = set_dirty(with_rmap(make_anon(c), Some((sid, (i0 as u64 + k) as u32))), true);
                self.pm.frames[(head + k) as usize] = f;
            }
            if self.swap_read_folio(head, nr as u32, first, true) {
                self.rec.vm.count(Ev::PGMAJFAULT);
                self.count_mthp_order(o, "swpin", 1);
            }
            for k in 0..nr {
                self.set_pte(sid, i0 + k as usize, mk_pte(K_PRESENT, (head + k) as u32));
            }
            self.account_new_anon_ptes(mm, head, o);
            self.mms[mm].swap_ents -= nr;
            for k in 0..nr as u32 {
                self.swap_free(first + k);
            }
            self.lru_add(head, nr, vma.flags & VM_LOCKED != 0);
            return Some(Fault::Ok);
        }
        None
    }

    /// do_swap_page() finding a large folio (a THP or mTHP written whole) in the swap cache:
    /// when the folio's aligned PTE range holds its swap entries in order (swap_pte_batch),
    /// the whole folio is mapped by PTEs at once (nr_pages = folio_nr_pages; no split, no
    /// PMD); otherwise only the faulting page. A write (or a swap more than half full)
    /// drops the swap-cache copy once no swap entry needs it.
    #[allow(clippy::too_many_arguments)]
    fn do_swap_page_large(
        &mut self,
        mm: MmId,
        sid: u32,
        i: usize,
        slot: u32,
        pfn: u64,
        write: bool,
        vm_flags: u32,
    ) -> Fault {
        let head = self.folio_head(pfn);
        let folio_nr = self.folio_nr_pages(head);
        let Some((first, nr)) = self.swap_slots_of(head) else { return Fault::Ok };
        // the folio's first PTE: the faulting page's index less its offset in the folio
        let i0 = i.checked_sub((pfn - head) as usize);
        let whole = nr as u64 == folio_nr
            && i0.is_some_and(|i0| i0 % folio_nr as usize == 0)
            && match (&self.slots.get(sid).pmd, i0) {
                (Pmd::Table(t), Some(i0)) => {
                    (0..folio_nr as usize).all(|k| t[i0 + k] == mk_pte(K_SWAP, first + k as u32))
                }
                _ => false,
            };
        let pages: Vec<(usize, u64, u32)> = if whole {
            let i0 = i0.unwrap_or(0);
            (0..folio_nr as usize).map(|k| (i0 + k, head + k as u64, first + k as u32)).collect()
        } else {
            vec![(i, pfn, slot)]
        };
        for &(k, p, s) in &pages {
            let f = with_rmap(self.pm.frames[p as usize], Some((sid, k as u32)));
            self.pm.frames[p as usize] = f;
            self.set_pte(sid, k, mk_pte(K_PRESENT, p as u32));
            if !whole {
                self.swap_free(s);
            }
        }
        if whole {
            self.swap_free_nr(first, folio_nr as u32);
        }
        let n = pages.len() as u64;
        self.mms[mm].rss_anon += n;
        self.mms[mm].swap_ents -= n;
        self.mod_node_page_state(head, NodeStat::NrAnonMapped, n as i64);
        *self.pm.mapcount.entry(head as u32).or_insert(0) += n as u16;
        let h = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_dirty(set_young(h, true), write || dirty(h));
        if write || self.vm_swap_full() {
            self.folio_free_swap(head);
        }
        if lru(self.pm.frames[head as usize]) == LRU_NONE && !isolated(self.pm.frames[head as usize]) {
            self.lru_add(head, folio_nr, vm_flags & VM_LOCKED != 0);
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
                    if self.swap_read_folio(head, HPAGE_PMD_NR as u32, first, true) {
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
                    self.swap_free_nr(first, HPAGE_PMD_NR as u32);
                    self.lru_add(head, HPAGE_PMD_NR, vma.flags & VM_LOCKED != 0);
                    self.folio_add_new_anon(head, HPAGE_PMD_ORDER);
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
        // folio_add_lru(): through this CPU's lru_add folio batch, moved onto the LRU
        // under one lru_lock when full (FOLIO_BATCH_SIZE) or at once after a large folio
        // (folio_may_be_lru_cached) — folio_batch_move_lru
        let cpu = self.clock.cpu as usize;
        let batch = &mut self.pgdat[node].lru_add_batch;
        if batch.len() <= cpu {
            batch.resize(cpu + 1, 0);
        }
        batch[cpu] += 1;
        let n = batch[cpu];
        if n >= FOLIO_BATCH_SIZE || nr > 1 {
            batch[cpu] = 0;
            self.lock_acquire(crate::locking::LockId::Lru(node), n);
        }
    }
    /// folio_mark_accessed() (mm/swap.c, classic LRU): inactive,unreferenced ->
    /// inactive,referenced -> active,unreferenced -> active,referenced. For anonymous
    /// memory 6.18 calls it from GUP with FOLL_TOUCH (follow_page_pte: MAP_POPULATE,
    /// mlock, MADV_POPULATE_*); the fault paths set only the accessed bit.
    pub fn folio_mark_accessed(&mut self, head: u64) {
        let f = self.pm.frames[head as usize];
        if !referenced(f) {
            self.pm.frames[head as usize] = set_referenced(f, true);
            return;
        }
        let l = lru(f);
        if l == LRU_UNEVICTABLE || l == LRU_ACTIVE_ANON || mlocked(f) {
            return;
        }
        if l == LRU_INACTIVE_ANON && !isolated(f) {
            // folio_activate(): onto the active list (pgactivate)
            let nr = self.folio_nr_pages(head);
            self.lru_del(head, nr);
            self.lruvec_add_folio(head, nr, LRU_ACTIVE_ANON, false);
            self.rec.vm.add(Ev::PGACTIVATE, nr);
        }
        let f = self.pm.frames[head as usize];
        self.pm.frames[head as usize] = set_referenced(f, false);
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
    /// split queue, back to the buddy allocator: page_free_ns, plus for a large folio
    /// free_pages_prepare()'s check of each tail page (free_tail_page_ns) and, for an order
    /// the per-CPU lists do not take, free_one_page() under the zone lock (free_one_page_ns).
    pub fn free_folio(&mut self, head: Pfn) {
        let head = head.0;
        let f = self.pm.frames[head as usize];
        debug_assert_eq!(tag(f), TAG_ANON);
        let order = folio_order(&self.pm.frames, head);
        if swapcache(f) {
            self.delete_from_swap_cache(head);
        }
        self.lru_del(head, 1 << order);
        if order > 0 {
            self.deferred_split_remove(head);
            self.pm.mapcount.remove(&(head as u32));
            // free_pages_prepare(): mod_mthp_stat(order, MTHP_STAT_NR_ANON, -1)
            self.count_mthp_order(order, "nr_anon", -1);
        }
        self.charge(self.costs.page_free_ns);
        if order > 0 {
            // free_pages_prepare(): free_tail_page_prepare() on every tail page
            self.charge(self.costs.free_tail_page_ns * ((1 << order) - 1));
        }
        if !pcp_allowed_order(order) {
            // free_unref_folios(): an order the per-CPU lists do not take goes to
            // free_one_page(), under the zone lock
            self.charge(self.costs.free_one_page_ns);
        }
        self.pm.free_pages(Pfn(head), order, &mut self.rec.vm);
    }

    /// Unmap one PTE-mapped page: base pages are freed, THP subpages lose their mapping
    /// (the folio is freed with its last mapping, else queued for deferred split).
    pub(crate) fn zap_present_pte(&mut self, mm: MmId, pfn: u64) {
        self.zap_present_ptes(mm, pfn, 1);
    }

    /// zap_present_folio_ptes(): unmap `n` consecutive pages from `pfn` of one folio
    /// (folio_pte_batch) with one folio_remove_rmap_ptes(): a large folio unmapped whole
    /// in one batch is freed without being queued as partially mapped.
    pub(crate) fn zap_present_ptes(&mut self, mm: MmId, pfn: u64, n: u64) {
        let f = self.pm.frames[pfn as usize];
        self.mms[mm].rss_anon -= n;
        self.mod_node_page_state(pfn, NodeStat::NrAnonMapped, -(n as i64));
        for p in pfn..pfn + n {
            self.pm.frames[p as usize] = with_rmap(self.pm.frames[p as usize], None);
        }
        if compound(f) == COMPOUND_BASE {
            if swapcache(f) && self.folio_under_writeback(pfn) {
                // free_swap_cache() fails under writeback: left for reclaim
                return;
            }
            self.free_folio(Pfn(pfn));
            return;
        }
        let head = self.folio_head(pfn);
        let left = {
            let c = self.pm.mapcount.get_mut(&(head as u32)).expect("PTE-mapped THP has a mapcount");
            *c -= n as u16;
            *c
        };
        if left == 0 {
            if swapcache(self.pm.frames[head as usize]) && self.folio_under_writeback(head) {
                // free_swap_cache() fails while the folio is under writeback: it stays in
                // the swap cache, unmapped, for reclaim to free
                self.pm.mapcount.remove(&(head as u32));
                return;
            }
            self.free_folio(Pfn(head));
        } else {
            self.deferred_split_folio(head, true);
        }
    }

    /// A present PTE's folio that zap_present_ptes() frees on its own: an order-0 anonymous
    /// folio outside the swap cache.
    #[inline(always)]
    fn zaps_alone(f: u64) -> bool {
        tag(f) == TAG_ANON && compound(f) == COMPOUND_BASE && !swapcache(f)
    }

    /// zap_range()'s walk over the PTEs [i, i1] of table `sid` from a present PTE whose
    /// folio zaps_alone(), for as long as the PTEs are such: each is zap_present_ptes()
    /// of one page (the rmap dropped, then free_folio()) and cleared, in the order of the
    /// per-page walk; the run's RSS count and walk cost are summed. The caller charged the
    /// first PTE's walk. Returns the PTEs done (>= 1).
    fn zap_base_run(&mut self, mm: MmId, sid: u32, i: usize, i1: usize) -> usize {
        // per page: the rmap and NR_ANON_MAPPED dropped, then free_folio(): off the LRU
        // (lru_del), page_free_ns, free_pages() (which clears the frame first: the rmap
        // and LRU bits are not written back), and the PTE cleared. The table, the
        // allocator, the nodes and the counters are borrowed once for the run; the charges
        // are summed (free_pages() reads no clock).
        let single = self.pgdat.len() == 1;
        let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd else { unreachable!("a PTE table") };
        let (pm, pgdat, vm) = (&mut self.pm, &mut self.pgdat, &mut self.rec.vm);
        let mut n = 0usize;
        while i + n <= i1 {
            let pte = t[i + n];
            if pte_kind(pte) != K_PRESENT {
                break;
            }
            let pfn = pte_payload(pte) as u64;
            let f = pm.frames[pfn as usize];
            if !Self::zaps_alone(f) {
                break;
            }
            let node = if single { 0 } else { pm.node_of(pfn) };
            pgdat[node].stat.0[NodeStat::NrAnonMapped as usize] -= 1;
            if lru(f) != LRU_NONE {
                pgdat[node].lruvec[lru_index(f)].remove(&mut pm.links, pfn as u32, 1);
            }
            pm.free_page0(pfn, vm);
            t[i + n] = PTE_NONE;
            n += 1;
        }
        debug_assert!(n >= 1, "the caller saw a present PTE of such a folio");
        self.mms[mm].rss_anon -= n as u64;
        self.charge(self.costs.page_free_ns * n as u64 + self.costs.pte_walk_ns * (n as u64 - 1));
        n
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
        // the mmu_gather's range grows only with entries that were present (or tables freed):
        // tlb_flush_mmu_tlbonly() flushes nothing for a range that zapped none
        let mut flush = FlushRange::default();
        for (idx, sid) in idxs {
            let s = (idx << PMD_SHIFT).max(start);
            let e = ((idx + 1) << PMD_SHIFT).min(end);
            let whole = e - s == 1 << PMD_SHIFT;
            self.charge(self.costs.pmd_walk_ns);
            let is_huge = matches!(self.slots.get(sid).pmd, Pmd::Huge(_) | Pmd::HugeZero)
                || (whole && matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)));
            if is_huge && whole {
                if !matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)) {
                    flush.pmd(s);
                }
                self.zap_huge_pmd(mm, sid);
            } else {
                if matches!(self.slots.get(sid).pmd, Pmd::Huge(_) | Pmd::HugeZero) {
                    flush.pages(s, e);
                    // __split_huge_pmd(): partial unmap of a huge mapping
                    self.split_huge_pmd(mm, sid);
                }
                if matches!(self.slots.get(sid).pmd, Pmd::SwapPmd(_)) {
                    self.split_swap_pmd(mm, sid);
                }
                let (i0, i1) = (pte_index(s), pte_index(e - 1));
                let mut i = i0;
                if let Pmd::Table(t) = &self.slots.get(sid).pmd {
                    // a range of none PTEs (exit's free_pgtables pass after the zaps, holes):
                    // each walked, none changed
                    if t[i0..=i1].iter().all(|&p| p == PTE_NONE) {
                        self.charge(self.costs.pte_walk_ns * (i1 - i0 + 1) as u64);
                        i = i1 + 1;
                    }
                }
                while i <= i1 {
                    let pte = match &self.slots.get(sid).pmd {
                        Pmd::Table(t) => t[i],
                        _ => PTE_NONE,
                    };
                    self.charge(self.costs.pte_walk_ns);
                    match pte_kind(pte) {
                        K_PRESENT
                            if Self::zaps_alone(self.pm.frames[pte_payload(pte) as usize])
                                && test_switch!(USE_ZAP_RUN) =>
                        {
                            // a run of PTEs mapping order-0 folios outside the swap cache:
                            // each zapped and freed as below, page after page
                            let n = self.zap_base_run(mm, sid, i, i1);
                            flush.pages(pte_addr(idx, i as u64), pte_addr(idx, (i + n) as u64));
                            i += n;
                            continue;
                        }
                        K_PRESENT => {
                            // folio_pte_batch(): the following PTEs mapping the next
                            // pages of the same large folio go in one batch
                            let pfn = pte_payload(pte) as u64;
                            let mut n = 1u64;
                            if compound(self.pm.frames[pfn as usize]) != COMPOUND_BASE {
                                let head = self.folio_head(pfn);
                                let end = head + self.folio_nr_pages(head);
                                while i + (n as usize) <= i1 && pfn + n < end {
                                    let next = match &self.slots.get(sid).pmd {
                                        Pmd::Table(t) => t[i + n as usize],
                                        _ => PTE_NONE,
                                    };
                                    if pte_kind(next) != K_PRESENT || pte_payload(next) as u64 != pfn + n {
                                        break;
                                    }
                                    n += 1;
                                }
                            }
                            self.charge(self.costs.pte_walk_ns * (n - 1));
                            flush.pages(pte_addr(idx, i as u64), pte_addr(idx, i as u64 + n));
                            self.zap_present_ptes(mm, pfn, n);
                            for k in 0..n as usize {
                                self.set_pte(sid, i + k, PTE_NONE);
                            }
                            i += n as usize;
                            continue;
                        }
                        K_SWAP => {
                            i += self.zap_swap_run(mm, sid, i, i1);
                            continue;
                        }
                        // zap_present_ptes() without a normal page: clear and record it
                        K_ZERO => {
                            flush.pages(pte_addr(idx, i as u64), pte_addr(idx, i as u64 + 1));
                            self.charge(self.costs.zap_zero_pte_ns)
                        }
                        _ => {}
                    }
                    self.set_pte(sid, i, PTE_NONE);
                    i += 1;
                }
            }
            if free_tables && self.mms[mm].pmds.contains_key(&idx) && !self.mms[mm].pmd_range_used(idx) {
                // pte_free_tlb(): the table's PMD entry, one page of range at its address
                flush.table(idx << PMD_SHIFT);
                let slot = self.slots.remove(sid);
                self.mms[mm].pmds.remove(&idx);
                self.free_pgtable(slot.table_pfn);
            }
        }
        self.mms[mm].tlb.flush_range(start, end);
        if let Some(n) = flush.invalidations() {
            // one invlpg per stride past the first, up to the ceiling; past it one flush
            let extra = if n <= TLB_SINGLE_PAGE_FLUSH_CEILING { n - 1 } else { 0 };
            self.charge(self.costs.zap_flush_ns + extra * self.costs.tlb_flush_page_ns);
        }
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
            Pmd::SwapPmd(s) => self.free_swap_entries(mm, s, HPAGE_PMD_NR as u32),
            _ => {}
        }
        self.free_pgtable(slot.table_pfn);
    }

    /// free_swap_and_cache_nr() for `n` swap PTEs holding consecutive slots from `first`
    /// (a swap_pte_batch(), or a PMD swap entry's 512) being zapped: the call's own cost
    /// (swap_batch_ns) once, then each entry's.
    pub fn free_swap_entries(&mut self, mm: MmId, first: u32, n: u32) {
        self.mms[mm].swap_ents -= n as u64;
        self.charge(self.costs.swap_batch_ns);
        for k in 0..n {
            self.free_swap_and_cache(first + k);
        }
    }

    /// The swap PTE `i` of table `sid` and those after it (up to `i1`) that swap_pte_batch()
    /// takes with it, zapped as zap_nonpresent_ptes() and madvise_free_pte_range() do: the
    /// walk over the run's other PTEs, one free_swap_and_cache_nr(), the PTEs cleared
    /// (clear_not_present_full_ptes). Returns the PTEs done.
    pub(crate) fn zap_swap_run(&mut self, mm: MmId, sid: u32, i: usize, i1: usize) -> usize {
        let n = self.swap_pte_batch(sid, i, i1);
        let Pmd::Table(t) = &self.slots.get(sid).pmd else { unreachable!("a PTE table") };
        let first = pte_payload(t[i]);
        self.charge(self.costs.pte_walk_ns * (n as u64 - 1));
        self.free_swap_entries(mm, first, n);
        for k in 0..n as usize {
            self.set_pte(sid, i + k, PTE_NONE);
        }
        n as usize
    }

    /// swap_pte_batch() (mm/internal.h): how many PTEs from `i` (up to `i1`) of table `sid`
    /// are swap entries whose slots follow each other on one device (pte_next_swp_offset;
    /// one memory cgroup here). PTE `i` is a swap entry.
    pub(crate) fn swap_pte_batch(&self, sid: u32, i: usize, i1: usize) -> u32 {
        let Pmd::Table(t) = &self.slots.get(sid).pmd else { return 1 };
        let first = pte_payload(t[i]);
        let dev = self.swap.dev_of(first);
        let mut n = 1u32;
        while i + (n as usize) <= i1 {
            let p = t[i + n as usize];
            if pte_kind(p) != K_SWAP || pte_payload(p) != first + n || self.swap.dev_of(first + n) != dev {
                break;
            }
            n += 1;
        }
        n
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
        // A fault that returns without mapping the page (fault_oom()'s retry after the
        // OOM killer took another process) returns to user space, and the store runs
        // again and faults again. Each such retry kills a process, so the loop ends; the
        // bound only guards the model against a path that maps nothing for ever.
        const MAX_FAULT_RETRIES: u32 = 64;
        for _ in 0..MAX_FAULT_RETRIES {
            if let Mapping::Page(Pfn(pfn), _) = self.follow(mm, addr) {
                self.store_to_page(pfn, byte, bytes, data);
                return Fault::Ok;
            }
            let r = self.handle_mm_fault(mm, addr, true);
            if r != Fault::Ok {
                return r;
            }
        }
        Fault::Segv
    }

    /// The store itself: the page's content, its accessed/dirty bits, the time.
    #[inline]
    fn store_to_page(&mut self, pfn: u64, byte: u32, bytes: u32, data: &thplab_workload::workload::WriteData) {
        let f = self.pm.frames[pfn as usize];
        let head = if compound(f) == COMPOUND_BASE { pfn } else { self.folio_head(pfn) };
        self.store_to_folio_page(pfn, head, byte, bytes, data);
    }

    /// store_to_page() of a page of the folio at `head`.
    #[inline]
    fn store_to_folio_page(
        &mut self,
        pfn: u64,
        head: u64,
        byte: u32,
        bytes: u32,
        data: &thplab_workload::workload::WriteData,
    ) {
        let f = self.pm.frames[pfn as usize];
        let c = content::apply_write(content(f), byte, bytes, data);
        self.pm.frames[pfn as usize] = with_content(f, c);
        self.touch_folio_at(pfn, head, true);
        let partial = !byte.is_multiple_of(CACHE_LINE) || !(byte + bytes).is_multiple_of(CACHE_LINE);
        let touch = self.touch_ns(pfn, partial);
        self.charge(touch + self.fill_ns(bytes, data));
    }

    /// A store of `bytes` of the op's data to a page: the store itself (touch_page_ns), then
    /// the rest of the page's bytes.
    #[inline]
    fn store_ns(&self, bytes: u32, data: &thplab_workload::workload::WriteData) -> u64 {
        self.costs.touch_page_ns + self.fill_ns(bytes, data)
    }

    /// The bytes of a store beyond its first (store_ns), by the op's data.
    #[inline]
    fn fill_ns(&self, bytes: u32, data: &thplab_workload::workload::WriteData) -> u64 {
        use thplab_workload::workload::{DataKind, WriteData};
        let fill = match data {
            WriteData::Byte(_) => self.costs.fill_byte_4k_ns,
            WriteData::Kind(DataKind::Text) => self.costs.fill_text_4k_ns,
            WriteData::Kind(DataKind::Random) => self.costs.fill_random_4k_ns,
        };
        fill * bytes as u64 / PAGE_SIZE
    }

    /// write_page() for the pages of a write op, one after the other: the same work in
    /// the same order, with less host work per page. A page already mapped (by a PTE, or
    /// by a huge PMD) is stored to at once; a write fault on a none PTE of an existing PTE
    /// table, in a writable VMA that has its anon_vma and takes no mTHP order, goes straight to the
    /// order-0 end of do_anonymous_page() with the VMA found for an earlier page of
    /// the same step (`hint`: faults do not change VMAs; the hint is dropped whenever a
    /// page takes the plain path, which may). Every other case is write_page().
    /// Off (USE_WRITE_FAST_PATH false), every page takes write_page().
    pub fn write_page_fast(
        &mut self,
        mm: MmId,
        addr: u64,
        byte: u32,
        bytes: u32,
        data: &thplab_workload::workload::WriteData,
        hint: &mut WriteHint,
    ) -> Fault {
        if hint.off {
            return self.write_page(mm, addr, byte, bytes, data);
        }
        let i = pte_index(addr);
        let sid = self.mms[mm].pmds.lookup(addr >> PMD_SHIFT);
        // the PTE, when the PMD points to a PTE table (a huge PMD: its page; anything else:
        // the plain path)
        let pte = match sid.map(|sid| &self.slots.get(sid).pmd) {
            Some(Pmd::Table(t)) => Some(t[i]),
            Some(&Pmd::Huge(head)) => {
                // a page of a PMD-mapped THP: follow() -> the page, as write_page() does
                // (which this path stood for, so the hint is dropped as before)
                hint.vma = None;
                self.store_to_page(head as u64 + i as u64, byte, bytes, data);
                return Fault::Ok;
            }
            _ => None,
        };
        if let Some(pte) = pte.filter(|&p| pte_kind(p) == K_PRESENT) {
            // follow() -> the page
            self.store_to_page(pte_payload(pte) as u64, byte, bytes, data);
            return Fault::Ok;
        }
        if let (Some(sid), Some(pte)) = (sid, pte.filter(|&p| pte_kind(p) == pgtable_none())) {
            if !self.mms[mm].alive {
                return self.write_page(mm, addr, byte, bytes, data);
            }
            if let Some(vm_flags) = self.fast_fault_vma_flags(mm, addr, hint) {
                // handle_mm_fault() -> do_pte_fault() -> do_anonymous_page(): the same
                // steps as the plain path (alloc_anon_folio() takes no order here)
                self.rec.vm.count(Ev::PGFAULT);
                self.fault_begins();
                #[cfg(test)]
                WRITE_FAST_FAULTS.with(|c| c.set(c.get() + 1));
                return match self.fault_new_base_page(mm, sid, i, addr, pte_kind(pte), vm_flags) {
                    Ok(pfn) => {
                        self.store_to_page(pfn, byte, bytes, data);
                        Fault::Ok
                    }
                    // fault_oom()'s "retry" (the OOM killer took another process) maps
                    // nothing: the store runs again, through write_page()
                    Err(Fault::Ok) => self.write_page(mm, addr, byte, bytes, data),
                    Err(f) => f,
                };
            }
        }
        hint.vma = None;
        self.write_page(mm, addr, byte, bytes, data)
    }

    /// The flags of the VMA at `addr` when a write fault there takes the fast path: the
    /// VMA is writable, has its anon_vma and takes no mTHP order. The VMA comes from the
    /// hint while `addr` is inside it, else from find_vma() (then kept in the hint).
    #[inline]
    fn fast_fault_vma_flags(&self, mm: MmId, addr: u64, hint: &mut WriteHint) -> Option<u32> {
        if hint.vma.as_ref().is_none_or(|v| addr < v.start || addr >= v.end) {
            hint.vma = self.mms[mm].find_vma(addr).cloned();
            hint.no_mthp = hint.vma.as_ref().is_some_and(|v| self.anon_mthp_orders(mm, v) == 0);
        }
        hint.vma.as_ref().filter(|v| v.flags & VM_WRITE != 0 && v.anon_vma.is_some() && hint.no_mthp).map(|v| v.flags)
    }

    /// write_page_fast() for the pages [addr, addr + max pages) up to the end of addr's
    /// 2 MiB, one after the other: the same work in the same order, with the PMD looked
    /// up once. A PMD-mapped THP takes every store; in a PTE table, present pages take
    /// their stores and a none PTE of a fast-path VMA (see write_page_fast) its fault,
    /// while the allocation is the pop from the per-CPU list (movable0_pcp_run). The
    /// run stops before the first page that needs anything else, which write_page_fast()
    /// then takes alone. Returns the last page's result and the pages done (>= 1).
    #[allow(clippy::too_many_arguments)]
    pub fn write_run_fast(
        &mut self,
        mm: MmId,
        addr: u64,
        max: u64,
        byte: u32,
        bytes: u32,
        data: &thplab_workload::workload::WriteData,
        hint: &mut WriteHint,
    ) -> (Fault, u64) {
        let i0 = pte_index(addr);
        let n = max.min((PTRS_PER_PTE - i0) as u64);
        let sid = self.mms[mm].pmds.lookup(addr >> PMD_SHIFT);
        let one = |k: &mut Kernel, hint: &mut WriteHint| (k.write_page_fast(mm, addr, byte, bytes, data, hint), 1);
        let (Some(sid), false, true) = (sid, hint.off, n > 1) else { return one(self, hint) };
        match self.slots.get(sid).pmd {
            Pmd::Huge(head) => {
                // follow() -> a page of the PMD-mapped THP, for every page (as write_page_fast)
                hint.vma = None;
                for j in 0..n {
                    self.store_to_folio_page(head as u64 + (i0 as u64 + j), head as u64, byte, bytes, data);
                }
                return (Fault::Ok, n);
            }
            Pmd::Table(_) => {}
            _ => return one(self, hint),
        }
        let mut j = 0u64;
        let mut zone = None;
        while j < n {
            let i = i0 + j as usize;
            let a = addr + j * PAGE_SIZE;
            let Pmd::Table(t) = &self.slots.get(sid).pmd else { break };
            let pte = t[i];
            if pte_kind(pte) == K_PRESENT {
                self.store_to_page(pte_payload(pte) as u64, byte, bytes, data);
                j += 1;
                continue;
            }
            if pte_kind(pte) != pgtable_none() || !self.mms[mm].alive {
                break;
            }
            let Some(vm_flags) = self.fast_fault_vma_flags(mm, a, hint) else { break };
            // do_anonymous_page()'s order-0 allocation, when it is a per-CPU list pop
            // (which neither reclaims nor kills): fault_new_base_page() with that page,
            // for the none PTEs that follow in this VMA while the list has pages
            let Some((z, avail)) = self.movable0_pcp_run(self.mms[mm].node, &mut zone) else { break };
            if self.pcp_pop_zone(z).1 {
                // a boosted zone: the first allocation wakes kswapd (after_alloc), alone
                let pfn = self.pop_movable0_pcp(z);
                self.rec.vm.count(Ev::PGFAULT);
                self.fault_begins();
                #[cfg(test)]
                WRITE_FAST_FAULTS.with(|c| c.set(c.get() + 1));
                self.charge(self.costs.fault_4k_ns + self.costs.clear_4k_ns);
                self.map_new_page(mm, sid, i, pfn, vm_flags, true);
                self.store_to_page(pfn, byte, bytes, data);
                j += 1;
                continue;
            }
            let vma_end = hint.vma.as_ref().map_or(a + PAGE_SIZE, |v| v.end);
            let most = (n - j).min((vma_end - a) / PAGE_SIZE).min(avail as u64) as usize;
            let Pmd::Table(t) = &self.slots.get(sid).pmd else { break };
            let k = t[i..i + most].iter().take_while(|&&p| pte_kind(p) == pgtable_none()).count();
            self.fault_run_pcp(mm, sid, i, k, vm_flags, z, byte, bytes, data);
            j += k as u64;
        }
        if j == 0 {
            return one(self, hint);
        }
        (Fault::Ok, j)
    }

    /// The write faults of none PTEs [i, i + k) of table `sid` in one VMA (`vm_flags`),
    /// each taking its page from the per-CPU list `z` (holding >= k pages, its zone not
    /// boosted): page after page what pop_movable0_pcp(), the fault's count and charge,
    /// map_new_page() and store_to_page() do. The pops come first (nothing the faults do
    /// reads the per-CPU list, the zone counts or the host backing); the charges go in
    /// the plain path's order, so that the LRU lock taken every FOLIO_BATCH_SIZE pages
    /// sees the same clock; each frame is written once, with the data every page of the
    /// run gets alike (a fresh page's content, written the same way).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn fault_run_pcp(
        &mut self,
        mm: MmId,
        sid: u32,
        i: usize,
        k: usize,
        vm_flags: u32,
        z: crate::page_alloc::PcpPop,
        byte: u32,
        bytes: u32,
        data: &thplab_workload::workload::WriteData,
    ) {
        let (node, _) = self.pcp_pop_zone(z);
        let locked = vm_flags & VM_LOCKED != 0;
        let l = if locked { LRU_UNEVICTABLE } else { LRU_INACTIVE_ANON };
        // the frame map_new_page() and lru_add() make, then store_to_page()'s data
        let f0 = set_mlocked(with_lru(set_dirty(set_young(make_anon(COMPOUND_BASE), true), true), l), locked);
        let f0 = with_content(f0, content::apply_write(content(f0), byte, bytes, data));
        let li = lru_index(f0);
        let (alloc_ns, fault_ns) = (self.costs.page_alloc_ns, self.costs.fault_4k_ns + self.costs.clear_4k_ns);
        let store_ns = self.store_ns(bytes, data);
        let mut pfns = [0u32; PTRS_PER_PTE];
        let mut refault = [0u64; PTRS_PER_PTE];
        self.pop_movable0_pcp_run(z, &mut pfns[..k], &mut refault[..k]);
        let cpu = self.clock.cpu as usize;
        if self.pgdat[node].lru_add_batch.len() <= cpu {
            self.pgdat[node].lru_add_batch.resize(cpu + 1, 0);
        }
        let now = self.clock.now;
        let mut q = 0;
        while q < k {
            // the pages up to the one whose lru_add() fills the folio batch
            let room = (FOLIO_BATCH_SIZE - self.pgdat[node].lru_add_batch[cpu]) as usize;
            let seg = room.min(k - q);
            let full = seg == room;
            {
                let Pmd::Table(t) = &mut self.slots.get_mut(sid).pmd else { unreachable!("a PTE table") };
                let (frames, links) = (&mut self.pm.frames, &mut self.pm.links);
                let list = &mut self.pgdat[node].lruvec[li];
                let mut cost = self.clock.cost;
                let mut trace_clock = self.rec.trace.clock;
                for s in q..q + seg {
                    let (pfn, ii) = (pfns[s], i + s);
                    // alloc_pages(): the cost, the trace clock, a host refault
                    cost += alloc_ns;
                    trace_clock = now + cost;
                    cost += refault[s] + fault_ns;
                    frames[pfn as usize] = with_rmap(f0, Some((sid, ii as u32)));
                    t[ii] = mk_pte(K_PRESENT, pfn);
                    list.push_head(links, pfn, 1);
                    // the page's store, but for the last of a full batch (after the lock)
                    if !(full && s + 1 == q + seg) {
                        cost += store_ns;
                    }
                }
                self.clock.cost = cost;
                self.rec.trace.clock = trace_clock;
            }
            let n = seg as u64;
            self.rec.vm.add(Ev::PGFAULT, n);
            self.fault_begins();
            #[cfg(test)]
            WRITE_FAST_FAULTS.with(|c| c.set(c.get() + n));
            self.mms[mm].rss_anon += n;
            self.mod_node_page_state(pfns[q] as u64, NodeStat::NrAnonMapped, n as i64);
            let batch = &mut self.pgdat[node].lru_add_batch[cpu];
            *batch += n;
            if full {
                let nb = std::mem::take(batch);
                self.lock_acquire(crate::locking::LockId::Lru(node), nb);
                self.charge(store_ns);
            }
            q += seg;
        }
    }

    /// A load from the page at `addr`, faulting it in (zero page) if needed.
    pub fn read_page(&mut self, mm: MmId, addr: u64) -> Fault {
        match self.follow(mm, addr) {
            Mapping::Page(Pfn(pfn), _) => {
                self.touch_folio(pfn, false);
                let touch = self.touch_ns(pfn, true);
                self.charge(touch);
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
        let head = if compound(f) == COMPOUND_BASE { pfn } else { self.folio_head(pfn) };
        self.touch_folio_at(pfn, head, write);
    }

    /// touch_folio() of a page of the folio at `head`.
    #[inline]
    fn touch_folio_at(&mut self, pfn: u64, head: u64, write: bool) {
        let f = self.pm.frames[pfn as usize];
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
