//! The result schema, the same for both backends: what the kernel itself would show
//! (/proc/vmstat, /proc/meminfo, /proc/buddyinfo, smaps_rollup), per phase, in time.
//! Maps are BTreeMaps so the JSON is byte-identical for identical runs.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub type Counters = BTreeMap<String, i64>;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct PhaseResult {
    /// "<process>:<phase>"; a process's ops before its first phase marker form phase "<process>:main".
    pub name: String,
    pub process: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Time the process spent in the kernel during the phase (model: kernel work charged; live: getrusage stime).
    pub sys_ns: u64,
    /// System-wide /proc/vmstat change over the phase (non-zero entries only).
    pub vmstat_delta: Counters,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct OpError {
    /// The index of the op in the process's ops (of the top-level repeat for a nested op).
    pub op_index: usize,
    /// The op's path when it is inside a repeat (`ops[3].ops[1]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub op: String,
    /// The errno name the kernel returns (EINVAL, ENOMEM, ...).
    pub errno: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TlbStats {
    pub accesses: u64,
    pub dtlb_load_misses: u64,
    pub dtlb_store_misses: u64,
    pub stlb_hits: u64,
    pub page_walks: u64,
    pub walk_cycles: u64,
    pub cycles: u64,
    /// accesses whose line missed the last-level cache (model: tlb.rs DataCache)
    #[serde(default)]
    pub cache_misses: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct ProcessResult {
    pub name: String,
    pub pid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// /proc/PID/smaps_rollup fields in kB, sampled just before exit.
    pub smaps_rollup: BTreeMap<String, u64>,
    pub errors: Vec<OpError>,
    /// Access streams: TLB model counters (model backend) or what the live side can read.
    pub tlb: TlbStats,
    /// Access time (ns) spent in access ops.
    pub access_ns: u64,
    /// Set when the process was OOM-killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Percentiles {
    pub count: u64,
    /// percentile (5, 10, 25, 30, 40, 50, 60, 75, 80, 90, 95, 99) -> ns
    pub ns: BTreeMap<String, u64>,
    /// Points of the empirical CDF, `[ns, samples <= ns]`: the largest sample of each
    /// log bin (eight bins per octave), so a plot through them is exact at every point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cdf: Vec<[u64; 2]>,
}

/// The log bin of a sample: values below 8 ns each their own, then eight per octave.
fn log_bin(ns: u64) -> u64 {
    if ns < 8 {
        return ns;
    }
    let top = 63 - ns.leading_zeros() as u64;
    top * 8 + ((ns >> (top - 3)) & 7)
}

/// A time series: column names and rows of numbers; the first column is `t_ns`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Series {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct ZoneFrag {
    pub node: u32,
    pub zone: String,
    pub fragmentation_score: u64,
    /// extfrag_for_order per order 0..=10 (percent of free memory unusable at that order)
    pub extfrag: Vec<u64>,
    /// fragmentation_index per order 0..=10 (x1000; -1000 = a suitable block exists)
    pub fragmentation_index: Vec<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct RunResult {
    pub thplab_version: String,
    /// "model" or "kernel"
    pub backend: String,
    pub workload: String,
    pub seed: u64,
    /// The machine as run (model) or as found (kernel).
    pub machine: Value,
    /// Knob values at the start of the run (canonical names).
    pub knobs: BTreeMap<String, String>,
    /// Cost profile name and values (model), or null.
    pub cost_profile: Value,
    /// Kernel release and host facts (kernel backend), or null.
    pub kernel: Value,
    pub sim_time_ns: u64,
    pub phases: Vec<PhaseResult>,
    /// /proc/vmstat change over the whole run.
    pub vmstat_delta: Counters,
    /// /proc/vmstat at the end (model: since boot of the model).
    pub vmstat: Counters,
    /// /proc/meminfo at the end, kB.
    pub meminfo: BTreeMap<String, u64>,
    pub buddyinfo_before: String,
    pub buddyinfo_after: String,
    pub pagetypeinfo: String,
    pub fragmentation: Vec<ZoneFrag>,
    pub processes: Vec<ProcessResult>,
    /// Latency distributions by name (e.g. `thp_fault`, `fault`).
    pub latency: BTreeMap<String, Percentiles>,
    pub series: Series,
    /// Exported tracepoint events, each {t_ns, event, fields...}.
    pub trace: Vec<Value>,
    /// Anything a backend wants to add (zram mm_stat, khugepaged sysfs, ...).
    pub extra: BTreeMap<String, Value>,
}

pub const PERCENTILES: [u32; 12] = [5, 10, 25, 30, 40, 50, 60, 75, 80, 90, 95, 99];

/// Nearest-rank percentiles of a sample (sorted in place).
pub fn percentiles(samples: &mut [u64]) -> Percentiles {
    samples.sort_unstable();
    let mut ns = BTreeMap::new();
    if !samples.is_empty() {
        for p in PERCENTILES {
            let rank = ((p as f64 / 100.0) * samples.len() as f64).ceil() as usize;
            let idx = rank.clamp(1, samples.len()) - 1;
            ns.insert(format!("p{p:02}"), samples[idx]);
        }
    }
    let mut cdf = vec![];
    for (i, &v) in samples.iter().enumerate() {
        if samples.get(i + 1).is_none_or(|&n| log_bin(n) != log_bin(v)) {
            cdf.push([v, i as u64 + 1]);
        }
    }
    Percentiles { count: samples.len() as u64, ns, cdf }
}

impl RunResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("serialise result")
    }
}

/// Write a file atomically: a temporary file in the same directory, then rename.
pub fn write_atomic(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let fname = path.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{fname}.tmp{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pct() {
        let mut v: Vec<u64> = (1..=100).collect();
        let p = percentiles(&mut v);
        assert_eq!(p.ns["p50"], 50);
        assert_eq!(p.ns["p95"], 95);
        assert_eq!(p.ns["p05"], 5);
        // the CDF's points: every value below 16 is its own bin up to 8, then 8..15 in
        // eighths of the octave (one value each); 96..100 share 96's bin [96, 104)
        assert_eq!(p.cdf[0], [1, 1]);
        assert_eq!(p.cdf.last(), Some(&[100, 100]));
        assert!(p.cdf.windows(2).all(|w| w[0][0] < w[1][0] && w[0][1] < w[1][1]));
        assert!(p.cdf.iter().all(|&[v, n]| v == n), "exact at each point");
        assert_eq!(p.cdf.iter().filter(|&&[v, _]| v >= 64).count(), 5, "64..128 in eighths of 8");
    }
}
