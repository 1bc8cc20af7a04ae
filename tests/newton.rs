//! The non-smooth Newton method (`solver: {kind: newton}`) in the engine: the paper's free-fall
//! drag under its literal preset and none under ours, the incline at the paper's angle, the
//! heavy stack that the iterative solvers lose, resting forces, and the default scene. The
//! method also runs the shared conformance suite (`tests/conformance.rs`), the allocation test
//! and the registry checks; the iteration's unit tests (NCP values, the friction compliance
//! table, the conjugate residual, the scalar example) are in `src/contact/newton/core.rs`.

mod common;

use common::*;
use contact_sim::contact::SolverConfig;
use contact_sim::sim::Simulation;

const G: f64 = 9.81;

fn newton(yaml_params: &str) -> SolverConfig {
    serde_yaml::from_str(&format!("{{kind: newton, {yaml_params}}}")).unwrap()
}

/// A body falling freely for 1 s at the paper's 120 Hz. The paper's literal start (u⁰ = 0,
/// damped step t = 0.75) keeps only 1 − 0.25^N of the velocity each step: with N = 4 it reaches
/// 7.813 m/s instead of 9.81 m/s (N = 8: 9.801 m/s). The default preset starts from the
/// unconstrained velocity and falls at exactly g t.
#[test]
fn free_fall_shows_the_paper_preset_drag_and_none_in_the_default() {
    let yaml = "timestep_s: 0.008333333333333333\nobjects:\n  - {name: ball, shape: {type: sphere, radius: 0.1}, mass_kg: 1.0, position: [0, 0, 100.0]}\n";
    let fall = |cfg: SolverConfig| {
        let mut sim = Simulation::from_scene(&scene(yaml), Some(&cfg));
        for _ in 0..120 {
            sim.step();
        }
        -object_velocity(&sim, "ball").z
    };
    let paper4 = fall(newton("preset: paper, max_iterations: 4"));
    let paper8 = fall(newton("preset: paper, max_iterations: 8"));
    let ours = fall(newton(""));
    println!("v(1 s): paper N=4 {paper4:.4} m/s, paper N=8 {paper8:.4} m/s, default {ours:.6} m/s");
    assert!((paper4 - 7.813).abs() < 1e-3, "paper preset, N = 4: {paper4}");
    assert!((paper8 - 9.801).abs() < 1e-3, "paper preset, N = 8: {paper8}");
    assert!((ours - G).abs() < 1e-9, "default preset: {ours}");
}

/// The paper's incline (30°): a box with μ = 0.5 (< tan 30° = 0.577) slides with
/// a = g (sin θ − μ cos θ), so v(1 s) = 0.657145 m/s; with μ = 0.6 it sticks, and the normal
/// force is m g cos θ, the friction force m g sin θ.
#[test]
fn incline_at_thirty_degrees_slides_and_sticks_at_tan_theta() {
    let theta = 30f64.to_radians();
    for (mu, slides) in [(0.5, true), (0.6, false)] {
        let (half, m) = (0.1, 2.0);
        let yaml = format!(
            "timestep_s: 0.001\nground: {{incline_deg: 30.0}}\nmaterials: {{default: {{friction: {mu}}}}}\nobjects:\n  - {{name: box, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass_kg: {m}, position: [{}, 0.0, {}], rpy: [0.0, {theta}, 0.0]}}\n",
            half * theta.sin(),
            half * theta.cos()
        );
        let mut sim = common::sim(&yaml, "newton");
        let p0 = object_position(&sim, "box");
        let mut unconverged = 0;
        while sim.state.time_s < 1.0 - 1e-9 {
            unconverged += usize::from(!sim.step().solve.converged);
        }
        let v = object_velocity(&sim, "box").norm();
        let moved = (object_position(&sim, "box") - p0).norm();
        let f = contact_force_on_tree(&sim, object_tree(&sim, "box"));
        // normal and friction are orthogonal: split |F| with the analytic normal m g cos θ
        let normal = m * G * theta.cos();
        let tangential = (f.norm().powi(2) - normal * normal).max(0.0).sqrt();
        println!("μ = {mu}: v(1 s) = {v:.6} m/s, moved {moved:.6} m, |F| = {:.4} N, unconverged steps {unconverged}", f.norm());
        if slides {
            let want = G * (theta.sin() - mu * theta.cos());
            assert!((v - want).abs() < 2e-3 * want, "v(1 s) = {v}, want {want}");
            assert!((tangential - mu * normal).abs() < 1e-3 * normal, "friction {tangential} N, want μ N = {}", mu * normal);
        } else {
            assert!(v < 1e-6 && moved < 1e-5, "sticks: v = {v}, moved {moved}");
            // the residual tolerance (1e-6 m/s) bounds the impulse error to about m · 1e-6 m/s
            assert!((f.norm() - m * G).abs() < 1e-4 * m * G, "contact force {} N vs m g", f.norm());
            assert!((tangential - m * G * theta.sin()).abs() < 1e-3 * m * G, "friction {tangential} N vs m g sin θ");
        }
    }
}

/// Resting contact carries the weight: a box on the ground (4 corners), a box on a box.
#[test]
fn resting_boxes_carry_their_weight() {
    let yaml = "timestep_s: 0.001\nmaterials: {default: {friction: 0.6}}\nobjects:\n  - {name: low, shape: {type: box, size: [0.3, 0.3, 0.2]}, mass_kg: 3.0, position: [0, 0, 0.1]}\n  - {name: high, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 2.0, position: [0, 0, 0.3]}\n";
    let mut sim = common::sim(yaml, "newton");
    while sim.state.time_s < 1.0 {
        assert!(sim.step().solve.converged, "t = {}", sim.state.time_s);
    }
    let low = contact_force_on_tree(&sim, object_tree(&sim, "low"));
    let high = contact_force_on_tree(&sim, object_tree(&sim, "high"));
    // net contact force on each body balances its weight, to the impulse error that the residual
    // tolerance (1e-6 m/s) allows
    assert!((low.z - 3.0 * G).abs() < 1e-3 * 3.0 * G, "low: {low:?}");
    assert!((high.z - 2.0 * G).abs() < 1e-3 * 2.0 * G, "high: {high:?}");
    assert!(low.x.abs() + low.y.abs() + high.x.abs() + high.y.abs() < 1e-6, "friction on resting boxes: {low:?} {high:?}");
    assert!((object_position(&sim, "high").z - 0.3).abs() < 1e-5);
}

/// The heavy stack (five boxes, ×8 mass per level, 4096:1, heaviest on top) over 5 s: Newton
/// with the effective-mass complementarity scale keeps every contact within 1 mm with no
/// unconverged step, where PGS and per-contact bisection at their defaults, run on the same
/// scene here, let it sink. Prints all three.
#[test]
fn heavy_stack_stands_under_newton_where_the_iterative_solvers_sink() {
    assert_heavy_stack_stands_where_iterative_solvers_sink("newton");
}

/// The same heavy stack under the paper preset (cold start, 6 damped Newton iterations of 40
/// conjugate-residual iterations) and the paper's ablations of the complementarity scale (its
/// Fig. 17): the effective mass keeps the stack standing; `r = 1` (no scaling) blows it apart
/// within 1 s.
#[test]
fn effective_mass_scaling_holds_the_heavy_stack_where_identity_scaling_fails() {
    let scene = scene_file("config/examples/box_stack_heavy.yaml");
    let mut results = Vec::new();
    for scale in ["effective_mass", "global", "identity"] {
        let cfg = newton(&format!("preset: paper, complementarity_scale: {scale}"));
        let mut sim = Simulation::from_scene(&scene, Some(&cfg));
        let mut worst: f64 = 0.0;
        while sim.state.time_s < 1.0 {
            let rep = sim.step();
            worst = worst.max(rep.max_penetration_m);
            if rep.failure_cause().is_some() {
                worst = f64::INFINITY;
                break;
            }
        }
        let top = object_position(&sim, "box4");
        println!("{scale:15}: deepest penetration {:.4} mm, top box at {top:?}", worst * 1e3);
        results.push((worst, (top - contact_sim::math::Vec3::new(0.0, 0.0, 0.9)).norm()));
    }
    assert!(results[0].0 < 1e-3 && results[0].1 < 1e-3, "effective mass: {results:?}");
    assert!(results[2].0 > 0.1 || results[2].1 > 0.1, "identity scaling was expected to fail: {results:?}");
}

/// The default scene (quadruped standing, crouching and rising; arm pushing a box) under Newton
/// follows the same trajectory as under PGS: after 4 s the box is within 1 mm of PGS's pose and
/// the quadruped's contact force within 0.1 % of PGS's; no step fails and no contact penetrates
/// 1 mm.
#[test]
fn default_scene_runs_under_newton_like_under_pgs() {
    let scene = scene_file("config/default.yaml");
    let mut ends = Vec::new();
    for solver in ["newton", "pgs"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        let (mut deepest, mut unconverged, mut steps): (f64, usize, usize) = (0.0, 0, 0);
        while sim.state.time_s < 4.0 {
            let rep = sim.step();
            assert!(rep.failure_cause().is_none(), "{solver}: step failed at t = {}", sim.state.time_s);
            deepest = deepest.max(rep.max_penetration_m);
            unconverged += usize::from(!rep.solve.converged);
            steps += 1;
        }
        let f = contact_force_on_tree(&sim, 0);
        let b = object_position(&sim, "box");
        println!("{solver}: box at ({:.5}, {:.5}, {:.5}) m, deepest {:.3} mm, unconverged {unconverged}/{steps}, quadruped contact force {:.3} N", b.x, b.y, b.z, deepest * 1e3, f.z);
        assert!(deepest < 1e-3, "{solver}: penetration {deepest} m");
        ends.push((b, f.z));
    }
    assert!((ends[0].0 - ends[1].0).norm() < 1e-3, "box: newton {:?} vs pgs {:?}", ends[0].0, ends[1].0);
    assert!((ends[0].1 - ends[1].1).abs() < 1e-3 * ends[1].1, "quadruped: newton {} N vs pgs {} N", ends[0].1, ends[1].1);
}
