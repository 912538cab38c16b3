//! The time series (record.series_interval): the state sampled every interval of
//! simulated time.

use crate::kernel::Kernel;
use crate::vmstat;
use thplab_workload::result::Series;

/// Samples the state every `interval` ns of simulated time (record.series_interval).
#[derive(Clone)]
pub(super) struct Sampler {
    pub(super) interval: u64,
    pub(super) next: u64,
    pub(super) series: Series,
}
const MAX_SAMPLES: usize = 200_000;
impl Sampler {
    /// Emit the samples due up to `now` (the state as the next event finds it).
    pub(super) fn catch_up(&mut self, k: &Kernel, now: u64) {
        if self.interval == 0 {
            return;
        }
        while self.next <= now && self.series.rows.len() < MAX_SAMPLES {
            self.series.rows.push(sample(k, self.next));
            self.next += self.interval;
        }
    }
    pub(super) fn finish(&mut self, k: &Kernel, now: u64) {
        if self.interval > 0 && self.series.rows.len() < MAX_SAMPLES {
            self.series.rows.push(sample(k, now));
        }
    }
}

/// The series' columns: the system-wide ones, then per process (smaps_rollup's view:
/// `AnonPages_kB[name]` = its anonymous RSS, `AnonHugePages_kB[name]` = PMD-mapped THPs).
pub(super) fn series_columns(processes: &[String]) -> Vec<String> {
    let mut c: Vec<String> = [
        "t_ns",
        "MemFree_kB",
        "AnonPages_kB",
        "AnonHugePages_kB",
        "nr_free_pages",
        "thp_fault_alloc",
        "thp_fault_fallback",
        "fragmentation_score_node0",
        "SwapFree_kB",
        "pswpin",
        "pswpout",
        "tlb_shootdown_ipis",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for p in processes {
        c.push(format!("AnonPages_kB[{p}]"));
        c.push(format!("AnonHugePages_kB[{p}]"));
    }
    c
}

fn sample(k: &Kernel, t: u64) -> Vec<f64> {
    let free = k.nr_free_pages();
    let node0: Vec<&crate::mmzone::Zone> = k.pm.nodes[0].zones.iter().map(|&z| &k.pm.zones[z]).collect();
    let score = vmstat::fragmentation_score_node(node0.into_iter(), k.pm.nodes[0].present);
    let mut row = vec![
        t as f64,
        (free * 4) as f64,
        (k.nr_anon_pages() * 4) as f64,
        (k.nr_anon_thp() * 2048) as f64,
        free as f64,
        k.rec.vm.get(vmstat::Ev::THP_FAULT_ALLOC) as f64,
        k.rec.vm.get(vmstat::Ev::THP_FAULT_FALLBACK) as f64,
        score as f64,
        (k.nr_swap_pages() * 4) as f64,
        k.rec.vm.get(vmstat::Ev::PSWPIN) as f64,
        k.rec.vm.get(vmstat::Ev::PSWPOUT) as f64,
        k.rec.tlb_ipis as f64,
    ];
    // per process, as its smaps_rollup shows it
    for mm in k.mms.iter() {
        let huge = mm.pmds.values().filter(|&&s| matches!(k.slots.get(s).pmd, crate::pgtable::Pmd::Huge(_))).count();
        row.push((mm.rss_anon * 4) as f64);
        row.push((huge as u64 * 2048) as f64);
    }
    row
}
