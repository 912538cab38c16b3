//! Swap devices and swap slots (mm/swapfile.c, mm/swap.h): swapon of the machine's
//! devices with priorities, the swap map (one byte per slot: count and SWAP_HAS_CACHE),
//! 512-slot clusters (256 without CONFIG_THP_SWAP) with per-order free / nonfull / frag /
//! full lists and a per-CPU "next" cluster per order (cluster_alloc_swap_entry,
//! alloc_swap_scan_cluster, relocate_cluster), the priority list walk of
//! swap_alloc_slow/get_swap_pages, swap counts (swap_duplicate / swap_free), the zeromap,
//! and vm_swap_full(). What each slot holds is kept too (a 16-bit content, see
//! content.rs), so that a swapped page comes back exactly as it left.
//!
//! Global slot numbers: device `d` owns [base, base + its rounded size); PTE swap
//! entries carry the global number (29 bits: up to 2 TiB of swap in total).

use crate::blk_wbt::RqWb;
use crate::consts::*;
use crate::kernel::Kernel;
use crate::locking::{LockId, SimLock};
use crate::mm_types::Pfn;
use crate::trace::trace_event;
use crate::zram::Zram;
use std::collections::BTreeMap;
use thplab_workload::costs::{CostProfile, DeviceCosts};
use thplab_workload::machine::{SwapKind, SwapSpec};

/// swap_map byte: bits 0..4 the map count (swap PTEs referencing the slot), bit 5 the
/// PG_readahead of the folio cached for it (swap_ra_hit), bit 6 SWAP_HAS_CACHE, bit 7
/// the slot's zeromap bit (si->zeromap).
pub const SWAP_COUNT_MASK: u8 = 0x1f;
pub const SWAP_MAP_BAD: u8 = 0x1f;
pub const SWAP_READAHEAD: u8 = 0x20;
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_ZEROMAP: u8 = 0x80;
/// SWAP_NR_ORDERS = PMD_ORDER + 1
pub const NR_ORDERS: usize = 10;
/// 29-bit PTE payload
pub const MAX_SWAP_SLOTS: u64 = 1 << 29;

// cluster lists: 0 free, 1..=10 nonfull[order], 11..=20 frag[order], 21 full
const L_FREE: u8 = 0;
const L_NONFULL: u8 = 1;
const L_FRAG: u8 = 11;
const L_FULL: u8 = 21;
const NR_LISTS: usize = 22;
const L_NONE: u8 = u8::MAX;
const NIL: u32 = u32::MAX;

/// struct swap_cluster_info: used slots, the order it serves, the list it is on.
#[derive(Clone, Copy, Debug)]
pub struct Cluster {
    pub count: u16,
    pub order: u8,
    pub list: u8,
}

/// The per-device cluster lists (FIFO, like the kernel's list_head lists).
#[derive(Clone, Debug)]
struct CLists {
    link: Vec<[u32; 2]>,
    ends: [(u32, u32, u64); NR_LISTS],
}
impl CLists {
    fn new(n: usize) -> CLists {
        CLists { link: vec![[NIL, NIL]; n], ends: [(NIL, NIL, 0); NR_LISTS] }
    }
    fn push_tail(&mut self, l: u8, c: u32) {
        let (h, t, n) = self.ends[l as usize];
        self.link[c as usize] = [t, NIL];
        if t != NIL {
            self.link[t as usize][1] = c;
        }
        self.ends[l as usize] = (if h == NIL { c } else { h }, c, n + 1);
    }
    fn remove(&mut self, l: u8, c: u32) {
        let [p, nx] = self.link[c as usize];
        let (mut h, mut t, n) = self.ends[l as usize];
        if p != NIL {
            self.link[p as usize][1] = nx;
        } else {
            h = nx;
        }
        if nx != NIL {
            self.link[nx as usize][0] = p;
        } else {
            t = p;
        }
        self.link[c as usize] = [NIL, NIL];
        self.ends[l as usize] = (h, t, n - 1);
    }
    fn head(&self, l: u8) -> Option<u32> {
        let h = self.ends[l as usize].0;
        (h != NIL).then_some(h)
    }
    fn len(&self, l: u8) -> u64 {
        self.ends[l as usize].2
    }
}

/// One swap device (struct swap_info_struct).
#[derive(Clone)]
pub struct SwapDev {
    pub name: String,
    pub kind: SwapKind,
    pub prio: i32,
    /// first global slot
    pub base: u32,
    /// pages of the device, the header page included (maxpages)
    pub pages: u32,
    /// SWP_SOLIDSTATE (non-rotational)
    pub nonrot: bool,
    /// SWP_SYNCHRONOUS_IO (zram, pmem/brd)
    pub sync_io: bool,
    /// SWP_BLKDEV (a block device, not a swap file)
    pub blkdev: bool,
    /// SWAPFILE_CLUSTER
    pub cl_nr: u32,
    pub map: Vec<u8>,
    /// what each slot holds (content.rs)
    pub data: Vec<u16>,
    pub clusters: Vec<Cluster>,
    lists: CLists,
    /// slots in use (si->inuse_pages)
    pub inuse: u64,
    /// si->global_cluster->next[order] for rotational devices (0 = none)
    global_next: [u32; NR_ORDERS],
    pub zram: Option<Zram>,
    /// si->lock: the cluster lists (and, on a rotational device, global_cluster_lock)
    pub lock: SimLock,
    pub io: DeviceCosts,
    /// the device transfers requests one after another: busy until this time (ns)
    pub busy_until: u64,
    /// completion times of the requests in flight, oldest first (the block queue)
    pub inflight: std::collections::VecDeque<u64>,
    /// slot after the last request, for sequential detection
    pub last_end: u32,
    /// the request queue's writeback throttling (blk_wbt.rs), when on
    pub wbt: Option<RqWb>,
}

impl SwapDev {
    /// Usable slots (SwapTotal in pages): all but the header and the round-up tail.
    pub fn usable(&self) -> u64 {
        self.pages as u64 - 1
    }
    fn cluster_end(&self, ci: u32) -> u32 {
        (ci + 1) * self.cl_nr
    }
    fn move_to(&mut self, ci: u32, l: u8) {
        let cur = self.clusters[ci as usize].list;
        if cur == l {
            return;
        }
        if cur != L_NONE {
            self.lists.remove(cur, ci);
        }
        self.lists.push_tail(l, ci);
        self.clusters[ci as usize].list = l;
    }
    fn isolate(&mut self, ci: u32) {
        let cur = self.clusters[ci as usize].list;
        if cur != L_NONE {
            self.lists.remove(cur, ci);
            self.clusters[ci as usize].list = L_NONE;
        }
    }
    /// relocate_cluster(): put a cluster on the list its count says.
    fn relocate(&mut self, ci: u32, was: u8) {
        let c = self.clusters[ci as usize];
        if c.count == 0 {
            self.clusters[ci as usize].order = 0;
            self.move_to(ci, L_FREE);
        } else if c.count as u32 == self.cl_nr {
            self.move_to(ci, L_FULL);
        } else if (L_FRAG..L_FULL).contains(&was) {
            self.move_to(ci, L_FRAG + c.order);
        } else {
            self.move_to(ci, L_NONFULL + c.order);
        }
    }
    /// alloc_swap_scan_cluster(): `nr` free, naturally aligned slots in cluster `ci` from
    /// `start`. The cluster must be isolated or on a list; it is relocated afterwards.
    fn scan_cluster(&mut self, ci: u32, start: u32, order: u32) -> Option<u32> {
        let nr = 1u32 << order;
        let end = self.cluster_end(ci);
        let was = self.clusters[ci as usize].list;
        let mut off = start.max(ci * self.cl_nr).next_multiple_of(nr);
        let mut found = None;
        while off + nr <= end {
            let run = &self.map[off as usize..(off + nr) as usize];
            match run.iter().position(|&m| m != 0) {
                None => {
                    found = Some(off);
                    break;
                }
                Some(p) => off = (off + p as u32 + 1).next_multiple_of(nr),
            }
        }
        match found {
            Some(o) => {
                for s in o..o + nr {
                    self.map[s as usize] = SWAP_HAS_CACHE;
                }
                let c = &mut self.clusters[ci as usize];
                if c.count == 0 {
                    c.order = order as u8;
                }
                c.count += nr as u16;
                self.inuse += nr as u64;
                self.relocate(ci, was);
                Some(o)
            }
            None => {
                // a nonfull cluster that cannot serve this order goes to frag[order]
                if self.clusters[ci as usize].count as u32 != self.cl_nr {
                    let o = self.clusters[ci as usize].order;
                    self.move_to(ci, L_FRAG + o);
                } else {
                    self.relocate(ci, was);
                }
                None
            }
        }
    }
    /// cluster_is_usable()
    fn usable_for(&self, ci: u32, order: u32) -> bool {
        let c = self.clusters[ci as usize];
        if c.count as u32 == self.cl_nr {
            return false;
        }
        order == 0 || c.count == 0 || c.order as u32 == order
    }
}

/// All swap devices, the per-CPU next clusters and the swap cache.
#[derive(Clone, Default)]
pub struct SwapState {
    pub devs: Vec<SwapDev>,
    /// per CPU, per order: (device, offset) of the next slot to try (percpu_swap_cluster)
    pub percpu_next: Vec<[(u8, u32); NR_ORDERS]>,
    /// swap cache: global slot -> the page caching it
    pub cache: BTreeMap<u32, u32>,
    /// swap cache: folio head -> (first slot, nr)
    pub cache_of: BTreeMap<u32, (u32, u32)>,
    /// swapin_readahead_hits and the previous fault's slot (swapin_nr_pages)
    pub ra_hits: u64,
    pub ra_prev: u32,
    /// requeue counter for devices of the same priority
    pub rr: u64,
    /// each swap cluster's ci->lock (swap_map and swap table of its slots), by global
    /// cluster number; created at first use
    pub cluster_locks: BTreeMap<u32, SimLock>,
    /// PG_writeback: swap-cache folios (by head) whose asynchronous write completes at
    /// the given time (ns)
    pub writeback: BTreeMap<u32, u64>,
    /// current->plug of the task writing swap (page_io.rs: blk_start_plug .. blk_finish_plug)
    pub plug: crate::blk_core::BlkPlug,
}

impl SwapState {
    pub fn new(specs: &[SwapSpec], costs: &CostProfile, thp_swap: bool, nr_cpus: u32) -> Result<SwapState, String> {
        let mut devs = vec![];
        let mut base = 0u64;
        // SWAPFILE_CLUSTER: HPAGE_PMD_NR with CONFIG_THP_SWAP, else 256
        let cl_nr = if thp_swap { HPAGE_PMD_NR as u32 } else { 256 };
        let mut least = -1i32;
        let mut n_of = BTreeMap::new();
        for (i, s) in specs.iter().enumerate() {
            let pages = (s.size.0 / PAGE_SIZE) as u32;
            let rounded = (pages as u64).next_multiple_of(HPAGE_PMD_NR);
            if base + rounded > MAX_SWAP_SLOTS {
                return Err(format!(
                    "machine.swap[{i}]: the model holds at most 2T of swap in total (29-bit swap entries)"
                ));
            }
            let (nonrot, sync_io, blkdev) = match s.kind {
                SwapKind::Zram | SwapKind::Pmem => (true, true, true),
                SwapKind::Ssd => (true, false, true),
                SwapKind::Disk => (false, false, true),
                SwapKind::File => (false, false, false),
            };
            let nonrot = s.rotational.map_or(nonrot, |r| !r);
            let k = n_of.entry(format!("{:?}", s.kind)).or_insert(0u32);
            let name = match s.kind {
                SwapKind::Zram => s.path.clone().unwrap_or_else(|| format!("/dev/zram{k}")),
                SwapKind::Pmem => format!("/dev/pmem{k}"),
                SwapKind::Ssd => format!("/dev/nvme{k}n1p2"),
                SwapKind::Disk => format!("/dev/sd{}2", (b'a' + (*k as u8 % 26)) as char),
                SwapKind::File => s.path.clone().unwrap_or_else(|| format!("/swapfile{k}")),
            };
            *k += 1;
            let prio = s.priority.unwrap_or_else(|| {
                least -= 1;
                least
            });
            let io = match s.kind {
                SwapKind::Zram => DeviceCosts {
                    read_latency_ns: 0,
                    write_latency_ns: 0,
                    random_penalty_ns: 0,
                    read_mb_per_s: 0,
                    write_mb_per_s: 0,
                    queue_depth: 1,
                    // zram is bio-based (no request queue): no split, no wbt
                    max_sectors_kb: 0,
                    max_segments: 0,
                    wbt_lat_usec: 0,
                    write_cache: false,
                    write_segment_ns: 0,
                },
                SwapKind::Pmem => costs.pmem.clone(),
                SwapKind::Ssd => costs.ssd.clone(),
                SwapKind::Disk => costs.disk.clone(),
                SwapKind::File => costs.file.clone(),
            };
            let zram = (s.kind == SwapKind::Zram).then(|| {
                let alg = s.comp_algorithm.clone().unwrap_or_else(|| "lzo-rle".into());
                let c = costs.zram.get(&alg).or_else(|| costs.zram.get("lzo-rle")).cloned().unwrap_or_default();
                (alg, c)
            });
            let nslots = (rounded / cl_nr as u64) as usize * cl_nr as usize;
            let zram = zram.map(|(alg, c)| Zram::new(alg, c, nslots));
            let mut d = SwapDev {
                name,
                kind: s.kind.clone(),
                prio,
                base: base as u32,
                pages,
                nonrot,
                sync_io,
                blkdev,
                cl_nr,
                map: vec![0; nslots],
                data: vec![0; nslots],
                clusters: vec![Cluster { count: 0, order: 0, list: L_NONE }; nslots / cl_nr as usize],
                lists: CLists::new(nslots / cl_nr as usize),
                inuse: 0,
                global_next: [0; NR_ORDERS],
                zram,
                lock: SimLock::default(),
                busy_until: 0,
                inflight: Default::default(),
                last_end: u32::MAX,
                wbt: if sync_io { None } else { RqWb::new(io.wbt_lat_usec, io.write_cache, io.queue_depth) },
                io,
            };
            // setup_clusters(): the header page and the slots past maxpages are bad;
            // clusters holding them serve order 0 only (nonfull[0]).
            let bad: Vec<u32> = std::iter::once(0).chain(pages..nslots as u32).collect();
            for b in bad {
                d.map[b as usize] = SWAP_MAP_BAD;
                d.clusters[(b / cl_nr) as usize].count += 1;
            }
            for ci in 0..d.clusters.len() as u32 {
                let c = d.clusters[ci as usize];
                let l = if c.count == 0 {
                    L_FREE
                } else if c.count as u32 == cl_nr {
                    L_FULL
                } else {
                    L_NONFULL
                };
                d.move_to(ci, l);
            }
            devs.push(d);
            base += rounded;
        }
        Ok(SwapState { devs, percpu_next: vec![[(0, 0); NR_ORDERS]; nr_cpus.max(1) as usize], ..Default::default() })
    }

    /// The device holding global slot `slot`.
    #[inline]
    pub fn dev_of(&self, slot: u32) -> usize {
        match self.devs.len() {
            1 => 0,
            _ => self.devs.partition_point(|d| d.base <= slot) - 1,
        }
    }
    #[inline]
    pub fn map(&self, slot: u32) -> u8 {
        let d = &self.devs[self.dev_of(slot)];
        d.map[(slot - d.base) as usize]
    }
    #[inline]
    pub fn map_mut(&mut self, slot: u32) -> &mut u8 {
        let di = self.dev_of(slot);
        let d = &mut self.devs[di];
        &mut d.map[(slot - d.base) as usize]
    }
    #[inline]
    pub fn data(&self, slot: u32) -> u16 {
        let d = &self.devs[self.dev_of(slot)];
        d.data[(slot - d.base) as usize]
    }
    /// total_swap_pages
    pub fn total_pages(&self) -> u64 {
        self.devs.iter().map(|d| d.usable()).sum()
    }
    /// get_nr_swap_pages(): free swap slots
    pub fn nr_free(&self) -> u64 {
        self.devs.iter().map(|d| d.usable() - d.inuse).sum()
    }
    /// vm_swap_full(): more than half of swap is in use
    pub fn vm_swap_full(&self) -> bool {
        self.nr_free() * 2 < self.total_pages()
    }
    pub fn heap_bytes(&self) -> usize {
        self.devs.iter().map(|d| d.map.len() * 3 + d.clusters.len() * 12).sum::<usize>()
            + (self.cache.len() + self.cache_of.len()) * 48
    }
}

impl Kernel {
    /// folio_alloc_swap() -> swap_alloc_fast / swap_alloc_slow: `1 << order` contiguous,
    /// naturally aligned slots marked SWAP_HAS_CACHE. Large allocations need
    /// CONFIG_THP_SWAP and a block device (a swap file refuses them; a rotational device
    /// takes them); only the first device of the avail list is tried for them.
    /// Returns the first global slot.
    pub fn get_swap_pages(&mut self, order: u32) -> Option<u32> {
        let slot = self.swap_alloc(order);
        trace_event!(
            self,
            thplab_swap_alloc,
            order = order,
            slot = slot.map_or(-1, |s| s as i64),
            dev = slot.map(|s| self.swap.devs[self.swap.dev_of(s)].name.clone()),
        );
        slot
    }

    /// swap_alloc_fast() then swap_alloc_slow().
    fn swap_alloc(&mut self, order: u32) -> Option<u32> {
        if order > 0 && !self.cfg.thp_swap {
            return None;
        }
        let cpu = (self.clock.cpu as usize).min(self.swap.percpu_next.len().saturating_sub(1));
        // fast path: this CPU's cluster for the order (nonrot devices)
        if !self.swap.percpu_next.is_empty() {
            let (di, off) = self.swap.percpu_next[cpu][order as usize];
            if off != 0 && (di as usize) < self.swap.devs.len() {
                let d = &mut self.swap.devs[di as usize];
                let ci = off / d.cl_nr;
                if d.usable_for(ci, order) {
                    if let Some(o) = d.scan_cluster(ci, off, order) {
                        return Some(self.swap_alloc_done(di as usize, o, order, cpu));
                    }
                }
            }
        }
        // the avail list by priority; equal priorities take turns (plist_requeue)
        let mut order_devs: Vec<usize> = (0..self.swap.devs.len()).collect();
        let rr = self.swap.rr;
        order_devs.sort_by_key(|&i| {
            let same = self.swap.devs.iter().filter(|d| d.prio == self.swap.devs[i].prio).count() as u64;
            let rank = self.swap.devs[..i].iter().filter(|d| d.prio == self.swap.devs[i].prio).count() as u64;
            (std::cmp::Reverse(self.swap.devs[i].prio), (rank + same - rr % same.max(1)) % same.max(1))
        });
        self.swap.rr += 1;
        for di in order_devs {
            let d = &self.swap.devs[di];
            // a full device is off the avail list (del_from_avail_list)
            if d.inuse >= d.usable() {
                continue;
            }
            // cluster_alloc_swap_entry(): a swap file (not SWP_BLKDEV) cannot take large
            // entries; a rotational block device can (under global_cluster_lock)
            let refused = order > 0 && (!d.blkdev || d.cl_nr < (1 << order));
            if !refused {
                // si->lock for the cluster lists (global_cluster_lock on a rotational device)
                self.lock_acquire(LockId::SwapDev(di), 1);
                if let Some(o) = self.cluster_alloc_swap_entry(di, order) {
                    return Some(self.swap_alloc_done(di, o, order, cpu));
                }
            }
            // swap_alloc_slow(): a large allocation tries only the first device of the
            // avail list ("if (order) return false"): the caller splits the folio
            if order > 0 {
                return None;
            }
        }
        None
    }

    /// The allocation's end (alloc_swap_scan_cluster under the cluster lock): remember
    /// the next slot for this CPU (or the device, when rotational).
    fn swap_alloc_done(&mut self, di: usize, off: u32, order: u32, cpu: usize) -> u32 {
        let d = &mut self.swap.devs[di];
        let nr = 1u32 << order;
        let next = if !(off + nr).is_multiple_of(d.cl_nr) { off + nr } else { 0 };
        if d.nonrot {
            self.swap.percpu_next[cpu][order as usize] = (di as u8, next);
        } else {
            d.global_next[order as usize] = next;
        }
        let slot = d.base + off;
        self.swap_cluster_lock(slot, nr as u64);
        slot
    }

    /// Take the ci->lock of the cluster holding `slot` for `items` slots' work.
    pub fn swap_cluster_lock(&mut self, slot: u32, items: u64) {
        let cl_nr = self.swap.devs[self.swap.dev_of(slot)].cl_nr;
        self.lock_acquire(LockId::SwapCluster(slot / cl_nr), items);
    }

    /// cluster_alloc_swap_entry() (v6.14+ order: next cluster, nonfull[order], a free
    /// cluster, frag[order], then for order 0 the higher orders' frag and nonfull).
    fn cluster_alloc_swap_entry(&mut self, di: usize, order: u32) -> Option<u32> {
        let d = &mut self.swap.devs[di];
        if !d.nonrot {
            let off = d.global_next[order as usize];
            if off != 0 {
                let ci = off / d.cl_nr;
                if d.usable_for(ci, order) {
                    if let Some(o) = d.scan_cluster(ci, off, order) {
                        return Some(o);
                    }
                }
            }
        }
        let pmd = order as usize >= NR_ORDERS - 1;
        if !pmd {
            while let Some(ci) = d.lists.head(L_NONFULL + order as u8) {
                d.isolate(ci);
                d.clusters[ci as usize].list = L_NONFULL + order as u8;
                d.lists.push_tail(L_NONFULL + order as u8, ci);
                if let Some(o) = d.scan_cluster(ci, 0, order) {
                    return Some(o);
                }
            }
        }
        if let Some(ci) = d.lists.head(L_FREE) {
            if let Some(o) = d.scan_cluster(ci, 0, order) {
                return Some(o);
            }
        }
        if !pmd {
            let n = d.lists.len(L_FRAG + order as u8);
            for _ in 0..n {
                let Some(ci) = d.lists.head(L_FRAG + order as u8) else { break };
                // rotate: a frag cluster that fails stays on frag, at the tail
                d.isolate(ci);
                d.clusters[ci as usize].list = L_FRAG + order as u8;
                d.lists.push_tail(L_FRAG + order as u8, ci);
                if let Some(o) = d.scan_cluster(ci, 0, order) {
                    return Some(o);
                }
            }
        }
        if order > 0 {
            return None;
        }
        for o in 1..NR_ORDERS as u8 {
            for l in [L_FRAG + o, L_NONFULL + o] {
                let n = d.lists.len(l);
                for _ in 0..n {
                    let Some(ci) = d.lists.head(l) else { break };
                    d.isolate(ci);
                    d.clusters[ci as usize].list = l;
                    d.lists.push_tail(l, ci);
                    if let Some(s) = d.scan_cluster(ci, 0, 0) {
                        return Some(s);
                    }
                }
            }
        }
        None
    }

    /// Release one slot (swap_entries_free / swap_range_free): the cluster count drops,
    /// the zeromap bit and zram's copy go.
    fn swap_release_slot(&mut self, slot: u32) {
        let di = self.swap.dev_of(slot);
        let d = &mut self.swap.devs[di];
        let off = slot - d.base;
        let content = d.data[off as usize];
        d.map[off as usize] = 0;
        d.data[off as usize] = 0;
        let ci = off / d.cl_nr;
        let was = d.clusters[ci as usize].list;
        d.clusters[ci as usize].count -= 1;
        d.inuse -= 1;
        let emptied = d.clusters[ci as usize].count == 0;
        d.relocate(ci, was);
        if emptied {
            // partial_free_cluster / free_cluster: onto the free list under si->lock
            self.lock_acquire(LockId::SwapDev(di), 1);
        }
        let d = &mut self.swap.devs[di];
        // zram frees what it holds for the slot (nothing for a zeromap slot or a failed write,
        // but the notify's visit of the entry all the same)
        if let Some(z) = &mut d.zram {
            let ns = z.notify_free(off, content);
            self.charge(ns);
        }
        if self.swap.devs[di].zram.is_some() {
            self.zram_pool_fit(di);
        }
    }

    /// swap_duplicate(): one more swap PTE references the slot.
    #[inline]
    pub fn swap_duplicate(&mut self, slot: u32) {
        let m = self.swap.map_mut(slot);
        debug_assert!(*m & SWAP_COUNT_MASK < SWAP_MAP_BAD - 1);
        *m += 1;
    }

    /// swap_free() / swap_put_entries_direct(): a swap PTE referencing `slot` is gone.
    /// With no cache and no references left, the slot is released.
    pub fn swap_free(&mut self, slot: u32) {
        self.swap_cluster_lock(slot, 1);
        self.swap_put_entry(slot);
    }

    /// swap_free_nr(): `nr` entries from `slot` of one cluster, under one ci->lock
    /// (cluster_swap_free_nr).
    pub fn swap_free_nr(&mut self, slot: u32, nr: u32) {
        self.swap_cluster_lock(slot, nr as u64);
        for s in slot..slot + nr {
            self.swap_put_entry(s);
        }
    }

    /// One reference to `slot` dropped, the cluster lock held.
    fn swap_put_entry(&mut self, slot: u32) {
        let m = self.swap.map_mut(slot);
        debug_assert!(*m & SWAP_COUNT_MASK > 0, "swap_free of an unused slot {slot}");
        *m -= 1;
        let left = *m;
        if left & SWAP_COUNT_MASK == 0 && left & SWAP_HAS_CACHE == 0 {
            self.swap_release_slot(slot);
        }
    }

    /// Drop SWAP_HAS_CACHE from a slot (the folio left the swap cache, or a never-used
    /// allocation is undone: put_swap_folio).
    pub fn swapcache_clear(&mut self, slot: u32) {
        let m = self.swap.map_mut(slot);
        *m &= !(SWAP_HAS_CACHE | SWAP_READAHEAD);
        if *m & SWAP_COUNT_MASK == 0 {
            self.swap_release_slot(slot);
        }
    }

    /// free_swap_and_cache(): a swap PTE is zapped (swap_free_ns; swap_put_cached_ns when a
    /// folio in the swap cache holds the slot). When only the swap cache
    /// still holds the slot and the cached folio is not mapped, the folio is reclaimed at
    /// once (__try_to_reclaim_swap: remove_mapping_ns) — unless it is still under writeback
    /// (folio_swapcache_freeable): then it stays in the swap cache for reclaim to find.
    pub fn free_swap_and_cache(&mut self, slot: u32) {
        // free_swap_and_cache_nr(): swap_entries_put_map_nr() drops the count; a slot the
        // swap cache still holds is freed later, with its folio's others (put_swap_folio)
        let cached = self.swap.map(slot) & SWAP_HAS_CACHE != 0;
        self.charge(match (cached, self.costs.swap_put_cached_ns) {
            (true, Some(ns)) => ns,
            _ => self.costs.swap_free_ns,
        });
        self.swap_free(slot);
        let m = self.swap.map(slot);
        if m & SWAP_HAS_CACHE != 0 && m & SWAP_COUNT_MASK == 0 {
            if let Some(&pfn) = self.swap.cache.get(&slot) {
                let head = self.folio_head(pfn as u64);
                if !self.folio_mapped(head)
                    && !crate::mm_types::isolated(self.pm.frames[head as usize])
                    && !self.folio_under_writeback(head)
                {
                    let (first, nr) = self.swap.cache_of[&(head as u32)];
                    let all_unused = (first..first + nr).all(|s| self.swap.map(s) & SWAP_COUNT_MASK == 0);
                    if all_unused {
                        self.charge(self.costs.remove_mapping_ns);
                        self.delete_from_swap_cache(head);
                        self.free_folio(Pfn(head));
                    }
                }
            }
        }
    }

    /// SWP_SYNCHRONOUS_IO of the device holding `slot` (zram, pmem)
    pub fn swap_is_sync(&self, slot: u32) -> bool {
        self.swap.devs[self.swap.dev_of(slot)].sync_io
    }
    /// __swap_count(): the swap PTEs referencing `slot`
    pub fn swap_count(&self, slot: u32) -> u8 {
        self.swap.map(slot) & SWAP_COUNT_MASK
    }
    /// SWAP_HAS_CACHE: a folio in the swap cache holds `slot`
    pub fn swap_has_cache(&self, slot: u32) -> bool {
        self.swap.map(slot) & SWAP_HAS_CACHE != 0
    }
    /// get_nr_swap_pages()
    pub fn nr_swap_pages(&self) -> u64 {
        self.swap.nr_free()
    }
    /// vm_swap_full()
    pub fn vm_swap_full(&self) -> bool {
        self.swap.vm_swap_full()
    }
    /// total_swap_pages
    pub fn total_swap_pages(&self) -> u64 {
        self.swap.total_pages()
    }
    /// NR_SWAPCACHE: pages in the swap cache
    pub fn nr_swapcache(&self) -> u64 {
        self.swap.cache.len() as u64
    }
}
