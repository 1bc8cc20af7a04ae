//! `contact_sim bench A --paired-with B`: two solver configurations timed step by step from the
//! same states.
//!
//! A run of a scene under one solver and a run under another part ways after a few steps
//! wherever the motion is sensitive to round-off (a box pushed by a gripper, a grasp), so two
//! whole runs compare two different trajectories: a count of slow steps can change tenfold
//! when the box is moved by a nanometre. Here the run follows scene A; before each of A's steps
//! the state and commands are copied into scene B's simulation, which takes the same step with
//! its own solver. Both are timed on the same states, and how far B's step lands from A's is
//! recorded.

use super::*;
use contact_sim::report::percentile;

/// One side of the pair over the timed steps.
#[derive(serde::Serialize)]
struct Side {
    scene_file: String,
    solver: String,
    /// Every parameter of the method, `kind(key=value, ...)`.
    solver_params: String,
    /// Each step timed alone, µs.
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    /// Steps over the scene's time step (wall clock).
    steps_over_timestep: usize,
    iterations_mean: f64,
    iterations_max: u32,
    /// Steps whose solver did not reach its tolerance (or stopped at its iteration cap).
    unconverged_steps: u64,
    /// Steps skipped for a singular mass matrix or a non-finite state.
    failed_steps: u64,
}

#[derive(serde::Serialize)]
struct Pair {
    scene: String,
    steps: usize,
    /// The run the states come from.
    a: Side,
    /// The same steps taken from A's states.
    b: Side,
    /// B's mean step time over A's.
    b_over_a_mean: f64,
    /// Steps B took in less time than A.
    steps_b_faster: usize,
    /// Largest difference between B's and A's velocities after a step, over every generalized
    /// velocity coordinate (m/s or rad/s); infinite (`null` in JSON) when a velocity of either
    /// side was not finite.
    max_velocity_difference: f64,
}

fn side(file: &Path, sim: &Simulation, config: &SolverConfig, times: &mut [f64], stats: &RunStats) -> Side {
    let timestep_us = sim.model.timestep_s * 1e6;
    let mean_us = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    Side {
        scene_file: file.display().to_string(),
        solver: sim.workspace.solver.kind().into(),
        solver_params: config.describe(),
        mean_us,
        p50_us: percentile(times, 0.5),
        p99_us: percentile(times, 0.99),
        max_us: *times.last().unwrap_or(&f64::NAN),
        steps_over_timestep: times.iter().filter(|t| **t > timestep_us).count(),
        iterations_mean: stats.iterations_mean,
        iterations_max: stats.iterations_max,
        unconverged_steps: stats.unconverged_steps,
        failed_steps: stats.failed_steps,
    }
}

/// Why scenes `a` and `b` cannot be stepped from each other's states, if they cannot: the same
/// bodies, joints and deformables in the same order.
fn same_model(a: &contact_sim::model::Model, b: &contact_sim::model::Model) -> Option<String> {
    if a.nq != b.nq || a.nv != b.nv {
        return Some(format!("{} position and {} velocity coordinates against {} and {}", a.nq, a.nv, b.nq, b.nv));
    }
    if a.bodies.len() != b.bodies.len() {
        return Some(format!("{} bodies against {}", a.bodies.len(), b.bodies.len()));
    }
    if let Some((x, y)) = a.bodies.iter().zip(&b.bodies).find(|(x, y)| x.name != y.name || x.joint.name != y.joint.name) {
        return Some(format!("body '{}' (joint '{}') where the other has '{}' (joint '{}')", x.name, x.joint.name, y.name, y.joint.name));
    }
    if a.fem_nodes() != b.fem_nodes() {
        return Some(format!("{} deformable nodes against {}", a.fem_nodes(), b.fem_nodes()));
    }
    if a.timestep_s != b.timestep_s {
        return Some(format!("time step {} s against {} s", a.timestep_s, b.timestep_s));
    }
    None
}

/// Runs scene `a` for `warmup + steps` steps; each timed step is also taken by scene `b`'s
/// simulation from the same state and commands.
pub fn paired(a_path: &Path, b_path: &Path, steps: usize, warmup: usize, json: bool) -> Result<()> {
    let (scene_a, scene_b) = (load(a_path)?, load(b_path)?);
    let (config_a, config_b) = (solver_for(&scene_a, None)?, solver_for(&scene_b, None)?);
    let mut sim_a = Simulation::from_scene(&scene_a, Some(&config_a));
    let mut sim_b = Simulation::from_scene(&scene_b, Some(&config_b));
    if let Some(why) = same_model(&sim_a.model, &sim_b.model) {
        bail!("--paired-with: {} and {} do not describe the same model ({why}); the paired benchmark steps one scene from the other's states", a_path.display(), b_path.display());
    }
    for _ in 0..warmup {
        sim_a.step();
    }
    let mut before = contact_sim::state::State::new(&sim_a.model);
    let mut commands = sim_a.commands.clone();
    let (mut times_a, mut times_b) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    let (mut stats_a, mut stats_b) = (RunStats::default(), RunStats::default());
    let (mut b_faster, mut max_dv) = (0, 0.0f64);
    for _ in 0..steps {
        before.copy_from(&sim_a.state);
        commands.copy_from(&sim_a.commands);
        sim_b.state.copy_from(&before);
        sim_b.commands.copy_from(&commands);
        let t0 = Instant::now();
        let r = sim_b.step();
        let tb = t0.elapsed().as_secs_f64() * 1e6;
        stats_b.add(&r);
        let t0 = Instant::now();
        let r = sim_a.step();
        let ta = t0.elapsed().as_secs_f64() * 1e6;
        stats_a.add(&r);
        times_a.push(ta);
        times_b.push(tb);
        b_faster += usize::from(tb < ta);
        // a non-finite velocity on either side counts as an infinite difference (f64::max
        // would skip a NaN)
        let dv = sim_a.state.v.iter().zip(&sim_b.state.v).fold(0.0f64, |m, (x, y)| m.max(if (x - y).is_nan() { f64::INFINITY } else { (x - y).abs() }));
        max_dv = max_dv.max(dv);
    }
    let a = side(a_path, &sim_a, &config_a, &mut times_a, &stats_a);
    let b = side(b_path, &sim_b, &config_b, &mut times_b, &stats_b);
    let pair = Pair { scene: scene_a.name.clone(), steps, b_over_a_mean: b.mean_us / a.mean_us, steps_b_faster: b_faster, max_velocity_difference: max_dv, a, b };
    if json {
        println!("{}", serde_json::to_string_pretty(&pair)?);
        return Ok(());
    }
    println!("{}: {} steps after {} of warm-up, each taken by A and by B from A's state", pair.scene, steps, warmup);
    println!("{:<2} {:<9} │ {:>9} {:>9} {:>9} {:>9} {:>8} │ {:>8} {:>6} {:>7} {:>6}", "", "solver", "mean µs", "p50", "p99", "max", ">step", "iter", "max", "unconv", "failed");
    for (name, s) in [("A", &pair.a), ("B", &pair.b)] {
        println!(
            "{:<2} {:<9} │ {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8} │ {:>8.1} {:>6} {:>7} {:>6}",
            name, s.solver, s.mean_us, s.p50_us, s.p99_us, s.max_us, s.steps_over_timestep, s.iterations_mean, s.iterations_max, s.unconverged_steps, s.failed_steps
        );
    }
    println!("A: {} {}", pair.a.scene_file, pair.a.solver_params);
    println!("B: {} {}", pair.b.scene_file, pair.b.solver_params);
    println!(
        "B/A mean {:.3}; B faster on {} of {} steps; velocities after a step differ by at most {:.2e} (m/s or rad/s)",
        pair.b_over_a_mean, pair.steps_b_faster, steps, pair.max_velocity_difference
    );
    Ok(())
}

/// `bench --paired-with`: checks the options (one scene, no `--solver`, the step counts) and
/// runs [`paired`].
pub fn check_and_run(scenes: Vec<PathBuf>, b: &Path, steps: usize, warmup: usize, solver: Option<Vec<SolverKind>>, json: bool) -> Result<()> {
    if solver.is_some() {
        bail!("--paired-with: --solver does not apply (each of the two scene files names its solver and parameters)");
    }
    let [a] = scenes.as_slice() else {
        bail!("--paired-with: give exactly one scene to pair with {} ({} given)", b.display(), scenes.len());
    };
    if steps == 0 {
        bail!("--steps: must be ≥ 1");
    }
    if steps > super::bench::MAX_STEPS || warmup > super::bench::MAX_STEPS {
        bail!("--steps, --warmup: at most {} each (the step times are kept in memory)", super::bench::MAX_STEPS);
    }
    paired(a, b, steps, warmup, json)
}
