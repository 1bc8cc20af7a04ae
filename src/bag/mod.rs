//! rosbag2 bags in MCAP storage: writing, tolerant reading, background recording, and replaying
//! a hardware bag's commands into the simulation. Pure Rust, no ROS install needed.
//!
//! | module | owns |
//! |---|---|
//! | [`cdr`] | little-endian CDR encoding with correct alignment |
//! | [`msgs`] | the message structs (JointState, WrenchStamped, Odometry, DiagnosticArray, Clock, Float64MultiArray, JointTrajectory, TFMessage, String, MarkerArray), each with its [`msgs::RosMessage`] impl: CDR and `.msg` schema |
//! | [`writer`] | [`BagWriter`]: a bag directory (`<name>_0.mcap` + `metadata.yaml` v9) |
//! | [`reader`] | [`read_bag`]: reads what is readable, warns about the rest |
//! | [`recorder`] | [`BagRecorder`]: a writer thread behind a bounded queue; producers never block |
//! | [`topics`] | the node's topic names; [`topics::SampleTopics`] turns real-time samples into messages |
//! | [`run`] | [`run::RunRecorder`]: records a headless run as the node would publish it |
//! | [`replay`] | feeds a bag's recorded commands into a simulation and records the response |
//! | [`robots`] | what the graph is told about the robots: `robot_description`, static and floating base frames |
//!
//! Times: MCAP log times and header stamps are nanoseconds. Bags recorded headless or in
//! `sim_time` mode carry simulation time; the node in `realtime` mode, system time.

pub mod cdr;
pub mod msgs;
pub mod reader;
pub mod recorder;
pub mod replay;
pub mod robots;
pub mod run;
pub mod topics;
pub mod writer;

pub use reader::{read_bag, Bag, BagMessage, TopicInfo};
pub use recorder::{BagRecorder, RecordHandle, RecorderOptions, RecordingSummary};
pub use writer::{BagSummary, BagWriter, OfferedQos, TopicId, WriterOptions};

use std::path::Path;

/// A bag could not be written or read at all (what can be skipped is a warning instead, see
/// [`Bag::warnings`]).
#[derive(Debug, thiserror::Error)]
pub enum BagError {
    /// A file system error.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The MCAP library failed.
    #[error("{path}: MCAP: {reason}")]
    Mcap {
        /// The file.
        path: String,
        /// What the library said.
        reason: String,
    },
    /// The bag or a request about it is not valid.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file, directory or topic.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl BagError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        BagError::Io { path: path.display().to_string(), source }
    }
    fn mcap(path: &Path, e: mcap::McapError) -> Self {
        BagError::Mcap { path: path.display().to_string(), reason: e.to_string() }
    }
}
