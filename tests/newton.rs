//! The non-smooth Newton method (`solver: {kind: newton}`) in the engine: the paper's free-fall
//! drag under its literal preset and none under ours, the incline at the paper's angle, the
//! heavy stack that the iterative solvers lose, resting forces, and the default scene. The
//! method also runs the shared conformance suite (`tests/conformance.rs`), the allocation test
//! and the registry checks; the iteration's unit tests (NCP values, the friction compliance
//! table, the conjugate residual, the scalar example) are in `src/contact/newton/core/tests.rs`.


use crate::common::*;
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
        let mut sim = crate::common::sim(&yaml, "newton");
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
            // the residual tolerance (1e-6 m/s per direction) bounds the step's impulse error to
            // √3 · m · 1e-6 m/s, a force error of √3 · 1e-6 / (g h) = 1.77e-4 of m g at h = 1 ms
            assert!((f.norm() - m * G).abs() < 1.8e-4 * m * G, "contact force {} N vs m g", f.norm());
            assert!((tangential - m * G * theta.sin()).abs() < 1e-3 * m * G, "friction {tangential} N vs m g sin θ");
        }
    }
}

/// Resting contact carries the weight: a box on the ground (4 corners), a box on a box.
#[test]
fn resting_boxes_carry_their_weight() {
    let yaml = "timestep_s: 0.001\nmaterials: {default: {friction: 0.6}}\nobjects:\n  - {name: low, shape: {type: box, size: [0.3, 0.3, 0.2]}, mass_kg: 3.0, position: [0, 0, 0.1]}\n  - {name: high, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 2.0, position: [0, 0, 0.3]}\n";
    let mut sim = crate::common::sim(yaml, "newton");
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

/// The same heavy stack under the paper preset (cold start, 6 damped Newton iterations of a fixed
/// number of conjugate-residual iterations) and the paper's ablation of the complementarity scale
/// (its Fig. 17), over 1 s at seven conjugate-residual budgets (34, 36, …, 46 iterations): the
/// effective mass keeps the stack standing (top box and every contact within 1 mm) at five of
/// them at least; `r = 1` (no scaling) blows it apart at every one. The paper's scheme has no
/// convergence test and no safeguard, so whether one step of a 1 s run diverges is chaotic in the
/// budget (measured: the effective mass blew up at 38 and 40 iterations, held at the other five;
/// before the collision stage stopped reporting duplicate points, at 44 only): one budget
/// alone is a coin toss, the count over seven is not.
#[test]
fn effective_mass_scaling_holds_the_heavy_stack_where_identity_scaling_fails() {
    let scene = scene_file("config/examples/box_stack_heavy.yaml");
    let budgets = [34, 36, 38, 40, 42, 44, 46];
    let mut standing = [0usize; 2];
    for (k, scale) in ["effective_mass", "identity"].iter().enumerate() {
        for budget in budgets {
            let cfg = newton(&format!("preset: paper, complementarity_scale: {scale}, linear_iterations: {budget}"));
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
            let off = (top - contact_sim::math::Vec3::new(0.0, 0.0, 0.9)).norm();
            println!("{scale:15} {budget} CR iterations: deepest penetration {:.4} mm, top box {:.4} mm off", worst * 1e3, off * 1e3);
            standing[k] += usize::from(worst < 1e-3 && off < 1e-3);
        }
    }
    assert!(standing[0] >= 5, "effective mass held the stack at {} of {} budgets", standing[0], budgets.len());
    assert!(standing[1] == 0, "identity scaling was expected to fail at every budget, held at {}", standing[1]);
}

/// Steps `sim` to `t_end_s` (s), asserting that no step fails; returns the deepest penetration
/// (m), the number of unconverged steps, the number of steps and the worst residual of the
/// unconverged ones (m/s).
fn run_until(sim: &mut Simulation, solver: &str, t_end_s: f64) -> (f64, usize, usize, f64) {
    let (mut deepest, mut unconverged, mut steps, mut worst_residual): (f64, usize, usize, f64) = (0.0, 0, 0, 0.0);
    while sim.state.time_s < t_end_s - 1e-9 {
        let rep = sim.step();
        assert!(rep.failure_cause().is_none(), "{solver}: step failed at t = {}", sim.state.time_s);
        deepest = deepest.max(rep.max_penetration_m);
        if !rep.solve.converged {
            unconverged += 1;
            worst_residual = worst_residual.max(rep.solve.residual);
        }
        steps += 1;
    }
    (deepest, unconverged, steps, worst_residual)
}

/// The default scene (quadruped standing, crouching and rising; arm pushing a box) under Newton
/// follows the same trajectory as under PGS: after 6 s (the push ends at 4.5 s, then the arm
/// lifts away) the box is within 1 mm of PGS's pose and the quadruped's contact force within
/// 0.1 % of PGS's; no step fails and no contact penetrates 1 mm. Newton at its default (strict,
/// 1e-6 m/s) tolerance converges in every one of the 6 000 steps: the gripper's redundant
/// contacts on the sliding box are what the exact Jacobian (`jacobian: exact`) fixed (246 of
/// 4 000 steps unconverged with the frozen friction compliance), and the few steps where the
/// exact iteration still stalls (7 of 6 000, at up to 1.4e-4 m/s, before the projected
/// Gauss–Seidel rescue; docs/newton.md, "The exact Jacobian") are what the rescue fixed.
#[test]
fn default_scene_runs_under_newton_like_under_pgs() {
    let scene = scene_file("config/default.yaml");
    let mut ends = Vec::new();
    for solver in ["newton", "pgs"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        let (deepest, unconverged, steps, worst_residual) = run_until(&mut sim, solver, 6.0);
        let f = contact_force_on_tree(&sim, 0);
        let b = object_position(&sim, "box");
        println!(
            "{solver}: box at ({:.5}, {:.5}, {:.5}) m, deepest {:.3} mm, unconverged {unconverged}/{steps} (worst residual {worst_residual:.1e}), quadruped contact force {:.3} N",
            b.x,
            b.y,
            b.z,
            deepest * 1e3,
            f.z
        );
        assert!(deepest < 1e-3, "{solver}: penetration {deepest} m");
        if solver == "newton" {
            assert_eq!(unconverged, 0, "newton: {unconverged} of {steps} steps unconverged (worst residual {worst_residual} m/s)");
        }
        ends.push((b, f.z));
    }
    assert!((ends[0].0 - ends[1].0).norm() < 1e-3, "box: newton {:?} vs pgs {:?}", ends[0].0, ends[1].0);
    assert!((ends[0].1 - ends[1].1).abs() < 1e-3 * ends[1].1, "quadruped: newton {} N vs pgs {} N", ends[0].1, ends[1].1);
}

/// `arm_push_box.yaml` (the default scene's arm and box alone, the scene the stalls were traced
/// on: the gripper's fingers and the box's floor contacts form a redundant set, 42 rows on
/// 15 degrees of freedom): over its 7 s every Newton step converges to the strict default
/// tolerance (before the rescue: 8–9 of 7 000 at up to 1.4e-4 m/s), no contact penetrates
/// 1 mm, and the box ends within 1 mm of where PGS pushes it.
#[test]
fn arm_push_box_converges_in_every_step_under_newton() {
    let scene = scene_file("config/examples/arm_push_box.yaml");
    let mut ends = Vec::new();
    for solver in ["newton", "pgs"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        let (deepest, unconverged, steps, worst_residual) = run_until(&mut sim, solver, 7.0);
        let b = object_position(&sim, "box");
        println!("{solver}: box at ({:.5}, {:.5}, {:.5}) m, deepest {:.4} mm, unconverged {unconverged}/{steps} (worst residual {worst_residual:.1e})", b.x, b.y, b.z, deepest * 1e3);
        assert!(deepest < 1e-3, "{solver}: penetration {deepest} m");
        if solver == "newton" {
            assert_eq!(unconverged, 0, "newton: {unconverged} of {steps} steps unconverged (worst residual {worst_residual} m/s)");
        }
        ends.push(b);
    }
    assert!((ends[0] - ends[1]).norm() < 1e-3, "box: newton {:?} vs pgs {:?}", ends[0], ends[1]);
}

// ---------------------------------------------------------------------------------------------
// Deformable bodies under the Newton scheme
// ---------------------------------------------------------------------------------------------

/// Writes `mesh` as a Gmsh file named after the test and returns its path.
fn mesh_file(name: &str, mesh: &contact_sim::fem::TetMesh) -> String {
    crate::common::mesh_file(&format!("newton_{name}.msh"), mesh).display().to_string()
}

/// Net ground force on the deformables (N, world z): the normal impulses of their ground
/// contacts over h.
fn fem_ground_force(sim: &Simulation) -> f64 {
    let f = sim.workspace.fem.as_ref().unwrap();
    let h = sim.model.timestep_s;
    f.contacts.iter().filter(|c| c.body.is_none() && c.other_node.is_none()).map(|c| (c.frame.transpose() * nalgebra::Vector3::new(c.impulse[0], c.impulse[1], c.impulse[2])).z / h).sum()
}

/// The force of the deformables' contacts on rigid body `body` (N, world).
fn fem_force_on_body(sim: &Simulation, body: usize) -> nalgebra::Vector3<f64> {
    let f = sim.workspace.fem.as_ref().unwrap();
    let h = sim.model.timestep_s;
    f.contacts.iter().filter(|c| c.body == Some(body)).map(|c| -(c.frame.transpose() * nalgebra::Vector3::new(c.impulse[0], c.impulse[1], c.impulse[2])) / h).sum()
}

/// The scene of a soft ball (r = 40 mm, the paper's tomato material: Y = 0.1 MPa, ν = 0.45,
/// ρ = 1000 kg/m³, μ = 0.75) resting on the ground at 100 Hz, with `model` its elastic law.
fn soft_ball_yaml(model: &str, solver: &str) -> String {
    let file = mesh_file("ball4", &contact_sim::fem::TetMesh::ball(0.04, 4));
    format!("timestep_s: 0.01\nsolver: {{kind: newton, {solver}}}\ndeformables:\n  - name: ball\n    mesh: {file}\n    position: [0, 0, 0.0405]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.45, model: {model}}}\n    friction: 0.75\n")
}

/// A soft ball dropped 0.5 mm onto the ground settles and carries its weight: once at rest
/// (after 2 s), the net ground force of every step is m g within 1 % (measured 2e-5), with each
/// elastic law under the default primal form. The dual form (`fem_formulation: dual_rows`)
/// refuses the Neo-Hookean laws with a clear error (its rows diverge, docs/newton.md).
#[test]
fn soft_ball_resting_on_the_ground_carries_its_weight() {
    for law in ["neo_hookean", "stable_neo_hookean"] {
        let err = contact_sim::sim::Simulation::try_from_scene(&scene(&soft_ball_yaml(law, "fem_formulation: dual_rows")), None).err().expect("the dual form refuses it");
        assert!(err.to_string().contains("deformables[0] ('ball')") && err.to_string().contains(&format!("'{law}'")), "{err}");
    }
    for model in ["corotational", "neo_hookean", "stable_neo_hookean"] {
        let mut sim = Simulation::from_scene(&scene(&soft_ball_yaml(model, "")), None);
        let weight = sim.model.deformables[0].total_mass() * G;
        let (mut worst, mut its, mut unconverged) = (0.0f64, 0u64, 0);
        for k in 0..250 {
            let r = sim.step();
            its += u64::from(r.solve.iterations);
            unconverged += usize::from(!r.solve.converged);
            if k >= 200 {
                worst = worst.max((fem_ground_force(&sim) / weight - 1.0).abs());
            }
        }
        let f = sim.workspace.fem.as_ref().unwrap();
        let penetration = f.contacts.iter().map(|c| -c.distance).fold(0.0, f64::max);
        println!("{model}: worst |F/mg − 1| over 2–2.5 s {worst:.2e}, {} ground contacts, penetration {:.3} mm, mean Newton iterations {:.1}, unconverged steps {unconverged}", f.contacts.len(), 1e3 * penetration, its as f64 / 250.0);
        assert!(worst < 0.01, "{model}: ground force off m g by {:.2} %", 100.0 * worst);
        assert!(penetration < 1e-4, "{model}: penetration {penetration} m");
        assert_eq!(unconverged, 0, "{model}: steps above the tolerance");
    }
}

/// A stiff ball (r = 40 mm, Y = 1 MPa, ν = 0.35, ρ = 1100 kg/m³: the material of
/// `config/examples/fem_ball_rest.yaml` on a coarser mesh of 750 tets) dropped 0.5 mm onto the
/// ground at 100 Hz under the default preset (with its safeguarded warm start):
/// from 1 s to 1.5 s the mean net ground force is m g within 1 %, every step's within 10 %, and
/// no node penetrates the ground by more than 0.1 mm.
#[test]
fn stiff_ball_resting_on_the_ground_carries_its_weight() {
    let file = mesh_file("ball5", &contact_sim::fem::TetMesh::ball(0.04, 5));
    let yaml = format!("timestep_s: 0.01\nsolver: {{kind: newton}}\ndeformables:\n  - name: ball\n    mesh: {file}\n    position: [0, 0, 0.0405]\n    material: {{density_kg_m3: 1100, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35}}\n    friction: 0.6\n");
    let mut sim = Simulation::from_scene(&scene(&yaml), None);
    let weight = sim.model.deformables[0].total_mass() * G;
    let (mut forces, mut penetration, mut unconverged) = (vec![], 0.0f64, 0);
    for k in 0..150 {
        let r = sim.step();
        unconverged += usize::from(!r.solve.converged);
        let f = sim.workspace.fem.as_ref().unwrap();
        penetration = penetration.max(f.contacts.iter().map(|c| -c.distance).fold(0.0, f64::max));
        if k >= 100 {
            forces.push(fem_ground_force(&sim) / weight);
        }
    }
    let mean = forces.iter().sum::<f64>() / forces.len() as f64;
    let worst = forces.iter().map(|f| (f - 1.0).abs()).fold(0.0, f64::max);
    println!("stiff ball: mean F/mg over 1–1.5 s {mean:.5}, worst step {worst:.2e}, penetration {:.4} mm, unconverged steps {unconverged} of 150", 1e3 * penetration);
    assert!((mean - 1.0).abs() < 0.01, "mean ground force {mean} m g");
    assert!(worst < 0.1, "a step's ground force off m g by {:.1} %", 100.0 * worst);
    assert!(penetration < 1e-4, "penetration {penetration} m");
    assert_eq!(unconverged, 0, "steps above the tolerance");
}

/// Two soft balls collide head-on without gravity (node–node contacts). In the primal form (the
/// default) the elastic forces of every element sum to zero and every node–node impulse acts
/// equally and oppositely on its two nodes, so the nodes' total momentum is kept to round-off
/// (measured 1.1e-12 relative; asserted 1e-11). In the paper's dual form: every elastic row's
/// coefficients sum to zero and every node–node row acts equally and oppositely on its two
/// nodes, so each full Newton update keeps the nodes' total momentum: without the geometric
/// stiffness it is conserved to round-off (1e-12 relative); the geometric stiffness adds mass to
/// the Newton matrix only, which leaves a momentum residual in each update; the stopping test
/// measures it (paper §3.6: rows and momentum), so the drift stays below 1e-6 relative
/// (measured 4e-8; 1.75e-5 when the test measured the rows only). The balls bounce apart.
#[test]
fn two_soft_balls_colliding_conserve_momentum() {
    let file = mesh_file("ball3", &contact_sim::fem::TetMesh::ball(0.03, 3));
    let body = |name: &str, x: f64, v: f64| format!("  - name: {name}\n    mesh: {file}\n    position: [{x}, 0, 0.003]\n    linear_velocity: [{v}, 0, 0]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.45}}\n    friction: 0.5\n");
    for (params, bound) in [("", 1e-11), ("fem_formulation: dual_rows, geometric_stiffness: false", 1e-12), ("fem_formulation: dual_rows", 1e-6)] {
        let yaml = format!("timestep_s: 0.005\ngravity: [0, 0, 0]\nground: {{enabled: false}}\nsolver: {{kind: newton, {params}}}\ncontact: {{deformable_contact: {{enabled: true}}}}\ndeformables:\n{}{}", body("a", -0.035, 0.5), body("b", 0.035, -0.2));
        let mut sim = Simulation::from_scene(&scene(&yaml), None);
        let momentum = |sim: &Simulation| contact_sim::fem::fem_momentum(&sim.model.deformables, &sim.state.fem_v);
        let p0 = momentum(&sim);
        let mut touched = 0;
        let mut drift = 0.0f64;
        for _ in 0..60 {
            sim.step();
            touched += sim.workspace.fem.as_ref().unwrap().contacts.iter().filter(|c| c.other_node.is_some()).count();
            drift = drift.max((momentum(&sim) - p0).norm() / p0.norm());
        }
        let (na, nb) = (sim.model.deformables[0].num_nodes(), sim.model.deformables[1].num_nodes());
        let mean_vx = |start: usize, n: usize| (start..start + n).map(|g| sim.state.fem_v[3 * g]).sum::<f64>() / n as f64;
        let (va, vb) = (mean_vx(0, na), mean_vx(na, nb));
        println!("[{params}] p0 = {:.6} kg·m/s, largest relative drift {drift:.2e}, node–node contact rows {touched}, after: v_a {va:.4} m/s, v_b {vb:.4} m/s", p0.x);
        assert!(touched > 0, "the balls touched");
        assert!(drift < bound, "[{params}] momentum drift {drift:e}");
        assert!(va < vb, "they separate: v_a {va}, v_b {vb}");
    }
}

/// A cantilever (0.2 × 0.04 × 0.04 m, 10 × 2 × 2 cells, Y = 5 MPa and the stiff Y = 100 MPa,
/// `(h √(Y/ρ) / ℓ)² ≈ 10⁵` at 100 Hz with 2 cm elements, ν = 0, ρ = 1000 kg/m³) clamped
/// at x = 0 sags under gravity and settles within 1 s (backward Euler's damping at 100 Hz): the
/// Newton scheme's co-rotational rows give the tip deflection of a linear solve `K u = f` on the
/// same mesh (the element stiffness the V-FPI assembly uses, with lumped loads) within 1 %
/// (measured 0.008 %); linear tetrahedra lock, so both are well short of Euler–Bernoulli's
/// `ρ g A L⁴ / (8 Y I)`.
#[test]
fn cantilever_tip_deflection_matches_the_same_mesh_linear_solve() {
    for y in [5.0e6, 1.0e8] {
        cantilever_case(y);
    }
}

fn cantilever_case(y: f64) {
    use contact_sim::fem::TetMesh;
    let (l, a, rho) = (0.2f64, 0.04f64, 1000.0);
    let mesh = TetMesh::box_grid([l, a, a], [10, 2, 2]);
    let file = mesh_file("beam", &mesh);
    let yaml = format!("timestep_s: 0.01\nground: {{enabled: false}}\nsolver: {{kind: newton}}\ndeformables:\n  - name: beam\n    mesh: {file}\n    material: {{density_kg_m3: {rho}, youngs_modulus_pa: {y}, poisson_ratio: 0.0}}\n    attachments: [{{box_min: [-1, -1, -1], box_max: [1.0e-6, 1, 1], to: world}}]\n");
    let mut sim = Simulation::from_scene(&scene(&yaml), None);
    for _ in 0..100 {
        sim.step();
    }
    let body = &sim.model.deformables[0];
    let tip: Vec<usize> = (0..body.num_nodes()).filter(|&i| (body.rest[i].x - l).abs() < 1e-9).collect();
    let newton = -tip.iter().map(|&i| sim.state.fem_x[3 * i + 2] - body.rest[i].z).sum::<f64>() / tip.len() as f64;
    // the same-mesh linear reference
    let n = 3 * body.num_nodes();
    let mut k = nalgebra::DMatrix::<f64>::zeros(n, n);
    let mut f = nalgebra::DVector::<f64>::zeros(n);
    for (e, t) in body.tets.iter().enumerate() {
        for ka in 0..4 {
            f[3 * t[ka] + 2] -= rho * G * body.volume[e] / 4.0;
            for kb in 0..4 {
                let blk = body.stiffness_block(e, ka, kb);
                for r in 0..3 {
                    for c in 0..3 {
                        k[(3 * t[ka] + r, 3 * t[kb] + c)] += blk[(r, c)];
                    }
                }
            }
        }
    }
    let free: Vec<usize> = (0..n).filter(|&d| body.rest[d / 3].x > 1e-6).collect();
    let kf = k.select_rows(&free).select_columns(&free);
    let ff = nalgebra::DVector::from_iterator(free.len(), free.iter().map(|&d| f[d]));
    let uf = kf.cholesky().expect("K is SPD on the free DOFs").solve(&ff);
    let mut u = vec![0.0; n];
    for (j, &d) in free.iter().enumerate() {
        u[d] = uf[j];
    }
    let reference = -tip.iter().map(|&i| u[3 * i + 2]).sum::<f64>() / tip.len() as f64;
    let euler_bernoulli = rho * G * a * a * l.powi(4) / (8.0 * y * a.powi(4) / 12.0);
    println!("Y = {y:e} Pa: tip deflection: newton {newton:.6e} m, same-mesh linear {reference:.6e} m ({:.3} %), Euler–Bernoulli {euler_bernoulli:.6e} m", 100.0 * (newton / reference - 1.0));
    assert!((newton / reference - 1.0).abs() < 0.01, "newton {newton} vs linear {reference}");
    assert!(reference < euler_bernoulli && reference > 0.3 * euler_bernoulli);
}

/// Two-way coupling in one solve: a 0.5 kg rigid box rests on a soft block on the ground. The
/// block carries the box's weight through node–body contact rows, and the ground carries both
/// weights, `(m_box + m_block) g`: both within 1 % in the mean over the last 0.5 s of 2.5 s, and
/// every single step's ground force within 1 % (primal form: measured below 0.005 %; the paper's
/// dual rows left single steps up to 4.9 % off).
#[test]
fn rigid_box_resting_on_a_soft_block_loads_the_ground_with_both_weights() {
    let file = mesh_file("block", &contact_sim::fem::TetMesh::box_grid([0.1, 0.1, 0.04], [5, 5, 2]));
    let yaml = format!("timestep_s: 0.01\nsolver: {{kind: newton}}\nobjects:\n  - {{name: box, shape: {{type: box, size: [0.06, 0.06, 0.03]}}, mass_kg: 0.5, position: [0.05, 0.05, 0.0551]}}\ndeformables:\n  - name: block\n    mesh: {file}\n    position: [0, 0, 0.0002]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.4}}\n    friction: 0.8\n");
    let mut sim = Simulation::from_scene(&scene(&yaml), None);
    let weight = (0.5 + sim.model.deformables[0].total_mass()) * G;
    let box_body = sim.model.trees[object_tree(&sim, "box")].body_start;
    let (mut ground, mut on_box, mut worst) = (0.0, 0.0, 0.0f64);
    for k in 0..250 {
        sim.step();
        if k >= 200 {
            let f = fem_ground_force(&sim);
            ground += f / 50.0;
            on_box += fem_force_on_body(&sim, box_body).z / 50.0;
            worst = worst.max((f / weight - 1.0).abs());
        }
    }
    let z = object_position(&sim, "box").z;
    println!("mean ground force {ground:.4} N (total weight {weight:.4} N, worst single step {:.2} %); mean force on the box {on_box:.4} N (m g = {:.4} N); box centre z {z:.5} m", 100.0 * worst, 0.5 * G);
    assert!((ground / weight - 1.0).abs() < 0.01, "ground force {ground} N vs {weight} N");
    assert!(worst < 0.01, "a single step's ground force off by {:.2} %", 100.0 * worst);
    assert!((on_box - 0.5 * G).abs() < 0.01 * 0.5 * G, "the block carries the box: {on_box} N");
    assert!(z > 0.0545 && z < 0.0556, "box rests on the block: z = {z}");
}

/// The paper's tomato scene (its Fig. 1) on our gripper and a spring scale
/// (`config/examples/newton_tomato_scale.yaml`): a soft tomato (Y = 0.1 MPa, ν = 0.45,
/// ρ = 1000 kg/m³, μ = 0.75 between the pads and the tomato; 384 tets) lies on the scale's pan,
/// the fingers squeeze it with 4 N each, lift it 30 mm, hold it and set it back down.
/// - At rest on the scale (before the grasp and after the release) the scale's reading
///   `W = −k q − m_pan g` (a 2 000 N/m spring) equals the tomato's weight within 1 %.
/// - While held, the wrist F/T sensor (its frame has the world's axes) reads
///   `F_z = −(m_hand + 2 m_finger) g − m_tomato g` within 1 % of the tomato's weight, the tomato
///   is off the pan (its lowest node more than 20 mm above the pan's top) and no node
///   penetrates a pad, the pan or the ground by more than 1 mm (measured 0.44 mm, in the step
///   the fingers strike it).
/// - Every one of the 481 steps converges (rows and momentum within 1e-6 m/s; the primal FEM
///   form; with the paper's dual rows 471 did not).
#[test]
fn soft_tomato_is_weighed_by_the_scale_and_by_the_wrist_sensor() {
    let mut sim = Simulation::from_scene(&scene_file("config/examples/newton_tomato_scale.yaml"), None);
    let weight = sim.model.deformables[0].total_mass() * G;
    let scale_q = sim.model.bodies[sim.model.joint_body("scale_joint").unwrap()].joint.q_index;
    let (k_spring, m_pan, m_hand) = (2000.0, 0.5, 0.05 + 2.0 * 0.1);
    let reading = |sim: &Simulation| -k_spring * sim.state.q[scale_q] - m_pan * G;
    // (window start, end, what is averaged) in s
    let (mut on_scale_before, mut held, mut on_scale_after) = (vec![], vec![], vec![]);
    let (mut lowest_held, mut penetration, mut unconverged) = (f64::INFINITY, 0.0f64, 0);
    while sim.state.time_s < 4.0 - 1e-9 {
        let r = sim.step();
        unconverged += usize::from(!r.solve.converged);
        let t = sim.state.time_s;
        let f = sim.workspace.fem.as_ref().unwrap();
        penetration = penetration.max(f.contacts.iter().map(|c| -c.distance).fold(0.0, f64::max));
        if (0.6..0.8).contains(&t) {
            on_scale_before.push(reading(&sim));
        }
        if (2.0..2.6).contains(&t) {
            held.push(-sim.state.sensors[0].ideal[2] - m_hand * G);
            let pan_top = 0.04 + 0.01 + sim.state.q[scale_q];
            let zmin = sim.state.fem_x.chunks(3).map(|p| p[2]).fold(f64::INFINITY, f64::min);
            lowest_held = lowest_held.min(zmin - pan_top);
        }
        if (3.6..4.0).contains(&t) {
            on_scale_after.push(reading(&sim));
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let worst = |v: &[f64]| v.iter().map(|x| (x / weight - 1.0).abs()).fold(0.0, f64::max);
    println!(
        "tomato weight {weight:.4} N: scale before {:.4} N (worst step {:.2e}), wrist while held {:.4} N (worst step {:.2e}), scale after {:.4} N (worst step {:.2e}); lowest node {:.1} mm above the pan while held, penetration {:.3} mm, unconverged steps {unconverged} of {}",
        mean(&on_scale_before), worst(&on_scale_before), mean(&held), worst(&held), mean(&on_scale_after), worst(&on_scale_after), 1e3 * lowest_held, 1e3 * penetration, sim.state.step_count
    );
    for (what, v) in [("scale before the grasp", &on_scale_before), ("wrist sensor while held", &held), ("scale after the release", &on_scale_after)] {
        assert!((mean(v) / weight - 1.0).abs() < 0.01, "{what}: {} N vs the tomato's weight {weight} N", mean(v));
    }
    assert!(lowest_held > 0.02, "the tomato must be lifted off the pan: lowest node {lowest_held} m above it");
    assert!(penetration < 1e-3, "penetration {penetration} m");
    assert_eq!(unconverged, 0, "steps above the tolerance on rows or momentum");
}

/// The arch (`config/examples/newton_arch.yaml`): nine 115 kg voussoirs of a semicircular ring
/// (inner radius 1.0 m, outer 1.3 m), dry joints with μ 0.6, nothing but friction and the
/// thrust line holding them. Under Newton, for the scene's 10 s (5 000 steps of 2 ms): no block
/// moves 1 mm or turns 1 mrad, and the ground carries the arch's weight (the joints' forces
/// cancel in pairs, so the contact forces on all blocks sum to the ground reaction). PGS and
/// bisection run the same scene for comparison (printed, not asserted: they hold it too, closer
/// than Newton, 0.1 µm and 0.5 µm against 0.0005 mm (0.26 mm before the exact iteration's
/// rescue); PGS at a fourteenth of Newton's cost or less,
/// bisection at its sweep cap in nearly every step; BENCHMARKS.md).
#[test]
fn the_arch_stands_for_ten_seconds_without_drift() {
    let scene = scene_file("config/examples/newton_arch.yaml");
    for solver in ["newton", "pgs", "bisection"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        let names: Vec<String> = (0..9).map(|i| format!("v{i}")).collect();
        let start: Vec<_> = names.iter().map(|n| object_position(&sim, n)).collect();
        let rotation = |sim: &Simulation, name: &str| {
            let o = sim.model.objects.iter().find(|o| o.name == name).expect("object");
            let q = &sim.state.q[sim.model.bodies[o.body].joint.q_index..];
            nalgebra::UnitQuaternion::new_normalize(nalgebra::Quaternion::new(q[6], q[3], q[4], q[5]))
        };
        let start_rotation: Vec<_> = names.iter().map(|n| rotation(&sim, n)).collect();
        let (mut unconverged, mut deepest, mut steps) = (0usize, 0.0f64, 0usize);
        while sim.state.time_s < scene.duration_s - 1e-9 {
            let rep = sim.step();
            assert!(rep.failure_cause().is_none(), "{solver}: step failed at t = {}", sim.state.time_s);
            unconverged += usize::from(!rep.solve.converged);
            deepest = deepest.max(rep.max_penetration_m);
            steps += 1;
        }
        let drift = names.iter().zip(&start).map(|(n, p)| (object_position(&sim, n) - p).norm()).fold(0.0, f64::max);
        let turn = names.iter().zip(&start_rotation).map(|(n, r)| rotation(&sim, n).angle_to(r)).fold(0.0, f64::max);
        let weight: f64 = sim.model.bodies.iter().map(|b| b.mass).sum::<f64>() * G;
        let ground = (0..sim.model.trees.len()).map(|t| contact_force_on_tree(&sim, t)).sum::<contact_sim::math::Vec3>();
        println!(
            "{solver}: largest block drift {:.4} mm, largest turn {turn:.2e} rad, ground reaction / weight − 1 = {:.2e} (horizontal {:.2e} N), deepest {:.4} mm, unconverged {unconverged}/{steps}",
            drift * 1e3,
            ground.z / weight - 1.0,
            ground.xy().norm(),
            deepest * 1e3
        );
        if solver == "newton" {
            assert!(drift < 1e-3 && turn < 1e-3, "newton: the arch moved {drift} m / turned {turn} rad");
            assert!((ground.z / weight - 1.0).abs() < 1e-3, "newton: ground reaction {} N vs weight {weight} N", ground.z);
            assert!(ground.xy().norm() < 1e-3 * weight, "newton: net horizontal ground force {} N", ground.xy().norm());
            assert!(deepest < 1e-3, "newton: penetration {deepest} m");
        }
    }
}

/// An unknown `fem_formulation` is refused with an error that names the field and the choices.
#[test]
fn unknown_fem_formulation_is_refused_naming_the_field() {
    let err = serde_yaml::from_str::<SolverConfig>("{kind: newton, fem_formulation: primall}").err().expect("refused").to_string();
    assert!(err.contains("fem_formulation") && err.contains("primall") && err.contains("dual_rows"), "{err}");
    for ok in ["primal", "dual_rows"] {
        assert!(serde_yaml::from_str::<SolverConfig>(&format!("{{kind: newton, fem_formulation: {ok}}}")).is_ok(), "{ok}");
    }
}

/// 130 steps (1.08 s, through the fingers' first contact) of the tomato grasp: every step's
/// joint and node positions and velocities and the wrist sensor's reading as bits, and the most
/// node contacts seen.
fn grasp_trace(sim: &mut Simulation) -> (Vec<u64>, usize) {
    let mut trace: Vec<u64> = vec![];
    let mut contacts = 0;
    for _ in 0..130 {
        sim.step();
        contacts = contacts.max(sim.workspace.fem.as_ref().unwrap().contacts.len());
        let st = &sim.state;
        trace.extend(st.q.iter().chain(st.v.iter()).chain(&st.fem_x).chain(&st.fem_v).chain(st.sensors[0].ideal.iter()).map(|x| x.to_bits()));
    }
    (trace, contacts)
}

/// The primal FEM solve's Delassus matrix is built on the method's own pool with `threads: 2`;
/// every entry is computed by the same operations whatever the thread count, so the tomato
/// grasp (`config/examples/newton_tomato_scale.yaml`, through the first contact of the fingers
/// at 0.8 s) gives bit-identical trajectories with 1 and 2 threads: joint positions and
/// velocities, node positions and velocities, and the wrist sensor.
#[test]
fn tomato_grasp_is_bit_identical_on_one_and_two_threads() {
    let run = |threads: usize| {
        let mut sim = Simulation::from_scene(&scene_file("config/examples/newton_tomato_scale.yaml"), Some(&newton(&format!("threads: {threads}"))));
        grasp_trace(&mut sim)
    };
    let (one, contacts) = run(1);
    let (two, _) = run(2);
    assert!(contacts >= 10, "the fingers touched the tomato: at most {contacts} node contacts");
    assert_eq!(one.len(), two.len());
    let first = one.iter().zip(&two).position(|(a, b)| a != b);
    assert!(first.is_none(), "trajectories differ from entry {first:?}");
}

/// The primal form carries its sparse factor (and the node contacts' warm start) from step to
/// step; a reset must not carry them into the new run: the tomato grasp after `reset` repeats
/// the first run bit for bit, through the fingers' first contact (130 steps, 1.08 s), where the
/// kept factor is in use.
#[test]
fn tomato_grasp_repeats_bit_for_bit_after_a_reset() {
    let mut sim = Simulation::from_scene(&scene_file("config/examples/newton_tomato_scale.yaml"), None);
    let (first, contacts) = grasp_trace(&mut sim);
    sim.reset();
    let (second, _) = grasp_trace(&mut sim);
    assert!(contacts >= 10, "the fingers touched the tomato: at most {contacts} node contacts");
    let at = first.iter().zip(&second).position(|(a, b)| a != b);
    assert!(at.is_none(), "the run after the reset differs from entry {at:?}");
}

/// `config/examples/fem_gripper_ball.yaml` under newton (the primal FEM form): two fingers
/// squeeze a 6 000-tetrahedra soft ball (Y = 0.5 MPa, 0.29 kg) with 5 N each and lift it 50 mm
/// between 0.6 s and 1.2 s. While held (1.5–2 s) the ball is off the ground, the pads' vertical
/// friction carries its weight (mean within 2 % of m g), the fingers stay within their joint
/// limits (0 ≤ q ≤ 45 mm, 0.5 mm allowed for the limit rows' linearisation) and no node sinks
/// more than 3 mm into a pad or the ground.
#[test]
fn soft_ball_is_grasped_and_held_by_the_gripper() {
    let mut sim = Simulation::from_scene(&scene_file("config/examples/fem_gripper_ball.yaml"), Some(&newton("")));
    let weight = sim.model.deformables[0].total_mass() * G;
    let fingers: Vec<usize> = ["finger_left_joint", "finger_right_joint"].iter().map(|j| sim.model.joint_body(j).unwrap()).collect();
    let q_index: Vec<usize> = fingers.iter().map(|&b| sim.model.bodies[b].joint.q_index).collect();
    let (mut carried, mut penetration, mut lowest, mut q_range, mut unconverged) = (vec![], 0.0f64, f64::INFINITY, (f64::INFINITY, f64::NEG_INFINITY), 0);
    while sim.state.time_s < 2.0 - 1e-9 {
        let r = sim.step();
        unconverged += usize::from(!r.solve.converged);
        let f = sim.workspace.fem.as_ref().unwrap();
        penetration = penetration.max(f.contacts.iter().map(|c| -c.distance).fold(0.0, f64::max));
        for &k in &q_index {
            q_range = (q_range.0.min(sim.state.q[k]), q_range.1.max(sim.state.q[k]));
        }
        if sim.state.time_s >= 1.5 {
            // the force of the ball on the pads is −(the pads' force on the ball): up is −z here
            carried.push(-fingers.iter().map(|&b| fem_force_on_body(&sim, b).z).sum::<f64>());
            lowest = lowest.min(sim.state.fem_x.chunks(3).map(|p| p[2]).fold(f64::INFINITY, f64::min));
            assert!(f.contacts.iter().all(|c| c.body.is_some()), "a node touches the ground at t = {}", sim.state.time_s);
        }
    }
    let mean = carried.iter().sum::<f64>() / carried.len() as f64;
    println!(
        "gripper ball: weight {weight:.4} N, pads carry {mean:.4} N (mean over 1.5–2 s), lowest node {:.1} mm above the ground, fingers q in [{:.2}, {:.2}] mm, penetration {:.3} mm, unconverged steps {unconverged} of 200",
        1e3 * lowest, 1e3 * q_range.0, 1e3 * q_range.1, 1e3 * penetration
    );
    assert!((mean / weight - 1.0).abs() < 0.02, "the pads carry {mean} N of the ball's {weight} N");
    assert!(lowest > 0.03, "the ball is lifted: lowest node {lowest} m");
    assert!(q_range.0 > -5e-4 && q_range.1 < 0.045 + 5e-4, "finger travel {q_range:?} m outside [0, 0.045]");
    assert!(penetration < 3e-3, "penetration {penetration} m");
}
