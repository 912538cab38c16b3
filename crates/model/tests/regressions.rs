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
    let o = RunOptions {
        machine: Some(MachineSpec::parse_shorthand("2x64M,cpus=2").unwrap()),
        check: true,
        ..Default::default()
    };
    let r = run(&w, &o).unwrap();
    assert_eq!(r.vmstat_delta.get("oom_kill"), None);
    assert_eq!(r.processes[0].killed, None);
}

/// Issue 13: move_pages of part of a THP to a small node could not get a THP there, split
/// it, and migrated the pieces one by one. The pieces had gone back on the LRU, so the
/// direct reclaim run by one piece's destination allocation freed a later piece, which
/// was then "migrated" from a free frame: `pfn 277956 inside free block 277504/9 is not a
/// free tail`. As in migrate_pages(), the folio is isolated before the allocation and a
/// split keeps its pieces on the migration list (split_folio_to_list).
#[test]
fn migration_split_pieces_stay_isolated() {
    let w = r#"{"name":"prop","seed":0,"knobs":{"transparent_hugepage/enabled":"always"},"processes":[{"start":"0us","name":"p0","ops":[
        {"op":"mmap","name":"r0","size":"15260K"},{"op":"mmap","name":"r1","size":"3928K"},{"op":"kalloc","name":"k","size":"4064K"},
        {"op":"set","knob":"transparent_hugepage/defrag","value":"always"},{"op":"read","region":"r0","offset":"0K","length":"4K"},
        {"op":"write","region":"r0","every":"2M","length":"4K","data":7},{"op":"write","region":"r1","every":"2M","length":"520K","data":7},
        {"op":"move_pages","region":"r1","offset":"504K","length":"256K","node":0},
        {"op":"kfree","region":"k","every":"8K","length":"4K"}]}]}"#;
    let w = parse_workload(w).unwrap();
    let o = RunOptions {
        machine: Some(MachineSpec::parse_shorthand("2x64M,cpus=2,swap=disk:32M").unwrap()),
        check: true,
        ..Default::default()
    };
    let r = run(&w, &o).unwrap();
    let d = |n: &str| r.vmstat_delta.get(n).copied().unwrap_or(0);
    // the THP could not move whole: it was split and its written pieces migrated
    assert_eq!(d("thp_migration_split"), 1);
    assert!(d("pgmigrate_success") > 0, "{:?}", r.vmstat_delta);
}
