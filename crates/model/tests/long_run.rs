//! Long runs: an idle machine simulated for 24 h of kernel-thread timers (khugepaged every
//! scan_sleep_millisecs; kcompactd's proactive timer when proactiveness > 0) finishes
//! quickly, with bounded result size. `bench/long_idle.py` runs the same at 1 TiB and
//! reports host wall time and peak memory.

use thplab_model::{run, RunOptions};
use thplab_workload::{parse_workload, MachineSpec};

#[test]
fn idle_day_of_kthread_timers() {
    let w = r#"{"processes":[{"name":"idle","ops":[
      {"op":"mmap","name":"b","size":"64M"},
      {"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"2M","length":"4K"},
      {"op":"sleep","duration":"24h"}]}]}"#;
    let w = parse_workload(w).unwrap();
    let o =
        RunOptions { machine: Some(MachineSpec::parse_shorthand("16G").unwrap()), check: true, ..Default::default() };
    let r = run(&w, &o).unwrap();
    assert!(r.sim_time_ns >= 24 * 3600 * 1_000_000_000);
    let kthreads = r.extra["kthreads"].as_array().unwrap();
    let runs = |n: &str| kthreads.iter().find(|k| k["name"] == n).map(|k| k["runs"].as_u64().unwrap()).unwrap();
    // khugepaged: one wake-up per 10 s for a day
    assert!(runs("khugepaged") >= 8_000, "{kthreads:?}");
    assert!(r.to_json().len() < 2_000_000, "result size stays bounded");
}
