//! thplab's executable model of Linux memory management and transparent huge pages.
//! Modules are named after the kernel files whose mechanisms they model.

#![warn(clippy::too_many_lines)]

/// `test_switch!(USE_X)`: a fast path's debug switch, a `#[cfg(test)]` thread-local bool
/// that tests turn off to compare runs with the plain path; always on outside tests.
macro_rules! test_switch {
    ($key:path) => {{
        #[cfg(test)]
        let on = $key.with(|c| c.get());
        #[cfg(not(test))]
        let on = true;
        on
    }};
}

pub mod aged;
pub mod bitmap;
pub mod blk_core;
pub mod blk_wbt;
pub mod check;
pub mod compaction;
pub mod config;
pub mod consts;
pub mod content;
pub mod engine;
pub mod gfp;
pub mod host_alloc;
pub mod huge_memory;
pub mod hugetlb;
pub mod kernel;
pub mod khugepaged;
pub mod kthread;
pub mod locking;
pub mod madvise;
pub mod memory;
pub mod migrate;
pub mod mm_types;
pub mod mmap;
pub mod mmzone;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_io;
pub mod page_reporting;
pub mod pgtable;
pub mod pt_reclaim;
pub mod recorder;
pub mod swap_state;
pub mod swapfile;
pub mod tlb;
pub mod trace;
pub mod vmscan;
pub mod vmstat;
pub mod zram;

pub use engine::{run, run_keep, run_shared, RunOptions};

#[cfg(test)]
mod tests;
