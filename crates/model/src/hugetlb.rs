//! The hugetlb pool of the 2 MiB hstate (mm/hugetlb.c): `vm.nr_hugepages` grows it by
//! fresh order-9 allocations from the buddy allocator and shrinks it by freeing pool
//! pages back (set_max_huge_pages). Pool pages are compound order-9 folios that are on
//! no LRU list and that compaction does not move (outside alloc_contig_range, which the
//! model does not have): the frames are `make_hugetlb` (mm_types.rs). No hugetlbfs
//! mappings are modelled, so every pool page is free (no reservations, no surplus).

use crate::consts::*;
use crate::gfp::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::vmstat::Ev;

/// struct hstate for the 2 MiB size: the per-node pool and the round-robin cursors.
#[derive(Clone, Default)]
pub struct Hstate {
    /// hugepage_freelists[nid]: head pfns, the most recently enqueued last (the kernel
    /// list_move()s to the head and dequeues from the head: LIFO)
    pub freelists: Vec<Vec<u64>>,
    /// next_nid_to_alloc / next_nid_to_free (for_each_node_mask_to_alloc / _to_free)
    pub next_nid_to_alloc: usize,
    pub next_nid_to_free: usize,
    /// node_alloc_noretry of the resize in progress (set_max_huge_pages): a node whose
    /// try-hard allocation failed is tried without __GFP_RETRY_MAYFAIL until one succeeds
    pub node_alloc_noretry: Vec<bool>,
    /// the pool when the run started (the result's extra.hugetlb_pool)
    pub boot_pages: u64,
}

impl Hstate {
    /// nr_huge_pages (= free_huge_pages: every pool page is free here)
    pub fn nr_huge_pages(&self) -> u64 {
        self.freelists.iter().map(|l| l.len() as u64).sum()
    }
    /// nr_huge_pages_node[nid]
    pub fn nr_huge_pages_node(&self, nid: usize) -> u64 {
        self.freelists.get(nid).map_or(0, |l| l.len() as u64)
    }
}

/// hstate_next_node_to_alloc() / hstate_next_node_to_free(): the cursor's node, or the
/// next allowed one after it (wrapping), and the cursor moves past it. `nodes` is sorted
/// and not empty.
fn next_node_allowed(nodes: &[usize], cursor: &mut usize) -> usize {
    let i = nodes.iter().position(|&n| n >= *cursor).unwrap_or(0);
    *cursor = nodes[(i + 1) % nodes.len()];
    nodes[i]
}

impl Kernel {
    /// The nodes with memory (node_states[N_MEMORY]), as the pool's nodes_allowed.
    fn hugetlb_nodes(&self) -> Vec<usize> {
        (0..self.pm.nodes.len()).filter(|&n| self.pm.zones.iter().any(|z| z.node == n && z.managed > 0)).collect()
    }

    /// The start of a write to nr_hugepages: set_max_huge_pages() clears node_alloc_noretry.
    pub fn hugetlb_resize_begin(&mut self) {
        let nodes = self.pm.nodes.len();
        self.hstate.freelists.resize_with(nodes.max(self.hstate.freelists.len()), Vec::new);
        self.hstate.node_alloc_noretry = vec![false; nodes];
    }

    /// One step of set_max_huge_pages(count) by the process of `mm`: while the pool is
    /// smaller, one alloc_pool_huge_folio() (the kernel's cond_resched() point is between
    /// two of them); when it is larger, every page above `count` is freed. Returns true
    /// while the resize has more to do. Each successful allocation's cost is a
    /// `hugetlb_alloc` latency sample (record.fault_latency).
    pub fn hugetlb_resize_step(&mut self, count: u64, mm: usize) -> bool {
        let nr = self.hstate.nr_huge_pages();
        if count > nr {
            let t0 = self.clock.cost;
            match self.alloc_pool_huge_folio() {
                Some(_) => {
                    if self.rec.record_latency {
                        self.rec.latency("hugetlb_alloc", mm, self.clock.cost - t0);
                    }
                    self.hugetlb_update_knob();
                    nr + 1 < count
                }
                None => {
                    self.hugetlb_update_knob();
                    false
                }
            }
        } else {
            // remove_pool_hugetlb_folio() until min_count, then update_and_free_pages_bulk()
            for _ in count..nr {
                let Some(pfn) = self.remove_pool_hugetlb_folio() else { break };
                self.charge(self.costs.page_free_ns);
                self.pm.free_pages(Pfn(pfn), HPAGE_PMD_ORDER, &mut self.rec.vm);
            }
            self.hugetlb_update_knob();
            false
        }
    }

    /// A whole write to nr_hugepages at once (the knobs a run starts with).
    pub fn set_nr_hugepages(&mut self, count: u64) {
        self.hugetlb_resize_begin();
        while self.hugetlb_resize_step(count, usize::MAX) {}
    }

    /// /proc/sys/vm/nr_hugepages reads back the pool size.
    fn hugetlb_update_knob(&mut self) {
        let n = self.hstate.nr_huge_pages().to_string();
        self.cfg.knobs.insert("vm.nr_hugepages".into(), n);
    }

    /// alloc_pool_huge_folio(): one fresh folio from the next node to allocate from,
    /// trying each allowed node once (for_each_node_mask_to_alloc). The folio joins the
    /// pool at once (the kernel collects the folios of one write and enqueues them at its
    /// end; nothing reads the pool in between).
    fn alloc_pool_huge_folio(&mut self) -> Option<u64> {
        let nodes = self.hugetlb_nodes();
        if nodes.is_empty() {
            return None;
        }
        self.hugetlb_resize_begin_if_needed();
        for _ in 0..nodes.len() {
            let nid = next_node_allowed(&nodes, &mut self.hstate.next_nid_to_alloc);
            if let Some(pfn) = self.alloc_buddy_hugetlb_folio(nid) {
                for p in pfn..pfn + HPAGE_PMD_NR {
                    self.pm.frames[p as usize] = make_hugetlb(p == pfn);
                }
                // enqueue_hugetlb_folio()
                self.hstate.freelists[nid].push(pfn);
                return Some(pfn);
            }
        }
        None
    }

    fn hugetlb_resize_begin_if_needed(&mut self) {
        if self.hstate.node_alloc_noretry.len() < self.pm.nodes.len() {
            self.hugetlb_resize_begin();
        }
    }

    /// alloc_buddy_hugetlb_folio(): htlb_alloc_mask() (GFP_HIGHUSER_MOVABLE | __GFP_COMP |
    /// __GFP_NOWARN: the 2 MiB size is migratable, hugepage_movable_supported()) |
    /// __GFP_THISNODE from alloc_pool_huge_folio(), and __GFP_RETRY_MAYFAIL unless the
    /// node is in node_alloc_noretry; counts htlb_buddy_alloc_success / _fail.
    fn alloc_buddy_hugetlb_folio(&mut self, nid: usize) -> Option<u64> {
        let try_hard = !self.hstate.node_alloc_noretry[nid];
        let mut gfp = GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOWARN | __GFP_THISNODE;
        if try_hard {
            gfp |= __GFP_RETRY_MAYFAIL;
        }
        let page = self.alloc_pages(gfp, HPAGE_PMD_ORDER, nid);
        match page {
            Some(p) => {
                if !try_hard {
                    self.hstate.node_alloc_noretry[nid] = false;
                }
                self.rec.count(Ev::HTLB_BUDDY_PGALLOC);
                Some(p.0)
            }
            None => {
                if try_hard {
                    self.hstate.node_alloc_noretry[nid] = true;
                }
                self.rec.count(Ev::HTLB_BUDDY_PGALLOC_FAIL);
                None
            }
        }
    }

    /// remove_pool_hugetlb_folio(): a free folio of the next node to free from that has
    /// one (for_each_node_mask_to_free), taken off its free list.
    fn remove_pool_hugetlb_folio(&mut self) -> Option<u64> {
        let nodes = self.hugetlb_nodes();
        if nodes.is_empty() {
            return None;
        }
        for _ in 0..nodes.len() {
            let nid = next_node_allowed(&nodes, &mut self.hstate.next_nid_to_free);
            if let Some(pfn) = self.hstate.freelists.get_mut(nid).and_then(|l| l.pop()) {
                return Some(pfn);
            }
        }
        None
    }

    /// HugePages_Total / HugePages_Free (pages) and Hugetlb (kB) of /proc/meminfo.
    pub fn hugetlb_meminfo(&self) -> [(&'static str, u64); 6] {
        let n = self.hstate.nr_huge_pages();
        [
            ("HugePages_Total", n),
            ("HugePages_Free", n),
            ("HugePages_Rsvd", 0),
            ("HugePages_Surp", 0),
            ("Hugepagesize", HPAGE_PMD_NR * 4),
            ("Hugetlb", n * HPAGE_PMD_NR * 4),
        ]
    }
}
