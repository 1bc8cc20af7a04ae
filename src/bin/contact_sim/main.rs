//! `contact_sim`: headless runs, benchmarks and model inspection, no ROS involved. One file per
//! subcommand; this one holds the command line and what they share.

mod bench;
mod compare;
mod identify;
mod model;
mod outputs;
mod paired;
mod replay;
mod run;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use contact_sim::config::{self, Scene};
use contact_sim::contact::{ConstraintStage, Solver, SolverConfig, SolverKind, UnitProbe};
use contact_sim::report::{self, RunStats};
use contact_sim::sim::Simulation;
use contact_sim::bag;
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
        /// Contact method, overriding the scene's (the scene's parameters are kept when it
        /// already uses this method; otherwise the method's defaults).
        #[arg(long, value_enum)]
        solver: Option<SolverKind>,
        /// Write the summary as JSON to this file.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// No progress line.
        #[arg(long)]
        quiet: bool,
        /// Write a time series CSV: every F/T sensor (ideal and emulated, sensor frame), the
        /// contact wrench of each `--wrench-bodies` body (world axes, torque about its origin) and
        /// the world position of each `--pose-bodies` body's frame (m).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Links or objects whose net contact wrench goes into the CSV (comma separated);
        /// default: the scene's `contact_wrench_links`.
        #[arg(long, value_delimiter = ',')]
        wrench_bodies: Vec<String>,
        /// Links or objects whose frame's world position goes into the CSV (comma separated).
        #[arg(long, value_delimiter = ',')]
        pose_bodies: Vec<String>,
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
        /// What to do when a step fails (singular mass matrix, non-finite state): `stop` (exit
        /// status 3 naming the step), `reset` (initial state, go on) or `hold` (keep the last
        /// good state, go on). Default: the scene's `on_failure`, else `stop`.
        #[arg(long, value_parser = |s: &str| s.parse::<contact_sim::sim::FailurePolicy>())]
        on_failure: Option<contact_sim::sim::FailurePolicy>,
        /// Replace existing --summary or --csv files.
        #[arg(long)]
        force: bool,
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
    /// Fit the scene's physical parameters (joint friction, damping, armature, gains, masses,
    /// contact friction and stiffness, sensor bias, command delay) to hardware bags: replays
    /// each bag's commands as `replay` does and minimises the noise-weighted residuals of what
    /// `compare` compares. Writes result.json, identified.yaml and index.html into --out.
    Identify {
        /// Scene (YAML) with the nominal parameters.
        scene: PathBuf,
        /// A hardware bag to fit (repeatable).
        #[arg(long = "bag", required = true)]
        bags: Vec<PathBuf>,
        /// The parameters to fit (YAML: `parameters: [{name, min, max, initial?}]`; see
        /// docs/identification.md).
        #[arg(long)]
        params: PathBuf,
        /// Output directory (new, or one of an earlier run with --force).
        #[arg(long)]
        out: PathBuf,
        /// A held-out bag, replayed with the initial and the fitted parameters (repeatable).
        #[arg(long)]
        validate: Vec<PathBuf>,
        /// Worker threads for the rollouts (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Largest number of iterations.
        #[arg(long, default_value_t = 30)]
        max_iterations: usize,
        /// Joint name mapping `hw_name=sim_name` (comma separated).
        #[arg(long, value_delimiter = ',')]
        joint_map: Vec<String>,
        /// Replay settings (YAML, as `replay --config`).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Start each replay from the bag's first joint state (and odometry).
        #[arg(long)]
        initial_state: bool,
        /// Replace the outputs of an earlier run in --out.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        load: LoadArgs,
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
        /// Write the JSON here (`-`: standard output). With --report it also goes into the
        /// report directory as compare.json.
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
        /// Replace an existing --json file or report.
        #[arg(long)]
        force: bool,
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
        /// 2 when a file fails to load.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Time the step on scenes: mean, p50, p99, max µs per step; the solver call alone per step
    /// and per contact; the method's unit of work where it has one (e.g. single-contact
    /// solves); contacts, iterations.
    Bench {
        /// Scene files. Default: the quadruped standing and the 5-box stack.
        scenes: Vec<PathBuf>,
        /// Timed steps per scene and solver.
        #[arg(long, default_value_t = 5000)]
        steps: usize,
        /// Untimed steps first (settling, warm caches).
        #[arg(long, default_value_t = 500)]
        warmup: usize,
        /// Contact methods to compare (comma separated); default: the scene's. The scene's
        /// parameters are kept for the method it configures; others run with their defaults.
        #[arg(long, value_enum, value_delimiter = ',')]
        solver: Option<Vec<SolverKind>>,
        /// A second scene with the same model and another solver or solver parameters: each
        /// timed step of the first scene is also taken by the second from the same state and
        /// commands, and both are timed (one scene, no --solver). Runs that part ways on
        /// round-off otherwise compare different trajectories.
        #[arg(long, value_name = "SCENE")]
        paired_with: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    // Like other command-line tools, end quietly when the reader of stdout goes away
    // (`contact_sim bench --json | head -c 100`): Rust ignores SIGPIPE, which turns the write
    // into a panic with a backtrace.
    // SAFETY: setting a signal's disposition to the default at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // `println!` panics when standard output cannot be written (`> /dev/full`, a closed file):
    // that is an error of the output, one line and exit code 2 like any other, not a crash
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.payload().downcast_ref::<String>().map(String::as_str).or_else(|| info.payload().downcast_ref::<&str>().copied()).unwrap_or("");
        if let Some(reason) = msg.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: cannot write to standard output: {reason}");
            std::process::exit(2);
        }
        default_hook(info);
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // one line, like every other error of this tool: clap's message and its hints
            let text = e.render().to_string();
            let parts: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("For more information")).collect();
            eprintln!("{}", parts.join(" "));
            std::process::exit(2);
        }
    };
    let result = match cli.command {
        Command::Run { scene, duration, solver, summary, quiet, csv, wrench_bodies, pose_bodies, csv_every, record, record_rate, on_failure, force, load } => match load.options() {
            Ok(o) => {
                let _ = LOAD_OPTIONS.set(o);
                let csv = run::CsvOptions { path: csv, bodies: wrench_bodies, pose_bodies, every: csv_every };
                let outputs = run::Outputs { summary, csv, record, record_rate, force };
                run::run(scene, duration, solver, quiet, outputs, on_failure)
            }
            Err(e) => Err(e),
        },
        Command::Replay { hw_bag, scene, out, config, joint_map, initial_state, command_topics, rate, limit_policy } => {
            replay::replay(&hw_bag, &scene, &out, config, joint_map, initial_state, command_topics, rate, limit_policy)
        }
        Command::Identify { scene, bags, params, out, validate, threads, max_iterations, joint_map, config, initial_state, force, load } => load.options().and_then(|o| {
            identify::identify(identify::Args { scene, bags, params, out, validate, threads, max_iterations, joint_map, config, initial_state, force, load: o })
        }),
        Command::Compare { sim_bag, hw_bag, report, json, joint_map, joint_states_topic, max_lag, time_base, contact_threshold, force } => {
            compare::compare(&sim_bag, &hw_bag, report, json, joint_map, joint_states_topic, max_lag, &time_base, contact_threshold, force)
        }
        Command::Model { urdf, check: true, load, json, .. } => load.options().and_then(|o| contact_sim::model_check::check_cli(&urdf, &o, json).map_err(Into::into)),
        Command::Model { urdf, floating, q, v, a, json, load, .. } => {
            load.options().and_then(|o| model::model(&urdf, floating, q.map(|x| x.0), v.map(|x| x.0), a.map(|x| x.0), json, &o))
        }
        Command::Bench { scenes, steps, warmup, solver, paired_with: Some(b), json } => paired::check_and_run(scenes, &b, steps, warmup, solver, json),
        Command::Bench { scenes, steps, warmup, solver, paired_with: None, json } => bench::bench(scenes, steps, warmup, solver, json),
    };
    if let Err(e) = result {
        // one line: the chain of causes
        let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
        eprintln!("error: {}", msg.join(": "));
        // 3: the input was fine but the run failed (`on_failure: stop`)
        std::process::exit(if e.is::<run::StepFailed>() { 3 } else { 2 });
    }
}

pub fn repo_path(rel: &str) -> PathBuf {
    let local = PathBuf::from(rel);
    if local.exists() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
    }
}

/// The method a `--solver` option selects on `scene`: the scene's own when absent or of the same
/// kind, otherwise the kind's defaults; refused when it cannot simulate the scene.
pub fn solver_for(scene: &Scene, kind: Option<SolverKind>) -> Result<SolverConfig> {
    let config = match kind {
        Some(k) => scene.solver.overridden_by(k),
        None => scene.solver.clone(),
    };
    config.check_model(&scene.model, &scene.file.display().to_string()).map_err(|e| anyhow::anyhow!("--solver: {e}"))?;
    Ok(config)
}

pub fn load(scene: &Path) -> Result<Scene> {
    let scene = config::load_scene_with(scene, LOAD_OPTIONS.get_or_init(Default::default))?;
    for w in &scene.warnings {
        eprintln!("warning: {w}");
    }
    Ok(scene)
}

/// URDF loading options shared by `run` and `model`.
#[derive(clap::Args)]
pub struct LoadArgs {
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
pub struct Floats(Vec<f64>);

fn parse_floats(s: &str) -> Result<Floats, String> {
    contact_sim::model_check::parse_floats(s).map(Floats)
}

/// `run`'s loading options (set once in `main`).
static LOAD_OPTIONS: std::sync::OnceLock<config::LoadOptions> = std::sync::OnceLock::new();

pub fn parse_joint_map(items: &[String]) -> Result<std::collections::BTreeMap<String, String>> {
    let mut m = std::collections::BTreeMap::new();
    for it in items {
        let Some((a, b)) = it.split_once('=') else { bail!("--joint-map: '{it}' is not hw_name=sim_name") };
        m.insert(a.trim().to_string(), b.trim().to_string());
    }
    Ok(m)
}

pub fn read_bag_warn(path: &Path) -> Result<bag::Bag> {
    let b = bag::read_bag(path)?;
    for w in &b.warnings {
        eprintln!("warning: {w}");
    }
    Ok(b)
}
