//! Replay: feed a (hardware) bag's recorded commands into a simulation at their recorded times
//! and record the simulated response as a new bag, in the hardware bag's time base (sim time 0
//! = the first message of the hardware bag), so that [`crate::compare`] can overlay the two.
//!
//! Commands understood (topics and joint names configurable in [`ReplayConfig`]):
//! - `sensor_msgs/JointState` on `joint_command_topics`: name-indexed position / velocity /
//!   effort targets (empty arrays leave that target alone), held until the next command;
//! - `std_msgs/Float64MultiArray` on each group's topic: one value per group joint, meaning
//!   position, velocity or effort (the group's `interface`);
//! - `trajectory_msgs/JointTrajectory` on `trajectory_topics`: positions interpolated linearly
//!   between points, velocities the segment slopes, from the header stamp (or, when zero, the
//!   log time); a later joint command releases the joints it names.
//!
//! The scene's own command script is not applied. The step sequence is the headless run's: the
//! commands whose time is ≤ the current simulation time are applied, then the step is taken.

use super::msgs::{JointState, Msg, MsgType};
use super::reader::{normalize_topic, Bag};
use super::recorder::{BagRecorder, RecorderOptions, RecordingSummary};
use super::topics::{SampleTopicOptions, SampleTopics};
use super::BagError;
use crate::config::Scene;
use crate::rt::messages::{JointLayout, Sample};
use crate::sim::{Script, Simulation};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What the values of a command group mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupInterface {
    /// Position targets (rad or m).
    Position,
    /// Velocity targets (rad/s or m/s).
    Velocity,
    /// Efforts (N·m or N).
    Effort,
}

/// A `Float64MultiArray` command group.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMap {
    /// Topic, e.g. `/arm/commands`.
    pub topic: String,
    /// Joint names (as in the bag; [`ReplayConfig::joint_map`] applies), in array order.
    pub joints: Vec<String>,
    /// What the values command.
    #[serde(default = "default_interface")]
    pub interface: GroupInterface,
}

fn default_interface() -> GroupInterface {
    GroupInterface::Position
}

/// Replay settings (a YAML file for `contact_sim replay --config`; every key optional).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayConfig {
    /// Measured joint states in the hardware bag (for the initial state).
    pub joint_states_topic: String,
    /// Odometry of the (first) floating base in the hardware bag (for the initial state).
    pub odom_topic: String,
    /// JointState command topics.
    pub joint_command_topics: Vec<String>,
    /// JointTrajectory topics.
    pub trajectory_topics: Vec<String>,
    /// Float64MultiArray groups; `None`: one position group per robot, `/<robot>/commands`,
    /// with the robot's joints (the node's default).
    pub groups: Option<Vec<GroupMap>>,
    /// Hardware joint name → simulation joint name (names not listed are used as they are).
    pub joint_map: BTreeMap<String, String>,
    /// Start from the first recorded joint state (and floating-base odometry) instead of the
    /// scene's initial state.
    pub initial_state: bool,
    /// Rate of the recorded response (Hz); default: the hardware joint-state rate, else 1000.
    pub rate_hz: Option<f64>,
    /// Simulated duration (s); default: the hardware bag's.
    pub duration_s: Option<f64>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            joint_states_topic: "/joint_states".into(),
            odom_topic: "/odom".into(),
            joint_command_topics: vec!["/joint_commands".into()],
            trajectory_topics: vec!["/joint_trajectory".into()],
            groups: None,
            joint_map: BTreeMap::new(),
            initial_state: false,
            rate_hz: None,
            duration_s: None,
        }
    }
}

/// What a replay did.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// Command messages applied.
    pub commands_applied: usize,
    /// Trajectories followed.
    pub trajectories: usize,
    /// Joint names in commands that are not in the scene (after mapping); skipped.
    pub unknown_joints: Vec<String>,
    /// Simulated time (s).
    pub sim_duration_s: f64,
    /// Rate of the recorded response (Hz).
    pub rate_hz: f64,
    /// The hardware bag's start (ns): sim time 0.
    pub hw_start_ns: u64,
    /// The initial state was taken from the bag.
    pub initial_state_from_bag: bool,
    /// What was recorded.
    pub recording: RecordingSummary,
    /// Problems met (named topics), not fatal.
    pub warnings: Vec<String>,
}

/// One resolved command: per slot optional position / velocity / effort.
struct JointEvent {
    t_ns: u64,
    set: Vec<(usize, Option<f64>, Option<f64>, Option<f64>)>,
    topic: String,
    msg: Msg,
}

struct Trajectory {
    start_ns: u64,
    slots: Vec<usize>,
    /// (time from start s, positions per slot, velocities per slot if given)
    points: Vec<(f64, Vec<f64>, Option<Vec<f64>>)>,
    active: Vec<bool>,
}

impl Trajectory {
    fn sample(&self, t_ns: u64, k: usize) -> Option<(f64, f64)> {
        if t_ns < self.start_ns || self.points.is_empty() {
            return None;
        }
        let t = (t_ns - self.start_ns) as f64 * 1e-9;
        let i = self.points.partition_point(|p| p.0 <= t);
        if i == 0 {
            // before the first point: hold it (no current state to blend from)
            return Some((self.points[0].1[k], 0.0));
        }
        if i >= self.points.len() {
            let last = &self.points[self.points.len() - 1];
            return Some((last.1[k], 0.0));
        }
        let (t0, p0, _) = &self.points[i - 1];
        let (t1, p1, _) = &self.points[i];
        let dt = (t1 - t0).max(1e-12);
        let s = (t - t0) / dt;
        Some((p0[k] + s * (p1[k] - p0[k]), (p1[k] - p0[k]) / dt))
    }
}

/// Replays `hw`'s commands into `scene` and records the response in a new bag at `out`.
pub fn replay(hw: &Bag, scene: &Scene, cfg: &ReplayConfig, out: &Path) -> Result<ReplayReport, BagError> {
    let mut sim = Simulation::from_scene(scene, None);
    sim.script = Script::default();
    sim.reset_period_steps = None;
    let layout = JointLayout::new(&sim.model);
    let hw_name = hw.path.display().to_string();
    let mut warnings = Vec::new();
    let mut unknown = BTreeSet::new();
    let map = |n: &str| cfg.joint_map.get(n).cloned().unwrap_or_else(|| n.to_string());
    let Some(hw_start) = hw.start_ns() else {
        return Err(BagError::Invalid { path: hw_name, reason: "the bag has no readable message".into() });
    };
    let hw_end = hw.end_ns().unwrap_or(hw_start);

    // ---- command topics ------------------------------------------------------------------
    let groups: Vec<GroupMap> = match &cfg.groups {
        Some(g) => g.clone(),
        None => layout
            .robots
            .iter()
            .map(|r| GroupMap { topic: format!("/{}/commands", r.robot), joints: r.slots.iter().map(|&s| layout.joints[s].name.clone()).collect(), interface: GroupInterface::Position })
            .collect(),
    };
    let mut topic_role: BTreeMap<usize, (u8, usize)> = BTreeMap::new(); // topic → (0 js, 1 group g, 2 traj)
    let mut check = |name: &str, ty: MsgType, role: (u8, usize), warnings: &mut Vec<String>| match hw.expect_topic(name, ty) {
        Ok(Some(i)) => {
            topic_role.insert(i, role);
        }
        Ok(None) => {}
        Err(e) => warnings.push(format!("{e}; its commands are not replayed")),
    };
    for t in &cfg.joint_command_topics {
        check(t, MsgType::JointState, (0, 0), &mut warnings);
    }
    for (g, gm) in groups.iter().enumerate() {
        check(&gm.topic, MsgType::Float64MultiArray, (1, g), &mut warnings);
    }
    for t in &cfg.trajectory_topics {
        check(t, MsgType::JointTrajectory, (2, 0), &mut warnings);
    }
    if topic_role.is_empty() {
        warnings.push(format!("{hw_name}: no command topic found (looked for {:?}, {:?}, groups {:?}); the robot holds its initial targets", cfg.joint_command_topics, cfg.trajectory_topics, groups.iter().map(|g| &g.topic).collect::<Vec<_>>()));
    }

    let mut events: Vec<JointEvent> = Vec::new();
    let mut trajectories: Vec<(u64, Trajectory, String, Msg)> = Vec::new();
    let slot_of = |hw_joint: &str, unknown: &mut BTreeSet<String>| -> Option<usize> {
        let n = map(hw_joint);
        let s = layout.slot(&n);
        if s.is_none() {
            unknown.insert(n);
        }
        s
    };
    for m in &hw.messages {
        let Some(&(role, g)) = topic_role.get(&m.topic) else { continue };
        let topic = hw.topics[m.topic].name.clone();
        match (&m.msg, role) {
            (Msg::JointState(js), 0) => {
                let mut set = Vec::new();
                for (i, name) in js.name.iter().enumerate() {
                    if let Some(s) = slot_of(name, &mut unknown) {
                        set.push((s, js.position.get(i).copied(), js.velocity.get(i).copied(), js.effort.get(i).copied()));
                    }
                }
                events.push(JointEvent { t_ns: m.log_time_ns, set, topic, msg: m.msg.clone() });
            }
            (Msg::Float64MultiArray(a), 1) => {
                let gm = &groups[g];
                if a.data.len() != gm.joints.len() {
                    warnings.push(format!("{hw_name}: topic '{topic}': a command has {} values for {} joints; skipped", a.data.len(), gm.joints.len()));
                    continue;
                }
                let mut set = Vec::new();
                for (name, &x) in gm.joints.iter().zip(&a.data) {
                    if let Some(s) = slot_of(name, &mut unknown) {
                        set.push(match gm.interface {
                            GroupInterface::Position => (s, Some(x), None, None),
                            GroupInterface::Velocity => (s, None, Some(x), None),
                            GroupInterface::Effort => (s, None, None, Some(x)),
                        });
                    }
                }
                events.push(JointEvent { t_ns: m.log_time_ns, set, topic, msg: m.msg.clone() });
            }
            (Msg::JointTrajectory(jt), 2) => {
                let cols: Vec<(usize, Option<usize>)> = jt.joint_names.iter().enumerate().map(|(i, n)| (i, slot_of(n, &mut unknown))).collect();
                let slots: Vec<usize> = cols.iter().filter_map(|c| c.1).collect();
                let mut points = Vec::new();
                let mut bad = false;
                for p in &jt.points {
                    if p.positions.len() != jt.joint_names.len() {
                        bad = true;
                        break;
                    }
                    let pos = cols.iter().filter(|c| c.1.is_some()).map(|c| p.positions[c.0]).collect();
                    points.push((p.time_from_start.to_s(), pos, None));
                }
                if bad {
                    warnings.push(format!("{hw_name}: topic '{topic}': a trajectory point has the wrong number of positions; trajectory skipped"));
                    continue;
                }
                let stamp = jt.header.stamp.to_ns();
                let start = if stamp > 0 { stamp as u64 } else { m.log_time_ns };
                let n = slots.len();
                trajectories.push((m.log_time_ns, Trajectory { start_ns: start, slots, points, active: vec![true; n] }, topic, m.msg.clone()));
            }
            _ => {}
        }
    }
    events.sort_by_key(|e| e.t_ns);
    trajectories.sort_by_key(|t| t.0);
    for n in &unknown {
        warnings.push(format!("{hw_name}: commands name joint '{n}', not in the scene (map it with joint_map); ignored"));
    }

    // ---- initial state ---------------------------------------------------------------------
    let mut initial_from_bag = false;
    if cfg.initial_state {
        match hw.expect_topic(&cfg.joint_states_topic, MsgType::JointState) {
            Ok(Some(ti)) => {
                if let Some(Msg::JointState(js)) = hw.messages_on(ti).next().map(|m| &m.msg) {
                    set_initial_joints(&mut sim, &layout, js, &map);
                    initial_from_bag = true;
                }
            }
            Ok(None) => warnings.push(format!("{hw_name}: no topic '{}': starting from the scene's initial state", cfg.joint_states_topic)),
            Err(e) => warnings.push(format!("{e}: starting from the scene's initial state")),
        }
        if let Some(base) = layout.bases.first() {
            if let Ok(Some(ti)) = hw.expect_topic(&cfg.odom_topic, MsgType::Odometry) {
                if let Some(Msg::Odometry(o)) = hw.messages_on(ti).next().map(|m| &m.msg) {
                    let (qi, vi) = (base.q_index, base.v_index);
                    sim.state.q[qi..qi + 3].copy_from_slice(&o.position);
                    sim.state.q[qi + 3..qi + 7].copy_from_slice(&o.orientation_xyzw);
                    sim.state.v[vi..vi + 3].copy_from_slice(&o.linear);
                    sim.state.v[vi + 3..vi + 6].copy_from_slice(&o.angular);
                }
            }
        }
    }

    // ---- rate and duration -------------------------------------------------------------------
    let dt = sim.model.timestep_s;
    let rate_hz = cfg.rate_hz.or_else(|| hw_rate(hw, &cfg.joint_states_topic)).unwrap_or(1000.0).clamp(0.01, 1.0 / dt);
    let every = ((1.0 / (rate_hz * dt)).round() as u64).max(1);
    let duration = cfg.duration_s.unwrap_or((hw_end - hw_start) as f64 * 1e-9);
    let steps = (duration / dt).round().max(0.0) as u64;

    // ---- record ------------------------------------------------------------------------------
    let opts = RecorderOptions { lossless: true, ..Default::default() };
    let mut rec = BagRecorder::start(out, &opts)?;
    let topics = SampleTopics::register(&mut rec, &layout, &SampleTopicOptions::default());
    let mut cmd_topics: BTreeMap<String, super::TopicId> = BTreeMap::new();
    for e in &events {
        if !cmd_topics.contains_key(&e.topic) {
            cmd_topics.insert(e.topic.clone(), rec.add_topic(&normalize_topic(&e.topic), e.msg.msg_type()));
        }
    }
    for (_, _, topic, msg) in &trajectories {
        if !cmd_topics.contains_key(topic) {
            cmd_topics.insert(topic.clone(), rec.add_topic(&normalize_topic(topic), msg.msg_type()));
        }
    }
    let h = rec.handle();
    let mut sample = Sample::new(&layout);
    let stamp = |t_s: f64| hw_start as i64 + crate::rt::clock::secs_to_ns(t_s);
    let (mut ei, mut ti) = (0usize, 0usize);
    let mut active: Option<Trajectory> = None;
    let mut applied = 0usize;
    for k in 0..=steps {
        let now_ns = stamp(sim.state.time_s) as u64;
        while ei < events.len() && events[ei].t_ns <= now_ns {
            let e = &events[ei];
            for &(s, p, v, f) in &e.set {
                let vi = layout.joints[s].v_index;
                if let Some(p) = p {
                    sim.commands.position[vi] = p;
                    if v.is_none() {
                        sim.commands.velocity[vi] = 0.0;
                    }
                }
                if let Some(v) = v {
                    sim.commands.velocity[vi] = v;
                }
                if let Some(f) = f {
                    sim.commands.effort[vi] = f;
                }
                if let Some(t) = active.as_mut() {
                    if let Some(j) = t.slots.iter().position(|&x| x == s) {
                        t.active[j] = false;
                    }
                }
            }
            h.record(cmd_topics[&e.topic], e.t_ns, e.msg.clone());
            applied += 1;
            ei += 1;
        }
        while ti < trajectories.len() && trajectories[ti].0 <= now_ns {
            let (t, traj, topic, msg) = &trajectories[ti];
            h.record(cmd_topics[topic], *t, msg.clone());
            active = Some(Trajectory { start_ns: traj.start_ns, slots: traj.slots.clone(), points: traj.points.clone(), active: traj.active.clone() });
            ti += 1;
        }
        if let Some(t) = &active {
            for (j, &s) in t.slots.iter().enumerate() {
                if t.active[j] {
                    if let Some((p, v)) = t.sample(now_ns, j) {
                        let vi = layout.joints[s].v_index;
                        sim.commands.position[vi] = p;
                        sim.commands.velocity[vi] = v;
                    }
                }
            }
        }
        if sim.state.step_count % every == 0 {
            sample.fill_physics(&layout, &sim);
            topics.record_sample(&h, &sample, stamp(sim.state.time_s));
        }
        if k < steps {
            sim.step();
        }
    }
    drop(h);
    let recording = rec.finish()?;
    Ok(ReplayReport {
        commands_applied: applied,
        trajectories: trajectories.len(),
        unknown_joints: unknown.into_iter().collect(),
        sim_duration_s: sim.state.time_s,
        rate_hz: 1.0 / (every as f64 * dt),
        hw_start_ns: hw_start,
        initial_state_from_bag: initial_from_bag,
        recording,
        warnings,
    })
}

/// Sets positions and velocities (and holds the position targets there) from a joint state.
fn set_initial_joints(sim: &mut Simulation, layout: &JointLayout, js: &JointState, map: &dyn Fn(&str) -> String) {
    for (i, name) in js.name.iter().enumerate() {
        let Some(s) = layout.slot(&map(name)) else { continue };
        let j = &layout.joints[s];
        if let Some(&p) = js.position.get(i) {
            sim.state.q[j.q_index] = p;
            sim.commands.position[j.v_index] = p;
        }
        if let Some(&v) = js.velocity.get(i) {
            sim.state.v[j.v_index] = v;
        }
    }
}

/// Median rate (Hz) of a JointState topic.
fn hw_rate(hw: &Bag, topic: &str) -> Option<f64> {
    let ti = hw.expect_topic(topic, MsgType::JointState).ok().flatten()?;
    let mut t: Vec<u64> = hw.messages_on(ti).map(|m| m.log_time_ns).collect();
    t.sort_unstable();
    let mut d: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0).collect();
    if d.is_empty() {
        return None;
    }
    d.sort_unstable();
    Some(1e9 / d[d.len() / 2] as f64)
}
