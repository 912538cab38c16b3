//! The knobs, typed: what the model's mechanisms read of transparent_hugepage/*, vm.*
//! and the thplab.* policies (the registry and validation are thplab_workload::knobs).

use thplab_workload::knobs::KnobSet;

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
    /// every knob's value (canonical name -> value), as sysfs/sysctl show them
    pub knobs: KnobSet,
    pub enabled: ThpMode,
    pub enabled_2m: ThpMode,
    /// hugepages-<size>kB/enabled per anonymous order (index = order; 2..=8 are mTHP,
    /// 9 mirrors enabled_2m, 0 and 1 are Never)
    pub mthp: [ThpMode; 10],
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
    /// vm.max_map_count (mmap.rs: map_count_ok)
    pub max_map_count: u64,
    /// CONFIG_PT_RECLAIM: MADV_DONTNEED frees empty PTE tables (pt_reclaim.rs)
    pub pt_reclaim: bool,
    pub pmd_swap_entries: bool,
    pub khugepaged_skip_collapsed: bool,
    pub khugepaged_cold_to_tail: bool,
    pub khugepaged_disabled_next: bool,
    pub khugepaged_cheap_progress: bool,
    pub khugepaged_skip_lazyfree: bool,
    pub proactive_leeway: bool,
    pub free_page_reporting: bool,
    /// thplab.free_page_reporting_start=idle: the run starts as on an idle reporting guest
    /// after the live runner's back-fill (page_reporting.rs)
    pub reporting_idle_start: bool,
    /// thplab.free_page_reporting_start=found: the run starts with the free blocks the live
    /// run found reported (MachineSpec::reported), then the runner's back-fill
    pub reporting_found_start: bool,
    /// page_reporting.page_reporting_order: the smallest free block reported
    pub page_reporting_order: u32,
    /// thplab.huge_zero_folio=kept: the huge zero folio is there as the run starts
    pub huge_zero_kept: bool,
}

impl Config {
    pub fn from_knobs(knobs: KnobSet) -> Config {
        let k = &knobs;
        let g = |n: &str| k.get(n).map(|s| s.as_str()).unwrap_or_else(|| panic!("knob {n} missing"));
        let n = |name: &str| g(name).parse::<u64>().unwrap_or(0);
        Config {
            knobs: knobs.clone(),
            enabled: ThpMode::parse(g("transparent_hugepage/enabled")),
            enabled_2m: ThpMode::parse(g("transparent_hugepage/hugepages-2048kB/enabled")),
            mthp: std::array::from_fn(|o| {
                if thplab_workload::knobs::MTHP_ANON_ORDERS.contains(&(o as u32)) {
                    ThpMode::parse(g(&thplab_workload::knobs::mthp_enabled_knob(o as u32)))
                } else {
                    ThpMode::Never
                }
            }),
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
            pt_reclaim: g("thplab.config_pt_reclaim") == "y",
            max_map_count: n("vm.max_map_count"),
            pmd_swap_entries: n("thplab.pmd_swap_entries") == 1,
            khugepaged_skip_collapsed: n("thplab.khugepaged_skip_collapsed") == 1,
            khugepaged_cold_to_tail: n("thplab.khugepaged_cold_to_tail") == 1,
            khugepaged_disabled_next: n("thplab.khugepaged_disabled_next") == 1,
            khugepaged_cheap_progress: n("thplab.khugepaged_cheap_progress") == 1,
            khugepaged_skip_lazyfree: n("thplab.khugepaged_skip_lazyfree") == 1,
            proactive_leeway: g("thplab.proactive_wmark") == "leeway",
            free_page_reporting: n("thplab.free_page_reporting") == 1,
            reporting_idle_start: g("thplab.free_page_reporting_start") == "idle",
            reporting_found_start: g("thplab.free_page_reporting_start") == "found",
            page_reporting_order: n("thplab.page_reporting_order") as u32,
            huge_zero_kept: g("thplab.huge_zero_folio") == "kept",
        }
    }

    /// hugepage_global_enabled() for PMD order, resolving the per-size knob.
    pub fn pmd_mode(&self) -> ThpMode {
        match self.enabled_2m {
            ThpMode::Inherit => self.enabled,
            m => m,
        }
    }
    /// The anonymous orders (bit mask) a fault in a VMA with `vm_flags` may use, from
    /// the per-size knobs: the mask part of thp_vma_allowable_orders() (huge_anon_orders_always,
    /// _madvise with VM_HUGEPAGE, _inherit when the global knob allows it). The caller
    /// checks VM_NOHUGEPAGE / prctl (vma_thp_disabled).
    pub fn anon_orders_mask(&self, vm_flags_hugepage: bool) -> u32 {
        let global_always = self.enabled == ThpMode::Always;
        let global_enabled = self.enabled != ThpMode::Never;
        let mut mask = 0;
        for (o, m) in self.mthp.iter().enumerate() {
            let on = match m {
                ThpMode::Always => true,
                ThpMode::Madvise => vm_flags_hugepage,
                ThpMode::Inherit => global_always || (vm_flags_hugepage && global_enabled),
                ThpMode::Never => false,
            };
            if on {
                mask |= 1 << o;
            }
        }
        mask
    }
    /// hugepage_pmd_enabled(): khugepaged runs and the min_free_kbytes floor applies.
    pub fn hugepage_pmd_enabled(&self) -> bool {
        self.pmd_mode() != ThpMode::Never
    }
}
