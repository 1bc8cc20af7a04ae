//! The identification problem: the scene with its parameters, the hardware bags replayed into
//! it, the measured channels and their noise, and the residual vector of a parameter vector.
//!
//! **Rollouts.** A parameter vector is written into the scene file's YAML
//! ([`super::params::write`]), the scene is loaded from it as any scene is, and each bag's
//! commands are replayed into it with the bag's [`ReplayPlan`] (prepared once: replay's own
//! validation, alignment and initial state). The response goes into a [`MemorySink`] sized
//! before the first step, so a rollout allocates nothing per step.
//!
//! **Channels** are what `compare` compares, read with its series readers: per joint in both the
//! bag's `/joint_states` and the scene, position, velocity and effort; per F/T sensor of the
//! scene whose `<sensor>/wrench` topic the bag has, its six axes (the emulated reading, bias
//! included); per contact-wrench link whose `contact_wrenches/<link>` topic the bag has, the
//! world force and torque; per floating base whose odometry topic the bag has, its position
//! (world) and linear velocity (base frame). The simulated value at a measurement time is linear between the
//! replay's samples (both in the hardware bag's time base).
//!
//! A signal whose every sample has the same value is left out (and named in a warning): a
//! driver that publishes zeros for what it does not measure, a passive joint's effort.
//!
//! **Noise.** Each channel's measurement noise σ is estimated from the data: the robust spread
//! of its second differences, `σ = 1.4826 · median |x[i+1] − 2 x[i] + x[i−1]| / √6` (white noise
//! of σ gives second differences of variance 6σ²; the median ignores impacts and steps), with a
//! floor per kind of signal (a noise-free channel would otherwise weigh without limit). A
//! residual is `(simulated − measured) / σ`, so the cost `½ Σ r²` is the negative log-likelihood
//! of Gaussian noise up to a constant, and its minimum is about half the number of residuals
//! when the model fits.

use super::params::{self, Parameter};
use crate::bag::replay::{ReplayConfig, ReplayPlan, ReplaySink};
use crate::bag::reader::{normalize_topic, Bag};
use crate::bag::topics::{contact_wrench, odom_topic, sensor_wrench};
use crate::compare::{joint_series, odometry_series, wrench_series};
use crate::config::{LoadOptions, Scene};
use crate::rt::messages::Sample;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// Measurement samples kept per channel (evenly strided): bounds the Jacobian's size.
pub const MAX_SAMPLES_PER_CHANNEL: usize = 2500;

/// Where a channel's simulated value comes from in a replay's samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Source {
    /// A joint signal.
    Joint {
        /// Slot in the scene's joint layout.
        slot: usize,
        /// 0 position, 1 velocity, 2 effort.
        field: usize,
    },
    /// An F/T sensor's emulated reading.
    Sensor {
        /// Sensor (layout order).
        index: usize,
        /// fx fy fz tx ty tz.
        axis: usize,
    },
    /// A contact-wrench link's wrench, world axes.
    Wrench {
        /// Link (layout order).
        index: usize,
        /// fx fy fz tx ty tz.
        axis: usize,
    },
    /// A floating base's odometry.
    Base {
        /// Base (layout order).
        index: usize,
        /// x y z (m, world), vx vy vz (m/s, base frame).
        axis: usize,
    },
}

/// One measured signal of one bag.
#[derive(Clone, Debug)]
pub struct Channel {
    /// Index into the data set's bags.
    pub bag: usize,
    /// `arm_joint2 position`, `/wrist_ft/wrench fz`.
    pub label: String,
    /// Unit of the values.
    pub unit: &'static str,
    /// Where the simulated value comes from.
    pub source: Source,
    /// Measurement times (s from the hardware bag's start).
    pub t_s: Vec<f64>,
    /// Measured values.
    pub measured: Vec<f64>,
    /// Estimated measurement noise (standard deviation, the values' unit).
    pub sigma: f64,
}

/// A hardware bag prepared for replay.
pub struct BagRun {
    /// The bag's path, for reports.
    pub name: String,
    /// Its commands, validated and timed.
    pub plan: ReplayPlan,
}

/// Bags and their channels (the training set, or the held-out validation set).
#[derive(Default)]
pub struct DataSet {
    /// The bags.
    pub bags: Vec<BagRun>,
    /// Their channels, bag by bag.
    pub channels: Vec<Channel>,
    /// Signals left out because every sample has the same value (a driver that publishes zeros
    /// for what it does not measure, a passive joint's effort): `bag: channel`.
    pub constant: Vec<String>,
}

impl DataSet {
    /// Residuals in this set.
    pub fn residual_count(&self) -> usize {
        self.channels.iter().map(|c| c.t_s.len()).sum()
    }
}

/// The scene and its parameters.
pub struct Problem {
    /// The scene file.
    pub scene_path: PathBuf,
    /// The scene file as YAML (parameters are written into a copy of it).
    pub doc: Value,
    /// The scene as loaded.
    pub nominal: Scene,
    /// The fitted parameters.
    pub params: Vec<Parameter>,
    /// Lower and upper bound of each parameter.
    pub bounds: Vec<(f64, f64)>,
    /// Starting values.
    pub initial: Vec<f64>,
    /// Scene loading options (package paths, inertia policy).
    pub load: LoadOptions,
}

impl Problem {
    /// The scene document with the parameters set to `x`.
    pub fn document(&self, x: &[f64]) -> Result<Value, String> {
        let mut doc = self.doc.clone();
        for (p, &v) in self.params.iter().zip(x) {
            params::write(&mut doc, &p.target, v, &self.nominal.model).map_err(|e| format!("parameter '{}': {e}", p.name))?;
        }
        Ok(doc)
    }

    /// The scene with the parameters set to `x`, loaded as a scene file is.
    pub fn scene(&self, x: &[f64]) -> Result<Scene, String> {
        let doc = self.document(x)?;
        let text = serde_yaml::to_string(&doc).map_err(|e| e.to_string())?;
        crate::config::load_scene_str_with(&text, &self.scene_path, &self.load).map_err(|e| e.to_string())
    }

    /// Replays every bag of `data` into the scene with parameters `x`; the simulated value of
    /// every channel at its measurement times. `Err` when the scene does not load.
    pub fn predict(&self, x: &[f64], data: &DataSet) -> Result<Vec<Vec<f64>>, String> {
        let scene = self.scene(x)?;
        let mut out: Vec<Vec<f64>> = Vec::with_capacity(data.channels.len());
        for (b, run) in data.bags.iter().enumerate() {
            let mut sim = run.plan.simulation(&scene);
            let mut sink = MemorySink::new(&run.plan);
            run.plan.run(&mut sim, &mut sink);
            for c in data.channels.iter().filter(|c| c.bag == b) {
                out.push(c.t_s.iter().map(|&t| sink.at(c.source, t)).collect());
            }
        }
        Ok(out)
    }

    /// The weighted residuals `(simulated − measured) / σ` of `x` on `data`, channel after
    /// channel; a non-finite simulation gives non-finite residuals.
    pub fn residuals(&self, x: &[f64], data: &DataSet) -> Result<Vec<f64>, String> {
        let pred = self.predict(x, data)?;
        let mut r = Vec::with_capacity(data.residual_count());
        for (c, p) in data.channels.iter().zip(&pred) {
            r.extend(p.iter().zip(&c.measured).map(|(s, m)| (s - m) / c.sigma));
        }
        Ok(r)
    }
}

/// Reads `bags` for `scene`: each one's replay plan and the channels it measures. A bag that
/// names none of the scene's joints and has no wrench topic of it is refused naming what it has.
pub fn data_set(paths: &[PathBuf], scene: &Scene, replay: &ReplayConfig) -> Result<DataSet, String> {
    let mut set = DataSet::default();
    for (b, path) in paths.iter().enumerate() {
        let name = path.display().to_string();
        let bag = crate::bag::read_bag(path).map_err(|e| e.to_string())?;
        let plan = ReplayPlan::prepare(&bag, scene, replay).map_err(|e| e.to_string())?;
        let sink_bytes = MemorySink::bytes(&plan);
        if sink_bytes > MAX_ROLLOUT_BYTES {
            return Err(format!(
                "{name}: a rollout would hold {} samples of {} values ({:.3e} bytes), more than the limit of {MAX_ROLLOUT_BYTES} bytes per rollout: use a shorter bag, --duration in the replay config or a lower rate_hz",
                plan.sample_count(),
                sink_bytes / 8 / plan.sample_count().max(1) as u64,
                sink_bytes as f64
            ));
        }
        let before = set.channels.len();
        let mut constant = vec![];
        channels_of(&bag, b, &plan, replay, &mut set.channels, &mut constant)?;
        set.constant.extend(constant.into_iter().map(|c| format!("{name}: {c}")));
        if set.channels.len() == before {
            let layout = plan.layout();
            let scene_joints: Vec<&str> = layout.joints.iter().map(|j| j.name.as_str()).collect();
            let topics: Vec<&str> = bag.topics.iter().map(|t| t.name.as_str()).collect();
            return Err(format!(
                "{name}: nothing to fit: no joint of the scene ({}) in its '{}' and no wrench topic of the scene's sensors or contact links (the bag has topics: {}); map hardware joint names with --joint-map hw=sim",
                scene_joints.join(", "),
                replay.joint_states_topic,
                topics.join(", ")
            ));
        }
        set.bags.push(BagRun { name, plan });
    }
    Ok(set)
}

/// The channels of one bag (see the module docs).
fn channels_of(bag: &Bag, b: usize, plan: &ReplayPlan, replay: &ReplayConfig, out: &mut Vec<Channel>, constant: &mut Vec<String>) -> Result<(), String> {
    let mut push = |label: String, unit: &'static str, source: Source, t: &[f64], v: &[f64], end_s: f64| {
        if v.len() > 1 && v.iter().all(|x| x.to_bits() == v[0].to_bits()) {
            constant.push(label);
        } else {
            push_channel(out, b, label, unit, source, t, v, end_s);
        }
    };
    let layout = plan.layout();
    let t0 = plan.hw_start_ns() as f64;
    let end_s = (plan.sample_count().saturating_sub(1)) as f64 / plan.rate_hz();
    let map = |n: &str| replay.joint_map.get(n).cloned().unwrap_or_else(|| n.to_string());
    let mut warnings = vec![];
    if let Some(js) = joint_series(bag, &replay.joint_states_topic, &map, &mut warnings) {
        for (name, series) in js.names.iter().zip(&js.series) {
            let Some(slot) = layout.slot(name) else { continue };
            for (field, (s, (what, unit))) in series.iter().zip([("position", "rad or m"), ("velocity", "rad/s or m/s"), ("effort", "N·m or N")]).enumerate() {
                let t: Vec<f64> = s.t.iter().map(|&t| (t - t0) * 1e-9).collect();
                push(format!("{name} {what}"), unit, Source::Joint { slot, field }, &t, &s.v, end_s);
            }
        }
    }
    const AXIS: [&str; 6] = ["fx", "fy", "fz", "tx", "ty", "tz"];
    let wrench_sources = layout
        .sensors
        .iter()
        .enumerate()
        .map(|(i, s)| (normalize_topic(&sensor_wrench(&s.name)), i, true))
        .chain(layout.wrench_links.iter().enumerate().map(|(i, l)| (normalize_topic(&contact_wrench(&l.name)), i, false)));
    for (topic, index, sensor) in wrench_sources {
        let Ok(Some(ti)) = bag.expect_topic(&topic, crate::bag::msgs::MsgType::WrenchStamped) else { continue };
        let series = wrench_series(bag, ti, plan.hw_start_ns() as i64);
        for (axis, s) in series.iter().enumerate() {
            let source = if sensor { Source::Sensor { index, axis } } else { Source::Wrench { index, axis } };
            push(format!("{topic} {}", AXIS[axis]), if axis < 3 { "N" } else { "N·m" }, source, &s.t, &s.v, end_s);
        }
    }
    const BASE: [&str; 6] = ["x", "y", "z", "vx", "vy", "vz"];
    for (index, base) in layout.bases.iter().enumerate() {
        let topic = normalize_topic(&odom_topic(&base.robot, layout.bases.len()));
        let Ok(Some(ti)) = bag.expect_topic(&topic, crate::bag::msgs::MsgType::Odometry) else { continue };
        let series = odometry_series(bag, ti, plan.hw_start_ns() as i64);
        for (axis, s) in series.iter().enumerate() {
            push(format!("{topic} {}", BASE[axis]), if axis < 3 { "m" } else { "m/s" }, Source::Base { index, axis }, &s.t, &s.v, end_s);
        }
    }
    Ok(())
}

/// Adds a channel of finite samples within the replayed span (strided to at most
/// [`MAX_SAMPLES_PER_CHANNEL`]), with its noise estimated on all of them; none when fewer
/// than 5 samples.
#[allow(clippy::too_many_arguments)]
fn push_channel(out: &mut Vec<Channel>, bag: usize, label: String, unit: &'static str, source: Source, t: &[f64], v: &[f64], end_s: f64) {
    let pts: Vec<(f64, f64)> = t.iter().zip(v).filter(|(t, v)| v.is_finite() && **t >= 0.0 && **t <= end_s + 1e-9).map(|(&t, &v)| (t, v)).collect();
    if pts.len() < 5 {
        return;
    }
    let values: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let sigma = noise_sigma(&values).max(noise_floor(source, &values));
    let stride = pts.len().div_ceil(MAX_SAMPLES_PER_CHANNEL);
    let kept: Vec<(f64, f64)> = pts.iter().step_by(stride).copied().collect();
    out.push(Channel { bag, label, unit, source, t_s: kept.iter().map(|p| p.0).collect(), measured: kept.iter().map(|p| p.1).collect(), sigma });
}

/// Robust noise estimate from second differences (see the module docs).
pub fn noise_sigma(x: &[f64]) -> f64 {
    let mut d: Vec<f64> = x.windows(3).map(|w| (w[2] - 2.0 * w[1] + w[0]).abs()).collect();
    if d.is_empty() {
        return 0.0;
    }
    let mid = d.len() / 2;
    let (_, m, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    1.4826 * *m / 6f64.sqrt()
}

/// The smallest σ a channel is given: a resolution per kind of signal (rad, rad/s, N·m, N), or
/// 10⁻⁶ of its range when larger.
fn noise_floor(source: Source, x: &[f64]) -> f64 {
    let kind: f64 = match source {
        Source::Joint { field: 0, .. } => 1e-6,
        Source::Joint { field: 1, .. } => 1e-5,
        Source::Joint { .. } => 1e-4,
        Source::Base { axis, .. } => {
            if axis < 3 {
                1e-6
            } else {
                1e-5
            }
        }
        Source::Sensor { axis, .. } | Source::Wrench { axis, .. } => {
            if axis < 3 {
                1e-3
            } else {
                1e-4
            }
        }
    };
    let (lo, hi) = x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    kind.max(1e-6 * (hi - lo))
}

/// A replay's response in memory: per sample, joint positions, velocities and efforts, sensor
/// readings and contact wrenches, in buffers sized before the first step.
pub struct MemorySink {
    /// Values per sample.
    stride: usize,
    /// Joints, sensors and contact-wrench links in the layout.
    joints: usize,
    sensors: usize,
    wrenches: usize,
    /// Sample period (s).
    period_s: f64,
    /// Hardware start (ns): sample times are relative to it.
    start_ns: i64,
    data: Vec<f64>,
    samples: usize,
}

/// Largest memory one rollout's samples may take (bytes): 512 MiB. Rollouts run in parallel,
/// one per thread.
pub const MAX_ROLLOUT_BYTES: u64 = 512 << 20;

impl MemorySink {
    /// Values per sample of `plan`'s layout.
    fn stride(plan: &ReplayPlan) -> usize {
        let l = plan.layout();
        3 * l.joints.len() + 6 * l.sensors.len() + 6 * l.wrench_links.len() + 6 * l.bases.len()
    }

    /// Bytes [`MemorySink::new`] allocates for `plan`.
    pub fn bytes(plan: &ReplayPlan) -> u64 {
        (Self::stride(plan) as u64).saturating_mul(plan.sample_count() as u64).saturating_mul(8)
    }

    /// A sink for `plan`'s samples.
    pub fn new(plan: &ReplayPlan) -> MemorySink {
        let l = plan.layout();
        let (joints, sensors, wrenches) = (l.joints.len(), l.sensors.len(), l.wrench_links.len());
        let stride = Self::stride(plan);
        MemorySink { stride, joints, sensors, wrenches, period_s: 1.0 / plan.rate_hz(), start_ns: plan.hw_start_ns() as i64, data: vec![0.0; stride * plan.sample_count()], samples: 0 }
    }

    fn offset(&self, source: Source) -> usize {
        match source {
            Source::Joint { slot, field } => field * self.joints + slot,
            Source::Sensor { index, axis } => 3 * self.joints + 6 * index + axis,
            Source::Wrench { index, axis } => 3 * self.joints + 6 * self.sensors + 6 * index + axis,
            Source::Base { index, axis } => 3 * self.joints + 6 * (self.sensors + self.wrenches + index) + axis,
        }
    }

    /// The value of `source` at `t` (s from the hardware start), linear between samples; NaN
    /// outside the samples taken.
    pub fn at(&self, source: Source, t: f64) -> f64 {
        if self.samples == 0 {
            return f64::NAN;
        }
        let o = self.offset(source);
        let f = t / self.period_s;
        if !(f >= -1e-9 && f <= (self.samples - 1) as f64 + 1e-9) {
            return f64::NAN;
        }
        let k = (f.floor().max(0.0) as usize).min(self.samples - 1);
        let s = (f - k as f64).clamp(0.0, 1.0);
        let a = self.data[k * self.stride + o];
        if s == 0.0 || k + 1 >= self.samples {
            return a;
        }
        a + s * (self.data[(k + 1) * self.stride + o] - a)
    }
}

impl ReplaySink for MemorySink {
    fn sample(&mut self, sample: &Sample, t_ns: i64) {
        // the sample's index from its time, so that a sample is where `at` looks for it
        let k = (((t_ns - self.start_ns) as f64 * 1e-9) / self.period_s).round() as usize;
        let Some(row) = self.data.get_mut(k * self.stride..(k + 1) * self.stride) else { return };
        let n = self.joints;
        row[..n].copy_from_slice(&sample.position);
        row[n..2 * n].copy_from_slice(&sample.velocity);
        row[2 * n..3 * n].copy_from_slice(&sample.effort);
        let mut o = 3 * n;
        for s in &sample.sensors {
            row[o..o + 6].copy_from_slice(&s.measured);
            o += 6;
        }
        for w in &sample.contact_wrenches {
            row[o..o + 6].copy_from_slice(&w.world);
            o += 6;
        }
        for b in &sample.bases {
            row[o..o + 3].copy_from_slice(&b.position);
            row[o + 3..o + 6].copy_from_slice(&b.linear_velocity);
            o += 6;
        }
        self.samples = self.samples.max(k + 1);
    }
}

/// The bags' paths as given, for messages.
pub fn display_paths(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// `path`'s directory (for relative scene paths).
pub fn dir_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}
