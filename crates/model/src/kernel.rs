//! The simulated kernel: physical memory, address spaces, knobs, counters, and the
//! page allocator's slow path (mm/page_alloc.c: __alloc_pages, __alloc_pages_slowpath;
//! mm/mempolicy.c: the THP node policy in alloc_pages_mpol).
//!
//! Later mechanisms hook in here: `wakeup_kswapd` and `try_to_free_pages` (vmscan.rs),
//! `try_to_compact_pages` (compaction issue), `out_of_memory`.

use crate::consts::*;
use crate::mm_types::*;
use crate::mmzone::*;
use crate::page_alloc::*;
use crate::pgtable::SlotTable;
use crate::trace::trace_event;
use crate::vmstat::{Ev, VmStat, EV_NAMES, NON_MAINLINE};
use std::collections::BTreeMap;
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs::{self, KnobSet};
use thplab_workload::machine::MachineSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpMode {
    Always,
    Madvise,
    Never,
    Inherit,
}
impl ThpMode {
    fn parse(s: &str) -> ThpMode {
        match s {
            "always" => ThpMode::Always,
            "madvise" => ThpMode::Madvise,
            "inherit" => ThpMode::Inherit,
            _ => ThpMode::Never,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defrag {
    Always,
    Defer,
    DeferMadvise,
    Madvise,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitZero {
    /// before 2021: every subpage remapped
    None,
    /// Yu Zhao 2021 (seed 000/001): zero subpages unmapped and freed on isolated splits
    Seed,
    /// v6.12+: zero subpages remapped to the shared zero page on every anon split
    Mainline,
}

/// The knobs, typed.
#[derive(Clone, Debug)]
pub struct Config {
    pub enabled: ThpMode,
    pub enabled_2m: ThpMode,
    pub defrag: Defrag,
    pub use_zero_page: bool,
    pub shrink_underused: bool,
    pub swapin_enabled: ThpMode,
    pub khugepaged_defrag: bool,
    pub max_ptes_none: u32,
    pub max_ptes_swap: u32,
    pub max_ptes_shared: u32,
    pub pages_to_scan: u64,
    pub scan_sleep_ms: u64,
    pub alloc_sleep_ms: u64,
    pub min_free_kbytes: Option<u64>,
    pub watermark_scale_factor: u64,
    pub watermark_boost_factor: u64,
    pub swappiness: u64,
    pub compaction_proactiveness: u64,
    pub extfrag_threshold: u64,
    pub compact_unevictable_allowed: bool,
    pub defrag_mode: bool,
    pub split_zero: SplitZero,
    pub thp_swap: bool,
    pub swap_zeromap: bool,
    pub pmd_swap_entries: bool,
    pub khugepaged_skip_collapsed: bool,
    pub khugepaged_cold_to_tail: bool,
    pub khugepaged_disabled_next: bool,
    pub khugepaged_cheap_progress: bool,
    pub khugepaged_skip_lazyfree: bool,
    pub proactive_leeway: bool,
    pub free_page_reporting: bool,
}

impl Config {
    pub fn from_knobs(k: &KnobSet) -> Config {
        let g = |n: &str| k.get(n).map(|s| s.as_str()).unwrap_or_else(|| panic!("knob {n} missing"));
        let n = |name: &str| g(name).parse::<u64>().unwrap_or(0);
        Config {
            enabled: ThpMode::parse(g("transparent_hugepage/enabled")),
            enabled_2m: ThpMode::parse(g("transparent_hugepage/hugepages-2048kB/enabled")),
            defrag: match g("transparent_hugepage/defrag") {
                "always" => Defrag::Always,
                "defer" => Defrag::Defer,
                "defer+madvise" => Defrag::DeferMadvise,
                "madvise" => Defrag::Madvise,
                _ => Defrag::Never,
            },
            use_zero_page: n("transparent_hugepage/use_zero_page") == 1,
            shrink_underused: n("transparent_hugepage/shrink_underused") == 1,
            swapin_enabled: ThpMode::parse(g("transparent_hugepage/swapin_enabled")),
            khugepaged_defrag: n("transparent_hugepage/khugepaged/defrag") == 1,
            max_ptes_none: n("transparent_hugepage/khugepaged/max_ptes_none") as u32,
            max_ptes_swap: n("transparent_hugepage/khugepaged/max_ptes_swap") as u32,
            max_ptes_shared: n("transparent_hugepage/khugepaged/max_ptes_shared") as u32,
            pages_to_scan: n("transparent_hugepage/khugepaged/pages_to_scan"),
            scan_sleep_ms: n("transparent_hugepage/khugepaged/scan_sleep_millisecs"),
            alloc_sleep_ms: n("transparent_hugepage/khugepaged/alloc_sleep_millisecs"),
            min_free_kbytes: g("vm.min_free_kbytes").parse().ok(),
            watermark_scale_factor: n("vm.watermark_scale_factor"),
            watermark_boost_factor: n("vm.watermark_boost_factor"),
            swappiness: n("vm.swappiness"),
            compaction_proactiveness: n("vm.compaction_proactiveness"),
            extfrag_threshold: n("vm.extfrag_threshold"),
            compact_unevictable_allowed: n("vm.compact_unevictable_allowed") == 1,
            defrag_mode: n("vm.defrag_mode") == 1,
            split_zero: match g("thplab.split_zero_subpages") {
                "none" => SplitZero::None,
                "seed" => SplitZero::Seed,
                _ => SplitZero::Mainline,
            },
            thp_swap: g("thplab.config_thp_swap") == "y",
            swap_zeromap: g("thplab.swap_zeromap") == "y",
            pmd_swap_entries: n("thplab.pmd_swap_entries") == 1,
            khugepaged_skip_collapsed: n("thplab.khugepaged_skip_collapsed") == 1,
            khugepaged_cold_to_tail: n("thplab.khugepaged_cold_to_tail") == 1,
            khugepaged_disabled_next: n("thplab.khugepaged_disabled_next") == 1,
            khugepaged_cheap_progress: n("thplab.khugepaged_cheap_progress") == 1,
            khugepaged_skip_lazyfree: n("thplab.khugepaged_skip_lazyfree") == 1,
            proactive_leeway: g("thplab.proactive_wmark") == "leeway",
            free_page_reporting: n("thplab.free_page_reporting") == 1,
        }
    }

    /// hugepage_global_enabled() for PMD order, resolving the per-size knob.
    pub fn pmd_mode(&self) -> ThpMode {
        match self.enabled_2m {
            ThpMode::Inherit => self.enabled,
            m => m,
        }
    }
    /// hugepage_pmd_enabled(): khugepaged runs and the min_free_kbytes floor applies.
    pub fn hugepage_pmd_enabled(&self) -> bool {
        self.pmd_mode() != ThpMode::Never
    }
}

/// Result of a fault, as the fault handler's VM_FAULT_* bits would tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Ok,
    /// VM_FAULT_SIGSEGV: no VMA or a protection violation
    Segv,
    /// VM_FAULT_OOM: the allocation failed even after the OOM killer
    Oom,
}

/// Kernel threads: one kswapd and one kcompactd per node, one khugepaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kthread {
    Kswapd(usize),
    Kcompactd(usize),
    Khugepaged,
}

/// What a kernel thread does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KthreadNext {
    /// sleep for this many ns (a timed wait; an explicit wake-up may come earlier)
    Sleep(u64),
    /// wait until woken (wait_event without timeout)
    Wait,
    /// more work: run again as soon as the CPU allows
    Again,
}

#[derive(Clone, Debug)]
pub struct OomKill {
    pub t_ns: u64,
    pub victim: String,
    pub rss_kb: u64,
    pub trigger: String,
}

pub struct Kernel {
    pub pm: PhysMem,
    pub vm: VmStat,
    pub knobs: KnobSet,
    pub cfg: Config,
    pub costs: CostProfile,
    pub slots: SlotTable,
    pub mms: crate::mmap::MmList,
    pub huge_zero_pfn: Option<u64>,
    pub huge_zero_users: u64,
    /// the time the current operation started, and what it has cost so far (ns)
    pub now: u64,
    pub cost: u64,
    /// PTE-mapped THPs: head pfn -> subpages still mapped
    pub thp_mapcount: BTreeMap<u32, u16>,
    /// THP folios on the deferred split queue, by node (a List threaded through head+1's links)
    pub deferred: Vec<List>,
    /// the khugepaged mm_slot list (mm ids), in scan order
    pub khugepaged_list: std::collections::VecDeque<MmId>,
    /// khugepaged's cursor, counters and records (khugepaged.rs)
    pub khugepaged: crate::khugepaged::KhugepagedState,
    pub nr_anon_thp: u64,
    pub nr_anon_pages: u64,
    pub nr_pgtable_pages: u64,
    pub nr_kernel_pages: u64,
    pub oom_kills: Vec<OomKill>,
    /// per-size mTHP stats for hugepages-2048kB (stats/*)
    pub mthp: BTreeMap<&'static str, u64>,
    pub latency_thp_fault: Vec<u64>,
    /// the page-allocation part of each successful THP fault (alloc_thp), ns
    pub latency_thp_alloc: Vec<u64>,
    pub record_latency: bool,
    /// the enabled tracepoints and the events recorded (trace.rs)
    pub trace: crate::trace::Trace,
    pub seed: u64,
    /// mms the OOM killer chose; the engine stops their processes
    pub killed: Vec<MmId>,
    /// wake-up requests for kernel threads, (thread, at ns), drained by the engine
    pub wakeups: Vec<(Kthread, u64)>,
    /// per-node kcompactd state (compaction.rs)
    pub kcompactd: Vec<crate::compaction::Kcompactd>,
    // ---- reclaim and swap (vmscan.rs, swapfile.rs) ----
    /// swap devices, slots, swap cache
    pub swap: crate::swapfile::SwapState,
    /// kswapd state, simulated locks, TLB shootdown counts
    pub reclaim: crate::vmscan::ReclaimState,
    /// the CPU the current step runs on (set by the engine)
    pub cur_cpu: u32,
}

impl Kernel {
    pub fn new(m: &MachineSpec, knobs: KnobSet, costs: CostProfile, seed: u64) -> Result<Kernel, String> {
        let pm = PhysMem::new(m)?;
        let nodes = pm.nodes.len();
        let cfg = Config::from_knobs(&knobs);
        let swap = crate::swapfile::SwapState::new(&m.swap, &costs, cfg.thp_swap, pm.nr_cpus)?;
        let mut k = Kernel {
            pm,
            vm: VmStat::default(),
            knobs,
            cfg,
            costs,
            slots: SlotTable::default(),
            mms: Default::default(),
            huge_zero_pfn: None,
            huge_zero_users: 0,
            now: 0,
            cost: 0,
            thp_mapcount: BTreeMap::new(),
            deferred: vec![List::default(); nodes],
            khugepaged_list: Default::default(),
            khugepaged: Default::default(),
            nr_anon_thp: 0,
            nr_anon_pages: 0,
            nr_pgtable_pages: 0,
            nr_kernel_pages: 0,
            oom_kills: vec![],
            mthp: BTreeMap::new(),
            latency_thp_fault: vec![],
            latency_thp_alloc: vec![],
            record_latency: false,
            trace: Default::default(),
            seed,
            killed: vec![],
            wakeups: vec![],
            kcompactd: (0..nodes).map(|_| crate::compaction::Kcompactd::default()).collect(),
            swap,
            reclaim: crate::vmscan::ReclaimState { kswapd: vec![Default::default(); nodes], ..Default::default() },
            cur_cpu: 0,
        };
        k.setup_min_free();
        Ok(k)
    }

    /// calculate_min_free_kbytes() + set_recommended_min_free_kbytes() + setup_per_zone_wmarks().
    pub fn effective_min_free_kbytes(&self) -> u64 {
        if let Some(v) = self.cfg.min_free_kbytes {
            return v;
        }
        // at boot nr_free_buffer_pages() sees managed pages (watermarks are still 0)
        let lowmem: u64 = self.pm.zones.iter().filter(|z| z.idx <= ZONE_NORMAL).map(|z| z.managed).sum();
        let base = calculate_min_free_kbytes(lowmem);
        if self.cfg.hugepage_pmd_enabled() {
            base.max(recommended_min_free_kbytes(self.pm.nr_populated_lowmem_zones(), lowmem))
        } else {
            base
        }
    }
    pub fn setup_min_free(&mut self) {
        let mfk = self.effective_min_free_kbytes();
        self.pm.setup_watermarks(mfk, self.cfg.watermark_scale_factor);
    }

    #[inline]
    pub fn charge(&mut self, ns: u64) {
        self.cost += ns;
    }

    pub fn count_mthp(&mut self, stat: &'static str, n: u64) {
        *self.mthp.entry(stat).or_insert(0) += n;
    }

    // ---------------- page allocation: __alloc_pages and its slow path ----------------

    /// __alloc_pages(gfp, order, preferred nid): fast path, then the slow path. Returns the pfn.
    pub fn alloc_pages(&mut self, gfp: Gfp, order: u32, nid: usize) -> Option<Pfn> {
        let highest = ZONE_NORMAL;
        let zonelist = self.pm.zonelist(nid, highest, gfp & __GFP_THISNODE != 0);
        if zonelist.is_empty() {
            return None;
        }
        self.charge(self.costs.page_alloc_ns);
        // fast path: low watermark, avoid fragmenting (alloc_flags_nofragment)
        let flags = ALLOC_WMARK_LOW | self.pm.alloc_flags_nofragment(zonelist[0], gfp, self.cfg.defrag_mode);
        let page = match self.get_page_from_freelist(gfp, order, flags, &zonelist) {
            Some((pfn, zi)) => {
                self.after_alloc(zi);
                Some(pfn)
            }
            None => self.alloc_pages_slowpath(gfp, order, nid, &zonelist),
        };
        if let Some(pfn) = page {
            // free page reporting: the first touch of a block the host took back refaults it
            let reported = self.pm.take_reported(pfn.0, order);
            if self.cfg.free_page_reporting && reported > 0 {
                self.charge(reported * self.costs.refault_reported_2m_ns);
            }
        }
        page
    }

    /// get_page_from_freelist() with the sysctls it reads; its tracepoints are stamped now.
    pub fn get_page_from_freelist(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
    ) -> Option<(Pfn, usize)> {
        let (boost, dm) = (self.cfg.watermark_boost_factor, self.cfg.defrag_mode);
        self.trace.clock = self.now + self.cost;
        self.pm.get_page_from_freelist(
            gfp,
            order,
            alloc_flags,
            zonelist,
            ZONE_NORMAL,
            boost,
            dm,
            &mut self.vm,
            &mut self.trace,
        )
    }

    fn after_alloc(&mut self, zi: usize) {
        // a fallback claim boosted the watermark: kswapd is woken to reclaim the boost
        if self.pm.zones[zi].boosted {
            self.pm.zones[zi].boosted = false;
            self.wakeup_kswapd(self.pm.zones[zi].node, 0);
        }
    }

    /// __alloc_pages_slowpath()
    fn alloc_pages_slowpath(&mut self, gfp: Gfp, order: u32, nid: usize, zonelist: &[usize]) -> Option<Pfn> {
        let costly = order > PAGE_ALLOC_COSTLY_ORDER;
        let can_direct_reclaim = gfp & __GFP_DIRECT_RECLAIM != 0;
        let mut alloc_flags = ALLOC_WMARK_MIN;
        if gfp & __GFP_HIGH != 0 {
            alloc_flags |= ALLOC_MIN_RESERVE;
        }
        if gfp & __GFP_KSWAPD_RECLAIM != 0 {
            alloc_flags |= ALLOC_KSWAPD;
            self.wakeup_kswapd(nid, order);
        }
        if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
            self.after_alloc(zi);
            return Some(pfn);
        }
        if !can_direct_reclaim {
            return None;
        }
        let mt = gfp_migratetype(gfp);
        let mut compact_prio = CompactPriority::Async;
        if costly || (order > 0 && mt != MIGRATE_MOVABLE) {
            let (page, result) =
                self.alloc_pages_direct_compact(gfp, order, alloc_flags, zonelist, CompactPriority::Async);
            if page.is_some() {
                return page;
            }
            if costly && gfp & __GFP_NORETRY != 0 {
                // THP faults may try the local node only first: compact, don't reclaim
                if matches!(result, CompactResult::Skipped | CompactResult::Deferred) {
                    return None;
                }
                compact_prio = CompactPriority::Async;
            } else {
                compact_prio = CompactPriority::SyncLight;
            }
        }
        let mut oom_tries = 0;
        // reclaim that frees pages which others (zram's pool) take again could go on for
        // ever; after this many rounds with progress and no page, treat it as no progress
        let mut progress_loops = 0;
        loop {
            if alloc_flags & ALLOC_KSWAPD != 0 {
                self.wakeup_kswapd(nid, order);
            }
            if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
                self.after_alloc(zi);
                return Some(pfn);
            }
            // direct reclaim, then direct compaction
            let reclaimed = self.try_to_free_pages(gfp, order, nid);
            if reclaimed > 0 {
                if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
                    self.after_alloc(zi);
                    return Some(pfn);
                }
            }
            if order > 0 {
                let (page, _) = self.alloc_pages_direct_compact(gfp, order, alloc_flags, zonelist, compact_prio);
                if page.is_some() {
                    return page;
                }
            }
            if gfp & __GFP_NORETRY != 0 {
                return None;
            }
            if costly && gfp & __GFP_RETRY_MAYFAIL == 0 {
                return None;
            }
            if reclaimed > 0 && progress_loops < 64 {
                progress_loops += 1;
                continue;
            }
            // __alloc_pages_may_oom(): nothing could be reclaimed; kill and retry. The OOM
            // killer cannot free memory on a given node, so __GFP_THISNODE (and
            // __GFP_RETRY_MAYFAIL) allocations fail instead.
            if gfp & (__GFP_THISNODE | __GFP_RETRY_MAYFAIL) != 0 {
                return None;
            }
            if oom_tries >= 3 || !self.out_of_memory(order, nid) {
                return None;
            }
            oom_tries += 1;
        }
    }

    /// __alloc_pages_direct_compact(): counts compact_stall/success/fail around try_to_compact_pages.
    fn alloc_pages_direct_compact(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
        prio: CompactPriority,
    ) -> (Option<Pfn>, CompactResult) {
        let result = self.try_to_compact_pages(gfp, order, alloc_flags, zonelist, prio);
        if result == CompactResult::Skipped {
            return (None, result);
        }
        self.vm.count(Ev::COMPACT_STALL);
        let page = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist);
        if let Some((pfn, zi)) = page {
            self.compaction_defer_reset(zi, order as i32, true);
            self.vm.count(Ev::COMPACT_SUCCESS);
            self.after_alloc(zi);
            return (Some(pfn), result);
        }
        self.vm.count(Ev::COMPACT_FAIL);
        (None, result)
    }

    /// out_of_memory(): pick the process with the largest badness (RSS + swap + page
    /// tables, oom_badness) and kill it; its memory is freed at once (the OOM reaper).
    pub fn out_of_memory(&mut self, _order: u32, _nid: usize) -> bool {
        let victim = self
            .mms
            .iter()
            .filter(|m| m.alive && !self.killed.contains(&m.id))
            .max_by_key(|m| (m.rss_anon + m.swap_ents + m.pmds.len() as u64, std::cmp::Reverse(m.id)))
            .map(|m| m.id);
        let Some(v) = victim else { return false };
        let rss_kb = self.mms[v].rss_anon * 4;
        self.vm.count(Ev::OOM_KILL);
        trace_event!(
            self,
            mark_victim,
            pid = 1000 + v.0,
            comm = self.mms[v].name.clone(),
            anon_rss = rss_kb,
            pgtables = self.mms[v].pmds.len() as u64 * 4,
        );
        self.oom_kills.push(OomKill {
            t_ns: self.now + self.cost,
            victim: self.mms[v].name.clone(),
            rss_kb,
            trigger: "page allocation".into(),
        });
        self.killed.push(v);
        self.exit_mm(v);
        true
    }

    // ---------------- knobs ----------------

    /// Write a knob (sysfs/sysctl store handlers): validate, update, run side effects.
    pub fn set_knob(&mut self, name: &str, value: &str) -> Result<(), String> {
        let (canon, v) = knobs::check_assignment(name, value)?;
        match canon.as_str() {
            "vm.compact_memory" => {
                self.compact_all();
                return Ok(());
            }
            "vm.drop_caches" => {
                self.drop_caches(v.parse().unwrap_or(0));
                return Ok(());
            }
            _ => {}
        }
        let old_pmd = self.cfg.hugepage_pmd_enabled();
        self.knobs.insert(canon.clone(), v);
        self.cfg = Config::from_knobs(&self.knobs);
        if matches!(canon.as_str(), "vm.min_free_kbytes" | "vm.watermark_scale_factor")
            || old_pmd != self.cfg.hugepage_pmd_enabled()
        {
            self.setup_min_free();
        }
        self.khugepaged_knob_changed(&canon, old_pmd);
        if canon == "vm.compaction_proactiveness" {
            self.compaction_proactiveness_written();
        }
        Ok(())
    }

    /// drop_caches: 1 page cache (none modelled), 2/3 also shrink slab: the THP
    /// deferred-split shrinker among them.
    pub fn drop_caches(&mut self, v: u64) {
        if v & 1 != 0 {
            self.vm.count(Ev::DROP_PAGECACHE);
        }
        if v & 2 != 0 {
            self.vm.count(Ev::DROP_SLAB);
            self.shrink_slab();
        }
    }

    // ---------------- reporting ----------------

    pub fn nr_free_pages(&self) -> u64 {
        self.pm.total_free()
    }

    /// /proc/vmstat as the kernel prints it (event counters and the gauges thplab models).
    pub fn vmstat_snapshot(&self) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        let non_mainline_on = self.cfg.split_zero == SplitZero::Seed || self.cfg.pmd_swap_entries;
        for (i, n) in EV_NAMES.iter().enumerate() {
            let is_nm = NON_MAINLINE.iter().any(|e| *e as usize == i);
            if is_nm && !non_mainline_on {
                continue;
            }
            m.insert(n.to_string(), self.vm.ev[i] as i64);
        }
        let lru = |l: u64| -> i64 { self.pm.lru.iter().map(|n| n[l as usize].pages).sum::<u64>() as i64 };
        m.insert("nr_free_pages".into(), self.nr_free_pages() as i64);
        m.insert(
            "nr_free_pages_blocks".into(),
            self.pm.zones.iter().map(|z| z.free_pages_blocks()).sum::<u64>() as i64,
        );
        m.insert("nr_anon_pages".into(), self.nr_anon_pages as i64);
        m.insert("nr_anon_transparent_hugepages".into(), self.nr_anon_thp as i64);
        m.insert("nr_page_table_pages".into(), self.nr_pgtable_pages as i64);
        m.insert("nr_inactive_anon".into(), lru(LRU_INACTIVE_ANON));
        m.insert("nr_active_anon".into(), lru(LRU_ACTIVE_ANON));
        m.insert("nr_unevictable".into(), lru(LRU_UNEVICTABLE));
        m.insert("nr_zone_inactive_anon".into(), lru(LRU_INACTIVE_ANON));
        m.insert("nr_zone_active_anon".into(), lru(LRU_ACTIVE_ANON));
        // lazy-free folios are on the file lists
        m.insert("nr_inactive_file".into(), lru(LRU_INACTIVE_FILE));
        m.insert("nr_active_file".into(), lru(LRU_ACTIVE_FILE));
        m.insert("nr_swapcached".into(), self.swap.cache.len() as i64);
        m
    }

    /// /proc/meminfo fields (kB).
    pub fn meminfo(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        let total = self.pm.total_managed();
        let free = self.nr_free_pages();
        let lru = |l: u64| -> u64 { self.pm.lru.iter().map(|n| n[l as usize].pages).sum::<u64>() };
        // si_mem_available(): free pages above the zones' high watermarks (totalreserve_pages)
        let reserve: u64 = self
            .pm
            .zones
            .iter()
            .map(|z| z.watermark[WMARK_HIGH] + z.lowmem_reserve.iter().max().copied().unwrap_or(0))
            .sum();
        m.insert("MemTotal".into(), total * 4);
        m.insert("MemFree".into(), free * 4);
        m.insert("MemAvailable".into(), free.saturating_sub(reserve) * 4);
        m.insert("Active(anon)".into(), lru(LRU_ACTIVE_ANON) * 4);
        m.insert("Inactive(anon)".into(), lru(LRU_INACTIVE_ANON) * 4);
        m.insert("Unevictable".into(), lru(LRU_UNEVICTABLE) * 4);
        m.insert("AnonPages".into(), self.nr_anon_pages * 4);
        m.insert("AnonHugePages".into(), self.nr_anon_thp * 2048);
        m.insert("PageTables".into(), self.nr_pgtable_pages * 4);
        m.insert("KernelOther".into(), self.nr_kernel_pages * 4);
        m.insert("Active(file)".into(), lru(LRU_ACTIVE_FILE) * 4);
        m.insert("Inactive(file)".into(), lru(LRU_INACTIVE_FILE) * 4);
        m.insert("SwapTotal".into(), self.swap.total_pages() * 4);
        m.insert("SwapFree".into(), self.swap.nr_free() * 4);
        m.insert("SwapCached".into(), self.swap.cache.len() as u64 * 4);
        m
    }

    /// Ask the engine to run kernel thread `kt` now (wake_up_interruptible).
    pub fn wake(&mut self, kt: Kthread) {
        let at = self.now + self.cost;
        self.wakeups.push((kt, at));
    }

    /// The kernel threads this machine has.
    pub fn kthreads(&self) -> Vec<Kthread> {
        let mut v = vec![];
        for n in 0..self.pm.nodes.len() {
            v.push(Kthread::Kswapd(n));
            v.push(Kthread::Kcompactd(n));
        }
        v.push(Kthread::Khugepaged);
        v
    }

    /// The state a kernel thread starts in at boot.
    pub fn kthread_initial(&self, kt: Kthread) -> KthreadNext {
        match kt {
            Kthread::Kcompactd(n) => self.kcompactd_initial(n),
            _ => KthreadNext::Wait,
        }
    }

    /// Run one step of a kernel thread (its main loop body).
    pub fn kthread_step(&mut self, kt: Kthread) -> KthreadNext {
        match kt {
            Kthread::Kswapd(n) => self.kswapd_step(n),
            Kthread::Kcompactd(n) => self.kcompactd_step(n),
            Kthread::Khugepaged => self.khugepaged_step(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.pm.heap_bytes() + self.slots.heap_bytes() + self.swap.heap_bytes()
    }
}

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
