//! Page migration (mm/migrate.c): move a folio's contents to a new frame and repoint
//! its mapping (migrate_folio + remove_migration_ptes), migrate_pages() for a list with
//! THP fallback to splitting (thp_migration_split, where the zero-subpage policy applies),
//! and move_pages(2) to another node.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::memory::Mapping;
use crate::mm_types::*;
use crate::page_alloc::{__GFP_THISNODE, GFP_HIGHUSER_MOVABLE, GFP_TRANSHUGE_LIGHT};
use crate::pgtable::*;
use crate::trace::trace_event;
use crate::vmstat::Ev;

/// Why a split happens: it decides which zero-subpage rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitReason {
    /// shrink_folio_list (the folio is isolated: Yu Zhao's `list != NULL`)
    Reclaim,
    /// migrate_pages fallback (isolated)
    Migration,
    /// deferred split shrinker, partially mapped folio (not isolated)
    Deferred,
    /// deferred split shrinker, underused folio (not isolated)
    Underused,
    /// anything else (e.g. debugfs split_huge_pages)
    Other,
}
/// A split that could not be done (the folio is not an anonymous THP head: -EBUSY).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitFailed;

impl SplitReason {
    pub fn isolated(self) -> bool {
        matches!(self, SplitReason::Reclaim | SplitReason::Migration)
    }
}

impl Kernel {
    /// Move a mapped-or-not anonymous folio at `src` (head) to the frames at `dst`,
    /// which the caller allocated (order 0 or 9). Contents, flags, LRU membership, the
    /// deferred-queue entry and the mapping all follow; the source frames are freed.
    pub fn move_folio(&mut self, src: Pfn, dst: Pfn) {
        let (src, dst) = (src.0, dst.0);
        let f = self.pm.frames[src as usize];
        // any large folio (PMD THP or mTHP; its order travels in the first tail's frame)
        let thp = compound(f) == COMPOUND_HEAD;
        let order = folio_order(&self.pm.frames, src);
        let nr: u64 = 1 << order;
        let lru_list = lru(f);
        let on_lru = lru_list != LRU_NONE;
        let queued = thp && lru(self.pm.frames[src as usize + 1]) == 1;
        if on_lru {
            self.lru_del(src, nr);
        }
        if thp {
            self.deferred_split_remove(src);
        }
        for i in 0..nr {
            let s = (src + i) as usize;
            let d = (dst + i) as usize;
            let sf = self.pm.frames[s];
            self.pm.frames[d] = with_lru(sf, LRU_NONE);
            self.pm.frames[s] = make_kernel(0, false);
            // repoint the mapping of this page
            if let Some((sid, idx)) = rmap(sf) {
                match &mut self.slots.get_mut(sid).pmd {
                    Pmd::Huge(h) if i == 0 => {
                        *h = dst as u32;
                    }
                    Pmd::Table(t) => t[idx as usize] = mk_pte(K_PRESENT, (dst + i) as u32),
                    _ => {}
                }
            }
        }
        if thp {
            if let Some(c) = self.pm.mapcount.remove(&(src as u32)) {
                self.pm.mapcount.insert(dst as u32, c);
            }
        }
        if on_lru {
            // lazy-free folios are on the file lists (lru_index)
            self.lruvec_add_folio(dst, nr, lru_list, false);
        }
        if queued {
            // the copy carried PG_partially_mapped; put the new folio on the queue
            self.deferred_split_requeue(dst);
        }
        self.charge(if order == HPAGE_PMD_ORDER {
            self.costs.copy_2m_ns
        } else if thp {
            self.costs.copy_2m_ns * nr / HPAGE_PMD_NR
        } else {
            self.costs.migrate_4k_ns
        });
        // flush the old translations of every mm that maps the folio
        if let Some((sid, i)) = rmap(self.pm.frames[dst as usize]) {
            let s = self.slots.get(sid);
            let (mm, ix) = (s.mm, s.index);
            // a base page's migration flushes its one PTE (ptep_clear_flush), a THP its PMD range
            let (a, e) = if order == HPAGE_PMD_ORDER {
                (ix << PMD_SHIFT, (ix + 1) << PMD_SHIFT)
            } else {
                (pte_addr(ix, i as u64), pte_addr(ix, i as u64 + nr))
            };
            self.mms[mm].tlb.flush_range(a, e);
        }
        // a swap-cache folio: the cache now points at the new frames (swap_state.rs)
        if swapcache(self.pm.frames[dst as usize]) {
            self.swap_cache_move(src, dst);
        }
        self.pm.free_pages(Pfn(src), order, &mut self.rec.vm);
    }

    /// migrate_pages() of one folio to `node` (MR_SYSCALL/MR_NUMA_MISPLACED style):
    /// isolate it from its LRU first (isolate_folio_to_list), so that the reclaim and
    /// compaction the destination allocation may run cannot free or move it, then
    /// allocate on the node and move. A THP whose destination cannot be allocated is split
    /// (thp_migration_split); its pieces stay isolated on the migration list, as
    /// split_folio_to_list() keeps them, and are migrated one by one. Whatever cannot be
    /// moved is put back on its LRU (putback_movable_pages). Returns pages moved.
    pub fn migrate_folio_to_node(&mut self, head: Pfn, node: usize) -> u64 {
        let head = head.0;
        let f = self.pm.frames[head as usize];
        let list = lru(f);
        if tag(f) != TAG_ANON || list == LRU_NONE {
            // not on an LRU: someone else holds it isolated (-EBUSY)
            return 0;
        }
        let nr = self.folio_nr_pages(head);
        self.lru_del(head, nr);
        let split0 = self.rec.vm.get(Ev::THP_MIGRATION_SPLIT);
        let moved = self.migrate_isolated_folio(Pfn(head), list, node);
        let thp = nr == HPAGE_PMD_NR;
        let split = self.rec.vm.get(Ev::THP_MIGRATION_SPLIT) - split0;
        trace_event!(
            self,
            mm_migrate_pages,
            succeeded = moved,
            failed = nr - moved,
            thp_succeeded = (thp && split == 0 && moved == nr) as u32,
            thp_failed = (thp && split == 0 && moved < nr) as u32,
            thp_split = split,
            large_folio_split = 0,
            mode = "MIGRATE_SYNC",
            reason = "syscall_or_cpuset",
        );
        moved
    }

    /// The body of migrate_pages() for one isolated folio (off the LRU; it belonged to
    /// list `list`).
    fn migrate_isolated_folio(&mut self, head: Pfn, list: u64, node: usize) -> u64 {
        let head = head.0;
        if compound(self.pm.frames[head as usize]) == COMPOUND_HEAD {
            // a large folio moves whole at its order (alloc_migration_target); the THP_*
            // migration events count PMD-order folios only (folio_test_pmd_mappable)
            let order = folio_order(&self.pm.frames, head);
            let nr = 1u64 << order;
            let pmd = order == HPAGE_PMD_ORDER;
            if let Some(Pfn(dst)) = self.alloc_pages(GFP_TRANSHUGE_LIGHT | __GFP_THISNODE, order, node) {
                self.move_folio(Pfn(head), Pfn(dst));
                self.putback_folio(dst, nr, list);
                if pmd {
                    self.rec.vm.count(Ev::THP_MIGRATION_SUCCESS);
                }
                self.rec.vm.add(Ev::PGMIGRATE_SUCCESS, nr);
                return nr;
            }
            if pmd {
                self.rec.vm.count(Ev::THP_MIGRATION_SPLIT);
            }
            let Ok(pieces) = self.split_folio(Pfn(head), SplitReason::Migration) else {
                self.putback_folio(head, nr, list);
                if pmd {
                    self.rec.vm.count(Ev::THP_MIGRATION_FAIL);
                }
                self.rec.vm.add(Ev::PGMIGRATE_FAIL, nr);
                return 0;
            };
            return pieces.into_iter().map(|p| self.migrate_isolated_folio(p, list, node)).sum();
        }
        match self.alloc_pages(GFP_HIGHUSER_MOVABLE | __GFP_THISNODE, 0, node) {
            Some(Pfn(dst)) => {
                self.move_folio(Pfn(head), Pfn(dst));
                self.putback_folio(dst, 1, list);
                self.rec.vm.count(Ev::PGMIGRATE_SUCCESS);
                1
            }
            None => {
                self.putback_folio(head, 1, list);
                self.rec.vm.count(Ev::PGMIGRATE_FAIL);
                0
            }
        }
    }

    /// folio_putback_lru(): an isolated folio goes back on list `list` of its node (a
    /// lazy-free folio on the file list, see lru_index).
    fn putback_folio(&mut self, head: u64, nr: u64, list: u64) {
        let f = set_mlocked(self.pm.frames[head as usize], list == LRU_UNEVICTABLE);
        self.pm.frames[head as usize] = f;
        self.lruvec_add_folio(head, nr, list, false);
    }

    /// move_pages(2) for [start, end) of `mm` to `node`: each mapped folio not already on
    /// the node is migrated whole. Returns the errno on failure.
    pub fn move_pages(&mut self, mm: MmId, start: u64, end: u64, node: usize) -> Result<(), &'static str> {
        if node >= self.pm.nodes.len() {
            return Err("ENODEV");
        }
        let mut a = start;
        while a < end {
            self.charge(self.costs.pte_walk_ns);
            match self.follow(mm, a) {
                Mapping::Page(Pfn(pfn), _) => {
                    let f = self.pm.frames[pfn as usize];
                    let head = if compound(f) == COMPOUND_BASE { pfn } else { self.folio_head(pfn) };
                    if self.pm.node_of(head) != node {
                        self.migrate_folio_to_node(Pfn(head), node);
                    }
                }
                Mapping::None => {}
                _ => {}
            }
            a += PAGE_SIZE;
        }
        Ok(())
    }
}
