//! The constraint rows of a step: joint rows, the Jacobian J (contact rows from the method's
//! [`crate::contact::ContactRows`] table, then joint rows), the Delassus matrix G = J M̃⁻¹ Jᵀ and the warm start.
//! Sign conventions in [`crate::contact::ContactProblem`].

use crate::contact::NO_TREE;
use crate::contact::{ContactRow, MAX_ROWS_PER_CONTACT};
use crate::kinematics::{add_angular_jacobian_row, add_point_jacobian_rows3};
use crate::collision::Contact;
use crate::math::Vec3;
use crate::model::Model;
use crate::state::{State, WarmContact};
use crate::workspace::{JointRow, JointRowKind, Workspace};

/// Joint limit, joint friction and mimic rows of this step.
pub fn build_joint_rows(model: &Model, state: &State, ws: &mut Workspace) {
    ws.joint_rows.clear();
    let dt = model.timestep_s;
    let n1 = model.one_dof_joint_count();
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        if j.kind.nv() != 1 {
            continue;
        }
        let idx = ws.one_dof_index[b];
        let k = j.v_index;
        let (q, v) = (state.q[j.q_index], ws.free_velocity[k]);
        if let Some((lo, hi)) = j.position_limits {
            // Speculative activation: the row exists when the limit could be reached this step.
            let reach = (v.abs() + state.v[k].abs()) * dt + model.contact.margin_m;
            if q - lo <= reach {
                ws.joint_rows.push(JointRow { kind: JointRowKind::LowerLimit, slot: 3 * idx, dof: k, dof2: None });
            }
            if hi - q <= reach {
                ws.joint_rows.push(JointRow { kind: JointRowKind::UpperLimit, slot: 3 * idx + 1, dof: k, dof2: None });
            }
        }
        if j.friction > 0.0 {
            ws.joint_rows.push(JointRow { kind: JointRowKind::Friction, slot: 3 * idx + 2, dof: k, dof2: None });
        }
    }
    for (mi, mimic) in model.mimics.iter().enumerate() {
        let f = model.bodies[mimic.follower].joint.v_index;
        let l = model.bodies[mimic.leader].joint.v_index;
        ws.joint_rows.push(JointRow { kind: JointRowKind::Mimic, slot: 3 * n1 + mi, dof: f, dof2: Some((l, -mimic.multiplier)) });
    }
}

/// Fills J (row-major), the bias `b` inside `u_free = J v* + b`, bounds, friction and the trees
/// each row touches. Contact rows follow the workspace's [`crate::contact::ContactRows`] layout.
pub fn build_jacobian(model: &Model, state: &State, ws: &mut Workspace, dt: f64) {
    let nv = model.nv;
    let rows = ws.contact_rows;
    let m = ws.num_rows();
    let first_joint_row = ws.first_joint_row();
    ws.jacobian[..m * nv].fill(0.0);
    let erp = model.contact.erp;
    for (ci, c) in ws.contacts.iter().enumerate() {
        ws.friction[ci] = c.friction;
        let tree_a = c.body_a.map(|b| model.bodies[b].tree).unwrap_or(NO_TREE);
        let tree_b = c.body_b.map(|b| model.bodies[b].tree).unwrap_or(NO_TREE);
        let (ta, tb) = if tree_a == tree_b { (tree_a, NO_TREE) } else { (tree_a, tree_b) };
        // the normal and tangent rows (the first three of every layout) in one walk up the tree
        {
            let i = rows.start(ci);
            let (r0, rest) = ws.jacobian[i * nv..(i + 3) * nv].split_at_mut(nv);
            let (r1, r2) = rest.split_at_mut(nv);
            let dirs = [&c.normal, &c.tangent1, &c.tangent2];
            if let Some(b) = c.body_b {
                add_point_jacobian_rows3(model, &ws.dof_axis, b, &c.position, dirs, 1.0, [&mut *r0, &mut *r1, &mut *r2]);
            }
            if let Some(a) = c.body_a {
                add_point_jacobian_rows3(model, &ws.dof_axis, a, &c.position, dirs, -1.0, [r0, r1, r2]);
            }
        }
        for (r, &kind) in rows.rows().iter().enumerate() {
            let i = rows.start(ci) + r;
            let row = &mut ws.jacobian[i * nv..(i + 1) * nv];
            if kind == ContactRow::Torsion {
                if let Some(b) = c.body_b {
                    add_angular_jacobian_row(model, &ws.dof_axis, b, &c.normal, 1.0, row);
                }
                if let Some(a) = c.body_a {
                    add_angular_jacobian_row(model, &ws.dof_axis, a, &c.normal, -1.0, row);
                }
            }
            ws.row_trees[i] = if ta == NO_TREE { (tb, NO_TREE) } else { (ta, tb) };
            ws.row_ranges[i] = coordinate_ranges(model, ws.row_trees[i]);
            let u = dot_on_ranges(row, ws.free_velocity.as_slice(), ws.row_ranges[i]);
            // bias: speculative gap closing / Baumgarte penetration recovery (normal only)
            let bias = if kind == ContactRow::Normal { model.contact.normal_bias(c.distance, dt) } else { 0.0 };
            ws.free_row_velocity[i] = u;
            ws.free_constraint_velocity[i] = u + bias;
        }
    }
    for (r, row_def) in ws.joint_rows.iter().enumerate() {
        let i = first_joint_row + r;
        let row = &mut ws.jacobian[i * nv..(i + 1) * nv];
        let body = model.dof_body[row_def.dof];
        let j = &model.bodies[body].joint;
        let q = state.q[j.q_index];
        let (sign, lo, hi, bias) = match row_def.kind {
            JointRowKind::LowerLimit => {
                let gap = q - j.position_limits.unwrap().0;
                (1.0, 0.0, f64::INFINITY, if gap >= 0.0 { gap / dt } else { erp * gap / dt })
            }
            JointRowKind::UpperLimit => {
                let gap = j.position_limits.unwrap().1 - q;
                (-1.0, 0.0, f64::INFINITY, if gap >= 0.0 { gap / dt } else { erp * gap / dt })
            }
            JointRowKind::Friction => (1.0, -j.friction * dt, j.friction * dt, 0.0),
            JointRowKind::Mimic => {
                let mi = row_def.slot - 3 * model.one_dof_joint_count();
                let mimic = &model.mimics[mi];
                let ql = state.q[model.bodies[mimic.leader].joint.q_index];
                let err = q - mimic.multiplier * ql - mimic.offset;
                (1.0, f64::NEG_INFINITY, f64::INFINITY, erp * err / dt)
            }
        };
        row[row_def.dof] += sign;
        if let Some((k2, coef)) = row_def.dof2 {
            row[k2] += coef;
        }
        // the row's nonzeros, in ascending coordinate order as a dense dot product sums them
        let (k1, k2) = (row_def.dof, row_def.dof2.map_or(row_def.dof, |(k2, _)| k2));
        let u = if k1 == k2 {
            0.0 + row[k1] * ws.free_velocity[k1]
        } else {
            let (a, b) = (k1.min(k2), k1.max(k2));
            0.0 + row[a] * ws.free_velocity[a] + row[b] * ws.free_velocity[b]
        };
        ws.free_row_velocity[i] = u;
        ws.free_constraint_velocity[i] = u + bias;
        ws.row_lower[r] = lo;
        ws.row_upper[r] = hi;
        // a mimic row also touches its leader's tree when that is another one
        let tree = model.bodies[body].tree;
        let leader_tree = row_def.dof2.map_or(NO_TREE, |(k2, _)| model.bodies[model.dof_body[k2]].tree);
        ws.row_trees[i] = (tree, if leader_tree == tree { NO_TREE } else { leader_tree });
        ws.row_ranges[i] = coordinate_ranges(model, ws.row_trees[i]);
    }
}

/// The coordinate ranges of the trees `(t0, t1)` ([`NO_TREE`] for none), ascending.
#[inline]
fn coordinate_ranges(model: &Model, (t0, t1): (usize, usize)) -> [(usize, usize); 2] {
    let range = |t: usize| if t == NO_TREE { (0, 0) } else { (model.trees[t].v_start, model.trees[t].v_end) };
    let (r0, r1) = (range(t0), range(t1));
    if r0.0 <= r1.0 { [r0, r1] } else { [r1, r0] }
}

/// `row · v` over `ranges` (where the row's nonzeros are), in ascending coordinate order: the
/// same value as the dense dot product over all coordinates.
#[inline]
fn dot_on_ranges(row: &[f64], v: &[f64], ranges: [(usize, usize); 2]) -> f64 {
    let mut u = 0.0;
    for (a, b) in ranges {
        for k in a..b {
            u += row[k] * v[k];
        }
    }
    u
}

/// How far (m) a stored contact of the same collision pair may lie from a contact whose key found
/// no stored match for the two to be taken as one contact whose features were renamed
/// ([`warm_start`]). Parry's polygonal clipping of two coincident faces (a voussoir on the next,
/// a box resting on a box) names the same corner by a vertex of either face or by an edge
/// crossing, and the name can change from step to step while the point does not move; a resting
/// contact moves by far less than this per step, and distinct points of one manifold lie farther
/// apart on any shape a rigid contact resolves.
pub const WARM_MATCH_RADIUS_M: f64 = 1e-3;

/// Initial impulses from the previous step's matching contacts and joint rows: writes
/// `ws.impulse[..ws.num_rows()]` for the contacts and joint rows in `ws` from the impulses stored
/// in `state`, re-expressed in the current contact frames.
///
/// A contact takes the stored impulse of the same key (collision pair and features). A contact
/// whose key has no stored match takes, when there is one, the nearest stored contact of the same
/// pair that no contact took, within [`WARM_MATCH_RADIUS_M`] (the features of a point on
/// coincident faces are renamed between steps); otherwise it starts at zero.
///
/// `step` calls it before solving. After a step, calling it with a copy of the state from before
/// the step reproduces the warm start the solver received (benchmarks and tests re-solve the
/// step's problem that way).
pub fn warm_start(_model: &Model, state: &State, ws: &mut Workspace) {
    let rows = ws.contact_rows;
    let first_joint_row = ws.first_joint_row();
    // The stored contacts sorted by key (ties in storage order): a binary search for the first
    // entry not below a key finds the entry a scan from the front would find.
    let stored = &state.warm_contacts;
    let order = &mut ws.warm_order;
    order.clear();
    order.extend((0..stored.len().min(order.capacity())).map(|k| k as u32));
    order.sort_unstable_by(|&a, &b| stored[a as usize].key.cmp(&stored[b as usize].key).then(a.cmp(&b)));
    let taken = &mut ws.warm_taken;
    taken.clear();
    taken.resize(order.len(), false);
    // first the contacts whose key was stored
    let mut renamed = 0usize;
    for (ci, c) in ws.contacts.iter().enumerate() {
        let i = rows.start(ci);
        let first = order.partition_point(|&k| stored[k as usize].key < c.key);
        match order.get(first).copied().filter(|&k| stored[k as usize].key == c.key) {
            Some(k) => {
                taken[k as usize] = true;
                carry_impulse(&stored[k as usize], c, rows.len(), &mut ws.impulse[i..i + rows.len()]);
            }
            None => {
                ws.impulse[i..i + rows.len()].fill(0.0);
                renamed += 1;
            }
        }
    }
    // then the others: the nearest untaken stored contact of the same pair
    if renamed > 0 {
        for (ci, c) in ws.contacts.iter().enumerate() {
            let first = order.partition_point(|&k| stored[k as usize].key < c.key);
            if order.get(first).is_some_and(|&k| stored[k as usize].key == c.key) {
                continue;
            }
            let pair_start = order.partition_point(|&k| stored[k as usize].key.pair < c.key.pair);
            let mut nearest: Option<(usize, f64)> = None;
            for &k in order[pair_start..].iter().take_while(|&&k| stored[k as usize].key.pair == c.key.pair) {
                let w = &stored[k as usize];
                if taken[k as usize] {
                    continue;
                }
                let dist = (Vec3::new(w.position[0], w.position[1], w.position[2]) - c.position).norm();
                if dist <= WARM_MATCH_RADIUS_M && nearest.is_none_or(|(_, best)| dist < best) {
                    nearest = Some((k as usize, dist));
                }
            }
            if let Some((k, _)) = nearest {
                taken[k] = true;
                let i = rows.start(ci);
                carry_impulse(&stored[k], c, rows.len(), &mut ws.impulse[i..i + rows.len()]);
            }
        }
    }
    for (r, row) in ws.joint_rows.iter().enumerate() {
        ws.impulse[first_joint_row + r] = state.warm_joint_rows[row.slot];
    }
}

/// The stored impulse `w` re-expressed in contact `c`'s frame, into `out` (its `len` rows).
#[inline]
fn carry_impulse(w: &WarmContact, c: &Contact, len: usize, out: &mut [f64]) {
    let n_old = Vec3::new(w.normal[0], w.normal[1], w.normal[2]);
    // the tangents are a function of the normal: an unchanged normal (a resting contact) has
    // this step's, bit for bit
    let same = n_old.iter().zip(c.normal.iter()).all(|(a, b)| a.to_bits() == b.to_bits());
    let (t1_old, t2_old) = if same { (c.tangent1, c.tangent2) } else { crate::math::tangent_basis(&n_old) };
    let f = n_old * w.impulse[0] + t1_old * w.impulse[1] + t2_old * w.impulse[2];
    out[0] = f.dot(&c.normal).max(0.0);
    out[1] = f.dot(&c.tangent1);
    out[2] = f.dot(&c.tangent2);
    // further rows (torsion: about the normal) carry over as stored
    out[3..len].copy_from_slice(&w.impulse[3..len]);
}

/// Stores this step's impulses in `state` for the next step's warm start.
pub fn save_warm_start(state: &mut State, ws: &Workspace) {
    state.warm_contacts.clear();
    let rows = ws.contact_rows;
    for (ci, c) in ws.contacts.iter().enumerate() {
        let i = rows.start(ci);
        if state.warm_contacts.len() < state.warm_contacts.capacity() {
            let mut impulse = [0.0; MAX_ROWS_PER_CONTACT];
            impulse[..rows.len()].copy_from_slice(&ws.impulse[i..i + rows.len()]);
            state.warm_contacts.push(WarmContact { key: c.key, impulse, normal: [c.normal.x, c.normal.y, c.normal.z], position: [c.position.x, c.position.y, c.position.z] });
        }
    }
    state.warm_joint_rows.fill(0.0);
    let first_joint_row = ws.first_joint_row();
    for (r, row) in ws.joint_rows.iter().enumerate() {
        state.warm_joint_rows[row.slot] = ws.impulse[first_joint_row + r];
    }
}
