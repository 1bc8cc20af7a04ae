//! `contact_sim bench`: time the step and the solver call on scenes.

use super::*;
use contact_sim::report::percentile;

#[derive(serde::Serialize)]
struct BenchRow {
    scene: String,
    solver: String,
    /// Every parameter of the method, `kind(key=value, ...)`.
    solver_params: String,
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

/// Re-solves the last step's problem from the warm start the step's solver received (rebuilt
/// from `before`, the state before the step) with `solver`, a second solver of the same
/// configuration, and times that call; for the bisection, also times single-contact solves.
fn time_solve(sim: &mut Simulation, before: &contact_sim::state::State, solver: &mut Solver, config: &SolverConfig, out: &mut SolveTimes) {
    use contact_sim::contact::SingleContact;
    use std::hint::black_box;
    let (model, ws) = (&sim.model, &mut sim.workspace);
    let nc = ws.contacts.len();
    let m = ws.num_rows();
    if m == 0 {
        return;
    }
    let solution: Vec<f64> = ws.impulse[..m].to_vec();
    contact_sim::step::warm_start(model, before, ws);
    let (p, impulse, _) = ws.split_for_solve();
    let ConstraintStage::Impulse(solver) = solver.stage() else {
        return;
    };
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

/// The most steps (and warm-up steps) one benchmark runs.
const MAX_STEPS: usize = 100_000_000;

pub fn bench(scenes: Vec<PathBuf>, steps: usize, warmup: usize, solvers: Option<Vec<SolverKind>>, json: bool) -> Result<()> {
    let scenes = if scenes.is_empty() {
        vec![repo_path("config/examples/quadruped_stand.yaml"), repo_path("config/examples/box_stack.yaml")]
    } else {
        scenes
    };
    if steps == 0 {
        bail!("--steps: must be ≥ 1");
    }
    if steps > MAX_STEPS {
        bail!("--steps: {steps} is more than the {MAX_STEPS} a benchmark may time (the step times are kept in memory)");
    }
    if warmup > MAX_STEPS {
        bail!("--warmup: {warmup} is more than {MAX_STEPS} steps");
    }
    let mut rows = vec![];
    for path in &scenes {
        let scene = load(path)?;
        let kinds: Vec<Option<SolverKind>> = match &solvers {
            None => vec![None],
            Some(k) => k.iter().copied().map(Some).collect(),
        };
        for kind in kinds {
            let config = solver_for(&scene, kind)?;
            let mut sim = Simulation::from_scene(&scene, Some(&config));
            let mut resolver = Solver::new(&config, &sim.model);
            for _ in 0..warmup {
                sim.step();
            }
            let mut before = contact_sim::state::State::new(&sim.model); // full warm-start capacity
            let mut times = Vec::with_capacity(steps);
            let mut solve = SolveTimes::default();
            let mut stats = RunStats::default();
            for _ in 0..steps {
                before.copy_from(&sim.state);
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
                solver_params: config.describe(),
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
        for r in &rows {
            println!("{}: {}", r.scene, r.solver_params);
        }
        println!(
            "step: the whole step; solve: the solver call alone (the step's problem re-solved from the same warm start), per step and per contact; \
             1-contact: one single-contact solve of the bisection (slip: share of sliding samples, and their mean)"
        );
        if rows.iter().any(|r| r.solver == "newton") {
            println!("newton kernels: {} (LU, Delassus products, laws; the same results either way)", contact_sim::contact::newton::core::kernel_build());
        }
    }
    Ok(())
}
