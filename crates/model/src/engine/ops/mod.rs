//! One handler per family of workload ops; `step` runs one step of an op.

mod kalloc;
mod knobs;
mod memory;
mod range;

use super::task::*;
use crate::kernel::Kernel;
use thplab_workload::result::PhaseResult;
use thplab_workload::workload::Op;

/// Run one step of `op` for `task`.
pub(super) fn step(k: &mut Kernel, task: &mut Task, op: &Op, phases: &mut Vec<PhaseResult>) -> StepOutcome {
    match op {
        Op::Mmap { .. } => memory::mmap(k, task, op),
        Op::Write { .. } => memory::write(k, task, op),
        Op::Read { .. } => memory::read(k, task, op),
        Op::Access { .. } => memory::access(k, task, op),
        Op::Munmap { .. } | Op::Madvise { .. } | Op::Mprotect { .. } | Op::MovePages { .. } => {
            range::range_op(k, task, op)
        }
        // nanosleep() wakes past its deadline by sleep_wake_ns (the timer slack and the
        // wake-up); a zero sleep makes no call (the live runner's sleep_for)
        Op::Sleep { duration } => StepOutcome::OpDone {
            user_ns: 0,
            sleep: if duration.0 > 0 { duration.0 + k.costs.sleep_wake_ns } else { 0 },
        },
        Op::Set { .. } => knobs::set(k, task, op),
        Op::Prctl { .. } => knobs::prctl(k, task, op),
        Op::DropCaches { .. } => knobs::drop_caches(k, task, op),
        Op::Phase { .. } => knobs::phase(k, task, op, phases),
        Op::Kalloc { .. } => kalloc::kalloc(k, task, op),
        Op::Kfree { .. } => kalloc::kfree(k, task, op),
        Op::Repeat { .. } => unreachable!("the cursor enters repeats"),
    }
}
