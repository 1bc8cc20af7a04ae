//! The command messages: `std_msgs/Float64MultiArray` (forward command groups) and
//! `trajectory_msgs/JointTrajectory`.

use super::{Header, RosMessage, Time, HEADER, TIME};
use crate::bag::cdr::{CdrError, CdrReader, CdrWriter};

/// `std_msgs/MultiArrayDimension`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MultiArrayDimension {
    /// Label.
    pub label: String,
    /// Size.
    pub size: u32,
    /// Stride.
    pub stride: u32,
}

/// `std_msgs/Float64MultiArray` (the layout is kept but ignored: `data` is read flat).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Float64MultiArray {
    /// Layout dimensions.
    pub dim: Vec<MultiArrayDimension>,
    /// Layout data offset.
    pub data_offset: u32,
    /// The values (units of the command group's interface).
    pub data: Vec<f64>,
}

impl RosMessage for Float64MultiArray {
    const NAME: &'static str = "std_msgs/msg/Float64MultiArray";
    const DEFINITION: &'static str = "std_msgs/MultiArrayLayout layout\nfloat64[] data\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("std_msgs/MultiArrayLayout", "std_msgs/MultiArrayDimension[] dim\nuint32 data_offset\n"),
        ("std_msgs/MultiArrayDimension", "string label\nuint32 size\nuint32 stride\n"),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        let n = r.seq_len("Float64MultiArray.layout.dim", 12)?;
        let mut dim = Vec::with_capacity(n);
        for _ in 0..n {
            dim.push(MultiArrayDimension {
                label: r.string("MultiArrayDimension.label")?,
                size: r.u32("MultiArrayDimension.size")?,
                stride: r.u32("MultiArrayDimension.stride")?,
            });
        }
        let data_offset = r.u32("Float64MultiArray.layout.data_offset")?;
        let data = r.f64_seq("Float64MultiArray.data")?;
        Ok(Float64MultiArray { dim, data_offset, data })
    }

    fn write(&self, w: &mut CdrWriter) {
        w.u32(self.dim.len() as u32);
        for d in &self.dim {
            w.string(&d.label);
            w.u32(d.size);
            w.u32(d.stride);
        }
        w.u32(self.data_offset);
        w.f64_seq(&self.data);
    }

    fn heap_bytes(&self) -> usize {
        self.dim.iter().map(|d| std::mem::size_of::<MultiArrayDimension>() + d.label.len()).sum::<usize>() + self.data.len() * std::mem::size_of::<f64>()
    }
}

/// `trajectory_msgs/JointTrajectoryPoint`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointTrajectoryPoint {
    /// Positions (rad or m).
    pub positions: Vec<f64>,
    /// Velocities (rad/s or m/s).
    pub velocities: Vec<f64>,
    /// Accelerations (rad/s² or m/s²).
    pub accelerations: Vec<f64>,
    /// Efforts (N·m or N).
    pub effort: Vec<f64>,
    /// Time from the trajectory start (`builtin_interfaces/Duration`).
    pub time_from_start: Time,
}

/// `trajectory_msgs/JointTrajectory`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointTrajectory {
    /// Header: stamp = start time (zero: on receipt).
    pub header: Header,
    /// Joint names.
    pub joint_names: Vec<String>,
    /// Points.
    pub points: Vec<JointTrajectoryPoint>,
}

impl RosMessage for JointTrajectory {
    const NAME: &'static str = "trajectory_msgs/msg/JointTrajectory";
    const DEFINITION: &'static str = "std_msgs/Header header\nstring[] joint_names\ntrajectory_msgs/JointTrajectoryPoint[] points\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        (
            "trajectory_msgs/JointTrajectoryPoint",
            "float64[] positions\nfloat64[] velocities\nfloat64[] accelerations\nfloat64[] effort\nbuiltin_interfaces/Duration time_from_start\n",
        ),
        ("builtin_interfaces/Duration", TIME),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        let header = Header::read(r)?;
        let joint_names = r.string_seq("JointTrajectory.joint_names")?;
        let n = r.seq_len("JointTrajectory.points", 24)?;
        let mut points = Vec::with_capacity(n);
        for _ in 0..n {
            points.push(JointTrajectoryPoint {
                positions: r.f64_seq("JointTrajectoryPoint.positions")?,
                velocities: r.f64_seq("JointTrajectoryPoint.velocities")?,
                accelerations: r.f64_seq("JointTrajectoryPoint.accelerations")?,
                effort: r.f64_seq("JointTrajectoryPoint.effort")?,
                time_from_start: Time::read(r)?,
            });
        }
        Ok(JointTrajectory { header, joint_names, points })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.string_seq(&self.joint_names);
        w.u32(self.points.len() as u32);
        for p in &self.points {
            w.f64_seq(&p.positions);
            w.f64_seq(&p.velocities);
            w.f64_seq(&p.accelerations);
            w.f64_seq(&p.effort);
            p.time_from_start.write(w);
        }
    }

    fn heap_bytes(&self) -> usize {
        let point = |p: &JointTrajectoryPoint| std::mem::size_of::<JointTrajectoryPoint>() + (p.positions.len() + p.velocities.len() + p.accelerations.len() + p.effort.len()) * std::mem::size_of::<f64>();
        self.header.heap_bytes() + super::strings_heap_bytes(&self.joint_names) + self.points.iter().map(point).sum::<usize>()
    }

    fn stamp_ns(&self) -> Option<i64> {
        Some(self.header.stamp.to_ns())
    }
}
