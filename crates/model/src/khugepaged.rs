//! khugepaged and MADV_COLLAPSE's collapse engine (mm/khugepaged.c).
//!
//! The kernel thread walks a FIFO list of mm slots with a cursor (`khugepaged_scan`:
//! the cursor mm and a resume address), spending a progress budget of `pages_to_scan`
//! units per wake-up (512 per 2 MiB range looked at, 1 per skipped VMA or mm visit),
//! then sleeps `scan_sleep_millisecs`. Each PMD range of an eligible anonymous VMA goes
//! through the candidacy test (`hpage_collapse_scan_pmd`: none/swap/shared limits, the
//! young rule) and, when it passes, `collapse_huge_page`: allocate a THP, swap in,
//! flush the range, copy 512 pages, free the old ones, map the THP by a huge PMD.
//!
//! Seed 002 (Vernon Yang, 2025) policies, each behind its own `thplab.khugepaged_*`
//! switch: drop fully collapsed mms from the list (v1), move an mm to the tail on
//! MADV_COLD/MADV_FREE (v1), move the cursor on at once for a THP-disabled mm, charge
//! ~1 progress unit for PMD-mapped and table-less ranges (v2+), and skip clean
//! lazy-free folios (v4+); plus the `mm_khugepaged_scan` tracepoint.
//!
//! Registration (khugepaged_enter_vma): an mm joins the list only where 6.18 enters it —
//! the first THP fault of an eligible VMA, MADV_HUGEPAGE on one, a VMA merge whose target
//! is eligible — and "eligible" includes having an anon_vma, so mmap alone never enters
//! an anonymous mm, nor does a VMA smaller than an aligned 2 MiB range.
//!
//! Model notes: pages are never shared (no fork), so the shared limit never trips and
//! khugepaged_fork() has no caller. The accessed bit lives on the folio's head frame (for
//! a base page that is its PTE's bit; for a PTE-mapped large folio it stands for any of
//! its PTEs): loads and stores set it, reclaim's folio_referenced(), MADV_COLD and
//! MADV_PAGEOUT clear it. The scan counts a PTE referenced when that bit or
//! PG_referenced is set, and clears neither, as the kernel's scan does.

use crate::consts::*;
use crate::huge_memory::thp_vma_fits_pmd;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::kthread::KthreadNext;
use crate::mm_types::*;
use crate::mmap::{Vma, VM_NOHUGEPAGE};
use crate::page_alloc::{GFP_TRANSHUGE, GFP_TRANSHUGE_LIGHT};
use crate::pgtable::*;
use crate::trace::trace_event;
use crate::vmstat::Ev;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// enum scan_result (mm/khugepaged.c, 6.18: SCAN_PAGE_RO is gone, khugepaged collapses
/// read-only ranges too) plus SCAN_PAGE_LAZYFREE (seed 002 v4+).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScanResult {
    Fail,
    Succeed,
    PmdNull,
    PmdNone,
    PmdMapped,
    ExceedNonePte,
    ExceedSwapPte,
    ExceedSharedPte,
    PteNonPresent,
    PteUffdWp,
    PteMappedHugepage,
    LackReferencedPage,
    PageNull,
    ScanAbort,
    PageCount,
    PageLru,
    PageLock,
    PageAnon,
    PageCompound,
    AnyProcess,
    VmaNull,
    VmaCheck,
    AddressRange,
    DelPageLru,
    AllocHugePageFail,
    CgroupChargeFail,
    Truncated,
    PageHasPrivate,
    StoreFailed,
    CopyMc,
    PageFilled,
    PageLazyfree,
}

impl ScanResult {
    /// The enum's name as the kernel source spells it.
    pub fn name(self) -> &'static str {
        use ScanResult::*;
        match self {
            Fail => "SCAN_FAIL",
            Succeed => "SCAN_SUCCEED",
            PmdNull => "SCAN_PMD_NULL",
            PmdNone => "SCAN_PMD_NONE",
            PmdMapped => "SCAN_PMD_MAPPED",
            ExceedNonePte => "SCAN_EXCEED_NONE_PTE",
            ExceedSwapPte => "SCAN_EXCEED_SWAP_PTE",
            ExceedSharedPte => "SCAN_EXCEED_SHARED_PTE",
            PteNonPresent => "SCAN_PTE_NON_PRESENT",
            PteUffdWp => "SCAN_PTE_UFFD_WP",
            PteMappedHugepage => "SCAN_PTE_MAPPED_HUGEPAGE",
            LackReferencedPage => "SCAN_LACK_REFERENCED_PAGE",
            PageNull => "SCAN_PAGE_NULL",
            ScanAbort => "SCAN_SCAN_ABORT",
            PageCount => "SCAN_PAGE_COUNT",
            PageLru => "SCAN_PAGE_LRU",
            PageLock => "SCAN_PAGE_LOCK",
            PageAnon => "SCAN_PAGE_ANON",
            PageCompound => "SCAN_PAGE_COMPOUND",
            AnyProcess => "SCAN_ANY_PROCESS",
            VmaNull => "SCAN_VMA_NULL",
            VmaCheck => "SCAN_VMA_CHECK",
            AddressRange => "SCAN_ADDRESS_RANGE",
            DelPageLru => "SCAN_DEL_PAGE_LRU",
            AllocHugePageFail => "SCAN_ALLOC_HUGE_PAGE_FAIL",
            CgroupChargeFail => "SCAN_CGROUP_CHARGE_FAIL",
            Truncated => "SCAN_TRUNCATED",
            PageHasPrivate => "SCAN_PAGE_HAS_PRIVATE",
            StoreFailed => "SCAN_STORE_FAILED",
            CopyMc => "SCAN_COPY_MC",
            PageFilled => "SCAN_PAGE_FILLED",
            PageLazyfree => "SCAN_PAGE_LAZYFREE",
        }
    }
    /// The string the tracepoints print (SCAN_STATUS in include/trace/events/huge_memory.h).
    pub fn status(self) -> &'static str {
        use ScanResult::*;
        match self {
            Fail => "failed",
            Succeed => "succeeded",
            PmdNull => "pmd_null",
            PmdNone => "pmd_none",
            PmdMapped => "page_pmd_mapped",
            ExceedNonePte => "exceed_none_pte",
            ExceedSwapPte => "exceed_swap_pte",
            ExceedSharedPte => "exceed_shared_pte",
            PteNonPresent => "pte_non_present",
            PteUffdWp => "pte_uffd_wp",
            PteMappedHugepage => "pte_mapped_hugepage",
            LackReferencedPage => "lack_referenced_page",
            PageNull => "page_null",
            ScanAbort => "scan_aborted",
            PageCount => "not_suitable_page_count",
            PageLru => "page_not_in_lru",
            PageLock => "page_locked",
            PageAnon => "page_not_anon",
            PageCompound => "page_compound",
            AnyProcess => "no_process_for_page",
            VmaNull => "vma_null",
            VmaCheck => "vma_check_failed",
            AddressRange => "not_suitable_address_range",
            DelPageLru => "could_not_delete_page_from_lru",
            AllocHugePageFail => "alloc_huge_page_failed",
            CgroupChargeFail => "ccgroup_charge_failed",
            Truncated => "truncated",
            PageHasPrivate => "page_has_private",
            StoreFailed => "store_failed",
            CopyMc => "copy_poisoned_page",
            PageFilled => "page_filled",
            PageLazyfree => "page_lazyfree",
        }
    }
    /// madvise_collapse_errno()
    pub fn collapse_errno(self) -> &'static str {
        use ScanResult::*;
        match self {
            AllocHugePageFail => "ENOMEM",
            CgroupChargeFail | ExceedNonePte => "EBUSY",
            PageCount | PageLock | PageLru | DelPageLru | PageFilled => "EAGAIN",
            _ => "EINVAL",
        }
    }
}

/// What khugepaged is waiting for between steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KhugepagedWait {
    /// running (or never started)
    #[default]
    None,
    /// wait_event_freezable_timeout(khugepaged_should_wakeup()): until `expire` ns or a
    /// knob write (which resets khugepaged_sleep_expire to 0)
    Scan { expire: u64 },
    /// wait_event_freezable(khugepaged_wait_event()): until the list is non-empty
    Idle,
    /// khugepaged_alloc_sleep(): any wake-up ends it
    Alloc,
}

/// One khugepaged_do_scan() call in progress (it spans several engine steps).
#[derive(Clone, Copy, Debug, Default)]
pub struct DoScan {
    pub progress: u64,
    pub pages: u64,
    pub pass_through_head: u32,
    pub wait: bool,
}

/// Counters of one full scan (the cursor went once round the list).
#[derive(Clone, Debug, Default)]
pub struct FullScan {
    pub start_ns: u64,
    pub end_ns: u64,
    /// progress units spent (x 4 KiB = the "progress size" the seed's bpftrace sums)
    pub progress: u64,
    /// hpage_collapse_scan_pmd results by name
    pub results: BTreeMap<&'static str, u64>,
    /// khugepaged_scan_mm_slot calls
    pub mm_visits: u64,
}

/// Per-mm history for experiments (time to collapse).
#[derive(Clone, Debug, Default)]
pub struct MmHistory {
    pub entered_ns: Option<u64>,
    pub collapses: u64,
    pub first_collapse_ns: Option<u64>,
    pub last_collapse_ns: Option<u64>,
    pub removed_collapsed: u64,
    pub moved_to_tail: u64,
}

/// struct khugepaged_scan plus the sysfs counters and what thplab records.
#[derive(Clone, Debug, Default)]
pub struct KhugepagedState {
    /// the mm_slot list (khugepaged_scan.mm_head), in scan order
    pub mm_slots: std::collections::VecDeque<MmId>,
    /// khugepaged_scan.mm_slot (an mm id) and khugepaged_scan.address
    pub cursor: Option<MmId>,
    pub address: u64,
    /// sysfs pages_collapsed, full_scans
    pub pages_collapsed: u64,
    pub full_scans: u64,
    pub wait: KhugepagedWait,
    pub pass: Option<DoScan>,
    /// skip_collapsed (v1): every range of the cursor mm seen in this visit is collapsed
    pub cursor_all_collapsed: bool,
    /// statistics
    pub results: BTreeMap<&'static str, u64>,
    pub cur_full: FullScan,
    pub full_scan_log: Vec<FullScan>,
    pub collapse_lock_ns: Vec<u64>,
    pub madv_collapse_ns: Vec<u64>,
    pub mm_hist: BTreeMap<MmId, MmHistory>,
    pub scan_progress_total: u64,
}

/// collapse_control: who collapses, and its per-node page counts.
pub struct CollapseControl {
    pub is_khugepaged: bool,
    pub node_load: Vec<u32>,
}

/// What the candidacy test saw, for the tracepoint and the collapse.
#[derive(Default, Clone, Copy)]
struct ScanPmd {
    referenced: u32,
    none_or_zero: u32,
    unmapped: u32,
    pfn: Option<u64>,
}

impl Kernel {
    // ------------------------------------------------------------------
    // the mm_slot list
    // ------------------------------------------------------------------

    /// khugepaged_enter_vma(vma, vm_flags): when the mm is not on the list yet
    /// (MMF_VM_HUGEPAGE), PMD THP is enabled at all (hugepage_pmd_enabled) and the VMA
    /// passes thp_vma_allowable_order(vma, vm_flags, TVA_KHUGEPAGED, PMD_ORDER) — THP
    /// allowed for `vm_flags` by the sysfs knobs, not VM_NOHUGEPAGE nor prctl-disabled, a
    /// whole aligned 2 MiB range inside it, and an anon_vma — __khugepaged_enter() adds
    /// the mm at the list's tail (behind the cursor) and wakes khugepaged when the list was
    /// empty. Callers (6.18): do_huge_pmd_anonymous_page() after vmf_anon_prepare(),
    /// hugepage_madvise(MADV_HUGEPAGE), vma_merge_new_range() / vma_merge_existing_range()
    /// on their merge target (mmap, madvise, mprotect), and khugepaged_fork().
    pub fn khugepaged_enter_vma(&mut self, mm: MmId, v: &Vma, vm_flags: u32) {
        if self.mms[mm].on_khugepaged || !self.cfg.hugepage_pmd_enabled() || !self.mms[mm].alive {
            return;
        }
        if !self.thp_vma_allowable_khugepaged(mm, v, vm_flags) {
            return;
        }
        self.khugepaged_enter(mm);
    }

    /// khugepaged_enter_vma(vma, vma->vm_flags) for the VMA starting at `start`.
    pub fn khugepaged_enter_vma_at(&mut self, mm: MmId, start: u64) {
        if let Some(v) = self.mms[mm].vmas.get(&start).cloned() {
            self.khugepaged_enter_vma(mm, &v, v.flags);
        }
    }

    /// __khugepaged_enter()
    fn khugepaged_enter(&mut self, mm: MmId) {
        let wakeup = self.khugepaged.mm_slots.is_empty();
        self.mms[mm].on_khugepaged = true;
        self.khugepaged.mm_slots.push_back(mm);
        let t = self.clock.now + self.clock.cost;
        self.khugepaged.mm_hist.entry(mm).or_default().entered_ns.get_or_insert(t);
        if wakeup {
            self.wake(Kthread::Khugepaged);
        }
    }

    /// thp_vma_allowable_order(vma, vm_flags, TVA_KHUGEPAGED, PMD_ORDER) for an anonymous
    /// VMA (include/linux/huge_mm.h, __thp_vma_allowable_orders()): the sysfs/per-size
    /// knobs and vma_thp_disabled() (thp_vma_allowable_flags), the size check
    /// (thp_vma_suitable_order at vm_end - HPAGE_PMD_SIZE: an aligned 2 MiB range fits),
    /// and `if (!vma->anon_vma) return 0` (only smaps and the page fault skip it).
    pub fn thp_vma_allowable_khugepaged(&self, mm: MmId, v: &Vma, vm_flags: u32) -> bool {
        self.thp_vma_allowable_flags(mm, vm_flags) && thp_vma_fits_pmd(v) && v.anon_vma.is_some()
    }

    /// __khugepaged_exit(): the slot goes at once unless it is the cursor, which
    /// khugepaged's next visit collects (collect_mm_slot).
    pub fn khugepaged_exit(&mut self, mm: MmId) {
        if self.mms[mm].on_khugepaged && self.khugepaged.cursor != Some(mm) {
            self.mms[mm].on_khugepaged = false;
            self.khugepaged.mm_slots.retain(|&m| m != mm);
        }
    }

    /// Seed 002 v1, "move mm to list tail when MADV_COLD/MADV_FREE" (switch
    /// thplab.khugepaged_cold_to_tail): called from madvise's COLD/FREE branch. The
    /// cursor's own slot stays where it is (the scan is inside it).
    pub fn khugepaged_cold_to_tail(&mut self, mm: MmId) {
        if !self.cfg.khugepaged_cold_to_tail || !self.mms[mm].on_khugepaged || self.khugepaged.cursor == Some(mm) {
            return;
        }
        if let Some(pos) = self.khugepaged.mm_slots.iter().position(|&m| m == mm) {
            if pos + 1 != self.khugepaged.mm_slots.len() {
                self.khugepaged.mm_slots.remove(pos);
                self.khugepaged.mm_slots.push_back(mm);
            }
            self.khugepaged.mm_hist.entry(mm).or_default().moved_to_tail += 1;
        }
    }

    /// Knob writes khugepaged reacts to: scan_sleep_millisecs / alloc_sleep_millisecs
    /// stores reset khugepaged_sleep_expire and wake it; enabled changes run
    /// start_stop_khugepaged() (start, or wake when the list is non-empty; stop).
    pub fn khugepaged_knob_changed(&mut self, canon: &str, old_pmd_enabled: bool) {
        match canon {
            "transparent_hugepage/khugepaged/scan_sleep_millisecs"
            | "transparent_hugepage/khugepaged/alloc_sleep_millisecs" => {
                if let KhugepagedWait::Scan { .. } = self.khugepaged.wait {
                    self.khugepaged.wait = KhugepagedWait::Scan { expire: 0 };
                }
                self.wake(Kthread::Khugepaged);
            }
            _ => {}
        }
        let now_enabled = self.cfg.hugepage_pmd_enabled();
        if now_enabled && !old_pmd_enabled {
            // start_stop_khugepaged(): kthread_run(), and a fresh thread scans at once
            self.khugepaged.wait = KhugepagedWait::None;
            self.wake(Kthread::Khugepaged);
        }
    }

    fn khugepaged_has_work(&self) -> bool {
        !self.khugepaged.mm_slots.is_empty() && self.cfg.hugepage_pmd_enabled()
    }

    /// hpage_collapse_test_exit()
    fn collapse_test_exit(&self, mm: MmId) -> bool {
        !self.mms[mm].alive
    }
    /// hpage_collapse_test_exit_or_disable(): exiting or prctl(PR_SET_THP_DISABLE)
    fn collapse_test_exit_or_disable(&self, mm: MmId) -> bool {
        !self.mms[mm].alive || self.mms[mm].thp_disable
    }

    // ------------------------------------------------------------------
    // the kernel thread
    // ------------------------------------------------------------------

    /// One step of khugepaged(): a khugepaged_scan_mm_slot() call of the running
    /// khugepaged_do_scan(), then khugepaged_wait_work() when the pass is over.
    pub fn khugepaged_step(&mut self) -> KthreadNext {
        let now = self.clock.now;
        if !self.cfg.hugepage_pmd_enabled() {
            // kthread_stop(): the thread exits; its cursor slot is collected
            self.khugepaged.pass = None;
            self.khugepaged.wait = KhugepagedWait::None;
            if let Some(c) = self.khugepaged.cursor.take() {
                self.collect_mm_slot(c);
            }
            return KthreadNext::Wait;
        }
        match self.khugepaged.wait {
            // a wake_up while the wait condition is false: back to sleep
            KhugepagedWait::Scan { expire } if now < expire => return KthreadNext::Sleep(expire - now),
            KhugepagedWait::Idle if self.khugepaged.mm_slots.is_empty() => return KthreadNext::Wait,
            _ => {}
        }
        self.khugepaged.wait = KhugepagedWait::None;
        let mut p = self.khugepaged.pass.take().unwrap_or(DoScan {
            progress: 0,
            pages: self.cfg.pages_to_scan.max(1),
            pass_through_head: 0,
            wait: true,
        });
        // one iteration of khugepaged_do_scan()'s loop: it takes khugepaged_mm_lock and looks
        // at the mm under the cursor even when it scans nothing (a THP-disabled or exiting mm,
        // the iteration that ends a pass); charged as one PMD-level step, so a pass never costs 0
        self.charge(self.costs.pmd_walk_ns);
        if self.khugepaged.cursor.is_none() {
            p.pass_through_head += 1;
        }
        let mut result = ScanResult::Succeed;
        if self.khugepaged_has_work() && p.pass_through_head < 2 {
            let (prog, r) = self.khugepaged_scan_mm_slot(p.pages - p.progress.min(p.pages));
            p.progress += prog;
            result = r;
        } else {
            p.progress = p.pages;
        }
        if p.progress < p.pages {
            if result == ScanResult::AllocHugePageFail {
                if p.wait {
                    // khugepaged_alloc_sleep(), then the same pass goes on
                    p.wait = false;
                    self.khugepaged.pass = Some(p);
                    self.khugepaged.wait = KhugepagedWait::Alloc;
                    return KthreadNext::Sleep(self.cfg.alloc_sleep_ms * 1_000_000);
                }
            } else {
                self.khugepaged.pass = Some(p);
                return KthreadNext::Again;
            }
        }
        self.khugepaged_wait_work()
    }

    /// khugepaged_wait_work()
    fn khugepaged_wait_work(&mut self) -> KthreadNext {
        if self.khugepaged_has_work() {
            let ms = self.cfg.scan_sleep_ms;
            if ms == 0 {
                return KthreadNext::Again;
            }
            let d = ms * 1_000_000;
            self.khugepaged.wait = KhugepagedWait::Scan { expire: self.clock.now + self.clock.cost + d };
            return KthreadNext::Sleep(d);
        }
        self.khugepaged.wait = KhugepagedWait::Idle;
        KthreadNext::Wait
    }

    /// collect_mm_slot(): free the slot of an exiting mm.
    fn collect_mm_slot(&mut self, mm: MmId) {
        if self.collapse_test_exit(mm) {
            self.mms[mm].on_khugepaged = false;
            self.khugepaged.mm_slots.retain(|&m| m != mm);
        }
    }

    /// khugepaged_scan_mm_slot(pages, &result): scan the cursor mm from the resume
    /// address until `pages` progress is spent, a collapse drops the mmap lock, or the
    /// mm is done (then the cursor moves on, counting a full scan at the list's end).
    pub fn khugepaged_scan_mm_slot(&mut self, pages: u64) -> (u64, ScanResult) {
        let mut result = ScanResult::Fail;
        let mm = match self.khugepaged.cursor {
            Some(m) => m,
            None => {
                let Some(&first) = self.khugepaged.mm_slots.front() else { return (0, result) };
                self.khugepaged.cursor = Some(first);
                self.khugepaged.address = 0;
                self.khugepaged.cursor_all_collapsed = true;
                if self.khugepaged.cur_full.start_ns == 0 && self.khugepaged.cur_full.mm_visits == 0 {
                    self.khugepaged.cur_full.start_ns = self.clock.now + self.clock.cost;
                }
                first
            }
        };
        self.khugepaged.cur_full.mm_visits += 1;
        let mut progress = 1u64;
        // `vma_left`: the walk stopped inside the mm (the kernel's `vma != NULL`)
        let mut vma_left = false;
        if !self.collapse_test_exit_or_disable(mm) {
            let vmas: Vec<Vma> =
                self.mms[mm].vmas.values().filter(|v| v.end > self.khugepaged.address).cloned().collect();
            'outer: for v in vmas {
                self.charge(self.costs.pmd_walk_ns);
                if self.collapse_test_exit_or_disable(mm) {
                    progress += 1;
                    vma_left = true;
                    break;
                }
                // thp_vma_allowable_order(vma, vma->vm_flags, TVA_KHUGEPAGED, PMD_ORDER)
                if !self.thp_vma_allowable_khugepaged(mm, &v, v.flags) {
                    progress += 1;
                    continue;
                }
                let hstart = (v.start + HPAGE_PMD_SIZE - 1) & !(HPAGE_PMD_SIZE - 1);
                let hend = v.end & !(HPAGE_PMD_SIZE - 1);
                if self.khugepaged.address > hend {
                    progress += 1;
                    continue;
                }
                if self.khugepaged.address < hstart {
                    self.khugepaged.address = hstart;
                }
                while self.khugepaged.address < hend {
                    if self.collapse_test_exit_or_disable(mm) {
                        vma_left = true;
                        break 'outer;
                    }
                    let addr = self.khugepaged.address;
                    let mut cc = CollapseControl { is_khugepaged: true, node_load: vec![0; self.pm.nodes.len()] };
                    let (r, locked) = self.hpage_collapse_scan_pmd(mm, addr, &mut cc);
                    result = r;
                    if r == ScanResult::Succeed {
                        self.khugepaged.pages_collapsed += 1;
                    }
                    if !matches!(
                        r,
                        ScanResult::Succeed | ScanResult::PmdMapped | ScanResult::PmdNone | ScanResult::PmdNull
                    ) {
                        self.khugepaged.cursor_all_collapsed = false;
                    }
                    *self.khugepaged.results.entry(r.name()).or_insert(0) += 1;
                    *self.khugepaged.cur_full.results.entry(r.name()).or_insert(0) += 1;
                    self.khugepaged.address += HPAGE_PMD_SIZE;
                    // seed 002 "refine scan progress number": a range with nothing to look at costs ~1
                    let cheap = self.cfg.khugepaged_cheap_progress
                        && matches!(r, ScanResult::PmdMapped | ScanResult::PmdNone | ScanResult::PmdNull);
                    progress += if cheap { 1 } else { HPAGE_PMD_NR };
                    if !locked {
                        // collapse_huge_page() dropped the mmap lock: back to the caller
                        vma_left = true;
                        break 'outer;
                    }
                    if progress >= pages {
                        vma_left = true;
                        break 'outer;
                    }
                }
            }
        }
        let exit = self.collapse_test_exit(mm);
        let disabled_next = self.cfg.khugepaged_disabled_next && self.collapse_test_exit_or_disable(mm);
        if exit || !vma_left || disabled_next {
            let all_collapsed = self.khugepaged.cursor_all_collapsed && !vma_left;
            let pos = self.khugepaged.mm_slots.iter().position(|&m| m == mm);
            let next = pos.and_then(|p| self.khugepaged.mm_slots.get(p + 1)).copied();
            match next {
                Some(n) => {
                    self.khugepaged.cursor = Some(n);
                    self.khugepaged.address = 0;
                    self.khugepaged.cursor_all_collapsed = true;
                }
                None => {
                    self.khugepaged.cursor = None;
                    self.khugepaged.full_scans += 1;
                }
            }
            self.collect_mm_slot(mm);
            // seed 002 v1, "remove mm when all memory has been collapsed"
            if self.cfg.khugepaged_skip_collapsed && !exit && all_collapsed && self.mms[mm].on_khugepaged {
                self.mms[mm].on_khugepaged = false;
                self.khugepaged.mm_slots.retain(|&m| m != mm);
                self.khugepaged.mm_hist.entry(mm).or_default().removed_collapsed += 1;
            }
        }
        self.khugepaged.cur_full.progress += progress;
        self.khugepaged.scan_progress_total += progress;
        let finished = self.khugepaged.cursor.is_none();
        trace_event!(self, mm_khugepaged_scan, mm = mm.0, progress = progress, full_scan_finished = finished as u32);
        if finished {
            let t = self.clock.now + self.clock.cost;
            let mut fs = std::mem::take(&mut self.khugepaged.cur_full);
            fs.end_ns = t;
            if self.khugepaged.full_scan_log.len() < 10_000 {
                self.khugepaged.full_scan_log.push(fs);
            }
            // the next full scan's time counts from here (sleeps included)
            self.khugepaged.cur_full.start_ns = t;
            self.khugepaged.cur_full.mm_visits = 0;
        }
        (progress, result)
    }

    // ------------------------------------------------------------------
    // the candidacy test
    // ------------------------------------------------------------------

    /// find_pmd_or_thp_or_none()
    fn find_pmd_or_thp_or_none(&self, mm: MmId, addr: u64) -> (ScanResult, Option<u32>) {
        match self.mms[mm].pmds.lookup(addr >> PMD_SHIFT).as_ref() {
            None => (ScanResult::PmdNone, None),
            Some(&sid) => match self.slots.get(sid).pmd {
                Pmd::Huge(_) | Pmd::HugeZero => (ScanResult::PmdMapped, Some(sid)),
                Pmd::SwapPmd(_) => (ScanResult::PmdNull, Some(sid)),
                Pmd::Table(_) => (ScanResult::Succeed, Some(sid)),
            },
        }
    }

    /// folio_maybe_mapped_shared(): the model has no fork, so anonymous folios are
    /// mapped by one mm only.
    fn folio_maybe_mapped_shared(&self, _head: u64) -> bool {
        false
    }

    /// The per-PTE checks shared by hpage_collapse_scan_pmd and
    /// __collapse_huge_page_isolate. Returns the verdict and what it counted.
    fn collapse_check_ptes(&mut self, sid: u32, cc: &mut CollapseControl) -> (ScanResult, ScanPmd) {
        let mut s = ScanPmd::default();
        let mut shared = 0u32;
        let khugepaged = cc.is_khugepaged;
        let (max_none, max_swap, max_shared) =
            (self.cfg.max_ptes_none, self.cfg.max_ptes_swap, self.cfg.max_ptes_shared);
        let table: [u32; PTRS_PER_PTE] = match &self.slots.get(sid).pmd {
            Pmd::Table(t) => **t,
            _ => return (ScanResult::PmdNull, s),
        };
        for &pte in table.iter() {
            self.charge(self.costs.pte_walk_ns);
            let kind = pte_kind(pte);
            if kind == K_SWAP || kind == K_MIGRATION {
                if kind == K_MIGRATION {
                    return (ScanResult::PteNonPresent, s);
                }
                s.unmapped += 1;
                if !khugepaged || s.unmapped <= max_swap {
                    continue;
                }
                self.rec.vm.count(Ev::THP_SCAN_EXCEED_SWAP_PTE);
                return (ScanResult::ExceedSwapPte, s);
            }
            if kind == pte_kind(PTE_NONE) || kind == K_ZERO {
                s.none_or_zero += 1;
                if !khugepaged || s.none_or_zero <= max_none {
                    continue;
                }
                self.rec.vm.count(Ev::THP_SCAN_EXCEED_NONE_PTE);
                return (ScanResult::ExceedNonePte, s);
            }
            if kind != K_PRESENT {
                return (ScanResult::PteNonPresent, s);
            }
            let pfn = pte_payload(pte) as u64;
            let f = self.pm.frames[pfn as usize];
            if tag(f) != TAG_ANON {
                return (ScanResult::PageNull, s);
            }
            let head = self.folio_head(pfn);
            s.pfn = Some(head);
            let hf = self.pm.frames[head as usize];
            // seed 002 v4+: a clean lazy-free folio is memory the application gave up
            if khugepaged && self.cfg.khugepaged_skip_lazyfree && lazyfree(hf) && !dirty(f) {
                return (ScanResult::PageLazyfree, s);
            }
            if self.folio_maybe_mapped_shared(head) {
                shared += 1;
                if khugepaged && shared > max_shared {
                    self.rec.vm.count(Ev::THP_SCAN_EXCEED_SHARE_PTE);
                    return (ScanResult::ExceedSharedPte, s);
                }
            }
            let nid = self.pm.node_of(pfn);
            cc.node_load[nid] += 1;
            if lru(hf) == LRU_NONE || isolated(hf) {
                return (ScanResult::PageLru, s);
            }
            // pte_young(pteval) || folio_test_young(folio) || folio_test_referenced(folio):
            // the accessed bit the workload's loads and stores set (on the folio's head, see
            // mm_types.rs) or PG_referenced (reclaim's second chance, folio_mark_accessed)
            if khugepaged && (young(hf) || referenced(hf)) {
                s.referenced += 1;
            }
        }
        if khugepaged && (s.referenced == 0 || (s.unmapped > 0 && (s.referenced as u64) < HPAGE_PMD_NR / 2)) {
            return (ScanResult::LackReferencedPage, s);
        }
        (ScanResult::Succeed, s)
    }

    /// hpage_collapse_scan_pmd(): the candidacy test of one 2 MiB range, and the
    /// collapse when it passes. Returns the result and whether the mmap lock is still
    /// held (false once collapse_huge_page ran).
    pub fn hpage_collapse_scan_pmd(&mut self, mm: MmId, addr: u64, cc: &mut CollapseControl) -> (ScanResult, bool) {
        self.charge(self.costs.pmd_walk_ns);
        let (r, sid) = self.find_pmd_or_thp_or_none(mm, addr);
        let mut s = ScanPmd::default();
        let mut result = r;
        let mut locked = true;
        if r == ScanResult::Succeed {
            let sid = sid.unwrap();
            let (r2, s2) = self.collapse_check_ptes(sid, cc);
            s = s2;
            result = r2;
            if result == ScanResult::Succeed {
                result = self.collapse_huge_page(mm, addr, s.referenced, s.unmapped, cc);
                locked = false;
            }
        }
        trace_event!(
            self,
            mm_khugepaged_scan_pmd,
            mm = mm.0,
            addr = format!("{addr:#x}"),
            pfn = s.pfn.map_or(-1, |p| p as i64),
            referenced = s.referenced,
            none_or_zero = s.none_or_zero,
            status = result.status(),
            unmapped = s.unmapped,
        );
        (result, locked)
    }

    // ------------------------------------------------------------------
    // the collapse
    // ------------------------------------------------------------------

    /// hugepage_vma_revalidate(): the VMA at `addr` still exists, may hold a PMD THP
    /// (sysfs enforced for khugepaged only; an anon_vma for both) and covers the whole range.
    fn hugepage_vma_revalidate(&self, mm: MmId, addr: u64, khugepaged: bool) -> Result<Vma, ScanResult> {
        if self.collapse_test_exit_or_disable(mm) {
            return Err(ScanResult::AnyProcess);
        }
        let Some(v) = self.mms[mm].find_vma(addr).cloned() else { return Err(ScanResult::VmaNull) };
        if addr < v.start || addr + HPAGE_PMD_SIZE > v.end {
            return Err(ScanResult::AddressRange);
        }
        // thp_vma_allowable_order(TVA_KHUGEPAGED or TVA_FORCED_COLLAPSE): both want an anon_vma
        let ok = if khugepaged {
            self.thp_vma_allowable_khugepaged(mm, &v, v.flags)
        } else {
            self.collapse_allowed_nosysfs(mm, v.flags) && v.anon_vma.is_some()
        };
        if !ok {
            return Err(ScanResult::VmaCheck);
        }
        Ok(v)
    }

    /// thp_vma_allowable_order() without TVA_ENFORCE_SYSFS (MADV_COLLAPSE): only
    /// VM_NOHUGEPAGE and prctl(PR_SET_THP_DISABLE) forbid.
    pub fn collapse_allowed_nosysfs(&self, mm: MmId, vm_flags: u32) -> bool {
        !self.mms[mm].thp_disable && vm_flags & VM_NOHUGEPAGE == 0
    }

    /// collapse_huge_page(mm, address, referenced, unmapped, cc)
    fn collapse_huge_page(
        &mut self,
        mm: MmId,
        haddr: u64,
        _referenced: u32,
        unmapped: u32,
        cc: &mut CollapseControl,
    ) -> ScanResult {
        let r = self.collapse_huge_page_inner(mm, haddr, unmapped, cc);
        trace_event!(
            self,
            mm_collapse_huge_page,
            mm = mm.0,
            isolated = (r == ScanResult::Succeed) as u32,
            status = r.status()
        );
        r
    }

    fn collapse_huge_page_inner(
        &mut self,
        mm: MmId,
        haddr: u64,
        unmapped: u32,
        cc: &mut CollapseControl,
    ) -> ScanResult {
        // alloc_charge_folio(): the node most of the pages are on (ties: lowest id)
        let nid = cc
            .node_load
            .iter()
            .enumerate()
            .max_by_key(|(i, &l)| (l, std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
            .unwrap_or(self.mms[mm].node);
        let gfp = if !cc.is_khugepaged || self.cfg.khugepaged_defrag { GFP_TRANSHUGE } else { GFP_TRANSHUGE_LIGHT };
        let Some(Pfn(head)) = self.alloc_pages(gfp, HPAGE_PMD_ORDER, nid) else {
            self.rec.vm.count(Ev::THP_COLLAPSE_ALLOC_FAILED);
            return ScanResult::AllocHugePageFail;
        };
        self.rec.vm.count(Ev::THP_COLLAPSE_ALLOC);
        // the allocation may have OOM-killed this very process
        let v = match self.hugepage_vma_revalidate(mm, haddr, cc.is_khugepaged) {
            Ok(v) => v,
            Err(e) => {
                self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
                return e;
            }
        };
        let sid = match self.find_pmd_or_thp_or_none(mm, haddr) {
            (ScanResult::Succeed, Some(sid)) => sid,
            (r, _) => {
                self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
                return r;
            }
        };
        // __collapse_huge_page_swapin(): fault in every swap PTE (read fault)
        if unmapped > 0 {
            let mut swapped_in = 0u32;
            for i in 0..HPAGE_PMD_NR {
                let pte = match &self.slots.get(sid).pmd {
                    Pmd::Table(t) => t[i as usize],
                    _ => PTE_NONE,
                };
                if pte_kind(pte) == K_SWAP {
                    let r = self.do_swap_page(mm, haddr + i * PAGE_SIZE, false);
                    if r != crate::memory::Fault::Ok
                        || !self.mms[mm].alive
                        || !self.mms[mm].pmds.contains_key(&(haddr >> PMD_SHIFT))
                    {
                        trace_event!(self, mm_collapse_huge_page_swapin, mm = mm.0, swapped_in = swapped_in, ret = 0);
                        self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
                        return ScanResult::Fail;
                    }
                    swapped_in += 1;
                }
            }
            trace_event!(self, mm_collapse_huge_page_swapin, mm = mm.0, swapped_in = swapped_in, ret = 1);
        }
        // mmap_write_lock from here to the end
        let lock_t0 = self.clock.cost;
        // pmdp_collapse_flush(): clear the PMD, flush the range (an IPI when the mm runs
        // on another CPU than khugepaged's)
        self.mms[mm].tlb.flush_range(haddr, haddr + HPAGE_PMD_SIZE);
        self.charge(self.costs.tlb_flush_ns);
        if cc.is_khugepaged && self.mms[mm].cpu != 0 {
            self.charge(self.costs.tlb_ipi_ns);
        }
        // __collapse_huge_page_isolate(): the checks again, under the locks
        let mut cc2 = CollapseControl { is_khugepaged: cc.is_khugepaged, node_load: vec![0; self.pm.nodes.len()] };
        let (r, s) = self.collapse_check_ptes(sid, &mut cc2);
        // __collapse_huge_page_isolate() takes no swap entries: a page the swap-in above read
        // may have been reclaimed again by a later swap-in's allocation (SCAN_PTE_NON_PRESENT)
        let r = if r == ScanResult::Succeed && s.unmapped > 0 { ScanResult::PteNonPresent } else { r };
        trace_event!(
            self,
            mm_collapse_huge_page_isolate,
            pfn = s.pfn.map_or(-1, |p| p as i64),
            none_or_zero = s.none_or_zero,
            referenced = s.referenced,
            status = r.status(),
        );
        if r != ScanResult::Succeed {
            self.pm.free_pages(Pfn(head), HPAGE_PMD_ORDER, &mut self.rec.vm);
            self.record_lock(lock_t0, cc.is_khugepaged);
            return r;
        }
        // __collapse_huge_page_copy(): copy the present pages, zero-fill the rest. Each
        // present page was locked and isolated from the LRU by __collapse_huge_page_isolate()
        // and is put back and released by __collapse_huge_page_copy_succeeded() (its PTE
        // cleared, its rmap removed): collapse_isolate_ns, beside the copy and the free
        let table: [u32; PTRS_PER_PTE] = match &self.slots.get(sid).pmd {
            Pmd::Table(t) => **t,
            _ => unreachable!("checked above"),
        };
        let mut contents = [0u16; PTRS_PER_PTE];
        for (i, &pte) in table.iter().enumerate() {
            if pte_kind(pte) == K_PRESENT {
                contents[i] = content(self.pm.frames[pte_payload(pte) as usize]);
                self.charge(self.costs.copy_4k_ns + self.costs.collapse_isolate_ns);
            } else {
                self.charge(self.costs.clear_4k_ns);
            }
        }
        // release the old PTEs and pages (rss, nr_anon_pages, LRU, partially mapped THPs)
        for (i, &pte) in table.iter().enumerate() {
            if pte_kind(pte) == K_PRESENT {
                self.zap_present_pte(mm, pte_payload(pte) as u64);
            }
            self.set_pte(sid, i, PTE_NONE);
        }
        // map the new THP by a huge PMD; the slot's table page becomes the deposit
        self.map_anon_folio_pmd(mm, sid, head, v.flags, true);
        for (i, &c) in contents.iter().enumerate() {
            let p = head as usize + i;
            self.pm.frames[p] = with_content(self.pm.frames[p], c);
        }
        self.record_lock(lock_t0, cc.is_khugepaged);
        let t = self.clock.now + self.clock.cost;
        let h = self.khugepaged.mm_hist.entry(mm).or_default();
        if cc.is_khugepaged {
            h.collapses += 1;
            h.first_collapse_ns.get_or_insert(t);
            h.last_collapse_ns = Some(t);
        }
        ScanResult::Succeed
    }

    fn record_lock(&mut self, t0: u64, khugepaged: bool) {
        if khugepaged && self.khugepaged.collapse_lock_ns.len() < 1_000_000 {
            self.khugepaged.collapse_lock_ns.push(self.clock.cost - t0);
        }
    }

    // ------------------------------------------------------------------
    // MADV_COLLAPSE
    // ------------------------------------------------------------------

    /// madvise_collapse() over one VMA piece [start, end): synchronous, limits and the
    /// young rule ignored, GFP_TRANSHUGE; SCAN_PMD_MAPPED counts as success. Returns
    /// the errno of the last failure (madvise_collapse_errno) or Ok.
    pub fn madvise_collapse_vma(&mut self, mm: MmId, start: u64, end: u64, vm_flags: u32) -> Result<(), &'static str> {
        if !self.collapse_allowed_nosysfs(mm, vm_flags) {
            return Err("EINVAL");
        }
        let t0 = self.clock.cost;
        let hstart = (start + HPAGE_PMD_SIZE - 1) & !(HPAGE_PMD_SIZE - 1);
        let hend = end & !(HPAGE_PMD_SIZE - 1);
        let want = if hend > hstart { (hend - hstart) >> PMD_SHIFT } else { 0 };
        let mut thps = 0u64;
        let mut last_fail = ScanResult::Fail;
        let mut addr = hstart;
        while addr < hend {
            if let Err(e) = self.hugepage_vma_revalidate(mm, addr, false) {
                last_fail = e;
                break;
            }
            let mut cc = CollapseControl { is_khugepaged: false, node_load: vec![0; self.pm.nodes.len()] };
            let (r, _) = self.hpage_collapse_scan_pmd(mm, addr, &mut cc);
            use ScanResult::*;
            match r {
                Succeed | PmdMapped => thps += 1,
                PmdNull | PteNonPresent | PteUffdWp | LackReferencedPage | PageNull | PageCount | PageLock
                | PageCompound | PageLru | DelPageLru => last_fail = r,
                _ => {
                    last_fail = r;
                    break;
                }
            }
            addr += HPAGE_PMD_SIZE;
        }
        if self.khugepaged.madv_collapse_ns.len() < 1_000_000 {
            self.khugepaged.madv_collapse_ns.push(self.clock.cost - t0);
        }
        if thps == want {
            Ok(())
        } else {
            Err(last_fail.collapse_errno())
        }
    }

    // ------------------------------------------------------------------
    // reporting
    // ------------------------------------------------------------------

    /// extra["khugepaged"]: the sysfs counters and what thplab recorded.
    pub fn khugepaged_report(&self) -> Value {
        let st = &self.khugepaged;
        let pct = |v: &Vec<u64>| -> Value {
            let mut s = v.clone();
            serde_json::to_value(thplab_workload::result::percentiles(&mut s)).unwrap_or(Value::Null)
        };
        let full: Vec<Value> = st
            .full_scan_log
            .iter()
            .map(|f| json!({"start_ns": f.start_ns, "end_ns": f.end_ns, "progress": f.progress, "progress_kb": f.progress * 4, "mm_visits": f.mm_visits, "results": f.results}))
            .collect();
        let mms: BTreeMap<String, Value> = st
            .mm_hist
            .iter()
            .map(|(m, h)| {
                (
                    self.mms.get(*m).map_or_else(|| m.to_string(), |x| x.name.clone()),
                    json!({"entered_ns": h.entered_ns, "collapses": h.collapses, "first_collapse_ns": h.first_collapse_ns,
                        "last_collapse_ns": h.last_collapse_ns, "removed_collapsed": h.removed_collapsed, "moved_to_tail": h.moved_to_tail}),
                )
            })
            .collect();
        let lock_total: u64 = st.collapse_lock_ns.iter().sum();
        json!({
            "pages_collapsed": st.pages_collapsed,
            "full_scans": st.full_scans,
            "mm_slots": self.khugepaged.mm_slots.len(),
            "scan_progress": st.scan_progress_total,
            "scan_results": st.results,
            "full_scan_log": full,
            "mmap_write_lock_ns_total": lock_total,
            "mmap_write_lock_ns": pct(&st.collapse_lock_ns),
            "madv_collapse_ns": pct(&st.madv_collapse_ns),
            "mms": mms,
        })
    }
}

impl Kernel {
    /// The candidacy verdict of the 2 MiB range at `addr` without collapsing it
    /// (find_pmd_or_thp_or_none + the per-PTE checks), for tests and tools.
    pub fn khugepaged_candidacy(&mut self, mm: MmId, addr: u64, is_khugepaged: bool) -> ScanResult {
        if self.mms[mm].find_vma(addr).is_none() {
            return ScanResult::VmaNull;
        }
        match self.find_pmd_or_thp_or_none(mm, addr) {
            (ScanResult::Succeed, Some(sid)) => {
                let mut cc = CollapseControl { is_khugepaged, node_load: vec![0; self.pm.nodes.len()] };
                self.collapse_check_ptes(sid, &mut cc).0
            }
            (r, _) => r,
        }
    }
}
