//! `thplab-live census`: what THP is doing to the processes on this machine, read-only.
//!
//! Per process and per VMA: RSS, anonymous memory, AnonHugePages (smaps, the kernel's own
//! numbers); PMD-mapped THPs and the huge zero page (PAGEMAP_SCAN `PAGE_IS_HUGE`); PTE-mapped
//! large folios by size (pagemap PFNs + kpageflags); the 4 KiB subpages of every PMD-mapped THP
//! whose contents are all zero (the THP read through /proc/PID/mem); swap, and ranges swapped out
//! whole as a THP (512 swap entries with contiguous, 512-aligned offsets); khugepaged eligibility
//! of each VMA and each 2 MiB range; and what each modelled policy would change. The page
//! layout (runs of page kinds and contents) is included so the model can replay it
//! (`thplab run --from-census`).
//!
//! Nothing is written anywhere: files under /proc are only read, `PAGEMAP_SCAN` is issued
//! without `PM_SCAN_WP_MATCHING`, and process memory is read only where a present PMD mapping was
//! just seen (a read elsewhere could fault pages in). It takes no lock and touches no knob.

use crate::census_maps::{self, Vma};
use crate::census_scan::*;
use crate::host;
use crate::util::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::time::Instant;

pub struct CensusArgs {
    pub pids: Vec<i32>,
    pub all: bool,
    /// Bytes of the one buffer process memory is read through (a power of two, 64 KiB..1 GiB).
    pub buffer: usize,
    /// Include the page layout (runs) of every VMA.
    pub layout: bool,
    /// Read process memory through /proc/PID/mem rather than process_vm_readv.
    pub proc_mem: bool,
}

#[derive(Debug)]
pub enum CensusError {
    Input(String),
    Failed(String),
}

/// The knobs the rules below depend on, as found.
struct Knobs {
    enabled: String,
    /// hugepages-2048kB/enabled: always, inherit, madvise or never.
    pmd_enabled: String,
    max_ptes_none: u32,
    max_ptes_swap: u32,
    max_ptes_shared: u32,
    shrink_underused: bool,
    /// Largest anon mTHP order below PMD order enabled for faults (0: none); the swap-in order
    /// a synchronous swap device can bring pages back in (alloc_swap_folio()).
    max_small_order: u32,
    all_swap_synchronous: bool,
}

fn thp(p: &str) -> String {
    format!("/sys/kernel/mm/transparent_hugepage/{p}")
}

fn read_choice(path: &str) -> Option<String> {
    read_trim(path).and_then(|t| thplab_workload::knobs::parse_sysfs_choice(&t))
}

/// The per-size `hugepages-<N>kB/enabled` values, by size in kB.
fn mthp_enabled() -> BTreeMap<u64, String> {
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir("/sys/kernel/mm/transparent_hugepage") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if let Some(kb) =
                n.strip_prefix("hugepages-").and_then(|s| s.strip_suffix("kB")).and_then(|s| s.parse().ok())
            {
                if let Some(v) = read_choice(&thp(&format!("{n}/enabled"))) {
                    m.insert(kb, v);
                }
            }
        }
    }
    m
}

/// Active swap areas from /proc/swaps: (path, type, size kB, used kB, priority).
fn swaps() -> Vec<Value> {
    let t = read_file("/proc/swaps").unwrap_or_default();
    t.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(json!({"path": f[0], "type": f[1], "size_kb": f[2].parse::<u64>().unwrap_or(0),
                        "used_kb": f[3].parse::<u64>().unwrap_or(0), "priority": f[4].parse::<i64>().unwrap_or(0)}))
        })
        .collect()
}

fn load_knobs(mthp: &BTreeMap<u64, String>, swaps: &[Value]) -> Knobs {
    let int = |p: &str, d: u32| read_trim(&thp(p)).and_then(|s| s.parse().ok()).unwrap_or(d);
    let enabled = read_choice(&thp("enabled")).unwrap_or_else(|| "never".into());
    let pmd_enabled = mthp.get(&2048).cloned().unwrap_or_else(|| "inherit".into());
    let global_on = enabled != "never";
    let mut max_small_order = 0;
    for (kb, v) in mthp {
        let order = (kb / 4).trailing_zeros();
        if *kb < 2048 && (v == "always" || v == "madvise" || (v == "inherit" && global_on)) {
            max_small_order = max_small_order.max(order);
        }
    }
    let all_swap_synchronous = !swaps.is_empty()
        && swaps.iter().all(|s| {
            let p = s["path"].as_str().unwrap_or("");
            p.starts_with("/dev/zram") || p.starts_with("/dev/pmem") || p.starts_with("/dev/ram")
        });
    Knobs {
        enabled,
        pmd_enabled,
        max_ptes_none: int("khugepaged/max_ptes_none", 511),
        max_ptes_swap: int("khugepaged/max_ptes_swap", 64),
        max_ptes_shared: int("khugepaged/max_ptes_shared", 256),
        shrink_underused: int("shrink_underused", 1) != 0,
        max_small_order,
        all_swap_synchronous,
    }
}

impl Knobs {
    /// hugepage_pmd_enabled() for anonymous memory: khugepaged runs at all.
    fn pmd_on(&self) -> bool {
        match self.pmd_enabled.as_str() {
            "always" | "madvise" => true,
            "inherit" => self.enabled != "never",
            _ => false,
        }
    }
    /// The PMD-order part of thp_vma_allowable_orders()'s sysfs mask for a VMA.
    fn pmd_allowed(&self, hugepage_flag: bool) -> bool {
        match self.pmd_enabled.as_str() {
            "always" => true,
            "madvise" => hugepage_flag,
            "inherit" => self.enabled == "always" || (hugepage_flag && self.enabled == "madvise"),
            _ => false,
        }
    }
}

/// One 2 MiB range of a VMA as khugepaged's hpage_collapse_scan_pmd() would count it.
#[derive(Default, Clone, Copy)]
struct Window {
    /// present anonymous pages other than the shared zero page
    present: u32,
    swap: u32,
    zero_pfn: u32,
    shared: u32,
    file: u32,
    uffd: u32,
}

impl Window {
    fn none_or_zero(&self) -> u32 {
        HPAGE_NR as u32 - self.present - self.swap - self.file
    }
    /// Would khugepaged collapse this range at these limits? The PTE young bits khugepaged also
    /// wants (`referenced`) are not observable from user space: every present page counts as
    /// referenced.
    fn collapsible(&self, max_none: u32, max_swap: u32, max_shared: u32) -> bool {
        let referenced = self.present;
        self.file == 0
            && self.uffd == 0
            && referenced > 0
            && self.none_or_zero() <= max_none
            && self.swap <= max_swap
            && self.shared <= max_shared
            && !(self.swap > 0 && referenced < HPAGE_NR as u32 / 2)
    }
}

/// Counters of one VMA (and, summed, of a process).
#[derive(Default, Clone)]
struct Counts {
    thp_pmd: u64,
    huge_zero_pmd: u64,
    thp_zero_subpages: u64,
    /// THPs that went away between the scan and the read.
    thp_unread: u64,
    zero_hist: BTreeMap<u32, u64>,
    /// The same for THPs outside VM_LOCKED VMAs: mlocked THPs are never split by the shrinker
    /// nor reclaimed, so only these count in the policy what-ifs.
    zero_hist_evictable: BTreeMap<u32, u64>,
    thp_locked: u64,
    /// Fully mapped PTE-mapped large folios by order (< 9).
    mthp: BTreeMap<u32, u64>,
    mthp_partial_pages: u64,
    pte_mapped_thp: u64,
    pte_mapped_thp_partial_pages: u64,
    small_pages: u64,
    zero_pfn_pages: u64,
    file_pages: u64,
    swapped_pages: u64,
    thp_swapped_ranges: u64,
    /// ranges swapped out whole whose entries we could not read (no PFN rights)
    swap_offsets_unknown: bool,
    thp_bytes_read: u64,
    // khugepaged
    eligible: bool,
    windows: u64,
    collapsible: BTreeMap<u32, u64>,
    collapse_growth_pages: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.thp_pmd += o.thp_pmd;
        self.huge_zero_pmd += o.huge_zero_pmd;
        self.thp_zero_subpages += o.thp_zero_subpages;
        self.thp_unread += o.thp_unread;
        for (k, v) in &o.zero_hist {
            *self.zero_hist.entry(*k).or_default() += v;
        }
        for (k, v) in &o.zero_hist_evictable {
            *self.zero_hist_evictable.entry(*k).or_default() += v;
        }
        self.thp_locked += o.thp_locked;
        for (k, v) in &o.mthp {
            *self.mthp.entry(*k).or_default() += v;
        }
        self.mthp_partial_pages += o.mthp_partial_pages;
        self.pte_mapped_thp += o.pte_mapped_thp;
        self.pte_mapped_thp_partial_pages += o.pte_mapped_thp_partial_pages;
        self.small_pages += o.small_pages;
        self.zero_pfn_pages += o.zero_pfn_pages;
        self.file_pages += o.file_pages;
        self.swapped_pages += o.swapped_pages;
        self.thp_swapped_ranges += o.thp_swapped_ranges;
        self.swap_offsets_unknown |= o.swap_offsets_unknown;
        self.thp_bytes_read += o.thp_bytes_read;
        self.eligible |= o.eligible;
        self.windows += o.windows;
        for (k, v) in &o.collapsible {
            *self.collapsible.entry(*k).or_default() += v;
        }
        self.collapse_growth_pages += o.collapse_growth_pages;
    }
}

pub const THRESHOLDS: [u32; 4] = [0, 64, 256, 511];

/// Page kinds of the layout runs.
pub const KINDS: [&str; 7] = ["thp", "hzp", "pte", "mthp", "zp", "swap", "swapthp"];
const K_THP: u8 = 0;
const K_HZP: u8 = 1;
const K_PTE: u8 = 2;
const K_MTHP: u8 = 3;
const K_ZP: u8 = 4;
const K_SWAP: u8 = 5;
const K_SWAPTHP: u8 = 6;

#[derive(Default)]
struct Layout {
    on: bool,
    /// (first page index within the VMA, pages, kind, content)
    runs: Vec<(u64, u64, u8, u16)>,
}

impl Layout {
    fn push(&mut self, page: u64, n: u64, kind: u8, content: u16) {
        if !self.on || n == 0 {
            return;
        }
        if let Some(l) = self.runs.last_mut() {
            if l.0 + l.1 == page && l.2 == kind && l.3 == content {
                l.1 += n;
                return;
            }
        }
        self.runs.push((page, n, kind, content));
    }
}

struct Ctx<'a> {
    knobs: &'a Knobs,
    kpf: KpageFlags,
    pfns: bool,
    buffer: usize,
    proc_mem: bool,
    mem_method: Option<&'static str>,
    scan_buf: Vec<PageRegion>,
    pm_buf: Vec<u64>,
    mem_ns: u64,
    classify_ns: u64,
}

/// Census of one VMA. `mem` is opened on first use.
/// One process being read: its pagemap, its memory reader (opened on first use), and the
/// PTE-mapped large folios seen so far.
struct ProcScan {
    pid: i32,
    pagemap: File,
    mem: Option<MemReader>,
    thp_disabled: bool,
    layout: bool,
    heads: HashMap<u64, (u32, u64)>,
}

fn census_vma(ctx: &mut Ctx, ps: &mut ProcScan, v: &Vma) -> Result<(Counts, Value), ProbeError> {
    let (pid, pagemap, thp_disabled, layout_on) = (ps.pid, &ps.pagemap, ps.thp_disabled, ps.layout);
    let mem = &mut ps.mem;
    let k = ctx.knobs;
    let mut c = Counts::default();
    let mut lay = Layout { on: layout_on, runs: vec![] };
    let locked = v.has("lo");
    let base_vpn = v.start / PAGE;
    // khugepaged: thp_vma_allowable_order(vma, TVA_KHUGEPAGED, PMD_ORDER) for an anonymous VMA
    // (6.18's hpage_collapse_scan_pmd() no longer refuses read-only ranges: no SCAN_PAGE_RO)
    let hstart = v.start.div_ceil(HPAGE) * HPAGE;
    let hend = v.end / HPAGE * HPAGE;
    let why_not = if !v.anonymous() {
        Some("not anonymous memory")
    } else if !k.pmd_on() {
        Some("PMD-size THP disabled (khugepaged does not run)")
    } else if v.has("nh") {
        Some("MADV_NOHUGEPAGE (VM_NOHUGEPAGE)")
    } else if thp_disabled {
        Some("prctl(PR_SET_THP_DISABLE) (THP_enabled: 0)")
    } else if !k.pmd_allowed(v.has("hg")) {
        Some("not MADV_HUGEPAGE under enabled=madvise")
    } else if v.no_khugepaged() {
        Some("VM_SPECIAL or hugetlb mapping")
    } else if hend <= hstart {
        Some("no whole 2 MiB range inside the VMA")
    } else {
        None
    };
    c.eligible = why_not.is_none();
    let mut windows: BTreeMap<u64, Window> = BTreeMap::new();
    let mut heads: HashMap<u64, (u32, u64)> = HashMap::new();
    let win_of = |addr: u64| -> Option<u64> {
        if addr >= hstart && addr < hend {
            Some(addr / HPAGE)
        } else {
            None
        }
    };

    let regions = pagemap_scan(pagemap, v.start, v.end, &mut ctx.scan_buf)?;
    for r in regions {
        let cats = r.categories;
        let npages = (r.end - r.start) / PAGE;
        let page0 = r.start / PAGE - base_vpn;
        if cats & PAGE_IS_HUGE != 0 {
            if cats & PAGE_IS_FILE != 0 || cats & PAGE_IS_PRESENT == 0 {
                c.file_pages += if cats & PAGE_IS_FILE != 0 { npages } else { 0 };
                continue;
            }
            if cats & PAGE_IS_PFNZERO != 0 {
                c.huge_zero_pmd += npages / HPAGE_NR as u64;
                lay.push(page0, npages, K_HZP, 0);
                continue;
            }
            // PMD-mapped anonymous THPs: read them through the bounded buffer (several THPs
            // per read, or one THP in several reads when the buffer is smaller than 2 MiB)
            let mut at = r.start;
            let mut thp_pages = [0u16; HPAGE_NR];
            let mut thp_ok = true;
            while at < r.end {
                if mem.is_none() {
                    *mem = Some(MemReader::open(pid, ctx.buffer, ctx.proc_mem)?);
                }
                let m = mem.as_mut().unwrap();
                let len = (r.end - at).min(m.capacity());
                let t0 = Instant::now();
                let got = m.read(at, len)?;
                ctx.mem_ns += t0.elapsed().as_nanos() as u64;
                let t1 = Instant::now();
                if got.is_some() {
                    c.thp_bytes_read += len;
                }
                for i in 0..(len / PAGE) as usize {
                    let addr = at + i as u64 * PAGE;
                    let idx = ((addr % HPAGE) / PAGE) as usize;
                    if idx == 0 {
                        thp_ok = true;
                    }
                    match got {
                        Some(words) => thp_pages[idx] = classify(&words[i * 512..(i + 1) * 512]),
                        None => thp_ok = false, // the range changed under us
                    }
                    if idx == HPAGE_NR - 1 {
                        if !thp_ok {
                            c.thp_unread += 1;
                            continue;
                        }
                        let hp0 = (addr - (HPAGE - PAGE)) / PAGE - base_vpn;
                        let mut zeros = 0u32;
                        for (j, &cc) in thp_pages.iter().enumerate() {
                            zeros += (cc == 0) as u32;
                            lay.push(hp0 + j as u64, 1, K_THP, cc);
                        }
                        c.thp_pmd += 1;
                        c.thp_zero_subpages += zeros as u64;
                        *c.zero_hist.entry(zeros).or_default() += 1;
                        if locked {
                            c.thp_locked += 1;
                        } else {
                            *c.zero_hist_evictable.entry(zeros).or_default() += 1;
                        }
                    }
                }
                ctx.classify_ns += t1.elapsed().as_nanos() as u64;
                ctx.mem_method = mem.as_ref().map(|m| m.method());
                at += len;
            }
            continue;
        }
        if cats & PAGE_IS_PRESENT != 0 && cats & PAGE_IS_PFNZERO != 0 {
            c.zero_pfn_pages += npages;
            lay.push(page0, npages, K_ZP, 0);
            for p in 0..npages {
                if let Some(w) = win_of(r.start + p * PAGE) {
                    windows.entry(w).or_default().zero_pfn += 1;
                }
            }
            continue;
        }
        if cats & PAGE_IS_FILE != 0 {
            c.file_pages += npages;
            for p in 0..npages {
                if let Some(w) = win_of(r.start + p * PAGE) {
                    windows.entry(w).or_default().file += 1;
                }
            }
            continue;
        }
        // PTE-level anonymous pages (present) or swap entries: per-page pagemap entries
        let swapped = cats & PAGE_IS_PRESENT == 0;
        let mut vpn = r.start / PAGE;
        let end_vpn = r.end / PAGE;
        while vpn < end_vpn {
            // chunks end on 2 MiB boundaries, so a whole-THP swap range is never cut in two
            let n = ((end_vpn - vpn) as usize).min((1 << 16) - (vpn % HPAGE_NR as u64) as usize);
            let mut ents = std::mem::take(&mut ctx.pm_buf);
            read_pagemap(pagemap, vpn, n, &mut ents)?;
            if swapped {
                c.swapped_pages += n as u64;
                // whole-THP swap-outs: a 2 MiB range of 512 entries on one device with
                // contiguous offsets starting at a multiple of 512 (one cluster)
                let mut i = 0usize;
                while i < n {
                    let va = (vpn + i as u64) * PAGE;
                    let page = va / PAGE - base_vpn;
                    let e = ents[i];
                    if let Some(w) = win_of(va) {
                        let wn = windows.entry(w).or_default();
                        wn.swap += 1;
                        if e & PM_UFFD_WP != 0 {
                            wn.uffd += 1;
                        }
                    }
                    let whole = ctx.pfns && va.is_multiple_of(HPAGE) && i + HPAGE_NR <= n && {
                        let ty = e & ((1 << SWP_TYPE_BITS) - 1);
                        let off = (e & PM_PFN_MASK) >> SWP_TYPE_BITS;
                        off.is_multiple_of(HPAGE_NR as u64)
                            && (0..HPAGE_NR).all(|j| {
                                let f = ents[i + j];
                                f & PM_SWAP != 0
                                    && f & ((1 << SWP_TYPE_BITS) - 1) == ty
                                    && (f & PM_PFN_MASK) >> SWP_TYPE_BITS == off + j as u64
                            })
                    };
                    if whole {
                        c.thp_swapped_ranges += 1;
                        lay.push(page, HPAGE_NR as u64, K_SWAPTHP, 0);
                        if let Some(w) = win_of(va) {
                            let wn = windows.entry(w).or_default();
                            wn.swap += HPAGE_NR as u32 - 1;
                            wn.uffd += (1..HPAGE_NR).filter(|j| ents[i + j] & PM_UFFD_WP != 0).count() as u32;
                        }
                        i += HPAGE_NR;
                    } else {
                        lay.push(page, 1, K_SWAP, 0);
                        i += 1;
                    }
                }
                if !ctx.pfns {
                    c.swap_offsets_unknown = true;
                }
            } else {
                for (i, &e) in ents.iter().enumerate() {
                    let va = (vpn + i as u64) * PAGE;
                    let page = va / PAGE - base_vpn;
                    let pfn = e & PM_PFN_MASK;
                    let folio = if ctx.pfns && pfn != 0 { ctx.kpf.folio_of(pfn) } else { None };
                    let kind = match folio {
                        Some((head, order)) => {
                            let ent = heads.entry(head).or_insert((order, 0));
                            ent.1 += 1;
                            K_MTHP
                        }
                        None => {
                            c.small_pages += 1;
                            K_PTE
                        }
                    };
                    lay.push(page, 1, kind, 0);
                    if let Some(w) = win_of(va) {
                        let wn = windows.entry(w).or_default();
                        wn.present += 1;
                        if e & PM_EXCLUSIVE == 0 {
                            wn.shared += 1;
                        }
                        if e & PM_UFFD_WP != 0 {
                            wn.uffd += 1;
                        }
                    }
                }
            }
            ctx.pm_buf = ents;
            vpn += n as u64;
        }
    }
    for (head, (order, mapped)) in &heads {
        let e = ps.heads.entry(*head).or_insert((*order, 0));
        e.1 += mapped;
    }
    count_folios(&mut c, &heads);
    // khugepaged ranges: every 2 MiB range with a populated page (ranges already PMD-mapped
    // were never entered into `windows`)
    if c.eligible {
        c.windows = windows.len() as u64;
        for t in THRESHOLDS.iter().copied().chain(std::iter::once(k.max_ptes_none)) {
            let n = windows.values().filter(|w| w.collapsible(t, k.max_ptes_swap, k.max_ptes_shared)).count();
            c.collapsible.insert(t, n as u64);
        }
        c.collapse_growth_pages = windows
            .values()
            .filter(|w| w.collapsible(k.max_ptes_none, k.max_ptes_swap, k.max_ptes_shared))
            .map(|w| w.none_or_zero() as u64)
            .sum();
    }
    let mut o = Map::new();
    o.insert("start".into(), json!(format!("{:x}", v.start)));
    o.insert("end".into(), json!(format!("{:x}", v.end)));
    o.insert("size_kb".into(), json!((v.end - v.start) / 1024));
    o.insert("perms".into(), json!(v.perms));
    o.insert("name".into(), json!(v.name));
    if v.inode != 0 {
        o.insert("file_offset".into(), json!(format!("{:x}", v.offset)));
    }
    o.insert("anonymous".into(), json!(v.anonymous()));
    o.insert("vm_flags".into(), json!(v.flags));
    let smaps: BTreeMap<&str, u64> =
        ["Rss", "Anonymous", "AnonHugePages", "Swap", "Locked", "THPeligible"].iter().map(|f| (*f, v.kb(f))).collect();
    o.insert("smaps".into(), json!(smaps));
    o.insert("khugepaged_eligible".into(), json!(c.eligible));
    if let Some(w) = why_not {
        o.insert("khugepaged_ineligible_reason".into(), json!(w));
    }
    counts_json(&mut o, &c, k, ctx.pfns);
    if layout_on {
        o.insert(
            "layout".into(),
            json!(lay.runs.iter().map(|r| json!([r.0, r.1, KINDS[r.2 as usize], r.3])).collect::<Vec<_>>()),
        );
    }
    Ok((c, Value::Object(o)))
}

/// PTE-mapped large folios seen (head pfn -> (order, pages mapped here)): whole ones by
/// order, pages of partly mapped ones (a folio cut by a VMA edge is partial in each VMA, whole
/// in the process).
fn count_folios(c: &mut Counts, heads: &HashMap<u64, (u32, u64)>) {
    c.mthp.clear();
    c.mthp_partial_pages = 0;
    c.pte_mapped_thp = 0;
    c.pte_mapped_thp_partial_pages = 0;
    for &(order, mapped) in heads.values() {
        let full = mapped == 1u64 << order;
        if order == HPAGE_NR.trailing_zeros() {
            if full {
                c.pte_mapped_thp += 1;
            } else {
                c.pte_mapped_thp_partial_pages += mapped;
            }
        } else if full {
            *c.mthp.entry(order).or_default() += 1;
        } else {
            c.mthp_partial_pages += mapped;
        }
    }
}

fn order_kb(order: u32) -> String {
    format!("{}kB", 4u64 << order)
}

/// The counters and the policy what-ifs of a VMA or a process, into `o`.
fn counts_json(o: &mut Map<String, Value>, c: &Counts, k: &Knobs, pfns: bool) {
    o.insert("thp_pmd".into(), json!(c.thp_pmd));
    o.insert("thp_pmd_kb".into(), json!(c.thp_pmd * 2048));
    o.insert("huge_zero_pmd".into(), json!(c.huge_zero_pmd));
    o.insert("thp_zero_subpages".into(), json!(c.thp_zero_subpages));
    o.insert("thp_zero_kb".into(), json!(c.thp_zero_subpages * 4));
    o.insert("thp_unread".into(), json!(c.thp_unread));
    o.insert(
        "thp_zero_hist".into(),
        json!(c.zero_hist.iter().map(|(z, n)| (z.to_string(), json!(n))).collect::<Map<_, _>>()),
    );
    // without PFNs (not root) large folios cannot be told from small ones: unknown
    o.insert(
        "mthp".into(),
        if pfns {
            json!(c.mthp.iter().map(|(ord, n)| (order_kb(*ord), json!(n))).collect::<Map<_, _>>())
        } else {
            Value::Null
        },
    );
    o.insert("mthp_partial_pages".into(), json!(c.mthp_partial_pages));
    o.insert("pte_mapped_thp".into(), json!(c.pte_mapped_thp));
    o.insert("pte_mapped_thp_partial_pages".into(), json!(c.pte_mapped_thp_partial_pages));
    o.insert("small_pages".into(), json!(c.small_pages));
    o.insert("zero_pfn_pages".into(), json!(c.zero_pfn_pages));
    o.insert("file_pages".into(), json!(c.file_pages));
    o.insert("swapped_pages".into(), json!(c.swapped_pages));
    o.insert(
        "thp_swapped_ranges".into(),
        if c.swap_offsets_unknown && c.thp_swapped_ranges == 0 { Value::Null } else { json!(c.thp_swapped_ranges) },
    );
    o.insert("thp_scanned_kb".into(), json!(c.thp_bytes_read / 1024));
    let coll: Map<String, Value> = c.collapsible.iter().map(|(t, n)| (t.to_string(), json!(n))).collect();
    o.insert(
        "khugepaged".into(),
        json!({
            "eligible": c.eligible,
            "ranges_with_pages": c.windows,
            "collapsible": c.collapsible.get(&k.max_ptes_none).copied().unwrap_or(0),
            "collapsible_by_max_ptes_none": coll,
            "collapse_rss_growth_kb": c.collapse_growth_pages * 4,
        }),
    );
    o.insert("policies".into(), policies(c, k));
}

/// What each modelled policy would change for these THPs and swap entries.
fn policies(c: &Counts, k: &Knobs) -> Value {
    // thp_underused() (mm/huge_memory.c): false at max_ptes_none 511; otherwise true iff more
    // than max_ptes_none of the 512 subpages are zero. The split remaps the zero subpages to the
    // shared zero page (RMP_USE_SHARED_ZEROPAGE), freeing them. Mlocked folios are skipped.
    let mut under = vec![];
    for t in THRESHOLDS {
        let (mut n, mut z) = (0u64, 0u64);
        if t < 511 {
            for (zeros, cnt) in &c.zero_hist_evictable {
                if *zeros > t {
                    n += cnt;
                    z += *zeros as u64 * cnt;
                }
            }
        }
        under.push(json!({"max_ptes_none": t, "thps_split": n, "kb_freed": z * 4}));
    }
    // Seed 000 (Yu Zhao 2021): reclaim splits the THP and drops its zero subpages instead of
    // writing them; 6.18 swaps a THP out whole (CONFIG_THP_SWAP), writing all 512 subpages
    // unless the whole folio is zero (swap zeromap, swpout_zero).
    let (mut main_w, mut seed_w, mut dropped, mut zero_thps) = (0u64, 0u64, 0u64, 0u64);
    for (zeros, cnt) in &c.zero_hist_evictable {
        let z = *zeros as u64;
        if z == HPAGE_NR as u64 {
            zero_thps += cnt;
        } else {
            main_w += HPAGE_NR as u64 * cnt;
        }
        seed_w += (HPAGE_NR as u64 - z) * cnt;
        dropped += z * cnt;
    }
    // Seed 003 (Huang Ying 2018): a THP swapped out whole keeps one PMD swap entry and comes
    // back in one fault as a THP; 6.18 brings it back per PTE fault as small folios (order-0, or
    // up to the largest enabled mTHP order below PMD on a synchronous device: alloc_swap_folio()).
    let per = if k.all_swap_synchronous { HPAGE_NR as u64 >> k.max_small_order } else { HPAGE_NR as u64 };
    let r = c.thp_swapped_ranges;
    json!({
        "underused_shrinker": {"shrink_underused_now": k.shrink_underused, "current_max_ptes_none": k.max_ptes_none, "by_max_ptes_none": under},
        "seed000_split_on_reclaim": {
            "zero_subpages_dropped": dropped,
            "kb_dropped_instead_of_swapped": (dropped - zero_thps * HPAGE_NR as u64) * 4,
            "swapout_pages_mainline": main_w,
            "swapout_pages_seed000": seed_w,
            "all_zero_thps": zero_thps,
        },
        "seed003_thp_swapin": {
            "thp_swapped_ranges": if c.swap_offsets_unknown && r == 0 { Value::Null } else { json!(r) },
            "swapin_faults_mainline": r * per,
            "swapin_faults_seed003": r,
            "swapin_faults_saved": r * (per - 1),
            "thp_kb_restored": r * 2048,
            "resident_thp_kb_kept_through_swap": c.thp_pmd.saturating_sub(c.thp_locked) * 2048,
        },
    })
}

fn proc_error(pid: i32, status: &str, msg: String) -> Value {
    json!({"pid": pid, "status": status, "error": msg})
}

/// Census of one process; errors become a `status` other than "ok".
fn census_process(ctx: &mut Ctx, pid: i32, layout: bool) -> Value {
    let gone = |pid: i32| proc_error(pid, "exited", "the process exited during the census".into());
    let status_text = match read_file(&format!("/proc/{pid}/status")) {
        Ok(t) => t,
        Err(_) => return proc_error(pid, "exited", format!("no process {pid} (it exited, or never existed)")),
    };
    let st = census_maps::parse_status(&status_text);
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    // a user task without memory has exited (or is exiting: exit_mm() ran before it became
    // a zombie, State Z, that its parent has not reaped); kernel threads are kthreadd (pid 2)
    // and its children
    let kthread = pid == 2 || st.ppid == 2;
    let exiting = st.fields.get("State").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
        || (!kthread && !st.fields.contains_key("VmSize"));
    if exiting {
        let mut v = proc_error(
            pid,
            "exited",
            "the process exited (its memory is gone; its parent has not reaped it yet)".into(),
        );
        v["comm"] = json!(st.name);
        v["zombie"] = json!(true);
        return v;
    }
    if !st.fields.contains_key("VmSize") {
        let mut v = proc_error(pid, "no-mm", "a kernel thread or zombie: no user memory".into());
        v["comm"] = json!(st.name);
        return v;
    }
    let smaps_text = match read_file(&format!("/proc/{pid}/smaps")) {
        Ok(t) => t,
        Err(e) => {
            return match ProbeError::from_io(&format!("/proc/{pid}/smaps"), &e) {
                ProbeError::Gone => gone(pid),
                ProbeError::Denied(m) => {
                    let mut v = proc_error(
                        pid,
                        "denied",
                        format!("{m}: the census needs root or ptrace rights over the process"),
                    );
                    v["comm"] = json!(st.name);
                    v
                }
                ProbeError::NoScan | ProbeError::Other(_) => proc_error(pid, "error", format!("{e}")),
            };
        }
    };
    let rollup = parse_kb(&read_file(&format!("/proc/{pid}/smaps_rollup")).unwrap_or_default());
    let vmas = census_maps::parse_smaps(&smaps_text);
    let pagemap = match File::open(format!("/proc/{pid}/pagemap")) {
        Ok(f) => f,
        Err(e) => {
            return match ProbeError::from_io("pagemap", &e) {
                ProbeError::Gone => gone(pid),
                ProbeError::Denied(m) => {
                    let mut v = proc_error(
                        pid,
                        "denied",
                        format!("{m}: the census needs root or ptrace rights over the process"),
                    );
                    v["comm"] = json!(st.name);
                    v
                }
                _ => proc_error(pid, "error", format!("{e}")),
            };
        }
    };
    let mut ps = ProcScan {
        pid,
        pagemap,
        mem: None,
        thp_disabled: st.thp_enabled == Some(false),
        layout,
        heads: HashMap::new(),
    };
    let mut total = Counts::default();
    let mut out_vmas = vec![];
    let mut registered_basis: Option<String> = None;
    for v in &vmas {
        let anon_content = v.kb("Anonymous") > 0 || v.kb("Swap") > 0 || v.kb("AnonHugePages") > 0;
        if v.special() || !(v.anonymous() || anon_content) || !v.private() {
            continue;
        }
        let r = census_vma(ctx, &mut ps, v);
        match r {
            Ok((c, j)) => {
                if c.eligible && registered_basis.is_none() && (c.thp_pmd > 0 || c.windows > 0) {
                    registered_basis = Some(format!(
                        "VMA {:x}-{:x} is eligible and holds {} (khugepaged_enter_vma() ran at its THP fault or MADV_HUGEPAGE)",
                        v.start,
                        v.end,
                        if c.thp_pmd > 0 { "PMD-mapped THPs" } else { "pages in a whole 2 MiB range" }
                    ));
                }
                total.add(&c);
                out_vmas.push(j);
            }
            Err(ProbeError::Gone) => return gone(pid),
            Err(ProbeError::Denied(m)) => {
                let mut v =
                    proc_error(pid, "denied", format!("{m}: the census needs root or ptrace rights over the process"));
                v["comm"] = json!(st.name);
                return v;
            }
            Err(ProbeError::NoScan) => {
                return proc_error(pid, "error", "this kernel has no PAGEMAP_SCAN ioctl (Linux 6.7+)".into())
            }
            Err(ProbeError::Other(m)) => {
                // the process may have exited under us
                if std::path::Path::new(&format!("/proc/{pid}/status")).exists() {
                    return proc_error(pid, "error", m);
                }
                return gone(pid);
            }
        }
    }
    count_folios(&mut total, &ps.heads);
    // still there? (a process that exited after its last read has consistent data; one that
    // is a zombie now had its memory torn down while we read)
    let alive = read_file(&format!("/proc/{pid}/status")).map(|t| t.contains("VmSize")).unwrap_or(false);
    if !alive {
        return gone(pid);
    }
    let mut o = Map::new();
    o.insert("pid".into(), json!(pid));
    o.insert("status".into(), json!("ok"));
    o.insert("comm".into(), json!(st.name));
    o.insert("cmdline".into(), json!(cmdline));
    o.insert("thp_enabled".into(), json!(st.thp_enabled));
    o.insert("smaps_rollup".into(), json!(rollup));
    for (f, key) in
        [("Rss", "rss_kb"), ("Anonymous", "anon_kb"), ("AnonHugePages", "anon_huge_kb"), ("Swap", "swap_kb")]
    {
        o.insert(key.into(), json!(rollup.get(f).copied().unwrap_or(0)));
    }
    counts_json(&mut o, &total, ctx.knobs, ctx.pfns);
    if let Some(kh) = o.get_mut("khugepaged").and_then(|v| v.as_object_mut()) {
        kh.insert("mm_registered".into(), json!(registered_basis.is_some()));
        kh.insert(
            "registered_basis".into(),
            json!(registered_basis.unwrap_or_else(|| "no eligible VMA holds anonymous memory in a whole 2 MiB range: either never registered, or registered earlier with nothing to collapse now".into())),
        );
    }
    o.insert("vmas".into(), Value::Array(out_vmas));
    Value::Object(o)
}

fn all_pids() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut v: Vec<i32> = std::fs::read_dir("/proc")
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok()).collect())
        .unwrap_or_default();
    v.retain(|p| *p != me);
    v.sort_unstable();
    v
}

fn cpu_ns() -> (u64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = ru.ru_utime.tv_sec as u64 * 1_000_000_000 + ru.ru_utime.tv_usec as u64 * 1000;
    let sy = ru.ru_stime.tv_sec as u64 * 1_000_000_000 + ru.ru_stime.tv_usec as u64 * 1000;
    (us, sy)
}

pub fn census(a: &CensusArgs) -> Result<Value, CensusError> {
    if a.all && !a.pids.is_empty() {
        return Err(CensusError::Input("census: give --pid PID ... or --all, not both".into()));
    }
    if !a.all && a.pids.is_empty() {
        return Err(CensusError::Input("census: give --pid PID (repeatable) or --all".into()));
    }
    for p in &a.pids {
        if *p <= 0 {
            return Err(CensusError::Input(format!("census: --pid {p}: expected a positive process id")));
        }
    }
    if !std::path::Path::new("/proc/self/pagemap").exists() {
        return Err(CensusError::Failed(
            "census: /proc/PID/pagemap is not available (CONFIG_PROC_PAGE_MONITOR)".into(),
        ));
    }
    let mthp = mthp_enabled();
    let sw = swaps();
    let knobs = load_knobs(&mthp, &sw);
    let kpf = KpageFlags::open();
    // PFNs (and swap offsets) are shown only to CAP_SYS_ADMIN; kpageflags is root-only.
    let pfns = is_root() && kpf.available();
    let mut ctx = Ctx {
        knobs: &knobs,
        kpf,
        pfns,
        buffer: a.buffer,
        proc_mem: a.proc_mem,
        mem_method: None,
        scan_buf: vec![],
        pm_buf: vec![],
        mem_ns: 0,
        classify_ns: 0,
    };
    let t0 = Instant::now();
    let (u0, s0) = cpu_ns();
    let pids = if a.all { all_pids() } else { a.pids.clone() };
    let mut procs = vec![];
    for pid in pids {
        let v = census_process(&mut ctx, pid, a.layout);
        if a.all && (v["status"] == "no-mm" || v["zombie"] == true) {
            continue; // kernel threads and zombies hold no user memory
        }
        if a.all && v["status"] == "exited" && v.get("comm").is_none() {
            continue; // vanished between the /proc listing and the first read
        }
        procs.push(v);
    }
    let (u1, s1) = cpu_ns();
    let wall = t0.elapsed().as_nanos() as u64;
    if !a.all && procs.iter().all(|p| p["status"] == "denied") {
        let m = procs.first().and_then(|p| p["error"].as_str()).unwrap_or("permission denied").to_string();
        return Err(CensusError::Input(format!(
            "census: {m}. Run it as root, or as the processes' owner with ptrace allowed (kernel.yama.ptrace_scope)"
        )));
    }
    let bytes: u64 = procs.iter().map(|p| p["thp_scanned_kb"].as_u64().unwrap_or(0) * 1024).sum();
    let (release, _) = host::uname();
    let lk = host::live_knobs();
    let cpu = (u1 - u0) + (s1 - s0);
    let rate = |ns: u64| if ns > 0 { bytes as f64 / ns as f64 } else { 0.0 };
    let nodes = host::online_nodes();
    Ok(json!({
        "census_version": 1,
        "kernel": release,
        "time_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "privileges": {"root": is_root(), "pfns": pfns,
                       "note": if pfns { "full" } else { "not root: no PFNs, so no mTHP sizes and no whole-THP swap detection" }},
        "host": {
            "machine": host::machine_found(&[]),
            "numa_nodes": nodes.len(),
            "meminfo": meminfo(),
            "swaps": sw,
            "knobs": host::knob_values(&lk),
            "mthp_enabled": mthp.iter().map(|(kb, v)| (format!("{kb}kB"), json!(v))).collect::<Map<_, _>>(),
            "khugepaged_running": knobs.pmd_on(),
            "enabled": knobs.enabled,
        },
        "scan": {
            "thp_bytes_read": bytes,
            "buffer_bytes": a.buffer,
            "wall_ns": wall,
            "cpu_ns": cpu,
            "mem_read_ns": ctx.mem_ns,
            "mem_method": ctx.mem_method,
            "classify_ns": ctx.classify_ns,
            "gb_per_cpu_second": rate(cpu),
        },
        "layout_kinds": KINDS,
        "processes": procs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_rules() {
        let w = Window { present: 500, ..Default::default() };
        assert_eq!(w.none_or_zero(), 12);
        assert!(w.collapsible(12, 64, 256) && !w.collapsible(11, 64, 256));
        let z = Window { zero_pfn: 10, ..Default::default() };
        assert!(!z.collapsible(511, 64, 256)); // only zero-page PTEs: nothing referenced
        let s = Window { present: 300, swap: 65, ..Default::default() };
        assert!(!s.collapsible(511, 64, 256) && s.collapsible(511, 65, 256));
        let few = Window { present: 100, swap: 1, ..Default::default() };
        assert!(!few.collapsible(511, 64, 256)); // unmapped > 0 and referenced < 256
    }

    /// The census of this test process: two THPs (one non-zero subpage; all zero) and a 4 KiB
    /// region, read through a 64 KiB buffer. Skips quietly when THP is off for madvise.
    #[test]
    fn census_of_self() {
        let len = 6usize << 20;
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(raw, libc::MAP_FAILED);
        let base = (raw as u64).div_ceil(HPAGE) * HPAGE;
        unsafe {
            libc::madvise(base as *mut _, 4 << 20, libc::MADV_HUGEPAGE);
            *((base + 3 * PAGE + 9) as *mut u8) = 5; // THP 0: subpage 3, first non-zero byte 9
            std::ptr::write_volatile((base + HPAGE) as *mut u8, 0); // THP 1: faulted in, all zero
        }
        let a = CensusArgs {
            pids: vec![std::process::id() as i32],
            all: false,
            buffer: 64 << 10,
            layout: true,
            proc_mem: false,
        };
        let v = census(&a).unwrap();
        let p = &v["processes"][0];
        assert_eq!(p["status"], "ok", "{p}");
        let start = format!("{base:x}");
        let vma = p["vmas"].as_array().unwrap().iter().find(|x| x["start"].as_str() == Some(start.as_str()));
        let thp_on = read_trim("/sys/kernel/mm/transparent_hugepage/enabled").is_some_and(|t| !t.contains("[never]"));
        if let Some(vma) = vma.filter(|x| x["thp_pmd"] == 2) {
            assert_eq!(vma["thp_zero_subpages"], 511 + 512);
            assert_eq!(vma["thp_zero_hist"], json!({"511": 1, "512": 1}));
            assert_eq!(vma["smaps"]["AnonHugePages"], 4096);
            let lay = vma["layout"].as_array().unwrap();
            assert_eq!(lay[0], json!([0, 3, "thp", 0]));
            assert_eq!(lay[1], json!([3, 1, "thp", (C_SPARSE << 13) | 9]));
            assert_eq!(lay[2], json!([4, 1020, "thp", 0]));
            assert_eq!(vma["policies"]["underused_shrinker"]["by_max_ptes_none"][1]["thps_split"], 2);
            assert_eq!(v["scan"]["thp_bytes_read"], 4 << 20);
        } else {
            eprintln!("census_of_self: no THPs here (THP enabled: {thp_on}); contents not checked");
        }
        unsafe { libc::munmap(raw, len) };
    }

    #[test]
    fn underused_rule() {
        let k = Knobs {
            enabled: "madvise".into(),
            pmd_enabled: "inherit".into(),
            max_ptes_none: 511,
            max_ptes_swap: 64,
            max_ptes_shared: 256,
            shrink_underused: true,
            max_small_order: 0,
            all_swap_synchronous: true,
        };
        let mut c = Counts::default();
        for z in [511u32, 448, 0, 512] {
            *c.zero_hist.entry(z).or_default() += 1;
            *c.zero_hist_evictable.entry(z).or_default() += 1;
            c.thp_pmd += 1;
            c.thp_zero_subpages += z as u64;
        }
        let p = policies(&c, &k);
        let u = &p["underused_shrinker"]["by_max_ptes_none"];
        assert_eq!(u[0]["thps_split"], 3); // > 0 zero subpages: 511, 448, 512
        assert_eq!(u[0]["kb_freed"], (511 + 448 + 512) * 4);
        assert_eq!(u[1]["thps_split"], 3); // > 64
        assert_eq!(u[2]["thps_split"], 3); // > 256
        assert_eq!(u[3]["thps_split"], 0); // 511: thp_underused() returns false at once
        let s = &p["seed000_split_on_reclaim"];
        assert_eq!(s["swapout_pages_mainline"], 3 * 512);
        assert_eq!(s["swapout_pages_seed000"], 1 + 64 + 512);
        assert_eq!(s["kb_dropped_instead_of_swapped"], (511 + 448) * 4);
        assert!(k.pmd_on() && k.pmd_allowed(true) && !k.pmd_allowed(false));
    }
}
