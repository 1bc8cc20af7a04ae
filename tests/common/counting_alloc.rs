//! The counting global allocator of the allocation-free tests (`no_alloc`, `rt_no_alloc`).
//! A test crate installs it with
//! `#[global_allocator] static GLOBAL: CountingAllocator = CountingAllocator;`.
//!
//! Allocations, reallocations and frees are counted on a thread while that thread counts
//! ([`start_counting`] … [`stop_counting`]): per thread ([`allocations_during`], so that tests
//! measuring in parallel do not count each other's) and in total ([`total_allocations`], for a
//! thread that counts itself, e.g. the real-time loop through its start/exit hooks). The first
//! counted allocation prints its backtrace. The bytes a thread allocates and does not free while
//! counting are summed too ([`live_bytes_during`]: memory growth, e.g. of a bag writer).
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The allocator: the system allocator plus the counters.
pub struct CountingAllocator;

static TOTAL: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ON_THIS_THREAD: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES_ON_THIS_THREAD: Cell<i64> = const { Cell::new(0) };
}

fn note_bytes(delta: i64) {
    if counting() {
        let _ = LIVE_BYTES_ON_THIS_THREAD.try_with(|n| n.set(n.get() + delta));
    }
}

fn counting() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}

fn note() {
    if !counting() {
        return;
    }
    let _ = ON_THIS_THREAD.try_with(|n| n.set(n.get() + 1));
    if TOTAL.fetch_add(1, Ordering::Relaxed) == 0 {
        // counting is off while the backtrace allocates
        COUNTING.with(|c| c.set(false));
        eprintln!("first counted allocation:\n{}", std::backtrace::Backtrace::force_capture());
        COUNTING.with(|c| c.set(true));
    }
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        note_bytes(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        note_bytes(layout.size() as i64);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        note_bytes(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note();
        note_bytes(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Starts counting this thread's allocations.
pub fn start_counting() {
    COUNTING.with(|c| c.set(true));
}

/// Stops counting this thread's allocations.
pub fn stop_counting() {
    COUNTING.with(|c| c.set(false));
}

/// Allocations counted on every thread so far.
pub fn total_allocations() -> u64 {
    TOTAL.load(Ordering::SeqCst)
}

/// Sets the total (tests of the counter itself).
pub fn set_total_allocations(n: u64) -> u64 {
    TOTAL.swap(n, Ordering::SeqCst)
}

/// Allocations made on this thread while `f` runs.
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ON_THIS_THREAD.with(|n| n.get());
    start_counting();
    f();
    stop_counting();
    ON_THIS_THREAD.with(|n| n.get()) - before
}

/// Bytes allocated on this thread while `f` runs and not freed by its end (negative: `f` freed
/// more than it allocated).
pub fn live_bytes_during(f: impl FnOnce()) -> i64 {
    let before = LIVE_BYTES_ON_THIS_THREAD.with(|n| n.get());
    start_counting();
    f();
    stop_counting();
    LIVE_BYTES_ON_THIS_THREAD.with(|n| n.get()) - before
}
