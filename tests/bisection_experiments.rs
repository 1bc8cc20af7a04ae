//! The four experiments of Hwangbo, Lee & Hutter (RA-L 2018, Sec. V) on our 18-DOF quadruped at
//! dt = 1 ms (`config/examples/bisection_{trot,hang,drop,random}.yaml`; docs/bisection.md), simulated with
//! the per-contact bisection solver. After every step with contacts, the step's contact problem is
//! rebuilt from the workspace (with the warm start the solver received, `step::warm_start` on the
//! state from before the step) and solved again:
//!
//! - by PGS run to 1e-12 N·s (at most 20 000 sweeps, over-relaxation 0.6 as in the paper; with
//!   ω = 1 our PGS falls into two-cycles on some trot impacts): the paper's Fig. 6 statistic
//!   `|λ_b − λ_p| / |λ_p|` over the contact impulses;
//! - on steps where some contact slides, by bisection run to 1e-13 (the exact solution of the
//!   paper's maximal-dissipation model), to tell convergence error from model difference;
//! - (hang, drop) by PGS and by bisection at the same 1e-6 tolerance from the same warm start, to
//!   count sweeps on identical problems.
//!
//! # What was targeted and what holds
//!
//! The target, `|λ_b − λ_p| / |λ_p| < 1e-3` in ≥ 95 % of the steps with contacts, is **not
//! met on all steps**, because of the friction model, not convergence: the bisection solves the
//! paper's maximal-dissipation model (MDP), PGS solves Coulomb's law, and the two differ whenever a
//! contact *slides* on a Delassus block with normal–tangential coupling (see
//! `contact::FrictionModel`). A foot at the end of a leg has a strongly coupled block (off-diagonal
//! `G_nt` comparable to `G_nn`), so on sliding steps the two answers differ by 0.5–7 % (median per
//! experiment) and up to 90–270 % in the worst step; the paper, with ANYmal, saw < 1 % in 99.6 %
//! of its samples. Measured over the steps whose reference converged
//! (all of them except 572 of 4039 in random; release build, these scenes; `--nocapture` prints
//! the distributions):
//!
//! | experiment | steps with contacts | `< 1e-3` | `< 1e-2` | steps with a sliding contact | `< 1e-3` without sliding |
//! |---|---|---|---|---|---|
//! | trot   | 2663 | 92.2 % | 97.3 % | 9.4 % | 99.96 % |
//! | hang   | 2475 | 90.5 % | 92.2 % | 9.5 % | 99.87 % |
//! | drop   | 2688 | 81.0 % | 90.6 % | 19.9 % | 100 % |
//! | random | 3467 | 19.2 % | 48.3 % | 62 % | 52.5 % (99.9 % in ‖·‖_G) |
//!
//! What the tests assert, each with its reason:
//! 1. the statistic on the steps where no contact slides (there both models have the same
//!    solutions): ≥ 95 % below 1e-3 — the target, where it is meaningful;
//! 2. on sliding steps, the bisection's answer is within 1e-3 of the exact MDP solution in ≥ 99 %
//!    of them (trot, hang, drop): the difference to PGS is the model, not convergence;
//! 3. the statistic on all steps: floors slightly below the measured values (regression guards,
//!    not the target);
//! 4. random: the torso lies on its back on four coplanar corners (statically indeterminate), so
//!    the impulses are not unique, only their effect on the motion; there the comparison is made in
//!    the kinetic-energy norm `‖Δλ‖_G = sqrt(Δλᵀ G Δλ)`, i.e. on the velocity change the impulses
//!    cause;
//! 5. hang and drop: fewer sweeps than PGS on identical problems at the same 1e-6 tolerance.
//!    Measured: PGS's total sweeps are 2.5× (ω = 1) and 3.9× (ω = 0.6) the bisection's in hang
//!    (worst step 60 and 112 sweeps against 8), 1.7× and 2.8× in drop (worst 1 005 and 1 536
//!    against 636); asserted ≥ 2.0× / 3.0× and ≥ 1.4× / 2.2×, and a worse worst step. That is
//!    "fewer", not the paper's "about an order of magnitude"; its "PGS needs over 20 000
//!    iterations at impacts" does not happen with our robot and integrator.


use crate::common::*;
use contact_sim::contact::{BisectionParams, BisectionSolver, ContactProblem, ImpulseSolver, PgsParams, PgsSolver};
use contact_sim::sim::Simulation;
use contact_sim::state::State;

/// What one experiment measured, per step with contacts.
#[derive(Debug, Default)]
struct Measured {
    steps: usize,
    max_contacts: usize,
    /// The reference PGS reached 1e-12.
    reference_converged: Vec<bool>,
    /// Some contact slides in the reference solution.
    sliding: Vec<bool>,
    /// `|λ_b − λ_p| / |λ_p|` over the contact rows.
    rel: Vec<f64>,
    /// `‖λ_b − λ_p‖_G / ‖λ_p‖_G` over the contact rows.
    rel_g: Vec<f64>,
    /// On sliding steps: `|λ_b − λ_mdp| / |λ_mdp|` with the exact MDP solution, and whether that
    /// solve converged.
    rel_exact: Vec<f64>,
    exact_unconverged: usize,
    /// Sweeps on identical problems from the same warm start at tolerance 1e-6 (only when
    /// counting): bisection (uncapped), PGS ω = 1 (the repository default), PGS ω = 0.6 (paper).
    sweeps_bisection: Vec<u32>,
    sweeps_pgs: Vec<u32>,
    sweeps_pgs_06: Vec<u32>,
    /// Steps where the simulation's bisection solve hit its sweep cap.
    unconverged_in_simulation: usize,
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// `sqrt(xᵀ G x)` for `x` over the first `x.len()` rows of the row-major `m × m` matrix `g`.
fn g_norm(g: &[f64], m: usize, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, xi) in x.iter().enumerate() {
        for (j, xj) in x.iter().enumerate() {
            s += xi * g[i * m + j] * xj;
        }
    }
    s.max(0.0).sqrt()
}

/// `|a − b| / |b|` with 0/0 = 0.
fn relative(a: f64, b: f64) -> f64 {
    if b > 1e-15 {
        a / b
    } else if a <= 1e-15 {
        0.0
    } else {
        f64::INFINITY
    }
}

fn pgs(p: &ContactProblem, start: &[f64], tolerance: f64, relaxation: f64, max_iterations: u32) -> (Vec<f64>, u32, bool) {
    let mut s = PgsSolver::new(PgsParams { max_iterations, tolerance, relaxation }, p.num_contacts);
    let mut l = start.to_vec();
    let st = s.solve(p, &mut l);
    (l, st.iterations, st.converged)
}

fn bisection(p: &ContactProblem, start: &[f64], params: BisectionParams) -> (Vec<f64>, u32, bool) {
    let mut s = BisectionSolver::new(params, p.num_contacts, p.num_joint_rows);
    let mut l = start.to_vec();
    let st = s.solve(p, &mut l);
    (l, st.iterations, st.converged)
}

fn run_experiment(name: &str, steps: usize, count_sweeps: bool) -> Measured {
    let file = format!("config/examples/bisection_{name}.yaml");
    let scene = scene_file(&file);
    let mut sim = Simulation::from_scene(&scene, None);
    assert_eq!(sim.workspace.solver.kind(), "bisection", "{file}: the experiments run the bisection solver");
    assert_eq!(sim.model.nv, 18, "{file}: the 18-DOF quadruped");
    assert_eq!(sim.model.timestep_s, 1e-3, "{file}");
    let mut before = State::new(&sim.model);
    let mut out = Measured::default();
    for _ in 0..steps {
        before.clone_from(&sim.state);
        let r = sim.step();
        assert!(!r.singular_mass_matrix && !r.non_finite_state, "{file} t = {}: failed step {r:?}", sim.state.time_s);
        assert_eq!(r.dropped_contacts, 0, "{file}");
        out.steps += 1;
        let nc = r.contacts;
        if nc == 0 {
            continue;
        }
        out.max_contacts = out.max_contacts.max(nc);
        out.unconverged_in_simulation += usize::from(!r.solve.converged);
        let (model, ws) = (&sim.model, &mut sim.workspace);
        let nj = ws.joint_rows.len();
        let (m, k) = (3 * nc + nj, 3 * nc);
        let lambda_b = ws.impulse[..m].to_vec();
        contact_sim::step::warm_start(model, &before, ws);
        let warm = ws.impulse[..m].to_vec();
        ws.impulse[..m].copy_from_slice(&lambda_b);
        let (p, _, _) = ws.split_for_solve();
        // the rebuilt problem and warm start are exactly what the step solved
        let (again, _, _) = bisection(&p, &warm, BisectionParams::default());
        assert_eq!(again, lambda_b, "{file} t = {}: re-solving the step's problem gives another answer", sim.state.time_s);
        for c in 0..nc {
            let l = &lambda_b[3 * c..3 * c + 3];
            let t = (l[1] * l[1] + l[2] * l[2]).sqrt();
            assert!(l[0] >= 0.0 && t <= p.friction[c] * l[0] * (1.0 + 1e-9) + 1e-15, "{file}: impulse {l:?} outside its cone");
        }
        // the paper's reference: PGS to 1e-12
        let (lambda_p, _, converged) = pgs(&p, &warm, 1e-12, 0.6, 20_000);
        out.reference_converged.push(converged);
        let sliding = (0..nc).any(|c| {
            let l = &lambda_p[3 * c..3 * c + 3];
            l[0] > 0.0 && (l[1] * l[1] + l[2] * l[2]).sqrt() >= p.friction[c] * l[0] * (1.0 - 1e-6)
        });
        out.sliding.push(sliding);
        let d: Vec<f64> = (0..k).map(|i| lambda_b[i] - lambda_p[i]).collect();
        out.rel.push(relative(norm(&d), norm(&lambda_p[..k])));
        out.rel_g.push(relative(g_norm(p.delassus, m, &d), g_norm(p.delassus, m, &lambda_p[..k])));
        if sliding && name != "random" {
            let exact = BisectionParams { tolerance_impulse: 1e-13, tolerance_velocity: 1e-13, max_iterations: 20_000, ..Default::default() };
            let (lambda_x, _, converged) = bisection(&p, &warm, exact);
            out.exact_unconverged += usize::from(!converged);
            let dx: Vec<f64> = (0..k).map(|i| lambda_b[i] - lambda_x[i]).collect();
            out.rel_exact.push(relative(norm(&dx), norm(&lambda_x[..k])));
        }
        if count_sweeps {
            let uncapped = BisectionParams { max_iterations: 20_000, ..Default::default() };
            out.sweeps_bisection.push(bisection(&p, &warm, uncapped).1);
            out.sweeps_pgs.push(pgs(&p, &warm, 1e-6, 1.0, 20_000).1);
            out.sweeps_pgs_06.push(pgs(&p, &warm, 1e-6, 0.6, 20_000).1);
        }
    }
    out
}

fn fraction_below(x: &[f64], bar: f64) -> f64 {
    x.iter().filter(|&&v| v < bar).count() as f64 / x.len().max(1) as f64
}

/// The values of `x` at steps whose reference converged and whose sliding flag is in `sliding`.
fn select(m: &Measured, x: &[f64], sliding: &[bool]) -> Vec<f64> {
    x.iter().zip(&m.sliding).zip(&m.reference_converged).filter(|((_, s), &rc)| rc && sliding.contains(s)).map(|((v, _), _)| *v).collect()
}

fn describe(what: &str, x: &[f64]) {
    eprintln!(
        "   {what:<34} n {:5}   < 1e-3 {:6.2} %   < 1e-2 {:6.2} %   p50 {:.1e}  p95 {:.1e}  p99 {:.1e}  max {:.1e}",
        x.len(),
        100.0 * fraction_below(x, 1e-3),
        100.0 * fraction_below(x, 1e-2),
        contact_sim::report::quantile(x, 0.5),
        contact_sim::report::quantile(x, 0.95),
        contact_sim::report::quantile(x, 0.99),
        contact_sim::report::quantile(x, 1.0)
    );
}

fn sweeps(what: &str, x: &[u32]) -> u64 {
    let f: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let total: u64 = x.iter().map(|&v| v as u64).sum();
    eprintln!(
        "   sweeps {what:<22} mean {:7.1}  p50 {:5}  p99 {:6}  max {:6}  total {total}",
        total as f64 / x.len().max(1) as f64,
        contact_sim::report::quantile(&f, 0.5),
        contact_sim::report::quantile(&f, 0.99),
        contact_sim::report::quantile(&f, 1.0)
    );
    total
}

/// Runs, prints and returns the measurements of one experiment.
fn experiment(name: &str, steps: usize, count_sweeps: bool) -> Measured {
    let m = run_experiment(name, steps, count_sweeps);
    let unconverged_reference = m.reference_converged.iter().filter(|&&c| !c).count();
    let n = m.rel.len();
    eprintln!(
        "== {name}: {} steps, {n} with contacts (max {}), {} with a sliding contact; reference PGS unconverged {unconverged_reference}; bisection at its sweep cap in {} steps",
        m.steps,
        m.max_contacts,
        m.sliding.iter().filter(|&&s| s).count(),
        m.unconverged_in_simulation
    );
    describe("|Δλ|/|λp|, all steps", &select(&m, &m.rel, &[false, true]));
    describe("|Δλ|/|λp|, no contact sliding", &select(&m, &m.rel, &[false]));
    describe("|Δλ|/|λp|, a contact sliding", &select(&m, &m.rel, &[true]));
    describe("‖Δλ‖_G/‖λp‖_G, all steps", &select(&m, &m.rel_g, &[false, true]));
    describe("‖Δλ‖_G/‖λp‖_G, no contact sliding", &select(&m, &m.rel_g, &[false]));
    if !m.rel_exact.is_empty() {
        describe("sliding: |λb − λmdp|/|λmdp|", &m.rel_exact);
        eprintln!("   exact MDP solves unconverged: {}", m.exact_unconverged);
    }
    m
}

fn assert_converged_reference(name: &str, m: &Measured, min_fraction: f64) {
    let f = m.reference_converged.iter().filter(|&&c| c).count() as f64 / m.reference_converged.len() as f64;
    assert!(f >= min_fraction, "{name}: the reference PGS converged in only {:.2} % of the steps", 100.0 * f);
}

/// Assertions 1–3 of the module docs.
fn assert_agreement(name: &str, m: &Measured, floor_all: f64) {
    assert_converged_reference(name, m, 0.99);
    let no_slide = fraction_below(&select(m, &m.rel, &[false]), 1e-3);
    assert!(no_slide >= 0.95, "{name}: without sliding contacts only {:.2} % of the steps agree to 1e-3", 100.0 * no_slide);
    let conv = fraction_below(&m.rel_exact, 1e-3);
    assert!(conv >= 0.99, "{name}: on sliding steps the bisection is within 1e-3 of the exact MDP solution in only {:.2} %", 100.0 * conv);
    let all = fraction_below(&select(m, &m.rel, &[false, true]), 1e-3);
    assert!(all >= floor_all, "{name}: the paper's statistic fell to {:.2} % (was above {:.0} %)", 100.0 * all, 100.0 * floor_all);
}

/// Assertion 5: total sweeps of PGS (ω = 1, ω = 0.6) over those of the bisection on the same
/// problems, at least these ratios; and the worst step.
fn assert_fewer_sweeps(name: &str, m: &Measured, ratio_pgs: f64, ratio_pgs_06: f64) {
    let b = sweeps("bisection", &m.sweeps_bisection);
    let p = sweeps("PGS ω = 1", &m.sweeps_pgs);
    let p6 = sweeps("PGS ω = 0.6", &m.sweeps_pgs_06);
    let (r, r6) = (p as f64 / b as f64, p6 as f64 / b as f64);
    eprintln!("   PGS / bisection total sweeps: ω = 1 {r:.2}, ω = 0.6 {r6:.2}");
    assert!(r >= ratio_pgs && r6 >= ratio_pgs_06, "{name}: PGS / bisection sweep ratios {r:.2}, {r6:.2}");
    let max = |x: &[u32]| x.iter().copied().max().unwrap_or(0);
    assert!(max(&m.sweeps_pgs) > max(&m.sweeps_bisection), "{name}: PGS's worst step should take more sweeps");
    assert!(max(&m.sweeps_pgs_06) > max(&m.sweeps_bisection), "{name}: PGS's worst step should take more sweeps");
}

#[test]
fn trot() {
    let m = experiment("trot", 3000, false);
    assert_eq!(m.max_contacts, 4, "trot: only the feet collide");
    assert_agreement("trot", &m, 0.90);
    assert_eq!(m.unconverged_in_simulation, 0);
}

#[test]
fn hang() {
    let m = experiment("hang", 3000, true);
    assert_eq!(m.max_contacts, 4, "hang: only the feet collide");
    assert_agreement("hang", &m, 0.88);
    assert_eq!(m.unconverged_in_simulation, 0);
    assert_fewer_sweeps("hang", &m, 2.0, 3.0);
}

#[test]
fn drop() {
    let m = experiment("drop", 3000, true);
    assert!(m.max_contacts > 4 && m.max_contacts <= 8, "drop: feet and torso collide ({} contacts)", m.max_contacts);
    assert_agreement("drop", &m, 0.78);
    assert_fewer_sweeps("drop", &m, 1.4, 2.2);
}

#[test]
fn random() {
    let m = experiment("random", 5000, false);
    // PGS converges to 1e-12 in fewer steps here: the torso sliding on four corners. The
    // fraction follows the (chaotic) trajectory: 78 % since the midpoint bias sees the last
    // step's contacts (2026-11-26), just above 80 % before; the statistics below use the
    // converged reference steps only
    assert_converged_reference("random", &m, 0.75);
    // the impulses on the four torso corners are not unique: compare their effect on the motion
    let no_slide = fraction_below(&select(&m, &m.rel_g, &[false]), 1e-3);
    assert!(no_slide >= 0.95, "random: without sliding contacts only {:.2} % agree to 1e-3 in ‖·‖_G", 100.0 * no_slide);
    let all = fraction_below(&select(&m, &m.rel, &[false, true]), 1e-3);
    assert!(all >= 0.12, "random: the paper's statistic fell to {:.2} %", 100.0 * all);
    // in about 1 % of the steps the bisection stops at its 200-sweep cap (contacts switching
    // between open and sticking on strongly coupled blocks, see BENCHMARKS.md)
    assert!((m.unconverged_in_simulation as f64) < 0.02 * m.rel.len() as f64, "random: {} steps at the sweep cap", m.unconverged_in_simulation);
}
