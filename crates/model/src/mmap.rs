//! Address spaces (mm_struct) and VMAs (mm/mmap.c, mm/vma.c): top-down placement with
//! THP alignment for PMD-multiple anonymous mappings (thp_get_unmapped_area), VMA
//! split and merge when flags change over part of a mapping, munmap of ranges.

use crate::consts::*;
use crate::mm_types::MmId;
use std::collections::BTreeMap;

pub const VM_READ: u32 = 1 << 0;
pub const VM_WRITE: u32 = 1 << 1;
pub const VM_HUGEPAGE: u32 = 1 << 2;
pub const VM_NOHUGEPAGE: u32 = 1 << 3;
pub const VM_LOCKED: u32 = 1 << 4;

/// Model mmap_base: where top-down placement starts (below the stack gap of a 47-bit space).
pub const MMAP_BASE: u64 = 0x7f00_0000_0000;
pub const MMAP_MIN: u64 = 0x1000_0000;

#[derive(Clone, Debug, PartialEq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub flags: u32,
    /// vma->anon_vma: set by the first fault that allocates an anonymous page in the VMA
    /// (anon_vma_prepare / vmf_anon_prepare; a read fault mapping the zero page sets
    /// none), shared by the pieces of a split, kept by a merge. An id within the mm.
    pub anon_vma: Option<u32>,
}

/// The TLB state of a process (its CPU's dTLB while it runs).
pub use crate::tlb::Tlb;

/// The mm's PMD-level page table: pmd index (vaddr >> PMD_SHIFT) -> slot id, ordered, with a
/// one-entry lookup cache (faults and writes walk addresses in order, so consecutive
/// lookups hit the same 2 MiB slot). Reads go through Deref; every mutation goes through
/// insert/remove, which keep the cache right.
#[derive(Clone, Default)]
pub struct PmdMap {
    map: BTreeMap<u64, u32>,
    last: std::cell::Cell<Option<(u64, u32)>>,
}
impl PmdMap {
    #[inline]
    pub fn lookup(&self, idx: u64) -> Option<u32> {
        if let Some((i, s)) = self.last.get() {
            if i == idx {
                return Some(s);
            }
        }
        let r = self.map.get(&idx).copied();
        if let Some(s) = r {
            self.last.set(Some((idx, s)));
        }
        r
    }
    pub fn insert(&mut self, idx: u64, sid: u32) -> Option<u32> {
        self.last.set(Some((idx, sid)));
        self.map.insert(idx, sid)
    }
    pub fn remove(&mut self, idx: &u64) -> Option<u32> {
        if self.last.get().is_some_and(|(i, _)| i == *idx) {
            self.last.set(None);
        }
        self.map.remove(idx)
    }
}
impl std::ops::Deref for PmdMap {
    type Target = BTreeMap<u64, u32>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

#[derive(Clone)]
pub struct Mm {
    pub id: MmId,
    pub name: String,
    pub vmas: BTreeMap<u64, Vma>,
    /// pmd index (vaddr >> PMD_SHIFT) -> slot id
    pub pmds: PmdMap,
    pub mmap_cursor: u64,
    /// prctl(PR_SET_THP_DISABLE): MMF_DISABLE_THP_COMPLETELY
    pub thp_disable: bool,
    /// MMF_VM_HUGEPAGE: on the khugepaged list
    pub on_khugepaged: bool,
    /// the next anon_vma id (anon_vma_prepare)
    pub next_anon_vma: u32,
    /// MMF_HUGE_ZERO_PAGE: holds a reference on the huge zero page
    pub huge_zero_ref: bool,
    pub rss_anon: u64,
    pub swap_ents: u64,
    pub alive: bool,
    pub cpu: u32,
    pub node: usize,
    pub tlb: Tlb,
}

/// The kernel's address spaces, indexed by `MmId` (an exited mm stays, not alive).
#[derive(Clone, Default)]
pub struct MmList(Vec<Mm>);
impl MmList {
    /// Add an mm; its id must be the next index.
    pub fn push(&mut self, mm: Mm) {
        assert_eq!(mm.id.idx(), self.0.len(), "mm ids are list positions");
        self.0.push(mm);
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Drop the last mm, which has exited (a helper process before the run, whose id the
    /// workload's first process then takes).
    pub fn pop_exited(&mut self) {
        assert!(self.0.last().is_some_and(|m| !m.alive), "only an exited mm is dropped");
        self.0.pop();
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn get(&self, id: MmId) -> Option<&Mm> {
        self.0.get(id.idx())
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Mm> {
        self.0.iter()
    }
}
impl std::ops::Index<MmId> for MmList {
    type Output = Mm;
    #[inline]
    fn index(&self, id: MmId) -> &Mm {
        &self.0[id.idx()]
    }
}
impl std::ops::IndexMut<MmId> for MmList {
    #[inline]
    fn index_mut(&mut self, id: MmId) -> &mut Mm {
        &mut self.0[id.idx()]
    }
}

impl Mm {
    pub fn new(id: MmId, name: &str, cpu: u32, node: usize, tlb: Tlb) -> Mm {
        Mm {
            id,
            name: name.to_string(),
            vmas: BTreeMap::new(),
            pmds: PmdMap::default(),
            mmap_cursor: MMAP_BASE,
            thp_disable: false,
            on_khugepaged: false,
            next_anon_vma: 0,
            huge_zero_ref: false,
            rss_anon: 0,
            swap_ents: 0,
            alive: true,
            cpu,
            node,
            tlb,
        }
    }

    pub fn find_vma(&self, addr: u64) -> Option<&Vma> {
        self.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| v.end > addr)
    }

    /// get_unmapped_area() top-down; PMD-multiple anonymous lengths are PMD aligned
    /// (thp_get_unmapped_area_vmflags, v6.7+). Returns None when the space is exhausted.
    pub fn get_unmapped_area(&mut self, len: u64, align: Option<u64>) -> Option<u64> {
        let align = align.unwrap_or(if len.is_multiple_of(PMD_SIZE) { PMD_SIZE } else { PAGE_SIZE }).max(PAGE_SIZE);
        let addr = self.mmap_cursor.checked_sub(len)? & !(align - 1);
        if addr < MMAP_MIN {
            return None;
        }
        self.mmap_cursor = addr;
        Some(addr)
    }

    /// Insert a new VMA (no anon_vma yet) and merge it with its neighbours
    /// (vma_merge_new_range). Returns the start of the VMA that now holds it and whether it
    /// was merged into a neighbour (khugepaged_enter_vma() runs on the merge target).
    pub fn insert_vma(&mut self, start: u64, end: u64, flags: u32) -> (u64, bool) {
        self.vmas.insert(start, Vma { start, end, flags, anon_vma: None });
        self.merge_around(start)
    }

    /// anon_vma_prepare(): the VMA at `addr` gets an anon_vma if it has none.
    pub fn anon_vma_prepare(&mut self, addr: u64) {
        let Some(start) = self.find_vma(addr).map(|v| v.start) else { return };
        let v = self.vmas.get_mut(&start).unwrap();
        if v.anon_vma.is_none() {
            v.anon_vma = Some(self.next_anon_vma);
            self.next_anon_vma += 1;
        }
    }

    /// Split the VMA containing `addr` so that a VMA starts at `addr` (both pieces share
    /// the anon_vma).
    fn split_at(&mut self, addr: u64) {
        let hit = self.vmas.range(..addr).next_back().map(|(_, v)| v.clone());
        if let Some(v) = hit {
            if v.end > addr && v.start < addr {
                self.vmas.get_mut(&v.start).unwrap().end = addr;
                self.vmas.insert(addr, Vma { start: addr, end: v.end, flags: v.flags, anon_vma: v.anon_vma });
            }
        }
    }

    /// Can two adjacent VMAs merge? Same flags and compatible anon_vmas
    /// (is_mergeable_anon_vma: equal, or one of them has none yet).
    fn mergeable(a: &Vma, b: &Vma) -> bool {
        a.end == b.start
            && a.flags == b.flags
            && (a.anon_vma.is_none() || b.anon_vma.is_none() || a.anon_vma == b.anon_vma)
    }

    /// Merge the VMA at `start` with mergeable neighbours (vma_merge). Returns the start of
    /// the resulting VMA and whether any merge happened; the merged VMA keeps the anon_vma.
    fn merge_around(&mut self, start: u64) -> (u64, bool) {
        let Some(cur) = self.vmas.get(&start).cloned() else { return (start, false) };
        let mut cur = cur;
        let mut merged = false;
        if let Some((_, prev)) = self.vmas.range(..start).next_back() {
            if Self::mergeable(prev, &cur) {
                let ps = prev.start;
                self.vmas.remove(&cur.start);
                let p = self.vmas.get_mut(&ps).unwrap();
                p.end = cur.end;
                p.anon_vma = p.anon_vma.or(cur.anon_vma);
                cur = self.vmas[&ps].clone();
                merged = true;
            }
        }
        if let Some(next) = self.vmas.get(&cur.end).cloned() {
            if Self::mergeable(&cur, &next) {
                self.vmas.remove(&next.start);
                let c = self.vmas.get_mut(&cur.start).unwrap();
                c.end = next.end;
                c.anon_vma = c.anon_vma.or(next.anon_vma);
                merged = true;
            }
        }
        (cur.start, merged)
    }

    /// Is every page of [start, end) mapped by some VMA?
    pub fn fully_mapped(&self, start: u64, end: u64) -> bool {
        let mut pos = start;
        while pos < end {
            match self.find_vma(pos) {
                Some(v) => pos = v.end,
                None => return false,
            }
        }
        true
    }

    /// Apply `f` to the flags of every VMA part within [start, end), splitting at the ends
    /// and merging afterwards (madvise_update_vma / mprotect_fixup -> vma_modify_flags).
    /// A part whose flags do not change is left alone (no split, no merge), as
    /// madvise_update_vma and mprotect_fixup return early. Returns false when part of the
    /// range was unmapped (the caller returns ENOMEM, as madvise does), and the starts of
    /// the VMAs a changed part was merged into (vma_merge_existing_range calls
    /// khugepaged_enter_vma() on its target).
    pub fn modify_flags(&mut self, start: u64, end: u64, f: impl Fn(u32) -> u32) -> (bool, Vec<u64>) {
        let all = self.fully_mapped(start, end);
        let changed: Vec<(u64, u64)> =
            self.vmas_in(start, end).into_iter().filter(|&(_, _, fl)| f(fl) != fl).map(|(s, e, _)| (s, e)).collect();
        let mut merged = vec![];
        for (s, e) in changed {
            self.split_at(s);
            self.split_at(e);
            let v = self.vmas.get_mut(&s).unwrap();
            v.flags = f(v.flags);
            let (at, m) = self.merge_around(s);
            if m {
                merged.push(at);
            }
        }
        // a later piece's merge may have absorbed an earlier target: keep those still there
        merged.retain(|a| self.vmas.contains_key(a));
        merged.dedup();
        (all, merged)
    }

    /// mm->map_count: the process's VMAs (the workload's; a live process also has its
    /// binary's, its libraries' and its stack's, a few dozen).
    pub fn map_count(&self) -> u64 {
        self.vmas.len() as u64
    }

    /// Can vma_modify_flags() give [start, end) the flags `f` makes, as far as
    /// vm.max_map_count goes? Each split_vma() it needs (a VMA whose flags change spans
    /// `start` or `end`) is refused once map_count reached the limit.
    pub fn modify_splits_ok(&self, start: u64, end: u64, max: u64, f: impl Fn(u32) -> u32) -> bool {
        let split = |a: u64| {
            self.vmas.range(..a).next_back().is_some_and(|(_, v)| v.start < a && v.end > a && f(v.flags) != v.flags)
        };
        let needed = split(start) as u64 + split(end) as u64;
        needed == 0 || self.map_count() + needed <= max
    }

    /// Is [start, end) a hole inside one VMA (munmap splits it in two, one VMA more)?
    pub fn hole_in_one_vma(&self, start: u64, end: u64) -> bool {
        self.vmas.range(..=start).next_back().is_some_and(|(_, v)| v.start < start && v.end > end)
    }

    /// The VMA a cut at `addr` splits (__split_vma), if one does: whether it has an anon_vma
    /// (anon_vma_clone and vma_prepare/vma_complete's interval-tree update then have work).
    pub fn split_anon_at(&self, addr: u64) -> Option<bool> {
        self.vmas
            .range(..addr)
            .next_back()
            .filter(|(_, v)| v.start < addr && v.end > addr)
            .map(|(_, v)| v.anon_vma.is_some())
    }

    /// How many VMAs overlapping [start, end) have an anon_vma (each removed piece's
    /// unlink_anon_vmas at a munmap).
    pub fn anon_vmas_in(&self, start: u64, end: u64) -> u64 {
        let first = self.vmas.range(..start).next_back().filter(|(_, v)| v.end > start).map(|(_, v)| v);
        first.into_iter().chain(self.vmas.range(start..end).map(|(_, v)| v)).filter(|v| v.anon_vma.is_some()).count()
            as u64
    }

    /// Remove [start, end) from the VMA tree (do_vmi_munmap). Returns the removed pieces.
    pub fn unmap_range(&mut self, start: u64, end: u64) -> Vec<(u64, u64)> {
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.vmas.range(start..end).map(|(k, _)| *k).collect();
        keys.into_iter().map(|k| self.vmas.remove(&k).map(|v| (v.start, v.end)).unwrap()).collect()
    }

    /// VMAs overlapping [start, end), clipped to it: (start, end, flags).
    pub fn vmas_in(&self, start: u64, end: u64) -> Vec<(u64, u64, u32)> {
        let mut out = vec![];
        let first = self.vmas.range(..start).next_back().filter(|(_, v)| v.end > start).map(|(_, v)| v.clone());
        for v in first.into_iter().chain(self.vmas.range(start..end).map(|(_, v)| v.clone())) {
            out.push((v.start.max(start), v.end.min(end), v.flags));
        }
        out
    }

    /// Is any part of the PMD range [idx*2M, idx*2M+2M) still covered by a VMA?
    pub fn pmd_range_used(&self, idx: u64) -> bool {
        let s = idx * PMD_SIZE;
        !self.vmas_in(s, s + PMD_SIZE).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn mm() -> Mm {
        Mm::new(MmId(0), "t", 0, 0, Tlb::new(&Default::default()))
    }
    #[test]
    fn placement_and_flags() {
        let mut m = mm();
        let a = m.get_unmapped_area(10 << 30, None).unwrap();
        assert_eq!(a % PMD_SIZE, 0);
        m.insert_vma(a, a + (10 << 30), VM_READ | VM_WRITE);
        let b = m.get_unmapped_area(3 * 4096, None).unwrap();
        assert_eq!(b % 4096, 0);
        assert!(b + 3 * 4096 <= a);
        assert_eq!(m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f | VM_HUGEPAGE), (true, vec![]));
        assert_eq!(m.vmas.len(), 3);
        assert_eq!(m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f & !VM_HUGEPAGE), (true, vec![a]));
        assert_eq!(m.vmas.len(), 1, "merged back");
        let removed = m.unmap_range(a + 4096, a + 8192);
        assert_eq!(removed, vec![(a + 4096, a + 8192)]);
        assert_eq!(m.vmas.len(), 2);
        assert!(m.find_vma(a + 4096).is_none());
        assert!(!m.fully_mapped(a, a + PMD_SIZE));
        assert!(!m.modify_flags(a, a + PMD_SIZE, |f| f | VM_HUGEPAGE).0);
    }

    #[test]
    fn anon_vma_blocks_merges_of_different_anon_vmas() {
        let mut m = mm();
        let a = m.get_unmapped_area(4 * PMD_SIZE, None).unwrap();
        m.insert_vma(a, a + 2 * PMD_SIZE, VM_READ | VM_WRITE);
        m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f | VM_HUGEPAGE);
        // each half faults on its own: two anon_vmas
        m.anon_vma_prepare(a);
        m.anon_vma_prepare(a + PMD_SIZE);
        assert_ne!(m.vmas[&a].anon_vma, m.vmas[&(a + PMD_SIZE)].anon_vma);
        let (_, merged) = m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f & !VM_HUGEPAGE);
        assert!(merged.is_empty(), "is_mergeable_anon_vma() refuses two different anon_vmas");
        assert_eq!(m.vmas.len(), 2);
        // a split shares the anon_vma, so the pieces merge back
        let id = m.vmas[&a].anon_vma;
        m.modify_flags(a, a + 4096, |f| f | VM_HUGEPAGE);
        assert_eq!(m.vmas[&(a + 4096)].anon_vma, id);
        assert_eq!(m.modify_flags(a, a + 4096, |f| f & !VM_HUGEPAGE).1, vec![a]);
        // a new VMA without anon_vma merges into a neighbour that has one and keeps it
        let b = a + 2 * PMD_SIZE;
        assert_eq!(m.insert_vma(b, b + PMD_SIZE, VM_READ | VM_WRITE), (a + PMD_SIZE, true));
        assert!(m.vmas[&(a + PMD_SIZE)].anon_vma.is_some());
    }
}
