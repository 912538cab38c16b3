//! The invariant checker (`--check`): physical pages are free exactly once or owned;
//! buddy counts agree with the frames; page tables, reverse maps and LRU lists agree;
//! counters agree with the state. Returns a description of the first violation.

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::pgtable::*;

const MIGRATE_MOVABLE_MT: u8 = crate::mmzone::MIGRATE_MOVABLE;

/// A broken invariant: which one, and what the checker found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantViolation {
    pub invariant: &'static str,
    pub detail: String,
}

impl std::fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

/// Run every check; the first violation found.
pub fn check(k: &Kernel) -> Result<(), InvariantViolation> {
    let v = |invariant: &'static str| move |detail: String| InvariantViolation { invariant, detail };
    let (free_total, held) = check_buddy(k).map_err(v("buddy: free blocks agree with the frames and counts"))?;
    check_free_lists(k).map_err(v("free lists: list links, orders and migratetypes agree"))?;
    check_pcp_lists(k, held).map_err(v("pcp: per-CPU lists agree with the frames and pcp->count"))?;
    check_compaction_state(k).map_err(v("compaction: skip bits and cached scanner pfns lie in their zones"))?;
    check_pageblock_summaries(k).map_err(v("pageblock summaries: free-block counts agree with a recount"))?;
    check_page_tables(k).map_err(v("page tables: PTEs, reverse maps and rss agree"))?;
    check_accounting(k, free_total + held.pcp + held.isolated)
        .map_err(v("accounting: every page counted once, counters agree"))?;
    check_lru_lists(k).map_err(v("lru: list membership agrees with the frames"))?;
    check_link_cells(k).map_err(v("links: each chunk's count of cells in use agrees with the lists"))?;
    check_swap(k).map_err(v("swap: slot counts, swap cache and devices agree"))?;
    check_large_folios(k).map_err(v("large folios: order, tails, mapcount and per-size counts agree"))?;
    #[cfg(test)]
    if INJECT.with(|c| c.get()) {
        return Err(v("injected")("a test asked for a violation".into()));
    }
    if std::env::var_os("THPLAB_TEST_INJECT_INVARIANT").is_some() {
        return Err(v("injected")("THPLAB_TEST_INJECT_INVARIANT is set (a test hook)".into()));
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Unit tests make the next checks fail (without the environment variable).
    pub static INJECT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Pages off the buddy lists but not in use: on per-CPU lists, or isolated by a compactor.
#[derive(Default, Clone, Copy)]
struct Held {
    pcp: u64,
    isolated: u64,
}

/// Buddy: frames vs counts, per zone. Returns the free pages, and the pages on per-CPU
/// lists and isolated by compaction (found by their frames).
fn check_buddy(k: &Kernel) -> Result<(u64, Held), String> {
    let pm = &k.pm;
    // 1. buddy: frames vs counts, per zone
    let mut free_total = 0;
    let mut held = Held::default();
    for z in &pm.zones {
        let mut free = 0u64;
        let mut p = z.start_pfn;
        while p < z.end_pfn() {
            let f = pm.frames[p as usize];
            if tag(f) == TAG_PCP {
                let o = free_order(f);
                if p & ((1 << o) - 1) != 0 || p + (1 << o) > z.end_pfn() {
                    return Err(format!("per-CPU/isolated block at pfn {p} order {o} is misaligned"));
                }
                for q in p + 1..p + (1 << o) {
                    if pm.frames[q as usize] != 0 {
                        return Err(format!("pfn {q} inside per-CPU/isolated block {p}/{o} is not a free tail"));
                    }
                }
                if free_mt(f) == ISOLATED_FREE_MT {
                    held.isolated += 1 << o;
                } else {
                    held.pcp += 1 << o;
                }
                p += 1 << o;
                continue;
            }
            if is_free_head(f) {
                let o = free_order(f);
                if p & ((1 << o) - 1) != 0 || p + (1 << o) > z.end_pfn() {
                    return Err(format!("free block at pfn {p} order {o} is misaligned or crosses zone {}", z.name));
                }
                // the second frame of a block of order >= 1 holds its list links (TailCells)
                if o > 0 && tag(pm.frames[p as usize + 1]) != TAG_FREE_TAIL {
                    return Err(format!("pfn {} inside free block {p}/{o} is not a free tail", p + 1));
                }
                for q in p + 2..p + (1 << o) {
                    if pm.frames[q as usize] != 0 {
                        return Err(format!("pfn {q} inside free block {p}/{o} is not a free tail"));
                    }
                }
                free += 1 << o;
                p += 1 << o;
            } else {
                if f == 0 {
                    return Err(format!("pfn {p} is a free tail outside any free block"));
                }
                p += 1;
            }
        }
        let listed: u64 = (0..11).map(|o| z.nr_free_order(o) << o).sum();
        if free != z.free_pages || listed != free {
            return Err(format!(
                "zone {} node {}: frames say {free} free, counter {}, lists {listed}",
                z.name, z.node, z.free_pages
            ));
        }
        free_total += free;
    }
    Ok((free_total, held))
}

/// The free lists: every entry is a free block of the list's order whose frame names the
/// list's migratetype, each list's length is its nr_free, and the links agree both ways.
fn check_free_lists(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    for z in &pm.zones {
        for (o, fa) in z.free_area.iter().enumerate() {
            for (mt, l) in fa.lists.iter().enumerate() {
                let (mut n, mut p, mut prev) = (0u64, l.head, NIL);
                while p != NIL {
                    let f = pm.frames[p as usize];
                    if !is_free_head(f) || free_order(f) as usize != o || free_mt(f) as usize != mt {
                        return Err(format!("zone {} free list {o}/{mt} holds pfn {p} (frame {f:#x})", z.name));
                    }
                    if pm.free_prev(o as u32, p) != prev {
                        return Err(format!("zone {} free list {o}/{mt}: broken back link at pfn {p}", z.name));
                    }
                    n += 1;
                    if n > fa.nr_free[mt] {
                        return Err(format!(
                            "zone {} free list {o}/{mt} is longer than nr_free {}",
                            z.name, fa.nr_free[mt]
                        ));
                    }
                    prev = p;
                    p = pm.free_next(o as u32, p);
                }
                if n != fa.nr_free[mt] || l.tail != prev || l.len != n {
                    return Err(format!("zone {} free list {o}/{mt}: {n} entries, nr_free {}", z.name, fa.nr_free[mt]));
                }
            }
        }
    }
    Ok(())
}

/// Per-CPU lists: every entry is a per-CPU block of the list's order and migratetype,
/// pcp->count is what the lists hold, and together they hold what the frames say.
fn check_pcp_lists(k: &Kernel, held: Held) -> Result<(), String> {
    let pm = &k.pm;
    let mut total = 0u64;
    for cpu in 0..pm.nr_cpus {
        for (zi, z) in pm.zones.iter().enumerate() {
            let pcp = pm.pcp_of(cpu, zi);
            let mut count = 0u64;
            for (li, l) in pcp.lists.iter().enumerate() {
                let thp = li >= crate::page_alloc::NR_PCP_LISTS - 2;
                let order = if thp { HPAGE_PMD_ORDER } else { (li / 3) as u32 };
                // the THP lists: [unmovable or reclaimable, movable]
                let mt_ok = |mt: u8| {
                    if thp {
                        (mt == MIGRATE_MOVABLE_MT) == (li == crate::page_alloc::NR_PCP_LISTS - 1)
                    } else {
                        mt as usize == li % 3
                    }
                };
                for p in l.iter() {
                    let f = pm.frames[p as usize];
                    if tag(f) != TAG_PCP || free_order(f) != order || !mt_ok(free_mt(f)) {
                        return Err(format!("cpu {cpu} zone {} pcp list {li} holds pfn {p} (frame {f:#x})", z.name));
                    }
                    if pm.zone_of(p as u64) != zi {
                        return Err(format!("cpu {cpu} zone {} pcp list {li} holds pfn {p} of another zone", z.name));
                    }
                    count += 1 << order;
                }
            }
            if count != pcp.count {
                return Err(format!(
                    "cpu {cpu} zone {}: pcp lists hold {count} pages, pcp->count {}",
                    z.name, pcp.count
                ));
            }
            // pcp->high is not checked against [high_min, high_max]: zone_pcp_update()
            // (pageset_update) moves the bounds and nr_pcp_high() clamps high at its next use
            total += count;
        }
    }
    if total != held.pcp {
        return Err(format!("per-CPU lists hold {total} pages, frames say {}", held.pcp));
    }
    let isolated: u64 = k
        .pgdat
        .iter()
        .filter_map(|n| n.kcompactd.running_cc())
        .map(|cc| cc.isolated_free().map(|(_, o)| 1u64 << o).sum::<u64>())
        .sum::<u64>()
        + k.pm.pr.isolated_pages();
    if isolated != held.isolated {
        return Err(format!("compactors hold {isolated} isolated free pages, frames say {}", held.isolated));
    }
    Ok(())
}

/// The per-pageblock summaries the compaction scanners step over blocks with
/// (PhysMem::pb_sum) agree with a recount of the frames.
fn check_pageblock_summaries(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    let mut sum = vec![crate::page_alloc::PbSummary::default(); pm.pb_sum.len()];
    for (pfn, &f) in pm.frames.iter().enumerate() {
        if is_free_head(f) {
            sum[pfn >> PAGEBLOCK_ORDER].count_free_head(pfn as u64, true);
        }
    }
    match sum.iter().zip(&pm.pb_sum).position(|(a, b)| a != b) {
        Some(pb) => Err(format!("pageblock {pb}: summary {:?}, recount {:?}", pm.pb_sum[pb], sum[pb])),
        None => Ok(()),
    }
}

/// Compaction state: skip bits only on pageblocks of populated zones and never on a
/// block whose start is not in a zone; cached scanner positions inside their zones.
fn check_compaction_state(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    for (pb, &z) in pm.pb_zone.iter().enumerate() {
        let pfn = (pb as u64) << PAGEBLOCK_ORDER;
        if z == u8::MAX && pm.pb_skip(pfn) {
            return Err(format!("pageblock {pb} outside every zone has its skip bit set"));
        }
    }
    for z in &pm.zones {
        if !z.populated() {
            continue;
        }
        let ok = |p: u64| p >= z.start_pfn && p <= z.end_pfn();
        if !ok(z.compact_cached_free_pfn) || !z.compact_cached_migrate_pfn.iter().all(|&p| ok(p)) {
            return Err(format!(
                "zone {}: cached compaction pfns {:?}/{} outside [{}, {}]",
                z.name,
                z.compact_cached_migrate_pfn,
                z.compact_cached_free_pfn,
                z.start_pfn,
                z.end_pfn()
            ));
        }
    }
    Ok(())
}

/// Page tables and reverse maps agree; rss and nr_anon_pages count what is mapped.
fn check_page_tables(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    // 2. page tables and reverse maps
    let mut mapped = 0u64;
    for (mi, mm) in k.mms.iter().enumerate() {
        let mut rss = 0;
        for (&idx, &sid) in mm.pmds.iter() {
            let s = k.slots.get(sid);
            if s.index != idx || s.mm.idx() != mi {
                return Err(format!("slot {sid} does not belong to mm {mi} index {idx}"));
            }
            if tag(pm.frames[s.table_pfn as usize]) != TAG_PGTABLE {
                return Err(format!("slot {sid}'s table page {} is not a page table", s.table_pfn));
            }
            match &s.pmd {
                Pmd::Huge(head) => {
                    if folio_order(&pm.frames, *head as u64) != HPAGE_PMD_ORDER {
                        return Err(format!(
                            "slot {sid} maps folio {head} of order {} by a PMD",
                            folio_order(&pm.frames, *head as u64)
                        ));
                    }
                    for i in 0..512u32 {
                        let f = pm.frames[(*head + i) as usize];
                        if tag(f) != TAG_ANON || rmap(f) != Some((sid, i)) {
                            return Err(format!("THP {head}+{i} mapped by slot {sid} has a wrong frame/rmap"));
                        }
                    }
                    rss += HPAGE_PMD_NR;
                }
                Pmd::Table(t) => {
                    for (i, &pte) in t.iter().enumerate() {
                        if pte_kind(pte) == K_PRESENT {
                            let pfn = pte_payload(pte);
                            let f = pm.frames[pfn as usize];
                            if tag(f) != TAG_ANON || rmap(f) != Some((sid, i as u32)) {
                                return Err(format!("pfn {pfn} mapped by slot {sid}[{i}] has a wrong frame/rmap"));
                            }
                            rss += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        if mm.alive && rss != mm.rss_anon {
            return Err(format!("mm {mi}: page tables map {rss} pages, rss counter says {}", mm.rss_anon));
        }
        mapped += rss;
    }
    if mapped != k.nr_anon_pages() {
        return Err(format!("mapped anon pages {mapped} != nr_anon_pages {}", k.nr_anon_pages()));
    }
    Ok(())
}

/// Every page is accounted for exactly once; the counters agree with the frames.
/// `free_total`: pages free to the buddy allocator, on per-CPU lists or isolated by a compactor.
fn check_accounting(k: &Kernel, free_total: u64) -> Result<(), String> {
    let pm = &k.pm;
    // 3. every page is accounted for exactly once
    let (mut anon, mut kernel, mut pgt, mut zero, mut lru_pages) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut hugetlb = 0u64;
    for (p, &f) in pm.frames.iter().enumerate() {
        match tag(f) {
            TAG_ANON => {
                anon += 1;
                if let Some((sid, i)) = rmap(f) {
                    let ok = k.slots.slots.get(sid as usize).and_then(|s| s.as_ref()).is_some_and(|s| match &s.pmd {
                        Pmd::Huge(h) => *h as usize + i as usize == p,
                        Pmd::Table(t) => {
                            pte_kind(t[i as usize]) == K_PRESENT && pte_payload(t[i as usize]) as usize == p
                        }
                        _ => false,
                    });
                    if !ok {
                        return Err(format!("pfn {p}: reverse map points to slot {sid}[{i}] which does not map it"));
                    }
                }
                if compound(f) != COMPOUND_TAIL && lru(f) != LRU_NONE {
                    lru_pages += 1 << folio_order(&pm.frames, p as u64);
                }
            }
            TAG_KERNEL if is_hugetlb(f) => hugetlb += 1,
            TAG_KERNEL => kernel += 1,
            TAG_PGTABLE => pgt += 1,
            TAG_ZERO => zero += 1,
            _ => {}
        }
    }
    let managed = pm.total_managed();
    if free_total + anon + kernel + pgt + zero + hugetlb != managed {
        return Err(format!("pages: free/pcp {free_total} + anon {anon} + kernel {kernel} + pgtables {pgt} + zero {zero} + hugetlb {hugetlb} != managed {managed}"));
    }
    check_hugetlb(k, hugetlb)?;
    if pgt != k.nr_pgtable_pages() || pgt != k.slots.live {
        return Err(format!("page-table pages {pgt}, counter {}, slots {}", k.nr_pgtable_pages(), k.slots.live));
    }
    if kernel != k.nr_kernel_pages() {
        return Err(format!("kernel pages {kernel} != counter {}", k.nr_kernel_pages()));
    }
    let listed: u64 = k.pgdat.iter().map(|n| n.lruvec.iter().map(|l| l.pages).sum::<u64>()).sum();
    if listed != lru_pages {
        return Err(format!("LRU lists hold {listed} pages, frames say {lru_pages}"));
    }
    Ok(())
}

/// The hugetlb pool: every listed folio is an aligned order-9 block of hugetlb frames
/// (head first) on the node of its list, listed once; no other frame is a hugetlb frame.
fn check_hugetlb(k: &Kernel, frames: u64) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (nid, list) in k.hstate.freelists.iter().enumerate() {
        for &h in list {
            if h % HPAGE_PMD_NR != 0 || !seen.insert(h) {
                return Err(format!("hugetlb pool: folio {h} misaligned or listed twice"));
            }
            if k.pm.node_of(h) != nid {
                return Err(format!("hugetlb pool: folio {h} on node {nid}'s list lives on node {}", k.pm.node_of(h)));
            }
            for p in h..h + HPAGE_PMD_NR {
                let f = k.pm.frames[p as usize];
                if !is_hugetlb(f) || is_hugetlb_head(f) != (p == h) {
                    return Err(format!("hugetlb pool: frame {p} of folio {h} is not a hugetlb frame"));
                }
            }
        }
    }
    if frames != seen.len() as u64 * HPAGE_PMD_NR {
        return Err(format!("hugetlb frames {frames} != {} pool folios x 512", seen.len()));
    }
    Ok(())
}

/// Large anonymous folios (PMD THP and mTHP): the head is aligned to its order (2..=9,
/// read from the first tail), every page up to the end is a tail; a PTE-mapped folio's
/// mapcount equals its mapped pages; the per-size nr_anon and nr_anon_partially_mapped
/// gauges equal the folios of each order (the model starts with none).
fn check_large_folios(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    let mut nr_anon = [0i64; 10];
    let mut partial = [0i64; 10];
    let mut p = 0u64;
    let n = pm.frames.len() as u64;
    while p < n {
        let f = pm.frames[p as usize];
        if tag(f) != TAG_ANON {
            p += 1;
            continue;
        }
        match compound(f) {
            COMPOUND_HEAD => {
                let o = folio_order(&pm.frames, p);
                if !(2..=HPAGE_PMD_ORDER).contains(&o) || p & ((1 << o) - 1) != 0 || p + (1 << o) > n {
                    return Err(format!("folio head {p} has order {o}: out of range or misaligned"));
                }
                let mut mapped = 0u64;
                let mut pmd = false;
                for q in p..p + (1 << o) {
                    let qf = pm.frames[q as usize];
                    if q > p && (tag(qf) != TAG_ANON || compound(qf) != COMPOUND_TAIL) {
                        return Err(format!("pfn {q} inside folio {p} (order {o}) is not its tail"));
                    }
                    if let Some((sid, _)) = rmap(qf) {
                        mapped += 1;
                        pmd |= matches!(k.slots.get(sid).pmd, Pmd::Huge(_));
                    }
                }
                let mc = pm.mapcount.get(&(p as u32)).copied();
                if !pmd && mapped > 0 && mc != Some(mapped as u16) {
                    return Err(format!("PTE-mapped folio {p} (order {o}): {mapped} pages mapped, mapcount {mc:?}"));
                }
                nr_anon[o as usize] += 1;
                if k.folio_partially_mapped(p) {
                    partial[o as usize] += 1;
                }
                p += 1 << o;
            }
            COMPOUND_TAIL => return Err(format!("tail frame {p} outside any folio")),
            _ => p += 1,
        }
    }
    for o in 2..=HPAGE_PMD_ORDER as usize {
        let g = |s: &str| k.rec.mthp[o].get(s).copied().unwrap_or(0);
        if g("nr_anon") != nr_anon[o] || g("nr_anon_partially_mapped") != partial[o] {
            return Err(format!(
                "order {o}: {} folios ({} partially mapped), stats nr_anon {} nr_anon_partially_mapped {}",
                nr_anon[o],
                partial[o],
                g("nr_anon"),
                g("nr_anon_partially_mapped")
            ));
        }
    }
    Ok(())
}

/// Per-list LRU membership (lazy-free folios on the file lists).
fn check_lru_lists(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    // 4. per-list LRU membership (lazy-free folios on the file lists)
    let mut per_list = vec![[0u64; NR_LRU_LISTS]; k.pgdat.len()];
    for (p, &f) in pm.frames.iter().enumerate() {
        if tag(f) == TAG_ANON && compound(f) != COMPOUND_TAIL && lru(f) != LRU_NONE {
            per_list[pm.node_of(p as u64)][lru_index(f)] += 1 << folio_order(&pm.frames, p as u64);
        }
    }
    for (n, lists) in k.pgdat.iter().map(|n| &n.lruvec).enumerate() {
        for (i, l) in lists.iter().enumerate() {
            if i != 0 && l.pages != per_list[n][i] {
                return Err(format!("node {n} LRU list {i} holds {} pages, frames say {}", l.pages, per_list[n][i]));
            }
        }
    }
    Ok(())
}

/// The links' pool is consistent (Links::check_chunks) and its per-group counts of cells
/// in use (what a copy keeps) equal the entries of every list threaded through them:
/// order-0 free lists, LRU lists, deferred split queues (larger free blocks keep their
/// cells in their second frame).
fn check_link_cells(k: &Kernel) -> Result<(), String> {
    let pm = &k.pm;
    let mut want = vec![0u32; pm.links.nr_chunks()];
    let mut count = |l: &List| {
        let mut p = l.head;
        while p != NIL {
            want[(p >> 6) as usize] += 1;
            p = List::next(&pm.links, p);
        }
    };
    for z in &pm.zones {
        z.free_area[0].lists.iter().for_each(&mut count);
    }
    for n in &k.pgdat {
        n.lruvec.iter().for_each(&mut count);
        count(&n.deferred_split);
    }
    pm.links.check_chunks()?;
    for (c, &w) in want.iter().enumerate() {
        if pm.links.cells_in_use(c) as u32 != w {
            return Err(format!(
                "frames {}..{}: {} cells in use, the lists hold {w}",
                c * 64,
                c * 64 + 64,
                pm.links.cells_in_use(c)
            ));
        }
    }
    Ok(())
}

/// Swap: every slot's map count equals the swap PTEs (and PMD swap entries) referencing
/// it, SWAP_HAS_CACHE equals membership in the swap cache, cluster and device counts
/// agree with the map, each mm's swap counter with its page tables, zram with its slots.
fn check_swap(k: &Kernel) -> Result<(), String> {
    use crate::swapfile::*;
    let mut refs: Vec<Vec<u8>> = k.swap.devs.iter().map(|d| vec![0u8; d.map.len()]).collect();
    let mut bump = |slot: u32, n: u32| -> Result<(), String> {
        for s in slot..slot + n {
            let di = k.swap.dev_of(s);
            let d = &k.swap.devs[di];
            let off = s
                .checked_sub(d.base)
                .filter(|&o| (o as usize) < d.map.len())
                .ok_or(format!("swap entry {s} is outside every device"))?;
            refs[di][off as usize] += 1;
        }
        Ok(())
    };
    for (mi, mm) in k.mms.iter().enumerate() {
        let mut ents = 0u64;
        for &sid in mm.pmds.values() {
            match &k.slots.get(sid).pmd {
                Pmd::SwapPmd(first) => {
                    bump(*first, HPAGE_PMD_NR as u32)?;
                    ents += HPAGE_PMD_NR;
                }
                Pmd::Table(t) => {
                    for &pte in t.iter() {
                        if pte_kind(pte) == K_SWAP {
                            bump(pte_payload(pte), 1)?;
                            ents += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        if mm.alive && ents != mm.swap_ents {
            return Err(format!("mm {mi}: page tables hold {ents} swap entries, counter says {}", mm.swap_ents));
        }
    }
    for (di, d) in k.swap.devs.iter().enumerate() {
        let mut inuse = 0u64;
        let mut stored = 0u64;
        for (ci, c) in d.clusters.iter().enumerate() {
            let mut used = 0u16;
            let first = ci * d.cl_nr as usize;
            for (off, &m) in d.map.iter().enumerate().skip(first).take(d.cl_nr as usize) {
                let bad = m == SWAP_MAP_BAD;
                if m != 0 {
                    used += 1;
                }
                if bad {
                    continue;
                }
                let slot = d.base + off as u32;
                if (m & SWAP_COUNT_MASK) != refs[di][off] {
                    return Err(format!(
                        "swap slot {slot} ({}+{off}): count {} but {} swap entries reference it",
                        d.name,
                        m & SWAP_COUNT_MASK,
                        refs[di][off]
                    ));
                }
                let cached = k.swap.cache.get(&slot);
                if (m & SWAP_HAS_CACHE != 0) != cached.is_some() {
                    return Err(format!(
                        "swap slot {slot}: SWAP_HAS_CACHE {} but swap cache entry {:?}",
                        m & SWAP_HAS_CACHE != 0,
                        cached
                    ));
                }
                if let Some(&pfn) = cached {
                    let f = k.pm.frames[pfn as usize];
                    let head = folio_head(&k.pm.frames, pfn as u64) as u32;
                    if tag(f) != TAG_ANON || !swapcache(k.pm.frames[head as usize]) {
                        return Err(format!("swap slot {slot}: cached page {pfn} is not a swap-cache folio"));
                    }
                }
                if m != 0 {
                    inuse += 1;
                    if m & SWAP_ZEROMAP == 0 {
                        stored += 1;
                    }
                } else if m & SWAP_ZEROMAP != 0 {
                    return Err(format!("free swap slot {slot} has its zeromap bit set"));
                }
            }
            if used != c.count {
                return Err(format!("{} cluster {ci}: {used} slots used, count says {}", d.name, c.count));
            }
        }
        if inuse != d.inuse {
            return Err(format!("{}: {inuse} slots in use, inuse_pages says {}", d.name, d.inuse));
        }
        if let Some(z) = &d.zram {
            if z.pages_stored != stored {
                return Err(format!("{}: zram stores {} pages, the swap map {stored}", d.name, z.pages_stored));
            }
            if z.frames.len() as u64 != z.pool_bytes.div_ceil(PAGE_SIZE) {
                return Err(format!(
                    "{}: zsmalloc pool has {} frames for {} bytes",
                    d.name,
                    z.frames.len(),
                    z.pool_bytes
                ));
            }
        }
    }
    for (&head, &(slot, nr)) in &k.swap.cache_of {
        for i in 0..nr {
            if k.swap.cache.get(&(slot + i)) != Some(&(head + i)) {
                return Err(format!("swap cache: folio {head} slot {} does not map back", slot + i));
            }
        }
    }
    Ok(())
}
