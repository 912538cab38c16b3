//! Run a workload file through the model and print wall time, peak RSS and a summary.
//! Usage: runwl WORKLOAD.json [MACHINE|-] [knob=value ...]   (`-`: the workload's machine)
//! Environment: CHECK=1 runs the invariant checker; JSON_OUT=FILE writes the result (with
//! SHARED, the array of results);
//! NO_RUN_FREE=1 frees per page (compare); TRACE=EV[,EV] selects tracepoints (as `thplab run --trace`); COSTS=FILE a cost profile (TOML).
use std::time::Instant;
use thplab_model::{run, RunOptions};
use thplab_workload::{parse_workload, MachineSpec};

/// The model's large arrays in transparent huge pages (host_alloc.rs).
#[global_allocator]
static ALLOC: thplab_model::host_alloc::HugePageAlloc = thplab_model::host_alloc::HugePageAlloc;

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("workload file");
    let w = parse_workload(&text).expect("workload");
    let mut o = RunOptions::default();
    if let Some(m) = args.get(2).filter(|m| *m != "-") {
        o.machine = Some(MachineSpec::parse_shorthand(m).expect("machine"));
    }
    for kv in args.iter().skip(3) {
        let (k, v) = kv.split_once('=').expect("knob=value");
        o.knobs.push((k.into(), v.into()));
    }
    o.check = std::env::var("CHECK").is_ok();
    // NO_RUN_FREE=1: free_pcppages_bulk() frees page by page (a single run only)
    if std::env::var_os("NO_RUN_FREE").is_some() {
        thplab_model::page_alloc::USE_RUN_FREE.with(|c| c.set(false));
    }
    if let Ok(f) = std::env::var("COSTS") {
        let t = std::fs::read_to_string(&f).expect("cost profile");
        o.costs = Some(thplab_workload::costs::CostProfile::from_toml(&t).expect("cost profile"));
    }
    o.trace = std::env::var("TRACE").ok().map(|t| t.split(',').map(str::to_string).collect());
    if let Ok(more) = std::env::var("SHARED") {
        // SHARED=W2.json,W3.json: run_shared() of this workload and those, 2 at a time
        let mut ws = vec![w];
        for f in more.split(',') {
            ws.push(parse_workload(&std::fs::read_to_string(f).expect("workload file")).expect("workload"));
        }
        let t = Instant::now();
        let rs: Vec<_> = thplab_model::run_shared(&ws, &o, 2).into_iter().map(|r| r.expect("run")).collect();
        println!("wall_s {:.2} peak_rss_mb {}", t.elapsed().as_secs_f64(), peak_rss_kb() / 1024);
        if let Ok(p) = std::env::var("JSON_OUT") {
            std::fs::write(p, serde_json::to_string(&rs).unwrap()).unwrap();
        }
        return;
    }
    let t = Instant::now();
    let r = run(&w, &o).expect("run");
    let wall = t.elapsed().as_secs_f64();
    println!("wall_s {:.2} peak_rss_mb {} sim_s {:.3}", wall, peak_rss_kb() / 1024, r.sim_time_ns as f64 / 1e9);
    for p in &r.phases {
        println!("phase {} {:.3}s sys {:.3}s", p.name, (p.end_ns - p.start_ns) as f64 / 1e9, p.sys_ns as f64 / 1e9);
    }
    for (k, v) in &r.vmstat_delta {
        if k.starts_with("compact") || k.starts_with("thp_fault") || k.starts_with("pgmigrate") || k == "oom_kill" {
            println!("  {k} {v}");
        }
    }
    for (k, v) in &r.latency {
        println!("latency {k} {}", serde_json::to_string(v).unwrap());
    }
    println!("kthreads {}", serde_json::to_string(&r.extra["kthreads"]).unwrap());
    println!("frag {:?}", r.fragmentation.iter().map(|z| (z.zone.clone(), z.fragmentation_score)).collect::<Vec<_>>());
    if let Ok(p) = std::env::var("JSON_OUT") {
        std::fs::write(p, serde_json::to_string(&r).unwrap()).unwrap();
    }
}
