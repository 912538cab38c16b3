//! Simulated spinlocks (kernel/locking): a shared lock's busy intervals in simulated
//! time. The locks live with what they protect: each node's lru_lock in its pgdat, each
//! swap device's si->lock and each swap cluster's ci->lock in the swap state.
//!
//! What an acquisition costs is what happens to the lock's cache line: taken again by
//! the CPU that held it last, it is in that CPU's cache (the work under the lock is
//! already in the operation's own cost); taken by another CPU, the line moves
//! (lock_handoff_ns, a cache-line transfer); found held, the CPU spins until it is free
//! (queued_spin_lock_slowpath) and then takes the line: the spin and the transfer are
//! charged and counted as lock_wait_ns. The lock is held for the transfer plus the work
//! done under it, per item (lock_item_ns: a swap-map byte, a swap-table entry, a folio
//! moved on an LRU list), so a THP's 512 entries under one acquisition hold it once,
//! where 512 base pages take it 512 times.

use crate::kernel::Kernel;

/// Shared locks the model simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockId {
    /// lruvec->lru_lock of a node
    Lru(usize),
    /// si->lock of a swap device (the cluster lists)
    SwapDev(usize),
    /// ci->lock of a swap cluster, by its global number (first global slot / cluster size)
    SwapCluster(u32),
}

impl LockId {
    /// The lock's class name, as /proc/lock_stat names it.
    pub fn class(self) -> &'static str {
        match self {
            LockId::Lru(_) => "lru_lock",
            LockId::SwapDev(_) => "si->lock",
            LockId::SwapCluster(_) => "ci->lock",
        }
    }
}

const NO_CPU: u32 = u32::MAX;

/// A lock's busy intervals in simulated time, sorted and non-overlapping (start, end), and
/// the CPU that took it last. Acquisitions arrive nearly in time order (the engine runs
/// steps by start time), so the intervals are a deque appended at the back, searched by
/// binary search.
#[derive(Clone, Debug)]
pub struct SimLock {
    busy: std::collections::VecDeque<(u64, u64)>,
    last_cpu: u32,
    /// when the last holder's hold ends
    last_end: u64,
}
impl Default for SimLock {
    fn default() -> Self {
        SimLock { busy: Default::default(), last_cpu: NO_CPU, last_end: 0 }
    }
}
impl SimLock {
    /// Take the lock at `at` for `hold` ns; returns how long the CPU spun first.
    /// A queued spinlock (qspinlock) is fair: a CPU that finds it held spins until the
    /// holders queued ahead of it release it, and then it is the next owner. So the spin
    /// lasts to the end of the busy run that covers `at` (holds that follow one another
    /// with no gap are a queue), and the first gap is ours even when it is shorter than
    /// our hold: a later hold recorded there by a step simulated earlier would, in the
    /// kernel, have queued behind us (its delay is not charged to it; the busy time is
    /// the union of the holds). Intervals ending before `prune_before` (the current
    /// step's start) can delay no one any more and are dropped; at most 4096 are kept.
    pub fn acquire(&mut self, at: u64, hold: u64, prune_before: u64) -> u64 {
        while self.busy.front().is_some_and(|&(_, e)| e < prune_before) || self.busy.len() > 4096 {
            self.busy.pop_front();
        }
        let mut t = at;
        // the first interval that ends after t (ends are sorted like starts)
        let mut i = match self.busy.back() {
            // the common case: nothing is held at or after t
            Some(&(_, e)) if e <= t => self.busy.len(),
            None => 0,
            _ => self.busy.partition_point(|&(_, e)| e <= t),
        };
        // spin through the holds queued ahead (a run of intervals without gaps)
        while let Some(&(s, e)) = self.busy.get(i) {
            if s <= t {
                t = e;
                i += 1;
            } else {
                break;
            }
        }
        if hold > 0 {
            // our hold [t, t + hold), merged with what it touches: busy[i - 1] ends at or
            // before t, busy[i..] start after t
            let end = t + hold;
            let mut j = i;
            let mut new_end = end;
            while let Some(&(s, e)) = self.busy.get(j) {
                if s <= end {
                    new_end = new_end.max(e);
                    j += 1;
                } else {
                    break;
                }
            }
            self.busy.drain(i..j);
            if i > 0 && self.busy[i - 1].1 == t {
                self.busy[i - 1].1 = new_end;
            } else {
                self.busy.insert(i, (t, new_end));
            }
        }
        t - at
    }
    /// Is the lock free of any recorded use at or after `t`?
    pub fn idle_since(&self, t: u64) -> bool {
        self.busy.back().is_none_or(|&(_, e)| e < t)
    }
}

impl Kernel {
    /// Take a simulated shared lock at the current time for the work on `items` items
    /// under it. The spin (when it is held) and the cache-line transfer (when another CPU
    /// held it last) are charged; the work itself is part of the caller's own costs.
    pub fn lock_acquire(&mut self, id: LockId, items: u64) {
        self.lock_hold(id, items * self.costs.lock_item_ns);
    }

    /// Take a simulated shared lock for `work_ns` of work under it (work whose cost the
    /// caller charges in its own terms, e.g. compaction's per-page isolation).
    pub fn lock_hold(&mut self, id: LockId, work_ns: u64) {
        let at = self.clock.now + self.clock.cost;
        let now = self.clock.now;
        let cpu = self.clock.cpu;
        let handoff_ns = self.costs.lock_handoff_ns;
        let lock = match id {
            LockId::Lru(nid) => &mut self.pgdat[nid].lru_lock,
            LockId::SwapDev(di) => &mut self.swap.devs[di].lock,
            LockId::SwapCluster(c) => self.swap.cluster_locks.entry(c).or_default(),
        };
        let moved = lock.last_cpu != cpu && lock.last_cpu != NO_CPU;
        let handoff = if moved { handoff_ns } else { 0 };
        // the caller's own work under its previous hold is in its own costs, charged in
        // a lump: taking the lock again the CPU comes after that work, it does not spin
        // on itself
        let from = if lock.last_cpu == cpu { at.max(lock.last_end) } else { at };
        let hold = handoff + work_ns;
        let wait = lock.acquire(from, hold, now);
        lock.last_cpu = cpu;
        lock.last_end = from + wait + hold;
        let st = self.rec.lock_stat.entry(id.class()).or_default();
        if wait > 0 {
            self.rec.lock_wait_ns += wait + handoff;
            st[0] += wait + handoff;
            st[2] += 1;
        }
        st[1] += 1;
        self.rec.lock_acquisitions += 1;
        self.charge(wait + handoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn busy_intervals_make_later_acquirers_spin() {
        let mut l = SimLock::default();
        assert_eq!(l.acquire(100, 50, 0), 0);
        // overlapping: waits until 150
        assert_eq!(l.acquire(120, 10, 0), 30);
        // after both: no wait
        assert_eq!(l.acquire(200, 10, 0), 0);
        assert!(l.idle_since(211) && !l.idle_since(205));
    }

    #[test]
    fn a_queued_waiter_takes_the_first_release_not_the_first_gap_that_fits() {
        // one CPU's long loop recorded a comb of short holds (20 ns every 60 ns) ahead of
        // the simulated time of another CPU's acquisition: qspinlock hands the lock over
        // at the first release, it does not wait for the comb to end
        let mut l = SimLock::default();
        for k in 0..100 {
            assert_eq!(l.acquire(1000 + 60 * k, 20, 0), 0);
        }
        assert_eq!(l.acquire(1005, 160, 0), 15);
        // holds queued back to back are spun through, and the busy time is their union
        let mut q = SimLock::default();
        q.acquire(0, 100, 0);
        q.acquire(0, 100, 0);
        assert_eq!(q.acquire(50, 10, 0), 150);
        assert!(q.idle_since(211) && !q.idle_since(209));
    }

    #[test]
    fn a_cpu_does_not_spin_on_its_own_hold() {
        let m = thplab_workload::MachineSpec::parse_any("1G,cpus=2").unwrap();
        let ks = thplab_workload::knobs::defaults();
        let costs = thplab_workload::costs::CostProfile::default();
        let mut k = crate::kernel::Kernel::new(&m, ks, costs, 1).unwrap();
        k.lock_acquire(LockId::Lru(0), 100);
        k.lock_acquire(LockId::Lru(0), 100);
        assert_eq!(k.rec.lock_wait_ns, 0);
        assert_eq!(k.rec.lock_acquisitions, 2);
        // another CPU at the same instant spins behind both holds and takes the line over
        k.clock.cpu = 1;
        let before = k.clock.cost;
        k.lock_acquire(LockId::Lru(0), 1);
        let spun = 200 * k.costs.lock_item_ns;
        assert_eq!(k.rec.lock_wait_ns, spun + k.costs.lock_handoff_ns);
        assert_eq!(k.clock.cost - before, spun + k.costs.lock_handoff_ns);
    }
}
