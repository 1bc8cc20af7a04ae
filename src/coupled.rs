//! The coupled rigid–FEM solve: deformable bodies, rigid trees and every contact between them
//! in one nodalized system, solved by the configured method's [`crate::contact::NodalSolver`].
//!
//! Per step: node contacts against the rigid geometry and between deformables
//! ([`collide_nodes`]), one solve of the rigid rows, deformable contacts and welds ([`solve`]),
//! and the contact and weld forces the rigid bodies receive ([`accumulate_contact_forces`]).
//! The data types of deformable contacts and welds live in [`crate::fem`].

use crate::contact::{ConstraintStage, NodalConstraint, NodalSystem, SolveStats};
use crate::fem::{FemWorkspace, NodeAttachment};
use crate::kinematics::add_point_jacobian_row;
use crate::math::{Pose, Vec3};
use crate::model::{JointKind, Model};
use crate::state::State;
pub use crate::workspace::CoupledScratch;
use crate::workspace::Workspace;


/// Contacts of deformable surface nodes: against the ground and every rigid geometry, the
/// deepest one per node (one contact per node keeps the surrogate Delassus operator diagonal,
/// the method notes of the nodal solvers). Speculative within `margin + dt |v_node|`. Attached nodes get none:
/// pinned ones do not move, welded ones already carry their weld constraint.
pub fn collide_nodes(model: &Model, state: &State, geom_pose: &[Pose], f: &mut FemWorkspace) {
    let dt = model.timestep_s;
    f.contacts.clear();
    for d in &model.deformables {
        for &ln in &d.surface_nodes {
            if d.attachment[ln] != NodeAttachment::Free {
                continue; // pinned: no motion; welded: the weld is its one constraint
            }
            let g = d.node_start + ln;
            let p = Vec3::new(state.fem_x[3 * g], state.fem_x[3 * g + 1], state.fem_x[3 * g + 2]);
            let v = Vec3::new(state.fem_v[3 * g], state.fem_v[3 * g + 1], state.fem_v[3 * g + 2]);
            let margin = model.contact.margin_m + dt * v.norm();
            let best = crate::collision::deepest_geom_contact(model, geom_pose, &p, margin);
            if let Some((dist, n, gi)) = best {
                if f.contacts.len() == f.contacts.capacity() {
                    break;
                }
                let (t1, t2) = crate::math::tangent_basis(&n);
                let body = model.geoms[gi].body.filter(|&b| model.bodies[b].joint.kind != JointKind::Fixed || model.bodies[b].parent.is_some());
                f.contacts.push(crate::fem::FemContact {
                    node: g,
                    geom: Some(gi),
                    body,
                    other_node: None,
                    position: p,
                    frame: crate::math::Mat3::from_rows(&[n.transpose(), t1.transpose(), t2.transpose()]),
                    distance: dist,
                    impulse: [0.0; 3],
                });
            }
        }
    }
    // node–node contacts (deformable–deformable, self-contact), on the nodes left free
    let crate::fem::FemWorkspace { node_contact, contacts, .. } = f;
    node_contact.detect(&model.deformables, &state.fem_x, &state.fem_v, dt, model.contact.margin_m, contacts);
}

/// One nodal solve of the rigid trees, the deformable bodies and all their contacts
/// (see [`crate::contact::NodalSystem`] for the layout). Writes the rigid rows' impulses into
/// `ws.impulse`, the deformable contacts' into `ws.fem.contacts`, the welds' into `ws.fem.welds`
/// (and `state.fem_weld_impulse`), the generalized impulse of the deformable contacts and welds
/// on the rigid trees into `ws.fem.rigid_impulse` and the deformable nodes' end-of-step
/// velocities into `state.fem_v`. Constraint order: rigid rows, deformable contacts, welds.
pub fn solve(model: &Model, state: &mut State, ws: &mut Workspace, m: usize) -> SolveStats {
    let dt = model.timestep_s;
    let nv = model.nv;
    let Workspace { fem, coupled, solver, jacobian, free_velocity, free_constraint_velocity, friction, row_lower, row_upper, mass_tilde, impulse, contacts, dof_axis, body_pose, .. } = ws;
    let (Some(f), Some(cs)) = (fem.as_mut(), coupled.as_mut()) else {
        return SolveStats::default();
    };
    // the scene loader, the CLI and the node refuse methods without the capability
    let ConstraintStage::Impulse(impulse_solver) = solver.stage() else {
        return SolveStats::default();
    };
    let Some(vs) = impulse_solver.nodal() else {
        return SolveStats::default();
    };
    // the nodes' prescribed velocities and contacts are the step's deformable-contact stage's
    // (`crate::step::deformable_contacts`)
    // the element phase of the assembly runs on the solver's pool (bit-identical for any thread count)
    f.system.assemble_on(&model.deformables, &state.fem_x, &state.fem_v, dt, &model.gravity, vs.pool());
    f.velocity_start.copy_from_slice(&state.fem_v);
    let nf = f.system.dim();
    let base = nf + nv;
    let kt = vs.virtual_node_gain() * dt;
    cs.constraints.clear();
    let rigid = RigidRows {
        num_contacts: contacts.len(),
        jacobian: &jacobian[..m * nv],
        free_velocity: free_velocity.as_slice(),
        free_constraint_velocity,
        warm_impulse: impulse,
        friction,
        row_lower,
        row_upper,
    };
    push_rigid_rows(&rigid, m, nv, base, kt, cs);
    let mut vr = m;
    push_deformable_contacts(model, dof_axis, f, cs, base, &mut vr);
    let first_weld = cs.constraints.len();
    push_welds(model, state, body_pose, dof_axis, f, cs, base, kt, &mut vr);
    // b = M̃ v* of the rigid part; initial guess: previous velocities (paper: previous step's
    // v̂), prescribed nodes exact
    for i in 0..nv {
        let mut s = 0.0;
        for k in 0..nv {
            s += mass_tilde[(i, k)] * free_velocity[k];
        }
        cs.rigid_b[i] = s;
    }
    // initial guess: previous velocities (paper: previous step's v̂), prescribed nodes exact
    {
        let x = vs.initial_guess();
        for g in 0..nf / 3 {
            let src = if f.system.prescribed[g] { &f.system.prescribed_velocity[3 * g..3 * g + 3] } else { &state.fem_v[3 * g..3 * g + 3] };
            x[3 * g..3 * g + 3].copy_from_slice(src);
        }
        x[nf..nf + nv].copy_from_slice(&state.v);
    }
    let sys = NodalSystem {
        fem: Some(&f.system.a),
        fem_block_cols: &f.system.block_cols,
        fem_b: &f.system.b,
        fem_fixed: &f.system.prescribed,
        nv,
        mass: mass_tilde.as_slice(),
        rigid_b: &cs.rigid_b,
        jv: &cs.jv[..vr * nv],
        num_virtual: vr,
        constraints: &cs.constraints,
        k_tilde: kt,
        fem_bodies: &cs.fem_bodies,
    };
    let stats = vs.solve_nodal(&sys);
    scatter_impulses(vs.impulses(), m, base, first_weld, nv, f, cs, state, impulse);
    state.fem_v.copy_from_slice(&vs.solution()[..nf]);
    cs.last_solve = stats;
    stats
}

/// Prescribed node velocities: pinned (zero) and driven one-way (the link point's); two-way
/// welded nodes are free unknowns (see [`push_welds`]).
pub(crate) fn prescribe_node_velocities(model: &Model, body_pose: &[Pose], body_velocity: &[crate::math::Vec6], f: &mut FemWorkspace) {
    for d in &model.deformables {
        for (i, at) in d.attachment.iter().enumerate() {
            let g = d.node_start + i;
            let v = match at {
                NodeAttachment::Free | NodeAttachment::Body(..) => continue,
                NodeAttachment::World => Vec3::zeros(),
                NodeAttachment::BodyOneWay(b, off) => {
                    let pw = body_pose[*b] * nalgebra::Point3::from(*off);
                    crate::math::point_velocity(&body_velocity[*b], &pw.coords)
                }
            };
            f.system.prescribed_velocity[3 * g..3 * g + 3].copy_from_slice(v.as_slice());
        }
    }
}

/// The rigid rows of the step (contacts then joint rows, with their warm start) as they enter
/// the coupled solve.
struct RigidRows<'a> {
    num_contacts: usize,
    /// J, row-major `rows × nv`.
    jacobian: &'a [f64],
    /// v*.
    free_velocity: &'a [f64],
    /// `u_free = J v* + b` per row.
    free_constraint_velocity: &'a [f64],
    /// The warm start λ per row (N·s).
    warm_impulse: &'a [f64],
    friction: &'a [f64],
    row_lower: &'a [f64],
    row_upper: &'a [f64],
}

/// Rigid contacts (3-D) and joint rows (1-D) as virtual-node constraints: offset
/// `u_free − J v* − λ_warm / k̃` (the virtual-node drift compensation of
/// [`crate::contact::VfpiSolver`]); their Jacobian rows are the first rows of `jv`.
fn push_rigid_rows(rigid: &RigidRows, m: usize, nv: usize, base: usize, kt: f64, cs: &mut CoupledScratch) {
    let RigidRows { num_contacts, jacobian, free_velocity, free_constraint_velocity, warm_impulse: impulse, friction, row_lower, row_upper } = *rigid;
    let rows = crate::contact::ContactRows::POINT;
    let first_joint_row = rows.start(num_contacts);
    for r in 0..m {
        let row = &jacobian[r * nv..(r + 1) * nv];
        let jvs: f64 = row.iter().zip(free_velocity.iter()).map(|(a, b)| a * b).sum();
        let bias = free_constraint_velocity[r] - jvs - impulse[r] / kt;
        if r < first_joint_row {
            if r % rows.len() == 0 {
                let b = [bias, -impulse[r + 1] / kt, -impulse[r + 2] / kt];
                cs.constraints.push(NodalConstraint { i: base + r, i_is_fem: false, j: None, j_is_fem: false, dim: 3, frame: crate::math::Mat3::identity(), bias: b, mu: friction[r / rows.len()], lo: 0.0, hi: 0.0, bilateral: false });
            }
        } else {
            let jr = r - first_joint_row;
            cs.constraints.push(NodalConstraint { i: base + r, i_is_fem: false, j: None, j_is_fem: false, dim: 1, frame: crate::math::Mat3::identity(), bias: [bias, 0.0, 0.0], mu: 0.0, lo: row_lower[jr], hi: row_upper[jr], bilateral: false });
        }
    }
    cs.jv[..m * nv].copy_from_slice(&jacobian[..m * nv]);
    cs.jv[..m * nv].copy_from_slice(&jacobian[..m * nv]);
}

/// Deformable contacts (node–geometry and node–node), 3-D in the contact frame; a contact with
/// a movable rigid body gets a virtual node of 3 `jv` rows at row `*vr`.
fn push_deformable_contacts(model: &Model, dof_axis: &[crate::math::Vec6], f: &FemWorkspace, cs: &mut CoupledScratch, base: usize, vr: &mut usize) {
    let dt = model.timestep_s;
    let nv = model.nv;
    let bias_of = |d: f64| model.contact.normal_bias(d, dt);
    for k in 0..f.contacts.len() {
        let c = f.contacts[k];
        let mut j = None;
        if let Some(b) = c.body {
            let rows = &mut cs.jv[*vr * nv..(*vr + 3) * nv];
            rows.fill(0.0);
            for r in 0..3 {
                let dir = c.frame.row(r).transpose();
                add_point_jacobian_row(model, dof_axis, b, &c.position, &dir, 1.0, &mut rows[r * nv..(r + 1) * nv]);
            }
            if rows.iter().any(|x| *x != 0.0) {
                j = Some(base + *vr);
                *vr += 3;
            }
        }
        let friction_of = |g: usize| model.deformables.iter().find(|d| g >= d.node_start && g < d.node_start + d.num_nodes()).map(|d| d.friction).unwrap_or(0.5);
        let mut mu = friction_of(c.node);
        let mut j_is_fem = false;
        if let Some(o) = c.other_node {
            // node–node D-contact (crate::fem::selfcontact): j is the other FEM node, world axes
            mu = mu.min(friction_of(o));
            j = Some(3 * o);
            j_is_fem = true;
        }
        // Normal offset φ (m/s) on the end-of-step relative normal velocity: the gap /
        // Baumgarte term for both integrators. (With the midpoint integrator the gap closes at
        // the mean of the start and end velocities; the exact position-level offset
        // 2 d/h + v_n(start) made v⁺ mirror v at resting contacts, the period-2 chatter of
        // the midpoint form (docs/fem.md), and doubled the iterations; the velocity-level term lets a node that
        // arrives fast penetrate by at most h |v_n| / 2 in its impact step, removed by the
        // Baumgarte term afterwards.)
        let normal_offset = bias_of(c.distance);
        cs.constraints.push(NodalConstraint { i: 3 * c.node, i_is_fem: true, j, j_is_fem, dim: 3, frame: c.frame, bias: [normal_offset, 0.0, 0.0], mu, lo: 0.0, hi: 0.0, bilateral: false });
    }
}

/// Two-way welds ([`crate::fem`], "Welds"): a bilateral 3-D constraint, world axes, between the
/// node and a virtual node on the link point (3 `jv` rows along x, y, z at row `*vr`).
#[allow(clippy::too_many_arguments)]
fn push_welds(model: &Model, state: &State, body_pose: &[Pose], dof_axis: &[crate::math::Vec6], f: &mut FemWorkspace, cs: &mut CoupledScratch, base: usize, kt: f64, vr: &mut usize) {
    let dt = model.timestep_s;
    let nv = model.nv;
    let erp = model.contact.erp;
    f.welds.clear();
    for d in &model.deformables {
        for (ln, at) in d.attachment.iter().enumerate() {
            let NodeAttachment::Body(b, off) = *at else { continue };
            if f.welds.len() == f.welds.capacity() {
                break;
            }
            let g = d.node_start + ln;
            let p_link = (body_pose[b] * nalgebra::Point3::from(off)).coords;
            let p_node = Vec3::new(state.fem_x[3 * g], state.fem_x[3 * g + 1], state.fem_x[3 * g + 2]);
            let err = p_node - p_link;
            let rows = &mut cs.jv[*vr * nv..(*vr + 3) * nv];
            rows.fill(0.0);
            for r in 0..3 {
                add_point_jacobian_row(model, dof_axis, b, &p_link, &Vec3::ith(r, 1.0), 1.0, &mut rows[r * nv..(r + 1) * nv]);
            }
            let mut bias = [erp * err.x / dt, erp * err.y / dt, erp * err.z / dt];
            let (mut j, mut jv_row) = (None, None);
            if rows.iter().any(|x| *x != 0.0) {
                // virtual-node creep compensation with the previous step's λ (steady state: 0)
                for r in 0..3 {
                    bias[r] -= state.fem_weld_impulse[3 * g + r] / kt;
                }
                j = Some(base + *vr);
                jv_row = Some(*vr);
                *vr += 3;
            }
            f.welds.push(crate::fem::FemWeld { node: g, body: b, position: p_link, error: err, impulse: [0.0; 3], jv_row });
            cs.constraints.push(NodalConstraint { i: 3 * g, i_is_fem: true, j, j_is_fem: false, dim: 3, frame: crate::math::Mat3::identity(), bias, mu: 0.0, lo: 0.0, hi: 0.0, bilateral: true });
        }
    }
}

/// The solution's impulses `lam` (constraint order: rigid rows, deformable contacts, welds) into
/// the rigid rows' `impulse`, each deformable contact and weld, the welds' warm start in `state`,
/// and their generalized impulse on the rigid trees (`cs.rigid_impulse`: the link receives
/// `−J_vᵀ λ`).
#[allow(clippy::too_many_arguments)]
fn scatter_impulses(lam: &[f64], m: usize, base: usize, first_weld: usize, nv: usize, f: &mut FemWorkspace, cs: &mut CoupledScratch, state: &mut State, impulse: &mut [f64]) {
    impulse[..m].copy_from_slice(&lam[..m]);
    cs.rigid_impulse.fill(0.0);
    let mut o = m;
    let nrig = first_weld - f.contacts.len();
    for (k, c) in f.contacts.iter_mut().enumerate() {
        c.impulse = [lam[o], lam[o + 1], lam[o + 2]];
        let con = &cs.constraints[nrig + k];
        if let (Some(j), false) = (con.j, con.j_is_fem) {
            let r0 = j - base;
            for r in 0..3 {
                let row = &cs.jv[(r0 + r) * nv..(r0 + r + 1) * nv];
                for (q, jr) in row.iter().enumerate() {
                    cs.rigid_impulse[q] -= jr * c.impulse[r];
                }
            }
        }
        o += 3;
    }
    // welds: the link receives −J_vᵀ λ; λ kept for the next step's creep compensation
    for w in f.welds.iter_mut() {
        w.impulse = [lam[o], lam[o + 1], lam[o + 2]];
        state.fem_weld_impulse[3 * w.node..3 * w.node + 3].copy_from_slice(&w.impulse);
        if let Some(r0) = w.jv_row {
            for r in 0..3 {
                let row = &cs.jv[(r0 + r) * nv..(r0 + r + 1) * nv];
                for (q, jr) in row.iter().enumerate() {
                    cs.rigid_impulse[q] -= jr * w.impulse[r];
                }
            }
        }
        o += 3;
    }
}

/// Deformable contact forces on rigid bodies (added to [`Workspace::body_contact_force`]).
pub fn accumulate_contact_forces(model: &Model, ws: &mut Workspace) {
    let dt = model.timestep_s;
    let Some(f) = ws.fem.as_ref() else { return };
    for c in &f.contacts {
        if let Some(b) = c.body {
            let l = nalgebra::Vector3::new(c.impulse[0], c.impulse[1], c.impulse[2]);
            let force_on_node = c.frame.transpose() * l / dt;
            ws.body_contact_force[b] -= crate::sensors::force_at_point(&force_on_node, &c.position);
        }
    }
    // welds: the link receives −λ / h at the weld point
    for w in &f.welds {
        let force_on_node = Vec3::new(w.impulse[0], w.impulse[1], w.impulse[2]) / dt;
        ws.body_contact_force[w.body] -= crate::sensors::force_at_point(&force_on_node, &w.position);
    }
}
