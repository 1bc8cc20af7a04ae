//! [`BagRecorder`]: a writer thread fed through a queue bounded in bytes, so that recording never
//! blocks the thread that produces the messages and a writer that falls behind for a while loses
//! nothing.
//!
//! Producers hold a [`RecordHandle`] and call [`RecordHandle::record`]. The queue holds messages
//! up to [`RecorderOptions::queue_limit_bytes`] (256 MiB by default, counted with
//! [`Msg::heap_bytes`]; like rosbag2's cache, but sized for seconds of starvation, not one
//! flush): the node's full recording under a 10 kHz command flood is about 4 MB/s, so the default
//! holds about a minute of a writer thread that gets no CPU. Only beyond that budget is a
//! message dropped and counted ([`RecordHandle::dropped`]), never waited for (unless the
//! recorder was started with [`RecorderOptions::lossless`], for batch runs where completeness
//! matters more than latency: producers then wait for room). The queue's high-water mark is kept
//! ([`RecordHandle::peak_queued_bytes`]; the node reports it in `/diagnostics`). Recording is
//! done by non-real-time threads only (the node's ROS and publisher threads): a record call
//! allocates. The writer thread serializes (CDR), writes chunks, splits files
//! ([`super::writer::WriterOptions::max_file_bytes`]), and flushes every
//! [`RecorderOptions::flush_period_s`].
//!
//! **What a killed process loses** (SIGKILL, a crash): the messages of the open MCAP chunk, that
//! is at most [`super::writer::WriterOptions::chunk_size_bytes`] (256 KiB by default) and at most
//! `flush_period_s` (1 s by default) of data, plus what sits in the queue. The default scene
//! recorded at 1 kHz makes about 4.1 kB per publish tick, so the chunk limit comes first: about
//! 64 ms of data.
//! [`BagRecorder::finish`] (called on SIGINT/SIGTERM by the CLI and the node) drains the queue
//! and closes the bag completely.

use super::msgs::{Msg, MsgType};
use super::writer::{BagSummary, BagWriter, OfferedQos, TopicId, WriterOptions};
use super::BagError;
use crossbeam::channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Options of a [`BagRecorder`].
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// Bytes of messages the queue holds before producers drop (bytes, as counted by
    /// [`Msg::heap_bytes`] plus the queue entry; default 256 MiB). A message is always accepted
    /// into an empty queue, whatever its size.
    pub queue_limit_bytes: usize,
    /// The open chunk is written at least this often (s; default 1.0).
    pub flush_period_s: f64,
    /// Producers wait instead of dropping when the queue is full (batch runs only; never on a
    /// real-time path).
    pub lossless: bool,
    /// Writer options (chunk size).
    pub writer: WriterOptions,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions { queue_limit_bytes: 256 << 20, flush_period_s: 1.0, lossless: false, writer: WriterOptions::default() }
    }
}

enum Entry {
    Topic { id: u16, name: String, ty: MsgType, qos: OfferedQos },
    /// `bytes`: what the message counts against the queue budget.
    Message { topic: TopicId, log_time_ns: u64, msg: Msg, bytes: usize },
    /// Close the bag now (handles still alive elsewhere then see a disconnected queue).
    Finish,
}

/// The queue's byte accounting, shared by the producers and the writer thread.
#[derive(Default)]
struct QueueBudget {
    /// Bytes queued now.
    queued: AtomicUsize,
    /// The most bytes queued at once.
    peak: AtomicUsize,
    /// Messages dropped.
    dropped: AtomicU64,
    /// The writer thread has ended (nothing more is drained).
    writer_ended: AtomicBool,
}

/// A cheap, cloneable, `Send` handle to record messages from any thread.
#[derive(Clone)]
pub struct RecordHandle {
    tx: Sender<Entry>,
    budget: Arc<QueueBudget>,
    limit_bytes: usize,
    lossless: bool,
}

impl RecordHandle {
    /// Queues a message; returns `false` (and counts it) when it was dropped because the queue
    /// holds [`RecorderOptions::queue_limit_bytes`] already or the recorder has stopped. Never
    /// blocks unless the recorder is lossless (then it waits, polling every 100 µs, for the
    /// writer to make room). Allocates: not for a real-time thread.
    pub fn record(&self, topic: TopicId, log_time_ns: u64, msg: Msg) -> bool {
        let bytes = std::mem::size_of::<Entry>() + msg.heap_bytes();
        let b = &*self.budget;
        let fits = |queued: usize| queued == 0 || queued.saturating_add(bytes) <= self.limit_bytes;
        if self.lossless {
            while !fits(b.queued.load(Ordering::Acquire)) && !b.writer_ended.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_micros(100));
            }
        } else if !fits(b.queued.load(Ordering::Acquire)) {
            b.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let now = b.queued.fetch_add(bytes, Ordering::AcqRel) + bytes;
        b.peak.fetch_max(now, Ordering::Relaxed);
        if self.tx.send(Entry::Message { topic, log_time_ns, msg, bytes }).is_err() {
            b.queued.fetch_sub(bytes, Ordering::AcqRel);
            b.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Messages dropped so far (queue over its byte budget, or the recorder stopped).
    pub fn dropped(&self) -> u64 {
        self.budget.dropped.load(Ordering::Relaxed)
    }

    /// Bytes queued for the writer now.
    pub fn queued_bytes(&self) -> usize {
        self.budget.queued.load(Ordering::Relaxed)
    }

    /// The most bytes the queue has held at once (its high-water mark; compare with
    /// [`RecorderOptions::queue_limit_bytes`]).
    pub fn peak_queued_bytes(&self) -> usize {
        self.budget.peak.load(Ordering::Relaxed)
    }
}

/// Records a bag on a background thread. See the module docs.
pub struct BagRecorder {
    handle: RecordHandle,
    thread: Option<JoinHandle<Result<BagSummary, BagError>>>,
    topics: Vec<(String, MsgType)>,
}

/// What a recording wrote and dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordingSummary {
    /// What was written.
    pub bag: BagSummary,
    /// Messages dropped because the queue was over its byte budget.
    pub dropped: u64,
    /// The queue's high-water mark (bytes).
    pub peak_queued_bytes: usize,
}

impl BagRecorder {
    /// Creates the bag (errors such as an existing directory are reported here, synchronously)
    /// and starts the writer thread.
    pub fn start(dir: &Path, opts: &RecorderOptions) -> Result<Self, BagError> {
        let writer = BagWriter::create(dir, &opts.writer)?;
        let (tx, rx) = unbounded();
        let period = Duration::from_secs_f64(opts.flush_period_s.clamp(0.01, 3600.0));
        let budget = Arc::new(QueueBudget::default());
        let writer_budget = budget.clone();
        let thread = std::thread::Builder::new()
            .name("bag_recorder".into())
            .spawn(move || {
                /// Marks the writer ended however the thread leaves (a panic included), so that
                /// lossless producers stop waiting for room.
                struct Ended(Arc<QueueBudget>);
                impl Drop for Ended {
                    fn drop(&mut self) {
                        self.0.writer_ended.store(true, Ordering::Release);
                    }
                }
                let ended = Ended(writer_budget);
                writer_loop(writer, rx, period, &ended.0)
            })
            .map_err(|e| BagError::io(dir, e))?;
        Ok(BagRecorder { handle: RecordHandle { tx, budget, limit_bytes: opts.queue_limit_bytes.max(1), lossless: opts.lossless }, thread: Some(thread), topics: vec![] })
    }

    /// Adds a topic (fully qualified name) and returns its id. Call before recording on it
    /// (setup time: this may wait for room in the queue). The same name and type twice give the
    /// same id.
    pub fn add_topic(&mut self, name: &str, ty: MsgType) -> TopicId {
        self.add_topic_with_qos(name, ty, OfferedQos::Stream)
    }

    /// [`BagRecorder::add_topic`] with the QoS profile the publisher offers (recorded with the
    /// topic, so that a replay offers it again; see [`OfferedQos`]).
    pub fn add_topic_with_qos(&mut self, name: &str, ty: MsgType, qos: OfferedQos) -> TopicId {
        if let Some(i) = self.topics.iter().position(|(n, t)| n == name && *t == ty) {
            return TopicId(i as u16);
        }
        let id = self.topics.len() as u16;
        self.topics.push((name.to_string(), ty));
        let _ = self.handle.tx.send(Entry::Topic { id, name: name.to_string(), ty, qos });
        TopicId(id)
    }

    /// A handle for producers.
    pub fn handle(&self) -> RecordHandle {
        self.handle.clone()
    }

    /// Writes what is queued, closes the bag (MCAP summary and footer, final `metadata.yaml`) and
    /// joins the thread. Handles still held elsewhere only drop (and count) from now on.
    pub fn finish(mut self) -> Result<RecordingSummary, BagError> {
        // waits for room: the writer drains the queue in order, so everything queued before is
        // written
        let _ = self.handle.tx.send(Entry::Finish);
        let thread = self.thread.take().expect("running");
        let bag = thread.join().map_err(|_| BagError::Invalid { path: String::new(), reason: "bag writer thread panicked".into() })??;
        Ok(RecordingSummary { bag, dropped: self.handle.dropped(), peak_queued_bytes: self.handle.peak_queued_bytes() })
    }
}

impl Drop for BagRecorder {
    /// A recorder dropped without [`BagRecorder::finish`] (an error path) still closes its bag.
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = self.handle.tx.send(Entry::Finish);
            let _ = t.join();
        }
    }
}

fn writer_loop(mut w: BagWriter, rx: Receiver<Entry>, period: Duration, budget: &QueueBudget) -> Result<BagSummary, BagError> {
    let mut ids: Vec<Option<TopicId>> = Vec::new();
    let mut last_flush = Instant::now();
    let mut first_error: Option<BagError> = None;
    loop {
        let timeout = period.saturating_sub(last_flush.elapsed());
        match rx.recv_timeout(timeout) {
            Ok(Entry::Topic { id, name, ty, qos }) => {
                let r = w.add_topic_with_qos(&name, ty, qos);
                if ids.len() <= id as usize {
                    ids.resize(id as usize + 1, None);
                }
                match r {
                    Ok(t) => ids[id as usize] = Some(t),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            Ok(Entry::Message { topic, log_time_ns, msg, bytes }) => {
                if let Some(Some(t)) = ids.get(topic.0 as usize) {
                    if let Err(e) = w.write(*t, log_time_ns, &msg) {
                        first_error.get_or_insert(e);
                    }
                }
                drop(msg);
                budget.queued.fetch_sub(bytes, Ordering::AcqRel);
            }
            Ok(Entry::Finish) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if last_flush.elapsed() >= period {
            last_flush = Instant::now();
            if let Err(e) = w.flush() {
                first_error.get_or_insert(e);
            }
        }
    }
    let summary = w.finish()?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}
