//! run_shared(): workloads that share a prefix of ops run it once and continue from copies
//! of the whole state; each result must be byte-identical to the workload's separate run.

use thplab_model::{run, run_shared, RunOptions};
use thplab_workload::{parse_workload, Workload};

/// Seed 004's (a) and (b) shape at 2 GiB: fragment, then vm.compaction_proactiveness
/// (the first op that differs), then the hugetlb pool or a MADV_HUGEPAGE heap.
fn seed004_like(kind: char, proactiveness: u32, record: &str) -> Workload {
    let tail = match kind {
        'a' => {
            r#"{"op": "phase", "name": "alloc"},
                  {"op": "set", "knob": "vm.nr_hugepages", "value": "1025"},
                  {"op": "phase", "name": "done"}"#
        }
        _ => {
            r#"{"op": "phase", "name": "java"},
                {"op": "mmap", "name": "heap", "size": "1400M"},
                {"op": "madvise", "region": "heap", "advice": "hugepage"},
                {"op": "write", "region": "heap", "bytes": 8, "data": 1},
                {"op": "phase", "name": "done"}"#
        }
    };
    let latency = kind == 'a';
    let text = format!(
        r#"{{"name": "s4-{kind}-{proactiveness}", "seed": 4, "machine": "2G,cpus=4",
            "knobs": {{"transparent_hugepage/enabled": "madvise", "transparent_hugepage/defrag": "madvise",
                      "vm.compaction_proactiveness": "0"}},
            "record": {{"fault_latency": {latency}, {record}}},
            "processes": [
              {{"name": "idle", "ops": [{{"op": "sleep", "duration": "0"}}]}},
              {{"name": "bench", "ops": [
                {{"op": "mmap", "name": "all", "size": "1800M"}},
                {{"op": "write", "region": "all"}},
                {{"op": "munmap", "region": "all", "every": "2M", "offset": "512K", "length": "1536K"}},
                {{"op": "set", "knob": "vm.compaction_proactiveness", "value": "{proactiveness}"}},
                {{"op": "sleep", "duration": "1s"}},
                {tail}]}}]}}"#
    );
    parse_workload(&text).expect("workload")
}

fn same_as_separate(ws: &[Workload], threads: usize) {
    let o = RunOptions::default();
    let shared = run_shared(ws, &o, threads);
    assert_eq!(shared.len(), ws.len());
    for (w, r) in ws.iter().zip(shared) {
        let alone = run(w, &o).expect("separate run").to_json();
        let r = r.expect("shared run").to_json();
        assert!(r == alone, "{}: the shared-prefix result differs from the separate run's", w.name);
    }
}

#[test]
fn seed004_shape_shared_prefix_results_are_byte_identical() {
    let rec = r#""series_interval": "50ms", "trace": ["thplab_proactive_round", "compaction"]"#;
    let ws = vec![
        seed004_like('a', 0, rec),
        seed004_like('a', 20, rec),
        seed004_like('b', 0, rec),
        seed004_like('b', 20, rec),
    ];
    // the proactive runs do compact: the continuations differ from each other
    let r = run(&ws[1], &RunOptions::default()).unwrap();
    assert!(r.vmstat_delta.get("compact_daemon_migrate_scanned").copied().unwrap_or(0) > 0);
    same_as_separate(&ws, 2);
    same_as_separate(&ws[2..], 1);
    // more threads than the first round needs: every copy is made before the prefix's own
    // state goes to the last workload
    same_as_separate(&ws[..3], 4);
}

#[test]
fn workloads_that_differ_elsewhere_run_separately() {
    let mut b = seed004_like('b', 20, r#""series_interval": "0""#);
    b.seed = 5;
    let ws = vec![seed004_like('a', 0, r#""series_interval": "0""#), b];
    same_as_separate(&ws, 2);
}

#[test]
fn shared_prefix_with_the_invariant_checker() {
    let rec = r#""series_interval": "0""#;
    let ws = vec![seed004_like('a', 20, rec), seed004_like('b', 20, rec)];
    let o = RunOptions { check: true, ..RunOptions::default() };
    for (w, r) in ws.iter().zip(run_shared(&ws, &o, 2)) {
        assert!(r.expect("shared run").to_json() == run(w, &o).expect("separate run").to_json(), "{}", w.name);
    }
}
