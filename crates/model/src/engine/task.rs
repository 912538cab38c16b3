//! A workload process as the engine runs it: its op cursor, regions, kalloc sets, current
//! phase, errors and clocks; what a step returns; finishing a process.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use serde_json::json;
use std::collections::BTreeMap;
use thplab_workload::result::*;
use thplab_workload::rng::Rng;
use thplab_workload::workload::Op;

/// Page steps per engine step for page-wise ops (one 2 MiB chunk).
pub(super) const PAGES_PER_STEP: u64 = HPAGE_PMD_NR;
pub(super) const PIECES_PER_STEP: u64 = 64;
pub(super) const ACCESSES_PER_STEP: u64 = 16384;
/// With --check, the invariant checker runs every this many engine steps.
pub(super) const CHECK_EVERY_STEPS: u64 = 4096;

#[derive(Clone)]
pub(super) struct Phase {
    pub(super) name: String,
    pub(super) start: u64,
    pub(super) sys: u64,
    pub(super) snap: BTreeMap<String, i64>,
}

#[derive(Clone)]
pub(super) struct Task {
    pub(super) pid: usize,
    /// the process's address space
    pub(super) mm: MmId,
    pub(super) cpu: u32,
    pub(super) ready: u64,
    /// where the process is in its ops (repeats included)
    pub(super) pc: Cursor,
    /// progress within the current op (piece/page/access index)
    pub(super) cursor: u64,
    pub(super) regions: BTreeMap<String, (u64, u64)>,
    pub(super) kallocs: BTreeMap<String, KallocSet>,
    pub(super) phase: Option<Phase>,
    pub(super) errors: Vec<OpError>,
    pub(super) access_ns: u64,
    pub(super) sys_ns: u64,
    pub(super) done: bool,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) rng: Rng,
    pub(super) killed: Option<String>,
    pub(super) smaps: BTreeMap<String, u64>,
    /// access translation cache: (page key, pfn, huge, tlb flush generation)
    pub(super) xlat: Option<(u64, u64, bool, u64)>,
    pub(super) access_left_ns: Option<u64>,
    /// the count of this process's vm.nr_hugepages write in progress (checked at its first step)
    pub(super) nr_hugepages_count: u64,
}

/// A `kalloc` set: its size in bytes and its blocks, (pfn, order) each, None once freed.
pub(super) type KallocSet = (u64, Vec<Option<(u64, u32)>>);

impl Task {
    /// Process `pid`, pinned to `cpu`, starting at `start` ns.
    pub(super) fn new(pid: usize, cpu: u32, start: u64, seed: u64) -> Task {
        Task {
            pid,
            mm: MmId(pid as u32),
            cpu,
            ready: start,
            pc: Cursor::default(),
            cursor: 0,
            regions: BTreeMap::new(),
            kallocs: BTreeMap::new(),
            phase: None,
            errors: vec![],
            access_ns: 0,
            sys_ns: 0,
            done: false,
            start_ns: start,
            end_ns: start,
            rng: Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(pid as u64)),
            killed: None,
            smaps: BTreeMap::new(),
            xlat: None,
            access_left_ns: None,
            nr_hugepages_count: 0,
        }
    }
}

/// The address range of a mapped region, by name.
pub(super) fn region(task: &Task, name: &str) -> Option<(u64, u64)> {
    task.regions.get(name).copied()
}

pub(super) fn close_phase(k: &mut Kernel, task: &mut Task, end: u64, phases: &mut Vec<PhaseResult>, pname: &str) {
    if let Some(p) = task.phase.take() {
        // buddyinfo and zram mm_stat at each phase end, as the live runner records them
        let name = format!("{}:{}", pname, p.name);
        k.rec.phase_end.push(json!({"phase_end": name, "buddyinfo": k.pm.buddyinfo()}));
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

pub(super) fn smaps_rollup(k: &Kernel, mm: MmId) -> BTreeMap<String, u64> {
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

pub(super) fn finish_task(k: &mut Kernel, task: &mut Task, end: u64, phases: &mut Vec<PhaseResult>, pname: &str) {
    if task.smaps.is_empty() {
        task.smaps = smaps_rollup(k, task.mm);
    }
    // the last phase ends where the workload's ops end, before the exit (the live child
    // reads its counters and buddyinfo there too)
    close_phase(k, task, end, phases, pname);
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
    task.done = true;
    task.end_ns = end;
}

/// Record progress within an op: done when `end` reached `total`, else continue next step.
pub(super) fn advance(task: &mut Task, end: u64, total: u64) -> StepOutcome {
    task.cursor = end;
    if end >= total {
        StepOutcome::OpDone { user_ns: 0, sleep: 0 }
    } else {
        StepOutcome::Continue { user_ns: 0 }
    }
}

pub(super) enum StepOutcome {
    Continue { user_ns: u64 },
    OpDone { user_ns: u64, sleep: u64 },
    Exit,
}

pub(super) fn err(task: &mut Task, op_index: usize, op: &Op, errno: &str, message: String) {
    if task.errors.len() < 1000 {
        let path = task.pc.nested_path();
        task.errors.push(OpError { op_index, path, op: op.kind().into(), errno: errno.into(), message });
    }
}

/// Where a process is in its ops: a frame per list entered (the process's ops, then each
/// repeat body), holding the position in that list and, for a body, the iteration. A
/// repeat is a loop here: its body is never copied.
#[derive(Clone, Debug)]
pub(super) struct Cursor {
    frames: Vec<(usize, u64)>,
}
impl Default for Cursor {
    fn default() -> Cursor {
        Cursor { frames: vec![(0, 0)] }
    }
}
impl Cursor {
    /// The list the innermost frame walks, and the count of the repeat it is the body of.
    fn list<'a>(&self, ops: &'a [Op]) -> (&'a [Op], u64) {
        let (mut list, mut count) = (ops, 1);
        for &(i, _) in &self.frames[..self.frames.len() - 1] {
            match &list[i] {
                Op::Repeat { count: c, ops } => (list, count) = (ops.as_slice(), *c),
                _ => unreachable!("a cursor frame is entered at a repeat"),
            }
        }
        (list, count)
    }
    /// The op to run next, entering repeats and looping their bodies; None at the end.
    pub(super) fn current<'a>(&mut self, ops: &'a [Op]) -> Option<&'a Op> {
        loop {
            let (list, count) = self.list(ops);
            let depth = self.frames.len();
            let (i, iter) = self.frames[depth - 1];
            match list.get(i) {
                Some(Op::Repeat { .. }) => self.frames.push((0, 0)),
                Some(op) => return Some(op),
                None if depth == 1 => return None,
                None if iter + 1 < count => self.frames[depth - 1] = (0, iter + 1),
                None => {
                    self.frames.pop();
                    self.frames[depth - 2].0 += 1;
                }
            }
        }
    }
    /// The current op is done: on to the next.
    pub(super) fn advance(&mut self) {
        self.frames.last_mut().expect("a frame").0 += 1;
    }
    /// The index of the current top-level op.
    pub(super) fn index(&self) -> usize {
        self.frames[0].0
    }
    /// The current op's path (`ops[3].ops[1]`) when it is inside a repeat.
    pub(super) fn nested_path(&self) -> Option<String> {
        (self.frames.len() > 1)
            .then(|| self.frames.iter().map(|(i, _)| format!("ops[{i}]")).collect::<Vec<_>>().join("."))
    }
}
