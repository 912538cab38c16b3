//! thplab-live: runs a thplab workload on the machine's own kernel, and measures the host's
//! cost primitives (`calibrate`).
//!
//! ```text
//! thplab-live run --workload W.json [--machine M] [--knob k=v ...] [--timeout SECS]
//!                 [--max-mem-share F] [--dry-run] --out R.json
//! thplab-live restore        # undo what an interrupted run left (from the restore journal)
//! thplab-live state          # knob values, swaps and zram state as JSON (for checks)
//! thplab-live calibrate [--quick] [--reps N] [--no-zram] [--no-swapfile] [--only zram|compaction|refault] --out SAMPLES.json
//! thplab-live census (--pid PID ... | --all) [--buffer BYTES] [--no-layout] [--proc-mem] [--out CENSUS.json]
//! ```
//! Exit status: 0 ok; 1 failed during the run (machine restored); 2 bad input or refused
//! (nothing touched); 3 time limit; 128+N killed by signal N (machine restored).

mod calibrate;
mod calibrate_mm;
mod census;
mod census_maps;
mod census_scan;
mod child;
mod host;
mod run;
mod safety;
mod swap;
mod util;

use serde_json::json;

fn usage() -> ! {
    eprintln!(
        "usage: thplab-live run --workload FILE [--machine M] [--knob NAME=VALUE ...] [--timeout SECS] [--max-mem-share F] [--dry-run] [--out FILE]\n       thplab-live restore\n       thplab-live state\n       thplab-live calibrate [--quick] [--reps N] [--no-zram] [--no-swapfile] [--only zram|compaction|refault] [--out FILE]\n       thplab-live census (--pid PID ... | --all) [--buffer BYTES] [--no-layout] [--proc-mem] [--out FILE]"
    );
    std::process::exit(2)
}

fn fail(msg: &str, code: i32) -> ! {
    eprintln!("thplab-live: {msg}");
    std::process::exit(code)
}

fn write_out(out: Option<&str>, v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap();
    match out {
        Some(p) if p != "-" => {
            if let Err(e) = thplab_workload::result::write_atomic(std::path::Path::new(p), text.as_bytes()) {
                fail(&format!("cannot write {p}: {e}"), 1);
            }
        }
        _ => println!("{text}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else { usage() };
    let mut it = args[1..].iter();
    let mut workload = None;
    let mut machine = None;
    let mut knobs = vec![];
    let mut timeout = None;
    let mut share = 0.5;
    let mut out: Option<String> = None;
    let mut dry = false;
    let mut quick = false;
    let mut only: Option<String> = None;
    let mut reps = None;
    let mut zram = true;
    let mut swapfile = true;
    let mut pids: Vec<i32> = vec![];
    let mut all = false;
    let mut buffer = 64usize << 10;
    let mut layout = true;
    let mut proc_mem = false;
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().unwrap_or_else(|| fail(&format!("{name} needs a value"), 2));
        match a.as_str() {
            "--workload" => workload = Some(val("--workload")),
            "--machine" => machine = Some(val("--machine")),
            "--knob" => {
                let kv = val("--knob");
                let (k, v) =
                    kv.split_once('=').unwrap_or_else(|| fail(&format!("--knob expects NAME=VALUE, got `{kv}`"), 2));
                knobs.push((k.to_string(), v.to_string()));
            }
            "--timeout" => {
                timeout = Some(
                    val("--timeout")
                        .parse::<f64>()
                        .ok()
                        .filter(|t| *t > 0.0)
                        .unwrap_or_else(|| fail("--timeout expects positive seconds", 2)),
                )
            }
            "--max-mem-share" => {
                share = val("--max-mem-share")
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && *s <= 0.95)
                    .unwrap_or_else(|| fail("--max-mem-share expects a fraction in (0, 0.95]", 2))
            }
            "--out" => out = Some(val("--out")),
            "--dry-run" => dry = true,
            "--quick" => quick = true,
            "--reps" => {
                reps = Some(
                    val("--reps")
                        .parse::<usize>()
                        .ok()
                        .filter(|r| *r >= 1 && *r <= 1000)
                        .unwrap_or_else(|| fail("--reps expects 1..1000", 2)),
                )
            }
            "--no-zram" => zram = false,
            "--no-swapfile" => swapfile = false,
            "--only" => {
                let v = val("--only");
                if !matches!(v.as_str(), "zram" | "compaction" | "refault") {
                    fail(&format!("--only expects `zram`, `compaction` or `refault`, got `{v}`"), 2)
                }
                only = Some(v);
            }
            "--pid" => {
                let v = val("--pid");
                for p in v.split(',') {
                    pids.push(
                        p.trim()
                            .parse::<i32>()
                            .ok()
                            .filter(|p| *p > 0)
                            .unwrap_or_else(|| fail(&format!("--pid expects process ids, got `{v}`"), 2)),
                    )
                }
            }
            "--all" => all = true,
            "--buffer" => {
                buffer = val("--buffer")
                    .parse::<usize>()
                    .ok()
                    .filter(|b| b.is_power_of_two() && *b >= 1 << 16 && *b <= 1 << 30)
                    .unwrap_or_else(|| fail("--buffer expects a power of two of bytes in 65536..1073741824", 2))
            }
            "--no-layout" => layout = false,
            "--proc-mem" => proc_mem = true,
            "-h" | "--help" => usage(),
            other => fail(&format!("unknown argument `{other}`"), 2),
        }
    }
    match cmd.as_str() {
        "run" => {
            let Some(wp) = workload else { fail("run: --workload FILE is required", 2) };
            let text = if wp == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .unwrap_or_else(|e| fail(&format!("reading stdin: {e}"), 2));
                s
            } else {
                std::fs::read_to_string(&wp).unwrap_or_else(|e| fail(&format!("cannot read workload {wp}: {e}"), 2))
            };
            let ra = run::RunArgs {
                workload_text: text,
                machine,
                knobs,
                timeout_s: timeout,
                max_mem_share: share,
                out: out.clone(),
                dry_run: dry,
            };
            match run::run(&ra) {
                Ok(v) => write_out(ra.out.as_deref(), &v),
                Err(run::RunError::Input(m)) => fail(&m, 2),
                Err(run::RunError::Failed(m)) => fail(&m, 1),
                Err(run::RunError::Aborted(m, c)) => fail(&m, c),
            }
        }
        "restore" => {
            if !util::is_root() {
                fail("restore needs root", 2);
            }
            let _lock = safety::RunLock::take().unwrap_or_else(|e| fail(&e, 2));
            match safety::repair_stale() {
                Ok(Some(n)) => eprintln!("thplab-live: {n}"),
                Ok(None) => eprintln!("thplab-live: nothing to restore (no journal at {})", safety::journal_path()),
                Err(e) => fail(&e, 1),
            }
        }
        "state" => {
            let lk = host::live_knobs();
            let mut zram = serde_json::Map::new();
            for n in 0..16 {
                let d = format!("zram{n}");
                if let Some(ds) = util::read_trim(&format!("/sys/block/{d}/disksize")) {
                    zram.insert(d.clone(), json!({"disksize": ds, "comp_algorithm": util::read_trim(&format!("/sys/block/{d}/comp_algorithm"))}));
                }
            }
            let v = json!({
                "knobs": host::knob_values(&lk),
                "swaps": util::read_file("/proc/swaps").unwrap_or_default(),
                "zram": zram,
                "journal": std::path::Path::new(&safety::journal_path()).exists(),
            });
            write_out(out.as_deref(), &v);
        }
        "calibrate" => {
            let _lock =
                if util::is_root() { Some(safety::RunLock::take().unwrap_or_else(|e| fail(&e, 2))) } else { None };
            if util::is_root() {
                if let Err(e) = safety::repair_stale() {
                    fail(&e, 2)
                }
            }
            safety::install_signal_handlers();
            // on one CPU throughout, as a run's processes are (run.rs): a measurement that
            // backs memory and then allocates it finds the blocks on the same CPU's lists
            let cpus = host::allowed_cpus();
            let pinned = host::pin_to(cpus[0]);
            let r = if only.as_deref() == Some("zram") {
                calibrate::calibrate_zram_only(quick, reps)
            } else if only.as_deref() == Some("compaction") {
                calibrate::calibrate_compaction_only(quick, reps)
            } else if only.as_deref() == Some("refault") {
                calibrate::calibrate_refault_only(quick, reps)
            } else {
                calibrate::calibrate(quick, reps, zram, swapfile)
            };
            if pinned {
                host::pin_to_set(&cpus);
            }
            match r {
                Ok(v) => write_out(out.as_deref(), &v),
                Err(calibrate::CalError::Input(m)) => fail(&m, 2),
                Err(calibrate::CalError::Failed(m, c)) => fail(&m, c),
            }
        }
        "census" => {
            let ca = census::CensusArgs { pids, all, buffer, layout, proc_mem };
            match census::census(&ca) {
                Ok(v) => write_out(out.as_deref(), &v),
                Err(census::CensusError::Input(m)) => fail(&m, 2),
                Err(census::CensusError::Failed(m)) => fail(&m, 1),
            }
        }
        _ => usage(),
    }
}
