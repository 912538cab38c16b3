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

#[derive(Clone, Default)]
pub struct Recorder {
    /// event counters (count_vm_event)
    pub vm: VmStat,
    /// per-size mTHP stats (hugepages-<size>kB/stats/*), indexed by folio order; the
    /// gauges nr_anon and nr_anon_partially_mapped are kept here too (mod_mthp_stat)
    pub mthp: [BTreeMap<&'static str, i64>; 10],
    /// record.fault_latency: sample the latencies below
    pub record_latency: bool,
    /// the phase each mm's process is in (`process:phase`, as the live runner names it),
    /// set by the engine at each `phase` op; empty before the first
    pub mm_phase: Vec<String>,
    /// latency samples (ns) by kind, for the whole run and per phase
    /// (`kind@process:phase`, the live runner's keys): "thp_fault" (each successful THP
    /// fault), "thp_alloc" (its page allocation, alloc_thp), "hugetlb_alloc" (each
    /// successful pool allocation of a vm.nr_hugepages write, alloc_pool_huge_folio)
    pub latency_samples: BTreeMap<String, Vec<u64>>,
    /// the enabled tracepoints and the events recorded (trace.rs)
    pub trace: Trace,
    pub oom_kills: Vec<OomReport>,
    /// TLB flushes from reclaim, and those that were IPIs to another CPU
    pub tlb_flushes: u64,
    pub tlb_ipis: u64,
    /// time spent spinning on simulated locks, and acquisitions (locking.rs)
    pub lock_wait_ns: u64,
    pub lock_acquisitions: u64,
    /// the same per lock class (the lock's name as lockdep and /proc/lock_stat give it:
    /// "lru_lock", "si->lock", "ci->lock"): (wait ns, acquisitions, contended acquisitions)
    pub lock_stat: BTreeMap<&'static str, [u64; 3]>,
    /// zram mm_stat at each phase end (the result's extra.zram_mm_stat_phase_end)
    pub zram_phase_end: Vec<Value>,
    /// /proc/buddyinfo at each phase end (the result's extra.phase_end, as the live
    /// runner records it)
    pub phase_end: Vec<Value>,
}

impl Recorder {
    /// One latency sample of `kind` ("thp_fault", "thp_alloc", "hugetlb_alloc") by `mm`:
    /// the run's list and its phase's.
    pub fn latency(&mut self, kind: &str, mm: usize, ns: u64) {
        match self.latency_samples.get_mut(kind) {
            Some(v) => v.push(ns),
            None => drop(self.latency_samples.insert(kind.to_string(), vec![ns])),
        }
        if let Some(ph) = self.mm_phase.get(mm).filter(|p| !p.is_empty()) {
            self.latency_samples.entry(format!("{kind}@{ph}")).or_default().push(ns);
        }
    }
    /// count_vm_event()
    #[inline]
    pub fn count(&mut self, e: Ev) {
        self.vm.count(e);
    }
    /// count_mthp_stat() / mod_mthp_stat(): orders 1..=PMD_ORDER have stats, order 0 none.
    pub fn mod_mthp(&mut self, order: u32, stat: &'static str, n: i64) {
        if (1..=9).contains(&order) {
            *self.mthp[order as usize].entry(stat).or_insert(0) += n;
        }
    }
    /// The per-size stats as sysfs names them, `hugepages-<size>kB/stats/<stat>`, every
    /// anonymous size and every stat file (zeros too), like the live runner's delta.
    pub fn mthp_stats(&self) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        for o in thplab_workload::knobs::MTHP_ANON_ORDERS {
            let dir = thplab_workload::knobs::MTHP_SIZE_DIRS[o as usize];
            for s in thplab_workload::knobs::MTHP_STATS {
                m.insert(format!("{dir}/stats/{s}"), self.mthp[o as usize].get(s).copied().unwrap_or(0));
            }
        }
        m
    }
}
