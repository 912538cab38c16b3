//! Test cases as files: a case is one workload JSON document in the workload language with
//! its machine (and knobs) inside, so `thplab run CASE.json --check` replays it and
//! `crates/model/tests/regressions.rs` runs every file of `crates/model/tests/regressions/`.
//! Shared by the property tests, the soak (`make soak`) and the regression tests; uses only
//! the public API (`thplab_model::{run, RunOptions}`, `thplab_workload`).

#![allow(dead_code)] // each test binary uses its own part

use serde_json::{Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use thplab_model::{run, RunOptions};
use thplab_workload::workload::workload_from_value;
use thplab_workload::RunResult;

/// The directory of committed regression cases (they must pass).
pub fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions")
}

/// Known failures waiting for a model fix (run by an ignored test; CI stays green).
pub fn pending_dir() -> PathBuf {
    regressions_dir().join("pending")
}

/// The workspace root (where `make soak` writes `soak-failures/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Run a case with the invariant checker on and check what must hold once every process
/// has exited. Returns the result, or the first broken invariant (a model panic counts).
pub fn check_case(w: &Value) -> Result<RunResult, String> {
    let wl = workload_from_value(w).map_err(|e| format!("not a valid case: {e}"))?;
    let o = RunOptions { check: true, ..Default::default() };
    // to_string(): whatever error type `run` has (the model's errors may become typed)
    let r = catch_unwind(AssertUnwindSafe(|| run(&wl, &o)))
        .map_err(|p| format!("model panicked: {}", panic_message(&p)))?
        .map_err(|e| e.to_string())?;
    end_state(&r)?;
    Ok(r)
}

/// What every run must leave behind: nothing a process mapped outlives it.
pub fn end_state(r: &RunResult) -> Result<(), String> {
    let mi = |n: &str| r.meminfo.get(n).copied().unwrap_or(0);
    let vm = |n: &str| r.vmstat.get(n).copied().unwrap_or(0);
    for n in ["AnonPages", "AnonHugePages", "PageTables"] {
        if mi(n) != 0 {
            return Err(format!("after every process exited, meminfo {n} is {} kB (expected 0)", mi(n)));
        }
    }
    if vm("nr_anon_transparent_hugepages") != 0 {
        return Err(format!(
            "after every process exited, nr_anon_transparent_hugepages is {}",
            vm("nr_anon_transparent_hugepages")
        ));
    }
    // Pages still allocated once every process exited: the swap cache, zram's pool and the
    // huge zero page (512 pages, until the shrinker frees it). Anything else leaked.
    let free_delta = r.vmstat_delta.get("nr_free_pages").copied().unwrap_or(0);
    let zram_pages: i64 = r
        .extra
        .get("zram_mm_stat")
        .and_then(Value::as_object)
        .map_or(0, |m| m.values().map(|d| d["after"]["mem_used_total"].as_i64().unwrap_or(0) / 4096).sum());
    // freed pages the per-CPU lists still hold (NR_FREE_PAGES leaves them out)
    let pcp_pages: i64 = r.extra.get("zoneinfo").and_then(Value::as_array).map_or(0, |zs| {
        zs.iter()
            .map(|z| z["nr_pcp_pages"].as_i64().unwrap_or(0) + z["nr_kcompactd_isolated_free"].as_i64().unwrap_or(0))
            .sum()
    });
    // the hugetlb pool's growth during the run (vm.nr_hugepages writes)
    let pool =
        r.extra.get("hugetlb_pool").map_or(0, |p| p["end"].as_i64().unwrap_or(0) - p["boot"].as_i64().unwrap_or(0))
            * 512;
    // less what they held at the start (the back-fill of free_page_reporting_start=idle)
    let pcp_before = r.extra.get("nr_pcp_pages_before").and_then(Value::as_i64).unwrap_or(0);
    let held = -free_delta - (mi("SwapCached") / 4) as i64 - zram_pages - (pcp_pages - pcp_before) - pool;
    // the huge zero folio: allocated during the run, or at boot and freed by the shrinker
    // since (thplab.huge_zero_folio=kept)
    let kept = r.knobs.get("thplab.huge_zero_folio").is_some_and(|v| v == "kept");
    if held != 0 && held != if kept { -512 } else { 512 } {
        return Err(format!(
            "after every process exited, {held} pages are neither free nor held by the swap cache, \
             zram, the per-CPU lists, a paused kcompactd, the hugetlb pool or the huge zero page (nr_free_pages {free_delta:+} since boot)"
        ));
    }
    // Unmapped anonymous folios stay on an LRU list only while the swap cache holds them.
    let lru = mi("Active(anon)") + mi("Inactive(anon)") + mi("Active(file)") + mi("Inactive(file)") + mi("Unevictable");
    if lru > mi("SwapCached") {
        return Err(format!(
            "after every process exited, {lru} kB are on LRU lists but only {} kB are in the swap cache",
            mi("SwapCached")
        ));
    }
    Ok(())
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

/// A failure message with its numbers and swap device names blanked: failures of one class
/// are one bug (usually).
pub fn failure_class(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    let first: String = first
        .split(' ')
        .map(|w| {
            let t = w.trim_start_matches('(');
            if t.starts_with("/dev/") || t.starts_with("/swapfile") {
                "DEV"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::new();
    let mut in_num = false;
    for ch in first.chars() {
        if ch.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(ch);
        }
    }
    out
}

/// The case as a file: the workload with `description` set, laid out one op a line.
pub fn case_file_text(w: &Value, description: &str) -> String {
    let mut w = w.as_object().cloned().unwrap_or_default();
    let mut m = Map::new();
    // a stable, readable key order: name, description, seed, machine, knobs, record, processes
    if let Some(v) = w.remove("name") {
        m.insert("name".into(), v);
    }
    w.remove("description");
    m.insert("description".into(), Value::String(description.to_string()));
    for k in ["seed", "machine", "knobs", "record", "processes"] {
        if let Some(v) = w.remove(k) {
            m.insert(k.into(), v);
        }
    }
    let c = |v: &Value| serde_json::to_string(v).unwrap();
    let mut s = String::from("{\n");
    let n = m.len();
    for (i, (k, v)) in m.iter().enumerate() {
        let sep = if i + 1 < n { "," } else { "" };
        if k == "processes" {
            s.push_str("  \"processes\": [\n");
            let procs = v.as_array().cloned().unwrap_or_default();
            for (pi, p) in procs.iter().enumerate() {
                let mut head = p.as_object().cloned().unwrap_or_default();
                let ops = head.remove("ops").unwrap_or(Value::Array(vec![]));
                let head: Vec<String> =
                    head.iter().map(|(k, v)| format!("{}: {}", c(&k.clone().into()), c(v))).collect();
                s.push_str(&format!("    {{{}, \"ops\": [\n", head.join(", ")));
                let ops = ops.as_array().cloned().unwrap_or_default();
                for (oi, op) in ops.iter().enumerate() {
                    s.push_str(&format!("      {}{}\n", c(op), if oi + 1 < ops.len() { "," } else { "" }));
                }
                s.push_str(&format!("    ]}}{}\n", if pi + 1 < procs.len() { "," } else { "" }));
            }
            s.push_str(&format!("  ]{sep}\n"));
        } else {
            s.push_str(&format!("  {}: {}{sep}\n", c(&k.clone().into()), c(v)));
        }
    }
    s.push_str("}\n");
    s
}

/// Every `*.json` case of a directory, sorted by file name.
pub fn load_dir(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => {
            rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
        }
        Err(_) => vec![],
    };
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()));
            (p, v)
        })
        .collect()
}

pub fn load_case(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// The case's one-line description (for pending cases: the diagnosis).
pub fn description(w: &Value) -> &str {
    w.get("description").and_then(Value::as_str).unwrap_or("")
}

/// How to replay a case file and turn it into a committed regression case.
pub fn how_to_commit(file: &str, w: &Value) -> String {
    let machine = match w.get("machine") {
        Some(Value::String(s)) => s.clone(),
        Some(m) => serde_json::to_string(m).unwrap(),
        None => "24G".into(),
    };
    let name = Path::new(file).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!(
        "  replay:      .venv/bin/thplab run {file} --machine '{machine}' --check\n\
         \x20              (or: THPLAB_CASE={file} cargo test --release -p thplab-model --test regressions replay -- --ignored --nocapture)\n\
         \x20 keep it:     cp {file} crates/model/tests/regressions/pending/{name}   (while the model bug is open: edit\n\
         \x20              its \"description\" to a one-line diagnosis; `cargo test -p thplab-model --test regressions -- --ignored` runs it)\n\
         \x20 once fixed:  git mv crates/model/tests/regressions/pending/{name} crates/model/tests/regressions/{name}\n\
         \x20              (every case there runs with the checker in `cargo test`, see crates/model/tests/regressions.rs)"
    )
}

/// How a case ended when run in a child process (the test binary itself, one ignored test).
#[derive(Debug)]
pub enum Outcome {
    Pass,
    /// An invariant broke (or the model panicked): the message.
    Fail(String),
    /// No result within the time limit.
    Hang,
    /// The child died otherwise (abort, stack overflow, killed): how.
    Crash(String),
}

/// Run `case` in a child process: this test binary's ignored test `test` (which replays the
/// file named by THPLAB_CASE, printing `@@error\t<message>` when it fails), killed after `limit`.
pub fn run_in_child(test: &str, case: &Value, limit: std::time::Duration) -> Outcome {
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let tag = format!("thplab-case-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    let file = dir.join(format!("{tag}.json"));
    let out = dir.join(format!("{tag}.out"));
    std::fs::write(&file, serde_json::to_string(case).unwrap()).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--ignored", "--exact", "--nocapture", "-q"])
        .env("THPLAB_CASE", &file)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the test binary");
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&out);
    let Some(status) = status else { return Outcome::Hang };
    if let Some(l) = text.lines().find_map(|l| l.strip_prefix("@@error\t")) {
        return Outcome::Fail(l.replace("\\n", "\n"));
    }
    if status.success() {
        Outcome::Pass
    } else {
        Outcome::Crash(format!("crash: the model process died ({status})"))
    }
}

/// The body of the replay tests: check the case named by THPLAB_CASE; on failure print
/// `@@error\t<message>` (for run_in_child) and panic.
pub fn replay_env() {
    let Ok(path) = std::env::var("THPLAB_CASE") else {
        println!("set THPLAB_CASE to a case file");
        return;
    };
    let w = load_case(Path::new(&path));
    match check_case(&w) {
        Ok(r) => println!(
            "{path}: passes (sim time {} ns, {} processes; vmstat delta {:?})",
            r.sim_time_ns,
            r.processes.len(),
            r.vmstat_delta
        ),
        Err(e) => {
            println!("@@error\t{}", e.replace('\n', "\\n"));
            panic!("{path}: {e}");
        }
    }
}

/// Structural shrinking after proptest's: drop whole processes, ops, knobs, swap devices,
/// nodes and optional fields one at a time while `still_fails` says the candidate fails the
/// same way (it returns that failure's message), at most `budget` runs. Returns the smallest
/// case and its message.
pub fn minimize(
    w: &Value,
    message: &str,
    mut budget: usize,
    still_fails: &dyn Fn(&Value) -> Option<String>,
) -> (Value, String) {
    let mut best = w.clone();
    let mut msg = message.to_string();
    // passes over the candidates; after a success the pass goes on at the same position
    loop {
        let mut changed = false;
        let mut i = 0;
        loop {
            let cands = candidates(&best);
            let Some(cand) = cands.into_iter().nth(i) else { break };
            if budget == 0 {
                return (best, msg);
            }
            budget -= 1;
            match still_fails(&cand) {
                Some(m) => {
                    best = cand;
                    msg = m;
                    changed = true;
                }
                None => i += 1,
            }
        }
        if !changed {
            return (best, msg);
        }
    }
}

/// One-step simplifications of a case, biggest first.
fn candidates(w: &Value) -> Vec<Value> {
    let mut out = vec![];
    let procs = w["processes"].as_array().cloned().unwrap_or_default();
    if procs.len() > 1 {
        for i in 0..procs.len() {
            let mut c = w.clone();
            c["processes"].as_array_mut().unwrap().remove(i);
            out.push(c);
        }
    }
    for (pi, p) in procs.iter().enumerate() {
        let ops = p["ops"].as_array().cloned().unwrap_or_default();
        for oi in (0..ops.len()).rev() {
            let mut c = w.clone();
            c["processes"][pi]["ops"].as_array_mut().unwrap().remove(oi);
            out.push(c);
        }
    }
    if let Some(k) = w.get("knobs").and_then(Value::as_object) {
        for name in k.keys() {
            let mut c = w.clone();
            c["knobs"].as_object_mut().unwrap().remove(name);
            out.push(c);
        }
    }
    if let Some(m) = w.get("machine").and_then(Value::as_object) {
        for f in ["tlb", "kernel_reserve"] {
            if m.contains_key(f) {
                let mut c = w.clone();
                c["machine"].as_object_mut().unwrap().remove(f);
                out.push(c);
            }
        }
        let swaps = m.get("swap").and_then(Value::as_array).map_or(0, Vec::len);
        for i in 0..swaps {
            let mut c = w.clone();
            c["machine"]["swap"].as_array_mut().unwrap().remove(i);
            out.push(c);
        }
        let nodes = m.get("nodes").and_then(Value::as_array).map_or(0, Vec::len);
        for i in (0..nodes).rev().filter(|_| nodes > 1) {
            let mut c = w.clone();
            c["machine"]["nodes"].as_array_mut().unwrap().remove(i);
            out.push(c);
        }
    }
    if w.get("record").is_some() {
        let mut c = w.clone();
        c.as_object_mut().unwrap().remove("record");
        out.push(c);
    }
    for (pi, p) in procs.iter().enumerate() {
        if p.get("start").is_some_and(|s| s != "0us") {
            let mut c = w.clone();
            c["processes"][pi]["start"] = Value::String("0us".into());
            out.push(c);
        }
        let ops = p["ops"].as_array().cloned().unwrap_or_default();
        for (oi, op) in ops.iter().enumerate() {
            for f in
                ["every", "offset", "length", "byte", "bytes", "populate", "align", "order", "stride", "theta", "write"]
            {
                if op.get(f).is_some() {
                    let mut c = w.clone();
                    c["processes"][pi]["ops"][oi].as_object_mut().unwrap().remove(f);
                    out.push(c);
                }
            }
        }
    }
    out
}
