//! Integration tests of `contact_sim_node` over real DDS (loopback only).
//!
//! Each test starts the node binary and an rclpy peer (`tests/ros/peer.py`, run with the python
//! of the ROS 2 prefix) in a ROS domain of its own, lets the peer drive a scenario and asserts on
//! the measurements it reports. Tests hold a global lock (one node at a time: the machine may
//! have two cores) and every wait is bounded.
//!
//! Needs the environment of `scripts/ros-env.sh` (run through `scripts/ros-test.sh`).

#![cfg(feature = "ros")]

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[path = "common/pendulum.rs"]
mod pendulum;
use pendulum::pendulum_reference;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
static DOMAIN_COUNTER: AtomicU32 = AtomicU32::new(0);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    let prefix = std::env::var_os("CONTACT_SIM_ROS_PREFIX").map(PathBuf::from).unwrap_or_else(|| repo().join(".ros/prefix"));
    let py = prefix.join("bin/python3");
    assert!(py.exists(), "no ROS 2 prefix python at {} (run scripts/setup-ros.sh and source scripts/ros-env.sh)", py.display());
    assert!(std::env::var_os("AMENT_PREFIX_PATH").is_some(), "source scripts/ros-env.sh before running the ROS tests");
    py
}

/// A ROS domain id for this test, distinct from the other tests of this process.
fn domain() -> String {
    let k = DOMAIN_COUNTER.fetch_add(1, Ordering::SeqCst);
    (1 + (std::process::id() * 7 + k * 13) % 100).to_string()
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

struct NodeProc {
    child: Option<Child>,
    log: PathBuf,
}

impl NodeProc {
    fn start(scene: &str, params: &[&str], domain: &str) -> Self {
        let log = std::env::temp_dir().join(format!("contact_sim_node_test_{}_{domain}.log", std::process::id()));
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_contact_sim_node"));
        cmd.current_dir(repo()).arg("--scene").arg(repo().join(scene)).arg("--ros-args").args(["-p", "diagnostics_rate_hz:=10.0"]);
        let mut it = params.iter();
        while let Some(p) = it.next() {
            if p.starts_with("--") {
                // e.g. --params-file FILE
                cmd.arg(p);
                if let Some(v) = it.next() {
                    cmd.arg(v);
                }
            } else if p.starts_with("__ns:=") {
                // the node's namespace (a remapping)
                cmd.args(["-r", p]);
            } else {
                cmd.args(["-p", p]);
            }
        }
        let child = cmd.env("ROS_DOMAIN_ID", domain).env("RCUTILS_LOGGING_BUFFERED_STREAM", "0").stdin(Stdio::null()).stdout(out).stderr(err).spawn().expect("start contact_sim_node");
        NodeProc { child: Some(child), log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Sends `sig` and waits up to `timeout` for the exit.
    fn signal_and_wait(&mut self, sig: i32, timeout: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if let Ok(Some(st)) = child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.signal_and_wait(libc::SIGINT, Duration::from_secs(10));
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Runs a peer script; returns its RESULT json. Panics (with both logs) on failure or timeout.
fn run_python(node: &mut NodeProc, args: &[&str], domain: &str, timeout: Duration) -> Value {
    let mut child = Command::new(python())
        .args(args)
        .current_dir(repo())
        .env("ROS_DOMAIN_ID", domain)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the python peer");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break Some(st);
        }
        if t0.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let alive = node.alive();
    let fail = |why: &str| -> ! { panic!("{why}\n--- peer stdout:\n{out}\n--- peer stderr:\n{err}\n--- node alive: {alive}; node log:\n{}", node.log()) };
    match status {
        None => fail(&format!("peer {args:?} timed out after {timeout:?}")),
        Some(st) if !st.success() => fail(&format!("peer {args:?} failed ({st})")),
        _ => {}
    }
    let line = out.lines().rev().find(|l| l.starts_with("RESULT ")).unwrap_or_else(|| fail("no RESULT line"));
    serde_json::from_str(&line["RESULT ".len()..]).unwrap_or_else(|e| fail(&format!("bad RESULT json: {e}")))
}

fn peer(node: &mut NodeProc, scenario: &str, domain: &str) -> Value {
    run_python(node, &["tests/ros/peer.py", scenario], domain, Duration::from_secs(150))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn floats(v: &Value, k: &str) -> Vec<f64> {
    v[k].as_array().unwrap_or_else(|| panic!("{k} missing")).iter().map(|x| x.as_f64().unwrap()).collect()
}


/// Steady state of the PD pendulum: kp (θ* − q) = m g L sin q.
fn pd_steady_state(kp: f64, target: f64) -> f64 {
    let mut q = target;
    for _ in 0..200 {
        q = target - 9.81 * q.sin() / kp;
    }
    q
}

#[test]
fn node_comes_up_with_topics_services_parameters_and_diagnostics() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["--params-file", "config/contact_sim_node.params.yaml"], &d);
    let r = peer(&mut node, "up", &d);
    assert_eq!(r["names"], serde_json::json!(["pendulum_joint"]));
    assert!(r["stamps_increasing"].as_bool().unwrap());
    assert!(r["lengths_ok"].as_bool().unwrap(), "position, velocity and effort for every name");
    // 1 kHz nominal; the rclpy subscriber on a loaded 2-core machine may not keep up fully
    assert!(f(&r, "rate_hz") > 300.0, "joint_states at {} Hz", f(&r, "rate_hz"));
    let services: Vec<&str> = r["services"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for s in ["/contact_sim_node/reset", "/contact_sim_node/pause", "/contact_sim_node/step"] {
        assert!(services.contains(&s), "{s} in {services:?}");
    }
    let diag = &r["diag"];
    for k in ["jitter_p50_us", "jitter_p99_us", "jitter_max_us", "period_mean_us", "overruns", "commands_rejected", "commands_dropped", "solver_iterations", "solver_residual", "real_time_factor", "watchdog_trips"] {
        assert!(diag.get(k).is_some(), "{k} in /diagnostics: {diag}");
    }
    let period: f64 = diag["period_mean_us"].as_str().unwrap().parse().unwrap();
    assert!((period - 1000.0).abs() < 50.0, "mean loop period {period} µs");
    let params: Vec<&str> = r["params"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for p in ["scene", "solver", "time_mode", "rate_hz", "publish_rate_hz", "real_time_factor", "solver_max_iterations", "solver_tolerance", "watchdog_timeout_s", "gains.pendulum_joint.kp", "gains.pendulum_joint.kd"] {
        assert!(params.contains(&p), "parameter {p} declared: {params:?}");
    }
    assert!(!node.log().contains("ignoring parameters"), "the shipped parameter file names only declared parameters:\n{}", node.log());
}

#[test]
fn effort_command_moves_the_pendulum_as_physics_predicts() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &["time_mode:=sim_time", "real_time_factor:=1.0", "start_paused:=true", "watchdog_timeout_s:=0.0"], &d);
    let r = peer(&mut node, "effort", &d);
    let tau = f(&r, "tau");
    let (t, q, v, e) = (floats(&r, "t"), floats(&r, "q"), floats(&r, "v"), floats(&r, "effort"));
    assert!(t.len() > 100, "{} states", t.len());
    assert!(e.iter().all(|&x| (x - tau).abs() < 1e-9), "measured effort equals the command");
    // initial angular acceleration τ / I (sign and magnitude) from the first 20 ms
    let k = t.iter().position(|&x| x >= 0.02 - 1e-9).unwrap();
    let acc0 = v[k] / t[k];
    assert!(acc0 > 0.0 && (acc0 - tau / 1.00004).abs() < 0.02 * tau, "θ''(0) = {acc0} rad/s², expected τ/I = {}", tau / 1.00004);
    // the whole motion against I θ'' = τ − m g L sin θ
    let mut worst = 0.0f64;
    for i in 0..t.len() {
        let (qr, _) = pendulum_reference(tau, t[i]);
        worst = worst.max((q[i] - qr).abs());
    }
    let (q1, _) = pendulum_reference(tau, 1.0);
    assert!(worst < 0.01 * q1.abs().max(0.1), "max |θ − θ_ref| = {worst} rad (θ_ref(1 s) = {q1})");
}

#[test]
fn position_commands_and_trajectories_are_tracked_within_the_pd_steady_state_error() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["watchdog_timeout_s:=1.0"], &d);
    let r = peer(&mut node, "position", &d);
    let kp = 50.0;
    let want = pd_steady_state(kp, f(&r, "target_group"));
    assert!((f(&r, "q_group") - want).abs() < 0.01, "group command: q = {} rad, PD steady state {want} rad", f(&r, "q_group"));
    let want = pd_steady_state(kp, f(&r, "target_traj"));
    assert!((f(&r, "q_traj") - want).abs() < 0.01, "trajectory end: q = {} rad, PD steady state {want} rad", f(&r, "q_traj"));
    assert!(f(&r, "q_max_traj") < 0.5 && f(&r, "q_min_traj") > -0.4, "trajectory stays between its points: [{}, {}]", f(&r, "q_min_traj"), f(&r, "q_max_traj"));
}

#[test]
fn sim_time_publishes_an_advancing_clock_at_the_real_time_factor() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &["time_mode:=sim_time", "real_time_factor:=2.0", "publish_rate_hz:=200.0"], &d);
    let r = peer(&mut node, "clock", &d);
    assert!(r["clock_monotonic"].as_bool().unwrap());
    let rate = f(&r, "clock_rate");
    assert!(rate > 1.5 && rate < 2.1, "/clock advanced {rate} s per wall second (factor 2)");
    let rtf = f(&r, "diag_rtf");
    assert!(rtf > 1.5 && rtf < 2.1, "diagnostics real_time_factor {rtf}");
    assert!((f(&r, "last_state_stamp") - f(&r, "last_clock")).abs() < 0.1, "joint_states stamped with sim time");
}

#[test]
fn lockstep_takes_exactly_one_step_per_command() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &["time_mode:=lockstep"], &d);
    let r = peer(&mut node, "lockstep", &d);
    assert_eq!(f(&r, "idle_stamps_max"), 0.0, "no step before the first command");
    let per = floats(&r, "per_command");
    for (k, s) in per.iter().enumerate() {
        assert!((s - 0.001 * (k + 1) as f64).abs() < 1e-6, "after command {}: t = {s}", k + 1);
    }
    assert!((f(&r, "after_idle_max") - 0.035).abs() < 1e-6, "35 commands, 35 steps, none while idle: t = {}", f(&r, "after_idle_max"));
    assert!(f(&r, "after_idle_count") > 0.0, "heartbeat states while idle");
    assert_eq!(f(&r, "diag_steps") as i64, 35);
    assert_eq!(f(&r, "diag_applied") as i64, 35);
    assert!((f(&r, "last_clock") - 0.035).abs() < 1e-6, "/clock at {}", f(&r, "last_clock"));
}

#[test]
fn malformed_commands_are_rejected_and_counted_while_the_node_keeps_publishing() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_arm.yaml", &["limit_policy:=reject", "publish_rate_hz:=200.0"], &d);
    let r = peer(&mut node, "malformed", &d);
    assert_eq!(f(&r, "diag_rejected"), f(&r, "sent_bad"), "every malformed joint / group command rejected: {r}");
    assert_eq!(f(&r, "diag_traj_rejected"), f(&r, "sent_bad_traj"));
    assert!(f(&r, "diag_applied") >= 1.0, "the valid command after them was applied");
    assert!(f(&r, "rate_during_hz") > 50.0 && f(&r, "states_after") > 50.0, "still publishing: {r}");
    assert!(node.alive(), "the node survived");
    let log = node.log();
    assert!(log.contains("rejected command on joint_commands"), "a warning was logged:\n{log}");
    let warnings = log.matches("rejected command").count();
    assert!(warnings < f(&r, "sent_bad") as usize + f(&r, "sent_bad_traj") as usize, "warnings are throttled ({warnings} for {} rejections)", f(&r, "sent_bad") + f(&r, "sent_bad_traj"));
}

#[test]
fn watchdog_fires_and_holds_position() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start(
        "tests/data/ros_pendulum_effort.yaml",
        &["watchdog_timeout_s:=0.3", "watchdog_action:=hold", "watchdog_hold_kp:=50.0", "watchdog_hold_kd:=10.0", "publish_rate_hz:=200.0"],
        &d,
    );
    let r = peer(&mut node, "watchdog", &d);
    assert!(f(&r, "trips") >= 1.0, "watchdog tripped: {r}");
    assert!(f(&r, "held_v_max") < 0.05, "holding still: |v| ≤ {}", f(&r, "held_v_max"));
    assert!(f(&r, "held_q_spread") < 0.01, "holding a position: spread {}", f(&r, "held_q_spread"));
    assert!(f(&r, "held_q").abs() > 0.05, "held where it was (not back at 0): {}", f(&r, "held_q"));
    assert!(r["cleared"].as_bool().unwrap());
}

#[test]
fn pause_step_and_reset_restore_the_initial_state() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &["watchdog_timeout_s:=0.0", "publish_rate_hz:=200.0"], &d);
    let r = peer(&mut node, "reset", &d);
    assert_eq!(r["step_while_running"][0], false, "~/step refuses while running");
    assert_eq!(r["pause"][0], true);
    assert!(f(&r, "frozen_spread") == 0.0, "paused: the state does not change");
    assert!(f(&r, "q_paused") > 0.05, "it had moved: {}", f(&r, "q_paused"));
    assert_eq!(r["step"][0], true, "{}", r["step"]);
    assert!(f(&r, "q_stepped") != f(&r, "q_paused"), "one step moved it");
    assert_eq!(r["reset"][0], true, "{}", r["reset"]);
    assert_eq!(f(&r, "q_after_reset"), f(&r, "q_initial"), "initial position");
    assert_eq!(f(&r, "v_after_reset"), 0.0, "initial velocity");
    assert_eq!(r["resume"][0], true);
    assert!(f(&r, "q_after_resume_max") < 1e-6, "initial commands restored (no effort): max |q| {}", f(&r, "q_after_resume_max"));
}

#[test]
fn runtime_parameters_are_validated_and_applied() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["watchdog_timeout_s:=0.0"], &d);
    let r = peer(&mut node, "params", &d);
    let res = &r["results"];
    for ok in ["publish_rate_hz", "gains.pendulum_joint.kp", "solver_max_iterations", "limit_policy"] {
        assert_eq!(res[ok][0], true, "{ok}: {}", res[ok]);
    }
    for bad in ["time_mode(read-only)", "rate_hz(read-only)", "publish_rate_hz(negative)", "watchdog_action(bad)", "undeclared"] {
        assert_eq!(res[bad][0], false, "{bad} must be refused: {}", res[bad]);
    }
    let rate = f(&r, "rate_after_hz");
    assert!(rate > 70.0 && rate < 130.0, "publish_rate_hz 100 → {rate} Hz");
    let want = pd_steady_state(200.0, 0.5);
    assert!((f(&r, "q_kp200") - want).abs() < 0.01, "with kp 200: q = {} vs {want}", f(&r, "q_kp200"));
}

#[test]
fn force_topics_carry_the_sensor_weight_the_box_weight_and_the_configured_noise() {
    // F/T sensor topics over DDS: the wrist sensor holds the hand (0.95 kg), the box (2 kg) rests on the
    // floor; the expected values come from the physics, not from the node.
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_wrench.yaml", &["publish_rate_hz:=200.0", "contact_markers_rate_hz:=10.0", "watchdog_timeout_s:=0.0"], &d);
    let r = peer(&mut node, "wrench", &d);
    let g = 9.81;
    let mean = |t: &str| -> Vec<f64> { r[t]["mean"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    let std = |t: &str| -> Vec<f64> { r[t]["std"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    // the hand's weight, in whatever orientation the sensor frame has
    let ideal = mean("wrist/wrench_ideal");
    let f = (ideal[0].powi(2) + ideal[1].powi(2) + ideal[2].powi(2)).sqrt();
    assert!((f - 0.95 * g).abs() < 0.005 * 0.95 * g, "|f| = {f} N, expected {} N", 0.95 * g);
    assert_eq!(r["wrist/wrench"]["frame_id"], "wrist_ft_frame");
    // the ideal reading is steady; the emulated one carries the configured noise on fz only
    assert!(std("wrist/wrench_ideal").iter().all(|&s| s < 0.01), "ideal std {:?}", std("wrist/wrench_ideal"));
    let noise = &r["noise_fz"];
    let (n, mu, sd) = (noise["count"].as_f64().unwrap(), noise["mean"].as_f64().unwrap(), noise["std"].as_f64().unwrap());
    assert!(n > 100.0, "{n} matched samples");
    assert!((sd - 0.2).abs() < 0.2 * 0.2, "fz noise std {sd} N, configured 0.2 N");
    assert!(mu.abs() < 4.0 * 0.2 / n.sqrt(), "fz noise mean {mu} N");
    let meas_std = std("wrist/wrench");
    assert!(meas_std[0] < 0.01 && meas_std[1] < 0.01, "no noise configured on fx, fy: {meas_std:?}");
    // the box: contact force = its weight, up, in world axes; no net horizontal force
    let bw = mean("contact_wrenches/box");
    assert!((bw[2] - 2.0 * g).abs() < 0.005 * 2.0 * g, "box contact fz = {} N, expected {} N", bw[2], 2.0 * g);
    assert!(bw[0].abs() < 0.01 && bw[1].abs() < 0.01, "box contact fx, fy = {}, {}", bw[0], bw[1]);
    assert_eq!(r["contact_wrenches/box"]["frame_id"], "odom");
    // in the box's own axes (it rests flat): the same magnitude
    let bl = mean("contact_wrenches/box/local");
    assert!(((bl[0].powi(2) + bl[1].powi(2) + bl[2].powi(2)).sqrt() - 2.0 * g).abs() < 0.01 * 2.0 * g, "local {bl:?}");
    assert_eq!(r["contact_wrenches/box/local"]["frame_id"], "box");
    // markers: DELETEALL first, points and force arrows; the arrows under the box sum to m g / scale
    let m = &r["markers"];
    assert_eq!(m["actions"][0], 3, "DELETEALL first");
    assert_eq!(m["namespaces"], serde_json::json!(["contact_forces", "contact_points"]));
    let arrows = m["arrows"].as_array().unwrap();
    let mut box_up = 0.0;
    for a in arrows {
        let (p0, p1) = (&a[0], &a[1]);
        // box contacts: under the box footprint (|x| < 0.1, |y + 0.8| < 0.1, z ≈ 0)
        if p0[0].as_f64().unwrap().abs() < 0.11 && (p0[1].as_f64().unwrap() + 0.8).abs() < 0.11 && p0[2].as_f64().unwrap().abs() < 0.01 {
            box_up += p1[2].as_f64().unwrap() - p0[2].as_f64().unwrap();
        }
    }
    assert!((box_up / 0.002 - 2.0 * g).abs() < 0.02 * 2.0 * g, "box arrows sum to {} N", box_up / 0.002);
}

#[test]
fn sigint_and_sigterm_shut_down_cleanly() {
    let _g = lock();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let d = domain();
        let mut node = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &[], &d);
        assert!(node.wait_log("command groups", Duration::from_secs(60)), "node up:\n{}", node.log());
        assert!(node.pid() > 0);
        std::thread::sleep(Duration::from_millis(500));
        let st = node.signal_and_wait(sig, Duration::from_secs(15)).unwrap_or_else(|| panic!("no exit within 15 s of signal {sig}:\n{}", node.log()));
        assert!(st.success(), "exit status {st} after signal {sig}:\n{}", node.log());
        let log = node.log();
        assert!(log.contains("shutting down") && log.contains("stopped after"), "clean shutdown log:\n{log}");
    }
}

#[test]
fn launch_and_parameter_files_name_only_declared_parameters() {
    let _g = lock();
    // the node's declared parameters for the default scene (no DDS needed)
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim_node")).current_dir(repo()).args(["--scene", "config/default.yaml", "--list-parameters"]).output().expect("run the node");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let declared: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert!(declared.len() > 20 && declared.contains(&"scene".to_string()), "{declared:?}");
    let is_declared = |n: &str| declared.iter().any(|d| d == n);

    let mut dummy = NodeProc { child: None, log: PathBuf::from("/nonexistent") };
    let r = run_python(&mut dummy, &["tests/ros/check_launch.py", repo().to_str().unwrap(), env!("CARGO_BIN_EXE_contact_sim_node")], "0", Duration::from_secs(120));
    // Python launch file
    let py = &r["py"];
    let args: Vec<&str> = py["arguments"].as_object().unwrap().keys().map(|s| s.as_str()).collect();
    for a in ["scene", "solver", "time_mode", "use_sim_time", "params_file", "namespace", "robot_state_publisher"] {
        assert!(args.contains(&a), "launch argument {a}: {args:?}");
    }
    // the node follows the namespace argument; both files include the same robot_state_publishers
    assert_eq!(py["node"]["namespace"], "LaunchConfiguration('namespace',)");
    let py_inc = &py["includes"][0];
    assert!(py_inc["file"].as_str().unwrap().contains("robot_state_publishers.launch.py"), "{py_inc}");
    assert_eq!(py_inc["condition"], "LaunchConfiguration('robot_state_publisher',)");
    assert_eq!(r["xml"]["node"]["namespace"], "$(var namespace)");
    let xml_inc = &r["xml"]["includes"][0];
    assert_eq!(xml_inc["file"], "$(find-pkg-share contact_sim)/launch/robot_state_publishers.launch.py");
    assert_eq!(xml_inc["if"], "$(var robot_state_publisher)");
    assert_eq!(xml_inc["arguments"], py_inc["arguments"], "the same arguments to robot_state_publishers.launch.py");
    assert_eq!(r["xml"]["other_nodes"], serde_json::json!([]), "no robot_state_publisher of the XML's own");
    assert_eq!(py["node"]["package"], "contact_sim");
    assert_eq!(py["node"]["executable"], "contact_sim_node");
    assert_eq!(py["node"]["name"], "contact_sim_node");
    let py_params: Vec<&str> = py["node"]["parameter_names"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for p in &py_params {
        assert!(is_declared(p), "launch .py sets undeclared parameter {p}");
    }
    assert_eq!(py["node"]["parameter_files"].as_array().unwrap().len(), 1);
    // XML twin
    let xml = &r["xml"];
    let mut xml_args: Vec<&str> = xml["arguments"].as_object().unwrap().keys().map(|s| s.as_str()).collect();
    let mut py_args = args.clone();
    xml_args.sort();
    py_args.sort();
    assert_eq!(xml_args, py_args, "the XML launch file has the same arguments");
    assert_eq!(xml["node"]["exec"], "contact_sim_node");
    // both end the launch when the node exits, and validate the same choices
    assert_eq!(py["node"]["on_exit"], "Shutdown");
    assert_eq!(xml["node"]["on_exit"], "shutdown");
    for a in ["solver", "time_mode", "use_sim_time", "robot_state_publisher"] {
        assert_eq!(xml["choices"][a], py["arguments"][a]["choices"], "choices of launch argument {a}");
    }
    let mut xml_params: Vec<&str> = xml["parameter_names"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    let mut pyp = py_params.clone();
    xml_params.sort();
    pyp.sort();
    assert_eq!(xml_params, pyp, "the XML launch file sets the same parameters");
    assert_eq!(xml["parameter_files"].as_array().unwrap().len(), 1);

    // both launch files evaluated as launch / launch_ros do (the $(command) / --print-robot-description
    // run with the built node), the programs they start given their command lines
    let default_scene = repo().join("config/default.yaml");
    let one_robot_scene = repo().join("tests/data/ros_arm.yaml");
    for kind in ["py", "xml"] {
        let runs = &r["runs"][kind];
        for (case, scene, use_sim_time, ns, robots) in [
            ("default", &default_scene, false, "/", vec![("quadruped", "/quadruped"), ("arm7", "/arm7")]),
            ("one_robot", &one_robot_scene, true, "/sim_a", vec![("arm7", "/sim_a")]),
            ("no_rsp_package", &default_scene, false, "/", vec![]),
            ("rsp_off", &default_scene, false, "/", vec![]),
        ] {
            let run = &runs[case];
            assert_eq!(run["error"], Value::Null, "sim.launch.{kind} ({case}) fails as `ros2 launch` would: {}", run["error"]);
            let procs = run["processes"].as_array().unwrap();
            // the node: its launch parameters reach it with their types
            let node = &procs[0];
            assert_eq!((node["package"].as_str(), node["node"].as_str(), node["namespace"].as_str()), (Some("contact_sim"), Some("contact_sim_node"), Some(ns)), "{kind} {case}: {node}");
            let p = &node["parameters"];
            assert_eq!(p["scene"].as_str(), Some(scene.to_str().unwrap()), "{kind} {case}: scene");
            assert_eq!((&p["solver"], &p["time_mode"], &p["record_bag"]), (&Value::from("scene"), &Value::from("realtime"), &Value::from("")), "{kind} {case}: string parameters {p}");
            assert_eq!(p["use_sim_time"], Value::from(use_sim_time), "{kind} {case}: use_sim_time is a bool");
            // one robot_state_publisher per robot, each with a URDF string of its robot
            let rsp: Vec<&Value> = procs[1..].iter().collect();
            assert!(rsp.iter().all(|p| p["package"] == "robot_state_publisher"), "{kind} {case}: {procs:?}");
            let got: Vec<(&str, &str)> = rsp.iter().map(|p| (p["urdf_robot"].as_str().unwrap(), p["namespace"].as_str().unwrap())).collect();
            assert_eq!(got, robots, "{kind} {case}: robot_state_publishers (robot, namespace)");
            for p in &rsp {
                assert_eq!(p["parameter_types"]["robot_description"], "str", "{kind} {case}: {p}");
                assert!(p["urdf_links"].as_u64().unwrap() >= 2, "{kind} {case}: a whole URDF: {p}");
                assert_eq!(p["use_sim_time"], Value::from(use_sim_time), "{kind} {case}");
                let tf = if ns == "/" { "/tf".to_string() } else { format!("{ns}/tf") };
                let joint_states = if ns == "/" { "/joint_states".to_string() } else { format!("{ns}/joint_states") };
                let remaps = p["remaps"].as_array().unwrap();
                assert!(remaps.contains(&serde_json::json!(["/tf", tf])) && remaps.contains(&serde_json::json!(["joint_states", joint_states])), "{kind} {case}: {remaps:?}");
                assert!(remaps.contains(&serde_json::json!(["robot_description", "robot_state_publisher/robot_description"])));
            }
        }
        assert!(runs["no_rsp_package"]["log"][0].as_str().unwrap().contains("robot_state_publisher is not installed"), "{kind}: {}", runs["no_rsp_package"]);
        // params_file:=/nonexistent/...: launch_ros only warns and leaves the file out; the real
        // node, started with the command line launch builds, stops with one line naming the file
        let run = &runs["missing_params_file"];
        assert_eq!(run["error"], Value::Null, "{kind}: {run}");
        assert!(run["log"][0].as_str().unwrap().contains("Parameter file path is not a file: /nonexistent/contact_sim.params.yaml"), "{kind}: {run}");
        let node = &run["processes"][0];
        assert_eq!(node["exit"], Value::from(2), "{kind}: the node stops (not on its defaults): {node}");
        let err = node["stderr"].as_str().unwrap();
        assert_eq!(
            err.trim_end(),
            "contact_sim_node: error: parameter file /nonexistent/contact_sim.params.yaml (--require-params-file, the launch argument params_file): No such file or directory (os error 2)",
            "{kind}: one line naming the file"
        );
    }
    // parameter file: only declared names, values the node accepts (checked live in the first test)
    for (k, _) in r["params_file"].as_object().unwrap() {
        assert!(is_declared(k), "config/contact_sim_node.params.yaml sets undeclared parameter {k}");
    }
    // package.xml
    let pkg = &r["package"];
    assert_eq!(pkg["format"], "3");
    assert_eq!(pkg["name"], "contact_sim");
    assert_eq!(pkg["build_type"], "ament_cargo");
    assert_eq!(pkg["maintainer_email_valid"], true);
    let deps: Vec<&str> = pkg["depends"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for m in ["sensor_msgs", "std_msgs", "std_srvs", "trajectory_msgs", "nav_msgs", "rosgraph_msgs", "diagnostic_msgs", "geometry_msgs", "visualization_msgs", "builtin_interfaces", "rcl_interfaces"] {
        assert!(deps.contains(&m), "package.xml depends on {m}");
    }
    // the crate version and package version agree
    assert_eq!(pkg["version"], env!("CARGO_PKG_VERSION"));
    assert!(Path::new(&repo().join("launch/sim.launch.py")).exists());
}

/// `--ros-args --params-file` naming a file that does not exist: the node stops at once (exit 2)
/// with one line naming the file and the option, before rcl prints its own error.
#[test]
fn a_missing_parameter_file_stops_the_node_with_one_line_naming_it() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["--params-file", "/nonexistent/params.yaml"], &d);
    let st = node.child.as_mut().map(|c| {
        let t0 = Instant::now();
        loop {
            if let Ok(Some(st)) = c.try_wait() {
                break Some(st);
            }
            if t0.elapsed() > Duration::from_secs(20) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let st = st.flatten().unwrap_or_else(|| panic!("the node runs with a missing parameter file:\n{}", node.log()));
    assert_eq!(st.code(), Some(2), "{}", node.log());
    assert_eq!(node.log().trim_end(), "contact_sim_node: error: parameter file /nonexistent/params.yaml (--ros-args --params-file): No such file or directory (os error 2)");
    node.child = None;
}

/// Mimic followers take no commands (ros_arm: finger_right_joint mimics finger_left_joint): a
/// command naming only the follower is rejected and not applied, with a warning naming the joint
/// it follows; named with its leader (as `joint_states` lists them) the follower's value is
/// ignored, with one warning per joint. The default group `arm7/commands` leaves the follower out
/// and publishes its joint order as the read-only parameter `groups.arm7.joints`; an array of
/// that length is applied, a longer one rejected with the order in the warning.
#[test]
fn mimic_followers_take_no_commands_and_the_group_order_is_a_parameter() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_arm.yaml", &["watchdog_timeout_s:=0.0", "publish_rate_hz:=100.0", "limit_policy:=reject"], &d);
    let r = peer(&mut node, "mimic_groups", &d);
    let names: Vec<&str> = r["names"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(names.contains(&"finger_right_joint"), "joint_states still has the follower: {names:?}");
    let expected: Vec<&str> = names.iter().copied().filter(|n| *n != "finger_right_joint").collect();
    let joints: Vec<&str> = r["group_joints"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(joints, expected, "groups.arm7.joints: the arm's joints in order, without the mimic follower");
    assert_eq!(r["group_interface"], "position");
    assert_eq!(r["group_joints_read_only"], true);
    let c = |k: &str, i: usize| r[k][i].as_i64().unwrap();
    // received, applied, rejected, trajectories rejected
    assert_eq!(c("after_alone", 1), c("before", 1), "a command naming only the follower is not applied: {r}");
    assert_eq!(c("after_alone", 2) - c("before", 2), 1, "it is rejected: {r}");
    assert_eq!(c("after_alone", 3) - c("before", 3), 1, "a trajectory of the follower only is rejected: {r}");
    assert_eq!(c("after_pair", 1) - c("after_alone", 1), 2, "follower + leader: applied");
    assert_eq!(c("after_pair", 2), c("after_alone", 2), "follower + leader: not rejected");
    let (ql, qr) = (r["q_left_pair"].as_f64().unwrap(), r["q_right_pair"].as_f64().unwrap());
    assert!((ql - 0.02).abs() < 0.003 && (qr - ql).abs() < 0.001, "the leader at its target, the follower with it (its 0.0 ignored): {ql} {qr}");
    assert!(c("after_group", 1) - c("after_pair", 1) >= 3 && c("after_group", 2) - c("after_pair", 2) == 1, "group: 3 applied, the long one rejected: {r}");
    assert!((r["q_left_group"].as_f64().unwrap() - 0.01).abs() < 0.003, "the group's finger value applied: {}", r["q_left_group"]);
    let log = node.log();
    assert!(log.contains("rejected command on joint_commands: joint 'finger_right_joint' mimics 'finger_left_joint' (URDF <mimic>) and takes no commands: command 'finger_left_joint'"), "{log}");
    assert_eq!(log.matches("joint_commands: joint 'finger_right_joint' mimics 'finger_left_joint' (URDF <mimic>) and takes no commands: its values are ignored").count(), 1, "warned once:\n{log}");
    let order = format!("position has {} entries, expected {}: the {} values are, in order: {} (parameter groups.arm7.joints)", joints.len() + 1, joints.len(), joints.len(), joints.join(", "));
    assert!(log.contains(&order), "the rejection says the order ({order}):\n{log}");
    assert!(log.contains(&format!("arm7/commands ({} position values: groups.arm7.joints)", joints.len())), "start-up line:\n{log}");
}

/// `record_bag`: the node records everything it publishes and every command it receives into a
/// rosbag2 (MCAP) bag that SIGINT closes properly; our reader and the `rosbags` package read it;
/// replaying its commands headless reproduces the node's motion (the node's bag plays the part
/// of a hardware bag).
#[test]
fn record_bag_records_topics_and_commands_and_replays() {
    let _g = lock();
    let d = domain();
    let dir = std::env::temp_dir().join(format!("contact_sim_node_bag_{}_{d}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let param = format!("record_bag:={}", dir.display());
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["watchdog_timeout_s:=1.0", &param], &d);
    let _ = peer(&mut node, "position", &d);
    let st = node.signal_and_wait(libc::SIGINT, Duration::from_secs(15)).expect("exit after SIGINT");
    assert!(st.success());
    let log = node.log();
    assert!(log.contains("recording a rosbag2") && log.contains("closed:"), "{log}");
    let bag = contact_sim::bag::read_bag(&dir).unwrap();
    assert!(bag.warnings.is_empty() && !bag.truncated, "{:?}", bag.warnings);
    let count = |t: &str| bag.topic_index(t).map(|i| bag.topics[i].count).unwrap_or(0);
    assert!(count("/joint_states") > 3000, "joint_states: {}", count("/joint_states"));
    assert!(count("/diagnostics") >= 30, "diagnostics: {}", count("/diagnostics"));
    assert!(count("/pendulum/commands") >= 100, "group commands: {}", count("/pendulum/commands"));
    assert_eq!(count("/joint_trajectory"), 1);
    // contact_markers at their rate (30 Hz, wall clock): DELETEALL first, then the points
    assert!(count("/contact_markers") >= 30, "contact_markers: {}", count("/contact_markers"));
    let mk = bag.messages_on(bag.topic_index("/contact_markers").unwrap()).next().unwrap();
    let contact_sim::bag::msgs::Msg::MarkerArray(mk) = &mk.msg else { panic!("{mk:?}") };
    assert_eq!((mk.markers[0].action, mk.markers[1].ns.as_str(), mk.markers[1].header.frame_id.as_str()), (3, "contact_points", "odom"));
    // the latched messages: robot_description (the URDF) and tf_static (the welded base)
    assert_eq!((count("/robot_description"), count("/tf_static")), (1, 1));
    let urdf = std::fs::read_to_string(repo().join("urdf/pendulum.urdf")).unwrap();
    let desc = bag.messages_on(bag.topic_index("/robot_description").unwrap()).next().unwrap();
    assert_eq!(desc.msg, contact_sim::bag::msgs::Msg::String(contact_sim::bag::msgs::StringMsg { data: urdf }));
    let st = bag.messages_on(bag.topic_index("/tf_static").unwrap()).next().unwrap();
    let contact_sim::bag::msgs::Msg::TFMessage(st) = &st.msg else { panic!("{st:?}") };
    assert_eq!((st.transforms[0].child_frame_id.as_str(), st.transforms[0].translation), ("pivot_base", [0.0, 0.0, 2.0]));
    // the recorder's drop count is in /diagnostics (and so in the bag)
    let diag = bag.messages_on(bag.topic_index("/diagnostics").unwrap()).last().unwrap();
    let contact_sim::bag::msgs::Msg::DiagnosticArray(da) = &diag.msg else { panic!("{diag:?}") };
    assert!(da.status.iter().flat_map(|s| &s.values).any(|kv| kv.key == "bag_messages_dropped"), "{da:?}");
    // rosbags reads it
    let script = "import sys\nfrom pathlib import Path\nfrom rosbags.rosbag2 import Reader\nfrom rosbags.typesys import Stores, get_typestore\nts = get_typestore(Stores.ROS2_JAZZY)\nn = 0\nwith Reader(Path(sys.argv[1])) as r:\n    for c, t, raw in r.messages():\n        m = ts.deserialize_cdr(raw, c.msgtype)\n        if c.topic == '/joint_states':\n            n += 1\n        if c.topic == '/tf_static':\n            print('TF', m.transforms[0].child_frame_id, m.transforms[0].transform.translation.z)\n        if c.topic == '/robot_description':\n            print('RD', len(m.data.encode()))\n        if c.topic == '/contact_markers':\n            mk = m.markers[1].ns\nprint('JS', n)\nprint('MK', mk)\n";
    let out = Command::new(python()).args(["-c", script]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let urdf_len = std::fs::read_to_string(repo().join("urdf/pendulum.urdf")).unwrap().len();
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, vec![format!("JS {}", count("/joint_states")), "MK contact_points".to_string(), format!("RD {urdf_len}"), "TF pivot_base 2.0".to_string()], "rosbags decodes every message, tf_static, robot_description and contact_markers included");
    // replay the recorded commands headless and compare with what the node did
    let scene = contact_sim::config::load_scene(&repo().join("tests/data/ros_pendulum_position.yaml")).unwrap();
    let sim_dir = dir.with_extension("replayed");
    let _ = std::fs::remove_dir_all(&sim_dir);
    let cfg = contact_sim::bag::replay::ReplayConfig { initial_state: true, ..Default::default() };
    let rep = contact_sim::bag::replay::replay(&bag, &scene, &cfg, &sim_dir).unwrap();
    assert!(rep.commands_applied >= 100 && rep.trajectories == 1, "{rep:?}");
    let sim = contact_sim::bag::read_bag(&sim_dir).unwrap();
    let (r, _) = contact_sim::compare::compare(&sim, &bag, &Default::default());
    let p = r.joints[0].position.unwrap();
    eprintln!("node vs replay: offset {:.1} ms, position RMSE {:.4} rad, max {:.4} rad", r.alignment.offset_s * 1e3, p.rmse, p.max_abs);
    assert!(r.alignment.offset_s.abs() < 0.05, "{:?}", r.alignment);
    assert!(p.rmse < 0.02 && p.correlation.unwrap() > 0.99, "{p:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&sim_dir);
}

/// `ros2 launch` killed hard (SIGKILL, no chance to stop its children) must not leave the node
/// running orphaned, still publishing and recording: the node asks for SIGTERM on its parent's
/// death and shuts down.
#[test]
fn the_node_exits_when_its_parent_dies() {
    use std::io::BufRead;
    let _g = lock();
    let d = domain();
    let node = env!("CARGO_BIN_EXE_contact_sim_node");
    let scene = repo().join("tests/data/ros_pendulum_position.yaml");
    // a parent shell that starts the node in the background, prints its pid and waits
    let script = format!("'{node}' --scene '{}' >/dev/null 2>&1 & echo $!; wait", scene.display());
    let mut parent = Command::new("sh").arg("-c").arg(script).env("ROS_DOMAIN_ID", &d).stdout(Stdio::piped()).spawn().expect("sh");
    let mut line = String::new();
    std::io::BufReader::new(parent.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let pid: i32 = line.trim().parse().expect("node pid");
    // running = exists and not a zombie (an orphan's zombie may wait for a reaper that never comes)
    let running = |pid: i32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().map(|rest| !rest.trim_start().starts_with('Z')).unwrap_or(false),
        Err(_) => false,
    };
    std::thread::sleep(Duration::from_secs(3));
    assert!(running(pid), "the node did not start");
    parent.kill().unwrap(); // SIGKILL: the shell cannot forward anything
    parent.wait().unwrap();
    let t0 = Instant::now();
    while running(pid) && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let still = running(pid);
    if still {
        // SAFETY: plain kill of the child we started, to not leak it
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!still, "the node outlived its parent by 15 s");
}

/// `use_sim_time:=true` with the realtime time mode gets a warning: the stamps stay on the wall
/// clock and no /clock is published.
#[test]
fn use_sim_time_in_realtime_mode_is_warned_about() {
    let _g = lock();
    let d = domain();
    let node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["use_sim_time:=true"], &d);
    assert!(node.wait_log("use_sim_time is true but time_mode is realtime", Duration::from_secs(30)), "{}", node.log());
}

/// `robot_description` is latched (transient local): a subscriber that joins long after the
/// node published it gets the URDF, byte for byte; `tf_static` has the fixed base where the scene
/// welds it (odom → pivot_base at z = 2 m), and no `tf` publisher exists without a floating base.
#[test]
fn robot_description_and_tf_static_reach_a_late_subscriber() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &[], &d);
    let r = peer(&mut node, "description", &d);
    let urdf = std::fs::read_to_string(repo().join("urdf/pendulum.urdf")).unwrap();
    assert_eq!(r["urdf"].as_str().unwrap(), urdf, "robot_description is the scene's URDF");
    assert_eq!(f(&r, "description_publishers"), 1.0);
    assert_eq!(f(&r, "tf_publishers"), 0.0, "no floating base: no tf publisher");
    let st = r["static"].as_array().unwrap();
    assert_eq!(st.len(), 1, "{st:?}");
    let t = &st[0];
    assert_eq!((t[0].as_str().unwrap(), t[1].as_str().unwrap()), ("odom", "pivot_base"));
    let v: Vec<f64> = (2..9).map(|k| t[k].as_f64().unwrap()).collect();
    assert_eq!(v, vec![0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0], "base welded at (0, 0, 2), unrotated");
}

/// The default scene (floating quadruped, arm welded at (0, 1.2, 0)): `tf` carries odom → the
/// quadruped's root link with exactly the pose `odom` has at the same stamp, every `tf` stamp is
/// a `joint_states` stamp, `tf_static` has the arm's base, each robot has its
/// `<robot>/robot_description` and the joint states name exactly the URDFs' movable joints.
#[test]
fn tf_follows_odom_and_joint_states_for_a_floating_base() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("config/default.yaml", &["time_mode:=sim_time", "real_time_factor:=1.0", "publish_rate_hz:=100.0", "contact_markers_rate_hz:=0.0"], &d);
    let r = peer(&mut node, "tf", &d);
    let desc = r["descriptions"].as_object().unwrap();
    let mut topics: Vec<&str> = desc.keys().map(|s| s.as_str()).collect();
    topics.sort();
    assert_eq!(topics, vec!["/arm7/robot_description", "/quadruped/robot_description"]);
    assert_eq!(desc["/quadruped/robot_description"]["root_link"], serde_json::json!(["base"]));
    assert_eq!(desc["/arm7/robot_description"]["root_link"], serde_json::json!(["arm_base"]));
    assert_eq!(r["tf_frames"], serde_json::json!([["odom", "base"]]), "tf: the floating base only");
    assert_eq!(r["odom_frames"], serde_json::json!([["odom", "base"]]));
    assert!(f(&r, "matched") >= 100.0, "tf and odom with equal stamps: {}", f(&r, "matched"));
    assert_eq!(f(&r, "max_abs_diff"), 0.0, "tf is the odom pose");
    assert_eq!(f(&r, "tf_stamps_in_joint_states"), f(&r, "tf_count"), "every tf stamp is a joint_states stamp");
    let z = f(&r, "base_z");
    assert!(z > 0.2 && z < 0.6, "the quadruped stands: base at z = {z} m");
    let st = r["static"].as_array().unwrap();
    assert_eq!(st.len(), 1);
    assert_eq!((st[0][0].as_str().unwrap(), st[0][1].as_str().unwrap()), ("odom", "arm_base"));
    assert_eq!((st[0][2].as_f64().unwrap(), st[0][3].as_f64().unwrap(), st[0][4].as_f64().unwrap()), (0.0, 1.2, 0.0));
    let mut names: Vec<String> = r["joint_names"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    let mut movable: Vec<String> = desc.values().flat_map(|d| d["movable_joints"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string())).collect();
    names.sort();
    movable.sort();
    assert_eq!(names, movable, "joint_states names the URDFs' movable joints");
}

/// Two simulators side by side in one domain, namespaces `/sim_a` and `/sim_b`: every topic,
/// service and latched message sits in its namespace, nothing on `/joint_states`, and an effort
/// sent to `/sim_b` moves only sim_b's pendulum.
#[test]
fn two_namespaced_nodes_run_side_by_side_without_crosstalk() {
    let _g = lock();
    let d = domain();
    let params = ["watchdog_timeout_s:=0.0", "publish_rate_hz:=200.0"];
    let _a = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &[&params[..], &["__ns:=/sim_a"]].concat(), &d);
    let mut b = NodeProc::start("tests/data/ros_pendulum_effort.yaml", &[&params[..], &["__ns:=/sim_b"]].concat(), &d);
    let r = peer(&mut b, "namespaces", &d);
    assert!(f(&r, "q_b_max") > 0.05, "sim_b moved: {}", f(&r, "q_b_max"));
    assert!(f(&r, "q_a_max") < 1e-9, "sim_a stayed at rest: {}", f(&r, "q_a_max"));
    assert_eq!(f(&r, "root_joint_states_publishers"), 0.0);
    assert_eq!((f(&r, "a_publishers"), f(&r, "b_publishers")), (1.0, 1.0));
    let urdf = std::fs::read_to_string(repo().join("urdf/pendulum.urdf")).unwrap();
    assert_eq!(r["desc_a"].as_str().unwrap(), urdf);
    assert_eq!(r["desc_b"].as_str().unwrap(), urdf);
    assert_eq!(r["static_a"].as_array().unwrap().len(), 1);
    let topics: Vec<&str> = r["topics"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for ns in ["/sim_a", "/sim_b"] {
        for t in ["joint_states", "diagnostics", "robot_description", "tf_static", "joint_commands", "pendulum/commands"] {
            let name = format!("{ns}/{t}");
            assert!(topics.contains(&name.as_str()), "{name} in {topics:?}");
        }
    }
    for (t, n) in r["root_publishers"].as_object().unwrap() {
        assert_eq!(n.as_f64().unwrap(), 0.0, "no publisher on {t}");
    }
    let services: Vec<&str> = r["services"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for s in ["/sim_a/contact_sim_node/reset", "/sim_b/contact_sim_node/step", "/sim_a/contact_sim_node/describe_parameters"] {
        assert!(services.contains(&s), "{s} in {services:?}");
    }
}

/// Logging and parameters as an rclcpp node: the start-up line reaches `/rosout` (INFO, logger
/// `contact_sim_node`), an accepted change is announced on `/parameter_events` (a refused one is
/// not) and logged, and `describe_parameters` gives read-only flags, ranges and choices.
#[test]
fn rosout_parameter_events_and_descriptors() {
    let _g = lock();
    let d = domain();
    let mut node = NodeProc::start("tests/data/ros_pendulum_position.yaml", &["watchdog_timeout_s:=0.0"], &d);
    let r = peer(&mut node, "rosout_params", &d);
    let line = r["startup_line"].as_str().unwrap();
    assert!(line.contains("scene 'ros_pendulum_position'") && line.contains("1 joints"), "{line}");
    assert_eq!(f(&r, "startup_level"), 20.0, "INFO");
    assert_eq!(r["set"][0], true, "{}", r["set"]);
    assert_eq!(r["refused"][0], false, "{}", r["refused"]);
    assert_eq!(r["event_node"], "/contact_sim_node");
    assert_eq!(f(&r, "event_value"), 250.0);
    assert_eq!(f(&r, "event_type"), 3.0, "PARAMETER_DOUBLE");
    assert_eq!(f(&r, "changes_for_refused"), 0.0, "a refused change is not announced");
    let ds = &r["descriptors"];
    assert_eq!(ds["time_mode"]["read_only"], true);
    assert_eq!(ds["time_mode"]["constraints"], "one of: realtime, sim_time, lockstep");
    assert_eq!(ds["publish_rate_hz"]["read_only"], false);
    assert_eq!(ds["publish_rate_hz"]["fp_range"], serde_json::json!([[0.1, 100000.0]]));
    assert!(ds["publish_rate_hz"]["description"].as_str().unwrap().contains("Hz"));
    assert_eq!(ds["rt_priority"]["int_range"], serde_json::json!([[1, 99]]));
    assert_eq!(ds["watchdog_timeout_s"]["constraints"], ">= 0");
}
