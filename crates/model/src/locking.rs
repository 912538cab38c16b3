//! Simulated spinlocks (kernel/locking): a shared lock's busy intervals in simulated
//! time. A CPU that finds a lock held spins until it is free; the spin is charged and
//! counted. The locks live with what they protect: each node's lru_lock in its pgdat,
//! the swap device lock and the swap cache lock in the swap state.

use crate::kernel::Kernel;

/// Shared locks the model simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockId {
    Lru(usize),
    Swap,
    SwapCache,
}

/// A lock's busy intervals in simulated time, sorted and non-overlapping (start, end).
/// Acquisitions arrive nearly in time order (the engine runs steps by start time), so
/// the intervals are a deque appended at the back, searched by binary search.
#[derive(Default, Clone, Debug)]
pub struct SimLock {
    busy: std::collections::VecDeque<(u64, u64)>,
}
impl SimLock {
    /// Take the lock at `at` for `hold` ns; returns how long the CPU spun first.
    /// Intervals ending before `prune_before` (the current step's start) can delay no
    /// one any more and are dropped; at most 4096 are kept.
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
        while let Some(&(s, e)) = self.busy.get(i) {
            if s < t + hold {
                t = t.max(e);
                i += 1;
            } else {
                break;
            }
        }
        if i > 0 && self.busy[i - 1].1 == t {
            self.busy[i - 1].1 = t + hold;
        } else {
            self.busy.insert(i, (t, t + hold));
        }
        t - at
    }
}

impl Kernel {
    /// Take a simulated shared lock for `hold` ns at the current time; the spin before
    /// it is charged and counted.
    pub fn lock_acquire(&mut self, id: LockId, hold: u64) {
        let at = self.clock.now + self.clock.cost;
        let now = self.clock.now;
        let lock = match id {
            LockId::Lru(nid) => &mut self.pgdat[nid].lru_lock,
            LockId::Swap => &mut self.swap.lock,
            LockId::SwapCache => &mut self.swap.cache_lock,
        };
        let wait = lock.acquire(at, hold, now);
        self.rec.lock_wait_ns += wait;
        self.rec.lock_acquisitions += 1;
        self.charge(wait + hold);
    }
}
