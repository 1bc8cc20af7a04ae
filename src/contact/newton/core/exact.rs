//! The Newton iteration with the exact generalized Jacobian of every row's natural residual
//! ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact); ours, rigid rows only, beside the
//! paper's frozen compliance of §7 and App. A.2): on the impulses alone, LU per consecutive block
//! (Cholesky where the block is symmetric), full steps; when they stall, the step's own problem
//! hands over to the rescues ([`ExactRun::StepProblem`]) and a rescue's problem goes on with an
//! Armijo backtracking on `½‖F‖²` ([`ExactRun::Rescue`]).

use super::blocks::consecutive_blocks;
use super::decoupled::{factor_and_solve, split_rows};
use super::delassus::block_delassus_product;
use super::kept::{self, BlockFactor};
use super::laws::exact_laws;
use super::{NewtonIterate, NewtonOptions, NewtonProblem, NewtonScratch, NewtonStats};
use crate::math::dense::{block_is_symmetric, cholesky_in_place_block, cholesky_solve_block, lu_in_place_block, lu_solve_block};

/// Full Newton steps before the line search starts ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)).
const FULL_STEPS: u32 = 12;
/// First proximal weight λ (relative to the row's `Dᵢᵢ`) after a failed line search.
const PROXIMAL_START: f64 = 1e-3;
/// Full steps in a row without a new best residual that end the full-step phase early. A full
/// step from a warm start on the wrong side of a kink (a contact about to slide or to open) can
/// throw the residual up by four orders (arm pushing the box: 7e-5 → 1.7 → 0.08 → 1.2 m/s,
/// then the line search from the warm start); two such steps are enough to tell. Measured
/// 2026-11-28 over whole runs, Newton iterations with 3 → 2: arm pushing the box 6 863 → 6 319,
/// default scene 7 412 → 6 942, masonry arch's slowest step 111 → 89 (instructions per step
/// −2.2 % and −1.2 % on the first two); 1 made the line search start too early (steps of 11–13
/// iterations appeared on the arm).
const FULL_STEP_STALLS: u32 = 2;
/// A line-search iteration whose best merit is above this fraction of the merit before it counts
/// as crawling.
const CRAWL_DECREASE: f64 = 0.9;
/// Crawling line-search iterations in a row after which the exact iteration gives up (the
/// proximal-point rescue takes over from the best iterate).
const CRAWL_LIMIT: u32 = 3;
/// Sufficient decrease of the Armijo test on `½‖F‖²` ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)).
const ARMIJO: f64 = 1e-4;
/// Backtracking halvings at most per Newton iteration ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)).
const MAX_HALVINGS: u32 = 10;

/// Which problem a run of [`solve_exact`] works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExactRun {
    /// The step's own problem. A factorisation kept from an earlier step ([`super::kept`], in
    /// `scr.kept`) is tried once on the warm start before any new Jacobian, and the last
    /// factorisation of the run is kept for the next step. When the full steps stall the run
    /// ends at its best iterate, unconverged, and the proximal-point rescue takes over
    /// ([`super::rescue::proximal_point`]): a stall of the full steps from a warm start is, on the
    /// shipped scenes, a redundant contact set whose Newton matrix is singular up to ε, where
    /// the rescue's regularised rounds converge in one or two iterations and the line search
    /// crawls (docs/newton.md, "Globalization").
    StepProblem,
    /// A rescue's modified problem (a proximal-point round, the exact iterations after the
    /// sweeps): no kept factorisation; a stall of the full steps goes on with the Armijo line
    /// search from the best iterate.
    Rescue,
}

/// The Newton iteration with the exact generalized Jacobian ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)). The
/// velocity is kept exactly on the momentum equation, `u = ũ + M̃⁻¹ J̄ᵀ p` (so `w = J̄ũ + D p`),
/// which makes the iteration one on the impulses alone: `F(p) = 0`. Each iteration solves
/// `(G_w D + G_p + ε I) x = −F` by LU and backtracks from `t = step_fraction` until
/// `½‖F‖²` decreases by the Armijo factor (after [`MAX_HALVINGS`] halvings it takes the trial
/// with the smallest merit). An unconverged step keeps its best iterate.
///
/// Long by design: one numeric algorithm read top to bottom against the paper, whose
/// intermediate values feed each other in a fixed order (splitting it would move state into
/// parameter structs without making a step of it separately meaningful).
///
/// `run` tells the step's own problem from a rescue's ([`ExactRun`]): only the first tries and
/// keeps factorisations, and it hands a stall of its full steps to the rescues instead of
/// searching along the Newton direction itself.
pub(super) fn solve_exact(prob: &NewtonProblem, opts: &NewtonOptions, scr: &mut NewtonScratch, it: &mut NewtonIterate, run: ExactRun) -> NewtonStats {
    let keep = run == ExactRun::StepProblem;
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
        if keep && stats.newton_iterations == 0 && stats.kept_factor_solves == 0 && kept::matches(&scr.kept, m, &scr.block_ends[..blocks]) {
            // the chord step: one solve with the kept factorisation from the warm start, accepted
            // only if it meets the tolerance
            stats.kept_factor_solves = 1;
            for i in 0..m {
                scr.increment[i] = -scr.residual[i];
            }
            kept::solve(&scr.kept, &mut scr.increment[..m], &mut scr.pivot[..m], &mut scr.row_order[..m], &mut scr.coupled_rhs[..m]);
            block_delassus_product(d, m, &scr.block_ends[..blocks], &scr.increment, &mut scr.rhs, scr.pool.as_ref());
            for i in 0..m {
                scr.trial_impulse[i] = it.impulse[i] + scr.increment[i];
                scr.trial_velocity_impulse[i] = scr.row_velocity[i] + scr.rhs[i];
            }
            let [cf, cn, ..] = &mut scr.cr;
            let (trial_inf, _) = exact_laws(prob, opts, &scr.trial_impulse[..m], &scr.trial_velocity_impulse[..m], &mut cf[..m], &mut cn[..m], None);
            if kept::accepts(trial_inf, opts.tolerance_m_s) {
                kept::note_use(&mut scr.kept);
                it.impulse.copy_from_slice(&scr.trial_impulse[..m]);
                stats.residual_m_s = trial_inf;
                stats.converged = true;
                break;
            }
            // stale: the Newton iteration from the warm start, and a new factorisation to keep
            kept::clear(&mut scr.kept);
        }
        if opts.line_search && !searching && (stats.newton_iterations >= FULL_STEPS || stalls >= FULL_STEP_STALLS) {
            if run == ExactRun::StepProblem {
                // the step's own problem: the proximal-point rescue takes over from the best
                // iterate (below, after the loop)
                break;
            }
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
        // a Cholesky that failed re-evaluates the whole Jacobian, over the blocks factorised
        // before it: then their factors are not kept
        let mut evaluated_again = false;
        let mut block_start = 0;
        for k in 0..blocks {
            let block_end = scr.block_ends[k];
            let n = block_end - block_start;
            // a block whose rows are all Delassus rows (active normals, sticking friction,
            // interior joint friction, bilateral rows) has the symmetric positive definite
            // matrix G + diagonal: Cholesky on its profile, half the work of LU
            let mut solved = false;
            if block_is_symmetric(&scr.dense[..m * m], m, block_start, n) {
                if cholesky_in_place_block(&mut scr.dense[..m * m], m, block_start, n) {
                    cholesky_solve_block(&scr.dense[..m * m], m, block_start, &mut scr.increment[block_start..block_end]);
                    solved = true;
                    scr.block_factor[k] = BlockFactor::Cholesky;
                } else {
                    // not positive definite after all (round-off): the block again, by LU
                    evaluated_again = true;
                    exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], Some((&mut scr.dense[..m * m], &scr.block_ends[..blocks])));
                    for i in block_start..block_end {
                        scr.dense[i * m + i] += proximal * d[i * m + i];
                    }
                }
            }
            if !solved {
                // rows whose Jacobian is their diagonal alone (a joint's friction at its bound, an
                // open contact) are solved by a division, the LU runs on the others
                let coupled = split_rows(&scr.dense[..m * m], m, block_start, n, &mut scr.row_order[block_start..block_end]);
                if coupled < n {
                    let factor = &mut scr.split_factors[block_start * m..block_end * m];
                    if !factor_and_solve(&scr.dense[..m * m], m, block_start, &scr.row_order[block_start..block_end], coupled, factor, &mut scr.pivot[block_start..block_end], &mut scr.increment[block_start..block_end], &mut scr.coupled_rhs[..n]) {
                        singular = true;
                        break;
                    }
                    scr.block_factor[k] = BlockFactor::SplitLu { coupled };
                } else {
                    if !lu_in_place_block(&mut scr.dense[..m * m], m, block_start, n, &mut scr.pivot[block_start..block_end]) {
                        singular = true;
                        break;
                    }
                    lu_solve_block(&scr.dense[..m * m], m, block_start, &scr.pivot[block_start..block_end], &mut scr.increment[block_start..block_end]);
                    scr.block_factor[k] = BlockFactor::Lu;
                }
            }
            block_start = block_end;
        }
        if singular {
            break; // singular: only with a non-finite input; reported unconverged
        }
        if keep && proximal == 0.0 {
            if evaluated_again {
                kept::clear(&mut scr.kept);
            } else {
                kept::record(&mut scr.kept, &scr.dense[..m * m], m, &scr.block_ends[..blocks], &scr.block_factor[..blocks], &scr.pivot[..m], &scr.row_order[..m], &scr.split_factors);
            }
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
