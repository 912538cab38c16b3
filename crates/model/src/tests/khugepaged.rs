//! khugepaged and MADV_COLLAPSE (issue 7): the candidacy rules one by one, collapse
//! correctness (contents, accounting, invariants), the scan arithmetic, MADV_COLLAPSE's
//! errnos, and each seed-002 policy. Expected values are derived from the kernel's
//! rules (mm/khugepaged.c), not tuned.

use crate::check::check;
use crate::kernel::Kernel;
use crate::khugepaged::ScanResult;
use crate::kthread::KthreadNext;
use crate::memory::Mapping;
use crate::mm_types::*;
use crate::mm_types::{MmId, Pfn};
use crate::mmap::{Mm, Tlb, VM_READ, VM_WRITE};
use crate::pgtable::*;
use crate::{run, RunOptions};
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs;
use thplab_workload::workload::{Advice, WriteData};
use thplab_workload::{parse_workload, MachineSpec, RunResult};

const P0: MmId = MmId(0);
#[allow(dead_code)]
const P1: MmId = MmId(1);
#[allow(dead_code)]
const P2: MmId = MmId(2);

const M2: u64 = 2 << 20;

fn kernel(extra: &[(&str, &str)]) -> Kernel {
    let m = MachineSpec::parse_shorthand("1G").unwrap();
    let mut ks = knobs::defaults();
    for (k, v) in extra {
        let (c, v) = knobs::check_assignment(k, v).unwrap();
        ks.insert(c, v);
    }
    let mut k = Kernel::new(&m, ks, CostProfile::default(), 1).unwrap();
    for i in 0..3 {
        k.mms.push(Mm::new(MmId(i), &format!("p{i}"), 0, 0, Tlb::new(&m.tlb)));
    }
    k
}

/// mmap `n` PMD ranges and write-fault `pages` of each range with base pages (madvise
/// mode, no MADV_HUGEPAGE yet). Page i of a range gets its first non-zero byte at offset i.
fn populate(k: &mut Kernel, mm: MmId, n: u64, pages: impl Fn(u64) -> bool) -> u64 {
    let a = k.mms[mm].get_unmapped_area(n * M2, None).unwrap();
    k.mms[mm].insert_vma(a, a + n * M2, VM_READ | VM_WRITE);
    for r in 0..n {
        for i in 0..512u64 {
            if pages(i) {
                let addr = a + r * M2 + i * 4096;
                assert_eq!(k.write_page(mm, addr, i as u32, 1, &WriteData::Byte(0xa5)), crate::memory::Fault::Ok);
            }
        }
    }
    a
}

fn pfn_of(k: &Kernel, mm: MmId, addr: u64) -> u64 {
    match k.follow(mm, addr) {
        Mapping::Page(Pfn(p), _) => p,
        m => panic!("{addr:#x} not mapped: {m:?}"),
    }
}

fn set_young_range(k: &mut Kernel, mm: MmId, a: u64, young: bool) {
    for i in 0..512 {
        if let Mapping::Page(Pfn(p), _) = k.follow(mm, a + i * 4096) {
            let f = k.pm.frames[p as usize];
            k.pm.frames[p as usize] = set_young(f, young);
        }
    }
}

fn slot_of(k: &Kernel, mm: MmId, a: u64) -> u32 {
    k.mms[mm].pmds[&(a >> 21)]
}

/// Replace present PTE `i` of the range by a swap entry (what reclaim would leave).
fn make_swap_pte(k: &mut Kernel, mm: MmId, a: u64, i: usize) {
    let sid = slot_of(k, mm, a);
    let pte = match &k.slots.get(sid).pmd {
        Pmd::Table(t) => t[i],
        _ => panic!(),
    };
    if pte_kind(pte) == K_PRESENT {
        let pfn = pte_payload(pte) as u64;
        // unmap and free like reclaim would
        k.zap_range(mm, a + i as u64 * 4096, a + i as u64 * 4096 + 4096, false);
        let _ = pfn;
    }
    k.set_pte(sid, i, mk_pte(K_SWAP, 1000 + i as u32));
    k.mms[mm].swap_ents += 1;
}

#[test]
fn max_ptes_none_limit() {
    let mut k = kernel(&[("khugepaged/max_ptes_none", "100")]);
    // range 0: 100 none PTEs (pages 0..100 never touched) -> allowed
    // range 1: 101 none PTEs -> SCAN_EXCEED_NONE_PTE
    let a = populate(&mut k, P0, 1, |i| i >= 100);
    let b = populate(&mut k, P0, 1, |i| i >= 101);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
    let before = k.rec.vm.get(crate::vmstat::Ev::THP_SCAN_EXCEED_NONE_PTE);
    assert_eq!(k.khugepaged_candidacy(P0, b, true), ScanResult::ExceedNonePte);
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_SCAN_EXCEED_NONE_PTE), before + 1);
    // zero-page PTEs count as none
    let c = populate(&mut k, P0, 1, |i| i >= 101);
    for i in 0..101u64 {
        assert_eq!(k.read_page(P0, c + i * 4096), crate::memory::Fault::Ok);
    }
    assert_eq!(k.follow(P0, c), Mapping::Zero);
    assert_eq!(k.khugepaged_candidacy(P0, c, true), ScanResult::ExceedNonePte);
    // MADV_COLLAPSE ignores the limit
    assert_eq!(k.khugepaged_candidacy(P0, c, false), ScanResult::Succeed);
}

#[test]
fn max_ptes_swap_limit_and_referenced_rule() {
    let mut k = kernel(&[]); // max_ptes_swap 64
    let a = populate(&mut k, P0, 2, |_| true);
    for i in 0..65 {
        make_swap_pte(&mut k, P0, a, i);
    }
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::ExceedSwapPte);
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_SCAN_EXCEED_SWAP_PTE), 1);
    assert_eq!(k.khugepaged_candidacy(P0, a, false), ScanResult::Succeed, "MADV_COLLAPSE ignores max_ptes_swap");
    // 64 swap PTEs are allowed, but then at least half the range must be young
    let b = a + M2;
    for i in 0..64 {
        make_swap_pte(&mut k, P0, b, i);
    }
    assert_eq!(k.khugepaged_candidacy(P0, b, true), ScanResult::Succeed, "448 young pages");
    set_young_range(&mut k, P0, b, false);
    for i in 64..(64 + 255) {
        let p = pfn_of(&k, P0, b + i * 4096);
        k.pm.frames[p as usize] = set_young(k.pm.frames[p as usize], true);
    }
    assert_eq!(
        k.khugepaged_candidacy(P0, b, true),
        ScanResult::LackReferencedPage,
        "255 < HPAGE_PMD_NR/2 referenced with swap PTEs"
    );
    let p = pfn_of(&k, P0, b + 400 * 4096);
    k.pm.frames[p as usize] = set_young(k.pm.frames[p as usize], true);
    assert_eq!(k.khugepaged_candidacy(P0, b, true), ScanResult::Succeed, "256 referenced");
}

#[test]
fn referenced_rule_without_swap() {
    let mut k = kernel(&[]);
    let a = populate(&mut k, P0, 1, |i| i % 2 == 0);
    set_young_range(&mut k, P0, a, false);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::LackReferencedPage);
    assert_eq!(k.khugepaged_candidacy(P0, a, false), ScanResult::Succeed, "MADV_COLLAPSE ignores the young rule");
    // one young page is enough when nothing is swapped out
    let p = pfn_of(&k, P0, a + 10 * 4096);
    k.pm.frames[p as usize] = set_young(k.pm.frames[p as usize], true);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
    // the scan reads the bit and leaves it (the kernel's scan does not clear it)
    assert!(young(k.pm.frames[p as usize]));
}

#[test]
fn pmd_states_and_page_checks() {
    let mut k = kernel(&[("transparent_hugepage/enabled", "always")]);
    let a = k.mms[P0].get_unmapped_area(4 * M2, None).unwrap();
    k.mms[P0].insert_vma(a, a + 4 * M2, VM_READ | VM_WRITE);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::PmdNone);
    k.write_page(P0, a, 0, 1, &WriteData::Byte(1));
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::PmdMapped);
    k.read_page(P0, a + M2);
    assert_eq!(k.khugepaged_candidacy(P0, a + M2, true), ScanResult::PmdMapped, "huge zero PMD");
    // a range of zero-page PTEs only: 6.18 has no SCAN_PAGE_RO (no "writable page"
    // requirement), so MADV_COLLAPSE may collapse it; khugepaged stops at max_ptes_none
    k.set_knob("transparent_hugepage/enabled", "madvise").unwrap();
    for i in 0..512 {
        k.read_page(P0, a + 2 * M2 + i * 4096);
    }
    assert_eq!(k.khugepaged_candidacy(P0, a + 2 * M2, false), ScanResult::Succeed);
    assert_eq!(k.khugepaged_candidacy(P0, a + 2 * M2, true), ScanResult::ExceedNonePte, "512 > max_ptes_none 511");
    // a page off the LRU (isolated by reclaim or migration): SCAN_PAGE_LRU
    for i in 0..512 {
        k.write_page(P0, a + 3 * M2 + i * 4096, 0, 1, &WriteData::Byte(1));
    }
    let p = pfn_of(&k, P0, a + 3 * M2 + 7 * 4096);
    k.lru_del(p, 1);
    assert_eq!(k.khugepaged_candidacy(P0, a + 3 * M2, true), ScanResult::PageLru);
    assert_eq!(k.madvise(P0, a + 3 * M2, a + 4 * M2, Advice::Collapse), Err("EAGAIN"));
    k.lru_add(p, 1, false);
    assert_eq!(k.madvise(P0, a + 3 * M2, a + 4 * M2, Advice::Collapse), Ok(()));
    check(&k).unwrap();
}

#[test]
fn max_ptes_shared_never_trips_without_fork() {
    // The model has no fork: an anonymous folio is mapped by one mm, so
    // folio_maybe_mapped_shared() is false and max_ptes_shared=0 blocks nothing.
    let mut k = kernel(&[("khugepaged/max_ptes_shared", "0")]);
    let a = populate(&mut k, P0, 1, |_| true);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
}

#[test]
fn lazyfree_folios_are_skipped_with_the_policy() {
    for on in ["0", "1"] {
        let mut k = kernel(&[("thplab.khugepaged_skip_lazyfree", on)]);
        let a = populate(&mut k, P0, 1, |_| true);
        // MADV_FREE leaves clean lazy-free folios (set up by hand: the reclaim issue
        // implements MADV_FREE itself)
        for i in 0..512 {
            let p = pfn_of(&k, P0, a + i * 4096);
            let f = k.pm.frames[p as usize];
            k.pm.frames[p as usize] = set_dirty(set_lazyfree(f, true), false);
        }
        let want = if on == "1" { ScanResult::PageLazyfree } else { ScanResult::Succeed };
        assert_eq!(k.khugepaged_candidacy(P0, a, true), want);
        assert_eq!(k.khugepaged_candidacy(P0, a, false), ScanResult::Succeed, "MADV_COLLAPSE is not khugepaged");
        // a re-dirtied page is data again: the folio is no longer skipped... for that PTE
        let p = pfn_of(&k, P0, a);
        k.pm.frames[p as usize] = set_dirty(k.pm.frames[p as usize], true);
        let p1 = pfn_of(&k, P0, a + 4096);
        assert!(lazyfree(k.pm.frames[p1 as usize]));
    }
}

/// Run khugepaged steps (no engine) until it sleeps or waits; returns what it asked for.
fn khugepaged_pass(k: &mut Kernel) -> KthreadNext {
    loop {
        k.clock.cost = 0;
        match k.khugepaged_step() {
            KthreadNext::Again => continue,
            other => {
                k.clock.now += k.clock.cost;
                return other;
            }
        }
    }
}

#[test]
fn collapse_preserves_every_page_and_the_accounting() {
    let mut k = kernel(&[]);
    // every third page never touched (none), pages 1..: first non-zero byte at offset i
    let a = populate(&mut k, P0, 2, |i| i % 3 != 0);
    // a zero-page PTE in the middle
    k.read_page(P0, a + 3 * 4096);
    let rss0 = k.mms[P0].rss_anon;
    let anon0 = k.nr_anon_pages();
    let free0 = k.nr_free_pcp_pages();
    let pgt0 = k.nr_pgtable_pages();
    k.madvise(P0, a, a + 2 * M2, Advice::Hugepage).unwrap();
    assert_eq!(k.khugepaged.mm_slots.iter().map(|m| m.0).collect::<Vec<_>>(), vec![0]);
    let next = khugepaged_pass(&mut k);
    assert_eq!(next, KthreadNext::Sleep(10_000 * 1_000_000));
    assert_eq!(k.khugepaged.pages_collapsed, 2);
    for r in 0..2u64 {
        for i in 0..512u64 {
            let addr = a + r * M2 + i * 4096;
            let (pfn, huge) = match k.follow(P0, addr) {
                Mapping::Page(Pfn(p), h) => (p, h),
                m => panic!("{m:?}"),
            };
            assert!(huge);
            let c = content(k.pm.frames[pfn as usize]);
            if i % 3 == 0 {
                assert!(crate::content::is_zero(c), "page {i} was none/zero: zero-filled");
            } else {
                assert_eq!(crate::content::first_nonzero(c), Some(i as u16), "page {i} keeps its contents");
            }
        }
    }
    assert_eq!(k.mms[P0].rss_anon, 1024);
    assert_eq!(k.nr_anon_pages() - anon0, 1024 - rss0);
    assert_eq!(k.nr_anon_thp(), 2);
    assert_eq!(k.nr_pgtable_pages(), pgt0, "the table page stays as the deposit");
    // 1024 - rss0 more pages in use (the none PTEs became zero-filled subpages)
    assert_eq!(free0 - k.nr_free_pcp_pages(), 1024 - rss0);
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::THP_COLLAPSE_ALLOC), 2);
    check(&k).unwrap();
    // exit frees everything
    k.exit_mm(P0);
    check(&k).unwrap();
}

#[test]
fn collapse_of_a_pte_mapped_thp_frees_it() {
    let mut k = kernel(&[]);
    let a = k.mms[P0].get_unmapped_area(M2, None).unwrap();
    k.mms[P0].insert_vma(a, a + M2, VM_READ | VM_WRITE);
    k.madvise(P0, a, a + M2, Advice::Hugepage).unwrap();
    for i in 0..512 {
        k.write_page(P0, a + i * 4096, i as u32, 1, &WriteData::Byte(3));
    }
    let old = pfn_of(&k, P0, a);
    let sid = slot_of(&k, P0, a);
    k.split_huge_pmd(P0, sid);
    assert_eq!(k.nr_anon_thp(), 0);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
    khugepaged_pass(&mut k);
    let new = pfn_of(&k, P0, a);
    assert_ne!(new, old);
    assert_eq!(k.nr_anon_thp(), 1);
    // freed: to the buddy lists or the CPU's order-9 list
    assert!(matches!(tag(k.pm.frames[old as usize]), TAG_FREE | TAG_PCP), "the old THP went back to the allocator");
    for i in 0..512 {
        assert_eq!(crate::content::first_nonzero(content(k.pm.frames[(new + i) as usize])), Some(i as u16));
    }
    check(&k).unwrap();
}

#[test]
fn disabled_mm_and_nohugepage_vma_are_passed_over() {
    for policy in ["0", "1"] {
        let mut k = kernel(&[("thplab.khugepaged_disabled_next", policy)]);
        let a = populate(&mut k, P0, 2, |_| true);
        let b = populate(&mut k, P1, 2, |_| true);
        k.madvise(P0, a, a + 2 * M2, Advice::Hugepage).unwrap();
        k.madvise(P1, b, b + 2 * M2, Advice::Hugepage).unwrap();
        k.mms[P0].thp_disable = true; // prctl(PR_SET_THP_DISABLE) after joining the list
        let (progress, _) = k.khugepaged_scan_mm_slot(4096);
        assert_eq!(progress, 1, "one unit for the visit");
        assert_eq!(k.khugepaged.cursor, Some(P1), "the cursor moved on at once");
        assert!(k.mms[P0].on_khugepaged, "a disabled mm stays on the list");
        let (progress, r) = k.khugepaged_scan_mm_slot(4096);
        assert_eq!(r, ScanResult::Succeed);
        assert_eq!(progress, 1 + 512);
        assert_eq!(k.khugepaged.pages_collapsed, 1);
    }
    // VM_NOHUGEPAGE: the VMA is skipped for one unit
    let mut k = kernel(&[]);
    let a = populate(&mut k, P0, 2, |_| true);
    k.madvise(P0, a, a + 2 * M2, Advice::Hugepage).unwrap();
    k.madvise(P0, a, a + 2 * M2, Advice::Nohugepage).unwrap();
    assert!(k.mms[P0].on_khugepaged);
    let (progress, _) = k.khugepaged_scan_mm_slot(4096);
    assert_eq!(progress, 2, "1 for the visit + 1 for the VMA");
    assert_eq!(k.khugepaged.cursor, None);
    assert_eq!(k.khugepaged.full_scans, 1);
    assert_eq!(k.madvise(P0, a, a + M2, Advice::Collapse), Err("EINVAL"));
}

fn go(w: &str, knobs: &[(&str, &str)]) -> RunResult {
    let w = parse_workload(w).unwrap();
    let o = RunOptions {
        machine: Some(MachineSpec::parse_shorthand("2G,cpus=2").unwrap()),
        knobs: knobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        check: true,
        ..Default::default()
    };
    run(&w, &o).unwrap()
}

/// One process, 16 MiB x `ranges/8` of base pages, MADV_HUGEPAGE, then a long sleep.
fn one_proc(ranges: u64, sleep_s: u64) -> String {
    format!(
        r#"{{"record":{{"trace":["mm_khugepaged_scan"]}},"processes":[{{"name":"p","ops":[
      {{"op":"mmap","name":"m","size":"{}M"}},
      {{"op":"write","region":"m","bytes":8,"data":"text"}},
      {{"op":"madvise","region":"m","advice":"hugepage"}},
      {{"op":"sleep","duration":"{}s"}}]}}]}}"#,
        ranges * 2,
        sleep_s
    )
}

fn kh(r: &RunResult) -> &serde_json::Value {
    &r.extra["khugepaged"]
}

#[test]
fn pages_collapsed_and_full_scans_arithmetic() {
    // 16 ranges, pages_to_scan 4096. Each collapse returns from the mm scan (the mmap lock
    // was dropped): 1 + 512 progress per call, 8 calls per wake-up -> 8 collapses at
    // t0 and 8 at t0+10s. At t0+20s the mm is found done (full scan 1, progress 1) and
    // the same pass walks 8 PMD-mapped ranges (1 + 8x512); at t0+30s the other 8 (the
    // budget runs out on the last range, so the cursor stays); at t0+40s the visit finds
    // nothing left and the cursor wraps (full scan 2).
    let r = go(&one_proc(16, 45), &[]);
    assert_eq!(kh(&r)["pages_collapsed"], 16);
    assert_eq!(kh(&r)["full_scans"], 2);
    assert_eq!(r.vmstat_delta["thp_collapse_alloc"], 16);
    let log = kh(&r)["full_scan_log"].as_array().unwrap();
    assert_eq!(log[0]["progress"], 16 * 513 + 1);
    assert_eq!(log[1]["progress"], 2 * (1 + 8 * 512) + 1);
    assert_eq!(log[1]["results"]["SCAN_PMD_MAPPED"], 16);
    // 16 collapses end with 8192 anon pages mapped by THP
    assert_eq!(r.processes[0].smaps_rollup["AnonHugePages"], 32 << 10);
    // the trace has the seed's mm_khugepaged_scan events with full_scan_finished
    let fin = r.trace.iter().filter(|e| e["event"] == "mm_khugepaged_scan" && e["full_scan_finished"] == 1).count();
    assert_eq!(fin, 2);
    let t = |i: usize| log[i]["end_ns"].as_u64().unwrap();
    assert!(t(1) - t(0) >= 20_000_000_000 && t(1) - t(0) < 20_100_000_000, "two 10 s sleeps between the wraps");
    // shorter sleeps: the same work in less time
    let fast = go(&one_proc(16, 2), &[("khugepaged/scan_sleep_millisecs", "100")]);
    assert_eq!(kh(&fast)["pages_collapsed"], 16);
    assert!(kh(&fast)["full_scans"].as_u64().unwrap() >= 5);
}

#[test]
fn skip_collapsed_policy_drops_the_mm_until_it_faults_again() {
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"4M"},
      {"op":"write","region":"m"},
      {"op":"madvise","region":"m","advice":"hugepage"},
      {"op":"sleep","duration":"65s"},
      {"op":"mmap","name":"n","size":"4M"},
      {"op":"madvise","region":"n","advice":"hugepage"},
      {"op":"write","region":"n","length":"4K"},
      {"op":"sleep","duration":"1s"}]}]}"#;
    let base = go(w, &[]);
    let seed = go(w, &[("thplab.khugepaged_skip_collapsed", "1")]);
    assert_eq!(kh(&base)["pages_collapsed"], 2);
    assert_eq!(kh(&seed)["pages_collapsed"], 2);
    assert_eq!(kh(&base)["mms"]["p"]["removed_collapsed"], 0);
    // removed by the visit that finds everything collapsed, twice: after the collapses; after
    // MADV_HUGEPAGE on `n` re-added it and woke khugepaged (n merged with m into one VMA:
    // PMD-mapped and table-less ranges only). The THP fault in `n` re-adds it once more, but
    // the process has the CPU (khugepaged yields) and exits before khugepaged's next 10 s pass
    assert_eq!(kh(&seed)["mms"]["p"]["removed_collapsed"], 2);
    assert_eq!(kh(&seed)["mm_slots"], 0, "the process exited");
    // baseline keeps rescanning the collapsed mm every pass; the seed does not
    assert!(kh(&base)["scan_progress"].as_u64().unwrap() > kh(&seed)["scan_progress"].as_u64().unwrap());
}

#[test]
fn cold_to_tail_policy_reorders_the_list() {
    let mut k = kernel(&[("thplab.khugepaged_cold_to_tail", "1")]);
    for mm in (0..3).map(MmId) {
        let a = populate(&mut k, mm, 1, |_| true);
        k.madvise(mm, a, a + M2, Advice::Hugepage).unwrap();
    }
    let a1 = k.mms[P1].vmas.keys().next().copied().unwrap();
    k.madvise(P1, a1, a1 + M2, Advice::Cold).unwrap();
    assert_eq!(k.khugepaged.mm_slots.iter().map(|m| m.0).collect::<Vec<_>>(), vec![0, 2, 1]);
    let mut k = kernel(&[]);
    for mm in (0..3).map(MmId) {
        let a = populate(&mut k, mm, 1, |_| true);
        k.madvise(mm, a, a + M2, Advice::Hugepage).unwrap();
    }
    let a1 = k.mms[P1].vmas.keys().next().copied().unwrap();
    k.madvise(P1, a1, a1 + M2, Advice::Free).unwrap();
    assert_eq!(k.khugepaged.mm_slots.iter().map(|m| m.0).collect::<Vec<_>>(), vec![0, 1, 2], "baseline: FIFO");
}

#[test]
fn cheap_progress_policy_makes_full_scans_cheaper() {
    // 64 THP-faulted ranges: every range is PMD-mapped
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"always"},"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"128M"},{"op":"write","region":"m","length":"4K","every":"2M"},
      {"op":"sleep","duration":"35s"}]}]}"#;
    let base = go(w, &[]);
    let seed = go(w, &[("thplab.khugepaged_cheap_progress", "1")]);
    // the first THP fault registered the mm (mmap of a fresh anonymous VMA does not:
    // no anon_vma yet), so every full scan sees the 64 PMD-mapped ranges
    let fb = kh(&base)["full_scan_log"].as_array().unwrap();
    let fs = kh(&seed)["full_scan_log"].as_array().unwrap();
    assert_eq!(fs[0]["progress"], 1 + 64, "1 per PMD-mapped range");
    assert_eq!(fs[0]["results"]["SCAN_PMD_MAPPED"], 64);
    // 1 + 64x512 progress takes 9 wake-ups (80 s of 10 s sleeps): no full scan in 35 s;
    // 65 units fit in one: a full scan per wake-up (at 0, 10, 20 and 30 s; khugepaged
    // runs on the idle CPU while the process faults, so its first pass starts at once)
    assert!(fb.is_empty());
    assert_eq!(kh(&base)["full_scans"], 0, "the first full scan needs 9 wake-ups");
    assert_eq!(kh(&seed)["full_scans"], 4);
    assert!(kh(&base)["scan_progress"].as_u64().unwrap() >= 4 * 4096);
}

#[test]
fn madv_collapse_errnos_and_rules() {
    // works with enabled=never, does not join the khugepaged list
    let mut k = kernel(&[("transparent_hugepage/enabled", "never")]);
    let a = populate(&mut k, P0, 2, |i| i < 3);
    assert_eq!(k.madvise(P0, a, a + 2 * M2, Advice::Collapse), Ok(()));
    assert_eq!(k.nr_anon_thp(), 2);
    assert!(k.khugepaged.mm_slots.is_empty());
    assert_eq!(k.khugepaged.pages_collapsed, 0, "pages_collapsed counts khugepaged only");
    // already PMD-mapped counts as success
    assert_eq!(k.madvise(P0, a, a + 2 * M2, Advice::Collapse), Ok(()));
    check(&k).unwrap();
    // a range with no page table: SCAN_PMD_NONE -> EINVAL
    let b = k.mms[P0].get_unmapped_area(M2, None).unwrap();
    k.mms[P0].insert_vma(b, b + M2, VM_READ | VM_WRITE);
    assert_eq!(k.madvise(P0, b, b + M2, Advice::Collapse), Err("EINVAL"));
    // an unmapped hole: ENOMEM
    assert_eq!(k.madvise(P0, b - M2, b, Advice::Collapse), Err("ENOMEM"));
    // prctl(PR_SET_THP_DISABLE) and VM_NOHUGEPAGE forbid it
    k.mms[P0].thp_disable = true;
    assert_eq!(k.madvise(P0, a, a + M2, Advice::Collapse), Err("EINVAL"));
    k.mms[P0].thp_disable = false;
    // a sub-PMD range collapses nothing and succeeds
    assert_eq!(k.madvise(P0, b, b + 4096, Advice::Collapse), Ok(()));
}

#[test]
fn madv_collapse_enomem_when_no_thp_can_be_allocated() {
    // every other page unmovable (a checkerboard of pipe pages), and the free 2 MiB blocks
    // left taken by order-9 kernel allocations until they fail (ENOMEM, no OOM kill for
    // a costly order): no THP can be allocated, and compaction cannot make one
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"never"},"processes":[{"name":"frag","ops":[
      {"op":"kalloc","name":"k","size":"1850M"},
      {"op":"kfree","region":"k","every":"8K","length":"4K"},
      {"op":"kalloc","name":"big","size":"400M","order":9},
      {"op":"mmap","name":"buf","size":"4M"},
      {"op":"write","region":"buf"},
      {"op":"madvise","region":"buf","advice":"collapse"}]}]}"#;
    let r = go(w, &[]);
    let e = &r.processes[0].errors;
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!((e[0].op.as_str(), e[0].errno.as_str()), ("kalloc", "ENOMEM"));
    assert_eq!((e[1].op.as_str(), e[1].errno.as_str()), ("madvise", "ENOMEM"));
    assert!(r.vmstat_delta["thp_collapse_alloc_failed"] >= 1);
}

#[test]
fn khugepaged_alloc_failure_sleeps_alloc_sleep_millisecs() {
    let w = r#"{"processes":[{"name":"frag","ops":[
      {"op":"kalloc","name":"k","size":"1850M"},
      {"op":"kfree","region":"k","every":"8K","length":"4K"},
      {"op":"kalloc","name":"big","size":"400M","order":9},
      {"op":"mmap","name":"buf","size":"4M"},
      {"op":"write","region":"buf"},
      {"op":"madvise","region":"buf","advice":"hugepage"},
      {"op":"sleep","duration":"50s"}]}]}"#;
    let r = go(w, &[]);
    // first failure at t0: alloc sleep (60 s) outlasts the process: one failure only
    assert_eq!(r.vmstat_delta["thp_collapse_alloc_failed"], 1);
    let r = go(w, &[("khugepaged/alloc_sleep_millisecs", "1000")]);
    // t0 fail, +1 s fail (the second failure ends the pass), +10 s sleep, ...: 2 per 11 s
    let n = r.vmstat_delta["thp_collapse_alloc_failed"];
    assert!((8..=10).contains(&n), "{n}");
    assert_eq!(kh(&r)["scan_results"]["SCAN_ALLOC_HUGE_PAGE_FAIL"], n);
}

#[test]
fn knob_write_wakes_khugepaged() {
    // scan_sleep 10 s; the process writes scan_sleep_millisecs=100 after 1 s: khugepaged
    // wakes at once rather than at 10 s
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"32M"},{"op":"write","region":"m"},
      {"op":"madvise","region":"m","advice":"hugepage"},
      {"op":"sleep","duration":"1s"},
      {"op":"set","knob":"khugepaged/scan_sleep_millisecs","value":100},
      {"op":"sleep","duration":"1s"}]}]}"#;
    let r = go(w, &[]);
    assert_eq!(kh(&r)["pages_collapsed"], 16);
}

#[test]
fn invariants_hold_through_collapses_in_a_busy_run() {
    let w = r#"{"seed":3,"knobs":{"khugepaged/scan_sleep_millisecs":50,"khugepaged/max_ptes_none":300},"processes":[
      {"name":"a","ops":[{"op":"mmap","name":"r","size":"32M"},{"op":"write","region":"r","every":"8K","length":"4K"},
        {"op":"madvise","region":"r","advice":"hugepage"},{"op":"access","region":"r","pattern":"random","count":300000,"write":0.2},{"op":"sleep","duration":"1s"},
        {"op":"access","region":"r","pattern":"random","count":300000,"write":0.2}]},
      {"name":"b","ops":[{"op":"mmap","name":"r","size":"32M"},{"op":"madvise","region":"r","advice":"hugepage"},
        {"op":"write","region":"r"},{"op":"munmap","region":"r","offset":"1M","length":"4K","every":"4M"},
        {"op":"access","region":"r","pattern":"random","count":200000},{"op":"sleep","duration":"1s"},
        {"op":"madvise","region":"r","advice":"collapse"}]}]}"#;
    let r = go(w, &[]);
    assert!(kh(&r)["pages_collapsed"].as_u64().unwrap() >= 8, "{}", kh(&r));
    assert_eq!(r.processes[1].errors.len(), 0, "{:?}", r.processes[1].errors);
}

// ----------------------------------------------------------------------------------
// issue 15, difference 3: khugepaged registration as 6.18 does it (khugepaged_enter_vma
// with thp_vma_allowable_order(TVA_KHUGEPAGED): knobs, a whole aligned 2 MiB range, an
// anon_vma), and difference 4: referenced pages from the workload's accesses.
// ----------------------------------------------------------------------------------

/// Was the mm (the one process `p`) ever on khugepaged's list during the run?
fn entered(r: &RunResult) -> bool {
    kh(r)["mms"].get("p").is_some_and(|m| !m["entered_ns"].is_null())
}

#[test]
fn madvise_mode_without_madv_hugepage_never_registers() {
    // enabled=madvise (the default): no VMA is eligible, so the mm never joins the list
    // and khugepaged never scans (the old model entered it at mmap)
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"8M"},{"op":"write","region":"m"},
      {"op":"sleep","duration":"25s"}]}]}"#;
    let r = go(w, &[]);
    assert!(!entered(&r));
    assert_eq!(kh(&r)["full_scans"], 0);
    assert_eq!(kh(&r)["scan_progress"], 0, "khugepaged_scan_mm_slot never ran");
    assert_eq!(kh(&r)["pages_collapsed"], 0);
}

#[test]
fn a_vma_without_an_aligned_2m_range_never_registers() {
    // enabled=always, but 1 MiB and 3 MiB-at-an-odd-place VMAs hold no aligned 2 MiB range:
    // THP faults fall back (thp_vma_suitable_order) and TVA_KHUGEPAGED refuses them
    let mut k = kernel(&[("transparent_hugepage/enabled", "always")]);
    let a = k.mms[P0].get_unmapped_area(8 * M2, None).unwrap();
    k.mms[P0].insert_vma(a + 4096, a + 4096 + (1 << 20), VM_READ | VM_WRITE);
    k.mms[P0].insert_vma(a + M2 + 4096, a + 3 * M2 - 4096, VM_READ | VM_WRITE);
    for p in 0..256 {
        assert_eq!(k.write_page(P0, a + 4096 + p * 4096, 0, 1, &WriteData::Byte(1)), crate::memory::Fault::Ok);
    }
    for p in 0..1022 {
        assert_eq!(k.write_page(P0, a + M2 + 4096 + p * 4096, 0, 1, &WriteData::Byte(1)), crate::memory::Fault::Ok);
    }
    assert_eq!(k.nr_anon_thp(), 0);
    assert!(!k.mms[P0].on_khugepaged && k.khugepaged.mm_slots.is_empty());
    // MADV_HUGEPAGE does not change the geometry either
    k.madvise(P0, a + M2 + 4096, a + 3 * M2 - 4096, Advice::Hugepage).unwrap();
    assert!(!k.mms[P0].on_khugepaged);
    // a 2 MiB VMA at an aligned address is eligible: its first THP fault enters the mm
    k.mms[P0].insert_vma(a + 4 * M2, a + 5 * M2, VM_READ | VM_WRITE);
    k.write_page(P0, a + 4 * M2, 0, 1, &WriteData::Byte(1));
    assert_eq!(k.nr_anon_thp(), 1);
    assert!(k.mms[P0].on_khugepaged);
    assert_eq!(k.khugepaged.mm_slots.iter().copied().collect::<Vec<_>>(), vec![P0]);
}

#[test]
fn madv_hugepage_registers_only_a_vma_with_an_anon_vma() {
    let mut k = kernel(&[]); // enabled=madvise
                             // mmap alone: no anon_vma, not entered
    let a = k.mms[P0].get_unmapped_area(4 * M2, None).unwrap();
    k.mms[P0].insert_vma(a, a + 4 * M2, VM_READ | VM_WRITE);
    // MADV_HUGEPAGE before any fault: hugepage_madvise() calls khugepaged_enter_vma() but
    // TVA_KHUGEPAGED wants an anon_vma
    k.madvise(P0, a, a + 2 * M2, Advice::Hugepage).unwrap();
    assert!(!k.mms[P0].on_khugepaged);
    // a read fault in the VMA without VM_HUGEPAGE maps the 4 KiB zero page: still no anon_vma
    k.read_page(P0, a + 3 * M2);
    assert!(k.mms[P0].vmas.values().all(|v| v.anon_vma.is_none()));
    // a 4 KiB write fault there makes one, but 4 KiB faults do not enter
    k.write_page(P0, a + 3 * M2, 0, 1, &WriteData::Byte(1));
    assert!(!k.mms[P0].on_khugepaged);
    // MADV_HUGEPAGE on that VMA now enters the mm (hugepage_madvise)
    k.madvise(P0, a + 2 * M2, a + 4 * M2, Advice::Hugepage).unwrap();
    assert!(k.mms[P0].on_khugepaged);

    // the first THP fault of a VM_HUGEPAGE VMA enters it too (do_huge_pmd_anonymous_page,
    // after vmf_anon_prepare), a read fault mapping the huge zero page included
    let b = k.mms[P1].get_unmapped_area(2 * M2, None).unwrap();
    k.mms[P1].insert_vma(b, b + 2 * M2, VM_READ | VM_WRITE);
    k.madvise(P1, b, b + 2 * M2, Advice::Hugepage).unwrap();
    assert!(!k.mms[P1].on_khugepaged);
    k.read_page(P1, b);
    assert!(k.mms[P1].on_khugepaged);
    // entered behind the cursor, in order of registration
    assert_eq!(k.khugepaged.mm_slots.iter().copied().collect::<Vec<_>>(), vec![P0, P1]);
    // MADV_NOHUGEPAGE leaves a registered mm on the list (hugepage_madvise)
    k.madvise(P1, b, b + 2 * M2, Advice::Nohugepage).unwrap();
    assert!(k.mms[P1].on_khugepaged);
}

#[test]
fn registration_follows_the_workload() {
    // MADV_HUGEPAGE after the writes enters the mm (its VMA has an anon_vma now); before
    // any write it does not, and the THP faults of the writes enter it instead. Either way
    // the mm is scanned; the first collapses the base-page ranges
    let late = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"4M"},{"op":"write","region":"m"},
      {"op":"sleep","duration":"5s"},
      {"op":"madvise","region":"m","advice":"hugepage"},{"op":"sleep","duration":"5s"}]}]}"#;
    let r = go(late, &[]);
    assert!(entered(&r));
    assert!(kh(&r)["mms"]["p"]["entered_ns"].as_u64().unwrap() >= 5_000_000_000, "entered at MADV_HUGEPAGE");
    assert_eq!(kh(&r)["pages_collapsed"], 2);
    let early = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"4M"},{"op":"madvise","region":"m","advice":"hugepage"},
      {"op":"sleep","duration":"5s"},
      {"op":"write","region":"m"},{"op":"sleep","duration":"5s"}]}]}"#;
    let r = go(early, &[]);
    assert!(kh(&r)["mms"]["p"]["entered_ns"].as_u64().unwrap() >= 5_000_000_000, "entered at the first THP fault");
    assert_eq!(kh(&r)["pages_collapsed"], 0, "THP faults: nothing to collapse");
    assert!(kh(&r)["scan_results"]["SCAN_PMD_MAPPED"].as_u64().unwrap() >= 1);
}

#[test]
fn a_merge_into_an_eligible_vma_registers() {
    // 4 KiB faults with PMD THP disabled give the VMA an anon_vma but enter nothing;
    // enabling THP enters nothing either (start_stop_khugepaged walks no mm). An mmap that
    // merges into that VMA does: vma_merge_new_range() -> khugepaged_enter_vma(target)
    let w = r#"{"knobs":{"transparent_hugepage/enabled":"never"},"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"m","size":"4M"},{"op":"write","region":"m"},
      {"op":"set","knob":"transparent_hugepage/enabled","value":"always"},
      {"op":"sleep","duration":"5s"},
      {"op":"mmap","name":"n","size":"1M"},
      {"op":"sleep","duration":"5s"}]}]}"#;
    let r = go(w, &[]);
    assert!(kh(&r)["mms"]["p"]["entered_ns"].as_u64().unwrap() >= 5_000_000_000, "entered by the merge");
    assert_eq!(kh(&r)["pages_collapsed"], 2);
    // without the merging mmap it never is
    let w2 = w.replace(r#"{"op":"mmap","name":"n","size":"1M"},"#, "");
    let r = go(&w2, &[]);
    assert!(!entered(&r));
    assert_eq!(kh(&r)["pages_collapsed"], 0);
}

#[test]
fn a_read_only_range_collapses() {
    // 6.18 removed SCAN_PAGE_RO: a range in a read-only VMA is a candidate like any other
    let mut k = kernel(&[]);
    let a = populate(&mut k, P0, 2, |_| true);
    k.madvise(P0, a, a + 2 * M2, Advice::Hugepage).unwrap();
    let (_, merged) = k.mms[P0].modify_flags(a, a + M2 * 2, |f| f & !VM_WRITE);
    assert!(merged.is_empty());
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
    assert!(ScanResult::Succeed.status() == "succeeded");
    khugepaged_pass(&mut k);
    assert_eq!(k.khugepaged.pages_collapsed, 2);
    check(&k).unwrap();
}

#[test]
fn cold_pages_lack_references_hot_pages_collapse() {
    // two 4 MiB regions written once with base pages; MADV_COLD on one clears its accessed
    // bits and PG_referenced (madvise_cold_or_pageout_pte_range: ptep_test_and_clear_young,
    // folio_clear_referenced, folio_deactivate). After MADV_HUGEPAGE khugepaged collapses
    // the hot region and finds no referenced page in the cold one
    let w = r#"{"processes":[{"name":"p","ops":[
      {"op":"mmap","name":"hot","size":"4M"},{"op":"mmap","name":"cold","size":"4M"},
      {"op":"write","region":"hot"},{"op":"write","region":"cold"},
      {"op":"madvise","region":"cold","advice":"cold"},
      {"op":"madvise","region":"hot","advice":"hugepage"},
      {"op":"madvise","region":"cold","advice":"hugepage"},
      {"op":"sleep","duration":"15s"}]}]}"#;
    let r = go(w, &[]);
    // the first pass (woken by the first MADV_HUGEPAGE) sees the hot region only; the
    // second, 10 s later, both
    assert_eq!(kh(&r)["pages_collapsed"], 2, "the hot region only");
    assert_eq!(kh(&r)["scan_results"]["SCAN_LACK_REFERENCED_PAGE"], 2);
    // touched again after MADV_COLD, a cold region is hot again
    let w2 = w.replace(
        r#"{"op":"madvise","region":"cold","advice":"cold"},"#,
        r#"{"op":"madvise","region":"cold","advice":"cold"},{"op":"read","region":"cold","every":"8K","length":"4K"},"#,
    );
    let r = go(&w2, &[]);
    assert_eq!(kh(&r)["pages_collapsed"], 4);
    assert!(kh(&r)["scan_results"].get("SCAN_LACK_REFERENCED_PAGE").is_none());
}

#[test]
fn pg_referenced_counts_as_referenced() {
    // hpage_collapse_scan_pmd(): pte_young || folio_test_young || folio_test_referenced
    let mut k = kernel(&[]);
    let a = populate(&mut k, P0, 1, |_| true);
    set_young_range(&mut k, P0, a, false);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::LackReferencedPage);
    let p = pfn_of(&k, P0, a + 5 * 4096);
    k.pm.frames[p as usize] = set_referenced(k.pm.frames[p as usize], true);
    assert_eq!(k.khugepaged_candidacy(P0, a, true), ScanResult::Succeed);
}

#[test]
fn folio_mark_accessed_ages_the_lru() {
    // inactive,unreferenced -> inactive,referenced -> active,unreferenced -> active,referenced
    let mut k = kernel(&[]);
    let a = populate(&mut k, P0, 1, |i| i == 0);
    let p = pfn_of(&k, P0, a);
    assert!(!referenced(k.pm.frames[p as usize]), "a fault sets only the accessed bit");
    assert_eq!(lru(k.pm.frames[p as usize]), LRU_INACTIVE_ANON);
    k.folio_mark_accessed(p);
    assert!(referenced(k.pm.frames[p as usize]));
    assert_eq!(lru(k.pm.frames[p as usize]), LRU_INACTIVE_ANON);
    k.folio_mark_accessed(p);
    assert!(!referenced(k.pm.frames[p as usize]));
    assert_eq!(lru(k.pm.frames[p as usize]), LRU_ACTIVE_ANON);
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::PGACTIVATE), 1);
    k.folio_mark_accessed(p);
    assert!(referenced(k.pm.frames[p as usize]));
    k.folio_mark_accessed(p);
    assert_eq!(k.rec.vm.get(crate::vmstat::Ev::PGACTIVATE), 1);
    check(&k).unwrap();
}

#[test]
fn map_populate_marks_pages_accessed_and_reclaim_activates_them() {
    // MAP_POPULATE follows each page with FOLL_TOUCH: PG_referenced on every base page.
    // Under memory pressure, folio_check_references() then finds the accessed bit and
    // PG_referenced together and activates at the first look; pages written without
    // MAP_POPULATE are only marked (kept) at the first look
    let m = r#"{"nodes":[{"mem":"512M","cpus":2}],"swap":[{"type":"zram","size":"1G"}]}"#;
    let w = |populate: bool| {
        format!(
            r#"{{"processes":[{{"name":"p","ops":[
          {{"op":"mmap","name":"a","size":"200M","populate":{populate}}},{{"op":"write","region":"a"}},
          {{"op":"phase","name":"pressure"}},
          {{"op":"mmap","name":"b","size":"400M"}},{{"op":"write","region":"b"}}]}}]}}"#
        )
    };
    let with = super::common::go(&w(true), m, &[]);
    let without = super::common::go(&w(false), m, &[]);
    let act = |r: &RunResult| {
        r.phases
            .iter()
            .find(|p| p.name.ends_with(":pressure"))
            .unwrap()
            .vmstat_delta
            .get("pgactivate")
            .copied()
            .unwrap_or(0)
    };
    assert!(act(&with) > act(&without), "populate {} vs write {}", act(&with), act(&without));
}
