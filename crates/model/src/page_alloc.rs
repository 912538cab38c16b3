//! The buddy allocator (mm/page_alloc.c): free areas per zone, order and migratetype,
//! pageblocks with a migratetype and a compaction skip bit, __rmqueue's
//! smallest → claim → steal order, __free_one_page merging, watermark checks and the
//! zonelist walk of get_page_from_freelist. The slow path (kswapd, direct reclaim,
//! direct compaction, OOM) is `Kernel::alloc_pages` below.
//!
//! Documented simplifications: free "lists" are address-ordered (the lowest free block of
//! an order and migratetype is taken first, not the most recently freed), and there are
//! no per-cpu page lists (order-0 pages come straight from the buddy lists). Counts
//! (nr_free per order and migratetype, NR_FREE_PAGES) are exact.

use crate::bitmap::BitTree;
use crate::compaction::{CompactPriority, CompactResult};
use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::mmzone::*;
use crate::trace::{trace_event, Trace};
use crate::vmstat::{Ev, NodeStat, VmStat};
use thplab_workload::machine::MachineSpec;

pub use crate::gfp::*;

/// Pageblock flag byte: bits 0..2 migratetype, bit 3 PB_migrate_skip.
const PB_MT_MASK: u8 = 7;
const PB_SKIP: u8 = 8;

/// Physical memory: the frame array, pageblocks, nodes and zones.
pub struct PhysMem {
    pub frames: Vec<u64>,
    pub pageblocks: Vec<u8>,
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
    pub zonelists: Vec<[std::rc::Rc<[usize]>; 2]>,
    /// Free page reporting (a VM guest, mm/page_reporting.c): per pageblock, the time (ms)
    /// since which it has been wholly free, or BACKED while any of it is in use. Boot
    /// memory counts as freed at t=0: it is reported once it stays free past the delay.
    pub pb_free_since_ms: Vec<u32>,
    /// the current simulated time in ms (set by the engine before each step)
    pub now_ms: u32,
    /// alloc_flags_nofragment()'s zone test, precomputed: ZONE_NORMAL with a populated
    /// ZONE_DMA32 beneath it (or any ZONE_NORMAL on a single-node machine)
    pub nofragment_zone: Vec<bool>,
}

impl PhysMem {
    pub fn new(m: &MachineSpec) -> Result<PhysMem, String> {
        let lay = layout(m)?;
        let max_pfn = lay.iter().map(|z| z.start_pfn + z.spanned).max().unwrap_or(0);
        let frames = vec![0u64; max_pfn as usize];
        let npb = max_pfn.div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        let mut pm = PhysMem {
            frames,
            pageblocks: vec![MIGRATE_MOVABLE; npb],
            zones: vec![],
            nodes: vec![],
            pb_zone: vec![u8::MAX; npb],
            links: Links::new(max_pfn),
            mapcount: Default::default(),
            nr_cpus: m.total_cpus(),
            reserved_pages: 0,
            zonelists: vec![],
            nofragment_zone: vec![],
            pb_free_since_ms: vec![0; npb],
            now_ms: 0,
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
            let base = zl.start_pfn & !((1 << MAX_PAGE_ORDER) - 1);
            let span_from_base = zl.start_pfn + zl.spanned - base;
            let free_area = (0..NR_PAGE_ORDERS)
                .map(|o| FreeArea {
                    lists: std::array::from_fn(|_| BitTree::new(span_from_base.div_ceil(1 << o))),
                    nr_free: [0; NR_FREE_LISTS],
                })
                .collect();
            let zi = pm.zones.len();
            pm.zones.push(Zone {
                node: zl.node,
                idx: zl.idx,
                name: ZONE_NAMES[zl.idx],
                start_pfn: zl.start_pfn,
                spanned: zl.spanned,
                present,
                managed: present - zl.reserved,
                base,
                free_area,
                free_pages: 0,
                watermark: [0; 4],
                watermark_boost: 0,
                boosted: false,
                lowmem_reserve: [0; MAX_NR_ZONES],
                compact_cached_free_pfn: (zl.start_pfn + zl.spanned - 1) & !(PAGEBLOCK_NR_PAGES - 1),
                compact_cached_migrate_pfn: [zl.start_pfn; 2],
                compact_considered: 0,
                compact_defer_shift: 0,
                compact_order_failed: 0,
                compact_blockskip_flush: false,
                compact_init_migrate_pfn: 0,
                compact_init_free_pfn: 0,
            });
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
        Ok(pm)
    }

    /// memblock_free_all(): hand [s, e) to the buddy allocator in the largest aligned blocks.
    fn free_range(&mut self, zi: usize, s: u64, e: u64) {
        let mut pfn = s;
        while pfn < e {
            let mut order = MAX_PAGE_ORDER;
            while order > 0 && (pfn & ((1 << order) - 1) != 0 || pfn + (1 << order) > e) {
                order -= 1;
            }
            for p in pfn..pfn + (1 << order) {
                self.frames[p as usize] = 0;
            }
            self.free_one_page(zi, pfn, order, self.pb_mt(pfn));
            pfn += 1 << order;
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
    pub fn node_of(&self, pfn: u64) -> usize {
        self.zones[self.zone_of(pfn)].node
    }

    // ---- free lists ----
    #[inline]
    fn list_idx(z: &Zone, pfn: u64, order: u32) -> u64 {
        (pfn - z.base) >> order
    }
    fn add_to_free_list(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) {
        self.frames[pfn as usize] = make_free(order);
        let z = &mut self.zones[zi];
        let i = Self::list_idx(z, pfn, order);
        z.free_area[order as usize].lists[mt as usize].set(i);
        z.free_area[order as usize].nr_free[mt as usize] += 1;
    }
    fn del_from_free_list(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) {
        self.frames[pfn as usize] = 0;
        let z = &mut self.zones[zi];
        let i = Self::list_idx(z, pfn, order);
        debug_assert!(
            z.free_area[order as usize].lists[mt as usize].get(i),
            "pfn {pfn} order {order} mt {mt} not on list"
        );
        z.free_area[order as usize].lists[mt as usize].clear(i);
        z.free_area[order as usize].nr_free[mt as usize] -= 1;
    }
    /// The free list a free block is on: the lists are keyed by the pageblock's type at the
    /// time the block was added; blocks are moved whenever a pageblock is retyped, so the
    /// current pageblock type is the list.
    fn free_list_of(&self, zi: usize, pfn: u64, order: u32) -> u8 {
        let z = &self.zones[zi];
        let i = Self::list_idx(z, pfn, order);
        let mt = self.pb_mt(pfn);
        if (mt as usize) < NR_FREE_LISTS && z.free_area[order as usize].lists[mt as usize].get(i) {
            return mt;
        }
        (0..NR_FREE_LISTS as u8)
            .find(|&m| z.free_area[order as usize].lists[m as usize].get(i))
            .expect("free block on a list")
    }

    /// __free_one_page(): merge with free buddies up to MAX_PAGE_ORDER.
    pub fn free_one_page(&mut self, zi: usize, pfn: u64, order: u32, mt: u8) {
        let mut pfn = pfn;
        let mut order = order;
        self.zones[zi].free_pages += 1 << order;
        while order < MAX_PAGE_ORDER {
            let buddy = pfn ^ (1 << order);
            if !self.zones[zi].spans(buddy) {
                break;
            }
            let bf = self.frames[buddy as usize];
            if !(is_free_head(bf) && free_order(bf) == order) {
                break;
            }
            let mut buddy_mt = mt;
            if order >= PAGEBLOCK_ORDER {
                buddy_mt = self.pb_mt(buddy);
                if mt != buddy_mt && (mt >= MIGRATE_PCPTYPES || buddy_mt >= MIGRATE_PCPTYPES) {
                    break;
                }
            }
            let on = self.free_list_of(zi, buddy, order);
            self.del_from_free_list(zi, buddy, order, on);
            if order >= PAGEBLOCK_ORDER && buddy_mt != mt {
                self.set_pb_mt(buddy, mt);
            }
            pfn &= buddy;
            order += 1;
        }
        if order >= PAGEBLOCK_ORDER {
            // a whole pageblock is free again: page reporting may hand it to the host
            let first = (pfn >> PAGEBLOCK_ORDER) as usize;
            for pb in first..first + (1usize << (order - PAGEBLOCK_ORDER)) {
                self.pb_free_since_ms[pb] = self.now_ms;
            }
        }
        self.add_to_free_list(zi, pfn, order, mt);
    }

    /// Pageblocks of [pfn, pfn + 2^order) the host had taken back (wholly free for at
    /// least PAGE_REPORTING_DELAY): count them and mark them backed.
    pub fn take_reported(&mut self, pfn: u64, order: u32) -> u64 {
        const BACKED: u32 = u32::MAX;
        const PAGE_REPORTING_DELAY_MS: u32 = 2000;
        let first = (pfn >> PAGEBLOCK_ORDER) as usize;
        let last = ((pfn + (1 << order) - 1) >> PAGEBLOCK_ORDER) as usize;
        let mut n = 0;
        for pb in first..=last {
            let since = self.pb_free_since_ms[pb];
            if since != BACKED {
                if self.now_ms.saturating_sub(since) >= PAGE_REPORTING_DELAY_MS {
                    n += 1;
                }
                self.pb_free_since_ms[pb] = BACKED;
            }
        }
        n
    }

    /// expand(): split a block of order `high` down to `low`, freeing the upper halves.
    fn expand(&mut self, zi: usize, pfn: u64, low: u32, high: u32, mt: u8) {
        let mut high = high;
        while high > low {
            high -= 1;
            let half = pfn + (1 << high);
            self.add_to_free_list(zi, half, high, mt);
        }
    }

    /// Take a block of exactly `order` off the lists: del from list, expand, account.
    fn page_del_and_expand(&mut self, zi: usize, pfn: u64, order: u32, high: u32, mt: u8) {
        self.del_from_free_list(zi, pfn, high, mt);
        self.expand(zi, pfn, order, high, mt);
        self.zones[zi].free_pages -= 1 << order;
    }

    fn first_free(&self, zi: usize, order: u32, mt: u8) -> Option<u64> {
        let z = &self.zones[zi];
        z.free_area[order as usize].lists[mt as usize].first().map(|i| z.base + (i << order))
    }

    /// __rmqueue_smallest()
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
            if tag(f) == TAG_ANON {
                movable += 1;
            }
            p += 1;
        }
        Some((start, free, movable))
    }

    /// __move_freepages_block(): move every free block of the pageblock to `to`'s lists.
    fn move_freepages_block(&mut self, zi: usize, start: u64, to: u8) {
        let end = start + PAGEBLOCK_NR_PAGES;
        let mut p = start;
        while p < end {
            let f = self.frames[p as usize];
            if is_free_head(f) {
                let o = free_order(f);
                let on = self.free_list_of(zi, p, o);
                if on != to {
                    self.del_from_free_list(zi, p, o, on);
                    self.add_to_free_list(zi, p, o, to);
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
            self.del_from_free_list(zi, pfn, cur, block_mt);
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
        if let Some(p) = self.rmqueue_smallest(zi, order, mt) {
            return Some(p);
        }
        let fallback = match self.rmqueue_claim(zi, order, mt, alloc_flags, boost_factor) {
            Some(x) => Some(x),
            None if alloc_flags & ALLOC_NOFRAGMENT == 0 => self.rmqueue_steal(zi, order, mt),
            None => None,
        };
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

    /// __zone_watermark_ok()
    pub fn zone_watermark_ok(
        &self,
        zi: usize,
        order: u32,
        mark: u64,
        highest_zoneidx: usize,
        alloc_flags: AllocFlags,
    ) -> bool {
        let z = &self.zones[zi];
        let mut free = z.free_pages as i64 - ((1i64 << order) - 1);
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
    pub fn zonelist(&self, nid: usize, highest: usize, thisnode: bool) -> std::rc::Rc<[usize]> {
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

    /// get_page_from_freelist(): walk the zonelist, check the watermark, take a block.
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
                    && self.nodes.len() > 1
                    && zi != preferred
                    && self.zones[zi].node != self.zones[preferred].node
                {
                    // remote node: rather fragment locally than go remote
                    flags &= !ALLOC_NOFRAGMENT;
                    restart = true;
                    break;
                }
                let mark = if flags & ALLOC_NO_WATERMARKS != 0 {
                    0
                } else {
                    self.zones[zi].wmark((flags & ALLOC_WMARK_MASK) as usize)
                };
                if !self.zone_watermark_ok(zi, order, mark, highest, flags) {
                    continue;
                }
                if let Some(pfn) = self.rmqueue(zi, order, mt, flags, boost_factor, trace) {
                    let z = &self.zones[zi];
                    let ev = match z.idx {
                        ZONE_DMA => Ev::PGALLOC_DMA,
                        ZONE_DMA32 => Ev::PGALLOC_DMA32,
                        ZONE_MOVABLE => Ev::PGALLOC_MOVABLE,
                        _ => Ev::PGALLOC_NORMAL,
                    };
                    vm.add(ev, 1 << order);
                    for p in pfn..pfn + (1 << order) {
                        self.frames[p as usize] = make_kernel(order, p == pfn);
                    }
                    return Some((Pfn(pfn), zi));
                }
            }
            if restart {
                continue;
            }
            if flags & ALLOC_NOFRAGMENT != 0 && !defrag_mode {
                flags &= !ALLOC_NOFRAGMENT;
                continue;
            }
            return None;
        }
    }

    /// __isolate_free_page(): take the free block at `pfn` off the buddy lists for the
    /// compaction free scanner, if the zone stays above its min watermark (+ the block).
    /// Returns the block's order; its frames read as free tails until the caller uses or
    /// returns them (`free_one_page`). Blocks of order >= pageblock_order - 1 make their
    /// pageblocks MOVABLE.
    pub fn isolate_free_page(&mut self, zi: usize, pfn: u64) -> Option<u32> {
        let order = free_order(self.frames[pfn as usize]);
        let mark = self.zones[zi].watermark[WMARK_MIN] + (1 << order);
        if !self.zone_watermark_ok(zi, 0, mark, 0, 0) {
            return None;
        }
        let on = self.free_list_of(zi, pfn, order);
        self.del_from_free_list(zi, pfn, order, on);
        self.zones[zi].free_pages -= 1 << order;
        if order >= PAGEBLOCK_ORDER - 1 {
            let end = pfn + (1 << order);
            let mut pb = pfn;
            while pb < end {
                let mt = self.pb_mt(pb);
                if mt != MIGRATE_ISOLATE && mt != MIGRATE_HIGHATOMIC {
                    self.set_pb_mt(pb, MIGRATE_MOVABLE);
                }
                pb += PAGEBLOCK_NR_PAGES;
            }
        }
        Some(order)
    }

    /// Return a block to the buddy allocator (__free_pages): frames must be owned by the caller.
    pub fn free_pages(&mut self, pfn: Pfn, order: u32, vm: &mut VmStat) {
        let pfn = pfn.0;
        let zi = self.zone_of(pfn);
        for p in pfn..pfn + (1 << order) {
            self.frames[p as usize] = 0;
        }
        vm.add(Ev::PGFREE, 1 << order);
        let mt = self.pb_mt(pfn);
        self.free_one_page(zi, pfn, order, mt);
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
            + self.links.heap_bytes()
            + self
                .zones
                .iter()
                .map(|z| {
                    z.free_area.iter().map(|fa| fa.lists.iter().map(|l| l.heap_bytes()).sum::<usize>()).sum::<usize>()
                })
                .sum::<usize>()
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
        self.rec.vm.count(Ev::COMPACT_STALL);
        let page = self.get_page_from_freelist(gfp, order, alloc_flags, zonelist);
        if let Some((pfn, zi)) = page {
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
                    for q in p + 1..p + (1 << o) {
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
        assert_eq!(pm.total_free(), free0 - 1);
        check_counts(&pm);
        // the order-10 block was split: one free block at each order 0..9 appears
        pm.free_pages(Pfn(p), 0, &mut vm);
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
