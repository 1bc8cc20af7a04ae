//! The Newton iteration in the paper's form (§7, App. A.2: friction as a compliance frozen within
//! an iteration; each iteration solves the Schur complement, paper eq. 59–61, by the conjugate
//! residual or Cholesky), and [`solve`], the entry point, which runs the exact iteration and its
//! rescues first under [`NewtonJacobian::Exact`].

use super::delassus::delassus_product;
use super::exact::{solve_exact, ExactRun};
use super::krylov::conjugate_residual;
use super::laws::{evaluate_laws, RowLaws};
use super::rescue::{projected_sweeps, proximal_point, RESCUE_NEWTON, RESCUE_ROUNDS, RESCUE_SWEEPS, RESCUE_WORK};
use super::{LinearSolver, NewtonIterate, NewtonJacobian, NewtonOptions, NewtonProblem, NewtonScratch, NewtonStats, AUTO_DIRECT_MAX_ROWS};
use crate::math::dense::{cholesky_in_place, cholesky_solve};

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

/// Runs the Newton iteration on `prob` from `it` (see the module docs); leaves the solution in
/// `it`. Allocation- and lock-free on a serial scratch ([`NewtonScratch::new`]); with a pool
/// the Delassus products of large problems run on it.
///
/// Long by design: one numeric algorithm read top to bottom against the paper, whose
/// intermediate values feed each other in a fixed order (splitting it would move state into
/// parameter structs without making a step of it separately meaningful).
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
        let mut exact = solve_exact(prob, opts, scr, it, ExactRun::StepProblem);
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
            let again = solve_exact(prob, &capped, scr, it, ExactRun::Rescue);
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
