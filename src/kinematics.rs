//! Forward kinematics, motion subspaces and Jacobians, all in world coordinates.
//!
//! After [`forward_kinematics`], `ws.body_pose[b]` is `X_WB`, `ws.dof_axis[k]` is the world-frame
//! motion subspace column `S_k = [ω_k; v_k]` of velocity coordinate `k` (about the world origin)
//! and `ws.body_velocity[b]` is the body's spatial velocity `Σ S_k v_k` over its ancestors.

use crate::math::{spatial, Pose, Vec3, Vec6};
use crate::model::{JointKind, Model};
use crate::workspace::Workspace;

pub use crate::model::tree::{add_angular_jacobian_row, add_point_jacobian_row, add_point_jacobian_rows3, for_each_ancestor_dof};
use nalgebra::{Quaternion, Translation3, UnitQuaternion};

/// Pose of a free joint from its 7 coordinates `[x, y, z, qx, qy, qz, qw]`.
#[inline]
pub fn free_joint_pose(q: &[f64]) -> Pose {
    let quat = UnitQuaternion::new_normalize(Quaternion::new(q[6], q[3], q[4], q[5]));
    Pose::from_parts(Translation3::new(q[0], q[1], q[2]), quat)
}

/// `X_PJ X_JB(q)`: the joint frame `x_pj` (world) moved by a one-DOF joint's displacement `qj`
/// about or along its unit `axis`. A revolute joint turns by the quaternion
/// `(cos(q/2), sin(q/2) axis)`, written directly (the axis is a unit vector).
#[inline]
fn joint_motion(x_pj: Pose, kind: JointKind, axis: &Vec3, qj: f64) -> Pose {
    match kind {
        JointKind::Revolute => {
            let (s, c) = (0.5 * qj).sin_cos();
            let turn = UnitQuaternion::new_unchecked(Quaternion::new(c, s * axis.x, s * axis.y, s * axis.z));
            Pose::from_parts(x_pj.translation, x_pj.rotation * turn)
        }
        JointKind::Prismatic => x_pj * Pose::translation(axis.x * qj, axis.y * qj, axis.z * qj),
        _ => x_pj,
    }
}

/// Computes body poses, motion subspaces and body velocities from `q` and `v`.
pub fn forward_kinematics(model: &Model, q: &[f64], v: &[f64], ws: &mut Workspace) {
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        let x_wb = match j.kind {
            JointKind::Free => free_joint_pose(&q[j.q_index..j.q_index + 7]),
            _ => {
                let x_wp = match body.parent {
                    Some(p) => ws.body_pose[p],
                    None => Pose::identity(),
                };
                let x_pj = x_wp * j.x_parent_joint;
                match j.kind {
                    JointKind::Fixed => x_pj,
                    _ => joint_motion(x_pj, j.kind, &j.axis, q[j.q_index]),
                }
            }
        };
        ws.body_pose[b] = x_wb;
        let origin = x_wb.translation.vector;
        let mut vel = match body.parent {
            Some(p) => ws.body_velocity[p],
            None => Vec6::zeros(),
        };
        match j.kind {
            JointKind::Fixed => {}
            JointKind::Revolute => {
                let w = x_wb.rotation * j.axis;
                let s = spatial(&w, &origin.cross(&w));
                ws.dof_axis[j.v_index] = s;
                vel += s * v[j.v_index];
            }
            JointKind::Prismatic => {
                let s = spatial(&Vec3::zeros(), &(x_wb.rotation * j.axis));
                ws.dof_axis[j.v_index] = s;
                vel += s * v[j.v_index];
            }
            JointKind::Free => {
                let r = x_wb.rotation.to_rotation_matrix();
                for k in 0..3 {
                    let e = r.matrix().column(k).into_owned();
                    let s_lin = spatial(&Vec3::zeros(), &e);
                    let s_ang = spatial(&e, &origin.cross(&e));
                    ws.dof_axis[j.v_index + k] = s_lin;
                    ws.dof_axis[j.v_index + 3 + k] = s_ang;
                    vel += s_lin * v[j.v_index + k] + s_ang * v[j.v_index + 3 + k];
                }
            }
        }
        ws.body_velocity[b] = vel;
    }
}

/// Recomputes only the body velocities for a new `v` (poses and motion subspaces unchanged).
pub fn update_body_velocities(model: &Model, v: &[f64], ws: &mut Workspace) {
    velocity_pass(model, v, ws, 0..model.bodies.len());
}

/// [`update_body_velocities`] for the listed bodies only (ascending, every listed body's parent
/// listed too): their velocities come out bit for bit as from the whole pass.
pub fn update_body_velocities_of(model: &Model, v: &[f64], ws: &mut Workspace, bodies: &[usize]) {
    velocity_pass(model, v, ws, bodies.iter().copied());
}

/// Body velocities, parent first, over `bodies` (ascending).
#[inline(always)]
fn velocity_pass(model: &Model, v: &[f64], ws: &mut Workspace, bodies: impl Iterator<Item = usize>) {
    for b in bodies {
        let body = &model.bodies[b];
        let j = &body.joint;
        let mut vel = match body.parent {
            Some(p) => ws.body_velocity[p],
            None => Vec6::zeros(),
        };
        for k in j.v_index..j.v_index + j.kind.nv() {
            vel += ws.dof_axis[k] * v[k];
        }
        ws.body_velocity[b] = vel;
    }
}

/// World-frame linear velocity of the material point at `p` (world) on `body`.
#[inline]
pub fn point_velocity(ws: &Workspace, body: Option<usize>, p: &Vec3) -> Vec3 {
    match body {
        Some(b) => crate::math::point_velocity(&ws.body_velocity[b], p),
        None => Vec3::zeros(),
    }
}

/// World pose of a body's centre of mass and the body's world linear/angular velocity at it.
pub fn body_com_state(model: &Model, ws: &Workspace, body: usize) -> (Vec3, Vec3, Vec3) {
    let x = &ws.body_pose[body];
    let c = x * nalgebra::Point3::from(model.bodies[body].com);
    let v = &ws.body_velocity[body];
    (c.coords, crate::math::point_velocity(v, &c.coords), Vec3::new(v[0], v[1], v[2]))
}
