//! Free page reporting (mm/page_reporting.c, drivers/virtio/virtio_balloon.c): a VM guest
//! hands free blocks of at least `page_reporting_order` (pageblock_order by default) to its
//! host, which discards their backing; the guest's first touch of such memory later refaults
//! it in the host.
//!
//! 6.18's mechanism, modelled here:
//! - __free_one_page() ends with page_reporting_notify_free(order): a free block of at least
//!   the reporting order requests reporting (IDLE -> REQUESTED), and a request from IDLE
//!   schedules the work PAGE_REPORTING_DELAY (2 s) later (a putback by the reporting itself,
//!   FPI_SKIP_REPORT_NOTIFY, does not notify).
//! - page_reporting_process() walks every zone (if it is above its low watermark plus
//!   PAGE_REPORTING_CAPACITY blocks) and in each its free lists of order >= the reporting
//!   order; page_reporting_cycle() skips blocks already PageReported, isolates the others into
//!   a scatterlist of PAGE_REPORTING_CAPACITY (32) entries and, when it is full, reports it
//!   (the hypercall: the host discards the blocks) and puts the blocks back at the TAIL of
//!   their lists (__putback_isolated_page: FPI_TO_TAIL) with PageReported set unless they
//!   merged meanwhile. Each list gets a budget of DIV_ROUND_UP(nr_free of the order,
//!   32 * 16) report calls (plus the one that empties it); a list with budget left over
//!   re-requests reporting, and the work reschedules itself 2 s later while requested.
//! - __del_page_from_free_list() clears PageReported (an allocation, a merge into a larger
//!   buddy, the compaction free scanner); move_to_free_list keeps it.
//!
//! The host side: the pages of a reported block are unbacked until the guest next writes
//! them. The model tracks that per 4 KiB page (the host backs guest memory with 4 KiB pages:
//! a reported 2 MiB block refaults page by page as the guest touches it), so a 4 KiB
//! allocation from a reported block costs 1/512 of cost.refault_reported_2m (calibrated as
//! the extra cost of a THP fault, which clears all 512 pages, on a reported block).
//! Allocation is first touch (the fault clears the page, the kernel writes its own pages),
//! and so is the compaction migration target (the copy writes it).
//!
//! The report itself: the worker (a kworker running the delayed work) isolates the batch,
//! kicks the reporting virtqueue and sleeps until the host acks (virtballoon_free_page_report:
//! wait_event(vb->acked)); the batch stays off the free lists meanwhile. That wait is
//! REPORT_WAIT_PER_2M_NS per 2 MiB reported (measured, see there); the guest CPU time of the
//! walk is not charged (microseconds per batch against the host's tens of milliseconds).

use crate::consts::*;
use crate::kernel::Kernel;
use crate::kthread::KthreadNext;
use crate::mm_types::*;
use crate::mmzone::*;

/// PAGE_REPORTING_CAPACITY: scatterlist entries per report call.
pub const PAGE_REPORTING_CAPACITY: usize = 32;
/// PAGE_REPORTING_DELAY: 2 * HZ.
pub const PAGE_REPORTING_DELAY_NS: u64 = 2_000_000_000;
/// How long a report call keeps the worker waiting for the host's ack, per 2 MiB reported.
/// Measured on the reference host (Firecracker, 2026-11-23, docs/page_reporting.md): after
/// freeing 1 GiB of THPs, /proc/meminfo's MemFree sampled every ~1 ms dips by the 64 MiB of
/// a full scatterlist of pageblocks for 233-267 ms per pass, passes 2.25 s apart; the lists'
/// budgets then (buddyinfo) allowed at most 11 full calls a pass: >= ~22 ms a call of 32
/// blocks, ~690 us per 2 MiB. Not in the cost profile (no calibration step measures it yet).
pub const REPORT_WAIT_PER_2M_NS: u64 = 690_000;

/// The reporting device's state (prdev->state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrState {
    Idle,
    Requested,
    Active,
}

/// Where page_reporting_process() is in its pass (it sleeps inside it, waiting for the host).
#[derive(Clone, Debug, Default)]
struct PrPass {
    zi: usize,
    /// the zone passed its watermark check; the free list being walked is (order, mt)
    zone_started: bool,
    order: u32,
    mt: u8,
    /// inside page_reporting_cycle() of (order, mt), with this budget left
    in_cycle: bool,
    budget: i64,
    /// the scatterlist: isolated blocks (pfn, order)
    sg: Vec<(u64, u32)>,
    /// the scatterlist is with the host: drain it when the worker runs again
    waiting: bool,
    /// the zone's leftover report was sent
    leftover_sent: bool,
}

/// Free page reporting: the device's state, PageReported of free blocks, and which pages
/// the host has discarded. Owned by PhysMem (the free lists' hooks need it).
#[derive(Clone)]
pub struct PageReporting {
    /// a reporting device is registered (thplab.free_page_reporting)
    pub enabled: bool,
    /// page_reporting_order (thplab.page_reporting_order; pageblock_order by default, what
    /// virtio-balloon asks for on x86; the module parameter may set any order, above
    /// MAX_PAGE_ORDER none is reported)
    pub order: u32,
    pub state: PrState,
    /// page_reporting_notify_free() asked for the delayed work (the engine schedules it)
    pub schedule_requested: bool,
    pass: Option<PrPass>,
    /// PageReported, a bit per pfn (the head of a reported free block)
    reported: Vec<u64>,
    /// pages the host discarded and the guest has not touched since (a bit per pfn)
    unbacked: Vec<u64>,
    /// per pageblock: how many of its pages are unbacked
    pb_unbacked: Vec<u16>,
    /// report calls (batches) and blocks reported so far
    pub reports: u64,
    pub blocks_reported: u64,
    /// KiB reported so far (the reference host's page_reporting `reported_kib`, host.rs)
    pub kib_reported: u64,
    /// when the worker's first pass of the run is due (page_reporting_initial): 2 s after
    /// page_reporting_register() at boot, or after the frees of the back-fill before the
    /// run (`Kernel::back_free_memory`)
    pub initial_delay_ns: u64,
}

/// The pages of [p, end) in p's word of a bitmap with a bit per pfn: the word's index, the
/// mask of those pages, and the first pfn past them.
#[inline(always)]
fn word_span(p: u64, end: u64) -> (usize, u64, u64) {
    let lo = p % 64;
    let hi = (end - (p - lo)).min(64);
    let mask = if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
    ((p / 64) as usize, mask, p - lo + hi)
}

impl PageReporting {
    pub fn new(max_pfn: u64) -> PageReporting {
        let npb = max_pfn.div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        PageReporting {
            enabled: false,
            order: PAGEBLOCK_ORDER,
            // page_reporting_register() requests the initial flush of the zones
            state: PrState::Requested,
            schedule_requested: false,
            pass: None,
            reported: vec![0; max_pfn.div_ceil(64) as usize],
            unbacked: vec![0; max_pfn.div_ceil(64) as usize],
            pb_unbacked: vec![0; npb],
            reports: 0,
            blocks_reported: 0,
            kib_reported: 0,
            initial_delay_ns: PAGE_REPORTING_DELAY_NS,
        }
    }

    /// page_reporting_notify_free() / __page_reporting_request(): a block of `order` was
    /// freed into the buddy lists.
    #[inline]
    pub fn notify_free(&mut self, order: u32) {
        if !self.enabled || order < self.order || self.state == PrState::Requested {
            return;
        }
        let was = std::mem::replace(&mut self.state, PrState::Requested);
        if was == PrState::Idle {
            self.schedule_requested = true;
        }
    }

    /// PageReported of the free block at `pfn`.
    #[inline]
    pub fn page_reported(&self, pfn: u64) -> bool {
        self.reported[(pfn / 64) as usize] >> (pfn % 64) & 1 == 1
    }

    /// __ClearPageReported() as the block leaves its free list.
    #[inline]
    pub fn clear_reported(&mut self, pfn: u64, order: u32) {
        if order >= self.order {
            self.reported[(pfn / 64) as usize] &= !(1 << (pfn % 64));
        }
    }

    /// __SetPageReported()
    pub fn set_reported(&mut self, pfn: u64) {
        self.reported[(pfn / 64) as usize] |= 1 << (pfn % 64);
    }

    /// The host discarded [pfn, pfn + 2^order).
    fn discard(&mut self, pfn: u64, order: u32) {
        let end = pfn + (1u64 << order);
        let mut p = pfn;
        while p < end {
            let (w, mask, next) = word_span(p, end);
            let w = &mut self.unbacked[w];
            self.pb_unbacked[(p >> PAGEBLOCK_ORDER) as usize] += (mask & !*w).count_ones() as u16;
            *w |= mask;
            p = next;
        }
    }

    /// The guest touches [pfn, pfn + 2^order): returns how many of its pages the host had
    /// discarded (each refaults now), and marks them backed.
    #[inline]
    pub fn touch(&mut self, pfn: u64, order: u32) -> u64 {
        let end = pfn + (1u64 << order);
        let mut n = 0;
        let mut pb = pfn >> PAGEBLOCK_ORDER;
        while pb << PAGEBLOCK_ORDER < end {
            if self.pb_unbacked[pb as usize] != 0 {
                let s = pfn.max(pb << PAGEBLOCK_ORDER);
                let e = end.min((pb + 1) << PAGEBLOCK_ORDER);
                let mut got = 0u64;
                let mut p = s;
                while p < e {
                    let (w, mask, next) = word_span(p, e);
                    got += (self.unbacked[w] & mask).count_ones() as u64;
                    self.unbacked[w] &= !mask;
                    p = next;
                }
                self.pb_unbacked[pb as usize] -= got as u16;
                n += got;
            }
            pb += 1;
        }
        n
    }

    /// Free pages the worker holds isolated (its scatterlist).
    pub fn isolated_pages(&self) -> u64 {
        self.pass.as_ref().map_or(0, |p| p.sg.iter().map(|&(_, o)| 1u64 << o).sum())
    }

    /// Pages the host has discarded and the guest not touched since.
    pub fn nr_unbacked(&self) -> u64 {
        self.pb_unbacked.iter().map(|&n| n as u64).sum()
    }

    /// Free blocks marked PageReported.
    pub fn nr_reported(&self) -> u64 {
        self.reported.iter().map(|w| w.count_ones() as u64).sum()
    }
}

impl Kernel {
    /// The guest's first touch of [pfn, pfn + 2^order) (an allocation, a migration target):
    /// pages the host took back refault, each 1/512 of cost.refault_reported_2m.
    #[inline]
    pub fn page_reporting_touch(&mut self, pfn: u64, order: u32) {
        if !self.pm.pr.enabled {
            return;
        }
        let n = self.pm.pr.touch(pfn, order);
        if n > 0 {
            self.charge(n * self.costs.refault_reported_2m_ns / PAGEBLOCK_NR_PAGES);
        }
    }

    /// The reporting worker's state when the run starts: a pass due `initial_delay_ns`
    /// later when reporting is requested (the initial flush PAGE_REPORTING_DELAY after
    /// page_reporting_register(), or the back-fill's frees), else idle.
    pub fn page_reporting_initial(&self) -> KthreadNext {
        if self.pm.pr.enabled && self.pm.pr.state == PrState::Requested {
            KthreadNext::Sleep(self.pm.pr.initial_delay_ns)
        } else {
            KthreadNext::Wait
        }
    }

    /// An idle guest's free memory: the worker's passes run until it goes idle (each pass
    /// reports a budget of every list, 2 s apart, ~30 s for a whole machine), so every free
    /// block of at least the reporting order that page_reporting_cycle() could isolate is
    /// PageReported, at the tail of its list, and discarded by the host. The host's acks
    /// are not waited for: this is the state before the run, not part of it.
    pub fn page_reporting_settle(&mut self) {
        if !self.pm.pr.enabled {
            return;
        }
        // a pass reports (budget + 1) x 32 blocks of every list; a bound for a model bug
        for _ in 0..10_000_000u64 {
            if self.page_reporting_step() == KthreadNext::Wait {
                break;
            }
        }
        self.pm.pr.schedule_requested = false;
    }

    /// The reported free blocks of a guest as the live run found them
    /// (thplab.free_page_reporting_start=found): `reported` lists per zone and order the
    /// free blocks that were PageReported (the live runner reads them from /proc/kpageflags,
    /// host.rs `reported_free_blocks`), `buddyinfo` the free blocks then. The model's
    /// machine is its own size, so each order of each zone gets the same share of its free
    /// blocks reported as the live one had (every one where the live zone's were), taken
    /// from the tails of its free lists, where page_reporting_drain() puts reported blocks,
    /// each list its share; their pages are discarded by the host. The pages a reported
    /// block lost to a merge or a split since (discarded, no longer PageReported) are not
    /// known and stay backed. The worker is idle: a later free requests the next pass.
    pub fn page_reporting_found(&mut self, reported: &str, buddyinfo: &str) {
        use thplab_workload::machine::buddyinfo_row;
        if !self.pm.pr.enabled {
            return;
        }
        for zi in 0..self.pm.zones.len() {
            let (node, name) = (self.pm.zones[zi].node as u32, self.pm.zones[zi].name);
            let r = buddyinfo_row(reported, node, name).unwrap_or_default();
            let b = buddyinfo_row(buddyinfo, node, name).unwrap_or_default();
            for order in self.pm.pr.order..NR_PAGE_ORDERS as u32 {
                let o = order as usize;
                let (r_o, b_o) = (r.get(o).copied().unwrap_or(0), b.get(o).copied().unwrap_or(0));
                let have = self.pm.zones[zi].nr_free_order(o);
                if r_o == 0 || have == 0 {
                    continue;
                }
                let share = if r_o >= b_o { 1.0 } else { r_o as f64 / b_o as f64 };
                for mt in 0..NR_FREE_LISTS as u8 {
                    let list = self.pm.free_list(zi, order, mt);
                    let mut want = (share * list.len as f64).round() as u64;
                    let mut p = list.tail;
                    while want > 0 && p != NIL {
                        let pfn = p as u64;
                        p = self.pm.free_prev(order, p);
                        if !self.pm.pr.page_reported(pfn) {
                            self.pm.pr.set_reported(pfn);
                            self.pm.pr.discard(pfn, order);
                            want -= 1;
                        }
                    }
                }
            }
        }
        self.pm.pr.state = PrState::Idle;
        self.pm.pr.schedule_requested = false;
    }

    /// page_reporting_process(), one step: up to the next report call (then the worker
    /// sleeps until the host acks), or to the end of the pass.
    pub fn page_reporting_step(&mut self) -> KthreadNext {
        let pr = &mut self.pm.pr;
        if !pr.enabled {
            return KthreadNext::Wait;
        }
        let mut pass = match pr.pass.take() {
            Some(p) => p,
            None => {
                if pr.state != PrState::Requested {
                    return KthreadNext::Wait;
                }
                // "Active", so that a request during the pass is seen at its end
                pr.state = PrState::Active;
                PrPass::default()
            }
        };
        if pass.waiting {
            self.page_reporting_drain(&mut pass);
        }
        let cap = PAGE_REPORTING_CAPACITY;
        loop {
            if pass.zi >= self.pm.zones.len() {
                break;
            }
            let zi = pass.zi;
            if !pass.zone_started {
                // page_reporting_process_zone(): only with room above the low watermark
                let z = &self.pm.zones[zi];
                let mark = z.wmark(WMARK_LOW) + ((cap as u64) << self.pm.pr.order);
                if !z.populated() || !self.pm.zone_watermark_ok(zi, 0, mark, 0, 0) {
                    pass.zi += 1;
                    continue;
                }
                pass.zone_started = true;
                pass.order = self.pm.pr.order;
                pass.mt = 0;
                pass.in_cycle = false;
                pass.leftover_sent = false;
            }
            if pass.order as usize >= NR_PAGE_ORDERS {
                // the leftover pages are reported before the next zone
                if !pass.sg.is_empty() && !pass.leftover_sent {
                    pass.leftover_sent = true;
                    return self.page_reporting_report(pass);
                }
                pass.zi += 1;
                pass.zone_started = false;
                continue;
            }
            if pass.mt as usize >= NR_FREE_LISTS {
                pass.order += 1;
                pass.mt = 0;
                continue;
            }
            let (order, mt) = (pass.order, pass.mt);
            if !pass.in_cycle {
                // page_reporting_cycle(): skip an empty list; the budget
                if self.pm.free_list(zi, order, mt).len == 0 {
                    pass.mt += 1;
                    continue;
                }
                let nr_free = self.pm.zones[zi].nr_free_order(order as usize);
                pass.budget = nr_free.div_ceil((cap * 16) as u64) as i64;
                pass.in_cycle = true;
            }
            // walk the list from its head (after a report the kernel restarts there too)
            let mut p = self.pm.free_list(zi, order, mt).head;
            let mut end_at: Option<u64> = None;
            let mut report = false;
            while p != NIL {
                let pfn = p as u64;
                let next = self.pm.free_next(order, p);
                if self.pm.pr.page_reported(pfn) {
                    p = next;
                    continue;
                }
                if pass.budget < 0 {
                    // budget spent: ask for another pass
                    self.pm.pr.state = PrState::Requested;
                    end_at = Some(pfn);
                    break;
                }
                if pass.sg.len() < cap {
                    if self.pm.isolate_free_page(zi, pfn).is_none() {
                        end_at = Some(pfn);
                        break;
                    }
                    self.pm.frames[pfn as usize] = make_isolated_free(order);
                    pass.sg.push((pfn, order));
                    p = next;
                    continue;
                }
                // the scatterlist is full: this page heads the list while the lock is dropped
                self.pm.rotate_free_list(zi, order, mt, pfn, false);
                report = true;
                break;
            }
            if report {
                pass.budget -= 1;
                return self.page_reporting_report(pass);
            }
            // the cycle ends: rotate the leftover pages to the head of the list
            if let Some(pfn) = end_at {
                self.pm.rotate_free_list(zi, order, mt, pfn, false);
            }
            pass.in_cycle = false;
            pass.mt += 1;
        }
        // end of the pass: back to idle, unless reporting was requested meanwhile
        let pr = &mut self.pm.pr;
        if pr.state == PrState::Active {
            pr.state = PrState::Idle;
            KthreadNext::Wait
        } else {
            KthreadNext::Sleep(PAGE_REPORTING_DELAY_NS)
        }
    }

    /// prdev->report(): the host discards the scatterlist's blocks; the worker waits for
    /// its ack.
    fn page_reporting_report(&mut self, mut pass: PrPass) -> KthreadNext {
        for &(pfn, order) in &pass.sg {
            self.pm.pr.discard(pfn, order);
        }
        let pages: u64 = pass.sg.iter().map(|&(_, o)| 1u64 << o).sum();
        self.pm.pr.reports += 1;
        self.pm.pr.blocks_reported += pass.sg.len() as u64;
        self.pm.pr.kib_reported += pages * 4;
        pass.waiting = true;
        self.pm.pr.pass = Some(pass);
        KthreadNext::Sleep(pages * REPORT_WAIT_PER_2M_NS / PAGEBLOCK_NR_PAGES)
    }

    /// page_reporting_drain(): the reported blocks go back to the tail of their free lists
    /// (__putback_isolated_page: FPI_TO_TAIL, no notification), PageReported unless they
    /// merged.
    fn page_reporting_drain(&mut self, pass: &mut PrPass) {
        let zi = pass.zi;
        for (pfn, order) in std::mem::take(&mut pass.sg) {
            let mt = self.pm.pb_mt(pfn);
            self.pm.frames[pfn as usize] = 0;
            self.pm.putback_isolated_page(zi, pfn, order, mt);
            let f = self.pm.frames[pfn as usize];
            if is_free_head(f) && free_order(f) == order {
                self.pm.pr.set_reported(pfn);
            }
        }
        pass.waiting = false;
    }
}
