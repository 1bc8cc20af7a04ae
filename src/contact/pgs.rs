//! Projected Gauss–Seidel on the true (circular) Coulomb cone — the baseline solver.
//!
//! Per sweep, for each contact: the normal impulse is updated with its diagonal Delassus entry and
//! projected on `λ_n ≥ 0`; then the tangential pair takes a projected-gradient step of size
//! `1/λ_max(G_tt)` (the largest eigenvalue of its 2×2 Delassus block) and is projected radially on
//! the disk `‖λ_t‖ ≤ μ λ_n`. Joint rows are updated with their diagonal entry and clamped to their
//! bounds. Over-relaxation `ω` scales every update. Termination: the largest impulse change of a
//! sweep falls below `tolerance`.
//!
//! Why a scalar tangential step: with the full 2×2 inverse followed by a radial projection (a
//! common "blocked PGS"), the fixed point satisfies `u_t ∥ G_tt λ_t` instead of the maximal
//! dissipation condition `λ_t ∥ −u_t` whenever the block is anisotropic — a box sliding on four
//! corners then loses ~6 % of its friction to tangential impulses that cancel each other. With a
//! scalar step the radial projection is the Euclidean projection, and its fixed point opposes the
//! slip.

use super::method::{check_params, contact_method, tolerance_and_iterations, Capabilities, ImpulseSolver, MethodParams, ParamError, SceneCoverage};
use super::ContactRows;
use super::{ContactProblem, FrictionModel, SolveStats};
use crate::model::Model;

/// PGS parameters.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PgsParams {
    /// Maximum number of sweeps.
    pub max_iterations: u32,
    /// Stop when the largest impulse change of a sweep is below this (N·s).
    pub tolerance: f64,
    /// Over-relaxation factor ω (1 = plain Gauss–Seidel; 0 < ω < 2).
    pub relaxation: f64,
}

impl Default for PgsParams {
    fn default() -> Self {
        PgsParams { max_iterations: 500, tolerance: 1e-9, relaxation: 1.0 }
    }
}

impl MethodParams for PgsParams {
    type Runtime = PgsSolver;
    const NAME: &'static str = "pgs";
    const SUMMARY: &'static str = "projected Gauss–Seidel on the Coulomb cone (the baseline)";
    const CAPABILITIES: Capabilities =
        Capabilities { deformables: false, contact_rows: ContactRows::POINT, friction: FrictionModel::Coulomb, dense_mass: false, coverage: SceneCoverage::AllRigid };

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.tolerance >= 0.0, "tolerance", "must be ≥ 0"),
            (self.relaxation > 0.0 && self.relaxation < 2.0, "relaxation", "must be in (0, 2)"),
        ])
    }
    tolerance_and_iterations!(tolerance, "N·s", max_iterations);
    fn build(&self, model: &Model) -> PgsSolver {
        PgsSolver::new(self.clone(), model.contact.max_contacts)
    }
}

contact_method!(PgsSolver, PgsParams, Impulse);

/// PGS with its per-contact scratch (inverse tangential blocks).
pub struct PgsSolver {
    /// Parameters.
    pub params: PgsParams,
    /// Per contact: 1/λ_max of the tangential 2×2 Delassus block.
    tangent_step: Vec<f64>,
}

impl PgsSolver {
    /// Reserves scratch for `max_contacts`.
    pub fn new(params: PgsParams, max_contacts: usize) -> Self {
        PgsSolver { params, tangent_step: vec![0.0; max_contacts] }
    }
}

const TINY: f64 = 1e-14;

impl ImpulseSolver for PgsSolver {
    fn solve(&mut self, p: &ContactProblem, lambda: &mut [f64]) -> SolveStats {
        let nc = p.num_contacts;
        let w = self.params.relaxation;
        for c in 0..nc {
            let i = p.contact_row(c);
            let (a, b, d) = (p.g(i + 1, i + 1), p.g(i + 1, i + 2), p.g(i + 2, i + 2));
            let lambda_max = 0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt();
            self.tangent_step[c] = if lambda_max > TINY { 1.0 / lambda_max } else { 0.0 };
        }
        let mut stats = SolveStats::default();
        for it in 0..self.params.max_iterations {
            let mut max_delta: f64 = 0.0;
            for c in 0..nc {
                let i = p.contact_row(c);
                let gnn = p.g(i, i);
                if gnn <= TINY {
                    continue;
                }
                let un = p.row_velocity(i, lambda);
                let ln_old = lambda[i];
                let ln = (ln_old - w * un / gnn).max(0.0);
                let dn = ln - ln_old;
                lambda[i] = ln;
                // tangential velocity after the normal update
                let ut1 = p.row_velocity(i + 1, lambda);
                let ut2 = p.row_velocity(i + 2, lambda);
                let step = w * self.tangent_step[c];
                let (t1_old, t2_old) = (lambda[i + 1], lambda[i + 2]);
                let mut t1 = t1_old - step * ut1;
                let mut t2 = t2_old - step * ut2;
                let limit = p.friction[c] * ln;
                let norm = (t1 * t1 + t2 * t2).sqrt();
                if norm > limit {
                    let s = if norm > 0.0 { limit / norm } else { 0.0 };
                    t1 *= s;
                    t2 *= s;
                }
                lambda[i + 1] = t1;
                lambda[i + 2] = t2;
                max_delta = max_delta.max(dn.abs()).max((t1 - t1_old).abs()).max((t2 - t2_old).abs());
            }
            for r in 0..p.num_joint_rows {
                let i = p.first_joint_row() + r;
                let gii = p.g(i, i);
                if gii <= TINY {
                    continue;
                }
                let u = p.row_velocity(i, lambda);
                let old = lambda[i];
                let new = (old - w * u / gii).clamp(p.row_lower[r], p.row_upper[r]);
                lambda[i] = new;
                max_delta = max_delta.max((new - old).abs());
            }
            stats.iterations = it + 1;
            stats.residual = max_delta;
            if max_delta <= self.params.tolerance {
                stats.converged = true;
                break;
            }
        }
        if p.dim() == 0 {
            stats.converged = true;
        }
        stats
    }
}
