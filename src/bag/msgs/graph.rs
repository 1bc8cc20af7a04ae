//! What the node tells the graph besides the robot's state: `rosgraph_msgs/Clock`,
//! `tf2_msgs/TFMessage`, `std_msgs/String` (robot descriptions) and
//! `visualization_msgs/MarkerArray` (contact markers).

use super::{Header, RosMessage, Time, HEADER, POSE, QUATERNION, TIME, VECTOR3};
use crate::bag::cdr::{CdrError, CdrReader, CdrWriter};

/// `rosgraph_msgs/Clock`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// The time.
    pub clock: Time,
}

impl RosMessage for Clock {
    const NAME: &'static str = "rosgraph_msgs/msg/Clock";
    const DEFINITION: &'static str = "builtin_interfaces/Time clock\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[("builtin_interfaces/Time", TIME)];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(Clock { clock: Time::read(r)? })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.clock.write(w);
    }

    fn heap_bytes(&self) -> usize {
        0
    }

    /// Its time.
    fn stamp_ns(&self) -> Option<i64> {
        Some(self.clock.to_ns())
    }
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

impl RosMessage for TFMessage {
    const NAME: &'static str = "tf2_msgs/msg/TFMessage";
    const DEFINITION: &'static str = "geometry_msgs/TransformStamped[] transforms\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("geometry_msgs/TransformStamped", "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n"),
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        ("geometry_msgs/Transform", "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n"),
        ("geometry_msgs/Vector3", VECTOR3),
        ("geometry_msgs/Quaternion", QUATERNION),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
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
        Ok(TFMessage { transforms })
    }

    fn write(&self, w: &mut CdrWriter) {
        w.u32(self.transforms.len() as u32);
        for t in &self.transforms {
            t.header.write(w);
            w.string(&t.child_frame_id);
            w.f64_array(&t.translation);
            w.f64_array(&t.rotation_xyzw);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.transforms.iter().map(|t| std::mem::size_of::<TransformStamped>() + t.header.heap_bytes() + t.child_frame_id.len()).sum()
    }

    /// The first transform's.
    fn stamp_ns(&self) -> Option<i64> {
        self.transforms.first().map(|t| t.header.stamp.to_ns())
    }
}

/// `std_msgs/String` (e.g. `robot_description`: a URDF).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StringMsg {
    /// The text.
    pub data: String,
}

impl RosMessage for StringMsg {
    const NAME: &'static str = "std_msgs/msg/String";
    const DEFINITION: &'static str = "string data\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        Ok(StringMsg { data: r.string("String.data")? })
    }

    fn write(&self, w: &mut CdrWriter) {
        w.string(&self.data);
    }

    fn heap_bytes(&self) -> usize {
        self.data.len()
    }
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

const MARKER: &str = "int32 ARROW=0\nint32 CUBE=1\nint32 SPHERE=2\nint32 CYLINDER=3\nint32 LINE_STRIP=4\nint32 LINE_LIST=5\nint32 CUBE_LIST=6\nint32 SPHERE_LIST=7\nint32 POINTS=8\nint32 TEXT_VIEW_FACING=9\nint32 MESH_RESOURCE=10\nint32 TRIANGLE_LIST=11\nint32 ARROW_STRIP=12\nint32 ADD=0\nint32 MODIFY=0\nint32 DELETE=2\nint32 DELETEALL=3\nstd_msgs/Header header\nstring ns\nint32 id\nint32 type\nint32 action\ngeometry_msgs/Pose pose\ngeometry_msgs/Vector3 scale\nstd_msgs/ColorRGBA color\nbuiltin_interfaces/Duration lifetime\nbool frame_locked\ngeometry_msgs/Point[] points\nstd_msgs/ColorRGBA[] colors\nstring texture_resource\nsensor_msgs/CompressedImage texture\nUVCoordinate[] uv_coordinates\nstring text\nstring mesh_resource\nMeshFile mesh_file\nbool mesh_use_embedded_materials\n";

fn read_rgba(r: &mut CdrReader) -> Result<[f32; 4], CdrError> {
    Ok([r.f32("ColorRGBA.r")?, r.f32("ColorRGBA.g")?, r.f32("ColorRGBA.b")?, r.f32("ColorRGBA.a")?])
}

impl Marker {
    fn read(r: &mut CdrReader) -> Result<Marker, CdrError> {
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

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.string(&self.ns);
        w.i32(self.id);
        w.i32(self.type_);
        w.i32(self.action);
        w.f64_array(&self.position);
        w.f64_array(&self.orientation_xyzw);
        w.f64_array(&self.scale);
        self.color.iter().for_each(|&c| w.f32(c));
        self.lifetime.write(w);
        w.u8(self.frame_locked as u8);
        w.u32(self.points.len() as u32);
        self.points.iter().for_each(|p| w.f64_array(p));
        w.u32(self.colors.len() as u32);
        self.colors.iter().for_each(|c| c.iter().for_each(|&x| w.f32(x)));
        w.string(""); // texture_resource
        Header::default().write(w); // texture (sensor_msgs/CompressedImage): header, format, data
        w.string("");
        w.u8_seq(&[]);
        w.u32(0); // uv_coordinates
        w.string(&self.text);
        w.string(&self.mesh_resource);
        w.string(""); // mesh_file: filename, data
        w.u8_seq(&[]);
        w.u8(0); // mesh_use_embedded_materials
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Marker>() + self.header.heap_bytes() + self.ns.len() + self.text.len() + self.mesh_resource.len() + self.points.len() * 24 + self.colors.len() * 16
    }
}

/// `visualization_msgs/MarkerArray` (the type of `contact_markers`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarkerArray {
    /// The markers.
    pub markers: Vec<Marker>,
}

impl RosMessage for MarkerArray {
    const NAME: &'static str = "visualization_msgs/msg/MarkerArray";
    const DEFINITION: &'static str = "visualization_msgs/Marker[] markers\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("visualization_msgs/Marker", MARKER),
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        ("geometry_msgs/Pose", POSE),
        ("geometry_msgs/Point", VECTOR3),
        ("geometry_msgs/Quaternion", QUATERNION),
        ("geometry_msgs/Vector3", VECTOR3),
        ("std_msgs/ColorRGBA", "float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n"),
        ("builtin_interfaces/Duration", TIME),
        ("sensor_msgs/CompressedImage", "std_msgs/Header header\nstring format\nuint8[] data\n"),
        ("visualization_msgs/UVCoordinate", "float32 u\nfloat32 v\n"),
        ("visualization_msgs/MeshFile", "string filename\nuint8[] data\n"),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        let n = r.seq_len("MarkerArray.markers", 100)?;
        let markers = (0..n).map(|_| Marker::read(r)).collect::<Result<Vec<_>, _>>()?;
        Ok(MarkerArray { markers })
    }

    fn write(&self, w: &mut CdrWriter) {
        w.u32(self.markers.len() as u32);
        for x in &self.markers {
            x.write(w);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.markers.iter().map(Marker::heap_bytes).sum()
    }

    /// The first marker's.
    fn stamp_ns(&self) -> Option<i64> {
        self.markers.first().map(|x| x.header.stamp.to_ns())
    }
}
