//! [`read_bag`]: a tolerant rosbag2 (MCAP) reader.
//!
//! It reads what it can and says what it could not, in [`Bag::warnings`], each naming the file
//! or topic:
//! - topics of types contact_sim does not know are listed in [`Bag::topics`] and skipped;
//! - messages that do not decode as their declared type are counted per topic (first error kept);
//! - a file cut in the middle (an interrupted recording, a partial copy) is read up to the last
//!   complete chunk;
//! - a chunk whose CRC does not match its content (or whose records do not parse) is reported
//!   with its topics and time range and skipped whole: none of its messages are used;
//! - a missing or unreadable `metadata.yaml` is a warning (the `.mcap` files in the directory are
//!   read), as is a message count that disagrees with it;
//! - messages whose log time or header stamp lies far outside the others (more than ten
//!   interquartile ranges, at least 10 s, beyond the middle half) are reported and skipped;
//! - in a bag of several files, a file that is not MCAP is a warning and is skipped.
//!
//! Errors: an unreadable path, a bag whose only file(s) are not MCAP, and a `metadata.yaml` that
//! names a file outside the bag directory (an absolute path or one with `..`).

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

    /// The longest stretch of log time with no message (ns) and the log time it starts at: the
    /// largest gap between consecutive log times over all messages (`None` with fewer than two).
    pub fn largest_gap_ns(&self) -> Option<(u64, u64)> {
        let mut times: Vec<u64> = self.messages.iter().map(|m| m.log_time_ns).collect();
        times.sort_unstable();
        times.windows(2).map(|w| (w[1] - w[0], w[0])).max_by_key(|&(gap, _)| gap)
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
            Some(m) if !m.files.is_empty() => {
                for f in &m.files {
                    let inside = !f.is_empty() && Path::new(f).components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
                    if !inside {
                        return Err(BagError::Invalid {
                            path: path.join("metadata.yaml").display().to_string(),
                            reason: format!("relative_file_paths entry '{f}' leaves the bag directory (absolute or with '..'); refused"),
                        });
                    }
                }
                // a file listed twice is read once
                let mut unique: Vec<&String> = Vec::new();
                for f in &m.files {
                    if unique.contains(&f) {
                        bag.warnings.push(format!("{}: relative_file_paths lists '{f}' more than once; read once", path.join("metadata.yaml").display()));
                    } else {
                        unique.push(f);
                    }
                }
                unique.into_iter().map(|f| path.join(f)).collect()
            }
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
    // a file of the bag directory that resolves to a regular file outside it (a symlink) is
    // refused, as a path with '..' is (a device is skipped below, as any non-regular file)
    if path.is_dir() {
        let dir = path.canonicalize().map_err(|e| BagError::io(path, e))?;
        for f in &files {
            if let Ok(real) = f.canonicalize() {
                if real.is_file() && !real.starts_with(&dir) {
                    return Err(BagError::Invalid { path: f.display().to_string(), reason: format!("resolves to {}, outside the bag directory (a symlink?); refused", real.display()) });
                }
            }
        }
    }
    let mut topic_of_channel: BTreeMap<(usize, u16), usize> = BTreeMap::new();
    let mut first_error: BTreeMap<usize, String> = BTreeMap::new();
    let mut files_read = 0usize;
    let mut first_refusal: Option<BagError> = None;
    for (fi, file) in files.iter().enumerate() {
        let data = match crate::validate::read_bounded(file, crate::validate::MAX_BAG_FILE_BYTES) {
            Ok(d) => d,
            Err(e) if files.len() > 1 => {
                bag.warnings.push(format!("{}: {e}; skipped", file.display()));
                continue;
            }
            Err(reason) => return Err(BagError::Invalid { path: file.display().to_string(), reason }),
        };
        if data.len() < 8 || &data[..8] != mcap::MAGIC {
            let err = BagError::Invalid { path: file.display().to_string(), reason: "not an MCAP file (bad magic)".into() };
            if files.len() > 1 {
                bag.warnings.push(format!("{err}; skipped"));
                first_refusal.get_or_insert(err);
                continue;
            }
            return Err(err);
        }
        files_read += 1;
        read_file(&mut bag, fi, file, &data, &mut topic_of_channel, &mut first_error);
    }
    if files_read == 0 {
        if let Some(e) = first_refusal {
            return Err(e);
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
    drop_outlier_stamps(&mut bag);
    if let Some(m) = meta {
        let found: u64 = bag.topics.iter().map(|t| t.count).sum();
        if m.message_count > found {
            bag.warnings.push(format!("{}: metadata.yaml lists {} messages, the files hold {found}", bag.path.display(), m.message_count));
        }
    }
    Ok(bag)
}

/// Fewest messages of a topic for its stamps to be checked for outliers.
const OUTLIER_MIN_MESSAGES: usize = 8;
/// A stamp is an outlier when it lies more than this many interquartile ranges (with a floor of
/// [`OUTLIER_MIN_RANGE_NS`]) outside the middle half of its topic's stamps (or of all stamps).
const OUTLIER_IQR_FACTOR: i128 = 10;
/// The smallest interquartile range (ns) used for the outlier test: 1 s.
const OUTLIER_MIN_RANGE_NS: i128 = 1_000_000_000;

/// The limits (ns) inside which a set of times is plausible: the quartiles widened by
/// [`OUTLIER_IQR_FACTOR`] interquartile ranges. `None` for too few times.
fn plausible_range(mut t: Vec<i128>) -> Option<(i128, i128)> {
    if t.len() < OUTLIER_MIN_MESSAGES {
        return None;
    }
    t.sort_unstable();
    let (q1, q3) = (t[t.len() / 4], t[t.len() * 3 / 4]);
    let w = OUTLIER_IQR_FACTOR * (q3 - q1).max(OUTLIER_MIN_RANGE_NS);
    Some((q1 - w, q3 + w))
}

/// Removes messages whose log time or header stamp lies far outside the others (a corrupted
/// or wildly wrong clock), per topic and over the whole bag, with one warning per topic naming
/// the count, the first such stamp and the plausible range. Keeps replay and compare bounded by
/// the data actually present.
fn drop_outlier_stamps(bag: &mut Bag) {
    let times = |m: &BagMessage| [m.log_time_ns as i128, m.msg.stamp_ns().filter(|&s| s > 0).map_or(m.log_time_ns as i128, |s| s as i128)];
    let mut bad = vec![false; bag.messages.len()];
    for ti in 0..bag.topics.len() {
        for k in 0..2 {
            let idx: Vec<usize> = (0..bag.messages.len()).filter(|&i| bag.messages[i].topic == ti).collect();
            if let Some((lo, hi)) = plausible_range(idx.iter().map(|&i| times(&bag.messages[i])[k]).collect()) {
                for &i in &idx {
                    let t = times(&bag.messages[i])[k];
                    bad[i] |= t < lo || t > hi;
                }
            }
        }
    }
    for k in 0..2 {
        if let Some((lo, hi)) = plausible_range((0..bag.messages.len()).filter(|&i| !bad[i]).map(|i| times(&bag.messages[i])[k]).collect()) {
            for i in 0..bag.messages.len() {
                let t = times(&bag.messages[i])[k];
                bad[i] |= t < lo || t > hi;
            }
        }
    }
    if !bad.iter().any(|&b| b) {
        return;
    }
    let good: Vec<i128> = (0..bag.messages.len()).filter(|&i| !bad[i]).map(|i| bag.messages[i].log_time_ns as i128).collect();
    let (g0, g1) = (good.iter().min().copied().unwrap_or(0), good.iter().max().copied().unwrap_or(0));
    let mut per_topic: BTreeMap<usize, (usize, [i128; 2])> = BTreeMap::new();
    for (i, m) in bag.messages.iter().enumerate() {
        if bad[i] {
            per_topic.entry(m.topic).or_insert((0, times(m))).0 += 1;
        }
    }
    for (ti, (count, [log, stamp])) in per_topic {
        bag.warnings.push(format!(
            "{}: topic '{}': {count} message(s) with an outlier time (first: log time {:.9} s, stamp {:.9} s; the others lie within {:.3} s to {:.3} s); skipped",
            bag.path.display(),
            bag.topics[ti].name,
            log as f64 * 1e-9,
            stamp as f64 * 1e-9,
            g0 as f64 * 1e-9,
            g1 as f64 * 1e-9
        ));
    }
    let mut i = 0;
    bag.messages.retain(|_| {
        i += 1;
        !bad[i - 1]
    });
}

/// What is known of a channel: its topic, schema (type) name and message encoding.
#[derive(Clone)]
struct ChannelInfo {
    topic: String,
    type_name: String,
    encoding: String,
}

/// The messages of one chunk, kept aside until the whole chunk has parsed.
type PendingMessage = (u16, u64, Vec<u8>);

/// A chunk whose CRC failed: reported once the message index records after it have named its
/// channels.
struct BadChunk {
    ordinal: u64,
    start_ns: u64,
    end_ns: u64,
    reason: String,
    channels: Vec<u16>,
}

/// Reads one MCAP file's records in order into `bag`. Chunks whose CRC does not match their
/// content, or whose records do not parse, are reported and skipped whole; reading goes on with
/// the next chunk.
fn read_file(
    bag: &mut Bag,
    fi: usize,
    file: &Path,
    data: &[u8],
    topic_of_channel: &mut BTreeMap<(usize, u16), usize>,
    first_error: &mut BTreeMap<usize, String>,
) {
    let complete = data.len() >= 16 && &data[data.len() - 8..] == mcap::MAGIC;
    // The summary (when the file has one) names channels whose defining records sit in a damaged chunk.
    let mut summary_channels: BTreeMap<u16, ChannelInfo> = BTreeMap::new();
    if complete {
        if let Ok(Some(s)) = mcap::read::Summary::read(data) {
            for (id, c) in &s.channels {
                let type_name = c.schema.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                summary_channels.insert(*id, ChannelInfo { topic: c.topic.clone(), type_name, encoding: c.message_encoding.clone() });
            }
        }
    }
    let mut schemas: BTreeMap<u16, String> = BTreeMap::new();
    let mut channels: BTreeMap<u16, ChannelInfo> = BTreeMap::new();
    let mut n = 0u64;
    let mut bad: Option<BadChunk> = None;
    let mut chunks = 0u64;
    let mut decompressed_bytes = 0u64;
    let reader = match mcap::read::LinearReader::new_with_options(data, mcap::read::Options::IgnoreEndMagic.into()) {
        Ok(r) => r,
        Err(e) => {
            bag.truncated = true;
            bag.warnings.push(format!("{}: MCAP: {e}; nothing read", file.display()));
            return;
        }
    };
    for item in reader {
        let rec = match item {
            Ok(r) => r,
            Err(e) => {
                bag.truncated = true;
                bag.warnings.push(format!("{}: damaged or truncated after {n} messages ({e}); read up to there", file.display()));
                break;
            }
        };
        if !matches!(rec, mcap::records::Record::MessageIndex(_)) {
            if let Some(b) = bad.take() {
                report_bad_chunk(bag, file, b, &channels, &summary_channels);
            }
        }
        let mut pending: Vec<PendingMessage> = Vec::new();
        match rec {
            mcap::records::Record::Schema { header, data: body } => {
                let _ = body;
                schemas.insert(header.id, header.name);
            }
            mcap::records::Record::Channel(c) => {
                add_channel(&mut channels, &schemas, c);
            }
            mcap::records::Record::Message { header, data: body } => {
                pending.push((header.channel_id, header.log_time, body.into_owned()));
            }
            mcap::records::Record::Chunk { header, data: body } => {
                chunks += 1;
                let (start_ns, end_ns) = (header.message_start_time, header.message_end_time);
                let records = decompress_chunk(&header, &body, &mut decompressed_bytes);
                let bad_crc = records.as_ref().ok().filter(|r| header.uncompressed_crc != 0 && crc32fast::hash(r) != header.uncompressed_crc).map(|r| crc32fast::hash(r));
                if let Some(content) = bad_crc {
                    bad = Some(BadChunk { ordinal: chunks, start_ns, end_ns, reason: format!("CRC mismatch (recorded {:08x}, content {:08x})", header.uncompressed_crc, content), channels: Vec::new() });
                } else {
                    let mut chunk_schemas = schemas.clone();
                    let mut chunk_channels = channels.clone();
                    // a record length running past the chunk makes the mcap crate's record reader
                    // panic (a length field corrupted before the CRC was computed): checked first,
                    // on the decompressed records
                    let mut failed = match &records {
                        Ok(r) => record_overrun(r),
                        Err(reason) => Some(reason.clone()),
                    };
                    if let (None, Ok(records)) = (&failed, &records) {
                        let plain = mcap::records::ChunkHeader { compression: String::new(), compressed_size: records.len() as u64, ..header };
                        match mcap::read::ChunkReader::new(plain, records) {
                            Err(e) => failed = Some(e.to_string()),
                            Ok(records) => {
                                for r in records {
                                    match r {
                                        Ok(mcap::records::Record::Schema { header, .. }) => {
                                            chunk_schemas.insert(header.id, header.name);
                                        }
                                        Ok(mcap::records::Record::Channel(c)) => add_channel(&mut chunk_channels, &chunk_schemas, c),
                                        Ok(mcap::records::Record::Message { header, data }) => pending.push((header.channel_id, header.log_time, data.into_owned())),
                                        Ok(_) => {}
                                        Err(e) => {
                                            failed = Some(e.to_string());
                                            break;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    match failed {
                        None => {
                            schemas = chunk_schemas;
                            channels = chunk_channels;
                        }
                        Some(reason) => {
                            pending.clear();
                            bad = Some(BadChunk { ordinal: chunks, start_ns, end_ns, reason, channels: Vec::new() });
                        }
                    }
                }
            }
            mcap::records::Record::MessageIndex(mi) => {
                if let Some(b) = bad.as_mut() {
                    if !mi.records.is_empty() {
                        b.channels.push(mi.channel_id);
                    }
                }
            }
            mcap::records::Record::DataEnd(_) => break,
            _ => {}
        }
        for (channel_id, log_time_ns, payload) in pending {
            n += 1;
            let Some(info) = channels.get(&channel_id).or_else(|| summary_channels.get(&channel_id)) else {
                bag.warnings.push(format!("{}: message on unknown channel {channel_id}; skipped", file.display()));
                continue;
            };
            let ti = *topic_of_channel.entry((fi, channel_id)).or_insert_with(|| match bag.topics.iter().position(|t| t.name == info.topic && t.type_name == info.type_name) {
                Some(i) => i,
                None => {
                    let msg_type = if info.encoding == "cdr" { MsgType::from_name(&info.type_name) } else { None };
                    bag.topics.push(TopicInfo { name: info.topic.clone(), type_name: info.type_name.clone(), msg_type, count: 0, decode_errors: 0 });
                    bag.topics.len() - 1
                }
            });
            let t = &mut bag.topics[ti];
            t.count += 1;
            let Some(ty) = t.msg_type else { continue };
            match ty.decode(&payload) {
                Ok(msg) => bag.messages.push(BagMessage { topic: ti, log_time_ns, msg }),
                Err(e) => {
                    t.decode_errors += 1;
                    first_error.entry(ti).or_insert_with(|| e.to_string());
                }
            }
        }
    }
    if let Some(b) = bad.take() {
        report_bad_chunk(bag, file, b, &channels, &summary_channels);
    }
    if !complete && !bag.truncated {
        bag.truncated = true;
        bag.warnings.push(format!("{}: does not end with the MCAP magic (recording interrupted or file cut); read {n} messages up to the last complete chunk", file.display()));
    } else if !complete {
        bag.warnings.push(format!("{}: file is incomplete (no MCAP footer)", file.display()));
    }
}

/// Most bytes the compressed chunks of one bag file may expand to, all chunks together (the
/// messages are held in memory): 16 GiB, as [`crate::validate::MAX_BAG_FILE_BYTES`].
pub const MAX_DECOMPRESSED_BYTES: u64 = crate::validate::MAX_BAG_FILE_BYTES;

/// A chunk's records: its body when uncompressed, else the body decompressed (`zstd` or `lz4`,
/// the compressions MCAP defines), checked to be exactly the header's `uncompressed_size`, and
/// `total` (bytes decompressed so far in this file) kept within [`MAX_DECOMPRESSED_BYTES`]. The
/// error is the reason the chunk is unreadable.
fn decompress_chunk<'a>(header: &mcap::records::ChunkHeader, body: &'a [u8], total: &mut u64) -> Result<std::borrow::Cow<'a, [u8]>, String> {
    use std::io::Read;
    if header.compression.is_empty() {
        return Ok(std::borrow::Cow::Borrowed(body));
    }
    let size = header.uncompressed_size;
    if total.saturating_add(size) > MAX_DECOMPRESSED_BYTES {
        return Err(format!("its uncompressed size of {size} bytes takes the file's decompressed messages past the limit of {MAX_DECOMPRESSED_BYTES} bytes"));
    }
    let mut out = Vec::new();
    let read = match header.compression.as_str() {
        "zstd" => match ruzstd::decoding::StreamingDecoder::new(body) {
            Ok(d) => d.take(size + 1).read_to_end(&mut out),
            Err(e) => return Err(format!("zstd: {e}")),
        },
        "lz4" => lz4_flex::frame::FrameDecoder::new(body).take(size + 1).read_to_end(&mut out),
        other => return Err(format!("compression '{other}' is not supported (zstd, lz4 or none)")),
    };
    read.map_err(|e| format!("{}: {e}", header.compression))?;
    if out.len() as u64 != size {
        return Err(format!("{} data of {} bytes where the header says {size}", header.compression, if out.len() as u64 > size { format!("more than {size}") } else { out.len().to_string() }));
    }
    *total += size;
    Ok(std::borrow::Cow::Owned(out))
}

/// The first record of an uncompressed chunk's records whose length field runs past their end,
/// as a reason; `None` when every record fits.
fn record_overrun(records: &[u8]) -> Option<String> {
    let mut at = 0usize;
    while at < records.len() {
        let Some(len) = records.get(at + 1..at + 9).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))) else {
            return Some(format!("a record header is cut at byte {at} of the chunk's {} bytes", records.len()));
        };
        match (at as u64 + 9).checked_add(len).filter(|&e| e <= records.len() as u64) {
            Some(e) => at = e as usize,
            None => return Some(format!("a record (opcode 0x{:02x}) at byte {at} claims {len} bytes, past the chunk's {} bytes", records[at], records.len())),
        }
    }
    None
}

fn add_channel(channels: &mut BTreeMap<u16, ChannelInfo>, schemas: &BTreeMap<u16, String>, c: mcap::records::Channel) {
    let type_name = schemas.get(&c.schema_id).cloned().unwrap_or_default();
    channels.insert(c.id, ChannelInfo { topic: c.topic, type_name, encoding: c.message_encoding });
}

fn report_bad_chunk(bag: &mut Bag, file: &Path, b: BadChunk, channels: &BTreeMap<u16, ChannelInfo>, summary: &BTreeMap<u16, ChannelInfo>) {
    let mut topics: Vec<String> = b.channels.iter().map(|id| channels.get(id).or_else(|| summary.get(id)).map_or_else(|| format!("channel {id}"), |c| c.topic.clone())).collect();
    topics.sort();
    topics.dedup();
    let topics = if topics.is_empty() { "unknown topics".to_string() } else { format!("topic(s) {}", topics.join(", ")) };
    bag.warnings.push(format!(
        "{}: corrupted chunk #{} ({}): {topics}, log time {:.9} s to {:.9} s; its messages are skipped",
        file.display(),
        b.ordinal,
        b.reason,
        b.start_ns as f64 * 1e-9,
        b.end_ns as f64 * 1e-9
    ));
}

struct Metadata {
    files: Vec<String>,
    message_count: u64,
}

fn read_metadata(dir: &Path, warnings: &mut Vec<String>) -> Option<Metadata> {
    let p = dir.join("metadata.yaml");
    let text = match crate::validate::read_text_bounded(&p, crate::validate::MAX_TEXT_FILE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{}: {e}; reading the .mcap files of the directory", p.display()));
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
