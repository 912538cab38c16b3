//! Benchmark: 10 GiB of 4 KiB faults and of THP faults. Prints simulated faults per
//! second of host time and the model's state bytes per simulated 4 KiB page.
//! Run: cargo run --release -p thplab-model --example bench_faults [-- SIZE MACHINE]

use std::time::Instant;
use thplab_model::{run_keep, RunOptions};
use thplab_workload::{parse_workload, MachineSpec};

/// The model's large arrays in transparent huge pages (host_alloc.rs).
#[global_allocator]
static ALLOC: thplab_model::host_alloc::HugePageAlloc = thplab_model::host_alloc::HugePageAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size = args.get(1).cloned().unwrap_or_else(|| "10G".into());
    let machine = args.get(2).cloned().unwrap_or_else(|| "24G".into());
    let only = args.get(3).cloned();
    let m = MachineSpec::parse_shorthand(&machine).unwrap();
    let sim_pages = m.total_mem() / 4096;
    println!("machine {machine} ({sim_pages} pages), region {size}");
    let thp = r#"{"op":"madvise","region":"r","advice":"hugepage"},"#;
    for (name, advice, pattern) in
        [("4K", "", ""), ("THP", thp, ""), ("THP-touch", thp, r#","every":"2M","length":"4K""#)]
    {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let w = format!(
            r#"{{"processes":[{{"ops":[{{"op":"mmap","name":"r","size":"{size}"}},{advice}{{"op":"write","region":"r"{pattern}}},{{"op":"phase","name":"end"}}]}}]}}"#
        );
        let w = parse_workload(&w).unwrap();
        let t = Instant::now();
        let (r, k) = run_keep(&w, &RunOptions { machine: Some(m.clone()), ..Default::default() }).unwrap();
        let host = t.elapsed().as_secs_f64();
        let faults = r.phases[0].vmstat_delta.get("pgfault").copied().unwrap_or(0) as f64;
        // state while the region was mapped: measure a second kernel kept mid-run is costly;
        // the frame array and free lists dominate and are the same before and after.
        let bytes = k.heap_bytes() as f64;
        let hwm = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<f64>().ok())
            })
            .unwrap_or(0.0)
            * 1024.0;
        println!(
            "{name:>9} faults: {faults:>9.0} in {host:5.2} s host = {:>9.0} faults/s; simulated {:7.3} s; state at rest {:.2} B/page; host peak RSS {:.0} MiB = {:.2} B per simulated 4K page",
            faults / host,
            r.sim_time_ns as f64 / 1e9,
            bytes / sim_pages as f64,
            hwm / (1 << 20) as f64,
            hwm / sim_pages as f64
        );
    }
}
