//! Deformable contact: a ball resting on the ground, a gripper lifting it (stick / slip),
//! penetration, V-FPI against PGS, serial vs parallel.


use crate::common::*;
use contact_sim::math::Vec3;
use contact_sim::sim::Simulation;

const G: f64 = 9.81;

/// Net ground / rigid contact force on the deformable nodes (N, world) of the last step
/// (node–node contacts are internal to the deformables and left out).
fn fem_contact_force(sim: &Simulation) -> Vec3 {
    let f = sim.workspace.fem.as_ref().unwrap();
    let dt = sim.model.timestep_s;
    f.contacts.iter().filter(|c| c.other_node.is_none()).map(|c| c.frame.transpose() * Vec3::new(c.impulse[0], c.impulse[1], c.impulse[2]) / dt).sum()
}

/// The last step's deformable contact problem built densely, as an independent reference for
/// the V-FPI: `Gᵀ` (row-major storage of the symmetric `G = J A⁻¹ Jᵀ`, N·s per m/s inverse) and
/// `u_free = J A⁻¹ b + φ` (m/s) with the step's gap / Baumgarte offsets φ.
fn dense_contact_problem(sim: &Simulation) -> (nalgebra::DMatrix<f64>, nalgebra::DVector<f64>) {
    let f = sim.workspace.fem.as_ref().unwrap();
    let dt = sim.model.timestep_s;
    let (erp, slop) = (sim.model.contact.erp, sim.model.contact.slop_m);
    let n = f.system.dim();
    let mut a = nalgebra::DMatrix::<f64>::zeros(n, n);
    for (r, row) in f.system.a.row_iter().enumerate() {
        for (&c, &v) in row.col_indices().iter().zip(row.values()) {
            a[(r, c)] = v;
        }
    }
    let chol = a.cholesky().expect("A is SPD");
    let jt = f.dense_contact_jacobian_t(n);
    let g = jt.transpose() * chol.solve(&jt);
    let mut u = jt.transpose() * chol.solve(&nalgebra::DVector::from_column_slice(&f.system.b));
    for (ci, c) in f.contacts.iter().enumerate() {
        u[3 * ci] += if c.distance >= 0.0 { c.distance / dt } else { -erp * (-c.distance - slop).max(0.0) / dt };
    }
    (g.transpose(), u)
}

#[test]
fn resting_ball_carries_its_weight() {
    let s = scene_file("config/examples/fem_ball_rest.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let m = sim.model.deformables[0].total_mass();
    let mut worst_pen: f64 = 0.0;
    let mut iters = 0;
    let steps = 200;
    for k in 0..steps {
        let r = sim.step();
        let _ = k;
        iters += r.solve.iterations;
        if k > 20 {
            worst_pen = worst_pen.max(r.max_penetration_m);
        }
        if k % 20 == 0 {
            let f = fem_contact_force(&sim);
            println!("t={:.2} contacts={} fz={:.4} (mg={:.4}) pen={:.2e} it={}", sim.state.time_s, r.contacts, f.z, m * G, r.max_penetration_m, r.solve.iterations);
        }
    }
    let f = fem_contact_force(&sim);
    println!("mean iterations {:.1}", iters as f64 / steps as f64);
    assert!((f.z - m * G).abs() < 0.01 * m * G, "normal force {} vs m g {}", f.z, m * G);
    assert!(f.x.hypot(f.y) < 0.01 * m * G, "friction on a resting ball: {f:?}");
    assert!(worst_pen < 5e-4, "penetration {worst_pen} m");
}

#[test]
fn resting_stable_neo_hookean_ball_carries_its_weight() {
    // the shipped resting ball (E = 1 MPa, ν = 0.35, 6 000 tets) with the Stable Neo-Hookean law
    let text = std::fs::read_to_string(repo().join("config/examples/fem_ball_rest.yaml")).unwrap();
    let text = text.replace("material: {density_kg_m3: 1100,", "material: {model: stable_neo_hookean, density_kg_m3: 1100,");
    assert!(text.contains("stable_neo_hookean"));
    let s = contact_sim::config::load_scene_str(&text, &repo().join("config/examples/fem_ball_rest.yaml")).unwrap();
    let mut sim = Simulation::from_scene(&s, None);
    assert_eq!(sim.model.deformables[0].material.model, contact_sim::fem::ElasticModel::StableNeoHookean);
    let m = sim.model.deformables[0].total_mass();
    let (mut worst_pen, mut iters, mut unconverged): (f64, u32, u32) = (0.0, 0, 0);
    let steps = 200;
    for k in 0..steps {
        let r = sim.step();
        assert!(sim.state.is_finite());
        iters += r.solve.iterations as u32;
        unconverged += u32::from(!r.solve.converged);
        if k > 20 {
            worst_pen = worst_pen.max(r.max_penetration_m);
        }
    }
    let f = fem_contact_force(&sim);
    println!("stable Neo-Hookean ball: fz = {:.5} N (m g = {:.5} N), friction {:.2e} N, penetration {worst_pen:.2e} m, mean iterations {:.1}, unconverged steps {unconverged}", f.z, m * G, f.x.hypot(f.y), iters as f64 / steps as f64);
    assert!((f.z - m * G).abs() < 0.01 * m * G, "normal force {} vs m g {}", f.z, m * G);
    assert!(f.x.hypot(f.y) < 0.01 * m * G, "friction on a resting ball: {f:?}");
    assert!(worst_pen < 5e-4, "penetration {worst_pen} m");
}

/// Mean node position (m) of the first deformable.
fn centroid(sim: &Simulation) -> Vec3 {
    let x = &sim.state.fem_x;
    let n = x.len() / 3;
    (0..n).map(|i| Vec3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2])).sum::<Vec3>() / n as f64
}

fn run_grasp(mu: f64) -> (Vec3, Vec3, f64) {
    let mut s = scene_file("config/examples/fem_gripper_ball.yaml");
    s.model.deformables[0].friction = mu;
    let mut sim = Simulation::from_scene(&s, None);
    let c0 = centroid(&sim);
    let mut worst_pen: f64 = 0.0;
    while sim.state.time_s < 1.5 - 1e-9 {
        let r = sim.step();
        if sim.state.time_s > 0.3 {
            worst_pen = worst_pen.max(r.max_penetration_m);
        }
    }
    (c0, centroid(&sim), worst_pen)
}

/// The rigid correction (`docs/vfpi.md`) changes how V-FPI gets to the answer, not the answer:
/// the grasp with and without it (squeeze, hold, and the start of the lift: 0.8 s) ends with the
/// ball and the fingers where they were to a fraction of a millimetre, and the correction needs
/// well under half the iterations (the plain iteration creeps along the slow mode of the 0.1 kg
/// fingers tied to their virtual nodes).
#[test]
fn rigid_correction_keeps_the_grasp_and_cuts_the_iterations() {
    let run = |correct: bool| {
        let mut s = scene_file("config/examples/fem_gripper_ball.yaml");
        if let contact_sim::contact::SolverConfig::Vfpi(p) = &mut s.solver {
            p.rigid_correction = correct;
            p.translation_correction = false; // the rigid correction alone
        } else {
            panic!("the grasp scene uses vfpi");
        }
        let mut sim = Simulation::from_scene(&s, None);
        let (mut its, mut steps, mut unconverged) = (0u64, 0u64, 0u64);
        while sim.state.time_s < 0.8 - 1e-9 {
            let r = sim.step();
            its += u64::from(r.solve.iterations);
            unconverged += u64::from(!r.solve.converged);
            steps += 1;
        }
        (centroid(&sim), sim.state.q.clone(), its as f64 / steps as f64, unconverged)
    };
    let (c_on, q_on, its_on, unc_on) = run(true);
    let (c_off, q_off, its_off, unc_off) = run(false);
    println!("with the correction: {its_on:.1} iterations per step ({unc_on} unconverged); without: {its_off:.1} ({unc_off})");
    assert_eq!((unc_on, unc_off), (0, 0));
    assert!((c_on - c_off).norm() < 5e-4, "ball centroid {c_on:?} vs {c_off:?}");
    let dq = q_on.iter().zip(&q_off).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(dq < 5e-4, "gripper joints differ by {dq} m");
    assert!(its_on < 60.0 && its_on < 0.5 * its_off, "{its_on:.1} vs {its_off:.1} iterations per step");
}

/// The deformable translation correction (on in the grasp scene) leaves the grasp where it was
/// and cuts the iterations by a third; the slow steps of the lift's start and end most.
#[test]
fn translation_correction_keeps_the_grasp_and_cuts_the_iterations() {
    let run = |translate: bool| {
        let mut s = scene_file("config/examples/fem_gripper_ball.yaml");
        if let contact_sim::contact::SolverConfig::Vfpi(p) = &mut s.solver {
            assert!(p.rigid_correction && p.translation_correction, "the grasp scene runs both corrections");
            p.translation_correction = translate;
        } else {
            panic!("the grasp scene uses vfpi");
        }
        let mut sim = Simulation::from_scene(&s, None);
        let (mut its, mut steps, mut unconverged, mut worst_lift) = (0u64, 0u64, 0u64, 0u32);
        while sim.state.time_s < 1.3 - 1e-9 {
            let r = sim.step();
            its += u64::from(r.solve.iterations);
            unconverged += u64::from(!r.solve.converged);
            // the lift starts at 0.6 s and stops at 1.2 s
            if (0.6..0.67).contains(&sim.state.time_s) || (1.2..1.27).contains(&sim.state.time_s) {
                worst_lift = worst_lift.max(r.solve.iterations);
            }
            steps += 1;
        }
        (centroid(&sim), sim.state.q.clone(), its as f64 / steps as f64, unconverged, worst_lift)
    };
    let (c_on, q_on, its_on, unc_on, lift_on) = run(true);
    let (c_off, q_off, its_off, unc_off, lift_off) = run(false);
    println!("with the translation correction: {its_on:.1} iterations per step, {lift_on} at most at the lift's start and end ({unc_on} unconverged); without: {its_off:.1}, {lift_off} ({unc_off})");
    assert_eq!((unc_on, unc_off), (0, 0));
    // lifted alike; across the squeeze (y) the ball's place between two fingers pushing with
    // equal efforts is neutral, and the solves' tolerances move it by a fraction of a millimetre
    let d = c_on - c_off;
    assert!(d.x.abs() < 5e-4 && d.z.abs() < 5e-4 && d.y.abs() < 2e-3, "ball centroid {c_on:?} vs {c_off:?}");
    let dq = q_on.iter().zip(&q_off).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(dq < 2e-3, "gripper joints differ by {dq} m");
    assert!(its_on < 0.8 * its_off, "{its_on:.1} vs {its_off:.1} iterations per step");
    assert!(lift_on * 2 < lift_off, "slowest step of the lift's start and end: {lift_on} vs {lift_off} iterations");
}

#[test]
fn gripper_lifts_the_ball_when_friction_suffices_and_it_slips_otherwise() {
    // squeeze 5 N per finger: holding needs μ ≥ m g / (2 · 5 N) = 0.29
    let (c0, c1, pen) = run_grasp(0.8);
    println!("μ = 0.8: centroid {c0:?} -> {c1:?}, penetration {pen:.2e} m");
    let lift = c1.z - c0.z;
    assert!(lift > 0.045 && lift < 0.055, "μ = 0.8: the ball rose {lift} m, the gripper 0.05 m");
    assert!(pen < 2e-3, "penetration {pen} m");
    let (c0, c1, _) = run_grasp(0.1);
    let lift = c1.z - c0.z;
    println!("μ = 0.1: centroid {c0:?} -> {c1:?}");
    assert!(lift < 0.01, "μ = 0.1: the ball should slip out, rose {lift} m");
}

fn small_ball_scene(threads: usize) -> String {
    let mesh = mesh_file("small_ball.msh", &contact_sim::fem::TetMesh::ball(0.04, 4));
    format!(
        "timestep_s: 0.01\nsolver: {{kind: vfpi, tolerance: 1.0e-12, residual_tolerance: 1.0e-10, max_iterations: 20000, threads: {threads}}}\ndeformables:\n  - name: ball\n    mesh: {}\n    position: [0, 0, 0.0405]\n    linear_velocity: [0.05, 0, 0]\n    material: {{density_kg_m3: 1100, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.35}}\n    friction: 0.3\n",
        mesh.display()
    )
}

#[test]
fn vfpi_impulses_agree_with_pgs_on_the_same_problem() {
    // A small ball (125 nodes) lands and rolls/slides on the ground: at each checked step, the
    // converged V-FPI contact impulses are compared with PGS (run to 1e-14 N·s) on the same
    // contact problem, G = J A⁻¹ Jᵀ and u_free = J A⁻¹ b + φ built densely from the step's
    // FEM system. Measure: max_i |λ_vfpi − λ_pgs| / max_i |λ_pgs|.
    use contact_sim::contact::{ContactProblem, ContactRows, ImpulseSolver, PgsParams, PgsSolver};
    let s = scene(&small_ball_scene(1));
    let mut sim = Simulation::from_scene(&s, None);
    let mut checked = 0;
    let mut worst: f64 = 0.0;
    for k in 0..40 {
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        let f = sim.workspace.fem.as_ref().unwrap();
        let nc = f.contacts.len();
        if k < 5 || nc == 0 || k % 5 != 0 {
            continue;
        }
        let (gt, u) = dense_contact_problem(&sim);
        let mu = vec![0.3; nc];
        let p = ContactProblem { num_contacts: nc, contact_rows: ContactRows::POINT, num_joint_rows: 0, friction: &mu, row_lower: &[], row_upper: &[], delassus: gt.as_slice(), free_velocity: u.as_slice(), primal: None, factored: None };
        let mut pgs = PgsSolver::new(PgsParams { max_iterations: 200_000, tolerance: 1e-14, relaxation: 1.0 }, nc);
        let mut lam = vec![0.0; 3 * nc];
        let st = pgs.solve(&p, &mut lam);
        assert!(st.converged, "PGS: {st:?}");
        let vf: Vec<f64> = f.contacts.iter().flat_map(|c| c.impulse).collect();
        let scale = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let err = vf.iter().zip(&lam).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale;
        println!("step {k}: {nc} contacts, max |λ| {scale:.3e} N·s, relative difference {err:.2e}");
        worst = worst.max(err);
        checked += 1;
    }
    assert!(checked >= 3);
    assert!(worst < 1e-4, "V-FPI and PGS differ by {worst:e}");
}

/// V-FPI on 1 and 2 threads: the iteration's chunks and, on the gripper ball's 6 000 tetrahedra,
/// the element phase of the FEM assembly run on the pool; trajectories agree to the bit.
#[test]
fn serial_and_parallel_vfpi_are_bit_identical() {
    let run = |threads: usize, yaml: &str| {
        let yaml = yaml.replace("threads: 1", &format!("threads: {threads}"));
        let s = scene(&yaml);
        let mut sim = Simulation::from_scene(&s, None);
        let mut its = 0;
        for _ in 0..15 {
            its += sim.step().solve.iterations;
        }
        (sim.state.fem_x.clone(), sim.state.fem_v.clone(), sim.state.q.clone(), its)
    };
    // the gripper scene (3 993 FEM DOF: 6 row chunks, > 64 contacts at times) and the small ball
    let big = std::fs::read_to_string(repo().join("config/examples/fem_gripper_ball.yaml")).unwrap().replace("threads: 2", "threads: 1").replace("../../", &format!("{}/", repo().display()));
    for yaml in [small_ball_scene(1), big] {
        let a = run(1, &yaml);
        let b = run(2, &yaml);
        assert!(a.0.iter().zip(&b.0).all(|(x, y)| x.to_bits() == y.to_bits()), "positions differ");
        assert!(a.1.iter().zip(&b.1).all(|(x, y)| x.to_bits() == y.to_bits()), "velocities differ");
        assert!(a.2.iter().zip(&b.2).all(|(x, y)| x.to_bits() == y.to_bits()), "rigid q differs");
        assert_eq!(a.3, b.3);
    }
}

#[test]
fn soft_finger_press_is_seen_by_the_force_sensor() {
    // Two-way coupling through a rigid body: the pad pushes the box (virtual-node D-contacts),
    // the box pushes the plate (rigid contacts), the plate's F/T sensor must read the plate's
    // and the box's weight plus the pad's push, which equals the force the pad nodes receive.
    let s = scene_file("config/examples/fem_finger_press.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let (m_plate, m_box) = (1.0, 0.2);
    while sim.state.time_s < 1.5 - 1e-9 {
        let r = sim.step();
        assert!(r.solve.converged, "t = {}: {:?}", sim.state.time_s, r.solve);
    }
    let pad_push = fem_contact_force(&sim).z; // the box pushes the pad nodes up with what the pad pushes down
    let reading = sim.state.sensors[0].ideal;
    let box_z = object_position(&sim, "box").z;
    println!("pad push {pad_push:.3} N, sensor {reading:?}, box z {box_z:.5}");
    assert!(pad_push > 1.0, "the pad must be compressed against the box, push {pad_push} N");
    let expected = (m_plate + m_box) * G + pad_push; // magnitude of the load on the plate
    assert!((reading[2].abs() - expected).abs() < 0.02 * expected, "sensor {} N vs {expected} N", reading[2]);
    assert!((box_z - 0.045).abs() < 5e-4, "box moved to z = {box_z}");
    // two-way weld: the actuator holds the finger (0.3 kg) and the pad, and feels the push back
    let m_pad = sim.model.deformables[0].total_mass();
    let effort = sim.workspace.applied_effort[sim.model.joint_dof("press").unwrap()];
    let expected = (0.3 + m_pad) * G - pad_push;
    println!("press effort {effort:.3} N vs (m_finger + m_pad) g − push = {expected:.3} N");
    assert!((effort - expected).abs() < 0.02 * pad_push, "press effort {effort} N vs {expected} N");
}

#[test]
fn soft_finger_pressing_the_sensed_plate_directly_is_measured() {
    // the pad on the plate itself (no box): deformable–link contact forces reach the F/T sensor
    let yaml = std::fs::read_to_string(repo().join("config/examples/fem_finger_press.yaml")).unwrap();
    let i = yaml.find("objects:").unwrap();
    let j = yaml.find("deformables:").unwrap();
    let yaml = format!("{}{}", &yaml[..i], &yaml[j..])
        .replace("position: [0, 0, 0.087]", "position: [0, 0, 0.037]")
        .replace("position: [0, 0, 0.075]", "position: [0, 0, 0.025]")
        .replace("box_min: [-1, -1, 0.0869]", "box_min: [-1, -1, 0.0369]");
    let s = scene(&yaml);
    let mut sim = Simulation::from_scene(&s, None);
    while sim.state.time_s < 1.5 - 1e-9 {
        let r = sim.step();
        assert!(r.solve.converged, "t = {}: {:?}", sim.state.time_s, r.solve);
    }
    let push = fem_contact_force(&sim).z;
    let reading = sim.state.sensors[0].ideal;
    println!("pad push {push:.3} N, sensor {reading:?}");
    assert!(push > 1.0, "push {push}");
    let expected = 1.0 * G + push;
    assert!((reading[2].abs() - expected).abs() < 0.02 * expected, "sensor {} N vs {expected} N", reading[2]);
}

#[test]
fn arm_folds_the_soft_mat_over_its_far_half() {
    // config/examples/fem_mat_fold.yaml: the 7-DOF arm, its hand welded (two-way) to the
    // x = −0.15 m edge of the mat, lifts that edge and lays it over the far half (x > 0).
    let s = scene_file("config/examples/fem_mat_fold.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let d = &sim.model.deformables[0];
    let m = d.total_mass();
    assert!((m - 1000.0 * 0.3 * 0.3 * 0.01).abs() < 1e-9, "mat mass {m} kg vs ρ V");
    let welded: Vec<usize> = (0..d.num_nodes()).filter(|&i| matches!(d.attachment[i], contact_sim::fem::NodeAttachment::Body(..))).collect();
    assert_eq!(welded.len(), 50, "the x = −0.15 m edge: 25 × 2 nodes");
    let edge = |sim: &Simulation| -> (f64, f64) {
        let x = &sim.state.fem_x;
        let mean_x = welded.iter().map(|&i| x[3 * i]).sum::<f64>() / welded.len() as f64;
        let min_z = welded.iter().map(|&i| x[3 * i + 2]).fold(f64::INFINITY, f64::min);
        (mean_x, min_z)
    };
    let (x0, _) = edge(&sim);
    let steps = (s.model.timestep_s.recip() * 3.4).round() as usize;
    let (mut unconverged, mut lowest, mut iterations, mut weld_error) = (0, f64::INFINITY, 0, 0.0f64);
    let mut start_forces = None;
    for k in 0..steps {
        let r = sim.step();
        assert!(sim.state.is_finite() && !r.non_finite_state, "step {k}: non-finite state");
        unconverged += usize::from(!r.solve.converged);
        iterations += r.solve.iterations;
        lowest = sim.state.fem_x.chunks(3).map(|p| p[2]).fold(lowest, f64::min);
        let f = sim.workspace.fem.as_ref().unwrap();
        assert!(f.contacts.iter().all(|c| !welded.contains(&c.node)), "step {k}: a welded node got a contact");
        weld_error = f.welds.iter().map(|w| w.error.norm()).fold(weld_error, f64::max);
        assert!(sim.workspace.contacts.iter().all(|c| c.body_a.is_some() && c.body_b.is_some()), "step {k}: the arm touches the ground");
        if k == 30 {
            // at rest before the lift (t = 0.31 s): the ground carries the mat but for the edge
            let ground = fem_contact_force(&sim).z;
            let weld: f64 = f.welds.iter().map(|w| w.impulse[2]).sum::<f64>() / sim.model.timestep_s;
            start_forces = Some((ground, weld));
        }
    }
    let (x1, z1) = edge(&sim);
    let (ground, weld) = start_forces.unwrap();
    let mg = m * G;
    println!(
        "mat {m:.3} kg: at rest ground {ground:.4} N + welds {weld:.4} N = {:.4} N (m g = {mg:.4}); edge x {x0:.4} → {x1:.4} m, lowest welded z {z1:.4} m; lowest node z {lowest:.2e} m; worst weld error {weld_error:.2e} m; unconverged {unconverged}/{steps}; mean iterations {:.0}",
        ground + weld,
        iterations as f64 / steps as f64
    );
    // self-contact: the folded layer (rest x < −0.03 m) now over the flat part of the far half
    // (rest x > 0.07 m, which must not have slid) must lie on it, not in it
    let d = &sim.model.deformables[0];
    let x = &sim.state.fem_x;
    let far: Vec<usize> = (0..d.num_nodes()).filter(|&i| d.rest[i].x > 0.07).collect();
    let slide = far.iter().map(|&i| (x[3 * i] - d.rest[i].x).abs()).fold(0.0f64, f64::max);
    let lower_top = far.iter().map(|&i| x[3 * i + 2]).fold(f64::NEG_INFINITY, f64::max);
    let x_min = far.iter().map(|&i| x[3 * i]).fold(f64::INFINITY, f64::min);
    let folded: Vec<usize> = (0..d.num_nodes()).filter(|&i| d.rest[i].x < -0.03 && x[3 * i] > x_min).collect();
    let folded_low = folded.iter().map(|&i| x[3 * i + 2]).fold(f64::INFINITY, f64::min);
    let f = sim.workspace.fem.as_ref().unwrap();
    let across = |c: &&contact_sim::fem::FemContact| c.other_node.map(|j| (d.rest[c.node].x < 0.0) != (d.rest[j].x < 0.0)).unwrap_or(false);
    let node_contacts = f.contacts.iter().filter(|c| c.other_node.is_some()).count();
    let layer_contacts = f.contacts.iter().filter(across).count();
    let worst_layer_pen = f.contacts.iter().filter(across).map(|c| -c.distance).fold(0.0f64, f64::max);
    let worst_node_pen = f.contacts.iter().filter(|c| c.other_node.is_some()).map(|c| -c.distance).fold(0.0f64, f64::max);
    let thickness = f.node_contact.thickness(0);
    println!(
        "self-contact: thickness {thickness:.4} m; far half slid {slide:.2e} m, its top at {lower_top:.4} m; {} folded nodes over it, lowest z {folded_low:.4} m; {node_contacts} node–node contacts ({layer_contacts} between the layers, deepest {worst_layer_pen:.2e} m past the thickness; deepest of all {worst_node_pen:.2e} m)",
        folded.len()
    );
    assert!(slide < 0.01, "the far half slid {slide} m instead of staying under the fold");
    assert!(folded.len() > 200, "only {} nodes of the folded half ended over the far half", folded.len());
    assert!(folded_low > lower_top + 0.5 * thickness, "the folded layer sank into the lower one: lowest z {folded_low} m, lower top {lower_top} m");
    assert!(layer_contacts > 30, "the folded layer rests on the lower one: {layer_contacts} node–node contacts between them");
    assert!(worst_layer_pen < 1e-3, "node–node penetration {worst_layer_pen} m past the thickness between the layers");
    assert!(worst_node_pen < 1e-3, "node–node penetration {worst_node_pen} m past the thickness");
    assert!((ground + weld - mg).abs() < 0.01 * mg, "ground + weld {} N vs m g {mg} N", ground + weld);
    assert!((ground - mg).abs() < 0.03 * mg, "ground {ground} N vs m g {mg} N (the welded edge carries ~2 %)");
    assert!(weld > 0.0 && weld < 0.03 * mg, "the hand holds the edge's share: {weld} N");
    assert!(x1 - x0 > 0.23, "the edge moved {} m along x (fold: 0.27 m)", x1 - x0);
    assert!(x1 > 0.08, "the edge ends at x = {x1} m, over the far half");
    assert!(z1 > 0.01 + 0.5 * thickness, "the edge ends at z = {z1} m, above the lower layer (top at 0.01 m)");
    assert!(lowest > -5e-4, "a mat node went {lowest} m into the ground");
    assert!(weld_error < 5e-4, "the welded edge left the hand by {weld_error} m");
    assert!(unconverged * 20 <= steps, "{unconverged} of {steps} steps did not converge");
}

/// Two soft blocks (`TetMesh::box_grid`, written to a temporary Gmsh file): a lower one
/// 80 × 80 × 20 mm (4 × 4 × 2 cells) on the ground and an upper one 40 × 40 × 20 mm
/// (2 × 2 × 2 cells), centred on it and `drop_m` above it (plus the contact thickness). With
/// `gravity: false` the upper block flies at the lower one sideways-free, along −z, at 0.3 m/s
/// and there is no gravity nor ground contact to disturb the momentum.
fn block_stack_scene(drop_m: f64, gravity: bool, threads: usize, tolerance: f64) -> String {
    let lower = mesh_file("blocks_lower.msh", &contact_sim::fem::TetMesh::box_grid([0.08, 0.08, 0.02], [4, 4, 2]));
    let upper = mesh_file("blocks_upper.msh", &contact_sim::fem::TetMesh::box_grid([0.04, 0.04, 0.02], [2, 2, 2]));
    let (g, z0, v0) = if gravity { ("[0, 0, -9.81]", 0.0, 0.0) } else { ("[0, 0, 0]", 0.05, -0.3) };
    format!(
        "timestep_s: 0.01\ngravity: {g}\nsolver: {{kind: vfpi, tolerance: {tolerance:e}, residual_tolerance: 1.0e-6, max_iterations: 20000, threads: {threads}}}\ncontact: {{deformable_contact: {{enabled: true, thickness_m: 0.004}}}}\ndeformables:\n  - name: lower\n    mesh: {}\n    position: [-0.04, -0.04, {z0}]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.3, rayleigh_stiffness_s: 0.002}}\n    friction: 0.5\n  - name: upper\n    mesh: {}\n    position: [-0.02, -0.02, {}]\n    linear_velocity: [0, 0, {v0}]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.3, rayleigh_stiffness_s: 0.002}}\n    friction: 0.5\n",
        lower.display(),
        upper.display(),
        z0 + 0.02 + 0.004 + drop_m
    )
}

/// Force (N, world) of the last step's node–node contacts on the nodes of deformable `b`.
fn node_contact_force_on(sim: &Simulation, b: usize) -> Vec3 {
    let f = sim.workspace.fem.as_ref().unwrap();
    let d = &sim.model.deformables[b];
    let owns = |g: usize| g >= d.node_start && g < d.node_start + d.num_nodes();
    let dt = sim.model.timestep_s;
    let mut sum = Vec3::zeros();
    for c in f.contacts.iter() {
        let Some(j) = c.other_node else { continue };
        let fi = c.frame.transpose() * Vec3::new(c.impulse[0], c.impulse[1], c.impulse[2]) / dt;
        if owns(c.node) {
            sum += fi;
        }
        if owns(j) {
            sum -= fi;
        }
    }
    sum
}

/// Ground / rigid contact force (N, world) of the last step on the deformable nodes.
fn ground_contact_force(sim: &Simulation) -> Vec3 {
    let f = sim.workspace.fem.as_ref().unwrap();
    let dt = sim.model.timestep_s;
    f.contacts.iter().filter(|c| c.other_node.is_none()).map(|c| c.frame.transpose() * Vec3::new(c.impulse[0], c.impulse[1], c.impulse[2]) / dt).sum()
}

#[test]
fn soft_block_rests_on_a_soft_block() {
    let s = scene(&block_stack_scene(0.002, true, 1, 1e-7));
    let mut sim = Simulation::from_scene(&s, None);
    let (m1, m2) = (sim.model.deformables[0].total_mass(), sim.model.deformables[1].total_mass());
    let (d0, d1) = (sim.model.deformables[0].clone(), sim.model.deformables[1].clone());
    let mut worst_gap: f64 = 0.0;
    let mut worst_sep: f64 = f64::INFINITY;
    let mut node_contacts = 0;
    for k in 0..150 {
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        let f = sim.workspace.fem.as_ref().unwrap();
        // one constraint per node: no node twice among all contacts (either side)
        let mut seen = std::collections::HashSet::new();
        for c in &f.contacts {
            assert!(seen.insert(c.node), "step {k}: node {} in two contacts", c.node);
            if let Some(j) = c.other_node {
                assert!(seen.insert(j), "step {k}: node {j} in two contacts");
            }
        }
        node_contacts = f.contacts.iter().filter(|c| c.other_node.is_some()).count();
        if k > 30 {
            worst_gap = f.contacts.iter().filter(|c| c.other_node.is_some()).map(|c| -c.distance).fold(worst_gap, f64::max);
        }
        // the upper block's lowest node vs the lower block's highest (top face) node
        let x = &sim.state.fem_x;
        let top = (d0.node_start..d0.node_start + d0.num_nodes()).map(|g| x[3 * g + 2]).fold(f64::NEG_INFINITY, f64::max);
        let bottom = (d1.node_start..d1.node_start + d1.num_nodes()).map(|g| x[3 * g + 2]).fold(f64::INFINITY, f64::min);
        worst_sep = worst_sep.min(bottom - top);
    }
    let ground = ground_contact_force(&sim);
    let on_upper = node_contact_force_on(&sim, 1);
    let on_lower = node_contact_force_on(&sim, 0);
    println!("m1 {m1:.4} kg, m2 {m2:.4} kg: ground {ground:?} N vs (m1 + m2) g {:.4}; on upper {on_upper:?} N vs m2 g {:.4}; on lower {on_lower:?}; {node_contacts} node contacts; worst penetration past the thickness {worst_gap:.2e} m; smallest separation {worst_sep:.2e} m", (m1 + m2) * G, m2 * G);
    assert!(node_contacts >= 9, "the 3 × 3 bottom nodes of the upper block rest on the lower one: {node_contacts}");
    assert!((ground.z - (m1 + m2) * G).abs() < 0.02 * (m1 + m2) * G, "ground {} N vs (m1 + m2) g {} N", ground.z, (m1 + m2) * G);
    assert!((on_upper.z - m2 * G).abs() < 0.02 * m2 * G, "lower on upper {} N vs m2 g {} N", on_upper.z, m2 * G);
    assert!((on_upper + on_lower).norm() < 1e-9 * m2 * G, "equal and opposite: {on_upper:?} vs {on_lower:?}");
    assert!(on_upper.x.hypot(on_upper.y) < 0.02 * m2 * G, "friction at rest {on_upper:?}");
    assert!(worst_gap < 5e-4, "nodes {worst_gap} m inside the 4 mm contact thickness");
    assert!(worst_sep > 0.004 - 5e-4, "the upper block went through the lower: separation {worst_sep} m");
}

#[test]
fn soft_blocks_colliding_without_gravity_conserve_momentum() {
    let s = scene(&block_stack_scene(0.004, false, 1, 1e-11));
    let mut sim = Simulation::from_scene(&s, None);
    let p0 = contact_sim::fem::fem_momentum(&sim.model.deformables, &sim.state.fem_v);
    let m2 = sim.model.deformables[1].total_mass();
    let mut hits = 0;
    let mut impulse = Vec3::zeros();
    for k in 0..40 {
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        let f = sim.workspace.fem.as_ref().unwrap();
        hits += usize::from(f.contacts.iter().any(|c| c.other_node.is_some() && c.impulse[0] > 0.0));
        assert!(f.contacts.iter().all(|c| c.other_node.is_some()), "no ground contact expected");
        impulse += node_contact_force_on(&sim, 1) * sim.model.timestep_s;
    }
    let p1 = contact_sim::fem::fem_momentum(&sim.model.deformables, &sim.state.fem_v);
    let scale = m2 * 0.3;
    println!("momentum {p0:?} -> {p1:?} kg·m/s; impulse on the upper block {impulse:?} N·s; {hits} steps with contact");
    assert!(hits > 0, "the blocks never touched");
    assert!(impulse.z > 0.3 * scale, "the collision must stop the upper block: impulse {impulse:?}");
    assert!((p1 - p0).norm() < 1e-6 * scale, "momentum changed by {:?}", p1 - p0);
}

#[test]
fn mat_fold_with_self_contact_is_bit_identical_serial_and_parallel() {
    // the folded layer landing on the lower one (t = 2.8 s): > 64 constraints, so the parallel
    // contact chunks mix node–node D-contacts, ground contacts and welds
    let yaml = std::fs::read_to_string(repo().join("config/examples/fem_mat_fold.yaml")).unwrap().replace("../../", &format!("{}/", repo().display()));
    let run = |threads: usize| {
        let y = yaml.replace("virtual_node_gain: 1000}", &format!("virtual_node_gain: 1000, threads: {threads}}}"));
        assert_ne!(y, yaml, "the solver line changed");
        let mut sim = Simulation::from_scene(&scene(&y), None);
        let mut node_contacts = 0;
        for _ in 0..280 {
            sim.step();
            node_contacts += sim.workspace.fem.as_ref().unwrap().contacts.iter().filter(|c| c.other_node.is_some()).count();
        }
        (sim.state.fem_x.clone(), sim.state.fem_v.clone(), sim.state.q.clone(), node_contacts)
    };
    let (a, b) = (run(1), run(2));
    assert!(a.3 > 0, "no node–node contact in the run");
    assert_eq!(a.3, b.3, "node–node contact counts differ");
    assert!(a.0.iter().zip(&b.0).all(|(x, y)| x.to_bits() == y.to_bits()), "node positions differ");
    assert!(a.1.iter().zip(&b.1).all(|(x, y)| x.to_bits() == y.to_bits()), "node velocities differ");
    assert!(a.2.iter().zip(&b.2).all(|(x, y)| x.to_bits() == y.to_bits()), "arm q differs");
}

#[test]
fn node_contact_impulses_agree_with_pgs_on_the_same_problem() {
    // The upper block landing on the lower one: ground S-contacts and node–node D-contacts
    // (Jᵀ with +R at node i and −R at node j, `FemWorkspace::dense_contact_jacobian_t`); the
    // converged V-FPI impulses against PGS on G = J A⁻¹ Jᵀ, u_free = J A⁻¹ b + φ.
    use contact_sim::contact::{ContactProblem, ContactRows, ImpulseSolver, PgsParams, PgsSolver};
    let s = scene(&block_stack_scene(0.002, true, 1, 1e-12).replace("residual_tolerance: 1.0e-6", "residual_tolerance: 1.0e-11"));
    let mut sim = Simulation::from_scene(&s, None);
    let (mut checked, mut worst) = (0, 0.0f64);
    for k in 0..30 {
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        let f = sim.workspace.fem.as_ref().unwrap();
        let nc = f.contacts.len();
        if k < 8 || k % 5 != 0 || !f.contacts.iter().any(|c| c.other_node.is_some() && c.impulse[0] > 0.0) {
            continue;
        }
        let (gt, u) = dense_contact_problem(&sim);
        let mu = vec![0.5; nc];
        let p = ContactProblem { num_contacts: nc, contact_rows: ContactRows::POINT, num_joint_rows: 0, friction: &mu, row_lower: &[], row_upper: &[], delassus: gt.as_slice(), free_velocity: u.as_slice(), primal: None, factored: None };
        let mut pgs = PgsSolver::new(PgsParams { max_iterations: 200_000, tolerance: 1e-14, relaxation: 1.0 }, nc);
        let mut lam = vec![0.0; 3 * nc];
        assert!(pgs.solve(&p, &mut lam).converged, "PGS did not converge");
        let vf: Vec<f64> = f.contacts.iter().flat_map(|c| c.impulse).collect();
        let scale = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let err = vf.iter().zip(&lam).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale;
        let nn = f.contacts.iter().filter(|c| c.other_node.is_some()).count();
        println!("step {k}: {nc} contacts ({nn} node–node), max |λ| {scale:.3e} N·s, relative difference {err:.2e}");
        worst = worst.max(err);
        checked += 1;
    }
    assert!(checked >= 2, "checked {checked} steps");
    assert!(worst < 1e-4, "V-FPI and PGS differ by {worst:e}");
}
