//! Tests of the model's mechanisms that drive the kernel directly (they need its
//! crate-private state): compaction, khugepaged, reclaim and swap. Whole-workload tests
//! are in crates/model/tests.

mod common;
mod compaction;
mod khugepaged;
mod reclaim_swap;
