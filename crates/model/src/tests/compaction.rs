//! Compaction: the fragmentation score and proactive watermarks, deferral counting,
//! that compaction never moves unmovable, pinned (isolated) or mlocked memory, that page
//! contents survive migration, direct compaction on THP faults, kcompactd (woken and
//! proactive, with its 32 s back-off). The invariant checker runs in every test.

use super::common::kernel;
use crate::check;
use crate::compaction::fragmentation_score_wmark;
use crate::compaction::CompactPriority;
use crate::compaction::CompactResult;
use crate::kernel::Kernel;
use crate::kthread::Kthread;
use crate::memory::Mapping;
use crate::mm_types::*;
use crate::mmap::{VM_LOCKED, VM_READ, VM_WRITE};
use crate::mmzone::*;
use crate::page_alloc::*;
use crate::vmstat::{self, Ev};
use thplab_workload::costs::CostProfile;
use thplab_workload::workload::WriteData;
use thplab_workload::RunResult;

/// Map `size` bytes with `flags`, write one byte at offset (page index % 4096) of every page
/// (distinct contents), then unmap 3/4 of every 2 MiB (offset 512K..2M) as seed 004 does.
/// Returns (address, pages kept as (addr, expected content)).
fn fragment(k: &mut Kernel, size: u64, flags: u32) -> (u64, Vec<(u64, u16)>) {
    let addr = k.mms[P0].get_unmapped_area(size, Some(2 << 20)).unwrap();
    k.mms[P0].insert_vma(addr, addr + size, flags);
    for i in 0..size / 4096 {
        assert_eq!(
            k.write_page(P0, addr + i * 4096, (i % 4096) as u32, 1, &WriteData::Byte(1)),
            crate::memory::Fault::Ok
        );
    }
    let mut kept = vec![];
    let mut a = addr;
    while a < addr + size {
        k.mms[P0].unmap_range(a + (512 << 10), a + (2 << 20));
        k.zap_range(P0, a + (512 << 10), a + (2 << 20), true);
        for p in 0..128u64 {
            let pa = a + p * 4096;
            let Mapping::Page(Pfn(pfn), _) = k.follow(P0, pa) else { panic!("page kept") };
            kept.push((pa, content(k.pm.frames[pfn as usize])));
        }
        a += 2 << 20;
    }
    (addr, kept)
}

/// 97 % of the free memory, in 2 MiB units.
fn most(k: &Kernel) -> u64 {
    k.nr_free_pages() * 4096 * 97 / 100 / (2 << 20) * (2 << 20)
}

fn pfn_of(k: &Kernel, a: u64) -> u64 {
    match k.follow(P0, a) {
        Mapping::Page(Pfn(pfn), _) => pfn,
        m => panic!("{a:#x} not mapped: {m:?}"),
    }
}

fn normal_or_dma32(k: &Kernel) -> usize {
    k.pm.zones.iter().rposition(|z| z.populated()).unwrap()
}

#[test]
fn watermark_arithmetic() {
    for p in 0..=100u64 {
        let (l, h) = (fragmentation_score_wmark(p, false, true), fragmentation_score_wmark(p, false, false));
        assert_eq!(l, (100 - p).max(5));
        assert_eq!(h, (l + 10).min(100));
        let (l, h) = (fragmentation_score_wmark(p, true, true), fragmentation_score_wmark(p, true, false));
        assert_eq!(l, 100 - p);
        assert_eq!(h, (l + (l / 2).min(10)).min(100));
        assert!(h >= l);
    }
    // the knob picks the formula
    let k = kernel("1G", &[("vm.compaction_proactiveness", "95"), ("thplab.proactive_wmark", "plus10")]);
    assert_eq!((k.fragmentation_score_wmark(true), k.fragmentation_score_wmark(false)), (5, 15));
    let k = kernel("1G", &[("vm.compaction_proactiveness", "95"), ("thplab.proactive_wmark", "leeway")]);
    assert_eq!((k.fragmentation_score_wmark(true), k.fragmentation_score_wmark(false)), (5, 7));
}

#[test]
fn fragmentation_score_of_a_fragmented_node() {
    let mut k = kernel("1G", &[("vm.compaction_proactiveness", "20")]);
    let before = k.fragmentation_score_node(0);
    assert!(before < 5, "a fresh machine is not fragmented: {before}");
    assert!(!k.should_proactive_compact_node(0));
    let size = most(&k);
    fragment(&mut k, size, VM_READ | VM_WRITE);
    // by hand: each zone's extfrag at order 9 weighted by present pages over node present + 1
    let node_present = k.pm.nodes[0].present;
    let mut expect = 0;
    for z in k.pm.zones.iter().filter(|z| z.populated()) {
        let (free, _, suitable) = vmstat::contig_page_info(z, 9);
        let score = ((free - (suitable << 9)) * 100).checked_div(free).unwrap_or(0);
        assert_eq!(score, vmstat::fragmentation_score_zone(z));
        expect += z.present * score / (node_present + 1);
    }
    assert_eq!(k.fragmentation_score_node(0), expect);
    assert!(expect > 90, "3/4 freed in every 2 MiB: {expect}");
    assert!(k.should_proactive_compact_node(0));
    k.set_knob("vm.compaction_proactiveness", "0").unwrap();
    assert!(!k.should_proactive_compact_node(0), "proactiveness 0 never compacts proactively");
    check::check(&k).unwrap();
}

#[test]
fn deferral_counting() {
    let mut k = kernel("1G", &[]);
    let zi = normal_or_dma32(&k);
    assert_eq!(k.pm.zones[zi].compact_order_failed, 0, "as the kernel's zeroed zone");
    // after k consecutive failures, min(2^k, 64) - 1 attempts are skipped
    for failures in 1..=8u32 {
        k.defer_compaction(zi, 9);
        let mut skipped = 0;
        while k.compaction_deferred(zi, 9) {
            skipped += 1;
        }
        assert_eq!(skipped, (1u32 << failures.min(6)) - 1, "after {failures} failures");
        assert_eq!(k.pm.zones[zi].compact_defer_shift, failures.min(6));
    }
    // success: counters reset, order_failed moves above the order
    k.compaction_defer_reset(zi, 9, true);
    assert_eq!(
        (k.pm.zones[zi].compact_considered, k.pm.zones[zi].compact_defer_shift, k.pm.zones[zi].compact_order_failed),
        (0, 0, 10)
    );
    assert!(!k.compaction_deferred(zi, 9));
    // a failure at order 9 lowers order_failed; smaller orders are then never deferred
    k.defer_compaction(zi, 9);
    assert_eq!(k.pm.zones[zi].compact_order_failed, 9);
    assert!(!k.compaction_deferred(zi, 4));
    assert!(k.compaction_deferred(zi, 9));
    // success without an allocation (compaction thinks it will succeed) keeps the shift
    k.compaction_defer_reset(zi, 9, false);
    assert_eq!((k.pm.zones[zi].compact_defer_shift, k.pm.zones[zi].compact_order_failed), (1, 10));
}

/// Fill memory with unmovable order-7 blocks (below the watermarks too), free the first
/// 3/4 of each 2 MiB.
fn unmovable_fill(k: &mut Kernel) -> Vec<u64> {
    let mut kept = vec![];
    let mut all = vec![];
    let zl = k.pm.zonelist(0, ZONE_NORMAL, false);
    while let Some((Pfn(p), _)) = k.pm.get_page_from_freelist(
        GFP_KERNEL,
        7,
        ALLOC_NO_WATERMARKS,
        &zl,
        ZONE_NORMAL,
        15000,
        false,
        &mut k.rec.vm,
        &mut Trace::default(),
    ) {
        all.push(p);
    }
    for p in all {
        if p % 512 < 384 {
            k.pm.free_pages(Pfn(p), 7, &mut k.rec.vm);
        } else {
            kept.push(p);
            k.mod_node_page_state(p, NodeStat::NrKernelMisc, 128);
        }
    }
    kept
}

#[test]
fn sync_compaction_of_unmovable_memory_is_deferred() {
    let mut k = kernel("1G", &[]);
    unmovable_fill(&mut k);
    let zi = normal_or_dma32(&k);
    let mut ran = vec![];
    for call in 0..260 {
        let (r, _) = k.try_to_compact_pages(GFP_TRANSHUGE, 9, ALLOC_WMARK_MIN, &[zi], CompactPriority::SyncLight);
        match r {
            CompactResult::Deferred => {}
            CompactResult::PartialSkipped | CompactResult::Complete => ran.push(call),
            other => panic!("call {call}: {other:?}"),
        }
    }
    assert_eq!(ran, vec![0, 2, 6, 14, 30, 62, 126, 190, 254], "2^k - 1 skips after k failures, at most 63");
    assert_eq!(k.rec.vm.get(Ev::PGMIGRATE_SUCCESS), 0, "nothing movable");
    // the minimum priority (sync full) ignores deferral
    let (r, _) = k.try_to_compact_pages(GFP_TRANSHUGE, 9, ALLOC_WMARK_MIN, &[zi], CompactPriority::SyncFull);
    assert_ne!(r, CompactResult::Deferred);
    check::check(&k).unwrap();
}

#[test]
fn compaction_never_moves_unmovable_pinned_or_mlocked_memory_and_keeps_contents() {
    for unevictable_allowed in ["0", "1"] {
        let mut k = kernel(
            "512M",
            &[("vm.compact_unevictable_allowed", unevictable_allowed), ("vm.compaction_proactiveness", "0")],
        );
        // interleave unmovable kernel pages with the anonymous memory
        let mut kern = vec![];
        for _ in 0..64 {
            let p = k.alloc_pages(GFP_KERNEL, 0, 0).unwrap().0;
            kern.push(p);
            k.mod_node_page_state(p, NodeStat::NrKernelMisc, 1);
        }
        // the locked memory first: the migrate scanner starts at the low end of the zone
        let (_, locked) = fragment(&mut k, 32 << 20, VM_READ | VM_WRITE | VM_LOCKED);
        let (_, kept) = fragment(&mut k, 192 << 20, VM_READ | VM_WRITE);
        let tables: Vec<u64> =
            (0..k.pm.frames.len() as u64).filter(|&p| tag(k.pm.frames[p as usize]) == TAG_PGTABLE).collect();
        // a "pinned" page: isolated by someone else (the model's stand-in for an extra reference)
        let pinned = pfn_of(&k, kept[1000].0);
        k.pm.frames[pinned as usize] = set_isolated(k.pm.frames[pinned as usize], true);
        let locked_pfns: Vec<u64> = locked.iter().map(|&(a, _)| pfn_of(&k, a)).collect();
        let kept_pfns: Vec<u64> = kept.iter().map(|&(a, _)| pfn_of(&k, a)).collect();
        let score0 = k.fragmentation_score_node(0);
        check::check(&k).unwrap();

        k.set_knob("vm.compact_memory", "1").unwrap();

        check::check(&k).unwrap();
        assert!(k.rec.vm.get(Ev::PGMIGRATE_SUCCESS) > 5_000, "compaction migrated pages");
        // the migrated pages' old frames went to this CPU's pcp lists (free_frozen_pages);
        // the vmstat worker's decay_pcp_high() returns them to the buddy lists in time
        k.pm.drain_all_pages(None);
        assert!(k.fragmentation_score_node(0) < score0, "and lowered the score");
        for &p in &kern {
            assert_eq!(tag(k.pm.frames[p as usize]), TAG_KERNEL, "kernel page {p} untouched");
        }
        for &p in &tables {
            assert_eq!(tag(k.pm.frames[p as usize]), TAG_PGTABLE, "page table {p} untouched");
        }
        assert_eq!(pfn_of(&k, kept[1000].0), pinned, "the pinned page stays");
        assert!(isolated(k.pm.frames[pinned as usize]));
        let moved_locked = locked.iter().zip(&locked_pfns).filter(|(&(a, _), &p)| pfn_of(&k, a) != p).count();
        if unevictable_allowed == "0" {
            assert_eq!(moved_locked, 0, "mlocked pages stay when compact_unevictable_allowed=0");
        } else {
            assert!(moved_locked > 0, "mlocked pages may move when compact_unevictable_allowed=1");
        }
        let moved = kept.iter().zip(&kept_pfns).filter(|(&(a, _), &p)| pfn_of(&k, a) != p).count();
        assert!(moved > 1000, "movable pages moved: {moved}");
        // every page still holds what was written to it
        for &(a, c) in kept.iter().chain(&locked) {
            let pfn = pfn_of(&k, a);
            let f = k.pm.frames[pfn as usize];
            assert_eq!(content(f), c, "contents of {a:#x}");
            assert_eq!(tag(f), TAG_ANON);
        }
        k.pm.frames[pinned as usize] = set_isolated(k.pm.frames[pinned as usize], false);
        check::check(&k).unwrap();
    }
}

#[test]
fn compaction_skips_pmd_thps() {
    let mut k = kernel("512M", &[("transparent_hugepage/enabled", "always"), ("vm.compaction_proactiveness", "0")]);
    let addr = k.mms[P0].get_unmapped_area(64 << 20, Some(2 << 20)).unwrap();
    k.mms[P0].insert_vma(addr, addr + (64 << 20), VM_READ | VM_WRITE);
    for i in 0..32u64 {
        k.write_page(P0, addr + i * (2 << 20), 0, 1, &WriteData::Byte(7));
    }
    let thps: Vec<u64> = (0..32u64).map(|i| pfn_of(&k, addr + i * (2 << 20))).collect();
    assert!(k.nr_anon_thp() == 32);
    fragment(&mut k, 128 << 20, VM_READ | VM_WRITE);
    k.compact_all();
    for (i, &p) in thps.iter().enumerate() {
        assert_eq!(pfn_of(&k, addr + i as u64 * (2 << 20)), p, "THP {i} not migrated");
    }
    assert_eq!(k.rec.vm.get(Ev::THP_MIGRATION_SUCCESS), 0);
    check::check(&k).unwrap();
}

use super::common::go;
use crate::mm_types::{MmId, Pfn};
use crate::trace::Trace;
use crate::vmstat::NodeStat;

const P0: MmId = MmId(0);
#[allow(dead_code)]
const P1: MmId = MmId(1);
#[allow(dead_code)]
const P2: MmId = MmId(2);

fn pd(r: &RunResult, phase: &str, c: &str) -> i64 {
    r.phases.iter().find(|p| p.name.ends_with(phase)).unwrap().vmstat_delta.get(c).copied().unwrap_or(0)
}

fn frag_then_thp(proactive: u32, settle: &str) -> String {
    format!(
        r#"{{"knobs":{{"vm.min_free_kbytes":"8192","transparent_hugepage/enabled":"madvise","transparent_hugepage/defrag":"madvise","vm.compaction_proactiveness":"0"}},
        "record":{{"fault_latency":true,"trace":["thplab_proactive_round","mm_compaction_end"]}},
        "processes":[{{"name":"idle","ops":[{{"op":"sleep","duration":"0"}}]}},{{"name":"p","ops":[
        {{"op":"mmap","name":"all","size":"940M"}},
        {{"op":"write","region":"all"}},
        {{"op":"munmap","region":"all","every":"2M","offset":"512K","length":"1536K"}},
        {{"op":"set","knob":"vm.compaction_proactiveness","value":"{proactive}"}},
        {{"op":"sleep","duration":"{settle}"}},
        {{"op":"phase","name":"alloc"}},
        {{"op":"mmap","name":"h","size":"600M"}},
        {{"op":"madvise","region":"h","advice":"hugepage"}},
        {{"op":"write","region":"h","every":"2M","length":"4K"}}]}}]}}"#
    )
}

fn frag_then_thp_size(proactive: u32, settle: &str, size: &str) -> String {
    frag_then_thp(proactive, settle).replace(r#""size":"600M""#, &format!(r#""size":"{size}""#))
}

#[test]
fn direct_compaction_serves_thp_faults_on_fragmented_memory() {
    // seed 004's fragmentation of 940 MiB (128 pages kept per 2 MiB), then 200 THP faults:
    // each finds no free 2 MiB block and compacts one (migrating its 128 pages)
    let r = go(&frag_then_thp_size(0, "0", "400M"), "1G,cpus=2", &[]);
    let (alloc, fb) = (pd(&r, "alloc", "thp_fault_alloc"), pd(&r, "alloc", "thp_fault_fallback"));
    assert_eq!((alloc, fb), (200, 0));
    let stall = pd(&r, "alloc", "compact_stall");
    assert!(stall > 150, "nearly every fault compacts directly: {stall}");
    assert_eq!(stall, pd(&r, "alloc", "compact_success") + pd(&r, "alloc", "compact_fail"));
    let migrated = pd(&r, "alloc", "pgmigrate_success");
    assert!(migrated > 100 * stall && migrated < 200 * stall, "~128 pages per compaction: {migrated} for {stall}");
    assert!(pd(&r, "alloc", "compact_migrate_scanned") > 0 && pd(&r, "alloc", "compact_free_scanned") > 0);
    assert!(pd(&r, "alloc", "compact_isolated") >= pd(&r, "alloc", "pgmigrate_success"));
    assert_eq!(pd(&r, "alloc", "compact_daemon_wake"), 0);
    let lat = &r.latency["thp_alloc"];
    assert_eq!(lat.count as i64, alloc);
    // the latency is the work: a compaction migrates ~128 pages, far above the fast path
    assert!(lat.ns["p50"] > 100 * CostProfile::default().migrate_4k_ns, "{:?}", lat.ns);
    assert!(lat.ns["p05"] < lat.ns["p95"], "a distribution, not a constant: {:?}", lat.ns);
}

#[test]
fn a_full_pass_leaves_skip_bits_until_they_are_flushed() {
    // 300 faults: more than one pass of the scanners can serve. When the scanners meet,
    // every scanned block is marked skipped; compaction then fails fast until the skip
    // bits are flushed (compaction_restarting after the deferrals), then works again.
    let r = go(&frag_then_thp(0, "0"), "1G,cpus=2", &[]);
    let ends: Vec<_> = r.trace.iter().filter(|e| e["event"] == "mm_compaction_end").collect();
    let status: Vec<&str> = ends.iter().map(|e| e["status"].as_str().unwrap()).collect();
    // the first run of at least two failures in a row (a lone failure is a partial pass
    // that started at the cached pfns; the next compaction restarts at the zone's ends)
    let first_fail =
        (0..status.len() - 1).find(|&i| status[i] != "success" && status[i + 1] != "success").expect("a pass ends");
    let later_success = status[first_fail..].iter().position(|s| *s == "success").expect("compaction resumes");
    assert!(later_success > 1, "{status:?}");
    // the fast failures scan (almost) nothing: the blocks are skipped
    let skipped_runs = ends[first_fail..first_fail + later_success]
        .iter()
        .filter(|e| e["migrate_scanned"].as_u64().unwrap() < 512)
        .count();
    assert!(skipped_runs > 0);
    assert!(pd(&r, "alloc", "thp_fault_alloc") > 240);
}

#[test]
fn proactive_compaction_lowers_the_score_to_the_low_watermark() {
    let r = go(&frag_then_thp(20, "30s"), "1G,cpus=2", &[]);
    // kcompactd compacted before the faults started: no direct compaction is needed for most
    let rounds: Vec<_> = r.trace.iter().filter(|e| e["event"] == "thplab_proactive_round").collect();
    assert!(!rounds.is_empty());
    assert!(rounds[0]["prev_score"].as_u64().unwrap() > 90);
    assert!(rounds[0]["score"].as_u64().unwrap() < rounds[0]["prev_score"].as_u64().unwrap());
    // every proactive compact_zone of the fragmented zone stopped at the low watermark (80)
    let ends: Vec<_> = r
        .trace
        .iter()
        .filter(|e| e["event"] == "mm_compaction_end" && e["order"] == -1 && e["zone"] == "DMA32")
        .collect();
    assert!(!ends.is_empty());
    assert!(ends.iter().all(|e| e["status"] == "success" || e["status"] == "complete"));
    let stall = pd(&r, "alloc", "compact_stall");
    let alloc = pd(&r, "alloc", "thp_fault_alloc");
    // ~20 % of the free memory was made into 2 MiB blocks (score 80) before the faults:
    // that many faults got a THP without compacting
    let success = pd(&r, "alloc", "compact_success");
    assert!(alloc - success >= 50, "kcompactd prepared blocks: {alloc} THPs, {success} by compaction ({stall} stalls)");
    let kc = r.extra["kthreads"].as_array().unwrap().iter().find(|k| k["name"] == "kcompactd0").unwrap().clone();
    assert!(kc["cpu_ns"].as_u64().unwrap() > 0);
    let main: i64 = r.vmstat_delta.get("compact_daemon_migrate_scanned").copied().unwrap_or(0);
    assert!(main > 0);
    let lat = &r.latency["thp_alloc"];
    assert!(lat.ns["p10"] < 1000, "the prepared blocks are taken on the fast path: {:?}", lat.ns);
}

#[test]
fn proactive_compaction_backs_off_32s_on_unmovable_memory() {
    let w = r#"{"knobs":{"vm.min_free_kbytes":"8192","vm.compaction_proactiveness":"0"},"record":{"trace":["thplab_proactive_round"]},
      "processes":[{"name":"idle","ops":[{"op":"sleep","duration":"0"}]},{"name":"drv","ops":[
      {"op":"kalloc","name":"k","size":"940M","order":7},
      {"op":"kfree","region":"k","every":"2M","offset":"0","length":"1536K"},
      {"op":"set","knob":"vm.compaction_proactiveness","value":"40"},
      {"op":"sleep","duration":"100s"}]}]}"#;
    let r = go(w, "1G,cpus=2", &[]);
    let rounds: Vec<f64> = r
        .trace
        .iter()
        .filter(|e| e["event"] == "thplab_proactive_round")
        .map(|e| e["t_ns"].as_u64().unwrap() as f64 / 1e9)
        .collect();
    assert!(rounds.len() >= 3 && rounds.len() <= 4, "{rounds:?}");
    for w in rounds.windows(2) {
        let gap = w[1] - w[0];
        assert!((32.0..33.0).contains(&gap), "32 s back-off between rounds: {rounds:?}");
    }
    let kc = &r.extra["kcompactd"][0];
    assert_eq!(kc["proactive_backoffs"], kc["proactive_rounds"]);
    assert_eq!(r.vmstat_delta.get("pgmigrate_success"), None);
    assert!(r.vmstat_delta["compact_daemon_migrate_scanned"] > 0);
}

/// The migrate scanner's runs of kernel pages (isolate_migratepages_block) only make it
/// fast: seed 004 (c)'s driver blocks alone, and driver blocks among fragmented movable
/// pages, compacted by kcompactd's proactive rounds on one and two nodes, give identical
/// results with them on and off (counters, simulated time, every compaction tracepoint),
/// and the checker (on in `go`) finds the state sound at every step.
#[test]
fn kernel_page_runs_change_nothing_but_speed() {
    use crate::compaction::{KERNEL_RUNS, USE_KERNEL_RUN};
    let w = |anon: &str, drv: &str| {
        format!(
            r#"{{"knobs":{{"vm.min_free_kbytes":"8192","vm.compaction_proactiveness":"0"}},"record":{{"trace":["compaction","thplab_proactive_round"]}},
            "processes":[{{"name":"p","ops":[
            {{"op":"kalloc","name":"k","size":"{drv}","order":7}},
            {{"op":"mmap","name":"a","size":"{anon}"}},
            {{"op":"madvise","region":"a","advice":"nohugepage"}},
            {{"op":"write","region":"a","bytes":1,"data":1}},
            {{"op":"kfree","region":"k","every":"2M","offset":"0","length":"1536K"}},
            {{"op":"madvise","region":"a","advice":"dontneed","every":"16K","offset":"4K","length":"12K"}},
            {{"op":"set","knob":"vm.compaction_proactiveness","value":"40"}},
            {{"op":"sleep","duration":"70s"}}]}}]}}"#
        )
    };
    // the driver's blocks come first, at the low pfns where the migrate scanner starts
    let cases =
        [(w("4K", "940M"), "1G,cpus=2"), (w("300M", "500M"), "1G,cpus=2"), (w("300M", "500M"), "2x512M,cpus=2")];
    same_on_and_off(&cases, "compact_daemon_migrate_scanned", &USE_KERNEL_RUN, &KERNEL_RUNS);
}

#[test]
fn kswapd_can_wake_kcompactd() {
    let mut k = kernel("1G", &[("vm.compaction_proactiveness", "0")]);
    // nothing to do on a fresh machine: an order-9 page is free
    k.wakeup_kcompactd(0, 9, ZONE_NORMAL);
    assert!(k.clock.wakeups.is_empty());
    k.wakeup_kcompactd(0, 0, ZONE_NORMAL);
    assert!(k.clock.wakeups.is_empty());
    let size = most(&k);
    fragment(&mut k, size, VM_READ | VM_WRITE);
    // take what is left in 2 MiB blocks, so that an order-9 allocation needs compaction
    let zl = k.pm.zonelist(0, ZONE_NORMAL, false);
    while let Some((Pfn(p), _)) = k.pm.get_page_from_freelist(
        GFP_KERNEL,
        9,
        ALLOC_NO_WATERMARKS,
        &zl,
        ZONE_NORMAL,
        15000,
        false,
        &mut k.rec.vm,
        &mut Trace::default(),
    ) {
        k.mod_node_page_state(p, NodeStat::NrKernelMisc, 512);
    }
    k.wakeup_kcompactd(0, 9, ZONE_NORMAL);
    assert_eq!(k.clock.wakeups.iter().map(|w| w.0).collect::<Vec<_>>(), vec![Kthread::Kcompactd(0)]);
    k.clock.wakeups.clear();
    let next = k.kthread_step(Kthread::Kcompactd(0));
    assert_eq!(k.rec.vm.get(Ev::COMPACT_DAEMON_WAKE), 1);
    assert!(k.rec.vm.get(Ev::COMPACT_DAEMON_MIGRATE_SCANNED) > 0);
    assert_eq!(k.rec.vm.get(Ev::COMPACT_DAEMON_MIGRATE_SCANNED), k.rec.vm.get(Ev::COMPACT_MIGRATE_SCANNED));
    assert!(k.rec.vm.get(Ev::PGMIGRATE_SUCCESS) > 0);
    // kcompactd compacts for GFP_KERNEL order 9 until a block could be claimed
    let zi = normal_or_dma32(&k);
    assert!((9..=10).any(|o| k.pm.zones[zi].nr_free_order(o) > 0));
    assert_eq!(next, crate::kthread::KthreadNext::Wait, "proactiveness 0: wait without timeout");
    assert_eq!(k.pgdat[0].kcompactd.max_order, 0);
    check::check(&k).unwrap();
}

#[test]
fn writing_proactiveness_wakes_kcompactd() {
    let mut k = kernel("1G", &[("vm.compaction_proactiveness", "0")]);
    assert_eq!(k.kthread_initial(Kthread::Kcompactd(0)), crate::kthread::KthreadNext::Wait);
    k.set_knob("vm.compaction_proactiveness", "20").unwrap();
    assert_eq!(k.clock.wakeups.len(), 1);
    assert!(k.pgdat[0].kcompactd.proactive_trigger);
    assert_eq!(k.kthread_initial(Kthread::Kcompactd(0)), crate::kthread::KthreadNext::Sleep(500_000_000));
    let next = k.kthread_step(Kthread::Kcompactd(0));
    assert_eq!(next, crate::kthread::KthreadNext::Sleep(500_000_000), "nothing to compact: the 500 ms timer");
    assert!(!k.pgdat[0].kcompactd.proactive_trigger);
    let _ = ZONE_NORMAL;
}

/// The per-pageblock summaries (PhysMem::pb_sum) only make the scanners fast: with them
/// on and off, compaction-heavy runs (seed 004's fragmentation, issue 14's 16 KiB
/// fragmentation on an aged two-node machine, direct, kswapd-woken, proactive and manual
/// compaction) give identical results: counters, simulated time, latencies, every
/// compaction tracepoint. The checker (on in `go`) recounts the summaries at every step.
#[test]
fn pageblock_summaries_change_nothing_but_speed() {
    use crate::compaction::PB_SUMMARY_SKIPS;
    use crate::page_alloc::USE_PB_SUMMARIES;
    let frag16k = |p: u32| {
        format!(
            r#"{{"knobs":{{"transparent_hugepage/enabled":"madvise","transparent_hugepage/defrag":"madvise","vm.compaction_proactiveness":"0"}},
            "record":{{"fault_latency":true,"trace":["compaction","thplab_proactive_round"]}},
            "processes":[{{"name":"p","ops":[
            {{"op":"set","knob":"vm.compact_memory","value":"1"}},
            {{"op":"mmap","name":"frag","size":"760M"}},
            {{"op":"madvise","region":"frag","advice":"nohugepage"}},
            {{"op":"write","region":"frag","bytes":1,"data":1}},
            {{"op":"madvise","region":"frag","advice":"dontneed","every":"16K","offset":"4K","length":"12K"}},
            {{"op":"set","knob":"transparent_hugepage/enabled","value":"always"}},
            {{"op":"mmap","name":"eat","size":"300M","align":"2M"}},
            {{"op":"write","region":"eat","every":"2M","length":"4K","bytes":1,"data":1}},
            {{"op":"set","knob":"transparent_hugepage/enabled","value":"madvise"}},
            {{"op":"set","knob":"vm.compaction_proactiveness","value":"{p}"}},
            {{"op":"sleep","duration":"2s"}},
            {{"op":"mmap","name":"buf","size":"200M","align":"2M"}},
            {{"op":"madvise","region":"buf","advice":"hugepage"}},
            {{"op":"phase","name":"fault"}},
            {{"op":"write","region":"buf","every":"2M","length":"4K","bytes":1,"data":255}},
            {{"op":"set","knob":"vm.compact_memory","value":"1"}}]}}]}}"#
        )
    };
    let with_trace = |w: String| {
        w.replace(
            r#""trace":["thplab_proactive_round","mm_compaction_end"]"#,
            r#""trace":["compaction","thplab_proactive_round"]"#,
        )
    };
    let cases = [
        (with_trace(frag_then_thp_size(0, "0", "300M")), "1G,cpus=2"),
        (with_trace(frag_then_thp_size(20, "2s", "300M")), "1G,cpus=2,aged"),
        (frag16k(0), "2x512M,cpus=2,aged"),
        (frag16k(60), "1G,cpus=2,aged"),
    ];
    let mut used = vec![];
    for (w, m) in cases {
        PB_SUMMARY_SKIPS.with(|c| c.set(0));
        let on = go(&w, m, &[]);
        let skips = PB_SUMMARY_SKIPS.with(|c| c.get());
        USE_PB_SUMMARIES.with(|c| c.set(false));
        let off = go(&w, m, &[]);
        USE_PB_SUMMARIES.with(|c| c.set(true));
        assert_eq!(PB_SUMMARY_SKIPS.with(|c| c.get()), skips, "summaries off: no skip taken");
        used.push(skips);
        assert!(on.vmstat_delta.get("compact_stall").copied().unwrap_or(0) > 0, "{m}: compaction ran");
        assert!(!on.trace.is_empty(), "{m}: traced");
        assert_eq!(serde_json::to_value(&on).unwrap(), serde_json::to_value(&off).unwrap(), "{m}");
    }
    assert!(used.iter().filter(|&&n| n > 0).count() >= 2, "the summaries were used: {used:?}");
}

/// The pcp refill's block-at-a-time carve (page_alloc.rs carve_order0) hands out the pages
/// __rmqueue_smallest() would, one by one: with it on and off, runs that refill from split
/// and from whole blocks, fragment, compact and free again on one and two nodes give
/// identical results (counters, simulated time, latencies, compaction tracepoints), and
/// the checker (on in `go`) finds the lists and counts sound at every step.
#[test]
fn a_block_at_a_time_pcp_refill_changes_nothing_but_speed() {
    use crate::page_alloc::{BULK_CARVES, USE_BULK_CARVE};
    same_with_and_without(&USE_BULK_CARVE, &BULK_CARVES);
}

/// Runs that fragment, compact and free on one and two nodes give identical results with
/// a fast path's debug `switch` on and off; its `used` counter says it was taken (only
/// when on).
fn same_with_and_without(
    switch: &'static std::thread::LocalKey<std::cell::Cell<bool>>,
    used: &'static std::thread::LocalKey<std::cell::Cell<u64>>,
) {
    let cases = [
        (frag_then_thp_size(0, "0", "300M"), "1G,cpus=2"),
        (frag_then_thp_size(20, "2s", "300M"), "2x512M,cpus=4,aged"),
    ];
    same_on_and_off(&cases, "compact_stall", switch, used);
}

/// Each (workload, machine) of `cases` gives identical results with a fast path's debug
/// `switch` on and off; its `used` counter says it was taken (only when on), and the
/// counter `ran` that compaction ran.
fn same_on_and_off(
    cases: &[(String, &str)],
    ran: &str,
    switch: &'static std::thread::LocalKey<std::cell::Cell<bool>>,
    used: &'static std::thread::LocalKey<std::cell::Cell<u64>>,
) {
    for (w, m) in cases {
        used.with(|c| c.set(0));
        let on = go(w, m, &[]);
        assert!(used.with(|c| c.get()) > 0, "{m}: the fast path was taken");
        switch.with(|c| c.set(false));
        used.with(|c| c.set(0));
        let off = go(w, m, &[]);
        switch.with(|c| c.set(true));
        assert_eq!(used.with(|c| c.get()), 0, "{m}: off means off");
        assert!(on.vmstat_delta.get(ran).copied().unwrap_or(0) > 0, "{m}: compaction ran ({ran})");
        assert_eq!(serde_json::to_value(&on).unwrap(), serde_json::to_value(&off).unwrap(), "{m}");
    }
}

/// Every free list of every zone (its order), head to tail, with each block's frame.
fn free_lists(k: &Kernel) -> Vec<(u32, Vec<(u32, u64)>)> {
    let mut v = vec![];
    for zi in 0..k.pm.zones.len() {
        for o in 0..crate::consts::NR_PAGE_ORDERS as u32 {
            for mt in 0..NR_FREE_LISTS as u8 {
                let mut l = vec![];
                let mut p = k.pm.free_list(zi, o, mt).head;
                while p != NIL {
                    l.push((p, k.pm.frames[p as usize]));
                    p = k.pm.free_next(o, p);
                }
                v.push((o, l));
            }
        }
    }
    v
}

/// free_pcppages_bulk()'s run of consecutive order-0 pages (page_alloc.rs
/// free_run_order0) leaves what the per-page __free_one_page() calls leave: after seed
/// 004's fragmentation (an ascending munmap of 3/4 of every 2 MiB, whose pages merge into
/// order-7 and -8 blocks) and after an exit (which frees the rest, merging up to
/// MAX_PAGE_ORDER and across pageblocks), every free list holds the same blocks in the
/// same order, the frames, zone counts and per-CPU lists agree, and the checker passes.
/// Whole runs that fragment, compact (a compactor capturing blocks) and exit give
/// identical results with it on and off.
#[test]
fn freeing_runs_of_pages_changes_nothing_but_speed() {
    use crate::page_alloc::{RUN_FREED, USE_RUN_FREE};
    let state = |on: bool| {
        USE_RUN_FREE.with(|c| c.set(on));
        RUN_FREED.with(|c| c.set(0));
        let mut k = kernel("1G,cpus=2", &[]);
        USE_RUN_FREE.with(|c| c.set(true));
        let (addr, _) = fragment(&mut k, 256 << 20, VM_READ | VM_WRITE);
        let after_munmap = (free_lists(&k), k.pm.frames.clone(), k.nr_free_pages());
        k.mms[P0].unmap_range(addr, addr + (256 << 20));
        k.zap_range(P0, addr, addr + (256 << 20), true);
        check::check(&k).unwrap();
        let pcp: Vec<Vec<u32>> = k.pm.pcp.iter().flat_map(|p| p.lists.iter().map(|l| l.iter().collect())).collect();
        (after_munmap, free_lists(&k), k.pm.frames.clone(), k.nr_free_pages(), pcp, RUN_FREED.with(|c| c.get()))
    };
    let (on, off) = (state(true), state(false));
    assert!(on.5 > 40_000, "runs were freed: {}", on.5);
    assert_eq!(off.5, 0, "off means off");
    assert!(on.0 .0.iter().any(|(_, l)| l.len() > 100), "the munmap left many blocks");
    assert!(on.0 == off.0, "after the munmap");
    assert!(on.1.iter().any(|(o, l)| *o == crate::consts::MAX_PAGE_ORDER && !l.is_empty()));
    assert!(on.1 == off.1 && on.2 == off.2 && on.3 == off.3 && on.4 == off.4, "after the exit");
    same_with_and_without(&USE_RUN_FREE, &RUN_FREED);
}

/// A free that finds its per-CPU list at its high mark moves blocks to the buddy lists
/// (free_pcppages_bulk()), and the freeing context pays pcp_drain_ns for each: a few frees
/// with room on the list cost nothing beyond their own, thousands in a row fill the list
/// and every page that spills is charged once (order 0: a page is a block).
#[test]
fn a_free_that_spills_the_per_cpu_list_pays_for_each_page_moved() {
    let mut k = kernel("4G", &[]);
    k.costs.pcp_drain_ns = 1000;
    let pages: Vec<_> = (0..20_000).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap()).collect();
    (k.pm.spilled, k.clock.cost) = (0, 0);
    for &p in &pages[..8] {
        k.pm.free_pages(p, 0, &mut k.rec.vm);
    }
    k.charge(0);
    assert_eq!(k.clock.cost, 0, "room on the list: no spill");
    let before = k.pm.pcp_pages_total();
    for &p in &pages[8..] {
        k.pm.free_pages(p, 0, &mut k.rec.vm);
    }
    k.charge(0);
    let spilled = before + (pages.len() as u64 - 8) - k.pm.pcp_pages_total();
    assert!(spilled > 0, "20,000 frees fill the list");
    assert_eq!(k.clock.cost, spilled * 1000);
    assert_eq!(k.pm.spilled, 0, "charged once");
}

/// A THP spilled from the order-9 per-CPU list is one block, one __free_one_page(): its
/// free is charged pcp_drain_ns once, not once per 4 KiB page.
#[test]
fn a_thp_spilled_from_the_per_cpu_list_is_charged_as_one_block() {
    let mut k = kernel("4G", &[]);
    k.costs.pcp_drain_ns = 1000;
    let thps: Vec<_> =
        (0..40).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, crate::consts::HPAGE_PMD_ORDER, 0).unwrap()).collect();
    (k.pm.spilled, k.clock.cost) = (0, 0);
    let before = k.pm.pcp_pages_total();
    for &p in &thps {
        k.pm.free_pages(p, crate::consts::HPAGE_PMD_ORDER, &mut k.rec.vm);
    }
    k.charge(0);
    let pages = before + 40 * 512 - k.pm.pcp_pages_total();
    assert!(pages >= 512, "40 THPs fill the list");
    assert_eq!(pages % 512, 0, "only THPs were on it");
    assert_eq!(k.clock.cost, pages / 512 * 1000);
}
