//! Memory compaction (mm/compaction.c): direct compaction from the allocator's slow path,
//! kcompactd (woken by kswapd or by allocations that may not compact themselves, and
//! proactive compaction on its 500 ms timer), and manual compaction (vm.compact_memory).
//! Written from the kernel's behaviour; each function names the kernel function it models.
//!
//! **compact_zone.** Two scanners meet in the middle of the zone. The migrate scanner
//! starts at the cached position (or the zone start) and isolates up to
//! COMPACT_CLUSTER_MAX (32) movable base pages per iteration; for costly orders it first
//! searches the MOVABLE free lists of orders below the request for a pageblock that
//! already has free pages (fast_find_migrateblock). The free scanner starts at the
//! cached position (or the zone end), first takes free pages straight from the free lists
//! near its end of the zone (fast_isolate_freepages, fast_isolate_around), then walks down
//! pageblock by pageblock with a stride (32 in async mode, shrinking to 1 when it finds
//! something). Isolated free blocks are kept per order and split on demand
//! (compaction_alloc); isolated pages move with `move_folio`, their old frames go to the
//! current CPU's per-CPU list. When the migrate scanner leaves an order-aligned block it
//! drains the local per-CPU lists (lru_add_drain_cpu_zone) so that freed pages merge, and
//! a direct compactor's capture_control takes the first block of its order that merges.
//!
//! Pageblock skip bits: a block where nothing could be isolated is marked; async and
//! sync-light compaction skip marked blocks (test_and_set_skip makes two compactors not
//! scan the same block); a direct compaction whose scanners met asks kswapd to clear them
//! when it goes to sleep (compact_blockskip_flush), and compaction restarting after the
//! maximum deferral clears them (__reset_isolation_suitable, sampling every 8th page).
//!
//! Never isolated: KERNEL/PGTABLE/ZERO/RESERVED frames and per-CPU-list pages, pages off
//! the LRU or already isolated (the model's stand-in for pinned pages), unevictable
//! (mlocked) pages unless vm.compact_unevictable_allowed, PMD THPs
//! (skip_isolation_on_order), hugetlb pool folios (PageHuge without alloc_contig; both
//! keep their block's skip bit, pageblock_skip_persistent). Async direct compaction only takes sources from pageblocks
//! of the allocation's migratetype and gives up on an order-aligned block at the first
//! page it cannot isolate (skip_on_failure).
//!
//! **Costs** (`CostProfile`; `thplab calibrate` measures migrate_4k_ns; the scanner,
//! block, free-list and isolation costs are estimates, docs/compaction.md): each loop step of the
//! migrate scanner `compact_scan_migrate_ns` and of the free scanner
//! `compact_scan_free_ns`, each pageblock a block walker considers `compact_block_ns`,
//! each free-list entry examined `compact_freelist_ns`, each page isolated from its LRU
//! holds the node's simulated lru_lock for `compact_isolate_ns` (its cost to the compactor
//! is part of `migrate_4k_ns`, which calibrate fits per migrated page), each free block isolated
//! `page_alloc_ns` and each returned `page_free_ns`, each migrated base page
//! `migrate_4k_ns` (charged by move_folio). Latency emerges from the work done.
//!
//! **kcompactd.** One per node, as in kcompactd(): a timed wait of 500 ms (no timeout at
//! proactiveness 0); woken with a request it runs kcompactd_do_work() (SYNC_LIGHT,
//! skipping deferred / watermark-ok / unsuitable zones, draining the per-CPU lists and
//! deferring on COMPLETE or PARTIAL_SKIPPED); on a timeout, or when the proactiveness
//! sysctl is written, it compacts proactively while the node's fragmentation score is
//! above the high watermark (order -1, whole zones, skip hints ignored, SYNC_LIGHT, until
//! each zone's score is at most the low watermark), backing off for 500 ms << 6 = 32 s
//! when a round did not lower the score. A long round stops at a cond_resched() point
//! (one compact_zone iteration) once the engine has another event due
//! (`Clock::yield_at`) and resumes in the next step: other tasks see its work as it is
//! done. Between steps the isolated free pages stay the round's (cc->freepages).

use crate::consts::*;
use crate::gfp::*;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::kthread::KthreadNext;
use crate::locking::LockId;
use crate::mm_types::*;
use crate::mmzone::*;
use crate::trace::trace_event;
use crate::vmstat::{self, Ev};
use serde_json::{json, Value};
use std::collections::VecDeque;

thread_local! {
    /// How many block walks the pageblock summaries replaced on this thread (tests check
    /// that comparing runs with them off, page_alloc::USE_PB_SUMMARIES, is not vacuous).
    pub static PB_SUMMARY_SKIPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
#[cfg(test)]
thread_local! {
    /// Debug switch for the migrate scanner's runs of kernel pages (tests compare runs
    /// with it off), and the runs taken (tests: the path was used).
    pub static USE_KERNEL_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    pub static KERNEL_RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactPriority {
    SyncFull,
    SyncLight,
    Async,
}
/// MIN_COMPACT_PRIORITY, MIN_COMPACT_COSTLY_PRIORITY, DEF_COMPACT_PRIORITY and
/// INIT_COMPACT_PRIORITY (include/linux/compaction.h).
pub const MIN_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncFull;
pub const MIN_COMPACT_COSTLY_PRIORITY: CompactPriority = CompactPriority::SyncLight;
pub const DEF_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncLight;
pub const INIT_COMPACT_PRIORITY: CompactPriority = CompactPriority::Async;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactResult {
    NotSuitableZone,
    Skipped,
    Deferred,
    NoSuitablePage,
    Continue,
    Complete,
    PartialSkipped,
    Contended,
    Success,
}

/// HPAGE_FRAG_CHECK_INTERVAL_MSEC
pub const HPAGE_FRAG_CHECK_INTERVAL_NS: u64 = 500_000_000;
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;
/// COMPACT_CLUSTER_MAX = SWAP_CLUSTER_MAX
pub const COMPACT_CLUSTER_MAX: usize = 32;
/// COMPACTION_HPAGE_ORDER (HPAGE_PMD_ORDER)
pub const COMPACTION_HPAGE_ORDER: u32 = HPAGE_PMD_ORDER;

const PB: u64 = PAGEBLOCK_NR_PAGES;

/// A frame the migrate scanner steps over one at a time without isolating it: a kernel
/// page that is not a hugetlb folio's head (those it steps over whole).
#[inline(always)]
fn plain_kernel(f: u64) -> bool {
    tag(f) == TAG_KERNEL && !is_hugetlb_head(f) && !is_kernel_movable(f)
}

#[inline]
fn pageblock_start(pfn: u64) -> u64 {
    pfn & !(PB - 1)
}
/// pageblock_end_pfn(): ALIGN(pfn + 1, pageblock_nr_pages)
#[inline]
fn pageblock_end(pfn: u64) -> u64 {
    pageblock_start(pfn) + PB
}
/// block_start_pfn() / block_end_pfn() of an order
#[inline]
fn block_start_order(pfn: u64, order: i32) -> u64 {
    let o = order.max(0) as u32;
    pfn & !((1u64 << o) - 1)
}
#[inline]
fn block_end_order(pfn: u64, order: i32) -> u64 {
    block_start_order(pfn, order) + (1u64 << order.max(0) as u32)
}

/// enum migrate_mode
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MigrateMode {
    Async,
    SyncLight,
    Sync,
}

/// fragmentation_score_wmark(low): the proactive compaction thresholds for a
/// proactiveness value. `leeway = false`: v5.9..v6.15 (low = max(100 - p, 5),
/// high = min(low + 10, 100)); `leeway = true`: v6.16+ (low = 100 - p,
/// high = min(low + min(10, low / 2), 100)).
pub fn fragmentation_score_wmark(proactiveness: u64, leeway: bool, low: bool) -> u64 {
    let p = proactiveness.min(100);
    if leeway {
        let wl = 100 - p;
        if low {
            wl
        } else {
            (wl + (wl / 2).min(10)).min(100)
        }
    } else {
        let wl = (100 - p).max(5);
        if low {
            wl
        } else {
            (wl + 10).min(100)
        }
    }
}

/// struct capture_control: a direct compactor waiting for a block of `order` in zone `zi`.
#[derive(Clone, Debug)]
pub struct CaptureControl {
    pub zi: usize,
    pub order: u32,
    pub migratetype: u8,
    pub page: Option<u64>,
}

/// struct compact_control (the parts the model uses).
#[derive(Clone, Debug)]
pub struct CompactControl {
    pub zi: usize,
    /// -1: compact everything (vm.compact_memory, proactive)
    pub order: i32,
    /// the order fast_isolate_freepages() searches first
    search_order: i32,
    pub migratetype: u8,
    pub alloc_flags: AllocFlags,
    pub highest_zoneidx: usize,
    pub mode: MigrateMode,
    pub direct_compaction: bool,
    pub whole_zone: bool,
    pub ignore_skip_hint: bool,
    pub ignore_block_suitable: bool,
    pub proactive: bool,
    /// count compact_daemon_*_scanned too (kcompactd)
    pub daemon: bool,
    /// lock contention or a signal ended the compaction (COMPACT_CONTENDED)
    pub contended: bool,
    pub migrate_pfn: u64,
    pub free_pfn: u64,
    /// fast_find_migrateblock's first find, where a failed search restarts the linear scan
    fast_start_pfn: Option<u64>,
    fast_start_used: bool,
    fast_search_fail: u32,
    /// isolated base pages awaiting migration
    migratepages: Vec<u64>,
    nr_migratepages: u64,
    /// isolated free blocks per order (cc->freepages[]), split on demand
    pub(crate) freepages: Vec<VecDeque<u64>>,
    nr_freepages: u64,
    pub total_migrate_scanned: u64,
    pub total_free_scanned: u64,
    counted_migrate: u64,
    counted_free: u64,
    finish_pageblock: bool,
    last_migrated_pfn: u64,
    update_cached: bool,
}

impl CompactControl {
    pub fn new(zi: usize, order: i32, gfp: Gfp, mode: MigrateMode) -> CompactControl {
        CompactControl {
            zi,
            order,
            search_order: order,
            migratetype: gfp_migratetype(gfp),
            alloc_flags: 0,
            highest_zoneidx: ZONE_NORMAL,
            mode,
            direct_compaction: false,
            whole_zone: false,
            ignore_skip_hint: false,
            ignore_block_suitable: false,
            proactive: false,
            daemon: false,
            contended: false,
            migrate_pfn: 0,
            free_pfn: 0,
            fast_start_pfn: None,
            fast_start_used: false,
            fast_search_fail: 0,
            migratepages: Vec::with_capacity(COMPACT_CLUSTER_MAX),
            nr_migratepages: 0,
            freepages: vec![VecDeque::new(); NR_PAGE_ORDERS],
            nr_freepages: 0,
            total_migrate_scanned: 0,
            total_free_scanned: 0,
            counted_migrate: 0,
            counted_free: 0,
            finish_pageblock: false,
            last_migrated_pfn: 0,
            update_cached: false,
        }
    }
    /// compact_scanners_met()
    fn scanners_met(&self) -> bool {
        (self.free_pfn >> PAGEBLOCK_ORDER) <= (self.migrate_pfn >> PAGEBLOCK_ORDER)
    }
    /// freelist_scan_limit(): how many free-list entries a fast search may look at.
    fn freelist_scan_limit(&self) -> u64 {
        (COMPACT_CLUSTER_MAX as u64 >> self.fast_search_fail.min(63)) + 1
    }
    /// The isolated free blocks, (pfn, order): the checker counts them as owned.
    pub fn isolated_free(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.freepages.iter().enumerate().flat_map(|(o, l)| l.iter().map(move |&p| (p, o as u32)))
    }
}

/// A proactive round in progress (compact_node(pgdat, true)), resumable between steps.
#[derive(Clone, Debug)]
pub(crate) struct ProactiveRound {
    zones: Vec<usize>,
    pos: usize,
    pub(crate) cc: Option<CompactControl>,
    prev_score: u64,
}

/// Per-node kcompactd state (pgdat->kcompactd_*, proactive_compact_trigger).
#[derive(Clone, Debug)]
pub struct Kcompactd {
    pub max_order: u32,
    pub highest_zoneidx: usize,
    pub proactive_trigger: bool,
    /// end of the current timed wait (None: waiting without timeout, or not yet waited)
    pub deadline: Option<u64>,
    /// the next wait's timeout (500 ms, or 32 s after a fruitless proactive round)
    pub timeout_ns: u64,
    pub(crate) round: Option<ProactiveRound>,
    /// kcompactd_do_work() in progress (its compact_zone, resumable between steps)
    pub(crate) work: Option<DoWork>,
    pub proactive_rounds: u64,
    pub proactive_backoffs: u64,
    pub do_work_runs: u64,
}
impl Default for Kcompactd {
    fn default() -> Self {
        Kcompactd {
            max_order: 0,
            highest_zoneidx: MAX_NR_ZONES - 1,
            proactive_trigger: false,
            deadline: None,
            timeout_ns: HPAGE_FRAG_CHECK_INTERVAL_NS,
            round: None,
            work: None,
            proactive_rounds: 0,
            proactive_backoffs: 0,
            do_work_runs: 0,
        }
    }
}
impl Kcompactd {
    /// The compact_control of a compaction in progress, if any (the checker's view of
    /// its isolated free pages).
    pub fn running_cc(&self) -> Option<&CompactControl> {
        self.round.as_ref().and_then(|r| r.cc.as_ref()).or(self.work.as_ref().and_then(|w| w.cc.as_ref()))
    }
}

/// kcompactd_do_work() in progress.
#[derive(Clone, Debug)]
pub(crate) struct DoWork {
    order: u32,
    highest: usize,
    zones: Vec<usize>,
    pos: usize,
    pub(crate) cc: Option<CompactControl>,
}

/// A zone's deferral state, as the mm_compaction_defer_template tracepoints record it.
macro_rules! trace_defer {
    ($k:expr, $name:ident, $zi:expr, $order:expr) => {{
        let z = &$k.pm.zones[$zi];
        trace_event!(
            $k,
            $name,
            nid = z.node,
            zone = z.name,
            order = $order,
            considered = z.compact_considered,
            defer_shift = z.compact_defer_shift,
            order_failed = z.compact_order_failed,
        );
    }};
}

/// compaction_status_string[]
fn result_name(r: CompactResult) -> &'static str {
    match r {
        CompactResult::NotSuitableZone => "not_suitable_zone",
        CompactResult::Skipped => "skipped",
        CompactResult::Deferred => "deferred",
        CompactResult::NoSuitablePage => "no_suitable_page",
        CompactResult::Continue => "continue",
        CompactResult::Complete => "complete",
        CompactResult::PartialSkipped => "partial_skipped",
        CompactResult::Contended => "contended",
        CompactResult::Success => "success",
    }
}

/// The kernel's enum order (for max()).
fn rank(r: CompactResult) -> u8 {
    r as u8
}

/// isolate_migratepages() outcome
#[derive(Clone, Copy, PartialEq, Eq)]
enum Isolate {
    Abort,
    None,
    Success,
}

impl Kernel {
    // ---------------- deferral ----------------

    /// defer_compaction()
    pub fn defer_compaction(&mut self, zi: usize, order: i32) {
        let z = &mut self.pm.zones[zi];
        z.compact_considered = 0;
        z.compact_defer_shift = (z.compact_defer_shift + 1).min(COMPACT_MAX_DEFER_SHIFT);
        if order < z.compact_order_failed {
            z.compact_order_failed = order;
        }
        trace_defer!(self, mm_compaction_defer_compaction, zi, order);
    }

    /// compaction_deferred(): true if compaction should be skipped this time.
    pub fn compaction_deferred(&mut self, zi: usize, order: i32) -> bool {
        let z = &mut self.pm.zones[zi];
        let limit = 1u32 << z.compact_defer_shift;
        if order < z.compact_order_failed {
            return false;
        }
        z.compact_considered += 1;
        if z.compact_considered >= limit {
            z.compact_considered = limit;
            return false;
        }
        trace_defer!(self, mm_compaction_deferred, zi, order);
        true
    }

    /// compaction_defer_reset()
    pub fn compaction_defer_reset(&mut self, zi: usize, order: i32, alloc_success: bool) {
        let z = &mut self.pm.zones[zi];
        if alloc_success {
            z.compact_considered = 0;
            z.compact_defer_shift = 0;
        }
        if order >= z.compact_order_failed {
            z.compact_order_failed = order + 1;
        }
        trace_defer!(self, mm_compaction_defer_reset, zi, order);
    }

    /// compaction_restarting()
    fn compaction_restarting(&self, zi: usize, order: i32) -> bool {
        let z = &self.pm.zones[zi];
        if order < z.compact_order_failed {
            return false;
        }
        z.compact_defer_shift == COMPACT_MAX_DEFER_SHIFT && z.compact_considered >= 1 << z.compact_defer_shift
    }

    // ---------------- skip hints and cached positions ----------------

    /// reset_cached_positions()
    fn reset_cached_positions(&mut self, zi: usize) {
        let z = &mut self.pm.zones[zi];
        z.compact_cached_migrate_pfn = [z.start_pfn; 2];
        z.compact_cached_free_pfn = pageblock_start(z.end_pfn() - 1);
    }

    /// PageCompound(page) && compound_order(compound_head(page)) >= pageblock_order: the
    /// frame belongs to a PMD THP or the huge zero page.
    fn in_pmd_folio(&self, pfn: u64) -> bool {
        let f = self.pm.frames[pfn as usize];
        match tag(f) {
            TAG_ANON => {
                compound(f) != COMPOUND_BASE
                    && folio_order(&self.pm.frames, folio_head(&self.pm.frames, pfn)) >= PAGEBLOCK_ORDER
            }
            TAG_ZERO => true,
            // a hugetlb pool folio (order 9, PageHuge)
            TAG_KERNEL => is_hugetlb(f),
            _ => false,
        }
    }

    /// pageblock_skip_persistent(): the page is part of a compound page of order >=
    /// pageblock_order (a PMD THP, the huge zero page): its block's skip bit stays.
    fn pageblock_skip_persistent(&self, pfn: u64) -> bool {
        self.in_pmd_folio(pfn)
    }

    /// PageLRU(): a base page or a THP head on an LRU list.
    fn page_lru(&self, pfn: u64) -> bool {
        let f = self.pm.frames[pfn as usize];
        tag(f) == TAG_ANON && compound(f) != COMPOUND_TAIL && lru(f) != LRU_NONE
    }

    /// __reset_isolation_pfn(): clear the block's skip bit if a sample of its pages (every
    /// 2^PAGE_ALLOC_COSTLY_ORDER-th) finds an LRU page (a source) or a free page (a target).
    fn reset_isolation_pfn(&mut self, zi: usize, pfn: u64, check_source: bool, check_target: bool) -> bool {
        let (zs, ze) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        self.charge(self.costs.compact_block_ns);
        if self.pageblock_skip_persistent(pfn) {
            return false;
        }
        if check_source && check_target && !self.pm.pb_skip(pfn) {
            return true;
        }
        if !check_source && check_target && self.pm.pb_mt(pfn) != MIGRATE_MOVABLE {
            return false;
        }
        let block = pageblock_start(pfn).max(zs);
        let end = (pageblock_end(pfn) - 1).min(ze - 1);
        if !check_source && self.pm.use_pb_sum && block.is_multiple_of(1 << PAGE_ALLOC_COSTLY_ORDER) {
            // the pageblock summary: no free block starts at a sampled pfn, so the samples
            // find nothing; charge them all as the walk would
            let sum = self.pm.pb_sum[(block >> PAGEBLOCK_ORDER) as usize];
            if sum.free_heads_sampled == 0 {
                PB_SUMMARY_SKIPS.with(|c| c.set(c.get() + 1));
                let samples = ((end - block) >> PAGE_ALLOC_COSTLY_ORDER) + 1;
                self.charge(samples * self.costs.compact_scan_migrate_ns);
                return false;
            }
        }
        let mut p = block;
        let mut samples = 0;
        let mut found = false;
        while p <= end {
            samples += 1;
            if (check_source && self.page_lru(p)) || (check_target && is_free_head(self.pm.frames[p as usize])) {
                self.pm.set_pb_skip(block, false);
                found = true;
                break;
            }
            p += 1 << PAGE_ALLOC_COSTLY_ORDER;
        }
        self.charge(samples * self.costs.compact_scan_migrate_ns);
        found
    }

    /// __reset_isolation_suitable(): after a full compaction (compact_blockskip_flush),
    /// walk the zone from both ends clearing skip bits where a sample finds a source or a
    /// target, and restart both scanners at the outermost such blocks.
    fn reset_isolation_suitable_zone(&mut self, zi: usize) {
        if !self.pm.zones[zi].compact_blockskip_flush {
            return;
        }
        self.pm.zones[zi].compact_blockskip_flush = false;
        let (zs, ze) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        let mut migrate_pfn = zs;
        let mut free_pfn = ze - 1;
        let (mut reset_migrate, mut reset_free) = (free_pfn, migrate_pfn);
        let (mut source_set, mut free_set) = (false, false);
        while migrate_pfn < free_pfn {
            if self.reset_isolation_pfn(zi, migrate_pfn, true, source_set) && migrate_pfn < reset_migrate {
                source_set = true;
                reset_migrate = migrate_pfn;
                let z = &mut self.pm.zones[zi];
                z.compact_init_migrate_pfn = reset_migrate;
                z.compact_cached_migrate_pfn = [reset_migrate; 2];
            }
            if self.reset_isolation_pfn(zi, free_pfn, free_set, true) && free_pfn > reset_free {
                free_set = true;
                reset_free = free_pfn;
                let z = &mut self.pm.zones[zi];
                z.compact_init_free_pfn = reset_free;
                z.compact_cached_free_pfn = reset_free;
            }
            migrate_pfn += PB;
            free_pfn = free_pfn.saturating_sub(PB);
        }
        if reset_migrate >= reset_free {
            let z = &mut self.pm.zones[zi];
            z.compact_cached_migrate_pfn = [migrate_pfn; 2];
            z.compact_cached_free_pfn = free_pfn;
        }
    }

    /// reset_isolation_suitable(pgdat): kswapd calls this before sleeping.
    pub fn reset_isolation_suitable(&mut self, nid: usize) {
        for zi in self.node_zones(nid, MAX_NR_ZONES - 1) {
            self.reset_isolation_suitable_zone(zi);
        }
    }

    /// isolation_suitable()
    fn isolation_suitable(&self, cc: &CompactControl, pfn: u64) -> bool {
        cc.ignore_skip_hint || !self.pm.pb_skip(pfn)
    }

    /// test_and_set_skip(): mark the block skipped; true if it already was.
    fn test_and_set_skip(&mut self, cc: &CompactControl, pfn: u64) -> bool {
        if cc.ignore_skip_hint {
            return false;
        }
        let skip = self.pm.pb_skip(pfn);
        if !skip {
            self.pm.set_pb_skip(pfn, true);
        }
        skip
    }

    /// update_cached_migrate()
    fn update_cached_migrate(&mut self, cc: &CompactControl, pfn: u64) {
        let pfn = pageblock_end(pfn);
        let z = &mut self.pm.zones[cc.zi];
        if pfn > z.compact_cached_migrate_pfn[0] {
            z.compact_cached_migrate_pfn[0] = pfn;
        }
        if cc.mode != MigrateMode::Async && pfn > z.compact_cached_migrate_pfn[1] {
            z.compact_cached_migrate_pfn[1] = pfn;
        }
    }

    /// update_pageblock_skip()
    fn update_pageblock_skip(&mut self, cc: &CompactControl, page: u64, pfn: i64) {
        self.pm.set_pb_skip(page, true);
        let z = &mut self.pm.zones[cc.zi];
        if pfn >= 0 && (pfn as u64) < z.compact_cached_free_pfn {
            z.compact_cached_free_pfn = pfn as u64;
        }
    }

    // ---------------- fragmentation score ----------------

    /// fragmentation_score_node()
    pub fn fragmentation_score_node(&self, nid: usize) -> u64 {
        let n = &self.pm.nodes[nid];
        vmstat::fragmentation_score_node(n.zones.iter().map(|&z| &self.pm.zones[z]), n.present)
    }

    /// Free pages of zone `zi` a kcompactd holds isolated in a compact_zone() it paused
    /// at a cond_resched() point (its cc->freepages and cc->migratepages).
    pub fn kcompactd_isolated_pages(&self, zi: usize) -> (u64, u64) {
        let mut held = (0, 0);
        for pg in &self.pgdat {
            let st = &pg.kcompactd;
            let ccs = st.round.iter().filter_map(|r| r.cc.as_ref()).chain(st.work.iter().filter_map(|w| w.cc.as_ref()));
            for cc in ccs.filter(|cc| cc.zi == zi) {
                held.0 += cc.nr_freepages;
                held.1 += cc.migratepages.len() as u64;
            }
        }
        held
    }

    /// fragmentation_score_wmark() with the configured proactiveness and formula.
    pub fn fragmentation_score_wmark(&self, low: bool) -> u64 {
        fragmentation_score_wmark(self.cfg.compaction_proactiveness, self.cfg.proactive_leeway, low)
    }

    /// should_proactive_compact_node()
    pub fn should_proactive_compact_node(&self, nid: usize) -> bool {
        if self.cfg.compaction_proactiveness == 0 || self.kswapd_is_running(nid) {
            return false;
        }
        self.fragmentation_score_node(nid) > self.fragmentation_score_wmark(false)
    }

    // ---------------- suitability ----------------

    /// __compaction_suitable(): order-0 pages above the watermark plus compact_gap
    /// (2 << order), plus the low-min gap for costly orders.
    fn __compaction_suitable(&self, zi: usize, order: u32, watermark: u64, highest: usize, free: u64) -> bool {
        let z = &self.pm.zones[zi];
        let mut mark = watermark + (2u64 << order);
        if order > PAGE_ALLOC_COSTLY_ORDER {
            mark += z.wmark(WMARK_LOW) - z.wmark(WMARK_MIN);
        }
        self.pm.zone_watermark_ok_free(zi, 0, mark, highest, 0, free)
    }

    /// compaction_suitable(): the watermark test above, and for costly orders a
    /// fragmentation index above vm.extfrag_threshold (a failure due to fragmentation,
    /// not to lack of memory).
    pub fn compaction_suitable(&self, zi: usize, order: u32, watermark: u64, highest: usize) -> bool {
        let z = &self.pm.zones[zi];
        if !self.__compaction_suitable(zi, order, watermark, highest, z.free_pages) {
            return false;
        }
        if order > PAGE_ALLOC_COSTLY_ORDER {
            let fragindex = vmstat::fragmentation_index(z, order);
            if fragindex >= 0 && fragindex <= self.cfg.extfrag_threshold as i64 {
                return false;
            }
        }
        true
    }

    /// compaction_suit_allocation_order(): SUCCESS if the allocation can already be
    /// satisfied, SKIPPED if compaction is unlikely to help, CONTINUE otherwise.
    /// kcompactd under vm.defrag_mode counts only free whole pageblocks.
    fn compaction_suit_allocation_order(
        &self,
        zi: usize,
        order: u32,
        highest: usize,
        alloc_flags: AllocFlags,
        is_async: bool,
        kcompactd: bool,
    ) -> CompactResult {
        let z = &self.pm.zones[zi];
        let free = if kcompactd && self.cfg.defrag_mode { z.free_pages_blocks() } else { z.free_pages };
        let wmark = z.wmark((alloc_flags & ALLOC_WMARK_MASK) as usize);
        if self.pm.zone_watermark_ok_free(zi, order, wmark, highest, alloc_flags, free) {
            return CompactResult::Success;
        }
        // costly async attempts need the watermark plus compact_gap in order-0 pages
        // (without CONFIG_CMA, as on this project's kernel, ALLOC_CMA is 0: every request)
        if order > PAGE_ALLOC_COSTLY_ORDER
            && is_async
            && !self.pm.zone_watermark_ok(zi, 0, wmark + (2u64 << order), highest, 0)
        {
            return CompactResult::Skipped;
        }
        if !self.compaction_suitable(zi, order, wmark, highest) {
            return CompactResult::Skipped;
        }
        CompactResult::Continue
    }

    /// compaction_zonelist_suitable(): would compaction have room in some zone if reclaim
    /// freed a share (1/order) of the reclaimable pages?
    pub fn compaction_zonelist_suitable(&self, zonelist: &[usize], order: u32) -> bool {
        zonelist.iter().any(|&zi| {
            let z = &self.pm.zones[zi];
            let available = self.zone_reclaimable_pages(zi) / order.max(1) as u64 + z.free_pages;
            self.__compaction_suitable(zi, order, z.wmark(WMARK_MIN), ZONE_NORMAL, available)
        })
    }

    // ---------------- the migrate scanner ----------------

    /// suitable_migration_source()
    fn suitable_migration_source(&self, cc: &CompactControl, pfn: u64) -> bool {
        if self.pageblock_skip_persistent(pfn) {
            return false;
        }
        if cc.mode != MigrateMode::Async || !cc.direct_compaction {
            return true;
        }
        let mt = self.pm.pb_mt(pfn);
        if cc.migratetype == MIGRATE_MOVABLE {
            mt == MIGRATE_MOVABLE
        } else {
            mt == cc.migratetype
        }
    }

    /// fast_find_migrateblock(): for costly orders, look through the MOVABLE free lists of
    /// orders below the request (PAGE_ALLOC_COSTLY_ORDER and up) for a free block in the
    /// first part of the scan space whose pageblock is not skipped: migrating from a block
    /// that already has free pages frees it sooner. Examined entries rotate to the list's
    /// tail so the next search sees others.
    fn fast_find_migrateblock(&mut self, cc: &mut CompactControl) -> u64 {
        let limit = cc.freelist_scan_limit();
        let mut nr_scanned = 0u64;
        let mut pfn = cc.migrate_pfn;
        let zs = self.pm.zones[cc.zi].start_pfn;
        if cc.ignore_skip_hint || cc.finish_pageblock {
            return pfn;
        }
        if pfn != zs && pfn != pageblock_start(pfn) {
            return pfn;
        }
        if cc.order <= PAGE_ALLOC_COSTLY_ORDER as i32 {
            return pfn;
        }
        if cc.direct_compaction && cc.migratetype != MIGRATE_MOVABLE {
            return pfn;
        }
        let mut distance = (cc.free_pfn.saturating_sub(cc.migrate_pfn)) >> 1;
        if cc.migrate_pfn != zs {
            distance >>= 2;
        }
        let high_pfn = pageblock_start(cc.migrate_pfn + distance);
        let mut found = false;
        let mut order = cc.order - 1;
        while order >= PAGE_ALLOC_COSTLY_ORDER as i32 && !found && nr_scanned < limit {
            let o = order as u32;
            order -= 1;
            if self.pm.zones[cc.zi].nr_free_order(o as usize) == 0 {
                continue;
            }
            let mut fp = self.pm.free_list(cc.zi, o, MIGRATE_MOVABLE).head;
            while fp != NIL {
                let next = self.pm.free_next(o, fp);
                let was = nr_scanned;
                nr_scanned += 1;
                if was >= limit {
                    self.pm.rotate_free_list(cc.zi, o, MIGRATE_MOVABLE, fp as u64, true);
                    break;
                }
                let free_pfn = fp as u64;
                if free_pfn < high_pfn {
                    if self.pm.pb_skip(free_pfn) {
                        fp = next;
                        continue;
                    }
                    self.pm.rotate_free_list(cc.zi, o, MIGRATE_MOVABLE, free_pfn, true);
                    // update_fast_start_pfn()
                    if !cc.fast_start_used {
                        cc.fast_start_pfn = Some(cc.fast_start_pfn.map_or(free_pfn, |s| s.min(free_pfn)));
                    }
                    pfn = pageblock_start(free_pfn).max(zs);
                    cc.fast_search_fail = 0;
                    found = true;
                    break;
                }
                fp = next;
            }
        }
        cc.total_migrate_scanned += nr_scanned;
        self.charge(nr_scanned * self.costs.compact_freelist_ns);
        if !found {
            cc.fast_search_fail += 1;
            // reinit_migrate_pfn(): a failed search restarts the linear scan at the
            // lowest block a search found before
            if let (Some(s), false) = (cc.fast_start_pfn, cc.fast_start_used) {
                cc.migrate_pfn = s;
                cc.fast_start_used = true;
            }
            pfn = cc.migrate_pfn;
        }
        pfn
    }

    /// isolate_migratepages(): find the next suitable source pageblock below the free
    /// scanner (fast search first) and isolate from it.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> Isolate {
        let zs = self.pm.zones[cc.zi].start_pfn;
        let mut low_pfn = self.fast_find_migrateblock(cc);
        let mut block_start = pageblock_start(low_pfn).max(zs);
        let mut fast_find_block = low_pfn != cc.migrate_pfn && cc.fast_search_fail == 0;
        let mut block_end = pageblock_end(low_pfn);
        let mut blocks = 0u64;
        let mut result = Isolate::None;
        while block_end <= cc.free_pfn {
            blocks += 1;
            let aligned = low_pfn.is_multiple_of(PB) || low_pfn == zs;
            let skip = aligned && !fast_find_block && !self.isolation_suitable(cc, block_start);
            if skip {
                // this block and the skipped ones after it below the free scanner: each
                // passed over (and counted) as this one, in one step
                let more = self.pm.skipped_run(block_end, cc.free_pfn);
                blocks += more;
                let next = block_end + more * PB;
                fast_find_block = false;
                cc.migrate_pfn = next;
                low_pfn = next;
                block_start = next;
                block_end = next + PB;
                continue;
            }
            if !self.suitable_migration_source(cc, block_start) {
                self.update_cached_migrate(cc, block_end);
            } else {
                if !self.isolate_migratepages_block(cc, low_pfn, block_end) {
                    result = Isolate::Abort;
                }
                break;
            }
            fast_find_block = false;
            cc.migrate_pfn = block_end;
            low_pfn = block_end;
            block_start = block_end;
            block_end += PB;
        }
        self.charge(blocks * self.costs.compact_block_ns);
        if result == Isolate::Abort {
            return result;
        }
        if cc.nr_migratepages > 0 {
            Isolate::Success
        } else {
            Isolate::None
        }
    }

    /// isolate_migratepages_block(): isolate movable base pages of [low, end) (the rest
    /// of low's pageblock) onto cc.migratepages, at most COMPACT_CLUSTER_MAX unless
    /// finishing the block. The first page taken under the lru_lock marks the block
    /// skipped for other compactors (test_and_set_skip); a block scanned to its end with
    /// nothing isolated is marked skipped. Returns false when the scan was aborted.
    fn isolate_migratepages_block(&mut self, cc: &mut CompactControl, low: u64, end: u64) -> bool {
        let zs = self.pm.zones[cc.zi].start_pfn;
        cc.migrate_pfn = low;
        let unevictable_ok = self.cfg.compact_unevictable_allowed;
        let skip_on_failure = cc.direct_compaction && cc.mode == MigrateMode::Async;
        let mut next_skip_pfn = if skip_on_failure { block_end_order(low, cc.order) } else { 0 };
        let mut pfn = low;
        let (mut nr_scanned, mut steps, mut nr_isolated) = (0u64, 0u64, 0u64);
        let mut valid_page: Option<u64> = None;
        let mut skip_updated = false;
        let mut locked = false;
        while pfn < end {
            if skip_on_failure && pfn >= next_skip_pfn {
                if nr_isolated > 0 {
                    break;
                }
                next_skip_pfn = block_end_order(pfn, cc.order);
            }
            nr_scanned += 1;
            steps += 1;
            if valid_page.is_none() && (pfn.is_multiple_of(PB) || pfn == zs) {
                if !self.isolation_suitable(cc, pfn) {
                    pfn = end;
                    break;
                }
                valid_page = Some(pfn);
            }
            let f = self.pm.frames[pfn as usize];
            let t = tag(f);
            if t == TAG_FREE {
                // a free buddy: stepped over, not a failure
                let o = free_order(f);
                if o > 0 {
                    pfn += (1 << o) - 1;
                    nr_scanned += (1 << o) - 1;
                }
                pfn += 1;
                continue;
            }
            let mut ok = false;
            if (t == TAG_ANON && compound(f) == COMPOUND_HEAD) || (t == TAG_ZERO && pfn == pageblock_start(pfn)) {
                // a PMD folio: skip_isolation_on_order() is true for order >= pageblock_order;
                // the model skips mTHP folios too (approximation: 6.18 migrates those below
                // the target order, docs/mthp.md)
                let n = if t == TAG_ANON { 1u64 << folio_order(&self.pm.frames, pfn) } else { HPAGE_PMD_NR };
                pfn += n - 1;
                nr_scanned += n - 1;
            } else if is_hugetlb_head(f) {
                // PageHuge(): not for us outside alloc_contig; stepped over (a tail is
                // stepped one frame at a time: its compound_order() reads 0)
                pfn += HPAGE_PMD_NR - 1;
                nr_scanned += HPAGE_PMD_NR - 1;
            } else if is_kernel_movable(f) {
                // a page with movable ops (isolate_movable_ops_page()): isolated without the
                // lru_lock, so without marking the block skipped
                ok = true;
            } else if t == TAG_ANON && compound(f) == COMPOUND_BASE {
                let l = lru(f);
                let pinned = isolated(f);
                let unevictable = l == LRU_UNEVICTABLE || mlocked(f);
                if l != LRU_NONE && !pinned && (!unevictable || unevictable_ok) {
                    if !locked {
                        locked = true;
                        if !skip_updated {
                            if let Some(v) = valid_page {
                                skip_updated = true;
                                if self.test_and_set_skip(cc, v) && !cc.finish_pageblock {
                                    pfn = end;
                                    break;
                                }
                            }
                        }
                    }
                    ok = true;
                }
            }
            if ok {
                cc.migratepages.push(pfn);
                cc.nr_migratepages += 1;
                nr_isolated += 1;
                pfn += 1;
                if cc.nr_migratepages >= COMPACT_CLUSTER_MAX as u64 && !cc.finish_pageblock && !cc.contended {
                    break;
                }
                continue;
            }
            // isolate_fail
            pfn += 1;
            if !skip_on_failure {
                if t == TAG_KERNEL && test_switch!(USE_KERNEL_RUN) {
                    // the kernel pages that follow (not PageLRU, not movable: seed 004
                    // (c)'s order-7 driver blocks) fail the same way, one counted step
                    // each: taken together (host speed only; a hugetlb head ends the run,
                    // the loop steps over its folio). [low, end) lies in one pageblock, so
                    // the run passes no pageblock start, where the loop's
                    // isolation_suitable() check would come.
                    let from = pfn;
                    while pfn < end && plain_kernel(self.pm.frames[pfn as usize]) {
                        pfn += 1;
                    }
                    nr_scanned += pfn - from;
                    steps += pfn - from;
                    #[cfg(test)]
                    KERNEL_RUNS.with(|c| c.set(c.get() + (pfn > from) as u64));
                }
                continue;
            }
            if nr_isolated > 0 {
                // we cannot form the order-aligned block anyway: put them back
                cc.migratepages.truncate(cc.migratepages.len() - nr_isolated as usize);
                cc.nr_migratepages -= nr_isolated;
                nr_isolated = 0;
            }
            if pfn < next_skip_pfn {
                pfn = next_skip_pfn;
                next_skip_pfn += 1u64 << cc.order.max(0);
            }
        }
        if pfn > end {
            pfn = end;
        }
        if pfn == end && (nr_isolated == 0 || cc.finish_pageblock) {
            if let (Some(v), false) = (valid_page, skip_updated) {
                self.pm.set_pb_skip(v, true);
            }
            self.update_cached_migrate(cc, pfn);
        }
        cc.total_migrate_scanned += nr_scanned;
        if nr_isolated > 0 {
            self.rec.vm.add(Ev::COMPACT_ISOLATED, nr_isolated);
            let nid = self.pm.zones[cc.zi].node;
            // the isolations hold the lru_lock (its own cost is inside migrate_4k_ns, which
            // calibrate fits per migrated page)
            self.lock_hold(LockId::Lru(nid), nr_isolated * self.costs.compact_isolate_ns);
        }
        cc.migrate_pfn = pfn;
        self.charge(steps * self.costs.compact_scan_migrate_ns);
        true
    }

    // ---------------- the free scanner ----------------

    /// suitable_migration_target()
    fn suitable_migration_target(&self, cc: &CompactControl, pfn: u64) -> bool {
        let f = self.pm.frames[pfn as usize];
        if is_free_head(f) {
            let order = if cc.order > 0 { cc.order as u32 } else { PAGEBLOCK_ORDER };
            if free_order(f) >= order {
                return false;
            }
        }
        if cc.ignore_block_suitable {
            return true;
        }
        self.pm.pb_mt(pfn) == MIGRATE_MOVABLE
    }

    /// Take the free block at `pfn` for the compactor (__isolate_free_page); its first
    /// frame marks it as isolated. Returns its order.
    fn isolate_free_block(&mut self, cc: &mut CompactControl, pfn: u64) -> Option<u32> {
        let o = self.pm.isolate_free_page(cc.zi, pfn)?;
        self.pm.frames[pfn as usize] = make_isolated_free(o);
        cc.nr_freepages += 1 << o;
        cc.freepages[o as usize].push_back(pfn);
        self.rec.vm.add(Ev::COMPACT_ISOLATED, 1 << o);
        self.charge(self.costs.page_alloc_ns);
        Some(o)
    }

    /// isolate_freepages_block(): isolate free blocks of [*start, end) stepping by
    /// `stride`, until enough for the pending migration batch. Returns pages isolated.
    fn isolate_freepages_block(&mut self, cc: &mut CompactControl, start: &mut u64, end: u64, stride: u64) -> u64 {
        let mut pfn = *start;
        let (mut nr_scanned, mut steps, mut total) = (0u64, 0u64, 0u64);
        debug_assert!(pfn >= end || end <= pageblock_end(pfn));
        if pfn < end && self.pm.use_pb_sum && self.pm.pb_sum[(pfn >> PAGEBLOCK_ORDER) as usize].free_heads == 0 {
            // the pageblock summary: no free block starts in this pageblock, so the walk
            // isolates nothing; count its steps as it takes them (a PMD folio at the
            // block's start is stepped over at once)
            PB_SUMMARY_SKIPS.with(|c| c.set(c.get() + 1));
            if pfn == pageblock_start(pfn) && pfn + HPAGE_PMD_NR <= end && self.in_pmd_folio(pfn) {
                steps = 1;
                nr_scanned = HPAGE_PMD_NR;
            } else {
                steps = (end - pfn).div_ceil(stride);
                nr_scanned = steps;
            }
            pfn = end;
        }
        while pfn < end {
            nr_scanned += 1;
            steps += 1;
            if self.in_pmd_folio(pfn) {
                // a compound page: skipped at once when it fits the block
                let head = pageblock_start(pfn);
                if head == pfn && pfn + HPAGE_PMD_NR <= end {
                    pfn += HPAGE_PMD_NR - 1;
                    nr_scanned += HPAGE_PMD_NR - 1;
                }
            } else if is_free_head(self.pm.frames[pfn as usize]) {
                let Some(o) = self.isolate_free_block(cc, pfn) else { break };
                let n = 1u64 << o;
                nr_scanned += n - 1;
                total += n;
                if cc.nr_migratepages <= cc.nr_freepages {
                    pfn += n;
                    break;
                }
                pfn += n - 1;
            }
            pfn += stride;
        }
        if pfn > end {
            pfn = end;
        }
        *start = pfn;
        cc.total_free_scanned += nr_scanned;
        self.charge(steps * self.costs.compact_scan_free_ns);
        total
    }

    /// next_search_order(): fast_isolate_freepages searches orders round-robin.
    fn next_search_order(cc: &mut CompactControl, order: i32) -> i32 {
        let mut order = order - 1;
        if order < 0 {
            order = cc.order - 1;
        }
        if order == cc.search_order {
            cc.search_order -= 1;
            if cc.search_order < 0 {
                cc.search_order = cc.order - 1;
            }
            return -1;
        }
        order
    }

    /// fast_isolate_freepages(): search the MOVABLE free lists of orders below the request,
    /// from their tails, for a free block in the top quarter (else the top half) of the
    /// scan space; isolate it and what else is free in its pageblock (fast_isolate_around).
    /// Examined entries rotate so the next search sees others; at the start of a scan the
    /// highest block found moves the free scanner there.
    fn fast_isolate_freepages(&mut self, cc: &mut CompactControl) {
        if cc.order <= 0 {
            return;
        }
        let zi = cc.zi;
        let zs = self.pm.zones[zi].start_pfn;
        let mut limit = (cc.freelist_scan_limit() >> 1).max(1);
        let (mut nr_scanned, mut highest) = (0u64, 0u64);
        // free-list entries examined: what the search costs (compact_freelist_ns each);
        // nr_scanned also counts the pages of an isolated block, for compact_free_scanned
        // and the tracepoint only (fast_isolate_freepages(): `nr_scanned += nr_isolated - 1`)
        let mut entries = 0u64;
        let mut page: Option<u64> = None;
        let mut scan_start = false;
        if cc.free_pfn >= self.pm.zones[zi].compact_init_free_pfn {
            limit = PB >> 1;
            scan_start = true;
        }
        let distance = cc.free_pfn.saturating_sub(cc.migrate_pfn);
        let mut low_pfn = pageblock_start(cc.free_pfn - (distance >> 2));
        let min_pfn = pageblock_start(cc.free_pfn - (distance >> 1));
        if min_pfn > low_pfn {
            low_pfn = min_pfn;
        }
        cc.search_order = cc.search_order.min(cc.order - 1);
        let mut order = cc.search_order;
        while page.is_none() && order >= 0 {
            let o = order as u32;
            if self.pm.zones[zi].nr_free_order(o as usize) == 0 {
                order = Self::next_search_order(cc, order);
                continue;
            }
            let mut order_scanned = 0u64;
            let mut high_pfn = 0u64;
            let mut fp = self.pm.free_list(zi, o, MIGRATE_MOVABLE).tail;
            let mut last = NIL;
            while fp != NIL {
                order_scanned += 1;
                nr_scanned += 1;
                entries += 1;
                last = fp;
                let pfn = fp as u64;
                if pfn >= highest {
                    highest = pageblock_start(pfn).max(zs);
                }
                if pfn >= low_pfn {
                    cc.fast_search_fail = 0;
                    cc.search_order = order;
                    page = Some(pfn);
                    break;
                }
                if pfn >= min_pfn && pfn > high_pfn {
                    high_pfn = pfn;
                    limit >>= 1;
                }
                if order_scanned >= limit {
                    break;
                }
                fp = self.pm.free_prev(o, fp);
            }
            if page.is_none() && high_pfn != 0 {
                page = Some(high_pfn);
                last = high_pfn as u32;
            }
            if last != NIL {
                self.pm.rotate_free_list(zi, o, MIGRATE_MOVABLE, last as u64, false);
            }
            if let Some(p) = page {
                if self.isolate_free_block(cc, p).is_some() {
                    nr_scanned += (1u64 << o) - 1;
                } else {
                    // if isolation fails, abort the search
                    order = cc.search_order + 1;
                    page = None;
                }
            }
            if cc.nr_freepages >= cc.nr_migratepages {
                break;
            }
            if order_scanned >= limit {
                limit = (limit >> 1).max(1);
            }
            if page.is_none() {
                order = Self::next_search_order(cc, order);
            }
        }
        self.charge(entries * self.costs.compact_freelist_ns);
        let mut around = page;
        if page.is_none() {
            cc.fast_search_fail += 1;
            if scan_start {
                if highest >= min_pfn {
                    around = Some(highest);
                    cc.free_pfn = highest;
                } else if cc.direct_compaction && min_pfn >= zs {
                    around = Some(min_pfn).filter(|&p| self.suitable_migration_target(cc, p));
                    cc.free_pfn = min_pfn;
                }
            }
        }
        let z = &mut self.pm.zones[zi];
        if highest != 0 && highest >= z.compact_cached_free_pfn {
            z.compact_cached_free_pfn = highest.saturating_sub(PB);
        }
        cc.total_free_scanned += nr_scanned;
        if let Some(p) = around {
            self.fast_isolate_around(cc, p);
        }
    }

    /// fast_isolate_around(): isolate what is free in the found block's pageblock (not
    /// for async direct compaction); a block left with nothing is marked skipped.
    fn fast_isolate_around(&mut self, cc: &mut CompactControl, pfn: u64) {
        if cc.nr_freepages >= cc.nr_migratepages {
            return;
        }
        if cc.direct_compaction && cc.mode == MigrateMode::Async {
            return;
        }
        let (zs, ze) = (self.pm.zones[cc.zi].start_pfn, self.pm.zones[cc.zi].end_pfn());
        let mut start = pageblock_start(pfn).max(zs);
        let end = pageblock_end(pfn).min(ze);
        let page = start;
        self.isolate_freepages_block(cc, &mut start, end, 1);
        if start == end {
            self.pm.set_pb_skip(page, true);
        }
    }

    /// isolate_freepages(): the fast search, then walk down from cc.free_pfn, pageblock by
    /// pageblock, above the migrate scanner, isolating free pages from suitable blocks.
    fn isolate_freepages(&mut self, cc: &mut CompactControl) {
        self.fast_isolate_freepages(cc);
        if cc.nr_freepages > 0 {
            return;
        }
        let (zs, ze) = (self.pm.zones[cc.zi].start_pfn, self.pm.zones[cc.zi].end_pfn());
        let mut isolate_start = cc.free_pfn as i64;
        let mut block_start = pageblock_start(cc.free_pfn) as i64;
        let mut block_end = (block_start as u64 + PB).min(ze);
        let low = pageblock_end(cc.migrate_pfn) as i64;
        let mut stride = if cc.mode == MigrateMode::Async { COMPACT_CLUSTER_MAX as u64 } else { 1 };
        let mut blocks = 0u64;
        while block_start >= low {
            blocks += 1;
            let page = block_start as u64;
            if page >= zs && self.suitable_migration_target(cc, page) && self.isolation_suitable(cc, page) {
                let mut s = isolate_start as u64;
                let nr = self.isolate_freepages_block(cc, &mut s, block_end, stride);
                isolate_start = s as i64;
                if s == block_end {
                    self.update_pageblock_skip(cc, page, block_start - PB as i64);
                }
                if cc.nr_freepages >= cc.nr_migratepages {
                    if s >= block_end {
                        isolate_start = block_start - PB as i64;
                    }
                    break;
                } else if s < block_end {
                    break;
                }
                if nr > 0 {
                    stride = 1;
                } else {
                    stride = (stride << 1).min(COMPACT_CLUSTER_MAX as u64);
                }
            }
            block_end = block_start as u64;
            block_start -= PB as i64;
            isolate_start = block_start;
        }
        self.charge(blocks * self.costs.compact_block_ns);
        cc.free_pfn = isolate_start.max(0) as u64;
    }

    /// compaction_alloc(): a target page for one base page, from the isolated blocks
    /// (the smallest that fits, split on demand), isolating more once when none is left.
    fn compaction_alloc(&mut self, cc: &mut CompactControl) -> Option<u64> {
        let mut has_isolated = false;
        loop {
            if let Some(o) = (0..NR_PAGE_ORDERS).find(|&o| !cc.freepages[o].is_empty()) {
                let pfn = cc.freepages[o].pop_front().unwrap();
                let mut o = o as u32;
                while o > 0 {
                    o -= 1;
                    let half = pfn + (1u64 << o);
                    self.pm.frames[half as usize] = make_isolated_free(o);
                    cc.freepages[o as usize].push_front(half);
                }
                self.pm.frames[pfn as usize] = 0;
                cc.nr_freepages -= 1;
                cc.nr_migratepages = cc.nr_migratepages.saturating_sub(1);
                // the migration copy is the first touch of the target page
                self.page_reporting_touch(pfn, 0);
                return Some(pfn);
            }
            if has_isolated {
                return None;
            }
            self.isolate_freepages(cc);
            has_isolated = true;
        }
    }

    /// release_free_list(): the unused isolated blocks go back (__free_pages: the per-CPU
    /// lists for the orders they keep); returns the highest pfn.
    fn release_free_list(&mut self, cc: &mut CompactControl) -> u64 {
        let mut high = 0;
        let mut n = 0;
        for o in 0..NR_PAGE_ORDERS {
            for pfn in std::mem::take(&mut cc.freepages[o]) {
                self.pm.frames[pfn as usize] = 0;
                self.pm.free_pages(Pfn(pfn), o as u32, &mut self.rec.vm);
                high = high.max(pfn);
                n += 1;
            }
        }
        cc.nr_freepages = 0;
        self.charge(n * self.costs.page_free_ns);
        high
    }

    /// migrate_pages(..., compaction_alloc, compaction_free, mode, MR_COMPACTION) for the
    /// isolated batch. Returns true on -ENOMEM (no target page could be found); the pages
    /// not reached stay where they are (putback_movable_pages).
    fn compact_migrate_pages(&mut self, cc: &mut CompactControl) -> bool {
        let pages = std::mem::take(&mut cc.migratepages);
        let (mut moved, mut enomem) = (0, false);
        for &src in &pages {
            match self.compaction_alloc(cc) {
                Some(dst) => {
                    if is_kernel_movable(self.pm.frames[src as usize]) {
                        self.move_kernel_movable(src, dst);
                    } else {
                        self.move_folio(Pfn(src), Pfn(dst));
                    }
                    moved += 1;
                }
                None => {
                    self.rec.vm.count(Ev::PGMIGRATE_FAIL);
                    enomem = true;
                    break;
                }
            }
        }
        self.rec.vm.add(Ev::PGMIGRATE_SUCCESS, moved);
        trace_event!(self, mm_compaction_migratepages, nr_migratepages = pages.len(), nr_succeeded = moved);
        cc.migratepages = pages;
        cc.migratepages.clear();
        cc.nr_migratepages = 0;
        enomem
    }

    /// Move a held page with movable ops (mm_types make_kernel_movable) to `dst`: its
    /// contents copied (migrate_4k_ns, as a base page), the source freed.
    fn move_kernel_movable(&mut self, src: u64, dst: u64) {
        self.pm.frames[dst as usize] = self.pm.frames[src as usize];
        self.pm.frames[src as usize] = make_kernel(0, false);
        self.charge(self.costs.migrate_4k_ns);
        self.pm.free_pages(Pfn(src), 0, &mut self.rec.vm);
    }

    // ---------------- compact_zone ----------------

    /// __compact_finished() (+ compact_finished(): NO_SUITABLE_PAGE means continue).
    fn compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        let zi = cc.zi;
        let ret = self.__compact_finished(cc);
        trace_event!(
            self,
            mm_compaction_finished,
            nid = self.pm.zones[zi].node,
            zone = self.pm.zones[zi].name,
            order = cc.order,
            ret = result_name(ret),
        );
        if ret == CompactResult::NoSuitablePage {
            CompactResult::Continue
        } else {
            ret
        }
    }

    fn __compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        let zi = cc.zi;
        if cc.scanners_met() {
            self.reset_cached_positions(zi);
            if cc.direct_compaction {
                self.pm.zones[zi].compact_blockskip_flush = true;
            }
            return if cc.whole_zone { CompactResult::Complete } else { CompactResult::PartialSkipped };
        }
        let ret = if cc.proactive {
            if self.kswapd_is_running(self.pm.zones[zi].node) {
                return CompactResult::PartialSkipped;
            }
            let score = vmstat::fragmentation_score_zone(&self.pm.zones[zi]);
            if score > self.fragmentation_score_wmark(true) {
                CompactResult::Continue
            } else {
                CompactResult::Success
            }
        } else {
            if cc.order < 0 {
                return CompactResult::Continue;
            }
            if !cc.migrate_pfn.is_multiple_of(PB) {
                return CompactResult::Continue;
            }
            // vm.defrag_mode: kcompactd works until the high watermark is met in free
            // whole pageblocks
            if self.cfg.defrag_mode && !cc.direct_compaction {
                let z = &self.pm.zones[zi];
                let high = z.wmark(WMARK_HIGH);
                let ok = self.pm.zone_watermark_ok_free(
                    zi,
                    cc.order as u32,
                    high,
                    cc.highest_zoneidx,
                    cc.alloc_flags,
                    z.free_pages_blocks(),
                );
                return if ok { CompactResult::Success } else { CompactResult::Continue };
            }
            let mt = cc.migratetype;
            let mut r = CompactResult::NoSuitablePage;
            for order in cc.order as u32..=MAX_PAGE_ORDER {
                if self.pm.zones[zi].free_area[order as usize].nr_free[mt as usize] > 0 {
                    r = CompactResult::Success;
                    break;
                }
                if self.pm.find_suitable_fallback(zi, order, mt, true) >= 0 {
                    r = CompactResult::Success;
                    break;
                }
            }
            if r == CompactResult::Success {
                return r;
            }
            r
        };
        if cc.contended {
            return CompactResult::Contended;
        }
        ret
    }

    /// Count the scanners' work (compact_zone's epilogue, and kcompactd's
    /// compact_daemon_* counters).
    fn count_scanned(&mut self, cc: &mut CompactControl) {
        let m = cc.total_migrate_scanned - cc.counted_migrate;
        let f = cc.total_free_scanned - cc.counted_free;
        cc.counted_migrate = cc.total_migrate_scanned;
        cc.counted_free = cc.total_free_scanned;
        self.rec.vm.add(Ev::COMPACT_MIGRATE_SCANNED, m);
        self.rec.vm.add(Ev::COMPACT_FREE_SCANNED, f);
        if cc.daemon {
            self.rec.vm.add(Ev::COMPACT_DAEMON_MIGRATE_SCANNED, m);
            self.rec.vm.add(Ev::COMPACT_DAEMON_FREE_SCANNED, f);
        }
    }

    /// compact_zone()'s prologue: early results, scanner start positions.
    fn compact_zone_begin(&mut self, cc: &mut CompactControl) -> Option<CompactResult> {
        let zi = cc.zi;
        if cc.order >= 0 {
            let r = self.compaction_suit_allocation_order(
                zi,
                cc.order as u32,
                cc.highest_zoneidx,
                cc.alloc_flags,
                cc.mode == MigrateMode::Async,
                !cc.direct_compaction,
            );
            if r != CompactResult::Continue {
                return Some(r);
            }
        }
        if self.compaction_restarting(zi, cc.order) {
            self.reset_isolation_suitable_zone(zi);
        }
        let (s, e) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        let sync = cc.mode != MigrateMode::Async;
        cc.fast_start_pfn = None;
        cc.fast_start_used = false;
        if cc.whole_zone {
            cc.migrate_pfn = s;
            cc.free_pfn = pageblock_start(e - 1);
        } else {
            let z = &mut self.pm.zones[zi];
            cc.migrate_pfn = z.compact_cached_migrate_pfn[sync as usize];
            cc.free_pfn = z.compact_cached_free_pfn;
            if cc.free_pfn < s || cc.free_pfn >= e {
                cc.free_pfn = pageblock_start(e - 1);
                z.compact_cached_free_pfn = cc.free_pfn;
            }
            if cc.migrate_pfn < s || cc.migrate_pfn >= e {
                cc.migrate_pfn = s;
                z.compact_cached_migrate_pfn = [s; 2];
            }
            if cc.migrate_pfn <= z.compact_init_migrate_pfn {
                cc.whole_zone = true;
            }
        }
        cc.last_migrated_pfn = 0;
        let z = &self.pm.zones[zi];
        cc.update_cached = !sync && z.compact_cached_migrate_pfn[0] == z.compact_cached_migrate_pfn[1];
        trace_event!(
            self,
            mm_compaction_begin,
            nid = z.node,
            zone = z.name,
            order = cc.order,
            zone_start = s,
            migrate_pfn = cc.migrate_pfn,
            free_pfn = cc.free_pfn,
            zone_end = e,
            mode = if sync { "sync" } else { "async" },
        );
        None
    }

    /// compact_zone()'s loop. With `budget` (an absolute time) the loop stops at the next
    /// iteration (a cond_resched point) once the budget is reached and returns None; the
    /// caller resumes it later. A direct compactor's captured block ends it with SUCCESS.
    fn compact_zone_run(&mut self, cc: &mut CompactControl, budget: Option<u64>) -> Option<CompactResult> {
        let zs = self.pm.zones[cc.zi].start_pfn;
        loop {
            let ret = self.compact_finished(cc);
            if ret != CompactResult::Continue {
                return Some(self.compact_zone_end(cc, ret));
            }
            if budget.is_some_and(|b| self.clock.now + self.clock.cost >= b) {
                return None;
            }
            let iteration_start = cc.migrate_pfn;
            cc.finish_pageblock = pageblock_start(cc.last_migrated_pfn) == pageblock_start(iteration_start);
            loop {
                match self.isolate_migratepages(cc) {
                    Isolate::Abort => {
                        cc.migratepages.clear();
                        cc.nr_migratepages = 0;
                        return Some(self.compact_zone_end(cc, CompactResult::Contended));
                    }
                    Isolate::None => {
                        if cc.update_cached {
                            let z = &mut self.pm.zones[cc.zi];
                            z.compact_cached_migrate_pfn[1] = z.compact_cached_migrate_pfn[0];
                        }
                    }
                    Isolate::Success => {
                        cc.update_cached = false;
                        cc.last_migrated_pfn = zs.max(pageblock_start(cc.migrate_pfn - 1));
                        let enomem = self.compact_migrate_pages(cc);
                        if enomem {
                            if !cc.scanners_met() {
                                return Some(self.compact_zone_end(cc, CompactResult::Contended));
                            }
                            if !cc.migrate_pfn.is_multiple_of(PB)
                                && !cc.ignore_skip_hint
                                && !cc.finish_pageblock
                                && cc.mode < MigrateMode::Sync
                            {
                                cc.finish_pageblock = true;
                                if cc.order == COMPACTION_HPAGE_ORDER as i32 {
                                    cc.last_migrated_pfn = 0;
                                }
                                continue;
                            }
                        }
                        if self.pm.capture.as_ref().is_some_and(|c| c.page.is_some()) {
                            return Some(self.compact_zone_end(cc, CompactResult::Success));
                        }
                    }
                }
                break;
            }
            // check_drain: the migrate scanner left the order-aligned block it migrated
            // from: flush this CPU's per-CPU lists so the freed pages merge
            if cc.order > 0 && cc.last_migrated_pfn != 0 {
                let cur = block_start_order(cc.migrate_pfn, cc.order);
                if cc.last_migrated_pfn < cur {
                    // (a block the drain completes is captured; the loop notices it after
                    // its next migration, as the kernel's does)
                    self.pm.drain_local_pages(cc.zi);
                    cc.last_migrated_pfn = 0;
                }
            }
        }
    }

    /// compact_zone()'s epilogue: release unused targets, update the cached free pfn,
    /// count the scanners.
    fn compact_zone_end(&mut self, cc: &mut CompactControl, ret: CompactResult) -> CompactResult {
        if cc.nr_freepages > 0 {
            let free_pfn = pageblock_start(self.release_free_list(cc));
            let z = &mut self.pm.zones[cc.zi];
            if free_pfn > z.compact_cached_free_pfn {
                z.compact_cached_free_pfn = free_pfn;
            }
        }
        self.count_scanned(cc);
        let z = &self.pm.zones[cc.zi];
        trace_event!(
            self,
            mm_compaction_end,
            nid = z.node,
            zone = z.name,
            order = cc.order,
            zone_start = z.start_pfn,
            migrate_pfn = cc.migrate_pfn,
            free_pfn = cc.free_pfn,
            zone_end = z.end_pfn(),
            sync = cc.mode != MigrateMode::Async,
            status = result_name(ret),
            migrate_scanned = cc.total_migrate_scanned,
            free_scanned = cc.total_free_scanned,
        );
        ret
    }

    /// compact_zone()
    pub fn compact_zone(&mut self, cc: &mut CompactControl) -> CompactResult {
        if let Some(r) = self.compact_zone_begin(cc) {
            return r;
        }
        self.compact_zone_run(cc, None).expect("no budget")
    }

    /// compact_zone_order(): direct compaction of one zone at a priority, with a
    /// capture_control for the task. Returns the result and the captured block.
    fn compact_zone_order(
        &mut self,
        zi: usize,
        order: u32,
        gfp: Gfp,
        prio: CompactPriority,
        alloc_flags: AllocFlags,
        highest_zoneidx: usize,
    ) -> (CompactResult, Option<u64>) {
        let mode = if prio == CompactPriority::Async { MigrateMode::Async } else { MigrateMode::SyncLight };
        let mut cc = CompactControl::new(zi, order as i32, gfp, mode);
        cc.alloc_flags = alloc_flags;
        cc.highest_zoneidx = highest_zoneidx;
        cc.direct_compaction = true;
        let min_prio = prio == MIN_COMPACT_PRIORITY;
        cc.whole_zone = min_prio;
        cc.ignore_skip_hint = min_prio;
        cc.ignore_block_suitable = min_prio;
        self.pm.capture = Some(CaptureControl { zi, order, migratetype: cc.migratetype, page: None });
        let mut ret = self.compact_zone(&mut cc);
        let page = self.pm.capture.take().and_then(|c| c.page);
        if page.is_some() {
            ret = CompactResult::Success;
        }
        (ret, page)
    }

    /// try_to_compact_pages(): direct compaction over the zonelist, skipping deferred
    /// zones (except at the minimum priority), deferring zones where sync compaction ran
    /// to the end without success. Returns the result and a captured block (pfn, zone).
    pub fn try_to_compact_pages(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
        prio: CompactPriority,
    ) -> (CompactResult, Option<(u64, usize)>) {
        if gfp & __GFP_IO == 0 {
            return (CompactResult::Skipped, None);
        }
        trace_event!(self, mm_compaction_try_to_compact_pages, order = order, gfp_mask = gfp, prio = prio as u32);
        let o = order as i32;
        let mut rc = CompactResult::Skipped;
        for &zi in zonelist {
            if prio > MIN_COMPACT_PRIORITY && self.compaction_deferred(zi, o) {
                if rank(CompactResult::Deferred) > rank(rc) {
                    rc = CompactResult::Deferred;
                }
                continue;
            }
            let (status, page) = self.compact_zone_order(zi, order, gfp, prio, alloc_flags, ZONE_NORMAL);
            if rank(status) > rank(rc) {
                rc = status;
            }
            if status == CompactResult::Success {
                self.compaction_defer_reset(zi, o, false);
                return (rc, page.map(|p| (p, zi)));
            }
            if prio != CompactPriority::Async
                && matches!(status, CompactResult::Complete | CompactResult::PartialSkipped)
            {
                self.defer_compaction(zi, o);
            }
        }
        (rc, None)
    }

    /// A compact_control for compact_node(): order -1, whole zones, skip hints ignored;
    /// MIGRATE_SYNC for vm.compact_memory, SYNC_LIGHT and proactive for kcompactd.
    fn compact_node_cc(&self, zi: usize, proactive: bool) -> CompactControl {
        let mode = if proactive { MigrateMode::SyncLight } else { MigrateMode::Sync };
        let mut cc = CompactControl::new(zi, -1, GFP_KERNEL, mode);
        cc.ignore_skip_hint = true;
        cc.whole_zone = true;
        cc.proactive = proactive;
        cc.daemon = proactive;
        cc
    }

    /// compact_node(pgdat, false): vm.compact_memory for one node.
    pub fn compact_node(&mut self, nid: usize) {
        for zi in self.node_zones(nid, MAX_NR_ZONES - 1) {
            let mut cc = self.compact_node_cc(zi, false);
            self.compact_zone(&mut cc);
        }
    }

    /// sysctl_compaction_handler(): vm.compact_memory = 1 compacts every node.
    pub fn compact_all(&mut self) {
        for nid in 0..self.pm.nodes.len() {
            self.compact_node(nid);
        }
    }

    // ---------------- kcompactd ----------------

    /// compaction_proactiveness_sysctl_handler(): a write of a non-zero value sets
    /// proactive_compact_trigger and wakes every kcompactd.
    pub fn compaction_proactiveness_written(&mut self) {
        if self.cfg.compaction_proactiveness == 0 {
            return;
        }
        for nid in 0..self.pm.nodes.len() {
            if self.pgdat[nid].kcompactd.proactive_trigger {
                continue;
            }
            self.pgdat[nid].kcompactd.proactive_trigger = true;
            trace_event!(self, mm_compaction_wakeup_kcompactd, nid = nid, order = -1, highest_zoneidx = ZONE_NORMAL);
            self.wake(Kthread::Kcompactd(nid));
        }
    }

    /// The node's populated zones up to `highest` (zone type), lowest first.
    fn node_zones(&self, nid: usize, highest: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.pm.nodes[nid]
            .zones
            .iter()
            .copied()
            .filter(|&z| self.pm.zones[z].populated() && self.pm.zones[z].idx <= highest)
            .collect();
        v.sort_by_key(|&z| self.pm.zones[z].idx);
        v
    }

    /// The watermark kcompactd works to: min, or high under vm.defrag_mode.
    fn kcompactd_alloc_flags(&self) -> AllocFlags {
        if self.cfg.defrag_mode {
            ALLOC_WMARK_HIGH
        } else {
            ALLOC_WMARK_MIN
        }
    }

    /// kcompactd_node_suitable(): some zone would need and allow compaction for the
    /// recorded request.
    fn kcompactd_node_suitable(&self, nid: usize) -> bool {
        let st = &self.pgdat[nid].kcompactd;
        let (order, highest) = (st.max_order, st.highest_zoneidx);
        let flags = self.kcompactd_alloc_flags();
        self.node_zones(nid, highest).into_iter().any(|zi| {
            self.compaction_suit_allocation_order(zi, order, highest, flags, false, true) == CompactResult::Continue
        })
    }

    /// kcompactd is waiting (wq_has_sleeper): not in the middle of a job.
    fn kcompactd_sleeping(&self, nid: usize) -> bool {
        let st = &self.pgdat[nid].kcompactd;
        st.round.is_none() && st.work.is_none()
    }

    /// wakeup_kcompactd(pgdat, order, highest_zoneidx): record the request; wake kcompactd
    /// if it is waiting and some zone is suitable for compaction.
    pub fn wakeup_kcompactd(&mut self, nid: usize, order: u32, highest_zoneidx: usize) {
        if order == 0 {
            return;
        }
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order < order {
            st.max_order = order;
        }
        if st.highest_zoneidx > highest_zoneidx {
            st.highest_zoneidx = highest_zoneidx;
        }
        if !self.kcompactd_sleeping(nid) || !self.kcompactd_node_suitable(nid) {
            return;
        }
        trace_event!(self, mm_compaction_wakeup_kcompactd, nid = nid, order = order, highest_zoneidx = highest_zoneidx);
        self.wake(Kthread::Kcompactd(nid));
    }

    /// kcompactd_do_work(): compact the node's zones (SYNC_LIGHT, skip hints honoured)
    /// so that a block of the requested order is allocatable; a zone where the scanners
    /// met without success has its per-CPU lists drained and is deferred. Runs (and
    /// resumes) until done or the step's budget is spent; true when done.
    fn kcompactd_do_work(&mut self, nid: usize, budget: u64) -> bool {
        let mut w = match self.pgdat[nid].kcompactd.work.take() {
            Some(w) => w,
            None => {
                let st = &self.pgdat[nid].kcompactd;
                let (order, highest) = (st.max_order, st.highest_zoneidx);
                trace_event!(self, mm_compaction_kcompactd_wake, nid = nid, order = order, highest_zoneidx = highest);
                self.rec.vm.count(Ev::COMPACT_DAEMON_WAKE);
                self.pgdat[nid].kcompactd.do_work_runs += 1;
                DoWork { order, highest, zones: self.node_zones(nid, highest), pos: 0, cc: None }
            }
        };
        let o = w.order as i32;
        while w.pos < w.zones.len() {
            let zi = w.zones[w.pos];
            let mut cc = match w.cc.take() {
                Some(cc) => cc,
                None => {
                    let zidx = self.pm.zones[zi].idx;
                    let flags = self.kcompactd_alloc_flags();
                    if self.compaction_deferred(zi, o)
                        || self.compaction_suit_allocation_order(zi, w.order, zidx, flags, false, true)
                            != CompactResult::Continue
                    {
                        w.pos += 1;
                        continue;
                    }
                    let mut cc = CompactControl::new(zi, o, GFP_KERNEL, MigrateMode::SyncLight);
                    cc.highest_zoneidx = w.highest;
                    cc.alloc_flags = flags;
                    cc.daemon = true;
                    if let Some(r) = self.compact_zone_begin(&mut cc) {
                        self.kcompactd_zone_done(zi, o, r);
                        w.pos += 1;
                        continue;
                    }
                    cc
                }
            };
            match self.compact_zone_run(&mut cc, Some(budget)) {
                None => {
                    w.cc = Some(cc);
                    self.pgdat[nid].kcompactd.work = Some(w);
                    return false;
                }
                Some(r) => {
                    self.kcompactd_zone_done(zi, o, r);
                    w.pos += 1;
                }
            }
        }
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order <= w.order {
            st.max_order = 0;
        }
        if st.highest_zoneidx >= w.highest {
            st.highest_zoneidx = MAX_NR_ZONES - 1;
        }
        true
    }

    /// kcompactd_do_work()'s handling of one zone's result.
    fn kcompactd_zone_done(&mut self, zi: usize, order: i32, status: CompactResult) {
        match status {
            CompactResult::Success => self.compaction_defer_reset(zi, order, false),
            CompactResult::PartialSkipped | CompactResult::Complete => {
                // buddy pages may be stranded on the per-CPU lists
                self.pm.drain_all_pages(Some(zi));
                self.defer_compaction(zi, order);
            }
            _ => {}
        }
    }

    /// kcompactd's first wait: the 500 ms proactive timer when proactiveness > 0.
    pub fn kcompactd_initial(&self, _nid: usize) -> KthreadNext {
        if self.cfg.compaction_proactiveness > 0 {
            KthreadNext::Sleep(HPAGE_FRAG_CHECK_INTERVAL_NS)
        } else {
            KthreadNext::Wait
        }
    }

    /// Run (and resume) a proactive round, compact_node(pgdat, true); true when done.
    fn proactive_slice(&mut self, nid: usize, budget: u64) -> bool {
        let mut round = self.pgdat[nid].kcompactd.round.take().expect("a round");
        while round.pos < round.zones.len() {
            let zi = round.zones[round.pos];
            let mut cc = match round.cc.take() {
                Some(cc) => cc,
                None => {
                    let mut cc = self.compact_node_cc(zi, true);
                    if self.compact_zone_begin(&mut cc).is_some() {
                        round.pos += 1;
                        continue;
                    }
                    cc
                }
            };
            match self.compact_zone_run(&mut cc, Some(budget)) {
                None => {
                    round.cc = Some(cc);
                    self.pgdat[nid].kcompactd.round = Some(round);
                    return false;
                }
                Some(_) => round.pos += 1,
            }
        }
        self.pgdat[nid].kcompactd.round = Some(round);
        true
    }

    /// The wait at the top of kcompactd()'s loop: no timeout at proactiveness 0; returns
    /// at once when work is requested.
    fn kcompactd_wait(&mut self, nid: usize) -> KthreadNext {
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order > 0 || st.proactive_trigger {
            return KthreadNext::Again;
        }
        trace_event!(self, mm_compaction_kcompactd_sleep, nid = nid);
        let st = &mut self.pgdat[nid].kcompactd;
        if self.cfg.compaction_proactiveness == 0 {
            st.deadline = None;
            return KthreadNext::Wait;
        }
        let t = st.timeout_ns;
        st.deadline = Some(self.clock.now + self.clock.cost + t);
        KthreadNext::Sleep(t)
    }

    /// One pass of kcompactd()'s loop, or the next slice of a job in progress. A job
    /// stops at a cond_resched point once the engine has another event due.
    pub fn kcompactd_step(&mut self, nid: usize) -> KthreadNext {
        let budget = self.clock.yield_at.max(self.clock.now + 1);
        if self.pgdat[nid].kcompactd.work.is_some() {
            if !self.kcompactd_do_work(nid, budget) {
                return KthreadNext::Again;
            }
            self.pgdat[nid].kcompactd.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
            return self.kcompactd_wait(nid);
        }
        if self.pgdat[nid].kcompactd.round.is_some() {
            if !self.proactive_slice(nid, budget) {
                return KthreadNext::Again;
            }
            let round = self.pgdat[nid].kcompactd.round.take().unwrap();
            self.proactive_round_done(nid, round.prev_score);
            self.pgdat[nid].kcompactd.proactive_trigger = false;
            return self.kcompactd_wait(nid);
        }
        let st = &self.pgdat[nid].kcompactd;
        let work = st.max_order > 0 || st.proactive_trigger;
        let now = self.clock.now + self.clock.cost;
        if !work {
            if let Some(d) = st.deadline {
                if now < d {
                    // an early wake-up with nothing to do: keep waiting
                    return KthreadNext::Sleep(d - now);
                }
            } else if self.cfg.compaction_proactiveness == 0 {
                return KthreadNext::Wait;
            }
        }
        if work && !st.proactive_trigger {
            self.pgdat[nid].kcompactd.deadline = None;
            if !self.kcompactd_do_work(nid, budget) {
                return KthreadNext::Again;
            }
            self.pgdat[nid].kcompactd.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
            return self.kcompactd_wait(nid);
        }
        // the timer expired (or the proactiveness knob was written)
        self.pgdat[nid].kcompactd.deadline = None;
        self.pgdat[nid].kcompactd.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
        if self.should_proactive_compact_node(nid) {
            let prev_score = self.fragmentation_score_node(nid);
            let zones = self.node_zones(nid, MAX_NR_ZONES - 1);
            self.pgdat[nid].kcompactd.round = Some(ProactiveRound { zones, pos: 0, cc: None, prev_score });
            if !self.proactive_slice(nid, budget) {
                return KthreadNext::Again;
            }
            self.pgdat[nid].kcompactd.round = None;
            self.proactive_round_done(nid, prev_score);
        }
        self.pgdat[nid].kcompactd.proactive_trigger = false;
        self.kcompactd_wait(nid)
    }

    /// After compact_node(pgdat, true): back off for 32 s when the score did not drop.
    fn proactive_round_done(&mut self, nid: usize, prev_score: u64) {
        let score = self.fragmentation_score_node(nid);
        let st = &mut self.pgdat[nid].kcompactd;
        st.proactive_rounds += 1;
        if score >= prev_score {
            st.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS << COMPACT_MAX_DEFER_SHIFT;
            st.proactive_backoffs += 1;
        }
        trace_event!(
            self,
            thplab_proactive_round,
            nid = nid,
            prev_score = prev_score,
            score = score,
            next_timeout_ns = self.pgdat[nid].kcompactd.timeout_ns,
        );
    }

    /// kcompactd state for results: per node rounds, back-offs, do_work runs.
    pub fn kcompactd_summary(&self) -> Value {
        Value::Array(
            self.pgdat
                .iter()
                .map(|n| &n.kcompactd)
                .enumerate()
                .map(|(n, s)| json!({"node": n, "proactive_rounds": s.proactive_rounds, "proactive_backoffs": s.proactive_backoffs, "do_work_runs": s.do_work_runs}))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wmark_formulas() {
        // default proactiveness 20: low 80, high 90 under both formulas
        assert_eq!(fragmentation_score_wmark(20, false, true), 80);
        assert_eq!(fragmentation_score_wmark(20, false, false), 90);
        assert_eq!(fragmentation_score_wmark(20, true, true), 80);
        assert_eq!(fragmentation_score_wmark(20, true, false), 90);
        // 40: 60/70
        assert_eq!(fragmentation_score_wmark(40, false, false), 70);
        assert_eq!(fragmentation_score_wmark(40, true, false), 70);
        // 90: plus10 caps low at 5 (high 15); leeway: low 10, high 10 + 5
        assert_eq!(fragmentation_score_wmark(90, false, true), 10);
        assert_eq!(fragmentation_score_wmark(90, false, false), 20);
        assert_eq!(fragmentation_score_wmark(100, false, true), 5);
        assert_eq!(fragmentation_score_wmark(100, false, false), 15);
        assert_eq!(fragmentation_score_wmark(100, true, true), 0);
        assert_eq!(fragmentation_score_wmark(100, true, false), 0);
        assert_eq!(fragmentation_score_wmark(96, true, false), 6);
        assert_eq!(fragmentation_score_wmark(0, false, false), 100);
        assert_eq!(fragmentation_score_wmark(0, true, false), 100);
    }

    /// fast_isolate_freepages(): the search costs compact_freelist_ns per free-list entry
    /// it looks at; the pages of the block it isolates are counted in nr_scanned
    /// (compact_free_scanned, `nr_scanned += nr_isolated - 1`) but are not entries looked at.
    #[test]
    fn fast_isolate_charges_entries_examined_not_pages_isolated() {
        let m = thplab_workload::MachineSpec::parse_shorthand("1G").unwrap();
        let costs = thplab_workload::costs::CostProfile::default();
        let mut k = Kernel::new(&m, thplab_workload::knobs::defaults(), costs.clone(), 1).unwrap();
        let zi = k.pm.zones.iter().rposition(|z| z.populated()).unwrap();
        let nid = k.pm.zones[zi].node;
        // one free order-8 block: the upper half of an order-9 allocation
        let Pfn(p) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 9, nid).unwrap();
        assert_eq!(k.pm.zones[zi].nr_free_order(8), 0);
        k.pm.free_pages(Pfn(p + 256), 8, &mut k.rec.vm);
        assert_eq!(k.pm.zones[zi].nr_free_order(8), 1);
        let mut cc = CompactControl::new(zi, 9, GFP_TRANSHUGE, MigrateMode::Async);
        cc.direct_compaction = true;
        cc.nr_migratepages = COMPACT_CLUSTER_MAX as u64;
        cc.search_order = 8;
        // the block lies in the top quarter of the scanners' distance: found at once
        cc.migrate_pfn = pageblock_start(p);
        cc.free_pfn = pageblock_start(p) + PB;
        let before = k.clock.cost;
        k.fast_isolate_freepages(&mut cc);
        assert_eq!(cc.nr_freepages, 256, "the order-8 block is isolated");
        assert_eq!(cc.total_free_scanned, 256, "one entry plus the block's other 255 pages");
        assert_eq!(
            k.clock.cost - before,
            costs.compact_freelist_ns + costs.page_alloc_ns,
            "one entry looked at, one block isolated"
        );
        k.release_free_list(&mut cc);
    }

    /// How deep fast_isolate_freepages() searches from the zone's top: a "scan start"
    /// (free_pfn >= compact_init_free_pfn) looks at up to pageblock_nr_pages / 2 entries of
    /// an order, otherwise freelist_scan_limit() / 2. 6.18 boots with compact_init_free_pfn
    /// zero (every search is a scan start until the first __reset_isolation_suitable()); an
    /// aged machine starts as after a reset, its free scanner's restart point at the top block
    /// (a search from there is a scan start; one from below it is not).
    #[test]
    fn an_aged_zone_searches_its_free_lists_as_after_a_reset() {
        let entries_looked_at = |aged: bool| {
            let m = thplab_workload::MachineSpec::parse_shorthand(if aged { "1G,aged" } else { "1G" }).unwrap();
            // only the search is charged: isolating a block found costs nothing here
            let costs = thplab_workload::costs::CostProfile { page_alloc_ns: 0, ..Default::default() };
            let mut k = Kernel::new(&m, thplab_workload::knobs::defaults(), costs.clone(), 1).unwrap();
            let zi = k.pm.zones.iter().rposition(|z| z.populated()).unwrap();
            let (zs, ze) = (k.pm.zones[zi].start_pfn, k.pm.zones[zi].end_pfn());
            let top = pageblock_start(ze - 1);
            if aged {
                assert_eq!((k.pm.zones[zi].compact_init_migrate_pfn, k.pm.zones[zi].compact_init_free_pfn), (zs, top));
            } else {
                assert_eq!(k.pm.zones[zi].compact_init_free_pfn, 0);
            }
            // free order-0 pages below the search's window [top - 2 blocks, top + 1 block):
            // every other page of 800 allocated below top - 4 blocks
            let nid = k.pm.zones[zi].node;
            let floor = top - 4 * PB;
            let pages: Vec<u64> = (0..800).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid).unwrap().0).collect();
            let below: Vec<u64> = pages.iter().copied().filter(|&p| p < floor).collect();
            assert!(below.len() > 700);
            for &p in below.iter().step_by(2) {
                k.pm.free_pages(Pfn(p), 0, &mut k.rec.vm);
            }
            k.pm.drain_all_pages(None);
            let mut cc = CompactControl::new(zi, 9, GFP_TRANSHUGE, MigrateMode::Async);
            cc.direct_compaction = true;
            cc.nr_migratepages = COMPACT_CLUSTER_MAX as u64;
            cc.search_order = 0;
            // the cached free pfn once a search has moved it off the top block
            cc.migrate_pfn = floor;
            cc.free_pfn = top - PB;
            let before = k.clock.cost;
            k.fast_isolate_freepages(&mut cc);
            (k.clock.cost - before) / costs.compact_freelist_ns
        };
        let (aged, boot) = (entries_looked_at(true), entries_looked_at(false));
        assert!(aged <= 16 * 9, "aged: at most freelist_scan_limit() / 2 = 16 per order, looked at {aged}");
        assert!(boot >= 256, "boot: a scan start looks at pageblock_nr_pages / 2, looked at {boot}");
    }

    #[test]
    fn priorities_as_the_kernel_orders_them() {
        // lower value = higher priority: SYNC_FULL < SYNC_LIGHT < ASYNC
        assert!(MIN_COMPACT_PRIORITY < MIN_COMPACT_COSTLY_PRIORITY);
        assert_eq!(DEF_COMPACT_PRIORITY, CompactPriority::SyncLight);
        assert!(INIT_COMPACT_PRIORITY > DEF_COMPACT_PRIORITY);
    }
}
