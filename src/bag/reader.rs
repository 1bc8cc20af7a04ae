//! [`read_bag`]: a tolerant rosbag2 (MCAP) reader.
//!
//! It reads what it can and says what it could not, in [`Bag::warnings`], each naming the file
//! or topic:
//! - topics of types contact_sim does not know are listed in [`Bag::topics`] and skipped;
//! - messages that do not decode as their declared type are counted per topic (first error kept);
//! - a file cut in the middle (an interrupted recording, a partial copy) is read up to the last
//!   complete chunk;
//! - a missing or unreadable `metadata.yaml` is a warning (the `.mcap` files in the directory are
//!   read), as is a message count that disagrees with it.
//!
//! Only an unreadable path or a file that is not MCAP at all is an error.

use super::msgs::{Msg, MsgType};
use super::BagError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A topic found in a bag.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicInfo {
    /// Topic name as recorded (normally fully qualified, `/joint_states`).
    pub name: String,
    /// ROS type name as recorded (`sensor_msgs/msg/JointState`).
    pub type_name: String,
    /// The type, when contact_sim knows it.
    pub msg_type: Option<MsgType>,
    /// Messages found.
    pub count: u64,
    /// Messages that failed to decode.
    pub decode_errors: u64,
}

/// One decoded message.
#[derive(Clone, Debug, PartialEq)]
pub struct BagMessage {
    /// Index into [`Bag::topics`].
    pub topic: usize,
    /// Log (receive) time (ns).
    pub log_time_ns: u64,
    /// The message.
    pub msg: Msg,
}

/// The readable content of a bag.
#[derive(Clone, Debug, Default)]
pub struct Bag {
    /// The bag (directory or file) as given.
    pub path: PathBuf,
    /// Every topic seen, known type or not.
    pub topics: Vec<TopicInfo>,
    /// Decoded messages of known types, in file order (log time order for our bags).
    pub messages: Vec<BagMessage>,
    /// What could not be read, one line each, naming the file or topic.
    pub warnings: Vec<String>,
    /// The file ended early (cut, or the recording was killed).
    pub truncated: bool,
}

impl Bag {
    /// The index of a topic by name; `name` may omit the leading `/`.
    pub fn topic_index(&self, name: &str) -> Option<usize> {
        let want = normalize_topic(name);
        self.topics.iter().position(|t| normalize_topic(&t.name) == want)
    }

    /// Messages of one topic.
    pub fn messages_on(&self, topic: usize) -> impl Iterator<Item = &BagMessage> {
        self.messages.iter().filter(move |m| m.topic == topic)
    }

    /// The first log time (ns) over all messages.
    pub fn start_ns(&self) -> Option<u64> {
        self.messages.iter().map(|m| m.log_time_ns).min()
    }

    /// The last log time (ns) over all messages.
    pub fn end_ns(&self) -> Option<u64> {
        self.messages.iter().map(|m| m.log_time_ns).max()
    }

    /// Checks that topic `name` exists with type `ty`: `Ok(Some(index))`; `Ok(None)` when absent;
    /// `Err(message)` naming the topic when it has another type.
    pub fn expect_topic(&self, name: &str, ty: MsgType) -> Result<Option<usize>, String> {
        match self.topic_index(name) {
            None => Ok(None),
            Some(i) if self.topics[i].msg_type == Some(ty) => Ok(Some(i)),
            Some(i) => Err(format!("{}: topic '{}' has type {}, expected {}", self.path.display(), self.topics[i].name, self.topics[i].type_name, ty.name())),
        }
    }
}

/// `joint_states` and `/joint_states` name the same topic (in the root namespace).
pub fn normalize_topic(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    }
}

/// Reads a bag: a rosbag2 directory (its `metadata.yaml` names the files; without it every
/// `*.mcap` in the directory, sorted) or a single `.mcap` file.
pub fn read_bag(path: &Path) -> Result<Bag, BagError> {
    let mut bag = Bag { path: path.to_path_buf(), ..Default::default() };
    let meta = path.is_dir().then(|| read_metadata(path, &mut bag.warnings)).flatten();
    let files: Vec<PathBuf> = if path.is_dir() {
        match &meta {
            Some(m) if !m.files.is_empty() => m.files.iter().map(|f| path.join(f)).collect(),
            _ => {
                let mut v: Vec<PathBuf> = std::fs::read_dir(path)
                    .map_err(|e| BagError::io(path, e))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "mcap"))
                    .collect();
                v.sort();
                if v.is_empty() {
                    return Err(BagError::Invalid { path: path.display().to_string(), reason: "no metadata.yaml and no .mcap file: not a rosbag2 MCAP bag".into() });
                }
                v
            }
        }
    } else if path.exists() {
        vec![path.to_path_buf()]
    } else {
        return Err(BagError::Invalid { path: path.display().to_string(), reason: "no such file or directory".into() });
    };
    let mut topic_of_channel: BTreeMap<(usize, u16), usize> = BTreeMap::new();
    let mut first_error: BTreeMap<usize, String> = BTreeMap::new();
    for (fi, file) in files.iter().enumerate() {
        let data = match std::fs::read(file) {
            Ok(d) => d,
            Err(e) if files.len() > 1 => {
                bag.warnings.push(format!("{}: cannot read ({e}); skipped", file.display()));
                continue;
            }
            Err(e) => return Err(BagError::io(file, e)),
        };
        if data.len() < 8 || &data[..8] != mcap::MAGIC {
            return Err(BagError::Invalid { path: file.display().to_string(), reason: "not an MCAP file (bad magic)".into() });
        }
        let complete = data.len() >= 16 && &data[data.len() - 8..] == mcap::MAGIC;
        let stream = mcap::MessageStream::new_with_options(&data, mcap::read::Options::IgnoreEndMagic.into()).map_err(|e| BagError::mcap(file, e))?;
        let mut n = 0u64;
        for item in stream {
            let m = match item {
                Ok(m) => m,
                Err(e) => {
                    bag.truncated = true;
                    bag.warnings.push(format!("{}: damaged or truncated after {n} messages ({e}); read up to there", file.display()));
                    break;
                }
            };
            n += 1;
            let key = (fi, m.channel.id);
            let ti = *topic_of_channel.entry(key).or_insert_with(|| {
                let type_name = m.channel.schema.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                match bag.topics.iter().position(|t| t.name == m.channel.topic && t.type_name == type_name) {
                    Some(i) => i,
                    None => {
                        let msg_type = if m.channel.message_encoding == "cdr" { MsgType::from_name(&type_name) } else { None };
                        bag.topics.push(TopicInfo { name: m.channel.topic.clone(), type_name, msg_type, count: 0, decode_errors: 0 });
                        bag.topics.len() - 1
                    }
                }
            });
            let t = &mut bag.topics[ti];
            t.count += 1;
            let Some(ty) = t.msg_type else { continue };
            match ty.decode(&m.data) {
                Ok(msg) => bag.messages.push(BagMessage { topic: ti, log_time_ns: m.log_time, msg }),
                Err(e) => {
                    t.decode_errors += 1;
                    first_error.entry(ti).or_insert_with(|| e.to_string());
                }
            }
        }
        if !complete && !bag.truncated {
            bag.truncated = true;
            bag.warnings.push(format!("{}: does not end with the MCAP magic (recording interrupted or file cut); read {n} messages up to the last complete chunk", file.display()));
        } else if !complete {
            bag.warnings.push(format!("{}: file is incomplete (no MCAP footer)", file.display()));
        }
    }
    for t in &bag.topics {
        if t.msg_type.is_none() {
            bag.warnings.push(format!("{}: topic '{}' of type '{}' ({} messages) is not a type contact_sim reads; skipped", bag.path.display(), t.name, t.type_name, t.count));
        }
    }
    for (ti, e) in first_error {
        let t = &bag.topics[ti];
        bag.warnings.push(format!("{}: topic '{}': {} of {} messages do not decode as {} (first: {e}); skipped", bag.path.display(), t.name, t.decode_errors, t.count, t.type_name));
    }
    if let Some(m) = meta {
        let found: u64 = bag.topics.iter().map(|t| t.count).sum();
        if m.message_count > found {
            bag.warnings.push(format!("{}: metadata.yaml lists {} messages, the files hold {found}", bag.path.display(), m.message_count));
        }
    }
    Ok(bag)
}

struct Metadata {
    files: Vec<String>,
    message_count: u64,
}

fn read_metadata(dir: &Path, warnings: &mut Vec<String>) -> Option<Metadata> {
    let p = dir.join("metadata.yaml");
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{}: cannot read ({e}); reading the .mcap files of the directory", p.display()));
            return None;
        }
    };
    let v: serde_yaml::Value = match serde_yaml::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("{}: not valid YAML ({e}); reading the .mcap files of the directory", p.display()));
            return None;
        }
    };
    let info = &v["rosbag2_bagfile_information"];
    if let Some(s) = info["storage_identifier"].as_str() {
        if s != "mcap" {
            warnings.push(format!("{}: storage '{s}' is not mcap; trying the .mcap files anyway", p.display()));
        }
    }
    let files = info["relative_file_paths"].as_sequence().map(|s| s.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
    let message_count = info["message_count"].as_u64().unwrap_or(0);
    Some(Metadata { files, message_count })
}
