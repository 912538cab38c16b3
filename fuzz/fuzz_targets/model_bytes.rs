//! Fuzz the model: bytes drive a small workload (ops, ranges, knobs) on a small machine;
//! the run must succeed with the invariant checker on, or reject the input cleanly.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const ADVICE: [&str; 8] = ["hugepage", "nohugepage", "cold", "pageout", "free", "dontneed", "collapse", "willneed"];
const KNOBS: [(&str, [&str; 3]); 5] = [
    ("transparent_hugepage/enabled", ["always", "madvise", "never"]),
    ("transparent_hugepage/defrag", ["always", "defer", "never"]),
    ("thplab.split_zero_subpages", ["none", "seed", "mainline"]),
    ("transparent_hugepage/khugepaged/max_ptes_none", ["0", "300", "511"]),
    ("transparent_hugepage/use_zero_page", ["0", "1", "1"]),
];

fuzz_target!(|data: &[u8]| {
    let mut it = data.iter().copied();
    let mut next = move || it.next().unwrap_or(0) as u64;
    let nproc = 1 + next() % 3;
    let mut procs = vec![];
    for p in 0..nproc {
        let sizes: Vec<u64> = (0..1 + next() % 3).map(|_| 1 + next() * 16 + next()).collect();
        let mut ops: Vec<Value> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"op":"mmap","name":format!("r{i}"),"size":format!("{}K", s * 4)}))
            .collect();
        for _ in 0..next() % 32 {
            let r = (next() as usize) % sizes.len();
            let pages = sizes[r];
            let off = next() * 8 % pages;
            let len = 1 + (next() * 8 % (pages - off));
            let (o, l) = (format!("{}K", off * 4), format!("{}K", len.min(pages - off) * 4));
            let name = format!("r{r}");
            ops.push(match next() % 9 {
                0 => json!({"op":"munmap","region":name,"offset":o,"length":l}),
                1 | 2 => json!({"op":"madvise","region":name,"offset":o,"length":l,"advice":ADVICE[next() as usize % 8]}),
                3 | 4 => json!({"op":"write","region":name,"offset":o,"length":l,"byte":next() * 16,"bytes":1 + next() % 64,"data":next() % 4}),
                5 => json!({"op":"read","region":name,"offset":o,"length":l}),
                6 => { let (k, v) = KNOBS[next() as usize % 5]; json!({"op":"set","knob":k,"value":v[next() as usize % 3]}) }
                7 => json!({"op":"drop_caches","value":1 + next() % 3}),
                _ => json!({"op":"access","region":name,"pattern":"random","count":next() * 4,"write":0.5}),
            });
        }
        procs.push(json!({"name":format!("p{p}"),"ops":ops}));
    }
    let w = json!({"processes": procs});
    let Ok(w) = thplab_workload::workload::workload_from_value(&w) else { return };
    let m = thplab_workload::MachineSpec::parse_shorthand(["96M", "2x64M"][next() as usize % 2]).unwrap();
    let o = thplab_model::RunOptions { machine: Some(m), check: true, ..Default::default() };
    if let Err(e) = thplab_model::run(&w, &o) {
        panic!("model error: {e}");
    }
});
