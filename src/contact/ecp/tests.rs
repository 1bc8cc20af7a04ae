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

/// A fingertip of the arm (B, a robot link) 2 cm from the box it pushed (`arm_push_box.yaml`
/// under ecp, a pair's warm start of 0.02 s, the problem and start as the scheme built them):
/// the start carries a friction impulse of 5e-6 weight impulses left from touching, and the
/// Newton solve from it stalls (the friction rows are degenerate at `p_n = σ = 0`). The pair's
/// start then tries the separated branch, no impulse and the free end velocities, which solves
/// the problem: impulses under 1e-12 weight impulses, both bodies at their free velocities.
#[test]
fn a_pair_that_has_come_apart_with_friction_left_over_converges_on_its_separated_branch() {
    use super::pair::{idx, solve_start, BodyPairProblem};
    let problem = BodyPairProblem {
         h_s: 0.001,
        a: MovingBody { mass_kg: 0.5, inertia_world: [[0.0012, 0.0, 0.0], [0.0, 0.0012, 0.0], [0.0, 0.0, 0.0012]], com_m: [0.53, 0.0, 0.06], velocity: [0.0, 0.0, 0.0], angular_velocity: [0.0, 0.0, 0.0], impulse_linear: [-7.148826186988335e-17, -2.715356785636741e-8, -2.5296558360185517e-8], impulse_angular: [3.114910630634172e-9, -1.517751222624449e-9, 1.629215586683544e-9], shape: ConvexShape::Box { half_extents_m: [0.06, 0.06, 0.06] }, geom_axes: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], geom_offset_m: [0.0, 0.0, 0.0], mobility: None },
        b: MovingBody { mass_kg: 18.050000000000004, inertia_world: [[1.123143505423759e-5, 0.0, 1.0291383417507347e-6], [0.0, 1.2083300000000007e-5, 0.0], [1.0291383417507345e-6, 0.0, 2.7269349457624153e-6]], com_m: [0.4367273029172327, -0.0075, 0.12274136525146392], velocity: [0.041119653424387705, 5.335288560228893e-7, -0.22813444155381907], angular_velocity: [-7.435362840080226e-8, -0.16673290406090296, 1.6644011603837578e-7], impulse_linear: [0.0, 0.0, 0.0], impulse_angular: [0.0, 0.0, 0.0], shape: ConvexShape::Box { half_extents_m: [0.01, 0.0075, 0.025] }, geom_axes: [[-0.992960104227731, 0.0, -0.11844927780300714], [0.0, 1.0000000000000002, 0.0], [0.11844927780300714, 0.0, -0.992960104227731]], geom_offset_m: [0.0, 0.0, 0.0], mobility: Some([[1.3684685570062864, -4.80454370072484e-5, 0.13098297827332184, -0.29481471835791906, -7.0249183476816155, 1.676879301633027], [-4.8045437007246394e-5, 19.920330551889688, -8.311727753639378e-5, 0.011082303671519078, 0.0, -0.006406058267632853], [0.13098297827332175, -8.311727753639477e-5, 0.17012070870590637, -0.1480890261452702, -0.3554055957172104, 0.29481471835791906], [-0.29481471835791906, 0.011082303671519302, -0.14808902614527023, 19.74520348603603, 0.0, -39.308629114389205], [-7.024918347681615, 0.0, -0.3554055957172102, 0.0, 43.99518936878991, 0.0], [1.676879301633027, -0.006406058267633118, 0.29481471835791906, -39.308629114389205, 0.0, 223.5839068844036]]) },
        tangent_ref: [0.5581416493811244, -0.0, 0.8297456834633838], friction: 0.35, limit_surface: [1.0, 1.0, 1.0], k1: 1, impulse_scale: 0.0049050000000000005, tangential_compliance: 0.03, friction_ref: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0] };
    let start = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04111746288908126, 0.0, -0.22813949379972767, 0.0, -0.16672178249481429, 0.0, 0.47000000011586607, -0.015000000538260823, 0.09887587122912762, 0.4496631934526871, -0.015000000540416334, 0.09887587128890796, 5.15730037873348e-6, -5.535895587802443e-6, -3.424584761660204e-7, 4.0104335927819305e-21, 0.020336806663178955, 4.8734472034397356e-18, 1.5551969181894903e-18, -8.771576351831219e-19, -4.06143305519878e-18, 0.0, 0.9929403461160763, 0.0, 1.599819735402691e-10, 0.11861479273212991, 0.0, 1.363007928216909e-18, 1.107433802852783e-7];
    let free = [Vec3::new(-1.429765237397667e-16, -5.430713571273482e-8, -5.0593116720371034e-8), Vec3::new(2.59575885886181e-6, -1.2647926855203743e-6, 1.35767965556962e-6), Vec3::new(0.041119653424387705, 5.335288560228893e-7, -0.22813444155381907), Vec3::new(-7.435362840080226e-8, -0.16673290406090296, 1.6644011603837578e-7)];
    let params = EcpParams::default();
    let mut z = start;
    let plain = super::mncp::solve(&problem, &mut z, params.tolerance, params.max_iterations);
    assert!(!plain.converged, "the plain solve converged: {plain:?}");
    let mut z = start;
    let (outcome, iterations, retried) = solve_start(&problem, &mut z, &params, Some(&free));
    assert!(retried && outcome.converged, "{outcome:?}");
    assert_eq!(iterations, plain.iterations + outcome.iterations);
    // impulses over the weight impulse, velocities in m/s and rad/s
    for i in [idx::PT, idx::PO, idx::PR, idx::PN] {
        assert!(z[i].abs() < 1e-12, "impulse z[{i}] = {:e} (started at {:e})", z[i], start[i]);
    }
    for (k, v) in free.iter().enumerate() {
        let end = Vec3::new(z[3 * k], z[3 * k + 1], z[3 * k + 2]);
        assert!((end - v).norm() < 1e-12, "velocity {k}: {end:?} against free {v:?}");
    }
    assert!(z[idx::LA + problem.k1] > 0.019, "the gap multiplier {}", z[idx::LA + problem.k1]);
}
