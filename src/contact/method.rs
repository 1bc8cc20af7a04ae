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

use super::problem::{ContactProblem, ContactRows};
use super::nodal::NodalSystem;
use crate::collision::Contact;
use crate::math::BranchMatrix;
use crate::model::Model;
use crate::state::{Commands, State};
use crate::math::{Pose, Vec6};
use nalgebra::{DMatrix, DVector};

/// What a solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct SolveStats {
    /// Sweeps / iterations performed.
    pub iterations: u32,
    /// The solver's own convergence measure at exit (see each solver's docs; N·s for PGS).
    pub residual: f64,
    /// Whether the tolerance was met before the iteration limit.
    pub converged: bool,
}

/// The friction law a solver's solution satisfies when a contact slides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrictionModel {
    /// Coulomb: `λ_t = −μ λ_n u_t/‖u_t‖` (friction exactly opposes the slip).
    Coulomb,
    /// Maximal dissipation with purely inelastic impacts (Preclik; Hwangbo et al. 2018 eq. 8):
    /// per contact, `λ = argmin ½ uᵀ G_ii⁻¹ u` on the cone with `u_n = 0`. Equal to Coulomb when a
    /// contact's Delassus block has no normal–tangential coupling; otherwise friction is not
    /// exactly opposite to the slip (about 1.8 % less friction on a box sliding on its corners).
    MaximumDissipation,
    /// Maximal dissipation over an ellipsoidal limit surface of the force and the moment about
    /// the normal at an equivalent contact point, `(p_t/e_t)² + (p_o/e_o)² + (p_r/e_r)² ≤ μ² p_n²`
    /// (Xie & Chakraborty). Coulomb when the contact does not spin (and `e_t = e_o`); a spinning
    /// contact trades tangential friction for friction moment.
    EllipsoidalLimitSurface,
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
    /// Handles scenes with deformable (FEM) bodies.
    pub deformables: bool,
    /// The rows of each contact in the problem and in the impulses it writes.
    pub contact_rows: ContactRows,
    /// The friction law its solution satisfies when a contact slides.
    pub friction: FrictionModel,
    /// Reads M̃ as a dense matrix (`Workspace::mass_tilde`; filled only for such methods and in
    /// scenes with deformables).
    pub dense_mass: bool,
    /// Needs the Delassus matrix G ([`ContactProblem::delassus`]). A method that also works on
    /// the factored rows alone ([`ContactProblem::factored`]) gets G only in the steps where
    /// its rows are shorter than the factored ones (a few rows on long trees); otherwise the
    /// step leaves its assembly, the largest cost of a contact-rich step, out.
    pub delassus: bool,
    /// Assembles G itself, from the factored rows ([`crate::contact::assemble_delassus`]), on the
    /// steps that need it: on rigid scenes the rows stage then leaves G out (with deformables it
    /// builds it). Only for methods of kind [`MethodKind::WholeStepOnRows`].
    pub delassus_on_demand: bool,
    /// The rigid scenes it can simulate (scenes outside are refused at load).
    pub coverage: SceneCoverage,
}

impl Capabilities {
    /// Point contacts with Coulomb friction, every rigid scene, no deformables, the sparse mass
    /// matrix only.
    pub const RIGID_POINT_COULOMB: Capabilities = Capabilities {
        deformables: false,
        contact_rows: ContactRows::POINT,
        friction: FrictionModel::Coulomb,
        dense_mass: false,
        delassus: true,
        delassus_on_demand: false,
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
    /// the method's own rule ([`MethodParams::outside_coverage`]), which checks the whole class:
    /// the class is a label for tables and help texts.
    ConvexObjects,
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
    /// The method's own rule for which rigid scenes it covers (its [`SceneCoverage`] class
    /// names the kind; e.g. which objects and robot links its contact problems can hold): one
    /// sentence naming the element. The scene is refused with a message that names the methods
    /// that can simulate it. `None` (the default) when it covers `model`.
    fn outside_coverage(&self, _model: &Model) -> Option<String> {
        None
    }
    /// A line `contact_sim bench` prints under its table when this method ran (e.g. which build
    /// of its kernels this CPU runs). `None` (the default): nothing.
    fn bench_note(&self) -> Option<String> {
        None
    }
    /// A micro-benchmark of the method's unit of work (e.g. one single-contact solve), which
    /// `contact_sim bench` feeds every timed step's problem and times outside the step. `None`
    /// (the default): the method has none.
    fn unit_probe(&self) -> Option<Box<dyn UnitProbe>> {
        None
    }
}

/// A method's micro-benchmark of its unit of work ([`MethodParams::unit_probe`]): it records the
/// unit problems of each step's problem during a benchmark run, then times them all.
pub trait UnitProbe {
    /// Records the unit problems of `problem`, whose solution the step found was `solution`.
    fn record(&mut self, problem: &ContactProblem, solution: &[f64]);
    /// Times every recorded unit problem.
    fn time(&self) -> UnitTiming;
}

/// What a [`UnitProbe`] measured (µs per unit problem).
#[derive(Clone, Debug, Default)]
pub struct UnitTiming {
    /// Unit problems recorded.
    pub samples: usize,
    /// Mean time of one unit solve over whole passes (the best of three), µs.
    pub mean_us: f64,
    /// Each unit solve timed alone, less the clock's cost, sorted ascending, µs.
    pub each_us: Vec<f64>,
    /// The share of the unit problems whose contact slides.
    pub sliding_fraction: f64,
    /// Mean time over the sliding ones (NaN when none slides), µs.
    pub sliding_mean_us: f64,
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

/// How a method enters the constraint stage: the one value that says so (the step asks
/// [`ContactMethod::stage`], never a second flag).
pub enum ConstraintStage<'a> {
    /// Impulses on the step's [`ContactProblem`].
    Impulse(&'a mut dyn ImpulseSolver),
    /// The rest of the step.
    WholeStep(&'a mut dyn WholeStepScheme),
    /// The rest of the step, reading the step's velocity-level constraint rows
    /// ([`SchemeInput::rows`]).
    WholeStepOnRows(&'a mut dyn WholeStepScheme),
}

impl<'a> ConstraintStage<'a> {
    /// The kind of entry.
    pub fn kind(&self) -> MethodKind {
        match self {
            ConstraintStage::Impulse(_) => MethodKind::Impulse,
            ConstraintStage::WholeStep(_) => MethodKind::WholeStep,
            ConstraintStage::WholeStepOnRows(_) => MethodKind::WholeStepOnRows,
        }
    }
    /// The whole-step scheme, for either whole-step kind.
    pub fn scheme(self) -> Option<&'a mut dyn WholeStepScheme> {
        match self {
            ConstraintStage::Impulse(_) => None,
            ConstraintStage::WholeStep(s) | ConstraintStage::WholeStepOnRows(s) => Some(s),
        }
    }
}

/// A velocity-level impulse solver.
pub trait ImpulseSolver {
    /// Solves `problem`. `impulse` holds the warm start on entry (length `problem.dim()`) and
    /// the solution on exit. Must not allocate.
    fn solve(&mut self, problem: &ContactProblem, impulse: &mut [f64]) -> SolveStats;
    /// `Z λ = Σᵢ λᵢ zᵢ` (length nv) for the impulses of the last [`ImpulseSolver::solve`], when
    /// the solver kept it while solving a problem in factored form ([`ContactProblem::factored`]):
    /// the step then maps it to the velocity change instead of summing the rows' images again.
    fn row_image(&self) -> Option<&[f64]> {
        None
    }
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
    /// The kinematic trees each row touches ([`NO_TREE`]: none).
    pub row_trees: &'a [(usize, usize)],
    /// The rows in groups on the same trees, `(first row, count)`
    /// ([`crate::workspace::Workspace::row_groups`]), for [`crate::contact::assemble_delassus`].
    pub row_groups: &'a [(usize, usize)],
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
///
/// Consecutive rows on the same trees (a contact's normal and tangents) are added together,
/// up to three at a time: each `out[k]` is loaded once, takes their terms in row order and is
/// stored once, which is bit for bit the row-by-row sum but keeps the running sums in registers
/// instead of a store-to-load chain through `out` per row. Rows with `λᵢ = 0` add nothing, as
/// before.
pub fn sum_row_images(model: &Model, factor_jt: &[f64], row_trees: &[(usize, usize)], impulse: &[f64], out: &mut [f64]) {
    let nv = model.nv;
    let m = impulse.len();
    let mut i = 0;
    while i < m {
        // the run of rows on row i's trees, at most three, and its rows with an impulse
        let trees = row_trees[i];
        let mut end = i + 1;
        while end < m && end < i + 3 && row_trees[end] == trees {
            end += 1;
        }
        let mut terms: [(f64, usize); 3] = [(0.0, 0); 3];
        let mut n = 0;
        for r in i..end {
            if impulse[r] != 0.0 {
                terms[n] = (impulse[r], r * nv);
                n += 1;
            }
        }
        i = end;
        if n == 0 {
            continue;
        }
        for t in [trees.0, trees.1] {
            if t == usize::MAX {
                continue;
            }
            let tr = &model.trees[t];
            let (s, e) = (tr.v_start, tr.v_end);
            let out = &mut out[s..e];
            match n {
                1 => {
                    let (l0, z0) = (terms[0].0, &factor_jt[terms[0].1 + s..terms[0].1 + e]);
                    for (o, a) in out.iter_mut().zip(z0) {
                        *o += l0 * a;
                    }
                }
                2 => {
                    let (l0, z0) = (terms[0].0, &factor_jt[terms[0].1 + s..terms[0].1 + e]);
                    let (l1, z1) = (terms[1].0, &factor_jt[terms[1].1 + s..terms[1].1 + e]);
                    for ((o, a), b) in out.iter_mut().zip(z0).zip(z1) {
                        *o = *o + l0 * a + l1 * b;
                    }
                }
                _ => {
                    let (l0, z0) = (terms[0].0, &factor_jt[terms[0].1 + s..terms[0].1 + e]);
                    let (l1, z1) = (terms[1].0, &factor_jt[terms[1].1 + s..terms[1].1 + e]);
                    let (l2, z2) = (terms[2].0, &factor_jt[terms[2].1 + s..terms[2].1 + e]);
                    for (((o, a), b), c) in out.iter_mut().zip(z0).zip(z1).zip(z2) {
                        *o = *o + l0 * a + l1 * b + l2 * c;
                    }
                }
            }
        }
    }
}

/// `row_trees` entry of a row that touches no (second) tree.
pub const NO_TREE: usize = usize::MAX;

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

    /// Sizes the scheme's history in a new state (`State::method_history` and
    /// `State::method_state`) before its first step, so that a real-time loop started on it
    /// never allocates ([`crate::sim::Simulation::new`] calls it). Default: nothing (the scheme
    /// sizes its history at its first step).
    fn prepare_state(&mut self, _state: &mut State) {}
}
