//! The ROS 2 messages contact_sim records and replays, as plain Rust structs (no r2r), with
//! their CDR encoding and the `.msg` definitions stored as MCAP schemas (`ros2msg` encoding).
//!
//! Field layouts follow the ROS 2 interface definitions exactly (Jazzy/Kilted); units and frames
//! are those of the topics that carry them (see [`super::topics`]).

use super::cdr::{CdrError, CdrReader, CdrWriter};

/// `builtin_interfaces/Time` (also used for `builtin_interfaces/Duration`, same layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    /// Seconds.
    pub sec: i32,
    /// Nanoseconds, `0..1e9`.
    pub nanosec: u32,
}

impl Time {
    /// From nanoseconds (negative values clamp to zero).
    pub fn from_ns(ns: i64) -> Self {
        let ns = ns.max(0);
        Time { sec: (ns / 1_000_000_000).min(i32::MAX as i64) as i32, nanosec: (ns % 1_000_000_000) as u32 }
    }
    /// Nanoseconds.
    pub fn to_ns(self) -> i64 {
        self.sec as i64 * 1_000_000_000 + self.nanosec as i64
    }
    /// Seconds.
    pub fn to_s(self) -> f64 {
        self.sec as f64 + self.nanosec as f64 * 1e-9
    }
    fn write(&self, w: &mut CdrWriter) {
        w.i32(self.sec);
        w.u32(self.nanosec);
    }
    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(Time { sec: r.i32("Time.sec")?, nanosec: r.u32("Time.nanosec")? })
    }
}

/// `std_msgs/Header`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// Stamp.
    pub stamp: Time,
    /// Frame of the data.
    pub frame_id: String,
}

impl Header {
    /// A header with the given stamp (ns) and frame.
    pub fn new(stamp_ns: i64, frame_id: &str) -> Self {
        Header { stamp: Time::from_ns(stamp_ns), frame_id: frame_id.to_string() }
    }
    fn write(&self, w: &mut CdrWriter) {
        self.stamp.write(w);
        w.string(&self.frame_id);
    }
    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(Header { stamp: Time::read(r)?, frame_id: r.string("Header.frame_id")? })
    }
}

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

/// `diagnostic_msgs/KeyValue`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyValue {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

/// `diagnostic_msgs/DiagnosticStatus`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiagnosticStatus {
    /// 0 OK, 1 WARN, 2 ERROR, 3 STALE.
    pub level: u8,
    /// Name.
    pub name: String,
    /// Message.
    pub message: String,
    /// Hardware id.
    pub hardware_id: String,
    /// Values.
    pub values: Vec<KeyValue>,
}

/// `diagnostic_msgs/DiagnosticArray`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiagnosticArray {
    /// Header.
    pub header: Header,
    /// Statuses.
    pub status: Vec<DiagnosticStatus>,
}

/// `rosgraph_msgs/Clock`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// The time.
    pub clock: Time,
}

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

/// `geometry_msgs/TransformStamped`: the pose of `child_frame_id` in `header.frame_id`.
#[derive(Clone, Debug, PartialEq)]
pub struct TransformStamped {
    /// Header: stamp and the parent frame.
    pub header: Header,
    /// The child frame.
    pub child_frame_id: String,
    /// Translation (m), parent axes.
    pub translation: [f64; 3],
    /// Rotation quaternion `[x y z w]`.
    pub rotation_xyzw: [f64; 4],
}

impl Default for TransformStamped {
    fn default() -> Self {
        TransformStamped { header: Header::default(), child_frame_id: String::new(), translation: [0.0; 3], rotation_xyzw: [0.0, 0.0, 0.0, 1.0] }
    }
}

/// `tf2_msgs/TFMessage` (the type of `/tf` and `/tf_static`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TFMessage {
    /// The transforms.
    pub transforms: Vec<TransformStamped>,
}

/// `std_msgs/String` (e.g. `robot_description`: a URDF).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StringMsg {
    /// The text.
    pub data: String,
}

/// `visualization_msgs/Marker`, the fields contact_sim uses; the texture, UV, mesh-file and mesh
/// fields of the ROS 2 definition are written empty and skipped when read.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Header: stamp and frame.
    pub header: Header,
    /// Namespace.
    pub ns: String,
    /// Id within the namespace.
    pub id: i32,
    /// Type (ARROW 0, SPHERE_LIST 7, ...).
    pub type_: i32,
    /// Action (ADD 0, DELETE 2, DELETEALL 3).
    pub action: i32,
    /// Pose position (m).
    pub position: [f64; 3],
    /// Pose orientation `[x y z w]`.
    pub orientation_xyzw: [f64; 4],
    /// Scale (m; meaning per type).
    pub scale: [f64; 3],
    /// Colour `[r g b a]`, 0–1.
    pub color: [f32; 4],
    /// Lifetime (0 = forever).
    pub lifetime: Time,
    /// Keep the marker in its frame as the frame moves.
    pub frame_locked: bool,
    /// Points (m).
    pub points: Vec<[f64; 3]>,
    /// Per-point colours.
    pub colors: Vec<[f32; 4]>,
    /// Text (TEXT_VIEW_FACING).
    pub text: String,
    /// Mesh resource URI (MESH_RESOURCE).
    pub mesh_resource: String,
}

impl Default for Marker {
    fn default() -> Self {
        Marker {
            header: Header::default(),
            ns: String::new(),
            id: 0,
            type_: 0,
            action: 0,
            position: [0.0; 3],
            orientation_xyzw: [0.0, 0.0, 0.0, 1.0],
            scale: [0.0; 3],
            color: [0.0; 4],
            lifetime: Time::default(),
            frame_locked: false,
            points: vec![],
            colors: vec![],
            text: String::new(),
            mesh_resource: String::new(),
        }
    }
}

/// `visualization_msgs/MarkerArray` (the type of `contact_markers`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarkerArray {
    /// The markers.
    pub markers: Vec<Marker>,
}

/// The message types contact_sim reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MsgType {
    /// `sensor_msgs/msg/JointState`.
    JointState,
    /// `geometry_msgs/msg/WrenchStamped`.
    WrenchStamped,
    /// `nav_msgs/msg/Odometry`.
    Odometry,
    /// `diagnostic_msgs/msg/DiagnosticArray`.
    DiagnosticArray,
    /// `rosgraph_msgs/msg/Clock`.
    Clock,
    /// `std_msgs/msg/Float64MultiArray`.
    Float64MultiArray,
    /// `trajectory_msgs/msg/JointTrajectory`.
    JointTrajectory,
    /// `tf2_msgs/msg/TFMessage`.
    TFMessage,
    /// `std_msgs/msg/String`.
    String,
    /// `visualization_msgs/msg/MarkerArray`.
    MarkerArray,
}

/// A decoded message.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// `sensor_msgs/msg/JointState`.
    JointState(JointState),
    /// `geometry_msgs/msg/WrenchStamped`.
    WrenchStamped(WrenchStamped),
    /// `nav_msgs/msg/Odometry`.
    Odometry(Box<Odometry>),
    /// `diagnostic_msgs/msg/DiagnosticArray`.
    DiagnosticArray(DiagnosticArray),
    /// `rosgraph_msgs/msg/Clock`.
    Clock(Clock),
    /// `std_msgs/msg/Float64MultiArray`.
    Float64MultiArray(Float64MultiArray),
    /// `trajectory_msgs/msg/JointTrajectory`.
    JointTrajectory(JointTrajectory),
    /// `tf2_msgs/msg/TFMessage`.
    TFMessage(TFMessage),
    /// `std_msgs/msg/String`.
    String(StringMsg),
    /// `visualization_msgs/msg/MarkerArray`.
    MarkerArray(MarkerArray),
}

const SEP: &str = "================================================================================\n";
const TIME: &str = "int32 sec\nuint32 nanosec\n";
const HEADER: &str = "builtin_interfaces/Time stamp\nstring frame_id\n";
const VECTOR3: &str = "float64 x\nfloat64 y\nfloat64 z\n";
const MARKER: &str = "int32 ARROW=0\nint32 CUBE=1\nint32 SPHERE=2\nint32 CYLINDER=3\nint32 LINE_STRIP=4\nint32 LINE_LIST=5\nint32 CUBE_LIST=6\nint32 SPHERE_LIST=7\nint32 POINTS=8\nint32 TEXT_VIEW_FACING=9\nint32 MESH_RESOURCE=10\nint32 TRIANGLE_LIST=11\nint32 ARROW_STRIP=12\nint32 ADD=0\nint32 MODIFY=0\nint32 DELETE=2\nint32 DELETEALL=3\nstd_msgs/Header header\nstring ns\nint32 id\nint32 type\nint32 action\ngeometry_msgs/Pose pose\ngeometry_msgs/Vector3 scale\nstd_msgs/ColorRGBA color\nbuiltin_interfaces/Duration lifetime\nbool frame_locked\ngeometry_msgs/Point[] points\nstd_msgs/ColorRGBA[] colors\nstring texture_resource\nsensor_msgs/CompressedImage texture\nUVCoordinate[] uv_coordinates\nstring text\nstring mesh_resource\nMeshFile mesh_file\nbool mesh_use_embedded_materials\n";

fn read_rgba(r: &mut CdrReader) -> Result<[f32; 4], CdrError> {
    Ok([r.f32("ColorRGBA.r")?, r.f32("ColorRGBA.g")?, r.f32("ColorRGBA.b")?, r.f32("ColorRGBA.a")?])
}

fn read_marker(r: &mut CdrReader) -> Result<Marker, CdrError> {
    let header = Header::read(r)?;
    let ns = r.string("Marker.ns")?;
    let id = r.i32("Marker.id")?;
    let type_ = r.i32("Marker.type")?;
    let action = r.i32("Marker.action")?;
    let position = r.f64_array("Marker.pose.position")?;
    let orientation_xyzw = r.f64_array("Marker.pose.orientation")?;
    let scale = r.f64_array("Marker.scale")?;
    let color = read_rgba(r)?;
    let lifetime = Time::read(r)?;
    let frame_locked = r.u8("Marker.frame_locked")? != 0;
    let n = r.seq_len("Marker.points", 24)?;
    let points = (0..n).map(|_| r.f64_array("Marker.points")).collect::<Result<Vec<_>, _>>()?;
    let n = r.seq_len("Marker.colors", 16)?;
    let colors = (0..n).map(|_| read_rgba(r)).collect::<Result<Vec<_>, _>>()?;
    let _texture_resource = r.string("Marker.texture_resource")?;
    let _texture_header = Header::read(r)?;
    let _texture_format = r.string("Marker.texture.format")?;
    let _texture_data = r.u8_seq("Marker.texture.data")?;
    let n = r.seq_len("Marker.uv_coordinates", 8)?;
    for _ in 0..n {
        r.f32("UVCoordinate.u")?;
        r.f32("UVCoordinate.v")?;
    }
    let text = r.string("Marker.text")?;
    let mesh_resource = r.string("Marker.mesh_resource")?;
    let _mesh_filename = r.string("Marker.mesh_file.filename")?;
    let _mesh_data = r.u8_seq("Marker.mesh_file.data")?;
    let _embedded = r.u8("Marker.mesh_use_embedded_materials")?;
    Ok(Marker { header, ns, id, type_, action, position, orientation_xyzw, scale, color, lifetime, frame_locked, points, colors, text, mesh_resource })
}

fn write_marker(w: &mut CdrWriter, m: &Marker) {
    m.header.write(w);
    w.string(&m.ns);
    w.i32(m.id);
    w.i32(m.type_);
    w.i32(m.action);
    w.f64_array(&m.position);
    w.f64_array(&m.orientation_xyzw);
    w.f64_array(&m.scale);
    m.color.iter().for_each(|&c| w.f32(c));
    m.lifetime.write(w);
    w.u8(m.frame_locked as u8);
    w.u32(m.points.len() as u32);
    m.points.iter().for_each(|p| w.f64_array(p));
    w.u32(m.colors.len() as u32);
    m.colors.iter().for_each(|c| c.iter().for_each(|&x| w.f32(x)));
    w.string(""); // texture_resource
    Header::default().write(w); // texture (sensor_msgs/CompressedImage): header, format, data
    w.string("");
    w.u8_seq(&[]);
    w.u32(0); // uv_coordinates
    w.string(&m.text);
    w.string(&m.mesh_resource);
    w.string(""); // mesh_file: filename, data
    w.u8_seq(&[]);
    w.u8(0); // mesh_use_embedded_materials
}

fn schema(main: &str, deps: &[(&str, &str)]) -> String {
    let mut s = main.to_string();
    for (name, text) in deps {
        s.push_str(SEP);
        s.push_str("MSG: ");
        s.push_str(name);
        s.push('\n');
        s.push_str(text);
    }
    s
}

impl MsgType {
    /// All types.
    pub const ALL: [MsgType; 10] = [
        MsgType::JointState,
        MsgType::WrenchStamped,
        MsgType::Odometry,
        MsgType::DiagnosticArray,
        MsgType::Clock,
        MsgType::Float64MultiArray,
        MsgType::JointTrajectory,
        MsgType::TFMessage,
        MsgType::String,
        MsgType::MarkerArray,
    ];

    /// The ROS 2 type name, e.g. `sensor_msgs/msg/JointState`.
    pub fn name(self) -> &'static str {
        match self {
            MsgType::JointState => "sensor_msgs/msg/JointState",
            MsgType::WrenchStamped => "geometry_msgs/msg/WrenchStamped",
            MsgType::Odometry => "nav_msgs/msg/Odometry",
            MsgType::DiagnosticArray => "diagnostic_msgs/msg/DiagnosticArray",
            MsgType::Clock => "rosgraph_msgs/msg/Clock",
            MsgType::Float64MultiArray => "std_msgs/msg/Float64MultiArray",
            MsgType::JointTrajectory => "trajectory_msgs/msg/JointTrajectory",
            MsgType::TFMessage => "tf2_msgs/msg/TFMessage",
            MsgType::String => "std_msgs/msg/String",
            MsgType::MarkerArray => "visualization_msgs/msg/MarkerArray",
        }
    }

    /// The type of a ROS 2 type name (`pkg/msg/Type` or `pkg/Type`).
    pub fn from_name(name: &str) -> Option<MsgType> {
        let norm = name.replacen("/msg/", "/", 1);
        MsgType::ALL.into_iter().find(|t| t.name().replacen("/msg/", "/", 1) == norm)
    }

    /// The `ros2msg` schema text: the `.msg` definition, then each dependency after a line of 80
    /// `=` and `MSG: pkg/Type`.
    pub fn schema(self) -> String {
        match self {
            MsgType::JointState => schema(
                "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n",
                &[("std_msgs/Header", HEADER), ("builtin_interfaces/Time", TIME)],
            ),
            MsgType::WrenchStamped => schema(
                "std_msgs/Header header\ngeometry_msgs/Wrench wrench\n",
                &[
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    ("geometry_msgs/Wrench", "geometry_msgs/Vector3 force\ngeometry_msgs/Vector3 torque\n"),
                    ("geometry_msgs/Vector3", VECTOR3),
                ],
            ),
            MsgType::Odometry => schema(
                "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n",
                &[
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    ("geometry_msgs/PoseWithCovariance", "geometry_msgs/Pose pose\nfloat64[36] covariance\n"),
                    ("geometry_msgs/Pose", "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"),
                    ("geometry_msgs/Point", VECTOR3),
                    ("geometry_msgs/Quaternion", "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"),
                    ("geometry_msgs/TwistWithCovariance", "geometry_msgs/Twist twist\nfloat64[36] covariance\n"),
                    ("geometry_msgs/Twist", "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"),
                    ("geometry_msgs/Vector3", VECTOR3),
                ],
            ),
            MsgType::DiagnosticArray => schema(
                "std_msgs/Header header\ndiagnostic_msgs/DiagnosticStatus[] status\n",
                &[
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    (
                        "diagnostic_msgs/DiagnosticStatus",
                        "byte OK=0\nbyte WARN=1\nbyte ERROR=2\nbyte STALE=3\nbyte level\nstring name\nstring message\nstring hardware_id\ndiagnostic_msgs/KeyValue[] values\n",
                    ),
                    ("diagnostic_msgs/KeyValue", "string key\nstring value\n"),
                ],
            ),
            MsgType::Clock => schema("builtin_interfaces/Time clock\n", &[("builtin_interfaces/Time", TIME)]),
            MsgType::Float64MultiArray => schema(
                "std_msgs/MultiArrayLayout layout\nfloat64[] data\n",
                &[
                    ("std_msgs/MultiArrayLayout", "std_msgs/MultiArrayDimension[] dim\nuint32 data_offset\n"),
                    ("std_msgs/MultiArrayDimension", "string label\nuint32 size\nuint32 stride\n"),
                ],
            ),
            MsgType::JointTrajectory => schema(
                "std_msgs/Header header\nstring[] joint_names\ntrajectory_msgs/JointTrajectoryPoint[] points\n",
                &[
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    (
                        "trajectory_msgs/JointTrajectoryPoint",
                        "float64[] positions\nfloat64[] velocities\nfloat64[] accelerations\nfloat64[] effort\nbuiltin_interfaces/Duration time_from_start\n",
                    ),
                    ("builtin_interfaces/Duration", TIME),
                ],
            ),
            MsgType::TFMessage => schema(
                "geometry_msgs/TransformStamped[] transforms\n",
                &[
                    ("geometry_msgs/TransformStamped", "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n"),
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    ("geometry_msgs/Transform", "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n"),
                    ("geometry_msgs/Vector3", VECTOR3),
                    ("geometry_msgs/Quaternion", "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"),
                ],
            ),
            MsgType::String => schema("string data\n", &[]),
            MsgType::MarkerArray => schema(
                "visualization_msgs/Marker[] markers\n",
                &[
                    ("visualization_msgs/Marker", MARKER),
                    ("std_msgs/Header", HEADER),
                    ("builtin_interfaces/Time", TIME),
                    ("geometry_msgs/Pose", "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"),
                    ("geometry_msgs/Point", VECTOR3),
                    ("geometry_msgs/Quaternion", "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"),
                    ("geometry_msgs/Vector3", VECTOR3),
                    ("std_msgs/ColorRGBA", "float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n"),
                    ("builtin_interfaces/Duration", TIME),
                    ("sensor_msgs/CompressedImage", "std_msgs/Header header\nstring format\nuint8[] data\n"),
                    ("visualization_msgs/UVCoordinate", "float32 u\nfloat32 v\n"),
                    ("visualization_msgs/MeshFile", "string filename\nuint8[] data\n"),
                ],
            ),
        }
    }

    /// Decodes a CDR message of this type.
    pub fn decode(self, data: &[u8]) -> Result<Msg, CdrError> {
        let mut r = CdrReader::new(data)?;
        let r = &mut r;
        Ok(match self {
            MsgType::JointState => Msg::JointState(JointState {
                header: Header::read(r)?,
                name: r.string_seq("JointState.name")?,
                position: r.f64_seq("JointState.position")?,
                velocity: r.f64_seq("JointState.velocity")?,
                effort: r.f64_seq("JointState.effort")?,
            }),
            MsgType::WrenchStamped => {
                let header = Header::read(r)?;
                let force = r.f64_array::<3>("WrenchStamped.wrench.force")?;
                let torque = r.f64_array::<3>("WrenchStamped.wrench.torque")?;
                Msg::WrenchStamped(WrenchStamped { header, wrench: Wrench { force, torque } })
            }
            MsgType::Odometry => Msg::Odometry(Box::new(Odometry {
                header: Header::read(r)?,
                child_frame_id: r.string("Odometry.child_frame_id")?,
                position: r.f64_array("Odometry.pose.pose.position")?,
                orientation_xyzw: r.f64_array("Odometry.pose.pose.orientation")?,
                pose_covariance: r.f64_array("Odometry.pose.covariance")?,
                linear: r.f64_array("Odometry.twist.twist.linear")?,
                angular: r.f64_array("Odometry.twist.twist.angular")?,
                twist_covariance: r.f64_array("Odometry.twist.covariance")?,
            })),
            MsgType::DiagnosticArray => {
                let header = Header::read(r)?;
                let n = r.seq_len("DiagnosticArray.status", 20)?;
                let mut status = Vec::with_capacity(n);
                for _ in 0..n {
                    let level = r.u8("DiagnosticStatus.level")?;
                    let name = r.string("DiagnosticStatus.name")?;
                    let message = r.string("DiagnosticStatus.message")?;
                    let hardware_id = r.string("DiagnosticStatus.hardware_id")?;
                    let m = r.seq_len("DiagnosticStatus.values", 8)?;
                    let mut values = Vec::with_capacity(m);
                    for _ in 0..m {
                        values.push(KeyValue { key: r.string("KeyValue.key")?, value: r.string("KeyValue.value")? });
                    }
                    status.push(DiagnosticStatus { level, name, message, hardware_id, values });
                }
                Msg::DiagnosticArray(DiagnosticArray { header, status })
            }
            MsgType::Clock => Msg::Clock(Clock { clock: Time::read(r)? }),
            MsgType::Float64MultiArray => {
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
                Msg::Float64MultiArray(Float64MultiArray { dim, data_offset, data })
            }
            MsgType::JointTrajectory => {
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
                Msg::JointTrajectory(JointTrajectory { header, joint_names, points })
            }
            MsgType::TFMessage => {
                let n = r.seq_len("TFMessage.transforms", 64)?;
                let mut transforms = Vec::with_capacity(n);
                for _ in 0..n {
                    transforms.push(TransformStamped {
                        header: Header::read(r)?,
                        child_frame_id: r.string("TransformStamped.child_frame_id")?,
                        translation: r.f64_array("TransformStamped.transform.translation")?,
                        rotation_xyzw: r.f64_array("TransformStamped.transform.rotation")?,
                    });
                }
                Msg::TFMessage(TFMessage { transforms })
            }
            MsgType::String => Msg::String(StringMsg { data: r.string("String.data")? }),
            MsgType::MarkerArray => {
                let n = r.seq_len("MarkerArray.markers", 100)?;
                let markers = (0..n).map(|_| read_marker(r)).collect::<Result<Vec<_>, _>>()?;
                Msg::MarkerArray(MarkerArray { markers })
            }
        })
    }
}

impl Msg {
    /// The bytes this message holds on the heap, approximately (vector and string payloads; not
    /// the allocator's overhead). The bag recorder's queue budget
    /// ([`super::RecorderOptions::queue_limit_bytes`]) counts messages by this.
    pub fn heap_bytes(&self) -> usize {
        fn s(x: &str) -> usize {
            x.len()
        }
        fn h(x: &Header) -> usize {
            x.frame_id.len()
        }
        fn strings(v: &[String]) -> usize {
            v.len() * std::mem::size_of::<String>() + v.iter().map(|x| x.len()).sum::<usize>()
        }
        let f = std::mem::size_of::<f64>();
        match self {
            Msg::JointState(m) => h(&m.header) + strings(&m.name) + (m.position.len() + m.velocity.len() + m.effort.len()) * f,
            Msg::WrenchStamped(m) => h(&m.header),
            Msg::Odometry(m) => std::mem::size_of::<Odometry>() + h(&m.header) + s(&m.child_frame_id),
            Msg::DiagnosticArray(m) => {
                h(&m.header)
                    + m.status
                        .iter()
                        .map(|st| std::mem::size_of::<DiagnosticStatus>() + s(&st.name) + s(&st.message) + s(&st.hardware_id) + st.values.iter().map(|kv| std::mem::size_of::<KeyValue>() + s(&kv.key) + s(&kv.value)).sum::<usize>())
                        .sum::<usize>()
            }
            Msg::Clock(_) => 0,
            Msg::Float64MultiArray(m) => m.dim.iter().map(|d| std::mem::size_of::<MultiArrayDimension>() + s(&d.label)).sum::<usize>() + m.data.len() * f,
            Msg::JointTrajectory(m) => {
                h(&m.header) + strings(&m.joint_names) + m.points.iter().map(|p| std::mem::size_of::<JointTrajectoryPoint>() + (p.positions.len() + p.velocities.len() + p.accelerations.len() + p.effort.len()) * f).sum::<usize>()
            }
            Msg::TFMessage(m) => m.transforms.iter().map(|t| std::mem::size_of::<TransformStamped>() + h(&t.header) + s(&t.child_frame_id)).sum(),
            Msg::String(m) => s(&m.data),
            Msg::MarkerArray(m) => m
                .markers
                .iter()
                .map(|x| std::mem::size_of::<Marker>() + h(&x.header) + s(&x.ns) + s(&x.text) + s(&x.mesh_resource) + x.points.len() * 24 + x.colors.len() * 16)
                .sum(),
        }
    }

    /// The message's type.
    pub fn msg_type(&self) -> MsgType {
        match self {
            Msg::JointState(_) => MsgType::JointState,
            Msg::WrenchStamped(_) => MsgType::WrenchStamped,
            Msg::Odometry(_) => MsgType::Odometry,
            Msg::DiagnosticArray(_) => MsgType::DiagnosticArray,
            Msg::Clock(_) => MsgType::Clock,
            Msg::Float64MultiArray(_) => MsgType::Float64MultiArray,
            Msg::JointTrajectory(_) => MsgType::JointTrajectory,
            Msg::TFMessage(_) => MsgType::TFMessage,
            Msg::String(_) => MsgType::String,
            Msg::MarkerArray(_) => MsgType::MarkerArray,
        }
    }

    /// The header stamp (ns), if the type has a header (`Clock`: its time).
    pub fn stamp_ns(&self) -> Option<i64> {
        match self {
            Msg::JointState(m) => Some(m.header.stamp.to_ns()),
            Msg::WrenchStamped(m) => Some(m.header.stamp.to_ns()),
            Msg::Odometry(m) => Some(m.header.stamp.to_ns()),
            Msg::DiagnosticArray(m) => Some(m.header.stamp.to_ns()),
            Msg::Clock(m) => Some(m.clock.to_ns()),
            Msg::JointTrajectory(m) => Some(m.header.stamp.to_ns()),
            Msg::TFMessage(m) => m.transforms.first().map(|t| t.header.stamp.to_ns()),
            Msg::MarkerArray(m) => m.markers.first().map(|x| x.header.stamp.to_ns()),
            Msg::Float64MultiArray(_) | Msg::String(_) => None,
        }
    }

    /// Encodes as CDR (little endian, with the encapsulation header, no trailing padding).
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(256);
        self.encode_into(&mut buf);
        buf
    }

    /// [`Msg::encode`] into `buf` (replacing its contents, reusing its capacity).
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut w = CdrWriter::reusing(std::mem::take(buf));
        match self {
            Msg::JointState(m) => {
                m.header.write(&mut w);
                w.string_seq(&m.name);
                w.f64_seq(&m.position);
                w.f64_seq(&m.velocity);
                w.f64_seq(&m.effort);
            }
            Msg::WrenchStamped(m) => {
                m.header.write(&mut w);
                w.f64_array(&m.wrench.force);
                w.f64_array(&m.wrench.torque);
            }
            Msg::Odometry(m) => {
                m.header.write(&mut w);
                w.string(&m.child_frame_id);
                w.f64_array(&m.position);
                w.f64_array(&m.orientation_xyzw);
                w.f64_array(&m.pose_covariance);
                w.f64_array(&m.linear);
                w.f64_array(&m.angular);
                w.f64_array(&m.twist_covariance);
            }
            Msg::DiagnosticArray(m) => {
                m.header.write(&mut w);
                w.u32(m.status.len() as u32);
                for s in &m.status {
                    w.u8(s.level);
                    w.string(&s.name);
                    w.string(&s.message);
                    w.string(&s.hardware_id);
                    w.u32(s.values.len() as u32);
                    for kv in &s.values {
                        w.string(&kv.key);
                        w.string(&kv.value);
                    }
                }
            }
            Msg::Clock(m) => m.clock.write(&mut w),
            Msg::Float64MultiArray(m) => {
                w.u32(m.dim.len() as u32);
                for d in &m.dim {
                    w.string(&d.label);
                    w.u32(d.size);
                    w.u32(d.stride);
                }
                w.u32(m.data_offset);
                w.f64_seq(&m.data);
            }
            Msg::JointTrajectory(m) => {
                m.header.write(&mut w);
                w.string_seq(&m.joint_names);
                w.u32(m.points.len() as u32);
                for p in &m.points {
                    w.f64_seq(&p.positions);
                    w.f64_seq(&p.velocities);
                    w.f64_seq(&p.accelerations);
                    w.f64_seq(&p.effort);
                    p.time_from_start.write(&mut w);
                }
            }
            Msg::TFMessage(m) => {
                w.u32(m.transforms.len() as u32);
                for t in &m.transforms {
                    t.header.write(&mut w);
                    w.string(&t.child_frame_id);
                    w.f64_array(&t.translation);
                    w.f64_array(&t.rotation_xyzw);
                }
            }
            Msg::String(m) => w.string(&m.data),
            Msg::MarkerArray(m) => {
                w.u32(m.markers.len() as u32);
                for x in &m.markers {
                    write_marker(&mut w, x);
                }
            }
        }
        *buf = w.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Msg> {
        vec![
            Msg::JointState(JointState {
                header: Header::new(1_500_000_123, "base"),
                name: vec!["a".into(), "bb".into()],
                position: vec![0.1, -0.2],
                velocity: vec![1.0, 2.0],
                effort: vec![],
            }),
            Msg::WrenchStamped(WrenchStamped { header: Header::new(7, "ft"), wrench: Wrench { force: [1.0, 2.0, 3.0], torque: [4.0, 5.0, 6.0] } }),
            Msg::Odometry(Box::new(Odometry { child_frame_id: "trunk".into(), position: [1.0, 2.0, 3.0], ..Default::default() })),
            Msg::DiagnosticArray(DiagnosticArray {
                header: Header::new(9, ""),
                status: vec![DiagnosticStatus { level: 1, name: "x".into(), message: "m".into(), hardware_id: "h".into(), values: vec![KeyValue { key: "k".into(), value: "v".into() }] }],
            }),
            Msg::Clock(Clock { clock: Time { sec: 3, nanosec: 4 } }),
            Msg::Float64MultiArray(Float64MultiArray { dim: vec![MultiArrayDimension { label: "j".into(), size: 2, stride: 2 }], data_offset: 0, data: vec![0.5, 0.25] }),
            Msg::JointTrajectory(JointTrajectory {
                header: Header::new(0, ""),
                joint_names: vec!["a".into()],
                points: vec![JointTrajectoryPoint { positions: vec![1.0], time_from_start: Time { sec: 1, nanosec: 0 }, ..Default::default() }],
            }),
            Msg::TFMessage(TFMessage {
                transforms: vec![
                    TransformStamped { header: Header::new(5, "odom"), child_frame_id: "base".into(), translation: [1.0, 2.0, 3.0], rotation_xyzw: [0.0, 0.0, 0.6, 0.8] },
                    TransformStamped { header: Header::new(5, "odom"), child_frame_id: "arm_base".into(), ..Default::default() },
                ],
            }),
            Msg::String(StringMsg { data: "<robot name=\"r\"/>".into() }),
            Msg::MarkerArray(MarkerArray {
                markers: vec![
                    Marker { action: 3, ..Default::default() },
                    Marker { header: Header::new(5, "odom"), ns: "contact_forces".into(), id: 2, type_: 0, scale: [0.005, 0.01, 0.01], color: [0.1, 0.8, 0.2, 1.0], points: vec![[0.0, 0.0, 0.0], [0.0, 0.0, 0.04]], colors: vec![[1.0, 0.0, 0.0, 1.0]], ..Default::default() },
                ],
            }),
        ]
    }

    #[test]
    fn every_type_round_trips() {
        for m in samples() {
            let bytes = m.encode();
            let back = m.msg_type().decode(&bytes).unwrap();
            assert_eq!(back, m);
            assert_eq!(MsgType::from_name(m.msg_type().name()), Some(m.msg_type()));
        }
    }

    #[test]
    fn decoding_garbage_or_cut_messages_never_panics() {
        for m in samples() {
            let bytes = m.encode();
            for cut in 0..bytes.len() {
                let _ = m.msg_type().decode(&bytes[..cut]);
            }
            for t in MsgType::ALL {
                let _ = t.decode(&bytes);
            }
        }
    }
}
