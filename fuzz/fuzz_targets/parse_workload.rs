//! Fuzz the workload parser: any bytes must give a workload or a clear error, never a
//! panic; a parsed workload must round-trip through its JSON form.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(w) = thplab_workload::parse_workload(text) {
        let again = thplab_workload::parse_workload(&w.to_json()).expect("a parsed workload re-parses");
        assert_eq!(w, again);
    }
    let _ = thplab_workload::MachineSpec::parse_any(text);
    let _ = thplab_workload::costs::CostProfile::from_toml(text);
});
