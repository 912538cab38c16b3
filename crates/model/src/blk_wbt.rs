//! Writeback throttling (block/blk-wbt.c, block/blk-rq-qos.c): a block queue with wbt on
//! (`wbt_lat_usec` > 0) lets only `max_depth` tracked writes be in flight. Swap writes carry
//! REQ_SWAP, one of REQ_HIPRIO, so get_limit() gives them the whole `rq_depth.max_depth`;
//! a writer over the limit sleeps in rq_qos_wait() until wbt_rqw_done() wakes it: on a queue
//! with a volatile write cache (`write_cache` = "write back") only when the tracked writes in
//! flight fall to zero, otherwise when they fall below `wb_normal` by at least half of
//! `wb_background`. The depth adapts per monitoring window (wb_timer_fn, 100 ms, shorter
//! after latency violations): a window of writes with no read sample scales it up
//! (scale_step goes negative: 1 + ((16 - 1) << -step), capped at 3/4 of the queue depth), a
//! window whose fastest read took longer than `min_lat_nsec` scales it down, and idle
//! windows bring it back to the default (16, or the queue depth if smaller).
//!
//! The model keeps one `RqWb` per swap device on a block queue. Request completion times are
//! known when a request is submitted (the device model in page_io.rs serves requests in
//! order), so the timer and the wake-ups are evaluated lazily, at the next submission.

use std::collections::VecDeque;

/// RWB_DEF_DEPTH
const RWB_DEF_DEPTH: u64 = 16;
/// RWB_WINDOW_NSEC
const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// RWB_MIN_WRITE_SAMPLES
const RWB_MIN_WRITE_SAMPLES: u64 = 3;
/// RWB_UNKNOWN_BUMP
const RWB_UNKNOWN_BUMP: u32 = 5;

/// wb_timer_fn()'s verdict on a window (latency_exceeded()).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lat {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// struct rq_wb with its struct rq_depth, for one request queue.
#[derive(Clone, Debug)]
pub struct RqWb {
    /// min_lat_nsec (wbt_lat_usec × 1000)
    pub min_lat_nsec: u64,
    /// blk_queue_write_cache(): the device has a volatile write cache
    pub write_cache: bool,
    /// rq_depth.queue_depth: blk_queue_depth() (nr_requests)
    queue_depth: u64,
    pub scale_step: i32,
    scaled_max: bool,
    pub max_depth: u64,
    pub wb_normal: u64,
    pub wb_background: u64,
    unknown_cnt: u32,
    /// completion times of the tracked (throttled) writes in flight, in order
    tracked: VecDeque<u64>,
    /// the monitoring window: (start, end) while the stat callback is active
    window: Option<(u64, u64)>,
    /// completions not yet seen by a window: (time, is a read, the read's latency)
    events: VecDeque<(u64, bool, u64)>,
    /// rwb->sync_issue / sync_cookie: a read issued and not yet completed (issue, completion)
    sync: Option<(u64, u64)>,
    /// how many times a writer slept in rq_qos_wait (for tests and traces)
    pub waits: u64,
}

impl RqWb {
    /// wbt_init(): `lat_usec` as the queue's wbt_lat_usec reads, `queue_depth` its
    /// nr_requests. None when wbt is off (wbt_lat_usec 0).
    pub fn new(lat_usec: u64, write_cache: bool, queue_depth: u64) -> Option<RqWb> {
        if lat_usec == 0 {
            return None;
        }
        let mut r = RqWb {
            min_lat_nsec: lat_usec * 1000,
            write_cache,
            queue_depth: queue_depth.max(1),
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            unknown_cnt: 0,
            tracked: VecDeque::new(),
            window: None,
            events: VecDeque::new(),
            sync: None,
            waits: 0,
        };
        r.calc_max_depth();
        r.calc_wb_limits();
        Some(r)
    }

    /// rq_depth_calc_max_depth(): true when the depth cannot grow further.
    fn calc_max_depth(&mut self) -> bool {
        let mut ret = false;
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                ret = true;
            }
        } else {
            let mut depth = RWB_DEF_DEPTH.min(self.queue_depth);
            if self.scale_step > 0 {
                depth = 1 + ((depth - 1) >> (self.scale_step as u32).min(31));
            } else if self.scale_step < 0 {
                let maxd = 3 * self.queue_depth / 4;
                depth = 1 + ((depth - 1) << (-self.scale_step as u32).min(31));
                if depth > maxd {
                    depth = maxd;
                    ret = true;
                }
            }
            self.max_depth = depth;
        }
        ret
    }

    /// calc_wb_limits()
    fn calc_wb_limits(&mut self) {
        if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }

    /// scale_up() (rq_depth_scale_up): true when the depth changed (rwb_wake_all follows).
    fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        true
    }

    /// scale_down() (rq_depth_scale_down)
    fn scale_down(&mut self, hard_throttle: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
    }

    /// rwb_arm_timer(): the window length for the current step.
    fn cur_win_nsec(&self) -> u64 {
        if self.scale_step > 0 {
            (RWB_WINDOW_NSEC << 4) / ((((self.scale_step + 1) as u64) << 8) as f64).sqrt() as u64
        } else {
            RWB_WINDOW_NSEC
        }
    }

    fn arm_timer(&mut self, at: u64) {
        self.window = Some((at, at + self.cur_win_nsec()));
    }

    /// Tracked writes still in flight at `t`.
    fn inflight_at(&self, t: u64) -> u64 {
        self.tracked.iter().filter(|&&c| c > t).count() as u64
    }

    /// wb_timer_fn() at the end of the window: latency_exceeded() over the completions the
    /// window saw, then scale; re-armed while the step is off centre or writes are in flight.
    /// Returns true when the depth grew (rwb_wake_all).
    fn timer_fn(&mut self, start: u64, end: u64) -> bool {
        let (mut writes, mut reads, mut read_min) = (0u64, 0u64, u64::MAX);
        while self.events.front().is_some_and(|e| e.0 <= end) {
            let (t, read, lat) = self.events.pop_front().unwrap();
            if t < start {
                continue; // completed while no window was active: blk_stat did not see it
            }
            if read {
                reads += 1;
                read_min = read_min.min(lat);
            } else {
                writes += 1;
            }
        }
        let inflight = self.inflight_at(end);
        // rwb_sync_issue_lat(): a read issued and still outstanding at the window's end
        let thislat = match self.sync {
            Some((issue, done)) if issue <= end && done > end => end - issue,
            _ => 0,
        };
        let status = if thislat > self.cur_win_nsec() || (thislat > self.min_lat_nsec && reads == 0) {
            Lat::Exceeded
        } else if !(reads >= 1 && writes >= RWB_MIN_WRITE_SAMPLES) {
            if writes > 0 || inflight > 0 {
                Lat::UnknownWrites
            } else {
                Lat::Unknown
            }
        } else if read_min > self.min_lat_nsec {
            Lat::Exceeded
        } else {
            Lat::Ok
        };
        let mut grew = false;
        match status {
            Lat::Exceeded => self.scale_down(true),
            Lat::Ok | Lat::UnknownWrites => grew = self.scale_up(),
            Lat::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        grew = self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        if self.scale_step != 0 || inflight > 0 {
            self.arm_timer(end);
        } else {
            self.window = None;
        }
        grew
    }

    /// Run every window that ends by `t`.
    fn run_timers(&mut self, t: u64) {
        while let Some((s, e)) = self.window {
            if e > t {
                break;
            }
            self.timer_fn(s, e);
        }
        self.retire(t);
    }

    /// Forget tracked writes completed by `t` (their wbt_done ran).
    fn retire(&mut self, t: u64) {
        while self.tracked.front().is_some_and(|&c| c <= t) {
            self.tracked.pop_front();
        }
        if self.sync.is_some_and(|(_, done)| done <= t) {
            self.sync = None;
        }
    }

    /// wbt_wait() → __wbt_wait() → rq_qos_wait() for a swap write submitted at `now`:
    /// returns when it gets its token (now when the tracked writes in flight are below
    /// max_depth). A sleeper is woken by wbt_rqw_done() at a completion (with a write cache,
    /// only the one that empties the queue) or by rwb_wake_all() when a window scales the
    /// depth up, and takes its token if then below the limit.
    pub fn wait(&mut self, now: u64) -> u64 {
        self.run_timers(now);
        let mut t = now;
        if self.inflight_at(t) >= self.max_depth {
            self.waits += 1;
            loop {
                let next_c = self.tracked.iter().copied().find(|&c| c > t);
                let next_w = self.window.map(|w| w.1);
                let completion_first = match (next_c, next_w) {
                    (Some(c), Some(w)) => c < w,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => break, // nothing in flight: cannot stay above the limit
                };
                if completion_first {
                    t = next_c.unwrap();
                    let inflight = self.inflight_at(t);
                    // wbt_rqw_done()
                    let limit = if self.write_cache { 0 } else { self.wb_normal };
                    if inflight > 0 && inflight >= limit {
                        continue;
                    }
                    let diff = limit.saturating_sub(inflight);
                    if (inflight == 0 || diff >= self.wb_background / 2) && inflight < self.max_depth {
                        break;
                    }
                } else {
                    let (s, e) = self.window.unwrap();
                    t = e;
                    if self.timer_fn(s, e) && self.inflight_at(t) < self.max_depth {
                        break;
                    }
                }
            }
            self.retire(t);
        }
        if self.window.is_none() {
            self.arm_timer(t);
        }
        t
    }

    /// wbt_track + the request's completion at `done`: a tracked write in flight until then.
    pub fn write_issued(&mut self, done: u64) {
        let i = self.tracked.partition_point(|&c| c <= done);
        self.tracked.insert(i, done);
        self.push_event(done, false, 0);
    }

    /// A write that wbt does not track (none in the model today) or a read: blk_stat sees
    /// its completion; a read is also the sync_issue cookie when none is outstanding.
    pub fn read_issued(&mut self, issue: u64, done: u64) {
        self.run_timers(issue);
        if self.sync.is_none() {
            self.sync = Some((issue, done));
        }
        self.push_event(done, true, done - issue);
    }

    fn push_event(&mut self, t: u64, read: bool, lat: u64) {
        let i = self.events.partition_point(|e| e.0 <= t);
        self.events.insert(i, (t, read, lat));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_follow_rq_depth_calc_max_depth() {
        let mut w = RqWb::new(2000, true, 128).unwrap();
        assert_eq!((w.max_depth, w.wb_normal, w.wb_background), (16, 8, 4));
        let mut seen = vec![];
        while w.scale_up() {
            seen.push(w.max_depth);
        }
        // 1 + (15 << 1), 1 + (15 << 2), then 3/4 of 128
        assert_eq!(seen, vec![31, 61, 96]);
        w.scale_down(true);
        assert_eq!(w.max_depth, 16);
        w.scale_down(true);
        assert_eq!(w.max_depth, 8);
        assert!(RqWb::new(0, true, 128).is_none());
    }

    /// With a write cache a writer over the limit sleeps until every tracked write completed.
    #[test]
    fn write_cache_waits_for_an_empty_queue() {
        let mut w = RqWb::new(2000, true, 128).unwrap();
        for i in 0..16 {
            assert_eq!(w.wait(0), 0);
            w.write_issued(1000 * (i + 1));
        }
        assert_eq!(w.wait(0), 16_000);
        let mut w = RqWb::new(2000, false, 128).unwrap();
        for i in 0..16 {
            w.wait(0);
            w.write_issued(1000 * (i + 1));
        }
        // without: woken once fewer than wb_normal (8) are in flight, by at least
        // wb_background / 2 (2): at 6 left, after the 10th completion
        assert_eq!(w.wait(0), 10_000);
    }

    /// Windows of writes alone (no read sample) scale the depth up; idle windows bring it back.
    #[test]
    fn write_only_windows_scale_up_then_return() {
        let mut w = RqWb::new(2000, true, 128).unwrap();
        let mut t = 0;
        while t < 450_000_000 {
            t = w.wait(t);
            w.write_issued(t + 1_000_000);
            t += 100_000;
        }
        assert_eq!(w.max_depth, 96);
        // a long idle period: five unknown windows per step back
        w.wait(t + 5_000_000_000);
        assert_eq!(w.scale_step, 0);
    }
}
