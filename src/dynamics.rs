//! Mass matrix (CRBA), bias forces and inverse dynamics (RNEA), and the per-tree Cholesky
//! factorization, in world coordinates (Featherstone, *Rigid Body Dynamics Algorithms*, §5.3 and
//! §6.2; world-coordinate form of Table 5.1, with `Ṡ_k = v_i ×m S_k` for a joint of body i).
//!
//! Equation of motion: `M(q) v̇ + h(q, v) = τ + Jᵀ f`, with `h = C(q, v) v + g(q)`.
//! Requires [`crate::kinematics::forward_kinematics`] to have filled the workspace.
//!
//! The whole-model passes run over the bodies with coordinates ([`MassBodies`]): a body on a
//! fixed joint rides with its nearest ancestor with coordinates, its world inertia added to that
//! ancestor's, which gives the same `M(q)` and `h(q, v)` up to round-off. The F/T sensors need
//! the force across a fixed joint and run their own pass, body by body
//! ([`sensor_rnea_forces`]).

pub use crate::math::branch_matrix;

pub use branch_matrix::BranchMatrix;

use crate::math::{cross_force, cross_motion, spatial, SpatialInertia, Vec6};
use crate::model::{MassBodies, Model};
use crate::workspace::Workspace;

/// Fills `ws.body_inertia` (each body alone) and `ws.moving_inertia` (each mass body with the
/// bodies welded to it), world coordinates about the world origin, from the body poses.
pub fn update_body_inertias(model: &Model, ws: &mut Workspace) {
    for (b, body) in model.bodies.iter().enumerate() {
        let x = &ws.body_pose[b];
        let r = x.rotation.to_rotation_matrix().into_inner();
        let c = x.translation.vector + r * body.com;
        let i_w = r * body.inertia_com * r.transpose();
        ws.body_inertia[b] = SpatialInertia::from_com(body.mass, &c, &i_w);
    }
    let Workspace { body_inertia, moving_inertia, mass_bodies, .. } = ws;
    for &b in &mass_bodies.bodies {
        moving_inertia[b] = body_inertia[b];
    }
    for &(f, m) in &mass_bodies.welded {
        moving_inertia[m] += body_inertia[f];
    }
}

/// Composite-rigid-body algorithm: writes M(q) into `ws.mass_matrix` (branch-sparse rows),
/// with each joint's armature added to its diagonal entry.
pub fn mass_matrix(model: &Model, ws: &mut Workspace) {
    let Workspace { composite_inertia, moving_inertia, mass_bodies, .. } = ws;
    for &b in &mass_bodies.bodies {
        composite_inertia[b] = moving_inertia[b];
    }
    for &b in mass_bodies.bodies.iter().rev() {
        if let Some(p) = mass_bodies.parent[b] {
            let ic = composite_inertia[b];
            composite_inertia[p] += ic;
        }
    }
    // M[k][l] = S_lᵀ Ic_b S_k for coordinate k of body b and every coordinate l on its path to
    // the root (k itself, the same joint's earlier coordinates, then the ancestors'): exactly the
    // stored row k of the branch-sparse matrix; zero elsewhere.
    let Workspace { mass_matrix, composite_inertia, dof_axis, mass_bodies, .. } = ws;
    for &b in &mass_bodies.bodies {
        if mass_bodies.lone_free[b] {
            lone_free_block(&model.bodies[b], mass_matrix);
            continue;
        }
        let j = &model.bodies[b].joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            let f = composite_inertia[b].apply(&dof_axis[k]);
            let (cols, row) = mass_matrix.row_mut(k);
            for (v, &l) in row.iter_mut().zip(cols) {
                *v = dof_axis[l].dot(&f);
            }
        }
        // the drive's reflected inertia acts on the joint coordinate alone
        if j.armature != 0.0 && j.kind.nv() == 1 {
            mass_matrix.add_to_diagonal(j.v_index, j.armature);
        }
    }
}

/// The mass matrix block of a free body that carries nothing, in its own coordinates: the
/// velocity `v` of its origin and its angular velocity `ω`, both in its own axes (the free
/// joint's coordinates, [`crate::kinematics`]). With `c` its centre of mass and `I_c` its
/// rotational inertia about it (body axes), the kinetic energy
/// `½ m |v + ω × c|² + ½ ωᵀ I_c ω` gives (Featherstone, *RBDA* §2.13)
///
/// ```text
/// M = [ m E        −m [c]× ]
///     [ m [c]×     I_c + m ([c]×)ᵀ [c]× ]
/// ```
///
/// constant, and with exact zeros where the body's geometry puts them (a box about its centre:
/// diagonal), where the composite-rigid-body sum in world axes leaves round-off of 1e-28: the
/// factor's rows then end where they should and its solves skip the zeros
/// ([`BranchMatrix`](crate::math::BranchMatrix)). The same matrix as the sum's to round-off.
fn lone_free_block(body: &crate::model::Body, mass_matrix: &mut crate::math::BranchMatrix) {
    let k0 = body.joint.v_index;
    let (m, c) = (body.mass, body.com);
    let cx = crate::math::skew(&c);
    let ang = body.inertia_com + cx.transpose() * cx * m;
    for r in 0..6 {
        // row k0 + r holds (k0 + r, k0 + r − 1, …, k0): the joint's own chain, the free root's only ancestors
        let row = mass_matrix.row_values_mut(k0 + r);
        for (t, v) in row.iter_mut().enumerate() {
            let col = r - t;
            *v = match (r < 3, col < 3) {
                (true, true) => if col == r { m } else { 0.0 },
                (false, true) => m * cx[(r - 3, col)],
                (false, false) => ang[(r - 3, col - 3)],
                (true, false) => unreachable!("a linear row's ancestors are linear"),
            };
        }
    }
}

/// Recursive Newton–Euler forward and backward passes over the mass bodies ([`MassBodies`]):
/// leaves in `ws.body_force[b]`, for each body `b` with coordinates, the spatial force
/// transmitted from its parent across its joint (subtree force, welded bodies included), for
/// joint accelerations `a` (`None` = zero). `v` must be the velocity used by forward kinematics.
/// The entries of welded bodies are not written.
pub fn rnea_forces(model: &Model, ws: &mut Workspace, v: &[f64], a: Option<&[f64]>) {
    let mass = std::mem::take(&mut ws.mass_bodies.bodies); // moved out and back: no allocation
    rnea_pass(model, ws, v, a, mass.iter().copied(), Pass::Carried);
    ws.mass_bodies.bodies = mass;
}

/// RNEA body by body (each with its own inertia and parent) on the bodies the F/T sensors read
/// (`bodies`, i.e. [`Workspace::sensor_bodies`]: ascending, every listed body's parent listed
/// too): the subtree force of each body of a sensor's subtree (`ws.in_sensor_subtree`), also
/// across a fixed joint. Above the subtrees only the accelerations are computed; their forces
/// are not written.
pub fn sensor_rnea_forces(model: &Model, ws: &mut Workspace, v: &[f64], a: &[f64], bodies: &[usize]) {
    rnea_pass(model, ws, v, Some(a), bodies.iter().copied(), Pass::Sensors);
}

/// Which RNEA pass runs.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// The whole model: the mass bodies, with `ws.moving_inertia` and [`MassBodies::parent`].
    Carried,
    /// The sensors' bodies one by one, with `ws.body_inertia` and the model's parents; forces
    /// in the sensors' subtrees only.
    Sensors,
}

/// The two passes of RNEA over `bodies` (ascending).
#[inline(always)]
fn rnea_pass(model: &Model, ws: &mut Workspace, v: &[f64], a: Option<&[f64]>, bodies: impl DoubleEndedIterator<Item = usize> + Clone, pass: Pass) {
    // The base accelerates upward at -g (Featherstone's gravity trick).
    let a_base = spatial(&crate::math::Vec3::zeros(), &(-model.gravity));
    let parent_of = |ws: &Workspace, b: usize| match pass {
        Pass::Carried => ws.mass_bodies.parent[b],
        Pass::Sensors => model.bodies[b].parent,
    };
    for b in bodies.clone() {
        let j = &model.bodies[b].joint;
        let mut acc = match parent_of(ws, b) {
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
        if pass == Pass::Sensors && !ws.in_sensor_subtree[b] {
            continue;
        }
        let vel = ws.body_velocity[b];
        let inertia = match pass {
            Pass::Carried => &ws.moving_inertia[b],
            Pass::Sensors => &ws.body_inertia[b],
        };
        ws.body_force[b] = inertia.apply(&acc) + cross_force(&vel, &inertia.apply(&vel));
    }
    for b in bodies.rev() {
        if let Some(p) = parent_of(ws, b) {
            if pass == Pass::Sensors && !ws.in_sensor_subtree[p] {
                continue;
            }
            let f = ws.body_force[b];
            ws.body_force[p] += f;
        }
    }
}

/// Projects the subtree forces of [`rnea_forces`] on the joint axes: `τ_k = S_kᵀ f_b`.
fn project_on_axes(model: &Model, mass_bodies: &MassBodies, dof_axis: &[Vec6], body_force: &[Vec6], tau: &mut [f64]) {
    for &b in &mass_bodies.bodies {
        let j = &model.bodies[b].joint;
        for k in j.v_index..j.v_index + j.kind.nv() {
            tau[k] = dof_axis[k].dot(&body_force[b]);
        }
    }
}

/// Inverse dynamics: writes `τ = M(q) a + h(q, v)` (gravity included) into `tau`.
pub fn inverse_dynamics(model: &Model, ws: &mut Workspace, v: &[f64], a: &[f64], tau: &mut [f64]) {
    rnea_forces(model, ws, v, Some(a));
    project_on_axes(model, &ws.mass_bodies, &ws.dof_axis, &ws.body_force, tau);
}

/// Bias forces `h(q, v)` into `ws.bias` (RNEA with zero acceleration).
pub fn bias_forces(model: &Model, ws: &mut Workspace, v: &[f64]) {
    rnea_forces(model, ws, v, None);
    let Workspace { dof_axis, body_force, bias, mass_bodies, .. } = ws;
    project_on_axes(model, mass_bodies, dof_axis, body_force, bias.as_mut_slice());
}

/// Factorizes `ws.mass_factor` (holding M̃) in place as `M̃ = Lᵀ L` (Featherstone's LTL
/// algorithm, *RBDA* §6.5; see [`BranchMatrix::factorize_ltl`]): no fill-in, cost
/// `Σ_k depth(k)²` instead of the dense n³/6 (a quadruped: 18 coordinates, depth ≤ 9). Returns
/// `false` if M̃ is not positive definite.
///
/// With `M̃⁻¹ = L⁻¹ L⁻ᵀ`, the contact code uses `Z = L⁻ᵀ Jᵀ` ([`BranchMatrix::solve_lt`]) so that
/// `J M̃⁻¹ Jᵀ = Zᵀ Z`, and maps `Z λ` back to velocities with `L⁻¹` ([`BranchMatrix::solve_l`]).
pub fn factorize(ws: &mut Workspace) -> bool {
    ws.mass_factor.factorize_ltl()
}

/// Solves `M̃ x = b` in place for all trees ([`crate::model::tree::solve_mass`]).
pub fn solve(model: &Model, factor: &BranchMatrix, x: &mut [f64]) {
    crate::model::tree::solve_mass(model, factor, x);
}

/// Kinetic energy ½ vᵀ M v (J). Needs [`mass_matrix`] to be current.
pub fn kinetic_energy(ws: &Workspace, v: &[f64]) -> f64 {
    0.5 * ws.mass_matrix.quadratic_form(v)
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
