//! Free page reporting (page_reporting.rs): the budgeted passes of page_reporting_process(),
//! PageReported and the tail placement of reported blocks, the refault of discarded pages.

use super::common::kernel;
use crate::consts::*;
use crate::gfp::*;
use crate::kernel::Kernel;
use crate::kthread::KthreadNext;
use crate::mm_types::*;
use crate::mmzone::MIGRATE_MOVABLE;
use crate::page_reporting::*;
use crate::vmstat::Ev;

/// Run the worker through one pass (its report calls and their waits); returns the
/// report calls made and whether it asked for another pass.
fn one_pass(k: &mut Kernel) -> (u64, bool) {
    let before = k.pm.pr.reports;
    loop {
        match k.page_reporting_step() {
            KthreadNext::Sleep(PAGE_REPORTING_DELAY_NS) => return (k.pm.pr.reports - before, true),
            // a report call's wait for the host (REPORT_WAIT_PER_2M_NS a 2 MiB)
            KthreadNext::Sleep(_) => continue,
            KthreadNext::Wait => return (k.pm.pr.reports - before, false),
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Free blocks of order >= pageblock_order in zone `zi`, and how many are reported.
fn blocks(k: &Kernel, zi: usize) -> (u64, u64) {
    let (mut n, mut rep) = (0, 0);
    for o in PAGEBLOCK_ORDER..=MAX_PAGE_ORDER {
        for mt in 0..4u8 {
            let mut p = k.pm.free_list(zi, o, mt).head;
            while p != NIL {
                n += 1;
                rep += k.pm.pr.page_reported(p as u64) as u64;
                p = k.pm.free_next(o, p);
            }
        }
    }
    (n, rep)
}

fn biggest_zone(k: &Kernel) -> usize {
    (0..k.pm.zones.len()).max_by_key(|&z| k.pm.zones[z].free_pages).unwrap()
}

/// One pass reports at most (budget + 1) x PAGE_REPORTING_CAPACITY blocks of a list, the
/// budget being DIV_ROUND_UP(nr_free, 32 * 16); reported blocks go to the tail, so the
/// head of the list stays unreported; passes repeat (every 2 s) until all are reported,
/// then the worker goes idle; nothing is refaulted before the guest touches it.
#[test]
fn reporting_is_budgeted_and_reported_blocks_go_to_the_tail() {
    let mut k = kernel("2G", &[("thplab.free_page_reporting", "1")]);
    let zi = biggest_zone(&k);
    let (total, rep0) = blocks(&k, zi);
    assert_eq!(rep0, 0);
    let nr10 = k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize);
    assert!(nr10 > 200, "a 2G machine has {nr10} free 4 MiB blocks");
    let budget10 = nr10.div_ceil(32 * 16);
    let (calls, again) = one_pass(&mut k);
    let (_, rep1) = blocks(&k, zi);
    assert!(again, "budget left blocks unreported: another pass is requested");
    assert_eq!(k.pm.pr.state, PrState::Requested);
    // the order-10 movable list: budget + 1 full report calls, no more
    let l = *k.pm.free_list(zi, MAX_PAGE_ORDER, MIGRATE_MOVABLE);
    let mut rep10 = 0;
    let mut p = l.head;
    while p != NIL {
        rep10 += k.pm.pr.page_reported(p as u64) as u64;
        p = k.pm.free_next(MAX_PAGE_ORDER, p);
    }
    assert_eq!(rep10, (budget10 + 1) * PAGE_REPORTING_CAPACITY as u64, "{calls} calls");
    assert!(rep1 < total / 2, "one pass reports a budget, not everything ({rep1} of {total})");
    assert!(!k.pm.pr.page_reported(l.head as u64), "the head is an unreported block");
    assert!(k.pm.pr.page_reported(l.tail as u64), "reported blocks went to the tail");
    assert!(k.pm.pr.nr_unbacked() >= k.pm.pr.blocks_reported << PAGEBLOCK_ORDER);
    // nothing was touched since: what the host discarded is what was reported (KiB)
    assert_eq!(k.pm.pr.kib_reported, k.pm.pr.nr_unbacked() * 4, "{} blocks", k.pm.pr.blocks_reported);
    // an allocation takes the unreported head: no refault
    k.clock.cost = 0;
    let pfn = k.alloc_pages(GFP_TRANSHUGE, PAGEBLOCK_ORDER, 0).unwrap();
    assert_eq!(k.pm.pr.touch(pfn.0, PAGEBLOCK_ORDER), 0, "the head block was backed");
    k.pm.free_pages(pfn, PAGEBLOCK_ORDER, &mut k.rec.vm);
    // later passes report the rest, then the worker idles
    let mut passes = 1;
    loop {
        let (_, again) = one_pass(&mut k);
        passes += 1;
        if !again {
            break;
        }
        assert!(passes < 100);
    }
    assert_eq!(k.pm.pr.state, PrState::Idle);
    let (total2, rep2) = blocks(&k, zi);
    assert!(rep2 + 2 >= total2, "an idle machine ends with its free blocks reported ({rep2} of {total2})");
    assert!(passes >= 4, "reporting everything takes several 2 s passes ({passes})");
}

/// An allocation clears PageReported and refaults the discarded pages it touches (a THP
/// all 512, at cost.refault_reported_2m; a 4 KiB page one 512th); memory touched again is
/// backed; a block freed into the buddy lists requests reporting (2 s later), a block
/// the reporting puts back does not.
#[test]
fn allocation_clears_reported_and_refaults_only_discarded_pages() {
    let mut k = kernel("1G", &[("thplab.free_page_reporting", "1")]);
    while one_pass(&mut k).1 {}
    let zi = biggest_zone(&k);
    let (total, rep) = blocks(&k, zi);
    assert!(rep + 2 >= total && rep > 0);
    assert_eq!(k.pm.pr.state, PrState::Idle);
    assert!(!k.pm.pr.schedule_requested, "the putbacks did not notify");
    let refault = k.costs.refault_reported_2m_ns;
    k.clock.cost = 0;
    let pfn = k.alloc_pages(GFP_TRANSHUGE, PAGEBLOCK_ORDER, 0).unwrap().0;
    assert!(!k.pm.pr.page_reported(pfn));
    let with = k.clock.cost;
    k.clock.cost = 0;
    k.pm.free_pages(Pfn(pfn), PAGEBLOCK_ORDER, &mut k.rec.vm);
    k.pm.drain_all_pages(None);
    assert!(k.pm.pr.schedule_requested, "a freed block asks for reporting");
    assert_eq!(k.pm.pr.state, PrState::Requested);
    k.pm.pr.schedule_requested = false;
    let again = k.alloc_pages(GFP_TRANSHUGE, PAGEBLOCK_ORDER, 0).unwrap().0;
    let without = k.clock.cost;
    assert!(with >= without + refault, "the first THP refaults ({with} vs {without})");
    assert_eq!(again, pfn, "the block just freed (head of the list) comes back, backed");
    // 4 KiB pages from a discarded block: one 512th each
    k.clock.cost = 0;
    let p4 = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap().0;
    let c1 = k.clock.cost;
    assert!(c1 >= refault / 512, "a 4 KiB page of a reported block refaults ({c1})");
    assert!(c1 < refault / 4, "but not the whole block ({c1})");
    assert_eq!(k.pm.pr.touch(p4, 0), 0, "touched: backed");
}

/// thplab.free_page_reporting_start=idle: the passes run until the worker idles (every free
/// block reported, at the tails), then the live runner's back-fill (a THP-madvised mapping
/// of the footprint written page by page on CPU 0, then unmapped) backs exactly what it
/// touched; its freed THPs sit on CPU 0's per-CPU list, so the first process's THP
/// allocations there are backed while another CPU's take discarded blocks from the buddy
/// lists; the frees ask for a pass, due PAGE_REPORTING_DELAY after the munmap; the
/// back-fill leaves no mm, no time and no mTHP stats behind.
#[test]
fn idle_start_reports_free_memory_and_the_back_fill_lands_on_the_runners_cpu() {
    let kn = [
        ("thplab.free_page_reporting", "1"),
        ("thplab.free_page_reporting_start", "idle"),
        ("vm.min_free_kbytes", "67584"),
    ];
    let mut k = kernel("4G,cpus=2", &kn);
    assert!(k.cfg.reporting_idle_start);
    k.page_reporting_settle();
    assert_eq!(k.pm.pr.state, PrState::Idle);
    assert_eq!(k.page_reporting_initial(), KthreadNext::Wait, "idle: no pass due");
    let zi = biggest_zone(&k);
    let (total, rep) = blocks(&k, zi);
    assert!(rep + 2 >= total && rep > 100, "every free block reported ({rep} of {total})");
    let unbacked = k.pm.pr.nr_unbacked();
    let mms = k.mms.len();
    // two THPs: what the per-CPU list holds (pcp->high, from the low watermark)
    let len = 2 * HPAGE_PMD_SIZE;
    k.back_free_memory(len, false, 0, &Default::default());
    assert_eq!(k.mms.len(), mms, "the runner's mm is gone");
    assert_eq!(k.clock.cost, 0, "the back-fill is before the run");
    assert!(k.rec.mthp[HPAGE_PMD_ORDER as usize].values().all(|&v| v == 0), "its mTHP stats dropped");
    let backed = unbacked - k.pm.pr.nr_unbacked();
    let pages = len / PAGE_SIZE;
    assert!(backed >= pages && backed < pages + 64, "the footprint (and its page tables) backed: {backed}");
    assert_eq!(k.pm.pr.state, PrState::Idle, "nothing reached the buddy lists: no request");
    let pcp = k.pm.pcp_pages_total();
    assert!(pcp >= 2 * HPAGE_PMD_NR, "the THPs are on the runner's per-CPU list ({pcp})");
    let refault = k.costs.refault_reported_2m_ns;
    // another CPU: its list is empty, the buddy lists' blocks are discarded
    k.pm.cpu = 1;
    k.clock.cost = 0;
    let p = k.alloc_pages(GFP_TRANSHUGE, HPAGE_PMD_ORDER, 0).unwrap();
    assert!(k.clock.cost >= refault, "CPU 1 takes a reported block ({})", k.clock.cost);
    k.pm.free_pages(p, HPAGE_PMD_ORDER, &mut k.rec.vm);
    // the runner's CPU: its per-CPU list's THPs, backed
    k.pm.cpu = 0;
    k.clock.cost = 0;
    for _ in 0..2 {
        k.alloc_pages(GFP_TRANSHUGE, HPAGE_PMD_ORDER, 0).unwrap();
    }
    assert!(k.clock.cost < refault, "CPU 0's THPs are backed ({})", k.clock.cost);
    // a footprint beyond the per-CPU list: the overflow goes to the buddy lists and asks
    // for a pass, due PAGE_REPORTING_DELAY after the munmap
    k.back_free_memory(64 * HPAGE_PMD_SIZE, false, 0, &Default::default());
    assert_eq!(k.pm.pr.state, PrState::Requested, "the frees asked for reporting");
    match k.page_reporting_initial() {
        KthreadNext::Sleep(d) => assert!(d > 0 && d < PAGE_REPORTING_DELAY_NS, "{d}"),
        other => panic!("a pass is due: {other:?}"),
    }
}

/// A back-fill onto a full per-CPU list (the small-block step's frees fill CPU 0's list to
/// its high): the runner first takes room off the list (host::hold_pcp_room), so that its
/// THPs, freed as its process exits, all stay on the list, where the run's THP faults on
/// CPU 0 take them back, backed. Without the room each freed THP drained the THP list's
/// tail to the buddy lists (free_pcppages_bulk() drains the freeing list first), and the
/// run met blocks the host had discarded.
#[test]
fn the_back_fill_makes_room_on_a_full_per_cpu_list_for_its_thps() {
    let kn = [
        ("thplab.free_page_reporting", "1"),
        ("thplab.free_page_reporting_start", "idle"),
        ("vm.min_free_kbytes", "67584"),
    ];
    let mut k = kernel("8G,cpus=2", &kn);
    k.page_reporting_settle();
    let zi = biggest_zone(&k);
    let i = k.pm.pcp_index(0, zi);
    let high = k.pm.pcp[i].high_max;
    k.pm.hold_pcp_as_found(zi, 0, high, high);
    assert!(k.pm.pcp[i].count + 512 > k.pm.pcp[i].high, "a full list");
    let thps = 32;
    let room = k.pcp_room_pages(0, thps * HPAGE_PMD_SIZE);
    assert!(room.is_some_and(|r| r >= thps * HPAGE_PMD_NR), "room is made: {room:?}");
    k.back_free_memory(thps * HPAGE_PMD_SIZE, false, 0, &Default::default());
    let on_list = k.pm.pcp[i].lists.iter().map(|l| l.len() as u64).collect::<Vec<_>>();
    assert_eq!(on_list[on_list.len() - 1], thps, "every THP on CPU 0's movable THP list: {on_list:?}");
    k.clock.cost = 0;
    for _ in 0..thps {
        k.alloc_pages(GFP_TRANSHUGE, HPAGE_PMD_ORDER, 0).unwrap();
    }
    assert!(k.clock.cost < k.costs.refault_reported_2m_ns, "all backed ({} ns)", k.clock.cost);
}

/// thplab.page_reporting_order below pageblock_order (this guest's module parameter was 5 on
/// 2026-12-04): a free block of that order is reported and discarded, and one below it is
/// not; at the default order 9 neither is. An allocation of the reported block refaults
/// its pages.
#[test]
fn a_lower_reporting_order_reports_small_blocks() {
    for (order, want) in [("5", true), ("9", false)] {
        let mut k = kernel("1G", &[("thplab.free_page_reporting", "1"), ("thplab.page_reporting_order", order)]);
        assert_eq!(k.pm.pr.order, order.parse::<u32>().unwrap());
        while one_pass(&mut k).1 {}
        // an order-5 block and an order-4 block, freed alone (their buddies held)
        let a = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 6, 0).unwrap().0;
        let b = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 5, 0).unwrap().0;
        let before = (k.pm.pr.kib_reported, k.pm.pr.nr_unbacked());
        k.pm.free_pages(Pfn(a), 5, &mut k.rec.vm);
        k.pm.free_pages(Pfn(b), 4, &mut k.rec.vm);
        k.pm.drain_all_pages(None);
        while one_pass(&mut k).1 {}
        assert_eq!(k.pm.pr.page_reported(a), want, "order 5 at page_reporting_order {order}");
        assert!(!k.pm.pr.page_reported(b), "order 4 never is");
        // at order 5 the blocks the two allocations split off (orders 5-8) go too
        let kib = k.pm.pr.kib_reported - before.0;
        assert!(if want { kib >= 32 * 4 } else { kib == 0 }, "{kib} KiB reported");
        // the split-off blocks were discarded already (pieces of reported blocks); the
        // allocated-then-freed block's 32 pages are the new ones
        assert_eq!(k.pm.pr.nr_unbacked() - before.1, if want { 32 } else { 0 });
        if want {
            let refault = k.costs.refault_reported_2m_ns;
            k.clock.cost = 0;
            let p = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 5, 0).unwrap().0;
            assert_eq!(p, a, "the reported block (the only free one of its order)");
            assert!(k.clock.cost >= 32 * refault / 512, "its 32 pages refault ({})", k.clock.cost);
        }
    }
}

/// thplab.free_page_reporting_start=found: each order of each zone gets the share of its
/// free blocks reported that the live run found (here half of the order-10 blocks and all
/// of the order-9 ones in Normal, none in DMA32), taken from the tails of the lists; their
/// pages are discarded (an allocation of a tail block refaults), the heads stay backed, the
/// worker is idle, and a zone the record does not list is left alone.
#[test]
fn found_start_reports_the_live_share_of_each_order_at_the_tails() {
    let mut k = kernel("4G", &[("thplab.free_page_reporting", "1"), ("thplab.free_page_reporting_start", "found")]);
    assert!(k.cfg.reporting_found_start);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let n10 = k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize);
    assert!(n10 > 100, "{n10}");
    let bi = "Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      4   1000 \n\
              Node 0, zone    DMA32      0      0      0      0      0      0      0      0      0      0    700 \n";
    let rep = "Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      9    500 \n\
               Node 0, zone    DMA32      0      0      0      0      0      0      0      0      0      0      0 \n";
    k.page_reporting_found(rep, bi);
    assert_eq!(k.pm.pr.state, PrState::Idle);
    assert_eq!(k.page_reporting_initial(), KthreadNext::Wait);
    let list = k.pm.free_list(zi, MAX_PAGE_ORDER, MIGRATE_MOVABLE);
    let (head, tail, len) = (list.head as u64, list.tail as u64, list.len);
    let mut reported = 0;
    let mut p = list.head;
    let mut seen_reported = false;
    while p != NIL {
        let r = k.pm.pr.page_reported(p as u64);
        assert!(r || !seen_reported, "reported blocks are the tail of the list");
        seen_reported |= r;
        reported += r as u64;
        p = k.pm.free_next(MAX_PAGE_ORDER, p);
    }
    assert_eq!(reported, (len as f64 / 2.0).round() as u64, "half of {len}");
    assert_eq!(k.pm.pr.nr_unbacked(), reported << MAX_PAGE_ORDER, "their pages discarded");
    assert!(!k.pm.pr.page_reported(head) && k.pm.pr.page_reported(tail));
    assert_eq!(k.pm.pr.touch(head, MAX_PAGE_ORDER), 0, "the head is backed");
    assert_eq!(k.pm.pr.touch(tail, MAX_PAGE_ORDER), 1 << MAX_PAGE_ORDER, "the tail refaults");
    let dz = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "DMA32").unwrap();
    let (_, dma32_rep) = blocks(&k, dz);
    assert_eq!(dma32_rep, 0, "DMA32: none found reported");
}

/// Where the knobs give no THPs at fault (enabled=never), the back-fill of a run that calls
/// MADV_COLLAPSE collapses what it faulted (host::back_free_memory), so the run's collapses
/// find backed 2 MiB blocks on the runner's CPU as a THP fault would (madv_collapse_latency:
/// 350-641 ms live when its collapses took reported blocks, 60-90 ms when backed); the
/// back-fill of a run that does not collapse leaves its pages as faulted.
#[test]
fn the_back_fill_collapses_where_faults_give_no_thps() {
    let kn = [
        ("thplab.free_page_reporting", "1"),
        ("thplab.free_page_reporting_start", "idle"),
        ("vm.min_free_kbytes", "67584"),
        ("transparent_hugepage/enabled", "never"),
    ];
    let mut k = kernel("4G,cpus=2", &kn);
    k.page_reporting_settle();
    let before = k.rec.vm.get(Ev::THP_COLLAPSE_ALLOC);
    k.back_free_memory(2 * HPAGE_PMD_SIZE, false, 0, &Default::default());
    assert_eq!(k.rec.vm.get(Ev::THP_COLLAPSE_ALLOC), before, "a run that does not collapse: none");
    k.back_free_memory(2 * HPAGE_PMD_SIZE, true, 0, &Default::default());
    assert_eq!(k.rec.vm.get(Ev::THP_COLLAPSE_ALLOC) - before, 2, "each 2 MiB collapsed");
    let refault = k.costs.refault_reported_2m_ns;
    k.clock.cost = 0;
    for _ in 0..2 {
        k.alloc_pages(GFP_TRANSHUGE, HPAGE_PMD_ORDER, 0).unwrap();
    }
    assert!(k.clock.cost < refault, "the collapsed THPs are backed ({})", k.clock.cost);
}

/// The live back-fill takes its time (41 s for compaction-fill-p60's 20.7 GB on the
/// reference host, most of it the host refaulting reported memory), and each CPU's
/// vmstat_update runs decay_pcp_high() every second meanwhile: the per-CPU list's high,
/// which the back-fill's THP refills raise by a batch each towards high_max, falls by an
/// eighth a second, and the munmap's THPs fill the list only up to it. A back-fill of
/// reported memory (seconds of refaults) leaves CPU 0's list holding less than one of
/// backed memory (a fraction of a second); the run's clock starts at 0 either way.
#[test]
fn the_back_fill_decays_the_per_cpu_lists_for_as_long_as_it_takes() {
    let run = |idle: bool| {
        let mut kn = vec![("thplab.free_page_reporting", "1"), ("vm.min_free_kbytes", "67584")];
        if idle {
            kn.push(("thplab.free_page_reporting_start", "idle"));
        }
        let mut k = kernel("8G,cpus=2", &kn);
        if idle {
            k.page_reporting_settle();
        }
        k.back_free_memory(5 << 30, false, 0, &Default::default());
        assert_eq!(k.pm.now_ms, 0, "the run's clock starts at 0");
        let p = &k.pm.pcp[k.pm.pcp_index(0, biggest_zone(&k))];
        (p.count, p.high, p.high_max)
    };
    let (quick_count, quick_high, high_max) = run(false);
    let (slow_count, slow_high, _) = run(true);
    // 5 GiB: 2,560 THP faults, 0.2 s backed, 5.4 s reported at the default costs
    assert!(quick_high * 2 > high_max, "a quick back-fill raises high towards high_max ({quick_high} of {high_max})");
    assert!(slow_high * 3 < quick_high * 2, "a slow one leaves it decayed ({slow_high} against {quick_high})");
    assert!(slow_count * 3 < quick_count * 2, "and the list holds less ({slow_count} against {quick_count})");
}
