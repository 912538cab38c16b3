//! Kernel memory held by the process (pipe buffers): kalloc and kfree.

use super::super::task::*;
use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use thplab_workload::workload::Op;

/// kalloc: unmovable kernel pages of an order, a 2 MiB worth per step.
pub(super) fn kalloc(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Kalloc { name, size, order } = op else { unreachable!() };
    let pid = task.mm;
    let oi = task.pc.index();
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let order = order.unwrap_or(0);
    let nblocks = size.0 / (PAGE_SIZE << order);
    if task.cursor == 0 {
        task.kallocs.insert(name.clone(), (size.0, Vec::with_capacity(nblocks as usize)));
    }
    let per_step = (PAGES_PER_STEP >> order).max(1);
    let end = (task.cursor + per_step).min(nblocks);
    let node = k.mms[pid].node;
    for _ in task.cursor..end {
        k.charge(k.costs.page_alloc_ns);
        match k.alloc_kernel_pages(order, node) {
            Some(Pfn(pfn)) => {
                task.kallocs.get_mut(name).unwrap().1.push(Some((pfn, order)));
            }
            None => {
                err(task, oi, op, "ENOMEM", format!("kernel allocation of order {order} failed"));
                return done;
            }
        }
        if !k.mms[pid].alive {
            return StepOutcome::Exit;
        }
    }
    advance(task, end, nblocks)
}

/// kfree: release part of a kalloc set.
pub(super) fn kfree(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Kfree { range } = op else { unreachable!() };
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let Some((size, blocks)) = task.kallocs.get_mut(&range.region) else { return done };
    let bsize = blocks.iter().flatten().next().map_or(PAGE_SIZE, |(_, o)| PAGE_SIZE << o);
    let mut freed = vec![];
    range.for_each_piece(*size, |off, len| {
        let mut b = off / bsize;
        while b * bsize < off + len && (b as usize) < blocks.len() {
            if let Some(x) = blocks[b as usize].take() {
                freed.push(x);
            }
            b += 1;
        }
    });
    for (pfn, order) in freed {
        k.charge(k.costs.page_free_ns);
        k.free_kernel_pages(Pfn(pfn), order);
    }
    done
}
