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
//! contact. Three cases (paper §III-A, digest §2.1):
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
//! `λ_r* = clamp(λ_r − u_r / G_rr, lo_r, hi_r)` with the same relaxation (digest §2.11 [N] gives the
//! unilateral joint-limit case; box bounds are the straightforward generalisation).
//!
//! Row order: the problem stores each contact as `[normal, t1, t2]` (normal first); the paper's
//! formulas use `(x, y, z)` with the normal last (digest §1.5). Internally `x = t1, y = t2, z = n`.
//!
//! # Termination and `SolveStats`
//!
//! The paper stops on "the exact violations of the physical constraints" (§V) without defining
//! them; we use the digest's reconstruction (§2.7 [R]). During a sweep, for every contact and joint
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
//! # Where this follows the digest against the paper, and other choices
//!
//! Digest = `/work/shared/specs/per-contact-bisection.md`.
//! - **Line-of-sight test sign** (Alg. 1 line 13): the paper rejects a trial point when
//!   `∇h₂(λ)·(λ − λ^{v=0}) < 0`; since `∇h₂` is the outward normal of the feasible cone, that
//!   rejects exactly the *visible* points. We follow the digest (§2.2 [R], §8.1): reject iff
//!   `∇h₂(λ)·(λ^{v=0} − λ) < 0`. The unit test `paper_visibility_sign_fails_negative_control`
//!   confirms the literal sign gives wrong minimisers.
//! - **Reverting state** (digest §8.2 [R]): on rejection both θ and λ are reverted, and the
//!   bisection carries `λ^p`, `λ` with `θ^p`, `θ` (the paper's pseudo-code shows only angles while
//!   testing `|λ^p − λ|`).
//! - **Open test** `c_n ≥ 0` (digest §2.1 [R]; the paper says `c_n > 0`; at `c_n = 0` eq. (14)
//!   gives `r = 0`, i.e. the same `λ = 0`).
//! - **Termination** as above (digest §2.7 [R]); both forms with separate tolerances.
//! - **Step parameters** β₁, β₂, β₃ are not in the paper. β₁ = 10⁻² rad and β₂ = 0.5 are
//!   ContactBench's (digest §3.4 [3rd]); β₃ = 2 (ContactBench: 1.3) [N]: it brackets the
//!   root in fewer trial points, and with β₂ = ½ and β₃ = 2 the rotation by the step is updated by
//!   the half- and double-angle formulas instead of `sin_cos` (issue 4 profile: 4 100 → 2 700
//!   instructions per sliding solve, together with the tolerance below). The step and bisection
//!   loops are capped (digest §8.7 [N]); if no bracket is found the best visible point is returned.
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
//!   up to π/4, the regula falsi 4–5 on the issue-4 experiments; the sliding solve went from
//!   ≈0.5 µs to ≈0.2 µs (issue 4's bar: 0.3 µs; BENCHMARKS.md). The answer is the regula-falsi
//!   point of the final bracket, within the tolerance of the halving's; the unit test
//!   `illinois_root_finder_matches_plain_halving_with_fewer_evaluations` checks both against a
//!   halving to one ulp, and that fewer evaluations are needed.
//! - **Bracketing jump** [N]: after the first accepted step of the bracketing phase (β₁), the next
//!   step is 1.5 times the secant prediction of the sign change from the first two `dE/dθ`
//!   values (at least β₃ β₁, at most π/4), instead of β₃ β₁; then the paper's growth resumes.
//!   Every trial point is still checked for feasibility and visibility. On the issue-4
//!   experiments this halves the bracketing steps (trot: 3.7 → 2.0 per sliding solve).
//! - **Bisection tolerance**: the paper's 10⁻⁶ N·s was for the single-contact benchmark (§V,
//!   Table I). Used inside the sweep, that would put a floor of ~10⁻⁶ N·s under `e_λ`, i.e. at the
//!   termination tolerance itself, so the default here is 10⁻⁸ N·s, two orders below it (about 7
//!   more halvings than the paper's, before the regula falsi; 10⁻¹⁰ before issue 4, which changed
//!   no converged answer by more than 5·10⁻⁹ N·s on the issue's experiments).
//! - **`D₀ ≈ 0`** (digest §8.6): the initial guess is returned when `|dE/dθ|` is below 10⁻¹³ of
//!   `‖v_t‖‖η̌_t‖` (the isotropic case, where it is exactly optimal).
//! - **Degenerate / ill-conditioned blocks** (paper footnote 2; digest §2.9 [N]): a block whose
//!   Frobenius condition estimate `‖G‖_F ‖G⁻¹‖_F` exceeds `1/singular_threshold` (default 10¹⁰), or
//!   that is not numerically positive definite, is regularised as `G_ii + ε I`,
//!   `ε = singular_threshold · max diag` (raised ×100 until the Cholesky factorisation succeeds).
//!   Well-conditioned blocks, including condition numbers around 10⁸, are used exactly. The digest's
//!   suggested `ε = 10⁻⁹ tr(G)` is only meant for rank-deficient blocks: applied to a
//!   condition-10⁸ block it would shift its soft eigenvalue by tens of percent. For `G = J M⁻¹ Jᵀ`
//!   and `c ∈ range(J)` the shifted solution tends to the minimum-norm one, so impulses stay
//!   bounded. A block with all diagonal entries ≤ 10⁻¹⁴ has no mobility; its impulse is set to 0.
//! - **Frictionless contacts** (`μ ≤ 0`) [N]: the cone degenerates to a ray; a closing contact gets
//!   `λ = (−c_n / G_nn, 0, 0)`.
//! - **Warm start** [N]: the incoming impulses are first projected onto the cones and bounds
//!   (non-finite values reset to 0), so the relaxed iterates stay feasible.
//! - **MDP vs Coulomb** (refines digest §1.3 / §8.10, which say friction is anti-parallel to the
//!   slip "when `G_ii ∝ I`" and not for "anisotropic `G_ii`"): the exact condition is a vanishing
//!   normal–tangential coupling `G_ii[n][t1] = G_ii[n][t2] = 0` (see the KKT relation above); an
//!   anisotropic tangential 2×2 block alone does not break it. The unit tests that compare with
//!   the Coulomb PGS use isotropic diagonal blocks, where the two models have the same
//!   solutions. On the quadruped's feet the coupling is strong (`|G_nt|` comparable to `G_nn`):
//!   on steps with a sliding contact the two answers differ by 0.5–7 % (median) and up to
//!   90–270 % (worst step) on the issue-4 experiments (`tests/bisection_experiments.rs`).

// `!(x > 0.0)` is deliberate throughout: it also catches NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use super::{ContactProblem, ContactSolver, SolveStats};

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
        let i = 3 * c;
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
    // open (digest §2.1: c_z ≥ 0)
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

/// The sliding case: Alg. 1 with the digest's corrections (module docs). Returns the impulse and
/// the number of gradient evaluations after the initial guess (bracketing steps plus root-finding
/// trial points; for tests). `HALVING = true` replaces the safeguarded Illinois step of the
/// root-finding phase by the paper's plain halving (the reference of the tests).
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
    // line of sight from λ^{v=0}: ∇h₂(λ)·(λ^{v=0} − λ) ≥ 0 (digest §2.2; the paper prints the
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
    // with one division per trial point and no trigonometry. λ_p and λ follow t_p and t (digest
    // §8.2).
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
        let i = 3 * c;
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
            star: vec![0.0; 3 * max_contacts + max_joint_rows],
        }
    }
}

/// Projects the warm start onto the cones and the row bounds (non-finite entries → 0).
fn project_warm_start(p: &ContactProblem, lambda: &mut [f64]) {
    for c in 0..p.num_contacts {
        let i = 3 * c;
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
        let i = 3 * p.num_contacts + r;
        let l = if lambda[i].is_finite() { lambda[i] } else { 0.0 };
        lambda[i] = l.max(p.row_lower[r]).min(p.row_upper[r]);
    }
}

impl ContactSolver for BisectionSolver {
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
                let i = 3 * nc + r;
                *d = p.g(i, i);
            }
        }
        let keep_star = p.dim() <= self.star.len();
        let mut alpha = prm.relaxation;
        for it in 0..prm.max_iterations {
            let mut e_imp = 0.0;
            let mut e_vel = 0.0;
            for c in 0..nc {
                let i = 3 * c;
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
                let i = 3 * nc + r;
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
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::contact::{PgsParams, PgsSolver};
    use nalgebra::{DMatrix, Matrix3, SymmetricEigen};

    // ---------- helpers ----------

    /// Deterministic generator (SplitMix64).
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in [lo, hi).
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    /// An owned problem with a `view()`.
    struct Owned {
        nc: usize,
        nj: usize,
        mu: Vec<f64>,
        lo: Vec<f64>,
        hi: Vec<f64>,
        g: Vec<f64>,
        u: Vec<f64>,
    }
    impl Owned {
        fn view(&self) -> ContactProblem<'_> {
            ContactProblem {
                num_contacts: self.nc,
                num_joint_rows: self.nj,
                friction: &self.mu,
                row_lower: &self.lo,
                row_upper: &self.hi,
                delassus: &self.g,
                free_velocity: &self.u,
                primal: None,
            }
        }
        fn dim(&self) -> usize {
            3 * self.nc + self.nj
        }
        fn velocity(&self, lambda: &[f64]) -> Vec<f64> {
            let p = self.view();
            (0..self.dim()).map(|i| p.row_velocity(i, lambda)).collect()
        }
    }

    /// One contact with block `g` and free velocity `u`, both in the problem's [n, t1, t2] order.
    fn single(g: [[f64; 3]; 3], u: [f64; 3], mu: f64) -> Owned {
        Owned { nc: 1, nj: 0, mu: vec![mu], lo: vec![], hi: vec![], g: g.iter().flatten().copied().collect(), u: u.to_vec() }
    }

    /// Converts a paper-order (x, y, z) 3×3 matrix to problem order [n, t1, t2].
    fn to_problem_order(gx: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
        let mut g = [[0.0; 3]; 3];
        for a in 0..3 {
            for b in 0..3 {
                g[MAP[a]][MAP[b]] = gx[a][b];
            }
        }
        g
    }

    fn exact_params() -> BisectionParams {
        BisectionParams { max_iterations: 10_000, tolerance_impulse: 1e-13, tolerance_velocity: 1e-13, ..BisectionParams::default() }
    }

    fn run(o: &Owned, prm: BisectionParams, warm: &[f64]) -> (Vec<f64>, SolveStats) {
        let mut s = BisectionSolver::new(prm, o.nc, o.nj);
        let mut l = warm.to_vec();
        let st = s.solve(&o.view(), &mut l);
        (l, st)
    }

    fn run_pgs(o: &Owned) -> (Vec<f64>, SolveStats) {
        let mut s = PgsSolver::new(PgsParams { max_iterations: 2_000_000, tolerance: 1e-12, relaxation: 1.0 }, o.nc);
        let mut l = vec![0.0; o.dim()];
        let st = s.solve(&o.view(), &mut l);
        (l, st)
    }

    /// Random SPD 3×3 block G = R diag(σ) Rᵀ with eigenvalues in [σ_lo, σ_hi] (paper order).
    fn random_spd3(rng: &mut Rng, s_lo: f64, s_hi: f64) -> [[f64; 3]; 3] {
        let a = Matrix3::from_fn(|_, _| rng.uniform(-1.0, 1.0));
        let q = a.qr().q();
        let d = Matrix3::from_diagonal(&nalgebra::Vector3::new(rng.uniform(s_lo, s_hi), rng.uniform(s_lo, s_hi), rng.uniform(s_lo, s_hi)));
        let g = q * d * q.transpose();
        let mut out = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                out[i][j] = 0.5 * (g[(i, j)] + g[(j, i)]);
            }
        }
        out
    }

    fn block_from(gx: [[f64; 3]; 3]) -> Block {
        let o = single(to_problem_order(gx), [0.0; 3], 1.0);
        Block::new(&o.view(), 0, BisectionParams::default().singular_threshold)
    }

    /// E(λ) = ½ (λ − λ^{v=0})ᵀ G (λ − λ^{v=0}) (paper order).
    fn energy(gx: &[[f64; 3]; 3], lv0: [f64; 3], l: [f64; 3]) -> f64 {
        let d = [l[0] - lv0[0], l[1] - lv0[1], l[2] - lv0[2]];
        let mut e = 0.0;
        for a in 0..3 {
            for b in 0..3 {
                e += d[a] * gx[a][b] * d[b];
            }
        }
        0.5 * e
    }

    /// Brute-force minimum of E over the conic section {v_z = 0, ‖λ_t‖ = μ λ_z} (paper order):
    /// dense θ sampling over all angles with r > 0, then golden-section refinement.
    fn brute_force_slip(gx: &[[f64; 3]; 3], c: [f64; 3], mu: f64, lv0: [f64; 3]) -> ([f64; 3], f64) {
        let pt = |th: f64| -> Option<[f64; 3]> {
            let den = gx[2][2] / mu + gx[2][0] * th.cos() + gx[2][1] * th.sin();
            if den <= 0.0 {
                return None;
            }
            let r = -c[2] / den;
            Some([r * th.cos(), r * th.sin(), r / mu])
        };
        let e_at = |th: f64| pt(th).map(|l| energy(gx, lv0, l)).unwrap_or(f64::INFINITY);
        let n = 20_000;
        let h = std::f64::consts::TAU / n as f64;
        let mut best = (0.0, f64::INFINITY);
        for k in 0..n {
            let th = k as f64 * h;
            let e = e_at(th);
            if e < best.1 {
                best = (th, e);
            }
        }
        let (mut a, mut b) = (best.0 - h, best.0 + h);
        let gr = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let x1 = b - gr * (b - a);
            let x2 = a + gr * (b - a);
            if e_at(x1) < e_at(x2) {
                b = x2;
            } else {
                a = x1;
            }
        }
        let th = 0.5 * (a + b);
        let l = pt(th).unwrap();
        (l, energy(gx, lv0, l))
    }

    /// G = J M⁻¹ Jᵀ for a random J (m × n) and SPD M; `iso[c]` makes contact c's 3×3 diagonal
    /// block g_c I (rows of J whitened), for comparisons with the Coulomb PGS.
    fn random_delassus(rng: &mut Rng, nc: usize, nj: usize, extra_dof: usize, iso: bool) -> DMatrix<f64> {
        let m = 3 * nc + nj;
        let n = m + extra_dof;
        let a = DMatrix::from_fn(n, n, |_, _| rng.uniform(-1.0, 1.0));
        let mass = &a * a.transpose() + DMatrix::identity(n, n) * (0.5 * n as f64);
        let minv = mass.clone().cholesky().unwrap().inverse();
        let mut j = DMatrix::from_fn(m, n, |_, _| rng.uniform(-1.0, 1.0));
        if iso {
            for c in 0..nc {
                let ji = j.rows(3 * c, 3).into_owned();
                let b = &ji * &minv * ji.transpose();
                let eig = SymmetricEigen::new(b);
                let inv_sqrt = &eig.eigenvectors
                    * DMatrix::from_diagonal(&eig.eigenvalues.map(|x| 1.0 / x.sqrt()))
                    * eig.eigenvectors.transpose();
                let gc = rng.uniform(0.5, 2.0);
                let w = inv_sqrt * ji * gc.sqrt();
                j.rows_mut(3 * c, 3).copy_from(&w);
            }
        }
        let g = &j * minv * j.transpose();
        (&g + g.transpose()) * 0.5
    }

    fn owned_from(g: &DMatrix<f64>, nc: usize, nj: usize, u: Vec<f64>, mu: Vec<f64>, lo: Vec<f64>, hi: Vec<f64>) -> Owned {
        let m = 3 * nc + nj;
        let mut gv = vec![0.0; m * m];
        for i in 0..m {
            for k in 0..m {
                gv[i * m + k] = g[(i, k)];
            }
        }
        Owned { nc, nj, mu, lo, hi, g: gv, u }
    }

    fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
        let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
        let n: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        d / n.max(1e-300)
    }

    // ---------- single contact: the three cases ----------

    #[test]
    fn open_contact_gives_zero_impulse() {
        let mut rng = Rng(1);
        for k in 0..50 {
            let gx = random_spd3(&mut rng, 0.1, 3.0);
            let g = to_problem_order(gx);
            let un = if k == 0 { 0.0 } else { rng.uniform(1e-6, 2.0) };
            let u = [un, rng.uniform(-2.0, 2.0), rng.uniform(-2.0, 2.0)];
            let o = single(g, u, rng.uniform(0.1, 2.0));
            // a non-zero warm start must be removed
            let (l, st) = run(&o, BisectionParams::default(), &[0.3, 0.1, -0.1]);
            assert_eq!(l, vec![0.0; 3], "case {k}");
            assert!(st.converged && st.residual <= 1e-6, "{st:?}");
        }
    }

    #[test]
    fn sticking_contact_is_minus_g_inverse_u_free() {
        let mut rng = Rng(2);
        for k in 0..100 {
            let gx = random_spd3(&mut rng, 0.1, 3.0);
            let mu = rng.uniform(0.2, 1.5);
            // λ_true strictly inside the cone, u_free = −G λ_true
            let ln = rng.uniform(0.1, 2.0);
            let rt = rng.uniform(0.0, 0.95) * mu * ln;
            let th = rng.uniform(0.0, std::f64::consts::TAU);
            let lt = [ln, rt * th.cos(), rt * th.sin()];
            let g = to_problem_order(gx);
            let u: Vec<f64> = (0..3).map(|i| -(0..3).map(|j| g[i][j] * lt[j]).sum::<f64>()).collect();
            if u[0] >= 0.0 {
                continue; // open by the model's rule (c_n ≥ 0), although −G⁻¹u is also admissible
            }
            let o = single(g, [u[0], u[1], u[2]], mu);
            let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
            assert!(st.converged, "{st:?}");
            for i in 0..3 {
                assert!((l[i] - lt[i]).abs() <= 1e-12 * (1.0 + ln), "case {k}: {l:?} vs {lt:?}");
            }
            assert!(o.velocity(&l).iter().all(|v| v.abs() < 1e-12));
        }
    }

    #[test]
    fn sliding_isotropic_closed_form() {
        // digest §7 test 2: G = 2I, c = (1, 0.5, −1) (x, y, z), μ = 0.3
        let o = single([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]], [-1.0, 1.0, 0.5], 0.3);
        let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
        assert!(st.converged);
        assert!((l[0] - 0.5).abs() < 1e-12 && (l[1] + 0.134164).abs() < 1e-6 && (l[2] + 0.067082).abs() < 1e-6, "{l:?}");

        // random isotropic G = g I: λ_n = −u_n/g, λ_t = −μ λ_n u_t,free/‖u_t,free‖ when
        // ‖u_t,free‖/g > μ λ_n; friction opposes the resulting slip (Coulomb = MDP here)
        let mut rng = Rng(3);
        let mut n = 0;
        while n < 200 {
            let gs = rng.uniform(0.1, 5.0);
            let mu = rng.uniform(0.05, 2.0);
            let u = [rng.uniform(-2.0, -0.01), rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0)];
            let ln = -u[0] / gs;
            let ut = norm2(u[1], u[2]);
            if ut / gs <= mu * ln * 1.001 {
                continue; // sticking
            }
            n += 1;
            let o = single([[gs, 0.0, 0.0], [0.0, gs, 0.0], [0.0, 0.0, gs]], u, mu);
            let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
            assert!(st.converged);
            let expect = [ln, -mu * ln * u[1] / ut, -mu * ln * u[2] / ut];
            for i in 0..3 {
                assert!((l[i] - expect[i]).abs() < 1e-12 * (1.0 + ln), "{l:?} vs {expect:?}");
            }
            let v = o.velocity(&l);
            assert!(v[0].abs() < 1e-12, "u_n = {}", v[0]);
            assert!((norm2(l[1], l[2]) - mu * l[0]).abs() < 1e-12);
            // maximal dissipation: λ_t = −μ λ_n v_t/‖v_t‖
            let vt = norm2(v[1], v[2]);
            assert!(vt > 0.0);
            assert!((l[1] + mu * l[0] * v[1] / vt).abs() < 1e-10 && (l[2] + mu * l[0] * v[2] / vt).abs() < 1e-10);
        }
    }

    #[test]
    fn sliding_anisotropic_matches_digest_regression_values() {
        let prm = BisectionParams::default();
        // digest §7 test 3 (paper order x, y, z)
        let gx = [[2.0, 0.3, 0.2], [0.3, 1.5, -0.1], [0.2, -0.1, 1.0]];
        let c = [0.8, -0.4, -0.5];
        let l = solve_contact(&block_from(gx), c, 0.4, &prm);
        let expect = [-0.188645, 0.112390, 0.548968];
        for i in 0..3 {
            assert!((l[i] - expect[i]).abs() < 2e-6, "{l:?}");
        }
        let lv0 = [-0.526969, 0.415188, 0.646913];
        let blk = block_from(gx);
        let s = blk.solve(c);
        for i in 0..3 {
            assert!((-s[i] - lv0[i]).abs() < 2e-6);
        }
        let e = energy(&gx, [-s[0], -s[1], -s[2]], l);
        assert!((e - 0.1476985).abs() < 1e-6, "E = {e}");
        // v = c + G λ = (0.566220, −0.342906, 0); friction not exactly opposite to v_t
        let v: Vec<f64> = (0..3).map(|a| c[a] + (0..3).map(|b| gx[a][b] * l[b]).sum::<f64>()).collect();
        assert!((v[0] - 0.566220).abs() < 2e-6 && (v[1] + 0.342906).abs() < 2e-6 && v[2].abs() < 1e-12, "{v:?}");
        let cosang = -(l[0] * v[0] + l[1] * v[1]) / (norm2(l[0], l[1]) * norm2(v[0], v[1]));
        assert!((cosang - 0.99997).abs() < 1e-5 && cosang < 1.0 - 1e-6, "cos = {cosang}");

        // digest §7 test 4: coupled normal–tangential
        let gx = [[1.0, 0.0, 0.6], [0.0, 1.0, 0.0], [0.6, 0.0, 1.0]];
        let c = [1.0, 0.0, -0.5];
        let blk = block_from(gx);
        let l = solve_contact(&blk, c, 0.9, &prm);
        let expect = [-0.978261, 0.0, 1.086957];
        for i in 0..3 {
            assert!((l[i] - expect[i]).abs() < 2e-6, "{l:?}");
        }
        let s = blk.solve(c);
        let e = energy(&gx, [-s[0], -s[1], -s[2]], l);
        assert!((e - 0.3548116).abs() < 1e-6, "E = {e}");
    }

    /// Random sliding problems (ellipses, parabolas, hyperbolas) against brute force.
    fn slip_cases(seed: u64, count: usize, mut f: impl FnMut([[f64; 3]; 3], [f64; 3], f64)) {
        let mut rng = Rng(seed);
        let mut n = 0;
        while n < count {
            let gx = random_spd3(&mut rng, 0.05, 3.0);
            let mu = rng.uniform(0.2, 3.0);
            let c = [rng.uniform(-2.0, 2.0), rng.uniform(-2.0, 2.0), rng.uniform(-2.0, -0.01)];
            let blk = block_from(gx);
            let s = blk.solve(c);
            if mu * -s[2] >= norm2(s[0], s[1]) {
                continue; // sticking
            }
            n += 1;
            f(gx, c, mu);
        }
    }

    #[test]
    fn sliding_matches_brute_force_including_hyperbolic_sections() {
        let prm = BisectionParams::default();
        let mut hyperbolic = 0;
        slip_cases(4, 300, |gx, c, mu| {
            let blk = block_from(gx);
            let s = blk.solve(c);
            let lv0 = [-s[0], -s[1], -s[2]];
            let l = solve_contact(&blk, c, mu, &prm);
            let (lb, eb) = brute_force_slip(&gx, c, mu, lv0);
            let e = energy(&gx, lv0, l);
            assert!(e <= eb + 1e-9 * (1.0 + eb), "E = {e} > brute {eb}; {l:?} vs {lb:?}");
            let scale = 1.0 + norm3(lb);
            for i in 0..3 {
                assert!((l[i] - lb[i]).abs() < 1e-5 * scale, "{l:?} vs {lb:?}");
            }
            // v_z = 0 and ‖λ_t‖ = μ λ_z
            let vz = c[2] + gx[2][0] * l[0] + gx[2][1] * l[1] + gx[2][2] * l[2];
            assert!(vz.abs() < 1e-12 * scale);
            assert!((norm2(l[0], l[1]) - mu * l[2]).abs() < 1e-12 * scale);
            if gx[2][2] / mu < norm2(gx[2][0], gx[2][1]) {
                hyperbolic += 1;
            }
        });
        assert!(hyperbolic > 10, "only {hyperbolic} hyperbolic/parabolic sections");
    }

    #[test]
    fn paper_visibility_sign_fails_negative_control() {
        let prm = BisectionParams::default();
        let (mut wrong, mut total) = (0, 0);
        slip_cases(5, 200, |gx, c, mu| {
            let blk = block_from(gx);
            let s = blk.solve(c);
            let lv0 = [-s[0], -s[1], -s[2]];
            let (_, eb) = brute_force_slip(&gx, c, mu, lv0);
            let l = solve_contact_impl::<true>(&blk, c, mu, &prm);
            total += 1;
            if energy(&gx, lv0, l) > eb + 1e-9 * (1.0 + eb) {
                wrong += 1;
            }
        });
        assert!(wrong * 2 > total, "literal paper sign failed only {wrong}/{total}");
    }

    #[test]
    fn frictionless_contact() {
        let gx = [[2.0, 0.3, 0.2], [0.3, 1.5, -0.1], [0.2, -0.1, 1.0]];
        let o = single(to_problem_order(gx), [-0.5, 0.8, -0.4], 0.0);
        let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
        assert!(st.converged);
        assert!((l[0] - 0.5).abs() < 1e-14 && l[1] == 0.0 && l[2] == 0.0, "{l:?}");
    }

    // ---------- ill-conditioned and singular blocks ----------

    /// G = Q diag(1, 1e-4, 1e-8) Qᵀ (condition number 1e8), paper order.
    fn ill_conditioned(rng: &mut Rng) -> [[f64; 3]; 3] {
        let a = Matrix3::from_fn(|_, _| rng.uniform(-1.0, 1.0));
        let q = a.qr().q();
        let g = q * Matrix3::from_diagonal(&nalgebra::Vector3::new(1.0, 1e-4, 1e-8)) * q.transpose();
        let mut out = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                out[i][j] = 0.5 * (g[(i, j)] + g[(j, i)]);
            }
        }
        out
    }

    #[test]
    fn ill_conditioned_block_cond_1e8() {
        let mut rng = Rng(6);
        let prm = BisectionParams::default();
        let (mut sticks, mut slips) = (0, 0);
        for _ in 0..300 {
            let gx = ill_conditioned(&mut rng);
            let blk = block_from(gx);
            assert_eq!(blk.shift, 0.0, "cond 1e8 must be solved exactly");
            // choose λ^{v=0} and set c = −G λ^{v=0}: E is then evaluated without G⁻¹
            let mu = rng.uniform(0.2, 1.5);
            let lv0 = [rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0), rng.uniform(0.05, 1.0)];
            let c: [f64; 3] = std::array::from_fn(|a| -(0..3).map(|b| gx[a][b] * lv0[b]).sum::<f64>());
            if !(c[2] < 0.0) {
                continue;
            }
            let l = solve_contact(&blk, c, mu, &prm);
            assert!(l.iter().all(|x| x.is_finite()));
            let v: [f64; 3] = std::array::from_fn(|a| c[a] + (0..3).map(|b| gx[a][b] * l[b]).sum::<f64>());
            if mu * lv0[2] >= norm2(lv0[0], lv0[1]) {
                sticks += 1;
                // λ = −G⁻¹ c to the accuracy the conditioning allows
                for i in 0..3 {
                    assert!((l[i] - lv0[i]).abs() < 1e-6, "{l:?} vs {lv0:?}");
                }
                assert!(norm3(v) < 1e-12, "{v:?}");
            } else {
                slips += 1;
                let (lb, eb) = brute_force_slip(&gx, c, mu, lv0);
                let e = energy(&gx, lv0, l);
                assert!(e <= eb + 1e-9 * (1.0 + eb), "E = {e} > {eb}; {l:?} vs {lb:?}");
                assert!(v[2].abs() < 1e-12 && (norm2(l[0], l[1]) - mu * l[2]).abs() < 1e-12);
                assert!(norm3(l) < 1e3, "blew up: {l:?}");
            }
        }
        assert!(sticks > 20 && slips > 20, "{sticks} sticks, {slips} slips");
    }

    /// Sliding problems on ill-conditioned blocks (condition numbers up to 10⁸, and wide
    /// eigenvalue spreads), `c = −G λ^{v=0}` with `λ^{v=0}` outside the cone, at impulse scale
    /// `scale`. Calls `f(block, c, μ, λ^{v=0})` with `λ^{v=0} = −G⁻¹ c` as the solver computes it.
    fn ill_conditioned_slip_cases(seed: u64, count: usize, scale: (f64, f64), mut f: impl FnMut(&Block, [f64; 3], f64, [f64; 3])) {
        let mut rng = Rng(seed);
        let mut n = 0;
        while n < count {
            let gx = match n % 3 {
                0 => ill_conditioned(&mut rng),
                1 => random_spd3(&mut rng, 1e-5, 3.0),
                _ => random_spd3(&mut rng, 0.05, 3.0),
            };
            let mu = rng.uniform(0.1, 2.0);
            let sc = 10f64.powf(rng.uniform(scale.0.log10(), scale.1.log10()));
            let lv = [rng.uniform(-1.0, 1.0) * sc, rng.uniform(-1.0, 1.0) * sc, rng.uniform(0.0, 1.0) * sc];
            let c: [f64; 3] = std::array::from_fn(|a| -(0..3).map(|b| gx[a][b] * lv[b]).sum::<f64>());
            let blk = block_from(gx);
            if !(c[2] < 0.0) || blk.inactive {
                continue;
            }
            let s = blk.solve(c);
            let lv0 = [-s[0], -s[1], -s[2]];
            if mu * lv0[2] >= norm2(lv0[0], lv0[1]) {
                continue; // sticking
            }
            n += 1;
            f(&blk, c, mu, lv0);
        }
    }

    /// The sliding case's safeguarded Illinois root finder against the paper's plain halving run
    /// until the bracket is one ulp wide, on 6 000 sliding problems with ill-conditioned blocks:
    /// the impulses agree to 10⁻⁹ (relative), and it needs fewer than half the gradient
    /// evaluations of the halving at the same tolerance. (Fails if the trial point is always the
    /// midpoint, or if the bracket update is given the wrong sign.)
    #[test]
    fn illinois_root_finder_matches_plain_halving_with_fewer_evaluations() {
        let prm = BisectionParams::default();
        // the reference: plain halving until the bracket is one ulp wide
        let exact = BisectionParams { bisection_tolerance: 0.0, max_bisection_iterations: 2000, ..prm.clone() };
        let (mut ev_new, mut ev_half, mut cases, mut worst) = (0u64, 0u64, 0u64, 0.0f64);
        let mut check = |prm: &BisectionParams, blk: &Block, c: [f64; 3], mu: f64, lv0: [f64; 3]| {
            let (l, e_new) = slip::<false, false>(blk, c, mu, lv0, prm);
            let (lh, e_half) = slip::<false, true>(blk, c, mu, lv0, prm);
            let (lr, _) = slip::<false, true>(blk, c, mu, lv0, &exact);
            let d = [l[0] - lr[0], l[1] - lr[1], l[2] - lr[2]];
            let rel = norm3(d) / norm3(lr);
            assert!(rel <= 1e-9, "relative error {rel:e} (halving: {:e}): {l:?} vs {lr:?} (G = {:?}, c = {c:?}, μ = {mu})", rel_diff(&lh, &lr), blk.g);
            worst = worst.max(rel);
            ev_new += u64::from(e_new);
            ev_half += u64::from(e_half);
            cases += 1;
        };
        // impulses of order 1, tolerance 10⁻¹⁰ N·s
        let tight = BisectionParams { bisection_tolerance: 1e-10, ..prm.clone() };
        ill_conditioned_slip_cases(12, 3000, (0.3, 3.0), |blk, c, mu, lv0| check(&tight, blk, c, mu, lv0));
        // 10⁻⁵ to 10 N·s with the tolerance scaled to 10⁻¹⁰ of the impulse
        ill_conditioned_slip_cases(13, 3000, (1e-5, 10.0), |blk, c, mu, lv0| {
            let tol = 1e-10 * norm3(lv0);
            check(&BisectionParams { bisection_tolerance: tol, ..prm.clone() }, blk, c, mu, lv0)
        });
        eprintln!("{cases} cases: {ev_new} gradient evaluations (Illinois) vs {ev_half} (halving), worst relative difference {worst:e}");
        assert!(2 * ev_new < ev_half, "{ev_new} vs {ev_half} evaluations");
    }

    #[test]
    fn singular_blocks_stay_finite() {
        // rank 1: one DOF (a pinned link), J = aᵀ, G = a aᵀ / m; rank 2: two DOFs
        let mut rng = Rng(7);
        for rank in [1usize, 2] {
            for _ in 0..50 {
                let j = DMatrix::from_fn(3, rank, |_, _| rng.uniform(-1.0, 1.0));
                let minv = DMatrix::from_diagonal(&nalgebra::DVector::from_fn(rank, |_, _| rng.uniform(0.5, 2.0)));
                let vstar = nalgebra::DVector::from_fn(rank, |_, _| rng.uniform(-1.0, 1.0));
                let g = &j * &minv * j.transpose();
                let u = &j * &vstar; // consistent: u_free ∈ range(J)
                let o = owned_from(&g, 1, 0, u.iter().copied().collect(), vec![rng.uniform(0.3, 1.5)], vec![], vec![]);
                let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
                assert!(l.iter().all(|x| x.is_finite() && x.abs() < 1e3), "{l:?}");
                assert!(st.converged, "{st:?}");
                let v = o.velocity(&l);
                assert!(v[0] > -1e-6, "penetrating: {v:?}");
                assert!(l[0] >= 0.0 && norm2(l[1], l[2]) <= o.mu[0] * l[0] * (1.0 + 1e-12) + 1e-15);
                // the physical velocity of the DOFs after the impulse never gains energy
                let dv = &minv * j.transpose() * nalgebra::DVector::from_column_slice(&l);
                let vplus = &vstar + dv;
                let m = minv.map(|x| if x != 0.0 { 1.0 / x } else { 0.0 });
                let ke = |w: &nalgebra::DVector<f64>| 0.5 * (w.transpose() * &m * w)[(0, 0)];
                assert!(ke(&vplus) <= ke(&vstar) + 1e-9);
            }
        }
        // an all-zero block: no mobility, impulse 0
        let o = single([[0.0; 3]; 3], [-1.0, 0.0, 0.0], 0.5);
        let (l, st) = run(&o, BisectionParams::default(), &[1.0, 0.0, 0.0]);
        assert_eq!(l, vec![0.0; 3]);
        assert!(st.converged);
    }

    // ---------- multi-contact ----------

    fn random_u(rng: &mut Rng, nc: usize, nj: usize) -> Vec<f64> {
        let mut u = Vec::new();
        for _ in 0..nc {
            u.push(rng.uniform(-1.0, 0.3));
            u.push(rng.uniform(-1.0, 1.0));
            u.push(rng.uniform(-1.0, 1.0));
        }
        for _ in 0..nj {
            u.push(rng.uniform(-1.0, 1.0));
        }
        u
    }

    #[test]
    fn multi_contact_agrees_with_pgs() {
        // isotropic diagonal blocks: the per-contact MDP solution is Coulomb's, so both solvers
        // have the same fixed points
        let mut rng = Rng(8);
        for case in 0..30 {
            let nc = 2 + case % 5;
            let g = random_delassus(&mut rng, nc, 0, 3, true);
            let u = random_u(&mut rng, nc, 0);
            let mu: Vec<f64> = (0..nc).map(|_| rng.uniform(0.1, 0.8)).collect();
            let o = owned_from(&g, nc, 0, u, mu, vec![], vec![]);
            let (lp, sp) = run_pgs(&o);
            assert!(sp.converged, "PGS did not converge: {sp:?}");
            let (lb, sb) = run(&o, exact_params(), &vec![0.0; o.dim()]);
            assert!(sb.converged, "case {case}: {sb:?}");
            let d = rel_diff(&lb, &lp);
            assert!(d < 1e-6, "case {case}: relative difference {d}\n{lb:?}\n{lp:?}");
            let (imp, vel) = o.view().violation(&lb);
            assert!(imp < 1e-10 && vel < 1e-9, "violation {imp} {vel}");
        }
    }

    #[test]
    fn multi_contact_anisotropic_is_a_per_contact_fixed_point() {
        // general blocks (MDP ≠ Coulomb): every contact's impulse must be the exact local MDP
        // solution given the others, checked against brute force
        let mut rng = Rng(9);
        for case in 0..20 {
            let nc = 2 + case % 4;
            let g = random_delassus(&mut rng, nc, 0, 3, false);
            let u = random_u(&mut rng, nc, 0);
            let mu: Vec<f64> = (0..nc).map(|_| rng.uniform(0.2, 1.0)).collect();
            let o = owned_from(&g, nc, 0, u, mu.clone(), vec![], vec![]);
            let (l, st) = run(&o, BisectionParams { tolerance_impulse: 1e-11, tolerance_velocity: 1e-11, max_iterations: 5000, ..Default::default() }, &vec![0.0; o.dim()]);
            assert!(st.converged, "case {case}: {st:?}");
            let p = o.view();
            for c in 0..nc {
                let i = 3 * c;
                let gx: [[f64; 3]; 3] = std::array::from_fn(|a| std::array::from_fn(|b| p.g(i + MAP[a], i + MAP[b])));
                let li = [l[i + 1], l[i + 2], l[i]];
                let cv: [f64; 3] = std::array::from_fn(|a| p.row_velocity(i + MAP[a], &l) - (0..3).map(|b| gx[a][b] * li[b]).sum::<f64>());
                let v: [f64; 3] = std::array::from_fn(|a| p.row_velocity(i + MAP[a], &l));
                let blk = block_from(gx);
                let s = blk.solve(cv);
                let lv0 = [-s[0], -s[1], -s[2]];
                if cv[2] >= 0.0 {
                    assert!(norm3(li) < 1e-9, "open contact with impulse {li:?}");
                    assert!(v[2] >= -1e-9);
                } else if mu[c] * lv0[2] >= norm2(lv0[0], lv0[1]) {
                    assert!(norm3(v) < 1e-9, "sticking contact slips: {v:?}");
                } else {
                    let (lb, eb) = brute_force_slip(&gx, cv, mu[c], lv0);
                    let e = energy(&gx, lv0, li);
                    assert!(e <= eb + 1e-9 * (1.0 + eb) && norm3([li[0] - lb[0], li[1] - lb[1], li[2] - lb[2]]) < 1e-6, "{li:?} vs {lb:?}");
                    assert!(v[2].abs() < 1e-9);
                    // dissipative: friction does negative work on the slip
                    assert!(li[0] * v[0] + li[1] * v[1] <= 0.0);
                }
            }
        }
    }

    #[test]
    fn multi_contact_with_an_ill_conditioned_block() {
        let mut rng = Rng(10);
        for case in 0..10 {
            // contact 0's Jacobian rows nearly dependent → its block has condition ~1e8
            let nc = 3;
            let n = 3 * nc + 3;
            let a = DMatrix::from_fn(n, n, |_, _| rng.uniform(-1.0, 1.0));
            let mass = &a * a.transpose() + DMatrix::identity(n, n) * (0.5 * n as f64);
            let minv = mass.cholesky().unwrap().inverse();
            let mut j = DMatrix::from_fn(3 * nc, n, |_, _| rng.uniform(-1.0, 1.0));
            let r0 = j.row(0).into_owned();
            let r1 = j.row(1).into_owned();
            let noise = DMatrix::from_fn(1, n, |_, _| rng.uniform(-1.0, 1.0));
            j.row_mut(2).copy_from(&(r0 * 0.7 - r1 * 0.4 + noise * 1e-4));
            let g = &j * &minv * j.transpose();
            let g = (&g + g.transpose()) * 0.5;
            let b0 = g.view((0, 0), (3, 3)).into_owned();
            let ev = b0.symmetric_eigenvalues();
            let cond = ev.max() / ev.min();
            assert!(cond > 1e7 && cond < 1e10, "cond {cond}");
            let u = random_u(&mut rng, nc, 0);
            let mu: Vec<f64> = (0..nc).map(|_| rng.uniform(0.3, 1.0)).collect();
            let o = owned_from(&g, nc, 0, u, mu, vec![], vec![]);
            let (l, st) = run(&o, BisectionParams { max_iterations: 2000, ..Default::default() }, &vec![0.0; o.dim()]);
            assert!(l.iter().all(|x| x.is_finite() && x.abs() < 1e3), "case {case}: {l:?}");
            assert!(st.converged, "case {case}: {st:?}");
            let v = o.velocity(&l);
            for c in 0..nc {
                assert!(v[3 * c] > -1e-5, "case {case}: penetration {}", v[3 * c]);
            }
        }
    }

    // ---------- joint rows ----------

    #[test]
    fn joint_rows_closed_form() {
        // one bilateral row: λ = −u/G; a limit row with u ≥ 0: λ = 0; a friction row saturates
        let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![f64::NEG_INFINITY], hi: vec![f64::INFINITY], g: vec![2.0], u: vec![-3.0] };
        let (l, st) = run(&o, BisectionParams::default(), &[0.0]);
        assert!(st.converged && (l[0] - 1.5).abs() < 1e-15);
        let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![0.0], hi: vec![f64::INFINITY], g: vec![2.0], u: vec![0.5] };
        let (l, _) = run(&o, BisectionParams::default(), &[4.0]);
        assert_eq!(l[0], 0.0);
        let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![-0.2], hi: vec![0.2], g: vec![2.0], u: vec![-3.0] };
        let (l, _) = run(&o, BisectionParams::default(), &[0.0]);
        assert_eq!(l[0], 0.2);
        // two coupled bilateral rows (a mimic pair): the linear system G λ = −u
        let o = Owned { nc: 0, nj: 2, mu: vec![], lo: vec![f64::NEG_INFINITY; 2], hi: vec![f64::INFINITY; 2], g: vec![2.0, 0.9, 0.9, 1.0], u: vec![1.0, -2.0] };
        let (l, st) = run(&o, exact_params(), &[0.0; 2]);
        assert!(st.converged);
        let det = 2.0 * 1.0 - 0.81;
        let expect = [-(1.0 * 1.0 - 0.9 * -2.0) / det, -(2.0 * -2.0 - 0.9 * 1.0) / det];
        assert!((l[0] - expect[0]).abs() < 1e-11 && (l[1] - expect[1]).abs() < 1e-11, "{l:?} vs {expect:?}");
    }

    #[test]
    fn contacts_and_joint_rows_agree_with_pgs() {
        let mut rng = Rng(11);
        for case in 0..20 {
            let nc = 1 + case % 4;
            let nj = 4;
            let g = random_delassus(&mut rng, nc, nj, 3, true);
            let u = random_u(&mut rng, nc, nj);
            let mu: Vec<f64> = (0..nc).map(|_| rng.uniform(0.1, 0.8)).collect();
            // bilateral (mimic), lower limit, upper limit, joint friction
            let lo = vec![f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY, -0.1];
            let hi = vec![f64::INFINITY, f64::INFINITY, 0.0, 0.1];
            let o = owned_from(&g, nc, nj, u, mu, lo, hi);
            let (lp, sp) = run_pgs(&o);
            assert!(sp.converged);
            let (lb, sb) = run(&o, exact_params(), &vec![0.0; o.dim()]);
            assert!(sb.converged, "case {case}: {sb:?}");
            let d = rel_diff(&lb, &lp);
            assert!(d < 1e-6, "case {case}: relative difference {d}\n{lb:?}\n{lp:?}");
            let (imp, vel) = o.view().violation(&lb);
            assert!(imp < 1e-10 && vel < 1e-9, "violation {imp} {vel}");
        }
    }

    // ---------- convergence, warm start, schedule, config ----------

    #[test]
    fn converges_with_small_residual_and_warm_start_helps() {
        let mut rng = Rng(12);
        let nc = 4;
        let g = random_delassus(&mut rng, nc, 2, 4, false);
        let u = random_u(&mut rng, nc, 2);
        let o = owned_from(&g, nc, 2, u, vec![0.6; nc], vec![0.0, -0.05], vec![f64::INFINITY, 0.05]);
        let prm = BisectionParams::default();
        let (l, st) = run(&o, prm.clone(), &vec![0.0; o.dim()]);
        assert!(st.converged && st.residual <= prm.tolerance_impulse, "{st:?}");
        assert!(st.iterations >= 2);
        // the physical velocity residual is also within tolerance: normal velocities
        let v = o.velocity(&l);
        for c in 0..nc {
            assert!(v[3 * c] > -1e-5);
        }
        // warm-started from the solution: one sweep
        let (l2, st2) = run(&o, prm.clone(), &l);
        assert!(st2.converged && st2.iterations == 1, "{st2:?}");
        assert!(rel_diff(&l2, &l) < 1e-6);
        // a warm start outside the cones / bounds or non-finite is projected, not trusted
        let mut bad = vec![5.0; o.dim()];
        bad[0] = f64::NAN;
        bad[1] = -1.0;
        let (l3, st3) = run(&o, prm.clone(), &bad);
        assert!(st3.converged && l3.iter().all(|x| x.is_finite()));
        // capacity smaller than the problem: still solved, same answer to the tolerance (the
        // relaxed iterate is returned instead of the local exact solutions)
        let mut small = BisectionSolver::new(prm, 1, 0);
        let mut l4 = vec![0.0; o.dim()];
        let st4 = small.solve(&o.view(), &mut l4);
        assert!(st4.converged);
        assert!(l4.iter().zip(&l).all(|(a, b)| (a - b).abs() < 1e-5), "{l4:?} vs {l:?}");
        // empty problem
        let e = Owned { nc: 0, nj: 0, mu: vec![], lo: vec![], hi: vec![], g: vec![], u: vec![] };
        let (_, st5) = run(&e, BisectionParams::default(), &[]);
        assert!(st5.converged && st5.iterations == 0);
    }

    #[test]
    fn relaxation_schedule() {
        let p = BisectionParams::default();
        let mut a = p.relaxation;
        for s in 1..=300 {
            a = p.next_relaxation(a);
            let expect = 0.7 + 0.3 * 0.99f64.powi(s);
            assert!((a - expect).abs() < 1e-12, "sweep {s}: {a} vs {expect}");
        }
    }

    #[test]
    fn reports_unconverged_at_the_iteration_limit() {
        let mut rng = Rng(13);
        let nc = 5;
        let g = random_delassus(&mut rng, nc, 0, 1, false);
        let u = random_u(&mut rng, nc, 0);
        let o = owned_from(&g, nc, 0, u, vec![0.8; nc], vec![], vec![]);
        let (l, st) = run(&o, BisectionParams { max_iterations: 1, tolerance_impulse: 0.0, tolerance_velocity: 0.0, ..Default::default() }, &vec![0.0; o.dim()]);
        assert!(!st.converged && st.iterations == 1 && st.residual > 0.0);
        assert!(l.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn yaml_config() {
        use crate::contact::SolverConfig;
        let c: SolverConfig = serde_yaml::from_str("kind: bisection\nmax_iterations: 50\nrelaxation_min: 0.5\n").unwrap();
        match &c {
            SolverConfig::Bisection(p) => {
                assert_eq!(p.max_iterations, 50);
                assert_eq!(p.relaxation_min, 0.5);
                assert_eq!(p.relaxation_decay, 0.99);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.kind(), "bisection");
        assert!(serde_yaml::from_str::<SolverConfig>("kind: bisection\nbogus: 1\n").is_err());
        assert_eq!(SolverConfig::from_kind("bisection"), Some(SolverConfig::Bisection(BisectionParams::default())));
        assert!(SolverConfig::KINDS.contains(&"bisection"));
    }

    /// Digest §7 test 8: a box (m = 2 kg, edge 0.3 m) on the ground at its 4 corners, sliding at
    /// v_x = 0.3 m/s, μ = 0.8, dt = 1 ms. Returns (λ, Δv of the body (linear, angular)).
    fn sliding_box(prm: BisectionParams) -> (Vec<f64>, [f64; 6], SolveStats) {
        let (m, h, mu, dt, g) = (2.0, 0.15, 0.8, 1e-3, 9.81);
        let inertia = m * (0.3f64.powi(2) + 0.3f64.powi(2)) / 12.0;
        let minv = [1.0 / m, 1.0 / m, 1.0 / m, 1.0 / inertia, 1.0 / inertia, 1.0 / inertia];
        let vfree = [0.3, 0.0, -g * dt, 0.0, 0.0, 0.0];
        let corners = [[h, h, -h], [h, -h, -h], [-h, h, -h], [-h, -h, -h]];
        // rows [n, t1, t2] = [z, x, y]; J row for direction d at r: [d, r × d]
        let mut jac = Vec::new();
        for r in &corners {
            for d in [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
                let rxd = [r[1] * d[2] - r[2] * d[1], r[2] * d[0] - r[0] * d[2], r[0] * d[1] - r[1] * d[0]];
                jac.push([d[0], d[1], d[2], rxd[0], rxd[1], rxd[2]]);
            }
        }
        let n = jac.len();
        let mut gm = vec![0.0; n * n];
        for i in 0..n {
            for k in 0..n {
                gm[i * n + k] = (0..6).map(|a| jac[i][a] * minv[a] * jac[k][a]).sum();
            }
        }
        let u: Vec<f64> = jac.iter().map(|row| (0..6).map(|a| row[a] * vfree[a]).sum()).collect();
        let o = Owned { nc: 4, nj: 0, mu: vec![mu; 4], lo: vec![], hi: vec![], g: gm, u };
        let (l, st) = run(&o, prm, &vec![0.0; n]);
        let dv: [f64; 6] = std::array::from_fn(|a| minv[a] * (0..n).map(|i| jac[i][a] * l[i]).sum::<f64>());
        (l, dv, st)
    }

    #[test]
    fn sliding_box_on_four_corners_matches_digest() {
        let (l, dv, st) = sliding_box(BisectionParams { tolerance_impulse: 1e-12, tolerance_velocity: 1e-12, max_iterations: 1000, ..Default::default() });
        assert!(st.converged, "{st:?}");
        let sum_n: f64 = (0..4).map(|c| l[3 * c]).sum();
        assert!((sum_n - 2.0 * 9.81e-3).abs() < 1e-10, "Σλ_n = {sum_n}");
        // MDP friction per corner is not anti-parallel to its slip: |Δv_x| below μ g dt, within 10 %
        let mu_g_dt = 0.8 * 9.81e-3;
        assert!(-dv[0] <= mu_g_dt && -dv[0] > 0.9 * mu_g_dt, "Δv_x = {}", dv[0]);
        assert!((dv[0] + 7.49e-3).abs() < 1e-5, "Δv_x = {} vs digest −7.49e-3", dv[0]);
        // front corners (+x, the direction of motion) carry more load (tipping torque)
        assert!(l[0] + l[3] > l[6] + l[9], "{l:?}");
        // the digest's prototype: a small spurious yaw rate of about 7e-4 rad/s with a fixed order
        assert!(dv[5].abs() < 1e-3, "ω_z = {}", dv[5]);
    }
}
