//! The buddy allocator (mm/page_alloc.c): free areas per zone, order and migratetype,
//! pageblocks with a migratetype and a compaction skip bit, __rmqueue's
//! smallest → claim → steal order, __free_one_page merging, watermark checks and the
//! zonelist walk of get_page_from_freelist. The slow path (kswapd, direct reclaim,
//! direct compaction, OOM) is `Kernel::alloc_pages` below.
//!
//! Free lists are real lists, threaded through `links` for order-0 pages and through each
//! block's second frame for larger blocks (`TailCells`): blocks go to the head, or to the
//! tail when buddy_merge_likely() or FPI_TO_TAIL (boot memory, so a fresh machine hands
//! out memory lowest address first; `MachineSpec::aged` shuffles them). Per-CPU page
//! lists (struct per_cpu_pages) hold orders 0..=3 per migratetype and order-9 THPs,
//! with 6.18's batch / high auto-tuning (nr_pcp_alloc, nr_pcp_high, decay_pcp_high);
//! their pages are not in NR_FREE_PAGES, as in the kernel. Counts (nr_free per order and
//! migratetype, NR_FREE_PAGES) are exact. See docs/compaction.md.

use crate::compaction::{
    CaptureControl, CompactPriority, CompactResult, DEF_COMPACT_PRIORITY, INIT_COMPACT_PRIORITY,
    MIN_COMPACT_COSTLY_PRIORITY, MIN_COMPACT_PRIORITY,
};
use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::mmzone::*;
use crate::page_reporting::PageReporting;
use crate::trace::{trace_event, Trace};
use crate::vmstat::{Ev, NodeStat, VmStat};
use thplab_workload::machine::MachineSpec;

pub use crate::gfp::*;

/// Pageblock flag byte: bits 0..2 migratetype, bit 3 PB_migrate_skip.
const PB_MT_MASK: u8 = 7;
const PB_SKIP: u8 = 8;

/// Per-pageblock summary kept beside the pageblock flags (`PhysMem::pb_sum`), updated in
/// O(1) whenever a free buddy block is listed or unlisted: the compaction scanners use it
/// to step over a block (or the samples of __reset_isolation_pfn) where a frame walk would
/// find nothing, still charging the time the kernel's walk takes. The kernel has no such
/// counters; they only make the model fast, never change what it does (the checker
/// recounts them, a test compares runs with and without them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PbSummary {
    /// free buddy heads (blocks on the free lists) whose first frame is in the pageblock
    pub free_heads: u16,
    /// those of them at a pfn that is a multiple of 2^PAGE_ALLOC_COSTLY_ORDER (the pages
    /// __reset_isolation_pfn samples)
    pub free_heads_sampled: u16,
}

impl PbSummary {
    /// A free buddy head at `pfn` in this pageblock joins the counts (`listed`) or leaves them.
    #[inline]
    pub fn count_free_head(&mut self, pfn: u64, listed: bool) {
        let sampled = pfn.is_multiple_of(1 << PAGE_ALLOC_COSTLY_ORDER) as u16;
        if listed {
            self.free_heads += 1;
            self.free_heads_sampled += sampled;
        } else {
            self.free_heads -= 1;
            self.free_heads_sampled -= sampled;
        }
    }
}

thread_local! {
    /// Debug switch for the summaries (tests compare runs with it off): read when a
    /// PhysMem is created.
    pub static USE_PB_SUMMARIES: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Debug switch for carve_order0() (tests compare runs with it off): read when a
    /// PhysMem is created.
    pub static USE_BULK_CARVE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Blocks carve_order0() handed out (tests: the fast path was taken).
    pub static BULK_CARVES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Debug switch for free_run_order0() (tests compare runs with it off): read when a
    /// PhysMem is created.
    pub static USE_RUN_FREE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Pages free_run_order0() freed in runs of two or more (tests: the fast path was taken).
    pub static RUN_FREED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// MAX_RECLAIM_RETRIES (mm/internal.h): reclaim loops without progress before giving up.
const MAX_RECLAIM_RETRIES: u32 = 16;
/// MIN_PERCPU_PAGELIST_HIGH_FRACTION: pcp->high_max is at most 1/8 of the zone per CPU.
const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u64 = 8;
/// CONFIG_PCP_BATCH_SCALE_MAX (default 5): refills and frees scale up to 2^5 batches.
const PCP_BATCH_SCALE_MAX: u32 = 5;
/// vmstat_update() runs on each CPU every sysctl_stat_interval (HZ: one second).
pub(crate) const PCP_DECAY_INTERVAL_MS: u32 = 1000;
/// NR_LOWORDER_PCP_LISTS + NR_PCP_THP: per migratetype orders 0..=3, then order 9
/// unmovable/reclaimable and movable.
pub const NR_PCP_LISTS: usize = MIGRATE_PCPTYPES as usize * (PAGE_ALLOC_COSTLY_ORDER as usize + 1) + 2;

/// The kernel's clamp(): min(max(v, lo), hi), so `hi` wins when a large min_free_kbytes
/// puts high_min (the low watermark's share) above high_max.
#[inline]
fn kclamp(v: u64, lo: u64, hi: u64) -> u64 {
    v.max(lo).min(hi)
}

/// [s, e) as the largest aligned blocks up to MAX_PAGE_ORDER, lowest first: (pfn, order).
pub fn aligned_blocks(s: u64, e: u64) -> impl Iterator<Item = (u64, u32)> {
    let mut pfn = s;
    std::iter::from_fn(move || {
        if pfn >= e {
            return None;
        }
        let mut order = MAX_PAGE_ORDER;
        while order > 0 && (pfn & ((1 << order) - 1) != 0 || pfn + (1 << order) > e) {
            order -= 1;
        }
        let b = (pfn, order);
        pfn += 1 << order;
        Some(b)
    })
}

/// pcp_allowed_order(): the per-CPU lists keep orders 0..=PAGE_ALLOC_COSTLY_ORDER and PMD THPs.
#[inline]
pub fn pcp_allowed_order(order: u32) -> bool {
    order <= PAGE_ALLOC_COSTLY_ORDER || order == HPAGE_PMD_ORDER
}
/// order_to_pindex()
#[inline]
fn order_to_pindex(mt: u8, order: u32) -> usize {
    if order > PAGE_ALLOC_COSTLY_ORDER {
        NR_PCP_LISTS - 2 + (mt == MIGRATE_MOVABLE) as usize
    } else {
        MIGRATE_PCPTYPES as usize * order as usize + mt as usize
    }
}
/// pindex_to_order()
#[inline]
fn pindex_to_order(pindex: usize) -> u32 {
    if pindex >= NR_PCP_LISTS - 2 {
        HPAGE_PMD_ORDER
    } else {
        (pindex / MIGRATE_PCPTYPES as usize) as u32
    }
}

/// struct per_cpu_pages: one CPU's cache of free blocks for one zone.
#[derive(Clone, Debug, Default)]
pub struct PerCpuPages {
    /// pages on the lists
    pub count: u64,
    /// the current high mark (auto-tuned), and its bounds
    pub high: u64,
    pub high_min: u64,
    pub high_max: u64,
    pub batch: u64,
    /// pages freed since the last allocation (halved by each allocation)
    pub free_count: u64,
    /// order-0 refills scale by 2^alloc_factor
    pub alloc_factor: u32,
    /// PCPF_PREV_FREE_HIGH_ORDER
    pub prev_free_high_order: bool,
    /// PCPF_FREE_HIGH_BATCH: the CPU's share of the data cache holds 3 batches
    pub free_high_batch: bool,
    pub lists: [PcpList; NR_PCP_LISTS],
}

/// Where movable0_pcp_run() found a page to pop: the zone, its per-CPU pages of this CPU, the list.
#[derive(Clone, Copy, Debug)]
pub struct PcpPop {
    zi: usize,
    i: usize,
    li: usize,
}

/// One per-CPU list (pcp->lists[pindex]): the blocks' first pfns, head first. The
/// kernel threads these through page->pcp_list; the model keeps them in a ring buffer
/// (the same order and the same head/tail operations; a per-CPU list is only ever used
/// at its ends), so the hot alloc/free paths touch no per-page link cells for them.
#[derive(Clone, Debug, Default)]
pub struct PcpList {
    q: std::collections::VecDeque<u32>,
}
impl PcpList {
    /// The block at the head (the next one allocated), if any.
    #[inline]
    pub fn head(&self) -> Option<u32> {
        self.q.front().copied()
    }
    /// The block at the tail (the oldest, the next one freed to the buddy lists).
    #[inline]
    pub fn tail(&self) -> Option<u32> {
        self.q.back().copied()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    fn push_head(&mut self, pfn: u32) {
        self.q.push_front(pfn);
    }
    #[inline]
    fn push_tail(&mut self, pfn: u32) {
        self.q.push_back(pfn);
    }
    #[inline]
    fn pop_head(&mut self) -> Option<u32> {
        self.q.pop_front()
    }
    #[inline]
    fn pop_tail(&mut self) -> Option<u32> {
        self.q.pop_back()
    }
    /// The blocks from head to tail.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.q.iter().copied()
    }
}

/// rmqueue_bulk()'s __rmqueue mode: once a steal was needed, keep stealing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RmqueueMode {
    Normal,
    Steal,
}

/// Physical memory: the frame array, pageblocks, nodes and zones.
#[derive(Clone)]
pub struct PhysMem {
    pub frames: Vec<u64>,
    pub pageblocks: Vec<u8>,
    /// per-pageblock summaries for the compaction scanners (see PbSummary)
    pub pb_sum: Vec<PbSummary>,
    /// use pb_sum to step over blocks (USE_PB_SUMMARIES when created)
    pub use_pb_sum: bool,
    /// refill order-0 pcp lists a buddy block at a time (USE_BULK_CARVE when created)
    use_carve: bool,
    /// free runs of consecutive order-0 pages from the per-CPU lists in one pass
    /// (USE_RUN_FREE when created)
    use_run_free: bool,
    pub zones: Vec<Zone>,
    pub nodes: Vec<Node>,
    /// zone index for each pageblock (u8::MAX = none)
    pub pb_zone: Vec<u8>,
    pub links: Links,
    /// PTE-mapped THPs: head pfn -> subpages still mapped (the folio's _mapcount)
    pub mapcount: std::collections::BTreeMap<u32, u16>,
    pub nr_cpus: u32,
    /// Pages in use by the kernel outside the buddy allocator's view (reserved at boot).
    pub reserved_pages: u64,
    /// zonelists per node: [any node, this node only]
    pub zonelists: Vec<[std::sync::Arc<[usize]>; 2]>,
    /// Free page reporting (a VM guest, page_reporting.rs): PageReported, the device's
    /// state, the pages the host discarded
    pub pr: PageReporting,
    /// the current simulated time in ms (set by the engine before each step)
    pub now_ms: u32,
    /// alloc_flags_nofragment()'s zone test, precomputed: ZONE_NORMAL with a populated
    /// ZONE_DMA32 beneath it (or any ZONE_NORMAL on a single-node machine)
    pub nofragment_zone: Vec<bool>,
    /// per_cpu_pageset of every zone for every CPU, [cpu * zones + zone]
    pub pcp: Vec<PerCpuPages>,
    /// the CPU the current step runs on (the engine sets it with the kernel's clock)
    pub cpu: u32,
    /// blocks a free moved from a full per-CPU list to the buddy lists (pcp_spill; an order-9
    /// block is one, as it is one __free_one_page()) that the freeing context has not been
    /// charged for yet (Kernel::charge folds them in at pcp_drain_ns each)
    pub spilled: u64,
    /// when the per-CPU lists' next decay_pcp_high() is due (ms)
    pub(crate) next_pcp_decay_ms: u32,
    /// the current task's capture_control while it direct-compacts (compaction.rs)
    pub capture: Option<CaptureControl>,
}

impl PhysMem {
    pub fn new(m: &MachineSpec) -> Result<PhysMem, String> {
        let lay = layout(m)?;
        let max_pfn = lay.iter().map(|z| z.start_pfn + z.spanned).max().unwrap_or(0);
        // a free block's links in its second frame name pfns in 30 bits (TailCells)
        if max_pfn >= TAIL_NIL {
            return Err(format!("machine: {max_pfn} page frames, more than the model's free lists can name"));
        }
        let frames = vec![0u64; max_pfn as usize];
        let npb = max_pfn.div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        let mut pm = PhysMem {
            frames,
            pageblocks: vec![MIGRATE_MOVABLE; npb],
            pb_sum: vec![PbSummary::default(); npb],
            use_pb_sum: USE_PB_SUMMARIES.with(|c| c.get()),
            use_carve: USE_BULK_CARVE.with(|c| c.get()),
            use_run_free: USE_RUN_FREE.with(|c| c.get()),
            zones: vec![],
            nodes: vec![],
            pb_zone: vec![u8::MAX; npb],
            links: Links::new(max_pfn),
            mapcount: Default::default(),
            nr_cpus: m.total_cpus(),
            reserved_pages: 0,
            zonelists: vec![],
            nofragment_zone: vec![],
            pr: PageReporting::new(max_pfn),
            now_ms: 0,
            pcp: vec![],
            cpu: 0,
            spilled: 0,
            next_pcp_decay_ms: PCP_DECAY_INTERVAL_MS,
            capture: None,
        };
        // every frame starts reserved; managed pages are handed to the buddy allocator below
        pm.frames.iter_mut().for_each(|f| *f = make_reserved());
        let mut cpu = 0u32;
        for (n, spec) in m.nodes.iter().enumerate() {
            let cpus = (cpu..cpu + spec.cpus).collect();
            cpu += spec.cpus;
            pm.nodes.push(Node { id: n, zones: vec![], start_pfn: u64::MAX, end_pfn: 0, cpus, present: 0 });
        }
        for zl in &lay {
            let present = zl.spanned - zl.holes.iter().map(|(a, b)| b - a).sum::<u64>();
            let free_area = (0..NR_PAGE_ORDERS).map(|_| FreeArea::default()).collect();
            let zi = pm.zones.len();
            pm.zones.push(Zone::new(zl, present, free_area));
            let node = &mut pm.nodes[zl.node];
            node.zones.push(zi);
            node.start_pfn = node.start_pfn.min(zl.start_pfn);
            node.end_pfn = node.end_pfn.max(zl.start_pfn + zl.spanned);
            node.present += present;
            for pb in (zl.start_pfn >> PAGEBLOCK_ORDER)..=((zl.start_pfn + zl.spanned - 1) >> PAGEBLOCK_ORDER) {
                if pm.pb_zone[pb as usize] == u8::MAX {
                    pm.pb_zone[pb as usize] = zi as u8;
                }
            }
            // Which pfns are reserved: DMA's first pages (BIOS), DMA32's first pages (the
            // kernel image), the top of each node's highest zone (memmap, memblock top-down).
            let (res_lo, res_hi) = match zl.idx {
                ZONE_DMA | ZONE_DMA32 if zl.node == 0 && !is_highest(&lay, zl) => (zl.reserved, 0),
                ZONE_DMA32 if zl.node == 0 => {
                    let memmap = (m.nodes[0].mem.0 >> PAGE_SHIFT) * 64 / PAGE_SIZE;
                    (zl.reserved - memmap.min(zl.reserved), memmap.min(zl.reserved))
                }
                _ => (0, zl.reserved),
            };
            let lo_end = zl.start_pfn + res_lo;
            let hi_start = zl.start_pfn + zl.spanned - res_hi;
            pm.reserved_pages += zl.reserved;
            let zone_free: Vec<(u64, u64)> = {
                // free ranges: [lo_end, hi_start) minus holes
                let mut v = vec![(lo_end, hi_start)];
                for &(a, b) in &zl.holes {
                    v = v
                        .into_iter()
                        .flat_map(|(s, e)| {
                            let mut r = vec![];
                            if s < a.min(e) {
                                r.push((s, a.min(e)));
                            }
                            if b.max(s) < e {
                                r.push((b.max(s), e));
                            }
                            r
                        })
                        .collect();
                }
                v
            };
            for (s, e) in zone_free {
                pm.free_range(zi, s, e);
            }
        }
        pm.nofragment_zone = (0..pm.zones.len())
            .map(|zi| {
                let z = &pm.zones[zi];
                let dma32 =
                    pm.nodes[z.node].zones.iter().any(|&o| pm.zones[o].idx == ZONE_DMA32 && pm.zones[o].populated());
                z.idx == ZONE_NORMAL && (pm.nodes.len() == 1 || dma32)
            })
            .collect();
        pm.zonelists = (0..pm.nodes.len())
            .map(|n| [pm.build_zonelist(n, ZONE_NORMAL, false).into(), pm.build_zonelist(n, ZONE_NORMAL, true).into()])
            .collect();
        // the per-CPU pagesets (setup_zone_pageset); their high and batch follow the
        // watermarks (zone_pcp_update from setup_per_zone_wmarks)
        let pcp0 = PerCpuPages { free_high_batch: true, ..Default::default() };
        pm.pcp = vec![pcp0; pm.nr_cpus as usize * pm.zones.len()];
        Ok(pm)
    }

    /// memblock_free_all(): hand [s, e) to the buddy allocator in the largest aligned blocks,
    /// lowest first, each to the tail of its list: the lists start in address order.
    fn free_range(&mut self, zi: usize, s: u64, e: u64) {
        for (pfn, order) in aligned_blocks(s, e) {
            for p in pfn..pfn + (1 << order) {
                self.frames[p as usize] = 0;
            }
            // __free_pages_core(): boot memory goes to the tail of the lists (FPI_TO_TAIL)
            self.free_one_page_split(zi, pfn, order, true);
        }
    }

    #[inline]
    pub fn pb_mt(&self, pfn: u64) -> u8 {
        self.pageblocks[(pfn >> PAGEBLOCK_ORDER) as usize] & PB_MT_MASK
    }
    #[inline]
    pub fn set_pb_mt(&mut self, pfn: u64, mt: u8) {
        let pb = &mut self.pageblocks[(pfn >> PAGEBLOCK_ORDER) as usize];
        *pb = (*pb & !PB_MT_MASK) | mt;
    }
    pub fn pb_skip(&self, pfn: u64) -> bool {
        self.pageblocks[(pfn >> PAGEBLOCK_ORDER) as usize] & PB_SKIP != 0
    }
    /// How many pageblocks from the one at `pfn` (aligned) on have their skip bit set, in
    /// a row, among those that end at or below `limit` (a word of eight at a time).
    pub fn skipped_run(&self, pfn: u64, limit: u64) -> u64 {
        const ALL: u64 = u64::from_ne_bytes([PB_SKIP; 8]);
        let end = ((limit >> PAGEBLOCK_ORDER) as usize).min(self.pageblocks.len());
        let start = ((pfn >> PAGEBLOCK_ORDER) as usize).min(end);
        let mut n = 0u64;
        for chunk in self.pageblocks[start..end].chunks(8) {
            if let Ok(w) = <[u8; 8]>::try_from(chunk) {
                if u64::from_ne_bytes(w) & ALL == ALL {
                    n += 8;
                    continue;
                }
            }
            for &b in chunk {
                if b & PB_SKIP == 0 {
                    return n;
                }
                n += 1;
            }
        }
        n
    }
    pub fn set_pb_skip(&mut self, pfn: u64, skip: bool) {
        let pb = &mut self.pageblocks[(pfn >> PAGEBLOCK_ORDER) as usize];
        if skip {
            *pb |= PB_SKIP
        } else {
            *pb &= !PB_SKIP
        }
    }
    /// change_pageblock_range(): retype every pageblock of a block of `order`.
    fn change_pageblock_range(&mut self, pfn: u64, order: u32, mt: u8) {
        let n = if order >= PAGEBLOCK_ORDER { 1u64 << (order - PAGEBLOCK_ORDER) } else { 1 };
        for i in 0..n {
            self.set_pb_mt(pfn + i * PAGEBLOCK_NR_PAGES, mt);
        }
    }

    pub fn zone_of(&self, pfn: u64) -> usize {
        let zi = self.pb_zone[(pfn >> PAGEBLOCK_ORDER) as usize] as usize;
        if self.zones[zi].spans(pfn) {
            zi
        } else {
            // pageblock shared by two zones (DMA/DMA32 edge cannot happen; be safe)
            self.zones.iter().position(|z| z.spans(pfn)).expect("pfn in a zone")
        }
    }
    /// page_to_nid(): the node of a frame (on a one-node machine, without a zone lookup:
    /// the LRU and fault paths ask for every page).
    #[inline]
    pub fn node_of(&self, pfn: u64) -> usize {
        if self.nodes.len() == 1 {
            0
        } else {
            self.zones[self.zone_of(pfn)].node
        }
    }

    // ---- free lists (struct free_area: LIFO/FIFO lists threaded through the links) ----

    /// __add_to_free_list(): at the head, or at the tail (`tail`: a merge is likely soon,
    /// or FPI_TO_TAIL). The head frame records the order and the list's migratetype.
    #[inline(always)]
    fn add_to_free_list(&mut self, zi: usize, pfn: u64, order: u32, mt: u8, tail: bool) {
        self.frames[pfn as usize] = make_free(order, mt);
        self.pb_sum[(pfn >> PAGEBLOCK_ORDER) as usize].count_free_head(pfn, true);
        let fa = &mut self.zones[zi].free_area[order as usize];
        let l = &mut fa.lists[mt as usize];
        match (order, tail) {
            (0, true) => l.push_tail(&mut self.links, pfn as u32, 1),
            (0, false) => l.push_head(&mut self.links, pfn as u32, 1),
            (_, true) => l.push_tail(&mut TailCells(&mut self.frames), pfn as u32, 1 << order),
            (_, false) => l.push_head(&mut TailCells(&mut self.frames), pfn as u32, 1 << order),
        }
        fa.nr_free[mt as usize] += 1;
    }
    /// __del_page_from_free_list(): the block leaves its list; its head frame becomes a
    /// plain free tail until the caller says what it is.
    #[inline(always)]
    fn del_from_free_list(&mut self, zi: usize, pfn: u64, order: u32) {
        let f = self.frames[pfn as usize];
        debug_assert!(is_free_head(f) && free_order(f) == order, "pfn {pfn} order {order} is not a free block");
        let mt = free_mt(f);
        self.frames[pfn as usize] = 0;
        self.pb_sum[(pfn >> PAGEBLOCK_ORDER) as usize].count_free_head(pfn, false);
        let fa = &mut self.zones[zi].free_area[order as usize];
        if order == 0 {
            fa.lists[mt as usize].remove(&mut self.links, pfn as u32, 1);
        } else {
            fa.lists[mt as usize].remove(&mut TailCells(&mut self.frames), pfn as u32, 1 << order);
        }
        fa.nr_free[mt as usize] -= 1;
        // clear reported state
        self.pr.clear_reported(pfn, order);
    }
    /// move_to_free_list(): to the tail of another migratetype's list (PageReported stays).
    fn move_to_free_list(&mut self, zi: usize, pfn: u64, order: u32, to: u8) {
        let reported = self.pr.page_reported(pfn);
        self.del_from_free_list(zi, pfn, order);
        self.add_to_free_list(zi, pfn, order, to, true);
        if reported {
            self.pr.set_reported(pfn);
        }
    }
    /// The free list `mt` of `order` in zone `zi` (its head is the next block handed out).
    pub fn free_list(&self, zi: usize, order: u32, mt: u8) -> &List {
        &self.zones[zi].free_area[order as usize].lists[mt as usize]
    }
    /// The [prev, next] cell of free block `pfn` of `order` on its list: an order-0 page's
    /// is in the links' pool, a larger block's in its second frame (`TailCells`).
    #[inline(always)]
    fn free_cell(&self, order: u32, pfn: u32) -> [u32; 2] {
        if order == 0 {
            self.links.cell(pfn)
        } else {
            tail_cell(self.frames[pfn as usize + 1])
        }
    }
    /// The entry after free block `pfn` of `order` on its list (towards the tail), NIL
    /// at the tail.
    #[inline(always)]
    pub fn free_next(&self, order: u32, pfn: u32) -> u32 {
        self.free_cell(order, pfn)[1]
    }
    /// The entry before free block `pfn` of `order` (towards the head), NIL at the head.
    #[inline(always)]
    pub fn free_prev(&self, order: u32, pfn: u32) -> u32 {
        self.free_cell(order, pfn)[0]
    }
    /// move_freelist_head() / move_freelist_tail(): rotate a free list so that `pfn`
    /// comes first (`through` false) or the entries up to `pfn` go last (`through` true).
    pub fn rotate_free_list(&mut self, zi: usize, order: u32, mt: u8, pfn: u64, through: bool) {
        let l = &mut self.zones[zi].free_area[order as usize].lists[mt as usize];
        match (order, through) {
            (0, true) => l.rotate_through(&mut self.links, pfn as u32),
            (0, false) => l.rotate_to(&mut self.links, pfn as u32),
            (_, true) => l.rotate_through(&mut TailCells(&mut self.frames), pfn as u32),
            (_, false) => l.rotate_to(&mut TailCells(&mut self.frames), pfn as u32),
        }
    }

    /// An aged machine (MachineSpec::aged): every free list of the zone in a random
    /// order (Fisher-Yates with `seed`), as shuffle_free_memory() leaves them.
    pub fn shuffle_free_lists(&mut self, zi: usize, seed: u64) {
        let mut rng = thplab_workload::rng::Rng::new(seed ^ zi as u64);
        for o in 0..NR_PAGE_ORDERS as u32 {
            for mt in 0..NR_FREE_LISTS as u8 {
                let mut v = vec![];
                let mut p = self.zones[zi].free_area[o as usize].lists[mt as usize].head;
                while p != NIL {
                    v.push(p as u64);
                    p = self.free_next(o, p);
                }
                for i in (1..v.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    v.swap(i, j);
                }
                for &p in &v {
                    self.del_from_free_list(zi, p, o);
                }
                for &p in &v {
                    self.add_to_free_list(zi, p, o, mt, true);
                }
            }
        }
    }

    /// buddy_merge_likely(): below the two largest orders, is the buddy of the block's
    /// parent free? Then the block is likely to merge soon: it goes to the list's tail.
    #[inline(always)]
    fn buddy_merge_likely(&self, zi: usize, pfn: u64, order: u32) -> bool {
        if order >= MAX_PAGE_ORDER - 1 {
            return false;
        }
        let higher = pfn & !((1u64 << (order + 1)) - 1);
        let higher_buddy = higher ^ (1u64 << (order + 1));
        if !self.zones[zi].spans(higher_buddy) {
            return false;
        }
        let bf = self.frames[higher_buddy as usize];
        is_free_head(bf) && free_order(bf) == order + 1
    }

    /// __free_one_page(): merge with free buddies up to MAX_PAGE_ORDER (not across
    /// pageblocks of unmergeable types); a direct compactor's capture_control takes the
    /// block when it reaches the order it waits for. `to_tail`: FPI_TO_TAIL.
    #[inline]
    fn __free_one_page(&mut self, zi: usize, pfn: u64, order: u32, mt: u8, to_tail: bool) {
        self.__free_one_page_fpi(zi, pfn, order, mt, to_tail, false);
    }

    /// __putback_isolated_page(): a block isolated from the free lists goes back to the
    /// tail, without notifying free page reporting (FPI_SKIP_REPORT_NOTIFY | FPI_TO_TAIL).
    pub fn putback_isolated_page(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) {
        self.__free_one_page_fpi(zi, pfn, order, mt, true, true);
    }

    /// __free_one_page() with its fpi flags: FPI_TO_TAIL, FPI_SKIP_REPORT_NOTIFY.
    fn __free_one_page_fpi(&mut self, zi: usize, pfn: u64, order: u32, mt: u8, to_tail: bool, skip_report: bool) {
        let mut pfn = pfn;
        let mut order = order;
        self.zones[zi].free_pages += 1 << order;
        while order < MAX_PAGE_ORDER {
            if self.compaction_capture(zi, pfn, order, mt) {
                self.zones[zi].free_pages -= 1 << order;
                return;
            }
            let buddy = pfn ^ (1 << order);
            if !self.take_free_buddy(zi, buddy, order, mt) {
                break;
            }
            pfn &= buddy;
            order += 1;
        }
        let tail = to_tail || self.buddy_merge_likely(zi, pfn, order);
        self.add_to_free_list(zi, pfn, order, mt, tail);
        // notify page reporting subsystem of freed page
        if !skip_report {
            self.pr.notify_free(order);
        }
    }

    /// __free_one_page()'s merge step: if `buddy` is a free block of `order` that a block
    /// of type `mt` may merge with (not across pageblocks of unmergeable types), take it
    /// off its list (its pageblock takes type `mt`, so that a later expand() lists the
    /// halves right).
    #[inline(always)]
    fn take_free_buddy(&mut self, zi: usize, buddy: u64, order: u32, mt: u8) -> bool {
        if !self.zones[zi].spans(buddy) {
            return false;
        }
        let bf = self.frames[buddy as usize];
        if !(is_free_head(bf) && free_order(bf) == order) {
            return false;
        }
        let mut buddy_mt = mt;
        if order >= PAGEBLOCK_ORDER {
            buddy_mt = self.pb_mt(buddy);
            if mt != buddy_mt && (mt >= MIGRATE_PCPTYPES || buddy_mt >= MIGRATE_PCPTYPES) {
                return false;
            }
        }
        self.del_from_free_list(zi, buddy, order);
        if buddy_mt != mt {
            self.set_pb_mt(buddy, mt);
        }
        true
    }

    /// compaction_capture(): while a task direct-compacts zone `zi`, the first block of the
    /// requested order freed in that zone is handed to it instead of the free lists.
    #[inline(always)]
    fn compaction_capture(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) -> bool {
        let Some(c) = &mut self.capture else { return false };
        if c.zi != zi || c.page.is_some() || order != c.order || mt == MIGRATE_ISOLATE {
            return false;
        }
        // do not let a smaller non-movable request pollute a movable pageblock
        if order < PAGEBLOCK_ORDER && mt == MIGRATE_MOVABLE && c.migratetype != MIGRATE_MOVABLE {
            return false;
        }
        c.page = Some(pfn);
        true
    }

    /// free_one_page() / split_large_buddy(): a block larger than a pageblock is freed
    /// pageblock by pageblock, each with its pageblock's type.
    fn free_one_page_split(&mut self, zi: usize, pfn: u64, order: u32, to_tail: bool) {
        let step = order.min(PAGEBLOCK_ORDER);
        let end = pfn + (1u64 << order);
        let mut p = pfn;
        while p < end {
            let mt = self.pb_mt(p);
            self.__free_one_page(zi, p, step, mt, to_tail);
            p += 1 << step;
        }
    }

    /// expand(): split a block of order `high` down to `low`; the upper halves go to the
    /// head of their lists.
    #[inline]
    fn expand(&mut self, zi: usize, pfn: u64, low: u32, high: u32, mt: u8) {
        let mut high = high;
        while high > low {
            high -= 1;
            let half = pfn + (1 << high);
            self.add_to_free_list(zi, half, high, mt, false);
        }
    }

    /// page_del_and_expand(): take a block of exactly `order` off the lists.
    #[inline(always)]
    fn page_del_and_expand(&mut self, zi: usize, pfn: u64, order: u32, high: u32, mt: u8) {
        self.del_from_free_list(zi, pfn, high);
        self.expand(zi, pfn, order, high, mt);
        self.zones[zi].free_pages -= 1 << order;
    }

    /// get_page_from_free_area(): the first block of a list.
    #[inline]
    fn first_free(&self, zi: usize, order: u32, mt: u8) -> Option<u64> {
        let h = self.zones[zi].free_area[order as usize].lists[mt as usize].head;
        (h != NIL).then_some(h as u64)
    }

    /// __rmqueue_smallest()
    #[inline(always)]
    fn rmqueue_smallest(&mut self, zi: usize, order: u32, mt: u8) -> Option<u64> {
        for cur in order..=MAX_PAGE_ORDER {
            if let Some(pfn) = self.first_free(zi, cur, mt) {
                self.page_del_and_expand(zi, pfn, order, cur, mt);
                return Some(pfn);
            }
        }
        None
    }

    /// should_try_claim_block()
    fn should_try_claim_block(order: u32, start_mt: u8) -> bool {
        order >= PAGEBLOCK_ORDER
            || order >= PAGEBLOCK_ORDER / 2
            || start_mt == MIGRATE_RECLAIMABLE
            || start_mt == MIGRATE_UNMOVABLE
    }

    /// find_suitable_fallback(): -2 = orders too low to claim, -1 = none.
    pub(crate) fn find_suitable_fallback(&self, zi: usize, order: u32, mt: u8, claimable: bool) -> i32 {
        if claimable && !Self::should_try_claim_block(order, mt) {
            return -2;
        }
        for f in fallbacks(mt) {
            if self.zones[zi].free_area[order as usize].nr_free[f as usize] > 0 {
                return f as i32;
            }
        }
        -1
    }

    /// prep_move_freepages_block(): (start pfn, free pages, movable pages) of the pageblock.
    fn count_block(&self, zi: usize, pfn: u64) -> Option<(u64, u64, u64)> {
        let start = pfn & !(PAGEBLOCK_NR_PAGES - 1);
        let end = start + PAGEBLOCK_NR_PAGES;
        let z = &self.zones[zi];
        if !z.spans(start) || !z.spans(end - 1) {
            return None;
        }
        let (mut free, mut movable) = (0, 0);
        let mut p = start;
        while p < end {
            let f = self.frames[p as usize];
            if is_free_head(f) {
                free += 1 << free_order(f);
                p += 1 << free_order(f);
                continue;
            }
            // PageLRU: base pages and the heads of THPs on an LRU list
            if tag(f) == TAG_ANON && compound(f) != COMPOUND_TAIL && lru(f) != LRU_NONE {
                movable += 1;
            }
            p += 1;
        }
        Some((start, free, movable))
    }

    /// __move_freepages_block(): every free block of the pageblock to the tail of `to`'s lists.
    fn move_freepages_block(&mut self, zi: usize, start: u64, to: u8) {
        let end = start + PAGEBLOCK_NR_PAGES;
        let mut p = start;
        while p < end {
            let f = self.frames[p as usize];
            if is_free_head(f) {
                let o = free_order(f);
                if free_mt(f) != to {
                    self.move_to_free_list(zi, p, o, to);
                }
                p += 1 << o;
            } else {
                p += 1;
            }
        }
    }

    /// boost_watermark(): raise the zone's boost by one pageblock, capped.
    fn boost_watermark(&mut self, zi: usize, boost_factor: u64) -> bool {
        let z = &mut self.zones[zi];
        if boost_factor == 0 || PAGEBLOCK_NR_PAGES * 4 > z.managed {
            return false;
        }
        let max_boost = z.watermark[WMARK_HIGH] * boost_factor / 10000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(PAGEBLOCK_NR_PAGES);
        z.watermark_boost = (z.watermark_boost + PAGEBLOCK_NR_PAGES).min(max_boost);
        true
    }

    /// try_to_claim_block()
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        zi: usize,
        pfn: u64,
        cur: u32,
        order: u32,
        start_mt: u8,
        block_mt: u8,
        alloc_flags: AllocFlags,
        boost_factor: u64,
    ) -> Option<u64> {
        if cur >= PAGEBLOCK_ORDER {
            self.del_from_free_list(zi, pfn, cur);
            self.change_pageblock_range(pfn, cur, start_mt);
            self.expand(zi, pfn, order, cur, start_mt);
            self.zones[zi].free_pages -= 1 << order;
            return Some(pfn);
        }
        if self.boost_watermark(zi, boost_factor) && alloc_flags & ALLOC_KSWAPD != 0 {
            self.zones[zi].boosted = true;
        }
        let (start, free, movable) = self.count_block(zi, pfn)?;
        let alike = if start_mt == MIGRATE_MOVABLE {
            movable
        } else if block_mt == MIGRATE_MOVABLE {
            PAGEBLOCK_NR_PAGES - (free + movable)
        } else {
            0
        };
        if free + alike >= 1 << (PAGEBLOCK_ORDER - 1) {
            self.move_freepages_block(zi, start, start_mt);
            self.set_pb_mt(start, start_mt);
            return self.rmqueue_smallest(zi, order, start_mt);
        }
        None
    }

    /// __rmqueue_claim(): from the largest fallback block down. Returns the block and the
    /// (order, migratetype) of the free block it came from.
    fn rmqueue_claim(
        &mut self,
        zi: usize,
        order: u32,
        start_mt: u8,
        alloc_flags: AllocFlags,
        boost_factor: u64,
    ) -> Option<(u64, u32, u8)> {
        let min_order =
            if order < PAGEBLOCK_ORDER && alloc_flags & ALLOC_NOFRAGMENT != 0 { PAGEBLOCK_ORDER } else { order };
        let mut cur = MAX_PAGE_ORDER as i32;
        while cur >= min_order as i32 {
            let fb = self.find_suitable_fallback(zi, cur as u32, start_mt, true);
            if fb == -2 {
                break;
            }
            if fb >= 0 {
                let pfn = self.first_free(zi, cur as u32, fb as u8).expect("nr_free says a block exists");
                if let Some(p) =
                    self.try_to_claim_block(zi, pfn, cur as u32, order, start_mt, fb as u8, alloc_flags, boost_factor)
                {
                    return Some((p, cur as u32, fb as u8));
                }
            }
            cur -= 1;
        }
        None
    }

    /// __rmqueue_steal(): the smallest fallback block, without retyping the pageblock.
    fn rmqueue_steal(&mut self, zi: usize, order: u32, start_mt: u8) -> Option<(u64, u32, u8)> {
        for cur in order..=MAX_PAGE_ORDER {
            let fb = self.find_suitable_fallback(zi, cur, start_mt, false);
            if fb < 0 {
                continue;
            }
            let pfn = self.first_free(zi, cur, fb as u8).unwrap();
            self.page_del_and_expand(zi, pfn, order, cur, fb as u8);
            return Some((pfn, cur, fb as u8));
        }
        None
    }

    /// __rmqueue(): requested type, then claim, then (unless ALLOC_NOFRAGMENT) steal.
    /// A fallback raises mm_page_alloc_extfrag.
    pub fn rmqueue(
        &mut self,
        zi: usize,
        order: u32,
        mt: u8,
        alloc_flags: AllocFlags,
        boost_factor: u64,
        trace: &mut Trace,
    ) -> Option<u64> {
        self.rmqueue_mode(zi, order, mt, alloc_flags, boost_factor, trace, &mut RmqueueMode::Normal)
    }

    /// __rmqueue() with rmqueue_bulk()'s memory of where the last page came from: once a
    /// steal was needed, the next pages of the batch are stolen without searching again.
    #[allow(clippy::too_many_arguments)]
    fn rmqueue_mode(
        &mut self,
        zi: usize,
        order: u32,
        mt: u8,
        alloc_flags: AllocFlags,
        boost_factor: u64,
        trace: &mut Trace,
        mode: &mut RmqueueMode,
    ) -> Option<u64> {
        if *mode == RmqueueMode::Normal {
            if let Some(p) = self.rmqueue_smallest(zi, order, mt) {
                return Some(p);
            }
        }
        let mut fallback = None;
        if *mode != RmqueueMode::Steal {
            fallback = self.rmqueue_claim(zi, order, mt, alloc_flags, boost_factor);
            if fallback.is_some() {
                *mode = RmqueueMode::Normal;
            }
        }
        if fallback.is_none() && alloc_flags & ALLOC_NOFRAGMENT == 0 {
            fallback = self.rmqueue_steal(zi, order, mt);
            if fallback.is_some() {
                *mode = RmqueueMode::Steal;
            }
        }
        let (pfn, fallback_order, fallback_mt) = fallback?;
        trace_event!(
            @clock trace,
            mm_page_alloc_extfrag,
            pfn = pfn,
            alloc_order = order,
            fallback_order = fallback_order,
            alloc_migratetype = mt,
            fallback_migratetype = fallback_mt,
            change_ownership = (self.pb_mt(pfn) == mt) as u32,
        );
        Some(pfn)
    }

    // ---- per-CPU page lists (struct per_cpu_pages) ----

    pub(crate) fn pcp_index(&self, cpu: u32, zi: usize) -> usize {
        cpu as usize * self.zones.len() + zi
    }

    /// zone_batchsize(), zone_highsize() and zone_set_pageset_high_and_batch(): batch is
    /// ~0.1 % of the zone (at most 1 MiB) / 4, rounded to 2^n - 1; high_min is the low
    /// watermark split over the node's CPUs, high_max a MIN_PERCPU_PAGELIST_HIGH_FRACTION
    /// (1/8) of the zone's managed pages split the same way; both at least 4 batches.
    pub fn zone_pcp_update(&mut self, zi: usize) {
        let z = &self.zones[zi];
        let mut batch = (z.managed >> 10).min((1 << 20) / PAGE_SIZE) / 4;
        batch = batch.max(1);
        let b = batch + batch / 2;
        batch = (1u64 << (63 - b.leading_zeros())) - 1;
        let batch = batch.max(1);
        let cpus = (self.nodes[z.node].cpus.len() as u64).max(1);
        let high_min = (z.watermark[WMARK_LOW] / cpus).max(batch << 2);
        let high_max = (z.managed / MIN_PERCPU_PAGELIST_HIGH_FRACTION / cpus).max(batch << 2);
        self.zones[zi].pcp_batch = batch;
        self.zones[zi].pcp_high_min = high_min;
        self.zones[zi].pcp_high_max = high_max;
        for cpu in 0..self.nr_cpus {
            let i = self.pcp_index(cpu, zi);
            let pcp = &mut self.pcp[i];
            pcp.batch = batch;
            pcp.high_min = high_min;
            pcp.high_max = high_max;
        }
    }

    /// Pages on the per-CPU lists of zone `zi` (all CPUs).
    pub fn pcp_pages(&self, zi: usize) -> u64 {
        (0..self.nr_cpus).map(|c| self.pcp[self.pcp_index(c, zi)].count).sum()
    }
    /// Pages on every per-CPU list of every zone.
    pub fn pcp_pages_total(&self) -> u64 {
        (0..self.zones.len()).map(|zi| self.pcp_pages(zi)).sum()
    }
    /// The per-CPU lists of `cpu` for zone `zi` (for the invariant checker and reports).
    pub fn pcp_of(&self, cpu: u32, zi: usize) -> &PerCpuPages {
        &self.pcp[self.pcp_index(cpu, zi)]
    }

    /// nr_pcp_alloc(): how many blocks a refill takes from the buddy lists: the batch,
    /// doubled for each order-0 refill without a free in between (up to 2^5), kept within
    /// room under pcp->high, divided by 2^order for high orders (at least 2).
    fn nr_pcp_alloc(&mut self, i: usize, zi: usize, order: u32) -> u64 {
        let below_high = self.zones[zi].below_high;
        let pcp = &mut self.pcp[i];
        let base = pcp.batch;
        pcp.high = kclamp(pcp.high, pcp.high_min, pcp.high_max);
        let mut high = pcp.high;
        if high < base {
            return 1;
        }
        let mut batch = if order > 0 { base } else { base << pcp.alloc_factor };
        if pcp.high_min != pcp.high_max && !below_high {
            pcp.high = (high + batch).min(pcp.high_max);
            high = pcp.high;
        }
        if order == 0 {
            let max_nr_alloc = high.saturating_sub(pcp.count + base).max(base);
            if batch <= max_nr_alloc && pcp.alloc_factor < PCP_BATCH_SCALE_MAX {
                pcp.alloc_factor += 1;
            }
            batch = batch.min(max_nr_alloc);
        }
        if batch > 1 {
            batch = (batch >> order).max(2);
        }
        batch
    }

    /// rmqueue_pcplist() / __rmqueue_pcplist(): the current CPU's list for (migratetype,
    /// order), refilled by rmqueue_bulk() (blocks from __rmqueue, added at the tail) when
    /// empty; the block at its head is taken.
    fn rmqueue_pcplist(
        &mut self,
        zi: usize,
        order: u32,
        mt: u8,
        flags: AllocFlags,
        boost_factor: u64,
        trace: &mut Trace,
    ) -> Option<u64> {
        self.pcp_decay_catch_up();
        let i = self.pcp_index(self.cpu, zi);
        let li = order_to_pindex(mt, order);
        self.pcp[i].free_count >>= 1;
        if self.pcp[i].lists[li].is_empty() {
            let batch = self.nr_pcp_alloc(i, zi, order);
            let mut mode = RmqueueMode::Normal;
            let mut n = 0u64;
            while n < batch {
                if order == 0 && mode == RmqueueMode::Normal && self.use_carve {
                    if let Some(m) = self.carve_order0(zi, mt, batch - n, i, li) {
                        n += m;
                        continue;
                    }
                }
                let Some(p) = self.rmqueue_mode(zi, order, mt, flags, boost_factor, trace, &mut mode) else { break };
                self.frames[p as usize] = make_pcp(order, mt);
                self.pcp[i].lists[li].push_tail(p as u32);
                n += 1;
            }
            self.pcp[i].count += n << order;
            if n == 0 {
                return None;
            }
        }
        Some(self.pcp_pop_head(i, li, order))
    }

    /// __rmqueue_pcplist()'s take: the block at the head of a non-empty per-CPU list; its
    /// frames become the caller's.
    #[inline]
    fn pcp_pop_head(&mut self, i: usize, li: usize, order: u32) -> u64 {
        let p = self.pcp[i].lists[li].pop_head().expect("a block on the list");
        self.pcp[i].count -= 1 << order;
        self.frames[p as usize] = 0;
        p as u64
    }

    /// Up to `want` order-0 pages of `mt` for the tail of pcp list (`i`, `li`), taken as
    /// consecutive __rmqueue_smallest() calls take them when the smallest non-empty order c
    /// is above 0: then the lower lists are empty, and the block at the head of list c is
    /// handed out page by page in address order (each call takes the lowest piece that
    /// expand() left, at the head of an otherwise empty list). The block leaves its list
    /// once; what is not handed out goes back as the aligned pieces expand() would leave.
    /// Same frames, lists and counts as the page-by-page path, in one step per block; None
    /// (nothing taken) when order 0's list has a page or `mt` has no free block.
    fn carve_order0(&mut self, zi: usize, mt: u8, want: u64, i: usize, li: usize) -> Option<u64> {
        if self.first_free(zi, 0, mt).is_some() {
            return None;
        }
        let (c, pfn) = (1..=MAX_PAGE_ORDER).find_map(|c| self.first_free(zi, c, mt).map(|p| (c, p)))?;
        let m = want.min(1 << c);
        self.del_from_free_list(zi, pfn, c);
        for p in pfn..pfn + m {
            self.frames[p as usize] = make_pcp(0, mt);
            self.pcp[i].lists[li].push_tail(p as u32);
        }
        // [pfn + m, pfn + 2^c) in aligned pieces, each as large as its offset's alignment
        let end = pfn + (1 << c);
        let mut s = pfn + m;
        while s < end {
            let o = (s - pfn).trailing_zeros();
            self.add_to_free_list(zi, s, o, mt, false);
            s += 1 << o;
        }
        self.zones[zi].free_pages -= m;
        #[cfg(test)]
        BULK_CARVES.with(|c| c.set(c.get() + 1));
        Some(m)
    }

    /// free_frozen_page_commit(): to the head of the current CPU's list; when the list
    /// holds pcp->high pages or more (high auto-tuned by nr_pcp_high), a batch of the
    /// oldest goes back to the buddy lists (free_pcppages_bulk).
    #[inline]
    fn free_frozen_page_commit(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) {
        self.pcp_decay_catch_up();
        let i = self.pcp_index(self.cpu, zi);
        let li = order_to_pindex(mt, order);
        {
            let pcp = &mut self.pcp[i];
            pcp.alloc_factor >>= 1;
            self.frames[pfn as usize] = make_pcp(order, mt);
            pcp.lists[li].push_head(pfn as u32);
            pcp.count += 1 << order;
        }
        let pcp = &mut self.pcp[i];
        let batch = pcp.batch;
        let mut free_high = false;
        if order > 0 && order <= PAGE_ALLOC_COSTLY_ORDER {
            free_high = pcp.free_count >= batch + pcp.high_min / 2
                && pcp.prev_free_high_order
                && (!pcp.free_high_batch || pcp.count >= batch);
            pcp.prev_free_high_order = true;
        } else if pcp.prev_free_high_order {
            pcp.prev_free_high_order = false;
        }
        if pcp.free_count < batch << PCP_BATCH_SCALE_MAX {
            pcp.free_count += 1 << order;
        }
        let high = self.nr_pcp_high(i, zi, batch, free_high);
        if self.pcp[i].count < high {
            return;
        }
        self.pcp_spill(zi, i, batch, high, free_high, li);
    }

    /// free_frozen_page_commit()'s end when the list reached its high mark: a batch to
    /// the buddy lists, then the zone's below-high flag checked.
    #[inline(never)]
    fn pcp_spill(&mut self, zi: usize, i: usize, batch: u64, high: u64, free_high: bool, li: usize) {
        let n = self.nr_pcp_free(i, batch, high, free_high);
        self.spilled += self.free_pcppages_bulk(zi, i, n, li);
        if self.zones[zi].below_high {
            let mark = self.zones[zi].wmark(WMARK_HIGH);
            if self.zone_watermark_ok(zi, 0, mark, ZONE_MOVABLE, 0) {
                self.zones[zi].below_high = false;
            }
        }
    }

    /// nr_pcp_high(): the list's current high mark, auto-tuned between high_min and
    /// high_max: lowered while reclaim is active or the zone is below its high watermark,
    /// raised to hold a batch of consecutive frees.
    #[inline]
    fn nr_pcp_high(&mut self, i: usize, zi: usize, batch: u64, free_high: bool) -> u64 {
        let (reclaim_active, below_high) = (self.zones[zi].reclaim_active, self.zones[zi].below_high);
        let pcp = &mut self.pcp[i];
        pcp.high = kclamp(pcp.high, pcp.high_min, pcp.high_max);
        let high = pcp.high;
        if high == 0 {
            return 0;
        }
        if free_high {
            pcp.high = high.saturating_sub(batch << PCP_BATCH_SCALE_MAX).max(pcp.high_min);
            return 0;
        }
        if reclaim_active {
            let fc = pcp.free_count.max(batch);
            pcp.high = high.saturating_sub(fc).max(pcp.high_min);
            return (batch << 2).min(pcp.high);
        }
        if pcp.high_min == pcp.high_max {
            return high;
        }
        if below_high {
            let fc = pcp.free_count.max(batch);
            pcp.high = high.saturating_sub(fc).max(pcp.high_min);
            pcp.count.max(pcp.high_min)
        } else {
            if pcp.count >= high {
                let need = pcp.free_count + batch;
                if pcp.high < need {
                    pcp.high = kclamp(need, pcp.high_min, pcp.high_max);
                }
            }
            high
        }
    }

    /// nr_pcp_free(): how many pages to give back: at least a batch, up to high - batch,
    /// more for a run of frees.
    fn nr_pcp_free(&self, i: usize, batch: u64, high: u64, free_high: bool) -> u64 {
        let pcp = &self.pcp[i];
        if free_high {
            return pcp.count.min(batch << PCP_BATCH_SCALE_MAX);
        }
        if high < batch {
            return 1;
        }
        pcp.free_count.clamp(batch, (high - batch).max(batch))
    }

    /// free_pcppages_bulk(): `count` pages back to the buddy lists, the oldest of each
    /// list first, the lists taken round-robin starting with `pindex`. Each block is freed
    /// with its pageblock's current type. Returns the blocks freed.
    fn free_pcppages_bulk(&mut self, zi: usize, i: usize, count: u64, pindex: usize) -> u64 {
        let mut count = count.min(self.pcp[i].count);
        let mut blocks = 0;
        let mut li = (pindex + NR_PCP_LISTS - 1) % NR_PCP_LISTS;
        while count > 0 {
            loop {
                li = (li + 1) % NR_PCP_LISTS;
                if !self.pcp[i].lists[li].is_empty() {
                    break;
                }
            }
            let order = pindex_to_order(li);
            // consecutive order-0 pages of one pageblock, popped but not yet freed
            let (mut run, mut run_len, mut run_mt) = (0u64, 0u64, 0u8);
            let runs = order == 0 && self.use_run_free;
            loop {
                let p = self.pcp[i].lists[li].pop_tail().expect("not empty") as u64;
                blocks += 1;
                self.pcp[i].count -= 1 << order;
                count = count.saturating_sub(1 << order);
                self.frames[p as usize] = 0;
                let mt = self.pb_mt(p);
                if !runs {
                    self.__free_one_page(zi, p, order, mt, false);
                } else if run_len > 0 && p == run + run_len && mt == run_mt && !p.is_multiple_of(PAGEBLOCK_NR_PAGES) {
                    run_len += 1;
                } else {
                    self.free_run_order0(zi, run, run_len, run_mt);
                    (run, run_len, run_mt) = (p, 1, mt);
                }
                if count == 0 || self.pcp[i].lists[li].is_empty() {
                    break;
                }
            }
            self.free_run_order0(zi, run, run_len, run_mt);
        }
        blocks
    }

    /// __free_one_page() of each page of [pfn, pfn + n), in that order: consecutive
    /// order-0 pages of one pageblock, the frames already cleared (free_pcppages_bulk()
    /// popping a list filled by an ascending munmap or exit). The merges and counts are
    /// the per-page calls', but a block that a later page of the run merges again never
    /// enters a free list: the blocks still open form a stack (ascending, like a binary
    /// counter's carries) and go to their lists at the end, in the order they were made,
    /// each placed (head or tail) as buddy_merge_likely() saw the lists when the
    /// per-page call made it (only the blocks below it in the stack and the older
    /// blocks; the run's later pages were not free yet). Blocks already free before the
    /// run leave their lists as the per-page calls take them, and a compactor waiting
    /// for a block (compaction_capture()) is asked at every order, as the calls ask it.
    fn free_run_order0(&mut self, zi: usize, pfn: u64, n: u64, mt: u8) {
        if n <= 1 {
            if n == 1 {
                self.__free_one_page(zi, pfn, 0, mt, false);
            }
            return;
        }
        debug_assert!((pfn + n - 1) >> PAGEBLOCK_ORDER == pfn >> PAGEBLOCK_ORDER);
        let mut capturing = self.capture.is_some();
        RUN_FREED.with(|c| c.set(c.get() + n));
        self.zones[zi].free_pages += n;
        // (pfn, order) of the open blocks, lowest first: they tile one range of at most
        // 2^MAX_PAGE_ORDER + a pageblock pages, at most two blocks of each order
        let mut open = [(0u64, 0u32); 2 * MAX_PAGE_ORDER as usize + 4];
        let mut nopen = 0usize;
        let mut top_order = 0;
        'pages: for p in pfn..pfn + n {
            let (mut b, mut order) = (p, 0u32);
            while order < MAX_PAGE_ORDER {
                if capturing && self.compaction_capture(zi, b, order, mt) {
                    self.zones[zi].free_pages -= 1 << order;
                    capturing = false;
                    continue 'pages;
                }
                let buddy = b ^ (1 << order);
                if nopen > 0 && open[nopen - 1] == (buddy, order) {
                    nopen -= 1;
                } else if !self.take_free_buddy(zi, buddy, order, mt) {
                    break;
                }
                b &= buddy;
                order += 1;
            }
            open[nopen] = (b, order);
            nopen += 1;
            top_order = top_order.max(order);
        }
        for &(b, order) in &open[..nopen] {
            let tail = self.buddy_merge_likely(zi, b, order);
            self.add_to_free_list(zi, b, order, mt, tail);
        }
        self.pr.notify_free(top_order);
    }

    /// drain_pages_zone(): everything on `cpu`'s lists for zone `zi` back to the buddy lists.
    pub fn drain_pages_zone(&mut self, cpu: u32, zi: usize) {
        let i = self.pcp_index(cpu, zi);
        let n = self.pcp[i].count;
        if n > 0 {
            let _ = self.free_pcppages_bulk(zi, i, n, 0);
        }
    }
    /// drain_local_pages(zone): the current CPU's lists for one zone.
    pub fn drain_local_pages(&mut self, zi: usize) {
        self.drain_pages_zone(self.cpu, zi);
    }
    /// drain_all_pages(zone): every CPU's lists, for one zone or all. Returns pages drained.
    pub fn drain_all_pages(&mut self, zone: Option<usize>) -> u64 {
        let zones: Vec<usize> = match zone {
            Some(z) => vec![z],
            None => (0..self.zones.len()).collect(),
        };
        let mut n = 0;
        for zi in zones {
            for cpu in 0..self.nr_cpus {
                n += self.pcp[self.pcp_index(cpu, zi)].count;
                self.drain_pages_zone(cpu, zi);
            }
        }
        n
    }

    /// The simulated time the per-CPU lists' decay is due by (`now_ms`), from a time in ns.
    #[inline]
    pub fn set_now_ns(&mut self, ns: u64) {
        self.now_ms = (ns / 1_000_000).min(u32::MAX as u64 - 1) as u32;
    }

    /// decay_pcp_high(), run by each CPU's vmstat_update every second: high falls by 1/8
    /// towards high_min and what is above it goes back to the buddy lists. The model runs
    /// the decays due since the last call when the allocator is next entered.
    #[inline]
    fn pcp_decay_catch_up(&mut self) {
        if self.now_ms >= self.next_pcp_decay_ms {
            self.pcp_decay_rounds();
        }
    }
    #[inline(never)]
    fn pcp_decay_rounds(&mut self) {
        let mut rounds = (self.now_ms - self.next_pcp_decay_ms) / PCP_DECAY_INTERVAL_MS + 1;
        self.next_pcp_decay_ms += rounds * PCP_DECAY_INTERVAL_MS;
        while rounds > 0 {
            rounds -= 1;
            let mut todo = false;
            for i in 0..self.pcp.len() {
                let zi = i % self.zones.len();
                let pcp = &mut self.pcp[i];
                if pcp.high > pcp.high_min {
                    pcp.high = pcp
                        .count
                        .saturating_sub(pcp.batch << PCP_BATCH_SCALE_MAX)
                        .max(pcp.high - (pcp.high >> 3))
                        .max(pcp.high_min);
                    todo |= pcp.high > pcp.high_min;
                }
                if pcp.count > pcp.high {
                    let n = pcp.count - pcp.high;
                    let _ = self.free_pcppages_bulk(zi, i, n, 0);
                }
            }
            if !todo {
                break;
            }
        }
    }

    /// __zone_watermark_ok() with the zone's free pages.
    pub fn zone_watermark_ok(
        &self,
        zi: usize,
        order: u32,
        mark: u64,
        highest_zoneidx: usize,
        alloc_flags: AllocFlags,
    ) -> bool {
        self.zone_watermark_ok_free(zi, order, mark, highest_zoneidx, alloc_flags, self.zones[zi].free_pages)
    }

    /// __zone_watermark_ok() with a given count of free pages (NR_FREE_PAGES, or
    /// NR_FREE_PAGES_BLOCKS under vm.defrag_mode, or free plus reclaimable).
    pub fn zone_watermark_ok_free(
        &self,
        zi: usize,
        order: u32,
        mark: u64,
        highest_zoneidx: usize,
        alloc_flags: AllocFlags,
        free_pages: u64,
    ) -> bool {
        let z = &self.zones[zi];
        let mut free = free_pages as i64 - ((1i64 << order) - 1);
        let mut min = mark as i64;
        if alloc_flags & ALLOC_MIN_RESERVE != 0 {
            min -= min / 2;
        }
        if alloc_flags & ALLOC_NO_WATERMARKS != 0 {
            min = 0;
            free += 1;
        }
        if free <= min + z.lowmem_reserve[highest_zoneidx] as i64 {
            return false;
        }
        if order == 0 {
            return true;
        }
        for o in order as usize..NR_PAGE_ORDERS {
            let fa = &z.free_area[o];
            if fa.nr_free[..MIGRATE_PCPTYPES as usize].iter().any(|&n| n > 0) {
                return true;
            }
            if alloc_flags & (ALLOC_MIN_RESERVE | ALLOC_NO_WATERMARKS) != 0
                && fa.nr_free[MIGRATE_HIGHATOMIC as usize] > 0
            {
                return true;
            }
        }
        false
    }

    /// The zonelist for an allocation on `nid`: the node's zones from `highest` down, then
    /// the other nodes' (by node distance: nearer ids first), unless THISNODE.
    /// The zonelist for ZONE_NORMAL-capped allocations, precomputed per node (built once:
    /// zones never change after boot).
    pub fn zonelist(&self, nid: usize, highest: usize, thisnode: bool) -> std::sync::Arc<[usize]> {
        if highest == ZONE_NORMAL {
            if let Some(z) = self.zonelists.get(nid) {
                return z[thisnode as usize].clone();
            }
        }
        self.build_zonelist(nid, highest, thisnode).into()
    }

    fn build_zonelist(&self, nid: usize, highest: usize, thisnode: bool) -> Vec<usize> {
        let mut out = vec![];
        let n = self.nodes.len();
        for k in 0..n {
            let node = (nid + k) % n;
            if thisnode && node != nid {
                break;
            }
            let mut zs: Vec<usize> = self.nodes[node]
                .zones
                .iter()
                .copied()
                .filter(|&z| self.zones[z].idx <= highest && self.zones[z].managed > 0)
                .collect();
            zs.sort_by(|a, b| self.zones[*b].idx.cmp(&self.zones[*a].idx));
            out.extend(zs);
        }
        out
    }

    /// alloc_flags_nofragment(): ALLOC_NOFRAGMENT for ZONE_NORMAL when DMA32 is populated
    /// beneath it (or always with vm.defrag_mode).
    pub fn alloc_flags_nofragment(&self, zi: usize, gfp: Gfp, defrag_mode: bool) -> AllocFlags {
        let mut f = if gfp & __GFP_KSWAPD_RECLAIM != 0 { ALLOC_KSWAPD } else { 0 };
        if defrag_mode {
            return f | ALLOC_NOFRAGMENT;
        }
        if self.nofragment_zone[zi] {
            f |= ALLOC_NOFRAGMENT;
        }
        f
    }

    /// get_page_from_freelist(): walk the zonelist, check the watermark, take a block
    /// (rmqueue: the per-CPU list for orders the pcp keeps, else the buddy lists). A zone
    /// found below its high watermark is flagged ZONE_BELOW_HIGH (the pcp frees more then).
    #[allow(clippy::too_many_arguments)]
    pub fn get_page_from_freelist(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
        highest: usize,
        boost_factor: u64,
        defrag_mode: bool,
        vm: &mut VmStat,
        trace: &mut Trace,
    ) -> Option<(Pfn, usize)> {
        let mt = gfp_migratetype(gfp);
        let mut flags = alloc_flags;
        let preferred = *zonelist.first()?;
        loop {
            let no_fallback = flags & ALLOC_NOFRAGMENT != 0;
            let mut restart = false;
            for &zi in zonelist {
                if no_fallback
                    && !defrag_mode
                    && self.nodes.len() > 1
                    && zi != preferred
                    && self.zones[zi].node != self.zones[preferred].node
                {
                    // remote node: rather fragment locally than go remote
                    flags &= !ALLOC_NOFRAGMENT;
                    restart = true;
                    break;
                }
                if !self.zones[zi].below_high {
                    let high = self.zones[zi].wmark(WMARK_HIGH);
                    if self.zone_watermark_ok(zi, order, high, highest, flags) {
                        if let Some(p) = self.rmqueue_zone(zi, order, mt, flags, boost_factor, vm, trace) {
                            return Some(p);
                        }
                        continue;
                    }
                    self.zones[zi].below_high = true;
                }
                let mark = if flags & ALLOC_NO_WATERMARKS != 0 {
                    0
                } else {
                    self.zones[zi].wmark((flags & ALLOC_WMARK_MASK) as usize)
                };
                if !self.zone_watermark_ok(zi, order, mark, highest, flags) && flags & ALLOC_NO_WATERMARKS == 0 {
                    continue;
                }
                if let Some(p) = self.rmqueue_zone(zi, order, mt, flags, boost_factor, vm, trace) {
                    return Some(p);
                }
            }
            if restart {
                continue;
            }
            if no_fallback && !defrag_mode {
                flags &= !ALLOC_NOFRAGMENT;
                continue;
            }
            return None;
        }
    }

    /// rmqueue(): one zone; the frames become the allocation's.
    #[allow(clippy::too_many_arguments)]
    fn rmqueue_zone(
        &mut self,
        zi: usize,
        order: u32,
        mt: u8,
        flags: AllocFlags,
        boost_factor: u64,
        vm: &mut VmStat,
        trace: &mut Trace,
    ) -> Option<(Pfn, usize)> {
        let mut pfn = None;
        if pcp_allowed_order(order) {
            pfn = self.rmqueue_pcplist(zi, order, mt, flags, boost_factor, trace);
        }
        if pfn.is_none() {
            pfn = self.rmqueue(zi, order, mt, flags, boost_factor, trace);
        }
        Some((self.prep_captured(pfn?, order, zi, vm), zi))
    }

    /// The pgalloc_<zone> event an allocation from zone `zi` counts.
    #[inline]
    pub fn pgalloc_event(&self, zi: usize) -> Ev {
        match self.zones[zi].idx {
            ZONE_DMA => Ev::PGALLOC_DMA,
            ZONE_DMA32 => Ev::PGALLOC_DMA32,
            ZONE_MOVABLE => Ev::PGALLOC_MOVABLE,
            _ => Ev::PGALLOC_NORMAL,
        }
    }

    /// prep_new_page(): the block becomes the allocation (PGALLOC_* counted, frames marked
    /// allocated); also for a block a direct compactor captured.
    pub fn prep_captured(&mut self, pfn: u64, order: u32, zi: usize, vm: &mut VmStat) -> Pfn {
        vm.add(self.pgalloc_event(zi), 1 << order);
        for p in pfn..pfn + (1 << order) {
            self.frames[p as usize] = make_kernel(order, p == pfn);
        }
        Pfn(pfn)
    }

    /// The per-CPU lists as a machine that has been running has them (MachineSpec::pcp, the
    /// live run's /proc/zoneinfo pagesets): CPU `cpu`'s list of zone `zi` holds `count`
    /// order-0 movable pages with pcp->high at `high` (both within the model's
    /// [high_min, high_max], which follow its own zone's size). A run that frees much on a
    /// CPU leaves up to high_max pages there (nr_pcp_alloc() raised high while it
    /// allocated, free_frozen_page_commit() keeps up to high), and decay_pcp_high() gives
    /// back at most a scaled batch (2,016 pages) a second: 1.3 GiB on the reference host
    /// right after compaction-frag's fragment phase, 1.1 GiB 25 s later. Those pages were
    /// the last run's, touched (backed); they come off the heads of the order-MAX movable
    /// list (the buddy lists of the record leave them out, as NR_FREE_PAGES does), whole
    /// blocks, oldest at the list's tail. Returns the pages put there.
    pub fn hold_pcp_as_found(&mut self, zi: usize, cpu: u32, count: u64, high: u64) -> u64 {
        if cpu >= self.nr_cpus || count == 0 {
            return 0;
        }
        let i = self.pcp_index(cpu, zi);
        let want = self.pcp_found_room(i, count);
        let li = order_to_pindex(MIGRATE_MOVABLE, 0);
        let mut held = 0;
        while held < want {
            let head = self.free_list(zi, MAX_PAGE_ORDER, MIGRATE_MOVABLE).head;
            if head == NIL {
                break;
            }
            let pfn = head as u64;
            self.del_from_free_list(zi, pfn, MAX_PAGE_ORDER);
            self.zones[zi].free_pages -= 1 << MAX_PAGE_ORDER;
            for p in pfn..pfn + (1 << MAX_PAGE_ORDER) {
                self.frames[p as usize] = make_pcp(0, MIGRATE_MOVABLE);
                self.pcp[i].lists[li].push_tail(p as u32);
            }
            held += 1 << MAX_PAGE_ORDER;
        }
        self.pcp_found_set(i, held, high);
        held
    }

    /// How many of `count` pages found on per-CPU list `i` it can take: with what it
    /// already holds (hold_pcp_at, then hold_pcp_as_found), at most high_max.
    fn pcp_found_room(&self, i: usize, count: u64) -> u64 {
        count.min(self.pcp[i].high_max.saturating_sub(self.pcp[i].count))
    }

    /// `added` pages put on per-CPU list `i` as found: its count, and its high as found
    /// (at least the count, within its bounds).
    fn pcp_found_set(&mut self, i: usize, added: u64, high: u64) {
        let pcp = &mut self.pcp[i];
        pcp.count += added;
        pcp.high = kclamp(high.max(pcp.count), pcp.high_min, pcp.high_max);
    }

    /// The per-CPU list of CPU `cpu` for zone `zi` as found page by page (aged.rs
    /// flagless_to_pcp): up to `count` (pcp_found_room) of the held pages `pfns` in the
    /// zone, from the front, go on the list of their pageblock's type (MOVABLE for another
    /// type) at its tail; its high becomes `high` within its bounds. The pages placed leave
    /// `pfns` and are returned.
    pub fn hold_pcp_at(&mut self, zi: usize, cpu: u32, count: u64, high: u64, pfns: &mut Vec<u64>) -> Vec<u64> {
        if cpu >= self.nr_cpus || count == 0 {
            return vec![];
        }
        let i = self.pcp_index(cpu, zi);
        let want = self.pcp_found_room(i, count) as usize;
        let (zs, ze) = (self.zones[zi].start_pfn, self.zones[zi].end_pfn());
        let mut placed = vec![];
        pfns.retain(|&p| {
            if placed.len() >= want || !(zs..ze).contains(&p) {
                return true;
            }
            let mt = match self.pb_mt(p) {
                mt if mt < MIGRATE_PCPTYPES => mt,
                _ => MIGRATE_MOVABLE,
            };
            self.frames[p as usize] = make_pcp(0, mt);
            self.pcp[i].lists[order_to_pindex(mt, 0)].push_tail(p as u32);
            placed.push(p);
            false
        });
        self.pcp_found_set(i, placed.len() as u64, high);
        placed
    }

    /// A page held at the start (aged.rs) back to the buddy lists directly, not through a
    /// per-CPU list.
    pub fn free_held_page(&mut self, pfn: u64) {
        let zi = self.zone_of(pfn);
        self.frames[pfn as usize] = 0;
        self.free_one_page_split(zi, pfn, 0, false);
    }

    /// __isolate_free_page(): take the free block at `pfn` off the buddy lists for the
    /// compaction free scanner, if the zone stays above its min watermark (+ the block).
    /// Returns the block's order; its frames read as free tails until the caller uses or
    /// returns them. A block of order >= pageblock_order - 1 makes its pageblocks MOVABLE
    /// (move_freepages_block).
    pub fn isolate_free_page(&mut self, zi: usize, pfn: u64) -> Option<u32> {
        let order = free_order(self.frames[pfn as usize]);
        let mark = self.zones[zi].watermark[WMARK_MIN] + (1 << order);
        if !self.zone_watermark_ok(zi, 0, mark, 0, 0) {
            return None;
        }
        self.del_from_free_list(zi, pfn, order);
        self.zones[zi].free_pages -= 1 << order;
        if order >= PAGEBLOCK_ORDER - 1 {
            let end = pfn + (1 << order);
            let mut pb = pfn & !(PAGEBLOCK_NR_PAGES - 1);
            while pb < end {
                let mt = self.pb_mt(pb);
                if mt < MIGRATE_PCPTYPES && mt != MIGRATE_MOVABLE && self.count_block(zi, pb).is_some() {
                    self.move_freepages_block(zi, pb, MIGRATE_MOVABLE);
                    self.set_pb_mt(pb, MIGRATE_MOVABLE);
                }
                pb += PAGEBLOCK_NR_PAGES;
            }
        }
        Some(order)
    }

    /// free_pages() of an order-0 page (the per-CPU list's path inlined: the fault and
    /// zap runs free hundreds of millions of them).
    #[inline(always)]
    pub fn free_page0(&mut self, pfn: u64, vm: &mut VmStat) {
        let zi = self.zone_of(pfn);
        self.frames[pfn as usize] = 0;
        vm.add(Ev::PGFREE, 1);
        self.free_to_pcp(zi, pfn, 0);
    }

    /// free_frozen_pages() of a block of an order the per-CPU lists keep: to the buddy
    /// lists from an isolated pageblock, else to the list of its pageblock's type (the
    /// types past the per-CPU ones as movable).
    #[inline(always)]
    fn free_to_pcp(&mut self, zi: usize, pfn: u64, order: u32) {
        let mut mt = self.pb_mt(pfn);
        if mt >= MIGRATE_PCPTYPES {
            if mt == MIGRATE_ISOLATE {
                self.free_one_page_split(zi, pfn, order, false);
                return;
            }
            mt = MIGRATE_MOVABLE;
        }
        self.free_frozen_page_commit(zi, pfn, order, mt);
    }

    /// __free_pages() / free_frozen_pages(): return a block (its frames owned by the
    /// caller) to the allocator: orders the per-CPU lists keep go to the current CPU's
    /// list, others to the buddy lists.
    pub fn free_pages(&mut self, pfn: Pfn, order: u32, vm: &mut VmStat) {
        if order == 0 {
            return self.free_page0(pfn.0, vm);
        }
        let pfn = pfn.0;
        let zi = self.zone_of(pfn);
        for p in pfn..pfn + (1 << order) {
            self.frames[p as usize] = 0;
        }
        vm.add(Ev::PGFREE, 1 << order);
        if !pcp_allowed_order(order) {
            self.free_one_page_split(zi, pfn, order, false);
            return;
        }
        self.free_to_pcp(zi, pfn, order);
    }

    /// Number of pageblocks of each migratetype in a zone (pagetypeinfo_showblockcount).
    pub fn block_counts(&self, zi: usize) -> [u64; MIGRATE_TYPES] {
        let z = &self.zones[zi];
        let mut c = [0u64; MIGRATE_TYPES];
        let mut pfn = z.start_pfn;
        while pfn < z.end_pfn() {
            c[self.pb_mt(pfn) as usize] += 1;
            pfn = (pfn & !(PAGEBLOCK_NR_PAGES - 1)) + PAGEBLOCK_NR_PAGES;
        }
        c
    }

    pub fn buddyinfo(&self) -> String {
        self.zones.iter().filter(|z| z.populated()).map(crate::vmstat::buddyinfo_line).collect()
    }

    pub fn pagetypeinfo(&self) -> String {
        let mut s = String::new();
        for n in &self.nodes {
            let zis: Vec<usize> = n.zones.iter().copied().filter(|&z| self.zones[z].populated()).collect();
            let zones: Vec<&Zone> = zis.iter().map(|&z| &self.zones[z]).collect();
            let counts: Vec<_> = zis.iter().map(|&z| self.block_counts(z)).collect();
            s.push_str(&crate::vmstat::pagetypeinfo_node(n.id, &zones, &counts));
        }
        s
    }

    pub fn total_managed(&self) -> u64 {
        self.zones.iter().map(|z| z.managed).sum()
    }
    pub fn total_free(&self) -> u64 {
        self.zones.iter().map(|z| z.free_pages).sum()
    }

    /// setup_per_zone_lowmem_reserve() and __setup_per_zone_wmarks().
    pub fn setup_watermarks(&mut self, min_free_kbytes: u64, watermark_scale_factor: u64) {
        let lowmem: u64 = self.zones.iter().filter(|z| z.idx != ZONE_MOVABLE).map(|z| z.managed).sum();
        for n in 0..self.nodes.len() {
            let zs = self.nodes[n].zones.clone();
            for &zi in &zs {
                let idx = self.zones[zi].idx;
                let mut reserve = [0u64; MAX_NR_ZONES];
                let mut managed_above = 0;
                for (j, r) in reserve.iter_mut().enumerate().skip(idx + 1) {
                    managed_above +=
                        zs.iter().filter(|&&o| self.zones[o].idx == j).map(|&o| self.zones[o].managed).sum::<u64>();
                    *r = managed_above.checked_div(LOWMEM_RESERVE_RATIO[idx]).unwrap_or(0);
                }
                self.zones[zi].lowmem_reserve = reserve;
            }
        }
        for z in &mut self.zones {
            z.watermark = zone_wmarks(min_free_kbytes, z.managed, lowmem, watermark_scale_factor);
            z.watermark_boost = 0;
        }
        // setup_per_zone_wmarks(): the pcp batch and high limits follow the watermarks
        for zi in 0..self.zones.len() {
            if self.zones[zi].managed > 0 {
                self.zone_pcp_update(zi);
            }
        }
    }

    /// Lowmem pages as nr_free_buffer_pages() sees them (managed above the high watermark).
    pub fn nr_free_buffer_pages(&self) -> u64 {
        self.zones
            .iter()
            .filter(|z| z.idx <= ZONE_NORMAL)
            .map(|z| z.managed.saturating_sub(z.watermark[WMARK_HIGH]))
            .sum()
    }
    pub fn nr_populated_lowmem_zones(&self) -> u64 {
        self.zones.iter().filter(|z| z.idx <= ZONE_NORMAL && z.populated()).count() as u64
    }

    pub fn heap_bytes(&self) -> usize {
        self.frames.len() * 8
            + self.pageblocks.len() * 2
            + self.pb_sum.len() * std::mem::size_of::<PbSummary>()
            + self.links.heap_bytes()
            + self.pcp.len() * std::mem::size_of::<PerCpuPages>()
    }
}

fn is_highest(lay: &[ZoneLayout], zl: &ZoneLayout) -> bool {
    !lay.iter().any(|o| o.node == zl.node && o.idx > zl.idx)
}

/// The allocator's entry and slow path (mm/page_alloc.c: __alloc_pages,
/// __alloc_pages_slowpath, __alloc_pages_direct_compact; direct reclaim is vmscan.rs's
/// try_to_free_pages, the OOM killer oom_kill.rs's out_of_memory).
impl Kernel {
    /// __alloc_pages(gfp, order, preferred nid): fast path, then the slow path. Returns the pfn.
    pub fn alloc_pages(&mut self, gfp: Gfp, order: u32, nid: usize) -> Option<Pfn> {
        let highest = ZONE_NORMAL;
        // the zonelist, copied to the stack when short (the common case): no reference
        // count taken and dropped per allocation
        let shared;
        let mut buf = [0usize; 8];
        let zonelist: &[usize] = match self.pm.zonelists.get(nid) {
            Some(z) if z[(gfp & __GFP_THISNODE != 0) as usize].len() <= buf.len() => {
                let z = &z[(gfp & __GFP_THISNODE != 0) as usize];
                buf[..z.len()].copy_from_slice(z);
                &buf[..z.len()]
            }
            _ => {
                shared = self.pm.zonelist(nid, highest, gfp & __GFP_THISNODE != 0);
                &shared
            }
        };
        if zonelist.is_empty() {
            return None;
        }
        self.charge(self.costs.page_alloc_ns);
        // fast path: low watermark, avoid fragmenting (alloc_flags_nofragment)
        let flags = ALLOC_WMARK_LOW | self.pm.alloc_flags_nofragment(zonelist[0], gfp, self.cfg.defrag_mode);
        let page = match self.get_page_from_freelist(gfp, order, flags, zonelist) {
            Some((pfn, zi)) => {
                self.after_alloc(zi);
                Some(pfn)
            }
            None => self.alloc_pages_slowpath(gfp, order, nid, zonelist),
        };
        if let Some(pfn) = page {
            // free page reporting: the first touch of pages the host took back refaults them
            self.page_reporting_touch(pfn.0, order);
        }
        page
    }

    /// alloc_pages(GFP_HIGHUSER_MOVABLE, 0, nid) when it is its commonest case: the first
    /// zone of the zonelist that passes its watermark (the high one, the low one once the
    /// zone is flagged below high) is one whose walk changed nothing, and this CPU's
    /// movable order-0 per-CPU list for it has a page to pop, with no per-CPU decay due.
    /// Then each pop_movable0_pcp() takes the same steps and state changes as alloc_pages()
    /// -> get_page_from_freelist() -> rmqueue_pcplist(). Returns where to pop and how many
    /// pages the list holds; None, with nothing changed, in every other case (the caller
    /// then takes alloc_pages()). The write op's batched faults (memory.rs, write_run_fast)
    /// take their pages here: `zone` carries the walk's result from one page of a run to
    /// the next (valid while nothing but such pops happens: they change neither the zones'
    /// free pages nor their flags, nor the time).
    pub fn movable0_pcp_run(&mut self, nid: usize, zone: &mut Option<PcpPop>) -> Option<(PcpPop, usize)> {
        let z = match *zone {
            Some(z) => z,
            None => {
                let z = self.movable0_pcp_zone(nid)?;
                *zone = Some(z);
                z
            }
        };
        let n = self.pm.pcp[z.i].lists[z.li].len();
        (n > 0).then_some((z, n))
    }

    /// The allocation from `z`'s list, known to hold a page (movable0_pcp_run).
    #[inline(always)]
    pub fn pop_movable0_pcp(&mut self, z: PcpPop) -> u64 {
        let PcpPop { zi, i, li } = z;
        // alloc_pages(): the cost; get_page_from_freelist(): the trace clock
        self.charge(self.costs.page_alloc_ns);
        self.rec.trace.clock = self.clock.now + self.clock.cost;
        // rmqueue_pcplist()
        self.pm.pcp[i].free_count >>= 1;
        let p = self.pm.pcp_pop_head(i, li, 0);
        let pfn = self.pm.prep_captured(p, 0, zi, &mut self.rec.vm).0;
        self.after_alloc(zi);
        self.page_reporting_touch(pfn, 0);
        pfn
    }

    /// The node of the zone `z` allocates from, and whether the zone's watermark is
    /// boosted (the next allocation wakes kswapd, after_alloc()).
    pub fn pcp_pop_zone(&self, z: PcpPop) -> (usize, bool) {
        (self.pm.zones[z.zi].node, self.pm.zones[z.zi].boosted)
    }

    /// pop_movable0_pcp() for `pfns.len()` pages (the list holds that many; the zone is
    /// not boosted), every change to the lists, counts and host backing made, the time
    /// not charged: each page's host refault charge goes to `refault_ns`, for the caller
    /// to charge with the page's page_alloc_ns at its point in the fault sequence
    /// (write_run_fast's runs, memory.rs fault_run_pcp). The frames are left to the
    /// caller, which writes each before anything reads it.
    pub fn pop_movable0_pcp_run(&mut self, z: PcpPop, pfns: &mut [u32], refault_ns: &mut [u64]) {
        let PcpPop { zi, i, li } = z;
        debug_assert!(!self.pm.zones[zi].boosted && self.pm.pcp[i].lists[li].len() >= pfns.len());
        self.rec.vm.add(self.pm.pgalloc_event(zi), pfns.len() as u64);
        let pcp = &mut self.pm.pcp[i];
        pcp.free_count >>= pfns.len().min(63);
        pcp.count -= pfns.len() as u64;
        for p in pfns.iter_mut() {
            *p = pcp.lists[li].pop_head().expect("a page on the list");
        }
        let per = self.costs.refault_reported_2m_ns / PAGEBLOCK_NR_PAGES;
        for (p, r) in pfns.iter().zip(refault_ns.iter_mut()) {
            *r = if self.pm.pr.enabled { self.pm.pr.touch(*p as u64, 0) * per } else { 0 };
        }
    }

    /// movable0_pcp_run()'s walk of the zonelist: a zone flagged below its high
    /// watermark and under its low one is passed over; the first other zone is the one,
    /// if it passes (a zone the walk would flag, or a remote node under ALLOC_NOFRAGMENT,
    /// changes state or restarts the walk: None). No per-CPU decay may be due.
    fn movable0_pcp_zone(&self, nid: usize) -> Option<PcpPop> {
        let gfp = GFP_HIGHUSER_MOVABLE;
        let pm = &self.pm;
        let zonelist = &pm.zonelists.get(nid)?[0];
        let preferred = *zonelist.first()?;
        if pm.now_ms >= pm.next_pcp_decay_ms {
            return None;
        }
        let flags = ALLOC_WMARK_LOW | pm.alloc_flags_nofragment(preferred, gfp, self.cfg.defrag_mode);
        for &zi in zonelist.iter() {
            let z = &pm.zones[zi];
            if flags & ALLOC_NOFRAGMENT != 0 && pm.nodes.len() > 1 && z.node != pm.zones[preferred].node {
                return None;
            }
            let mark = if z.below_high { z.wmark((flags & ALLOC_WMARK_MASK) as usize) } else { z.wmark(WMARK_HIGH) };
            if pm.zone_watermark_ok(zi, 0, mark, ZONE_NORMAL, flags) {
                let (i, li) = (pm.pcp_index(pm.cpu, zi), order_to_pindex(gfp_migratetype(gfp), 0));
                return Some(PcpPop { zi, i, li });
            }
            if !z.below_high {
                return None;
            }
        }
        None
    }

    /// Free pages including those on the per-CPU lists (NR_FREE_PAGES leaves them out).
    pub fn nr_free_pcp_pages(&self) -> u64 {
        self.pm.total_free() + self.pm.pcp_pages_total()
    }

    /// Kernel memory for the `kalloc` op (pipe buffers): GFP_KERNEL pages the kernel keeps,
    /// counted as kernel pages.
    pub fn alloc_kernel_pages(&mut self, order: u32, nid: usize) -> Option<Pfn> {
        let page = self.alloc_pages(GFP_KERNEL, order, nid)?;
        self.mod_node_page_state(page.0, NodeStat::NrKernelMisc, 1 << order);
        Some(page)
    }
    /// Free what alloc_kernel_pages() gave.
    pub fn free_kernel_pages(&mut self, page: Pfn, order: u32) {
        self.mod_node_page_state(page.0, NodeStat::NrKernelMisc, -(1 << order));
        self.pm.free_pages(page, order, &mut self.rec.vm);
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
        self.rec.trace.clock = self.clock.now + self.clock.cost;
        self.pm.get_page_from_freelist(
            gfp,
            order,
            alloc_flags,
            zonelist,
            ZONE_NORMAL,
            boost,
            dm,
            &mut self.rec.vm,
            &mut self.rec.trace,
        )
    }

    fn after_alloc(&mut self, zi: usize) {
        // a fallback claim boosted the watermark: kswapd is woken to reclaim the boost
        // (rmqueue: ZONE_BOOSTED_WATERMARK -> wakeup_kswapd(zone, 0, 0, zone_idx))
        if self.pm.zones[zi].boosted {
            self.pm.zones[zi].boosted = false;
            self.wakeup_kswapd(self.pm.zones[zi].node, 0, 0);
        }
    }

    /// gfp_to_alloc_flags(): the slow path's flags: the min watermark, reserves for
    /// __GFP_HIGH, kswapd wake-ups, ALLOC_NOFRAGMENT under vm.defrag_mode.
    fn gfp_to_alloc_flags(&self, gfp: Gfp) -> AllocFlags {
        let mut f = ALLOC_WMARK_MIN;
        if gfp & __GFP_HIGH != 0 {
            f |= ALLOC_MIN_RESERVE;
        }
        if gfp & __GFP_KSWAPD_RECLAIM != 0 {
            f |= ALLOC_KSWAPD;
        }
        if self.cfg.defrag_mode {
            f |= ALLOC_NOFRAGMENT;
        }
        f
    }

    /// wake_all_kswapds(): each node of the zonelist once; under vm.defrag_mode kswapd
    /// reclaims for at least a pageblock.
    fn wake_all_kswapds(&mut self, order: u32, gfp: Gfp, zonelist: &[usize]) {
        let reclaim_order = if self.cfg.defrag_mode { order.max(PAGEBLOCK_ORDER) } else { order };
        let mut last = usize::MAX;
        for &zi in zonelist {
            let nid = self.pm.zones[zi].node;
            if nid != last {
                last = nid;
                self.wakeup_kswapd(nid, gfp, reclaim_order);
            }
        }
    }

    /// __alloc_pages_slowpath(): wake kswapd, retry at the min watermark; for costly (or
    /// non-movable high-order) requests try async direct compaction first; then loop:
    /// direct reclaim, direct compaction at the current priority, and retry as
    /// should_reclaim_retry / should_compact_retry decide (costly requests only with
    /// __GFP_RETRY_MAYFAIL; __GFP_NORETRY never); vm.defrag_mode finally allows
    /// fragmenting fallbacks; the OOM killer last.
    fn alloc_pages_slowpath(&mut self, gfp: Gfp, order: u32, nid: usize, zonelist: &[usize]) -> Option<Pfn> {
        let costly = order > PAGE_ALLOC_COSTLY_ORDER;
        let can_direct_reclaim = gfp & __GFP_DIRECT_RECLAIM != 0;
        let can_compact = gfp & __GFP_IO != 0;
        let mut compaction_retries = 0u32;
        let mut no_progress_loops = 0u32;
        let mut compact_priority = DEF_COMPACT_PRIORITY;
        let mut alloc_flags = self.gfp_to_alloc_flags(gfp);
        if alloc_flags & ALLOC_KSWAPD != 0 {
            self.wake_all_kswapds(order, gfp, zonelist);
        }
        if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
            self.after_alloc(zi);
            return Some(pfn);
        }
        let mt = gfp_migratetype(gfp);
        if can_direct_reclaim && can_compact && (costly || (order > 0 && mt != MIGRATE_MOVABLE)) {
            let (page, result) =
                self.alloc_pages_direct_compact(gfp, order, alloc_flags, zonelist, INIT_COMPACT_PRIORITY);
            if page.is_some() {
                return page;
            }
            if costly && gfp & __GFP_NORETRY != 0 {
                // THP faults may try the local node only first: compact, don't reclaim
                if matches!(result, CompactResult::Skipped | CompactResult::Deferred) {
                    return None;
                }
                compact_priority = INIT_COMPACT_PRIORITY;
            }
        }
        let mut oom_tries = 0;
        let mut loops = 0u32;
        loop {
            loops += 1;
            if alloc_flags & ALLOC_KSWAPD != 0 {
                self.wake_all_kswapds(order, gfp, zonelist);
            }
            if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
                self.after_alloc(zi);
                return Some(pfn);
            }
            if !can_direct_reclaim {
                return None;
            }
            let (page, progress) = self.alloc_pages_direct_reclaim(gfp, order, alloc_flags, zonelist);
            if page.is_some() {
                return page;
            }
            let (page, compact_result) =
                self.alloc_pages_direct_compact(gfp, order, alloc_flags, zonelist, compact_priority);
            if page.is_some() {
                return page;
            }
            if gfp & __GFP_NORETRY != 0 {
                return None;
            }
            if costly && (!can_compact || gfp & __GFP_RETRY_MAYFAIL == 0) {
                return None;
            }
            // reclaim that frees pages which others (zram's pool) take again could loop
            // for ever with "progress"; the model gives up after this many rounds
            const MAX_SLOWPATH_LOOPS: u32 = 1000;
            if loops < MAX_SLOWPATH_LOOPS
                && self.should_reclaim_retry(order, alloc_flags, progress > 0, &mut no_progress_loops, zonelist)
            {
                continue;
            }
            if progress > 0
                && can_compact
                && self.should_compact_retry(
                    order,
                    zonelist,
                    compact_result,
                    &mut compact_priority,
                    &mut compaction_retries,
                )
            {
                continue;
            }
            if self.cfg.defrag_mode && alloc_flags & ALLOC_NOFRAGMENT != 0 {
                alloc_flags &= !ALLOC_NOFRAGMENT;
                continue;
            }
            // __alloc_pages_may_oom(): the OOM killer cannot free memory on a given node,
            // and costly or __GFP_RETRY_MAYFAIL requests fail instead
            if gfp & (__GFP_THISNODE | __GFP_RETRY_MAYFAIL) != 0 || costly {
                return None;
            }
            if oom_tries >= 3 || !self.out_of_memory(order, nid) {
                return None;
            }
            oom_tries += 1;
            no_progress_loops = 0;
        }
    }

    /// __alloc_pages_direct_reclaim(): try_to_free_pages, then the freelists; if that
    /// fails, drain the per-CPU lists once and try again. Returns (page, progress).
    fn alloc_pages_direct_reclaim(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
    ) -> (Option<Pfn>, u64) {
        let progress = self.try_to_free_pages(gfp, order, zonelist);
        if progress == 0 {
            return (None, 0);
        }
        for drained in [false, true] {
            if let Some((pfn, zi)) = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist) {
                self.after_alloc(zi);
                return (Some(pfn), progress);
            }
            if !drained {
                self.pm.drain_all_pages(None);
            }
        }
        (None, progress)
    }

    /// should_reclaim_retry(): retry while reclaim makes progress (costly orders always
    /// count a no-progress loop), at most MAX_RECLAIM_RETRIES loops without it, and only
    /// while some zone could meet its min watermark with all its reclaimable pages.
    fn should_reclaim_retry(
        &self,
        order: u32,
        alloc_flags: AllocFlags,
        did_some_progress: bool,
        no_progress_loops: &mut u32,
        zonelist: &[usize],
    ) -> bool {
        if did_some_progress && order <= PAGE_ALLOC_COSTLY_ORDER {
            *no_progress_loops = 0;
        } else {
            *no_progress_loops += 1;
        }
        if *no_progress_loops > MAX_RECLAIM_RETRIES {
            return false;
        }
        zonelist.iter().any(|&zi| {
            let z = &self.pm.zones[zi];
            let available = self.zone_reclaimable_pages(zi) + z.free_pages;
            self.pm.zone_watermark_ok_free(zi, order, z.wmark(WMARK_MIN), ZONE_NORMAL, alloc_flags, available)
        })
    }

    /// should_compact_retry(): after SKIPPED, retry if reclaim can make room; after
    /// SUCCESS (a race lost), retry up to MAX_COMPACT_RETRIES (a quarter for costly
    /// orders); otherwise raise the priority, down to MIN_COMPACT_COSTLY_PRIORITY for
    /// costly orders. So a costly request (a hugetlb pool page, order 9) whose sync-light
    /// compaction fails (COMPLETE or PARTIAL_SKIPPED) gets no retry: SYNC_LIGHT is its
    /// minimum priority, and SYNC_FULL (whole zone, skip hints ignored) is never tried.
    /// Emits the kernel's `compact_retry` tracepoint (include/trace/events/oom.h).
    fn should_compact_retry(
        &mut self,
        order: u32,
        zonelist: &[usize],
        result: CompactResult,
        prio: &mut CompactPriority,
        retries: &mut u32,
    ) -> bool {
        const MAX_COMPACT_RETRIES: u32 = 16;
        if order == 0 {
            return false;
        }
        let (prio0, retries0) = (*prio, *retries);
        // (the kernel divides max_retries for costly orders in the SUCCESS branch only,
        // and traces it as it stands)
        let max = if order > PAGE_ALLOC_COSTLY_ORDER && result == CompactResult::Success {
            MAX_COMPACT_RETRIES / 4
        } else {
            MAX_COMPACT_RETRIES
        };
        let ret = 'out: {
            if result == CompactResult::Skipped {
                break 'out self.compaction_zonelist_suitable(zonelist, order);
            }
            if result == CompactResult::Success {
                *retries += 1;
                if *retries <= max {
                    break 'out true;
                }
            }
            let min_prio =
                if order > PAGE_ALLOC_COSTLY_ORDER { MIN_COMPACT_COSTLY_PRIORITY } else { MIN_COMPACT_PRIORITY };
            if *prio > min_prio {
                *prio = match *prio {
                    CompactPriority::Async => CompactPriority::SyncLight,
                    _ => CompactPriority::SyncFull,
                };
                *retries = 0;
                break 'out true;
            }
            false
        };
        // compact_retry: the priority and retries it was called with; the result as
        // compact_result_to_feedback() (failed / withdrawn / progress)
        trace_event!(
            self,
            compact_retry,
            order = order,
            priority = match prio0 {
                CompactPriority::SyncFull => "COMPACT_PRIO_SYNC_FULL",
                CompactPriority::SyncLight => "COMPACT_PRIO_SYNC_LIGHT",
                CompactPriority::Async => "COMPACT_PRIO_ASYNC",
            },
            compaction_result = match result {
                CompactResult::Complete => "failed",
                CompactResult::Success => "progress",
                _ => "withdrawn",
            },
            retries = retries0,
            max_retries = max,
            should_retry = ret as u32,
        );
        ret
    }

    /// __alloc_pages_direct_compact(): try_to_compact_pages; a captured block is the
    /// allocation, else the freelists are tried. Counts compact_stall/success/fail.
    fn alloc_pages_direct_compact(
        &mut self,
        gfp: Gfp,
        order: u32,
        alloc_flags: AllocFlags,
        zonelist: &[usize],
        prio: CompactPriority,
    ) -> (Option<Pfn>, CompactResult) {
        if order == 0 {
            return (None, CompactResult::Skipped);
        }
        let (result, captured) = self.try_to_compact_pages(gfp, order, alloc_flags, zonelist, prio);
        if result == CompactResult::Skipped {
            return (None, result);
        }
        self.rec.vm.count(Ev::COMPACT_STALL);
        let page = match captured {
            Some((pfn, zi)) => Some((self.pm.prep_captured(pfn, order, zi, &mut self.rec.vm), zi)),
            None => self.get_page_from_freelist(gfp, order, alloc_flags, zonelist),
        };
        if let Some((pfn, zi)) = page {
            self.pm.zones[zi].compact_blockskip_flush = false;
            self.compaction_defer_reset(zi, order as i32, true);
            self.rec.vm.count(Ev::COMPACT_SUCCESS);
            self.after_alloc(zi);
            return (Some(pfn), result);
        }
        self.rec.vm.count(Ev::COMPACT_FAIL);
        (None, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> (PhysMem, VmStat) {
        let m = MachineSpec::parse_shorthand("64M").unwrap();
        let mut pm = PhysMem::new(&m).unwrap();
        pm.setup_watermarks(1024, 10);
        (pm, VmStat::default())
    }

    /// skipped_run() counts the skipped pageblocks in a row from a block on, across
    /// words of eight, up to the first one not skipped or the limit's block.
    #[test]
    fn skipped_run_counts_blocks_in_a_row_below_the_limit() {
        let (mut pm, _) = small();
        let pb = PAGEBLOCK_NR_PAGES;
        let nb = pm.pageblocks.len() as u64;
        assert!(nb >= 32, "64 MiB: 32 pageblocks");
        for b in 3..21 {
            pm.set_pb_skip(b * pb, true);
        }
        let all = nb * pb;
        assert_eq!(pm.skipped_run(3 * pb, all), 18, "blocks 3-20");
        assert_eq!(pm.skipped_run(5 * pb, all), 16);
        assert_eq!(pm.skipped_run(2 * pb, all), 0, "block 2 is not skipped");
        assert_eq!(pm.skipped_run(3 * pb, 12 * pb), 9, "blocks 3-11 end at or below the limit");
        assert_eq!(pm.skipped_run(3 * pb, 12 * pb + pb / 2), 9, "block 12 ends above it");
        assert_eq!(pm.skipped_run(21 * pb, all), 0);
        pm.set_pb_skip(16 * pb, false);
        assert_eq!(pm.skipped_run(3 * pb, all), 13, "up to block 15");
        assert_eq!(pm.skipped_run(all, all + pb), 0, "past the end");
    }

    fn check_counts(pm: &PhysMem) {
        for (zi, z) in pm.zones.iter().enumerate() {
            let mut free = 0;
            let mut p = z.start_pfn;
            while p < z.end_pfn() {
                let f = pm.frames[p as usize];
                if is_free_head(f) {
                    let o = free_order(f);
                    assert_eq!(p & ((1 << o) - 1), 0, "misaligned block");
                    free += 1 << o;
                    // the second frame holds the block's list links (TailCells): a free tail
                    if o > 0 {
                        assert_eq!(tag(pm.frames[p as usize + 1]), TAG_FREE_TAIL, "second frame of free block");
                    }
                    for q in p + 2..p + (1 << o) {
                        assert_eq!(pm.frames[q as usize], 0, "tail of free block");
                    }
                    p += 1 << o;
                } else {
                    p += 1;
                }
            }
            assert_eq!(free, pm.zones[zi].free_pages, "zone {}", z.name);
            let listed: u64 = (0..NR_PAGE_ORDERS).map(|o| z.nr_free_order(o) << o).sum();
            assert_eq!(listed, free);
        }
    }

    #[test]
    fn boot_state() {
        let (pm, _) = small();
        check_counts(&pm);
        let dma = &pm.zones[0];
        assert_eq!(dma.present, 3998);
        assert_eq!(dma.managed, 3840);
        assert_eq!(dma.free_pages, 3840);
        // DMA free memory: pfns 159..? no: [159,256) is a hole, so [256, 4096) and nothing below
        assert_eq!(pm.total_free(), pm.total_managed());
    }

    #[test]
    fn split_and_merge() {
        let (mut pm, mut vm) = small();
        let zl = pm.zonelist(0, ZONE_NORMAL, false);
        let before = pm.buddyinfo();
        let free0 = pm.total_free();
        let (Pfn(p), _) = pm
            .get_page_from_freelist(
                GFP_HIGHUSER_MOVABLE,
                0,
                ALLOC_WMARK_LOW,
                &zl,
                ZONE_NORMAL,
                15000,
                false,
                &mut vm,
                &mut Trace::default(),
            )
            .unwrap();
        // the CPU's list was refilled with a batch; one page of it was taken
        assert_eq!(pm.total_free() + pm.pcp_pages(1), free0 - 1);
        assert_eq!(pm.pcp_of(0, 1).count, pm.pcp_of(0, 1).batch - 1);
        check_counts(&pm);
        // the order-10 block was split: one free block at each order 0..9 appears
        pm.free_pages(Pfn(p), 0, &mut vm);
        // the page waits on the CPU's list until drained
        assert_eq!(pm.pcp_pages(1), pm.pcp_of(0, 1).batch);
        pm.drain_all_pages(None);
        check_counts(&pm);
        assert_eq!(pm.buddyinfo(), before, "freeing merges back to the original blocks");
        assert_eq!(vm.get(Ev::PGFREE), 1);
    }

    #[test]
    fn fallback_claims_whole_block_for_large_order() {
        let (mut pm, mut vm) = small();
        let zl = pm.zonelist(0, ZONE_NORMAL, false);
        // every pageblock starts MOVABLE: an unmovable order-9 request must claim one
        let (Pfn(p), _) = pm
            .get_page_from_freelist(
                GFP_KERNEL,
                9,
                ALLOC_WMARK_LOW,
                &zl,
                ZONE_NORMAL,
                15000,
                false,
                &mut vm,
                &mut Trace::default(),
            )
            .unwrap();
        assert_eq!(pm.pb_mt(p), MIGRATE_UNMOVABLE);
        check_counts(&pm);
        // an unmovable order-0 request claims (rather than steals) since it is unmovable
        let (Pfn(q), _) = pm
            .get_page_from_freelist(
                GFP_KERNEL,
                0,
                ALLOC_WMARK_LOW,
                &zl,
                ZONE_NORMAL,
                15000,
                false,
                &mut vm,
                &mut Trace::default(),
            )
            .unwrap();
        assert_eq!(pm.pb_mt(q), MIGRATE_UNMOVABLE);
        let counts = pm.block_counts(1);
        assert!(counts[MIGRATE_UNMOVABLE as usize] >= 1);
        check_counts(&pm);
    }

    #[test]
    fn movable_order0_steals_without_claim_when_block_is_busy() {
        // should_try_claim_block: a MOVABLE order-0 request may only claim from free blocks of
        // order >= pageblock_order/2; with none left it steals without retyping.
        let (mut pm, mut vm) = small();
        let zl = pm.zonelist(0, ZONE_NORMAL, false);
        // retype everything UNMOVABLE by hand (pageblocks and their free lists)
        for zi in 0..pm.zones.len() {
            let (s, e) = (pm.zones[zi].start_pfn, pm.zones[zi].end_pfn());
            let mut pb = s & !(PAGEBLOCK_NR_PAGES - 1);
            while pb < e {
                if pb >= s && pb + PAGEBLOCK_NR_PAGES <= e {
                    pm.move_freepages_block(zi, pb, MIGRATE_UNMOVABLE);
                    pm.set_pb_mt(pb, MIGRATE_UNMOVABLE);
                }
                pb += PAGEBLOCK_NR_PAGES;
            }
        }
        check_counts(&pm);
        let (Pfn(p), _) = pm
            .get_page_from_freelist(
                GFP_HIGHUSER_MOVABLE,
                0,
                ALLOC_WMARK_LOW,
                &zl,
                ZONE_NORMAL,
                15000,
                false,
                &mut vm,
                &mut Trace::default(),
            )
            .unwrap();
        // the largest free block is order >= 4, so the movable request claims the whole block
        assert_eq!(pm.pb_mt(p), MIGRATE_MOVABLE);
        check_counts(&pm);
    }

    #[test]
    fn watermark_check() {
        let (pm, _) = small();
        let zi = 1; // DMA32
        let z = &pm.zones[zi];
        let mark = z.free_pages - 1;
        assert!(pm.zone_watermark_ok(zi, 0, mark - 1, ZONE_DMA32, 0));
        assert!(!pm.zone_watermark_ok(zi, 0, mark + 1, ZONE_DMA32, 0));
        // order-9 also subtracts 511 pages
        assert!(!pm.zone_watermark_ok(zi, 9, z.free_pages - 400, ZONE_DMA32, 0));
    }

    #[test]
    fn fragmentation_metrics_by_hand() {
        let (mut pm, mut vm) = small();
        let zl = pm.zonelist(0, ZONE_NORMAL, false);
        // take everything as order-0 pages, then free every other one: only order-0 blocks remain free
        let mut got = vec![];
        while let Some((Pfn(p), _)) = pm.get_page_from_freelist(
            GFP_HIGHUSER_MOVABLE,
            0,
            ALLOC_NO_WATERMARKS,
            &zl,
            ZONE_NORMAL,
            15000,
            false,
            &mut vm,
            &mut Trace::default(),
        ) {
            got.push(p);
        }
        for (i, p) in got.iter().enumerate() {
            if i % 2 == 0 && p % 2 == 0 {
                pm.free_pages(Pfn(*p), 0, &mut vm);
            }
        }
        check_counts(&pm);
        let z = &pm.zones[1];
        let free = z.free_pages;
        assert_eq!(z.nr_free_order(0), free);
        // extfrag_for_order(9) = (free - 0) * 100 / free = 100
        assert_eq!(crate::vmstat::extfrag_for_order(z, 9), 100);
        assert_eq!(crate::vmstat::fragmentation_score_zone(z), 100);
        // fragmentation_index(9) = 1000 - (1000 + free*1000/512) / free_blocks_total
        let expect = 1000 - ((1000 + (free * 1000 / 512) as i64) / free as i64);
        assert_eq!(crate::vmstat::fragmentation_index(z, 9), expect);
        assert_eq!(crate::vmstat::fragmentation_index(z, 0), -1000);
        assert_eq!(crate::vmstat::extfrag_for_order(z, 0), 0);
    }
}

#[cfg(test)]
mod format_tests {
    use super::*;

    /// Lines copied from this project's 24 GiB VM (kernel 6.18): the DMA zone's free blocks
    /// at boot, and pagetypeinfo's headers. The model's layout (DMA present 3998 pages, the
    /// 640K-1M hole, 158 reserved pages) reproduces the DMA line exactly.
    #[test]
    fn proc_text_matches_the_kernel() {
        let m = MachineSpec::parse_shorthand("24G").unwrap();
        let pm = PhysMem::new(&m).unwrap();
        let b = pm.buddyinfo();
        assert_eq!(
            b.lines().next().unwrap(),
            "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 "
        );
        assert!(b.lines().nth(1).unwrap().starts_with("Node 0, zone    DMA32 "));
        let p = pm.pagetypeinfo();
        let lines: Vec<&str> = p.lines().collect();
        assert_eq!(lines[0], "Page block order: 9");
        assert_eq!(lines[1], "Pages per block:  512");
        assert_eq!(lines[3], "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 ");
        assert_eq!(lines[4], "Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      0      0      0      0      0      0 ");
        assert!(
            p.contains("\nNumber of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n")
        );
        assert!(p.contains("Node 0, zone      DMA            0            8            0            0            0 \n"));
    }
}
