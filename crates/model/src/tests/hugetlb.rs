//! The hugetlb pool (vm.nr_hugepages): growth through the allocator's slow path until the
//! first failure on fragmented memory, shrinking, and pool pages that compaction leaves
//! where they are. The invariant checker runs in every test.

use super::common::{go, kernel};
use crate::check;
use crate::mm_types::*;
use crate::mmap::{VM_READ, VM_WRITE};
use crate::vmstat::Ev;
use thplab_workload::workload::WriteData;

const P0: MmId = MmId(0);

fn pool_workload(count: &str, shrink_to: &str) -> String {
    format!(
        r#"{{"knobs":{{"vm.min_free_kbytes":"8192","vm.compaction_proactiveness":"0"}},
        "record":{{"fault_latency":true}},
        "processes":[{{"name":"p","ops":[
        {{"op":"mmap","name":"all","size":"900M"}},
        {{"op":"write","region":"all"}},
        {{"op":"munmap","region":"all","every":"2M","offset":"512K","length":"1536K"}},
        {{"op":"phase","name":"grow"}},
        {{"op":"set","knob":"vm.nr_hugepages","value":"{count}"}},
        {{"op":"phase","name":"shrink"}},
        {{"op":"set","knob":"vm.nr_hugepages","value":"{shrink_to}"}}]}}]}}"#
    )
}

#[test]
fn the_pool_grows_through_compaction_until_the_first_failure_then_shrinks() {
    let r = go(&pool_workload("100000", "8"), "1G,cpus=2", &[]);
    let grow = &r.phases.iter().find(|p| p.name == "p:grow").unwrap().vmstat_delta;
    let got = grow.get("htlb_buddy_alloc_success").copied().unwrap_or(0);
    // 900 MiB fragmented keeps 1/4 of it: ~225 MiB in use, ~385 pool pages at most; the
    // first allocation whose sync-light compaction fails ends the write (no reclaim
    // progress without swap, so no compaction retry): well over half of them
    assert!(got > 200, "most free memory became hugetlb pages: {got}");
    assert!(got < 512, "not more than the machine has: {got}");
    // it stops at the first failure: the last attempt failed on the machine's only node
    assert_eq!(grow.get("htlb_buddy_alloc_fail").copied().unwrap_or(0), 1);
    // fragmented memory: most allocations needed direct compaction (movable, so it migrates)
    assert!(grow.get("compact_stall").copied().unwrap_or(0) > got / 2, "{grow:?}");
    assert!(grow.get("pgmigrate_success").copied().unwrap_or(0) > 10_000, "{grow:?}");
    // one latency sample per pool page, overall and for the phase; a spread, not a constant
    let lat = &r.latency["hugetlb_alloc"];
    assert_eq!(lat.count as i64, got);
    assert_eq!(r.latency["hugetlb_alloc@p:grow"].count as i64, got);
    assert!(lat.ns["p95"] > 2 * lat.ns["p05"], "{lat:?}");
    assert_eq!(lat.cdf.last().unwrap()[1], lat.count);
    // the shrink freed everything above 8 pages; nr_hugepages reads back the pool size
    assert_eq!(r.meminfo["HugePages_Total"], 8);
    assert_eq!(r.meminfo["HugePages_Free"], 8);
    assert_eq!(r.meminfo["Hugetlb"], 8 * 2048);
    // (the phase also holds the process's exit)
    let freed = r.phases.iter().find(|p| p.name == "p:shrink").unwrap().vmstat_delta["pgfree"];
    assert!(freed >= (got - 8) * 512, "{freed}");
}

#[test]
fn a_pool_that_fits_is_allocated_in_full_and_reads_back() {
    let r = go(&pool_workload("40", "40"), "1G,cpus=2", &[]);
    assert_eq!(r.meminfo["HugePages_Total"], 40);
    assert_eq!(r.latency["hugetlb_alloc"].count, 40);
    let grow = &r.phases.iter().find(|p| p.name == "p:grow").unwrap().vmstat_delta;
    assert_eq!(grow.get("htlb_buddy_alloc_fail"), None);
}

#[test]
fn compaction_leaves_pool_pages_alone() {
    // a pool from the run's knobs (the boot-time write), then fragmented anonymous memory
    let mut k = kernel("512M", &[("vm.nr_hugepages", "32"), ("vm.compaction_proactiveness", "0")]);
    assert_eq!(k.meminfo()["HugePages_Total"], 32);
    assert_eq!(k.cfg.knobs["vm.nr_hugepages"], "32");
    let pool: Vec<u64> = k.hstate.freelists.iter().flatten().copied().collect();
    let size = 256u64 << 20;
    let addr = k.mms[P0].get_unmapped_area(size, Some(2 << 20)).unwrap();
    k.mms[P0].insert_vma(addr, addr + size, VM_READ | VM_WRITE);
    for i in 0..size / 4096 {
        k.write_page(P0, addr + i * 4096, 0, 1, &WriteData::Byte(1));
    }
    let mut a = addr;
    while a < addr + size {
        k.mms[P0].unmap_range(a + (512 << 10), a + (2 << 20));
        k.zap_range(P0, a + (512 << 10), a + (2 << 20), true);
        a += 2 << 20;
    }
    check::check(&k).unwrap();
    k.compact_all();
    assert!(k.rec.vm.get(Ev::PGMIGRATE_SUCCESS) > 1000, "compaction ran");
    check::check(&k).unwrap();
    let after: Vec<u64> = k.hstate.freelists.iter().flatten().copied().collect();
    assert_eq!(after, pool, "pool folios not moved");
    for &h in &pool {
        assert!(is_hugetlb_head(k.pm.frames[h as usize]));
    }
    // writing a smaller number frees pool pages back to the buddy allocator
    k.set_knob("vm.nr_hugepages", "0").unwrap();
    assert_eq!(k.meminfo()["HugePages_Total"], 0);
    assert_eq!(k.cfg.knobs["vm.nr_hugepages"], "0");
    check::check(&k).unwrap();
}

/// The allocation that ends a pool write, as 6.18's __alloc_pages_slowpath() takes it for
/// order 9 with __GFP_RETRY_MAYFAIL: async compaction (INIT_COMPACT_PRIORITY) fails; direct
/// reclaim returns at once with progress 1 because compaction is ready (vmscan.c
/// compaction_ready(), do_try_to_free_pages()); one sync-light compaction
/// (DEF_COMPACT_PRIORITY) fails; should_compact_retry() says no, SYNC_LIGHT being
/// MIN_COMPACT_COSTLY_PRIORITY, so SYNC_FULL (whole zone, skip hints ignored) never runs,
/// and set_max_huge_pages() stops at this first failure. The live kernel traced the same
/// (bench/seed004_a_live.py, docs/compaction.md: one compact_retry event,
/// `priority=COMPACT_PRIO_SYNC_LIGHT compaction_result=failed should_retry=0`).
#[test]
fn the_failing_pool_allocation_gets_one_sync_light_compaction_and_no_sync_full() {
    let w = pool_workload("100000", "0").replace(
        r#""record":{"fault_latency":true}"#,
        r#""record":{"trace":["compact_retry","mm_compaction_try_to_compact_pages","mm_vmscan_direct_reclaim_end"]}"#,
    );
    let r = go(&w, "1G,cpus=2", &[]);
    let grow = &r.phases.iter().find(|p| p.name == "p:grow").unwrap().vmstat_delta;
    assert_eq!(grow.get("htlb_buddy_alloc_fail").copied().unwrap_or(0), 1);
    let ev = |e: &serde_json::Value| e["event"].as_str().unwrap().to_string();
    // never a direct compaction at SYNC_FULL (priority 0) for the order-9 pool pages
    let tries: Vec<_> = r.trace.iter().filter(|e| ev(e) == "mm_compaction_try_to_compact_pages").collect();
    assert!(tries.len() > 100, "{}", tries.len());
    assert!(tries.iter().all(|e| e["order"] == 9 && e["prio"] != 0), "a SYNC_FULL compaction");
    // the last compact_retry verdict is the one that ends the write: sync-light, no retry
    let retries: Vec<_> = r.trace.iter().filter(|e| ev(e) == "compact_retry").collect();
    let last = retries.last().expect("a compact_retry event");
    assert_eq!(last["priority"], "COMPACT_PRIO_SYNC_LIGHT", "{last}");
    assert_eq!(last["should_retry"], 0, "{last}");
    assert_ne!(last["compaction_result"], "progress", "{last}");
    // the failing allocation's sequence: async, reclaim (compaction ready: 0 reclaimed),
    // sync-light, the verdict
    let tail: Vec<String> = r.trace.iter().rev().take(4).map(ev).collect();
    assert_eq!(
        tail,
        [
            "compact_retry",
            "mm_compaction_try_to_compact_pages",
            "mm_vmscan_direct_reclaim_end",
            "mm_compaction_try_to_compact_pages"
        ],
        "{:?}",
        &r.trace[r.trace.len() - 4..]
    );
    let n = r.trace.len();
    assert_eq!(r.trace[n - 4]["prio"], 2, "async first");
    assert_eq!(r.trace[n - 3]["nr_reclaimed"], 0);
    assert_eq!(r.trace[n - 2]["prio"], 1, "then sync-light");
}
