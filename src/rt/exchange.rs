//! Lock-free exchange of preallocated buffers between the real-time thread and the ROS thread.
//!
//! A [`BufferQueue`] is a pair of bounded [`ArrayQueue`]s of boxed buffers: `filled` carries
//! messages from the producer to the consumer, `free` returns the buffers. All buffers are
//! allocated by [`BufferQueue::new`]; afterwards only pointers move, so neither side allocates.
//!
//! Policy: the producer never waits. [`BufferQueue::acquire`] takes a free buffer or, when the
//! consumer has fallen behind and none is free, **takes back the oldest filled message** (it is
//! lost and counted in [`BufferQueue::dropped`]). Hence the consumer always sees the newest
//! messages in order, and the only loss is the documented drop-oldest.
//!
//! Invariant: every buffer is in one of the two queues, held by the producer between `acquire`
//! and `push`, or held by the consumer between `pop` and `recycle`. Both queues have room for
//! every buffer, so `push` and `recycle` never fail for buffers of this queue.

use crossbeam::queue::ArrayQueue;
use std::sync::atomic::{AtomicU64, Ordering};

/// A bounded single-producer / single-consumer channel of recycled `Box<T>` buffers.
pub struct BufferQueue<T> {
    filled: ArrayQueue<Box<T>>,
    free: ArrayQueue<Box<T>>,
    pushed: AtomicU64,
    dropped: AtomicU64,
    starved: AtomicU64,
}

impl<T> BufferQueue<T> {
    /// A queue holding up to `capacity` (≥ 1) messages, with `capacity` buffers made by `make`
    /// (plus room for `extra` buffers of the same kind that a side creates and keeps for itself,
    /// e.g. the RT thread's active trajectory, which it swaps with queued ones).
    pub fn new(capacity: usize, extra: usize, mut make: impl FnMut() -> T) -> Self {
        let capacity = capacity.max(1);
        let room = capacity + extra;
        let q = BufferQueue { filled: ArrayQueue::new(room), free: ArrayQueue::new(room), pushed: AtomicU64::new(0), dropped: AtomicU64::new(0), starved: AtomicU64::new(0) };
        for _ in 0..capacity {
            // cannot fail: room ≥ capacity
            let _ = q.free.push(Box::new(make()));
        }
        q
    }

    /// Producer: a buffer to fill. A free one if any; otherwise the oldest unread message is
    /// taken back (counted as dropped). `None` only when the consumer holds every buffer (counted
    /// as dropped too: the caller's message is lost). Never blocks, never allocates.
    pub fn acquire(&self) -> Option<Box<T>> {
        if let Some(b) = self.free.pop() {
            return Some(b);
        }
        if let Some(b) = self.filled.pop() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Some(b);
        }
        self.starved.fetch_add(1, Ordering::Relaxed);
        self.dropped.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Producer: hands a filled buffer to the consumer. Never blocks. A buffer that does not
    /// fit (only possible for buffers that were not made by this queue) is returned.
    pub fn push(&self, buf: Box<T>) -> Result<(), Box<T>> {
        self.filled.push(buf)?;
        self.pushed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Consumer: the oldest unread message, if any.
    pub fn pop(&self) -> Option<Box<T>> {
        self.filled.pop()
    }

    /// Consumer: gives a buffer back to the producer. A buffer that does not fit is returned.
    pub fn recycle(&self, buf: Box<T>) -> Result<(), Box<T>> {
        self.free.push(buf)
    }

    /// Messages pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pushed.load(Ordering::Relaxed)
    }

    /// Messages lost to the drop-oldest policy (or because the consumer held every buffer).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Times `acquire` found no buffer at all.
    pub fn starved(&self) -> u64 {
        self.starved.load(Ordering::Relaxed)
    }

    /// Unread messages now.
    pub fn len(&self) -> usize {
        self.filled.len()
    }

    /// `true` when no message is waiting.
    pub fn is_empty(&self) -> bool {
        self.filled.is_empty()
    }
}

/// A bounded queue of small `Copy` requests (no buffers). Pushing to a full queue fails instead
/// of dropping: requests such as "reset" must not vanish silently; the producer reports the
/// failure to its caller.
pub struct RequestQueue<T> {
    queue: ArrayQueue<T>,
    rejected: AtomicU64,
}

impl<T> RequestQueue<T> {
    /// A queue for `capacity` requests.
    pub fn new(capacity: usize) -> Self {
        RequestQueue { queue: ArrayQueue::new(capacity.max(1)), rejected: AtomicU64::new(0) }
    }
    /// Producer: enqueues, or gives the request back when full (counted).
    pub fn push(&self, r: T) -> Result<(), T> {
        self.queue.push(r).inspect_err(|_| {
            self.rejected.fetch_add(1, Ordering::Relaxed);
        })
    }
    /// Consumer: the oldest request.
    pub fn pop(&self) -> Option<T> {
        self.queue.pop()
    }
    /// Requests refused because the queue was full.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn send(q: &BufferQueue<u64>, v: u64) -> bool {
        match q.acquire() {
            Some(mut b) => {
                *b = v;
                q.push(b).expect("push never fails for own buffers");
                true
            }
            None => false,
        }
    }

    #[test]
    fn fifo_without_loss_when_the_consumer_keeps_up() {
        let q = BufferQueue::new(4, 0, || 0u64);
        for round in 0..100u64 {
            for i in 0..4 {
                assert!(send(&q, round * 4 + i));
            }
            for i in 0..4 {
                let b = q.pop().unwrap();
                assert_eq!(*b, round * 4 + i);
                q.recycle(b).unwrap();
            }
        }
        assert_eq!(q.dropped(), 0);
        assert_eq!(q.pushed(), 400);
    }

    #[test]
    fn a_stalled_consumer_loses_exactly_the_oldest() {
        let cap = 8;
        let q = BufferQueue::new(cap, 0, || 0u64);
        let n = 100_000u64;
        // the producer must never block: it finishes even though nobody consumes
        for v in 0..n {
            assert!(send(&q, v));
        }
        assert_eq!(q.dropped(), n - cap as u64);
        let got: Vec<u64> = std::iter::from_fn(|| q.pop().map(|b| *b)).collect();
        assert_eq!(got, ((n - cap as u64)..n).collect::<Vec<_>>(), "the newest messages, in order");
    }

    #[test]
    fn consumer_holding_every_buffer_makes_acquire_fail_not_block() {
        let q = BufferQueue::new(2, 0, || 0u64);
        assert!(send(&q, 1));
        assert!(send(&q, 2));
        let a = q.pop().unwrap();
        let b = q.pop().unwrap();
        assert!(q.acquire().is_none());
        assert_eq!(q.starved(), 1);
        assert_eq!(q.dropped(), 1);
        q.recycle(a).unwrap();
        q.recycle(b).unwrap();
        assert!(send(&q, 3));
    }

    /// Two threads hammering the queue: every sequence number is either received (in increasing
    /// order) or counted as dropped; nothing is duplicated or invented.
    #[test]
    fn concurrent_no_loss_beyond_drop_oldest() {
        let q = Arc::new(BufferQueue::new(16, 0, || 0u64));
        let done = Arc::new(AtomicBool::new(false));
        let n = 200_000u64;
        let consumer = {
            let q = q.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut got = Vec::with_capacity(n as usize);
                loop {
                    match q.pop() {
                        Some(b) => {
                            got.push(*b);
                            q.recycle(b).unwrap();
                            if got.len() % 1000 == 0 {
                                std::thread::yield_now(); // let the producer overrun sometimes
                            }
                        }
                        None if done.load(Ordering::Acquire) && q.is_empty() => break,
                        None => std::hint::spin_loop(),
                    }
                }
                got
            })
        };
        let t0 = Instant::now();
        let mut lost_at_acquire = 0u64;
        for v in 0..n {
            if !send(&q, v) {
                lost_at_acquire += 1;
            }
        }
        let producer_time = t0.elapsed();
        done.store(true, Ordering::Release);
        let got = consumer.join().unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "received in order, no duplicates");
        assert_eq!(got.len() as u64 + q.dropped(), n, "received + dropped = sent");
        assert!(lost_at_acquire <= q.starved());
        // generous bound: 200k non-blocking operations take milliseconds, not seconds
        assert!(producer_time < Duration::from_secs(20), "producer took {producer_time:?}");
    }

    #[test]
    fn request_queue_refuses_when_full() {
        let q = RequestQueue::new(2);
        assert!(q.push(1).is_ok());
        assert!(q.push(2).is_ok());
        assert_eq!(q.push(3), Err(3));
        assert_eq!(q.rejected(), 1);
        assert_eq!(q.pop(), Some(1));
        assert_eq!(q.pop(), Some(2));
        assert_eq!(q.pop(), None);
    }
}
