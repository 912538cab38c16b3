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
//! First touches. This project's VM (a Firecracker guest) hands idle memory back to its
//! host, so the first touch of memory that has been free for a while costs the host's
//! fault too: ~1-1.5 s per GiB, measured with MADV_POPULATE_WRITE of 4 GiB (0.15 s per GiB
//! for memory freed a moment before). A 1 TiB model state is ~5 GiB, so each copy of a
//! shared prefix's state for a continuation (`engine::run_shared`) paid 7-9 s of it on
//! the thread that made the copy. A *reserve* (`reserve()` / `release_reserve()`) is
//! memory faulted in ahead of time (on the other core, while the shared prefix runs) from
//! which large allocations are carved; while it is held, a large block freed returns to
//! it, so a later copy reuses memory an earlier continuation was done with. Contents and
//! results never depend on it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Set by the first large allocation through `HugePageAlloc`: a reserve is only worth
/// making when large allocations come through it.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Room for the reserve's bookkeeping, fixed so that it never allocates (it runs inside
/// the allocator).
const SLOTS: usize = 64;

/// Memory faulted in ahead of use: free ranges, and the blocks carved from them that are
/// in use (which return to `free` when freed while `holders > 0`, else are unmapped).
struct Reserve {
    free: [(usize, usize); SLOTS],
    used: [(usize, usize); SLOTS],
    holders: u32,
}

static RESERVE: Mutex<Reserve> = Mutex::new(Reserve { free: [(0, 0); SLOTS], used: [(0, 0); SLOTS], holders: 0 });

fn lock() -> std::sync::MutexGuard<'static, Reserve> {
    RESERVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn unmap(p: usize, n: usize) {
    // SAFETY: only called on ranges of our own mappings that nothing uses
    unsafe { libc::munmap(p as *mut libc::c_void, n) };
}

impl Reserve {
    /// First fit: a block of `need` bytes (a multiple of 2 MiB) from the front of a free range.
    fn take(&mut self, need: usize) -> Option<usize> {
        let u = self.used.iter().position(|&(_, n)| n == 0)?;
        let f = self.free.iter().position(|&(_, n)| n >= need)?;
        let (p, n) = self.free[f];
        self.free[f] = if n > need { (p + need, n - need) } else { (0, 0) };
        self.used[u] = (p, need);
        Some(p)
    }
    /// The room of the block at `p` if it came from the reserve.
    fn room(&self, p: usize) -> Option<usize> {
        self.used.iter().find(|&&(q, n)| q == p && n != 0).map(|&(_, n)| n)
    }
    /// The block at `p`, if it came from the reserve: back to the free ranges while the
    /// reserve is held, else (or when there is no slot to remember it) unmapped.
    fn give_back(&mut self, p: usize) -> bool {
        let Some(u) = self.used.iter().position(|&(q, n)| q == p && n != 0) else { return false };
        let (_, n) = std::mem::take(&mut self.used[u]);
        match self.free.iter().position(|&(_, m)| m == 0).filter(|_| self.holders > 0) {
            Some(f) => self.free[f] = (p, n),
            None => unmap(p, n),
        }
        true
    }
}

/// Map `bytes` (rounded up to 2 MiB) of huge-page-advised memory, fault it in
/// (MADV_POPULATE_WRITE, Linux 5.14; else a store per 4 KiB page) and add it to the
/// reserve; large allocations are carved from it until the matching `release_reserve()`
/// (every call must have one). Nothing is mapped when `HugePageAlloc` is not the global
/// allocator.
pub fn reserve(bytes: usize) {
    lock().holders += 1;
    let n = bytes.next_multiple_of(HPAGE_SIZE);
    if n < HUGE_MIN || !INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: a fresh private anonymous mapping, of which the 2 MiB-aligned middle is kept
    let m = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n + HPAGE_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if m == libc::MAP_FAILED {
        return;
    }
    let (m, p) = (m as usize, (m as usize).next_multiple_of(HPAGE_SIZE));
    if p > m {
        unmap(m, p - m);
    }
    if m + HPAGE_SIZE > p {
        unmap(p + n, m + HPAGE_SIZE - p);
    }
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    // SAFETY: advice over the mapping just made; it changes how it is backed, not its
    // contents. A huge page at a time: the advice holds the process's mmap lock, which the
    // threads that run the model need for their own mmaps
    let populated = unsafe {
        libc::madvise(p as *mut libc::c_void, n, libc::MADV_HUGEPAGE);
        (0..n)
            .step_by(HPAGE_SIZE)
            .all(|off| libc::madvise((p + off) as *mut libc::c_void, HPAGE_SIZE, MADV_POPULATE_WRITE) == 0)
    };
    if !populated {
        for off in (0..n).step_by(4096) {
            // SAFETY: inside the mapping just made, which nothing else uses yet
            unsafe { std::ptr::write_volatile((p + off) as *mut u8, 0) };
        }
    }
    let mut r = lock();
    match r.free.iter().position(|&(_, m)| m == 0) {
        Some(f) => r.free[f] = (p, n),
        None => unmap(p, n),
    }
}

/// Undo one `reserve()`: when no holder is left, the free ranges are unmapped (blocks in
/// use are unmapped when they are freed).
pub fn release_reserve() {
    let mut r = lock();
    r.holders = r.holders.saturating_sub(1);
    if r.holders == 0 {
        for f in r.free.iter_mut() {
            let (p, n) = std::mem::take(f);
            if n != 0 {
                unmap(p, n);
            }
        }
    }
}

/// Bytes in the reserve's free ranges.
pub fn reserved_free_bytes() -> usize {
    lock().free.iter().map(|&(_, n)| n).sum()
}

/// A large block carved from the reserve, if one is held and has room.
fn from_reserve(layout: Layout) -> Option<*mut u8> {
    if layout.size() < HUGE_MIN {
        return None;
    }
    INSTALLED.store(true, Ordering::Relaxed);
    let mut r = lock();
    if r.holders == 0 || layout.align() > HPAGE_SIZE {
        return None;
    }
    r.take(layout.size().next_multiple_of(HPAGE_SIZE)).map(|p| p as *mut u8)
}

// SAFETY: every call is forwarded to System with the same layout, except for large blocks
// carved from the reserve (our own mappings, never handed to System); advise() only adds
// advice.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = from_reserve(layout) {
            return p;
        }
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = from_reserve(layout) {
            // SAFETY: a block of at least layout.size() bytes that only we use
            unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            return p;
        }
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= HUGE_MIN && lock().give_back(ptr as usize) {
            return;
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let room = if layout.size() >= HUGE_MIN { lock().room(ptr as usize) } else { None };
        if let Some(room) = room {
            // in place while it fits and stays large (a block's size must keep telling
            // dealloc() to look for it here)
            if (HUGE_MIN..=room).contains(&new_size) {
                return ptr;
            }
            // SAFETY: a valid layout of new_size (the caller's contract); both blocks hold
            // at least the bytes copied
            unsafe {
                let q = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
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

    /// The tests that call HugePageAlloc directly share the one reserve: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Large blocks are carved from a held reserve and return to it when freed; a block
    /// grown past its room moves out with its contents; release unmaps what is left, after
    /// which large blocks come from the system again.
    #[test]
    fn large_blocks_come_from_a_held_reserve_and_return_to_it() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let big = Layout::from_size_align(HUGE_MIN + 1, 8).unwrap();
        let room = (HUGE_MIN + 1).next_multiple_of(HPAGE_SIZE);
        unsafe {
            // the first large allocation marks the allocator as installed
            HugePageAlloc.dealloc(HugePageAlloc.alloc(big), big);
            reserve(3 * room);
            assert_eq!(reserved_free_bytes(), 3 * room, "the reserve is mapped and free");
            let p = HugePageAlloc.alloc(big);
            let q = HugePageAlloc.alloc_zeroed(big);
            assert_eq!(reserved_free_bytes(), room, "two blocks carved");
            assert!(std::slice::from_raw_parts(q, big.size()).iter().all(|&b| b == 0), "zeroed");
            std::ptr::write_bytes(p, 7, big.size());
            // within the block's room: in place; past it: moved, contents kept
            assert_eq!(HugePageAlloc.realloc(p, big, room), p);
            let r = HugePageAlloc.realloc(p, big, 2 * room);
            assert_ne!(r, p);
            assert!(std::slice::from_raw_parts(r, big.size()).iter().all(|&b| b == 7), "contents moved");
            let r_layout = Layout::from_size_align(2 * room, 8).unwrap();
            // shrunk below the large size: moved to the system allocator, contents kept
            std::ptr::write_bytes(q, 5, 4096);
            let small = HugePageAlloc.realloc(q, big, 4096);
            assert_ne!(small, q);
            assert!(std::slice::from_raw_parts(small, 4096).iter().all(|&b| b == 5), "contents moved");
            HugePageAlloc.dealloc(small, Layout::from_size_align(4096, 8).unwrap());
            HugePageAlloc.dealloc(r, r_layout);
            assert_eq!(reserved_free_bytes(), 3 * room, "every block back in the reserve");
            release_reserve();
            assert_eq!(reserved_free_bytes(), 0, "released");
            let s = HugePageAlloc.alloc(big);
            assert_eq!(reserved_free_bytes(), 0);
            HugePageAlloc.dealloc(s, big);
        }
    }

    /// A large allocation through HugePageAlloc gets a VMA with the hugepage advice (smaps
    /// lists "hg" in its VmFlags); a small one does not.
    #[test]
    fn a_large_allocation_is_advised_for_huge_pages() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
