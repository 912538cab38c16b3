//! The read-only probes of `thplab-live census`: the `PAGEMAP_SCAN` ioctl and `/proc/PID/pagemap`
//! (which pages are present, PMD-mapped, swapped, the shared zero page), `/proc/kpageflags`
//! (which folio a PTE-mapped page belongs to, and its size), and `/proc/PID/mem` (the contents of
//! PMD-mapped THPs, read through one bounded buffer) with the per-subpage zero check.
//!
//! Facts from Linux 6.18 (Documentation/admin-guide/mm/pagemap.rst, fs/proc/task_mmu.c,
//! fs/proc/page.c, include/uapi/linux/fs.h):
//! - pagemap entry: bits 0-54 PFN when present (zeroed without CAP_SYS_ADMIN), bits 0-4 swap type
//!   and 5-54 swap offset when swapped, 55 soft-dirty, 56 exclusively mapped, 57 uffd-wp,
//!   58 guard region, 61 file page or shared anon, 62 swapped, 63 present.
//! - `PAGEMAP_SCAN` (`_IOWR('f', 16, struct pm_scan_arg)`, since 6.7) reports runs of pages with
//!   equal categories; `PAGE_IS_HUGE` is set exactly for PMD mappings (`pagemap_thp_category()`),
//!   `PAGE_IS_PFNZERO` for the (huge) zero page. Without `PM_SCAN_WP_MATCHING` it changes nothing.
//! - kpageflags: `KPF_COMPOUND_HEAD` 15 / `KPF_COMPOUND_TAIL` 16 give a folio's extent, `KPF_THP` 22
//!   is set for every large rmappable folio "of any size and mapped by any granularity" and for the
//!   huge zero page (with `KPF_ZERO_PAGE` 24); a folio of order k is naturally aligned in PFN space,
//!   so it lies inside one 512-aligned block of PFNs.
//! - `/proc/PID/mem` reads go through `access_remote_vm()` (GUP, `FOLL_FORCE` for ptrace-capable
//!   readers): a read of a page that is not present would fault it in, so only ranges just seen
//!   PMD-mapped and present are ever read.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

pub const PAGE: u64 = 4096;
pub const HPAGE: u64 = 2 << 20;
pub const HPAGE_NR: usize = 512;

// pagemap entry bits
pub const PM_PFN_MASK: u64 = (1 << 55) - 1;
pub const PM_EXCLUSIVE: u64 = 1 << 56;
pub const PM_UFFD_WP: u64 = 1 << 57;
pub const PM_SWAP: u64 = 1 << 62;
#[cfg(test)]
pub const PM_PRESENT: u64 = 1 << 63;
pub const SWP_TYPE_BITS: u32 = 5; // MAX_SWAPFILES_SHIFT

// kpageflags bits
pub const KPF_COMPOUND_HEAD: u64 = 1 << 15;
pub const KPF_COMPOUND_TAIL: u64 = 1 << 16;
pub const KPF_NOPAGE: u64 = 1 << 20;
pub const KPF_THP: u64 = 1 << 22;
pub const KPF_ZERO_PAGE: u64 = 1 << 24;

// PAGEMAP_SCAN categories (include/uapi/linux/fs.h)
pub const PAGE_IS_FILE: u64 = 1 << 2;
pub const PAGE_IS_PRESENT: u64 = 1 << 3;
pub const PAGE_IS_SWAPPED: u64 = 1 << 4;
pub const PAGE_IS_PFNZERO: u64 = 1 << 5;
pub const PAGE_IS_HUGE: u64 = 1 << 6;
pub const PAGE_IS_GUARD: u64 = 1 << 8;

/// `_IOWR(PROCFS_IOCTL_MAGIC 'f', 16, struct pm_scan_arg)`; the struct is 12 u64 = 96 bytes.
const PAGEMAP_SCAN: u64 = (3 << 30) | (96 << 16) | ((b'f' as u64) << 8) | 16;

#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct PageRegion {
    pub start: u64,
    pub end: u64,
    pub categories: u64,
}

/// Why a probe failed.
#[derive(Debug)]
pub enum ProbeError {
    /// The process is gone (exited during the census).
    Gone,
    /// No permission (EACCES/EPERM): needs root or ptrace rights.
    Denied(String),
    /// `PAGEMAP_SCAN` is not supported by this kernel (before 6.7).
    NoScan,
    Other(String),
}

impl ProbeError {
    pub fn from_io(what: &str, e: &io::Error) -> ProbeError {
        match e.raw_os_error() {
            Some(libc::ESRCH) | Some(libc::ENOENT) => ProbeError::Gone,
            Some(libc::EACCES) | Some(libc::EPERM) => {
                ProbeError::Denied(format!("{what}: {} ({e})", crate::util::io_errno_name(e)))
            }
            _ => ProbeError::Other(format!("{what}: {e}")),
        }
    }
}

/// Every populated run of `[start, end)` (present or swapped, guard regions excluded) with its
/// categories (present, swapped, PMD-mapped, zero page, file), from `PAGEMAP_SCAN`.
pub fn pagemap_scan(
    pagemap: &File,
    start: u64,
    end: u64,
    buf: &mut Vec<PageRegion>,
) -> Result<Vec<PageRegion>, ProbeError> {
    if buf.len() < 1024 {
        buf.resize(1024, PageRegion::default());
    }
    let mut out: Vec<PageRegion> = vec![];
    let mut at = start;
    while at < end {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: at,
            end,
            vec: buf.as_mut_ptr() as u64,
            vec_len: buf.len() as u64,
            category_anyof_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            category_mask: PAGE_IS_GUARD,
            category_inverted: PAGE_IS_GUARD,
            return_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE | PAGE_IS_FILE,
            ..Default::default()
        };
        let n = unsafe { libc::ioctl(pagemap.as_raw_fd(), PAGEMAP_SCAN as _, &mut arg as *mut PmScanArg) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENOTTY) | Some(libc::EINVAL) => ProbeError::NoScan,
                _ => ProbeError::from_io("PAGEMAP_SCAN", &e),
            });
        }
        for r in &buf[..n as usize] {
            match out.last_mut() {
                Some(l) if l.end == r.start && l.categories == r.categories => l.end = r.end,
                _ => out.push(*r),
            }
        }
        if arg.walk_end <= at {
            // the mm is gone (the walk made no progress): nothing more to see
            return Err(ProbeError::Gone);
        }
        at = arg.walk_end;
    }
    Ok(out)
}

/// Read the pagemap entries of `n` pages from virtual page `vpn` into `out` (cleared first).
pub fn read_pagemap(pagemap: &File, vpn: u64, n: usize, out: &mut Vec<u64>) -> Result<(), ProbeError> {
    out.clear();
    out.resize(n, 0);
    let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, n * 8) };
    let mut done = 0;
    while done < bytes.len() {
        match pagemap.read_at(&mut bytes[done..], vpn * 8 + done as u64) {
            Ok(0) => return Err(ProbeError::Gone),
            Ok(k) => done += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ProbeError::from_io("pagemap", &e)),
        }
    }
    Ok(())
}

/// /proc/kpageflags, read in 512-PFN blocks (4 KiB of flags) and cached for one census.
pub struct KpageFlags {
    file: Option<File>,
    cache: HashMap<u64, Box<[u64; 512]>>,
}

impl KpageFlags {
    pub fn open() -> KpageFlags {
        KpageFlags { file: File::open("/proc/kpageflags").ok(), cache: HashMap::new() }
    }
    pub fn available(&self) -> bool {
        self.file.is_some()
    }
    fn block(&mut self, blk: u64) -> Option<&[u64; 512]> {
        let f = self.file.as_ref()?;
        if !self.cache.contains_key(&blk) {
            if self.cache.len() > 1 << 16 {
                self.cache.clear(); // bound: 256 MiB of flags would be a machine of 128 GiB
            }
            let mut b = Box::new([0u64; 512]);
            let bytes = unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u8, 4096) };
            let mut done = 0;
            while done < 4096 {
                match f.read_at(&mut bytes[done..], blk * 4096 + done as u64) {
                    Ok(0) => break,
                    Ok(k) => done += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            for w in b[done / 8..].iter_mut() {
                *w = KPF_NOPAGE;
            }
            self.cache.insert(blk, b);
        }
        self.cache.get(&blk).map(|b| &**b)
    }
    /// For a page of a large (THP of any size) folio: (head pfn, order). The folio is naturally
    /// aligned, so its head and tails are found within the page's 512-PFN block.
    pub fn folio_of(&mut self, pfn: u64) -> Option<(u64, u32)> {
        let base = pfn & !511;
        let b = self.block(pfn / 512)?;
        let i = (pfn - base) as usize;
        if b[i] & KPF_THP == 0 || b[i] & KPF_ZERO_PAGE != 0 {
            return None;
        }
        let mut h = i;
        while b[h] & KPF_COMPOUND_HEAD == 0 {
            if h == 0 || b[h] & KPF_COMPOUND_TAIL == 0 {
                return None; // raced with a split
            }
            h -= 1;
        }
        let mut e = h + 1;
        while e < 512 && b[e] & KPF_COMPOUND_TAIL != 0 && b[e] & KPF_COMPOUND_HEAD == 0 {
            e += 1;
        }
        let n = (e - h) as u64;
        if !n.is_power_of_two() || n < 2 {
            return None;
        }
        Some((base + h as u64, n.trailing_zeros()))
    }
}

/// The content of one 4 KiB page, in the model's 16-bit encoding (crates/model/src/content.rs):
/// class in bits 13..15 (0 zero, 1 same-filled byte, 2 sparse, 3 dense), low 12 bits the first
/// non-zero byte's offset (for same-filled: the byte).
pub type Content = u16;
pub const C_ZERO: u16 = 0;
pub const C_SAME: u16 = 1;
pub const C_SPARSE: u16 = 2;
/// "dense": more than 1/8 of the page's 8-byte words are non-zero. The model's TEXT class
/// (compresses about 3:1) is the replay's stand-in: the census does not estimate compressibility.
pub const C_DENSE: u16 = 3;

#[inline]
pub fn content(class: u16, low: u16) -> Content {
    (class << 13) | (low & 0xfff)
}
#[cfg(test)]
pub fn content_class(c: Content) -> u16 {
    c >> 13
}

/// Classify one page (4096 bytes, 8-byte aligned). The zero test is memchr_inv()'s question
/// ("is any byte non-zero?"), answered 64 bytes at a time; a non-zero page is then read once
/// more to tell same-filled, sparse and dense apart.
#[inline]
pub fn classify(page: &[u64]) -> Content {
    debug_assert_eq!(page.len(), 512);
    let mut i = 0;
    while i < 512 {
        let c = &page[i..i + 8];
        if (c[0] | c[1] | c[2] | c[3] | c[4] | c[5] | c[6] | c[7]) != 0 {
            break;
        }
        i += 8;
    }
    if i == 512 {
        return content(C_ZERO, 0);
    }
    let mut j = i;
    while page[j] == 0 {
        j += 1;
    }
    let first = (j * 8) as u64 + (u64::from_le(page[j]).trailing_zeros() / 8) as u64;
    let w0 = page[0];
    let mut diff = 0u64;
    let mut nz = 0u32;
    for &w in &page[j..] {
        diff |= w ^ w0;
        nz += (w != 0) as u32;
    }
    if j == 0 && diff == 0 {
        let b = (w0 & 0xff) as u16;
        if w0 == u64::from_ne_bytes([b as u8; 8]) {
            return content(C_SAME, b);
        }
    }
    if nz > 64 {
        content(C_DENSE, first as u16)
    } else {
        content(C_SPARSE, first as u16)
    }
}

/// Reader of another process's memory with one bounded buffer: process_vm_readv(2), which pins
/// up to 16 pages per step and copies them straight into the buffer, or /proc/PID/mem (one GUP
/// and a bounce page per 4 KiB, about half as fast). Both need the same right
/// (PTRACE_MODE_ATTACH_REALCREDS) and both fault in what they read, so only present ranges are read.
pub struct MemReader {
    pid: i32,
    file: Option<File>,
    use_vm: bool,
    buf: Vec<u64>,
}

impl MemReader {
    pub fn open(pid: i32, buffer_bytes: usize, proc_mem: bool) -> Result<MemReader, ProbeError> {
        let words = buffer_bytes.max(PAGE as usize) / 8;
        let mut r = MemReader { pid, file: None, use_vm: !proc_mem, buf: vec![0u64; words] };
        if proc_mem {
            r.open_file()?;
        }
        Ok(r)
    }
    fn open_file(&mut self) -> Result<(), ProbeError> {
        let path = format!("/proc/{}/mem", self.pid);
        self.file = Some(File::open(&path).map_err(|e| ProbeError::from_io(&path, &e))?);
        Ok(())
    }
    /// "process_vm_readv" or "/proc/PID/mem".
    pub fn method(&self) -> &'static str {
        if self.use_vm {
            "process_vm_readv"
        } else {
            "/proc/PID/mem"
        }
    }
    fn read_vm(&mut self, addr: u64, len: usize) -> Result<Option<()>, ProbeError> {
        let mut done = 0usize;
        while done < len {
            let local = libc::iovec {
                iov_base: unsafe { (self.buf.as_mut_ptr() as *mut u8).add(done) } as *mut _,
                iov_len: len - done,
            };
            let remote = libc::iovec { iov_base: (addr + done as u64) as *mut _, iov_len: len - done };
            let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EFAULT) => return Ok(None),
                    Some(libc::ENOSYS) => {
                        // not available (seccomp, old kernel): fall back to /proc/PID/mem
                        self.use_vm = false;
                        self.open_file()?;
                        return Err(ProbeError::Other("retry".into()));
                    }
                    _ => return Err(ProbeError::from_io("process_vm_readv", &e)),
                }
            }
            if n == 0 {
                return Ok(None);
            }
            done += n as usize;
        }
        Ok(Some(()))
    }
    /// Most bytes one read covers.
    pub fn capacity(&self) -> u64 {
        (self.buf.len() * 8) as u64
    }
    /// Read `len` bytes at `addr` (≤ capacity, page multiple); None when the range is no
    /// longer mapped (EIO: the THP went away between the scan and the read).
    pub fn read(&mut self, addr: u64, len: u64) -> Result<Option<&[u64]>, ProbeError> {
        let len = len.min(self.capacity()) as usize;
        if self.use_vm {
            match self.read_vm(addr, len) {
                Ok(Some(())) => return Ok(Some(&self.buf[..len / 8])),
                Ok(None) => return Ok(None),
                Err(ProbeError::Other(m)) if m == "retry" => {}
                Err(e) => return Err(e),
            }
        }
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr() as *mut u8, len) };
        let file = self.file.as_ref().expect("opened");
        let mut done = 0;
        while done < len {
            match file.read_at(&mut bytes[done..], addr + done as u64) {
                Ok(0) => return Err(ProbeError::Gone),
                Ok(k) => done += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EIO) || e.raw_os_error() == Some(libc::EFAULT) => {
                    return Ok(None)
                }
                Err(e) => return Err(ProbeError::from_io("mem", &e)),
            }
        }
        Ok(Some(&self.buf[..len / 8]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_with(f: impl Fn(&mut [u8])) -> Vec<u64> {
        let mut p = vec![0u64; 512];
        let b = unsafe { std::slice::from_raw_parts_mut(p.as_mut_ptr() as *mut u8, 4096) };
        f(b);
        p
    }

    #[test]
    fn classify_pages() {
        assert_eq!(classify(&page_with(|_| {})), 0);
        let c = classify(&page_with(|b| b[4095] = 1));
        assert_eq!((content_class(c), c & 0xfff), (C_SPARSE, 4095));
        let c = classify(&page_with(|b| b[100] = 0xff));
        assert_eq!((content_class(c), c & 0xfff), (C_SPARSE, 100));
        let c = classify(&page_with(|b| b.fill(7)));
        assert_eq!((content_class(c), c & 0xfff), (C_SAME, 7));
        let c = classify(&page_with(|b| {
            for (i, x) in b.iter_mut().enumerate().skip(9) {
                *x = (i % 251) as u8 + 1;
            }
        }));
        assert_eq!((content_class(c), c & 0xfff), (C_DENSE, 9));
        // a repeated word that is not a repeated byte is not "same" in the model's sense
        let c = classify(&page_with(|b| {
            for i in (0..4096).step_by(8) {
                b[i] = 1;
            }
        }));
        assert_eq!(content_class(c), C_DENSE);
    }

    #[test]
    fn ioctl_number() {
        // PAGEMAP_SCAN as the 6.18 uapi header defines it
        assert_eq!(PAGEMAP_SCAN, 0xc060_6610);
        assert_eq!(std::mem::size_of::<PmScanArg>(), 96);
    }

    #[test]
    fn scan_self() {
        // map 4 MiB, touch one page, and see it through PAGEMAP_SCAN and pagemap
        let len = 4 << 20;
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        unsafe { *(p as *mut u8).add(8192) = 1 };
        let f = File::open("/proc/self/pagemap").unwrap();
        let a = p as u64;
        let mut buf = vec![];
        match pagemap_scan(&f, a, a + len as u64, &mut buf) {
            Ok(r) => {
                assert_eq!(r.len(), 1, "{r:?}");
                assert_eq!((r[0].start, r[0].end), (a + 8192, a + 12288));
                assert!(r[0].categories & PAGE_IS_PRESENT != 0 && r[0].categories & PAGE_IS_HUGE == 0);
            }
            Err(ProbeError::NoScan) => {}
            Err(e) => panic!("{e:?}"),
        }
        let mut v = vec![];
        read_pagemap(&f, a / PAGE, 4, &mut v).unwrap();
        assert!(v[2] & PM_PRESENT != 0 && v[0] & PM_PRESENT == 0);
        unsafe { libc::munmap(p, len) };
    }
}
