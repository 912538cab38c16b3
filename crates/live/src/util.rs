//! Small helpers: errno names, /proc and /sys parsing, clocks, a deterministic PRNG.

use std::collections::BTreeMap;
use std::io;

pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The errno name the kernel's headers give a value (EINVAL, ENOMEM, ...).
pub fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EHWPOISON => "EHWPOISON",
        _ => return format!("E{e}"),
    };
    n.to_string()
}

pub fn io_errno_name(e: &io::Error) -> String {
    e.raw_os_error().map(errno_name).unwrap_or_else(|| "EIO".into())
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Clock ticks per second (USER_HZ: the unit of /proc/stat and /proc/PID/stat times).
pub fn clk_tck() -> u64 {
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as u64
}

/// This process's system (kernel) CPU time so far, ns.
pub fn self_stime_ns() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000
}

thread_local! {
    /// (tid, its /proc/thread-self/schedstat) for self_run_delay_ns()
    static SCHEDSTAT: std::cell::RefCell<Option<(i64, std::fs::File)>> = const { std::cell::RefCell::new(None) };
}

/// The thread whose schedstat file self_run_delay_ns() holds open (for a test).
#[cfg(test)]
pub fn run_delay_file_tid() -> Option<i64> {
    SCHEDSTAT.with(|c| c.borrow().as_ref().map(|(t, _)| *t))
}

/// The calling thread's time spent runnable but waiting for a CPU (schedstat's run_delay, ns):
/// what other tasks on a shared machine cost it. 0 without CONFIG_SCHED_INFO.
/// The file stays open per thread and is read with pread(): opening /proc/thread-self/schedstat
/// for every read took 6-36 us on this VM, and a phase's bracket reads it twice, so every live
/// phase carried ~50 us of the runner's own time (an empty phase measured 50-60 us; pread:
/// ~1.5 us). A fork()ed child's thread has a new tid, so the file is reopened there.
pub fn self_run_delay_ns() -> u64 {
    use std::os::unix::fs::FileExt;
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    SCHEDSTAT.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_none_or(|(t, _)| *t != tid) {
            *c = std::fs::File::open("/proc/thread-self/schedstat").ok().map(|f| (tid, f));
        }
        let mut buf = [0u8; 128];
        let n = c.as_ref().and_then(|(_, f)| f.read_at(&mut buf, 0).ok()).unwrap_or(0);
        std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|t| t.split_whitespace().nth(1).and_then(|x| x.parse().ok()))
            .unwrap_or(0)
    })
}

pub fn read_file(path: &str) -> io::Result<String> {
    std::fs::read_to_string(path)
}

pub fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Write a sysfs/procfs file the way `echo VALUE > FILE` does.
pub fn write_file(path: &str, value: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(format!("{value}\n").as_bytes())
}

/// `name value` lines (/proc/vmstat).
pub fn parse_kv(text: &str) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            if let Ok(v) = v.parse::<i64>() {
                m.insert(k.trim_end_matches(':').to_string(), v);
            }
        }
    }
    m
}

/// `Name:   123 kB` lines (/proc/meminfo, smaps_rollup); other lines are skipped.
pub fn parse_kb(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        if let Some((k, rest)) = line.split_once(':') {
            if k.trim().contains(char::is_whitespace) {
                continue;
            }
            let mut it = rest.split_whitespace();
            if let Some(v) = it.next() {
                if let Ok(v) = v.parse::<u64>() {
                    m.insert(k.trim().to_string(), v);
                }
            }
        }
    }
    m
}

pub fn vmstat() -> BTreeMap<String, i64> {
    parse_kv(&read_file("/proc/vmstat").unwrap_or_default())
}

pub fn meminfo() -> BTreeMap<String, u64> {
    parse_kb(&read_file("/proc/meminfo").unwrap_or_default())
}

/// after - before, non-zero entries only.
pub fn delta(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    let mut d = BTreeMap::new();
    for (k, a) in after {
        let b = before.get(k).copied().unwrap_or(0);
        if a - b != 0 {
            d.insert(k.clone(), a - b);
        }
    }
    d
}

pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

pub use thplab_workload::rng::{Rng, Zipf};

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parsers() {
        let m = parse_kb("Rss:   100 kB\nAnonHugePages:  2048 kB\n55-66 ---p 0 00:00 0 [rollup]\n");
        assert_eq!(m["Rss"], 100);
        assert_eq!(m["AnonHugePages"], 2048);
        let v = parse_kv("thp_fault_alloc 5\npgfault 10\n");
        let w = parse_kv("thp_fault_alloc 7\npgfault 10\n");
        assert_eq!(delta(&v, &w).into_iter().collect::<Vec<_>>(), vec![("thp_fault_alloc".to_string(), 2)]);
        assert_eq!(errno_name(libc::ENOMEM), "ENOMEM");
    }
}
