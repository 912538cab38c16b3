//! The live runner's work before a run, done in the model where it changes the start
//! state (not a kernel mechanism: what crates/live/src/host.rs does on the guest).

use crate::consts::*;
use crate::kernel::Kernel;
use crate::mm_types::MmId;
use crate::page_reporting::PAGE_REPORTING_DELAY_NS;

impl Kernel {
    /// thplab_workload::footprint::pcp_room_pages() for `cpu`'s per-CPU list in the zone
    /// where its high is largest, as the live runner reads /proc/zoneinfo
    /// (host::hold_pcp_room): None where there is no room to make.
    pub(crate) fn pcp_room_pages(&self, cpu: u32, bytes: u64) -> Option<u64> {
        let pcp = (0..self.pm.zones.len()).map(|zi| &self.pm.pcp[self.pm.pcp_index(cpu, zi)]).max_by_key(|p| p.high)?;
        let pages = thplab_workload::footprint::pcp_room_pages(pcp.count, pcp.high, pcp.batch, bytes);
        (pages > 0).then_some(pages)
    }

    /// The live runner's host::back_free_memory() before a run on a reporting guest: a
    /// process (the runner itself, on CPU `cpu`) maps `bytes` rounded up to 2 MiB, 2 MiB
    /// aligned, with MADV_HUGEPAGE, writes every 4 KiB page (THP faults where the knobs
    /// allow them, 4 KiB faults elsewhere, and then, for a run that `collapses` (calls
    /// MADV_COLLAPSE), MADV_COLLAPSE of the region, so that 2 MiB blocks are backed too;
    /// every page it gets is backed again in the host) and unmaps it. The frees go where
    /// the kernel puts them: THPs and small pages to `cpu`'s per-CPU lists
    /// (free_frozen_page_commit, pcp_allowed_order), the lists' overflow to the buddy lists
    /// (free_pcppages_bulk), where a freed block of at least the reporting order requests
    /// reporting (the first pass of the run is due PAGE_REPORTING_DELAY after the munmap).
    /// Its faults take the time they cost (live: 41 s for compaction-fill-p60's 20.7 GB,
    /// most of it the host refaulting reported memory), and each CPU's vmstat_update runs
    /// decay_pcp_high() every second of it, so the per-CPU lists' high, which the THP
    /// refills raise towards high_max, has decayed when the munmap's THPs fill them
    /// (live after the back-fill: 40-147 thousand pages on the runner's list, against
    /// high_max's 338 thousand that a back-fill without decay left in the model).
    /// Before it, the runner takes room off `cpu`'s per-CPU list (`pcp_room_pages`,
    /// host::hold_pcp_room): that many 4 KiB pages of a MADV_NOHUGEPAGE mapping, faulted
    /// first and unmapped after the back-fill's process has exited, so that a list at its
    /// high keeps the back-fill's THPs instead of draining them to the buddy lists.
    /// The work is before the run: its time, trace, latency samples, wake-ups and the mTHP
    /// and lock stats are dropped (the vmstat counters are compared from the boot snapshot
    /// taken after it). khugepaged_enter_vma() of the madvise is left out: live, the
    /// back-fill's process is a child of the runner that exits before the run and whose
    /// slot khugepaged is made to drop, so khugepaged's list is as the model starts it
    /// (host.rs `back_free_memory`, `khugepaged_collect_exited`).
    pub fn back_free_memory(&mut self, bytes: u64, collapses: bool, cpu: u32, tlb: &thplab_workload::machine::TlbSpec) {
        use crate::memory::{Fault, Mapping};
        use crate::mmap::{Mm, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_READ, VM_WRITE};
        if !self.pm.pr.enabled || bytes == 0 {
            return;
        }
        let len = bytes.div_ceil(HPAGE_PMD_SIZE) * HPAGE_PMD_SIZE;
        let node = self.pm.nodes.iter().position(|n| n.cpus.contains(&cpu)).unwrap_or(0);
        let saved = (self.pm.cpu, self.clock.cpu);
        self.pm.cpu = cpu;
        self.clock.cpu = cpu;
        // the runner's room on this CPU's per-CPU list (host::hold_pcp_room): 4 KiB pages
        // of a MADV_NOHUGEPAGE mapping, faulted before the back-fill, unmapped after its exit
        let room = self.pcp_room_pages(cpu, bytes).map(|pages| {
            let rid = MmId(self.mms.len() as u32);
            self.mms.push(Mm::new(rid, "thplab-live", cpu, node, crate::tlb::Tlb::new(tlb)));
            let rlen = pages * PAGE_SIZE;
            if let Some(addr) = self.mms[rid].get_unmapped_area(rlen, None) {
                self.mms[rid].insert_vma(addr, addr + rlen, VM_READ | VM_WRITE | VM_NOHUGEPAGE);
                let mut a = addr;
                while a < addr + rlen && self.handle_mm_fault(rid, a, true) == Fault::Ok {
                    self.pm.set_now_ns(self.clock.cost);
                    a += PAGE_SIZE;
                }
            }
            rid
        });
        let id = MmId(self.mms.len() as u32);
        self.mms.push(Mm::new(id, "thplab-live", cpu, node, crate::tlb::Tlb::new(tlb)));
        if let Some(addr) = self.mms[id].get_unmapped_area(len, Some(HPAGE_PMD_SIZE)) {
            self.mms[id].insert_vma(addr, addr + len, VM_READ | VM_WRITE | VM_HUGEPAGE);
            let mut a = addr;
            while a < addr + len {
                if !matches!(self.follow(id, a), Mapping::Page(..)) && self.handle_mm_fault(id, a, true) != Fault::Ok {
                    break;
                }
                // the back-fill's own time, for the vmstat worker's decay_pcp_high()
                self.pm.set_now_ns(self.clock.cost);
                a += PAGE_SIZE;
            }
            // a run that collapses, no PMD THPs at fault under these knobs: the runner
            // collapses the region (host::back_free_memory), so that 2 MiB blocks are
            // backed too
            if collapses && !self.thp_vma_allowable_flags(id, VM_READ | VM_WRITE | VM_HUGEPAGE) {
                let _ = self.madvise_collapse(id, addr, addr + len);
            }
        }
        let before = self.clock.cost;
        self.exit_mm(id);
        self.charge(0); // its frees' spills to the buddy lists
        let munmap_ns = self.clock.cost - before;
        self.mms.pop_exited();
        if let Some(rid) = room {
            self.exit_mm(rid);
            self.charge(0);
            self.mms.pop_exited();
        }
        (self.pm.cpu, self.clock.cpu) = saved;
        self.clock.cost = 0;
        self.clock.wakeups.clear();
        self.pm.now_ms = 0;
        self.pm.next_pcp_decay_ms = crate::page_alloc::PCP_DECAY_INTERVAL_MS;
        if std::mem::take(&mut self.pm.pr.schedule_requested) {
            self.pm.pr.initial_delay_ns = PAGE_REPORTING_DELAY_NS.saturating_sub(munmap_ns);
        }
        let vm = std::mem::take(&mut self.rec.vm);
        self.rec = crate::recorder::Recorder::default();
        self.rec.vm = vm;
    }
}
