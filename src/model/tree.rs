//! Kinematic-tree queries that need nothing but the model and the world-frame motion subspaces
//! (`dof_axis`, written by [`crate::kinematics::forward_kinematics`]): which velocity coordinates
//! move a body, Jacobian rows of a body point or of a body's rotation, and one joint's
//! configuration update `q ⊕ dt v`, and solves with the mass matrix's factor. The contact methods
//! build their rows with these.

use super::{Joint, JointKind, Model};
use crate::math::{integrate_rotation, BranchMatrix, Vec3, Vec6};
use nalgebra::{Quaternion, UnitQuaternion};

/// Calls `f(k)` for every velocity coordinate `k` that moves `body` (its ancestors' and its own).
#[inline]
pub fn for_each_ancestor_dof(model: &Model, body: usize, mut f: impl FnMut(usize)) {
    let mut cur = Some(body);
    while let Some(b) = cur {
        let j = &model.bodies[b].joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            f(k);
        }
        cur = model.bodies[b].parent;
    }
}

/// Adds `scale · dᵀ J_p` to `row` (length nv): the Jacobian of the velocity of the material point
/// at world position `p` on `body`, projected on world direction `d`.
#[inline]
pub fn add_point_jacobian_row(model: &Model, ws_axis: &[Vec6], body: usize, p: &Vec3, d: &Vec3, scale: f64, row: &mut [f64]) {
    for_each_ancestor_dof(model, body, |k| {
        let s = &ws_axis[k];
        let w = Vec3::new(s[0], s[1], s[2]);
        let vo = Vec3::new(s[3], s[4], s[5]);
        row[k] += scale * d.dot(&(vo + w.cross(p)));
    });
}

/// [`add_point_jacobian_row`] for three directions at once (a contact's normal and tangents),
/// into three rows: the point's velocity per coordinate is formed once.
#[inline]
pub fn add_point_jacobian_rows3(model: &Model, ws_axis: &[Vec6], body: usize, p: &Vec3, d: [&Vec3; 3], scale: f64, rows: [&mut [f64]; 3]) {
    let [r0, r1, r2] = rows;
    for_each_ancestor_dof(model, body, |k| {
        let s = &ws_axis[k];
        let w = Vec3::new(s[0], s[1], s[2]);
        let vo = Vec3::new(s[3], s[4], s[5]);
        let pv = vo + w.cross(p);
        r0[k] += scale * d[0].dot(&pv);
        r1[k] += scale * d[1].dot(&pv);
        r2[k] += scale * d[2].dot(&pv);
    });
}

/// Adds `scale · dᵀ J_ω` to `row` (length nv): the Jacobian of `body`'s angular velocity
/// projected on world direction `d` (torsional friction rows: `d` the contact normal).
#[inline]
pub fn add_angular_jacobian_row(model: &Model, ws_axis: &[Vec6], body: usize, d: &Vec3, scale: f64, row: &mut [f64]) {
    for_each_ancestor_dof(model, body, |k| {
        let s = &ws_axis[k];
        row[k] += scale * d.dot(&Vec3::new(s[0], s[1], s[2]));
    });
}

/// q⁺ = q ⊕ dt v for one joint's coordinates of `q`, with the velocities `v` (the map of
/// `crate::step::integrate_positions`; whole-step schemes use it for the trees they do not move themselves).
pub fn integrate_joint_position(j: &Joint, q: &mut [f64], v: &[f64], dt: f64) {
    match j.kind {
        JointKind::Fixed => {}
        JointKind::Revolute | JointKind::Prismatic => q[j.q_index] += dt * v[j.v_index],
        JointKind::Free => {
            let (qi, vi) = (j.q_index, j.v_index);
            let rot = UnitQuaternion::new_normalize(Quaternion::new(q[qi + 6], q[qi + 3], q[qi + 4], q[qi + 5]));
            let v_body = Vec3::new(v[vi], v[vi + 1], v[vi + 2]);
            let w_body = Vec3::new(v[vi + 3], v[vi + 4], v[vi + 5]);
            let dp = rot * v_body * dt;
            q[qi] += dp.x;
            q[qi + 1] += dp.y;
            q[qi + 2] += dp.z;
            let r = integrate_rotation(&rot, &w_body, dt);
            let c = r.quaternion();
            q[qi + 3] = c.i;
            q[qi + 4] = c.j;
            q[qi + 5] = c.k;
            q[qi + 6] = c.w;
        }
    }
}

/// `x ← M̃⁻¹ x` tree by tree, with the branch-sparse factor `M̃ = Lᵀ L` of a mass matrix
/// (each tree's coordinates are a diagonal block; units: N·s in, m/s or rad/s out).
pub fn solve_mass(model: &Model, factor: &BranchMatrix, x: &mut [f64]) {
    for t in &model.trees {
        factor.solve(t.v_start, t.v_end, x);
    }
}
