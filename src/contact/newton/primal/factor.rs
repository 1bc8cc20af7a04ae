//! The sparse Cholesky factor of the primal form's node matrix (step 2 of the outer iteration in
//! the module docs): the fill-reducing node ordering (approximate minimum degree, the `amd`
//! crate), the factor `A = L Lᵀ` with the pattern of `nalgebra_sparse`'s symbolic analysis and our
//! allocation-free numeric refactorisation (bit-identical to `CscCholesky::refactor`), and the
//! triangular solves with `L`.

use nalgebra_sparse::factorization::CscCholesky;
use nalgebra_sparse::CscMatrix;

/// Approximate-minimum-degree ordering of an undirected graph given by its adjacency lists
/// (each list may or may not hold the vertex itself): `order[k]` is the vertex placed k-th.
/// Falls back to the natural order if the ordering library reports an invalid input.
pub(crate) fn fill_reducing_order(adjacency: &[Vec<usize>]) -> Vec<usize> {
    let n = adjacency.len();
    let mut ap = Vec::with_capacity(n + 1);
    let mut ai = vec![];
    ap.push(0i64);
    for (i, nb) in adjacency.iter().enumerate() {
        let mut col: Vec<i64> = nb.iter().map(|&j| j as i64).collect();
        col.push(i as i64);
        col.sort_unstable();
        col.dedup();
        ai.extend_from_slice(&col);
        ap.push(ai.len() as i64);
    }
    match amd::order(n as i64, &ap, &ai, &amd::Control::default()) {
        Ok((p, _, _)) => p.into_iter().map(|k| k as usize).collect(),
        Err(_) => (0..n).collect(),
    }
}

/// `x ← L⁻¹ x`, `L` lower triangular in CSC with the diagonal first in each column; columns
/// before `start` are skipped (the right-hand side is zero there).
pub(super) fn lower_solve(l: &CscMatrix<f64>, x: &mut [f64], start: usize) {
    let (offsets, rows, vals) = (l.col_offsets(), l.row_indices(), l.values());
    for j in start..x.len() {
        let (a, b) = (offsets[j], offsets[j + 1]);
        let xj = x[j] / vals[a];
        x[j] = xj;
        if xj != 0.0 {
            for p in a + 1..b {
                x[rows[p]] -= vals[p] * xj;
            }
        }
    }
}

/// `x ← L⁻ᵀ x`.
pub(super) fn upper_solve(l: &CscMatrix<f64>, x: &mut [f64]) {
    let (offsets, rows, vals) = (l.col_offsets(), l.row_indices(), l.values());
    for j in (0..x.len()).rev() {
        let (a, b) = (offsets[j], offsets[j + 1]);
        let mut s = x[j];
        for p in a + 1..b {
            s -= vals[p] * x[rows[p]];
        }
        x[j] = s / vals[a];
    }
}

/// `x ← A⁻¹ x` with `A = L Lᵀ`, the right-hand side zero before `start`.
pub(super) fn chol_solve(l: &CscMatrix<f64>, x: &mut [f64], start: usize) {
    lower_solve(l, x, start);
    upper_solve(l, x);
}

/// The sparse Cholesky factor `A = L Lᵀ` of the node matrix: the pattern of `L` from
/// `nalgebra_sparse`'s symbolic analysis (elimination tree, column counts) at setup; the numeric
/// refactorisation is our left-looking loop, the same operations in the same order as
/// `CscCholesky::refactor` (so the factor is bit-identical to it), but each update from a column
/// `j` of `L` reads only its entries at and below the current row (found by a per-column cursor)
/// instead of scanning the whole column: about half the memory traffic. Allocation-free.
pub(super) struct NodeFactor {
    /// The pattern of the factored matrix (CSC, rows sorted; both triangles may be present).
    a_offsets: Vec<usize>,
    a_rows: Vec<usize>,
    l: CscMatrix<f64>,
    /// The pattern of `L` by rows, strictly left of the diagonal: row `k` holds the columns
    /// `row_cols[row_offsets[k]..row_offsets[k + 1]]`, ascending.
    row_offsets: Vec<usize>,
    row_cols: Vec<usize>,
    /// Per column of `L`: its entry in the row being computed.
    next: Vec<usize>,
    work: Vec<f64>,
}

impl NodeFactor {
    /// Analyses and factors `a` (symmetric positive definite; `None` otherwise).
    pub(super) fn new(a: &CscMatrix<f64>) -> Option<Self> {
        let l = CscCholesky::factor(a).ok()?.take_l();
        let n = l.nrows();
        let (offsets, rows) = (l.col_offsets(), l.row_indices());
        let mut count = vec![0usize; n + 1];
        for j in 0..n {
            for &r in &rows[offsets[j] + 1..offsets[j + 1]] {
                count[r + 1] += 1;
            }
        }
        for k in 0..n {
            count[k + 1] += count[k];
        }
        let mut fill = count.clone();
        let mut row_cols = vec![0; count[n]];
        for j in 0..n {
            for &r in &rows[offsets[j] + 1..offsets[j + 1]] {
                row_cols[fill[r]] = j;
                fill[r] += 1;
            }
        }
        Some(NodeFactor { a_offsets: a.col_offsets().to_vec(), a_rows: a.row_indices().to_vec(), l, row_offsets: count, row_cols, next: vec![0; n], work: vec![0.0; n] })
    }

    /// The factor `L` (lower triangular, CSC, the diagonal first in each column).
    pub(super) fn l(&self) -> &CscMatrix<f64> {
        &self.l
    }

    /// Refactors with new `values` on the analysed pattern; `Err` when the matrix is not
    /// positive definite (the factor is then invalid).
    pub(super) fn refactor(&mut self, values: &[f64]) -> Result<(), ()> {
        let NodeFactor { a_offsets, a_rows, l, row_offsets, row_cols, next, work } = self;
        let n = work.len();
        let (offsets, rows, lv) = l.csc_data_mut();
        next.copy_from_slice(&offsets[..n]);
        for k in 0..n {
            // the lower part of column k of A
            work[k] = 0.0;
            for p in a_offsets[k]..a_offsets[k + 1] {
                let r = a_rows[p];
                if r >= k {
                    work[r] = values[p];
                }
            }
            // minus L[k.., j] L[k, j] for every column j < k with L[k, j] ≠ 0
            for &j in &row_cols[row_offsets[k]..row_offsets[k + 1]] {
                let start = next[j];
                let factor = -lv[start];
                next[j] = start + 1;
                for p in start..offsets[j + 1] {
                    work[rows[p]] += lv[p] * factor;
                }
            }
            let diag = work[k];
            if !(diag > 0.0) {
                return Err(());
            }
            let denom = diag.sqrt();
            for p in offsets[k]..offsets[k + 1] {
                let r = rows[p];
                lv[p] = work[r] / denom;
                work[r] = 0.0;
            }
            next[k] = offsets[k] + 1;
        }
        Ok(())
    }
}
