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
    /// Whole step (kinematics, collision, dynamics, assembly, solve, integration), µs: the
    /// timed window run again from its first state, steps back to back under one clock (as a
    /// peer's rollout is timed).
    mean_us: f64,
    /// The mean of the steps timed one by one (`p50_us` … `max_us` come from these), µs: each
    /// with its own clock reads, after the re-solve and probe of the step before.
    timed_mean_us: f64,
    /// Whether the back-to-back run ended in the same state, bit for bit.
    window_reproduced: bool,
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
    /// The method's unit of work where it has one ([`contact_sim::contact::UnitProbe`]), e.g.
    /// one single-contact solve, sampled on every contact of every step given the other
    /// contacts' impulses, µs.
    single_contact_samples: usize,
    single_contact_mean_us: Option<f64>,
    single_contact_p99_us: Option<f64>,
    /// The same over the samples whose contact slides.
    single_contact_slip_fraction: Option<f64>,
    single_contact_slip_mean_us: Option<f64>,
    /// The method's line under the table (e.g. its kernels' build), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
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
    mismatches: usize,
}

/// Re-solves the last step's problem from the warm start the step's solver received (rebuilt
/// from `before`, the state before the step) with `solver`, a second solver of the same
/// configuration, and times that call; hands the problem to the method's unit probe, if any.
fn time_solve(sim: &mut Simulation, before: &contact_sim::state::State, solver: &mut Solver, probe: Option<&mut Box<dyn UnitProbe>>, out: &mut SolveTimes) {
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
    if let Some(probe) = probe {
        probe.record(&p, &solution);
    }
}

/// The most steps (and warm-up steps) one benchmark runs.
pub const MAX_STEPS: usize = 100_000_000;

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
            let mut window_start = contact_sim::state::State::new(&sim.model);
            window_start.copy_from(&sim.state);
            let window_commands = sim.commands.clone();
            let mut times = Vec::with_capacity(steps);
            let mut solve = SolveTimes::default();
            let mut probe = config.unit_probe();
            let mut stats = RunStats::default();
            for _ in 0..steps {
                before.copy_from(&sim.state);
                let t0 = Instant::now();
                let r = sim.step();
                times.push(t0.elapsed().as_secs_f64() * 1e6);
                stats.add(&r);
                if !(r.singular_mass_matrix || r.non_finite_state) {
                    time_solve(&mut sim, &before, &mut resolver, probe.as_mut(), &mut solve);
                }
            }
            if solve.mismatches > 0 {
                eprintln!("warning: {}: {} re-solves differed from the step's solution", scene.name, solve.mismatches);
            }
            // the window again from its first state, back to back: no clock reads, re-solves or
            // probes between the steps, which the mean should not carry
            let window_end = serde_json::to_string(&sim.state)?;
            sim.state.copy_from(&window_start);
            sim.commands.copy_from(&window_commands);
            let t0 = Instant::now();
            for _ in 0..steps {
                sim.step();
            }
            let mean_us = t0.elapsed().as_secs_f64() * 1e6 / steps as f64;
            let window_reproduced = serde_json::to_string(&sim.state)? == window_end;
            if !window_reproduced {
                eprintln!("warning: {}: the back-to-back run of the timed window did not end in the same state", scene.name);
            }
            let timed_mean_us = mean(&times);
            times.sort_by(f64::total_cmp);
            let unit = probe.map(|p| p.time()).filter(|u| u.samples > 0);
            for v in [&mut solve.per_step, &mut solve.per_contact] {
                v.sort_by(f64::total_cmp);
            }
            rows.push(BenchRow {
                scene: scene.name.clone(),
                solver: sim.workspace.solver.kind().into(),
                solver_params: config.describe(),
                steps,
                dof: sim.model.nv + 3 * sim.model.fem_nodes(),
                mean_us,
                timed_mean_us,
                window_reproduced,
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
                single_contact_samples: unit.as_ref().map_or(0, |u| u.samples),
                single_contact_mean_us: unit.as_ref().map(|u| u.mean_us),
                single_contact_p99_us: unit.as_ref().map(|u| percentile(&u.each_us, 0.99)),
                single_contact_slip_fraction: unit.as_ref().map(|u| u.sliding_fraction),
                single_contact_slip_mean_us: unit.as_ref().map(|u| u.sliding_mean_us).filter(|x| x.is_finite()),
                note: config.bench_note(),
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
            "step: the whole step (µs: the timed window run again from its first state, steps back to back; p50, p99, max: each step timed alone); solve: the solver call alone (the step's problem re-solved from the same warm start), per step and per contact; \
             1-contact: the method's unit of work where it has one, e.g. one single-contact solve (slip: share of sliding samples, and their mean)"
        );
        let mut notes: Vec<&str> = rows.iter().filter_map(|r| r.note.as_deref()).collect();
        notes.dedup();
        for n in notes {
            println!("{n}");
        }
    }
    Ok(())
}
