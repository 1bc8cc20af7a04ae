//! Replay: feed a (hardware) bag's recorded commands into a simulation at their recorded times
//! and record the simulated response as a new bag, in the hardware bag's time base (sim time 0
//! = the first message of the hardware bag), so that [`crate::compare`] can overlay the two.
//!
//! Commands understood (topics and joint names configurable in [`ReplayConfig`]):
//! - `sensor_msgs/JointState` on `joint_command_topics`: name-indexed position / velocity /
//!   effort targets (empty arrays leave that target alone), held until the next command;
//! - `std_msgs/Float64MultiArray` on each group's topic: one value per group joint, meaning
//!   position, velocity or effort (the group's `interface`);
//! - `trajectory_msgs/JointTrajectory` on `trajectory_topics`: followed from the header stamp
//!   (or, when zero, the log time), interpolated as the node does ([`ReplayConfig::interpolation`]),
//!   with the node's implicit start point; a later joint command releases the joints it names.
//!
//! Commands go through the node's own validation ([`crate::rt::validate::CommandValidator`]:
//! unknown joints, inconsistent lengths and NaN are rejected; values beyond limits are applied,
//! rejected or clamped per [`ReplayConfig::limit_policy`]) and trajectory follower ([`crate::rt::trajectory`]), so a bag
//! recorded from the node replays with the node's semantics. The scene's own command script is
//! not applied. The step sequence is the headless run's: the
//! commands whose time is ≤ the current simulation time are applied, then the step is taken.

use super::msgs::{JointState, Msg, MsgType, Odometry};
use super::reader::{normalize_topic, Bag};
use super::recorder::{BagRecorder, RecorderOptions, RecordingSummary};
use super::topics::{SampleTopicOptions, SampleTopics};
use super::BagError;
use crate::config::Scene;
use crate::rt::messages::{Interpolation, JointCommand, JointLayout, Sample, TrajectoryCommand};
use crate::rt::trajectory::ActiveTrajectory;
use crate::rt::validate::{CommandGroup, CommandValidator, LimitPolicy, TrajectoryPointView};
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
    /// Trajectory interpolation: `cubic` (the node's default) or `linear`.
    pub interpolation: String,
    /// Commands beyond joint limits: `none` (default: applied as recorded, as the hardware
    /// received them; the physics still enforces limits and effort saturation), or the node's
    /// `reject` / `clamp`.
    pub limit_policy: String,
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
            interpolation: "cubic".into(),
            limit_policy: "none".into(),
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
    /// Joint names in commands that are not in the scene (after mapping): such commands are
    /// rejected whole, as the node rejects them.
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

/// A validated command at its (hardware) time.
struct Event {
    t_ns: u64,
    cmd: Command,
    topic: String,
    msg: Msg,
}

enum Command {
    Joint(JointCommand),
    Trajectory(Box<TrajectoryCommand>),
}

/// The largest scene timestep (s) replay accepts: a bag's commands are sampled at least once a
/// second.
pub const MAX_REPLAY_TIMESTEP_S: f64 = 1.0;

/// Replays `hw`'s commands into `scene` and records the response in a new bag at `out`.
pub fn replay(hw: &Bag, scene: &Scene, cfg: &ReplayConfig, out: &Path) -> Result<ReplayReport, BagError> {
    let plan = ReplayPlan::prepare(hw, scene, cfg)?;
    let mut sim = plan.simulation(scene);
    let mut sink = BagSink::start(out, &plan)?;
    let outcome = plan.run(&mut sim, &mut sink);
    let recording = sink.finish()?;
    Ok(ReplayReport {
        commands_applied: outcome.commands_applied,
        trajectories: outcome.trajectories,
        unknown_joints: plan.unknown_joints.clone(),
        sim_duration_s: sim.state.time_s,
        rate_hz: plan.rate_hz(),
        hw_start_ns: plan.hw_start,
        initial_state_from_bag: plan.initial_joint_state.is_some(),
        recording,
        warnings: plan.warnings.clone(),
    })
}

/// A hardware bag's commands prepared for replay into a scene: validated and timed once, then
/// run into any number of simulations of that scene (or of scenes with the same joints and
/// timestep, as system identification does with its parameter variants). [`replay`] is
/// `prepare`, [`ReplayPlan::simulation`], [`ReplayPlan::run`] into a bag.
pub struct ReplayPlan {
    /// The scene's joint layout.
    layout: JointLayout,
    /// Validated commands, sorted by time.
    events: Vec<Event>,
    /// Trajectory interpolation.
    interpolation: Interpolation,
    /// The hardware bag's start (ns): simulation time 0.
    hw_start: u64,
    /// Step, recording period and length.
    timing: ReplayTiming,
    /// The first recorded joint state, when the initial state comes from the bag.
    initial_joint_state: Option<JointState>,
    /// The first recorded odometry of the first floating base, likewise.
    initial_odometry: Option<Odometry>,
    /// Joint names in commands that are not in the scene (after mapping).
    pub unknown_joints: Vec<String>,
    /// Problems met (named topics), not fatal.
    pub warnings: Vec<String>,
}

impl ReplayPlan {
    /// Reads and validates `hw`'s commands for `scene` under `cfg`.
    pub fn prepare(hw: &Bag, scene: &Scene, cfg: &ReplayConfig) -> Result<ReplayPlan, BagError> {
        let layout = JointLayout::new(&scene.model);
        let hw_name = hw.path.display().to_string();
        let mut warnings = Vec::new();
        let mut unknown = BTreeSet::new();
        let map = |n: &str| cfg.joint_map.get(n).cloned().unwrap_or_else(|| n.to_string());
        let Some(hw_start) = hw.start_ns() else {
            return Err(BagError::Invalid { path: hw_name, reason: "the bag has no readable message".into() });
        };
        let hw_end = hw.end_ns().unwrap_or(hw_start);
        let input = HwInput { hw, hw_name: &hw_name, cfg, map: &map };

        let groups = command_groups(cfg, &layout);
        let topic_role = command_topic_roles(&input, &groups, &mut warnings);
        let interpolation = Interpolation::parse(&cfg.interpolation)
            .ok_or_else(|| BagError::Invalid { path: "replay config".into(), reason: format!("interpolation: '{}' is not cubic or linear", cfg.interpolation) })?;
        let validator = command_validator(&layout, &cfg.limit_policy)?;
        let cmd_groups = validated_groups(&input, &validator, &groups, &mut warnings);
        let setup = CommandSetup { topic_role, validator, cmd_groups };
        let events = read_commands(&input, &setup, layout.len(), &mut unknown, &mut warnings);
        let (initial_joint_state, initial_odometry) = if cfg.initial_state { initial_state_from_bag(&layout, &input, &mut warnings) } else { (None, None) };
        let timing = replay_timing(&input, scene.model.timestep_s, hw_start, hw_end)?;
        if let Some((gap, at)) = hw.largest_gap_ns().filter(|&(gap, _)| gap as f64 * 1e-9 > MAX_QUIET_GAP_S) {
            warnings.push(format!(
                "{hw_name}: no message for {} s after {} s of log time (more than {MAX_QUIET_GAP_S} s: a clock jump or a paused recording?); the replay simulates the gap with the last commands held",
                short_secs(gap),
                short_secs(at.saturating_sub(hw_start))
            ));
        }
        Ok(ReplayPlan { layout, events, interpolation, hw_start, timing, initial_joint_state, initial_odometry, unknown_joints: unknown.into_iter().collect(), warnings })
    }

    /// A simulation of `scene` ready for [`ReplayPlan::run`]: no script, no episode resets,
    /// the initial state from the bag when configured.
    pub fn simulation(&self, scene: &Scene) -> Simulation {
        let mut sim = Simulation::from_scene(scene, None);
        sim.script = Script::default();
        sim.reset_period_steps = None;
        if let Some(js) = &self.initial_joint_state {
            set_initial_joints(&mut sim, &self.layout, js);
        }
        if let (Some(o), Some(base)) = (&self.initial_odometry, self.layout.bases.first()) {
            let (qi, vi) = (base.q_index, base.v_index);
            sim.state.q[qi..qi + 3].copy_from_slice(&o.position);
            sim.state.q[qi + 3..qi + 7].copy_from_slice(&o.orientation_xyzw);
            sim.state.v[vi..vi + 3].copy_from_slice(&o.linear);
            sim.state.v[vi + 3..vi + 6].copy_from_slice(&o.angular);
        }
        sim
    }

    /// The scene's joint layout (the order of a [`Sample`]'s joints).
    pub fn layout(&self) -> &JointLayout {
        &self.layout
    }

    /// The hardware bag's start (ns): simulation time 0.
    pub fn hw_start_ns(&self) -> u64 {
        self.hw_start
    }

    /// Rate of the recorded response (Hz).
    pub fn rate_hz(&self) -> f64 {
        1.0 / (self.timing.every as f64 * self.timing.dt)
    }

    /// Samples [`ReplayPlan::run`] hands its sink: one every `every` steps from step 0 to the
    /// last, inclusive.
    pub fn sample_count(&self) -> usize {
        (self.timing.steps / self.timing.every) as usize + 1
    }

    /// Steps `sim`, applying each command when its time comes (the commands whose time is ≤ the
    /// simulation time, then the step), and hands the commands and every `every`-th step's
    /// sample to `sink`. Allocates nothing per step beyond what the sink and a started
    /// trajectory do.
    pub fn run(&self, sim: &mut Simulation, sink: &mut dyn ReplaySink) -> ReplayOutcome {
        let (layout, events, interpolation, every, steps) = (&self.layout, &self.events[..], self.interpolation, self.timing.every, self.timing.steps);
        let n = layout.len();
        let mut sample = Sample::new(layout);
        let stamp = |t_s: f64| self.hw_start as i64 + crate::rt::clock::secs_to_ns(t_s);
        let mut ei = 0usize;
        let mut traj = ActiveTrajectory::new(TrajectoryCommand::new(n, 1));
        let (mut applied, mut trajectories) = (0usize, 0usize);
        for k in 0..=steps {
            let now_ns = stamp(sim.state.time_s) as u64;
            while ei < events.len() && events[ei].t_ns <= now_ns {
                let e = &events[ei];
                match &e.cmd {
                    Command::Joint(cmd) => {
                        // as the node's real-time loop applies a command
                        cmd.apply(layout, &mut sim.commands, |slot| traj.release(slot));
                        applied += 1;
                    }
                    Command::Trajectory(t) => {
                        let (q, v) = (&sim.state.q, &sim.state.v);
                        let _ = traj.start(t.clone(), sim.state.time_s, interpolation, |s| q[layout.joints[s].q_index], |s| v[layout.joints[s].v_index]);
                        trajectories += 1;
                    }
                }
                sink.command(&e.topic, e.t_ns, &e.msg);
                ei += 1;
            }
            traj.apply(sim.state.time_s, interpolation, layout, &mut sim.commands);
            if sim.state.step_count % every == 0 {
                sample.fill_physics(layout, sim);
                sink.sample(&sample, stamp(sim.state.time_s));
            }
            if k < steps {
                sim.step();
            }
        }
        ReplayOutcome { commands_applied: applied, trajectories }
    }
}

/// Where [`ReplayPlan::run`] puts what it replays.
pub trait ReplaySink {
    /// A command message as recorded in the hardware bag, at its log time (ns).
    fn command(&mut self, _topic: &str, _t_ns: u64, _msg: &Msg) {}
    /// The simulated response at `t_ns` (the hardware bag's time base, ns).
    fn sample(&mut self, sample: &Sample, t_ns: i64);
}

/// [`ReplaySink`] into a new bag: the commands on their topics and the response on the node's.
struct BagSink {
    rec: BagRecorder,
    h: super::RecordHandle,
    topics: SampleTopics,
    cmd_topics: BTreeMap<String, super::TopicId>,
}

impl BagSink {
    fn start(out: &Path, plan: &ReplayPlan) -> Result<BagSink, BagError> {
        let opts = RecorderOptions { lossless: true, ..Default::default() };
        let mut rec = BagRecorder::start(out, &opts)?;
        let topics = SampleTopics::register(&mut rec, &plan.layout, &SampleTopicOptions::default());
        let mut cmd_topics: BTreeMap<String, super::TopicId> = BTreeMap::new();
        for e in &plan.events {
            if !cmd_topics.contains_key(&e.topic) {
                cmd_topics.insert(e.topic.clone(), rec.add_topic(&normalize_topic(&e.topic), e.msg.msg_type()));
            }
        }
        let h = rec.handle();
        Ok(BagSink { rec, h, topics, cmd_topics })
    }

    fn finish(self) -> Result<RecordingSummary, BagError> {
        drop(self.h);
        self.rec.finish()
    }
}

impl ReplaySink for BagSink {
    fn command(&mut self, topic: &str, t_ns: u64, msg: &Msg) {
        self.h.record(self.cmd_topics[topic], t_ns, msg.clone());
    }
    fn sample(&mut self, sample: &Sample, t_ns: i64) {
        self.topics.record_sample(&self.h, sample, t_ns);
    }
}

/// The hardware bag and how replay reads it.
struct HwInput<'a> {
    /// The hardware bag.
    hw: &'a Bag,
    /// Its path, for messages.
    hw_name: &'a str,
    /// Replay settings.
    cfg: &'a ReplayConfig,
    /// Hardware joint name → simulation joint name ([`ReplayConfig::joint_map`]).
    map: &'a dyn Fn(&str) -> String,
}

/// How replay reads and validates the hardware bag's commands.
struct CommandSetup {
    /// Hardware topic index → role: `(0, 0)` JointState commands, `(1, g)` group `g`, `(2, 0)`
    /// trajectories.
    topic_role: BTreeMap<usize, (u8, usize)>,
    /// The node's command validator (limits per [`ReplayConfig::limit_policy`]).
    validator: CommandValidator,
    /// Per group, its validated form; `None`: its commands are not replayed.
    cmd_groups: Vec<Option<CommandGroup>>,
}

/// The configured command groups, else one position group `/<robot>/commands` per robot with
/// its joints (the node's default).
fn command_groups(cfg: &ReplayConfig, layout: &JointLayout) -> Vec<GroupMap> {
    match &cfg.groups {
        Some(g) => g.clone(),
        None => layout
            .robots
            .iter()
            .map(|r| GroupMap { topic: format!("/{}/commands", r.robot), joints: r.slots.iter().map(|&s| layout.joints[s].name.clone()).collect(), interface: GroupInterface::Position })
            .collect(),
    }
}

/// Finds the command topics in the hardware bag (warning about those of the wrong type, or
/// when there is none): topic index → role (see [`CommandSetup::topic_role`]).
fn command_topic_roles(input: &HwInput, groups: &[GroupMap], warnings: &mut Vec<String>) -> BTreeMap<usize, (u8, usize)> {
    let (hw, cfg) = (input.hw, input.cfg);
    let mut topic_role: BTreeMap<usize, (u8, usize)> = BTreeMap::new(); // topic → (0 js, 1 group g, 2 traj)
    let mut check = |name: &str, ty: MsgType, role: (u8, usize), warnings: &mut Vec<String>| match hw.expect_topic(name, ty) {
        Ok(Some(i)) => {
            topic_role.insert(i, role);
        }
        Ok(None) => {}
        Err(e) => warnings.push(format!("{e}; its commands are not replayed")),
    };
    for t in &cfg.joint_command_topics {
        check(t, MsgType::JointState, (0, 0), warnings);
    }
    for (g, gm) in groups.iter().enumerate() {
        check(&gm.topic, MsgType::Float64MultiArray, (1, g), warnings);
    }
    for t in &cfg.trajectory_topics {
        check(t, MsgType::JointTrajectory, (2, 0), warnings);
    }
    if topic_role.is_empty() {
        warnings.push(format!("{}: no command topic found (looked for {:?}, {:?}, groups {:?}); the robot holds its initial targets", input.hw_name, cfg.joint_command_topics, cfg.trajectory_topics, groups.iter().map(|g| &g.topic).collect::<Vec<_>>()));
    }
    topic_role
}

/// The node's command validator under `limit_policy` (`none`: structure checked, values beyond
/// limits applied as recorded; else `reject` or `clamp`).
fn command_validator(layout: &JointLayout, limit_policy: &str) -> Result<CommandValidator, BagError> {
    let mut check_layout = layout.clone();
    let policy = match limit_policy {
        "none" => {
            // structure still checked (names, lengths, NaN); values as recorded
            for j in &mut check_layout.joints {
                j.position_limits = None;
                j.velocity_limit = f64::INFINITY;
                j.effort_limit = f64::INFINITY;
            }
            LimitPolicy::Reject
        }
        other => LimitPolicy::parse(other)
            .ok_or_else(|| BagError::Invalid { path: "replay config".into(), reason: format!("limit_policy: '{other}' is not none, reject or clamp") })?,
    };
    Ok(CommandValidator::new(&check_layout, policy))
}

/// Each group as the validator's command group (joint names mapped); `None` for a group the
/// validator refuses (a warning if the groups were configured).
fn validated_groups(input: &HwInput, validator: &CommandValidator, groups: &[GroupMap], warnings: &mut Vec<String>) -> Vec<Option<CommandGroup>> {
    let mut cmd_groups: Vec<Option<CommandGroup>> = Vec::new();
    for gm in groups {
        let names: Vec<String> = gm.joints.iter().map(|n| (input.map)(n)).collect();
        let iface = match gm.interface {
            GroupInterface::Position => crate::rt::validate::GroupInterface::Position,
            GroupInterface::Velocity => crate::rt::validate::GroupInterface::Velocity,
            GroupInterface::Effort => crate::rt::validate::GroupInterface::Effort,
        };
        match validator.make_group(&gm.topic, &names, iface) {
            Ok(g) => cmd_groups.push(Some(g)),
            Err(e) => {
                if input.cfg.groups.is_some() {
                    warnings.push(format!("replay config: group '{}': {e}; its commands are not replayed", gm.topic));
                }
                cmd_groups.push(None);
            }
        }
    }
    cmd_groups
}

/// The hardware bag's commands validated as the node does, sorted by log time; rejected ones
/// are counted per topic in `warnings`, unknown joint names collected in `unknown`. `n`: the
/// number of joint slots.
fn read_commands(input: &HwInput, setup: &CommandSetup, n: usize, unknown: &mut BTreeSet<String>, warnings: &mut Vec<String>) -> Vec<Event> {
    let (hw, map, validator) = (input.hw, input.map, &setup.validator);
    let mut events: Vec<Event> = Vec::new();
    let mut rejected: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for m in &hw.messages {
        let Some(&(role, g)) = setup.topic_role.get(&m.topic) else { continue };
        let topic = hw.topics[m.topic].name.clone();
        let result = match (&m.msg, role) {
            (Msg::JointState(js), 0) => {
                let names: Vec<String> = js.name.iter().map(|n| map(n)).collect();
                let mut c = JointCommand::new(n);
                validator.joint_state(&names, &js.position, &js.velocity, &js.effort, &mut c).map(|_| Command::Joint(c))
            }
            (Msg::Float64MultiArray(a), 1) => {
                let Some(group) = &setup.cmd_groups[g] else { continue };
                let mut c = JointCommand::new(n);
                validator.group(group, &a.data, &mut c).map(|_| Command::Joint(c))
            }
            (Msg::JointTrajectory(jt), 2) => {
                let names: Vec<String> = jt.joint_names.iter().map(|n| map(n)).collect();
                let points: Vec<TrajectoryPointView<'_>> =
                    jt.points.iter().map(|p| TrajectoryPointView { time_from_start_s: p.time_from_start.to_s(), positions: &p.positions, velocities: &p.velocities }).collect();
                let stamp = jt.header.stamp.to_ns();
                // the node starts a stamped trajectory at its stamp, measured on its own clock
                let delay = if stamp == 0 { 0.0 } else { (stamp - m.log_time_ns as i64) as f64 * 1e-9 };
                let mut c = Box::new(TrajectoryCommand::new(n, points.len()));
                validator.trajectory(&names, &points, delay, &mut c).map(|_| Command::Trajectory(c))
            }
            _ => continue,
        };
        match result {
            Ok(cmd) => events.push(Event { t_ns: m.log_time_ns, cmd, topic, msg: m.msg.clone() }),
            Err(e) => {
                if let crate::rt::validate::Rejection::UnknownJoint(name) = &e {
                    unknown.insert(name.clone());
                }
                let r = rejected.entry(topic).or_insert((0, e.to_string()));
                r.0 += 1;
            }
        }
    }
    // the bag's order is its recording order: commands whose log times go back in it, or that
    // all share one time, are replayed by time, which is not what the robot received
    let backwards = events.windows(2).filter(|w| w[1].t_ns < w[0].t_ns).count();
    if backwards > 0 {
        warnings.push(format!("{}: {backwards} command(s) have a log time before the previous command's (shuffled or clock jumps); replayed in log-time order", input.hw_name));
    }
    if events.len() > 1 && events.iter().all(|e| e.t_ns == events[0].t_ns) {
        warnings.push(format!("{}: all {} commands have the same log time ({} ns); they are applied at once, at that time", input.hw_name, events.len(), events[0].t_ns));
    }
    events.sort_by_key(|e| e.t_ns);
    for (topic, (count, first)) in &rejected {
        warnings.push(format!("{}: topic '{topic}': {count} commands rejected as the node would (first: {first})", input.hw_name));
    }
    for n in unknown.iter() {
        warnings.push(format!("{}: commands name joint '{n}', not in the scene (map it with joint_map)", input.hw_name));
    }
    events
}

/// The hardware bag's first joint state (for the joint positions and velocities) and the first
/// floating base's first odometry (pose and twist), for a replay that starts from the recorded
/// state.
fn initial_state_from_bag(layout: &JointLayout, input: &HwInput, warnings: &mut Vec<String>) -> (Option<JointState>, Option<Odometry>) {
    let (hw, cfg) = (input.hw, input.cfg);
    let mut joint_state = None;
    match hw.expect_topic(&cfg.joint_states_topic, MsgType::JointState) {
        Ok(Some(ti)) => {
            if let Some(Msg::JointState(js)) = hw.messages_on(ti).next().map(|m| &m.msg) {
                // names mapped to the scene's once, here
                let mut js = js.clone();
                for n in &mut js.name {
                    *n = (input.map)(n);
                }
                joint_state = Some(js);
            }
        }
        Ok(None) => warnings.push(format!("{}: no topic '{}': starting from the scene's initial state", input.hw_name, cfg.joint_states_topic)),
        Err(e) => warnings.push(format!("{e}: starting from the scene's initial state")),
    }
    let mut odometry = None;
    if !layout.bases.is_empty() {
        if let Ok(Some(ti)) = hw.expect_topic(&cfg.odom_topic, MsgType::Odometry) {
            if let Some(Msg::Odometry(o)) = hw.messages_on(ti).next().map(|m| &m.msg) {
                odometry = Some(o.as_ref().clone());
            }
        }
    }
    (joint_state, odometry)
}

/// Longest stretch without any message (s) that a hardware bag may have without a warning: a
/// longer one is more likely a clock jump or a paused recording than a quiet robot.
pub const MAX_QUIET_GAP_S: f64 = 60.0;

/// A duration of `ns` nanoseconds in seconds for messages (`4.000e9`, `99.9990`).
fn short_secs(ns: u64) -> String {
    short_seconds(ns as f64 * 1e-9)
}

/// A duration `s` (s) for messages: 4 significant digits when large, 4 decimals otherwise.
fn short_seconds(s: f64) -> String {
    if s >= 1e6 {
        format!("{s:.3e}")
    } else {
        format!("{s:.4}")
    }
}

/// Replay's time step, recording period and length.
struct ReplayTiming {
    /// The scene's timestep (s).
    dt: f64,
    /// Record every this many steps.
    every: u64,
    /// Steps to take.
    steps: u64,
}

/// Checks the scene timestep `dt` (s) and derives the recording period (from the configured
/// rate, else the hardware joint-state rate, else 1000 Hz) and the number of steps (from the
/// configured duration, else the hardware bag's span `hw_start..hw_end`, ns).
fn replay_timing(input: &HwInput, dt: f64, hw_start: u64, hw_end: u64) -> Result<ReplayTiming, BagError> {
    let (hw, cfg) = (input.hw, input.cfg);
    if let Some(r) = cfg.rate_hz.filter(|r| !(*r > 0.0 && r.is_finite())) {
        return Err(BagError::Invalid { path: "replay config".into(), reason: format!("rate_hz (--rate): must be a positive, finite rate in Hz, got {r}") });
    }
    if let Some(d) = cfg.duration_s.filter(|d| !(*d >= 0.0 && d.is_finite())) {
        return Err(BagError::Invalid { path: "replay config".into(), reason: format!("duration_s: must be a finite duration ≥ 0 s, got {d}") });
    }
    if !(dt > 0.0 && dt <= MAX_REPLAY_TIMESTEP_S) {
        return Err(BagError::Invalid { path: "scene".into(), reason: format!("timestep_s: {dt} s; replay needs a timestep in (0, {MAX_REPLAY_TIMESTEP_S}] s") });
    }
    let rate_hz = cfg.rate_hz.or_else(|| hw_rate(hw, &cfg.joint_states_topic)).unwrap_or(1000.0).clamp(0.01, 1.0 / dt);
    let every = ((1.0 / (rate_hz * dt)).round() as u64).max(1);
    let duration = cfg.duration_s.unwrap_or((hw_end - hw_start) as f64 * 1e-9);
    let steps = (duration / dt).round().max(0.0);
    if steps > crate::validate::MAX_RUN_STEPS as f64 {
        let why = match (cfg.duration_s, hw.largest_gap_ns()) {
            (None, Some((gap, at))) if gap as f64 * 1e-9 > MAX_QUIET_GAP_S => format!(" (its log times jump by {} s after {} s: a clock jump?)", short_secs(gap), short_secs(at.saturating_sub(hw_start))),
            _ => String::new(),
        };
        let what = if cfg.duration_s.is_some() { "duration_s (--duration)".to_string() } else { format!("{}: the bag spans", input.hw_name) };
        return Err(BagError::Invalid {
            path: "replay".into(),
            reason: format!("{what} {} s{why}: {steps:.3e} steps of {dt} s, more than the {} steps a replay may take; give --duration to replay a part", short_seconds(duration), crate::validate::MAX_RUN_STEPS),
        });
    }
    Ok(ReplayTiming { dt, every, steps: steps as u64 })
}

/// What [`ReplayPlan::run`] did.
#[derive(Clone, Copy, Debug)]
pub struct ReplayOutcome {
    /// Joint commands applied.
    pub commands_applied: usize,
    /// Trajectories started.
    pub trajectories: usize,
}

/// Sets positions and velocities (and holds the position targets there) from a joint state
/// (names already mapped to the scene's).
fn set_initial_joints(sim: &mut Simulation, layout: &JointLayout, js: &JointState) {
    for (i, name) in js.name.iter().enumerate() {
        let Some(s) = layout.slot(name) else { continue };
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
