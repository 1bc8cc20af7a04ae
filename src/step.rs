//! One time step: `step(&Model, &mut State, &mut Workspace, &Commands) -> StepReport`.
//!
//! Velocity-level, semi-implicit (symplectic) Euler with constraint impulses
//! (Stewart–Trinkle / Anitescu–Potra form):
//!
//! ```text
//!   M̃ (v⁺ − v) = dt (τ − h(q, v) + τ_implicit) + Jᵀ λ
//!   q⁺ = q ⊕ dt v⁺
//! ```
//!
//! with `M̃ = M + dt (D + K_d + dt K_p)`: joint damping `D` and the PD / velocity servos are
//! integrated implicitly (`τ_pd = K_p (q_ref − q − dt v⁺) + K_d (v_ref − v⁺)`), which keeps stiff
//! gains stable at 1 kHz on light links. λ holds the contact, joint-limit, joint-friction and mimic
//! impulses, found by the configured solver on the [`crate::contact::ContactProblem`].
//!
//! Effort limits: if the explicit estimate of a servo's torque exceeds the joint's effort limit,
//! that joint is saturated at the limit (an effort command) for this step.
//!
//! Nothing here allocates: every buffer comes from the [`Workspace`].

use crate::collision;
use crate::contact::{ContactSolver, SolveStats};
use crate::dynamics;
use crate::kinematics::{self, add_point_jacobian_row};
use crate::math::{integrate_rotation, Vec3};
use crate::model::{ControlMode, JointKind, Model};
use crate::state::{State, WarmContact};
use crate::workspace::{JointRow, JointRowKind, Workspace};
use nalgebra::{Quaternion, UnitQuaternion};

/// Targets and modes for the actuated joints, indexed by velocity coordinate.
#[derive(Clone, Debug)]
pub struct Commands {
    /// Command mode and gains per velocity coordinate.
    pub mode: Vec<ControlMode>,
    /// Position target (rad or m) per velocity coordinate (used by `position` mode).
    pub position: Vec<f64>,
    /// Velocity target (rad/s or m/s) (used by `position` and `velocity` modes).
    pub velocity: Vec<f64>,
    /// Feed-forward effort (N·m or N) (all modes except `passive`).
    pub effort: Vec<f64>,
}

impl Commands {
    /// Overwrites `self` with `other` (commands of the same model) without allocating.
    pub fn copy_from(&mut self, other: &Commands) {
        let Commands { mode, position, velocity, effort } = other;
        self.mode.copy_from_slice(mode);
        self.position.copy_from_slice(position);
        self.velocity.copy_from_slice(velocity);
        self.effort.copy_from_slice(effort);
    }

    /// The model's default modes, holding the initial positions.
    pub fn new(model: &Model) -> Self {
        let mut position = vec![0.0; model.nv];
        for b in &model.bodies {
            if b.joint.kind.nv() == 1 {
                position[b.joint.v_index] = model.q_init[b.joint.q_index];
            }
        }
        Commands { mode: model.default_control.clone(), position, velocity: vec![0.0; model.nv], effort: vec![0.0; model.nv] }
    }
    /// Sets a position target by joint name; `false` if there is no such one-DOF joint.
    pub fn set_position(&mut self, model: &Model, joint: &str, value: f64) -> bool {
        match model.joint_dof(joint) {
            Some(k) => {
                self.position[k] = value;
                true
            }
            None => false,
        }
    }
}

/// What happened during a step. Physics never fails mid-run; problems are reported here.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct StepReport {
    /// Contact points this step.
    pub contacts: usize,
    /// Joint constraint rows this step.
    pub joint_rows: usize,
    /// Solver statistics.
    pub solve: SolveStats,
    /// Contacts dropped because `contact.max_contacts` was reached.
    pub dropped_contacts: usize,
    /// Geometry pairs the narrow phase could not handle.
    pub unsupported_pairs: usize,
    /// Joints saturated at their effort limit.
    pub saturated_joints: usize,
    /// The mass matrix was not positive definite (the step was skipped).
    pub singular_mass_matrix: bool,
    /// The state became non-finite; it was restored to the previous one and velocities zeroed.
    pub non_finite_state: bool,
    /// Deepest penetration among the contacts before the step (m, ≥ 0).
    pub max_penetration_m: f64,
}

const NO_TREE: usize = usize::MAX;

/// Advances the simulation by one time step.
pub fn step(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands) -> StepReport {
    let dt = model.timestep_s;
    let nv = model.nv;
    let mut report = StepReport::default();

    // 1. kinematics and collision
    kinematics::forward_kinematics(model, &state.q, &state.v, ws);
    let coll = collision::detect(model, &ws.body_pose, &ws.body_velocity, &mut ws.collision, &mut ws.contacts);
    report.dropped_contacts = coll.dropped_contacts;
    report.unsupported_pairs = coll.unsupported_pairs;
    report.contacts = ws.contacts.len();
    report.max_penetration_m = ws.contacts.iter().map(|c| (-c.distance).max(0.0)).fold(0.0, f64::max);

    // 2. dynamics terms
    dynamics::update_body_inertias(model, ws);
    dynamics::mass_matrix(model, ws);
    dynamics::bias_forces(model, ws, &state.v);

    // 3. actuation and implicit terms: M̃ and f
    ws.mass_factor.copy_from(&ws.mass_matrix);
    for k in 0..nv {
        ws.generalized_force[k] = -ws.bias[k];
        ws.applied_effort[k] = 0.0;
    }
    for body in &model.bodies {
        let j = &body.joint;
        if j.kind.nv() != 1 {
            continue;
        }
        let k = j.v_index;
        let (q, v) = (state.q[j.q_index], state.v[k]);
        let limit = j.effort_limit;
        let ff = cmd.effort[k];
        let v_ref = cmd.velocity[k].clamp(-j.velocity_limit, j.velocity_limit);
        // (stiffness, damping, explicit torque at v⁺ = v)
        let servo = match cmd.mode[k] {
            ControlMode::Passive => None,
            ControlMode::Effort => Some((0.0, 0.0, ff)),
            ControlMode::Position { kp, kd } => Some((kp, kd, kp * (cmd.position[k] - q) + kd * (v_ref - v) + ff)),
            ControlMode::Velocity { kd } => Some((0.0, kd, kd * (v_ref - v) + ff)),
        };
        if let Some((kp, kd, tau_explicit)) = servo {
            if tau_explicit.abs() > limit || (kp == 0.0 && kd == 0.0) {
                let tau = tau_explicit.clamp(-limit, limit);
                if tau_explicit.abs() > limit {
                    report.saturated_joints += 1;
                }
                ws.generalized_force[k] += tau;
                ws.applied_effort[k] = tau;
            } else {
                // implicit: τ = tau_explicit − (kd + dt kp)(v⁺ − v) − dt kp v
                ws.mass_factor.add_to_diagonal(k, dt * (kd + dt * kp));
                let tau = tau_explicit - dt * kp * v;
                ws.generalized_force[k] += tau;
                ws.applied_effort[k] = tau; // corrected with the implicit part after the solve
            }
        }
        if j.damping > 0.0 {
            ws.mass_factor.add_to_diagonal(k, dt * j.damping);
            ws.generalized_force[k] -= j.damping * v;
        }
    }
    // velocity-space solvers (V-FPI) read M̃ itself, as a dense matrix; the others only its factor
    if ws.fem.is_some() || matches!(ws.solver, crate::contact::Solver::Vfpi(_)) {
        ws.mass_factor.write_dense(ws.mass_tilde.as_mut_slice());
    }
    ws.start_velocity.as_mut_slice().copy_from_slice(&state.v);
    if !dynamics::factorize(ws) {
        report.singular_mass_matrix = true;
        return report;
    }

    // 4. free velocity v* = v + M̃⁻¹ dt f
    free_velocity(model, state, ws, dt);
    if model.midpoint_bias {
        // Predictor-corrector on the velocity-dependent bias: re-evaluate h at the midpoint
        // velocity ½ (v + v*), which removes the first-order energy drift of evaluating the
        // Coriolis / centrifugal terms at the start of the step.
        for k in 0..nv {
            ws.scratch_nv[k] = 0.5 * (state.v[k] + ws.free_velocity[k]);
            ws.generalized_force[k] += ws.bias[k];
        }
        let v_mid = std::mem::take(&mut ws.scratch_nv); // moves the buffer, no allocation
        kinematics::update_body_velocities(model, v_mid.as_slice(), ws);
        dynamics::bias_forces(model, ws, v_mid.as_slice());
        ws.scratch_nv = v_mid;
        for k in 0..nv {
            ws.generalized_force[k] -= ws.bias[k];
            ws.scratch_nv[k] = 0.0;
        }
        kinematics::update_body_velocities(model, &state.v, ws);
        free_velocity(model, state, ws, dt);
    }

    // 5. constraint rows
    build_joint_rows(model, state, ws);
    let nc = ws.contacts.len();
    let nj = ws.joint_rows.len();
    let m = 3 * nc + nj;
    report.joint_rows = nj;
    build_jacobian(model, state, ws, dt);
    build_delassus(model, ws, m);
    warm_start(model, state, ws);

    // 6. solve (scenes with deformables: one coupled V-FPI solve, see `solve_coupled`)
    if ws.fem.is_some() {
        report.solve = solve_coupled(model, state, ws, m);
        let f = ws.fem.as_ref().unwrap();
        report.contacts += f.contacts.len();
        report.max_penetration_m = f.contacts.iter().map(|c| (-c.distance).max(0.0)).fold(report.max_penetration_m, f64::max);
    } else {
        let (problem, impulse, solver) = ws.split_for_solve();
        report.solve = solver.solve(&problem, impulse);
    }

    // 7. v⁺ = v* + M̃⁻¹ Jᵀ λ = v* + L⁻¹ (Z λ) (M̃ = Lᵀ L, Z = L⁻ᵀ Jᵀ), integrate q
    for i in 0..m {
        let l = ws.impulse[i];
        if l != 0.0 {
            let (t0, t1) = ws.row_trees[i];
            for t in [t0, t1] {
                if t == NO_TREE {
                    continue;
                }
                let tr = &model.trees[t];
                let z = &ws.factor_jt[i * nv..(i + 1) * nv];
                for k in tr.v_start..tr.v_end {
                    ws.scratch_nv[k] += l * z[k];
                }
            }
        }
    }
    if let Some(f) = ws.fem.as_mut() {
        // deformable contacts on rigid trees: Z-space image L⁻ᵀ (J_Dᵀ λ_D)
        for t in &model.trees {
            ws.mass_factor.solve_lt(t.v_start, t.v_end, f.rigid_impulse.as_mut_slice());
        }
        for k in 0..nv {
            ws.scratch_nv[k] += f.rigid_impulse[k];
        }
    }
    for t in &model.trees {
        ws.mass_factor.solve_l(t.v_start, t.v_end, ws.scratch_nv.as_mut_slice());
    }
    for k in 0..nv {
        ws.scratch_nv[k] += ws.free_velocity[k];
    }
    for k in 0..nv {
        ws.acceleration[k] = (ws.scratch_nv[k] - state.v[k]) / dt;
    }
    // servo effort actually applied, with the implicit part evaluated at v⁺
    for body in &model.bodies {
        let j = &body.joint;
        if j.kind.nv() != 1 {
            continue;
        }
        let k = j.v_index;
        let dv = ws.scratch_nv[k] - state.v[k];
        let implicit = match cmd.mode[k] {
            ControlMode::Position { kp, kd } => kd + dt * kp,
            ControlMode::Velocity { kd } => kd,
            _ => 0.0,
        };
        let saturated = ws.applied_effort[k].abs() >= j.effort_limit;
        if !saturated && implicit != 0.0 {
            ws.applied_effort[k] -= implicit * dv;
        }
    }
    if !ws.scratch_nv.iter().all(|x| x.is_finite()) {
        report.non_finite_state = true;
        for k in 0..nv {
            state.v[k] = 0.0;
            ws.scratch_nv[k] = 0.0;
        }
        return report;
    }
    for k in 0..nv {
        state.v[k] = ws.scratch_nv[k];
        ws.scratch_nv[k] = 0.0;
    }
    accumulate_body_contact_forces(model, ws);
    if ws.fem.is_some() {
        accumulate_fem_contact_forces(model, ws);
    }
    if !model.sensors.is_empty() {
        update_sensors(model, state, ws, dt);
    }
    if let Some(f) = ws.fem.as_ref() {
        match f.system.integrator {
            crate::fem::FemIntegrator::BackwardEuler => {
                for (x, v) in state.fem_x.iter_mut().zip(&state.fem_v) {
                    *x += dt * v;
                }
            }
            crate::fem::FemIntegrator::Midpoint => {
                for ((x, v), v0) in state.fem_x.iter_mut().zip(&state.fem_v).zip(&f.velocity_start) {
                    *x += 0.5 * dt * (v + v0);
                }
            }
        }
    }
    integrate_positions(model, state, dt);
    save_warm_start(state, ws);
    state.time_s = advance_time(state.time_s, dt);
    state.step_count += 1;
    report
}

/// `t + dt` kept on the nanosecond grid (the resolution of ROS and bag time stamps): summing
/// `dt = 0.001` in floating point drifts off the grid (after 180 000 steps a 1 kHz run's stamps
/// would be 1 ns uneven); rounding each sum to whole nanoseconds keeps every stamp exact as long
/// as `dt` is a whole number of nanoseconds.
#[inline]
fn advance_time(t: f64, dt: f64) -> f64 {
    ((t + dt) * 1e9).round() / 1e9
}

/// Contact force of the step on each body (spatial force about the world origin, N).
fn accumulate_body_contact_forces(model: &Model, ws: &mut Workspace) {
    ws.body_contact_force.iter_mut().for_each(|f| *f = crate::math::Vec6::zeros());
    let dt = model.timestep_s;
    for (i, c) in ws.contacts.iter().enumerate() {
        let l = &ws.impulse[3 * i..3 * i + 3];
        let f = (c.normal * l[0] + c.tangent1 * l[1] + c.tangent2 * l[2]) / dt;
        let w = crate::sensors::force_at_point(&f, &c.position);
        if let Some(b) = c.body_b {
            ws.body_contact_force[b] += w;
        }
        if let Some(a) = c.body_a {
            ws.body_contact_force[a] -= w;
        }
    }
}

/// F/T sensors: the wrench the child subtree exerts on the parent across each sensor's fixed
/// joint, from RNEA with the step's accelerations (velocity products at the midpoint velocity,
/// gravity) and the contact forces on the subtree; then the emulation chain at the sensor rate.
/// See [`crate::sensors`] for frames and signs. `state.v` holds v⁺ here.
fn update_sensors(model: &Model, state: &mut State, ws: &mut Workspace, dt: f64) {
    let nv = model.nv;
    for k in 0..nv {
        ws.scratch_nv[k] = state.v[k] - 0.5 * dt * ws.acceleration[k];
    }
    let v_mid = std::mem::take(&mut ws.scratch_nv); // moves the buffer, no allocation
    let acc = std::mem::take(&mut ws.acceleration);
    kinematics::update_body_velocities(model, v_mid.as_slice(), ws);
    dynamics::rnea_forces(model, ws, v_mid.as_slice(), Some(acc.as_slice()));
    ws.scratch_nv = v_mid;
    ws.acceleration = acc;
    ws.scratch_nv.fill(0.0);
    for (sensor, st) in model.sensors.iter().zip(state.sensors.iter_mut()) {
        let c = sensor.body;
        let mut w = -ws.body_force[c];
        for b in c..ws.subtree_end[c] {
            w += ws.body_contact_force[b];
        }
        let x_ws = ws.body_pose[c] * sensor.x_body_sensor;
        let ideal = crate::sensors::wrench_in_frame(&w, &x_ws);
        st.ideal = ideal;
        if state.step_count % sensor.steps_per_sample == 0 {
            st.sample(&sensor.emulation, &ideal, dt * sensor.steps_per_sample as f64);
        }
    }
    kinematics::update_body_velocities(model, &state.v, ws);
}

/// v* = v + M̃⁻¹ dt f, with `f` in `ws.generalized_force`.
fn free_velocity(model: &Model, state: &State, ws: &mut Workspace, dt: f64) {
    for k in 0..model.nv {
        ws.scratch_nv[k] = dt * ws.generalized_force[k];
    }
    dynamics::solve(model, &ws.mass_factor, ws.scratch_nv.as_mut_slice());
    for k in 0..model.nv {
        ws.free_velocity[k] = state.v[k] + ws.scratch_nv[k];
        ws.scratch_nv[k] = 0.0;
    }
}

/// q⁺ = q ⊕ dt v (free joints: world position from the body-frame velocity, quaternion
/// exponential map).
pub fn integrate_positions(model: &Model, state: &mut State, dt: f64) {
    for body in &model.bodies {
        let j = &body.joint;
        match j.kind {
            JointKind::Fixed => {}
            JointKind::Revolute | JointKind::Prismatic => state.q[j.q_index] += dt * state.v[j.v_index],
            JointKind::Free => {
                let (qi, vi) = (j.q_index, j.v_index);
                let rot = UnitQuaternion::new_normalize(Quaternion::new(state.q[qi + 6], state.q[qi + 3], state.q[qi + 4], state.q[qi + 5]));
                let v_body = Vec3::new(state.v[vi], state.v[vi + 1], state.v[vi + 2]);
                let w_body = Vec3::new(state.v[vi + 3], state.v[vi + 4], state.v[vi + 5]);
                let dp = rot * v_body * dt;
                state.q[qi] += dp.x;
                state.q[qi + 1] += dp.y;
                state.q[qi + 2] += dp.z;
                let r = integrate_rotation(&rot, &w_body, dt);
                let c = r.quaternion();
                state.q[qi + 3] = c.i;
                state.q[qi + 4] = c.j;
                state.q[qi + 5] = c.k;
                state.q[qi + 6] = c.w;
            }
        }
    }
}

/// Joint limit, joint friction and mimic rows of this step.
fn build_joint_rows(model: &Model, state: &State, ws: &mut Workspace) {
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
/// each row touches.
fn build_jacobian(model: &Model, state: &State, ws: &mut Workspace, dt: f64) {
    let nv = model.nv;
    let nc = ws.contacts.len();
    let m = 3 * nc + ws.joint_rows.len();
    ws.jacobian[..m * nv].fill(0.0);
    let erp = model.contact.erp;
    let slop = model.contact.slop_m;
    for (ci, c) in ws.contacts.iter().enumerate() {
        ws.friction[ci] = c.friction;
        let tree_a = c.body_a.map(|b| model.bodies[b].tree).unwrap_or(NO_TREE);
        let tree_b = c.body_b.map(|b| model.bodies[b].tree).unwrap_or(NO_TREE);
        let (ta, tb) = if tree_a == tree_b { (tree_a, NO_TREE) } else { (tree_a, tree_b) };
        for (r, d) in [c.normal, c.tangent1, c.tangent2].iter().enumerate() {
            let i = 3 * ci + r;
            let row = &mut ws.jacobian[i * nv..(i + 1) * nv];
            if let Some(b) = c.body_b {
                add_point_jacobian_row(model, &ws.dof_axis, b, &c.position, d, 1.0, row);
            }
            if let Some(a) = c.body_a {
                add_point_jacobian_row(model, &ws.dof_axis, a, &c.position, d, -1.0, row);
            }
            ws.row_trees[i] = if ta == NO_TREE { (tb, NO_TREE) } else { (ta, tb) };
            let mut u = 0.0;
            for k in 0..nv {
                u += row[k] * ws.free_velocity[k];
            }
            // bias: speculative gap closing / Baumgarte penetration recovery (normal only)
            let bias = if r == 0 {
                if c.distance >= 0.0 {
                    c.distance / dt
                } else {
                    -erp * (-c.distance - slop).max(0.0) / dt
                }
            } else {
                0.0
            };
            ws.free_constraint_velocity[i] = u + bias;
        }
    }
    for (r, row_def) in ws.joint_rows.iter().enumerate() {
        let i = 3 * nc + r;
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
        let mut u = 0.0;
        for k in 0..nv {
            u += row[k] * ws.free_velocity[k];
        }
        ws.free_constraint_velocity[i] = u + bias;
        ws.row_lower[r] = lo;
        ws.row_upper[r] = hi;
        ws.row_trees[i] = (model.bodies[body].tree, NO_TREE);
    }
}

/// Z = L⁻ᵀ Jᵀ (row by row, only over the trees a row touches) and G = J M̃⁻¹ Jᵀ = Zᵀ Z
/// (M̃ = Lᵀ L, see [`dynamics::factorize`]).
fn build_delassus(model: &Model, ws: &mut Workspace, m: usize) {
    let nv = model.nv;
    for i in 0..m {
        let (t0, t1) = ws.row_trees[i];
        let (jac, z) = (&ws.jacobian[i * nv..(i + 1) * nv], &mut ws.factor_jt[i * nv..(i + 1) * nv]);
        z.copy_from_slice(jac);
        for t in [t0, t1] {
            if t != NO_TREE {
                let tr = &model.trees[t];
                ws.mass_factor.solve_lt(tr.v_start, tr.v_end, z);
            }
        }
    }
    for i in 0..m {
        let (a0, a1) = ws.row_trees[i];
        let zi = &ws.factor_jt[i * nv..(i + 1) * nv];
        for j in i..m {
            let (b0, b1) = ws.row_trees[j];
            let zj = &ws.factor_jt[j * nv..(j + 1) * nv];
            let mut g = 0.0;
            for t in [a0, a1] {
                if t != NO_TREE && (t == b0 || t == b1) {
                    let tr = &model.trees[t];
                    g += zi[tr.v_start..tr.v_end].iter().zip(&zj[tr.v_start..tr.v_end]).map(|(a, b)| a * b).sum::<f64>();
                }
            }
            ws.delassus[i * m + j] = g;
            ws.delassus[j * m + i] = g;
        }
    }
}

/// Initial impulses from the previous step's matching contacts and joint rows: writes
/// `ws.impulse[..ws.num_rows()]` for the contacts and joint rows in `ws` from the impulses stored
/// in `state` (contacts matched by key, re-expressed in the current contact frames).
///
/// `step` calls it before solving. After a step, calling it with a copy of the state from before
/// the step reproduces the warm start the solver received (benchmarks and tests re-solve the
/// step's problem that way).
pub fn warm_start(_model: &Model, state: &State, ws: &mut Workspace) {
    let nc = ws.contacts.len();
    for (ci, c) in ws.contacts.iter().enumerate() {
        let i = 3 * ci;
        let prev = state.warm_contacts.iter().find(|w| w.key == c.key);
        match prev {
            Some(w) => {
                // Re-express the stored impulse in the current contact frame.
                let n_old = Vec3::new(w.normal[0], w.normal[1], w.normal[2]);
                let (t1_old, t2_old) = crate::math::tangent_basis(&n_old);
                let f = n_old * w.impulse[0] + t1_old * w.impulse[1] + t2_old * w.impulse[2];
                ws.impulse[i] = f.dot(&c.normal).max(0.0);
                ws.impulse[i + 1] = f.dot(&c.tangent1);
                ws.impulse[i + 2] = f.dot(&c.tangent2);
            }
            None => {
                ws.impulse[i] = 0.0;
                ws.impulse[i + 1] = 0.0;
                ws.impulse[i + 2] = 0.0;
            }
        }
    }
    for (r, row) in ws.joint_rows.iter().enumerate() {
        ws.impulse[3 * nc + r] = state.warm_joint_rows[row.slot];
    }
}

fn save_warm_start(state: &mut State, ws: &Workspace) {
    state.warm_contacts.clear();
    for (ci, c) in ws.contacts.iter().enumerate() {
        let i = 3 * ci;
        if state.warm_contacts.len() < state.warm_contacts.capacity() {
            state.warm_contacts.push(WarmContact {
                key: c.key,
                impulse: [ws.impulse[i], ws.impulse[i + 1], ws.impulse[i + 2]],
                normal: [c.normal.x, c.normal.y, c.normal.z],
            });
        }
    }
    state.warm_joint_rows.fill(0.0);
    let nc = ws.contacts.len();
    for (r, row) in ws.joint_rows.iter().enumerate() {
        state.warm_joint_rows[row.slot] = ws.impulse[3 * nc + r];
    }
}

/// Contact force of contact `i` of the last step in world coordinates (N): impulse / dt.
/// The force acts on body B (the second geometry); its opposite acts on A.
pub fn contact_force_world(model: &Model, ws: &Workspace, i: usize) -> Vec3 {
    let c = &ws.contacts[i];
    let l = &ws.impulse[3 * i..3 * i + 3];
    (c.normal * l[0] + c.tangent1 * l[1] + c.tangent2 * l[2]) / model.timestep_s
}

/// Deformable contact forces on rigid bodies (added to [`Workspace::body_contact_force`]).
fn accumulate_fem_contact_forces(model: &Model, ws: &mut Workspace) {
    let dt = model.timestep_s;
    let f = ws.fem.as_ref().unwrap();
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

/// Contacts of deformable surface nodes: against the ground and every rigid geometry, the
/// deepest one per node (one contact per node keeps the surrogate Delassus operator diagonal,
/// digest §8.1 \[N\]). Speculative within `margin + dt |v_node|`. Attached nodes get none:
/// pinned ones do not move, welded ones already carry their weld constraint.
fn fem_collide(model: &Model, state: &State, geom_pose: &[crate::math::Pose], f: &mut crate::fem::FemWorkspace) {
    let dt = model.timestep_s;
    f.contacts.clear();
    for d in &model.deformables {
        for &ln in &d.surface_nodes {
            if d.attachment[ln] != crate::fem::NodeAttachment::Free {
                continue; // pinned: no motion; welded: the weld is its one constraint
            }
            let g = d.node_start + ln;
            let p = Vec3::new(state.fem_x[3 * g], state.fem_x[3 * g + 1], state.fem_x[3 * g + 2]);
            let v = Vec3::new(state.fem_v[3 * g], state.fem_v[3 * g + 1], state.fem_v[3 * g + 2]);
            let margin = model.contact.margin_m + dt * v.norm();
            let mut best: Option<(f64, Vec3, usize)> = None;
            for (gi, geom) in model.geoms.iter().enumerate() {
                let (dist, normal) = match &geom.shape {
                    crate::model::GeomShape::Plane { normal, offset } => (normal.dot(&p) - offset, *normal),
                    shape => {
                        let x_wg = geom_pose[gi];
                        let c = x_wg.translation.vector;
                        if (p - c).norm() > geom.bounding_radius + margin {
                            continue;
                        }
                        let pp = crate::collision::parry_pose(shape, &x_wg);
                        let local = pp.inverse_transform_point(&nalgebra::Point3::from(p));
                        let proj = geom.parry_shape.project_local_point(crate::math::to_parry_vec(&local.coords), false);
                        let q = pp * nalgebra::Point3::from(crate::math::from_parry_vec(proj.point));
                        let delta = p - q.coords;
                        let len = delta.norm();
                        if len < 1e-12 {
                            continue;
                        }
                        if proj.is_inside {
                            (-len, -delta / len)
                        } else {
                            (len, delta / len)
                        }
                    }
                };
                if dist < margin && best.map(|b| dist < b.0).unwrap_or(true) {
                    best = Some((dist, normal, gi));
                }
            }
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

/// One V-FPI solve of the rigid trees, the deformable bodies and all their contacts
/// (see [`crate::contact::NodalSystem`] for the layout). Writes the rigid rows' impulses into
/// `ws.impulse`, the deformable contacts' into `ws.fem.contacts`, the welds' into `ws.fem.welds`
/// (and `state.fem_weld_impulse`), the generalized impulse of the deformable contacts and welds
/// on the rigid trees into `ws.fem.rigid_impulse` and the deformable nodes' end-of-step
/// velocities into `state.fem_v`. Constraint order: rigid rows, deformable contacts, welds.
fn solve_coupled(model: &Model, state: &mut State, ws: &mut Workspace, m: usize) -> crate::contact::SolveStats {
    use crate::contact::{NodalConstraint, NodalSystem, Solver};
    use crate::fem::NodeAttachment;
    let dt = model.timestep_s;
    let nv = model.nv;
    let Workspace { fem, solver, jacobian, free_velocity, free_constraint_velocity, friction, row_lower, row_upper, mass_tilde, impulse, contacts, dof_axis, body_velocity, body_pose, collision, .. } = ws;
    let f = fem.as_mut().unwrap();
    let Solver::Vfpi(vs) = solver else {
        return crate::contact::SolveStats::default();
    };
    // prescribed node velocities: pinned (zero) and driven one-way (the link point's); two-way
    // welded nodes are free unknowns (welds below)
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
    f.system.assemble(&model.deformables, &state.fem_x, &state.fem_v, dt, &model.gravity);
    f.velocity_start.copy_from_slice(&state.fem_v);
    fem_collide(model, state, &collision.geom_pose, f);
    let nf = f.system.dim();
    let base = nf + nv;
    let erp = model.contact.erp;
    let slop = model.contact.slop_m;
    let bias_of = |d: f64| if d >= 0.0 { d / dt } else { -erp * (-d - slop).max(0.0) / dt };
    f.constraints.clear();
    let nc = contacts.len();
    let kt = vs.params.virtual_node_gain * dt;
    for r in 0..m {
        let row = &jacobian[r * nv..(r + 1) * nv];
        let jvs: f64 = row.iter().zip(free_velocity.iter()).map(|(a, b)| a * b).sum();
        let bias = free_constraint_velocity[r] - jvs - impulse[r] / kt;
        if r < 3 * nc {
            if r % 3 == 0 {
                let b = [bias, -impulse[r + 1] / kt, -impulse[r + 2] / kt];
                f.constraints.push(NodalConstraint { i: base + r, i_is_fem: false, j: None, j_is_fem: false, dim: 3, frame: crate::math::Mat3::identity(), bias: b, mu: friction[r / 3], lo: 0.0, hi: 0.0, bilateral: false });
            }
        } else {
            let jr = r - 3 * nc;
            f.constraints.push(NodalConstraint { i: base + r, i_is_fem: false, j: None, j_is_fem: false, dim: 1, frame: crate::math::Mat3::identity(), bias: [bias, 0.0, 0.0], mu: 0.0, lo: row_lower[jr], hi: row_upper[jr], bilateral: false });
        }
    }
    f.jv[..m * nv].copy_from_slice(&jacobian[..m * nv]);
    let mut vr = m;
    for k in 0..f.contacts.len() {
        let c = f.contacts[k];
        let mut j = None;
        if let Some(b) = c.body {
            let rows = &mut f.jv[vr * nv..(vr + 3) * nv];
            rows.fill(0.0);
            for r in 0..3 {
                let dir = c.frame.row(r).transpose();
                add_point_jacobian_row(model, dof_axis, b, &c.position, &dir, 1.0, &mut rows[r * nv..(r + 1) * nv]);
            }
            if rows.iter().any(|x| *x != 0.0) {
                j = Some(base + vr);
                vr += 3;
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
        // digest §8.3, and doubled the iterations; the velocity-level term lets a node that
        // arrives fast penetrate by at most h |v_n| / 2 in its impact step, removed by the
        // Baumgarte term afterwards.)
        let normal_offset = bias_of(c.distance);
        f.constraints.push(NodalConstraint { i: 3 * c.node, i_is_fem: true, j, j_is_fem, dim: 3, frame: c.frame, bias: [normal_offset, 0.0, 0.0], mu, lo: 0.0, hi: 0.0, bilateral: false });
    }
    // two-way welds (crate::fem, "Welds"): a bilateral 3-D constraint, world axes, between the
    // node and a virtual node on the link point (3 J_v rows along x, y, z)
    let first_weld = f.constraints.len();
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
            let rows = &mut f.jv[vr * nv..(vr + 3) * nv];
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
                j = Some(base + vr);
                jv_row = Some(vr);
                vr += 3;
            }
            f.welds.push(crate::fem::FemWeld { node: g, body: b, position: p_link, error: err, impulse: [0.0; 3], jv_row });
            f.constraints.push(NodalConstraint { i: 3 * g, i_is_fem: true, j, j_is_fem: false, dim: 3, frame: crate::math::Mat3::identity(), bias, mu: 0.0, lo: 0.0, hi: 0.0, bilateral: true });
        }
    }
    for i in 0..nv {
        let mut s = 0.0;
        for k in 0..nv {
            s += mass_tilde[(i, k)] * free_velocity[k];
        }
        f.rigid_b[i] = s;
    }
    // initial guess: previous velocities (paper: previous step's v̂), prescribed nodes exact
    {
        let x = &mut vs.scratch.x;
        for g in 0..nf / 3 {
            let src = if f.system.prescribed[g] { &f.system.prescribed_velocity[3 * g..3 * g + 3] } else { &state.fem_v[3 * g..3 * g + 3] };
            x[3 * g..3 * g + 3].copy_from_slice(src);
        }
        x[nf..nf + nv].copy_from_slice(&state.v);
    }
    let sys = NodalSystem {
        fem: Some(&f.system.a),
        fem_b: &f.system.b,
        fem_fixed: &f.system.prescribed,
        nv,
        mass: mass_tilde.as_slice(),
        rigid_b: &f.rigid_b,
        jv: &f.jv[..vr * nv],
        num_virtual: vr,
        constraints: &f.constraints,
        k_tilde: vs.params.virtual_node_gain * dt,
    };
    let stats = vs.solve_nodal(&sys);
    let lam = &vs.scratch.lambda;
    impulse[..m].copy_from_slice(&lam[..m]);
    f.rigid_impulse.fill(0.0);
    let mut o = m;
    let nrig = first_weld - f.contacts.len();
    for (k, c) in f.contacts.iter_mut().enumerate() {
        c.impulse = [lam[o], lam[o + 1], lam[o + 2]];
        let con = &f.constraints[nrig + k];
        if let (Some(j), false) = (con.j, con.j_is_fem) {
            let r0 = j - base;
            for r in 0..3 {
                let row = &f.jv[(r0 + r) * nv..(r0 + r + 1) * nv];
                for (q, jr) in row.iter().enumerate() {
                    f.rigid_impulse[q] -= jr * c.impulse[r];
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
                let row = &f.jv[(r0 + r) * nv..(r0 + r + 1) * nv];
                for (q, jr) in row.iter().enumerate() {
                    f.rigid_impulse[q] -= jr * w.impulse[r];
                }
            }
        }
        o += 3;
    }
    state.fem_v.copy_from_slice(&vs.scratch.x[..nf]);
    f.last_solve = stats;
    stats
}

#[cfg(test)]
mod time_tests {
    use super::advance_time;

    #[test]
    fn simulation_time_stays_on_the_nanosecond_grid() {
        // one hour at 1 kHz: every step exactly 1 000 000 ns after the previous one
        let mut t = 0.0;
        let mut prev_ns = 0i64;
        for k in 1..=3_600_000i64 {
            t = advance_time(t, 0.001);
            let ns = crate::rt::clock::secs_to_ns(t);
            assert_eq!(ns - prev_ns, 1_000_000, "step {k}: t = {t}");
            prev_ns = ns;
        }
        assert_eq!(prev_ns, 3_600_000_000_000);
        // plain summation drifts off the grid (what this guards against)
        let (mut s, mut off_grid) = (0.0f64, false);
        for k in 1..=200_000i64 {
            s += 0.001;
            off_grid |= crate::rt::clock::secs_to_ns(s) != k * 1_000_000;
        }
        assert!(off_grid);
    }
}
