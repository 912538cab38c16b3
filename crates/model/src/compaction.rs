//! Memory compaction (mm/compaction.c): direct compaction from the allocator's slow path,
//! kcompactd (woken by kswapd, and proactive compaction on its 500 ms timer), and manual
//! compaction (vm.compact_memory). Written from the kernel's behaviour; each function
//! names the kernel function it models.
//!
//! **compact_zone.** The migrate scanner walks up from the zone start (or the cached
//! position), pageblock by pageblock, isolating up to COMPACT_CLUSTER_MAX (32) movable
//! base pages per batch; the free scanner walks down from the zone end isolating free
//! buddy blocks (taken off the buddy lists, `PhysMem::isolate_free_page`) as migration
//! targets; isolated pages are moved with `move_folio` (contents, mapping and LRU follow).
//! Never isolated: KERNEL/PGTABLE/ZERO/RESERVED frames, pages off the LRU or already
//! isolated (held by someone else: the model's stand-in for pinned pages), unevictable
//! (mlocked) pages unless vm.compact_unevictable_allowed, and PMD THPs
//! (skip_isolation_on_order: order >= pageblock_order is never migrated by compaction).
//! Async direct compaction only takes sources from pageblocks of the allocation's
//! migratetype and gives up on an order-aligned block at the first page it cannot
//! isolate (skip_on_failure). The free scanner only takes targets in MOVABLE pageblocks
//! whose first page is not already a free block of the requested order or larger.
//!
//! **Simplifications** (documented): fast_find_migrateblock() and
//! fast_isolate_freepages() (free-list searches that jump the scanners) are not modelled:
//! both scanners are linear. Isolated free blocks are split on demand, lowest pfn first
//! (v6.9+ compaction_alloc), not split to order 0 up front. __reset_isolation_suitable()
//! clears every non-persistent skip bit and restarts both scanners at the zone ends
//! instead of sampling blocks. No per-cpu lists, no lock contention: COMPACT_CONTENDED
//! only arises when the free scanner stops on the min watermark before the scanners meet.
//! There is no capture_control: after COMPACT_SUCCESS the allocator takes the block from
//! the free lists (nothing else runs in between in the model).
//!
//! **Costs** (reusing the profile; no new fields): each struct-page visit of a scanner
//! (one step of isolate_migratepages_block / isolate_freepages_block; a whole free buddy
//! or compound folio is one step, as in the kernel) costs `pte_walk_ns`; each pageblock
//! the block walkers consider costs `pmd_walk_ns`; isolating a free block costs
//! `page_alloc_ns` and returning one `page_free_ns`; each migrated base page costs
//! `migrate_4k_ns` (charged by move_folio: unmap, copy, remap, TLB flush).
//!
//! **kcompactd.** One per node. Woken by kswapd (`wakeup_kcompactd`) it runs
//! kcompactd_do_work() (SYNC_LIGHT, skipping deferred / watermark-ok / unsuitable zones,
//! deferring on COMPLETE or PARTIAL_SKIPPED). Every 500 ms, when
//! vm.compaction_proactiveness > 0, it computes the node's fragmentation score and, above
//! the high watermark, compacts every zone (order -1, whole zone, ignoring skip hints,
//! SYNC_LIGHT) until each zone's score is at most the low watermark; when a round did
//! not lower the node score it backs off for 500 ms << 6 = 32 s. A proactive round runs
//! in slices of KCOMPACTD_SLICE_NS of simulated CPU time so that it interleaves with the
//! workload (the kernel's cond_resched points); between slices the isolated free pages
//! go back to the buddy lists (the kernel keeps them in cc->freepages).

use crate::consts::*;
use crate::gfp::*;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::kthread::KthreadNext;
use crate::mm_types::*;
use crate::mmzone::*;
use crate::trace::trace_event;
use crate::vmstat::{self, Ev};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactPriority {
    SyncFull,
    SyncLight,
    Async,
}

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
/// Simulated CPU time of one kcompactd engine step during a proactive round.
pub const KCOMPACTD_SLICE_NS: u64 = 2_000_000;

const PB: u64 = PAGEBLOCK_NR_PAGES;

#[inline]
fn pageblock_start(pfn: u64) -> u64 {
    pfn & !(PB - 1)
}
/// pageblock_end_pfn(): ALIGN(pfn + 1, pageblock_nr_pages)
#[inline]
fn pageblock_end(pfn: u64) -> u64 {
    pageblock_start(pfn) + PB
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

/// struct compact_control (the parts the model uses).
#[derive(Clone, Debug)]
pub struct CompactControl {
    pub zi: usize,
    /// -1: compact everything (vm.compact_memory, proactive)
    pub order: i32,
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
    pub migrate_pfn: u64,
    pub free_pfn: u64,
    migratepages: Vec<u64>,
    nr_migratepages: usize,
    /// isolated free blocks (pfn, order), split on demand
    freepages: Vec<(u64, u32)>,
    nr_freepages: usize,
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
            migrate_pfn: 0,
            free_pfn: 0,
            migratepages: Vec::with_capacity(COMPACT_CLUSTER_MAX),
            nr_migratepages: 0,
            freepages: vec![],
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
}

/// A proactive round in progress (proactive_compact_node), resumable between slices.
#[derive(Clone, Debug)]
struct ProactiveRound {
    zones: Vec<usize>,
    pos: usize,
    cc: Option<CompactControl>,
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
    round: Option<ProactiveRound>,
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
            proactive_rounds: 0,
            proactive_backoffs: 0,
            do_work_runs: 0,
        }
    }
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

    /// pageblock_skip_persistent(): the block starts with a compound page of order >=
    /// pageblock_order (a PMD THP, the huge zero page); its skip bit stays.
    fn pageblock_skip_persistent(&self, pfn: u64) -> bool {
        let f = self.pm.frames[pageblock_start(pfn) as usize];
        (tag(f) == TAG_ANON && compound(f) == COMPOUND_HEAD) || tag(f) == TAG_ZERO
    }

    /// __reset_isolation_suitable() (simplified: see the module doc).
    fn reset_isolation_suitable_zone(&mut self, zi: usize) {
        if !self.pm.zones[zi].compact_blockskip_flush {
            return;
        }
        self.pm.zones[zi].compact_blockskip_flush = false;
        let (s, e) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        let mut pb = pageblock_start(s);
        let mut blocks = 0;
        while pb < e {
            if !self.pageblock_skip_persistent(pb.max(s)) {
                self.pm.set_pb_skip(pb.max(s), false);
            }
            pb += PB;
            blocks += 1;
        }
        self.charge(blocks * self.costs.pmd_walk_ns);
        let z = &mut self.pm.zones[zi];
        z.compact_init_migrate_pfn = s;
        z.compact_init_free_pfn = pageblock_start(e - 1);
        self.reset_cached_positions(zi);
    }

    /// reset_isolation_suitable(pgdat): kswapd calls this before sleeping; it clears the
    /// skip bits of zones where a direct compaction's scanners met.
    pub fn reset_isolation_suitable(&mut self, nid: usize) {
        let zs = self.pm.nodes[nid].zones.clone();
        for zi in zs {
            if self.pm.zones[zi].populated() && self.pm.zones[zi].compact_blockskip_flush {
                self.reset_isolation_suitable_zone(zi);
            }
        }
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

    /// compaction_suitable(): enough order-0 free pages above the (low for costly
    /// orders, else min) watermark plus compact_gap (2 << order), and for costly orders
    /// a fragmentation index above vm.extfrag_threshold (or -1000).
    pub fn compaction_suitable(&self, zi: usize, order: i32, highest_zoneidx: usize) -> bool {
        let z = &self.pm.zones[zi];
        let o = order.max(0) as u32;
        let mark = if o > PAGE_ALLOC_COSTLY_ORDER { z.wmark(WMARK_LOW) } else { z.wmark(WMARK_MIN) } + (2u64 << o);
        if !self.pm.zone_watermark_ok(zi, 0, mark, highest_zoneidx, 0) {
            return false;
        }
        if o > PAGE_ALLOC_COSTLY_ORDER {
            let fragindex = vmstat::fragmentation_index(z, o);
            if fragindex >= 0 && fragindex <= self.cfg.extfrag_threshold as i64 {
                return false;
            }
        }
        true
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

    /// isolate_migratepages(): find the next suitable source pageblock below the free
    /// scanner and isolate from it. Returns true when pages were isolated.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> bool {
        let zs = self.pm.zones[cc.zi].start_pfn;
        // fast_find_migrateblock() is not modelled: the scan is linear.
        let mut low_pfn = cc.migrate_pfn;
        let mut block_start = pageblock_start(low_pfn).max(zs);
        let mut block_end = pageblock_end(low_pfn);
        let mut blocks = 0u64;
        let mut found = false;
        while block_end <= cc.free_pfn {
            blocks += 1;
            let skipped =
                (low_pfn.is_multiple_of(PB) || low_pfn == zs) && !cc.ignore_skip_hint && self.pm.pb_skip(block_start);
            if !skipped {
                if !self.suitable_migration_source(cc, block_start) {
                    self.update_cached_migrate(cc, block_end);
                } else {
                    self.isolate_migratepages_block(cc, low_pfn, block_end);
                    found = true;
                    break;
                }
            }
            cc.migrate_pfn = block_end;
            low_pfn = block_end;
            block_start = block_end;
            block_end += PB;
        }
        self.charge(blocks * self.costs.pmd_walk_ns);
        let _ = found;
        cc.nr_migratepages = cc.migratepages.len();
        cc.nr_migratepages > 0
    }

    /// isolate_migratepages_block(): isolate movable base pages of [low, end) onto
    /// cc.migratepages, at most COMPACT_CLUSTER_MAX unless finishing the block.
    fn isolate_migratepages_block(&mut self, cc: &mut CompactControl, low: u64, end: u64) {
        let zs = self.pm.zones[cc.zi].start_pfn;
        let unevictable_ok = self.cfg.compact_unevictable_allowed;
        let skip_on_failure = cc.direct_compaction && cc.mode == MigrateMode::Async && cc.order > 0;
        let order_pages = if cc.order > 0 { 1u64 << cc.order } else { 1 };
        let block_end_order = |pfn: u64| (pfn + 1).div_ceil(order_pages) * order_pages;
        let mut next_skip_pfn = if skip_on_failure { block_end_order(low) } else { 0 };
        let mut pfn = low;
        let mut nr_scanned = 0u64;
        let mut steps = 0u64;
        let mut nr_isolated = 0u64;
        let mut valid_page: Option<u64> = None;
        let mut aborted = false;
        while pfn < end {
            if skip_on_failure && pfn >= next_skip_pfn {
                if nr_isolated > 0 {
                    break;
                }
                next_skip_pfn = block_end_order(pfn);
            }
            nr_scanned += 1;
            steps += 1;
            if valid_page.is_none() && (pfn.is_multiple_of(PB) || pfn == zs) {
                if !cc.ignore_skip_hint && self.pm.pb_skip(pfn) {
                    pfn = end;
                    aborted = true;
                    break;
                }
                valid_page = Some(pfn);
            }
            let f = self.pm.frames[pfn as usize];
            // Some(n): step over n pfns and count it a failure; None: isolated or skipped fine
            let fail: Option<u64> = match tag(f) {
                TAG_FREE => {
                    // a free buddy: step over it (not a failure)
                    let o = free_order(f);
                    let n = 1u64 << o;
                    nr_scanned += n - 1;
                    pfn += n;
                    continue;
                }
                TAG_ANON => match compound(f) {
                    COMPOUND_BASE => {
                        let l = lru(f);
                        if l == LRU_NONE || isolated(f) || ((l == LRU_UNEVICTABLE || mlocked(f)) && !unevictable_ok) {
                            Some(1)
                        } else {
                            cc.migratepages.push(pfn);
                            nr_isolated += 1;
                            if cc.migratepages.len() >= COMPACT_CLUSTER_MAX && !cc.finish_pageblock {
                                pfn += 1;
                                break;
                            }
                            None
                        }
                    }
                    // a PMD THP: skip_isolation_on_order(9, order) is always true
                    COMPOUND_HEAD => {
                        nr_scanned += HPAGE_PMD_NR - 1;
                        Some(HPAGE_PMD_NR)
                    }
                    // a tail (entered mid-folio): compound_order() of a tail is 0
                    _ => Some(1),
                },
                TAG_ZERO => {
                    if pfn.is_multiple_of(HPAGE_PMD_NR) {
                        nr_scanned += HPAGE_PMD_NR - 1;
                        Some(HPAGE_PMD_NR)
                    } else {
                        Some(1)
                    }
                }
                TAG_KERNEL => {
                    // not compound, not on the LRU: the kernel visits every page of the
                    // allocation; step over the block at once but count every page
                    let o = free_order(f);
                    let next = (pageblock_start(pfn).max(pfn & !((1u64 << o) - 1)) + (1u64 << o)).min(end);
                    let n = next.max(pfn + 1) - pfn;
                    if skip_on_failure {
                        Some(1)
                    } else {
                        nr_scanned += n - 1;
                        steps += n - 1;
                        Some(n)
                    }
                }
                _ => Some(1),
            };
            match fail {
                None => pfn += 1,
                Some(n) => {
                    pfn += n;
                    if skip_on_failure {
                        // isolate_fail: give up on this order-aligned block
                        if nr_isolated > 0 {
                            cc.migratepages.clear();
                            nr_isolated = 0;
                        }
                        if pfn < next_skip_pfn {
                            pfn = next_skip_pfn;
                            next_skip_pfn += order_pages;
                        }
                    }
                }
            }
        }
        pfn = pfn.min(end);
        if pfn == end && (nr_isolated == 0 || cc.finish_pageblock) {
            if let (Some(v), false) = (valid_page, aborted) {
                self.pm.set_pb_skip(v, true);
            }
            self.update_cached_migrate(cc, pfn);
        }
        cc.total_migrate_scanned += nr_scanned;
        if nr_isolated > 0 {
            self.rec.vm.add(Ev::COMPACT_ISOLATED, nr_isolated);
        }
        trace_event!(
            self,
            mm_compaction_isolate_migratepages,
            start_pfn = low,
            end_pfn = pfn,
            nr_scanned = nr_scanned,
            nr_taken = nr_isolated,
        );
        cc.migrate_pfn = pfn;
        self.charge(steps * self.costs.pte_walk_ns);
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

    /// isolate_freepages_block(): isolate free blocks of [*start, end) stepping by
    /// `stride`, until enough for the pending migration batch. Returns pages isolated.
    fn isolate_freepages_block(&mut self, cc: &mut CompactControl, start: &mut u64, end: u64, stride: u64) -> u64 {
        let mut pfn = *start;
        let mut nr_scanned = 0u64;
        let mut steps = 0u64;
        let mut total = 0u64;
        let mut blocks = 0u64;
        while pfn < end {
            nr_scanned += 1;
            steps += 1;
            let f = self.pm.frames[pfn as usize];
            let t = tag(f);
            if (t == TAG_ANON && compound(f) == COMPOUND_HEAD) || (t == TAG_ZERO && pfn.is_multiple_of(HPAGE_PMD_NR)) {
                if pfn + HPAGE_PMD_NR <= end {
                    pfn += HPAGE_PMD_NR - 1;
                    nr_scanned += HPAGE_PMD_NR - 1;
                }
            } else if t == TAG_FREE {
                let Some(o) = self.pm.isolate_free_page(cc.zi, pfn) else { break };
                let n = 1u64 << o;
                blocks += 1;
                nr_scanned += n - 1;
                total += n;
                cc.nr_freepages += n as usize;
                cc.freepages.push((pfn, o));
                if cc.nr_freepages >= cc.nr_migratepages {
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
        trace_event!(
            self,
            mm_compaction_isolate_freepages,
            start_pfn = *start,
            end_pfn = pfn,
            nr_scanned = nr_scanned,
            nr_taken = total,
        );
        *start = pfn;
        cc.total_free_scanned += nr_scanned;
        if total > 0 {
            self.rec.vm.add(Ev::COMPACT_ISOLATED, total);
        }
        self.charge(steps * self.costs.pte_walk_ns + blocks * self.costs.page_alloc_ns);
        total
    }

    /// isolate_freepages(): walk down from cc.free_pfn, pageblock by pageblock, above the
    /// migrate scanner, isolating free pages from suitable target blocks.
    fn isolate_freepages(&mut self, cc: &mut CompactControl) {
        // fast_isolate_freepages() is not modelled: the scan is linear.
        let (zs, ze) = (self.pm.zones[cc.zi].start_pfn, self.pm.zones[cc.zi].end_pfn());
        let mut isolate_start = cc.free_pfn as i64;
        let mut block_start = pageblock_start(cc.free_pfn) as i64;
        let mut block_end = (block_start as u64 + PB).min(ze);
        let low = pageblock_end(cc.migrate_pfn) as i64;
        let mut stride = if cc.mode == MigrateMode::Async { COMPACT_CLUSTER_MAX as u64 } else { 1 };
        let mut blocks = 0u64;
        while block_start >= low {
            blocks += 1;
            let page = (block_start as u64).max(zs);
            if self.suitable_migration_target(cc, page) && (cc.ignore_skip_hint || !self.pm.pb_skip(page)) {
                let mut s = (isolate_start as u64).max(zs);
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
                stride = if nr > 0 { 1 } else { (stride << 1).min(COMPACT_CLUSTER_MAX as u64) };
            }
            block_end = block_start as u64;
            block_start -= PB as i64;
            isolate_start = block_start;
        }
        self.charge(blocks * self.costs.pmd_walk_ns);
        cc.free_pfn = isolate_start.max(0) as u64;
    }

    /// compaction_alloc(): a target page for one migration (order 0), isolating more
    /// free pages when the list is empty.
    fn compaction_alloc(&mut self, cc: &mut CompactControl) -> Option<u64> {
        if cc.freepages.is_empty() {
            self.isolate_freepages(cc);
            if cc.freepages.is_empty() {
                return None;
            }
        }
        let (pfn, o) = cc.freepages.pop().unwrap();
        for k in (0..o).rev() {
            cc.freepages.push((pfn + (1 << k), k));
        }
        cc.nr_freepages -= 1;
        Some(pfn)
    }

    /// release_freepages(): return unused targets to the buddy lists; the highest pfn.
    fn release_freepages(&mut self, cc: &mut CompactControl) -> u64 {
        let mut high = 0;
        let n = cc.freepages.len() as u64;
        for (pfn, o) in std::mem::take(&mut cc.freepages) {
            let mt = self.pm.pb_mt(pfn);
            self.pm.free_one_page(cc.zi, pfn, o, mt);
            high = high.max(pfn);
        }
        cc.nr_freepages = 0;
        self.charge(n * self.costs.page_free_ns);
        high
    }

    /// migrate_pages(..., compaction_alloc, compaction_free, mode, MR_COMPACTION) for the
    /// isolated batch. Returns true on -ENOMEM (no target page could be found).
    fn compact_migrate_pages(&mut self, cc: &mut CompactControl) -> bool {
        let pages = std::mem::take(&mut cc.migratepages);
        let mut enomem = false;
        let mut moved = 0;
        for &src in &pages {
            match self.compaction_alloc(cc) {
                Some(dst) => {
                    self.move_folio(Pfn(src), Pfn(dst));
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
        trace_event!(self, mm_compaction_migratepages, nr_migrated = moved, nr_failed = enomem as u64);
        cc.migratepages = pages;
        cc.migratepages.clear();
        cc.nr_migratepages = 0;
        enomem
    }

    // ---------------- compact_zone ----------------

    /// compact_finished(): __compact_finished() and its tracepoint (the model never
    /// returns NO_SUITABLE_PAGE, which the kernel turns into CONTINUE here).
    fn compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        let ret = self.compact_finished_check(cc);
        let z = &self.pm.zones[cc.zi];
        trace_event!(
            self,
            mm_compaction_finished,
            nid = z.node,
            zone = z.name,
            order = cc.order,
            ret = result_name(ret)
        );
        ret
    }

    /// __compact_finished()
    fn compact_finished_check(&mut self, cc: &CompactControl) -> CompactResult {
        let zi = cc.zi;
        if cc.scanners_met() {
            self.reset_cached_positions(zi);
            if cc.direct_compaction {
                self.pm.zones[zi].compact_blockskip_flush = true;
            }
            return if cc.whole_zone { CompactResult::Complete } else { CompactResult::PartialSkipped };
        }
        if cc.proactive {
            if self.kswapd_is_running(self.pm.zones[zi].node) {
                return CompactResult::PartialSkipped;
            }
            let score = vmstat::fragmentation_score_zone(&self.pm.zones[zi]);
            return if score > self.fragmentation_score_wmark(true) {
                CompactResult::Continue
            } else {
                CompactResult::Success
            };
        }
        if cc.order < 0 {
            return CompactResult::Continue;
        }
        if !cc.migrate_pfn.is_multiple_of(PB) {
            return CompactResult::Continue;
        }
        let mt = cc.migratetype;
        for order in cc.order as u32..=MAX_PAGE_ORDER {
            if self.pm.zones[zi].free_area[order as usize].nr_free[mt as usize] > 0 {
                return CompactResult::Success;
            }
            // v6.15 defrag_mode: only whole pageblocks may be claimed
            if self.cfg.defrag_mode && order < PAGEBLOCK_ORDER {
                continue;
            }
            if self.pm.find_suitable_fallback(zi, order, mt, true) >= 0 {
                return CompactResult::Success;
            }
        }
        CompactResult::Continue
    }

    /// Count the scanners' progress since the last count (compact_zone's epilogue, and
    /// kcompactd's compact_daemon_* counters).
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
            let mark = self.pm.zones[zi].wmark((cc.alloc_flags & ALLOC_WMARK_MASK) as usize);
            if self.pm.zone_watermark_ok(zi, cc.order as u32, mark, cc.highest_zoneidx, cc.alloc_flags) {
                return Some(CompactResult::Success);
            }
            let suitable = self.compaction_suitable(zi, cc.order, cc.highest_zoneidx);
            let ret = if suitable { CompactResult::Continue } else { CompactResult::Skipped };
            let z = &self.pm.zones[zi];
            trace_event!(
                self,
                mm_compaction_suitable,
                nid = z.node,
                zone = z.name,
                order = cc.order,
                ret = result_name(ret)
            );
            if !suitable {
                return Some(CompactResult::Skipped);
            }
        }
        if self.compaction_restarting(zi, cc.order) {
            self.reset_isolation_suitable_zone(zi);
        }
        let (s, e) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        let sync = cc.mode != MigrateMode::Async;
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
            sync = sync,
        );
        None
    }

    /// compact_zone()'s loop. With `budget` (an absolute `self.clock.cost` value) the loop
    /// pauses when the budget is spent and returns None; call again to resume.
    fn compact_zone_run(&mut self, cc: &mut CompactControl, budget: Option<u64>) -> Option<CompactResult> {
        let zs = self.pm.zones[cc.zi].start_pfn;
        loop {
            let ret = self.compact_finished(cc);
            if ret != CompactResult::Continue {
                return Some(self.compact_zone_end(cc, ret));
            }
            if budget.is_some_and(|b| self.clock.cost >= b) {
                // pause: hand the isolated targets back; resume at the highest of them
                if cc.nr_freepages > 0 {
                    let high = pageblock_start(self.release_freepages(cc));
                    cc.free_pfn = cc.free_pfn.max(high);
                }
                self.count_scanned(cc);
                return None;
            }
            let iteration_start = cc.migrate_pfn;
            cc.finish_pageblock = pageblock_start(cc.last_migrated_pfn) == pageblock_start(iteration_start);
            loop {
                if !self.isolate_migratepages(cc) {
                    if cc.update_cached {
                        let z = &mut self.pm.zones[cc.zi];
                        z.compact_cached_migrate_pfn[1] = z.compact_cached_migrate_pfn[0];
                    }
                    break;
                }
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
                break;
            }
        }
    }

    /// compact_zone()'s epilogue: release unused targets, update the cached free pfn,
    /// count the scanners.
    fn compact_zone_end(&mut self, cc: &mut CompactControl, ret: CompactResult) -> CompactResult {
        if cc.nr_freepages > 0 {
            let free_pfn = pageblock_start(self.release_freepages(cc));
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

    /// compact_zone_order(): direct compaction of one zone at a priority.
    fn compact_zone_order(
        &mut self,
        zi: usize,
        order: u32,
        gfp: Gfp,
        prio: CompactPriority,
        alloc_flags: AllocFlags,
        highest_zoneidx: usize,
    ) -> CompactResult {
        let mode = if prio == CompactPriority::Async { MigrateMode::Async } else { MigrateMode::SyncLight };
        let mut cc = CompactControl::new(zi, order as i32, gfp, mode);
        cc.alloc_flags = alloc_flags;
        cc.highest_zoneidx = highest_zoneidx;
        cc.direct_compaction = true;
        let min_prio = prio == CompactPriority::SyncFull;
        cc.whole_zone = min_prio;
        cc.ignore_skip_hint = min_prio;
        cc.ignore_block_suitable = min_prio;
        self.compact_zone(&mut cc)
    }

    /// try_to_compact_pages(): direct compaction over the zonelist, skipping deferred
    /// zones (except at the minimum priority), deferring zones where sync compaction
    /// ran to the end without success.
    pub fn try_to_compact_pages(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
        prio: CompactPriority,
    ) -> CompactResult {
        if gfp & __GFP_IO == 0 {
            return CompactResult::Skipped;
        }
        trace_event!(self, mm_compaction_try_to_compact_pages, order = order, gfp_mask = gfp, prio = prio as u32);
        let o = order as i32;
        let mut rc = CompactResult::Skipped;
        for &zi in zonelist {
            if prio != CompactPriority::SyncFull && self.compaction_deferred(zi, o) {
                if rank(CompactResult::Deferred) > rank(rc) {
                    rc = CompactResult::Deferred;
                }
                continue;
            }
            let status = self.compact_zone_order(zi, order, gfp, prio, alloc_flags, ZONE_NORMAL);
            if rank(status) > rank(rc) {
                rc = status;
            }
            if status == CompactResult::Success {
                self.compaction_defer_reset(zi, o, false);
                break;
            }
            if prio != CompactPriority::Async
                && matches!(status, CompactResult::Complete | CompactResult::PartialSkipped)
            {
                self.defer_compaction(zi, o);
            }
        }
        rc
    }

    /// compact_node(): order -1, MIGRATE_SYNC, whole zones, ignoring skip hints.
    pub fn compact_node(&mut self, nid: usize) {
        let zs = self.pm.nodes[nid].zones.clone();
        for zi in zs {
            if !self.pm.zones[zi].populated() {
                continue;
            }
            let mut cc = CompactControl::new(zi, -1, GFP_KERNEL, MigrateMode::Sync);
            cc.ignore_skip_hint = true;
            cc.whole_zone = true;
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

    /// kcompactd_node_suitable()
    fn kcompactd_node_suitable(&self, nid: usize) -> bool {
        let st = &self.pgdat[nid].kcompactd;
        let (order, highest) = (st.max_order, st.highest_zoneidx);
        for zi in self.node_zones(nid, highest) {
            let min = self.pm.zones[zi].wmark(WMARK_MIN);
            if self.pm.zone_watermark_ok(zi, order, min, highest, 0) {
                continue;
            }
            if self.compaction_suitable(zi, order as i32, highest) {
                return true;
            }
        }
        false
    }

    /// wakeup_kcompactd(pgdat, order, highest_zoneidx) with highest_zoneidx = ZONE_NORMAL
    /// (the model's allocations never restrict zones further): record the request and
    /// wake kcompactd if it is waiting and some zone is suitable for compaction.
    pub fn wakeup_kcompactd(&mut self, nid: usize, order: u32) {
        if order == 0 {
            return;
        }
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order < order {
            st.max_order = order;
        }
        if st.highest_zoneidx > ZONE_NORMAL {
            st.highest_zoneidx = ZONE_NORMAL;
        }
        // wq_has_sleeper(): not while a proactive round is running
        if st.round.is_some() {
            return;
        }
        if !self.kcompactd_node_suitable(nid) {
            return;
        }
        trace_event!(self, mm_compaction_wakeup_kcompactd, nid = nid, order = order, highest_zoneidx = ZONE_NORMAL);
        self.wake(Kthread::Kcompactd(nid));
    }

    /// kcompactd_do_work()
    fn kcompactd_do_work(&mut self, nid: usize) {
        let (order, highest) = (self.pgdat[nid].kcompactd.max_order, self.pgdat[nid].kcompactd.highest_zoneidx);
        self.pgdat[nid].kcompactd.do_work_runs += 1;
        trace_event!(self, mm_compaction_kcompactd_wake, nid = nid, order = order, highest_zoneidx = highest);
        self.rec.vm.count(Ev::COMPACT_DAEMON_WAKE);
        let o = order as i32;
        for zi in self.node_zones(nid, highest) {
            let zidx = self.pm.zones[zi].idx;
            if self.compaction_deferred(zi, o) {
                continue;
            }
            let min = self.pm.zones[zi].wmark(WMARK_MIN);
            if self.pm.zone_watermark_ok(zi, order, min, zidx, 0) {
                continue;
            }
            if !self.compaction_suitable(zi, o, zidx) {
                continue;
            }
            let mut cc = CompactControl::new(zi, o, GFP_KERNEL, MigrateMode::SyncLight);
            cc.highest_zoneidx = highest;
            cc.daemon = true;
            let status = self.compact_zone(&mut cc);
            match status {
                CompactResult::Success => self.compaction_defer_reset(zi, o, false),
                CompactResult::PartialSkipped | CompactResult::Complete => self.defer_compaction(zi, o),
                _ => {}
            }
        }
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order <= order {
            st.max_order = 0;
        }
        if st.highest_zoneidx >= highest {
            st.highest_zoneidx = MAX_NR_ZONES - 1;
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

    /// Run (a slice of) the proactive round; true when the round is over.
    fn proactive_slice(&mut self, round: &mut ProactiveRound) -> bool {
        let budget = self.clock.cost + KCOMPACTD_SLICE_NS;
        while round.pos < round.zones.len() {
            if round.cc.is_none() {
                let zi = round.zones[round.pos];
                let mut cc = CompactControl::new(zi, -1, GFP_KERNEL, MigrateMode::SyncLight);
                cc.ignore_skip_hint = true;
                cc.whole_zone = true;
                cc.proactive = true;
                cc.daemon = true;
                if self.compact_zone_begin(&mut cc).is_some() {
                    round.pos += 1;
                    continue;
                }
                round.cc = Some(cc);
            }
            let cc = round.cc.as_mut().unwrap();
            match self.compact_zone_run(cc, Some(budget)) {
                None => return false,
                Some(_) => {
                    round.cc = None;
                    round.pos += 1;
                }
            }
        }
        true
    }

    /// The wait at the top of kcompactd()'s loop.
    fn kcompactd_wait(&mut self, nid: usize) -> KthreadNext {
        let st = &mut self.pgdat[nid].kcompactd;
        if st.max_order > 0 || st.proactive_trigger {
            return KthreadNext::Again;
        }
        trace_event!(self, mm_compaction_kcompactd_sleep, nid = nid);
        if self.cfg.compaction_proactiveness == 0 {
            self.pgdat[nid].kcompactd.deadline = None;
            return KthreadNext::Wait;
        }
        let st = &mut self.pgdat[nid].kcompactd;
        let t = st.timeout_ns;
        st.deadline = Some(self.clock.now + self.clock.cost + t);
        KthreadNext::Sleep(t)
    }

    /// One iteration of kcompactd()'s loop (or one slice of a proactive round).
    pub fn kcompactd_step(&mut self, nid: usize) -> KthreadNext {
        if let Some(mut round) = self.pgdat[nid].kcompactd.round.take() {
            if !self.proactive_slice(&mut round) {
                self.pgdat[nid].kcompactd.round = Some(round);
                return KthreadNext::Again;
            }
            self.proactive_round_done(nid, round.prev_score);
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
            }
        }
        if work && !st.proactive_trigger {
            self.kcompactd_do_work(nid);
            self.pgdat[nid].kcompactd.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
            return self.kcompactd_wait(nid);
        }
        // the timer expired (or the proactiveness knob was written)
        self.pgdat[nid].kcompactd.timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
        if self.should_proactive_compact_node(nid) {
            let prev_score = self.fragmentation_score_node(nid);
            let mut round =
                ProactiveRound { zones: self.node_zones(nid, MAX_NR_ZONES - 1), pos: 0, cc: None, prev_score };
            if !self.proactive_slice(&mut round) {
                self.pgdat[nid].kcompactd.round = Some(round);
                return KthreadNext::Again;
            }
            self.proactive_round_done(nid, prev_score);
        }
        self.pgdat[nid].kcompactd.proactive_trigger = false;
        self.kcompactd_wait(nid)
    }

    /// After proactive_compact_node(): back off for 32 s when the score did not drop.
    fn proactive_round_done(&mut self, nid: usize, prev_score: u64) {
        let score = self.fragmentation_score_node(nid);
        let st = &mut self.pgdat[nid].kcompactd;
        st.proactive_rounds += 1;
        st.proactive_trigger = false;
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
}
