//! What a run records beside the kernel's state: the vm event counters (/proc/vmstat's
//! events), the per-size mTHP stats, latency samples, the trace, OOM kill reports, TLB
//! shootdown and lock statistics, zram's phase-end mm_stat. One place for all of it.

use crate::trace::Trace;
use crate::vmstat::{Ev, VmStat};
use serde_json::Value;
use std::collections::BTreeMap;

/// One OOM kill, as the result reports it.
#[derive(Clone, Debug)]
pub struct OomReport {
    pub t_ns: u64,
    pub victim: String,
    pub rss_kb: u64,
    pub trigger: String,
}

#[derive(Default)]
pub struct Recorder {
    /// event counters (count_vm_event)
    pub vm: VmStat,
    /// per-size mTHP stats for hugepages-2048kB (stats/*)
    pub mthp: BTreeMap<&'static str, u64>,
    /// record.fault_latency: sample the latencies below
    pub record_latency: bool,
    /// each successful THP fault, ns
    pub latency_thp_fault: Vec<u64>,
    /// the page-allocation part of each successful THP fault (alloc_thp), ns
    pub latency_thp_alloc: Vec<u64>,
    /// the enabled tracepoints and the events recorded (trace.rs)
    pub trace: Trace,
    pub oom_kills: Vec<OomReport>,
    /// TLB flushes from reclaim, and those that were IPIs to another CPU
    pub tlb_flushes: u64,
    pub tlb_ipis: u64,
    /// time spent spinning on simulated locks, and acquisitions (locking.rs)
    pub lock_wait_ns: u64,
    pub lock_acquisitions: u64,
    /// zram mm_stat at each phase end (the result's extra.zram_mm_stat_phase_end)
    pub zram_phase_end: Vec<Value>,
}

impl Recorder {
    /// count_vm_event()
    #[inline]
    pub fn count(&mut self, e: Ev) {
        self.vm.count(e);
    }
    /// count_mthp_stat()
    pub fn count_mthp(&mut self, stat: &'static str, n: u64) {
        *self.mthp.entry(stat).or_insert(0) += n;
    }
}
