//! proptest generators of whole cases: a machine (1-4 nodes, 1-4 CPUs each, 0-3 swap devices
//! of every type with priorities, sometimes a small TLB or another kernel reserve), start-up
//! values for knobs drawn from the knob registry (`thplab_workload::knobs::registry()`: every
//! sysfs/sysctl knob and every `thplab.*` policy), and 1-4 processes whose ops cover every
//! operation of the workload language (every madvise advice, mprotect, move_pages, prctl,
//! `set` of any knob including the triggers vm.compact_memory and vm.drop_caches, kalloc of
//! every order, kfree, drop_caches, sleep, phase, mmap with populate/align, ...).
//!
//! Strategies draw raw numbers and build JSON from them, so every shrunk value is still a
//! valid workload: regions and kalloc sets are picked modulo what exists, offsets and lengths
//! modulo the region's size. Sizes stay small (regions up to ~24 MiB, nodes 64-256 MiB, one
//! node half the time) so a case takes about 10 ms (`case_times` in properties.rs measures).

#![allow(dead_code)]

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use thplab_workload::knobs::{registry, KnobDef, KnobValues};

pub const ADVICE: &[&str] = &["hugepage", "nohugepage", "cold", "pageout", "free", "dontneed", "collapse", "willneed"];
pub const SWAP_TYPES: &[&str] = &["zram", "disk", "ssd", "pmem", "file"];
const ZRAM_COMP: &[&str] = &["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"];
const NODE_MEM_MIB: &[u64] = &[64, 96, 128, 80, 192, 256];

/// Knobs a workload may give start-up values for: every registry knob but the triggers.
pub fn settable_knobs() -> Vec<KnobDef> {
    registry().into_iter().filter(|k| !matches!(k.values, KnobValues::Trigger { .. })).collect()
}

/// Knobs a `set` op may write: the whole registry (triggers included).
pub fn all_knobs() -> Vec<KnobDef> {
    registry()
}

/// Values worth trying beyond the uniform draw, and the top of the uniform draw, for the
/// integer knobs whose accepted range is far wider than a small machine needs.
fn int_profile(name: &str) -> (&'static [i64], Option<i64>) {
    match name {
        "transparent_hugepage/khugepaged/scan_sleep_millisecs" => (&[0, 1, 10, 100, 1000, 10000], Some(2000)),
        "transparent_hugepage/khugepaged/alloc_sleep_millisecs" => (&[0, 1, 50, 1000, 60000], Some(5000)),
        "transparent_hugepage/khugepaged/pages_to_scan" => (&[1, 8, 511, 512, 4096, 65536], Some(8192)),
        "transparent_hugepage/khugepaged/max_ptes_none"
        | "transparent_hugepage/khugepaged/max_ptes_swap"
        | "transparent_hugepage/khugepaged/max_ptes_shared" => (&[0, 1, 64, 256, 409, 510, 511], None),
        "vm.min_free_kbytes" => (&[0, 128, 1024, 4096, 16384], Some(16384)),
        "vm.watermark_scale_factor" => (&[1, 10, 200, 1000, 3000], None),
        "vm.watermark_boost_factor" => (&[0, 15000, 30000], Some(60000)),
        "vm.swappiness" => (&[0, 1, 60, 100, 200], None),
        "vm.compaction_proactiveness" => (&[0, 20, 90, 100], None),
        "vm.extfrag_threshold" => (&[0, 500, 1000], None),
        _ => (&[], None),
    }
}

/// A value for knob `k` from the raw number `x` (0 gives the knob's minimum / first choice).
pub fn knob_value(k: &KnobDef, x: u64) -> String {
    knob_value_any(k, x)
}

fn knob_value_any(k: &KnobDef, x: u64) -> String {
    match &k.values {
        KnobValues::Choice { choices } => choices[x as usize % choices.len()].to_string(),
        KnobValues::Int { min, max } | KnobValues::Trigger { min, max } => {
            let (special, cap) = int_profile(k.name);
            let hi = cap.unwrap_or(*max).min(*max);
            let y = x / 8;
            match x % 8 {
                // the knob's own default ("auto" for vm.min_free_kbytes)
                5 if !k.default.is_empty() => k.default.to_string(),
                // the top of the accepted range (e.g. a scan sleep of u32::MAX ms), rarely
                7 => max.to_string(),
                4 | 6 if !special.is_empty() => {
                    let v = special[y as usize % special.len()];
                    v.clamp(*min, *max).to_string()
                }
                _ => (min + (y % ((hi - min) as u64 + 1)) as i64).to_string(),
            }
        }
    }
}

fn sz(pages: u64) -> String {
    format!("{}K", pages * 4)
}

/// Raw machine: (node count choice, 4 nodes (memory choice, cpus)), swap devices, TLB choice,
/// kernel reserve choice.
pub type RawSwap = (u8, u64, Option<i8>, Option<u8>, Option<bool>);
pub type RawMachine = ((u8, [(u8, u8); 4]), Vec<RawSwap>, u8, u8);

/// How many nodes: one half the time (cheapest; multi-node machines span a few GiB of pfns),
/// two a quarter, three or four an eighth each.
fn node_count(sel: u8) -> usize {
    [1, 1, 1, 1, 2, 2, 3, 4][sel as usize % 8]
}

pub fn raw_machine() -> impl Strategy<Value = RawMachine> {
    let node = (0u8..NODE_MEM_MIB.len() as u8, 1u8..=4);
    (
        (0u8..8, [node.clone(), node.clone(), node.clone(), node]),
        prop::collection::vec(
            (
                0u8..SWAP_TYPES.len() as u8,
                0u64..16384,
                prop::option::of(-3i8..=5),
                prop::option::of(0u8..7),
                prop::option::of(any::<bool>()),
            ),
            0..=3,
        ),
        0u8..8,
        0u8..8,
    )
}

pub fn build_machine(raw: &RawMachine) -> Value {
    let ((count, nodes), swaps, tlb, reserve) = raw;
    let nodes = &nodes[..node_count(*count)];
    let mut m = Map::new();
    m.insert(
        "nodes".into(),
        nodes
            .iter()
            .map(|&(mem, cpus)| json!({"mem": format!("{}M", NODE_MEM_MIB[mem as usize]), "cpus": cpus}))
            .collect(),
    );
    let mut sw = vec![];
    for &(kind, pages, prio, comp, rot) in swaps {
        let kind = SWAP_TYPES[kind as usize];
        // 1 MiB .. 65 MiB, any multiple of 4K (not always a whole swap cluster)
        let mut d = json!({"type": kind, "size": sz(256 + pages)});
        if let Some(p) = prio {
            d["priority"] = json!(p);
        }
        if let (Some(c), "zram") = (comp, kind) {
            d["comp_algorithm"] = json!(ZRAM_COMP[c as usize % ZRAM_COMP.len()]);
        }
        if let Some(r) = rot {
            d["rotational"] = json!(r);
        }
        sw.push(d);
    }
    if !sw.is_empty() {
        m.insert("swap".into(), Value::Array(sw));
    }
    // a tiny TLB now and then (more misses and evictions), else the default
    match tlb {
        6 => {
            m.insert(
                "tlb".into(),
                json!({"l1_4k_entries": 4, "l1_4k_ways": 1, "l1_2m_entries": 1, "l1_2m_ways": 1, "stlb_entries": 16, "stlb_ways": 4}),
            );
        }
        7 => {
            m.insert(
                "tlb".into(),
                json!({"l1_4k_entries": 16, "l1_4k_ways": 4, "l1_2m_entries": 8, "l1_2m_ways": 4, "stlb_entries": 128, "stlb_ways": 8}),
            );
        }
        _ => {}
    }
    match reserve {
        5 => {
            m.insert("kernel_reserve".into(), json!("4M"));
        }
        6 => {
            m.insert("kernel_reserve".into(), json!("16M"));
        }
        7 => {
            m.insert("kernel_reserve".into(), json!("24M"));
        }
        _ => {}
    }
    Value::Object(m)
}

/// Raw op: (kind, selector, a, b, c, d).
pub type RawOp = (u8, u8, u64, u64, u64, u64);
/// Raw process: (initial region sizes with a 2M-rounding flag, start us, initial kalloc pages,
/// final fragmenting kfree, ops).
pub type RawProcess = (Vec<(u64, bool)>, u64, u64, bool, Vec<RawOp>);

pub const OP_KINDS: u8 = 21;

pub fn raw_process() -> impl Strategy<Value = RawProcess> {
    (
        prop::collection::vec((1u64..6000, any::<bool>()), 1..=3),
        0u64..5000,
        0u64..2000,
        any::<bool>(),
        prop::collection::vec(
            (0u8..OP_KINDS, any::<u8>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
            0..=24,
        ),
    )
}

/// Per-process state while building its ops: region sizes (pages), kalloc set sizes (pages).
struct ProcBuild {
    regions: Vec<u64>,
    kallocs: Vec<u64>,
    ops: Vec<Value>,
}

/// Fill region/offset/length/every of a range op over a region of `pages` pages.
fn range(o: &mut Value, region: String, pages: u64, mode: u64, a: u64, b: u64, allow_every: bool) {
    o["region"] = json!(region);
    match mode % 4 {
        0 => {} // the whole region
        1 => {
            let off = a % pages;
            o["offset"] = json!(sz(off));
            o["length"] = json!(sz(1 + b % (pages - off)));
        }
        2 if allow_every => {
            // repeated every `every` bytes: 2M most often (one piece per PMD), else a few pages
            let every = [512u64, 1, 2, 8, 64, 256, 1024][(a >> 40) as usize % 7];
            let off = a % every;
            o["every"] = json!(sz(every));
            if off > 0 {
                o["offset"] = json!(sz(off));
            }
            o["length"] = json!(sz(1 + b % (every - off)));
        }
        _ => o["offset"] = json!(sz(a % pages)),
    }
}

fn build_op(pb: &mut ProcBuild, raw: &RawOp, nodes: usize, knobs: &[KnobDef]) -> Option<Value> {
    let &(kind, sel, a, b, c, d) = raw;
    let r = sel as usize % pb.regions.len();
    let pages = pb.regions[r];
    let name = format!("r{r}");
    let mode = d & 0xff;
    let op = match kind {
        0 => {
            let mut o = json!({"op": "munmap"});
            range(&mut o, name, pages, mode, a, b, true);
            o
        }
        1 => {
            let mut o = json!({"op": "mprotect"});
            range(&mut o, name, pages, mode, a, b, true);
            o["prot"] = json!(["rw", "r", "none"][c as usize % 3]);
            o
        }
        2 | 3 => {
            let mut o = json!({"op": "madvise"});
            range(&mut o, name, pages, mode, a, b, true);
            o["advice"] = json!(ADVICE[c as usize % ADVICE.len()]);
            o
        }
        4..=6 => {
            let mut o = json!({"op": "write"});
            range(&mut o, name, pages, mode, a, b, true);
            if (d >> 8) & 1 == 1 {
                let byte = c % 4096;
                o["byte"] = json!(byte);
                o["bytes"] = json!(1 + (c >> 12) % (4096 - byte));
            }
            o["data"] = match (d >> 9) % 3 {
                0 => json!((d >> 16) % 256),
                1 => json!("random"),
                _ => json!("text"),
            };
            o
        }
        7 => {
            let mut o = json!({"op": "read"});
            range(&mut o, name, pages, mode, a, b, true);
            if (d >> 8) & 1 == 1 {
                o["byte"] = json!(c % 4096);
            }
            o
        }
        8 | 9 => {
            let mut o = json!({"op": "access"});
            range(&mut o, name, pages, mode, a, b, false);
            o["pattern"] = json!(["seq", "random", "zipf"][c as usize % 3]);
            if (d >> 8) & 1 == 0 {
                o["count"] = json!(1 + (c >> 8) % 4096);
            } else {
                // a few hundred thousand accesses at most (each is simulated)
                o["duration"] = json!(format!("{}us", 1 + (c >> 8) % 100));
            }
            match (d >> 9) % 4 {
                0 => {}
                1 => o["write"] = json!(0.0),
                2 => o["write"] = json!(0.3),
                _ => o["write"] = json!(1.0),
            }
            if (d >> 11) & 1 == 1 {
                o["stride"] = json!(8 * (1 + (d >> 16) % 1024));
            }
            if (d >> 12) & 1 == 1 {
                o["theta"] = json!([0.0, 0.5, 0.99, 2.0, 5.0][(d >> 32) as usize % 5]);
            }
            o
        }
        10 | 20 => {
            let k = &knobs[sel as usize % knobs.len()];
            json!({"op": "set", "knob": k.name, "value": knob_value(k, a)})
        }
        11 => json!({"op": "drop_caches", "value": 1 + c % 3}),
        12 => {
            // mostly short; now and then long enough for kernel threads to wake up
            let us = if c % 4 == 0 { 1 + a % 2_000_000 } else { 1 + a % 1000 };
            json!({"op": "sleep", "duration": format!("{us}us")})
        }
        13 => {
            let mut o = json!({"op": "move_pages"});
            range(&mut o, name, pages, mode, a, b, true);
            // now and then a node that does not exist (ENODEV)
            o["node"] = json!(if c % 8 == 7 { nodes as u64 } else { c % nodes as u64 });
            o
        }
        14 => json!({"op": "prctl", "thp_disable": c % 2 == 1}),
        15 => {
            let k = pb.kallocs.len();
            if k >= 4 {
                return None;
            }
            let order = [0u64, 0, 0, 1, 2, 3, 9, 10][c as usize % 8];
            let blocks = ((1 + a % 2048) >> order).max(1);
            pb.kallocs.push(blocks << order);
            let mut o = json!({"op": "kalloc", "name": format!("k{k}"), "size": sz(blocks << order)});
            if order > 0 || (c >> 8) & 1 == 1 {
                o["order"] = json!(order);
            }
            o
        }
        16 => {
            if pb.kallocs.is_empty() {
                return None;
            }
            let k = sel as usize % pb.kallocs.len();
            let mut o = json!({"op": "kfree"});
            range(&mut o, format!("k{k}"), pb.kallocs[k], mode, a, b, true);
            o
        }
        17 => json!({"op": "phase", "name": format!("ph{}", c % 4)}),
        _ => {
            // 18, 19: a new region
            let n = pb.regions.len();
            if n >= 6 {
                return None;
            }
            let mut pages = 1 + a % 6000;
            if b & 1 == 1 {
                pages = pages.next_multiple_of(512);
            }
            pb.regions.push(pages);
            let mut o = json!({"op": "mmap", "name": format!("r{n}"), "size": sz(pages)});
            if b & 2 == 2 {
                o["populate"] = json!(true);
            }
            if b & 4 == 4 {
                o["align"] = json!(format!("{}K", 4u64 << (c % 19)));
            }
            o
        }
    };
    Some(op)
}

pub fn build_process(raw: &RawProcess, nodes: usize, knobs: &[KnobDef]) -> Value {
    let (sizes, start, kalloc, final_kfree, ops) = raw;
    let mut pb = ProcBuild { regions: vec![], kallocs: vec![], ops: vec![] };
    for (i, &(s, round)) in sizes.iter().enumerate() {
        let pages = if round { s.next_multiple_of(512) } else { s };
        pb.ops.push(json!({"op": "mmap", "name": format!("r{i}"), "size": sz(pages)}));
        pb.regions.push(pages);
    }
    if *kalloc > 0 {
        pb.ops.push(json!({"op": "kalloc", "name": "k0", "size": sz(*kalloc)}));
        pb.kallocs.push(*kalloc);
    }
    for o in ops {
        if let Some(op) = build_op(&mut pb, o, nodes, knobs) {
            pb.ops.push(op);
        }
    }
    // now and then the ops after the last mmap/kalloc/kfree run in a loop (`repeat`: a
    // region or set is defined once, and a set is freed once), sometimes with a nested loop
    if start % 3 == 0 {
        let from = pb.ops.iter().rposition(|o| matches!(o["op"].as_str(), Some("mmap" | "kalloc" | "kfree")));
        let from = from.map_or(0, |i| i + 1).max(pb.ops.len().saturating_sub(6));
        if from < pb.ops.len() {
            let mut body: Vec<Value> = pb.ops.drain(from..).collect();
            if body.len() >= 2 && start % 2 == 0 {
                let last = body.pop().unwrap();
                body.push(json!({"op": "repeat", "count": 2, "ops": [last]}));
            }
            pb.ops.push(json!({"op": "repeat", "count": 2 + (start / 3) % 3, "ops": body}));
        }
    }
    // free every other page of the first set: the fragmentation the free-tail bug needed
    if *final_kfree && pb.kallocs.first().is_some_and(|&k| k > 1) {
        pb.ops.push(json!({"op": "kfree", "region": "k0", "every": "8K", "length": "4K"}));
    }
    json!({"start": format!("{start}us"), "ops": pb.ops})
}

/// Raw workload: machine, processes, start-up knobs (index, value), THP mode, fast kernel
/// threads, seed, record options.
pub type RawCase = (RawMachine, Vec<RawProcess>, Vec<(u8, u64)>, u8, bool, u64, u8);

pub fn raw_case() -> impl Strategy<Value = RawCase> {
    (
        raw_machine(),
        prop::collection::vec(raw_process(), 1..=4),
        prop::collection::vec((any::<u8>(), any::<u64>()), 0..=8),
        0u8..3,
        any::<bool>(),
        0u64..1000,
        0u8..8,
    )
}

/// A case: a workload JSON with its machine and knobs inside.
#[derive(Clone)]
pub struct Case(pub Value);

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

pub fn build_case(raw: &RawCase) -> Case {
    let (machine, procs, knob_raw, thp, fast_kthreads, seed, record) = raw;
    let settable = settable_knobs();
    let all = all_knobs();
    let nodes = node_count(machine.0 .0);
    let mut kn = Map::new();
    // THP "always" half the time: most of the THP machinery needs it
    kn.insert("transparent_hugepage/enabled".into(), json!(["always", "madvise", "never"][*thp as usize]));
    if *fast_kthreads {
        kn.insert("transparent_hugepage/khugepaged/scan_sleep_millisecs".into(), json!("10"));
        kn.insert("transparent_hugepage/khugepaged/alloc_sleep_millisecs".into(), json!("50"));
    }
    for &(k, x) in knob_raw {
        let def = &settable[k as usize % settable.len()];
        kn.insert(def.name.into(), json!(knob_value(def, x)));
    }
    let procs: Vec<Value> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut v = build_process(p, nodes, &all);
            v.as_object_mut().unwrap().insert("name".into(), json!(format!("p{i}")));
            // name first, for readability
            let mut o = Map::new();
            o.insert("name".into(), json!(format!("p{i}")));
            for (k, x) in v.as_object().unwrap() {
                if k != "name" {
                    o.insert(k.clone(), x.clone());
                }
            }
            Value::Object(o)
        })
        .collect();
    let mut w = Map::new();
    w.insert("name".into(), json!("prop"));
    w.insert("seed".into(), json!(seed));
    w.insert("machine".into(), build_machine(machine));
    w.insert("knobs".into(), Value::Object(kn));
    match record {
        5 => {
            // every tracepoint: the tracing paths run too
            w.insert("record".into(), json!({"trace": ["all"]}));
        }
        6 => {
            w.insert("record".into(), json!({"fault_latency": true}));
        }
        7 => {
            w.insert("record".into(), json!({"fault_latency": true, "series_interval": "1ms"}));
        }
        _ => {}
    }
    w.insert("processes".into(), Value::Array(procs));
    Case(Value::Object(w))
}

pub fn case() -> impl Strategy<Value = Case> {
    raw_case().prop_map(|r| build_case(&r))
}
