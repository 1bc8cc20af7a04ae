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
use crate::contact::assemble_delassus;
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
    assemble_delassus(model, factor_jt, row_trees, row_groups, m, delassus);
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

