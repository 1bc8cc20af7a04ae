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
//! The factor is history between steps, so it lives in the state
//! ([`crate::state::State::method_history`]): a restored state continues bit for bit. Layout, all
//! `f64`:
//!
//! | entries | what |
//! |---|---|
//! | 1 | `m`, the rows (0: nothing kept) |
//! | 1 | `B`, the consecutive blocks |
//! | `B` | each block's end row |
//! | `B` | 1 where the block was factorised by Cholesky, 0 by LU |
//! | `m` | the LU's row pivots, local to each block (unused for Cholesky blocks) |
//! | `Σ n_b²` | each block's factor, row-major `n_b × n_b`, one block after the other |

use crate::math::dense::{cholesky_solve_block, lu_solve_block};

/// The entries of a kept factorisation of `m` rows in at most `m` blocks, its largest size.
pub(super) fn capacity(m: usize) -> usize {
    2 + 3 * m + m * m
}

/// Forgets the kept factorisation (the next step factorises anew).
pub(super) fn clear(kept: &mut [f64]) {
    if let Some(first) = kept.first_mut() {
        *first = 0.0;
    }
}

/// Whether `kept` holds a factorisation of `m` rows in the blocks ending at `block_ends`.
pub(super) fn matches(kept: &[f64], m: usize, block_ends: &[usize]) -> bool {
    let b = block_ends.len();
    m > 0 && kept.len() >= 2 + 2 * b + m && kept[0] == m as f64 && kept[1] == b as f64 && kept[2..2 + b].iter().zip(block_ends).all(|(k, &e)| *k == e as f64)
}

/// Solves `A x = b` in place (`x` holds b on entry) with the kept factors of `A`'s blocks; `kept`
/// must [`matches`] `x`'s rows. `pivot` (at least `x.len()` long) takes the LU pivots as indices.
pub(super) fn solve(kept: &[f64], x: &mut [f64], pivot: &mut [usize]) {
    let m = x.len();
    let b = kept[1] as usize;
    let (ends, rest) = kept[2..].split_at(b);
    let (cholesky, rest) = rest.split_at(b);
    let (pivots, mut factors) = rest.split_at(m);
    let mut start = 0;
    for (k, &end) in ends.iter().enumerate() {
        let end = end as usize;
        let n = end - start;
        let (factor, later) = factors.split_at(n * n);
        if cholesky[k] != 0.0 {
            cholesky_solve_block(factor, n, 0, &mut x[start..end]);
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

/// Writes the factors of the blocks ending at `block_ends` into `kept`: the blocks' factors are
/// the diagonal blocks of the row-major `m × m` matrix `dense`, factorised by Cholesky where
/// `cholesky[k]`, else by LU with the local row pivots `pivots[start..end]`. Leaves nothing kept
/// when `kept` cannot hold them without allocating.
pub(super) fn record(kept: &mut Vec<f64>, dense: &[f64], m: usize, block_ends: &[usize], cholesky: &[bool], pivots: &[usize]) {
    let b = block_ends.len();
    let mut len = 2 + 2 * b + m;
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
    kept.extend(block_ends.iter().map(|&e| e as f64));
    kept.extend(cholesky[..b].iter().map(|&c| if c { 1.0 } else { 0.0 }));
    kept.extend(pivots[..m].iter().map(|&p| p as f64));
    let mut start = 0;
    for &end in block_ends {
        for r in start..end {
            kept.extend_from_slice(&dense[r * m + start..r * m + end]);
        }
        start = end;
    }
}
