//! Swap I/O (mm/page_io.c): swap_writepage / __swap_writepage and swap_read_folio.
//! Before any I/O a folio whose every page is zero goes to the zeromap
//! (is_folio_zero_filled → swap_zeromap_folio_set: swpout_zero, no I/O; swap_read_folio_zeromap
//! on the way back: swpin_zero). Otherwise zram stores page by page (zram.rs) and other
//! devices take one bio for the whole folio, split into requests of at most max_sectors_kb:
//! latency, a seek when the bio does not follow the previous one (random_penalty_ns), and
//! size / bandwidth. Block devices transfer requests one after another and keep up to
//! queue_depth in flight, swap writes further limited by writeback throttling (blk_wbt.rs)
//! (`swap_io`): a write is asynchronous (the folio stays in the swap cache under writeback until its
//! request completes, folio_test_writeback), a read is waited for; synchronous devices
//! (pmem, zram) are memory copies done by the CPU that asked. pswpout/pswpin count pages,
//! thp_swpout a PMD-size folio written whole; pgpgout/pgpgin count kB.
//!
//! Plugging (block/blk-core.c blk_start_plug / blk_finish_plug, block/blk-mq.c
//! blk_mq_submit_bio, block/blk-merge.c): madvise (madvise_do_behavior) and reclaim
//! (shrink_lruvec) run under a plug. A swap write bio submitted while plugged first tries
//! a back merge into the request last added to the plug (blk_attempt_plug_merge →
//! bio_attempt_back_merge): same queue, its first sector right after the request's last,
//! and the merged request within max_sectors_kb (blk_rq_get_max_sectors) and max_segments
//! (ll_back_merge_fn: one segment per folio here). Only a bio that merges into nothing takes
//! a wbt token and a tag and makes a new request; the plug holds it until the next request
//! is added (blk_add_rq_to_plug dispatches the plug once its last request reaches
//! BLK_PLUG_FLUSH_SIZE) or the plug is finished. So MADV_PAGEOUT of consecutive 4 KiB
//! pages to consecutive slots reaches the device as requests of max_segments pages, not one
//! request per page. The model keeps the one request that can still grow (`BlkPlug`); its
//! folios are under writeback from submission and learn their completion when it is issued.

use crate::blk_core::PlugRq;
use crate::consts::*;
use crate::content;
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::swapfile::*;
use crate::trace::trace_event;
use crate::vmstat::Ev;

/// A folio under writeback whose request still sits in the plug: completion not known yet.
const WB_PLUGGED: u64 = u64::MAX;

/// zram could not store a compressed page (zs_malloc failed): the folio stays in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZsMallocFailed;

impl Kernel {
    /// A bio of `nr` pages at global slot `slot` on device `di`. Synchronous devices
    /// (pmem) are served by the CPU that asks: it waits the whole service. On a block queue
    /// the bio is split into requests of at most max_sectors_kb (bio_split_to_limits); each
    /// write request first gets a writeback-throttling token (blk_wbt.rs: wbt_wait), then a
    /// tag (the submitter blocks while `queue_depth` requests are in flight), and the device
    /// transfers requests one after another at its bandwidth (a seek first when the bio
    /// does not follow the previous one), each completing its latency after its transfer.
    /// A write request also takes `write_segment_ns` of the device's time per segment
    /// (`segs`: one per folio merged into it; a split folio's pieces one each).
    /// Returns (the ns the caller waits: for a write, only for tokens and tags; for a read,
    /// until it completes; the completion time of the last request).
    fn swap_io(&mut self, di: usize, write: bool, slot: u32, nr: u32, segs: u32) -> (u64, u64) {
        let t0 = self.clock.now + self.clock.cost;
        let mut now = t0;
        let d = &mut self.swap.devs[di];
        let (lat, mbps) = if write {
            (d.io.write_latency_ns, d.io.write_mb_per_s)
        } else {
            (d.io.read_latency_ns, d.io.read_mb_per_s)
        };
        let mut seek = if d.last_end == slot { 0 } else { d.io.random_penalty_ns };
        d.last_end = slot + nr;
        let bytes = nr as u64 * PAGE_SIZE;
        if d.sync_io {
            let service = lat + seek + (bytes * 1000).checked_div(mbps).unwrap_or(0);
            return (service, now + service);
        }
        let max = if d.io.max_sectors_kb == 0 { bytes } else { d.io.max_sectors_kb * 1024 };
        let mut left = bytes;
        let mut done = now;
        while left > 0 {
            let part = left.min(max);
            left -= part;
            if write {
                if let Some(w) = d.wbt.as_mut() {
                    now = w.wait(now);
                }
            }
            while d.inflight.front().is_some_and(|&c| c <= now) {
                d.inflight.pop_front();
            }
            if d.inflight.len() as u64 >= d.io.queue_depth.max(1) {
                // get a request tag: wait for the oldest request in flight
                now = d.inflight.pop_front().unwrap_or(now);
            }
            let start = now.max(d.busy_until);
            let seg_ns = if write { (segs as u64 * part).div_ceil(bytes).max(1) * d.io.write_segment_ns } else { 0 };
            d.busy_until = start + seek + (part * 1000).checked_div(mbps).unwrap_or(0) + seg_ns;
            seek = 0;
            let end = d.busy_until + lat;
            let i = d.inflight.partition_point(|&c| c <= end);
            d.inflight.insert(i, end);
            if let Some(w) = d.wbt.as_mut() {
                if write {
                    w.write_issued(end);
                } else {
                    w.read_issued(now, end);
                }
            }
            done = done.max(end);
        }
        if write {
            (now - t0, done)
        } else {
            (done - t0, done)
        }
    }

    /// blk_start_plug(): plug the current task's I/O (nested plugs do nothing).
    pub fn blk_start_plug(&mut self) {
        self.swap.plug.depth += 1;
    }

    /// blk_finish_plug(): the outermost finish issues what the plug holds.
    pub fn blk_finish_plug(&mut self) {
        self.swap.plug.depth = self.swap.plug.depth.saturating_sub(1);
        if self.swap.plug.depth == 0 {
            self.blk_flush_plug();
        }
    }

    /// blk_flush_plug(): issue the plugged request (its wbt token and tag wait is the
    /// submitter's), and give its folios their completion time.
    pub fn blk_flush_plug(&mut self) {
        let Some(rq) = self.swap.plug.rq.take() else { return };
        let (w, done) = self.swap_io(rq.dev, true, rq.slot, rq.nr, rq.segs as u32);
        self.charge(w);
        self.swap.plug.requests += 1;
        for (head, before) in rq.heads {
            if let Some(d) = self.swap.writeback.get_mut(&head) {
                if *d == WB_PLUGGED {
                    *d = done.max(before);
                }
            }
        }
    }

    /// A swap write bio of `nr` pages at `slot` on block device `di` for the folio at
    /// `head` (__swap_writepage → submit_bio → blk_mq_submit_bio). Not plugged: issued at
    /// once. Plugged: back-merged into the plug's request when it fits, otherwise the plug's
    /// request is issued and the bio's requests follow, the last one kept in the plug.
    fn swap_write_bio(&mut self, di: usize, head: u64, slot: u32, nr: u32) {
        if self.swap.plug.depth == 0 {
            let (w, done) = self.swap_io(di, true, slot, nr, 1);
            self.charge(w);
            self.swap.writeback.insert(head as u32, done);
            return;
        }
        let d = &self.swap.devs[di];
        let max_pages =
            if d.io.max_sectors_kb == 0 { u32::MAX } else { (d.io.max_sectors_kb * 1024 / PAGE_SIZE) as u32 };
        let max_segs = if d.io.max_segments == 0 { u64::MAX } else { d.io.max_segments };
        if let Some(rq) = self.swap.plug.rq.as_mut() {
            // bio_attempt_back_merge(): contiguous, within max_sectors and max_segments
            if rq.dev == di && rq.slot + rq.nr == slot && rq.nr + nr <= max_pages && rq.segs < max_segs {
                rq.nr += nr;
                rq.segs += 1;
                rq.heads.push((head as u32, 0));
                self.swap.plug.merges += 1;
                self.swap.writeback.insert(head as u32, WB_PLUGGED);
                return;
            }
        }
        // a new request: the plug's request goes to the device first
        self.blk_flush_plug();
        // bio_split_to_limits(): all but the last piece are issued now
        let mut before = 0;
        let (mut s, mut left) = (slot, nr);
        while left > max_pages {
            let (w, done) = self.swap_io(di, true, s, max_pages, 1);
            self.charge(w);
            self.swap.plug.requests += 1;
            before = before.max(done);
            s += max_pages;
            left -= max_pages;
        }
        self.swap.plug.rq = Some(PlugRq { dev: di, slot: s, nr: left, segs: 1, heads: vec![(head as u32, before)] });
        self.swap.writeback.insert(head as u32, WB_PLUGGED);
    }

    /// folio_test_writeback(): is the swap-cache folio at `head` still being written?
    pub fn folio_under_writeback(&self, head: u64) -> bool {
        self.swap.writeback.get(&(head as u32)).is_some_and(|&done| done > self.clock.now + self.clock.cost)
    }

    /// swap_writepage(): write the folio at `head` (`nr` pages) to its slots from `slot`.
    /// Returns Err when zram cannot get memory for the compressed pages (the folio is
    /// then kept, as when zs_malloc fails).
    pub fn swap_writepage(&mut self, head: u64, nr: u32, slot: u32) -> Result<(), ZsMallocFailed> {
        let di = self.swap.dev_of(slot);
        // is_folio_zero_filled() (mm/page_io.c): the last word of each page first, then the
        // page's words in a plain loop (zero_filled_4k_ns, else memchr_inv_4k_ns, by the
        // bytes read: content::zero_filled_bytes); kernels before v6.12 had no zeromap
        // (thplab.swap_zeromap=n)
        let mut zero = self.cfg.swap_zeromap;
        let check_ns = self.costs.zero_filled_4k_ns.unwrap_or(self.costs.memchr_inv_4k_ns);
        for i in 0..nr as u64 {
            if !zero {
                break;
            }
            let c = content(self.pm.frames[(head + i) as usize]);
            self.charge(check_ns * content::zero_filled_bytes(c) / PAGE_SIZE);
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
            // __swap_writepage → swap_writepage_bdev_async: the folio is under writeback
            // until the request completes; the writer goes on
            self.swap_write_bio(di, head, slot, nr);
        }
        // count_swpout_vm_event()
        if nr > 1 {
            let order = nr.trailing_zeros();
            if order == HPAGE_PMD_ORDER {
                self.rec.vm.count(Ev::THP_SWPOUT);
            }
            self.count_mthp_order(order, "swpout", 1);
        }
        self.rec.vm.add(Ev::PSWPOUT, nr as u64);
        self.rec.vm.add(Ev::PGPGOUT, 4 * nr as u64);
        Ok(())
    }

    fn set_slot_data(&mut self, slot: u32, c: u16) {
        let di = self.swap.dev_of(slot);
        let d = &mut self.swap.devs[di];
        d.data[(slot - d.base) as usize] = c;
    }

    /// swap_read_folio(): fill the `nr` pages from `pfn` with what slots `slot..` hold.
    /// `wait`: the caller waits for the read (the faulting page); readahead pages are
    /// only submitted. Returns true when I/O was done (a major fault), false for the zeromap.
    pub fn swap_read_folio(&mut self, pfn: u64, nr: u32, slot: u32, wait: bool) -> bool {
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
                    ns += self.swap.devs[di].zram.as_ref().unwrap().read_ns(self.swap.data(s), self.costs.clear_4k_ns);
                }
            }
            self.charge(ns);
        } else {
            // a read the task waits for schedules, which flushes its plug first
            self.blk_flush_plug();
            let (w, _) = self.swap_io(di, false, slot, nr, 1);
            if wait || self.swap.devs[di].sync_io {
                self.charge(w);
            }
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
