//! Per-contact bisection solver: Hwangbo, Lee & Hutter, "Per-Contact Iteration Method for
//! Solving Contact Dynamics", IEEE RA-L 3(2), 2018 (the RaiSim solver).
//!
//! # Method
//!
//! The contacts are swept Gauss–Seidel style (nonlinear block SOR, paper §III-B, Alg. 2). For
//! contact `i`, all other impulses are held at their latest values and its local problem
//!
//! ```text
//!   v_i = c_i + G_ii λ_i,      c_i = u_free,i + Σ_{k≠i} G_ik λ_k
//! ```
//!
//! is solved *exactly* on the true (circular) cone with the maximum-dissipation model of the paper's
//! eq. (8): `λ_i* = argmin ½ v_iᵀ G_ii⁻¹ v_i` over `{λ in the cone, v_n = 0}` for a closing
//! contact. Three cases (paper §III-A; `docs/bisection.md`):
//! - **open**: `c_n ≥ 0` → `λ* = 0`;
//! - **sticking**: `λ^{v=0} = −G_ii⁻¹ c_i` lies in the cone → `λ* = λ^{v=0}`, `v_i = 0`;
//! - **sliding**: otherwise `λ*` lies on the conic section {cone boundary} ∩ {v_n = 0}. It is
//!   parameterised by the polar angle θ of `λ_t` (eqs. 13–14) and found by stepping away from the
//!   initial guess `θ⁰ = atan2(λ^{v=0}_t2, λ^{v=0}_t1)` against the sign of `dE/dθ` until the sign
//!   flips, then narrowing that bracket on the sign (Alg. 1; the paper halves it, we choose the
//!   trial point by a safeguarded regula falsi, see "Root finding" below). The sign is evaluated with the paper's "hybrid"
//!   reduced Delassus `Ḡ`, `c̄` (eqs. 15–16). Trial points with `r ≤ 0` (the other nappe /
//!   asymptote of a hyperbolic section) or not in the line of sight of `λ^{v=0}` are rejected.
//!
//! The update is relaxed: `λ_i ← α λ_i* + (1 − α) λ_i`, and after every sweep
//! `α ← α_min + γ (α − α_min)` (paper §V: α₀ = 1, γ = 0.99, α_min = 0.7). Since `α ≤ 1` and the
//! cone is convex, every iterate stays inside the cone.
//!
//! Joint rows (limits, joint friction, mimic couplings; bilateral when the bounds are ±∞) are
//! handled in the same sweep by the exact 1-D projected update
//! `λ_r* = clamp(λ_r − u_r / G_rr, lo_r, hi_r)` with the same relaxation (our extension, the paper has no joint rows: from the
//! 1-D unilateral joint limit, box bounds are the straightforward generalisation).
//!
//! Row order: the problem stores each contact as `[normal, t1, t2]` (normal first); the paper's
//! formulas use `(x, y, z)` with the normal last. Internally `x = t1, y = t2, z = n`.
//!
//! # Termination and `SolveStats`
//!
//! The paper stops on "the exact violations of the physical constraints" (§V) without defining
//! them; we use the following (`docs/bisection.md`). During a sweep, for every contact and joint
//! row with old impulse `λ_i` and local exact solution `λ_i*` (given the latest others):
//!
//! ```text
//!   e_λ = Σ_i ‖λ_i − λ_i*‖₂            (N·s; N·m·s for rotational joint rows)
//!   e_v = Σ_i ‖G_ii (λ_i − λ_i*)‖₂      (m/s; rad/s) = Σ_i ‖v_i(λ_i) − v_i(λ_i*)‖₂
//! ```
//!
//! `e_v` is the exact velocity violation of each contact (penetration or slip velocity of a
//! sticking contact, normal velocity of a sliding one, …); `e_λ` its impulse counterpart. Both vanish
//! exactly at a fixed point. The solve is **converged when `e_λ ≤ tolerance_impulse` and
//! `e_v ≤ tolerance_velocity`** (defaults 1 µN·s and 1 µm/s, the paper's values).
//! [`SolveStats::residual`] reports `e_λ` of the last sweep, in N·s (the unit of the PGS
//! residual); `iterations` counts sweeps.
//!
//! On convergence the returned impulses are the local exact solutions `λ_i*` of the last sweep
//! rather than their relaxed blend (they differ by at most `e_λ`) [N]: with α < 1 an open contact
//! would otherwise keep a `(1 − α)^k` remnant and a sliding one would sit slightly inside the cone,
//! which blurs the open / stick / slip structure of the answer (and trips
//! [`ContactProblem::violation`], which tests `λ_n ≤ 0` and `‖λ_t‖ < μ λ_n` exactly). If the
//! problem is larger than the scratch reserved at construction, the relaxed iterate is returned.
//! Without convergence (iteration limit) the relaxed iterate is returned.
//!
//! Note: [`ContactProblem::violation`] measures the *Coulomb* law (friction anti-parallel to the
//! slip velocity). The maximum-dissipation solution coincides with it only when the block's
//! normal–tangential coupling `G_ii[n][t]` vanishes (the KKT conditions give
//! `v_t = −κ λ_t/‖λ_t‖ − (κ μ / G_nn) G_tn`), e.g. for `G_ii ∝ I`; otherwise `violation()` reports a
//! friction-direction error on sliding contacts even at the exact solution. That is why it is not
//! used for termination here.
//!
//! # Where this deviates from the paper, and other choices
//!
//! Each item with its evidence (tests, measurements): `docs/bisection.md`.
//! - **Line-of-sight test sign** (Alg. 1 line 13): the paper rejects a trial point when
//!   `∇h₂(λ)·(λ − λ^{v=0}) < 0`; since `∇h₂` is the outward normal of the feasible cone, that
//!   rejects exactly the *visible* points. We reject iff
//!   `∇h₂(λ)·(λ^{v=0} − λ) < 0`. The unit test `paper_visibility_sign_fails_negative_control`
//!   confirms the literal sign gives wrong minimisers.
//! - **Reverting state**: on rejection both θ and λ are reverted, and the
//!   bisection carries `λ^p`, `λ` with `θ^p`, `θ` (the paper's pseudo-code shows only angles while
//!   testing `|λ^p − λ|`).
//! - **Open test** `c_n ≥ 0` (the paper says `c_n > 0`; at `c_n = 0` eq. (14)
//!   gives `r = 0`, i.e. the same `λ = 0`).
//! - **Termination** as above; both forms with separate tolerances.
//! - **Step parameters** β₁, β₂, β₃ are not in the paper. β₁ = 10⁻² rad and β₂ = 0.5 are
//!   ContactBench's (Simple-Robotics' re-implementation); β₃ = 2 (ContactBench: 1.3) [N]: it brackets the
//!   root in fewer trial points, and with β₂ = ½ and β₃ = 2 the rotation by the step is updated by
//!   the half- and double-angle formulas instead of `sin_cos` (callgrind: 4 100 → 2 700
//!   instructions per sliding solve, together with the tolerance below). The step and bisection
//!   loops are capped [N]; if no bracket is found the best visible point is returned.
//!   The angular step is additionally capped at π/4 so an accepted step cannot jump across the
//!   invisible part of the section [N].
//! - **Root finding on `t = tan(φ/2)`** [N]: once bracketed, the arc is parameterised by `t`, the
//!   tangent of half the angle from one end of the bracket, rather than by θ itself: a monotone
//!   reparameterisation of the same arc whose trial points need no trigonometry.
//! - **Root finding: safeguarded Illinois instead of halving** [N] — *our deviation from the
//!   paper*, which halves the bracket (Alg. 1) until the two bracketing impulses are within the
//!   tolerance. We keep the paper's bracket and its invariant — the two ends have opposite signs
//!   of `dE/dθ`, each trial point replaces the end with its sign, and the loop stops on the same
//!   test (bracketing impulses within `bisection_tolerance`) — but the trial point inside the
//!   bracket is the regula-falsi (secant) root of the sign function's *values*, with the Illinois
//!   modification (an end kept twice in a row has its value halved for the next secant, so both
//!   ends converge), and two safeguards: a trial point outside the open bracket is replaced by the
//!   midpoint, and if three trial points have not halved the bracket the next one is the midpoint
//!   (a window of two, as first planned, fires on the common one-sided approach, where regula
//!   falsi converges onto the root from one end while the other end stays put, and costs a
//!   wasted halving). A secant step shorter than the tolerance (in `t`, from the chord slope of
//!   the initial bracket) is lengthened to it, so the trial point lands just past the root and the
//!   bracket closes (Brent's device). The sign function is not `v·η̌` itself but
//!   `F(t) = −c_z A(t) + den(t) B(t)` (see `slip`), a positive multiple of it with the same roots
//!   and no division. Why: the plain halving needs ~27 trial points for 10⁻⁸ N·s from a bracket of
//!   up to π/4, the regula falsi 4–5 on the paper's four experiments; the sliding solve went from
//!   ≈0.5 µs to ≈0.2 µs (target: 0.3 µs; docs/benchmark-log.md). The answer is the regula-falsi
//!   point of the final bracket, within the tolerance of the halving's; the unit test
//!   `illinois_root_finder_matches_plain_halving_with_fewer_evaluations` checks both against a
//!   halving to one ulp, and that fewer evaluations are needed.
//! - **Bracketing jump** [N]: after the first accepted step of the bracketing phase (β₁), the next
//!   step is 1.5 times the secant prediction of the sign change from the first two `dE/dθ`
//!   values (at least β₃ β₁, at most π/4), instead of β₃ β₁; then the paper's growth resumes.
//!   Every trial point is still checked for feasibility and visibility. On the paper's four
//!   experiments this halves the bracketing steps (trot: 3.7 → 2.0 per sliding solve).
//! - **Bisection tolerance**: the paper's 10⁻⁶ N·s was for the single-contact benchmark (§V,
//!   Table I). Used inside the sweep, that would put a floor of ~10⁻⁶ N·s under `e_λ`, i.e. at the
//!   termination tolerance itself, so the default here is 10⁻⁸ N·s, two orders below it (about 7
//!   more halvings than the paper's, before the regula falsi; going there from 10⁻¹⁰ changed
//!   no converged answer by more than 5·10⁻⁹ N·s on the four experiments).
//! - **`D₀ ≈ 0`**: the initial guess is returned when `|dE/dθ|` is below 10⁻¹³ of
//!   `‖v_t‖‖η̌_t‖` (the isotropic case, where it is exactly optimal).
//! - **Degenerate / ill-conditioned blocks** (paper footnote 2) [N]: a block whose
//!   Frobenius condition estimate `‖G‖_F ‖G⁻¹‖_F` exceeds `1/singular_threshold` (default 10¹⁰), or
//!   that is not numerically positive definite, is regularised as `G_ii + ε I`,
//!   `ε = singular_threshold · max diag` (raised ×100 until the Cholesky factorisation succeeds).
//!   Well-conditioned blocks, including condition numbers around 10⁸, are used exactly. The often
//!   suggested `ε = 10⁻⁹ tr(G)` is only meant for rank-deficient blocks: applied to a
//!   condition-10⁸ block it would shift its soft eigenvalue by tens of percent. For `G = J M⁻¹ Jᵀ`
//!   and `c ∈ range(J)` the shifted solution tends to the minimum-norm one, so impulses stay
//!   bounded. A block with all diagonal entries ≤ 10⁻¹⁴ has no mobility; its impulse is set to 0.
//! - **Frictionless contacts** (`μ ≤ 0`) [N]: the cone degenerates to a ray; a closing contact gets
//!   `λ = (−c_n / G_nn, 0, 0)`.
//! - **Warm start** [N]: the incoming impulses are first projected onto the cones and bounds
//!   (non-finite values reset to 0), so the relaxed iterates stay feasible.
//! - **MDP vs Coulomb** (refines the usual statement that friction is anti-parallel to the
//!   slip "when `G_ii ∝ I`" and not for "anisotropic `G_ii`"): the exact condition is a vanishing
//!   normal–tangential coupling `G_ii[n][t1] = G_ii[n][t2] = 0` (see the KKT relation above); an
//!   anisotropic tangential 2×2 block alone does not break it. The unit tests that compare with
//!   the Coulomb PGS use isotropic diagonal blocks, where the two models have the same
//!   solutions. On the quadruped's feet the coupling is strong (`|G_nt|` comparable to `G_nn`):
//!   on steps with a sliding contact the two answers differ by 0.5–7 % (median) and up to
//!   90–270 % (worst step) on the paper's four experiments (`tests/bisection_experiments.rs`).

// `!(x > 0.0)` is deliberate throughout: it also catches NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use super::method::{check_params, contact_method, tolerance_and_iterations, Capabilities, ImpulseSolver, MethodParams, ParamError, SceneCoverage};
use super::ContactRows;

mod probe;
use super::{ContactProblem, FrictionModel, SolveStats};
use crate::model::Model;

/// Parameters of the per-contact bisection solver (YAML `solver: {kind: bisection, ...}`).
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BisectionParams {
    /// Maximum number of sweeps over all contacts and joint rows. Default 200.
    pub max_iterations: u32,
    /// Impulse tolerance (N·s): stop when `e_λ = Σ ‖λ_i − λ_i*‖` over contacts and joint rows is at
    /// most this *and* the velocity test passes (see the module docs). Default 1e-6 (1 µN·s).
    pub tolerance_impulse: f64,
    /// Velocity tolerance (m/s): `e_v = Σ ‖G_ii (λ_i − λ_i*)‖`. Default 1e-6 (1 µm/s).
    pub tolerance_velocity: f64,
    /// Initial relaxation factor α₀ of the block SOR update `λ ← α λ* + (1 − α) λ`, in (0, 1].
    /// Default 1 (paper).
    pub relaxation: f64,
    /// Decay γ of the relaxation after each sweep: `α ← α_min + γ (α − α_min)`, in [0, 1].
    /// Default 0.99 (paper).
    pub relaxation_decay: f64,
    /// Floor α_min the relaxation decays to, in (0, 1]. Default 0.7 (paper).
    pub relaxation_min: f64,
    /// Initial angular step β₁ of the sliding-case search (rad), > 0. Default 1e-2.
    pub angle_step: f64,
    /// Step shrink factor β₂ after a rejected trial point, in (0, 1). Default 0.5.
    pub step_shrink: f64,
    /// Step growth factor β₃ while no sign change is found, ≥ 1. Default 2. (The second step is
    /// the larger of β₃ β₁ and 1.5 times the secant prediction of the sign change; module docs,
    /// "Bracketing jump".)
    pub step_growth: f64,
    /// The sliding case's root finding (the paper's bisection; here a safeguarded regula falsi
    /// on the same bracket) stops when the two bracketing impulses are this close (N·s), ≥ 0;
    /// inside the solver at most `tolerance_impulse / 100`. Default 1e-8.
    pub bisection_tolerance: f64,
    /// Cap on the trial steps of the bracketing phase per sliding solve, ≥ 1. Default 100.
    pub max_step_iterations: u32,
    /// Cap on the trial points of the root finding (bisection) phase per sliding solve, ≥ 1.
    /// Default 100.
    pub max_bisection_iterations: u32,
    /// A contact's 3×3 Delassus block whose condition estimate exceeds `1 / singular_threshold`
    /// is regularised with `singular_threshold × max diag` on its diagonal (dimensionless, in
    /// [0, 1)). Default 1e-10.
    pub singular_threshold: f64,
}

impl Default for BisectionParams {
    fn default() -> Self {
        BisectionParams {
            max_iterations: 200,
            tolerance_impulse: 1e-6,
            tolerance_velocity: 1e-6,
            relaxation: 1.0,
            relaxation_decay: 0.99,
            relaxation_min: 0.7,
            angle_step: 1e-2,
            step_shrink: 0.5,
            step_growth: 2.0,
            bisection_tolerance: 1e-8,
            max_step_iterations: 100,
            max_bisection_iterations: 100,
            singular_threshold: 1e-10,
        }
    }
}

impl BisectionParams {
    /// The relaxation factor for the sweep after one with factor `alpha`.
    #[inline]
    pub fn next_relaxation(&self, alpha: f64) -> f64 {
        self.relaxation_min + self.relaxation_decay * (alpha - self.relaxation_min)
    }
}

/// Diagonal entries at or below this (m/s per N·s) mean "no mobility" (as in PGS).
const TINY: f64 = 1e-14;
/// Internal (x, y, z) = (t1, t2, n) component → row offset inside the contact's `[n, t1, t2]`.
const MAP: [usize; 3] = [1, 2, 0];

/// Per-contact data computed once per solve: the local 3×3 block and its factorisation.
#[derive(Clone, Copy, Debug, Default)]
struct Block {
    /// The (possibly regularised) block, (x, y, z) order, symmetrised.
    g: [[f64; 3]; 3],
    /// Diagonal shift added to regularise it (0 for a well-conditioned block).
    shift: f64,
    /// Cholesky factor of `g` with reciprocal diagonal: `[1/l00, l10, 1/l11, l20, l21, 1/l22]`.
    chol: [f64; 6],
    /// Hybrid reduced Delassus `Ḡ` (eq. 16), rows and columns x, y.
    gbar: [[f64; 2]; 2],
    /// `G_xz / G_zz`, `G_yz / G_zz` (for `c̄ = c − G_(:,z) c_z / G_zz`).
    kz: [f64; 2],
    /// The block is ≈ 0: the contact cannot move, its impulse is irrelevant and set to 0.
    inactive: bool,
}

fn cholesky(g: &[[f64; 3]; 3]) -> Option<[f64; 6]> {
    let d0 = g[0][0];
    if !(d0 > 0.0 && d0.is_finite()) {
        return None;
    }
    let l00 = d0.sqrt();
    let l10 = g[1][0] / l00;
    let l20 = g[2][0] / l00;
    let d1 = g[1][1] - l10 * l10;
    if !(d1 > 0.0 && d1.is_finite()) {
        return None;
    }
    let l11 = d1.sqrt();
    let l21 = (g[2][1] - l20 * l10) / l11;
    let d2 = g[2][2] - l20 * l20 - l21 * l21;
    if !(d2 > 0.0 && d2.is_finite()) {
        return None;
    }
    Some([l00, l10, l11, l20, l21, d2.sqrt()])
}

/// Frobenius condition estimate `‖G‖_F ‖adj G‖_F / det G` (between κ₂ and 3κ₂); ∞ if det ≤ 0.
fn condition_estimate(g: &[[f64; 3]; 3]) -> f64 {
    let a00 = g[1][1] * g[2][2] - g[1][2] * g[2][1];
    let a01 = g[0][2] * g[2][1] - g[0][1] * g[2][2];
    let a02 = g[0][1] * g[1][2] - g[0][2] * g[1][1];
    let a11 = g[0][0] * g[2][2] - g[0][2] * g[2][0];
    let a12 = g[0][2] * g[1][0] - g[0][0] * g[1][2];
    let a22 = g[0][0] * g[1][1] - g[0][1] * g[1][0];
    let det = g[0][0] * a00 + g[1][0] * a01 + g[2][0] * a02;
    if !(det > 0.0) {
        return f64::INFINITY;
    }
    let adj = (a00 * a00 + a11 * a11 + a22 * a22 + 2.0 * (a01 * a01 + a02 * a02 + a12 * a12)).sqrt();
    let nrm = g.iter().flatten().map(|x| x * x).sum::<f64>().sqrt();
    nrm * adj / det
}

impl Block {
    /// Reads contact `c`'s block from `p` and prepares it.
    fn new(p: &ContactProblem, c: usize, singular_threshold: f64) -> Block {
        let i = p.contact_row(c);
        let mut g = [[0.0; 3]; 3];
        for (a, row) in g.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = 0.5 * (p.g(i + MAP[a], i + MAP[b]) + p.g(i + MAP[b], i + MAP[a]));
            }
        }
        let mut blk = Block { inactive: true, ..Block::default() };
        let max_diag = g[0][0].max(g[1][1]).max(g[2][2]);
        if !(max_diag > TINY) || !g.iter().flatten().all(|x| x.is_finite()) {
            return blk;
        }
        let mut shift = 0.0;
        let mut chol = None;
        if condition_estimate(&g) * singular_threshold <= 1.0 {
            chol = cholesky(&g);
        }
        if chol.is_none() {
            shift = singular_threshold.max(1e-15) * max_diag;
            for _ in 0..10 {
                let mut gs = g;
                for (k, row) in gs.iter_mut().enumerate() {
                    row[k] += shift;
                }
                chol = cholesky(&gs);
                if chol.is_some() {
                    g = gs;
                    break;
                }
                shift *= 100.0;
            }
        }
        let Some(chol) = chol else {
            return blk; // not positive semi-definite even after shifting: leave the contact alone
        };
        let gzz = g[2][2];
        let kz = [g[0][2] / gzz, g[1][2] / gzz];
        let mut gbar = [[0.0; 2]; 2];
        for (a, row) in gbar.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = g[a][b] - g[a][2] * kz[b];
            }
        }
        blk.g = g;
        blk.shift = shift;
        let [l00, l10, l11, l20, l21, l22] = chol;
        blk.chol = [1.0 / l00, l10, 1.0 / l11, l20, l21, 1.0 / l22];
        blk.gbar = gbar;
        blk.kz = kz;
        blk.inactive = false;
        blk
    }

    /// `G⁻¹ b` with the Cholesky factor.
    fn solve(&self, b: [f64; 3]) -> [f64; 3] {
        let [i00, l10, i11, l20, l21, i22] = self.chol;
        let y0 = b[0] * i00;
        let y1 = (b[1] - l10 * y0) * i11;
        let y2 = (b[2] - l20 * y0 - l21 * y1) * i22;
        let x2 = y2 * i22;
        let x1 = (y1 - l21 * x2) * i11;
        let x0 = (y0 - l10 * x1 - l20 * x2) * i00;
        [x0, x1, x2]
    }
}

#[inline]
fn norm2(a: f64, b: f64) -> f64 {
    (a * a + b * b).sqrt()
}
#[inline]
fn norm3(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Exact solution of one contact's local problem (`v = c + G λ`, maximum dissipation on the
/// true cone), in (x, y, z) = (t1, t2, n) order.
fn solve_contact(blk: &Block, c: [f64; 3], mu: f64, prm: &BisectionParams) -> [f64; 3] {
    solve_contact_impl::<false>(blk, c, mu, prm)
}

/// `PAPER_SIGN = true` uses the literal (wrong) sign of Alg. 1 line 13; tests only.
fn solve_contact_impl<const PAPER_SIGN: bool>(blk: &Block, c: [f64; 3], mu: f64, prm: &BisectionParams) -> [f64; 3] {
    // open (c_z ≥ 0, see docs/bisection.md)
    if !(c[2] < 0.0) {
        return [0.0; 3];
    }
    let gzz = blk.g[2][2];
    // frictionless: the cone is the ray λ_t = 0
    if !(mu > 0.0) {
        return [0.0, 0.0, -c[2] / gzz];
    }
    let mu = mu.min(1e12);
    // sticking: λ^{v=0} = −G⁻¹ c inside the cone (implies λ^{v=0}_z ≥ 0)
    let s = blk.solve(c);
    let lv0 = [-s[0], -s[1], -s[2]];
    if mu * lv0[2] >= norm2(lv0[0], lv0[1]) {
        return lv0;
    }
    slip::<PAPER_SIGN, false>(blk, c, mu, lv0, prm).0
}

/// `(cos, sin)` of the angle `step`, given those of the previous step `old`: doubling, halving
/// and the π/4 cap (the default step factors) without trigonometry.
#[inline]
fn rotation(step: f64, old: f64, rot: [f64; 2]) -> [f64; 2] {
    let [c, s] = rot;
    if step == old {
        rot
    } else if step == 2.0 * old {
        [1.0 - 2.0 * s * s, 2.0 * s * c]
    } else if step == 0.5 * old {
        // |old| ≤ π/4, so cos(old / 2) > 0
        let ch = (0.5 * (1.0 + c)).sqrt();
        [ch, s / (2.0 * ch)]
    } else if step.abs() == std::f64::consts::FRAC_PI_4 {
        [std::f64::consts::FRAC_1_SQRT_2, std::f64::consts::FRAC_1_SQRT_2.copysign(step)]
    } else {
        let (s, c) = step.sin_cos();
        [c, s]
    }
}

/// The sliding case: Alg. 1 with our corrections (module docs, `docs/bisection.md`). Returns the impulse and
/// the number of gradient evaluations after the initial guess (bracketing steps plus root-finding
/// trial points; for tests). `HALVING = true` replaces the safeguarded Illinois step of the
/// root-finding phase by the paper's plain halving (the reference of the tests).
///
/// Long by design: one numeric algorithm read top to bottom against the paper, whose
/// intermediate values feed each other in a fixed order (splitting it would move state into
/// parameter structs without making a step of it separately meaningful).
fn slip<const PAPER_SIGN: bool, const HALVING: bool>(
    blk: &Block,
    c: [f64; 3],
    mu: f64,
    lv0: [f64; 3],
    prm: &BisectionParams,
) -> ([f64; 3], u32) {
    let g = &blk.g;
    let (gzx, gzy, gzz) = (g[2][0], g[2][1], g[2][2]);
    let cz = c[2];
    let a = gzz / mu;
    let mu2 = mu * mu;
    // hybrid offset c̄ (eq. 16), x and y rows (its z row is 0)
    let cbar = [c[0] - blk.kz[0] * cz, c[1] - blk.kz[1] * cz];
    let gb = &blk.gbar;
    // Directions of λ_t are unit vectors `(cos θ, sin θ)`: the bisection halves the angle with
    // the bisector of the bracketing directions (their normalised sum, exact since the bracket
    // spans at most π/4), which needs no trigonometry.
    // point of the conic section in direction (cs, sn) (eqs. 13–14); None where r ≤ 0 or r is not
    // finite
    let point = |cs: f64, sn: f64| -> Option<[f64; 3]> {
        let den = a + gzx * cs + gzy * sn;
        if !(den > 0.0) {
            return None;
        }
        let r = -cz / den;
        if !(r.is_finite() && r > 0.0) {
            return None;
        }
        Some([r * cs, r * sn, r / mu])
    };
    // `v · η̌`, of the sign of dE/dθ, with v = Ḡ λ_t + c̄ and η̌ = ∇h₁ × ∇h₂ / 2 (eq. 15); and
    // `‖v_t‖‖η̌_t‖`, its scale
    let velocity = |l: &[f64; 3]| -> [f64; 2] {
        [gb[0][0] * l[0] + gb[0][1] * l[1] + cbar[0], gb[1][0] * l[0] + gb[1][1] * l[1] + cbar[1]]
    };
    let tangent = |l: &[f64; 3]| -> [f64; 2] { [-mu2 * l[2] * gzy - gzz * l[1], gzz * l[0] + mu2 * l[2] * gzx] };
    let grad = |l: &[f64; 3]| -> f64 {
        let (v, e) = (velocity(l), tangent(l));
        v[0] * e[0] + v[1] * e[1]
    };
    // line of sight from λ^{v=0}: ∇h₂(λ)·(λ^{v=0} − λ) ≥ 0 (docs/bisection.md; the paper prints the
    // opposite sign)
    let visible = |l: &[f64; 3]| -> bool {
        let d = ((lv0[0] - l[0]) * l[0] + (lv0[1] - l[1]) * l[1]) - mu2 * l[2] * (lv0[2] - l[2]);
        if PAPER_SIGN {
            !(-d < 0.0)
        } else {
            d >= 0.0
        }
    };

    // θ⁰ = atan2(λ^{v=0}_y, λ^{v=0}_x)
    let nt = norm2(lv0[0], lv0[1]);
    let mut dir = if nt > 0.0 {
        let inv = 1.0 / nt;
        [lv0[0] * inv, lv0[1] * inv]
    } else {
        [1.0, 0.0]
    };
    let Some(mut lam) = point(dir[0], dir[1]) else {
        // cannot happen in exact arithmetic (the radial map of λ^{v=0} is on the section); fall
        // back to λ^{T=0}, which is feasible and dissipative
        return ([0.0, 0.0, -cz / gzz], 0);
    };
    let d0 = grad(&lam);
    let (v, e) = (velocity(&lam), tangent(&lam));
    // |d₀| ≤ 10⁻¹³ ‖v_t‖‖η̌_t‖, squared
    if !(d0 * d0 > 1e-26 * (v[0] * v[0] + v[1] * v[1]) * (e[0] * e[0] + e[1] * e[1])) {
        return (lam, 0); // initial guess stationary (exact for isotropic blocks)
    }
    let mut evals = 0u32;
    // dE/dθ-sign values at λ_p and λ
    let (mut d_p, mut d_cur) = (d0, d0);
    let s0 = d0.signum();
    let max_step = std::f64::consts::FRAC_PI_4;
    let mut step = (-prm.angle_step * s0).clamp(-max_step, max_step);
    let mut rot = rotation(step, 0.0, [1.0, 0.0]);
    let (mut dir_p, mut lam_p) = (dir, lam);
    let mut bracketed = false;
    // initial stepping: find [θ_p, θ] with a sign change of dE/dθ
    for _ in 0..prm.max_step_iterations {
        let dir_n = [dir[0] * rot[0] - dir[1] * rot[1], dir[1] * rot[0] + dir[0] * rot[1]];
        let old = step;
        match point(dir_n[0], dir_n[1]) {
            Some(l) if visible(&l) => {
                let d = grad(&l);
                evals += 1;
                dir_p = dir;
                lam_p = lam;
                dir = dir_n;
                lam = l;
                d_p = d_cur;
                d_cur = d;
                if d * s0 > 0.0 {
                    step = (step * prm.step_growth).clamp(-max_step, max_step);
                    if evals == 1 && d * s0 < d_p * s0 {
                        // first step: jump to 1.5× the secant prediction of the sign change
                        // (at least the growth step), by the rotation with tan(φ/2) = φ/2
                        let jump = (1.5 * old * d / (d_p - d)).clamp(-max_step, max_step);
                        if jump.abs() > step.abs() {
                            step = jump;
                            let t = 0.5 * jump;
                            let w = 1.0 / (1.0 + t * t);
                            rot = [(1.0 - t * t) * w, 2.0 * t * w];
                            continue;
                        }
                    }
                } else {
                    bracketed = true;
                    break;
                }
            }
            _ => {
                step *= prm.step_shrink; // infeasible or out of sight: revert (θ and λ kept) and shrink
                if step.abs() < 1e-15 {
                    break;
                }
            }
        }
        rot = rotation(step, old, rot);
    }
    if !bracketed {
        return (lam, evals); // best visible point found (E decreased along every accepted step)
    }
    // Root finding on the bracket [θ_p, θ] (at most π/4 wide), parameterised by t = tan(φ/2), φ the
    // angle from θ_p: the direction is ((1 − t²) u_p + 2t u_p⊥) / (1 + t²), a monotone map of φ,
    // with one division per trial point and no trigonometry. λ_p and λ follow t_p and t
    // (on rejection both are reverted).
    let up = dir_p;
    let (b, cc) = (gzx * up[0] + gzy * up[1], gzy * up[0] - gzx * up[1]);
    // the point at t: λ = k ((1 − t²) u_p + 2t u_p⊥, (1 + t²)/μ), k = −c_z / (a(1 + t²) + (1 − t²) b + 2t cc)
    let point_t = |t: f64| -> Option<[f64; 3]> {
        let t2 = t * t;
        let (w, s) = (1.0 + t2, 1.0 - t2);
        let den = a * w + s * b + 2.0 * t * cc;
        if !(den > 0.0) {
            return None;
        }
        let k = -cz / den;
        if !(k.is_finite() && k > 0.0) {
            return None;
        }
        Some([k * (s * up[0] - 2.0 * t * up[1]), k * (s * up[1] + 2.0 * t * up[0]), k * w / mu])
    };
    // tan(φ/2) = sin φ / (1 + cos φ) from u_p to u
    let t_end = (up[0] * dir[1] - up[1] * dir[0]) / (1.0 + up[0] * dir[0] + up[1] * dir[1]);
    let tol2 = prm.bisection_tolerance * prm.bisection_tolerance;
    if HALVING {
        let (mut t_p, mut t) = (0.0, t_end);
        // Halve until the bracketing impulses are within the tolerance. Their distance shrinks
        // about twofold per halving, so it is checked only after the number of halvings that
        // estimate predicts (then re-estimated), not after every one.
        let mut budget = prm.max_bisection_iterations;
        'outer: while budget > 0 {
            let dl = [lam_p[0] - lam[0], lam_p[1] - lam[1], lam_p[2] - lam[2]];
            let dist2 = dl[0] * dl[0] + dl[1] * dl[1] + dl[2] * dl[2];
            if dist2 <= tol2 {
                break;
            }
            // ⌈log₂(dist / tol)⌉ = ⌈log₄(dist² / tol²)⌉ halvings, at least one
            let ratio = dist2 / tol2;
            let n = if ratio.is_finite() { ((ratio.log2() * 0.5).ceil() as u32).max(1) } else { budget };
            for _ in 0..n.min(budget) {
                budget -= 1;
                let t_m = 0.5 * (t + t_p);
                if t_m == t || t_m == t_p {
                    break 'outer;
                }
                let Some(lm) = point_t(t_m) else { break 'outer };
                evals += 1;
                if grad(&lm) * s0 > 0.0 {
                    t_p = t_m;
                    lam_p = lm;
                } else {
                    t = t_m;
                    lam = lm;
                }
            }
        }
        return (point_t(0.5 * (t + t_p)).unwrap_or(lam), evals);
    }
    // Safeguarded Illinois (regula falsi) on the sign function
    //   F(t) = −c_z A(t) + den(t) B(t),  A = η̌(m)·(Ḡ m_t),  B = η̌(m)·c̄,
    // where λ(t) = k m(t), k = −c_z / den(t) > 0: since v = k Ḡ m_t + c̄ and η̌ is linear,
    // v·η̌ = k (k A + B) = k F / den, so F has the sign of dE/dθ (and the same roots), and it is
    // a quartic polynomial in t, evaluated without division. The bracket [t_a, t_b] keeps
    // s₀F(t_a) > 0 ≥ s₀F(t_b) (the paper's bisection invariant); only the trial point inside it
    // differs from halving. Its end values are obtained from the bracketing phase's v·η̌ values
    // as F = (v·η̌) den² / (−c_z).
    let mu_inv = 1.0 / mu;
    let ray = |t: f64| -> ([f64; 3], f64) {
        let t2 = t * t;
        let (w, s, tt) = (1.0 + t2, 1.0 - t2, 2.0 * t);
        ([s * up[0] - tt * up[1], s * up[1] + tt * up[0], w], a * w + s * b + tt * cc)
    };
    // s₀ F and λ at t; None where den ≤ 0 (off the section's branch) or k is not finite
    let eval = |t: f64| -> Option<(f64, [f64; 3])> {
        let (m, den) = ray(t);
        if !(den > 0.0) {
            return None;
        }
        // η̌(m) with m_z = w / μ: μ² m_z = μ w
        let e = [-mu * m[2] * gzy - gzz * m[1], gzz * m[0] + mu * m[2] * gzx];
        let gm = [gb[0][0] * m[0] + gb[0][1] * m[1], gb[1][0] * m[0] + gb[1][1] * m[1]];
        let f = -cz * (e[0] * gm[0] + e[1] * gm[1]) + den * (e[0] * cbar[0] + e[1] * cbar[1]);
        let k = -cz / den;
        if !k.is_finite() {
            return None;
        }
        Some((s0 * f, [k * m[0], k * m[1], k * m[2] * mu_inv]))
    };
    let den_p = a + b;
    let den_e = a + gzx * dir[0] + gzy * dir[1];
    let (mut ta, mut tb) = (0.0, t_end);
    let (mut fa, mut fb) = (s0 * d_p * den_p * den_p / -cz, s0 * d_cur * den_e * den_e / -cz);
    let (mut la, mut lb) = (lam_p, lam);
    if !(fa > 0.0 && fb <= 0.0) {
        // cannot happen in exact arithmetic (s₀ d_p > 0 ≥ s₀ d, den > 0); plain halving's answer
        return (point_t(0.5 * t_end).unwrap_or(lam), evals);
    }
    // Illinois weights: the end kept twice in a row has its value halved for the next secant
    let (mut wa, mut wb) = (fa, fb);
    let mut side = 0i8;
    // safeguard: the bracket must halve within every three trial points, else the next is a
    // halving (module docs: why not two)
    let mut width_ref = t_end.abs();
    let mut in_window = 0u8;
    let mut force_half = false;
    // the tolerance in t, from the chord slope |Δλ| / |Δt| of the initial bracket: a secant step
    // shorter than this from the last trial point is lengthened to it, so that the next trial
    // point falls just beyond the root and the bracket closes (as in Brent's method)
    let dl = [la[0] - lb[0], la[1] - lb[1], la[2] - lb[2]];
    let dt_tol = 0.4 * prm.bisection_tolerance * t_end.abs() / norm3(dl);
    for _ in 0..prm.max_bisection_iterations {
        let dl = [la[0] - lb[0], la[1] - lb[1], la[2] - lb[2]];
        if dl[0] * dl[0] + dl[1] * dl[1] + dl[2] * dl[2] <= tol2 || fb == 0.0 {
            break;
        }
        let mid = 0.5 * (ta + tb);
        let mut tm = if force_half { mid } else { (ta * wb - tb * wa) / (wb - wa) };
        if side != 0 && !force_half {
            let (last, other) = if side > 0 { (ta, tb) } else { (tb, ta) };
            if (tm - last).abs() < dt_tol {
                tm = last + dt_tol.copysign(other - last);
            }
        }
        let (lo, hi) = if ta < tb { (ta, tb) } else { (tb, ta) };
        if !(tm > lo && tm < hi) {
            tm = mid;
            if !(tm > lo && tm < hi) {
                break; // the bracket is one ulp wide
            }
        }
        let Some((fm, lm)) = eval(tm) else { break };
        evals += 1;
        if fm > 0.0 {
            ta = tm;
            fa = fm;
            wa = fm;
            la = lm;
            if side > 0 {
                wb *= 0.5;
            }
            side = 1;
        } else {
            tb = tm;
            fb = fm;
            wb = fm;
            lb = lm;
            if side < 0 {
                wa *= 0.5;
            }
            side = -1;
        }
        in_window += 1;
        force_half = false;
        if in_window == 3 {
            let width = (tb - ta).abs();
            force_half = width > 0.5 * width_ref;
            width_ref = width;
            in_window = 0;
        }
    }
    // the regula-falsi point of the final bracket (true end values): within the bracket, and far
    // closer to the root than its midpoint once the secant steps converge
    let tf = if fb == 0.0 { tb } else { (ta * fb - tb * fa) / (fb - fa) };
    let tf = if (tf - ta) * (tf - tb) <= 0.0 { tf } else { 0.5 * (ta + tb) };
    (point_t(tf).unwrap_or(lb), evals)
}

/// One contact's local problem, prepared: the unit of work of a sweep, exposed so that benchmarks
/// can time single-contact solves (the paper's Table I) and tests can check them.
///
/// Vectors are in the problem's `[normal, t1, t2]` order.
#[derive(Clone, Copy, Debug)]
pub struct SingleContact {
    blk: Block,
}

impl SingleContact {
    /// Prepares contact `c` of `p`: its 3×3 Delassus block and factorisation (regularised when
    /// ill-conditioned, as in [`BisectionSolver`]).
    pub fn new(p: &ContactProblem, c: usize, params: &BisectionParams) -> Self {
        SingleContact { blk: Block::new(p, c, params.singular_threshold) }
    }

    /// The local free velocity of contact `c` given the impulses `lambda` of all the others:
    /// `c_c = u_c(λ) − G_cc λ_c` (m/s).
    pub fn local_free_velocity(p: &ContactProblem, c: usize, lambda: &[f64]) -> [f64; 3] {
        let i = p.contact_row(c);
        std::array::from_fn(|a| p.row_velocity(i + a, lambda) - (0..3).map(|b| p.g(i + a, i + b) * lambda[i + b]).sum::<f64>())
    }

    /// The exact local solution for local free velocity `c` (m/s) and friction coefficient `mu`:
    /// what one sweep computes for this contact before relaxation (N·s).
    #[inline]
    pub fn solve(&self, c: [f64; 3], mu: f64, params: &BisectionParams) -> [f64; 3] {
        if self.blk.inactive {
            return [0.0; 3];
        }
        let l = solve_contact(&self.blk, [c[MAP[0]], c[MAP[1]], c[MAP[2]]], mu, params);
        [l[2], l[0], l[1]]
    }

    /// Which of the three cases `c` falls in: 0 open, 1 sticking, 2 sliding (frictionless
    /// closing contacts count as sliding).
    pub fn case(&self, c: [f64; 3], mu: f64) -> u8 {
        if self.blk.inactive || !(c[0] < 0.0) {
            return 0;
        }
        if !(mu > 0.0) {
            return 2;
        }
        let s = self.blk.solve([c[MAP[0]], c[MAP[1]], c[MAP[2]]]);
        if mu.min(1e12) * -s[2] >= norm2(s[0], s[1]) {
            1
        } else {
            2
        }
    }
}

impl MethodParams for BisectionParams {
    type Runtime = BisectionSolver;
    const NAME: &'static str = "bisection";
    const SUMMARY: &'static str = "per-contact bisection with block SOR (Hwangbo et al. 2018, the RaiSim solver)";
    const CAPABILITIES: Capabilities = Capabilities {
        deformables: false,
        contact_rows: ContactRows::POINT,
        friction: FrictionModel::MaximumDissipation,
        dense_mass: false,
        delassus: true,
        delassus_on_demand: false,
        coverage: SceneCoverage::AllRigid,
    };

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.tolerance_impulse >= 0.0, "tolerance_impulse", "must be ≥ 0"),
            (self.tolerance_velocity >= 0.0, "tolerance_velocity", "must be ≥ 0"),
            (self.relaxation > 0.0 && self.relaxation <= 1.0, "relaxation", "must be in (0, 1]"),
            (self.relaxation_decay >= 0.0 && self.relaxation_decay <= 1.0, "relaxation_decay", "must be in [0, 1]"),
            (self.relaxation_min > 0.0 && self.relaxation_min <= 1.0, "relaxation_min", "must be in (0, 1]"),
            (self.angle_step > 0.0 && self.angle_step.is_finite(), "angle_step", "must be > 0 and finite"),
            (self.step_shrink > 0.0 && self.step_shrink < 1.0, "step_shrink", "must be in (0, 1)"),
            (self.step_growth >= 1.0 && self.step_growth.is_finite(), "step_growth", "must be ≥ 1 and finite"),
            (self.bisection_tolerance >= 0.0, "bisection_tolerance", "must be ≥ 0"),
            (self.max_step_iterations >= 1, "max_step_iterations", "must be ≥ 1"),
            (self.max_bisection_iterations >= 1, "max_bisection_iterations", "must be ≥ 1"),
            (self.singular_threshold >= 0.0 && self.singular_threshold < 1.0, "singular_threshold", "must be in [0, 1)"),
        ])
    }
    // the impulse tolerance; the velocity tolerance `tolerance_velocity` (m/s) is a second test
    tolerance_and_iterations!(tolerance_impulse, "N·s", max_iterations);
    fn build(&self, model: &Model) -> BisectionSolver {
        BisectionSolver::new(self.clone(), model.contact.max_contacts, model.max_joint_rows())
    }
    fn unit_probe(&self) -> Option<Box<dyn super::UnitProbe>> {
        Some(Box::new(probe::SingleContactProbe::new(self.clone())))
    }
}

contact_method!(BisectionSolver, BisectionParams, Impulse);

/// The per-contact bisection solver with its scratch: the per-contact blocks and the joint rows'
/// diagonal entries, sized at construction.
pub struct BisectionSolver {
    /// Parameters.
    pub params: BisectionParams,
    blocks: Vec<Block>,
    row_diag: Vec<f64>,
    /// The local exact solutions λ* of the current sweep, in problem order.
    star: Vec<f64>,
}

impl BisectionSolver {
    /// Reserves scratch for `max_contacts` contacts and `max_joint_rows` joint rows. Larger
    /// problems are still solved (without the per-solve caches), never by allocating.
    pub fn new(params: BisectionParams, max_contacts: usize, max_joint_rows: usize) -> Self {
        BisectionSolver {
            params,
            blocks: vec![Block::default(); max_contacts],
            row_diag: vec![0.0; max_joint_rows],
            star: vec![0.0; ContactRows::POINT.start(max_contacts) + max_joint_rows],
        }
    }
}

/// Projects the warm start onto the cones and the row bounds (non-finite entries → 0).
fn project_warm_start(p: &ContactProblem, lambda: &mut [f64]) {
    for c in 0..p.num_contacts {
        let i = p.contact_row(c);
        if !lambda[i..i + 3].iter().all(|x| x.is_finite()) {
            lambda[i..i + 3].fill(0.0);
        }
        let ln = lambda[i].max(0.0);
        lambda[i] = ln;
        let limit = p.friction[c].max(0.0) * ln;
        let nt = norm2(lambda[i + 1], lambda[i + 2]);
        if nt > limit {
            let s = if nt > 0.0 { limit / nt } else { 0.0 };
            lambda[i + 1] *= s;
            lambda[i + 2] *= s;
        }
    }
    for r in 0..p.num_joint_rows {
        let i = p.first_joint_row() + r;
        let l = if lambda[i].is_finite() { lambda[i] } else { 0.0 };
        lambda[i] = l.max(p.row_lower[r]).min(p.row_upper[r]);
    }
}

impl ImpulseSolver for BisectionSolver {
    fn solve(&mut self, p: &ContactProblem, lambda: &mut [f64]) -> SolveStats {
        let nc = p.num_contacts;
        let nj = p.num_joint_rows;
        let mut stats = SolveStats::default();
        if p.dim() == 0 {
            stats.converged = true;
            return stats;
        }
        // the single-contact solves stop two orders below the termination tolerance at least,
        // so that their own tolerance does not become a floor under e_λ
        let mut params = self.params.clone();
        params.bisection_tolerance = params.bisection_tolerance.min(1e-2 * params.tolerance_impulse);
        let prm = &params;
        project_warm_start(p, lambda);
        let blocks_cached = nc <= self.blocks.len();
        if blocks_cached {
            for (c, b) in self.blocks[..nc].iter_mut().enumerate() {
                *b = Block::new(p, c, prm.singular_threshold);
            }
        }
        let diag_cached = nj <= self.row_diag.len();
        if diag_cached {
            for (r, d) in self.row_diag[..nj].iter_mut().enumerate() {
                let i = p.first_joint_row() + r;
                *d = p.g(i, i);
            }
        }
        let keep_star = p.dim() <= self.star.len();
        let mut alpha = prm.relaxation;
        for it in 0..prm.max_iterations {
            let mut e_imp = 0.0;
            let mut e_vel = 0.0;
            for c in 0..nc {
                let i = p.contact_row(c);
                let fresh;
                let blk = if blocks_cached {
                    &self.blocks[c]
                } else {
                    fresh = Block::new(p, c, prm.singular_threshold);
                    &fresh
                };
                if blk.inactive {
                    lambda[i..i + 3].fill(0.0);
                    if keep_star {
                        self.star[i..i + 3].fill(0.0);
                    }
                    continue;
                }
                let old = [lambda[i + MAP[0]], lambda[i + MAP[1]], lambda[i + MAP[2]]];
                // local free velocity: c = u − G_ii λ_i (true block, latest other impulses)
                let mut cv = [0.0; 3];
                for (a, cva) in cv.iter_mut().enumerate() {
                    let row = i + MAP[a];
                    let own: f64 = (0..3).map(|b| p.g(row, i + MAP[b]) * old[b]).sum();
                    *cva = p.row_velocity(row, lambda) - own;
                }
                let star = solve_contact(blk, cv, p.friction[c], prm);
                let d = [old[0] - star[0], old[1] - star[1], old[2] - star[2]];
                // true block times d = regularised block times d − shift d
                let mut gd = [0.0; 3];
                for (a, x) in gd.iter_mut().enumerate() {
                    *x = blk.g[a][0] * d[0] + blk.g[a][1] * d[1] + blk.g[a][2] * d[2] - blk.shift * d[a];
                }
                e_imp += norm3(d);
                e_vel += norm3(gd);
                for a in 0..3 {
                    lambda[i + MAP[a]] = alpha * star[a] + (1.0 - alpha) * old[a];
                    if keep_star {
                        self.star[i + MAP[a]] = star[a];
                    }
                }
            }
            for r in 0..nj {
                let i = p.first_joint_row() + r;
                let gii = if diag_cached { self.row_diag[r] } else { p.g(i, i) };
                if !(gii > TINY) {
                    if keep_star {
                        self.star[i] = lambda[i];
                    }
                    continue;
                }
                let old = lambda[i];
                let u = p.row_velocity(i, lambda);
                let star = (old - u / gii).max(p.row_lower[r]).min(p.row_upper[r]);
                let d = old - star;
                e_imp += d.abs();
                e_vel += (gii * d).abs();
                lambda[i] = alpha * star + (1.0 - alpha) * old;
                if keep_star {
                    self.star[i] = star;
                }
            }
            stats.iterations = it + 1;
            stats.residual = e_imp;
            alpha = prm.next_relaxation(alpha);
            if e_imp <= prm.tolerance_impulse && e_vel <= prm.tolerance_velocity {
                stats.converged = true;
                if keep_star {
                    // return the exact local solutions: open contacts exactly 0, sliding ones
                    // exactly on the cone, bounded rows exactly at their bounds
                    lambda[..p.dim()].copy_from_slice(&self.star[..p.dim()]);
                }
                break;
            }
        }
        stats
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
