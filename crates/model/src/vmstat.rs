//! Event counters under their /proc/vmstat names (include/linux/vm_event_item.h),
//! the /proc/buddyinfo and /proc/pagetypeinfo texts (mm/vmstat.c: frag_show_print,
//! pagetypeinfo_showfree, pagetypeinfo_showblockcount) and the fragmentation metrics
//! (mm/vmstat.c: fill_contig_page_info, __fragmentation_index; mm/compaction.c:
//! extfrag_for_order, fragmentation_score_zone/_node).

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mmzone::{Zone, MIGRATETYPE_NAMES, MIGRATE_TYPES, NR_FREE_LISTS};

macro_rules! events {
    ($($id:ident = $name:literal),* $(,)?) => {
        /// A monotonic event counter (count_vm_event).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        #[allow(non_camel_case_types)]
        pub enum Ev { $($id),* }
        pub const EV_NAMES: &[&str] = &[$($name),*];
        pub const NR_EV: usize = EV_NAMES.len();
    };
}

events! {
    PGPGIN = "pgpgin", PGPGOUT = "pgpgout", PSWPIN = "pswpin", PSWPOUT = "pswpout",
    PGALLOC_DMA = "pgalloc_dma", PGALLOC_DMA32 = "pgalloc_dma32", PGALLOC_NORMAL = "pgalloc_normal", PGALLOC_MOVABLE = "pgalloc_movable",
    ALLOCSTALL_DMA = "allocstall_dma", ALLOCSTALL_DMA32 = "allocstall_dma32", ALLOCSTALL_NORMAL = "allocstall_normal", ALLOCSTALL_MOVABLE = "allocstall_movable",
    PGFREE = "pgfree", PGACTIVATE = "pgactivate", PGDEACTIVATE = "pgdeactivate", PGLAZYFREE = "pglazyfree",
    PGFAULT = "pgfault", PGMAJFAULT = "pgmajfault", PGLAZYFREED = "pglazyfreed", PGREFILL = "pgrefill",
    PGSTEAL_KSWAPD = "pgsteal_kswapd", PGSTEAL_DIRECT = "pgsteal_direct", PGSTEAL_KHUGEPAGED = "pgsteal_khugepaged",
    PGSCAN_KSWAPD = "pgscan_kswapd", PGSCAN_DIRECT = "pgscan_direct", PGSCAN_KHUGEPAGED = "pgscan_khugepaged",
    PGSCAN_ANON = "pgscan_anon", PGSTEAL_ANON = "pgsteal_anon",
    KSWAPD_LOW_WMARK_HIT_QUICKLY = "kswapd_low_wmark_hit_quickly", KSWAPD_HIGH_WMARK_HIT_QUICKLY = "kswapd_high_wmark_hit_quickly",
    PAGEOUTRUN = "pageoutrun", DROP_PAGECACHE = "drop_pagecache", DROP_SLAB = "drop_slab", OOM_KILL = "oom_kill",
    PGMIGRATE_SUCCESS = "pgmigrate_success", PGMIGRATE_FAIL = "pgmigrate_fail",
    THP_MIGRATION_SUCCESS = "thp_migration_success", THP_MIGRATION_FAIL = "thp_migration_fail", THP_MIGRATION_SPLIT = "thp_migration_split",
    COMPACT_MIGRATE_SCANNED = "compact_migrate_scanned", COMPACT_FREE_SCANNED = "compact_free_scanned", COMPACT_ISOLATED = "compact_isolated",
    COMPACT_STALL = "compact_stall", COMPACT_FAIL = "compact_fail", COMPACT_SUCCESS = "compact_success",
    COMPACT_DAEMON_WAKE = "compact_daemon_wake", COMPACT_DAEMON_MIGRATE_SCANNED = "compact_daemon_migrate_scanned",
    COMPACT_DAEMON_FREE_SCANNED = "compact_daemon_free_scanned",
    THP_FAULT_ALLOC = "thp_fault_alloc", THP_FAULT_FALLBACK = "thp_fault_fallback", THP_FAULT_FALLBACK_CHARGE = "thp_fault_fallback_charge",
    THP_COLLAPSE_ALLOC = "thp_collapse_alloc", THP_COLLAPSE_ALLOC_FAILED = "thp_collapse_alloc_failed",
    THP_SPLIT_PAGE = "thp_split_page", THP_SPLIT_PAGE_FAILED = "thp_split_page_failed",
    THP_DEFERRED_SPLIT_PAGE = "thp_deferred_split_page", THP_UNDERUSED_SPLIT_PAGE = "thp_underused_split_page",
    THP_SPLIT_PMD = "thp_split_pmd",
    THP_SCAN_EXCEED_NONE_PTE = "thp_scan_exceed_none_pte", THP_SCAN_EXCEED_SWAP_PTE = "thp_scan_exceed_swap_pte",
    THP_SCAN_EXCEED_SHARE_PTE = "thp_scan_exceed_share_pte",
    THP_ZERO_PAGE_ALLOC = "thp_zero_page_alloc", THP_ZERO_PAGE_ALLOC_FAILED = "thp_zero_page_alloc_failed",
    THP_SWPOUT = "thp_swpout", THP_SWPOUT_FALLBACK = "thp_swpout_fallback",
    SWAP_RA = "swap_ra", SWAP_RA_HIT = "swap_ra_hit", SWPIN_ZERO = "swpin_zero", SWPOUT_ZERO = "swpout_zero",
    HTLB_BUDDY_PGALLOC = "htlb_buddy_alloc_success", HTLB_BUDDY_PGALLOC_FAIL = "htlb_buddy_alloc_fail",
    // Not in mainline: Yu Zhao's 2021 series (seed 000/001) and Huang Ying's 2018 series (seed 003).
    THP_SPLIT_UNMAP = "thp_split_unmap", THP_SPLIT_FREE = "thp_split_free",
    THP_SWPIN = "thp_swpin", THP_SWPIN_FALLBACK = "thp_swpin_fallback",
}

/// Counters that exist only with a thplab policy switched on; a mainline kernel has no such line.
pub const NON_MAINLINE: &[Ev] = &[Ev::THP_SPLIT_UNMAP, Ev::THP_SPLIT_FREE, Ev::THP_SWPIN, Ev::THP_SWPIN_FALLBACK];

#[derive(Clone)]
pub struct VmStat {
    pub ev: [u64; NR_EV],
}
/// enum node_stat_item: the per-node counters the model keeps (node_page_state()).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStat {
    /// NR_ANON_MAPPED: mapped anonymous pages (nr_anon_pages, AnonPages)
    NrAnonMapped,
    /// NR_ANON_THPS: PMD-mapped anonymous THPs (nr_anon_transparent_hugepages)
    NrAnonThps,
    /// NR_PAGETABLE: page-table pages (nr_page_table_pages, PageTables)
    NrPagetable,
    /// kernel pages outside the buddy allocator's view: kalloc, zsmalloc (KernelOther)
    NrKernelMisc,
}
pub const NR_NODE_STATS: usize = 4;

/// A node's counters (pgdat->vm_stat).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeStats(pub [i64; NR_NODE_STATS]);
impl NodeStats {
    #[inline]
    pub fn get(&self, item: NodeStat) -> i64 {
        self.0[item as usize]
    }
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat { ev: [0; NR_EV] }
    }
}
impl VmStat {
    #[inline]
    pub fn count(&mut self, e: Ev) {
        self.ev[e as usize] += 1;
    }
    #[inline]
    pub fn add(&mut self, e: Ev, n: u64) {
        self.ev[e as usize] += n;
    }
    #[inline]
    pub fn get(&self, e: Ev) -> u64 {
        self.ev[e as usize]
    }
}

/// fill_contig_page_info(): (free_pages, free_blocks_total, free_blocks_suitable).
pub fn contig_page_info(z: &Zone, suitable_order: u32) -> (u64, u64, u64) {
    let (mut free_pages, mut total, mut suitable) = (0u64, 0u64, 0u64);
    for order in 0..NR_PAGE_ORDERS {
        let nr = z.nr_free_order(order);
        total += nr;
        free_pages += nr << order;
        if order as u32 >= suitable_order {
            suitable += nr << (order as u32 - suitable_order);
        }
    }
    (free_pages, total, suitable)
}

/// extfrag_for_order(): percent of free memory that cannot serve an order-`order` allocation.
pub fn extfrag_for_order(z: &Zone, order: u32) -> u64 {
    let (free_pages, _, suitable) = contig_page_info(z, order);
    if free_pages == 0 {
        return 0;
    }
    (free_pages - (suitable << order)) * 100 / free_pages
}

/// __fragmentation_index() x1000: -1000 when a suitable block exists, 0 when nothing is free.
pub fn fragmentation_index(z: &Zone, order: u32) -> i64 {
    let (free_pages, total, suitable) = contig_page_info(z, order);
    if total == 0 {
        return 0;
    }
    if suitable > 0 {
        return -1000;
    }
    1000 - ((1000 + (free_pages * 1000 / (1u64 << order)) as i64) / total as i64)
}

/// fragmentation_score_zone(): extfrag at COMPACTION_HPAGE_ORDER (9).
pub fn fragmentation_score_zone(z: &Zone) -> u64 {
    extfrag_for_order(z, PAGEBLOCK_ORDER)
}

/// fragmentation_score_zone_weighted(): weighted by present pages over the node's.
pub fn fragmentation_score_zone_weighted(z: &Zone, node_present: u64) -> u64 {
    z.present * fragmentation_score_zone(z) / (node_present + 1)
}

/// fragmentation_score_node(): the sum of the weighted zone scores, 0..100.
pub fn fragmentation_score_node<'a>(zones: impl Iterator<Item = &'a Zone>, node_present: u64) -> u64 {
    zones.filter(|z| z.populated()).map(|z| fragmentation_score_zone_weighted(z, node_present)).sum()
}

/// One zone's /proc/buddyinfo line, exactly as frag_show_print() prints it.
pub fn buddyinfo_line(z: &Zone) -> String {
    let mut s = format!("Node {}, zone {:>8} ", z.node, z.name);
    for o in 0..NR_PAGE_ORDERS {
        s.push_str(&format!("{:>6} ", z.nr_free_order(o)));
    }
    s.push('\n');
    s
}

/// /proc/pagetypeinfo for one node (pagetypeinfo_show: header, free counts, block counts).
pub fn pagetypeinfo_node(node: usize, zones: &[&Zone], block_counts: &[[u64; MIGRATE_TYPES]]) -> String {
    let mut s = String::new();
    s.push_str(&format!("Page block order: {}\n", PAGEBLOCK_ORDER));
    s.push_str(&format!("Pages per block:  {}\n", PAGEBLOCK_NR_PAGES));
    s.push('\n');
    s.push_str(&format!("{:<43} ", "Free pages count per migrate type at order"));
    for o in 0..NR_PAGE_ORDERS {
        s.push_str(&format!("{:>6} ", o));
    }
    s.push('\n');
    for z in zones {
        for (mt, mt_name) in MIGRATETYPE_NAMES.iter().enumerate().take(MIGRATE_TYPES) {
            s.push_str(&format!("Node {:>4}, zone {:>8}, type {:>12} ", node, z.name, mt_name));
            for o in 0..NR_PAGE_ORDERS {
                let n = if mt < NR_FREE_LISTS { z.free_area[o].nr_free[mt] } else { 0 };
                // the kernel stops counting at 100000 and prints ">100000"
                if n >= 100_000 {
                    s.push_str(&format!(">{:>6} ", 100_000));
                } else {
                    s.push_str(&format!("{:>6} ", n));
                }
            }
            s.push('\n');
        }
    }
    s.push_str(&format!("\n{:<23}", "Number of blocks type "));
    for name in MIGRATETYPE_NAMES {
        s.push_str(&format!("{:>12} ", name));
    }
    s.push('\n');
    for (z, counts) in zones.iter().zip(block_counts) {
        s.push_str(&format!("Node {}, zone {:>8} ", node, z.name));
        for c in counts {
            s.push_str(&format!("{:>12} ", c));
        }
        s.push('\n');
    }
    s
}

impl Kernel {
    /// mod_node_page_state() on the node of `pfn`.
    #[inline]
    pub fn mod_node_page_state(&mut self, pfn: u64, item: NodeStat, delta: i64) {
        let nid = if self.pgdat.len() == 1 { 0 } else { self.pm.node_of(pfn) };
        self.pgdat[nid].stat.0[item as usize] += delta;
    }
    /// nr_anon_pages (NR_ANON_MAPPED), summed over the nodes.
    pub fn nr_anon_pages(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrAnonMapped)
    }
    /// nr_anon_transparent_hugepages (NR_ANON_THPS)
    pub fn nr_anon_thp(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrAnonThps)
    }
    /// nr_page_table_pages (NR_PAGETABLE)
    pub fn nr_pgtable_pages(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrPagetable)
    }
    /// kernel pages outside the buddy allocator's view (KernelOther)
    pub fn nr_kernel_pages(&self) -> u64 {
        self.global_node_page_state(NodeStat::NrKernelMisc)
    }
    /// global_node_page_state(): the sum over the nodes.
    pub fn global_node_page_state(&self, item: NodeStat) -> u64 {
        self.pgdat.iter().map(|n| n.stat.get(item)).sum::<i64>().max(0) as u64
    }
}
