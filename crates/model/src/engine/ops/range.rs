//! The range ops: munmap, madvise, mprotect and move_pages over each piece of a range.

use super::super::task::*;
use crate::kernel::Kernel;
use crate::mmap::{VM_READ, VM_WRITE};
use thplab_workload::workload::{Op, Prot};

/// munmap(2), madvise(2), mprotect(2) or move_pages(2) for each piece, a batch of pieces per step.
pub(super) fn range_op(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let (Op::Munmap { range } | Op::Madvise { range, .. } | Op::Mprotect { range, .. } | Op::MovePages { range, .. }) =
        op
    else {
        unreachable!()
    };
    let pid = task.mm;
    let oi = task.pc.index();
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let Some((addr, size)) = region(task, &range.region) else { return done };
    let nr = range.nr_pieces(size);
    let end = (task.cursor + PIECES_PER_STEP).min(nr);
    for i in task.cursor..end {
        let (off, len) = range.piece(size, i);
        let (s, e) = (addr + off, addr + off + len);
        k.charge(k.costs.syscall_ns);
        match op {
            Op::Munmap { .. } => {
                // vms_gather_munmap_vmas(): a hole in one VMA adds a VMA, refused at the
                // limit (other splits use __split_vma, unchecked)
                if k.mms[pid].hole_in_one_vma(s, e) && k.mms[pid].map_count() >= k.cfg.max_map_count {
                    err(task, oi, op, "ENOMEM", format!("munmap({:#x}, {}): vm.max_map_count reached", s, len));
                    continue;
                }
                // do_vmi_munmap(): a __split_vma per end inside a VMA, then each VMA
                // removed (vms_complete_munmap_vmas, remove_vma). A VMA with an anon_vma
                // links its anon_vma_chains too: a split's anon_vma_clone() links one for
                // the new VMA and vma_prepare()/vma_complete() take the cut one out of the
                // interval tree and put it back (three), a removed piece's
                // unlink_anon_vmas() takes its own out (one)
                let cuts = [k.mms[pid].split_anon_at(s), k.mms[pid].split_anon_at(e)];
                let splits = cuts.iter().flatten().count() as u64;
                let anon_splits = cuts.iter().flatten().filter(|&&a| a).count() as u64;
                let anon_removed = k.mms[pid].anon_vmas_in(s, e);
                let removed = k.mms[pid].unmap_range(s, e).len() as u64;
                k.charge(
                    splits * k.costs.vma_split_ns
                        + removed * k.costs.munmap_vma_ns
                        + (3 * anon_splits + anon_removed) * k.costs.anon_vma_chain_ns,
                );
                k.zap_range(pid, s, e, true);
            }
            Op::Madvise { advice, .. } => {
                if let Err(e) = k.madvise(pid, s, e, *advice) {
                    err(task, oi, op, e, format!("madvise({:#x}, {}, {}) failed", s, len, advice.name()));
                }
            }
            Op::Mprotect { prot, .. } => {
                let set = match prot {
                    Prot::None => 0,
                    Prot::R => VM_READ,
                    Prot::Rw => VM_READ | VM_WRITE,
                };
                let max = k.cfg.max_map_count;
                if !k.mms[pid].modify_splits_ok(s, e, max, |f| (f & !(VM_READ | VM_WRITE)) | set) {
                    err(task, oi, op, "ENOMEM", format!("mprotect({:#x}, {}): vm.max_map_count reached", s, len));
                    continue;
                }
                let flags = match prot {
                    Prot::None => 0,
                    Prot::R => VM_READ,
                    Prot::Rw => VM_READ | VM_WRITE,
                };
                // change_pmd_range(): huge PMDs (and PMD swap entries) only partly in the range are split
                k.mprotect_split_pmds(pid, s, e);
                let (all, merged) = k.mms[pid].modify_flags(s, e, |f| (f & !(VM_READ | VM_WRITE)) | flags);
                // vma_merge_existing_range() -> khugepaged_enter_vma() on each merge target
                for at in merged {
                    k.khugepaged_enter_vma_at(pid, at);
                }
                if !all {
                    err(task, oi, op, "ENOMEM", format!("mprotect({:#x}, {}) on an unmapped range", s, len));
                }
                k.mms[pid].tlb.flush_range(s, e);
            }
            Op::MovePages { node, .. } => {
                if let Err(e) = k.move_pages(pid, s, e, *node as usize) {
                    err(task, oi, op, e, format!("move_pages to node {node}: no such node"));
                }
            }
            _ => unreachable!(),
        }
    }
    advance(task, end, nr)
}
