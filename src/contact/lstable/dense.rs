//! The L-stable step on a small hand-built system: dense M, explicit Jacobian rows. This is the
//! paper's formulation with nothing of the engine around it — the reference path for the paper's
//! experiments (pendulums in absolute coordinates, the four-legged table, the particle checks)
//! and for checking the engine's path against it. It allocates; the engine's step does not.

use super::core::{row_compliance, row_position_feedback, ImpulseProblem, PolishScratch, RowKind};
use super::{solve, LstableParams};
use crate::contact::SolveStats;
use nalgebra::{DMatrix, DVector};

/// One scalar constraint of a hand-built system.
#[derive(Clone, Debug)]
pub struct DenseRow {
    /// What the row is (friction rows name their normal's index in the row list).
    pub kind: RowKind,
    /// Jacobian row `G_i = ∂φ_i/∂q N` (length nv).
    pub jacobian: Vec<f64>,
    /// Constraint value at the start of the step (its unit; negative: violated / penetrating).
    pub phi0: f64,
    /// Stiffness K (force per unit of φ).
    pub stiffness: f64,
    /// Damping B (force per unit of φ̇).
    pub damping: f64,
}

/// Result of one step of a hand-built system.
#[derive(Clone, Debug)]
pub struct DenseStep {
    /// End-of-step velocity v₁.
    pub velocity: DVector<f64>,
    /// Constraint forces λ₁ = p / h per row (force units of each row).
    pub force: Vec<f64>,
    /// Solver statistics.
    pub stats: SolveStats,
}

/// One L-stable step (paper §4, eqs. 36–39): `v₁ = v₀ + h M⁻¹ (Gᵀ λ₁ + f)` with λ₁ from the
/// configured mode and back-end; the caller integrates `q₁ = q₀ + h N v₁`. `warm` is the
/// previous step's forces (or empty). `None` when M is not positive definite.
pub fn dense_step(mass: &DMatrix<f64>, rows: &[DenseRow], v0: &DVector<f64>, force: &DVector<f64>, h: f64, params: &LstableParams, warm: &[f64]) -> Option<DenseStep> {
    let n = mass.nrows();
    let m = rows.len();
    let chol = mass.clone().cholesky()?;
    let v_free = v0 + chol.solve(force) * h;
    let g = DMatrix::from_fn(m, n, |i, j| rows[i].jacobian[j]);
    let minv_gt = chol.solve(&g.transpose());
    let delassus = &g * &minv_gt;
    let mut a = vec![0.0; m * m];
    let mut c = vec![0.0; m];
    let mut scale = vec![0.0; m];
    let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).collect();
    for (i, row) in rows.iter().enumerate() {
        for j in 0..m {
            a[i * m + j] = delassus[(i, j)];
        }
        a[i * m + i] += row_compliance(h, row.stiffness, row.damping);
        c[i] = (0..n).map(|k| row.jacobian[k] * v_free[k]).sum::<f64>() + row_position_feedback(h, row.stiffness, row.damping, row.phi0);
        scale[i] = h * (h * row.stiffness + row.damping);
    }
    let prob = ImpulseProblem { a: &a, c: &c, kinds: &kinds };
    let mut p: Vec<f64> = (0..m).map(|i| warm.get(i).map_or(0.0, |f| f * h)).collect();
    let mut scratch = vec![0.0; m * m];
    let mut polish = PolishScratch::new(m);
    let stats = solve(params, &prob, &scale, h, &mut scratch, &mut polish, &mut p);
    let velocity = v_free + &minv_gt * DVector::from_column_slice(&p);
    Some(DenseStep { velocity, force: p.iter().map(|x| x / h).collect(), stats })
}
