//! Tests of the model's mechanisms that drive the kernel directly (they need its
//! crate-private state): compaction, khugepaged, reclaim and swap. Whole-workload tests
//! are in crates/model/tests.

mod common;
mod compaction;
mod khugepaged;
mod reclaim_swap;

/// The module structure (issue 13): apart from the `impl Kernel` blocks (every mechanism
/// names `crate::kernel::Kernel`, and kernel.rs composes each mechanism's state type),
/// the modules' uses of one another form a DAG: no mechanism depends on another that
/// depends back on it.
#[test]
fn module_dependencies_form_a_dag() {
    use std::collections::{BTreeMap, BTreeSet};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut src = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if p.extension().is_some_and(|x| x == "rs") && name != "lib" {
            let text = std::fs::read_to_string(&p).unwrap();
            // the module's own code: before its unit tests, without comments
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .map(|l| l.split("//").next().unwrap())
                .collect::<Vec<_>>()
                .join("\n");
            src.insert(name, code);
        }
    }
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in &src {
        let d = deps.entry(m.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + 7..];
            let target: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if target == *m || !src.contains_key(&target) {
                continue;
            }
            if target == "kernel" {
                let item: String =
                    rest[8..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{').collect();
                assert!(item == "Kernel", "{m}.rs uses crate::kernel::{item}: only `Kernel` may come from kernel.rs");
                continue;
            }
            d.insert(target);
        }
    }
    // depth-first search for a cycle
    fn visit(
        m: &str,
        deps: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in &deps[m] {
            match state.get(d.as_str()) {
                Some(1) => panic!("import cycle: {} -> {d}", path.join(" -> ")),
                Some(_) => {}
                None => visit(d, deps, state, path),
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for m in deps.keys() {
        if !state.contains_key(m) {
            visit(m, &deps, &mut state, &mut vec![]);
        }
    }
}
