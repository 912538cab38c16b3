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

/// This process's system (kernel) CPU time so far, ns.
pub fn self_stime_ns() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000
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

/// SplitMix64: a small deterministic PRNG (the workload's "random" data and streams).
#[derive(Clone)]
pub struct Rng(pub u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
        r.next();
        r
    }
    #[inline]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf sampler over 1..=n with exponent `s` (rejection-inversion, Hörmann & Derflinger 1996),
/// valid for any s > 0 and O(1) per sample.
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}
impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let n = n.max(1) as f64;
        let mut z = Zipf { n, s, h_x1: 0.0, h_n: 0.0, cut: 0.0 };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(n + 0.5);
        z.cut = 2.0 - z.h_inv(z.h(2.5) - (-s * 2f64.ln()).exp());
        z
    }
    fn helper1(x: f64) -> f64 {
        if x.abs() > 1e-8 { x.ln_1p() / x } else { 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)) }
    }
    fn helper2(x: f64) -> f64 {
        if x.abs() > 1e-8 { x.exp_m1() / x } else { 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x)) }
    }
    fn h(&self, x: f64) -> f64 {
        let lx = x.ln();
        Self::helper2((1.0 - self.s) * lx) * lx
    }
    fn h_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (Self::helper1(t) * x).exp()
    }
    /// A sample in 0..n (rank - 1).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let mut k = (x + 0.5).floor();
            if k < 1.0 {
                k = 1.0;
            } else if k > self.n {
                k = self.n;
            }
            if k - x <= self.cut || u >= self.h(k + 0.5) - (-(self.s) * k.ln()).exp() {
                return k as u64 - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn zipf_is_skewed_and_in_range() {
        let z = Zipf::new(1000, 0.99);
        let mut r = Rng::new(1);
        let mut hist = vec![0u32; 1000];
        for _ in 0..100_000 {
            let k = z.sample(&mut r);
            assert!(k < 1000);
            hist[k as usize] += 1;
        }
        assert!(hist[0] > hist[10] && hist[10] > hist[500]);
        let z = Zipf::new(10, 2.5);
        for _ in 0..1000 {
            assert!(z.sample(&mut r) < 10);
        }
    }
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
