//! Property tests: random workloads (mmap/munmap/madvise/write/read/access/knob changes/
//! kernel allocations/drop_caches/move_pages across several processes) under random knob
//! settings and policies on small machines. Every run has the invariant checker on
//! (RunOptions::check), must not error, and must be deterministic. proptest shrinks a
//! failure to a minimal workload and stores it under proptest-regressions/ so it is
//! replayed as a regression test from then on.

use proptest::prelude::*;
use serde_json::{json, Value};
use thplab_model::{run, RunOptions};
use thplab_workload::{workload::workload_from_value, MachineSpec};

const ADVICE: &[&str] = &["hugepage", "nohugepage", "cold", "pageout", "free", "dontneed", "collapse", "willneed"];
const KNOBS: &[(&str, &[&str])] = &[
    ("transparent_hugepage/enabled", &["always", "madvise", "never"]),
    ("transparent_hugepage/defrag", &["always", "defer", "defer+madvise", "madvise", "never"]),
    ("transparent_hugepage/use_zero_page", &["0", "1"]),
    ("transparent_hugepage/shrink_underused", &["0", "1"]),
    ("transparent_hugepage/khugepaged/max_ptes_none", &["0", "64", "409", "511"]),
    ("thplab.split_zero_subpages", &["none", "seed", "mainline"]),
    ("vm.compaction_proactiveness", &["0", "20", "90"]),
    ("vm.watermark_scale_factor", &["10", "200"]),
    // mTHP (issue 18): PTE-mapped large folios of orders 2 and 4 beside PMD THPs
    ("transparent_hugepage/hugepages-64kB/enabled", &["always", "inherit", "madvise", "never"]),
    ("transparent_hugepage/hugepages-16kB/enabled", &["always", "inherit", "madvise", "never"]),
    ("transparent_hugepage/hugepages-2048kB/enabled", &["always", "inherit", "madvise", "never"]),
    ("thplab.config_thp_swap", &["y", "n"]),
];

fn sz(pages: u64) -> String {
    format!("{}K", pages * 4)
}

/// One op for a process whose regions are r0..r{n}; `k` names a kalloc set.
fn op_strategy() -> impl Strategy<Value = (u8, u8, u64, u64, u64, u8)> {
    (0u8..14, 0u8..3, 0u64..1024, 1u64..1024, 0u64..4096, 0u8..8)
}

fn build_op(t: (u8, u8, u64, u64, u64, u8), sizes: &[u64]) -> Option<Value> {
    let (kind, region, a, b, c, d) = t;
    let r = region as usize % sizes.len();
    let pages = sizes[r];
    let off = a % pages;
    let len = (b % (pages - off)).max(1);
    let name = format!("r{r}");
    Some(match kind {
        0 => json!({"op":"munmap","region":name,"offset":sz(off),"length":sz(len)}),
        1 | 2 => {
            json!({"op":"madvise","region":name,"offset":sz(off),"length":sz(len),"advice":ADVICE[d as usize % ADVICE.len()]})
        }
        3 | 4 => {
            json!({"op":"write","region":name,"offset":sz(off),"length":sz(len),"byte": c % 4000,"bytes":1 + (c % 96),"data": if d % 3 == 0 { json!("random") } else if d % 3 == 1 { json!("text") } else { json!(d) }})
        }
        5 => json!({"op":"write","region":name,"every":"2M","length":sz(1 + a % 511),"data":7}),
        6 => json!({"op":"read","region":name,"offset":sz(off),"length":sz(len)}),
        7 => {
            let pat = ["seq", "random", "zipf"][d as usize % 3];
            json!({"op":"access","region":name,"pattern":pat,"count": 1 + c,"write":0.3})
        }
        8 => {
            let (k, vals) = KNOBS[d as usize % KNOBS.len()];
            json!({"op":"set","knob":k,"value":vals[c as usize % vals.len()]})
        }
        9 => json!({"op":"drop_caches","value": 1 + (d % 3)}),
        10 => json!({"op":"sleep","duration": format!("{}us", 1 + c)}),
        11 => json!({"op":"move_pages","region":name,"offset":sz(off),"length":sz(len.min(64)),"node": d % 2}),
        12 => json!({"op":"prctl","thp_disable": d % 4 == 0}),
        _ => json!({"op":"phase","name":format!("ph{d}")}),
    })
}

prop_compose! {
    fn process()(sizes in prop::collection::vec(1u64..6000, 1..4),
                 kalloc in 0u64..2000,
                 ops in prop::collection::vec(op_strategy(), 0..24),
                 start in 0u64..5000) -> Value {
        let mut v = vec![];
        for (i, s) in sizes.iter().enumerate() {
            v.push(json!({"op":"mmap","name":format!("r{i}"),"size":sz(*s)}));
        }
        if kalloc > 0 {
            v.push(json!({"op":"kalloc","name":"k","size":sz(kalloc)}));
        }
        for o in ops {
            if let Some(op) = build_op(o, &sizes) { v.push(op); }
        }
        if kalloc > 1 {
            v.push(json!({"op":"kfree","region":"k","every":"8K","length":"4K"}));
        }
        json!({"start": format!("{start}us"), "ops": v})
    }
}

prop_compose! {
    fn workload()(procs in prop::collection::vec(process(), 1..4),
                  knobs in prop::collection::vec((0usize..KNOBS.len(), 0usize..5), 0..5),
                  seed in 0u64..1000) -> Value {
        let mut kn = serde_json::Map::new();
        for (k, v) in knobs {
            let (name, vals) = KNOBS[k];
            kn.insert(name.into(), json!(vals[v % vals.len()]));
        }
        let procs: Vec<Value> = procs.into_iter().enumerate().map(|(i, mut p)| { p["name"] = json!(format!("p{i}")); p }).collect();
        json!({"name":"prop","seed":seed,"knobs":kn,"processes":procs})
    }
}

fn machine(i: u8) -> MachineSpec {
    MachineSpec::parse_shorthand(
        ["96M,swap=zram:64M", "128M,cpus=1", "2x64M,cpus=2,swap=disk:32M", "256M,cpus=3"][i as usize % 4],
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]
    #[test]
    fn random_workloads_keep_the_invariants(w in workload(), m in 0u8..4) {
        let wl = workload_from_value(&w).map_err(|e| TestCaseError::fail(format!("generator made a bad workload: {e}\n{w}")))?;
        let o = RunOptions { machine: Some(machine(m)), check: true, ..Default::default() };
        let r = run(&wl, &o).map_err(|e| TestCaseError::fail(format!("{e}\nworkload: {w}")))?;
        // nothing a process maps outlives it
        prop_assert_eq!(r.meminfo["AnonPages"], 0, "{}", w);
        prop_assert_eq!(r.vmstat["nr_anon_transparent_hugepages"], 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]
    #[test]
    fn runs_are_deterministic(w in workload(), m in 0u8..4) {
        let wl = workload_from_value(&w).unwrap();
        let o = RunOptions { machine: Some(machine(m)), ..Default::default() };
        let a = run(&wl, &o).unwrap().to_json();
        let b = run(&wl, &o).unwrap().to_json();
        prop_assert!(a == b, "two runs differ for {}", w);
    }
}
