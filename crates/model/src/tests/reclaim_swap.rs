//! Reclaim and swap (issue 4): MADV_PAGEOUT of THPs and base pages with and without
//! swap, zram, zeromap, readahead, the seed-003 PMD swap entries, lazy-free, kswapd and
//! direct reclaim, OOM on a full swap device, and a no-data-loss round trip. Expected
//! counters are worked out from the kernel's behaviour (and, for the seed-000 workload,
//! measured on the live kernel), not tuned. The invariant checker is on everywhere.

use crate::check;
use crate::kernel::Kernel;
use crate::memory::Mapping;
use crate::mm_types::{content, TAG_ANON};
use crate::mmap::{Mm, VM_READ, VM_WRITE};
use crate::tlb::Tlb;
use thplab_workload::costs::CostProfile;
use thplab_workload::workload::{Advice, DataKind, WriteData};
use thplab_workload::{MachineSpec, RunResult};

use super::common::go;
use crate::mm_types::{MmId, Pfn};

const P0: MmId = MmId(0);
#[allow(dead_code)]
const P1: MmId = MmId(1);
#[allow(dead_code)]
const P2: MmId = MmId(2);

fn pd(r: &RunResult, phase: &str, c: &str) -> i64 {
    r.phases
        .iter()
        .find(|p| p.name.ends_with(&format!(":{phase}")))
        .unwrap_or_else(|| panic!("no phase {phase}"))
        .vmstat_delta
        .get(c)
        .copied()
        .unwrap_or(0)
}

/// Seed 000's test.c at `size` with one dirty byte per 2 MiB, then a read of every
/// dirty byte, then munmap.
fn seed000(size: &str) -> String {
    format!(
        r#"{{"name":"s0","knobs":{{"transparent_hugepage/enabled":"madvise"}},"processes":[{{"name":"test","ops":[
 {{"op":"phase","name":"fault"}},
 {{"op":"mmap","name":"buf","size":"{size}"}},
 {{"op":"madvise","region":"buf","advice":"hugepage"}},
 {{"op":"write","region":"buf","length":"4K","every":"2M","byte":0,"bytes":1,"data":255}},
 {{"op":"phase","name":"pageout"}},
 {{"op":"madvise","region":"buf","advice":"pageout"}},
 {{"op":"phase","name":"touch"}},
 {{"op":"read","region":"buf","length":"4K","every":"2M"}},
 {{"op":"phase","name":"munmap"}},
 {{"op":"munmap","region":"buf"}}]}}]}}"#
    )
}

fn d(r: &RunResult, c: &str) -> i64 {
    r.vmstat_delta.get(c).copied().unwrap_or(0)
}

#[test]
fn seed000_pageout_matches_the_live_kernel() {
    // measured on v6.18 at 2 GiB: without swap every THP fails folio_alloc_swap, is split
    // and its dirty page activated; with 4G of zram every THP is written whole
    let r = go(&seed000("2G"), "4G", &[]);
    for c in ["thp_split_pmd", "thp_split_page", "thp_swpout_fallback"] {
        assert_eq!(pd(&r, "pageout", c), 1024, "{c}");
    }
    assert_eq!(pd(&r, "pageout", "pgactivate"), 1024);
    assert_eq!(pd(&r, "pageout", "pswpout"), 0);
    let r = go(&seed000("2G"), "4G,swap=zram:4G", &[]);
    assert_eq!(pd(&r, "pageout", "thp_swpout"), 1024);
    assert_eq!(pd(&r, "pageout", "pswpout"), 524288);
    assert_eq!(pd(&r, "pageout", "thp_split_pmd"), 1024);
    assert_eq!(pd(&r, "pageout", "thp_split_page"), 0);
    assert_eq!(pd(&r, "pageout", "nr_anon_pages"), -524288);
    // zram keeps the 511 zero pages of each THP as same-filled pages
    let ph = r.extra["zram_mm_stat_phase_end"].as_array().unwrap();
    let after_pageout = ph.iter().find(|p| p["phase_end"] == "test:pageout").unwrap();
    assert_eq!(after_pageout["mm_stat"]["same_pages"], 1024 * 511);
    assert_eq!(after_pageout["mm_stat"]["orig_data_size"], 524288u64 * 4096);
    assert_eq!(after_pageout["mm_stat"]["huge_pages"], 0);
    // reading one byte per 2 MiB swaps in one 4 KiB page each (zram is synchronous)
    assert_eq!(pd(&r, "touch", "pswpin"), 1024);
    assert_eq!(pd(&r, "touch", "thp_fault_alloc"), 0);
    // everything is released at munmap: zram and the swap device are empty again
    assert_eq!(r.meminfo["SwapFree"], r.meminfo["SwapTotal"]);
    assert_eq!(r.extra["zram_mm_stat"]["zram0"]["after"]["orig_data_size"], 0);
    assert_eq!(r.extra["zram_mm_stat"]["zram0"]["after"]["mem_used_total"], 0);
    // every page is free again: in the buddy lists or on the per-CPU lists
    let pages = |t: &str| -> u64 {
        t.lines()
            .flat_map(|l| l.split_whitespace().skip(4).enumerate().map(|(o, n)| n.parse::<u64>().unwrap() << o))
            .sum()
    };
    let zi = r.extra["zoneinfo"].as_array().unwrap();
    let free_pcp: u64 =
        zi.iter().map(|z| z["nr_free_pages"].as_u64().unwrap() + z["nr_pcp_pages"].as_u64().unwrap()).sum();
    assert_eq!(free_pcp, pages(&r.buddyinfo_before));
}

#[test]
fn config_thp_swap_n_splits_every_thp_and_the_zero_policy_applies() {
    let w = seed000("256M");
    let m = "1G,swap=zram:1G";
    let seed = go(&w, m, &[("thplab.config_thp_swap", "n"), ("thplab.split_zero_subpages", "seed")]);
    let none = go(&w, m, &[("thplab.config_thp_swap", "n"), ("thplab.split_zero_subpages", "none")]);
    let main = go(&w, m, &[("thplab.config_thp_swap", "n")]);
    for r in [&seed, &none, &main] {
        assert_eq!(pd(r, "pageout", "thp_swpout"), 0);
        assert_eq!(pd(r, "pageout", "thp_swpout_fallback"), 128);
        assert_eq!(pd(r, "pageout", "thp_split_page"), 128);
    }
    // seed 000: the zero subpages are dropped, only the dirty page of each THP is written
    assert_eq!(pd(&seed, "pageout", "pswpout"), 128);
    assert_eq!(pd(&seed, "pageout", "thp_split_unmap"), 128 * 511);
    // patch 2: each unmapped zero subpage has only the split's references left and is
    // freed by __split_huge_page at once (thp_split_free, ~511 per THP in the best case)
    assert_eq!(pd(&seed, "pageout", "thp_split_free"), 128 * 511);
    for r in [&none, &main] {
        assert_eq!(pd(r, "pageout", "thp_split_free"), 0);
        assert_eq!(pd(r, "pageout", "thp_split_unmap"), 0);
    }
    // before the series every subpage stays mapped and is swapped out; the zero ones
    // each go to the zeromap without I/O
    assert_eq!(pd(&none, "pageout", "pswpout"), 128);
    assert_eq!(pd(&none, "pageout", "swpout_zero"), 128 * 511);
    assert_eq!(pd(&main, "pageout", "swpout_zero"), 0);
    // mainline remaps them to the zero page
    assert_eq!(pd(&main, "pageout", "pswpout"), 128);
    // a read after the seed policy's unmap faults in the zero page, no swap-in
    assert_eq!(pd(&seed, "touch", "pswpin"), 128);
}

#[test]
fn zeromap_and_zram_same_filled_and_huge() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"z","size":"8M","align":"2M"},{"op":"madvise","region":"z","advice":"hugepage"},
      {"op":"write","region":"z","every":"2M","length":"4K","bytes":1,"data":0},
      {"op":"mmap","name":"b","size":"4M"},{"op":"madvise","region":"b","advice":"nohugepage"},
      {"op":"write","region":"b","length":"1M","data":255},
      {"op":"write","region":"b","offset":"1M","length":"1M","data":"random"},
      {"op":"write","region":"b","offset":"2M","length":"1M","data":"text"},
      {"op":"write","region":"b","offset":"3M","length":"1M","bytes":1,"data":0},
      {"op":"phase","name":"out"},
      {"op":"madvise","region":"z","advice":"pageout"},{"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"in"},{"op":"read","region":"z"},{"op":"read","region":"b"}]}]}"#;
    let r = go(w, "1G,swap=zram:256M", &[]);
    // 4 all-zero THPs and 256 zero base pages: zeromap, no I/O
    assert_eq!(pd(&r, "out", "swpout_zero"), 4 * 512 + 256);
    assert_eq!(pd(&r, "out", "thp_swpout"), 0);
    assert_eq!(pd(&r, "out", "pswpout"), 768);
    let st = &r.extra["zram_mm_stat_phase_end"].as_array().unwrap().iter().find(|p| p["phase_end"] == "p:out").unwrap()
        ["mm_stat"];
    assert_eq!(st["same_pages"], 256);
    assert_eq!(st["huge_pages"], 256);
    assert_eq!(st["orig_data_size"], 768 * 4096);
    let c = CostProfile::default().zram["lzo-rle"].clone();
    assert_eq!(st["compr_data_size"], 256 * 4096 + 256 * c.text_bytes);
    assert!(st["mem_used_total"].as_u64().unwrap() >= 256 * 4096 + 256 * c.text_bytes);
    assert_eq!(pd(&r, "in", "swpin_zero"), 4 * 512 + 256);
    assert_eq!(pd(&r, "in", "pswpin"), 768);
}

/// The model's kernel, driven directly: one process with one mapping.
fn kernel(machine: &str, knobs: &[(&str, &str)]) -> (Kernel, u64) {
    let m = MachineSpec::parse_any(machine).unwrap();
    let mut ks = thplab_workload::knobs::defaults();
    for (a, b) in knobs {
        let (c, v) = thplab_workload::knobs::check_assignment(a, b).unwrap();
        ks.insert(c, v);
    }
    let mut k = Kernel::new(&m, ks, CostProfile::default(), 1).unwrap();
    k.mms.push(Mm::new(P0, "p", 0, 0, Tlb::new(&m.tlb)));
    let base = 0x7f00_0000_0000u64 - (64 << 20);
    k.mms[P0].insert_vma(base, base + (64 << 20), VM_READ | VM_WRITE);
    (k, base)
}

/// Every page's contents as the process sees it (swapped pages: what their slot holds).
fn snapshot(k: &Kernel, base: u64, pages: u64) -> Vec<u16> {
    (0..pages)
        .map(|p| match k.follow(P0, base + p * 4096) {
            Mapping::Page(Pfn(pfn), _) => {
                let f = k.pm.frames[pfn as usize];
                assert_eq!(f >> 61, TAG_ANON);
                content(f)
            }
            Mapping::Zero | Mapping::HugeZero | Mapping::None => 0,
            Mapping::Swap(s) => k.swap.data(s),
            Mapping::Migration(_) => panic!("migration entry left"),
        })
        .collect()
}

/// Write distinct contents: page p gets its first non-zero byte at offset p % 4096
/// (every 7th page whole-page 0x5a: zram same-filled; every 11th text; every 13th random;
/// every 5th left zero); 16 THPs in the first 32 MiB, base pages after.
fn fill(k: &mut Kernel, base: u64) {
    k.madvise(P0, base, base + (32 << 20), Advice::Hugepage).unwrap();
    for p in 0..(64u64 << 20) / 4096 {
        let a = base + p * 4096;
        let f = if p % 5 == 0 {
            k.write_page(P0, a, 0, 1, &WriteData::Byte(0))
        } else if p % 7 == 0 {
            k.write_page(P0, a, 0, 4096, &WriteData::Byte(0x5a))
        } else if p % 11 == 0 {
            k.write_page(P0, a, 0, 4096, &WriteData::Kind(DataKind::Text))
        } else if p % 13 == 0 {
            k.write_page(P0, a, 0, 4096, &WriteData::Kind(DataKind::Random))
        } else {
            k.write_page(P0, a, (p % 4096) as u32, 1, &WriteData::Byte(1 + (p % 200) as u8))
        };
        assert_eq!(f, crate::memory::Fault::Ok);
    }
    // one all-zero THP (zeromap) in the middle
    k.madvise(P0, base + (8 << 20), base + (10 << 20), Advice::Dontneed).unwrap();
    let _ = k.write_page(P0, base + (8 << 20), 0, 1, &WriteData::Byte(0));
}

fn touch_all(k: &mut Kernel, base: u64, write_every: u64) {
    for p in 0..(64u64 << 20) / 4096 {
        let a = base + p * 4096;
        if write_every > 0 && p % write_every == 0 {
            // rewrite the same bytes: contents unchanged, the page is dirtied
            let _ = k.read_page(P0, a);
            if let Mapping::Page(Pfn(pfn), _) = k.follow(P0, a) {
                k.touch_folio(pfn, true);
            }
        } else {
            assert_eq!(k.read_page(P0, a), crate::memory::Fault::Ok);
        }
    }
}

#[test]
fn no_data_is_lost_through_every_swap_path() {
    let pages = (64u64 << 20) / 4096;
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        // THP written whole on zram, 4 KiB swap-in; zram same-filled; zeromap
        ("1G,swap=zram:256M", vec![]),
        // CONFIG_THP_SWAP=n: every THP split before swap-out (mainline and seed zero policies)
        ("1G,swap=zram:256M", vec![("thplab.config_thp_swap", "n")]),
        ("1G,swap=zram:256M", vec![("thplab.config_thp_swap", "n"), ("thplab.split_zero_subpages", "seed")]),
        // a non-synchronous device: swap readahead and the swap cache
        ("1G,swap=ssd:256M", vec![]),
        // a rotational block device: THPs written whole (cluster_alloc_swap_entry refuses
        // large entries only for swap files)
        ("1G,swap=disk:256M", vec![]),
        // seed 003: PMD swap entries, swapped in whole
        ("1G,swap=pmem:256M", vec![("thplab.pmd_swap_entries", "1")]),
        ("1G,swap=pmem:256M", vec![("thplab.pmd_swap_entries", "1"), ("transparent_hugepage/swapin_enabled", "never")]),
        // a small, fragmented device: THPs fall back to base pages when no cluster is free
        ("1G,swap=zram:48M", vec![]),
    ];
    for (m, knobs) in cases {
        let (mut k, base) = kernel(m, &knobs);
        fill(&mut k, base);
        check::check(&k).unwrap();
        let before = snapshot(&k, base, pages);
        if m.ends_with("48M") {
            // fill most of the device with base pages first
            k.madvise(P0, base + (32 << 20), base + (64 << 20), Advice::Pageout).unwrap();
        }
        k.madvise(P0, base, base + (64 << 20), Advice::Pageout).unwrap();
        check::check(&k).unwrap();
        assert_eq!(snapshot(&k, base, pages), before, "{m} {knobs:?}: after swap-out");
        assert!(k.rec.vm.get(crate::vmstat::Ev::PSWPOUT) > 0, "{m} {knobs:?}");
        // swap in by touch (reads; every 3rd page written, which drops its swap-cache copy)
        touch_all(&mut k, base, 3);
        check::check(&k).unwrap();
        assert_eq!(snapshot(&k, base, pages), before, "{m} {knobs:?}: after swap-in");
        // and once more: out and in again (swap-cache folios go out clean, without I/O)
        k.madvise(P0, base, base + (64 << 20), Advice::Pageout).unwrap();
        check::check(&k).unwrap();
        touch_all(&mut k, base, 0);
        check::check(&k).unwrap();
        assert_eq!(snapshot(&k, base, pages), before, "{m} {knobs:?}: after the second round");
        let ev = |e| k.rec.vm.get(e);
        use crate::vmstat::Ev;
        match (m, knobs.len()) {
            ("1G,swap=zram:256M", 0) => assert!(ev(Ev::THP_SWPOUT) > 0 && ev(Ev::SWPOUT_ZERO) >= 512),
            ("1G,swap=zram:256M", _) => assert!(ev(Ev::THP_SWPOUT_FALLBACK) >= 16 && ev(Ev::THP_SWPOUT) == 0),
            ("1G,swap=ssd:256M", _) => {
                assert!(ev(Ev::SWAP_RA) > 0 && ev(Ev::SWAP_RA_HIT) > 0 && ev(Ev::THP_SWPOUT) > 0, "readahead")
            }
            ("1G,swap=disk:256M", _) => assert!(ev(Ev::THP_SWPOUT) > 0 && ev(Ev::THP_SWPOUT_FALLBACK) == 0),
            ("1G,swap=pmem:256M", 1) => assert!(ev(Ev::THP_SWPIN) > 0 && ev(Ev::THP_SPLIT_PMD) == 0),
            ("1G,swap=pmem:256M", _) => assert!(ev(Ev::THP_SWPIN) == 0 && ev(Ev::THP_SWPOUT) > 0),
            ("1G,swap=zram:48M", _) => assert!(ev(Ev::THP_SWPOUT_FALLBACK) > 0, "fragmented device"),
            _ => {}
        }
        // munmap releases every slot
        k.zap_range(P0, base, base + (64 << 20), true);
        k.mms[P0].vmas.clear();
        check::check(&k).unwrap();
        assert_eq!(k.swap.nr_free(), k.swap.total_pages(), "{m} {knobs:?}");
    }
}

#[test]
fn seed003_pmd_swap_entries_swap_thps_in_whole() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"64M","align":"2M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","bytes":1,"byte":9,"data":3},
      {"op":"phase","name":"out"},{"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"in"},{"op":"read","region":"b","every":"2M","length":"4K"},
      {"op":"phase","name":"out2"},{"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"partial"},{"op":"munmap","region":"b","offset":"1M","length":"4K"},
      {"op":"mprotect","region":"b","offset":"2M","length":"4K","prot":"r"},
      {"op":"madvise","region":"b","offset":"4M","length":"8K","advice":"free"},
      {"op":"phase","name":"in2"},{"op":"read","region":"b","every":"2M","length":"4K"}]}]}"#;
    let r = go(w, "1G,swap=pmem:256M", &[("thplab.pmd_swap_entries", "1")]);
    assert_eq!(pd(&r, "out", "thp_swpout"), 32);
    assert_eq!(pd(&r, "out", "thp_split_pmd"), 0, "one PMD swap entry, no split");
    assert_eq!(pd(&r, "in", "thp_swpin"), 32);
    assert_eq!(pd(&r, "in", "pswpin"), 32 * 512);
    assert_eq!(pd(&r, "in", "nr_anon_transparent_hugepages"), 32);
    assert_eq!(pd(&r, "out2", "thp_swpout"), 32);
    // partial munmap / mprotect / MADV_FREE split the PMD swap entry: 3 of 32 come back as base pages
    assert_eq!(pd(&r, "partial", "swpin_zero") + pd(&r, "partial", "pswpin"), 0);
    assert_eq!(pd(&r, "in2", "thp_swpin"), 29);
    // the split ones swap in 4 KiB each; MADV_FREE discarded the swapped page it covered
    assert_eq!(pd(&r, "in2", "pswpin"), 29 * 512 + 2);
    assert!(r.processes[0].errors.is_empty(), "{:?}", r.processes[0].errors);
    // mainline for comparison: split into swap PTEs, base pages come back
    let m = go(w, "1G,swap=pmem:256M", &[]);
    assert_eq!(pd(&m, "out", "thp_split_pmd"), 32);
    assert_eq!(pd(&m, "in", "thp_swpin"), 0);
    assert_eq!(pd(&m, "in", "pswpin"), 32);
    assert!(!m.vmstat.contains_key("thp_swpin"), "not a mainline counter");
    // swapin_enabled=madvise: this VMA has MADV_HUGEPAGE, so still whole; never: 4 KiB
    let md = go(
        w,
        "1G,swap=pmem:256M",
        &[("thplab.pmd_swap_entries", "1"), ("transparent_hugepage/swapin_enabled", "madvise")],
    );
    assert_eq!(pd(&md, "in", "thp_swpin"), 32);
    let nv = go(
        w,
        "1G,swap=pmem:256M",
        &[("thplab.pmd_swap_entries", "1"), ("transparent_hugepage/swapin_enabled", "never")],
    );
    assert_eq!(pd(&nv, "in", "thp_swpin"), 0);
    assert_eq!(pd(&nv, "in", "pswpin"), 32);
}

#[test]
fn partial_pageout_splits_the_thp_first() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"2M","align":"2M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","bytes":1,"data":3},
      {"op":"phase","name":"out"},{"op":"madvise","region":"b","length":"1M","advice":"pageout"}]}]}"#;
    let r = go(w, "1G,swap=zram:64M", &[]);
    assert_eq!(pd(&r, "out", "thp_split_page"), 1);
    assert_eq!(pd(&r, "out", "thp_swpout"), 0);
    assert_eq!(pd(&r, "out", "pswpout"), 256);
    assert_eq!(r.processes[0].smaps_rollup["Swap"], 1024);
    assert_eq!(r.processes[0].smaps_rollup["Rss"], 1024);
}

#[test]
fn madv_free_lazyfree_is_discarded_unless_written_again() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"t","size":"8M","align":"2M"},{"op":"madvise","region":"t","advice":"hugepage"},
      {"op":"write","region":"t","bytes":1,"data":3},
      {"op":"mmap","name":"b","size":"1M"},{"op":"madvise","region":"b","advice":"nohugepage"},{"op":"write","region":"b","bytes":1,"data":3},
      {"op":"phase","name":"free"},{"op":"madvise","region":"t","advice":"free"},{"op":"madvise","region":"b","advice":"free"},
      {"op":"write","region":"t","offset":"2M","length":"4K","bytes":1,"data":7},
      {"op":"write","region":"b","length":"4K","bytes":1,"data":7},
      {"op":"phase","name":"reclaim"},{"op":"madvise","region":"t","advice":"pageout"},{"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"end"},{"op":"sleep","duration":"1ms"}]}]}"#;
    // no swap at all: clean lazy-free folios still go (they are on the file LRU)
    let r = go(w, "1G", &[]);
    assert_eq!(pd(&r, "free", "pglazyfree"), 4 * 512 + 256);
    assert_eq!(pd(&r, "free", "nr_inactive_file"), 4 * 512 + 256);
    // three THPs discarded whole (v6.12+), 255 base pages; the written ones stay
    assert_eq!(pd(&r, "reclaim", "pglazyfreed"), 3 * 512 + 255);
    assert_eq!(pd(&r, "reclaim", "thp_split_pmd"), 0);
    assert_eq!(pd(&r, "reclaim", "nr_anon_pages"), -(3 * 512 + 255));
    assert_eq!(pd(&r, "reclaim", "nr_anon_transparent_hugepages"), -3);
    assert_eq!(r.processes[0].smaps_rollup["Rss"], 4 * (512 + 1));
    // with swap the re-dirtied ones are swapped out instead
    let r = go(w, "1G,swap=zram:64M", &[]);
    assert_eq!(pd(&r, "reclaim", "pglazyfreed"), 3 * 512 + 255);
    assert_eq!(pd(&r, "reclaim", "pswpout"), 0, "re-dirtied lazy-free folios are activated first");
}

/// MADV_PAGEOUT of `pmds` PMDs with `per` written 4 KiB pages each, to zram, under `costs`:
/// the pageout phase's time.
fn pageout_time(pmds: u64, per: u64, costs: CostProfile) -> u64 {
    let w = format!(
        r#"{{"processes":[{{"name":"p","ops":[
      {{"op":"mmap","name":"b","size":"{}M","align":"2M"}},{{"op":"madvise","region":"b","advice":"nohugepage"}},
      {{"op":"write","region":"b","every":"2M","length":"{}K","data":"random"}},
      {{"op":"phase","name":"out"}},{{"op":"madvise","region":"b","advice":"pageout"}},{{"op":"phase","name":"end"}}]}}]}}"#,
        2 * pmds,
        4 * per
    );
    let o = crate::RunOptions {
        machine: Some(MachineSpec::parse_any("1G,swap=zram:256M").unwrap()),
        costs: Some(costs),
        check: true,
        ..Default::default()
    };
    let r = crate::run(&thplab_workload::parse_workload(&w).unwrap(), &o).unwrap();
    assert_eq!(pd(&r, "out", "pswpout"), (pmds * per) as i64);
    let p = r.phases.iter().find(|p| p.name == "p:out").unwrap();
    p.end_ns - p.start_ns
}

#[test]
fn madv_pageout_pays_a_reclaim_pages_call_per_pmd_and_a_flush_per_folio() {
    // madvise_cold_or_pageout_pte_range() calls reclaim_pages() once per PMD; PAGEOUT
    // gathers no TLB entries, so the flushes are try_to_unmap's, one per dirty folio
    // (try_to_unmap_flush_dirty before its writeback)
    let base = CostProfile::default();
    let with = |f: &dyn Fn(&mut CostProfile)| {
        let mut c = base.clone();
        f(&mut c);
        c
    };
    for (pmds, per) in [(64, 1), (2, 32)] {
        let t0 = pageout_time(pmds, per, with(&|c| c.reclaim_pages_ns = 0));
        let t1 = pageout_time(pmds, per, with(&|c| c.reclaim_pages_ns = 10_000));
        assert_eq!(t1 - t0, pmds * 10_000, "{pmds} PMDs of {per}");
        let f0 = pageout_time(pmds, per, with(&|c| c.tlb_flush_ns = 0));
        let f1 = pageout_time(pmds, per, with(&|c| c.tlb_flush_ns = 1_000));
        assert_eq!(f1 - f0, pmds * per * 1_000, "{pmds} PMDs of {per}");
    }
}

#[test]
fn madv_cold_deactivates() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"4M"},{"op":"madvise","region":"b","advice":"nohugepage"},{"op":"write","region":"b","bytes":1,"data":3},
      {"op":"phase","name":"cold"},{"op":"madvise","region":"b","advice":"cold"}]}]}"#;
    let r = go(w, "1G,swap=zram:64M", &[]);
    // new anonymous pages start on the inactive list: nothing to deactivate
    assert_eq!(pd(&r, "cold", "pgdeactivate"), 0);
    assert_eq!(pd(&r, "cold", "pswpout"), 0);
}

/// 1 GiB of RAM, 2 GiB of anonymous memory written twice: kswapd and direct reclaim.
const PRESSURE: &str = r#"{"processes":[
  {"name":"a","ops":[{"op":"mmap","name":"r","size":"1G"},{"op":"write","region":"r","bytes":8,"data":1},{"op":"write","region":"r","bytes":8,"data":2}]},
  {"name":"b","ops":[{"op":"mmap","name":"r","size":"1G"},{"op":"write","region":"r","bytes":8,"data":1},{"op":"write","region":"r","bytes":8,"data":2}]}]}"#;

#[test]
fn memory_pressure_wakes_kswapd_and_stalls_in_direct_reclaim() {
    let r = go(PRESSURE, "1G,cpus=2,swap=zram:3G", &[("transparent_hugepage/enabled", "always")]);
    assert_eq!(d(&r, "oom_kill"), 0);
    assert!(d(&r, "pageoutrun") > 0 && d(&r, "pgscan_kswapd") > 0 && d(&r, "pgsteal_kswapd") > 0);
    assert!(d(&r, "pgsteal_kswapd") + d(&r, "pgsteal_direct") <= d(&r, "pgscan_kswapd") + d(&r, "pgscan_direct"));
    assert!(d(&r, "pswpout") > 0 && d(&r, "pswpin") > 0);
    assert_eq!(d(&r, "pgsteal_anon"), d(&r, "pgsteal_kswapd") + d(&r, "pgsteal_direct"));
    let ks = r.extra["kthreads"].as_array().unwrap().iter().find(|k| k["name"] == "kswapd0").unwrap().clone();
    assert!(ks["runs"].as_u64().unwrap() > 0);
    // zram's compressed pages are RAM: the pool is charged as kernel memory
    assert!(r.extra["zram_mm_stat"]["zram0"]["after"]["mem_used_max"].as_u64().unwrap() > 0);
    // swappiness=0 still reclaims anon (there is no file LRU to prefer)
    let r0 = go(PRESSURE, "1G,cpus=2,swap=zram:3G", &[("vm.swappiness", "0")]);
    assert_eq!(d(&r0, "oom_kill"), 0);
}

#[test]
fn full_swap_device_ooms_the_biggest_process() {
    let w = r#"{"processes":[
      {"name":"small","ops":[{"op":"mmap","name":"r","size":"64M"},{"op":"write","region":"r","bytes":8,"data":1},{"op":"sleep","duration":"2s"}]},
      {"name":"big","start":"10ms","ops":[{"op":"mmap","name":"r","size":"3G"},{"op":"write","region":"r","bytes":8,"data":1}]}]}"#;
    let r = go(w, "1G,swap=pmem:512M", &[]);
    assert_eq!(d(&r, "oom_kill"), 1);
    assert_eq!(r.processes[1].killed.as_deref(), Some("oom_kill"));
    assert_eq!(r.processes[0].killed, None);
    let k = &r.extra["oom_kills"][0];
    assert_eq!(k["victim"], "big");
    // it was killed with the swap device full
    assert!(d(&r, "pswpout") >= (512 << 8) - 1);
    assert_eq!(r.meminfo["SwapFree"], r.meminfo["SwapTotal"], "the victim's swap is released");
}

#[test]
fn swap_priorities_and_devices() {
    let m = r#"{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"ssd","size":"64M","priority":5},{"type":"zram","size":"64M","priority":10},{"type":"file","size":"64M"}]}"#;
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"32M"},{"op":"madvise","region":"b","advice":"nohugepage"},{"op":"write","region":"b","bytes":1,"data":3},
      {"op":"phase","name":"out"},{"op":"madvise","region":"b","advice":"pageout"},{"op":"phase","name":"end"},{"op":"sleep","duration":"1ms"}]}]}"#;
    let r = go(w, m, &[]);
    let devs = r.extra["swap_devices"].as_array().unwrap();
    assert_eq!(devs[1]["type"], "zram");
    // the highest priority (zram, 10) takes everything
    let st = &r.extra["zram_mm_stat_phase_end"].as_array().unwrap().iter().find(|p| p["phase_end"] == "p:out").unwrap()
        ["mm_stat"];
    assert_eq!(st["orig_data_size"], 32u64 << 20);
    assert_eq!(d(&r, "pswpout"), 8192);
    assert_eq!(devs[2]["priority"], -2);
    assert_eq!(devs[2]["blkdev"], false);
    assert_eq!(devs[2]["rotational"], true);
    assert_eq!(r.meminfo["SwapTotal"], 3 * ((64 << 10) - 4));
    assert_eq!(r.processes[0].smaps_rollup["Swap"], 32 << 10);
}

/// 32 THPs with one dirty byte each, MADV_PAGEOUT, on a machine with `swap`.
fn thp_pageout_on(swap: &str) -> RunResult {
    let m = format!(r#"{{"nodes":[{{"mem":"1G","cpus":2}}],"swap":{swap}}}"#);
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"madvise"},"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"64M","align":"2M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"2M","length":"4K","bytes":1,"data":255},
      {"op":"phase","name":"out"},{"op":"madvise","region":"b","advice":"pageout"},{"op":"phase","name":"exit"}]}]}"#;
    go(w, &m, &[])
}

#[test]
fn large_swap_entries_need_a_block_device_and_only_the_first_device_is_tried() {
    // Measured on the live 6.18 kernel (`disk` = a loop device, rotational, over a file):
    // cluster_alloc_swap_entry() refuses order > 0 only without SWP_BLKDEV, so a rotational
    // block device takes whole THPs; swap_alloc_slow() tries a large allocation on the first
    // device of the avail list only ("if (order) return false"), so a swap file of higher
    // priority makes every THP split even with a zram device or a disk beside it.
    let r = thp_pageout_on(r#"[{"type":"disk","size":"256M","rotational":true}]"#);
    assert_eq!((pd(&r, "out", "thp_swpout"), pd(&r, "out", "thp_swpout_fallback")), (32, 0));
    assert_eq!(pd(&r, "out", "pswpout"), 32 * 512);
    let r = thp_pageout_on(r#"[{"type":"file","size":"256M"}]"#);
    assert_eq!((pd(&r, "out", "thp_swpout"), pd(&r, "out", "thp_swpout_fallback")), (0, 32));
    let r =
        thp_pageout_on(r#"[{"type":"file","size":"256M","priority":10},{"type":"zram","size":"256M","priority":5}]"#);
    assert_eq!((pd(&r, "out", "thp_swpout"), pd(&r, "out", "thp_swpout_fallback")), (0, 32));
    assert_eq!(pd(&r, "out", "pswpout"), 32, "the dirty page of each THP, to the swap file");
    let r =
        thp_pageout_on(r#"[{"type":"file","size":"256M","priority":10},{"type":"disk","size":"256M","priority":5}]"#);
    assert_eq!((pd(&r, "out", "thp_swpout"), pd(&r, "out", "thp_swpout_fallback")), (0, 32));
    let r =
        thp_pageout_on(r#"[{"type":"file","size":"256M","priority":5},{"type":"zram","size":"256M","priority":10}]"#);
    assert_eq!((pd(&r, "out", "thp_swpout"), pd(&r, "out", "thp_swpout_fallback")), (32, 0));
}

#[test]
fn madv_willneed_reads_swap_into_the_swap_cache() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"4M"},{"op":"madvise","region":"b","advice":"nohugepage"},{"op":"write","region":"b","bytes":1,"byte":5,"data":3},
      {"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"willneed"},{"op":"madvise","region":"b","advice":"willneed"},
      {"op":"phase","name":"touch"},{"op":"read","region":"b"},{"op":"phase","name":"end"},{"op":"sleep","duration":"1ms"}]}]}"#;
    let r = go(w, "1G,swap=zram:64M", &[]);
    assert_eq!(pd(&r, "willneed", "pswpin"), 1024);
    assert_eq!(pd(&r, "willneed", "nr_swapcached"), 1024);
    assert_eq!(pd(&r, "touch", "pswpin"), 0, "the faults hit the swap cache");
    assert_eq!(pd(&r, "touch", "pgmajfault"), 0);
    assert_eq!(pd(&r, "touch", "nr_anon_pages"), 1024);
}

/// thplab.swap_zeromap=n models the kernels before v6.12: an all-zero folio is written to
/// the device (zram stores it as same-filled) instead of going to the zeromap.
#[test]
fn swap_zeromap_switch() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"4M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","data":0},{"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"end"}]}]}"#;
    let on = go(w, "1G,swap=zram:64M", &[]);
    let off = go(w, "1G,swap=zram:64M", &[("thplab.swap_zeromap", "n")]);
    assert_eq!(d(&on, "swpout_zero"), 1024);
    assert_eq!(d(&on, "pswpout"), 0);
    assert_eq!(d(&off, "swpout_zero"), 0);
    assert_eq!(d(&off, "pswpout"), 1024);
}

/// Issue 15 difference 2: a write to a block device is asynchronous (swap_writepage_bdev_async),
/// so after MADV_PAGEOUT the folios stay in the swap cache under writeback
/// (shrink_folio_list: PAGE_SUCCESS with folio_test_writeback → keep). Measured live: SwapCached
/// is ~2 GiB right after paging out 2 GiB of THPs to the loop device. A read right after finds
/// each THP in the swap cache and maps it back whole by PTEs (do_swap_page with
/// swap_pte_batch covering the folio: no I/O). On zram (SWP_SYNCHRONOUS_IO) the folios are
/// freed at once ("a synchronous write - probably a ramdisk").
#[test]
fn async_writeback_keeps_paged_out_folios_in_the_swap_cache() {
    let r = thp_pageout_on(r#"[{"type":"disk","size":"256M"}]"#);
    assert_eq!(pd(&r, "out", "thp_swpout"), 32);
    assert_eq!(pd(&r, "out", "nr_swapcached"), 32 * 512);
    let r = thp_pageout_on(r#"[{"type":"zram","size":"256M"}]"#);
    assert_eq!(pd(&r, "out", "thp_swpout"), 32);
    assert_eq!(pd(&r, "out", "nr_swapcached"), 0);

    let m = r#"{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"disk","size":"256M"}]}"#;
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"madvise"},"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"64M","align":"2M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"2M","length":"4K","bytes":1,"data":255},
      {"op":"madvise","region":"b","advice":"pageout"},
      {"op":"phase","name":"touch"},{"op":"read","region":"b","every":"2M","length":"4K"},
      {"op":"phase","name":"exit"}]}]}"#;
    let r = go(w, m, &[]);
    assert_eq!((pd(&r, "touch", "pswpin"), pd(&r, "touch", "pgmajfault")), (0, 0), "swap-cache hits");
    assert_eq!(pd(&r, "touch", "nr_anon_pages"), 32 * 512, "each THP mapped back whole");
}

/// Split rule (6.18 __folio_split): a swap-cache THP is refused only while under writeback
/// (folio_test_writeback: -EBUSY before anything is counted); once written and mapped
/// again (a swap-cache hit maps it back by PTEs) it splits, each piece keeping its own
/// swap slot in the swap cache (__split_folio_to_order: new_folio->swap = swap + i,
/// __swap_cache_replace_folio).
#[test]
fn a_swap_cache_thp_splits_unless_under_writeback() {
    use crate::migrate::SplitReason;
    use crate::mm_types::{compound, referenced, swapcache, COMPOUND_BASE};
    let m = r#"{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"disk","size":"256M"}]}"#;
    let (mut k, base) = kernel(m, &[]);
    k.madvise(P0, base, base + (2 << 20), Advice::Hugepage).unwrap();
    for p in 0..512u64 {
        let d = if p % 3 == 0 { 0 } else { 1 + (p % 200) as u8 };
        assert_eq!(k.write_page(P0, base + p * 4096, 0, 1, &WriteData::Byte(d)), crate::memory::Fault::Ok);
    }
    assert_eq!(k.nr_anon_thp(), 1);
    let before = snapshot(&k, base, 512);
    k.madvise(P0, base, base + (2 << 20), Advice::Pageout).unwrap();
    let Mapping::Swap(slot) = k.follow(P0, base) else { panic!("paged out") };
    let head = *k.swap.cache.get(&slot).expect("in the swap cache") as u64;
    assert!(swapcache(k.pm.frames[head as usize]) && k.folio_under_writeback(head));
    // unmapped and under writeback: refused, and not counted (the early return -EBUSY)
    assert!(k.split_folio(Pfn(head), SplitReason::Other).is_err());
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_SPLIT_PAGE_FAILED), 0);
    // the write completes; a read maps the whole THP back by PTEs from the swap cache
    k.clock.now += 60_000_000_000;
    assert!(!k.folio_under_writeback(head));
    assert_eq!(k.read_page(P0, base), crate::memory::Fault::Ok);
    assert!(k.folio_mapped(head) && swapcache(k.pm.frames[head as usize]));
    let f = k.pm.frames[head as usize];
    k.pm.frames[head as usize] = crate::mm_types::set_referenced(f, true);
    let pieces = k.split_folio(Pfn(head), SplitReason::Other).expect("6.18 splits a swap-cache THP");
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_SPLIT_PAGE), 1);
    // the zero subpages went to the shared zero page (and out of the swap cache)
    assert_eq!(pieces.len(), 512 - 171);
    for &Pfn(p) in &pieces {
        let f = k.pm.frames[p as usize];
        assert_eq!(compound(f), COMPOUND_BASE);
        assert!(swapcache(f) && referenced(f), "PG_swapcache and PG_referenced copied to every piece");
        let (s, n) = k.swap_slots_of(p).expect("each piece caches its own slot");
        assert_eq!((s, n), (slot + (p - head) as u32, 1));
        assert_eq!(k.swap.cache.get(&s).copied(), Some(p as u32));
    }
    assert!(k.swap.cache.len() == pieces.len());
    assert_eq!(snapshot(&k, base, 512), before, "contents kept");
    check::check(&k).unwrap();
    // the pieces are ordinary swap-cache pages: reclaim frees them without writing again
    let pswpout = k.rec.vm.get(crate::vmstat::Ev::PSWPOUT);
    k.madvise(P0, base, base + (2 << 20), Advice::Pageout).unwrap();
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::PSWPOUT), pswpout, "clean: the swap copy is valid");
    assert_eq!(snapshot(&k, base, 512), before);
    check::check(&k).unwrap();
}

/// Writeback throttling and bio splitting on a block device (blk_wbt.rs, page_io.rs
/// swap_io): 128 THPs paged out to a `disk` whose queue takes 128 requests, then 512 base
/// pages. wbt lets only max_depth swap writes be in flight (16, growing per 100 ms window of
/// writes), and with a write cache a throttled writer waits for them all to complete: the
/// THP pageout pays a latency per batch, but the 4 KiB pageout after it waits behind at
/// most max_depth requests, not behind the whole tag depth of 2 MiB writes. Splitting each
/// 2 MiB bio at max_sectors_kb makes two requests of each THP, so a batch holds fewer THPs.
#[test]
fn wbt_bounds_swap_writes_in_flight() {
    let w = r#"{"processes":[{"ops":[
      {"op":"mmap","name":"t","size":"256M","align":"2M"},{"op":"madvise","region":"t","advice":"hugepage"},
      {"op":"write","region":"t","every":"2M","length":"4K","bytes":1,"data":255},
      {"op":"mmap","name":"s","size":"2M","align":"2M"},{"op":"madvise","region":"s","advice":"nohugepage"},
      {"op":"write","region":"s","every":"4K","length":"4K","bytes":1,"data":255},
      {"op":"phase","name":"thp"},{"op":"madvise","region":"t","advice":"pageout"},
      {"op":"phase","name":"small"},{"op":"madvise","region":"s","advice":"pageout"}]}]}"#;
    let run_with = |wbt_lat_usec: u64, write_cache: bool, max_sectors_kb: u64| {
        let disk = thplab_workload::costs::DeviceCosts {
            read_latency_ns: 100_000,
            write_latency_ns: 1_000_000,
            random_penalty_ns: 0,
            read_mb_per_s: 1_000,
            write_mb_per_s: 1_000,
            queue_depth: 128,
            max_sectors_kb,
            // one folio per request: no plug merging (plugged_4k_swap_writes_merge_into_large_requests)
            max_segments: 1,
            wbt_lat_usec,
            write_cache,
            write_segment_ns: 0,
        };
        let o = crate::RunOptions {
            machine: Some(MachineSpec::parse_any("2G,swap=disk:1G").unwrap()),
            costs: Some(CostProfile { disk, ..CostProfile::default() }),
            check: true,
            ..Default::default()
        };
        let r = crate::run(&thplab_workload::parse_workload(w).unwrap(), &o).unwrap();
        let t = |n: &str| r.phases.iter().find(|p| p.name == n).map(|p| p.end_ns - p.start_ns).unwrap();
        assert_eq!(r.vmstat_delta["thp_swpout"], 128);
        (t("p0:thp"), t("p0:small"))
    };
    let (thp_off, small_off) = run_with(0, true, 1280);
    let (thp_wbt, small_wbt) = run_with(2000, true, 1280);
    let (thp_nocache, _) = run_with(2000, false, 1280);
    let (thp_whole, _) = run_with(2000, true, 0);
    // without wbt the 4 KiB writes wait for free tags behind 128 requests of 1.28 MB (~160 ms)
    assert!(small_off > 100_000_000, "{small_off}");
    // with it, behind at most max_depth requests
    assert!(small_wbt * 2 < small_off, "{small_wbt} vs {small_off}");
    // draining to zero before every batch costs the THP pageout a latency per batch
    assert!(thp_wbt > thp_off, "{thp_wbt} vs {thp_off}");
    assert!(thp_wbt > thp_nocache, "{thp_wbt} vs {thp_nocache}");
    // two requests per THP: more batches than with whole 2 MiB requests
    assert!(thp_wbt > thp_whole, "{thp_wbt} vs {thp_whole}");
}

/// Block plugging and bio merging (page_io.rs BlkPlug; blk_start_plug in
/// madvise_do_behavior, blk_attempt_plug_merge → bio_attempt_back_merge): MADV_PAGEOUT of
/// 2048 consecutive dirty 4 KiB pages takes 2048 consecutive slots, and each 4 KiB bio
/// back-merges into the plug's request until it holds max_segments folios (or
/// max_sectors_kb): 16 requests of 128 pages on the loop device's queue (128 segments), 8 at
/// a 1 MiB max_sectors_kb with unlimited segments. Every page is still counted and under
/// writeback until its request completes. Without merging (max_segments 1) each page is its
/// own request, and wbt's depth makes the writer wait a latency per 16 of them.
/// MADV_PAGEOUT of 8 MiB of random data (`advice`: hugepage or nohugepage) on a 1 GiB
/// machine whose disk `set` tunes: the kernel after it and the time it started.
fn pageout_8m_to_disk(advice: Advice, set: impl Fn(&mut thplab_workload::costs::DeviceCosts)) -> (Kernel, u64) {
    let m = r#"{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"disk","size":"256M"}]}"#;
    let (mut k, base) = kernel(m, &[]);
    k.swap.devs.iter_mut().for_each(|d| set(&mut d.io));
    k.madvise(P0, base, base + (8 << 20), advice).unwrap();
    for p in 0..2048u64 {
        let f = k.write_page(P0, base + p * 4096, 0, 4096, &WriteData::Kind(DataKind::Random));
        assert_eq!(f, crate::memory::Fault::Ok);
    }
    let t0 = k.clock.now + k.clock.cost;
    k.madvise(P0, base, base + (8 << 20), Advice::Pageout).unwrap();
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::PSWPOUT), 2048);
    (k, t0)
}

#[test]
fn plugged_4k_swap_writes_merge_into_large_requests() {
    let run = |max_segments: u64, max_sectors_kb: u64| {
        let (k, t0) = pageout_8m_to_disk(Advice::Nohugepage, |io| {
            io.max_segments = max_segments;
            io.max_sectors_kb = max_sectors_kb;
            io.write_latency_ns = 1_000_000;
        });
        let t = k.clock.now + k.clock.cost - t0;
        assert!(k.swap.plug.rq.is_none() && k.swap.plug.depth == 0, "finished: nothing left in the plug");
        assert!(k.swap.writeback.values().all(|&d| d != u64::MAX), "every request issued");
        check::check(&k).unwrap();
        (k.swap.plug.requests, k.swap.plug.merges, t)
    };
    let (rq, merges, t_merged) = run(128, 1280);
    assert_eq!((rq, merges), (16, 2048 - 16));
    let (rq, _, _) = run(0, 1024);
    assert_eq!(rq, 8, "max_sectors_kb bounds a request when segments do not");
    let (rq, merges, t_single) = run(1, 1280);
    assert_eq!((rq, merges), (2048, 0));
    // 2048 requests through wbt's depth of 16 (write cache: drain to zero) wait ~128
    // latencies; 16 requests wait at most one
    assert!(t_single > 100_000_000, "{t_single}");
    assert!(t_merged * 10 < t_single, "{t_merged} vs {t_single}");
}

/// write_segment_ns: a write request takes the device's time per segment besides its bytes
/// at the bandwidth. 4 KiB pages merged under the plug are one segment each; a THP written
/// whole is one segment for 2 MiB, so the cost barely touches it.
#[test]
fn each_segment_of_a_swap_write_takes_device_time() {
    // the time from the pageout's start to its last write's completion
    let run = |seg_ns: u64, thp: bool| {
        let advice = if thp { Advice::Hugepage } else { Advice::Nohugepage };
        let (k, t0) = pageout_8m_to_disk(advice, |io| {
            io.write_segment_ns = seg_ns;
            io.write_mb_per_s = 100_000;
            io.write_latency_ns = 1_000;
            io.wbt_lat_usec = 0;
        });
        assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_SWPOUT), if thp { 4 } else { 0 });
        check::check(&k).unwrap();
        k.swap.writeback.values().max().copied().unwrap() - t0
    };
    let (small0, small) = (run(0, false), run(5_000, false));
    // the device is busy 2048 segments' time from the first request on
    assert!(small0 < 2048 * 1_000 && small >= 2048 * 5_000, "{small0} -> {small}");
    let (thp0, thp) = (run(0, true), run(5_000, true));
    assert!(thp - thp0 <= 8 * 5_000, "{thp0} -> {thp}");
}

/// free_swap_and_cache_nr() (6.18 mm/swapfile.c): swap_entries_put_map_nr() drops each
/// zapped PTE's count; a slot a folio in the swap cache still holds keeps SWAP_HAS_CACHE
/// and is freed with the folio's others when __try_to_reclaim_swap() takes the folio out
/// of the swap cache (put_swap_folio). Such a PTE costs swap_put_cached_ns where set; an
/// entry whose folio is gone (read back and freed, or never cached) swap_free_ns.
#[test]
fn a_swap_pte_whose_folio_is_cached_costs_swap_put_cached() {
    use crate::engine::{run, RunOptions};
    use thplab_workload::parse_workload;
    let m = r#"{"nodes":[{"mem":"1G","cpus":2}],"swap":[{"type":"disk","size":"256M"}]}"#;
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"madvise"},"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"b","size":"64M","align":"2M"},{"op":"madvise","region":"b","advice":"hugepage"},
      {"op":"write","region":"b","every":"2M","length":"4K","bytes":1,"data":255},
      {"op":"madvise","region":"b","advice":"pageout"},
      {"op":"sleep","duration":"5s"},
      {"op":"phase","name":"munmap"},{"op":"munmap","region":"b"}]}]}"#;
    let munmap_ns = |put: Option<u64>| {
        let costs = CostProfile { swap_put_cached_ns: put, ..CostProfile::default() };
        let o = RunOptions {
            machine: Some(MachineSpec::parse_any(m).unwrap()),
            costs: Some(costs),
            check: true,
            ..Default::default()
        };
        let r = run(&parse_workload(w).unwrap(), &o).unwrap();
        assert_eq!(d(&r, "thp_swpout"), 32);
        assert_eq!(pd(&r, "munmap", "nr_swapcached"), -32 * 512, "every folio still cached, then reclaimed");
        let p = r.phases.iter().find(|p| p.name == "p:munmap").unwrap();
        p.end_ns - p.start_ns
    };
    let swap_free = CostProfile::default().swap_free_ns;
    let (unset, zero, ten) = (munmap_ns(None), munmap_ns(Some(0)), munmap_ns(Some(10)));
    assert_eq!(unset - zero, 32 * 512 * swap_free, "unset: swap_free_ns for each cached PTE");
    assert_eq!(ten - zero, 32 * 512 * 10);
}

/// A run of `w` on a 1 GiB machine with 64 MiB of zram swap and `costs`, checked.
fn run_on_zram(w: &str, costs: CostProfile) -> thplab_workload::RunResult {
    let o = crate::RunOptions {
        machine: Some(MachineSpec::parse_any("1G,swap=zram:64M").unwrap()),
        costs: Some(costs),
        check: true,
        ..Default::default()
    };
    crate::run(&thplab_workload::parse_workload(w).unwrap(), &o).unwrap()
}

/// zram's costs where the kernel does the work (zram_drv.c): the swap layer notifies zram of
/// every slot it frees (swap_range_free -> zram_slot_free_notify), a zeromap slot zram
/// never stored included, so the munmap of 1024 zeromap swap entries pays slot_free_ns
/// each; a same-filled slot is read back by filling the page (read_same_filled_page:
/// zram_fill_page, clear_4k_ns), not by page_same_filled's compare (same_ns, a write's).
#[test]
fn zram_charges_the_notify_of_zeromap_slots_and_a_fill_for_same_filled_reads() {
    let w = r#"{"processes":[{"ops":[
      {"op":"mmap","name":"z","size":"4M","align":"2M"},{"op":"madvise","region":"z","advice":"hugepage"},
      {"op":"write","region":"z","every":"2M","length":"4K","bytes":1,"data":0},
      {"op":"mmap","name":"s","size":"4M"},{"op":"madvise","region":"s","advice":"nohugepage"},
      {"op":"write","region":"s","data":90},
      {"op":"madvise","region":"z","advice":"pageout"},{"op":"madvise","region":"s","advice":"pageout"},
      {"op":"phase","name":"read"},{"op":"read","region":"s"},
      {"op":"phase","name":"munmap"},{"op":"munmap","region":"z"}]}]}"#;
    let run = |slot_free_ns: u64, same_ns: u64, clear_4k_ns: u64| {
        let mut costs = CostProfile { clear_4k_ns, ..CostProfile::default() };
        for z in costs.zram.values_mut() {
            z.slot_free_ns = slot_free_ns;
            z.same_ns = same_ns;
        }
        let r = run_on_zram(w, costs);
        assert_eq!(r.vmstat_delta["swpout_zero"], 1024, "two all-zero THPs to the zeromap");
        assert_eq!(r.vmstat_delta["pswpin"], 1024, "the same-filled pages read back");
        let t = |n: &str| r.phases.iter().find(|p| p.name == n).map(|p| p.end_ns - p.start_ns).unwrap();
        (t("p0:read"), t("p0:munmap"))
    };
    let (_, munmap_0) = run(0, 300, 200);
    let (_, munmap_1ms) = run(1_000_000, 300, 200);
    // 1024 zeromap slots, each notified (the same-filled ones were freed by the read)
    assert!(munmap_1ms - munmap_0 >= 1024 * 1_000_000, "{munmap_1ms} vs {munmap_0}");
    let (read_slow_check, _) = run(0, 1_000_000, 200);
    let (read_slow_fill, _) = run(0, 300, 1_000_000);
    // 1024 same-filled reads: the fill, not the check
    assert!(read_slow_check < 1024 * 1_000_000, "{read_slow_check}");
    assert!(read_slow_fill >= 1024 * 1_000_000, "{read_slow_fill}");
}

/// swap_writeout()'s zeromap check (is_folio_zero_filled) costs zero_filled_4k_ns a zero
/// page where set, memchr_inv_4k_ns where not: MADV_PAGEOUT of two all-zero THPs on zram.
#[test]
fn zeromap_check_charges_zero_filled_4k_ns_where_set() {
    let w = r#"{"processes":[{"ops":[
      {"op":"mmap","name":"z","size":"4M","align":"2M"},{"op":"madvise","region":"z","advice":"hugepage"},
      {"op":"write","region":"z","every":"2M","length":"4K","bytes":1,"data":0},
      {"op":"phase","name":"pageout"},{"op":"madvise","region":"z","advice":"pageout"}]}]}"#;
    let run = |zero_filled_4k_ns: Option<u64>, memchr_inv_4k_ns: u64| {
        let r = run_on_zram(w, CostProfile { zero_filled_4k_ns, memchr_inv_4k_ns, ..CostProfile::default() });
        assert_eq!(r.vmstat_delta["swpout_zero"], 1024);
        r.phases.iter().find(|p| p.name == "p0:pageout").map(|p| p.end_ns - p.start_ns).unwrap()
    };
    let base = run(Some(0), 0);
    assert!(run(Some(1_000_000), 0) - base >= 1024 * 1_000_000);
    assert!(run(None, 1_000_000) - base >= 1024 * 1_000_000, "unset: memchr_inv_4k_ns");
    assert!(run(Some(0), 1_000_000) - base < 1_000_000, "set: memchr_inv_4k_ns not charged");
}

/// is_folio_zero_filled() (6.18 mm/page_io.c) reads each page's last word before the rest:
/// a page whose last byte is non-zero (seed 000's worst case) is rejected after one word,
/// not after a walk of the whole page; a page whose first non-zero byte is at 100 reads the
/// last word and the words up to it. MADV_PAGEOUT of 1024 such 4 KiB pages on zram.
#[test]
fn zeromap_check_reads_the_last_word_first() {
    let w = |byte: u32| {
        format!(
            r#"{{"processes":[{{"ops":[
          {{"op":"mmap","name":"b","size":"4M"}},{{"op":"madvise","region":"b","advice":"nohugepage"}},
          {{"op":"write","region":"b","byte":{byte},"bytes":1,"data":255}},
          {{"op":"phase","name":"pageout"}},{{"op":"madvise","region":"b","advice":"pageout"}}]}}]}}"#
        )
    };
    let run = |byte: u32, zero_filled_4k_ns: u64| {
        let r =
            run_on_zram(&w(byte), CostProfile { zero_filled_4k_ns: Some(zero_filled_4k_ns), ..CostProfile::default() });
        assert_eq!(r.vmstat_delta["pswpout"], 1024);
        r.phases.iter().find(|p| p.name == "p0:pageout").map(|p| p.end_ns - p.start_ns).unwrap()
    };
    let slow = 4096 * 1000;
    assert_eq!(run(4095, slow) - run(4095, 0), 1024 * 8 * 1000, "the last word alone");
    assert_eq!(run(100, slow) - run(100, 0), 1024 * (8 + 104) * 1000, "the last word, then 13 words");
}

/// zram's pool frames go back to the buddy allocator as the objects in them are freed
/// (zram_pool_fit); what that free costs, a spill of a full per-CPU list included, is in the
/// entry's calibrated *_free_ns, so no pcp_drain_ns is charged on top of it.
#[test]
fn zram_pool_frames_freed_pay_no_drain_beyond_the_entry_free() {
    use crate::gfp::GFP_HIGHUSER_MOVABLE;
    use crate::vmstat::NodeStat;
    let mut k = super::common::kernel("1G,swap=zram:1G", &[]);
    k.costs.pcp_drain_ns = 1000;
    // this CPU's list filled to its high mark: every further free spills
    let fill: Vec<_> = (0..20_000).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap()).collect();
    let frames: Vec<_> = (0..2_000).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap()).collect();
    for &p in &fill {
        k.pm.free_pages(p, 0, &mut k.rec.vm);
    }
    for &p in &frames {
        k.mod_node_page_state(p.0, NodeStat::NrKernelMisc, 1);
        k.swap.devs[0].zram.as_mut().unwrap().frames.push(p.0 as u32);
    }
    k.swap.devs[0].zram.as_mut().unwrap().pool_bytes = 0;
    (k.pm.spilled, k.clock.cost) = (0, 0);
    let before = k.pm.pcp_pages_total();
    k.zram_pool_fit(0);
    k.charge(0);
    assert!(k.swap.devs[0].zram.as_ref().unwrap().frames.is_empty());
    assert!(before + 2_000 > k.pm.pcp_pages_total(), "the frees spilled");
    assert_eq!(k.clock.cost, 0);
}
