//! One workload process, run for real in a forked child: each op becomes the syscalls
//! and memory accesses its doc comment in `thplab_workload::workload` names.
//!
//! The child talks to the supervisor over a pipe (JSON lines) and waits for its ack at every
//! phase marker (so the supervisor can snapshot /proc/vmstat at the boundary) and at the end
//! (so it can read /proc/PID/smaps_rollup before the child exits); the fault latencies, when
//! recorded, follow the end's ack.

use crate::util::*;
use serde_json::json;
use std::collections::HashMap;
use std::os::unix::io::RawFd;
use thplab_workload::knobs;
use thplab_workload::workload::{walk_ops, AccessPattern, DataKind, Op, Process, RangeSpec, WriteData};

const PAGE: u64 = 4096;
const HPAGE: u64 = 2 << 20;

struct Region {
    addr: u64,
    size: u64,
    /// First-touch tracking for fault latencies (only with record.fault_latency).
    touched: Vec<u64>,
    block_pages: Vec<u16>,
}

struct KSet {
    unit: u64,
    fds: Vec<RawFd>,
}

pub struct Child<'a> {
    pub proc_index: usize,
    pub process: &'a Process,
    pub seed: u64,
    pub fault_latency: bool,
    pub to_parent: RawFd,
    pub from_parent: RawFd,
}

struct State {
    regions: HashMap<String, Region>,
    ksets: HashMap<String, KSet>,
    thp_lat: Vec<u64>,
    fault_lat: Vec<u64>,
    /// (phase name, thp_lat.len(), fault_lat.len()) where each phase began
    lat_marks: Vec<(String, usize, usize)>,
    access_ns: u64,
    sink: u64,
    corpus: Vec<u8>,
    /// ops run so far (the op's index in an unrolled list: seeds per-op randomness)
    seq: u64,
    /// the open phase's start: (clock, system time, run-queue wait), sent with the message
    /// that ends the phase, so that no message is formatted or piped inside a phase
    phase_start: (u64, u64, u64),
    /// host::cpu_probe_ns() just before the open phase started (the host's speed then)
    phase_probe: u64,
}

/// A phase's start values: the clock first, the run-queue wait after it (a preemption
/// between the reads is then never subtracted from the phase; see "done").
fn phase_start_now() -> (u64, u64, u64) {
    let ns = now_ns();
    (ns, self_stime_ns(), self_run_delay_ns())
}

/// Break copy-on-write on the child's own memory before its first phase. After fork() every
/// private page the runner had is shared with the supervisor, so the child's first write to
/// each (its heap, stack, statics) took a COW fault inside a phase: ~100 faults, ~0.3 ms, in
/// the `main` phase of every scenario (validate: live 0.27 ms where the model, which has no
/// runner, charges nothing; pgfault 398 live vs 256). Only pages already present are written
/// (pagemap's present bit), so no new memory, THP or otherwise, is faulted in; the writes are
/// MADV_POPULATE_WRITE (v5.14; where it fails the child goes on as before).
fn unshare_own_memory() {
    use std::io::{Read, Seek, SeekFrom};
    const MADV_POPULATE_READ: i32 = 22;
    const MADV_POPULATE_WRITE: i32 = 23;
    const MAX_REGION: u64 = 256 << 20;
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
    let Ok(mut pm) = std::fs::File::open("/proc/self/pagemap") else { return };
    let mut buf: Vec<u8> = vec![];
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let path = f.nth(3).unwrap_or("");
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else { continue };
        if end <= start || end - start > MAX_REGION {
            continue;
        }
        if (perms == "r-xp" || perms == "r--p") && path.starts_with('/') {
            // the runner's code and read-only data: fork() copies no page table entries of a
            // file mapping without anonymous pages, so the child's first run through each op's
            // code took ~150 minor faults inside its first phase (0.1 ms); map them now
            unsafe { libc::madvise(start as *mut _, (end - start) as usize, MADV_POPULATE_READ) };
            continue;
        }
        if perms != "rw-p" || path.starts_with("[v") {
            continue;
        }
        let n = ((end - start) / PAGE) as usize;
        buf.resize(n * 8, 0);
        if pm.seek(SeekFrom::Start(start / PAGE * 8)).is_err() || pm.read_exact(&mut buf).is_err() {
            continue;
        }
        let present = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap()) >> 63 == 1;
        let mut i = 0;
        while i < n {
            if !present(i) {
                i += 1;
                continue;
            }
            let j = (i..n).find(|&j| !present(j)).unwrap_or(n);
            unsafe {
                libc::madvise((start + i as u64 * PAGE) as *mut _, (j - i) * PAGE as usize, MADV_POPULATE_WRITE);
            }
            i = j;
        }
    }
}

fn send(fd: RawFd, v: serde_json::Value) {
    let mut s = v.to_string();
    s.push('\n');
    let b = s.as_bytes();
    let mut off = 0;
    while off < b.len() {
        let n = unsafe { libc::write(fd, b[off..].as_ptr() as *const _, b.len() - off) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            unsafe { libc::_exit(120) };
        }
        off += n as usize;
    }
}

/// The fault latencies, one JSON line (`{"t":"lat",...}`) written through a small buffer: no
/// JSON value of millions of numbers is built in the child's memory.
pub(crate) fn send_latencies(fd: RawFd, thp: &[u64], fault: &[u64], marks: &[(String, usize, usize)]) {
    use std::io::Write;
    use std::os::unix::io::FromRawFd;
    #[derive(serde::Serialize)]
    struct Lat<'a> {
        t: &'static str,
        thp_fault: &'a [u64],
        fault: &'a [u64],
        marks: &'a [(String, usize, usize)],
    }
    // the pipe stays open: the File is never dropped
    let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut w = std::io::BufWriter::with_capacity(1 << 16, &*f);
    let msg = Lat { t: "lat", thp_fault: thp, fault, marks };
    if serde_json::to_writer(&mut w, &msg).is_err() || w.write_all(b"\n").is_err() || w.flush().is_err() {
        unsafe { libc::_exit(120) };
    }
}

fn wait_ack(fd: RawFd) {
    let mut b = [0u8; 1];
    loop {
        let n = unsafe { libc::read(fd, b.as_mut_ptr() as *mut _, 1) };
        if n == 1 {
            return;
        }
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        // The supervisor is gone: nothing to report to.
        unsafe { libc::_exit(121) };
    }
}

/// A fixed, compressible English-like corpus (~3:1 with LZO/LZ4).
pub fn text_corpus() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "he",
        "this",
        "are",
        "or",
        "his",
        "from",
        "at",
        "which",
        "but",
        "have",
        "an",
        "had",
        "they",
        "you",
        "were",
        "their",
        "one",
        "all",
        "we",
        "can",
        "her",
        "has",
        "there",
        "been",
        "if",
        "more",
        "when",
        "will",
        "would",
        "who",
        "so",
        "no",
        "memory",
        "page",
        "kernel",
        "huge",
        "split",
        "fault",
        "swap",
        "zero",
        "compaction",
        "reclaim",
        "process",
        "mapping",
        "allocation",
        "transparent",
        "counter",
        "folio",
    ];
    let mut r = Rng::new(0x7e47);
    let mut v = Vec::with_capacity(1 << 16);
    while v.len() < (1 << 16) {
        let w = WORDS[r.below(WORDS.len() as u64) as usize];
        v.extend_from_slice(w.as_bytes());
        v.push(if r.below(12) == 0 { b'\n' } else { b' ' });
    }
    v.truncate(1 << 16);
    v
}

/// Store `len` bytes at `p`, the byte at offset i being `byte(i)`, with plain stores: single
/// bytes up to 8-byte alignment, then aligned 8-byte words, volatile so that the compiler
/// cannot turn the loop into a call to memset or memcpy. Inlined, with `fill`, into the
/// write op's per-page loop: on this VM every code page a program runs between two page
/// faults costs ~300 ns a fault (a C loop over 256 MiB: 1.55 us a 4 KiB fault with the
/// store inline, 1.85 us when the store is a call into another page, 2.0 us through
/// glibc's memset), a user-space cost that calibrate's fault loop does not have and the
/// model does not charge. With `fill` out of line and memset, the runner's 4 KiB faults
/// took 1.85-2.1 us against calibrate's 1.5-1.6, every 4 KiB fault phase of `thplab
/// validate` ~0.8x; inline, 1.52-1.59 us beside a probe of 1.46-1.50.
/// `word(i)` is the 8 bytes from offset i in memory order (`byte(i)` .. `byte(i + 7)`).
#[inline(always)]
unsafe fn store_bytes(p: *mut u8, len: usize, byte: impl Fn(usize) -> u8, word: impl Fn(usize) -> u64) {
    let mut i = 0;
    while i < len && !(p as usize + i).is_multiple_of(8) {
        std::ptr::write_volatile(p.add(i), byte(i));
        i += 1;
    }
    while i + 8 <= len {
        std::ptr::write_volatile(p.add(i) as *mut u64, word(i));
        i += 8;
    }
    while i < len {
        std::ptr::write_volatile(p.add(i), byte(i));
        i += 1;
    }
}

/// Fill `len` bytes at `p` with the op's data for the page at `page_off` of the region, with
/// plain stores (`store_bytes`). Inlined into the caller's per-page loop (see `Op::Write`).
#[inline(always)]
pub unsafe fn fill(p: *mut u8, len: usize, data: &WriteData, seed: u64, page_key: u64, corpus: &[u8]) {
    match data {
        WriteData::Byte(b) => {
            let w = u64::from_ne_bytes([*b; 8]);
            store_bytes(p, len, |_| *b, |_| w)
        }
        WriteData::Kind(DataKind::Random) => {
            let mut r = Rng::new(seed ^ page_key.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let mut i = 0;
            while i + 8 <= len {
                std::ptr::write_unaligned(p.add(i) as *mut u64, r.next_u64());
                i += 8;
            }
            let last = r.next_u64().to_le_bytes();
            for (j, k) in (i..len).enumerate() {
                *p.add(k) = last[j];
            }
        }
        WriteData::Kind(DataKind::Text) => {
            let start = ((page_key.wrapping_mul(1237) * 8) % ((corpus.len() - 4096) as u64)) as usize;
            let src = corpus[start..start + len].as_ptr();
            store_bytes(p, len, |i| *src.add(i), |i| std::ptr::read_unaligned(src.add(i) as *const u64));
        }
    }
}

/// The sleep op: nanosleep() until `ns` have passed (again after an early wake-up). Each
/// call ends past its deadline by the task's timer slack and the wake-up's latency
/// (calibrate's sleep_1ms, the model's sleep_wake_ns).
pub fn sleep_for(ns: u64) {
    let end = now_ns() + ns;
    loop {
        let now = now_ns();
        if now >= end {
            break;
        }
        let left = end - now;
        let ts = libc::timespec { tv_sec: (left / 1_000_000_000) as i64, tv_nsec: (left % 1_000_000_000) as i64 };
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }
}

fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Pages per pipe for a kalloc set: the largest unit every kfree of the set is aligned to (<= 256).
pub fn kalloc_unit(p: &Process, name: &str, size: u64) -> u64 {
    let mut g = size / PAGE;
    walk_ops(&p.ops, &mut |_, op| {
        if let Op::Kfree { range } = op {
            if range.region == name {
                for v in [range.offset, range.length, range.every].into_iter().flatten() {
                    g = gcd(g, v.0 / PAGE);
                }
            }
        }
    });
    let mut u = g.max(1);
    while u > 256 {
        // keep a divisor of g
        let mut d = 256;
        while d > 1 && !u.is_multiple_of(d) {
            d -= 1;
        }
        u = d;
    }
    u
}

fn raise_nofile(need: u64) {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    if rl.rlim_cur >= need {
        return;
    }
    if rl.rlim_max < need {
        let nr_open: u64 = read_trim("/proc/sys/fs/nr_open").and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
        rl.rlim_max = need.min(nr_open);
    }
    rl.rlim_cur = need.min(rl.rlim_max);
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
}

impl<'a> Child<'a> {
    fn err(&self, i: usize, path: &str, op: &Op, errno: &str, msg: String) {
        let mut m = json!({"t": "err", "i": i, "op": op.kind(), "errno": errno, "msg": msg});
        if path.contains('.') {
            m["path"] = json!(path);
        }
        send(self.to_parent, m);
    }

    /// Run a list of ops in order; a repeat loops over its body (op `i` of the process's
    /// list, at `prefix`, for error reports).
    fn run_ops(&self, ops: &[Op], top: Option<usize>, prefix: &str, st: &mut State) {
        for (j, op) in ops.iter().enumerate() {
            let i = top.unwrap_or(j);
            let path = format!("{prefix}ops[{j}]");
            if let Op::Repeat { count, ops: body } = op {
                for _ in 0..*count {
                    self.run_ops(body, Some(i), &format!("{path}."), st);
                }
                continue;
            }
            if let Err((e, m)) = self.op(i, op, st) {
                self.err(i, &path, op, &e, m);
            }
            st.seq += 1;
        }
    }

    pub fn run(&self) -> ! {
        let mut st = State {
            regions: HashMap::new(),
            ksets: HashMap::new(),
            thp_lat: vec![],
            fault_lat: vec![],
            lat_marks: vec![("main".into(), 0, 0)],
            access_ns: 0,
            sink: 0,
            corpus: text_corpus(),
            seq: 0,
            phase_start: (0, 0, 0),
            phase_probe: 0,
        };
        unshare_own_memory();
        // the child's thread opens its schedstat file before the first phase's clock starts
        self_run_delay_ns();
        // the first phase starts with the first op, after the fork and the child's own set-up
        // (and the host's speed probe, outside every phase: host::cpu_probe_ns)
        st.phase_probe = crate::host::cpu_probe_ns();
        st.phase_start = phase_start_now();
        self.run_ops(&self.process.ops, None, "", &mut st);
        std::hint::black_box(st.sink);
        // the run-queue wait is read before the clock at a phase's end (and after it at its
        // start), so a preemption between the two reads is never subtracted from a phase
        // that did not include it. The last phase ends with its last op: the clock is read,
        // and the supervisor closes the phase (its /proc/vmstat, buddyinfo and per-CPU lists)
        // and reads smaps_rollup, before the latencies are sent. Encoding millions of fault
        // latencies as a JSON value took ~1 GiB of 4 KiB pages (compaction-fill-p60: 262k
        // faults, 244k frees and CPU 0's per-CPU list down by 88k pages counted in its last
        // phase, p:fault); they are now streamed (send_latencies) after the phase closed.
        let rq = self_run_delay_ns();
        let (end_ns, end_stime) = (now_ns(), self_stime_ns());
        let probe = [st.phase_probe, crate::host::cpu_probe_ns()];
        send(
            self.to_parent,
            json!({"t": "done", "ns": end_ns, "stime": end_stime, "rq": rq, "start": st.phase_start, "cpu_probe": probe, "access_ns": st.access_ns}),
        );
        wait_ack(self.from_parent);
        if self.fault_latency {
            send_latencies(self.to_parent, &st.thp_lat, &st.fault_lat, &st.lat_marks);
        }
        unsafe { libc::_exit(0) }
    }

    fn region<'s>(&self, st: &'s mut State, r: &RangeSpec) -> Result<&'s mut Region, (String, String)> {
        st.regions
            .get_mut(&r.region)
            .ok_or_else(|| ("EFAULT".to_string(), format!("region `{}` is not mapped (its mmap failed)", r.region)))
    }

    fn op(&self, i: usize, op: &Op, st: &mut State) -> Result<(), (String, String)> {
        let sys = |what: &str| -> (String, String) {
            let e = errno();
            (errno_name(e), format!("{what}: {}", std::io::Error::from_raw_os_error(e)))
        };
        match op {
            Op::Repeat { .. } => unreachable!("run_ops loops over repeats"),
            Op::Phase { name } => {
                // the phase's run-queue wait first, then its end time (see "done")
                let rq = self_run_delay_ns();
                let (ns, stime) = (now_ns(), self_stime_ns());
                // the host's speed right after the phase and right before the next (outside
                // both: they change no counter, host::cpu_probe_ns)
                let probe = [st.phase_probe, crate::host::cpu_probe_ns()];
                st.lat_marks.push((name.clone(), st.thp_lat.len(), st.fault_lat.len()));
                send(
                    self.to_parent,
                    json!({"t": "phase", "name": name, "i": i, "ns": ns, "stime": stime, "rq": rq, "start": st.phase_start, "cpu_probe": probe}),
                );
                wait_ack(self.from_parent);
                // the new phase starts now, after the supervisor's snapshot at the boundary
                st.phase_probe = crate::host::cpu_probe_ns();
                st.phase_start = phase_start_now();
            }
            Op::Mmap { name, size, populate, align } => {
                let size = size.0;
                let extra = align.map_or(0, |a| a.0);
                let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
                if *populate {
                    flags |= libc::MAP_POPULATE;
                }
                let raw = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        (size + extra) as usize,
                        libc::PROT_READ | libc::PROT_WRITE,
                        flags,
                        -1,
                        0,
                    )
                };
                if raw == libc::MAP_FAILED {
                    return Err(sys("mmap"));
                }
                let raw = raw as u64;
                let addr = if extra > 0 {
                    let a = extra;
                    let start = (raw + a - 1) & !(a - 1);
                    unsafe {
                        if start > raw {
                            libc::munmap(raw as *mut _, (start - raw) as usize);
                        }
                        let end = raw + size + extra;
                        if end > start + size {
                            libc::munmap((start + size) as *mut _, (end - start - size) as usize);
                        }
                    }
                    start
                } else {
                    raw
                };
                let (touched, block_pages) = if self.fault_latency {
                    (vec![0u64; (size / PAGE).div_ceil(64) as usize], vec![0u16; size.div_ceil(HPAGE) as usize])
                } else {
                    (vec![], vec![])
                };
                st.regions.insert(name.clone(), Region { addr, size, touched, block_pages });
            }
            Op::Munmap { range } => {
                let r = self.region(st, range)?;
                let mut res = Ok(());
                let (addr, size) = (r.addr, r.size);
                range.for_each_piece(size, |off, len| {
                    if unsafe { libc::munmap((addr + off) as *mut _, len as usize) } != 0 && res.is_ok() {
                        res = Err(sys("munmap"));
                    }
                });
                forget(r, range);
                res?;
            }
            Op::Mprotect { range, prot } => {
                let r = self.region(st, range)?;
                let p = match prot {
                    thplab_workload::workload::Prot::None => libc::PROT_NONE,
                    thplab_workload::workload::Prot::R => libc::PROT_READ,
                    thplab_workload::workload::Prot::Rw => libc::PROT_READ | libc::PROT_WRITE,
                };
                let mut res = Ok(());
                range.for_each_piece(r.size, |off, len| {
                    if unsafe { libc::mprotect((r.addr + off) as *mut _, len as usize, p) } != 0 && res.is_ok() {
                        res = Err(sys("mprotect"));
                    }
                });
                res?;
            }
            Op::Madvise { range, advice } => {
                let r = self.region(st, range)?;
                let mut res = Ok(());
                range.for_each_piece(r.size, |off, len| {
                    if unsafe { libc::madvise((r.addr + off) as *mut _, len as usize, advice.number()) } != 0
                        && res.is_ok()
                    {
                        res = Err(sys(advice.name()));
                    }
                });
                use thplab_workload::workload::Advice;
                if matches!(advice, Advice::Dontneed | Advice::Free) {
                    forget(r, range);
                }
                res?;
            }
            Op::Write { range, byte, bytes, data } => {
                let seed = self.seed ^ (self.proc_index as u64).wrapping_mul(0x9e37) ^ hash_str(&range.region);
                let fl = self.fault_latency;
                let corpus = std::mem::take(&mut st.corpus);
                let (thp_lat, fault_lat) = (&mut st.thp_lat, &mut st.fault_lat);
                let r = st.regions.get_mut(&range.region).ok_or_else(|| {
                    ("EFAULT".to_string(), format!("region `{}` is not mapped (its mmap failed)", range.region))
                })?;
                let b = byte.unwrap_or(0) as u64;
                let n = bytes.map_or(PAGE - b, |x| x as u64) as usize;
                let (addr, size) = (r.addr, r.size);
                range.for_each_piece(size, |off, len| {
                    let mut pg = off & !(PAGE - 1);
                    while pg < off + len {
                        let p = (addr + pg + b) as *mut u8;
                        if fl {
                            let pi = (pg / PAGE) as usize;
                            let first = r.touched[pi / 64] & (1 << (pi % 64)) == 0;
                            if first {
                                let blk = (pg / HPAGE) as usize;
                                let t0 = now_ns();
                                unsafe { fill(p, n, data, seed, pg / PAGE, &corpus) };
                                let dt = now_ns() - t0;
                                if r.block_pages[blk] == 0 {
                                    thp_lat.push(dt)
                                } else {
                                    fault_lat.push(dt)
                                }
                                r.touched[pi / 64] |= 1 << (pi % 64);
                                r.block_pages[blk] += 1;
                            } else {
                                unsafe { fill(p, n, data, seed, pg / PAGE, &corpus) };
                            }
                        } else {
                            unsafe { fill(p, n, data, seed, pg / PAGE, &corpus) };
                        }
                        pg += PAGE;
                    }
                });
                st.corpus = corpus;
            }
            Op::Read { range, byte } => {
                let r = self.region(st, range)?;
                let b = byte.unwrap_or(0) as u64;
                let mut acc = 0u64;
                range.for_each_piece(r.size, |off, len| {
                    let mut pg = off & !(PAGE - 1);
                    while pg < off + len {
                        acc =
                            acc.wrapping_add(unsafe { std::ptr::read_volatile((r.addr + pg + b) as *const u8) } as u64);
                        pg += PAGE;
                    }
                });
                st.sink = st.sink.wrapping_add(acc);
            }
            Op::Access { range, pattern, count, duration, write, stride, theta } => {
                let r = self.region(st, range)?;
                let mut piece = (0, 0);
                range.for_each_piece(r.size, |o, l| piece = (o, l));
                let (off, len) = piece;
                let t0 = now_ns();
                let acc = access_stream(
                    r.addr + off,
                    len,
                    &Stream {
                        pattern: *pattern,
                        count: *count,
                        deadline: duration.map(|d| t0 + d.0),
                        write: write.unwrap_or(0.0),
                        stride: stride.map_or(64, |s| s.0),
                        theta: *theta,
                        seed: self.seed ^ st.seq ^ ((self.proc_index as u64) << 32),
                    },
                );
                st.access_ns += now_ns() - t0;
                st.sink = st.sink.wrapping_add(acc);
            }
            Op::Sleep { duration } => sleep_for(duration.0),
            Op::Set { knob, value } => {
                let v = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let (canon, val) = knobs::check_assignment(knob, &v).map_err(|e| ("EINVAL".to_string(), e))?;
                let def = knobs::registry_map().remove(canon.as_str()).unwrap();
                match def.path {
                    None => {} // a policy at its live value (checked by the supervisor)
                    Some(_) if canon == "vm.min_free_kbytes" && val == "auto" => {}
                    Some(p) => {
                        write_file(p, &val).map_err(|e| (io_errno_name(&e), format!("write {val} to {p}: {e}")))?
                    }
                }
            }
            Op::Prctl { thp_disable } => {
                if unsafe {
                    libc::prctl(
                        libc::PR_SET_THP_DISABLE,
                        *thp_disable as libc::c_ulong,
                        0 as libc::c_ulong,
                        0 as libc::c_ulong,
                        0 as libc::c_ulong,
                    )
                } != 0
                {
                    return Err(sys("prctl(PR_SET_THP_DISABLE)"));
                }
            }
            Op::Kalloc { name, size, .. } => {
                let unit = kalloc_unit(self.process, name, size.0);
                let n = size.0 / PAGE / unit;
                raise_nofile(n + 256);
                let buf = vec![0x5au8; PAGE as usize];
                let mut set = KSet { unit, fds: Vec::with_capacity(n as usize) };
                let mut res = Ok(());
                for _ in 0..n {
                    let mut fds = [0 as RawFd; 2];
                    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                        res = Err(sys("pipe2"));
                        break;
                    }
                    if unit > 16 && unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, (unit * PAGE) as libc::c_int) } < 0
                    {
                        res = Err(sys("fcntl(F_SETPIPE_SZ)"));
                        unsafe {
                            libc::close(fds[0]);
                            libc::close(fds[1])
                        };
                        break;
                    }
                    for _ in 0..unit {
                        if unsafe { libc::write(fds[1], buf.as_ptr() as *const _, PAGE as usize) } != PAGE as isize {
                            res = Err(sys("write to pipe"));
                            break;
                        }
                    }
                    unsafe { libc::close(fds[1]) };
                    set.fds.push(fds[0]);
                    if res.is_err() {
                        break;
                    }
                }
                st.ksets.insert(name.clone(), set);
                res?;
            }
            Op::Kfree { range } => {
                let set = st
                    .ksets
                    .get_mut(&range.region)
                    .ok_or_else(|| ("EINVAL".to_string(), format!("no kalloc set `{}`", range.region)))?;
                let ub = set.unit * PAGE;
                let size = set.fds.len() as u64 * ub;
                range.for_each_piece(size, |off, len| {
                    for c in (off / ub)..((off + len) / ub) {
                        let fd = &mut set.fds[c as usize];
                        if *fd >= 0 {
                            unsafe { libc::close(*fd) };
                            *fd = -1;
                        }
                    }
                });
            }
            Op::DropCaches { value } => {
                write_file("/proc/sys/vm/drop_caches", &value.to_string())
                    .map_err(|e| (io_errno_name(&e), format!("drop_caches: {e}")))?;
            }
            Op::MovePages { range, node } => {
                let r = self.region(st, range)?;
                let mut pages: Vec<*mut libc::c_void> = vec![];
                range.for_each_piece(r.size, |off, len| {
                    let mut pg = off;
                    while pg < off + len {
                        pages.push((r.addr + pg) as *mut _);
                        pg += PAGE;
                    }
                });
                for chunk in pages.chunks(4096) {
                    let nodes = vec![*node as libc::c_int; chunk.len()];
                    let mut status = vec![0 as libc::c_int; chunk.len()];
                    let rc = unsafe {
                        libc::syscall(
                            libc::SYS_move_pages,
                            0,
                            chunk.len() as libc::c_ulong,
                            chunk.as_ptr(),
                            nodes.as_ptr(),
                            status.as_mut_ptr(),
                            2i32, /* MPOL_MF_MOVE */
                        )
                    };
                    if rc < 0 {
                        return Err(sys("move_pages"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Forget first-touch state for a range whose pages were dropped (munmap, MADV_DONTNEED, MADV_FREE).
fn forget(r: &mut Region, range: &RangeSpec) {
    if r.touched.is_empty() {
        return;
    }
    let size = r.size;
    range.for_each_piece(size, |off, len| {
        let mut pg = off;
        while pg < off + len {
            let pi = (pg / PAGE) as usize;
            if r.touched[pi / 64] & (1 << (pi % 64)) != 0 {
                r.touched[pi / 64] &= !(1 << (pi % 64));
                r.block_pages[(pg / HPAGE) as usize] -= 1;
            }
            pg += PAGE;
        }
    });
}

/// An access op's stream (Op::Access): what it reads and writes, as the workload gives it.
pub struct Stream {
    pub pattern: AccessPattern,
    /// loads and stores in all (None: until the deadline)
    pub count: Option<u64>,
    /// a now_ns() value to stop at (the op's duration), checked every 1024 accesses
    pub deadline: Option<u64>,
    /// the share of stores, 0..=1
    pub write: f64,
    pub stride: u64,
    pub theta: Option<f64>,
    pub seed: u64,
}

/// The access op's loop over [base, base + len): one 8-byte load or store per address of the
/// stream; returns the sum of the loads. calibrate times this very function (access_rand_*,
/// the model's access_cycles, cache_miss_ns and cache_bytes): on a random stream over
/// memory past the cache the loop's time per access is the memory latency over the misses
/// the core keeps in flight, which depends on the loop's own instructions (a simpler copy of
/// it in calibrate measured 33-36 ns a read over 256 MiB of THPs where this one took 41-43).
/// Not inlined, so both callers run the same machine code.
#[inline(never)]
pub fn access_stream(base: u64, len: u64, s: &Stream) -> u64 {
    let mut rng = Rng::new(s.seed);
    let wfrac = s.write;
    let stride = s.stride;
    let lines = (len / 64).max(1);
    let pages = (len / PAGE).max(1);
    let zipf = if s.pattern == AccessPattern::Zipf && s.theta.unwrap_or(0.99) > 0.0 {
        Some(Zipf::new(pages, s.theta.unwrap_or(0.99)))
    } else {
        None
    };
    let total = s.count.unwrap_or(u64::MAX);
    let mut pos = 0u64;
    let mut acc = 0u64;
    let mut done = 0u64;
    'outer: while done < total {
        let batch = (total - done).min(1024);
        for _ in 0..batch {
            let a = match s.pattern {
                AccessPattern::Seq => {
                    let a = base + (pos & !7);
                    pos += stride;
                    if pos >= len {
                        pos %= len;
                    }
                    a
                }
                AccessPattern::Random => base + rng.below(lines) * 64,
                AccessPattern::Zipf => {
                    let pg = match &zipf {
                        Some(z) => z.sample(&mut rng),
                        None => rng.below(pages),
                    };
                    base + pg * PAGE + rng.below(64) * 64
                }
            };
            let a = a.min(base + len - 8) as *mut u64;
            if wfrac > 0.0 && rng.unit() < wfrac {
                unsafe { std::ptr::write_volatile(a, done) };
            } else {
                acc = acc.wrapping_add(unsafe { std::ptr::read_volatile(a) });
            }
        }
        done += batch;
        if let Some(d) = s.deadline {
            if now_ns() >= d {
                break 'outer;
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The access op's loop (and calibrate's access_rand_*) does `count` accesses in the
    /// range, the share `write` of them stores, and stops at its deadline.
    #[test]
    fn access_stream_counts_reads_and_stores_and_stops_at_its_deadline() {
        let st = |pattern, count, write, deadline| Stream {
            pattern,
            count,
            deadline,
            write,
            stride: 64,
            theta: None,
            seed: 7,
        };
        // 64 KiB of 1s: every load returns 1, so the sum counts the loads
        let mut buf = vec![1u64; 8192];
        let (base, len) = (buf.as_mut_ptr() as u64, 65536);
        for p in [AccessPattern::Seq, AccessPattern::Random, AccessPattern::Zipf] {
            assert_eq!(access_stream(base, len, &st(p, Some(5000), 0.0, None)), 5000, "{p:?}");
        }
        // a quarter stores, over 1 MiB (16384 lines, the first word of each): about 1250
        // lines stored, each the index of its batch's first access (a multiple of 1024)
        let mut big = vec![1u64; 131072];
        access_stream(big.as_mut_ptr() as u64, 1 << 20, &st(AccessPattern::Random, Some(5000), 0.25, None));
        let stored: Vec<u64> = big.iter().copied().filter(|&w| w != 1).collect();
        assert!((1000..1500).contains(&stored.len()), "{} lines stored", stored.len());
        assert!(stored.iter().all(|&w| w % 1024 == 0 && w < 5000));
        // stores only: nothing loaded
        assert_eq!(access_stream(base, len, &st(AccessPattern::Random, Some(5000), 1.0, None)), 0);
        // no count, a deadline already past: one batch of 1024 and out
        buf.fill(1);
        let base = buf.as_mut_ptr() as u64;
        assert_eq!(access_stream(base, len, &st(AccessPattern::Seq, None, 0.0, Some(0))), 1024);
        // only the range is touched: a stream over the first half leaves the second half
        let mut buf = vec![1u64; 8192];
        let base = buf.as_mut_ptr() as u64;
        access_stream(base, 32768, &st(AccessPattern::Random, Some(20000), 1.0, None));
        assert!(buf[..4096].iter().any(|&w| w != 1) && buf[4096..].iter().all(|&w| w == 1));
    }

    fn minflt() -> i64 {
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        ru.ru_minflt + ru.ru_majflt
    }

    /// Read-only data of the test binary (a file mapping, r--p), one byte per page read (1 MiB:
    /// fault-around maps 16 pages per fault).
    static RODATA: [u8; 256 * PAGE as usize] = [7; 256 * PAGE as usize];

    /// Run `f` in a forked child and return its result as the child's exit status (0..=255).
    fn in_child(f: impl FnOnce() -> i32) -> i32 {
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe { libc::_exit(f()) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status));
        libc::WEXITSTATUS(status)
    }

    /// The page faults (minor and major) a forked child takes in `work`, after
    /// unshare_own_memory() if `unshare` (at most 100).
    fn faults_in_child(unshare: bool, work: impl Fn()) -> i32 {
        in_child(|| {
            if unshare {
                unshare_own_memory();
            }
            let f0 = minflt();
            work();
            (minflt() - f0).min(100) as i32
        })
    }

    /// fork() maps none of a file mapping's pages in the child, so its first read of each
    /// page of the runner's code or read-only data faulted inside a phase; after
    /// unshare_own_memory() they are mapped.
    #[test]
    fn unshared_memory_maps_the_runners_read_only_pages() {
        let read = || {
            let mut sum = 0u64;
            for i in (0..RODATA.len()).step_by(PAGE as usize) {
                sum += unsafe { std::ptr::read_volatile(RODATA.as_ptr().add(i)) } as u64;
            }
            std::hint::black_box(sum);
        };
        let faults = faults_in_child(false, read);
        assert!(faults >= 8, "only {faults} faults on read-only data without it");
        let faults = faults_in_child(true, read);
        assert!(faults <= 2, "{faults} faults on read-only data after unshare_own_memory");
    }

    /// The run-queue wait is read from the calling thread's own schedstat file: a forked
    /// child reopens it (the parent's open file names the parent's thread).
    #[test]
    fn run_delay_is_the_forked_childs_own() {
        // the parent's thread opens its file first
        crate::util::self_run_delay_ns();
        let own = in_child(|| {
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            crate::util::self_run_delay_ns();
            i32::from(crate::util::run_delay_file_tid() == Some(tid))
        });
        assert_eq!(own, 1, "the child read its parent's schedstat");
    }

    /// After fork(), the child's writes to memory it shares with its parent take COW faults;
    /// after unshare_own_memory() they take none (glibc's fork keeps malloc usable in the
    /// child of a threaded test process).
    #[test]
    fn unshared_memory_takes_no_cow_faults() {
        let buf: Vec<u8> = vec![1; 64 * PAGE as usize];
        let touch = || {
            for i in (0..buf.len()).step_by(PAGE as usize) {
                unsafe { std::ptr::write_volatile(buf.as_ptr().add(i) as *mut u8, 2) };
            }
        };
        let faults = faults_in_child(false, touch);
        assert!(faults >= 60, "only {faults} COW faults without it");
        let faults = faults_in_child(true, touch);
        assert!(faults <= 2, "{faults} faults after unshare_own_memory");
    }

    /// fill() stores what the op's data says, at any offset and length: a byte value, or
    /// the corpus' text from the page's start (unaligned heads and tails included).
    #[test]
    fn fill_stores_the_data_at_any_offset_and_length() {
        let corpus = text_corpus();
        let mut buf = vec![0u8; 3 * PAGE as usize];
        for (off, len) in [(0usize, 1usize), (1, 1), (3, 8), (5, 64), (7, 4093), (0, 4096), (4095, 1)] {
            buf.fill(0);
            unsafe { fill(buf.as_mut_ptr().add(PAGE as usize + off), len, &WriteData::Byte(0xa5), 1, 0, &corpus) };
            let p = PAGE as usize + off;
            assert!(buf[p..p + len].iter().all(|&b| b == 0xa5), "byte at {off}+{len}");
            assert!(buf[..p].iter().chain(&buf[p + len..]).all(|&b| b == 0), "bytes outside {off}+{len}");
            buf.fill(0);
            unsafe { fill(buf.as_mut_ptr().add(p), len, &WriteData::Kind(DataKind::Text), 1, 7, &corpus) };
            let start = ((7u64 * 1237 * 8) % ((corpus.len() - 4096) as u64)) as usize;
            assert_eq!(&buf[p..p + len], &corpus[start..start + len], "text at {off}+{len}");
            assert!(buf[..p].iter().chain(&buf[p + len..]).all(|&b| b == 0), "text outside {off}+{len}");
        }
    }
}
