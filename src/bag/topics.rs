//! Topic names (the node's, listed in `docs/ros-graph.md`) and [`SampleTopics`], which turns a
//! real-time [`Sample`] into the messages the node publishes, for recording.
//!
//! Bags store fully qualified names; the node publishes its relative names (`odom`,
//! `<sensor>/wrench`, ...) in its namespace, `/` by default, so the bag has `/odom`, ...

use super::msgs::{DiagnosticArray, DiagnosticStatus, Header, JointState, KeyValue, Msg, MsgType, Odometry, StringMsg, TFMessage, TransformStamped, Wrench, WrenchStamped};
use super::recorder::{BagRecorder, RecordHandle};
use super::writer::{OfferedQos, TopicId};
use crate::rt::messages::{JointLayout, Sample};

/// `joint_states` (sensor_msgs/JointState): positions, velocities, measured efforts (relative:
/// `/joint_states` in the root namespace).
pub const JOINT_STATES: &str = "joint_states";
/// `/clock` (rosgraph_msgs/Clock).
pub const CLOCK: &str = "/clock";
/// `diagnostics` (diagnostic_msgs/DiagnosticArray; relative: `/diagnostics` in the root
/// namespace).
pub const DIAGNOSTICS: &str = "diagnostics";
/// `joint_commands` (sensor_msgs/JointState), input.
pub const JOINT_COMMANDS: &str = "joint_commands";
/// `joint_trajectory` (trajectory_msgs/JointTrajectory), input.
pub const JOINT_TRAJECTORY: &str = "joint_trajectory";
/// `odom` (nav_msgs/Odometry) with one floating base.
pub const ODOM: &str = "odom";
/// `tf` (tf2_msgs/TFMessage): odom → root link of every floating base (relative: `/tf` in the
/// root namespace).
pub const TF: &str = "tf";
/// `tf_static` (tf2_msgs/TFMessage): odom → root link of every fixed base.
pub const TF_STATIC: &str = "tf_static";
/// `contact_markers` (visualization_msgs/MarkerArray): contact points and force arrows.
pub const CONTACT_MARKERS: &str = "contact_markers";

/// `ns` + `name` for a relative name (`ns` `/` or `/robot1`), `name` for an absolute one.
pub fn qualify(ns: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else if ns.is_empty() || ns == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", ns.trim_end_matches('/'))
    }
}

/// Odometry topic of a floating base: `odom` with one base, `<robot>/odom` with several.
pub fn odom_topic(robot: &str, num_bases: usize) -> String {
    if num_bases == 1 {
        ODOM.to_string()
    } else {
        format!("{robot}/odom")
    }
}
/// Emulated F/T reading of a sensor (sensor frame).
pub fn sensor_wrench(sensor: &str) -> String {
    format!("{sensor}/wrench")
}
/// Ideal F/T reading of a sensor (sensor frame).
pub fn sensor_wrench_ideal(sensor: &str) -> String {
    format!("{sensor}/wrench_ideal")
}
/// Net contact wrench on a link, world axes, torque about the link origin.
pub fn contact_wrench(link: &str) -> String {
    format!("contact_wrenches/{link}")
}
/// Net contact wrench on a link, link axes.
pub fn contact_wrench_local(link: &str) -> String {
    format!("contact_wrenches/{link}/local")
}
/// Float64MultiArray commands of a command group.
pub fn group_commands(group: &str) -> String {
    format!("{group}/commands")
}

/// Options of [`SampleTopics`].
#[derive(Clone, Debug)]
pub struct SampleTopicOptions {
    /// Namespace of the relative names (`/`).
    pub namespace: String,
    /// Record `/clock` (the node publishes it in `sim_time` and `lockstep` modes).
    pub clock: bool,
    /// `frame_id` of odometry and world-axes contact wrenches (`odom`).
    pub odom_frame: String,
    /// Command groups (name → joints) whose `<group>/commands` topics are recorded.
    pub groups: Vec<String>,
    /// Record `tf` (odom → root link of each floating base, as the node publishes it).
    pub tf: bool,
    /// Register `contact_markers` (visualization_msgs/MarkerArray), recorded by
    /// [`SampleTopics::record_markers`] when the node publishes them.
    pub contact_markers: bool,
}

impl Default for SampleTopicOptions {
    fn default() -> Self {
        SampleTopicOptions { namespace: "/".into(), clock: true, odom_frame: "odom".into(), groups: vec![], tf: true, contact_markers: false }
    }
}

/// Records messages that the node publishes once, latched (`robot_description` per robot,
/// `tf_static`), at `stamp_ns`: each `(relative topic, message)` gets its topic in `rec`'s bag,
/// recorded with the latched profile ([`OfferedQos::Latched`]) the node offers them with.
/// Returns how many were dropped (queue full).
pub fn record_latched(rec: &mut BagRecorder, namespace: &str, stamp_ns: i64, messages: Vec<(String, Msg)>) -> usize {
    let h = rec.handle();
    let mut dropped = 0;
    for (topic, msg) in messages {
        let id = rec.add_topic_with_qos(&qualify(namespace, &topic), msg.msg_type(), OfferedQos::Latched);
        if !h.record(id, stamp_ns.max(0) as u64, msg) {
            dropped += 1;
        }
    }
    dropped
}

/// A `robot_description` message (the URDF text).
pub fn description_msg(urdf: &str) -> Msg {
    Msg::String(StringMsg { data: urdf.to_string() })
}

/// A `tf_static` message: `(child frame, translation m, rotation [x y z w])` in `parent`.
pub fn static_tf_msg(parent: &str, stamp_ns: i64, frames: &[(String, [f64; 3], [f64; 4])]) -> Msg {
    Msg::TFMessage(TFMessage {
        transforms: frames
            .iter()
            .map(|(child, t, q)| TransformStamped { header: Header::new(stamp_ns, parent), child_frame_id: child.clone(), translation: *t, rotation_xyzw: *q })
            .collect(),
    })
}

/// The recorded topics of a [`JointLayout`] and the reusable messages they are filled from.
pub struct SampleTopics {
    names: Vec<String>,
    joint_states: TopicId,
    clock: Option<TopicId>,
    diagnostics: TopicId,
    /// `joint_commands`.
    pub joint_commands: TopicId,
    /// `joint_trajectory`.
    pub joint_trajectory: TopicId,
    /// `<group>/commands` per group of [`SampleTopicOptions::groups`].
    pub group_commands: Vec<TopicId>,
    odom: Vec<(TopicId, String)>,
    tf: Option<TopicId>,
    markers: Option<TopicId>,
    sensors: Vec<(TopicId, TopicId, String)>,
    wrenches: Vec<(TopicId, TopicId, String)>,
    odom_frame: String,
}

impl SampleTopics {
    /// Registers every topic the node publishes for `layout`, and the command inputs.
    pub fn register(rec: &mut BagRecorder, layout: &JointLayout, opts: &SampleTopicOptions) -> Self {
        let q = |n: &str| qualify(&opts.namespace, n);
        let joint_states = rec.add_topic(&q(JOINT_STATES), MsgType::JointState);
        let clock = opts.clock.then(|| rec.add_topic(&q(CLOCK), MsgType::Clock));
        let diagnostics = rec.add_topic(&q(DIAGNOSTICS), MsgType::DiagnosticArray);
        let joint_commands = rec.add_topic(&q(JOINT_COMMANDS), MsgType::JointState);
        let joint_trajectory = rec.add_topic(&q(JOINT_TRAJECTORY), MsgType::JointTrajectory);
        let group_commands = opts.groups.iter().map(|g| rec.add_topic(&q(&group_commands(g)), MsgType::Float64MultiArray)).collect();
        let odom = layout.bases.iter().map(|b| (rec.add_topic(&q(&odom_topic(&b.robot, layout.bases.len())), MsgType::Odometry), b.root_link.clone())).collect();
        let tf = (opts.tf && !layout.bases.is_empty()).then(|| rec.add_topic(&q(TF), MsgType::TFMessage));
        let markers = opts.contact_markers.then(|| rec.add_topic(&q(CONTACT_MARKERS), MsgType::MarkerArray));
        let sensors = layout
            .sensors
            .iter()
            .map(|s| (rec.add_topic(&q(&sensor_wrench(&s.name)), MsgType::WrenchStamped), rec.add_topic(&q(&sensor_wrench_ideal(&s.name)), MsgType::WrenchStamped), s.frame_id.clone()))
            .collect();
        let wrenches = layout
            .wrench_links
            .iter()
            .map(|l| (rec.add_topic(&q(&contact_wrench(&l.name)), MsgType::WrenchStamped), rec.add_topic(&q(&contact_wrench_local(&l.name)), MsgType::WrenchStamped), l.name.clone()))
            .collect();
        SampleTopics {
            names: layout.joints.iter().map(|j| j.name.clone()).collect(),
            joint_states,
            clock,
            diagnostics,
            joint_commands,
            joint_trajectory,
            group_commands,
            odom,
            tf,
            markers,
            sensors,
            wrenches,
            odom_frame: opts.odom_frame.clone(),
        }
    }

    /// Records one sample as the node publishes it, stamped `stamp_ns` (also the log time):
    /// joint states, odometry, `tf` of the floating bases, F/T readings, contact wrenches and (if enabled) the clock at
    /// `sample.sim_time_s`. Returns how many messages were dropped (queue full).
    pub fn record_sample(&self, h: &RecordHandle, sample: &Sample, stamp_ns: i64) -> usize {
        let t = stamp_ns.max(0) as u64;
        let mut dropped = 0;
        let mut rec = |topic, msg| {
            if !h.record(topic, t, msg) {
                dropped += 1;
            }
        };
        let header = Header::new(stamp_ns, "");
        rec(
            self.joint_states,
            Msg::JointState(JointState { header: header.clone(), name: self.names.clone(), position: sample.position.clone(), velocity: sample.velocity.clone(), effort: sample.effort.clone() }),
        );
        if let Some(c) = self.clock {
            rec(c, Msg::Clock(super::msgs::Clock { clock: super::msgs::Time::from_ns(crate::rt::clock::secs_to_ns(sample.sim_time_s)) }));
        }
        for ((topic, child), b) in self.odom.iter().zip(&sample.bases) {
            let m = Odometry {
                header: Header::new(stamp_ns, &self.odom_frame),
                child_frame_id: child.clone(),
                position: b.position,
                orientation_xyzw: b.orientation_xyzw,
                linear: b.linear_velocity,
                angular: b.angular_velocity,
                ..Default::default()
            };
            rec(*topic, Msg::Odometry(Box::new(m)));
        }
        if let Some(tf) = self.tf {
            let transforms = self
                .odom
                .iter()
                .zip(&sample.bases)
                .map(|((_, child), b)| TransformStamped { header: Header::new(stamp_ns, &self.odom_frame), child_frame_id: child.clone(), translation: b.position, rotation_xyzw: b.orientation_xyzw })
                .collect();
            rec(tf, Msg::TFMessage(TFMessage { transforms }));
        }
        for ((measured, ideal, frame), r) in self.sensors.iter().zip(&sample.sensors) {
            rec(*measured, Msg::WrenchStamped(WrenchStamped { header: Header::new(stamp_ns, frame), wrench: Wrench::from_array(&r.measured) }));
            rec(*ideal, Msg::WrenchStamped(WrenchStamped { header: Header::new(stamp_ns, frame), wrench: Wrench::from_array(&r.ideal) }));
        }
        for ((world, local, link), w) in self.wrenches.iter().zip(&sample.contact_wrenches) {
            rec(*world, Msg::WrenchStamped(WrenchStamped { header: Header::new(stamp_ns, &self.odom_frame), wrench: Wrench::from_array(&w.world) }));
            rec(*local, Msg::WrenchStamped(WrenchStamped { header: Header::new(stamp_ns, link), wrench: Wrench::from_array(&w.local) }));
        }
        dropped
    }

    /// Records a `contact_markers` message (no-op unless registered with
    /// [`SampleTopicOptions::contact_markers`]).
    pub fn record_markers(&self, h: &RecordHandle, stamp_ns: i64, msg: Msg) -> bool {
        match self.markers {
            Some(t) => h.record(t, stamp_ns.max(0) as u64, msg),
            None => true,
        }
    }

    /// Records a diagnostics message.
    pub fn record_diagnostics(&self, h: &RecordHandle, stamp_ns: i64, msg: DiagnosticArray) -> bool {
        h.record(self.diagnostics, stamp_ns.max(0) as u64, Msg::DiagnosticArray(msg))
    }

    /// A small headless diagnostics message from a sample (solver and contact figures).
    pub fn headless_diagnostics(sample: &Sample, stamp_ns: i64, real_time_factor: f64) -> DiagnosticArray {
        let kv = |k: &str, v: String| KeyValue { key: k.into(), value: v };
        DiagnosticArray {
            header: Header::new(stamp_ns, ""),
            status: vec![DiagnosticStatus {
                level: if sample.step.converged { 0 } else { 1 },
                name: "contact_sim: simulation".into(),
                message: if sample.step.converged { "ok".into() } else { "solver did not converge".into() },
                hardware_id: "contact_sim".into(),
                values: vec![
                    kv("sim_time_s", format!("{:.6}", sample.sim_time_s)),
                    kv("contacts", sample.step.contacts.to_string()),
                    kv("solver_iterations", sample.step.iterations.to_string()),
                    kv("solver_residual", format!("{:.3e}", sample.step.residual)),
                    kv("max_penetration_m", format!("{:.6}", sample.step.max_penetration_m)),
                    kv("real_time_factor", format!("{real_time_factor:.3}")),
                ],
            }],
        }
    }
}
