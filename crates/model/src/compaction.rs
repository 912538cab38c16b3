//! Memory compaction (mm/compaction.c): direct compaction, kcompactd, proactive
//! compaction. This slice has the hooks; the compaction issue fills them in. Until then
//! compaction finds nothing to do (COMPACT_SKIPPED, no counters).

use crate::kernel::{CompactPriority, CompactResult, Kernel, KthreadNext};
use crate::page_alloc::{AllocFlags, Gfp};

impl Kernel {
    /// try_to_compact_pages()
    pub fn try_to_compact_pages(&mut self, _gfp: Gfp, _order: u32, _flags: AllocFlags, _zonelist: &[usize], _prio: CompactPriority) -> CompactResult {
        CompactResult::Skipped
    }

    /// sysctl_compaction_handler(): vm.compact_memory = 1.
    pub fn compact_all(&mut self) {}

    /// kcompactd's first wait (500 ms timer when proactiveness > 0).
    pub fn kcompactd_initial(&self, _nid: usize) -> KthreadNext {
        KthreadNext::Wait
    }

    /// One iteration of kcompactd()'s loop.
    pub fn kcompactd_step(&mut self, _nid: usize) -> KthreadNext {
        KthreadNext::Wait
    }

    /// STUB (added by the reclaim issue, which calls it from kswapd before sleeping):
    /// wakeup_kcompactd(). The compaction issue replaces this with the real wake-up.
    pub fn wakeup_kcompactd(&mut self, _nid: usize, _order: u32) {}
}
