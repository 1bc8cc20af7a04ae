//! The robot's measured state: `sensor_msgs/JointState`, `geometry_msgs/WrenchStamped`,
//! `nav_msgs/Odometry`.

use super::{Header, RosMessage, HEADER, POSE, QUATERNION, TIME, VECTOR3};
use crate::bag::cdr::{CdrError, CdrReader, CdrWriter};

/// `sensor_msgs/JointState`: positions (rad or m), velocities (rad/s or m/s), efforts (N·m or N)
/// by joint name; any of the three arrays may be empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointState {
    /// Header (stamp; frame unused).
    pub header: Header,
    /// Joint names.
    pub name: Vec<String>,
    /// Positions (rad or m).
    pub position: Vec<f64>,
    /// Velocities (rad/s or m/s).
    pub velocity: Vec<f64>,
    /// Efforts (N·m or N).
    pub effort: Vec<f64>,
}

impl RosMessage for JointState {
    const NAME: &'static str = "sensor_msgs/msg/JointState";
    const DEFINITION: &'static str = "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[("std_msgs/Header", HEADER), ("builtin_interfaces/Time", TIME)];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(JointState {
            header: Header::read(r)?,
            name: r.string_seq("JointState.name")?,
            position: r.f64_seq("JointState.position")?,
            velocity: r.f64_seq("JointState.velocity")?,
            effort: r.f64_seq("JointState.effort")?,
        })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.string_seq(&self.name);
        w.f64_seq(&self.position);
        w.f64_seq(&self.velocity);
        w.f64_seq(&self.effort);
    }

    fn heap_bytes(&self) -> usize {
        self.header.heap_bytes() + super::strings_heap_bytes(&self.name) + (self.position.len() + self.velocity.len() + self.effort.len()) * std::mem::size_of::<f64>()
    }

    fn stamp_ns(&self) -> Option<i64> {
        Some(self.header.stamp.to_ns())
    }
}

/// `geometry_msgs/Wrench` as `[x y z]` arrays: force (N), torque (N·m).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Wrench {
    /// Force (N).
    pub force: [f64; 3],
    /// Torque (N·m).
    pub torque: [f64; 3],
}

impl Wrench {
    /// From `[fx fy fz tx ty tz]`.
    pub fn from_array(w: &[f64; 6]) -> Self {
        Wrench { force: [w[0], w[1], w[2]], torque: [w[3], w[4], w[5]] }
    }
}

/// `geometry_msgs/WrenchStamped`: a wrench in `header.frame_id`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WrenchStamped {
    /// Header: stamp and the frame of the wrench.
    pub header: Header,
    /// The wrench.
    pub wrench: Wrench,
}

impl RosMessage for WrenchStamped {
    const NAME: &'static str = "geometry_msgs/msg/WrenchStamped";
    const DEFINITION: &'static str = "std_msgs/Header header\ngeometry_msgs/Wrench wrench\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        ("geometry_msgs/Wrench", "geometry_msgs/Vector3 force\ngeometry_msgs/Vector3 torque\n"),
        ("geometry_msgs/Vector3", VECTOR3),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        let header = Header::read(r)?;
        let force = r.f64_array::<3>("WrenchStamped.wrench.force")?;
        let torque = r.f64_array::<3>("WrenchStamped.wrench.torque")?;
        Ok(WrenchStamped { header, wrench: Wrench { force, torque } })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.f64_array(&self.wrench.force);
        w.f64_array(&self.wrench.torque);
    }

    fn heap_bytes(&self) -> usize {
        self.header.heap_bytes()
    }

    fn stamp_ns(&self) -> Option<i64> {
        Some(self.header.stamp.to_ns())
    }
}

/// `nav_msgs/Odometry`: pose of `child_frame_id` in `header.frame_id`, twist in the child frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Odometry {
    /// Header: stamp and the odometry (world) frame.
    pub header: Header,
    /// The body frame (root link).
    pub child_frame_id: String,
    /// Position (m).
    pub position: [f64; 3],
    /// Orientation quaternion `[x y z w]`.
    pub orientation_xyzw: [f64; 4],
    /// Pose covariance (row-major 6×6).
    pub pose_covariance: [f64; 36],
    /// Linear velocity (m/s), child frame.
    pub linear: [f64; 3],
    /// Angular velocity (rad/s), child frame.
    pub angular: [f64; 3],
    /// Twist covariance (row-major 6×6).
    pub twist_covariance: [f64; 36],
}

impl Default for Odometry {
    fn default() -> Self {
        Odometry {
            header: Header::default(),
            child_frame_id: String::new(),
            position: [0.0; 3],
            orientation_xyzw: [0.0, 0.0, 0.0, 1.0],
            pose_covariance: [0.0; 36],
            linear: [0.0; 3],
            angular: [0.0; 3],
            twist_covariance: [0.0; 36],
        }
    }
}

impl RosMessage for Odometry {
    const NAME: &'static str = "nav_msgs/msg/Odometry";
    const DEFINITION: &'static str = "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        ("geometry_msgs/PoseWithCovariance", "geometry_msgs/Pose pose\nfloat64[36] covariance\n"),
        ("geometry_msgs/Pose", POSE),
        ("geometry_msgs/Point", VECTOR3),
        ("geometry_msgs/Quaternion", QUATERNION),
        ("geometry_msgs/TwistWithCovariance", "geometry_msgs/Twist twist\nfloat64[36] covariance\n"),
        ("geometry_msgs/Twist", "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"),
        ("geometry_msgs/Vector3", VECTOR3),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(Odometry {
            header: Header::read(r)?,
            child_frame_id: r.string("Odometry.child_frame_id")?,
            position: r.f64_array("Odometry.pose.pose.position")?,
            orientation_xyzw: r.f64_array("Odometry.pose.pose.orientation")?,
            pose_covariance: r.f64_array("Odometry.pose.covariance")?,
            linear: r.f64_array("Odometry.twist.twist.linear")?,
            angular: r.f64_array("Odometry.twist.twist.angular")?,
            twist_covariance: r.f64_array("Odometry.twist.covariance")?,
        })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.string(&self.child_frame_id);
        w.f64_array(&self.position);
        w.f64_array(&self.orientation_xyzw);
        w.f64_array(&self.pose_covariance);
        w.f64_array(&self.linear);
        w.f64_array(&self.angular);
        w.f64_array(&self.twist_covariance);
    }

    /// The boxed struct itself, and its strings.
    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Odometry>() + self.header.heap_bytes() + self.child_frame_id.len()
    }

    fn stamp_ns(&self) -> Option<i64> {
        Some(self.header.stamp.to_ns())
    }
}
