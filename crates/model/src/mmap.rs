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
}

/// The TLB state of a process (its CPU's dTLB while it runs).
pub use crate::tlb::Tlb;

/// The mm's PMD-level page table: pmd index (vaddr >> PMD_SHIFT) -> slot id, ordered, with a
/// one-entry lookup cache (faults and writes walk addresses in order, so consecutive
/// lookups hit the same 2 MiB slot). Reads go through Deref; every mutation goes through
/// insert/remove, which keep the cache right.
#[derive(Default)]
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
#[derive(Default)]
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

    pub fn insert_vma(&mut self, start: u64, end: u64, flags: u32) {
        self.vmas.insert(start, Vma { start, end, flags });
        self.merge_around(start);
    }

    /// Split the VMA containing `addr` so that a VMA starts at `addr`.
    fn split_at(&mut self, addr: u64) {
        let hit = self.vmas.range(..addr).next_back().map(|(_, v)| v.clone());
        if let Some(v) = hit {
            if v.end > addr && v.start < addr {
                self.vmas.get_mut(&v.start).unwrap().end = addr;
                self.vmas.insert(addr, Vma { start: addr, end: v.end, flags: v.flags });
            }
        }
    }

    /// Merge the VMA at `start` with neighbours of identical flags (vma_merge).
    fn merge_around(&mut self, start: u64) {
        let Some(cur) = self.vmas.get(&start).cloned() else { return };
        let mut cur = cur;
        if let Some((_, prev)) = self.vmas.range(..start).next_back() {
            if prev.end == cur.start && prev.flags == cur.flags {
                let ps = prev.start;
                self.vmas.remove(&cur.start);
                self.vmas.get_mut(&ps).unwrap().end = cur.end;
                cur = self.vmas[&ps].clone();
            }
        }
        if let Some(next) = self.vmas.get(&cur.end).cloned() {
            if next.flags == cur.flags {
                self.vmas.remove(&next.start);
                self.vmas.get_mut(&cur.start).unwrap().end = next.end;
            }
        }
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
    /// and merging afterwards (madvise_update_vma / mprotect_fixup). Returns false when
    /// part of the range was unmapped (the caller returns ENOMEM, as madvise does).
    pub fn modify_flags(&mut self, start: u64, end: u64, f: impl Fn(u32) -> u32) -> bool {
        let all = self.fully_mapped(start, end);
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.vmas.range(start..end).map(|(k, _)| *k).collect();
        for k in &keys {
            let v = self.vmas.get_mut(k).unwrap();
            v.flags = f(v.flags);
        }
        for k in keys {
            if self.vmas.contains_key(&k) {
                self.merge_around(k);
            }
        }
        all
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
        assert!(m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f | VM_HUGEPAGE));
        assert_eq!(m.vmas.len(), 3);
        assert!(m.modify_flags(a + PMD_SIZE, a + 2 * PMD_SIZE, |f| f & !VM_HUGEPAGE));
        assert_eq!(m.vmas.len(), 1, "merged back");
        let removed = m.unmap_range(a + 4096, a + 8192);
        assert_eq!(removed, vec![(a + 4096, a + 8192)]);
        assert_eq!(m.vmas.len(), 2);
        assert!(m.find_vma(a + 4096).is_none());
        assert!(!m.fully_mapped(a, a + PMD_SIZE));
        assert!(!m.modify_flags(a, a + PMD_SIZE, |f| f | VM_HUGEPAGE));
    }
}
