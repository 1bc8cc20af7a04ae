//! [`BagWriter`]: a rosbag2 bag in MCAP storage, written synchronously.
//!
//! Layout: the bag directory holds `<name>_0.mcap` and `metadata.yaml` (rosbag2 metadata
//! version 9, storage `mcap`). The MCAP file has profile `ros2`, one schema per message type
//! (encoding `ros2msg`), one channel per topic (message encoding `cdr`), and chunked,
//! uncompressed data.
//!
//! **Split files.** Like rosbag2's `--max-bag-size` / `--max-bag-duration`, a bag is split into
//! `<name>_1.mcap`, `<name>_2.mcap`, ... once the open file holds
//! [`WriterOptions::max_file_bytes`] of messages or spans [`WriterOptions::max_file_duration_s`];
//! `metadata.yaml` lists every file. Each file is complete on its own (schemas, channels, summary).
//! Besides keeping files a manageable size, splitting bounds the writer's memory: an MCAP writer
//! keeps one chunk index (about 0.5 kB) per written chunk until the file is finished, that is
//! about 2 MB per GiB of messages with 256 KiB chunks; an unsplit hour of the node's full
//! recording (15 GB) would hold about 30 MB of them.
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
    /// A new file is started once the open one holds this many bytes of messages (bytes, counted
    /// as serialized messages plus their record headers; `None` = one file). Default 1 GiB.
    pub max_file_bytes: Option<u64>,
    /// A new file is started once the open one spans this long in log time (s; `None` = no
    /// limit, the default).
    pub max_file_duration_s: Option<f64>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions { chunk_size_bytes: 256 * 1024, ros_distro: "kilted".into(), max_file_bytes: Some(1 << 30), max_file_duration_s: None }
    }
}

/// Bytes an MCAP message record adds to its payload (opcode, length, channel, sequence, two
/// times) plus its message-index entry: the writer's estimate of a file's size.
const MESSAGE_RECORD_OVERHEAD_BYTES: u64 = 1 + 8 + 2 + 4 + 8 + 8 + 16;

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
    /// The topic's channel id in the open file.
    channel: u16,
    count: u64,
}

/// One file of the bag: name, log-time range and message count (for `metadata.yaml`).
struct FileEntry {
    name: String,
    range: Option<(u64, u64)>,
    messages: u64,
    /// Serialized bytes written, with the record overhead.
    bytes: u64,
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
    /// File names are `<stem>_<k>.mcap`.
    stem: String,
    /// The files so far; the last one is open.
    files: Vec<FileEntry>,
    /// Unbuffered file: a completed chunk goes straight to the OS (nothing of it is left in a
    /// user-space buffer when the process is killed).
    mcap: Option<mcap::Writer<File>>,
    topics: Vec<TopicEntry>,
    /// Schema ids of the open file.
    schemas: HashMap<MsgType, u16>,
    range: Option<(u64, u64)>,
    messages: u64,
    opts: WriterOptions,
    /// Reused serialization buffer.
    cdr: Vec<u8>,
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
        let mut bw = BagWriter { dir: dir.to_path_buf(), stem, files: vec![], mcap: None, topics: vec![], schemas: HashMap::new(), range: None, messages: 0, opts: opts.clone(), cdr: Vec::new() };
        bw.open_next_file()?;
        bw.write_metadata()?;
        Ok(bw)
    }

    /// Opens `<stem>_<k>.mcap` (k = the number of files so far) and declares every known topic in
    /// it. The previous file must be finished.
    fn open_next_file(&mut self) -> Result<(), BagError> {
        let name = format!("{}_{}.mcap", self.stem, self.files.len());
        let path = self.dir.join(&name);
        let f = File::create(&path).map_err(|e| BagError::io(&path, e))?;
        let w = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("contact_sim ", env!("CARGO_PKG_VERSION")))
            .compression(None)
            .chunk_size(Some(self.opts.chunk_size_bytes.max(1024)))
            .create(f)
            .map_err(|e| BagError::mcap(&path, e))?;
        self.mcap = Some(w);
        self.files.push(FileEntry { name, range: None, messages: 0, bytes: 0 });
        self.schemas.clear();
        for i in 0..self.topics.len() {
            let (name, ty, qos) = (self.topics[i].name.clone(), self.topics[i].ty, self.topics[i].qos);
            self.topics[i].channel = self.declare(&name, ty, qos)?;
        }
        Ok(())
    }

    /// Adds the schema (once per file) and a channel for a topic to the open file.
    fn declare(&mut self, name: &str, ty: MsgType, qos: OfferedQos) -> Result<u16, BagError> {
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
        mcap.add_channel(schema, name, "cdr", &meta).map_err(|e| BagError::mcap(&path, e))
    }

    /// Finishes the open file (summary, footer) if there is one.
    fn finish_file(&mut self) -> Result<(), BagError> {
        let path = self.mcap_path();
        if let Some(mut w) = self.mcap.take() {
            w.finish().map_err(|e| BagError::mcap(&path, e))?;
            let mut inner = w.into_inner();
            inner.flush().map_err(|e| BagError::io(&path, e))?;
        }
        Ok(())
    }

    /// Whether a message at `log_time_ns` goes to a new file.
    fn file_is_full(&self, log_time_ns: u64) -> bool {
        let f = self.files.last().expect("a file");
        if f.messages == 0 {
            return false;
        }
        let by_size = self.opts.max_file_bytes.is_some_and(|max| f.bytes >= max);
        let by_time = match (self.opts.max_file_duration_s, f.range) {
            (Some(d), Some((start, _))) => log_time_ns.saturating_sub(start) as f64 * 1e-9 >= d,
            _ => false,
        };
        by_size || by_time
    }

    fn mcap_path(&self) -> PathBuf {
        self.dir.join(&self.files.last().expect("a file").name)
    }

    /// The bag's files so far (names relative to the bag directory; the last one is open).
    pub fn file_names(&self) -> Vec<String> {
        self.files.iter().map(|f| f.name.clone()).collect()
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
        let channel = self.declare(name, ty, qos)?;
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
        let mut cdr = std::mem::take(&mut self.cdr);
        msg.encode_into(&mut cdr);
        let r = self.write_raw(topic, log_time_ns, publish, &cdr);
        self.cdr = cdr;
        r
    }

    /// Writes already-serialized CDR bytes.
    pub fn write_raw(&mut self, topic: TopicId, log_time_ns: u64, publish_time_ns: u64, cdr: &[u8]) -> Result<(), BagError> {
        if self.topics.get(topic.0 as usize).is_none() {
            return Err(BagError::Invalid { path: self.mcap_path().display().to_string(), reason: format!("no topic with id {}", topic.0) });
        }
        if self.file_is_full(log_time_ns) {
            self.finish_file()?;
            self.open_next_file()?;
            self.write_metadata()?;
        }
        let path = self.mcap_path();
        let t = &mut self.topics[topic.0 as usize];
        let header = mcap::records::MessageHeader { channel_id: t.channel, sequence: t.count as u32, log_time: log_time_ns, publish_time: publish_time_ns };
        self.mcap.as_mut().expect("open").write_to_known_channel(&header, cdr).map_err(|e| BagError::mcap(&path, e))?;
        t.count += 1;
        self.messages += 1;
        self.range = Some(widen(self.range, log_time_ns));
        let f = self.files.last_mut().expect("a file");
        f.messages += 1;
        f.bytes += cdr.len() as u64 + MESSAGE_RECORD_OVERHEAD_BYTES;
        f.range = Some(widen(f.range, log_time_ns));
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
        self.finish_file()?;
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
        s.push_str("  relative_file_paths:\n");
        for f in &self.files {
            s.push_str(&format!("    - {}\n", yaml_str(&f.name)));
        }
        s.push_str("  files:\n");
        for f in &self.files {
            let (start, end) = f.range.unwrap_or((0, 0));
            s.push_str(&format!(
                "    - path: {}\n      starting_time:\n        nanoseconds_since_epoch: {start}\n      duration:\n        nanoseconds: {}\n      message_count: {}\n",
                yaml_str(&f.name),
                end - start,
                f.messages
            ));
        }
        s.push_str("  custom_data: ~\n");
        s.push_str(&format!("  ros_distro: {}\n", yaml_str(&self.opts.ros_distro)));
        // write-then-rename: a crash never leaves a half-written metadata file
        let tmp = self.dir.join(".metadata.yaml.tmp");
        let dst = self.dir.join("metadata.yaml");
        std::fs::write(&tmp, s).map_err(|e| BagError::io(&tmp, e))?;
        std::fs::rename(&tmp, &dst).map_err(|e| BagError::io(&dst, e))
    }
}

/// A log-time range widened to hold `t`.
fn widen(range: Option<(u64, u64)>, t: u64) -> (u64, u64) {
    match range {
        None => (t, t),
        Some((a, b)) => (a.min(t), b.max(t)),
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
