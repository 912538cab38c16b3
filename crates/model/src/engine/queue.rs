//! The event queue and the clock: what runs next (a process step or a kernel thread's
//! step), in time order, ties by kind (kernel threads first) then index; and the kernel
//! threads' scheduling state.

use crate::kernel::Kernel;
use crate::kthread::Kthread;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What the event loop runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// a kernel thread's step; `gen` tells a superseded scheduling from the current one
    Kthread { idx: usize, gen: u64 },
    /// a process's next step
    Task { pid: usize },
    /// a kernel thread that has more work (`KthreadNext::Again`) yields the CPU first
    /// (cond_resched()): at equal times it runs after the processes ready then
    KthreadYield { idx: usize, gen: u64 },
}

/// Events by time (then kind, then index: the order is total, so runs are deterministic).
#[derive(Clone, Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, Event)>>,
}
impl EventQueue {
    pub(super) fn push(&mut self, at: u64, ev: Event) {
        self.heap.push(Reverse((at, ev)));
    }
    pub(super) fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse(x)| x)
    }
    /// The next event, without taking it.
    pub(super) fn peek(&self) -> Option<(u64, Event)> {
        self.heap.peek().map(|Reverse(x)| *x)
    }
    /// When the next event is due (u64::MAX: none).
    pub(super) fn next_at(&self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |Reverse((t, _))| *t)
    }
}

/// Start a step at `start`: the kernel's clock, and nothing charged yet.
pub(super) fn enter_step(k: &mut Kernel, start: u64) {
    k.clock.now = start;
    k.pm.set_now_ns(start);
    k.clock.cost = 0;
    // spills outside any step (the boot layout's frees) are no one's time
    k.pm.spilled = 0;
}

#[derive(Clone)]
pub(super) struct Kt {
    pub(super) kind: Kthread,
    /// the CPU it runs on now (where it last ran)
    pub(super) cpu: u32,
    /// the CPUs it may run on (kswapd and kcompactd: their node's; khugepaged: any); none
    /// for a work item, which runs where it was queued
    pub(super) cpus: Vec<u32>,
    pub(super) gen: u64,
    pub(super) scheduled: Option<u64>,
    pub(super) busy_ns: u64,
    pub(super) runs: u64,
}
impl Kt {
    /// Where a woken thread runs (select_idle_sibling(), simplified): on the CPU it last
    /// ran on unless that one is busy at `at` (running the waker, `waker`, counts as busy),
    /// else on the first of its CPUs that is idle then; with none idle, where it was.
    /// Measured: compaction-fill-p60's write of vm.compaction_proactiveness from the
    /// workload pinned on CPU 0 ran kcompactd0 on CPU 1 for its whole proactive round, and
    /// its 500 ms wake-ups kept it there (docs/page_reporting.md, "Where kcompactd runs").
    pub(super) fn place(&mut self, waker: Option<u32>, at: u64, cpu_free: &[u64]) {
        let busy = |c: u32| Some(c) == waker || cpu_free.get(c as usize).is_none_or(|&f| f > at);
        if !busy(self.cpu) {
            return;
        }
        if let Some(&c) = self.cpus.iter().find(|&&c| !busy(c)) {
            self.cpu = c;
        }
    }

    pub(super) fn schedule(&mut self, q: &mut EventQueue, idx: usize, at: u64) {
        self.scheduled = Some(at);
        q.push(at, Event::Kthread { idx, gen: self.gen });
    }
    /// Run again at `at`, behind the processes ready then (see `Event::KthreadYield`).
    pub(super) fn schedule_yield(&mut self, q: &mut EventQueue, idx: usize, at: u64) {
        self.scheduled = Some(at);
        q.push(at, Event::KthreadYield { idx, gen: self.gen });
    }
}

pub fn kthread_name(k: Kthread) -> String {
    match k {
        Kthread::Kswapd(n) => format!("kswapd{n}"),
        Kthread::Kcompactd(n) => format!("kcompactd{n}"),
        Kthread::Khugepaged => "khugepaged".into(),
        Kthread::PageReporting => "kworker/page_reporting".into(),
    }
}

/// Wake-ups the kernel requested during a step: a waiting or later-scheduled thread runs earlier.
pub(super) fn drain_wakeups(k: &mut Kernel, kts: &mut [Kt], q: &mut EventQueue, cpu_free: &[u64]) {
    // the waker: the task or thread whose step this was, still on its CPU
    let (waker, now) = (k.clock.cpu, k.clock.now + k.clock.cost);
    if std::mem::take(&mut k.pm.pr.schedule_requested) {
        // schedule_delayed_work(&prdev->work, PAGE_REPORTING_DELAY)
        let at = now + crate::page_reporting::PAGE_REPORTING_DELAY_NS;
        k.clock.wakeups.push((Kthread::PageReporting, at));
    }
    for (kind, at) in std::mem::take(&mut k.clock.wakeups) {
        if let Some(i) = kts.iter().position(|t| t.kind == kind) {
            let kt = &mut kts[i];
            if kt.scheduled.is_none_or(|s| s > at) {
                kt.place((at <= now).then_some(waker), at, cpu_free);
                kt.gen += 1;
                kt.schedule(q, i, at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kt::place: a thread woken by a task on its own CPU goes to an idle CPU it may run on;
    /// one whose CPU is idle stays; with every CPU busy it stays; a work item (no CPUs of
    /// its own) never moves; a wake-up for later does not count the waker as busy.
    #[test]
    fn woken_threads_go_to_an_idle_cpu() {
        let kt = |cpu: u32, cpus: Vec<u32>| Kt {
            kind: Kthread::Kcompactd(0),
            cpu,
            cpus,
            gen: 0,
            scheduled: None,
            busy_ns: 0,
            runs: 0,
        };
        let mut t = kt(0, vec![0, 1]);
        t.place(Some(0), 100, &[100, 50]);
        assert_eq!(t.cpu, 1, "the waker's CPU is busy");
        t.place(None, 100, &[50, 50]);
        assert_eq!(t.cpu, 1, "its own CPU idle: it stays");
        t.place(None, 100, &[50, 200]);
        assert_eq!(t.cpu, 0, "its own CPU busy, the other idle");
        t.place(None, 100, &[300, 200]);
        assert_eq!(t.cpu, 0, "every CPU busy: it stays");
        let mut w = kt(0, vec![]);
        w.place(Some(0), 100, &[100, 50]);
        assert_eq!(w.cpu, 0, "a work item runs where it was queued");
        let mut t = kt(0, vec![0, 1]);
        t.place(None, 100, &[100, 50]);
        assert_eq!(t.cpu, 0, "the waker's step ended: its CPU is idle");
    }
}
