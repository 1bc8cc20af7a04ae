//! Sparse matrix–vector kernels of the deformable solve: plain CSR rows and the node-block
//! (3×3) pattern of the FEM system matrix, with an AVX2/FMA path detected at run time.

use nalgebra_sparse::CsrMatrix;

/// Row-by-row product `y = A x` for rows `rows` (deterministic: each row's sum runs in column
/// order whatever the thread split).
pub fn csr_mul_rows(a: &CsrMatrix<f64>, x: &[f64], y: &mut [f64], rows: std::ops::Range<usize>) {
    let off = a.row_offsets();
    let cols = a.col_indices();
    let vals = a.values();
    for (k, r) in rows.enumerate() {
        let mut s = 0.0;
        for idx in off[r]..off[r + 1] {
            s += vals[idx] * x[cols[idx]];
        }
        y[k] = s;
    }
}

/// The first column `3j` of every 3×3 block of a matrix with [`crate::fem::FemSystem`]'s
/// node-block pattern (see [`block3_mul_rows`]), in storage order: node `i`'s blocks start at
/// index `row_offsets[3 i] / 9`. Four bytes per block instead of the 72 bytes of the three rows'
/// column indices, so that the products read little more than the values (for the matrix of
/// the 6 000-tetrahedra ball, 1.4 MB instead of 2.7 MB per product).
pub fn node_block_columns(a: &CsrMatrix<f64>) -> Vec<u32> {
    let off = a.row_offsets();
    let cols = a.col_indices();
    let mut out = Vec::with_capacity(a.nnz() / 9);
    for r in (0..a.nrows()).step_by(3) {
        debug_assert_eq!(off[r] % 9, 0);
        out.extend(cols[off[r]..off[r + 1]].iter().step_by(3).map(|&j| u32::try_from(j).expect("fewer than 2^32 unknowns")));
    }
    out
}

/// `y = A x` for the rows `rows` of a matrix with [`crate::fem::FemSystem`]'s node-block pattern: the three
/// rows of node `i` share one column pattern made of whole 3-column node blocks
/// (`3j, 3j+1, 3j+2`), whose first columns are `block_cols` ([`node_block_columns`]). One
/// column index and one 3-vector of `x` serve the three rows of a block, so the product reads
/// ~8.4 bytes per stored value instead of 16 (the V-FPI's only superlinear operation). `rows`
/// must start and end on node boundaries (multiples of 3). Deterministic: each row sums its
/// blocks in column order whatever the thread split.
///
/// On x86-64 CPUs with AVX2 and FMA (detected at run time) a vectorised kernel runs: one
/// 4-lane fused multiply-add per row and block. Its rounding differs from the scalar kernel's
/// (fused products), so results are reproducible on one machine but may differ in the last
/// bits between CPUs with and without these features.
pub fn block3_mul_rows(a: &CsrMatrix<f64>, block_cols: &[u32], x: &[f64], y: &mut [f64], rows: std::ops::Range<usize>) {
    debug_assert!(rows.start % 3 == 0 && rows.end % 3 == 0);
    #[cfg(target_arch = "x86_64")]
    {
        if simd::available() {
            // SAFETY: the CPU supports AVX2 and FMA (checked at run time).
            unsafe { simd::block3_mul_rows_avx2(a, block_cols, x, y, rows) };
            return;
        }
    }
    block3_mul_rows_scalar(a, block_cols, x, y, rows)
}

/// The portable kernel of [`block3_mul_rows`].
pub(crate) fn block3_mul_rows_scalar(a: &CsrMatrix<f64>, block_cols: &[u32], x: &[f64], y: &mut [f64], rows: std::ops::Range<usize>) {
    let off = a.row_offsets();
    let vals = a.values();
    for (k, r) in rows.step_by(3).enumerate() {
        let (o0, o1, o2) = (off[r], off[r + 1], off[r + 2]);
        let len = o1 - o0;
        debug_assert!(len % 3 == 0 && off[r + 3] - o2 == len && o2 - o1 == len);
        let (v0, v1, v2) = (&vals[o0..o1], &vals[o1..o2], &vals[o2..o2 + len]);
        let c = &block_cols[o0 / 9..o0 / 9 + len / 3];
        let (mut s0, mut s1, mut s2) = (0.0, 0.0, 0.0);
        for b in (0..len).step_by(3) {
            let j = c[b / 3] as usize;
            let xb = &x[j..j + 3];
            s0 += v0[b] * xb[0] + v0[b + 1] * xb[1] + v0[b + 2] * xb[2];
            s1 += v1[b] * xb[0] + v1[b + 1] * xb[1] + v1[b + 2] * xb[2];
            s2 += v2[b] * xb[0] + v2[b + 1] * xb[1] + v2[b + 2] * xb[2];
        }
        y[3 * k] = s0;
        y[3 * k + 1] = s1;
        y[3 * k + 2] = s2;
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use nalgebra_sparse::CsrMatrix;
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    static FEATURES: AtomicU8 = AtomicU8::new(0);

    /// AVX2 and FMA are available (detected once).
    pub fn available() -> bool {
        match FEATURES.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let ok = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
                FEATURES.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
                ok
            }
        }
    }

    /// AVX2/FMA version of [`super::block3_mul_rows_scalar`]: per block, the 3-vector of `x`
    /// and each row's 3 values are loaded into 4 lanes and fused into one accumulator per row;
    /// the first three lanes are summed at the end of the row (the 4th lane holds the next
    /// stored value times the next entry of `x`, or zeros at the ends, and is never read).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn block3_mul_rows_avx2(a: &CsrMatrix<f64>, block_cols: &[u32], x: &[f64], y: &mut [f64], rows: std::ops::Range<usize>) {
        let off = a.row_offsets();
        let vals = a.values();
        let mask = _mm256_setr_epi64x(-1, -1, -1, 0);
        let hsum = |v: __m256d| -> f64 {
            let mut t = [0.0f64; 4];
            _mm256_storeu_pd(t.as_mut_ptr(), v);
            (t[0] + t[1]) + t[2]
        };
        for (k, r) in rows.step_by(3).enumerate() {
            let (o0, o1, o2) = (off[r], off[r + 1], off[r + 2]);
            let len = o1 - o0;
            assert!(off[r + 3] - o2 == len && o2 - o1 == len && len % 3 == 0);
            let c = &block_cols[o0 / 9..o0 / 9 + len / 3];
            let (mut s0, mut s1, mut s2) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
            let vp = vals.as_ptr();
            // plain 4-lane loads where a 4th value exists (its lane is never summed; a NaN
            // there stays in its lane), masked loads at the ends of `x` and of the values
            let full_rows = o2 + len < vals.len();
            for (b, &j) in (0..len).step_by(3).zip(c) {
                let j = j as usize;
                assert!(j + 3 <= x.len());
                // SAFETY: j + 3 ≤ x.len() and o2 + len ≤ vals.len(); the 4th lane is read only
                // where it is in bounds (j + 4 ≤ x.len(), o2 + b + 4 ≤ vals.len()), and masked
                // otherwise.
                let xb = if j + 4 <= x.len() { _mm256_loadu_pd(x.as_ptr().add(j)) } else { _mm256_maskload_pd(x.as_ptr().add(j), mask) };
                if full_rows || b + 3 < len {
                    let row = |o: usize| _mm256_loadu_pd(vp.add(o + b));
                    s0 = _mm256_fmadd_pd(row(o0), xb, s0);
                    s1 = _mm256_fmadd_pd(row(o1), xb, s1);
                    s2 = _mm256_fmadd_pd(row(o2), xb, s2);
                } else {
                    let row = |o: usize| _mm256_maskload_pd(vp.add(o + b), mask);
                    s0 = _mm256_fmadd_pd(row(o0), xb, s0);
                    s1 = _mm256_fmadd_pd(row(o1), xb, s1);
                    s2 = _mm256_fmadd_pd(row(o2), xb, s2);
                }
            }
            y[3 * k] = hsum(s0);
            y[3 * k + 1] = hsum(s1);
            y[3 * k + 2] = hsum(s2);
        }
    }
}
