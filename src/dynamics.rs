//! Mass matrix (CRBA), bias forces and inverse dynamics (RNEA), and the per-tree Cholesky
//! factorization, in world coordinates (Featherstone, *Rigid Body Dynamics Algorithms*, §5.3 and
//! §6.2; world-coordinate form of Table 5.1, with `Ṡ_k = v_i ×m S_k` for a joint of body i).
//!
//! Equation of motion: `M(q) v̇ + h(q, v) = τ + Jᵀ f`, with `h = C(q, v) v + g(q)`.
//! Requires [`crate::kinematics::forward_kinematics`] to have filled the workspace.

use crate::math::{cross_force, cross_motion, spatial, spatial_inertia, Vec6};
use crate::model::Model;
use crate::workspace::{Workspace, NO_DOF};

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
    // M[l][k] = S_lᵀ Ic_b S_k for coordinate k of body b and every coordinate l ≤ k on its path to
    // the root (the same joint's earlier coordinates, then the ancestors'); zero elsewhere.
    let n = model.nv;
    let Workspace { mass_matrix, composite_inertia, dof_axis, dof_parent, .. } = ws;
    let m = mass_matrix.as_mut_slice(); // column-major: M[i][j] = m[j * n + i]
    m.fill(0.0);
    for (b, body) in model.bodies.iter().enumerate() {
        let j = &body.joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            let f = composite_inertia[b] * dof_axis[k];
            let mut l = k;
            while l != NO_DOF {
                let v = dof_axis[l].dot(&f);
                m[k * n + l] = v;
                m[l * n + k] = v;
                l = dof_parent[l];
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

/// Factorizes `ws.mass_factor` in place as `M̃ = Lᵀ L` (Featherstone's LTL algorithm, *RBDA*
/// §6.5, Table 6.3): eliminating from the last coordinate to the first, along the parent chains
/// `ws.dof_parent`, creates no fill-in, so the cost is Σ_k depth(k)² instead of the dense n³/6
/// (a quadruped: 18 coordinates, depth ≤ 9). On entry the lower triangle of `ws.mass_factor`
/// holds M̃ (symmetric, branch-induced sparsity); on exit it holds L. Returns `false` if M̃ is
/// not positive definite.
///
/// With `M̃⁻¹ = L⁻¹ L⁻ᵀ`, the contact code uses `Z = L⁻ᵀ Jᵀ` ([`solve_lt`]) so that
/// `J M̃⁻¹ Jᵀ = Zᵀ Z`, and maps `Z λ` back to velocities with `L⁻¹` ([`solve_l`]).
pub fn factorize(model: &Model, ws: &mut Workspace) -> bool {
    let _ = model;
    let n = ws.mass_factor.nrows();
    let parent = &ws.dof_parent;
    let h = ws.mass_factor.as_mut_slice(); // column-major: H[i][j] = h[j * n + i]
    for k in (0..n).rev() {
        let d = h[k * n + k];
        if !(d > 0.0) {
            return false;
        }
        let d = d.sqrt();
        h[k * n + k] = d;
        // row k of L: H[k][i] /= H[k][k] for the ancestors i of k
        let mut i = parent[k];
        while i != NO_DOF {
            h[i * n + k] /= d;
            i = parent[i];
        }
        // H[i][j] -= H[k][i] H[k][j] for ancestors j ≤ i of k
        let mut i = parent[k];
        while i != NO_DOF {
            let lki = h[i * n + k];
            let mut j = i;
            while j != NO_DOF {
                h[j * n + i] -= lki * h[j * n + k];
                j = parent[j];
            }
            i = parent[i];
        }
    }
    true
}

/// `x ← L⁻ᵀ x` on the velocity range `[s, e)` of one tree (`Lᵀ` is upper triangular: back
/// substitution from the last coordinate, pushing each solved value to its ancestors). Zero
/// entries are skipped, so a Jacobian row that touches one leg costs that leg's chain only.
#[inline]
pub fn solve_lt(factor: &nalgebra::DMatrix<f64>, dof_parent: &[usize], s: usize, e: usize, x: &mut [f64]) {
    let n = factor.nrows();
    let l = factor.as_slice();
    for i in (s..e).rev() {
        if x[i] == 0.0 {
            continue;
        }
        let xi = x[i] / l[i * n + i];
        x[i] = xi;
        let mut j = dof_parent[i];
        while j != NO_DOF {
            x[j] -= l[j * n + i] * xi;
            j = dof_parent[j];
        }
    }
}

/// `x ← L⁻¹ x` on the velocity range `[s, e)` of one tree (forward substitution along each
/// coordinate's ancestors).
#[inline]
pub fn solve_l(factor: &nalgebra::DMatrix<f64>, dof_parent: &[usize], s: usize, e: usize, x: &mut [f64]) {
    let n = factor.nrows();
    let l = factor.as_slice();
    for i in s..e {
        let mut y = x[i];
        let mut j = dof_parent[i];
        while j != NO_DOF {
            y -= l[j * n + i] * x[j];
            j = dof_parent[j];
        }
        x[i] = y / l[i * n + i];
    }
}

/// Solves `M̃ x = b` in place for the velocity range `[s, e)` of one tree, using the factor:
/// `x = L⁻¹ (L⁻ᵀ b)`.
#[inline]
pub fn solve_block(factor: &nalgebra::DMatrix<f64>, dof_parent: &[usize], s: usize, e: usize, x: &mut [f64]) {
    solve_lt(factor, dof_parent, s, e, x);
    solve_l(factor, dof_parent, s, e, x);
}

/// Solves `M̃ x = b` in place for all trees.
pub fn solve(model: &Model, factor: &nalgebra::DMatrix<f64>, dof_parent: &[usize], x: &mut [f64]) {
    for t in &model.trees {
        solve_block(factor, dof_parent, t.v_start, t.v_end, x);
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
