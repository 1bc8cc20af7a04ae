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
//! robot are coupled by Gauss–Seidel sweeps over its generalised velocity (`links`, `joint_rows`, docs/ecp.md
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

mod block;
mod block_linear;
mod dual;
mod history;
mod joint_law;
mod joint_rows;
mod link_object;
mod links;
mod loops;
pub mod mncp;
mod scheme;
mod shape;
mod tree_range;
pub mod pair;
mod stepper;
#[cfg(test)]
mod tests;

pub use dual::Dual;
pub use mncp::{BodyPlaneProblem, GapMode, MovingBody, SolveOutcome, NZ};
pub use scheme::EcpScheme;
pub use shape::ConvexShape;
pub use stepper::{convex_shape, count_active, EcpBody, EcpBodyState, EcpContact, EcpPlane, EcpStepper, PENETRATION_TOLERANCE_M};
// the scheme's helpers the method's other files reach as `super::…`
use scheme::{carry_to_start, contact_key, rest_state, Exchange, SolvedContact};

use super::method::{check_params, contact_method, tolerance_and_iterations, Capabilities, MethodParams, ParamError};
use super::ContactRows;
use super::{FrictionModel, SceneCoverage};
use crate::model::Model;


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
    /// Most Newton iterations of one step, all contacts, sweeps and initial guesses together:
    /// past it the step ends unconverged. It bounds the time of a step whose contacts converge
    /// from no guess (every sweep then tries every guess of every contact): the shipped scenes
    /// need at most about 2 000.
    pub max_step_iterations: u32,
    /// Every this many Gauss–Seidel sweeps without settling, the coupled contacts (objects
    /// touching each other or robot links, and those links) are solved as one block by
    /// Newton's method and the sweeps go on from its solution; 0: sweeps only (docs/ecp.md,
    /// "Closed loops: one block").
    pub block_after_sweeps: u32,
    /// A contact joins the block only when its impulse exceeds this fraction of its lighter
    /// side's weight impulse m g h (dimensionless, in [0, 1)); 0: every contact that passes an
    /// impulse. A contact that barely touches brings friction rows that scale as 1/p_n and
    /// would make the block's Newton matrix numerically singular (docs/ecp.md, "Closed loops:
    /// one block").
    pub block_min_impulse: f64,
    /// Tangential compliance of robot links' contacts with objects, c (m/s per friction impulse
    /// equal to the lighter side's weight impulse m g h; 0: rigid, as in the paper). While such a
    /// contact sticks, a change of its friction by the lighter side's weight moves its two sides
    /// apart tangentially by `c h` (30 µm at the default and a 1 ms step), and by nothing while the
    /// friction holds constant: an elastic tangential stiffness. It makes the split of friction
    /// inside a closed loop (a hand pressing a box with two fingertips, a cube between two pads),
    /// which rigid contacts leave undetermined, a definite one (docs/ecp.md, "A tangential
    /// compliance for robot links").
    pub link_tangential_compliance: f64,
}

impl Default for EcpParams {
    fn default() -> Self {
        EcpParams { max_iterations: 60, tolerance: 1e-10, gap_mode: GapMode::SignedGap, e_t: 1.0, e_o: 1.0, e_r_m: 1.0, max_sweeps: 200, sweep_tolerance: 1e-9, max_step_iterations: 50_000, block_after_sweeps: 3, block_min_impulse: 1e-7, link_tangential_compliance: 3e-2 }
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
        delassus: true,
        delassus_on_demand: false,
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
            (self.max_step_iterations >= self.max_iterations, "max_step_iterations", "must be ≥ max_iterations"),
            ((0.0..1.0).contains(&self.block_min_impulse), "block_min_impulse", "must be in [0, 1) (a fraction of the weight impulse)"),
            (self.link_tangential_compliance >= 0.0 && self.link_tangential_compliance <= 1.0, "link_tangential_compliance", "must be in [0, 1] (m/s per weight impulse)"),
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
