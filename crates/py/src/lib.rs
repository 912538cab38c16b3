//! PyO3 bindings: the thin bridge from Python to the Rust model. Everything crosses
//! as JSON text so the Python layer and the result files share one schema.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use thplab_workload::costs::CostProfile;
use thplab_workload::{knobs, parse_workload, MachineSpec};

/// The model's large arrays in transparent huge pages (host_alloc.rs).
#[global_allocator]
static ALLOC: thplab_model::host_alloc::HugePageAlloc = thplab_model::host_alloc::HugePageAlloc;

/// Parse and validate a workload (JSON text); returns it normalised as JSON.
/// Raises ValueError naming the bad field.
#[pyfunction]
fn parse_workload_json(text: &str) -> PyResult<String> {
    parse_workload(text).map(|w| w.to_json()).map_err(PyValueError::new_err)
}

/// Parse a machine argument (shorthand such as "2x512G,cpus=80" or a JSON object).
#[pyfunction]
fn parse_machine(text: &str) -> PyResult<String> {
    MachineSpec::parse_any(text).map(|m| serde_json::to_string(&m).unwrap()).map_err(PyValueError::new_err)
}

/// The pages (4 KiB) the model's buddy allocator manages on a fresh boot of a machine
/// (MemTotal; also MemFree before anything allocates), from its zone layout alone: no run.
/// None for an aged machine, which starts with memory held (run a workload instead).
#[pyfunction]
fn boot_managed_pages(text: &str) -> PyResult<Option<u64>> {
    let m = MachineSpec::parse_any(text).map_err(PyValueError::new_err)?;
    if m.aged {
        return Ok(None);
    }
    thplab_model::mmzone::managed_pages(&m).map(Some).map_err(PyValueError::new_err)
}

/// The knob registry as JSON: name, kind, path, default, values, doc.
#[pyfunction]
fn knob_registry() -> String {
    serde_json::to_string(&knobs::registry()).unwrap()
}

/// Validate one knob assignment; returns (canonical name, normalised value).
#[pyfunction]
fn check_knob(name: &str, value: &str) -> PyResult<(String, String)> {
    knobs::check_assignment(name, value).map_err(PyValueError::new_err)
}

/// The default cost profile as TOML.
#[pyfunction]
fn default_costs() -> String {
    CostProfile::default().to_toml()
}

/// Parse a cost profile (TOML); returns it complete, as TOML.
#[pyfunction]
fn parse_costs(text: &str) -> PyResult<String> {
    CostProfile::from_toml(text).and_then(|c| c.validate().map(|_| c.to_toml())).map_err(PyValueError::new_err)
}

/// Run a workload through the model.
/// workload: JSON text; machine: shorthand/JSON or None (the workload's, else "24G");
/// knobs: list of (name, value) applied over the workload's; costs: TOML text or None;
/// seed: overrides the workload's; check: run the invariant checker.
/// Returns the result as JSON text. Raises ValueError for bad input.
#[pyfunction]
#[pyo3(signature = (workload, machine=None, knobs=vec![], costs=None, seed=None, check=false))]
fn run_model(
    py: Python<'_>,
    workload: &str,
    machine: Option<&str>,
    knobs: Vec<(String, String)>,
    costs: Option<&str>,
    seed: Option<u64>,
    check: bool,
) -> PyResult<String> {
    let w = parse_workload(workload).map_err(PyValueError::new_err)?;
    let machine = machine.map(MachineSpec::parse_any).transpose().map_err(PyValueError::new_err)?;
    let costs = costs.map(CostProfile::from_toml).transpose().map_err(PyValueError::new_err)?;
    let opts = thplab_model::RunOptions { machine, knobs, costs, seed, check, trace: None };
    let r = py.detach(|| thplab_model::run(&w, &opts)).map_err(|e| to_py_err(py, e))?;
    Ok(r.to_json())
}

/// Run several workloads that differ only from some op onwards (see
/// `thplab_model::run_shared`): their common prefix runs once and each continues from a
/// copy of its state, `threads` at a time. Results (JSON text, in order) are those of
/// separate runs. Raises the first run's error.
#[pyfunction]
#[pyo3(signature = (workloads, machine=None, knobs=vec![], costs=None, seed=None, check=false, threads=1))]
#[allow(clippy::too_many_arguments)]
fn run_model_shared(
    py: Python<'_>,
    workloads: Vec<String>,
    machine: Option<&str>,
    knobs: Vec<(String, String)>,
    costs: Option<&str>,
    seed: Option<u64>,
    check: bool,
    threads: usize,
) -> PyResult<Vec<String>> {
    let ws =
        workloads.iter().map(|t| parse_workload(t)).collect::<Result<Vec<_>, _>>().map_err(PyValueError::new_err)?;
    let machine = machine.map(MachineSpec::parse_any).transpose().map_err(PyValueError::new_err)?;
    let costs = costs.map(CostProfile::from_toml).transpose().map_err(PyValueError::new_err)?;
    let opts = thplab_model::RunOptions { machine, knobs, costs, seed, check, trace: None };
    let rs = py.detach(|| thplab_model::run_shared(&ws, &opts, threads));
    rs.into_iter().map(|r| r.map(|r| r.to_json()).map_err(|e| to_py_err(py, e))).collect()
}

/// A run's error as the Python exception of its kind (python/thplab/errors.py): bad input
/// is a ValueError (the API turns it into InputError, exit 2); a broken invariant an
/// InvariantError (exit 3) carrying `invariant`, `sim_time_ns` and `repro`; a live
/// failure a LiveError (exit 4).
fn to_py_err(py: Python<'_>, e: thplab_workload::Error) -> PyErr {
    use thplab_workload::Error;
    let class = match &e {
        Error::BadInput { .. } => return PyValueError::new_err(e.to_string()),
        Error::Invariant { .. } => "InvariantError",
        Error::Live { .. } => "LiveError",
    };
    let built = (|| -> PyResult<PyErr> {
        let cls = py.import("thplab.errors")?.getattr(class)?;
        let exc = cls.call1((e.to_string(),))?;
        if let Error::Invariant { invariant, sim_time_ns, repro, .. } = &e {
            exc.setattr("invariant", invariant)?;
            exc.setattr("sim_time_ns", *sim_time_ns)?;
            exc.setattr("repro", repro.clone())?;
        }
        Ok(PyErr::from_value(exc))
    })();
    built.unwrap_or_else(|err| err)
}

/// Advise the model's large arrays with MADV_HUGEPAGE from now on (True, the default) or not
/// (host_alloc.rs `set_advise`: a process that drives live runs turns it off).
#[pyfunction]
fn set_huge_page_advice(on: bool) {
    thplab_model::host_alloc::set_advise(on);
}

#[pyfunction]
fn version() -> &'static str {
    thplab_workload::VERSION
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_workload_json, m)?)?;
    m.add_function(wrap_pyfunction!(parse_machine, m)?)?;
    m.add_function(wrap_pyfunction!(boot_managed_pages, m)?)?;
    m.add_function(wrap_pyfunction!(knob_registry, m)?)?;
    m.add_function(wrap_pyfunction!(check_knob, m)?)?;
    m.add_function(wrap_pyfunction!(default_costs, m)?)?;
    m.add_function(wrap_pyfunction!(parse_costs, m)?)?;
    m.add_function(wrap_pyfunction!(run_model, m)?)?;
    m.add_function(wrap_pyfunction!(run_model_shared, m)?)?;
    m.add_function(wrap_pyfunction!(set_huge_page_advice, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
