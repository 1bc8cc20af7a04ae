//! `contact_sim run`: a scene headless, with a summary, CSV time series and bag recording.

use contact_sim::validate::MAX_RUN_STEPS;

use super::*;

use contact_sim::bag::run::RunRecorder;
use contact_sim::sim::{FailurePolicy, StepFailure};

#[derive(serde::Serialize)]
struct RunSummary {
    scene: String,
    file: String,
    solver: String,
    /// Every parameter of the method, `kind(key=value, ...)`.
    solver_params: String,
    timestep_s: f64,
    sim_time_s: f64,
    wall_time_s: f64,
    real_time_factor: f64,
    dof: usize,
    stats: RunStats,
    /// The first failed step, if any, and the `on_failure` policy applied.
    first_failure: Option<StepFailure>,
    on_failure: &'static str,
    bodies: Vec<report::BodyPoseReport>,
    joint_positions: std::collections::BTreeMap<String, f64>,
    /// Each deformable body at the end: the mean of its node positions and its lowest node's
    /// height (m, world; the node mean, not the mass centre).
    deformables: Vec<DeformableReport>,
}

/// Where a deformable body ended ([`RunSummary::deformables`]).
#[derive(serde::Serialize)]
struct DeformableReport {
    name: String,
    /// Mean of the node positions (m, world).
    node_centroid_m: [f64; 3],
    /// Height of the lowest node (m, world z).
    lowest_node_z_m: f64,
}

/// A run stopped by its `on_failure: stop` policy (exit status 3): the scene file and the
/// first failed step.
#[derive(Debug)]
pub struct StepFailed(pub String);

impl std::fmt::Display for StepFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepFailed {}

pub struct CsvOptions {
    pub path: Option<PathBuf>,
    pub bodies: Vec<String>,
    /// `--pose-bodies`: links or objects whose world position goes into the CSV.
    pub pose_bodies: Vec<String>,
    pub every: u64,
}

/// The bodies an option names (links or objects), or an error naming the option and the name.
fn body_ids(sim: &Simulation, option: &str, names: &[String]) -> Result<Vec<usize>> {
    names.iter().map(|name| sim.model.body_id(name).with_context(|| format!("{option}: no link or object named '{name}'"))).collect()
}

/// Writes the sensor / contact-wrench / pose time series.
struct CsvWriter {
    out: std::io::BufWriter<std::fs::File>,
    /// The file, for errors.
    path: std::path::PathBuf,
    bodies: Vec<usize>,
    /// The `--pose-bodies`.
    pose_bodies: Vec<usize>,
    pub every: u64,
}

impl CsvWriter {
    fn new(opts: &CsvOptions, sim: &Simulation) -> Result<Option<Self>> {
        // default: the scene's contact_wrench_links; named bodies are checked with or without --csv
        let bodies = if opts.bodies.is_empty() { sim.model.contact_wrench_bodies.clone() } else { body_ids(sim, "--wrench-bodies", &opts.bodies)? };
        let pose_bodies = body_ids(sim, "--pose-bodies", &opts.pose_bodies)?;
        let Some(path) = &opts.path else { return Ok(None) };
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
        for &b in &pose_bodies {
            for a in ["x", "y", "z"] {
                header.push(format!("{}.position.{a}", sim.model.bodies[b].name));
            }
        }
        writeln!(out, "{}", header.join(",")).with_context(|| format!("--csv: cannot write {}", path.display()))?;
        Ok(Some(CsvWriter { out, path: path.clone(), bodies, pose_bodies, every: opts.every }))
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
        for &b in &self.pose_bodies {
            // the body frame's origin in world coordinates (m), micrometre resolution
            let p = sim.workspace.body_pose[b].translation.vector;
            row.extend(p.iter().map(|x| format!("{x:.6}")));
        }
        writeln!(self.out, "{}", row.join(",")).with_context(|| format!("--csv: cannot write {}", self.path.display()))?;
        Ok(())
    }
}

/// What a run writes besides its summary line.
pub struct Outputs {
    /// `--summary`: the summary as JSON.
    pub summary: Option<PathBuf>,
    /// `--csv` and its options.
    pub csv: CsvOptions,
    /// `--record` directory.
    pub record: Option<PathBuf>,
    /// `--record-rate` (Hz), checked with or without `--record`.
    pub record_rate: f64,
    /// `--force`: replace existing files.
    pub force: bool,
}

impl Outputs {
    /// The companion options are checked even when the option they qualify is absent, and the
    /// files against the scene and each other ([`outputs::check`]).
    fn check(&self, scene: &Path) -> Result<()> {
        if self.csv.every == 0 {
            bail!("--csv-every: must be ≥ 1");
        }
        let rate = self.record_rate;
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--record-rate: must be a positive, finite rate in Hz, got {rate}");
        }
        if let Some(dir) = &self.record {
            // before the scene loads (and warns): a bag is never overwritten
            if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
                bail!("--record: {}: exists and is not an empty directory (a bag is never overwritten)", dir.display());
            }
        }
        let files: Vec<(&str, &Path)> = [("--summary", self.summary.as_deref()), ("--csv", self.csv.path.as_deref())].into_iter().filter_map(|(o, p)| p.map(|p| (o, p))).collect();
        let mut all = files.clone();
        if let Some(dir) = &self.record {
            all.push(("--record", dir.as_path()));
        }
        outputs::check(&[scene], &all, self.force)
    }
}

pub fn run(scene: Option<PathBuf>, duration: Option<f64>, solver: Option<SolverKind>, quiet: bool, outputs: Outputs, on_failure: Option<FailurePolicy>) -> Result<()> {
    let path = scene.unwrap_or_else(|| repo_path("config/default.yaml"));
    outputs.check(&path)?;
    let Outputs { summary, csv, record, record_rate, .. } = outputs;
    let record = record.map(|d| (d, record_rate));
    let scene = load(&path)?;
    let policy = on_failure.or(scene.on_failure).unwrap_or(FailurePolicy::Stop);
    let mut first_failure: Option<StepFailure> = None;
    let solver_cfg = solver_for(&scene, solver)?;
    let duration = duration.unwrap_or(scene.duration_s);
    if !(duration > 0.0 && duration.is_finite()) {
        bail!("--duration: must be positive, got {duration}");
    }
    let mut sim = Simulation::from_scene(&scene, Some(&solver_cfg));
    let steps = (duration / sim.model.timestep_s).round();
    if steps < 1.0 {
        bail!("--duration: {} s is shorter than half of the scene's time step ({} s): no step would run", contact_sim::validate::show(duration), sim.model.timestep_s);
    }
    if steps > MAX_RUN_STEPS as f64 {
        bail!("--duration: {} s is {} steps of {} s, more than the {MAX_RUN_STEPS} steps a run may take", contact_sim::validate::show(duration), contact_sim::validate::show(steps), sim.model.timestep_s);
    }
    let mut csv_writer = CsvWriter::new(&csv, &sim)?;
    let steps = steps as u64;
    let mut recorder = match &record {
        Some((dir, rate)) => Some(RunRecorder::start(dir, *rate, &sim).with_context(|| "--record")?),
        None => None,
    };
    if let Some(r) = recorder.as_mut() {
        r.tick(&sim, None, 0.0);
    }
    let stop = contact_sim::rt::stop_signal::install();
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
        if let Some(f) = StepFailure::of(&r, i + 1, t_before) {
            first_failure.get_or_insert(f);
            sim.apply_failure_policy(policy);
        }
        if let Some(rec) = recorder.as_mut() {
            rec.tick(&sim, Some((t_before, &r)), sim.state.time_s / start.elapsed().as_secs_f64().max(1e-9));
        }
        if let Some(w) = csv_writer.as_mut() {
            if !w.pose_bodies.is_empty() && sim.state.step_count % w.every == 0 {
                // the workspace holds the poses of the step's start: the row's are those of its
                // end state (the next step computes them again from the state, the same values)
                kinematics::forward_kinematics(&sim.model, &sim.state.q, &sim.state.v, &mut sim.workspace);
            }
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
        if first_failure.is_some() && policy == FailurePolicy::Stop {
            break;
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
        solver_params: sim.workspace.solver.config().describe(),
        timestep_s: sim.model.timestep_s,
        sim_time_s: sim.state.time_s,
        wall_time_s: wall,
        real_time_factor: sim.state.time_s / wall.max(1e-12),
        dof: sim.model.nv + 3 * sim.model.fem_nodes(),
        stats,
        first_failure,
        on_failure: policy.name(),
        bodies: report::body_poses(&sim.model, &sim.workspace),
        joint_positions,
        deformables: sim
            .model
            .deformables
            .iter()
            .map(|d| {
                let nodes = &sim.state.fem_x[3 * d.node_start..3 * (d.node_start + d.num_nodes())];
                let n = d.num_nodes().max(1) as f64;
                let mut centroid = [0.0; 3];
                for p in nodes.chunks_exact(3) {
                    for k in 0..3 {
                        centroid[k] += p[k] / n;
                    }
                }
                let lowest = nodes.chunks_exact(3).map(|p| p[2]).fold(f64::INFINITY, f64::min);
                DeformableReport { name: d.name.clone(), node_centroid_m: centroid, lowest_node_z_m: lowest }
            })
            .collect(),
    };
    println!("scene      {} ({})", s.scene, s.file);
    println!("solver     {}   dt {} s   DOF {}", s.solver_params, s.timestep_s, s.dof);
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
    for d in &s.deformables {
        let c = d.node_centroid_m;
        println!("  {:<16} node centroid = [{:8.4} {:8.4} {:8.4}] m   lowest node z = {:8.4} m", d.name, c[0], c[1], c[2], d.lowest_node_z_m);
    }
    if let Some(rec) = recorder {
        let dir = record.as_ref().unwrap().0.clone();
        let summary = rec.finish().with_context(|| "--record")?;
        println!("bag written to {} ({} messages on {} topics, {} dropped)", dir.display(), summary.bag.messages, summary.bag.topics.len(), summary.dropped);
    }
    if let Some(mut w) = csv_writer {
        w.out.flush().with_context(|| format!("--csv: cannot write {}", w.path.display()))?;
        println!("time series written to {}", csv.path.as_ref().unwrap().display());
    }
    if let Some(out) = summary {
        let text = serde_json::to_string_pretty(&s)?;
        std::fs::write(&out, text).with_context(|| format!("--summary: cannot write {}", out.display()))?;
        println!("summary written to {}", out.display());
    }
    let tol = sim.workspace.solver.config().tolerance();
    if let Some(w) = s.stats.unconverged_warning(report::residual_scale(&sim.model, tol.unit), tol.unit) {
        eprintln!("warning: {}: {w}", path.display());
    }
    match (first_failure, policy) {
        (Some(f), FailurePolicy::Stop) => {
            return Err(StepFailed(format!("{}: {f}; run stopped (on_failure: stop; the poses above are the last good state)", path.display())).into());
        }
        (Some(f), p) => eprintln!("warning: {} steps failed, the first: {f} (on_failure: {})", s.stats.failed_steps, p.name()),
        (None, _) => {}
    }
    Ok(())
}
