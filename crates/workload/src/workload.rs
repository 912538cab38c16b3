//! The workload language. One document, two backends: every operation has a
//! real-kernel meaning (the syscalls the live runner makes, given in each op's doc)
//! and a model meaning (what `thplab-model` does for it).
//!
//! ```json
//! {"name": "seed000", "seed": 1,
//!  "knobs": {"transparent_hugepage/enabled": "madvise"},
//!  "processes": [{"name": "test", "ops": [
//!     {"op": "mmap", "name": "buf", "size": "10G"},
//!     {"op": "madvise", "region": "buf", "advice": "hugepage"},
//!     {"op": "write", "region": "buf", "every": "2M", "length": "4K", "data": 255, "byte": 0, "bytes": 1},
//!     {"op": "madvise", "region": "buf", "advice": "pageout"},
//!     {"op": "munmap", "region": "buf"}]}]}
//! ```

use crate::knobs;
use crate::machine::MachineSpec;
use crate::units::{fmt_size, Duration, Size, PAGE_SIZE};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A byte range of a named region, optionally repeated every `every` bytes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct RangeSpec {
    pub region: String,
    /// Start within the region (default 0); with `every`, start within each stride.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<Size>,
    /// Length (default: to the end of the region, or of the stride with `every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<Size>,
    /// Repeat the range every this many bytes across the whole region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Size>,
}

impl RangeSpec {
    /// The concrete (start, len) pieces within a region of `region_size` bytes.
    pub fn pieces(&self, region_size: u64) -> Vec<(u64, u64)> {
        let mut v = vec![];
        self.for_each_piece(region_size, |a, l| v.push((a, l)));
        v
    }
    /// Calls `f(start, len)` for each piece, in address order, without allocating.
    pub fn for_each_piece(&self, region_size: u64, mut f: impl FnMut(u64, u64)) {
        let off = self.offset.map_or(0, |s| s.0);
        match self.every {
            None => {
                let len = self.length.map_or(region_size.saturating_sub(off), |s| s.0);
                if len > 0 {
                    f(off, len)
                }
            }
            Some(Size(every)) => {
                let len = self.length.map_or(every.saturating_sub(off), |s| s.0);
                let mut base = 0;
                while base + off < region_size && len > 0 {
                    let l = len.min(region_size - (base + off));
                    f(base + off, l);
                    base += every;
                }
            }
        }
    }
    /// How many pieces `for_each_piece` gives, without walking them.
    pub fn nr_pieces(&self, region_size: u64) -> u64 {
        let off = self.offset.map_or(0, |s| s.0);
        match self.every {
            None => (self.length.map_or(region_size.saturating_sub(off), |s| s.0) > 0) as u64,
            Some(Size(every)) => {
                let len = self.length.map_or(every.saturating_sub(off), |s| s.0);
                if len == 0 || every == 0 || off >= region_size {
                    0
                } else {
                    (region_size - off).div_ceil(every)
                }
            }
        }
    }
    /// Piece `i` (< nr_pieces) as `for_each_piece` gives it, in O(1): the range ops walk a
    /// million pieces a batch at a time.
    pub fn piece(&self, region_size: u64, i: u64) -> (u64, u64) {
        let off = self.offset.map_or(0, |s| s.0);
        match self.every {
            None => (off, self.length.map_or(region_size.saturating_sub(off), |s| s.0)),
            Some(Size(every)) => {
                let len = self.length.map_or(every.saturating_sub(off), |s| s.0);
                let start = i * every + off;
                (start, len.min(region_size - start))
            }
        }
    }
    pub fn total_len(&self, region_size: u64) -> u64 {
        let mut t = 0;
        self.for_each_piece(region_size, |_, l| t += l);
        t
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    /// MADV_HUGEPAGE (14)
    Hugepage,
    /// MADV_NOHUGEPAGE (15)
    Nohugepage,
    /// MADV_COLD (20)
    Cold,
    /// MADV_PAGEOUT (21)
    Pageout,
    /// MADV_FREE (8)
    Free,
    /// MADV_DONTNEED (4)
    Dontneed,
    /// MADV_COLLAPSE (25)
    Collapse,
    /// MADV_WILLNEED (3)
    Willneed,
}
impl Advice {
    /// The advice number as in include/uapi/asm-generic/mman-common.h.
    pub fn number(self) -> i32 {
        match self {
            Advice::Hugepage => 14,
            Advice::Nohugepage => 15,
            Advice::Cold => 20,
            Advice::Pageout => 21,
            Advice::Free => 8,
            Advice::Dontneed => 4,
            Advice::Collapse => 25,
            Advice::Willneed => 3,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Advice::Hugepage => "MADV_HUGEPAGE",
            Advice::Nohugepage => "MADV_NOHUGEPAGE",
            Advice::Cold => "MADV_COLD",
            Advice::Pageout => "MADV_PAGEOUT",
            Advice::Free => "MADV_FREE",
            Advice::Dontneed => "MADV_DONTNEED",
            Advice::Collapse => "MADV_COLLAPSE",
            Advice::Willneed => "MADV_WILLNEED",
        }
    }
}

/// What a write puts into the bytes it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WriteData {
    /// A byte value repeated (`memset`). 0 writes zeros.
    Byte(u8),
    /// `"random"` (incompressible, from a PRNG seeded by the workload seed) or
    /// `"text"` (compressible ~3:1, a fixed corpus).
    Kind(DataKind),
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    Random,
    Text,
}
impl Default for WriteData {
    fn default() -> Self {
        WriteData::Byte(0xff)
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AccessPattern {
    /// Sequential by `stride` bytes, wrapping around.
    Seq,
    /// Uniformly random cache lines.
    Random,
    /// Zipf-distributed 4 KiB pages (skew `theta`), random line within the page.
    Zipf,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Prot {
    None,
    R,
    Rw,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// `mmap(NULL, size, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS[|MAP_POPULATE], -1, 0)`;
    /// with `align`, a larger mapping trimmed by munmap to an aligned start.
    Mmap {
        name: String,
        size: Size,
        #[serde(default, skip_serializing_if = "is_false")]
        populate: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        align: Option<Size>,
    },
    /// `munmap(addr, len)` for each piece of the range.
    Munmap {
        #[serde(flatten)]
        range: RangeSpec,
    },
    /// `mprotect(addr, len, prot)` for each piece.
    Mprotect {
        #[serde(flatten)]
        range: RangeSpec,
        prot: Prot,
    },
    /// `madvise(addr, len, advice)` for each piece.
    Madvise {
        #[serde(flatten)]
        range: RangeSpec,
        advice: Advice,
    },
    /// For every 4 KiB page of the range: `memset(page + byte, data, bytes)` (or PRNG/text bytes).
    Write {
        #[serde(flatten)]
        range: RangeSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        byte: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u32>,
        #[serde(default)]
        data: WriteData,
    },
    /// For every 4 KiB page of the range: a one-byte load at `page + byte`.
    Read {
        #[serde(flatten)]
        range: RangeSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        byte: Option<u32>,
    },
    /// A stream of 8-byte loads/stores over the range: `count` of them, or for `duration`.
    Access {
        #[serde(flatten)]
        range: RangeSpec,
        pattern: AccessPattern,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        /// Fraction of stores, 0..=1 (default 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        write: Option<f64>,
        /// Sequential stride in bytes (default 64).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stride: Option<Size>,
        /// Zipf skew (default 0.99).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        theta: Option<f64>,
    },
    /// `clock_nanosleep(duration)`.
    Sleep { duration: Duration },
    /// Write a knob's file (sysfs/sysctl) at this point of the process's run.
    Set { knob: String, value: Value },
    /// `prctl(PR_SET_THP_DISABLE, thp_disable, 0, 0, 0)`.
    Prctl { thp_disable: bool },
    /// Unmovable kernel memory: order-0 pages held in pipe buffers
    /// (`pipe2`, `F_SETPIPE_SZ`, `write`), `size` bytes, kept under `name`.
    Kalloc {
        name: String,
        size: Size,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<u32>,
    },
    /// Release part of a kalloc set (close the pipes holding those pages); range over its bytes.
    Kfree {
        #[serde(flatten)]
        range: RangeSpec,
    },
    /// `echo VALUE > /proc/sys/vm/drop_caches` (2 or 3 runs the shrinkers, including the THP deferred split queue).
    DropCaches { value: u8 },
    /// `move_pages(2)` of every page of the range to `node` (MPOL_MF_MOVE).
    MovePages {
        #[serde(flatten)]
        range: RangeSpec,
        node: u32,
    },
    /// A phase marker: counters and times are reported per phase.
    Phase { name: String },
    /// Run `ops` `count` times (nestable): a loop in the process, not an unrolled list.
    Repeat { count: u64, ops: Vec<Op> },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Op {
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Mmap { .. } => "mmap",
            Op::Munmap { .. } => "munmap",
            Op::Mprotect { .. } => "mprotect",
            Op::Madvise { .. } => "madvise",
            Op::Write { .. } => "write",
            Op::Read { .. } => "read",
            Op::Access { .. } => "access",
            Op::Sleep { .. } => "sleep",
            Op::Set { .. } => "set",
            Op::Prctl { .. } => "prctl",
            Op::Kalloc { .. } => "kalloc",
            Op::Kfree { .. } => "kfree",
            Op::DropCaches { .. } => "drop_caches",
            Op::MovePages { .. } => "move_pages",
            Op::Phase { .. } => "phase",
            Op::Repeat { .. } => "repeat",
        }
    }
    pub fn range(&self) -> Option<&RangeSpec> {
        match self {
            Op::Munmap { range }
            | Op::Mprotect { range, .. }
            | Op::Madvise { range, .. }
            | Op::Write { range, .. }
            | Op::Read { range, .. }
            | Op::Access { range, .. }
            | Op::Kfree { range }
            | Op::MovePages { range, .. } => Some(range),
            _ => None,
        }
    }
}

/// The op names and the fields each accepts (for error messages and docs).
pub const OPS: &[(&str, &[&str])] = &[
    ("mmap", &["name", "size", "populate", "align"]),
    ("munmap", &["region", "offset", "length", "every"]),
    ("mprotect", &["region", "offset", "length", "every", "prot"]),
    ("madvise", &["region", "offset", "length", "every", "advice"]),
    ("write", &["region", "offset", "length", "every", "byte", "bytes", "data"]),
    ("read", &["region", "offset", "length", "every", "byte"]),
    ("access", &["region", "offset", "length", "pattern", "count", "duration", "write", "stride", "theta"]),
    ("sleep", &["duration"]),
    ("set", &["knob", "value"]),
    ("prctl", &["thp_disable"]),
    ("kalloc", &["name", "size", "order"]),
    ("kfree", &["region", "offset", "length", "every"]),
    ("drop_caches", &["value"]),
    ("move_pages", &["region", "offset", "length", "every", "node"]),
    ("phase", &["name"]),
    ("repeat", &["count", "ops"]),
];

/// At most this many nested repeats.
pub const MAX_REPEAT_DEPTH: usize = 8;

/// Visit every op of a list in program order, repeat bodies once each, with its path
/// (`ops[3].ops[1]`).
pub fn walk_ops<'a>(ops: &'a [Op], f: &mut impl FnMut(&str, &'a Op)) {
    fn go<'a>(ops: &'a [Op], prefix: &str, f: &mut impl FnMut(&str, &'a Op)) {
        for (i, op) in ops.iter().enumerate() {
            let path = format!("{prefix}ops[{i}]");
            f(&path, op);
            if let Op::Repeat { ops, .. } = op {
                go(ops, &format!("{path}."), f);
            }
        }
    }
    go(ops, "", f)
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Process {
    pub name: String,
    /// Start this long after the run begins (fork+exec of the process).
    #[serde(default)]
    pub start: Duration,
    pub ops: Vec<Op>,
}

/// What to record beyond the counters.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RecordSpec {
    /// Per-fault THP latency percentiles.
    pub fault_latency: bool,
    /// Sample meminfo/vmstat every this often (simulated time); 0 = only at phase ends.
    pub series_interval: Duration,
    /// Tracepoints to export (e.g. `huge_memory:mm_khugepaged_scan_pmd`, `compaction`, `all`;
    /// see `trace::TRACEPOINTS`).
    pub trace: Vec<String>,
}
impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec { fault_latency: false, series_interval: Duration(0), trace: vec![] }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum MachineArg {
    Shorthand(String),
    Spec(Box<MachineSpec>),
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Workload {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub machine: Option<MachineArg>,
    /// Knob values at the start (canonical name -> value).
    pub knobs: BTreeMap<String, String>,
    pub record: RecordSpec,
    pub processes: Vec<Process>,
}

const TOP_FIELDS: &[&str] = &["name", "description", "seed", "machine", "knobs", "record", "processes"];

fn knob_value_str(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(if *b { "1".into() } else { "0".into() }),
        other => Err(format!("expected a string or number, got {other}")),
    }
}

/// Parse and validate a workload from JSON text. Errors name the field
/// (`processes[0].ops[3] (madvise): unknown field `foo``) and never panic.
pub fn parse_workload(text: &str) -> Result<Workload, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("workload is not valid JSON: {e}"))?;
    workload_from_value(&v)
}

pub fn workload_from_value(v: &Value) -> Result<Workload, String> {
    let obj = v.as_object().ok_or("workload: expected a JSON object at the top level")?;
    for k in obj.keys() {
        if !TOP_FIELDS.contains(&k.as_str()) {
            return Err(format!("workload: unknown field `{k}`; expected one of: {}", TOP_FIELDS.join(", ")));
        }
    }
    let name = match obj.get("name") {
        None => "workload".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("workload.name: expected a string".into()),
    };
    let description = match obj.get("description") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("workload.description: expected a string".into()),
    };
    let seed = match obj.get("seed") {
        None => 0,
        Some(x) => x.as_u64().ok_or("workload.seed: expected a non-negative integer")?,
    };
    let machine = match obj.get("machine") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            MachineSpec::parse_shorthand(s).map_err(|e| format!("workload.machine: {e}"))?;
            Some(MachineArg::Shorthand(s.clone()))
        }
        Some(m) => {
            let spec: MachineSpec = serde_json::from_value(m.clone()).map_err(|e| format!("workload.machine: {e}"))?;
            spec.validate().map_err(|e| format!("workload.{e}"))?;
            Some(MachineArg::Spec(Box::new(spec)))
        }
    };
    let mut knobs = BTreeMap::new();
    if let Some(k) = obj.get("knobs") {
        let k = k.as_object().ok_or("workload.knobs: expected an object of knob name to value")?;
        for (name, val) in k {
            let s = knob_value_str(val).map_err(|e| format!("workload.knobs.{name}: {e}"))?;
            let (c, v) = knobs::check_assignment(name, &s).map_err(|e| format!("workload.knobs: {e}"))?;
            knobs.insert(c, v);
        }
    }
    let record: RecordSpec = match obj.get("record") {
        None => RecordSpec::default(),
        Some(r) => serde_json::from_value(r.clone()).map_err(|e| format!("workload.record: {e}"))?,
    };
    crate::trace::trace_mask(&record.trace, "workload.record.trace")?;
    let procs = obj.get("processes").ok_or("workload.processes: missing (a list of processes, each with ops)")?;
    let procs = procs.as_array().ok_or("workload.processes: expected a list")?;
    if procs.is_empty() {
        return Err("workload.processes: at least one process is needed".into());
    }
    if procs.len() > 4096 {
        return Err("workload.processes: at most 4096 processes".into());
    }
    let mut processes = vec![];
    let mut names = BTreeSet::new();
    for (pi, p) in procs.iter().enumerate() {
        let ctx = format!("processes[{pi}]");
        let po = p.as_object().ok_or_else(|| format!("{ctx}: expected an object with name and ops"))?;
        for k in po.keys() {
            if !["name", "start", "ops"].contains(&k.as_str()) {
                return Err(format!("{ctx}: unknown field `{k}`; expected one of: name, start, ops"));
            }
        }
        let pname = match po.get("name") {
            None => format!("p{pi}"),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(format!("{ctx}.name: expected a non-empty string")),
        };
        if !names.insert(pname.clone()) {
            return Err(format!("{ctx}.name: duplicate process name `{pname}`"));
        }
        let start: Duration = match po.get("start") {
            None => Duration(0),
            Some(s) => serde_json::from_value(s.clone()).map_err(|e| format!("{ctx}.start: {e}"))?,
        };
        let ops_v = po.get("ops").ok_or_else(|| format!("{ctx}.ops: missing"))?;
        let ops_a = ops_v.as_array().ok_or_else(|| format!("{ctx}.ops: expected a list"))?;
        let mut ops = vec![];
        for (oi, ov) in ops_a.iter().enumerate() {
            ops.push(parse_op(ov, &format!("{ctx}.ops[{oi}]"), 0)?);
        }
        let proc_ = Process { name: pname, start, ops };
        check_process(&proc_).map_err(|e| format!("{ctx}.{e}"))?;
        processes.push(proc_);
    }
    Ok(Workload { name, description, seed, machine, knobs, record, processes })
}

/// Parse one op at `path` (errors start with it); repeat bodies recursively.
fn parse_op(v: &Value, path: &str, depth: usize) -> Result<Op, String> {
    let o = v.as_object().ok_or_else(|| format!("{path} expected an object with an `op` field"))?;
    let kind = match o.get("op") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(format!("{path} `op` must be a string")),
        None => return Err(format!("{path} missing `op` field")),
    };
    parse_op_fields(o, kind, v, depth).map_err(|e| {
        if e.starts_with(".ops[") {
            format!("{path}{e}")
        } else {
            format!("{path} {e}")
        }
    })
}

fn parse_op_fields(o: &serde_json::Map<String, Value>, kind: &str, v: &Value, depth: usize) -> Result<Op, String> {
    if kind == "repeat" {
        return parse_repeat(o, depth);
    }
    let fields = OPS.iter().find(|(n, _)| *n == kind).map(|(_, f)| *f).ok_or_else(|| {
        format!(
            "unknown operation `{kind}`; known operations: {}",
            OPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )
    })?;
    for k in o.keys() {
        if k != "op" && !fields.contains(&k.as_str()) {
            return Err(format!("({kind}): unknown field `{k}`; expected one of: {}", fields.join(", ")));
        }
    }
    serde_json::from_value::<Op>(v.clone()).map_err(|e| format!("({kind}): {e}"))
}

/// `{"op": "repeat", "count": N, "ops": [...]}`
fn parse_repeat(o: &serde_json::Map<String, Value>, depth: usize) -> Result<Op, String> {
    for k in o.keys() {
        if !["op", "count", "ops"].contains(&k.as_str()) {
            return Err(format!("(repeat): unknown field `{k}`; expected one of: count, ops"));
        }
    }
    if depth >= MAX_REPEAT_DEPTH {
        return Err(format!("(repeat): repeats nest at most {MAX_REPEAT_DEPTH} deep"));
    }
    let count = o
        .get("count")
        .and_then(|c| c.as_u64())
        .filter(|c| (1..=1_000_000_000).contains(c))
        .ok_or("(repeat): count must be an integer from 1 to 1000000000")?;
    let list = o.get("ops").and_then(|l| l.as_array()).ok_or("(repeat): ops must be a list of operations")?;
    if list.is_empty() {
        return Err("(repeat): ops must not be empty".into());
    }
    let mut ops = vec![];
    for (j, ov) in list.iter().enumerate() {
        ops.push(parse_op(ov, &format!(".ops[{j}]"), depth + 1)?);
    }
    Ok(Op::Repeat { count, ops })
}

fn aligned(ctx: &str, what: &str, v: Option<Size>) -> Result<(), String> {
    if let Some(Size(x)) = v {
        if x % PAGE_SIZE != 0 {
            return Err(format!("{ctx}: {what} {} is not a multiple of the 4K page size", fmt_size(x)));
        }
    }
    Ok(())
}

/// Static checks of one process: region names, alignment, value ranges.
fn check_process(p: &Process) -> Result<(), String> {
    let mut regions: BTreeMap<&str, u64> = BTreeMap::new();
    let mut kallocs: BTreeMap<&str, u64> = BTreeMap::new();
    check_ops(&p.ops, "", 1, &mut regions, &mut kallocs)
}

/// Check a list of ops at `prefix` (`ops[3].` inside a repeat) that runs `times` times.
/// Regions and kalloc sets are defined once: not inside a repeat that runs more than once.
fn check_ops<'a>(
    ops: &'a [Op],
    prefix: &str,
    times: u64,
    regions: &mut BTreeMap<&'a str, u64>,
    kallocs: &mut BTreeMap<&'a str, u64>,
) -> Result<(), String> {
    for (oi, op) in ops.iter().enumerate() {
        let ctx = format!("{prefix}ops[{oi}] ({})", op.kind());
        if times > 1 && matches!(op, Op::Mmap { .. } | Op::Kalloc { .. }) {
            return Err(format!(
                "{ctx}: defines a region inside a repeat that runs {times} times; define it before the repeat"
            ));
        }
        if let Op::Repeat { count, ops: body } = op {
            check_ops(body, &format!("{prefix}ops[{oi}]."), times.saturating_mul(*count), regions, kallocs)?;
            continue;
        }
        match op {
            Op::Mmap { name, size, align, .. } => {
                if size.0 == 0 {
                    return Err(format!("{ctx}: size must be positive"));
                }
                aligned(&ctx, "size", Some(*size))?;
                if size.0 > (1u64 << 46) {
                    return Err(format!("{ctx}: size {} exceeds the 64T user address space", fmt_size(size.0)));
                }
                if let Some(a) = align {
                    if !a.0.is_power_of_two() || a.0 < PAGE_SIZE || a.0 > (1 << 30) {
                        return Err(format!("{ctx}: align must be a power of two from 4K to 1G"));
                    }
                }
                if regions.insert(name, size.0).is_some() {
                    return Err(format!("{ctx}: region `{name}` is already defined in this process"));
                }
            }
            Op::Kalloc { name, size, order } => {
                if size.0 == 0 {
                    return Err(format!("{ctx}: size must be positive"));
                }
                let o = order.unwrap_or(0);
                if o > 10 {
                    return Err(format!("{ctx}: order must be 0..=10"));
                }
                if size.0 % (PAGE_SIZE << o) != 0 {
                    return Err(format!(
                        "{ctx}: size must be a multiple of the block size ({})",
                        fmt_size(PAGE_SIZE << o)
                    ));
                }
                if kallocs.insert(name, size.0).is_some() {
                    return Err(format!("{ctx}: kalloc set `{name}` is already defined in this process"));
                }
            }
            Op::Set { knob, value } => {
                let s = knob_value_str(value).map_err(|e| format!("{ctx}: value: {e}"))?;
                knobs::check_assignment(knob, &s).map_err(|e| format!("{ctx}: {e}"))?;
            }
            Op::DropCaches { value } if !(1..=3).contains(value) => {
                return Err(format!("{ctx}: value must be 1, 2 or 3"));
            }
            _ => {}
        }
        if let Some(r) = op.range() {
            let size = if matches!(op, Op::Kfree { .. }) {
                *kallocs.get(r.region.as_str()).ok_or_else(|| {
                    format!("{ctx}: no kalloc set named `{}` before this op in this process", r.region)
                })?
            } else {
                *regions.get(r.region.as_str()).ok_or_else(|| {
                    format!("{ctx}: no region named `{}` mapped before this op in this process", r.region)
                })?
            };
            aligned(&ctx, "offset", r.offset)?;
            aligned(&ctx, "length", r.length)?;
            aligned(&ctx, "every", r.every)?;
            let off = r.offset.map_or(0, |s| s.0);
            if let Some(Size(e)) = r.every {
                if e == 0 {
                    return Err(format!("{ctx}: every must be positive"));
                }
                if matches!(op, Op::Access { .. }) {
                    return Err(format!("{ctx}: every is not supported for access streams"));
                }
                if off >= e || off + r.length.map_or(0, |s| s.0) > e {
                    return Err(format!("{ctx}: offset+length must fit within every ({})", fmt_size(e)));
                }
            } else {
                if off >= size {
                    return Err(format!(
                        "{ctx}: offset {} is beyond the region's size {}",
                        fmt_size(off),
                        fmt_size(size)
                    ));
                }
                if let Some(Size(l)) = r.length {
                    if l == 0 || off + l > size {
                        return Err(format!(
                            "{ctx}: offset+length ({}) must be positive and within the region's size {}",
                            fmt_size(off + l),
                            fmt_size(size)
                        ));
                    }
                }
            }
        }
        match op {
            Op::Write { byte, bytes, .. } => {
                let b = byte.unwrap_or(0);
                if b >= 4096 {
                    return Err(format!("{ctx}: byte must be 0..4095"));
                }
                let n = bytes.unwrap_or(4096 - b);
                if n == 0 || b + n > 4096 {
                    return Err(format!("{ctx}: byte+bytes must be 1..=4096 (a write stays within its page)"));
                }
            }
            Op::Read { byte, .. } if byte.unwrap_or(0) >= 4096 => {
                return Err(format!("{ctx}: byte must be 0..4095"));
            }
            Op::Access { count, duration, write, stride, theta, .. } => {
                if count.is_none() == duration.is_none() {
                    return Err(format!("{ctx}: give exactly one of count and duration"));
                }
                if let Some(w) = write {
                    if !(0.0..=1.0).contains(w) {
                        return Err(format!("{ctx}: write must be a fraction 0..=1"));
                    }
                }
                if let Some(s) = stride {
                    if s.0 == 0 || s.0 % 8 != 0 || s.0 > (1 << 30) {
                        return Err(format!("{ctx}: stride must be a positive multiple of 8 bytes"));
                    }
                }
                if let Some(t) = theta {
                    if !(0.0..10.0).contains(t) {
                        return Err(format!("{ctx}: theta must be 0..10"));
                    }
                }
            }
            Op::MovePages { node, .. } if *node > 63 => return Err(format!("{ctx}: node {node} out of range")),
            _ => {}
        }
    }
    Ok(())
}

impl Workload {
    /// The index of the process that starts first (the lowest index among equal starts):
    /// the one whose CPU the live runner backs the run's memory on before it starts, and
    /// the model's idle start with it (docs/page_reporting.md, "Pinned runs").
    pub fn first_to_start(&self) -> usize {
        (0..self.processes.len()).min_by_key(|&i| (self.processes[i].start.0, i)).unwrap_or(0)
    }
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_value()).expect("serialise")
    }
    /// The workload as a JSON value in the input language (round-trips through parse).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        if !self.description.is_empty() {
            m.insert("description".into(), Value::String(self.description.clone()));
        }
        m.insert("seed".into(), Value::from(self.seed));
        if let Some(mach) = &self.machine {
            m.insert("machine".into(), serde_json::to_value(mach).unwrap());
        }
        m.insert("knobs".into(), serde_json::to_value(&self.knobs).unwrap());
        m.insert("record".into(), serde_json::to_value(&self.record).unwrap());
        m.insert("processes".into(), serde_json::to_value(&self.processes).unwrap());
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const SEED000: &str = r#"{"name":"t","processes":[{"name":"test","ops":[
        {"op":"mmap","name":"buf","size":"10G"},
        {"op":"madvise","region":"buf","advice":"hugepage"},
        {"op":"write","region":"buf","every":"2M","length":"4K","byte":0,"bytes":1,"data":255},
        {"op":"madvise","region":"buf","advice":"pageout"},
        {"op":"munmap","region":"buf"}]}]}"#;

    #[test]
    fn parses_and_roundtrips() {
        let w = parse_workload(SEED000).unwrap();
        assert_eq!(w.processes[0].ops.len(), 5);
        let again = parse_workload(&w.to_json()).unwrap();
        assert_eq!(w, again);
    }

    #[test]
    fn errors_name_the_field() {
        let bad = SEED000.replace(r#""advice":"hugepage""#, r#""advice":"hugepage","bogus":1"#);
        let e = parse_workload(&bad).unwrap_err();
        assert!(e.contains("processes[0].ops[1] (madvise): unknown field `bogus`"), "{e}");
        let bad = SEED000.replace(r#""op":"munmap""#, r#""op":"unmapp""#);
        let e = parse_workload(&bad).unwrap_err();
        assert!(e.contains("ops[4] unknown operation `unmapp`"), "{e}");
        let bad = SEED000.replace(r#""size":"10G""#, r#""size":-5"#);
        assert!(parse_workload(&bad).unwrap_err().contains("negative size"));
        let bad = SEED000.replace(r#""size":"10G""#, r#""size":"10000""#);
        assert!(parse_workload(&bad).unwrap_err().contains("not a multiple of the 4K page size"));
        let bad = SEED000.replace(r#""region":"buf","advice":"pageout""#, r#""region":"nope","advice":"pageout""#);
        assert!(parse_workload(&bad).unwrap_err().contains("no region named `nope`"));
        assert!(parse_workload("{").unwrap_err().contains("not valid JSON"));
        let e = parse_workload(r#"{"knobs":{"transparent_hugepage/enabled":"sometimes"},"processes":[{"ops":[]}]}"#)
            .unwrap_err();
        assert!(e.contains("accepted values: always, madvise, never"), "{e}");
    }

    #[test]
    fn repeat_nests_and_errors_name_the_path() {
        let w = r#"{"processes":[{"ops":[{"op":"mmap","name":"r","size":"4M"},
            {"op":"repeat","count":3,"ops":[{"op":"write","region":"r"},
              {"op":"repeat","count":2,"ops":[{"op":"sleep","duration":"1ms"}]}]}]}]}"#;
        let p = parse_workload(w).unwrap();
        let Op::Repeat { count: 3, ops } = &p.processes[0].ops[1] else { panic!() };
        assert!(matches!(&ops[1], Op::Repeat { count: 2, .. }));
        assert_eq!(parse_workload(&p.to_json()).unwrap(), p, "round trip");
        let mut paths = vec![];
        walk_ops(&p.processes[0].ops, &mut |path, _| paths.push(path.to_string()));
        assert_eq!(paths, ["ops[0]", "ops[1]", "ops[1].ops[0]", "ops[1].ops[1]", "ops[1].ops[1].ops[0]"]);
        let e = parse_workload(&w.replace(r#""duration":"1ms""#, r#""duration":"1ms","x":1"#)).unwrap_err();
        assert!(e.starts_with("processes[0].ops[1].ops[1].ops[0] (sleep): unknown field `x`"), "{e}");
        let e = parse_workload(&w.replace(r#""region":"r"}"#, r#""region":"q"}"#)).unwrap_err();
        assert!(e.contains("processes[0].ops[1].ops[0] (write): no region named `q`"), "{e}");
        let e = parse_workload(&w.replace(r#""count":2"#, r#""count":0"#)).unwrap_err();
        assert!(e.starts_with("processes[0].ops[1].ops[1] (repeat): count must be"), "{e}");
        let inner_mmap = w.replace(r#"{"op":"write","region":"r"}"#, r#"{"op":"mmap","name":"s","size":"4M"}"#);
        let e = parse_workload(&inner_mmap).unwrap_err();
        assert!(e.contains("ops[1].ops[0] (mmap): defines a region inside a repeat that runs 3 times"), "{e}");
    }

    #[test]
    fn range_pieces() {
        let r = RangeSpec {
            region: "r".into(),
            offset: Some(Size(512 << 10)),
            length: Some(Size(1536 << 10)),
            every: Some(Size(2 << 20)),
        };
        let p = r.pieces(6 << 20);
        assert_eq!(
            p,
            vec![(512 << 10, 1536 << 10), ((2 << 20) + (512 << 10), 1536 << 10), ((4 << 20) + (512 << 10), 1536 << 10)]
        );
        assert_eq!(r.total_len(6 << 20), 3 * (1536 << 10));
    }

    #[test]
    fn range_piece_by_index_matches_the_walk() {
        let sizes = [0u64, 4096, 5 << 20, (6 << 20) + 4096, 16 << 10];
        let specs = [
            (None, None, None),
            (Some(4096u64), None, None),
            (Some(512 << 10), Some(1536 << 10), Some(2 << 20)),
            (Some(4096), Some(12 << 10), Some(16 << 10)),
            (None, Some(4096), Some(2 << 20)),
            (Some(3 << 20), None, Some(2 << 20)),
            (None, Some(0), Some(4096)),
        ];
        for (o, l, e) in specs {
            let r = RangeSpec { region: "r".into(), offset: o.map(Size), length: l.map(Size), every: e.map(Size) };
            for &sz in &sizes {
                let walk = r.pieces(sz);
                let idx: Vec<_> = (0..r.nr_pieces(sz)).map(|i| r.piece(sz, i)).collect();
                assert_eq!(walk, idx, "{r:?} over {sz}");
            }
        }
    }
}
