//! The free lists of a machine that has been running (not a kernel mechanism: the start
//! state the live runner finds, given to the model as `MachineSpec::buddyinfo`).
//!
//! A just-booted kernel has its free memory in MAX_PAGE_ORDER blocks (memblock_free_all()
//! hands memory to the buddy allocator in the largest aligned blocks). A guest that has run
//! a while has, besides those, free blocks of every smaller order whose buddies the
//! kernel's and the other tenants' memory holds: ~0.7-3 GiB in blocks below
//! pageblock_order on the reference host (docs/page_reporting.md, "The small free blocks").
//! They matter because `__rmqueue_smallest()` takes the smallest order that fits first: the
//! 4 KiB faults of a run take those blocks before they split a 2 MiB one. The free 2 MiB
//! blocks whose buddy is in use (order 9) are laid out the same way (since 2026-11-29): the
//! first THP faults take them before they split a 4 MiB block, and on an idle guest they
//! are reported blocks (compaction-frag's runs: 113 of them).
//!
//! `Kernel::hold_small_free_blocks` lays them out: it takes MAX_PAGE_ORDER blocks off the
//! free lists (spread evenly over the zone), holds every page as the kernel's
//! (NR_KERNEL_MISC: not on an LRU, not movable, as the slab and the other tenants' memory
//! compaction cannot move), and frees back, in each block, one block of each order still
//! wanted with its buddy held: a region of 2^(o+1) pages frees its first half as an order-o
//! block and recurses into the second (whose held page keeps the first from merging), so a
//! MAX_PAGE_ORDER block gives one free block of each order 9..0 for a single held page while
//! every order is still wanted. What is left of the last block when every order has its count
//! stays held.
//!
//! Where the live runner read the pages in use page by page (`MachineSpec::in_use`,
//! kernel.in_use_prefill), `Kernel::hold_in_use` holds exactly those instead: the free
//! blocks then lie where the live machine's lie, which the layout above cannot know. It
//! matters to compaction: on the reference host the pages on an LRU lie packed in the top
//! twentieth of zone Normal (where compaction's free scanner starts, so where compactions
//! moved them), the kernel's own in the bottom twentieth, and a proactive compaction's
//! migrate scanner, which starts at the bottom, reaches neither; the layout's one held page
//! per 4 MiB block, spread evenly, left 251 pageblocks with a single page after
//! compaction-fill-p60's settle phase, each beside a free order-9 block that the fault
//! phase then refaulted from the host (docs/page_reporting.md, "The pages in use as
//! found").
//!
//! The lists' order. Both leave each free list in the order their frees put the blocks on
//! it (to its head, or its tail where buddy_merge_likely() says so), not shuffled: 6.18
//! shuffles free lists only with page_alloc.shuffle=1 (shuffle_free_memory()), and the
//! reference host runs with it off (/sys/module/page_alloc/parameters/shuffle: N). The
//! order decides where a run's first 4 KiB faults land: they take the order-0 blocks, then
//! the order-1 ones, in list order. Shuffled, compaction-fill-p60's fragment phase (19 GiB
//! written, then 3 of every 4 pages per 16 KiB dropped) mapped its 16 KiB groups onto
//! pages scattered over the zone and left 4,180 free order-3 blocks in zone Normal where
//! live 6.18 leaves 364; in list order the model leaves 349 (and 38,758 order-2 blocks
//! against live 34,588, where shuffled gave 28,469; stop 48, out/vk-h40). A booted aged
//! machine with no record of its pages (`Kernel::new`) still has its boot lists shuffled.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::{free_order, is_free_head, make_kernel, make_kernel_movable, Pfn};
use crate::mmzone::{MIGRATE_MOVABLE, MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE};
use crate::page_alloc::aligned_blocks;
use crate::vmstat::NodeStat;
use thplab_workload::machine::PcpFound;

/// The free block counts of orders below MAX_PAGE_ORDER of `node`'s `zone` in a
/// /proc/buddyinfo text (`Node 0, zone   Normal  15218  14278 ...`): the small blocks and
/// the free 2 MiB blocks whose buddy is in use (113 of them on the reference host in
/// compaction-frag's runs, where they are the first THP faults' blocks: __rmqueue_smallest()
/// takes order 9 before it splits an order-10 block; idle, the guest has reported them).
pub fn small_free_blocks(buddyinfo: &str, node: usize, zone: &str) -> Option<[u64; MAX_PAGE_ORDER as usize]> {
    let counts = thplab_workload::machine::buddyinfo_row(buddyinfo, node as u32, zone)?;
    counts.get(..MAX_PAGE_ORDER as usize)?.try_into().ok()
}

/// The free blocks (pfn, order) the layout gives a region of 2^(level+1) pages at `pfn`,
/// taking from `want`.
fn lay_out(pfn: u64, level: i32, want: &mut [u64], out: &mut Vec<(u64, u32)>) {
    if level < 0 || want.iter().all(|&n| n == 0) {
        return; // held
    }
    let half = 1u64 << level;
    if (level as usize) < want.len() && want[level as usize] > 0 {
        want[level as usize] -= 1;
        out.push((pfn, level as u32));
        lay_out(pfn + half, level - 1, want, out);
    } else {
        lay_out(pfn, level - 1, want, out);
        lay_out(pfn + half, level - 1, want, out);
    }
}

/// The free block counts below MAX_PAGE_ORDER of each migratetype of `node`'s `zone` in a
/// /proc/pagetypeinfo text (`Node    0, zone   Normal, type    Unmovable      15 ...`):
/// Unmovable, Movable and Reclaimable (HighAtomic's reserve and Isolate are left out).
pub fn small_free_blocks_by_type(
    pagetypeinfo: &str,
    node: usize,
    zone: &str,
) -> Option<Vec<(u8, [u64; MAX_PAGE_ORDER as usize])>> {
    let mut v = vec![];
    for l in pagetypeinfo.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        let [_node, n, _zone, z, "type", ty, counts @ ..] = t.as_slice() else { continue };
        if n.trim_end_matches(',').parse::<usize>().ok() != Some(node) || z.trim_end_matches(',') != zone {
            continue;
        }
        let mt = match *ty {
            "Unmovable" => MIGRATE_UNMOVABLE,
            "Movable" => MIGRATE_MOVABLE,
            "Reclaimable" => MIGRATE_RECLAIMABLE,
            _ => continue,
        };
        let c: Vec<u64> = counts.iter().filter_map(|x| x.parse().ok()).collect();
        v.push((mt, c.get(..MAX_PAGE_ORDER as usize)?.try_into().ok()?));
    }
    (!v.is_empty()).then_some(v)
}

/// What a run of an in-use text holds (host.rs pages_in_use()).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InUse {
    /// `m`: pages on an LRU
    Lru,
    /// `u`: other pages with flags (slab, page tables, ...)
    Kernel,
    /// `p`: pages with no flags: on a per-CPU list (order 0, or a whole THP), in a block page
    /// reporting had taken off the free lists, or bare kernel pages (few: docs/page_reporting.md
    /// "Flagless pages")
    Flagless,
}

/// The runs of an in-use text (`start len kind` lines; host.rs pages_in_use()): (start,
/// len, kind), in pfn order. A line that does not parse is an error naming it.
pub fn in_use_runs(text: &str) -> Result<Vec<(u64, u64, InUse)>, String> {
    let mut v = vec![];
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let t: Vec<&str> = l.split_whitespace().collect();
        let kind = |k: &str| match k {
            "m" => Some(InUse::Lru),
            "u" => Some(InUse::Kernel),
            "p" => Some(InUse::Flagless),
            _ => None,
        };
        let run = match t.as_slice() {
            [s, n, k] => s.parse().ok().zip(n.parse().ok()).zip(kind(k)).map(|((s, n), k)| (s, n, k)),
            _ => None,
        };
        v.push(run.ok_or_else(|| format!("line {}: expected `start len m|u|p`, got {l:?}", i + 1))?);
    }
    v.sort_unstable();
    Ok(v)
}

/// The pageblock counts of each migratetype of `node`'s `zone` in a /proc/pagetypeinfo
/// text's `Number of blocks type` table (`Node 0, zone   Normal     62  10652  38  0  0`):
/// (unmovable, reclaimable).
pub fn pageblock_type_counts(pagetypeinfo: &str, node: usize, zone: &str) -> Option<(u64, u64)> {
    let table = pagetypeinfo.split("Number of blocks type").nth(1)?;
    table.lines().find_map(|l| {
        let t: Vec<&str> = l.split_whitespace().collect();
        match t.as_slice() {
            ["Node", n, "zone", z, u, _m, r, ..]
                if n.trim_end_matches(',').parse::<usize>().ok() == Some(node) && *z == zone =>
            {
                Some((u.parse().ok()?, r.parse().ok()?))
            }
            _ => None,
        }
    })
}

impl Kernel {
    /// Hold the pages `in_use` lists (module doc) as the kernel's (NR_KERNEL_MISC: not on
    /// the model's LRUs; a page found on an LRU (`m`), which compaction migrates live, as
    /// one with movable ops that compaction moves without an owner: mm_types
    /// make_kernel_movable; reclaim leaves it alone), freeing back the
    /// rest of every MAX_PAGE_ORDER block they touch in the largest aligned blocks. With
    /// `pagetypeinfo`, each zone's pageblocks with the most unmovable (`u`) pages become
    /// as many UNMOVABLE and then RECLAIMABLE blocks as its table counts (kpageflags
    /// cannot tell them apart). Pages outside the model's free memory (its own reserve, a
    /// zone edge) are skipped. The free lists stay in the order the frees left them
    /// (module doc, "The lists' order").
    /// A flagless page (`p`) is held as a kernel page too, and its pfn returned (in pfn
    /// order) for the per-CPU lists as found (`flagless_to_pcp`; `release_flagless` frees
    /// the rest), except the whole aligned pageblocks of a flagless run, which stay free
    /// (blocks page reporting had isolated, THPs on an order-9 per-CPU list). Returns the
    /// pages held.
    pub fn hold_in_use(&mut self, in_use: &str, pagetypeinfo: Option<&str>) -> Result<(u64, Vec<u64>), String> {
        let runs = in_use_runs(in_use)?;
        let mut flagless = vec![];
        let nr = 1u64 << MAX_PAGE_ORDER;
        let limit = self.pm.frames.len() as u64;
        // per MAX_PAGE_ORDER block, bitmaps of its pages in use and of the movable ones;
        // per pageblock, its `u` pages
        type Bits = [u64; 16];
        let bit = |p: u64| (((p & (nr - 1)) >> 6) as usize, 1u64 << (p & 63));
        let mut blocks: std::collections::BTreeMap<u64, (Bits, Bits)> = std::collections::BTreeMap::new();
        let mut unmovable: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        for &(s, n, kind) in &runs {
            // a flagless run's whole aligned pageblocks are free blocks page reporting had
            // taken off the free lists to report (page_reporting_cycle(): order >=
            // pageblock_order) or THPs on an order-9 per-CPU list, as the census met
            // them: free here
            let whole_pageblock = |p: u64| {
                let pb = p & !(PAGEBLOCK_NR_PAGES - 1);
                kind == InUse::Flagless && pb >= s && pb + PAGEBLOCK_NR_PAGES <= s + n
            };
            for p in (s..(s + n).min(limit)).filter(|&p| !whole_pageblock(p)) {
                let (i, m) = bit(p);
                let (used, mov) = blocks.entry(p & !(nr - 1)).or_insert(([0; 16], [0; 16]));
                used[i] |= m;
                match kind {
                    InUse::Lru => mov[i] |= m,
                    InUse::Kernel => *unmovable.entry(p >> PAGEBLOCK_ORDER).or_default() += 1,
                    InUse::Flagless => flagless.push(p),
                }
            }
        }
        // the pageblocks that become UNMOVABLE and RECLAIMABLE, zone by zone
        let mut types: std::collections::HashMap<u64, u8> = std::collections::HashMap::new();
        for zi in 0..self.pm.zones.len() {
            let z = &self.pm.zones[zi];
            let Some((nu, nrc)) = pagetypeinfo.and_then(|t| pageblock_type_counts(t, z.node, z.name)) else { continue };
            let (zs, ze) = (z.start_pfn, z.end_pfn());
            let mut ranked: Vec<(u64, u64)> = unmovable
                .iter()
                .filter(|(&pb, _)| (zs..ze).contains(&(pb << PAGEBLOCK_ORDER)))
                .map(|(&pb, &c)| (c, pb))
                .collect();
            ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (i, &(_, pb)) in ranked.iter().take((nu + nrc) as usize).enumerate() {
                types.insert(pb, if (i as u64) < nu { MIGRATE_UNMOVABLE } else { MIGRATE_RECLAIMABLE });
            }
        }
        let mut vm = crate::vmstat::VmStat::default();
        let mut held = 0;
        let mut zones = std::collections::BTreeSet::new();
        for (&b, (used_bits, movable_bits)) in &blocks {
            let used = |p: u64| used_bits[bit(p).0] & bit(p).1 != 0;
            let movable = |p: u64| movable_bits[bit(p).0] & bit(p).1 != 0;
            // the free blocks of [b, b + nr), taken off the free lists and held
            let mut p = b;
            let mut taken = vec![];
            while p < (b + nr).min(limit) {
                let f = self.pm.frames[p as usize];
                if is_free_head(f) {
                    let zi = self.pm.zone_of(p);
                    if let Some(o) = self.pm.isolate_free_page(zi, p) {
                        taken.push((p, 1u64 << o));
                        zones.insert(zi);
                        p += 1 << o;
                        continue;
                    }
                }
                p += 1;
            }
            for pb in (b..b + nr).step_by(PAGEBLOCK_NR_PAGES as usize) {
                if let Some(&mt) = types.get(&(pb >> PAGEBLOCK_ORDER)) {
                    self.pm.set_pb_mt(pb, mt);
                }
            }
            for &(s, n) in &taken {
                for q in s..s + n {
                    self.pm.frames[q as usize] = make_kernel(0, true);
                }
                // the pages not in use go back, each run of them in the largest aligned blocks
                let mut q = s;
                while q < s + n {
                    if used(q) {
                        if movable(q) {
                            self.pm.frames[q as usize] = make_kernel_movable();
                        }
                        held += 1;
                        self.mod_node_page_state(q, NodeStat::NrKernelMisc, 1);
                        q += 1;
                        continue;
                    }
                    let r = (q..s + n).find(|&x| used(x)).unwrap_or(s + n);
                    for (p, o) in aligned_blocks(q, r) {
                        self.pm.free_pages(Pfn(p), o, &mut vm);
                    }
                    q = r;
                }
            }
        }
        for zi in zones {
            self.pm.drain_all_pages(Some(zi));
        }
        // only those held (in the model's free memory) can go to a per-CPU list
        flagless.retain(|&p| self.pm.frames[p as usize] == make_kernel(0, true));
        Ok((held, flagless))
    }

    /// The per-CPU lists as the live run started (`MachineSpec::pcp`): each on the flagless
    /// pages hold_in_use found in its zone (flagless_to_pcp), the rest of its count on whole
    /// free blocks (PhysMem::hold_pcp_as_found; THPs on the order-9 lists read as whole
    /// flagless pageblocks, which stay free); the flagless pages no list took are freed
    /// (release_flagless).
    pub fn hold_pcp_lists_as_found(&mut self, lists: &[PcpFound], mut flagless: Vec<u64>) {
        for p in lists {
            let zi = self.pm.zones.iter().position(|z| z.node == p.node as usize && z.name == p.zone && z.populated());
            if let Some(zi) = zi {
                let placed = self.flagless_to_pcp(zi, p.cpu, p.count, p.high, &mut flagless);
                if placed < p.count {
                    self.pm.hold_pcp_as_found(zi, p.cpu, p.count - placed, p.high);
                }
            }
        }
        self.release_flagless(&flagless);
    }

    /// A per-CPU list as found where the live run read its pages' positions: up to `count`
    /// (at most the list's high_max) of the flagless pages `pfns` of zone `zi` (taken from
    /// the front, pfn order; hold_in_use held them as kernel pages) go on CPU `cpu`'s list
    /// of their pageblock's type (MOVABLE for a pageblock of another type), in pfn order,
    /// and its high becomes `high` (within its bounds). kpageflags does not tell which
    /// flagless page is on which CPU's list, nor the lists' order. Returns the pages placed.
    pub fn flagless_to_pcp(&mut self, zi: usize, cpu: u32, count: u64, high: u64, pfns: &mut Vec<u64>) -> u64 {
        let placed = self.pm.hold_pcp_at(zi, cpu, count, high, pfns);
        for &p in &placed {
            self.mod_node_page_state(p, NodeStat::NrKernelMisc, -1);
        }
        placed.len() as u64
    }

    /// The flagless pages no per-CPU list took: free. Live, the flagless pages outside
    /// whole pageblocks were the per-CPU lists' count within 0.5 % (the bare kernel pages
    /// are few); the lists the model starts with are the ones after the live runner's
    /// back-fill, which can have drained them (compaction-fill-p60: 248,849 pages at the
    /// census, 9,862 after). Freed straight to the buddy lists, where they merge.
    pub fn release_flagless(&mut self, pfns: &[u64]) {
        for &p in pfns {
            if self.pm.frames[p as usize] == make_kernel(0, true) {
                self.mod_node_page_state(p, NodeStat::NrKernelMisc, -1);
                self.pm.free_held_page(p);
            }
        }
    }

    /// Start each zone with the free blocks below MAX_PAGE_ORDER that `buddyinfo` lists
    /// for it, counting those the boot layout already has (module doc); a zone with too
    /// few free 4 MiB blocks gets what they give. With `pagetypeinfo` (the same moment's
    /// /proc/pagetypeinfo) each migratetype's blocks are laid out in 4 MiB blocks of that
    /// type (the kernel's and the other tenants' unmovable and reclaimable pageblocks hold
    /// ~40 % of the small free blocks on the reference host; a movable allocation takes
    /// them only when its own lists are empty, __rmqueue_fallback()). Returns the pages
    /// held. The free lists stay in the order the frees left them (module doc, "The lists' order").
    pub fn hold_small_free_blocks(&mut self, buddyinfo: &str, pagetypeinfo: Option<&str>) -> u64 {
        let mut held_total = 0;
        for zi in 0..self.pm.zones.len() {
            let (node, name) = (self.pm.zones[zi].node, self.pm.zones[zi].name);
            let wants = match pagetypeinfo.and_then(|t| small_free_blocks_by_type(t, node, name)) {
                Some(v) => v,
                None => match small_free_blocks(buddyinfo, node, name) {
                    Some(w) => vec![(MIGRATE_MOVABLE, w)],
                    None => continue,
                },
            };
            // what the boot layout already has there (the edges of DMA and DMA32: movable)
            let booted: Vec<u64> = (0..MAX_PAGE_ORDER as usize).map(|o| self.pm.zones[zi].nr_free_order(o)).collect();
            let mut carved = false;
            for (mt, mut want) in wants {
                if mt == MIGRATE_MOVABLE {
                    for (n, b) in want.iter_mut().zip(&booted) {
                        *n = n.saturating_sub(*b);
                    }
                }
                if want.iter().any(|&n| n > 0) {
                    held_total += self.hold_blocks_of_type(zi, mt, want);
                    carved = true;
                }
            }
            if carved {
                self.pm.drain_all_pages(Some(zi));
            }
        }
        held_total
    }

    /// Lays out `want` free blocks of each order in MAX_PAGE_ORDER blocks of zone `zi`,
    /// spread evenly, their pageblocks given migratetype `mt`. Returns the pages held.
    fn hold_blocks_of_type(&mut self, zi: usize, mt: u8, want: [u64; MAX_PAGE_ORDER as usize]) -> u64 {
        // how many MAX_PAGE_ORDER blocks the layout takes
        let mut w = want;
        let mut need = 0usize;
        while w.iter().any(|&n| n > 0) {
            lay_out(0, MAX_PAGE_ORDER as i32 - 1, &mut w, &mut vec![]);
            need += 1;
        }
        let (start, end) = (self.pm.zones[zi].start_pfn, self.pm.zones[zi].end_pfn());
        let nr = 1u64 << MAX_PAGE_ORDER;
        let blocks: Vec<u64> = (start.div_ceil(nr) * nr..end)
            .step_by(nr as usize)
            .filter(|&p| {
                let f = self.pm.frames[p as usize];
                is_free_head(f) && free_order(f) == MAX_PAGE_ORDER
            })
            .collect();
        let n = need.min(blocks.len());
        // the boot layout's frees are not the run's: counted apart, then dropped
        let mut vm = crate::vmstat::VmStat::default();
        let mut w = want;
        let mut held = 0;
        for i in 0..n {
            let pfn = blocks[i * blocks.len() / n];
            if self.pm.isolate_free_page(zi, pfn) != Some(MAX_PAGE_ORDER) {
                continue;
            }
            for p in pfn..pfn + nr {
                self.pm.frames[p as usize] = make_kernel(0, true);
            }
            for pb in (pfn..pfn + nr).step_by(PAGEBLOCK_NR_PAGES as usize) {
                self.pm.set_pb_mt(pb, mt);
            }
            let mut free = vec![];
            lay_out(pfn, MAX_PAGE_ORDER as i32 - 1, &mut w, &mut free);
            let freed: u64 = free.iter().map(|&(_, o)| 1u64 << o).sum();
            self.mod_node_page_state(pfn, NodeStat::NrKernelMisc, (nr - freed) as i64);
            held += nr - freed;
            for (p, o) in free {
                self.pm.free_pages(Pfn(p), o, &mut vm);
            }
        }
        held
    }
}
