//! The constraint-space problem of the L-stable step, in impulse form, and its solvers.
//!
//! # From the paper's residual form to impulses
//!
//! Drumwright's step (§4–6 of the paper) evaluates M, G, f at the start of the step, predicts the
//! end-of-step constraint state with implicit Euler in constraint space and reads the forces off
//! the spring–damper laws. With `D_i = h (h K_i + B_i)`, `R_i = 1/D_i` and
//! `b_i = φ̇_i0 / h + K_i φ_i0 / (h (h K_i + B_i)) + (G M⁻¹ f)_i`, every law becomes a condition on
//! the scaled residual `w = (W + diag R) λ + b` (W = G M⁻¹ Gᵀ): `w_b = 0` for bilateral rows,
//! `0 ≤ λ ⊥ w ≥ 0` for unilateral rows and contact normals, and friction on the cone.
//!
//! We solve for the impulses `p = h λ` (N·s), which is what the rest of the engine stores.
//! Multiplying the residual by `h` gives
//!
//! ```text
//!   h w = A p + c,   A = J M̃⁻¹ Jᵀ + diag(ε),   ε_i = R_i = 1 / (h (h K_i + B_i)),
//!                    c_i = (J v*)_i + K_i φ_i0 / (h K_i + B_i),
//! ```
//!
//! with `v* = v + h M̃⁻¹ f` the unconstrained velocity and `J M̃⁻¹ Jᵀ` the Delassus matrix the
//! impulse solvers use. So the method is a *regularised* impulse problem: `ε` (m/s per N·s) is
//! the compliance of the row and `K φ₀ / (h K + B)` its position feedback; both come from the
//! physical stiffness and damping, and neither needs tuning. A friction row is a damper
//! (`K = 0`, `B = B_f`): inside the cone its slip is `−λ_f / B_f` (the creep speed).
//!
//! # Modes (see the method's docs page for the evidence)
//!
//! - **Mode C** (default): `0 ≤ p ⊥ (A p + c) ≥ 0` on normals and unilateral rows, equality on
//!   bilateral rows, and per contact the friction impulse minimises `½ pᵀ A p + cᵀ p` on the disk
//!   of radius `μ p_n`, i.e. it opposes the end-of-step (regularised) slip. This is the paper's
//!   own continuous law `λ = max(0, λ_spring)` enforced exactly after discretisation.
//! - **Mode P** (paper-literal, §5.3 / §6.2–6.3 and Appendix A): the minimum-norm program over
//!   `w ≥ 0`, `λ ≥ 0`, the cone, with the friction damper law penalised through the slack
//!   `β = D_f w_f`. Needs a conic solver ([`super::conic`]).
//!
//! # Solvers here
//!
//! - [`solve_bilateral`]: only equality rows: one dense Cholesky solve of `A p = −c` (the
//!   paper's linear-solve case, §5.2).
//! - [`solve_mode_c_nsgs`]: block Gauss–Seidel with exact block solves: a scalar row is projected
//!   on its interval; a contact's friction pair is minimised exactly on its disk (closed-form 2×2
//!   eigen-decomposition and a 1-D Newton on the secular equation); the disk radius is `μ` times
//!   the contact's current normal impulse, so the sweep converges to the fixed point of the
//!   paper's cone-radius iteration. Allocation-free.

use crate::contact::SolveStats;
use crate::math::dense::{cholesky_in_place, cholesky_solve, lu_solve_in_place};

/// What a row is, which fixes the set its impulse lives in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowKind {
    /// Equality row (joint, mimic): any sign.
    Bilateral,
    /// Unilateral row that is not a contact normal (joint limit, foundation element): `p ≥ 0`.
    Unilateral,
    /// Contact normal: `p ≥ 0`; its friction rows follow it directly.
    Normal,
    /// Friction row of the contact whose normal is row `normal_row`, coefficient `mu`. One row
    /// (planar problems: `|p| ≤ μ p_n`) or two consecutive rows (the disk `‖p‖ ≤ μ p_n`).
    Friction {
        /// Index of the contact's normal row.
        normal_row: usize,
        /// Coulomb coefficient μ.
        mu: f64,
    },
    /// Box-bounded row (joint Coulomb friction): `lo ≤ p ≤ hi` (N·s).
    Box {
        /// Lower bound (N·s).
        lo: f64,
        /// Upper bound (N·s).
        hi: f64,
    },
}

impl RowKind {
    /// Whether the row's impulse is pushed to be non-negative (normals, unilateral rows).
    pub fn is_push_only(self) -> bool {
        matches!(self, RowKind::Normal | RowKind::Unilateral)
    }
}

/// Compliance `ε = 1 / (h (h K + B))` of a row (m/s per N·s, or the row's own units); `+∞`
/// when `K = B = 0` (the row carries no force).
#[inline]
pub fn row_compliance(h: f64, stiffness: f64, damping: f64) -> f64 {
    1.0 / (h * (h * stiffness + damping))
}

/// Position feedback `K φ₀ / (h K + B)` (m/s) of a row with signed value `φ₀` (m; negative:
/// violated or penetrating).
#[inline]
pub fn row_position_feedback(h: f64, stiffness: f64, damping: f64, phi0: f64) -> f64 {
    let d = h * stiffness + damping;
    if d > 0.0 {
        stiffness * phi0 / d
    } else {
        0.0
    }
}

/// A dense problem `h w = A p + c`, `A` row-major `m × m` (symmetric positive definite).
#[derive(Clone, Copy)]
pub struct ImpulseProblem<'a> {
    /// `A = J M̃⁻¹ Jᵀ + diag(ε)`, row-major.
    pub a: &'a [f64],
    /// `c = J v* + position feedback`.
    pub c: &'a [f64],
    /// Row kinds.
    pub kinds: &'a [RowKind],
}

impl ImpulseProblem<'_> {
    /// Number of rows.
    #[inline]
    pub fn dim(&self) -> usize {
        self.c.len()
    }
    /// `(A p + c)_i`.
    #[inline]
    pub fn residual(&self, i: usize, p: &[f64]) -> f64 {
        let m = self.dim();
        let row = &self.a[i * m..(i + 1) * m];
        let mut s = self.c[i];
        for (aij, pj) in row.iter().zip(p) {
            s += aij * pj;
        }
        s
    }
    /// Whether every row is bilateral (the linear-solve case).
    pub fn is_bilateral_only(&self) -> bool {
        self.kinds.iter().all(|k| *k == RowKind::Bilateral)
    }
}

/// Options of the iterative solve.
#[derive(Clone, Copy, Debug)]
pub struct NsgsOptions {
    /// Maximum sweeps.
    pub max_sweeps: u32,
    /// Stop when the largest impulse change of a sweep is at most `tolerance · max(‖p‖∞, p_floor)`.
    pub tolerance: f64,
    /// Floor of the impulse scale in the stopping test (N·s).
    pub impulse_floor: f64,
}

/// Solves the bilateral-only problem `A p = −c` by Cholesky, in place in `scratch` (`m × m`);
/// `false` when `A` is not positive definite.
pub fn solve_bilateral(prob: &ImpulseProblem, scratch: &mut [f64], p: &mut [f64]) -> bool {
    let m = prob.dim();
    let l = &mut scratch[..m * m];
    l.copy_from_slice(&prob.a[..m * m]);
    if !cholesky_in_place(l, m) {
        return false;
    }
    for i in 0..m {
        p[i] = -prob.c[i];
    }
    cholesky_solve(l, m, p);
    true
}

/// Mode C by block Gauss–Seidel (see the module docs). `p` holds the warm start on entry and the
/// solution on exit. `stats.residual` is the last sweep's largest impulse change relative to
/// `max(‖p‖∞, impulse_floor)`.
pub fn solve_mode_c_nsgs(prob: &ImpulseProblem, opts: &NsgsOptions, p: &mut [f64]) -> SolveStats {
    let m = prob.dim();
    let mut stats = SolveStats::default();
    if m == 0 {
        stats.converged = true;
        return stats;
    }
    // the start must be feasible for the radius iteration to make sense
    for i in 0..m {
        p[i] = match prob.kinds[i] {
            RowKind::Normal | RowKind::Unilateral => p[i].max(0.0),
            RowKind::Box { lo, hi } => p[i].clamp(lo, hi),
            _ => p[i],
        };
    }
    for sweep in 0..opts.max_sweeps {
        let mut max_change: f64 = 0.0;
        let mut i = 0;
        while i < m {
            let kind = prob.kinds[i];
            let aii = prob.a[i * m + i];
            match kind {
                RowKind::Friction { normal_row, mu } => {
                    let pair = i + 1 < m && matches!(prob.kinds[i + 1], RowKind::Friction { normal_row: n2, .. } if n2 == normal_row);
                    let radius = mu * p[normal_row].max(0.0);
                    if pair {
                        let (old0, old1) = (p[i], p[i + 1]);
                        // g = residual without the pair's own contribution
                        let a00 = aii;
                        let a01 = prob.a[i * m + i + 1];
                        let a11 = prob.a[(i + 1) * m + i + 1];
                        let g0 = prob.residual(i, p) - a00 * old0 - a01 * old1;
                        let g1 = prob.residual(i + 1, p) - a01 * old0 - a11 * old1;
                        let (x0, x1) = minimise_on_disk(a00, a01, a11, g0, g1, radius);
                        p[i] = x0;
                        p[i + 1] = x1;
                        max_change = max_change.max((x0 - old0).abs()).max((x1 - old1).abs());
                        i += 2;
                        continue;
                    }
                    let old = p[i];
                    let new = if aii > 0.0 { (old - prob.residual(i, p) / aii).clamp(-radius, radius) } else { 0.0 };
                    p[i] = new;
                    max_change = max_change.max((new - old).abs());
                }
                _ => {
                    let old = p[i];
                    let unconstrained = if aii > 0.0 { old - prob.residual(i, p) / aii } else { old };
                    let new = match kind {
                        RowKind::Normal | RowKind::Unilateral => unconstrained.max(0.0),
                        RowKind::Box { lo, hi } => unconstrained.clamp(lo, hi),
                        _ => unconstrained,
                    };
                    p[i] = new;
                    max_change = max_change.max((new - old).abs());
                }
            }
            i += 1;
        }
        let scale = p[..m].iter().fold(opts.impulse_floor, |s, x| s.max(x.abs()));
        stats.iterations = sweep + 1;
        stats.residual = max_change / scale;
        if stats.residual <= opts.tolerance {
            stats.converged = true;
            break;
        }
    }
    stats
}

/// Scratch of [`polish`], sized once for the largest row count.
pub struct PolishScratch {
    /// Newton matrix (row-major, capacity `(rows + rows/2)²`).
    matrix: Vec<f64>,
    /// Right-hand side / Newton step.
    rhs: Vec<f64>,
    /// Per row: its unknown's index in the Newton system, or `usize::MAX` (fixed).
    unknown: Vec<usize>,
    /// Per row: how its impulse is determined this pass.
    role: Vec<Role>,
    /// Per row (rim friction groups, at the group's first row): the disk multiplier ν ≥ 0.
    multiplier: Vec<f64>,
    /// Per row (rim groups, first row): the index of ν in the Newton system.
    multiplier_unknown: Vec<usize>,
    /// Row-pivot permutation of the LU factorisation.
    pivot: Vec<usize>,
    /// The candidate impulse.
    trial: Vec<f64>,
}

/// How a row's impulse is determined in one polishing pass.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    /// An unknown whose residual `(A p + c)_i` must vanish.
    Free,
    /// Held at this value (a bound, or zero with a separating normal).
    Fixed(f64),
    /// A friction row on the rim of its disk: `(A p + c)_f + ν p_f = 0` and `‖p_f‖ = μ p_n`.
    Rim,
}

impl PolishScratch {
    /// Reserves scratch for up to `rows` rows.
    pub fn new(rows: usize) -> Self {
        let n = rows + rows / 2 + 1;
        PolishScratch {
            matrix: vec![0.0; n * n],
            rhs: vec![0.0; n],
            unknown: vec![usize::MAX; rows],
            role: vec![Role::Free; rows],
            multiplier: vec![0.0; rows],
            multiplier_unknown: vec![usize::MAX; rows],
            pivot: vec![0; n],
            trial: vec![0.0; rows],
        }
    }
}

/// The friction group starting at row `i` (if row `i` is a friction row): `(normal row, μ,
/// rows in the group)`.
fn friction_group(prob: &ImpulseProblem, i: usize) -> Option<(usize, f64, usize)> {
    match prob.kinds[i] {
        RowKind::Friction { normal_row, mu } => {
            let pair = i + 1 < prob.dim() && matches!(prob.kinds[i + 1], RowKind::Friction { normal_row: n2, .. } if n2 == normal_row);
            Some((normal_row, mu, if pair { 2 } else { 1 }))
        }
        _ => None,
    }
}

/// The first row of the friction group row `i` belongs to.
fn group_first_row(prob: &ImpulseProblem, i: usize) -> usize {
    match (prob.kinds[i], i.checked_sub(1).map(|k| prob.kinds[k])) {
        (RowKind::Friction { normal_row, .. }, Some(RowKind::Friction { normal_row: prev, .. })) if prev == normal_row => i - 1,
        _ => i,
    }
}

/// Active-set polish of a Mode C iterate. From `p` it guesses which rows are free, held at a
/// bound, or friction on the rim of its disk; on that active set the optimality conditions are
/// smooth equations — `(A p + c)_i = 0` on free rows, and for a rim group
/// `(A p + c)_f + ν p_f = 0`, `½ (‖p_f‖² − μ² p_n²) = 0` with a multiplier `ν ≥ 0` — which a few
/// Newton steps (dense LU) solve to round-off. A violated guess (a negative normal, ν < 0, a
/// free friction outside its disk, a held normal that attracts) changes that row's role and the
/// pass repeats. The candidate is accepted (written to `p`) only when its [`natural_residual`]
/// is at most `tolerance`; returns whether it was.
///
/// Why: Gauss–Seidel converges at a rate set by the smallest eigenvalue of `A`, and a statically
/// indeterminate support (a box on four corners, a foot on a plane) has one as small as the
/// contact compliance `ε` — tens of thousands of sweeps for the load distribution that the
/// compliance determines. On a known active set one direct solve gives it.
pub fn polish(prob: &ImpulseProblem, scratch: &mut PolishScratch, tolerance: f64, floor: f64, p: &mut [f64]) -> bool {
    let m = prob.dim();
    scratch.trial[..m].copy_from_slice(&p[..m]);
    initial_roles(prob, scratch);
    for _pass in 0..8 {
        newton_on_active_set(prob, scratch);
        if natural_residual(prob, &scratch.trial[..m], floor) <= tolerance {
            p[..m].copy_from_slice(&scratch.trial[..m]);
            return true;
        }
        if !update_roles(prob, scratch) {
            return false;
        }
    }
    false
}

/// The disk radius `μ p_n` of the friction group starting at row `i` and the norm of its
/// impulse, in the candidate `t`.
fn disk_radius_and_norm(t: &[f64], i: usize, normal_row: usize, mu: f64, len: usize) -> (f64, f64) {
    let radius = mu * t[normal_row].max(0.0);
    let norm = if len == 2 { t[i].hypot(t[i + 1]) } else { t[i].abs() };
    (radius, norm)
}

/// Roles from the current candidate: push-only rows with a positive impulse are free, others
/// held at zero; box rows at a bound are held there; a friction group with a positive normal is
/// on the rim when its impulse has (nearly) the disk's radius, else free.
fn initial_roles(prob: &ImpulseProblem, s: &mut PolishScratch) {
    let m = prob.dim();
    let mut i = 0;
    while i < m {
        if let Some((normal_row, mu, len)) = friction_group(prob, i) {
            let (radius, norm) = disk_radius_and_norm(&s.trial, i, normal_row, mu, len);
            let role = if !(radius > 0.0) {
                Role::Fixed(0.0)
            } else if norm >= radius * (1.0 - 1e-9) {
                Role::Rim
            } else {
                Role::Free
            };
            s.role[i..i + len].fill(role);
            s.multiplier[i] = 0.0;
            i += len;
            continue;
        }
        let t = s.trial[i];
        s.role[i] = match prob.kinds[i] {
            RowKind::Normal | RowKind::Unilateral if !(t > 0.0) => Role::Fixed(0.0),
            RowKind::Box { lo, .. } if t <= lo => Role::Fixed(lo),
            RowKind::Box { hi, .. } if t >= hi => Role::Fixed(hi),
            _ => Role::Free,
        };
        i += 1;
    }
}

/// Changes the role of every row whose role the candidate contradicts; `false` when none
/// changed (the active set is right but the tolerance was not met).
fn update_roles(prob: &ImpulseProblem, s: &mut PolishScratch) -> bool {
    let m = prob.dim();
    let mut changed = false;
    let mut i = 0;
    while i < m {
        if let Some((normal_row, mu, len)) = friction_group(prob, i) {
            let (radius, norm) = disk_radius_and_norm(&s.trial, i, normal_row, mu, len);
            let role = match s.role[i] {
                _ if !(radius > 0.0) => Role::Fixed(0.0),
                Role::Fixed(_) => Role::Free,
                Role::Rim if s.multiplier[i] < 0.0 => Role::Free,
                Role::Free if norm >= radius * (1.0 - 1e-12) => Role::Rim,
                r => r,
            };
            if role != s.role[i] {
                changed = true;
                s.role[i..i + len].fill(role);
                s.multiplier[i] = 0.0;
            }
            i += len;
            continue;
        }
        let t = s.trial[i];
        let w = prob.residual(i, &s.trial[..m]);
        let role = match (prob.kinds[i], s.role[i]) {
            // the candidate was clipped onto the bounds: a free row sitting on a bound and
            // pushed against it becomes held there
            (RowKind::Normal | RowKind::Unilateral, Role::Free) if t <= 0.0 && w > 0.0 => Role::Fixed(0.0),
            (RowKind::Normal | RowKind::Unilateral, Role::Fixed(_)) if w < 0.0 => Role::Free,
            (RowKind::Box { lo, .. }, Role::Free) if t <= lo && w > 0.0 => Role::Fixed(lo),
            (RowKind::Box { hi, .. }, Role::Free) if t >= hi && w < 0.0 => Role::Fixed(hi),
            (RowKind::Box { lo, .. }, Role::Fixed(v)) if v == lo && w < 0.0 => Role::Free,
            (RowKind::Box { hi, .. }, Role::Fixed(v)) if v == hi && w > 0.0 => Role::Free,
            (_, r) => r,
        };
        if role != s.role[i] {
            changed = true;
            s.role[i] = role;
        }
        i += 1;
    }
    changed
}

/// A few Newton steps on the equations of the current active set (see [`polish`]), from the
/// current candidate; the result is projected onto the feasible set.
fn newton_on_active_set(prob: &ImpulseProblem, s: &mut PolishScratch) {
    let m = prob.dim();
    // unknowns: free and rim rows, then one ν per rim group
    let mut n = 0;
    for i in 0..m {
        s.unknown[i] = usize::MAX;
        s.multiplier_unknown[i] = usize::MAX;
        match s.role[i] {
            Role::Fixed(v) => s.trial[i] = v,
            _ => {
                s.unknown[i] = n;
                n += 1;
            }
        }
    }
    let mut i = 0;
    while i < m {
        if let (Some((_, _, len)), Role::Rim) = (friction_group(prob, i), s.role[i]) {
            s.multiplier_unknown[i] = n;
            n += 1;
            // a rim group needs a positive normal; start ν from the least-squares fit of
            // w_f + ν p_f = 0
            let norm2: f64 = (i..i + len).map(|k| s.trial[k] * s.trial[k]).sum();
            if norm2 > 0.0 && s.multiplier[i] == 0.0 {
                let wp: f64 = (i..i + len).map(|k| prob.residual(k, &s.trial[..m]) * s.trial[k]).sum();
                s.multiplier[i] = (-wp / norm2).max(0.0);
            }
            i += len;
            continue;
        }
        i += 1;
    }
    for _newton in 0..12 {
        let mat = &mut s.matrix[..n * n];
        mat.fill(0.0);
        let mut worst: f64 = 0.0;
        for i in 0..m {
            let r = s.unknown[i];
            if r == usize::MAX {
                continue;
            }
            let mut f = prob.residual(i, &s.trial[..m]);
            for j in 0..m {
                let col = s.unknown[j];
                if col != usize::MAX {
                    mat[r * n + col] = prob.a[i * m + j];
                }
            }
            if s.role[i] == Role::Rim {
                let first = group_first_row(prob, i);
                let nu = s.multiplier[first];
                f += nu * s.trial[i];
                mat[r * n + r] += nu;
                mat[r * n + s.multiplier_unknown[first]] = s.trial[i];
            }
            s.rhs[r] = -f;
            // in impulse units, like the natural residual
            worst = worst.max(f.abs() / prob.a[i * m + i].max(f64::MIN_POSITIVE));
        }
        let mut i = 0;
        while i < m {
            let k = s.multiplier_unknown[i];
            if k != usize::MAX {
                let (normal_row, mu, len) = friction_group(prob, i).unwrap();
                let norm2: f64 = (i..i + len).map(|j| s.trial[j] * s.trial[j]).sum();
                let pn = s.trial[normal_row];
                let g = 0.5 * (norm2 - mu * mu * pn * pn);
                for j in i..i + len {
                    mat[k * n + s.unknown[j]] = s.trial[j];
                }
                if s.unknown[normal_row] != usize::MAX {
                    mat[k * n + s.unknown[normal_row]] = -mu * mu * pn;
                }
                s.rhs[k] = -g;
                // ½ (‖p_t‖² − μ² p_n²) / (μ p_n): the rim mismatch in impulse units
                worst = worst.max(g.abs() / (mu * pn.abs()).max(f64::MIN_POSITIVE));
                i += len;
                continue;
            }
            i += 1;
        }
        // converged to round-off: 1e-14 of the largest impulse
        let impulse_scale = s.trial[..m].iter().fold(f64::MIN_POSITIVE, |a, x| a.max(x.abs()));
        if worst <= 1e-14 * impulse_scale || !lu_solve_in_place(mat, n, &mut s.pivot[..n], &mut s.rhs[..n]) {
            break;
        }
        let mut step: f64 = 0.0;
        for i in 0..m {
            let r = s.unknown[i];
            if r != usize::MAX {
                s.trial[i] += s.rhs[r];
                step = step.max(s.rhs[r].abs());
            }
            let k = s.multiplier_unknown[i];
            if k != usize::MAX {
                s.multiplier[i] += s.rhs[k];
            }
        }
        let scale = s.trial[..m].iter().fold(1e-300f64, |a, x| a.max(x.abs()));
        if step <= 1e-15 * scale {
            break;
        }
    }
    project_feasible(prob, &mut s.trial[..m]);
}

/// Clips `p` onto the feasible set: normals and unilateral rows ≥ 0, box rows into their
/// bounds, friction into the disk (interval) of radius `μ p_n`.
fn project_feasible(prob: &ImpulseProblem, p: &mut [f64]) {
    let m = prob.dim();
    for i in 0..m {
        match prob.kinds[i] {
            RowKind::Normal | RowKind::Unilateral => p[i] = p[i].max(0.0),
            RowKind::Box { lo, hi } => p[i] = p[i].clamp(lo, hi),
            _ => {}
        }
    }
    let mut i = 0;
    while i < m {
        if let RowKind::Friction { normal_row, mu } = prob.kinds[i] {
            let pair = i + 1 < m && matches!(prob.kinds[i + 1], RowKind::Friction { normal_row: n2, .. } if n2 == normal_row);
            let radius = mu * p[normal_row];
            if pair {
                let norm = (p[i] * p[i] + p[i + 1] * p[i + 1]).sqrt();
                if norm > radius {
                    let s = if norm > 0.0 { radius / norm } else { 0.0 };
                    p[i] *= s;
                    p[i + 1] *= s;
                }
                i += 2;
                continue;
            }
            p[i] = p[i].clamp(-radius, radius);
        }
        i += 1;
    }
}

/// `argmin ½ xᵀ S x + gᵀ x` over `‖x‖ ≤ ρ`, `S = [[a00, a01], [a01, a11]]` positive definite:
/// the unconstrained minimiser when it lies in the disk, otherwise `x(ν) = −(S + ν I)⁻¹ g` with
/// `‖x(ν)‖ = ρ`, found by Newton on the secular equation `1/ρ − 1/‖x(ν)‖ = 0` (Moré–Sorensen;
/// convex and monotone in ν, so Newton from ν = 0 converges monotonically).
pub fn minimise_on_disk(a00: f64, a01: f64, a11: f64, g0: f64, g1: f64, radius: f64) -> (f64, f64) {
    if !(radius > 0.0) {
        return (0.0, 0.0);
    }
    let det = a00 * a11 - a01 * a01;
    if det > 0.0 {
        let x0 = -(a11 * g0 - a01 * g1) / det;
        let x1 = -(-a01 * g0 + a00 * g1) / det;
        if x0 * x0 + x1 * x1 <= radius * radius {
            return (x0, x1);
        }
    }
    // eigen-decomposition of S: S = Q diag(l0, l1) Qᵀ, Q = [[c, −s], [s, c]]
    let half_diff = 0.5 * (a00 - a11);
    let r = (half_diff * half_diff + a01 * a01).sqrt();
    let mean = 0.5 * (a00 + a11);
    let (l0, l1) = (mean + r, mean - r);
    let theta = 0.5 * a01.atan2(half_diff);
    let (s, c) = theta.sin_cos();
    // g in the eigenbasis
    let h0 = c * g0 + s * g1;
    let h1 = -s * g0 + c * g1;
    if h0 == 0.0 && h1 == 0.0 {
        return (0.0, 0.0);
    }
    // ν ≥ max(0, −l1) keeps S + ν I positive semidefinite
    let mut nu = (-l1).max(0.0);
    for _ in 0..100 {
        let (d0, d1) = (l0 + nu, l1 + nu);
        let (y0, y1) = (h0 / d0, h1 / d1);
        let norm2 = y0 * y0 + y1 * y1;
        let norm = norm2.sqrt();
        if !norm.is_finite() {
            nu += 1e-12 * (1.0 + nu);
            continue;
        }
        // φ(ν) = 1/ρ − 1/‖y‖;  φ'(ν) = −(Σ hₖ² / dₖ³) / ‖y‖³
        let phi = 1.0 / radius - 1.0 / norm;
        let dphi = -(y0 * y0 / d0 + y1 * y1 / d1) / (norm2 * norm);
        let step = phi / dphi;
        nu = (nu - step).max(0.0);
        if step.abs() <= 1e-15 * (1.0 + nu) {
            break;
        }
    }
    let (y0, y1) = (-h0 / (l0 + nu), -h1 / (l1 + nu));
    // back to the original basis, then onto the circle (round-off)
    let (mut x0, mut x1) = (c * y0 - s * y1, s * y0 + c * y1);
    let norm = (x0 * x0 + x1 * x1).sqrt();
    if norm > radius {
        x0 *= radius / norm;
        x1 *= radius / norm;
    }
    (x0, x1)
}

/// Scaled natural residual of a Mode C solution: the largest `|pᵢ − Π(pᵢ − (A p + c)ᵢ / Aᵢᵢ)|`
/// over scalar rows and, for a friction pair, the same with the disk projection and one scale (the larger diagonal entry of the pair), relative to
/// `max(‖p‖∞, floor)`. Zero exactly at the solution (the KKT check of the method's docs page).
pub fn natural_residual(prob: &ImpulseProblem, p: &[f64], floor: f64) -> f64 {
    let m = prob.dim();
    let scale = p[..m].iter().fold(floor, |s, x| s.max(x.abs()));
    let mut worst: f64 = 0.0;
    let mut i = 0;
    while i < m {
        let aii = prob.a[i * m + i].max(f64::MIN_POSITIVE);
        let step = |k: usize| p[k] - prob.residual(k, p) / prob.a[k * m + k].max(f64::MIN_POSITIVE);
        match prob.kinds[i] {
            RowKind::Friction { normal_row, mu } => {
                let radius = mu * p[normal_row].max(0.0);
                let pair = i + 1 < m && matches!(prob.kinds[i + 1], RowKind::Friction { normal_row: n2, .. } if n2 == normal_row);
                if pair {
                    // one scale for the pair: with per-row scales the step −D⁻¹w is not parallel
                    // to p at a rim solution (w ∥ −p), and the residual would not vanish there
                    let scale = prob.a[i * m + i].max(prob.a[(i + 1) * m + i + 1]).max(f64::MIN_POSITIVE);
                    let (mut y0, mut y1) = (p[i] - prob.residual(i, p) / scale, p[i + 1] - prob.residual(i + 1, p) / scale);
                    let n = (y0 * y0 + y1 * y1).sqrt();
                    if n > radius {
                        y0 *= radius / n;
                        y1 *= radius / n;
                    }
                    worst = worst.max((p[i] - y0).abs()).max((p[i + 1] - y1).abs());
                    i += 2;
                    continue;
                }
                worst = worst.max((p[i] - step(i).clamp(-radius, radius)).abs());
            }
            kind => {
                let y = p[i] - prob.residual(i, p) / aii;
                let y = match kind {
                    RowKind::Normal | RowKind::Unilateral => y.max(0.0),
                    RowKind::Box { lo, hi } => y.clamp(lo, hi),
                    _ => y,
                };
                worst = worst.max((p[i] - y).abs());
            }
        }
        i += 1;
    }
    worst / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_minimiser_matches_a_brute_force_search() {
        // S anisotropic and coupled, g pulling outside the disk
        let (a00, a01, a11, g0, g1, rho) = (2.0, 0.7, 0.5, -3.0, 1.0, 0.8);
        let (x0, x1) = minimise_on_disk(a00, a01, a11, g0, g1, rho);
        let f = |x: f64, y: f64| 0.5 * (a00 * x * x + 2.0 * a01 * x * y + a11 * y * y) + g0 * x + g1 * y;
        let best = (0..20000)
            .map(|k| {
                let t = k as f64 * std::f64::consts::TAU / 20000.0;
                f(rho * t.cos(), rho * t.sin())
            })
            .fold(f64::INFINITY, f64::min);
        assert!((x0 * x0 + x1 * x1).sqrt() <= rho * (1.0 + 1e-12));
        assert!(f(x0, x1) <= best + 1e-9, "{} vs {best}", f(x0, x1));
        // inside the disk: the unconstrained minimiser
        let (y0, y1) = minimise_on_disk(a00, a01, a11, 0.1, -0.05, 10.0);
        assert!((a00 * y0 + a01 * y1 + 0.1).abs() < 1e-14 && (a01 * y0 + a11 * y1 - 0.05).abs() < 1e-14);
    }

    #[test]
    fn cholesky_solves_a_spd_system() {
        let a = [4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0];
        let mut l = a;
        assert!(cholesky_in_place(&mut l, 3));
        let mut x = [1.0, 2.0, 3.0];
        cholesky_solve(&l, 3, &mut x);
        for i in 0..3 {
            let ax: f64 = (0..3).map(|j| a[i * 3 + j] * x[j]).sum();
            assert!((ax - [1.0, 2.0, 3.0][i]).abs() < 1e-14);
        }
        let mut not_spd = [1.0, 2.0, 2.0, 1.0];
        assert!(!cholesky_in_place(&mut not_spd, 2));
    }

    /// Two coupled unilateral rows (W = [[1, 1], [1, 1]], R = I, b = (−1, 0.1)): the max law gives λ = (0.5, 0).
    #[test]
    fn coupled_unilateral_rows_follow_the_max_law() {
        let a = [2.0, 1.0, 1.0, 2.0];
        let c = [-1.0, 0.1];
        let kinds = [RowKind::Unilateral, RowKind::Unilateral];
        let prob = ImpulseProblem { a: &a, c: &c, kinds: &kinds };
        let mut p = [0.0; 2];
        let st = solve_mode_c_nsgs(&prob, &NsgsOptions { max_sweeps: 200, tolerance: 1e-14, impulse_floor: 1e-12 }, &mut p);
        assert!(st.converged);
        assert!((p[0] - 0.5).abs() < 1e-12 && p[1].abs() < 1e-12, "{p:?}");
        assert!(natural_residual(&prob, &p, 1e-12) < 1e-12);
    }
}

