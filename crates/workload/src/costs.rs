//! The cost profile: what each kernel primitive costs in simulated time. The model charges
//! these per unit of work it does (per page cleared, per folio reclaimed, per PTE unmapped,
//! per request to a device, ...), never per result. `thplab calibrate` measures the host and
//! writes a profile of the same shape (TOML), which `thplab run --costs FILE` uses. Every
//! field is optional in a file: missing fields keep their defaults. All times in nanoseconds.
//!
//! Where the defaults come from (each field says which): "calibrate: X" means the median of
//! `thplab calibrate` measurement X on the reference host (a 2-vCPU x86-64 KVM guest, Linux
//! 6.18, virtio-blk disk backed by the host; python/thplab/calibrate.py shows how each
//! primitive is derived from the measurements, subtracting the other primitives the model
//! charges on the same path), rounded to two significant digits; "estimate" means a figure
//! the host cannot measure, with its reasoning.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The smallest last-level cache the model takes (64 KiB: 64 sets of 16 lines).
pub const MIN_CACHE_BYTES: u64 = 64 << 10;

/// Per-content-class figures for a zram compressor (ns per 4 KiB page, compressed bytes).
/// Source of the defaults: calibrate (zram swap-out and swap-in of 4 KiB pages of each class,
/// per compressor), except where a field says otherwise.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CompressorCosts {
    /// Detecting a same-filled page (page_same_filled: every word compared with the first)
    /// and storing its value: no compression (its read is a fill, charged clear_4k_ns). calibrate: same_filled_4k (the
    /// same word loop on a cold page).
    pub same_ns: u64,
    /// Compressing one page (zram_write_page beyond page_same_filled: zcomp_compress, the
    /// zs_malloc and the object write): calibrate: swap-out of the class less swap-out of
    /// same-filled pages, per page, of THPs written whole (zram.<alg>.<class>.thp_out; of
    /// 4 KiB pages where THPs are not usable, whose ~6.5 us of other work per page makes the
    /// difference noisy), plus same_ns (the same-filled page's whole-page check), less the
    /// part of page_same_filled the class's calibration pages pay (it stops at the first
    /// word that differs: 16 bytes of text, random data and calibrate's sparse pages, whose
    /// one non-zero byte is the last, as a partial write of a byte value into a zero page
    /// makes the model's SPARSE class). The model charges that partial check apart (zram.rs
    /// same_check_ns), by where the page's first non-zero byte is.
    pub sparse_compress_ns: u64,
    pub text_compress_ns: u64,
    pub random_compress_ns: u64,
    /// Decompressing one page: calibrate: swap-in of the class less swap-in of same-filled
    /// pages (paired by repetition), plus clear_4k_ns (a same-filled page is restored by
    /// filling it: read_same_filled_page), less the class's free_ns: the swap-in frees the
    /// slot in the fault (do_swap_page -> swap_range_free -> zram_slot_free_notify), which
    /// the model charges as the slot's release.
    pub sparse_decompress_ns: u64,
    pub text_decompress_ns: u64,
    /// Incompressible pages are stored raw (ZRAM_HUGE): a copy.
    pub random_decompress_ns: u64,
    /// Freeing a stored object when its swap slot is freed (zram_slot_free_notify → zs_free),
    /// beyond swap_free_ns: calibrate: munmap of the swap entries of THPs of the class written
    /// whole less of same-filled ones (zram.<alg>.<class>.thp_free, paired by repetition), per
    /// entry, as slot_free_ns comes from the same-filled ones; where no THP was written, of
    /// 4 KiB-written entries (<class>.free). The frees of the zspages' frames that empty are
    /// inside. Same-filled pages have no object.
    pub sparse_free_ns: u64,
    pub text_free_ns: u64,
    pub random_free_ns: u64,
    /// zram_slot_free_notify() -> zram_free_page() of any stored slot, same-filled included
    /// (the slot lock, its flags and stats), beyond swap_free_ns: the whole free of a
    /// same-filled page, and the part of the others' free below their class's free_ns.
    /// calibrate: munmap of the swap entries of same-filled THPs written whole
    /// (zram.<alg>.same.thp_free, the fastest compressor's for each: a same-filled slot's
    /// free never reaches the compressor; where THPs are not usable, of 4 KiB pages:
    /// same.free) less swap_free_ns and pte_walk_ns, per entry.
    pub slot_free_ns: u64,
    /// Compressed bytes: calibrate (compr_data_size / pages stored).
    pub sparse_bytes: u64,
    pub text_bytes: u64,
    /// Stored uncompressed when compression does not pay (>= huge_class_size).
    pub random_bytes: u64,
}
impl Default for CompressorCosts {
    fn default() -> Self {
        // lzo-rle on the reference host
        CompressorCosts {
            same_ns: 320,
            sparse_compress_ns: 1_200,
            text_compress_ns: 12_000,
            random_compress_ns: 3_500,
            sparse_decompress_ns: 1_000,
            text_decompress_ns: 4_000,
            random_decompress_ns: 1_000,
            sparse_free_ns: 140,
            text_free_ns: 430,
            random_free_ns: 400,
            slot_free_ns: 40,
            sparse_bytes: 41,
            text_bytes: 2_000,
            random_bytes: 4_096,
        }
    }
}

/// A block device's service model: each request transfers at the device's bandwidth, one
/// after another, and completes a latency later (latencies overlap: the device keeps
/// `queue_depth` requests in flight). A bio larger than `max_sectors_kb` is split into
/// requests of at most that size (bio_split_to_limits). A writer does not wait for its write
/// (writeback is asynchronous) unless `queue_depth` requests are already in flight or, with
/// writeback throttling on (`wbt_lat_usec` > 0, block/blk-wbt.c), wbt's depth of swap writes
/// is; a reader waits for its read. Synchronous devices (pmem) are served by the CPU that
/// asks. The last four fields are the block queue's sysfs attributes
/// (/sys/block/<dev>/queue/{max_sectors_kb,max_segments,wbt_lat_usec,write_cache}); calibrate
/// reads them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceCosts {
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Extra latency when a request is not sequential to the previous one (seek).
    pub random_penalty_ns: u64,
    pub read_mb_per_s: u64,
    pub write_mb_per_s: u64,
    /// Requests in flight before a submitter blocks (the block queue's nr_requests).
    pub queue_depth: u64,
    /// The largest request (queue/max_sectors_kb); 0: bios are never split.
    pub max_sectors_kb: u64,
    /// The most segments a request holds (queue/max_segments; 0: no limit). Bios merged into
    /// one request under a plug (blk-merge.c ll_new_hw_segment) add their segments: one per
    /// folio, so consecutive 4 KiB swap writes make requests of at most max_segments pages.
    pub max_segments: u64,
    /// Writeback throttling's latency target (queue/wbt_lat_usec); 0: wbt off.
    pub wbt_lat_usec: u64,
    /// A volatile write cache (queue/write_cache = "write back"): wbt wakes a throttled
    /// writer only when its writes in flight drain to zero (wbt_rqw_done).
    pub write_cache: bool,
    /// The device's time per segment of a write request beyond its bandwidth: a swap write
    /// request merged from 4 KiB pages carries one segment per page (page_io.rs), a THP's
    /// one. calibrate: the 4 KiB swap-out of random pages (MADV_PAGEOUT, then the writeback
    /// drain: the device is behind the CPU throughout) per page, in the fastest repetition
    /// (a drain stalled behind the guest's dirty-page flush only adds), less 4 KiB at
    /// `write_mb_per_s`. On this project's VM a loop device over a file took a 4 KiB swap
    /// write in ~6.3 us of device time where its THP writes ran at ~3.7 GB/s (1.1 us per
    /// 4 KiB).
    pub write_segment_ns: u64,
}
impl Default for DeviceCosts {
    fn default() -> Self {
        DeviceCosts {
            read_latency_ns: 100_000,
            write_latency_ns: 50_000,
            random_penalty_ns: 0,
            read_mb_per_s: 2_000,
            write_mb_per_s: 1_500,
            queue_depth: 256,
            max_sectors_kb: 1_280,
            // BLK_MAX_SEGMENTS: blk_validate_limits()' default for a driver that sets none
            max_segments: 128,
            wbt_lat_usec: 2_000,
            write_cache: false,
            write_segment_ns: 0,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CostProfile {
    pub name: String,
    /// Where the numbers come from ("documented defaults", "calibrated on <host> <date>").
    pub source: String,
    /// calibrate: cpu_ghz (a chain of dependent adds, one per cycle).
    pub cpu_ghz: f64,
    /// The host's speed as a run meets it, against this profile's calibration (1.1: 10 %
    /// slower): the model charges every CPU-side cost times this (`at_host_speed`). 1, the
    /// default: as calibrated. This host's speed moves by tens of percent from one ten
    /// minutes to the next; `thplab validate --host-speed auto` sets it from the live
    /// runner's 4 KiB fault probe over its runs against this profile's probe_fault_4k_ns
    /// (off by default: the probe does not track every phase; python/thplab/validate.py).
    pub host_speed: f64,
    /// Not charged: the live runner's host-speed probe (a 4 KiB write fault over 16 MiB
    /// backed just before, clearing included) as calibrate met it, the median over its CPU
    /// windows. validate takes its runs' probes against this (else against fault_4k_ns +
    /// clear_4k_ns) for host_speed.
    pub probe_fault_4k_ns: Option<u64>,
    /// Not charged: the live runner's CPU probe (a volatile load and store per step, no page
    /// touched: thplab-live host::cpu_probe_ns) as calibrate met it, the median over its CPU
    /// windows.
    /// The runner takes the same probe before and after every timed phase; validate sets
    /// them against this to tell the phases that ran while the host ran the guest at
    /// another speed than it did for the calibration.
    pub probe_cpu_ns: Option<u64>,
    /// Not charged: the host's two speeds, as calibrate met them (thplab.calibrate
    /// speed_table): `cut_ns`, the CPU probe that parts them, and under `fast` and `slow`
    /// the fields whose value at that speed differs from this profile's. The model charges
    /// this profile's own fields; validate prices each live run's phase at the speed its
    /// CPU probe met (docs/host_speed.md).
    pub speed: Option<toml::Table>,

    // ---- page faults (mm/memory.c, mm/huge_memory.c) ----
    /// Exception entry/exit plus handle_mm_fault for a 4 KiB anonymous fault, without
    /// clearing: estimate for a server core. (The reference host calibrates fault_4k_total
    /// less clear_4k at ~1.8 µs: a guest's fault pays EPT and exit costs.) A fault that finds
    /// its page in the swap cache costs the same (calibrate: swapcache_hit, 1.8 µs).
    pub fault_4k_ns: u64,
    /// The same for a PMD (THP) fault, without clearing (do_huge_pmd_anonymous_page): estimate.
    /// calibrate: fault_2m_total (each THP fault of fresh memory timed alone, after a write
    /// sweep of 64 MiB, so that the blocks' clear finds them out of the cache as a workload's
    /// faults do: live/calibrate.rs CacheSweep) less clear_2m, which is a clear of warm memory.
    pub fault_2m_ns: u64,
    /// A read fault that maps the shared zero page: estimate (calibrate: fault_zero).
    pub fault_zero_ns: u64,
    /// clear_page_erms of 4 KiB: estimate, ~25 GB/s (calibrate: clear_4k).
    pub clear_4k_ns: u64,
    /// clear_huge_page of 2 MiB: estimate, ~25 GB/s (calibrate: clear_2m).
    pub clear_2m_ns: u64,
    /// Zeroing one 4 KiB subpage of a large folio in its fault (alloc_anon_folio ->
    /// folio_zero_user -> process_huge_page -> clear_user_highpage, a subpage at a time):
    /// an mTHP fault charges fault_4k_ns plus this per subpage. Measured on the reference host
    /// (2026-11-26, one write per folio of a fresh MADV_HUGEPAGE mapping, one mTHP size
    /// enabled at a time): 5.7 us per 16 KiB fault, 11.9 us per 64 KiB, 21.7 us per 128 KiB,
    /// 322 us per 2 MiB, i.e. 0.6-0.65 us per 4 KiB at every size, three times the userspace
    /// clear_4k loop over warm memory, and the rate of the THP fault's clear. Default: the
    /// default clear_2m_ns per 4 KiB (the kernel clears an mTHP's and a THP's subpages alike).
    /// calibrate: fault_64k_total (64 KiB faults) less a 4 KiB fault's other work (fault_4k_total less clear_4k) and the PTE-table share,
    /// per subpage.
    pub clear_folio_4k_ns: u64,
    /// copy_user_highpage of 4 KiB: estimate, ~16 GB/s (calibrate: copy_4k).
    pub copy_4k_ns: u64,
    /// Copying 2 MiB (collapse, THP migration): estimate, ~15 GB/s (calibrate: copy_2m).
    pub copy_2m_ns: u64,
    /// memchr_inv (or pages_identical) over a whole 4 KiB page: the zero checks of the
    /// zeromap, of the split's zero-subpage remap and of thp_underused(); the cost scales
    /// with the offset reached. calibrate: the underused shrinker's cost per subpage read
    /// (underused_256 less underused_0, per 256 pages: the kernel's own loop on cold pages).
    pub memchr_inv_4k_ns: u64,
    /// is_folio_zero_filled() over a whole zero page: swap_writeout()'s zeromap check, a
    /// plain word loop over each page of the folio (last word first), which live costs more
    /// than memchr_inv or zram's page_same_filled over the same cold pages (2026-11-27: a
    /// zero THP's MADV_PAGEOUT on zram 1.43-1.54 us a page, a same-filled one's 1.18-1.34).
    /// Unset: memchr_inv_4k_ns. calibrate: zram MADV_PAGEOUT of all-zero THPs (zeromap, no
    /// I/O: zram.<alg>.zero.thp_out) less that of same-filled THPs written whole (same
    /// repetition), plus same_ns (the same-filled pages' check, which the zero ones skip):
    /// the rest of their per-page work (the unmap, the swap entry, the free) is alike.
    pub zero_filled_4k_ns: Option<u64>,
    /// Writing one byte to an already-mapped page (store + cache miss), per page touched by a
    /// write op: calibrate: touch_page.
    pub touch_page_ns: u64,
    /// The first access to each other page of a large folio mapped by PTEs right after the
    /// fault that mapped it (alloc_anon_folio -> set_ptes), before the task faults again:
    /// charged instead of touch_page_ns. On the reference host (2026-12-07, a C loop paired by
    /// repetition, one write per 64 KiB folio with and without stores to its other 15 pages
    /// right after) the faults with the stores take 81-88 ns more a page than the faults
    /// alone, loads alike, 16 KiB folios 93 ns, where the same first stores made after all
    /// the faults cost 8.5 ns; a second store
    /// to the page adds nothing, a system call between does not bring it back, a 3 us wait
    /// after the fault halves it, and a PMD-mapped THP's 511 other pages pay 1-9 ns. It is
    /// the partial cache line that pays: 8-byte stores from the page's start cost 81 ns for
    /// up to 32 bytes, 44 for 64 (one whole line), 26 for 128, then the fill's own cost
    /// (4 KiB: 160 ns, as in cache), so a store of whole lines is charged touch_page_ns.
    /// Where it comes from (the folio's clear still draining, or this Firecracker guest's
    /// paging) is not known. Unset: touch_page_ns. calibrate: fault_64k_touch less
    /// fault_64k_total of the same repetition, per other page.
    pub touch_after_fault_ns: Option<u64>,
    /// The workload's own stores of a whole 4 KiB page, by the write op's data: a byte value
    /// (memset), `text` (a copy from the text corpus) and `random` (a PRNG stream). A write of
    /// `bytes` bytes charges touch_page_ns plus bytes/4096 of its kind's figure: user time
    /// inside the phase, which the live runner spends filling the page (child.rs `fill`).
    /// Measured on a 2 MiB buffer in cache, as a page is right after its fault's clear.
    /// Estimates: ~40, 20 and 8 GB/s. calibrate: fill_4k_byte, fill_4k_text, fill_4k_random,
    /// pooled from three windows minutes apart, as are clear_4k, clear_2m, copy_4k, copy_2m,
    /// touch_page, syscall and sleep_1ms (calibrate.rs `calibrate_cpu`: fill_text_4k came out
    /// 155-484 ns between calibrations of one host, each window consistent within itself).
    pub fill_byte_4k_ns: u64,
    pub fill_text_4k_ns: u64,
    pub fill_random_4k_ns: u64,

    // ---- syscalls and page-table work ----
    /// Syscall entry and exit: calibrate: syscall (getppid).
    pub syscall_ns: u64,
    /// How far past its deadline a sleep op's nanosleep() wakes: the task's timer slack
    /// (hrtimer_nanosleep() arms the timer for [deadline, deadline + current->timer_slack_ns],
    /// 50 us for a normal task, and an idle CPU's timer fires at the range's end) plus the
    /// timer interrupt's and the wake-up's latency. Default: the slack plus 10 us. Measured
    /// on the reference host: 1.09 ms a 1 ms sleep (compaction-fill's tenant sleeps 60,000
    /// times: its 15 cycles took 69-72 s live against 62 s modelled without this).
    /// calibrate: sleep_1ms (the sleep op of 1 ms, per sleep) less 1 ms.
    pub sleep_wake_ns: u64,
    /// Per 4 KiB PTE visited by munmap/madvise/mprotect walks: estimate (a load and a test
    /// per entry, ~30 cycles). calibrate: pte_walk_none (MADV_COLD over PTE tables of
    /// none entries, per PTE).
    pub pte_walk_ns: u64,
    /// The zap of a PTE that maps the shared zero page, beyond the walk: zap_present_ptes()
    /// finds no normal page (vm_normal_page) and only clears the entry
    /// (ptep_get_and_clear_full, an atomic exchange) and records it for the TLB flush.
    /// Estimate: an atomic and a store (~10 ns). calibrate: munmap_zero (munmap of
    /// read-faulted zero-page PTEs, per PTE) less pte_walk_ns.
    pub zap_zero_pte_ns: u64,
    /// __pte_alloc() in a fault that finds no PTE table, beyond clearing the table page
    /// (clear_4k_ns) and the buddy allocation (page_alloc_ns), both charged apart:
    /// pte_alloc_one() (pagetable_alloc with GFP_PGTABLE_USER: the memcg charge;
    /// pagetable_pte_ctor: the split PTE lock, NR_PAGETABLE), pmd_install() under the PMD
    /// lock, and the cold walk of a 2 MiB range touched for the first time. Estimate: ~500
    /// ns. calibrate: fault_4k_sparse (one 4 KiB write fault per 2 MiB of a fresh 2 GiB
    /// mapping, 1024 faults, per fault) less fault_4k_total, clear_4k_ns and page_alloc_ns
    /// (~1 us on the reference host).
    pub pte_alloc_ns: u64,
    /// Per PMD entry visited: estimate.
    pub pmd_walk_ns: u64,
    /// Freeing a large folio, per tail page: free_pages_prepare() runs
    /// free_tail_page_prepare() on each (its compound fields checked, its flags cleared:
    /// a cold struct page each). Estimate: ~10 ns. calibrate: munmap_2m (munmap of present
    /// THPs, per THP) less pmd_walk_ns and two page_free_ns (the folio's and its deposited
    /// table's), over 511: ~14 ns on the reference host (7-8 us a THP).
    pub free_tail_page_ns: u64,
    /// Freeing a folio of an order the per-CPU lists do not take (pcp_allowed_order: above
    /// PAGE_ALLOC_COSTLY_ORDER and not the PMD order, e.g. a 64 KiB mTHP): free_unref_folios()
    /// calls free_one_page(), which takes the zone lock (irqsave) and merges it into the
    /// buddy lists at once, beyond what page_free_ns (an order-0 free through the per-CPU
    /// list) covers. Estimate: ~500 ns. calibrate: munmap_64k (munmap of present 64 KiB
    /// folios, per folio) less 16 pte_walk_ns, page_free_ns and 15 free_tail_page_ns.
    pub free_one_page_ns: u64,
    /// One __split_vma() (vm_area_dup, anon_vma_clone, the maple tree's preallocation and
    /// store, vma_complete): a munmap whose range starts or ends inside a VMA pays one per
    /// cut. Estimate: ~1 µs. calibrate: munmap of one page from the middle of a VMA with
    /// nothing present (munmap_hole) less one from its end (munmap_tail), per call.
    pub vma_split_ns: u64,
    /// One anon_vma_chain linked into or taken out of its anon_vma's interval tree under
    /// the anon_vma's write lock, in a munmap of a VMA that has an anon_vma (vma_split_ns
    /// and munmap_vma_ns are fitted on VMAs that have none): a __split_vma() pays three
    /// (anon_vma_clone() allocates and links the new VMA's, vma_prepare() and vma_complete()
    /// take the cut VMA's out and put it back with its new range), each removed VMA one
    /// (unlink_anon_vmas() in free_pgtables(), the chain freed). Live on this host
    /// (2026-11-27): a munmap of one page from the middle of a VMA that had pages costs
    /// ~1.6 us more than from one that never had any (C loop, 1024 VMAs). Estimate: 250 ns.
    /// calibrate: munmap_hole_anon (munmap_hole on a mapping written and then emptied by
    /// MADV_DONTNEED: its anon_vma and page table stay) less munmap_hole and the walk of
    /// its PTE, over 7 (two splits and a removal).
    pub anon_vma_chain_ns: u64,
    /// munmap's work per VMA it removes beyond the split and the zap (do_vmi_munmap:
    /// vms_gather_munmap_vmas, the mmap lock, unmap_region's TLB gather and
    /// free_pgtables, vms_complete_munmap_vmas, remove_vma). Estimate: ~1 µs. calibrate:
    /// munmap_tail less syscall_ns and vma_split_ns.
    pub munmap_vma_ns: u64,
    /// Allocating a page through the buddy allocator: estimate (the per-cpu list fast path,
    /// ~200 cycles).
    pub page_alloc_ns: u64,
    /// Releasing a folio: off its LRU list and its mappings' accounting, onto the per-CPU
    /// list (free_pages_and_swap_cache / folio_put, free_frozen_page_commit with room on the
    /// list). calibrate: munmap_4k_room (munmap of present 4 KiB pages in 4 MiB pieces, each
    /// faulted back first, so the list neither fills nor drains; per page, median) less
    /// pte_walk_ns; the default is an estimate.
    pub page_free_ns: u64,
    /// A block a free moves from a full per-CPU list to the buddy lists: free_pcppages_bulk()
    /// under the zone lock, one __free_one_page() and its merges per list entry (a 4 KiB
    /// page, or a whole THP from the order-9 list; the model's page_alloc.rs decides when a
    /// list is full, as 6.18's nr_pcp_high() does). Estimate: 60 ns.
    /// calibrate: munmap_4k_drain (the same munmaps with percpu_pagelist_high_fraction at
    /// its largest, so each list holds 4 batches and every free spills) less munmap_4k_room.
    pub pcp_drain_ns: u64,
    /// Local TLB flush of a range (reclaim's unmap, a PMD split, a collapse): estimate (invlpg
    /// of a few entries).
    pub tlb_flush_ns: u64,
    /// The end of a zap (munmap, MADV_DONTNEED/FREE, exit) that cleared a present entry or
    /// freed a table: tlb_finish_mmu() flushes the gathered range (flush_tlb_mm_range) and
    /// releases the gathered pages; a zap whose mmu_gather range stayed empty (nothing
    /// present) flushes nothing. Estimate: ~0.5 us. calibrate: MADV_DONTNEED of one present
    /// 4 KiB page per call less the same call finding nothing present, less page_free_ns
    /// (dontneed_present, dontneed_none); this guest: ~1.5 us (2026-11-26), which a munmap
    /// or MADV_DONTNEED of a few pages pays whole.
    pub zap_flush_ns: u64,
    /// Each page past the first that a zap's flush invalidates one at a time: x86's
    /// flush_tlb_func() flushes a range of up to tlb_single_page_flush_ceiling (33) strides
    /// (pages; PMDs where only PMDs were cleared) with one invlpg per stride, a longer one
    /// whole (flush_tlb_local), so zap_flush_ns (calibrated on one page) is the whole flush
    /// of a range of one stride or of more than 33. Default: arch/x86/mm/tlb.c's "each
    /// single flush is about 100 ns". calibrate: MADV_DONTNEED of three present pages per
    /// call less of one (dontneed_present3, dontneed_present, paired), less two pages' zap
    /// and free (page_free_ns, pte_walk_ns), per page (this guest, 2026-12-07: 42-70 ns).
    pub tlb_flush_page_ns: u64,
    /// A TLB-shootdown IPI to another CPU: estimate (an IPI round trip, ~2-3 µs in a guest).
    pub tlb_ipi_ns: u64,

    // ---- split / migration / reclaim ----
    /// __split_huge_pmd: a PMD mapping becomes 512 PTEs (the deposited table filled, the
    /// folio's mapcounts, its queueing for the deferred split). calibrate: split_pmd_munmap
    /// (munmap of one 4 KiB page from the middle of a THP mapping, per THP) less the same
    /// munmap of a hole with nothing present (munmap_hole_anon: the syscall, two VMA splits,
    /// the removal, the anon_vma_chains and the walks, which the model charges beside it) and
    /// the TLB flush (zap_flush_ns). Before stop 57 the VMA work stayed in this figure and a
    /// partial munmap of a THP paid it twice (~2.7 us a call). The queueing of a partly
    /// unmapped folio is not charged apart: calibrate's munmap_partial_64k (a page from the
    /// middle of each 64 KiB folio, a check row) came -640 to +760 ns from munmap_hole_anon
    /// and zap_flush_ns together over four calibrations (2026-12-06), within their noise.
    pub split_pmd_ns: u64,
    /// __folio_split of an anonymous THP into 4 KiB folios: freezing it, splitting the struct
    /// pages, remapping each subpage (remove_migration_pte), the LRU and the deferred split
    /// queue; charged apart: unmapping PTEs to migration entries (split_unmap_pte_ns, a
    /// PTE-mapped folio only: a PMD mapping is frozen whole), the zero checks of the subpages
    /// (memchr_inv_4k_ns) and the zero subpages' remap to the zero page and free
    /// (split_zero_subpage_ns). calibrate: underused_0 (the underused shrinker splitting
    /// PMD-mapped THPs with 508 zero subpages, per THP) less drop_slab per THP, the
    /// shrinker's own reads, the PMD split and the zero subpages' work. The work is per
    /// subpage: an mTHP of n pages pays n/512 of it.
    pub split_folio_ns: u64,
    /// unmap_folio() -> try_to_migrate_one() for a PTE-mapped folio: each present PTE
    /// becomes a migration entry on its own (cleared and flushed, the rmap dropped), per
    /// subpage mapped. Live on this host (2026-11-26): the deferred split of partially
    /// mapped (PTE-mapped) THPs with 507 zero subpages costs ~1.0 ms per THP (32, 64 and
    /// 128 THPs by drop_caches=2: 36, 69 and ~130 ms), the underused shrinker's split of
    /// PMD-mapped ones with 508 zero subpages ~0.79 ms. Estimate: 450 ns. calibrate:
    /// split_partial (partially mapped THPs, every subpage non-zero, per THP) less drop_slab
    /// per THP, the unmapped page's free, 511 zero checks that stop at the first byte and
    /// split_folio_ns, over 511.
    pub split_unmap_pte_ns: u64,
    /// A zero subpage at the end of the split of a folio on the LRU (the deferred split and
    /// underused shrinkers): try_to_map_unused_to_zeropage() maps the shared zero page in
    /// its place (mainline since v6.12; the seed's patch clears the PTE instead), and the
    /// subpage is freed as the split ends (free_folio_and_swap_cache). Mainline leaves an
    /// isolated folio's pieces to its caller: for reclaim, reclaim_unmapped_ns (or
    /// reclaim_activate_ns with no swap; both fitted per zero subpage of a reclaim split)
    /// covers both; the seed's patch 2 frees them in the split (this cost). Estimate:
    /// 600 ns. calibrate: split_partial_zero (as split_partial, with 4 non-zero subpages:
    /// 507 zero) less split_partial, over 507, less a full zero check plus one that stops
    /// at once.
    pub split_zero_subpage_ns: u64,
    /// The part of a large folio's split that does not grow with its size: the anon_vma
    /// lock, unmap_folio()'s rmap walk and flush, the refcount freeze, the LRU and the
    /// deferred split queue; a split of n subpages charges this plus n/512 of
    /// (split_folio_ns less this). Live on this host (2026-11-26, the deferred split of
    /// partially mapped folios by drop_caches=2, per folio): 7.0 us at 16 KiB, 19.5 us at 64
    /// KiB, 62 us at 256 KiB, 239 us at 1 MiB, ~3 us + 0.9 us per subpage. Estimate: 3 us.
    /// calibrate: split_partial_64k (the same for 64 KiB folios, per folio; its samples from
    /// three windows minutes apart, calibrate_mm.rs `calibrate_split_64k`) less drop_slab
    /// per folio, the unmapped page's free and 15 zero checks, against split_folio_ns.
    pub split_folio_fixed_ns: u64,
    /// Migrating a 4 KiB folio (isolation, unmap, copy, remap, free): calibrate: vm.compact_memory
    /// of 4 KiB pages fragmented at two densities, each run's time less what the model charges
    /// the scanners for it (compact_scan_migrate_ns per migrate-scanner iteration, counted on
    /// the walk of the same memory compacted again; compact_scan_free_ns per free-scanner pfn;
    /// compact_block_ns per pageblock), summed over the runs that migrated >= 2000 pages and
    /// divided by the pages they migrated (calibrate.py `_fit_compaction`; before 2026-11-27 a
    /// least squares per scanned pfn and migrated page, 830-3164 ns over ten calibrations of
    /// one host). The free-block isolations and lock handoffs the model charges apart are
    /// inside it. Cross-check: a faulting process's direct compaction on the reference host
    /// migrates its 32-page batches at a median 2.5 us per page (host loaded).
    pub migrate_4k_ns: u64,
    /// Per pfn compaction's migrate scanner counts (compact_migrate_scanned), as `calibrate`
    /// measures it on a vm.compact_memory of compacted memory. The model's scanners charge the
    /// finer costs below (compact_scan_migrate_ns per iteration, compact_scan_free_ns,
    /// compact_block_ns); this figure is their cross-check, not charged itself.
    pub compact_scan_pfn_ns: u64,
    /// Per folio through shrink_folio_list (and per folio deactivated by shrink_active_list):
    /// isolation from the LRU, the rmap walk of folio_referenced, the folio lock, the swap
    /// slot allocation and swap-cache insertion, the writeback set-up (bio submission).
    /// calibrate: 4 KiB MADV_PAGEOUT to a swap file per page (the folio stays in the swap
    /// cache) less unmap_page_ns, the TLB flush, the PTE walk and a 512th of reclaim_pages_ns
    /// and pmd_walk_ns (one call per PMD). A folio whose pass stops short of the swap-out
    /// pays it less reclaim_swapout_ns.
    pub reclaim_scan_page_ns: u64,
    /// The part of reclaim_scan_page_ns that only a folio going on to swap pays:
    /// folio_alloc_swap()'s slot allocation and swap-cache insertion and pageout()'s
    /// writeback set-up (a folio already in the swap cache pays it too: it is written again
    /// or taken out of the cache). A pass that stops before (folio_alloc_swap() failing with
    /// no swap device or none free, a large folio split for want of a cluster, a referenced
    /// folio kept or activated, a lazyfree folio freed) and shrink_active_list()'s
    /// deactivation pay reclaim_scan_page_ns less this. None (profiles calibrated before
    /// 2026-12-07, and the default): every pass pays reclaim_scan_page_ns whole.
    /// calibrate: reclaim_scan_page_ns less noswap.pageout_4k, MADV_PAGEOUT of written 4 KiB
    /// pages with no swap device (each activated; reference host 2026-12-07: ~470 ns a page
    /// against reclaim_scan_page_ns ~2 us), less its PTE walk and a 512th of reclaim_pages_ns
    /// and pmd_walk_ns.
    pub reclaim_swapout_ns: Option<u64>,
    /// One reclaim_pages() call beyond its folios' own costs: MADV_PAGEOUT calls it once per
    /// PMD it walks (madvise_cold_or_pageout_pte_range), so a sparse range pays it per page.
    /// reclaim_folio_list's pass of shrink_folio_list (its set-up, try_to_unmap_flush, the
    /// batched free_unref_folios), the putback, and the walk of the next PTE table coming
    /// back cold after that pass (perf, 1024 PMDs of one page each against 16 of 64 pages,
    /// zram: the walker's own time ~1 us per table of 511 none entries, ~2 ns each, against
    /// the ~1 ns pte_walk_ns MADV_COLD measures over tables it has just walked).
    /// calibrate: <dev>.pageout_4k_sparse (MADV_PAGEOUT of one page per 2 MiB, per page)
    /// less <dev>.pageout_4k (512 per 2 MiB, paired by repetition), less the walk of 511
    /// more PTEs and a PMD step at pte_walk_ns and pmd_walk_ns (swap file: 3.40 us against
    /// 2.21 us a page on the reference host, 631 ns a call).
    pub reclaim_pages_ns: u64,
    /// Per PTE unmapped by try_to_unmap (its swap entry, the slot's count, the page's swap
    /// cache entry) or try_to_migrate. calibrate: zram MADV_PAGEOUT of same-filled THPs (written
    /// whole) per page, less same_ns and the folio's fixed costs / 512.
    pub unmap_page_ns: u64,
    /// __remove_mapping of a reclaimed folio: out of the swap cache. Also the zap of a swap PTE whose folio is only in the swap cache
    /// (free_swap_and_cache → __try_to_reclaim_swap). The free itself (folio_put to the
    /// free lists) is page_free_ns, charged apart. calibrate: munmap of pages still in the
    /// swap cache after a swap-file pageout (munmap_cached, the median of the region's 4 MiB
    /// pieces, each unmapped and timed apart) less swap_free_ns, pte_walk_ns and
    /// page_free_ns.
    pub remove_mapping_ns: u64,
    /// A folio that shrink_folio_list() finds unmapped and outside the swap cache: a subpage
    /// that a split for reclaim left with no mapping (remapped to the shared zero page by
    /// try_to_map_unused_to_zeropage, or zapped before). __folio_split() keeps every new
    /// folio on the reclaim list (lru_add_split_folio takes a reference), so each takes a
    /// pass of its own: folio_alloc_swap() gives it a slot and a swap-cache entry,
    /// swap_writeout() finds no swap PTE referring to them (folio_free_swap: both given
    /// back at once, no I/O), __remove_mapping() and the free (the folio's whole cost,
    /// page_free_ns included: none of the other reclaim primitives is charged for it).
    /// Estimate: ~1 µs. calibrate: MADV_PAGEOUT to a swap file of THPs whose first byte
    /// only is non-zero (each split, 511 zero subpages remapped; file.thp_pageout_best),
    /// per THP less what the model charges the rest (the scan of the THP and of its one
    /// written subpage, the PMD split, the folio split and its zero checks, the unmap,
    /// the TLB flush), per zero subpage. With no free swap slot (no swap device) the pass
    /// is reclaim_activate_ns instead (vmscan.rs split_for_reclaim).
    pub reclaim_unmapped_ns: u64,
    /// The same unmapped piece of a split for reclaim when no swap slot is left (no swap
    /// device, or all full): its pass of shrink_folio_list() ends at folio_alloc_swap()'s
    /// failure (activate_locked_split: PG_active set, pgactivate counted, the folio kept on
    /// the list), reclaim_folio_list() puts it back (folio_putback_lru: the per-CPU lru_add
    /// batch, onto the LRU under lru_lock once per batch), and the batch's drop of the last
    /// reference takes it off the LRU again and frees it (page_free_ns included).
    /// Estimate: ~0.6 µs. calibrate: MADV_PAGEOUT with no swap device of THPs whose first
    /// byte only is non-zero (noswap.thp_pageout_best: each split, its 511 zero subpages
    /// remapped) per THP, less what the model charges the rest (the scan of the THP and of
    /// its written subpage, the PMD split, the folio split and its zero checks, the written
    /// subpage's PTE, the TLB flush), per zero subpage.
    pub reclaim_activate_ns: u64,
    /// The zap of one swap PTE (free_swap_and_cache: the slot's count, the slot freed, the
    /// cluster). calibrate: munmap of swap entries on a swap file (munmap_entry) less the PTE
    /// walk.
    pub swap_free_ns: u64,
    /// The zap of one swap PTE whose slot a folio in the swap cache still holds: the count's
    /// drop alone (swap_entries_put_map_nr keeps SWAP_HAS_CACHE), the slot itself freed with
    /// the folio's others when the folio leaves the swap cache (put_swap_folio:
    /// swap_entries_free over the folio's range), the folio's reclaim being
    /// remove_mapping_ns. Unset: swap_free_ns. calibrate: from the munmap of THPs written
    /// whole to the loop device (disk.thp_munmap_best: 512 such PTEs and one folio) and of
    /// 4 KiB swap-cache pages (munmap_cached less munmap_present: one PTE and one folio),
    /// solved with remove_mapping_ns.
    pub swap_put_cached_ns: Option<u64>,
    /// free_swap_and_cache_nr()'s own cost per call, beyond its entries' (swap_free_ns or
    /// swap_put_cached_ns each): zap_nonpresent_ptes() frees the swap PTEs that
    /// swap_pte_batch() finds consecutive (the next PTE holds the next slot) with one call
    /// (get_swap_device / put_swap_device, swap_entries_put_map_nr's cluster lock, the
    /// reclaim pass over the range). A region paged out 4 KiB at a time in address order
    /// gets ascending slots and frees up to a PTE table's 512 per call; the pieces of a
    /// folio split for reclaim get theirs head first, then the last piece to the second
    /// (lru_add_split_folio's list_add_tail, shrink_folio_list taking the list's tail),
    /// one call each. Estimate: 150 ns. calibrate: munmap of 4 KiB swap-cache pages paged
    /// out one by one from the region's end (descending slots: one call per PTE) less the
    /// same pages paged out in order (munmap_cached_rev less munmap_cached), per page.
    pub swap_batch_ns: u64,
    /// do_swap_page for a page not in the swap cache, beyond the fault's entry (fault_4k_ns)
    /// and the device read: the folio allocation, swap-cache insertion (or the skip for a
    /// synchronous device), mapping, freeing the slot. calibrate: zram swap-in of same-filled
    /// pages per page less fault_4k_ns, clear_4k_ns (the fill, read_same_filled_page) and
    /// zram's slot_free_ns (zram_slot_free_notify, charged with the slot's release).
    pub swapin_ns: u64,
    /// collapse_huge_page's own work per collapse beyond copying the present pages
    /// (copy_4k_ns each): isolating 512 PTEs and folios, the new PMD, freeing the old pages.
    /// calibrate: MADV_COLLAPSE per 2 MiB of 512 present pages (collapse_2m) less 512 ×
    /// copy_4k_ns. Informational: the model charges a collapse's parts (the scans' PTE
    /// walks, the flush, each page's copy, collapse_isolate_ns and free).
    pub collapse_ns: u64,
    /// A collapse's work per present page beyond its copy (copy_4k_ns) and its free
    /// (page_free_ns): __collapse_huge_page_isolate() takes a reference, locks the folio and
    /// isolates it from the LRU (the lruvec lock, NR_ISOLATED_ANON), and
    /// __collapse_huge_page_copy_succeeded() clears its PTE, removes its rmap and puts it
    /// back (folio_putback_lru) before the release. Live on this host (2026-11-27): a
    /// MADV_COLLAPSE of 512 present pages costs 0.6-1.0 ms, of which the model charged
    /// ~0.2-0.4 ms nowhere. Estimate: 300 ns. calibrate: collapse_2m less what the model
    /// charges beside it (the call's share, the flush, and per page the copy, the free and
    /// two PTE walks), over 512.
    pub collapse_isolate_ns: u64,
    /// deferred_split_scan()'s own work per folio it takes off the deferred split queue,
    /// whatever then happens to it: folio_try_get() and the list_del under the queue's lock,
    /// the partially-mapped and mlock tests, and the folios_put() of the batch at the end
    /// (a folio it splits pays the split's costs besides). Measured on this project's VM
    /// (2026-11-29, C loop, max_ptes_none 511 so that no THP is underused): drop_caches=2
    /// with 256 queued THPs 110-126 us, with 64 56-63 us, empty 8 us: ~0.3 us a folio plus
    /// ~40 us the first scan. Estimate: 400 ns. calibrate: underused_511 (the underused
    /// shrinker at max_ptes_none 511, which splits none) less drop_slab, per THP.
    pub deferred_split_scan_ns: u64,
    /// drop_caches=2's walk of every other shrinker of the host (dentries, inodes, ...),
    /// which the model does not hold: calibrate: drop_slab (drop_caches=2 with nothing of
    /// ours to do).
    pub drop_slab_ns: u64,
    /// The transfer of a contended lock's cache line to another CPU: the fixed part of every
    /// acquisition of a shared lock (the swap device and cluster locks, the LRU lock, the
    /// swap cache); the work done under the lock is added per item. Estimate: a cross-core
    /// cache-line transfer on a two-socket server is 100-300 ns.
    pub lock_handoff_ns: u64,
    /// Per item worked on under a shared lock (a swap-map byte, a swap-table entry, a folio
    /// moved on an LRU list): how long the lock stays held for it (part of the operation's
    /// own cost; it only makes other CPUs wait). Estimate: a store and a cache-line access.
    pub lock_item_ns: u64,

    // ---- compaction (mm/compaction.c) ----
    /// One step of the migrate scanner (isolate_migratepages_block: one struct page
    /// looked at; a free buddy or a compound folio is stepped over in one step).
    /// calibrate: a vm.compact_memory of memory just compacted (next to nothing to migrate),
    /// its time less the model's other charges (free-scanner pfns, pageblocks, the few pages
    /// migrated) over its iterations, which calibrate counts from /proc/kpageflags read just
    /// before and the ranges a traced run of the same walk took
    /// (mm_compaction_isolate_migratepages; calibrate_mm.rs migrate_scan_steps: 9-14 ns on
    /// the reference host, ~1/3 of an iteration per pfn counted). compact_migrate_scanned
    /// counts a skipped buddy's or folio's pfns, not the steps. Default 8 ns: an estimate.
    pub compact_scan_migrate_ns: u64,
    /// One step of the free scanner (isolate_freepages_block, with its stride). Estimate;
    /// not calibrated (see compact_scan_migrate_ns).
    pub compact_scan_free_ns: u64,
    /// A pageblock considered by a scanner's block loop (pageblock_pfn_to_page, the skip
    /// bit, the migratetype). Estimate; not calibrated.
    pub compact_block_ns: u64,
    /// A free-list entry examined by fast_find_migrateblock / fast_isolate_freepages
    /// (a cache-cold struct page under the zone lock). Estimate; not calibrated. The
    /// reference host's direct compactions (tracepoint timestamps of compaction-fill-p0's
    /// fault phase, docs/compaction.md "Direct compaction's time, traced") fit 44-200 ns
    /// per entry, too collinear with the other work to pin down.
    pub compact_freelist_ns: u64,
    /// Isolating one page from its LRU list (folio_get, lru_lock, list removal): how long
    /// the node's lru_lock stays held for it (the compactor's own cost for it is inside
    /// migrate_4k_ns, fitted per migrated page). Estimate: a cold struct page and a list
    /// removal.
    pub compact_isolate_ns: u64,

    // ---- memory access and TLB (the TLB model) ----
    /// Cycles an access costs when its translation hits the L1 dTLB and its line the
    /// cache: the access loop's own work (the live runner's PRNG, the address, one load).
    /// calibrate: access_rand_256k (random reads over 256 KiB of THP-mapped memory, in
    /// cache, timed through the live runner's own loop, child.rs access_stream; ~3-4 ns on
    /// the reference host) times cpu_ghz.
    pub access_cycles: f64,
    /// Extra cycles for an L1 dTLB miss that hits the STLB: estimate (Intel: ~7 cycles).
    pub stlb_hit_cycles: f64,
    /// Extra cycles for a page walk (STLB miss), 4 KiB and 2 MiB translations: estimate
    /// (walks mostly hitting the caches; a 2 MiB walk is one level shorter).
    pub walk_4k_cycles: f64,
    pub walk_2m_cycles: f64,
    /// A load or store of an access stream whose 64-byte line is not in the last-level
    /// cache (tlb.rs DataCache): the memory access the core waits for, as the access loop
    /// overlaps independent misses. calibrate: access_rand_256m less access_rand_256k
    /// (random reads over 256 MiB and over 256 KiB of THP-mapped memory, both TLB hits, per
    /// read, through the live runner's own loop: how many misses the core keeps in flight
    /// depends on the loop's instructions, and a simpler copy of it measured ~30 % less):
    /// 32-62 ns on the reference host, 44 pooled over nine calibrations.
    pub cache_miss_ns: u64,
    /// The last-level cache capacity the access streams get (0: no data-cache model). On a
    /// guest it is the share of the host's L3 the neighbours leave, not the L3 lscpu shows
    /// (32 MiB on the reference host, whose random reads miss from ~8 MiB up: 3.1 MiB).
    /// calibrate: access_rand_16m and access_rand_32m: each buffer's size times the share
    /// of its reads that hit (their time less access_rand_256k, over cache_miss_ns), median.
    /// 0 or at least MIN_CACHE_BYTES (the model's cache keeps 32-bit tags: a line number
    /// over the number of sets, which at this size fits for a 2 TiB machine).
    pub cache_bytes: u64,

    // ---- virtual machine ----
    /// First touch of a 2 MiB block the guest reported free to the host (free page
    /// reporting): calibrate: refault_reported_2m (blocks left idle past the reporting delay,
    /// less a warm THP fault).
    pub refault_reported_2m_ns: u64,

    // ---- swap devices ----
    /// zram per compressor (see CompressorCosts).
    pub zram: BTreeMap<String, CompressorCosts>,
    /// A block device on the host's disk (`disk`): the reference host's virtio disk through a
    /// loop device: calibrate: disk.* (the write bandwidth from MADV_PAGEOUT of THPs of random
    /// data and the writeback drain after it, per 2 MiB: swap writes through this queue reach
    /// several GB/s where O_DIRECT requests from 4 threads measure ~0.5 GB/s; the read
    /// bandwidth from 2 MiB requests from 4 threads, single 4 KiB requests for latency, the
    /// loop device's nr_requests for the queue depth). The
    /// queue's limits are the loop device's on 6.18 (read on the reference host,
    /// 2026-11-23): max_sectors_kb 1280 (loop's max_hw_sectors 2560), max_segments 128
    /// (BLK_MAX_SEGMENTS: loop sets none), wbt on with
    /// wbt_lat_usec 2000 (wbt_init runs when the loop device is registered, before
    /// loop_configure marks it rotational, so it keeps the non-rotational 2 ms target), write
    /// cache "write back" (loop sets BLK_FEAT_WRITE_CACHE over a file that has fsync).
    pub disk: DeviceCosts,
    /// An NVMe SSD: estimate from a datacenter NVMe drive's data sheet (~80 µs read, ~30 µs
    /// write latency; 2.5 / 1.8 GB/s); queue depth: the NVMe driver's nr_requests (1023);
    /// max_sectors_kb 512 (a common MDTS), max_segments 128 (estimate), wbt's non-rotational default (2 ms), no volatile
    /// write cache (power-loss protected datacenter drives report "write through").
    pub ssd: DeviceCosts,
    /// Persistent memory (or a RAM-backed pmem device as in seed 003): estimate (~1 µs,
    /// ~10 / 6 GB/s), served synchronously by the CPU (a bio-based driver: no wbt, no split).
    pub pmem: DeviceCosts,
    /// A swap file on the host's disk: calibrate: file.* (O_DIRECT on a file on the same
    /// filesystem; swap I/O goes straight to the file's blocks; the disk's nr_requests). The
    /// queue's limits are the filesystem's disk's (the reference host's virtio disk,
    /// rotational: max_sectors_kb 4096, max_segments 254 (virtio-blk's seg_max), wbt_lat_usec 75000 (wbt's rotational default), write
    /// cache "write back").
    pub file: DeviceCosts,

    /// Spread of each measured primitive over repetitions (calibrated profiles): name -> relative stddev.
    pub spread: BTreeMap<String, f64>,
}

impl Default for CostProfile {
    fn default() -> Self {
        let mut zram = BTreeMap::new();
        zram.insert("lzo-rle".to_string(), CompressorCosts::default());
        zram.insert("lzo".to_string(), CompressorCosts { sparse_compress_ns: 1_400, ..CompressorCosts::default() });
        zram.insert(
            "lz4".to_string(),
            CompressorCosts {
                sparse_compress_ns: 1_800,
                text_compress_ns: 12_000,
                random_compress_ns: 3_600,
                sparse_decompress_ns: 1_500,
                text_decompress_ns: 3_000,
                text_bytes: 2_400,
                sparse_bytes: 128,
                ..CompressorCosts::default()
            },
        );
        CostProfile {
            name: "default".into(),
            source: "documented defaults (each field's source is in crates/workload/src/costs.rs; run `thplab calibrate` for this host)".into(),
            cpu_ghz: 2.5,
            host_speed: 1.0,
            probe_fault_4k_ns: None,
            probe_cpu_ns: None,
            speed: None,
            fault_4k_ns: 700,
            fault_2m_ns: 2_500,
            fault_zero_ns: 500,
            clear_4k_ns: 160,
            clear_2m_ns: 85_000,
            clear_folio_4k_ns: 166,
            copy_4k_ns: 250,
            copy_2m_ns: 140_000,
            memchr_inv_4k_ns: 350,
            touch_page_ns: 60,
            touch_after_fault_ns: None,
            fill_byte_4k_ns: 100,
            fill_text_4k_ns: 200,
            fill_random_4k_ns: 500,
            syscall_ns: 250,
            sleep_wake_ns: 60_000,
            pte_walk_ns: 12,
            zap_zero_pte_ns: 10,
            pte_alloc_ns: 500,
            pmd_walk_ns: 20,
            free_tail_page_ns: 14,
            free_one_page_ns: 500,
            vma_split_ns: 1_000,
            anon_vma_chain_ns: 250,
            munmap_vma_ns: 1_000,
            page_alloc_ns: 90,
            page_free_ns: 80,
            pcp_drain_ns: 60,
            tlb_flush_ns: 150,
            zap_flush_ns: 500,
            tlb_flush_page_ns: 100,
            tlb_ipi_ns: 2_500,
            split_pmd_ns: 3_000,
            split_folio_ns: 12_000,
            split_folio_fixed_ns: 3_000,
            split_unmap_pte_ns: 450,
            split_zero_subpage_ns: 600,
            migrate_4k_ns: 900,
            compact_scan_pfn_ns: 12,
            compact_scan_migrate_ns: 8,
            compact_scan_free_ns: 6,
            compact_block_ns: 15,
            compact_freelist_ns: 40,
            compact_isolate_ns: 100,
            reclaim_scan_page_ns: 60,
            reclaim_swapout_ns: None,
            reclaim_pages_ns: 630,
            unmap_page_ns: 150,
            remove_mapping_ns: 700,
            reclaim_unmapped_ns: 1_000,
            reclaim_activate_ns: 600,
            swap_free_ns: 50,
            swap_put_cached_ns: None,
            swap_batch_ns: 150,
            zero_filled_4k_ns: None,
            swapin_ns: 2_300,
            collapse_ns: 400_000,
            collapse_isolate_ns: 300,
            deferred_split_scan_ns: 400,
            drop_slab_ns: 2_000_000,
            lock_handoff_ns: 150,
            lock_item_ns: 10,
            access_cycles: 9.5,
            stlb_hit_cycles: 7.0,
            walk_4k_cycles: 30.0,
            walk_2m_cycles: 22.0,
            cache_miss_ns: 32,
            cache_bytes: 3_200 << 10,
            refault_reported_2m_ns: 2_000_000,
            zram,
            disk: DeviceCosts { read_latency_ns: 65_000, write_latency_ns: 57_000, random_penalty_ns: 0, read_mb_per_s: 900, write_mb_per_s: 1_300, queue_depth: 128, max_sectors_kb: 1_280, max_segments: 128, wbt_lat_usec: 2_000, write_cache: true, write_segment_ns: 0 },
            ssd: DeviceCosts { read_latency_ns: 80_000, write_latency_ns: 30_000, random_penalty_ns: 0, read_mb_per_s: 2_500, write_mb_per_s: 1_800, queue_depth: 1_023, max_sectors_kb: 512, max_segments: 128, wbt_lat_usec: 2_000, write_cache: false, write_segment_ns: 0 },
            pmem: DeviceCosts { read_latency_ns: 1_000, write_latency_ns: 1_500, random_penalty_ns: 0, read_mb_per_s: 10_000, write_mb_per_s: 6_000, queue_depth: 1, max_sectors_kb: 0, max_segments: 0, wbt_lat_usec: 0, write_cache: false, write_segment_ns: 0 },
            file: DeviceCosts { read_latency_ns: 28_000, write_latency_ns: 28_000, random_penalty_ns: 0, read_mb_per_s: 800, write_mb_per_s: 800, queue_depth: 256, max_sectors_kb: 4_096, max_segments: 254, wbt_lat_usec: 75_000, write_cache: true, write_segment_ns: 0 },
            spread: BTreeMap::new(),
        }
    }
}

impl CostProfile {
    /// Parse a TOML profile; missing fields keep defaults, unknown fields are errors.
    pub fn from_toml(text: &str) -> Result<CostProfile, String> {
        toml::from_str(text).map_err(|e| format!("cost profile: {e}"))
    }
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("serialise costs")
    }
    pub fn validate(&self) -> Result<(), String> {
        for (n, d) in [("disk", &self.disk), ("ssd", &self.ssd), ("pmem", &self.pmem), ("file", &self.file)] {
            if d.queue_depth == 0 {
                return Err(format!("cost profile: {n}.queue_depth must be at least 1"));
            }
        }
        if !(self.cpu_ghz > 0.1 && self.cpu_ghz < 20.0) {
            return Err("cost profile: cpu_ghz must be between 0.1 and 20".into());
        }
        if !(self.host_speed > 0.1 && self.host_speed < 10.0) {
            return Err("cost profile: host_speed must be between 0.1 and 10".into());
        }
        for v in [self.access_cycles, self.stlb_hit_cycles, self.walk_4k_cycles, self.walk_2m_cycles] {
            if !(v.is_finite() && v >= 0.0) {
                return Err("cost profile: cycle figures must be finite and non-negative".into());
            }
        }
        if self.cache_bytes != 0 && self.cache_bytes < MIN_CACHE_BYTES {
            return Err(format!(
                "cost profile: cache_bytes must be 0 (no data-cache model) or at least {MIN_CACHE_BYTES}"
            ));
        }
        Ok(())
    }
    /// The profile as charged at its host_speed (which comes back 1): every `*_ns` figure at
    /// the top and of each compressor times host_speed, and cpu_ghz over it (the TLB's and
    /// the cache's cycles). Not scaled: what the CPU's speed does not set, sleep_wake_ns (the
    /// timer slack), refault_reported_2m_ns (the hypervisor backing a block) and the
    /// devices' figures (disk, ssd, pmem, file).
    pub fn at_host_speed(&self) -> CostProfile {
        const UNSCALED: [&str; 2] = ["sleep_wake_ns", "refault_reported_2m_ns"];
        let f = self.host_speed;
        if f == 1.0 {
            return self.clone();
        }
        fn scale(t: &mut serde_json::Map<String, serde_json::Value>, f: f64, skip: &[&str]) {
            for (k, v) in t.iter_mut() {
                if let Some(n) = v.as_u64().filter(|_| k.ends_with("_ns") && !skip.contains(&k.as_str())) {
                    *v = serde_json::Value::from((n as f64 * f).round() as u64);
                }
            }
        }
        let mut v = serde_json::to_value(self).expect("a profile serialises");
        let top = v.as_object_mut().expect("a profile is a table");
        scale(top, f, &UNSCALED);
        for c in top.get_mut("zram").and_then(|z| z.as_object_mut()).into_iter().flat_map(|z| z.values_mut()) {
            if let Some(c) = c.as_object_mut() {
                scale(c, f, &[]);
            }
        }
        let mut out: CostProfile = serde_json::from_value(v).expect("a scaled profile deserialises");
        out.cpu_ghz = self.cpu_ghz / f;
        out.host_speed = 1.0;
        out
    }
    pub fn cycles_to_ns(&self, cycles: f64) -> f64 {
        cycles / self.cpu_ghz
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_cache_too_small_for_its_tags_is_refused() {
        let mut c = CostProfile { cache_bytes: MIN_CACHE_BYTES - 1, ..CostProfile::default() };
        assert!(c.validate().unwrap_err().contains("cache_bytes"));
        c.cache_bytes = 0;
        assert!(c.validate().is_ok());
        c.cache_bytes = MIN_CACHE_BYTES;
        assert!(c.validate().is_ok());
    }
    #[test]
    fn host_speed_scales_the_cpu_side_and_nothing_else() {
        let d = CostProfile::default();
        assert_eq!(d.at_host_speed(), d);
        let s = CostProfile { host_speed: 1.5, ..d.clone() }.at_host_speed();
        assert_eq!(s.host_speed, 1.0);
        assert_eq!(s.fault_4k_ns, d.fault_4k_ns * 3 / 2);
        assert_eq!(s.clear_2m_ns, d.clear_2m_ns * 3 / 2);
        assert_eq!(s.zram["lz4"].text_compress_ns, d.zram["lz4"].text_compress_ns * 3 / 2);
        assert_eq!(s.zram["lz4"].text_bytes, d.zram["lz4"].text_bytes);
        assert_eq!(s.sleep_wake_ns, d.sleep_wake_ns);
        assert_eq!(s.refault_reported_2m_ns, d.refault_reported_2m_ns);
        assert_eq!(s.disk, d.disk);
        assert_eq!(s.cache_bytes, d.cache_bytes);
        // a cycle costs 1.5x the time
        assert!((s.cycles_to_ns(30.0) - 1.5 * d.cycles_to_ns(30.0)).abs() < 1e-9);
        let bad = CostProfile { host_speed: 0.0, ..d };
        assert!(bad.validate().unwrap_err().contains("host_speed"));
    }
    #[test]
    fn toml_roundtrip_and_partial() {
        let d = CostProfile::default();
        let t = d.to_toml();
        assert_eq!(CostProfile::from_toml(&t).unwrap(), d);
        let p = CostProfile::from_toml("clear_4k_ns = 99\n").unwrap();
        assert_eq!(p.clear_4k_ns, 99);
        assert_eq!(p.clear_2m_ns, d.clear_2m_ns);
        assert!(CostProfile::from_toml("bogus = 1\n").unwrap_err().contains("bogus"));
    }
}
