//! The factorisation of the last Newton matrix, kept for the next step ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)).
//!
//! On a scene at rest the Newton matrix of one step is that of the last to round-off, but the
//! warm start (the last step's impulses) still misses the tolerance on most steps: the
//! position-level normal law `gap/h + w` turns a gap of round-off size into a velocity that the
//! next step must take out again. The 4096:1 stack, the 5-box stack and the standing quadruped
//! cycle this way over three steps (measured 2026-11-28: one of three steps converged at the warm
//! start, two took one Newton iteration, each a new Jacobian and factorisation). One solve with
//! the kept factorisation (a chord step, the frozen Jacobian of the simplified Newton method)
//! usually ends such a step; a step whose chord step misses the tolerance drops it and runs the
//! Newton iteration from the warm start as before. The chord step's result is accepted only by the
//! iteration's own test (every row's error within the tolerance), so the solution is one the
//! Newton iteration would accept.
//!
//! One factorisation serves at most [`MAX_USES`] chord steps.
//!
//! The factor is history between steps, so it lives in the state
//! ([`crate::state::State::method_history`]): a restored state continues bit for bit. Layout, all
//! `f64`:
//!
//! | entries | what |
//! |---|---|
//! | 1 | `m`, the rows (0: nothing kept) |
//! | 1 | `B`, the consecutive blocks |
//! | 1 | the chord steps taken on it so far |
//! | `B` | each block's end row |
//! | `B` | 1 where the block was factorised by Cholesky, 0 by LU |
//! | `m` | the LU's row pivots, local to each block (unused for Cholesky blocks) |
//! | `m` | per row of a Cholesky block, how many entries right of its diagonal the factor `U` has up to its last nonzero (the block's profile) |
//! | `Σ n_b²` | each block's factor, row-major `n_b × n_b`, one block after the other |

use crate::math::dense::lu_solve_block;

/// The entries of a kept factorisation of `m` rows in at most `m` blocks, its largest size.
pub(super) fn capacity(m: usize) -> usize {
    3 + 4 * m + m * m
}

/// Chord steps at most on one kept factorisation; the next step that misses the tolerance at
/// its warm start then runs the Newton iteration and keeps its new factorisation. On one factor
/// the chord steps' errors build up from step to step in the modes the tolerance leaves free,
/// once the products come from the factored rows (whose round-off is not symmetric as `D`'s
/// is; [`super::first_look`]). Measured on a 2 kg box resting on a 3 kg box
/// (`resting_boxes_carry_their_weight` in `tests/newton.rs`, 2 s): with no bound the top box
/// rocked with an amplitude that grew 2.5-fold every three steps until the tolerance stopped it,
/// and the largest net friction on a resting box was 4.3e-4 N; with at most 4, 8, 16 and 32
/// chord steps per factor, 3.6e-12, 2.5e-10, 1.3e-6 and 3.8e-3 N. Eight keeps nearly all the
/// gain (instructions per step of the 4096:1 stack: 258 646 without a bound, 273 322 with 8,
/// 285 993 with 4).
pub(super) const MAX_USES: f64 = 8.0;

/// Whether a chord step that left the largest row error `chord` (m/s) is accepted: within the
/// tolerance (the iteration's own test).
pub(super) fn accepts(chord: f64, tolerance: f64) -> bool {
    tolerance > 0.0 && chord <= tolerance
}

/// Counts one accepted chord step on the kept factorisation.
pub(super) fn note_use(kept: &mut [f64]) {
    kept[2] += 1.0;
}

/// Forgets the kept factorisation (the next step factorises anew).
pub(super) fn clear(kept: &mut [f64]) {
    if let Some(first) = kept.first_mut() {
        *first = 0.0;
    }
}

/// Whether `kept` holds a factorisation of `m` rows in the blocks ending at `block_ends` with
/// chord steps left ([`MAX_USES`]).
pub(super) fn matches(kept: &[f64], m: usize, block_ends: &[usize]) -> bool {
    let b = block_ends.len();
    m > 0 && kept.len() >= 3 + 2 * b + 2 * m && kept[0] == m as f64 && kept[1] == b as f64 && kept[2] < MAX_USES && kept[3..3 + b].iter().zip(block_ends).all(|(k, &e)| *k == e as f64)
}

/// Solves `A x = b` in place (`x` holds b on entry) with the kept factors of `A`'s blocks; `kept`
/// must [`matches`] `x`'s rows. `pivot` (at least `x.len()` long) takes the LU pivots as indices.
pub(super) fn solve(kept: &[f64], x: &mut [f64], pivot: &mut [usize]) {
    let m = x.len();
    let b = kept[1] as usize;
    let (ends, rest) = kept[3..].split_at(b);
    let (cholesky, rest) = rest.split_at(b);
    let (pivots, rest) = rest.split_at(m);
    let (widths, mut factors) = rest.split_at(m);
    let mut start = 0;
    for (k, &end) in ends.iter().enumerate() {
        let end = end as usize;
        let n = end - start;
        let (factor, later) = factors.split_at(n * n);
        if cholesky[k] != 0.0 {
            cholesky_solve_profile(factor, &widths[start..end], &mut x[start..end]);
        } else {
            for (p, &q) in pivot[..n].iter_mut().zip(&pivots[start..end]) {
                *p = q as usize;
            }
            lu_solve_block(factor, n, 0, &pivot[..n], &mut x[start..end]);
        }
        factors = later;
        start = end;
    }
}

/// Solves `Uᵀ U x = b` in place with a Cholesky factor `U` (row-major `n × n`, upper triangle)
/// whose row `p` has `widths[p]` entries right of the diagonal up to its last nonzero: the
/// substitutions of [`crate::math::dense::cholesky_solve_block`] over the profile only (the
/// products they skip are exact zeros).
fn cholesky_solve_profile(u: &[f64], widths: &[f64], x: &mut [f64]) {
    let n = x.len();
    // Uᵀ y = b, by rows of U
    for p in 0..n {
        let row = &u[p * n..(p + 1) * n];
        let w = widths[p] as usize;
        let yp = x[p] / row[p];
        x[p] = yp;
        for (xj, uj) in x[p + 1..p + 1 + w].iter_mut().zip(&row[p + 1..p + 1 + w]) {
            *xj -= uj * yp;
        }
    }
    // U x = y
    for i in (0..n).rev() {
        let row = &u[i * n..(i + 1) * n];
        let w = widths[i] as usize;
        let s: f64 = row[i + 1..i + 1 + w].iter().zip(&x[i + 1..i + 1 + w]).map(|(u, v)| u * v).sum();
        x[i] = (x[i] - s) / row[i];
    }
}

/// Writes the factors of the blocks ending at `block_ends` into `kept`: the blocks' factors are
/// the diagonal blocks of the row-major `m × m` matrix `dense`, factorised by Cholesky where
/// `cholesky[k]`, else by LU with the local row pivots `pivots[start..end]`. Leaves nothing kept
/// when `kept` cannot hold them without allocating.
pub(super) fn record(kept: &mut Vec<f64>, dense: &[f64], m: usize, block_ends: &[usize], cholesky: &[bool], pivots: &[usize]) {
    let b = block_ends.len();
    let mut len = 3 + 2 * b + 2 * m;
    let mut start = 0;
    for &end in block_ends {
        len += (end - start) * (end - start);
        start = end;
    }
    if len > kept.capacity() {
        clear(kept);
        return;
    }
    kept.clear();
    kept.push(m as f64);
    kept.push(b as f64);
    kept.push(0.0);
    kept.extend(block_ends.iter().map(|&e| e as f64));
    kept.extend(cholesky[..b].iter().map(|&c| if c { 1.0 } else { 0.0 }));
    kept.extend(pivots[..m].iter().map(|&p| p as f64));
    let mut start = 0;
    for (k, &end) in block_ends.iter().enumerate() {
        for r in start..end {
            let upper = &dense[r * m + r + 1..r * m + end];
            let width = if cholesky[k] { upper.iter().rposition(|&u| u != 0.0).map_or(0, |j| j + 1) } else { 0 };
            kept.push(width as f64);
        }
        start = end;
    }
    let mut start = 0;
    for &end in block_ends {
        for r in start..end {
            kept.extend_from_slice(&dense[r * m + start..r * m + end]);
        }
        start = end;
    }
}
