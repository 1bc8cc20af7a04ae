//! `contact_sim`: headless runs, benchmarks and model inspection, no ROS involved.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use contact_sim::config::{self, Scene};
use contact_sim::contact::{Solver, SolverConfig};
use contact_sim::report::{self, RunStats};
use contact_sim::sim::Simulation;
use contact_sim::{dynamics, kinematics};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(name = "contact_sim", version, about = "Contact-dynamics simulator for robots: headless runs, benchmarks, model inspection")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene headless and print a summary.
    Run {
        /// Scene file (YAML). Default: the embedded default scene (config/default.yaml).
        scene: Option<PathBuf>,
        /// Simulated duration (s); default: the scene's duration_s.
        #[arg(long, allow_hyphen_values = true)]
        duration: Option<f64>,
        /// Contact solver kind, overriding the scene (one of: pgs).
        #[arg(long)]
        solver: Option<String>,
        /// Write the summary as JSON to this file.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// No progress line.
        #[arg(long)]
        quiet: bool,
        /// Write a time series CSV: every F/T sensor (ideal and emulated, sensor frame) and the
        /// contact wrench of each `--wrench-bodies` body (world axes, torque about its origin).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Links or objects whose net contact wrench goes into the CSV (comma separated);
        /// default: the scene's `contact_wrench_links`.
        #[arg(long, value_delimiter = ',')]
        wrench_bodies: Vec<String>,
        /// Write every N-th step to the CSV.
        #[arg(long, default_value_t = 1)]
        csv_every: u64,
        /// Record a rosbag2 bag (MCAP storage) in this new directory: the topics the node
        /// publishes (joint states, odometry, F/T and contact wrenches, diagnostics, clock) and the
        /// scripted commands (joint_commands). Ctrl-C / SIGTERM stop the run and close the bag.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Publish rate of the recorded topics (Hz, simulation time).
        #[arg(long, default_value_t = 1000.0)]
        record_rate: f64,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Replay a (hardware) bag's recorded commands into a scene and record the simulated
    /// response, in the hardware bag's time base.
    Replay {
        /// The bag whose commands are replayed (directory or .mcap).
        hw_bag: PathBuf,
        /// Scene (YAML).
        scene: PathBuf,
        /// Output bag directory (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// Replay settings (YAML: topics, command groups, joint_map, initial_state, rate_hz,
        /// duration_s; see `bag::replay::ReplayConfig`).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Joint name mapping `hw_name=sim_name` (comma separated; adds to the config's).
        #[arg(long, value_delimiter = ',')]
        joint_map: Vec<String>,
        /// Start from the first recorded joint state (and odometry) instead of the scene's.
        #[arg(long)]
        initial_state: bool,
        /// JointState command topics (comma separated; default /joint_commands).
        #[arg(long, value_delimiter = ',')]
        command_topics: Vec<String>,
        /// Rate of the recorded response (Hz); default: the hardware joint-state rate.
        #[arg(long)]
        rate: Option<f64>,
        /// Commands beyond joint limits: none (applied as recorded), reject or clamp (as the
        /// node would).
        #[arg(long)]
        limit_policy: Option<String>,
    },
    /// Compare a simulated bag with a hardware bag: time offset, per-joint and per-wrench
    /// errors, contact events. Prints a table; writes JSON; with --report an HTML page.
    Compare {
        /// The simulated bag.
        sim_bag: PathBuf,
        /// The hardware (reference) bag.
        hw_bag: PathBuf,
        /// Write index.html (plots) and compare.json into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Write the JSON here (`-`: standard output). Default: compare.json in the --report
        /// directory, else ./compare.json.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Joint name mapping `hw_name=sim_name` (comma separated).
        #[arg(long, value_delimiter = ',')]
        joint_map: Vec<String>,
        /// JointState topic compared.
        #[arg(long, default_value = "/joint_states")]
        joint_states_topic: String,
        /// Largest time offset searched (s).
        #[arg(long, default_value_t = 1.0)]
        max_lag: f64,
        /// Time base: auto, absolute or relative.
        #[arg(long, default_value = "auto")]
        time_base: String,
        /// Contact force threshold for onset/loss events (N).
        #[arg(long, default_value_t = 1.0)]
        contact_threshold: f64,
    },
    /// Inspect a URDF: DOF, joints, masses, limits; with a state, M(q), h(q,v) and RNEA torques.
    /// With --check: a sanity report of a URDF or of every robot of a scene.
    Model {
        /// URDF file (with --check: a URDF or a scene YAML).
        urdf: PathBuf,
        /// Give the robot a floating base (adds 6 DOF).
        #[arg(long)]
        floating: bool,
        /// Joint positions, one per movable joint in the order listed (rad or m), comma separated
        /// ('' for a robot without movable joints).
        #[arg(long, allow_hyphen_values = true, value_parser = parse_floats)]
        q: Option<Floats>,
        /// Joint velocities (rad/s or m/s), comma separated.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_floats)]
        v: Option<Floats>,
        /// Joint accelerations (rad/s² or m/s²) for inverse dynamics, comma separated.
        #[arg(long, allow_hyphen_values = true, value_parser = parse_floats)]
        a: Option<Floats>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Check the URDF (or every robot of a scene): load errors and warnings per class,
        /// triangle inequality, inertia vs. collision shape, mass and posture report. Exit code
        /// 1 when a file fails to load.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Time the step on scenes: mean, p50, p99, max µs per step; the solver call alone per step
    /// and per contact; single-contact solves (bisection); contacts, iterations.
    Bench {
        /// Scene files. Default: the quadruped standing and the 5-box stack.
        scenes: Vec<PathBuf>,
        /// Timed steps per scene and solver.
        #[arg(long, default_value_t = 5000)]
        steps: usize,
        /// Untimed steps first (settling, warm caches).
        #[arg(long, default_value_t = 500)]
        warmup: usize,
        /// Solver kinds to compare (comma separated); default: the scene's solver.
        #[arg(long, value_delimiter = ',')]
        solver: Option<Vec<String>>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Instead of scenes: the V-FPI vs PGS sweep over deformable-sheet sizes (issue 7),
        /// ~1 k → 30 k DOF at the paper's 10 ms step (PGS up to `--pgs-max-dof`).
        #[arg(long)]
        dof_sweep: bool,
        /// Largest DOF count the sweep runs PGS on (its dense Delassus matrix grows as n²).
        #[arg(long, default_value_t = 12000)]
        pgs_max_dof: usize,
        /// V-FPI threads for the sweep.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
}

/// URDF loading options shared by `run` and `model`.
#[derive(clap::Args)]
struct LoadArgs {
    /// Link inertias that violate the triangle inequality: strict (refuse), warn (keep, warn
    /// once per link), balance (nearest valid inertia). Overrides the scene's `inertia_check`;
    /// default warn.
    #[arg(long, value_parser = |s: &str| s.parse::<config::InertiaCheck>())]
    inertia_check: Option<config::InertiaCheck>,
    /// Where `package://NAME/...` URIs point: NAME=DIR (one package) or DIR (a directory of
    /// packages). Repeatable; searched before the scene's package_paths and ROS_PACKAGE_PATH.
    #[arg(long)]
    package_path: Vec<String>,
}

impl LoadArgs {
    fn options(&self) -> Result<config::LoadOptions> {
        let mut o = config::LoadOptions { inertia_check: self.inertia_check, ..Default::default() };
        for p in &self.package_path {
            o.add_package_path(p).map_err(anyhow::Error::msg)?;
        }
        Ok(o)
    }
}

/// A comma-separated list of numbers; the empty string is the empty list.
#[derive(Clone, Debug)]
struct Floats(Vec<f64>);

fn parse_floats(s: &str) -> Result<Floats, String> {
    contact_sim::model_check::parse_floats(s).map(Floats)
}

/// `run`'s loading options (set once in `main`).
static LOAD_OPTIONS: std::sync::OnceLock<config::LoadOptions> = std::sync::OnceLock::new();

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { scene, duration, solver, summary, quiet, csv, wrench_bodies, csv_every, record, record_rate, load } => match load.options() {
            Ok(o) => {
                let _ = LOAD_OPTIONS.set(o);
                run(scene, duration, solver, summary, quiet, CsvOptions { path: csv, bodies: wrench_bodies, every: csv_every }, record.map(|d| (d, record_rate)))
            }
            Err(e) => Err(e),
        },
        Command::Replay { hw_bag, scene, out, config, joint_map, initial_state, command_topics, rate, limit_policy } => {
            replay(&hw_bag, &scene, &out, config, joint_map, initial_state, command_topics, rate, limit_policy)
        }
        Command::Compare { sim_bag, hw_bag, report, json, joint_map, joint_states_topic, max_lag, time_base, contact_threshold } => {
            compare(&sim_bag, &hw_bag, report, json, joint_map, joint_states_topic, max_lag, &time_base, contact_threshold)
        }
        Command::Model { urdf, check: true, load, json, .. } => load.options().and_then(|o| contact_sim::model_check::check_cli(&urdf, &o, json).map_err(Into::into)),
        Command::Model { urdf, floating, q, v, a, json, load, .. } => {
            load.options().and_then(|o| model(&urdf, floating, q.map(|x| x.0), v.map(|x| x.0), a.map(|x| x.0), json, &o))
        }
        Command::Bench { dof_sweep: true, steps, pgs_max_dof, threads, json, .. } => dof_sweep(steps.min(50), pgs_max_dof, threads, json),
        Command::Bench { scenes, steps, warmup, solver, json, .. } => bench(scenes, steps, warmup, solver, json),
    };
    if let Err(e) = result {
        // one line: the chain of causes
        let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
        eprintln!("error: {}", msg.join(": "));
        std::process::exit(2);
    }
}

fn repo_path(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
    }
}

fn solver_from_arg(kind: &str) -> Result<SolverConfig> {
    SolverConfig::from_kind(kind).with_context(|| format!("--solver: unknown solver '{kind}' (known: {})", SolverConfig::KINDS.join(", ")))
}

fn load(scene: &Path) -> Result<Scene> {
    let scene = config::load_scene_with(scene, LOAD_OPTIONS.get_or_init(Default::default))?;
    for w in &scene.warnings {
        eprintln!("warning: {w}");
    }
    Ok(scene)
}

#[derive(serde::Serialize)]
struct RunSummary {
    scene: String,
    file: String,
    solver: String,
    timestep_s: f64,
    sim_time_s: f64,
    wall_time_s: f64,
    real_time_factor: f64,
    dof: usize,
    stats: RunStats,
    bodies: Vec<report::BodyPoseReport>,
    joint_positions: std::collections::BTreeMap<String, f64>,
}

struct CsvOptions {
    path: Option<PathBuf>,
    bodies: Vec<String>,
    every: u64,
}

/// Writes the sensor / contact-wrench time series.
struct CsvWriter {
    out: std::io::BufWriter<std::fs::File>,
    bodies: Vec<usize>,
    every: u64,
}

impl CsvWriter {
    fn new(opts: &CsvOptions, sim: &Simulation) -> Result<Option<Self>> {
        let Some(path) = &opts.path else { return Ok(None) };
        if opts.every == 0 {
            bail!("--csv-every: must be ≥ 1");
        }
        // default: the scene's contact_wrench_links
        let mut bodies = if opts.bodies.is_empty() { sim.model.contact_wrench_bodies.clone() } else { vec![] };
        for name in &opts.bodies {
            let b = sim.model.body_id(name).with_context(|| format!("--wrench-bodies: no link or object named '{name}'"))?;
            bodies.push(b);
        }
        let f = std::fs::File::create(path).with_context(|| format!("--csv: cannot create {}", path.display()))?;
        let mut out = std::io::BufWriter::new(f);
        let axes = ["fx", "fy", "fz", "tx", "ty", "tz"];
        let mut header = vec!["time_s".to_string()];
        for s in &sim.model.sensors {
            for a in axes {
                header.push(format!("{}.ideal.{a}", s.name));
            }
            for a in axes {
                header.push(format!("{}.{a}", s.name));
            }
            header.push(format!("{}.saturated", s.name));
        }
        for &b in &bodies {
            for a in axes {
                header.push(format!("{}.contact.{a}", sim.model.bodies[b].name));
            }
        }
        writeln!(out, "{}", header.join(","))?;
        Ok(Some(CsvWriter { out, bodies, every: opts.every }))
    }

    fn row(&mut self, sim: &Simulation) -> Result<()> {
        if sim.state.step_count % self.every != 0 {
            return Ok(());
        }
        let mut row = vec![format!("{:.6}", sim.state.time_s)];
        for s in &sim.state.sensors {
            row.extend(s.ideal.iter().map(|x| format!("{x:.6}")));
            row.extend(s.measured.iter().map(|x| format!("{x:.6}")));
            row.push((s.saturated as u8).to_string());
        }
        for &b in &self.bodies {
            let w = contact_sim::sensors::body_contact_wrench(&sim.model, &sim.workspace, b);
            row.extend(w.world.iter().map(|x| format!("{x:.6}")));
        }
        writeln!(self.out, "{}", row.join(","))?;
        Ok(())
    }
}

fn run(scene: Option<PathBuf>, duration: Option<f64>, solver: Option<String>, summary: Option<PathBuf>, quiet: bool, csv: CsvOptions, record: Option<(PathBuf, f64)>) -> Result<()> {
    let path = scene.unwrap_or_else(|| repo_path("config/default.yaml"));
    let scene = load(&path)?;
    let solver_cfg = match &solver {
        Some(k) => Some(solver_from_arg(k)?),
        None => None,
    };
    let duration = duration.unwrap_or(scene.duration_s);
    if !(duration > 0.0 && duration.is_finite()) {
        bail!("--duration: must be positive, got {duration}");
    }
    let mut sim = Simulation::from_scene(&scene, solver_cfg.as_ref());
    let mut csv_writer = CsvWriter::new(&csv, &sim)?;
    let steps = (duration / sim.model.timestep_s).round() as u64;
    let mut recorder = match &record {
        Some((dir, rate)) => Some(RunRecorder::start(dir, *rate, &sim).with_context(|| "--record")?),
        None => None,
    };
    if let Some(r) = recorder.as_mut() {
        r.tick(&sim, None, 0.0);
    }
    let stop = install_stop_handler();
    let mut stats = RunStats::default();
    let start = Instant::now();
    let mut last_print = Instant::now();
    let interactive = !quiet;
    for i in 0..steps {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("\ninterrupted at t = {:.3} s: closing", sim.state.time_s);
            break;
        }
        let t_before = sim.state.time_s;
        let r = sim.step();
        stats.add(&r);
        if let Some(rec) = recorder.as_mut() {
            rec.tick(&sim, Some((t_before, &r)), sim.state.time_s / start.elapsed().as_secs_f64().max(1e-9));
        }
        if let Some(w) = csv_writer.as_mut() {
            w.row(&sim)?;
        }
        if interactive && last_print.elapsed().as_secs_f64() > 0.25 {
            last_print = Instant::now();
            let wall = start.elapsed().as_secs_f64();
            eprint!(
                "\r  t = {:7.3} s  ({:5.1} %)  contacts {:3}  iterations {:4}  RTF {:6.2}   ",
                sim.state.time_s,
                100.0 * (i + 1) as f64 / steps as f64,
                r.contacts,
                r.solve.iterations,
                sim.state.time_s / wall.max(1e-9)
            );
            let _ = std::io::stderr().flush();
        }
    }
    if interactive {
        eprintln!();
    }
    let wall = start.elapsed().as_secs_f64();
    kinematics::forward_kinematics(&sim.model, &sim.state.q, &sim.state.v, &mut sim.workspace);
    let joint_positions = sim
        .model
        .bodies
        .iter()
        .filter(|b| b.joint.kind.nv() == 1)
        .map(|b| (b.joint.name.clone(), sim.state.q[b.joint.q_index]))
        .collect();
    let s = RunSummary {
        scene: scene.name.clone(),
        file: path.display().to_string(),
        solver: sim.workspace.solver.kind().to_string(),
        timestep_s: sim.model.timestep_s,
        sim_time_s: sim.state.time_s,
        wall_time_s: wall,
        real_time_factor: sim.state.time_s / wall.max(1e-12),
        dof: sim.model.nv + 3 * sim.model.fem_nodes(),
        stats,
        bodies: report::body_poses(&sim.model, &sim.workspace),
        joint_positions,
    };
    println!("scene      {} ({})", s.scene, s.file);
    println!("solver     {}   dt {} s   DOF {}", s.solver, s.timestep_s, s.dof);
    println!("sim time   {:.3} s in {:.3} s wall  (real-time factor {:.1})", s.sim_time_s, s.wall_time_s, s.real_time_factor);
    println!(
        "contacts   mean {:.1}  max {}   solver iterations mean {:.1}  max {}   unconverged steps {}",
        s.stats.contacts_mean, s.stats.contacts_max, s.stats.iterations_mean, s.stats.iterations_max, s.stats.unconverged_steps
    );
    println!("max penetration {:.2} mm   dropped contacts {}   failed steps {}", 1e3 * s.stats.max_penetration_m, s.stats.dropped_contacts, s.stats.failed_steps);
    println!("final poses (world):");
    for b in &s.bodies {
        println!(
            "  {:<16} p = [{:8.4} {:8.4} {:8.4}] m   rpy = [{:7.3} {:7.3} {:7.3}] rad   |v| = {:.4} m/s",
            b.name,
            b.position_m[0],
            b.position_m[1],
            b.position_m[2],
            b.rpy_rad[0],
            b.rpy_rad[1],
            b.rpy_rad[2],
            (b.linear_velocity_m_s.iter().map(|x| x * x).sum::<f64>()).sqrt()
        );
    }
    if let Some(rec) = recorder {
        let dir = record.as_ref().unwrap().0.clone();
        let summary = rec.finish().with_context(|| "--record")?;
        println!("bag written to {} ({} messages on {} topics, {} dropped)", dir.display(), summary.bag.messages, summary.bag.topics.len(), summary.dropped);
    }
    if let Some(mut w) = csv_writer {
        w.out.flush()?;
        println!("time series written to {}", csv.path.as_ref().unwrap().display());
    }
    if let Some(out) = summary {
        let text = serde_json::to_string_pretty(&s)?;
        std::fs::write(&out, text).with_context(|| format!("--summary: cannot write {}", out.display()))?;
        println!("summary written to {}", out.display());
    }
    if s.stats.failed_steps > 0 {
        eprintln!("warning: {} steps failed (singular mass matrix or non-finite state)", s.stats.failed_steps);
    }
    Ok(())
}

fn model(urdf: &Path, floating: bool, q: Option<Vec<f64>>, v: Option<Vec<f64>>, a: Option<Vec<f64>>, json: bool, opts: &config::LoadOptions) -> Result<()> {
    let (model, warnings) = config::load_urdf_model(urdf, floating, opts)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let summary = report::model_summary(&model);
    let names = model.actuated_joint_names();
    let n1 = names.len();
    let base = if floating { 6 } else { 0 };
    let check = |x: &Option<Vec<f64>>, what: &str| -> Result<()> {
        if let Some(x) = x {
            if x.len() != n1 {
                bail!("--{what}: expected {n1} values (one per movable joint: {}), got {}", names.join(", "), x.len());
            }
            if let Some(i) = x.iter().position(|v| !v.is_finite()) {
                bail!("--{what}: value for joint '{}' is not finite", names[i]);
            }
        }
        Ok(())
    };
    check(&q, "q")?;
    check(&v, "v")?;
    check(&a, "a")?;
    let mut dyn_out = None;
    if q.is_some() || v.is_some() || a.is_some() {
        let mut state = contact_sim::state::State::new(&model);
        let mut ws = contact_sim::workspace::Workspace::new(&model, &SolverConfig::default());
        let qa = q.unwrap_or(vec![0.0; n1]);
        let va = v.unwrap_or(vec![0.0; n1]);
        let aa = a.unwrap_or(vec![0.0; n1]);
        let mut acc = vec![0.0; model.nv];
        for (i, body) in model.bodies.iter().filter(|b| b.joint.kind.nv() == 1).enumerate() {
            state.q[body.joint.q_index] = qa[i];
            state.v[body.joint.v_index] = va[i];
            acc[body.joint.v_index] = aa[i];
        }
        kinematics::forward_kinematics(&model, &state.q, &state.v, &mut ws);
        dynamics::update_body_inertias(&model, &mut ws);
        dynamics::mass_matrix(&model, &mut ws);
        dynamics::bias_forces(&model, &mut ws, &state.v);
        let mut tau = vec![0.0; model.nv];
        dynamics::inverse_dynamics(&model, &mut ws, &state.v, &acc, &mut tau);
        let m: Vec<Vec<f64>> = (0..model.nv).map(|i| (0..model.nv).map(|j| ws.mass_matrix.get(i, j)).collect()).collect();
        dyn_out = Some((m, ws.bias.as_slice().to_vec(), tau));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            model: &'a report::ModelSummary,
            dof_names: &'a [String],
            mass_matrix: Option<&'a Vec<Vec<f64>>>,
            bias_forces: Option<&'a Vec<f64>>,
            inverse_dynamics: Option<&'a Vec<f64>>,
        }
        let o = Out {
            model: &summary,
            dof_names: &model.dof_names,
            mass_matrix: dyn_out.as_ref().map(|d| &d.0),
            bias_forces: dyn_out.as_ref().map(|d| &d.1),
            inverse_dynamics: dyn_out.as_ref().map(|d| &d.2),
        };
        println!("{}", serde_json::to_string_pretty(&o)?);
        return Ok(());
    }
    println!("{}: {} links, {} joints, DOF {} (nq {}), total mass {:.3} kg", urdf.display(), summary.links.len(), summary.joints.len(), summary.nv, summary.nq, summary.total_mass_kg);
    println!("\nlinks{:<21} {:>9} {:>28} {:>36} {:>4}", "", "mass kg", "com (link frame) m", "principal inertia kg·m²", "geom");
    for l in &summary.links {
        println!(
            "  {:<24} {:>9.4} [{:8.4} {:8.4} {:8.4}] [{:10.3e} {:10.3e} {:10.3e}] {:>4}",
            l.name, l.mass_kg, l.com_m[0], l.com_m[1], l.com_m[2], l.principal_inertia_kg_m2[0], l.principal_inertia_kg_m2[1], l.principal_inertia_kg_m2[2], l.collision_shapes
        );
    }
    println!("\njoints{:<20} {:<10} {:<22} {:>20} {:>9} {:>9} {:>8} {:>8}", "", "type", "parent", "limits", "vel lim", "effort", "damping", "friction");
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
    for j in &summary.joints {
        let lim = j.limits.map(|(l, u)| format!("[{l:.3}, {u:.3}]")).unwrap_or_else(|| "-".into());
        println!(
            "  {:<24} {:<10} {:<22} {:>20} {:>9} {:>9} {:>8.3} {:>8.3}{}",
            j.name,
            format!("{:?}", j.kind).to_lowercase(),
            j.parent,
            lim,
            opt(j.velocity_limit),
            opt(j.effort_limit),
            j.damping,
            j.friction,
            j.mimics.as_ref().map(|m| format!("   mimic: {m}")).unwrap_or_default()
        );
    }
    if let Some((m, h, tau)) = dyn_out {
        let w = model.dof_names.iter().map(|n| n.len()).max().unwrap_or(4).max(4);
        println!(
            "\nmass matrix M(q) (kg·m², kg·m, kg; columns numbered as the rows){}",
            if base > 0 { "; the first 6 DOF are the floating base [v_body; ω_body]" } else { "" }
        );
        print!("{:>w$}    ", "");
        for j in 0..model.nv {
            print!(" {:>9}", format!("[{j}]"));
        }
        println!();
        for (i, row) in m.iter().enumerate() {
            print!("{:>w$} [{i:>2}]", model.dof_names[i]);
            for x in row {
                print!(" {:>9.4}", x);
            }
            println!();
        }
        println!("\n{:>w$} {:>14} {:>14}", "DOF", "h(q,v)", "τ = M a + h");
        for i in 0..model.nv {
            println!("{:>w$} {:>14.6} {:>14.6}", model.dof_names[i], h[i], tau[i]);
        }
    } else {
        println!("\n(give --q/--v/--a to print M(q), h(q,v) and inverse-dynamics torques)");
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct BenchRow {
    scene: String,
    solver: String,
    steps: usize,
    dof: usize,
    /// Whole step (kinematics, collision, dynamics, assembly, solve, integration), µs.
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    contacts_mean: f64,
    iterations_mean: f64,
    iterations_max: u32,
    unconverged_steps: u64,
    /// The solver call alone (the step's problem re-solved from the same warm start), over the
    /// steps with constraint rows, µs.
    solve_steps: usize,
    solve_mean_us: f64,
    solve_p50_us: f64,
    solve_p99_us: f64,
    /// The solver call divided by the step's contacts, over the steps with contacts, µs.
    solve_per_contact_mean_us: f64,
    solve_per_contact_p99_us: f64,
    /// Bisection only: one single-contact solve (the unit of work of a sweep, the paper's
    /// Table I), sampled on every contact of every step given the other contacts' impulses, µs.
    single_contact_samples: usize,
    single_contact_mean_us: Option<f64>,
    single_contact_p99_us: Option<f64>,
    /// The same over the samples that slide (the bisection case).
    single_contact_slip_fraction: Option<f64>,
    single_contact_slip_mean_us: Option<f64>,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((p * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        f64::NAN
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Timings of the solver alone, measured outside the timed step.
#[derive(Default)]
struct SolveTimes {
    per_step: Vec<f64>,
    per_contact: Vec<f64>,
    /// The bisection's single-contact problems: prepared block, local free velocity, μ, sliding.
    samples: Vec<(contact_sim::contact::SingleContact, [f64; 3], f64, bool)>,
    mismatches: usize,
}

/// `dst = src` without allocating (the derived `clone_from` reallocates).
fn copy_state(dst: &mut contact_sim::state::State, src: &contact_sim::state::State) {
    dst.time_s = src.time_s;
    dst.step_count = src.step_count;
    dst.q.copy_from_slice(&src.q);
    dst.v.copy_from_slice(&src.v);
    dst.warm_contacts.clear();
    dst.warm_contacts.extend_from_slice(&src.warm_contacts);
    dst.warm_joint_rows.copy_from_slice(&src.warm_joint_rows);
}

/// Re-solves the last step's problem from the warm start the step's solver received (rebuilt
/// from `before`, the state before the step) with `solver`, a second solver of the same
/// configuration, and times that call; for the bisection, also times single-contact solves.
fn time_solve(sim: &mut Simulation, before: &contact_sim::state::State, solver: &mut Solver, config: &SolverConfig, out: &mut SolveTimes) {
    use contact_sim::contact::{ContactSolver, SingleContact};
    use std::hint::black_box;
    let (model, ws) = (&sim.model, &mut sim.workspace);
    let (nc, nj) = (ws.contacts.len(), ws.joint_rows.len());
    let m = 3 * nc + nj;
    if m == 0 {
        return;
    }
    let solution: Vec<f64> = ws.impulse[..m].to_vec();
    contact_sim::step::warm_start(model, before, ws);
    let (p, impulse, _) = ws.split_for_solve();
    let t0 = Instant::now();
    solver.solve(black_box(&p), impulse);
    let us = t0.elapsed().as_secs_f64() * 1e6;
    out.per_step.push(us);
    if nc > 0 {
        out.per_contact.push(us / nc as f64);
    }
    if impulse[..] != solution[..] {
        out.mismatches += 1;
        impulse.copy_from_slice(&solution);
    }
    if let SolverConfig::Bisection(prm) = config {
        for c in 0..nc {
            let single = SingleContact::new(&p, c, prm);
            let local = SingleContact::local_free_velocity(&p, c, &solution);
            let mu = p.friction[c];
            out.samples.push((single, local, mu, single.case(local, mu) == 2));
        }
    }
}

/// Times the single-contact solves of `samples` (the bisection's local problems of every
/// contact of every step, given the others' impulses): (mean µs over all, mean µs over the
/// sliding ones, each solve's µs). The means time whole passes over the samples in their order,
/// so that the branch predictor cannot learn one problem's bisection path (the best of three
/// passes); each solve is also timed alone, less the cost of reading the clock, for the
/// percentiles.
fn time_single_contacts(samples: &[(contact_sim::contact::SingleContact, [f64; 3], f64, bool)], prm: &contact_sim::contact::BisectionParams) -> (f64, f64, Vec<f64>) {
    use std::hint::black_box;
    let pass = |only_slip: bool| -> f64 {
        let n = samples.iter().filter(|s| s.3 || !only_slip).count();
        if n == 0 {
            return f64::NAN;
        }
        (0..3)
            .map(|_| {
                let t0 = Instant::now();
                for (single, local, mu, slip) in samples {
                    if *slip || !only_slip {
                        black_box(single.solve(black_box(*local), black_box(*mu), prm));
                    }
                }
                t0.elapsed().as_secs_f64() * 1e6 / n as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let (all, slip) = (pass(false), pass(true));
    let mut clock: Vec<f64> = (0..1000)
        .map(|_| {
            let t0 = Instant::now();
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    clock.sort_by(f64::total_cmp);
    let overhead = clock[clock.len() / 2];
    let each = samples
        .iter()
        .map(|(single, local, mu, _)| {
            let t0 = Instant::now();
            black_box(single.solve(black_box(*local), black_box(*mu), prm));
            (t0.elapsed().as_secs_f64() * 1e6 - overhead).max(0.0)
        })
        .collect();
    (all, slip, each)
}

fn bench(scenes: Vec<PathBuf>, steps: usize, warmup: usize, solvers: Option<Vec<String>>, json: bool) -> Result<()> {
    let scenes = if scenes.is_empty() {
        vec![repo_path("config/examples/quadruped_stand.yaml"), repo_path("config/examples/box_stack.yaml")]
    } else {
        scenes
    };
    if steps == 0 {
        bail!("--steps: must be ≥ 1");
    }
    let mut rows = vec![];
    for path in &scenes {
        let scene = load(path)?;
        let kinds: Vec<Option<SolverConfig>> = match &solvers {
            None => vec![None],
            Some(k) => k.iter().map(|k| solver_from_arg(k).map(Some)).collect::<Result<_>>()?,
        };
        for solver in kinds {
            let config = solver.clone().unwrap_or_else(|| scene.solver.clone());
            let mut sim = Simulation::from_scene(&scene, Some(&config));
            let mut resolver = Solver::new(&config, &sim.model);
            for _ in 0..warmup {
                sim.step();
            }
            let mut before = sim.state.clone();
            let mut times = Vec::with_capacity(steps);
            let mut solve = SolveTimes::default();
            let mut stats = RunStats::default();
            for _ in 0..steps {
                copy_state(&mut before, &sim.state);
                let t0 = Instant::now();
                let r = sim.step();
                times.push(t0.elapsed().as_secs_f64() * 1e6);
                stats.add(&r);
                if !(r.singular_mass_matrix || r.non_finite_state) {
                    time_solve(&mut sim, &before, &mut resolver, &config, &mut solve);
                }
            }
            if solve.mismatches > 0 {
                eprintln!("warning: {}: {} re-solves differed from the step's solution", scene.name, solve.mismatches);
            }
            let mean_us = mean(&times);
            times.sort_by(f64::total_cmp);
            let (single_mean, slip_mean, mut single) = match &config {
                SolverConfig::Bisection(prm) if !solve.samples.is_empty() => time_single_contacts(&solve.samples, prm),
                _ => (f64::NAN, f64::NAN, vec![]),
            };
            let n_single = solve.samples.len();
            let n_slip = solve.samples.iter().filter(|s| s.3).count();
            let slip_fraction = n_slip as f64 / n_single.max(1) as f64;
            for v in [&mut solve.per_step, &mut solve.per_contact, &mut single] {
                v.sort_by(f64::total_cmp);
            }
            let bisection = matches!(config, SolverConfig::Bisection(_));
            rows.push(BenchRow {
                scene: scene.name.clone(),
                solver: sim.workspace.solver.kind().into(),
                steps,
                dof: sim.model.nv + 3 * sim.model.fem_nodes(),
                mean_us,
                p50_us: percentile(&times, 0.5),
                p99_us: percentile(&times, 0.99),
                max_us: *times.last().unwrap(),
                contacts_mean: stats.contacts_mean,
                iterations_mean: stats.iterations_mean,
                iterations_max: stats.iterations_max,
                unconverged_steps: stats.unconverged_steps,
                solve_steps: solve.per_step.len(),
                solve_mean_us: mean(&solve.per_step),
                solve_p50_us: percentile(&solve.per_step, 0.5),
                solve_p99_us: percentile(&solve.per_step, 0.99),
                solve_per_contact_mean_us: mean(&solve.per_contact),
                solve_per_contact_p99_us: percentile(&solve.per_contact, 0.99),
                single_contact_samples: n_single,
                single_contact_mean_us: (bisection && n_single > 0).then_some(single_mean),
                single_contact_p99_us: (bisection && n_single > 0).then(|| percentile(&single, 0.99)),
                single_contact_slip_fraction: (bisection && n_single > 0).then_some(slip_fraction),
                single_contact_slip_mean_us: (bisection && n_slip > 0).then_some(slip_mean),
            });
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        // NaN (JSON null) and None print as "-"
        let f = |x: f64, prec: usize| if x.is_finite() { format!("{x:.prec$}") } else { "-".into() };
        let o = |x: Option<f64>, prec: usize| x.map(|v| f(v, prec)).unwrap_or_else(|| "-".into());
        println!(
            "{:<18} {:<9} {:>3} {:>6} │ {:>8} {:>8} {:>8} {:>8} │ {:>8} {:>8} {:>8} {:>8} │ {:>8} {:>8} {:>5} {:>8} │ {:>8} {:>6} {:>6}",
            "scene", "solver", "DOF", "steps", "step µs", "p50", "p99", "max", "solve µs", "p99", "/contact", "p99", "1-contact", "p99", "slip", "slip µs", "contacts", "iter", "unconv"
        );
        for r in &rows {
            println!(
                "{:<18} {:<9} {:>3} {:>6} │ {:>8.2} {:>8.2} {:>8.2} {:>8.1} │ {:>8} {:>8} {:>8} {:>8} │ {:>9} {:>8} {:>5} {:>8} │ {:>8.2} {:>6.1} {:>6}",
                r.scene,
                r.solver,
                r.dof,
                r.steps,
                r.mean_us,
                r.p50_us,
                r.p99_us,
                r.max_us,
                f(r.solve_mean_us, 2),
                f(r.solve_p99_us, 2),
                f(r.solve_per_contact_mean_us, 3),
                f(r.solve_per_contact_p99_us, 3),
                o(r.single_contact_mean_us, 3),
                o(r.single_contact_p99_us, 3),
                r.single_contact_slip_fraction.map(|x| format!("{:.0}%", 100.0 * x)).unwrap_or_else(|| "-".into()),
                o(r.single_contact_slip_mean_us, 3),
                r.contacts_mean,
                r.iterations_mean,
                r.unconverged_steps
            );
        }
        println!(
            "step: the whole step; solve: the solver call alone (the step's problem re-solved from the same warm start), per step and per contact; \
             1-contact: one single-contact solve of the bisection (slip: share of sliding samples, and their mean)"
        );
    }
    Ok(())
}

// ---- recording, replay, compare ---------------------------------------------------------------

use contact_sim::bag::{self, run::RunRecorder};

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// SIGINT / SIGTERM set a flag the run loop polls, so that a recording closes its bag.
fn install_stop_handler() -> &'static std::sync::atomic::AtomicBool {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_stop_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop_signal as *const () as libc::sighandler_t);
    }
    &STOP
}

fn parse_joint_map(items: &[String]) -> Result<std::collections::BTreeMap<String, String>> {
    let mut m = std::collections::BTreeMap::new();
    for it in items {
        let Some((a, b)) = it.split_once('=') else { bail!("--joint-map: '{it}' is not hw_name=sim_name") };
        m.insert(a.trim().to_string(), b.trim().to_string());
    }
    Ok(m)
}

fn read_bag_warn(path: &Path) -> Result<bag::Bag> {
    let b = bag::read_bag(path)?;
    for w in &b.warnings {
        eprintln!("warning: {w}");
    }
    Ok(b)
}

#[allow(clippy::too_many_arguments)]
fn replay(hw_bag: &Path, scene: &Path, out: &Path, config: Option<PathBuf>, joint_map: Vec<String>, initial_state: bool, command_topics: Vec<String>, rate: Option<f64>, limit_policy: Option<String>) -> Result<()> {
    let mut cfg: bag::replay::ReplayConfig = match &config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("--config: cannot read {}", p.display()))?;
            serde_yaml::from_str(&text).with_context(|| format!("{}", p.display()))?
        }
        None => Default::default(),
    };
    cfg.joint_map.extend(parse_joint_map(&joint_map)?);
    cfg.initial_state |= initial_state;
    if !command_topics.is_empty() {
        cfg.joint_command_topics = command_topics;
    }
    if rate.is_some() {
        cfg.rate_hz = rate;
    }
    if let Some(p) = limit_policy {
        cfg.limit_policy = p;
    }
    let scene = load(scene)?;
    let hw = read_bag_warn(hw_bag)?;
    let start = Instant::now();
    let r = bag::replay::replay(&hw, &scene, &cfg, out)?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "replayed {} commands and {} trajectories from {} into '{}' over {:.3} s ({:.2} s wall){}",
        r.commands_applied,
        r.trajectories,
        hw_bag.display(),
        scene.name,
        r.sim_duration_s,
        start.elapsed().as_secs_f64(),
        if r.initial_state_from_bag { ", initial state from the bag" } else { "" }
    );
    println!("simulated response written to {} ({} messages at {:.0} Hz)", out.display(), r.recording.bag.messages, r.rate_hz);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn compare(sim_bag: &Path, hw_bag: &Path, report: Option<PathBuf>, json: Option<PathBuf>, joint_map: Vec<String>, joint_states_topic: String, max_lag: f64, time_base: &str, contact_threshold: f64) -> Result<()> {
    let time_base = match time_base {
        "auto" => contact_sim::compare::TimeBase::Auto,
        "absolute" => contact_sim::compare::TimeBase::Absolute,
        "relative" => contact_sim::compare::TimeBase::Relative,
        other => bail!("--time-base: '{other}' is not one of auto, absolute, relative"),
    };
    if !(max_lag >= 0.0 && max_lag.is_finite()) {
        bail!("--max-lag: must be ≥ 0, got {max_lag}");
    }
    let opts = contact_sim::compare::CompareOptions { joint_states_topic, max_lag_s: max_lag, time_base, contact_threshold_n: contact_threshold, joint_map: parse_joint_map(&joint_map)? };
    let sim = read_bag_warn(sim_bag)?;
    let hw = read_bag_warn(hw_bag)?;
    let (rep, plot) = contact_sim::compare::compare(&sim, &hw, &opts);
    for w in rep.warnings.iter().filter(|w| !sim.warnings.contains(w) && !hw.warnings.contains(w)) {
        eprintln!("warning: {w}");
    }
    print!("{}", contact_sim::compare::format_table(&rep));
    if rep.joints.is_empty() && rep.wrenches.is_empty() {
        bail!("nothing to compare: no joint or wrench topic in both bags");
    }
    let json_text = serde_json::to_string_pretty(&rep)?;
    if let Some(dir) = &report {
        let page = contact_sim::compare::report::write_html(dir, &rep, &plot).map_err(|e| anyhow::anyhow!("--report: {e}"))?;
        println!("report written to {} (and compare.json)", page.display());
    }
    match (json, &report) {
        (Some(p), _) if p.as_os_str() == "-" => println!("{json_text}"),
        (Some(p), _) => {
            std::fs::write(&p, &json_text).with_context(|| format!("--json: cannot write {}", p.display()))?;
            println!("JSON written to {}", p.display());
        }
        (None, Some(_)) => {}
        (None, None) => {
            let p = PathBuf::from("compare.json");
            std::fs::write(&p, &json_text).with_context(|| format!("cannot write {}", p.display()))?;
            println!("JSON written to {}", p.display());
        }
    }
    Ok(())
}

/// One row of the DOF sweep.
#[derive(serde::Serialize)]
struct SweepRow {
    /// Sheet cells per side.
    cells: usize,
    dof: usize,
    contacts: usize,
    /// V-FPI: mean wall time of the whole step (ms) and of the solve's iterations.
    vfpi_step_ms: f64,
    vfpi_iterations: f64,
    /// PGS on the last step's problem: sparse Cholesky of A, Delassus J A⁻¹ Jᵀ, PGS sweeps (ms).
    pgs_factor_ms: Option<f64>,
    pgs_delassus_ms: Option<f64>,
    pgs_solve_ms: Option<f64>,
    pgs_iterations: Option<u32>,
    /// max |λ_vfpi − λ_pgs| / max |λ_pgs|
    pgs_vs_vfpi: Option<f64>,
}

/// V-FPI vs PGS on a soft sheet (E = 100 kPa, 10 mm thick, 12.5 mm cells, one layer) sliding
/// down a 20° incline with μ = 0.3 (tan 20° = 0.36 > μ): every bottom node is in sliding
/// contact, so each step's solution differs from the last. Timed: `steps` steps after 10
/// settling steps.
fn dof_sweep(steps: usize, pgs_max_dof: usize, threads: usize, json: bool) -> Result<()> {
    use contact_sim::contact::{ContactProblem, ContactSolver, PgsParams, PgsSolver};
    use nalgebra_sparse::{factorization::CscCholesky, CscMatrix};
    let dir = std::env::temp_dir().join(format!("contact_sim_sweep_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut rows = vec![];
    for cells in [12usize, 18, 26, 36, 50, 70] {
        let size = 0.0125 * cells as f64;
        let mut mesh = contact_sim::fem::TetMesh::box_grid([size, size, 0.01], [cells, cells, 1]);
        mesh.translate(contact_sim::math::Vec3::new(-size / 2.0, -size / 2.0, 0.0));
        // node order with the thin z direction fastest, then x, then y: a banded A, so that the
        // (non-reordering) sparse Cholesky of the PGS baseline fills in only within the band
        let mut order: Vec<usize> = (0..mesh.nodes.len()).collect();
        let key = |p: &contact_sim::math::Vec3| ((p.y / 0.0125).round() as i64, (p.x / 0.0125).round() as i64, (p.z * 1e4).round() as i64);
        order.sort_by_key(|&i| key(&mesh.nodes[i]));
        let mut new_index = vec![0; order.len()];
        for (k, &i) in order.iter().enumerate() {
            new_index[i] = k;
        }
        mesh.nodes = order.iter().map(|&i| mesh.nodes[i]).collect();
        for t in &mut mesh.tets {
            for v in t.iter_mut() {
                *v = new_index[*v];
            }
        }
        let path = dir.join(format!("sheet_{cells}.msh"));
        config::write_gmsh41(&mesh, &path)?;
        let yaml = format!(
            "timestep_s: 0.01\nground: {{incline_deg: 20}}\nsolver: {{kind: vfpi, tolerance: 1.0e-5, residual_tolerance: 1.0e-3, max_iterations: 3000, threads: {threads}}}\ndeformables:\n  - name: sheet\n    mesh: {}\n    rpy: [0, 0.3490658503988659, 0]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.35, rayleigh_stiffness_s: 0.005}}\n    friction: 0.3\n",
            path.display()
        );
        let scene = config::load_scene_str(&yaml, &dir.join("sweep.yaml"))?;
        let mut sim = Simulation::from_scene(&scene, None);
        for _ in 0..10 {
            sim.step();
        }
        let t0 = Instant::now();
        let mut its = 0u64;
        for _ in 0..steps {
            its += sim.step().solve.iterations as u64;
        }
        let vfpi_ms = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
        let f = sim.workspace.fem.as_ref().unwrap();
        let n = f.system.dim();
        let nc = f.contacts.len();
        let mut row = SweepRow {
            cells,
            dof: n,
            contacts: nc,
            vfpi_step_ms: vfpi_ms,
            vfpi_iterations: its as f64 / steps as f64,
            pgs_factor_ms: None,
            pgs_delassus_ms: None,
            pgs_solve_ms: None,
            pgs_iterations: None,
            pgs_vs_vfpi: None,
        };
        if n <= pgs_max_dof && nc > 0 {
            // A is symmetric: its CSR arrays are also its CSC arrays
            let a = &f.system.a;
            let csc = CscMatrix::try_from_csc_data(n, n, a.row_offsets().to_vec(), a.col_indices().to_vec(), a.values().to_vec()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
            let t = Instant::now();
            let chol = CscCholesky::factor(&csc).map_err(|e| anyhow::anyhow!("Cholesky: {e:?}"))?;
            row.pgs_factor_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let jt = f.dense_contact_jacobian_t(n);
            let ainv_jt = chol.solve(&jt);
            let g = jt.transpose() * &ainv_jt;
            let v_free = chol.solve(&nalgebra::DMatrix::from_column_slice(n, 1, &f.system.b));
            let mut u = jt.transpose() * v_free;
            row.pgs_delassus_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            let (dt, erp, slop) = (sim.model.timestep_s, sim.model.contact.erp, sim.model.contact.slop_m);
            for (ci, c) in f.contacts.iter().enumerate() {
                u[3 * ci] += if c.distance >= 0.0 { c.distance / dt } else { -erp * (-c.distance - slop).max(0.0) / dt };
            }
            let mu = vec![0.3; nc];
            let gt = g.transpose();
            let p = ContactProblem { num_contacts: nc, num_joint_rows: 0, friction: &mu, row_lower: &[], row_upper: &[], delassus: gt.as_slice(), free_velocity: u.as_slice(), primal: None };
            // same accuracy target as V-FPI's: impulses to ~1e-3 of the largest
            let scale = f.contacts.iter().map(|c| c.impulse[0].abs()).fold(0.0, f64::max);
            let mut pgs = PgsSolver::new(PgsParams { max_iterations: 10_000, tolerance: 1e-4 * scale, relaxation: 1.0 }, nc);
            let mut lam = vec![0.0; 3 * nc];
            let t = Instant::now();
            let st = pgs.solve(&p, &mut lam);
            row.pgs_solve_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            row.pgs_iterations = Some(st.iterations);
            let vf: Vec<f64> = f.contacts.iter().flat_map(|c| c.impulse).collect();
            let lmax = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            row.pgs_vs_vfpi = Some(vf.iter().zip(&lam).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / lmax);
        }
        if !json {
            let opt = |x: Option<f64>| x.map(|v| format!("{v:10.1}")).unwrap_or_else(|| format!("{:>10}", "-"));
            if rows.is_empty() {
                println!("{:>6} {:>8} {:>8} {:>12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9}", "cells", "DOF", "contacts", "vfpi ms/st", "iters", "chol ms", "delass ms", "pgs ms", "pgs total", "Δλ rel");
            }
            let total = match (row.pgs_factor_ms, row.pgs_delassus_ms, row.pgs_solve_ms) {
                (Some(a), Some(b), Some(c)) => Some(a + b + c),
                _ => None,
            };
            println!(
                "{:>6} {:>8} {:>8} {:>12.2} {:>8.1} {} {} {} {} {:>9}",
                row.cells, row.dof, row.contacts, row.vfpi_step_ms, row.vfpi_iterations, opt(row.pgs_factor_ms), opt(row.pgs_delassus_ms), opt(row.pgs_solve_ms), opt(total),
                row.pgs_vs_vfpi.map(|x| format!("{x:.1e}")).unwrap_or_else(|| "-".into())
            );
        }
        rows.push(row);
    }
    // growth exponents: slope of log(time) vs log(DOF) between the smallest and largest runs
    let slope = |pts: &[(f64, f64)]| if pts.len() >= 2 { (pts[pts.len() - 1].1 / pts[0].1).ln() / (pts[pts.len() - 1].0 / pts[0].0).ln() } else { f64::NAN };
    let v: Vec<(f64, f64)> = rows.iter().map(|r| (r.dof as f64, r.vfpi_step_ms)).collect();
    let p: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((r.dof as f64, r.pgs_factor_ms? + r.pgs_delassus_ms? + r.pgs_solve_ms?))).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"rows": rows, "vfpi_exponent": slope(&v), "pgs_exponent": slope(&p)}))?);
    } else {
        println!("growth exponent (time ∝ DOF^k, first to last row): V-FPI k = {:.2}, PGS (Cholesky + Delassus + sweeps) k = {:.2}", slope(&v), slope(&p));
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
