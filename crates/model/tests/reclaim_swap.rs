//! Reclaim and swap (issue 4): MADV_PAGEOUT of THPs and base pages with and without
//! swap, zram, zeromap, readahead, the seed-003 PMD swap entries, lazy-free, kswapd and
//! direct reclaim, OOM on a full swap device, and a no-data-loss round trip. Expected
//! counters are worked out from the kernel's behaviour (and, for the seed-000 workload,
//! measured on the live kernel), not tuned. The invariant checker is on everywhere.

use thplab_model::{run, RunOptions};
use thplab_workload::{parse_workload, MachineSpec, RunResult};

fn go(w: &str, machine: &str, knobs: &[(&str, &str)]) -> RunResult {
    let w = parse_workload(w).unwrap();
    let o = RunOptions {
        machine: Some(MachineSpec::parse_any(machine).unwrap()),
        knobs: knobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        check: true,
        ..Default::default()
    };
    run(&w, &o).unwrap()
}
fn pd(r: &RunResult, phase: &str, c: &str) -> i64 {
    r.phases.iter().find(|p| p.name.ends_with(&format!(":{phase}"))).unwrap_or_else(|| panic!("no phase {phase}")).vmstat_delta.get(c).copied().unwrap_or(0)
}

/// Seed 000's test.c at `size` with one dirty byte per 2 MiB, then a read of every
/// dirty byte, then munmap.
fn seed000(size: &str) -> String {
    format!(
        r#"{{"name":"s0","knobs":{{"transparent_hugepage/enabled":"madvise"}},"processes":[{{"name":"test","ops":[
 {{"op":"phase","name":"fault"}},
 {{"op":"mmap","name":"buf","size":"{size}"}},
 {{"op":"madvise","region":"buf","advice":"hugepage"}},
 {{"op":"write","region":"buf","length":"4K","every":"2M","byte":0,"bytes":1,"data":255}},
 {{"op":"phase","name":"pageout"}},
 {{"op":"madvise","region":"buf","advice":"pageout"}},
 {{"op":"phase","name":"touch"}},
 {{"op":"read","region":"buf","length":"4K","every":"2M"}},
 {{"op":"phase","name":"munmap"}},
 {{"op":"munmap","region":"buf"}}]}}]}}"#
    )
}

#[test]
fn dev_print() {
    for (m, k) in [("4G", vec![]), ("4G,swap=zram:4G", vec![]), ("4G,swap=zram:4G", vec![("thplab.config_thp_swap", "n")])] {
        let r = go(&seed000("2G"), m, &k);
        for p in &r.phases {
            let mut v: Vec<_> = p.vmstat_delta.iter().filter(|(k, _)| k.starts_with("thp_") || k.starts_with("psw") || k.starts_with("swp") || k.starts_with("pgact") || k.contains("lazy")).collect();
            v.sort();
            println!("{m} {:?} {} {:?}", k, p.name, v);
        }
        println!("{}", serde_json::to_string(&r.extra.get("zram_mm_stat")).unwrap());
    }
}
