//! Failures the property tests found, kept as regression tests (minimal workloads).

use thplab_model::{run, RunOptions};
use thplab_workload::{parse_workload, MachineSpec};

/// Found by properties.rs: move_pages on a small node ran out of memory and the
/// __GFP_THISNODE migration allocation invoked the OOM killer, which killed the
/// migrating process mid-move (stale reverse map). The kernel never OOM-kills for
/// __GFP_THISNODE (__alloc_pages_may_oom); the allocation just fails.
#[test]
fn thisnode_migration_does_not_oom_kill() {
    let w = r#"{"knobs":{"thplab.split_zero_subpages":"none","transparent_hugepage/enabled":"always"},
      "processes":[{"name":"p0","ops":[
        {"op":"mmap","name":"r0","size":"7832K"},{"op":"mmap","name":"r1","size":"5356K"},{"op":"mmap","name":"r2","size":"12416K"},
        {"op":"access","region":"r2","pattern":"random","count":95,"write":0.3},
        {"op":"move_pages","region":"r1","offset":"0K","length":"4K","node":1},
        {"op":"write","region":"r0","every":"2M","length":"4K","data":7},
        {"op":"write","region":"r1","offset":"704K","length":"200K","byte":0,"bytes":1,"data":"random"},
        {"op":"move_pages","region":"r1","offset":"0K","length":"4K","node":0}]}]}"#;
    let w = parse_workload(w).unwrap();
    let o = RunOptions { machine: Some(MachineSpec::parse_shorthand("2x64M,cpus=2").unwrap()), check: true, ..Default::default() };
    let r = run(&w, &o).unwrap();
    assert_eq!(r.vmstat_delta.get("oom_kill"), None);
    assert_eq!(r.processes[0].killed, None);
}
