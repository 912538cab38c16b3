//! An aged machine as found (aged.rs): the free blocks below MAX_PAGE_ORDER that the live
//! run's /proc/buddyinfo lists, their buddies held.

use super::common::kernel;
use crate::aged::small_free_blocks;
use crate::consts::*;
use crate::gfp::*;

/// A 4G machine's Normal zone (1 GiB) and DMA32 zone given the small blocks of a buddyinfo:
/// afterwards the model's own buddyinfo lists exactly those counts below MAX_PAGE_ORDER,
/// the held pages are the kernel's (the checker's page accounting balances), and an order-4
/// allocation takes one of the order-4 blocks instead of splitting a 4 MiB one
/// (__rmqueue_smallest() takes the smallest order that fits).
#[test]
fn small_free_blocks_are_laid_out_and_taken_first() {
    let bi = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
              Node 0, zone    DMA32      2      3      0      2      3      2      1      4      4      8    745 \n\
              Node 0, zone   Normal   3000   2500   1200    900    500    300    100     40     20      9     99 \n";
    let mut k = kernel("4G,aged", &[]);
    let kernel_before = k.nr_kernel_pages();
    let held = k.hold_small_free_blocks(bi, None);
    crate::check::check(&k).unwrap();
    assert_eq!(k.nr_kernel_pages() - kernel_before, held);
    for zi in 0..k.pm.zones.len() {
        let (node, name) = (k.pm.zones[zi].node, k.pm.zones[zi].name);
        let Some(want) = small_free_blocks(bi, node, name) else { continue };
        for (o, &n) in want.iter().enumerate() {
            assert_eq!(k.pm.zones[zi].nr_free_order(o), n, "{name} order {o}");
        }
    }
    // the held pages: far fewer than the free memory they keep in small blocks
    let small: u64 = [3000u64, 2500, 1200, 900, 500, 300, 100, 40, 20, 9].iter().enumerate().map(|(o, n)| n << o).sum();
    assert!(held * 8 < small, "held {held} pages for {small} free");
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let (o4, o10) = (k.pm.zones[zi].nr_free_order(4), k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize));
    k.alloc_pages(GFP_HIGHUSER_MOVABLE, 4, 0).unwrap();
    assert_eq!(k.pm.zones[zi].nr_free_order(4), o4 - 1);
    assert_eq!(k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize), o10);
}

/// small_free_blocks() reads a zone's row by node and name; a zone it does not list gets
/// nothing.
#[test]
fn small_free_blocks_reads_the_zone_row() {
    let bi = "Node 0, zone   Normal   1 2 3 4 5 6 7 8 9 10 11\nNode 1, zone   Normal   9 9 9 9 9 9 9 9 9 9 9\n";
    assert_eq!(small_free_blocks(bi, 0, "Normal"), Some([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    assert_eq!(small_free_blocks(bi, 1, "Normal"), Some([9; 10]));
    assert_eq!(small_free_blocks(bi, 0, "DMA32"), None);
}

/// With the same moment's /proc/pagetypeinfo the small blocks are laid out per
/// migratetype: the model's own pagetypeinfo then lists those counts for Unmovable,
/// Movable and Reclaimable, and a movable order-3 allocation takes a movable order-3 block
/// while the unmovable ones stay (a movable allocation falls back to other types only when
/// its own lists are empty).
#[test]
fn small_free_blocks_are_laid_out_per_migratetype() {
    let pti = "Node    0, zone   Normal, type    Unmovable     15     69     89    145    130    111     34     29      0      0      0 \n\
               Node    0, zone   Normal, type      Movable    700    500    300    200    100     50     20     10      5      3    800 \n\
               Node    0, zone   Normal, type  Reclaimable      1    244    440    436    260    104     14      3      0      0      0 \n\
               Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0 \n";
    let bi = "Node 0, zone   Normal    716    813    829    781    490    265     68     42      5      3    800 \n";
    let by_type = crate::aged::small_free_blocks_by_type(pti, 0, "Normal").unwrap();
    assert_eq!(by_type.len(), 3, "HighAtomic left out");
    let mut k = kernel("4G,aged", &[]);
    k.hold_small_free_blocks(bi, Some(pti));
    crate::check::check(&k).unwrap();
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    for (mt, want) in &by_type {
        for (o, &n) in want.iter().enumerate() {
            assert_eq!(k.pm.free_list(zi, o as u32, *mt).len, n, "type {mt} order {o}");
        }
    }
    use crate::mmzone::{MIGRATE_MOVABLE, MIGRATE_UNMOVABLE};
    let (mov, unmov) = (k.pm.free_list(zi, 3, MIGRATE_MOVABLE).len, k.pm.free_list(zi, 3, MIGRATE_UNMOVABLE).len);
    let mut pcp_free = 0;
    // the per-CPU list's refill takes a batch; count what left the movable lists only
    for _ in 0..4 {
        k.alloc_pages(GFP_HIGHUSER_MOVABLE, 3, 0).unwrap();
        pcp_free += 1;
    }
    assert!(k.pm.free_list(zi, 3, MIGRATE_MOVABLE).len < mov, "movable order-3 blocks taken ({pcp_free} allocations)");
    assert_eq!(k.pm.free_list(zi, 3, MIGRATE_UNMOVABLE).len, unmov, "unmovable ones left alone");
}

/// The per-CPU lists as found (MachineSpec::pcp): CPU 0's list of Normal holds the pages
/// (whole order-MAX blocks off the movable list's head) with pcp->high raised to hold them;
/// an order-0 allocation there takes one of them, leaving the buddy lists as they were;
/// a count beyond the model's high_max (its zone is smaller than the live one) is capped.
#[test]
fn per_cpu_lists_start_as_found() {
    let mut k = kernel("4G,cpus=2", &[]);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let (o10, free) = (k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize), k.pm.zones[zi].free_pages);
    let held = k.pm.hold_pcp_as_found(zi, 0, 5000, 6000);
    assert_eq!(held, 5 << MAX_PAGE_ORDER, "whole blocks");
    crate::check::check(&k).unwrap();
    assert_eq!(k.pm.zones[zi].nr_free_order(MAX_PAGE_ORDER as usize), o10 - 5);
    assert_eq!(k.pm.zones[zi].free_pages, free - held, "NR_FREE_PAGES leaves the lists out");
    let i = k.pm.pcp_index(0, zi);
    assert_eq!(k.pm.pcp[i].count, held);
    assert!(k.pm.pcp[i].high >= held, "high holds them ({})", k.pm.pcp[i].high);
    let buddy = k.pm.buddyinfo();
    k.pm.cpu = 0;
    let p = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap();
    assert_eq!(k.pm.buddyinfo(), buddy, "the page came off the per-CPU list");
    assert_eq!(k.pm.zone_of(p.0), zi);
    k.pm.free_pages(p, 0, &mut k.rec.vm);
    crate::check::check(&k).unwrap();
    // CPU 1, more than its high_max: capped there
    let j = k.pm.pcp_index(1, zi);
    let max = k.pm.pcp[j].high_max;
    let held = k.pm.hold_pcp_as_found(zi, 1, 10 * max, 10 * max);
    assert!(held >= max && held < max + (1 << MAX_PAGE_ORDER), "{held} for high_max {max}");
    assert_eq!(k.pm.pcp[j].high, max);
    assert_eq!(k.pm.hold_pcp_as_found(zi, 7, 100, 100), 0, "no such CPU");
}

/// The pages in use as found (aged.rs hold_in_use): exactly the listed pfns are held as
/// the kernel's (the checker's accounting balances), the rest of their 4 MiB blocks goes
/// back in the largest aligned blocks (a single page at a pageblock's end leaves one free
/// block of each order 0..8 below it, and its buddy pageblock free at order 9), a movable
/// (`m`) run is held too, a pfn outside the model's memory is skipped, and with a
/// pagetypeinfo table the pageblocks with the most `u` pages take its Unmovable and then
/// Reclaimable counts.
#[test]
fn pages_in_use_are_held_where_found() {
    use crate::mmzone::{MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE};
    let mut k = kernel("4G,aged", &[]);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let zs = k.pm.zones[zi].start_pfn;
    let (free, kernel_before) = (k.pm.zones[zi].free_pages, k.nr_kernel_pages());
    let single = zs + 2 * 1024 + 1023; // the last page of a 4 MiB block
    let text = format!(
        "{single} 1 u\n{} 3 m\n{} 40 u\n{} 20 u\n{} 5 u\n99999999999 4 u\n",
        zs + 8 * 1024 + 100,
        zs + 16 * 1024,
        zs + 20 * 1024 + 7,
        zs + 24 * 1024
    );
    let pti = "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n\
               Node 0, zone    DMA32            0          100            0            0            0 \n\
               Node 0, zone   Normal            1          500            1            0            0 \n";
    let (held, _) = k.hold_in_use(&text, Some(pti)).unwrap();
    crate::check::check(&k).unwrap();
    assert_eq!(held, 1 + 3 + 40 + 20 + 5);
    assert_eq!(k.nr_kernel_pages() - kernel_before, held);
    assert_eq!(k.pm.zones[zi].free_pages, free - held);
    for o in 0..9 {
        let head = single - (1 << (o + 1)) + 1;
        let head = head & !((1u64 << o) - 1);
        assert!(crate::mm_types::is_free_head(k.pm.frames[head as usize]), "order {o} below the held page");
        assert_eq!(crate::mm_types::free_order(k.pm.frames[head as usize]), o as u32);
    }
    let buddy = single & !1023;
    assert_eq!(crate::mm_types::free_order(k.pm.frames[buddy as usize]), 9, "its buddy pageblock");
    assert_eq!(k.pm.pb_mt(zs + 16 * 1024), MIGRATE_UNMOVABLE, "40 unmovable pages: the most");
    assert_eq!(k.pm.pb_mt(zs + 20 * 1024), MIGRATE_RECLAIMABLE, "20: the next");
    assert_eq!(k.pm.pb_mt(zs + 24 * 1024), MIGRATE_MOVABLE, "5: no more counted");
    assert_eq!(k.pm.pb_mt(single), MIGRATE_MOVABLE);
    // a line that does not parse names itself
    let e = crate::aged::in_use_runs("12 3 u\n12 x m\n").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
    assert!(crate::aged::in_use_runs("1 2 q").is_err());
}

/// A page found on an LRU (`m`) is held as one compaction moves (mm_types
/// make_kernel_movable): vm.compact_memory migrates it out of the bottom of the zone, so
/// its 4 MiB block comes back whole, while an unmovable (`u`) page stays where it was
/// found; the kernel's page count is unchanged and the checker's accounting balances.
#[test]
fn pages_found_on_an_lru_are_moved_by_compaction() {
    use crate::mm_types::{free_order, is_free_head, is_kernel_movable, tag, TAG_KERNEL};
    use crate::vmstat::Ev;
    let mut k = kernel("4G,aged", &[("vm.compaction_proactiveness", "0")]);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let zs = k.pm.zones[zi].start_pfn;
    let (m, u) = (zs + 1023, zs + 4096 + 1023);
    k.hold_in_use(&format!("{m} 1 m\n{u} 1 u\n"), None).unwrap();
    assert!(is_kernel_movable(k.pm.frames[m as usize]));
    assert!(!is_kernel_movable(k.pm.frames[u as usize]));
    let kernel_before = k.nr_kernel_pages();
    k.compact_all();
    // the freed source is on the compactor's per-CPU list until drained
    k.pm.drain_all_pages(Some(zi));
    crate::check::check(&k).unwrap();
    assert_eq!(k.nr_kernel_pages(), kernel_before);
    assert!(k.rec.vm.get(Ev::PGMIGRATE_SUCCESS) >= 1);
    assert!(
        is_free_head(k.pm.frames[zs as usize]) && free_order(k.pm.frames[zs as usize]) == MAX_PAGE_ORDER,
        "its block whole again"
    );
    assert_eq!(tag(k.pm.frames[u as usize]), TAG_KERNEL, "the unmovable page stays");
    let moved = (zs..k.pm.zones[zi].end_pfn()).filter(|&p| is_kernel_movable(k.pm.frames[p as usize])).count();
    assert_eq!(moved, 1, "the movable page lives on elsewhere");
}

/// Flagless pages (`p`: a per-CPU list's page or a bare kernel page) are held by
/// hold_in_use and returned in pfn order, but a flagless run's whole pageblocks (a block
/// being reported) stay free; flagless_to_pcp puts a CPU's per-CPU list count on them
/// (the list of their pageblock's type, high as found); draining the list frees them
/// where they lie (a page whose buddy is free merges with it); release_flagless frees the
/// rest. The checker's accounting balances throughout.
#[test]
fn flagless_pages_take_the_per_cpu_lists_as_found() {
    use crate::mm_types::{free_order, is_free_head, tag, TAG_KERNEL};
    let mut k = kernel("4G,aged", &[]);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let zs = k.pm.zones[zi].start_pfn;
    let kernel_before = k.nr_kernel_pages();
    // two flagless pages side by side at the start of a 4 MiB block, a third further on,
    // and an unmovable page beside the pair
    let (a, far) = (zs + 8 * 1024, zs + 12 * 1024 + 5);
    // and a flagless run over a whole aligned pageblock (a block page reporting had taken
    // off the free lists): that pageblock stays free
    let rep = zs + 16 * 1024 + 512;
    let text = format!("{a} 2 p\n{} 1 u\n{far} 1 p\n{} 514 p\n", a + 2, rep - 1);
    let (held, mut flagless) = k.hold_in_use(&text, None).unwrap();
    assert!(is_free_head(k.pm.frames[rep as usize]) && free_order(k.pm.frames[rep as usize]) >= 9);
    flagless.retain(|&p| p < rep - 1);
    assert_eq!((held, flagless.clone()), (6, vec![a, a + 1, far]), "the reported block's neighbours held");
    let placed = k.flagless_to_pcp(zi, 0, 2, 100, &mut flagless);
    crate::check::check(&k).unwrap();
    assert_eq!((placed, flagless.clone()), (2, vec![far]), "the count taken from the front");
    assert_eq!(k.nr_kernel_pages() - kernel_before, 4, "the unmovable page and the other flagless ones");
    assert_eq!(tag(k.pm.frames[far as usize]), TAG_KERNEL);
    let i = k.pm.pcp_index(0, zi);
    assert_eq!(k.pm.pcp[i].count, 2);
    assert!(k.pm.pcp[i].high >= 2);
    // no CPU 7: nothing placed
    assert_eq!(k.flagless_to_pcp(zi, 7, 1, 1, &mut flagless), 0);
    // drained, the pair merges into one order-1 block where it was
    k.pm.drain_all_pages(Some(zi));
    crate::check::check(&k).unwrap();
    assert!(is_free_head(k.pm.frames[a as usize]) && free_order(k.pm.frames[a as usize]) == 1);
    // the flagless pages no list took are free (release_flagless): only the unmovable page
    // stays the kernel's, and the far page's 4 MiB block is whole again
    k.release_flagless(&flagless);
    crate::check::check(&k).unwrap();
    assert_eq!(
        k.nr_kernel_pages() - kernel_before,
        3,
        "the unmovable page and the two flagless pages left out of the list above"
    );
    let blk = far & !1023;
    assert!(is_free_head(k.pm.frames[blk as usize]) && free_order(k.pm.frames[blk as usize]) == MAX_PAGE_ORDER);
}

/// The free lists stay in the order hold_in_use's frees leave them (aged.rs, "The lists'
/// order": 6.18 shuffles them only with page_alloc.shuffle=1): a 4 MiB block found with
/// every other page in use gives 512 free order-0 pages, and 4 KiB allocations take
/// them one after another through the block, each two pfns from the one before; shuffled,
/// they would come from anywhere in it.
#[test]
fn four_kib_faults_take_the_found_order0_pages_in_list_order() {
    let mut k = kernel("4G,aged", &[]);
    let zi = (0..k.pm.zones.len()).find(|&z| k.pm.zones[z].name == "Normal").unwrap();
    let b = k.pm.zones[zi].start_pfn + 32 * 1024;
    let text: String = (0..512).map(|i| format!("{} 1 u\n", b + 2 * i)).collect();
    k.hold_in_use(&text, None).unwrap();
    crate::check::check(&k).unwrap();
    assert_eq!(k.pm.zones[zi].nr_free_order(0), 512);
    let got: Vec<u64> = (0..200).map(|_| k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0).unwrap().0).collect();
    assert!(got.iter().all(|&p| p >= b && p < b + 1024), "all from the found block");
    let steps = got.windows(2).filter(|w| w[0].abs_diff(w[1]) == 2).count();
    assert_eq!(steps, got.len() - 1, "in list order: {:?}", &got[..12]);
}
