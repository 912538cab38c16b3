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
    k.pm.now_ms = (start / 1_000_000).min(u32::MAX as u64 - 1) as u32;
    k.clock.cost = 0;
}

#[derive(Clone)]
pub(super) struct Kt {
    pub(super) kind: Kthread,
    pub(super) cpu: u32,
    pub(super) gen: u64,
    pub(super) scheduled: Option<u64>,
    pub(super) busy_ns: u64,
    pub(super) runs: u64,
}
impl Kt {
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
pub(super) fn drain_wakeups(k: &mut Kernel, kts: &mut [Kt], q: &mut EventQueue) {
    if std::mem::take(&mut k.pm.pr.schedule_requested) {
        // schedule_delayed_work(&prdev->work, PAGE_REPORTING_DELAY)
        let at = k.clock.now + k.clock.cost + crate::page_reporting::PAGE_REPORTING_DELAY_NS;
        k.clock.wakeups.push((Kthread::PageReporting, at));
    }
    for (kind, at) in std::mem::take(&mut k.clock.wakeups) {
        if let Some(i) = kts.iter().position(|t| t.kind == kind) {
            let kt = &mut kts[i];
            if kt.scheduled.is_none_or(|s| s > at) {
                kt.gen += 1;
                kt.schedule(q, i, at);
            }
        }
    }
}
