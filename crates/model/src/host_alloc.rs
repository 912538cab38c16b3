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

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Allocations from this size up are advised (a 16 GiB machine's frame array is 32 MiB).
pub const HUGE_MIN: usize = 32 << 20;
const HPAGE_SIZE: usize = 2 << 20;

/// The system allocator, with MADV_HUGEPAGE over large allocations.
pub struct HugePageAlloc;

/// madvise(MADV_HUGEPAGE) over the whole 2 MiB pages inside [p, p + size).
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < HUGE_MIN {
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
    }
}

/// Blocks kept now (tests).
pub fn kept_blocks() -> usize {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|s| s.0 != 0).count()
}

/// A kept block of exactly `layout`, taken out of the array.
fn take_kept(layout: Layout) -> Option<*mut u8> {
    if layout.size() < KEEP_MIN {
        return None;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let slot = kept.iter_mut().find(|s| s.0 != 0 && s.1 == layout.size() && s.2 == layout.align())?;
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
        if let Some(p) = take_kept(layout) {
            return p;
        }
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = take_kept(layout) {
            // SAFETY: the kept block holds layout.size() bytes
            unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            return p;
        }
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if keep(ptr, layout) {
            return;
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large allocation through HugePageAlloc gets a VMA with the hugepage advice (smaps
    /// lists "hg" in its VmFlags); a small one does not.
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
}
