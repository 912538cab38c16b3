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

use std::alloc::{GlobalAlloc, Layout, System};

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

// SAFETY: every call is forwarded to System with the same layout; advise() only adds advice.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
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
}
