//! The model's own memory on the host (not a kernel mechanism): a global allocator that
//! asks for transparent huge pages for the model's large arrays.
//!
//! At the seeds' scale one model state holds gigabytes (the frame array alone is 8 bytes
//! per simulated 4 KiB page: 2 GiB for a 1 TiB machine), read and written at addresses
//! spread over all of it. On a host whose THP mode is `madvise` (this project's VM) those
//! arrays sit in 4 KiB pages: almost every access misses the TLB, and every first touch is
//! a page fault. `HugePageAlloc` is the system allocator plus madvise(MADV_HUGEPAGE) over
//! the 2 MiB-aligned part of every allocation of at least `HUGE_MIN` bytes (glibc serves
//! those with their own mmap, so the advice covers only our own mapping; a realloc that
//! moves it with mremap keeps the advice). Smaller allocations are untouched, so the small
//! machines of the tests do not use huge pages at all. Binaries that run large models
//! install it: `#[global_allocator] static A: thplab_model::host_alloc::HugePageAlloc =
//! thplab_model::host_alloc::HugePageAlloc;` (the Python extension and `runwl` do).
//!
//! Measured on the 2-core VM (loaded by other work), seed 004's (a) and (b) runs at 1 TiB
//! through one shared prefix: 152 s of wall time with 4 KiB pages, 144 s with this
//! allocator, 134 s with glibc's `glibc.malloc.hugetlb=1` tunable, which advises every
//! malloc arena (the PTE tables' small blocks too).
//!
//! While a scope (`keep_freed()`) is open, large blocks freed are kept instead of going
//! back to the host, and a later allocation of the same size and alignment takes one:
//! `run_shared` opens one, so that its copies of the prefix's state land in memory that a
//! finished run (seed 004's (c) beside the prefix, a finished continuation) already had
//! backed, instead of fresh memory (on this project's VM a first touch costs the host's
//! fault and the guest's clearing of each 2 MiB: most of a 5 GiB copy's 7-9 s). The kept
//! blocks go back when the last scope closes.
//!
//! `prewarm()` fills the keep pool ahead of need: it allocates blocks of given layouts
//! and writes every 4 KiB of them, so that the host backs them before a copy wants them.
//! On this project's VM memory no one touched for a few seconds is memory the host took
//! back (free page reporting: the guest reports its free 2 MiB blocks), and a first touch
//! costs ~4 s per GiB of one CPU (a 2 GiB memset: 8-9 s fresh, 0.2 s again at once; two
//! threads touch 4 GiB in the time one touches 2). The PTE tables (2 KiB boxes, ~1 GiB
//! per state at 1 TiB) are many small allocations, which glibc serves from its arenas;
//! while a scope is open they come from a slab of 32 MiB chunks instead (`TABLE_BLOCK`),
//! which prewarm() fills too and a finished run's tables refill. `run_shared` prewarms at
//! the lowest priority during the prefix, on the CPU that seed 004's (c) leaves idle once
//! it is done. 2026-11-27 on a freshly booted VM (`thplab seeds --only 004`): copy 1
//! 7.6 -> 0.9 s, copy 2 20.6 -> 2.0 s, the whole seed 95 -> 70 s, results unchanged.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Allocations from this size up are advised (a 16 GiB machine's frame array is 32 MiB).
pub const HUGE_MIN: usize = 32 << 20;
const HPAGE_SIZE: usize = 2 << 20;

/// The system allocator, with MADV_HUGEPAGE over large allocations.
pub struct HugePageAlloc;

/// Large allocations are advised (`set_advise`).
static ADVISE: AtomicBool = AtomicBool::new(true);

/// Advise large allocations from now on (`true`, the default) or not. A process that also
/// drives live runs turns it off before its first model run: MADV_HUGEPAGE puts its mm on
/// khugepaged's list (khugepaged_enter_vma) until it exits, and while the list is not empty
/// khugepaged sleeps its scan_sleep_millisecs timer out and a workload's first
/// MADV_HUGEPAGE wakes nothing (__khugepaged_enter wakes it onto an empty list only), where
/// the model's khugepaged starts at once; its passes also spend their pages_to_scan on this
/// process's arrays (`thplab validate`: khugepaged_collapse_time_100/1000's first collapses
/// came one scan_sleep_millisecs after the madvise, 100 ms / 1 s, against ~20 ms alone;
/// 2026-12-05).
pub fn set_advise(on: bool) {
    ADVISE.store(on, Ordering::Relaxed);
}

/// madvise(MADV_HUGEPAGE) over the whole 2 MiB pages inside [p, p + size).
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < HUGE_MIN || !ADVISE.load(Ordering::Relaxed) {
        return;
    }
    let start = (p as usize).next_multiple_of(HPAGE_SIZE);
    let end = (p as usize + size) & !(HPAGE_SIZE - 1);
    if end > start {
        // SAFETY: the range lies inside the allocation just made; the advice changes how
        // the kernel backs it, never its contents. A failure (THP compiled out) is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Blocks from this size up are kept while a keep_freed() scope is open.
pub const KEEP_MIN: usize = 64 << 20;
const KEPT_SLOTS: usize = 32;

/// Freed blocks kept for reuse: (address, size, align), 0 for an empty slot. A fixed array,
/// so that keeping and taking never allocate.
static KEPT: Mutex<[(usize, usize, usize); KEPT_SLOTS]> = Mutex::new([(0, 0, 0); KEPT_SLOTS]);
/// HugePageAlloc has served an allocation (it is the global allocator, or a test calls it).
static SERVING: AtomicBool = AtomicBool::new(false);
/// Open keep_freed() scopes.
static KEEPING: AtomicUsize = AtomicUsize::new(0);

/// While the returned guard lives, large blocks freed are kept for allocations of the same
/// layout (by any thread); when the last guard drops, the kept blocks are freed.
pub fn keep_freed() -> KeepFreed {
    KEEPING.fetch_add(1, Ordering::SeqCst);
    KeepFreed(())
}

/// The scope of keep_freed().
pub struct KeepFreed(());

impl Drop for KeepFreed {
    fn drop(&mut self) {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        if KEEPING.fetch_sub(1, Ordering::SeqCst) == 1 {
            for slot in kept.iter_mut().filter(|s| s.0 != 0) {
                let (p, size, align) = std::mem::take(slot);
                // SAFETY: the block was allocated by System with this layout and kept
                // instead of freed; it leaves the array before it is freed, once.
                unsafe { System.dealloc(p as *mut u8, Layout::from_size_align_unchecked(size, align)) };
            }
        }
        drop(kept);
        SLAB.lock().unwrap_or_else(|e| e.into_inner()).release_if_unused();
    }
}

/// The size of a PTE table's block (`Box<[u32; 512]>`, pgtable.rs). A model at the seeds'
/// scale holds hundreds of thousands (1 GiB at 1 TiB); while a keep_freed() scope is open
/// they come from the table slab below, so that a copy's tables land in memory a finished
/// run freed or `prewarm()` backed, as the large blocks do.
pub const TABLE_BLOCK: usize = 2048;
const SLAB_CHUNK: usize = 32 << 20;
const SLAB_CHUNKS: usize = 1024;
// a chunk is large enough for the hugepage advice
const _: () = assert!(SLAB_CHUNK >= HUGE_MIN);

/// Blocks of TABLE_BLOCK bytes carved from chunks of SLAB_CHUNK: a free list threaded
/// through the free blocks (each holds the next's address), the current chunk's unused
/// room, and the chunks' addresses in order (a block is the slab's when it lies in one).
/// Fixed arrays, so that the allocator never allocates for itself. The chunks go back
/// when no scope is open and no block is out.
struct Slab {
    chunks: [usize; SLAB_CHUNKS],
    nchunks: usize,
    free: usize,
    nfree: usize,
    bump: usize,
    bump_end: usize,
    out: usize,
}

/// Chunks the slab holds (read without its lock: 0 means no block can be the slab's).
static SLAB_HELD: AtomicUsize = AtomicUsize::new(0);

static SLAB: Mutex<Slab> =
    Mutex::new(Slab { chunks: [0; SLAB_CHUNKS], nchunks: 0, free: 0, nfree: 0, bump: 0, bump_end: 0, out: 0 });

const CHUNK_LAYOUT: Layout = match Layout::from_size_align(SLAB_CHUNK, 4096) {
    Ok(l) => l,
    Err(_) => panic!("the slab chunk's layout"),
};

fn slab_layout(layout: Layout) -> bool {
    layout.size() == TABLE_BLOCK && layout.align() <= 16
}

impl Slab {
    fn owns(&self, p: usize) -> bool {
        let c = &self.chunks[..self.nchunks];
        let i = c.partition_point(|&b| b <= p);
        i > 0 && p < c[i - 1] + SLAB_CHUNK
    }
    /// Add a chunk allocated by System with CHUNK_LAYOUT (false: the array is full).
    fn add_chunk(&mut self, base: usize) -> bool {
        if self.nchunks == SLAB_CHUNKS {
            return false;
        }
        let i = self.chunks[..self.nchunks].partition_point(|&b| b < base);
        self.chunks.copy_within(i..self.nchunks, i + 1);
        self.chunks[i] = base;
        self.nchunks += 1;
        SLAB_HELD.store(self.nchunks, Ordering::SeqCst);
        true
    }
    fn take(&mut self) -> Option<*mut u8> {
        if self.free != 0 {
            let p = self.free;
            // SAFETY: a free block of the slab holds the next free block's address
            self.free = unsafe { (p as *const usize).read() };
            self.nfree -= 1;
            self.out += 1;
            return Some(p as *mut u8);
        }
        if self.bump == self.bump_end {
            // SAFETY: a non-zero size
            let base = unsafe { System.alloc(CHUNK_LAYOUT) } as usize;
            if base == 0 {
                return None;
            }
            if !self.add_chunk(base) {
                // SAFETY: just allocated with this layout
                unsafe { System.dealloc(base as *mut u8, CHUNK_LAYOUT) };
                return None;
            }
            advise(base as *mut u8, SLAB_CHUNK);
            (self.bump, self.bump_end) = (base, base + SLAB_CHUNK);
        }
        let p = self.bump;
        self.bump += TABLE_BLOCK;
        self.out += 1;
        Some(p as *mut u8)
    }
    fn put(&mut self, p: usize) {
        // SAFETY: the block is the slab's and no longer in use: it holds the list's link
        unsafe { (p as *mut usize).write(self.free) };
        self.free = p;
        self.nfree += 1;
        self.out -= 1;
        self.release_if_unused();
    }
    /// Give every chunk back when no scope is open and no block is out.
    fn release_if_unused(&mut self) {
        if self.out != 0 || self.nchunks == 0 || KEEPING.load(Ordering::SeqCst) != 0 {
            return;
        }
        for &b in &self.chunks[..self.nchunks] {
            // SAFETY: each chunk was allocated by System with CHUNK_LAYOUT; none of its
            // blocks is in use
            unsafe { System.dealloc(b as *mut u8, CHUNK_LAYOUT) };
        }
        (self.nchunks, self.free, self.nfree, self.bump, self.bump_end) = (0, 0, 0, 0, 0);
        SLAB_HELD.store(0, Ordering::SeqCst);
    }
}

/// Table blocks the slab can give without a fresh chunk (tests, prewarm()).
pub fn slab_room() -> usize {
    let s = SLAB.lock().unwrap_or_else(|e| e.into_inner());
    s.nfree + (s.bump_end - s.bump) / TABLE_BLOCK
}

/// Inside a scope, add a chunk to the slab, its blocks written (the host's first touches,
/// done outside the lock) and chained onto the free list; `stop` ends the writing early,
/// and only the blocks written join the list (the rest of the chunk is never touched).
/// Returns the bytes written.
fn prewarm_slab_chunk(stop: &AtomicBool) -> usize {
    const PER_CHUNK: usize = SLAB_CHUNK / TABLE_BLOCK;
    // SAFETY: a non-zero size
    let base = unsafe { System.alloc(CHUNK_LAYOUT) } as usize;
    if base == 0 {
        return 0;
    }
    advise(base as *mut u8, SLAB_CHUNK);
    let mut n = 0;
    while n < PER_CHUNK && !stop.load(Ordering::Relaxed) {
        let p = base + n * TABLE_BLOCK;
        // SAFETY: inside the chunk just allocated: each block links to the next
        unsafe { (p as *mut usize).write(p + TABLE_BLOCK) };
        n += 1;
    }
    let mut s = SLAB.lock().unwrap_or_else(|e| e.into_inner());
    if n == 0 || KEEPING.load(Ordering::SeqCst) == 0 || !s.add_chunk(base) {
        drop(s);
        // SAFETY: allocated above with this layout, never handed out
        unsafe { System.dealloc(base as *mut u8, CHUNK_LAYOUT) };
        return 0;
    }
    // SAFETY: the last block written ends the chain: it links to the list's old head
    unsafe { ((base + (n - 1) * TABLE_BLOCK) as *mut usize).write(s.free) };
    s.free = base;
    s.nfree += n;
    n * TABLE_BLOCK
}

/// A table block from the slab while a scope is open.
fn take_table(layout: Layout) -> Option<*mut u8> {
    if !slab_layout(layout) || KEEPING.load(Ordering::SeqCst) == 0 {
        return None;
    }
    SLAB.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The slab, locked, if a block of `layout` at `p` is its (None: System's).
fn slab_of(p: *mut u8, layout: Layout) -> Option<std::sync::MutexGuard<'static, Slab>> {
    if !slab_layout(layout) || SLAB_HELD.load(Ordering::SeqCst) == 0 {
        return None;
    }
    Some(SLAB.lock().unwrap_or_else(|e| e.into_inner())).filter(|s| s.owns(p as usize))
}

/// Give a block back to the slab if it is the slab's (false: the caller frees it).
fn put_table(p: *mut u8, layout: Layout) -> bool {
    slab_of(p, layout).map(|mut s| s.put(p as usize)).is_some()
}

/// Blocks kept now (tests).
pub fn kept_blocks() -> usize {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|s| s.0 != 0).count()
}

/// Does the kept-block slot hold a block of exactly `layout`?
fn holds(slot: &(usize, usize, usize), layout: Layout) -> bool {
    slot.0 != 0 && slot.1 == layout.size() && slot.2 == layout.align()
}

/// Blocks of `layout` kept now.
fn kept_of(layout: Layout) -> usize {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|s| holds(s, layout)).count()
}

/// What `prewarm()` backs, in order.
#[derive(Clone, Copy, Debug)]
pub enum Warm {
    /// blocks of this layout until this many are kept
    Blocks(Layout, usize),
    /// table blocks (TABLE_BLOCK) until the slab can give this many without a fresh chunk
    Tables(usize),
}

/// Inside a keep_freed() scope, back what `plan` asks, item after item: each block
/// allocated, advised and written every 4 KiB (the host's first touch), then kept for the
/// next allocation of its layout; table blocks a slab chunk at a time. `stop` ends it
/// early (a large block being written is kept as far as it got). Returns the bytes
/// written. Outside a scope it does nothing (the blocks would go straight back).
pub fn prewarm(plan: &[Warm], stop: &AtomicBool) -> usize {
    const STEP: usize = 4096;
    let mut written = 0;
    // without HugePageAlloc as the global allocator nothing would take the blocks
    let open = || KEEPING.load(Ordering::SeqCst) > 0 && SERVING.load(Ordering::Relaxed);
    for &w in plan {
        match w {
            Warm::Blocks(layout, want) => {
                while layout.size() >= KEEP_MIN && open() && !stop.load(Ordering::Relaxed) && kept_of(layout) < want {
                    // SAFETY: a non-zero size; the block is written within its size only,
                    // then kept (or freed) with the layout it was allocated with.
                    unsafe {
                        let p = System.alloc(layout);
                        if p.is_null() {
                            return written;
                        }
                        advise(p, layout.size());
                        let mut off = 0;
                        while off < layout.size() && !stop.load(Ordering::Relaxed) {
                            p.add(off).write_volatile(0);
                            off += STEP;
                        }
                        written += off.min(layout.size());
                        if !keep(p, layout) {
                            System.dealloc(p, layout);
                        }
                    }
                }
            }
            Warm::Tables(want) => {
                while open() && !stop.load(Ordering::Relaxed) && slab_room() < want {
                    let n = prewarm_slab_chunk(stop);
                    if n == 0 {
                        break;
                    }
                    written += n;
                }
            }
        }
    }
    written
}

/// A kept block of exactly `layout`, taken out of the array.
fn take_kept(layout: Layout) -> Option<*mut u8> {
    if layout.size() < KEEP_MIN {
        return None;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let slot = kept.iter_mut().find(|s| holds(s, layout))?;
    Some(std::mem::take(slot).0 as *mut u8)
}

/// Keep a freed block if a scope is open and there is room; false: the caller frees it.
fn keep(p: *mut u8, layout: Layout) -> bool {
    if layout.size() < KEEP_MIN || KEEPING.load(Ordering::SeqCst) == 0 {
        return false;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    // checked under the lock: the last scope's drop empties the array under it
    if KEEPING.load(Ordering::SeqCst) == 0 {
        return false;
    }
    match kept.iter_mut().find(|s| s.0 == 0) {
        Some(slot) => {
            *slot = (p as usize, layout.size(), layout.align());
            true
        }
        None => false,
    }
}

// SAFETY: every block comes from System with the layout it is used with: a kept block was
// allocated by System with exactly the layout that takes it again, and is freed by System
// with that layout. advise() only adds advice.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !SERVING.load(Ordering::Relaxed) {
            SERVING.store(true, Ordering::Relaxed);
        }
        if let Some(p) = take_table(layout) {
            return p;
        }
        if let Some(p) = take_kept(layout) {
            return p;
        }
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = take_table(layout).or_else(|| take_kept(layout)) {
            // SAFETY: the kept block holds layout.size() bytes
            unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            return p;
        }
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if put_table(ptr, layout) || keep(ptr, layout) {
            return;
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if slab_of(ptr, layout).is_some() {
            // a slab block is not System's: move it
            // SAFETY: the new layout is valid (GlobalAlloc::realloc's contract); the copy
            // stays within both blocks; the old block is given back once
            unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                let q = self.alloc(new);
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                return q;
            }
        }
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is global: the tests that open scopes take turns.
    static SCOPES: Mutex<()> = Mutex::new(());

    /// A large allocation through HugePageAlloc gets a VMA with the hugepage advice (smaps
    /// lists "hg" in its VmFlags); a small one does not, nor a large one while set_advise
    /// has the advice off.
    #[test]
    fn a_large_allocation_is_advised_for_huge_pages() {
        let flags_of = |p: usize| -> Option<bool> {
            let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
            let mut inside = false;
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-')) {
                    let (a, b) = range.split_once('-')?;
                    let (a, b) = (usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?);
                    inside = (a..b).contains(&p);
                } else if inside && line.starts_with("VmFlags:") {
                    return Some(line.split_whitespace().any(|f| f == "hg"));
                }
            }
            None
        };
        let big = Layout::from_size_align(HUGE_MIN + 4 * HPAGE_SIZE, 8).unwrap();
        let small = Layout::from_size_align(1 << 20, 8).unwrap();
        unsafe {
            let p = HugePageAlloc.alloc_zeroed(big);
            let q = HugePageAlloc.alloc(small);
            let mid = (p as usize + big.size() / 2) & !(HPAGE_SIZE - 1);
            // no smaps (no procfs in a sandbox): nothing to check
            if let Some(hg) = flags_of(mid) {
                assert!(hg, "the large allocation is advised");
                assert_eq!(flags_of(q as usize), Some(false), "the small one is not");
                // a process that drives live runs turns the advice off (set_advise)
                set_advise(false);
                let r = HugePageAlloc.alloc(big);
                set_advise(true);
                let mid_r = (r as usize + big.size() / 2) & !(HPAGE_SIZE - 1);
                assert_eq!(flags_of(mid_r), Some(false), "not advised while the advice is off");
                HugePageAlloc.dealloc(r, big);
            }
            HugePageAlloc.dealloc(p, big);
            HugePageAlloc.dealloc(q, small);
        }
    }

    /// Inside a keep_freed() scope a large block freed is kept and taken again by an
    /// allocation of the same layout (zeroed if asked); another layout gets its own; the
    /// kept blocks are freed when the scope closes.
    #[test]
    fn freed_blocks_are_kept_inside_a_scope() {
        let _turn = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
        let big = Layout::from_size_align(KEEP_MIN + 3 * HPAGE_SIZE, 8).unwrap();
        let other = Layout::from_size_align(KEEP_MIN + 5 * HPAGE_SIZE, 8).unwrap();
        unsafe {
            let outside = HugePageAlloc.alloc(big);
            HugePageAlloc.dealloc(outside, big);
            let before = kept_blocks();
            {
                let _scope = keep_freed();
                let p = HugePageAlloc.alloc(big);
                p.write_bytes(7, big.size());
                HugePageAlloc.dealloc(p, big);
                assert!(kept_blocks() > before, "kept");
                let q = HugePageAlloc.alloc(other);
                assert_ne!(q, p, "another layout does not take it");
                let z = HugePageAlloc.alloc_zeroed(big);
                assert_eq!(z, p, "the same layout takes the kept block");
                assert!(std::slice::from_raw_parts(z, big.size()).iter().all(|&b| b == 0), "zeroed");
                HugePageAlloc.dealloc(z, big);
                HugePageAlloc.dealloc(q, other);
            }
            assert_eq!(kept_blocks(), 0, "freed when the scope closes");
        }
    }

    /// prewarm() keeps blocks of the layout until `want` are kept (counting one freed
    /// there already), which allocations of that layout then take; outside a scope or once
    /// stopped it keeps nothing more.
    #[test]
    fn prewarm_fills_the_pool_up_to_want() {
        let _turn = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
        let l = Layout::from_size_align(KEEP_MIN + 7 * HPAGE_SIZE, 8).unwrap();
        let stop = AtomicBool::new(false);
        assert_eq!(prewarm(&[Warm::Blocks(l, 2)], &stop), 0, "no scope: nothing");
        unsafe { HugePageAlloc.dealloc(HugePageAlloc.alloc(Layout::new::<u64>()), Layout::new::<u64>()) };
        assert_eq!(kept_of(l), 0);
        let _scope = keep_freed();
        unsafe {
            let p = HugePageAlloc.alloc(l);
            HugePageAlloc.dealloc(p, l);
            assert_eq!(kept_of(l), 1);
            assert_eq!(prewarm(&[Warm::Blocks(l, 2)], &stop), l.size(), "one more block written");
            assert_eq!(kept_of(l), 2);
            assert_eq!(prewarm(&[Warm::Blocks(l, 2)], &stop), 0, "enough kept");
            let (a, b) = (HugePageAlloc.alloc(l), HugePageAlloc.alloc(l));
            assert_eq!(kept_of(l), 0, "both taken");
            stop.store(true, Ordering::Relaxed);
            assert_eq!(prewarm(&[Warm::Blocks(l, 2), Warm::Tables(10)], &stop), 0, "stopped");
            assert_eq!(kept_of(l), 0);
            HugePageAlloc.dealloc(a, l);
            HugePageAlloc.dealloc(b, l);
        }
    }

    /// Inside a scope, PTE-table-sized blocks come from the slab: prewarm() backs room
    /// for them, a block freed goes back to the list and is taken again, a realloc moves
    /// one out with its contents; outside a scope they are System's. The chunks go back
    /// once the scope is closed and the last block out is freed.
    #[test]
    fn table_blocks_come_from_the_slab_inside_a_scope() {
        let _turn = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
        let t = Layout::from_size_align(TABLE_BLOCK, 4).unwrap();
        let stop = AtomicBool::new(false);
        unsafe {
            let outside = HugePageAlloc.alloc(t); // (serving from here on)
            assert_eq!(SLAB_HELD.load(Ordering::SeqCst), 0, "no scope: System's");
            let scope = keep_freed();
            assert_eq!(prewarm(&[Warm::Tables(100)], &stop), SLAB_CHUNK, "a chunk written");
            let room = slab_room();
            assert!(room >= SLAB_CHUNK / TABLE_BLOCK);
            let p = HugePageAlloc.alloc(t);
            assert!(SLAB.lock().unwrap().owns(p as usize), "the slab's");
            assert_eq!(slab_room(), room - 1);
            HugePageAlloc.dealloc(outside, t);
            assert_eq!(slab_room(), room - 1, "System's block went back to System");
            p.cast::<u32>().write_bytes(7, 512);
            HugePageAlloc.dealloc(p, t);
            assert_eq!(slab_room(), room);
            let z = HugePageAlloc.alloc_zeroed(t);
            assert_eq!(z, p, "the last freed is taken first");
            assert!(std::slice::from_raw_parts(z, TABLE_BLOCK).iter().all(|&b| b == 0), "zeroed");
            z.cast::<u32>().write(42);
            let grown = HugePageAlloc.realloc(z, t, 2 * TABLE_BLOCK);
            assert!(!SLAB.lock().unwrap().owns(grown as usize), "moved out");
            assert_eq!(grown.cast::<u32>().read(), 42, "with its contents");
            assert_eq!(slab_room(), room, "its block is back");
            let held = HugePageAlloc.alloc(t);
            drop(scope);
            assert!(SLAB_HELD.load(Ordering::SeqCst) > 0, "a block is out: the chunks stay");
            HugePageAlloc.dealloc(held, t);
            assert_eq!(SLAB_HELD.load(Ordering::SeqCst), 0, "the last block freed: the chunks go back");
            HugePageAlloc.dealloc(grown, Layout::from_size_align(2 * TABLE_BLOCK, 4).unwrap());
        }
    }
}
