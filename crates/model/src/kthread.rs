//! Kernel threads (kernel/kthread.c): kswapd and kcompactd per node, one khugepaged, and
//! on a guest with free page reporting the kworker that runs its delayed work.
//! The engine runs them as timed tasks; a thread's step returns what it does next, and
//! the kernel asks for wake-ups through `wake`.

use crate::kernel::Kernel;

/// Kernel threads: one kswapd and one kcompactd per node, one khugepaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kthread {
    Kswapd(usize),
    Kcompactd(usize),
    Khugepaged,
    /// the kworker running page_reporting_process() (page_reporting.rs)
    PageReporting,
}

/// What a kernel thread does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KthreadNext {
    /// sleep for this many ns (a timed wait; an explicit wake-up may come earlier)
    Sleep(u64),
    /// wait until woken (wait_event without timeout)
    Wait,
    /// more work: run again as soon as the CPU allows
    Again,
}

impl Kernel {
    /// Ask the engine to run kernel thread `kt` now (wake_up_interruptible).
    pub fn wake(&mut self, kt: Kthread) {
        let at = self.clock.now + self.clock.cost;
        self.clock.wakeups.push((kt, at));
    }

    /// The kernel threads this machine has.
    pub fn kthreads(&self) -> Vec<Kthread> {
        let mut v = vec![];
        for n in 0..self.pm.nodes.len() {
            v.push(Kthread::Kswapd(n));
            v.push(Kthread::Kcompactd(n));
        }
        v.push(Kthread::Khugepaged);
        if self.pm.pr.enabled {
            v.push(Kthread::PageReporting);
        }
        v
    }

    /// The state a kernel thread starts in at boot.
    pub fn kthread_initial(&self, kt: Kthread) -> KthreadNext {
        match kt {
            Kthread::Kcompactd(n) => self.kcompactd_initial(n),
            Kthread::PageReporting => self.page_reporting_initial(),
            _ => KthreadNext::Wait,
        }
    }

    /// Run one step of a kernel thread (its main loop body).
    pub fn kthread_step(&mut self, kt: Kthread) -> KthreadNext {
        match kt {
            Kthread::Kswapd(n) => self.kswapd_step(n),
            Kthread::Kcompactd(n) => self.kcompactd_step(n),
            Kthread::Khugepaged => self.khugepaged_step(),
            Kthread::PageReporting => self.page_reporting_step(),
        }
    }
}
