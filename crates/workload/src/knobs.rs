//! The knob registry: every tunable the model honours, under the kernel's own name,
//! with the file a live run writes, the kernel default and the accepted values.
//!
//! Names: sysfs knobs are named by their path below `/sys/kernel/mm/`
//! (`transparent_hugepage/enabled`, `transparent_hugepage/khugepaged/max_ptes_none`);
//! the short form without `transparent_hugepage/` is accepted too
//! (`khugepaged/max_ptes_none`). Sysctls are named like `sysctl(8)` does (`vm.swappiness`).
//! Policies that exist only in thplab — the seed mechanisms that mainline lacks, and
//! model switches such as `CONFIG_THP_SWAP` — live under `thplab.`; a live run accepts them
//! only at the value that describes the running kernel.

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum KnobKind {
    /// A file below /sys/kernel/mm.
    Sysfs,
    /// A file below /proc/sys.
    Sysctl,
    /// A thplab model policy (a seed mechanism or a kernel config switch).
    Policy,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KnobValues {
    /// One of a list, shown `always [madvise] never` like sysfs.
    Choice { choices: Vec<&'static str> },
    /// An integer in a closed range.
    Int { min: i64, max: i64 },
    /// A trigger: writing any accepted value does something, reading gives nothing useful.
    Trigger { min: i64, max: i64 },
}

#[derive(Clone, Debug, Serialize)]
pub struct KnobDef {
    pub name: &'static str,
    pub kind: KnobKind,
    /// The file a live run reads and writes (None for policies).
    pub path: Option<&'static str>,
    pub default: &'static str,
    pub values: KnobValues,
    /// For policies: the value that describes a mainline v6.18 kernel (what a live run can honour).
    pub live_value: Option<&'static str>,
    pub doc: &'static str,
}

macro_rules! choice {
    ($($c:expr),*) => { KnobValues::Choice { choices: vec![$($c),*] } };
}

/// `hugepages-<size>kB/enabled` for an anonymous mTHP order below PMD order (x86-64:
/// orders 2..8, THP_ORDERS_ALL_ANON without PMD order). Kernel default: never.
macro_rules! mthp_enabled {
    ($order:literal, $kb:literal) => {
        KnobDef {
            name: concat!("transparent_hugepage/hugepages-", $kb, "kB/enabled"),
            kind: KnobKind::Sysfs,
            path: Some(concat!("/sys/kernel/mm/transparent_hugepage/hugepages-", $kb, "kB/enabled")),
            default: "never",
            values: choice!("always", "inherit", "madvise", "never"),
            live_value: None,
            doc: concat!(
                "mTHP: anonymous faults may allocate ",
                $kb,
                " KiB folios (order ",
                $order,
                ", PTE-mapped; alloc_anon_folio); inherit follows transparent_hugepage/enabled; stats in hugepages-",
                $kb,
                "kB/stats/*"
            ),
        }
    };
}

/// `hugepages-<size>kB/shmem_enabled` (thpsize_shmem_enabled_store): accepted and
/// recorded; the model has no shmem/tmpfs mappings, so it never acts on it.
macro_rules! mthp_shmem {
    ($kb:literal, $default:literal) => {
        KnobDef {
            name: concat!("transparent_hugepage/hugepages-", $kb, "kB/shmem_enabled"),
            kind: KnobKind::Sysfs,
            path: Some(concat!("/sys/kernel/mm/transparent_hugepage/hugepages-", $kb, "kB/shmem_enabled")),
            default: $default,
            values: choice!("always", "inherit", "within_size", "advise", "never"),
            live_value: None,
            doc: concat!("shmem/tmpfs folios of ", $kb, " KiB; accepted and recorded, the model has no shmem mappings"),
        }
    };
}

/// The anonymous mTHP orders of x86-64 (THP_ORDERS_ALL_ANON: orders 2..=PMD_ORDER; order 1
/// is file/shmem only) and their sysfs directory names.
pub const MTHP_ANON_ORDERS: std::ops::RangeInclusive<u32> = 2..=9;
pub const MTHP_SIZE_DIRS: [&str; 10] = [
    "hugepages-4kB",
    "hugepages-8kB",
    "hugepages-16kB",
    "hugepages-32kB",
    "hugepages-64kB",
    "hugepages-128kB",
    "hugepages-256kB",
    "hugepages-512kB",
    "hugepages-1024kB",
    "hugepages-2048kB",
];
/// The knob `hugepages-<size>kB/enabled` of an anonymous order (2..=9).
pub fn mthp_enabled_knob(order: u32) -> String {
    format!("transparent_hugepage/{}/enabled", MTHP_SIZE_DIRS[order as usize])
}
/// The per-size stats files an anonymous order has (hugepages-<size>kB/stats/*, enum
/// mthp_stat_item in include/linux/huge_mm.h), in sysfs's names.
pub const MTHP_STATS: [&str; 18] = [
    "anon_fault_alloc",
    "anon_fault_fallback",
    "anon_fault_fallback_charge",
    "anon_fault_declined",
    "zswpout",
    "swpin",
    "swpin_fallback",
    "swpin_fallback_charge",
    "swpout",
    "swpout_fallback",
    "shmem_alloc",
    "shmem_fallback",
    "shmem_fallback_charge",
    "split",
    "split_failed",
    "split_deferred",
    "nr_anon",
    "nr_anon_partially_mapped",
];

pub fn registry() -> Vec<KnobDef> {
    use KnobKind::*;
    let thp = |n: &'static str| -> Option<&'static str> { Some(n) };
    vec![
        // ---- /sys/kernel/mm/transparent_hugepage (mm/huge_memory.c) ----
        KnobDef { name: "transparent_hugepage/enabled", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/enabled"),
            default: "madvise", values: choice!("always", "madvise", "never"), live_value: None,
            doc: "PMD THP on anonymous faults: always, only in MADV_HUGEPAGE regions, or never (enabled_store)" },
        KnobDef { name: "transparent_hugepage/defrag", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/defrag"),
            default: "madvise", values: choice!("always", "defer", "defer+madvise", "madvise", "never"), live_value: None,
            doc: "how hard a THP fault tries: the gfp mask from vma_thp_gfp_mask()" },
        KnobDef { name: "transparent_hugepage/use_zero_page", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/use_zero_page"),
            default: "1", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "read faults in THP regions map the huge zero page" },
        KnobDef { name: "transparent_hugepage/shrink_underused", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/shrink_underused"),
            default: "1", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "the deferred-split shrinker splits THPs with more than max_ptes_none zero subpages (v6.12+)" },
        KnobDef { name: "transparent_hugepage/shmem_enabled", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/shmem_enabled"),
            default: "never", values: choice!("always", "within_size", "advise", "never", "deny", "force"), live_value: None,
            doc: "PMD THP for shmem/tmpfs (shmem_enabled_store); accepted and recorded, the model has no shmem mappings" },
        KnobDef { name: "transparent_hugepage/swapin_enabled", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/swapin_enabled"),
            default: "always", values: choice!("always", "madvise", "never"), live_value: None,
            doc: "seed 003 (Huang Ying 2018, not mainline): swap a PMD swap entry back in as a whole THP; only with thplab.pmd_swap_entries=1" },
        // ---- per-size (mTHP) controls: hugepages-<size>kB (thpsize_create, anon_enabled_store) ----
        mthp_enabled!(2, "16"), mthp_enabled!(3, "32"), mthp_enabled!(4, "64"), mthp_enabled!(5, "128"),
        mthp_enabled!(6, "256"), mthp_enabled!(7, "512"), mthp_enabled!(8, "1024"),
        KnobDef { name: "transparent_hugepage/hugepages-2048kB/enabled", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled"),
            default: "inherit", values: choice!("always", "inherit", "madvise", "never"), live_value: None,
            doc: "per-size control of PMD THP (order 9); inherit follows transparent_hugepage/enabled; stats in hugepages-2048kB/stats/*" },
        mthp_shmem!("8", "never"), mthp_shmem!("16", "never"), mthp_shmem!("32", "never"), mthp_shmem!("64", "never"),
        mthp_shmem!("128", "never"), mthp_shmem!("256", "never"), mthp_shmem!("512", "never"), mthp_shmem!("1024", "never"),
        mthp_shmem!("2048", "inherit"),
        // ---- khugepaged (mm/khugepaged.c) ----
        KnobDef { name: "transparent_hugepage/khugepaged/defrag", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"),
            default: "1", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "khugepaged allocates with GFP_TRANSHUGE (direct reclaim/compaction) rather than GFP_TRANSHUGE_LIGHT" },
        KnobDef { name: "transparent_hugepage/khugepaged/max_ptes_none", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none"),
            default: "511", values: KnobValues::Int { min: 0, max: 511 }, live_value: None,
            doc: "max none/zero-page PTEs in a range khugepaged collapses; also the underused-THP threshold" },
        KnobDef { name: "transparent_hugepage/khugepaged/max_ptes_swap", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap"),
            default: "64", values: KnobValues::Int { min: 0, max: 511 }, live_value: None,
            doc: "max swap PTEs in a range khugepaged collapses (they are swapped in)" },
        KnobDef { name: "transparent_hugepage/khugepaged/max_ptes_shared", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared"),
            default: "256", values: KnobValues::Int { min: 0, max: 511 }, live_value: None,
            doc: "max PTEs of shared pages in a range khugepaged collapses" },
        KnobDef { name: "transparent_hugepage/khugepaged/pages_to_scan", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"),
            default: "4096", values: KnobValues::Int { min: 1, max: u32::MAX as i64 }, live_value: None,
            doc: "progress budget per khugepaged wake-up" },
        KnobDef { name: "transparent_hugepage/khugepaged/scan_sleep_millisecs", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs"),
            default: "10000", values: KnobValues::Int { min: 0, max: u32::MAX as i64 }, live_value: None,
            doc: "sleep between khugepaged passes" },
        KnobDef { name: "transparent_hugepage/khugepaged/alloc_sleep_millisecs", kind: Sysfs, path: thp("/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs"),
            default: "60000", values: KnobValues::Int { min: 0, max: u32::MAX as i64 }, live_value: None,
            doc: "sleep after a failed THP allocation in khugepaged" },
        // ---- sysctls (mm/page_alloc.c, mm/compaction.c, mm/vmscan.c) ----
        KnobDef { name: "vm.min_free_kbytes", kind: Sysctl, path: Some("/proc/sys/vm/min_free_kbytes"),
            default: "auto", values: KnobValues::Int { min: 0, max: i32::MAX as i64 }, live_value: None,
            doc: "min watermark sum; auto = calculate_min_free_kbytes() raised by set_recommended_min_free_kbytes() while PMD THP is enabled" },
        KnobDef { name: "vm.watermark_scale_factor", kind: Sysctl, path: Some("/proc/sys/vm/watermark_scale_factor"),
            default: "10", values: KnobValues::Int { min: 1, max: 3000 }, live_value: None,
            doc: "distance between min, low and high watermarks, in 1/10000 of managed pages" },
        KnobDef { name: "vm.watermark_boost_factor", kind: Sysctl, path: Some("/proc/sys/vm/watermark_boost_factor"),
            default: "15000", values: KnobValues::Int { min: 0, max: i32::MAX as i64 }, live_value: None,
            doc: "cap of the watermark boost a fallback claim adds, in 1/10000 of the high watermark" },
        KnobDef { name: "vm.swappiness", kind: Sysctl, path: Some("/proc/sys/vm/swappiness"),
            default: "60", values: KnobValues::Int { min: 0, max: 200 }, live_value: None,
            doc: "relative IO cost of swapping vs file reclaim" },
        KnobDef { name: "vm.compaction_proactiveness", kind: Sysctl, path: Some("/proc/sys/vm/compaction_proactiveness"),
            default: "20", values: KnobValues::Int { min: 0, max: 100 }, live_value: None,
            doc: "proactive compaction: kcompactd keeps the node fragmentation score below 100 - this" },
        KnobDef { name: "vm.extfrag_threshold", kind: Sysctl, path: Some("/proc/sys/vm/extfrag_threshold"),
            default: "500", values: KnobValues::Int { min: 0, max: 1000 }, live_value: None,
            doc: "compaction_suitable(): compact only when the fragmentation index exceeds this" },
        KnobDef { name: "vm.compact_unevictable_allowed", kind: Sysctl, path: Some("/proc/sys/vm/compact_unevictable_allowed"),
            default: "1", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "compaction may move mlocked pages" },
        KnobDef { name: "vm.defrag_mode", kind: Sysctl, path: Some("/proc/sys/vm/defrag_mode"),
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "v6.15+: enforce ALLOC_NOFRAGMENT; fall back only after reclaim and compaction failed" },
        KnobDef { name: "vm.nr_hugepages", kind: Sysctl, path: Some("/proc/sys/vm/nr_hugepages"),
            default: "0", values: KnobValues::Int { min: 0, max: i32::MAX as i64 }, live_value: None,
            doc: "size of the 2 MiB hugetlb pool (set_max_huge_pages): a write grows it one order-9 allocation at a time (GFP_HIGHUSER_MOVABLE | __GFP_THISNODE | __GFP_RETRY_MAYFAIL, round-robin over nodes) until the first failure, or shrinks it; reads back the pool size" },
        KnobDef { name: "vm.max_map_count", kind: Sysctl, path: Some("/proc/sys/vm/max_map_count"),
            default: "65530", values: KnobValues::Int { min: 0, max: i32::MAX as i64 }, live_value: None,
            doc: "most VMAs a process may have (sysctl_max_map_count): mmap fails with ENOMEM above it, and a munmap, madvise or mprotect that would split a VMA at the limit fails with ENOMEM (split_vma, vms_gather_munmap_vmas)" },
        KnobDef { name: "vm.compact_memory", kind: Sysctl, path: Some("/proc/sys/vm/compact_memory"),
            default: "", values: KnobValues::Trigger { min: 1, max: 1 }, live_value: None,
            doc: "write 1: compact every zone of every node (sysctl_compaction_handler)" },
        KnobDef { name: "vm.drop_caches", kind: Sysctl, path: Some("/proc/sys/vm/drop_caches"),
            default: "", values: KnobValues::Trigger { min: 1, max: 3 }, live_value: None,
            doc: "write 1 (page cache), 2 (slab: shrinkers, incl. the THP deferred split queue) or 3 (both)" },
        // ---- thplab policies: seed mechanisms and config switches ----
        KnobDef { name: "thplab.split_zero_subpages", kind: Policy, path: None,
            default: "mainline", values: choice!("none", "seed", "mainline"), live_value: Some("mainline"),
            doc: "zero subpages when a THP is split: none (pre-2021, all remapped); seed (Yu Zhao 2021: unmapped and freed on isolated splits, thp_split_unmap/thp_split_free); mainline (6.12+: remapped to the shared zero page)" },
        KnobDef { name: "thplab.config_thp_swap", kind: Policy, path: None,
            default: "y", values: choice!("y", "n"), live_value: Some("y"),
            doc: "CONFIG_THP_SWAP: n splits every THP before swap-out (as in seed 000's runs)" },
        KnobDef { name: "thplab.swap_zeromap", kind: Policy, path: None,
            default: "y", values: choice!("y", "n"), live_value: Some("y"),
            doc: "v6.12+: all-zero folios go to the swap zeromap without I/O (swpout_zero); n = the kernels the 2018/2021 seeds ran on, which wrote zero pages to the device" },
        KnobDef { name: "thplab.config_pt_reclaim", kind: Policy, path: None,
            default: "y", values: choice!("y", "n"), live_value: Some("y"),
            doc: "CONFIG_PT_RECLAIM (v6.14+ x86_64, mm/pt_reclaim.c): MADV_DONTNEED frees the PTE table of every whole 2 MiB range it empties, so later faults there may map a THP; n = kernels before 6.14, which kept the table" },
        KnobDef { name: "thplab.pmd_swap_entries", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 003 (Huang Ying 2018): keep one PMD swap entry for a swapped-out THP and swap it in whole per swapin_enabled" },
        KnobDef { name: "thplab.khugepaged_skip_collapsed", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 002 v1: remove an mm from the khugepaged list once all its memory is collapsed" },
        KnobDef { name: "thplab.khugepaged_cold_to_tail", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 002 v1: move an mm to the list tail on MADV_COLD/MADV_FREE" },
        KnobDef { name: "thplab.khugepaged_disabled_next", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 002: move the cursor on at once when the mm has THP disabled completely" },
        KnobDef { name: "thplab.khugepaged_cheap_progress", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 002 v2+: charge ~1 unit, not 512, for PMD-mapped and table-less ranges" },
        KnobDef { name: "thplab.khugepaged_skip_lazyfree", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: Some("0"),
            doc: "seed 002 v4+: SCAN_PAGE_LAZYFREE for clean lazy-free folios" },
        KnobDef { name: "thplab.proactive_wmark", kind: Policy, path: None,
            default: "leeway", values: choice!("plus10", "leeway"), live_value: Some("leeway"),
            doc: "proactive compaction high watermark: plus10 (v5.9-v6.15: low+10) or leeway (v6.16+: low+min(10,low/2))" },
        KnobDef { name: "thplab.free_page_reporting", kind: Policy, path: None,
            default: "0", values: KnobValues::Int { min: 0, max: 1 }, live_value: None,
            doc: "the guest reports free 2 MiB blocks to its host; touching one again costs cost.refault_reported_2m" },
        KnobDef { name: "thplab.page_reporting_order", kind: Policy, path: None,
            default: "9", values: KnobValues::Int { min: 0, max: 11 }, live_value: None,
            doc: "with free_page_reporting, the smallest order of free block the guest reports (the page_reporting module's page_reporting_order; 9, pageblock_order, unless set; above 10 nothing is reported)" },
        KnobDef { name: "thplab.huge_zero_folio", kind: Policy, path: None,
            default: "absent", values: choice!("absent", "kept"), live_value: Some("absent"),
            doc: "the huge zero folio as the run starts: absent (the first read fault that maps it allocates it: thp_zero_page_alloc) or kept from earlier use (allocated, unused: a read fault maps it; the shrinker may free it). validate sets kept for a live run that mapped it without allocating it" },
        KnobDef { name: "thplab.free_page_reporting_start", kind: Policy, path: None,
            default: "backed", values: choice!("backed", "idle", "found"), live_value: Some("backed"),
            doc: "with free_page_reporting, the run starts with every free page backed (backed); as an idle guest's, its free blocks reported, after the live runner's back-fill of the footprint (idle); or with the free blocks the live run found reported (machine.reported, per zone and order), then the back-fill (found). A live run records backed and the free lists it found; validate replays it at found (docs/page_reporting.md)" },
    ]
}

/// The registry indexed by canonical name.
pub fn registry_map() -> BTreeMap<&'static str, KnobDef> {
    registry().into_iter().map(|k| (k.name, k)).collect()
}

/// Resolve a user-given knob name to its canonical name.
/// Accepts the canonical name, the name without `transparent_hugepage/`, a full
/// `/sys/kernel/mm/...` or `/proc/sys/vm/...` path, and `vm/x` for `vm.x`.
pub fn canonical_name(name: &str) -> Result<&'static str, String> {
    let reg = registry();
    let n = name.trim();
    let n = n.strip_prefix("/sys/kernel/mm/").unwrap_or(n);
    let n2 = n.strip_prefix("/proc/sys/").map(|s| s.replace('/', ".")).unwrap_or_else(|| n.to_string());
    let n3 = if let Some(rest) = n2.strip_prefix("vm/") { format!("vm.{rest}") } else { n2 };
    for k in &reg {
        if k.name == n3 || k.name.strip_prefix("transparent_hugepage/") == Some(n3.as_str()) {
            return Ok(k.name);
        }
    }
    let mut names: Vec<&str> = reg.iter().map(|k| k.name).collect();
    names.sort();
    Err(format!("unknown knob `{name}`; known knobs: {}", names.join(", ")))
}

impl KnobDef {
    /// Check and normalise a value; the error lists the accepted values.
    pub fn check(&self, value: &str) -> Result<String, String> {
        let v = value.trim();
        // sysfs accepts "[madvise]"-style input too when pasted from a read.
        let v = v.trim_start_matches('[').trim_end_matches(']');
        match &self.values {
            KnobValues::Choice { choices } => {
                if choices.contains(&v) {
                    Ok(v.to_string())
                } else {
                    Err(format!(
                        "knob `{}`: value `{}` is not accepted; accepted values: {}",
                        self.name,
                        value,
                        choices.join(", ")
                    ))
                }
            }
            KnobValues::Int { min, max } | KnobValues::Trigger { min, max } => {
                if self.name == "vm.min_free_kbytes" && v == "auto" {
                    return Ok("auto".into());
                }
                match v.parse::<i64>() {
                    Ok(x) if x >= *min && x <= *max => Ok(x.to_string()),
                    _ => Err(format!(
                        "knob `{}`: value `{}` is not accepted; accepted values: integers {}..={}",
                        self.name, value, min, max
                    )),
                }
            }
        }
    }

    /// How sysfs shows the knob: `always [madvise] never` for choices, the number otherwise.
    pub fn show(&self, value: &str) -> String {
        match &self.values {
            KnobValues::Choice { choices } => choices
                .iter()
                .map(|c| if *c == value { format!("[{c}]") } else { c.to_string() })
                .collect::<Vec<_>>()
                .join(" "),
            _ => value.to_string(),
        }
    }

    pub fn accepted(&self) -> String {
        match &self.values {
            KnobValues::Choice { choices } => choices.join(" "),
            KnobValues::Int { min, max } => format!("{min}..={max}"),
            KnobValues::Trigger { min, max } => format!("write {min}..={max}"),
        }
    }
}

/// Parse a sysfs read such as `always [madvise] never` into the selected value.
pub fn parse_sysfs_choice(text: &str) -> Option<String> {
    let t = text.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return Some(t[a + 1..b].to_string());
        }
    }
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// A validated set of knob values (canonical name -> normalised value).
pub type KnobSet = BTreeMap<String, String>;

/// Defaults for every non-trigger knob.
pub fn defaults() -> KnobSet {
    registry()
        .into_iter()
        .filter(|k| !matches!(k.values, KnobValues::Trigger { .. }))
        .map(|k| (k.name.to_string(), k.default.to_string()))
        .collect()
}

/// Validate one assignment `name=value`, returning (canonical name, normalised value).
pub fn check_assignment(name: &str, value: &str) -> Result<(String, String), String> {
    let canon = canonical_name(name)?;
    let def = registry_map().remove(canon).expect("canonical");
    let v = def.check(value)?;
    Ok((canon.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_and_values() {
        assert_eq!(
            canonical_name("khugepaged/max_ptes_none").unwrap(),
            "transparent_hugepage/khugepaged/max_ptes_none"
        );
        assert_eq!(
            canonical_name("/sys/kernel/mm/transparent_hugepage/enabled").unwrap(),
            "transparent_hugepage/enabled"
        );
        assert_eq!(canonical_name("/proc/sys/vm/swappiness").unwrap(), "vm.swappiness");
        assert_eq!(canonical_name("vm/compaction_proactiveness").unwrap(), "vm.compaction_proactiveness");
        assert!(canonical_name("transparent_hugepage/bogus").unwrap_err().contains("known knobs"));
        let e = check_assignment("enabled", "sometimes").unwrap_err();
        assert!(e.contains("always, madvise, never"), "{e}");
        assert!(check_assignment("khugepaged/max_ptes_none", "512").is_err());
        assert_eq!(check_assignment("enabled", "[always]").unwrap().1, "always");
        let d = registry_map();
        assert_eq!(d["transparent_hugepage/enabled"].show("madvise"), "always [madvise] never");
        assert_eq!(parse_sysfs_choice("always defer defer+madvise [madvise] never\n").unwrap(), "madvise");
        // every anonymous mTHP size has its per-size knob, under sysfs's name
        for o in MTHP_ANON_ORDERS {
            let k = &d[mthp_enabled_knob(o).as_str()];
            assert_eq!(k.path.unwrap(), format!("/sys/kernel/mm/{}", k.name));
        }
        assert_eq!(canonical_name("hugepages-64kB/enabled").unwrap(), "transparent_hugepage/hugepages-64kB/enabled");
        assert_eq!(check_assignment("hugepages-16kB/enabled", "inherit").unwrap().1, "inherit");
        assert!(check_assignment("hugepages-8kB/enabled", "always").is_err());
        assert_eq!(check_assignment("hugepages-8kB/shmem_enabled", "within_size").unwrap().1, "within_size");
        assert_eq!(defaults()["transparent_hugepage/hugepages-1024kB/enabled"], "never");
    }
}
