//! Loop-level tests of the real-time side on the pendulum scenes (no ROS, no special
//! scheduling: the loop runs on a plain thread).

use super::*;
use crate::config::load_scene;
use crate::model::ControlMode;
use crate::sim::Simulation;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sim(scene: &str) -> Simulation {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(scene);
    Simulation::from_scene(&load_scene(&p).expect("scene loads"), None)
}

/// Loop settings for the tests: normal scheduling, and a sample queue deep enough that an
/// unpaced release-build loop does not drop the samples a test waits for.
fn cfg(mode: TimeMode) -> RtConfig {
    RtConfig { time_mode: mode, sched: SchedConfig { policy: PolicyKind::Other, lock_memory: false, ..Default::default() }, sample_queue_size: 16384, ..Default::default() }
}

#[path = "../../tests/common/pendulum.rs"]
mod pendulum;
use pendulum::pendulum_reference;

struct Running {
    shared: Arc<RtShared>,
    join: Option<std::thread::JoinHandle<RtExit>>,
    control_seq: u64,
    command_seq: u64,
}

impl Running {
    fn start(scene: &str, cfg: RtConfig) -> Self {
        let rt = RtLoop::new(sim(scene), cfg);
        let shared = rt.shared().clone();
        let join = std::thread::spawn(move || rt.run());
        Running { shared, join: Some(join), control_seq: 0, command_seq: 0 }
    }
    fn control(&mut self, r: ControlRequest) -> u64 {
        self.control_seq += 1;
        self.shared.control.push(Control { seq: self.control_seq, request: r }).expect("control queue has room");
        self.control_seq
    }
    /// Unpauses (for tests that start paused so that their inputs apply at sim time 0).
    fn resume(&mut self) {
        std::thread::sleep(Duration::from_millis(20));
        let go = self.control(ControlRequest::Pause(false));
        self.wait_ack(go);
    }
    fn wait_ack(&self, seq: u64) {
        let t0 = Instant::now();
        while self.shared.control_ack.load(std::sync::atomic::Ordering::Acquire) < seq {
            assert!(t0.elapsed() < Duration::from_secs(20), "no ack for control {seq}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    fn command(&mut self, slot: usize, mask: u8, value: f64) {
        let mut c = self.shared.commands.acquire().expect("a command buffer");
        c.clear();
        self.command_seq += 1;
        c.seq = self.command_seq;
        c.mask[slot] = mask;
        c.position[slot] = value;
        c.velocity[slot] = value;
        c.effort[slot] = value;
        self.shared.commands.push(c).unwrap();
    }
    /// Pops samples until `pred` holds for one; returns a copy of it.
    fn wait_sample(&self, what: &str, mut pred: impl FnMut(&Sample) -> bool) -> Sample {
        let t0 = Instant::now();
        loop {
            while let Some(s) = self.shared.samples.pop() {
                let ok = pred(&s);
                let copy = if ok { Some((*s).clone()) } else { None };
                self.shared.samples.recycle(s).ok();
                if let Some(c) = copy {
                    return c;
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    fn stop(mut self) -> RtExit {
        self.shared.request_stop();
        self.join.take().unwrap().join().expect("loop thread")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(j) = self.join.take() {
            self.shared.request_stop();
            let _ = j.join();
        }
    }
}

#[test]
fn lockstep_takes_exactly_one_step_per_command() {
    let mut c = cfg(TimeMode::Lockstep);
    c.command_queue_size = 64;
    let mut r = Running::start("ros_pendulum_effort.yaml", c);
    std::thread::sleep(Duration::from_millis(50));
    for i in 0..40 {
        r.command(0, messages::HAS_EFFORT, 0.01 * i as f64);
    }
    let s = r.wait_sample("40 steps", |s| s.counters.steps >= 40);
    assert_eq!(s.counters.steps, 40);
    assert!((s.sim_time_s - 0.040).abs() < 1e-9, "sim time {}", s.sim_time_s);
    assert_eq!(s.last_command_seq, 40);
    // idle: no further steps, only heartbeats
    std::thread::sleep(Duration::from_millis(300));
    let exit = r.stop();
    assert_eq!(exit.counters.steps, 40);
    assert_eq!(exit.counters.commands_applied, 40);
    assert_eq!(exit.sim.state.step_count, 40);
}

#[test]
fn effort_from_rest_follows_the_pendulum_equation() {
    // sim_time, as fast as allowed: deterministic in sim time
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    c.watchdog.timeout_s = 0.0;
    c.publish_rate_hz = 1000.0;
    c.start_paused = true;
    let mut r = Running::start("ros_pendulum_effort.yaml", c);
    let tau = 2.0;
    r.command(0, messages::HAS_EFFORT, tau);
    std::thread::sleep(Duration::from_millis(20));
    let ack = r.control(ControlRequest::Pause(false));
    r.wait_ack(ack);
    let s = r.wait_sample("t ≥ 0.2 s", |s| s.sim_time_s >= 0.2 - 1e-9);
    // small-angle closed form from rest: θ = (τ / (m g L)) (1 − cos ω t), ω² = m g L / I
    let (m, g, l, i): (f64, f64, f64, f64) = (1.0, 9.81, 1.0, 1.00004);
    let w = (m * g * l / i).sqrt();
    let t = s.sim_time_s;
    let theta = tau / (m * g * l) * (1.0 - (w * t).cos());
    if t < 0.25 {
        assert!((s.position[0] - theta).abs() < 0.02 * theta + 1e-4, "θ({t}) = {} vs closed form {theta}", s.position[0]);
    }
    // and the nonlinear equation at whatever time the sample has
    let (q_ref, _) = pendulum_reference(tau, t);
    assert!((s.position[0] - q_ref).abs() < 2e-3, "θ({t}) = {} vs I θ'' = τ − m g L sin θ: {q_ref}", s.position[0]);
    assert!((s.effort[0] - tau).abs() < 1e-12, "measured effort {}", s.effort[0]);
}

#[test]
fn position_commands_converge_to_the_pd_steady_state() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    c.watchdog.timeout_s = 0.0;
    c.start_paused = true;
    let mut r = Running::start("ros_pendulum_position.yaml", c);
    let target = 0.5;
    r.command(0, messages::HAS_POSITION, target);
    r.resume();
    let s = r.wait_sample("3 s of sim", |s| s.sim_time_s >= 3.0);
    // kp (θ* − q) = m g L sin q
    let mut q: f64 = target;
    for _ in 0..50 {
        q = target - 9.81 * q.sin() / 50.0;
    }
    assert!((s.position[0] - q).abs() < 2e-3, "q = {} vs steady state {q}", s.position[0]);
}

#[test]
fn realtime_paces_sim_time_to_the_wall_clock() {
    let mut c = cfg(TimeMode::Realtime);
    c.publish_rate_hz = 100.0;
    let r = Running::start("ros_pendulum_effort.yaml", c);
    let t0 = Instant::now();
    let first = r.wait_sample("a sample", |_| true);
    std::thread::sleep(Duration::from_millis(500));
    let last = r.wait_sample("a later sample", |s| s.sim_time_s > first.sim_time_s + 0.4);
    let wall = t0.elapsed().as_secs_f64();
    let exit = r.stop();
    // never faster than the wall clock (up to one publish period), overruns may make it slower
    assert!(last.sim_time_s - first.sim_time_s <= wall + 0.02, "sim {} s in {wall} s of wall time", last.sim_time_s - first.sim_time_s);
    assert!(exit.counters.cycles > 0 && exit.stats.cycles > 0);
    assert!(exit.stats.period_mean_us > 900.0, "period {} µs", exit.stats.period_mean_us);
}

#[test]
fn watchdog_holds_position_then_recovers() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    c.watchdog = WatchdogConfig { timeout_s: 0.2, action: WatchdogAction::Hold, ..Default::default() };
    c.start_paused = true;
    let mut r = Running::start("ros_pendulum_effort.yaml", c);
    r.command(0, messages::HAS_EFFORT, 3.0);
    std::thread::sleep(Duration::from_millis(20));
    let go = r.control(ControlRequest::Pause(false));
    r.wait_ack(go);
    let s = r.wait_sample("watchdog", |s| s.watchdog_active);
    assert_eq!(s.counters.watchdog_trips, 1);
    assert!(s.sim_time_s > 0.2 && s.sim_time_s < 0.3, "fired at {}", s.sim_time_s);
    // holding: after a while the joint is near where it was when the watchdog fired
    let held = r.wait_sample("1 s later", |x| x.sim_time_s > s.sim_time_s + 1.0);
    assert!(held.watchdog_active);
    assert!(held.velocity[0].abs() < 0.05, "still moving at {}", held.velocity[0]);
    // gravity-compensated hold: it settles where it was when the watchdog fired (up to the
    // motion it had then), not at the PD's sagged steady state
    let later = r.wait_sample("2 s later", |x| x.sim_time_s > s.sim_time_s + 2.0);
    assert!((later.position[0] - held.position[0]).abs() < 1e-3, "drifting: {} → {}", held.position[0], later.position[0]);
    assert!(later.position[0] > 0.05, "held up against gravity at {}", later.position[0]);
    // at real-time speed from here, so that the 0.2 s timeout cannot fire again (0.2 s of sim
    // time passes in milliseconds at real_time_factor 0) between the recovery and the stop
    let slow = r.control(ControlRequest::RealTimeFactor(1.0));
    r.wait_ack(slow);
    r.command(0, messages::HAS_EFFORT, 0.0);
    let back = r.wait_sample("recovery", |x| !x.watchdog_active && x.last_command_seq == 2);
    assert_eq!(back.counters.watchdog_trips, 1);
    let exit = r.stop();
    assert_eq!(exit.sim.commands.mode[0], ControlMode::Effort, "configured mode restored");
}

#[test]
fn zero_effort_and_damp_actions_set_the_modes() {
    for (action, want) in [(WatchdogAction::ZeroEffort, ControlMode::Effort), (WatchdogAction::Damp, ControlMode::Velocity { kd: 7.0 })] {
        let mut c = cfg(TimeMode::SimTime);
        c.real_time_factor = 0.0;
        c.watchdog = WatchdogConfig { timeout_s: 0.05, action, damping: 7.0, ..Default::default() };
        let mut r = Running::start("ros_pendulum_position.yaml", c);
        r.command(0, messages::HAS_POSITION, 0.3);
        r.wait_sample("watchdog", |s| s.watchdog_active);
        let exit = r.stop();
        assert_eq!(exit.sim.commands.mode[0], want);
        assert_eq!(exit.sim.commands.effort[0], 0.0);
    }
}

#[test]
fn reset_restores_the_initial_state() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    let mut r = Running::start("ros_pendulum_effort.yaml", c);
    r.command(0, messages::HAS_EFFORT, 5.0);
    r.wait_sample("motion", |s| s.position[0] > 0.3);
    let p = r.control(ControlRequest::Pause(true));
    r.wait_ack(p);
    let ack = r.control(ControlRequest::Reset);
    r.wait_ack(ack);
    let s = r.wait_sample("reset sample", |s| s.counters.resets == 1);
    assert_eq!(s.sim_time_s, 0.0);
    assert_eq!(s.position[0], 0.0);
    assert_eq!(s.velocity[0], 0.0);
    // paused: single steps on request
    let st = r.control(ControlRequest::Step(3));
    r.wait_ack(st);
    let s = r.wait_sample("3 steps", |s| s.stepped && s.sim_time_s > 0.0025);
    assert!((s.sim_time_s - 0.003).abs() < 1e-12);
    assert!(s.paused);
}

#[test]
fn trajectory_is_followed_then_held() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    c.watchdog.timeout_s = 0.0;
    c.start_paused = true;
    let mut r = Running::start("ros_pendulum_position.yaml", c);
    let mut t = r.shared.trajectories.acquire().unwrap();
    t.num_joints = 1;
    t.slots[0] = 0;
    t.num_points = 2;
    t.has_velocities = false;
    t.times[0] = 0.5;
    t.times[1] = 1.0;
    t.positions[0] = 0.2;
    t.positions[1] = 0.4;
    t.start_delay_s = 0.0;
    r.shared.trajectories.push(t).unwrap();
    r.resume();
    let mid = r.wait_sample("mid trajectory", |s| s.sim_time_s >= 0.75);
    assert!(mid.trajectory_active);
    let end = r.wait_sample("after the end", |s| s.sim_time_s >= 4.0);
    assert!(!end.trajectory_active);
    let mut q: f64 = 0.4;
    for _ in 0..50 {
        q = 0.4 - 9.81 * q.sin() / 50.0;
    }
    assert!((end.position[0] - q).abs() < 2e-3, "held at {} vs {q}", end.position[0]);
    assert_eq!(r.stop().counters.trajectories, 1);
}

#[test]
fn a_stalled_consumer_costs_only_the_oldest_samples() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    c.sample_queue_size = 4;
    let r = Running::start("ros_pendulum_effort.yaml", c);
    std::thread::sleep(Duration::from_millis(300));
    let exit_shared = r.shared.clone();
    let exit = r.stop();
    let got: Vec<u64> = std::iter::from_fn(|| exit_shared.samples.pop().map(|s| s.seq)).collect();
    assert_eq!(got.len(), 4);
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "the newest, in order: {got:?}");
    assert!(exit.counters.samples_dropped > 0);
    assert_eq!(exit_shared.samples.pushed(), got[3], "every sample pushed is either kept or dropped");
    assert_eq!(exit_shared.samples.dropped() + 4, got[3]);
}

#[test]
fn gains_and_solver_settings_apply_between_steps() {
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    let mut r = Running::start("ros_pendulum_position.yaml", c);
    let a = r.control(ControlRequest::Gains { slot: 0, kp: 123.0, kd: 4.0 });
    let b = r.control(ControlRequest::SolverIterations(7));
    r.control(ControlRequest::SolverTolerance(1e-3));
    let d = r.control(ControlRequest::Gains { slot: 99, kp: 1.0, kd: 1.0 }); // ignored, no panic
    r.wait_ack(a.max(b).max(d));
    let exit = r.stop();
    assert_eq!(exit.sim.commands.mode[0], ControlMode::Position { kp: 123.0, kd: 4.0 });
    match &exit.sim.workspace.solver {
        crate::contact::Solver::Pgs(p) => assert_eq!((p.params.max_iterations, p.params.tolerance), (7, 1e-3)),
        other => panic!("unexpected solver {}", other.kind()),
    }
}

/// A loop on a model whose every step fails (a passive, undamped joint moving only a massless
/// link: the mass matrix is singular), with the given failure policy.
fn failing_loop(tag: &str, policy: crate::sim::FailurePolicy) -> Running {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let urdf = r#"<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
        <link name="ghost"/><joint name="spin" type="continuous"><parent link="a"/><child link="ghost"/><axis xyz="0 0 1"/></joint></robot>"#;
    std::fs::write(dir.join(format!("rt_failing_{tag}.urdf")), urdf).unwrap();
    let scene = dir.join(format!("rt_failing_{tag}.yaml"));
    std::fs::write(&scene, format!("ground: {{enabled: false}}\nrobots:\n  - urdf: rt_failing_{tag}.urdf\n")).unwrap();
    let mut c = cfg(TimeMode::SimTime);
    c.real_time_factor = 0.0;
    let mut rt = RtLoop::new(Simulation::from_scene(&load_scene(&scene).expect("scene loads"), None), c);
    rt.set_failure_policy(policy);
    let shared = rt.shared().clone();
    let join = std::thread::spawn(move || rt.run());
    Running { shared, join: Some(join), control_seq: 0, command_seq: 0 }
}

/// `stop` pauses the loop at the first failed step (the node keeps running and reports it);
/// `reset` resets after each failure and goes on; `hold` goes on. The first and last failures
/// are in the counters.
#[test]
fn failed_steps_apply_the_failure_policy_and_are_reported() {
    use crate::sim::FailurePolicy;
    let r = failing_loop("stop", FailurePolicy::Stop);
    let s = r.wait_sample("paused after the failure", |s| s.paused && s.counters.failed_steps > 0);
    std::thread::sleep(Duration::from_millis(50));
    let exit = r.stop();
    assert_eq!(exit.counters.failed_steps, 1, "stepping stops at the first failure");
    assert_eq!(exit.counters.steps, 1);
    let f = s.counters.first_failure.expect("first failure kept");
    assert_eq!((f.step, f.time_s), (1, 0.0));
    assert!(f.cause.contains("mass matrix"), "{}", f.cause);

    let r = failing_loop("reset", FailurePolicy::Reset);
    let s = r.wait_sample("resets", |s| s.counters.resets >= 3);
    assert!(!s.paused);
    assert!(s.counters.failed_steps >= 3);
    drop(r);

    let r = failing_loop("hold", FailurePolicy::Hold);
    let s = r.wait_sample("many failures", |s| s.counters.failed_steps >= 20);
    assert!(!s.paused);
    assert_eq!(s.counters.resets, 0);
    assert_eq!(s.counters.first_failure.unwrap().step, 1);
    assert!(s.counters.last_failure.unwrap().step >= 20);
}

/// After a statistics window, samples carry the window's slowest cycle: its work time, the
/// stage that took most of it, and the step and contact counts of that cycle. A cycle that
/// applied a reset counts its control request.
#[test]
fn the_worst_cycle_of_a_window_is_reported_with_its_stage_and_contacts() {
    let mut c = cfg(TimeMode::Realtime);
    c.rate_hz = 1000.0;
    c.stats_interval_s = 0.05;
    let mut r = Running::start("bag_push.yaml", c);
    let s = r.wait_sample("a complete window", |s| !s.step.worst_cycle.stage.is_empty() && s.counters.steps > 100);
    let w = s.step.worst_cycle;
    assert!(["control", "commands", "steps", "publish"].contains(&w.stage), "{w:?}");
    assert!(w.total_us > 0.0 && w.stage_us > 0.0 && w.stage_us <= w.total_us, "{w:?}");
    assert!(w.steps >= 1, "every realtime cycle steps: {w:?}");
    assert!(w.contacts >= 1, "the box rests on the floor: {w:?}");
    assert!(w.describe().contains(w.stage) && w.describe().contains(&format!("{} contacts", w.contacts)), "{}", w.describe());
    // the thread's own counters: it stepped, so it used CPU; the cause is one of the four
    assert!(w.cpu_us > 0.0, "{w:?}");
    assert!(["work", "preempted", "page faults", "waiting"].contains(&w.cause()), "{w:?}");
    assert!(w.describe().contains(&format!("cause {}", w.cause())), "{}", w.describe());
    assert_eq!(messages::WorstCycle::default().describe(), "none");
    // a reset is a control request of its cycle; a later window's worst cycle may or may not be it
    let seq = r.control(ControlRequest::Reset);
    r.wait_ack(seq);
    let after = r.wait_sample("a window after the reset", |s| s.counters.resets >= 1 && !s.step.worst_cycle.stage.is_empty());
    assert!(after.step.worst_cycle.total_us > 0.0);
    r.stop();
}

/// The worst cycle's cause follows from the thread's counters: mostly CPU time is work; little
/// CPU time with involuntary switches is preemption; with page faults, the faults; else waiting.
#[test]
fn the_worst_cycle_cause_follows_the_thread_counters() {
    let base = messages::WorstCycle { total_us: 1000.0, stage: "steps", stage_us: 990.0, steps: 1, ..Default::default() };
    assert_eq!(messages::WorstCycle { cpu_us: 900.0, involuntary_switches: 3, ..base }.cause(), "work");
    assert_eq!(messages::WorstCycle { cpu_us: 100.0, involuntary_switches: 3, page_faults: 2, ..base }.cause(), "preempted");
    assert_eq!(messages::WorstCycle { cpu_us: 100.0, page_faults: 2, ..base }.cause(), "page faults");
    assert_eq!(messages::WorstCycle { cpu_us: 100.0, ..base }.cause(), "waiting");
    assert_eq!(messages::WorstCycle::default().cause(), "");
}
