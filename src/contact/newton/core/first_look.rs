//! The exact iteration's first look at a step, before its Delassus matrix is assembled
//! ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact), rigid rows).
//!
//! Assembling `D` is the largest part of a contact-rich step, and `D` itself is needed only for
//! the Newton matrix. The warm start's evaluation needs `D p` and `D`'s diagonal (the
//! effective-mass scales), and the chord step with the kept factorisation ([`super::kept`]) one
//! more product `D x`: all three come from the factored rows (`D x = Zᵀ (Z x)`, the diagonal
//! `‖zᵢ‖²`) at the cost of the rows' trees instead of `m²`. On a scene at rest one of the two
//! ends nearly every step, and `D` is assembled only on the steps that need a Newton iteration.
//! The products through `Z` round differently from `D`'s, so a step's result can differ from
//! the one with `D` assembled first in the last bits; both meet the same tolerance.

use super::blocks::consecutive_blocks;
use super::kept;
use super::laws::exact_laws;
use super::{NewtonIterate, NewtonJacobian, NewtonOptions, NewtonProblem, NewtonScratch, NewtonStats};

/// Evaluates the warm start `it.impulse` and, if it misses the tolerance and a kept
/// factorisation fits the rows, takes the chord step: `Some(stats)` when either meets the
/// tolerance (the solution in `it`), `None` when the Newton iteration must run (nothing in `it`
/// changed; a kept factorisation that missed is forgotten). `prob.delassus` need hold only
/// `D`'s diagonal (`D[i][i]` at `i·m + i`: the laws' scales); `apply(x, out)` writes `D x`.
pub fn first_look(prob: &NewtonProblem, opts: &NewtonOptions, scr: &mut NewtonScratch, it: &mut NewtonIterate, mut apply: impl FnMut(&[f64], &mut [f64])) -> Option<NewtonStats> {
    let m = prob.dim();
    let tolerance = opts.tolerance_m_s;
    // the exact iteration's laws and stopping test only: the frozen-compliance iteration works
    // on D from its start
    if m == 0 || tolerance <= 0.0 || opts.jacobian != NewtonJacobian::Exact {
        return None;
    }
    let blocks = consecutive_blocks(prob, &mut scr.block_reach[..m], &mut scr.tree_last_row[..2 * m], &mut scr.block_ends[..m]);
    apply(it.impulse, &mut scr.row_velocity[..m]);
    for i in 0..m {
        scr.row_velocity[i] += prob.free_row_velocity[i];
    }
    let (warm, _) = exact_laws(prob, opts, it.impulse, &scr.row_velocity[..m], &mut scr.residual[..m], &mut scr.natural[..m], None);
    let done = |it: &mut NewtonIterate, residual_m_s: f64, kept_factor_solves: u32| {
        it.free_weight = 1.0;
        it.velocity_impulse.copy_from_slice(it.impulse);
        Some(NewtonStats { residual_m_s, kept_factor_solves, converged: true, ..NewtonStats::default() })
    };
    if warm <= tolerance {
        return done(it, warm, 0);
    }
    if !kept::matches(&scr.kept, m, &scr.block_ends[..blocks]) {
        return None;
    }
    for i in 0..m {
        scr.increment[i] = -scr.residual[i];
    }
    kept::solve(&scr.kept, &mut scr.increment[..m], &mut scr.pivot[..m], &mut scr.row_order[..m], &mut scr.coupled_rhs[..m]);
    apply(&scr.increment[..m], &mut scr.rhs[..m]);
    for i in 0..m {
        scr.trial_impulse[i] = it.impulse[i] + scr.increment[i];
        scr.trial_velocity_impulse[i] = scr.row_velocity[i] + scr.rhs[i];
    }
    let [cf, cn, ..] = &mut scr.cr;
    let (chord, _) = exact_laws(prob, opts, &scr.trial_impulse[..m], &scr.trial_velocity_impulse[..m], &mut cf[..m], &mut cn[..m], None);
    if kept::accepts(chord, tolerance) {
        kept::note_use(&mut scr.kept);
        it.impulse.copy_from_slice(&scr.trial_impulse[..m]);
        return done(it, chord, 1);
    }
    kept::clear(&mut scr.kept);
    None
}
