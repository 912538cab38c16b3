//! Per-page state, packed: one `u64` per 4 KiB frame (the model's `struct page`).
//!
//! ```text
//!  63..61 tag      FREE_TAIL(0) FREE(1) RESERVED(2) ANON(3) KERNEL(4) ZERO(5) PGTABLE(6)
//!  FREE:    bits 0..3 order (a buddy block's first frame; the block's other frames are FREE_TAIL,
//!           the second of which, for order >= 1, holds the block's free-list links: TailCells)
//!  KERNEL:  bits 0..3 order on the block's first frame, bit 4 = head, bit 5 = hugetlb
//!           (a pool page of the 2 MiB hstate: every frame has order 9 and bit 5, see hugetlb.rs)
//!  ANON:    bits 0..15  contents (see content.rs)
//!           bits 16..17 compound: 0 base page, 1 THP head, 2 THP tail
//!           bit 18 young (accessed)   bit 19 dirty   bits 20..21 LRU list (head only)
//!           bit 22 mlocked            bit 23 lazyfree (MADV_FREE: !swapbacked)
//!           bit 24 isolated (off the LRU for reclaim/migration)
//!           bits 25..58 rmap: slot id (25 bits) << 9 | index in the 2 MiB slot (9 bits);
//!                        all ones = not mapped
//!           bit 59 PG_referenced (head; the reclaim scan's second-chance bit)
//!           bit 60 PG_swapcache (head; the folio is in the swap cache, see swap_state.rs)
//! ```
//! Large folios (THP of PMD order and mTHP of orders 2..8) are a head frame and tail
//! frames. The folio order lives in the first tail frame (head+1), as the kernel keeps
//! folio->_flags_1's order there: bits 18, 24 and 60 of head+1 (young, isolated and
//! swapcache, which only heads use) hold HPAGE_PMD_ORDER - order, so a tail made by
//! `make_anon(COMPOUND_TAIL)` belongs to a PMD-order folio. head+1 also carries the
//! deferred-split links (LRU field) and PG_partially_mapped (bit 22), see huge_memory.rs.
//! A zeroed frame is a free tail, so a fresh frame array is calloc'd memory the host
//! hands out lazily. Anonymous pages are mapped exactly once (no fork), so the reverse
//! map is a single (page-table slot, index) and young/dirty live here, not in the PTE.

use crate::consts::*;
/// A page frame number. Used where a pfn travels with other integers (allocation
/// results, migration and split arguments, translations) so that they cannot be mixed
/// up; per-page loops inside a mechanism work on the plain `u64` (`.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Pfn(pub u64);
impl Pfn {
    /// The index of the frame in the frame array.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl std::ops::Add<u64> for Pfn {
    type Output = Pfn;
    #[inline]
    fn add(self, n: u64) -> Pfn {
        Pfn(self.0 + n)
    }
}
impl std::fmt::Display for Pfn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// An address space (mm_struct): its position in the kernel's mm list, which the
/// model uses where the kernel passes an `mm_struct *`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct MmId(pub u32);
impl MmId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl std::fmt::Display for MmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

pub const TAG_SHIFT: u32 = 61;
pub const TAG_FREE_TAIL: u64 = 0;
pub const TAG_FREE: u64 = 1;
pub const TAG_RESERVED: u64 = 2;
pub const TAG_ANON: u64 = 3;
pub const TAG_KERNEL: u64 = 4;
pub const TAG_ZERO: u64 = 5;
pub const TAG_PGTABLE: u64 = 6;
/// A block on a per-CPU page list (struct per_cpu_pages): off the buddy lists, not free
/// to the buddy allocator, not in use. Its other frames read as free tails.
pub const TAG_PCP: u64 = 7;

pub const COMPOUND_BASE: u64 = 0;
pub const COMPOUND_HEAD: u64 = 1;
pub const COMPOUND_TAIL: u64 = 2;

pub const LRU_NONE: u64 = 0;
pub const LRU_INACTIVE_ANON: u64 = 1;
pub const LRU_ACTIVE_ANON: u64 = 2;
pub const LRU_UNEVICTABLE: u64 = 3;

const CONTENT_MASK: u64 = 0xffff;
const COMPOUND_SHIFT: u32 = 16;
const YOUNG_BIT: u64 = 1 << 18;
const DIRTY_BIT: u64 = 1 << 19;
const LRU_SHIFT: u32 = 20;
const MLOCK_BIT: u64 = 1 << 22;
const LAZYFREE_BIT: u64 = 1 << 23;
const ISOLATED_BIT: u64 = 1 << 24;
const RMAP_SHIFT: u32 = 25;
/// the rmap's low bits: the PTE index within the 2 MiB slot
const RMAP_IDX_BITS: u32 = PMD_SHIFT - PAGE_SHIFT;
const RMAP_BITS: u32 = 34;
pub const RMAP_NONE: u64 = (1 << RMAP_BITS) - 1;
pub const MAX_SLOTS: u32 = (1 << 25) - 1;
const REFERENCED_BIT: u64 = 1 << 59;
const SWAPCACHE_BIT: u64 = 1 << 60;

#[inline]
pub fn tag(f: u64) -> u64 {
    f >> TAG_SHIFT
}
/// A free buddy block's first frame: its order (bits 0..3) and the migratetype of the
/// free list it is on (bits 4..6; the block's pageblock type when it was listed).
#[inline]
pub fn make_free(order: u32, mt: u8) -> u64 {
    (TAG_FREE << TAG_SHIFT) | order as u64 | (mt as u64) << 4
}
/// The order of a free or per-CPU-list block's first frame.
#[inline]
pub fn free_order(f: u64) -> u32 {
    (f & 0xf) as u32
}
/// The migratetype list a free or per-CPU-list block is on.
#[inline]
pub fn free_mt(f: u64) -> u8 {
    ((f >> 4) & 7) as u8
}
/// The pseudo-migratetype of a free block a compactor has isolated as a migration
/// target (cc->freepages): off the buddy lists, not yet used.
pub const ISOLATED_FREE_MT: u8 = 7;
/// The first frame of a free block isolated by compaction.
#[inline]
pub fn make_isolated_free(order: u32) -> u64 {
    make_pcp(order, ISOLATED_FREE_MT)
}
/// The first frame of a block on a per-CPU list of migratetype `mt`.
#[inline]
pub fn make_pcp(order: u32, mt: u8) -> u64 {
    (TAG_PCP << TAG_SHIFT) | order as u64 | (mt as u64) << 4
}
#[inline]
pub fn is_free_head(f: u64) -> bool {
    tag(f) == TAG_FREE
}
#[inline]
pub fn make_kernel(order: u32, head: bool) -> u64 {
    (TAG_KERNEL << TAG_SHIFT) | order as u64 | if head { 0x10 } else { 0 }
}
const HUGETLB_BIT: u64 = 0x20;
/// A frame of a hugetlb pool folio (a compound order-9 page owned by hugetlb.rs): the
/// kernel's PageHuge(), never on an LRU, never moved by compaction outside alloc_contig.
#[inline]
pub fn make_hugetlb(head: bool) -> u64 {
    make_kernel(crate::consts::HPAGE_PMD_ORDER, head) | HUGETLB_BIT
}
/// PageHuge(): the frame belongs to a hugetlb folio.
#[inline]
pub fn is_hugetlb(f: u64) -> bool {
    tag(f) == TAG_KERNEL && f & HUGETLB_BIT != 0
}
/// The first frame of a hugetlb folio.
#[inline]
pub fn is_hugetlb_head(f: u64) -> bool {
    is_hugetlb(f) && f & 0x10 != 0
}
const MOVABLE_OPS_BIT: u64 = 0x40;
/// A page another tenant holds that compaction may move but the model has no owner for:
/// a page the live run found on an LRU (aged.rs hold_in_use). It migrates as 6.18 moves a
/// non-LRU movable page (page_has_movable_ops(), isolate_movable_ops_page()): a copy, no
/// rmap walk, no LRU lock.
#[inline]
pub fn make_kernel_movable() -> u64 {
    make_kernel(0, true) | MOVABLE_OPS_BIT
}
/// A held page compaction may move (make_kernel_movable).
#[inline]
pub fn is_kernel_movable(f: u64) -> bool {
    tag(f) == TAG_KERNEL && f & MOVABLE_OPS_BIT != 0
}
#[inline]
pub fn make_reserved() -> u64 {
    TAG_RESERVED << TAG_SHIFT
}
#[inline]
pub fn make_pgtable() -> u64 {
    TAG_PGTABLE << TAG_SHIFT
}
#[inline]
pub fn make_zero_frame() -> u64 {
    TAG_ZERO << TAG_SHIFT
}

/// A fresh anonymous page: zero contents, not on an LRU, not mapped.
#[inline]
pub fn make_anon(compound: u64) -> u64 {
    (TAG_ANON << TAG_SHIFT) | (compound << COMPOUND_SHIFT) | (RMAP_NONE << RMAP_SHIFT)
}
#[inline]
pub fn content(f: u64) -> u16 {
    (f & CONTENT_MASK) as u16
}
#[inline]
pub fn with_content(f: u64, c: u16) -> u64 {
    (f & !CONTENT_MASK) | c as u64
}
#[inline]
pub fn compound(f: u64) -> u64 {
    (f >> COMPOUND_SHIFT) & 3
}
#[inline]
pub fn with_compound(f: u64, c: u64) -> u64 {
    (f & !(3 << COMPOUND_SHIFT)) | (c << COMPOUND_SHIFT)
}
#[inline]
pub fn young(f: u64) -> bool {
    f & YOUNG_BIT != 0
}
#[inline]
pub fn set_young(f: u64, y: bool) -> u64 {
    if y {
        f | YOUNG_BIT
    } else {
        f & !YOUNG_BIT
    }
}
#[inline]
pub fn dirty(f: u64) -> bool {
    f & DIRTY_BIT != 0
}
#[inline]
pub fn set_dirty(f: u64, d: bool) -> u64 {
    if d {
        f | DIRTY_BIT
    } else {
        f & !DIRTY_BIT
    }
}
#[inline]
pub fn lru(f: u64) -> u64 {
    (f >> LRU_SHIFT) & 3
}
#[inline]
pub fn with_lru(f: u64, l: u64) -> u64 {
    (f & !(3 << LRU_SHIFT)) | (l << LRU_SHIFT)
}
#[inline]
pub fn mlocked(f: u64) -> bool {
    f & MLOCK_BIT != 0
}
#[inline]
pub fn set_mlocked(f: u64, m: bool) -> u64 {
    if m {
        f | MLOCK_BIT
    } else {
        f & !MLOCK_BIT
    }
}
#[inline]
pub fn lazyfree(f: u64) -> bool {
    f & LAZYFREE_BIT != 0
}
#[inline]
pub fn set_lazyfree(f: u64, m: bool) -> u64 {
    if m {
        f | LAZYFREE_BIT
    } else {
        f & !LAZYFREE_BIT
    }
}
#[inline]
pub fn isolated(f: u64) -> bool {
    f & ISOLATED_BIT != 0
}
#[inline]
pub fn set_isolated(f: u64, m: bool) -> u64 {
    if m {
        f | ISOLATED_BIT
    } else {
        f & !ISOLATED_BIT
    }
}
/// PG_referenced (folio_test_referenced): set by a reclaim scan that found the folio young.
#[inline]
pub fn referenced(f: u64) -> bool {
    f & REFERENCED_BIT != 0
}
#[inline]
pub fn set_referenced(f: u64, r: bool) -> u64 {
    if r {
        f | REFERENCED_BIT
    } else {
        f & !REFERENCED_BIT
    }
}
/// PG_swapcache (folio_test_swapcache): the folio's slots are recorded in swap_state.rs.
#[inline]
pub fn swapcache(f: u64) -> bool {
    f & SWAPCACHE_BIT != 0
}
#[inline]
pub fn set_swapcache(f: u64, s: bool) -> u64 {
    if s {
        f | SWAPCACHE_BIT
    } else {
        f & !SWAPCACHE_BIT
    }
}
/// LRU_INACTIVE_FILE / LRU_ACTIVE_FILE: lazy-free (MADV_FREE, !swapbacked) anonymous
/// folios live on the file lists, as lru_lazyfree() puts them there.
pub const LRU_INACTIVE_FILE: u64 = 4;
pub const LRU_ACTIVE_FILE: u64 = 5;
pub const NR_LRU_LISTS: usize = 6;
/// Which of the node's lists a folio with frame `f` is on: the 2-bit LRU field says
/// inactive/active/unevictable, the lazyfree bit says anon or file.
#[inline]
pub fn lru_index(f: u64) -> usize {
    let l = lru(f);
    if lazyfree(f) && (l == LRU_INACTIVE_ANON || l == LRU_ACTIVE_ANON) {
        (l + 3) as usize
    } else {
        l as usize
    }
}

/// The bits of head+1 that hold PMD_ORDER - order (see the header).
const ORDER_FIELD_BITS: [u64; 3] = [YOUNG_BIT, ISOLATED_BIT, SWAPCACHE_BIT];
/// The folio order recorded in a first-tail frame `f1` (folio_large_order).
#[inline]
pub fn first_tail_order(f1: u64) -> u32 {
    let mut v = 0;
    for (i, b) in ORDER_FIELD_BITS.iter().enumerate() {
        if f1 & b != 0 {
            v |= 1 << i;
        }
    }
    HPAGE_PMD_ORDER - v
}
/// Record `order` (2..=HPAGE_PMD_ORDER) in a first-tail frame (folio_set_order).
#[inline]
pub fn with_first_tail_order(f1: u64, order: u32) -> u64 {
    debug_assert!((2..=HPAGE_PMD_ORDER).contains(&order));
    let v = HPAGE_PMD_ORDER - order;
    let mut f = f1;
    for (i, b) in ORDER_FIELD_BITS.iter().enumerate() {
        f = if v & (1 << i) != 0 { f | b } else { f & !b };
    }
    f
}
/// folio_order(): the order of the folio whose head frame is at `head` (0 for a base page).
#[inline]
pub fn folio_order(frames: &[u64], head: u64) -> u32 {
    let f = frames[head as usize];
    if tag(f) == TAG_ANON && compound(f) == COMPOUND_HEAD {
        first_tail_order(frames[head as usize + 1])
    } else {
        0
    }
}
/// compound_head(): the head frame of the folio holding `pfn`. Folios are naturally
/// aligned, so the head is `pfn` aligned down to the folio size: the PMD-aligned frame
/// is tried first (the common THP), then the mTHP sizes.
#[inline]
pub fn folio_head(frames: &[u64], pfn: u64) -> u64 {
    let f = frames[pfn as usize];
    if tag(f) != TAG_ANON || compound(f) != COMPOUND_TAIL {
        return pfn;
    }
    let covers = |h: u64| {
        let hf = frames[h as usize];
        tag(hf) == TAG_ANON && compound(hf) == COMPOUND_HEAD && h + (1 << folio_order(frames, h)) > pfn
    };
    let h = pfn & !(HPAGE_PMD_NR - 1);
    if covers(h) {
        return h;
    }
    for k in 2..HPAGE_PMD_ORDER {
        let h = pfn & !((1u64 << k) - 1);
        if h != pfn && covers(h) {
            return h;
        }
    }
    debug_assert!(false, "tail frame {pfn} without a head");
    pfn & !(HPAGE_PMD_NR - 1)
}

/// (slot id, index within the 2 MiB slot), or None when not mapped.
#[inline]
pub fn rmap(f: u64) -> Option<(u32, u32)> {
    let r = (f >> RMAP_SHIFT) & RMAP_NONE;
    if r == RMAP_NONE {
        None
    } else {
        Some(((r >> RMAP_IDX_BITS) as u32, (r & (PTRS_PER_PTE as u64 - 1)) as u32))
    }
}
#[inline]
pub fn with_rmap(f: u64, r: Option<(u32, u32)>) -> u64 {
    let v = match r {
        None => RMAP_NONE,
        Some((slot, idx)) => ((slot as u64) << RMAP_IDX_BITS) | idx as u64,
    };
    (f & !(RMAP_NONE << RMAP_SHIFT)) | (v << RMAP_SHIFT)
}

/// Doubly-linked list links for LRU folios, the deferred split queue and order-0 free
/// pages, per group of 64 frames, so that memory holding THPs (one folio per 512 frames)
/// costs ~1 byte per page and free memory costs nothing. O(1) insert and remove.
///
/// A group's cells are kept in one of two forms:
/// - a run: the cells in use are the frames [lo, hi] of the group, chained one after the
///   other in pfn order, descending (each frame's prev is the frame above it: pages
///   faulted in ascending pfn order and each added at the LRU's head, as a fill of 4 KiB
///   pages does) or ascending; only the chain's two outward links are stored, plus at
///   most one cell that differs (an insert's neighbour between its two writes). 20 bytes
///   for the group instead of a 512-byte chunk: after seed 004's fill of ~970 GiB of
///   4 KiB pages, every one of the 1 TiB machine's groups in use is such a run, and the
///   prefix's links took 1.9 GiB of chunks, ~0.5 GiB for each copy of it, memory the host
///   backs at first touch (host_alloc.rs, docs/compaction.md).
/// - a chunk of 64 cells in one pool, once a change leaves a form a run cannot hold (a
///   frame in the middle leaves, a frame joins away from the run's ends). A chunk stays
///   until its group's last cell leaves; then it is spare, and the next group that needs
///   a chunk takes it before the pool grows. The pool's room for every chunk is reserved
///   up front (address space only), so it never moves; a copy (Clone) leaves the spares
///   out.
pub struct Links {
    /// Per 64 frames: its chunk's index in `pool`, RUN (its cells are `runs[group]`) or
    /// NO_CHUNK (no cell in use).
    chunk_of: Vec<u32>,
    /// Per 64 frames, how many of its cells are on a list.
    live: Vec<u8>,
    /// Per 64 frames, the run (Run::load), when chunk_of says RUN. Zeroed memory the
    /// host backs only where a group was ever a run.
    runs: Vec<[u32; 5]>,
    pool: Vec<[[u32; 2]; 64]>,
    /// Chunks of the pool whose last cell left its list (every cell [NIL, NIL]): the next
    /// group of frames that needs a chunk takes one of these before the pool grows.
    spare: Vec<u32>,
}
pub const NIL: u32 = u32::MAX;
const NO_CHUNK: u32 = u32::MAX;
const RUN: u32 = u32::MAX - 1;
const NO_EXC: u8 = u8::MAX;

/// A group's cells in use as one chain in pfn order (Links). The head end is the cell
/// whose prev leaves the run (`ext[0]`), the tail end the one whose next does (`ext[1]`):
/// descending, the head end is `hi`; ascending, `lo`. `exc_off`'s cell, if any, is `exc`.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Run {
    ext: [u32; 2],
    exc: [u32; 2],
    lo: u8,
    hi: u8,
    desc: bool,
    exc_off: u8,
}

impl Run {
    #[inline(always)]
    fn load(w: &[u32; 5]) -> Run {
        let (lo, hi, desc, exc_off) = Run::meta(w[4]);
        Run { ext: [w[0], w[1]], exc: [w[2], w[3]], lo, hi, desc, exc_off }
    }
    #[inline(always)]
    fn store(&self) -> [u32; 5] {
        [self.ext[0], self.ext[1], self.exc[0], self.exc[1], Run::meta_word(self.lo, self.hi, self.desc, self.exc_off)]
    }
    /// A stored run's last word: (lo, hi, desc, exc_off).
    #[inline(always)]
    fn meta(m: u32) -> (u8, u8, bool, u8) {
        (m as u8, (m >> 8) as u8, (m >> 16) & 1 == 1, (m >> 24) as u8)
    }
    #[inline(always)]
    fn meta_word(lo: u8, hi: u8, desc: bool, exc_off: u8) -> u32 {
        lo as u32 | (hi as u32) << 8 | (desc as u32) << 16 | (exc_off as u32) << 24
    }
    /// A run of one cell, `v`.
    fn single(o: u8, v: [u32; 2]) -> Run {
        Run { ext: v, exc: [NIL, NIL], lo: o, hi: o, desc: true, exc_off: NO_EXC }
    }
    /// The head end and the tail end.
    #[inline(always)]
    fn ends(&self) -> (u8, u8) {
        if self.desc {
            (self.hi, self.lo)
        } else {
            (self.lo, self.hi)
        }
    }
    #[inline(always)]
    fn head_end(&self) -> u8 {
        self.ends().0
    }
    #[inline(always)]
    fn tail_end(&self) -> u8 {
        self.ends().1
    }
    #[inline(always)]
    fn contains(&self, o: u8) -> bool {
        self.lo <= o && o <= self.hi
    }
    /// The cell of offset `o` (in the run) that the chain implies, the exception aside.
    #[inline(always)]
    fn implied(&self, base: u32, o: u8) -> [u32; 2] {
        let p = base + o as u32;
        // the neighbour toward the head and toward the tail, in the chain
        let (up, down) = (p.wrapping_add(1), p.wrapping_sub(1));
        let (toward_head, toward_tail) = if self.desc { (up, down) } else { (down, up) };
        let (head, tail) = self.ends();
        [if o == head { self.ext[0] } else { toward_head }, if o == tail { self.ext[1] } else { toward_tail }]
    }
    /// The cell of offset `o` (in the run).
    #[inline(always)]
    fn cell(&self, base: u32, o: u8) -> [u32; 2] {
        if o == self.exc_off {
            self.exc
        } else {
            self.implied(base, o)
        }
    }
    /// A run over [lo, hi] in direction `desc` whose cells are `cell_at`'s, if one
    /// exception at most is needed; `check` lists the offsets whose cells may differ from
    /// what the new chain implies (every other cell is as the chain implies).
    fn fit(base: u32, lo: u8, hi: u8, desc: bool, cell_at: impl Fn(u8) -> [u32; 2], check: &[u8]) -> Option<Run> {
        let mut n = Run { ext: [NIL, NIL], exc: [NIL, NIL], lo, hi, desc, exc_off: NO_EXC };
        n.ext = [cell_at(n.head_end())[0], cell_at(n.tail_end())[1]];
        for &x in check {
            if x == NO_EXC || x == n.exc_off {
                continue;
            }
            let want = cell_at(x);
            if n.implied(base, x) != want {
                if n.exc_off != NO_EXC {
                    return None;
                }
                n.exc_off = x;
                n.exc = want;
            }
        }
        Some(n)
    }
}

impl Clone for Links {
    /// A copy with the same reserved room (Vec::clone would keep only what is used),
    /// without the spare chunks; the others keep their cells and go into the pool in
    /// frame order.
    fn clone(&self) -> Links {
        let mut pool = Vec::with_capacity(self.pool.capacity());
        let mut chunk_of = self.chunk_of.clone();
        for c in chunk_of.iter_mut().filter(|c| **c < RUN) {
            let ci = std::mem::replace(c, pool.len() as u32);
            pool.push(self.pool[ci as usize]);
        }
        Links { chunk_of, live: self.live.clone(), runs: self.runs.clone(), pool, spare: vec![] }
    }
}

impl Links {
    pub fn new(nr_frames: u64) -> Links {
        let n = nr_frames.div_ceil(64) as usize;
        Links {
            chunk_of: vec![NO_CHUNK; n],
            live: vec![0; n],
            runs: vec![[0; 5]; n],
            pool: Vec::with_capacity(n),
            spare: vec![],
        }
    }
    #[inline(always)]
    fn run(&self, s: usize) -> Run {
        Run::load(&self.runs[s])
    }
    #[inline(always)]
    fn set_run(&mut self, s: usize, r: Run) {
        self.runs[s] = r.store();
    }
    /// Group `s`'s run becomes a chunk (a spare one, else a new one at the pool's end)
    /// holding the same cells. Reusing the chunks that groups emptied keeps the pool at
    /// the frames in use: direct compaction at 1 TiB moves millions of pages from the
    /// groups its migrate scanner empties to groups its free scanner fills.
    #[cold]
    #[inline(never)]
    fn make_chunk(&mut self, s: usize) -> usize {
        let r = self.run(s);
        let base = (s as u32) << 6;
        let ci = match self.spare.pop() {
            Some(c) => c,
            None => {
                self.pool.push([[NIL, NIL]; 64]);
                self.pool.len() as u32 - 1
            }
        };
        for o in r.lo..=r.hi {
            self.pool[ci as usize][o as usize] = r.cell(base, o);
        }
        self.chunk_of[s] = ci;
        ci as usize
    }
    /// Write `v` into the listed cell of `pfn`.
    #[inline(always)]
    fn write(&mut self, pfn: u32, v: [u32; 2]) {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        let ci = match self.chunk_of[s] {
            NO_CHUNK => unattached(pfn),
            RUN => return self.write_run(s, o, self.run(s), v),
            ci => ci as usize,
        };
        self.pool[ci][o as usize] = v;
    }
    /// Write `v` into the cell of offset `o` of group `s`'s run `r`.
    #[inline(always)]
    fn write_run(&mut self, s: usize, o: u8, mut r: Run, v: [u32; 2]) {
        debug_assert!(r.contains(o), "write to group {s} offset {o}, outside its run");
        if o == r.head_end() {
            r.ext[0] = v[0];
        }
        if o == r.tail_end() {
            r.ext[1] = v[1];
        }
        if r.implied(s as u32 * 64, o) == v {
            if r.exc_off == o {
                r.exc_off = NO_EXC;
            }
        } else if r.exc_off == NO_EXC || r.exc_off == o {
            r.exc_off = o;
            r.exc = v;
        } else {
            // (the run as stored: only `o`'s cell differs, and `v` replaces it)
            let ci = self.make_chunk(s);
            self.pool[ci][o as usize] = v;
            return;
        }
        self.set_run(s, r);
    }
    /// Set one side (0: prev, 1: next) of `pfn`'s cell, in a run. The link out of the
    /// run at its end (the usual case: a neighbour in another group joins or leaves) is
    /// one word of the run.
    #[inline(always)]
    fn write_side(&mut self, pfn: u32, side: usize, x: u32) {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        let m = self.runs[s][4];
        let (lo, hi, desc, exc_off) = Run::meta(m);
        let end = if (side == 0) == desc { hi } else { lo };
        if o == end && exc_off != o {
            self.runs[s][side] = x;
            return;
        }
        let r = Run::load(&self.runs[s]);
        let mut v = r.cell(s as u32 * 64, o);
        v[side] = x;
        self.write_run(s, o, r, v);
    }
    /// `pfn` joins a list with cell `v`: a group with no cell in use becomes a run of one;
    /// a run takes a frame next to its ends if the chain still holds (either direction
    /// for a run of one), else becomes a chunk.
    #[inline(always)]
    fn attach_cell(&mut self, pfn: u32, v: [u32; 2]) {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        self.live[s] += 1;
        let ci = match self.chunk_of[s] {
            NO_CHUNK => {
                self.chunk_of[s] = RUN;
                self.set_run(s, Run::single(o, v));
                return;
            }
            RUN => {
                let r = self.run(s);
                debug_assert!(!r.contains(o), "attach of {pfn}, already in its group's run");
                let base = (s as u32) << 6;
                let (up, down) = (o as u16 == r.hi as u16 + 1, o + 1 == r.lo);
                if up || down {
                    let end = if up { r.hi } else { r.lo };
                    let cell_at = |x: u8| if x == o { v } else { r.cell(base, x) };
                    let (lo, hi) = (r.lo.min(o), r.hi.max(o));
                    let dirs = if r.lo == r.hi { [true, false] } else { [r.desc, r.desc] };
                    for desc in dirs {
                        if let Some(n) = Run::fit(base, lo, hi, desc, cell_at, &[o, end, r.exc_off]) {
                            self.set_run(s, n);
                            return;
                        }
                    }
                }
                self.make_chunk(s)
            }
            ci => ci as usize,
        };
        self.pool[ci][o as usize] = v;
    }
    /// Groups of 64 frames (one chunk each when in use).
    pub fn nr_chunks(&self) -> usize {
        self.chunk_of.len()
    }
    /// Cells of frames [64 c, 64 c + 64) on a list.
    pub fn cells_in_use(&self, c: usize) -> u8 {
        self.live[c]
    }
    #[inline(always)]
    pub fn get(&self, pfn: u32) -> [u32; 2] {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        match self.chunk_of[s] {
            NO_CHUNK => [NIL, NIL],
            RUN => {
                let r = self.run(s);
                if r.contains(o) {
                    r.cell(s as u32 * 64, o)
                } else {
                    [NIL, NIL]
                }
            }
            ci => self.pool[ci as usize][o as usize],
        }
    }
    #[inline]
    pub fn set(&mut self, pfn: u32, v: [u32; 2]) {
        if self.chunk_of[(pfn >> 6) as usize] != NO_CHUNK {
            self.write(pfn, v);
        } else {
            debug_assert!(false, "set on unattached link {pfn}");
        }
    }
    /// Chunks in the pool (spares included).
    pub fn pool_chunks(&self) -> usize {
        self.pool.len()
    }
    /// Groups whose cells are a run (no chunk).
    pub fn runs_in_use(&self) -> usize {
        self.chunk_of.iter().filter(|&&c| c == RUN).count()
    }
    /// The pool's bookkeeping (check.rs): a group of frames has a chunk or a run exactly
    /// when a cell of it is in use, a run counts its cells in use and its exception lies
    /// in it, every chunk of the pool is one group's or spare (never both, never twice),
    /// and a spare's cells are all [NIL, NIL].
    pub fn check_chunks(&self) -> Result<(), String> {
        let mut owner = vec![false; self.pool.len()];
        let mut claim = |ci: u32, what: &str| match owner.get_mut(ci as usize) {
            Some(o) if !*o => {
                *o = true;
                Ok(())
            }
            _ => Err(format!("chunk {ci} ({what}): outside the pool or claimed twice")),
        };
        for (s, (&ci, &n)) in self.chunk_of.iter().zip(&self.live).enumerate() {
            match (ci, n) {
                (NO_CHUNK, 0) => {}
                (NO_CHUNK, _) => return Err(format!("frames {}..: {n} cells in use and no chunk", s * 64)),
                (_, 0) => return Err(format!("frames {}..: a chunk or run and no cell in use", s * 64)),
                (RUN, _) => {
                    let r = self.run(s);
                    if r.lo > r.hi || r.hi > 63 || (r.hi - r.lo + 1) != n {
                        return Err(format!(
                            "frames {}..: a run over {}..={} and {n} cells in use",
                            s * 64,
                            r.lo,
                            r.hi
                        ));
                    }
                    if r.exc_off != NO_EXC && !r.contains(r.exc_off) {
                        return Err(format!("frames {}..: the run's exception {} lies outside it", s * 64, r.exc_off));
                    }
                }
                _ => claim(ci, "a group's")?,
            }
        }
        for &ci in &self.spare {
            claim(ci, "spare")?;
            if self.pool[ci as usize].iter().any(|c| *c != [NIL, NIL]) {
                return Err(format!("spare chunk {ci}: a cell still links"));
            }
        }
        match owner.iter().position(|o| !o) {
            Some(ci) => Err(format!("chunk {ci}: neither a group's nor spare")),
            None => Ok(()),
        }
    }
    pub fn heap_bytes(&self) -> usize {
        self.chunk_of.len() * (5 + 20)
            + self.spare.capacity() * 4
            + self.pool.len() * std::mem::size_of::<[[u32; 2]; 64]>()
    }
}

/// Where a list keeps its entries' links: a cell of two pfns, [prev, next], per entry.
/// `Links` (runs and a pool of chunks) holds them for LRU folios, the deferred split
/// queue and order-0 free pages; `TailCells` keeps a free buddy block of order >= 1's cell
/// in its second frame, a free tail nothing else reads.
pub trait Cells {
    /// The cell of a listed `pfn`.
    fn cell(&self, pfn: u32) -> [u32; 2];
    fn set_prev(&mut self, pfn: u32, prev: u32);
    fn set_next(&mut self, pfn: u32, next: u32);
    /// `pfn` goes onto a list with cell `v`.
    fn attach(&mut self, pfn: u32, v: [u32; 2]);
    /// `pfn` leaves its list: its cell, which is reset.
    fn detach(&mut self, pfn: u32) -> [u32; 2];
    /// list_add(): `pfn` goes in front of `head` (NIL: onto an empty list).
    #[inline(always)]
    fn link_before_head(&mut self, pfn: u32, head: u32) {
        link_before_head_cell(self, pfn, head)
    }
    /// list_del(): `pfn` leaves its list and its neighbours link to each other; its
    /// cell (a NIL side: it was the head, or the tail).
    #[inline(always)]
    fn unlink(&mut self, pfn: u32) -> [u32; 2] {
        unlink_cell(self, pfn)
    }
}

/// list_add() on any cells: attach in front of `head`, then point `head` back at it.
#[inline(always)]
fn link_before_head_cell<C: Cells + ?Sized>(c: &mut C, pfn: u32, head: u32) {
    c.attach(pfn, [NIL, head]);
    if head != NIL {
        c.set_prev(head, pfn);
    }
}

/// list_del() on any cells: detach, then link the neighbours to each other.
#[inline(always)]
fn unlink_cell<C: Cells + ?Sized>(c: &mut C, pfn: u32) -> [u32; 2] {
    let [prev, next] = c.detach(pfn);
    if prev != NIL {
        c.set_next(prev, next);
    }
    if next != NIL {
        c.set_prev(next, prev);
    }
    [prev, next]
}

impl Cells for Links {
    #[inline(always)]
    fn cell(&self, pfn: u32) -> [u32; 2] {
        self.get(pfn)
    }
    #[inline(always)]
    fn set_prev(&mut self, pfn: u32, prev: u32) {
        match self.chunk_of[(pfn >> 6) as usize] {
            NO_CHUNK => unattached(pfn),
            RUN => self.write_side(pfn, 0, prev),
            ci => self.pool[ci as usize][(pfn & 63) as usize][0] = prev,
        }
    }
    #[inline(always)]
    fn set_next(&mut self, pfn: u32, next: u32) {
        match self.chunk_of[(pfn >> 6) as usize] {
            NO_CHUNK => unattached(pfn),
            RUN => self.write_side(pfn, 1, next),
            ci => self.pool[ci as usize][(pfn & 63) as usize][1] = next,
        }
    }
    #[inline(always)]
    fn attach(&mut self, pfn: u32, v: [u32; 2]) {
        self.attach_cell(pfn, v);
    }
    /// The common case in one step: a run growing at its head end by the frame next to
    /// the list's head (pages faulted in ascending pfn order, each added at the LRU's
    /// head), whose prev becomes the new frame as the chain implies.
    #[inline(always)]
    fn link_before_head(&mut self, pfn: u32, head: u32) {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        if self.chunk_of[s] == RUN && head != NIL && head >> 6 == pfn >> 6 {
            let m = self.runs[s][4];
            let (lo, hi, desc, exc_off) = Run::meta(m);
            // descending: the head is hi and pfn the frame above it; ascending, the mirror;
            // a run of one takes either direction
            let grow_up = hi as u16 + 1 == o as u16 && head == pfn - 1 && (desc || lo == hi);
            let grow_down = o + 1 == lo && head == pfn + 1 && (!desc || lo == hi);
            if (grow_up || grow_down) && exc_off == NO_EXC {
                let (lo, hi) = if grow_up { (lo, o) } else { (o, hi) };
                let m = Run::meta_word(lo, hi, grow_up, NO_EXC);
                // the old head end's next (or a run of one's) stays the run's tail link
                self.runs[s][0] = NIL;
                self.runs[s][4] = m;
                self.live[s] += 1;
                return;
            }
        }
        link_before_head_cell(self, pfn, head)
    }
    /// The common case in one step: an end frame of a run leaving, its neighbour in the
    /// run taking over the link out of the run that `pfn` had (a chain taken off in pfn
    /// order: the exit's and munmap's zaps, the migrate scanner).
    #[inline(always)]
    fn unlink(&mut self, pfn: u32) -> [u32; 2] {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        if self.chunk_of[s] == RUN {
            let w = self.runs[s];
            let m = w[4];
            let (lo, hi, desc, exc_off) = Run::meta(m);
            if lo < hi && exc_off == NO_EXC && (o == lo || o == hi) {
                // the cell: the side toward the run is the neighbour, the other the run's link
                let towards_hi = o == lo;
                let inner = if towards_hi { pfn + 1 } else { pfn - 1 };
                // descending, hi is the head end (its prev is w[0]) and lo the tail end
                // (its next is w[1]); ascending, the other way round
                let v = match (desc, towards_hi) {
                    (true, true) => [inner, w[1]],
                    (true, false) => [w[0], inner],
                    (false, true) => [w[0], inner],
                    (false, false) => [inner, w[1]],
                };
                let (lo, hi) = if towards_hi { (lo + 1, hi) } else { (lo, hi - 1) };
                self.runs[s][4] = Run::meta_word(lo, hi, desc, NO_EXC);
                self.live[s] -= 1;
                let [prev, next] = v;
                if prev != NIL && prev != inner {
                    self.set_next(prev, next);
                }
                if next != NIL && next != inner {
                    self.set_prev(next, prev);
                }
                return v;
            }
        }
        unlink_cell(self, pfn)
    }
    /// `pfn` leaves its list: its cell, reset. A run loses an end frame (a frame in its
    /// middle makes it a chunk first); a group left with no cell in use has no run, and
    /// its chunk, if it had one, becomes spare.
    #[inline(always)]
    fn detach(&mut self, pfn: u32) -> [u32; 2] {
        let s = (pfn >> 6) as usize;
        let o = (pfn & 63) as u8;
        debug_assert!(self.live[s] > 0, "detach of {pfn}: its group has no cell in use");
        self.live[s] -= 1;
        let mut ci = self.chunk_of[s];
        if ci == RUN {
            let r = self.run(s);
            let base = (s as u32) << 6;
            let v = r.cell(base, o);
            if r.lo == r.hi {
                debug_assert_eq!(r.lo, o, "detach of {pfn}, outside its group's run");
                self.chunk_of[s] = NO_CHUNK;
                return v;
            }
            if o == r.lo || o == r.hi {
                // the frame next to it becomes the end: its link outward (to `pfn`, or
                // the exception's) becomes the run's own
                let mut n = r;
                let end = if o == r.lo {
                    n.lo += 1;
                    n.lo
                } else {
                    n.hi -= 1;
                    n.hi
                };
                if n.exc_off == o {
                    n.exc_off = NO_EXC;
                }
                let c = r.cell(base, end);
                if end == n.head_end() {
                    n.ext[0] = c[0];
                }
                if end == n.tail_end() {
                    n.ext[1] = c[1];
                }
                if n.exc_off == end && n.implied(base, end) == c {
                    n.exc_off = NO_EXC;
                }
                self.set_run(s, n);
                return v;
            }
            ci = self.make_chunk(s) as u32;
        }
        let v = std::mem::replace(&mut self.pool[ci as usize][o as usize], [NIL, NIL]);
        if self.live[s] == 0 {
            self.spare.push(ci);
            self.chunk_of[s] = NO_CHUNK;
        }
        v
    }
}

/// The links of free buddy blocks of order >= 1, in the block's second frame (pfn + 1):
/// a free tail (tag 0), which only says "inside a free block", so its other 61 bits are
/// free to hold [prev, next] in 30 bits each (TAIL_NIL for NIL). A walk of a free list then
/// reads one frame per entry, next to the head frame the walker reads anyway, instead of a
/// chunk index and a pool cell; and the pool keeps no chunk alive for a free block.
/// Leaving the list writes the frame back to 0 (check.rs: every other tail is 0).
pub struct TailCells<'a>(pub &'a mut [u64]);
/// NIL in a tail cell's 30-bit field; machines have at most 2 TiB (2^29 frames), so no
/// pfn reaches it (PhysMem::new checks).
pub const TAIL_NIL: u64 = (1 << 30) - 1;
#[inline(always)]
fn tail_enc(p: u32) -> u64 {
    if p == NIL {
        TAIL_NIL
    } else {
        p as u64
    }
}
#[inline(always)]
fn tail_dec(v: u64) -> u32 {
    if v == TAIL_NIL {
        NIL
    } else {
        v as u32
    }
}
/// The [prev, next] cell kept in a free block's second frame `f1`.
#[inline(always)]
pub fn tail_cell(f1: u64) -> [u32; 2] {
    [tail_dec(f1 & TAIL_NIL), tail_dec((f1 >> 30) & TAIL_NIL)]
}
#[inline(always)]
fn make_tail_cell(v: [u32; 2]) -> u64 {
    tail_enc(v[0]) | tail_enc(v[1]) << 30
}
impl Cells for TailCells<'_> {
    #[inline(always)]
    fn cell(&self, pfn: u32) -> [u32; 2] {
        tail_cell(self.0[pfn as usize + 1])
    }
    #[inline(always)]
    fn set_prev(&mut self, pfn: u32, prev: u32) {
        let f = &mut self.0[pfn as usize + 1];
        *f = (*f & !TAIL_NIL) | tail_enc(prev);
    }
    #[inline(always)]
    fn set_next(&mut self, pfn: u32, next: u32) {
        let f = &mut self.0[pfn as usize + 1];
        *f = (*f & TAIL_NIL) | tail_enc(next) << 30;
    }
    #[inline(always)]
    fn attach(&mut self, pfn: u32, v: [u32; 2]) {
        self.0[pfn as usize + 1] = make_tail_cell(v);
    }
    #[inline(always)]
    fn detach(&mut self, pfn: u32) -> [u32; 2] {
        tail_cell(std::mem::take(&mut self.0[pfn as usize + 1]))
    }
}

/// A doubly-linked list of folios or free blocks (head pfns) threaded through `Cells`.
#[derive(Clone, Copy, Debug)]
pub struct List {
    pub head: u32,
    pub tail: u32,
    /// folios on the list
    pub len: u64,
    /// base pages on the list (a THP counts 512)
    pub pages: u64,
}
impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL, len: 0, pages: 0 }
    }
}
impl List {
    /// Add at the head (most recently used end), like list_add.
    #[inline(always)]
    pub fn push_head<C: Cells>(&mut self, links: &mut C, pfn: u32, nr: u64) {
        links.link_before_head(pfn, self.head);
        if self.head == NIL {
            self.tail = pfn;
        }
        self.head = pfn;
        self.len += 1;
        self.pages += nr;
    }
    /// Add at the tail (next to be scanned), like list_add_tail.
    #[inline(always)]
    pub fn push_tail<C: Cells>(&mut self, links: &mut C, pfn: u32, nr: u64) {
        links.attach(pfn, [self.tail, NIL]);
        if self.tail != NIL {
            links.set_next(self.tail, pfn);
        } else {
            self.head = pfn;
        }
        self.tail = pfn;
        self.len += 1;
        self.pages += nr;
    }
    /// The entry after `pfn` (towards the tail), NIL at the tail.
    #[inline]
    pub fn next<C: Cells>(links: &C, pfn: u32) -> u32 {
        links.cell(pfn)[1]
    }
    /// The entry before `pfn` (towards the head), NIL at the head.
    #[inline]
    pub fn prev<C: Cells>(links: &C, pfn: u32) -> u32 {
        links.cell(pfn)[0]
    }
    /// move_freelist_tail(): move the entries from the head up to and including `pfn`
    /// behind the tail (list_cut_position + list_splice_tail).
    pub fn rotate_through<C: Cells>(&mut self, links: &mut C, pfn: u32) {
        let next = Self::next(links, pfn);
        if next == NIL {
            return;
        }
        let (old_head, old_tail) = (self.head, self.tail);
        links.set_next(old_tail, old_head);
        links.set_prev(old_head, old_tail);
        links.set_next(pfn, NIL);
        links.set_prev(next, NIL);
        self.head = next;
        self.tail = pfn;
    }
    /// move_freelist_head(): move the entries before `pfn` behind the tail, so that `pfn`
    /// becomes the head (list_cut_before + list_splice_tail).
    pub fn rotate_to<C: Cells>(&mut self, links: &mut C, pfn: u32) {
        let prev = Self::prev(links, pfn);
        if prev != NIL {
            self.rotate_through(links, prev);
        }
    }
    /// Take `pfn` off the list (its cell is reset, as detach() does).
    #[inline(always)]
    pub fn remove<C: Cells>(&mut self, links: &mut C, pfn: u32, nr: u64) {
        let [prev, next] = links.unlink(pfn);
        if prev == NIL {
            self.head = next;
        }
        if next == NIL {
            self.tail = prev;
        }
        self.len -= 1;
        self.pages -= nr;
    }
}

#[cold]
#[inline(never)]
fn unattached(pfn: u32) -> ! {
    panic!("list entry {pfn} has no link cell")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn encoding() {
        let f = make_anon(COMPOUND_HEAD);
        assert_eq!(tag(f), TAG_ANON);
        assert_eq!(rmap(f), None);
        let f = with_rmap(f, Some((MAX_SLOTS - 1, 511)));
        assert_eq!(rmap(f), Some((MAX_SLOTS - 1, 511)));
        let f = with_content(set_young(set_dirty(f, true), true), 0xbeef);
        assert_eq!(content(f), 0xbeef);
        assert!(young(f) && dirty(f));
        assert_eq!(compound(f), COMPOUND_HEAD);
        assert_eq!(rmap(f), Some((MAX_SLOTS - 1, 511)));
        let f = with_lru(f, LRU_ACTIVE_ANON);
        assert_eq!(lru(f), LRU_ACTIVE_ANON);
        let f = set_swapcache(set_referenced(f, true), true);
        assert!(referenced(f) && swapcache(f));
        assert_eq!(rmap(f), Some((MAX_SLOTS - 1, 511)));
        assert_eq!(lru_index(set_lazyfree(f, true)), LRU_ACTIVE_FILE as usize);
        let f = set_swapcache(set_referenced(f, false), false);
        assert!(!referenced(f) && !swapcache(f));
        assert_eq!(tag(f), TAG_ANON);
        assert_eq!(tag(0), TAG_FREE_TAIL);
        assert_eq!(free_order(make_free(10, 3)), 10);
        assert_eq!(free_mt(make_free(10, 3)), 3);
        assert_eq!((tag(make_pcp(9, 1)), free_order(make_pcp(9, 1)), free_mt(make_pcp(9, 1))), (TAG_PCP, 9, 1));
        // folio order in the first tail; head lookup for PMD and mTHP folios
        let mut frames = vec![0u64; 1024];
        for o in [4u32, 2, 9] {
            let base = if o == 9 { 512 } else { 0 } + if o == 2 { 16 } else { 0 };
            for i in 0..1u64 << o {
                frames[(base + i) as usize] = make_anon(if i == 0 { COMPOUND_HEAD } else { COMPOUND_TAIL });
            }
            frames[base as usize + 1] = with_first_tail_order(set_young(frames[base as usize + 1], false), o);
            assert_eq!(folio_order(&frames, base), o);
            for i in 0..1u64 << o {
                assert_eq!(folio_head(&frames, base + i), base, "order {o} page {i}");
            }
        }
        assert_eq!(first_tail_order(make_anon(COMPOUND_TAIL)), HPAGE_PMD_ORDER);
        assert_eq!(folio_order(&frames, 20), 0);
    }
    #[test]
    fn lists() {
        let mut links = Links::new(1024);
        let mut l = List::default();
        l.push_head(&mut links, 5, 1);
        l.push_head(&mut links, 7, 512);
        l.push_tail(&mut links, 900, 1);
        assert_eq!((l.head, l.tail, l.len, l.pages), (7, 900, 3, 514));
        // pfn 5 alone was a run; 7 joined its group away from it, so group 0 took a chunk;
        // 900 is a run of one in group 14
        assert_eq!((links.pool_chunks(), links.runs_in_use()), (1, 1));
        l.remove(&mut links, 5, 1);
        assert_eq!(links.get(7), [NIL, 900]);
        l.remove(&mut links, 7, 512);
        l.remove(&mut links, 900, 1);
        assert_eq!((l.head, l.tail, l.len), (NIL, NIL, 0));
        // group 0's emptied chunk stays in the pool as a spare, which a copy leaves out
        // and the next group to need a chunk takes; group 14's run is gone
        assert_eq!((links.pool_chunks(), links.spare.len(), links.runs_in_use()), (1, 1, 0));
        assert_eq!(links.clone().pool_chunks(), 0);
        l.push_tail(&mut links, 901, 1);
        l.push_tail(&mut links, 904, 1);
        assert_eq!((links.pool_chunks(), links.spare.len(), links.runs_in_use()), (1, 0, 0));
        let mut copy = links.clone();
        assert_eq!((copy.pool_chunks(), copy.spare.len()), (1, 0));
        assert_eq!(copy.heap_bytes(), 16 * 25 + 64 * 8);
        l.push_head(&mut copy, 3, 1);
        assert_eq!((List::next(&copy, 3), List::prev(&copy, 901)), (901, 3));
        for p in [3, 901, 904] {
            l.remove(&mut copy, p, 1);
        }
        assert_eq!((l.head, l.tail, l.len), (NIL, NIL, 0));
        assert_eq!((copy.pool_chunks(), copy.spare.len(), copy.runs_in_use()), (1, 1, 0));
        // pages faulted in ascending pfn order, each added at the head: one run per group
        // (the chain crosses from group to group through the runs' outward links), each
        // end taken off in turn, no chunk
        for p in 60..200 {
            l.push_head(&mut copy, p, 1);
        }
        assert_eq!((copy.pool_chunks(), copy.runs_in_use()), (1, 4));
        assert_eq!((copy.get(63), copy.get(64), copy.get(100)), ([64, 62], [65, 63], [101, 99]));
        assert_eq!(copy.check_chunks(), Ok(()));
        for p in (60..130).chain((130..200).rev()) {
            l.remove(&mut copy, p, 1);
            assert_eq!(copy.pool_chunks(), 1, "{p} left from an end");
        }
        // a frame in the middle of a run leaving makes it a chunk (the spare one)
        for p in 0..10 {
            l.push_tail(&mut copy, p, 1);
        }
        assert_eq!(copy.get(4), [3, 5]);
        l.remove(&mut copy, 4, 1);
        assert_eq!((copy.pool_chunks(), copy.spare.len(), copy.runs_in_use()), (1, 0, 0));
        assert_eq!((copy.get(3), copy.get(5)), ([2, 5], [3, 6]));
        for p in (0..10).filter(|&p| p != 4) {
            l.remove(&mut copy, p, 1);
        }
        l.push_tail(&mut copy, 200, 1);
        l.push_tail(&mut copy, 300, 1);
        assert_eq!((copy.get(200), copy.get(300)), ([NIL, 300], [200, NIL]));
        assert_eq!(copy.check_chunks(), Ok(()));
        l.remove(&mut copy, 200, 1);
        l.remove(&mut copy, 300, 1);
        assert_eq!(copy.check_chunks(), Ok(()));
        // the checker sees a spare that still links, a chunk claimed twice, a run that
        // miscounts its cells
        let mut bad = copy.clone();
        bad.spare.push(0);
        bad.pool.push([[NIL, NIL]; 64]);
        bad.pool[0][1] = [3, NIL];
        assert!(bad.check_chunks().unwrap_err().contains("spare chunk 0"));
        let mut bad = copy.clone();
        l.push_tail(&mut bad, 20, 1);
        bad.live[0] = 2;
        assert!(bad.check_chunks().unwrap_err().contains("a run over 20..=20 and 2 cells"));
        copy.spare.push(copy.spare[0]);
        assert!(copy.check_chunks().unwrap_err().contains("claimed twice"));
        rotations(&mut links);
    }

    /// Plain cells, one per frame: what `Links` must agree with.
    struct Plain(Vec<[u32; 2]>);
    impl Cells for Plain {
        fn cell(&self, pfn: u32) -> [u32; 2] {
            self.0[pfn as usize]
        }
        fn set_prev(&mut self, pfn: u32, prev: u32) {
            self.0[pfn as usize][0] = prev;
        }
        fn set_next(&mut self, pfn: u32, next: u32) {
            self.0[pfn as usize][1] = next;
        }
        fn attach(&mut self, pfn: u32, v: [u32; 2]) {
            self.0[pfn as usize] = v;
        }
        fn detach(&mut self, pfn: u32) -> [u32; 2] {
            std::mem::replace(&mut self.0[pfn as usize], [NIL, NIL])
        }
    }

    proptest::proptest! {
        /// Any sequence of list operations (biased to the pfn next to the last one, as
        /// fills, frees and scanners go) leaves `Links`' cells, runs and chunks, equal to
        /// plain cells', and its bookkeeping consistent; a copy agrees too.
        #[test]
        fn links_agree_with_plain_cells(ops in proptest::collection::vec((0u8..6, 0u32..256, 0u32..24, proptest::bool::ANY, proptest::bool::ANY), 1..100)) {
            const N: u32 = 256;
            let mut links = Links::new(N as u64);
            let mut plain = Plain(vec![[NIL, NIL]; N as usize]);
            let mut lists = [List::default(); 2];
            let mut plists = [List::default(); 2];
            let mut on: Vec<Option<usize>> = vec![None; N as usize];
            // each op is a streak: the same operation on `k` frames in a row, up or down
            // (as fills, frees and scanners go), starting at a random frame
            for (op, r, k, which, up) in ops {
              for j in 0..k.max(1) {
                let pfn = if up { (r + j) % N } else { (r + N - j % N) % N };
                let li = which as usize;
                match (op, on[pfn as usize]) {
                    (0 | 1, None) => {
                        if op == 0 {
                            lists[li].push_head(&mut links, pfn, 1);
                            plists[li].push_head(&mut plain, pfn, 1);
                        } else {
                            lists[li].push_tail(&mut links, pfn, 1);
                            plists[li].push_tail(&mut plain, pfn, 1);
                        }
                        on[pfn as usize] = Some(li);
                    }
                    (2 | 3, Some(l)) => {
                        lists[l].remove(&mut links, pfn, 1);
                        plists[l].remove(&mut plain, pfn, 1);
                        on[pfn as usize] = None;
                    }
                    (4, Some(l)) => {
                        lists[l].rotate_through(&mut links, pfn);
                        plists[l].rotate_through(&mut plain, pfn);
                    }
                    (5, Some(l)) => {
                        lists[l].rotate_to(&mut links, pfn);
                        plists[l].rotate_to(&mut plain, pfn);
                    }
                    _ => {}
                }
                proptest::prop_assert_eq!(links.check_chunks(), Ok(()));
                for p in 0..N {
                    proptest::prop_assert_eq!(links.get(p), plain.0[p as usize], "pfn {}", p);
                }
                for (a, b) in lists.iter().zip(&plists) {
                    proptest::prop_assert_eq!((a.head, a.tail, a.len), (b.head, b.tail, b.len));
                }
              }
            }
            let copy = links.clone();
            proptest::prop_assert_eq!(copy.check_chunks(), Ok(()));
            for p in 0..N {
                proptest::prop_assert_eq!(copy.get(p), plain.0[p as usize]);
            }
        }
    }

    /// [1 2 3 4] -> through 2 -> [3 4 1 2] -> to 1 -> [1 2 3 4], on either store; the
    /// list's links agree both ways after each step.
    fn rotations<C: Cells>(links: &mut C) {
        let order = |l: &List, links: &C| {
            let mut v = vec![];
            let mut p = l.head;
            while p != NIL {
                v.push(p);
                p = List::next(links, p);
            }
            v
        };
        let back = |l: &List, links: &C| {
            let mut v = vec![];
            let mut p = l.tail;
            while p != NIL {
                v.push(p);
                p = List::prev(links, p);
            }
            v.reverse();
            v
        };
        let mut l = List::default();
        for p in [2, 4, 6, 8] {
            l.push_tail(links, p, 2);
        }
        l.rotate_through(links, 4);
        assert_eq!(order(&l, links), [6, 8, 2, 4]);
        assert_eq!(back(&l, links), order(&l, links));
        assert_eq!((l.head, l.tail), (6, 4));
        assert_eq!(List::prev(links, 6), NIL);
        l.rotate_to(links, 2);
        assert_eq!(order(&l, links), [2, 4, 6, 8]);
        l.rotate_through(links, 8);
        assert_eq!(order(&l, links), [2, 4, 6, 8]);
        l.rotate_to(links, 2);
        assert_eq!(order(&l, links), [2, 4, 6, 8]);
        assert_eq!(back(&l, links), [2, 4, 6, 8]);
        l.remove(links, 4, 2);
        l.push_head(links, 10, 2);
        assert_eq!(order(&l, links), [10, 2, 6, 8]);
        assert_eq!(back(&l, links), [10, 2, 6, 8]);
        for p in [10, 2, 6, 8] {
            l.remove(links, p, 2);
        }
        assert_eq!((l.head, l.tail, l.len, l.pages), (NIL, NIL, 0, 0));
    }

    /// Free blocks' cells in their second frame: the frame stays a free tail while listed
    /// (the largest pfn a machine can have included), and is 0 again once off the list.
    #[test]
    fn tail_cells() {
        let mut frames = vec![0u64; 16];
        rotations(&mut TailCells(&mut frames));
        assert!(frames.iter().all(|&f| f == 0), "every block left its list: {frames:?}");
        let top = (TAIL_NIL - 1) as u32;
        for v in [[NIL, NIL], [top, NIL], [NIL, top], [top, 0], [5, top]] {
            let f = make_tail_cell(v);
            assert_eq!((tag(f), tail_cell(f)), (TAG_FREE_TAIL, v));
        }
        let mut l = List::default();
        let mut cells = TailCells(&mut frames);
        l.push_head(&mut cells, 4, 4);
        l.push_head(&mut cells, 0, 4);
        assert_eq!(tail_cell(frames[1]), [NIL, 4]);
        assert_eq!(tail_cell(frames[5]), [0, NIL]);
        assert_ne!(frames[1], 0);
        l.remove(&mut TailCells(&mut frames), 0, 4);
        assert_eq!((frames[1], tail_cell(frames[5])), (0, [NIL, NIL]));
    }
}
