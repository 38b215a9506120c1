//! The wall clock and waiting for a deadline.
//!
//! Time is `CLOCK_MONOTONIC` in ns. The loop sleeps in `ppoll(2)` on the TUN file
//! descriptors until the next deadline less [`SPIN_MARGIN_NS`] (with the thread's
//! timer slack set to 1 ns, `prctl(PR_SET_TIMERSLACK)`, so the hrtimer is not
//! deferred by the default 50 µs slack: kernel/time/hrtimer.c, `current->timer_slack_ns`),
//! then spins reading the clock until the deadline. Sleeping keeps an idle emulator
//! off the CPU; the short spin absorbs the wake-up latency, so departures land within
//! a few µs of their intended time when the host is not overloaded.

use std::os::fd::RawFd;

/// Wake this long before a deadline and spin the rest (wake-up latency of a sleeping
/// thread on an unloaded host is tens of µs).
pub const SPIN_MARGIN_NS: u64 = 25_000;

/// `CLOCK_MONOTONIC` now, ns.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_REALTIME` now, ns since the Unix epoch.
pub fn unix_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Set this thread's timer slack to 1 ns (`PR_SET_TIMERSLACK`).
pub fn tight_timer_slack() {
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Environment variable that keeps the loop at normal priority.
pub const NO_RT_ENV: &str = "L4SLAB_EMU_NO_RT";
/// `SCHED_FIFO` priority of the forwarding thread (low: above every normal task,
/// below the kernel's own real-time threads).
pub const RT_PRIORITY: i32 = 10;

/// Put this thread in `SCHED_FIFO` at [`RT_PRIORITY`] (sched(7)), unless
/// `L4SLAB_EMU_NO_RT` is set. On a shared host a normal-priority loop waits behind
/// other runnable tasks for whole scheduler slices (ms), which is the departure error
/// the protocol reports; a real-time thread is woken at once. It sleeps between
/// deadlines, and the kernel's real-time throttling (`sched_rt_runtime_us`, 95 % by
/// default) bounds what it can take. Returns whether it is real-time.
pub fn try_realtime() -> bool {
    if std::env::var_os(NO_RT_ENV).is_some() {
        return false;
    }
    let p = libc::sched_param { sched_priority: RT_PRIORITY };
    // SAFETY: sched_setscheduler on this thread (pid 0) with a valid param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Back to `SCHED_OTHER` (after the loop: writing outputs and cleanup need no priority).
pub fn normal_priority() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
}

/// CPU time (user + system) this process used so far, ns (`getrusage(RUSAGE_SELF)`).
pub fn cpu_ns() -> u64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The set of descriptors the loop waits on.
pub struct Waiter {
    fds: Vec<libc::pollfd>,
    /// The longest return from a `ppoll` timeout after the time it was asked to wake (ns).
    pub wake_late_max: u64,
}

impl Waiter {
    pub fn new(fds: &[RawFd]) -> Self {
        Waiter {
            fds: fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect(),
            wake_late_max: 0,
        }
    }

    /// Wait until a descriptor is readable or `deadline` (monotonic ns) less the spin
    /// margin has passed (`None`: at most `max_wait_ns`), then spin to the deadline
    /// unless a descriptor became readable. Returns the ns spent blocked in the kernel.
    pub fn wait(&mut self, deadline: Option<u64>, max_wait_ns: u64) -> u64 {
        let now = now_ns();
        let target = deadline.unwrap_or(now + max_wait_ns).min(now + max_wait_ns);
        if target > now + SPIN_MARGIN_NS {
            let d = target - SPIN_MARGIN_NS - now;
            let ts = libc::timespec {
                tv_sec: (d / 1_000_000_000) as libc::time_t,
                tv_nsec: (d % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: pollfd array owned by self; null sigmask.
            let r =
                unsafe { libc::ppoll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
            let slept = now_ns() - now;
            if r != 0 {
                return slept; // readable (or EINTR: the caller checks its flags)
            }
            self.wake_late_max = self.wake_late_max.max(slept.saturating_sub(d));
        }
        // Spin the last stretch, still noticing arrivals.
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let mut polls = 0u32;
        while now_ns() < target {
            polls += 1;
            if polls.is_multiple_of(16) {
                // SAFETY: as above, zero timeout.
                let r = unsafe {
                    libc::ppoll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, &zero, std::ptr::null())
                };
                if r != 0 {
                    break;
                }
            }
            std::hint::spin_loop();
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_a_deadline_lands_close_to_it() {
        tight_timer_slack();
        let mut w = Waiter::new(&[]);
        let mut late = [0u64; 21];
        for l in late.iter_mut() {
            let d = now_ns() + 500_000;
            w.wait(Some(d), 1_000_000_000);
            *l = now_ns().saturating_sub(d);
            assert!(now_ns() >= d, "never early");
        }
        late.sort_unstable();
        // The median, not the worst: on a shared host (load 10 on 2 cores) a
        // normal-priority test thread is preempted for whole scheduler slices (> 5 ms
        // seen); the point is "typically not milliseconds". The worst only guards a hang.
        assert!(late[10] < 1_000_000, "median lateness {} ns", late[10]);
        assert!(late[20] < 200_000_000, "worst lateness {} ns", late[20]);
    }
}
