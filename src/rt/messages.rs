//! The plain-data messages exchanged with the real-time thread (no ROS types).
//!
//! Joints are addressed by their **slot**: the index in [`JointLayout::joints`], i.e. the order
//! of [`crate::model::Model::actuated_joint_names`] (what `/joint_states` publishes). Every
//! buffer is sized once from the layout; filling one never allocates.

use crate::model::{ControlMode, JointKind, Model, TreeKind};

/// One actuated (one-DOF) joint.
#[derive(Clone, Debug, PartialEq)]
pub struct JointInfo {
    /// Joint name.
    pub name: String,
    /// Index into `q`.
    pub q_index: usize,
    /// Index into `v` (and into [`crate::step::Commands`]).
    pub v_index: usize,
    /// Position limits `(lower, upper)` (rad or m), `None` when unlimited.
    pub position_limits: Option<(f64, f64)>,
    /// Velocity limit (rad/s or m/s), `f64::INFINITY` when not given.
    pub velocity_limit: f64,
    /// Effort limit (N·m or N), `f64::INFINITY` when not given.
    pub effort_limit: f64,
    /// The configured command mode and gains.
    pub mode: ControlMode,
    /// The joint this one follows (its URDF `<mimic joint=...>`): a mimic follower is driven by
    /// the coupling, is passive and takes no commands. `None` for an independent joint.
    pub mimic_of: Option<String>,
}

/// A robot whose base floats (published as odometry).
#[derive(Clone, Debug, PartialEq)]
pub struct FloatingBase {
    /// Robot name.
    pub robot: String,
    /// Root link name (the odometry child frame).
    pub root_link: String,
    /// Index of the root's free joint in `q` (`[x, y, z, qx, qy, qz, qw]`).
    pub q_index: usize,
    /// Index in `v` (`[v, ω]` of the root origin, body frame).
    pub v_index: usize,
}

/// A robot's commanded joints (for the default command groups).
#[derive(Clone, Debug, PartialEq)]
pub struct RobotJoints {
    /// Robot name.
    pub robot: String,
    /// Slots of its one-DOF joints that take commands, in URDF order: mimic followers
    /// ([`JointInfo::mimic_of`]) are left out, as ros2_control gives them no command interface.
    pub slots: Vec<usize>,
}

/// A force/torque sensor as the node publishes it.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorInfo {
    /// Sensor name (topics `<name>/wrench`, `<name>/wrench_ideal`).
    pub name: String,
    /// `frame_id` of its readings.
    pub frame_id: String,
}

/// A body whose net contact wrench is published.
#[derive(Clone, Debug, PartialEq)]
pub struct WrenchLink {
    /// Link or object name (topic `contact_wrenches/<name>`).
    pub name: String,
    /// Body index in the model.
    pub body: usize,
}

/// Default capacity of [`Sample::contact_points`].
pub const DEFAULT_MAX_CONTACT_POINTS: usize = 128;

/// The joints and floating bases of a model, as the node exposes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointLayout {
    /// Actuated joints in slot order.
    pub joints: Vec<JointInfo>,
    /// Floating-base robots.
    pub bases: Vec<FloatingBase>,
    /// Robots and their joint slots.
    pub robots: Vec<RobotJoints>,
    /// F/T sensors, in [`Model::sensors`] order.
    pub sensors: Vec<SensorInfo>,
    /// Bodies whose contact wrench is published (the scene's `contact_wrench_links`).
    pub wrench_links: Vec<WrenchLink>,
    /// Capacity of [`Sample::contact_points`]: contacts beyond it are counted, not copied.
    pub max_contact_points: usize,
}

impl JointLayout {
    /// The layout of `model` (one-DOF joints in velocity order).
    pub fn new(model: &Model) -> Self {
        let mut joints = Vec::new();
        for (bi, b) in model.bodies.iter().enumerate() {
            let j = &b.joint;
            if j.kind.nv() == 1 {
                let mimic_of = model.mimics.iter().find(|m| m.follower == bi).map(|m| model.bodies[m.leader].joint.name.clone());
                joints.push(JointInfo {
                    name: j.name.clone(),
                    q_index: j.q_index,
                    v_index: j.v_index,
                    position_limits: j.position_limits,
                    velocity_limit: j.velocity_limit,
                    effort_limit: j.effort_limit,
                    mode: model.default_control[j.v_index],
                    mimic_of,
                });
            }
        }
        let mut bases = Vec::new();
        let mut robots = Vec::new();
        for t in &model.trees {
            if let TreeKind::Robot(r) = t.kind {
                let root = &model.bodies[t.body_start];
                if root.joint.kind == JointKind::Free {
                    bases.push(FloatingBase { robot: model.robots[r].name.clone(), root_link: root.name.clone(), q_index: root.joint.q_index, v_index: root.joint.v_index });
                }
                let slots = joints.iter().enumerate().filter(|(_, j)| j.v_index >= t.v_start && j.v_index < t.v_end && j.mimic_of.is_none()).map(|(i, _)| i).collect();
                robots.push(RobotJoints { robot: model.robots[r].name.clone(), slots });
            }
        }
        let sensors = model.sensors.iter().map(|s| SensorInfo { name: s.name.clone(), frame_id: s.frame_id.clone() }).collect();
        let wrench_links = model.contact_wrench_bodies.iter().map(|&b| WrenchLink { name: model.bodies[b].name.clone(), body: b }).collect();
        JointLayout { joints, bases, robots, sensors, wrench_links, max_contact_points: DEFAULT_MAX_CONTACT_POINTS }
    }
    /// Slot of a joint by name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }
    /// Number of actuated joints.
    pub fn len(&self) -> usize {
        self.joints.len()
    }
    /// `true` when the model has no actuated joint.
    pub fn is_empty(&self) -> bool {
        self.joints.is_empty()
    }
}

/// Bit in [`JointCommand::mask`]: the position target is set.
pub const HAS_POSITION: u8 = 1;
/// Bit in [`JointCommand::mask`]: the velocity target is set.
pub const HAS_VELOCITY: u8 = 2;
/// Bit in [`JointCommand::mask`]: the (feed-forward) effort is set.
pub const HAS_EFFORT: u8 = 4;

/// A validated joint command (from `joint_commands` or a `<group>/commands` topic).
#[derive(Clone, Debug)]
pub struct JointCommand {
    /// Sequence number given by the ROS side.
    pub seq: u64,
    /// `CLOCK_MONOTONIC` time the message was received (ns).
    pub received_ns: i64,
    /// Per slot: which of position / velocity / effort are set ([`HAS_POSITION`] ...).
    pub mask: Vec<u8>,
    /// Position targets per slot (rad or m).
    pub position: Vec<f64>,
    /// Velocity targets per slot (rad/s or m/s).
    pub velocity: Vec<f64>,
    /// Efforts per slot (N·m or N).
    pub effort: Vec<f64>,
}

impl JointCommand {
    /// An empty command for `n` joint slots.
    pub fn new(n: usize) -> Self {
        JointCommand { seq: 0, received_ns: 0, mask: vec![0; n], position: vec![0.0; n], velocity: vec![0.0; n], effort: vec![0.0; n] }
    }
    /// Clears the mask (keeps the allocation).
    pub fn clear(&mut self) {
        self.mask.fill(0);
    }

    /// Writes the set fields into the simulation's command targets, as the real-time loop applies
    /// a command (the replay of a bag calls the same code): a position without a velocity on a
    /// position-controlled joint targets zero velocity; every commanded joint is released from a
    /// running trajectory (`release(slot)`). No allocation.
    pub fn apply(&self, layout: &JointLayout, commands: &mut crate::step::Commands, mut release: impl FnMut(usize)) {
        for (slot, j) in layout.joints.iter().enumerate() {
            let m = self.mask[slot];
            if m == 0 {
                continue;
            }
            let v = j.v_index;
            if m & HAS_POSITION != 0 {
                commands.position[v] = self.position[slot];
                if m & HAS_VELOCITY == 0 && matches!(commands.mode[v], crate::model::ControlMode::Position { .. }) {
                    commands.velocity[v] = 0.0;
                }
            }
            if m & HAS_VELOCITY != 0 {
                commands.velocity[v] = self.velocity[slot];
            }
            if m & HAS_EFFORT != 0 {
                commands.effort[v] = self.effort[slot];
            }
            release(slot);
        }
    }
}

/// How trajectory positions are interpolated between points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// Piecewise linear positions; the velocity target is the segment slope.
    Linear,
    /// Cubic Hermite positions through the points' positions and velocities (velocities that the
    /// message does not give are estimated; see [`crate::rt::trajectory`]).
    Cubic,
}

impl Interpolation {
    /// Parses `linear` or `cubic`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "linear" => Some(Interpolation::Linear),
            "cubic" | "spline" => Some(Interpolation::Cubic),
            _ => None,
        }
    }
}

/// A validated joint trajectory (trajectory_msgs/JointTrajectory semantics), in preallocated
/// storage for up to `max_points` points over all joint slots.
#[derive(Clone, Debug)]
pub struct TrajectoryCommand {
    /// Sequence number given by the ROS side.
    pub seq: u64,
    /// `CLOCK_MONOTONIC` time the message was received (ns).
    pub received_ns: i64,
    /// Delay from reception to the trajectory start (s, ≥ 0): from `header.stamp`, 0 = now.
    pub start_delay_s: f64,
    /// Number of joints used (`slots[..num_joints]`).
    pub num_joints: usize,
    /// Joint slots, in the message's order.
    pub slots: Vec<usize>,
    /// Number of points used.
    pub num_points: usize,
    /// Whether the message gave velocities.
    pub has_velocities: bool,
    /// `time_from_start` of each point (s), strictly increasing.
    pub times: Vec<f64>,
    /// Positions, point-major: `positions[p * num_joints + k]` (rad or m).
    pub positions: Vec<f64>,
    /// Velocities, same layout (rad/s or m/s); zeros when not given.
    pub velocities: Vec<f64>,
}

impl TrajectoryCommand {
    /// Storage for up to `max_points` points of up to `num_slots` joints.
    pub fn new(num_slots: usize, max_points: usize) -> Self {
        let n = num_slots.max(1) * max_points.max(1);
        TrajectoryCommand {
            seq: 0,
            received_ns: 0,
            start_delay_s: 0.0,
            num_joints: 0,
            slots: vec![0; num_slots],
            num_points: 0,
            has_velocities: false,
            times: vec![0.0; max_points.max(1)],
            positions: vec![0.0; n],
            velocities: vec![0.0; n],
        }
    }
    /// Maximum number of points this buffer holds.
    pub fn max_points(&self) -> usize {
        self.times.len()
    }
    /// Maximum number of joints this buffer holds.
    pub fn max_joints(&self) -> usize {
        self.slots.len()
    }
    /// Position of joint `k` (message order) at point `p`.
    #[inline]
    pub fn position(&self, p: usize, k: usize) -> f64 {
        self.positions[p * self.num_joints + k]
    }
    /// Velocity of joint `k` at point `p`.
    #[inline]
    pub fn velocity(&self, p: usize, k: usize) -> f64 {
        self.velocities[p * self.num_joints + k]
    }
}

/// What the watchdog does when commands stop arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchdogAction {
    /// Hold the positions at the moment it fires (joint PD).
    Hold,
    /// Zero effort on every actuated joint.
    ZeroEffort,
    /// Velocity servo to zero (viscous damping).
    Damp,
}

impl WatchdogAction {
    /// Parses `hold`, `zero_effort` or `damp`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hold" | "hold_position" => Some(WatchdogAction::Hold),
            "zero_effort" => Some(WatchdogAction::ZeroEffort),
            "damp" => Some(WatchdogAction::Damp),
            _ => None,
        }
    }
}

/// Runtime requests from the ROS side, applied by the real-time thread between steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ControlRequest {
    /// Back to the initial state; active trajectory and watchdog cleared.
    Reset,
    /// Pause (`true`) or resume (`false`) stepping; samples keep flowing.
    Pause(bool),
    /// Take this many steps now (while paused, or in lockstep mode).
    Step(u32),
    /// New PD gains for a joint slot (N·m/rad, N·m·s/rad); for velocity-mode joints only `kd`.
    Gains {
        /// Joint slot.
        slot: usize,
        /// Stiffness.
        kp: f64,
        /// Damping.
        kd: f64,
    },
    /// Solver iteration cap.
    SolverIterations(u32),
    /// Solver tolerance (in the method's own unit, [`crate::contact::SolverConfig::tolerance`]).
    SolverTolerance(f64),
    /// Real-time factor in `sim_time` mode (0 = as fast as possible).
    RealTimeFactor(f64),
    /// Sample rate (Hz).
    PublishRate(f64),
    /// Watchdog timeout (s, 0 = off) and action.
    Watchdog {
        /// Timeout (s).
        timeout_s: f64,
        /// Action.
        action: WatchdogAction,
    },
    /// Hold gains used by [`WatchdogAction::Hold`] for joints without PD gains, and the damping
    /// gain of [`WatchdogAction::Damp`].
    WatchdogGains {
        /// Stiffness (N·m/rad).
        hold_kp: f64,
        /// Damping (N·m·s/rad).
        hold_kd: f64,
        /// Damping of the `damp` action (N·m·s/rad).
        damping: f64,
    },
    /// Trajectory interpolation.
    Interpolation(Interpolation),
    /// Leave the loop.
    Shutdown,
}

/// A control request with its sequence number (acknowledged through
/// [`crate::rt::RtShared::control_ack`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Control {
    /// Sequence number (increasing).
    pub seq: u64,
    /// The request.
    pub request: ControlRequest,
}

/// Pose and twist of a floating base.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BaseState {
    /// Root origin position (m, world).
    pub position: [f64; 3],
    /// Orientation quaternion `[x, y, z, w]` (world).
    pub orientation_xyzw: [f64; 4],
    /// Linear velocity of the root origin (m/s, root body frame: the odometry child frame).
    pub linear_velocity: [f64; 3],
    /// Angular velocity (rad/s, root body frame).
    pub angular_velocity: [f64; 3],
}

/// Counters kept by the real-time thread (monotonic since start; plain data).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RtCounters {
    /// Steps taken.
    pub steps: u64,
    /// Loop cycles.
    pub cycles: u64,
    /// Cycles whose work ended after the next deadline.
    pub overruns: u64,
    /// Deadlines skipped by the skip-ahead policy.
    pub skipped_deadlines: u64,
    /// Joint commands applied.
    pub commands_applied: u64,
    /// Trajectories started.
    pub trajectories: u64,
    /// Times the watchdog fired.
    pub watchdog_trips: u64,
    /// Resets done.
    pub resets: u64,
    /// Steps whose solver did not converge.
    pub unconverged_steps: u64,
    /// Steps skipped by the engine (singular mass matrix, non-finite state).
    pub failed_steps: u64,
    /// The first failed step (its number counts the loop's steps from 1), if any.
    pub first_failure: Option<crate::sim::StepFailure>,
    /// The latest failed step, if any.
    pub last_failure: Option<crate::sim::StepFailure>,
    /// Samples lost because the ROS side fell behind.
    pub samples_dropped: u64,
}

/// The last step's physics report, reduced to plain numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepSummary {
    /// Contact points.
    pub contacts: usize,
    /// Solver iterations.
    pub iterations: u32,
    /// Solver residual (the solver's unit).
    pub residual: f64,
    /// Whether the solver converged.
    pub converged: bool,
    /// Largest iteration count in the current statistics window.
    pub iterations_max_window: u32,
    /// Largest residual in the current statistics window.
    pub residual_max_window: f64,
    /// Joints saturated at their effort limit.
    pub saturated_joints: usize,
    /// Deepest penetration (m).
    pub max_penetration_m: f64,
    /// The slowest cycle of the last complete statistics window and where its time went.
    pub worst_cycle: WorstCycle,
}

/// The slowest loop cycle of a statistics window, broken down by stage, to name what made it
/// slow: the physics steps (with their contact and iteration counts), the control requests
/// (resets, pauses, parameter changes), the commands (joint commands, trajectories, the
/// watchdog) or publishing the sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorstCycle {
    /// Work time of the cycle (µs, wake-up to end of work).
    pub total_us: f64,
    /// The stage that took most of it: `"steps"`, `"control"`, `"commands"` or `"publish"`
    /// (empty before the first window).
    pub stage: &'static str,
    /// Time of that stage (µs).
    pub stage_us: f64,
    /// Physics steps taken in the cycle.
    pub steps: u32,
    /// Most contacts in one of the cycle's steps.
    pub contacts: usize,
    /// Most solver iterations in one of the cycle's steps.
    pub iterations: u32,
    /// Control requests applied in the cycle (reset, pause, step, parameter changes).
    pub control_requests: u32,
    /// CPU time the loop thread used between the end of the previous cycle and the end of this
    /// one (µs; sleeping uses none). Much less than `total_us` means the cycle was slow because
    /// the thread waited, not because it worked.
    pub cpu_us: f64,
    /// Involuntary context switches of the loop thread in that span: times it was runnable but
    /// something else ran (another task, the hypervisor, or `SCHED_DEADLINE` throttling).
    pub involuntary_switches: u32,
    /// Page faults of the loop thread in that span.
    pub page_faults: u32,
    /// How late the thread woke for this cycle (µs after its deadline; 0 when unpaced).
    pub wake_late_us: f64,
}

impl WorstCycle {
    /// Why the cycle took its time, from the thread's own counters: `"work"` when the CPU time
    /// is at least ¾ of the cycle's work time (the solver, a reset, ... — `stage` says which),
    /// `"preempted"` when the thread was switched out involuntarily (runnable, but something else
    /// ran), `"page faults"` when it faulted, `"waiting"` otherwise (blocked in a system call, or
    /// a stall the counters do not see, such as a virtual CPU paused by the hypervisor). Empty
    /// before the first window.
    pub fn cause(&self) -> &'static str {
        if self.stage.is_empty() {
            ""
        } else if self.cpu_us >= 0.75 * self.total_us {
            "work"
        } else if self.involuntary_switches > 0 {
            "preempted"
        } else if self.page_faults > 0 {
            "page faults"
        } else {
            "waiting"
        }
    }

    /// One line for logs and diagnostics: `812.4 µs, mostly steps (790.1 µs: 1 step(s), 44
    /// contacts, 200 iterations, 0 control request(s)); cause work: CPU 801.0 µs, 0 involuntary
    /// switch(es), 0 page fault(s), woke 3.1 µs late`; `none` before the first window.
    pub fn describe(&self) -> String {
        if self.stage.is_empty() {
            return "none".into();
        }
        format!(
            "{:.1} µs, mostly {} ({:.1} µs: {} step(s), {} contacts, {} iterations, {} control request(s)); cause {}: CPU {:.1} µs, {} involuntary switch(es), {} page fault(s), woke {:.1} µs late",
            self.total_us,
            self.stage,
            self.stage_us,
            self.steps,
            self.contacts,
            self.iterations,
            self.control_requests,
            self.cause(),
            self.cpu_us,
            self.involuntary_switches,
            self.page_faults,
            self.wake_late_us
        )
    }
}

/// One F/T sensor reading in a [`Sample`] (sensor frame, `[fx fy fz tx ty tz]`, N and N·m; the
/// sign convention of [`crate::sensors`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SensorReading {
    /// The ideal (noise-free) wrench.
    pub ideal: [f64; 6],
    /// The emulated reading (bias, noise, filter, quantization, saturation, delay).
    pub measured: [f64; 6],
    /// An axis of `measured` is clipped at its range.
    pub saturated: bool,
}

/// A contact wrench in a [`Sample`]: force (N) and torque about the body origin (N·m), acting
/// on the body.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactWrench {
    /// World axes `[fx fy fz tx ty tz]`.
    pub world: [f64; 6],
    /// Body axes.
    pub local: [f64; 6],
}

/// One contact point in a [`Sample`] (world frame).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactPointSample {
    /// Position (m).
    pub position: [f64; 3],
    /// Unit normal, pointing from body A into body B (B is the robot link or object; A the
    /// ground or the other body).
    pub normal: [f64; 3],
    /// Contact force on body B (N): normal plus friction.
    pub force: [f64; 3],
}

/// One state sample from the real-time thread.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Sample number.
    pub seq: u64,
    /// Simulation time (s).
    pub sim_time_s: f64,
    /// `CLOCK_MONOTONIC` when the sample was taken (ns).
    pub monotonic_ns: i64,
    /// `CLOCK_REALTIME` when the sample was taken (ns): the ROS stamp in `realtime` mode.
    pub realtime_ns: i64,
    /// Joint positions per slot (rad or m).
    pub position: Vec<f64>,
    /// Joint velocities per slot (rad/s or m/s).
    pub velocity: Vec<f64>,
    /// Measured (applied) joint efforts per slot (N·m or N).
    pub effort: Vec<f64>,
    /// Floating bases, in [`JointLayout::bases`] order.
    pub bases: Vec<BaseState>,
    /// The last step's physics.
    pub step: StepSummary,
    /// Loop timing statistics (refreshed at the statistics rate).
    pub stats: LoopStats,
    /// Counters.
    pub counters: RtCounters,
    /// Stepping is paused.
    pub paused: bool,
    /// The watchdog has fired and no command has arrived since.
    pub watchdog_active: bool,
    /// A trajectory is being followed.
    pub trajectory_active: bool,
    /// Sequence number of the last applied joint command (0 = none).
    pub last_command_seq: u64,
    /// `true` when this sample immediately follows a step (`false` for heartbeats while paused
    /// or waiting in lockstep).
    pub stepped: bool,
    /// F/T sensor readings, in [`JointLayout::sensors`] order.
    pub sensors: Vec<SensorReading>,
    /// Contact wrenches, in [`JointLayout::wrench_links`] order.
    pub contact_wrenches: Vec<ContactWrench>,
    /// Contact points of the last step; only the first `num_contact_points` are valid.
    pub contact_points: Vec<ContactPointSample>,
    /// Valid entries of `contact_points`.
    pub num_contact_points: usize,
}

use super::stats::LoopStats;

impl Sample {
    /// A zeroed sample for `layout`.
    pub fn new(layout: &JointLayout) -> Self {
        let n = layout.len();
        Sample {
            seq: 0,
            sim_time_s: 0.0,
            monotonic_ns: 0,
            realtime_ns: 0,
            position: vec![0.0; n],
            velocity: vec![0.0; n],
            effort: vec![0.0; n],
            bases: vec![BaseState::default(); layout.bases.len()],
            step: StepSummary::default(),
            stats: LoopStats::default(),
            counters: RtCounters::default(),
            paused: false,
            watchdog_active: false,
            trajectory_active: false,
            last_command_seq: 0,
            stepped: false,
            sensors: vec![SensorReading::default(); layout.sensors.len()],
            contact_wrenches: vec![ContactWrench::default(); layout.wrench_links.len()],
            contact_points: vec![ContactPointSample::default(); layout.max_contact_points],
            num_contact_points: 0,
        }
    }
}

impl Sample {
    /// Copies the physical state of `sim` into the sample (fixed-size buffers: no allocation):
    /// time, joint positions / velocities / applied efforts, floating bases, F/T readings, the
    /// configured contact wrenches and the contact points of the last step. Timing, counters and
    /// flags are left to the caller.
    pub fn fill_physics(&mut self, layout: &JointLayout, sim: &crate::sim::Simulation) {
        let (model, ws, st) = (&sim.model, &sim.workspace, &sim.state);
        self.sim_time_s = st.time_s;
        let effort = &ws.applied_effort;
        for (k, j) in layout.joints.iter().enumerate() {
            self.position[k] = st.q[j.q_index];
            self.velocity[k] = st.v[j.v_index];
            self.effort[k] = effort[j.v_index];
        }
        for (b, base) in layout.bases.iter().enumerate() {
            let (qi, vi) = (base.q_index, base.v_index);
            self.bases[b] = BaseState {
                position: [st.q[qi], st.q[qi + 1], st.q[qi + 2]],
                orientation_xyzw: [st.q[qi + 3], st.q[qi + 4], st.q[qi + 5], st.q[qi + 6]],
                linear_velocity: [st.v[vi], st.v[vi + 1], st.v[vi + 2]],
                angular_velocity: [st.v[vi + 3], st.v[vi + 4], st.v[vi + 5]],
            };
        }
        for (out, sensor) in self.sensors.iter_mut().zip(&st.sensors) {
            *out = SensorReading { ideal: sensor.ideal, measured: sensor.measured, saturated: sensor.saturated };
        }
        for (out, link) in self.contact_wrenches.iter_mut().zip(&layout.wrench_links) {
            let w = &ws.body_contact_force[link.body];
            let x = &ws.body_pose[link.body];
            let origin = crate::math::Pose::from_parts(x.translation, nalgebra::UnitQuaternion::identity());
            *out = ContactWrench { world: crate::sensors::wrench_in_frame(w, &origin), local: crate::sensors::wrench_in_frame(w, x) };
        }
        let n = ws.contacts.len().min(self.contact_points.len());
        for (i, out) in self.contact_points.iter_mut().take(n).enumerate() {
            let c = &ws.contacts[i];
            out.position = c.position.into();
            out.normal = c.normal.into();
            out.force = crate::step::contact_force_world(model, ws, i).into();
        }
        self.num_contact_points = n;
    }
}
