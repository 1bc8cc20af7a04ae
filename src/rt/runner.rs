//! The real-time loop: owns the [`Simulation`], sleeps to absolute deadlines, applies commands
//! from the ROS side, steps, and hands samples back, all through the lock-free queues of
//! [`RtShared`]. After [`RtLoop::run`] has entered its loop it does not allocate, lock, log or
//! touch ROS types (proved by `tests/rt_no_alloc.rs` with a counting allocator).
//!
//! Time modes ([`TimeMode`]):
//! - `realtime`: one cycle every `steps_per_cycle × timestep` of wall time (`rate_hz`, 1 kHz by
//!   default), sim time follows the wall clock; overruns handled by [`OverrunPolicy`];
//! - `sim_time`: one step per cycle, cycles every `timestep / real_time_factor` of wall time, or
//!   back to back when the factor is 0 ("as fast as allowed");
//! - `lockstep`: one step per received joint command (commands applied one at a time, each
//!   followed by its sample); trajectories set targets without stepping; `~/step` steps too.
//!
//! Samples: every `publish_every` cycles (from `publish_rate_hz`, in sim time), after every
//! lockstep step, after every requested single step and after a reset; while paused or idle in
//! lockstep the state keeps being published (heartbeat).

use super::clock::{monotonic_ns, realtime_ns, sleep_until_ns, ThreadUsage, NS_PER_S};
use super::exchange::{BufferQueue, RequestQueue};
use super::messages::*;
use super::sched::{self, SchedConfig, SchedReport};
use super::stats::{LoopStats, LoopTimer};
use super::trajectory::ActiveTrajectory;
use super::watchdog::{Watchdog, WatchdogConfig, WatchdogEvent};
use crate::model::ControlMode;
use crate::sim::{FailurePolicy, Simulation, StepFailure};
use crate::state::State;
use crate::state::Commands;
use crate::step::{step, StepReport};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How the loop relates simulated time to wall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMode {
    /// Wall-clock pacing at `rate_hz`; stamps are system time.
    Realtime,
    /// Sim time (published on `/clock`), paced by the real-time factor or unpaced.
    SimTime,
    /// One step per received command.
    Lockstep,
}

impl TimeMode {
    /// Parses `realtime`, `sim_time` or `lockstep`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "realtime" | "real_time" => Some(TimeMode::Realtime),
            "sim_time" | "simtime" => Some(TimeMode::SimTime),
            "lockstep" => Some(TimeMode::Lockstep),
            _ => None,
        }
    }
    /// The parameter spelling.
    pub fn name(self) -> &'static str {
        match self {
            TimeMode::Realtime => "realtime",
            TimeMode::SimTime => "sim_time",
            TimeMode::Lockstep => "lockstep",
        }
    }
}

/// What to do when a cycle ends after the next deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverrunPolicy {
    /// Skip the missed deadlines (sim time falls behind the wall clock by the skipped periods).
    SkipAhead,
    /// Run the missed cycles back to back (at most [`RtConfig::max_catch_up_cycles`], the rest
    /// is skipped), keeping sim time on the wall clock.
    CatchUp,
}

impl OverrunPolicy {
    /// Parses `skip` / `skip_ahead` or `catch_up`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "skip" | "skip_ahead" => Some(OverrunPolicy::SkipAhead),
            "catch_up" | "catchup" => Some(OverrunPolicy::CatchUp),
            _ => None,
        }
    }
}

/// Configuration of the real-time loop.
#[derive(Clone, Debug, PartialEq)]
pub struct RtConfig {
    /// Time mode.
    pub time_mode: TimeMode,
    /// Loop rate in `realtime` mode (Hz); rounded so that each cycle is a whole number of steps.
    pub rate_hz: f64,
    /// Sample (joint state) rate, in sim time (Hz).
    pub publish_rate_hz: f64,
    /// `sim_time` pacing: sim seconds per wall second; 0 = as fast as allowed.
    pub real_time_factor: f64,
    /// Overrun handling.
    pub overrun_policy: OverrunPolicy,
    /// Catch-up bound (cycles).
    pub max_catch_up_cycles: u32,
    /// Scheduling of the thread.
    pub sched: SchedConfig,
    /// Command watchdog.
    pub watchdog: WatchdogConfig,
    /// Trajectory interpolation.
    pub interpolation: Interpolation,
    /// Joint commands in flight (ROS → RT).
    pub command_queue_size: usize,
    /// Trajectories in flight (ROS → RT).
    pub trajectory_queue_size: usize,
    /// Samples in flight (RT → ROS).
    pub sample_queue_size: usize,
    /// Control requests in flight.
    pub control_queue_size: usize,
    /// Points a trajectory may have.
    pub max_trajectory_points: usize,
    /// Statistics refresh interval (wall s).
    pub stats_interval_s: f64,
    /// Heartbeat sample interval while idle in lockstep (wall s).
    pub heartbeat_s: f64,
    /// Start paused.
    pub start_paused: bool,
    /// Contact points copied into each sample (preallocated); more are counted, not copied.
    pub max_contact_points: usize,
}

impl Default for RtConfig {
    fn default() -> Self {
        RtConfig {
            time_mode: TimeMode::Realtime,
            rate_hz: 1000.0,
            publish_rate_hz: 1000.0,
            real_time_factor: 1.0,
            overrun_policy: OverrunPolicy::SkipAhead,
            max_catch_up_cycles: 10,
            sched: SchedConfig::default(),
            watchdog: WatchdogConfig::default(),
            interpolation: Interpolation::Cubic,
            command_queue_size: 16,
            trajectory_queue_size: 4,
            sample_queue_size: 64,
            control_queue_size: 64,
            max_trajectory_points: 256,
            stats_interval_s: 1.0,
            heartbeat_s: 0.1,
            start_paused: false,
            max_contact_points: DEFAULT_MAX_CONTACT_POINTS,
        }
    }
}

/// State shared between the real-time thread and the ROS side: queues and a few atomics.
pub struct RtShared {
    /// Joint commands, ROS → RT.
    pub commands: BufferQueue<JointCommand>,
    /// Trajectories, ROS → RT.
    pub trajectories: BufferQueue<TrajectoryCommand>,
    /// Samples, RT → ROS.
    pub samples: BufferQueue<Sample>,
    /// Control requests, ROS → RT.
    pub control: RequestQueue<Control>,
    /// Sequence number of the last control request whose effect is complete (its steps taken,
    /// its sample pushed).
    pub control_ack: AtomicU64,
    /// Set by the ROS side to stop the loop.
    pub stop: AtomicBool,
    /// `true` while the loop runs.
    pub running: AtomicBool,
}

impl RtShared {
    /// Asks the loop to stop (it exits within one cycle).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Functions called on the real-time thread right before the loop starts and right after it
/// ends (plain `fn` pointers: for tests and instrumentation, e.g. allocation counting).
#[derive(Clone, Copy, Debug, Default)]
pub struct RtHooks {
    /// Called on the RT thread after setup, before the first cycle.
    pub on_loop_start: Option<fn()>,
    /// Called on the RT thread after the last cycle.
    pub on_loop_exit: Option<fn()>,
}

/// What the loop returns when it stops.
pub struct RtExit {
    /// The simulation, as it was at the end.
    pub sim: Simulation,
    /// Final counters.
    pub counters: RtCounters,
    /// Final timing statistics.
    pub stats: LoopStats,
}

/// The real-time loop and everything it owns.
pub struct RtLoop {
    sim: Simulation,
    layout: JointLayout,
    cfg: RtConfig,
    shared: Arc<RtShared>,
    notify: Option<std::thread::Thread>,
    hooks: RtHooks,
    base_modes: Vec<ControlMode>,
    traj: ActiveTrajectory,
    watchdog: Watchdog,
    timer: LoopTimer,
    counters: RtCounters,
    last: StepReport,
    window_iterations_max: u32,
    window_residual_max: f64,
    /// The slowest cycle of the current statistics window, and of the last complete one.
    window_worst: WorstCycle,
    last_worst: WorstCycle,
    /// Steps, most contacts and most iterations of the current cycle.
    cycle_steps: u32,
    cycle_contacts: usize,
    cycle_iterations: u32,
    stats: LoopStats,
    paused: bool,
    pending_steps: u64,
    force_sample: bool,
    last_command_seq: u64,
    sample_seq: u64,
    ack_pending: u64,
    dt_s: f64,
    initial_state: State,
    initial_commands: Commands,
    on_failure: FailurePolicy,
}

/// Handle to a spawned loop.
pub struct RtHandle {
    /// The shared queues.
    pub shared: Arc<RtShared>,
    join: Option<std::thread::JoinHandle<RtExit>>,
    sched_rx: std::sync::mpsc::Receiver<SchedReport>,
}

impl RtHandle {
    /// The scheduling report, once the thread has applied its policy (waits up to `timeout`).
    pub fn sched_report(&self, timeout: std::time::Duration) -> Option<SchedReport> {
        self.sched_rx.recv_timeout(timeout).ok()
    }
    /// Stops the loop and waits for it. `None` if the thread panicked.
    pub fn stop(mut self) -> Option<RtExit> {
        self.shared.request_stop();
        self.join.take().and_then(|j| j.join().ok())
    }
    /// Whether the loop thread has ended.
    pub fn is_finished(&self) -> bool {
        self.join.as_ref().map(|j| j.is_finished()).unwrap_or(true)
    }
}

impl Drop for RtHandle {
    fn drop(&mut self) {
        if let Some(j) = self.join.take() {
            self.shared.request_stop();
            let _ = j.join();
        }
    }
}

/// Blocks SIGINT and SIGTERM on the calling thread (the RT thread), so that signal handlers run
/// on other threads and never interrupt the loop.
fn block_termination_signals() {
    // SAFETY: sigset manipulation on a local set; pthread_sigmask on the calling thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

const LOCKSTEP_POLL_NS: i64 = 100_000;

impl RtLoop {
    /// Prepares a loop for `sim` (its scene script is not used: the node is commanded over ROS).
    /// Allocates every buffer now.
    pub fn new(sim: Simulation, cfg: RtConfig) -> Self {
        let layout = JointLayout { max_contact_points: cfg.max_contact_points, ..JointLayout::new(&sim.model) };
        let n = layout.len();
        let pts = cfg.max_trajectory_points.max(1);
        let shared = Arc::new(RtShared {
            commands: BufferQueue::new(cfg.command_queue_size, 0, || JointCommand::new(n)),
            trajectories: BufferQueue::new(cfg.trajectory_queue_size, 1, || TrajectoryCommand::new(n, pts)),
            samples: BufferQueue::new(cfg.sample_queue_size, 0, || Sample::new(&layout)),
            control: RequestQueue::new(cfg.control_queue_size),
            control_ack: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            running: AtomicBool::new(false),
        });
        let base_modes = sim.commands.mode.clone();
        let dt_s = sim.model.timestep_s;
        let mut initial_state = State::new(&sim.model);
        initial_state.clone_from(&sim.state);
        RtLoop {
            initial_commands: sim.commands.clone(),
            initial_state,
            traj: ActiveTrajectory::new(TrajectoryCommand::new(n, pts)),
            layout,
            base_modes,
            shared,
            notify: None,
            hooks: RtHooks::default(),
            watchdog: Watchdog::new(),
            timer: LoopTimer::new(),
            counters: RtCounters::default(),
            last: StepReport::default(),
            window_iterations_max: 0,
            window_residual_max: 0.0,
            window_worst: WorstCycle::default(),
            last_worst: WorstCycle::default(),
            cycle_steps: 0,
            cycle_contacts: 0,
            cycle_iterations: 0,
            stats: LoopStats::default(),
            paused: cfg.start_paused,
            pending_steps: 0,
            force_sample: true,
            last_command_seq: 0,
            sample_seq: 0,
            ack_pending: 0,
            dt_s,
            cfg,
            sim,
            on_failure: FailurePolicy::Hold,
        }
    }

    /// What the loop does after a failed step (see [`FailurePolicy`]; default `hold`: the
    /// node keeps running on the last good state): `stop` pauses stepping (a `Pause(false)`
    /// request resumes), `reset` resets the simulation as a `Reset` request does. Every failure
    /// is counted ([`RtCounters::failed_steps`]); the first and the last are kept in the
    /// counters for `/diagnostics`.
    pub fn set_failure_policy(&mut self, policy: FailurePolicy) {
        self.on_failure = policy;
    }

    /// The joints and bases, in the order samples and commands use.
    pub fn layout(&self) -> &JointLayout {
        &self.layout
    }

    /// The shared queues (clone the `Arc` for the ROS side).
    pub fn shared(&self) -> &Arc<RtShared> {
        &self.shared
    }

    /// The simulation (before the loop starts).
    pub fn sim(&self) -> &Simulation {
        &self.sim
    }

    /// A thread to unpark after every sample (the ROS publisher waits in `park_timeout`).
    pub fn set_notify(&mut self, t: std::thread::Thread) {
        self.notify = Some(t);
    }

    /// Hooks called on the RT thread around the loop.
    pub fn set_hooks(&mut self, hooks: RtHooks) {
        self.hooks = hooks;
    }

    /// Steps per cycle and the cycle period (ns) in realtime mode.
    pub fn realtime_cycle(&self) -> (u64, i64) {
        let dt = self.dt_s;
        let rate = if self.cfg.rate_hz.is_finite() && self.cfg.rate_hz > 0.0 { self.cfg.rate_hz } else { 1.0 / dt };
        let steps = ((1.0 / (rate * dt)).round() as u64).max(1);
        (steps, (steps as f64 * dt * NS_PER_S as f64).round() as i64)
    }

    /// Spawns the loop on its own thread (named `contact_sim_rt`), which first applies the
    /// scheduling configuration and sends back its [`SchedReport`].
    pub fn spawn(self) -> std::io::Result<RtHandle> {
        let shared = self.shared.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let join = std::thread::Builder::new().name("contact_sim_rt".into()).spawn(move || {
            block_termination_signals();
            let me = self;
            let cfg = if me.cfg.time_mode == TimeMode::SimTime && me.cfg.real_time_factor <= 0.0 {
                // unpaced: an elevated thread spinning flat out would starve the ROS thread
                SchedConfig { policy: sched::PolicyKind::Other, ..me.cfg.sched.clone() }
            } else {
                me.cfg.sched.clone()
            };
            let period = match me.cfg.time_mode {
                TimeMode::Realtime => me.realtime_cycle().1,
                _ => (me.dt_s / me.cfg.real_time_factor.max(1e-9) * NS_PER_S as f64).min(1e12) as i64,
            };
            let report = sched::apply(&cfg, period.max(1000) as u64);
            let _ = tx.send(report);
            me.run_loop()
        })?;
        Ok(RtHandle { shared, join: Some(join), sched_rx: rx })
    }

    /// Runs the loop on the calling thread without touching its scheduling (tests, tools).
    /// Returns when [`RtShared::request_stop`] is called or a `Shutdown` request arrives.
    pub fn run(self) -> RtExit {
        self.run_loop()
    }

    /// The deadline loop: wait for the next deadline, drain the command queues, step, publish,
    /// count overruns. Long by design: one real-time cycle read top to bottom, in the order its
    /// effects must happen, with no allocation and no call that could block.
    fn run_loop(mut self) -> RtExit {
        self.shared.running.store(true, Ordering::Release);
        if let Some(f) = self.hooks.on_loop_start {
            f();
        }
        let t0 = monotonic_ns();
        let mut next = t0;
        let mut window_start = (t0, self.sim.state.time_s);
        let mut next_stats = t0 + (self.cfg.stats_interval_s.max(0.01) * NS_PER_S as f64) as i64;
        let mut last_heartbeat = t0;
        let mut tick: u64 = 0;
        let mut running = true;
        let mut usage_before = ThreadUsage::now();
        while running {
            // ---- wait --------------------------------------------------------------------
            let (steps_per_cycle, period_ns) = self.cycle();
            let paced = period_ns > 0;
            let mut wake_late_ns = 0;
            if paced {
                sleep_until_ns(next);
                let wake = monotonic_ns();
                self.timer.wake(next, wake);
                wake_late_ns = (wake - next).max(0);
            }
            let cycle_start = monotonic_ns();
            self.counters.cycles += 1;
            tick += 1;
            (self.cycle_steps, self.cycle_contacts, self.cycle_iterations) = (0, 0, 0);

            // ---- inputs ------------------------------------------------------------------
            let acks_before = self.ack_pending;
            running = self.drain_control();
            let t_control = monotonic_ns();
            if self.shared.stop.load(Ordering::Acquire) {
                running = false;
            }
            self.drain_trajectories();
            let clock_s = self.watchdog_clock(cycle_start);
            let mut stepped_this_cycle = false;
            if self.cfg.time_mode == TimeMode::Lockstep {
                while let Some(cmd) = self.shared.commands.pop() {
                    self.apply_command(&cmd, clock_s);
                    let _ = self.shared.commands.recycle(cmd);
                    if !self.paused {
                        self.do_step();
                        self.publish(true);
                        stepped_this_cycle = true;
                    }
                }
            } else {
                while let Some(cmd) = self.shared.commands.pop() {
                    self.apply_command(&cmd, clock_s);
                    let _ = self.shared.commands.recycle(cmd);
                }
            }

            // ---- watchdog ----------------------------------------------------------------
            if self.traj.is_active() {
                self.watchdog.feed(clock_s);
            }
            if !self.paused && self.watchdog.poll(clock_s, self.cfg.watchdog.timeout_s) == WatchdogEvent::Fired {
                self.apply_watchdog();
            }

            // ---- steps -------------------------------------------------------------------
            let t_commands = monotonic_ns();
            let free_running = !self.paused && self.cfg.time_mode != TimeMode::Lockstep;
            if free_running {
                for _ in 0..steps_per_cycle {
                    self.do_step();
                    if self.paused {
                        break; // on_failure: stop
                    }
                }
            }
            while self.pending_steps > 0 {
                self.pending_steps -= 1;
                self.do_step();
                self.publish(true);
                stepped_this_cycle = true;
            }

            // ---- statistics and samples ---------------------------------------------------
            let now = monotonic_ns();
            let t_steps = now;
            if now >= next_stats {
                let wall = (now - window_start.0) as f64 / NS_PER_S as f64;
                let rtf = if wall > 0.0 { (self.sim.state.time_s - window_start.1) / wall } else { 0.0 };
                self.stats = self.timer.summary(rtf);
                window_start = (now, self.sim.state.time_s);
                next_stats = now + (self.cfg.stats_interval_s.max(0.01) * NS_PER_S as f64) as i64;
                self.window_iterations_max = 0;
                self.window_residual_max = 0.0;
                self.last_worst = std::mem::take(&mut self.window_worst);
            }
            let publish_every = self.publish_every(steps_per_cycle);
            let due = match self.cfg.time_mode {
                TimeMode::Lockstep => !stepped_this_cycle && now - last_heartbeat >= (self.cfg.heartbeat_s.max(0.001) * NS_PER_S as f64) as i64,
                _ => tick % publish_every == 0 || (self.paused && now - last_heartbeat >= (self.cfg.heartbeat_s.max(0.001) * NS_PER_S as f64) as i64),
            };
            if due || self.force_sample {
                self.publish(free_running);
                last_heartbeat = now;
            } else if stepped_this_cycle {
                last_heartbeat = now;
            }
            if self.ack_pending > 0 {
                self.shared.control_ack.store(self.ack_pending, Ordering::Release);
            }

            // ---- timing ------------------------------------------------------------------
            let end = monotonic_ns();
            self.timer.work(end - cycle_start);
            let total_us = (end - cycle_start) as f64 * 1e-3;
            let usage = ThreadUsage::now();
            let used = usage.since(&usage_before);
            usage_before = usage;
            if total_us > self.window_worst.total_us {
                let stages = [("control", t_control - cycle_start), ("commands", t_commands - t_control), ("steps", t_steps - t_commands), ("publish", end - t_steps)];
                let (stage, ns) = stages.into_iter().fold(("control", i64::MIN), |a, b| if b.1 > a.1 { b } else { a });
                self.window_worst = WorstCycle {
                    total_us,
                    stage,
                    stage_us: ns as f64 * 1e-3,
                    steps: self.cycle_steps,
                    contacts: self.cycle_contacts,
                    iterations: self.cycle_iterations,
                    control_requests: self.ack_pending.saturating_sub(acks_before) as u32,
                    cpu_us: used.cpu_ns as f64 * 1e-3,
                    involuntary_switches: used.involuntary_switches.clamp(0, u32::MAX as i64) as u32,
                    page_faults: used.page_faults.clamp(0, u32::MAX as i64) as u32,
                    wake_late_us: wake_late_ns as f64 * 1e-3,
                };
            }
            if paced {
                next += period_ns;
                if end > next {
                    self.counters.overruns += 1;
                    let missed = ((end - next) / period_ns + 1) as u64;
                    let skip = match self.cfg.overrun_policy {
                        OverrunPolicy::SkipAhead => missed,
                        OverrunPolicy::CatchUp => missed.saturating_sub(self.cfg.max_catch_up_cycles as u64),
                    };
                    next += skip as i64 * period_ns;
                    self.counters.skipped_deadlines += skip;
                }
            } else {
                // unpaced: lockstep polls, sim_time paused idles one timestep per cycle
                let idle = match self.cfg.time_mode {
                    TimeMode::Lockstep => LOCKSTEP_POLL_NS,
                    _ if self.paused => (self.dt_s * NS_PER_S as f64) as i64,
                    _ => 0,
                };
                if idle > 0 {
                    sleep_until_ns(end + idle);
                }
                next = monotonic_ns();
            }
        }
        if let Some(f) = self.hooks.on_loop_exit {
            f();
        }
        self.shared.running.store(false, Ordering::Release);
        self.stats = self.timer.summary(self.stats.real_time_factor);
        RtExit { counters: self.counters_now(), stats: self.stats, sim: self.sim }
    }

    /// Steps per cycle and the wall period (ns; 0 = unpaced) for the current settings.
    fn cycle(&self) -> (u64, i64) {
        match self.cfg.time_mode {
            TimeMode::Realtime => self.realtime_cycle(),
            TimeMode::SimTime => {
                let f = self.cfg.real_time_factor;
                if f > 0.0 && f.is_finite() {
                    (1, ((self.dt_s / f) * NS_PER_S as f64).round().max(1.0) as i64)
                } else {
                    (1, 0)
                }
            }
            TimeMode::Lockstep => (1, 0),
        }
    }

    fn publish_every(&self, steps_per_cycle: u64) -> u64 {
        let r = self.cfg.publish_rate_hz;
        if !(r > 0.0 && r.is_finite()) {
            return u64::MAX;
        }
        ((1.0 / (r * self.dt_s * steps_per_cycle as f64)).round() as u64).max(1)
    }

    fn watchdog_clock(&self, mono_ns: i64) -> f64 {
        match self.cfg.time_mode {
            TimeMode::SimTime => self.sim.state.time_s,
            _ => mono_ns as f64 / NS_PER_S as f64,
        }
    }

    fn counters_now(&self) -> RtCounters {
        RtCounters { samples_dropped: self.shared.samples.dropped(), ..self.counters }
    }

    fn do_step(&mut self) {
        {
            let RtLoop { traj, sim, layout, cfg, .. } = self;
            traj.apply(sim.state.time_s, cfg.interpolation, layout, &mut sim.commands);
        }
        let t_before = self.sim.state.time_s;
        let r = step(&self.sim.model, &mut self.sim.state, &mut self.sim.workspace, &self.sim.commands);
        self.counters.steps += 1;
        if !r.solve.converged && r.solve.iterations > 0 {
            self.counters.unconverged_steps += 1;
        }
        if let Some(f) = StepFailure::of(&r, self.counters.steps, t_before) {
            self.counters.failed_steps += 1;
            self.counters.first_failure.get_or_insert(f);
            self.counters.last_failure = Some(f);
            match self.on_failure {
                FailurePolicy::Hold => {}
                FailurePolicy::Stop => {
                    self.paused = true;
                    self.pending_steps = 0;
                    self.force_sample = true;
                }
                FailurePolicy::Reset => self.reset_all(),
            }
        }
        self.window_iterations_max = self.window_iterations_max.max(r.solve.iterations);
        self.cycle_steps += 1;
        self.cycle_contacts = self.cycle_contacts.max(r.contacts);
        self.cycle_iterations = self.cycle_iterations.max(r.solve.iterations);
        if r.solve.residual.is_finite() {
            self.window_residual_max = self.window_residual_max.max(r.solve.residual);
        }
        self.last = r;
    }

    fn apply_command(&mut self, cmd: &JointCommand, clock_s: f64) {
        if self.watchdog.feed(clock_s) {
            // recovering from the watchdog: configured modes back, hold where the robot is
            self.sim.commands.mode.copy_from_slice(&self.base_modes);
            for j in &self.layout.joints {
                self.sim.commands.position[j.v_index] = self.sim.state.q[j.q_index];
                self.sim.commands.velocity[j.v_index] = 0.0;
                self.sim.commands.effort[j.v_index] = 0.0;
            }
        }
        let traj = &mut self.traj;
        cmd.apply(&self.layout, &mut self.sim.commands, |slot| traj.release(slot));
        self.counters.commands_applied += 1;
        self.last_command_seq = cmd.seq;
    }

    fn drain_trajectories(&mut self) {
        while let Some(t) = self.shared.trajectories.pop() {
            let clock_s = self.watchdog_clock(monotonic_ns());
            if self.watchdog.feed(clock_s) {
                self.sim.commands.mode.copy_from_slice(&self.base_modes);
            }
            let RtLoop { traj, sim, layout, cfg, .. } = self;
            let (q, v) = (&sim.state.q, &sim.state.v);
            let old = traj.start(t, sim.state.time_s, cfg.interpolation, |s| q[layout.joints[s].q_index], |s| v[layout.joints[s].v_index]);
            let _ = self.shared.trajectories.recycle(old);
            self.counters.trajectories += 1;
        }
    }

    /// Back to the initial state and commands without allocating; the command modes are the
    /// configured ones (`base_modes`), not any the watchdog set.
    fn reset_simulation(&mut self) {
        self.sim.state.copy_from(&self.initial_state);
        self.sim.commands.copy_from(&self.initial_commands);
        self.sim.commands.mode.copy_from_slice(&self.base_modes);
    }

    /// A reset as the `Reset` request does it: initial state, no trajectory, watchdog disarmed,
    /// counted.
    fn reset_all(&mut self) {
        self.reset_simulation();
        self.traj.cancel();
        self.watchdog.disarm();
        self.pending_steps = 0;
        self.counters.resets += 1;
        self.force_sample = true;
    }

    fn apply_watchdog(&mut self) {
        self.counters.watchdog_trips += 1;
        self.traj.cancel();
        let wd = self.cfg.watchdog;
        let c = &mut self.sim.commands;
        for j in &self.layout.joints {
            let v = j.v_index;
            c.effort[v] = 0.0;
            c.velocity[v] = 0.0;
            match wd.action {
                WatchdogAction::Hold => {
                    c.mode[v] = match self.base_modes[v] {
                        m @ ControlMode::Position { .. } => m,
                        _ => ControlMode::Position { kp: wd.hold_kp, kd: wd.hold_kd },
                    };
                    c.position[v] = self.sim.state.q[j.q_index];
                    // gravity compensation: the bias h(q, v) of the last step as feed-forward, so
                    // that the PD holds the position instead of sagging by its steady-state error
                    let h = self.sim.workspace.bias[v];
                    c.effort[v] = if h.is_finite() { h } else { 0.0 };
                }
                WatchdogAction::ZeroEffort => c.mode[v] = ControlMode::Effort,
                WatchdogAction::Damp => c.mode[v] = ControlMode::Velocity { kd: wd.damping },
            }
        }
        self.force_sample = true;
    }

    /// Applies control requests; `false` on shutdown.
    fn drain_control(&mut self) -> bool {
        let mut keep_running = true;
        while let Some(Control { seq, request }) = self.shared.control.pop() {
            match request {
                ControlRequest::Reset => self.reset_all(),
                ControlRequest::Pause(p) => {
                    self.paused = p;
                    self.force_sample = true;
                }
                ControlRequest::Step(n) => {
                    if self.paused || self.cfg.time_mode == TimeMode::Lockstep {
                        self.pending_steps += n as u64;
                    }
                }
                ControlRequest::Gains { slot, kp, kd } => {
                    if let Some(j) = self.layout.joints.get(slot) {
                        let v = j.v_index;
                        let new = match self.base_modes[v] {
                            ControlMode::Position { .. } => Some(ControlMode::Position { kp, kd }),
                            ControlMode::Velocity { .. } => Some(ControlMode::Velocity { kd }),
                            _ => None,
                        };
                        if let Some(m) = new {
                            self.base_modes[v] = m;
                            if !self.watchdog.is_tripped() {
                                self.sim.commands.mode[v] = m;
                            }
                        }
                    }
                }
                ControlRequest::SolverIterations(n) => self.sim.workspace.solver.set_max_iterations(n),
                ControlRequest::SolverTolerance(t) => {
                    if t.is_finite() && t >= 0.0 {
                        self.sim.workspace.solver.set_tolerance(t);
                    }
                }
                ControlRequest::RealTimeFactor(f) => {
                    if f.is_finite() && f >= 0.0 {
                        self.cfg.real_time_factor = f;
                        self.timer.restart_period();
                    }
                }
                ControlRequest::PublishRate(r) => {
                    if r.is_finite() && r > 0.0 {
                        self.cfg.publish_rate_hz = r;
                    }
                }
                ControlRequest::Watchdog { timeout_s, action } => {
                    self.cfg.watchdog.timeout_s = timeout_s;
                    self.cfg.watchdog.action = action;
                }
                ControlRequest::WatchdogGains { hold_kp, hold_kd, damping } => {
                    self.cfg.watchdog.hold_kp = hold_kp;
                    self.cfg.watchdog.hold_kd = hold_kd;
                    self.cfg.watchdog.damping = damping;
                }
                ControlRequest::Interpolation(i) => self.cfg.interpolation = i,
                ControlRequest::Shutdown => keep_running = false,
            }
            self.ack_pending = self.ack_pending.max(seq);
        }
        keep_running
    }

    fn publish(&mut self, stepped: bool) {
        self.force_sample = false;
        let Some(mut s) = self.shared.samples.acquire() else {
            return;
        };
        self.sample_seq += 1;
        s.seq = self.sample_seq;
        s.sim_time_s = self.sim.state.time_s;
        s.monotonic_ns = monotonic_ns();
        s.realtime_ns = realtime_ns();
        s.fill_physics(&self.layout, &self.sim);
        s.step = StepSummary {
            contacts: self.last.contacts,
            iterations: self.last.solve.iterations,
            residual: self.last.solve.residual,
            converged: self.last.solve.converged,
            iterations_max_window: self.window_iterations_max,
            residual_max_window: self.window_residual_max,
            saturated_joints: self.last.saturated_joints,
            max_penetration_m: self.last.max_penetration_m,
            worst_cycle: self.last_worst,
        };
        s.stats = self.stats;
        s.counters = self.counters_now();
        s.paused = self.paused;
        s.watchdog_active = self.watchdog.is_tripped();
        s.trajectory_active = self.traj.is_active();
        s.last_command_seq = self.last_command_seq;
        s.stepped = stepped;
        let _ = self.shared.samples.push(s);
        if let Some(t) = &self.notify {
            t.unpark();
        }
    }
}

