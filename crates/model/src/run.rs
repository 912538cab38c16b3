//! The engine: a deterministic discrete-event loop running the workload's processes
//! on the machine's simulated CPUs (process i is pinned to CPU i mod ncpus; a CPU runs
//! one step at a time, FIFO by ready time then pid). Every operation is cut into steps
//! (a 2 MiB chunk of a write, a batch of accesses, a batch of munmap pieces); a step's
//! kernel work is charged from the cost profile and advances the process's clock.
//! Kernel threads (kswapd, kcompactd, khugepaged) join as timed tasks in later issues.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::kthread::KthreadNext;
use crate::memory::Fault;
use crate::mm_types::*;
use crate::mmap::{Mm, VM_READ, VM_WRITE};
use crate::tlb::Tlb;
use crate::trace::Trace;
use crate::vmstat;
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs;
use thplab_workload::machine::MachineSpec;
use thplab_workload::result::*;
use thplab_workload::trace::trace_mask;
use thplab_workload::workload::{AccessPattern, MachineArg, Op, Prot, Workload};

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub machine: Option<MachineSpec>,
    pub knobs: Vec<(String, String)>,
    pub costs: Option<CostProfile>,
    pub seed: Option<u64>,
    pub check: bool,
    /// Tracepoints to export instead of the workload's record.trace (`thplab run --trace`).
    pub trace: Option<Vec<String>>,
}

pub use thplab_workload::rng::{Rng, Zipf};

struct Phase {
    name: String,
    start: u64,
    sys: u64,
    snap: BTreeMap<String, i64>,
}

struct Task {
    pid: usize,
    /// the process's address space
    mm: MmId,
    cpu: u32,
    ready: u64,
    op: usize,
    /// progress within the current op (piece/page/access index)
    cursor: u64,
    regions: BTreeMap<String, (u64, u64)>,
    kallocs: BTreeMap<String, KallocSet>,
    phase: Option<Phase>,
    errors: Vec<OpError>,
    access_ns: u64,
    sys_ns: u64,
    done: bool,
    start_ns: u64,
    end_ns: u64,
    rng: Rng,
    killed: Option<String>,
    smaps: BTreeMap<String, u64>,
    /// access translation cache: (page key, pfn, huge, tlb flush generation)
    xlat: Option<(u64, u64, bool, u64)>,
    access_left_ns: Option<u64>,
}

/// A `kalloc` set: its size in bytes and its blocks, (pfn, order) each, None once freed.
type KallocSet = (u64, Vec<Option<(u64, u32)>>);

/// Page steps per engine step for page-wise ops (one 2 MiB chunk).
const PAGES_PER_STEP: u64 = HPAGE_PMD_NR;
const PIECES_PER_STEP: u64 = 64;
const ACCESSES_PER_STEP: u64 = 16384;
/// With --check, the invariant checker runs every this many engine steps.
const CHECK_EVERY_STEPS: u64 = 4096;

pub fn resolve_machine(w: &Workload, o: &RunOptions) -> Result<MachineSpec, String> {
    if let Some(m) = &o.machine {
        m.validate()?;
        return Ok(m.clone());
    }
    match &w.machine {
        Some(MachineArg::Shorthand(s)) => MachineSpec::parse_shorthand(s),
        Some(MachineArg::Spec(m)) => Ok(m.clone()),
        None => MachineSpec::parse_shorthand("24G"),
    }
}

pub fn run(w: &Workload, o: &RunOptions) -> Result<RunResult, String> {
    run_keep(w, o).map(|(r, _)| r)
}

/// Like `run`, also returning the kernel's final state (for benchmarks and tests).
// TODO(issue 13 item 5): the engine split (event queue, tasks, op handlers, report) brings
// this under the 120-line limit.
#[allow(clippy::too_many_lines)]
pub fn run_keep(w: &Workload, o: &RunOptions) -> Result<(RunResult, Kernel), String> {
    let machine = resolve_machine(w, o)?;
    let mut ks = knobs::defaults();
    for (k, v) in &w.knobs {
        ks.insert(k.clone(), v.clone());
    }
    for (k, v) in &o.knobs {
        let (c, v) = knobs::check_assignment(k, v)?;
        if matches!(c.as_str(), "vm.compact_memory" | "vm.drop_caches") {
            return Err(format!("knob `{c}` is a trigger; use it as a workload operation (set) instead"));
        }
        ks.insert(c, v);
    }
    let costs = o.costs.clone().unwrap_or_default();
    costs.validate()?;
    let seed = o.seed.unwrap_or(w.seed);
    let mut k = Kernel::new(&machine, ks.clone(), costs, seed)?;
    k.rec.record_latency = w.record.fault_latency;
    k.rec.trace = match &o.trace {
        Some(t) => Trace::new(trace_mask(t, "--trace")?),
        None => Trace::new(trace_mask(&w.record.trace, "workload.record.trace")?),
    };
    let buddy_before = k.pm.buddyinfo();
    let boot_snap = k.vmstat_snapshot();
    let zram_before = k.zram_mm_stats();
    let ncpus = k.pm.nr_cpus.max(1);
    let mut tasks: Vec<Task> = vec![];
    for (pid, p) in w.processes.iter().enumerate() {
        let cpu = pid as u32 % ncpus;
        let node = k.pm.nodes.iter().position(|n| n.cpus.contains(&cpu)).unwrap_or(0);
        k.mms.push(Mm::new(MmId(pid as u32), &p.name, cpu, node, Tlb::new(&machine.tlb)));
        tasks.push(Task {
            pid,
            mm: MmId(pid as u32),
            cpu,
            ready: p.start.0,
            op: 0,
            cursor: 0,
            regions: BTreeMap::new(),
            kallocs: BTreeMap::new(),
            phase: None,
            errors: vec![],
            access_ns: 0,
            sys_ns: 0,
            done: false,
            start_ns: p.start.0,
            end_ns: p.start.0,
            rng: Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(pid as u64)),
            killed: None,
            smaps: BTreeMap::new(),
            xlat: None,
            access_left_ns: None,
        });
    }
    let mut cpu_free = vec![0u64; ncpus as usize];
    // heap entries: (time, 0 = kernel thread / 1 = process, index, generation)
    let mut heap: BinaryHeap<Reverse<(u64, u8, usize, u64)>> =
        tasks.iter().map(|t| Reverse((t.ready, 1, t.pid, 0))).collect();
    let mut kts: Vec<Kt> = k
        .kthreads()
        .into_iter()
        .map(|kind| {
            let cpu = match kind {
                Kthread::Kswapd(n) | Kthread::Kcompactd(n) => k.pm.nodes[n].cpus.first().copied().unwrap_or(0),
                Kthread::Khugepaged => 0,
            };
            Kt { kind, cpu: cpu % ncpus, gen: 0, scheduled: None, busy_ns: 0, runs: 0 }
        })
        .collect();
    for (i, kt) in kts.iter_mut().enumerate() {
        match k.kthread_initial(kt.kind) {
            KthreadNext::Sleep(d) => kt.schedule(&mut heap, i, d),
            KthreadNext::Again => kt.schedule(&mut heap, i, 0),
            KthreadNext::Wait => {}
        }
    }
    let mut phases: Vec<PhaseResult> = vec![];
    let mut sampler = Sampler {
        interval: w.record.series_interval.0,
        next: 0,
        series: Series { columns: series_columns(), rows: vec![] },
    };
    let mut now = 0u64;
    let mut steps = 0u64;
    let mut live = tasks.len();
    while let Some(Reverse((t, prio, id, gen))) = heap.pop() {
        if live == 0 {
            break;
        }
        if prio == 0 {
            // a kernel thread
            let kt = &mut kts[id];
            if gen != kt.gen {
                continue;
            }
            let cpu = kt.cpu as usize;
            let start = t.max(cpu_free[cpu]);
            if start > t {
                heap.push(Reverse((start, 0, id, gen)));
                continue;
            }
            now = now.max(start);
            sampler.catch_up(&k, now);
            enter_step(&mut k, start);
            k.clock.cpu = kt.cpu;
            k.pm.cpu = kt.cpu;
            k.clock.yield_at = heap.peek().map_or(u64::MAX, |Reverse((t, ..))| *t);
            let next = k.kthread_step(kt.kind);
            k.clock.yield_at = u64::MAX;
            let end = start + k.clock.cost;
            cpu_free[cpu] = end;
            kt.busy_ns += k.clock.cost;
            kt.runs += 1;
            kt.gen += 1;
            kt.scheduled = None;
            match next {
                KthreadNext::Sleep(d) => kt.schedule(&mut heap, id, end + d),
                KthreadNext::Again => kt.schedule(&mut heap, id, end),
                KthreadNext::Wait => {}
            }
            drain_wakeups(&mut k, &mut kts, &mut heap);
            steps += 1;
            continue;
        }
        let pid = id;
        let task = &mut tasks[pid];
        if task.done {
            continue;
        }
        let cpu = task.cpu as usize;
        let start = t.max(cpu_free[cpu]);
        if start > t {
            // the CPU is busy: wait in line
            heap.push(Reverse((start, 1, pid, 0)));
            continue;
        }
        now = now.max(start);
        sampler.catch_up(&k, now);
        if task.phase.is_none() {
            task.phase = Some(Phase { name: "main".into(), start, sys: 0, snap: k.vmstat_snapshot() });
        }
        enter_step(&mut k, start);
        k.clock.cpu = task.cpu;
        k.pm.cpu = task.cpu;
        let ops = &w.processes[pid].ops;
        let outcome = if k.oom.victims.contains(&task.mm) || !k.mms[task.mm].alive {
            task.killed = task.killed.clone().or_else(|| Some("oom_kill".into()));
            StepOutcome::Exit
        } else if task.op >= ops.len() {
            StepOutcome::Exit
        } else {
            step(&mut k, task, &ops[task.op], &mut phases)
        };
        let cost = k.clock.cost;
        steps += 1;
        match outcome {
            StepOutcome::Continue { user_ns } => {
                let task = &mut tasks[pid];
                task.sys_ns += cost;
                if let Some(p) = &mut task.phase {
                    p.sys += cost;
                }
                task.access_ns += user_ns;
                let end = start + cost + user_ns;
                cpu_free[cpu] = end;
                task.ready = end;
                heap.push(Reverse((end, 1, pid, 0)));
            }
            StepOutcome::OpDone { user_ns, sleep } => {
                let task = &mut tasks[pid];
                task.sys_ns += cost;
                if let Some(p) = &mut task.phase {
                    p.sys += cost;
                }
                task.access_ns += user_ns;
                task.op += 1;
                task.cursor = 0;
                task.access_left_ns = None;
                let end = start + cost + user_ns;
                cpu_free[cpu] = end;
                task.ready = end + sleep;
                heap.push(Reverse((task.ready, 1, pid, 0)));
            }
            StepOutcome::Exit => {
                let task = &mut tasks[pid];
                let end = start + cost;
                cpu_free[cpu] = end;
                finish_task(&mut k, task, end, &mut phases, &w.processes[pid].name);
                now = now.max(end);
                live -= 1;
            }
        }
        // processes the OOM killer chose while this step ran end now
        for v in std::mem::take(&mut k.oom.victims) {
            let t = &mut tasks[v.idx()];
            if !t.done {
                t.killed = Some("oom_kill".into());
                finish_task(&mut k, t, now, &mut phases, &w.processes[v.idx()].name);
                live -= 1;
            }
        }
        drain_wakeups(&mut k, &mut kts, &mut heap);
        if o.check && steps.is_multiple_of(CHECK_EVERY_STEPS) {
            crate::check::check(&k)?;
        }
    }
    for t in &tasks {
        now = now.max(t.end_ns);
    }
    sampler.finish(&k, now);
    let series = sampler.series;
    if o.check {
        crate::check::check(&k)?;
    }
    let end_snap = k.vmstat_snapshot();
    let mut latency = BTreeMap::new();
    if k.rec.record_latency {
        let mut v = std::mem::take(&mut k.rec.latency_thp_fault);
        latency.insert("thp_fault".to_string(), percentiles(&mut v));
        let mut v = std::mem::take(&mut k.rec.latency_thp_alloc);
        latency.insert("thp_alloc".to_string(), percentiles(&mut v));
    }
    let mut extra = BTreeMap::new();
    extra.insert(
        "oom_kills".into(),
        Value::Array(
            k.rec
                .oom_kills
                .iter()
                .map(|o| json!({"t_ns": o.t_ns, "victim": o.victim, "rss_kb": o.rss_kb, "trigger": o.trigger}))
                .collect(),
        ),
    );
    extra.insert("mthp_stats_2048kB".into(), serde_json::to_value(&k.rec.mthp).unwrap());
    // reclaim and swap (vmscan.rs, swapfile.rs, zram.rs)
    if !zram_before.is_empty() {
        let after = k.zram_mm_stats();
        let zd: serde_json::Map<String, Value> = zram_before
            .iter()
            .zip(after.iter())
            .map(|((d, b), (_, a))| (d.clone(), json!({"before": b, "after": a})))
            .collect();
        extra.insert("zram_mm_stat".into(), Value::Object(zd));
        extra.insert("zram_mm_stat_phase_end".into(), Value::Array(std::mem::take(&mut k.rec.zram_phase_end)));
    }
    extra.insert("swap_devices".into(), Value::Array(k.swap.devs.iter().map(|d| json!({"name": d.name, "type": format!("{:?}", d.kind).to_lowercase(), "priority": d.prio, "size_kb": d.usable() * 4, "used_kb": d.inuse * 4, "rotational": !d.nonrot, "synchronous": d.sync_io, "blkdev": d.blkdev})).collect()));
    extra.insert("tlb_shootdown_ipis".into(), json!(k.rec.tlb_ipis));
    extra.insert("reclaim_tlb_flushes".into(), json!(k.rec.tlb_flushes));
    extra.insert("lock_wait_ns".into(), json!(k.rec.lock_wait_ns));
    extra.insert("lock_acquisitions".into(), json!(k.rec.lock_acquisitions));
    extra.insert("deferred_split_queue".into(), json!(k.deferred_split_len()));
    extra.insert("khugepaged_mm_slots".into(), json!(k.khugepaged.mm_slots.len()));
    let kh = k.khugepaged_report();
    // the same shape the live runner reports: deltas of the sysfs counters over the run
    extra.insert(
        "khugepaged_delta".into(),
        json!({"pages_collapsed": kh["pages_collapsed"], "full_scans": kh["full_scans"]}),
    );
    extra.insert("khugepaged".into(), kh);
    extra.insert("min_free_kbytes".into(), json!(k.effective_min_free_kbytes()));
    extra.insert("kcompactd".into(), k.kcompactd_summary());
    extra.insert(
        "kthreads".into(),
        Value::Array(
            kts.iter()
                .map(|kt| json!({"name": kthread_name(kt.kind), "cpu_ns": kt.busy_ns, "runs": kt.runs}))
                .collect(),
        ),
    );
    extra.insert(
        "zoneinfo".into(),
        Value::Array(
            k.pm.zones
                .iter()
                .enumerate()
                .map(|(zi, z)| json!({"node": z.node, "zone": z.name, "start_pfn": z.start_pfn, "spanned": z.spanned, "present": z.present, "managed": z.managed,
                    "min": z.watermark[0], "low": z.watermark[1], "high": z.watermark[2], "promo": z.watermark[3], "protection": z.lowmem_reserve.to_vec(),
                    "nr_free_pages": z.free_pages, "nr_pcp_pages": k.pm.pcp_pages(zi)}))
                .collect(),
        ),
    );
    let fragmentation =
        k.pm.zones
            .iter()
            .filter(|z| z.populated())
            .map(|z| ZoneFrag {
                node: z.node as u32,
                zone: z.name.to_string(),
                fragmentation_score: vmstat::fragmentation_score_zone(z),
                extfrag: (0..=10).map(|o| vmstat::extfrag_for_order(z, o)).collect(),
                fragmentation_index: (0..=10).map(|o| vmstat::fragmentation_index(z, o)).collect(),
            })
            .collect();
    let delta = end_snap
        .iter()
        .map(|(n, v)| (n.clone(), v - boot_snap.get(n).copied().unwrap_or(0)))
        .filter(|(_, d)| *d != 0)
        .collect();
    let result = RunResult {
        thplab_version: thplab_workload::VERSION.into(),
        backend: "model".into(),
        workload: w.name.clone(),
        seed,
        machine: serde_json::to_value(&machine).unwrap(),
        knobs: ks,
        cost_profile: serde_json::to_value(&k.costs).unwrap(),
        kernel: Value::Null,
        sim_time_ns: now,
        phases,
        vmstat_delta: delta,
        vmstat: end_snap,
        meminfo: k.meminfo(),
        buddyinfo_before: buddy_before,
        buddyinfo_after: k.pm.buddyinfo(),
        pagetypeinfo: k.pm.pagetypeinfo(),
        fragmentation,
        processes: tasks
            .iter()
            .map(|t| ProcessResult {
                name: w.processes[t.pid].name.clone(),
                pid: 1000 + t.pid as u32,
                start_ns: t.start_ns,
                end_ns: t.end_ns,
                smaps_rollup: t.smaps.clone(),
                errors: t.errors.clone(),
                tlb: k.mms[t.mm].tlb.stats.clone(),
                access_ns: t.access_ns,
                killed: t.killed.clone(),
            })
            .collect(),
        latency,
        series,
        trace: std::mem::take(&mut k.rec.trace.events),
        extra,
    };
    Ok((result, k))
}

/// Samples the state every `interval` ns of simulated time (record.series_interval).
struct Sampler {
    interval: u64,
    next: u64,
    series: Series,
}
const MAX_SAMPLES: usize = 200_000;
impl Sampler {
    /// Emit the samples due up to `now` (the state as the next event finds it).
    fn catch_up(&mut self, k: &Kernel, now: u64) {
        if self.interval == 0 {
            return;
        }
        while self.next <= now && self.series.rows.len() < MAX_SAMPLES {
            self.series.rows.push(sample(k, self.next));
            self.next += self.interval;
        }
    }
    fn finish(&mut self, k: &Kernel, now: u64) {
        if self.interval > 0 && self.series.rows.len() < MAX_SAMPLES {
            self.series.rows.push(sample(k, now));
        }
    }
}

/// Start a step at `start`: the kernel's clock, and nothing charged yet.
fn enter_step(k: &mut Kernel, start: u64) {
    k.clock.now = start;
    k.pm.now_ms = (start / 1_000_000).min(u32::MAX as u64 - 1) as u32;
    k.clock.cost = 0;
}

struct Kt {
    kind: Kthread,
    cpu: u32,
    gen: u64,
    scheduled: Option<u64>,
    busy_ns: u64,
    runs: u64,
}
impl Kt {
    fn schedule(&mut self, heap: &mut BinaryHeap<Reverse<(u64, u8, usize, u64)>>, idx: usize, at: u64) {
        self.scheduled = Some(at);
        heap.push(Reverse((at, 0, idx, self.gen)));
    }
}

pub fn kthread_name(k: Kthread) -> String {
    match k {
        Kthread::Kswapd(n) => format!("kswapd{n}"),
        Kthread::Kcompactd(n) => format!("kcompactd{n}"),
        Kthread::Khugepaged => "khugepaged".into(),
    }
}

/// Wake-ups the kernel requested during a step: a waiting or later-scheduled thread runs earlier.
fn drain_wakeups(k: &mut Kernel, kts: &mut [Kt], heap: &mut BinaryHeap<Reverse<(u64, u8, usize, u64)>>) {
    for (kind, at) in std::mem::take(&mut k.clock.wakeups) {
        if let Some(i) = kts.iter().position(|t| t.kind == kind) {
            let kt = &mut kts[i];
            if kt.scheduled.is_none_or(|s| s > at) {
                kt.gen += 1;
                kt.schedule(heap, i, at);
            }
        }
    }
}

fn series_columns() -> Vec<String> {
    [
        "t_ns",
        "MemFree_kB",
        "AnonPages_kB",
        "AnonHugePages_kB",
        "nr_free_pages",
        "thp_fault_alloc",
        "thp_fault_fallback",
        "fragmentation_score_node0",
        "SwapFree_kB",
        "pswpin",
        "pswpout",
        "tlb_shootdown_ipis",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn sample(k: &Kernel, t: u64) -> Vec<f64> {
    let free = k.nr_free_pages();
    let node0: Vec<&crate::mmzone::Zone> = k.pm.nodes[0].zones.iter().map(|&z| &k.pm.zones[z]).collect();
    let score = vmstat::fragmentation_score_node(node0.into_iter(), k.pm.nodes[0].present);
    vec![
        t as f64,
        (free * 4) as f64,
        (k.nr_anon_pages() * 4) as f64,
        (k.nr_anon_thp() * 2048) as f64,
        free as f64,
        k.rec.vm.get(vmstat::Ev::THP_FAULT_ALLOC) as f64,
        k.rec.vm.get(vmstat::Ev::THP_FAULT_FALLBACK) as f64,
        score as f64,
        (k.swap.nr_free() * 4) as f64,
        k.rec.vm.get(vmstat::Ev::PSWPIN) as f64,
        k.rec.vm.get(vmstat::Ev::PSWPOUT) as f64,
        k.rec.tlb_ipis as f64,
    ]
}

fn close_phase(k: &mut Kernel, task: &mut Task, end: u64, phases: &mut Vec<PhaseResult>, pname: &str) {
    if let Some(p) = task.phase.take() {
        // zram mm_stat at each phase end, as the live runner records it
        for (dev, st) in k.zram_mm_stats() {
            k.rec
                .zram_phase_end
                .push(json!({"phase_end": format!("{}:{}", pname, p.name), "device": dev, "mm_stat": st}));
        }
        let now = k.vmstat_snapshot();
        let delta = now
            .iter()
            .map(|(n, v)| (n.clone(), v - p.snap.get(n).copied().unwrap_or(0)))
            .filter(|(_, d)| *d != 0)
            .collect();
        phases.push(PhaseResult {
            name: format!("{}:{}", pname, p.name),
            process: pname.to_string(),
            start_ns: p.start,
            end_ns: end,
            sys_ns: p.sys,
            vmstat_delta: delta,
        });
    }
}

fn smaps_rollup(k: &Kernel, mm: MmId) -> BTreeMap<String, u64> {
    let mm = &k.mms[mm];
    let huge = mm.pmds.values().filter(|&&s| matches!(k.slots.get(s).pmd, crate::pgtable::Pmd::Huge(_))).count() as u64;
    let rss = mm.rss_anon * 4;
    let mut m = BTreeMap::new();
    for (n, v) in [
        ("Rss", rss),
        ("Pss", rss),
        ("Pss_Anon", rss),
        ("Anonymous", rss),
        ("AnonHugePages", huge * 2048),
        ("Swap", mm.swap_ents * 4),
        ("SwapPss", mm.swap_ents * 4),
        ("LazyFree", 0),
        ("Locked", 0),
    ] {
        m.insert(n.to_string(), v);
    }
    m
}

fn finish_task(k: &mut Kernel, task: &mut Task, end: u64, phases: &mut Vec<PhaseResult>, pname: &str) {
    if task.smaps.is_empty() {
        task.smaps = smaps_rollup(k, task.mm);
    }
    // exit: release kernel allocations (pipes close) and the address space
    let sets: Vec<String> = task.kallocs.keys().cloned().collect();
    for s in sets {
        if let Some((_, blocks)) = task.kallocs.remove(&s) {
            for (pfn, order) in blocks.into_iter().flatten() {
                k.free_kernel_pages(Pfn(pfn), order);
            }
        }
    }
    k.exit_mm(task.mm);
    close_phase(k, task, end, phases, pname);
    task.done = true;
    task.end_ns = end;
}

/// Record progress within an op: done when `end` reached `total`, else continue next step.
fn advance(task: &mut Task, end: u64, total: u64) -> StepOutcome {
    task.cursor = end;
    if end >= total {
        StepOutcome::OpDone { user_ns: 0, sleep: 0 }
    } else {
        StepOutcome::Continue { user_ns: 0 }
    }
}

enum StepOutcome {
    Continue { user_ns: u64 },
    OpDone { user_ns: u64, sleep: u64 },
    Exit,
}

fn err(task: &mut Task, op_index: usize, op: &Op, errno: &str, message: String) {
    if task.errors.len() < 1000 {
        task.errors.push(OpError { op_index, op: op.kind().into(), errno: errno.into(), message });
    }
}

/// Run one step of `op` for `task`.
// TODO(issue 13 item 5): one handler per op family.
#[allow(clippy::too_many_lines)]
fn step(k: &mut Kernel, task: &mut Task, op: &Op, phases: &mut Vec<PhaseResult>) -> StepOutcome {
    let pid = task.mm;
    let oi = task.op;
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    // resolve a range op's pieces
    let region = |task: &Task, name: &str| task.regions.get(name).copied();
    match op {
        Op::Mmap { name, size, align, populate } => {
            if task.cursor == 0 {
                k.charge(k.costs.syscall_ns);
                let Some(addr) = k.mms[pid].get_unmapped_area(size.0, align.map(|a| a.0)) else {
                    err(task, oi, op, "ENOMEM", "address space exhausted".into());
                    return done;
                };
                k.mms[pid].insert_vma(addr, addr + size.0, VM_READ | VM_WRITE);
                // __mmap_region() -> khugepaged_enter_vma()
                k.khugepaged_enter_vma(pid, VM_READ | VM_WRITE);
                task.regions.insert(name.clone(), (addr, size.0));
                if !populate {
                    return done;
                }
            }
            // MAP_POPULATE: write-fault every page (populate_vma_page_range with FOLL_WRITE)
            let (addr, size) = task.regions[name];
            let pages = size / PAGE_SIZE;
            let end = (task.cursor + PAGES_PER_STEP).min(pages);
            for p in task.cursor..end {
                let a = addr + p * PAGE_SIZE;
                if !matches!(k.follow(pid, a), crate::memory::Mapping::Page(..))
                    && k.handle_mm_fault(pid, a, true) == Fault::Oom
                {
                    return StepOutcome::Exit;
                }
            }
            advance(task, end, pages)
        }
        Op::Munmap { range } | Op::Madvise { range, .. } | Op::Mprotect { range, .. } | Op::MovePages { range, .. } => {
            let Some((addr, size)) = region(task, &range.region) else { return done };
            let pieces = range.pieces(size);
            let end = (task.cursor + PIECES_PER_STEP).min(pieces.len() as u64);
            for &(off, len) in &pieces[task.cursor as usize..end as usize] {
                let (s, e) = (addr + off, addr + off + len);
                k.charge(k.costs.syscall_ns);
                match op {
                    Op::Munmap { .. } => {
                        k.mms[pid].unmap_range(s, e);
                        k.zap_range(pid, s, e, true);
                    }
                    Op::Madvise { advice, .. } => {
                        if let Err(e) = k.madvise(pid, s, e, *advice) {
                            err(task, oi, op, e, format!("madvise({:#x}, {}, {}) failed", s, len, advice.name()));
                        }
                    }
                    Op::Mprotect { prot, .. } => {
                        let flags = match prot {
                            Prot::None => 0,
                            Prot::R => VM_READ,
                            Prot::Rw => VM_READ | VM_WRITE,
                        };
                        // change_pmd_range(): huge PMDs (and PMD swap entries) only partly in the range are split
                        k.mprotect_split_pmds(pid, s, e);
                        if !k.mms[pid].modify_flags(s, e, |f| (f & !(VM_READ | VM_WRITE)) | flags) {
                            err(task, oi, op, "ENOMEM", format!("mprotect({:#x}, {}) on an unmapped range", s, len));
                        }
                        k.mms[pid].tlb.flush_range(s, e);
                    }
                    Op::MovePages { node, .. } => {
                        if let Err(e) = k.move_pages(pid, s, e, *node as usize) {
                            err(task, oi, op, e, format!("move_pages to node {node}: no such node"));
                        }
                    }
                    _ => unreachable!(),
                }
            }
            advance(task, end, pieces.len() as u64)
        }
        Op::Write { range, byte, bytes, data } => page_op(k, task, op, range, |k, pid, a| {
            let b = byte.unwrap_or(0);
            let n = bytes.unwrap_or(PAGE_SIZE as u32 - b);
            k.write_page(pid, a, b, n, data)
        }),
        Op::Read { range, .. } => page_op(k, task, op, range, |k, pid, a| k.read_page(pid, a)),
        Op::Access { range, pattern, count, duration, write, stride, theta } => {
            let Some((addr, size)) = region(task, &range.region) else { return done };
            let off = range.offset.map_or(0, |s| s.0);
            let len = range.length.map_or(size.saturating_sub(off), |s| s.0);
            if task.access_left_ns.is_none() {
                task.access_left_ns = duration.map(|d| d.0);
            }
            let stride = stride.map_or(64, |s| s.0);
            let wfrac = write.unwrap_or(0.0);
            let theta = theta.unwrap_or(0.99);
            let batch = match count {
                Some(c) => (c - task.cursor).min(ACCESSES_PER_STEP),
                None => ACCESSES_PER_STEP,
            };
            let mut cycles = 0.0f64;
            let lines = (len / 64).max(1);
            let pages = (len / PAGE_SIZE).max(1);
            let zipf = (*pattern == AccessPattern::Zipf && theta > 0.0).then(|| Zipf::new(pages, theta));
            let budget_ns = task.access_left_ns;
            let mut n = 0;
            while n < batch {
                let o = match pattern {
                    AccessPattern::Seq => (task.cursor.wrapping_add(n)).wrapping_mul(stride) % len.max(1),
                    AccessPattern::Random => task.rng.below(lines) * 64,
                    AccessPattern::Zipf => {
                        let page = match &zipf {
                            Some(z) => z.sample(&mut task.rng),
                            None => task.rng.below(pages),
                        };
                        page * PAGE_SIZE + task.rng.below(64) * 64
                    }
                };
                let a = addr + off + o;
                let is_write = wfrac > 0.0 && task.rng.unit() < wfrac;
                match access_one(k, task, a, is_write) {
                    Some(c) => cycles += c,
                    None => return StepOutcome::Exit,
                }
                n += 1;
                if let Some(b) = budget_ns {
                    if k.costs.cycles_to_ns(cycles) as u64 + k.clock.cost >= b.min(1_000_000) {
                        break;
                    }
                }
            }
            task.cursor += n;
            let user_ns = k.costs.cycles_to_ns(cycles).round() as u64;
            let finished = match (count, task.access_left_ns) {
                (Some(c), _) => task.cursor >= *c,
                (None, Some(left)) => {
                    let used = user_ns + k.clock.cost;
                    task.access_left_ns = Some(left.saturating_sub(used));
                    used >= left
                }
                _ => true,
            };
            if finished {
                StepOutcome::OpDone { user_ns, sleep: 0 }
            } else {
                StepOutcome::Continue { user_ns }
            }
        }
        Op::Sleep { duration } => StepOutcome::OpDone { user_ns: 0, sleep: duration.0 },
        Op::Set { knob, value } => {
            k.charge(k.costs.syscall_ns);
            let v = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if let Err(e) = k.set_knob(knob, &v) {
                err(task, oi, op, "EINVAL", e);
            }
            done
        }
        Op::Prctl { thp_disable } => {
            k.charge(k.costs.syscall_ns);
            k.mms[pid].thp_disable = *thp_disable;
            done
        }
        Op::Kalloc { name, size, order } => {
            let order = order.unwrap_or(0);
            let nblocks = size.0 / (PAGE_SIZE << order);
            if task.cursor == 0 {
                task.kallocs.insert(name.clone(), (size.0, Vec::with_capacity(nblocks as usize)));
            }
            let per_step = (PAGES_PER_STEP >> order).max(1);
            let end = (task.cursor + per_step).min(nblocks);
            let node = k.mms[pid].node;
            for _ in task.cursor..end {
                k.charge(k.costs.page_alloc_ns);
                match k.alloc_kernel_pages(order, node) {
                    Some(Pfn(pfn)) => {
                        task.kallocs.get_mut(name).unwrap().1.push(Some((pfn, order)));
                    }
                    None => {
                        err(task, oi, op, "ENOMEM", format!("kernel allocation of order {order} failed"));
                        return done;
                    }
                }
                if !k.mms[pid].alive {
                    return StepOutcome::Exit;
                }
            }
            advance(task, end, nblocks)
        }
        Op::Kfree { range } => {
            let Some((size, blocks)) = task.kallocs.get_mut(&range.region) else { return done };
            let bsize = blocks.iter().flatten().next().map_or(PAGE_SIZE, |(_, o)| PAGE_SIZE << o);
            let mut freed = vec![];
            range.for_each_piece(*size, |off, len| {
                let mut b = off / bsize;
                while b * bsize < off + len && (b as usize) < blocks.len() {
                    if let Some(x) = blocks[b as usize].take() {
                        freed.push(x);
                    }
                    b += 1;
                }
            });
            for (pfn, order) in freed {
                k.charge(k.costs.page_free_ns);
                k.free_kernel_pages(Pfn(pfn), order);
            }
            done
        }
        Op::DropCaches { value } => {
            k.charge(k.costs.syscall_ns);
            k.drop_caches(*value as u64);
            done
        }
        Op::Phase { name } => {
            let pname = k.mms[pid].name.clone();
            close_phase(k, task, k.clock.now, phases, &pname);
            task.phase = Some(Phase { name: name.clone(), start: k.clock.now, sys: 0, snap: k.vmstat_snapshot() });
            done
        }
    }
}

/// Apply `f` to every page of a range op, one 2 MiB worth of pages per step.
fn page_op(
    k: &mut Kernel,
    task: &mut Task,
    op: &Op,
    range: &thplab_workload::workload::RangeSpec,
    f: impl Fn(&mut Kernel, MmId, u64) -> Fault,
) -> StepOutcome {
    let pid = task.mm;
    let Some(&(addr, size)) = task.regions.get(&range.region) else {
        return StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    };
    // Walk pages across pieces with a flat cursor (pages already done).
    let mut skipped = 0u64;
    let mut budget = PAGES_PER_STEP;
    let mut outcome = None;
    let cursor = task.cursor;
    let mut done_pages = 0u64;
    let mut total = 0u64;
    range.for_each_piece(size, |off, len| {
        let np = len.div_ceil(PAGE_SIZE);
        total += np;
        if outcome.is_some() || budget == 0 {
            return;
        }
        if skipped + np <= cursor {
            skipped += np;
            return;
        }
        let first = cursor.saturating_sub(skipped);
        skipped += first;
        for p in first..np {
            if budget == 0 {
                break;
            }
            let a = addr + off + p * PAGE_SIZE;
            match f(k, pid, a) {
                Fault::Ok => {}
                Fault::Segv => {
                    outcome = Some(("SIGSEGV", a));
                    return;
                }
                Fault::Oom => {
                    outcome = Some(("OOM", a));
                    return;
                }
            }
            budget -= 1;
            done_pages += 1;
        }
        skipped += np - first;
    });
    if let Some((what, a)) = outcome {
        if what == "SIGSEGV" {
            let oi = task.op;
            err(
                task,
                oi,
                op,
                "SIGSEGV",
                format!("{} at {:#x}: no writable mapping; the process is killed", op.kind(), a),
            );
            task.killed = Some("SIGSEGV".into());
        } else {
            task.killed = Some("oom_kill".into());
        }
        return StepOutcome::Exit;
    }
    task.cursor += done_pages;
    if task.cursor >= total {
        StepOutcome::OpDone { user_ns: 0, sleep: 0 }
    } else {
        StepOutcome::Continue { user_ns: 0 }
    }
}

/// One load/store of an access stream: translate (faulting if needed), go through the TLB.
/// Returns the cycles, or None when the process died.
#[inline]
fn access_one(k: &mut Kernel, task: &mut Task, a: u64, write: bool) -> Option<f64> {
    let pid = task.mm;
    let page = a >> PAGE_SHIFT;
    let gen = k.mms[pid].tlb.flushes;
    let hit = match task.xlat {
        Some((p, pfn, huge, g)) if p == page && g == gen && !(write && pfn == u64::MAX) => Some((pfn, huge)),
        _ => None,
    };
    let (pfn, huge) = match hit {
        Some(x) => x,
        None => {
            let (pfn, huge) = loop {
                match k.follow(pid, a) {
                    crate::memory::Mapping::Page(Pfn(pfn), huge) => break (pfn, huge),
                    crate::memory::Mapping::Zero | crate::memory::Mapping::HugeZero if !write => {
                        break (u64::MAX, matches!(k.follow(pid, a), crate::memory::Mapping::HugeZero))
                    }
                    _ => {
                        if k.handle_mm_fault(pid, a, write) != Fault::Ok {
                            if task.killed.is_none() {
                                task.killed = Some(if k.mms[pid].alive { "SIGSEGV".into() } else { "oom_kill".into() });
                            }
                            return None;
                        }
                    }
                }
            };
            task.xlat = Some((page, pfn, huge, k.mms[pid].tlb.flushes));
            if pfn != u64::MAX {
                k.touch_folio(pfn, write);
            }
            (pfn, huge)
        }
    };
    if write && pfn != u64::MAX {
        let f = k.pm.frames[pfn as usize];
        if !dirty(f) {
            k.touch_folio(pfn, true);
        }
    }
    let c = &k.costs;
    Some(k.mms[pid].tlb.access(a, huge, write, c))
}
