//! [`BagWriter`]: a rosbag2 bag in MCAP storage, written synchronously.
//!
//! Layout: the bag directory holds `<name>_0.mcap` and `metadata.yaml` (rosbag2 metadata
//! version 9, storage `mcap`). The MCAP file has profile `ros2`, one schema per message type
//! (encoding `ros2msg`), one channel per topic (message encoding `cdr`), and chunked,
//! uncompressed data.
//!
//! Crash safety: messages sit in memory in the open chunk until it reaches
//! [`WriterOptions::chunk_size_bytes`] or [`BagWriter::flush`] is called; then the chunk (with its
//! message index) goes to the file and the file is flushed. `metadata.yaml` is written when the
//! bag is created and rewritten at every flush, so an interrupted bag has a metadata file and an
//! MCAP file that ends after the last complete chunk: [`super::reader::read_bag`] reads it (with a
//! warning). A killed process loses the open chunk only: the file is not buffered in user space,
//! so every completed chunk is in the OS's hands (a power loss can lose more: no `fsync`).

use super::msgs::{Msg, MsgType};
use super::BagError;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Identifies a topic of a bag being written (index in registration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TopicId(pub u16);

/// Options of a [`BagWriter`].
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// A chunk is written to the file once it holds this many bytes of messages (bytes). Bounds
    /// what a killed process loses. Default 256 KiB.
    pub chunk_size_bytes: u64,
    /// `ros_distro` written in `metadata.yaml`.
    pub ros_distro: String,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions { chunk_size_bytes: 256 * 1024, ros_distro: "kilted".into() }
    }
}

/// The QoS profile a publisher offers on a topic, recorded with the topic (rosbag2's
/// `offered_qos_profiles`, in `metadata.yaml` and in the MCAP channel's metadata) so that
/// `ros2 bag play` offers the same profile again: a latched topic replays latched, and a
/// subscriber that joins after the start of the playback still receives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OfferedQos {
    /// Reliable, volatile, keep last 10: the default publisher profile of rclcpp and r2r, which
    /// the node uses for its streams (`joint_states`, `odom`, `tf`, wrenches, ...).
    #[default]
    Stream,
    /// Reliable, transient local, keep last 1: published once and kept for late subscribers
    /// (`robot_description`, `tf_static`), as robot_state_publisher and tf2 do.
    Latched,
}

impl OfferedQos {
    /// History depth (messages kept).
    pub fn depth(self) -> u32 {
        match self {
            OfferedQos::Stream => 10,
            OfferedQos::Latched => 1,
        }
    }

    /// Durability policy name, as rmw spells it (`volatile`, `transient_local`).
    pub fn durability(self) -> &'static str {
        match self {
            OfferedQos::Stream => "volatile",
            OfferedQos::Latched => "transient_local",
        }
    }

    /// The profile as a one-element YAML sequence in rosbag2's metadata version 9 form (policy
    /// names as strings; deadline, lifespan and lease unset, written as rmw's infinite duration
    /// 9223372036 s 854775807 ns), each line prefixed with `indent`.
    pub fn yaml_sequence(self, indent: &str) -> String {
        const INFINITE: &str = "\n    sec: 9223372036\n    nsec: 854775807";
        let body = format!(
            "- history: keep_last\n  depth: {}\n  reliability: reliable\n  durability: {}\n  deadline:{INFINITE}\n  lifespan:{INFINITE}\n  liveliness: automatic\n  liveliness_lease_duration:{INFINITE}\n  avoid_ros_namespace_conventions: false",
            self.depth(),
            self.durability()
        );
        body.lines().map(|l| format!("{indent}{l}\n")).collect()
    }
}

struct TopicEntry {
    name: String,
    ty: MsgType,
    qos: OfferedQos,
    channel: u16,
    count: u64,
}

/// What was written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BagSummary {
    /// The bag directory.
    pub dir: PathBuf,
    /// Messages written.
    pub messages: u64,
    /// Per topic: name, type, message count.
    pub topics: Vec<(String, String, u64)>,
    /// First and last log time (ns), if any message.
    pub time_range_ns: Option<(u64, u64)>,
}

/// Writes a rosbag2 (MCAP) bag. See the module docs for the layout and crash safety.
pub struct BagWriter {
    dir: PathBuf,
    file_name: String,
    /// Unbuffered file: a completed chunk goes straight to the OS (nothing of it is left in a
    /// user-space buffer when the process is killed).
    mcap: Option<mcap::Writer<File>>,
    topics: Vec<TopicEntry>,
    schemas: HashMap<MsgType, u16>,
    range: Option<(u64, u64)>,
    messages: u64,
    ros_distro: String,
}

impl BagWriter {
    /// Creates the bag directory `dir` (it must not exist, or be empty) with
    /// `<dirname>_0.mcap` and an initial `metadata.yaml`.
    pub fn create(dir: &Path, opts: &WriterOptions) -> Result<Self, BagError> {
        if dir.exists() {
            let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false);
            if !empty {
                return Err(BagError::Invalid { path: dir.display().to_string(), reason: "exists and is not an empty directory (a bag is never overwritten)".into() });
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| BagError::io(dir, e))?;
        let stem = dir.file_name().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty() && s != "..").unwrap_or_else(|| "bag".into());
        let file_name = format!("{stem}_0.mcap");
        let path = dir.join(&file_name);
        let f = File::create(&path).map_err(|e| BagError::io(&path, e))?;
        let w = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("contact_sim ", env!("CARGO_PKG_VERSION")))
            .compression(None)
            .chunk_size(Some(opts.chunk_size_bytes.max(1024)))
            .create(f)
            .map_err(|e| BagError::mcap(&path, e))?;
        let bw = BagWriter { dir: dir.to_path_buf(), file_name, mcap: Some(w), topics: vec![], schemas: HashMap::new(), range: None, messages: 0, ros_distro: opts.ros_distro.clone() };
        bw.write_metadata()?;
        Ok(bw)
    }

    fn mcap_path(&self) -> PathBuf {
        self.dir.join(&self.file_name)
    }

    /// The bag directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a topic (a fully qualified name such as `/joint_states`) offered with the default
    /// stream profile ([`OfferedQos::Stream`]). Adding the same name and type twice returns the
    /// same id; the same name with another type is an error.
    pub fn add_topic(&mut self, name: &str, ty: MsgType) -> Result<TopicId, BagError> {
        self.add_topic_with_qos(name, ty, OfferedQos::Stream)
    }

    /// [`BagWriter::add_topic`] with the QoS profile the publisher offers (recorded, so that a
    /// replay offers it again).
    pub fn add_topic_with_qos(&mut self, name: &str, ty: MsgType, qos: OfferedQos) -> Result<TopicId, BagError> {
        if let Some(i) = self.topics.iter().position(|t| t.name == name) {
            if self.topics[i].ty != ty {
                return Err(BagError::Invalid { path: self.mcap_path().display().to_string(), reason: format!("topic '{name}' already has type {}, not {}", self.topics[i].ty.name(), ty.name()) });
            }
            return Ok(TopicId(i as u16));
        }
        let path = self.mcap_path();
        let mcap = self.mcap.as_mut().expect("open");
        let schema = match self.schemas.get(&ty) {
            Some(&s) => s,
            None => {
                let s = mcap.add_schema(ty.name(), "ros2msg", ty.schema().as_bytes()).map_err(|e| BagError::mcap(&path, e))?;
                self.schemas.insert(ty, s);
                s
            }
        };
        let mut meta = BTreeMap::new();
        meta.insert("offered_qos_profiles".to_string(), qos.yaml_sequence(""));
        let channel = mcap.add_channel(schema, name, "cdr", &meta).map_err(|e| BagError::mcap(&path, e))?;
        self.topics.push(TopicEntry { name: name.to_string(), ty, qos, channel, count: 0 });
        Ok(TopicId((self.topics.len() - 1) as u16))
    }

    /// Writes a message at `log_time_ns` (publish time = the header stamp when it has one).
    pub fn write(&mut self, topic: TopicId, log_time_ns: u64, msg: &Msg) -> Result<(), BagError> {
        let t = self.topics.get(topic.0 as usize).ok_or_else(|| BagError::Invalid { path: self.mcap_path().display().to_string(), reason: format!("no topic with id {}", topic.0) })?;
        if t.ty != msg.msg_type() {
            return Err(BagError::Invalid { path: self.mcap_path().display().to_string(), reason: format!("topic '{}' has type {}, got a {}", t.name, t.ty.name(), msg.msg_type().name()) });
        }
        let publish = msg.stamp_ns().filter(|&s| s > 0).map(|s| s as u64).unwrap_or(log_time_ns);
        self.write_raw(topic, log_time_ns, publish, &msg.encode())
    }

    /// Writes already-serialized CDR bytes.
    pub fn write_raw(&mut self, topic: TopicId, log_time_ns: u64, publish_time_ns: u64, cdr: &[u8]) -> Result<(), BagError> {
        let path = self.mcap_path();
        let t = self.topics.get_mut(topic.0 as usize).ok_or_else(|| BagError::Invalid { path: path.display().to_string(), reason: format!("no topic with id {}", topic.0) })?;
        let header = mcap::records::MessageHeader { channel_id: t.channel, sequence: t.count as u32, log_time: log_time_ns, publish_time: publish_time_ns };
        self.mcap.as_mut().expect("open").write_to_known_channel(&header, cdr).map_err(|e| BagError::mcap(&path, e))?;
        t.count += 1;
        self.messages += 1;
        self.range = Some(match self.range {
            None => (log_time_ns, log_time_ns),
            Some((a, b)) => (a.min(log_time_ns), b.max(log_time_ns)),
        });
        Ok(())
    }

    /// Ends the open chunk, writes it and flushes the file, and rewrites `metadata.yaml`.
    pub fn flush(&mut self) -> Result<(), BagError> {
        let path = self.mcap_path();
        self.mcap.as_mut().expect("open").flush().map_err(|e| BagError::mcap(&path, e))?;
        self.write_metadata()
    }

    /// Finishes the MCAP file (summary, footer) and writes the final `metadata.yaml`.
    pub fn finish(mut self) -> Result<BagSummary, BagError> {
        self.close()
    }

    fn close(&mut self) -> Result<BagSummary, BagError> {
        let path = self.mcap_path();
        if let Some(mut w) = self.mcap.take() {
            w.finish().map_err(|e| BagError::mcap(&path, e))?;
            let mut inner = w.into_inner();
            inner.flush().map_err(|e| BagError::io(&path, e))?;
        }
        self.write_metadata()?;
        Ok(BagSummary {
            dir: self.dir.clone(),
            messages: self.messages,
            topics: self.topics.iter().map(|t| (t.name.clone(), t.ty.name().to_string(), t.count)).collect(),
            time_range_ns: self.range,
        })
    }

    /// `metadata.yaml` (rosbag2 version 9).
    fn write_metadata(&self) -> Result<(), BagError> {
        let (start, end) = self.range.unwrap_or((0, 0));
        let duration = end - start;
        let mut s = String::new();
        s.push_str("rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n");
        s.push_str(&format!("  duration:\n    nanoseconds: {duration}\n  starting_time:\n    nanoseconds_since_epoch: {start}\n"));
        s.push_str(&format!("  message_count: {}\n  topics_with_message_count:\n", self.messages));
        if self.topics.is_empty() {
            s.truncate(s.len() - 1);
            s.push_str(" []\n");
        }
        for t in &self.topics {
            s.push_str(&format!(
                "    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n        offered_qos_profiles:\n{}        type_description_hash: \"\"\n      message_count: {}\n",
                yaml_str(&t.name),
                t.ty.name(),
                t.qos.yaml_sequence("          "),
                t.count
            ));
        }
        s.push_str("  compression_format: \"\"\n  compression_mode: \"\"\n");
        s.push_str(&format!("  relative_file_paths:\n    - {}\n", yaml_str(&self.file_name)));
        s.push_str(&format!(
            "  files:\n    - path: {}\n      starting_time:\n        nanoseconds_since_epoch: {start}\n      duration:\n        nanoseconds: {duration}\n      message_count: {}\n",
            yaml_str(&self.file_name),
            self.messages
        ));
        s.push_str("  custom_data: ~\n");
        s.push_str(&format!("  ros_distro: {}\n", yaml_str(&self.ros_distro)));
        // write-then-rename: a crash never leaves a half-written metadata file
        let tmp = self.dir.join(".metadata.yaml.tmp");
        let dst = self.dir.join("metadata.yaml");
        std::fs::write(&tmp, s).map_err(|e| BagError::io(&tmp, e))?;
        std::fs::rename(&tmp, &dst).map_err(|e| BagError::io(&dst, e))
    }
}

/// A YAML double-quoted scalar.
fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Drop for BagWriter {
    /// A writer dropped without [`BagWriter::finish`] (e.g. on an error path) still closes the
    /// file properly.
    fn drop(&mut self) {
        if self.mcap.is_some() {
            let _ = self.close();
        }
    }
}
