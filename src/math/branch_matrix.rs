//! Symmetric matrices with branch-induced sparsity (Featherstone, *RBDA* §6.5), stored row by row.
//!
//! In a kinematic tree the joint-space inertia matrix `M[i][j]` is nonzero only when coordinate `j`
//! lies on the path from `i` to the root (or the other way round). With the coordinates numbered so
//! that every coordinate's parent `λ(k) < k`, row `k` of the lower triangle has its nonzeros exactly
//! at `k`'s ancestors-or-self `k, λ(k), λ(λ(k)), …`. [`BranchMatrix`] stores each such row
//! contiguously, in that order. The key property (used by the LTL factorization): if `i` is an
//! ancestor of `k`, the tail of `k`'s row that starts at `i` lines up entry for entry with `i`'s
//! whole row, so every update of the factorization and of the solves is a dense loop over two
//! contiguous slices.
//!
//! A factor's row often ends in exact zeros: a free body whose centre of mass is its frame's
//! origin has no coupling between its linear and angular coordinates, so the angular rows of its
//! `L` are zero over the three linear ancestors. [`BranchMatrix::factorize_ltl`] notes where each
//! row's last nonzero lies and the solves stop there: `x − 0·y` is `x` (up to the sign of a zero),
//! so they give the same values as over the whole row.

use nalgebra::DMatrix;

/// Marks the parent of a root coordinate in a `dof_parent` array.
pub const NO_PARENT: usize = usize::MAX;

/// A symmetric `n × n` matrix with the sparsity of a kinematic tree: entry `(k, j)`, `j ≤ k`, is
/// stored only when `j` is `k` or one of its ancestors. Row `k` is
/// `[A(k, k), A(k, λ(k)), A(k, λ²(k)), …]`. Either a matrix (M, M̃) or, after
/// [`BranchMatrix::factorize_ltl`], its factor `L` with `M̃ = Lᵀ L` (same pattern, no fill-in).
#[derive(Clone, Debug)]
pub struct BranchMatrix {
    /// Row `k` occupies `[row_start[k], row_start[k + 1])` of `column` and `values`.
    row_start: Vec<usize>,
    /// Column of each stored entry: `k` itself first, then its ancestors from the nearest.
    column: Vec<usize>,
    /// The stored entries.
    values: Vec<f64>,
    /// Row `k` of the factor is zero in `[used_end[k], row_start[k + 1])`: the solves stop at
    /// `used_end[k]` (set by [`BranchMatrix::factorize_ltl`]; the whole row otherwise).
    used_end: Vec<usize>,
}

impl BranchMatrix {
    /// A zero matrix for the coordinate tree `dof_parent` (`dof_parent[k] < k`, or [`NO_PARENT`]).
    ///
    /// # Panics
    /// If a parent index is not smaller than its child (a programming error: the model numbers
    /// coordinates depth-first).
    pub fn new(dof_parent: &[usize]) -> Self {
        let n = dof_parent.len();
        let mut row_start = Vec::with_capacity(n + 1);
        let mut column = Vec::new();
        row_start.push(0);
        for k in 0..n {
            let mut j = k;
            loop {
                column.push(j);
                let p = dof_parent[j];
                if p == NO_PARENT {
                    break;
                }
                assert!(p < j, "coordinate {j} has parent {p}: parents must come first");
                j = p;
            }
            row_start.push(column.len());
        }
        let values = vec![0.0; column.len()];
        let used_end = row_start[1..].to_vec();
        BranchMatrix { row_start, column, values, used_end }
    }

    /// The dimension `n`.
    pub fn dim(&self) -> usize {
        self.row_start.len() - 1
    }

    /// Number of stored entries (the lower triangle's nonzero pattern).
    pub fn stored_entries(&self) -> usize {
        self.values.len()
    }

    /// Row `k`: the columns (`k`, then its ancestors) and the values.
    #[inline]
    pub fn row(&self, k: usize) -> (&[usize], &[f64]) {
        let r = self.row_start[k]..self.row_start[k + 1];
        (&self.column[r.clone()], &self.values[r])
    }

    /// Row `k` of a factor up to its last nonzero (the diagonal at least): the columns and
    /// the values the solves read.
    #[inline]
    fn used_row(&self, k: usize) -> (&[usize], &[f64]) {
        let r = self.row_start[k]..self.used_end[k];
        (&self.column[r.clone()], &self.values[r])
    }

    /// Row `k`: the columns and the values, mutable.
    #[inline]
    pub fn row_mut(&mut self, k: usize) -> (&[usize], &mut [f64]) {
        self.used_end[k] = self.row_start[k + 1];
        let r = self.row_start[k]..self.row_start[k + 1];
        (&self.column[r.clone()], &mut self.values[r])
    }

    /// Row `k`'s values, mutable (columns as in [`BranchMatrix::row`]).
    #[inline]
    pub fn row_values_mut(&mut self, k: usize) -> &mut [f64] {
        self.used_end[k] = self.row_start[k + 1];
        let r = self.row_start[k]..self.row_start[k + 1];
        &mut self.values[r]
    }

    /// Adds `x` to the diagonal entry `(k, k)`.
    #[inline]
    pub fn add_to_diagonal(&mut self, k: usize, x: f64) {
        self.values[self.row_start[k]] += x;
    }

    /// Copies the values of a matrix with the same pattern (no allocation).
    ///
    /// # Panics
    /// If the patterns differ in size.
    pub fn copy_from(&mut self, other: &BranchMatrix) {
        self.values.copy_from_slice(&other.values);
        self.used_end.copy_from_slice(&other.used_end);
    }

    /// Sets every entry to zero.
    pub fn fill_zero(&mut self) {
        self.values.fill(0.0);
        self.used_end.copy_from_slice(&self.row_start[1..]);
    }

    /// Entry `(i, j)` of the symmetric matrix (0 outside the pattern). O(depth).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (i, j) = if j <= i { (i, j) } else { (j, i) };
        let (cols, vals) = self.row(i);
        cols.iter().position(|&c| c == j).map_or(0.0, |t| vals[t])
    }

    /// The symmetric matrix as a dense one (allocates; for tests and reports).
    pub fn to_dense(&self) -> DMatrix<f64> {
        let mut d = self.lower_to_dense();
        for i in 0..d.nrows() {
            for j in 0..i {
                d[(j, i)] = d[(i, j)];
            }
        }
        d
    }

    /// Writes the symmetric matrix into a dense column-major `n × n` buffer (no allocation; the
    /// entries outside the pattern are set to zero).
    ///
    /// # Panics
    /// If `out.len() != n²`.
    pub fn write_dense(&self, out: &mut [f64]) {
        let n = self.dim();
        assert_eq!(out.len(), n * n, "write_dense: buffer of {} for a {n}×{n} matrix", out.len());
        out.fill(0.0);
        for k in 0..n {
            let (cols, vals) = self.row(k);
            for (&j, &v) in cols.iter().zip(vals) {
                out[j * n + k] = v;
                out[k * n + j] = v;
            }
        }
    }

    /// The stored lower triangle as a dense matrix, zeros above the diagonal (allocates; for a
    /// factor `L`, this is `L`).
    pub fn lower_to_dense(&self) -> DMatrix<f64> {
        let n = self.dim();
        let mut d = DMatrix::zeros(n, n);
        for k in 0..n {
            let (cols, vals) = self.row(k);
            for (&j, &v) in cols.iter().zip(vals) {
                d[(k, j)] = v;
            }
        }
        d
    }

    /// `xᵀ A x` for the symmetric matrix.
    pub fn quadratic_form(&self, x: &[f64]) -> f64 {
        let mut s = 0.0;
        for k in 0..self.dim() {
            let (cols, vals) = self.row(k);
            s += vals[0] * x[k] * x[k];
            for (&j, &v) in cols[1..].iter().zip(&vals[1..]) {
                s += 2.0 * v * x[k] * x[j];
            }
        }
        s
    }

    /// Factorizes in place as `A = Lᵀ L` (Featherstone's LTL algorithm, *RBDA* §6.5, Table 6.3):
    /// eliminating from the last coordinate to the first along the parent chains creates no
    /// fill-in, so `L` has the pattern of `A` and the cost is `Σ_k depth(k)²` multiply-adds.
    /// Returns `false` (leaving the values partly overwritten) if `A` is not positive definite.
    pub fn factorize_ltl(&mut self) -> bool {
        let n = self.dim();
        for k in (0..n).rev() {
            let (s, e) = (self.row_start[k], self.row_start[k + 1]);
            // rows of k's ancestors all lie before row k: split there to hold both
            let (earlier, from_k) = self.values.split_at_mut(s);
            let row_k = &mut from_k[..e - s];
            let d = row_k[0];
            if !(d > 0.0) {
                return false;
            }
            let d = d.sqrt();
            row_k[0] = d;
            for v in &mut row_k[1..] {
                *v /= d;
            }
            // the row up to its last nonzero: the updates below and the solves stop there
            let used = 1 + row_k[1..].iter().rposition(|v| *v != 0.0).map_or(0, |t| t + 1);
            self.used_end[k] = s + used;
            // A[i][j] -= L[k][i] L[k][j] for every ancestor i of k and j ∈ {i} ∪ ancestors(i):
            // row i's entries line up with row k's tail from i on.
            for t in 1..used {
                let i = self.column[s + t];
                let l_ki = row_k[t];
                let row_i = &mut earlier[self.row_start[i]..self.row_start[i + 1]];
                let tail = &row_k[t..t + row_i.len()]; // same length: the bounds checks go away
                for u in 0..row_i.len() {
                    row_i[u] -= l_ki * tail[u];
                }
            }
        }
        true
    }

    /// `x ← L⁻ᵀ x` on the coordinate range `[s, e)` (one tree), with `self` holding `L`.
    /// `Lᵀ` is upper triangular: back substitution from the last coordinate, pushing each solved
    /// value to its ancestors. Zero entries are skipped, so a Jacobian row that touches one leg
    /// costs that leg's chain only.
    #[inline]
    pub fn solve_lt(&self, s: usize, e: usize, x: &mut [f64]) {
        for i in (s..e).rev() {
            if x[i] == 0.0 {
                continue;
            }
            let (cols, vals) = self.used_row(i);
            let xi = x[i] / vals[0];
            x[i] = xi;
            for (&j, &l) in cols[1..].iter().zip(&vals[1..]) {
                x[j] -= l * xi;
            }
        }
    }

    /// [`BranchMatrix::solve_lt`] on three vectors at once (the three rows of a point contact):
    /// their dependency chains interleave. A coordinate is skipped where all three entries are
    /// zero; where only some are, the others take `x − l·0`, which leaves every value as the
    /// one-vector solve does (up to the sign of a zero).
    #[inline]
    pub fn solve_lt3(&self, s: usize, e: usize, x0: &mut [f64], x1: &mut [f64], x2: &mut [f64]) {
        for i in (s..e).rev() {
            if x0[i] == 0.0 && x1[i] == 0.0 && x2[i] == 0.0 {
                continue;
            }
            let (cols, vals) = self.used_row(i);
            let d = vals[0];
            let (y0, y1, y2) = (x0[i] / d, x1[i] / d, x2[i] / d);
            x0[i] = y0;
            x1[i] = y1;
            x2[i] = y2;
            for (&j, &l) in cols[1..].iter().zip(&vals[1..]) {
                x0[j] -= l * y0;
                x1[j] -= l * y1;
                x2[j] -= l * y2;
            }
        }
    }

    /// `x ← L⁻¹ x` on the coordinate range `[s, e)` (one tree): forward substitution along each
    /// coordinate's ancestors.
    #[inline]
    pub fn solve_l(&self, s: usize, e: usize, x: &mut [f64]) {
        for i in s..e {
            let (cols, vals) = self.used_row(i);
            // two running sums (the even and the odd ancestors): a row's products then form two
            // dependency chains of half the depth instead of one
            let (mut even, mut odd) = (0.0, 0.0);
            let (above, l) = (&cols[1..], &vals[1..]);
            let pairs = above.len() / 2;
            for t in 0..pairs {
                even += l[2 * t] * x[above[2 * t]];
                odd += l[2 * t + 1] * x[above[2 * t + 1]];
            }
            if above.len() % 2 == 1 {
                even += l[2 * pairs] * x[above[2 * pairs]];
            }
            x[i] = (x[i] - even - odd) / vals[0];
        }
    }

    /// Solves `A x = b` in place on the coordinate range `[s, e)` of one tree with the factor:
    /// `x = L⁻¹ (L⁻ᵀ b)`.
    #[inline]
    pub fn solve(&self, s: usize, e: usize, x: &mut [f64]) {
        self.solve_lt(s, e, x);
        self.solve_l(s, e, x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small tree: 0 ← 1 ← 2, 1 ← 3 ← 4, and a second root 5 ← 6.
    fn tree() -> Vec<usize> {
        vec![NO_PARENT, 0, 1, 1, 3, NO_PARENT, 5]
    }

    fn random_spd(parent: &[usize], seed: u64) -> (BranchMatrix, DMatrix<f64>) {
        // A = Bᵀ B + I with B = a random matrix of the pattern (then A has the pattern too)
        let mut s = seed;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let mut b = BranchMatrix::new(parent);
        for v in b.values.iter_mut() {
            *v = rnd();
        }
        let bd = b.lower_to_dense();
        let dense = bd.transpose() * &bd + DMatrix::identity(parent.len(), parent.len());
        let mut a = BranchMatrix::new(parent);
        for k in 0..a.dim() {
            let cols: Vec<usize> = a.row(k).0.to_vec();
            for (t, j) in cols.into_iter().enumerate() {
                a.row_values_mut(k)[t] = dense[(k, j)];
            }
        }
        (a, dense)
    }

    #[test]
    fn pattern_and_dense_round_trip() {
        let (a, dense) = random_spd(&tree(), 1);
        assert_eq!(a.stored_entries(), 1 + 2 + 3 + 3 + 4 + 1 + 2);
        assert_eq!(a.row(4).0, &[4, 3, 1, 0]);
        // LᵀL products of a tree pattern stay inside the pattern
        let back = a.to_dense();
        assert!((back - &dense).abs().max() < 1e-15);
        let mut buf = vec![1.0; 49];
        a.write_dense(&mut buf);
        assert_eq!(buf.as_slice(), dense.as_slice());
        assert_eq!(a.get(2, 4), 0.0, "different branches");
        assert_eq!(a.get(0, 4), dense[(4, 0)]);
        let x = [0.3, -1.0, 2.0, 0.5, -0.2, 1.5, 0.7];
        let xv = nalgebra::DVector::from_column_slice(&x);
        assert!((a.quadratic_form(&x) - (xv.transpose() * &dense * &xv)[0]).abs() < 1e-12);
    }

    #[test]
    fn ltl_factor_reproduces_the_matrix_and_solves() {
        for seed in 1..20 {
            let (mut a, dense) = random_spd(&tree(), seed);
            assert!(a.factorize_ltl());
            let l = a.lower_to_dense();
            assert!((l.transpose() * &l - &dense).abs().max() < 1e-12, "seed {seed}: LᵀL ≠ A");
            let b = [1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.25];
            let mut x = b;
            a.solve(0, 5, &mut x);
            a.solve(5, 7, &mut x);
            let r = &dense * nalgebra::DVector::from_column_slice(&x) - nalgebra::DVector::from_column_slice(&b);
            assert!(r.abs().max() < 1e-12, "seed {seed}: residual {r}");
        }
    }

    #[test]
    fn the_solves_stop_at_each_rows_last_nonzero_with_the_same_values() {
        // a free body's chain of six coordinates with no coupling between its first three and
        // its last three (a centre of mass at the frame's origin): the factor's last three rows
        // end before the first three coordinates
        let chain = [NO_PARENT, 0, 1, 2, 3, 4];
        let mut a = BranchMatrix::new(&chain);
        let dense = nalgebra::DMatrix::from_row_slice(6, 6, &[
            2.0, 0.1, 0.0, 0.0, 0.0, 0.0, //
            0.1, 2.0, 0.2, 0.0, 0.0, 0.0, //
            0.0, 0.2, 2.0, 0.0, 0.0, 0.0, //
            0.0, 0.0, 0.0, 0.5, 0.05, 0.0, //
            0.0, 0.0, 0.0, 0.05, 0.6, 0.0, //
            0.0, 0.0, 0.0, 0.0, 0.0, 0.7,
        ]);
        for k in 0..6 {
            let cols: Vec<usize> = a.row(k).0.to_vec();
            for (t, j) in cols.into_iter().enumerate() {
                a.row_values_mut(k)[t] = dense[(k, j)];
            }
        }
        assert!(a.factorize_ltl());
        let used: Vec<usize> = (0..6).map(|k| a.used_row(k).1.len()).collect();
        assert_eq!(used, [1, 2, 2, 1, 2, 1], "stored {:?}", (0..6).map(|k| a.row(k).1.len()).collect::<Vec<_>>());
        let b = [1.0, -2.0, 0.5, 0.3, 3.0, -1.0];
        let mut x = b;
        a.solve(0, 6, &mut x);
        let r = &dense * nalgebra::DVector::from_column_slice(&x) - nalgebra::DVector::from_column_slice(&b);
        assert!(r.abs().max() < 1e-14, "residual {r}");
        // three right-hand sides at once, as the Delassus assembly solves a contact's rows
        let (mut x0, mut x1, mut x2) = ([0.0, 1.0, 0.0, 0.0, -1.0, 2.0], [0.5; 6], b);
        let (mut y0, mut y1, mut y2) = (x0, x1, x2);
        a.solve_lt3(0, 6, &mut x0, &mut x1, &mut x2);
        a.solve_lt(0, 6, &mut y0);
        a.solve_lt(0, 6, &mut y1);
        a.solve_lt(0, 6, &mut y2);
        assert_eq!((x0, x1, x2), (y0, y1, y2));
        // a matrix written again holds its whole rows until it is factorised
        a.fill_zero();
        assert!((0..6).all(|k| a.used_row(k).1.len() == a.row(k).1.len()));
    }

    #[test]
    fn indefinite_matrix_is_refused() {
        let mut a = BranchMatrix::new(&[NO_PARENT, 0]);
        a.row_values_mut(0)[0] = 1.0;
        a.row_values_mut(1).copy_from_slice(&[1.0, 2.0]); // [[1, 2], [2, 1]]: eigenvalues 3, −1
        assert!(!a.factorize_ltl());
    }
}
