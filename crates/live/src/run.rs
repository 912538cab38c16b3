//! The supervisor of a live run: checks and refusals, knob save/apply/restore, swap set-up and
//! teardown, one forked child per workload process, snapshots of the kernel's counters per phase,
//! and the result in the shared `RunResult` schema (backend "kernel").

use crate::child::Child;
use crate::host::{self, LiveKnob};
use crate::safety::{self, Journal, RunLock, SavedKnob};
use crate::swap::{self, SwapPlan};
use crate::util::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::io::RawFd;
use thplab_workload::knobs::{self, KnobKind, KnobValues};
use thplab_workload::machine::MachineSpec;
use thplab_workload::result::{percentiles, OpError, PhaseResult, ProcessResult, RunResult, Series};
use thplab_workload::units::fmt_size;
use thplab_workload::workload::{walk_ops, MachineArg, Op, Workload};

pub struct RunArgs {
    pub workload_text: String,
    pub machine: Option<String>,
    pub knobs: Vec<(String, String)>,
    pub timeout_s: Option<f64>,
    pub max_mem_share: f64,
    pub out: Option<String>,
    /// Check and refuse, then stop before changing anything.
    pub dry_run: bool,
}

#[derive(Debug)]
pub enum RunError {
    /// Bad input or a refusal: nothing was touched (exit 2).
    Input(String),
    /// Something failed during the run; the machine was restored (exit 1).
    Failed(String),
    /// Timeout or signal; the machine was restored (exit 3 / 128+signal).
    Aborted(String, i32),
}

/// Restores the journalled state when dropped (normal end, error return, panic).
struct Restorer {
    journal: Journal,
    owner: u32,
    done: bool,
    problems: Vec<String>,
}
impl Restorer {
    fn restore(&mut self) -> Vec<String> {
        if self.done || std::process::id() != self.owner {
            return vec![];
        }
        self.done = true;
        let p = self.journal.restore();
        if p.is_empty() {
            let _ = std::fs::remove_file(safety::journal_path());
        }
        self.problems = p.clone();
        p
    }
}
impl Drop for Restorer {
    fn drop(&mut self) {
        let p = self.restore();
        for e in p {
            eprintln!(
                "thplab-live: RESTORE FAILED: {e} (journal kept at {}; run `thplab-live restore`)",
                safety::journal_path()
            );
        }
    }
}

struct Plan {
    w: Workload,
    machine_swap: Vec<SwapPlan>,
    /// Initial knob writes (canonical name, path, value).
    initial: Vec<(String, String, String)>,
    /// Every knob file the run may write (initial + `set` ops), to save first.
    to_save: Vec<(String, String)>,
    notes: Vec<String>,
    lk: Vec<LiveKnob>,
    /// the workload's footprint (footprint.rs): what host::back_free_memory backs first
    footprint: u64,
    /// the workload writes drop_caches
    drops: bool,
}

fn value_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => {
            if *b {
                "1".into()
            } else {
                "0".into()
            }
        }
        other => other.to_string(),
    }
}

/// Everything that can be checked without touching the machine.
fn plan(a: &RunArgs) -> Result<Plan, String> {
    let w = thplab_workload::parse_workload(&a.workload_text)?;
    let lk = host::live_knobs();
    let by_name: BTreeMap<&str, &LiveKnob> = lk.iter().map(|k| (k.def.name, k)).collect();
    let mut notes = vec![];

    // Machine: only its swap devices are set up; memory and CPUs are the host's.
    let machine: Option<MachineSpec> = match &a.machine {
        Some(m) => Some(MachineSpec::parse_any(m)?),
        None => match &w.machine {
            None => None,
            Some(MachineArg::Shorthand(s)) => Some(MachineSpec::parse_shorthand(s)?),
            Some(MachineArg::Spec(s)) => Some((**s).clone()),
        },
    };
    if let Some(m) = &machine {
        let host_mem = meminfo().get("MemTotal").copied().unwrap_or(0) * 1024;
        if m.total_mem() != 0 && (m.total_mem() as f64 - host_mem as f64).abs() > 0.1 * host_mem as f64 {
            notes.push(format!(
                "the machine description has {} of memory; a live run uses the host's ({} MemTotal)",
                fmt_size(m.total_mem()),
                fmt_size(host_mem / 4096 * 4096)
            ));
        }
    }

    // Knob assignments: the workload's, then the command line's.
    let mut assigns: Vec<(String, String, &'static str)> = vec![];
    for (k, v) in &w.knobs {
        assigns.push((k.clone(), v.clone(), "workload.knobs"));
    }
    for (k, v) in &a.knobs {
        let (c, v) = knobs::check_assignment(k, v).map_err(|e| format!("--knob: {e}"))?;
        assigns.push((c, v, "--knob"));
    }
    let mut sets: Vec<(String, String)> = vec![];
    for (pi, p) in w.processes.iter().enumerate() {
        let mut all: Vec<(String, &Op)> = vec![];
        walk_ops(&p.ops, &mut |path, op| all.push((path.to_string(), op)));
        for (path, op) in all {
            let ctx = format!("processes[{pi}].{path} ({})", op.kind());
            match op {
                Op::Set { knob, value } => {
                    let (c, v) = knobs::check_assignment(knob, &value_str(value)).map_err(|e| format!("{ctx}: {e}"))?;
                    sets.push((c, v));
                }
                Op::Kalloc { order: Some(o), .. } if *o > 0 => {
                    return Err(format!(
                        "{ctx}: kalloc of order {o} is not supported live: the only unmovable kernel allocation userspace can make on demand is order-0 pipe buffers"
                    ))
                }
                Op::MovePages { node, .. } => {
                    let nodes = host::online_nodes();
                    if nodes.len() < 2 {
                        return Err(format!("{ctx}: move_pages is not supported live on this machine: it has {} NUMA node(s)", nodes.len()));
                    }
                    if !nodes.contains(node) {
                        return Err(format!("{ctx}: node {node} is not online (online nodes: {nodes:?})"));
                    }
                }
                _ => {}
            }
        }
    }
    if !w.record.trace.is_empty() {
        return Err(format!("workload.record.trace ({}) is not supported live: thplab-live does not drive tracefs; remove it for a kernel run", w.record.trace.join(", ")));
    }
    let mut initial: BTreeMap<String, String> = BTreeMap::new();
    let mut to_save: Vec<(String, String)> = vec![];
    let mut saw: BTreeSet<String> = BTreeSet::new();
    for (c, v, origin) in assigns.iter().map(|(c, v, o)| (c, v, *o)).chain(sets.iter().map(|(c, v)| (c, v, "a set op")))
    {
        let k = by_name[c.as_str()];
        match k.def.kind {
            KnobKind::Policy => match k.def.live_value {
                Some(lv) if lv != v => {
                    return Err(format!(
                        "{origin}: `{c}` = `{v}` cannot be honoured live: this thplab policy exists only in the model, and the running kernel behaves as `{c}={lv}`"
                    ))
                }
                Some(_) => {}
                None => {
                    let host = if host::free_page_reporting() { "1" } else { "0" };
                    if v != host {
                        notes.push(format!("{c}={v} is model-only; this host's behaviour is {c}={host}"));
                    }
                }
            },
            _ => {
                let path = k.def.path.unwrap();
                if !k.present {
                    return Err(format!("{origin}: knob `{c}` does not exist on this kernel (no {path}); it cannot be set live"));
                }
                if c == "vm.min_free_kbytes" && v == "auto" {
                    notes.push("vm.min_free_kbytes=auto: left as the kernel has it".into());
                    continue;
                }
                if matches!(k.def.values, KnobValues::Trigger { .. }) {
                    continue;
                }
                if saw.insert(c.clone()) {
                    to_save.push((c.clone(), path.to_string()));
                }
                if origin != "a set op" {
                    initial.insert(c.clone(), v.clone());
                }
            }
        }
    }
    // Initial writes in registry order (enabled before per-size settings, and so on).
    let initial: Vec<(String, String, String)> = lk
        .iter()
        .filter_map(|k| {
            initial.get(k.def.name).map(|v| (k.def.name.to_string(), k.def.path.unwrap().to_string(), v.clone()))
        })
        .collect();

    // Memory: refuse a run that could hold more than a safe share of MemAvailable at once
    // (footprint.rs: touched 2 MiB blocks, less what munmap/MADV_DONTNEED drop, plus kalloc).
    // A hugetlb pool the run asks for holds 2 MiB per page until the pool is restored.
    let pool = assigns
        .iter()
        .map(|(c, v, _)| (c, v))
        .chain(sets.iter().map(|(c, v)| (c, v)))
        .filter(|(c, _)| c.as_str() == "vm.nr_hugepages")
        .filter_map(|(_, v)| v.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    let total = thplab_workload::footprint::run_footprint(&w, pool);
    let avail = meminfo().get("MemAvailable").copied().unwrap_or(0) * 1024;
    let limit = (avail as f64 * a.max_mem_share) as u64;
    if total > limit {
        return Err(format!(
            "refused: the workload can hold {} at once, more than {:.0}% of MemAvailable ({} of {}); shrink it (or raise --max-mem-share)",
            fmt_size(total / 4096 * 4096),
            a.max_mem_share * 100.0,
            fmt_size(limit / 4096 * 4096),
            fmt_size(avail / 4096 * 4096)
        ));
    }

    let machine_swap = swap::plan(machine.as_ref().map(|m| m.swap.as_slice()).unwrap_or(&[]))?;

    // Root: needed to write knobs, set up swap, drop caches.
    let mut needs = vec![];
    for (c, path, v) in &initial {
        let cur = by_name[c.as_str()];
        if host::read_knob(&cur.def).as_deref() != Some(v.as_str()) {
            needs.push(format!("write {path}"));
        }
    }
    if !sets.is_empty() {
        needs.push("set ops write knob files".into());
    }
    if !machine_swap.is_empty() {
        needs.push("set up swap devices".into());
    }
    let mut drops = false;
    for p in &w.processes {
        walk_ops(&p.ops, &mut |_, o| drops |= matches!(o, Op::DropCaches { .. }));
    }
    if drops {
        needs.push("drop_caches".into());
    }
    if !needs.is_empty() && !is_root() {
        return Err(format!("refused: this run needs root ({}); run it as root or leave those out", needs.join(", ")));
    }
    Ok(Plan { w, machine_swap, initial, to_save, notes, lk, footprint: total, drops })
}

struct ProcState {
    name: String,
    start_at: u64,
    pid: i32,
    msg: RawFd,
    ack: RawFd,
    buf: Vec<u8>,
    started: bool,
    finished: bool,
    result: ProcessResult,
    phase: Option<OpenPhase>,
}

/// A phase in progress: its name, the index of its first op, its start (ns, and the
/// process's system time then), and /proc/vmstat at its start.
struct OpenPhase {
    name: String,
    from_i: usize,
    start: u64,
    stime: u64,
    /// the process's run-queue wait (schedstat run_delay) at the start
    rq: u64,
    vm: BTreeMap<String, i64>,
}

const SERIES_VMSTAT: [&str; 8] = [
    "nr_anon_transparent_hugepages",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "pgfault",
    "pswpout",
    "pswpin",
    "thp_split_pmd",
    "compact_stall",
];
const SERIES_MEMINFO: [&str; 3] = ["MemFree", "AnonPages", "AnonHugePages"];

pub fn run(a: &RunArgs) -> Result<Value, RunError> {
    let p = plan(a).map_err(RunError::Input)?;
    if a.dry_run {
        return Ok(
            json!({"ok": true, "notes": p.notes, "knob_writes": p.initial.iter().map(|(c, _, v)| format!("{c}={v}")).collect::<Vec<_>>(),
            "swap": p.machine_swap.iter().map(|s| s.describe()).collect::<Vec<_>>()}),
        );
    }
    let _lock = if is_root() { Some(RunLock::take().map_err(RunError::Input)?) } else { None };
    let mut notes = p.notes.clone();
    if is_root() {
        match safety::repair_stale() {
            Ok(Some(n)) => {
                eprintln!("thplab-live: {n}");
                notes.push(n);
            }
            Ok(None) => {}
            Err(e) => return Err(RunError::Input(e)),
        }
    }
    safety::install_signal_handlers();

    // Save every knob the run may write, before writing any.
    let mut journal = Journal::new();
    for (name, path) in &p.to_save {
        let def = p.lk.iter().find(|k| k.def.name == name).unwrap();
        if let Some(v) = host::read_knob(&def.def) {
            journal.knobs.push(SavedKnob { name: name.clone(), path: path.clone(), value: v });
        }
    }
    let knobs_before = host::knob_values(&p.lk);
    let mut guard = Restorer { journal, owner: std::process::id(), done: false, problems: vec![] };
    if !guard.journal.knobs.is_empty() || !p.machine_swap.is_empty() {
        guard.journal.save().map_err(RunError::Input)?;
    }

    let res = supervise(a, &p, &mut guard, &mut notes, knobs_before);
    let problems = guard.restore();
    match res {
        Ok(mut r) => {
            if !problems.is_empty() {
                return Err(RunError::Failed(format!(
                    "the run finished but restoring the machine failed: {}",
                    problems.join("; ")
                )));
            }
            r["extra"]["restored"] =
                json!(guard.journal.knobs.iter().map(|k| format!("{}={}", k.name, k.value)).collect::<Vec<_>>());
            Ok(r)
        }
        Err(e) => {
            if !problems.is_empty() {
                eprintln!("thplab-live: RESTORE FAILED: {}", problems.join("; "));
            }
            Err(e)
        }
    }
}

fn check_abort(deadline: Option<u64>, what: &str) -> Result<(), RunError> {
    let s = safety::signalled();
    if s != 0 {
        return Err(RunError::Aborted(
            format!("interrupted by {} {what}; the machine was restored", safety::signal_name(s)),
            128 + s,
        ));
    }
    if let Some(d) = deadline {
        if now_ns() > d {
            return Err(RunError::Aborted(format!("time limit reached {what}; the machine was restored"), 3));
        }
    }
    Ok(())
}

fn kill_all(procs: &mut [ProcState]) {
    for ps in procs.iter_mut() {
        if ps.started && !ps.finished {
            unsafe { libc::kill(ps.pid, libc::SIGKILL) };
        }
    }
    for ps in procs.iter_mut() {
        if ps.started && !ps.finished {
            let mut st = 0;
            unsafe { libc::waitpid(ps.pid, &mut st, 0) };
            ps.finished = true;
        }
    }
}

fn supervise(
    a: &RunArgs,
    p: &Plan,
    guard: &mut Restorer,
    notes: &mut Vec<String>,
    knobs_before: BTreeMap<String, String>,
) -> Result<Value, RunError> {
    let t_begin = now_ns();
    // the 1-minute load average when the run starts (other tasks on a shared machine)
    let load1_before: Option<f64> =
        read_trim("/proc/loadavg").and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()));
    let deadline = a.timeout_s.map(|t| t_begin + (t * 1e9) as u64);
    let w = &p.w;
    // the guest's reported KiB as the set-up begins: a reporting pass that another run's
    // frees requested can run under this one's probe and back-fill (validate.py, stop 58)
    let reported_kib_begin = host::reported_kib();

    // Knobs, then swap devices.
    for (name, path, v) in &p.initial {
        let def = &p.lk.iter().find(|k| k.def.name == name).unwrap().def;
        if host::read_knob(def).as_deref() == Some(v.as_str()) {
            continue;
        }
        write_file(path, v).map_err(|e| RunError::Failed(format!("writing {v} to {path}: {e}")))?;
    }
    check_abort(deadline, "while setting knobs")?;
    let swap_desc: Vec<Value> = swap::apply(&p.machine_swap, &mut guard.journal).map_err(RunError::Failed)?;
    check_abort(deadline, "while setting up swap")?;
    let zram_devs: Vec<String> = p
        .machine_swap
        .iter()
        .filter_map(|s| if let SwapPlan::Zram { dev, .. } = s { Some(dev.clone()) } else { None })
        .collect();

    *ZRAM_DEVS.lock().unwrap() = zram_devs.clone();
    // Each workload process runs pinned to the CPU the model gives it (host::process_cpu),
    // and the probe and the back-fill (a child of the runner's: it inherits the pin) run on
    // the first process's CPU: the THPs the back-fill frees go to that CPU's per-CPU list
    // first (pcp_allowed_order(): order 9 is a per-CPU order), where a process on the other
    // CPU would not find them and would take reported blocks instead (split_underused_511's
    // 256 THP faults: 2-10 % host refaults in each of 6 runs unpinned, in none of 6 pinned;
    // docs/page_reporting.md)
    let cpus = host::allowed_cpus();
    let first = w.first_to_start();
    let pinned = host::pin_to(host::process_cpu(&cpus, first));
    // the free blocks below the reporting order backed again (host::back_small_free_blocks):
    // the model takes every free page that is not PageReported as backed
    // (and the reporting pass its frees requested waited for)
    let small_backed = host::back_small_free_blocks(host::page_reporting_order());
    // the guest's reported KiB as the free lists are read: what it reports from here to the
    // run's start is what the model's start does not hold
    let reported_kib_found = host::reported_kib();
    // the free lists and what of them the guest has reported, as found (before the probe
    // and the back-fill, which the model replays on them: thplab.free_page_reporting_start
    // =found, docs/page_reporting.md)
    let (buddy_prefill, pagetype_prefill, reported_prefill) = if host::free_page_reporting() {
        (read_file("/proc/buddyinfo").ok(), read_file("/proc/pagetypeinfo").ok(), host::reported_free_blocks())
    } else {
        (None, None, None)
    };
    // the per-CPU lists, and the zones' managed pages (host::zone_managed: this guest grows
    // them lazily), from one reading of /proc/zoneinfo
    let zoneinfo = host::zoneinfo();
    let pcp_prefill = host::pcp_lists(&zoneinfo);
    let managed_prefill = host::zone_managed(&zoneinfo);
    // and the pages in use, page by page (host::pages_in_use): where the free blocks'
    // buddies are held
    let in_use_prefill = host::pages_in_use();
    // the host's speed now (before the back-fill, which places the run's first blocks)
    let probe_fault_4k_ns = host::fault_4k_probe_ns(host::PROBE_BYTES);
    // room on this CPU's per-CPU list for the back-fill's THPs (host::hold_pcp_room), held
    // until its process has exited and freed from this CPU
    let room = host::hold_pcp_room(host::process_cpu(&cpus, first), p.footprint);
    let pcp_room_pages = room.pages;
    // memory the host took back (free page reporting) backed again, as the model starts
    let backed_before_run = host::back_free_memory(p.footprint, thplab_workload::footprint::uses_madv_collapse(&p.w));
    drop(room);
    if pinned {
        host::pin_to_set(&cpus);
    }
    let reported_kib_before = host::reported_kib();
    check_abort(deadline, "while backing free memory")?;
    let knobs_at_start = host::knob_values(&p.lk);
    let (release, version) = host::uname();
    let buddy_before = read_file("/proc/buddyinfo").unwrap_or_default();
    let mthp_before = host::mthp_stats();
    let khp_before = host::khugepaged_stats();
    let zram_before: BTreeMap<String, Value> =
        zram_devs.iter().filter_map(|d| host::zram_mm_stat(d).map(|v| (d.clone(), v))).collect();
    let swaps_text = read_file("/proc/swaps").unwrap_or_default();
    let kthreads = host::kthreads();
    let kthreads_before = host::kthread_cpu_ns_of(&kthreads);
    *KTHREADS.lock().unwrap() = kthreads.clone();
    // A workload that writes drop_caches=2 has the slab shrinkers prune every dentry and
    // inode cached since the last drop: those of the files this run's setup just read (the
    // knob and stats files in sysfs, /proc) and of whatever ran before it, work of the
    // harness, not of the workload, which the model's drop_slab_ns (calibrated on drops
    // with nothing cached) leaves out. Drop them now, before the counters' first snapshot;
    // the phase ends read a few files only (vmstat, buddyinfo, the kthreads' stat)
    if p.drops {
        write_file("/proc/sys/vm/drop_caches", "2")
            .map_err(|e| RunError::Failed(format!("drop_caches before the run: {e}")))?;
    }
    PHASE_ENDS.lock().unwrap().clear();
    // the per-CPU lists as the run starts (host::pcp_lists; MachineSpec::pcp)
    let zoneinfo = host::zoneinfo();
    let pcp_before = host::pcp_lists(&zoneinfo);
    let managed_before = host::zone_managed(&zoneinfo);
    let vm_before = vmstat();
    let t0 = now_ns();

    let mut procs: Vec<ProcState> = w
        .processes
        .iter()
        .map(|pr| ProcState {
            name: pr.name.clone(),
            start_at: t0 + pr.start.0,
            pid: -1,
            msg: -1,
            ack: -1,
            buf: vec![],
            started: false,
            finished: false,
            result: ProcessResult { name: pr.name.clone(), ..Default::default() },
            phase: None,
        })
        .collect();
    let mut phases: Vec<PhaseResult> = vec![];
    let mut thp_lat: Vec<u64> = vec![];
    let mut fault_lat: Vec<u64> = vec![];
    let mut phase_lat: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut series = Series::default();
    let interval = w.record.series_interval.0;
    let mut next_sample = if interval > 0 { t0 } else { u64::MAX };
    // khugepaged runs at nice 19: on a shared machine it waits for the CPU; its run-queue wait
    // (schedstat) is sampled so that `thplab validate` can compare collapse times honestly.
    // Its pid is the one the scan before the drop found: a second scan of /proc here, inside
    // the run, cached a dentry and an inode for every process's directory and comm, which a
    // workload's own drop_caches=2 then pruned (split_underused_511's p:shrink: ~480 objects
    // and 0.55-0.78 ms live against ~0.1 ms for its 256 queued THPs alone)
    let khugepaged_pid: Option<u32> =
        kthreads.iter().find(|(comm, _)| comm == "khugepaged").and_then(|(_, pid)| pid.parse().ok());
    if interval > 0 {
        series.columns = std::iter::once("t_ns".to_string())
            .chain(SERIES_MEMINFO.iter().map(|s| format!("{s}_kB")))
            .chain(SERIES_VMSTAT.iter().map(|s| s.to_string()))
            // per process, from /proc/PID/smaps_rollup (the model's series has the same)
            .chain(
                w.processes
                    .iter()
                    .flat_map(|p| [format!("AnonPages_kB[{}]", p.name), format!("AnonHugePages_kB[{}]", p.name)]),
            )
            .chain(khugepaged_pid.map(|_| "khugepaged_run_delay_ns".to_string()))
            .collect();
    }

    let r = (|| -> Result<(), RunError> {
        loop {
            check_abort(deadline, "during the run")?;
            let now = now_ns();
            if now >= next_sample {
                let mi = meminfo();
                let vm = vmstat();
                let mut row = vec![(now - t0) as f64];
                row.extend(SERIES_MEMINFO.iter().map(|k| mi.get(*k).copied().unwrap_or(0) as f64));
                row.extend(SERIES_VMSTAT.iter().map(|k| vm.get(*k).copied().unwrap_or(0) as f64));
                for ps in &procs {
                    let sm = if ps.started && !ps.finished && ps.pid > 0 {
                        parse_kb(&read_file(&format!("/proc/{}/smaps_rollup", ps.pid)).unwrap_or_default())
                    } else {
                        BTreeMap::new()
                    };
                    row.push(sm.get("Anonymous").copied().unwrap_or(0) as f64);
                    row.push(sm.get("AnonHugePages").copied().unwrap_or(0) as f64);
                }
                if let Some(pid) = khugepaged_pid {
                    row.push(host::run_delay_ns(pid) as f64);
                }
                series.rows.push(row);
                next_sample = now + interval;
            }
            for (pi, ps) in procs.iter_mut().enumerate() {
                if !ps.started && now >= ps.start_at {
                    start_process(pi, ps, w, t0, host::process_cpu(&cpus, pi))?;
                }
            }
            if procs.iter().all(|ps| ps.finished) {
                return Ok(());
            }
            let mut fds: Vec<libc::pollfd> = procs
                .iter()
                .filter(|ps| ps.started && !ps.finished)
                .map(|ps| libc::pollfd { fd: ps.msg, events: libc::POLLIN, revents: 0 })
                .collect();
            let mut wait_ms: u64 = 50;
            for ps in &procs {
                if !ps.started {
                    wait_ms = wait_ms.min(ps.start_at.saturating_sub(now) / 1_000_000);
                }
            }
            if interval > 0 {
                wait_ms = wait_ms.min(next_sample.saturating_sub(now) / 1_000_000);
            }
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms as i32) };
            if n <= 0 {
                continue;
            }
            for f in fds.iter().filter(|f| f.revents != 0) {
                let ps = procs.iter_mut().find(|ps| ps.msg == f.fd).unwrap();
                let mut b = [0u8; 65536];
                let k = unsafe { libc::read(ps.msg, b.as_mut_ptr() as *mut _, b.len()) };
                if k > 0 {
                    // only the bytes just read can hold a new line's end (the latencies' line
                    // is tens of MB)
                    let mut from = ps.buf.len();
                    ps.buf.extend_from_slice(&b[..k as usize]);
                    while let Some(pos) = ps.buf[from..].iter().position(|&c| c == b'\n').map(|p| p + from) {
                        let line: Vec<u8> = ps.buf.drain(..=pos).collect();
                        from = 0;
                        let bad = |e: serde_json::Error| {
                            RunError::Failed(format!("bad message from process {}: {e}", ps.name))
                        };
                        if line.starts_with(LAT_PREFIX) {
                            let lat: LatMsg = serde_json::from_slice(&line).map_err(bad)?;
                            handle_lat(&ps.name, lat, (&mut thp_lat, &mut fault_lat, &mut phase_lat));
                        } else {
                            let v: Value = serde_json::from_slice(&line).map_err(bad)?;
                            handle_msg(ps, &v, t0, &mut phases);
                        }
                    }
                } else if k == 0 || (k < 0 && errno() != libc::EINTR) {
                    // The child is gone.
                    reap(ps, t0, &mut phases);
                }
            }
        }
    })();
    if let Err(e) = r {
        kill_all(&mut procs);
        for ps in &procs {
            unsafe {
                if ps.msg >= 0 {
                    libc::close(ps.msg);
                }
                if ps.ack >= 0 {
                    libc::close(ps.ack);
                }
            }
        }
        return Err(e);
    }
    let t_end = now_ns();
    let vm_after = vmstat();
    let meminfo_end = meminfo();
    let buddy_after = read_file("/proc/buddyinfo").unwrap_or_default();
    let managed_after = host::zone_managed(&host::zoneinfo());
    let kthreads_after = host::kthread_cpu_ns_of(&kthreads);
    let pagetypeinfo = read_file("/proc/pagetypeinfo").unwrap_or_default();
    let mthp_after = host::mthp_stats();
    let khp_after = host::khugepaged_stats();
    let zram_after: BTreeMap<String, Value> =
        zram_devs.iter().filter_map(|d| host::zram_mm_stat(d).map(|v| (d.clone(), v))).collect();
    for ps in &procs {
        unsafe {
            libc::close(ps.msg);
            libc::close(ps.ack);
        }
    }

    let lk_found: Vec<&str> = p.lk.iter().filter(|k| k.present).map(|k| k.def.name).collect();
    let lk_missing: Vec<&str> =
        p.lk.iter().filter(|k| k.def.kind != KnobKind::Policy && !k.present).map(|k| k.def.name).collect();
    let mut latency = BTreeMap::new();
    if w.record.fault_latency {
        latency.insert("thp_fault".to_string(), percentiles(&mut thp_lat));
        latency.insert("fault".to_string(), percentiles(&mut fault_lat));
        // per phase: "thp_fault@PROCESS:PHASE"
        for (k, mut v) in phase_lat {
            latency.insert(k, percentiles(&mut v));
        }
    }
    phases.sort_by_key(|ph| (ph.start_ns, ph.name.clone()));
    let mut extra: BTreeMap<String, Value> = BTreeMap::new();
    let zd: BTreeMap<String, Value> = zram_devs
        .iter()
        .map(|d| (d.clone(), json!({"before": zram_before.get(d), "after": zram_after.get(d)})))
        .collect();
    if !zd.is_empty() {
        extra.insert("zram_mm_stat".into(), json!(zd));
        let ph: Vec<Value> = ZRAM_PHASES
            .lock()
            .unwrap()
            .drain(..)
            .map(|(n, v)| json!({"phase_end": n, "device": v["device"], "mm_stat": v["mm_stat"]}))
            .collect();
        extra.insert("zram_mm_stat_phase_end".into(), json!(ph));
    }
    extra.insert("mthp_stats_delta".into(), json!(delta(&mthp_before, &mthp_after)));
    // the model's shape: every anonymous size, every stat, `hugepages-<size>kB/stats/<stat>`
    let (mb, ma) = (&mthp_before, &mthp_after);
    let mthp_full: BTreeMap<String, i64> = thplab_workload::knobs::MTHP_ANON_ORDERS
        .flat_map(|o| {
            let dir = thplab_workload::knobs::MTHP_SIZE_DIRS[o as usize];
            thplab_workload::knobs::MTHP_STATS.iter().filter_map(move |s| {
                let k = format!("{dir}/{s}");
                let b = mb.get(&k)?;
                let a = ma.get(&k)?;
                Some((format!("{dir}/stats/{s}"), a - b))
            })
        })
        .collect();
    extra.insert("mthp_stats".into(), json!(mthp_full));
    extra.insert("khugepaged_delta".into(), json!(delta(&khp_before, &khp_after)));
    extra.insert("knobs_before_run".into(), json!(knobs_before));
    if p.drops {
        extra.insert("drop_caches_before_run".into(), json!(2));
    }
    // the model's shape: CPU time of kswapd, kcompactd and khugepaged over the run
    let kt: Vec<Value> = kthreads_after
        .iter()
        .map(|(n, ns)| json!({"name": n, "cpu_ns": ns.saturating_sub(kthreads_before.get(n).copied().unwrap_or(0))}))
        .collect();
    extra.insert("kthreads".into(), json!(kt));
    extra.insert("phase_end".into(), json!(std::mem::take(&mut *PHASE_ENDS.lock().unwrap())));
    extra.insert("setup_ns".into(), json!(t0 - t_begin));
    // What other tasks on a shared machine cost each phase: its process's run-queue wait.
    // `thplab validate` compares the model with elapsed time less this wait.
    let rd: BTreeMap<String, u64> = PHASE_RUN_DELAY.lock().unwrap().drain(..).collect();
    extra.insert("phase_run_delay_ns".into(), json!(rd));
    // the host's speed around each phase: host::cpu_probe_ns before and after it (validate
    // sets them against the profile's probe_cpu_ns, docs/host_speed.md)
    let cp: BTreeMap<String, [u64; 2]> = PHASE_CPU_PROBE.lock().unwrap().drain(..).collect();
    extra.insert("phase_cpu_probe_ns".into(), json!(cp));
    extra.insert("load1_at_start".into(), json!(load1_before));
    if interval > 0 {
        notes.push("series: sampled in wall-clock time".into());
    }
    let result = RunResult {
        thplab_version: thplab_workload::VERSION.into(),
        backend: "kernel".into(),
        workload: w.name.clone(),
        seed: w.seed,
        machine: host::machine_found(&swap_desc),
        knobs: knobs_at_start.clone(),
        cost_profile: Value::Null,
        kernel: json!({
            "release": release,
            "version": version,
            "knobs_found": lk_found,
            "knobs_missing": lk_missing,
            "swaps": swaps_text,
            "free_page_reporting": host::free_page_reporting(),
            "backed_before_run_bytes": backed_before_run,
            // the small free blocks backed before the free lists were read, and what of them
            // refaulted in the host (host::back_small_free_blocks)
            "small_free_backed_kib": small_backed.map(|b| b.backed_kib),
            "small_free_refaulted_kib": small_backed.map(|b| b.refaulted_kib),
            // the wait for the reporting pass that step's frees requested, and the passes
            // that ended in it
            "small_free_pass_wait_ns": small_backed.and_then(|b| b.pass_wait_ns),
            "small_free_passes_waited": small_backed.map(|b| b.passes_waited),
            // /proc/buddyinfo, /proc/pagetypeinfo and the reported free blocks
            // (host::reported_free_blocks) before the probe and the back-fill
            "buddyinfo_prefill": buddy_prefill,
            "pagetypeinfo_prefill": pagetype_prefill,
            "reported_prefill": reported_prefill,
            "in_use_prefill": in_use_prefill,
            // the per-CPU lists before the back-fill and as the run started
            "pcp_prefill": pcp_prefill,
            "pcp_before": pcp_before,
            // a 4 KiB write fault's time as the run started (host::fault_4k_probe_ns)
            "probe_fault_4k_ns": probe_fault_4k_ns,
            // the CPU each process was pinned to, and where the probe and back-fill ran
            "process_cpus": (0..w.processes.len()).map(|i| host::process_cpu(&cpus, i)).collect::<Vec<_>>(),
            "backfill_cpu": pinned.then(|| host::process_cpu(&cpus, first)),
            // the 4 KiB pages held off that CPU's per-CPU list through the back-fill
            // (host::hold_pcp_room)
            "pcp_room_pages": pcp_room_pages,
            // KiB the guest reported to its host during the set-up (knobs, swap, the probe
            // and the back-fill: memory backed for the run can be handed back before it starts)
            "reported_in_setup_kib": reported_kib_begin.zip(reported_kib_before).map(|(a, b)| b.saturating_sub(a)),
            // of it, what the guest reported after the free lists were read (under the probe
            // and the back-fill, which the model replays on the lists as read)
            "reported_after_found_kib": reported_kib_found.zip(reported_kib_before).map(|(a, b)| b.saturating_sub(a)),
            // KiB the guest reported to its host while the run went on (this host's counter)
            "reported_during_run_kib": reported_kib_before.zip(host::reported_kib()).map(|(a, b)| b.saturating_sub(a)),
            // KiB of fresh memory the zones grew by (deferred_init=lazy, host::zone_managed)
            // in the set-up and during the run: memory the guest touches for the first time
            "managed_prefill": managed_prefill.iter().map(|(n, z, m)| json!({"node": n, "zone": z, "managed": m})).collect::<Vec<_>>(),
            "grown_in_setup_kib": host::grown_kib(&managed_prefill, &managed_before),
            "grown_during_run_kib": host::grown_kib(&managed_before, &managed_after),
            "mem_available_kb": meminfo().get("MemAvailable"),
            "runner": format!("thplab-live {}", thplab_workload::VERSION),
            "notes": notes,
        }),
        sim_time_ns: t_end - t0,
        phases,
        vmstat_delta: delta(&vm_before, &vm_after),
        vmstat: vm_after,
        meminfo: meminfo_end,
        buddyinfo_before: buddy_before,
        buddyinfo_after: buddy_after.clone(),
        pagetypeinfo,
        fragmentation: host::fragmentation(&buddy_after),
        processes: procs.into_iter().map(|ps| ps.result).collect(),
        latency,
        series,
        trace: vec![],
        extra,
    };
    Ok(serde_json::to_value(&result).unwrap())
}

fn pipe() -> Result<(RawFd, RawFd), RunError> {
    let mut fds = [0; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(RunError::Failed(format!("pipe2: {}", errno_name(errno()))));
    }
    Ok((fds[0], fds[1]))
}

fn start_process(pi: usize, ps: &mut ProcState, w: &Workload, t0: u64, cpu: usize) -> Result<(), RunError> {
    let (msg_r, msg_w) = pipe()?;
    let (ack_r, ack_w) = pipe()?;
    let ppid = unsafe { libc::getpid() };
    // timestamp before fork: the child may record its first phase marker before the
    // parent runs again, and the implicit main phase must not end before it starts
    let forked_at = now_ns();
    // forked onto its CPU: a child that first ran elsewhere would keep that CPU in its
    // mm_cpumask and batch the TLB flushes of reclaim, migration and splits (host::fork_on)
    let pid = host::fork_on(cpu);
    if pid < 0 {
        return Err(RunError::Failed(format!("fork: {}", errno_name(errno()))));
    }
    if pid == 0 {
        // The child: never returns into the supervisor's code.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if libc::getppid() != ppid {
                libc::_exit(122);
            }
            libc::close(msg_r);
            libc::close(ack_w);
        }
        safety::default_signal_handlers();
        // on its CPU for the whole run, as the model runs it: fork_on's affinity, inherited
        // (a refusal leaves it unpinned)
        let name =
            std::ffi::CString::new(format!("thplab:{}", w.processes[pi].name).chars().take(15).collect::<String>())
                .unwrap_or_default();
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong) };
        let c = Child {
            proc_index: pi,
            process: &w.processes[pi],
            seed: w.seed,
            fault_latency: w.record.fault_latency,
            to_parent: msg_w,
            from_parent: ack_r,
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.run()));
        let _ = r;
        unsafe { libc::_exit(101) };
    }
    unsafe {
        libc::close(msg_w);
        libc::close(ack_r);
    }
    let now = forked_at;
    ps.pid = pid;
    ps.msg = msg_r;
    ps.ack = ack_w;
    ps.started = true;
    ps.result.pid = pid as u32;
    ps.result.start_ns = now - t0;
    ps.phase =
        Some(OpenPhase { name: format!("{}:main", ps.name), from_i: 0, start: now, stime: 0, rq: 0, vm: vmstat() });
    Ok(())
}

static ZRAM_DEVS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static ZRAM_PHASES: std::sync::Mutex<Vec<(String, Value)>> = std::sync::Mutex::new(Vec::new());
/// Per phase, the time its process waited for a CPU held by other tasks (schedstat run_delay).
static PHASE_RUN_DELAY: std::sync::Mutex<Vec<(String, u64)>> = std::sync::Mutex::new(Vec::new());
/// Each closed phase's host::cpu_probe_ns() just before it started and just after it ended.
static PHASE_CPU_PROBE: std::sync::Mutex<Vec<(String, [u64; 2])>> = std::sync::Mutex::new(Vec::new());
/// Per phase end: /proc/buddyinfo and the memory kernel threads' CPU time so far.
static PHASE_ENDS: std::sync::Mutex<Vec<Value>> = std::sync::Mutex::new(Vec::new());
/// The run's kswapd/kcompactd/khugepaged threads (comm, pid), found once at its start.
static KTHREADS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The shortest phase after which close_phase() reads the reported free blocks: 1 s, so
/// that the reading's ~6 ms is under 1 % of the phase before it.
const REPORTED_BLOCKS_MIN_PHASE_NS: u64 = 1_000_000_000;

fn close_phase(
    ps: &mut ProcState,
    end_i: usize,
    end: (u64, u64, u64),
    probe: Option<[u64; 2]>,
    t0: u64,
    phases: &mut Vec<PhaseResult>,
) {
    let (end_ns, end_stime, end_rq) = end;
    if let Some(OpenPhase { name, from_i, start, stime, rq, vm }) = ps.phase.take() {
        // A "main" phase with no ops before the first marker is not reported.
        if !(name.ends_with(":main") && from_i == 0 && end_i == 0) {
            for d in ZRAM_DEVS.lock().unwrap().iter() {
                if let Some(v) = host::zram_mm_stat(d) {
                    ZRAM_PHASES.lock().unwrap().push((name.clone(), json!({"device": d, "mm_stat": v})));
                }
            }
            PHASE_RUN_DELAY.lock().unwrap().push((name.clone(), end_rq.saturating_sub(rq)));
            if let Some(p) = probe {
                PHASE_CPU_PROBE.lock().unwrap().push((name.clone(), p));
            }
            PHASE_ENDS.lock().unwrap().push(json!({
                "phase_end": name,
                "buddyinfo": read_file("/proc/buddyinfo").unwrap_or_default(),
                "kthreads_cpu_ns": host::kthread_cpu_ns_of(&KTHREADS.lock().unwrap()),
                // the per-CPU lists then (free pages held off the buddy lists, per CPU)
                "pcp": host::pcp_lists(&host::zoneinfo()),
                // on a reporting guest: the KiB reported so far and the free blocks reported
                // then (host::reported_free_blocks), against the model's (page_reporting.rs);
                // the blocks take ~6 ms to read (a kpageflags sample per 2 MiB of 23 GiB),
                // which would sit between a short phase and the next: after long phases only
                "reported_kib": host::reported_kib(),
                "reported": if end_ns.saturating_sub(start) >= REPORTED_BLOCKS_MIN_PHASE_NS && host::free_page_reporting() {
                    host::reported_free_blocks()
                } else {
                    None
                },
            }));
            phases.push(PhaseResult {
                name,
                process: ps.name.clone(),
                start_ns: start.saturating_sub(t0),
                end_ns: end_ns.saturating_sub(t0),
                sys_ns: end_stime.saturating_sub(stime),
                vmstat_delta: delta(&vm, &vmstat()),
            });
        }
    }
}

fn ack(ps: &ProcState) {
    let b = [1u8];
    unsafe { libc::write(ps.ack, b.as_ptr() as *const _, 1) };
}

/// The child's clock, system time and run-queue wait when the phase it now ends began (after
/// the supervisor's snapshot at the boundary): the phase's own time starts there.
fn set_phase_start(ps: &mut ProcState, v: &Value) {
    let Some([ns, stime, rq]) = serde_json::from_value::<[u64; 3]>(v["start"].clone()).ok() else { return };
    if let Some(ph) = ps.phase.as_mut() {
        ph.start = ns;
        ph.stime = stime;
        ph.rq = rq;
    }
}

/// The start of the child's latencies line (child.rs send_latencies, after its "done").
pub(crate) const LAT_PREFIX: &[u8] = br#"{"t":"lat""#;

/// A process's fault latencies in ns, in the order faulted, and the phase marks (name, THP
/// index, fault index) where each phase began. Parsed as typed vectors: a JSON value per
/// latency took ~100 bytes each of the supervisor's memory.
#[derive(serde::Deserialize)]
pub(crate) struct LatMsg {
    thp_fault: Vec<u64>,
    fault: Vec<u64>,
    #[serde(default)]
    marks: Vec<(String, usize, usize)>,
}

pub(crate) fn handle_lat(
    proc_name: &str,
    lat: LatMsg,
    (thp_lat, fault_lat, phase_lat): (&mut Vec<u64>, &mut Vec<u64>, &mut BTreeMap<String, Vec<u64>>),
) {
    let LatMsg { thp_fault: thp, fault: flt, mut marks } = lat;
    if marks.is_empty() {
        marks.push(("main".into(), 0, 0));
    }
    // split by the phase marks the child reported: (name, thp index, fault index)
    for (i, (name, a, b)) in marks.iter().enumerate() {
        let (a2, b2) = marks.get(i + 1).map_or((thp.len(), flt.len()), |m| (m.1, m.2));
        for (kind, src, lo, hi) in [("thp_fault", &thp, *a, a2), ("fault", &flt, *b, b2)] {
            if hi > lo && hi <= src.len() {
                let key = format!("{kind}@{proc_name}:{name}");
                phase_lat.entry(key).or_default().extend_from_slice(&src[lo..hi]);
            }
        }
    }
    thp_lat.extend(thp);
    fault_lat.extend(flt);
}

fn handle_msg(ps: &mut ProcState, v: &Value, t0: u64, phases: &mut Vec<PhaseResult>) {
    let u = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let probe = serde_json::from_value::<[u64; 2]>(v["cpu_probe"].clone()).ok();
    match v["t"].as_str().unwrap_or("") {
        "phase" => {
            set_phase_start(ps, v);
            let i = u("i") as usize;
            close_phase(ps, i, (u("ns"), u("stime"), u("rq")), probe, t0, phases);
            ps.phase = Some(OpenPhase {
                name: format!("{}:{}", ps.name, v["name"].as_str().unwrap_or("")),
                from_i: i + 1,
                start: u("ns"),
                stime: u("stime"),
                rq: u("rq"),
                vm: vmstat(),
            });
            ack(ps);
        }
        "err" => ps.result.errors.push(OpError {
            op_index: u("i") as usize,
            path: v["path"].as_str().map(str::to_string),
            op: v["op"].as_str().unwrap_or("").into(),
            errno: v["errno"].as_str().unwrap_or("").into(),
            message: v["msg"].as_str().unwrap_or("").into(),
        }),
        "done" => {
            set_phase_start(ps, v);
            let n = usize::MAX;
            close_phase(ps, n, (u("ns"), u("stime"), u("rq")), probe, t0, phases);
            ps.result.end_ns = u("ns").saturating_sub(t0);
            ps.result.access_ns = u("access_ns");
            let t = read_file(&format!("/proc/{}/smaps_rollup", ps.pid)).unwrap_or_default();
            ps.result.smaps_rollup = parse_kb(&t);
            ack(ps);
        }
        _ => {}
    }
}

fn reap(ps: &mut ProcState, t0: u64, phases: &mut Vec<PhaseResult>) {
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(ps.pid, &mut status, 0, &mut ru) };
    ps.finished = true;
    let now = now_ns();
    if ps.phase.is_some() {
        // Died without reporting its end.
        close_phase(ps, usize::MAX, (now, 0, 0), None, t0, phases);
        ps.result.end_ns = now - t0;
    }
    if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        let oom = s == libc::SIGKILL;
        ps.result.killed = Some(if oom { "SIGKILL (OOM killer?)".into() } else { safety::signal_name(s).to_string() });
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
        ps.result.killed = Some(format!("exited with status {}", libc::WEXITSTATUS(status)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child's latencies line, written after its "done", is recognised by its prefix,
    /// parses as typed vectors and is split at the phase marks.
    #[test]
    fn latencies_line_is_recognised_and_split_by_phase() {
        let mut fds = [0i32; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let thp = [5u64, 6, 7];
        let flt: Vec<u64> = (0..10_000).collect();
        let marks = vec![("main".to_string(), 0, 0), ("fault".to_string(), 1, 4000)];
        let writer = std::thread::spawn(move || {
            crate::child::send_latencies(fds[1], &thp, &flt, &marks);
            unsafe { libc::close(fds[1]) };
        });
        let mut line = vec![];
        let mut b = [0u8; 4096];
        loop {
            let k = unsafe { libc::read(fds[0], b.as_mut_ptr() as *mut _, b.len()) };
            if k <= 0 {
                break;
            }
            line.extend_from_slice(&b[..k as usize]);
        }
        writer.join().unwrap();
        unsafe { libc::close(fds[0]) };
        assert!(line.starts_with(LAT_PREFIX) && line.ends_with(b"\n"));
        assert_eq!(line.iter().filter(|&&c| c == b'\n').count(), 1);
        let lat: LatMsg = serde_json::from_slice(&line).unwrap();
        let (mut t, mut f, mut by) = (vec![], vec![], BTreeMap::new());
        handle_lat("p", lat, (&mut t, &mut f, &mut by));
        assert_eq!(t, vec![5, 6, 7]);
        assert_eq!(f.len(), 10_000);
        assert_eq!(by["thp_fault@p:main"], vec![5]);
        assert_eq!(by["thp_fault@p:fault"], vec![6, 7]);
        assert_eq!(by["fault@p:main"].len(), 4000);
        assert_eq!(by["fault@p:fault"].len(), 6000);
        assert_eq!(by["fault@p:fault"][0], 4000);
    }
}
