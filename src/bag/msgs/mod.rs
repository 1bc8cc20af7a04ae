//! The ROS 2 messages contact_sim records and replays, as plain Rust structs (no r2r), with
//! their CDR encoding and the `.msg` definitions stored as MCAP schemas (`ros2msg` encoding).
//!
//! Field layouts follow the ROS 2 interface definitions exactly (Jazzy/Kilted); units and frames
//! are those of the topics that carry them (see [`super::topics`]).
//!
//! Each message is a struct with one [`RosMessage`] impl next to it (type name, `.msg` schema,
//! CDR read and write, heap bytes, header stamp), grouped by family:
//!
//! | module | messages |
//! |---|---|
//! | `sensor` | [`JointState`], [`WrenchStamped`], [`Odometry`] |
//! | `diagnostics` | [`DiagnosticArray`] |
//! | `commands` | [`Float64MultiArray`], [`JointTrajectory`] |
//! | `graph` | [`Clock`], [`TFMessage`], [`StringMsg`], [`MarkerArray`] |
//!
//! [`MsgType`] and [`Msg`] are generated from one list (`Variant(payload)`, at the
//! `messages!` invocation below); each of their methods is one `match` calling the trait. Adding
//! a message: a struct, its impl, one line in that list.

mod commands;
mod diagnostics;
mod graph;
mod sensor;

pub use commands::{Float64MultiArray, JointTrajectory, JointTrajectoryPoint, MultiArrayDimension};
pub use diagnostics::{DiagnosticArray, DiagnosticStatus, KeyValue};
pub use graph::{Clock, Marker, MarkerArray, StringMsg, TFMessage, TransformStamped};
pub use sensor::{JointState, Odometry, Wrench, WrenchStamped};

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
    /// Heap bytes: the frame id.
    fn heap_bytes(&self) -> usize {
        self.frame_id.len()
    }
}

/// One ROS 2 message type: what each [`MsgType`] / [`Msg`] method needs of it.
pub trait RosMessage: Sized {
    /// The ROS 2 type name, e.g. `sensor_msgs/msg/JointState`.
    const NAME: &'static str;
    /// The `.msg` definition.
    const DEFINITION: &'static str;
    /// The definitions of the types it uses, `(pkg/Type, .msg text)`, in schema order.
    const DEPENDENCIES: &'static [(&'static str, &'static str)];

    /// Reads the fields (after the encapsulation header).
    fn read(r: &mut CdrReader) -> Result<Self, CdrError>;

    /// Writes the fields (after the encapsulation header).
    fn write(&self, w: &mut CdrWriter);

    /// See [`Msg::heap_bytes`].
    fn heap_bytes(&self) -> usize;

    /// The header stamp (ns), if the type has one (default: none).
    fn stamp_ns(&self) -> Option<i64> {
        None
    }

    /// The `ros2msg` schema text: [`Self::DEFINITION`], then each dependency after a line of 80
    /// `=` and `MSG: pkg/Type`.
    fn schema() -> String {
        let mut s = Self::DEFINITION.to_string();
        for (name, text) in Self::DEPENDENCIES {
            s.push_str(SEP);
            s.push_str("MSG: ");
            s.push_str(name);
            s.push('\n');
            s.push_str(text);
        }
        s
    }
}

const SEP: &str = "================================================================================\n";
const TIME: &str = "int32 sec\nuint32 nanosec\n";
const HEADER: &str = "builtin_interfaces/Time stamp\nstring frame_id\n";
const VECTOR3: &str = "float64 x\nfloat64 y\nfloat64 z\n";
const QUATERNION: &str = "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
const POSE: &str = "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n";

/// Heap bytes of a string sequence: the `String`s and their text.
fn strings_heap_bytes(v: &[String]) -> usize {
    v.len() * std::mem::size_of::<String>() + v.iter().map(|x| x.len()).sum::<usize>()
}

/// How a [`Msg`] variant holds its message: by value, or boxed (`Odometry`: two 6×6
/// covariances).
trait Payload {
    type Message: RosMessage;
    fn message(&self) -> &Self::Message;
    fn wrap(m: Self::Message) -> Self;
}

impl<T: RosMessage> Payload for T {
    type Message = T;
    fn message(&self) -> &T {
        self
    }
    fn wrap(m: T) -> T {
        m
    }
}

impl Payload for Box<Odometry> {
    type Message = Odometry;
    fn message(&self) -> &Odometry {
        self
    }
    fn wrap(m: Odometry) -> Self {
        Box::new(m)
    }
}

/// [`MsgType`], [`Msg`] and their dispatch from one list of `Variant(payload)` (payload: the
/// message struct, or `Box` of it); each variant's doc comment documents both enums.
macro_rules! messages {
    ($($(#[$doc:meta])* $v:ident($p:ty),)*) => {
        /// The message types contact_sim reads and writes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MsgType {
            $($(#[$doc])* $v,)*
        }

        /// A decoded message.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Msg {
            $($(#[$doc])* $v($p),)*
        }

        impl MsgType {
            /// All types.
            pub const ALL: [MsgType; [$(MsgType::$v),*].len()] = [$(MsgType::$v),*];

            /// The ROS 2 type name, e.g. `sensor_msgs/msg/JointState`.
            pub fn name(self) -> &'static str {
                match self {
                    $(MsgType::$v => <<$p as Payload>::Message as RosMessage>::NAME,)*
                }
            }

            /// The `ros2msg` schema text: the `.msg` definition, then each dependency after a
            /// line of 80 `=` and `MSG: pkg/Type`.
            pub fn schema(self) -> String {
                match self {
                    $(MsgType::$v => <<$p as Payload>::Message as RosMessage>::schema(),)*
                }
            }

            /// Decodes a CDR message of this type.
            pub fn decode(self, data: &[u8]) -> Result<Msg, CdrError> {
                let mut r = CdrReader::new(data)?;
                Ok(match self {
                    $(MsgType::$v => Msg::$v(<$p as Payload>::wrap(RosMessage::read(&mut r)?)),)*
                })
            }
        }

        impl Msg {
            /// The bytes this message holds on the heap, approximately (vector and string
            /// payloads; not the allocator's overhead). The bag recorder's queue budget
            /// ([`super::RecorderOptions::queue_limit_bytes`]) counts messages by this.
            pub fn heap_bytes(&self) -> usize {
                match self {
                    $(Msg::$v(m) => RosMessage::heap_bytes(Payload::message(m)),)*
                }
            }

            /// The message's type.
            pub fn msg_type(&self) -> MsgType {
                match self {
                    $(Msg::$v(_) => MsgType::$v,)*
                }
            }

            /// The header stamp (ns), if the type has a header (`Clock`: its time).
            pub fn stamp_ns(&self) -> Option<i64> {
                match self {
                    $(Msg::$v(m) => RosMessage::stamp_ns(Payload::message(m)),)*
                }
            }

            /// [`Msg::encode`] into `buf` (replacing its contents, reusing its capacity).
            pub fn encode_into(&self, buf: &mut Vec<u8>) {
                let mut w = CdrWriter::reusing(std::mem::take(buf));
                match self {
                    $(Msg::$v(m) => RosMessage::write(Payload::message(m), &mut w),)*
                }
                *buf = w.finish();
            }
        }
    };
}

messages! {
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

impl MsgType {
    /// The type of a ROS 2 type name (`pkg/msg/Type` or `pkg/Type`).
    pub fn from_name(name: &str) -> Option<MsgType> {
        let norm = name.replacen("/msg/", "/", 1);
        MsgType::ALL.into_iter().find(|t| t.name().replacen("/msg/", "/", 1) == norm)
    }
}

impl Msg {
    /// Encodes as CDR (little endian, with the encapsulation header, no trailing padding).
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(256);
        self.encode_into(&mut buf);
        buf
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
