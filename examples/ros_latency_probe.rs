//! Command → state round-trip latency of `contact_sim_node` through DDS (feature `ros`).
//!
//! Publishes `sensor_msgs/JointState` effort commands with unique values on `joint_commands` for
//! one joint and times how long until `/joint_states` reports exactly that value as the joint's
//! measured effort. For an exact match the joint must pass the commanded effort through: an
//! effort-mode joint, or a position-mode joint whose gains are set to zero
//! (`-p gains.<joint>.kp:=0.0 -p gains.<joint>.kd:=0.0`). Send times get a random phase of up to
//! 1 ms so that they sample every position in the node's cycle. At the end it prints the round-trip
//! percentiles and the node's last `/diagnostics` (loop jitter, overruns).
//!
//! ```text
//! contact_sim_node --scene config/default.yaml --ros-args -p gains.finger_left_joint.kp:=0.0 -p gains.finger_left_joint.kd:=0.0 &
//! cargo run --release --features ros --example ros_latency_probe -- --joint finger_left_joint --seconds 60 --rate-hz 100
//! ```

#[cfg(not(feature = "ros"))]
fn main() {
    eprintln!("ros_latency_probe needs the `ros` feature: cargo run --features ros --example ros_latency_probe");
}

#[cfg(feature = "ros")]
fn main() {
    if let Err(e) = probe::run() {
        eprintln!("ros_latency_probe: {e}");
        std::process::exit(1);
    }
}

#[cfg(feature = "ros")]
mod probe {
    use futures::executor::LocalPool;
    use futures::task::LocalSpawnExt;
    use futures::{future, StreamExt};
    use r2r::diagnostic_msgs::msg::DiagnosticArray;
    use r2r::sensor_msgs::msg::JointState;
    use r2r::QosProfile;
    use std::collections::{BTreeMap, HashMap};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    struct Args {
        joint: String,
        seconds: f64,
        rate_hz: f64,
    }

    fn args() -> Result<Args, String> {
        let mut a = Args { joint: "finger_left_joint".into(), seconds: 60.0, rate_hz: 100.0 };
        let v: Vec<String> = std::env::args().skip(1).take_while(|s| s != "--ros-args").collect();
        let mut i = 0;
        while i < v.len() {
            let val = v.get(i + 1).cloned().ok_or_else(|| format!("{} needs a value", v[i]))?;
            match v[i].as_str() {
                "--joint" => a.joint = val,
                "--seconds" => a.seconds = val.parse().map_err(|e| format!("--seconds: {e}"))?,
                "--rate-hz" => a.rate_hz = val.parse().map_err(|e| format!("--rate-hz: {e}"))?,
                other => return Err(format!("unknown argument {other}")),
            }
            i += 2;
        }
        Ok(a)
    }

    #[derive(Default)]
    struct Shared {
        pending: HashMap<i64, Instant>,
        rtt_us: Vec<f64>,
        states: u64,
        diag: BTreeMap<String, String>,
        joint_index: Option<usize>,
    }

    fn key(effort: f64) -> i64 {
        (effort * 1e6).round() as i64
    }

    pub fn run() -> Result<(), Box<dyn std::error::Error>> {
        let a = args()?;
        let ctx = r2r::Context::create()?;
        let mut node = r2r::Node::create(ctx, "contact_sim_latency_probe", "")?;
        let cmd = node.create_publisher::<JointState>("joint_commands", QosProfile::default())?;
        let states = node.subscribe::<JointState>("/joint_states", QosProfile::default())?;
        let diags = node.subscribe::<DiagnosticArray>("/diagnostics", QosProfile::default())?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let stop = Arc::new(AtomicBool::new(false));

        let spin = {
            let shared = shared.clone();
            let stop = stop.clone();
            let joint = a.joint.clone();
            std::thread::spawn(move || {
                let mut pool = LocalPool::new();
                let sp = pool.spawner();
                let s1 = shared.clone();
                sp.spawn_local(states.for_each(move |m: JointState| {
                    let now = Instant::now();
                    let mut s = s1.lock().unwrap();
                    s.states += 1;
                    if s.joint_index.is_none() {
                        s.joint_index = m.name.iter().position(|n| *n == joint);
                    }
                    if let Some(e) = s.joint_index.and_then(|i| m.effort.get(i)).copied() {
                        if let Some(t) = s.pending.remove(&key(e)) {
                            s.rtt_us.push(now.duration_since(t).as_secs_f64() * 1e6);
                        }
                    }
                    future::ready(())
                }))
                .unwrap();
                let s2 = shared.clone();
                sp.spawn_local(diags.for_each(move |m: DiagnosticArray| {
                    let mut s = s2.lock().unwrap();
                    for st in m.status {
                        for kv in st.values {
                            s.diag.insert(kv.key, kv.value);
                        }
                    }
                    future::ready(())
                }))
                .unwrap();
                while !stop.load(Ordering::Relaxed) {
                    node.spin_once(Duration::from_millis(2));
                    pool.run_until_stalled();
                }
            })
        };

        // discovery: wait for states that name the joint, then a little more for the reverse path
        let t0 = Instant::now();
        loop {
            if shared.lock().unwrap().joint_index.is_some() {
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                return Err(format!("no /joint_states naming '{}' within 30 s", a.joint).into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_secs(2));

        let period = Duration::from_secs_f64(1.0 / a.rate_hz);
        let end = Instant::now() + Duration::from_secs_f64(a.seconds);
        let mut next = Instant::now();
        let mut k: u64 = 0;
        let mut sent = 0u64;
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0x9e37_79b9_7f4a_7c15);
        while Instant::now() < end {
            k += 1;
            // unique small efforts 0.001 … 0.997 N (or N·m), alternating sign
            let e = 1e-3 * ((k % 997) + 1) as f64 * if k % 2 == 0 { 1.0 } else { -1.0 };
            let msg = JointState { name: vec![a.joint.clone()], effort: vec![e], ..Default::default() };
            {
                let mut s = shared.lock().unwrap();
                let now = Instant::now();
                s.pending.retain(|_, t| now.duration_since(*t) < Duration::from_secs(2));
                s.pending.insert(key(e), now);
            }
            cmd.publish(&msg)?;
            sent += 1;
            // random phase (0 … 1 ms) so that the commands do not lock to the node's 1 kHz cycle
            let phase = Duration::from_nanos(rand::Rng::random_range(&mut rng, 0..1_000_000));
            next += period;
            if let Some(d) = (next + phase).checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
        std::thread::sleep(Duration::from_millis(1500)); // last diagnostics
        stop.store(true, Ordering::Relaxed);
        let _ = spin.join();

        let s = shared.lock().unwrap();
        let mut r = s.rtt_us.clone();
        r.sort_by(|x, y| x.partial_cmp(y).unwrap());
        println!("round trip (command publish → /joint_states with the commanded effort), {} of {} commands matched:", r.len(), sent);
        println!("  p50 {:.0} us   p99 {:.0} us   max {:.0} us   mean {:.0} us", contact_sim::report::percentile(&r, 0.5), contact_sim::report::percentile(&r, 0.99), r.last().copied().unwrap_or(f64::NAN), r.iter().sum::<f64>() / r.len().max(1) as f64);
        println!("/joint_states received: {} ({:.0} Hz over the run)", s.states, s.states as f64 / (a.seconds + 3.5));
        println!("node /diagnostics (last):");
        for k in ["time_mode", "scheduling", "cycles", "steps", "period_mean_us", "jitter_p50_us", "jitter_p99_us", "jitter_max_us", "exec_mean_us", "exec_p99_us", "exec_max_us", "overruns", "skipped_deadlines", "real_time_factor", "samples_dropped", "commands_received", "commands_applied", "commands_rejected", "commands_dropped", "solver_iterations_max", "unconverged_steps"] {
            if let Some(v) = s.diag.get(k) {
                println!("  {k}: {v}");
            }
        }
        Ok(())
    }
}
