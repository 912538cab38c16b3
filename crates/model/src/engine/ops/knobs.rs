//! The ops that change settings or mark time: set (a knob), prctl, drop_caches, phase.

use super::super::task::*;
use crate::kernel::Kernel;
use serde_json::Value;
use thplab_workload::result::PhaseResult;
use thplab_workload::workload::Op;

/// write a knob (sysfs/sysctl) at this point of the run.
pub(super) fn set(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Set { knob, value } = op else { unreachable!() };
    let oi = task.pc.index();
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let v = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(count) = nr_hugepages_count(knob, &v) {
        return set_nr_hugepages(k, task, count);
    }
    k.charge(k.costs.syscall_ns);
    if let Err(e) = k.set_knob(knob, &v) {
        err(task, oi, op, "EINVAL", e);
    }
    done
}

thread_local! {
    /// The last (knob, value) checked by nr_hugepages_count() and its answer: a write of
    /// vm.nr_hugepages runs as one step per pool allocation, each step asks again, and
    /// check_assignment() builds the knob registry each time.
    static LAST_SET: std::cell::RefCell<Option<(String, String, Option<u64>)>> = const { std::cell::RefCell::new(None) };
}

/// Some(count) when `knob` = `value` is a valid write of vm.nr_hugepages.
fn nr_hugepages_count(knob: &str, value: &str) -> Option<u64> {
    LAST_SET.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((k, v, r)) = c.as_ref() {
            if k == knob && v == value {
                return *r;
            }
        }
        let r = match thplab_workload::knobs::check_assignment(knob, value) {
            Ok((canon, n)) if canon == "vm.nr_hugepages" => Some(n.parse().unwrap_or(0)),
            _ => None,
        };
        *c = Some((knob.to_string(), value.to_string(), r));
        r
    })
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
