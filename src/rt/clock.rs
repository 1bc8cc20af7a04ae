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
