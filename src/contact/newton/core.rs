//! The non-smooth Newton iteration of Macklin et al. in impulse space, on a dense Delassus
//! matrix: NCP functions, the friction compliance, the conjugate-residual solver, and the
//! iteration itself. Hand-built problems (unit tests, the paper's small examples) and the
//! engine's step ([`super::NewtonScheme`]) both run through [`solve`].
//!
//! # The equations in impulse form
//!
//! The paper's unknowns are the end-of-step velocity `u` and the multipliers `λ`; we store the
//! impulses `p = h λ` (N·s) and write every residual in m/s. With `D = J̄ M̃⁻¹ J̄ᵀ` (the Delassus
//! matrix of the unscaled geometric rows `J̄`) and `ũ = v*` the unconstrained velocity:
//!
//! - momentum (paper eq. 46 times `h`): `g = M̃ (u − ũ) − Jᵀ p`, with `J = diag(α) J̄` (the
//!   normal rows scaled by the Fischer–Burmeister partial α, paper eq. 57; α = 1 on other rows,
//!   0 on inactive friction rows);
//! - contact normal and joint limit (paper §6, App. A.1): `FB(a, b) = 0` with
//!   `a = gap/h + (J̄ u)_i` (the end-of-step gap `gap + h J̄ᵢ u` divided by `h`, m/s) and
//!   `b = rᵢ pᵢ`, `rᵢ = Dᵢᵢ` the complementarity scale (paper eq. 66: `r = h² [J̄ M̃⁻¹ J̄ᵀ]ᵢᵢ`
//!   in the paper's force units is `Dᵢᵢ` in ours);
//! - friction pair (paper §7 and App. A.2, the slip speed in the denominator, not its square):
//!   `(J̄ u)_f + W' p_f = 0` with the friction compliance `W' = W/h` frozen within an iteration,
//!   computed from the current slip `a = ‖(J̄ u)_f‖` and `σ = r_f (μ p_n − ‖p_f‖)`; inactive
//!   (`μ p_n ≤ 0`): `p_f = 0`;
//! - joint Coulomb friction (not in the paper): `|pᵢ| ≤ B` as a box constraint, with the
//!   semismooth Newton step of the mid function;
//! - bilateral rows (mimic couplings): `error/h + (J̄ u)_i + e pᵢ = 0`.
//!
//! With [`NewtonJacobian::Exact`] (the default preset) the rigid iteration instead runs on the
//! impulses alone with `u = ũ + M̃⁻¹ J̄ᵀ p`, friction written as `r p_f − Π(r p_f − w_f)` (Π the
//! projection on the disk of radius `r μ p_n`), and the exact generalized Jacobian of every
//! row's natural residual factorised by LU (`solve_exact` below). The rest of this section is
//! the frozen-compliance form.
//!
//! Each Newton iteration solves the Schur complement (paper eq. 59–61)
//! `[J M̃⁻¹ Jᵀ + C + ε I] x = J M̃⁻¹ g − η` for the impulse increment `x`, and updates
//! `p ← p + t x`, `u ← u + t M̃⁻¹ (Jᵀ x − g)`. `C` is diagonal here (`β r` on normals, `W'` on
//! friction rows, the row compliance on bilateral rows).
//!
//! # Velocities without the mass matrix
//!
//! Every iterate has the form `u = s ũ + M̃⁻¹ J̄ᵀ y`: `s` is 0 at the paper's start `u⁰ = 0` and
//! 1 at `u⁰ = ũ`, and `y` is a vector of row impulses. The update keeps that form
//! (`s ← (1 − t) s + t`, `y ← (1 − t) y + t α∘(p + x)`), so the iteration runs on `D`, `J̄ ũ` and
//! row vectors only, and the step turns `y` into a velocity once at the end.

use crate::math::dense::{cholesky_in_place, cholesky_solve, lu_in_place_block, lu_solve_block};
use crate::math::dense::with_avx2;
#[cfg(test)]
use crate::math::dense::{lu_in_place, lu_in_place_block_portable, lu_solve};

/// A row of the Newton problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NewtonRow {
    /// Position-level unilateral row (contact normal, joint limit): `gap + h (J̄ u)ᵢ ≥ 0`,
    /// `pᵢ ≥ 0`, complementary. `gap` (m or rad) is the start-of-step value (negative: overlap).
    Unilateral {
        /// Start-of-step gap (m or rad).
        gap: f64,
    },
    /// The first of a contact's two friction rows (the second is the next row, [`NewtonRow::FrictionSecond`]).
    FrictionPair {
        /// The contact's normal row.
        normal_row: usize,
        /// Coulomb coefficient.
        mu: f64,
    },
    /// The second row of the friction pair that starts at the previous row.
    FrictionSecond,
    /// A velocity-level friction row with a fixed bound (joint Coulomb friction): `|pᵢ| ≤ bound`,
    /// `(J̄ u)ᵢ = 0` strictly inside, opposing the motion at the bound.
    BoundedFriction {
        /// Impulse bound (N·s or N·m·s).
        bound: f64,
    },
    /// Bilateral position row: `error/h + (J̄ u)ᵢ + compliance · pᵢ = 0`.
    Bilateral {
        /// Start-of-step constraint error (m or rad).
        error: f64,
        /// Row compliance (m/s per N·s); 0 for a hard constraint.
        compliance: f64,
    },
}

/// The NCP function (paper §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NcpFunction {
    /// Fischer–Burmeister `a + b − √(a² + b²)` (the paper's default: smoother force
    /// distribution on redundant contact sets).
    #[default]
    FischerBurmeister,
    /// `min(a, b)`.
    MinMap,
}

impl NcpFunction {
    /// `φ(a, b)` with its partials `(∂/∂a, ∂/∂b)`.
    pub fn value(self, a: f64, b: f64) -> (f64, f64, f64) {
        match self {
            NcpFunction::FischerBurmeister => fischer_burmeister(a, b),
            NcpFunction::MinMap => min_map(a, b),
        }
    }
}

/// The complementarity scale `r` of each unilateral row (paper §6.1, eq. 66; Fig. 17 ablations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComplementarityScale {
    /// `r = h² [J̄ M̃⁻¹ J̄ᵀ]ᵢᵢ`, the row's inverse effective mass (the paper's choice).
    #[default]
    EffectiveMass,
    /// `r = h²` for every row (works for moderate mass ratios).
    Global,
    /// `r = 1` (no preconditioning; fails with large masses).
    Identity,
}

/// The linear solver of each Newton iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearSolver {
    /// Jacobi-preconditioned conjugate residual, applied matrix-free (paper §8.3), a fixed
    /// iteration budget per Newton iteration.
    #[default]
    Pcr,
    /// Dense Cholesky factorisation of the Schur complement (exact; for small row counts).
    Direct,
    /// `direct` up to [`AUTO_DIRECT_MAX_ROWS`] rows, `pcr` above.
    Auto,
}

/// How each Newton iteration linearises the friction and contact laws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NewtonJacobian {
    /// The paper's form (§7, App. A.2): friction as a compliance `W` frozen within an iteration,
    /// the Schur complement symmetric positive definite (conjugate residual or Cholesky).
    #[default]
    FrozenCompliance,
    /// The exact generalized Jacobian of every row's natural residual (ours, rigid rows only):
    /// friction is `r p_f − Π(r p_f − w_f)` with Π the projection on the disk of radius
    /// `r μ p_n`, and its Newton step includes the projection's derivative — with respect to the
    /// slip, the friction impulse *and* the normal impulse — so the step is exact when sliding.
    /// The system is unsymmetric: dense LU with partial pivoting, backtracking (Armijo) on
    /// `½‖F‖²`, for which the exact step is a descent direction.
    Exact,
}

/// The largest row count [`LinearSolver::Auto`] factorises densely (a factorisation costs m³/3
/// multiply-adds: 0.7 M at 128 rows, about the cost of 40 conjugate-residual iterations).
pub const AUTO_DIRECT_MAX_ROWS: usize = 128;

/// Options of one solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonOptions {
    /// Time step h (s).
    pub timestep_s: f64,
    /// NCP function.
    pub ncp: NcpFunction,
    /// Complementarity scale.
    pub scale: ComplementarityScale,
    /// Linear solver.
    pub linear_solver: LinearSolver,
    /// Newton iterations at most.
    pub max_newton_iterations: u32,
    /// Conjugate-residual iterations per Newton iteration at most.
    pub max_linear_iterations: u32,
    /// Relative stop of the conjugate residual (`0`: run the whole budget, as the paper).
    pub linear_tolerance: f64,
    /// Stop when the largest row residual is at most this (m/s); `0`: never stop early.
    pub tolerance_m_s: f64,
    /// Step fraction t (the paper's damping, 0.75).
    pub step_fraction: f64,
    /// Backtracking line search on ‖η‖₂, starting from `step_fraction`.
    pub line_search: bool,
    /// Diagonal regularisation ε of the Schur complement (m/s per N·s).
    pub regularization: f64,
    /// The linearisation of the laws ([`NewtonJacobian::Exact`]: dense LU, rigid rows).
    pub jacobian: NewtonJacobian,
}

/// What a solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NewtonStats {
    /// Newton iterations (linear solves) performed.
    pub newton_iterations: u32,
    /// Conjugate-residual iterations, summed over the Newton iterations.
    pub linear_iterations: u32,
    /// Projected Gauss–Seidel sweeps of the exact iteration's rescue (0 unless the exact
    /// iteration stalled; see docs/newton.md, "The exact Jacobian").
    pub rescue_sweeps: u32,
    /// Rounds of the proximal-point rescue of a stalled exact iteration (0 unless it stalled;
    /// see docs/newton.md, "The exact Jacobian").
    pub proximal_rounds: u32,
    /// The largest row residual at exit (m/s).
    pub residual_m_s: f64,
    /// The momentum residual at exit as a velocity error, `max |H₀⁻¹ g|` with
    /// `g = H₀ (u − ũ) − J̄ᵀ p` (m/s; paper §3.6). Zero in the rigid-only iteration, whose iterate
    /// `u = s ũ + M̃⁻¹ J̄ᵀ y` balances momentum by construction; the deformables' iteration
    /// ([`super::fem`]) moves `u` and `p` separately and the step is converged only when this and
    /// the rows' residual are both within the tolerance.
    pub momentum_residual_m_s: f64,
    /// Whether the residual reached the tolerance.
    pub converged: bool,
}

/// A Newton problem on a dense Delassus matrix.
#[derive(Clone, Copy, Debug)]
pub struct NewtonProblem<'a> {
    /// `D = J̄ M̃⁻¹ J̄ᵀ`, row-major `m × m` (m/s per N·s).
    pub delassus: &'a [f64],
    /// `J̄ ũ`: the rows' velocities at the unconstrained velocity (m/s or rad/s).
    pub free_row_velocity: &'a [f64],
    /// The rows.
    pub rows: &'a [NewtonRow],
    /// The kinematic trees each row touches (the rows stage's `row_trees`, `usize::MAX` for
    /// none), when known: rows that share no tree are not coupled by `D`, which gives the
    /// problem's consecutive blocks without scanning `D` ([`consecutive_blocks`]). `None`: the
    /// blocks are found from the nonzeros of `D`.
    pub row_trees: Option<&'a [(usize, usize)]>,
}

impl NewtonProblem<'_> {
    /// Number of rows.
    pub fn dim(&self) -> usize {
        self.rows.len()
    }
}

/// The iterate: impulses `p`, the velocity representation `u = s ũ + M̃⁻¹ J̄ᵀ y`.
pub struct NewtonIterate<'a> {
    /// Impulses (N·s), the warm start on entry.
    pub impulse: &'a mut [f64],
    /// Row impulses of the velocity representation.
    pub velocity_impulse: &'a mut [f64],
    /// Weight of ũ in the velocity.
    pub free_weight: f64,
}

/// `φ_FB(a, b)` with its partials `(∂/∂a, ∂/∂b)`; at `(0, 0)` the paper's choice `(0, 1)`.
pub fn fischer_burmeister(a: f64, b: f64) -> (f64, f64, f64) {
    let root = a.hypot(b);
    if root == 0.0 {
        return (0.0, 0.0, 1.0);
    }
    (a + b - root, 1.0 - a / root, 1.0 - b / root)
}

/// `min(a, b)` with its partials (`(1, 0)` when `a ≤ b`).
pub fn min_map(a: f64, b: f64) -> (f64, f64, f64) {
    if a <= b {
        (a, 1.0, 0.0)
    } else {
        (b, 0.0, 1.0)
    }
}

/// Relative floor of the Fischer–Burmeister friction denominator against its numerator (keeps
/// `W ≥ 0` and at most `r_f / 1e-12` when the friction impulse lies far outside the cone or the
/// cone is vanishingly small).
const FRICTION_DENOMINATOR_FLOOR: f64 = 1e-12;

/// The friction compliance `W` (paper App. A.2, with the slip speed `a` in the denominator):
/// `a` the slip speed (m/s), `r_f` the friction scale, `cone` = `r_f μ λ_n` and `sigma` =
/// `r_f (μ λ_n − ‖λ_f‖)` (both m/s). Returns `W / r_f`-scaled compliance `W` in the units of `r_f`.
pub fn friction_compliance(ncp: NcpFunction, a: f64, r_f: f64, cone: f64, sigma: f64) -> f64 {
    match ncp {
        NcpFunction::FischerBurmeister => {
            let root = a.hypot(sigma);
            let num = root - sigma;
            if num <= 0.0 {
                return 0.0; // a = 0 inside the cone (and the 0/0 case): sticking, W = 0
            }
            let den = a + cone - root;
            // W/r_f is at most 1/FRICTION_DENOMINATOR_FLOOR: finite however small the cone
            if den <= FRICTION_DENOMINATOR_FLOOR * num {
                r_f / FRICTION_DENOMINATOR_FLOOR
            } else {
                r_f * num / den
            }
        }
        NcpFunction::MinMap => {
            if a <= sigma {
                0.0
            } else if a - sigma >= cone / FRICTION_DENOMINATOR_FLOOR {
                r_f / FRICTION_DENOMINATOR_FLOOR
            } else {
                r_f * (a - sigma) / cone
            }
        }
    }
}

/// The error of Coulomb's law with maximal dissipation on one contact (m/s):
/// `‖r p − Π(r p − w)‖` with Π the projection on the disk of radius `cone` (= `r μ p_n`, clamped
/// at 0); zero iff `p` is inside the cone and opposes the slip `w` when sliding, `w = 0` inside.
pub fn disk_residual(r: f64, p: [f64; 2], w: [f64; 2], cone: f64) -> f64 {
    let trial = [r * p[0] - w[0], r * p[1] - w[1]];
    let norm = trial[0].hypot(trial[1]);
    let radius = cone.max(0.0);
    let k = if norm > radius { radius / norm } else { 1.0 };
    (r * p[0] - k * trial[0]).hypot(r * p[1] - k * trial[1])
}

/// Scratch of [`solve`], sized for at most `capacity` rows.
pub struct NewtonScratch {
    /// `J̄ u` per row.
    row_velocity: Vec<f64>,
    /// α per row (the Jacobian scaling).
    alpha: Vec<f64>,
    /// `C` per row (diagonal).
    compliance: Vec<f64>,
    /// η per row.
    residual: Vec<f64>,
    /// The row's error for the stopping test (m/s).
    natural: Vec<f64>,
    /// Right-hand side.
    rhs: Vec<f64>,
    /// Newton increment x.
    increment: Vec<f64>,
    /// Dense Schur complement / factor (direct solver), `capacity²`.
    dense: Vec<f64>,
    /// Conjugate-residual vectors.
    cr: [Vec<f64>; 6],
    /// Trial iterate of the line search.
    trial_impulse: Vec<f64>,
    trial_velocity_impulse: Vec<f64>,
    /// The iterate with the smallest residual so far (returned when the iteration ends
    /// unconverged).
    best_impulse: Vec<f64>,
    best_velocity_impulse: Vec<f64>,
    /// The warm start and the exact iteration's result while the frozen-compliance fallback
    /// runs ([`NewtonJacobian::Exact`]).
    warm_impulse: Vec<f64>,
    exact_impulse: Vec<f64>,
    /// Row pivots of the LU factorisation ([`NewtonJacobian::Exact`]).
    pivot: Vec<usize>,
    /// The problem's consecutive blocks ([`consecutive_blocks`]): their ends, and its scratch.
    block_ends: Vec<usize>,
    block_reach: Vec<usize>,
    tree_last_row: Vec<(usize, usize)>,
    /// `D + R` and `J̄ũ − R p_k` of the proximal-point rescue ([`NewtonJacobian::Exact`]).
    proximal_delassus: Vec<f64>,
    proximal_free: Vec<f64>,
    /// The dedicated pool of the Delassus products (`None`: serial).
    pool: Option<rayon::ThreadPool>,
}

impl NewtonScratch {
    /// Scratch for up to `capacity` rows, serial.
    pub fn new(capacity: usize) -> Self {
        Self::with_threads(capacity, 1)
    }

    /// Scratch for up to `capacity` rows; with `threads > 1` a dedicated rayon pool of that size
    /// runs the Delassus products of problems with at least [`PARALLEL_ROWS`] rows.
    pub fn with_threads(capacity: usize, threads: usize) -> Self {
        let v = || vec![0.0; capacity];
        NewtonScratch {
            row_velocity: v(),
            alpha: v(),
            compliance: v(),
            residual: v(),
            natural: v(),
            rhs: v(),
            increment: v(),
            dense: vec![0.0; capacity * capacity],
            cr: [v(), v(), v(), v(), v(), v()],
            trial_impulse: v(),
            trial_velocity_impulse: v(),
            best_impulse: v(),
            best_velocity_impulse: v(),
            pivot: vec![0; capacity],
            block_ends: vec![0; capacity],
            block_reach: vec![0; capacity],
            tree_last_row: vec![(0, 0); 2 * capacity],
            warm_impulse: v(),
            exact_impulse: v(),
            proximal_delassus: vec![0.0; capacity * capacity],
            proximal_free: v(),
            pool: if threads > 1 { rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("newton-{i}")).build().ok() } else { None },
        }
    }
}

/// Row count from which the Delassus products run on the method's own thread pool when it has
/// one (`threads > 1`; one task per block of 32 rows, every row's sum sequential, so results do
/// not depend on the thread count).
pub const PARALLEL_ROWS: usize = 192;

/// `out = D x` for a row-major `m × m` matrix; on `pool` when given and `m ≥` [`PARALLEL_ROWS`]
/// (rayon allocates and synchronises inside its pool: the serial path is the allocation- and
/// lock-free one).
pub fn delassus_product(d: &[f64], m: usize, x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    let row = |i: usize| -> f64 { d[i * m..(i + 1) * m].iter().zip(&x[..m]).map(|(a, b)| a * b).sum() };
    if let Some(pool) = pool.filter(|_| m >= PARALLEL_ROWS) {
        use rayon::prelude::*;
        pool.install(|| {
            out[..m].par_chunks_mut(32).enumerate().for_each(|(c, chunk)| {
                for (k, o) in chunk.iter_mut().enumerate() {
                    *o = row(c * 32 + k);
                }
            })
        });
    } else {
        for (i, o) in out[..m].iter_mut().enumerate() {
            *o = row(i);
        }
    }
}

/// `out = D x` for a row-major `m × m` matrix that is symmetric bit for bit (the Delassus
/// matrices of [`crate::step`] and of the primal FEM form are assembled so): summed as
/// `Σⱼ xⱼ D[j, :]`, contiguous rows that vectorise, skipping `xⱼ = 0`. Each `out[i]` adds the same
/// products `D[i][j] xⱼ` in the same order as [`delassus_product`]'s serial path, so the results
/// agree bit for bit (up to the sign of exact zeros).
pub fn symmetric_delassus_product(d: &[f64], m: usize, x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    block_delassus_product(d, m, std::slice::from_ref(&m), x, out, pool);
}

/// [`symmetric_delassus_product`] on a matrix whose nonzeros all lie in the diagonal blocks that
/// end at `block_ends` (ascending, the last one `m`; the consecutive blocks of
/// [`consecutive_blocks`]): each block's rows are combined over the block's columns only. The
/// products skipped are those with an entry that is exactly zero, which add nothing to a sum
/// (up to the sign of an exact zero), so the result is bit-identical to the whole-matrix product.
pub fn block_delassus_product(d: &[f64], m: usize, block_ends: &[usize], x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    if pool.is_some() && m >= PARALLEL_ROWS {
        return delassus_product(d, m, x, out, pool);
    }
    with_avx2!(block_delassus_product_serial(d, m, block_ends, x, out))
}

#[inline(always)]
fn block_delassus_product_serial(d: &[f64], m: usize, block_ends: &[usize], x: &[f64], out: &mut [f64]) {
    let mut start = 0;
    for &end in block_ends {
        let out = &mut out[start..end];
        out.fill(0.0);
        for (j, &xj) in x[start..end].iter().enumerate() {
            if xj != 0.0 {
                let row = (start + j) * m;
                for (o, dj) in out.iter_mut().zip(&d[row + start..row + end]) {
                    *o += dj * xj;
                }
            }
        }
        start = end;
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Jacobi-preconditioned conjugate residual (paper §8.3) on `A x = b`, `A` symmetric positive
/// definite given by `apply` (`out = A v`), `inv_diag` the preconditioner `1 / diag(A)`. Starts
/// from `x` (zero for the paper's cold start); stops after `max_iterations` or when
/// `rᵀ z ≤ tol_rel² r₀ᵀ z₀`. Returns the iterations done. The preconditioned residual norm never
/// increases, which makes early termination safe.
pub fn conjugate_residual(
    apply: &mut dyn FnMut(&[f64], &mut [f64]),
    b: &[f64],
    inv_diag: &[f64],
    x: &mut [f64],
    max_iterations: u32,
    tol_rel: f64,
    scratch: &mut [Vec<f64>; 6],
) -> u32 {
    let m = b.len();
    let [r, z, p, az, ap, q] = scratch;
    let (r, z, p, az, ap, q) = (&mut r[..m], &mut z[..m], &mut p[..m], &mut az[..m], &mut ap[..m], &mut q[..m]);
    apply(x, az);
    for i in 0..m {
        r[i] = b[i] - az[i];
        z[i] = inv_diag[i] * r[i];
    }
    p.copy_from_slice(z);
    apply(z, az);
    ap.copy_from_slice(az);
    let mut rho = dot(z, az);
    let gamma0 = dot(r, z);
    const TINY: f64 = 1e-300;
    let mut k = 0;
    while k < max_iterations {
        for i in 0..m {
            q[i] = inv_diag[i] * ap[i];
        }
        let sigma = dot(ap, q);
        if sigma <= TINY || rho <= TINY {
            break;
        }
        let a = rho / sigma;
        for i in 0..m {
            x[i] += a * p[i];
            r[i] -= a * ap[i];
            z[i] -= a * q[i];
        }
        k += 1;
        if tol_rel > 0.0 && dot(r, z) <= tol_rel * tol_rel * gamma0 {
            break;
        }
        apply(z, az);
        let rho_next = dot(z, az);
        let beta = rho_next / rho;
        rho = rho_next;
        for i in 0..m {
            p[i] = z[i] + beta * p[i];
            ap[i] = az[i] + beta * ap[i];
        }
    }
    k
}

/// Evaluates every row at the iterate: `J̄ u`, α, C and η; returns the largest row error (the
/// natural residual of each row's law, m/s: `|min(a, b)|` on unilateral rows, the distance to the
/// projection on the friction disk, `|η|` on bilateral rows) and `‖η‖₂²` (the line search's merit).
fn evaluate_rows(prob: &NewtonProblem, opts: &NewtonOptions, impulse: &[f64], velocity_impulse: &[f64], free_weight: f64, scr: &mut NewtonScratch) -> (f64, f64) {
    let m = prob.dim();
    let d = prob.delassus;
    delassus_product(d, m, velocity_impulse, &mut scr.row_velocity, scr.pool.as_ref());
    for i in 0..m {
        scr.row_velocity[i] += free_weight * prob.free_row_velocity[i];
    }
    let scale = |i: usize| d[i * m + i];
    let out = RowLaws { alpha: &mut scr.alpha[..m], compliance: &mut scr.compliance[..m], residual: &mut scr.residual[..m], natural: &mut scr.natural[..m] };
    evaluate_laws(prob.rows, opts, impulse, &scr.row_velocity[..m], scale, out);
    // a NaN row makes the error infinite (f64::max would skip it)
    let inf_norm = scr.natural[..m].iter().fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(*e) });
    (inf_norm, scr.residual[..m].iter().map(|e| e * e).sum())
}

/// Where [`evaluate_laws`] writes, per row: the Jacobian scaling α, the diagonal of `C`, the
/// Newton residual η and the row's natural error (m/s).
pub struct RowLaws<'a> {
    /// α (FB partial on normal rows, 0 on inactive friction rows, 1 elsewhere).
    pub alpha: &'a mut [f64],
    /// `C`, the row's compliance in the Schur complement (m/s per N·s).
    pub compliance: &'a mut [f64],
    /// η (m/s).
    pub residual: &'a mut [f64],
    /// The natural residual of the row's law (m/s), for the stopping test.
    pub natural: &'a mut [f64],
}

/// Evaluates every row's law at the impulses `impulse` and row velocities `w = J̄ u`:
/// `inverse_effective_mass(i)` is `[J̄ H⁻¹ J̄ᵀ]ᵢᵢ`, the effective-mass complementarity scale
/// (paper eq. 66) of row `i`. Shared by the dense iteration ([`solve`]) and the FEM iteration
/// ([`super::fem`]).
pub fn evaluate_laws(rows: &[NewtonRow], opts: &NewtonOptions, impulse: &[f64], w: &[f64], inverse_effective_mass: impl Fn(usize) -> f64, out: RowLaws) {
    let h = opts.timestep_s;
    let m = rows.len();
    let scale = |i: usize| match opts.scale {
        ComplementarityScale::EffectiveMass => inverse_effective_mass(i),
        ComplementarityScale::Global => 1.0,
        ComplementarityScale::Identity => 1.0 / (h * h),
    };
    let mut i = 0;
    while i < m {
        match rows[i] {
            NewtonRow::Unilateral { gap } => {
                let r = scale(i);
                let (a, b) = (gap / h + w[i], r * impulse[i]);
                let (phi, da, db) = opts.ncp.value(a, b);
                out.alpha[i] = da;
                out.compliance[i] = db * r;
                out.residual[i] = phi;
                out.natural[i] = a.min(b).abs();
                i += 1;
            }
            NewtonRow::FrictionPair { normal_row, mu } => {
                let r_f = 0.5 * (scale(i) + scale(i + 1));
                let cone = r_f * mu * impulse[normal_row];
                if cone > 0.0 {
                    let slip = w[i].hypot(w[i + 1]);
                    // guard (ours): the friction impulse counts at most at the cone's radius, so an
                    // iterate outside the cone gets the sliding compliance `a / (μ p_n)`, which
                    // sends it to the cone along the slip, instead of the paper's unbounded W,
                    // which sends it to zero and, on redundant contact sets, into stick–slip limit
                    // cycles (the stopping test measures the cone separately, `disk_residual`)
                    let sigma = (cone - r_f * impulse[i].hypot(impulse[i + 1])).max(0.0);
                    let wf = friction_compliance(opts.ncp, slip, r_f, cone, sigma);
                    // Coulomb's law with maximal dissipation holds iff r_f p_f is the projection of
                    // r_f p_f − w_f on the disk of radius r_f μ p_n: the distance is the row's
                    // error (m/s), whatever W is
                    let natural = disk_residual(r_f, [impulse[i], impulse[i + 1]], [w[i], w[i + 1]], cone);
                    for k in [i, i + 1] {
                        out.alpha[k] = 1.0;
                        out.compliance[k] = wf;
                        out.residual[k] = w[k] + wf * impulse[k];
                        out.natural[k] = natural;
                    }
                } else {
                    for k in [i, i + 1] {
                        out.alpha[k] = 0.0;
                        out.compliance[k] = r_f;
                        out.residual[k] = r_f * impulse[k];
                        out.natural[k] = r_f * impulse[i].hypot(impulse[i + 1]);
                    }
                }
                i += 2;
            }
            NewtonRow::FrictionSecond => unreachable!("a friction pair's second row follows its first"),
            NewtonRow::BoundedFriction { bound } => {
                // a joint's Coulomb friction (not in the paper): the semismooth Newton step of the
                // mid function `r p − clamp(r p − w, −r B, r B)`: inside the bounds the row is the
                // hard `w = 0`, at a bound it is `p = ±B` (quadratic convergence; the frozen-W form
                // of contact friction stalls on a stuck joint loaded just past its bound)
                let r_f = scale(i);
                let trial = r_f * impulse[i] - w[i];
                let limit = r_f * bound;
                if trial.abs() < limit {
                    out.alpha[i] = 1.0;
                    out.compliance[i] = 0.0;
                    out.residual[i] = w[i];
                } else {
                    let target = bound.copysign(trial);
                    out.alpha[i] = 0.0;
                    out.compliance[i] = r_f;
                    out.residual[i] = r_f * (impulse[i] - target);
                }
                out.natural[i] = (r_f * impulse[i] - trial.clamp(-limit, limit)).abs();
                i += 1;
            }
            NewtonRow::Bilateral { error, compliance } => {
                out.alpha[i] = 1.0;
                out.compliance[i] = compliance;
                out.residual[i] = error / h + w[i] + compliance * impulse[i];
                out.natural[i] = out.residual[i].abs();
                i += 1;
            }
        }
    }
}

/// Runs the Newton iteration on `prob` from `it` (see the module docs); leaves the solution in
/// `it`. Allocation- and lock-free on a serial scratch ([`NewtonScratch::new`]); with a pool
/// the Delassus products of large problems run on it.
pub fn solve(prob: &NewtonProblem, opts: &NewtonOptions, scr: &mut NewtonScratch, it: &mut NewtonIterate) -> NewtonStats {
    let m = prob.dim();
    let mut stats = NewtonStats::default();
    if m == 0 {
        it.free_weight = 1.0 - (1.0 - it.free_weight) * (1.0 - opts.step_fraction).powi(opts.max_newton_iterations as i32);
        stats.converged = true;
        return stats;
    }
    if opts.jacobian == NewtonJacobian::Exact {
        scr.warm_impulse[..m].copy_from_slice(it.impulse);
        let mut exact = solve_exact(prob, opts, scr, it);
        if exact.converged || opts.tolerance_m_s <= 0.0 {
            return exact;
        }
        // first rescue: the proximal-point iteration from the exact iteration's best iterate
        let proximal = proximal_point(prob, opts, exact.residual_m_s, scr, it);
        exact.newton_iterations += proximal.newton_iterations;
        exact.proximal_rounds = proximal.proximal_rounds;
        if proximal.converged {
            return NewtonStats { newton_iterations: exact.newton_iterations, ..proximal };
        }
        exact.residual_m_s = exact.residual_m_s.min(proximal.residual_m_s);
        // second rescue (rare): the exact iteration stalled, typically on a redundant contact set where
        // the iterate sits on a piece of the Jacobian that is singular up to ε (a contact
        // classified as sticking whose slip the other hard rows do not let go to zero, while the
        // solution has it sliding): the Newton step is then ~1/ε long, the next piece boundary
        // lies closer than any halving of it, and the line search crawls. Projected Gauss–Seidel
        // sweeps on the same laws are globally well behaved there and find the right pieces; a
        // few exact iterations from their result converge quadratically. Rounds of both, from
        // the exact iteration's best iterate, keeping the best residual seen
        scr.exact_impulse[..m].copy_from_slice(it.impulse);
        let capped = NewtonOptions { max_newton_iterations: RESCUE_NEWTON, ..*opts };
        // rounds at most: RESCUE_ROUNDS, fewer on large problems (a round's sweeps cost m² each)
        let rounds = RESCUE_ROUNDS.min((RESCUE_WORK / ((m * m) as f64 * RESCUE_SWEEPS as f64)).ceil() as u32);
        for _ in 0..rounds {
            projected_sweeps(prob, opts, it.impulse, &mut scr.row_velocity[..m], RESCUE_SWEEPS);
            let again = solve_exact(prob, &capped, scr, it);
            exact.newton_iterations += again.newton_iterations;
            exact.rescue_sweeps += RESCUE_SWEEPS;
            if again.converged {
                return NewtonStats { newton_iterations: exact.newton_iterations, rescue_sweeps: exact.rescue_sweeps, proximal_rounds: exact.proximal_rounds, ..again };
            }
            if again.residual_m_s < exact.residual_m_s {
                exact.residual_m_s = again.residual_m_s;
                scr.exact_impulse[..m].copy_from_slice(it.impulse);
            }
        }
        it.impulse.copy_from_slice(&scr.exact_impulse[..m]);
        // rarer still: the rescue did not converge either (measured on the arch only). Run the
        // frozen-compliance iteration from the same warm start and keep whichever ends with the
        // smaller residual
        scr.exact_impulse[..m].copy_from_slice(it.impulse);
        it.impulse.copy_from_slice(&scr.warm_impulse[..m]);
        it.velocity_impulse.copy_from_slice(&scr.warm_impulse[..m]);
        it.free_weight = 1.0;
        let frozen = NewtonOptions { jacobian: NewtonJacobian::FrozenCompliance, line_search: false, ..*opts };
        let mut sub = solve(prob, &frozen, scr, it);
        sub.newton_iterations += exact.newton_iterations;
        sub.rescue_sweeps = exact.rescue_sweeps;
        sub.proximal_rounds = exact.proximal_rounds;
        if sub.residual_m_s <= exact.residual_m_s {
            return sub;
        }
        it.impulse.copy_from_slice(&scr.exact_impulse[..m]);
        it.velocity_impulse.copy_from_slice(&scr.exact_impulse[..m]);
        it.free_weight = 1.0;
        return NewtonStats { newton_iterations: sub.newton_iterations, rescue_sweeps: exact.rescue_sweeps, ..exact };
    }
    let d = prob.delassus;
    let (mut best_residual, mut best_weight) = (f64::INFINITY, it.free_weight);
    loop {
        let (res_inf, res_sq) = evaluate_rows(prob, opts, it.impulse, it.velocity_impulse, it.free_weight, scr);
        stats.residual_m_s = res_inf;
        if res_inf < best_residual {
            best_residual = res_inf;
            best_weight = it.free_weight;
            scr.best_impulse[..m].copy_from_slice(it.impulse);
            scr.best_velocity_impulse[..m].copy_from_slice(it.velocity_impulse);
        }
        if opts.tolerance_m_s > 0.0 && res_inf <= opts.tolerance_m_s {
            stats.converged = true;
            break;
        }
        if stats.newton_iterations >= opts.max_newton_iterations {
            break;
        }
        // b = α∘[(s − 1) J̄ũ + D (y − α∘p)] − η
        for i in 0..m {
            scr.increment[i] = it.velocity_impulse[i] - scr.alpha[i] * it.impulse[i];
        }
        delassus_product(d, m, &scr.increment, &mut scr.rhs, scr.pool.as_ref());
        for i in 0..m {
            scr.rhs[i] = scr.alpha[i] * ((it.free_weight - 1.0) * prob.free_row_velocity[i] + scr.rhs[i]) - scr.residual[i];
        }
        // A x = b, A = diag(α) D diag(α) + diag(C) + ε I
        let eps = opts.regularization;
        let direct = match opts.linear_solver {
            LinearSolver::Direct => true,
            LinearSolver::Pcr => false,
            LinearSolver::Auto => m <= AUTO_DIRECT_MAX_ROWS,
        };
        match direct {
            true => {
                let a = &mut scr.dense[..m * m];
                for r in 0..m {
                    for c in 0..m {
                        a[r * m + c] = scr.alpha[r] * scr.alpha[c] * d[r * m + c];
                    }
                    a[r * m + r] += scr.compliance[r] + eps;
                }
                scr.increment[..m].copy_from_slice(&scr.rhs[..m]);
                if cholesky_in_place(a, m) {
                    cholesky_solve(a, m, &mut scr.increment[..m]);
                } else {
                    break; // not SPD: only with a non-finite input; reported unconverged
                }
            }
            false => {
                // the preconditioner 1/diag(A) reuses `trial_impulse` (free until the line search)
                for i in 0..m {
                    scr.trial_impulse[i] = 1.0 / (scr.alpha[i] * scr.alpha[i] * d[i * m + i] + scr.compliance[i] + eps);
                }
                scr.increment[..m].fill(0.0);
                let (alpha, compliance, pool) = (&scr.alpha[..m], &scr.compliance[..m], scr.pool.as_ref());
                let scaled = &mut scr.trial_velocity_impulse;
                let mut apply = |v: &[f64], out: &mut [f64]| {
                    for i in 0..m {
                        scaled[i] = alpha[i] * v[i];
                    }
                    delassus_product(d, m, scaled, out, pool);
                    for i in 0..m {
                        out[i] = alpha[i] * out[i] + (compliance[i] + eps) * v[i];
                    }
                };
                stats.linear_iterations += conjugate_residual(&mut apply, &scr.rhs[..m], &scr.trial_impulse[..m], &mut scr.increment[..m], opts.max_linear_iterations, opts.linear_tolerance, &mut scr.cr);
            }
        }
        stats.newton_iterations += 1;
        let mut t = opts.step_fraction;
        if opts.line_search {
            let merit0 = res_sq;
            for _ in 0..6 {
                for i in 0..m {
                    scr.trial_impulse[i] = it.impulse[i] + t * scr.increment[i];
                    scr.trial_velocity_impulse[i] = (1.0 - t) * it.velocity_impulse[i] + t * scr.alpha[i] * (it.impulse[i] + scr.increment[i]);
                }
                let s = (1.0 - t) * it.free_weight + t;
                // evaluate_rows overwrites α; keep it in `rhs` (no longer needed) meanwhile
                scr.rhs[..m].copy_from_slice(&scr.alpha[..m]);
                let (trial_p, trial_y) = (std::mem::take(&mut scr.trial_impulse), std::mem::take(&mut scr.trial_velocity_impulse));
                let (_, merit) = evaluate_rows(prob, opts, &trial_p, &trial_y, s, scr);
                scr.trial_impulse = trial_p;
                scr.trial_velocity_impulse = trial_y;
                std::mem::swap(&mut scr.rhs, &mut scr.alpha);
                if merit < merit0 {
                    break;
                }
                t *= 0.5;
            }
        }
        for i in 0..m {
            it.velocity_impulse[i] = (1.0 - t) * it.velocity_impulse[i] + t * scr.alpha[i] * (it.impulse[i] + scr.increment[i]);
            it.impulse[i] += t * scr.increment[i];
        }
        it.free_weight = (1.0 - t) * it.free_weight + t;
    }
    if !stats.converged && opts.tolerance_m_s > 0.0 && best_residual < stats.residual_m_s {
        // non-monotone iterations (stick–slip flips on redundant contact sets): keep the best
        it.impulse.copy_from_slice(&scr.best_impulse[..m]);
        it.velocity_impulse.copy_from_slice(&scr.best_velocity_impulse[..m]);
        it.free_weight = best_weight;
        stats.residual_m_s = best_residual;
    }
    stats
}

/// `√(x² + y²)` without `hypot`'s guard against overflow and underflow (impulses and velocities
/// are nowhere near either; `hypot` cost the exact iteration about a tenth of its time).
#[inline]
fn norm2(x: f64, y: f64) -> f64 {
    (x * x + y * y).sqrt()
}

/// Evaluates every row's natural residual `F` (m/s) at the impulses `p` and row velocities
/// `w = J̄ u` ([`NewtonJacobian::Exact`]): `min(a, b)` (or FB) on unilateral rows,
/// `r p_f − Π(r p_f − w_f)` on friction pairs (Π: projection on the disk of radius `r μ p_n`),
/// the mid function on joint friction, the row itself on bilateral rows. Writes `F` into `f`, each
/// row's error into `natural`, and, when `jacobian` is given, the rows of the generalized
/// Jacobian `∂F/∂p = G_w D + G_p + ε I` into it (row-major `m × m`). The Jacobian comes with the
/// ends of the problem's consecutive blocks ([`consecutive_blocks`]; `[m]` for one block): a
/// row's entries are written over its block's columns only. The entries outside the blocks are
/// zero in exact arithmetic too; they keep whatever they held, and the LU, which runs block by
/// block, never reads them. Returns the largest error and `½‖F‖²`.
fn exact_laws(prob: &NewtonProblem, opts: &NewtonOptions, p: &[f64], w: &[f64], f: &mut [f64], natural: &mut [f64], jacobian: Option<(&mut [f64], &[usize])>) -> (f64, f64) {
    with_avx2!(exact_laws_portable(prob, opts, p, w, f, natural, jacobian))
}

#[inline(always)]
fn exact_laws_portable(prob: &NewtonProblem, opts: &NewtonOptions, p: &[f64], w: &[f64], f: &mut [f64], natural: &mut [f64], jacobian: Option<(&mut [f64], &[usize])>) -> (f64, f64) {
    let h = opts.timestep_s;
    let m = prob.dim();
    let d = prob.delassus;
    let scale = |i: usize| match opts.scale {
        ComplementarityScale::EffectiveMass => d[i * m + i],
        ComplementarityScale::Global => 1.0,
        ComplementarityScale::Identity => 1.0 / (h * h),
    };
    let one_block = [m];
    let (mut jac, block_ends) = match jacobian {
        Some((jac, ends)) => (Some(jac), ends),
        None => (None, &one_block[..]),
    };
    let mut i = 0;
    let mut block_start = 0;
    for &block_end in block_ends {
        let cols = block_start..block_end;
        // J[i] = gw · D[k] (+ ...): row i of the Jacobian as a combination of Delassus rows, over
        // the block's columns
        let set_row = |jac: &mut [f64], i: usize, k: usize, gw: f64| {
            let (dst, src) = (&mut jac[i * m + cols.start..i * m + cols.end], &d[k * m + cols.start..k * m + cols.end]);
            for (o, s) in dst.iter_mut().zip(src) {
                *o = gw * s;
            }
        };
        let add_row = |jac: &mut [f64], i: usize, k: usize, gw: f64| {
            if gw != 0.0 {
                let (dst, src) = (&mut jac[i * m + cols.start..i * m + cols.end], &d[k * m + cols.start..k * m + cols.end]);
                for (o, s) in dst.iter_mut().zip(src) {
                    *o += gw * s;
                }
            }
        };
        let clear_row = |jac: &mut [f64], i: usize| jac[i * m + cols.start..i * m + cols.end].fill(0.0);
        while i < block_end {
            match prob.rows[i] {
                NewtonRow::Unilateral { gap } => {
                    let r = scale(i);
                    let (a, b) = (gap / h + w[i], r * p[i]);
                    let (phi, da, db) = opts.ncp.value(a, b);
                    f[i] = phi;
                    natural[i] = a.min(b).abs();
                    if let Some(jac) = jac.as_deref_mut() {
                        set_row(jac, i, i, da);
                        jac[i * m + i] += db * r;
                    }
                    i += 1;
                }
                NewtonRow::FrictionPair { normal_row, mu } => {
                    let r = 0.5 * (scale(i) + scale(i + 1));
                    let radius = r * mu * p[normal_row];
                    let z = [r * p[i] - w[i], r * p[i + 1] - w[i + 1]];
                    let nz = norm2(z[0], z[1]);
                    if radius <= 0.0 {
                        // no normal impulse: the disk is a point, F = r p_f
                        f[i] = r * p[i];
                        f[i + 1] = r * p[i + 1];
                        if let Some(jac) = jac.as_deref_mut() {
                            clear_row(jac, i);
                            clear_row(jac, i + 1);
                            jac[i * m + i] = r;
                            jac[(i + 1) * m + i + 1] = r;
                        }
                    } else if nz <= radius {
                        // sticking: F = w_f
                        f[i] = w[i];
                        f[i + 1] = w[i + 1];
                        if let Some(jac) = jac.as_deref_mut() {
                            set_row(jac, i, i, 1.0);
                            set_row(jac, i + 1, i + 1, 1.0);
                        }
                    } else {
                        // sliding: F = r p_f − k z, k = R/‖z‖; with ẑ = z/‖z‖ and P = I − ẑẑᵀ,
                        // dF = r (I − k P) dp_f − r μ ẑ dp_n + k P dw_f
                        let k = radius / nz;
                        let zh = [z[0] / nz, z[1] / nz];
                        f[i] = r * p[i] - k * z[0];
                        f[i + 1] = r * p[i + 1] - k * z[1];
                        if let Some(jac) = jac.as_deref_mut() {
                            let proj = [[1.0 - zh[0] * zh[0], -zh[0] * zh[1]], [-zh[1] * zh[0], 1.0 - zh[1] * zh[1]]];
                            for a in 0..2 {
                                set_row(jac, i + a, i, k * proj[a][0]);
                                add_row(jac, i + a, i + 1, k * proj[a][1]);
                                for b in 0..2 {
                                    jac[(i + a) * m + i + b] += r * (if a == b { 1.0 } else { 0.0 } - k * proj[a][b]);
                                }
                                jac[(i + a) * m + normal_row] -= r * mu * zh[a];
                            }
                        }
                    }
                    let e = norm2(f[i], f[i + 1]);
                    natural[i] = e;
                    natural[i + 1] = e;
                    i += 2;
                }
                NewtonRow::FrictionSecond => unreachable!("a friction pair's second row follows its first"),
                NewtonRow::BoundedFriction { bound } => {
                    let r = scale(i);
                    let (trial, limit) = (r * p[i] - w[i], r * bound);
                    f[i] = r * p[i] - trial.clamp(-limit, limit);
                    if let Some(jac) = jac.as_deref_mut() {
                        if trial.abs() < limit {
                            set_row(jac, i, i, 1.0);
                        } else {
                            clear_row(jac, i);
                            jac[i * m + i] = r;
                        }
                    }
                    natural[i] = f[i].abs();
                    i += 1;
                }
                NewtonRow::Bilateral { error, compliance } => {
                    f[i] = error / h + w[i] + compliance * p[i];
                    if let Some(jac) = jac.as_deref_mut() {
                        set_row(jac, i, i, 1.0);
                        jac[i * m + i] += compliance;
                    }
                    natural[i] = f[i].abs();
                    i += 1;
                }
            }
        }
        block_start = block_end;
    }
    if let Some(jac) = jac {
        for i in 0..m {
            jac[i * m + i] += opts.regularization;
        }
    }
    let inf_norm = natural[..m].iter().fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(*e) });
    (inf_norm, 0.5 * f[..m].iter().map(|e| e * e).sum::<f64>())
}

/// First weight λ of the proximal-point iteration's compliance `R = λ diag(D)` (relative to each
/// row's `Dᵢᵢ`).
const PROXIMAL_POINT_WEIGHT: f64 = 1e-3;
/// Factor on λ after a round whose inner iteration converged: a weaker pull gains more per
/// round (with a constant λ = 1e-3 the heavy stack's rounds gained only 17 % each).
const PROXIMAL_POINT_WEAKEN: f64 = 0.3;
/// Factor on λ after a round whose inner iteration did not converge.
const PROXIMAL_POINT_STRENGTHEN: f64 = 10.0;
/// Outer rounds of the proximal-point iteration at most. Measured over 20 s of the arch
/// (`newton_arch.yaml`, 150 rows): 10 rounds left 22 steps unconverged (residuals 1–12 µm/s),
/// 20 left 13, 40 none; the default scene's stalled steps need 2–8.
const PROXIMAL_POINT_ROUNDS: u32 = 40;
/// Exact Newton iterations at most per proximal-point round.
const PROXIMAL_POINT_NEWTON: u32 = 8;

/// The proximal-point iteration on the impulses (ours; Rockafellar's proximal point applied
/// to the contact laws), the first rescue of a stalled exact iteration. From the iterate in `it`
/// (the exact iteration's best), each round solves the same laws with a compliance
/// `R = λ diag(D)` that pulls towards the round's start `p_k`: the row velocities become
/// `w' = w + R (p − p_k)`, which is the same problem with the Delassus matrix `D + R` and the
/// free row velocities `J̄ũ − R p_k`, solved by the exact iteration ([`solve_exact`]). `D + R` is
/// positive definite even on a redundant contact set, where `D` is singular and only ε keeps the
/// Newton matrix regular: the inner iteration then converges in one or two steps instead of
/// crawling along the ε-inverse of the laws' inconsistency. At a solution `p = p_k` and the
/// compliance vanishes, so the rounds converge to a solution of the laws themselves; the stop is
/// tested on them (the true residual) after each round. λ starts at [`PROXIMAL_POINT_WEIGHT`]
/// and falls by [`PROXIMAL_POINT_WEAKEN`] after each round whose inner iteration converged (the
/// rounds then gain more and more: a decreasing-regularisation proximal point), rising by
/// [`PROXIMAL_POINT_STRENGTHEN`] after one that did not. Leaves the best iterate in `it` (the
/// start, of residual `start_residual_m_s`, unless a round improved on it).
fn proximal_point(prob: &NewtonProblem, opts: &NewtonOptions, start_residual_m_s: f64, scr: &mut NewtonScratch, it: &mut NewtonIterate) -> NewtonStats {
    let m = prob.dim();
    let d = prob.delassus;
    let mut stats = NewtonStats { residual_m_s: start_residual_m_s, ..NewtonStats::default() };
    scr.exact_impulse[..m].copy_from_slice(it.impulse);
    let inner_opts = NewtonOptions { max_newton_iterations: PROXIMAL_POINT_NEWTON, ..*opts };
    // the rounds' problem lives outside the scratch the inner iteration works in
    let (mut delassus, mut free) = (std::mem::take(&mut scr.proximal_delassus), std::mem::take(&mut scr.proximal_free));
    delassus[..m * m].copy_from_slice(d);
    let mut weight = PROXIMAL_POINT_WEIGHT;
    for _ in 0..PROXIMAL_POINT_ROUNDS {
        for i in 0..m {
            delassus[i * m + i] = (1.0 + weight) * d[i * m + i];
            free[i] = prob.free_row_velocity[i] - weight * d[i * m + i] * it.impulse[i];
        }
        let round = NewtonProblem { delassus: &delassus[..m * m], free_row_velocity: &free[..m], rows: prob.rows, row_trees: prob.row_trees };
        let inner = solve_exact(&round, &inner_opts, scr, it);
        stats.newton_iterations += inner.newton_iterations;
        stats.proximal_rounds += 1;
        // a round that converged allows a weaker pull (faster progress), one that did not needs a
        // stronger one
        weight = if inner.converged { weight * PROXIMAL_POINT_WEAKEN } else { weight * PROXIMAL_POINT_STRENGTHEN };
        // the laws' own residual at the round's result
        symmetric_delassus_product(d, m, it.impulse, &mut scr.row_velocity, scr.pool.as_ref());
        for i in 0..m {
            scr.row_velocity[i] += prob.free_row_velocity[i];
        }
        let (residual, _) = exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], None);
        if residual < stats.residual_m_s {
            stats.residual_m_s = residual;
            scr.exact_impulse[..m].copy_from_slice(it.impulse);
        }
        if residual <= opts.tolerance_m_s {
            stats.converged = true;
            break;
        }
    }
    (scr.proximal_delassus, scr.proximal_free) = (delassus, free);
    it.impulse.copy_from_slice(&scr.exact_impulse[..m]);
    it.velocity_impulse.copy_from_slice(it.impulse);
    stats
}

/// Projected Gauss–Seidel sweeps per round of the rescue of a stalled exact iteration
/// (measured on the default scene and arm_push_box: 50 or 100 per round left 2–4 steps
/// unconverged, 200 and 300 none).
const RESCUE_SWEEPS: u32 = 200;
/// Rounds (sweeps, then capped exact iterations) of the rescue at most.
const RESCUE_ROUNDS: u32 = 10;
/// Multiply-adds of the rescue's sweeps at most (`rounds · sweeps · m²`): bounds the cost of a
/// stalled step of a large problem (the 150-row arch: 5 rounds; the default scene's 54 rows:
/// all 10).
const RESCUE_WORK: f64 = 2.0e7;
/// Exact Newton iterations at most after each round of sweeps (full steps: the rescue hands
/// the exact iteration a point near the solution's pieces).
const RESCUE_NEWTON: u32 = 4;

/// `sweeps` projected Gauss–Seidel sweeps on the same laws as the exact iteration, from `p`
/// (updated in place), `w` scratch for the row velocities `J̄ũ + D p`: a contact's normal row
/// `pₙ ← max(0, pₙ − (gap/h + wₙ)/Dₙₙ)`, its friction pair a 2×2 block solve of `w_f = 0`
/// projected on the disk of radius `μ pₙ`, a joint-friction row clamped to its bound, a
/// bilateral row solved exactly. Each update moves `w` by the changed impulse's column of `D`.
fn projected_sweeps(prob: &NewtonProblem, opts: &NewtonOptions, p: &mut [f64], w: &mut [f64], sweeps: u32) {
    let h = opts.timestep_s;
    let m = prob.dim();
    let d = prob.delassus;
    delassus_product(d, m, p, w, None);
    for i in 0..m {
        w[i] += prob.free_row_velocity[i];
    }
    // D is symmetric: row i is column i
    let push = |w: &mut [f64], i: usize, dp: f64| {
        if dp != 0.0 {
            for (o, c) in w.iter_mut().zip(&d[i * m..(i + 1) * m]) {
                *o += c * dp;
            }
        }
    };
    for _ in 0..sweeps {
        let mut i = 0;
        while i < m {
            match prob.rows[i] {
                NewtonRow::Unilateral { gap } => {
                    let dii = d[i * m + i];
                    if dii > 0.0 {
                        let np = (p[i] - (gap / h + w[i]) / dii).max(0.0);
                        let dp = np - p[i];
                        p[i] = np;
                        push(w, i, dp);
                    }
                    i += 1;
                }
                NewtonRow::FrictionPair { normal_row, mu } => {
                    let (a, b, c, e) = (d[i * m + i], d[i * m + i + 1], d[(i + 1) * m + i], d[(i + 1) * m + i + 1]);
                    let det = a * e - b * c;
                    if det > 0.0 {
                        let mut np = [p[i] - (e * w[i] - b * w[i + 1]) / det, p[i + 1] - (a * w[i + 1] - c * w[i]) / det];
                        let (radius, norm) = (mu * p[normal_row].max(0.0), np[0].hypot(np[1]));
                        if norm > radius {
                            let k = if norm > 0.0 { radius / norm } else { 0.0 };
                            np = [k * np[0], k * np[1]];
                        }
                        for q in 0..2 {
                            let dp = np[q] - p[i + q];
                            p[i + q] = np[q];
                            push(w, i + q, dp);
                        }
                    }
                    i += 2;
                }
                NewtonRow::FrictionSecond => unreachable!("a friction pair's second row follows its first"),
                NewtonRow::BoundedFriction { bound } => {
                    let dii = d[i * m + i];
                    if dii > 0.0 {
                        let np = (p[i] - w[i] / dii).clamp(-bound, bound);
                        let dp = np - p[i];
                        p[i] = np;
                        push(w, i, dp);
                    }
                    i += 1;
                }
                NewtonRow::Bilateral { error, compliance } => {
                    let a = d[i * m + i] + compliance;
                    if a > 0.0 {
                        let dp = -(error / h + w[i] + compliance * p[i]) / a;
                        p[i] += dp;
                        push(w, i, dp);
                    }
                    i += 1;
                }
            }
        }
    }
}

/// Splits the rows of a problem into consecutive blocks that no nonzero of its Delassus matrix
/// couples (with a contact's three rows always in one block): the blocks' ends go to `ends`
/// (ascending, the last one `m`) and their count is returned. The exact iteration's Newton
/// matrix `G_w D + G_p + ε I` has the same blocks (its rows combine the Delassus rows of one
/// contact), so each block is factorised on its own ([`lu_in_place_block`]), bit for bit as
/// the whole matrix would be, without the whole matrix's search and skip over the other blocks'
/// zeros. In the default scene the quadruped's feet and the arm with its box are two blocks.
/// With the rows' trees given ([`NewtonProblem::row_trees`]) the coupling of two rows is read
/// from them (rows that share a tree may still have a zero entry: the blocks are then coarser
/// than `D`'s, which changes no bit of the factors). `reach` is scratch of length `m`,
/// `tree_last_row` of length `2m`.
pub fn consecutive_blocks(prob: &NewtonProblem, reach: &mut [usize], tree_last_row: &mut [(usize, usize)], ends: &mut [usize]) -> usize {
    let m = prob.dim();
    let d = prob.delassus;
    if let Some(row_trees) = prob.row_trees {
        // from the end: the last row that touches each tree seen so far (a handful of trees)
        let mut trees = 0;
        for i in (0..m).rev() {
            reach[i] = i;
            let (t0, t1) = row_trees[i];
            for t in [t0, t1] {
                if t == crate::contact::NO_TREE {
                    continue;
                }
                let last = match tree_last_row[..trees].iter().find(|(tree, _)| *tree == t) {
                    Some(&(_, last)) => last,
                    None => {
                        tree_last_row[trees] = (t, i);
                        trees += 1;
                        i
                    }
                };
                reach[i] = reach[i].max(last);
            }
        }
    } else {
        for i in 0..m {
            // D is symmetric: the upper triangle gives every coupling of a row to a later one
            reach[i] = d[i * m + i + 1..(i + 1) * m].iter().rposition(|v| *v != 0.0).map_or(i, |j| i + 1 + j);
        }
    }
    for i in 0..m {
        if let NewtonRow::FrictionPair { normal_row, .. } = prob.rows[i] {
            reach[normal_row] = reach[normal_row].max(i + 1);
            reach[i] = reach[i].max(i + 1);
        }
    }
    let (mut count, mut block_reach) = (0, 0);
    for i in 0..m {
        block_reach = block_reach.max(reach[i]);
        if block_reach == i {
            ends[count] = i + 1;
            count += 1;
        }
    }
    count
}

/// Full Newton steps before the line search starts ([`NewtonJacobian::Exact`]).
const FULL_STEPS: u32 = 12;
/// First proximal weight λ (relative to the row's `Dᵢᵢ`) after a failed line search.
const PROXIMAL_START: f64 = 1e-3;
/// Full steps in a row without a new best residual that end the full-step phase early.
const FULL_STEP_STALLS: u32 = 3;
/// A line-search iteration whose best merit is above this fraction of the merit before it counts
/// as crawling.
const CRAWL_DECREASE: f64 = 0.9;
/// Crawling line-search iterations in a row after which the exact iteration gives up (the
/// proximal-point rescue takes over from the best iterate).
const CRAWL_LIMIT: u32 = 3;
/// Sufficient decrease of the Armijo test on `½‖F‖²` ([`NewtonJacobian::Exact`]).
const ARMIJO: f64 = 1e-4;
/// Backtracking halvings at most per Newton iteration ([`NewtonJacobian::Exact`]).
const MAX_HALVINGS: u32 = 10;

/// The Newton iteration with the exact generalized Jacobian ([`NewtonJacobian::Exact`]). The
/// velocity is kept exactly on the momentum equation, `u = ũ + M̃⁻¹ J̄ᵀ p` (so `w = J̄ũ + D p`),
/// which makes the iteration one on the impulses alone: `F(p) = 0`. Each iteration solves
/// `(G_w D + G_p + ε I) x = −F` by LU and backtracks from `t = step_fraction` until
/// `½‖F‖²` decreases by the Armijo factor (after [`MAX_HALVINGS`] halvings it takes the trial
/// with the smallest merit). An unconverged step keeps its best iterate.
fn solve_exact(prob: &NewtonProblem, opts: &NewtonOptions, scr: &mut NewtonScratch, it: &mut NewtonIterate) -> NewtonStats {
    let m = prob.dim();
    let d = prob.delassus;
    let mut stats = NewtonStats::default();
    let blocks = consecutive_blocks(prob, &mut scr.block_reach[..m], &mut scr.tree_last_row[..2 * m], &mut scr.block_ends[..m]);
    // start on the momentum equation: u = ũ + M̃⁻¹ J̄ᵀ p
    it.free_weight = 1.0;
    block_delassus_product(d, m, &scr.block_ends[..blocks], it.impulse, &mut scr.row_velocity, scr.pool.as_ref());
    for i in 0..m {
        scr.row_velocity[i] += prob.free_row_velocity[i];
    }
    let mut best_residual = f64::INFINITY;
    let mut merit = 0.0;
    let mut need_eval = true;
    // whether `scr.dense` holds the Jacobian at the current iterate (the evaluation of a new
    // iterate builds it with the residual, which the Newton step then needs in most cases)
    let mut jacobian_ready = false;
    // proximal weight λ: raised when a line search finds no decrease, lowered after each success
    let mut proximal = 0.0f64;
    // full steps since the best residual last improved, and whether the line search is on
    let (mut stalls, mut searching) = (0u32, false);
    // line-search iterations in a row that cut the merit by less than CRAWL_DECREASE
    let mut crawls = 0u32;
    loop {
        let res_inf;
        if need_eval {
            // the warm start meets the tolerance in about a fifth of the default scene's steps:
            // its evaluation leaves the Jacobian to the Newton step that may follow
            let first = stats.newton_iterations == 0 && best_residual == f64::INFINITY;
            let jacobian = if first { None } else { Some((&mut scr.dense[..m * m], &scr.block_ends[..blocks])) };
            let (inf, mer) = exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], jacobian);
            jacobian_ready = !first;
            res_inf = inf;
            merit = mer;
        } else {
            res_inf = scr.natural[..m].iter().fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(*e) });
        }
        stats.residual_m_s = res_inf;
        if res_inf < best_residual {
            stalls = 0;
        } else {
            stalls += 1;
        }
        if res_inf < best_residual {
            best_residual = res_inf;
            scr.best_impulse[..m].copy_from_slice(it.impulse);
        }
        if opts.tolerance_m_s > 0.0 && res_inf <= opts.tolerance_m_s {
            stats.converged = true;
            break;
        }
        if stats.newton_iterations >= opts.max_newton_iterations {
            break;
        }
        if opts.line_search && !searching && (stats.newton_iterations >= FULL_STEPS || stalls >= FULL_STEP_STALLS) {
            searching = true;
            // the full steps did not converge: back to the best iterate, then globalise
            it.impulse.copy_from_slice(&scr.best_impulse[..m]);
            block_delassus_product(d, m, &scr.block_ends[..blocks], it.impulse, &mut scr.row_velocity, scr.pool.as_ref());
            for i in 0..m {
                scr.row_velocity[i] += prob.free_row_velocity[i];
            }
            let (_, mer) = exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], None);
            merit = mer;
            jacobian_ready = false;
        }
        let search = searching;
        if !jacobian_ready {
            exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], Some((&mut scr.dense[..m * m], &scr.block_ends[..blocks])));
        }
        // the factorisation below overwrites it
        jacobian_ready = false;
        for i in 0..m {
            scr.increment[i] = -scr.residual[i];
            // proximal term λ Dᵢᵢ (zero unless the previous line search failed)
            scr.dense[i * m + i] += proximal * d[i * m + i];
        }
        // the Newton matrix is block-diagonal on the problem's consecutive blocks: factorise and
        // solve each on its own
        let mut singular = false;
        let mut block_start = 0;
        for &block_end in &scr.block_ends[..blocks] {
            let n = block_end - block_start;
            if !lu_in_place_block(&mut scr.dense[..m * m], m, block_start, n, &mut scr.pivot[..n]) {
                singular = true;
                break;
            }
            lu_solve_block(&scr.dense[..m * m], m, block_start, &scr.pivot[..n], &mut scr.increment[block_start..block_end]);
            block_start = block_end;
        }
        if singular {
            break; // singular: only with a non-finite input; reported unconverged
        }
        stats.newton_iterations += 1;
        // D x, then backtracking along (x, D x)
        block_delassus_product(d, m, &scr.block_ends[..blocks], &scr.increment, &mut scr.rhs, scr.pool.as_ref());
        let mut t = opts.step_fraction;
        let (mut best_t, mut best_merit) = (t, f64::INFINITY);
        let mut accepted = false;
        for _ in 0..=MAX_HALVINGS {
            for i in 0..m {
                scr.trial_impulse[i] = it.impulse[i] + t * scr.increment[i];
                scr.trial_velocity_impulse[i] = scr.row_velocity[i] + t * scr.rhs[i];
            }
            let [cf, cn, ..] = &mut scr.cr;
            let (_, trial_merit) = exact_laws(prob, opts, &scr.trial_impulse[..m], &scr.trial_velocity_impulse[..m], &mut cf[..m], &mut cn[..m], None);
            if trial_merit < best_merit {
                (best_t, best_merit) = (t, trial_merit);
            }
            if trial_merit <= (1.0 - 2.0 * ARMIJO * t) * merit {
                accepted = true;
                break;
            }
            if !search {
                break;
            }
            t *= 0.5;
        }
        if search {
            if best_merit > CRAWL_DECREASE * merit {
                crawls += 1;
            } else {
                crawls = 0;
            }
            if crawls >= CRAWL_LIMIT {
                // the line search crawls (a near-singular piece): hand over to the rescue
                break;
            }
        }
        if search && !accepted && best_merit >= merit {
            // no decrease along the Newton direction (a kink, a near-singular piece): stay, and
            // solve the proximal system (J + λ diag D) x = −F next, which shortens and turns
            // the step towards the proximal point of p
            proximal = if proximal == 0.0 { PROXIMAL_START } else { proximal * 10.0 };
            need_eval = false;
            continue;
        }
        if search && accepted {
            proximal = if proximal > PROXIMAL_START { proximal * 0.1 } else { 0.0 };
        }
        if accepted && t == best_t {
            // the last trial is the accepted point: its laws are in cr[0], cr[1]
            it.impulse.copy_from_slice(&scr.trial_impulse[..m]);
            scr.row_velocity[..m].copy_from_slice(&scr.trial_velocity_impulse[..m]);
            scr.residual[..m].copy_from_slice(&scr.cr[0][..m]);
            scr.natural[..m].copy_from_slice(&scr.cr[1][..m]);
            merit = best_merit;
            need_eval = false;
        } else {
            for i in 0..m {
                it.impulse[i] += best_t * scr.increment[i];
                scr.row_velocity[i] += best_t * scr.rhs[i];
            }
            need_eval = true;
        }
    }
    if !stats.converged && best_residual < stats.residual_m_s {
        // non-monotone iterations: keep the best
        it.impulse.copy_from_slice(&scr.best_impulse[..m]);
        stats.residual_m_s = best_residual;
    }
    it.velocity_impulse.copy_from_slice(it.impulse);
    stats
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fischer_burmeister_values_of_the_paper() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(fischer_burmeister(3.0, 4.0).0, 2.0));
        assert!(close(fischer_burmeister(0.0, 5.0).0, 0.0));
        assert!(close(fischer_burmeister(5.0, 0.0).0, 0.0));
        assert!(close(fischer_burmeister(-1.0, 0.0).0, -2.0));
        assert!(close(fischer_burmeister(2.0, -3.0).0, -1.0 - 13f64.sqrt()));
        let (_, da, db) = fischer_burmeister(3.0, 4.0);
        assert!(close(da, 0.4) && close(db, 0.2));
        assert_eq!(fischer_burmeister(0.0, 0.0), (0.0, 0.0, 1.0));
    }

    #[test]
    fn ncp_functions_vanish_exactly_on_complementary_pairs() {
        // deterministic pseudo-random pairs, including exact zeros
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x % 2001) as f64 - 1000.0) / 100.0
        };
        for k in 0..5000 {
            let (mut a, mut b) = (next(), next());
            if k % 3 == 0 {
                a = 0.0;
            }
            if k % 5 == 0 {
                b = 0.0;
            }
            let complementary = a >= 0.0 && b >= 0.0 && a * b == 0.0;
            for f in [fischer_burmeister, min_map] {
                let (phi, _, _) = f(a, b);
                assert_eq!(phi.abs() < 1e-12, complementary, "φ({a}, {b}) = {phi}");
            }
        }
    }

    /// Friction compliance at the numbers of the paper's friction illustration (r_f = 1,
    /// slip a = 0.5 m/s, μ λ_n = 5 N): FB and min-map against the closed forms.
    #[test]
    fn friction_compliance_table() {
        let (a, cone) = (0.5, 5.0);
        let fb = [0.052494, 0.016780, 0.100000, 2.457226, 21.102369];
        let mm = [0.0, 0.0, 0.1, 0.7, 1.1];
        for (k, lf) in [0.0, 2.5, 5.0, 8.0, 10.0].into_iter().enumerate() {
            let w = friction_compliance(NcpFunction::FischerBurmeister, a, 1.0, cone, cone - lf);
            assert!((w - fb[k]).abs() < 1e-6, "W_FB(|λ_f| = {lf}) = {w}, want {}", fb[k]);
            let w = friction_compliance(NcpFunction::MinMap, a, 1.0, cone, cone - lf);
            assert!((w - mm[k]).abs() < 1e-12, "W_min(|λ_f| = {lf}) = {w}, want {}", mm[k]);
        }
        // past the FB denominator's zero (|λ_f| = 10.477) the guard keeps W finite and ≥ 0
        for lf in [10.4, 10.477226, 10.5, 20.0, 1e6] {
            let w = friction_compliance(NcpFunction::FischerBurmeister, a, 1.0, cone, cone - lf);
            assert!(w.is_finite() && w >= 0.0, "|λ_f| = {lf}: W = {w}");
        }
        // sticking (no slip, inside the cone) is a hard row
        assert_eq!(friction_compliance(NcpFunction::FischerBurmeister, 0.0, 1.0, cone, 2.0), 0.0);
        assert_eq!(friction_compliance(NcpFunction::FischerBurmeister, 0.0, 1.0, 0.0, 0.0), 0.0);
    }

    fn spd(n: usize, seed: u64, spread: f64) -> Vec<f64> {
        let mut x = seed;
        let mut rnd = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let b: Vec<f64> = (0..n * n).map(|_| rnd()).collect();
        let s: Vec<f64> = (0..n).map(|i| spread.powf(2.0 * (i as f64 / (n - 1) as f64) - 1.0)).collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let mut v = 0.0;
                for k in 0..n {
                    v += b[i * n + k] * b[j * n + k];
                }
                a[i * n + j] = s[i] * s[j] * (v + if i == j { 0.5 } else { 0.0 });
            }
        }
        a
    }

    /// PCR on a random SPD matrix scaled over 10^±3: the preconditioned residual never grows,
    /// the relative residual falls below 1e-6 within 200 iterations, and the result equals a
    /// dense Cholesky solve.
    #[test]
    fn conjugate_residual_is_monotone_and_matches_cholesky() {
        let n = 60;
        let a = spd(n, 7, 1e3);
        let b: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
        let inv_diag: Vec<f64> = (0..n).map(|i| 1.0 / a[i * n + i]).collect();
        let mut scratch: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; n]);
        let mut apply = |v: &[f64], out: &mut [f64]| delassus_product(&a, n, v, out, None);
        // the preconditioned residual after each iteration count
        let mut last = f64::INFINITY;
        let initial: f64 = (0..n).map(|i| b[i] * b[i] * inv_diag[i]).sum::<f64>().sqrt();
        for k in 1..=200 {
            let mut x = vec![0.0; n];
            conjugate_residual(&mut apply, &b, &inv_diag, &mut x, k, 0.0, &mut scratch);
            let mut ax = vec![0.0; n];
            delassus_product(&a, n, &x, &mut ax, None);
            let pres: f64 = (0..n).map(|i| (b[i] - ax[i]).powi(2) * inv_diag[i]).sum::<f64>().sqrt();
            // monotone down to round-off (1e-10 of the initial residual)
            assert!(pres <= last * (1.0 + 1e-9) + 1e-10 * initial, "iteration {k}: {pres} > {last}");
            last = pres;
        }
        let mut x = vec![0.0; n];
        conjugate_residual(&mut apply, &b, &inv_diag, &mut x, 200, 0.0, &mut scratch);
        let mut l = a.clone();
        assert!(cholesky_in_place(&mut l, n));
        let mut exact = b.clone();
        cholesky_solve(&l, n, &mut exact);
        let mut ax = vec![0.0; n];
        delassus_product(&a, n, &x, &mut ax, None);
        let rel = (0..n).map(|i| (b[i] - ax[i]).powi(2)).sum::<f64>().sqrt() / b.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(rel < 1e-6, "relative residual {rel}");
        let err = (0..n).map(|i| (x[i] - exact[i]).abs()).fold(0.0, f64::max) / exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(err < 1e-6, "PCR vs Cholesky: {err}");
    }

    /// The Delassus product gives the same bits on a pool of 2 or 3 threads as serially.
    #[test]
    fn parallel_delassus_product_is_bit_identical() {
        let n = PARALLEL_ROWS + 37;
        let a = spd(n, 11, 10.0);
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let mut serial = vec![0.0; n];
        delassus_product(&a, n, &x, &mut serial, None);
        for threads in [2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut par = vec![0.0; n];
            delassus_product(&a, n, &x, &mut par, Some(&pool));
            for i in 0..n {
                assert_eq!(serial[i].to_bits(), par[i].to_bits(), "{threads} threads, row {i}");
            }
        }
    }

    /// A consistent singular system (duplicated rows, J Jᵀ + ε I): PCR stays finite and monotone.
    #[test]
    fn conjugate_residual_on_a_redundant_system() {
        let (n, eps) = (12, 1e-6);
        let mut jac = vec![0.0; n * 4];
        for i in 0..n {
            jac[i * 4 + i % 4] = 1.0;
            jac[i * 4 + (i + 1) % 4] = 0.5;
        }
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..4).map(|k| jac[i * 4 + k] * jac[j * 4 + k]).sum::<f64>() + if i == j { eps } else { 0.0 };
            }
        }
        let b: Vec<f64> = (0..n).map(|i| jac[i * 4] + 2.0 * jac[i * 4 + 1]).collect(); // in the range of J
        let inv_diag: Vec<f64> = (0..n).map(|i| 1.0 / a[i * n + i]).collect();
        let mut scratch: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; n]);
        let mut x = vec![0.0; n];
        let mut apply = |v: &[f64], out: &mut [f64]| delassus_product(&a, n, v, out, None);
        conjugate_residual(&mut apply, &b, &inv_diag, &mut x, 50, 0.0, &mut scratch);
        let mut ax = vec![0.0; n];
        delassus_product(&a, n, &x, &mut ax, None);
        let res = (0..n).map(|i| (b[i] - ax[i]).powi(2)).sum::<f64>().sqrt();
        assert!(x.iter().all(|v| v.is_finite()) && res < 1e-4, "residual {res}");
    }

    fn options(ncp: NcpFunction, n: u32) -> NewtonOptions {
        NewtonOptions {
            timestep_s: 1.0,
            ncp,
            scale: ComplementarityScale::EffectiveMass,
            linear_solver: LinearSolver::Direct,
            max_newton_iterations: n,
            max_linear_iterations: 10,
            linear_tolerance: 0.0,
            tolerance_m_s: 0.0,
            step_fraction: 1.0,
            line_search: false,
            regularization: 0.0,
            jacobian: NewtonJacobian::FrozenCompliance,
        }
    }

    /// The paper's scalar example of the preconditioner: `0 ≤ c(λ) = λ/4 − 1/8 ⊥ λ ≥ 0` with
    /// `r = 1/4` (the slope). Scalar Newton on `FB(c(λ), r λ)` with this module's partials
    /// reproduces the paper's iterates; as one unilateral row (h = 1, D = 1/4, gap = −1/8) the
    /// solver lands on λ = 0.5 in one min-map step from 0 and from 3, and FB converges to it.
    #[test]
    fn scalar_complementarity_example() {
        let scalar_newton = |start: f64, n: usize| {
            let mut l = start;
            for _ in 0..n {
                let (phi, da, db) = fischer_burmeister(0.25 * l - 0.125, 0.25 * l);
                l -= phi / (0.25 * da + 0.25 * db);
            }
            l
        };
        for (k, want) in [0.333333, 0.466005, 0.498768, 0.499998].into_iter().enumerate() {
            let got = scalar_newton(0.0, k + 1);
            assert!((got - want).abs() < 1e-6, "FB iterate {}: {got}, want {want}", k + 1);
        }
        for (k, want) in [0.304107, 0.453165, 0.497609, 0.499994].into_iter().enumerate() {
            let got = scalar_newton(3.0, k + 1);
            assert!((got - want).abs() < 1e-6, "FB iterate {} from 3: {got}, want {want}", k + 1);
        }
        let d = [0.25];
        let free = [0.0];
        let rows = [NewtonRow::Unilateral { gap: -0.125 }];
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let run = |ncp, start: f64, n| {
            let (mut p, mut y) = ([start], [start]);
            let mut scr = NewtonScratch::new(1);
            let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
            solve(&prob, &options(ncp, n), &mut scr, &mut it);
            p[0]
        };
        for start in [0.0, 3.0] {
            assert!((run(NcpFunction::MinMap, start, 1) - 0.5).abs() < 1e-12);
            assert!((run(NcpFunction::FischerBurmeister, start, 12) - 0.5).abs() < 1e-9);
        }
    }

    /// Eight rows of every kind at a generic point (a contact pressed in, one at zero gap, a
    /// separated normal, joint friction): `D` (SPD), the rows, `J̄ũ` and the impulses.
    fn mixed_rows_problem() -> (Vec<f64>, [NewtonRow; 8], [f64; 8], [f64; 8]) {
        let rows = [
            NewtonRow::Unilateral { gap: -0.001 },
            NewtonRow::FrictionPair { normal_row: 0, mu: 0.4 },
            NewtonRow::FrictionSecond,
            NewtonRow::Unilateral { gap: 0.0 },
            NewtonRow::FrictionPair { normal_row: 3, mu: 0.9 },
            NewtonRow::FrictionSecond,
            NewtonRow::Unilateral { gap: 0.002 },
            NewtonRow::BoundedFriction { bound: 0.05 },
        ];
        let free = [-0.3, 2.0, -1.0, -0.2, 0.01, 0.02, -0.5, 0.3];
        let p = [0.3, -0.05, 0.02, 0.2, 0.001, -0.002, 0.1, 0.01];
        (spd(8, 7, 10.0), rows, free, p)
    }

    /// The exact Jacobian ([`NewtonJacobian::Exact`]) against central differences of `F` on a
    /// random SPD Delassus matrix with two contacts, a joint limit and a joint-friction row at a
    /// generic point (the pieces are whatever the point selects; the sliding piece is covered
    /// by the next test): every entry agrees (away from the pieces' boundaries the natural
    /// residual is smooth, so the generalized Jacobian is the Jacobian).
    #[test]
    fn exact_jacobian_matches_finite_differences() {
        let (d, rows, free, p) = mixed_rows_problem();
        let m = rows.len();
        let mut opts = options(NcpFunction::MinMap, 1);
        opts.timestep_s = 0.01;
        opts.jacobian = NewtonJacobian::Exact;
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let eval = |p: &[f64], jac: Option<&mut [f64]>| {
            let mut w = vec![0.0; m];
            delassus_product(&d, m, p, &mut w, None);
            for i in 0..m {
                w[i] += free[i];
            }
            let (mut f, mut nat) = (vec![0.0; m], vec![0.0; m]);
            let one_block = [m];
            exact_laws(&prob, &opts, p, &w, &mut f, &mut nat, jac.map(|j| (j, &one_block[..])));
            f
        };
        let mut jac = vec![0.0; m * m];
        eval(&p, Some(&mut jac));
        let step = 1e-7;
        for j in 0..m {
            let (mut hi, mut lo) = (p, p);
            hi[j] += step;
            lo[j] -= step;
            let (fh, fl) = (eval(&hi, None), eval(&lo, None));
            for i in 0..m {
                let fd = (fh[i] - fl[i]) / (2.0 * step);
                assert!((fd - jac[i * m + j]).abs() < 1e-5 * (1.0 + fd.abs()), "∂F{i}/∂p{j}: exact {} vs differences {fd}", jac[i * m + j]);
            }
        }
    }

    /// A 2 kg point pressed onto the ground (normal row velocity −0.01 m/s) and sliding at
    /// 0.5 m/s, μ = 0.5: the normal impulse is m · 0.01 = 0.02 N·s and friction is μ pₙ =
    /// 0.01 N·s against the slip, leaving 0.5 − 0.01/2 = 0.495 m/s. The exact Jacobian reaches it
    /// to round-off within 3 iterations from zero impulses.
    #[test]
    fn exact_jacobian_solves_a_sliding_contact_in_a_few_iterations() {
        let d = [0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.5];
        let free = [-0.01, 0.5, 0.0];
        let rows = [NewtonRow::Unilateral { gap: 0.0 }, NewtonRow::FrictionPair { normal_row: 0, mu: 0.5 }, NewtonRow::FrictionSecond];
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let mut opts = options(NcpFunction::MinMap, 3);
        opts.timestep_s = 0.001;
        opts.tolerance_m_s = 1e-12;
        opts.jacobian = NewtonJacobian::Exact;
        let (mut p, mut y) = ([0.0; 3], [0.0; 3]);
        let mut scr = NewtonScratch::new(3);
        let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
        let stats = solve(&prob, &opts, &mut scr, &mut it);
        assert!(stats.converged, "{stats:?}");
        assert!((p[0] - 0.02).abs() < 1e-12 && (p[1] + 0.01).abs() < 1e-12 && p[2].abs() < 1e-12, "{p:?}");
    }

    /// A redundant contact set: a 2 kg point touched by two coincident contacts (μ = 0.5;
    /// D = J M⁻¹ Jᵀ of rank 3 on 6 rows), pressed down at 0.01 m/s and sliding at 0.5 m/s along
    /// x. The split between the contacts is not unique, the totals are: normal m · 0.01 =
    /// 0.02 N·s, friction μ · 0.02 = 0.01 N·s against the slip. Returns D, J̄ũ and the rows.
    fn redundant_sliding_problem() -> (Vec<f64>, Vec<f64>, [NewtonRow; 6]) {
        let mass = 2.0;
        let dirs = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
        let jac: Vec<[f64; 3]> = (0..6).map(|i| dirs[i % 3]).collect();
        let m = 6;
        let d: Vec<f64> = (0..m * m).map(|k| (0..3).map(|c| jac[k / m][c] * jac[k % m][c]).sum::<f64>() / mass).collect();
        let v_free = [0.5, 0.0, -0.01];
        let free: Vec<f64> = jac.iter().map(|j| (0..3).map(|c| j[c] * v_free[c]).sum()).collect();
        (d, free, two_contacts())
    }

    /// The rows of two contacts (μ = 0.5, zero gaps), rows 0–2 and 3–5.
    fn two_contacts() -> [NewtonRow; 6] {
        [
            NewtonRow::Unilateral { gap: 0.0 },
            NewtonRow::FrictionPair { normal_row: 0, mu: 0.5 },
            NewtonRow::FrictionSecond,
            NewtonRow::Unilateral { gap: 0.0 },
            NewtonRow::FrictionPair { normal_row: 3, mu: 0.5 },
            NewtonRow::FrictionSecond,
        ]
    }

    /// The normal and friction totals of [`redundant_sliding_problem`]'s two contacts.
    fn redundant_totals(p: &[f64]) -> (f64, f64, f64) {
        (p[0] + p[3], p[1] + p[4], p[2] + p[5])
    }

    /// The rescue's projected Gauss–Seidel sweeps on the redundant sliding contact reach the
    /// totals, and the exact iteration started there converges.
    #[test]
    fn projected_sweeps_solve_a_redundant_sliding_contact() {
        let (d, free, rows) = redundant_sliding_problem();
        let m = 6;
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let opts = exact_options(1e-9);
        let (mut p, mut w) = ([0.0; 6], [0.0; 6]);
        projected_sweeps(&prob, &opts, &mut p, &mut w, 200);
        let (n, fx, fy) = redundant_totals(&p);
        assert!((n - 0.02).abs() < 1e-12 && (fx + 0.01).abs() < 1e-12 && fy.abs() < 1e-12, "sweeps: {p:?}");
        assert!(p[0] >= 0.0 && p[3] >= 0.0 && p[1].hypot(p[2]) <= 0.5 * p[0] + 1e-15 && p[4].hypot(p[5]) <= 0.5 * p[3] + 1e-15, "cones: {p:?}");
        let mut y = p;
        let mut scr = NewtonScratch::new(m);
        let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
        let stats = solve(&prob, &opts, &mut scr, &mut it);
        let (n, fx, fy) = redundant_totals(&p);
        assert!(stats.converged && (n - 0.02).abs() < 1e-9 && (fx + 0.01).abs() < 1e-9 && fy.abs() < 1e-9, "{stats:?} {p:?}");
    }

    /// The proximal-point rescue on the redundant sliding contact, from a start far from any
    /// solution (all the normal impulse, three times too much, on one contact and friction the
    /// wrong way on the other): its rounds converge to the laws' own tolerance with the right
    /// totals, the iterate inside both cones.
    #[test]
    fn proximal_point_solves_a_redundant_sliding_contact_from_a_poor_start() {
        let (d, free, rows) = redundant_sliding_problem();
        let m = 6;
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let opts = exact_options(1e-9);
        let mut p = [0.06, 0.0, 0.0, 0.0, 0.01, 0.0];
        let mut y = p;
        let mut scr = NewtonScratch::new(m);
        let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
        let stats = proximal_point(&prob, &opts, f64::INFINITY, &mut scr, &mut it);
        let (n, fx, fy) = redundant_totals(&p);
        assert!(stats.converged && stats.residual_m_s <= 1e-9 && stats.proximal_rounds >= 1, "{stats:?}");
        assert!((n - 0.02).abs() < 1e-9 && (fx + 0.01).abs() < 1e-9 && fy.abs() < 1e-9, "{p:?}");
        assert!(p[0] >= -1e-12 && p[3] >= -1e-12 && p[1].hypot(p[2]) <= 0.5 * p[0] + 1e-9 && p[4].hypot(p[5]) <= 0.5 * p[3] + 1e-9, "cones: {p:?}");
    }

    /// The consecutive blocks of a problem with two independent contacts and a joint row coupled
    /// to the second one, and the block-by-block LU against the whole matrix's, bit for bit.
    #[test]
    fn block_lu_is_bit_identical_to_the_whole_matrix_lu() {
        let m = 7;
        // rows 0–2: contact A; 3–5: contact B; 6: a joint row coupled to contact B only
        let mut d = vec![0.0; m * m];
        let mut seed = 7u64;
        let mut rand = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64) / ((1u64 << 53) as f64) - 0.5
        };
        for block in [0..3, 3..7] {
            for r in block.clone() {
                for c in block.clone() {
                    d[r * m + c] = rand();
                }
                d[r * m + r] += 3.0;
            }
        }
        // symmetric pattern (the values need not be: J is unsymmetric)
        let rows: Vec<NewtonRow> = two_contacts().into_iter().chain([NewtonRow::Bilateral { error: 0.0, compliance: 0.0 }]).collect();
        let free = [0.0; 7];
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let (mut reach, mut trees, mut ends) = ([0; 7], [(0, 0); 14], [0; 7]);
        assert_eq!(consecutive_blocks(&prob, &mut reach, &mut trees, &mut ends), 2);
        assert_eq!(&ends[..2], &[3, 7]);
        // the same blocks from the rows' trees: contact A on tree 4 against the world, contact B
        // between trees 2 and 9, the joint row on tree 9
        let none = crate::contact::NO_TREE;
        let row_trees = [(4, none), (4, none), (4, none), (2, 9), (2, 9), (2, 9), (9, none)];
        let by_trees = NewtonProblem { row_trees: Some(&row_trees), ..prob };
        let mut tree_ends = [0; 7];
        assert_eq!(consecutive_blocks(&by_trees, &mut reach, &mut trees, &mut tree_ends), 2);
        assert_eq!(&tree_ends[..2], &[3, 7]);
        // contact A on tree 9 too: one block
        let coupled = [(4, 9), (4, 9), (4, 9), (2, 9), (2, 9), (2, 9), (9, none)];
        assert_eq!(consecutive_blocks(&NewtonProblem { row_trees: Some(&coupled), ..prob }, &mut reach, &mut trees, &mut tree_ends), 1);
        assert_eq!(tree_ends[0], 7);
        let b: Vec<f64> = (0..m).map(|_| rand()).collect();
        let (mut whole, mut pivot) = (d.clone(), [0; 7]);
        let mut x_whole = b.clone();
        assert!(lu_in_place(&mut whole, m, &mut pivot));
        lu_solve(&whole, m, &pivot, &mut x_whole);
        let mut blocks = d.clone();
        let mut x_blocks = b.clone();
        let mut start = 0;
        for &end in &ends[..2] {
            assert!(lu_in_place_block(&mut blocks, m, start, end - start, &mut pivot[..end - start]));
            lu_solve_block(&blocks, m, start, &pivot[..end - start], &mut x_blocks[start..end]);
            start = end;
        }
        assert_eq!(whole, blocks);
        assert_eq!(x_whole, x_blocks);
        // and it solves the system
        for r in 0..m {
            let ax: f64 = (0..m).map(|c| d[r * m + c] * x_whole[c]).sum();
            assert!((ax - b[r]).abs() < 1e-12);
        }
    }

    /// The default preset's exact iteration at a 1 ms step (min-map, line search, ε = 1e-6).
    fn exact_options(tolerance_m_s: f64) -> NewtonOptions {
        NewtonOptions { timestep_s: 0.001, tolerance_m_s, jacobian: NewtonJacobian::Exact, line_search: true, regularization: 1e-6, ..options(NcpFunction::MinMap, 30) }
    }

    /// The AVX2 build of the exact iteration's kernels (chosen at run time on x86-64 CPUs that
    /// have it) gives the same bits as the portable build: the LU of a 37-row matrix with
    /// pivoting, a block Delassus product, and the laws with their Jacobian. On a CPU without
    /// AVX2 both sides run the portable code.
    #[test]
    fn the_avx2_build_is_bit_identical_to_the_portable_one() {
        let n = 37;
        let mut a = spd(n, 5, 1e2);
        for (k, v) in a.iter_mut().enumerate() {
            // unsymmetric, with pivoting
            *v += ((k * 7919 % 101) as f64 - 50.0) * 1e-2;
        }
        let (mut wide, mut portable) = (a.clone(), a.clone());
        let (mut pivot_wide, mut pivot_portable) = (vec![0; n], vec![0; n]);
        assert!(lu_in_place_block(&mut wide, n, 0, n, &mut pivot_wide));
        assert!(lu_in_place_block_portable(&mut portable, n, 0, n, &mut pivot_portable));
        assert_eq!(pivot_wide, pivot_portable);
        assert!(wide.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.to_bits()));
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let ends = [12, n];
        let (mut out_wide, mut out_portable) = (vec![0.0; n], vec![0.0; n]);
        block_delassus_product(&a, n, &ends, &x, &mut out_wide, None);
        block_delassus_product_serial(&a, n, &ends, &x, &mut out_portable);
        assert!(out_wide.iter().zip(&out_portable).all(|(x, y)| x.to_bits() == y.to_bits()));
        let (d, rows, free, p) = mixed_rows_problem();
        let m = rows.len();
        let opts = exact_options(1e-9);
        let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
        let one_block = [m];
        let laws = |wide: bool| {
            let (mut f, mut natural, mut jac) = (vec![0.0; m], vec![0.0; m], vec![0.0; m * m]);
            let values = if wide {
                exact_laws(&prob, &opts, &p, &free, &mut f, &mut natural, Some((&mut jac, &one_block[..])))
            } else {
                exact_laws_portable(&prob, &opts, &p, &free, &mut f, &mut natural, Some((&mut jac, &one_block[..])))
            };
            (values.0.to_bits(), values.1.to_bits(), [f, natural, jac].concat().iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        };
        assert_eq!(laws(true), laws(false));
    }

    /// The row-combination product of a symmetric matrix agrees bit for bit with the row-dot one.
    #[test]
    fn symmetric_product_is_bit_identical_to_the_row_product() {
        let n = 37;
        let b = spd(n, 11, 1e3);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in i..n {
                a[i * n + j] = b[i * n + j];
                a[j * n + i] = b[i * n + j];
            }
        }
        let x: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 0.0 } else { (i as f64 * 0.37).sin() }).collect();
        let (mut rows, mut combined) = (vec![0.0; n], vec![0.0; n]);
        delassus_product(&a, n, &x, &mut rows, None);
        symmetric_delassus_product(&a, n, &x, &mut combined, None);
        assert!(rows.iter().zip(&combined).all(|(r, c)| r == c), "{rows:?} {combined:?}");
    }

    /// LU with partial pivoting solves a system whose first pivot is zero.
    #[test]
    fn lu_solves_with_pivoting() {
        let a0 = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
        let x_true = [1.0, -2.0, 0.5];
        let b: Vec<f64> = (0..3).map(|r| (0..3).map(|c| a0[r * 3 + c] * x_true[c]).sum()).collect();
        let (mut a, mut piv, mut x) = (a0, [0usize; 3], [b[0], b[1], b[2]]);
        assert!(lu_in_place(&mut a, 3, &mut piv));
        lu_solve(&a, 3, &piv, &mut x);
        for k in 0..3 {
            assert!((x[k] - x_true[k]).abs() < 1e-14, "{x:?}");
        }
    }
}
