//! Host calibration: measures, on warmed memory and with repetitions, the primitives the cost
//! profile holds. Emits raw samples (ns per unit, one per repetition) as JSON; the Python side
//! (`thplab calibrate`) turns them into a cost profile (median, relative spread).

use crate::child::{access_stream, fill, text_corpus, Stream};
use crate::safety::{self, Journal};
use crate::util::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use thplab_workload::workload::{AccessPattern, DataKind, WriteData};

pub enum CalError {
    #[allow(dead_code)]
    Input(String),
    Failed(String, i32),
}

const PAGE: usize = 4096;
const HPAGE: usize = 2 << 20;

pub(crate) struct Map_ {
    pub(crate) p: *mut u8,
    pub(crate) len: usize,
}
impl Map_ {
    pub(crate) fn new(len: usize, huge: Option<bool>) -> Result<Map_, CalError> {
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + HPAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(CalError::Failed(format!("mmap {len}: {}", errno_name(errno())), 1));
        }
        // 2 MiB-aligned start, trimmed.
        let raw = p as usize;
        let start = (raw + HPAGE - 1) & !(HPAGE - 1);
        unsafe {
            if start > raw {
                libc::munmap(raw as *mut _, start - raw);
            }
            let end = raw + len + HPAGE;
            if end > start + len {
                libc::munmap((start + len) as *mut _, end - start - len);
            }
            match huge {
                Some(true) => {
                    libc::madvise(start as *mut _, len, libc::MADV_HUGEPAGE);
                }
                Some(false) => {
                    libc::madvise(start as *mut _, len, libc::MADV_NOHUGEPAGE);
                }
                None => {}
            }
        }
        Ok(Map_ { p: start as *mut u8, len })
    }
    pub(crate) fn touch(&self, v: u8) {
        unsafe { std::ptr::write_bytes(self.p, v, self.len) };
    }
    pub(crate) fn page(&self, i: usize) -> *mut u8 {
        unsafe { self.p.add(i * PAGE) }
    }
}
impl Drop for Map_ {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.p as *mut _, self.len) };
    }
}

/// munmap `m` from its end, `chunk` bytes at a time (each call shrinks the VMA from its end,
/// no split), and return each piece's time per 4 KiB page. One munmap of the whole region
/// is a single sample that a stall of the vCPU in the host (steal time, which run_delay
/// does not count) or another task's burst can inflate as a whole; the median of the
/// pieces leaves the pieces it hit out.
pub(crate) fn munmap_pieces(m: Map_, chunk: usize) -> Vec<f64> {
    let mut v = vec![];
    let mut end = m.len;
    while end > 0 {
        let start = end.saturating_sub(chunk);
        let len = end - start;
        v.push(timed(len / PAGE, || unsafe {
            libc::munmap(m.p.add(start) as *mut _, len);
        }));
        end = start;
    }
    std::mem::forget(m);
    v
}

/// Back the memory a measurement is about to take: fault in `len` bytes of the kind it
/// allocates (`huge`: THPs, or mTHPs where only those are enabled; else 4 KiB pages) and free
/// them, right before the timed part (host::back_memory). This guest reports its free 2 MiB
/// blocks to the host 2 s after they are freed (free page reporting, docs/page_reporting.md)
/// and the first touch of a reported block costs a host refault (~3.5 ms per 2 MiB, ~5 us per
/// 4 KiB page): an allocation that happened to take such memory paid it or not depending on
/// what the guest did in the seconds before (a THP fault 0.3 ms or 4 ms, the same calibrate a
/// primitive 1.5-3x apart). The model charges that refault apart (page_reporting.rs,
/// `refault_reported_2m_ns`, measured on purpose below), so each primitive is measured on
/// backed memory. Twice the measurement's own allocations, for the per-CPU lists' and the
/// allocator's choice of block.
pub(crate) fn back(len: usize, huge: bool) {
    crate::host::back_memory(2 * len as u64, huge);
}

pub(crate) fn check_sig() -> Result<(), CalError> {
    let s = safety::signalled();
    if s != 0 {
        return Err(CalError::Failed(
            format!("interrupted by {}; the machine was restored", safety::signal_name(s)),
            128 + s,
        ));
    }
    Ok(())
}

/// ns per unit for `units` units done by `f`: elapsed time less the time this thread waited
/// for a CPU that other tasks held (schedstat run_delay), i.e. what it takes on an idle machine.
pub(crate) fn timed(units: usize, f: impl FnOnce()) -> f64 {
    let (t, rq) = (now_ns(), self_run_delay_ns());
    f();
    let wall = now_ns() - t;
    wall.saturating_sub(self_run_delay_ns().saturating_sub(rq)) as f64 / units as f64
}

/// The fault steps' region (fault_4k_*, fault_2m_total, the mTHP faults): 64 MiB, 32 quick.
pub(crate) fn fault_region_bytes(quick: bool) -> usize {
    if quick {
        32 << 20
    } else {
        64 << 20
    }
}

/// A buffer written through between back() and the THP faults timed (time_thp_faults), so
/// that they clear blocks out of the caches, as a workload's THP faults do.
///
/// back() frees the blocks it faulted in (each cleared whole by its THP fault) to the head of
/// the per-CPU and buddy lists, and the next THP faults take the last freed first: on this
/// host the first ~15 of 32 (~30 MiB, the L3 the guest sees) found their block in the cache
/// and took 30-80 us where the rest took 83-87 (out/vk-h74's calibrations: fault_2m_total's
/// mean 73-77 us, its median 83). The validation scenarios' THP faults found none so (the
/// live runner's back-fill runs in a child, then its probe and set-up): fault-latency's p05
/// 82 us, its median 84, and every THP-fault phase 0.79-0.94x of the live kernel's with such
/// a profile. Written, not read: a read sweep left the first faults after it at 95-110 us.
/// The buffer is faulted in before the back() it follows, so that it takes none of the
/// blocks backed for the faults.
pub(crate) struct CacheSweep(Map_);

/// CacheSweep's size: twice the ~30 MiB the warm faults above spanned.
const CACHE_SWEEP_BYTES: usize = 64 << 20;

impl CacheSweep {
    pub(crate) fn new() -> Result<CacheSweep, CalError> {
        let m = Map_::new(CACHE_SWEEP_BYTES, Some(false))?;
        m.touch(1);
        Ok(CacheSweep(m))
    }
    /// Write a word of every 64-byte line (~2 ms), one volatile store at a time rather than a
    /// memset of the buffer (Map_::touch): glibc 2.40 and later memset buffers this large with
    /// non-temporal stores, which would leave the cache as it was (this guest has 2.36).
    pub(crate) fn sweep(&self) {
        for off in (0..self.0.len).step_by(64) {
            unsafe { std::ptr::write_volatile(self.0.p.add(off) as *mut u64, off as u64) };
        }
    }
}

/// THP write faults over a fresh MADV_HUGEPAGE mapping of `len` bytes, each fault timed
/// alone (timed_each; fault_2m_total), after `cache` is written through; the caller backs the
/// memory first (back()) and unmaps the mapping returned.
pub(crate) fn time_thp_faults(len: usize, cache: &CacheSweep) -> Result<(Map_, Vec<f64>), CalError> {
    cache.sweep();
    let m = Map_::new(len, Some(true))?;
    let v = timed_each(len / HPAGE, |i| unsafe { std::ptr::write_volatile(m.page(i * 512), 1) });
    Ok((m, v))
}

/// Wall time of each of `n` units done by `f(i)`, in ns: for work whose units are coarse
/// (a THP fault, a collapse: 100s of us) and of which a few may pay a host refault of
/// milliseconds (free page reporting; see `back`), so that the fit can leave those out
/// (python/thplab/calibrate.py `_backed_mean`).
/// Each unit is timed alone (two clock reads, ~50 ns); run_delay is not read per unit (a
/// pread of schedstat, ~1.5 us), a unit another task delayed much is left out as well.
pub(crate) fn timed_each(n: usize, mut f: impl FnMut(usize)) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let t = now_ns();
            f(i);
            (now_ns() - t) as f64
        })
        .collect()
}

#[inline(never)]
fn memchr_inv(p: *const u8, len: usize) -> Option<usize> {
    // Like the kernel's memchr_inv(): 8 bytes at a time, no SIMD.
    let w = p as *const u64;
    for i in 0..len / 8 {
        if unsafe { std::ptr::read_volatile(w.add(i)) } != 0 {
            return Some(i * 8);
        }
    }
    None
}

#[inline(never)]
fn same_filled(p: *const u8) -> bool {
    // zram's page_same_filled(): compare every word with the first.
    let w = p as *const u64;
    let v = unsafe { std::ptr::read_volatile(w) };
    for i in 1..PAGE / 8 {
        if unsafe { std::ptr::read_volatile(w.add(i)) } != v {
            return false;
        }
    }
    true
}

fn cpu_ghz() -> f64 {
    let n: u64 = 20_000_000;
    let t = now_ns();
    let mut x: u64 = 0;
    // register-register adds: a core that folds an add of an immediate into its rename stage
    // (Golden Cove and later) runs a chain of `add reg, 1` several to a cycle (this host's
    // Xeon: cpu_ghz 14.7 at 2.1 GHz, out/host-h50.toml); an add of a register it does not fold
    let one = std::hint::black_box(1u64);
    for _ in 0..n / 16 {
        unsafe {
            std::arch::asm!(
                "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}",
                "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}", "add {0}, {1}",
                inout(reg) x,
                in(reg) one,
            );
        }
    }
    std::hint::black_box(x);
    n as f64 / (now_ns() - t) as f64
}

/// A calibration's samples, by kind, and beside each one the live runner's CPU probe
/// (host::cpu_probe_ns) as it was added. This host runs the guest at two speeds, a few
/// seconds to minutes at a time (docs/host_speed.md, "The two speeds label the runs"): the
/// probe tells which a sample met, so `thplab calibrate` can fit a profile for each and
/// `thplab validate` price each live run's phases at the speed that run met.
pub(crate) struct Samples {
    pub(crate) v: BTreeMap<String, Vec<f64>>,
    pub(crate) probe: BTreeMap<String, Vec<u64>>,
    /// (now_ns, the probe) of the last probe taken
    last: Option<(u64, u64)>,
}

/// A sample reuses the CPU probe taken for another up to this long before it (a probe is
/// ~100 us of the CPU; many samples are added back to back).
const SAMPLE_PROBE_AGE_NS: u64 = 200_000_000;

impl Samples {
    pub(crate) fn new() -> Samples {
        Samples { v: BTreeMap::new(), probe: BTreeMap::new(), last: None }
    }
    fn probe_now(&mut self) -> u64 {
        let now = now_ns();
        match self.last {
            Some((at, p)) if now.saturating_sub(at) < SAMPLE_PROBE_AGE_NS => p,
            _ => {
                let p = crate::host::cpu_probe_ns();
                self.last = Some((now_ns(), p));
                p
            }
        }
    }
    pub(crate) fn add(&mut self, k: &str, v: f64) {
        self.add_all(k, [v]);
    }
    /// add() of each value (the pieces of one measurement, e.g. munmap_pieces()).
    pub(crate) fn add_all(&mut self, k: &str, vs: impl IntoIterator<Item = f64>) {
        let p = self.probe_now();
        let e = self.v.entry(k.to_string()).or_default();
        let n = e.len();
        e.extend(vs);
        let added = e.len() - n;
        self.probe.entry(k.to_string()).or_default().extend(std::iter::repeat_n(p, added));
    }
    pub(crate) fn get(&self, k: &str) -> Option<&Vec<f64>> {
        self.v.get(k)
    }
}

pub(crate) fn vm(k: &str) -> i64 {
    vmstat().get(k).copied().unwrap_or(0)
}

/// /proc/stat's `cpu` line: (busy, steal, total) clock ticks over every CPU (busy: user,
/// nice, system, irq, softirq).
pub(crate) fn parse_cpu_line(stat: &str) -> Option<(u64, u64, u64)> {
    let l = stat.lines().next()?;
    if !l.starts_with("cpu ") {
        return None;
    }
    let v: Vec<u64> = l.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 8 {
        return None;
    }
    Some((v[0] + v[1] + v[2] + v[5] + v[6], v[7], v[..8].iter().sum()))
}

fn cpu_ticks() -> Option<(u64, u64, u64)> {
    parse_cpu_line(&read_file("/proc/stat").ok()?)
}

/// Between two `parse_cpu_line` readings, with `own` ticks this process used: the CPUs other
/// tasks kept busy on average, and the share of time the host took (steal).
pub(crate) fn others_share(a: (u64, u64, u64), b: (u64, u64, u64), own: f64, ncpus: usize) -> (f64, f64) {
    let total = b.2.saturating_sub(a.2) as f64;
    if total <= 0.0 {
        return (0.0, 0.0);
    }
    let busy = b.0.saturating_sub(a.0) as f64;
    (((busy - own).max(0.0) / total) * ncpus as f64, b.1.saturating_sub(a.1) as f64 / total)
}

/// This process's and its reaped children's CPU time (user and system), ns.
fn self_cpu_ns() -> u64 {
    let t = |who| {
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        let tv = |x: libc::timeval| x.tv_sec as u64 * 1_000_000_000 + x.tv_usec as u64 * 1000;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    t(libc::RUSAGE_SELF) + t(libc::RUSAGE_CHILDREN)
}

fn ncpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The CPU-side primitives on warmed memory: clear and copy of 4 KiB and 2 MiB, memchr_inv,
/// page_same_filled, a page touch, the workload's fills by data kind, a syscall and a 1 ms
/// sleep; `reps` rounds after one that warms caches and TLBs and is discarded. calibrate()
/// takes them in three windows minutes apart (its start, after the swap devices, its end)
/// into the same samples: a few seconds of a busy host caught all of one window's rounds
/// (out/cal-h46, 2026-12-06: fill_text_4k 484 ns, spread 30 %, against 298 and 4 % the
/// day before; clear_2m 46.8 us against 30.8), and every write op's time in the model with
/// them (mthp_64k_pageout_zram p:fault 1.30x).
fn calibrate_cpu(quick: bool, reps: usize, s: &mut Samples) -> Result<(), CalError> {
    let big = if quick { 32 << 20 } else { 128 << 20 };
    let a = Map_::new(big, Some(false))?;
    let b = Map_::new(big, Some(false))?;
    a.touch(1);
    b.touch(2);
    let np = big / PAGE;
    let nh = big / HPAGE;
    let hot = Map_::new(HPAGE, Some(false))?;
    hot.touch(1);
    let corpus = text_corpus();
    for r in 0..=reps {
        let warm = r == 0; // the first round warms caches and TLBs and is discarded
        let v = timed(np, || (0..np).for_each(|i| unsafe { std::ptr::write_bytes(a.page(i), 0, PAGE) }));
        if !warm {
            s.add("clear_4k", v)
        }
        let v = timed(nh, || (0..nh).for_each(|i| unsafe { std::ptr::write_bytes(a.page(i * 512), 0, HPAGE) }));
        if !warm {
            s.add("clear_2m", v)
        }
        let v =
            timed(np, || (0..np).for_each(|i| unsafe { std::ptr::copy_nonoverlapping(b.page(i), a.page(i), PAGE) }));
        if !warm {
            s.add("copy_4k", v)
        }
        let v = timed(nh, || {
            (0..nh).for_each(|i| unsafe { std::ptr::copy_nonoverlapping(b.page(i * 512), a.page(i * 512), HPAGE) })
        });
        if !warm {
            s.add("copy_2m", v)
        }
        // memchr_inv: worst case (a zero page: the whole page is scanned) and best case (first byte set).
        a.touch(0);
        let v = timed(np, || {
            (0..np).for_each(|i| {
                std::hint::black_box(memchr_inv(a.page(i), PAGE));
            })
        });
        if !warm {
            s.add("memchr_inv_4k_worst", v)
        }
        (0..np).for_each(|i| unsafe { *a.page(i) = 1 });
        let v = timed(np, || {
            (0..np).for_each(|i| {
                std::hint::black_box(memchr_inv(a.page(i), PAGE));
            })
        });
        if !warm {
            s.add("memchr_inv_4k_best", v)
        }
        a.touch(0x5a);
        let v = timed(np, || {
            (0..np).for_each(|i| {
                std::hint::black_box(same_filled(a.page(i)));
            })
        });
        if !warm {
            s.add("same_filled_4k", v)
        }
        let v = timed(np, || (0..np).for_each(|i| unsafe { std::ptr::write_volatile(b.page(i), r as u8) }));
        if !warm {
            s.add("touch_page", v)
        }
        // the workload's own stores of whole pages, by data kind (child.rs `fill`), on a
        // 2 MiB buffer in cache, as a page is right after its fault's clear
        for (k, data) in [
            ("byte", WriteData::Byte(0xff)),
            ("text", WriteData::Kind(DataKind::Text)),
            ("random", WriteData::Kind(DataKind::Random)),
        ] {
            let hp = HPAGE / PAGE;
            let v = timed(4 * hp, || {
                for i in 0..4 * hp {
                    unsafe { fill(hot.page(i % hp), PAGE, &data, 1, i as u64, &corpus) };
                }
            });
            if !warm {
                s.add(&format!("fill_4k_{k}"), v)
            }
        }
        let n = 200_000;
        let v = timed(n, || {
            (0..n).for_each(|_| unsafe {
                std::hint::black_box(libc::syscall(libc::SYS_getppid));
            })
        });
        if !warm {
            s.add("syscall", v)
        }
        // the workload's sleep op (1 ms, as the fill scenarios' tenant sleeps), per sleep: it
        // ends past its deadline by the timer slack (hrtimer_nanosleep's expiry range,
        // current->timer_slack_ns, 50 us by default) and the wake-up's latency
        let ns = if quick { 20 } else { 100 };
        let v = timed(ns, || (0..ns).for_each(|_| crate::child::sleep_for(1_000_000)));
        if !warm {
            s.add("sleep_1ms", v)
        }
        // the live runner's host-speed probe, as each run starts (host::fault_4k_probe_ns):
        // what validate sets its runs' probes against (the profile's probe_fault_4k_ns)
        if let Some(v) = crate::host::fault_4k_probe_ns(crate::host::PROBE_BYTES) {
            if !warm {
                s.add("host_probe", v)
            }
        }
        // and the CPU probe it takes around every phase (host::cpu_probe_ns), a few times
        // over: the host's speed moves within seconds
        if !warm {
            for _ in 0..5 {
                s.add("cpu_probe", crate::host::cpu_probe_ns() as f64);
            }
        }
        check_sig()?;
    }
    drop(a);
    drop(b);
    Ok(())
}

/// Page faults and munmaps, on memory backed just before (freed < 1 s earlier, so not
/// reported): 4 KiB write and zero-page read faults, the munmap of their pages, VMA splits,
/// MADV_DONTNEED's flush, the PTE walk, THP faults and their munmap; `reps` samples of each
/// (a warm-up round discarded). Taken at calibrate's start and again at its end, and pooled
/// (as calibrate_cpu's): this host's speed steps for minutes at a time, and one window met
/// page_free_ns 173 ns (out/host-h49.toml) where the next calibration's met 95 (h50; the
/// munmap phases it drives 0.58-0.74x of the live kernel's). Returns the THP faults seen.
fn calibrate_faults(
    quick: bool,
    reps: usize,
    s: &mut Samples,
    values: &mut Map<String, Value>,
) -> Result<i64, CalError> {
    let fsz = fault_region_bytes(quick);
    let mut thp_seen = 0;
    let cache = CacheSweep::new()?;
    for r in 0..=reps {
        back(fsz, false);
        let m = Map_::new(fsz, Some(false))?;
        let n = fsz / PAGE;
        let v = timed(n, || (0..n).for_each(|i| unsafe { std::ptr::write_volatile(m.page(i), 1) }));
        if r > 0 {
            s.add("fault_4k_total", v)
        }
        // munmap of those present 4 KiB pages: per page the PTE zap, rmap and LRU removal,
        // and the free (zap_present_ptes, free_pages_and_swap_cache)
        let v = munmap_pieces(m, 4 << 20);
        if r > 0 {
            s.add_all("munmap_4k", v)
        }
        let m = Map_::new(fsz, Some(false))?;
        let v = timed(n, || {
            (0..n).for_each(|i| unsafe {
                std::hint::black_box(std::ptr::read_volatile(m.page(i)));
            })
        });
        if r > 0 {
            s.add("fault_zero", v)
        }
        // munmap of those zero-page PTEs: per PTE the walk and the clear (zap_present_ptes
        // with no normal page)
        let v = timed(n, || drop(m));
        if r > 0 {
            s.add("munmap_zero", v)
        }
        // VMA work of munmap (do_vmi_munmap: vms_gather_munmap_vmas, __split_vma,
        // vms_complete_munmap_vmas, remove_vma) on a mapping with nothing present: munmap of
        // every other page cuts a page out of the middle of what is left (two splits and
        // the removal of one VMA per call: munmap_hole); munmap of the last page of what is
        // left, one page at a time (one split and a removal: munmap_tail)
        let nv = if quick { 256 } else { 1024 };
        // every other page of `m` unmapped, per call
        let holes = |m: &Map_| {
            timed(nv - 1, || {
                (0..nv - 1).for_each(|j| unsafe {
                    libc::munmap(m.page(2 * j + 1) as *mut _, PAGE);
                })
            })
        };
        let m = Map_::new(nv * 2 * PAGE, Some(false))?;
        let v = holes(&m);
        if r > 0 {
            s.add("munmap_hole", v)
        }
        drop(m);
        // the same on a mapping that had pages (written, then emptied by MADV_DONTNEED: its
        // anon_vma and page table stay): each split clones and re-links anon_vma_chains in
        // the anon_vma's interval tree, each removal unlinks one (munmap_hole_anon)
        let m = Map_::new(nv * 2 * PAGE, Some(false))?;
        m.touch(1);
        unsafe { libc::madvise(m.page(0) as *mut _, nv * 2 * PAGE, libc::MADV_DONTNEED) };
        let v = holes(&m);
        if r > 0 {
            s.add("munmap_hole_anon", v)
        }
        drop(m);
        let m = Map_::new(nv * PAGE, Some(false))?;
        let v = timed(nv - 1, || {
            (1..nv).rev().for_each(|j| unsafe {
                libc::munmap(m.page(j) as *mut _, PAGE);
            })
        });
        if r > 0 {
            s.add("munmap_tail", v)
        }
        drop(m);
        // a TLB flush: MADV_DONTNEED of one present 4 KiB page per 64 KiB (no VMA work: the
        // zap and free of one page and the flush of its range), then of the same pages again
        // (nothing present: no flush, tlb_flush_mmu_tlbonly finds an empty range)
        let m = Map_::new(fsz, Some(false))?;
        m.touch(1);
        let nd = fsz / (16 * PAGE);
        let dontneed = |m: &Map_| {
            (0..nd).for_each(|j| unsafe {
                libc::madvise(m.page(j * 16 + 4) as *mut _, PAGE, libc::MADV_DONTNEED);
            })
        };
        let v = timed(nd, || dontneed(&m));
        if r > 0 {
            s.add("dontneed_present", v)
        }
        let v = timed(nd, || dontneed(&m));
        if r > 0 {
            s.add("dontneed_none", v)
        }
        drop(m);
        // and of three present pages per call (compaction-fill's fragment): a flush of three
        // pages is three invlpg (flush_tlb_func's partial flush, up to
        // tlb_single_page_flush_ceiling), against dontneed_present's one (tlb_flush_page_ns)
        let m = Map_::new(fsz, Some(false))?;
        m.touch(1);
        let v = timed(nd, || {
            (0..nd).for_each(|j| unsafe {
                libc::madvise(m.page(j * 16 + 4) as *mut _, 3 * PAGE, libc::MADV_DONTNEED);
            })
        });
        if r > 0 {
            s.add("dontneed_present3", v)
        }
        drop(m);
        // the PTE walk: one page written per 2 MiB, so every PTE table is there with 511
        // none entries; MADV_COLD (madvise_cold_or_pageout_pte_range) walks every entry. The
        // first call deactivates the present pages; the second finds them inactive and
        // does nothing else for them, so its time per PTE is the walk (a PMD step per 512)
        // those writes are faults that each allocate a PTE table (__pte_alloc) first: one
        // 4 KiB write fault per 2 MiB of a fresh mapping, per fault (fault_4k_sparse). 1024
        // of them (2 GiB of address space, 8 MiB of memory: a page and a table each): the
        // 32 of a 64 MiB mapping, taken right after the munmaps above, cost 5-7 us per fault
        // against 3.5-4.5 us over 1024 (and in seed 000's best cases); a fixed disturbance
        // (work those munmaps leave, a cold start) weighs 32 times less over 1024
        let nsparse = if quick { 256 } else { 1024 };
        back(nsparse * 2 * PAGE, false); // a page and a PTE table per fault
        let m = Map_::new(nsparse * HPAGE, Some(false))?;
        let v = timed(nsparse, || (0..nsparse).for_each(|b| unsafe { std::ptr::write_volatile(m.page(b * 512), 1) }));
        if r > 0 {
            s.add("fault_4k_sparse", v)
        }
        let cold = |m: &Map_| unsafe { libc::madvise(m.p as *mut _, m.len, libc::MADV_COLD) };
        cold(&m);
        let mut rc = 0;
        let v = timed(m.len / PAGE, || rc = cold(&m));
        if r > 0 && rc == 0 {
            s.add("pte_walk_none", v)
        }
        drop(m);
        back(fsz, true);
        let nh = fsz / HPAGE;
        let before = vm("thp_fault_alloc");
        // each THP fault timed alone (timed_each): backed as they are, a block the allocator
        // takes from elsewhere than the backed ones (a freed THP whose buddy is free goes to
        // the list's tail: buddy_merge_likely) may still refault in the host, +3.5 ms, which
        // moved a repetition's mean by 100 us; the fit leaves such faults out (_backed_mean)
        let (m, v) = time_thp_faults(fsz, &cache)?;
        thp_seen += vm("thp_fault_alloc") - before;
        // munmap of those THPs, per THP (munmap_2m): zap_huge_pmd, the deposited table's
        // free and the folio's, whose free_pages_prepare() checks and clears every tail page
        let u = timed(nh, || drop(m));
        if r > 0 {
            s.add_all("fault_2m_total", v);
            s.add("munmap_2m", u);
        }
        values.insert("munmap_2m.thps".into(), json!(nh));
        check_sig()?;
    }
    Ok(thp_seen)
}

pub fn calibrate(quick: bool, reps: Option<usize>, zram: bool, swapfile: bool) -> Result<Value, CalError> {
    let t_start = now_ns();
    let reps = reps.unwrap_or(if quick { 3 } else { 7 });
    let mut s = Samples::new();
    let mut notes: Vec<String> = vec![];
    let mut values: Map<String, Value> = Map::new();
    // what other tasks (and the host: steal) took of the CPUs meanwhile, for the notes
    let (cpu0, own0) = (cpu_ticks(), self_cpu_ns());

    // ---- CPU-side primitives on warmed memory ----
    for _ in 0..reps {
        s.add("cpu_ghz", cpu_ghz());
    }
    // the first of three windows minutes apart (calibrate_cpu)
    calibrate_cpu(quick, reps, &mut s)?;

    // ---- page faults, on memory backed just before (freed < 1 s earlier, so not reported) ----
    let thp_seen = calibrate_faults(quick, reps, &mut s, &mut values)?;
    if thp_seen == 0 {
        notes.push(
            "no THP faults happened (is transparent_hugepage/enabled `never`?): fault_2m is a 4K-fault figure".into(),
        );
    }

    // ---- random reads through the caches (the access op's loop) ----
    calibrate_access(quick, reps, &mut s)?;

    // ---- the first touch of 2 MiB blocks the guest reported (free page reporting) ----
    calibrate_refault(quick, &mut s, &mut values)?;
    values.insert("free_page_reporting".into(), json!(crate::host::free_page_reporting()));
    let mut c = Cal { quick, reps, s, values, notes };

    // ---- swap: zram per compressor and content class, and a swap file ----
    let mut journal_guard = JGuard { j: Journal::new(), owner: std::process::id() };
    if is_root() {
        // the first of three windows minutes apart (calibrate_split_64k)
        crate::calibrate_mm::calibrate_split_64k(&mut c, &mut journal_guard)?;
    }
    let swaps = read_file("/proc/swaps").unwrap_or_default();
    let other_swap = swaps.lines().count() > 1;
    if (zram || swapfile) && !is_root() {
        c.notes.push("not root: zram and swap-file costs were not measured".into());
    } else if (zram || swapfile) && other_swap {
        c.notes.push(
            "another swap device is active: zram and swap-file costs were not measured (they would be mixed up)".into(),
        );
    } else {
        if zram {
            zram_all(&mut c, &mut journal_guard)?;
        }
        if swapfile {
            crate::calibrate_mm::calibrate_block(&mut c, &mut journal_guard)?;
            crate::calibrate_mm::calibrate_swap_dev("file", &mut c, &mut journal_guard)?;
            if std::path::Path::new("/dev/loop-control").exists() {
                crate::calibrate_mm::calibrate_swap_dev("disk", &mut c, &mut journal_guard)?;
            } else {
                c.notes.push("no loop devices (/dev/loop-control): the `disk` swap costs were not measured".into());
            }
        }
    }
    // the second window of the CPU-side primitives
    calibrate_cpu(c.quick, c.reps, &mut c.s)?;
    // ---- splits, collapse, compaction ----
    if is_root() {
        crate::calibrate_mm::calibrate_page_free(&mut c, &mut journal_guard)?;
        crate::calibrate_mm::calibrate_split(&mut c, &mut journal_guard)?;
        crate::calibrate_mm::calibrate_mthp_fault(&mut c, &mut journal_guard)?;
        crate::calibrate_mm::calibrate_split_64k(&mut c, &mut journal_guard)?;
        crate::calibrate_mm::calibrate_compaction(&mut c)?;
    } else {
        c.notes
            .push("not root: the per-CPU list drain, split, mTHP fault and compaction costs were not measured".into());
    }
    crate::calibrate_mm::calibrate_collapse(&mut c)?;
    if is_root() {
        crate::calibrate_mm::calibrate_split_64k(&mut c, &mut journal_guard)?;
    }
    // ---- random reads, faults and munmaps again, minutes later: this host's speed steps for
    // seconds to minutes at a time (cache_miss_ns 34 ns in one calibration, 20 ns in the
    // next; a THP fault ~175 us, then ~210 us for a while, 2026-12-05), so these take their
    // samples at both ends of the calibration (the per-CPU list's frees in the middle and at
    // the end) ----
    calibrate_access(c.quick, c.reps, &mut c.s)?;
    calibrate_faults(c.quick, c.reps, &mut c.s, &mut c.values)?;
    if is_root() {
        crate::calibrate_mm::calibrate_page_free(&mut c, &mut journal_guard)?;
    }
    // the hypervisor's refault too: its median moved 5.8 -> 8.1 ms between two calibrations
    // 40 minutes apart (out/host-h53.toml, out/host-h54.toml) while compaction-fill's eat
    // phase, made of such refaults, ran 13.3-13.5 s live in both pairs
    if !c.quick {
        calibrate_refault(c.quick, &mut c.s, &mut c.values)?;
    }
    drop(journal_guard);
    calibrate_cpu(c.quick, c.reps, &mut c.s)?;

    if let (Some(a), Some(b)) = (cpu0, cpu_ticks()) {
        let own = (self_cpu_ns() - own0) as f64 / 1e9 * crate::util::clk_tck() as f64;
        let (other, steal) = others_share(a, b, own, ncpus());
        c.values.insert("host_other_cpus".into(), json!((other * 100.0).round() / 100.0));
        c.values.insert("host_steal".into(), json!((steal * 1000.0).round() / 1000.0));
        if other > 0.5 || steal > 0.05 {
            c.notes.push(format!(
                "other tasks kept {other:.1} of {} CPUs busy during the calibration (steal {:.0} %): memory-bound kernel paths measure slower under such load (a swap-cache munmap 1.4-1.6 us a page against 0.8-1.0 us on an idle host), which run_delay does not remove; calibrate when the host is idle, close to the live runs it is compared with",
                ncpus(),
                steal * 100.0
            ));
        }
    }
    Ok(calibration_json(c, t_start, None))
}

/// A calibration's result: its samples and values, notes, the host and kernel, how it was
/// taken (`only`: the one step measured).
fn calibration_json(c: Cal, t_start: u64, only: Option<&str>) -> Value {
    let (release, _) = crate::host::uname();
    let host = read_trim("/proc/sys/kernel/hostname").unwrap_or_default();
    let Cal { quick, reps, s, values, notes } = c;
    let mut v = json!({
        "samples": s.v,
        // each sample's CPU probe (Samples), in the same order
        "sample_probes": s.probe,
        "values": values,
        "notes": notes,
        "host": host,
        "kernel": release,
        "quick": quick,
        "reps": reps,
        "elapsed_s": (now_ns() - t_start) as f64 / 1e9,
    });
    if let Some(o) = only {
        v["only"] = json!(o);
    }
    v
}

/// Random reads through the caches (access_rand_*): the live runner's random access stream,
/// timed through the runner's own loop (child::access_stream: Rng::below over the region's
/// 64-byte lines, one 8-byte load each; a simpler copy of it read ~30 % faster past the
/// cache) over THP-mapped buffers, so every translation hits the TLB: 256 KiB stays in
/// cache (the loop's own cost: access_cycles), 256 MiB misses the last-level cache nearly
/// always (cache_miss_ns), 16 and 32 MiB partly (the cache's capacity: cache_bytes). A warm
/// pass before each timed one.
fn calibrate_access(quick: bool, reps: usize, s: &mut Samples) -> Result<(), CalError> {
    if crate::calibrate_mm::thp_usable() {
        let na = if quick { 50_000 } else { 200_000 };
        for r in 0..=reps.min(4) {
            for (name, len) in [("256k", 256usize << 10), ("16m", 16 << 20), ("32m", 32 << 20), ("256m", 256 << 20)] {
                let m = Map_::new(len.max(HPAGE), Some(true))?;
                m.touch(1);
                let mut acc = 0u64;
                let mut read = |seed: u64| {
                    let st = Stream {
                        pattern: AccessPattern::Random,
                        count: Some(na as u64),
                        deadline: None,
                        write: 0.0,
                        stride: 64,
                        theta: None,
                        seed,
                    };
                    acc = acc.wrapping_add(access_stream(m.p as u64, len as u64, &st));
                };
                read((r as u64) << 1);
                let v = timed(na, || read(((r as u64) << 1) | 1));
                std::hint::black_box(acc);
                if r > 0 {
                    s.add(&format!("access_rand_{name}"), v);
                }
            }
            check_sig()?;
        }
    }
    Ok(())
}

/// A calibration under way, passed to each of its steps: how it runs (quick, the
/// repetitions) and what it collects (samples, values, notes).
pub(crate) struct Cal {
    pub(crate) quick: bool,
    pub(crate) reps: usize,
    pub(crate) s: Samples,
    pub(crate) values: Map<String, Value>,
    pub(crate) notes: Vec<String>,
}

impl Cal {
    /// A calibration of one step (`calibrate --only`), noted as such.
    fn new(quick: bool, reps: usize, note: &str) -> Cal {
        Cal { quick, reps, s: Samples::new(), values: Map::new(), notes: vec![note.into()] }
    }
}

pub(crate) struct JGuard {
    pub(crate) j: Journal,
    pub(crate) owner: u32,
}
impl JGuard {
    pub(crate) fn undo(&mut self) -> Result<(), CalError> {
        let p = self.j.restore();
        let _ = std::fs::remove_file(safety::journal_path());
        self.j = Journal::new();
        if p.is_empty() {
            Ok(())
        } else {
            Err(CalError::Failed(format!("restore failed: {}", p.join("; ")), 1))
        }
    }
}
impl Drop for JGuard {
    fn drop(&mut self) {
        if std::process::id() == self.owner
            && (!self.j.swapon.is_empty()
                || !self.j.zram.is_empty()
                || !self.j.swapfiles.is_empty()
                || !self.j.knobs.is_empty())
        {
            for e in self.j.restore() {
                eprintln!("thplab-live: RESTORE FAILED: {e}");
            }
            let _ = std::fs::remove_file(safety::journal_path());
        }
    }
}

pub(crate) fn run_swapon(path: &str) -> Result<(), CalError> {
    let o = std::process::Command::new("mkswap")
        .arg(path)
        .output()
        .map_err(|e| CalError::Failed(format!("mkswap: {e}"), 1))?;
    if !o.status.success() {
        return Err(CalError::Failed(format!("mkswap {path}: {}", String::from_utf8_lossy(&o.stderr)), 1));
    }
    let c = std::ffi::CString::new(path).unwrap();
    if unsafe { libc::swapon(c.as_ptr(), 0x8000 | 32767) } != 0 {
        return Err(CalError::Failed(format!("swapon {path}: {}", errno_name(errno())), 1));
    }
    Ok(())
}

pub(crate) fn fill_class(m: &Map_, class: &str, corpus: &[u8]) {
    let n = m.len / PAGE;
    for i in 0..n {
        let p = m.page(i);
        unsafe {
            match class {
                "same" => fill(p, PAGE, &WriteData::Byte(0x5a), 0, 0, corpus),
                // the model's SPARSE class (content.rs) is what a partial write of a byte
                // value into a zero page makes: one run of that value, here one byte, the
                // page's last (seed 000's worst case, 1 byte per 4 KiB). Not 16 scattered
                // random bytes, as before 2026-11-27: lzo-rle stored 116 bytes of those and
                // took 1.7 us a page, of one byte 41 (as seed 000's worst-case runs store,
                // out/vk-h8) and 1.2 us
                "sparse" => {
                    std::ptr::write_bytes(p, 0, PAGE);
                    *p.add(PAGE - 1) = 0x5a;
                }
                "text" => fill(p, PAGE, &WriteData::Kind(DataKind::Text), 1, i as u64, corpus),
                _ => fill(p, PAGE, &WriteData::Kind(DataKind::Random), 1, i as u64, corpus),
            }
        }
    }
}

/// Until the block device `dev` (e.g. /dev/loop0) has no write request in flight
/// (/sys/block/<dev>/inflight); a caller then waits for the rest (`wait_writeback`) untimed.
/// Where that file cannot be read, until no page is under writeback (`wait_writeback`).
///
/// A swap folio's writeback ends when its request completes (end_swap_bio_write ->
/// folio_end_writeback). Meminfo's Writeback counts every device's pages, and after the
/// loop device's last swap write had completed it still held 20-150 kB for another 15-25
/// ms on this host (2026-12-06, 64 MiB of 4 KiB swap-outs, 5 runs): a fixed tail that a
/// 64 MiB drain turned into 1-2 us a page of device time (disk write_segment_ns 1,444 in
/// one calibration, 2,878 in the next), while the device had kept up with the pageout.
pub(crate) fn wait_device_writes(dev: &str) {
    let name = dev.rsplit('/').next().unwrap_or(dev);
    let path = format!("/sys/block/{name}/inflight");
    let mut unreadable = false;
    poll_until(|| match read_trim(&path).as_deref().and_then(inflight_writes) {
        Some(w) => w == 0,
        None => {
            unreadable = true;
            true
        }
    });
    if unreadable {
        wait_writeback()
    }
}

/// The write requests in flight from a block device's `inflight` file ("reads writes").
fn inflight_writes(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace();
    it.next()?.parse::<u64>().ok()?;
    it.next()?.parse().ok()
}

pub(crate) fn wait_writeback() {
    poll_until(|| meminfo().get("Writeback").copied().unwrap_or(0) == 0)
}

/// Every 200 us until `done`, for at most 30 s.
fn poll_until(mut done: impl FnMut() -> bool) {
    let t = now_ns();
    while now_ns() - t < 30_000_000_000 {
        if done() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// zram per compressor (calibrate_zram), for each of lzo-rle, lzo and lz4 the kernel has.
fn zram_all(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    if std::path::Path::new("/sys/block/zram0").exists()
        && read_trim("/sys/block/zram0/disksize").as_deref() == Some("0")
    {
        let avail: Vec<String> = read_trim("/sys/block/zram0/comp_algorithm")
            .map(|t| t.split_whitespace().map(|x| x.trim_matches(|c| c == '[' || c == ']').to_string()).collect())
            .unwrap_or_default();
        for alg in ["lzo-rle", "lzo", "lz4"] {
            if avail.iter().any(|a| a == alg) {
                calibrate_zram(alg, c, g)?;
            }
        }
    } else {
        c.notes.push("/dev/zram0 missing or in use: zram costs were not measured".into());
    }
    Ok(())
}

/// The first touch of 2 MiB blocks the guest reported (free page reporting):
/// `refault_reported_2m_total`, one sample a block (a full calibration takes them at both
/// ends and pools them).
fn calibrate_refault(quick: bool, s: &mut Samples, values: &mut Map<String, Value>) -> Result<(), CalError> {
    // Fault THPs in, free them, let the guest report them to the host, then time the first
    // touch of each block of a new mapping: the allocator hands back the blocks just freed.
    // A pass reports only when enough is free (page_reporting_cycle()'s budget): after
    // 64 blocks freed this guest reported some, all or none of them (0 of 128 timed in
    // out/cal-h13), after 512 nearly all (508 of 512, 960 MiB reported in 6 s). Where the
    // kernel counts the KiB it reported (host::reported_kib) the wait ends once that count
    // has risen by 3/4 of what was freed, else after `idle`.
    let idle: u64 = std::env::var("THPLAB_CAL_IDLE_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(if quick {
        6000
    } else {
        10000
    });
    let nb = if quick { 256 } else { 512 };
    let w = Map_::new(nb * HPAGE, Some(true))?;
    w.touch(1);
    let before = crate::host::reported_kib();
    drop(w);
    let want = (nb * HPAGE / 1024) as u64 * 3 / 4;
    let t_end = now_ns() + idle * 1_000_000;
    while now_ns() < t_end {
        std::thread::sleep(std::time::Duration::from_millis(50));
        check_sig()?;
        if before.zip(crate::host::reported_kib()).is_some_and(|(a, b)| b.saturating_sub(a) >= want) {
            break;
        }
    }
    if let Some((a, b)) = before.zip(crate::host::reported_kib()) {
        // summed over the calibration's refault windows
        let e = values.entry("refault_reported_kib").or_insert(json!(0));
        *e = json!(e.as_u64().unwrap_or(0) + b.saturating_sub(a));
    }
    let m = Map_::new(nb * HPAGE, Some(true))?;
    for i in 0..nb {
        let v = timed(1, || unsafe { std::ptr::write_volatile(m.page(i * 512), 1) });
        s.add("refault_reported_2m_total", v);
    }
    Ok(())
}

/// `calibrate --only refault`: the refault of reported blocks alone, beside a few THP faults
/// on backed memory (fault_2m_total: what a refault costs more than), for a profile whose
/// other fields come from an earlier calibration.
pub fn calibrate_refault_only(quick: bool, reps: Option<usize>) -> Result<Value, CalError> {
    let t_start = now_ns();
    let reps = reps.unwrap_or(if quick { 3 } else { 7 });
    let mut c = Cal::new(quick, reps, "only the refault of reported blocks was measured");
    let cache = CacheSweep::new()?;
    back(64 * HPAGE, true);
    let (m, v) = time_thp_faults(64 * HPAGE, &cache)?;
    drop(cache);
    drop(m);
    c.s.add_all("fault_2m_total", v);
    calibrate_refault(quick, &mut c.s, &mut c.values)?;
    c.values.insert("free_page_reporting".into(), json!(crate::host::free_page_reporting()));
    Ok(calibration_json(c, t_start, Some("refault")))
}

/// `calibrate --only zram`: the zram step alone (root, no other swap device), for a profile
/// whose other fields come from an earlier calibration (`thplab calibrate --only zram --base`).
pub fn calibrate_zram_only(quick: bool, reps: Option<usize>) -> Result<Value, CalError> {
    let t_start = now_ns();
    let reps = reps.unwrap_or(if quick { 3 } else { 7 });
    if !is_root() {
        return Err(CalError::Input("calibrate --only zram needs root".into()));
    }
    if read_file("/proc/swaps").unwrap_or_default().lines().count() > 1 {
        return Err(CalError::Input("another swap device is active: zram costs would be mixed up".into()));
    }
    let mut c = Cal::new(quick, reps, "only the zram step was measured");
    let mut g = JGuard { j: Journal::new(), owner: std::process::id() };
    zram_all(&mut c, &mut g)?;
    drop(g);
    Ok(calibration_json(c, t_start, Some("zram")))
}

/// `calibrate --only compaction`: the vm.compact_memory step alone (root), for a profile whose
/// other fields come from an earlier calibration (`thplab calibrate --only compaction --base`).
pub fn calibrate_compaction_only(quick: bool, reps: Option<usize>) -> Result<Value, CalError> {
    let t_start = now_ns();
    let reps = reps.unwrap_or(if quick { 3 } else { 7 });
    if !is_root() {
        return Err(CalError::Input("calibrate --only compaction needs root".into()));
    }
    let mut c = Cal::new(quick, reps, "only the compaction step was measured");
    crate::calibrate_mm::calibrate_compaction(&mut c)?;
    Ok(calibration_json(c, t_start, Some("compaction")))
}

fn calibrate_zram(alg: &str, c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, .. } = c;
    let dev = "zram0";
    let before = read_trim("/sys/block/zram0/comp_algorithm")
        .and_then(|t| thplab_workload::knobs::parse_sysfs_choice(&t))
        .unwrap_or_default();
    g.j.zram.push((dev.into(), before));
    g.j.swapon.push("/dev/zram0".into());
    g.j.save().map_err(|e| CalError::Failed(e, 1))?;
    let n = if quick { 1024 } else { 4096 };
    write_file("/sys/block/zram0/comp_algorithm", alg)
        .map_err(|e| CalError::Failed(format!("zram0 comp_algorithm {alg}: {e}"), 1))?;
    write_file("/sys/block/zram0/disksize", &format!("{}", (n * PAGE * 4) as u64 + (16 << 20)))
        .map_err(|e| CalError::Failed(format!("zram0 disksize: {e}"), 1))?;
    run_swapon("/dev/zram0")?;
    let corpus = text_corpus();
    let mm = |k: &str| crate::host::zram_mm_stat(dev).and_then(|v| v[k].as_i64()).unwrap_or(0);
    let classes = ["same", "sparse", "text", "random"];
    let mut bytes: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    // Repetitions outside, classes inside: the fit takes each class's figures less the
    // same-filled ones of the same repetition (calibrate.py _fit_zram), and this host's speed
    // steps for seconds to minutes (measured 2026-11-27: a same-filled swap-in's median
    // 4.6-6.7 us a page over repetitions seconds apart, the host's doing), so the classes of
    // one repetition are measured back to back, in the same state.
    for r in 0..=reps {
        for class in classes {
            let m = Map_::new(n * PAGE, Some(false))?;
            fill_class(&m, class, &corpus);
            back(n * PAGE, false); // zsmalloc's pages for the compressed objects
            let (c0, sp0, o0) = (mm("compr_data_size"), mm("same_pages"), vm("pswpout"));
            let v = timed(n, || unsafe {
                libc::madvise(m.p as *mut _, m.len, libc::MADV_PAGEOUT);
            });
            let out = vm("pswpout") - o0;
            if out < (n as i64) * 9 / 10 {
                return Err(CalError::Failed(
                    format!("zram {alg} {class}: only {out} of {n} pages were swapped out"),
                    1,
                ));
            }
            if r > 0 {
                s.add(&format!("zram.{alg}.{class}.out"), v);
                bytes.entry(class).or_default().push(if class == "same" {
                    (mm("same_pages") - sp0) as f64 / out as f64
                } else {
                    (mm("compr_data_size") - c0) as f64 / out as f64
                });
            }
            back(n * PAGE, false); // the swap-in's new pages
            let v = timed(n, || {
                (0..n).for_each(|i| unsafe {
                    std::hint::black_box(std::ptr::read_volatile(m.page(i)));
                })
            });
            if r > 0 {
                s.add(&format!("zram.{alg}.{class}.in"), v);
            }
            drop(m);
            crate::calibrate_mm::zram_thp_and_free(alg, class, quick, r > 0, s, &corpus)?;
            check_sig()?;
        }
    }
    for (class, mut b) in bytes {
        b.sort_by(|a, b| a.partial_cmp(b).unwrap());
        values.insert(format!("zram.{alg}.{class}.bytes"), json!(b[b.len() / 2]));
    }
    g.undo()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that map and unmap memory and then look at the address space or the RSS run
    /// one at a time (the test harness runs tests on parallel threads of one process).
    static MM: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// calibrate's sparse pages are the model's SPARSE class as a workload makes it (a byte
    /// value written into a zero page): one non-zero byte, the page's last, so that
    /// page_same_filled() and is_folio_zero_filled() stop at the last word.
    #[test]
    fn a_calibration_sparse_page_has_one_nonzero_byte_the_last() {
        let Ok(m) = Map_::new(4 * PAGE, Some(false)) else { panic!("mmap") };
        fill_class(&m, "sparse", &text_corpus());
        for i in 0..4 {
            let p = unsafe { std::slice::from_raw_parts(m.page(i), PAGE) };
            let nz: Vec<usize> = (0..PAGE).filter(|&b| p[b] != 0).collect();
            assert_eq!(nz, vec![PAGE - 1], "page {i}");
        }
    }

    /// The cache sweep before the timed THP faults has its pages before the back() it
    /// follows (so it takes none of the backed blocks) and writes every 64-byte line of
    /// them: a sweep that skipped lines, or that the compiler dropped, would leave the faults
    /// some of their blocks in the cache.
    #[test]
    fn the_cache_sweep_is_faulted_in_whole_and_writes_every_line() {
        let _g = MM.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(c) = CacheSweep::new() else { panic!("mmap") };
        // every page resident (mincore), before any sweep
        let mut vec = vec![0u8; CACHE_SWEEP_BYTES / PAGE];
        assert_eq!(unsafe { libc::mincore(c.0.p as *mut _, CACHE_SWEEP_BYTES, vec.as_mut_ptr()) }, 0);
        assert!(vec.iter().all(|&b| b & 1 == 1), "not faulted in");
        c.sweep();
        for off in (0..CACHE_SWEEP_BYTES).step_by(64) {
            assert_eq!(unsafe { std::ptr::read(c.0.p.add(off) as *const u64) }, off as u64, "line at {off}");
        }
        // the rest of each line as the touch left it
        assert_eq!(unsafe { *c.0.p.add(8) }, 1);
    }

    /// The drain of a disk's swap writes reads the writes column of /sys/block/<dev>/inflight
    /// (block/genhd.c part_inflight_show: "%8u %8u\n", reads then writes).
    #[test]
    fn inflight_writes_is_the_second_column() {
        assert_eq!(inflight_writes("       3       17"), Some(17));
        assert_eq!(inflight_writes("       0        0"), Some(0));
        assert_eq!(inflight_writes("       5"), None);
        assert_eq!(inflight_writes("x 4"), None);
    }

    #[test]
    fn other_tasks_share_comes_from_proc_stat_less_own_time() {
        let a = parse_cpu_line("cpu  100 0 50 1000 0 0 0 10 0 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!(a, (150, 10, 1160));
        // 1000 ticks later on 2 CPUs: 600 busy (200 of them ours), 40 stolen
        let b = parse_cpu_line("cpu  500 0 250 1360 0 0 0 50 0 0\n").unwrap();
        let (other, steal) = others_share(a, b, 200.0, 2);
        assert!((other - 0.8).abs() < 1e-9, "{other}");
        assert!((steal - 0.04).abs() < 1e-9, "{steal}");
        assert_eq!(parse_cpu_line("intr 1 2 3"), None);
        // our own time is never counted as another task's
        assert_eq!(others_share(a, b, 10_000.0, 2).0, 0.0);
    }

    /// Each window of the CPU-side primitives adds `reps` samples of each (its warm-up round
    /// discarded) to those of the windows before it: calibrate() pools three. The live
    /// runner's host-speed probe is among them (the profile's probe_fault_4k_ns).
    #[test]
    fn cpu_primitive_windows_pool_their_samples() {
        let _g = MM.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = Samples::new();
        assert!(calibrate_cpu(true, 1, &mut s).is_ok(), "first window");
        assert!(calibrate_cpu(true, 1, &mut s).is_ok(), "second window");
        for k in ["clear_4k", "clear_2m", "copy_4k", "fill_4k_text", "syscall", "sleep_1ms", "host_probe"] {
            let v = s.get(k).unwrap_or_else(|| panic!("{k} sampled"));
            assert_eq!(v.len(), 2, "{k}: one round a window, the warm-up left out: {v:?}");
            assert!(v.iter().all(|x| x.is_finite() && *x > 0.0), "{k}: {v:?}");
            // beside each sample, the CPU probe as it was added (the host's speed then)
            let p = &s.probe[k];
            assert_eq!(p.len(), v.len(), "{k}: a probe a sample: {p:?}");
            assert!(p.iter().all(|&x| x > 0), "{k}: {p:?}");
        }
    }

    #[test]
    fn munmap_pieces_times_every_piece_and_unmaps_the_whole_region() {
        let _g = MM.lock().unwrap_or_else(|e| e.into_inner());
        let len = (8 << 20) + PAGE;
        let Ok(m) = Map_::new(len, Some(false)) else { panic!("mmap failed") };
        m.touch(1);
        let p = m.p;
        let v = munmap_pieces(m, 4 << 20);
        assert_eq!(v.len(), 3, "two 4 MiB pieces and the last page: {v:?}");
        assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0));
        // nothing is left mapped: mincore() fails with ENOMEM on every piece
        for off in [0, 4 << 20, 8 << 20] {
            let mut vec = [0u8; 1];
            let r = unsafe { libc::mincore(p.add(off) as *mut _, PAGE, vec.as_mut_ptr()) };
            assert_eq!(r, -1, "offset {off} still mapped");
        }
    }

    #[test]
    fn timed_each_times_every_unit_alone() {
        // one slow unit among fast ones: it alone carries the sleep, so a fit can leave it out
        // (as a refaulted THP among backed ones)
        let v = timed_each(5, |i| {
            if i == 3 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        assert_eq!(v.len(), 5);
        assert!(v[3] >= 20e6, "{v:?}");
        // the others are empty: fast, but for a preemption on a busy machine (one allowed)
        let fast = v.iter().enumerate().filter(|&(i, x)| i != 3 && *x < 10e6).count();
        assert!(fast >= 3, "{v:?}");
    }

    #[test]
    fn back_faults_in_and_frees_what_it_backs() {
        let _g = MM.lock().unwrap_or_else(|e| e.into_inner());
        let rss = || {
            read_file("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("RssAnon:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().unwrap())
                })
                .unwrap()
        };
        // this thread's minor faults (other test threads fault too)
        let minflt = || unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut u);
            u.ru_minflt as u64
        };
        let (before, min_faults) = (rss(), minflt());
        assert_eq!(crate::host::back_memory(0, false), 0);
        // rounded up to 2 MiB, every 4 KiB page written once (a fault each: 4 KiB pages)
        assert_eq!(crate::host::back_memory((32 << 20) + 1, false), 34 << 20);
        assert!(minflt() - min_faults >= (34 << 20) / PAGE as u64, "{} faults", minflt() - min_faults);
        // and all of it unmapped again (slack for other tests' threads: half of it)
        assert!(rss() < before + (17 << 10), "RssAnon {} kB after, {before} kB before", rss());
        // the live runner's speed probe: 16 MiB backed (twice its size) and then faulted
        // in 4 KiB pages, every one a fault of this thread, timed, and all of it unmapped
        let min_faults = minflt();
        let ns = crate::host::fault_4k_probe_ns(16 << 20).expect("the probe's mapping");
        assert!(ns.is_finite() && ns > 0.0, "{ns} ns a fault");
        assert!(minflt() - min_faults >= 3 * (16 << 20) / PAGE as u64, "{} faults", minflt() - min_faults);
        assert!(rss() < before + (17 << 10), "RssAnon {} kB after the probe, {before} kB before", rss());
    }
}
