//! The errors a run can end with, each with its exit status (the `thplab` command line
//! and `thplab-live` use the same numbers; Python raises the matching exception class,
//! python/thplab/errors.py).

use std::fmt;

/// Exit status for bad input: the message names the field.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit status for a broken model invariant (a model bug): the repro was saved.
pub const EXIT_INVARIANT: i32 = 3;
/// Exit status for a live-kernel or environment failure after the run started.
pub const EXIT_LIVE: i32 = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Bad input (workload, machine, knob, cost profile, options); `field` is the path
    /// of the offending field (`workload.processes[0].ops[3]`, `--trace[1]`, `machine`).
    BadInput { field: String, message: String },
    /// The model's invariant checker found state that cannot happen: which invariant,
    /// when (simulated time), the workload saved for replay and the command to replay it.
    Invariant { invariant: String, detail: String, sim_time_ns: u64, repro: Option<String> },
    /// The live kernel or the environment failed after the run started.
    Live { message: String },
}

impl Error {
    /// Bad input from a message of the form `field: what is wrong` (the parsers' style);
    /// the field is what precedes the first `: `.
    pub fn bad_input(msg: impl Into<String>) -> Error {
        let message = msg.into();
        let field = match message.split_once(": ") {
            Some((f, _)) if !f.contains(' ') || f.starts_with("workload") => f.to_string(),
            _ => String::new(),
        };
        Error::BadInput { field, message }
    }
    /// The process exit status for this error.
    pub fn exit_status(&self) -> i32 {
        match self {
            Error::BadInput { .. } => EXIT_BAD_INPUT,
            Error::Invariant { .. } => EXIT_INVARIANT,
            Error::Live { .. } => EXIT_LIVE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadInput { message, .. } => f.write_str(message),
            Error::Invariant { invariant, detail, sim_time_ns, repro } => {
                write!(f, "model invariant broken ({invariant}) at {sim_time_ns} ns simulated time: {detail}")?;
                match repro {
                    Some(r) => write!(f, "; this is a model bug, replay it with: {r}"),
                    None => write!(f, "; this is a model bug (the workload could not be saved)"),
                }
            }
            Error::Live { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    /// Plain messages are the parsers' and validators': bad input.
    fn from(s: String) -> Error {
        Error::bad_input(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fields_and_statuses() {
        let e = Error::bad_input("workload.processes[0].ops[1] (madvise): unknown field `x`");
        assert_eq!(e.exit_status(), 2);
        assert!(matches!(&e, Error::BadInput { field, .. } if field == "workload.processes[0].ops[1] (madvise)"));
        let e = Error::bad_input("--trace[1]: unknown tracepoint `x`");
        assert!(matches!(&e, Error::BadInput { field, .. } if field == "--trace[1]"));
        let e = Error::Invariant {
            invariant: "buddy".into(),
            detail: "d".into(),
            sim_time_ns: 5,
            repro: Some("thplab run x.json --check".into()),
        };
        assert_eq!(e.exit_status(), 3);
        assert!(e.to_string().contains("thplab run x.json --check"));
        assert_eq!(Error::Live { message: "m".into() }.exit_status(), 4);
    }
}
