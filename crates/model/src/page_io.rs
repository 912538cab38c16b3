//! Swap I/O (mm/page_io.c): swap_writepage / __swap_writepage and swap_read_folio.
//! Before any I/O a folio whose every page is zero goes to the zeromap
//! (is_folio_zero_filled → swap_zeromap_folio_set: swpout_zero, no I/O; swap_read_folio_zeromap
//! on the way back: swpin_zero). Otherwise zram stores page by page (zram.rs) and other
//! devices take one request for the whole folio: latency, a seek when the request does
//! not follow the previous one (random_penalty_ns), and size / bandwidth. Block devices
//! serve requests one at a time (a request queue: `busy_until`); synchronous devices
//! (pmem, zram) are memory copies done by the CPU that asked. The caller waits for its
//! own I/O (the model writes back synchronously). pswpout/pswpin count pages, thp_swpout
//! a PMD-size folio written whole; pgpgout/pgpgin count kB.

use crate::consts::*;
use crate::content;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::swapfile::*;
use crate::trace::trace_event;
use crate::vmstat::Ev;

/// zram could not store a compressed page (zs_malloc failed): the folio stays in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZsMallocFailed;

impl Kernel {
    /// Time for a request of `nr` pages at global slot `slot` on device `di`, queued behind
    /// the device's earlier requests; returns the ns the caller waits.
    fn swap_io(&mut self, di: usize, write: bool, slot: u32, nr: u32) -> u64 {
        let now = self.clock.now + self.clock.cost;
        let d = &mut self.swap.devs[di];
        let (lat, mbps) = if write {
            (d.io.write_latency_ns, d.io.write_mb_per_s)
        } else {
            (d.io.read_latency_ns, d.io.read_mb_per_s)
        };
        let seek = if d.last_end == slot { 0 } else { d.io.random_penalty_ns };
        let xfer = (nr as u64 * PAGE_SIZE * 1000).checked_div(mbps).unwrap_or(0);
        let service = lat + seek + xfer;
        d.last_end = slot + nr;
        if d.sync_io {
            return service;
        }
        let start = now.max(d.busy_until);
        d.busy_until = start + service;
        d.busy_until - now
    }

    /// swap_writepage(): write the folio at `head` (`nr` pages) to its slots from `slot`.
    /// Returns Err when zram cannot get memory for the compressed pages (the folio is
    /// then kept, as when zs_malloc fails).
    pub fn swap_writepage(&mut self, head: u64, nr: u32, slot: u32) -> Result<(), ZsMallocFailed> {
        let di = self.swap.dev_of(slot);
        // is_folio_zero_filled(): the last word of each page, then the page (memchr_inv);
        // kernels before v6.12 had no zeromap (thplab.swap_zeromap=n)
        let mut zero = self.cfg.swap_zeromap;
        for i in 0..nr as u64 {
            if !zero {
                break;
            }
            let c = content(self.pm.frames[(head + i) as usize]);
            self.charge(self.costs.memchr_inv_4k_ns * content::memchr_inv_bytes(c) / PAGE_SIZE);
            if !content::is_zero(c) {
                zero = false;
                break;
            }
        }
        if zero {
            for s in slot..slot + nr {
                *self.swap.map_mut(s) |= SWAP_ZEROMAP;
                self.set_slot_data(s, 0);
            }
            self.rec.vm.add(Ev::SWPOUT_ZERO, nr as u64);
            return Ok(());
        }
        // swap_zeromap_folio_clear()
        for s in slot..slot + nr {
            *self.swap.map_mut(s) &= !SWAP_ZEROMAP;
        }
        if self.swap.devs[di].zram.is_some() {
            let extra: u64 = (0..nr as u64)
                .map(|i| {
                    self.swap.devs[di]
                        .zram
                        .as_ref()
                        .unwrap()
                        .pool_bytes_for(content(self.pm.frames[(head + i) as usize]))
                })
                .sum();
            if !self.zram_pool_reserve(di, extra) {
                self.zram_pool_fit(di);
                return Err(ZsMallocFailed);
            }
            let mut ns = 0;
            for i in 0..nr {
                let c = content(self.pm.frames[(head + i as u64) as usize]);
                let d = &mut self.swap.devs[di];
                let off = slot + i - d.base;
                let old = d.data[off as usize];
                ns += d.zram.as_mut().unwrap().write_slot(off, old, c);
                self.set_slot_data(slot + i, c);
            }
            self.charge(ns);
        } else {
            for i in 0..nr {
                let c = content(self.pm.frames[(head + i as u64) as usize]);
                self.set_slot_data(slot + i, c);
            }
            let w = self.swap_io(di, true, slot, nr);
            self.charge(w);
        }
        // count_swpout_vm_event()
        if nr as u64 == HPAGE_PMD_NR {
            self.rec.vm.count(Ev::THP_SWPOUT);
            self.count_mthp("swpout", 1);
        }
        self.rec.vm.add(Ev::PSWPOUT, nr as u64);
        self.rec.vm.add(Ev::PGPGOUT, 4 * nr as u64);
        self.swap.devs[di].last_end = slot + nr;
        Ok(())
    }

    fn set_slot_data(&mut self, slot: u32, c: u16) {
        let di = self.swap.dev_of(slot);
        let d = &mut self.swap.devs[di];
        d.data[(slot - d.base) as usize] = c;
    }

    /// swap_read_folio(): fill the `nr` pages from `pfn` with what slots `slot..` hold.
    /// Returns true when I/O was done (a major fault), false for the zeromap.
    pub fn swap_read_folio(&mut self, pfn: u64, nr: u32, slot: u32) -> bool {
        let di = self.swap.dev_of(slot);
        let all_zero = (slot..slot + nr).all(|s| self.swap.map(s) & SWAP_ZEROMAP != 0);
        for i in 0..nr {
            let c = self.swap.data(slot + i);
            let f = self.pm.frames[(pfn + i as u64) as usize];
            self.pm.frames[(pfn + i as u64) as usize] = with_content(f, c);
        }
        if all_zero {
            // swap_read_folio_zeromap(): folio_zero_range, no I/O
            self.charge(self.costs.clear_4k_ns * nr as u64);
            self.rec.vm.add(Ev::SWPIN_ZERO, nr as u64);
            trace_event!(
                self,
                thplab_swapin,
                pfn = pfn,
                slot = slot,
                nr_pages = nr,
                zero_pages = nr,
                dev = self.swap.devs[di].name.clone()
            );
            return false;
        }
        let zeros = (slot..slot + nr).filter(|&s| self.swap.map(s) & SWAP_ZEROMAP != 0).count() as u64;
        if zeros > 0 {
            self.charge(self.costs.clear_4k_ns * zeros);
            self.rec.vm.add(Ev::SWPIN_ZERO, zeros);
        }
        if self.swap.devs[di].zram.is_some() {
            let mut ns = 0;
            for s in slot..slot + nr {
                if self.swap.map(s) & SWAP_ZEROMAP == 0 {
                    ns += self.swap.devs[di].zram.as_ref().unwrap().read_ns(self.swap.data(s));
                }
            }
            self.charge(ns);
        } else {
            let w = self.swap_io(di, false, slot, nr);
            self.charge(w);
        }
        let n = nr as u64 - zeros;
        trace_event!(
            self,
            thplab_swapin,
            pfn = pfn,
            slot = slot,
            nr_pages = nr,
            zero_pages = zeros,
            dev = self.swap.devs[di].name.clone()
        );
        self.rec.vm.add(Ev::PSWPIN, n);
        self.rec.vm.add(Ev::PGPGIN, 4 * n);
        true
    }
}
