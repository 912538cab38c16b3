//! Empty PTE tables freed by MADV_DONTNEED (mm/pt_reclaim.c, CONFIG_PT_RECLAIM: v6.14+,
//! x86_64; set in this machine's 6.18 — `thplab.config_pt_reclaim`).
//!
//! madvise_dontneed_single_vma() zaps with `zap_details.reclaim_pt`. zap_pte_range() then
//! frees the PTE table of every PMD range the zap covered whole (reclaim_pt_is_enabled():
//! `end - start >= PMD_SIZE`) and left with every entry none: directly
//! (try_get_and_clear_pmd() + free_pte()) or, when the PMD lock was contended or the walk
//! was interrupted, by try_to_free_pte(), which checks all 512 entries again. Either way
//! the PMD is none afterwards: the next fault in the range may map a THP where the table
//! would have forced a 4 KiB fault, and a 4 KiB fault there allocates a new table
//! (__pte_alloc). munmap and exit free tables by other rules (free_pgtables).

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::MmId;
use crate::pgtable::{Pmd, PTE_NONE};

impl Kernel {
    /// The reclaim_pt part of zap_pte_range() for a MADV_DONTNEED zap of [start, end) in
    /// one VMA (called after the zap): free the PTE table of each whole PMD range in it
    /// whose entries are all none.
    pub fn reclaim_empty_pte_tables(&mut self, mm: MmId, start: u64, end: u64) {
        if !self.cfg.pt_reclaim {
            return;
        }
        // only PMD ranges the zap covered whole
        let (first, last) = (start.div_ceil(PMD_SIZE), end / PMD_SIZE);
        if first >= last {
            return;
        }
        let idxs: Vec<(u64, u32)> = self.mms[mm].pmds.range(first..last).map(|(k, v)| (*k, *v)).collect();
        for (idx, sid) in idxs {
            // try_to_free_pte(): every entry must be none (a huge PMD was zapped whole
            // already, its slot is gone)
            let empty = matches!(&self.slots.get(sid).pmd, Pmd::Table(t) if t.iter().all(|&p| p == PTE_NONE));
            if !empty {
                continue;
            }
            // pmd_clear() + free_pte(): pte_free_tlb, mm_dec_nr_ptes
            let slot = self.slots.remove(sid);
            self.mms[mm].pmds.remove(&idx);
            self.free_pgtable(slot.table_pfn);
        }
    }
}
