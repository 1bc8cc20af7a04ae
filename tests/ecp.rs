//! The equivalent-contact-point step (`solver: {kind: ecp}`): the paper's cube slide, the
//! centre-of-pressure shift under a push and the tipping force, drops and tilted landings
//! without penetration, a sphere and a cylinder rolling up, energy, and the same cube slide on
//! four corner points with the impulse solvers for comparison.
//!
//! Unless stated: unit cube of 1 kg (I = m/6), h = 0.01 s, g = 9.8 m/s², e_t = e_o = 1,
//! e_r = 1 m, signed-gap form.


use crate::common::*;
use contact_sim::contact::ecp::{ConvexShape, EcpBody, EcpBodyState, EcpContact, EcpParams, EcpPlane, EcpStepper, GapMode};
use contact_sim::contact::SolverConfig;
use contact_sim::math::{Mat3, Pose, Vec3};
use nalgebra::UnitQuaternion;

const H: f64 = 0.01;
const G: f64 = 9.8;
/// Time step of the robot scenes (s).
const H_ROBOT: f64 = 0.001;

fn gravity() -> Vec3 {
    Vec3::new(0.0, 0.0, -G)
}

fn unit_cube() -> EcpBody {
    EcpBody { mass_kg: 1.0, inertia_body: Mat3::identity() / 6.0, shape: ConvexShape::Box { half_extents_m: [0.5; 3] }, geom_in_body: Pose::identity() }
}

fn at(com: Vec3, rotation: UnitQuaternion<f64>, velocity: Vec3, angular_velocity: Vec3) -> EcpBodyState {
    EcpBodyState { com_m: com, rotation, velocity, angular_velocity }
}

/// Signed height of the body's lowest point above the plane z = 0 (m).
fn lowest_point(body: &EcpBody, s: &EcpBodyState) -> f64 {
    lowest_point_on(body, s, &EcpPlane::new(Vec3::z(), 0.0, 0.0))
}

/// Kinetic plus potential energy (J).
fn energy(body: &EcpBody, s: &EcpBodyState) -> f64 {
    let r = s.rotation.to_rotation_matrix().into_inner();
    let inertia = r * body.inertia_body * r.transpose();
    0.5 * body.mass_kg * s.velocity.norm_squared() + 0.5 * s.angular_velocity.dot(&(inertia * s.angular_velocity)) + body.mass_kg * G * s.com_m.z
}

/// The contact impulse and ECP implied by the motion alone (Proposition 2, Sec. V): from the
/// start state `s0`, the end state `s1` and the applied impulses (gravity included, and the
/// explicit gyroscopic impulse), the linear momentum balance gives `(p_n, p_t, p_o)`; the angular
/// balance `r × A + n p_r = B` with `n·r = d − n·x⁺` gives the lever `r` and `p_r` (a 4×4 system of
/// determinant −p_n²). Returns `([p_n, p_t, p_o, p_r], ECP)`.
fn proposition2(body: &EcpBody, s0: &EcpBodyState, s1: &EcpBodyState, plane: &EcpPlane, applied: (&Vec3, &Vec3)) -> ([f64; 4], Vec3) {
    let r0 = s0.rotation.to_rotation_matrix().into_inner();
    let inertia = r0 * body.inertia_body * r0.transpose();
    let p_lin = gravity() * (body.mass_kg * H) + applied.0;
    let p_ang = -s0.angular_velocity.cross(&(inertia * s0.angular_velocity)) * H + applied.1;
    let a = (s1.velocity - s0.velocity) * body.mass_kg - p_lin;
    let (n, t, o) = (plane.normal, plane.tangent1, plane.tangent2);
    let b = inertia * (s1.angular_velocity - s0.angular_velocity) - p_ang;
    // r × A = −[A]× r
    let ax = a.cross_matrix();
    let mut m = nalgebra::Matrix4::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&(-ax));
    m.fixed_view_mut::<3, 1>(0, 3).copy_from(&n);
    m.fixed_view_mut::<1, 3>(3, 0).copy_from(&n.transpose());
    let rhs = nalgebra::Vector4::new(b.x, b.y, b.z, plane.offset_m - n.dot(&s1.com_m));
    let sol = m.lu().solve(&rhs).expect("p_n ≠ 0: the system is regular");
    let r = Vec3::new(sol[0], sol[1], sol[2]);
    ([a.dot(&n), a.dot(&t), a.dot(&o), sol[3]], s1.com_m + r)
}

/// Asserts the step's solution equals the Proposition-2 reconstruction (when `p_n` is not tiny).
fn assert_proposition2(k: usize, body: &EcpBody, s0: &EcpBodyState, s1: &EcpBodyState, plane: &EcpPlane, c: &EcpContact, applied: (&Vec3, &Vec3)) {
    if !(c.in_contact && c.normal_impulse > 1e-3 * body.mass_kg * G * H) {
        return;
    }
    let (p, ecp) = proposition2(body, s0, s1, plane, applied);
    let solved = [c.normal_impulse, c.tangent_impulse[0], c.tangent_impulse[1], c.torsion_impulse];
    for (i, (x, y)) in p.iter().zip(solved.iter()).enumerate() {
        assert!((x - y).abs() < 1e-8, "step {k}: impulse {i}: Proposition 2 gives {x}, the step {y}");
    }
    assert!((ecp - c.ecp_m).norm() < 1e-8 * (body.mass_kg * G * H / c.normal_impulse).max(1.0), "step {k}: ECP {ecp:?} vs {:?}", c.ecp_m);
}

/// Steps `n` times without applied impulses, checking after every step: converged, no
/// penetration, friction inside the limit surface, the Proposition-2 reconstruction, energy not
/// increasing (isotropic bodies).
fn run(stepper: &mut EcpStepper, body: &EcpBody, s: &mut EcpBodyState, plane: &EcpPlane, n: usize, mut each: impl FnMut(usize, &EcpBodyState, &EcpContact)) {
    let isotropic = (body.inertia_body - Mat3::identity() * body.inertia_body[(0, 0)]).norm() < 1e-12;
    for k in 1..=n {
        let e0 = energy(body, s);
        let s0 = *s;
        let c = stepper.step(body, s, Some(plane), &gravity(), H, &Vec3::zeros(), &Vec3::zeros());
        assert!(c.solve.converged, "step {k}: not converged: {c:?}");
        assert_proposition2(k, body, &s0, s, plane, &c, (&Vec3::zeros(), &Vec3::zeros()));
        assert!(lowest_point(body, s) >= -1e-9, "step {k}: penetration {}", lowest_point(body, s));
        let (pt, po) = (c.tangent_impulse[0], c.tangent_impulse[1]);
        let zeta = (plane.friction * c.normal_impulse).powi(2) - pt * pt - po * po - c.torsion_impulse.powi(2);
        assert!(zeta >= -1e-12, "step {k}: outside the limit surface by {zeta}");
        if isotropic {
            assert!(energy(body, s) <= e0 + 1e-9, "step {k}: energy rose from {e0} to {}", energy(body, s));
        }
        each(k, s, &c);
    }
}

#[test]
fn paper_s1_cube_slides_straight_and_stops_in_step_426_after_10_6043_m() {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.12);
    let mut s = at(Vec3::new(0.0, 0.0, 0.5), UnitQuaternion::identity(), Vec3::new(4.0, 3.0, 0.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let slip = Vec3::new(0.8, 0.6, 0.0);
    let mut stop_step = None;
    let mut max_iterations_after_first = 0;
    run(&mut stepper, &body, &mut s, &plane, 500, |k, s, c| {
        assert!(c.in_contact && c.active_inequalities == 1, "step {k}: face contact expected: {c:?}");
        assert!((c.normal_impulse - 0.098).abs() < 1e-10, "step {k}: p_n = {}", c.normal_impulse);
        assert!(s.angular_velocity.norm() < 1e-10, "step {k}: the cube turned: ω = {:?}", s.angular_velocity);
        let friction = plane.tangent1 * c.tangent_impulse[0] + plane.tangent2 * c.tangent_impulse[1];
        let offset = c.ecp_m - Vec3::new(s.com_m.x, s.com_m.y, 0.0);
        if s.velocity.norm() > 1e-9 {
            // sliding: Coulomb friction against the slip, the ECP μ·0.5 m ahead of the centre
            assert!((friction + slip * (0.12 * 0.098)).norm() < 1e-10, "step {k}: friction {friction:?}");
            assert!((offset - slip * (0.12 * 0.5)).norm() < 1e-9, "step {k}: ECP offset {offset:?}");
            // the heading never changes
            assert!((s.velocity.normalize() - slip).norm() < 1e-9, "step {k}: heading {:?}", s.velocity);
        } else if *stop_step.get_or_insert(k) < k {
            // after the stopping step (whose friction still decelerates) nothing pulls sideways
            assert!(offset.norm() < 1e-9, "step {k}: at rest the ECP is under the centre: {offset:?}");
        }
        if k == 400 {
            assert!((s.com_m - Vec3::new(8.45478, 6.34109, 0.5)).norm() < 2e-5, "t = 4 s: x = {:?}", s.com_m);
            assert!((s.velocity - Vec3::new(0.2368, 0.1776, 0.0)).norm() < 1e-4, "t = 4 s: v = {:?}", s.velocity);
        }
        if k > 1 && s.velocity.norm() > 1e-9 {
            max_iterations_after_first = max_iterations_after_first.max(c.solve.iterations);
        }
    });
    assert_eq!(stop_step, Some(426), "the discrete slide stops in step 426");
    let travelled = Vec3::new(s.com_m.x, s.com_m.y, 0.0).norm();
    assert!((travelled - 10.6043).abs() < 1e-4, "slid {travelled} m");
    assert!((s.com_m - Vec3::new(8.48341, 6.36256, 0.5)).norm() < 2e-5, "rest at {:?}", s.com_m);
    assert!(max_iterations_after_first <= 3, "{max_iterations_after_first} Newton iterations in a step of sustained sliding");
}

/// The cube pushed along +x by `force_n` at the world point (0, 0, 0.9 m), with μ = 1.
fn pushed_cube(force_n: f64, steps: usize) -> (EcpBodyState, EcpContact) {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 1.0);
    let mut s = at(Vec3::new(0.0, 0.0, 0.5), UnitQuaternion::identity(), Vec3::zeros(), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let mut last = EcpContact::default();
    for k in 0..steps {
        let f = Vec3::new(force_n, 0.0, 0.0);
        let arm = Vec3::new(0.0, 0.0, 0.9) - s.com_m;
        let (s0, applied) = (s, (f * H, arm.cross(&f) * H));
        last = stepper.step(&body, &mut s, Some(&plane), &gravity(), H, &applied.0, &applied.1);
        assert!(last.solve.converged, "F = {force_n} N, step {k}: {last:?}");
        assert_proposition2(k, &body, &s0, &s, &plane, &last, (&applied.0, &applied.1));
        assert!(lowest_point(&body, &s) >= -1e-9, "F = {force_n} N, step {k}: penetration");
    }
    (s, last)
}

#[test]
fn a_push_shifts_the_ecp_by_f_h_over_m_g_and_tips_the_cube_past_5_444_n() {
    for force in [3.0, 5.0] {
        let (s, c) = pushed_cube(force, 50);
        let expected = force * 0.9 / G;
        assert!((c.ecp_m.x - expected).abs() < 1e-5, "F = {force} N: ECP x = {} vs F H/(m g) = {expected}", c.ecp_m.x);
        assert!(s.velocity.norm() < 1e-9 && s.angular_velocity.norm() < 1e-9, "F = {force} N: the cube moved");
        assert_eq!(c.active_inequalities, 1, "F = {force} N: face contact");
    }
    // F = 6 N > m g 0.5 / 0.9 = 5.444 N: the cube tips about its edge x = +0.5
    let (s, c) = pushed_cube(6.0, 50);
    assert_eq!(c.active_inequalities, 2, "edge contact while tipping: {c:?}");
    let r = s.rotation.to_rotation_matrix().into_inner();
    let pivot_x = s.com_m.x + 0.5 * (r[(0, 0)] - r[(0, 2)]); // body point (0.5, ·, −0.5)
    assert!((c.ecp_m.x - pivot_x).abs() < 1e-6 && c.ecp_m.z.abs() < 1e-9, "ECP on the pivot edge x = {pivot_x}: {:?}", c.ecp_m);
    assert!(s.angular_velocity.y > 0.3, "tipping forward: ω = {:?}", s.angular_velocity);
    assert!((s.com_m.x - 0.0603).abs() < 0.01 && (s.com_m.z - 0.5537).abs() < 0.01 && (s.angular_velocity.y - 0.520).abs() < 0.05, "after 0.5 s: x = {:?}, ω = {:?}", s.com_m, s.angular_velocity);
}

#[test]
fn flat_drop_lands_exactly_touching_without_penetration_and_comes_to_rest() {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.2);
    let mut s = at(Vec3::new(0.0, 0.0, 0.55), UnitQuaternion::identity(), Vec3::new(0.5, 0.0, -2.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    run(&mut stepper, &body, &mut s, &plane, 100, |k, s, c| match k {
        1 | 2 => assert!(!c.in_contact, "step {k}: free flight"),
        3 => {
            assert!((s.com_m.z - 0.5).abs() < 1e-10 && (s.velocity.z + 0.706).abs() < 1e-9, "step 3 ends touching: {s:?}");
            assert!((c.normal_impulse - 1.588).abs() < 1e-9 && (s.velocity.x - 0.1824).abs() < 1e-9, "step 3: {c:?} {s:?}");
            assert!((c.ecp_m.x - s.com_m.x - 0.1).abs() < 1e-9, "step 3: ECP μ·0.5 ahead: {:?}", c.ecp_m);
        }
        4 => assert!(s.velocity.z.abs() < 1e-10 && (c.normal_impulse - 0.804).abs() < 1e-9 && (s.velocity.x - 0.0216).abs() < 1e-9, "step 4: {c:?} {s:?}"),
        6 => assert!(s.velocity.norm() < 1e-9, "step 6: at rest"),
        k if k > 6 => {
            assert!(s.velocity.norm() < 1e-9, "step {k}: at rest");
            assert!((c.normal_impulse - 0.098).abs() < 1e-9 && (c.ecp_m.x - s.com_m.x).abs() < 1e-9, "step {k}: {c:?}");
        }
        _ => {}
    });
    assert!((s.com_m.x - 0.0121).abs() < 1e-4, "rest at x = {}", s.com_m.x);
}

#[test]
fn tilted_landings_go_vertex_edge_face_and_come_to_rest() {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.5);
    // released at rest with the lowest point 5 cm above the ground, μ = 0.5; the rest positions
    // are those of an independent prototype of the same equations (to 1 mm)
    for (name, rot, modes_expected, rest) in [
        ("edge first (20° about x)", UnitQuaternion::from_euler_angles(20f64.to_radians(), 0.0, 0.0), vec![2, 1], Vec3::new(0.0, 0.2229, 0.5)),
        (
            "vertex first (15° about y after 20° about x)",
            UnitQuaternion::from_euler_angles(0.0, 15f64.to_radians(), 0.0) * UnitQuaternion::from_euler_angles(20f64.to_radians(), 0.0, 0.0),
            vec![3, 2, 1],
            Vec3::new(-0.194, 0.234, 0.5),
        ),
    ] {
        let mut s = at(Vec3::zeros(), rot, Vec3::zeros(), Vec3::zeros());
        s.com_m.z = 0.05 - lowest_point(&body, &s);
        let mut stepper = EcpStepper::new(EcpParams::default());
        let mut modes: Vec<usize> = Vec::new();
        run(&mut stepper, &body, &mut s, &plane, 200, |_, _, c| {
            if c.in_contact && modes.last() != Some(&c.active_inequalities) {
                modes.push(c.active_inequalities);
            }
        });
        assert_eq!(modes, modes_expected, "{name}: contact modes (active inequalities) in order");
        assert!((s.com_m - rest).norm() < 1e-3, "{name}: rest at {:?}", s.com_m);
        assert!(s.velocity.norm() < 1e-9 && s.angular_velocity.norm() < 1e-9, "{name}: still moving {s:?}");
        assert!((s.com_m.z - 0.5).abs() < 1e-9, "{name}: resting on a face at z = {}", s.com_m.z);
        println!("{name}: modes {modes:?}, rest at {:?}", s.com_m);
    }
}

#[test]
fn sphere_slides_then_rolls_at_five_sevenths_of_its_speed() {
    let body = EcpBody { mass_kg: 1.0, inertia_body: Mat3::identity() * 0.1, shape: ConvexShape::Sphere { radius_m: 0.5 }, geom_in_body: Pose::identity() };
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.2);
    let mut s = at(Vec3::new(0.0, 0.0, 0.5), UnitQuaternion::identity(), Vec3::new(2.0, 0.0, 0.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let mut rolling_from = None;
    run(&mut stepper, &body, &mut s, &plane, 60, |k, s, c| {
        assert!((c.ecp_m - (s.com_m - Vec3::z() * 0.5)).norm() < 1e-9, "step {k}: ECP below the centre");
        let slip = s.velocity.x - 0.5 * s.angular_velocity.y;
        if slip.abs() < 1e-9 {
            rolling_from.get_or_insert(k);
        } else {
            assert!((slip - (2.0 - 3.5 * 0.2 * G * H * k as f64)).abs() < 1e-9, "step {k}: slip {slip}");
        }
    });
    assert_eq!(rolling_from, Some(30));
    assert!((s.velocity.x - 10.0 / 7.0).abs() < 1e-9 && (s.angular_velocity.y - 20.0 / 7.0).abs() < 1e-9, "v = {:?}, ω = {:?}", s.velocity, s.angular_velocity);
}

/// The cylinder of the paper's second scenario: radius 1 m, length 5 m, 10 kg, axis along x.
fn lying_cylinder() -> (EcpBody, UnitQuaternion<f64>) {
    let (m, r, l) = (10.0, 1.0, 5.0);
    let (axial, transverse) = (0.5 * m * r * r, m * (3.0 * r * r + l * l) / 12.0);
    let body = EcpBody {
        mass_kg: m,
        inertia_body: Mat3::from_diagonal(&Vec3::new(transverse, transverse, axial)),
        shape: ConvexShape::Cylinder { radius_m: r, half_length_m: 0.5 * l },
        geom_in_body: Pose::identity(),
    };
    (body, UnitQuaternion::from_euler_angles(0.0, std::f64::consts::FRAC_PI_2, 0.0))
}

#[test]
fn cylinder_rolls_up_at_two_thirds_and_slides_axially_with_the_ecp_shifted_mu_rho() {
    let (body, rot) = lying_cylinder();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.3);
    // across the axis: slides, then rolls at 2/3 v0
    let mut s = at(Vec3::new(0.0, 0.0, 1.0), rot, Vec3::new(0.0, -1.4, 0.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    run(&mut stepper, &body, &mut s, &plane, 40, |k, s, c| {
        let d = c.ecp_m - s.com_m;
        assert!(d.x.abs() < 1e-8 && d.y.abs() < 1e-8, "step {k}: ECP under the axis: {d:?}");
    });
    assert!((s.velocity.y + 1.4 * 2.0 / 3.0).abs() < 1e-8 && (s.angular_velocity.x - 1.4 * 2.0 / 3.0).abs() < 1e-8, "v = {:?}, ω = {:?}", s.velocity, s.angular_velocity);
    // along the axis: the ECP runs μ ρ ahead while sliding; stops after 68 steps at 0.67028 m
    let mut s = at(Vec3::new(0.0, 0.0, 1.0), rot, Vec3::new(2.0, 0.0, 0.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let mut stopped = None;
    run(&mut stepper, &body, &mut s, &plane, 80, |k, s, c| {
        let along = c.ecp_m.x - s.com_m.x;
        if s.velocity.x > 1e-9 {
            assert!((along - 0.3).abs() < 1e-8 && (c.ecp_m.y - s.com_m.y).abs() < 1e-8, "step {k}: L = {along}");
        } else if *stopped.get_or_insert(k) < k {
            assert!(along.abs() < 1e-8, "step {k}: at rest L = {along}");
        }
    });
    assert_eq!(stopped, Some(69), "sliding for 68 steps");
    assert!((s.com_m.x - 0.67028).abs() < 1e-5, "stopped at {}", s.com_m.x);
}

#[test]
fn the_literal_and_signed_forms_agree_on_the_slide_and_the_push() {
    // the literal form also has penetrating roots; the step rejects those and tries its next
    // guess, so wherever it converges it must agree with the signed form
    let body = unit_cube();
    for (mu, v0, push) in [(0.12, Vec3::new(4.0, 3.0, 0.0), 0.0), (1.0, Vec3::zeros(), 3.0)] {
        let plane = EcpPlane::new(Vec3::z(), 0.0, mu);
        let start = at(Vec3::new(0.0, 0.0, 0.5), UnitQuaternion::identity(), v0, Vec3::zeros());
        let (mut a, mut b) = (start, start);
        let mut signed = EcpStepper::new(EcpParams::default());
        let mut literal = EcpStepper::new(EcpParams { gap_mode: GapMode::PaperMax, ..EcpParams::default() });
        let mut compared = 0;
        for k in 0..100 {
            let f = Vec3::new(push, 0.0, 0.0);
            let (fa, ma) = (f * H, (Vec3::new(0.0, 0.0, 0.9) - a.com_m).cross(&f) * H);
            let (mb, ca) = ((Vec3::new(0.0, 0.0, 0.9) - b.com_m).cross(&f) * H, signed.step(&body, &mut a, Some(&plane), &gravity(), H, &fa, &ma));
            let cb = literal.step(&body, &mut b, Some(&plane), &gravity(), H, &fa, &mb);
            assert!(ca.solve.converged, "signed, step {k}");
            if !cb.solve.converged {
                b = a;
                continue;
            }
            compared += 1;
            assert!((a.com_m - b.com_m).norm() < 1e-8 && (ca.ecp_m - cb.ecp_m).norm() < 1e-8, "μ = {mu}, step {k}: {a:?} vs {b:?}");
            assert!(lowest_point(&body, &b) >= -1e-8, "literal form, step {k}: penetration");
        }
        assert!(compared >= 90, "μ = {mu}: the literal form converged in only {compared} of 100 steps");
    }
}

/// Heading drift (rad): the largest angle between the displacement from the start and the
/// initial sliding direction.
fn heading_drift(path: &[Vec3], dir: &Vec3) -> f64 {
    path.iter().filter(|p| p.norm() > 1e-3).map(|p| (p.normalize().dot(dir)).clamp(-1.0, 1.0).acos()).fold(0.0, f64::max)
}

/// The paper's cube slide as a scene: 1 m, 1 kg cube, μ = 0.12, v0 = (4, 3) m/s, h = 0.01 s.
const S1_SCENE: &str = "gravity: [0, 0, -9.8]\ntimestep_s: 0.01\nmaterials: {default: {friction: 0.12}}\nobjects:\n  - {name: cube, shape: {type: box, size: [1, 1, 1]}, mass_kg: 1.0, position: [0, 0, 0.5], linear_velocity: [4.0, 3.0, 0.0]}\n";

#[test]
fn side_by_side_the_ecp_slides_straight_where_corner_points_may_turn() {
    let dir = Vec3::new(0.8, 0.6, 0.0);
    for solver in ["ecp", "pgs", "bisection"] {
        let mut sim = sim(S1_SCENE, solver);
        let mut path = Vec::new();
        while sim.state.time_s < 4.5 - 1e-9 {
            sim.step();
            let p = object_position(&sim, "cube");
            path.push(Vec3::new(p.x, p.y, 0.0));
        }
        let drift = heading_drift(&path, &dir);
        let end = path.last().unwrap().norm();
        println!("{solver:>9}: heading drift {drift:.3e} rad, slid {end:.4} m (discrete ECP 10.6043 m, continuous v0²/(2μg) = 10.6293 m)");
        assert!(end > 10.0 && end < 11.0, "{solver}: slid {end} m");
        if solver == "ecp" {
            assert!(drift < 1e-6, "ecp: heading drift {drift} rad");
            assert!((end - 10.6043).abs() < 1e-4, "ecp through the pipeline: slid {end} m");
        }
    }
}

#[test]
fn through_the_pipeline_the_contact_force_is_the_weight_applied_at_the_ecp() {
    // sliding: the reported contact (one, at the ECP) carries the ECP's force, with its moment
    let mut sim = sim(S1_SCENE, "ecp");
    for _ in 0..50 {
        let r = sim.step();
        assert!(r.solve.converged);
        assert_impulses_in_cone(&sim);
    }
    let tree = object_tree(&sim, "cube");
    let f = contact_force_on_tree(&sim, tree);
    assert!((f - Vec3::new(-0.12 * 0.8 * G, -0.12 * 0.6 * G, G)).norm() < 1e-9, "contact force {f:?}");
    // the net moment about the centre of mass at the start of the step (where the contacts are)
    // equals that of the ECP force: the ECP is μ·0.5 m ahead of the centre, on the ground
    let ws = &sim.workspace;
    let body = sim.model.objects[0].body;
    let com = ws.body_pose[body].translation.vector;
    let mut moment = Vec3::zeros();
    for (i, c) in ws.contacts.iter().enumerate() {
        moment += (c.position - com).cross(&ws.contact_force_world(i));
    }
    // the ECP as a material point: 0.06 m ahead of the centre along the slip, 0.5 m below it
    let lever = Vec3::new(0.8 * 0.06, 0.6 * 0.06, -0.5);
    assert!((moment - lever.cross(&f)).norm() < 1e-9, "moment {moment:?} vs {:?}", lever.cross(&f));
}

#[test]
fn scenes_the_ecp_cannot_simulate_are_refused_with_the_reason() {
    // two free objects touching are covered; a free object touching a static one is not
    let stack = scene_file("config/examples/box_stack.yaml");
    assert!(SolverConfig::from_kind("ecp").unwrap().check_model(&stack.model, "box_stack.yaml").is_ok());
    let on_static = scene("objects:\n  - {name: table, shape: {type: box, size: [1, 1, 0.2]}, mass_kg: 1.0, fixed: true, position: [0, 0, 0.1]}\n  - {name: b, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, position: [0, 0, 0.3]}\n");
    let err = SolverConfig::from_kind("ecp").unwrap().check_model(&on_static.model, "s.yaml").unwrap_err();
    assert!(err.contains("s.yaml") && err.contains("ecp") && err.contains("does not move") && err.contains("pgs"), "{err}");
    // robots whose links touch the ground and free objects with boxes, spheres and cylinders
    // are covered (mimic joints included); a link that can touch a static object is not (named
    // in the reason)
    let robot = scene_file("config/examples/quadruped_stand.yaml");
    assert!(SolverConfig::from_kind("ecp").unwrap().check_model(&robot.model, "q.yaml").is_ok());
    let arm = scene_file("config/examples/arm_push_box.yaml");
    assert!(SolverConfig::from_kind("ecp").unwrap().check_model(&arm.model, "arm.yaml").is_ok());
    let near_object = scene("robots:\n  - {urdf: ../../urdf/quadruped_box_feet.urdf, base: {mode: floating, position: [0, 0, 0.45]}}\nobjects:\n  - {name: crate, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, position: [0.2, 0.3, 0.1]}\n");
    assert!(SolverConfig::from_kind("ecp").unwrap().check_model(&near_object.model, "n.yaml").is_ok());
    let near_static = scene("robots:\n  - {urdf: ../../urdf/quadruped_box_feet.urdf, base: {mode: floating, position: [0, 0, 0.45]}}\nobjects:\n  - {name: crate, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, fixed: true, position: [0.2, 0.3, 0.1]}\n");
    let err = SolverConfig::from_kind("ecp").unwrap().check_model(&near_static.model, "n.yaml").unwrap_err();
    assert!(err.contains("'crate'") && err.contains("robot 'quadruped_box_feet'") && err.contains("ground plane and with free objects only"), "{err}");
    let capsule = scene("objects:\n  - {name: c, shape: {type: capsule, radius: 0.05, length: 0.3}, mass_kg: 1.0, position: [0, 0, 0.05]}\n");
    let err = SolverConfig::from_kind("ecp").unwrap().check_model(&capsule.model, "c.yaml").unwrap_err();
    assert!(err.contains("'c'") && err.contains("box, sphere or cylinder"), "{err}");
}

#[test]
fn bad_parameters_are_refused_naming_the_field() {
    for (yaml, field) in [("{kind: ecp, e_r_m: 0}", "solver.e_r_m"), ("{kind: ecp, tolerance: -1}", "solver.tolerance"), ("{kind: ecp, max_iterations: 0}", "solver.max_iterations")] {
        let cfg: SolverConfig = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(cfg.validate().unwrap_err().field, field, "{yaml}");
    }
    let cfg: SolverConfig = serde_yaml::from_str("{kind: ecp, gap_mode: paper_max}").unwrap();
    assert!(cfg.validate().is_ok());
}

#[test]
fn a_tall_box_sliding_with_mu_h_beyond_its_half_width_tips_over_and_one_within_slides() {
    // ecp_box_tip.yaml: 0.1 × 0.1 × 0.4 m, μ = 0.5: the ECP would sit μ · 0.2 = 0.1 m ahead of the
    // centre, outside the 0.05 m half-width: the box tips onto its front face
    let scene = scene_file("config/examples/ecp_box_tip.yaml");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
    let mut min_height = f64::INFINITY;
    while sim.state.time_s < 3.0 - 1e-9 {
        let r = sim.step();
        assert!(r.solve.converged, "t = {}", sim.state.time_s);
        assert_impulses_in_cone(&sim);
        min_height = min_height.min(object_position(&sim, "box").z);
    }
    let p = object_position(&sim, "box");
    assert!((p.z - 0.05).abs() < 1e-6, "lying on a long face: centre at z = {}", p.z);
    assert!(object_velocity(&sim, "box").norm() < 1e-6, "at rest");
    assert!(min_height > 0.05 - 1e-6, "never below its lying height: {min_height}");
    // μ = 0.2: 0.04 m < 0.05 m, it slides upright and stops after about v0²/(2 μ g)
    let yaml = std::fs::read_to_string(path("config/examples/ecp_box_tip.yaml")).unwrap().replace("friction: 0.5", "friction: 0.2");
    let mut upright = crate::common::sim(&yaml, "ecp");
    while upright.state.time_s < 1.5 {
        upright.step();
    }
    let p = object_position(&upright, "box");
    let expected = 2.0 * 2.0 / (2.0 * 0.2 * 9.81);
    assert!((p.z - 0.2).abs() < 1e-6, "upright: centre at z = {}", p.z);
    assert!((p.x - expected).abs() / expected < 0.01, "slid {} m vs v0²/(2μg) = {expected} m", p.x);
}

#[test]
fn energy_never_increases_across_a_step_without_applied_impulses() {
    // Spheres thrown spinning at the ground (impact, sliding, rolling): the contact point is
    // always straight below the centre, so the normal impulse does no work after the landing
    // step: E⁺ ≤ E + 1e-9 J in every step. Cubes thrown tumbling: the end-of-step pose touches,
    // but the vertex's end velocity need not be tangent to the ground (the constraint holds on
    // positions), so a sticking vertex can gain a little energy; bounded here by 1e-4 of the
    // energy per step and printed (docs/ecp.md, "Known limits"). The other tests of this file
    // check E⁺ ≤ E + 1e-9 J in every step of the paper's scenarios (slides, drops, tilted
    // landings, rolling).
    let sphere = EcpBody { mass_kg: 1.0, inertia_body: Mat3::identity() * 0.1, shape: ConvexShape::Sphere { radius_m: 0.5 }, geom_in_body: Pose::identity() };
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.4);
    for (name, body, bound) in [("sphere", sphere, 1e-9), ("cube", unit_cube(), 1e-4)] {
        let mut worst_gain: f64 = 0.0;
        for k in 0..4 {
            let a = k as f64;
            let rot = UnitQuaternion::from_euler_angles(0.3 * a, -0.2 * a, 0.7 * a);
            let mut s = at(Vec3::new(0.0, 0.0, 1.2), rot, Vec3::new(1.5 - a, 0.5 * a, -1.0 - 0.5 * a), Vec3::new(2.0 - a, 1.0, 0.5 * a));
            let mut stepper = EcpStepper::new(EcpParams::default());
            let (e_start, mut contacts) = (energy(&body, &s), 0);
            for step in 0..300 {
                let e0 = energy(&body, &s);
                let c = stepper.step(&body, &mut s, Some(&plane), &gravity(), H, &Vec3::zeros(), &Vec3::zeros());
                assert!(c.solve.converged && lowest_point(&body, &s) >= -1e-9, "{name}, throw {k}, step {step}: {c:?}");
                let gain = energy(&body, &s) - e0;
                worst_gain = worst_gain.max(gain / e0.abs().max(1.0));
                assert!(gain <= bound * e0.abs().max(1.0), "{name}, throw {k}, step {step}: energy rose by {gain} J");
                contacts += c.in_contact as usize;
            }
            assert!(contacts > 100, "{name}, throw {k}: it must land ({contacts} contact steps)");
            assert!(energy(&body, &s) < e_start - 1.0, "{name}, throw {k}: the landing must dissipate");
        }
        println!("{name}: largest energy gain in a step {worst_gain:.2e} of the energy");
    }
}

#[test]
fn a_cube_thrown_upward_feels_no_contact_and_loses_exactly_g_h_per_step() {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.5);
    let mut s = at(Vec3::new(0.0, 0.0, 0.5), UnitQuaternion::identity(), Vec3::new(0.0, 0.0, 3.0), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let mut vz = 3.0;
    run(&mut stepper, &body, &mut s, &plane, 30, |k, s, c| {
        assert!(!c.in_contact && c.normal_impulse == 0.0 && c.tangent_impulse == [0.0; 2] && c.torsion_impulse == 0.0, "step {k}: {c:?}");
        vz -= G * H;
        assert!((s.velocity.z - vz).abs() < 1e-12, "step {k}: v_z = {}", s.velocity.z);
    });
}

#[test]
fn a_scene_built_without_the_check_moves_what_the_scheme_does_not_own_without_contact() {
    // `Simulation::from_scene` does not check the coverage; the scheme then lets the trees it does
    // not own move freely: a capsule falls through the ground like in free flight, while the box
    // beside it lands on its ECP
    let yaml = "timestep_s: 0.01\nobjects:\n  - {name: c, shape: {type: capsule, radius: 0.05, length: 0.3}, mass_kg: 1.0, position: [0, 0, 0.05]}\n  - {name: b, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, position: [1, 0, 0.1]}\n";
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene(yaml), Some(&SolverConfig::from_kind("ecp").unwrap()));
    let z0 = object_position(&sim, "c").z;
    for _ in 0..10 {
        sim.step();
    }
    let t = sim.state.time_s;
    let g = -sim.model.gravity.z;
    let fallen = z0 - object_position(&sim, "c").z;
    // explicit position update after the velocity (semi-implicit Euler): g h² n(n+1)/2
    let expected = g * 0.01 * 0.01 * 55.0;
    assert!((fallen - expected).abs() < 1e-9, "fell {fallen} m in {t} s, expected {expected}");
    assert!((object_position(&sim, "b").z - 0.1).abs() < 1e-9, "the box stands: {:?}", object_position(&sim, "b"));
}

#[test]
fn on_an_incline_below_the_friction_angle_the_ecp_sits_under_the_centre_of_mass_vertically() {
    // unit cube on a 20° slope with μ = 0.5 (tan 20° = 0.364): it sticks, the ground reaction is
    // vertical and passes through the centre of mass, so the ECP is 0.5 tan 20° = 0.182 m
    // downhill of the centre's foot on the slope
    let theta = 20f64.to_radians();
    let n = Vec3::new(theta.sin(), 0.0, theta.cos());
    let downhill = Vec3::new(theta.cos(), 0.0, -theta.sin());
    let body = unit_cube();
    let plane = EcpPlane::new(n, 0.0, 0.5);
    let mut s = at(n * 0.5, UnitQuaternion::from_euler_angles(0.0, theta, 0.0), Vec3::zeros(), Vec3::zeros());
    let mut stepper = EcpStepper::new(EcpParams::default());
    let mut last = EcpContact::default();
    for k in 0..100 {
        let s0 = s;
        last = stepper.step(&body, &mut s, Some(&plane), &gravity(), H, &Vec3::zeros(), &Vec3::zeros());
        assert!(last.solve.converged && lowest_point_on(&body, &s, &plane) >= -1e-9, "step {k}: {last:?}");
        assert_proposition2(k, &body, &s0, &s, &plane, &last, (&Vec3::zeros(), &Vec3::zeros()));
    }
    assert!(s.velocity.norm() < 1e-12 && s.angular_velocity.norm() < 1e-12, "sticks: {s:?}");
    let foot = s.com_m - n * 0.5;
    let offset = last.ecp_m - foot;
    assert!((offset - downhill * (0.5 * theta.tan())).norm() < 1e-9, "ECP offset {offset:?}");
    assert!((last.normal_impulse - G * theta.cos() * H).abs() < 1e-12, "p_n = {}", last.normal_impulse);
    let friction = plane.tangent1 * last.tangent_impulse[0] + plane.tangent2 * last.tangent_impulse[1];
    assert!((friction + downhill * (G * theta.sin() * H)).norm() < 1e-12, "friction {friction:?}");
}

/// Signed distance of the body's lowest point to `plane` (m).
fn lowest_point_on(body: &EcpBody, s: &EcpBodyState, plane: &EcpPlane) -> f64 {
    let geom = Pose::from_parts(s.com_m.into(), s.rotation) * body.geom_in_body;
    body.shape.plane_gap(&geom.translation.vector, &geom.rotation.to_rotation_matrix().into_inner(), &plane.normal, plane.offset_m)
}

/// The ECP scheme of a simulation (its last step's contacts).
fn ecp_scheme(sim: &contact_sim::sim::Simulation) -> &contact_sim::contact::EcpScheme {
    match &sim.workspace.solver {
        contact_sim::contact::Solver::Ecp(s) => s,
        _ => panic!("not the ecp method"),
    }
}

#[test]
fn contact_markers_show_the_solved_ecp_with_its_force_and_wrenches_carry_the_friction_moment() {
    use contact_sim::rt::messages::{JointLayout, Sample};
    // the paper's cube slide: one marker per patch, at the ECP the step solved (carried to the
    // start-of-step pose as a point of the cube; pure translation, so ECP⁺ − v⁺ h), 0.06 m
    // ahead of the centre along the slip, carrying the weight and the friction −μ m g ŝ
    let mut sim = sim(S1_SCENE, "ecp");
    let layout = JointLayout::new(&sim.model);
    let mut sample = Sample::new(&layout);
    let dir = Vec3::new(0.8, 0.6, 0.0);
    for k in 0..40 {
        let com0 = object_position(&sim, "cube");
        assert!(sim.step().solve.converged);
        sample.fill_physics(&layout, &sim);
        let (ecp_end, in_contact) = {
            let c = ecp_scheme(&sim).last_contacts().next().unwrap().1;
            (c.ecp_m, c.in_contact)
        };
        assert!(in_contact, "step {k}");
        assert_eq!(sample.num_contact_points, 1, "step {k}: one marker per patch");
        let m = &sample.contact_points[0];
        let shift = object_position(&sim, "cube") - com0;
        let marker = Vec3::from(m.position);
        assert!((marker - (ecp_end - shift)).norm() < 1e-12, "step {k}: marker {marker:?}, solved ECP {ecp_end:?} moved back by {shift:?}");
        assert!((marker - com0 - (dir * 0.06 - Vec3::z() * 0.5)).norm() < 1e-9, "step {k}: marker {marker:?} vs centre {com0:?}");
        let f = Vec3::from(m.force);
        assert!((f - Vec3::new(-0.12 * 0.8 * G, -0.12 * 0.6 * G, G)).norm() < 1e-9, "step {k}: marker force {f:?}");
        assert_eq!(m.normal, [0.0, 0.0, 1.0]);
    }
    // a cube spinning on its face: the ECP stays under the centre and the friction moment
    // μ p_n e_r / h = 0.5 · 9.8 · 1 m = 4.9 N·m (the limit surface's spin axis while it slips)
    // reaches the body's contact wrench and the reported contact
    let spin = "gravity: [0, 0, -9.8]\ntimestep_s: 0.01\nmaterials: {default: {friction: 0.5}}\nobjects:\n  - {name: cube, shape: {type: box, size: [1, 1, 1]}, mass_kg: 1.0, position: [0, 0, 0.5], angular_velocity: [0, 0, 10]}\n";
    let mut sim = crate::common::sim(spin, "ecp");
    assert!(sim.step().solve.converged);
    let body = sim.model.objects[0].body;
    let w = contact_sim::sensors::body_contact_wrench(&sim.model, &sim.workspace, body);
    assert!((w.world[2] - G).abs() < 1e-9 && w.world[0].abs() < 1e-9 && w.world[1].abs() < 1e-9, "force {:?}", w.world);
    assert!((w.world[5] + 0.5 * G).abs() < 1e-9, "friction moment about the normal {} N·m, expected −4.9", w.world[5]);
    assert!(w.world[3].abs() < 1e-9 && w.world[4].abs() < 1e-9, "no tilting moment: {:?}", w.world);
    let torque = sim.workspace.body_contact_force[body];
    assert!((torque[2] + 0.5 * G).abs() < 1e-9, "engine wrench (moment about the world origin first) {torque:?}");
    let (_, c, p) = ecp_scheme(&sim).reported_contacts().next().unwrap();
    assert!((p[3] + 0.5 * G * H).abs() < 1e-12 && (c.position - Vec3::zeros()).norm() < 1e-9, "torsion impulse {}, ECP {:?}", p[3], c.position);
}

/// A stack of `n` cubes of side 0.2 m and 1 kg (μ 0.6, h 0.01 s, g 9.8), the lowest on the ground.
fn stack_scene(n: usize) -> String {
    let mut y = String::from("gravity: [0, 0, -9.8]\ntimestep_s: 0.01\nmaterials: {default: {friction: 0.6}}\nsolver: {kind: ecp}\nobjects:\n");
    for k in 0..n {
        y += &format!("  - {{name: box{k}, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass_kg: 1.0, position: [0.0, 0.0, {}]}}\n", 0.1 + 0.2 * k as f64);
    }
    y
}

/// Normal impulse (N·s) each body of a stack receives from below: the ground's for the lowest,
/// the pair contact's for the others, by body index.
fn support_impulses(sim: &contact_sim::sim::Simulation) -> Vec<(usize, f64, Vec3)> {
    let s = ecp_scheme(sim);
    let mut out: Vec<(usize, f64, Vec3)> = s.last_contacts().filter(|(_, c)| c.in_contact).map(|(b, c)| (b, c.normal_impulse, c.ecp_m)).collect();
    for (a, _, c) in s.last_pair_contacts() {
        if c.in_contact {
            out.push((a, c.impulse[0], c.ecp_m));
        }
    }
    out
}

#[test]
fn a_box_on_a_box_and_a_ten_box_stack_stand_with_each_interface_carrying_the_weight_above_it() {
    for n in [2usize, 10] {
        let mut sim = crate::common::sim(&stack_scene(n), "ecp");
        let mut worst_sweeps = 0;
        for k in 0..400 {
            let r = sim.step();
            worst_sweeps = worst_sweeps.max(ecp_scheme(&sim).last_sweeps());
            // no interface ever penetrates (aligned cubes: centre heights 0.2 m apart)
            for j in 0..n {
                let z = object_position(&sim, &format!("box{j}")).z;
                let below = if j == 0 { 0.0 } else { object_position(&sim, &format!("box{}", j - 1)).z + 0.1 };
                assert!(z - 0.1 - below > -1e-9, "n {n} step {k}: box{j} penetrates by {}", below - (z - 0.1));
            }
            // from the first step on (the cold start estimates the static loads): every solve
            // converged, and body j carries (n − j) m g h on its ECP, straight under its centre
            assert!(r.solve.converged, "n {n} step {k}: {:?}", r.solve);
            let support = support_impulses(&sim);
            assert_eq!(support.len(), n, "n {n} step {k}: one contact per interface");
            for (body, pn, ecp) in support {
                let j = (0..n).find(|j| sim.model.objects[*j].body == body).unwrap();
                let expected = (n - j) as f64 * G * H;
                // to the sweeps' tolerance (impulse changes below 1e-9 m g h per sweep leave
                // position errors of ~1e-10 m that the next step removes with ~1e-8 m/s)
                assert!((pn - expected).abs() < 1e-6 * expected, "n {n} step {k}: box{j} carried on {pn} N·s, expected {expected}");
                assert!((ecp - Vec3::new(0.0, 0.0, 0.2 * j as f64)).norm() < 1e-8, "n {n} step {k}: ECP of box{j} at {ecp:?}");
            }
        }
        // no drift after 4 s
        for j in 0..n {
            let p = object_position(&sim, &format!("box{j}"));
            assert!((p - Vec3::new(0.0, 0.0, 0.1 + 0.2 * j as f64)).norm() < 1e-8, "n {n}: box{j} drifted to {p:?}");
            assert!(object_velocity(&sim, &format!("box{j}")).norm() < 1e-7);
        }
        println!("stack of {n}: at most {worst_sweeps} Gauss–Seidel sweeps in a step");
    }
}

#[test]
fn a_box_sliding_on_a_box_obeys_coulomb_with_the_ecp_mu_h_ahead() {
    // a 0.2 m, 1 kg cube launched at 1 m/s on a 2 × 2 × 0.2 m, 10 kg slab (μ 0.3 everywhere):
    // the slab sticks to the ground (the cube's friction 0.3 m g is far below 0.3 · 11 m g), the
    // cube decelerates by μ g and stops after the discrete sum h Σ (v0 − j μ g h) = 0.16507 m
    // (continuous v0²/(2μg) = 0.17007 m); while it slides its ECP is μ · 0.1 m ahead of its
    // centre on the slab's top face
    let yaml = "gravity: [0, 0, -9.8]\ntimestep_s: 0.01\nmaterials: {default: {friction: 0.3}}\nobjects:\n  - {name: slab, shape: {type: box, size: [2.0, 2.0, 0.2]}, mass_kg: 10.0, position: [0, 0, 0.1]}\n  - {name: cube, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 1.0, position: [-0.5, 0, 0.3], linear_velocity: [1.0, 0, 0]}\n";
    let mut sim = crate::common::sim(yaml, "ecp");
    let (v0, mu) = (1.0, 0.3);
    let steps = (v0 / (mu * G * H)).floor() as usize;
    let expected = H * (steps as f64 * v0 - mu * G * H * (steps * (steps + 1)) as f64 / 2.0);
    for k in 0..100 {
        let x0 = object_position(&sim, "cube").x;
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        assert!(object_velocity(&sim, "slab").norm() < 1e-7, "step {k}: the slab moves at {:?}, sweeps {}, {:?}", object_velocity(&sim, "slab"), ecp_scheme(&sim).last_sweeps(), r.solve);
        let cube = object_position(&sim, "cube");
        assert!((cube.z - 0.3).abs() < 1e-9, "step {k}: cube at z = {}", cube.z);
        let (_, _, c) = ecp_scheme(&sim).last_pair_contacts().next().expect("the cube touches the slab");
        assert!((c.impulse[0] - G * H).abs() < 1e-6 * G * H, "step {k}: p_n = {}", c.impulse[0]);
        if k < steps {
            let ahead = c.ecp_m - cube;
            assert!((ahead - Vec3::new(mu * 0.1, 0.0, -0.1)).norm() < 1e-8, "step {k}: ECP − centre = {ahead:?}");
            let friction = c.frame[1] * c.impulse[1] + c.frame[2] * c.impulse[2];
            assert!((friction - Vec3::new(-mu * G * H, 0.0, 0.0)).norm() < 1e-9, "step {k}: friction {friction:?}");
            assert!(cube.x > x0, "step {k}: still sliding");
        }
    }
    let slid = object_position(&sim, "cube").x + 0.5;
    assert!((slid - expected).abs() < 1e-8, "slid {slid} m, discrete Coulomb {expected} m");
    assert!(object_velocity(&sim, "cube").norm() < 1e-7);
}

#[test]
fn a_sphere_and_a_lying_cylinder_rest_on_a_box_carried_at_their_lowest_point() {
    // point contact (sphere r 0.1 m) and line contact (cylinder r 0.1 m, length 0.4 m, axis
    // along x) on a 1 × 1 × 0.2 m, 5 kg box on the ground: each rests with p_n = m g h on its
    // ECP straight below its centre, the box carries both, nothing moves
    let yaml = "gravity: [0, 0, -9.8]\ntimestep_s: 0.01\nmaterials: {default: {friction: 0.5}}\nobjects:\n  - {name: table, shape: {type: box, size: [1.0, 1.0, 0.2]}, mass_kg: 5.0, position: [0, 0, 0.1]}\n  - {name: ball, shape: {type: sphere, radius: 0.1}, mass_kg: 1.0, position: [-0.2, 0, 0.3]}\n  - {name: roller, shape: {type: cylinder, radius: 0.1, length: 0.4}, mass_kg: 2.0, position: [0.2, 0.1, 0.3], rpy: [0, 1.5707963267948966, 0]}\n";
    let mut sim = crate::common::sim(yaml, "ecp");
    let body = |name: &str| sim.model.objects.iter().find(|o| o.name == name).unwrap().body;
    let (ball, roller, table) = (body("ball"), body("roller"), body("table"));
    for k in 0..200 {
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        let s = ecp_scheme(&sim);
        let (_, ground) = s.last_contacts().find(|(b, _)| *b == table).unwrap();
        assert!((ground.normal_impulse - 8.0 * G * H).abs() < 1e-6 * 8.0 * G * H, "step {k}: ground carries {}", ground.normal_impulse);
        for (name, b, m) in [("ball", ball, 1.0), ("roller", roller, 2.0)] {
            let (_, _, c) = s.last_pair_contacts().find(|(a, o, _)| *a == b || *o == b).unwrap_or_else(|| panic!("step {k}: {name} has no contact"));
            assert!((c.impulse[0] - m * G * H).abs() < 1e-6 * m * G * H, "step {k}: {name} p_n = {}", c.impulse[0]);
            let centre = object_position(&sim, name);
            let below = Vec3::new(centre.x, centre.y, 0.2);
            assert!((c.ecp_m - below).norm() < 1e-7, "step {k}: {name} ECP {:?}, centre {centre:?}", c.ecp_m);
        }
    }
    for (name, p) in [("ball", Vec3::new(-0.2, 0.0, 0.3)), ("roller", Vec3::new(0.2, 0.1, 0.3)), ("table", Vec3::new(0.0, 0.0, 0.1))] {
        assert!((object_position(&sim, name) - p).norm() < 1e-8, "{name} drifted to {:?}", object_position(&sim, name));
    }
}

/// The box-foot quadruped standing scene (`config/examples/ecp_box_feet_standing.yaml`) run
/// with `solver` for `steps` steps; calls `each` after every step.
fn box_feet_standing(solver: &str, steps: usize, mut each: impl FnMut(usize, &contact_sim::sim::Simulation, &contact_sim::step::StepReport)) -> contact_sim::sim::Simulation {
    let scene = scene_file("config/examples/ecp_box_feet_standing.yaml");
    let cfg = SolverConfig::from_kind(solver).unwrap();
    cfg.check_model(&scene.model, "ecp_box_feet_standing.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&cfg));
    for k in 0..steps {
        let r = sim.step();
        assert!(r.solve.converged || solver != "ecp", "{solver} step {k}: {:?}", r.solve);
        each(k, &sim, &r);
    }
    sim
}

/// The robot's total mass (kg) and centre of mass (world, at the start of the last step).
fn robot_mass_and_com(sim: &contact_sim::sim::Simulation) -> (f64, Vec3) {
    let tree = &sim.model.trees[sim.model.robots[0].tree];
    let (mut m, mut mc) = (0.0, Vec3::zeros());
    for b in tree.body_start..tree.body_end {
        let body = &sim.model.bodies[b];
        m += body.mass;
        mc += (sim.workspace.body_pose[b] * nalgebra::Point3::from(body.com)).coords * body.mass;
    }
    (m, mc / m)
}

/// World corners of every box collision geometry of the robot's feet (at the start of the last
/// step): per foot body, its eight corners.
fn sole_corners(sim: &contact_sim::sim::Simulation) -> Vec<(usize, [Vec3; 8])> {
    use contact_sim::model::GeomShape;
    let mut out = vec![];
    for g in &sim.model.geoms {
        let (Some(b), GeomShape::Box { half_extents: e }) = (g.body, &g.shape) else { continue };
        if !sim.model.bodies[b].name.ends_with("_foot") {
            continue;
        }
        let x = sim.workspace.body_pose[b] * g.x_body_geom;
        out.push((b, std::array::from_fn(|i| x * nalgebra::Point3::new(if i & 1 == 0 { -e.x } else { e.x }, if i & 2 == 0 { -e.y } else { e.y }, if i & 4 == 0 { -e.z } else { e.z })).map(|p| p.coords)));
    }
    out
}

#[test]
fn a_box_foot_quadruped_stands_on_four_ecps_carrying_its_weight_with_the_cop_under_its_centre_of_mass() {
    // 16.4 kg robot, PD-held posture, h = 1 ms, g = 9.81, μ = 0.8. After 2 s of settling, over
    // the last 0.5 s: the four reported contacts (one ECP per sole) carry m g, with no
    // horizontal force; the centre of pressure is the projection of the centre of mass and lies
    // inside the soles' support rectangle; every ECP lies on its own sole; no sole penetrates
    // the ground (first-order link end pose: checked on every step's start pose) nor drifts.
    let (settle, window) = (2000, 500);
    let mut deepest: f64 = 0.0;
    let mut worst_weight: f64 = 0.0;
    let mut mean_force = Vec3::zeros();
    let mut worst_cop: f64 = 0.0;
    let mut worst_ecp_outside: f64 = 0.0;
    let mut max_sweeps = 0;
    let mut feet_at_settle: Vec<Vec3> = vec![];
    let mut max_iterations = 0;
    let sim = box_feet_standing("ecp", settle + window, |k, sim, report| {
        let soles = sole_corners(sim);
        assert_eq!(soles.len(), 4);
        for (_, c) in &soles {
            deepest = deepest.max(-c.iter().map(|p| p.z).fold(f64::INFINITY, f64::min));
        }
        if k < settle {
            return;
        }
        let ws = &sim.workspace;
        max_sweeps = max_sweeps.max(ecp_scheme(sim).last_link_sweeps());
        max_iterations = max_iterations.max(report.solve.iterations);
        assert_eq!(ws.contacts.len(), 4, "step {k}: one contact per sole");
        let (m, com) = robot_mass_and_com(sim);
        let weight = m * 9.81;
        let (mut force, mut cop) = (Vec3::zeros(), Vec3::zeros());
        for (i, c) in ws.contacts.iter().enumerate() {
            let f = ws.contact_force_world(i);
            force += f;
            cop += c.position * f.z;
            assert!(c.position.z.abs() < 1e-6, "step {k}: ECP {:?} off the ground", c.position);
            // the ECP lies on the sole of its foot (inside the sole's rectangle)
            let (_, corners) = soles.iter().find(|(b, _)| Some(*b) == c.body_b).expect("a foot");
            let (lo, hi) = corners.iter().fold((Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
            worst_ecp_outside = worst_ecp_outside.max((lo.x - c.position.x).max(c.position.x - hi.x)).max((lo.y - c.position.y).max(c.position.y - hi.y));
            assert!(f.z > 0.1 * weight / 4.0, "step {k}: foot carries {} N", f.z);
        }
        cop /= force.z;
        worst_weight = worst_weight.max((force - Vec3::z() * weight).norm() / weight);
        mean_force += force / window as f64;
        worst_cop = worst_cop.max((cop.xy() - com.xy()).norm());
        // inside the support polygon (the soles' rectangle, axis-aligned in this posture)
        let all: Vec<Vec3> = soles.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let (lo, hi) = all.iter().fold((Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
        assert!(cop.x > lo.x + 0.2 && cop.x < hi.x - 0.2 && cop.y > lo.y + 0.15 && cop.y < hi.y - 0.15, "step {k}: CoP {cop:?} vs support {lo:?}..{hi:?}");
        if k == settle {
            feet_at_settle = soles.iter().map(|(_, c)| c[0]).collect();
        }
    });
    let drift = sole_corners(&sim).iter().zip(&feet_at_settle).map(|((_, c), p)| (c[0] - p).norm()).fold(0.0, f64::max);
    let (m, com) = robot_mass_and_com(&sim);
    let mean_error = (mean_force - Vec3::z() * m * 9.81).norm() / (m * 9.81);
    println!(
        "ecp: m g = {:.4} N, mean ΣF over the window off by {mean_error:.2e} of m g, worst step {worst_weight:.2e}, worst |CoP − COM|_xy = {worst_cop:.2e} m (COM at {:.5}, {:.5}), deepest sole point {deepest:.2e} m, sole drift over 0.5 s {drift:.2e} m, ECP outside its sole by ≤ {worst_ecp_outside:.2e} m, ≤ {max_sweeps} sweeps, ≤ {max_iterations} Newton iterations per settled step",
        m * 9.81,
        com.x,
        com.y
    );
    assert!((m - 16.4).abs() < 1e-9);
    // the robot is at rest (velocities ~1e-11): the resultant is its weight (measured 5e-12 of
    // m g on the mean, 5e-8 in the worst step: the sweeps' stopping tolerance), and PGS on
    // corner points gives the same resultant to 1e-9 N (below)
    assert!(worst_weight < 1e-6, "ground reaction off the weight by {worst_weight} in a step");
    assert!(mean_error < 1e-9, "mean ground reaction off the weight by {mean_error}");
    assert!(worst_cop < 1e-5, "CoP off the centre of mass by {worst_cop} m");
    assert!(worst_ecp_outside <= 1e-9, "an ECP left its sole by {worst_ecp_outside} m");
    assert!(deepest < 1e-6, "a sole penetrated the ground by {deepest} m");
    assert!(drift < 1e-6, "a sole drifted by {drift} m");

    // the same robot on corner points with PGS (16 contacts): the resultant, and the corner
    // forces' centre of pressure, for comparison
    let sim = box_feet_standing("pgs", settle + window, |_, _, _| {});
    let ws = &sim.workspace;
    let (mut force, mut cop) = (Vec3::zeros(), Vec3::zeros());
    for (i, c) in ws.contacts.iter().enumerate() {
        let f = ws.contact_force_world(i);
        force += f;
        cop += c.position * f.z;
    }
    cop /= force.z;
    let (m, com) = robot_mass_and_com(&sim);
    println!(
        "pgs: {} corner contacts, |ΣF − m g|/m g = {:.2e}, |ΣF_pgs − mean ΣF_ecp| = {:.2e} N, |CoP − COM|_xy = {:.2e} m, deepest corner {:.2e} m",
        ws.contacts.len(),
        (force - Vec3::z() * m * 9.81).norm() / (m * 9.81),
        (force - mean_force).norm(),
        (cop.xy() - com.xy()).norm(),
        sole_corners(&sim).iter().flat_map(|(_, c)| c.iter().map(|p| -p.z)).fold(0.0, f64::max)
    );
    assert_eq!(ws.contacts.len(), 16, "four corners per sole");
    assert!((force - mean_force).norm() < 1e-9 * m * 9.81, "PGS resultant {force:?} vs ECP {mean_force:?}");
}

/// The box-foot quadruped settled for 0.5 s with `solver`, then its base set spinning about the
/// vertical at `yaw_rate` (rad/s); returns the simulation after `steps` more steps and the
/// base's yaw rate after each of them.
fn twisted_box_feet(solver: &SolverConfig, yaw_rate: f64, steps: usize, mut each: impl FnMut(&contact_sim::sim::Simulation)) -> Vec<f64> {
    let scene = scene_file("config/examples/ecp_box_feet_standing.yaml");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(solver));
    for _ in 0..500 {
        assert!(sim.step().solve.converged);
    }
    let base = &sim.model.bodies[sim.model.trees[sim.model.robots[0].tree].body_start].joint;
    let w = base.v_index + 5; // free joint: body-frame (v, ω); the base is level
    sim.state.v[w] = yaw_rate;
    let mut rates = vec![];
    let mut unconverged = 0;
    for _ in 0..steps {
        // sliding feet: the sweeps may stop at max_sweeps (docs/ecp.md, "Known limits")
        let r = sim.step();
        unconverged += !r.solve.converged as usize;
        each(&sim);
        rates.push(sim.state.v[w]);
    }
    println!("{unconverged} of {steps} steps after the twist stopped at max_sweeps");
    rates
}

#[test]
fn a_twisted_box_foot_robot_feels_each_soles_friction_moment_through_its_joints() {
    // the base of the standing box-foot quadruped is set spinning about the vertical at 1 rad/s:
    // the soles slip and spin, and each reported contact (one per sole, at its ECP) carries the
    // solved friction moment p_r on its torsion row; every foot's contact wrench (what F/T
    // sensors and the contact_wrenches topics read) is its ECP's force and moment plus n p_r / h.
    // The moment reaches the articulated dynamics: with the paper's e_r = 1 m the spin stops
    // sooner than with spin friction switched off (e_r = 1e-6 m).
    let ecp = SolverConfig::from_kind("ecp").unwrap();
    let mut checked = 0;
    let mut largest_torsion: f64 = 0.0;
    let with_torsion = twisted_box_feet(&ecp, 1.0, 40, |sim| {
        let ws = &sim.workspace;
        let scheme = ecp_scheme(sim);
        for (body, _, c) in scheme.last_link_contacts().filter(|(_, _, c)| c.in_contact) {
            let i = ws.contacts.iter().position(|k| k.body_b == Some(body)).expect("one reported contact per sole");
            let l = ws.contact_impulse(i);
            assert!((l[0] - c.normal_impulse).abs() < 1e-15 && (ws.contact_torque_world(i).z * H_ROBOT - c.torsion_impulse).abs() < 1e-15);
            largest_torsion = largest_torsion.max(c.torsion_impulse.abs());
            let w = contact_sim::sensors::body_contact_wrench(&sim.model, ws, body);
            let origin = ws.body_pose[body].translation.vector;
            let f = ws.contact_force_world(i);
            let moment = (ws.contacts[i].position - origin).cross(&f) + ws.contact_torque_world(i);
            let (fw, mw) = (Vec3::new(w.world[0], w.world[1], w.world[2]), Vec3::new(w.world[3], w.world[4], w.world[5]));
            assert!((fw - f).norm() < 1e-9 && (mw - moment).norm() < 1e-9, "foot {body}: wrench {:?} vs force {f:?} moment {moment:?}", w.world);
            checked += 1;
        }
    });
    assert!(checked >= 4 * 40 && largest_torsion > 1e-4, "{checked} sole contacts checked, largest |p_r| {largest_torsion} N·m·s");
    let no_spin_friction: SolverConfig = serde_yaml::from_str("{kind: ecp, e_r_m: 1.0e-6}").unwrap();
    let without = twisted_box_feet(&no_spin_friction, 1.0, 40, |_| {});
    println!("base yaw rate after 10 / 40 ms: e_r = 1 m {:.4} / {:.4} rad/s, e_r = 1e-6 m {:.4} / {:.4} rad/s", with_torsion[9], with_torsion[39], without[9], without[39]);
    assert!(with_torsion[9] < without[9] - 1e-3, "the friction moment slows the spin: {} vs {}", with_torsion[9], without[9]);
}

#[test]
fn the_sphere_foot_quadruped_stands_on_four_point_contacts_with_the_same_resultant_as_pgs() {
    // `config/examples/quadruped_stand.yaml` (28.6 kg, sphere feet, cylinder legs): robot links
    // in point contact go through the same link problem; after 2 s one contact per foot, at the
    // sphere's lowest point, and the resultant equals PGS's (both the engine's static balance)
    let scene = scene_file("config/examples/quadruped_stand.yaml");
    let resultant = |solver: &str| {
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        for k in 0..2000 {
            let r = sim.step();
            assert!(r.solve.converged || solver != "ecp", "{solver} step {k}");
        }
        let ws = &sim.workspace;
        if solver == "ecp" {
            assert_eq!(ws.contacts.len(), 4);
            for (i, c) in ws.contacts.iter().enumerate() {
                let b = c.body_b.unwrap();
                let centre = ws.body_pose[b].translation.vector; // the foot sphere's centre
                assert!((c.position - (centre - Vec3::z() * 0.025)).norm() < 1e-6, "contact {i} at {:?}, sphere centre {centre:?}", c.position);
            }
        }
        (0..ws.contacts.len()).map(|i| ws.contact_force_world(i)).sum::<Vec3>()
    };
    let (ecp, pgs) = (resultant("ecp"), resultant("pgs"));
    println!("sphere feet: ecp resultant {ecp:?} N, pgs {pgs:?} N, m g = {} N", 28.6 * 9.81);
    assert!((ecp - pgs).norm() < 1e-6 * pgs.norm() && (ecp.z - 28.6 * 9.81).abs() < 1e-4 * 28.6 * 9.81, "ecp {ecp:?} vs pgs {pgs:?}");
}

/// The gripper grasp scene (`config/examples/ecp_gripper_grasp.yaml`) with the ECP scheme;
/// calls `each(step, sim, report)` after every step.
fn gripper_grasp(steps: usize, mut each: impl FnMut(usize, &contact_sim::sim::Simulation, &contact_sim::step::StepReport)) -> contact_sim::sim::Simulation {
    let scene = scene_file("config/examples/ecp_gripper_grasp.yaml");
    let cfg = SolverConfig::from_kind("ecp").unwrap();
    cfg.check_model(&scene.model, "ecp_gripper_grasp.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&cfg));
    for k in 0..steps {
        let r = sim.step();
        each(k, &sim, &r);
    }
    sim
}

/// The cube's position relative to the left finger's centre of mass (m).
fn cube_in_finger(sim: &contact_sim::sim::Simulation) -> Vec3 {
    let b = sim.model.bodies.iter().position(|b| b.name == "finger_left").unwrap();
    let com = sim.workspace.body_pose[b] * nalgebra::Point3::from(sim.model.bodies[b].com);
    object_position(sim, "cube") - com.coords
}

#[test]
fn gripper_pads_hold_a_lifted_box_on_two_ecps_carrying_its_weight_by_friction() {
    // `config/examples/ecp_gripper_grasp.yaml`: two 40 x 40 mm box pads squeeze a 0.2 kg, 60 mm
    // cube with 5 N each (finger efforts), the lift raises it 30 mm (0.4 → 0.8 s) and holds it.
    // Over the hold (1.2–1.5 s): no ground contact; each pad's normal impulse is its 5 N
    // squeeze (the finger is at rest, its damping gives no force), horizontal; the two pads'
    // impulses on the cube sum to (0, 0, m g h) (the weight carried by friction alone) to 1e-9
    // of it; each ECP lies on the cube's side face (y = ±0.03 m) inside the pad/cube overlap;
    // the wrist F/T sensor reads the hand subtree's pull −(m_hand + 2 m_finger + m_cube) g; the
    // cube moved with the fingers (slip below 1 mm over the whole lift).
    let (m, g, squeeze) = (0.2, 9.81, 5.0);
    let weight_impulse = m * g * H_ROBOT;
    let mut unconverged = 0;
    let mut hold_checked = 0;
    let mut before_lift = Vec3::zeros();
    let mut worst = [0.0f64; 4];
    let sim = gripper_grasp(1500, |k, sim, r| {
        unconverged += !r.solve.converged as usize;
        if k == 399 {
            before_lift = cube_in_finger(sim);
        }
        if k < 1200 {
            return;
        }
        assert!(r.solve.converged, "hold step {k}: {:?}", r.solve);
        let scheme = ecp_scheme(sim);
        assert!(scheme.last_contacts().all(|(_, c)| !c.in_contact), "step {k}: the held cube touches the ground");
        let cube = object_position(sim, "cube");
        assert!(object_velocity(sim, "cube").norm() < 1e-6 && cube.z > 0.055, "step {k}: cube at {cube:?}");
        let mut on_cube = Vec3::zeros();
        let mut pads = 0;
        for (link, _, link_is_a, c) in scheme.last_link_object_contacts() {
            assert!(c.in_contact && !link_is_a, "step {k}: pad {link}");
            let [n, t, o] = c.frame;
            let [pn, pt, po, _] = c.impulse;
            on_cube += n * pn + t * pt + o * po;
            worst[0] = worst[0].max((pn - squeeze * H_ROBOT).abs() / (squeeze * H_ROBOT));
            worst[1] = worst[1].max(n.z.abs());
            // the ECP: on the cube's side face, inside the pad's face and the cube's
            let ecp = c.ecp_m;
            let pad = sim.model.geoms.iter().find(|g| g.body == Some(link)).unwrap();
            let pad_pose = sim.workspace.body_pose[link] * pad.x_body_geom;
            let in_pad = pad_pose.inverse_transform_point(&ecp.into()).coords;
            let in_cube = ecp - cube;
            let outside = (in_pad.x.abs() - 0.02).max(in_pad.z.abs() - 0.02).max(in_cube.x.abs() - 0.03).max(in_cube.z.abs() - 0.03);
            worst[2] = worst[2].max(outside).max((in_cube.y.abs() - 0.03).abs());
            pads += 1;
        }
        assert_eq!(pads, 2, "step {k}: one ECP per pad");
        worst[3] = worst[3].max((on_cube - Vec3::new(0.0, 0.0, weight_impulse)).norm() / weight_impulse);
        let ft = sim.state.sensors[0].ideal;
        let expected = -(0.05 + 2.0 * 0.1 + m) * g;
        assert!(ft[0].abs() < 1e-6 && ft[1].abs() < 1e-6 && (ft[2] - expected).abs() < 1e-6 * g, "step {k}: wrist F/T {ft:?}, expected F_z = {expected}");
        hold_checked += 1;
    });
    let slip = (cube_in_finger(&sim) - before_lift).norm();
    println!(
        "grasp: {unconverged} of 1500 steps stopped at max_sweeps; over the hold: |p_n − F h|/(F h) {:.1e}, |n_z| {:.1e}, ECP outside the overlap by {:.1e} m, |Σ p − m g h|/(m g h) {:.1e}; slip {slip:.2e} m",
        worst[0], worst[1], worst[2], worst[3]
    );
    assert_eq!(hold_checked, 300);
    // the loop through the two pads is solved as one block (docs/ecp.md, "Closed loops: one
    // block"): no step ends at max_sweeps (the sweeps alone: 112 of 1 500)
    assert_eq!(unconverged, 0, "steps that stopped at max_sweeps");
    assert!(worst[0] < 1e-6 && worst[1] < 1e-6, "normal impulses: {worst:?}");
    assert!(worst[2] < 1e-8, "an ECP leaves the pad/cube overlap by {} m", worst[2]);
    assert!(worst[3] < 1e-9, "the pads carry the weight to {}", worst[3]);
    assert!(slip < 1e-3, "the cube slipped {slip} m in the fingers");
}

/// The gripper (`urdf/gripper2_ft.urdf`) pressing down with its closed fingers' bottom faces on
/// a 0.3 kg, 100 x 100 x 40 mm box resting on the ground: fingers closed onto their upper limit
/// by 2 N efforts, the lift in effort mode pushing down with `push` N on top of the 0.75 kg it
/// carries (carriage, hand, fingers).
fn gripper_press_scene(push: f64) -> String {
    format!(
        "timestep_s: 0.001\ngravity: [0.0, 0.0, -9.81]\nsolver: {{kind: ecp}}\nmaterials:\n  default: {{friction: 0.8}}\nrobots:\n  - urdf: ../../urdf/gripper2_ft.urdf\n    base: {{mode: fixed, position: [0.0, 0.0, 0.066]}}\n    initial_positions: {{lift: 0.0, finger_left_joint: 0.045, finger_right_joint: 0.045}}\n    control:\n      default: {{mode: effort}}\nobjects:\n  - name: plate\n    shape: {{type: box, size: [0.1, 0.1, 0.04]}}\n    mass_kg: 0.3\n    position: [0.0, 0.0, 0.02]\nscript:\n  - {{time_s: 0.0, efforts: {{lift: {}, finger_left_joint: 2.0, finger_right_joint: 2.0}}}}\n",
        -push
    )
}

#[test]
fn finger_pads_pressing_a_box_onto_the_ground_balance_exactly_and_the_fingers_rest_on_their_limit() {
    // The fingers fall 6 mm onto the box and press it down with (0.75 kg · g + 2 N); from 1 s
    // to 3 s:
    // - every step, the box's impulses balance its momentum (pads + ground + weight = m Δv, to
    //   1e-9 of the ground's impulse; how the pads' lateral friction is shared with the
    //   ground's is statically indeterminate and not asserted);
    // - the box stays at rest (under 1e-7 m/s), the two pads' ECP impulses on the box sum to
    //   −(0.75 g + 2) h along z and the ground's ECP carries (0.3 g + 0.75 g + 2) h, to 2e-5
    //   relative. The box at rest is held to the contacts' tolerance: its gap to the ground
    //   closes inside the tolerance band by about 1e-13 m per step, and when it meets the band's
    //   edge one step moves it by a few 1e-8 m/s and the loads by up to 5.3e-6 (measured every
    //   1.2–1.6 s over 6 s), where the rest of the time they hold to 1e-10;
    // - each ECP lies on the box's top face inside the pad's bottom face; the fingers, pushed
    //   closed by 2 N, stay at their upper limit 0.045 m (the joint-limit rows of the sweeps).
    let (g, push, box_kg) = (9.81, 2.0, 0.3);
    let press = 0.75 * g + push;
    let s = scene(&gripper_press_scene(push));
    let cfg = SolverConfig::from_kind("ecp").unwrap();
    cfg.check_model(&s.model, "press").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = contact_sim::sim::Simulation::from_scene(&s, Some(&cfg));
    let fingers: Vec<usize> = ["finger_left_joint", "finger_right_joint"].iter().map(|n| sim.model.bodies.iter().position(|b| b.joint.name == *n).unwrap()).collect();
    let plate = sim.model.bodies.iter().position(|b| b.name == "plate").unwrap();
    let (qi, vi) = (sim.model.bodies[plate].joint.q_index, sim.model.bodies[plate].joint.v_index);
    // the box's world velocity (its free joint's linear velocity is in the body frame)
    let box_velocity = |sim: &contact_sim::sim::Simulation| {
        let q = &sim.state.q[qi + 3..qi + 7];
        let r = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[3], q[0], q[1], q[2]));
        r * Vec3::new(sim.state.v[vi], sim.state.v[vi + 1], sim.state.v[vi + 2])
    };
    let (mut momentum, mut loads, mut speed): (f64, f64, f64) = (0.0, 0.0, 0.0);
    let mut worst_limit: f64 = 0.0;
    let mut lateral: f64 = 0.0;
    for k in 0..3000 {
        let before = box_velocity(&sim);
        let r = sim.step();
        assert!(r.solve.converged, "step {k}: {:?}", r.solve);
        if k < 1000 {
            continue;
        }
        let after = box_velocity(&sim);
        let scheme = ecp_scheme(&sim);
        let mut on_box = Vec3::zeros();
        let mut pads = 0;
        for (link, _, link_is_a, c) in scheme.last_link_object_contacts() {
            assert!(c.in_contact, "step {k}: pad {link} lifted off");
            let [n, t, o] = c.frame;
            let [pn, pt, po, _] = c.impulse;
            let f = n * pn + t * pt + o * po;
            on_box += if link_is_a { -f } else { f };
            // the ECP on the box top (z = 0.04), inside the pad's 40 x 10 mm bottom face
            let pad = sim.model.geoms.iter().find(|g| g.body == Some(link)).unwrap();
            let in_pad = (sim.workspace.body_pose[link] * pad.x_body_geom).inverse_transform_point(&c.ecp_m.into()).coords;
            assert!((c.ecp_m.z - 0.04).abs() < 1e-8 && in_pad.x.abs() <= 0.02 + 1e-9 && in_pad.y.abs() <= 0.005 + 1e-9, "step {k}: ECP {:?} (pad frame {in_pad:?})", c.ecp_m);
            pads += 1;
        }
        assert_eq!(pads, 2);
        let ground: Vec<&EcpContact> = scheme.last_contacts().map(|(_, c)| c).filter(|c| c.in_contact).collect();
        assert_eq!(ground.len(), 1, "step {k}: the box on the ground");
        let expected = (box_kg * g + press) * H_ROBOT;
        let pl = EcpPlane::new(Vec3::z(), 0.0, 0.0);
        let c = ground[0];
        let from_ground = pl.normal * c.normal_impulse + pl.tangent1 * c.tangent_impulse[0] + pl.tangent2 * c.tangent_impulse[1];
        // Newton's law on the box over the step: pads + ground + weight = m Δv
        let weight = Vec3::new(0.0, 0.0, -box_kg * g * H_ROBOT);
        momentum = momentum.max((on_box + from_ground + weight - box_kg * (after - before)).norm() / expected);
        loads = loads.max((on_box.z + press * H_ROBOT).abs() / (press * H_ROBOT)).max((c.normal_impulse - expected).abs() / expected);
        speed = speed.max(after.norm());
        lateral = lateral.max(Vec3::new(on_box.x, on_box.y, 0.0).norm() / H_ROBOT);
        for &b in &fingers {
            let j = &sim.model.bodies[b].joint;
            worst_limit = worst_limit.max((sim.state.q[j.q_index] - 0.045).abs()).max(sim.state.v[j.v_index].abs() * H_ROBOT);
        }
    }
    println!("press: momentum balance to {momentum:.1e} relative, loads at rest to {loads:.1e}, box speed under {speed:.1e} m/s (lateral pad friction held by the ground: {lateral:.3} N); fingers off their limit by {worst_limit:.1e} m");
    assert!(momentum < 1e-9, "the box's momentum balance off by {momentum}");
    assert!(loads < 2e-5, "the loads at rest off by {loads}");
    assert!(speed < 1e-7, "the box moved at {speed} m/s");
    assert!(worst_limit < 1e-9, "a finger left its limit by {worst_limit} m");
}

/// `urdf/gripper2_ft.urdf` with Coulomb friction `friction_n` (N) on the lift joint, written
/// under target/test-scenes; returns the scene (gripper 0.3 m above the ground, the lift in
/// effort mode without effort, the fingers held open) as a path.
fn friction_lift_scene(friction_n: f64) -> String {
    let urdf = std::fs::read_to_string(path("urdf/gripper2_ft.urdf")).unwrap();
    let lift = "<limit lower=\"-0.05\" upper=\"0.3\" effort=\"200\" velocity=\"1.0\"/>";
    assert!(urdf.contains(lift));
    let urdf = urdf.replacen(lift, &format!("{lift}\n    <dynamics friction=\"{friction_n}\"/>"), 1);
    let name = format!("gripper2_lift_friction_{friction_n}.urdf");
    write_scene(&name, &urdf);
    write_scene(
        &format!("lift_friction_{friction_n}.yaml"),
        &format!("timestep_s: 0.001\ngravity: [0.0, 0.0, -9.81]\nsolver: {{kind: ecp}}\nrobots:\n  - urdf: {name}\n    base: {{mode: fixed, position: [0.0, 0.0, 0.3]}}\n    control:\n      default: {{mode: position, kp: 2000, kd: 40}}\n      joints:\n        lift: {{mode: effort}}\n"),
    )
}

#[test]
fn lift_joint_friction_holds_the_hand_below_breakaway_and_slips_with_the_coulomb_deceleration_above() {
    // The lift carries 0.75 kg (carriage, hand, fingers): 7.3575 N of weight. With 8 N of joint
    // friction the joint friction row of the ecp sweeps holds it at rest; with 7 N it slides down
    // with a = (7.3575 − 7)/0.75 m/s², v after n steps = −a n h (to 1e-9 m/s).
    let (g, m) = (9.81, 0.75);
    for (friction, hold) in [(8.0, true), (7.0, false)] {
        let s = contact_sim::config::load_scene(std::path::Path::new(&friction_lift_scene(friction))).unwrap_or_else(|e| panic!("{e}"));
        let cfg = SolverConfig::from_kind("ecp").unwrap();
        cfg.check_model(&s.model, "lift").unwrap_or_else(|e| panic!("{e}"));
        let mut sim = contact_sim::sim::Simulation::from_scene(&s, Some(&cfg));
        let lift = sim.model.bodies.iter().find(|b| b.joint.name == "lift").unwrap().joint.clone();
        let steps = 200;
        for _ in 0..steps {
            assert!(sim.step().solve.converged);
        }
        let v = sim.state.v[lift.v_index];
        let expected = if hold { 0.0 } else { -(m * g - friction) / m * steps as f64 * H_ROBOT };
        println!("lift friction {friction} N: v = {v:.12} m/s (expected {expected:.12})");
        assert!((v - expected).abs() < 1e-9, "friction {friction} N: lift velocity {v}, expected {expected}");
    }
}

#[test]
fn a_mimic_finger_follows_its_leader_through_the_sweeps_mimic_row() {
    // `urdf/arm7.urdf`: finger_right_joint mimics finger_left_joint (multiplier 1, offset 0) and
    // takes no commands. The leader's servo opens the gripper 0 → 30 mm over 0.5 s, 0.3 m above
    // the ground; the follower moves only through the mimic row of the ecp sweeps and must stay
    // on q_right = q_left (to 1e-6 m; the row's Baumgarte term closes the first-order drift).
    let yaml = "timestep_s: 0.001\ngravity: [0.0, 0.0, -9.81]\nsolver: {kind: ecp}\nrobots:\n  - urdf: ../../urdf/arm7.urdf\n    base: {mode: fixed, position: [0.0, 0.0, 0.0]}\n    initial_positions: {arm_joint2: 0.100118, arm_joint4: 2.00392, arm_joint6: 1.03756, finger_left_joint: 0.0}\n    control:\n      default: {mode: position, kp: 600.0, kd: 20.0}\n      joints:\n        finger_left_joint: {mode: position, kp: 400.0, kd: 10.0}\nscript:\n  - {time_s: 0.0, positions: {finger_left_joint: 0.0}}\n  - {time_s: 0.5, positions: {finger_left_joint: 0.03}}\n  - {time_s: 1.0, positions: {finger_left_joint: 0.03}}\n";
    let s = scene(yaml);
    let cfg = SolverConfig::from_kind("ecp").unwrap();
    cfg.check_model(&s.model, "mimic").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = contact_sim::sim::Simulation::from_scene(&s, Some(&cfg));
    let joint = |name: &str| sim.model.bodies.iter().find(|b| b.joint.name == name).unwrap().joint.clone();
    let (l, r) = (joint("finger_left_joint"), joint("finger_right_joint"));
    let mut worst: f64 = 0.0;
    let mut unconverged = 0;
    for _ in 0..1000 {
        // a limit and joint friction holding one coordinate (the elbow at its upper limit) leave
        // their impulses' split free: the sweeps must stop on the coordinate's net impulse, not
        // drift along the split to max_sweeps (838 of these 1 000 steps did)
        unconverged += !sim.step().solve.converged as usize;
        worst = worst.max((sim.state.q[r.q_index] - sim.state.q[l.q_index]).abs());
    }
    let (ql, qr) = (sim.state.q[l.q_index], sim.state.q[r.q_index]);
    println!("mimic: leader {ql:.6} m, follower {qr:.6} m, largest |q_r − q_l| {worst:.1e} m; {unconverged} of 1000 steps stopped at max_sweeps");
    assert!(ql > 0.025, "the leader opened to {ql} m");
    assert!(worst < 1e-6, "the follower left its leader by {worst} m");
    assert_eq!(unconverged, 0, "{unconverged} of 1000 steps stopped at max_sweeps");
}

/// `block_min_impulse` (docs/ecp.md, "Closed loops: one block"): the arm pushing a box while
/// its fingertips press on the box's top back edge (4.4 to 5.0 s of `arm_push_box.yaml`), each
/// step taken from the same state by the ECP scheme with the parameter at 0 (every contact that
/// passes an impulse joins the block) and at its default 1e-7: the two agree on the motion to
/// the contacts' tolerance, the default needs fewer Newton iterations (a fingertip carrying
/// 1e-15 N·s no longer makes the block's LU refuse every Newton step). The gap was 119 359 against 13 297 iterations until a
/// pair's solve that ends apart and unconverged tried its separated branch (`pair.rs`); since
/// then it is 14 062 against 13 704, so the test asks only for fewer.
#[test]
fn a_contact_that_barely_touches_stays_out_of_the_block_and_the_block_needs_fewer_iterations() {
    let scene = scene_file("config/examples/arm_push_box.yaml");
    let every = |min: f64| contact_sim::contact::SolverConfig::Ecp(EcpParams { block_min_impulse: min, ..EcpParams::default() });
    let mut all = contact_sim::sim::Simulation::from_scene(&scene, Some(&every(0.0)));
    let mut default = contact_sim::sim::Simulation::from_scene(&scene, Some(&every(EcpParams::default().block_min_impulse)));
    assert_eq!(EcpParams::default().block_min_impulse, 1e-7);
    for _ in 0..4400 {
        all.step();
    }
    let (mut iterations_all, mut iterations_default, mut dv) = (0u64, 0u64, 0.0f64);
    let (mut unconverged_all, mut unconverged_default) = (0, 0);
    for _ in 0..600 {
        default.state.copy_from(&all.state);
        default.commands.copy_from(&all.commands);
        let r = default.step();
        (iterations_default, unconverged_default) = (iterations_default + r.solve.iterations as u64, unconverged_default + !r.solve.converged as usize);
        let r = all.step();
        (iterations_all, unconverged_all) = (iterations_all + r.solve.iterations as u64, unconverged_all + !r.solve.converged as usize);
        dv = all.state.v.iter().zip(&default.state.v).fold(dv, |m, (a, b)| m.max((a - b).abs()));
    }
    println!("4.4–5.0 s of the arm pushing a box, each step from the same state: Newton iterations {iterations_all} with every pushing contact in the block, {iterations_default} without those under 1e-7 of the weight impulse; steps at the cap {unconverged_all} and {unconverged_default}; velocities differ by at most {dv:.1e}");
    assert!(iterations_default < iterations_all, "{iterations_default} iterations against {iterations_all}");
    assert!(unconverged_default <= unconverged_all, "{unconverged_default} steps at the cap against {unconverged_all}");
    assert!(dv < 1e-5, "the two steps' velocities differ by {dv}");
}

/// The tangential compliance of robot links' contacts with objects (docs/ecp.md, "A tangential
/// compliance for robot links") is elastic: `ecp_gripper_grasp.yaml` squeezes a 0.2 kg cube
/// between two pads of a 1.75 kg gripper, lifts it and holds it. Each pad's friction grows from
/// nothing to half the cube's weight, `p = 1/2` in the lighter side's (the cube's) weight
/// impulses, so with compliance `c` the cube ends `c h p` = 15 µm lower in the pads than with
/// rigid contacts (30 µm per weight at the default and 1 ms), and while it is held with a
/// constant load it does not creep.
#[test]
fn a_cube_held_between_two_pads_yields_by_the_tangential_compliance_and_does_not_creep() {
    let scene = scene(&std::fs::read_to_string(path("config/examples/ecp_gripper_grasp.yaml")).unwrap());
    let run = |c: f64| {
        let cfg = SolverConfig::Ecp(EcpParams { link_tangential_compliance: c, ..EcpParams::default() });
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&cfg));
        let cube = sim.model.bodies.iter().position(|b| b.name == "cube").expect("the scene's cube");
        let carriage = sim.model.bodies.iter().position(|b| b.joint.name.ends_with("lift")).expect("the lift joint");
        let (zi, li) = (sim.model.bodies[cube].joint.q_index + 2, sim.model.bodies[carriage].joint.q_index);
        let steps = (scene.duration_s / sim.model.timestep_s).round() as usize;
        let held_from = (1.0 / sim.model.timestep_s).round() as usize;
        let (mut unconverged, mut at_hold) = (0, 0.0);
        for k in 0..steps {
            unconverged += !sim.step().solve.converged as usize;
            if k + 1 == held_from {
                at_hold = sim.state.q[zi] - sim.state.q[li];
            }
        }
        let end = sim.state.q[zi] - sim.state.q[li];
        (end, end - at_hold, unconverged, sim.model.timestep_s)
    };
    let c = EcpParams::default().link_tangential_compliance;
    assert_eq!(c, 3e-2);
    let (rigid, rigid_creep, rigid_unconverged, _) = run(0.0);
    let (compliant, creep, unconverged, h) = run(c);
    println!("cube in the pads: rigid {rigid:.9} m, compliant {compliant:.9} m (difference {:.3e} m, expected {:.3e}); creep over the last 0.5 s {rigid_creep:.1e} / {creep:.1e} m; unconverged {rigid_unconverged} / {unconverged}", compliant - rigid, -0.5 * c * h);
    assert!(((compliant - rigid) - (-0.5 * c * h)).abs() < 0.05 * 0.5 * c * h, "the cube sits {} m lower with the compliance, expected {}", rigid - compliant, 0.5 * c * h);
    // a viscous compliance (slip c p with no reference) would slide it by c p 0.5 s = 7.5 mm
    assert!(creep.abs() < 1e-9 && rigid_creep.abs() < 1e-9, "the held cube crept by {creep} m (rigid: {rigid_creep} m) in 0.5 s");
    assert_eq!((rigid_unconverged, unconverged), (0, 0));
}

/// `arm_push_box.yaml` under ecp, the whole 7 s: the arm reaches down, closes its mimic gripper
/// on the box's top edge and pushes it along the ground. The closed gripper's rows are redundant
/// (each finger's lower limit and friction on one coordinate, the mimic row with both fingers'
/// friction): the sweeps must stop on what the rows do to the robot, not drift along the rows'
/// free split, the block must solve the compliant friction law (docs/ecp.md, "Redundant joint
/// rows"), and a coordinate's rows and the mimic pair must be solved as one law each ("A
/// coordinate's rows as one law"). At the shipped placement 1 023 of the 7 000 steps stopped at
/// the sweep cap before the first two; with the box 0.2668 mm further, where the sweeps over the
/// finger rows alone two-cycled on the follower's coordinate, 546 did before the third (16 after
/// it at either placement; 17 at the shipped one with rigid contacts today). Those were the two
/// fingertips' friction split on the box, which rigid contacts leave undetermined ("Closed
/// loops: one block"); with the links' tangential compliance ("A tangential compliance for
/// robot links") 3 and 0 remained, then 1 and 2 with the block's Newton steps on the Schur
/// complement. Those last were a fingertip that had come apart from the box and stalled on a
/// friction impulse left from touching ("A pair that has come apart"); none remain.
#[test]
fn the_arm_pushing_a_box_with_its_gripper_closed_never_stops_at_the_sweep_cap() {
    let shipped = std::fs::read_to_string(path("config/examples/arm_push_box.yaml")).unwrap();
    let at = "position: [0.53, 0.0, 0.06]";
    assert!(shipped.contains(at));
    for x in ["0.53", "0.5302668"] {
        let scene = scene(&shipped.replacen(at, &format!("position: [{x}, 0.0, 0.06]"), 1));
        let cfg = SolverConfig::from_kind("ecp").unwrap();
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&cfg));
        let steps = (scene.duration_s / sim.model.timestep_s).round() as usize;
        let box_body = sim.model.bodies.iter().position(|b| b.name == "box").expect("the scene's box");
        let x0 = sim.state.q[sim.model.bodies[box_body].joint.q_index];
        let mut unconverged = 0;
        for _ in 0..steps {
            unconverged += !sim.step().solve.converged as usize;
        }
        let x1 = sim.state.q[sim.model.bodies[box_body].joint.q_index];
        println!("arm_push_box under ecp, box at x = {x} m: {unconverged} of {steps} steps at the cap; the box moved {:.1} mm", (x1 - x0) * 1e3);
        assert_eq!(unconverged, 0, "box at x = {x} m: {unconverged} of {steps} steps stopped at the sweep cap");
        // the push happened: the box slid about 30 cm (832 mm from 530 mm)
        assert!((x1 - x0 - 0.302).abs() < 0.01, "box at x = {x} m: the box moved {} m", x1 - x0);
    }
}

/// A fingertip of the arm grazes the floor as the arm lifts away from the box
/// (`arm_push_box.yaml` under ecp, about 5.21 s): its
/// normal impulse comes out of the sweeps between 1e-30 and 3e-7 N·s. Its friction is held on
/// the limit surface `(p_t/e_t)² + (p_o/e_o)² + (p_r/e_r)² ≤ μ² p_n²` exactly (the body–plane
/// solve meets that quadratic condition only to its residual, about 1e-7 N·s of friction when
/// p_n → 0, which kept these steps at the cap for 145–230 ms), and the steps converge.
///
/// Whether the fingertip touches down at all follows the trajectory's round-off: at the shipped
/// placement it stopped doing so when the block's Newton steps came to be solved by eliminating
/// the contacts' own unknowns (`block_linear.rs`) and did again once a pair that had come apart
/// tried its separated branch (`pair.rs`). The test therefore runs three placements (the
/// shipped one, the box 0.1 µm and 1 µm further) and needs a grazing contact in at least one.
#[test]
fn a_fingertip_grazing_the_floor_keeps_its_friction_in_the_limit_surface_and_the_step_converges() {
    let shipped = std::fs::read_to_string(path("config/examples/arm_push_box.yaml")).unwrap();
    let at = "position: [0.53, 0.0, 0.06]";
    assert!(shipped.contains(at));
    let p = EcpParams::default();
    let (mut grazing, mut checked) = (0, 0);
    for x in ["0.53", "0.5300001", "0.530001"] {
        let scene = scene(&shipped.replacen(at, &format!("position: [{x}, 0.0, 0.06]"), 1));
        let cfg = SolverConfig::from_kind("ecp").unwrap();
        let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&cfg));
        for k in 0..5215 {
            let r = sim.step();
            if k < 5100 {
                continue;
            }
            assert!(r.solve.converged, "box at x = {x} m, step {k}: unconverged after {} iterations", r.solve.iterations);
            for (body, _, c) in ecp_scheme(&sim).last_link_contacts().filter(|(_, _, c)| c.in_contact) {
                let mu = 0.8; // the scene's default material, fingertip on the floor
                let size = ((c.tangent_impulse[0] / p.e_t).powi(2) + (c.tangent_impulse[1] / p.e_o).powi(2) + (c.torsion_impulse / p.e_r_m).powi(2)).sqrt();
                assert!(size <= mu * c.normal_impulse.max(0.0) * (1.0 + 1e-12), "box at x = {x} m, step {k}, link {body}: friction {size:e} N·s outside μ p_n = {:e} N·s", mu * c.normal_impulse);
                checked += 1;
                grazing += (c.normal_impulse < 1e-6) as usize;
            }
        }
    }
    println!("5.100–5.215 s at three placements: {checked} link–floor contacts checked, {grazing} of them with p_n < 1e-6 N·s");
    assert!(grazing > 0, "no fingertip grazed the floor in the window: the test no longer covers the case");
}

/// The two-pad grasp while the gripper lifts the cube at a steady 75 mm/s
/// (`ecp_gripper_grasp.yaml`, 0.65–0.79 s): the last step's solution is again a fixed point of
/// the sweeps, because the warm start's exchanged impulses act where their bodies will be at
/// this step's end (`carry_over_step`), as the solved ones do. Left at the last step's points
/// (75 µm lower), the other pad's frozen squeeze put a moment of 4e-7 N·m·s on the cube; each
/// step then took four sweeps and a block (22 Newton iterations, 0.85 ms); now one to three
/// sweeps and no block.
#[test]
fn a_steadily_lifted_cube_starts_each_step_from_the_last_solution() {
    let scene = scene_file("config/examples/ecp_gripper_grasp.yaml");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
    let (mut most, mut total, mut steps) = (0, 0, 0);
    for k in 0..790 {
        let r = sim.step();
        if k < 650 {
            continue;
        }
        assert!(r.solve.converged, "step {k}: unconverged");
        let sweeps = ecp_scheme(&sim).last_sweeps();
        (most, total, steps) = (most.max(sweeps), total + sweeps, steps + 1);
    }
    println!("the lift, 0.65–0.79 s: {steps} steps, sweeps per step at most {most}, mean {:.2}", total as f64 / steps as f64);
    assert!(most <= 3, "a step of the steady lift took {most} sweeps (a block runs after 3)");
    assert!((total as f64) < 2.0 * steps as f64, "{total} sweeps over {steps} steps of the steady lift");
}
