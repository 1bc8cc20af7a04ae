//! The `contact_sim_node` ROS 2 node (r2r): parameters, topics, services, threads, shutdown.
//!
//! Threads:
//! - **main (ROS) thread**: owns the r2r node; spins it, validates incoming commands into
//!   preallocated buffers for the real-time thread, serves the services and parameter changes
//!   (forwarded as control requests), logs (throttled) and watches for SIGINT / SIGTERM;
//! - **RT thread** ([`crate::rt::RtLoop`]): owns the simulation; no ROS types;
//! - **publisher thread**: woken by the RT thread after each sample (`Thread::unpark`, lock-free),
//!   publishes `/joint_states`, odometry, `/clock` and `/diagnostics`.
//!
//! Topics (relative names resolve in the node's namespace):
//! - in: `joint_commands` (sensor_msgs/JointState, name-indexed; ros2_control's topic-based
//!   hardware interface contract), `<group>/commands` (std_msgs/Float64MultiArray, the
//!   forward_command_controller convention), `joint_trajectory` (trajectory_msgs/JointTrajectory);
//! - out: `/joint_states` (position, velocity, measured effort), `odom` (nav_msgs/Odometry; with
//!   several floating bases `<robot>/odom`), `/diagnostics`, `/clock` (sim_time and lockstep);
//!   per F/T sensor `<sensor>/wrench` (emulated) and `<sensor>/wrench_ideal`
//!   (geometry_msgs/WrenchStamped in the sensor frame, the force_torque_sensor_broadcaster
//!   convention; sign: the wrench the child side exerts on the sensor, see [`crate::sensors`]);
//!   per scene `contact_wrench_links` entry `contact_wrenches/<link>` (net contact force on the
//!   link and torque about its origin, world axes, `frame_id` = `odom_frame`) and
//!   `contact_wrenches/<link>/local` (the same in link axes, `frame_id` = the link);
//!   `contact_markers` (visualization_msgs/MarkerArray: contact points and force arrows). All
//!   stamps of one sample are equal: the sample's sim time (sim_time, lockstep) or the wall
//!   clock when it was taken (realtime).
//!
//! Services: `~/reset` (std_srvs/Trigger), `~/pause` (std_srvs/SetBool), `~/step`
//! (std_srvs/Trigger, one step while paused or in lockstep). A service responds once the RT
//! thread has acknowledged the request (its effect is visible in the next state).

use super::convert::{self, level};
use super::graph::{self, RobotDescription};
use super::params::ParamStore;
use crate::config::load_scene;
use crate::contact::SolverConfig;
use crate::model::ControlMode;
use crate::rt::clock::{monotonic_ns, realtime_ns};
use crate::rt::messages::*;
use crate::rt::validate::{CommandGroup, CommandValidator, GroupInterface, LimitPolicy, Rejection, TrajectoryPointView};
use crate::rt::*;
use crate::sim::{FailurePolicy, Simulation};
use anyhow::{anyhow, bail, Context as _, Result};
use futures::executor::{LocalPool, LocalSpawner};
use futures::task::LocalSpawnExt;
use futures::{future, StreamExt};
use r2r::diagnostic_msgs::msg::DiagnosticArray;
use r2r::geometry_msgs::msg::WrenchStamped;
use r2r::visualization_msgs::msg::MarkerArray;
use r2r::nav_msgs::msg::Odometry;
use r2r::rosgraph_msgs::msg::Clock;
use r2r::sensor_msgs::msg::JointState;
use r2r::std_msgs::msg::{Float64MultiArray, String as StringMsg};
use r2r::tf2_msgs::msg::TFMessage;
use r2r::std_srvs::srv::{SetBool, Trigger};
use r2r::trajectory_msgs::msg::JointTrajectory;
use r2r::{ParameterValue, QosProfile};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The node name.
pub const NODE_NAME: &str = "contact_sim_node";

/// Command-line options outside `--ros-args`.
#[derive(Debug, Default, PartialEq)]
pub struct CliArgs {
    /// `--scene PATH`: overrides the `scene` parameter.
    pub scene: Option<PathBuf>,
    /// `--help`.
    pub help: bool,
    /// `--list-parameters`: print the declared parameter names (for the scene) and exit.
    pub list_parameters: bool,
    /// `--print-robot-description [ROBOT]`: print the URDF of the scene's robot (the named one,
    /// or the only one) and exit, without starting ROS (the launch files hand it to
    /// `robot_state_publisher`). `Some("")`: no robot named.
    pub print_description: Option<String>,
    /// `--list-robots`: print the scene's robot names, one a line, and exit (without ROS).
    pub list_robots: bool,
    /// `--require-params-file FILE`: stop with an error naming FILE unless it is a readable
    /// file. The launch files pass their `params_file` here as well as to ROS: launch_ros leaves
    /// a parameter file that does not exist out of the node's command line with only a warning,
    /// and the node would run on its defaults.
    pub require_params_file: Option<PathBuf>,
}

/// Usage text.
pub const USAGE: &str = "contact_sim_node: the contact_sim ROS 2 node

usage: contact_sim_node [--scene PATH] [--list-parameters] [--print-robot-description [ROBOT]] [--list-robots] [--require-params-file FILE] [--ros-args -p scene:=PATH -p time_mode:=realtime|sim_time|lockstep ... --params-file FILE]

A parameter file that cannot be read stops the node with an error naming it: a --params-file of
--ros-args, and --require-params-file FILE (what the launch files pass with their params_file,
which launch_ros drops from the command line with only a warning when it does not exist).

Topics (in the node's namespace): joint_commands (sensor_msgs/JointState), <group>/commands
(std_msgs/Float64MultiArray), joint_trajectory (trajectory_msgs/JointTrajectory) in; joint_states,
odom, diagnostics, tf, tf_static, robot_description, <sensor>/wrench, <sensor>/wrench_ideal,
contact_wrenches/<link>[/local], contact_markers out; /clock (global) in sim_time and lockstep.
Services: ~/reset, ~/pause, ~/step. Parameters: see config/contact_sim_node.params.yaml.";

/// Parses the arguments before `--ros-args` (and after a closing `--`).
pub fn parse_cli(args: &[String]) -> Result<CliArgs> {
    let mut out = CliArgs::default();
    let mut i = 1;
    let mut in_ros = false;
    while i < args.len() {
        let a = args[i].as_str();
        if in_ros {
            if a == "--" {
                in_ros = false;
            }
            i += 1;
            continue;
        }
        match a {
            "--ros-args" => in_ros = true,
            "-h" | "--help" => out.help = true,
            "--list-parameters" => out.list_parameters = true,
            "--list-robots" => out.list_robots = true,
            "--print-robot-description" => {
                let name = args.get(i + 1).filter(|n| !n.starts_with("--"));
                out.print_description = Some(name.cloned().unwrap_or_default());
                if name.is_some() {
                    i += 1;
                }
            }
            "--scene" => {
                i += 1;
                let p = args.get(i).ok_or_else(|| anyhow!("--scene needs a path"))?;
                out.scene = Some(PathBuf::from(p));
            }
            "--require-params-file" => {
                i += 1;
                let p = args.get(i).ok_or_else(|| anyhow!("--require-params-file needs a path"))?;
                out.require_params_file = Some(PathBuf::from(p));
            }
            _ if a.starts_with("--scene=") => out.scene = Some(PathBuf::from(&a["--scene=".len()..])),
            _ => bail!("unknown argument '{a}' (see --help)"),
        }
        i += 1;
    }
    Ok(out)
}

/// The default scene: `share/contact_sim/config/default.yaml` in an ament prefix, else
/// `config/default.yaml` in the working directory or the source tree.
pub fn default_scene_path() -> PathBuf {
    if let Ok(app) = std::env::var("AMENT_PREFIX_PATH") {
        for p in app.split(':').filter(|s| !s.is_empty()) {
            let c = Path::new(p).join("share/contact_sim/config/default.yaml");
            if c.exists() {
                return c;
            }
        }
    }
    let local = PathBuf::from("config/default.yaml");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default.yaml")
}

fn param_string(node: &r2r::Node, name: &str) -> Option<String> {
    match node.params.lock().ok()?.get(name).map(|p| p.value.clone()) {
        Some(ParameterValue::String(s)) => Some(s),
        _ => None,
    }
}

fn param_strings(node: &r2r::Node, name: &str) -> Vec<String> {
    match node.params.lock().ok().and_then(|p| p.get(name).map(|p| p.value.clone())) {
        Some(ParameterValue::StringArray(a)) => a,
        _ => vec![],
    }
}

fn solver_settings(s: &SolverConfig) -> (i64, f64) {
    (s.max_iterations() as i64, s.tolerance().value)
}

/// Counters kept on the ROS side (read by the diagnostics publisher).
#[derive(Default)]
pub struct FrontCounters {
    /// Joint / group commands received.
    pub received: AtomicU64,
    /// Commands rejected by validation.
    pub rejected: AtomicU64,
    /// Values clamped.
    pub clamped: AtomicU64,
    /// Trajectories received.
    pub trajectories_received: AtomicU64,
    /// Trajectories rejected.
    pub trajectories_rejected: AtomicU64,
    /// Control requests refused because the queue was full.
    pub control_refused: AtomicU64,
    /// Last published sim time (f64 bits), for trajectory stamps in sim-time modes.
    pub sim_time_bits: AtomicU64,
}

struct Pending {
    seq: u64,
    deadline: Instant,
    respond: Box<dyn FnOnce(bool)>,
}

struct Throttle {
    last: Option<Instant>,
    suppressed: u64,
}

/// State of the ROS thread's command handling.
struct Frontend {
    shared: Arc<RtShared>,
    validator: CommandValidator,
    groups: Vec<CommandGroup>,
    counters: Arc<FrontCounters>,
    scratch_cmd: JointCommand,
    scratch_traj: TrajectoryCommand,
    command_seq: u64,
    control_seq: u64,
    pending: Vec<Pending>,
    throttle: Throttle,
    paused: bool,
    mode: TimeMode,
    logger: String,
    store: Arc<Mutex<ParamStore>>,
    /// Recording of received commands (`record_bag`).
    bag: Option<CommandRecording>,
    /// Per slot: a command naming this mimic follower has been warned about (once per joint).
    mimic_warned: Vec<bool>,
    /// Per group: its joints in array order, for the length-mismatch message.
    group_joints: Vec<String>,
}

/// Where the ROS thread records the commands it receives.
struct CommandRecording {
    handle: crate::bag::RecordHandle,
    joint_commands: crate::bag::TopicId,
    joint_trajectory: crate::bag::TopicId,
    groups: Vec<crate::bag::TopicId>,
}

fn copy_command(dst: &mut JointCommand, src: &JointCommand) {
    dst.seq = src.seq;
    dst.received_ns = src.received_ns;
    dst.mask.copy_from_slice(&src.mask);
    dst.position.copy_from_slice(&src.position);
    dst.velocity.copy_from_slice(&src.velocity);
    dst.effort.copy_from_slice(&src.effort);
}

fn copy_trajectory(dst: &mut TrajectoryCommand, src: &TrajectoryCommand) {
    let (nj, np) = (src.num_joints, src.num_points);
    dst.seq = src.seq;
    dst.received_ns = src.received_ns;
    dst.start_delay_s = src.start_delay_s;
    dst.num_joints = nj;
    dst.num_points = np;
    dst.has_velocities = src.has_velocities;
    dst.slots[..nj].copy_from_slice(&src.slots[..nj]);
    dst.times[..np].copy_from_slice(&src.times[..np]);
    dst.positions[..nj * np].copy_from_slice(&src.positions[..nj * np]);
    dst.velocities[..nj * np].copy_from_slice(&src.velocities[..nj * np]);
}

impl Frontend {
    /// Log time of a received command: the node's clock (wall clock in realtime mode, sim time
    /// otherwise), as its published stamps.
    fn now_ns(&self) -> u64 {
        match self.mode {
            TimeMode::Realtime => realtime_ns().max(0) as u64,
            _ => crate::rt::clock::secs_to_ns(f64::from_bits(self.counters.sim_time_bits.load(Ordering::Relaxed))).max(0) as u64,
        }
    }

    fn reject(&mut self, topic: &str, why: &dyn std::fmt::Display) {
        let now = Instant::now();
        match self.throttle.last {
            Some(t) if now.duration_since(t) < Duration::from_secs(1) => self.throttle.suppressed += 1,
            _ => {
                let more = std::mem::take(&mut self.throttle.suppressed);
                let tail = if more > 0 { format!(" ({more} more rejected since the last warning)") } else { String::new() };
                crate::ros_warn!(&self.logger, "rejected command on {topic}: {why}{tail}");
                self.throttle.last = Some(now);
            }
        }
    }

    /// Warns, once per joint, that the mimic followers among `names` take no commands (their
    /// values in an accepted command are ignored).
    fn warn_mimic_followers(&mut self, topic: &str, names: &[String]) {
        for (slot, joint, leader) in self.validator.mimic_followers(names) {
            if !std::mem::replace(&mut self.mimic_warned[slot], true) {
                crate::ros_warn!(&self.logger, "{topic}: joint '{joint}' mimics '{leader}' (URDF <mimic>) and takes no commands: its values are ignored, command '{leader}' (warned once per joint)");
            }
        }
    }

    fn send_command(&mut self) {
        self.command_seq += 1;
        self.scratch_cmd.seq = self.command_seq;
        self.scratch_cmd.received_ns = monotonic_ns();
        // a buffer: a free one, or the oldest unread command (dropped and counted)
        if let Some(mut b) = self.shared.commands.acquire() {
            copy_command(&mut b, &self.scratch_cmd);
            let _ = self.shared.commands.push(b);
        }
    }

    fn on_joint_state(&mut self, msg: &JointState) {
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = &self.bag {
            b.handle.record(b.joint_commands, self.now_ns(), convert::to_bag::joint_state(msg));
        }
        match self.validator.joint_state(&msg.name, &msg.position, &msg.velocity, &msg.effort, &mut self.scratch_cmd) {
            Ok(a) => {
                self.counters.clamped.fetch_add(a.clamped as u64, Ordering::Relaxed);
                self.warn_mimic_followers("joint_commands", &msg.name);
                self.send_command();
            }
            Err(e) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                self.reject("joint_commands", &e);
            }
        }
    }

    fn on_group(&mut self, g: usize, msg: &Float64MultiArray) {
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = &self.bag {
            b.handle.record(b.groups[g], self.now_ns(), convert::to_bag::float64_multi_array(msg));
        }
        let group = &self.groups[g];
        match self.validator.group(group, &msg.data, &mut self.scratch_cmd) {
            Ok(a) => {
                self.counters.clamped.fetch_add(a.clamped as u64, Ordering::Relaxed);
                self.send_command();
            }
            Err(e) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                let topic = format!("{}/commands", self.groups[g].name);
                if matches!(e, Rejection::LengthMismatch { .. }) {
                    // say what the array is (also in the read-only parameter groups.<g>.joints)
                    let why = format!("{e}: {} (parameter groups.{}.joints)", self.group_joints[g], self.groups[g].name);
                    self.reject(&topic, &why);
                } else {
                    self.reject(&topic, &e);
                }
            }
        }
    }

    fn on_trajectory(&mut self, msg: &JointTrajectory) {
        self.counters.trajectories_received.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = &self.bag {
            b.handle.record(b.joint_trajectory, self.now_ns(), convert::to_bag::joint_trajectory(msg));
        }
        let points: Vec<TrajectoryPointView<'_>> = msg
            .points
            .iter()
            .map(|p| TrajectoryPointView { time_from_start_s: p.time_from_start.sec as f64 + p.time_from_start.nanosec as f64 * 1e-9, positions: &p.positions, velocities: &p.velocities })
            .collect();
        let stamp = convert::time_to_s(&msg.header.stamp);
        let delay = if stamp == 0.0 {
            0.0
        } else {
            let now = match self.mode {
                TimeMode::Realtime => realtime_ns() as f64 * 1e-9,
                _ => f64::from_bits(self.counters.sim_time_bits.load(Ordering::Relaxed)),
            };
            stamp - now
        };
        match self.validator.trajectory(&msg.joint_names, &points, delay, &mut self.scratch_traj) {
            Ok(a) => {
                self.counters.clamped.fetch_add(a.clamped as u64, Ordering::Relaxed);
                self.warn_mimic_followers("joint_trajectory", &msg.joint_names);
                self.command_seq += 1;
                self.scratch_traj.seq = self.command_seq;
                self.scratch_traj.received_ns = monotonic_ns();
                if let Some(mut b) = self.shared.trajectories.acquire() {
                    copy_trajectory(&mut b, &self.scratch_traj);
                    let _ = self.shared.trajectories.push(b);
                }
            }
            Err(e) => {
                self.counters.trajectories_rejected.fetch_add(1, Ordering::Relaxed);
                self.reject("joint_trajectory", &e);
            }
        }
    }

    /// Queues a control request; `None` if the queue is full.
    fn control(&mut self, r: ControlRequest) -> Option<u64> {
        self.control_seq += 1;
        match self.shared.control.push(Control { seq: self.control_seq, request: r }) {
            Ok(()) => Some(self.control_seq),
            Err(_) => {
                self.counters.control_refused.fetch_add(1, Ordering::Relaxed);
                crate::ros_warn!(&self.logger, "control queue full: {r:?} refused");
                None
            }
        }
    }

    fn control_then(&mut self, r: ControlRequest, respond: Box<dyn FnOnce(bool)>) {
        match self.control(r) {
            Some(seq) => self.pending.push(Pending { seq, deadline: Instant::now() + Duration::from_secs(10), respond }),
            None => respond(false),
        }
    }

    fn poll_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let ack = self.shared.control_ack.load(Ordering::Acquire);
        let now = Instant::now();
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].seq <= ack || now > self.pending[i].deadline {
                let p = self.pending.swap_remove(i);
                (p.respond)(p.seq <= ack);
            } else {
                i += 1;
            }
        }
    }

    /// Forwards a changed runtime parameter to where it acts.
    fn on_param(&mut self, name: &str) {
        let (req, policy) = {
            let s = match self.store.lock() {
                Ok(s) => s,
                Err(_) => return,
            };
            let wd_action = WatchdogAction::parse(s.str("watchdog_action")).unwrap_or(WatchdogAction::Hold);
            let req = match name {
                "publish_rate_hz" => Some(ControlRequest::PublishRate(s.f64(name))),
                "real_time_factor" => Some(ControlRequest::RealTimeFactor(s.f64(name))),
                "solver_max_iterations" => Some(ControlRequest::SolverIterations(s.i64(name).clamp(1, u32::MAX as i64) as u32)),
                "solver_tolerance" => Some(ControlRequest::SolverTolerance(s.f64(name))),
                "interpolation" => Interpolation::parse(s.str(name)).map(ControlRequest::Interpolation),
                "watchdog_timeout_s" | "watchdog_action" => Some(ControlRequest::Watchdog { timeout_s: s.f64("watchdog_timeout_s"), action: wd_action }),
                "watchdog_hold_kp" | "watchdog_hold_kd" | "watchdog_damping" => {
                    Some(ControlRequest::WatchdogGains { hold_kp: s.f64("watchdog_hold_kp"), hold_kd: s.f64("watchdog_hold_kd"), damping: s.f64("watchdog_damping") })
                }
                _ => name.strip_prefix("gains.").and_then(|rest| {
                    let joint = rest.rsplit_once('.')?.0;
                    let slot = self.validator.slot(joint)?;
                    let kp = s.f64(&format!("gains.{joint}.kp"));
                    let kd = s.f64(&format!("gains.{joint}.kd"));
                    Some(ControlRequest::Gains { slot, kp: if kp.is_nan() { 0.0 } else { kp }, kd })
                }),
            };
            (req, if name == "limit_policy" { LimitPolicy::parse(s.str(name)) } else { None })
        };
        if let Some(p) = policy {
            self.validator.policy = p;
        }
        if let Some(r) = req {
            self.control(r);
        }
        crate::ros_info!(&self.logger, "parameter {name} changed");
    }
}

/// A WrenchStamped publisher with its reusable message (frame set).
type WrenchPub = (r2r::Publisher<WrenchStamped>, WrenchStamped);

/// What the publisher thread needs.
struct PublisherCtx {
    shared: Arc<RtShared>,
    mode: TimeMode,
    joint_names: Vec<String>,
    joint_states: r2r::Publisher<JointState>,
    odom: Vec<(r2r::Publisher<Odometry>, Odometry)>,
    clock: Option<r2r::Publisher<Clock>>,
    diagnostics: r2r::Publisher<DiagnosticArray>,
    /// Per sensor: (`<sensor>/wrench`, `<sensor>/wrench_ideal`).
    sensor_pubs: Vec<(WrenchPub, WrenchPub)>,
    /// Per contact wrench link: (world axes, link axes).
    wrench_pubs: Vec<(WrenchPub, WrenchPub)>,
    markers: Option<r2r::Publisher<MarkerArray>>,
    /// `tf`: the floating bases' transforms (reusable message; sample base index of each).
    tf: Option<(r2r::Publisher<TFMessage>, TFMessage, Vec<usize>)>,
    marker_period: Duration,
    marker_scale: f64,
    world_frame: String,
    diag_period: Duration,
    front: Arc<FrontCounters>,
    sched: Arc<Mutex<String>>,
    hardware_id: String,
    solver_kind: String,
    logger: String,
    stop: Arc<AtomicBool>,
    /// Recording of everything published (`record_bag`).
    bag: Option<(crate::bag::topics::SampleTopics, crate::bag::RecordHandle)>,
    /// The loop's failure policy (`on_failure`), for messages.
    on_failure: FailurePolicy,
}

#[derive(Clone, Copy, Default)]
struct Latest {
    sim_time_s: f64,
    step: StepSummary,
    stats: LoopStats,
    counters: RtCounters,
    paused: bool,
    watchdog_active: bool,
    trajectory_active: bool,
    have: bool,
}

fn publisher_loop(mut ctx: PublisherCtx) {
    let mut js = JointState { name: ctx.joint_names.clone(), ..Default::default() };
    let mut clock = Clock::default();
    let mut latest = Latest::default();
    let mut prev = Latest::default();
    let mut prev_front = (0u64, 0u64, 0u64, 0u64);
    let mut next_diag = Instant::now() + ctx.diag_period;
    let mut next_markers = Instant::now();
    let mut errors = 0u64;
    let mut last_error_log: Option<Instant> = None;
    loop {
        let stopping = ctx.stop.load(Ordering::Acquire);
        while let Some(s) = ctx.shared.samples.pop() {
            convert::fill_joint_state(&mut js, &s, ctx.mode);
            let mut ok = ctx.joint_states.publish(&js).is_ok();
            for (k, (p, msg)) in ctx.odom.iter_mut().enumerate() {
                if let Some(b) = s.bases.get(k) {
                    convert::fill_odometry(msg, b, &s, ctx.mode);
                    ok &= p.publish(msg).is_ok();
                }
            }
            if let Some(c) = &ctx.clock {
                clock.clock = convert::time_from_s(s.sim_time_s);
                ok &= c.publish(&clock).is_ok();
            }
            let stamp = convert::stamp(&s, ctx.mode);
            if let Some((p, msg, bases)) = &mut ctx.tf {
                graph::fill_dynamic(msg, bases, &s, &stamp);
                ok &= p.publish(msg).is_ok();
            }
            for (((p, msg), (pi, msg_i)), r) in ctx.sensor_pubs.iter_mut().zip(&s.sensors) {
                convert::fill_wrench(msg, &r.measured, &stamp);
                convert::fill_wrench(msg_i, &r.ideal, &stamp);
                ok &= p.publish(msg).is_ok() & pi.publish(msg_i).is_ok();
            }
            for (((p, msg), (pl, msg_l)), w) in ctx.wrench_pubs.iter_mut().zip(&s.contact_wrenches) {
                convert::fill_wrench(msg, &w.world, &stamp);
                convert::fill_wrench(msg_l, &w.local, &stamp);
                ok &= p.publish(msg).is_ok() & pl.publish(msg_l).is_ok();
            }
            if let Some(m) = &ctx.markers {
                if Instant::now() >= next_markers {
                    next_markers = Instant::now() + ctx.marker_period;
                    let msg = convert::contact_markers(&s.contact_points[..s.num_contact_points], &ctx.world_frame, &stamp, ctx.marker_scale);
                    ok &= m.publish(&msg).is_ok();
                    if let Some((topics, h)) = &ctx.bag {
                        let ns = (stamp.sec as i64) * 1_000_000_000 + stamp.nanosec as i64;
                        topics.record_markers(h, ns, convert::to_bag::marker_array(&msg));
                    }
                }
            }
            if !ok {
                errors += 1;
                if last_error_log.map(|t| t.elapsed() > Duration::from_secs(5)).unwrap_or(true) {
                    crate::ros_error!(&ctx.logger, "publishing failed ({errors} times so far)");
                    last_error_log = Some(Instant::now());
                }
            }
            if let Some((topics, h)) = &ctx.bag {
                let ns = match ctx.mode {
                    TimeMode::Realtime => s.realtime_ns,
                    _ => crate::rt::clock::secs_to_ns(s.sim_time_s),
                };
                topics.record_sample(h, &s, ns);
            }
            ctx.front.sim_time_bits.store(s.sim_time_s.to_bits(), Ordering::Relaxed);
            latest = Latest { sim_time_s: s.sim_time_s, step: s.step, stats: s.stats, counters: s.counters, paused: s.paused, watchdog_active: s.watchdog_active, trajectory_active: s.trajectory_active, have: true };
            let _ = ctx.shared.samples.recycle(s);
        }
        if Instant::now() >= next_diag || (stopping && latest.have) {
            next_diag += ctx.diag_period;
            if next_diag < Instant::now() {
                next_diag = Instant::now() + ctx.diag_period;
            }
            let front = (
                ctx.front.received.load(Ordering::Relaxed),
                ctx.front.rejected.load(Ordering::Relaxed),
                ctx.front.trajectories_rejected.load(Ordering::Relaxed),
                ctx.shared.commands.dropped() + ctx.shared.trajectories.dropped(),
            );
            if latest.counters.failed_steps > prev.counters.failed_steps {
                if let Some(text) = failure_text(&latest, &prev, ctx.on_failure) {
                    r2r::log_error!(&ctx.logger, "{text}");
                }
            }
            let mut msg = diagnostics(&ctx, &latest, &prev, front, prev_front);
            if let (Some((_, h)), Some(st)) = (&ctx.bag, msg.status.first_mut()) {
                st.values.push(r2r::diagnostic_msgs::msg::KeyValue { key: "bag_messages_dropped".into(), value: h.dropped().to_string() });
                st.values.push(r2r::diagnostic_msgs::msg::KeyValue { key: "bag_queue_peak_bytes".into(), value: h.peak_queued_bytes().to_string() });
            }
            if ctx.diagnostics.publish(&msg).is_err() {
                errors += 1;
            }
            if let Some((topics, h)) = &ctx.bag {
                let ns = (msg.header.stamp.sec as i64) * 1_000_000_000 + msg.header.stamp.nanosec as i64;
                let crate::bag::msgs::Msg::DiagnosticArray(d) = convert::to_bag::diagnostic_array(&msg) else { unreachable!() };
                topics.record_diagnostics(h, ns, d);
            }
            prev = latest;
            prev_front = front;
        }
        if stopping {
            break;
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

/// The failures since the previous report `p`, with the cause of the last one and the policy
/// applied: `3 steps failed since the last report; the last: step 812 (t = 0.811000 s) failed:
/// non-finite state (on_failure: hold: the last good state is kept)`. `None` without failures.
fn failure_text(l: &Latest, p: &Latest, policy: FailurePolicy) -> Option<String> {
    let new_failed = l.counters.failed_steps.saturating_sub(p.counters.failed_steps);
    let last = l.counters.last_failure?;
    (new_failed > 0).then(|| {
        let action = match policy {
            FailurePolicy::Hold => "the last good state is kept, stepping goes on",
            FailurePolicy::Reset => "the scene was reset to its initial state",
            FailurePolicy::Stop => "stepping is paused; call ~/reset to go on",
        };
        format!("{new_failed} steps failed since the last report; the last: {last} (on_failure: {}: {action})", policy.name())
    })
}

fn diagnostics(ctx: &PublisherCtx, l: &Latest, p: &Latest, front: (u64, u64, u64, u64), prev_front: (u64, u64, u64, u64)) -> DiagnosticArray {
    let c = &l.counters;
    let st = &l.stats;
    let sched = ctx.sched.lock().map(|s| s.clone()).unwrap_or_default();
    let f2 = |x: f64| format!("{x:.3}");
    let new_overruns = c.overruns.saturating_sub(p.counters.overruns);
    let loop_level = if new_overruns > 0 { level::WARN } else { level::OK };
    let loop_msg = if new_overruns > 0 { format!("{new_overruns} overruns since the last report; worst cycle of the last period: {}", l.step.worst_cycle.describe()) } else { format!("{} mode, {}", ctx.mode.name(), sched) };
    let (received, rejected, traj_rejected, dropped) = front;
    let new_rejected = (rejected + traj_rejected).saturating_sub(prev_front.1 + prev_front.2);
    let new_dropped = dropped.saturating_sub(prev_front.3);
    let cmd_level = if l.watchdog_active || new_rejected > 0 || new_dropped > 0 { level::WARN } else { level::OK };
    let cmd_msg = if l.watchdog_active {
        "watchdog active: no commands within the timeout".to_string()
    } else if new_rejected > 0 {
        format!("{new_rejected} commands rejected since the last report")
    } else if new_dropped > 0 {
        format!("{new_dropped} commands dropped (queue full) since the last report")
    } else {
        "ok".to_string()
    };
    let new_failed = c.failed_steps.saturating_sub(p.counters.failed_steps);
    let new_unconverged = c.unconverged_steps.saturating_sub(p.counters.unconverged_steps);
    let phys_level = if new_failed > 0 { level::ERROR } else if new_unconverged > 0 { level::WARN } else { level::OK };
    let phys_msg = if new_failed > 0 {
        failure_text(l, p, ctx.on_failure).unwrap_or_else(|| format!("{new_failed} steps failed"))
    } else if new_unconverged > 0 {
        format!("solver did not converge in {new_unconverged} steps")
    } else {
        "ok".to_string()
    };
    let stamp = match ctx.mode {
        TimeMode::Realtime => convert::time_from_ns(realtime_ns()),
        _ => convert::time_from_s(l.sim_time_s),
    };
    let mut msg = DiagnosticArray::default();
    msg.header.stamp = stamp;
    msg.status = vec![
        convert::status(
            &format!("{NODE_NAME}: loop"),
            &ctx.hardware_id,
            loop_level,
            loop_msg,
            vec![
                ("time_mode", ctx.mode.name().to_string()),
                ("scheduling", sched.clone()),
                ("cycles", c.cycles.to_string()),
                ("steps", c.steps.to_string()),
                ("sim_time_s", format!("{:.6}", l.sim_time_s)),
                ("period_mean_us", f2(st.period_mean_us)),
                ("jitter_p50_us", f2(st.jitter_p50_us)),
                ("jitter_p99_us", f2(st.jitter_p99_us)),
                ("jitter_max_us", f2(st.jitter_max_us)),
                ("exec_mean_us", f2(st.exec_mean_us)),
                ("exec_p99_us", f2(st.exec_p99_us)),
                ("exec_max_us", f2(st.exec_max_us)),
                ("overruns", c.overruns.to_string()),
                ("skipped_deadlines", c.skipped_deadlines.to_string()),
                ("real_time_factor", f2(st.real_time_factor)),
                ("paused", l.paused.to_string()),
                ("samples_dropped", c.samples_dropped.to_string()),
                ("resets", c.resets.to_string()),
                ("worst_cycle", l.step.worst_cycle.describe()),
                ("worst_cycle_us", f2(l.step.worst_cycle.total_us)),
                ("worst_cycle_stage", l.step.worst_cycle.stage.to_string()),
                ("worst_cycle_stage_us", f2(l.step.worst_cycle.stage_us)),
                ("worst_cycle_contacts", l.step.worst_cycle.contacts.to_string()),
                ("worst_cycle_iterations", l.step.worst_cycle.iterations.to_string()),
                ("worst_cycle_cause", l.step.worst_cycle.cause().to_string()),
                ("worst_cycle_cpu_us", f2(l.step.worst_cycle.cpu_us)),
                ("worst_cycle_involuntary_switches", l.step.worst_cycle.involuntary_switches.to_string()),
                ("worst_cycle_page_faults", l.step.worst_cycle.page_faults.to_string()),
                ("worst_cycle_wake_late_us", f2(l.step.worst_cycle.wake_late_us)),
            ],
        ),
        convert::status(
            &format!("{NODE_NAME}: commands"),
            &ctx.hardware_id,
            cmd_level,
            cmd_msg,
            vec![
                ("commands_received", received.to_string()),
                ("commands_applied", c.commands_applied.to_string()),
                ("commands_rejected", rejected.to_string()),
                ("commands_clamped", ctx.front.clamped.load(Ordering::Relaxed).to_string()),
                ("commands_dropped", dropped.to_string()),
                ("trajectories_received", ctx.front.trajectories_received.load(Ordering::Relaxed).to_string()),
                ("trajectories_rejected", traj_rejected.to_string()),
                ("trajectories_started", c.trajectories.to_string()),
                ("trajectory_active", l.trajectory_active.to_string()),
                ("control_requests_refused", ctx.front.control_refused.load(Ordering::Relaxed).to_string()),
                ("watchdog_active", l.watchdog_active.to_string()),
                ("watchdog_trips", c.watchdog_trips.to_string()),
            ],
        ),
        convert::status(
            &format!("{NODE_NAME}: physics"),
            &ctx.hardware_id,
            phys_level,
            phys_msg,
            vec![
                ("solver", ctx.solver_kind.clone()),
                ("solver_iterations", l.step.iterations.to_string()),
                ("solver_iterations_max", l.step.iterations_max_window.to_string()),
                ("solver_residual", format!("{:e}", l.step.residual)),
                ("solver_residual_max", format!("{:e}", l.step.residual_max_window)),
                ("solver_converged", l.step.converged.to_string()),
                ("unconverged_steps", c.unconverged_steps.to_string()),
                ("failed_steps", c.failed_steps.to_string()),
                ("on_failure", ctx.on_failure.name().to_string()),
                ("first_failure", c.first_failure.map_or_else(|| "none".to_string(), |f| f.to_string())),
                ("last_failure", c.last_failure.map_or_else(|| "none".to_string(), |f| f.to_string())),
                ("contacts", l.step.contacts.to_string()),
                ("saturated_joints", l.step.saturated_joints.to_string()),
                ("max_penetration_m", format!("{:e}", l.step.max_penetration_m)),
            ],
        ),
    ];
    msg
}

/// Runs the node until SIGINT / SIGTERM. Returns the process exit code.
pub fn run() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let cli = match parse_cli(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("contact_sim_node: {e}\n\n{USAGE}");
            return 2;
        }
    };
    if cli.help {
        println!("{USAGE}");
        return 0;
    }
    if let Err(e) = check_params_files(&args, cli.require_params_file.as_deref()) {
        eprintln!("contact_sim_node: error: {e}");
        return 2;
    }
    if cli.list_robots {
        let scene = cli.scene.clone().unwrap_or_else(default_scene_path);
        return match load_scene(&scene) {
            Ok(s) => {
                for r in &s.model.robots {
                    println!("{}", r.name);
                }
                0
            }
            Err(e) => {
                eprintln!("contact_sim_node: error: {e}");
                1
            }
        };
    }
    if let Some(robot) = &cli.print_description {
        return match print_robot_description(cli.scene.clone().unwrap_or_else(default_scene_path).as_path(), robot) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("contact_sim_node: error: {e:#}");
                1
            }
        };
    }
    crate::rt::stop_signal::install();
    crate::rt::stop_signal::stop_with_parent();
    match run_node(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("contact_sim_node: error: {e:#}");
            1
        }
    }
}

/// Every parameter file of the command line can be read: `required` (`--require-params-file`)
/// and each `--params-file FILE` of `--ros-args`. The error names the file and the option
/// (rcl's own error would come after a line of its own and a source location).
fn check_params_files(args: &[String], required: Option<&Path>) -> Result<()> {
    let mut files: Vec<(&Path, &str)> = required.map(|p| (p, "--require-params-file, the launch argument params_file")).into_iter().collect();
    let mut in_ros = false;
    for (a, next) in args.iter().zip(args.iter().skip(1).map(Some).chain([None])) {
        match a.as_str() {
            "--ros-args" => in_ros = true,
            "--" => in_ros = false,
            "--params-file" if in_ros => {
                let p = next.ok_or_else(|| anyhow!("--params-file needs a path"))?;
                files.push((Path::new(p), "--ros-args --params-file"));
            }
            _ => {}
        }
    }
    for (path, option) in files {
        let open = std::fs::metadata(path).and_then(|m| if m.is_file() { std::fs::File::open(path).map(|_| ()) } else { Err(std::io::Error::other("not a file")) });
        if let Err(e) = open {
            bail!("parameter file {} ({option}): {e}", path.display());
        }
    }
    Ok(())
}

/// `--print-robot-description [ROBOT]`: writes the URDF of `robot` (empty: the scene's only
/// robot) in the scene `scene` to stdout.
fn print_robot_description(scene: &Path, robot: &str) -> Result<()> {
    let scene = load_scene(scene).map_err(|e| anyhow!("{e}"))?;
    let robots = super::graph::RobotDescription::from_model(&scene.model).map_err(|e| anyhow!(e))?;
    let names = || robots.iter().map(|r| r.robot.as_str()).collect::<Vec<_>>().join(", ");
    let r = if robot.is_empty() {
        match robots.len() {
            0 => bail!("the scene has no robot"),
            1 => &robots[0],
            _ => bail!("the scene has several robots ({}): name one (--print-robot-description ROBOT)", names()),
        }
    } else {
        robots.iter().find(|r| r.robot == robot).ok_or_else(|| anyhow!("no robot '{robot}' in the scene (robots: {})", names()))?
    };
    print!("{}", r.urdf);
    Ok(())
}

/// Runs the node: creates it, sets up the simulation and the parameters ([`setup`]), the
/// publishers, robot descriptions and TF ([`create_publishers`]), the bag recording
/// ([`start_bag_recording`]), the subscriptions and services ([`start_frontend`]), starts the
/// publisher and real-time threads ([`start_threads`]) and spins until SIGINT / SIGTERM
/// ([`spin`]).
fn run_node(cli: CliArgs) -> Result<()> {
    let (node, logger) = create_node()?;
    let Some((mut node_setup, inputs, rt)) = setup(&cli, node, logger)? else {
        // --list-parameters: the names are printed
        return Ok(());
    };
    let (publishers, robot_topics) = create_publishers(&mut node_setup)?;
    let bag = start_bag_recording(&node_setup, &robot_topics)?;
    let frontend = start_frontend(&mut node_setup, inputs, bag.commands)?;
    let threads = start_threads(&node_setup, rt, publishers, bag.sample)?;
    spin(&mut node_setup, frontend, threads, bag.recorder)
}

/// Creates the r2r context and the node, and the `/rosout` publisher. Returns the node and its
/// logger name.
fn create_node() -> Result<(r2r::Node, String)> {
    // r2r panics (instead of returning an error) when rcl rejects the command line, e.g. a
    // missing --params-file: turn that into an error message
    let prev_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let ctx = std::panic::catch_unwind(r2r::Context::create);
    std::panic::set_hook(prev_hook);
    let ctx = match ctx {
        Ok(c) => c.context("rcl init")?,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "unknown error".into());
            bail!("rcl init failed: {msg}");
        }
    };
    let mut node = r2r::Node::create(ctx, NODE_NAME, "").context("creating the node")?;
    let logger = node.logger().to_string();
    super::rosout::init(&mut node).context("the /rosout publisher")?;
    Ok((node, logger))
}

/// What the start-up stages share: the node, the scene, the configuration and the handles to
/// the real-time loop. Lives until the node shuts down.
struct NodeSetup {
    /// The r2r node (topics, services, parameters; spun by the ROS thread).
    node: r2r::Node,
    /// The node's logger name.
    logger: String,
    /// The scene file (`--scene`, the `scene` parameter or the default).
    scene_path: PathBuf,
    /// The loaded scene.
    scene: crate::config::Scene,
    /// The solver (the `solver` parameter, or the scene's).
    solver: SolverConfig,
    /// Joint slots, floating bases, sensors and contact wrench links of the model.
    layout: JointLayout,
    /// The parameters (validated, locked after start-up for read-only ones).
    store: Arc<Mutex<ParamStore>>,
    /// The typed configuration read from the parameters.
    cfg: NodeConfig,
    /// The command groups (`<group>/commands`).
    groups: Vec<CommandGroup>,
    /// The real-time loop's queues.
    shared: Arc<RtShared>,
    /// The ROS side's counters (written by the frontend, read by the diagnostics).
    front: Arc<FrontCounters>,
    /// The QoS of the topics and services that are not latched (the default profile).
    qos: QosProfile,
}

/// The parameter services' future (spawned on the ROS thread's executor).
type ParamHandler = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;
/// The stream of accepted parameter changes `(name, new value)`.
type ParamEvents = std::pin::Pin<Box<dyn futures::Stream<Item = (String, ParameterValue)>>>;

/// What [`setup`] hands to [`start_frontend`] (moved into it).
struct FrontendInputs {
    /// The command validator (limits, policy, name → slot).
    validator: CommandValidator,
    /// The parameter services.
    param_handler: ParamHandler,
    /// The accepted parameter changes, forwarded to where they act.
    param_events: ParamEvents,
}

/// Start-up before any topic: the scene and the solver, the parameters (with their services
/// and `/parameter_events`), the initial gains, the command groups and the real-time loop (not
/// started). `None` after `--list-parameters` (names printed, nothing else to do).
fn setup(cli: &CliArgs, mut node: r2r::Node, logger: String) -> Result<Option<(NodeSetup, FrontendInputs, RtLoop)>> {
    // ---- scene and solver ---------------------------------------------------------------
    let scene_path = match (&cli.scene, param_string(&node, "scene").filter(|s| !s.is_empty())) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => default_scene_path(),
    };
    if let Ok(mut p) = node.params.lock() {
        p.insert("scene".into(), r2r::Parameter::new(ParameterValue::String(scene_path.display().to_string())));
    }
    let scene = load_scene(&scene_path).map_err(|e| anyhow!("{e}"))?;
    for w in &scene.warnings {
        eprintln!("contact_sim_node: warning: {w}");
    }
    let solver_kind = param_string(&node, "solver").unwrap_or_default();
    let solver = scene.solver_for(&solver_kind).map_err(|e| anyhow!("parameter solver: {e}"))?;
    let mut sim = Simulation::from_scene(&scene, Some(&solver));
    let layout = JointLayout::new(&sim.model);
    let (iters, tol) = solver_settings(&solver);

    // ---- parameters ---------------------------------------------------------------------
    let group_names = param_strings(&node, "command_groups");
    let mut params = ParamStore::new(&layout, iters, tol, &group_names);
    // without command_groups: one group per robot, its joint order published as read-only
    // groups.<robot>.joints (forward_command_controller's `joints`) and groups.<robot>.interface
    let default_groups = if group_names.is_empty() { default_command_groups(&layout) } else { vec![] };
    for g in &default_groups {
        params.declare_default_group(&g.name, group_joint_names(&layout, g), g.interface.name());
    }
    let store = Arc::new(Mutex::new(params));
    if cli.list_parameters {
        for n in store.lock().map_err(|_| anyhow!("poisoned"))?.names() {
            println!("{n}");
        }
        return Ok(None);
    }
    // the standard parameter services with full descriptors, and /parameter_events
    let (param_handler, param_events) = super::param_services::start(&mut node, store.clone()).map_err(|e| anyhow!("invalid parameters: {e:#}"))?;
    let cfg = {
        let mut s = store.lock().map_err(|_| anyhow!("poisoned"))?;
        if !s.unknown.is_empty() {
            crate::ros_warn!(&logger, "ignoring parameters this node does not declare: {}", s.unknown.join(", "));
        }
        s.lock();
        NodeConfig::from_store(&s)?
    };
    initial_gains(&mut sim, &layout, &store)?;

    // ---- command groups -----------------------------------------------------------------
    let validator = CommandValidator::new(&layout, cfg.limit_policy);
    let groups = command_groups(&layout, &store, &group_names, default_groups, &validator)?;

    // ---- the RT loop --------------------------------------------------------------------
    let rt_cfg = cfg.rt.clone();
    let mut rt = RtLoop::new(sim, rt_cfg);
    rt.set_failure_policy(cfg.on_failure);
    let shared = rt.shared().clone();
    let front = Arc::new(FrontCounters::default());

    let inputs = FrontendInputs { validator, param_handler: Box::pin(param_handler), param_events: Box::pin(param_events) };
    let setup = NodeSetup { node, logger, scene_path, scene, solver, layout, store, cfg, groups, shared, front, qos: QosProfile::default() };
    Ok(Some((setup, inputs, rt)))
}

/// Writes the initial gains and solver settings of the parameters into the simulation (before
/// the RT thread owns it).
fn initial_gains(sim: &mut Simulation, layout: &JointLayout, store: &Mutex<ParamStore>) -> Result<()> {
    let s = store.lock().map_err(|_| anyhow!("poisoned"))?;
    for j in &layout.joints {
        let v = j.v_index;
        sim.commands.mode[v] = match sim.commands.mode[v] {
            ControlMode::Position { .. } => ControlMode::Position { kp: s.f64(&format!("gains.{}.kp", j.name)), kd: s.f64(&format!("gains.{}.kd", j.name)) },
            ControlMode::Velocity { .. } => ControlMode::Velocity { kd: s.f64(&format!("gains.{}.kd", j.name)) },
            m => m,
        };
    }
    let it = s.i64("solver_max_iterations").clamp(1, u32::MAX as i64) as u32;
    let tol = s.f64("solver_tolerance");
    sim.workspace.solver.set_max_iterations(it);
    sim.workspace.solver.set_tolerance(tol);
    Ok(())
}

/// The joint names of a group, in the order of its array.
fn group_joint_names(layout: &JointLayout, g: &CommandGroup) -> Vec<String> {
    g.slots.iter().map(|&s| layout.joints[s].name.clone()).collect()
}

/// The default command groups: one per robot with commanded joints (mimic followers left out),
/// named after it; the interface its joints' common control mode, else position.
fn default_command_groups(layout: &JointLayout) -> Vec<CommandGroup> {
    let mut groups = Vec::new();
    for r in &layout.robots {
        if r.slots.is_empty() {
            continue;
        }
        let modes: Vec<ControlMode> = r.slots.iter().map(|&s| layout.joints[s].mode).collect();
        let interface = if modes.iter().all(|m| matches!(m, ControlMode::Effort)) {
            GroupInterface::Effort
        } else if modes.iter().all(|m| matches!(m, ControlMode::Velocity { .. })) {
            GroupInterface::Velocity
        } else {
            GroupInterface::Position
        };
        groups.push(CommandGroup { name: r.robot.clone(), slots: r.slots.clone(), interface });
    }
    groups
}

/// The command groups: the `command_groups` parameter's (`groups.<g>.joints`,
/// `groups.<g>.interface`), or without it `default_groups` (one per robot), whose
/// `groups.<robot>.*` parameters only report them: setting them is an error naming the way to
/// configure a group.
fn command_groups(layout: &JointLayout, store: &Mutex<ParamStore>, group_names: &[String], default_groups: Vec<CommandGroup>, validator: &CommandValidator) -> Result<Vec<CommandGroup>> {
    let s = store.lock().map_err(|_| anyhow!("poisoned"))?;
    if group_names.is_empty() {
        for g in &default_groups {
            let (joints, interface) = (group_joint_names(layout, g), g.interface.name());
            let (pj, pi) = (format!("groups.{}.joints", g.name), format!("groups.{}.interface", g.name));
            if s.strings(&pj) != joints || s.str(&pi) != interface {
                bail!(
                    "parameters {pj} / {pi}: read-only, they report the default group '{}' ({interface}: {}); to configure a group list it in command_groups (command_groups: [{}])",
                    g.name,
                    joints.join(", "),
                    g.name
                );
            }
        }
        return Ok(default_groups);
    }
    let mut groups = Vec::new();
    for g in group_names {
        let joints = s.strings(&format!("groups.{g}.joints"));
        let interface = GroupInterface::parse(s.str(&format!("groups.{g}.interface"))).unwrap_or(GroupInterface::Position);
        let grp = validator.make_group(g, &joints, interface).map_err(|e| anyhow!("command group '{g}' (groups.{g}.joints): {e}"))?;
        groups.push(grp);
    }
    Ok(groups)
}

/// The `tf` publisher with its reusable message and the sample base index of each transform.
type TfPub = (r2r::Publisher<TFMessage>, TFMessage, Vec<usize>);

/// The publishers of the samples (moved into the publisher thread).
struct Publishers {
    /// `joint_states`.
    joint_states: r2r::Publisher<JointState>,
    /// Per floating base: `odom` (or `<robot>/odom`) with its reusable message.
    odom: Vec<(r2r::Publisher<Odometry>, Odometry)>,
    /// `/clock` (sim_time and lockstep).
    clock: Option<r2r::Publisher<Clock>>,
    /// `diagnostics`.
    diagnostics: r2r::Publisher<DiagnosticArray>,
    /// Per sensor: (`<sensor>/wrench`, `<sensor>/wrench_ideal`).
    sensor_pubs: Vec<(WrenchPub, WrenchPub)>,
    /// Per contact wrench link: (world axes, link axes).
    wrench_pubs: Vec<(WrenchPub, WrenchPub)>,
    /// `contact_markers` (when `contact_markers_rate_hz` > 0).
    markers: Option<r2r::Publisher<MarkerArray>>,
    /// `tf` (floating bases).
    tf: Option<TfPub>,
}

/// The robots and their latched topics (published once at start-up, kept alive with the node).
struct RobotTopics {
    /// The robots' descriptions.
    robots: Vec<RobotDescription>,
    /// The stamp of the latched messages.
    start_stamp: r2r::builtin_interfaces::msg::Time,
    /// `robot_description` per robot.
    _description_pubs: Vec<r2r::Publisher<StringMsg>>,
    /// `tf_static` (when there are fixed transforms).
    _static_tf_pub: Option<r2r::Publisher<TFMessage>>,
}

/// Creates the sample publishers, then publishes the robot descriptions and `tf_static`
/// ([`publish_robot_descriptions`]) and creates `tf`.
fn create_publishers(s: &mut NodeSetup) -> Result<(Publishers, RobotTopics)> {
    let NodeSetup { ref mut node, ref cfg, ref layout, ref qos, .. } = *s;
    // ---- publishers ---------------------------------------------------------------------
    let joint_states = node.create_publisher::<JointState>("joint_states", qos.clone())?;
    let mut odom = Vec::new();
    for b in &layout.bases {
        let topic = if layout.bases.len() == 1 { "odom".to_string() } else { format!("{}/odom", b.robot) };
        let p = node.create_publisher::<Odometry>(&topic, qos.clone()).with_context(|| format!("odometry topic '{topic}'"))?;
        let mut msg = Odometry { child_frame_id: b.root_link.clone(), ..Default::default() };
        msg.header.frame_id = cfg.odom_frame.clone();
        odom.push((p, msg));
    }
    let clock = if cfg.rt.time_mode != TimeMode::Realtime { Some(node.create_publisher::<Clock>("/clock", qos.clone())?) } else { None };
    let diagnostics = node.create_publisher::<DiagnosticArray>("diagnostics", qos.clone())?;
    let mut sensor_pubs = Vec::new();
    for sensor in &layout.sensors {
        let mut make = |suffix: &str| -> Result<(r2r::Publisher<WrenchStamped>, WrenchStamped)> {
            let topic = format!("{}/{suffix}", sensor.name);
            let p = node.create_publisher::<WrenchStamped>(&topic, qos.clone()).with_context(|| format!("F/T sensor topic '{topic}'"))?;
            let mut msg = WrenchStamped::default();
            msg.header.frame_id = sensor.frame_id.clone();
            Ok((p, msg))
        };
        sensor_pubs.push((make("wrench")?, make("wrench_ideal")?));
    }
    let mut wrench_pubs = Vec::new();
    for link in &layout.wrench_links {
        let mut make = |topic: String, frame: &str| -> Result<(r2r::Publisher<WrenchStamped>, WrenchStamped)> {
            let p = node.create_publisher::<WrenchStamped>(&topic, qos.clone()).with_context(|| format!("contact wrench topic '{topic}'"))?;
            let mut msg = WrenchStamped::default();
            msg.header.frame_id = frame.to_string();
            Ok((p, msg))
        };
        wrench_pubs.push((make(format!("contact_wrenches/{}", link.name), &cfg.odom_frame)?, make(format!("contact_wrenches/{}/local", link.name), &link.name)?));
    }
    let markers = if cfg.contact_markers_rate_hz > 0.0 { Some(node.create_publisher::<MarkerArray>("contact_markers", qos.clone())?) } else { None };

    let (robot_topics, tf) = publish_robot_descriptions(s)?;
    Ok((Publishers { joint_states, odom, clock, diagnostics, sensor_pubs, wrench_pubs, markers, tf }, robot_topics))
}

/// Publishes `robot_description` per robot and `tf_static` (latched), and creates the `tf`
/// publisher of the floating bases.
fn publish_robot_descriptions(s: &mut NodeSetup) -> Result<(RobotTopics, Option<TfPub>)> {
    let NodeSetup { ref mut node, ref cfg, ref scene, ref qos, .. } = *s;
    // ---- robot_description and TF ---------------------------------------------------------
    // latched: reliable, transient local, depth 1 (as robot_state_publisher and tf2's static
    // broadcaster); published once here, kept alive with the node
    let latched = QosProfile::default().keep_last(1).reliable().transient_local();
    let robots = RobotDescription::from_model(&scene.model).map_err(|e| anyhow!(e))?;
    let mut description_pubs = Vec::new();
    for r in &robots {
        let topic = graph::description_topic(&r.robot, robots.len());
        let p = node.create_publisher::<StringMsg>(&topic, latched.clone()).with_context(|| format!("robot description topic '{topic}'"))?;
        p.publish(&StringMsg { data: r.urdf.clone() }).with_context(|| format!("publishing {topic}"))?;
        description_pubs.push(p);
    }
    let start_stamp = match cfg.rt.time_mode {
        TimeMode::Realtime => convert::time_from_ns(realtime_ns()),
        _ => convert::time_from_s(0.0),
    };
    let static_tf = graph::static_transforms(&robots, &cfg.odom_frame, &start_stamp);
    let _static_tf_pub = if static_tf.transforms.is_empty() {
        None
    } else {
        let p = node.create_publisher::<TFMessage>("tf_static", latched.clone()).context("tf_static")?;
        p.publish(&static_tf).context("publishing tf_static")?;
        Some(p)
    };
    let tf = match graph::dynamic_transforms(&robots, &cfg.odom_frame) {
        Some((msg, bases)) => Some((node.create_publisher::<TFMessage>("tf", qos.clone()).context("tf")?, msg, bases)),
        None => None,
    };
    Ok((RobotTopics { robots, start_stamp, _description_pubs: description_pubs, _static_tf_pub }, tf))
}

/// The bag recording (`record_bag`; all `None` without it).
struct BagRecording {
    /// The bag directory and its recorder (finished at shutdown).
    recorder: Option<(PathBuf, crate::bag::BagRecorder)>,
    /// The publisher thread's recording of the samples.
    sample: Option<(crate::bag::topics::SampleTopics, crate::bag::RecordHandle)>,
    /// The ROS thread's recording of the received commands.
    commands: Option<CommandRecording>,
}

/// Starts the bag recording (`record_bag`): registers the topics, records the latched messages.
fn start_bag_recording(s: &NodeSetup, robot_topics: &RobotTopics) -> Result<BagRecording> {
    let NodeSetup { node, logger, cfg, layout, groups, .. } = s;
    let RobotTopics { robots, start_stamp, .. } = robot_topics;
    // ---- bag recording (record_bag) -------------------------------------------------------
    let mut bag_recorder = None;
    let mut bag_sample = None;
    let mut bag_commands = None;
    if !cfg.record_bag.is_empty() {
        let dir = PathBuf::from(&cfg.record_bag);
        let rec_opts = crate::bag::RecorderOptions {
            queue_limit_bytes: cfg.record_bag_queue_bytes,
            writer: crate::bag::WriterOptions { max_file_bytes: cfg.record_bag_max_file_bytes, ..Default::default() },
            ..Default::default()
        };
        let mut rec = crate::bag::BagRecorder::start(&dir, &rec_opts).map_err(|e| anyhow!("parameter record_bag: {e}"))?;
        let opts = crate::bag::topics::SampleTopicOptions {
            namespace: node.namespace().unwrap_or_else(|_| "/".into()),
            clock: cfg.rt.time_mode != TimeMode::Realtime,
            odom_frame: cfg.odom_frame.clone(),
            groups: groups.iter().map(|g| g.name.clone()).collect(),
            tf: true,
            contact_markers: cfg.contact_markers_rate_hz > 0.0,
        };
        let topics = crate::bag::topics::SampleTopics::register(&mut rec, layout, &opts);
        // the latched messages, once at the start: robot_description per robot, tf_static
        let start_ns = (start_stamp.sec as i64) * 1_000_000_000 + start_stamp.nanosec as i64;
        let latched_msgs = crate::bag::robots::latched_messages(robots, &cfg.odom_frame, start_ns);
        crate::bag::topics::record_latched(&mut rec, &opts.namespace, start_ns, latched_msgs);
        bag_commands = Some(CommandRecording { handle: rec.handle(), joint_commands: topics.joint_commands, joint_trajectory: topics.joint_trajectory, groups: topics.group_commands.clone() });
        bag_sample = Some((topics, rec.handle()));
        crate::ros_info!(logger, "recording a rosbag2 (MCAP) bag into {}", dir.display());
        bag_recorder = Some((dir, rec));
    }
    Ok(BagRecording { recorder: bag_recorder, sample: bag_sample, commands: bag_commands })
}

/// The ROS thread's command handling and the executor of its subscriptions and services.
struct FrontendTasks {
    /// The executor (run after each spin).
    pool: LocalPool,
    /// The command handling (validation, control requests, pending service responses).
    frontend: Rc<RefCell<Frontend>>,
}

/// Subscribes to the command topics, creates the services and spawns their handlers, with the
/// parameter services', on the ROS thread's executor.
fn start_frontend(s: &mut NodeSetup, inputs: FrontendInputs, bag_commands: Option<CommandRecording>) -> Result<FrontendTasks> {
    let NodeSetup { ref mut node, ref logger, ref layout, ref store, ref cfg, ref groups, ref shared, ref front, ref qos, .. } = *s;
    let FrontendInputs { validator, param_handler, param_events } = inputs;
    // ---- subscriptions and services ------------------------------------------------------
    let js_stream = node.subscribe::<JointState>("joint_commands", qos.clone())?;
    let traj_stream = node.subscribe::<JointTrajectory>("joint_trajectory", qos.clone())?;
    let mut group_streams = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let topic = format!("{}/commands", g.name);
        match node.subscribe::<Float64MultiArray>(&topic, qos.clone()) {
            Ok(s) => group_streams.push((i, s)),
            Err(e) => crate::ros_warn!(logger, "command group '{}': cannot subscribe to '{topic}' ({e}); group disabled", g.name),
        }
    }
    let reset_srv = node.create_service::<Trigger::Service>("~/reset", qos.clone())?;
    let pause_srv = node.create_service::<SetBool::Service>("~/pause", qos.clone())?;
    let step_srv = node.create_service::<Trigger::Service>("~/step", qos.clone())?;

    let n = layout.len();
    let frontend = Rc::new(RefCell::new(Frontend {
        shared: shared.clone(),
        validator,
        groups: groups.clone(),
        counters: front.clone(),
        scratch_cmd: JointCommand::new(n),
        scratch_traj: TrajectoryCommand::new(n, cfg.rt.max_trajectory_points),
        command_seq: 0,
        control_seq: 0,
        pending: Vec::new(),
        throttle: Throttle { last: None, suppressed: 0 },
        paused: cfg.rt.start_paused,
        mode: cfg.rt.time_mode,
        logger: logger.clone(),
        store: store.clone(),
        bag: bag_commands,
        mimic_warned: vec![false; n],
        group_joints: groups.iter().map(|g| format!("the {} values are, in order: {}", g.slots.len(), g.slots.iter().map(|&s| layout.joints[s].name.as_str()).collect::<Vec<_>>().join(", "))).collect(),
    }));

    let pool = LocalPool::new();
    let spawner = pool.spawner();
    spawner.spawn_local(param_handler).map_err(|e| anyhow!("{e:?}"))?;
    {
        let f = frontend.clone();
        spawner
            .spawn_local(param_events.for_each(move |(name, _)| {
                f.borrow_mut().on_param(&name);
                future::ready(())
            }))
            .map_err(|e| anyhow!("{e:?}"))?;
    }
    {
        let f = frontend.clone();
        spawner
            .spawn_local(js_stream.for_each(move |m| {
                f.borrow_mut().on_joint_state(&m);
                future::ready(())
            }))
            .map_err(|e| anyhow!("{e:?}"))?;
    }
    {
        let f = frontend.clone();
        spawner
            .spawn_local(traj_stream.for_each(move |m| {
                f.borrow_mut().on_trajectory(&m);
                future::ready(())
            }))
            .map_err(|e| anyhow!("{e:?}"))?;
    }
    for (i, s) in group_streams {
        let f = frontend.clone();
        spawner
            .spawn_local(s.for_each(move |m| {
                f.borrow_mut().on_group(i, &m);
                future::ready(())
            }))
            .map_err(|e| anyhow!("{e:?}"))?;
    }
    serve_reset(&spawner, &frontend, logger, reset_srv)?;
    serve_pause(&spawner, &frontend, logger, pause_srv)?;
    serve_step(&spawner, &frontend, logger, step_srv)?;
    Ok(FrontendTasks { pool, frontend })
}

/// Spawns the `~/reset` handler: a reset request, answered once the RT thread acknowledges it.
fn serve_reset(spawner: &LocalSpawner, frontend: &Rc<RefCell<Frontend>>, logger: &str, reset_srv: impl futures::Stream<Item = r2r::ServiceRequest<Trigger::Service>> + 'static) -> Result<()> {
    let f = frontend.clone();
    let log = logger.to_string();
    spawner
        .spawn_local(reset_srv.for_each(move |req| {
            let log = log.clone();
            f.borrow_mut().control_then(
                ControlRequest::Reset,
                Box::new(move |ok| {
                    let message = if ok { "reset to the initial state".to_string() } else { "the simulation loop did not acknowledge the reset".to_string() };
                    if req.respond(Trigger::Response { success: ok, message }).is_err() {
                        crate::ros_warn!(&log, "could not respond to ~/reset");
                    }
                }),
            );
            future::ready(())
        }))
        .map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// Spawns the `~/pause` handler: pauses (`data` true) or resumes, answered once the RT thread
/// acknowledges it.
fn serve_pause(spawner: &LocalSpawner, frontend: &Rc<RefCell<Frontend>>, logger: &str, pause_srv: impl futures::Stream<Item = r2r::ServiceRequest<SetBool::Service>> + 'static) -> Result<()> {
    let f = frontend.clone();
    let log = logger.to_string();
    spawner
        .spawn_local(pause_srv.for_each(move |req| {
            let pause = req.message.data;
            let log = log.clone();
            let mut fe = f.borrow_mut();
            fe.paused = pause;
            fe.control_then(
                ControlRequest::Pause(pause),
                Box::new(move |ok| {
                    let message = match (ok, pause) {
                        (true, true) => "paused".to_string(),
                        (true, false) => "running".to_string(),
                        (false, _) => "the simulation loop did not acknowledge".to_string(),
                    };
                    if req.respond(SetBool::Response { success: ok, message }).is_err() {
                        crate::ros_warn!(&log, "could not respond to ~/pause");
                    }
                }),
            );
            future::ready(())
        }))
        .map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// Spawns the `~/step` handler: one step while paused or in lockstep (refused while running),
/// answered once the RT thread acknowledges it.
fn serve_step(spawner: &LocalSpawner, frontend: &Rc<RefCell<Frontend>>, logger: &str, step_srv: impl futures::Stream<Item = r2r::ServiceRequest<Trigger::Service>> + 'static) -> Result<()> {
    let f = frontend.clone();
    let log = logger.to_string();
    spawner
        .spawn_local(step_srv.for_each(move |req| {
            let log = log.clone();
            let mut fe = f.borrow_mut();
            if !fe.paused && fe.mode != TimeMode::Lockstep {
                let r = Trigger::Response { success: false, message: "the simulation is running: call ~/pause with data=true first".into() };
                if req.respond(r).is_err() {
                    crate::ros_warn!(&log, "could not respond to ~/step");
                }
            } else {
                fe.control_then(
                    ControlRequest::Step(1),
                    Box::new(move |ok| {
                        let message = if ok { "stepped once".to_string() } else { "the simulation loop did not acknowledge".to_string() };
                        if req.respond(Trigger::Response { success: ok, message }).is_err() {
                            crate::ros_warn!(&log, "could not respond to ~/step");
                        }
                    }),
                );
            }
            future::ready(())
        }))
        .map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// The running threads (stopped by [`spin`] at shutdown).
struct Threads {
    /// The real-time thread.
    rt_handle: RtHandle,
    /// The publisher thread.
    publisher: std::thread::JoinHandle<()>,
    /// Tells the publisher thread to stop.
    pub_stop: Arc<AtomicBool>,
}

/// Starts the publisher thread and the real-time thread (woken / waking it after each sample),
/// logs the real-time scheduling and the start-up summary ([`log_startup`]).
fn start_threads(s: &NodeSetup, rt: RtLoop, publishers: Publishers, bag_sample: Option<(crate::bag::topics::SampleTopics, crate::bag::RecordHandle)>) -> Result<Threads> {
    let NodeSetup { logger, scene, solver, layout, cfg, shared, front, .. } = s;
    let Publishers { joint_states, odom, clock, diagnostics, sensor_pubs, wrench_pubs, markers, tf } = publishers;
    // ---- threads ------------------------------------------------------------------------
    let pub_stop = Arc::new(AtomicBool::new(false));
    let sched_desc = Arc::new(Mutex::new(String::from("starting")));
    let pctx = PublisherCtx {
        shared: shared.clone(),
        mode: cfg.rt.time_mode,
        joint_names: layout.joints.iter().map(|j| j.name.clone()).collect(),
        joint_states,
        odom,
        clock,
        diagnostics,
        sensor_pubs,
        wrench_pubs,
        markers,
        tf,
        marker_period: Duration::from_secs_f64(if cfg.contact_markers_rate_hz > 0.0 { 1.0 / cfg.contact_markers_rate_hz } else { 1.0 }),
        marker_scale: cfg.contact_marker_scale,
        world_frame: cfg.odom_frame.clone(),
        diag_period: Duration::from_secs_f64(1.0 / cfg.diagnostics_rate_hz),
        front: front.clone(),
        sched: sched_desc.clone(),
        hardware_id: format!("contact_sim scene '{}'", scene.name),
        solver_kind: solver.kind().to_string(),
        logger: logger.clone(),
        stop: pub_stop.clone(),
        bag: bag_sample,
        on_failure: cfg.on_failure,
    };
    let publisher = std::thread::Builder::new().name("contact_sim_pub".into()).spawn(move || publisher_loop(pctx))?;
    let mut rt = rt;
    rt.set_notify(publisher.thread().clone());
    let (steps_per_cycle, period_ns) = rt.realtime_cycle();
    let rt_handle = rt.spawn()?;
    match rt_handle.sched_report(Duration::from_secs(10)) {
        Some(r) => {
            let desc = format!("{}{}", r.policy.describe(), if r.memory_locked { ", memory locked" } else { "" });
            if let Ok(mut d) = sched_desc.lock() {
                *d = desc.clone();
            }
            if let Some(w) = r.warning {
                crate::ros_warn!(logger, "{w}");
            } else {
                crate::ros_info!(logger, "real-time loop: {desc}");
            }
            if cfg.ros_thread_priority > 0 {
                match crate::rt::sched::elevate_other_threads(cfg.ros_thread_priority, r.thread_id) {
                    Ok(n) => crate::ros_info!(logger, "{n} ROS / DDS threads at SCHED_FIFO priority {}", cfg.ros_thread_priority),
                    Err(e) => crate::ros_warn!(logger, "ros_thread_priority {} not applied ({e}); the ROS / DDS threads keep normal scheduling", cfg.ros_thread_priority),
                }
            }
        }
        None => crate::ros_warn!(logger, "the real-time thread did not report its scheduling"),
    }
    log_startup(s, steps_per_cycle, period_ns);
    Ok(Threads { rt_handle, publisher, pub_stop })
}

/// Logs the start-up summary (scene, solver, time mode and rate, command groups) and warns about
/// `use_sim_time` in realtime mode and about realtime mode in a debug build.
fn log_startup(s: &NodeSetup, steps_per_cycle: u64, period_ns: i64) {
    let NodeSetup { logger, scene_path, scene, solver, layout, store, cfg, groups, .. } = s;
    let n = layout.len();
    let rate = match cfg.rt.time_mode {
        TimeMode::Realtime => format!("{:.1} Hz ({} step(s) of {} ms per cycle)", 1e9 / period_ns as f64, steps_per_cycle, scene.model.timestep_s * 1e3),
        TimeMode::SimTime => format!("real-time factor {}", if cfg.rt.real_time_factor > 0.0 { cfg.rt.real_time_factor.to_string() } else { "unlimited".into() }),
        TimeMode::Lockstep => "one step per command".into(),
    };
    crate::ros_info!(
        logger,
        "scene '{}' ({}): {} joints, {} floating base(s), solver {} (solver_tolerance in {}); {} mode, {}; /joint_states at {} Hz; command groups: {}",
        scene.name,
        scene_path.display(),
        n,
        layout.bases.len(),
        solver.describe(),
        solver.tolerance().unit,
        cfg.rt.time_mode.name(),
        rate,
        cfg.rt.publish_rate_hz,
        if groups.is_empty() { "none".to_string() } else { groups.iter().map(|g| format!("{}/commands ({} {} values: groups.{}.joints)", g.name, g.slots.len(), g.interface.name(), g.name)).collect::<Vec<_>>().join(", ") }
    );

    let use_sim_time = store.lock().map(|s| s.bool("use_sim_time")).unwrap_or(false);
    if use_sim_time && cfg.rt.time_mode == TimeMode::Realtime {
        crate::ros_warn!(logger, "use_sim_time is true but time_mode is realtime: this node publishes no /clock and stamps its messages with the wall clock; use time_mode:=sim_time (or lockstep) for simulated time");
    }
    if cfg!(debug_assertions) && cfg.rt.time_mode == TimeMode::Realtime {
        crate::ros_warn!(logger, "this is a debug build: steps are tens of times slower than in release and realtime mode will overrun on larger scenes (cargo build --release --features ros; colcon build --cargo-args --release --features ros)");
    }
}

/// Spins the node and runs the frontend's executor until SIGINT / SIGTERM or until the RT thread
/// stops; then stops the threads, answers the services still waiting, closes the bag and shuts
/// `/rosout` down.
fn spin(s: &mut NodeSetup, frontend: FrontendTasks, threads: Threads, bag_recorder: Option<(PathBuf, crate::bag::BagRecorder)>) -> Result<()> {
    let NodeSetup { ref mut node, ref logger, .. } = *s;
    let FrontendTasks { mut pool, frontend } = frontend;
    let Threads { rt_handle, publisher, pub_stop } = threads;
    // ---- spin ---------------------------------------------------------------------------
    let mut failure = None;
    while !crate::rt::stop_signal::requested() {
        node.spin_once(Duration::from_millis(5));
        pool.run_until_stalled();
        frontend.borrow_mut().poll_pending();
        if rt_handle.is_finished() {
            failure = Some(anyhow!("the real-time thread stopped unexpectedly"));
            break;
        }
    }
    crate::ros_info!(logger, "shutting down");
    let exit = rt_handle.stop();
    pub_stop.store(true, Ordering::Release);
    publisher.thread().unpark();
    let _ = publisher.join();
    // answer services still waiting
    for p in frontend.borrow_mut().pending.drain(..) {
        (p.respond)(false);
    }
    if let Some((dir, rec)) = bag_recorder {
        match rec.finish() {
            Ok(s) => crate::ros_info!(logger, "bag {} closed: {} messages on {} topics, {} dropped (queue over its budget; peak {:.1} MB)", dir.display(), s.bag.messages, s.bag.topics.len(), s.dropped, s.peak_queued_bytes as f64 / 1e6),
            Err(e) => crate::ros_error!(logger, "bag {}: {e}", dir.display()),
        }
    }
    if let Some(x) = exit {
        crate::ros_info!(logger, "stopped after {} steps ({} overruns, {} watchdog trips)", x.counters.steps, x.counters.overruns, x.counters.watchdog_trips);
    }
    super::rosout::shutdown();
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The typed node configuration, read from the parameters at start-up.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The real-time loop's configuration.
    pub rt: RtConfig,
    /// Limit policy.
    pub limit_policy: LimitPolicy,
    /// Diagnostics rate (Hz).
    pub diagnostics_rate_hz: f64,
    /// Odometry frame id (also the world frame of contact wrenches and markers).
    pub odom_frame: String,
    /// Contact marker rate (Hz, wall clock; 0 = off).
    pub contact_markers_rate_hz: f64,
    /// Contact force arrow length (m/N).
    pub contact_marker_scale: f64,
    /// SCHED_FIFO priority of the non-RT threads (0 = normal).
    pub ros_thread_priority: i32,
    /// Bag directory to record into (empty = no recording).
    pub record_bag: String,
    /// The bag queue's memory budget (bytes).
    pub record_bag_queue_bytes: usize,
    /// Split the bag after this many bytes of messages (`None` = one file).
    pub record_bag_max_file_bytes: Option<u64>,
    /// What the loop does after a failed step (default hold: keep the last good state).
    pub on_failure: FailurePolicy,
}

impl NodeConfig {
    /// Reads the configuration from validated parameters.
    pub fn from_store(s: &ParamStore) -> Result<Self> {
        let time_mode = TimeMode::parse(s.str("time_mode")).ok_or_else(|| anyhow!("time_mode"))?;
        let sched = SchedConfig {
            policy: PolicyKind::parse(s.str("rt_policy")).unwrap_or(PolicyKind::Deadline),
            fifo_priority: s.i64("rt_priority") as i32,
            deadline_runtime_ns: (s.i64("rt_deadline_runtime_us").max(0) as u64) * 1000,
            deadline_period_ns: 0,
            lock_memory: s.bool("rt_lock_memory"),
            cpu_affinity: s.ints("rt_cpu_affinity").into_iter().map(|c| c as usize).collect(),
        };
        let rt = RtConfig {
            time_mode,
            rate_hz: s.f64("rate_hz"),
            publish_rate_hz: s.f64("publish_rate_hz"),
            real_time_factor: s.f64("real_time_factor"),
            overrun_policy: OverrunPolicy::parse(s.str("overrun_policy")).unwrap_or(OverrunPolicy::SkipAhead),
            max_catch_up_cycles: s.i64("max_catch_up_cycles").clamp(0, u32::MAX as i64) as u32,
            sched,
            watchdog: WatchdogConfig {
                timeout_s: s.f64("watchdog_timeout_s"),
                action: WatchdogAction::parse(s.str("watchdog_action")).unwrap_or(WatchdogAction::Hold),
                hold_kp: s.f64("watchdog_hold_kp"),
                hold_kd: s.f64("watchdog_hold_kd"),
                damping: s.f64("watchdog_damping"),
            },
            interpolation: Interpolation::parse(s.str("interpolation")).unwrap_or(Interpolation::Cubic),
            command_queue_size: s.i64("command_queue_size") as usize,
            trajectory_queue_size: 4,
            sample_queue_size: s.i64("sample_queue_size") as usize,
            control_queue_size: 64,
            max_trajectory_points: s.i64("max_trajectory_points") as usize,
            stats_interval_s: 1.0,
            heartbeat_s: 0.1,
            start_paused: s.bool("start_paused"),
            max_contact_points: s.i64("max_contact_points").max(0) as usize,
        };
        Ok(NodeConfig {
            rt,
            limit_policy: LimitPolicy::parse(s.str("limit_policy")).unwrap_or(LimitPolicy::Reject),
            diagnostics_rate_hz: s.f64("diagnostics_rate_hz"),
            odom_frame: s.str("odom_frame").to_string(),
            contact_markers_rate_hz: s.f64("contact_markers_rate_hz"),
            contact_marker_scale: s.f64("contact_marker_scale"),
            ros_thread_priority: s.i64("ros_thread_priority") as i32,
            record_bag: s.str("record_bag").to_string(),
            record_bag_queue_bytes: (s.i64("record_bag_queue_mb").max(1) as usize) << 20,
            record_bag_max_file_bytes: Some(s.i64("record_bag_max_file_mb")).filter(|&mb| mb > 0).map(|mb| (mb as u64) << 20),
            on_failure: s.str("on_failure").parse().unwrap_or(FailurePolicy::Hold),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cli() {
        assert_eq!(parse_cli(&a(&["x"])).unwrap(), CliArgs::default());
        let c = parse_cli(&a(&["x", "--scene", "s.yaml", "--ros-args", "-p", "time_mode:=lockstep", "--scene", "ignored"])).unwrap();
        assert_eq!(c.scene, Some(PathBuf::from("s.yaml")));
        let c = parse_cli(&a(&["x", "--ros-args", "-p", "a:=b", "--", "--scene=t.yaml"])).unwrap();
        assert_eq!(c.scene, Some(PathBuf::from("t.yaml")));
        assert!(parse_cli(&a(&["x", "--bogus"])).is_err());
        assert!(parse_cli(&a(&["x", "--scene"])).is_err());
        let c = parse_cli(&a(&["x", "--require-params-file", "p.yaml", "--ros-args", "--params-file", "p.yaml"])).unwrap();
        assert_eq!(c.require_params_file, Some(PathBuf::from("p.yaml")));
        assert!(parse_cli(&a(&["x", "--require-params-file"])).is_err());
    }

    /// A parameter file that cannot be read is an error naming the file and the option; one
    /// outside `--ros-args` is not rcl's (only `--require-params-file` is checked there).
    #[test]
    fn parameter_files_are_checked() {
        let good = concat!(env!("CARGO_MANIFEST_DIR"), "/config/contact_sim_node.params.yaml");
        assert!(check_params_files(&a(&["x", "--ros-args", "--params-file", good]), Some(Path::new(good))).is_ok());
        let e = check_params_files(&a(&["x", "--ros-args", "-p", "a:=b", "--params-file", "/no/such.yaml"]), None).unwrap_err().to_string();
        assert!(e.starts_with("parameter file /no/such.yaml (--ros-args --params-file): "), "{e}");
        let e = check_params_files(&a(&["x"]), Some(Path::new("/no/such.yaml"))).unwrap_err().to_string();
        assert!(e.starts_with("parameter file /no/such.yaml (--require-params-file, the launch argument params_file): "), "{e}");
        let e = check_params_files(&a(&["x"]), Some(Path::new(env!("CARGO_MANIFEST_DIR")))).unwrap_err().to_string();
        assert!(e.ends_with("not a file"), "a directory: {e}");
        assert!(check_params_files(&a(&["x", "--params-file", "/no/such.yaml", "--ros-args", "--", "--params-file", "/no/such.yaml"]), None).is_ok());
        assert!(check_params_files(&a(&["x", "--ros-args", "--params-file"]), None).is_err());
    }

    /// The failure line of the log and of `/diagnostics`: the count since the last report, the
    /// last failed step with its time and cause, the policy and what it did; nothing without
    /// new failures.
    #[test]
    fn failure_text_names_the_step_cause_and_policy() {
        let f = crate::sim::StepFailure { step: 812, time_s: 0.811, cause: "the state became non-finite" };
        let mut l = Latest::default();
        l.counters.failed_steps = 3;
        l.counters.first_failure = Some(f);
        l.counters.last_failure = Some(f);
        let p = Latest::default();
        let t = failure_text(&l, &p, FailurePolicy::Hold).unwrap();
        assert_eq!(t, "3 steps failed since the last report; the last: step 812 (t = 0.811000 s) failed: the state became non-finite (on_failure: hold: the last good state is kept, stepping goes on)");
        assert!(failure_text(&l, &p, FailurePolicy::Stop).unwrap().contains("on_failure: stop: stepping is paused; call ~/reset to go on"));
        assert!(failure_text(&l, &l, FailurePolicy::Hold).is_none(), "no new failures");
        assert!(failure_text(&p, &p, FailurePolicy::Hold).is_none());
    }

    /// `on_failure` is a read-only parameter, `hold` by default, refused outside its choices.
    #[test]
    fn on_failure_parameter_defaults_to_hold() {
        assert_eq!(crate::ros::params::default_value("on_failure", 1, 1.0), ParameterValue::String("hold".into()));
        let row = crate::ros::params::STATIC_PARAMS.iter().find(|r| r.0 == "on_failure").expect("declared");
        assert!(row.2, "read-only");
        match row.1 {
            crate::ros::params::Kind::Str { choices } => assert_eq!(choices, &["hold", "reset", "stop"]),
            other => panic!("{other:?}"),
        }
    }
}
