//! Split and migration: deferred split of partially mapped THPs, underused-THP splitting
//! with the max_ptes_none threshold (and the 511 quirk), the zero-subpage policies, and
//! migration between nodes. Every test checks that no non-zero page is lost.

use thplab_workload::RunResult;

mod common;
use common::{go, phase_ns, run_with};

fn pd(r: &RunResult, phase: usize, c: &str) -> i64 {
    r.phases[phase].vmstat_delta.get(c).copied().unwrap_or(0)
}

/// 8 THPs; page k of each 2 MiB gets one non-zero byte at offset k (distinct contents);
/// `pages` non-zero pages per THP.
fn sparse(pages: u32, extra: &str) -> String {
    format!(
        r#"{{"processes":[{{"name":"p","ops":[
      {{"op":"mmap","name":"b","size":"16M"}},
      {{"op":"madvise","region":"b","advice":"hugepage"}},
      {{"op":"write","region":"b","every":"2M","length":"{}K","byte":7,"bytes":1,"data":9}},
      {{"op":"phase","name":"act"}},
      {extra}
      {{"op":"phase","name":"after"}},
      {{"op":"read","region":"b"}}]}}]}}"#,
        pages * 4
    )
}

#[test]
fn underused_split_needs_max_ptes_none_below_511() {
    let w = sparse(4, r#"{"op":"drop_caches","value":2},"#);
    let r = go(&w, "1G", &[]);
    assert_eq!(pd(&r, 1, "thp_underused_split_page"), 0, "the 511 quirk: nothing is underused");
    assert_eq!(pd(&r, 1, "thp_split_page"), 0);
    let r = go(&w, "1G", &[("khugepaged/max_ptes_none", "409")]);
    assert_eq!(pd(&r, 1, "thp_underused_split_page"), 8);
    assert_eq!(pd(&r, 1, "thp_split_page"), 8);
    // mainline: the 508 zero subpages of each THP are remapped to the zero page
    assert_eq!(pd(&r, 1, "nr_anon_pages"), -(8 * 508));
    assert_eq!(pd(&r, 1, "nr_anon_transparent_hugepages"), -8);
    // shrink_underused=0 keeps them
    let r = go(&w, "1G", &[("khugepaged/max_ptes_none", "409"), ("transparent_hugepage/shrink_underused", "0")]);
    assert_eq!(pd(&r, 1, "thp_split_page"), 0);
}

/// A run on a 1 GiB machine with the invariant checker and these costs (the cost tests
/// vary one primitive and compare a phase's time).
fn run_1g(w: &thplab_workload::Workload, costs: thplab_workload::costs::CostProfile) -> RunResult {
    run_with(w, Some("1G"), &[], Some(costs))
}

/// A split unmaps a PTE-mapped folio's PTEs one at a time (try_to_migrate_one:
/// split_unmap_pte_ns per mapped PTE) but freezes a PMD mapping whole, and each zero
/// subpage remapped to the zero page and freed costs split_zero_subpage_ns: 8 THPs with 4
/// non-zero subpages, partially unmapped (one page each: 511 PTEs mapped, 507 zero) and
/// split by the deferred split shrinker, or PMD-mapped and split by the underused shrinker
/// (no PTE unmapped, 508 zero).
#[test]
fn a_split_charges_each_pte_it_unmaps_and_each_zero_subpage() {
    use thplab_workload::costs::CostProfile;
    let partial = sparse(
        4,
        r#"{"op":"munmap","region":"b","every":"2M","offset":"1M","length":"4K"},
           {"op":"phase","name":"shrink"},{"op":"drop_caches","value":2},"#,
    );
    let partial = thplab_workload::parse_workload(&partial).unwrap();
    let underused = thplab_workload::parse_workload(&sparse(4, r#"{"op":"drop_caches","value":2},"#)).unwrap();
    let t = |w: &thplab_workload::Workload, knobs: &[(&str, &str)], phase: &str, u: u64, z: u64| {
        let costs = CostProfile { split_unmap_pte_ns: u, split_zero_subpage_ns: z, ..CostProfile::default() };
        let r = run_with(w, Some("1G"), knobs, Some(costs));
        assert_eq!(r.vmstat_delta.get("thp_split_page").copied(), Some(8));
        phase_ns(&r, phase)
    };
    let p = |u, z| t(&partial, &[], ":shrink", u, z);
    assert_eq!(p(1_000, 0) - p(0, 0), 8 * 511 * 1_000);
    assert_eq!(p(0, 1_000) - p(0, 0), 8 * 507 * 1_000);
    let mpn = [("khugepaged/max_ptes_none", "0")];
    let q = |u, z| t(&underused, &mpn, ":act", u, z);
    assert_eq!(q(1_000, 0), q(0, 0), "a PMD mapping is frozen whole");
    assert_eq!(q(0, 1_000) - q(0, 0), 8 * 508 * 1_000);
}

/// The time of a drop_caches=2 over 8 queued THPs with 4 non-zero subpages each, none of
/// them split (max_ptes_none 511: none underused), under `costs`.
fn drop_of_8_used_thps_ns(costs: thplab_workload::costs::CostProfile) -> u64 {
    let w = thplab_workload::parse_workload(&sparse(4, r#"{"op":"drop_caches","value":2},"#)).unwrap();
    let r = run_1g(&w, costs);
    assert_eq!(pd(&r, 1, "drop_slab"), 1);
    assert_eq!(pd(&r, 1, "thp_split_page"), 0);
    r.phases[1].end_ns - r.phases[1].start_ns
}

/// drop_caches=2 walks every shrinker of the host (drop_slab): the model holds only the
/// deferred split queue and the huge zero page, and charges the walk of the others as the
/// calibrated drop_slab_ns, even when max_ptes_none 511 leaves nothing to split.
#[test]
fn drop_slab_charges_the_walk_of_the_other_shrinkers() {
    use thplab_workload::costs::CostProfile;
    let t = |drop_slab_ns| drop_of_8_used_thps_ns(CostProfile { drop_slab_ns, ..CostProfile::default() });
    assert_eq!(t(1_000_000) - t(0), 1_000_000);
}

/// deferred_split_scan() pays for each folio it takes off the queue (folio_try_get, the
/// list_del, the batch's folios_put) whatever then happens to it: the 8 THPs queued at
/// their faults (shrink_underused), none underused at max_ptes_none 511, cost
/// deferred_split_scan_ns each.
#[test]
fn the_deferred_split_scan_charges_each_queued_folio() {
    use thplab_workload::costs::CostProfile;
    let t = |deferred_split_scan_ns| {
        drop_of_8_used_thps_ns(CostProfile { deferred_split_scan_ns, ..CostProfile::default() })
    };
    assert_eq!(t(1_000) - t(0), 8 * 1_000);
}

#[test]
fn partially_mapped_thp_is_split_by_the_shrinker_only() {
    let w = sparse(
        512,
        r#"{"op":"munmap","region":"b","offset":"1M","length":"4K"},{"op":"phase","name":"shrink"},{"op":"drop_caches","value":2},"#,
    );
    let r = go(&w, "1G", &[]);
    assert_eq!(pd(&r, 1, "thp_deferred_split_page"), 1);
    assert_eq!(pd(&r, 1, "thp_split_page"), 0, "munmap alone does not split the folio");
    assert_eq!(pd(&r, 2, "thp_split_page"), 1);
    // the unmapped subpage's memory comes back only with the split (to this CPU's pcp
    // list: free_frozen_pages(), not yet counted in nr_free_pages)
    assert_eq!(pd(&r, 1, "pgfree"), 0);
    assert_eq!(pd(&r, 2, "pgfree"), 1);
}

#[test]
fn zero_subpage_policies_on_deferred_split() {
    // Deferred (non-isolated) splits: mainline remaps zero subpages to the zero page,
    // seed and none keep them (Yu Zhao's series acts only on isolated splits).
    let w = sparse(2, r#"{"op":"munmap","region":"b","offset":"1M","length":"4K"},{"op":"drop_caches","value":2},"#);
    let m = go(&w, "1G", &[]);
    let s = go(&w, "1G", &[("thplab.split_zero_subpages", "seed")]);
    let n = go(&w, "1G", &[("thplab.split_zero_subpages", "none")]);
    // 1 THP partially unmapped: 511 mapped subpages, 2 non-zero
    assert_eq!(pd(&m, 1, "nr_anon_pages"), -1 - 509);
    assert_eq!(pd(&s, 1, "nr_anon_pages"), -1);
    assert_eq!(pd(&n, 1, "nr_anon_pages"), -1);
    assert_eq!(pd(&s, 1, "thp_split_unmap"), 0);
}

#[test]
fn no_non_zero_page_is_lost_by_splits() {
    // Every page of 4 THPs has distinct non-zero content except pages 100..200 of each;
    // after deferred and underused splits under every policy, a process re-reads: the
    // model's checker verifies mappings, and the RSS accounts exactly the non-zero pages.
    for policy in ["none", "seed", "mainline"] {
        let w = r#"{"processes":[{"name":"p","ops":[
          {"op":"mmap","name":"b","size":"8M"},
          {"op":"madvise","region":"b","advice":"hugepage"},
          {"op":"write","region":"b","every":"2M","length":"400K","byte":5,"bytes":3,"data":1},
          {"op":"write","region":"b","every":"2M","offset":"800K","length":"1248K","byte":4000,"bytes":96,"data":"text"},
          {"op":"drop_caches","value":3},
          {"op":"phase","name":"end"}]}]}"#;
        let r = go(w, "1G", &[("thplab.split_zero_subpages", policy), ("khugepaged/max_ptes_none", "64")]);
        let rss = r.processes[0].smaps_rollup["Rss"];
        let nonzero_pages = 4 * (100 + 312);
        if policy == "mainline" {
            assert_eq!(pd(&r, 0, "thp_underused_split_page"), 4, "100 zero pages > 64");
            assert_eq!(rss, nonzero_pages * 4, "{policy}: only the zero pages went");
        } else {
            assert_eq!(rss, 4 * 512 * 4, "{policy}: nothing dropped on a non-isolated split");
        }
    }
}

#[test]
fn move_pages_migrates_thps_whole_and_keeps_contents() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"64M"},
      {"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"64K","length":"4K","byte":11,"bytes":2,"data":3},
      {"op":"phase","name":"move"},
      {"op":"move_pages","region":"b","node":1},
      {"op":"move_pages","region":"b","node":7}]}]}"#;
    let r = go(w, "2x1G", &[]);
    assert_eq!(pd(&r, 1, "thp_migration_success"), 32);
    assert_eq!(pd(&r, 1, "pgmigrate_success"), 32 * 512);
    assert_eq!(r.processes[0].errors[0].errno, "ENODEV");
    assert_eq!(r.processes[0].smaps_rollup["AnonHugePages"], 64 << 10);
}

#[test]
fn thp_migration_falls_back_to_split_when_the_node_has_no_2m_block() {
    // node 1's 2 MiB blocks are all taken by order-9 kernel allocations (which stop at the
    // watermark with ENOMEM, costly orders never OOM): THPs cannot move whole, pages can.
    let w = r#"{"processes":[
      {"name":"p","start":"500ms","ops":[
      {"op":"mmap","name":"b","size":"64M"},
      {"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"2M","length":"8K","data":5},
      {"op":"phase","name":"move"},
      {"op":"move_pages","region":"b","node":1}]},
      {"name":"frag","ops":[{"op":"kalloc","name":"k","size":"1800M","order":9},{"op":"sleep","duration":"1s"}]}]}"#;
    // process "frag" (pid 1) runs on cpu 1 = node 1 (2x1G,cpus=2)
    let r = go(w, "2x1G,cpus=2", &[("thplab.split_zero_subpages", "seed")]);
    let mv = r
        .phases
        .iter()
        .find(|p| p.name == "p:move")
        .unwrap_or_else(|| panic!("{:?} {:?}", r.phases.iter().map(|p| &p.name).collect::<Vec<_>>(), r.processes));
    let g = |c: &str| mv.vmstat_delta.get(c).copied().unwrap_or(0);
    // the slow path's min watermark leaves room for a few whole THPs; the rest split
    let (ok, split) = (g("thp_migration_success"), g("thp_migration_split"));
    assert_eq!(ok + split, 32, "{:?}", mv.vmstat_delta);
    assert!(split >= 16, "{:?}", mv.vmstat_delta);
    assert_eq!(g("thp_split_page"), split);
    // the seed policy drops the 510 zero subpages of each isolated split THP
    assert_eq!(g("thp_split_unmap"), split * 510);
    // the whole THPs moved first took node 1 down to its min watermark: the split pieces
    // (order-0, __GFP_THISNODE, no OOM kill for a node) may find no page there
    let moved = g("pgmigrate_success");
    assert!(moved >= ok * 512 && moved <= ok * 512 + split * 2, "{:?}", mv.vmstat_delta);
}

/// zap_present_ptes() on a PTE of the shared zero page finds no normal page and only
/// clears the entry: munmap of 256 read-faulted pages charges zap_zero_pte_ns for each
/// of them (and nothing else changes with it).
#[test]
fn munmap_of_zero_page_ptes_charges_their_zap() {
    use thplab_workload::costs::CostProfile;
    let w = thplab_workload::parse_workload(
        r#"{"processes":[{"name":"p","ops":[
          {"op":"mmap","name":"b","size":"1M"},
          {"op":"madvise","region":"b","advice":"nohugepage"},
          {"op":"read","region":"b"},
          {"op":"phase","name":"unmap"},
          {"op":"munmap","region":"b"}]}]}"#,
    )
    .unwrap();
    let t = |zap_zero_pte_ns: u64| {
        let r = run_1g(&w, CostProfile { zap_zero_pte_ns, ..CostProfile::default() });
        let p = r.phases.iter().find(|p| p.name.ends_with(":unmap")).unwrap();
        p.end_ns - p.start_ns
    };
    assert_eq!(t(1_000) - t(0), 256 * 1_000);
}

/// MADV_PAGEOUT to a swap file (no 2 MiB slots): each THP is split for reclaim; its zero
/// subpages are remapped to the shared zero page and then each takes a pass of
/// shrink_folio_list of its own (a slot given and taken back, __remove_mapping, the free):
/// reclaim_unmapped_ns for each of the 511 of every THP. The seed policy frees them inside
/// the split (patch 2): no pass.
#[test]
fn reclaim_split_charges_a_pass_per_unmapped_subpage() {
    use thplab_workload::costs::CostProfile;
    let w = thplab_workload::parse_workload(
        r#"{"machine":{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"file","size":"256M"}]},
          "processes":[{"name":"p","ops":[
          {"op":"mmap","name":"b","size":"8M","align":"2M"},
          {"op":"madvise","region":"b","advice":"hugepage"},
          {"op":"write","region":"b","every":"2M","length":"4K","byte":0,"bytes":1,"data":255},
          {"op":"phase","name":"out"},
          {"op":"madvise","region":"b","advice":"pageout"}]}]}"#,
    )
    .unwrap();
    let t = |reclaim_unmapped_ns: u64, policy: &str| {
        let costs = CostProfile { reclaim_unmapped_ns, ..CostProfile::default() };
        let r = run_with(&w, None, &[("thplab.split_zero_subpages", policy)], Some(costs));
        let p = r.phases.iter().find(|p| p.name.ends_with(":out")).unwrap();
        assert_eq!(p.vmstat_delta.get("thp_swpout_fallback").copied(), Some(4), "{:?}", p.vmstat_delta);
        assert_eq!(p.vmstat_delta.get("pswpout").copied(), Some(4), "{:?}", p.vmstat_delta);
        phase_ns(&r, ":out")
    };
    assert_eq!(t(1_000, "mainline") - t(0, "mainline"), 4 * 511 * 1_000);
    assert_eq!(t(1_000, "seed"), t(0, "seed"));
}

/// A 4 KiB write fault that finds no PTE table allocates one first (__pte_alloc):
/// pte_alloc_ns for each of the 8 tables of one write per 2 MiB, none for the 511 faults
/// that follow in each table.
#[test]
fn fault_that_allocates_a_pte_table_charges_it() {
    use thplab_workload::costs::CostProfile;
    let w = thplab_workload::parse_workload(
        r#"{"processes":[{"name":"p","ops":[
          {"op":"mmap","name":"b","size":"16M","align":"2M"},
          {"op":"madvise","region":"b","advice":"nohugepage"},
          {"op":"phase","name":"sparse"},
          {"op":"write","region":"b","every":"2M","length":"4K","data":1},
          {"op":"phase","name":"dense"},
          {"op":"write","region":"b","data":2}]}]}"#,
    )
    .unwrap();
    let t = |pte_alloc_ns: u64| {
        let r = run_1g(&w, CostProfile { pte_alloc_ns, ..CostProfile::default() });
        (phase_ns(&r, ":sparse"), phase_ns(&r, ":dense"))
    };
    let (s0, d0) = t(0);
    let (s1, d1) = t(1_000);
    assert_eq!(s1 - s0, 8 * 1_000);
    assert_eq!(d1, d0);
}

/// The zap of a zram swap entry frees its slot (zram_slot_free_notify -> zram_free_page):
/// slot_free_ns for every stored slot, same-filled pages included (they have no object to
/// zs_free), and a compressed page's class free_ns on top.
#[test]
fn munmap_of_zram_entries_charges_each_slot_free() {
    use thplab_workload::costs::{CompressorCosts, CostProfile};
    let w = thplab_workload::parse_workload(
        r#"{"machine":{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"zram","size":"256M"}]},
          "processes":[{"name":"p","ops":[
          {"op":"mmap","name":"s","size":"4M","align":"2M"},
          {"op":"mmap","name":"r","size":"2M","align":"2M"},
          {"op":"madvise","region":"s","advice":"nohugepage"},
          {"op":"madvise","region":"r","advice":"nohugepage"},
          {"op":"write","region":"s","data":255},
          {"op":"write","region":"r","data":"random"},
          {"op":"madvise","region":"s","advice":"pageout"},
          {"op":"madvise","region":"r","advice":"pageout"},
          {"op":"phase","name":"zap"},
          {"op":"munmap","region":"s"},
          {"op":"munmap","region":"r"}]}]}"#,
    )
    .unwrap();
    let t = |slot_free_ns: u64, random_free_ns: u64| {
        let mut costs = CostProfile::default();
        for z in costs.zram.values_mut() {
            *z = CompressorCosts { slot_free_ns, random_free_ns, ..z.clone() };
        }
        phase_ns(&run_with(&w, None, &[], Some(costs)), ":zap")
    };
    let base = t(0, 0);
    assert_eq!(t(1_000, 0) - base, (1024 + 512) * 1_000, "every slot, same-filled or not");
    assert_eq!(t(0, 1_000) - base, 512 * 1_000, "only the compressed pages zs_free an object");
}

/// zram_write_page()'s page_same_filled() compares the first word with the last and stops
/// at the first word that differs: a page whose last byte was written pays 16 bytes of the
/// whole-page check (same_ns), one whose first non-zero byte is at 2048 the walk up to it,
/// a same-filled page all of it.
#[test]
fn zram_same_filled_check_stops_at_the_first_differing_word() {
    use thplab_workload::costs::{CompressorCosts, CostProfile};
    let w = |byte: u32, bytes: u32| {
        thplab_workload::parse_workload(&format!(
            r#"{{"machine":{{"nodes":[{{"mem":"1G","cpus":2}}],"swap":[{{"type":"zram","size":"256M"}}]}},
              "processes":[{{"name":"p","ops":[
              {{"op":"mmap","name":"s","size":"2M","align":"2M"}},
              {{"op":"madvise","region":"s","advice":"nohugepage"}},
              {{"op":"write","region":"s","byte":{byte},"bytes":{bytes},"data":255}},
              {{"op":"phase","name":"out"}},
              {{"op":"madvise","region":"s","advice":"pageout"}}]}}]}}"#
        ))
        .unwrap()
    };
    let t = |w: &thplab_workload::Workload, same_ns: u64| {
        let mut costs = CostProfile::default();
        for z in costs.zram.values_mut() {
            *z = CompressorCosts { same_ns, ..z.clone() };
        }
        phase_ns(&run_with(w, None, &[], Some(costs)), ":out")
    };
    // 1 ns per byte read: the difference is the bytes page_same_filled reads, per page
    let per_page = |w: &thplab_workload::Workload| (t(w, 8_192) - t(w, 4_096)) / 512;
    assert_eq!(per_page(&w(4095, 1)), 16, "last word differs from the first: two words");
    assert_eq!(per_page(&w(2048, 1)), 2048 + 8 + 8, "the walk up to the word at 2048");
    assert_eq!(per_page(&w(0, 4096)), 4096, "same-filled: the whole page");
}

/// munmap's VMA work (do_vmi_munmap): a __split_vma per end of the range that lies inside
/// a VMA (vma_split_ns) and munmap_vma_ns per VMA removed. A hole cut out of the middle of
/// a VMA pays two splits; the whole region none (its own VMA: MADV_HUGEPAGE keeps it from
/// merging with its neighbour).
#[test]
fn munmap_charges_vma_splits_and_removals() {
    use thplab_workload::costs::CostProfile;
    let w = thplab_workload::parse_workload(
        r#"{"processes":[{"name":"p","ops":[
          {"op":"mmap","name":"a","size":"4M","align":"2M"},
          {"op":"mmap","name":"b","size":"4M","align":"2M"},
          {"op":"madvise","region":"b","advice":"hugepage"},
          {"op":"phase","name":"holes"},
          {"op":"munmap","region":"a","every":"64K","offset":"32K","length":"4K"},
          {"op":"phase","name":"whole"},
          {"op":"munmap","region":"b"}]}]}"#,
    )
    .unwrap();
    let t = |vma_split_ns: u64, munmap_vma_ns: u64| {
        let r =
            run_with(&w, Some("1G"), &[], Some(CostProfile { vma_split_ns, munmap_vma_ns, ..CostProfile::default() }));
        (phase_ns(&r, ":holes"), phase_ns(&r, ":whole"))
    };
    let (h0, w0) = t(0, 0);
    let (h1, w1) = t(1_000, 0);
    let (h2, w2) = t(0, 1_000);
    assert_eq!(h1 - h0, 64 * 2 * 1_000, "64 holes, two splits each");
    assert_eq!(w1, w0, "the whole VMA: no split");
    assert_eq!(h2 - h0, 64 * 1_000, "one VMA removed per hole");
    assert_eq!(w2 - w0, 1_000);
}

/// A partial munmap of a THP pays the PMD's split (split_pmd_ns) beside the VMA work of
/// the hole it cuts (two splits, a removal), as calibrate's fit of split_pmd_ns assumes
/// (split_pmd_munmap less munmap_hole_anon and zap_flush_ns).
#[test]
fn a_partial_munmap_of_a_thp_pays_the_pmd_split_beside_the_hole() {
    use thplab_workload::costs::CostProfile;
    let w = thplab_workload::parse_workload(
        r#"{"knobs":{"transparent_hugepage/enabled":"madvise"},"processes":[{"name":"p","ops":[
          {"op":"mmap","name":"b","size":"16M","align":"2M"},
          {"op":"madvise","region":"b","advice":"hugepage"},
          {"op":"write","region":"b","every":"2M","length":"4K","bytes":1},
          {"op":"phase","name":"unmap"},
          {"op":"munmap","region":"b","every":"2M","offset":"1M","length":"4K"}]}]}"#,
    )
    .unwrap();
    let t = |split_pmd_ns: u64, vma_split_ns: u64| {
        let costs = CostProfile { split_pmd_ns, vma_split_ns, ..CostProfile::default() };
        phase_ns(&run_with(&w, Some("1G"), &[], Some(costs)), ":unmap")
    };
    let base = t(0, 0);
    assert_eq!(t(10_000, 0) - base, 8 * 10_000, "eight THPs, each PMD split once");
    assert_eq!(t(0, 1_000) - base, 8 * 2 * 1_000, "and each hole's two VMA splits beside");
}

/// MADV_PAGEOUT of a THP with one non-zero byte: it is split and its 511 zero subpages are
/// left unmapped. With swap, each takes a pass of shrink_folio_list that allocates a slot
/// and gives it back (reclaim_unmapped_ns); with no swap, the pass ends at
/// folio_alloc_swap()'s failure and the folio is freed as it is put back
/// (reclaim_activate_ns).
#[test]
fn unmapped_subpages_without_swap_are_freed_at_putback() {
    use thplab_workload::costs::CostProfile;
    let w = |swap: &str| {
        thplab_workload::parse_workload(&format!(
            r#"{{"machine":{{"nodes":[{{"mem":"1G","cpus":2}}],"swap":[{swap}]}},
              "knobs":{{"transparent_hugepage/enabled":"always"}},
              "processes":[{{"name":"p","ops":[
              {{"op":"mmap","name":"b","size":"2M","align":"2M"}},
              {{"op":"write","region":"b","length":"4K","bytes":1}},
              {{"op":"phase","name":"out"}},
              {{"op":"madvise","region":"b","advice":"pageout"}}]}}]}}"#
        ))
        .unwrap()
    };
    let t = |w: &thplab_workload::Workload, reclaim_unmapped_ns: u64| {
        let c = CostProfile { reclaim_unmapped_ns, ..CostProfile::default() };
        phase_ns(&run_with(w, None, &[], Some(c)), ":out")
    };
    let noswap = w("");
    assert_eq!(t(&noswap, 5_000), t(&noswap, 0), "no swap: no slot is allocated and given back");
    let act = |w: &thplab_workload::Workload, reclaim_activate_ns: u64| {
        let c = CostProfile { reclaim_activate_ns, ..CostProfile::default() };
        phase_ns(&run_with(w, None, &[], Some(c)), ":out")
    };
    assert_eq!(act(&noswap, 1_000) - act(&noswap, 0), 511 * 1_000, "each zero subpage's pass, put back and freed");
    let file = w(r#"{"type":"file","size":"64M"}"#);
    assert_eq!(t(&file, 5_000) - t(&file, 0), 511 * 5_000, "with swap: each zero subpage's pass");
    assert_eq!(act(&file, 5_000), act(&file, 0), "with swap no pass ends at activate_locked_split");
}

/// A folio's pass of shrink_folio_list stops short of the swap-out when folio_alloc_swap()
/// fails (no swap device: activate_locked), so it pays reclaim_scan_page_ns less
/// reclaim_swapout_ns; with a swap file every 4 KiB folio goes on to swap and pays the pass
/// whole. A THP split for want of a cluster pays the short pass itself, and its written
/// subpage the whole pass only where it gets a slot. A profile without the figure (None)
/// charges every pass whole.
#[test]
fn a_pass_that_finds_no_swap_slot_pays_no_swap_out() {
    use thplab_workload::costs::CostProfile;
    let w = |swap: &str, thp: bool| {
        let (enabled, write) = if thp { ("always", r#""length":"4K","bytes":1"#) } else { ("never", r#""bytes":1"#) };
        thplab_workload::parse_workload(&format!(
            r#"{{"machine":{{"nodes":[{{"mem":"1G","cpus":2}}],"swap":[{swap}]}},
              "knobs":{{"transparent_hugepage/enabled":"{enabled}"}},
              "processes":[{{"name":"p","ops":[
              {{"op":"mmap","name":"b","size":"2M","align":"2M"}},
              {{"op":"write","region":"b",{write}}},
              {{"op":"phase","name":"out"}},
              {{"op":"madvise","region":"b","advice":"pageout"}}]}}]}}"#
        ))
        .unwrap()
    };
    let t = |w: &thplab_workload::Workload, reclaim_swapout_ns: Option<u64>| {
        let c = CostProfile { reclaim_scan_page_ns: 2_000, reclaim_swapout_ns, ..CostProfile::default() };
        phase_ns(&run_with(w, None, &[], Some(c)), ":out")
    };
    let file = r#"{"type":"file","size":"64M"}"#;
    let (noswap, swapped) = (w("", false), w(file, false));
    assert_eq!(t(&noswap, None) - t(&noswap, Some(1_500)), 512 * 1_500, "512 passes short of the swap-out");
    assert_eq!(t(&swapped, None), t(&swapped, Some(1_500)), "512 passes on to swap: each whole");
    // more than the pass itself: the pass is all swap-out, none of it charged short
    assert_eq!(t(&noswap, Some(1_000_000)), t(&noswap, None) - 512 * 2_000);
    let (noswap, swapped) = (w("", true), w(file, true));
    assert_eq!(t(&noswap, None) - t(&noswap, Some(1_500)), 2 * 1_500, "the THP's and its written subpage's");
    assert_eq!(t(&swapped, None) - t(&swapped, Some(1_500)), 1_500, "the THP's alone: its subpage gets a slot");
}
