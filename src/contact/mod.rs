//! Contact methods behind one seam.
//!
//! A method is an *impulse solver* (reads the step's [`ContactProblem`], see `problem.rs` for
//! the formulation and the sign conventions, and writes impulses plus [`SolveStats`]) or a
//! *whole-step scheme* (owns the step from the constraint stage on); `method.rs` defines the
//! traits and the rows-per-contact table. The scene selects one with the tagged enum
//! [`SolverConfig`] (`solver: {kind: pgs, ...}` in YAML); [`Solver`] dispatches to it. Both are
//! generated from the one list in `registry.rs`.
//!
//! # How to add a contact method
//!
//! 1. Write `src/contact/<name>.rs` with a params type (serde `Deserialize` + `Serialize` with
//!    `#[serde(deny_unknown_fields, default)]`, `Default` holding the paper's defaults, units in
//!    the field docs) and a runtime type holding the params and all scratch memory.
//! 2. Implement [`MethodParams`] for the params: `NAME` (the `kind` in scenes, snake case of the
//!    registry variant), `SUMMARY`, `CAPABILITIES` (impulse or whole-step, deformables, the
//!    [`ContactRows`] layout, the friction law, the [`SceneCoverage`]), `validate` (every field, with
//!    [`check_params`]), the main tolerance with its unit, the iteration cap, and `build`
//!    (allocates the scratch for a model; the step must not allocate).
//! 3. Implement [`ContactMethod`] for the runtime: `stage` returns
//!    [`ConstraintStage::Impulse`] (implement [`ImpulseSolver`]; also [`NodalSolver`] if it
//!    handles deformables) or [`ConstraintStage::WholeStep`] (implement [`WholeStepScheme`]).
//! 4. Add `mod <name>;` and its `pub use` below, and one line `Variant(ParamsType)` in the
//!    `contact_methods!` list of `registry.rs`. The CLI's `--solver`, the scene schema, the
//!    node's `solver` parameter and its choices, `bench` and the golden/conformance suites pick it
//!    up; add its name to the `solver` choices of `launch/sim.launch.py` and `sim.launch.xml`
//!    (`tests/registry.rs` fails until you do).
//! 5. Tests: `tests/registry.rs` checks the name, defaults and tolerance field; add the method's
//!    physics tests (resting force m·g, stick/slip at tan θ = μ, sliding distance) and run
//!    `cargo test --release --test golden` (other methods' trajectories must not move).

mod bisection;
pub mod lstable;
pub mod newton;
pub mod ecp;
mod method;
mod pgs;
mod problem;
mod registry;
mod vfpi;

pub use method::{
    check_params, sum_row_images, Capabilities, ConstraintRows, ConstraintStage, JointRow, JointRowKind, ContactMethod, ContactRow, ContactRows, ImpulseSolver, MethodKind, MethodParams, NodalSolver,
    ParamError, SceneCoverage, SchemeInput, SchemeOutput, Tolerance, WholeStepScheme, MAX_ROWS_PER_CONTACT,
};
pub use registry::{Solver, SolverConfig, SolverKind};

pub use bisection::{BisectionParams, BisectionSolver, SingleContact};
pub use lstable::{LstableBackend, LstableMode, LstableParams, LstableScheme};
pub use newton::{NewtonParams, NewtonPreset, NewtonScheme};
pub use ecp::{EcpParams, EcpScheme};
pub use crate::collision::Contact;
pub use pgs::{PgsParams, PgsSolver};
pub use problem::{ContactProblem, PrimalView};
pub use vfpi::{solve_nodal, vfpi_sizes, ContactOperator, NodalConstraint, NodalSystem, VfpiParams, VfpiScratch, VfpiSolver};


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

