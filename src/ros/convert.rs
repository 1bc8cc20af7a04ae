//! Conversions between the real-time samples and ROS messages (no physics, no I/O).

use crate::rt::messages::{BaseState, Sample};
use crate::rt::TimeMode;
use r2r::builtin_interfaces::msg::Time;
use r2r::diagnostic_msgs::msg::{DiagnosticStatus, KeyValue};
use r2r::geometry_msgs::msg::{Point, Pose, Quaternion, Twist, Vector3};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::JointState;

/// Nanoseconds since the epoch → `builtin_interfaces/Time` (negative times clamp to 0).
pub fn time_from_ns(ns: i64) -> Time {
    let ns = ns.max(0);
    Time { sec: (ns / 1_000_000_000).min(i32::MAX as i64) as i32, nanosec: (ns % 1_000_000_000) as u32 }
}

/// Seconds → `builtin_interfaces/Time`.
pub fn time_from_s(s: f64) -> Time {
    time_from_ns(crate::rt::clock::secs_to_ns(s))
}

/// `builtin_interfaces/Time` → seconds.
pub fn time_to_s(t: &Time) -> f64 {
    t.sec as f64 + t.nanosec as f64 * 1e-9
}

/// The stamp of a sample: system time in `realtime` mode, sim time otherwise.
pub fn stamp(sample: &Sample, mode: TimeMode) -> Time {
    match mode {
        TimeMode::Realtime => time_from_ns(sample.realtime_ns),
        _ => time_from_s(sample.sim_time_s),
    }
}

/// Writes a sample into a reusable JointState (names are set once by the caller).
pub fn fill_joint_state(msg: &mut JointState, sample: &Sample, mode: TimeMode) {
    msg.header.stamp = stamp(sample, mode);
    msg.position.clear();
    msg.position.extend_from_slice(&sample.position);
    msg.velocity.clear();
    msg.velocity.extend_from_slice(&sample.velocity);
    msg.effort.clear();
    msg.effort.extend_from_slice(&sample.effort);
}

/// Writes a floating base's state into a reusable Odometry (frames set once by the caller):
/// pose in the odometry frame (the world), twist in the child (root link) frame.
pub fn fill_odometry(msg: &mut Odometry, base: &BaseState, sample: &Sample, mode: TimeMode) {
    msg.header.stamp = stamp(sample, mode);
    let [x, y, z] = base.position;
    let [qx, qy, qz, qw] = base.orientation_xyzw;
    msg.pose.pose = Pose { position: Point { x, y, z }, orientation: Quaternion { x: qx, y: qy, z: qz, w: qw } };
    let [vx, vy, vz] = base.linear_velocity;
    let [wx, wy, wz] = base.angular_velocity;
    msg.twist.twist = Twist { linear: Vector3 { x: vx, y: vy, z: vz }, angular: Vector3 { x: wx, y: wy, z: wz } };
}

/// Diagnostic levels (diagnostic_msgs/DiagnosticStatus).
pub mod level {
    /// OK.
    pub const OK: u8 = 0;
    /// WARN.
    pub const WARN: u8 = 1;
    /// ERROR.
    pub const ERROR: u8 = 2;
}

/// Builds a DiagnosticStatus from key/value pairs.
pub fn status(name: &str, hardware_id: &str, level: u8, message: String, values: Vec<(&str, String)>) -> DiagnosticStatus {
    DiagnosticStatus {
        level,
        name: name.to_string(),
        message,
        hardware_id: hardware_id.to_string(),
        values: values.into_iter().map(|(k, v)| KeyValue { key: k.to_string(), value: v }).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        let t = time_from_s(12.25);
        assert_eq!((t.sec, t.nanosec), (12, 250_000_000));
        assert_eq!(time_to_s(&t), 12.25);
        let t = time_from_ns(-5);
        assert_eq!((t.sec, t.nanosec), (0, 0));
    }
}
