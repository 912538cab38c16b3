//! Tests of the model's mechanisms that drive the kernel directly (they need its
//! crate-private state): compaction, khugepaged, reclaim and swap. Whole-workload tests
//! are in crates/model/tests.

mod aged;
mod common;
mod compaction;
mod hugetlb;
mod khugepaged;
mod page_reporting;
mod reclaim_swap;

/// The module structure (issue 13): apart from the `impl Kernel` blocks (every mechanism
/// names `crate::kernel::Kernel`, and kernel.rs composes each mechanism's state type),
/// the modules' uses of one another form a DAG: no mechanism depends on another that
/// depends back on it.
#[test]
fn module_dependencies_form_a_dag() {
    use std::collections::{BTreeMap, BTreeSet};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut src = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if p.extension().is_some_and(|x| x == "rs") && name != "lib" {
            let text = std::fs::read_to_string(&p).unwrap();
            // the module's own code: before its unit tests, without comments
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .map(|l| l.split("//").next().unwrap())
                .collect::<Vec<_>>()
                .join("\n");
            src.insert(name, code);
        }
    }
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in &src {
        let d = deps.entry(m.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + 7..];
            let target: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if target == *m || !src.contains_key(&target) {
                continue;
            }
            if target == "kernel" {
                let item: String =
                    rest[8..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{').collect();
                assert!(item == "Kernel", "{m}.rs uses crate::kernel::{item}: only `Kernel` may come from kernel.rs");
                continue;
            }
            d.insert(target);
        }
    }
    // depth-first search for a cycle
    fn visit(
        m: &str,
        deps: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in &deps[m] {
            match state.get(d.as_str()) {
                Some(1) => panic!("import cycle: {} -> {d}", path.join(" -> ")),
                Some(_) => {}
                None => visit(d, deps, state, path),
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for m in deps.keys() {
        if !state.contains_key(m) {
            visit(m, &deps, &mut state, &mut vec![]);
        }
    }
}

/// Typed errors (issue 13 item 3): bad input names the field (exit status 2); a broken
/// invariant reports which, when, and saves the workload with the command that replays it
/// (exit status 3).
#[test]
fn errors_bad_input_and_invariant() {
    use crate::{run, RunOptions};
    use thplab_workload::{parse_workload, Error};
    let w =
        parse_workload(r#"{"processes":[{"ops":[{"op":"mmap","name":"r","size":"4M"},{"op":"write","region":"r"}]}]}"#)
            .unwrap();
    let o = RunOptions { trace: Some(vec!["mm_nope".into()]), ..Default::default() };
    let e = run(&w, &o).unwrap_err();
    assert_eq!(e.exit_status(), 2);
    assert!(matches!(&e, Error::BadInput { field, .. } if field == "--trace[0]"), "{e:?}");
    let o = RunOptions { knobs: vec![("vm.compact_memory".into(), "1".into())], ..Default::default() };
    assert!(matches!(run(&w, &o).unwrap_err(), Error::BadInput { field, .. } if field == "vm.compact_memory"));

    let dir = std::env::temp_dir().join(format!("thplab-repro-test-{}", std::process::id()));
    std::env::set_var("THPLAB_REPRO_DIR", &dir);
    crate::check::INJECT.with(|c| c.set(true));
    let o = RunOptions { check: true, seed: Some(7), ..Default::default() };
    let e = run(&w, &o).unwrap_err();
    crate::check::INJECT.with(|c| c.set(false));
    assert_eq!(e.exit_status(), 3);
    let Error::Invariant { invariant, sim_time_ns, repro: Some(repro), .. } = &e else { panic!("{e:?}") };
    assert_eq!(invariant, "injected");
    assert!(*sim_time_ns > 0, "the time of the check");
    assert!(repro.starts_with("thplab run ") && repro.ends_with(" --check"), "{repro}");
    // the saved workload replays: same machine, knobs and seed
    let saved = repro.trim_start_matches("thplab run ").trim_end_matches(" --check");
    let again = parse_workload(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(again.seed, 7);
    assert!(again.machine.is_some());
    assert_eq!(again.knobs.len(), thplab_workload::knobs::defaults().len());
    assert_eq!(run(&again, &RunOptions { check: true, ..Default::default() }).unwrap().processes.len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// `repeat` (a loop, never unrolled in memory) runs exactly what its unrolled list runs,
/// and an op error inside it reports the op's path.
#[test]
fn repeat_runs_like_the_unrolled_list() {
    use crate::{run, RunOptions};
    use thplab_workload::parse_workload;
    let body = r#"{"op":"access","region":"r","pattern":"random","count":5000},{"op":"madvise","region":"r","offset":"2M","length":"2M","advice":"pageout"},{"op":"sleep","duration":"3ms"}"#;
    let head = r#"{"op":"mmap","name":"r","size":"8M"},{"op":"madvise","region":"r","advice":"hugepage"},{"op":"write","region":"r"}"#;
    let unrolled = format!(
        r#"{{"machine":"1G,swap=zram:1G","processes":[{{"ops":[{head},{body},{body},{body},{body},{body},{body}]}}]}}"#
    );
    let looped = format!(
        r#"{{"machine":"1G,swap=zram:1G","processes":[{{"ops":[{head},{{"op":"repeat","count":2,"ops":[{{"op":"repeat","count":3,"ops":[{body}]}}]}}]}}]}}"#
    );
    let o = RunOptions { check: true, ..Default::default() };
    let a = run(&parse_workload(&unrolled).unwrap(), &o).unwrap();
    let b = run(&parse_workload(&looped).unwrap(), &o).unwrap();
    assert!(a.vmstat_delta.get("pswpout").copied().unwrap_or(0) > 0, "the body did something");
    assert_eq!(serde_json::to_value(&a).unwrap(), serde_json::to_value(&b).unwrap());

    let w = r#"{"processes":[{"ops":[{"op":"mmap","name":"r","size":"4M"},{"op":"repeat","count":2,"ops":[
        {"op":"munmap","region":"r"},{"op":"madvise","region":"r","advice":"hugepage"}]}]}]}"#;
    let r = run(&parse_workload(w).unwrap(), &RunOptions::default()).unwrap();
    let errs = &r.processes[0].errors;
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs.iter().all(|e| e.op_index == 1 && e.path.as_deref() == Some("ops[1].ops[1]") && e.errno == "ENOMEM"));
}

/// The series has per-process columns as each process's smaps_rollup shows it.
#[test]
fn series_has_per_process_columns() {
    use crate::{run, RunOptions};
    use thplab_workload::parse_workload;
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"always"},"record":{"series_interval":"1ms"},"processes":[
        {"name":"a","ops":[{"op":"mmap","name":"r","size":"8M"},{"op":"write","region":"r"},{"op":"sleep","duration":"20ms"}]},
        {"name":"b","ops":[{"op":"sleep","duration":"5ms"},{"op":"mmap","name":"r","size":"4M","align":"2M"},{"op":"madvise","region":"r","advice":"nohugepage"},{"op":"write","region":"r"},{"op":"sleep","duration":"20ms"}]}]}"#;
    let r = run(&parse_workload(w).unwrap(), &RunOptions { check: true, ..Default::default() }).unwrap();
    let col = |n: &str| r.series.columns.iter().position(|c| c == n).unwrap_or_else(|| panic!("{n}"));
    let (ah, aa, bh, ba) =
        (col("AnonHugePages_kB[a]"), col("AnonPages_kB[a]"), col("AnonHugePages_kB[b]"), col("AnonPages_kB[b]"));
    let mid = r.series.rows.iter().find(|row| row[0] >= 10e6).unwrap();
    assert_eq!((mid[ah], mid[aa]), (8192.0, 8192.0), "a: 8 MiB of THPs");
    assert_eq!((mid[bh], mid[ba]), (0.0, 4096.0), "b: 4 MiB of base pages");
    let last = r.series.rows.last().unwrap();
    assert_eq!((last[aa], last[ba]), (0.0, 0.0), "both exited");
}

/// The write op's fast path (memory.rs, write_page_fast and its runs, write_run_fast)
/// changes nothing but host time:
/// a fragmenting write and munmap (seed 004's), writes to present, zero-page, swapped and
/// mTHP-backed pages, reclaim inside the fast path's allocations, then the hugetlb pool
/// give identical results (counters, simulated time, latencies, series) with it on and off.
#[test]
fn write_fast_path_changes_nothing_but_speed() {
    use crate::memory::{USE_WRITE_FAST_PATH, WRITE_FAST_FAULTS};
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"madvise","vm.compaction_proactiveness":"0"},
        "record":{"fault_latency":true,"series_interval":"10ms"},
        "processes":[{"name":"idle","ops":[{"op":"sleep","duration":"0"}]},{"name":"p","ops":[
        {"op":"mmap","name":"all","size":"700M"},
        {"op":"write","region":"all"},
        {"op":"munmap","region":"all","every":"2M","offset":"512K","length":"1536K"},
        {"op":"mmap","name":"z","size":"64M"},
        {"op":"read","region":"z"},
        {"op":"write","region":"z","every":"8K","length":"4K","bytes":8,"data":1},
        {"op":"mmap","name":"big","size":"760M"},
        {"op":"write","region":"big","bytes":8,"data":2},
        {"op":"write","region":"all","every":"2M","length":"512K","bytes":8,"data":3},
        {"op":"set","knob":"transparent_hugepage/hugepages-64kB/enabled","value":"always"},
        {"op":"mmap","name":"m","size":"32M"},
        {"op":"write","region":"m"},
        {"op":"munmap","region":"big"},
        {"op":"set","knob":"vm.compaction_proactiveness","value":"20"},
        {"op":"sleep","duration":"1s"},
        {"op":"set","knob":"vm.nr_hugepages","value":"600"}]}]}"#;
    let m = "1G,cpus=2,swap=zram:1G";
    WRITE_FAST_FAULTS.with(|c| c.set(0));
    let on = common::same_on_and_off(w, m, &USE_WRITE_FAST_PATH);
    let fast = WRITE_FAST_FAULTS.with(|c| c.get());
    assert!(fast > 100_000, "the fast path took the base-page faults: {fast}");
    USE_WRITE_FAST_PATH.with(|c| c.set(false));
    common::go(w, m, &[]);
    USE_WRITE_FAST_PATH.with(|c| c.set(true));
    assert_eq!(WRITE_FAST_FAULTS.with(|c| c.get()), fast, "off: no fast fault");
    assert!(on.vmstat_delta.get("pswpout").copied().unwrap_or(0) > 0, "reclaim ran during the writes");
    assert!(on.vmstat_delta.get("htlb_buddy_alloc_success").copied().unwrap_or(0) > 0, "the pool grew");
    assert_eq!(on.processes[1].killed, None, "no OOM kill");
    // two nodes: the zonelists reach the remote node, the runs' allocations stop there
    let two = r#"{"nodes":[{"mem":"512M","cpus":1},{"mem":"512M","cpus":1}],"swap":[{"type":"zram","size":"1G"}]}"#;
    common::same_on_and_off(w, two, &USE_WRITE_FAST_PATH);
    // free page reporting: memory freed, reported while the process sleeps, then faulted
    // again: the runs' pages refault on the host, each charged between its allocation
    // and its fault (fault_run_pcp)
    let reported = r#"{"knobs":{"transparent_hugepage/enabled":"madvise","thplab.free_page_reporting":"1"},
        "processes":[{"name":"idle","ops":[{"op":"sleep","duration":"0"}]},{"name":"p","ops":[
        {"op":"mmap","name":"a","size":"600M"},
        {"op":"write","region":"a"},
        {"op":"munmap","region":"a"},
        {"op":"sleep","duration":"60s"},
        {"op":"phase","name":"again"},
        {"op":"mmap","name":"b","size":"600M"},
        {"op":"write","region":"b"}]}]}"#;
    let quiet = reported.replace(r#""thplab.free_page_reporting":"1""#, r#""thplab.free_page_reporting":"0""#);
    let rep = common::same_on_and_off(reported, m, &USE_WRITE_FAST_PATH);
    let (with, without) = (phase_ns(&rep, "p:again"), phase_ns(&common::go(&quiet, m, &[]), "p:again"));
    assert!(with > without + 10_000_000, "the reported memory's refaults were charged: {with} vs {without} ns");
}

/// The simulated time of phase `name` of a run.
fn phase_ns(r: &thplab_workload::RunResult, name: &str) -> u64 {
    let p = r.phases.iter().find(|p| p.name == name).expect("the phase");
    p.end_ns - p.start_ns
}

/// zap_range()'s runs of order-0 folios (memory.rs, zap_base_run) change nothing but host
/// time: munmaps, MADV_DONTNEED and exits over base pages, some in the swap cache (swapped
/// in from zram), some of a PTE-mapped THP, on a two-node machine and a one-node one.
#[test]
fn zap_runs_change_nothing_but_speed() {
    use crate::memory::USE_ZAP_RUN;
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"madvise","vm.compaction_proactiveness":"0"},
        "record":{"fault_latency":true,"series_interval":"10ms"},
        "processes":[{"name":"idle","ops":[{"op":"sleep","duration":"0"}]},{"name":"p","ops":[
        {"op":"mmap","name":"all","size":"600M"},
        {"op":"write","region":"all"},
        {"op":"munmap","region":"all","every":"2M","offset":"512K","length":"1536K"},
        {"op":"mmap","name":"t","size":"64M"},
        {"op":"madvise","region":"t","advice":"hugepage"},
        {"op":"write","region":"t"},
        {"op":"madvise","region":"t","advice":"dontneed","every":"2M","length":"64K"},
        {"op":"mmap","name":"s","size":"128M"},
        {"op":"write","region":"s","data":"text"},
        {"op":"madvise","region":"s","advice":"pageout"},
        {"op":"read","region":"s","every":"16K","length":"4K"},
        {"op":"munmap","region":"s","every":"64K","length":"32K"},
        {"op":"madvise","region":"all","advice":"dontneed","every":"2M","length":"256K"}]}]}"#;
    let two = r#"{"nodes":[{"mem":"512M","cpus":1},{"mem":"512M","cpus":1}],"swap":[{"type":"zram","size":"1G"}]}"#;
    for m in ["1G,cpus=2,swap=zram:1G", two] {
        let on = common::same_on_and_off(w, m, &USE_ZAP_RUN);
        assert!(on.vmstat_delta.get("pswpin").copied().unwrap_or(0) > 0, "{m}: pages came back through the swap cache");
        assert_eq!(on.processes[1].killed, None, "no OOM kill");
    }
}
