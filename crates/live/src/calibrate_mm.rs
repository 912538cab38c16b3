//! Calibration of the reclaim, swap, split, collapse and compaction primitives: block I/O of
//! the host's disk (a file with O_DIRECT, and a loop block device over a file), swap-out and
//! swap-in on a swap file and on a loop block device (`disk`), the zap of swap entries and of
//! swap-cache pages, the THP split paths (a PMD split by munmap, the deferred split of partially
//! mapped THPs, the underused-THP shrinker at two max_ptes_none), 64 KiB mTHP faults and
//! their deferred split, MADV_COLLAPSE, and manual
//! compaction at two fragmentation densities. Raw samples (ns per unit, one per repetition) and
//! the counters each measurement saw; `thplab calibrate` (Python) fits the profile.
//!
//! Every knob written is journalled first and restored by `JGuard::undo`; swap files, loop
//! devices and swapon are journalled like a run's.

use crate::calibrate::*;
use crate::safety::SavedKnob;
use crate::util::*;
use serde_json::json;
use thplab_workload::workload::{DataKind, WriteData};

const PAGE: usize = 4096;
const HPAGE: usize = 2 << 20;
const MADV_COLLAPSE: i32 = 25;
/// the piece of a timed munmap (munmap_pieces): 1024 pages, ~1 ms
const MUNMAP_PIECE: usize = 4 << 20;

fn failed(m: String) -> CalError {
    CalError::Failed(m, 1)
}

/// Write a knob for the calibration, journalling its value first (restored by `JGuard::undo`).
fn set_knob(g: &mut JGuard, name: &str, path: &str, value: &str) -> Result<(), CalError> {
    if !g.j.knobs.iter().any(|k| k.path == path) {
        let cur = read_trim(path).ok_or_else(|| failed(format!("cannot read {path}")))?;
        let cur = thplab_workload::knobs::parse_sysfs_choice(&cur).unwrap_or(cur);
        g.j.knobs.push(SavedKnob { name: name.into(), path: path.into(), value: cur });
        g.j.save().map_err(failed)?;
    }
    write_file(path, value).map_err(|e| failed(format!("{name} = {value}: {e}")))
}

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

fn drop_caches() {
    let _ = write_file("/proc/sys/vm/drop_caches", "2");
}

fn madvise(m: &Map_, off: usize, len: usize, advice: i32) -> i32 {
    unsafe { libc::madvise(m.p.add(off) as *mut _, len, advice) }
}

fn read_all(m: &Map_) {
    for i in 0..m.len / PAGE {
        unsafe { std::hint::black_box(std::ptr::read_volatile(m.page(i))) };
    }
}

/// Does MADV_HUGEPAGE give THPs here (transparent_hugepage/enabled not `never`)?
pub(crate) fn thp_usable() -> bool {
    read_trim(&format!("{THP}/enabled")).is_some_and(|t| !t.contains("[never]"))
}

/// The block device's queue attribute for a path's filesystem (a partition's parent disk).
fn fs_queue_attr(path: &str, attr: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let base = format!("/sys/dev/block/{maj}:{min}");
    read_trim(&format!("{base}/queue/{attr}")).or_else(|| read_trim(&format!("{base}/../queue/{attr}")))
}

fn dev_queue_attr(dev: &str, attr: &str) -> Option<String> {
    read_trim(&format!("/sys/block/{}/queue/{attr}", dev.trim_start_matches("/dev/")))
}

// ---------------------------------------------------------------- block I/O

fn pio(fd: i32, buf: *mut u8, len: usize, off: usize, write: bool) -> Result<(), CalError> {
    let n = unsafe {
        if write {
            libc::pwrite(fd, buf as *const _, len, off as i64)
        } else {
            libc::pread(fd, buf as *mut _, len, off as i64)
        }
    };
    if n != len as isize {
        return Err(failed(format!(
            "O_DIRECT {} of {len} at {off}: {}",
            if write { "write" } else { "read" },
            errno_name(errno())
        )));
    }
    Ok(())
}

/// O_DIRECT I/O on `path` (`size` bytes): sequential 2 MiB writes and reads (bandwidth), and
/// 4 KiB writes and reads one at a time at random and at sequential offsets (latency).
fn block_io(tag: &str, path: &str, size: usize, reps: usize, s: &mut Samples) -> Result<(), CalError> {
    let c = std::ffi::CString::new(path).unwrap();
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_DIRECT) };
    if fd < 0 {
        return Err(failed(format!("open {path} O_DIRECT: {}", errno_name(errno()))));
    }
    let r = (|| -> Result<(), CalError> {
        let buf = Map_::new(HPAGE, Some(false))?;
        buf.touch(0x5a);
        let chunks = size / HPAGE;
        let mut rng = Rng::new(7);
        for r in 0..=reps {
            for write in [true, false] {
                let mut res = Ok(());
                let v = timed(chunks, || {
                    for i in 0..chunks {
                        if res.is_ok() {
                            res = pio(fd, buf.p, HPAGE, i * HPAGE, write);
                        }
                    }
                });
                res?;
                if r > 0 {
                    s.add(&format!("{tag}.{}_2m", if write { "write" } else { "read" }), v);
                }
            }
            // 2 MiB requests from 4 threads at once (requests in flight, as writeback keeps them)
            for write in [true, false] {
                let per = chunks / 4;
                let v = timed(per * 4, || {
                    std::thread::scope(|sc| {
                        for t in 0..4 {
                            let b = buf.p as usize;
                            sc.spawn(move || {
                                for i in t * per..(t + 1) * per {
                                    let _ = pio(fd, b as *mut u8, HPAGE, i * HPAGE, write);
                                }
                            });
                        }
                    })
                });
                if r > 0 {
                    s.add(&format!("{tag}.{}_2m_qd4", if write { "write" } else { "read" }), v);
                }
            }
            let n = 256;
            for (kind, seq) in [("rand", false), ("seq", true)] {
                let offs: Vec<usize> = (0..n)
                    .map(|i| if seq { (i + 1) * PAGE } else { rng.below((size / PAGE) as u64) as usize * PAGE })
                    .collect();
                for write in [true, false] {
                    let mut res = Ok(());
                    let v = timed(n, || {
                        for &o in &offs {
                            if res.is_ok() {
                                res = pio(fd, buf.p, PAGE, o, write);
                            }
                        }
                    });
                    res?;
                    if r > 0 {
                        s.add(&format!("{tag}.{}_4k_{kind}", if write { "write" } else { "read" }), v);
                    }
                }
            }
            check_sig()?;
        }
        Ok(())
    })();
    unsafe { libc::close(fd) };
    r
}

/// The block queue's attributes the model's device takes (DeviceCosts): the tag depth, the
/// bio split size, the segments a request holds, writeback throttling's latency target (0: off)
/// and the write cache.
const QUEUE_ATTRS: [&str; 5] = ["nr_requests", "max_sectors_kb", "max_segments", "wbt_lat_usec", "write_cache"];

/// The host's disk as a swap file reaches it (bios straight to the file's sectors: O_DIRECT on
/// a file in /var/tmp) and as a `disk` swap device is set up live (a loop device with direct
/// I/O over a file).
pub fn calibrate_block(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, .. } = c;
    let size = if quick { 64 << 20 } else { 256 << 20 };
    let reps = reps.min(3);
    let pid = std::process::id();
    let path = format!("/var/tmp/thplab-calibrate-io-{pid}");
    g.j.swapfiles.push(path.clone());
    g.j.save().map_err(failed)?;
    crate::swap::create_swapfile(&path, size as u64).map_err(failed)?;
    block_io("file", &path, size, reps, s)?;
    values.insert("file.rotational".into(), json!(fs_queue_attr(&path, "rotational")));
    for a in QUEUE_ATTRS {
        values.insert(format!("file.{a}"), json!(fs_queue_attr(&path, a)));
    }
    if is_root() && std::path::Path::new("/dev/loop-control").exists() {
        let backing = format!("/var/tmp/thplab-calibrate-loop-{pid}");
        g.j.swapfiles.push(backing.clone());
        g.j.loops.push(backing.clone());
        g.j.save().map_err(failed)?;
        crate::swap::create_swapfile(&backing, size as u64).map_err(failed)?;
        let dev = crate::swap::loop_attach(&backing).map_err(failed)?;
        block_io("disk", &dev, size, reps, s)?;
        values.insert("disk.rotational".into(), json!(dev_queue_attr(&dev, "rotational")));
        for a in QUEUE_ATTRS {
            values.insert(format!("disk.{a}"), json!(dev_queue_attr(&dev, a)));
        }
    }
    g.undo()
}

// ---------------------------------------------------------------- a page's free and the per-CPU list

const PCP_HIGH_FRACTION: &str = "/proc/sys/vm/percpu_pagelist_high_fraction";

/// The free of a 4 KiB page with and without room on the per-CPU list: munmap of 4 MiB of
/// present pages, each piece faulted in just before it goes. With percpu_pagelist_high_fraction
/// at 100000 every list's high is its floor (4 batches, zone_highsize()), so nearly every
/// free spills a page to the buddy lists (free_pcppages_bulk(): munmap_4k_drain); with the
/// fraction as found the faults empty the list as fast as the frees fill it, and nothing
/// spills (munmap_4k_room). The calibration's other munmaps free in runs of 64-256 MiB, which
/// fill the list to its high part-way: munmap_4k took 212 ns a page in one calibration and
/// 252 in the next (out/host-h40, -h41), as the list stood.
pub fn calibrate_page_free(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let found = read_trim(PCP_HIGH_FRACTION).ok_or_else(|| failed(format!("cannot read {PCP_HIGH_FRACTION}")))?;
    let n = if c.quick { 16 } else { 64 };
    let npg = MUNMAP_PIECE / PAGE;
    for (tag, fraction) in [("munmap_4k_drain", "100000"), ("munmap_4k_room", found.as_str())] {
        set_knob(g, "vm.percpu_pagelist_high_fraction", PCP_HIGH_FRACTION, fraction)?;
        for r in 0..=n {
            let m = Map_::new(MUNMAP_PIECE, Some(false))?;
            m.touch(1);
            let v = timed(npg, || drop(m));
            if r > 0 {
                c.s.add(tag, v);
            }
        }
        check_sig()?;
    }
    g.undo()
}

// ---------------------------------------------------------------- swap on a file or a loop device

/// Swap-out and swap-in on a swap file (`file`) or a loop block device (`disk`): per 4 KiB
/// page, MADV_PAGEOUT (the caller does not wait for the asynchronous writeback), the drain of
/// that writeback, a fault on a page still in the swap cache, MADV_PAGEOUT of clean swap-cache
/// pages (freed without I/O), swap-in with readahead and of isolated pages, and the munmap of
/// swap entries with and without a cached page (cached pages also paged out one by one from
/// the end: a zap batch each); per THP, MADV_PAGEOUT of seed 000's best case and of random
/// data, and their munmap.
pub fn calibrate_swap_dev(kind: &str, c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, notes, .. } = c;
    let n = if quick { 4096 } else { 16384 };
    let nh = if quick { 16 } else { 64 };
    let reps = reps.min(if quick { 2 } else { 3 });
    let swap_size = (2 * n * PAGE + 2 * nh * HPAGE + (8 << 20)) as u64;
    let pid = std::process::id();
    let backing = format!("/var/tmp/thplab-calibrate-{kind}-{pid}");
    g.j.swapfiles.push(backing.clone());
    if kind == "disk" {
        g.j.loops.push(backing.clone());
    }
    g.j.save().map_err(failed)?;
    crate::swap::create_swapfile(&backing, swap_size).map_err(failed)?;
    let dev = if kind == "disk" { crate::swap::loop_attach(&backing).map_err(failed)? } else { backing.clone() };
    g.j.swapon.push(dev.clone());
    g.j.save().map_err(failed)?;
    run_swapon(&dev)?;
    let corpus = crate::child::text_corpus();
    let thp = thp_usable();
    let k = |x: &str| format!("{kind}.{x}");
    // the drain of a pageout's writes: a block device's own requests in flight (the swap
    // folios' writeback ends as they complete; wait_device_writes), a swap file's pages
    // under writeback (its writes go to the filesystem's device, shared with others)
    let drain = || {
        if kind == "disk" {
            crate::calibrate::wait_device_writes(&dev)
        } else {
            wait_writeback()
        }
    };
    let mut thp_counts: Vec<(String, i64)> = vec![];
    for r in 0..=reps {
        let keep = r > 0;
        let m = Map_::new(n * PAGE, Some(false))?;
        fill_class(&m, "random", &corpus);
        let o0 = vm("pswpout");
        let v = timed(n, || {
            madvise(&m, 0, m.len, libc::MADV_PAGEOUT);
        });
        let out = vm("pswpout") - o0;
        if out < (n as i64) * 9 / 10 {
            notes.push(format!("{kind}: only {out} of {n} pages were swapped out"));
        }
        let d = timed(n, drain);
        wait_writeback();
        let hit = timed(n, || read_all(&m));
        let clean = timed(n, || {
            madvise(&m, 0, m.len, libc::MADV_PAGEOUT);
        });
        back(n * PAGE, false); // the swap-ins' new pages
        let i0 = vm("pswpin");
        let seq = timed(n, || read_all(&m));
        let pin = vm("pswpin") - i0;
        madvise(&m, 0, m.len, libc::MADV_PAGEOUT);
        back(64 * PAGE, false);
        let mut single = vec![];
        for j in 0..64 {
            let p = m.page(j * (n / 64) + n / 128);
            single.push(timed(1, || unsafe {
                std::hint::black_box(std::ptr::read_volatile(p));
            }));
        }
        // a second region: munmap while the written pages are still in the swap cache
        let m2 = Map_::new(n * PAGE, Some(false))?;
        fill_class(&m2, "random", &corpus);
        madvise(&m2, 0, m2.len, libc::MADV_PAGEOUT);
        wait_writeback();
        // each timed in 4 MiB pieces (munmap_pieces): a single munmap of the region moved
        // remove_mapping_ns by up to 4x between calibrations on a shared host
        let cached = munmap_pieces(m2, MUNMAP_PIECE);
        // and beside it, under the same load, the munmap of as many present pages never
        // swapped out: remove_mapping_ns is the difference (less swap_free_ns), not that of
        // two samples taken a minute apart
        let m3 = Map_::new(n * PAGE, Some(false))?;
        fill_class(&m3, "random", &corpus);
        let present = munmap_pieces(m3, MUNMAP_PIECE);
        // then m2's munmap again, its pages paged out one by one from the region's end
        // down: descending slots, so the zap's swap_pte_batch() finds no two PTEs holding
        // consecutive slots and calls free_swap_and_cache_nr() once per PTE (as for the
        // pieces of a folio split for reclaim); against munmap_cached, a call's own cost
        let m4 = Map_::new(n * PAGE, Some(false))?;
        fill_class(&m4, "random", &corpus);
        for i in (0..n).rev() {
            madvise(&m4, i * PAGE, PAGE, libc::MADV_PAGEOUT);
        }
        wait_writeback();
        let cached_rev = munmap_pieces(m4, MUNMAP_PIECE);
        // the first region: swap entries whose pages were freed (but for the 64 read back)
        let entries = munmap_pieces(m, MUNMAP_PIECE);
        // one page per 2 MiB (seed 000's best case for 4 KiB pages): MADV_PAGEOUT calls
        // reclaim_pages() once per PMD, here with one folio each; against pageout_4k's 512
        // per PMD, the difference per page is a call's own cost and the walk of 511 none PTEs
        let ns = if quick { 512 } else { 2048 };
        back(ns * 2 * PAGE, false); // a page and a PTE table each
        let sp = Map_::new(ns * HPAGE, Some(false))?;
        for b in 0..ns {
            // SAFETY: the page lies inside the mapping
            unsafe {
                crate::child::fill(sp.page(b * 512), PAGE, &WriteData::Kind(DataKind::Random), 1, b as u64, &corpus)
            };
        }
        let sparse = timed(ns, || {
            madvise(&sp, 0, sp.len, libc::MADV_PAGEOUT);
        });
        wait_writeback();
        drop(sp);
        if keep {
            s.add(&k("pageout_4k"), v);
            s.add(&k("pageout_4k_sparse"), sparse);
            s.add(&k("writeback_drain_4k"), d);
            s.add(&k("swapcache_hit"), hit);
            s.add(&k("pageout_clean_4k"), clean);
            s.add(&k("swapin_seq"), seq);
            s.add(&k("swapin_seq_pswpin"), pin as f64 / n as f64);
            s.add_all(&k("swapin_single"), single);
            s.add_all(&k("munmap_cached"), cached);
            s.add_all(&k("munmap_cached_rev"), cached_rev);
            s.add_all(&k("munmap_entry"), entries);
            s.add_all(&k("munmap_present"), present);
        }
        if thp {
            for case in ["best", "random"] {
                let t = if case == "best" {
                    best_thps(nh)?
                } else {
                    let t = Map_::new(nh * HPAGE, Some(true))?;
                    fill_class(&t, "random", &corpus);
                    t
                };
                let (v, dl) = pageout_counting(&t, nh);
                // the rest of the writeback: with the pageout, the device's rate for swap writes
                let dr = timed(nh, drain);
                wait_writeback();
                let u = timed(nh, || drop(t));
                if keep {
                    s.add(&k(&format!("thp_pageout_{case}")), v);
                    s.add(&k(&format!("thp_drain_{case}")), dr);
                    s.add(&k(&format!("thp_munmap_{case}")), u);
                    for c in ["thp_swpout", "thp_swpout_fallback", "thp_split_page", "pswpout"] {
                        thp_counts.push((k(&format!("thp_{case}.{c}")), dl.get(c).copied().unwrap_or(0)));
                    }
                }
            }
        }
        check_sig()?;
    }
    for (name, c) in thp_counts {
        let e = values.entry(name).or_insert(json!(0));
        *e = json!(e.as_i64().unwrap_or(0).max(c) as f64 / nh as f64);
    }
    values.insert(k("thp_pages"), json!(nh));
    values.insert(
        k("rotational"),
        json!(if kind == "disk" { dev_queue_attr(&dev, "rotational") } else { fs_queue_attr(&backing, "rotational") }),
    );
    g.undo()
}

// ---------------------------------------------------------------- zram: THPs and the zap of entries

/// On a zram device already swapped on: MADV_PAGEOUT of THPs filled with `class` (per page),
/// and the munmap of swap entries of that class (per entry).
pub fn zram_thp_and_free(
    alg: &str,
    class: &str,
    quick: bool,
    keep: bool,
    s: &mut Samples,
    corpus: &[u8],
) -> Result<(), CalError> {
    let nh = if quick { 4 } else { 8 };
    if thp_usable() {
        let t = Map_::new(nh * HPAGE, Some(true))?;
        fill_class(&t, class, corpus);
        back(nh * HPAGE, false); // zsmalloc's pages
        let o0 = vm("thp_swpout");
        let v = timed(nh * 512, || {
            madvise(&t, 0, t.len, libc::MADV_PAGEOUT);
        });
        let whole = vm("thp_swpout") - o0;
        let u = timed(nh * 512, || drop(t));
        if keep && whole >= nh as i64 / 2 {
            s.add(&format!("zram.{alg}.{class}.thp_out"), v);
            s.add(&format!("zram.{alg}.{class}.thp_free"), u);
        }
        if class == "same" {
            // all-zero THPs (a zero byte written: the fault clears them), right after the
            // same-filled ones: swap_writeout's is_folio_zero_filled takes them for the
            // zeromap, no zram write (zero_filled_4k_ns)
            let t = Map_::new(nh * HPAGE, Some(true))?;
            for i in 0..nh {
                unsafe { std::ptr::write_volatile(t.page(i * 512), 0) };
            }
            back(nh * HPAGE, false);
            let z0 = vm("swpout_zero");
            let v = timed(nh * 512, || {
                madvise(&t, 0, t.len, libc::MADV_PAGEOUT);
            });
            let zero = vm("swpout_zero") - z0;
            drop(t);
            if keep && zero >= (nh * 512) as i64 * 9 / 10 {
                s.add(&format!("zram.{alg}.zero.thp_out"), v);
            }
        }
    }
    let n = if quick { 1024 } else { 4096 };
    let m = Map_::new(n * PAGE, Some(false))?;
    fill_class(&m, class, corpus);
    madvise(&m, 0, m.len, libc::MADV_PAGEOUT);
    let u = timed(n, || drop(m));
    if keep {
        s.add(&format!("zram.{alg}.{class}.free"), u);
    }
    Ok(())
}

// ---------------------------------------------------------------- splits

/// `nh` THPs (MADV_HUGEPAGE) whose first byte alone is non-zero: seed 000's best case.
fn best_thps(nh: usize) -> Result<Map_, CalError> {
    let t = Map_::new(nh * HPAGE, Some(true))?;
    for i in 0..nh {
        unsafe { *t.page(i * 512) = 0xff };
    }
    Ok(t)
}

/// MADV_PAGEOUT of the `nh` THPs of `t`: its time per THP and the vmstat counters' rise.
fn pageout_counting(t: &Map_, nh: usize) -> (f64, std::collections::BTreeMap<String, i64>) {
    let before = vmstat();
    let v = timed(nh, || {
        madvise(t, 0, t.len, libc::MADV_PAGEOUT);
    });
    (v, delta(&before, &vmstat()))
}

/// `nh` THPs (MADV_HUGEPAGE) whose first 4 subpages have a non-zero byte: 508 zero subpages each.
fn sparse_thps(nh: usize) -> Result<Map_, CalError> {
    let t = Map_::new(nh * HPAGE, Some(true))?;
    for i in 0..nh {
        for j in 0..4 {
            unsafe { *t.page(i * 512 + j).add(9) = 0xff };
        }
    }
    Ok(t)
}

/// drop_caches=2 with the THPs of `t` for the shrinkers to split: its time per THP and how
/// much the vmstat `counter` rose; then `t` is unmapped.
fn drop_caches_counting(t: Map_, nh: usize, counter: &str) -> (f64, i64) {
    let c0 = vm(counter);
    let w = timed(nh, drop_caches);
    let n = vm(counter) - c0;
    drop(t);
    (w, n)
}

/// drop_caches=2 alone (every shrinker of the host, nothing of ours to do); a PMD split by the
/// munmap of one page of each THP; the deferred split of those partially mapped THPs (every
/// subpage non-zero, so each is remapped), and of THPs with 4 non-zero subpages (the 507
/// zero ones remapped to the zero page and freed); the underused shrinker at max_ptes_none 0
/// and 256 on THPs with 4 non-zero subpages (per THP; the difference is 256 more subpages read),
/// and at 511, where it splits none (per THP: the walk of the deferred split queue); with no
/// swap device on, MADV_PAGEOUT of THPs with one non-zero byte (each split, its pieces
/// activated, per THP) and of written 4 KiB pages (each activated, per page).
pub fn calibrate_split(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, notes, .. } = c;
    if !thp_usable() {
        notes.push("transparent_hugepage/enabled is `never`: split costs were not measured".into());
        return Ok(());
    }
    let nh = if quick { 32 } else { 128 };
    let reps = reps.min(if quick { 2 } else { 5 });
    let mpn = format!("{THP}/khugepaged/max_ptes_none");
    let underused = format!("{THP}/shrink_underused");
    let have_underused = std::path::Path::new(&underused).exists();
    set_knob(g, "transparent_hugepage/khugepaged/max_ptes_none", &mpn, "511")?;
    // /proc/swaps has its header line alone
    let noswap = read_file("/proc/swaps").is_ok_and(|t| t.lines().count() == 1);
    let mut counts: Vec<(String, i64)> = vec![];
    let mut activated_4k = 0.0f64;
    for r in 0..=reps {
        let keep = r > 0;
        let v = timed(1, drop_caches);
        if keep {
            s.add("drop_slab", v);
        }
        let t = Map_::new(nh * HPAGE, Some(true))?;
        for i in 0..nh * 512 {
            unsafe { *t.page(i) = 0xff };
        }
        let sp0 = vm("thp_split_pmd");
        let v = timed(nh, || {
            for i in 0..nh {
                unsafe { libc::munmap(t.page(i * 512 + 511) as *mut _, PAGE) };
            }
        });
        let pmd = vm("thp_split_pmd") - sp0;
        let (w, split) = drop_caches_counting(t, nh, "thp_split_page");
        if keep {
            s.add("split_pmd_munmap", v);
            s.add("split_partial", w);
            counts.push(("split_partial.thp_split_pmd".into(), pmd));
            counts.push(("split_partial.thp_split_page".into(), split));
        }
        // the same with 4 non-zero subpages per THP: at the split its 507 zero subpages are
        // remapped to the zero page and freed (split_partial_zero)
        let t = sparse_thps(nh)?;
        for i in 0..nh {
            unsafe { libc::munmap(t.page(i * 512 + 256) as *mut _, PAGE) };
        }
        let (w, split) = drop_caches_counting(t, nh, "thp_split_page");
        if keep {
            s.add("split_partial_zero", w);
            counts.push(("split_partial_zero.thp_split_page".into(), split));
        }
        if have_underused {
            set_knob(g, "transparent_hugepage/shrink_underused", &underused, "1")?;
            // 511: nothing is underused, so the drop is the queue's walk alone
            // (deferred_split_scan_ns)
            for m in [0, 256, 511] {
                set_knob(g, "transparent_hugepage/khugepaged/max_ptes_none", &mpn, &m.to_string())?;
                let (v, uu) = drop_caches_counting(sparse_thps(nh)?, nh, "thp_underused_split_page");
                if keep {
                    s.add(&format!("underused_{m}"), v);
                    counts.push((format!("underused_{m}.thp_underused_split_page"), uu));
                }
            }
            set_knob(g, "transparent_hugepage/khugepaged/max_ptes_none", &mpn, "511")?;
        }
        if noswap {
            // MADV_PAGEOUT with no swap device of THPs whose first byte alone is non-zero:
            // folio_alloc_swap() fails, so each THP is split (its 511 zero subpages remapped
            // to the zero page) and every piece's pass of shrink_folio_list ends at
            // activate_locked_split; the unmapped ones are freed as they are put back
            // (noswap.thp_pageout_best: reclaim_activate_ns)
            let t = best_thps(nh)?;
            let (v, dl) = pageout_counting(&t, nh);
            drop(t);
            if keep {
                s.add("noswap.thp_pageout_best", v);
                for c in ["thp_swpout_fallback", "thp_split_page", "pgactivate", "pswpout"] {
                    counts.push((format!("noswap.thp_best.{c}"), dl.get(c).copied().unwrap_or(0)));
                }
            }
            // and of written 4 KiB pages: each folio's pass of shrink_folio_list ends at
            // folio_alloc_swap()'s failure (activate_locked), short of the swap-out a swap
            // device's pass goes on to (noswap.pageout_4k: reclaim_swapout_ns)
            let n4 = if quick { 1024 } else { 4096 };
            let m4 = Map_::new(n4 * PAGE, Some(false))?;
            m4.touch(1);
            let before = vmstat();
            let v = timed(n4, || {
                madvise(&m4, 0, m4.len, libc::MADV_PAGEOUT);
            });
            let act = delta(&before, &vmstat()).get("pgactivate").copied().unwrap_or(0);
            drop(m4);
            if keep {
                s.add("noswap.pageout_4k", v);
                activated_4k = activated_4k.max(act as f64 / n4 as f64);
            }
        }
        check_sig()?;
    }
    if !noswap {
        notes.push("a swap device is active: MADV_PAGEOUT with no swap (reclaim_activate_ns, reclaim_swapout_ns) was not measured".into());
    }
    for (name, c) in counts {
        let e = values.entry(name).or_insert(json!(0.0));
        *e = json!(e.as_f64().unwrap_or(0.0).max(c as f64 / nh as f64));
    }
    values.insert("split.thp_pages".into(), json!(nh));
    if noswap {
        values.insert("noswap.pageout_4k.pgactivate".into(), json!(activated_4k));
    }
    if !have_underused {
        notes.push(
            "no transparent_hugepage/shrink_underused (before v6.12): the underused shrinker was not measured".into(),
        );
    }
    g.undo()
}

// ---------------------------------------------------------------- mTHP faults

/// Write faults that allocate 64 KiB folios (hugepages-64kB/enabled = madvise, every other
/// size `never`, the mapping MADV_HUGEPAGE): one write per 64 KiB of a fresh mapping on memory
/// backed just before, per fault (`fault_64k_total`). The kernel zeroes the folio a subpage at
/// a time (folio_zero_user -> process_huge_page -> clear_user_highpage), which on the reference
/// host costs ~0.6 us per 4 KiB at every folio size from 16 KiB to 2 MiB, three times
/// calibrate's clear_4k loop over warm memory: the fit of `clear_folio_4k_ns` comes from here.
/// The same faults each followed by a store to the folio's other 15 pages (`fault_64k_touch`)
/// give `touch_after_fault_ns`. The deferred split of such folios is `calibrate_split_64k`.
pub fn calibrate_mthp_fault(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, notes, .. } = c;
    if !only_64k_madvise(g)? {
        notes.push("no hugepages-64kB (mTHP, before v6.8): mTHP faults were not measured".into());
        return Ok(());
    }
    let fsz = crate::calibrate::fault_region_bytes(quick);
    let nf = fsz / (16 * PAGE);
    let stat = format!("{THP}/hugepages-64kB/stats/anon_fault_alloc");
    let count = || read_trim(&stat).and_then(|t| t.parse::<i64>().ok()).unwrap_or(0);
    let mut seen = 0;
    // A fault per folio, then (`touch`) a store to each of its other 15 pages before the
    // next fault, as a write op over the folios does; per folio.
    let faults = |touch: bool| -> Result<(f64, i64), CalError> {
        back(fsz, true);
        let m = Map_::new(fsz, Some(true))?;
        let c0 = count();
        let v = timed(nf, || {
            for i in 0..nf {
                unsafe { std::ptr::write_volatile(m.page(i * 16), 1) };
                if touch {
                    (1..16).for_each(|j| unsafe { std::ptr::write_volatile(m.page(i * 16 + j), 1) });
                }
            }
        });
        Ok((v, count() - c0))
    };
    for r in 0..=reps {
        // with only hugepages-64kB enabled, MADV_HUGEPAGE backs 64 KiB folios. The faults
        // alone and the faults with their folios' other pages stored to right after
        // (fault_64k_touch, paired with fault_64k_total by repetition: the first access to
        // each of those pages costs ~90 ns on this host, ~9 ns later) take turns going first.
        let (v, got, w) = if r % 2 == 0 {
            let (v, got) = faults(false)?;
            (v, got, faults(true)?.0)
        } else {
            let w = faults(true)?.0;
            let (v, got) = faults(false)?;
            (v, got, w)
        };
        // munmap of present 64 KiB folios, per folio (munmap_64k): each is zapped in one
        // batch and freed whole; its order (4) is not one the per-CPU lists take, so
        // free_unref_folios() hands it to free_one_page() under the zone lock
        let m = Map_::new(fsz, Some(true))?;
        (0..nf).for_each(|i| unsafe { std::ptr::write_volatile(m.page(i * 16), 1) });
        let u = timed(nf, || drop(m));
        if r > 0 {
            s.add("fault_64k_total", v);
            s.add("fault_64k_touch", w);
            s.add("munmap_64k", u);
            seen = seen.max(got);
        }
        check_sig()?;
    }
    values.insert("fault_64k.anon_fault_alloc".into(), json!(seen as f64 / nf as f64));
    values.insert("munmap_64k.folios".into(), json!(nf));
    if seen < nf as i64 * 9 / 10 {
        notes.push(format!("only {seen} of {nf} 64 KiB faults allocated a 64 KiB folio: fault_64k is mixed"));
    }
    g.undo()
}

/// Only hugepages-64kB faults large folios (`madvise`), every other size `never`; false
/// (nothing set) where the kernel has no mTHP sizes.
fn only_64k_madvise(g: &mut JGuard) -> Result<bool, CalError> {
    let path = |kb: &str| format!("{THP}/hugepages-{kb}kB/enabled");
    if !std::path::Path::new(&path("64")).exists() {
        return Ok(false);
    }
    for kb in ["8", "16", "32", "64", "128", "256", "512", "1024", "2048"] {
        let p = path(kb);
        if std::path::Path::new(&p).exists() {
            let v = if kb == "64" { "madvise" } else { "never" };
            set_knob(g, &format!("transparent_hugepage/hugepages-{kb}kB/enabled"), &p, v)?;
        }
    }
    Ok(true)
}

/// The munmap of one 4 KiB page inside each of a mapping's 64 KiB folios, per call
/// (`munmap_partial_64k`), then the deferred split of those partially mapped folios by
/// drop_caches=2, per folio (`split_partial_64k`): with split_partial's PMD THPs, the
/// fixed and the per-subpage part of a split (the fit of `split_folio_fixed_ns`). Every
/// subpage is written first, as split_partial's are: a zero subpage would be remapped to the
/// zero page and freed by the split (remap_page with RMP_USE_SHARED_ZEROPAGE).
///
/// `calibrate` takes these samples in three windows minutes apart: on this host the same
/// split runs at 8.7-9.5 us a folio for a minute, then 10-14 us for the next (a C loop, 7
/// repetitions back to back, 2026-12-05), with neither TLB shootdowns nor a slower 4 KiB
/// fault alongside; one window's samples made split_folio_fixed_ns 2,468 ns in one
/// calibration against 331-915 in seven others.
pub fn calibrate_split_64k(c: &mut Cal, g: &mut JGuard) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, .. } = c;
    if !thp_usable() || !only_64k_madvise(g)? {
        return g.undo();
    }
    let fsz = crate::calibrate::fault_region_bytes(quick);
    let nf = fsz / (16 * PAGE);
    // a third of the repetitions in each window, and one discarded to warm up
    for r in 0..=reps.div_ceil(3).max(2) {
        back(fsz, true);
        let m = Map_::new(fsz, Some(true))?;
        // each folio faulted in by the write of its first page
        m.touch(0xff);
        // one page from the middle of each folio, per call (munmap_partial_64k): a hole's
        // VMA work (two splits, a removal), the flush and the folio's first partial unmap,
        // which queues it for the deferred split (calibrate's check row against the profile)
        let u = timed(nf, || {
            for i in 0..nf {
                unsafe { libc::munmap(m.page(i * 16 + 8) as *mut _, PAGE) };
            }
        });
        let w = timed(nf, drop_caches);
        drop(m);
        if r > 0 {
            s.add("munmap_partial_64k", u);
            s.add("split_partial_64k", w);
        }
        check_sig()?;
    }
    values.insert("split_64k.folios".into(), json!(nf));
    g.undo()
}

// ---------------------------------------------------------------- collapse

/// MADV_COLLAPSE of 2 MiB ranges of present 4 KiB pages (the collapse path khugepaged uses).
pub fn calibrate_collapse(c: &mut Cal) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, values, notes, .. } = c;
    if !thp_usable() {
        notes.push("transparent_hugepage/enabled is `never`: the collapse cost was not measured".into());
        return Ok(());
    }
    let nh = if quick { 16 } else { 64 };
    let corpus = crate::child::text_corpus();
    let mut done = 0;
    for r in 0..=reps.min(if quick { 2 } else { 5 }) {
        let m = Map_::new(nh * HPAGE, Some(false))?;
        fill_class(&m, "text", &corpus);
        madvise(&m, 0, m.len, libc::MADV_HUGEPAGE);
        back(nh * HPAGE, true); // the new THPs the collapses copy into
        let c0 = vm("thp_collapse_alloc");
        // one MADV_COLLAPSE per 2 MiB range, each timed (timed_each): a collapse whose new THP
        // is a block the host had discarded (free page reporting) takes ~3.5 ms more, and one
        // such among the 64 moved a whole call's time per range by 50 us; the fit leaves them
        // out (calibrate.py _backed_mean), as the model charges that refault apart
        let v = timed_each(nh, |i| {
            madvise(&m, i * HPAGE, HPAGE, MADV_COLLAPSE);
        });
        let c = vm("thp_collapse_alloc") - c0;
        if r > 0 {
            if c >= nh as i64 * 9 / 10 {
                s.add_all("collapse_2m", v);
            }
            done = done.max(c);
        }
        drop(m);
        check_sig()?;
    }
    values.insert("collapse_2m.thp_collapse_alloc".into(), json!(done as f64 / nh as f64));
    // ranges per MADV_COLLAPSE call (one: each range its own call)
    values.insert("collapse_2m.ranges".into(), json!(1));
    if done == 0 {
        notes.push("MADV_COLLAPSE collapsed nothing (kernel before v6.1?): the collapse cost was not measured".into());
    }
    Ok(())
}

// ---------------------------------------------------------------- compaction

/// /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h).
const KPF_LRU: u64 = 1 << 5;
const KPF_BUDDY: u64 = 1 << 10;
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
const KPF_HUGE: u64 = 1 << 17;
const PAGEBLOCK_NR: u64 = 512;
const MAX_PAGE_ORDER: u32 = 10;

/// The order of the free buddy block starting at each pfn (-1 where none starts). kpageflags
/// marks every page of a free block KPF_BUDDY (PageBuddy() is the head's alone), so a run of
/// such pages is cut into blocks as the buddy allocator merges them: from the run's start,
/// the largest naturally aligned block that fits, at most MAX_PAGE_ORDER.
fn buddy_heads(flags: &[u64]) -> Vec<i8> {
    let mut ord = vec![-1i8; flags.len()];
    let mut p = 0usize;
    while p < flags.len() {
        if flags[p] & KPF_BUDDY == 0 {
            p += 1;
            continue;
        }
        let mut e = p;
        while e < flags.len() && flags[e] & KPF_BUDDY != 0 {
            e += 1;
        }
        let mut q = p;
        while q < e {
            let mut k = MAX_PAGE_ORDER;
            while k > 0 && (q & ((1 << k) - 1) != 0 || q + (1 << k) > e) {
                k -= 1;
            }
            ord[q] = k as i8;
            q += 1 << k;
        }
        p = e;
    }
    ord
}

/// The migrate scanner's loop iterations over the ranges it walked (from
/// mm_compaction_isolate_migratepages: [start, end) of each isolate_migratepages_block()
/// call), and the pfns it counted (compact_migrate_scanned), on the page flags read just
/// before. isolate_migratepages_block() (mm/compaction.c) takes one iteration per pfn it
/// looks at and steps over in that one iteration a free buddy (by its order), a hugetlb
/// folio, a compound page of at least pageblock order (skip_isolation_on_order()) and an
/// LRU large folio (isolated whole), counting their pages; any other page (a tail, a slab
/// page, a page of a non-LRU compound page) is one iteration and one pfn. The model
/// charges `compact_scan_migrate_ns` per iteration (compaction.rs).
pub(crate) fn migrate_scan_steps(flags: &[u64], ranges: &[(u64, u64)]) -> (u64, u64) {
    let heads = buddy_heads(flags);
    let n = flags.len() as u64;
    let (mut steps, mut counted) = (0u64, 0u64);
    for &(s, e) in ranges {
        let mut p = s;
        while p < e.min(n) {
            steps += 1;
            let f = flags[p as usize];
            let skip = if heads[p as usize] >= 0 {
                1u64 << heads[p as usize]
            } else if f & KPF_COMPOUND_HEAD != 0 {
                let mut q = p + 1;
                while q < n && flags[q as usize] & KPF_COMPOUND_TAIL != 0 && flags[q as usize] & KPF_COMPOUND_HEAD == 0
                {
                    q += 1;
                }
                let nr = q - p;
                if f & KPF_HUGE != 0 || nr >= PAGEBLOCK_NR || f & KPF_LRU != 0 {
                    nr
                } else {
                    1
                }
            } else {
                1
            };
            // the kernel counts the pfns stepped over even past the range's end, which
            // it then clamps
            counted += skip;
            p += skip;
        }
    }
    (steps, counted)
}

/// The iterations of a timed scan run: `steps` and `counted` emulated over the traced walk,
/// whose pfns the trace counted as `traced`, the timed run's vmstat as `timed`. None unless
/// the page flags describe the traced walk and the timed run walked the same pfns, within 1 %
/// (other tasks allocate and free meanwhile: on a loaded host the counts were equal in 1 of
/// 6 runs); the iterations scaled to the timed run's count.
pub(crate) fn timed_scan_steps(steps: u64, counted: u64, traced: u64, timed: u64) -> Option<u64> {
    let near = |a: u64| a.abs_diff(traced) * 100 <= traced;
    if traced == 0 || counted == 0 || !near(counted) || !near(timed) {
        return None;
    }
    Some((steps as f64 * timed as f64 / counted as f64).round() as u64)
}

/// Every page's flags, /proc/kpageflags up to the last pfn.
fn kpageflags() -> Result<Vec<u64>, CalError> {
    use std::io::Read;
    let mut f = std::fs::File::open("/proc/kpageflags").map_err(|e| failed(format!("/proc/kpageflags: {e}")))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| failed(format!("/proc/kpageflags: {e}")))?;
    Ok(bytes.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect())
}

/// One mm_compaction_isolate_migratepages event of a trace: (start_pfn, end_pfn, nr_scanned).
pub(crate) fn parse_isolate_migratepages(line: &str) -> Option<(u64, u64, u64)> {
    let r = &line[line.find("range=(")? + 7..];
    let (a, r) = r.split_once(" ~ ")?;
    let (b, r) = r.split_once(')')?;
    let ns = r.split_once("nr_scanned=")?.1.split_whitespace().next()?;
    let hex = |t: &str| u64::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok();
    Some((hex(a)?, hex(b)?, ns.parse().ok()?))
}

/// A tracefs instance of its own with mm_compaction_isolate_migratepages on, for this
/// process's events only; tracefs mounted on a directory of its own if it is not mounted.
/// Removed (and unmounted) on drop.
struct IsolateTrace {
    dir: String,
    mounted: Option<String>,
}

impl IsolateTrace {
    fn new() -> Option<IsolateTrace> {
        let mounts = read_file("/proc/mounts").unwrap_or_default();
        let mut mounted = None;
        let root = match mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == "tracefs")
        {
            Some(f) => f[1].to_string(),
            None => {
                let d = format!("/tmp/thplab-tracefs.{}", std::process::id());
                std::fs::create_dir_all(&d).ok()?;
                let c = |s: &str| std::ffi::CString::new(s).unwrap();
                let r = unsafe {
                    libc::mount(c("nodev").as_ptr(), c(&d).as_ptr(), c("tracefs").as_ptr(), 0, std::ptr::null())
                };
                if r != 0 {
                    let _ = std::fs::remove_dir(&d);
                    return None;
                }
                mounted = Some(d.clone());
                d
            }
        };
        let dir = format!("{root}/instances/thplab-calibrate.{}", std::process::id());
        let t = IsolateTrace { dir: dir.clone(), mounted };
        std::fs::create_dir(&dir).ok()?;
        let ev = format!("{dir}/events/compaction/mm_compaction_isolate_migratepages");
        write_file(&format!("{dir}/tracing_on"), "0").ok()?;
        write_file(&format!("{dir}/buffer_size_kb"), "16384").ok()?;
        write_file(&format!("{ev}/filter"), &format!("common_pid == {}", unsafe { libc::gettid() })).ok()?;
        write_file(&format!("{ev}/enable"), "1").ok()?;
        Some(t)
    }

    /// The ranges the migrate scanner walked during `f`, and the pfns the kernel counted.
    fn record(&self, f: impl FnOnce()) -> Option<(Vec<(u64, u64)>, u64)> {
        // opened with O_TRUNC: the instance's buffer emptied
        std::fs::OpenOptions::new().write(true).truncate(true).open(format!("{}/trace", self.dir)).ok()?;
        write_file(&format!("{}/tracing_on", self.dir), "1").ok()?;
        f();
        write_file(&format!("{}/tracing_on", self.dir), "0").ok()?;
        let text = read_file(&format!("{}/trace", self.dir)).ok()?;
        if text.contains("LOST") {
            return None;
        }
        let ev: Vec<_> = text.lines().filter_map(parse_isolate_migratepages).collect();
        Some((ev.iter().map(|e| (e.0, e.1)).collect(), ev.iter().map(|e| e.2).sum()))
    }
}

impl Drop for IsolateTrace {
    fn drop(&mut self) {
        let ev = format!("{}/events/compaction/mm_compaction_isolate_migratepages", self.dir);
        let _ = write_file(&format!("{ev}/enable"), "0");
        let _ = std::fs::remove_dir(&self.dir);
        if let Some(d) = &self.mounted {
            let c = std::ffi::CString::new(d.as_str()).unwrap();
            unsafe { libc::umount(c.as_ptr()) };
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// vm.compact_memory=1 after fragmenting memory with 4 KiB pages at two densities (keep 1/4
/// and 1/16 of every 2 MiB): time and the scanners' counters (`compact.<tag>.*`). Compacts
/// every zone of the host (like `thplab validate`'s compaction-manual), so what it scans and
/// migrates besides the region depends on the host's other memory.
///
/// Then the same memory compacted again, with next to nothing left to migrate
/// (`compact_scan.<tag>.*`): the migrate scanner's walk, whose iterations (what the model
/// charges compact_scan_migrate_ns for; compact_migrate_scanned counts the pfns of a free
/// block or a THP stepped over in one iteration) are counted from the page flags read just
/// before and the ranges a traced run of it walked (mm_compaction_isolate_migratepages);
/// the timed run is not traced (an event costs ~1 us here) and follows the traced one.
pub fn calibrate_compaction(c: &mut Cal) -> Result<(), CalError> {
    let (quick, reps) = (c.quick, c.reps);
    let Cal { s, notes, .. } = c;
    // the region's pages lie all over the host's memory (a fault takes what the per-CPU
    // lists hold); those above where the scanners meet are not migrated: 0.3-150 k pages of
    // a 1 GiB region's 65 k-16 k kept, 6-190 k of 3 GiB's 196 k. 3 GiB where the host has it
    // to spare
    let avail = meminfo().get("MemAvailable").copied().unwrap_or(0) << 10;
    let size = if quick {
        256 << 20
    } else if avail > 8 << 30 {
        3 << 30
    } else {
        1 << 30
    };
    let compact = || {
        let _ = write_file("/proc/sys/vm/compact_memory", "1");
    };
    let tr = IsolateTrace::new();
    if tr.is_none() {
        notes.push("tracefs not available: the migrate scanner's step cost was not measured".into());
    }
    let mut rejected = 0;
    for (tag, keep) in [("quarter", 512 << 10), ("sixteenth", 128 << 10)] {
        for r in 0..=reps.min(if quick { 1 } else { 3 }) {
            let m = Map_::new(size, Some(false))?;
            m.touch(1);
            for i in 0..size / HPAGE {
                unsafe { libc::munmap(m.p.add(i * HPAGE + keep) as *mut _, HPAGE - keep) };
            }
            // the page cache's large folios out first: compaction_alloc() gives a folio of
            // order k only a free block of order >= k the free scanner isolated, and when a
            // batch's large folio finds none, migrate_pages() fails with -ENOMEM and the
            // zone's compaction ends contended (compact_zone()): with the host's cache in
            // place a run migrated 0.3-16 k pages of the region, after drop_caches=1 77-90 k
            // (a mapped or dirty large folio stays and can still end it: docs/compaction.md)
            let _ = write_file("/proc/sys/vm/drop_caches", "1");
            let before = vmstat();
            let v = timed(1, compact);
            let d = delta(&before, &vmstat());
            // the walk of the compacted memory: traced once for its ranges, then timed (not
            // in the warm-up repetition, whose samples are not kept)
            let scan = tr.as_ref().filter(|_| r > 0).and_then(|t| {
                let flags = kpageflags().ok()?;
                let (ranges, traced) = t.record(compact)?;
                let (steps, counted) = migrate_scan_steps(&flags, &ranges);
                let before = vmstat();
                let v = timed(1, compact);
                let d = delta(&before, &vmstat());
                let ms = d.get("compact_migrate_scanned").copied().unwrap_or(0) as u64;
                let Some(steps) = timed_scan_steps(steps, counted, traced, ms) else {
                    rejected += 1;
                    return None;
                };
                Some((v, steps, ranges.len(), d))
            });
            drop(m);
            if r > 0 {
                s.add(&format!("compact.{tag}.ns"), v);
                for c in ["compact_migrate_scanned", "compact_free_scanned", "compact_isolated", "pgmigrate_success"] {
                    s.add(&format!("compact.{tag}.{c}"), d.get(c).copied().unwrap_or(0) as f64);
                }
                // compact_scan.<tag>.* as lists of their own, shorter where a scan run was
                // left out: compact_scan.<tag>.pair is the index of its fragmented run
                if let Some((v, steps, calls, d)) = scan {
                    let i = s.get(&format!("compact.{tag}.ns")).map_or(0, |x| x.len() - 1);
                    s.add(&format!("compact_scan.{tag}.pair"), i as f64);
                    s.add(&format!("compact_scan.{tag}.ns"), v);
                    s.add(&format!("compact_scan.{tag}.steps"), steps as f64);
                    s.add(&format!("compact_scan.{tag}.blocks"), calls as f64);
                    for c in ["compact_migrate_scanned", "compact_free_scanned", "pgmigrate_success"] {
                        s.add(&format!("compact_scan.{tag}.{c}"), d.get(c).copied().unwrap_or(0) as f64);
                    }
                }
            }
            check_sig()?;
        }
    }
    if rejected > 0 {
        notes.push(format!(
            "compaction: {rejected} scan runs left out (the page flags or the timed run did not match the traced walk within 1 %: other tasks' memory moved meanwhile)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrate_scan_steps_follow_isolate_migratepages_block() {
        // pageblock 0: an order-3 free block at 0, an order-0 one at 8 (one run of free
        // pages, cut as the buddy allocator merges them), an LRU page at 9, a slab compound
        // of 4 pages at 10 (not LRU: walked a pfn at a time), an LRU large folio of 4 at 14
        // (isolated whole), then 498 unflagged pages; pageblock 1 (512) a THP head (order 9,
        // stepped over); pageblock 2 (1024) the second half of an order-10 free block at
        // 1024: from a range starting at 1536 each page is a step (PageBuddy is the head's)
        let mut f = vec![0u64; 2048];
        for p in f.iter_mut().take(9) {
            *p = KPF_BUDDY;
        }
        f[9] = KPF_LRU;
        f[10] = KPF_COMPOUND_HEAD;
        for p in &mut f[11..14] {
            *p = KPF_COMPOUND_TAIL;
        }
        f[14] = KPF_COMPOUND_HEAD | KPF_LRU;
        for p in &mut f[15..18] {
            *p = KPF_COMPOUND_TAIL | KPF_LRU;
        }
        f[512] = KPF_COMPOUND_HEAD | KPF_LRU;
        for p in &mut f[513..1024] {
            *p = KPF_COMPOUND_TAIL | KPF_LRU;
        }
        for p in &mut f[1024..2048] {
            *p = KPF_BUDDY;
        }
        let heads = buddy_heads(&f);
        assert_eq!((heads[0], heads[8], heads[1024], heads[1536]), (3, 0, 10, -1));
        // block 0: 1 + 1 + 1 + 4 + 1 + 494 steps, 512 pfns
        assert_eq!(migrate_scan_steps(&f, &[(0, 512)]), (502, 512));
        // the THP block: one step; the order-10 block from its head: one step counting 1024
        assert_eq!(migrate_scan_steps(&f, &[(512, 1024)]), (1, 512));
        assert_eq!(migrate_scan_steps(&f, &[(1024, 1536)]), (1, 1024));
        // its second pageblock, walked on its own: a step a page
        assert_eq!(migrate_scan_steps(&f, &[(1536, 2048)]), (512, 512));
    }

    #[test]
    fn a_scan_run_is_kept_when_its_counts_agree_within_one_percent() {
        assert_eq!(timed_scan_steps(1000, 3000, 3000, 3000), Some(1000));
        // the timed run walked 1 % further: as many iterations more
        assert_eq!(timed_scan_steps(1000, 3000, 3000, 3030), Some(1010));
        assert_eq!(timed_scan_steps(1000, 3000, 3000, 3031), None);
        // the page flags no longer describe the traced walk
        assert_eq!(timed_scan_steps(1000, 2900, 3000, 3000), None);
        assert_eq!(timed_scan_steps(0, 0, 0, 0), None);
    }

    #[test]
    fn parses_the_isolate_migratepages_event() {
        let l = " bash-1234 [001] ..... 12.345: mm_compaction_isolate_migratepages: range=(0x1000 ~ 0x1200) nr_scanned=512 nr_taken=0";
        assert_eq!(parse_isolate_migratepages(l), Some((0x1000, 0x1200, 512)));
        assert_eq!(parse_isolate_migratepages("# tracer: nop"), None);
    }
}
