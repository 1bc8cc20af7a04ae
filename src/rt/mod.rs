//! The real-time side of the ROS 2 node, free of ROS types (compiled and tested without the
//! `ros` feature).
//!
//! | module | owns |
//! |---|---|
//! | [`runner`] | the deadline loop ([`RtLoop`]): owns the [`crate::sim::Simulation`], time modes, overruns, watchdog, trajectories |
//! | [`exchange`] | lock-free bounded queues of preallocated buffers ([`BufferQueue`], drop-oldest) |
//! | [`messages`] | the plain-data commands, control requests and samples crossing the queues |
//! | [`validate`] | command validation (unknown joints, lengths, NaN/Inf, limits: reject or clamp) |
//! | [`trajectory`] | JointTrajectory following (linear / cubic) on the RT thread |
//! | [`watchdog`] | the command watchdog state machine |
//! | [`stats`] | allocation-free timing statistics (histograms, p50/p99/max) |
//! | [`sched`] | SCHED_DEADLINE / SCHED_FIFO / normal scheduling, `mlockall`, CPU affinity |
//! | [`clock`] | `CLOCK_MONOTONIC` deadlines with `clock_nanosleep(TIMER_ABSTIME)` |
//!
//! Threading contract: the RT thread owns the simulation; the ROS
//! thread owns rcl. They share only [`RtShared`]: bounded `crossbeam` `ArrayQueue`s of buffers
//! allocated up front and recycled through free queues, plus a few atomics (stop flag, control
//! acknowledgement). Nothing blocks the RT thread: a full queue drops its oldest message and
//! counts it. After the loop starts the RT thread never allocates, locks, logs or touches r2r.

pub mod clock;
pub mod exchange;
pub mod messages;
pub mod runner;
pub mod sched;
pub mod stats;
pub mod stop_signal;
pub mod trajectory;
pub mod validate;
pub mod watchdog;

#[cfg(test)]
mod tests;

pub use exchange::{BufferQueue, RequestQueue};
pub use messages::{
    BaseState, Control, ControlRequest, FloatingBase, Interpolation, JointCommand, JointInfo, JointLayout, RtCounters, Sample, StepSummary, TrajectoryCommand, WatchdogAction,
};
pub use runner::{OverrunPolicy, RtConfig, RtExit, RtHandle, RtHooks, RtLoop, RtShared, TimeMode};
pub use sched::{AppliedPolicy, PolicyKind, SchedConfig, SchedReport};
pub use stats::{DurationHistogram, LoopStats, LoopTimer};
pub use validate::{CommandGroup, CommandValidator, GroupInterface, LimitPolicy, Rejection};
pub use watchdog::{Watchdog, WatchdogConfig};
