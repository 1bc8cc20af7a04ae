//! Line and surface contact through the equivalent contact point (ECP): the geometrically
//! implicit time step of Xie & Chakraborty ("Rigid Body Dynamic Simulation with Line and Surface
//! Contact"), as a whole-step scheme.
//!
//! Each free convex body (box, sphere, cylinder) touching the ground plane gets one contact
//! point per patch — the point about which the patch's pressure has no moment — solved together
//! with the end-of-step velocity, the normal impulse, the friction impulses and the friction
//! moment about the normal in one mixed nonlinear complementarity problem per body
//! ([`mncp`]). The closest-point conditions hold at the end-of-step pose, so the body ends the
//! step touching or separated, never penetrating. See `docs/ecp.md` for the equations, the
//! deviations from the paper and the tests.
//!
//! Scope: scenes whose moving bodies are single free objects of those shapes, in contact with the
//! ground and with each other, and robots whose links touch only the ground and such objects
//! with such shapes ([`crate::contact::SceneCoverage::ConvexObjects`] and the scheme's own
//! robot-link rule, [`MethodParams::outside_coverage`]); a robot link's problem takes its
//! operational-space mobility `J M̃⁻¹ Jᵀ` in place of its mass and inertia, and the links, the
//! link–object pairs (`link_object`) and the joint rows (limits, friction, mimic couplings) of a
//! robot are coupled by Gauss–Seidel sweeps over its generalised velocity (`links`, docs/ecp.md
//! "Robot links" and "Robot links against objects"). Other scenes are refused when they are loaded. A model built without that check (a library
//! user calling `Simulation::from_scene`) still steps: trees the scheme does not own move as if
//! they had no contacts (v⁺ = v*, positions with the engine's map).
//!
//! What wrench readers see: after the step the scheme replaces the collision contacts of every
//! pair it solved by one contact at the ECP (carried, as a material point of the body, to the
//! start-of-step pose, where the engine's contacts and body poses of the step are) with the
//! normal impulse, the friction impulses and the friction moment on its four rows
//! ([`ContactRows::POINT_TORSION`]); contact wrenches, F/T sensors, `contact_markers` and bags
//! therefore show the ECP and its wrench.

mod dual;
mod link_object;
mod links;
pub mod mncp;
mod shape;
pub mod pair;
#[cfg(test)]
mod tests;

pub use dual::Dual;
pub use mncp::{BodyPlaneProblem, GapMode, MovingBody, SolveOutcome, NZ};
pub use shape::ConvexShape;

use super::method::{check_params, contact_method, tolerance_and_iterations, Capabilities, MethodParams, ParamError};
use super::ContactRows;
use super::{FrictionModel, SceneCoverage, SchemeInput, SchemeOutput, SolveStats, WholeStepScheme};
use crate::collision::Contact;
use crate::math::{Mat3, Pose, Vec3};
use crate::model::{GeomShape, JointKind, Model};
use crate::state::State;
use mncp::idx;
use nalgebra::{Quaternion, Rotation3, UnitQuaternion};

/// ECP parameters.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EcpParams {
    /// Newton iterations (Jacobian evaluations) per initial guess.
    pub max_iterations: u32,
    /// Stop when the largest entry of the scaled residual is below this (dimensionless: impulse
    /// rows over the weight impulse m g h, geometry rows in m).
    pub tolerance: f64,
    /// Form of the non-penetration condition: `signed_gap` (default) or the paper's `paper_max`.
    pub gap_mode: GapMode,
    /// Limit-surface scale of the first tangential friction impulse, e_t (dimensionless).
    pub e_t: f64,
    /// Limit-surface scale of the second tangential friction impulse, e_o (dimensionless).
    pub e_o: f64,
    /// Limit-surface scale of the friction moment about the normal, e_r (m).
    pub e_r_m: f64,
    /// Most Gauss–Seidel sweeps over the contacts per step when bodies touch each other.
    pub max_sweeps: u32,
    /// The sweeps stop when no contact's impulse changed by more than this, relative to the
    /// lighter body's weight impulse m g h (dimensionless).
    pub sweep_tolerance: f64,
}

impl Default for EcpParams {
    fn default() -> Self {
        EcpParams { max_iterations: 60, tolerance: 1e-10, gap_mode: GapMode::SignedGap, e_t: 1.0, e_o: 1.0, e_r_m: 1.0, max_sweeps: 200, sweep_tolerance: 1e-9 }
    }
}

impl MethodParams for EcpParams {
    type Runtime = EcpScheme;
    const NAME: &'static str = "ecp";
    const SUMMARY: &'static str =
        "equivalent contact point: geometrically implicit step with line and surface contact for convex objects and robot links on the ground (Xie & Chakraborty)";
    const CAPABILITIES: Capabilities = Capabilities {
        deformables: false,
        contact_rows: ContactRows::POINT_TORSION,
        friction: FrictionModel::EllipsoidalLimitSurface,
        dense_mass: false,
        coverage: SceneCoverage::ConvexObjects,
    };

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.tolerance > 0.0 && self.tolerance.is_finite(), "tolerance", "must be > 0"),
            (self.e_t > 0.0 && self.e_t.is_finite(), "e_t", "must be > 0"),
            (self.e_o > 0.0 && self.e_o.is_finite(), "e_o", "must be > 0"),
            (self.e_r_m > 0.0 && self.e_r_m.is_finite(), "e_r_m", "must be > 0 (m)"),
            (self.max_sweeps >= 1, "max_sweeps", "must be ≥ 1"),
            (self.sweep_tolerance > 0.0 && self.sweep_tolerance.is_finite(), "sweep_tolerance", "must be > 0"),
        ])
    }
    tolerance_and_iterations!(tolerance, "1 (scaled residual)", max_iterations);
    fn build(&self, model: &Model) -> EcpScheme {
        EcpScheme::new(self.clone(), model)
    }
    fn outside_coverage(&self, model: &Model) -> Option<String> {
        robot_outside_coverage(model).or_else(|| objects_outside_coverage(model))
    }
}

/// Why a free object of `model` is outside what the ECP scheme covers (the
/// [`SceneCoverage::ConvexObjects`] class): an object that is not a single box, sphere or
/// cylinder, or a pair that can touch where one side neither moves nor belongs to a robot.
fn objects_outside_coverage(model: &Model) -> Option<String> {
    use crate::model::{CollisionPair, TreeKind};
    for o in model.objects.iter().filter(|o| !o.fixed) {
        let mut geoms = model.geoms.iter().filter(|g| g.body == Some(o.body));
        let shape_ok = geoms.next().is_some_and(|g| convex_shape(&g.shape).is_some()) && geoms.next().is_none();
        if !shape_ok {
            return Some(format!("object '{}' is not a single box, sphere or cylinder", o.name));
        }
    }
    let moving = |g: usize| model.geoms[g].body.is_some_and(|b| model.objects.iter().any(|o| o.body == b && !o.fixed));
    let robot_link = |g: usize| model.geoms[g].body.is_some_and(|b| matches!(model.trees[model.bodies[b].tree].kind, TreeKind::Robot(_)));
    let covered = |p: &CollisionPair| (moving(p.geom_a) || robot_link(p.geom_a)) && (moving(p.geom_b) || robot_link(p.geom_b));
    if let Some(p) = model.collision_pairs.iter().find(|p| !p.with_ground && !covered(p)) {
        return Some(format!(
            "'{}' and '{}' can touch and one of them does not move (contact is covered between two free objects and with the ground plane only)",
            model.geoms[p.geom_a].name, model.geoms[p.geom_b].name
        ));
    }
    None
}

/// Why a robot of `model` is outside what the ECP scheme covers (its
/// [`MethodParams::outside_coverage`] rule): a link that can touch something other than the
/// ground plane and free objects (a static object, another robot, itself), or a link geometry
/// touching either that is not a box, sphere or cylinder.
pub(crate) fn robot_outside_coverage(model: &Model) -> Option<String> {
    use crate::model::TreeKind;
    let robot_of = |g: usize| {
        let b = model.geoms[g].body?;
        match model.trees[model.bodies[b].tree].kind {
            TreeKind::Robot(r) => Some((r, b)),
            TreeKind::Object(_) => None,
        }
    };
    // a moving object's geometry (its shape is checked with the objects)
    let free_object = |g: usize| model.geoms[g].body.is_some_and(|b| model.objects.iter().any(|o| o.body == b && !o.fixed));
    for p in &model.collision_pairs {
        for g in [p.geom_a, p.geom_b] {
            let Some((r, b)) = robot_of(g) else { continue };
            let robot = &model.robots[r].name;
            let link = &model.bodies[b].name;
            let other = if g == p.geom_a { p.geom_b } else { p.geom_a };
            if !p.with_ground && !free_object(other) {
                return Some(format!(
                    "'{}' and '{}' can touch (link '{link}' of robot '{robot}'; robot links are covered in contact with the ground plane and with free objects only)",
                    model.geoms[p.geom_a].name, model.geoms[p.geom_b].name
                ));
            }
            if crate::contact::ecp::convex_shape(&model.geoms[g].shape).is_none() {
                let what = if p.with_ground { "the ground".to_string() } else { format!("'{}'", model.geoms[other].name) };
                return Some(format!("link '{link}' of robot '{robot}' touches {what} with '{}', which is not a box, sphere or cylinder", model.geoms[g].name));
            }
        }
    }
    None
}


contact_method!(EcpScheme, EcpParams, WholeStep);

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
    warm: Option<[f64; NZ]>,
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
        EcpStepper { params, warm: None }
    }

    /// Forgets the warm start.
    pub fn reset(&mut self) {
        self.warm = None;
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
        let mut best: Option<([f64; NZ], usize, SolveOutcome)> = None;
        let mut iterations = 0;
        let mut starts = 0;
        for s in 0..total_starts {
            let (mut z, k1) = if s == 0 {
                match self.warm {
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

/// A point of a body at the end of the step (`end` pose) carried, as a material point, to the
/// start-of-step pose `start` (where the engine's contacts and body poses of the step are).
fn carry_to_start(start: &EcpBodyState, end: &EcpBodyState, point: &Vec3) -> Vec3 {
    start.com_m + start.rotation * (end.rotation.inverse() * (point - end.com_m))
}

/// The contact key of the one contact the scheme reports for collision pair `pair`.
fn contact_key(pair: usize) -> crate::state::ContactKey {
    crate::state::ContactKey { pair: pair as u32, feature_a: u32::MAX, feature_b: u32::MAX }
}

/// A body at rest at the origin (placeholder state before the first step).
fn rest_state() -> EcpBodyState {
    EcpBodyState { com_m: Vec3::zeros(), rotation: UnitQuaternion::identity(), velocity: Vec3::zeros(), angular_velocity: Vec3::zeros() }
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

/// The impulse a contact passes between its bodies over a step: `force` (N·s) at `point_a` and
/// the friction moment `twist` (N·m·s) on A, their opposites at `point_b` on B (none for the
/// ground). Points at the end of the step (world).
#[derive(Clone, Copy, Debug, Default)]
struct Exchange {
    force: Vec3,
    twist: Vec3,
    point_a: Vec3,
    point_b: Vec3,
}

impl Exchange {
    /// Largest change of the impulses from `other`, over `scale` (N·s).
    fn change(&self, other: &Exchange, scale: f64) -> f64 {
        ((self.force - other.force).norm() + (self.twist - other.twist).norm()) / scale
    }
}

/// One free object the scheme moves.
#[derive(Clone, Debug)]
struct Slot {
    body: usize,
    q_index: usize,
    v_index: usize,
    geom: usize,
    ecp_body: EcpBody,
    stepper: EcpStepper,
    last: EcpContact,
    /// The ground pair of its geometry: index and friction coefficient.
    ground_pair: Option<(usize, f64)>,
    /// Its ground contact's impulses (previous sweep / step).
    ground: Exchange,
    /// Start-of-step state and the current end-of-step estimate.
    start: EcpBodyState,
    end: EcpBodyState,
}

/// Two free objects that can touch: A is the body of the collision pair's second geometry.
#[derive(Clone, Debug)]
struct BodyPair {
    pair: usize,
    a: usize,
    b: usize,
    friction: f64,
    stepper: pair::PairStepper,
    /// Solved this step (close enough to touch).
    active: bool,
    /// Expected normal from B into A.
    n0: Vec3,
    exchange: Exchange,
    last: pair::PairContact,
}

/// A contact the scheme solved, in the form the rest of the engine reads ([`Contact`] plus its
/// impulse rows in the [`ContactRows::POINT_TORSION`] layout).
#[derive(Clone, Copy, Debug)]
struct SolvedContact {
    /// Index into `Model::collision_pairs`.
    pair: usize,
    /// The contact: the ECP as a material point of body B carried to the start-of-step pose
    /// (where the engine's collision contacts and body poses of the step are), the contact frame
    /// (normal from A into B).
    contact: Contact,
    /// `[p_n, p_t, p_o, p_r]` on body B (N·s, N·s, N·s, N·m·s).
    impulse: [f64; 4],
}

/// The ECP whole-step scheme: one [`EcpStepper`] per free object, the ground plane.
pub struct EcpScheme {
    params: EcpParams,
    slots: Vec<Slot>,
    /// The ground: plane, geometry index.
    ground: Option<(EcpPlane, usize)>,
    /// Per tree: moved by a slot (else it moves freely, without contact).
    owned_trees: Vec<bool>,
    /// Per collision pair: its contacts are the scheme's (replaced by the solved ECP).
    owned_pairs: Vec<bool>,
    /// The contacts of the last step (capacity: one per collision pair).
    solved: Vec<SolvedContact>,
    /// Pairs of free objects that can touch.
    pairs: Vec<BodyPair>,
    /// Gauss–Seidel sweeps of the last step.
    last_sweeps: u32,
    /// Newton iterations (Jacobian evaluations) of the current step, over every solve.
    step_iterations: u32,
    /// Scratch of the cold-start estimate: slots by height, load per slot (N·s).
    order: Vec<usize>,
    load: Vec<f64>,
    /// Robot links that can touch the ground, with their robots' joint rows.
    links: links::RobotLinks,
    /// Robot-link geometries that can touch a free object.
    link_pairs: Vec<link_object::LinkObjectPair>,
}

impl EcpScheme {
    /// Builds the scheme for `model`: one slot per free object with a supported shape.
    pub fn new(params: EcpParams, model: &Model) -> Self {
        let ground = model.ground_geom.and_then(|g| match model.geoms[g].shape {
            GeomShape::Plane { normal, offset } => Some((EcpPlane::new(normal, offset, 0.0), g)),
            _ => None,
        });
        let mut slots = Vec::new();
        for o in &model.objects {
            let b = &model.bodies[o.body];
            if o.fixed || b.joint.kind != JointKind::Free {
                continue;
            }
            let Some(geom) = model.geoms.iter().position(|g| g.body == Some(o.body)) else { continue };
            let Some(shape) = convex_shape(&model.geoms[geom].shape) else { continue };
            let ecp_body = EcpBody { mass_kg: b.mass, inertia_body: b.inertia_com, shape, geom_in_body: model.geoms[geom].x_body_geom };
            slots.push(Slot {
                body: o.body,
                q_index: b.joint.q_index,
                v_index: b.joint.v_index,
                geom,
                ecp_body,
                stepper: EcpStepper::new(params.clone()),
                last: EcpContact::default(),
                ground_pair: ground.and_then(|(_, g)| Self::ground_pair(model, g, geom)),
                ground: Exchange::default(),
                start: rest_state(),
                end: rest_state(),
            });
        }
        let mut owned_trees = vec![false; model.trees.len()];
        for s in &slots {
            owned_trees[model.bodies[s.body].tree] = true;
        }
        let n_slots = slots.len();
        let slot_of = |g: usize| slots.iter().position(|s| s.geom == g);
        let mut pairs = Vec::new();
        for (k, p) in model.collision_pairs.iter().enumerate() {
            if let (false, Some(b), Some(a)) = (p.with_ground, slot_of(p.geom_a), slot_of(p.geom_b)) {
                pairs.push(BodyPair {
                    pair: k,
                    a,
                    b,
                    friction: p.friction,
                    stepper: pair::PairStepper::default(),
                    active: false,
                    n0: Vec3::z(),
                    exchange: Exchange::default(),
                    last: pair::PairContact::default(),
                });
            }
        }
        let link_pairs = link_object::build(model, slot_of);
        let links = links::RobotLinks::new(&params, model, ground.map(|(_, g)| g));
        let owned_pairs = model
            .collision_pairs
            .iter()
            .enumerate()
            .map(|(k, p)| {
                (p.with_ground && slot_of(p.geom_b).is_some()) || pairs.iter().any(|bp| bp.pair == k) || links.owns_pair(k) || link_pairs.iter().any(|lp| lp.pair == k)
            })
            .collect();
        EcpScheme {
            params,
            slots,
            ground,
            owned_trees,
            owned_pairs,
            solved: Vec::with_capacity(model.collision_pairs.len()),
            pairs,
            last_sweeps: 0,
            step_iterations: 0,
            order: (0..n_slots).collect(),
            load: vec![0.0; n_slots],
            links,
            link_pairs,
        }
    }

    /// Fills `solved` with the last step's contacts in contact (the ECP carried, as a material
    /// point of the pushed body, to its start-of-step pose).
    fn report(&mut self, model: &Model) {
        let carry = |s: &Slot, point: &Vec3| carry_to_start(&s.start, &s.end, point);
        let key = contact_key;
        for slot in &self.slots {
            let (c, Some((pl, g)), Some((pair, mu))) = (&slot.last, self.ground, slot.ground_pair) else { continue };
            if c.in_contact {
                self.solved.push(SolvedContact {
                    pair,
                    contact: Contact {
                        key: key(pair),
                        body_a: None,
                        body_b: Some(slot.body),
                        geom_a: g,
                        geom_b: slot.geom,
                        position: carry(slot, &c.ecp_m),
                        normal: pl.normal,
                        tangent1: pl.tangent1,
                        tangent2: pl.tangent2,
                        distance: 0.0,
                        friction: mu,
                    },
                    impulse: [c.normal_impulse, c.tangent_impulse[0], c.tangent_impulse[1], c.torsion_impulse],
                });
            }
        }
        for p in self.pairs.iter().filter(|p| p.active && p.last.in_contact) {
            let (sa, sb) = (&self.slots[p.a], &self.slots[p.b]);
            let [n, t, o] = p.last.frame;
            self.solved.push(SolvedContact {
                pair: p.pair,
                contact: Contact {
                    key: key(p.pair),
                    body_a: Some(sb.body),
                    body_b: Some(sa.body),
                    geom_a: sb.geom,
                    geom_b: sa.geom,
                    position: carry(sa, &p.last.ecp_m),
                    normal: n,
                    tangent1: t,
                    tangent2: o,
                    distance: 0.0,
                    friction: model.collision_pairs[p.pair].friction,
                },
                impulse: p.last.impulse,
            });
        }
        if let Some((pl, g)) = self.ground {
            self.links.report(&pl, g, &mut self.solved);
        }
        for lp in &self.link_pairs {
            let s = &self.slots[lp.object];
            if let Some(c) = lp.report(model, (s.body, s.geom, &s.start, &s.end)) {
                self.solved.push(c);
            }
        }
    }

    /// The last step's contacts between a robot link and a free object: `(link body index,
    /// object body index, link is side A, contact)`; side B pushes side A with the contact's
    /// impulse, the normal points from B into A (ECP at the end of the step on A).
    pub fn last_link_object_contacts(&self) -> impl Iterator<Item = (usize, usize, bool, &pair::PairContact)> {
        self.link_pairs.iter().filter(|p| p.active).map(|p| (p.link, self.slots[p.object].body, p.link_is_a, &p.last))
    }

    /// Gauss–Seidel sweeps over the contacts in the last step (1 when no two bodies touch).
    pub fn last_sweeps(&self) -> u32 {
        self.last_sweeps
    }

    /// Gauss–Seidel sweeps over the robot links' contacts and joint rows in the last step (0
    /// without robots touching the ground).
    pub fn last_link_sweeps(&self) -> u32 {
        self.links.last_sweeps
    }

    /// The last step's contact of each robot-link geometry that can touch the ground: `(link
    /// body index, geometry index, contact)` (ECP at the end of the step on the first-order
    /// twist pose; impulses on the link).
    pub fn last_link_contacts(&self) -> impl Iterator<Item = (usize, usize, &EcpContact)> {
        self.links.last_contacts()
    }

    /// The last step's contacts between two free objects: `(body A, body B, contact)` (B pushes A
    /// with the contact's impulse).
    pub fn last_pair_contacts(&self) -> impl Iterator<Item = (usize, usize, &pair::PairContact)> {
        self.pairs.iter().filter(|p| p.active).map(|p| (self.slots[p.a].body, self.slots[p.b].body, &p.last))
    }

    /// The impulses of slot `i`'s contacts other than its ground contact (when `skip_ground`)
    /// and the body pair `skip_pair`: linear (N·s) and angular about its current end-of-step
    /// centre of mass (N·m·s).
    fn frozen_impulse(&self, i: usize, skip_ground: bool, skip_pair: Option<usize>, skip_link_pair: Option<usize>) -> (Vec3, Vec3) {
        let com = self.slots[i].end.com_m;
        let (mut lin, mut ang) = (Vec3::zeros(), Vec3::zeros());
        if !skip_ground {
            let e = &self.slots[i].ground;
            lin += e.force;
            ang += (e.point_a - com).cross(&e.force) + e.twist;
        }
        for (k, p) in self.pairs.iter().enumerate() {
            if !p.active || Some(k) == skip_pair {
                continue;
            }
            let e = &p.exchange;
            if p.a == i {
                lin += e.force;
                ang += (e.point_a - com).cross(&e.force) + e.twist;
            } else if p.b == i {
                lin -= e.force;
                ang -= (e.point_b - com).cross(&e.force) + e.twist;
            }
        }
        for (k, p) in self.link_pairs.iter().enumerate() {
            if !p.active || p.object != i || Some(k) == skip_link_pair {
                continue;
            }
            let e = &p.exchange;
            if p.link_is_a {
                lin -= e.force;
                ang -= (e.point_b - com).cross(&e.force) + e.twist;
            } else {
                lin += e.force;
                ang += (e.point_a - com).cross(&e.force) + e.twist;
            }
        }
        (lin, ang)
    }

    /// Cold start of the sweeps: the contacts without impulses from the previous step get the
    /// static load they would carry (each body's weight plus what rests on it, shared equally
    /// among the contacts below it, highest bodies first), so that a stack starts near its
    /// solution instead of propagating the weight one level per sweep.
    fn estimate_cold_loads(&mut self, gravity: &Vec3, h: f64) {
        let Some(up) = (-gravity).try_normalize(1e-12) else { return };
        let slots = &self.slots;
        self.order.sort_unstable_by(|&i, &j| up.dot(&slots[j].start.com_m).total_cmp(&up.dot(&slots[i].start.com_m)));
        for (i, s) in self.slots.iter().enumerate() {
            self.load[i] = s.ecp_body.mass_kg * gravity.norm() * h;
        }
        for k in 0..self.order.len() {
            let i = self.order[k];
            let slot = self.slots[i].clone();
            let on_ground = match (self.ground, slot.ground_pair) {
                (Some((pl, _)), Some(_)) => {
                    let geom = Pose::from_parts(slot.start.com_m.into(), slot.start.rotation) * slot.ecp_body.geom_in_body;
                    let gap = slot.ecp_body.shape.plane_gap(&geom.translation.vector, &geom.rotation.to_rotation_matrix().into_inner(), &pl.normal, pl.offset_m);
                    gap <= 0.01 * slot.ecp_body.shape.size_m()
                }
                _ => false,
            };
            let below = |p: &BodyPair, slots: &[Slot]| p.active && (p.a == i || p.b == i) && {
                let other = if p.a == i { p.b } else { p.a };
                up.dot(&slots[other].start.com_m) < up.dot(&slot.start.com_m)
            };
            let supports = self.pairs.iter().filter(|p| below(p, &self.slots)).count() + on_ground as usize;
            if supports == 0 {
                continue;
            }
            let share = self.load[i] / supports as f64;
            let com = slot.start.com_m;
            if on_ground && self.slots[i].ground.force == Vec3::zeros() {
                self.slots[i].ground = Exchange { force: up * share, twist: Vec3::zeros(), point_a: com, point_b: com };
            }
            for p in 0..self.pairs.len() {
                if !below(&self.pairs[p], &self.slots) {
                    continue;
                }
                let (a, b) = (self.pairs[p].a, self.pairs[p].b);
                let other = if a == i { b } else { a };
                self.load[other] += share;
                if self.pairs[p].exchange.force == Vec3::zeros() {
                    // force on A: up when A is the upper body
                    let force = if a == i { up * share } else { -up * share };
                    self.pairs[p].exchange = Exchange { force, twist: Vec3::zeros(), point_a: com, point_b: com };
                }
            }
        }
    }

    /// Solves slot `i` against the ground with its other contacts frozen; returns the change of
    /// its ground impulse (relative to its weight impulse).
    fn solve_ground(&mut self, i: usize, gravity: &Vec3, h: f64) -> f64 {
        let extra = self.frozen_impulse(i, true, None, None);
        let plane = self.ground.zip(self.slots[i].ground_pair).map(|((pl, _), (_, mu))| EcpPlane { friction: mu, ..pl });
        let slot = &mut self.slots[i];
        slot.stepper.params.clone_from(&self.params);
        let mut end = slot.start;
        let c = slot.stepper.step(&slot.ecp_body, &mut end, plane.as_ref(), gravity, h, &extra.0, &extra.1);
        slot.end = end;
        slot.last = c;
        self.step_iterations += c.solve.iterations;
        let exchange = match (c.in_contact, plane) {
            (true, Some(pl)) => Exchange {
                force: pl.normal * c.normal_impulse + pl.tangent1 * c.tangent_impulse[0] + pl.tangent2 * c.tangent_impulse[1],
                twist: pl.normal * c.torsion_impulse,
                point_a: c.ecp_m,
                point_b: c.ecp_m,
            },
            _ => Exchange::default(),
        };
        let change = exchange.change(&slot.ground, slot.ecp_body.mass_kg * gravity.norm().max(1.0) * h);
        slot.ground = exchange;
        change
    }

    /// Solves body pair `k` with both bodies' other contacts frozen; returns the change of its
    /// impulse (relative to the lighter body's weight impulse).
    fn solve_pair(&mut self, k: usize, gravity: &Vec3, h: f64) -> f64 {
        let (a, b) = (self.pairs[k].a, self.pairs[k].b);
        let (extra_a, extra_b) = (self.frozen_impulse(a, false, Some(k), None), self.frozen_impulse(b, false, Some(k), None));
        let (sa, sb) = (self.slots[a].start, self.slots[b].start);
        let (ba, bb) = (self.slots[a].ecp_body, self.slots[b].ecp_body);
        let p = &mut self.pairs[k];
        let c = p.stepper.solve(&self.params, (&ba, &sa, &extra_a), (&bb, &sb, &extra_b), gravity, h, p.friction, &p.n0);
        p.last = c;
        self.step_iterations += c.solve.iterations;
        let [n, t, o] = c.frame;
        let [pn, pt, po, pr] = c.impulse;
        let exchange = if c.in_contact {
            Exchange { force: n * pn + t * pt + o * po, twist: n * pr, point_a: c.ecp_m, point_b: c.point_b_m }
        } else {
            Exchange::default()
        };
        let change = exchange.change(&p.exchange, ba.mass_kg.min(bb.mass_kg) * gravity.norm().max(1.0) * h);
        p.exchange = exchange;
        let [va, wa, vb, wb] = c.velocities;
        for (slot, v, w, start) in [(a, va, wa, sa), (b, vb, wb, sb)] {
            let (com, rotation) = EcpStepper::end_pose(&start, h, &v, &w);
            self.slots[slot].end = EcpBodyState { com_m: com, rotation, velocity: v, angular_velocity: w };
        }
        change
    }

    /// Solves link–object pair `k` with the object's other contacts frozen and the robot's other
    /// impulses in `velocity`; returns the change of its impulse (relative to the lighter side's
    /// weight impulse).
    fn solve_link_pair(&mut self, k: usize, velocity: &mut [f64], gravity: &Vec3, h: f64) -> f64 {
        let i = self.link_pairs[k].object;
        let extra = self.frozen_impulse(i, false, None, Some(k));
        let (so, bo) = (self.slots[i].start, self.slots[i].ecp_body);
        let (end, iterations, change) = self.link_pairs[k].solve(&self.params, velocity, (&bo, &so, &extra), gravity, h);
        self.slots[i].end = end;
        self.step_iterations += iterations;
        change
    }

    /// The contacts the last step solved, as the engine reports them: `(collision pair index,
    /// contact, [p_n, p_t, p_o, p_r])` with the ECP carried to the start-of-step pose.
    pub fn reported_contacts(&self) -> impl Iterator<Item = (usize, &Contact, [f64; 4])> {
        self.solved.iter().map(|c| (c.pair, &c.contact, c.impulse))
    }

    /// The last step's contact of each free object with the ground: `(body index, contact)`.
    pub fn last_contacts(&self) -> impl Iterator<Item = (usize, &EcpContact)> {
        self.slots.iter().map(|s| (s.body, &s.last))
    }

    /// Index and friction coefficient of the ground pair of `geom` (`None` when they cannot touch).
    fn ground_pair(model: &Model, ground: usize, geom: usize) -> Option<(usize, f64)> {
        model.collision_pairs.iter().position(|p| p.with_ground && p.geom_a == ground && p.geom_b == geom).map(|i| (i, model.collision_pairs[i].friction))
    }
}

impl WholeStepScheme for EcpScheme {
    /// One step: every body's contacts (with the ground and with other bodies) solved by
    /// Gauss–Seidel sweeps over the contacts, each contact's problem (body–ground, 24 unknowns;
    /// body–body, 35) solved in full with the other contacts of its bodies frozen at their
    /// latest impulses, until no impulse changes (docs/ecp.md, "Bodies touching each other").
    fn advance(&mut self, input: &SchemeInput, state: &mut State, output: &mut SchemeOutput) -> SolveStats {
        let model = input.model;
        let h = model.timestep_s;
        let gravity = model.gravity;
        output.velocity.copy_from_slice(input.free_velocity.as_slice());
        let rows = ContactRows::POINT_TORSION;
        output.impulse[..rows.start(input.contacts.len())].fill(0.0);
        self.solved.clear();
        for slot in &mut self.slots {
            let (qi, vi) = (slot.q_index, slot.v_index);
            let q = &state.q[qi..qi + 7];
            let rot = UnitQuaternion::new_normalize(Quaternion::new(q[6], q[3], q[4], q[5]));
            let v = &state.v[vi..vi + 6];
            slot.start = EcpBodyState {
                com_m: Vec3::new(q[0], q[1], q[2]),
                rotation: rot,
                velocity: rot * Vec3::new(v[0], v[1], v[2]),
                angular_velocity: rot * Vec3::new(v[3], v[4], v[5]),
            };
            slot.end = slot.start;
        }
        // which body pairs can touch by the end of the step: close at their free end poses
        // along the expected normal (the collision normal at the start, else centre to centre)
        let mut any_pair = false;
        for k in 0..self.pairs.len() {
            let (a, b) = (self.pairs[k].a, self.pairs[k].b);
            let (sa, sb) = (self.slots[a].start, self.slots[b].start);
            let mut n0 = Vec3::zeros();
            for c in input.contacts.iter().filter(|c| c.key.pair as usize == self.pairs[k].pair) {
                n0 += c.normal;
            }
            if n0.norm() < 1e-9 {
                n0 = sa.com_m - sb.com_m;
            }
            let n0 = n0.try_normalize(1e-12).unwrap_or_else(Vec3::z);
            let (ba, bb) = (&self.slots[a].ecp_body, &self.slots[b].ecp_body);
            let free = |body: &EcpBody, s: &EcpBodyState| mncp::moving_body(body, s, &(Vec3::zeros(), Vec3::zeros()), &gravity, h);
            let ((_, va, wa), (_, vb, wb)) = (free(ba, &sa), free(bb, &sb));
            let margin = 0.01 * (ba.shape.size_m() + bb.shape.size_m()) + h * (sa.velocity - sb.velocity).norm();
            let reach = |body: &EcpBody| body.shape.bounding_radius_m() + body.geom_in_body.translation.vector.norm();
            let near = (sa.com_m - sb.com_m).norm() <= reach(ba) + reach(bb) + margin
                && pair::gap_along(ba, &sa, (&va, &wa), bb, &sb, (&vb, &wb), h, &n0) <= margin;
            let p = &mut self.pairs[k];
            if !near {
                p.stepper.reset();
                p.exchange = Exchange::default();
                p.last = pair::PairContact::default();
            }
            p.active = near;
            p.n0 = n0;
            any_pair |= near;
        }
        // robots whose links can touch objects: their link contacts, the objects' contacts and
        // their joint rows in one set of sweeps (docs/ecp.md, "Robot links against objects")
        let joined = !self.link_pairs.is_empty();
        // without a ground plane the robots have no ground slots, only joint rows: any plane
        let plane = Some(self.ground.map_or_else(|| EcpPlane::new(Vec3::z(), 0.0, 0.0), |(pl, _)| pl));
        let mut any_link_pair = false;
        if joined {
            if let (false, Some(pl)) = (self.links.is_empty(), plane) {
                self.links.prepare(input, state, output.velocity, &pl);
            }
            for k in 0..self.link_pairs.len() {
                let i = self.link_pairs[k].object;
                let (so, bo) = (self.slots[i].start, self.slots[i].ecp_body);
                let (_, vo, wo) = mncp::moving_body(&bo, &so, &(Vec3::zeros(), Vec3::zeros()), &gravity, h);
                let mut n0 = Vec3::zeros();
                for c in input.contacts.iter().filter(|c| c.key.pair as usize == self.link_pairs[k].pair) {
                    n0 += c.normal;
                }
                self.link_pairs[k].prepare(input, output.velocity, (&bo, &so, (vo, wo)), n0, h);
                any_link_pair |= self.link_pairs[k].active;
            }
        }
        if any_pair || any_link_pair {
            self.estimate_cold_loads(&gravity, h);
        }
        // Gauss–Seidel sweeps, alternating direction; the previous step's impulses start them
        let (n_slots, n_items) = (self.slots.len(), self.slots.len() + self.pairs.len());
        let coupled = any_pair || joined;
        let sweeps = if coupled { self.params.max_sweeps } else { 1 };
        let mut stats = SolveStats { iterations: 0, residual: 0.0, converged: true };
        let mut sweeps_done = 0;
        let mut link_iterations = 0;
        self.step_iterations = 0;
        for sweep in 0..sweeps {
            let mut change: f64 = 0.0;
            for k in 0..n_items {
                let item = if sweep % 2 == 0 { k } else { n_items - 1 - k };
                if item < n_slots {
                    change = change.max(self.solve_ground(item, &gravity, h));
                } else if self.pairs[item - n_slots].active {
                    change = change.max(self.solve_pair(item - n_slots, &gravity, h));
                }
            }
            if joined {
                for k in 0..self.link_pairs.len() {
                    let k = if sweep % 2 == 0 { k } else { self.link_pairs.len() - 1 - k };
                    if self.link_pairs[k].active {
                        change = change.max(self.solve_link_pair(k, output.velocity, &gravity, h));
                    }
                }
                if let (false, Some(pl)) = (self.links.is_empty(), plane) {
                    let (iterations, moved) = self.links.sweep(&self.params, output.velocity, &pl, &gravity, h, sweep);
                    link_iterations += iterations;
                    change = change.max(moved);
                }
            }
            sweeps_done += 1;
            if change <= self.params.sweep_tolerance {
                break;
            }
            stats.converged &= sweep + 1 < sweeps || !coupled;
        }
        self.last_sweeps = sweeps_done;
        stats.iterations = self.step_iterations + link_iterations;
        for slot in &self.slots {
            stats.residual = stats.residual.max(slot.last.solve.residual);
            stats.converged &= slot.last.solve.converged;
        }
        for p in self.pairs.iter().filter(|p| p.active) {
            stats.residual = stats.residual.max(p.last.solve.residual);
            stats.converged &= p.last.solve.converged;
        }
        for p in self.link_pairs.iter().filter(|p| p.active) {
            stats.residual = stats.residual.max(p.last.solve.residual);
            stats.converged &= p.last.solve.converged;
        }
        // positions and body-frame velocities at the end pose
        for slot in &self.slots {
            let (qi, vi) = (slot.q_index, slot.v_index);
            let (start, end) = (slot.start, slot.end);
            let (com, r) = EcpStepper::end_pose(&start, h, &end.velocity, &end.angular_velocity);
            let c = r.quaternion();
            state.q[qi..qi + 7].copy_from_slice(&[com.x, com.y, com.z, c.i, c.j, c.k, c.w]);
            let (vb, wb) = (r.inverse() * end.velocity, r.inverse() * end.angular_velocity);
            output.velocity[vi..vi + 6].copy_from_slice(&[vb.x, vb.y, vb.z, wb.x, wb.y, wb.z]);
        }
        // robots: their links' ground contacts and joint rows (v⁺ of their trees in the output)
        if let (false, Some(pl)) = (self.links.is_empty(), plane) {
            if joined {
                let settled = stats.converged || sweeps_done < sweeps;
                self.links.finish(sweeps_done, settled, &mut stats);
            } else {
                let link_stats = self.links.advance(&self.params, input, state, output.velocity, &pl);
                stats.iterations += link_stats.iterations;
                stats.residual = stats.residual.max(link_stats.residual);
                stats.converged &= link_stats.converged;
            }
        }
        self.report(model);
        // trees the scheme does not move as free objects: robots (v⁺ from their link contacts and
        // joint rows above, or v⁺ = v* for robots that cannot touch the ground) and, only when a
        // scene outside the coverage was built without `check_model`, anything else (free
        // motion); positions with the engine's map
        for (t, tree) in model.trees.iter().enumerate() {
            if !self.owned_trees[t] {
                for b in tree.body_start..tree.body_end {
                    crate::model::tree::integrate_joint_position(&model.bodies[b].joint, &mut state.q, output.velocity, h);
                }
            }
        }
        output.positions_integrated = true;
        stats
    }

    /// Replaces the collision contacts of the pairs the scheme owns (a box on its face: four
    /// corners) by one contact per solved patch at its ECP, with the normal impulse, the friction
    /// impulses and the friction moment on its four rows.
    fn rewrite_contacts(&mut self, contacts: &mut Vec<Contact>, impulse: &mut [f64], num_joint_rows: usize) {
        let rows = ContactRows::POINT_TORSION;
        let nr = rows.len();
        let joint_start = rows.start(contacts.len());
        // keep the contacts of other pairs, with their rows
        let mut kept = 0;
        for i in 0..contacts.len() {
            if self.owned_pairs.get(contacts[i].key.pair as usize).copied().unwrap_or(false) {
                continue;
            }
            contacts[kept] = contacts[i];
            impulse.copy_within(rows.start(i)..rows.start(i) + nr, rows.start(kept));
            kept += 1;
        }
        contacts.truncate(kept);
        let added = self.solved.len().min(contacts.capacity() - kept);
        impulse.copy_within(joint_start..joint_start + num_joint_rows, rows.start(kept + added));
        for c in &self.solved[..added] {
            let r = rows.start(contacts.len());
            impulse[r..r + nr].copy_from_slice(&c.impulse);
            contacts.push(c.contact);
        }
    }
}
