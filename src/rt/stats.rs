//! Loop timing statistics without allocation: a fixed log-linear histogram of nanosecond
//! durations (1 µs bins up to 1 ms, 10 µs bins up to 10 ms, 100 µs bins up to 100 ms, one
//! overflow bin), plus exact count, sum, minimum and maximum.
//!
//! Percentiles are the upper edge of the bin holding the requested rank, so they are exact to
//! the bin width (1 µs below 1 ms) and never under-estimate.

const FINE_BINS: usize = 1000; // [0, 1 ms) by 1 µs
const MID_BINS: usize = 900; // [1 ms, 10 ms) by 10 µs
const COARSE_BINS: usize = 900; // [10 ms, 100 ms) by 100 µs
/// Number of bins, including the overflow bin (≥ 100 ms).
pub const BINS: usize = FINE_BINS + MID_BINS + COARSE_BINS + 1;

/// A histogram of durations (ns). Construct it before the loop starts; `record` and
/// `percentile_ns` never allocate.
#[derive(Clone)]
pub struct DurationHistogram {
    bins: Box<[u32; BINS]>,
    count: u64,
    sum_ns: i128,
    min_ns: i64,
    max_ns: i64,
}

impl Default for DurationHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for DurationHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurationHistogram").field("count", &self.count).field("max_ns", &self.max_ns).finish()
    }
}

fn bin_of(ns: i64) -> usize {
    let us = ns.max(0) / 1000;
    if us < 1000 {
        us as usize
    } else if us < 10_000 {
        FINE_BINS + ((us - 1000) / 10) as usize
    } else if us < 100_000 {
        FINE_BINS + MID_BINS + ((us - 10_000) / 100) as usize
    } else {
        BINS - 1
    }
}

/// Upper edge of bin `b` (ns); `i64::MAX` for the overflow bin.
fn upper_edge_ns(b: usize) -> i64 {
    let us = if b < FINE_BINS {
        b as i64 + 1
    } else if b < FINE_BINS + MID_BINS {
        1000 + 10 * (b - FINE_BINS) as i64 + 10
    } else if b < BINS - 1 {
        10_000 + 100 * (b - FINE_BINS - MID_BINS) as i64 + 100
    } else {
        return i64::MAX;
    };
    us * 1000
}

impl DurationHistogram {
    /// An empty histogram (allocates its bins once).
    pub fn new() -> Self {
        DurationHistogram { bins: Box::new([0; BINS]), count: 0, sum_ns: 0, min_ns: i64::MAX, max_ns: i64::MIN }
    }

    /// Adds one duration (ns); negative values count as 0 in the bins but enter min/mean as is.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        let b = bin_of(ns);
        self.bins[b] = self.bins[b].saturating_add(1);
        self.count += 1;
        self.sum_ns += ns as i128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean (ns); 0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// Largest value (ns); 0 when empty.
    pub fn max_ns(&self) -> i64 {
        if self.count == 0 {
            0
        } else {
            self.max_ns
        }
    }

    /// Smallest value (ns); 0 when empty.
    pub fn min_ns(&self) -> i64 {
        if self.count == 0 {
            0
        } else {
            self.min_ns
        }
    }

    /// The `p`-quantile (0 ≤ p ≤ 1) as the upper edge of its bin, capped at the maximum seen
    /// (ns); 0 when empty.
    pub fn percentile_ns(&self, p: f64) -> i64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (b, &n) in self.bins.iter().enumerate() {
            seen += n as u64;
            if seen >= rank {
                return upper_edge_ns(b).min(self.max_ns.max(0));
            }
        }
        self.max_ns
    }

    /// Forgets everything (keeps the allocation).
    pub fn clear(&mut self) {
        self.bins.fill(0);
        self.count = 0;
        self.sum_ns = 0;
        self.min_ns = i64::MAX;
        self.max_ns = i64::MIN;
    }
}

/// A summary of the loop timing, copied into every sample (plain data, no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoopStats {
    /// Cycles measured.
    pub cycles: u64,
    /// Mean wall-clock period between consecutive wake-ups (µs).
    pub period_mean_us: f64,
    /// Wake-up latency after the absolute deadline (the jitter), median (µs).
    pub jitter_p50_us: f64,
    /// Jitter, 99th percentile (µs).
    pub jitter_p99_us: f64,
    /// Jitter, maximum (µs).
    pub jitter_max_us: f64,
    /// Work per cycle (commands, step, sample), mean (µs).
    pub exec_mean_us: f64,
    /// Work per cycle, 99th percentile (µs).
    pub exec_p99_us: f64,
    /// Work per cycle, maximum (µs).
    pub exec_max_us: f64,
    /// Measured real-time factor over the last statistics window (sim s per wall s).
    pub real_time_factor: f64,
}

/// The loop's timing recorder: wake-up latency (jitter), period and execution time.
#[derive(Clone, Debug, Default)]
pub struct LoopTimer {
    /// Wake-up latency after each deadline (ns).
    pub jitter: DurationHistogram,
    /// Work per cycle (ns).
    pub exec: DurationHistogram,
    period_sum_ns: i128,
    period_count: u64,
    last_wake_ns: Option<i64>,
}

impl LoopTimer {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records a wake-up at `wake_ns` for the deadline `deadline_ns`.
    pub fn wake(&mut self, deadline_ns: i64, wake_ns: i64) {
        self.jitter.record(wake_ns - deadline_ns);
        if let Some(last) = self.last_wake_ns {
            self.period_sum_ns += (wake_ns - last) as i128;
            self.period_count += 1;
        }
        self.last_wake_ns = Some(wake_ns);
    }
    /// Records the work of one cycle (ns).
    pub fn work(&mut self, ns: i64) {
        self.exec.record(ns);
    }
    /// Forgets the previous wake-up (after a pause in deadline scheduling), so that the gap does
    /// not enter the period mean.
    pub fn restart_period(&mut self) {
        self.last_wake_ns = None;
    }
    /// The summary (scans the bins: a few microseconds; call it at the statistics rate).
    pub fn summary(&self, real_time_factor: f64) -> LoopStats {
        let us = |ns: i64| ns as f64 * 1e-3;
        LoopStats {
            cycles: self.jitter.count(),
            period_mean_us: if self.period_count > 0 { self.period_sum_ns as f64 / self.period_count as f64 * 1e-3 } else { 0.0 },
            jitter_p50_us: us(self.jitter.percentile_ns(0.5)),
            jitter_p99_us: us(self.jitter.percentile_ns(0.99)),
            jitter_max_us: us(self.jitter.max_ns()),
            exec_mean_us: self.exec.mean_ns() * 1e-3,
            exec_p99_us: us(self.exec.percentile_ns(0.99)),
            exec_max_us: us(self.exec.max_ns()),
            real_time_factor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_ramp() {
        let mut h = DurationHistogram::new();
        for us in 0..1000 {
            h.record(us * 1000 + 500); // 0.5 µs, 1.5 µs, ... 999.5 µs
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.percentile_ns(0.5), 500_000);
        assert_eq!(h.percentile_ns(0.99), 990_000);
        assert_eq!(h.percentile_ns(1.0), 999_500, "capped at the max");
        assert!((h.mean_ns() - 500_000.0).abs() < 1e-6);
        assert_eq!(h.max_ns(), 999_500);
        assert_eq!(h.min_ns(), 500);
    }

    #[test]
    fn p99_sees_a_one_percent_tail() {
        let mut h = DurationHistogram::new();
        for _ in 0..980 {
            h.record(10_000); // 10 µs
        }
        for _ in 0..20 {
            h.record(3_456_000); // 3.456 ms → 10 µs bin [3.45, 3.46) ms
        }
        assert_eq!(h.percentile_ns(0.5), 11_000);
        assert_eq!(h.percentile_ns(0.99), 3_456_000); // bin edge 3.46 ms capped at max 3.456 ms
        assert_eq!(h.max_ns(), 3_456_000);
    }

    #[test]
    fn bins_cover_every_range_monotonically() {
        let mut last = -1i64;
        for ns in [0, 999, 1000, 999_999, 1_000_000, 9_999_999, 10_000_000, 99_999_999, 100_000_000, i64::MAX] {
            let b = bin_of(ns);
            assert!(b < BINS);
            assert!(upper_edge_ns(b) > ns || b == BINS - 1, "{ns} in bin {b} with edge {}", upper_edge_ns(b));
            assert!(b as i64 >= last);
            last = b as i64;
        }
        assert_eq!(bin_of(-5), 0);
    }

    #[test]
    fn empty_and_clear() {
        let mut h = DurationHistogram::new();
        assert_eq!(h.percentile_ns(0.99), 0);
        assert_eq!(h.max_ns(), 0);
        h.record(5000);
        h.clear();
        assert_eq!(h.count(), 0);
        assert_eq!(h.percentile_ns(0.5), 0);
    }

    #[test]
    fn loop_timer_period_and_jitter() {
        let mut t = LoopTimer::new();
        for k in 0..100i64 {
            let deadline = k * 1_000_000;
            t.wake(deadline, deadline + 20_000 + (k % 2) * 10_000); // 20 or 30 µs late
            t.work(100_000);
        }
        let s = t.summary(1.0);
        assert_eq!(s.cycles, 100);
        assert!((s.period_mean_us - 1000.0).abs() < 0.2, "{}", s.period_mean_us);
        assert_eq!(s.jitter_p50_us, 21.0);
        assert_eq!(s.jitter_max_us, 30.0);
        assert_eq!(s.exec_max_us, 100.0);
    }
}
