//! What a ROS 2 graph is told about the scene's robots, without ROS types: each robot's URDF (for
//! `robot_description`), its root link and how that link is attached to the world (for TF). The
//! node (`ros::graph`) publishes these; bags, headless ones included, record the same latched
//! messages ([`latched_messages`]) so that a bag opens in Foxglove or RViz with the robot model
//! and its fixed bases in place.
//!
//! Topics and frames (relative names, so they follow the node's namespace):
//! - `robot_description` (std_msgs/String, latched) with one robot in the scene,
//!   `<robot>/robot_description` per robot with several;
//! - `tf_static`: `world_frame → <root link>` of every fixed base, where the scene welds it;
//! - `tf` (dynamic, at the `joint_states` rate): `world_frame → <root link>` of every floating
//!   base. The world frame is z up, metres; link frames are the URDF's link names, unprefixed.

use crate::bag::msgs::Msg;
use crate::bag::topics::{description_msg, static_tf_msg};
use crate::math::Pose;
use crate::model::{JointKind, Model};

/// How a robot's root link is attached to the world.
#[derive(Clone, Debug, PartialEq)]
pub enum BaseFrame {
    /// A floating base: its pose is `Sample::bases[index]` (the index in
    /// [`crate::rt::messages::JointLayout::bases`]).
    Floating {
        /// Index into the sample's floating bases.
        index: usize,
    },
    /// A base welded to the world at this pose (root link origin in the world frame).
    Fixed(Pose),
}

/// One robot as the ROS graph sees it.
#[derive(Clone, Debug)]
pub struct RobotDescription {
    /// The robot's name in the scene.
    pub robot: String,
    /// The URDF text (the file the scene loads, unchanged).
    pub urdf: String,
    /// The URDF's root link (the child frame of the robot's world transform).
    pub root_link: String,
    /// How the root link moves.
    pub base: BaseFrame,
}

/// A static transform: child frame, translation (m) and rotation `[x y z w]` in the world frame.
pub type StaticFrame = (String, [f64; 3], [f64; 4]);

impl RobotDescription {
    /// Reads every robot of `model`: its URDF text from the file it was loaded from, its root
    /// link and base. Floating bases are numbered in model order, as in
    /// [`crate::rt::messages::JointLayout::bases`]. Errors name the robot and the file.
    pub fn from_model(model: &Model) -> Result<Vec<RobotDescription>, String> {
        let mut out = Vec::new();
        let mut floating = 0;
        for r in &model.robots {
            let tree = &model.trees[r.tree];
            let root = &model.bodies[tree.body_start];
            let base = if root.joint.kind == JointKind::Free {
                floating += 1;
                BaseFrame::Floating { index: floating - 1 }
            } else {
                BaseFrame::Fixed(root.joint.x_parent_joint)
            };
            let urdf = crate::validate::read_text_bounded(std::path::Path::new(&r.source), crate::validate::MAX_TEXT_FILE_BYTES).map_err(|e| format!("robot '{}': reading its URDF {} for robot_description: {e}", r.name, r.source))?;
            out.push(RobotDescription { robot: r.name.clone(), urdf, root_link: root.name.clone(), base });
        }
        Ok(out)
    }
}

/// The `robot_description` topic of robot `robot` when the scene has `robots` robots:
/// `robot_description` for one, `<robot>/robot_description` for several (relative names).
pub fn description_topic(robot: &str, robots: usize) -> String {
    if robots == 1 {
        "robot_description".to_string()
    } else {
        format!("{robot}/robot_description")
    }
}

/// The `tf_static` frames: `world → root link` of every fixed-base robot (empty when none is
/// fixed).
pub fn static_frames(robots: &[RobotDescription]) -> Vec<StaticFrame> {
    robots
        .iter()
        .filter_map(|r| match &r.base {
            BaseFrame::Fixed(pose) => {
                let p = pose.translation.vector;
                let q = pose.rotation.coords; // [i, j, k, w]
                Some((r.root_link.clone(), [p.x, p.y, p.z], [q.x, q.y, q.z, q.w]))
            }
            BaseFrame::Floating { .. } => None,
        })
        .collect()
}

/// The latched messages a bag records once at its start, as the node publishes them:
/// `robot_description` per robot and (when a robot has a fixed base) `tf_static` in
/// `world_frame`, stamped `stamp_ns`. Relative topic names.
pub fn latched_messages(robots: &[RobotDescription], world_frame: &str, stamp_ns: i64) -> Vec<(String, Msg)> {
    let mut out: Vec<(String, Msg)> = robots.iter().map(|r| (description_topic(&r.robot, robots.len()), description_msg(&r.urdf))).collect();
    let frames = static_frames(robots);
    if !frames.is_empty() {
        out.push(("tf_static".into(), static_tf_msg(world_frame, stamp_ns, &frames)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_and_static_frames() {
        assert_eq!(description_topic("arm", 1), "robot_description");
        assert_eq!(description_topic("arm", 2), "arm/robot_description");
        let pose = Pose::from_parts(nalgebra::Translation3::new(0.0, 1.2, 0.5), nalgebra::UnitQuaternion::from_euler_angles(0.0, 0.0, std::f64::consts::FRAC_PI_2));
        let robots = vec![
            RobotDescription { robot: "q".into(), urdf: "<robot name='q'/>".into(), root_link: "trunk".into(), base: BaseFrame::Floating { index: 0 } },
            RobotDescription { robot: "arm".into(), urdf: "<robot name='arm'/>".into(), root_link: "arm_base".into(), base: BaseFrame::Fixed(pose) },
        ];
        let frames = static_frames(&robots);
        assert_eq!(frames.len(), 1, "only the fixed base is static");
        let (child, t, q) = &frames[0];
        assert_eq!(child, "arm_base");
        assert_eq!((t[1], t[2]), (1.2, 0.5));
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((q[2] - h).abs() < 1e-12 && (q[3] - h).abs() < 1e-12, "90° about z: {q:?}");
        let latched = latched_messages(&robots, "odom", 7);
        let topics: Vec<&str> = latched.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(topics, ["q/robot_description", "arm/robot_description", "tf_static"]);
        let Msg::TFMessage(tf) = &latched[2].1 else { panic!("tf_static is a TFMessage") };
        assert_eq!((tf.transforms[0].header.frame_id.as_str(), tf.transforms[0].child_frame_id.as_str()), ("odom", "arm_base"));
        assert!(latched_messages(&robots[..1], "odom", 7).iter().all(|(t, _)| t != "tf_static"), "no fixed base, no tf_static");
    }
}
