//! Swap devices of the machine description, set up for a run and torn down after it:
//! zram through /sys/block/zramN (comp_algorithm, disksize, mkswap, swapon), swap files, and
//! `disk`: a loop block device (direct I/O) over a file on the host's disk, so that swap sits on
//! a real block device (SWP_BLKDEV) that reports itself rotational when the host's disk does
//! (loop_update_rotational() copies the backing filesystem's device flag).

use crate::safety::Journal;
use crate::util::*;
use serde_json::{json, Value};
use thplab_workload::machine::{SwapKind, SwapSpec};

#[derive(Clone, Debug)]
pub enum SwapPlan {
    Zram {
        dev: String,
        size: u64,
        alg: Option<String>,
        alg_before: String,
        priority: Option<i32>,
    },
    File {
        path: String,
        size: u64,
        priority: Option<i32>,
    },
    /// A loop device over `backing` (created, attached with direct I/O, detached afterwards).
    Disk {
        backing: String,
        size: u64,
        priority: Option<i32>,
    },
}

impl SwapPlan {
    pub fn describe(&self) -> Value {
        match self {
            SwapPlan::Zram { dev, size, alg, priority, .. } => {
                let a = read_trim(&format!("/sys/block/{dev}/comp_algorithm"))
                    .and_then(|t| thplab_workload::knobs::parse_sysfs_choice(&t));
                json!({"type": "zram", "path": format!("/dev/{dev}"), "size": size, "comp_algorithm": alg.clone().or(a), "priority": priority})
            }
            SwapPlan::File { path, size, priority } => {
                json!({"type": "file", "path": path, "size": size, "priority": priority})
            }
            SwapPlan::Disk { backing, size, priority } => {
                json!({"type": "disk", "path": backing, "size": size, "priority": priority})
            }
        }
    }
}

/// The loop device attached to `backing` (losetup -j), if any.
pub fn loop_of(backing: &str) -> Option<String> {
    let o = std::process::Command::new("losetup").arg("-j").arg(backing).output().ok()?;
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    t.lines().next().and_then(|l| l.split(':').next()).map(|d| d.trim().to_string()).filter(|d| !d.is_empty())
}

/// Attach a loop device to `backing` with direct I/O (no second copy in the page cache);
/// returns its path (/dev/loopN).
pub fn loop_attach(backing: &str) -> Result<String, String> {
    let o = std::process::Command::new("losetup")
        .args(["--find", "--show", "--direct-io=on"])
        .arg(backing)
        .output()
        .map_err(|e| format!("losetup {backing}: {e} (is util-linux installed?)"))?;
    if !o.status.success() {
        return Err(format!("losetup {backing}: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Detach a loop device (losetup -d).
pub fn loop_detach(dev: &str) -> Result<(), String> {
    let o = std::process::Command::new("losetup")
        .arg("-d")
        .arg(dev)
        .output()
        .map_err(|e| format!("losetup -d {dev}: {e}"))?;
    if !o.status.success() {
        return Err(format!("losetup -d {dev}: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(())
}

fn space_check(ctx: &str, path: &str, size: u64) -> Result<(), String> {
    let p = std::path::Path::new(path);
    if p.exists() {
        return Err(format!(
            "{ctx}.path: {path} already exists; thplab-live creates its own swap file and will not overwrite one"
        ));
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        return Err(format!("{ctx}.path: directory {} does not exist", dir.display()));
    }
    let c = std::ffi::CString::new(dir.to_string_lossy().as_bytes()).unwrap();
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
        let free = st.f_bavail as u64 * st.f_frsize as u64;
        if free < size + (1 << 30) {
            return Err(format!(
                "{ctx}: not enough space in {} for a {} swap file (free {} MiB)",
                dir.display(),
                thplab_workload::units::fmt_size(size),
                free >> 20
            ));
        }
    }
    Ok(())
}

fn zram_available(dev: &str) -> Vec<String> {
    read_trim(&format!("/sys/block/{dev}/comp_algorithm"))
        .map(|t| t.split_whitespace().map(|s| s.trim_matches(|c| c == '[' || c == ']').to_string()).collect())
        .unwrap_or_default()
}

/// Check every swap device can be set up, without changing anything.
pub fn plan(specs: &[SwapSpec]) -> Result<Vec<SwapPlan>, String> {
    let swaps = read_file("/proc/swaps").unwrap_or_default();
    let mut out = vec![];
    let mut used_zram: Vec<String> = vec![];
    for (i, s) in specs.iter().enumerate() {
        let ctx = format!("machine.swap[{i}]");
        match s.kind {
            SwapKind::Zram => {
                let dev = match &s.path {
                    Some(p) => p.trim_start_matches("/dev/").to_string(),
                    None => {
                        let mut found = None;
                        for n in 0..16 {
                            let d = format!("zram{n}");
                            if std::path::Path::new(&format!("/sys/block/{d}")).exists()
                                && !used_zram.contains(&d)
                                && read_trim(&format!("/sys/block/{d}/disksize")).as_deref() == Some("0")
                            {
                                found = Some(d);
                                break;
                            }
                        }
                        found.ok_or_else(|| format!("{ctx}: no unused zram device (/sys/block/zramN with disksize 0); load the zram module or free one"))?
                    }
                };
                if !dev.starts_with("zram") || !std::path::Path::new(&format!("/sys/block/{dev}")).exists() {
                    return Err(format!(
                        "{ctx}: unknown device `{}`: no /sys/block/{dev} on this machine",
                        s.path.clone().unwrap_or(dev.clone())
                    ));
                }
                if read_trim(&format!("/sys/block/{dev}/disksize")).as_deref() != Some("0")
                    || crate::safety::swap_active(&swaps, &format!("/dev/{dev}"))
                {
                    return Err(format!(
                        "{ctx}: /dev/{dev} is in use (disksize is not 0); thplab-live only uses an unused zram device"
                    ));
                }
                let avail = zram_available(&dev);
                if let Some(a) = &s.comp_algorithm {
                    if !avail.contains(a) {
                        return Err(format!(
                            "{ctx}.comp_algorithm: `{a}` is not offered by /dev/{dev} on this kernel (available: {})",
                            avail.join(", ")
                        ));
                    }
                }
                let before = read_trim(&format!("/sys/block/{dev}/comp_algorithm"))
                    .and_then(|t| thplab_workload::knobs::parse_sysfs_choice(&t))
                    .unwrap_or_default();
                used_zram.push(dev.clone());
                out.push(SwapPlan::Zram {
                    dev,
                    size: s.size.0,
                    alg: s.comp_algorithm.clone(),
                    alg_before: before,
                    priority: s.priority,
                });
            }
            SwapKind::File => {
                let path =
                    s.path.clone().unwrap_or_else(|| format!("/var/tmp/thplab-swapfile-{}-{i}", std::process::id()));
                space_check(&ctx, &path, s.size.0)?;
                out.push(SwapPlan::File { path, size: s.size.0, priority: s.priority });
            }
            SwapKind::Disk if s.path.as_deref().is_none_or(|p| !p.starts_with("/dev/")) => {
                if !std::path::Path::new("/dev/loop-control").exists() {
                    return Err(format!(
                        "{ctx}: swap type `disk` needs loop devices live (/dev/loop-control is missing)"
                    ));
                }
                let backing =
                    s.path.clone().unwrap_or_else(|| format!("/var/tmp/thplab-swapdisk-{}-{i}", std::process::id()));
                space_check(&ctx, &backing, s.size.0)?;
                out.push(SwapPlan::Disk { backing, size: s.size.0, priority: s.priority });
            }
            SwapKind::Disk | SwapKind::Ssd | SwapKind::Pmem => {
                let kind = format!("{:?}", s.kind).to_lowercase();
                if let Some(p) = &s.path {
                    if !std::path::Path::new(p).exists() {
                        return Err(format!("{ctx}: unknown device `{p}`: it does not exist on this machine"));
                    }
                }
                return Err(format!(
                    "{ctx}: swap type `{kind}` is not supported live: thplab-live does not format block devices; describe the device as `zram`, `file` or `disk` (a loop device over a file) for a live run"
                ));
            }
        }
    }
    Ok(out)
}

fn mkswap(path: &str) -> Result<(), String> {
    let o = std::process::Command::new("mkswap")
        .arg(path)
        .output()
        .map_err(|e| format!("mkswap {path}: {e} (is util-linux installed?)"))?;
    if !o.status.success() {
        return Err(format!("mkswap {path}: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(())
}

/// include/linux/swap.h
const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

fn swapon(path: &str, priority: Option<i32>) -> Result<(), String> {
    let c = std::ffi::CString::new(path).unwrap();
    let flags = match priority {
        Some(p) if p >= 0 => SWAP_FLAG_PREFER | p.min(SWAP_FLAG_PRIO_MASK),
        _ => 0,
    };
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        return Err(format!("swapon {path}: {}", errno_name(errno())));
    }
    Ok(())
}

/// Set up the planned devices, journalling each step before taking it. Returns each
/// device as set up (a `disk` names its loop device and whether it reports itself rotational).
pub fn apply(plans: &[SwapPlan], journal: &mut Journal) -> Result<Vec<Value>, String> {
    let mut desc = vec![];
    for p in plans {
        desc.push(p.describe());
        match p {
            SwapPlan::Zram { dev, size, alg, alg_before, priority } => {
                journal.zram.push((dev.clone(), alg_before.clone()));
                journal.swapon.push(format!("/dev/{dev}"));
                journal.save()?;
                if let Some(a) = alg {
                    write_file(&format!("/sys/block/{dev}/comp_algorithm"), a)
                        .map_err(|e| format!("{dev}/comp_algorithm = {a}: {e}"))?;
                }
                write_file(&format!("/sys/block/{dev}/disksize"), &size.to_string())
                    .map_err(|e| format!("{dev}/disksize = {size}: {e}"))?;
                mkswap(&format!("/dev/{dev}"))?;
                swapon(&format!("/dev/{dev}"), *priority)?;
            }
            SwapPlan::File { path, size, priority } => {
                journal.swapfiles.push(path.clone());
                journal.swapon.push(path.clone());
                journal.save()?;
                create_swapfile(path, *size)?;
                mkswap(path)?;
                swapon(path, *priority)?;
            }
            SwapPlan::Disk { backing, size, priority } => {
                journal.swapfiles.push(backing.clone());
                journal.loops.push(backing.clone());
                journal.save()?;
                create_swapfile(backing, *size)?;
                let dev = loop_attach(backing)?;
                journal.swapon.push(dev.clone());
                journal.save()?;
                mkswap(&dev)?;
                swapon(&dev, *priority)?;
                let name = dev.trim_start_matches("/dev/");
                let rot = read_trim(&format!("/sys/block/{name}/queue/rotational")).map(|r| r == "1");
                *desc.last_mut().unwrap() =
                    json!({"type": "disk", "path": dev, "size": size, "priority": priority, "rotational": rot});
            }
        }
    }
    Ok(desc)
}

/// A new file of `size` bytes at `path` for swap (a swap file, or a `disk` device's backing
/// file): written out and synced, then dropped from the page cache.
pub fn create_swapfile(path: &str, size: u64) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("create swap file {path}: {e}"))?;
    // Written out (not fallocated): a swap file must have no holes or unwritten extents on every filesystem.
    let buf = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n]).map_err(|e| format!("write swap file {path}: {e}"))?;
        left -= n as u64;
    }
    if unsafe { libc::fsync(f.as_raw_fd()) } != 0 {
        return Err(format!("fsync swap file {path}: {}", errno_name(errno())));
    }
    // Writing it out left the whole file in the page cache, clean. Dropped here: a loop
    // device with direct I/O invalidates the cached pages of every range it first writes
    // (kiocb_invalidate_pages() in __iomap_dio_rw()), which made the first pass of THP
    // swap-outs over a new `disk` device ~40 % slower than any later one (256 THPs: 410-487
    // against 302-312 us each with the cache dropped, stop 48), and as much memory as the
    // file sat in the page cache where the model has none. A swap file's own I/O bypasses
    // the page cache; its cached copy was only memory taken.
    // (posix_fadvise returns the error number; it does not set errno)
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(format!("drop the page cache of swap file {path}: {}", errno_name(rc)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of `path`'s pages are in the page cache (mincore() over a read-only mapping).
    fn cached_pages(path: &str) -> Result<usize, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("open {path}: {e}"))?;
        let len = f.metadata().map_err(|e| format!("stat {path}: {e}"))?.len() as usize;
        if len == 0 {
            return Ok(0);
        }
        use std::os::unix::io::AsRawFd;
        // SAFETY: a shared read-only mapping of the whole file, unmapped before returning; mincore
        // only reads the page cache's state into `vec` (one byte per page of the mapping)
        unsafe {
            let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0);
            if p == libc::MAP_FAILED {
                return Err(format!("mmap {path}: {}", errno_name(errno())));
            }
            let mut vec = vec![0u8; len.div_ceil(4096)];
            let r = libc::mincore(p, len, vec.as_mut_ptr());
            libc::munmap(p, len);
            if r != 0 {
                return Err(format!("mincore {path}: {}", errno_name(errno())));
            }
            Ok(vec.iter().filter(|&&b| b & 1 != 0).count())
        }
    }

    /// A new swap file is written out whole (no holes) and none of it stays in the page
    /// cache: without the drop all its 2,048 pages are cached.
    #[test]
    fn a_new_swap_file_leaves_nothing_in_the_page_cache() {
        // where the runner puts swap files; on tmpfs the page cache is the file: no test
        let path = format!("/var/tmp/thplab-swapfile-test-{}", std::process::id());
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let dir = std::ffi::CString::new("/var/tmp").unwrap();
        if unsafe { libc::statfs(dir.as_ptr(), &mut st) } != 0 || st.f_type == libc::TMPFS_MAGIC {
            eprintln!("skipped: /var/tmp is missing or on tmpfs");
            return;
        }
        let r = create_swapfile(&path, 8 << 20).and_then(|_| {
            let len = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
            Ok((len, cached_pages(&path)?))
        });
        let _ = std::fs::remove_file(&path);
        let (len, cached) = r.unwrap();
        assert_eq!(len, 8 << 20);
        assert_eq!(cached, 0);
    }
}
