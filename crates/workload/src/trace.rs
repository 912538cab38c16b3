//! The tracepoints a model run can export (`record.trace`, `thplab run --trace`), under
//! the kernel's names (include/trace/events/{kmem,compaction,vmscan,huge_memory,migrate,oom}.h
//! of Linux 6.18) and with the kernel's field names. `mm_khugepaged_scan` is the seed-002
//! series' own tracepoint; `thplab_*` ones mark model decisions the kernel has no
//! tracepoint for (proactive compaction rounds, THP splits, swap slot allocation, swap-in).
//!
//! A selection names tracepoints as `name`, `system:name`, `system` or `system:*` (a
//! whole system, like tracefs's events/SYSTEM/enable), or `all`.

/// One tracepoint: its system (the events/ directory), name and what it records.
#[derive(Clone, Copy, Debug)]
pub struct Tracepoint {
    pub system: &'static str,
    pub name: &'static str,
    pub doc: &'static str,
}

const fn tp(system: &'static str, name: &'static str, doc: &'static str) -> Tracepoint {
    Tracepoint { system, name, doc }
}

/// Every tracepoint the model emits. At most 128 (a selection is a bit mask).
pub const TRACEPOINTS: &[Tracepoint] = &[
    tp("kmem", "mm_page_alloc_extfrag", "an allocation fell back to another migratetype's free list (claim or steal)"),
    tp("compaction", "mm_compaction_isolate_migratepages", "the migrate scanner isolated pages from a range"),
    tp("compaction", "mm_compaction_isolate_freepages", "the free scanner isolated free pages from a range"),
    tp("compaction", "mm_compaction_migratepages", "one batch of isolated pages migrated"),
    tp("compaction", "mm_compaction_begin", "compact_zone() starts"),
    tp("compaction", "mm_compaction_end", "compact_zone() ends, with its status"),
    tp("compaction", "mm_compaction_try_to_compact_pages", "direct compaction from the allocator's slow path"),
    tp("compaction", "mm_compaction_finished", "compact_finished()'s verdict"),
    tp("compaction", "mm_compaction_suitable", "compaction_suitable()'s verdict for a zone"),
    tp("compaction", "mm_compaction_deferred", "a zone's compaction was skipped (deferred)"),
    tp("compaction", "mm_compaction_defer_compaction", "a zone's compaction failed: defer it longer"),
    tp("compaction", "mm_compaction_defer_reset", "a zone's deferral was reset after success"),
    tp("compaction", "mm_compaction_kcompactd_sleep", "kcompactd goes to sleep"),
    tp("compaction", "mm_compaction_wakeup_kcompactd", "kswapd wakes kcompactd"),
    tp("compaction", "mm_compaction_kcompactd_wake", "kcompactd runs kcompactd_do_work()"),
    tp("oom", "compact_retry", "should_compact_retry()'s verdict after a direct compaction that did not allocate"),
    tp("vmscan", "mm_vmscan_kswapd_sleep", "kswapd goes to sleep, the node balanced"),
    tp("vmscan", "mm_vmscan_kswapd_wake", "kswapd starts balancing a node"),
    tp("vmscan", "mm_vmscan_wakeup_kswapd", "an allocation wakes kswapd"),
    tp("vmscan", "mm_vmscan_direct_reclaim_begin", "direct reclaim starts (try_to_free_pages)"),
    tp("vmscan", "mm_vmscan_direct_reclaim_end", "direct reclaim ends"),
    tp("vmscan", "mm_vmscan_lru_isolate", "folios isolated from the tail of an LRU list"),
    tp("vmscan", "mm_vmscan_write_folio", "a folio is written to swap"),
    tp("vmscan", "mm_vmscan_reclaim_pages", "reclaim_pages() (MADV_PAGEOUT) reclaimed a list"),
    tp("vmscan", "mm_vmscan_lru_shrink_inactive", "shrink_inactive_list() over a batch"),
    tp("vmscan", "mm_vmscan_lru_shrink_active", "shrink_active_list() over a batch"),
    tp("huge_memory", "mm_khugepaged_scan_pmd", "khugepaged's (or MADV_COLLAPSE's) verdict on one 2 MiB range"),
    tp("huge_memory", "mm_collapse_huge_page", "collapse_huge_page()'s result"),
    tp("huge_memory", "mm_collapse_huge_page_isolate", "the collapse's re-check of the PTEs under the locks"),
    tp("huge_memory", "mm_collapse_huge_page_swapin", "the collapse swapped in the range's swap PTEs"),
    tp("huge_memory", "mm_khugepaged_scan", "seed 002: one khugepaged_scan_mm_slot() call and its progress"),
    tp("migrate", "mm_migrate_pages", "a migrate_pages() call's outcome"),
    tp("oom", "mark_victim", "the OOM killer chose a victim"),
    tp("thplab", "thplab_proactive_round", "a proactive compaction round ended (scores, next timeout)"),
    tp("thplab", "thplab_split_huge_page", "a THP was split (why, zero subpages dropped, pieces left)"),
    tp("thplab", "thplab_swap_alloc", "swap slots were allocated for a folio, or not"),
    tp("thplab", "thplab_swapin", "a folio was read back from swap"),
];

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of tracepoint `name` in TRACEPOINTS; a compile-time error (const panic)
/// when used in a const context with a name that is not there.
pub const fn tracepoint_index(name: &str) -> usize {
    let mut i = 0;
    while i < TRACEPOINTS.len() {
        if str_eq(TRACEPOINTS[i].name, name) {
            return i;
        }
        i += 1;
    }
    panic!("unknown tracepoint")
}

const _: () = assert!(TRACEPOINTS.len() <= 128);

/// The bit mask of tracepoints a selection enables. Errors name the entry
/// (`record.trace[1]: unknown tracepoint ...`) with `what` as the field's name.
pub fn trace_mask(specs: &[String], what: &str) -> Result<u128, String> {
    let mut mask = 0u128;
    for (i, s) in specs.iter().enumerate() {
        let spec = s.trim();
        let (sys, name) = match spec.split_once(':') {
            Some((sys, name)) => (Some(sys), name),
            None => (None, spec),
        };
        let mut hit = false;
        for (j, t) in TRACEPOINTS.iter().enumerate() {
            let on = match (sys, name) {
                (None, "all") => true,
                (None, n) => t.name == n || t.system == n,
                (Some(sy), "*") => t.system == sy,
                (Some(sy), n) => t.system == sy && t.name == n,
            };
            if on {
                mask |= 1 << j;
                hit = true;
            }
        }
        if !hit {
            return Err(format!(
                "{what}[{i}]: unknown tracepoint `{s}`; use NAME, SYSTEM:NAME, SYSTEM or all (systems: {})",
                systems().join(", ")
            ));
        }
    }
    Ok(mask)
}

/// The tracepoint systems, in registry order.
pub fn systems() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = vec![];
    for t in TRACEPOINTS {
        if !v.contains(&t.system) {
            v.push(t.system);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn selections() {
        let one = |s: &str| trace_mask(&[s.to_string()], "record.trace").unwrap();
        let i = tracepoint_index("mm_compaction_end");
        assert_eq!(one("mm_compaction_end"), 1 << i);
        assert_eq!(one("compaction:mm_compaction_end"), 1 << i);
        assert_eq!(one("compaction").count_ones(), 14);
        assert_eq!(one("compaction:*"), one("compaction"));
        assert_eq!(one("all").count_ones() as usize, TRACEPOINTS.len());
        let e = trace_mask(&["mm_compaction_end".into(), "vmscan:mm_nope".into()], "record.trace").unwrap_err();
        assert!(e.starts_with("record.trace[1]: unknown tracepoint `vmscan:mm_nope`"), "{e}");
        assert!(trace_mask(&["huge_memory:mm_compaction_end".into()], "x").is_err(), "wrong system");
        // names are unique
        for (i, t) in TRACEPOINTS.iter().enumerate() {
            assert_eq!(tracepoint_index(t.name), i);
        }
    }
}
