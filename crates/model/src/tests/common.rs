//! Shared by the integration tests: run a workload (JSON text) on a machine (shorthand or
//! JSON) with knobs, the invariant checker on.

use crate::{run, RunOptions};
use thplab_workload::{parse_workload, MachineSpec, RunResult};

pub fn go(w: &str, machine: &str, knobs: &[(&str, &str)]) -> RunResult {
    let w = parse_workload(w).unwrap();
    let o = RunOptions {
        machine: Some(MachineSpec::parse_any(machine).unwrap()),
        knobs: knobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        check: true,
        ..Default::default()
    };
    run(&w, &o).unwrap()
}
