//! Safety: the restore journal, restoring knobs and tearing down swap (also after a crash),
//! the run lock, and signal handling.
//!
//! Before a run changes anything it writes the journal (default /tmp/thplab-live-restore.json):
//! every knob it may write with its original value, and every swap device it sets up.
//! The supervisor restores from its in-memory copy at the end, on error, on timeout and on
//! SIGINT/SIGTERM/SIGHUP/SIGQUIT; a panic restores through `Drop`. A journal left behind by a
//! crashed run is applied by the next run (or `thplab-live restore`) on the same boot.

use crate::util::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
pub struct SavedKnob {
    pub name: String,
    pub path: String,
    pub value: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct Journal {
    pub pid: u32,
    pub boot_id: String,
    pub knobs: Vec<SavedKnob>,
    /// zram devices we initialised: (device name, its comp_algorithm before).
    pub zram: Vec<(String, String)>,
    /// Swap files we created.
    pub swapfiles: Vec<String>,
    /// Paths we swapon'ed.
    pub swapon: Vec<String>,
    /// Backing files of the loop devices we attached (detached before the files are removed).
    #[serde(default)]
    pub loops: Vec<String>,
}

pub fn journal_path() -> String {
    std::env::var("THPLAB_LIVE_JOURNAL").unwrap_or_else(|_| "/tmp/thplab-live-restore.json".into())
}

pub fn boot_id() -> String {
    read_trim("/proc/sys/kernel/random/boot_id").unwrap_or_default()
}

impl Journal {
    pub fn new() -> Journal {
        Journal { pid: std::process::id(), boot_id: boot_id(), ..Default::default() }
    }
    pub fn save(&self) -> Result<(), String> {
        let p = journal_path();
        thplab_workload::result::write_atomic(
            std::path::Path::new(&p),
            serde_json::to_string_pretty(self).unwrap().as_bytes(),
        )
        .map_err(|e| format!("cannot write the restore journal {p}: {e}"))
    }
    pub fn load() -> Option<Journal> {
        let t = std::fs::read_to_string(journal_path()).ok()?;
        serde_json::from_str(&t).ok()
    }

    /// Undo everything the journal lists. Returns what could not be undone.
    pub fn restore(&self) -> Vec<String> {
        let mut problems = vec![];
        let active = read_file("/proc/swaps").unwrap_or_default();
        for s in self.swapon.iter().rev() {
            if swap_active(&active, s) {
                if let Err(e) = swapoff(s) {
                    problems.push(format!("swapoff {s}: {e}"));
                }
            }
        }
        for (dev, alg) in &self.zram {
            if let Err(e) = zram_reset(dev) {
                problems.push(format!("reset {dev}: {e}"));
                continue;
            }
            let cur = read_trim(&format!("/sys/block/{dev}/comp_algorithm"))
                .and_then(|t| thplab_workload::knobs::parse_sysfs_choice(&t));
            if !alg.is_empty() && cur.as_deref() != Some(alg.as_str()) {
                if let Err(e) = write_file(&format!("/sys/block/{dev}/comp_algorithm"), alg) {
                    problems.push(format!("{dev}/comp_algorithm back to {alg}: {e}"));
                }
            }
        }
        for b in &self.loops {
            if let Some(dev) = crate::swap::loop_of(b) {
                if let Err(e) = crate::swap::loop_detach(&dev) {
                    problems.push(e);
                }
            }
        }
        for f in &self.swapfiles {
            if std::path::Path::new(f).exists() {
                if let Err(e) = std::fs::remove_file(f) {
                    problems.push(format!("remove swap file {f}: {e}"));
                }
            }
        }
        // Knobs in reverse order of saving (later writes may depend on earlier ones).
        for k in self.knobs.iter().rev() {
            if let Err(e) = restore_knob(k) {
                problems.push(e);
            }
        }
        problems
    }
}

fn current_knob(k: &SavedKnob) -> Option<String> {
    let t = read_trim(&k.path)?;
    Some(thplab_workload::knobs::parse_sysfs_choice(&t).unwrap_or(t))
}

pub fn restore_knob(k: &SavedKnob) -> Result<(), String> {
    if current_knob(k).as_deref() == Some(k.value.as_str()) {
        return Ok(());
    }
    write_file(&k.path, &k.value).map_err(|e| format!("restore {} to `{}`: {e}", k.name, k.value))?;
    match current_knob(k) {
        Some(v) if v == k.value => Ok(()),
        other => Err(format!("restore {} to `{}`: reads back `{}`", k.name, k.value, other.unwrap_or_default())),
    }
}

pub fn swap_active(proc_swaps: &str, path: &str) -> bool {
    let canon =
        std::fs::canonicalize(path).map(|p| p.to_string_lossy().to_string()).unwrap_or_else(|_| path.to_string());
    proc_swaps.lines().skip(1).any(|l| {
        let f = l.split_whitespace().next().unwrap_or("");
        // /proc/swaps escapes spaces as \040 and may mark deleted files.
        let f = f.replace("\\040", " ");
        f == path || f == canon
    })
}

pub fn swapoff(path: &str) -> Result<(), String> {
    let c = std::ffi::CString::new(path).map_err(|e| e.to_string())?;
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        return Err(errno_name(errno()));
    }
    Ok(())
}

pub fn zram_reset(dev: &str) -> Result<(), String> {
    let disk = read_trim(&format!("/sys/block/{dev}/disksize")).unwrap_or_default();
    if disk == "0" {
        return Ok(());
    }
    let mut last = String::new();
    for _ in 0..50 {
        match write_file(&format!("/sys/block/{dev}/reset"), "1") {
            Ok(()) => return Ok(()),
            Err(e) => {
                last = e.to_string();
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
    Err(last)
}

/// An exclusive lock: one live run (or calibration) at a time.
pub struct RunLock {
    _f: std::fs::File,
}
impl RunLock {
    pub fn take() -> Result<RunLock, String> {
        use std::os::unix::io::AsRawFd;
        let p = std::env::var("THPLAB_LIVE_LOCK").unwrap_or_else(|_| "/tmp/thplab-live.lock".into());
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| format!("cannot open the lock file {p}: {e}"))?;
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(format!("another thplab-live run holds {p}; wait for it to finish"));
        }
        Ok(RunLock { _f: f })
    }
}

/// Apply a journal left by a run that did not finish (a crash, SIGKILL). Returns a note if it did.
pub fn repair_stale() -> Result<Option<String>, String> {
    let Some(j) = Journal::load() else { return Ok(None) };
    let p = journal_path();
    if j.boot_id != boot_id() {
        let _ = std::fs::remove_file(&p);
        return Ok(Some(format!("discarded a restore journal from an earlier boot ({p})")));
    }
    if j.pid != std::process::id()
        && unsafe { libc::kill(j.pid as i32, 0) } == 0
        && std::fs::read_to_string(format!("/proc/{}/comm", j.pid)).map(|c| c.contains("thplab-live")).unwrap_or(false)
    {
        return Err(format!("another thplab-live run (pid {}) is active", j.pid));
    }
    let problems = j.restore();
    if problems.is_empty() {
        let _ = std::fs::remove_file(&p);
        Ok(Some(format!("repaired the machine from a restore journal left by an interrupted run (pid {}): {} knob(s), {} swap device(s)", j.pid, j.knobs.len(), j.swapon.len())))
    } else {
        Err(format!("could not fully restore from the journal {p}: {}", problems.join("; ")))
    }
}

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT/SIGTERM/SIGHUP/SIGQUIT (no SA_RESTART: blocking calls return EINTR); ignore SIGPIPE.
pub fn install_signal_handlers() {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Back to default dispositions (in a forked child).
pub fn default_signal_handlers() {
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_DFL);
        }
    }
}

pub fn signalled() -> i32 {
    SIGNALLED.load(Ordering::SeqCst)
}

pub fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}
