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
//! row's natural residual factorised by LU (`solve_exact`, in `exact.rs`). The rest of this section
//! is the frozen-compliance form.
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
//!
//! # Files
//!
//! One idea per file; this one holds the shared types (rows, options, problem, iterate,
//! scratch, statistics) and re-exports the public functions of the others:
//!
//! - `laws.rs`: the NCP functions (paper §4.2), the friction compliance (App. A.2) and every
//!   row's law, in the frozen-compliance form and in the exact one;
//! - `delassus.rs`: the products with the dense Delassus matrix `D`;
//! - `krylov.rs`: the Jacobi-preconditioned conjugate residual (paper §8.3);
//! - `frozen.rs`: [`solve`], the frozen-compliance iteration (paper eq. 59–61), which first hands
//!   [`NewtonJacobian::Exact`] problems to the exact iteration and its rescues;
//! - `exact.rs`: the iteration with the exact generalized Jacobian (ours);
//! - `rescue.rs`: the rescues of a stalled exact iteration, proximal point and projected sweeps
//!   (ours);
//! - `blocks.rs`: the consecutive blocks of a problem ([`consecutive_blocks`]);
//! - `decoupled.rs`: the exact Newton matrix's rows that stand alone, solved by a division
//!   beside the LU of the others (ours);
//! - `kept.rs`: the last factorisation, kept for the next step's chord step (ours);
//! - `first_look.rs`: [`first_look`], the warm start and the chord step before `D` is assembled;
//! - `tests.rs`: the unit tests.

mod blocks;
mod decoupled;
mod delassus;
mod exact;
mod first_look;
mod frozen;
mod kept;
mod krylov;
mod laws;
mod rescue;
#[cfg(test)]
mod tests;

pub use blocks::consecutive_blocks;
pub use delassus::{block_delassus_product, delassus_product, symmetric_delassus_product, PARALLEL_ROWS};
pub use first_look::first_look;
pub use frozen::solve;
pub use krylov::conjugate_residual;
pub use laws::{disk_residual, evaluate_laws, fischer_burmeister, friction_compliance, min_map, RowLaws};

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
    /// The system is unsymmetric: dense LU with partial pivoting (Cholesky on a block whose
    /// rows are all Delassus rows, where it is symmetric positive definite), backtracking
    /// (Armijo) on `½‖F‖²`, for which the exact step is a descent direction.
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
    /// Backtracking line search from `step_fraction`: on ‖η‖₂ under the frozen compliance; under
    /// the exact Jacobian, Armijo on `½‖F‖²` in the rescues' rounds (the step's own problem
    /// hands a stall to the rescue: `ExactRun` in `core/exact.rs`). Off: full steps only.
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
    /// Solves with the factorisation kept from an earlier step, which ended the solve
    /// ([`NewtonJacobian::Exact`], the kept factorisation, `core::kept`; 0 or 1): a linear solve without a new
    /// Jacobian or factorisation, not counted in `newton_iterations`.
    pub kept_factor_solves: u32,
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
    /// The factorisation of the last Newton matrix, kept for the next step's first solve
    /// ([`NewtonJacobian::Exact`], the kept factorisation, `core::kept`); lent by the caller for one solve
    /// ([`NewtonScratch::lend_kept_factor`]), empty otherwise.
    pub(crate) kept: Vec<f64>,
    /// Per consecutive block of the last factorisation: how it was factorised.
    block_factor: Vec<kept::BlockFactor>,
    /// Per row, its place in its block's row order when the block's LU is split
    /// (`core::decoupled`): block-local indices, coupled rows first.
    row_order: Vec<usize>,
    /// The coupled rows' LU factors of split blocks, each at `block_start · m` (`m` the problem's rows).
    split_factors: Vec<f64>,
    /// The coupled rows' right-hand sides of a split solve.
    coupled_rhs: Vec<f64>,
    /// The dedicated pool of the Delassus products (`None`: serial).
    pool: Option<rayon::ThreadPool>,
}

impl NewtonScratch {
    /// Lends the kept factorisation (`history`, the state's [`crate::state::State::method_history`])
    /// to the scratch for one [`solve`]; [`Self::return_kept_factor`] gives it back. Swaps the
    /// vectors (no copy); sizes `history` for the scratch's capacity the first time (the one
    /// allocation, at a run's first step).
    pub(crate) fn lend_kept_factor(&mut self, history: &mut Vec<f64>) {
        std::mem::swap(&mut self.kept, history);
        let capacity = kept::capacity(self.pivot.len());
        if self.kept.capacity() < capacity {
            self.kept.reserve_exact(capacity - self.kept.len());
        }
    }

    /// Reserves `history` (a new state's [`crate::state::State::method_history`]) for the
    /// largest kept factorisation of this scratch's capacity (the allocation
    /// [`Self::lend_kept_factor`] would otherwise make at the first step).
    pub(crate) fn reserve_kept_factor(&self, history: &mut Vec<f64>) {
        let capacity = kept::capacity(self.pivot.len());
        if history.capacity() < capacity {
            history.reserve_exact(capacity - history.len());
        }
    }

    /// Gives the kept factorisation back to `history` (see [`Self::lend_kept_factor`]).
    pub(crate) fn return_kept_factor(&mut self, history: &mut Vec<f64>) {
        std::mem::swap(&mut self.kept, history);
    }

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
            kept: Vec::new(),
            block_factor: vec![kept::BlockFactor::Lu; capacity],
            row_order: vec![0; capacity],
            split_factors: vec![0.0; capacity * capacity],
            coupled_rhs: v(),
            pool: if threads > 1 { rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("newton-{i}")).build().ok() } else { None },
        }
    }
}
