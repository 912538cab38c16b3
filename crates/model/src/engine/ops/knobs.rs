//! The ops that change settings or mark time: set (a knob), prctl, drop_caches, phase.

use super::super::task::*;
use crate::kernel::Kernel;
use serde_json::Value;
use thplab_workload::result::PhaseResult;
use thplab_workload::workload::Op;

/// write a knob (sysfs/sysctl) at this point of the run.
pub(super) fn set(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Set { knob, value } = op else { unreachable!() };
    // a vm.nr_hugepages write is the only set that takes more than one step: the steps after
    // its first continue the resize toward the count its first step checked
    if task.cursor > 0 {
        return set_nr_hugepages(k, task, task.nr_hugepages_count);
    }
    let oi = task.pc.index();
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let v = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Ok((canon, n)) = thplab_workload::knobs::check_assignment(knob, &v) {
        if canon == "vm.nr_hugepages" {
            task.nr_hugepages_count = n.parse().unwrap_or(0);
            return set_nr_hugepages(k, task, task.nr_hugepages_count);
        }
    }
    k.charge(k.costs.syscall_ns);
    if let Err(e) = k.set_knob(knob, &v) {
        err(task, oi, op, "EINVAL", e);
    }
    done
}

/// echo N > /proc/sys/vm/nr_hugepages: set_max_huge_pages() one pool allocation per step
/// (its cond_resched() between allocations), so that kernel threads run meanwhile.
fn set_nr_hugepages(k: &mut Kernel, task: &mut Task, count: u64) -> StepOutcome {
    if task.cursor == 0 {
        k.charge(k.costs.syscall_ns);
        k.hugetlb_resize_begin();
    }
    if k.hugetlb_resize_step(count, task.mm.idx()) {
        task.cursor += 1;
        StepOutcome::Continue { user_ns: 0 }
    } else {
        StepOutcome::OpDone { user_ns: 0, sleep: 0 }
    }
}

/// prctl(PR_SET_THP_DISABLE).
pub(super) fn prctl(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Prctl { thp_disable } = op else { unreachable!() };
    let pid = task.mm;
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    k.charge(k.costs.syscall_ns);
    k.mms[pid].thp_disable = *thp_disable;
    done
}

/// echo N > /proc/sys/vm/drop_caches.
pub(super) fn drop_caches(k: &mut Kernel, _task: &mut Task, op: &Op) -> StepOutcome {
    let Op::DropCaches { value } = op else { unreachable!() };
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    k.charge(k.costs.syscall_ns);
    k.drop_caches(*value as u64);
    done
}

/// a phase marker: close the current phase, open the next.
pub(super) fn phase(k: &mut Kernel, task: &mut Task, op: &Op, phases: &mut Vec<PhaseResult>) -> StepOutcome {
    let Op::Phase { name } = op else { unreachable!() };
    let pid = task.mm;
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let pname = k.mms[pid].name.clone();
    close_phase(k, task, k.clock.now, phases, &pname);
    let i = pid.idx();
    if k.rec.mm_phase.len() <= i {
        k.rec.mm_phase.resize(i + 1, String::new());
    }
    k.rec.mm_phase[i] = format!("{pname}:{name}");
    task.phase = Some(Phase { name: name.clone(), start: k.clock.now, sys: 0, snap: k.vmstat_snapshot() });
    done
}
