//! `contact_sim`: headless runs, benchmarks and model inspection, no ROS involved.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use contact_sim::config::{self, load_scene, RobotConfig, Scene};
use contact_sim::contact::SolverConfig;
use contact_sim::model::ModelBuilder;
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
    },
    /// Inspect a URDF: DOF, joints, masses, limits; with a state, M(q), h(q,v) and RNEA torques.
    Model {
        /// URDF file.
        urdf: PathBuf,
        /// Give the robot a floating base (adds 6 DOF).
        #[arg(long)]
        floating: bool,
        /// Joint positions, one per movable joint in the order listed (rad or m), comma separated.
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        q: Option<Vec<f64>>,
        /// Joint velocities (rad/s or m/s), comma separated.
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        v: Option<Vec<f64>>,
        /// Joint accelerations (rad/s² or m/s²) for inverse dynamics, comma separated.
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        a: Option<Vec<f64>>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Time the step on scenes: mean, p50, p99, max µs per step, contacts, iterations.
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
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { scene, duration, solver, summary, quiet } => run(scene, duration, solver, summary, quiet),
        Command::Model { urdf, floating, q, v, a, json } => model(&urdf, floating, q, v, a, json),
        Command::Bench { scenes, steps, warmup, solver, json } => bench(scenes, steps, warmup, solver, json),
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
    Ok(load_scene(scene)?)
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

fn run(scene: Option<PathBuf>, duration: Option<f64>, solver: Option<String>, summary: Option<PathBuf>, quiet: bool) -> Result<()> {
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
    let steps = (duration / sim.model.timestep_s).round() as u64;
    let mut stats = RunStats::default();
    let start = Instant::now();
    let mut last_print = Instant::now();
    let interactive = !quiet;
    for i in 0..steps {
        let r = sim.step();
        stats.add(&r);
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
        dof: sim.model.nv,
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

fn model(urdf: &Path, floating: bool, q: Option<Vec<f64>>, v: Option<Vec<f64>>, a: Option<Vec<f64>>, json: bool) -> Result<()> {
    let rc: RobotConfig = serde_yaml::from_str(&format!("urdf: '{}'\nbase: {{mode: {}}}", urdf.display(), if floating { "floating" } else { "fixed" }))?;
    let spec = config::load_robot(urdf, &rc, &Default::default(), Path::new("."))?;
    let mut b = ModelBuilder::new(urdf.display().to_string());
    b.add_robot(spec)?;
    let model = b.finalize()?;
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
        let m: Vec<Vec<f64>> = (0..model.nv).map(|i| (0..model.nv).map(|j| ws.mass_matrix[(i, j)]).collect()).collect();
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
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    contacts_mean: f64,
    iterations_mean: f64,
    iterations_max: u32,
    unconverged_steps: u64,
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
            let mut sim = Simulation::from_scene(&scene, solver.as_ref());
            for _ in 0..warmup {
                sim.step();
            }
            let mut times = Vec::with_capacity(steps);
            let mut stats = RunStats::default();
            for _ in 0..steps {
                let t0 = Instant::now();
                let r = sim.step();
                times.push(t0.elapsed().as_secs_f64() * 1e6);
                stats.add(&r);
            }
            let mean = times.iter().sum::<f64>() / times.len() as f64;
            times.sort_by(f64::total_cmp);
            let pct = |p: f64| times[((p * (times.len() - 1) as f64).round() as usize).min(times.len() - 1)];
            rows.push(BenchRow {
                scene: scene.name.clone(),
                solver: sim.workspace.solver.kind().into(),
                steps,
                dof: sim.model.nv,
                mean_us: mean,
                p50_us: pct(0.5),
                p99_us: pct(0.99),
                max_us: *times.last().unwrap(),
                contacts_mean: stats.contacts_mean,
                iterations_mean: stats.iterations_mean,
                iterations_max: stats.iterations_max,
                unconverged_steps: stats.unconverged_steps,
            });
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!(
            "{:<22} {:<8} {:>4} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "scene", "solver", "DOF", "steps", "mean µs", "p50 µs", "p99 µs", "max µs", "contacts", "iter", "unconv"
        );
        for r in &rows {
            println!(
                "{:<22} {:<8} {:>4} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>9.1} {:>9.1} {:>8}",
                r.scene, r.solver, r.dof, r.steps, r.mean_us, r.p50_us, r.p99_us, r.max_us, r.contacts_mean, r.iterations_mean, r.unconverged_steps
            );
        }
    }
    Ok(())
}
