//! The rescues of a stalled exact iteration (ours, not in the paper): the proximal-point iteration
//! (Rockafellar's proximal point applied to the contact laws), and rounds of projected
//! Gauss–Seidel sweeps on the same laws, each followed by a few exact iterations.

use super::delassus::{delassus_product, symmetric_delassus_product};
use super::exact::{solve_exact, ExactRun};
use super::laws::exact_laws;
use super::{NewtonIterate, NewtonOptions, NewtonProblem, NewtonRow, NewtonScratch, NewtonStats};

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
pub(super) fn proximal_point(prob: &NewtonProblem, opts: &NewtonOptions, start_residual_m_s: f64, scr: &mut NewtonScratch, it: &mut NewtonIterate) -> NewtonStats {
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
        let inner = solve_exact(&round, &inner_opts, scr, it, ExactRun::Rescue);
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
pub(super) const RESCUE_SWEEPS: u32 = 200;
/// Rounds (sweeps, then capped exact iterations) of the rescue at most.
pub(super) const RESCUE_ROUNDS: u32 = 10;
/// Multiply-adds of the rescue's sweeps at most (`rounds · sweeps · m²`): bounds the cost of a
/// stalled step of a large problem (the 150-row arch: 5 rounds; the default scene's 54 rows:
/// all 10).
pub(super) const RESCUE_WORK: f64 = 2.0e7;
/// Exact Newton iterations at most after each round of sweeps (full steps: the rescue hands
/// the exact iteration a point near the solution's pieces).
pub(super) const RESCUE_NEWTON: u32 = 4;

/// `sweeps` projected Gauss–Seidel sweeps on the same laws as the exact iteration, from `p`
/// (updated in place), `w` scratch for the row velocities `J̄ũ + D p`: a contact's normal row
/// `pₙ ← max(0, pₙ − (gap/h + wₙ)/Dₙₙ)`, its friction pair a 2×2 block solve of `w_f = 0`
/// projected on the disk of radius `μ pₙ`, a joint-friction row clamped to its bound, a
/// bilateral row solved exactly. Each update moves `w` by the changed impulse's column of `D`.
pub(super) fn projected_sweeps(prob: &NewtonProblem, opts: &NewtonOptions, p: &mut [f64], w: &mut [f64], sweeps: u32) {
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
