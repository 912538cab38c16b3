//! madvise(2) for anonymous memory (mm/madvise.c): MADV_HUGEPAGE / MADV_NOHUGEPAGE
//! (hugepage_madvise: VMA flags, khugepaged entry), MADV_DONTNEED (zap), MADV_WILLNEED
//! (nothing to read ahead for anonymous memory without swap), and the entry points
//! MADV_COLD, MADV_PAGEOUT, MADV_FREE, MADV_COLLAPSE that the reclaim and khugepaged
//! issues fill in. Errors are the kernel's errno names.

use crate::kernel::Kernel;
use crate::mmap::{VM_HUGEPAGE, VM_NOHUGEPAGE};
use thplab_workload::workload::Advice;

impl Kernel {
    /// do_madvise() over [start, end). Returns the errno name on failure.
    pub fn madvise(&mut self, mm: usize, start: u64, end: u64, advice: Advice) -> Result<(), &'static str> {
        if start & 4095 != 0 {
            return Err("EINVAL");
        }
        self.charge(self.costs.syscall_ns);
        let mapped_all = self.mms[mm].fully_mapped(start, end);
        match advice {
            Advice::Hugepage | Advice::Nohugepage => {
                let (set, clear) = if advice == Advice::Hugepage { (VM_HUGEPAGE, VM_NOHUGEPAGE) } else { (VM_NOHUGEPAGE, VM_HUGEPAGE) };
                self.mms[mm].modify_flags(start, end, |f| (f | set) & !clear);
                if advice == Advice::Hugepage {
                    for (_, _, flags) in self.mms[mm].vmas_in(start, end) {
                        self.khugepaged_enter_vma(mm, flags);
                    }
                }
            }
            Advice::Dontneed => {
                for (s, e, _) in self.mms[mm].vmas_in(start, end) {
                    self.zap_range(mm, s, e, false);
                }
            }
            Advice::Willneed => {}
            Advice::Cold | Advice::Pageout | Advice::Free => {
                for (s, e, _) in self.mms[mm].vmas_in(start, end) {
                    self.madvise_cold_or_pageout(mm, s, e, advice);
                }
                if advice != Advice::Pageout {
                    self.khugepaged_cold_to_tail(mm); // seed 002 v1 (thplab.khugepaged_cold_to_tail)
                }
            }
            Advice::Collapse => {
                return self.madvise_collapse(mm, start, end);
            }
        }
        if mapped_all {
            Ok(())
        } else {
            Err("ENOMEM")
        }
    }

    /// MADV_COLD / MADV_PAGEOUT / MADV_FREE over one VMA piece: the reclaim issue
    /// models deactivation, reclaim_pages() and lazy-free. Until then they leave memory
    /// as a kernel without swap would for PAGEOUT of base pages: in place.
    pub fn madvise_cold_or_pageout(&mut self, _mm: usize, _s: u64, _e: u64, _advice: Advice) {}

    /// MADV_COLLAPSE (madvise_collapse(), v6.1+): each VMA piece in turn, the first
    /// failing piece's errno; a hole in the range gives ENOMEM at the end (as
    /// madvise_walk_vmas does). The mm does not join the khugepaged list.
    pub fn madvise_collapse(&mut self, mm: usize, s: u64, e: u64) -> Result<(), &'static str> {
        if e <= s {
            return if e == s { Ok(()) } else { Err("EINVAL") };
        }
        let mapped_all = self.mms[mm].fully_mapped(s, e);
        let pieces = self.mms[mm].vmas_in(s, e);
        if pieces.is_empty() {
            return Err("ENOMEM");
        }
        for (ps, pe, flags) in pieces {
            self.madvise_collapse_vma(mm, ps, pe, flags)?;
        }
        if mapped_all {
            Ok(())
        } else {
            Err("ENOMEM")
        }
    }
}
