//! Mass matrix (CRBA), bias forces and inverse dynamics (RNEA), and the per-tree Cholesky
//! factorization, in world coordinates (Featherstone, *Rigid Body Dynamics Algorithms*, §5.3 and
//! §6.2; world-coordinate form of Table 5.1, with `Ṡ_k = v_i ×m S_k` for a joint of body i).
//!
//! Equation of motion: `M(q) v̇ + h(q, v) = τ + Jᵀ f`, with `h = C(q, v) v + g(q)`.
//! Requires [`crate::kinematics::forward_kinematics`] to have filled the workspace.

use crate::math::{cross_force, cross_motion, spatial, spatial_inertia, Vec6};
use crate::model::Model;
use crate::workspace::Workspace;

/// Fills `ws.body_inertia` (world coordinates, about the world origin) from the body poses.
pub fn update_body_inertias(model: &Model, ws: &mut Workspace) {
    for (b, body) in model.bodies.iter().enumerate() {
        let x = &ws.body_pose[b];
        let r = x.rotation.to_rotation_matrix().into_inner();
        let c = x.translation.vector + r * body.com;
        let i_w = r * body.inertia_com * r.transpose();
        ws.body_inertia[b] = spatial_inertia(body.mass, &c, &i_w);
    }
}

/// Composite-rigid-body algorithm: writes M(q) into `ws.mass_matrix`.
pub fn mass_matrix(model: &Model, ws: &mut Workspace) {
    let nb = model.bodies.len();
    for b in 0..nb {
        ws.composite_inertia[b] = ws.body_inertia[b];
    }
    for b in (0..nb).rev() {
        if let Some(p) = model.bodies[b].parent {
            let ic = ws.composite_inertia[b];
            ws.composite_inertia[p] += ic;
        }
    }
    ws.mass_matrix.fill(0.0);
    for b in 0..nb {
        let j = &model.bodies[b].joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            let f = ws.composite_inertia[b] * ws.dof_axis[k];
            // this body and its ancestors
            let mut cur = Some(b);
            while let Some(a) = cur {
                let ja = &model.bodies[a].joint;
                for l in ja.v_index..ja.v_index + ja.kind.nv() {
                    let m = ws.dof_axis[l].dot(&f);
                    ws.mass_matrix[(l, k)] = m;
                    ws.mass_matrix[(k, l)] = m;
                }
                cur = model.bodies[a].parent;
            }
        }
    }
}

/// Recursive Newton–Euler forward and backward passes: leaves in `ws.body_force[b]` the spatial
/// force transmitted from body b's parent across its joint (subtree force), for joint
/// accelerations `a` (`None` = zero). `v` must be the velocity used by forward kinematics.
pub fn rnea_forces(model: &Model, ws: &mut Workspace, v: &[f64], a: Option<&[f64]>) {
    // The base accelerates upward at -g (Featherstone's gravity trick).
    let a_base = spatial(&crate::math::Vec3::zeros(), &(-model.gravity));
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        let mut acc = match body.parent {
            Some(p) => ws.body_acc[p],
            None => a_base,
        };
        let mut joint_vel = Vec6::zeros();
        for k in j.v_index..j.v_index + j.kind.nv() {
            if let Some(a) = a {
                acc += ws.dof_axis[k] * a[k];
            }
            joint_vel += ws.dof_axis[k] * v[k];
        }
        acc += cross_motion(&ws.body_velocity[b], &joint_vel);
        ws.body_acc[b] = acc;
        let vel = ws.body_velocity[b];
        let inertia = &ws.body_inertia[b];
        ws.body_force[b] = inertia * acc + cross_force(&vel, &(inertia * vel));
    }
    for b in (0..model.bodies.len()).rev() {
        if let Some(p) = model.bodies[b].parent {
            let f = ws.body_force[b];
            ws.body_force[p] += f;
        }
    }
}

/// Projects the subtree forces of [`rnea_forces`] on the joint axes: `τ_k = S_kᵀ f_b`.
fn project_on_axes(model: &Model, dof_axis: &[Vec6], body_force: &[Vec6], tau: &mut [f64]) {
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            tau[k] = dof_axis[k].dot(&body_force[b]);
        }
    }
}

/// Inverse dynamics: writes `τ = M(q) a + h(q, v)` (gravity included) into `tau`.
pub fn inverse_dynamics(model: &Model, ws: &mut Workspace, v: &[f64], a: &[f64], tau: &mut [f64]) {
    rnea_forces(model, ws, v, Some(a));
    project_on_axes(model, &ws.dof_axis, &ws.body_force, tau);
}

/// Bias forces `h(q, v)` into `ws.bias` (RNEA with zero acceleration).
pub fn bias_forces(model: &Model, ws: &mut Workspace, v: &[f64]) {
    rnea_forces(model, ws, v, None);
    let Workspace { dof_axis, body_force, bias, .. } = ws;
    project_on_axes(model, dof_axis, body_force, bias.as_mut_slice());
}

/// Factorizes `ws.mass_factor` in place (lower Cholesky `M̃ = L Lᵀ`), block by block over
/// trees. On entry `ws.mass_factor` holds M̃ (symmetric). Returns `false` if a block is not
/// positive definite.
pub fn factorize(model: &Model, ws: &mut Workspace) -> bool {
    let n = ws.mass_factor.nrows();
    let l = ws.mass_factor.as_mut_slice(); // column-major: L[i][j] = l[j * n + i]
    for t in &model.trees {
        let (s, e) = (t.v_start, t.v_end);
        // Left-looking: column j of L is column j of M̃ minus Σ_k L[j][k] (column k of L), from
        // row j down, then scaled. Columns are contiguous, and the zeros the tree structure leaves
        // in L (between different branches) are skipped.
        for j in s..e {
            let (left, right) = l.split_at_mut(j * n);
            let col_j = &mut right[j..e];
            for k in s..j {
                let ljk = left[k * n + j];
                if ljk != 0.0 {
                    for (x, y) in col_j.iter_mut().zip(&left[k * n + j..k * n + e]) {
                        *x -= ljk * y;
                    }
                }
            }
            let d = col_j[0];
            if !(d > 0.0) {
                return false;
            }
            let d = d.sqrt();
            col_j[0] = d;
            let inv = 1.0 / d;
            for x in &mut col_j[1..] {
                *x *= inv;
            }
        }
        // Mirror L into the upper triangle (U = Lᵀ, so U[i][k] = L[k][i]): the forward
        // substitution then reads column i of U contiguously.
        for j in s..e {
            for i in j + 1..e {
                l[i * n + j] = l[j * n + i];
            }
        }
    }
    true
}

/// Forward substitution `x ← L⁻¹ x` on the velocity range `[s, e)` of one tree.
#[inline]
pub fn forward_substitute(factor: &nalgebra::DMatrix<f64>, s: usize, e: usize, x: &mut [f64]) {
    let n = factor.nrows();
    let l = factor.as_slice();
    for i in s..e {
        // row i of L = column i of the mirrored upper triangle: l[i*n + k] for k < i
        let col = &l[i * n + s..i * n + i];
        let mut y = x[i];
        for (lik, xk) in col.iter().zip(&x[s..i]) {
            y -= lik * xk;
        }
        x[i] = y / l[i * n + i];
    }
}

/// Backward substitution `x ← L⁻ᵀ x` on the velocity range `[s, e)` of one tree.
#[inline]
pub fn backward_substitute(factor: &nalgebra::DMatrix<f64>, s: usize, e: usize, x: &mut [f64]) {
    let n = factor.nrows();
    let l = factor.as_slice();
    for i in (s..e).rev() {
        // column i of L below the diagonal: l[i*n + k] for k > i
        let col = &l[i * n + i + 1..i * n + e];
        let mut y = x[i];
        for (lki, xk) in col.iter().zip(&x[i + 1..e]) {
            y -= lki * xk;
        }
        x[i] = y / l[i * n + i];
    }
}

/// Solves `M̃ x = b` in place for the velocity range `[s, e)` of one tree, using the factor.
#[inline]
pub fn solve_block(factor: &nalgebra::DMatrix<f64>, s: usize, e: usize, x: &mut [f64]) {
    forward_substitute(factor, s, e, x);
    backward_substitute(factor, s, e, x);
}

/// Solves `M̃ x = b` in place for all trees.
pub fn solve(model: &Model, factor: &nalgebra::DMatrix<f64>, x: &mut [f64]) {
    for t in &model.trees {
        solve_block(factor, t.v_start, t.v_end, x);
    }
}

/// Kinetic energy ½ vᵀ M v (J). Needs [`mass_matrix`] to be current.
pub fn kinetic_energy(ws: &Workspace, v: &[f64]) -> f64 {
    let n = v.len();
    let mut e = 0.0;
    for i in 0..n {
        for j in 0..n {
            e += v[i] * ws.mass_matrix[(i, j)] * v[j];
        }
    }
    0.5 * e
}

/// Gravitational potential energy −Σ m g·c (J). Needs poses.
pub fn potential_energy(model: &Model, ws: &Workspace) -> f64 {
    model
        .bodies
        .iter()
        .enumerate()
        .map(|(b, body)| {
            let c = ws.body_pose[b] * nalgebra::Point3::from(body.com);
            -body.mass * model.gravity.dot(&c.coords)
        })
        .sum()
}
