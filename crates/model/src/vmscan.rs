//! Reclaim (mm/vmscan.c): kswapd, direct reclaim, the LRU scan. This slice has the
//! hooks the allocator calls; the reclaim/swap issue fills them in. With no swap and no
//! page cache a kernel can reclaim nothing, which is what these do today.

use crate::kernel::{Kernel, Kthread, KthreadNext};
use crate::page_alloc::Gfp;

impl Kernel {
    /// try_to_free_pages(): direct reclaim; returns pages reclaimed.
    pub fn try_to_free_pages(&mut self, _gfp: Gfp, _order: u32, _nid: usize) -> u64 {
        0
    }

    /// wakeup_kswapd(): wake the node's kswapd when a zone is below its low watermark.
    pub fn wakeup_kswapd(&mut self, nid: usize, _order: u32) {
        let _ = Kthread::Kswapd(nid);
    }

    /// One pass of kswapd's balance_pgdat() loop.
    pub fn kswapd_step(&mut self, _nid: usize) -> KthreadNext {
        KthreadNext::Wait
    }
}
