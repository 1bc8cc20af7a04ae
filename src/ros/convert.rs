//! Conversions between the real-time samples and ROS messages (no physics, no I/O).

use crate::rt::messages::{BaseState, ContactPointSample, Sample};
use crate::rt::TimeMode;
use r2r::builtin_interfaces::msg::Time;
use r2r::diagnostic_msgs::msg::{DiagnosticStatus, KeyValue};
use r2r::geometry_msgs::msg::{Point, Pose, Quaternion, Twist, Vector3, Wrench, WrenchStamped};
use r2r::std_msgs::msg::ColorRGBA;
use r2r::visualization_msgs::msg::{Marker, MarkerArray};
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

/// Writes `[fx fy fz tx ty tz]` (N, N·m) into a reusable WrenchStamped (frame set once by the
/// caller).
pub fn fill_wrench(msg: &mut WrenchStamped, w: &[f64; 6], stamp: &Time) {
    msg.header.stamp = stamp.clone();
    msg.wrench = Wrench { force: Vector3 { x: w[0], y: w[1], z: w[2] }, torque: Vector3 { x: w[3], y: w[4], z: w[5] } };
}

/// Marker types and actions (visualization_msgs/Marker constants).
mod marker {
    pub const ARROW: i32 = 0;
    pub const SPHERE_LIST: i32 = 7;
    pub const ADD: i32 = 0;
    pub const DELETEALL: i32 = 3;
}

/// Contact points and forces as an RViz MarkerArray in the world frame `frame_id`: a DELETEALL
/// (so markers of contacts that ended disappear), one SPHERE_LIST of the points (`ns`
/// `contact_points`, red) and one ARROW per contact from the point along the force on body B
/// (`ns` `contact_forces`, green), `m_per_n` metres of arrow per N of force.
pub fn contact_markers(points: &[ContactPointSample], frame_id: &str, stamp: &Time, m_per_n: f64) -> MarkerArray {
    let mut header = r2r::std_msgs::msg::Header { stamp: stamp.clone(), frame_id: frame_id.to_string() };
    let identity = Pose { orientation: Quaternion { x: 0.0, y: 0.0, z: 0.0, w: 1.0 }, ..Default::default() };
    let mut markers = vec![Marker { header: header.clone(), action: marker::DELETEALL, ..Default::default() }];
    let p3 = |p: &[f64; 3]| Point { x: p[0], y: p[1], z: p[2] };
    markers.push(Marker {
        header: header.clone(),
        ns: "contact_points".into(),
        id: 0,
        type_: marker::SPHERE_LIST,
        action: marker::ADD,
        pose: identity.clone(),
        scale: Vector3 { x: 0.015, y: 0.015, z: 0.015 },
        color: ColorRGBA { r: 0.9, g: 0.1, b: 0.1, a: 1.0 },
        points: points.iter().map(|c| p3(&c.position)).collect(),
        ..Default::default()
    });
    header.frame_id = frame_id.to_string();
    for (i, c) in points.iter().enumerate() {
        let tip = [c.position[0] + m_per_n * c.force[0], c.position[1] + m_per_n * c.force[1], c.position[2] + m_per_n * c.force[2]];
        markers.push(Marker {
            header: header.clone(),
            ns: "contact_forces".into(),
            id: i as i32,
            type_: marker::ARROW,
            action: marker::ADD,
            pose: identity.clone(),
            // ARROW with two points: shaft diameter, head diameter, head length (m)
            scale: Vector3 { x: 0.005, y: 0.01, z: 0.01 },
            color: ColorRGBA { r: 0.1, g: 0.8, b: 0.2, a: 1.0 },
            points: vec![p3(&c.position), p3(&tip)],
            ..Default::default()
        });
    }
    MarkerArray { markers }
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

/// r2r messages → [`crate::bag::msgs`] messages, for recording (`record_bag`). Allocates: call
/// on the ROS or publisher thread, never the real-time one.
pub mod to_bag {
    use crate::bag::msgs as b;
    use r2r::builtin_interfaces::msg::Time;

    fn time(t: &Time) -> b::Time {
        b::Time { sec: t.sec, nanosec: t.nanosec }
    }
    fn header(h: &r2r::std_msgs::msg::Header) -> b::Header {
        b::Header { stamp: time(&h.stamp), frame_id: h.frame_id.clone() }
    }
    /// `visualization_msgs/MarkerArray`.
    pub fn marker_array(m: &r2r::visualization_msgs::msg::MarkerArray) -> b::Msg {
        let p3 = |p: &r2r::geometry_msgs::msg::Point| [p.x, p.y, p.z];
        let rgba = |c: &r2r::std_msgs::msg::ColorRGBA| [c.r, c.g, c.b, c.a];
        b::Msg::MarkerArray(b::MarkerArray {
            markers: m
                .markers
                .iter()
                .map(|x| b::Marker {
                    header: header(&x.header),
                    ns: x.ns.clone(),
                    id: x.id,
                    type_: x.type_,
                    action: x.action,
                    position: p3(&x.pose.position),
                    orientation_xyzw: [x.pose.orientation.x, x.pose.orientation.y, x.pose.orientation.z, x.pose.orientation.w],
                    scale: [x.scale.x, x.scale.y, x.scale.z],
                    color: rgba(&x.color),
                    lifetime: b::Time { sec: x.lifetime.sec, nanosec: x.lifetime.nanosec },
                    frame_locked: x.frame_locked,
                    points: x.points.iter().map(p3).collect(),
                    colors: x.colors.iter().map(rgba).collect(),
                    text: x.text.clone(),
                    mesh_resource: x.mesh_resource.clone(),
                })
                .collect(),
        })
    }
    /// `sensor_msgs/JointState`.
    pub fn joint_state(m: &r2r::sensor_msgs::msg::JointState) -> b::Msg {
        b::Msg::JointState(b::JointState { header: header(&m.header), name: m.name.clone(), position: m.position.clone(), velocity: m.velocity.clone(), effort: m.effort.clone() })
    }
    /// `std_msgs/Float64MultiArray`.
    pub fn float64_multi_array(m: &r2r::std_msgs::msg::Float64MultiArray) -> b::Msg {
        b::Msg::Float64MultiArray(b::Float64MultiArray {
            dim: m.layout.dim.iter().map(|d| b::MultiArrayDimension { label: d.label.clone(), size: d.size, stride: d.stride }).collect(),
            data_offset: m.layout.data_offset,
            data: m.data.clone(),
        })
    }
    /// `trajectory_msgs/JointTrajectory`.
    pub fn joint_trajectory(m: &r2r::trajectory_msgs::msg::JointTrajectory) -> b::Msg {
        b::Msg::JointTrajectory(b::JointTrajectory {
            header: header(&m.header),
            joint_names: m.joint_names.clone(),
            points: m
                .points
                .iter()
                .map(|p| b::JointTrajectoryPoint {
                    positions: p.positions.clone(),
                    velocities: p.velocities.clone(),
                    accelerations: p.accelerations.clone(),
                    effort: p.effort.clone(),
                    time_from_start: b::Time { sec: p.time_from_start.sec, nanosec: p.time_from_start.nanosec },
                })
                .collect(),
        })
    }
    /// `diagnostic_msgs/DiagnosticArray`.
    pub fn diagnostic_array(m: &r2r::diagnostic_msgs::msg::DiagnosticArray) -> b::Msg {
        b::Msg::DiagnosticArray(b::DiagnosticArray {
            header: header(&m.header),
            status: m
                .status
                .iter()
                .map(|s| b::DiagnosticStatus {
                    level: s.level,
                    name: s.name.clone(),
                    message: s.message.clone(),
                    hardware_id: s.hardware_id.clone(),
                    values: s.values.iter().map(|kv| b::KeyValue { key: kv.key.clone(), value: kv.value.clone() }).collect(),
                })
                .collect(),
        })
    }
}
