//! What the node tells the rest of a ROS 2 graph about its robots: `robot_description` and TF.
//!
//! - **`robot_description`** (std_msgs/String, reliable, transient local, depth 1: a subscriber
//!   that joins later still gets it): the robot's URDF, as the file the scene loads. With one
//!   robot in the scene the topic is `robot_description`; with several, one per robot,
//!   `<robot>/robot_description` (the robot's name in the scene). Relative names: they follow the
//!   node's namespace.
//! - **TF** (tf2_msgs/TFMessage): `tf` carries `odom_frame → <root link>` of every floating
//!   base at the rate of `/joint_states` (the pose of `odom`, same stamp); `tf_static` carries
//!   `odom_frame → <root link>` of every fixed base (where the scene welds it in the world).
//!   Together with `robot_state_publisher` (links from `joint_states`) that is the whole tree
//!   `odom → base → links`. The topics are relative (`tf`, `tf_static`): in the root namespace
//!   they are the usual `/tf` and `/tf_static`; in a namespace they follow it, as the
//!   multi-robot convention of remapping `/tf` to `tf` does.
//!
//! The world frame is the node's `odom_frame` parameter (default `odom`): the simulation's world
//! (z up, metres), fixed. Link frames are the URDF's link names, unprefixed.

use crate::rt::messages::Sample;
pub use crate::bag::robots::{description_topic, BaseFrame, RobotDescription};
use r2r::builtin_interfaces::msg::Time;
use r2r::geometry_msgs::msg::{Quaternion, Transform, TransformStamped, Vector3};
use r2r::tf2_msgs::msg::TFMessage;

fn transform(world_frame: &str, child: &str, p: [f64; 3], q_xyzw: [f64; 4], stamp: &Time) -> TransformStamped {
    let mut t = TransformStamped { child_frame_id: child.to_string(), ..Default::default() };
    t.header.frame_id = world_frame.to_string();
    t.header.stamp = stamp.clone();
    t.transform = Transform { translation: Vector3 { x: p[0], y: p[1], z: p[2] }, rotation: Quaternion { x: q_xyzw[0], y: q_xyzw[1], z: q_xyzw[2], w: q_xyzw[3] } };
    t
}

/// The `tf_static` message: `world_frame → root link` of every fixed-base robot
/// ([`crate::bag::robots::static_frames`]), stamped `stamp`. Empty when no robot has a fixed
/// base.
pub fn static_transforms(robots: &[RobotDescription], world_frame: &str, stamp: &Time) -> TFMessage {
    let transforms = crate::bag::robots::static_frames(robots).into_iter().map(|(child, p, q)| transform(world_frame, &child, p, q, stamp)).collect();
    TFMessage { transforms }
}

/// A reusable `tf` message for the floating bases: one transform per floating base (frames set
/// here, poses by [`fill_dynamic`]). `None` when no robot floats.
pub fn dynamic_transforms(robots: &[RobotDescription], world_frame: &str) -> Option<(TFMessage, Vec<usize>)> {
    let mut msg = TFMessage::default();
    let mut index = Vec::new();
    for r in robots {
        if let BaseFrame::Floating { index: k } = r.base {
            msg.transforms.push(transform(world_frame, &r.root_link, [0.0; 3], [0.0, 0.0, 0.0, 1.0], &Time::default()));
            index.push(k);
        }
    }
    if msg.transforms.is_empty() {
        None
    } else {
        Some((msg, index))
    }
}

/// Writes the floating bases' poses of `sample` into a message from [`dynamic_transforms`]
/// (`bases[i]` is the sample base of `msg.transforms[i]`). No allocation.
pub fn fill_dynamic(msg: &mut TFMessage, bases: &[usize], sample: &Sample, stamp: &Time) {
    for (t, &k) in msg.transforms.iter_mut().zip(bases) {
        if let Some(b) = sample.bases.get(k) {
            t.header.stamp = stamp.clone();
            let [x, y, z] = b.position;
            let [qx, qy, qz, qw] = b.orientation_xyzw;
            t.transform.translation = Vector3 { x, y, z };
            t.transform.rotation = Quaternion { x: qx, y: qy, z: qz, w: qw };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_dynamic_frames() {
        let pose = crate::math::Pose::from_parts(nalgebra::Translation3::new(0.0, 1.2, 0.5), nalgebra::UnitQuaternion::from_euler_angles(0.0, 0.0, std::f64::consts::FRAC_PI_2));
        let robots = vec![
            RobotDescription { robot: "q".into(), urdf: String::new(), root_link: "trunk".into(), base: BaseFrame::Floating { index: 0 } },
            RobotDescription { robot: "arm".into(), urdf: String::new(), root_link: "arm_base".into(), base: BaseFrame::Fixed(pose) },
        ];
        let st = static_transforms(&robots, "odom", &Time::default());
        assert_eq!(st.transforms.len(), 1);
        let t = &st.transforms[0];
        assert_eq!((t.header.frame_id.as_str(), t.child_frame_id.as_str()), ("odom", "arm_base"));
        assert_eq!((t.transform.translation.y, t.transform.translation.z), (1.2, 0.5));
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((t.transform.rotation.z - h).abs() < 1e-12 && (t.transform.rotation.w - h).abs() < 1e-12);
        let (msg, idx) = dynamic_transforms(&robots, "odom").unwrap();
        assert_eq!(idx, vec![0]);
        assert_eq!(msg.transforms[0].child_frame_id, "trunk");
        assert!(dynamic_transforms(&robots[1..], "odom").is_none());
    }
}
