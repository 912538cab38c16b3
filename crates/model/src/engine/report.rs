//! The run's result: what the kernel shows at the end (vmstat, meminfo, buddyinfo,
//! pagetypeinfo, fragmentation), per process, per phase, and the extras.

use super::queue::{kthread_name, Kt};
use super::task::Task;
use crate::kernel::Kernel;
use crate::vmstat;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use thplab_workload::machine::MachineSpec;
use thplab_workload::result::*;
use thplab_workload::workload::Workload;

/// What the engine hands over at the end of a run.
pub(super) struct RunEnd<'a> {
    pub w: &'a Workload,
    pub machine: &'a MachineSpec,
    pub knobs: thplab_workload::knobs::KnobSet,
    pub seed: u64,
    pub now: u64,
    pub tasks: &'a [Task],
    pub kts: &'a [Kt],
    pub phases: Vec<PhaseResult>,
    pub series: Series,
    pub buddy_before: String,
    pub boot_snap: BTreeMap<String, i64>,
    pub zram_before: Vec<(String, Value)>,
}

/// Build the RunResult from the final state.
pub(super) fn build_result(k: &mut Kernel, end: RunEnd<'_>) -> RunResult {
    let RunEnd { w, machine, knobs: ks, seed, now, tasks, kts, phases, series, buddy_before, boot_snap, zram_before } =
        end;
    let end_snap = k.vmstat_snapshot();
    let latency = latency(k);
    let extra = extra(k, kts, &zram_before);
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
    RunResult {
        thplab_version: thplab_workload::VERSION.into(),
        backend: "model".into(),
        workload: w.name.clone(),
        seed,
        machine: serde_json::to_value(machine).unwrap(),
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
    }
}

/// The latency percentiles the run recorded (record.fault_latency).
fn latency(k: &mut Kernel) -> BTreeMap<String, Percentiles> {
    let mut latency = BTreeMap::new();
    if k.rec.record_latency {
        let mut samples = std::mem::take(&mut k.rec.latency_samples);
        // the THP fault kinds are reported even when nothing was sampled
        for kind in ["thp_fault", "thp_alloc"] {
            samples.entry(kind.to_string()).or_default();
        }
        for (key, mut v) in samples {
            latency.insert(key, percentiles(&mut v));
        }
    }
    latency
}

/// extra: OOM kills, mTHP stats, zram, swap devices, TLB and lock statistics, the deferred
/// split queue, khugepaged, kcompactd, the kernel threads and zoneinfo.
fn extra(k: &mut Kernel, kts: &[Kt], zram_before: &[(String, Value)]) -> BTreeMap<String, Value> {
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
    extra.insert(
        "mthp_stats_2048kB".into(),
        serde_json::to_value(&k.rec.mthp[crate::consts::HPAGE_PMD_ORDER as usize]).unwrap(),
    );
    // every anonymous size under sysfs's names, the shape the live runner reports
    extra.insert("mthp_stats".into(), serde_json::to_value(k.rec.mthp_stats()).unwrap());
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
    extra.insert("phase_end".into(), Value::Array(std::mem::take(&mut k.rec.phase_end)));
    extra.insert("tlb_shootdown_ipis".into(), json!(k.rec.tlb_ipis));
    // the 2 MiB hugetlb pool (pages) at the start and the end of the run (hugetlb.rs)
    extra.insert("hugetlb_pool".into(), json!({"boot": k.hstate.boot_pages, "end": k.hstate.nr_huge_pages()}));
    extra.insert("reclaim_tlb_flushes".into(), json!(k.rec.tlb_flushes));
    extra.insert("lock_wait_ns".into(), json!(k.rec.lock_wait_ns));
    extra.insert("lock_acquisitions".into(), json!(k.rec.lock_acquisitions));
    // per lock class, like /proc/lock_stat's waittime-total / acquisitions / contentions
    let ls: serde_json::Map<String, Value> = k
        .rec
        .lock_stat
        .iter()
        .map(|(c, [w, a, n])| (c.to_string(), json!({"wait_ns": w, "acquisitions": a, "contentions": n})))
        .collect();
    extra.insert("lock_stat".into(), Value::Object(ls));
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
                    "nr_free_pages": z.free_pages, "nr_pcp_pages": k.pm.pcp_pages(zi),
                    "nr_kcompactd_isolated_free": k.kcompactd_isolated_pages(zi).0}))
                .collect(),
        ),
    );
    extra
}
