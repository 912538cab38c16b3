//! thplab's executable model of Linux memory management (placeholder API; filled in next).
use thplab_workload::costs::CostProfile;
use thplab_workload::{MachineSpec, RunResult, Workload};

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub machine: Option<MachineSpec>,
    pub knobs: Vec<(String, String)>,
    pub costs: Option<CostProfile>,
    pub seed: Option<u64>,
    pub check: bool,
}

pub fn run(w: &Workload, _o: &RunOptions) -> Result<RunResult, String> {
    Ok(RunResult { backend: "model".into(), workload: w.name.clone(), ..Default::default() })
}
