//! Unit tests of the ECP step: the dual-number Jacobian against central differences, and a cube
//! at rest.

use super::mncp::{residual_and_jacobian, residual_value, BodyPlaneProblem, GapMode, MovingBody, NZ};
use super::*;
use crate::math::{xorshift, Mat3, Pose, Vec3};
use nalgebra::UnitQuaternion;

/// A box–plane problem with a slightly rotated spinning cube near the plane.
fn cube_problem(k1: usize, gap_mode: GapMode) -> BodyPlaneProblem {
    let rot = UnitQuaternion::from_euler_angles(0.05, -0.03, 0.4).to_rotation_matrix().into_inner();
    let inertia = rot * (Mat3::identity() / 6.0) * rot.transpose();
    BodyPlaneProblem {
        h_s: 0.01,
        body: MovingBody {
            mass_kg: 1.0,
            inertia_world: std::array::from_fn(|i| std::array::from_fn(|j| inertia[(i, j)])),
            com_m: [0.1, -0.2, 0.52],
            velocity: [0.8, 0.3, -0.5],
            angular_velocity: [0.4, -0.7, 1.1],
            impulse_linear: [0.0, 0.0, -0.098],
            impulse_angular: [0.001, 0.0, -0.002],
            shape: ConvexShape::Box { half_extents_m: [0.5, 0.5, 0.5] },
            geom_axes: std::array::from_fn(|j| std::array::from_fn(|i| rot[(i, j)])),
            geom_offset_m: [0.0; 3],
            mobility: None,
        },
        normal: [0.0, 0.0, 1.0],
        tangent1: [1.0, 0.0, 0.0],
        tangent2: [0.0, 1.0, 0.0],
        plane_offset_m: 0.0,
        friction: 0.3,
        limit_surface: [1.0, 1.0, 1.0],
        k1,
        gap_mode,
        impulse_scale: 0.098,
    }
}

#[test]
fn dual_number_jacobian_matches_central_differences_at_random_states() {
    // free bodies and robot links (odd trials); deterministic pseudo-random states (xorshift), away from Fischer–Burmeister kinks
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let shapes = test_shapes();
    let mut worst: f64 = 0.0;
    for (s, shape) in shapes.iter().enumerate() {
        for gap_mode in [GapMode::SignedGap, GapMode::PaperMax] {
            for trial in 0..20 {
                let mut p = cube_problem(trial % shape.inequality_count(), gap_mode);
                p.body.shape = *shape;
                if trial % 2 == 1 {
                    // a robot link: operational-space rows with a random mobility Λ⁻¹
                    p.body.mobility = Some(std::array::from_fn(|_| std::array::from_fn(|_| next())));
                }
                let z: [f64; NZ] = std::array::from_fn(|_| 0.3 + next());
                worst = worst.max(jacobian_error_against_differences(&p, &z, &format!("shape {s} {gap_mode:?} trial {trial}")));
            }
        }
    }
    assert!(worst > 0.0, "the comparison must see round-off, not nothing");
}

/// One box, one sphere, one cylinder, of about unit size.
fn test_shapes() -> [ConvexShape; 3] {
    [ConvexShape::Box { half_extents_m: [0.5, 0.5, 0.5] }, ConvexShape::Sphere { radius_m: 0.5 }, ConvexShape::Cylinder { radius_m: 0.4, half_length_m: 0.6 }]
}

/// The largest relative difference between the dual-number Jacobian of `p` at `z` and central
/// differences (step 1e-6 relative); fails at the first entry off by more than 1e-6.
fn jacobian_error_against_differences<S: super::mncp::MncpSystem<M>, const M: usize>(p: &S, z: &[f64; M], case: &str) -> f64 {
    let (_, jac) = residual_and_jacobian(p, z);
    let mut worst: f64 = 0.0;
    for j in 0..M {
        let step = 1e-6 * z[j].abs().max(1.0);
        let (mut zp, mut zm) = (*z, *z);
        zp[j] += step;
        zm[j] -= step;
        let (fp, fm) = (residual_value(p, &zp), residual_value(p, &zm));
        for i in 0..M {
            let fd = (fp[i] - fm[i]) / (2.0 * step);
            let err = (fd - jac[(i, j)]).abs() / jac[(i, j)].abs().max(1.0);
            assert!(err < 1e-6, "{case}: ∂Φ{i}/∂z{j} dual {} vs differences {fd}", jac[(i, j)]);
            worst = worst.max(err);
        }
    }
    worst
}

fn unit_cube() -> EcpBody {
    EcpBody { mass_kg: 1.0, inertia_body: Mat3::identity() / 6.0, shape: ConvexShape::Box { half_extents_m: [0.5; 3] }, geom_in_body: Pose::identity() }
}

#[test]
fn cube_at_rest_stays_at_rest_with_the_ecp_under_its_centre() {
    let body = unit_cube();
    let plane = EcpPlane::new(Vec3::z(), 0.0, 0.5);
    let mut state = EcpBodyState { com_m: Vec3::new(0.0, 0.0, 0.5), rotation: UnitQuaternion::identity(), velocity: Vec3::zeros(), angular_velocity: Vec3::zeros() };
    let mut stepper = EcpStepper::new(EcpParams::default());
    let g = Vec3::new(0.0, 0.0, -9.8);
    for step in 0..100 {
        let c = stepper.step(&body, &mut state, Some(&plane), &g, 0.01, &Vec3::zeros(), &Vec3::zeros());
        assert!(c.solve.converged && c.in_contact, "step {step}: {c:?}");
        assert!(state.velocity.norm() < 1e-12 && state.angular_velocity.norm() < 1e-12, "step {step}: moving {state:?}");
        assert!((c.normal_impulse - 0.098).abs() < 1e-12, "p_n = {}", c.normal_impulse);
        assert!(c.tangent_impulse[0].abs() + c.tangent_impulse[1].abs() + c.torsion_impulse.abs() < 1e-12);
        assert!(c.ecp_m.norm() < 1e-9, "ECP {:?}", c.ecp_m);
        assert_eq!(c.active_inequalities, 1, "face contact");
    }
    assert!((state.com_m - Vec3::new(0.0, 0.0, 0.5)).norm() < 1e-12);
}

#[test]
fn pair_jacobian_matches_central_differences_at_random_states() {
    // free objects on both sides, or a robot link on side A or B (trials 1, 4 and 2, 5)
    use super::pair::{BodyPairProblem, NZ_PAIR};
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let shapes = test_shapes();
    let mut worst: f64 = 0.0;
    for (s, shape_a) in shapes.iter().enumerate() {
        for shape_b in &shapes {
            for trial in 0..6 {
                let base = cube_problem(0, GapMode::SignedGap);
                let mut a = base.body;
                a.shape = *shape_a;
                let mut b = base.body;
                b.shape = *shape_b;
                b.com_m = [0.0, 0.1, -0.5];
                b.velocity = [-0.2, 0.1, 0.3];
                // a robot link on one side (a gripper pad on an object): operational-space rows
                // with a random mobility Λ⁻¹
                let mobility = || Some(std::array::from_fn(|_| std::array::from_fn(|_| 0.0)));
                match trial % 3 {
                    1 => a.mobility = mobility(),
                    2 => b.mobility = mobility(),
                    _ => {}
                }
                for m in [&mut a.mobility, &mut b.mobility].into_iter().flatten() {
                    *m = std::array::from_fn(|_| std::array::from_fn(|_| next()));
                }
                let p = BodyPairProblem { h_s: 0.01, a, b, tangent_ref: [1.0, 0.0, 0.0], friction: 0.4, limit_surface: [1.0, 1.0, 0.5], k1: trial % shape_a.inequality_count(), impulse_scale: 0.098, tangential_compliance: 0.0, friction_ref: [0.0; 6] };
                let z: [f64; NZ_PAIR] = std::array::from_fn(|_| 0.3 + next());
                worst = worst.max(jacobian_error_against_differences(&p, &z, &format!("shape {s} trial {trial}")));
            }
        }
    }
    assert!(worst > 0.0, "the comparison must see round-off, not nothing");
}
