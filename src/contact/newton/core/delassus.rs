//! Products with the dense Delassus matrix `D = J̄ M̃⁻¹ J̄ᵀ`, through which the Schur complement
//! of each Newton iteration is applied matrix-free (paper eq. 59–61, §8.3): row by row (on the
//! method's own thread pool for large problems), and as combinations of the rows of a matrix
//! that is symmetric bit for bit, whole or by diagonal blocks, with the same bits.

use crate::math::dense::with_avx2;

/// Row count from which the Delassus products run on the method's own thread pool when it has
/// one (`threads > 1`; one task per block of 32 rows, every row's sum sequential, so results do
/// not depend on the thread count).
pub const PARALLEL_ROWS: usize = 192;

/// `out = D x` for a row-major `m × m` matrix; on `pool` when given and `m ≥` [`PARALLEL_ROWS`]
/// (rayon allocates and synchronises inside its pool: the serial path is the allocation- and
/// lock-free one).
pub fn delassus_product(d: &[f64], m: usize, x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    let row = |i: usize| -> f64 { d[i * m..(i + 1) * m].iter().zip(&x[..m]).map(|(a, b)| a * b).sum() };
    if let Some(pool) = pool.filter(|_| m >= PARALLEL_ROWS) {
        use rayon::prelude::*;
        pool.install(|| {
            out[..m].par_chunks_mut(32).enumerate().for_each(|(c, chunk)| {
                for (k, o) in chunk.iter_mut().enumerate() {
                    *o = row(c * 32 + k);
                }
            })
        });
    } else {
        for (i, o) in out[..m].iter_mut().enumerate() {
            *o = row(i);
        }
    }
}

/// `out = D x` for a row-major `m × m` matrix that is symmetric bit for bit (the Delassus
/// matrices of [`crate::step`] and of the primal FEM form are assembled so): summed as
/// `Σⱼ xⱼ D[j, :]`, contiguous rows that vectorise, skipping `xⱼ = 0`. Each `out[i]` adds the same
/// products `D[i][j] xⱼ` in the same order as [`delassus_product`]'s serial path, so the results
/// agree bit for bit (up to the sign of exact zeros).
pub fn symmetric_delassus_product(d: &[f64], m: usize, x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    block_delassus_product(d, m, std::slice::from_ref(&m), x, out, pool);
}

/// [`symmetric_delassus_product`] on a matrix whose nonzeros all lie in the diagonal blocks that
/// end at `block_ends` (ascending, the last one `m`; the consecutive blocks of
/// [`consecutive_blocks`](super::consecutive_blocks)): each block's rows are combined over the block's columns only. The
/// products skipped are those with an entry that is exactly zero, which add nothing to a sum
/// (up to the sign of an exact zero), so the result is bit-identical to the whole-matrix product.
pub fn block_delassus_product(d: &[f64], m: usize, block_ends: &[usize], x: &[f64], out: &mut [f64], pool: Option<&rayon::ThreadPool>) {
    if pool.is_some() && m >= PARALLEL_ROWS {
        return delassus_product(d, m, x, out, pool);
    }
    with_avx2!(block_delassus_product_serial(d, m, block_ends, x, out))
}

#[inline(always)]
pub(super) fn block_delassus_product_serial(d: &[f64], m: usize, block_ends: &[usize], x: &[f64], out: &mut [f64]) {
    let mut start = 0;
    for &end in block_ends {
        let out = &mut out[start..end];
        out.fill(0.0);
        for (j, &xj) in x[start..end].iter().enumerate() {
            if xj != 0.0 {
                let row = (start + j) * m;
                for (o, dj) in out.iter_mut().zip(&d[row + start..row + end]) {
                    *o += dj * xj;
                }
            }
        }
        start = end;
    }
}

pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
