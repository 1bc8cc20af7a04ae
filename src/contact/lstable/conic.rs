//! The conic back-end of the L-stable step: the `clarabel` interior-point solver.
//!
//! Two programs, both on the impulse form of [`super::core`] (`h w = A p + c`):
//!
//! - **Mode C** ([`solve_mode_c`]): for fixed cone radii `ρ_c = μ_c p̄_n,c`,
//!   `min ½ pᵀ A p + cᵀ p` s.t. `p ≥ 0` on normals and unilateral rows, `lo ≤ p ≤ hi` on box
//!   rows, `‖p_f,c‖ ≤ ρ_c` per contact (a second-order cone with a constant first entry); then
//!   `p̄_n ← p_n` until the radii stop changing (Anitescu and Hart, the paper's first reference).
//! - **Mode P** ([`solve_mode_p`]): the paper's eliminated program (Appendix A, with the
//!   corrections of the method's docs page): `min ½ (ζ ‖p_un‖² + ‖p_f‖² + Σ_f D_f² (A p + c)_f²)`
//!   s.t. `(A p + c)_b = 0`, `(A p + c)_un ≥ 0`, `p_un ≥ 0`, `‖p_f,c‖ ≤ μ_c p_n,c`.
//!
//! clarabel builds its problem data on every call, so this back-end allocates; the real-time
//! default is the Gauss–Seidel back-end of [`super::core`]. Tolerances: `tol_gap_abs`,
//! `tol_gap_rel`, `tol_feas` are set to the method's tolerance (clamped to ≥ 1e-12).

use super::core::{ImpulseProblem, RowKind};
use crate::contact::SolveStats;
use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};

/// Builder of the constraint rows `A_c x + s = b_c`, `s ∈ K`, as sparse triplets.
struct Constraints {
    rows: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
    b: Vec<f64>,
    cones: Vec<SupportedConeT<f64>>,
}

impl Constraints {
    fn new() -> Self {
        Constraints { rows: Vec::new(), cols: Vec::new(), vals: Vec::new(), b: Vec::new(), cones: Vec::new() }
    }
    /// Appends one constraint row with the entries `(column, value)` and right-hand side `b`.
    fn row(&mut self, entries: &[(usize, f64)], b: f64) {
        let r = self.b.len();
        for &(c, v) in entries {
            if v != 0.0 {
                self.rows.push(r);
                self.cols.push(c);
                self.vals.push(v);
            }
        }
        self.b.push(b);
    }
    /// Appends the dense row `scale · A_i,:` and right-hand side `b`.
    fn dense_row(&mut self, prob: &ImpulseProblem, i: usize, scale: f64, b: f64) {
        let m = prob.dim();
        let r = self.b.len();
        for j in 0..m {
            let v = scale * prob.a[i * m + j];
            if v != 0.0 {
                self.rows.push(r);
                self.cols.push(j);
                self.vals.push(v);
            }
        }
        self.b.push(b);
    }
    fn cone(&mut self, cone: SupportedConeT<f64>) {
        self.cones.push(cone);
    }
    fn matrix(&self, n: usize) -> CscMatrix<f64> {
        CscMatrix::new_from_triplets(self.b.len(), n, self.rows.clone(), self.cols.clone(), self.vals.clone())
    }
}

/// The upper triangle of a dense symmetric `n × n` matrix (row-major) in CSC form.
fn upper_csc(p: &[f64], n: usize) -> CscMatrix<f64> {
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for j in 0..n {
        for i in 0..=j {
            let v = p[i * n + j];
            if v != 0.0 {
                rows.push(i);
                cols.push(j);
                vals.push(v);
            }
        }
    }
    CscMatrix::new_from_triplets(n, n, rows, cols, vals)
}

/// Friction groups: `(first row, rows in the group (1 or 2), normal row, μ)`.
fn friction_groups(prob: &ImpulseProblem) -> Vec<(usize, usize, usize, f64)> {
    let m = prob.dim();
    let mut groups = Vec::new();
    let mut i = 0;
    while i < m {
        if let RowKind::Friction { normal_row, mu } = prob.kinds[i] {
            let pair = i + 1 < m && matches!(prob.kinds[i + 1], RowKind::Friction { normal_row: n2, .. } if n2 == normal_row);
            let len = if pair { 2 } else { 1 };
            groups.push((i, len, normal_row, mu));
            i += len;
        } else {
            i += 1;
        }
    }
    groups
}

fn settings(tolerance: f64) -> DefaultSettings<f64> {
    let tol = tolerance.max(1e-12);
    DefaultSettings { verbose: false, tol_gap_abs: tol, tol_gap_rel: tol, tol_feas: tol, max_iter: 200, ..DefaultSettings::default() }
}

/// Runs clarabel; `Some(x)` when it reports solved (or almost solved).
fn run(p: &CscMatrix<f64>, q: &[f64], cons: &Constraints, n: usize, tolerance: f64) -> Option<(Vec<f64>, u32)> {
    let a = cons.matrix(n);
    let mut solver = DefaultSolver::new(p, q, &a, &cons.b, &cons.cones, settings(tolerance)).ok()?;
    solver.solve();
    match solver.solution.status {
        SolverStatus::Solved | SolverStatus::AlmostSolved => Some((solver.solution.x.clone(), solver.solution.iterations)),
        _ => None,
    }
}

/// Adds the sign and box rows shared by both modes (`p ≥ 0` on push-only rows, `lo ≤ p ≤ hi`).
fn bound_rows(prob: &ImpulseProblem, cons: &mut Constraints) {
    let push_only: Vec<usize> = (0..prob.dim()).filter(|&i| prob.kinds[i].is_push_only()).collect();
    for &i in &push_only {
        cons.row(&[(i, -1.0)], 0.0);
    }
    let mut count = push_only.len();
    for (i, kind) in prob.kinds.iter().enumerate() {
        if let RowKind::Box { lo, hi } = *kind {
            cons.row(&[(i, 1.0)], hi);
            cons.row(&[(i, -1.0)], -lo);
            count += 2;
        }
    }
    if count > 0 {
        cons.cone(SupportedConeT::NonnegativeConeT(count));
    }
}

/// Mode C with the cone-radius fixed point (module docs). `p` holds the warm start (its normal
/// impulses are the first radii) and the solution. `stats.iterations` counts fixed-point
/// iterations; `residual` is the last relative change of the radii.
pub fn solve_mode_c(prob: &ImpulseProblem, tolerance: f64, max_fixed_point: u32, p: &mut [f64]) -> SolveStats {
    let m = prob.dim();
    let groups = friction_groups(prob);
    let p_matrix = upper_csc(prob.a, m);
    let mut radii_from: Vec<f64> = p[..m].iter().map(|x| x.max(0.0)).collect();
    let mut stats = SolveStats::default();
    for it in 0..max_fixed_point.max(1) {
        let mut cons = Constraints::new();
        bound_rows(prob, &mut cons);
        for &(first, len, normal, mu) in &groups {
            let radius = mu * radii_from[normal];
            if radius <= 0.0 {
                // an empty disk: no friction (a cone with no interior stalls the interior point)
                for r in first..first + len {
                    cons.row(&[(r, 1.0)], 0.0);
                }
                cons.cone(SupportedConeT::ZeroConeT(len));
            } else if len == 2 {
                cons.row(&[], radius);
                cons.row(&[(first, -1.0)], 0.0);
                cons.row(&[(first + 1, -1.0)], 0.0);
                cons.cone(SupportedConeT::SecondOrderConeT(3));
            } else {
                cons.row(&[(first, 1.0)], radius);
                cons.row(&[(first, -1.0)], radius);
                cons.cone(SupportedConeT::NonnegativeConeT(2));
            }
        }
        let Some((x, _)) = run(&p_matrix, prob.c, &cons, m, tolerance * 1e-2) else {
            stats.iterations = it + 1;
            return stats;
        };
        p[..m].copy_from_slice(&x);
        let scale = (0..m).filter(|&i| prob.kinds[i] == RowKind::Normal).fold(1e-12f64, |s, i| s.max(p[i].abs()));
        let change = (0..m).filter(|&i| prob.kinds[i] == RowKind::Normal).fold(0.0f64, |s, i| s.max((p[i] - radii_from[i]).abs()));
        stats.iterations = it + 1;
        stats.residual = change / scale;
        if stats.residual <= tolerance || groups.is_empty() {
            stats.converged = true;
            break;
        }
        for i in 0..m {
            radii_from[i] = p[i].max(0.0);
        }
    }
    stats
}

/// Mode P (module docs). `compliance_scale` is `D = h (h K + B)` per row (only the friction and
/// box rows' values are read); `zeta` the weight of the normal and unilateral impulses.
pub fn solve_mode_p(prob: &ImpulseProblem, compliance_scale: &[f64], zeta: f64, tolerance: f64, p: &mut [f64]) -> SolveStats {
    let m = prob.dim();
    let is_friction = |k: RowKind| matches!(k, RowKind::Friction { .. } | RowKind::Box { .. });
    // P = Z + Σ_f D_f² A_f,:ᵀ A_f,: ;  q = Σ_f D_f² c_f A_f,:ᵀ
    let mut hess = vec![0.0; m * m];
    let mut q = vec![0.0; m];
    for i in 0..m {
        hess[i * m + i] += match prob.kinds[i] {
            RowKind::Normal | RowKind::Unilateral => zeta,
            RowKind::Bilateral => 0.0,
            _ => 1.0,
        };
    }
    for f in (0..m).filter(|&i| is_friction(prob.kinds[i])) {
        let d2 = compliance_scale[f] * compliance_scale[f];
        let row = &prob.a[f * m..(f + 1) * m];
        for i in 0..m {
            q[i] += d2 * prob.c[f] * row[i];
            for j in 0..m {
                hess[i * m + j] += d2 * row[i] * row[j];
            }
        }
    }
    let mut cons = Constraints::new();
    let bilateral: Vec<usize> = (0..m).filter(|&i| prob.kinds[i] == RowKind::Bilateral).collect();
    for &i in &bilateral {
        cons.dense_row(prob, i, 1.0, -prob.c[i]);
    }
    if !bilateral.is_empty() {
        cons.cone(SupportedConeT::ZeroConeT(bilateral.len()));
    }
    let push_only: Vec<usize> = (0..m).filter(|&i| prob.kinds[i].is_push_only()).collect();
    for &i in &push_only {
        cons.dense_row(prob, i, -1.0, prob.c[i]);
    }
    if !push_only.is_empty() {
        cons.cone(SupportedConeT::NonnegativeConeT(push_only.len()));
    }
    bound_rows(prob, &mut cons);
    for (first, len, normal, mu) in friction_groups(prob) {
        if len == 2 {
            cons.row(&[(normal, -mu)], 0.0);
            cons.row(&[(first, -1.0)], 0.0);
            cons.row(&[(first + 1, -1.0)], 0.0);
            cons.cone(SupportedConeT::SecondOrderConeT(3));
        } else {
            cons.row(&[(normal, -mu), (first, 1.0)], 0.0);
            cons.row(&[(normal, -mu), (first, -1.0)], 0.0);
            cons.cone(SupportedConeT::NonnegativeConeT(2));
        }
    }
    match run(&upper_csc(&hess, m), &q, &cons, m, tolerance) {
        Some((x, iterations)) => {
            p[..m].copy_from_slice(&x);
            SolveStats { iterations, residual: 0.0, converged: true }
        }
        None => SolveStats::default(),
    }
}
