//! The engine: a deterministic discrete-event loop running the workload's processes
//! on the machine's simulated CPUs (process i is pinned to CPU i mod ncpus; a CPU runs
//! one step at a time, FIFO by ready time then pid). Every operation is cut into steps
//! (a 2 MiB chunk of a write, a batch of accesses, a batch of munmap pieces); a step's
//! kernel work is charged from the cost profile and advances the process's clock.
//! Kernel threads (kswapd, kcompactd, khugepaged) run as timed tasks beside them, each on
//! the CPU it last ran on unless that one is busy when it wakes (queue.rs `Kt::place`).
//!
//! queue.rs: the event queue and the clock; task.rs: the processes; ops/: one handler per
//! family of workload ops; sampler.rs: the time series; report.rs: the result.

mod backfill;
mod ops;
mod queue;
mod report;
mod sampler;
mod task;

pub use queue::kthread_name;

use crate::kernel::Kernel;
use crate::kthread::{Kthread, KthreadNext};
use crate::mm_types::*;
use crate::mmap::Mm;
use crate::tlb::Tlb;
use crate::trace::Trace;
use queue::{drain_wakeups, enter_step, Event, EventQueue, Kt};
use sampler::{series_columns, Sampler};
use serde_json::{json, Value};
use task::*;
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs;
use thplab_workload::machine::MachineSpec;
use thplab_workload::result::*;
use thplab_workload::trace::trace_mask;
use thplab_workload::workload::{MachineArg, Workload};
use thplab_workload::Error;

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

pub fn resolve_machine(w: &Workload, o: &RunOptions) -> Result<MachineSpec, String> {
    if let Some(m) = &o.machine {
        m.validate()?;
        return Ok(m.clone());
    }
    match &w.machine {
        Some(MachineArg::Shorthand(s)) => MachineSpec::parse_shorthand(s),
        Some(MachineArg::Spec(m)) => Ok((**m).clone()),
        None => MachineSpec::parse_shorthand("24G"),
    }
}

pub fn run(w: &Workload, o: &RunOptions) -> Result<RunResult, Error> {
    run_keep(w, o).map(|(r, _)| r)
}

/// Like `run`, also returning the kernel's final state (for benchmarks and tests).
pub fn run_keep(w: &Workload, o: &RunOptions) -> Result<(RunResult, Kernel), Error> {
    let (boot, k) = Boot::new(w, o, w.record.fault_latency)?;
    let mut e = Engine::new(k, w, &boot.machine, boot.seed);
    let check = checker(w, o, &boot);
    e.run_loop(&check, o.check, None)?;
    e.finish(&check, o.check)?;
    Ok(e.conclude(&boot))
}

/// What a run knows from before its first event: the machine, knobs and seed it runs
/// with, and the boot state the result compares the end with.
#[derive(Clone)]
struct Boot {
    machine: MachineSpec,
    knobs: knobs::KnobSet,
    seed: u64,
    buddy_before: String,
    boot_snap: std::collections::BTreeMap<String, i64>,
    zram_before: Vec<(String, Value)>,
    /// free pages on the per-CPU lists when the run starts (the back-fill's, page_reporting.rs)
    pcp_before: u64,
    /// KiB the guest had reported when the run started (after the boot's passes)
    reported_kib_before: u64,
    /// pages the host had discarded when the run started (free page reporting)
    unbacked_before: u64,
}

impl Boot {
    /// Boot the kernel for `w` (latency samples recorded when `record_latency`).
    fn new(w: &Workload, o: &RunOptions, record_latency: bool) -> Result<(Boot, Kernel), Error> {
        let machine = resolve_machine(w, o)?;
        let ks = run_knobs(w, o)?;
        let costs = o.costs.clone().unwrap_or_default();
        costs.validate()?;
        let seed = o.seed.unwrap_or(w.seed);
        let mut k = Kernel::new(&machine, ks.clone(), costs, seed)?;
        // an aged machine as found: its pages in use, else its small free blocks (aged.rs)
        let mut flagless = vec![];
        if let (true, Some(u)) = (machine.aged, &machine.in_use) {
            flagless = k
                .hold_in_use(u, machine.pagetypeinfo.as_deref())
                .map_err(|message| Error::BadInput { field: "machine.in_use".into(), message })?
                .1;
        } else if let (true, Some(b)) = (machine.aged, &machine.buddyinfo) {
            k.hold_small_free_blocks(b, machine.pagetypeinfo.as_deref());
        }
        // its per-CPU lists as found (aged.rs hold_pcp_lists_as_found)
        k.hold_pcp_lists_as_found(&machine.pcp, flagless);
        // the huge zero folio kept from earlier use (thplab.huge_zero_folio=kept)
        if k.cfg.huge_zero_kept {
            k.keep_huge_zero_folio();
        }
        // thplab.free_page_reporting_start=idle: a reporting guest idle before the run, its
        // free memory reported; then the live runner backs the run's footprint
        // (page_reporting.rs) and forks the workload's processes, the first of which met
        // the runner's freed THPs on its CPU's per-CPU lists in most live runs
        // (docs/page_reporting.md); the runner backs it on the CPU of the process that
        // starts first (live: pinned there, run.rs), which runs on CPU i modulo the CPUs
        // =found: the free blocks the live run found reported, marked on the machine as found
        // (its small blocks above), then the same back-fill
        if k.pm.pr.enabled && (k.cfg.reporting_idle_start || k.cfg.reporting_found_start) {
            if k.cfg.reporting_idle_start {
                k.page_reporting_settle();
            } else {
                k.page_reporting_found(
                    machine.reported.as_deref().unwrap_or_default(),
                    machine.buddyinfo.as_deref().unwrap_or_default(),
                );
            }
            let cpu = w.first_to_start() as u32 % k.pm.nr_cpus.max(1);
            let collapses = thplab_workload::footprint::uses_madv_collapse(w);
            k.back_free_memory(backfill_bytes(w, &ks), collapses, cpu, &machine.tlb);
        }
        k.rec.record_latency = record_latency;
        k.rec.trace = match &o.trace {
            Some(t) => Trace::new(trace_mask(t, "--trace")?),
            None => Trace::new(trace_mask(&w.record.trace, "workload.record.trace")?),
        };
        let boot = Boot {
            buddy_before: k.pm.buddyinfo(),
            boot_snap: k.vmstat_snapshot(),
            zram_before: k.zram_mm_stats(),
            pcp_before: k.pm.pcp_pages_total(),
            reported_kib_before: k.pm.pr.kib_reported,
            unbacked_before: if k.pm.pr.enabled { k.pm.pr.nr_unbacked() } else { 0 },
            machine,
            knobs: ks,
            seed,
        };
        Ok((boot, k))
    }
}

/// Run several workloads that differ only from some op of their processes onwards (and
/// in name and `record.fault_latency`): the common prefix runs once, its whole state
/// (kernel, processes, kernel threads, event queue, recorder, sampler) is copied at the
/// first event that would start an op where some workload differs, and each workload
/// continues from its own copy. The results are those of separate `run`s (the prefix
/// records fault latencies when any workload asks for them; a workload that does not is
/// run separately should the prefix have recorded a sample). Workloads that are not of
/// this form run separately. At most `threads` continuations run at once, each on its own
/// thread beside the prefix's state; they start in the order given, a thread taking the
/// next as soon as it is done with one.
pub fn run_shared<'w>(ws: &'w [Workload], o: &RunOptions, threads: usize) -> Vec<Result<RunResult, Error>> {
    // a workload's back-fill on a reporting guest (Boot::new) is part of its start state
    let start = |w| run_knobs(w, o).map(|ks| backfill_bytes(w, &ks)).ok();
    let start0 = ws.first().and_then(start);
    let same_start = ws.iter().all(|w| start(w) == start0);
    let Some(div) = divergence(ws).filter(|_| ws.len() > 1 && same_start) else {
        return ws.iter().map(|w| run(w, o)).collect();
    };
    let any_latency = ws.iter().any(|w| w.record.fault_latency);
    // the copies of the prefix's state reuse memory that finished runs freed (host_alloc.rs)
    let _keep = crate::host_alloc::keep_freed();
    // THPLAB_TIMING=1: the host time of each step on stderr (docs/compaction.md)
    let t0 = std::time::Instant::now();
    let timing = std::env::var_os("THPLAB_TIMING").is_some();
    let tm = |what: std::fmt::Arguments| {
        if timing {
            eprintln!("[{:7.2} s] run_shared: {what}", t0.elapsed().as_secs_f64());
        }
    };
    let (boot, k) = match Boot::new(&ws[0], o, any_latency) {
        Ok(x) => x,
        Err(e) => return ws.iter().map(|_| Err(e.clone())).collect(),
    };
    let mut prefix = Engine::new(k, &ws[0], &boot.machine, boot.seed);
    tm(format_args!("booted"));
    // a broken invariant in the prefix is reproduced by the first workload alone
    let check_of = |w| checker(w, o, &boot);
    // While the prefix runs, a thread at the lowest priority backs what the first copies
    // will take, on a CPU the prefix leaves idle: for each copy alive at once, a frame
    // array and PTE tables (at most one per 2 MiB of the machine), in the order a copy
    // fills them. On a guest whose host takes free memory back, a copy's first touches
    // are most of its time (host_alloc.rs). Not the list cells: a copy's are ~100 MiB at
    // seed 004's scale (mm_types.rs, Links: runs), which it writes as it copies them.
    // Results do not depend on it.
    use crate::host_alloc::Warm;
    let frames = std::alloc::Layout::array::<u64>(prefix.k.pm.frames.capacity()).expect("the frames' layout");
    let tables = prefix.k.pm.frames.len() / crate::consts::PTRS_PER_PTE;
    // the prefix's own tables first (it takes them from the slab as it maps)
    let plan: Vec<Warm> = std::iter::once(Warm::Tables(tables))
        .chain(
            (1..=threads.clamp(1, ws.len()).min(ws.len() - 1))
                .flat_map(|c| [Warm::Blocks(frames, c), Warm::Tables(c * tables)]),
        )
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let prefix_run = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setpriority on this thread's own id changes only its nice value
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
            let n = crate::host_alloc::prewarm(&plan, &stop);
            tm(format_args!("prewarmed {} MiB", n >> 20));
        });
        let r = prefix.run_loop(&check_of(&ws[0]), o.check, Some(&div));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    });
    if let Err(e) = prefix_run {
        return ws.iter().map(|_| Err(e.clone())).collect();
    }
    tm(format_args!(
        "prefix done: state {} MiB (frames {}, links {}, page tables and slots {})",
        prefix.k.heap_bytes() >> 20,
        (prefix.k.pm.frames.len() * 8) >> 20,
        prefix.k.pm.links.heap_bytes() >> 20,
        prefix.k.slots.heap_bytes() >> 20
    ));
    let sampled = !prefix.k.rec.latency_samples.is_empty();
    let mut results: Vec<Option<Result<RunResult, Error>>> = vec![None; ws.len()];
    let (shared, separate): (Vec<usize>, Vec<usize>) =
        (0..ws.len()).partition(|&i| ws[i].record.fault_latency || !sampled);
    let boot = &boot;
    // continue the prefix as workload i
    let go = |i: usize, mut e: Engine<'w>| {
        let w = &ws[i];
        let check = check_of(w);
        e.w = w;
        e.k.rec.record_latency = w.record.fault_latency;
        tm(format_args!("{} starts", w.name));
        let r = e.run_loop(&check, o.check, None).and_then(|_| e.finish(&check, o.check));
        tm(format_args!("{} done (links {} MiB)", w.name, e.k.pm.links.heap_bytes() >> 20));
        let r = r.map(|_| e.conclude(boot).0);
        (i, r)
    };
    // A queue of continuations for `threads` workers: each takes the next workload, copies
    // the prefix's state for it (one copy at a time: a copy is mostly the host's first
    // touches of fresh memory, which do not overlap) and runs it; the last workload takes
    // the prefix's state itself once every other copy is made. A worker done early starts
    // the next continuation at once, so a short and a long continuation do not hold each
    // other up; the results are those of separate runs, whatever the order.
    struct Prefix<'w> {
        state: Option<Engine<'w>>,
        copies_left: usize,
    }
    let n = shared.len();
    let cell = std::sync::Mutex::new(Prefix { state: Some(prefix), copies_left: n.saturating_sub(1) });
    let copied = std::sync::Condvar::new();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let take = |t: usize| -> Engine<'w> {
        let mut p = cell.lock().expect("the prefix");
        if t + 1 < n {
            let st = p.state.as_mut().expect("the prefix");
            let e = st.clone();
            tm(format_args!("copy {} made (links {} MiB)", t + 1, e.k.pm.links.heap_bytes() >> 20));
            p.copies_left -= 1;
            copied.notify_all();
            return e;
        }
        while p.copies_left > 0 {
            p = copied.wait(p).expect("the prefix");
        }
        p.state.take().expect("the prefix")
    };
    let done: Vec<(usize, Result<RunResult, Error>)> = std::thread::scope(|s| {
        let worker = || {
            let mut out = vec![];
            loop {
                let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = shared.get(t) else { break out };
                out.push(go(i, take(t)));
            }
        };
        let hs: Vec<_> = (0..threads.clamp(1, n.max(1))).map(|_| s.spawn(worker)).collect();
        hs.into_iter().flat_map(|h| h.join().expect("a continuation thread")).collect()
    });
    for (i, r) in done {
        results[i] = Some(r);
    }
    for i in separate {
        results[i] = Some(run(&ws[i], o));
    }
    results.into_iter().map(|r| r.expect("every workload ran")).collect()
}

/// The invariant checker of a run of `w` (a broken invariant carries the command that
/// replays the run).
fn checker<'a>(w: &'a Workload, o: &'a RunOptions, boot: &'a Boot) -> impl Fn(&Kernel, u64) -> Result<(), Error> + 'a {
    move |k: &Kernel, now: u64| {
        crate::check::check(k).map_err(|v| invariant_error(w, o, &boot.machine, &boot.knobs, boot.seed, now, v))
    }
}

/// Per process, the index of the first top-level op where the workloads differ
/// (usize::MAX: none); None when they differ elsewhere than in their ops, name and
/// `record.fault_latency`.
fn divergence(ws: &[Workload]) -> Option<Vec<usize>> {
    let w0 = ws.first()?;
    let mut div = vec![usize::MAX; w0.processes.len()];
    for w in &ws[1..] {
        let same_rest = w.description == w0.description
            && w.seed == w0.seed
            && w.machine == w0.machine
            && w.knobs == w0.knobs
            && w.record.series_interval == w0.record.series_interval
            && w.record.trace == w0.record.trace
            && w.processes.len() == w0.processes.len();
        if !same_rest {
            return None;
        }
        for (pid, (p, p0)) in w.processes.iter().zip(&w0.processes).enumerate() {
            if p.name != p0.name || p.start != p0.start {
                return None;
            }
            let common = p.ops.iter().zip(&p0.ops).take_while(|(a, b)| a == b).count();
            if common < p.ops.len().max(p0.ops.len()) {
                div[pid] = div[pid].min(common);
            }
        }
    }
    Some(div)
}

/// The bytes the live runner backs before a run of `w` (its footprint and hugetlb pool,
/// footprint.rs) where the guest reports free pages, and the model does too
/// (thplab.free_page_reporting_start=idle or found), else 0.
fn backfill_bytes(w: &Workload, ks: &knobs::KnobSet) -> u64 {
    if ks.get("thplab.free_page_reporting").map(String::as_str) != Some("1")
        || !matches!(ks.get("thplab.free_page_reporting_start").map(String::as_str), Some("idle" | "found"))
    {
        return 0;
    }
    let pool = ks.get("vm.nr_hugepages").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    thplab_workload::footprint::run_footprint(w, pool)
}

/// The knobs a run starts with: the defaults, the workload's, then the options'.
fn run_knobs(w: &Workload, o: &RunOptions) -> Result<knobs::KnobSet, Error> {
    let mut ks = knobs::defaults();
    for (k, v) in &w.knobs {
        ks.insert(k.clone(), v.clone());
    }
    for (k, v) in &o.knobs {
        let (c, v) = knobs::check_assignment(k, v)?;
        if matches!(c.as_str(), "vm.compact_memory" | "vm.drop_caches") {
            let message = format!("knob `{c}` is a trigger; use it as a workload operation (set) instead");
            return Err(Error::BadInput { field: c, message });
        }
        ks.insert(c, v);
    }
    Ok(ks)
}

/// The event loop's state: the kernel, the processes, the kernel threads, the queue.
#[derive(Clone)]
struct Engine<'w> {
    k: Kernel,
    w: &'w Workload,
    tasks: Vec<Task>,
    kts: Vec<Kt>,
    queue: EventQueue,
    /// when each CPU is free again
    cpu_free: Vec<u64>,
    phases: Vec<PhaseResult>,
    sampler: Sampler,
    /// the latest time the loop reached
    now: u64,
    steps: u64,
    /// processes not finished
    live: usize,
}

impl<'w> Engine<'w> {
    /// Boot: one mm and task per process, the kernel threads in their initial waits.
    fn new(mut k: Kernel, w: &'w Workload, machine: &MachineSpec, seed: u64) -> Engine<'w> {
        let ncpus = k.pm.nr_cpus.max(1);
        let mut tasks: Vec<Task> = vec![];
        for (pid, p) in w.processes.iter().enumerate() {
            let cpu = pid as u32 % ncpus;
            let node = k.pm.nodes.iter().position(|n| n.cpus.contains(&cpu)).unwrap_or(0);
            k.mms.push(Mm::new(MmId(pid as u32), &p.name, cpu, node, Tlb::new(&machine.tlb)));
            tasks.push(Task::new(pid, cpu, p.start.0, seed));
        }
        let mut queue = EventQueue::default();
        for t in &tasks {
            queue.push(t.ready, Event::Task { pid: t.pid });
        }
        let mut kts: Vec<Kt> = k
            .kthreads()
            .into_iter()
            .map(|kind| {
                let cpus: Vec<u32> = match kind {
                    Kthread::Kswapd(n) | Kthread::Kcompactd(n) => k.pm.nodes[n].cpus.clone(),
                    Kthread::Khugepaged => (0..ncpus).collect(),
                    Kthread::PageReporting => vec![],
                };
                let cpu = cpus.first().copied().unwrap_or(0) % ncpus;
                let cpus = cpus.into_iter().filter(|&c| c < ncpus).collect();
                Kt { kind, cpu, cpus, gen: 0, scheduled: None, busy_ns: 0, runs: 0 }
            })
            .collect();
        for (i, kt) in kts.iter_mut().enumerate() {
            match k.kthread_initial(kt.kind) {
                KthreadNext::Sleep(d) => kt.schedule(&mut queue, i, d),
                KthreadNext::Again => kt.schedule(&mut queue, i, 0),
                KthreadNext::Wait => {}
            }
        }
        let sampler = Sampler {
            interval: w.record.series_interval.0,
            next: 0,
            series: Series {
                columns: series_columns(&w.processes.iter().map(|p| p.name.clone()).collect::<Vec<_>>()),
                rows: vec![],
            },
        };
        let live = tasks.len();
        Engine {
            k,
            w,
            tasks,
            kts,
            queue,
            cpu_free: vec![0u64; ncpus as usize],
            phases: vec![],
            sampler,
            now: 0,
            steps: 0,
            live,
        }
    }

    /// Run the event loop until every process has finished; with `checking`, `check`
    /// runs every CHECK_EVERY_STEPS steps. With `stop` (per process, an op index), stop
    /// before the first event that would start op `stop[pid]` (or later) of a process.
    fn run_loop(
        &mut self,
        check: &impl Fn(&Kernel, u64) -> Result<(), Error>,
        checking: bool,
        stop: Option<&[usize]>,
    ) -> Result<(), Error> {
        while let Some((_, next)) = self.queue.peek() {
            if let (Some(stop), Event::Task { pid }) = (stop, next) {
                let t = &self.tasks[pid];
                if !t.done && t.cursor == 0 && t.pc.index() >= stop[pid] {
                    return Ok(());
                }
            }
            let (t, ev) = self.queue.pop().expect("an event");
            if self.live == 0 {
                break;
            }
            match ev {
                Event::Kthread { idx, gen } => self.kthread_event(t, idx, gen, true),
                Event::KthreadYield { idx, gen } => self.kthread_event(t, idx, gen, false),
                Event::Task { pid } => {
                    if self.task_event(t, pid) && checking && self.steps.is_multiple_of(CHECK_EVERY_STEPS) {
                        check(&self.k, self.now)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// After the loop: the end time, the last samples, the final check.
    fn finish(&mut self, check: &impl Fn(&Kernel, u64) -> Result<(), Error>, checking: bool) -> Result<(), Error> {
        for t in &self.tasks {
            self.now = self.now.max(t.end_ns);
        }
        self.sampler.finish(&self.k, self.now);
        if checking {
            check(&self.k, self.now)?;
        }
        Ok(())
    }

    /// The run's result (and the kernel's final state).
    fn conclude(self, boot: &Boot) -> (RunResult, Kernel) {
        let Engine { mut k, w, tasks, kts, phases, sampler, now, .. } = self;
        let end = report::RunEnd {
            w,
            machine: &boot.machine,
            knobs: boot.knobs.clone(),
            seed: boot.seed,
            now,
            tasks: &tasks,
            kts: &kts,
            phases,
            series: sampler.series,
            buddy_before: boot.buddy_before.clone(),
            boot_snap: boot.boot_snap.clone(),
            zram_before: boot.zram_before.clone(),
        };
        let mut result = report::build_result(&mut k, end);
        // NR_FREE_PAGES leaves the per-CPU lists out: what they held at the start
        result.extra.insert("nr_pcp_pages_before".into(), json!(boot.pcp_before));
        // the live runner's kernel.reported_during_run_kib (run.rs): what the guest reported
        // from the run's start to its end
        if k.pm.pr.enabled {
            let kib = k.pm.pr.kib_reported - boot.reported_kib_before;
            result.extra.insert("reported_during_run_kib".into(), json!(kib));
            // what the host had discarded as the run started (the start, page_reporting.rs)
            result.extra.insert("unbacked_before_kib".into(), json!(boot.unbacked_before * 4));
        }
        (result, k)
    }

    /// A kernel thread's turn (unless superseded, or its CPU is busy: then it waits).
    /// `woken`: it wakes from a sleep (not resumes after yielding the CPU), so the
    /// scheduler places it (Kt::place).
    fn kthread_event(&mut self, t: u64, idx: usize, gen: u64, woken: bool) {
        let kt = &mut self.kts[idx];
        if gen != kt.gen {
            return;
        }
        // woken with its CPU busy: an idle one it may run on takes it (Kt::place); a
        // thread that yielded waits for its own
        if woken {
            kt.place(None, t, &self.cpu_free);
        }
        let cpu = kt.cpu as usize;
        let start = t.max(self.cpu_free[cpu]);
        if start > t {
            self.queue.push(start, Event::Kthread { idx, gen });
            return;
        }
        self.now = self.now.max(start);
        self.sampler.catch_up(&self.k, self.now);
        enter_step(&mut self.k, start);
        self.k.clock.cpu = kt.cpu;
        self.k.pm.cpu = kt.cpu;
        // a long job (a proactive compaction round) stops at its next cond_resched()
        // past the next event, so that other tasks see its work as it happens
        self.k.clock.yield_at = self.queue.next_at();
        let next = self.k.kthread_step(kt.kind);
        self.k.clock.yield_at = u64::MAX;
        self.k.charge(0); // the step's last spills to the buddy lists
        let end = start + self.k.clock.cost;
        self.cpu_free[cpu] = end;
        kt.busy_ns += self.k.clock.cost;
        kt.runs += 1;
        kt.gen += 1;
        kt.scheduled = None;
        match next {
            KthreadNext::Sleep(d) => kt.schedule(&mut self.queue, idx, end + d),
            KthreadNext::Again => kt.schedule_yield(&mut self.queue, idx, end),
            KthreadNext::Wait => {}
        }
        drain_wakeups(&mut self.k, &mut self.kts, &mut self.queue, &self.cpu_free);
        self.steps += 1;
    }

    /// A process's turn: one step of its current op. Returns whether a step ran.
    fn task_event(&mut self, t: u64, pid: usize) -> bool {
        let k = &mut self.k;
        let task = &mut self.tasks[pid];
        if task.done {
            return false;
        }
        let cpu = task.cpu as usize;
        let start = t.max(self.cpu_free[cpu]);
        if start > t {
            // the CPU is busy: wait in line
            self.queue.push(start, Event::Task { pid });
            return false;
        }
        self.now = self.now.max(start);
        self.sampler.catch_up(k, self.now);
        if task.phase.is_none() {
            task.phase = Some(Phase { name: "main".into(), start, sys: 0, snap: k.vmstat_snapshot() });
        }
        enter_step(k, start);
        k.clock.cpu = task.cpu;
        k.pm.cpu = task.cpu;
        let ops = &self.w.processes[pid].ops;
        let outcome = if k.oom.is_victim(task.mm) || !k.mms[task.mm].alive {
            task.killed = task.killed.clone().or_else(|| Some("oom_kill".into()));
            StepOutcome::Exit
        } else {
            match task.pc.current(ops) {
                Some(op) => ops::step(k, task, op, &mut self.phases),
                None => StepOutcome::Exit,
            }
        };
        self.steps += 1;
        self.after_step(pid, start, outcome);
        self.collect_oom_victims();
        drain_wakeups(&mut self.k, &mut self.kts, &mut self.queue, &self.cpu_free);
        true
    }

    /// Account a step's time and schedule the process's next one.
    fn after_step(&mut self, pid: usize, start: u64, outcome: StepOutcome) {
        self.k.charge(0); // the step's last spills to the buddy lists
        let cost = self.k.clock.cost;
        let task = &mut self.tasks[pid];
        let cpu = task.cpu as usize;
        let (user_ns, sleep, op_done) = match outcome {
            StepOutcome::Continue { user_ns } => (user_ns, 0, false),
            StepOutcome::OpDone { user_ns, sleep } => (user_ns, sleep, true),
            StepOutcome::Exit => {
                let end = start + cost;
                self.cpu_free[cpu] = end;
                finish_task(&mut self.k, task, end, &mut self.phases, &self.w.processes[pid].name);
                self.now = self.now.max(end);
                self.live -= 1;
                return;
            }
        };
        task.sys_ns += cost;
        if let Some(p) = &mut task.phase {
            p.sys += cost;
        }
        task.access_ns += user_ns;
        if op_done {
            task.pc.advance();
            task.cursor = 0;
            task.access_left_ns = None;
        }
        let end = start + cost + user_ns;
        self.cpu_free[cpu] = end;
        task.ready = end + sleep;
        self.queue.push(task.ready, Event::Task { pid });
    }

    /// Processes the OOM killer chose while this step ran end now.
    fn collect_oom_victims(&mut self) {
        for v in std::mem::take(&mut self.k.oom.victims) {
            let t = &mut self.tasks[v.idx()];
            if !t.done {
                t.killed = Some("oom_kill".into());
                finish_task(&mut self.k, t, self.now, &mut self.phases, &self.w.processes[v.idx()].name);
                self.live -= 1;
            }
        }
    }
}

/// A broken invariant as the run's error: the workload, with the machine, every knob and
/// the seed it ran with, is saved to `$THPLAB_REPRO_DIR` (default: the current directory)
/// as thplab-invariant-HASH.json (and the cost profile beside it, when one was given), and
/// the error carries the command that replays it.
fn invariant_error(
    w: &Workload,
    o: &RunOptions,
    machine: &MachineSpec,
    knobs: &knobs::KnobSet,
    seed: u64,
    now: u64,
    v: crate::check::InvariantViolation,
) -> Error {
    let mut doc = w.to_value();
    doc["machine"] = serde_json::to_value(machine).unwrap_or(Value::Null);
    doc["knobs"] = serde_json::to_value(knobs).unwrap_or(Value::Null);
    doc["seed"] = json!(seed);
    if let Some(t) = &o.trace {
        doc["record"]["trace"] = json!(t);
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let dir = std::env::var_os("THPLAB_REPRO_DIR").map_or_else(|| std::path::PathBuf::from("."), Into::into);
    let path = dir.join(format!("thplab-invariant-{:016x}.json", hash));
    let mut repro = None;
    if std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&path, text).is_ok() {
        let mut cmd = format!("thplab run {} --check", path.display());
        if let Some(c) = &o.costs {
            let cp = path.with_extension("costs.toml");
            if std::fs::write(&cp, c.to_toml()).is_ok() {
                cmd.push_str(&format!(" --costs {}", cp.display()));
            }
        }
        repro = Some(cmd);
    }
    Error::Invariant { invariant: v.invariant.to_string(), detail: v.detail, sim_time_ns: now, repro }
}
