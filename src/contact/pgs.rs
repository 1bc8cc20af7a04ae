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
use super::{ContactProblem, FactoredRows, FrictionModel, SolveStats};
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
        Capabilities { deformables: false, contact_rows: ContactRows::POINT, friction: FrictionModel::Coulomb, dense_mass: false, delassus: false, delassus_on_demand: false, coverage: SceneCoverage::AllRigid };

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.tolerance >= 0.0, "tolerance", "must be ≥ 0"),
            (self.relaxation > 0.0 && self.relaxation < 2.0, "relaxation", "must be in (0, 2)"),
        ])
    }
    tolerance_and_iterations!(tolerance, "N·s", max_iterations);
    fn build(&self, model: &Model) -> PgsSolver {
        PgsSolver::with_factored(self.clone(), model.contact.max_contacts, model.nv)
    }
}

contact_method!(PgsSolver, PgsParams, Impulse);

/// PGS with its per-contact scratch (inverse tangential blocks) and the `Z λ` vector of the
/// factored form.
pub struct PgsSolver {
    /// Parameters.
    pub params: PgsParams,
    /// Per contact: 1/λ_max of the tangential 2×2 Delassus block.
    tangent_step: Vec<f64>,
    /// `y = Z λ` (one entry per generalized velocity) when the problem comes factored.
    z_impulse: Vec<f64>,
    /// Entries of `z_impulse` that hold `Z λ` for the last solve's impulses (0: none, the last
    /// problem was solved on G).
    image_len: usize,
}

impl PgsSolver {
    /// Reserves scratch for `max_contacts`, for problems with G assembled.
    pub fn new(params: PgsParams, max_contacts: usize) -> Self {
        Self::with_factored(params, max_contacts, 0)
    }

    /// Reserves scratch for `max_contacts` and for problems in factored form over `nv`
    /// generalized velocities (the step's problems: PGS does not ask for G).
    pub fn with_factored(params: PgsParams, max_contacts: usize, nv: usize) -> Self {
        PgsSolver { params, tangent_step: vec![0.0; max_contacts], z_impulse: vec![0.0; nv], image_len: 0 }
    }
}

const TINY: f64 = 1e-14;

/// Sweeps at most after which the running `y = Z λ` is handed to the step as the impulses' image
/// ([`ImpulseSolver::row_image`]).
const IMAGE_MAX_SWEEPS: u32 = 16;

/// How a sweep reads G: a row's velocity at the current impulses, an entry of G, and the
/// notice that an impulse changed.
trait Rows {
    /// `u_i = (G λ)_i + u_free,i`.
    fn velocity(&self, i: usize, lambda: &[f64]) -> f64;
    /// `G[i][j]` for rows of one contact.
    fn g(&self, i: usize, j: usize) -> f64;
    /// λ_i changed by `delta`.
    fn changed(&mut self, i: usize, delta: f64);
}

/// G itself: each row velocity is a dot product over all rows.
struct DenseRows<'a, 'p>(&'a ContactProblem<'p>);

impl Rows for DenseRows<'_, '_> {
    #[inline]
    fn velocity(&self, i: usize, lambda: &[f64]) -> f64 {
        self.0.row_velocity(i, lambda)
    }
    #[inline]
    fn g(&self, i: usize, j: usize) -> f64 {
        self.0.g(i, j)
    }
    #[inline]
    fn changed(&mut self, _: usize, _: f64) {}
}

/// G as `Zᵀ Z` with `y = Z λ` kept up to date: a row velocity and an update cost the row's
/// trees' coordinates, not the problem's size.
struct ZRows<'a, 'p> {
    rows: FactoredRows<'p>,
    free_velocity: &'p [f64],
    y: &'a mut [f64],
}

impl Rows for ZRows<'_, '_> {
    #[inline]
    fn velocity(&self, i: usize, _: &[f64]) -> f64 {
        self.free_velocity[i] + self.rows.dot(i, self.y)
    }
    #[inline]
    fn g(&self, i: usize, j: usize) -> f64 {
        self.rows.g(i, j)
    }
    #[inline]
    fn changed(&mut self, i: usize, delta: f64) {
        if delta != 0.0 {
            self.rows.add_row(i, delta, self.y);
        }
    }
}

impl ImpulseSolver for PgsSolver {
    fn solve(&mut self, p: &ContactProblem, lambda: &mut [f64]) -> SolveStats {
        let PgsSolver { params, tangent_step, z_impulse, image_len } = self;
        *image_len = 0;
        // G itself when the problem has it, else its factored form
        match p.factored.filter(|r| p.delassus.is_empty() && r.nv <= z_impulse.len()) {
            Some(rows) => {
                // y = Z λ from the warm start
                let y = &mut z_impulse[..rows.nv];
                y.fill(0.0);
                for (i, &l) in lambda.iter().enumerate().take(p.dim()) {
                    if l != 0.0 {
                        rows.add_row(i, l, y);
                    }
                }
                let stats = sweeps(params, tangent_step, p, &mut ZRows { rows, free_velocity: p.free_velocity, y }, lambda);
                // after many sweeps the running sum has taken many roundings, and summing Z λ
                // afresh costs little beside them: then the step sums it
                if stats.iterations <= IMAGE_MAX_SWEEPS {
                    *image_len = rows.nv;
                }
                stats
            }
            None => sweeps(params, tangent_step, p, &mut DenseRows(p), lambda),
        }
    }

    fn row_image(&self) -> Option<&[f64]> {
        (self.image_len > 0).then(|| &self.z_impulse[..self.image_len])
    }
}

/// The sweeps of the module docs on `rows`' reading of G.
fn sweeps(params: &PgsParams, tangent_step: &mut [f64], p: &ContactProblem, rows: &mut impl Rows, lambda: &mut [f64]) -> SolveStats {
    let nc = p.num_contacts;
    let w = params.relaxation;
    for c in 0..nc {
        let i = p.contact_row(c);
        let (a, b, d) = (rows.g(i + 1, i + 1), rows.g(i + 1, i + 2), rows.g(i + 2, i + 2));
        let lambda_max = 0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt();
        tangent_step[c] = if lambda_max > TINY { 1.0 / lambda_max } else { 0.0 };
    }
    let mut stats = SolveStats::default();
    for it in 0..params.max_iterations {
        let mut max_delta: f64 = 0.0;
        for c in 0..nc {
            let i = p.contact_row(c);
            let gnn = rows.g(i, i);
            if gnn <= TINY {
                continue;
            }
            let un = rows.velocity(i, lambda);
            let ln_old = lambda[i];
            let ln = (ln_old - w * un / gnn).max(0.0);
            let dn = ln - ln_old;
            lambda[i] = ln;
            rows.changed(i, dn);
            // tangential velocity after the normal update
            let ut1 = rows.velocity(i + 1, lambda);
            let ut2 = rows.velocity(i + 2, lambda);
            let step = w * tangent_step[c];
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
            rows.changed(i + 1, t1 - t1_old);
            rows.changed(i + 2, t2 - t2_old);
            max_delta = max_delta.max(dn.abs()).max((t1 - t1_old).abs()).max((t2 - t2_old).abs());
        }
        for r in 0..p.num_joint_rows {
            let i = p.first_joint_row() + r;
            let gii = rows.g(i, i);
            if gii <= TINY {
                continue;
            }
            let u = rows.velocity(i, lambda);
            let old = lambda[i];
            let new = (old - w * u / gii).clamp(p.row_lower[r], p.row_upper[r]);
            lambda[i] = new;
            rows.changed(i, new - old);
            max_delta = max_delta.max((new - old).abs());
        }
        stats.iterations = it + 1;
        stats.residual = max_delta;
        if max_delta <= params.tolerance {
            stats.converged = true;
            break;
        }
    }
    if p.dim() == 0 {
        stats.converged = true;
    }
    stats
}
