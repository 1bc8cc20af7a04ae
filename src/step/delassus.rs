//! The Delassus matrix G = J M̃⁻¹ Jᵀ = Zᵀ Z, with Z = L⁻ᵀ Jᵀ and M̃ = Lᵀ L (Featherstone's LᵀL
//! factor, RBDA §6.5), a contact's rows at a time.
//!
//! A contact's rows (normal, tangents, perhaps torsion) touch the same trees and share the
//! factor's entries, so they are solved together and their block of G is summed in one pass:
//! the rows' dependency chains run side by side instead of one after the other. Consecutive
//! joint rows on the same trees (a robot's limit and friction rows) are grouped by three the
//! same way ([`Workspace::row_groups`]). Each entry of
//! G is still the dot product over each shared tree's coordinates in ascending order, the trees'
//! sums added in [`Workspace::row_trees`] order, so G is bit for bit that of the row-by-row
//! assembly; Z differs at most in the sign of a zero (a row whose entry is zero at a coordinate
//! where another row of its contact's is not takes the update `x − l·0`, which the row-by-row
//! back substitution skips).

use crate::contact::NO_TREE;
use crate::math::dense::with_avx2;
use crate::model::Model;
use crate::workspace::Workspace;

/// Z = L⁻ᵀ Jᵀ (over the trees each row touches) into `ws.factor_jt` and G = Zᵀ Z into
/// `ws.delassus` for the `m` rows of this step (contact rows, then joint rows).
pub fn build_delassus(model: &Model, ws: &mut Workspace, m: usize) {
    with_avx2!(build(model, ws, m, true))
}

/// Z = L⁻ᵀ Jᵀ into `ws.factor_jt` only, for the methods that do not read G
/// ([`crate::contact::Capabilities::delassus`]; they read Z through
/// [`crate::contact::FactoredRows`]).
pub fn build_factored_rows(model: &Model, ws: &mut Workspace, m: usize) {
    with_avx2!(build(model, ws, m, false))
}

#[inline(always)]
fn build(model: &Model, ws: &mut Workspace, m: usize, with_delassus: bool) {
    let nv = model.nv;
    ws.delassus_built = with_delassus;
    group_rows(ws, m);
    let Workspace { jacobian, factor_jt, delassus, row_trees, mass_factor, row_groups, .. } = ws;
    factor_jt[..m * nv].copy_from_slice(&jacobian[..m * nv]);
    for &(i, rows) in row_groups.iter() {
        let trees = row_trees[i];
        for t in [trees.0, trees.1] {
            if t == NO_TREE {
                continue;
            }
            let tr = &model.trees[t];
            if rows == 3 {
                let (z0, rest) = factor_jt[i * nv..(i + 3) * nv].split_at_mut(nv);
                let (z1, z2) = rest.split_at_mut(nv);
                mass_factor.solve_lt3(tr.v_start, tr.v_end, z0, z1, z2);
            } else {
                for r in i..i + rows {
                    mass_factor.solve_lt(tr.v_start, tr.v_end, &mut factor_jt[r * nv..(r + 1) * nv]);
                }
            }
        }
    }
    if !with_delassus {
        return;
    }
    let z = &*factor_jt;
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

/// Splits the `m` rows into `ws.row_groups` (first row, count) of rows that touch the same
/// trees: each contact's rows, then runs of consecutive joint rows on the same trees (a robot's
/// limit and friction rows) cut into threes.
fn group_rows(ws: &mut Workspace, m: usize) {
    let per_contact = ws.contact_rows.len();
    let first_joint_row = ws.first_joint_row();
    ws.row_groups.clear();
    for c in 0..ws.contacts.len() {
        ws.row_groups.push((c * per_contact, per_contact));
    }
    let mut i = first_joint_row;
    while i < m {
        let mut rows = 1;
        while rows < 3 && i + rows < m && ws.row_trees[i + rows] == ws.row_trees[i] {
            rows += 1;
        }
        ws.row_groups.push((i, rows));
        i += rows;
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
