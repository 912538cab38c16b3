//! Multi-size THP (issue 18): the per-size knobs drive alloc_anon_folio (highest enabled
//! order that fits the VMA and whose PTEs are all none, order-by-order fallback), the
//! per-size stats count what happens to the folios (faults, partial unmap and deferred
//! split, swap-out whole to zram), and the invariant checker (on in every run here)
//! agrees with the page state of PTE-mapped large folios.

use thplab_workload::RunResult;

mod common;
use common::{go, phase_ns, run_with};

fn st(r: &RunResult, size_kb: u32, stat: &str) -> i64 {
    let key = format!("hugepages-{size_kb}kB/stats/{stat}");
    r.extra["mthp_stats"][&key].as_i64().unwrap_or_else(|| panic!("no {key}"))
}
fn vm(r: &RunResult, c: &str) -> i64 {
    r.vmstat_delta.get(c).copied().unwrap_or(0)
}

fn w(size: &str, ops: &str) -> String {
    format!(
        r#"{{"processes":[{{"name":"p","ops":[
      {{"op":"mmap","name":"b","size":"{size}","align":"2M"}},
      {ops}]}}]}}"#
    )
}

#[test]
fn write_faults_allocate_the_highest_enabled_order() {
    let wl = w("16M", r#"{"op":"write","region":"b","data":"text"}"#);
    // 64K always, 2M inherit of madvise (the region is not madvised): 256 x 64 KiB folios
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 256);
    assert_eq!(st(&r, 64, "nr_anon"), 0, "freed at exit");
    assert_eq!(st(&r, 2048, "anon_fault_alloc"), 0);
    assert_eq!(vm(&r, "thp_fault_alloc"), 0, "thp_fault_alloc counts PMD order only");
    assert_eq!(vm(&r, "pgfault"), 256);
    // 16K and 64K always: the higher one wins
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always"), ("hugepages-16kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 256);
    assert_eq!(st(&r, 16, "anon_fault_alloc"), 0);
    // inherit follows transparent_hugepage/enabled (madvise: only MADV_HUGEPAGE regions),
    // and a madvised region with 2M never gets 64K folios
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "inherit")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 0);
    let wl2 =
        w("16M", r#"{"op":"madvise","region":"b","advice":"hugepage"},{"op":"write","region":"b","data":"text"}"#);
    let r = go(&wl2, "1G", &[("hugepages-64kB/enabled", "inherit"), ("hugepages-2048kB/enabled", "never")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 256);
    // a PMD THP is tried first; mTHP only when it falls back
    let r = go(&wl2, "1G", &[("hugepages-64kB/enabled", "inherit")]);
    assert_eq!((st(&r, 2048, "anon_fault_alloc"), st(&r, 64, "anon_fault_alloc")), (8, 0));
    // MADV_NOHUGEPAGE and prctl-style disable turn mTHP off too
    let wl3 =
        w("16M", r#"{"op":"madvise","region":"b","advice":"nohugepage"},{"op":"write","region":"b","data":"text"}"#);
    let r = go(&wl3, "1G", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 0);
}

#[test]
fn orders_that_do_not_fit_or_see_a_non_none_pte_are_skipped() {
    // a 48 KiB VMA: 64K does not fit; 16K does (three folios)
    let wl = w("48K", r#"{"op":"write","region":"b","data":"text"}"#);
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always"), ("hugepages-16kB/enabled", "always")]);
    assert_eq!((st(&r, 64, "anon_fault_alloc"), st(&r, 16, "anon_fault_alloc")), (0, 3));
    // the zero page is not pte_none: a read of page 2 first, then writes over 64 KiB
    let wl = w(
        "2M",
        r#"{"op":"read","region":"b","offset":"8K","length":"4K"},
           {"op":"write","region":"b","offset":"0","length":"64K","data":"text"}"#,
    );
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always"), ("hugepages-16kB/enabled", "always")]);
    // page 0: 64K range holds the zero PTE, 16K [0,16K) too -> order 0; page 1 the same;
    // page 2 (zero page, write) -> wp copy order 0; page 3 -> 16K range [0,16K) not none
    // -> order 0; pages 4.. -> 16K folios [16K,32K), [32K,48K), [48K,64K)
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 0);
    assert_eq!(st(&r, 16, "anon_fault_alloc"), 3);
    assert_eq!(vm(&r, "pgfault"), 1 + 4 + 3);
}

#[test]
fn partial_munmap_queues_mthp_for_deferred_split() {
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},
           {"op":"phase","name":"unmap"},
           {"op":"munmap","region":"b","every":"64K","offset":"32K","length":"4K"},
           {"op":"phase","name":"shrink"},
           {"op":"drop_caches","value":2},
           {"op":"phase","name":"end"}"#,
    );
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "anon_fault_alloc"), 64);
    assert_eq!(st(&r, 64, "split_deferred"), 64);
    assert_eq!(st(&r, 64, "split"), 64, "the shrinker splits every partially mapped folio");
    assert_eq!(vm(&r, "thp_deferred_split_page"), 0, "PMD-order event only");
    assert_eq!(vm(&r, "thp_split_page"), 0, "PMD-order event only");
    // the munmap phase alone: queued, not split
    let ph = &r.phases[1];
    assert_eq!(ph.vmstat_delta.get("nr_anon_pages").copied().unwrap_or(0), -64);
    // a whole-folio munmap is one rmap batch: no deferred split
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},{"op":"munmap","region":"b","offset":"1M","length":"1M"}"#,
    );
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "split_deferred"), 0);
    // MADV_DONTNEED of half a folio: partially mapped
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},{"op":"madvise","region":"b","advice":"dontneed","offset":"0","length":"32K"}"#,
    );
    let r = go(&wl, "1G", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "split_deferred"), 1);
}

#[test]
fn pageout_swaps_mthp_out_whole_to_zram() {
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},
           {"op":"madvise","region":"b","advice":"pageout"},
           {"op":"phase","name":"back"},
           {"op":"read","region":"b"}"#,
    );
    let r = go(&wl, "1G,swap=zram:256M", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!(st(&r, 64, "swpout"), 64);
    assert_eq!(st(&r, 64, "swpout_fallback"), 0);
    assert_eq!(st(&r, 64, "split_deferred"), 0, "swap-cache folios are not queued");
    assert_eq!(vm(&r, "pswpout"), 1024);
    assert_eq!(vm(&r, "thp_swpout"), 0, "PMD-order event only");
    // zram is SWP_SYNCHRONOUS_IO: the contiguous entries come back as 64 KiB folios
    assert_eq!(st(&r, 64, "swpin"), 64);
    assert_eq!(vm(&r, "pswpin"), 1024);
    assert_eq!(st(&r, 64, "nr_anon"), 0);
    // 64K not enabled at fault time of the read-back: order 0
    let wl2 = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},
           {"op":"madvise","region":"b","advice":"pageout"},
           {"op":"set","knob":"hugepages-64kB/enabled","value":"never"},
           {"op":"read","region":"b"}"#,
    );
    let r = go(&wl2, "1G,swap=zram:256M", &[("hugepages-64kB/enabled", "always")]);
    assert_eq!((st(&r, 64, "swpout"), st(&r, 64, "swpin")), (64, 0));
    assert_eq!(vm(&r, "pswpin"), 1024);
    // without CONFIG_THP_SWAP every large folio is split first
    let r = go(&wl, "1G,swap=zram:256M", &[("hugepages-64kB/enabled", "always"), ("thplab.config_thp_swap", "n")]);
    assert_eq!(st(&r, 64, "swpout"), 0);
    assert_eq!(st(&r, 64, "swpout_fallback"), 64);
    assert_eq!(st(&r, 64, "split"), 64);
    // the split unmaps the 16 PTEs one by one: partially mapped after the first (live: 256/256)
    assert_eq!(st(&r, 64, "split_deferred"), 64);
    assert_eq!(vm(&r, "pswpout"), 1024);
}

/// A split's work is a fixed part (split_folio_fixed_ns) and a part per subpage (every PTE
/// to a migration entry and back, every struct page made a folio): split_folio_ns is
/// calibrated on PMD THPs, and an mTHP split pays the fixed part and n/512 of the rest.
/// 64 folios of 64 KiB paged out to a swap file (no large swap entries: each is split,
/// swpout_fallback) cost 64 × (fixed + 16/512 × (split_folio_ns - fixed)).
#[test]
fn an_mthp_split_pays_its_share_of_split_folio_ns() {
    use thplab_workload::costs::CostProfile;
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},
           {"op":"phase","name":"out"},
           {"op":"madvise","region":"b","advice":"pageout"}"#,
    );
    let wl = thplab_workload::parse_workload(&wl).unwrap();
    let t = |split_folio_ns: u64, split_folio_fixed_ns: u64| {
        let costs = CostProfile { split_folio_ns, split_folio_fixed_ns, ..CostProfile::default() };
        let r = run_with(&wl, Some("1G,swap=file:256M"), &[("hugepages-64kB/enabled", "always")], Some(costs));
        assert_eq!(st(&r, 64, "swpout_fallback"), 64);
        phase_ns(&r, ":out")
    };
    assert_eq!(t(512_000, 0) - t(0, 0), 64 * 16 * 1_000);
    assert_eq!(t(522_000, 10_000) - t(0, 0), 64 * (10_000 + 16 * 1_000));
}

/// An mTHP fault zeroes its folio a subpage at a time (folio_zero_user): it charges
/// clear_folio_4k_ns per subpage, not the userspace clear_4k loop's clear_4k_ns (on the
/// reference host the kernel's clear in a fault is ~0.6 us per 4 KiB, clear_4k 0.2 us).
/// 256 faults of 64 KiB folios: 256 × 16 × the difference; clear_4k_ns pays only for the
/// 8 PTE tables' pages.
#[test]
fn an_mthp_fault_charges_clear_folio_4k_ns_per_subpage() {
    use thplab_workload::costs::CostProfile;
    let wl = w("16M", r#"{"op":"phase","name":"f"},{"op":"write","region":"b","data":"text"}"#);
    let wl = thplab_workload::parse_workload(&wl).unwrap();
    let t = |clear_folio_4k_ns: u64, clear_4k_ns: u64| {
        let costs = CostProfile { clear_folio_4k_ns, clear_4k_ns, ..CostProfile::default() };
        let r = run_with(&wl, Some("1G"), &[("hugepages-64kB/enabled", "always")], Some(costs));
        assert_eq!(st(&r, 64, "anon_fault_alloc"), 256);
        phase_ns(&r, ":f")
    };
    assert_eq!(t(600, 160) - t(100, 160), 256 * 16 * 500);
    assert_eq!(t(600, 999) - t(600, 160), 8 * (999 - 160));
}

/// The pieces of a folio split for reclaim take their swap slots head first, then from
/// the last piece down (6.18: lru_add_split_folio() adds the tails with list_add_tail(),
/// shrink_folio_list() takes the list's tail; /proc/self/pagemap after MADV_PAGEOUT of
/// 64 KiB folios to a swap file: slots 1, 16, 15, .., 2), so at munmap swap_pte_batch()
/// finds no two PTEs holding consecutive slots: one free_swap_and_cache_nr() each
/// (swap_batch_ns). 4 KiB folios paged out in address order hold consecutive slots: one
/// call per PTE table.
#[test]
fn split_pieces_take_slots_from_the_last_down_and_zap_one_call_each() {
    use thplab_workload::costs::CostProfile;
    let wl = w(
        "4M",
        r#"{"op":"write","region":"b","data":"text"},
           {"op":"madvise","region":"b","advice":"pageout"},
           {"op":"sleep","duration":"1s"},
           {"op":"phase","name":"zap"},
           {"op":"munmap","region":"b"}"#,
    );
    let wl = thplab_workload::parse_workload(&wl).unwrap();
    let zap = |swap_batch_ns: u64, mthp: &str| {
        let costs = CostProfile { swap_batch_ns, ..CostProfile::default() };
        let r = run_with(&wl, Some("1G,swap=file:256M"), &[("hugepages-64kB/enabled", mthp)], Some(costs));
        assert_eq!(vm(&r, "pswpout"), 1024);
        phase_ns(&r, ":zap")
    };
    assert_eq!(zap(1000, "always") - zap(0, "always"), 1024 * 1000, "64 KiB folios split: a call per PTE");
    assert_eq!(zap(1000, "never") - zap(0, "never"), 2 * 1000, "4 KiB folios: a call per PTE table");
}

/// The first access to each other page of a 64 KiB folio right after the fault that mapped
/// it costs touch_after_fault_ns instead of touch_page_ns (measured: ~85 ns against 8.5),
/// when it leaves a cache line partly written (a byte's store, a load); a store of whole
/// lines, a second access, and an access after the CPU faulted again cost touch_page_ns.
#[test]
fn the_first_partial_access_right_after_an_mthp_fault_costs_touch_after_fault_ns() {
    use thplab_workload::costs::CostProfile;
    let t = |ops: &str, extra: Option<u64>| {
        let wl = w("16M", &format!(r#"{{"op":"phase","name":"f"}},{ops}"#));
        let wl = thplab_workload::parse_workload(&wl).unwrap();
        let costs = CostProfile { touch_after_fault_ns: extra, ..CostProfile::default() };
        let r = run_with(&wl, Some("1G"), &[("hugepages-64kB/enabled", "always")], Some(costs));
        assert_eq!(st(&r, 64, "anon_fault_alloc"), 256);
        phase_ns(&r, ":f")
    };
    let tp = CostProfile::default().touch_page_ns;
    // a byte to every page, a fault per 64 KiB: 256 x 15 other pages
    let byte = r#"{"op":"write","region":"b","byte":9,"bytes":1,"data":7}"#;
    assert_eq!(t(byte, Some(tp + 500)) - t(byte, None), 256 * 15 * 500);
    // a second pass over the same pages: no fault between, nothing more
    let twice = format!("{byte},{byte}");
    assert_eq!(t(&twice, Some(tp + 500)) - t(&twice, None), 256 * 15 * 500);
    // whole pages: every line written whole
    let text = r#"{"op":"write","region":"b","data":"text"}"#;
    assert_eq!(t(text, Some(tp + 500)), t(text, None));
    // one page per folio, then a read of all: only the last folio's pages are just faulted
    let sparse = r#"{"op":"write","region":"b","every":"64K","length":"4K","bytes":1,"data":7},
                    {"op":"read","region":"b"}"#;
    assert_eq!(t(sparse, Some(tp + 500)) - t(sparse, None), 15 * 500);
}
