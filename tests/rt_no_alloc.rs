//! The real-time loop allocates nothing after it has started: a counting global allocator
//! counts allocations made **on the RT thread** between the loop's start and exit hooks, while
//! the test drives every input path (joint commands, trajectories, every control request, the
//! watchdog, sample recycling and sample drops) in `sim_time`, `realtime` and `lockstep` modes.

use contact_sim::config::load_scene;
use contact_sim::rt::messages::{HAS_EFFORT, HAS_POSITION, HAS_VELOCITY};
use contact_sim::rt::*;
use contact_sim::sim::Simulation;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{set_total_allocations, start_counting, stop_counting, total_allocations, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn sim(rel: &str) -> Simulation {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    Simulation::from_scene(&load_scene(&p).expect("scene"), None)
}

fn drain(shared: &RtShared, keep: usize) -> Option<Sample> {
    let mut last = None;
    let mut n = 0;
    while let Some(s) = shared.samples.pop() {
        n += 1;
        if n > keep {
            // keep a few buffers on this side for a while: the RT thread then drops the oldest
            last = Some((*s).clone());
        }
        shared.samples.recycle(s).ok();
    }
    last
}

fn exercise(scene: &str, mode: TimeMode, seconds: f64, wait_for_watchdog: bool) -> (RtExit, u64) {
    let before = total_allocations();
    let mut cfg = RtConfig {
        time_mode: mode,
        sched: SchedConfig { policy: PolicyKind::Other, lock_memory: false, ..Default::default() },
        real_time_factor: 0.0,
        sample_queue_size: 8,
        ..Default::default()
    };
    cfg.watchdog.timeout_s = 0.05;
    let mut rt = RtLoop::new(sim(scene), cfg);
    rt.set_hooks(RtHooks { on_loop_start: Some(start_counting), on_loop_exit: Some(stop_counting) });
    rt.set_notify(std::thread::current());
    let layout = rt.layout().clone();
    let n = layout.len();
    let handle = rt.spawn().expect("spawn");
    let _ = handle.sched_report(Duration::from_secs(10));
    let shared = handle.shared.clone();
    let t0 = Instant::now();
    let mut seq = 0u64;
    let mut i = 0u64;
    while t0.elapsed().as_secs_f64() < seconds {
        i += 1;
        // a joint command on every joint, every field
        if let Some(mut c) = shared.commands.acquire() {
            c.clear();
            for k in 0..n {
                c.mask[k] = HAS_POSITION | HAS_VELOCITY | HAS_EFFORT;
                c.position[k] = 0.1 * ((i % 7) as f64);
                c.velocity[k] = 0.0;
                c.effort[k] = 0.5;
            }
            c.seq = i;
            shared.commands.push(c).ok();
        }
        // a trajectory every so often
        if i % 5 == 0 {
            if let Some(mut t) = shared.trajectories.acquire() {
                t.num_joints = n;
                for k in 0..n {
                    t.slots[k] = k;
                }
                t.num_points = 3;
                t.has_velocities = i % 10 == 0;
                for p in 0..3 {
                    t.times[p] = 0.01 * (p + 1) as f64;
                    for k in 0..n {
                        t.positions[p * n + k] = 0.05 * p as f64;
                        t.velocities[p * n + k] = 0.0;
                    }
                }
                shared.trajectories.push(t).ok();
            }
        }
        // every control request
        let reqs = [
            ControlRequest::Gains { slot: (i as usize) % n.max(1), kp: 100.0, kd: 5.0 },
            ControlRequest::SolverIterations(50 + (i % 10) as u32),
            ControlRequest::SolverTolerance(1e-8),
            ControlRequest::PublishRate(500.0),
            ControlRequest::Interpolation(if i % 2 == 0 { Interpolation::Linear } else { Interpolation::Cubic }),
            ControlRequest::Watchdog { timeout_s: 0.05, action: [WatchdogAction::Hold, WatchdogAction::ZeroEffort, WatchdogAction::Damp][(i % 3) as usize] },
            ControlRequest::WatchdogGains { hold_kp: 50.0, hold_kd: 5.0, damping: 2.0 },
            ControlRequest::Pause(true),
            ControlRequest::Step(2),
            ControlRequest::Pause(false),
            ControlRequest::RealTimeFactor(if mode == TimeMode::SimTime { 0.0 } else { 1.0 }),
        ];
        if i % 20 == 0 {
            seq += 1;
            shared.control.push(Control { seq, request: ControlRequest::Reset }).ok();
        }
        for r in reqs {
            seq += 1;
            shared.control.push(Control { seq, request: r }).ok();
        }
        // stop commanding for a while so that the watchdog fires
        if i % 25 == 0 {
            std::thread::sleep(Duration::from_millis(120));
        }
        drain(&shared, 2);
        std::thread::park_timeout(Duration::from_millis(3));
    }
    if wait_for_watchdog {
        // no more commands: the watchdog fires once the last trajectory has ended (make sure the
        // loop is not left paused by a dropped `Pause(false)`: the control queue may have been full)
        seq += 1;
        while shared.control.push(Control { seq, request: ControlRequest::Pause(false) }).is_err() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t1 = Instant::now();
        let mut tripped = false;
        while !tripped && t1.elapsed() < Duration::from_secs(20) {
            while let Some(s) = shared.samples.pop() {
                tripped |= s.counters.watchdog_trips > 0;
                shared.samples.recycle(s).ok();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let exit = handle.stop().expect("loop thread");
    (exit, total_allocations() - before)
}

#[test]
fn the_rt_loop_does_not_allocate_after_start() {
    // the counter works (sanity): an allocation on a counting thread is seen (without the
    // first-allocation report, which is for the RT thread)
    set_total_allocations(1);
    start_counting();
    let v: Vec<u8> = Vec::with_capacity(10);
    drop(std::hint::black_box(v));
    stop_counting();
    assert!(set_total_allocations(0) >= 2);

    // (in lockstep a trajectory only advances with commands, so it keeps feeding the watchdog;
    // the default scene in a debug build steps too slowly for its trajectories to end)
    for (scene, mode, secs, expect_watchdog) in [
        ("tests/data/ros_pendulum_position.yaml", TimeMode::SimTime, 1.5, true),
        ("tests/data/ros_pendulum_effort.yaml", TimeMode::Realtime, 1.0, true),
        ("tests/data/ros_pendulum_position.yaml", TimeMode::Lockstep, 1.0, false),
        ("config/default.yaml", TimeMode::Realtime, 1.5, false),
    ] {
        let (exit, allocs) = exercise(scene, mode, secs, expect_watchdog);
        let c = exit.counters;
        eprintln!("{scene} {mode:?}: {c:?}");
        assert!(c.steps > 0 && c.commands_applied > 0 && c.trajectories > 0 && c.resets > 0, "{scene} {mode:?}: every path exercised: {c:?}");
        if expect_watchdog {
            assert!(c.watchdog_trips > 0, "{scene} {mode:?}: watchdog exercised: {c:?}");
        }
        assert_eq!(allocs, 0, "{scene} {mode:?}: {allocs} allocations on the RT thread after start");
    }
}
