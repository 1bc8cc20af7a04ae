//! Contact solvers behind one trait.
//!
//! Every solver reads a [`ContactProblem`] (see `problem.rs` for the formulation and the sign
//! conventions) and writes impulses plus [`SolveStats`]. The scene selects one with the tagged
//! enum [`SolverConfig`] (`solver: {kind: pgs, ...}` in YAML); [`Solver`] dispatches to it.

mod pgs;
mod problem;

pub use crate::collision::Contact;
pub use pgs::{PgsParams, PgsSolver};
pub use problem::ContactProblem;

use crate::model::Model;

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

/// The interface every contact solver implements.
pub trait ContactSolver {
    /// Solves `problem`. `impulse` holds the warm start on entry (length `problem.dim()`) and
    /// the solution on exit. Must not allocate.
    fn solve(&mut self, problem: &ContactProblem, impulse: &mut [f64]) -> SolveStats;
}

/// Solver selection and parameters, as written in a scene file.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SolverConfig {
    /// Projected Gauss–Seidel on the Coulomb cone (the baseline).
    Pgs(PgsParams),
}

impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig::Pgs(PgsParams::default())
    }
}

impl SolverConfig {
    /// Names accepted by `--solver`.
    pub const KINDS: &'static [&'static str] = &["pgs"];

    /// The default parameters of a solver kind, by name.
    pub fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "pgs" => Some(SolverConfig::Pgs(PgsParams::default())),
            _ => None,
        }
    }
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            SolverConfig::Pgs(_) => "pgs",
        }
    }
}

/// A configured solver with its scratch memory.
pub enum Solver {
    /// PGS.
    Pgs(PgsSolver),
}

impl Solver {
    /// Builds the solver and sizes its scratch for `model`.
    pub fn new(config: &SolverConfig, model: &Model) -> Self {
        match config {
            SolverConfig::Pgs(p) => Solver::Pgs(PgsSolver::new(p.clone(), model.contact.max_contacts)),
        }
    }
    /// The solver's kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Solver::Pgs(_) => "pgs",
        }
    }
}

impl ContactSolver for Solver {
    fn solve(&mut self, problem: &ContactProblem, impulse: &mut [f64]) -> SolveStats {
        match self {
            Solver::Pgs(s) => s.solve(problem, impulse),
        }
    }
}
