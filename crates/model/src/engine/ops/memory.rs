//! The memory ops: mmap (MAP_POPULATE), write, read and access streams.

use super::super::task::*;
use crate::consts::*;
use crate::kernel::Kernel;
use crate::memory::Fault;
use crate::mm_types::*;
use crate::mmap::{VM_READ, VM_WRITE};
use thplab_workload::rng::Zipf;
use thplab_workload::workload::{AccessPattern, Op};

/// mmap(2): a region, top-down and THP-aligned; MAP_POPULATE write-faults every page.
pub(super) fn mmap(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Mmap { name, size, align, populate } = op else { unreachable!() };
    let pid = task.mm;
    let oi = task.pc.index();
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    if task.cursor == 0 {
        k.charge(k.costs.syscall_ns);
        // do_mmap(): "Too many mappings?"
        if k.mms[pid].map_count() > k.cfg.max_map_count {
            err(task, oi, op, "ENOMEM", "vm.max_map_count reached".into());
            return done;
        }
        let Some(addr) = k.mms[pid].get_unmapped_area(size.0, align.map(|a| a.0)) else {
            err(task, oi, op, "ENOMEM", "address space exhausted".into());
            return done;
        };
        let (at, merged) = k.mms[pid].insert_vma(addr, addr + size.0, VM_READ | VM_WRITE);
        // __mmap_region(): vma_merge_new_range() calls khugepaged_enter_vma() on the VMA it
        // expanded; a fresh anonymous VMA is not entered (__mmap_new_vma enters file VMAs
        // only, and an anonymous one has no anon_vma yet, which TVA_KHUGEPAGED requires)
        if merged {
            k.khugepaged_enter_vma_at(pid, at);
        }
        task.regions.insert(name.clone(), (addr, size.0));
        if !populate {
            return done;
        }
    }
    // MAP_POPULATE: populate_vma_page_range() with FOLL_TOUCH | FOLL_WRITE: write-fault
    // every page, then follow it: follow_page_pte() marks a PTE-mapped folio accessed
    // (folio_mark_accessed, once per page), follow_huge_pmd() only sets the PMD's
    // accessed bit (touch_pmd), which the fault already set
    let (addr, size) = task.regions[name];
    let pages = size / PAGE_SIZE;
    let end = (task.cursor + PAGES_PER_STEP).min(pages);
    for p in task.cursor..end {
        let a = addr + p * PAGE_SIZE;
        if !matches!(k.follow(pid, a), crate::memory::Mapping::Page(..))
            && k.handle_mm_fault(pid, a, true) == Fault::Oom
        {
            return StepOutcome::Exit;
        }
        if let crate::memory::Mapping::Page(Pfn(pfn), false) = k.follow(pid, a) {
            let head = k.folio_head(pfn);
            k.folio_mark_accessed(head);
        }
    }
    advance(task, end, pages)
}

/// memset into every page of the range.
pub(super) fn write(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Write { range, byte, bytes, data } = op else { unreachable!() };
    let mut hint = crate::memory::WriteHint::new();
    page_op_runs(k, task, op, range, |k, pid, a, max| {
        let b = byte.unwrap_or(0);
        let n = bytes.unwrap_or(PAGE_SIZE as u32 - b);
        k.write_run_fast(pid, a, max, b, n, data, &mut hint)
    })
}

/// a one-byte load from every page of the range.
pub(super) fn read(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Read { range, .. } = op else { unreachable!() };
    page_op(k, task, op, range, |k, pid, a| k.read_page(pid, a))
}

/// a stream of loads and stores through the TLB, `count` of them or for `duration`.
pub(super) fn access(k: &mut Kernel, task: &mut Task, op: &Op) -> StepOutcome {
    let Op::Access { range, pattern, count, duration, write, stride, theta } = op else { unreachable!() };
    let done = StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    let Some((addr, size)) = region(task, &range.region) else { return done };
    let off = range.offset.map_or(0, |s| s.0);
    let len = range.length.map_or(size.saturating_sub(off), |s| s.0);
    if task.access_left_ns.is_none() {
        task.access_left_ns = duration.map(|d| d.0);
    }
    let stride = stride.map_or(64, |s| s.0);
    let wfrac = write.unwrap_or(0.0);
    let theta = theta.unwrap_or(0.99);
    let batch = match count {
        Some(c) => (c - task.cursor).min(ACCESSES_PER_STEP),
        None => ACCESSES_PER_STEP,
    };
    let mut cycles = 0.0f64;
    let lines = (len / 64).max(1);
    let pages = (len / PAGE_SIZE).max(1);
    let zipf = (*pattern == AccessPattern::Zipf && theta > 0.0).then(|| Zipf::new(pages, theta));
    let budget_ns = task.access_left_ns;
    let mut n = 0;
    while n < batch {
        let o = match pattern {
            AccessPattern::Seq => (task.cursor.wrapping_add(n)).wrapping_mul(stride) % len.max(1),
            AccessPattern::Random => task.rng.below(lines) * 64,
            AccessPattern::Zipf => {
                let page = match &zipf {
                    Some(z) => z.sample(&mut task.rng),
                    None => task.rng.below(pages),
                };
                page * PAGE_SIZE + task.rng.below(64) * 64
            }
        };
        let a = addr + off + o;
        let is_write = wfrac > 0.0 && task.rng.unit() < wfrac;
        match access_one(k, task, a, is_write) {
            Some(c) => cycles += c,
            None => return StepOutcome::Exit,
        }
        n += 1;
        if let Some(b) = budget_ns {
            if k.costs.cycles_to_ns(cycles) as u64 + k.clock.cost >= b.min(1_000_000) {
                break;
            }
        }
    }
    task.cursor += n;
    let user_ns = k.costs.cycles_to_ns(cycles).round() as u64;
    let finished = match (count, task.access_left_ns) {
        (Some(c), _) => task.cursor >= *c,
        (None, Some(left)) => {
            let used = user_ns + k.clock.cost;
            task.access_left_ns = Some(left.saturating_sub(used));
            used >= left
        }
        _ => true,
    };
    if finished {
        StepOutcome::OpDone { user_ns, sleep: 0 }
    } else {
        StepOutcome::Continue { user_ns }
    }
}

/// Apply `f` to every page of a range op, one 2 MiB worth of pages per step.
pub(super) fn page_op(
    k: &mut Kernel,
    task: &mut Task,
    op: &Op,
    range: &thplab_workload::workload::RangeSpec,
    mut f: impl FnMut(&mut Kernel, MmId, u64) -> Fault,
) -> StepOutcome {
    page_op_runs(k, task, op, range, |k, pid, a, _| (f(k, pid, a), 1))
}

/// page_op() with `f` taking runs of pages: f(kernel, mm, addr, max) does between 1 and
/// `max` consecutive pages from `addr` on (in one piece of the range, within the step's
/// budget) and returns the last one's result and how many it did.
pub(super) fn page_op_runs(
    k: &mut Kernel,
    task: &mut Task,
    op: &Op,
    range: &thplab_workload::workload::RangeSpec,
    mut f: impl FnMut(&mut Kernel, MmId, u64, u64) -> (Fault, u64),
) -> StepOutcome {
    let pid = task.mm;
    let Some(&(addr, size)) = task.regions.get(&range.region) else {
        return StepOutcome::OpDone { user_ns: 0, sleep: 0 };
    };
    // Walk pages across pieces with a flat cursor (pages already done).
    let mut skipped = 0u64;
    let mut budget = PAGES_PER_STEP;
    let mut outcome = None;
    let cursor = task.cursor;
    let mut done_pages = 0u64;
    let mut total = 0u64;
    range.for_each_piece(size, |off, len| {
        let np = len.div_ceil(PAGE_SIZE);
        total += np;
        if outcome.is_some() || budget == 0 {
            return;
        }
        if skipped + np <= cursor {
            skipped += np;
            return;
        }
        let first = cursor.saturating_sub(skipped);
        skipped += first;
        let mut p = first;
        while p < np {
            if budget == 0 {
                break;
            }
            let a = addr + off + p * PAGE_SIZE;
            let (r, did) = f(k, pid, a, budget.min(np - p));
            // the pages before the last one of a run all succeeded
            budget -= did - 1;
            done_pages += did - 1;
            p += did;
            let a = a + (did - 1) * PAGE_SIZE;
            match r {
                Fault::Ok => {}
                Fault::Segv => {
                    outcome = Some(("SIGSEGV", a));
                    return;
                }
                Fault::Oom => {
                    outcome = Some(("OOM", a));
                    return;
                }
            }
            budget -= 1;
            done_pages += 1;
        }
        skipped += np - first;
    });
    if let Some((what, a)) = outcome {
        if what == "SIGSEGV" {
            let oi = task.pc.index();
            err(
                task,
                oi,
                op,
                "SIGSEGV",
                format!("{} at {:#x}: no writable mapping; the process is killed", op.kind(), a),
            );
            task.killed = Some("SIGSEGV".into());
        } else {
            task.killed = Some("oom_kill".into());
        }
        return StepOutcome::Exit;
    }
    task.cursor += done_pages;
    if task.cursor >= total {
        StepOutcome::OpDone { user_ns: 0, sleep: 0 }
    } else {
        StepOutcome::Continue { user_ns: 0 }
    }
}

/// One load/store of an access stream: translate (faulting if needed), go through the TLB.
/// Returns the cycles, or None when the process died.
#[inline]
fn access_one(k: &mut Kernel, task: &mut Task, a: u64, write: bool) -> Option<f64> {
    let pid = task.mm;
    let page = a >> PAGE_SHIFT;
    let gen = k.mms[pid].tlb.flushes;
    let hit = match task.xlat {
        Some((p, pfn, huge, g)) if p == page && g == gen && !(write && pfn == u64::MAX) => Some((pfn, huge)),
        _ => None,
    };
    let (pfn, huge) = match hit {
        Some(x) => x,
        None => {
            let (pfn, huge) = loop {
                match k.follow(pid, a) {
                    crate::memory::Mapping::Page(Pfn(pfn), huge) => break (pfn, huge),
                    crate::memory::Mapping::Zero | crate::memory::Mapping::HugeZero if !write => {
                        break (u64::MAX, matches!(k.follow(pid, a), crate::memory::Mapping::HugeZero))
                    }
                    _ => {
                        if k.handle_mm_fault(pid, a, write) != Fault::Ok {
                            if task.killed.is_none() {
                                task.killed = Some(if k.mms[pid].alive { "SIGSEGV".into() } else { "oom_kill".into() });
                            }
                            return None;
                        }
                    }
                }
            };
            task.xlat = Some((page, pfn, huge, k.mms[pid].tlb.flushes));
            if pfn != u64::MAX {
                k.touch_folio(pfn, write);
            }
            (pfn, huge)
        }
    };
    if write && pfn != u64::MAX {
        let f = k.pm.frames[pfn as usize];
        if !dirty(f) {
            k.touch_folio(pfn, true);
        }
    }
    let c = &k.costs;
    let mut cycles = k.mms[pid].tlb.access(a, huge, write, c);
    // the line, through the last-level cache (the shared zero page's lines stay cached)
    if pfn != u64::MAX && !k.llc.access((pfn << 6) | ((a >> 6) & 63), c.cache_bytes) {
        k.mms[pid].tlb.stats.cache_misses += 1;
        cycles += c.cache_miss_ns as f64 * c.cpu_ghz;
    }
    Some(cycles)
}
