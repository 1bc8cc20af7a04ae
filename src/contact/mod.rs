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
//!    registry variant), `SUMMARY`, `CAPABILITIES` (deformables, the [`ContactRows`] layout, the
//!    friction law, the [`SceneCoverage`]), `validate` (every field, with
//!    [`check_params`]), the main tolerance with its unit, the iteration cap, and `build`
//!    (allocates the scratch for a model; the step must not allocate).
//! 3. Implement [`ContactMethod`] for the runtime: `stage` returns
//!    [`ConstraintStage::Impulse`] (implement [`ImpulseSolver`]; also [`NodalSolver`] if it
//!    handles deformables), [`ConstraintStage::WholeStep`] or [`ConstraintStage::WholeStepOnRows`]
//!    (implement [`WholeStepScheme`]): the one value that says how it enters the step. History
//!    kept between steps goes into the [`crate::state::State`] (`method_history`), never only
//!    into the runtime (`tests/snapshot.rs`).
//! 4. Add `mod <name>;` and its `pub use` below, and one line `Variant(ParamsType)` in the
//!    `contact_methods!` list of `registry.rs`. The CLI's `--solver`, the scene schema, the
//!    node's `solver` parameter and its choices, `bench` and the golden/conformance suites pick it
//!    up; add its name to the `solver` choices of `launch/sim.launch.py` and `sim.launch.xml`
//!    (`tests/registry.rs` fails until you do).
//! 5. Tests: `tests/registry.rs` checks the name, defaults and tolerance field; add the method's
//!    physics tests (resting force m·g, stick/slip at tan θ = μ, sliding distance) and run
//!    `cargo test --release --test suite golden::` (other methods' trajectories must not move).

mod bisection;
mod delassus;
pub mod lstable;
pub mod newton;
pub mod ecp;
mod method;
mod nodal;
mod pgs;
mod problem;
mod registry;
mod vfpi;

pub use method::{
    check_params, FrictionModel, SolveStats, sum_row_images, Capabilities, ConstraintRows, ConstraintStage, JointRow, JointRowKind, ContactMethod, ImpulseSolver, MethodKind, MethodParams, NodalSolver,
    ParamError, SceneCoverage, SchemeInput, SchemeOutput, Tolerance, UnitProbe, UnitTiming, WholeStepScheme, NO_TREE,
};
pub use registry::{Solver, SolverConfig, SolverKind};

pub use bisection::{BisectionParams, BisectionSolver, SingleContact};
pub use lstable::{LstableBackend, LstableMode, LstableParams, LstableScheme};
pub use newton::{NewtonParams, NewtonPreset, NewtonScheme};
pub use ecp::{EcpParams, EcpScheme};
pub use crate::collision::Contact;
pub use pgs::{PgsParams, PgsSolver};
pub use delassus::{assemble_delassus, delassus_diagonal};
pub use problem::{ContactProblem, ContactRow, ContactRows, FactoredRows, PrimalView};
pub use crate::state::MAX_ROWS_PER_CONTACT;
pub use nodal::{NodalConstraint, NodalSystem};
pub use vfpi::{solve_nodal, vfpi_sizes, ContactOperator, VfpiParams, VfpiScratch, VfpiSolver};
