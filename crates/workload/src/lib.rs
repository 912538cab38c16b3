//! thplab's shared contract: the workload language, the machine description, the
//! knob registry and the result schema, used by the model, the live-kernel runner
//! and the Python layer alike.

pub mod costs;
pub mod error;
pub mod footprint;
pub mod knobs;
pub mod machine;
pub mod result;
pub mod rng;
pub mod trace;
pub mod units;
pub mod workload;

pub use error::Error;
pub use machine::MachineSpec;
pub use result::RunResult;
pub use workload::{parse_workload, Op, Workload};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
