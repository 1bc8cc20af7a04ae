//! The single-body step of the equivalent contact point: one convex body (box, sphere, cylinder)
//! against an optional plane over one step, the geometrically implicit time step of Xie &
//! Chakraborty ("Rigid Body Dynamic Simulation with Line and Surface Contact": Newton–Euler with
//! backward-Euler velocities, Sec. III-A, eq. 7; the pose map, Sec. III-B; the closest-point
//! conditions at the end-of-step pose, Sec. IV-A), its mixed nonlinear complementarity problem
//! ([`super::mncp`]) solved from several initial guesses with the previous solution as warm start
//! (docs/ecp.md, "Solver"). Also the shape of a model geometry when the step handles it.

use super::dual::Dual;
use super::mncp::{self, idx, BodyPlaneProblem, MovingBody, SolveOutcome, NZ};
use super::shape::ConvexShape;
use super::EcpParams;
use crate::math::{Mat3, Pose, Vec3};
use crate::model::GeomShape;
use nalgebra::{Rotation3, UnitQuaternion};

/// Mass properties and shape of a body the ECP step moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcpBody {
    /// Mass m (kg).
    pub mass_kg: f64,
    /// Inertia about the centre of mass in body axes (kg·m²).
    pub inertia_body: Mat3,
    /// The shape, in its geometry frame.
    pub shape: ConvexShape,
    /// Geometry frame in the body frame (the body frame's origin is the centre of mass).
    pub geom_in_body: Pose,
}

/// Pose and velocity of an [`EcpBody`] (world frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcpBodyState {
    /// Centre of mass (m).
    pub com_m: Vec3,
    /// Orientation (body to world).
    pub rotation: UnitQuaternion<f64>,
    /// Velocity of the centre of mass (m/s).
    pub velocity: Vec3,
    /// Angular velocity (rad/s).
    pub angular_velocity: Vec3,
}

/// A plane `n·ξ = d` bounding the half-space `n·ξ ≤ d` the bodies cannot enter, with its
/// contact frame and friction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcpPlane {
    /// Unit normal n pointing out of the ground (world).
    pub normal: Vec3,
    /// First tangent t (world); `(n, t, o)` right-handed.
    pub tangent1: Vec3,
    /// Second tangent o (world).
    pub tangent2: Vec3,
    /// Offset d (m).
    pub offset_m: f64,
    /// Friction coefficient μ.
    pub friction: f64,
}

impl EcpPlane {
    /// The plane `n·ξ = d` with the engine's tangent basis of `n`.
    pub fn new(normal: Vec3, offset_m: f64, friction: f64) -> Self {
        let normal = normal.normalize();
        let (tangent1, tangent2) = crate::math::tangent_basis(&normal);
        EcpPlane { normal, tangent1, tangent2, offset_m, friction }
    }
}

/// The contact of one step of one body with the plane.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EcpContact {
    /// The body touches the plane at the end of the step (a contact problem was solved and its
    /// normal impulse is positive).
    pub in_contact: bool,
    /// Equivalent contact point at the end of the step (world, m).
    pub ecp_m: Vec3,
    /// Normal impulse p_n (N·s).
    pub normal_impulse: f64,
    /// Friction impulses along the plane's tangents, (p_t, p_o) (N·s).
    pub tangent_impulse: [f64; 2],
    /// Friction moment impulse about the normal p_r (N·m·s).
    pub torsion_impulse: f64,
    /// Inequalities of the shape active at the ECP (|f_i| < 1e-6 m): box 3 vertex, 2 edge,
    /// 1 face contact.
    pub active_inequalities: usize,
    /// The designated inequality k1 of the accepted solution.
    pub designated: usize,
    /// What the solve did (iterations summed over the initial guesses tried).
    pub solve: SolveOutcome,
    /// Initial guesses tried (1 = the first converged).
    pub starts: u32,
    /// The accepted unknowns (scaled, see [`mncp`]).
    pub unknowns: [f64; NZ],
}

/// Deepest end-of-step penetration of an accepted solution (m); deeper roots are spurious.
pub const PENETRATION_TOLERANCE_M: f64 = 1e-8;

/// Steps one [`EcpBody`] against an optional plane; keeps the previous solution as warm start.
#[derive(Clone, Debug)]
pub struct EcpStepper {
    /// The parameters.
    pub params: EcpParams,
    pub(super) warm: Option<[f64; NZ]>,
    /// `Some(k1)`: the warm start solves this contact, with designated inequality `k1`, with
    /// the body's other contacts as they are now (a block solve just wrote it): the next solve
    /// starts from it as it is, velocities included. Cleared by that solve.
    pub(super) warm_is_solution: Option<usize>,
}

fn arr(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

fn vec_at(z: &[f64; NZ], i: usize) -> Vec3 {
    Vec3::new(z[i], z[i + 1], z[i + 2])
}

impl EcpStepper {
    /// A stepper without warm start.
    pub fn new(params: EcpParams) -> Self {
        EcpStepper { params, warm: None, warm_is_solution: None }
    }

    /// Forgets the warm start.
    pub fn reset(&mut self) {
        self.warm = None;
        self.warm_is_solution = None;
    }

    /// The end-of-step pose for end velocities `(v, ω)`: centre of mass and rotation.
    pub(crate) fn end_pose(state: &EcpBodyState, h: f64, v: &Vec3, w: &Vec3) -> (Vec3, UnitQuaternion<f64>) {
        let r0 = state.rotation.to_rotation_matrix().into_inner();
        let phi = w * h;
        let cols = [mncp::rotate_vector(&phi, &r0.column(0).into_owned()), mncp::rotate_vector(&phi, &r0.column(1).into_owned()), mncp::rotate_vector(&phi, &r0.column(2).into_owned())];
        let m = Mat3::from_columns(&cols);
        let mut q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(m));
        q.renormalize();
        (state.com_m + v * h, q)
    }

    /// Advances `state` by one step of `h_s` under gravity `gravity` (m/s²) and the applied
    /// impulses `applied_linear` (N·s, world) and `applied_angular` (N·m·s about the centre of
    /// mass, world), in contact with `plane` when given. Allocates nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        body: &EcpBody,
        state: &mut EcpBodyState,
        plane: Option<&EcpPlane>,
        gravity: &Vec3,
        h_s: f64,
        applied_linear: &Vec3,
        applied_angular: &Vec3,
    ) -> EcpContact {
        // explicit gyroscopic impulse −h ω × I ω (Sec. III-A; the factor h made explicit)
        let (moving, v_free, w_free) = mncp::moving_body(body, state, &(*applied_linear, *applied_angular), gravity, h_s);
        let load = Vec3::from(moving.impulse_linear);
        self.solve_against(body, state, plane, gravity, h_s, moving, (v_free, w_free), &load)
    }

    /// One step of the body described by `moving` (a free object's Newton–Euler data or a robot
    /// link's mobility, see [`MovingBody::mobility`]) whose velocities without this contact are
    /// `(v_free, w_free)`; `load` (N·s, world) is the impulse the contact is expected to carry
    /// against (the initial guess of `p_n`). `body.mass_kg` sets the impulse scale `m |g| h`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve_against(
        &mut self,
        body: &EcpBody,
        state: &mut EcpBodyState,
        plane: Option<&EcpPlane>,
        gravity: &Vec3,
        h: f64,
        moving: MovingBody,
        (v_free, w_free): (Vec3, Vec3),
        load: &Vec3,
    ) -> EcpContact {
        let m = body.mass_kg;
        let (v0, w0) = (state.velocity, state.angular_velocity);
        let p_lin = *load;
        let (com_free, rot_free) = Self::end_pose(state, h, &v_free, &w_free);
        let geom_rot_free = rot_free.to_rotation_matrix().into_inner() * body.geom_in_body.rotation.to_rotation_matrix().into_inner();
        let geom_centre_free = com_free + rot_free * body.geom_in_body.translation.vector;

        // free flight when the free end pose clears the plane: (p = 0, separated closest points)
        // then solves the contact conditions
        let plane = match plane {
            Some(pl) if body.shape.plane_gap(&geom_centre_free, &geom_rot_free, &pl.normal, pl.offset_m) <= 0.0 => pl,
            _ => {
                let (com, rot) = Self::end_pose(state, h, &v_free, &w_free);
                *state = EcpBodyState { com_m: com, rotation: rot, velocity: v_free, angular_velocity: w_free };
                self.warm = None;
                self.warm_is_solution = None;
                return EcpContact { solve: SolveOutcome { iterations: 0, residual: 0.0, converged: true }, ..Default::default() };
            }
        };

        let scale = m * h * gravity.norm().max(1.0);
        let mut problem = BodyPlaneProblem {
            h_s: h,
            body: moving,
            normal: arr(&plane.normal),
            tangent1: arr(&plane.tangent1),
            tangent2: arr(&plane.tangent2),
            plane_offset_m: plane.offset_m,
            friction: plane.friction,
            limit_surface: [self.params.e_t, self.params.e_o, self.params.e_r_m],
            k1: 0,
            gap_mode: self.params.gap_mode,
            impulse_scale: scale,
        };

        // initial guesses (docs/ecp.md, "Solver"): the warm start, then for each candidate k1 the
        // lowest point, the lowest edge's middle and the lowest face's centre at the free end pose
        let (k1_list, k1_count) = body.shape.designated_candidates(&geom_rot_free, &plane.normal);
        let points = body.shape.contact_guesses(&geom_centre_free, &geom_rot_free, &plane.normal);
        let n = plane.normal;
        let v_tan = v0 - n * n.dot(&v0);
        let pn_guess = (m * (-n.dot(&v0)).max(0.0) + (-n.dot(&p_lin)).max(0.0)) / scale;
        let guess = |point: &Vec3, k1: usize| -> [f64; NZ] {
            let mut z = [0.0; NZ];
            z[idx::V..idx::V + 3].copy_from_slice(&arr(&v0));
            z[idx::W..idx::W + 3].copy_from_slice(&arr(&w0));
            let clearance = n.dot(point) - plane.offset_m;
            z[idx::A1..idx::A1 + 3].copy_from_slice(&arr(point));
            z[idx::A2..idx::A2 + 3].copy_from_slice(&arr(&(point - n * clearance)));
            z[idx::L + k1] = clearance.max(0.0);
            z[idx::LG] = 1.0;
            z[idx::PN] = pn_guess;
            z[idx::SIGMA] = v_tan.norm();
            z
        };
        let end_gap = |v: &Vec3, w: &Vec3| {
            let (com, rot) = Self::end_pose(state, h, v, w);
            let geom = Pose::from_parts(com.into(), rot) * body.geom_in_body;
            body.shape.plane_gap(&geom.translation.vector, &geom.rotation.to_rotation_matrix().into_inner(), &plane.normal, plane.offset_m)
        };
        let total_starts = 1 + k1_count * points.len();
        let solution_k1 = self.warm_is_solution.take();
        let mut best: Option<([f64; NZ], usize, SolveOutcome)> = None;
        let mut iterations = 0;
        let mut starts = 0;
        for s in 0..total_starts {
            let (mut z, k1) = if s == 0 {
                match self.warm {
                    Some(w) if solution_k1.is_some() => (w, solution_k1.unwrap_or_default()),
                    Some(w) => {
                        let mut z = w;
                        z[idx::V..idx::V + 3].copy_from_slice(&arr(&v0));
                        z[idx::W..idx::W + 3].copy_from_slice(&arr(&w0));
                        (z, k1_list[0])
                    }
                    None => continue,
                }
            } else {
                let k1 = k1_list[(s - 1) / points.len()];
                (guess(&points[(s - 1) % points.len()], k1), k1)
            };
            problem.k1 = k1;
            starts += 1;
            let mut outcome = mncp::solve(&problem, &mut z, self.params.tolerance, self.params.max_iterations);
            iterations += outcome.iterations;
            // a root whose end pose penetrates the plane is spurious (the literal form admits
            // such roots): rejected, ranked by its depth, and the next guess is tried
            let depth = -end_gap(&vec_at(&z, idx::V), &vec_at(&z, idx::W));
            if depth > PENETRATION_TOLERANCE_M {
                outcome.converged = false;
                outcome.residual = outcome.residual.max(depth);
            }
            let better = best.as_ref().is_none_or(|(_, _, b)| outcome.residual < b.residual || !b.residual.is_finite());
            if better && outcome.residual.is_finite() {
                best = Some((z, k1, outcome));
            }
            if outcome.converged {
                break;
            }
        }
        let Some((z, k1, outcome)) = best else {
            // no finite iterate from any guess: free flight, reported as not converged
            let (com, rot) = Self::end_pose(state, h, &v_free, &w_free);
            *state = EcpBodyState { com_m: com, rotation: rot, velocity: v_free, angular_velocity: w_free };
            self.warm = None;
            return EcpContact { solve: SolveOutcome { iterations, residual: f64::INFINITY, converged: false }, starts, ..Default::default() };
        };
        self.warm = Some(z);
        let (v, w) = (vec_at(&z, idx::V), vec_at(&z, idx::W));
        let (com, rot) = Self::end_pose(state, h, &v, &w);
        *state = EcpBodyState { com_m: com, rotation: rot, velocity: v, angular_velocity: w };
        // active inequalities at the ECP, at the end pose
        let ecp = vec_at(&z, idx::A1);
        let active = count_active(body, state, &ecp);
        EcpContact {
            in_contact: z[idx::PN] > 0.0,
            ecp_m: ecp,
            normal_impulse: z[idx::PN] * scale,
            tangent_impulse: [z[idx::PT] * scale, z[idx::PO] * scale],
            torsion_impulse: z[idx::PR] * scale,
            active_inequalities: active,
            designated: k1,
            solve: SolveOutcome { iterations, ..outcome },
            starts,
            unknowns: z,
        }
    }
}

/// Number of the shape's inequalities with |f_i(ξ)| < 1e-6 m at the body pose `state`.
pub fn count_active(body: &EcpBody, state: &EcpBodyState, xi: &Vec3) -> usize {
    let geom = Pose::from_parts(state.com_m.into(), state.rotation) * body.geom_in_body;
    let eta = geom.inverse_transform_point(&(*xi).into()).coords;
    let eta_d = [Dual::<0>::cst(eta.x), Dual::cst(eta.y), Dual::cst(eta.z)];
    (0..body.shape.inequality_count()).filter(|&i| body.shape.inequality(i, &eta_d).0.v.abs() < 1e-6).count()
}

/// The shape of a geometry, when the ECP step handles it.
pub fn convex_shape(shape: &GeomShape) -> Option<ConvexShape> {
    match *shape {
        GeomShape::Box { half_extents } => Some(ConvexShape::Box { half_extents_m: arr(&half_extents) }),
        GeomShape::Sphere { radius } => Some(ConvexShape::Sphere { radius_m: radius }),
        GeomShape::Cylinder { radius, half_length } => Some(ConvexShape::Cylinder { radius_m: radius, half_length_m: half_length }),
        _ => None,
    }
}
