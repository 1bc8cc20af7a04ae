//! Multibody dynamics against closed forms and against each other: CRBA vs RNEA vs kinetic
//! energy, free fall, the small-angle pendulum period, energy of an undamped double pendulum.


use crate::common::*;
use contact_sim::config::{load_robot, RobotConfig};
use contact_sim::contact::SolverConfig;
use contact_sim::model::{Model, ModelBuilder};
use contact_sim::state::State;
use contact_sim::workspace::Workspace;
use contact_sim::{dynamics, kinematics};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;


fn robot_model(urdf: &str, floating: bool) -> Model {
    let p = path(urdf);
    let rc: RobotConfig = serde_yaml::from_str(&format!("urdf: '{}'\nbase: {{mode: {}}}", p.display(), if floating { "floating" } else { "fixed" })).unwrap();
    let spec = load_robot(&p, &rc, &Default::default(), Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let mut b = ModelBuilder::new(urdf);
    b.add_robot(spec).unwrap();
    b.finalize().unwrap()
}

const SHIPPED: &[(&str, bool)] = &[
    ("urdf/quadruped.urdf", true),
    ("urdf/arm7.urdf", false),
    ("urdf/arm7.urdf", true),
    ("urdf/pendulum.urdf", false),
    ("urdf/double_pendulum.urdf", false),
    ("tests/data/mesh_robot.urdf", false),
];

fn random_state(model: &Model, rng: &mut ChaCha8Rng) -> (State, Vec<f64>) {
    let mut state = State::new(model);
    let mut a = vec![0.0; model.nv];
    for b in &model.bodies {
        let j = &b.joint;
        match j.kind {
            contact_sim::model::JointKind::Free => {
                let quat = nalgebra::UnitQuaternion::from_euler_angles(rng.random_range::<f64, _>(-3.0..=3.0), rng.random_range::<f64, _>(-1.5..=1.5), rng.random_range::<f64, _>(-3.0..=3.0));
                let c = quat.quaternion();
                let qs = [rng.random_range::<f64, _>(-1.0..=1.0), rng.random_range::<f64, _>(-1.0..=1.0), rng.random_range::<f64, _>(0.0..=2.0), c.i, c.j, c.k, c.w];
                state.q[j.q_index..j.q_index + 7].copy_from_slice(&qs);
            }
            contact_sim::model::JointKind::Revolute | contact_sim::model::JointKind::Prismatic => {
                let (lo, hi) = j.position_limits.unwrap_or((-3.0, 3.0));
                state.q[j.q_index] = rng.random_range::<f64, _>(lo..=hi);
            }
            _ => {}
        }
    }
    for k in 0..model.nv {
        state.v[k] = rng.random_range::<f64, _>(-2.0..=2.0);
        a[k] = rng.random_range::<f64, _>(-5.0..=5.0);
    }
    (state, a)
}

/// A random state and acceleration ([`random_state`]) with the workspace's kinematics, inertias,
/// mass matrix and bias forces at it; the mass matrix as a dense one.
fn random_dynamics(model: &Model, ws: &mut Workspace, rng: &mut ChaCha8Rng) -> (State, Vec<f64>, nalgebra::DMatrix<f64>) {
    let (state, a) = random_state(model, rng);
    kinematics::forward_kinematics(model, &state.q, &state.v, ws);
    dynamics::update_body_inertias(model, ws);
    dynamics::mass_matrix(model, ws);
    dynamics::bias_forces(model, ws, &state.v);
    let m = ws.mass_matrix.to_dense();
    (state, a, m)
}

#[test]
fn mass_matrix_is_spd_and_crba_agrees_with_rnea_on_every_shipped_urdf() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x9E3779B97F4A7C15);
    for &(urdf, floating) in SHIPPED {
        let model = robot_model(urdf, floating);
        let mut ws = Workspace::new(&model, &SolverConfig::default());
        for trial in 0..20 {
            let (state, a, m) = random_dynamics(&model, &mut ws, &mut rng);
            // symmetric
            let asym = (&m - m.transpose()).abs().max();
            assert!(asym <= 1e-12 * m.abs().max(), "{urdf} trial {trial}: M not symmetric ({asym})");
            // positive definite: all eigenvalues > 0
            let eig = nalgebra::SymmetricEigen::new(m.clone()).eigenvalues;
            assert!(eig.min() > 0.0, "{urdf} trial {trial}: M not positive definite (min eigenvalue {})", eig.min());
            // M a + h = RNEA(q, v, a)
            let mut tau = vec![0.0; model.nv];
            dynamics::inverse_dynamics(&model, &mut ws, &state.v, &a, &mut tau);
            let ma_h = &m * nalgebra::DVector::from_column_slice(&a) + &ws.bias;
            let scale = tau.iter().map(|x| x.abs()).fold(1e-9, f64::max);
            for k in 0..model.nv {
                let err = (ma_h[k] - tau[k]).abs() / scale;
                assert!(err < 1e-9, "{urdf} trial {trial} dof {}: M a + h = {} but RNEA = {} (rel {err:e})", model.dof_names[k], ma_h[k], tau[k]);
            }
            // ½ vᵀ M v equals the sum of body kinetic energies ½ V_bᵀ I_b V_b (independent of CRBA)
            let ke_m = dynamics::kinetic_energy(&ws, &state.v);
            let ke_bodies: f64 = (0..model.bodies.len()).map(|b| 0.5 * ws.body_velocity[b].dot(&(ws.body_inertia[b].to_matrix() * ws.body_velocity[b]))).sum();
            assert!((ke_m - ke_bodies).abs() <= 1e-10 * ke_bodies.max(1.0), "{urdf}: kinetic energy {ke_m} vs {ke_bodies}");
            // the sparse LTL factor: Lᵀ L = M, L lower triangular with no fill-in, and the
            // solves invert M (checked against nalgebra's dense Cholesky)
            ws.mass_factor.copy_from(&ws.mass_matrix);
            assert!(dynamics::factorize(&mut ws), "{urdf}: factorization failed");
            let n = model.nv;
            let l = ws.mass_factor.lower_to_dense();
            let ltl_err = (l.transpose() * &l - &m).abs().max();
            assert!(ltl_err <= 1e-12 * m.abs().max(), "{urdf} trial {trial}: |LᵀL − M| = {ltl_err:e}");
            for i in 0..n {
                for j in 0..i {
                    let mut a = ws.dof_parent[i];
                    let mut on_path = false;
                    while a != contact_sim::workspace::NO_DOF {
                        on_path |= a == j;
                        a = ws.dof_parent[a];
                    }
                    if !on_path {
                        assert_eq!(l[(i, j)], 0.0, "{urdf}: fill-in at ({i}, {j})");
                        assert_eq!(m[(i, j)], 0.0, "{urdf}: M({i}, {j}) between different branches");
                    }
                }
            }
            let b: Vec<f64> = (0..n).map(|_| rng.random_range::<f64, _>(-1.0..=1.0)).collect();
            let mut x = b.clone();
            dynamics::solve(&model, &ws.mass_factor, &mut x);
            let x_ref = m.clone().cholesky().unwrap().solve(&nalgebra::DVector::from_column_slice(&b));
            let x_scale = x_ref.abs().max();
            for k in 0..n {
                assert!((x[k] - x_ref[k]).abs() <= 1e-9 * x_scale, "{urdf}: M⁻¹b[{k}] = {} vs {}", x[k], x_ref[k]);
            }
        }
    }
}

/// A free body that carries nothing has its mass block written in its own coordinates
/// (`dynamics::lone_free_block`): checked on a one-link floating URDF whose centre of mass is off
/// the link frame's origin and whose inertia is a full tensor in a turned inertial frame, against
/// what does not use the block (RNEA: `M a + h`; the body's kinetic energy `½ Vᵀ I V`), at random
/// poses; the block is the same at every pose (it is constant in the body's coordinates); and a
/// box object's block is exactly diagonal, so its factor's rows hold their diagonal alone.
#[test]
fn a_lone_free_body_has_its_constant_mass_block_in_its_own_coordinates() {
    let urdf = write_scene(
        "lone_free_payload.urdf",
        r#"<robot name="payload"><link name="payload"><inertial><origin xyz="0.03 -0.02 0.05" rpy="0.3 -0.4 0.7"/><mass value="2.5"/><inertia ixx="0.02" ixy="0.002" ixz="-0.001" iyy="0.03" iyz="0.0015" izz="0.025"/></inertial></link></robot>"#,
    );
    let rc: RobotConfig = serde_yaml::from_str("base: {mode: floating}\nurdf: payload.urdf").unwrap();
    let spec = load_robot(Path::new(&urdf), &rc, &Default::default(), Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let mut builder = ModelBuilder::new("payload");
    builder.add_robot(spec).unwrap();
    let model = builder.finalize().unwrap();
    assert_eq!((model.nv, model.bodies.len()), (6, 1));
    let mut ws = Workspace::new(&model, &SolverConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(0x5DEECE66D);
    let mut first: Option<nalgebra::DMatrix<f64>> = None;
    for trial in 0..20 {
        let (state, a, m) = random_dynamics(&model, &mut ws, &mut rng);
        // the coupling of the linear and angular coordinates is there: the centre is off the origin
        assert!(m.view((3, 0), (3, 3)).abs().max() > 0.01, "trial {trial}: no coupling in {m}");
        let mut tau = vec![0.0; model.nv];
        dynamics::inverse_dynamics(&model, &mut ws, &state.v, &a, &mut tau);
        let ma_h = &m * nalgebra::DVector::from_column_slice(&a) + &ws.bias;
        let scale = tau.iter().map(|x| x.abs()).fold(1e-9, f64::max);
        for k in 0..6 {
            assert!((ma_h[k] - tau[k]).abs() <= 1e-12 * scale, "trial {trial} dof {k}: M a + h = {} but RNEA = {}", ma_h[k], tau[k]);
        }
        let ke_m = dynamics::kinetic_energy(&ws, &state.v);
        let ke_body = 0.5 * ws.body_velocity[0].dot(&(ws.body_inertia[0].to_matrix() * ws.body_velocity[0]));
        assert!((ke_m - ke_body).abs() <= 1e-12 * ke_body.max(1.0), "trial {trial}: kinetic energy {ke_m} vs {ke_body}");
        match &first {
            None => first = Some(m),
            Some(m0) => assert_eq!(&m, m0, "trial {trial}: the block changed with the pose"),
        }
    }
    // a box about its centre: a diagonal block, exactly, and a diagonal factor
    let scene = scene("objects:\n  - {name: cube, shape: {type: box, size: [0.3, 0.2, 0.1]}, mass_kg: 2.0, position: [0, 0, 1], rpy: [0.3, 0.5, -0.7]}\n");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
    sim.step();
    let m = sim.workspace.mass_matrix.to_dense();
    let l = sim.workspace.mass_factor.lower_to_dense();
    for i in 0..6 {
        for j in 0..6 {
            if i != j {
                assert_eq!((m[(i, j)], l[(i, j)]), (0.0, 0.0), "entry ({i}, {j}) of the box's block or factor");
            }
        }
    }
    let expected = [2.0, 2.0, 2.0, 2.0 * (0.04 + 0.01) / 12.0, 2.0 * (0.09 + 0.01) / 12.0, 2.0 * (0.09 + 0.04) / 12.0];
    for k in 0..6 {
        assert!((m[(k, k)] - expected[k]).abs() <= 1e-15, "M({k}, {k}) = {} vs {}", m[(k, k)], expected[k]);
    }
}

#[test]
fn double_pendulum_mass_matrix_matches_closed_form() {
    // Two uniform rods (m = 1 kg, l = 0.5 m, r = 0.01 m) about y, both hanging down at q = 0:
    // M11 = I1 + I2 + m1 c1² + m2 (l1² + c2² + 2 l1 c2 cos q2), M12 = I2 + m2 (c2² + l1 c2 cos q2),
    // M22 = I2 + m2 c2², with I the rod inertia about its centre (about y).
    let model = robot_model("urdf/double_pendulum.urdf", false);
    let mut ws = Workspace::new(&model, &SolverConfig::default());
    let (m, l) = (1.0, 0.5);
    let c = l / 2.0;
    // the rod's inertia about its centre, as written in the URDF (m(3r² + l²)/12 rounded)
    let i = model.bodies[model.body_id("link1").unwrap()].inertia_com[(1, 1)];
    assert!((i - m * (3.0 * 0.01f64.powi(2) + l * l) / 12.0).abs() < 1e-6);
    for q2 in [0.0, 0.7, -1.9, 3.0] {
        let mut state = State::new(&model);
        state.q[0] = 0.3;
        state.q[1] = q2;
        kinematics::forward_kinematics(&model, &state.q, &state.v, &mut ws);
        dynamics::update_body_inertias(&model, &mut ws);
        dynamics::mass_matrix(&model, &mut ws);
        let m11 = 2.0 * i + m * c * c + m * (l * l + c * c + 2.0 * l * c * q2.cos());
        let m12 = i + m * (c * c + l * c * q2.cos());
        let m22 = i + m * c * c;
        let mm = ws.mass_matrix.to_dense();
        for (got, want, what) in [(mm[(0, 0)], m11, "M11"), (mm[(0, 1)], m12, "M12"), (mm[(1, 1)], m22, "M22")] {
            assert!((got - want).abs() < 1e-9, "q2 = {q2}: {what} = {got}, closed form {want}");
        }
    }
}

#[test]
fn free_fall_matches_closed_form() {
    let mut sim = sim(
        "ground: {enabled: false}\nobjects:\n  - {name: ball, shape: {type: sphere, radius: 0.1}, mass_kg: 2.0, position: [0, 0, 10], linear_velocity: [1.0, 0, 0]}\n",
        "pgs",
    );
    let g = 9.81;
    for _ in 0..1000 {
        sim.step();
    }
    let t = sim.state.time_s;
    assert!((t - 1.0).abs() < 1e-9);
    let p = object_position(&sim, "ball");
    let v = object_velocity(&sim, "ball");
    // Semi-implicit Euler: v is exact at every step, the position lags the closed form by ½ g dt t.
    assert!((v.z + g * t).abs() < 1e-9, "v_z = {} vs {}", v.z, -g * t);
    let z_exact = 10.0 - 0.5 * g * t * t;
    assert!((p.z - z_exact).abs() <= 0.5 * g * 1e-3 * t + 1e-9, "z = {} vs {z_exact}", p.z);
    assert!((p.x - 1.0 * t).abs() < 1e-9, "horizontal motion is uniform: x = {}", p.x);
}

#[test]
fn small_angle_pendulum_period_matches_closed_form() {
    // Point-like 1 kg bob 1 m below the pivot (its tiny sphere inertia included):
    // T = 2π √(I_pivot / (m g L)).
    let mut sim = sim(
        "ground: {enabled: false}\nrobots:\n  - urdf: ../../urdf/pendulum.urdf\n    base: {mode: fixed, position: [0, 0, 2]}\n    initial_positions: {pendulum_joint: 0.05}\n",
        "pgs",
    );
    let k = sim.model.joint_dof("pendulum_joint").unwrap();
    let pole = sim.model.body_id("pole").unwrap();
    let body = &sim.model.bodies[pole];
    let l = body.com.norm();
    let i_pivot = body.inertia_com[(1, 1)] + body.mass * l * l;
    let t_expected = 2.0 * std::f64::consts::PI * (i_pivot / (body.mass * 9.81 * l)).sqrt();
    // upward zero crossings of q, interpolated
    let mut crossings = vec![];
    let mut prev = sim.state.q[k];
    while sim.state.time_s < 10.0 {
        sim.step();
        let q = sim.state.q[k];
        if prev < 0.0 && q >= 0.0 {
            let frac = -prev / (q - prev);
            crossings.push(sim.state.time_s - sim.model.timestep_s * (1.0 - frac));
        }
        prev = q;
    }
    assert!(crossings.len() >= 4);
    let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    // amplitude correction θ0²/16 = 0.016 %; tolerance 0.2 %
    assert!((period - t_expected).abs() / t_expected < 2e-3, "period {period} s vs {t_expected} s");
}

#[test]
fn undamped_double_pendulum_conserves_energy() {
    let mut sim = sim(
        "ground: {enabled: false}\nrobots:\n  - urdf: ../../urdf/double_pendulum.urdf\n    base: {mode: fixed, position: [0, 0, 2]}\n    initial_positions: {joint1: 1.2, joint2: -0.8}\n",
        "pgs",
    );
    let energy = |sim: &mut contact_sim::sim::Simulation| {
        let (m, s, ws) = (&sim.model, &sim.state, &mut sim.workspace);
        kinematics::forward_kinematics(m, &s.q, &s.v, ws);
        dynamics::update_body_inertias(m, ws);
        dynamics::mass_matrix(m, ws);
        dynamics::kinetic_energy(ws, &s.v) + dynamics::potential_energy(m, ws)
    };
    let e0 = energy(&mut sim);
    // energy of the hanging rest position: the scale of "1 %"
    let rest = {
        let mut s2 = sim.state.clone();
        s2.q.iter_mut().for_each(|q| *q = 0.0);
        let ws = &mut sim.workspace;
        kinematics::forward_kinematics(&sim.model, &s2.q, &s2.v, ws);
        dynamics::potential_energy(&sim.model, ws)
    };
    let mut worst: f64 = 0.0;
    let mut max_speed: f64 = 0.0;
    while sim.state.time_s < 10.0 {
        sim.step();
        max_speed = max_speed.max(sim.state.v[1].abs());
        if sim.state.step_count % 10 == 0 {
            worst = worst.max((energy(&mut sim) - e0).abs());
        }
    }
    let rel = worst / (e0 - rest);
    assert!(max_speed > 3.0, "the motion is not trivial (max |q̇2| = {max_speed})");
    assert!(rel < 0.01, "energy drifted by {:.3} % of the swing energy", 100.0 * rel);
}

/// The standing quadruped (28.6 kg on four sphere feet, PD posture, PGS) at rest after 3 s: every
/// velocity below 1e-12, and the ground carries exactly m g (to 1e-12) with and without the
/// midpoint bias. The midpoint velocity is predicted from the last step's velocity change,
/// contact impulses included (docs/time-stepping.md, "Midpoint bias"), so a robot at rest
/// predicts rest. The third case forgets that history before every step and so uses the
/// unconstrained prediction ½ (v + v*), the start of a free fall of every link: its
/// velocity-product terms push the base down by 4.66e-5 of m g (at h = 1 ms), a force the
/// contacts then carry. It shows what the history is for, and that this test can fail.
#[test]
fn resting_ground_reaction_is_m_g_exactly_with_and_without_the_midpoint_bias() {
    let reaction = |midpoint: bool, forget_history: bool| {
        let mut scene = scene_file("config/examples/quadruped_stand.yaml");
        scene.model.midpoint_bias = midpoint;
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&SolverConfig::from_kind("pgs").unwrap()));
        for _ in 0..3000 {
            if forget_history {
                sim.state.last_step_end_v.fill(f64::NAN);
            }
            sim.step();
        }
        let m: f64 = sim.model.bodies.iter().map(|b| b.mass).sum();
        let fz: f64 = (0..sim.workspace.contacts.len()).map(|i| sim.workspace.contact_force_world(i).z).sum();
        let v_max = sim.state.v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        assert!(v_max < 1e-12, "at rest: |v| ≤ {v_max:e}");
        fz / (m * 9.81) - 1.0
    };
    let (without, with, unconstrained) = (reaction(false, false), reaction(true, false), reaction(true, true));
    println!(
        "ground reaction / m g − 1: without the midpoint bias {without:.3e}, with it {with:.3e}, \
         with the unconstrained midpoint prediction {unconstrained:.3e}"
    );
    assert!(without.abs() < 1e-12, "without the midpoint bias: {without:e}");
    assert!(with.abs() < 1e-12, "with the midpoint bias: {with:e}");
    assert!(unconstrained > 1e-5 && unconstrained < 1e-4, "with the unconstrained prediction: {unconstrained:e}");
}

/// RNEA written out body by body (every body with its own inertia, every parent the model's),
/// independent of the engine's passes: `τ_k = S_kᵀ f_b` for coordinate `k` of body `b`.
fn body_by_body_rnea(model: &Model, ws: &Workspace, v: &[f64], a: &[f64]) -> Vec<f64> {
    use contact_sim::math::{cross_force, cross_motion, spatial, Vec3, Vec6};
    let nb = model.bodies.len();
    let mut acc = vec![Vec6::zeros(); nb];
    let mut force = vec![Vec6::zeros(); nb];
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        let mut ab = body.parent.map_or(spatial(&Vec3::zeros(), &(-model.gravity)), |p| acc[p]);
        let mut joint_vel = Vec6::zeros();
        for k in j.v_index..j.v_index + j.kind.nv() {
            ab += ws.dof_axis[k] * a[k];
            joint_vel += ws.dof_axis[k] * v[k];
        }
        ab += cross_motion(&ws.body_velocity[b], &joint_vel);
        acc[b] = ab;
        let inertia = ws.body_inertia[b].to_matrix();
        force[b] = inertia * ab + cross_force(&ws.body_velocity[b], &(inertia * ws.body_velocity[b]));
    }
    for b in (0..nb).rev() {
        if let Some(p) = model.bodies[b].parent {
            let f = force[b];
            force[p] += f;
        }
    }
    let mut tau = vec![0.0; model.nv];
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            tau[k] = ws.dof_axis[k].dot(&force[b]);
        }
    }
    tau
}

#[test]
fn bodies_welded_by_fixed_joints_ride_with_their_moving_ancestor_and_change_nothing() {
    // The engine's passes run over the bodies with coordinates, each carrying the bodies welded
    // to it (the quadruped's four feet; the arm's F/T link, which has moving fingers below it;
    // the fixed arm's base, welded to the world). Inverse dynamics must equal RNEA over every
    // body with its own inertia, and M must still hold every welded body's mass.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // every shipped URDF with a fixed joint is among these (the F/T ones: a welded sensor link)
    let with_sensor_links = [("urdf/gripper2_ft.urdf", false), ("urdf/ft_table.urdf", false)];
    for &(urdf, floating) in SHIPPED.iter().chain(&with_sensor_links) {
        let model = robot_model(urdf, floating);
        let mut ws = Workspace::new(&model, &SolverConfig::default());
        let fixed: Vec<usize> = (0..model.bodies.len()).filter(|&b| model.bodies[b].joint.kind == contact_sim::model::JointKind::Fixed).collect();
        assert_eq!(ws.mass_bodies.bodies.len(), model.bodies.len() - fixed.len(), "{urdf}: mass bodies");
        for &(f, m) in &ws.mass_bodies.welded {
            assert_ne!(model.bodies[m].joint.kind, contact_sim::model::JointKind::Fixed, "{urdf}: {} carried by a welded body", model.bodies[f].name);
            assert_eq!(model.bodies[f].moving_body, m, "{urdf}: {} carried by {}", model.bodies[f].name, model.bodies[m].name);
        }
        if urdf == "urdf/quadruped.urdf" {
            assert_eq!(ws.mass_bodies.welded.len(), 4, "the quadruped's four feet");
        }
        for trial in 0..10 {
            let (state, a) = random_state(&model, &mut rng);
            kinematics::forward_kinematics(&model, &state.q, &state.v, &mut ws);
            dynamics::update_body_inertias(&model, &mut ws);
            let mut tau = vec![0.0; model.nv];
            dynamics::inverse_dynamics(&model, &mut ws, &state.v, &a, &mut tau);
            let reference = body_by_body_rnea(&model, &ws, &state.v, &a);
            let scale = reference.iter().map(|x| x.abs()).fold(1e-9, f64::max);
            for k in 0..model.nv {
                let err = (tau[k] - reference[k]).abs() / scale;
                assert!(err < 1e-12, "{urdf} trial {trial} dof {}: τ = {} against {} body by body (rel {err:e})", model.dof_names[k], tau[k], reference[k]);
            }
            // the carried inertias hold every welded body's mass once
            let carried: f64 = ws.mass_bodies.bodies.iter().map(|&b| ws.moving_inertia[b].mass).sum();
            let welded_to_world: f64 = fixed.iter().filter(|&&f| !ws.mass_bodies.welded.iter().any(|w| w.0 == f)).map(|&f| model.bodies[f].mass).sum();
            let total: f64 = model.bodies.iter().map(|b| b.mass).sum();
            assert!((carried + welded_to_world - total).abs() <= 1e-12 * total, "{urdf}: carried mass {carried} + welded to the world {welded_to_world} against {total}");
        }
    }
}
