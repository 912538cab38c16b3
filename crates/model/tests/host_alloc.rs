//! The global allocator's kept blocks (host_alloc.rs) with the allocator installed, as the
//! binaries that run large models have it.

use std::sync::atomic::AtomicBool;
use thplab_model::host_alloc::{keep_freed, kept_blocks, prefill, HugePageAlloc, KEEP_MIN};
use thplab_model::page_alloc::PhysMem;
use thplab_workload::MachineSpec;

#[global_allocator]
static ALLOC: HugePageAlloc = HugePageAlloc;

/// run_shared's prefill: blocks of a state's clone_layouts() made and kept inside a scope
/// are what a copy of that state takes (every large array of it); the copy's blocks are
/// kept again when it is dropped, and all go back when the scope closes.
#[test]
fn a_copy_takes_the_prefilled_blocks() {
    let m = MachineSpec::parse_shorthand("64G").unwrap();
    let pm = PhysMem::new(&m).unwrap();
    let layouts: Vec<_> = pm.clone_layouts().into_iter().filter(|l| l.size() >= KEEP_MIN).collect();
    assert_eq!(layouts.len(), 2, "64 GiB: the frame array and the link pool are large");
    let stop = AtomicBool::new(false);
    assert!(!prefill(layouts[0], &stop), "nothing is kept outside a scope");
    let scope = keep_freed();
    for &l in &layouts {
        assert!(prefill(l, &stop));
    }
    assert_eq!(kept_blocks(), 2);
    let copy = pm.clone();
    assert_eq!(kept_blocks(), 0, "the copy took both");
    assert_eq!(copy.frames, pm.frames);
    drop(copy);
    assert_eq!(kept_blocks(), 2, "kept again");
    drop(scope);
    assert_eq!(kept_blocks(), 0, "freed with the scope");
}
