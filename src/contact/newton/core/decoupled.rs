//! Decoupled rows of the exact Newton matrix ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)):
//! a row whose generalized Jacobian is its diagonal alone is solved by one division, and the LU
//! runs on the other rows only.
//!
//! A row's law makes its Jacobian row `r eᵢ + ε eᵢ` (no `D` terms) where the law does not look
//! at the velocity: a joint's friction at its bound (`p = ±B`), a friction pair of a contact with
//! no normal impulse (`p_f = 0`), an open contact (`min(a, b) = b = r p`). On the arm pushing the
//! box, 10 to 23 of the 39 rows of its one block are such rows in most steps (the arm's nine
//! joint-friction rows slide while it moves): the LU of the other rows takes `(28/39)³`, about
//! 0.37, of the whole block's work, and each solve `(28/39)²`.
//!
//! With the rows of the block split into the coupled set `R` and the decoupled set `S`, the
//! Newton matrix of the block is `[[A_RR, A_RS], [0, diag(A_SS)]]`, and `A x = b` is
//! `x_S = b_S / diag(A_SS)` then `A_RR x_R = b_R − A_RS x_S` (exact block back-substitution; the
//! sums round differently from the LU of the whole block, whose pivoting order is another).

use crate::math::dense::{lu_in_place_block, lu_solve_block};

/// Orders the rows of the block `[start, start + n)` of the row-major `m`-wide matrix `a`: the
/// coupled rows first (block-local indices, ascending), then the decoupled rows (no nonzero off
/// the diagonal within the block), into `order[..n]`. Returns the number of coupled rows.
pub(super) fn split_rows(a: &[f64], m: usize, start: usize, n: usize, order: &mut [usize]) -> usize {
    let mut coupled = 0;
    let mut decoupled = n;
    for r in 0..n {
        let row = &a[(start + r) * m + start..(start + r) * m + start + n];
        let alone = row[..r].iter().all(|&v| v == 0.0) && row[r + 1..].iter().all(|&v| v == 0.0);
        if alone {
            decoupled -= 1;
            order[decoupled] = r;
        } else {
            order[coupled] = r;
            coupled += 1;
        }
    }
    // the decoupled rows in ascending order too (they were written from the end)
    order[coupled..n].reverse();
    coupled
}

/// Factorises the coupled rows of the block `[start, start + n)` of `a` (rows ordered by
/// [`split_rows`], `coupled` of them) and solves `A x = b` in place on `x` (the block's `n`
/// entries; `b` on entry). The coupled rows' LU factor is left row-major `coupled × coupled` in
/// `factor`, with its row pivots in `pivot[..coupled]`; `a` is not changed. `work` holds at
/// least `n` entries. `false` when a decoupled row's diagonal is zero or the coupled rows are
/// singular.
#[allow(clippy::too_many_arguments)]
pub(super) fn factor_and_solve(a: &[f64], m: usize, start: usize, order: &[usize], coupled: usize, factor: &mut [f64], pivot: &mut [usize], x: &mut [f64], work: &mut [f64]) -> bool {
    let n = order.len();
    let (rows_r, rows_s) = order.split_at(coupled);
    for &s in rows_s {
        let d = a[(start + s) * m + start + s];
        if d == 0.0 || !d.is_finite() {
            return false;
        }
    }
    for (i, &r) in rows_r.iter().enumerate() {
        let row = &a[(start + r) * m + start..(start + r) * m + start + n];
        for (j, &c) in rows_r.iter().enumerate() {
            factor[i * coupled + j] = row[c];
        }
    }
    if coupled > 0 && !lu_in_place_block(&mut factor[..coupled * coupled], coupled, 0, coupled, &mut pivot[..coupled]) {
        return false;
    }
    let coupling = |i: usize, j: usize| a[(start + rows_r[i]) * m + start + rows_s[j]];
    let diagonal = |j: usize| a[(start + rows_s[j]) * m + start + rows_s[j]];
    solve_split(coupling, diagonal, order, coupled, &factor[..coupled * coupled], &pivot[..coupled], x, work);
    true
}

/// `A x = b` in place on `x` (the block's entries) with the coupled rows' LU factor (`factor`,
/// `pivot`), the coupled rows' entries on the decoupled columns `coupling(i, j)` (the `i`-th
/// coupled row, the `j`-th decoupled column, in `order`'s order) and the decoupled rows'
/// diagonal `diagonal(j)`. `work` holds at least `coupled` entries.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_split(coupling: impl Fn(usize, usize) -> f64, diagonal: impl Fn(usize) -> f64, order: &[usize], coupled: usize, factor: &[f64], pivot: &[usize], x: &mut [f64], work: &mut [f64]) {
    let (rows_r, rows_s) = order.split_at(coupled);
    for (j, &s) in rows_s.iter().enumerate() {
        x[s] /= diagonal(j);
    }
    for (i, &r) in rows_r.iter().enumerate() {
        let mut b = x[r];
        for (j, &s) in rows_s.iter().enumerate() {
            b -= coupling(i, j) * x[s];
        }
        work[i] = b;
    }
    if coupled > 0 {
        lu_solve_block(factor, coupled, 0, pivot, &mut work[..coupled]);
    }
    for (i, &r) in rows_r.iter().enumerate() {
        x[r] = work[i];
    }
}
