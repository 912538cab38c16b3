//! Regression cases: failures the property tests and the soak found, kept as case files.
//!
//! - `tests/regressions/*.json` — fixed bugs. Every file runs with the invariant checker on
//!   (and the end-of-run checks of the property tests) in `cargo test`; a few also have a
//!   named test below with assertions about what the fix changed.
//! - `tests/regressions/pending/*.json` — known model bugs not fixed yet, each with a one-line
//!   diagnosis in its `description`. CI only checks that they are well-formed; the ignored
//!   test `pending_cases_still_fail` runs them (`cargo test --release -p thplab-model --test
//!   regressions -- --ignored`) and fails once one passes: then `git mv` it up a directory.
//!
//! A case file is a workload in the workload language (docs/workload.md) with its machine and
//! knobs inside, so `.venv/bin/thplab run CASE.json --check` replays it. To add one: copy the
//! file `make soak` wrote under soak-failures/ (or write one by hand) into pending/ or here,
//! give it a `name` and a `description` (what broke and why), and run this test.

#[path = "common/cases.rs"]
mod cases;

use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use thplab_workload::workload::workload_from_value;
use thplab_workload::RunResult;

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn committed_cases_keep_the_invariants() {
    let all = cases::load_dir(&cases::regressions_dir());
    assert!(all.len() >= 4, "the regression cases are missing from {}", cases::regressions_dir().display());
    let mut bad = vec![];
    for (p, w) in &all {
        assert!(!cases::description(w).is_empty(), "{}: give the case a description", name_of(p));
        if let Err(e) = cases::check_case(w) {
            bad.push(format!("{}: {e}\n    ({})", name_of(p), cases::description(w)));
        }
    }
    assert!(bad.is_empty(), "{} regression case(s) fail:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn pending_cases_are_well_formed() {
    for (p, w) in cases::load_dir(&cases::pending_dir()) {
        workload_from_value(&w).unwrap_or_else(|e| panic!("{}: {e}", name_of(&p)));
        assert!(w.get("machine").is_some(), "{}: a case names its machine", name_of(&p));
        let d = cases::description(&w);
        assert!(!d.is_empty() && !d.contains('\n'), "{}: a pending case needs a one-line diagnosis", name_of(&p));
    }
}

/// The known model bugs: each must still fail (when one passes, its bug is fixed: move the
/// file up to tests/regressions/ so CI keeps it fixed). Each runs in a child process, so a
/// hang or a crash counts as a failure too.
#[test]
#[ignore = "known model bugs (tests/regressions/pending), for whoever fixes them"]
fn pending_cases_still_fail() {
    let mut fixed = vec![];
    for (p, w) in cases::load_dir(&cases::pending_dir()) {
        let how = match cases::run_in_child("replay", &w, Duration::from_secs(30)) {
            cases::Outcome::Pass => {
                fixed.push(name_of(&p));
                println!("NOW PASSES: {}", name_of(&p));
                continue;
            }
            cases::Outcome::Fail(e) => e.lines().next().unwrap_or("").to_string(),
            cases::Outcome::Hang => "no result within 30 s (hang)".to_string(),
            cases::Outcome::Crash(c) => c,
        };
        println!("still fails: {}\n  {how}\n  diagnosis: {}", name_of(&p), cases::description(&w));
    }
    assert!(fixed.is_empty(), "fixed, move to crates/model/tests/regressions/ with git mv: {}", fixed.join(", "));
}

/// Replay one case file: THPLAB_CASE=path cargo test --release -p thplab-model --test regressions replay -- --ignored --nocapture
#[test]
#[ignore = "replays the case file named by THPLAB_CASE"]
fn replay() {
    cases::replay_env();
}

/// Shrink a failing case file further (drop ops, processes, knobs, devices, fields while it
/// fails the same way): THPLAB_CASE=path cargo test --release -p thplab-model --test
/// regressions minimize -- --ignored --nocapture writes path.min.json.
#[test]
#[ignore = "shrinks the case file named by THPLAB_CASE"]
fn minimize() {
    let Ok(path) = std::env::var("THPLAB_CASE") else {
        println!("set THPLAB_CASE to a case file");
        return;
    };
    let w = cases::load_case(Path::new(&path));
    let Err(msg) = cases::check_case(&w) else {
        println!("{path}: passes, nothing to shrink");
        return;
    };
    let class = cases::failure_class(&msg);
    let (min, msg) =
        cases::minimize(&w, &msg, 5000, &|c| cases::check_case(c).err().filter(|m| cases::failure_class(m) == class));
    let out = format!("{}.min.json", path.trim_end_matches(".json"));
    std::fs::write(&out, cases::case_file_text(&min, cases::description(&min))).unwrap();
    println!("{out}: {msg}");
}

fn case(name: &str) -> Value {
    cases::load_case(&cases::regressions_dir().join(name))
}

fn delta(r: &RunResult, n: &str) -> i64 {
    r.vmstat_delta.get(n).copied().unwrap_or(0)
}

/// move_pages on a small node ran out of memory and the __GFP_THISNODE migration allocation
/// invoked the OOM killer, which killed the migrating process mid-move (stale reverse map).
/// The kernel never OOM-kills for __GFP_THISNODE (__alloc_pages_may_oom); the allocation fails.
#[test]
fn thisnode_migration_does_not_oom_kill() {
    for f in ["thisnode-migration-no-oom-kill.json", "thisnode-migration-no-oom-kill-swap.json"] {
        let r = cases::check_case(&case(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(r.vmstat_delta.get("oom_kill"), None, "{f}");
        assert_eq!(r.processes[0].killed, None, "{f}");
    }
}

/// Issue 13: move_pages of part of a THP to a small node could not get a THP there, split
/// it, and migrated the pieces one by one. The pieces had gone back on the LRU, so the
/// direct reclaim run by one piece's destination allocation freed a later piece, which
/// was then "migrated" from a free frame: `pfn 277956 inside free block 277504/9 is not a
/// free tail`. As in migrate_pages(), the folio is isolated before the allocation and a
/// split keeps its pieces on the migration list (split_folio_to_list).
#[test]
fn migration_split_pieces_stay_isolated() {
    let r = cases::check_case(&case("migration-split-pieces-stay-isolated.json")).unwrap();
    // the THP could not move whole: it was split and its written pieces migrated
    assert_eq!(delta(&r, "thp_migration_split"), 1);
    assert!(delta(&r, "pgmigrate_success") > 0, "{:?}", r.vmstat_delta);
}
