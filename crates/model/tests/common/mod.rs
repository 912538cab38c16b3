//! Shared by the integration tests: run a workload on a machine (shorthand or JSON) with
//! knobs and costs, the invariant checker on; read a phase's simulated time.

use thplab_model::{run, RunOptions};
use thplab_workload::costs::CostProfile;
use thplab_workload::{parse_workload, MachineSpec, RunResult, Workload};

pub fn go(w: &str, machine: &str, knobs: &[(&str, &str)]) -> RunResult {
    run_with(&parse_workload(w).unwrap(), Some(machine), knobs, None)
}

/// A run with the invariant checker on `machine` (None: the workload's own), with these
/// knobs and costs (None: the defaults).
pub fn run_with(w: &Workload, machine: Option<&str>, knobs: &[(&str, &str)], costs: Option<CostProfile>) -> RunResult {
    let o = RunOptions {
        machine: machine.map(|m| MachineSpec::parse_any(m).unwrap()),
        knobs: knobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        costs,
        check: true,
        ..Default::default()
    };
    run(w, &o).unwrap()
}

/// The simulated time of the phase whose name ends with `suffix` (e.g. ":zap").
pub fn phase_ns(r: &RunResult, suffix: &str) -> u64 {
    let p = r.phases.iter().find(|p| p.name.ends_with(suffix)).unwrap();
    p.end_ns - p.start_ns
}
