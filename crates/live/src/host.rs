//! What the live kernel offers: knob files, snapshots of its counters, the machine as found.

use crate::util::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use thplab_workload::knobs::{self, KnobDef, KnobKind, KnobValues};
use thplab_workload::result::ZoneFrag;

/// A registry knob as found on this kernel.
#[derive(Clone, Debug)]
pub struct LiveKnob {
    pub def: KnobDef,
    /// Present on this kernel (file exists).
    pub present: bool,
}

pub fn live_knobs() -> Vec<LiveKnob> {
    knobs::registry()
        .into_iter()
        .map(|def| {
            let present = def.path.map(|p| std::path::Path::new(p).exists()).unwrap_or(false);
            LiveKnob { def, present }
        })
        .collect()
}

/// Read a knob's current value (None for policies, triggers and missing files).
pub fn read_knob(def: &KnobDef) -> Option<String> {
    if matches!(def.values, KnobValues::Trigger { .. }) {
        return None;
    }
    let p = def.path?;
    let t = read_trim(p)?;
    match def.values {
        KnobValues::Choice { .. } => knobs::parse_sysfs_choice(&t),
        _ => Some(t),
    }
}

/// Does this guest report free pages to its host (virtio-balloon free page reporting)?
pub fn free_page_reporting() -> bool {
    std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon")
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("virtio")))
        .unwrap_or(false)
}

/// The smallest order of free block this guest reports (the page_reporting module's
/// `page_reporting_order` parameter, which a boot option or root may set at any time; -1
/// until a device registers; pageblock_order, 9 on x86, where the parameter is absent).
pub fn page_reporting_order() -> u32 {
    match page_reporting_param::<i64>("page_reporting_order") {
        Some(o) if (0..=11).contains(&o) => o as u32,
        Some(o) if o > 11 => 11,
        _ => 9,
    }
}

/// KiB this guest has reported to its host so far, where its kernel counts them (this
/// reference host's page_reporting module has a `reported_kib` parameter; mainline has none).
pub fn reported_kib() -> Option<u64> {
    page_reporting_param("reported_kib")
}

/// A parameter of the page_reporting module, parsed; None where it is absent or unreadable.
fn page_reporting_param<T: std::str::FromStr>(name: &str) -> Option<T> {
    read_trim(&format!("/sys/module/page_reporting/parameters/{name}")).and_then(|t| t.parse().ok())
}

/// The free blocks this guest has reported to its host, per zone and order, laid out as
/// /proc/buddyinfo (`Node 0, zone   Normal      0 ...`): the start state of free page
/// reporting, which decides what a run's first touches of free memory cost (a reported
/// block refaults in the host page by page, docs/page_reporting.md). A reported free block
/// is PageReported, which 6.18 keeps in PG_uptodate of the block's first page
/// (include/linux/page-flags.h: `PG_reported = PG_uptodate`, only valid for buddy pages;
/// free_pages_prepare() clears PG_uptodate of every freed page), and /proc/kpageflags
/// shows it as KPF_UPTODATE beside KPF_BUDDY, which stable_page_flags() sets on every
/// page of a free block (set_ps_flags(): is_free_buddy_page()). A reported block is at
/// least `page_reporting_order` pages, so its first pfn is aligned to that order: one
/// 8-byte read every 2^order pfns finds them all (~0.05 s for 24 GiB at order 5, where
/// reading every pfn takes 0.6 s of the kernel's time). A block's order is the largest
/// its alignment allows within the run of free samples up to the next reported block or
/// page in use, and below MAX_PAGE_ORDER the largest aligned run of free pages from its
/// head, read page by page (a free neighbour inside a sample's span would lengthen it).
/// None where kpageflags or zoneinfo cannot be read.
pub fn reported_free_blocks() -> Option<String> {
    use std::os::unix::fs::FileExt;
    let order = page_reporting_order();
    if order >= NR_ORDERS {
        return Some(String::new());
    }
    let f = std::fs::File::open("/proc/kpageflags").ok()?;
    let step = 1u64 << order;
    let mut out = String::new();
    for (node, zone, start, spanned) in zone_spans()? {
        let (first, end) = (start.div_ceil(step) * step, start + spanned);
        let n = end.saturating_sub(first).div_ceil(step) as usize;
        let mut samples = vec![0u64; n];
        let mut b = [0u8; 8];
        for (i, fl) in samples.iter_mut().enumerate() {
            if f.read_exact_at(&mut b, (first + i as u64 * step) * 8).is_ok() {
                *fl = u64::from_ne_bytes(b);
            }
        }
        let mut buf = vec![];
        let counts = count_reported(first, order, &samples, |pfn, o| {
            buf.resize(8 << o, 0);
            f.read_exact_at(&mut buf, pfn * 8).ok()?;
            Some(buf.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect())
        });
        out += &format!("Node {node}, zone {zone:>8} ");
        for c in counts {
            out += &format!("{c:>6} ");
        }
        out += "\n";
    }
    Some(out)
}

/// (node, zone, start_pfn, spanned) of each zone with pages, from /proc/zoneinfo (which
/// lists spanned before start_pfn).
fn zone_spans() -> Option<Vec<(u32, String, u64, u64)>> {
    let zoneinfo = read_file("/proc/zoneinfo").ok()?;
    let mut zones = vec![];
    let mut spanned = 0u64;
    zoneinfo_walk(&zoneinfo, |node, zone, t| match t {
        ["Node", ..] => spanned = 0,
        ["spanned", v] => spanned = v.parse().unwrap_or(0),
        ["start_pfn:", v] if spanned > 0 => {
            if let Ok(s) = v.parse() {
                zones.push((node, zone.to_string(), s, spanned));
            }
        }
        _ => {}
    });
    Some(zones)
}

/// The pages in use as found, page by page: what holds the buddies of the free blocks
/// below MAX_PAGE_ORDER, and where (the model lays out its machine from them,
/// `MachineSpec::in_use`, aged.rs). One line per run of pages in use of one kind, `start
/// len kind` (pfns, decimal): kind `m` for pages on an LRU (PageLRU: compaction migrates
/// them), `u` for the rest with flags (slab, page tables, other kernel pages) and `p` for a
/// page with no flags at all: a page on a per-CPU list (free, its refcount 0, which
/// kpageflags cannot show) reads so, as does a bare alloc_pages() page of the kernel's
/// (vmalloc, stacks), and so do the pages of a free block page reporting has taken off its
/// free list to report. On this guest the flagless pages outside whole aligned pageblocks
/// came to the per-CPU lists' count within 0.5 % at the start of two live fill runs; the
/// model puts the per-CPU lists on them and frees the rest (aged.rs `InUse::Flagless`,
/// docs/page_reporting.md "Flagless pages"). Read from /proc/kpageflags
/// (include/uapi/linux/kernel-page-flags.h; stable_page_flags() in fs/proc/page.c), 1 MiB
/// of flags at a time (~0.7 s of the kernel's time for 24 GiB, before the run starts).
/// Left out: a free buddy page (KPF_BUDDY, set on every page of a free block), a reserved
/// page (KPF_RESERVED: memmap, firmware; the model keeps its own) and a pfn with no page
/// (KPF_NOPAGE).
pub fn pages_in_use() -> Option<String> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open("/proc/kpageflags").ok()?;
    let mut out = String::new();
    const CHUNK: u64 = 1 << 17;
    let mut buf = vec![0u8; (CHUNK * 8) as usize];
    for (_, _, start, spanned) in zone_spans()? {
        let mut runs = InUseRuns::default();
        let end = start + spanned;
        let mut pfn = start;
        while pfn < end {
            let n = CHUNK.min(end - pfn);
            let b = &mut buf[..(n * 8) as usize];
            f.read_exact_at(b, pfn * 8).ok()?;
            for (i, c) in b.chunks_exact(8).enumerate() {
                runs.push(pfn + i as u64, in_use_kind(u64::from_ne_bytes(c.try_into().unwrap())));
            }
            pfn += n;
        }
        runs.finish(&mut out);
    }
    Some(out)
}

const KPF_LRU: u64 = 1 << 5;
const KPF_NOPAGE: u64 = 1 << 20;
const KPF_RESERVED: u64 = 1 << 32;

/// What pages_in_use() makes of one page's kpageflags: None (free, reserved or absent),
/// `p` (no flags), `m` (on an LRU) or `u`.
fn in_use_kind(flags: u64) -> Option<char> {
    if flags == 0 {
        Some('p')
    } else if flags & (KPF_BUDDY | KPF_NOPAGE | KPF_RESERVED) != 0 {
        None
    } else if flags & KPF_LRU != 0 {
        Some('m')
    } else {
        Some('u')
    }
}

/// Runs of pages of one kind, written as `start len kind` lines.
#[derive(Default)]
struct InUseRuns {
    run: Option<(u64, u64, char)>,
    text: String,
}

impl InUseRuns {
    fn push(&mut self, pfn: u64, kind: Option<char>) {
        if let (Some((s, n, k)), Some(kind)) = (&mut self.run, kind) {
            if *k == kind && *s + *n == pfn {
                *n += 1;
                return;
            }
        }
        self.flush();
        self.run = kind.map(|k| (pfn, 1, k));
    }

    fn flush(&mut self) {
        if let Some((s, n, k)) = self.run.take() {
            self.text += &format!("{s} {n} {k}\n");
        }
    }

    fn finish(mut self, out: &mut String) {
        self.flush();
        out.push_str(&self.text);
    }
}

/// /proc/zoneinfo's text, empty where it cannot be read: what pcp_lists() and zone_managed()
/// parse (the run's set-up reads it once for both).
pub fn zoneinfo() -> String {
    read_file("/proc/zoneinfo").unwrap_or_default()
}

/// The per-CPU lists of every zone, from a /proc/zoneinfo text's pagesets: per zone and CPU the
/// free pages on the lists (`count:`) and pcp->high (`high:`), as `MachineSpec::pcp`
/// takes them. A CPU that freed much keeps up to pcp->high_max pages there for minutes
/// (decay_pcp_high(): ~2,000 pages a second): 1.3 GiB after compaction-frag's fragment
/// phase on the reference host.
pub fn pcp_lists(text: &str) -> Vec<Value> {
    pagesets(text)
        .into_iter()
        .map(|p| json!({"node": p.node, "zone": p.zone, "cpu": p.cpu, "count": p.count, "high": p.high}))
        .collect()
}

/// One CPU's per-CPU list of one zone in /proc/zoneinfo's pagesets.
#[derive(Debug, PartialEq)]
struct Pageset {
    node: u32,
    zone: String,
    cpu: u32,
    count: u64,
    high: u64,
    /// `batch:`, where the text gives it after `high:`
    batch: Option<u64>,
}

/// Every per-CPU list of a /proc/zoneinfo text: one for each `cpu:` whose `count:` and
/// `high:` follow it (pcp_lists, pcp_of_cpu).
fn pagesets(text: &str) -> Vec<Pageset> {
    let mut out: Vec<Pageset> = vec![];
    let (mut cpu, mut count) = (None::<u32>, None::<u64>);
    // the last list pushed, until its `batch:` line (or the next `cpu:` or zone)
    let mut awaits_batch = false;
    zoneinfo_walk(text, |node, zone, t| match t {
        ["Node", ..] => (cpu, count, awaits_batch) = (None, None, false),
        ["cpu:", c] => (cpu, count, awaits_batch) = (c.parse().ok(), None, false),
        ["count:", c] if cpu.is_some() => count = c.parse().ok(),
        ["high:", h] => {
            if let (Some(c), Some(n), Ok(h)) = (cpu, count, h.parse::<u64>()) {
                out.push(Pageset { node, zone: zone.to_string(), cpu: c, count: n, high: h, batch: None });
                count = None;
                awaits_batch = true;
            }
        }
        ["batch:", b] if awaits_batch => {
            if let Some(p) = out.last_mut() {
                p.batch = b.parse().ok();
            }
            awaits_batch = false;
        }
        _ => {}
    });
    out
}

/// Each zone's managed pages, from a /proc/zoneinfo text: (node, zone, managed). This guest boots
/// with `deferred_init=lazy`: most of ZONE_NORMAL's struct pages are left uninitialised
/// ("5361490 pages left to deferred_grow_zone()" in dmesg) and the zone grows a section
/// (128 MiB) at a time when an allocation finds it below its watermark
/// (get_page_from_freelist() -> _deferred_grow_zone(), mm/page_alloc.c;
/// deferred_grow_zone(), mm/mm_init.c, which 6.18 runs only at boot). The grown memory is
/// memory the guest never touched: each first touch faults in the host.
pub fn zone_managed(text: &str) -> Vec<(u32, String, u64)> {
    let mut out = vec![];
    zoneinfo_walk(text, |node, zone, t| {
        if let ["managed", v] = t {
            if let Ok(m) = v.parse() {
                out.push((node, zone.to_string(), m));
            }
        }
    });
    out
}

/// KiB the zones' managed pages grew by from `a` to `b` (zone_managed()).
pub fn grown_kib(a: &[(u32, String, u64)], b: &[(u32, String, u64)]) -> u64 {
    b.iter()
        .map(|(n, z, m)| {
            let before = a.iter().find(|(n2, z2, _)| n2 == n && z2 == z).map_or(*m, |x| x.2);
            m.saturating_sub(before) * 4
        })
        .sum()
}

/// Each line of a /proc/zoneinfo text as its words, with the node and zone of the section
/// it is in (the section's own `Node 0, zone   Normal` line included).
fn zoneinfo_walk(text: &str, mut f: impl FnMut(u32, &str, &[&str])) {
    let (mut node, mut zone) = (0u32, String::new());
    for l in text.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if let ["Node", n, "zone", z] = t.as_slice() {
            node = n.trim_end_matches(',').parse().unwrap_or(0);
            zone = z.to_string();
        }
        f(node, &zone, &t);
    }
}

const KPF_UPTODATE: u64 = 1 << 3;
const KPF_BUDDY: u64 = 1 << 10;
const NR_ORDERS: u32 = 11;

/// The reported free blocks per order among `samples`, the kpageflags of every
/// 2^`order`-th pfn from `first` (reported blocks are at least that order, so their heads
/// are samples); `pages(pfn, o)` reads the flags of the 2^o pfns from pfn
/// (reported_free_blocks()).
fn count_reported(
    first: u64,
    order: u32,
    samples: &[u64],
    mut pages: impl FnMut(u64, u32) -> Option<Vec<u64>>,
) -> [u64; NR_ORDERS as usize] {
    let n = samples.len();
    let free = |i: usize| samples[i] & KPF_BUDDY != 0;
    let reported = |i: usize| free(i) && samples[i] & KPF_UPTODATE != 0;
    let mut counts = [0u64; NR_ORDERS as usize];
    for i in (0..n).filter(|&i| reported(i)) {
        let pfn = first + ((i as u64) << order);
        let j = (i + 1..n).find(|&j| !free(j) || reported(j)).unwrap_or(n);
        let span = ((j - i) as u64) << order;
        let mut o = pfn.trailing_zeros().min(63 - span.leading_zeros()).clamp(order, NR_ORDERS - 1);
        // below MAX_PAGE_ORDER, every page of the block read: the block is the largest
        // aligned run of free pages from its head (a wholly free buddy would have merged)
        if o > order && o < NR_ORDERS - 1 {
            if let Some(fl) = pages(pfn, o) {
                let end = (1..fl.len()).find(|&k| fl[k] & KPF_BUDDY == 0 || fl[k] & KPF_UPTODATE != 0);
                if let Some(k) = end {
                    o = (63 - (k as u64).leading_zeros()).max(order);
                }
            }
        }
        counts[o as usize] += 1;
    }
    counts
}

/// The CPUs the calling thread may run on, in order (sched_getaffinity); [0] if unknown.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        let v: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
        if v.is_empty() {
            vec![0]
        } else {
            v
        }
    }
}

/// The CPU workload process `i` runs on: as the model places its processes (engine/mod.rs:
/// process i on CPU i modulo the machine's CPUs), the i-th of `cpus` modulo their count.
pub fn process_cpu(cpus: &[usize], i: usize) -> usize {
    cpus[i % cpus.len().max(1)]
}

/// Pin the calling thread to `cpu` (sched_setaffinity); false if the kernel refused.
pub fn pin_to(cpu: usize) -> bool {
    pin_to_set(&[cpu])
}

/// Let the calling thread run on `cpus` again (sched_setaffinity).
pub fn pin_to_set(cpus: &[usize]) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within CPU_SETSIZE
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// fork() with the child's first run on `cpu`: the calling thread is pinned there for the
/// fork (the child inherits the affinity, so wake_up_new_task() can place it nowhere else),
/// then moved to the other CPUs of its set, so that the child does not wait behind it
/// (0.13-0.19 ms when the parent stayed), and let run on its whole set again. Returns
/// fork()'s value.
///
/// Why it matters: x86 sets an mm's bit in mm_cpumask() on every CPU that switches to it
/// (switch_mm_irqs_off) and clears the others at most once a second after the mm's creation
/// (should_trim_cpumask(), init_new_context's next_trim_cpumask), and
/// arch_tlbbatch_should_defer() batches the TLB flushes of try_to_unmap()/try_to_migrate()
/// (reclaim, migration, the split of a large folio) only while a CPU other than the current
/// one is in the mask. A child that first ran where fork placed it and then moved to its
/// CPU batches them through its first second; one that ran on its CPU alone flushes each PTE
/// as it clears it (ptep_clear_flush), as the model's single-CPU processes and calibrate's
/// probes do: a partially mapped 64 KiB folio's split took 7-10 us against 14-16 us on this
/// guest.
pub fn fork_on(cpu: usize) -> libc::pid_t {
    let cpus = allowed_cpus();
    let pinned = pin_to(cpu);
    // SAFETY: fork() has no preconditions; the caller handles both returns
    let pid = unsafe { libc::fork() };
    if pid != 0 && pinned {
        let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
        if !others.is_empty() {
            pin_to_set(&others);
        }
        pin_to_set(&cpus);
    }
    pid
}

/// Free page reporting gives the host the guest's free 2 MiB blocks 2 s after they are freed
/// (mm/page_reporting.c); the first touch of such a block costs a refault in the host
/// (milliseconds). The model starts with its free memory backed, so on such a guest a run
/// first faults in `bytes` (THPs where the THP knobs allow, and every 4 KiB page) and frees
/// them, so that the workload finds backed memory at the head of the free lists, as the
/// model does. Returns the bytes backed (0 on a guest without free page reporting).
///
/// A run that calls MADV_COLLAPSE (`collapses`) where the knobs give a MADV_HUGEPAGE mapping
/// no PMD THPs at fault (enabled=never, or the 2048kB size never) takes whole 2 MiB blocks
/// that 4 KiB faults would not have backed (madv_collapse_latency's 128 collapses: 60 ms in
/// two live runs, 350-641 ms in three that found reported blocks): the region is then
/// collapsed too (MADV_COLLAPSE ignores the sysfs mode), which backs 2 MiB blocks as a
/// fault would, before the munmap frees them.
///
/// The work is done by a child of the runner that exits before the workload starts: its
/// MADV_HUGEPAGE mapping puts its mm on khugepaged's list (khugepaged_enter_vma), and an mm
/// stays there until it exits. Done by the runner itself, the runner's mm stayed on the list
/// through the run, and every workload process forked from it was put there at its fork
/// (khugepaged_fork): its MADV_HUGEPAGE then woke nothing (__khugepaged_enter returns on an mm
/// already flagged MMF_VM_HUGEPAGE, and wakes khugepaged only when the list was empty), so
/// khugepaged's first collapse waited for its scan_sleep_millisecs timer, where the model's
/// khugepaged (which has no runner) starts at once (khugepaged_collapse_time_100's 32
/// collapses reached 64 MiB 386-416 ms after the madvise live, 323 ms in the model;
/// `khugepaged_collect_exited`).
pub fn back_free_memory(bytes: u64, collapses: bool) -> u64 {
    if !free_page_reporting() {
        return 0;
    }
    let pmd_thps = pmd_thp_faults();
    let collapse = collapses && !pmd_thps;
    let backed = match in_child(|| touch_fresh(bytes, true, collapse).0 > 0) {
        Some(true) => huge_len(bytes) as u64,
        Some(false) => 0,
        // no child (fork failed): the runner backs it itself
        None => touch_fresh(bytes, true, collapse).0,
    };
    // only where the madvise could put the child on khugepaged's list
    // (khugepaged_enter_vma: hugepage_pmd_enabled())
    if pmd_thps {
        khugepaged_collect_exited();
    }
    backed
}

/// 4 KiB pages the runner holds from its CPU's per-CPU list while the back-fill runs
/// (`hold_pcp_room`); unmapped on drop, from the CPU the runner is pinned to, so that the
/// frees go back to that list (its overflow drains that order-0 list first, not the
/// back-fill's THPs).
pub struct PcpRoom {
    addr: usize,
    len: usize,
    /// the pages held
    pub pages: u64,
}

impl Drop for PcpRoom {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the runner's own anonymous mapping, mapped by hold_pcp_room and
            // referenced by nothing else
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }
}

/// Room on `cpu`'s per-CPU list for a back-fill of `backfill_bytes`
/// (thplab_workload::footprint::pcp_room_pages, which says why): the runner, pinned to
/// `cpu`, faults in that many 4 KiB pages of a MADV_NOHUGEPAGE mapping, which takes
/// them off the list, and keeps them until the back-fill's process has exited. The list
/// is `cpu`'s in the zone where its high is largest (ZONE_NORMAL). Nothing where the guest
/// does not report free pages (no back-fill) or the list has room.
pub fn hold_pcp_room(cpu: usize, backfill_bytes: u64) -> PcpRoom {
    let none = PcpRoom { addr: 0, len: 0, pages: 0 };
    if !free_page_reporting() || backfill_bytes == 0 {
        return none;
    }
    let Some((count, high, batch)) = pcp_of_cpu(&zoneinfo(), cpu as u32) else {
        return none;
    };
    let pages = thplab_workload::footprint::pcp_room_pages(count, high, batch, backfill_bytes);
    if pages == 0 {
        return none;
    }
    let len = pages as usize * 4096;
    let Some(raw) = map_small_pages(len) else {
        return none;
    };
    for off in (0..len).step_by(4096) {
        // SAFETY: within the fresh mapping
        unsafe { std::ptr::write_volatile((raw as usize + off) as *mut u8, 1) };
    }
    PcpRoom { addr: raw as usize, len, pages }
}

/// A fresh private anonymous mapping of `len` bytes that faults in 4 KiB pages whatever
/// the THP and mTHP modes (MADV_NOHUGEPAGE: VM_NOHUGEPAGE); None if the mmap failed.
fn map_small_pages(len: usize) -> Option<*mut libc::c_void> {
    // SAFETY: a new mapping, no memory of ours changes
    unsafe {
        let m = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if m == libc::MAP_FAILED {
            return None;
        }
        libc::madvise(m, len, libc::MADV_NOHUGEPAGE);
        Some(m)
    }
}

/// (count, high, batch) of `cpu`'s per-CPU list in the zone where its high is largest,
/// from a /proc/zoneinfo text.
fn pcp_of_cpu(text: &str, cpu: u32) -> Option<(u64, u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for p in pagesets(text).into_iter().filter(|p| p.cpu == cpu) {
        if let Some(b) = p.batch {
            if best.is_none_or(|x| p.high > x.1) {
                best = Some((p.count, p.high, b));
            }
        }
    }
    best
}

/// Run `f` in a forked child of this (single-threaded) process and wait for it: Some(what
/// `f` returned), None if the fork failed. The child leaves by _exit(), running no
/// destructor of the runner's (its journal, its guards).
fn in_child(f: impl FnOnce() -> bool) -> Option<bool> {
    // SAFETY: the runner has no other thread here; the child only runs `f` and _exit()s
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return None;
        }
        if pid == 0 {
            libc::_exit(if f() { 0 } else { 1 });
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if errno() != libc::EINTR {
                return None;
            }
        }
        Some(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
    }
}

/// The free pages of the Movable lists below `order` in the zone an allocation of this
/// process tries first (the last zone /proc/pagetypeinfo lists for node 0: Normal on
/// x86-64, DMA32 on a machine without it), from the file's text.
fn small_movable_free_pages(pagetypeinfo: &str, order: u32) -> u64 {
    pagetypeinfo
        .lines()
        .rfind(|l| l.starts_with("Node    0, zone") && l.split_whitespace().nth(5) == Some("Movable"))
        .map(|l| {
            l.split_whitespace()
                .skip(6)
                .take(order as usize)
                .enumerate()
                .map(|(o, n)| n.parse::<u64>().unwrap_or(0) << o)
                .sum()
        })
        .unwrap_or(0)
}

/// A first touch slower than this refaulted in the host (~8-9 us a 4 KiB page on the
/// reference host, 1.3 us backed; a per-CPU list refill of a batch shows as ~4 us).
const HOST_REFAULT_NS: u64 = 6_000;
/// Pages of the small free blocks left untouched (back_small_free_blocks): the margin for
/// other tasks' allocations, whose want would otherwise have this one split a reported block.
const SMALL_FREE_SLACK: u64 = 512;

/// The free blocks below the reporting order, backed again: what the live run finds is
/// to be what the model starts from, where every free page that is not PageReported is
/// backed. That is not so on this guest: a reported block split to serve an allocation
/// leaves its remainders on the lower lists unflagged (expand() takes no PageReported
/// along, __del_page_from_free_list() clears it) and still discarded by the host, and this
/// host's page_reporting also hands it a bitmap of every free page now and then
/// (docs/page_reporting.md). Measured with a probe that touched the small Movable free
/// blocks page by page, smallest order first: after a quarter of an hour of short runs and
/// pauses, 150 MiB of the order-6 to -8 blocks refaulted at ~9 us a page; right after any of
/// 16 scenario runs, next to none. So
/// before a run a child of the runner faults in, 4 KiB at a time (an order-0 allocation
/// takes the smallest free block first: __rmqueue_smallest), as many pages as the Movable
/// lists hold below `order` (the reporting order), less SMALL_FREE_SLACK, re-reading
/// /proc/pagetypeinfo each 16 MiB, and exits; its frees put the same blocks back, backed.
/// The child's frees merge with the pages the per-CPU lists held (the lists' overflow goes
/// to the buddy lists: free_pcppages_bulk) into new blocks of the reporting order and up, and
/// each such free requests a reporting pass (page_reporting_notify_free), due
/// PAGE_REPORTING_DELAY (2 s) later: inside the set-up, where it would hand the host what
/// the probe and the back-fill have just backed, which the model, starting from the free
/// lists read after this step, does not expect. So where the frees made such blocks, this
/// waits for that pass to end (wait_for_reporting_pass) before returning.
/// Returns None on a guest that does not report.
pub fn back_small_free_blocks(order: u32) -> Option<SmallFreeBacked> {
    const CHUNK: u64 = 4096;
    if !free_page_reporting() {
        return None;
    }
    // at most a quarter of what is available: the set-up stays well below free memory
    let cap = meminfo().get("MemAvailable").copied().unwrap_or(0) / 4 / 4;
    let want = |cap_left: u64| {
        let free = read_file("/proc/pagetypeinfo").map(|t| small_movable_free_pages(&t, order)).unwrap_or(0);
        free.saturating_sub(SMALL_FREE_SLACK).min(CHUNK).min(cap_left)
    };
    // SAFETY: an anonymous shared page, where the child leaves its counts (KiB touched and
    // refaulted, the pages in reportable blocks, the pass counters); unmapped below
    let out = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if out == libc::MAP_FAILED {
        return None;
    }
    let counts = out as *mut u64;
    let ok = in_child(|| {
        let (mut touched, mut refaulted) = (0u64, 0u64);
        loop {
            let n = want(cap.saturating_sub(touched));
            if n == 0 {
                break;
            }
            let len = (n * 4096) as usize;
            let Some(m) = map_small_pages(len) else {
                break;
            };
            // SAFETY: the fresh mapping, written one byte a page, unmapped at _exit
            unsafe {
                for off in (0..len).step_by(4096) {
                    let t = now_ns();
                    std::ptr::write_volatile((m as *mut u8).add(off), 1);
                    if now_ns() - t > HOST_REFAULT_NS {
                        refaulted += 1;
                    }
                }
            }
            touched += n;
        }
        // the blocks of the reporting order and up, and the reporting counters, as the
        // child is about to exit
        let blocks = read_file("/proc/buddyinfo").map(|t| reportable_free_pages(&t, order)).unwrap_or(0);
        let (passes, walked) = reporting_counters().unwrap_or((0, 0));
        // SAFETY: the shared page mapped above
        unsafe {
            *counts = touched * 4;
            *counts.add(1) = refaulted * 4;
            *counts.add(2) = blocks;
            *counts.add(3) = passes;
            *counts.add(4) = walked;
        }
        true
    });
    // the same after its exit
    let blocks_after = read_file("/proc/buddyinfo").map(|t| reportable_free_pages(&t, order)).unwrap_or(0);
    let counters_after = reporting_counters();
    // SAFETY: the shared page mapped above; the child has exited
    let (backed_kib, refaulted_kib, blocks_before, passes, walked) =
        unsafe { (*counts, *counts.add(1), *counts.add(2), *counts.add(3), *counts.add(4)) };
    unsafe { libc::munmap(out, 4096) };
    if ok != Some(true) {
        return None;
    }
    let (pass_wait_ns, passes_waited) = match counters_after {
        Some(after) => {
            let n = passes_to_wait(blocks_before, blocks_after, (passes, walked), after);
            let t = now_ns();
            let seen = wait_for_reporting_pass(after.0, n);
            (Some(now_ns() - t), seen)
        }
        None => (None, 0),
    };
    Some(SmallFreeBacked { backed_kib, refaulted_kib, pass_wait_ns, passes_waited })
}

/// What back_small_free_blocks() did: the KiB it touched and of them the KiB that
/// refaulted in the host, and how long it then waited for the reporting passes its frees
/// requested (None where the guest has no pass counter) and how many ended meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallFreeBacked {
    pub backed_kib: u64,
    pub refaulted_kib: u64,
    pub pass_wait_ns: Option<u64>,
    pub passes_waited: u64,
}

/// Free pages in blocks of `order` and up, over every zone /proc/buddyinfo lists: the
/// blocks free page reporting walks (page_reporting_process: each zone's lists from
/// page_reporting_order up).
fn reportable_free_pages(buddyinfo: &str, order: u32) -> u64 {
    parse_buddyinfo(buddyinfo)
        .iter()
        .flat_map(|(_, _, counts)| counts.iter().enumerate().skip(order as usize).map(|(o, n)| n << o))
        .sum()
}

/// This guest's reporting passes so far and the blocks its passes have walked (the
/// reference host's page_reporting module counts both: `passes` at a pass's end, `walked`
/// as it goes; mainline has neither).
fn reporting_counters() -> Option<(u64, u64)> {
    Some((page_reporting_param("passes")?, page_reporting_param("walked")?))
}

/// How many reporting passes are to end before the free lists are as the model starts
/// them, after the small-block step: none where its frees made no new free pages in blocks
/// of the reporting order (`before` and `after` the child's exit: the pages in such blocks;
/// a pass already due may still come, as before the step); else one, the pass its frees
/// requested (or one already due, which finds the new blocks too), and two where a pass was
/// under way as the child exited (`walked` moved and `passes` did not, child's (passes,
/// walked) against the runner's after the exit): that pass may have walked past the new
/// blocks, and a request while it runs is served by the next, 2 s after it ends
/// (page_reporting_process: the state is REQUESTED again, so the work reschedules).
fn passes_to_wait(before: u64, after: u64, child: (u64, u64), runner: (u64, u64)) -> u64 {
    if after <= before {
        0
    } else if runner.0 == child.0 && runner.1 != child.1 {
        2
    } else {
        1
    }
}

/// Wait until the guest's pass counter has risen `n` above `from`: at most 3 s a pass (the
/// request's PAGE_REPORTING_DELAY of 2 s, and a pass of up to ~0.8 s here). Returns the
/// passes that ended.
fn wait_for_reporting_pass(from: u64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let deadline = now_ns() + n * 3_000_000_000;
    loop {
        let now = reporting_counters().map(|(p, _)| p.saturating_sub(from)).unwrap_or(n);
        if now >= n || now_ns() >= deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// khugepaged frees the slot of an exited mm at once unless it is the one its cursor is on
/// (__khugepaged_exit), which its next pass collects (collect_mm_slot) when its
/// scan_sleep_millisecs timer ends, up to 10 s later; until then the list is not empty, and
/// the next mm to join it does not wake khugepaged (__khugepaged_enter). A write of
/// scan_sleep_millisecs (its own value) ends the timer and wakes it
/// (scan_sleep_millisecs_store: khugepaged_sleep_expire = 0): its pass collects the slot and,
/// at the list's end, counts a full scan. Waits up to 50 ms for that count to move (it does
/// not where the slot was already gone: khugepaged was idle, and stays so).
fn khugepaged_collect_exited() {
    let dir = "/sys/kernel/mm/transparent_hugepage/khugepaged";
    let Some(ms) = read_trim(&format!("{dir}/scan_sleep_millisecs")) else { return };
    let scans = || read_trim(&format!("{dir}/full_scans"));
    let before = scans();
    if write_file(&format!("{dir}/scan_sleep_millisecs"), &ms).is_err() {
        return;
    }
    let t = now_ns();
    while scans() == before && now_ns() - t < 50_000_000 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Does a MADV_HUGEPAGE mapping take PMD THPs at fault under the knobs now
/// (thp_vma_allowable_orders: the 2048kB size's own mode, or the top-level one it inherits)?
pub fn pmd_thp_faults() -> bool {
    let read = |path: &str| read_trim(path).unwrap_or_default();
    pmd_thp_faults_in(
        &read("/sys/kernel/mm/transparent_hugepage/enabled"),
        &read("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled"),
    )
}

/// pmd_thp_faults() from the two files' text (`always [madvise] never`; the size's file
/// may be missing: empty).
fn pmd_thp_faults_in(top: &str, pmd: &str) -> bool {
    match knobs::parse_sysfs_choice(pmd).as_deref() {
        Some("never") => false,
        Some("inherit") | None => knobs::parse_sysfs_choice(top).as_deref() != Some("never"),
        Some(_) => true,
    }
}

/// Fault in `bytes` (rounded up to 2 MiB) of fresh anonymous memory, one write per 4 KiB, and
/// unmap it: the allocations take the blocks an allocation of the same kind would take next
/// (THPs or mTHPs where the knobs allow with `huge`, else 4 KiB pages from the small orders
/// first: __rmqueue_smallest), the writes make the host back any of them it had discarded
/// (free page reporting), and the frees put them back at the head of the per-CPU and buddy
/// lists, where the next allocations of that kind find them (within PAGE_REPORTING_DELAY,
/// 2 s, before the worker reports them again). Returns the bytes faulted in (0 if the mmap
/// failed).
pub fn back_memory(bytes: u64, huge: bool) -> u64 {
    touch_fresh(bytes, huge, false).0
}

/// A PMD-size block: touch_fresh() maps whole ones, aligned.
const HPAGE: usize = 2 << 20;

/// `bytes` rounded up to 2 MiB: what touch_fresh() maps and faults in.
fn huge_len(bytes: u64) -> usize {
    (bytes as usize).div_ceil(HPAGE) * HPAGE
}

/// back_memory()'s work: the bytes faulted in (0 if the mmap failed), and the writes' time
/// per 4 KiB page (elapsed less this thread's run-queue wait, ns); with `collapse`, the
/// region is then collapsed into THPs (MADV_COLLAPSE; failures ignored).
fn touch_fresh(bytes: u64, huge: bool, collapse: bool) -> (u64, f64) {
    if bytes == 0 {
        return (0, 0.0);
    }
    let len = huge_len(bytes);
    unsafe {
        // 2 MiB aligned, so that every block can be a THP
        let raw = libc::mmap(
            std::ptr::null_mut(),
            len + HPAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return (0, 0.0);
        }
        let base = (raw as usize).next_multiple_of(HPAGE);
        libc::madvise(base as *mut libc::c_void, len, if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE });
        let ns = crate::calibrate::timed(len / 4096, || {
            for off in (0..len).step_by(4096) {
                std::ptr::write_volatile((base + off) as *mut u8, 1);
            }
        });
        if collapse {
            libc::madvise(base as *mut libc::c_void, len, libc::MADV_COLLAPSE);
        }
        libc::munmap(raw, len + HPAGE);
        (len as u64, ns)
    }
}

/// The memory the host-speed probe faults (fault_4k_probe_ns; 4096 pages, ~10 ms): before
/// each live run, and in each of calibrate's CPU windows (its `probe_fault_4k_ns`).
pub const PROBE_BYTES: u64 = 16 << 20;

/// The host's speed as a run starts: a 4 KiB write fault's time (ns, the page's clearing
/// included) over `bytes` of memory backed just before, as `thplab calibrate` measures its
/// fault_4k_total. `thplab validate` sets it beside the profile's probe_fault_4k_ns (the same
/// probe in calibrate's CPU windows; with --host-speed auto, the model runs at that speed):
/// this host's speed moves by tens of percent from one ten minutes to the next
/// (python/thplab/validate.py, stop 35), and with it every live time. None if the mmap
/// failed.
pub fn fault_4k_probe_ns(bytes: u64) -> Option<f64> {
    back_memory(2 * bytes, false);
    match touch_fresh(bytes, false, false) {
        (0, _) => None,
        (_, ns) => Some(ns),
    }
}

/// Iterations of cpu_probe_ns()'s loop: ~90-120 us on this host's vCPU (a Xeon at
/// 2.1 GHz, 2026-12-06).
pub const CPU_PROBE_ITERS: u64 = 50_000;

/// The host's speed at an instant: a loop that reads and writes one word on the stack each
/// step (a volatile running sum), with no system call, allocation or page touched, so
/// running it between a workload's phases changes no counter and no free list. This
/// guest's speed moves by up to 2x within seconds with no steal time counted (its thread's
/// CPU time equals its wall time), in the memory path, not the ALU: over 127 rounds of 90 s
/// a pure register chain varied 16-18 us while a 4 MiB munmap took 94-215 ns a page and a
/// 4 KiB fault 1,138-2,086 ns; this loop (355-487 us at 200,000 steps) followed them
/// (correlation 0.59 with the munmap, 0.62 with the fault), where a loop passing its sum
/// through std::hint::black_box did not (26-124 us, -0.19). The live runner takes it before
/// and after every timed phase (`phase_cpu_probe_ns`); `thplab validate` sets each phase's
/// against the profile's probe_cpu_ns (docs/host_speed.md).
pub fn cpu_probe_ns() -> u64 {
    let t = now_ns();
    let mut x = 0u64;
    for k in 0..CPU_PROBE_ITERS {
        // SAFETY: x is a live local; the volatile accesses keep the load and store per step
        unsafe {
            let v = std::ptr::read_volatile(&x);
            std::ptr::write_volatile(&mut x, v.wrapping_add(k.wrapping_mul(k)));
        }
    }
    std::hint::black_box(x);
    now_ns().saturating_sub(t)
}

/// Every non-trigger knob's value as a live run starts: files read back, policies at the value
/// that describes this kernel.
pub fn knob_values(lk: &[LiveKnob]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for k in lk {
        match k.def.kind {
            KnobKind::Policy => {
                let v = match k.def.live_value {
                    Some(v) => v.to_string(),
                    None if k.def.name == "thplab.free_page_reporting" => {
                        if free_page_reporting() {
                            "1".into()
                        } else {
                            "0".into()
                        }
                    }
                    None if k.def.name == "thplab.page_reporting_order" => page_reporting_order().to_string(),
                    None => k.def.default.to_string(),
                };
                m.insert(k.def.name.to_string(), v);
            }
            _ => {
                if let Some(v) = read_knob(&k.def) {
                    m.insert(k.def.name.to_string(), v);
                }
            }
        }
    }
    m
}

pub fn uname() -> (String, String) {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |a: &[libc::c_char]| unsafe { std::ffi::CStr::from_ptr(a.as_ptr()) }.to_string_lossy().to_string();
    (s(&u.release), s(&u.version))
}

pub fn online_nodes() -> Vec<u32> {
    let t = read_trim("/sys/devices/system/node/online").unwrap_or_else(|| "0".into());
    parse_list(&t)
}

/// "0-3,5" -> [0,1,2,3,5]
pub fn parse_list(t: &str) -> Vec<u32> {
    let mut v = vec![];
    for part in t.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                v.extend(a..=b);
            }
        } else if let Ok(a) = part.parse() {
            v.push(a);
        }
    }
    v
}

/// The machine as found, in the MachineSpec shape (so the model can be run on "the same" machine).
pub fn machine_found(swap: &[Value]) -> Value {
    let block = read_trim("/sys/devices/system/memory/block_size_bytes").and_then(|s| u64::from_str_radix(&s, 16).ok());
    let mut nodes = vec![];
    for n in online_nodes() {
        let dir = format!("/sys/devices/system/node/node{n}");
        let cpus = read_trim(&format!("{dir}/cpulist")).map(|s| parse_list(&s).len()).unwrap_or(1).max(1);
        let mut mem = 0u64;
        if let (Some(bs), Ok(rd)) = (block, std::fs::read_dir(&dir)) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.starts_with("memory")
                    && name[6..].chars().all(|c| c.is_ascii_digit())
                    && read_trim(&format!("{dir}/{name}/online")).as_deref() == Some("1")
                {
                    mem += bs;
                }
            }
        }
        if mem == 0 {
            let t = read_file(&format!("{dir}/meminfo")).unwrap_or_default();
            for l in t.lines() {
                if l.contains("MemTotal:") {
                    mem = l.split_whitespace().rev().nth(1).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0) * 1024;
                }
            }
        }
        let mem = (mem / (2 << 20)) * (2 << 20);
        nodes.push(json!({"mem": thplab_workload::units::fmt_size(mem), "cpus": cpus}));
    }
    // a running host's free lists are in no address order (MachineSpec::aged)
    json!({"nodes": nodes, "swap": swap, "name": "host (as found by thplab-live)", "aged": true})
}

/// The THP per-size stats files (hugepages-<N>kB/stats/*), as counters `<size>/<stat>`.
pub fn mthp_stats() -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir("/sys/kernel/mm/transparent_hugepage") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if !name.starts_with("hugepages-") {
                continue;
            }
            let sdir = e.path().join("stats");
            if let Ok(sd) = std::fs::read_dir(&sdir) {
                for s in sd.flatten() {
                    if let Ok(t) = std::fs::read_to_string(s.path()) {
                        if let Ok(v) = t.trim().parse::<i64>() {
                            m.insert(format!("{}/{}", name, s.file_name().to_string_lossy()), v);
                        }
                    }
                }
            }
        }
    }
    m
}

pub fn khugepaged_stats() -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for f in ["pages_collapsed", "full_scans"] {
        if let Some(v) =
            read_trim(&format!("/sys/kernel/mm/transparent_hugepage/khugepaged/{f}")).and_then(|s| s.parse().ok())
        {
            m.insert(f.to_string(), v);
        }
    }
    m
}

pub const ZRAM_MM_STAT: [&str; 9] = [
    "orig_data_size",
    "compr_data_size",
    "mem_used_total",
    "mem_limit",
    "mem_used_max",
    "same_pages",
    "pages_compacted",
    "huge_pages",
    "huge_pages_since",
];

pub fn zram_mm_stat(dev: &str) -> Option<Value> {
    let t = read_trim(&format!("/sys/block/{dev}/mm_stat"))?;
    let mut m = serde_json::Map::new();
    for (i, v) in t.split_whitespace().enumerate() {
        if let (Some(n), Ok(x)) = (ZRAM_MM_STAT.get(i), v.parse::<i64>()) {
            m.insert(n.to_string(), json!(x));
        }
    }
    m.insert("raw".into(), json!(t));
    Some(Value::Object(m))
}

pub use thplab_workload::machine::parse_buddyinfo;

/// The kernel's fragmentation metrics (mm/vmstat.c, mm/compaction.c) computed from buddyinfo.
pub fn fragmentation(buddyinfo: &str) -> Vec<ZoneFrag> {
    let mut out = vec![];
    for (node, zone, counts) in parse_buddyinfo(buddyinfo) {
        let free_pages: u64 = counts.iter().enumerate().map(|(o, n)| n << o).sum();
        let blocks_total: u64 = counts.iter().sum();
        let mut extfrag = vec![];
        let mut fi = vec![];
        for order in 0..=10usize {
            let suitable: u64 =
                counts.iter().enumerate().filter(|(o, _)| *o >= order).map(|(o, n)| n << (o - order)).sum();
            extfrag.push(((free_pages - (suitable << order)) * 100).checked_div(free_pages).unwrap_or(0));
            fi.push(if suitable > 0 {
                -1000
            } else if blocks_total == 0 {
                0
            } else {
                1000 - ((1000 + (free_pages * 1000 / (1u64 << order)) as i64) / blocks_total as i64)
            });
        }
        out.push(ZoneFrag { node, zone, fragmentation_score: extfrag[9], extfrag, fragmentation_index: fi });
    }
    out
}

/// A task's total run-queue wait (schedstat run_delay, ns).
pub fn run_delay_ns(pid: u32) -> u64 {
    read_trim(&format!("/proc/{pid}/schedstat"))
        .and_then(|t| t.split_whitespace().nth(1).and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

/// The reclaim and THP kernel threads (kswapd*, kcompactd*, khugepaged): (comm, pid), found
/// by a scan of /proc (which caches a dentry and an inode per process and file it reads:
/// a run scans once and reads only these threads' stat at its phase ends).
pub fn kthreads() -> Vec<(String, String)> {
    let mut out = vec![];
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().filter(|s| s.bytes().all(|b| b.is_ascii_digit())) else { continue };
        let Some(comm) = read_trim(&format!("/proc/{pid}/comm")) else { continue };
        if comm.starts_with("kswapd") || comm.starts_with("kcompactd") || comm == "khugepaged" {
            out.push((comm, pid.to_string()));
        }
    }
    out
}

/// CPU time (user + system, ns) of the memory-management kernel threads `threads`, by comm,
/// from /proc/PID/stat (utime and stime in clock ticks).
pub fn kthread_cpu_ns_of(threads: &[(String, String)]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let tick = crate::util::clk_tck();
    for (comm, pid) in threads {
        let Ok(stat) = read_file(&format!("/proc/{pid}/stat")) else { continue };
        // fields after the parenthesised comm: state is field 3, utime 14, stime 15
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        out.insert(comm.clone(), ticks * 1_000_000_000 / tick);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The small free blocks back_small_free_blocks() backs are the Movable ones below the
    /// reporting order of the last zone listed (the one an allocation tries first), in pages.
    #[test]
    fn small_free_blocks_are_the_last_zones_movable_ones_below_the_order() {
        let text = "Page block order: 9\nPages per block:  512\n\n\
            Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 \n\
            Node    0, zone    DMA32, type    Unmovable      1      0      0      0      0      0      0      0      0      0      0 \n\
            Node    0, zone    DMA32, type      Movable      7      7      7      7      7      7      7      7      7      7    700 \n\
            Node    0, zone   Normal, type    Unmovable     50     40      0      0      0      0      0      0      0      0      0 \n\
            Node    0, zone   Normal, type      Movable     10      4      2      1      1      0      0      0      3      5   4000 \n\
            Node    0, zone   Normal, type  Reclaimable      9      9      0      0      0      0      0      0      0      0      0 \n";
        // 10 + 4*2 + 2*4 + 1*8 + 1*16 + 3*256 below order 9
        assert_eq!(small_movable_free_pages(text, 9), 10 + 8 + 8 + 8 + 16 + 768);
        // from order 5 the order-5+ blocks are reported, not small
        assert_eq!(small_movable_free_pages(text, 5), 10 + 8 + 8 + 8 + 16);
        assert_eq!(small_movable_free_pages("", 9), 0);
    }

    /// The runner's room for the back-fill comes off its CPU's list in ZONE_NORMAL.
    #[test]
    fn the_room_is_taken_from_the_cpus_list_with_the_largest_high() {
        let zi = "Node 0, zone    DMA32\n  pagesets\n    cpu: 0\n              count:    5\n              high:     3246\n              batch:    63\n    cpu: 1\n              count:    7\n              high:     3246\n              batch:    63\nNode 0, zone   Normal\n  pagesets\n    cpu: 0\n              count:    336184\n              high:     337141\n              batch:    63\n              high_min: 6\n    cpu: 1\n              count:    9859\n              high:     10081\n              batch:    63\n";
        assert_eq!(pcp_of_cpu(zi, 0), Some((336_184, 337_141, 63)));
        assert_eq!(pcp_of_cpu(zi, 1), Some((9_859, 10_081, 63)));
        assert_eq!(pcp_of_cpu(zi, 2), None);
        // the lists as MachineSpec::pcp takes them, from the same walk
        let lists = pcp_lists(zi);
        assert_eq!(lists.len(), 4);
        assert_eq!(lists[2], json!({"node": 0, "zone": "Normal", "cpu": 0, "count": 336_184, "high": 337_141}));
    }

    /// The small-block step waits for the reporting passes its frees requested: none where
    /// they made no new pages in blocks of the reporting order (counted over every zone), one
    /// where they did, two where a pass was walking the lists as the child exited.
    #[test]
    fn the_small_block_step_waits_for_the_pass_its_new_blocks_request() {
        let bi = |n9: u64, n10: u64| {
            format!(
                "Node 0, zone      DMA      0      0      0      0      0      0      0      0      0      1      3 \n\
                 Node 0, zone    DMA32      5      5      5      5      5      5      5      5      5      2    700 \n\
                 Node 0, zone   Normal     90     40     20     10      4      2      1      1      1   {n9}   {n10} \n"
            )
        };
        let pages = |t: &str, o| reportable_free_pages(t, o);
        assert_eq!(pages(&bi(4, 100), 9), (1 + 2 + 4) * 512 + (3 + 700 + 100) * 1024);
        // from order 5 the order 5-8 blocks count too
        assert_eq!(pages(&bi(4, 100), 5) - pages(&bi(4, 100), 9), 5 * (32 + 64 + 128 + 256) + 2 * 32 + 64 + 128 + 256);
        let (before, after) = (pages(&bi(4, 100), 9), pages(&bi(6, 100), 9));
        // two order-9 blocks merged in: one pass, or two with one walking as the child exited
        assert_eq!(passes_to_wait(before, after, (7, 50), (7, 50)), 1);
        assert_eq!(passes_to_wait(before, after, (7, 50), (8, 60)), 1);
        assert_eq!(passes_to_wait(before, after, (7, 50), (7, 60)), 2);
        // two order-9 blocks became one order-10 block: nothing new to report
        assert_eq!(passes_to_wait(before, pages(&bi(2, 101), 9), (7, 50), (7, 60)), 0);
        // fewer (another task allocated meanwhile): no wait
        assert_eq!(passes_to_wait(after, before, (7, 50), (7, 50)), 0);
        assert_eq!(wait_for_reporting_pass(7, 0), 0);
    }

    /// Each zone's managed pages come from its own section of /proc/zoneinfo, and the growth
    /// between two readings is summed over the zones in KiB (a zone that shrank or was not
    /// read before counts nothing).
    #[test]
    fn the_zones_growth_is_their_managed_pages_gained() {
        let zi = |normal: u64| {
            format!(
                "Node 0, zone    DMA32\n  pages free     1000\n        spanned  1044480\n        present  782336\n        managed  772845\n\
                 Node 0, zone   Normal\n  pages free     368229\n        spanned  5505024\n        present  5505024\n        managed  {normal}\n"
            )
        };
        let a = zone_managed(&zi(753_664));
        assert_eq!(a, vec![(0, "DMA32".to_string(), 772_845), (0, "Normal".to_string(), 753_664)]);
        let b = zone_managed(&zi(753_664 + 2 * 32_768));
        assert_eq!(grown_kib(&a, &b), 2 * 32_768 * 4, "two sections of 128 MiB");
        assert_eq!(grown_kib(&b, &a), 0);
        assert_eq!(grown_kib(&[], &b), 0);
    }

    /// The CPU probe the runner takes between phases touches no new memory: it faults no
    /// more than a spin on the clock for as long, interleaved with it. Other tests in this
    /// process move memory meanwhile (compaction, reclaim), and a page of this thread's
    /// stack they migrate faults on its next touch, in whichever loop runs then (16 faults
    /// over 1,000 probes in one `make test`, none alone), so the two loops share them; a
    /// probe that touched fresh memory would fault once a call.
    #[test]
    fn cpu_probe_faults_no_more_than_a_spin_as_long() {
        let flt = || {
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
            (ru.ru_minflt + ru.ru_majflt) as u64
        };
        cpu_probe_ns();
        let (mut probe, mut spin, mut took) = (0u64, 0u64, 0u64);
        for _ in 0..1000 {
            let f = flt();
            let ns = cpu_probe_ns();
            probe += flt() - f;
            took += ns;
            let (f, t) = (flt(), now_ns());
            while now_ns() - t < ns {}
            spin += flt() - f;
        }
        assert!(took > 0);
        assert!(probe <= 2 * spin + 8, "{probe} faults in 1,000 probes, {spin} in the spins between them");
    }

    /// The back-fill collapses only where a MADV_HUGEPAGE fault gets no PMD THP: the
    /// 2048kB size's own mode decides, `inherit` (or no such file) takes the top-level one.
    #[test]
    fn pmd_thp_faults_follow_the_size_then_the_top_level_mode() {
        let (always, madvise, never) = ("[always] madvise never", "always [madvise] never", "always madvise [never]");
        let inherit = "always [inherit] madvise never";
        assert!(pmd_thp_faults_in(madvise, inherit));
        assert!(!pmd_thp_faults_in(never, inherit));
        assert!(!pmd_thp_faults_in(never, ""));
        assert!(pmd_thp_faults_in(always, ""));
        assert!(pmd_thp_faults_in(never, "always inherit [madvise] never"));
        assert!(!pmd_thp_faults_in(always, never));
    }

    /// count_reported() on a made-up zone of 4096 pfns sampled every 32: a reported order-10
    /// block; a reported order-5 block whose buddy begins with a free order-3 block (the
    /// samples alone would make it order 6; its pages say 5); a reported order-7 block
    /// next to an unreported free order-7 one (its own head, no flag: a sample like a tail);
    /// pages in use; and a reported order-5 block at the zone's end.
    #[test]
    fn reported_blocks_are_counted_by_order() {
        let mut fl = vec![0u64; 4096];
        let free = |fl: &mut [u64], pfn: usize, o: u32, reported: bool| {
            for f in &mut fl[pfn..pfn + (1 << o)] {
                *f = KPF_BUDDY;
            }
            if reported {
                fl[pfn] |= KPF_UPTODATE;
            }
        };
        free(&mut fl, 0, 10, true);
        free(&mut fl, 1024, 5, true);
        free(&mut fl, 1056, 3, false);
        free(&mut fl, 1152, 7, true);
        free(&mut fl, 1280, 7, false);
        free(&mut fl, 4064, 5, true);
        let samples: Vec<u64> = fl.iter().step_by(32).copied().collect();
        let c = count_reported(0, 5, &samples, |pfn, o| Some(fl[pfn as usize..(pfn + (1 << o)) as usize].to_vec()));
        assert_eq!(c, [0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 1]);
        // without the page reads, the order-5 block beside the free order-3 one reads as 6
        let c = count_reported(0, 5, &samples, |_, _| None);
        assert_eq!(c[5..], [1, 1, 1, 0, 0, 1]);
    }

    /// pages_in_use()'s runs: free (buddy), reserved and absent pages end a run; LRU pages
    /// are `m`, other flagged pages `u`, flagless ones `p`; a change of kind starts a new run.
    #[test]
    fn pages_in_use_are_runs_by_kind() {
        const KPF_SLAB: u64 = 1 << 7;
        let flags = [KPF_BUDDY, KPF_LRU, KPF_LRU | 1, KPF_SLAB, 0, KPF_SLAB, KPF_RESERVED | 1, KPF_NOPAGE, KPF_LRU];
        let mut runs = InUseRuns::default();
        for (i, f) in flags.iter().enumerate() {
            runs.push(100 + i as u64, in_use_kind(*f));
        }
        let mut out = String::new();
        runs.finish(&mut out);
        assert_eq!(out, "101 2 m\n103 1 u\n104 1 p\n105 1 u\n108 1 m\n");
    }

    /// Processes go round the allowed CPUs as the model's go round its CPUs (process i on
    /// CPU i modulo their count), and pinning the calling thread shows in its affinity
    /// until it is let run on the whole set again.
    #[test]
    fn processes_are_pinned_round_the_allowed_cpus() {
        assert_eq!(process_cpu(&[0, 1], 0), 0);
        assert_eq!(process_cpu(&[0, 1], 1), 1);
        assert_eq!(process_cpu(&[0, 1], 2), 0);
        assert_eq!(process_cpu(&[2, 5, 7], 4), 5);
        // on a thread of its own, so that no other test runs with its affinity changed
        std::thread::spawn(|| {
            let cpus = allowed_cpus();
            assert!(!cpus.is_empty());
            let last = *cpus.last().unwrap();
            assert!(pin_to(last));
            assert_eq!(allowed_cpus(), vec![last]);
            assert!(pin_to_set(&cpus));
            assert_eq!(allowed_cpus(), cpus);
        })
        .join()
        .unwrap();
    }

    /// fork_on(cpu)'s child first runs on `cpu` (its exit status is the CPU it found itself
    /// on before doing anything else), and the parent's affinity is as it was.
    #[test]
    fn fork_on_starts_the_child_on_its_cpu() {
        std::thread::spawn(|| {
            let cpus = allowed_cpus();
            for _ in 0..4 {
                for &c in cpus.iter().filter(|&&c| c < 256) {
                    let pid = fork_on(c);
                    assert!(pid >= 0);
                    if pid == 0 {
                        // SAFETY: sched_getcpu and _exit are async-signal-safe
                        unsafe { libc::_exit(libc::sched_getcpu()) };
                    }
                    assert_eq!(allowed_cpus(), cpus);
                    let mut status = 0;
                    // SAFETY: waits for the child just forked
                    unsafe { libc::waitpid(pid, &mut status, 0) };
                    assert!(libc::WIFEXITED(status));
                    assert_eq!(libc::WEXITSTATUS(status) as usize, c, "child of fork_on({c})");
                }
            }
        })
        .join()
        .unwrap();
    }
}
