//! The seam every contact method plugs into.
//!
//! A *contact method* is a params type (what a scene writes under `solver:`) plus the runtime
//! object it builds for a model. It enters the step at the constraint stage (see
//! [`crate::step`]) in one of two ways, its [`MethodKind`]:
//!
//! - **Impulse solver** ([`ImpulseSolver`]): the step linearises every constraint at the velocity
//!   level into a [`ContactProblem`] (`u = G λ + u_free`), the method returns the impulses λ, and
//!   the step computes `v⁺ = v* + M̃⁻¹ Jᵀ λ` and integrates the positions. PGS, per-contact
//!   bisection and V-FPI are impulse solvers. A solver that also handles deformable bodies
//!   exposes the nodalized interface [`NodalSolver`], which the coupled rigid–FEM solve
//!   ([`crate::coupled`]) drives.
//! - **Whole-step scheme** ([`WholeStepScheme`]): the method owns the rest of the step. It
//!   receives everything the earlier stages computed ([`SchemeInput`]: kinematics, the mass
//!   matrix and its factor, bias and applied forces, the unconstrained velocity, the collision
//!   output, FEM data through the model and state) and writes the next velocities (and, if it
//!   integrates them itself, positions) plus the contact impulses in the contact-row layout, so
//!   that sensors, contact wrenches, markers and bags read a whole-step scheme exactly as they
//!   read an impulse solver. Schemes that fit it:
//!   - non-smooth Newton (implicit integration of positions and velocities, contact and friction
//!     as complementarity functions solved with the mass matrix, Jacobians and FEM data);
//!   - L-stable constraint solving (constraints stabilised at the position level with
//!     regularisation derived from stiffness and damping; needs the contact gaps, Jacobians and
//!     the mass matrix factor);
//!   - equivalent-contact-point line/surface contact (contact points are unknowns of the solve:
//!     needs the collision geometry of each pair, which it reads from the model and the body
//!     poses, and writes one equivalent point per patch into the contact rows).
//!
//! Rows per contact come from a table ([`ContactRows`]) owned here: 3 today (normal and two
//! tangents), 4 with torsional friction, more for patch contact.
//!
//! Adding a method is one new file implementing [`MethodParams`] and [`ContactMethod`] plus one
//! line in the registry (`registry.rs`); see the module docs of [`crate::contact`].

use super::{ContactProblem, FrictionModel, NodalSystem, SolveStats};
use crate::collision::Contact;
use crate::math::BranchMatrix;
use crate::model::Model;
use crate::state::{Commands, State};
use crate::math::{Pose, Vec6};
use nalgebra::{DMatrix, DVector};

/// One scalar row of a contact, in the contact frame (normal `n`, tangents `t1`, `t2` of
/// [`Contact`]; the impulse acts on body B, its opposite on A).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContactRow {
    /// Along the contact normal (N·s, ≥ 0: push only).
    Normal,
    /// Along the first tangent (N·s).
    Tangent1,
    /// Along the second tangent (N·s).
    Tangent2,
    /// Torsional friction about the normal (N·m·s).
    Torsion,
}

/// The most rows a contact can have in any layout.
pub const MAX_ROWS_PER_CONTACT: usize = 4;

/// The rows of one contact, in order. Row `r` of contact `c` is scalar row
/// `c * len() + r` of the problem; joint rows follow all contact rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactRows {
    rows: &'static [ContactRow],
}

impl ContactRows {
    /// Point contact with Coulomb friction: normal, tangent 1, tangent 2.
    pub const POINT: ContactRows = ContactRows { rows: &[ContactRow::Normal, ContactRow::Tangent1, ContactRow::Tangent2] };
    /// Point contact with torsional friction: normal, tangent 1, tangent 2, torsion.
    pub const POINT_TORSION: ContactRows =
        ContactRows { rows: &[ContactRow::Normal, ContactRow::Tangent1, ContactRow::Tangent2, ContactRow::Torsion] };

    /// Rows per contact.
    #[inline]
    pub const fn len(&self) -> usize {
        self.rows.len()
    }
    /// `false`: a contact has at least its normal row.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// The rows, in order.
    #[inline]
    pub fn rows(&self) -> &'static [ContactRow] {
        self.rows
    }
    /// First scalar row of contact `c`.
    #[inline]
    pub const fn start(&self, c: usize) -> usize {
        c * self.rows.len()
    }
}

/// How a method enters the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodKind {
    /// Impulses on the step's [`ContactProblem`].
    Impulse,
    /// Owns the step after the dynamics terms ([`WholeStepScheme`]).
    WholeStep,
    /// A [`WholeStepScheme`] that also reads the step's velocity-level constraint rows
    /// ([`SchemeInput::rows`]: the contact and joint rows, J, Z = L⁻ᵀ Jᵀ and the Delassus matrix
    /// J M̃⁻¹ Jᵀ, built exactly as for impulse solvers, with the warm start in
    /// [`SchemeOutput::impulse`]). Compliant-constraint schemes that solve in impulse space use it.
    WholeStepOnRows,
}

/// What a method can do; the scene loader, the CLI and the node refuse a scene the method
/// cannot handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Impulse solver or whole-step scheme.
    pub kind: MethodKind,
    /// Handles scenes with deformable (FEM) bodies.
    pub deformables: bool,
    /// The rows of each contact in the problem and in the impulses it writes.
    pub contact_rows: ContactRows,
    /// The friction law its solution satisfies when a contact slides.
    pub friction: FrictionModel,
    /// Reads M̃ as a dense matrix (`Workspace::mass_tilde`; filled only for such methods and in
    /// scenes with deformables).
    pub dense_mass: bool,
    /// The rigid scenes it can simulate (scenes outside are refused at load).
    pub coverage: SceneCoverage,
}

impl Capabilities {
    /// A whole-step scheme on the step's rows ([`MethodKind::WholeStepOnRows`]) with point
    /// contacts and Coulomb friction, for every rigid scene and no deformables.
    pub const WHOLE_STEP_ON_POINT_ROWS: Capabilities = Capabilities {
        kind: MethodKind::WholeStepOnRows,
        deformables: false,
        contact_rows: ContactRows::POINT,
        friction: FrictionModel::Coulomb,
        dense_mass: false,
        coverage: SceneCoverage::AllRigid,
    };
}

/// The rigid scenes a method can simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SceneCoverage {
    /// Every rigid scene: robots, objects, every collision pair.
    AllRigid,
    /// Free objects shaped as boxes, spheres or cylinders, in contact with the ground and with
    /// each other and with robot links (and static objects nothing can touch): no contact of a
    /// free object with a static object other than the ground. Which robot links are covered is
    /// the method's own rule ([`MethodParams::outside_coverage`]).
    ConvexObjects,
}

impl SceneCoverage {
    /// Why `model` is outside this coverage (`None` when it is inside).
    pub fn unsupported(&self, model: &Model) -> Option<String> {
        match self {
            SceneCoverage::AllRigid => None,
            SceneCoverage::ConvexObjects => {
                for o in model.objects.iter().filter(|o| !o.fixed) {
                    let mut geoms = model.geoms.iter().filter(|g| g.body == Some(o.body));
                    let shape_ok = geoms.next().is_some_and(|g| crate::contact::ecp::convex_shape(&g.shape).is_some()) && geoms.next().is_none();
                    if !shape_ok {
                        return Some(format!("object '{}' is not a single box, sphere or cylinder", o.name));
                    }
                }
                let moving = |g: usize| model.geoms[g].body.is_some_and(|b| model.objects.iter().any(|o| o.body == b && !o.fixed));
                let robot_link = |g: usize| model.geoms[g].body.is_some_and(|b| matches!(model.trees[model.bodies[b].tree].kind, crate::model::TreeKind::Robot(_)));
                let covered = |p: &crate::model::CollisionPair| (moving(p.geom_a) || robot_link(p.geom_a)) && (moving(p.geom_b) || robot_link(p.geom_b));
                if let Some(p) = model.collision_pairs.iter().find(|p| !p.with_ground && !covered(p)) {
                    return Some(format!(
                        "'{}' and '{}' can touch and one of them does not move (contact is covered between two free objects and with the ground plane only)",
                        model.geoms[p.geom_a].name, model.geoms[p.geom_b].name
                    ));
                }
                None
            }
        }
    }
}

/// A method's main stopping tolerance, with its unit (methods measure convergence differently:
/// an impulse change in N·s, a velocity change in m/s, a residual norm).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// The value.
    pub value: f64,
    /// Its unit, e.g. `"N·s"` or `"m/s"`.
    pub unit: &'static str,
    /// The params field it is read from (e.g. `"tolerance_impulse"`).
    pub field: &'static str,
}

/// A parameter outside its valid range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter, as written in the scene (`solver.<field>`).
    pub field: String,
    /// What it must satisfy, e.g. "must be in (0, 2)".
    pub requirement: String,
}

/// Checks a list of `(condition, field, requirement)`; the first failed one is the error.
pub fn check_params(checks: &[(bool, &str, &str)]) -> Result<(), ParamError> {
    match checks.iter().find(|(ok, _, _)| !ok) {
        Some((_, field, requirement)) => Err(ParamError { field: format!("solver.{field}"), requirement: requirement.to_string() }),
        None => Ok(()),
    }
}

/// Inside `impl MethodParams for P`: the tolerance and iteration-cap accessors of a params type
/// whose tolerance field is `$tol` (in `$unit`) and whose cap is `$iters`.
macro_rules! tolerance_and_iterations {
    ($tol:ident, $unit:literal, $iters:ident) => {
        fn tolerance(&self) -> $crate::contact::Tolerance {
            $crate::contact::Tolerance { value: self.$tol, unit: $unit, field: stringify!($tol) }
        }
        fn set_tolerance(&mut self, value: f64) {
            self.$tol = value;
        }
        fn max_iterations(&self) -> u32 {
            self.$iters
        }
        fn set_max_iterations(&mut self, n: u32) {
            self.$iters = n;
        }
    };
}
pub(crate) use tolerance_and_iterations;

/// `impl ContactMethod` for a runtime type holding its params in the field `params`.
macro_rules! contact_method {
    ($runtime:ty, $params:ty, $stage:ident) => {
        impl $crate::contact::ContactMethod for $runtime {
            type Params = $params;
            fn params(&self) -> &$params {
                &self.params
            }
            fn params_mut(&mut self) -> &mut $params {
                &mut self.params
            }
            fn stage(&mut self) -> $crate::contact::ConstraintStage<'_> {
                $crate::contact::ConstraintStage::$stage(self)
            }
        }
    };
}
pub(crate) use contact_method;

/// A method's parameters: what the scene writes under `solver: {kind: NAME, ...}`.
pub trait MethodParams: Clone + Default + std::fmt::Debug + PartialEq + serde::Serialize + serde::de::DeserializeOwned {
    /// The runtime object (scratch memory sized for a model).
    type Runtime: ContactMethod<Params = Self>;
    /// The `kind` name in scenes, on the CLI and in the node's `solver` parameter.
    const NAME: &'static str;
    /// One line for help texts: what the method is, with the paper.
    const SUMMARY: &'static str;
    /// What it can do.
    const CAPABILITIES: Capabilities;
    /// Checks every parameter's range.
    fn validate(&self) -> Result<(), ParamError>;
    /// The main stopping tolerance, with its unit.
    fn tolerance(&self) -> Tolerance;
    /// Sets the main stopping tolerance (in the unit of [`MethodParams::tolerance`]).
    fn set_tolerance(&mut self, value: f64);
    /// The iteration cap.
    fn max_iterations(&self) -> u32;
    /// Sets the iteration cap (≥ 1).
    fn set_max_iterations(&mut self, n: u32);
    /// Builds the runtime for `model`, allocating all its scratch (the step allocates nothing).
    fn build(&self, model: &Model) -> Self::Runtime;
    /// Why this method cannot simulate something in `model` beyond what [`Capabilities`] says
    /// (a material it does not have, ...): one sentence naming the element, without the scene
    /// file (the caller adds it). `None` (the default) when it can.
    fn unsupported_in(&self, _model: &Model) -> Option<String> {
        None
    }
    /// The method's own rule for which scenes it covers, beyond its
    /// [`SceneCoverage`] class (e.g. which robot links its contact problems can hold): one
    /// sentence naming the element. Refused like the coverage class (the message names the
    /// methods that can simulate the scene). `None` (the default) when it covers `model`.
    fn outside_coverage(&self, _model: &Model) -> Option<String> {
        None
    }
}

/// A built method: its parameters (changeable between steps) and its entry into the step.
pub trait ContactMethod {
    /// Its params type.
    type Params: MethodParams;
    /// The parameters in use.
    fn params(&self) -> &Self::Params;
    /// The parameters, to change between steps (e.g. the node's `solver_tolerance`).
    fn params_mut(&mut self) -> &mut Self::Params;
    /// Its entry into the constraint stage.
    fn stage(&mut self) -> ConstraintStage<'_>;
}

/// How a method enters the constraint stage this step.
pub enum ConstraintStage<'a> {
    /// Impulses on the step's [`ContactProblem`].
    Impulse(&'a mut dyn ImpulseSolver),
    /// The rest of the step.
    WholeStep(&'a mut dyn WholeStepScheme),
}

/// A velocity-level impulse solver.
pub trait ImpulseSolver {
    /// Solves `problem`. `impulse` holds the warm start on entry (length `problem.dim()`) and
    /// the solution on exit. Must not allocate.
    fn solve(&mut self, problem: &ContactProblem, impulse: &mut [f64]) -> SolveStats;
    /// The nodalized interface, for solvers that handle deformable bodies.
    fn nodal(&mut self) -> Option<&mut dyn NodalSolver> {
        None
    }
}

/// A solver of nodalized rigid–FEM systems ([`NodalSystem`]), driven by the coupled solve.
pub trait NodalSolver {
    /// Virtual-node damper gain k_v (N·s/m); the coupled solve builds its offsets with it.
    fn virtual_node_gain(&self) -> f64;
    /// The iterate `[fem | rigid | virtual]`, to write the initial guess of the FEM and rigid
    /// parts into before [`NodalSolver::solve_nodal`].
    fn initial_guess(&mut self) -> &mut [f64];
    /// Solves `sys` from the initial guess. Must not allocate.
    fn solve_nodal(&mut self, sys: &NodalSystem) -> SolveStats;
    /// The solution `[fem | rigid | virtual]`.
    fn solution(&self) -> &[f64];
    /// λ per constraint, in constraint order (3 or 1 entries each).
    fn impulses(&self) -> &[f64];
    /// The solver's worker pool (`None`: serial), which the coupled step also runs the element
    /// phase of the FEM assembly on ([`crate::fem::FemSystem::assemble_on`], bit-identical
    /// for any thread count).
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }
}

/// What the earlier stages computed, for a whole-step scheme. Frames: world unless stated;
/// velocities are the model's generalized velocities (free joints: body-frame twist).
pub struct SchemeInput<'a> {
    /// The model (geometry, joints, deformables, contact settings, time step).
    pub model: &'a Model,
    /// The commands of this step (servo targets were already folded into `mass_tilde` and
    /// `generalized_force`; schemes that integrate servos implicitly themselves read them here).
    pub commands: &'a Commands,
    /// World pose of each body.
    pub body_pose: &'a [Pose],
    /// Spatial velocity of each body (world frame, about the world origin).
    pub body_velocity: &'a [Vec6],
    /// World-frame motion subspace of each velocity coordinate.
    pub dof_axis: &'a [Vec6],
    /// The joint-space mass matrix M(q) (branch-sparse).
    pub mass_matrix: &'a BranchMatrix,
    /// M̃ = M + dt (D + K_d + dt K_p), dense column-major (implicit damping and PD servos).
    pub mass_tilde: &'a DMatrix<f64>,
    /// The factor M̃ = Lᵀ L (branch-sparse), to solve with M̃.
    pub mass_factor: &'a BranchMatrix,
    /// Coriolis, centrifugal and gravity terms h(q, v) (N or N·m per coordinate).
    pub bias: &'a DVector<f64>,
    /// The step's generalized force f = τ − h + τ_implicit (N or N·m).
    pub generalized_force: &'a DVector<f64>,
    /// The unconstrained end-of-step velocity v* = v + dt M̃⁻¹ f.
    pub free_velocity: &'a DVector<f64>,
    /// The contacts found by collision detection this step (frames, gaps, features).
    pub contacts: &'a [Contact],
    /// The velocity-level constraint rows, for methods of kind [`MethodKind::WholeStepOnRows`]
    /// (`None` for the others).
    pub rows: Option<ConstraintRows<'a>>,
}

/// The step's velocity-level constraint rows (contact rows in the method's [`ContactRows`]
/// layout, then joint rows), as built for impulse solvers: what a scheme of kind
/// [`MethodKind::WholeStepOnRows`] reads. `m = problem.dim()` rows, `nv` coordinates.
pub struct ConstraintRows<'a> {
    /// The impulse problem `u = G λ + u_free` (G the Delassus matrix J M̃⁻¹ Jᵀ; `u_free`
    /// includes the Baumgarte / speculative bias of the impulse solvers, see
    /// [`ContactProblem`]).
    pub problem: ContactProblem<'a>,
    /// J, row-major `m × nv` (m/s or rad/s per generalized velocity).
    pub jacobian: &'a [f64],
    /// `J v*` per row: the rows' velocities at the unconstrained velocity, without the impulse
    /// solvers' bias that `problem.free_velocity` carries (m/s or rad/s).
    pub free_row_velocity: &'a [f64],
    /// Z = L⁻ᵀ Jᵀ, row `i` is `L⁻ᵀ Jᵢᵀ` (`m × nv`), with M̃ = Lᵀ L: `v⁺ = v* + L⁻¹ Σ λᵢ zᵢ`
    /// ([`ConstraintRows::velocity_change`]).
    pub factor_jt: &'a [f64],
    /// The kinematic trees each row touches (`usize::MAX`: none).
    pub row_trees: &'a [(usize, usize)],
    /// What each joint row is (limit, friction, mimic), in row order after the contact rows.
    pub joint_rows: &'a [JointRow],
}

impl ConstraintRows<'_> {
    /// `dv ← M̃⁻¹ Jᵀ λ = L⁻¹ Σᵢ λᵢ zᵢ` (M̃ = Lᵀ L, `zᵢ = L⁻ᵀ Jᵢᵀ`): the velocity change that the
    /// impulses `impulse` (one per row) cause. `dv` (length nv) must be zero on entry.
    pub fn velocity_change(&self, model: &Model, mass_factor: &BranchMatrix, impulse: &[f64], dv: &mut [f64]) {
        sum_row_images(model, self.factor_jt, self.row_trees, &impulse[..self.problem.dim()], dv);
        for t in &model.trees {
            mass_factor.solve_l(t.v_start, t.v_end, dv);
        }
    }
}

/// `out += Σᵢ λᵢ zᵢ` over the trees each row touches (`row_trees`, `usize::MAX`: none): the
/// Z-space image of the impulses, with `factor_jt` holding `zᵢ = L⁻ᵀ Jᵢᵀ` row-major.
pub fn sum_row_images(model: &Model, factor_jt: &[f64], row_trees: &[(usize, usize)], impulse: &[f64], out: &mut [f64]) {
    let nv = model.nv;
    for (i, &l) in impulse.iter().enumerate() {
        if l == 0.0 {
            continue;
        }
        let z = &factor_jt[i * nv..(i + 1) * nv];
        let (t0, t1) = row_trees[i];
        for t in [t0, t1] {
            if t == usize::MAX {
                continue;
            }
            let tr = &model.trees[t];
            for k in tr.v_start..tr.v_end {
                out[k] += l * z[k];
            }
        }
    }
}

/// What a one-dimensional joint row constrains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JointRowKind {
    /// Lower position limit (impulse ≥ 0).
    LowerLimit,
    /// Upper position limit (impulse ≥ 0).
    UpperLimit,
    /// Coulomb joint friction (|impulse| ≤ friction·dt).
    Friction,
    /// Mimic coupling (bilateral).
    Mimic,
}

/// A one-dimensional joint constraint row of the current step.
#[derive(Clone, Copy, Debug)]
pub struct JointRow {
    /// What it is.
    pub kind: JointRowKind,
    /// Warm-start slot.
    pub slot: usize,
    /// Velocity coordinate the row acts on (the follower for mimic rows).
    pub dof: usize,
    /// Second velocity coordinate (mimic leader) and its coefficient in the row.
    pub dof2: Option<(usize, f64)>,
}



/// What a whole-step scheme produces.
pub struct SchemeOutput<'a> {
    /// The end-of-step generalized velocity v⁺ (length nv).
    pub velocity: &'a mut [f64],
    /// Contact impulses in the row layout of the method's [`ContactRows`], contact by contact
    /// in the order of [`SchemeInput::contacts`] (N·s, acting on body B), then joint rows.
    pub impulse: &'a mut [f64],
    /// Set when the scheme integrated the positions (and FEM state) itself; otherwise the step
    /// integrates `q⁺ = q ⊕ dt v⁺`.
    pub positions_integrated: bool,
    /// The deformable bodies' scratch (`None` without deformables), with this step's node
    /// contacts and prescribed node velocities already in it: a scheme that simulates
    /// deformables writes the contacts' impulses and the welds here, and the node velocities
    /// into `State::fem_v`; the step integrates `fem_x += dt fem_v` unless
    /// `positions_integrated`.
    pub fem: Option<&'a mut crate::fem::FemWorkspace>,
}

/// A time-stepping scheme that owns the step from the constraint stage on.
pub trait WholeStepScheme {
    /// Advances one step: reads `input` and `state` (the start-of-step state), writes
    /// `output.velocity` and `output.impulse`; may integrate `state.q` / FEM state itself
    /// (then sets `output.positions_integrated`). Must not allocate.
    fn advance(&mut self, input: &SchemeInput, state: &mut State, output: &mut SchemeOutput) -> SolveStats;

    /// Called after [`WholeStepScheme::advance`]: a scheme whose contact points are unknowns of
    /// its solve (the equivalent contact point) replaces the collision contacts of the pairs it
    /// solved by the points it solved, so that wrenches, sensors, markers and bags read those.
    /// `impulse` holds the contact rows (the method's [`ContactRows`], one block per entry of
    /// `contacts`) followed by `num_joint_rows` joint rows; both must stay consistent. Must not
    /// allocate: `contacts` may not grow beyond its capacity. Default: nothing changes.
    fn rewrite_contacts(&mut self, _contacts: &mut Vec<Contact>, _impulse: &mut [f64], _num_joint_rows: usize) {}
}
