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
//! | `B` | each block's factorisation: 0 LU, 1 Cholesky, `2 + c` LU of its `c` coupled rows beside decoupled ones ([`super::decoupled`]) |
//! | `m` | the LU's row pivots, local to each block (for a split block, the first `c` are the coupled rows' pivots; unused for Cholesky blocks) |
//! | `m` | per row of a Cholesky block, how many entries right of its diagonal the factor `U` has up to its last nonzero (the block's profile); per row of a split block, the block-local row order (coupled rows, then decoupled); unused for LU blocks |
//! | per block | an LU or Cholesky block's factor, row-major `n_b × n_b`; a split block's coupled factor (`c × c`), its coupled rows' entries on the decoupled columns (`c × s`, `s = n_b − c`) and the decoupled rows' diagonal (`s`), `c² + c s + s` in all |

use super::decoupled::solve_split;
use crate::math::dense::{dot, lu_solve_block};

/// How the Newton iteration factorised one consecutive block of its matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockFactor {
    /// LU with row pivots, the whole block.
    Lu,
    /// Cholesky on the block's profile (a symmetric block).
    Cholesky,
    /// LU of the block's `coupled` coupled rows, the decoupled rows by division ([`super::decoupled`]).
    SplitLu {
        /// The coupled rows.
        coupled: usize,
    },
}

impl BlockFactor {
    fn code(self) -> f64 {
        match self {
            BlockFactor::Lu => 0.0,
            BlockFactor::Cholesky => 1.0,
            BlockFactor::SplitLu { coupled } => 2.0 + coupled as f64,
        }
    }

    fn from_code(code: f64) -> Self {
        match code as usize {
            0 => BlockFactor::Lu,
            1 => BlockFactor::Cholesky,
            k => BlockFactor::SplitLu { coupled: k - 2 },
        }
    }

    /// The entries of the block's factor data in the kept record (`n` rows).
    fn len(self, n: usize) -> usize {
        match self {
            BlockFactor::Lu | BlockFactor::Cholesky => n * n,
            BlockFactor::SplitLu { coupled: c } => c * c + c * (n - c) + (n - c),
        }
    }
}

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
/// must [`matches`] `x`'s rows. `pivot` and `order` (each at least `x.len()` long) take the LU
/// pivots and a split block's row order as indices, `work` (as long) the split blocks' coupled
/// right-hand sides.
pub(super) fn solve(kept: &[f64], x: &mut [f64], pivot: &mut [usize], order: &mut [usize], work: &mut [f64]) {
    let m = x.len();
    let b = kept[1] as usize;
    let (ends, rest) = kept[3..].split_at(b);
    let (kinds, rest) = rest.split_at(b);
    let (pivots, rest) = rest.split_at(m);
    let (widths, mut factors) = rest.split_at(m);
    let mut start = 0;
    for (k, &end) in ends.iter().enumerate() {
        let end = end as usize;
        let n = end - start;
        let kind = BlockFactor::from_code(kinds[k]);
        let (factor, later) = factors.split_at(kind.len(n));
        match kind {
            BlockFactor::Cholesky => cholesky_solve_profile(factor, &widths[start..end], &mut x[start..end]),
            BlockFactor::Lu => {
                for (p, &q) in pivot[..n].iter_mut().zip(&pivots[start..end]) {
                    *p = q as usize;
                }
                lu_solve_block(factor, n, 0, &pivot[..n], &mut x[start..end]);
            }
            BlockFactor::SplitLu { coupled: c } => {
                let s = n - c;
                // the row order is stored as f64 in the widths' slot
                for (p, &q) in pivot[..c].iter_mut().zip(&pivots[start..start + c]) {
                    *p = q as usize;
                }
                for (o, &w) in order[..n].iter_mut().zip(&widths[start..end]) {
                    *o = w as usize;
                }
                let (lu, rest) = factor.split_at(c * c);
                let (coupling, diagonal) = rest.split_at(c * s);
                solve_split(|i, j| coupling[i * s + j], |j| diagonal[j], &order[..n], c, lu, &pivot[..c], &mut x[start..end], work);
            }
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
        let s = dot(&row[i + 1..i + 1 + w], &x[i + 1..i + 1 + w]);
        x[i] = (x[i] - s) / row[i];
    }
}

/// Writes the factors of the blocks ending at `block_ends` into `kept`: an LU or Cholesky
/// block's factor is the diagonal block of the row-major `m × m` matrix `dense` (LU with the
/// local row pivots `pivots[start..end]`); a split block's coupled factor is at
/// `split_factors[start · m..]` (`c × c`, its pivots `pivots[start..start + c]`), its row order
/// `order[start..end]`, and its other entries are read from `dense` (not factorised there).
/// Leaves nothing kept when `kept` cannot hold them without allocating.
#[allow(clippy::too_many_arguments)]
pub(super) fn record(kept: &mut Vec<f64>, dense: &[f64], m: usize, block_ends: &[usize], kinds: &[BlockFactor], pivots: &[usize], order: &[usize], split_factors: &[f64]) {
    let b = block_ends.len();
    let mut len = 3 + 2 * b + 2 * m;
    let mut start = 0;
    for (k, &end) in block_ends.iter().enumerate() {
        len += kinds[k].len(end - start);
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
    kept.extend(kinds[..b].iter().map(|k| k.code()));
    kept.extend(pivots[..m].iter().map(|&p| p as f64));
    let mut start = 0;
    for (k, &end) in block_ends.iter().enumerate() {
        match kinds[k] {
            BlockFactor::Cholesky => {
                for r in start..end {
                    let upper = &dense[r * m + r + 1..r * m + end];
                    kept.push(upper.iter().rposition(|&u| u != 0.0).map_or(0, |j| j + 1) as f64);
                }
            }
            BlockFactor::Lu => kept.extend((start..end).map(|_| 0.0)),
            BlockFactor::SplitLu { .. } => kept.extend(order[start..end].iter().map(|&o| o as f64)),
        }
        start = end;
    }
    let mut start = 0;
    for (k, &end) in block_ends.iter().enumerate() {
        match kinds[k] {
            BlockFactor::Lu | BlockFactor::Cholesky => {
                for r in start..end {
                    kept.extend_from_slice(&dense[r * m + start..r * m + end]);
                }
            }
            BlockFactor::SplitLu { coupled: c } => {
                let n = end - start;
                let (rows_r, rows_s) = order[start..end].split_at(c);
                kept.extend_from_slice(&split_factors[start * m..start * m + c * c]);
                for &r in rows_r {
                    kept.extend(rows_s.iter().map(|&s| dense[(start + r) * m + start + s]));
                }
                kept.extend(rows_s.iter().map(|&s| dense[(start + s) * m + start + s]));
                debug_assert_eq!(c * c + c * (n - c) + (n - c), kinds[k].len(n));
            }
        }
        start = end;
    }
}
