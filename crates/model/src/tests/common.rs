//! Shared by the integration tests: run a workload (JSON text) on a machine (shorthand or
//! JSON) with knobs, the invariant checker on.

use crate::kernel::Kernel;
use crate::mm_types::MmId;
use crate::mmap::Mm;
use crate::tlb::Tlb;
use crate::{run, RunOptions};
use thplab_workload::costs::CostProfile;
use thplab_workload::knobs;
use thplab_workload::{parse_workload, MachineSpec, RunResult};

pub fn go(w: &str, machine: &str, knobs: &[(&str, &str)]) -> RunResult {
    let w = parse_workload(w).unwrap();
    let o = RunOptions {
        machine: Some(MachineSpec::parse_any(machine).unwrap()),
        knobs: knobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        check: true,
        ..Default::default()
    };
    run(&w, &o).unwrap()
}

/// A kernel on `machine` (shorthand) with `kn` over the default knobs and a small min
/// watermark (so that 97 % of a 1 GiB machine can be used), and one process mm (MmId(0),
/// "p") for the tests that call the kernel directly.
pub fn kernel(machine: &str, kn: &[(&str, &str)]) -> Kernel {
    let m = MachineSpec::parse_shorthand(machine).unwrap();
    let mut ks = knobs::defaults();
    ks.insert("vm.min_free_kbytes".into(), "8192".into());
    for (k, v) in kn {
        let (c, v) = knobs::check_assignment(k, v).unwrap();
        ks.insert(c, v);
    }
    let mut k = Kernel::new(&m, ks, CostProfile::default(), 1).unwrap();
    k.mms.push(Mm::new(MmId(0), "p", 0, 0, Tlb::new(&m.tlb)));
    k
}

/// go() that also returns the kernel as the run left it.
pub fn go_keep(w: &str, machine: &str) -> (RunResult, Kernel) {
    let w = parse_workload(w).unwrap();
    let o = RunOptions { machine: Some(MachineSpec::parse_any(machine).unwrap()), check: true, ..Default::default() };
    crate::run_keep(&w, &o).unwrap()
}

/// The allocator's and the LRU's state in order, for runs that must leave the same: every
/// frame, each CPU's per-CPU lists and counters, every free list and LRU list in list order.
pub fn page_state(k: &Kernel) -> String {
    use crate::mm_types::{List, NIL};
    // `order`: a free list's (its cells' place), None for the LRU lists
    let walk = |l: &List, order: Option<u32>| {
        let mut v = vec![];
        let mut p = l.head;
        while p != NIL {
            v.push(p);
            p = match order {
                Some(o) => k.pm.free_next(o, p),
                None => List::next(&k.pm.links, p),
            };
        }
        v
    };
    let mut s = format!("{:?}\n{:?}\n", k.pm.frames, k.pm.pcp);
    for z in &k.pm.zones {
        for (o, fa) in z.free_area.iter().enumerate() {
            for l in &fa.lists {
                s += &format!("{:?}\n", walk(l, Some(o as u32)));
            }
        }
    }
    for n in &k.pgdat {
        for l in &n.lruvec {
            s += &format!("{:?}\n", walk(l, None));
        }
    }
    s
}

/// Run `w` on `m` with a debug switch on, then off: the results and page_state() must be the
/// same. Returns the run with it on.
pub fn same_on_and_off(w: &str, m: &str, switch: &'static std::thread::LocalKey<std::cell::Cell<bool>>) -> RunResult {
    let (on, kon) = go_keep(w, m);
    switch.with(|c| c.set(false));
    let (off, koff) = go_keep(w, m);
    switch.with(|c| c.set(true));
    assert_eq!(serde_json::to_value(&on).unwrap(), serde_json::to_value(&off).unwrap(), "{m}: the same results");
    assert!(page_state(&kon) == page_state(&koff), "{m}: the same frames and lists");
    on
}
