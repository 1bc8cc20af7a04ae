//! Robot links in equivalent-contact-point contact with the ground (docs/ecp.md, "Robot links").
//!
//! A link's motion over the step is not its own Newton–Euler equation: through the joints it is
//! `ν⁺ = ν_free + Λ⁻¹ W`, with `ν = (v, ω)` the world velocity of the link's centre of mass and
//! its angular velocity, `W = (F, M)` the contact impulse (N·s) and its moment about the link's
//! start-of-step centre of mass (N·m·s), and the link's operational-space mobility
//! `Λ⁻¹ = J M̃⁻¹ Jᵀ` (6 × 6; `J` the link's 6 × nv Jacobian at its centre of mass from the
//! world motion subspaces, `M̃` the step's mass matrix with implicit damping and servos, from its
//! factor). The body–plane problem of [`super::mncp`] takes `Λ⁻¹` in place of `diag(m, I)`
//! ([`super::MovingBody::mobility`]). Several links of a robot, and the joint limit and joint
//! friction rows of its joints, are coupled by Gauss–Seidel sweeps: each link's `ν_free` is its
//! twist under the current `v⁺` minus its own contact's share, and every solved impulse updates
//! `v⁺ ← v⁺ + M̃⁻¹ Jᵀ ΔW`. At a fixed point `v⁺ = v* + M̃⁻¹ Σ J_linkᵀ W_link + M̃⁻¹ Σ e_k λ_k`.
//!
//! The link's end-of-step pose inside its problem is the first-order rigid-twist pose
//! `x⁺ = x⁰ + h v`, `R⁺ = exp(h [ω]×) R⁰` (the same map as for free objects); the engine then
//! integrates the joint coordinates with its own map, so the end-of-step non-penetration of a
//! link holds to first order in `h` only (the next step starts from the actual pose and closes
//! any residual gap or overlap through the signed-gap condition).

use super::joint_rows::{prepare_joint, solve_joint, JointRows};
use super::tree_range::{axpy_range, dot_range, solve_mass};
use super::history::{BodyHistory, JointHistory};
use super::{carry_to_start, contact_key, mncp, EcpBody, EcpBodyState, EcpContact, EcpParams, EcpPlane, EcpStepper, SolvedContact};
use crate::collision::Contact;
use crate::contact::{SchemeInput, SolveStats};
use crate::model::tree::{add_angular_jacobian_row, add_point_jacobian_row};
use crate::math::{Pose, Vec3};
use crate::model::{Model, TreeKind};
use nalgebra::{Translation3, UnitQuaternion};

/// One collision geometry of a robot link that can touch the ground.
#[derive(Clone, Debug)]
struct LinkSlot {
    /// The link (body index) and its geometry.
    body: usize,
    geom: usize,
    /// Its tree's velocity range `[v_start, v_end)`.
    dofs: (usize, usize),
    /// Centre of mass in the link frame (m).
    com_local: Vec3,
    /// Shape and geometry frame relative to the centre of mass; `mass_kg` is the reference mass
    /// of the impulse scale (the robot's mass over its ground-touching geometries).
    ecp_body: EcpBody,
    /// The whole robot's weight impulse `M |g| h` (N·s): the scale of the sweeps' tolerance.
    robot_weight_impulse: f64,
    /// The ground pair: index and friction coefficient.
    ground_pair: (usize, f64),
    stepper: EcpStepper,
    last: EcpContact,
    /// Solved this step (near the ground).
    active: bool,
    /// Start-of-step state (centre of mass, rotation, velocities) and the end-of-step estimate
    /// of the last solve (first-order twist pose).
    start: EcpBodyState,
    end: EcpBodyState,
    /// The contact impulse applied in `v⁺`: force (N·s) and moment about the start-of-step
    /// centre of mass (N·m·s), world.
    wrench: [f64; 6],
    /// The last contact's force (N·s), friction moment (N·m·s) and ECP (world, end of step):
    /// the next step's warm start.
    force: Vec3,
    twist: Vec3,
    point: Vec3,
    /// `J`, row-major 6 × nv (rows: v_x, v_y, v_z of the centre of mass, ω_x, ω_y, ω_z).
    jac: Vec<f64>,
    /// `M̃⁻¹ Jᵀ`, stored transposed: row `r` is `M̃⁻¹ J_rᵀ` (6 × nv).
    y: Vec<f64>,
    /// `Λ⁻¹ = J M̃⁻¹ Jᵀ` (row-major).
    mobility: [[f64; 6]; 6],
}

/// The robot links the ECP scheme solves against the ground, with their joint rows.
#[derive(Clone, Debug, Default)]
pub(crate) struct RobotLinks {
    slots: Vec<LinkSlot>,
    joints: Vec<JointRows>,
    /// Per tree: a robot tree with ground-touching links.
    pub(crate) trees: Vec<bool>,
    /// Gauss–Seidel sweeps of the last step.
    pub(crate) last_sweeps: u32,
    /// The joint rows' change scale when no robot has a ground-touching slot: the weight
    /// impulse of the first robot with joint rows (N·s).
    joint_scale: f64,
    /// Scratch of a sweep: the generalised impulse `Σ_r Δλ_r J_rᵀ` the joint rows added in it,
    /// per velocity coordinate (N·m·s or N·s; length nv).
    joint_impulse_change: Vec<f64>,
}

impl RobotLinks {
    /// Slots for every robot-link geometry with a convex shape and a ground pair; the joint rows
    /// of the robots they belong to. Allocates all scratch.
    /// Every robot keeps its joint limit, joint friction and mimic rows, touching or not (a
    /// robot may touch only objects, or be pushed by them).
    pub(crate) fn new(params: &EcpParams, model: &Model, ground: Option<usize>) -> Self {
        let mut links = RobotLinks { trees: vec![false; model.trees.len()], joint_scale: 1.0, joint_impulse_change: vec![0.0; model.nv], ..Default::default() };
        let nv = model.nv;
        for (g, geom) in model.geoms.iter().enumerate() {
            let Some(ground) = ground else { break };
            let Some(b) = geom.body else { continue };
            let body = &model.bodies[b];
            let tree = &model.trees[body.tree];
            let TreeKind::Robot(_) = tree.kind else { continue };
            let Some(shape) = super::convex_shape(&geom.shape) else { continue };
            let Some(pair) = model.collision_pairs.iter().position(|p| p.with_ground && p.geom_a == ground && p.geom_b == g) else { continue };
            links.trees[body.tree] = true;
            let geom_in_body = Pose::from_parts(Translation3::from(-body.com), UnitQuaternion::identity()) * geom.x_body_geom;
            links.slots.push(LinkSlot {
                body: b,
                geom: g,
                dofs: (tree.v_start, tree.v_end),
                com_local: body.com,
                ecp_body: EcpBody { mass_kg: 0.0, inertia_body: body.inertia_com, shape, geom_in_body },
                robot_weight_impulse: 0.0,
                ground_pair: (pair, model.collision_pairs[pair].friction),
                stepper: EcpStepper::new(params.clone()),
                last: EcpContact::default(),
                active: false,
                start: super::rest_state(),
                end: super::rest_state(),
                wrench: [0.0; 6],
                force: Vec3::zeros(),
                twist: Vec3::zeros(),
                point: Vec3::zeros(),
                jac: vec![0.0; 6 * nv],
                y: vec![0.0; 6 * nv],
                mobility: [[0.0; 6]; 6],
            });
        }
        // reference mass: the robot's mass shared among its ground-touching geometries
        for t in 0..model.trees.len() {
            let tree = &model.trees[t];
            let count = links.slots.iter().filter(|s| model.bodies[s.body].tree == t).count();
            if !matches!(tree.kind, TreeKind::Robot(_)) {
                continue;
            }
            let mass: f64 = model.bodies[tree.body_start..tree.body_end].iter().map(|b| b.mass).sum();
            let weight_impulse = mass.max(1e-6) * model.gravity.norm().max(1.0) * model.timestep_s;
            if links.joints.is_empty() {
                links.joint_scale = weight_impulse;
            }
            for s in links.slots.iter_mut().filter(|s| model.bodies[s.body].tree == t) {
                s.ecp_body.mass_kg = (mass / count.max(1) as f64).max(1e-6);
                s.robot_weight_impulse = weight_impulse;
            }
            for body in &model.bodies[tree.body_start..tree.body_end] {
                let j = &body.joint;
                if j.kind.nv() == 1 && (j.position_limits.is_some() || j.friction > 0.0) {
                    links.joints.push(JointRows { limits: j.position_limits, friction: j.friction, ..JointRows::new(j.v_index, j.q_index, (tree.v_start, tree.v_end), nv) });
                }
            }
        }
        // mimic couplings of the robots kept above: one bilateral row each (the impulse solvers'
        // row `v_f − c v_l = −erp (q_f − c q_l − offset)/h`)
        for m in &model.mimics {
            let (f, l) = (&model.bodies[m.follower], &model.bodies[m.leader]);
            let tree = &model.trees[f.tree];
            let own = |dof: usize| links.joints.iter().position(|j| j.mimic.is_none() && j.dof == dof);
            let partners = own(f.joint.v_index).zip(own(l.joint.v_index));
            links.joints.push(JointRows {
                mimic: Some((l.joint.v_index, -m.multiplier, l.joint.q_index, m.multiplier, m.offset)),
                partners,
                ..JointRows::new(f.joint.v_index, f.joint.q_index, (tree.v_start, tree.v_end), nv)
            });
        }
        links
    }

    /// Whether there is anything to solve.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.joints.is_empty()
    }

    /// The ground pairs the slots own.
    pub(crate) fn owns_pair(&self, pair: usize) -> bool {
        self.slots.iter().any(|s| s.ground_pair.0 == pair)
    }

    /// One step of every robot with ground-touching links: writes v⁺ of their trees into
    /// `velocity` (which holds v* on entry). Positions are left to the engine's map.
    pub(crate) fn advance(&mut self, params: &EcpParams, input: &SchemeInput, state: &crate::state::State, velocity: &mut [f64], plane: &EcpPlane) -> SolveStats {
        let (h, gravity) = (input.model.timestep_s, input.model.gravity);
        self.prepare(input, state, velocity, plane);
        let mut stats = SolveStats { iterations: 0, residual: 0.0, converged: true };
        let mut sweeps = 0;
        let mut settled = false;
        while sweeps < params.max_sweeps && !settled && stats.iterations < params.max_step_iterations {
            let (iterations, change) = self.sweep(params, velocity, plane, &gravity, h, sweeps);
            stats.iterations += iterations;
            sweeps += 1;
            settled = change <= params.sweep_tolerance;
        }
        self.finish(sweeps, settled, &mut stats);
        stats
    }

    /// Start of a step: kinematics, activity, `J`, `M̃⁻¹ Jᵀ`, `Λ⁻¹` of every slot and the joint
    /// rows; the previous step's impulses re-applied to `velocity` as the warm start.
    pub(crate) fn prepare(&mut self, input: &SchemeInput, state: &crate::state::State, velocity: &mut [f64], plane: &EcpPlane) {
        let h = input.model.timestep_s;
        for slot in &mut self.slots {
            prepare_slot(slot, input, velocity, plane, h);
        }
        for j in &mut self.joints {
            prepare_joint(j, input.model, input, state, velocity, h);
        }
    }

    /// One Gauss–Seidel sweep (number `sweep`: even forward, odd backward) over the slots near
    /// the ground and the joint rows. Returns the Newton iterations and the largest impulse
    /// change over the robot's weight impulse `M |g| h`: a slot's contact impulse, and for the
    /// joint rows the generalised impulse they added in the sweep, per coordinate (N·m·s over
    /// 1 m, or N·s).
    ///
    /// The joint rows count by what they do to the robot, not row by row: where several rows
    /// hold the same motion their split is free, and Gauss–Seidel drifts along it with the
    /// velocities unchanged. A limit and friction on one coordinate do (2e-10 N·m·s per sweep on
    /// the arm's elbow at its upper limit); so do a mimic row and the friction of its two
    /// fingers holding a closed gripper (impulses ±4.5e-5 N·s drifting 3.4e-10 N·s per two
    /// sweeps, which kept 1 023 of 7 000 steps of `arm_push_box.yaml` under ecp at the cap).
    pub(crate) fn sweep(&mut self, params: &EcpParams, velocity: &mut [f64], plane: &EcpPlane, gravity: &Vec3, h: f64, sweep: u32) -> (u32, f64) {
        let scale = |s: &LinkSlot| s.robot_weight_impulse;
        let n_items = self.slots.len() + self.joints.len();
        let mut change: f64 = 0.0;
        let mut iterations = 0;
        self.joint_impulse_change.fill(0.0);
        for k in 0..n_items {
            let item = if sweep % 2 == 0 { k } else { n_items - 1 - k };
            if item < self.slots.len() {
                let slot = &mut self.slots[item];
                if slot.active {
                    slot.stepper.params.clone_from(params);
                    let p = scale(slot);
                    let (it, moved) = solve_slot(slot, velocity, plane, gravity, h);
                    iterations += it;
                    change = change.max(moved / p);
                }
            } else {
                solve_joint(&mut self.joints, item - self.slots.len(), velocity, &mut self.joint_impulse_change);
            }
        }
        let p = self.slots.first().map_or(self.joint_scale, scale);
        let joints_moved = self.joint_impulse_change.iter().fold(0.0_f64, |m, d| m.max(d.abs()));
        (iterations, change.max(joints_moved / p))
    }

    /// End of a step: records the sweeps and adds the slots' outcome to `stats`.
    pub(crate) fn finish(&mut self, sweeps: u32, settled: bool, stats: &mut SolveStats) {
        self.last_sweeps = sweeps;
        stats.converged &= settled;
        for s in self.slots.iter().filter(|s| s.active) {
            stats.residual = stats.residual.max(s.last.solve.residual);
            stats.converged &= s.last.solve.converged;
        }
    }

    /// Joints with rows (limits, friction or a mimic coupling).
    pub(super) fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// The active joint rows `(joint, row)`: row 0 a lower limit or a mimic coupling, 1 an
    /// upper limit, 2 friction.
    pub(super) fn active_rows(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.joints.iter().enumerate().flat_map(|(j, rows)| (0..3).filter(move |&r| rows.active[r] && rows.minv > 0.0).map(move |r| (j, r)))
    }

    /// Whether row `row` of joint `joint` is a friction row whose coordinate an active limit row
    /// also holds (the block leaves such a row to the sweeps, docs/ecp.md "A coordinate's rows as
    /// one law").
    pub(super) fn friction_held_by_limit(&self, joint: usize, row: usize) -> bool {
        let j = &self.joints[joint];
        j.mimic.is_none() && row == 2 && (j.active[0] || j.active[1])
    }

    /// Row `row` of joint `joint` as the block sees it ([`super::block::BlockRow`]): its
    /// complementarity, its tree's first velocity coordinate (the robot), `J` as up to two
    /// `(coordinate, coefficient)` terms, its current velocity `J v + b` (m/s or rad/s), `M̃⁻¹ Jᵀ`
    /// as the stored `M̃⁻¹ e` times `sign`, `J M̃⁻¹ Jᵀ` and its impulse λ along `J` (N·m·s or N·s).
    pub(super) fn block_row(&self, joint: usize, row: usize, velocity: &[f64]) -> BlockRowData<'_> {
        use super::block::RowKind;
        let j = &self.joints[joint];
        let k = j.dof;
        let (kind, terms, sign, u) = match (j.mimic, row) {
            (Some((l, coef, ..)), _) => (RowKind::Bilateral, [(k, 1.0), (l, coef)], 1.0, velocity[k] + coef * velocity[l] + j.bias[0]),
            (None, 0) => (RowKind::Unilateral, [(k, 1.0), (k, 0.0)], 1.0, velocity[k] + j.bias[0]),
            (None, 1) => (RowKind::Unilateral, [(k, -1.0), (k, 0.0)], -1.0, -velocity[k] + j.bias[1]),
            (None, _) => (RowKind::Box { bound: j.friction_bound }, [(k, 1.0), (k, 0.0)], 1.0, velocity[k]),
        };
        BlockRowData { kind, robot: j.dofs.0, terms, velocity: u, y: &j.y, sign, minv: j.minv, lambda: j.lambda[row] }
    }

    /// Sets the impulse of row `row` of joint `joint` to `lambda` and applies the change to
    /// `velocity`.
    pub(super) fn set_row_impulse(&mut self, joint: usize, row: usize, lambda: f64, velocity: &mut [f64]) {
        let j = &mut self.joints[joint];
        let sign = if j.mimic.is_none() && row == 1 { -1.0 } else { 1.0 };
        axpy_range(sign * (lambda - j.lambda[row]), &j.y, velocity, j.dofs);
        j.lambda[row] = lambda;
    }

    /// Appends the last step's link contacts in contact to `solved`.
    pub(crate) fn report(&self, plane: &EcpPlane, ground_geom: usize, solved: &mut Vec<SolvedContact>) {
        for s in self.slots.iter().filter(|s| s.active && s.last.in_contact) {
            let (pair, mu) = s.ground_pair;
            let c = &s.last;
            solved.push(SolvedContact {
                pair,
                contact: Contact {
                    key: contact_key(pair),
                    body_a: None,
                    body_b: Some(s.body),
                    geom_a: ground_geom,
                    geom_b: s.geom,
                    position: carry_to_start(&s.start, &s.end, &c.ecp_m),
                    normal: plane.normal,
                    tangent1: plane.tangent1,
                    tangent2: plane.tangent2,
                    distance: 0.0,
                    friction: mu,
                },
                impulse: [c.normal_impulse, c.tangent_impulse[0], c.tangent_impulse[1], c.torsion_impulse],
            });
        }
    }

    /// The last step's contact of each ground-touching link geometry: `(link body index,
    /// geometry index, contact)`.
    pub(crate) fn last_contacts(&self) -> impl Iterator<Item = (usize, usize, &EcpContact)> {
        self.slots.iter().map(|s| (s.body, s.geom, &s.last))
    }
}

/// A joint row as the block reads it ([`RobotLinks::block_row`]).
pub(super) struct BlockRowData<'a> {
    pub(super) kind: super::block::RowKind,
    pub(super) robot: usize,
    pub(super) terms: [(usize, f64); 2],
    pub(super) velocity: f64,
    pub(super) y: &'a [f64],
    pub(super) sign: f64,
    pub(super) minv: f64,
    pub(super) lambda: f64,
}

/// The twist `ν = J v` of a link (m/s then rad/s, world axes, at its centre of mass) from the
/// rows of its Jacobian `jac` (6 × nv, row-major) over its tree's coordinates `dofs`.
pub(super) fn link_twist(jac: &[f64], velocity: &[f64], dofs: (usize, usize)) -> [f64; 6] {
    let nv = velocity.len();
    std::array::from_fn(|r| dot_range(&jac[r * nv..(r + 1) * nv], velocity, dofs))
}

/// A link's operational-space mobility: `y ← M̃⁻¹ Jᵀ` (stored transposed, 6 × nv) and
/// `mobility ← Λ⁻¹ = J M̃⁻¹ Jᵀ` (m/s per N·s, rad/s per N·m·s).
pub(super) fn link_mobility(input: &SchemeInput, dofs: (usize, usize), jac: &[f64], y: &mut [f64], mobility: &mut [[f64; 6]; 6]) {
    let nv = input.model.nv;
    for r in 0..6 {
        let (jr, yr) = (&jac[r * nv..(r + 1) * nv], &mut y[r * nv..(r + 1) * nv]);
        yr.copy_from_slice(jr);
        solve_mass(input, dofs, yr);
    }
    for (r, row) in mobility.iter_mut().enumerate() {
        for (c, m) in row.iter_mut().enumerate() {
            *m = dot_range(&jac[r * nv..(r + 1) * nv], &y[c * nv..(c + 1) * nv], dofs);
        }
    }
}

/// Applies a wrench impulse `[F; M]` (N·s, N·m·s about the link's centre of mass) on a link to
/// the generalized velocity: `v ← v + M̃⁻¹ Jᵀ W`.
pub(super) fn apply_link_wrench(wrench: &[f64; 6], y: &[f64], velocity: &mut [f64], dofs: (usize, usize)) {
    let nv = velocity.len();
    for (r, w) in wrench.iter().enumerate() {
        axpy_range(*w, &y[r * nv..(r + 1) * nv], velocity, dofs);
    }
}

/// A link as a moving body of the contact residual, with its own impulse `wrench` taken out
/// of the current velocity: `ν_free = J v⁺ − Λ⁻¹ W`. Its response to this contact's impulse is
/// `mobility`; everything else acting on the robot stays frozen in `velocity`. Returns the
/// moving body and `ν_free` (linear, angular).
#[allow(clippy::too_many_arguments)]
pub(super) fn link_free_motion(
    body: &EcpBody,
    start: &EcpBodyState,
    jac: &[f64],
    mobility: &[[f64; 6]; 6],
    wrench: &[f64; 6],
    velocity: &[f64],
    dofs: (usize, usize),
    h: f64,
) -> (mncp::MovingBody, (Vec3, Vec3)) {
    let twist = link_twist(jac, velocity, dofs);
    let nu: [f64; 6] = std::array::from_fn(|r| twist[r] - (0..6).map(|c| mobility[r][c] * wrench[c]).sum::<f64>());
    let (v_free, w_free) = (Vec3::new(nu[0], nu[1], nu[2]), Vec3::new(nu[3], nu[4], nu[5]));
    let free_state = EcpBodyState { velocity: v_free, angular_velocity: w_free, ..*start };
    let (mut moving, _, _) = mncp::moving_body(body, &free_state, &(Vec3::zeros(), Vec3::zeros()), &Vec3::zeros(), h);
    moving.mobility = Some(*mobility);
    moving.impulse_linear = [0.0; 3];
    moving.impulse_angular = [0.0; 3];
    (moving, (v_free, w_free))
}

/// A link's start-of-step state (centre of mass `com_local` in the link frame, world velocity
/// and angular velocity) and its Jacobian `J` at the centre of mass into `jac` (row-major
/// 6 × nv, rows `v_x, v_y, v_z, ω_x, ω_y, ω_z`).
pub(super) fn link_kinematics(input: &SchemeInput, body: usize, com_local: &Vec3, jac: &mut [f64]) -> EcpBodyState {
    let model = input.model;
    let nv = model.nv;
    let pose = &input.body_pose[body];
    let sv = &input.body_velocity[body];
    let com = pose * nalgebra::Point3::from(*com_local);
    let w = Vec3::new(sv[0], sv[1], sv[2]);
    let v = Vec3::new(sv[3], sv[4], sv[5]) + w.cross(&com.coords);
    jac.fill(0.0);
    for r in 0..6 {
        let row = &mut jac[r * nv..(r + 1) * nv];
        let axis = Vec3::ith(r % 3, 1.0);
        if r < 3 {
            add_point_jacobian_row(model, input.dof_axis, body, &com.coords, &axis, 1.0, row);
        } else {
            add_angular_jacobian_row(model, input.dof_axis, body, &axis, 1.0, row);
        }
    }
    EcpBodyState { com_m: com.coords, rotation: pose.rotation, velocity: v, angular_velocity: w }
}

/// The link's start-of-step state, whether it can reach the ground this step, and when it can
/// its `J`, `M̃⁻¹ Jᵀ` and `Λ⁻¹`, with the previous step's impulse re-applied to `velocity`.
fn prepare_slot(slot: &mut LinkSlot, input: &SchemeInput, velocity: &mut [f64], plane: &EcpPlane, h: f64) {
    slot.start = link_kinematics(input, slot.body, &slot.com_local, &mut slot.jac);
    slot.end = slot.start;
    let (com, v, w) = (slot.start.com_m, slot.start.velocity, slot.start.angular_velocity);
    let pose = &input.body_pose[slot.body];
    let dofs = slot.dofs;
    // reach: the geometry's gap at the start against how far it can move this step (start and
    // free velocities), with the same 1 % of its size margin as the body pairs
    let free_twist = link_twist(&slot.jac, velocity, dofs);
    let b = &slot.ecp_body;
    let lever = b.shape.bounding_radius_m() + b.geom_in_body.translation.vector.norm();
    let speed = |lin: Vec3, ang: Vec3| lin.norm() + ang.norm() * lever;
    let travel = h * (speed(v, w) + speed(Vec3::new(free_twist[0], free_twist[1], free_twist[2]), Vec3::new(free_twist[3], free_twist[4], free_twist[5])));
    let geom = Pose::from_parts(com.into(), pose.rotation) * b.geom_in_body;
    let gap = b.shape.plane_gap(&geom.translation.vector, &geom.rotation.to_rotation_matrix().into_inner(), &plane.normal, plane.offset_m);
    slot.active = gap <= travel + 0.01 * b.shape.size_m();
    if !slot.active {
        slot.stepper.reset();
        slot.last = EcpContact { solve: super::SolveOutcome { iterations: 0, residual: 0.0, converged: true }, ..Default::default() };
        slot.wrench = [0.0; 6];
        slot.force = Vec3::zeros();
        slot.twist = Vec3::zeros();
        return;
    }
    link_mobility(input, dofs, &slot.jac, &mut slot.y, &mut slot.mobility);
    // warm start: the last contact's impulse, its moment about the new centre of mass
    let moment = (slot.point - com).cross(&slot.force) + slot.twist;
    slot.wrench = [slot.force.x, slot.force.y, slot.force.z, moment.x, moment.y, moment.z];
    apply_link_wrench(&slot.wrench, &slot.y, velocity, dofs);
}

/// Solves one link against the plane with everything else frozen in `velocity`; applies the
/// change of its impulse to `velocity`. Returns the Newton iterations and the change of the
/// impulse (`‖ΔF‖ + ‖ΔM‖ / 1 m`, N·s).
fn solve_slot(slot: &mut LinkSlot, velocity: &mut [f64], plane: &EcpPlane, gravity: &Vec3, h: f64) -> (u32, f64) {
    let dofs = slot.dofs;
    // ν_free = J v⁺ − Λ⁻¹ W (this contact's own share removed)
    let (moving, (v_free, w_free)) = link_free_motion(&slot.ecp_body, &slot.start, &slot.jac, &slot.mobility, &slot.wrench, velocity, dofs, h);
    let pl = EcpPlane { friction: slot.ground_pair.1, ..*plane };
    let load = gravity * (slot.ecp_body.mass_kg * h);
    let mut end = slot.start;
    let mut c = slot.stepper.solve_against(&slot.ecp_body, &mut end, Some(&pl), gravity, h, moving, (v_free, w_free), &load);
    onto_limit_surface(&mut c, pl.friction, &slot.stepper.params);
    slot.end = end;
    slot.last = c;
    let (force, twist) = if c.in_contact {
        (pl.normal * c.normal_impulse + pl.tangent1 * c.tangent_impulse[0] + pl.tangent2 * c.tangent_impulse[1], pl.normal * c.torsion_impulse)
    } else {
        (Vec3::zeros(), Vec3::zeros())
    };
    let moment = (c.ecp_m - slot.start.com_m).cross(&force) + twist;
    let wrench = [force.x, force.y, force.z, moment.x, moment.y, moment.z];
    let delta: [f64; 6] = std::array::from_fn(|r| wrench[r] - slot.wrench[r]);
    apply_link_wrench(&delta, &slot.y, velocity, dofs);
    let (df, dm) = (delta[..3].iter().map(|d| d * d).sum::<f64>(), delta[3..].iter().map(|d| d * d).sum::<f64>());
    slot.wrench = wrench;
    (slot.force, slot.twist, slot.point) = (force, twist, c.ecp_m);
    (c.solve.iterations, df.sqrt() + dm.sqrt())
}

/// Scales a link's ground-contact friction `(p_t, p_o, p_r)` onto its limit surface
/// `(p_t/e_t)² + (p_o/e_o)² + (p_r/e_r)² ≤ μ² p_n²` where the solve left it outside.
///
/// The body–plane solve meets the limit surface as a quadratic condition to its residual
/// tolerance, so near `p_n = 0` its friction can lie outside the surface by about the square
/// root of that tolerance: on the arm pushing the box (`arm_push_box.yaml` under ecp, 5.212 s)
/// a fingertip grazing the floor came out of successive sweeps with `p_n` between 1e-30 and
/// 3e-7 N·s and a friction of 1e-8 to 9e-7 N·s, which moved the robot by more than the sweeps'
/// tolerance every sweep: 26 858 and 19 176 Newton iterations, 230 and 145 ms, both steps
/// unconverged. Projected, the friction of a barely touching contact is as small as its normal
/// impulse and the sweeps settle (889 and 384 iterations). A contact inside the surface is left
/// as it is; one sliding on it is scaled by a factor that differs from 1 by about the solve's
/// residual. The reported impulse and the one applied to the robot are the projected one.
fn onto_limit_surface(c: &mut EcpContact, mu: f64, params: &EcpParams) {
    if !c.in_contact {
        return;
    }
    let [pt, po] = c.tangent_impulse;
    let pr = c.torsion_impulse;
    let size = ((pt / params.e_t).powi(2) + (po / params.e_o).powi(2) + (pr / params.e_r_m).powi(2)).sqrt();
    let radius = mu * c.normal_impulse.max(0.0);
    if size > radius {
        let k = if size > 0.0 { radius / size } else { 0.0 };
        c.tangent_impulse = [pt * k, po * k];
        c.torsion_impulse = pr * k;
    }
}

impl RobotLinks {
    /// The sizes of the links' history: (link geometries, joint rows).
    pub(super) fn history_len(&self) -> (usize, usize) {
        (self.slots.len(), self.joints.len())
    }

    /// Writes the links' history (see [`super::history`]).
    pub(super) fn history(&self, links: &mut [BodyHistory], joints: &mut [JointHistory]) {
        for (h, s) in links.iter_mut().zip(&self.slots) {
            *h = BodyHistory {
                warm: s.stepper.warm,
                last: s.last,
                active: s.active,
                start: s.start,
                end: s.end,
                wrench: s.wrench,
                force: s.force,
                twist: s.twist,
                point: s.point,
                ..BodyHistory::fresh()
            };
        }
        for (h, j) in joints.iter_mut().zip(&self.joints) {
            *h = JointHistory { active: j.active, bias: j.bias, lambda: j.lambda, friction_bound: j.friction_bound };
        }
    }

    /// Takes the links' history.
    pub(super) fn set_history(&mut self, links: &[BodyHistory], joints: &[JointHistory]) {
        for (s, h) in self.slots.iter_mut().zip(links) {
            s.set_history(h);
        }
        for (j, h) in self.joints.iter_mut().zip(joints) {
            (j.active, j.bias, j.lambda, j.friction_bound) = (h.active, h.bias, h.lambda, h.friction_bound);
        }
    }

    /// The history of a new run.
    pub(super) fn reset_history(&mut self) {
        let fresh = BodyHistory::fresh();
        for s in &mut self.slots {
            s.set_history(&fresh);
        }
        let none = JointHistory::default();
        for j in &mut self.joints {
            (j.active, j.bias, j.lambda, j.friction_bound) = (none.active, none.bias, none.lambda, none.friction_bound);
        }
    }
}

impl LinkSlot {
    fn set_history(&mut self, h: &BodyHistory) {
        (self.stepper.warm, self.last, self.active, self.start, self.end) = (h.warm, h.last, h.active, h.start, h.end);
        (self.wrench, self.force, self.twist, self.point) = (h.wrench, h.force, h.twist, h.point);
    }
}
