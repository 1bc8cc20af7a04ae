//! The Delassus matrix `G = Zᵀ Z` from the factored rows `Z = L⁻ᵀ Jᵀ` ([`FactoredRows`](super::FactoredRows)),
//! group by group: the rows stage assembles it for the methods that read it
//! ([`crate::step::build_delassus`]), a method that needs it only on some steps assembles it
//! itself when it does ([`Capabilities::delassus_on_demand`](super::Capabilities::delassus_on_demand)).
//!
//! Each entry of G is the dot product over each shared tree's coordinates in ascending order,
//! the trees' sums added in the first row's `row_trees` order: the same bits however it is
//! called. [`delassus_diagonal`] gives G's diagonal alone, bit for bit the same entries.

use crate::contact::NO_TREE;
use crate::math::dense::with_avx2;
use crate::model::Model;

/// G = Zᵀ Z into `delassus` (row-major `m × m`, every entry written) for the `m` rows whose
/// factored rows are `z` (row-major `m × nv`), touching the trees `row_trees`, in the groups
/// `row_groups` (first row, count) of rows on the same trees
/// ([`Workspace::row_groups`](crate::workspace::Workspace::row_groups)): a group's rows are summed
/// in one pass, their dependency chains side by side.
pub fn assemble_delassus(model: &Model, z: &[f64], row_trees: &[(usize, usize)], row_groups: &[(usize, usize)], m: usize, delassus: &mut [f64]) {
    with_avx2!(assemble(model, z, row_trees, row_groups, m, delassus))
}

#[inline(always)]
fn assemble(model: &Model, z: &[f64], row_trees: &[(usize, usize)], row_groups: &[(usize, usize)], m: usize, delassus: &mut [f64]) {
    let nv = model.nv;
    for (a, &(ia, ra)) in row_groups.iter().enumerate() {
        for &(ib, rb) in &row_groups[a..] {
            macro_rules! block {
                ($($r:literal, $s:literal);*) => {
                    match (ra, rb) {
                        $(($r, $s) => delassus_block::<$r, $s>(model, z, nv, row_trees, ia, ib, m, delassus),)*
                        _ => delassus_rows(model, z, nv, row_trees, (ia, ra), (ib, rb), m, delassus),
                    }
                };
            }
            block!(3, 3; 3, 1; 1, 3; 1, 1; 3, 2; 2, 3; 2, 2; 2, 1; 1, 2; 4, 4; 4, 1; 1, 4; 4, 2; 2, 4; 4, 3; 3, 4);
        }
    }
}


/// G's diagonal, `G[i][i] = ‖zᵢ‖²` over row `i`'s trees, into `diagonal` (`m` long): bit for
/// bit the diagonal entries [`assemble_delassus`] writes.
pub fn delassus_diagonal(model: &Model, z: &[f64], row_trees: &[(usize, usize)], diagonal: &mut [f64]) {
    let nv = model.nv;
    for (i, d) in diagonal.iter_mut().enumerate() {
        let (a0, a1) = row_trees[i];
        let mut g = 0.0;
        for t in [a0, a1] {
            if t != NO_TREE {
                let tr = &model.trees[t];
                g += dot_block::<1, 1>(z, nv, i, i, tr.v_start, tr.v_end)[0][0];
            }
        }
        *d = g;
    }
}

/// The `R × S` block of G for the rows `ia..ia+R` and `ib..ib+S` (and its transpose): per entry,
/// the dot product over each tree both groups touch, in ascending coordinate order, the trees'
/// sums added in `row_trees` order; zero where they share no tree.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn delassus_block<const R: usize, const S: usize>(model: &Model, z: &[f64], nv: usize, row_trees: &[(usize, usize)], ia: usize, ib: usize, m: usize, delassus: &mut [f64]) {
    let ((a0, a1), (b0, b1)) = (row_trees[ia], row_trees[ib]);
    let mut block = [[0.0f64; S]; R];
    for t in [a0, a1] {
        if t != NO_TREE && (t == b0 || t == b1) {
            let tr = &model.trees[t];
            let sums = dot_block::<R, S>(z, nv, ia, ib, tr.v_start, tr.v_end);
            for r in 0..R {
                for s in 0..S {
                    block[r][s] += sums[r][s];
                }
            }
        }
    }
    // the block's rows, then its transpose's (one slice, so one bounds check, per row)
    for (r, values) in block.iter().enumerate() {
        delassus[(ia + r) * m + ib..(ia + r) * m + ib + S].copy_from_slice(values);
    }
    for s in 0..S {
        let row = &mut delassus[(ib + s) * m + ia..(ib + s) * m + ia + R];
        for (r, out) in row.iter_mut().enumerate() {
            *out = block[r][s];
        }
    }
}

/// [`delassus_block`] for any group sizes, entry by entry.
#[allow(clippy::too_many_arguments)]
fn delassus_rows(model: &Model, z: &[f64], nv: usize, row_trees: &[(usize, usize)], (ia, ra): (usize, usize), (ib, rb): (usize, usize), m: usize, delassus: &mut [f64]) {
    let ((a0, a1), (b0, b1)) = (row_trees[ia], row_trees[ib]);
    for i in ia..ia + ra {
        for j in ib..ib + rb {
            let mut g = 0.0;
            for t in [a0, a1] {
                if t != NO_TREE && (t == b0 || t == b1) {
                    let tr = &model.trees[t];
                    g += z[i * nv + tr.v_start..i * nv + tr.v_end].iter().zip(&z[j * nv + tr.v_start..j * nv + tr.v_end]).map(|(x, y)| x * y).sum::<f64>();
                }
            }
            delassus[i * m + j] = g;
            delassus[j * m + i] = g;
        }
    }
}

/// `Σ_{k ∈ [s, e)} Z_{ia+r, k} Z_{ib+t, k}` for `r < R`, `t < S`, each in ascending `k`:
/// `R·S` independent sums in one pass.
#[inline(always)]
fn dot_block<const R: usize, const S: usize>(z: &[f64], nv: usize, ia: usize, ib: usize, s: usize, e: usize) -> [[f64; S]; R] {
    let n = e - s;
    let x: [&[f64]; R] = std::array::from_fn(|r| &z[(ia + r) * nv + s..(ia + r) * nv + s + n]);
    let y: [&[f64]; S] = std::array::from_fn(|t| &z[(ib + t) * nv + s..(ib + t) * nv + s + n]);
    // as `Iterator::sum` starts: the sums of exact zeros keep their sign out of G
    let mut c = [[-0.0f64; S]; R];
    for k in 0..n {
        for r in 0..R {
            let xr = x[r][k];
            for t in 0..S {
                c[r][t] += xr * y[t][k];
            }
        }
    }
    c
}
