//! Contact solvers behind one trait.
//!
//! Every solver reads a [`ContactProblem`] (see `problem.rs` for the formulation and the sign
//! conventions) and writes impulses plus [`SolveStats`]. The scene selects one with the tagged
//! enum [`SolverConfig`] (`solver: {kind: pgs, ...}` in YAML); [`Solver`] dispatches to it.

mod bisection;
mod pgs;
mod problem;
mod vfpi;

pub use bisection::{BisectionParams, BisectionSolver, SingleContact};
pub use crate::collision::Contact;
pub use pgs::{PgsParams, PgsSolver};
pub use problem::{ContactProblem, PrimalView};
pub use vfpi::{solve_nodal, ContactOperator, NodalConstraint, NodalSystem, VfpiParams, VfpiScratch, VfpiSolver};

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
}

/// Solver selection and parameters, as written in a scene file.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SolverConfig {
    /// Projected Gauss–Seidel on the Coulomb cone (the baseline).
    Pgs(PgsParams),
    /// Per-contact bisection with block SOR (Hwangbo et al. 2018, the RaiSim solver).
    Bisection(BisectionParams),
    /// V-FPI with contact nodalization and diagonalization (Lee, Lee & Lee, COND); the only
    /// solver of scenes with deformable bodies.
    Vfpi(VfpiParams),
}

impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig::Pgs(PgsParams::default())
    }
}

impl SolverConfig {
    /// Names accepted by `--solver`.
    pub const KINDS: &'static [&'static str] = &["pgs", "bisection", "vfpi"];

    /// The default parameters of a solver kind, by name.
    pub fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "pgs" => Some(SolverConfig::Pgs(PgsParams::default())),
            "bisection" => Some(SolverConfig::Bisection(BisectionParams::default())),
            "vfpi" => Some(SolverConfig::Vfpi(VfpiParams::default())),
            _ => None,
        }
    }
    /// The friction law the solver enforces.
    pub fn friction_model(&self) -> FrictionModel {
        match self {
            SolverConfig::Pgs(_) => FrictionModel::Coulomb,
            SolverConfig::Bisection(_) => FrictionModel::MaximumDissipation,
            SolverConfig::Vfpi(_) => FrictionModel::Coulomb,
        }
    }
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            SolverConfig::Pgs(_) => "pgs",
            SolverConfig::Bisection(_) => "bisection",
            SolverConfig::Vfpi(_) => "vfpi",
        }
    }
}

/// A configured solver with its scratch memory.
pub enum Solver {
    /// PGS.
    Pgs(PgsSolver),
    /// Per-contact bisection.
    Bisection(BisectionSolver),
    /// V-FPI.
    Vfpi(Box<VfpiSolver>),
}

impl Solver {
    /// Builds the solver and sizes its scratch for `model`.
    pub fn new(config: &SolverConfig, model: &Model) -> Self {
        match config {
            SolverConfig::Pgs(p) => Solver::Pgs(PgsSolver::new(p.clone(), model.contact.max_contacts)),
            SolverConfig::Bisection(p) => {
                Solver::Bisection(BisectionSolver::new(p.clone(), model.contact.max_contacts, model.max_joint_rows()))
            }
            SolverConfig::Vfpi(p) => {
                let (n, rows, constraints) = vfpi_sizes(model);
                Solver::Vfpi(Box::new(VfpiSolver::new(p.clone(), n, rows, model.nv, constraints)))
            }
        }
    }
    /// The solver's kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Solver::Pgs(_) => "pgs",
            Solver::Bisection(_) => "bisection",
            Solver::Vfpi(_) => "vfpi",
        }
    }
}

impl ContactSolver for Solver {
    fn solve(&mut self, problem: &ContactProblem, impulse: &mut [f64]) -> SolveStats {
        match self {
            Solver::Pgs(s) => s.solve(problem, impulse),
            Solver::Bisection(s) => s.solve(problem, impulse),
            Solver::Vfpi(s) => s.solve(problem, impulse),
        }
    }
}

/// V-FPI sizes of a model: `(unknowns, λ rows, constraints)`. Rigid contacts and joint rows are
/// virtual nodes; each deformable surface node can carry one contact, whose rigid side (if any)
/// is a 3-row virtual node.
pub fn vfpi_sizes(model: &Model) -> (usize, usize, usize) {
    let nodes: usize = model.deformables.iter().map(|d| d.num_nodes()).sum();
    let surface: usize = model.deformables.iter().map(|d| d.surface_nodes.len()).sum();
    let welded = crate::fem::welded_node_count(&model.deformables);
    let rigid_rows = model.max_constraint_rows();
    let virtual_rows = rigid_rows + 3 * surface + 3 * welded;
    let n = 3 * nodes + model.nv + virtual_rows;
    let rows = rigid_rows + 3 * surface + 3 * welded;
    let constraints = model.contact.max_contacts + model.max_joint_rows() + surface + welded;
    (n, rows, constraints)
}
