//! The simulated kernel: physical memory, address spaces, knobs, counters, and the
//! page allocator's slow path (mm/page_alloc.c: __alloc_pages, __alloc_pages_slowpath;
//! mm/mempolicy.c: the THP node policy in alloc_pages_mpol).
//!
//! Later mechanisms hook in here: `wakeup_kswapd` and `try_to_free_pages` (vmscan.rs),
//! `try_to_compact_pages` (compaction issue), `out_of_memory`.

use crate::compaction::Kcompactd;
pub use crate::config::{Config, Defrag, SplitZero, ThpMode};
use crate::huge_memory::HugeZeroFolio;
use crate::hugetlb::Hstate;
use crate::khugepaged::KhugepagedState;
use crate::kthread::Kthread;
use crate::locking::SimLock;
use crate::mm_types::*;
use crate::mmap::MmList;
use crate::mmzone::*;
use crate::oom_kill::OomControl;
use crate::page_alloc::PhysMem;
use crate::pgtable::SlotTable;
use crate::recorder::Recorder;
use crate::swapfile::SwapState;
use crate::vmscan::KswapdState;
use crate::vmstat::{Ev, NodeStats, EV_NAMES, NON_MAINLINE};
use std::collections::BTreeMap;
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs::{self, KnobSet};
use thplab_workload::machine::MachineSpec;

/// pglist_data (include/linux/mmzone.h): a node's reclaim and compaction state, its LRU
/// lists and its counters, composed here from each mechanism's part. The node's static
/// layout (zones, pfn span, CPUs) is PhysMem's `nodes`.
#[derive(Clone)]
pub struct PgData {
    /// lruvec: the LRU lists [none, inactive_anon, active_anon, unevictable, inactive_file,
    /// active_file], threaded through the frames' links (swap.c / vmscan.rs)
    pub lruvec: [List; NR_LRU_LISTS],
    /// lruvec->lru_lock, simulated (locking.rs)
    pub lru_lock: SimLock,
    /// the THP deferred split queue (huge_memory.rs), threaded through head+1's links
    pub deferred_split: List,
    /// kswapd's state (vmscan.rs)
    pub kswapd: KswapdState,
    /// kcompactd's state (compaction.rs)
    pub kcompactd: Kcompactd,
    /// node_stat_item counters (vmstat.rs)
    pub stat: NodeStats,
    /// per CPU (indexed by CPU, grown on first use): folios in its lru_add folio batch
    /// for this node (memory.rs, lru_add)
    pub lru_add_batch: Vec<u64>,
}

impl PgData {
    fn new() -> PgData {
        PgData {
            lruvec: [List::default(); NR_LRU_LISTS],
            lru_lock: SimLock::default(),
            deferred_split: List::default(),
            kswapd: KswapdState::default(),
            kcompactd: Kcompactd::default(),
            stat: NodeStats::default(),
            lru_add_batch: Default::default(),
        }
    }
}

/// The current engine step as the kernel sees it: when it started, what it has cost so
/// far, the CPU it runs on; and the kernel threads it asked to wake.
#[derive(Clone)]
pub struct Clock {
    /// the time the current step started (ns)
    pub now: u64,
    /// the work charged to the step so far (ns)
    pub cost: u64,
    /// the CPU the step runs on (set by the engine)
    pub cpu: u32,
    /// wake-up requests for kernel threads, (thread, at ns), drained by the engine
    pub wakeups: Vec<(Kthread, u64)>,
    /// when the engine's next other event is due (ns): a kernel thread doing a long job
    /// (a proactive compaction round) stops at its next cond_resched() point past it,
    /// so that other tasks see its work as it happens (u64::MAX: no limit)
    pub yield_at: u64,
}

/// The simulated kernel. Each part of its state is owned by the mechanism named beside
/// it; mechanisms reach each other through functions, not each other's fields.
#[derive(Clone)]
pub struct Kernel {
    /// the frame array (mem_map), pageblocks, zones and free areas, folio mapcounts (page_alloc.rs)
    pub(crate) pm: PhysMem,
    /// per node: LRU lists, deferred split queue, kswapd, kcompactd, node stats
    pub(crate) pgdat: Vec<PgData>,
    /// the address spaces (mmap.rs)
    pub(crate) mms: MmList,
    /// page tables (pgtable.rs)
    pub(crate) slots: SlotTable,
    /// the mm_slot list, its cursor and khugepaged's counters (khugepaged.rs)
    pub(crate) khugepaged: KhugepagedState,
    /// swap devices, slots, swap cache (swapfile.rs, swap_state.rs)
    pub(crate) swap: SwapState,
    /// the huge zero folio (huge_memory.rs)
    pub(crate) huge_zero: HugeZeroFolio,
    /// the 2 MiB hugetlb pool (hugetlb.rs)
    pub(crate) hstate: Hstate,
    /// the OOM killer's victims (oom_kill.rs)
    pub(crate) oom: OomControl,
    /// event counters, mTHP stats, latency samples, the trace, OOM reports (recorder.rs)
    pub(crate) rec: Recorder,
    /// the knobs, raw and typed
    pub(crate) cfg: Config,
    /// what each unit of work costs (simulated time)
    pub(crate) costs: CostProfile,
    /// the last-level data cache the access streams go through (tlb.rs)
    pub(crate) llc: crate::tlb::DataCache,
    /// per CPU: the large folio its last fault mapped by PTEs, and which of its pages were
    /// accessed since (memory.rs, touch_after_fault_ns)
    pub(crate) just_faulted: Vec<crate::memory::JustFaulted>,
    /// the current step
    pub(crate) clock: Clock,
}

impl Default for Clock {
    fn default() -> Self {
        Clock { now: 0, cost: 0, cpu: 0, wakeups: vec![], yield_at: u64::MAX }
    }
}

impl Kernel {
    pub fn new(m: &MachineSpec, knobs: KnobSet, costs: CostProfile, seed: u64) -> Result<Kernel, String> {
        // the costs as this run's host speed has them (CostProfile::host_speed)
        let costs = costs.at_host_speed();
        let mut pm = PhysMem::new(m)?;
        if m.aged {
            for zi in 0..pm.zones.len() {
                pm.shuffle_free_lists(zi, seed);
                // A machine that has run has had its skip bits reset: __reset_isolation_suitable()
                // (kswapd going to sleep after a direct compaction met the scanners, or
                // compaction_restarting()) records where the scanners restart. At boot 6.18
                // leaves compact_init_{migrate,free}_pfn zero, which makes every free search a
                // "scan start" (fast_isolate_freepages(): free_pfn >= compact_init_free_pfn, a
                // search 16x deeper) until the first reset. An aged zone starts as after a reset
                // whose outermost blocks qualified.
                let z = &mut pm.zones[zi];
                if z.populated() {
                    z.compact_init_migrate_pfn = z.start_pfn;
                    z.compact_init_free_pfn = (z.end_pfn() - 1) & !(crate::consts::PAGEBLOCK_NR_PAGES - 1);
                }
            }
        }
        let nodes = pm.nodes.len();
        let cfg = Config::from_knobs(knobs);
        // a virtio-balloon with VIRTIO_BALLOON_F_REPORTING registers at boot
        pm.pr.enabled = cfg.free_page_reporting;
        pm.pr.order = cfg.page_reporting_order;
        let swap = SwapState::new(&m.swap, &costs, cfg.thp_swap, pm.nr_cpus)?;
        let mut k = Kernel {
            pm,
            pgdat: (0..nodes).map(|_| PgData::new()).collect(),
            mms: MmList::default(),
            slots: SlotTable::default(),
            khugepaged: KhugepagedState::default(),
            swap,
            huge_zero: HugeZeroFolio::default(),
            hstate: Hstate::default(),
            oom: OomControl::default(),
            rec: Recorder::default(),
            cfg,
            costs,
            llc: Default::default(),
            just_faulted: Vec::new(),
            clock: Clock::default(),
        };
        k.setup_min_free();
        let pool = k.cfg.knobs.get("vm.nr_hugepages").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if pool > 0 {
            // a boot-time pool (hugepages= / an init script): the run starts with the
            // per-CPU lists drained, as after any boot
            k.set_nr_hugepages(pool);
            k.pm.drain_all_pages(None);
        }
        k.hstate.boot_pages = k.hstate.nr_huge_pages();
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

    /// Charge the current context `ns`, and the blocks its frees moved from a full per-CPU
    /// list to the buddy lists since the last charge (free_pcppages_bulk() under the zone
    /// lock, pcp_drain_ns each; PhysMem::spilled).
    #[inline]
    pub fn charge(&mut self, ns: u64) {
        self.clock.cost += ns;
        if self.pm.spilled != 0 {
            self.clock.cost += std::mem::take(&mut self.pm.spilled) * self.costs.pcp_drain_ns;
        }
    }

    /// count_mthp_stat(HPAGE_PMD_ORDER, stat): the PMD size's stats.
    pub fn count_mthp(&mut self, stat: &'static str, n: u64) {
        self.rec.mod_mthp(crate::consts::HPAGE_PMD_ORDER, stat, n as i64);
    }
    /// count_mthp_stat(order, stat) / mod_mthp_stat(order, stat, n) for any folio order.
    pub fn count_mthp_order(&mut self, order: u32, stat: &'static str, n: i64) {
        self.rec.mod_mthp(order, stat, n);
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
            "vm.nr_hugepages" => {
                self.set_nr_hugepages(v.parse().unwrap_or(0));
                return Ok(());
            }
            _ => {}
        }
        let old_pmd = self.cfg.hugepage_pmd_enabled();
        let mut knobs = std::mem::take(&mut self.cfg.knobs);
        knobs.insert(canon.clone(), v);
        self.cfg = Config::from_knobs(knobs);
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
            self.rec.vm.count(Ev::DROP_PAGECACHE);
        }
        if v & 2 != 0 {
            self.rec.vm.count(Ev::DROP_SLAB);
            // drop_slab(): the walk of the host's other shrinkers (dentries, inodes, ...),
            // which the model does not hold (calibrate: drop_slab)
            self.charge(self.costs.drop_slab_ns);
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
            m.insert(n.to_string(), self.rec.vm.ev[i] as i64);
        }
        let lru = |l: u64| -> i64 { self.pgdat.iter().map(|n| n.lruvec[l as usize].pages).sum::<u64>() as i64 };
        m.insert("nr_free_pages".into(), self.nr_free_pages() as i64);
        m.insert(
            "nr_free_pages_blocks".into(),
            self.pm.zones.iter().map(|z| z.free_pages_blocks()).sum::<u64>() as i64,
        );
        m.insert("nr_anon_pages".into(), self.nr_anon_pages() as i64);
        m.insert("nr_anon_transparent_hugepages".into(), self.nr_anon_thp() as i64);
        m.insert("nr_page_table_pages".into(), self.nr_pgtable_pages() as i64);
        m.insert("nr_inactive_anon".into(), lru(LRU_INACTIVE_ANON));
        m.insert("nr_active_anon".into(), lru(LRU_ACTIVE_ANON));
        m.insert("nr_unevictable".into(), lru(LRU_UNEVICTABLE));
        m.insert("nr_zone_inactive_anon".into(), lru(LRU_INACTIVE_ANON));
        m.insert("nr_zone_active_anon".into(), lru(LRU_ACTIVE_ANON));
        // lazy-free folios are on the file lists
        m.insert("nr_inactive_file".into(), lru(LRU_INACTIVE_FILE));
        m.insert("nr_active_file".into(), lru(LRU_ACTIVE_FILE));
        m.insert("nr_swapcached".into(), self.nr_swapcache() as i64);
        m
    }

    /// /proc/meminfo fields (kB).
    pub fn meminfo(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        let total = self.pm.total_managed();
        let free = self.nr_free_pages();
        let lru = |l: u64| -> u64 { self.pgdat.iter().map(|n| n.lruvec[l as usize].pages).sum::<u64>() };
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
        m.insert("AnonPages".into(), self.nr_anon_pages() * 4);
        m.insert("AnonHugePages".into(), self.nr_anon_thp() * 2048);
        m.insert("PageTables".into(), self.nr_pgtable_pages() * 4);
        m.insert("KernelOther".into(), self.nr_kernel_pages() * 4);
        m.insert("Active(file)".into(), lru(LRU_ACTIVE_FILE) * 4);
        m.insert("Inactive(file)".into(), lru(LRU_INACTIVE_FILE) * 4);
        m.insert("SwapTotal".into(), self.total_swap_pages() * 4);
        m.insert("SwapFree".into(), self.nr_swap_pages() * 4);
        m.insert("SwapCached".into(), self.nr_swapcache() * 4);
        for (name, v) in self.hugetlb_meminfo() {
            m.insert(name.into(), v);
        }
        m
    }

    pub fn heap_bytes(&self) -> usize {
        self.pm.heap_bytes() + self.slots.heap_bytes() + self.swap.heap_bytes()
    }
}
