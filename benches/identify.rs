//! Wall time of `contact_sim identify` on the arm's synthetic problem
//! (tests/data/identify/arm_problem.json): the full problem (22 parameters: friction, damping
//! and armature of the seven arm joints and the command delay, a 10 s bag at 1 kHz) on the given
//! threads, and its growth with the bag's length and the number of parameters. Beside it, the
//! same problem fitted by MuJoCo's `mujoco.sysid` (scripts/sysid-peer, its JSON read from
//! `--peer`).
//!
//! ```text
//! cargo bench --bench identify -- [--threads 2] [--quick] [--out benches/results/14-identify.json]
//!     [--peer benches/results/sysid_peer.json] [--peer-out benches/results/15-identify-vs-mujoco.json] [--force]
//! ```
//! Writes the two tables' JSON for scripts/benchmarks-md (and refuses to replace them without
//! `--force`). `--quick`: 4 s and fewer rows (a smoke run).

#[path = "../tests/common/arm_problem.rs"]
mod arm_problem;

use arm_problem::ArmProblem;
use contact_sim::identify::synthetic::record_hardware_bag;
use contact_sim::identify::{identify, optimizer::Settings, IdentifyOptions, IdentifyResult};
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Args {
    threads: usize,
    quick: bool,
    out: PathBuf,
    peer: PathBuf,
    peer_out: PathBuf,
    force: bool,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        threads: 2,
        quick: false,
        out: root.join("benches/results/14-identify.json"),
        peer: root.join("benches/results/sysid_peer.json"),
        peer_out: root.join("benches/results/15-identify-vs-mujoco.json"),
        force: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--threads" => a.threads = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| die("--threads: give a number ≥ 1")),
            "--quick" => a.quick = true,
            "--force" => a.force = true,
            "--out" => a.out = it.next().map(PathBuf::from).unwrap_or_else(|| die("--out: give a file")),
            "--peer" => a.peer = it.next().map(PathBuf::from).unwrap_or_else(|| die("--peer: give a file")),
            "--peer-out" => a.peer_out = it.next().map(PathBuf::from).unwrap_or_else(|| die("--peer-out: give a file")),
            "--bench" => {}
            other => die(&format!("unknown option '{other}' (options: --threads N, --quick, --out FILE, --peer FILE, --peer-out FILE, --force)")),
        }
    }
    if a.threads == 0 {
        die("--threads: give a number ≥ 1");
    }
    for f in [&a.out, &a.peer_out] {
        if f.exists() && !a.force {
            die(&format!("{}: exists; pass --force to replace it", f.display()));
        }
    }
    a
}

fn die(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2)
}

/// One identification of the arm problem: the first `joints` arm joints' friction, damping and
/// armature (and the delay) from a bag of `duration_s`; the result and its wall time (s).
fn identify_arm(pb: &ArmProblem, work: &Path, duration_s: f64, joints: usize, threads: usize) -> (IdentifyResult, f64) {
    let dir = work.join(format!("{duration_s}s_{joints}j"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let truth = contact_sim::config::load_scene_str(&pb.scene("true", Some(duration_s)), &dir.join("true.yaml")).unwrap();
    let hw = dir.join("hw_bag");
    record_hardware_bag(&truth, duration_s, 1000.0, &pb.noise(), &hw).unwrap();
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, pb.scene("nominal", None)).unwrap();
    std::fs::write(dir.join("params.yaml"), pb.params(joints)).unwrap();
    let opts = IdentifyOptions {
        scene: nominal,
        load: Default::default(),
        bags: vec![hw],
        validate: vec![],
        params: dir.join("params.yaml"),
        out: dir.join("out"),
        replay: Default::default(),
        threads,
        settings: Settings { max_iterations: 30, ..Default::default() },
        force: true,
    };
    let start = Instant::now();
    let r = identify(&opts, &mut |_| {}).unwrap_or_else(|e| die(&e.to_string()));
    let wall = start.elapsed().as_secs_f64();
    eprintln!("{duration_s:>5} s bag, {:>2} parameters: {wall:.1} s, {} iterations, {} rollouts", r.parameters.len(), r.iterations, r.rollouts);
    (r, wall)
}

/// The true value of a parameter of the problem.
fn truth(pb: &ArmProblem, name: &str) -> f64 {
    if name == "commands/delay_s" {
        return 0.004;
    }
    let parts: Vec<&str> = name.split('/').collect();
    let i = pb.joints().iter().position(|j| j == parts[1]).unwrap();
    let key = match parts[2] {
        "friction" => "friction_nm",
        "damping" => "damping_nms_per_rad",
        _ => "armature_kg_m2",
    };
    pb.v(&["true", key])[i]
}

fn errors(pb: &ArmProblem, r: &IdentifyResult) -> (f64, f64) {
    let mut e: Vec<f64> = r.parameters.iter().map(|p| 100.0 * (p.value - truth(pb, &p.name)).abs() / truth(pb, &p.name)).collect();
    e.sort_by(f64::total_cmp);
    (e[e.len() / 2], e[e.len() - 1])
}

fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(str::trim).unwrap_or("unknown CPU").to_string();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    format!("{} × {model}, load {load}", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

fn now() -> String {
    let out = std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output().ok();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

fn commit() -> String {
    let out = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_else(|| "not recorded".into())
}

fn main() {
    let a = args();
    let pb = ArmProblem::load();
    let work = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-identify");
    let full = if a.quick { 4.0 } else { 10.0 };
    let lengths: &[f64] = if a.quick { &[2.0, 4.0] } else { &[2.5, 5.0, 10.0] };
    let counts: &[usize] = if a.quick { &[1, 7] } else { &[1, 2, 4, 7] };
    let mut rows = vec![];
    let mut full_run = None;
    for &d in lengths {
        let (r, wall) = identify_arm(&pb, &work, d, 7, a.threads);
        let (median, worst) = errors(&pb, &r);
        rows.push(vec![format!("{d} s"), r.parameters.len().to_string(), r.iterations.to_string(), r.rollouts.to_string(), format!("{wall:.1} s"), format!("{:.0} ms", 1e3 * wall / r.rollouts as f64), format!("{median:.2} % / {worst:.2} %")]);
        if d == full {
            full_run = Some((r, wall));
        }
    }
    let mid = lengths[lengths.len() / 2];
    for &j in counts.iter().filter(|&&j| j != 7) {
        let (r, wall) = identify_arm(&pb, &work, mid, j, a.threads);
        let (median, worst) = errors(&pb, &r);
        rows.push(vec![format!("{mid} s"), r.parameters.len().to_string(), r.iterations.to_string(), r.rollouts.to_string(), format!("{wall:.1} s"), format!("{:.0} ms", 1e3 * wall / r.rollouts as f64), format!("{median:.2} % / {worst:.2} %")]);
    }
    let command = format!("cargo bench --bench identify -- --threads {}{}", a.threads, if a.quick { " --quick" } else { "" });
    let table = serde_json::json!({
        "title": "System identification: the arm's 22 parameters from its bags (`contact_sim identify`)",
        "command": command,
        "date": now(),
        "commit": commit(),
        "cpu": cpu(),
        "columns": ["bag", "parameters", "iterations", "rollouts", "wall", "wall per rollout", "error median / worst"],
        "rows": rows,
        "notes": format!("The arm of tests/data/identify/arm_problem.json: friction, damping and armature of the first 1, 2, 4 or 7 arm joints and the command delay, from a synthetic bag at 1 kHz (noise σ 1e-4 rad, 2e-3 rad/s, 0.05 N·m; true delay 4 ms), {} rollout threads, wall time including the scene loads and the final uncertainty. A rollout replays the whole bag; its cost grows with the bag's length, and the rollouts per iteration with the parameters (one per parameter for the Jacobian, two trial steps).", a.threads),
    });
    std::fs::write(&a.out, serde_json::to_string_pretty(&table).unwrap() + "\n").unwrap_or_else(|e| die(&format!("{}: {e}", a.out.display())));
    eprintln!("wrote {}", a.out.display());

    // side by side with mujoco.sysid on the same problem
    let Some((r, wall)) = full_run else { return };
    let Ok(text) = std::fs::read_to_string(&a.peer) else {
        eprintln!("no {} (scripts/sysid-peer): no side-by-side table", a.peer.display());
        return;
    };
    let peer: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("{}: {e}", a.peer.display())));
    let peer_params = peer["parameters"].as_array().cloned().unwrap_or_default();
    let mut rows = vec![];
    for p in &r.parameters {
        let t = truth(&pb, &p.name);
        let theirs = peer_params.iter().find(|q| q["name"].as_str() == Some(&p.name)).and_then(|q| q["fitted"].as_f64());
        let pct = |x: f64| format!("{:.2} %", 100.0 * (x - t).abs() / t);
        rows.push(vec![
            format!("`{}`", p.name),
            format!("{t}"),
            format!("{:.5}", p.value),
            pct(p.value),
            theirs.map(|x| format!("{x:.5}")).unwrap_or("-".into()),
            theirs.map(pct).unwrap_or("-".into()),
        ]);
    }
    let peer_wall = peer["wall_s"].as_f64().unwrap_or(f64::NAN);
    let side = serde_json::json!({
        "title": "`contact_sim identify` and MuJoCo's `mujoco.sysid` on the same arm problem",
        "command": [command, peer["command"].as_str().unwrap_or("scripts/sysid-peer")],
        "date": format!("{} (ours); {} (MuJoCo)", now(), peer["date"].as_str().unwrap_or("?")),
        "commit": commit(),
        "cpu": format!("{} (ours); MuJoCo's run: {}", cpu(), peer["cpu"].as_str().unwrap_or("?")),
        "columns": ["parameter", "true", "ours", "ours error", "mujoco.sysid", "mujoco.sysid error"],
        "rows": rows,
        "notes": format!(
            "10 s bag at 1 kHz, 22 parameters, {} threads each. Wall time: **ours {wall:.1} s** ({} iterations, {} rollouts of the whole bag) against **mujoco.sysid {peer_wall:.1} s** ({} iterations, {} rollouts), ratio {:.2}. Each tool fits data made by its own simulator (the same excitation, true values and noise levels; MuJoCo's noise from numpy), so the errors measure each fit against its own noise, not one simulator against the other; the modelling differences are listed in sysid_peer.json's `notes_modelling`.",
            a.threads,
            r.iterations,
            r.rollouts,
            peer["iterations"].as_u64().unwrap_or(0),
            peer["rollouts"].as_u64().unwrap_or(0),
            wall / peer_wall
        ),
    });
    std::fs::write(&a.peer_out, serde_json::to_string_pretty(&side).unwrap() + "\n").unwrap_or_else(|e| die(&format!("{}: {e}", a.peer_out.display())));
    eprintln!("wrote {}", a.peer_out.display());
}
