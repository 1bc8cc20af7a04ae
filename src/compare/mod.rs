//! Sim-to-real comparison of two bags ([`compare`]): time alignment, per-joint and per-wrench
//! metrics, contact events; a terminal table ([`format_table`]), JSON (the [`CompareReport`]
//! serializes) and an HTML page with plots ([`report::write_html`]).
//!
//! **Time bases.** Each bag's series are timed by the header stamps (the log time when a stamp
//! is zero). With [`TimeBase::Absolute`] both bags keep their times (a replayed bag lives in its
//! hardware bag's time base); with [`TimeBase::Relative`] each starts at its first joint state;
//! [`TimeBase::Auto`] takes absolute times when the two time ranges overlap by at least half of
//! the shorter one, else relative.
//!
//! **Alignment.** Both bags' joint velocities (positions when no joint moves) are resampled on a
//! common grid (the finer of the two median joint-state periods), centred, and cross-correlated
//! over lags up to
//! [`CompareOptions::max_lag_s`]: at each lag the Pearson correlation over the overlap with all
//! joints together (`Σ cov / √(Σ var_sim Σ var_hw)`, each joint centred on the overlap, so
//! joints weigh by how much they move); the peak, refined by a parabola through its
//! neighbours, is the offset: `hw(t + offset_s) ≈ sim(t)` (positive: the hardware bag is late).
//!
//! **Metrics** are taken at the grid times of the simulated bag within the overlap, the hardware
//! signal linearly interpolated at `t + offset_s`; errors are `sim − hw`.

pub mod report;
pub mod series;

pub use series::{joint_series, msg_time_ns, odometry_series, to_s, wrench_series, JointSeries, Series};

use crate::bag::msgs::MsgType;
use crate::bag::reader::{normalize_topic, Bag};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the two bags' clocks relate before the cross-correlation (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeBase {
    /// Absolute if the time ranges overlap, else relative.
    Auto,
    /// Keep the recorded times.
    Absolute,
    /// Each bag starts at 0 at its first joint state.
    Relative,
}

/// Settings of [`compare`].
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The JointState topic compared (`/joint_states`).
    pub joint_states_topic: String,
    /// Largest time offset searched (s).
    pub max_lag_s: f64,
    /// How the clocks relate.
    pub time_base: TimeBase,
    /// A contact wrench topic is "in contact" when its force exceeds this (N).
    pub contact_threshold_n: f64,
    /// Hardware joint name → simulation joint name.
    pub joint_map: BTreeMap<String, String>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { joint_states_topic: "/joint_states".into(), max_lag_s: 1.0, time_base: TimeBase::Auto, contact_threshold_n: 1.0, joint_map: BTreeMap::new() }
    }
}

/// Error statistics of one signal (`sim − hw`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Metric {
    /// Root mean square error (signal units).
    pub rmse: f64,
    /// Largest absolute error.
    pub max_abs: f64,
    /// Mean error (bias).
    pub mean: f64,
    /// Pearson correlation of the two signals; `None` when one of them is constant.
    pub correlation: Option<f64>,
    /// Samples compared.
    pub samples: usize,
}

/// Per-joint metrics: position (rad or m), velocity (rad/s or m/s), effort (N·m or N).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JointMetrics {
    /// Joint name (simulation name).
    pub name: String,
    /// Position errors.
    pub position: Option<Metric>,
    /// Velocity errors.
    pub velocity: Option<Metric>,
    /// Effort errors.
    pub effort: Option<Metric>,
}

/// Per-WrenchStamped-topic metrics (in the topic's frame).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WrenchMetrics {
    /// Topic.
    pub topic: String,
    /// Samples compared.
    pub samples: usize,
    /// RMS of the force error norm (N).
    pub force_rmse_n: f64,
    /// Largest force error norm (N).
    pub force_max_n: f64,
    /// Mean force error, `[x y z]` (N).
    pub force_bias_n: [f64; 3],
    /// RMS of the torque error norm (N·m).
    pub torque_rmse_nm: f64,
    /// Mean torque error, `[x y z]` (N·m).
    pub torque_bias_nm: [f64; 3],
}

/// Contact onsets and losses on a contact wrench topic, in simulation time (s).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContactEvents {
    /// Topic.
    pub topic: String,
    /// Force threshold (N).
    pub threshold_n: f64,
    /// Onsets in the simulated bag.
    pub sim_onsets_s: Vec<f64>,
    /// Onsets in the hardware bag (aligned).
    pub hw_onsets_s: Vec<f64>,
    /// Losses in the simulated bag.
    pub sim_losses_s: Vec<f64>,
    /// Losses in the hardware bag (aligned).
    pub hw_losses_s: Vec<f64>,
    /// For each simulated onset, nearest hardware onset minus it (s).
    pub onset_errors_s: Vec<f64>,
    /// For each simulated loss, nearest hardware loss minus it (s).
    pub loss_errors_s: Vec<f64>,
}

/// How the time bases were aligned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alignment {
    /// `hw(t + offset_s) ≈ sim(t)` (s).
    pub offset_s: f64,
    /// `absolute` or `relative`.
    pub time_base: String,
    /// What was cross-correlated (`velocity`, `position`, or `none`).
    pub signal: String,
    /// Normalized cross-correlation at the peak, all joints together (1 = identical shapes).
    pub peak_correlation: f64,
    /// Grid step (s).
    pub grid_dt_s: f64,
    /// Overlap of the aligned bags (s).
    pub overlap_s: f64,
}

/// The comparison result (serializes to the JSON output).
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    /// The simulated bag.
    pub sim_bag: String,
    /// The hardware (reference) bag.
    pub hw_bag: String,
    /// Time alignment.
    pub alignment: Alignment,
    /// Joints present in both bags.
    pub joints: Vec<JointMetrics>,
    /// WrenchStamped topics present in both bags.
    pub wrenches: Vec<WrenchMetrics>,
    /// Contact events on `contact_wrenches/<link>` topics present in both bags.
    pub contact_events: Vec<ContactEvents>,
    /// Joints only in one of the bags.
    pub unmatched_joints: Vec<String>,
    /// Problems met (from reading the bags too).
    pub warnings: Vec<String>,
}

/// Time series for the plots of [`report::write_html`] (simulation time, s).
#[derive(Clone, Debug, Default)]
pub struct PlotData {
    /// Grid times (s, simulation time base, from the simulated bag's start).
    pub t: Vec<f64>,
    /// Per joint: name, then `[sim, hw]` position, velocity, effort on the grid (NaN = none).
    pub joints: Vec<(String, [[Vec<f64>; 2]; 3])>,
    /// Per wrench topic: force norm `[sim, hw]` (N).
    pub wrenches: Vec<(String, [Vec<f64>; 2])>,
}

fn median_dt(stamps: &[i64]) -> f64 {
    let mut d: Vec<i64> = stamps.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0).collect();
    if d.is_empty() {
        return 1e-3;
    }
    d.sort_unstable();
    d[d.len() / 2] as f64 * 1e-9
}

fn metric(a: &[f64], b: &[f64]) -> Option<Metric> {
    let pairs: Vec<(f64, f64)> = a.iter().zip(b).filter(|(x, y)| x.is_finite() && y.is_finite()).map(|(&x, &y)| (x, y)).collect();
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    let (mut se, mut mx, mut me) = (0.0, 0.0f64, 0.0);
    for &(x, y) in &pairs {
        let e = x - y;
        se += e * e;
        mx = mx.max(e.abs());
        me += e;
    }
    let ma = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let mb = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for &(x, y) in &pairs {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    let tiny = 1e-18 * n;
    let correlation = (saa > tiny && sbb > tiny).then(|| (sab / (saa * sbb).sqrt()).clamp(-1.0, 1.0));
    Some(Metric { rmse: (se / n).sqrt(), max_abs: mx, mean: me / n, correlation, samples: pairs.len() })
}

/// Zero-mean copy and variance (NaN stays NaN); `None` when (nearly) constant.
fn centered(x: &[f64]) -> Option<(Vec<f64>, f64)> {
    let v: Vec<f64> = x.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 3 {
        return None;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
    if var < 1e-14 {
        return None;
    }
    Some((x.iter().map(|x| x - m).collect(), var))
}

/// Compares a simulated bag with a hardware (reference) bag. See the module docs.
pub fn compare(sim: &Bag, hw: &Bag, opts: &CompareOptions) -> (CompareReport, PlotData) {
    let mut warnings: Vec<String> = sim.warnings.iter().chain(&hw.warnings).cloned().collect();
    let ident = |n: &str| n.to_string();
    let hw_map = |n: &str| opts.joint_map.get(n).cloned().unwrap_or_else(|| n.to_string());
    let sj = joint_series(sim, &opts.joint_states_topic, &ident, &mut warnings);
    let hj = joint_series(hw, &opts.joint_states_topic, &hw_map, &mut warnings);
    let empty_alignment = Alignment { offset_s: 0.0, time_base: "none".into(), signal: "none".into(), peak_correlation: 0.0, grid_dt_s: 0.0, overlap_s: 0.0 };
    let mut report = CompareReport {
        sim_bag: sim.path.display().to_string(),
        hw_bag: hw.path.display().to_string(),
        alignment: empty_alignment,
        joints: vec![],
        wrenches: vec![],
        contact_events: vec![],
        unmatched_joints: vec![],
        warnings: vec![],
    };
    let (Some(mut sj), Some(mut hj)) = (sj, hj) else {
        report.warnings = warnings;
        return (report, PlotData::default());
    };

    let axis = time_axis(&mut sj, &mut hj, opts.time_base);
    let matched = match_joints(&sj, &hj, &mut report);
    let (signal, best) = estimate_offset(&sj, &hj, &matched, &axis, opts.max_lag_s);
    if signal == "none" {
        warnings.push("no joint moves in both bags: time offset not estimated (0)".into());
    }
    let offset = (best.0 as f64 + best.1) * axis.dt;

    let mut plot = PlotData { t: axis.grid.clone(), ..Default::default() };
    joint_metrics(&sj, &hj, &matched, &axis.grid, offset, &mut report, &mut plot);
    let h_end = to_s(axis.h1 as f64, axis.h_origin) - offset;
    let h_start = to_s(axis.h0 as f64, axis.h_origin) - offset;
    let overlap_s = (axis.sim_end.min(h_end) - 0.0f64.max(h_start)).max(0.0);
    report.alignment = Alignment { offset_s: offset, time_base: if axis.absolute { "absolute" } else { "relative" }.into(), signal: signal.into(), peak_correlation: best.2, grid_dt_s: axis.dt, overlap_s };

    let inputs = WrenchInputs { sim, hw, axis: &axis, offset_s: offset, contact_threshold_n: opts.contact_threshold_n };
    compare_wrenches(&inputs, &mut report, &mut plot, &mut warnings);
    report.warnings = warnings;
    (report, plot)
}


/// Time bases and the common grid of a comparison (see the module docs).
struct TimeAxis {
    /// Absolute times kept (else each bag starts at 0).
    absolute: bool,
    /// First joint-state stamp of the hardware bag (ns).
    h0: i64,
    /// Last joint-state stamp of the hardware bag (ns).
    h1: i64,
    /// Origin subtracted from the simulated bag's times (ns).
    s_origin: i64,
    /// Origin subtracted from the hardware bag's times (ns).
    h_origin: i64,
    /// Grid step (s).
    dt: f64,
    /// Last simulated joint state (s, simulation time base).
    sim_end: f64,
    /// Number of grid points.
    n: usize,
    /// Grid times (s, simulation time base).
    grid: Vec<f64>,
}

/// Chooses the time bases, converts both bags' joint series to seconds from their origins and
/// lays the grid (step: the finer median joint-state period, s).
fn time_axis(sj: &mut JointSeries, hj: &mut JointSeries, time_base: TimeBase) -> TimeAxis {
    let (s0, s1) = (sj.stamps_ns[0], *sj.stamps_ns.last().unwrap());
    let (h0, h1) = (hj.stamps_ns[0], *hj.stamps_ns.last().unwrap());
    let overlap = (s1.min(h1) - s0.max(h0)) as f64;
    let shorter = ((s1 - s0).min(h1 - h0)).max(1) as f64;
    let absolute = match time_base {
        TimeBase::Absolute => true,
        TimeBase::Relative => false,
        TimeBase::Auto => overlap >= 0.5 * shorter,
    };
    // origins (ns): simulated times become `(t - s_origin)`, hardware `(t - h_origin)`
    let (s_origin, h_origin) = if absolute { (s0, s0) } else { (s0, h0) };
    for s in sj.series.iter_mut().flatten() {
        s.t.iter_mut().for_each(|t| *t = to_s(*t, s_origin));
    }
    for s in hj.series.iter_mut().flatten() {
        s.t.iter_mut().for_each(|t| *t = to_s(*t, h_origin));
    }
    let dt = median_dt(&sj.stamps_ns).min(median_dt(&hj.stamps_ns)).max(1e-6);
    let sim_end = to_s(s1 as f64, s_origin);
    let n = ((sim_end / dt).floor() as usize + 1).min(10_000_000);
    let grid: Vec<f64> = (0..n).map(|i| i as f64 * dt).collect();
    TimeAxis { absolute, h0, h1, s_origin, h_origin, dt, sim_end, n, grid }
}

/// Pairs the joints present in both bags as (simulated index, hardware index); lists the others
/// in the report's unmatched joints.
fn match_joints(sj: &JointSeries, hj: &JointSeries, report: &mut CompareReport) -> Vec<(usize, usize)> {
    let mut matched: Vec<(usize, usize)> = vec![];
    for (i, name) in sj.names.iter().enumerate() {
        match hj.names.iter().position(|h| h == name) {
            Some(k) => matched.push((i, k)),
            None => report.unmatched_joints.push(format!("{name} (only in {})", report.sim_bag)),
        }
    }
    for name in &hj.names {
        if !sj.names.contains(name) {
            report.unmatched_joints.push(format!("{name} (only in {})", report.hw_bag));
        }
    }
    matched
}

/// Cross-correlates the matched joints' velocities (else positions) over lags up to
/// `max_lag_s` (s): the signal used (`none` if no joint moves in both bags) and the best lag
/// (grid steps), its parabolic refinement (fraction of a step) and the peak correlation.
fn estimate_offset(sj: &JointSeries, hj: &JointSeries, matched: &[(usize, usize)], axis: &TimeAxis, max_lag_s: f64) -> (&'static str, (isize, f64, f64)) {
    let (n, dt) = (axis.n, axis.dt);
    let lag_max = ((max_lag_s / dt).round() as isize).clamp(0, n as isize);
    let mut signal = "none";
    let mut best = (0isize, 0.0f64, 0.0f64); // lag, refined fraction, peak
    for (a, label) in [(1usize, "velocity"), (0usize, "position")] {
        // normalized cross-correlation over all joints together: Σ cov / √(Σ var_x Σ var_y) over
        // the overlapping samples, each joint centred on the overlap. Joints weigh by how much they move (a joint that
        // barely moves, mostly noise, counts little); by Cauchy–Schwarz a shifted copy peaks at
        // exactly 1 at its shift.
        let mut pairs: Vec<(Vec<f64>, Vec<f64>)> = vec![];
        for &(i, k) in matched {
            let s: Vec<f64> = axis.grid.iter().map(|&t| sj.series[i][a].at(t)).collect();
            let h: Vec<f64> = (-lag_max..n as isize + lag_max).map(|j| hj.series[k][a].at(j as f64 * dt)).collect();
            if let (Some((cs, _)), Some((ch, _))) = (centered(&s), centered(&h)) {
                pairs.push((cs, ch));
            }
        }
        if pairs.is_empty() {
            continue;
        }
        signal = label;
        if let Some(peak) = (LagSearch { pairs: &pairs, lag_max, n }).peak() {
            best = peak;
        }
        break;
    }
    (signal, best)
}

/// The lag search of [`estimate_offset`] over centred signal pairs.
struct LagSearch<'a> {
    /// Per joint: the centred simulated signal on the grid, and the centred hardware signal on
    /// the grid extended by `lag_max` steps on both sides.
    pairs: &'a [(Vec<f64>, Vec<f64>)],
    /// Largest lag searched (grid steps).
    lag_max: isize,
    /// Number of grid points.
    n: usize,
}

impl LagSearch<'_> {
    /// Correlation of all joints together at `lag` (grid steps), every `stride`-th sample;
    /// `None` when the overlap is short.
    fn corr(&self, lag: isize, stride: usize) -> Option<f64> {
        let (pairs, lag_max, n) = (self.pairs, self.lag_max, self.n);
        // per joint, centred on the overlap's means (a bag cut short has other means)
        let (mut cov, mut vx, mut vy, mut total) = (0.0, 0.0, 0.0, 0usize);
        for (zs, zh) in pairs {
            let (mut sxy, mut sxx, mut syy, mut sx, mut sy, mut cnt) = (0.0, 0.0, 0.0, 0.0, 0.0, 0usize);
            for i in (0..zs.len()).step_by(stride) {
                let (x, y) = (zs[i], zh[(i as isize + lag + lag_max) as usize]);
                if x.is_finite() && y.is_finite() {
                    sxy += x * y;
                    sxx += x * x;
                    syy += y * y;
                    sx += x;
                    sy += y;
                    cnt += 1;
                }
            }
            if cnt == 0 {
                continue;
            }
            let c = cnt as f64;
            cov += sxy - sx * sy / c;
            vx += sxx - sx * sx / c;
            vy += syy - sy * sy / c;
            total += cnt;
        }
        if total * stride * 4 < n.max(4) * pairs.len() || vx <= 0.0 || vy <= 0.0 {
            return None;
        }
        Some(cov / (vx * vy).sqrt())
    }

    /// The first lag (grid steps) of `lags` with the highest correlation, and that correlation.
    fn argmax(&self, lags: &mut dyn Iterator<Item = isize>, stride: usize) -> Option<(isize, f64)> {
        let mut best: Option<(isize, f64)> = None;
        for lag in lags {
            if let Some(v) = self.corr(lag, stride) {
                if best.is_none_or(|(_, b)| v > b) {
                    best = Some((lag, v));
                }
            }
        }
        best
    }

    /// The peak: lag (grid steps), parabolic refinement (fraction of a step in [-0.5, 0.5]) and
    /// correlation; searched coarse to fine.
    fn peak(&self) -> Option<(isize, f64, f64)> {
        let lag_max = self.lag_max;
        // coarse to fine: long searches first on a decimated grid (about 200 lags), then every
        // lag within two coarse steps of the coarse peak
        let d = ((lag_max as usize).div_ceil(100)).max(1) as isize;
        let coarse = if d > 1 { self.argmax(&mut (-lag_max / d..=lag_max / d).map(|k| k * d), d as usize) } else { None };
        let (lo, hi) = match coarse {
            Some((k, _)) => ((k - 2 * d).max(-lag_max), (k + 2 * d).min(lag_max)),
            None => (-lag_max, lag_max),
        };
        let (k, peak) = self.argmax(&mut (lo..=hi), 1)?;
        let mut frac = 0.0;
        if k > -lag_max && k < lag_max {
            if let (Some(cm), Some(cp)) = (self.corr(k - 1, 1), self.corr(k + 1, 1)) {
                let den = cm - 2.0 * peak + cp;
                if den < 0.0 {
                    frac = (0.5 * (cm - cp) / den).clamp(-0.5, 0.5);
                }
            }
        }
        Some((k, frac, peak))
    }
}

/// Per matched joint: position, velocity and effort metrics on the grid (the hardware signal at
/// `t + offset` s) into the report, and the compared series into the plot data.
fn joint_metrics(sj: &JointSeries, hj: &JointSeries, matched: &[(usize, usize)], grid: &[f64], offset: f64, report: &mut CompareReport, plot: &mut PlotData) {
    for &(i, k) in matched {
        let mut jm = JointMetrics { name: sj.names[i].clone(), position: None, velocity: None, effort: None };
        let mut pd: [[Vec<f64>; 2]; 3] = Default::default();
        for (a, out) in pd.iter_mut().enumerate() {
            let s: Vec<f64> = grid.iter().map(|&t| sj.series[i][a].at(t)).collect();
            let h: Vec<f64> = grid.iter().map(|&t| hj.series[k][a].at(t + offset)).collect();
            let m = metric(&s, &h);
            match a {
                0 => jm.position = m,
                1 => jm.velocity = m,
                _ => jm.effort = m,
            }
            *out = [s, h];
        }
        plot.joints.push((jm.name.clone(), pd));
        report.joints.push(jm);
    }
}

/// The two bags and their alignment, as [`compare_wrenches`] reads them.
struct WrenchInputs<'a> {
    /// The simulated bag.
    sim: &'a Bag,
    /// The hardware bag.
    hw: &'a Bag,
    /// Time bases and grid.
    axis: &'a TimeAxis,
    /// `hw(t + offset_s) ≈ sim(t)` (s).
    offset_s: f64,
    /// A contact wrench topic is "in contact" above this force (N).
    contact_threshold_n: f64,
}

/// For each WrenchStamped topic in both bags: error metrics, contact events (contact wrench
/// topics) and the force norms (N) for the plots.
fn compare_wrenches(inputs: &WrenchInputs, report: &mut CompareReport, plot: &mut PlotData, warnings: &mut Vec<String>) {
    let WrenchInputs { sim, hw, axis, offset_s: offset, contact_threshold_n } = *inputs;
    for (si, st) in sim.topics.iter().enumerate() {
        if st.msg_type != Some(MsgType::WrenchStamped) {
            continue;
        }
        let hi = match hw.expect_topic(&st.name, MsgType::WrenchStamped) {
            Ok(Some(h)) => h,
            Ok(None) => continue,
            Err(e) => {
                warnings.push(e);
                continue;
            }
        };
        let ss = wrench_series(sim, si, axis.s_origin);
        let hs = wrench_series(hw, hi, axis.h_origin);
        let (Some(_), Some(_)) = (ss[0].range(), hs[0].range()) else { continue };
        let Some((metrics, norms)) = wrench_metrics(&st.name, &ss, &hs, &axis.grid, offset) else { continue };
        report.wrenches.push(metrics);
        let name = normalize_topic(&st.name);
        if name.contains("/contact_wrenches/") && !name.ends_with("/local") {
            report.contact_events.push(contact_events(&st.name, &ss, &hs, offset, contact_threshold_n));
        }
        plot.wrenches.push((st.name.clone(), norms));
    }
}

/// Euclidean norm of the first three components.
fn norm3(v: &[f64]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Wrench error metrics of one topic on the grid (hardware at `t + offset` s) and the `[sim, hw]`
/// force norms (N) at every grid time; `None` when no grid time has both wrenches.
fn wrench_metrics(topic: &str, ss: &[Series; 6], hs: &[Series; 6], grid: &[f64], offset: f64) -> Option<(WrenchMetrics, [Vec<f64>; 2])> {
    let n = grid.len();
    let (mut fse, mut fmax, mut tse, mut cnt) = (0.0, 0.0f64, 0.0, 0usize);
    let (mut fb, mut tb) = ([0.0; 3], [0.0; 3]);
    let mut norms = [Vec::with_capacity(n), Vec::with_capacity(n)];
    for &t in grid {
        let sv: Vec<f64> = ss.iter().map(|s| s.at(t)).collect();
        let hv: Vec<f64> = hs.iter().map(|s| s.at(t + offset)).collect();
        norms[0].push(norm3(&sv));
        norms[1].push(norm3(&hv));
        if sv.iter().chain(&hv).any(|x| !x.is_finite()) {
            continue;
        }
        let e: Vec<f64> = sv.iter().zip(&hv).map(|(a, b)| a - b).collect();
        let fe = norm3(&e[..3]);
        let te = norm3(&e[3..]);
        fse += fe * fe;
        tse += te * te;
        fmax = fmax.max(fe);
        for a in 0..3 {
            fb[a] += e[a];
            tb[a] += e[3 + a];
        }
        cnt += 1;
    }
    if cnt == 0 {
        return None;
    }
    let c = cnt as f64;
    let metrics = WrenchMetrics {
        topic: topic.to_string(),
        samples: cnt,
        force_rmse_n: (fse / c).sqrt(),
        force_max_n: fmax,
        force_bias_n: fb.map(|x| x / c),
        torque_rmse_nm: (tse / c).sqrt(),
        torque_bias_nm: tb.map(|x| x / c),
    };
    Some((metrics, norms))
}

/// Contact onsets and losses of one contact wrench topic in both bags (s, simulation time),
/// and the nearest-event errors.
fn contact_events(topic: &str, ss: &[Series; 6], hs: &[Series; 6], offset: f64, threshold_n: f64) -> ContactEvents {
    let (so, sl) = contact_edges(ss, 0.0, threshold_n);
    let (ho, hl) = contact_edges(hs, offset, threshold_n);
    ContactEvents {
        topic: topic.to_string(),
        threshold_n,
        onset_errors_s: nearest_errors(&so, &ho),
        loss_errors_s: nearest_errors(&sl, &hl),
        sim_onsets_s: so,
        hw_onsets_s: ho,
        sim_losses_s: sl,
        hw_losses_s: hl,
    }
}

/// Times (s, minus `shift`) where the force norm crosses `threshold_n` (N) upwards (onsets)
/// and downwards (losses).
fn contact_edges(s: &[Series; 6], shift: f64, threshold_n: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut on, mut off) = (vec![], vec![]);
    let mut prev = false;
    for i in 0..s[0].t.len() {
        let f = (s[0].v[i].powi(2) + s[1].v[i].powi(2) + s[2].v[i].powi(2)).sqrt();
        let now = f > threshold_n;
        if i > 0 && now != prev {
            if now { on.push(s[0].t[i] - shift) } else { off.push(s[0].t[i] - shift) }
        }
        prev = now;
    }
    (on, off)
}

/// For each time of `a` (s), the nearest time of `b` minus it (s).
fn nearest_errors(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().filter_map(|&x| b.iter().map(|&y| y - x).min_by(|p, q| p.abs().total_cmp(&q.abs()))).collect()
}

fn fmt_opt(m: Option<&Metric>, f: impl Fn(&Metric) -> Option<f64>, prec: usize) -> String {
    match m.and_then(f) {
        Some(x) => format!("{x:.prec$}"),
        None => "-".into(),
    }
}

/// The compact terminal table.
pub fn format_table(r: &CompareReport) -> String {
    let mut s = String::new();
    let a = &r.alignment;
    s.push_str(&format!(
        "time offset {:+.1} ms (hw later than sim; {} time base, {} cross-correlation, peak {:.3}, grid {:.2} ms, overlap {:.2} s)\n",
        a.offset_s * 1e3,
        a.time_base,
        a.signal,
        a.peak_correlation,
        a.grid_dt_s * 1e3,
        a.overlap_s
    ));
    if !r.joints.is_empty() {
        let w = r.joints.iter().map(|j| j.name.len()).max().unwrap_or(5).max(5);
        s.push_str(&format!(
            "{:<w$} {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6}\n",
            "joint", "pos rmse", "pos max", "r", "vel rmse", "vel max", "r", "eff rmse", "eff max", "r"
        ));
        for j in &r.joints {
            let (p, v, e) = (j.position.as_ref(), j.velocity.as_ref(), j.effort.as_ref());
            s.push_str(&format!(
                "{:<w$} {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6}\n",
                j.name,
                fmt_opt(p, |m| Some(m.rmse), 5),
                fmt_opt(p, |m| Some(m.max_abs), 5),
                fmt_opt(p, |m| m.correlation, 3),
                fmt_opt(v, |m| Some(m.rmse), 4),
                fmt_opt(v, |m| Some(m.max_abs), 4),
                fmt_opt(v, |m| m.correlation, 3),
                fmt_opt(e, |m| Some(m.rmse), 3),
                fmt_opt(e, |m| Some(m.max_abs), 3),
                fmt_opt(e, |m| m.correlation, 3),
            ));
        }
        s.push_str("(position rad or m, velocity rad/s or m/s, effort N·m or N; r = correlation)\n");
    }
    if !r.wrenches.is_empty() {
        let w = r.wrenches.iter().map(|x| x.topic.len()).max().unwrap_or(5).max(5);
        s.push_str(&format!("{:<w$} {:>10} {:>10} {:>26} {:>11} {:>26}\n", "wrench topic", "F rmse N", "F max N", "F bias N", "T rmse N·m", "T bias N·m"));
        for x in &r.wrenches {
            let v3 = |v: [f64; 3]| format!("[{:.2} {:.2} {:.2}]", v[0], v[1], v[2]);
            s.push_str(&format!("{:<w$} {:>10.3} {:>10.3} {:>26} {:>11.4} {:>26}\n", x.topic, x.force_rmse_n, x.force_max_n, v3(x.force_bias_n), x.torque_rmse_nm, v3(x.torque_bias_nm)));
        }
    }
    for e in &r.contact_events {
        let mean = |v: &[f64]| if v.is_empty() { "-".to_string() } else { format!("{:.1} ms", 1e3 * v.iter().map(|x| x.abs()).sum::<f64>() / v.len() as f64) };
        s.push_str(&format!(
            "contacts {}: onsets sim {} hw {} (mean |Δt| {}), losses sim {} hw {} (mean |Δt| {})\n",
            e.topic,
            e.sim_onsets_s.len(),
            e.hw_onsets_s.len(),
            mean(&e.onset_errors_s),
            e.sim_losses_s.len(),
            e.hw_losses_s.len(),
            mean(&e.loss_errors_s)
        ));
    }
    for u in &r.unmatched_joints {
        s.push_str(&format!("unmatched joint: {u}\n"));
    }
    s
}
