//! The OOM killer (mm/oom_kill.c): out_of_memory() picks the process with the largest
//! badness and kills it; its memory is freed at once (the OOM reaper). The engine stops
//! the processes of the mms listed in `OomControl::victims`.

use crate::kernel::Kernel;
use crate::mm_types::MmId;
use crate::recorder::OomReport;
use crate::trace::trace_event;
use crate::vmstat::Ev;

/// The OOM killer's state: the mms it chose that the engine has not stopped yet.
#[derive(Clone, Default)]
pub struct OomControl {
    pub victims: Vec<MmId>,
}

impl OomControl {
    /// Was `mm` chosen (and not yet collected by the engine)?
    pub fn is_victim(&self, mm: MmId) -> bool {
        self.victims.contains(&mm)
    }
}

impl Kernel {
    /// out_of_memory(): pick the process with the largest badness (RSS + swap + page
    /// tables, oom_badness) and kill it; its memory is freed at once (the OOM reaper).
    pub fn out_of_memory(&mut self, _order: u32, _nid: usize) -> bool {
        let victim = self
            .mms
            .iter()
            .filter(|m| m.alive && !self.oom.victims.contains(&m.id))
            .max_by_key(|m| (m.rss_anon + m.swap_ents + m.pmds.len() as u64, std::cmp::Reverse(m.id)))
            .map(|m| m.id);
        let Some(v) = victim else { return false };
        let rss_kb = self.mms[v].rss_anon * 4;
        self.rec.vm.count(Ev::OOM_KILL);
        trace_event!(
            self,
            mark_victim,
            pid = 1000 + v.0,
            comm = self.mms[v].name.clone(),
            anon_rss = rss_kb,
            pgtables = self.mms[v].pmds.len() as u64 * 4,
        );
        self.rec.oom_kills.push(OomReport {
            t_ns: self.clock.now + self.clock.cost,
            victim: self.mms[v].name.clone(),
            rss_kb,
            trigger: "page allocation".into(),
        });
        self.oom.victims.push(v);
        self.exit_mm(v);
        true
    }
}
