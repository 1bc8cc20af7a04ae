//! Clocks and absolute-deadline sleeping (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`).
//!
//! Times are `i64` nanoseconds. Nothing here allocates; every function is a system call or a
//! vDSO read, safe to use on the real-time thread.

/// One second in nanoseconds.
pub const NS_PER_S: i64 = 1_000_000_000;

#[allow(clippy::unnecessary_cast)] // time_t / c_long are i64 on 64-bit Linux only
fn read(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i64 * NS_PER_S + ts.tv_nsec as i64
}

/// `CLOCK_MONOTONIC` now (ns since an arbitrary epoch). The time base of all deadlines.
pub fn monotonic_ns() -> i64 {
    read(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` now (ns since the Unix epoch): the ROS system time used for message stamps
/// in `realtime` mode.
pub fn realtime_ns() -> i64 {
    read(libc::CLOCK_REALTIME)
}

/// Sleeps until the absolute `CLOCK_MONOTONIC` time `deadline_ns`; returns at once if it has
/// passed. Interrupted sleeps (signals) are resumed, so the function never returns early.
pub fn sleep_until_ns(deadline_ns: i64) {
    let ts = libc::timespec { tv_sec: (deadline_ns / NS_PER_S) as libc::time_t, tv_nsec: (deadline_ns % NS_PER_S) as libc::c_long };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with TIMER_ABSTIME.
        let r = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if r != libc::EINTR {
            return;
        }
    }
}

/// What the kernel has counted for the calling thread since it started: its CPU time and the
/// events that stall it. The difference of two readings tells where a slow stretch of wall time
/// went: into our own work (CPU time grew by about as much as the wall clock), into waiting while
/// runnable (involuntary context switches: another task, an interrupt thread or, on a virtual
/// machine, the hypervisor ran instead; under `SCHED_DEADLINE` also the throttling of a thread
/// that overran its runtime budget), or into page faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// CPU time of the thread (ns, `CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_ns: i64,
    /// Involuntary context switches (`ru_nivcsw` of `getrusage(RUSAGE_THREAD)`).
    pub involuntary_switches: i64,
    /// Minor plus major page faults (`ru_minflt + ru_majflt`).
    pub page_faults: i64,
}

impl ThreadUsage {
    /// The calling thread's counters now (two system calls, no allocation).
    pub fn now() -> ThreadUsage {
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD is supported on Linux ≥ 2.6.26.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        let (switches, faults) = if ok { (ru.ru_nivcsw as i64, (ru.ru_minflt + ru.ru_majflt) as i64) } else { (0, 0) };
        ThreadUsage { cpu_ns: read(libc::CLOCK_THREAD_CPUTIME_ID), involuntary_switches: switches, page_faults: faults }
    }

    /// What happened between `earlier` and `self` (component-wise difference).
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            cpu_ns: self.cpu_ns - earlier.cpu_ns,
            involuntary_switches: self.involuntary_switches - earlier.involuntary_switches,
            page_faults: self.page_faults - earlier.page_faults,
        }
    }
}

/// Seconds (f64) to nanoseconds, saturating; negative and NaN values give 0.
pub fn secs_to_ns(s: f64) -> i64 {
    if s.is_nan() || s <= 0.0 {
        0
    } else if s >= (i64::MAX / NS_PER_S) as f64 {
        i64::MAX
    } else {
        (s * NS_PER_S as f64).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burning CPU shows as CPU time of about the wall time; sleeping adds wall time but no CPU
    /// time. (Bounds are loose: this machine may be loaded; the point is which counter moves.)
    #[test]
    fn thread_usage_tells_work_from_waiting() {
        let u0 = ThreadUsage::now();
        let t0 = monotonic_ns();
        let mut x = 0u64;
        while monotonic_ns() - t0 < 20_000_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let busy = ThreadUsage::now().since(&u0);
        assert!(busy.cpu_ns > 2_000_000 && busy.cpu_ns <= 21_000_000, "20 ms of spinning used {} ns of CPU", busy.cpu_ns);
        let u1 = ThreadUsage::now();
        sleep_until_ns(monotonic_ns() + 20_000_000);
        let idle = ThreadUsage::now().since(&u1);
        assert!(idle.cpu_ns < 2_000_000, "20 ms of sleep used {} ns of CPU", idle.cpu_ns);
        assert!(idle.involuntary_switches >= 0 && idle.page_faults >= 0);
    }

    #[test]
    fn sleep_until_waits_for_the_deadline_and_not_much_longer() {
        let t0 = monotonic_ns();
        sleep_until_ns(t0 + 2_000_000);
        let t1 = monotonic_ns();
        assert!(t1 - t0 >= 2_000_000, "woke {} ns early", 2_000_000 - (t1 - t0));
        // a deadline in the past returns at once
        let t2 = monotonic_ns();
        sleep_until_ns(t2 - 1_000_000);
        assert!(monotonic_ns() - t2 < 1_000_000_000);
    }

    #[test]
    fn secs_to_ns_saturates() {
        assert_eq!(secs_to_ns(0.001), 1_000_000);
        assert_eq!(secs_to_ns(-1.0), 0);
        assert_eq!(secs_to_ns(f64::NAN), 0);
        assert_eq!(secs_to_ns(f64::INFINITY), i64::MAX);
    }
}
