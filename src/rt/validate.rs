//! Command validation, before anything reaches the real-time thread.
//!
//! Runs on the ROS thread (it looks names up), writes into preallocated buffers from
//! [`crate::rt::messages`]. A command with an unknown or duplicate joint, inconsistent array
//! lengths or a NaN/Inf value is rejected as a whole. Values beyond a joint's limits (position
//! range, velocity limit, effort limit) are rejected or clamped according to [`LimitPolicy`].
//! Callers count rejections and warn (throttled); the simulation never sees a bad value.
//!
//! Mimic followers (URDF `<mimic>`, [`JointInfo::mimic_of`]) are driven by their coupling and
//! take no commands: a name-indexed command or a trajectory that names one besides other joints
//! is applied without the follower's values ([`CommandValidator::mimic_followers`] lists them, for
//! a warning); one that names only followers is rejected ([`Rejection::MimicJoint`], naming the
//! joint each follows); a command group cannot contain one.
//!
//! Field semantics (`sensor_msgs/JointState` on `joint_commands`, the contract of ros2_control's
//! topic-based hardware interface): each of `position`, `velocity`, `effort` is either empty (not
//! commanded) or has one entry per name. How a field acts depends on the joint's mode: position
//! joints use position (PD target), velocity (damping reference) and effort (feed-forward);
//! velocity joints use velocity and effort; effort joints use effort; other fields are accepted
//! and ignored.

use super::messages::{JointCommand, JointInfo, JointLayout, TrajectoryCommand, HAS_EFFORT, HAS_POSITION, HAS_VELOCITY};
use crate::model::ControlMode;
use std::collections::HashMap;

/// What to do with values beyond a joint's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// Reject the whole command.
    Reject,
    /// Clamp the value to the limit and accept (counted).
    Clamp,
}

impl LimitPolicy {
    /// Parses `reject` or `clamp`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "reject" => Some(LimitPolicy::Reject),
            "clamp" => Some(LimitPolicy::Clamp),
            _ => None,
        }
    }
}

/// Which command field a `<group>/commands` array sets (forward_command_controller's
/// `interface_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupInterface {
    /// Position targets (rad or m).
    Position,
    /// Velocity targets (rad/s or m/s).
    Velocity,
    /// Efforts (N·m or N).
    Effort,
}

impl GroupInterface {
    /// Parses `position`, `velocity` or `effort`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "position" => Some(GroupInterface::Position),
            "velocity" => Some(GroupInterface::Velocity),
            "effort" => Some(GroupInterface::Effort),
            _ => None,
        }
    }
    /// `position`, `velocity` or `effort` (the `groups.<g>.interface` value).
    pub fn name(self) -> &'static str {
        match self {
            GroupInterface::Position => "position",
            GroupInterface::Velocity => "velocity",
            GroupInterface::Effort => "effort",
        }
    }
    fn field(self) -> Field {
        match self {
            GroupInterface::Position => Field::Position,
            GroupInterface::Velocity => Field::Velocity,
            GroupInterface::Effort => Field::Effort,
        }
    }
}

/// A configured joint group (`<name>/commands`, std_msgs/Float64MultiArray).
#[derive(Clone, Debug, PartialEq)]
pub struct CommandGroup {
    /// Group name (the topic prefix).
    pub name: String,
    /// Joint slots, in the order of the array.
    pub slots: Vec<usize>,
    /// Which field the values set.
    pub interface: GroupInterface,
}

/// A command field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Position.
    Position,
    /// Velocity.
    Velocity,
    /// Effort.
    Effort,
    /// Trajectory `time_from_start`.
    Time,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Position => "position",
            Field::Velocity => "velocity",
            Field::Effort => "effort",
            Field::Time => "time_from_start",
        }
    }
}

/// Why a command was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// No names or no values.
    Empty,
    /// A joint name the scene does not have (or that is not a one-DOF joint).
    UnknownJoint(String),
    /// A joint named twice.
    DuplicateJoint(String),
    /// An array whose length does not match.
    LengthMismatch {
        /// Which array.
        field: Field,
        /// Its length.
        got: usize,
        /// The expected length.
        expected: usize,
    },
    /// A NaN or infinite value.
    NonFinite {
        /// Joint.
        joint: String,
        /// Field.
        field: Field,
    },
    /// A value beyond the joint's limits (with [`LimitPolicy::Reject`]).
    OutOfLimits {
        /// Joint.
        joint: String,
        /// Field.
        field: Field,
        /// The value.
        value: f64,
        /// Lower bound.
        lower: f64,
        /// Upper bound.
        upper: f64,
    },
    /// A trajectory with more points than the preallocated capacity.
    TooManyPoints {
        /// Points in the message.
        got: usize,
        /// Capacity.
        max: usize,
    },
    /// Trajectory times not strictly increasing (or negative).
    NotMonotonic {
        /// Index of the offending point.
        point: usize,
    },
    /// A trajectory for a joint in effort or passive mode.
    UnsupportedMode(String),
    /// No such command group.
    UnknownGroup(String),
    /// A mimic follower, which takes no commands: named alone (nothing else to apply), or in a
    /// command group.
    MimicJoint {
        /// The follower.
        joint: String,
        /// The joint it follows (the one to command).
        leader: String,
    },
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Empty => write!(f, "empty command (no joint names or no values)"),
            Rejection::UnknownJoint(j) => write!(f, "unknown joint '{j}'"),
            Rejection::DuplicateJoint(j) => write!(f, "joint '{j}' named twice"),
            Rejection::LengthMismatch { field, got, expected } => write!(f, "{} has {got} entries, expected {expected}", field.name()),
            Rejection::NonFinite { joint, field } => write!(f, "non-finite {} for joint '{joint}'", field.name()),
            Rejection::OutOfLimits { joint, field, value, lower, upper } => write!(f, "{} {value} for joint '{joint}' outside [{lower}, {upper}]", field.name()),
            Rejection::TooManyPoints { got, max } => write!(f, "trajectory has {got} points, at most {max} are supported (max_trajectory_points)"),
            Rejection::NotMonotonic { point } => write!(f, "trajectory time_from_start must be finite, non-negative and strictly increasing (point {point})"),
            Rejection::UnsupportedMode(j) => write!(f, "joint '{j}' is in effort or passive mode and cannot follow a trajectory"),
            Rejection::UnknownGroup(g) => write!(f, "unknown command group '{g}'"),
            Rejection::MimicJoint { joint, leader } => write!(f, "joint '{joint}' mimics '{leader}' (URDF <mimic>) and takes no commands: command '{leader}'"),
        }
    }
}

/// What an accepted command needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    /// Values clamped to a limit ([`LimitPolicy::Clamp`]).
    pub clamped: usize,
}

/// One point of a trajectory message, borrowed from it.
#[derive(Clone, Copy, Debug)]
pub struct TrajectoryPointView<'a> {
    /// `time_from_start` (s).
    pub time_from_start_s: f64,
    /// Positions (rad or m), one per joint.
    pub positions: &'a [f64],
    /// Velocities (rad/s or m/s): empty or one per joint.
    pub velocities: &'a [f64],
}

/// Validates commands against the scene's joints.
#[derive(Clone, Debug)]
pub struct CommandValidator {
    layout: JointLayout,
    by_name: HashMap<String, usize>,
    /// Limit policy (may be changed at any time).
    pub policy: LimitPolicy,
}

fn bounds(j: &JointInfo, field: Field) -> (f64, f64) {
    match field {
        Field::Position => j.position_limits.unwrap_or((f64::NEG_INFINITY, f64::INFINITY)),
        Field::Velocity => (-j.velocity_limit, j.velocity_limit),
        Field::Effort => (-j.effort_limit, j.effort_limit),
        Field::Time => (0.0, f64::INFINITY),
    }
}

impl CommandValidator {
    /// A validator for `layout`'s joints.
    pub fn new(layout: &JointLayout, policy: LimitPolicy) -> Self {
        let by_name = layout.joints.iter().enumerate().map(|(i, j)| (j.name.clone(), i)).collect();
        CommandValidator { layout: layout.clone(), by_name, policy }
    }

    /// The joint layout.
    pub fn layout(&self) -> &JointLayout {
        &self.layout
    }

    /// Slot of a joint by name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The joint a slot's joint follows, if it is a mimic follower.
    fn leader(&self, slot: usize) -> Option<&str> {
        self.layout.joints[slot].mimic_of.as_deref()
    }

    fn mimic_rejection(&self, slot: usize) -> Rejection {
        Rejection::MimicJoint { joint: self.layout.joints[slot].name.clone(), leader: self.leader(slot).unwrap_or_default().to_string() }
    }

    /// The mimic followers among `names` (known joints only), with their slots and the joint
    /// each follows: their values in an accepted command are ignored.
    pub fn mimic_followers<'a>(&'a self, names: &'a [String]) -> impl Iterator<Item = (usize, &'a str, &'a str)> + 'a {
        names.iter().filter_map(move |n| {
            let s = self.slot(n)?;
            self.leader(s).map(|l| (s, n.as_str(), l))
        })
    }

    fn check(&self, slot: usize, field: Field, value: f64, acc: &mut Accepted) -> Result<f64, Rejection> {
        let j = &self.layout.joints[slot];
        if !value.is_finite() {
            return Err(Rejection::NonFinite { joint: j.name.clone(), field });
        }
        let (lo, hi) = bounds(j, field);
        if value < lo || value > hi {
            return match self.policy {
                LimitPolicy::Reject => Err(Rejection::OutOfLimits { joint: j.name.clone(), field, value, lower: lo, upper: hi }),
                LimitPolicy::Clamp => {
                    acc.clamped += 1;
                    Ok(value.clamp(lo, hi))
                }
            };
        }
        Ok(value)
    }

    fn slots_of(&self, names: &[String], seen: &mut [bool]) -> Result<(), Rejection> {
        seen.fill(false);
        for n in names {
            let s = self.slot(n).ok_or_else(|| Rejection::UnknownJoint(n.clone()))?;
            if seen[s] {
                return Err(Rejection::DuplicateJoint(n.clone()));
            }
            seen[s] = true;
        }
        Ok(())
    }

    /// Validates a name-indexed command (`sensor_msgs/JointState` fields) into `out`.
    pub fn joint_state(&self, names: &[String], position: &[f64], velocity: &[f64], effort: &[f64], out: &mut JointCommand) -> Result<Accepted, Rejection> {
        out.clear();
        if names.is_empty() || (position.is_empty() && velocity.is_empty() && effort.is_empty()) {
            return Err(Rejection::Empty);
        }
        for (field, arr) in [(Field::Position, position), (Field::Velocity, velocity), (Field::Effort, effort)] {
            if !arr.is_empty() && arr.len() != names.len() {
                return Err(Rejection::LengthMismatch { field, got: arr.len(), expected: names.len() });
            }
        }
        let mut seen = vec![false; self.layout.len()];
        self.slots_of(names, &mut seen)?;
        if let Some(s) = names.iter().map(|n| self.by_name[n]).find(|&s| self.leader(s).is_some()) {
            if names.iter().all(|n| self.leader(self.by_name[n]).is_some()) {
                return Err(self.mimic_rejection(s));
            }
        }
        let mut acc = Accepted::default();
        for (i, n) in names.iter().enumerate() {
            let s = self.by_name[n];
            if self.leader(s).is_some() {
                // a mimic follower: driven by its coupling, its values are ignored
                continue;
            }
            if !position.is_empty() {
                out.position[s] = self.check(s, Field::Position, position[i], &mut acc)?;
                out.mask[s] |= HAS_POSITION;
            }
            if !velocity.is_empty() {
                out.velocity[s] = self.check(s, Field::Velocity, velocity[i], &mut acc)?;
                out.mask[s] |= HAS_VELOCITY;
            }
            if !effort.is_empty() {
                out.effort[s] = self.check(s, Field::Effort, effort[i], &mut acc)?;
                out.mask[s] |= HAS_EFFORT;
            }
        }
        Ok(acc)
    }

    /// Validates a group command (`std_msgs/Float64MultiArray` data) into `out`.
    pub fn group(&self, group: &CommandGroup, data: &[f64], out: &mut JointCommand) -> Result<Accepted, Rejection> {
        out.clear();
        if data.len() != group.slots.len() {
            return Err(Rejection::LengthMismatch { field: group.interface.field(), got: data.len(), expected: group.slots.len() });
        }
        let mut acc = Accepted::default();
        for (&s, &x) in group.slots.iter().zip(data) {
            if s >= self.layout.len() {
                return Err(Rejection::UnknownGroup(group.name.clone()));
            }
            let v = self.check(s, group.interface.field(), x, &mut acc)?;
            match group.interface {
                GroupInterface::Position => {
                    out.position[s] = v;
                    out.mask[s] |= HAS_POSITION;
                }
                GroupInterface::Velocity => {
                    out.velocity[s] = v;
                    out.mask[s] |= HAS_VELOCITY;
                }
                GroupInterface::Effort => {
                    out.effort[s] = v;
                    out.mask[s] |= HAS_EFFORT;
                }
            }
        }
        Ok(acc)
    }

    /// Builds a command group from joint names (for the configuration).
    pub fn make_group(&self, name: &str, joints: &[String], interface: GroupInterface) -> Result<CommandGroup, Rejection> {
        if joints.is_empty() {
            return Err(Rejection::Empty);
        }
        let mut seen = vec![false; self.layout.len()];
        self.slots_of(joints, &mut seen)?;
        if let Some(s) = joints.iter().map(|j| self.by_name[j]).find(|&s| self.leader(s).is_some()) {
            return Err(self.mimic_rejection(s));
        }
        Ok(CommandGroup { name: name.to_string(), slots: joints.iter().map(|j| self.by_name[j]).collect(), interface })
    }

    /// Validates a joint trajectory into `out` (which must hold at least `points.len()` points
    /// of `names.len()` joints).
    pub fn trajectory(&self, names: &[String], points: &[TrajectoryPointView<'_>], start_delay_s: f64, out: &mut TrajectoryCommand) -> Result<Accepted, Rejection> {
        out.num_joints = 0;
        out.num_points = 0;
        if names.is_empty() || points.is_empty() {
            return Err(Rejection::Empty);
        }
        if points.len() > out.max_points() {
            return Err(Rejection::TooManyPoints { got: points.len(), max: out.max_points() });
        }
        let mut seen = vec![false; self.layout.len()];
        self.slots_of(names, &mut seen)?;
        // the joints followed: all but the mimic followers (whose columns are ignored)
        let followed = |k: &usize| self.leader(self.by_name[&names[*k]]).is_none();
        let Some(first) = (0..names.len()).find(followed) else {
            return Err(self.mimic_rejection(self.by_name[&names[0]]));
        };
        for k in (first..names.len()).filter(followed) {
            let j = &self.layout.joints[self.by_name[&names[k]]];
            if !matches!(j.mode, ControlMode::Position { .. } | ControlMode::Velocity { .. }) {
                return Err(Rejection::UnsupportedMode(names[k].clone()));
            }
        }
        let nj = names.len();
        let has_vel = !points[0].velocities.is_empty();
        let mut last_t = f64::NEG_INFINITY;
        for (p, pt) in points.iter().enumerate() {
            if pt.positions.len() != nj {
                return Err(Rejection::LengthMismatch { field: Field::Position, got: pt.positions.len(), expected: nj });
            }
            let want_v = if has_vel { nj } else { 0 };
            if pt.velocities.len() != want_v {
                return Err(Rejection::LengthMismatch { field: Field::Velocity, got: pt.velocities.len(), expected: want_v });
            }
            let t = pt.time_from_start_s;
            if !t.is_finite() || t < 0.0 || t <= last_t {
                return Err(Rejection::NotMonotonic { point: p });
            }
            last_t = t;
        }
        let mut acc = Accepted::default();
        let nf = (first..nj).filter(followed).count();
        out.num_joints = nf;
        for (i, k) in (first..nj).filter(followed).enumerate() {
            out.slots[i] = self.by_name[&names[k]];
        }
        for (p, pt) in points.iter().enumerate() {
            out.times[p] = pt.time_from_start_s;
            for (i, k) in (first..nj).filter(followed).enumerate() {
                let s = out.slots[i];
                out.positions[p * nf + i] = self.check(s, Field::Position, pt.positions[k], &mut acc)?;
                out.velocities[p * nf + i] = if has_vel { self.check(s, Field::Velocity, pt.velocities[k], &mut acc)? } else { 0.0 };
            }
        }
        out.num_points = points.len();
        out.has_velocities = has_vel;
        out.start_delay_s = if start_delay_s.is_finite() { start_delay_s.max(0.0) } else { 0.0 };
        Ok(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ControlMode;

    fn layout() -> JointLayout {
        let j = |name: &str, q: usize, lim: Option<(f64, f64)>, mode| JointInfo { name: name.into(), q_index: q, v_index: q, position_limits: lim, velocity_limit: 2.0, effort_limit: 10.0, mode, mimic_of: None };
        JointLayout {
            joints: vec![
                j("a", 0, Some((-1.0, 1.0)), ControlMode::Position { kp: 100.0, kd: 1.0 }),
                j("b", 1, None, ControlMode::Velocity { kd: 3.0 }),
                j("c", 2, None, ControlMode::Effort),
            ],
            ..Default::default()
        }
    }
    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn accepts_a_well_formed_joint_state() {
        let v = CommandValidator::new(&layout(), LimitPolicy::Reject);
        let mut out = JointCommand::new(3);
        let acc = v.joint_state(&s(&["c", "a"]), &[0.0, 0.5], &[], &[1.0, 2.0], &mut out).unwrap();
        assert_eq!(acc.clamped, 0);
        assert_eq!(out.mask, vec![HAS_POSITION | HAS_EFFORT, 0, HAS_POSITION | HAS_EFFORT]);
        assert_eq!(out.position[0], 0.5);
        assert_eq!(out.effort[2], 1.0);
    }

    #[test]
    fn rejects_malformed_joint_states() {
        let v = CommandValidator::new(&layout(), LimitPolicy::Reject);
        let mut out = JointCommand::new(3);
        type Case = (Vec<String>, Vec<f64>, Vec<f64>, Rejection);
        let cases: Vec<Case> = vec![
            (s(&["zzz"]), vec![0.0], vec![], Rejection::UnknownJoint("zzz".into())),
            (s(&["a", "a"]), vec![0.0, 0.0], vec![], Rejection::DuplicateJoint("a".into())),
            (s(&["a", "b"]), vec![0.0], vec![], Rejection::LengthMismatch { field: Field::Position, got: 1, expected: 2 }),
            (s(&["a"]), vec![f64::NAN], vec![], Rejection::NonFinite { joint: "a".into(), field: Field::Position }),
            (s(&["b"]), vec![], vec![f64::INFINITY], Rejection::NonFinite { joint: "b".into(), field: Field::Velocity }),
            (s(&["a"]), vec![1.5], vec![], Rejection::OutOfLimits { joint: "a".into(), field: Field::Position, value: 1.5, lower: -1.0, upper: 1.0 }),
            (s(&["b"]), vec![], vec![-3.0], Rejection::OutOfLimits { joint: "b".into(), field: Field::Velocity, value: -3.0, lower: -2.0, upper: 2.0 }),
            (s(&[]), vec![], vec![], Rejection::Empty),
            (s(&["a"]), vec![], vec![], Rejection::Empty),
        ];
        for (names, p, vel, want) in cases {
            assert_eq!(v.joint_state(&names, &p, &vel, &[], &mut out), Err(want.clone()), "{want}");
        }
        // effort beyond its limit
        let r = v.joint_state(&s(&["c"]), &[], &[], &[11.0], &mut out);
        assert!(matches!(r, Err(Rejection::OutOfLimits { field: Field::Effort, .. })));
    }

    #[test]
    fn clamps_when_configured() {
        let v = CommandValidator::new(&layout(), LimitPolicy::Clamp);
        let mut out = JointCommand::new(3);
        let acc = v.joint_state(&s(&["a", "c"]), &[], &[], &[-50.0, 50.0], &mut out).unwrap();
        assert_eq!(acc.clamped, 2);
        assert_eq!(out.effort[0], -10.0);
        assert_eq!(out.effort[2], 10.0);
        let acc = v.joint_state(&s(&["a"]), &[7.0], &[], &[], &mut out).unwrap();
        assert_eq!((acc.clamped, out.position[0]), (1, 1.0));
        // NaN is never clamped
        assert!(v.joint_state(&s(&["a"]), &[f64::NAN], &[], &[], &mut out).is_err());
    }

    #[test]
    fn groups() {
        let v = CommandValidator::new(&layout(), LimitPolicy::Reject);
        let g = v.make_group("arm", &s(&["c", "b"]), GroupInterface::Effort).unwrap();
        assert_eq!(g.slots, vec![2, 1]);
        let mut out = JointCommand::new(3);
        v.group(&g, &[1.0, -2.0], &mut out).unwrap();
        assert_eq!(out.mask, vec![0, HAS_EFFORT, HAS_EFFORT]);
        assert_eq!((out.effort[2], out.effort[1]), (1.0, -2.0));
        assert!(matches!(v.group(&g, &[1.0], &mut out), Err(Rejection::LengthMismatch { .. })));
        assert!(matches!(v.group(&g, &[1.0, f64::NAN], &mut out), Err(Rejection::NonFinite { .. })));
        assert!(v.make_group("x", &s(&["nope"]), GroupInterface::Position).is_err());
    }

    /// `layout()` plus `d`, a mimic follower of `a` (passive, as the model builder makes it).
    fn layout_with_mimic() -> JointLayout {
        let mut l = layout();
        l.joints.push(JointInfo { name: "d".into(), q_index: 3, v_index: 3, position_limits: Some((-1.0, 1.0)), velocity_limit: 2.0, effort_limit: 10.0, mode: ControlMode::Passive, mimic_of: Some("a".into()) });
        l
    }

    #[test]
    fn mimic_followers_take_no_commands() {
        let v = CommandValidator::new(&layout_with_mimic(), LimitPolicy::Reject);
        let mimic = Rejection::MimicJoint { joint: "d".into(), leader: "a".into() };
        assert_eq!(mimic.to_string(), "joint 'd' mimics 'a' (URDF <mimic>) and takes no commands: command 'a'");
        let mut out = JointCommand::new(4);
        // alone: rejected, naming the joint it follows
        assert_eq!(v.joint_state(&s(&["d"]), &[0.5], &[], &[], &mut out), Err(mimic.clone()));
        // with others: applied without the follower's value (even a NaN there is not looked at)
        v.joint_state(&s(&["d", "a"]), &[f64::NAN, 0.5], &[], &[], &mut out).unwrap();
        assert_eq!(out.mask, vec![HAS_POSITION, 0, 0, 0]);
        assert_eq!(out.position[0], 0.5);
        let names = s(&["d", "a", "c"]);
        assert_eq!(v.mimic_followers(&names).collect::<Vec<_>>(), vec![(3, "d", "a")]);
        // never in a group
        assert_eq!(v.make_group("g", &s(&["a", "d"]), GroupInterface::Position), Err(mimic.clone()));
        // trajectories: the follower's column is dropped; alone, rejected
        let mut t = TrajectoryCommand::new(4, 4);
        let pts = [TrajectoryPointView { time_from_start_s: 0.5, positions: &[0.3, 0.1], velocities: &[9.0, 0.2] }];
        v.trajectory(&s(&["d", "a"]), &pts, 0.0, &mut t).unwrap();
        assert_eq!((t.num_joints, t.num_points, t.slots[0]), (1, 1, 0));
        assert_eq!((t.position(0, 0), t.velocities[0]), (0.1, 0.2));
        let one = [TrajectoryPointView { time_from_start_s: 0.5, positions: &[0.3], velocities: &[] }];
        assert_eq!(v.trajectory(&s(&["d"]), &one, 0.0, &mut t), Err(mimic));
    }

    #[test]
    fn trajectories() {
        let v = CommandValidator::new(&layout(), LimitPolicy::Reject);
        let mut out = TrajectoryCommand::new(3, 4);
        let pts = [
            TrajectoryPointView { time_from_start_s: 0.5, positions: &[0.1, 0.0], velocities: &[] },
            TrajectoryPointView { time_from_start_s: 1.0, positions: &[0.2, 1.0], velocities: &[] },
        ];
        v.trajectory(&s(&["a", "b"]), &pts, 0.0, &mut out).unwrap();
        assert_eq!((out.num_joints, out.num_points, out.has_velocities), (2, 2, false));
        assert_eq!(out.position(1, 1), 1.0);
        // effort-mode joint
        assert_eq!(v.trajectory(&s(&["c"]), &pts[..1].iter().map(|p| TrajectoryPointView { positions: &[0.0], ..*p }).collect::<Vec<_>>(), 0.0, &mut out), Err(Rejection::UnsupportedMode("c".into())));
        // time order
        let bad = [pts[1], pts[0]];
        assert_eq!(v.trajectory(&s(&["a", "b"]), &bad, 0.0, &mut out), Err(Rejection::NotMonotonic { point: 1 }));
        // too many points
        let many = [pts[0]; 5];
        assert!(matches!(v.trajectory(&s(&["a", "b"]), &many, 0.0, &mut out), Err(Rejection::TooManyPoints { got: 5, max: 4 })));
        // position beyond the limit
        let far = [TrajectoryPointView { time_from_start_s: 1.0, positions: &[3.0, 0.0], velocities: &[] }];
        assert!(matches!(v.trajectory(&s(&["a", "b"]), &far, 0.0, &mut out), Err(Rejection::OutOfLimits { .. })));
        // velocities on some points only
        let mixed = [pts[0], TrajectoryPointView { velocities: &[0.0, 0.0], ..pts[1] }];
        assert!(matches!(v.trajectory(&s(&["a", "b"]), &mixed, 0.0, &mut out), Err(Rejection::LengthMismatch { field: Field::Velocity, .. })));
    }
}
