//! khugepaged (mm/khugepaged.c). This slice keeps the mm_slot list — entry via
//! khugepaged_enter_vma() on mmap, MADV_HUGEPAGE and THP faults, removal at exit —
//! so that the scan loop (the khugepaged issue) has its list to walk.

use crate::kernel::Kernel;

impl Kernel {
    /// khugepaged_enter_vma(): add the mm to the scan list (list_add_tail) if the VMA
    /// could hold a PMD THP and PMD THP is enabled (hugepage_pmd_enabled()).
    pub fn khugepaged_enter_vma(&mut self, mm: usize, vm_flags: u32) {
        if self.mms[mm].on_khugepaged || !self.cfg.hugepage_pmd_enabled() {
            return;
        }
        if !self.thp_vma_allowable_flags(mm, vm_flags) {
            return;
        }
        self.mms[mm].on_khugepaged = true;
        self.khugepaged_list.push_back(mm as u32);
    }

    /// __khugepaged_exit()
    pub fn khugepaged_exit(&mut self, mm: usize) {
        if self.mms[mm].on_khugepaged {
            self.mms[mm].on_khugepaged = false;
            self.khugepaged_list.retain(|&m| m != mm as u32);
        }
    }
}

impl Kernel {
    /// One wake-up of khugepaged: khugepaged_do_scan() then khugepaged_wait_work().
    /// The khugepaged issue fills this in.
    pub fn khugepaged_step(&mut self) -> crate::kernel::KthreadNext {
        crate::kernel::KthreadNext::Wait
    }
}
