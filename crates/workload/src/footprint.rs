//! The memory guard's estimate: the most memory a workload can hold at once.
//!
//! Each process is followed op by op with a bitmap of the 4 KiB pages that *may* be resident:
//! a touch (write, read, access, populate, MADV_COLLAPSE, MADV_WILLNEED, move_pages) marks the
//! whole 2 MiB blocks it reaches (a THP fault may fill a block from one byte), and
//! munmap / MADV_DONTNEED / MADV_FREE / MADV_PAGEOUT clear the pages they drop. kalloc adds
//! its bytes, kfree removes them. A process's figure is its peak; processes run concurrently,
//! so the workload's figure is the sum of the peaks (an upper bound).
//!
//! Pages dropped from a partly unmapped THP are freed only when the THP is split (the
//! deferred split shrinker: memory pressure or drop_caches), so they count as reclaimable,
//! not held, here.
//!
//! The live runner refuses a run whose footprint (plus a hugetlb pool it asks for) exceeds
//! a share of MemAvailable, and on a guest with free page reporting backs that many bytes
//! just before the run (host::back_free_memory); the model does the same back-fill
//! (engine/backfill.rs, `Kernel::back_free_memory`), so both take `run_footprint`.

#[cfg(test)]
use crate::workload::parse_workload;
use crate::workload::{walk_ops, Advice, Op, Workload};
use std::collections::HashMap;

const PAGE: u64 = 4096;
const BLOCK_PAGES: u64 = 512;

struct Region {
    pages: u64,
    bits: Vec<u64>,
    resident: u64,
}

impl Region {
    fn new(size: u64) -> Region {
        let pages = size / PAGE;
        Region { pages, bits: vec![0; pages.div_ceil(64) as usize], resident: 0 }
    }
    /// Mark pages [first, last) and the 2 MiB blocks around them.
    fn touch(&mut self, first: u64, last: u64) {
        let a = first / BLOCK_PAGES * BLOCK_PAGES;
        let b = (last.div_ceil(BLOCK_PAGES) * BLOCK_PAGES).min(self.pages);
        self.set(a, b, true);
    }
    fn drop_pages(&mut self, first: u64, last: u64) {
        self.set(first, last.min(self.pages), false);
    }
    fn set(&mut self, a: u64, b: u64, on: bool) {
        let mut p = a;
        while p < b {
            let w = (p / 64) as usize;
            let lo = p % 64;
            let n = (64 - lo).min(b - p);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            let before = self.bits[w].count_ones() as u64;
            if on {
                self.bits[w] |= mask;
            } else {
                self.bits[w] &= !mask;
            }
            let after = self.bits[w].count_ones() as u64;
            self.resident = self.resident + after - before;
            p += n;
        }
    }
}

/// The ops in the order they run, a repeat's body at most twice: each op sets or clears
/// fixed ranges, so a body's effect is idempotent and its second pass reaches every state
/// later passes reach.
fn flatten(ops: &[Op]) -> Vec<&Op> {
    let mut v = vec![];
    for op in ops {
        if let Op::Repeat { count, ops } = op {
            for _ in 0..(*count).min(2) {
                v.extend(flatten(ops));
            }
        } else {
            v.push(op);
        }
    }
    v
}

/// The peak bytes a workload can hold at once (see the module doc).
pub fn peak_bytes(w: &Workload) -> u64 {
    let mut total = 0;
    for p in &w.processes {
        let mut regions: HashMap<&str, Region> = HashMap::new();
        let mut ksets: HashMap<&str, u64> = HashMap::new();
        let mut peak = 0u64;
        for op in flatten(&p.ops) {
            let range = op.range();
            let region = range.and_then(|r| regions.get_mut(r.region.as_str()));
            match op {
                Op::Mmap { name, size, populate, .. } => {
                    let mut r = Region::new(size.0);
                    if *populate {
                        r.touch(0, r.pages);
                    }
                    regions.insert(name.as_str(), r);
                }
                Op::Kalloc { name, size, .. } => {
                    ksets.insert(name.as_str(), size.0);
                }
                Op::Kfree { range } => {
                    if let Some(k) = ksets.get_mut(range.region.as_str()) {
                        let freed = range.total_len(*k);
                        *k = k.saturating_sub(freed);
                    }
                }
                _ => {
                    let (Some(r), Some(range)) = (region, range) else { continue };
                    let size = r.pages * PAGE;
                    let touch = match op {
                        Op::Write { .. } | Op::Read { .. } | Op::Access { .. } | Op::MovePages { .. } => Some(true),
                        Op::Munmap { .. } => Some(false),
                        Op::Madvise { advice, .. } => match advice {
                            Advice::Collapse | Advice::Willneed => Some(true),
                            Advice::Dontneed | Advice::Free | Advice::Pageout => Some(false),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(t) = touch {
                        range.for_each_piece(size, |off, len| {
                            let (a, b) = (off / PAGE, (off + len).div_ceil(PAGE));
                            if t {
                                r.touch(a, b)
                            } else {
                                r.drop_pages(a, b)
                            }
                        });
                    }
                }
            }
            let now: u64 = regions.values().map(|r| r.resident * PAGE).sum::<u64>() + ksets.values().sum::<u64>();
            peak = peak.max(now);
        }
        total += peak;
    }
    total
}

/// Does any process of `w` call MADV_COLLAPSE? Such a run allocates PMD THPs even where
/// the knobs give its faults none; the live runner's back-fill then collapses what it
/// faults, so that 2 MiB blocks are backed too (crates/live/src/host.rs back_free_memory).
pub fn uses_madv_collapse(w: &Workload) -> bool {
    let mut found = false;
    for p in &w.processes {
        walk_ops(&p.ops, &mut |_, op| {
            found |= matches!(op, Op::Madvise { advice: Advice::Collapse, .. });
        });
    }
    found
}

/// The bytes a run backs before it starts: its peak footprint plus the largest hugetlb pool
/// (`vm.nr_hugepages`, 2 MiB pages) it starts with (`initial_pool`) or sets on the way.
pub fn run_footprint(w: &Workload, initial_pool: u64) -> u64 {
    fn sets(ops: &[Op], max: &mut u64) {
        for op in ops {
            match op {
                Op::Repeat { ops, .. } => sets(ops, max),
                Op::Set { knob, value } => {
                    let canon = crate::knobs::check_assignment(knob, &value.to_string().replace('"', ""));
                    if let Ok((c, v)) = canon {
                        if c == "vm.nr_hugepages" {
                            *max = (*max).max(v.parse().unwrap_or(0));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut pool = initial_pool;
    for p in &w.processes {
        sets(&p.ops, &mut pool);
    }
    peak_bytes(w) + pool * (2 << 20)
}

/// The 4 KiB pages the live runner holds from its CPU's per-CPU list while its back-fill
/// of `backfill_bytes` runs (crates/live/src/host.rs `hold_pcp_room`; the model replays
/// it, crates/model/src/engine/backfill.rs), given that list as /proc/zoneinfo shows it
/// (`count`, `high`, `batch`): enough that the back-fill's THPs, freed as its process
/// exits, all fit under the list's high with room to spare, so that the run's first
/// faults take exactly those blocks back, backed.
///
/// Why: a list at its high (the small-block step's frees fill it: 336 of 337 thousand
/// pages) gives each freed THP to free_pcppages_bulk(), which drains the THP list from its
/// tail first (mm/page_alloc.c: "Ensure requested pindex is drained first"), up to
/// pcp->free_count pages (nr_pcp_free(): 2,016 once frees run on). Live, 30 of a 64-THP
/// back-fill's blocks then went to the buddy lists, and the run's faults met, under
/// them, the spare of the back-fill's last refill (nr_pcp_alloc() takes two THPs at a
/// time), a reported block's other half the host had discarded: one 4.6 ms refault in a
/// 64-THP phase of ~5.5 ms, in 3-5 of 9 runs (docs/page_reporting.md).
///
/// The room: the back-fill's pages, plus the most one decay_pcp_high() tick lowers high
/// by while the count is low (an eighth of it; vmstat_update runs it every second), plus
/// a free_pcppages_bulk()'s most (`batch << CONFIG_PCP_BATCH_SCALE_MAX`). Nothing when
/// the list has that room already, or when it could not hold the back-fill at all.
pub fn pcp_room_pages(count: u64, high: u64, batch: u64, backfill_bytes: u64) -> u64 {
    let need = backfill_bytes.div_ceil(PAGE) + (batch << 5) + high / 8;
    if need >= high {
        return 0;
    }
    (count + need).saturating_sub(high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_held_is_what_a_full_list_lacks_for_the_back_fill() {
        // a full list: the back-fill (64 THPs, 32,768 pages), a decay tick, a bulk free
        assert_eq!(pcp_room_pages(336_184, 337_141, 63, 128 << 20), 336_184 + 32_768 + 2_016 + 42_142 - 337_141);
        // room enough already
        assert_eq!(pcp_room_pages(10_000, 337_141, 63, 128 << 20), 0);
        // a back-fill the list could never hold
        assert_eq!(pcp_room_pages(336_184, 337_141, 63, 2 << 30), 0);
        assert_eq!(pcp_room_pages(0, 0, 1, 2 << 20), 0);
    }

    fn wl(ops: &str) -> Workload {
        parse_workload(&format!(r#"{{"processes":[{{"name":"p","ops":[{ops}]}}]}}"#)).unwrap()
    }

    #[test]
    fn madv_collapse_is_found_inside_repeats() {
        let m = |a: &str| {
            format!(r#"{{"op":"mmap","name":"m","size":"4M"}},{{"op":"madvise","region":"m","advice":"{a}"}}"#)
        };
        assert!(!uses_madv_collapse(&wl(&m("hugepage"))));
        assert!(uses_madv_collapse(&wl(&m("collapse"))));
        let rep = r#"{"op":"mmap","name":"m","size":"4M"},{"op":"repeat","count":2,"ops":[{"op":"madvise","region":"m","advice":"collapse"}]}"#;
        assert!(uses_madv_collapse(&wl(rep)));
    }

    #[test]
    fn fragmenting_then_eating_counts_what_is_kept() {
        // 1 GiB written page by page, 3 of every 4 pages dropped, then 512 MiB of THP faults:
        // the peak is the 1 GiB before the drop, not the 1.5 GiB mapped.
        let w = wl(r#"{"op":"mmap","name":"f","size":"1G"},{"op":"write","region":"f"},
            {"op":"madvise","region":"f","advice":"dontneed","every":"16K","offset":"4K","length":"12K"},
            {"op":"mmap","name":"e","size":"512M"},{"op":"write","region":"e","every":"2M","length":"4K"}"#);
        assert_eq!(peak_bytes(&w), 1 << 30);
        let w = wl(r#"{"op":"mmap","name":"f","size":"1G"},{"op":"write","region":"f"},
            {"op":"madvise","region":"f","advice":"dontneed","every":"16K","offset":"4K","length":"12K"},
            {"op":"mmap","name":"e","size":"1G"},{"op":"write","region":"e","every":"2M","length":"4K"}"#);
        assert_eq!(peak_bytes(&w), (1 << 30) + (256 << 20));
    }

    #[test]
    fn a_touch_counts_its_whole_2m_block_and_mmap_alone_nothing() {
        let w = wl(r#"{"op":"mmap","name":"f","size":"64M"},{"op":"read","region":"f","every":"4M","length":"4K"}"#);
        assert_eq!(peak_bytes(&w), 16 * (2 << 20));
        let w = wl(r#"{"op":"mmap","name":"f","size":"64M"}"#);
        assert_eq!(peak_bytes(&w), 0);
        let w = wl(r#"{"op":"mmap","name":"f","size":"64M","populate":true},{"op":"munmap","region":"f"}"#);
        assert_eq!(peak_bytes(&w), 64 << 20);
    }
}
