//! The Delassus matrix G = J M̃⁻¹ Jᵀ = Zᵀ Z, with Z = L⁻ᵀ Jᵀ and M̃ = Lᵀ L (Featherstone's LᵀL
//! factor, RBDA §6.5), a contact's rows at a time.
//!
//! A contact's rows (normal, tangents, perhaps torsion) touch the same trees and share the
//! factor's entries, so they are solved together and their block of G is summed in one pass:
//! the rows' dependency chains run side by side instead of one after the other. Each entry of
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
    with_avx2!(build(model, ws, m))
}

#[inline(always)]
fn build(model: &Model, ws: &mut Workspace, m: usize) {
    let nv = model.nv;
    let per_contact = ws.contact_rows.len();
    let first_joint_row = ws.first_joint_row();
    // the groups of rows that share their trees: each contact's rows, then each joint row
    let nc = ws.contacts.len();
    let group = |g: usize| if g < nc { (g * per_contact, per_contact) } else { (first_joint_row + g - nc, 1) };
    let groups = nc + (m - first_joint_row);
    let Workspace { jacobian, factor_jt, delassus, row_trees, mass_factor, .. } = ws;
    for g in 0..groups {
        let (i0, rows) = group(g);
        factor_jt[i0 * nv..(i0 + rows) * nv].copy_from_slice(&jacobian[i0 * nv..(i0 + rows) * nv]);
        let (t0, t1) = row_trees[i0];
        for t in [t0, t1] {
            if t == NO_TREE {
                continue;
            }
            let tr = &model.trees[t];
            if rows == 3 {
                let (z0, rest) = factor_jt[i0 * nv..(i0 + 3) * nv].split_at_mut(nv);
                let (z1, z2) = rest.split_at_mut(nv);
                mass_factor.solve_lt3(tr.v_start, tr.v_end, z0, z1, z2);
            } else {
                for i in i0..i0 + rows {
                    mass_factor.solve_lt(tr.v_start, tr.v_end, &mut factor_jt[i * nv..(i + 1) * nv]);
                }
            }
        }
    }
    let z = &*factor_jt;
    for a in 0..groups {
        let (ia, ra) = group(a);
        let (a0, a1) = row_trees[ia];
        for b in a..groups {
            let (ib, rb) = group(b);
            let (b0, b1) = row_trees[ib];
            let mut block = [[0.0f64; 3]; 3];
            let general = !(ra == 3 && rb == 3);
            for r in 0..ra {
                for s in 0..rb {
                    let (i, j) = (ia + r, ib + s);
                    if general {
                        // row by row: the torsion rows of a 4-row layout, joint rows
                        let mut g = 0.0;
                        for t in [a0, a1] {
                            if t != NO_TREE && (t == b0 || t == b1) {
                                let tr = &model.trees[t];
                                let (zi, zj) = (&z[i * nv + tr.v_start..i * nv + tr.v_end], &z[j * nv + tr.v_start..j * nv + tr.v_end]);
                                g += zi.iter().zip(zj).map(|(x, y)| x * y).sum::<f64>();
                            }
                        }
                        delassus[i * m + j] = g;
                        delassus[j * m + i] = g;
                    }
                }
            }
            if general {
                continue;
            }
            for t in [a0, a1] {
                if t != NO_TREE && (t == b0 || t == b1) {
                    let tr = &model.trees[t];
                    let sums = dot3x3(z, nv, ia, ib, tr.v_start, tr.v_end);
                    for r in 0..3 {
                        for s in 0..3 {
                            block[r][s] += sums[r][s];
                        }
                    }
                }
            }
            for r in 0..3 {
                for s in 0..3 {
                    let (i, j) = (ia + r, ib + s);
                    delassus[i * m + j] = block[r][s];
                    delassus[j * m + i] = block[r][s];
                }
            }
        }
    }
}

/// `Σ_{k ∈ [s, e)} Z_{ia+r, k} Z_{ib+t, k}` for `r, t < 3`, each in ascending `k`: nine
/// independent sums in one pass.
#[inline(always)]
fn dot3x3(z: &[f64], nv: usize, ia: usize, ib: usize, s: usize, e: usize) -> [[f64; 3]; 3] {
    let n = e - s;
    let row = |i: usize| &z[i * nv + s..i * nv + s + n];
    let (x0, x1, x2) = (row(ia), row(ia + 1), row(ia + 2));
    let (y0, y1, y2) = (row(ib), row(ib + 1), row(ib + 2));
    // as `Iterator::sum` starts: the sums of exact zeros keep their sign out of G
    let mut c = [[-0.0f64; 3]; 3];
    for k in 0..n {
        let x = [x0[k], x1[k], x2[k]];
        let y = [y0[k], y1[k], y2[k]];
        for r in 0..3 {
            for t in 0..3 {
                c[r][t] += x[r] * y[t];
            }
        }
    }
    c
}
