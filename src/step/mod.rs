//! One time step: `step(&Model, &mut State, &mut Workspace, &Commands) -> StepReport`, as a list
//! of stages (each a function below, its inputs and outputs in its signature):
//!
//! 1. [`forward_positions`]: body poses, velocities and motion subspaces from `q`, `v`;
//! 2. [`collide`]: rigid contacts; [`deformable_contacts`]: the deformable nodes' prescribed
//!    velocities and contacts;
//! 3. [`dynamics_terms`]: M(q) and h(q, v);
//! 4. [`actuate`]: servo and effort commands, effort limits, implicit damping: M̃ and f;
//! 5. [`factor_and_free_velocity`]: M̃ = Lᵀ L and the unconstrained velocity v*;
//! 6. the constraint stage, by the method's kind ([`crate::contact::MethodKind`]):
//!    - impulse solvers: [`impulse_stage`] (rows, Delassus, warm start, solve, or the coupled
//!      rigid–FEM solve of [`crate::coupled`]) then [`velocity_from_impulses`];
//!    - whole-step schemes: [`whole_step_stage`];
//! 7. [`commit_velocity`]: v⁺ into the state, applied efforts, the non-finite guard;
//! 8. [`measure`]: contact forces per body, F/T sensors;
//! 9. [`integrate`]: positions (and FEM nodes), warm start, time.
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
//! impulses, found by the configured method on the [`crate::contact::ContactProblem`].
//!
//! Effort limits: if the explicit estimate of a servo's torque exceeds the joint's effort limit,
//! that joint is saturated at the limit (an effort command) for this step.
//!
//! Nothing here allocates: every buffer comes from the [`Workspace`].

use crate::collision;
use crate::contact::{ConstraintStage, MethodKind, SchemeInput, SchemeOutput, SolveStats, WholeStepScheme};
use crate::dynamics;
use crate::kinematics;
use crate::math::Vec3;
use crate::model::{ControlMode, Model};
use crate::state::State;
use crate::workspace::Workspace;

mod delassus;
mod rows;

pub use crate::state::Commands;
pub use crate::model::tree::integrate_joint_position;
pub use delassus::{build_delassus, build_factored_rows};
pub use rows::{build_jacobian, build_joint_rows, save_warm_start, warm_start, WARM_MATCH_RADIUS_M};

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
    /// Manifold points dropped as copies of another point of the same pair
    /// ([`crate::collision::DUPLICATE_POINT_M`]).
    pub duplicate_points: usize,
    /// Manifold points dropped inside or on a side of their contact patch's convex hull
    /// ([`crate::collision::keep_patch_corners`]).
    pub side_points: usize,
    /// Joints saturated at their effort limit.
    pub saturated_joints: usize,
    /// The mass matrix was not positive definite (the step was skipped).
    pub singular_mass_matrix: bool,
    /// The state became non-finite; it was restored to the previous one and velocities zeroed.
    pub non_finite_state: bool,
    /// Deepest penetration among the contacts before the step (m, ≥ 0).
    pub max_penetration_m: f64,
}

impl StepReport {
    /// Why the step failed, or `None` when it did not: a singular mass matrix (the step was
    /// skipped) or a non-finite state (the state before the step was kept, velocities zeroed).
    pub fn failure_cause(&self) -> Option<&'static str> {
        if self.singular_mass_matrix {
            Some("the mass matrix is not positive definite (a moving link without mass or damping, or an unphysical inertia)")
        } else if self.non_finite_state {
            Some("the state became non-finite (NaN or infinite velocities)")
        } else {
            None
        }
    }
}


/// Advances the simulation by one time step with the configured method.
pub fn step(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands) -> StepReport {
    run_stages(model, state, ws, cmd, None)
}

/// Advances one step with `scheme` as the constraint stage instead of the configured method: a
/// whole-step scheme under development (or in a test) runs inside the real pipeline without a
/// registry entry.
pub fn step_with_scheme(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands, scheme: &mut dyn WholeStepScheme) -> StepReport {
    run_stages(model, state, ws, cmd, Some(scheme))
}

/// Stage 0, the command transport delay: without one the stages act on `cmd`; with one
/// (`model.command_delay_s`), `cmd` goes into the state's delay line and the stages act on the
/// commands of `t − delay` ([`crate::state::CommandDelayLine`]), held in `ws.delayed_commands`.
fn run_stages(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands, external: Option<&mut dyn WholeStepScheme>) -> StepReport {
    if state.command_delay.is_empty() {
        return run_physics_stages(model, state, ws, cmd, external);
    }
    // moved out and back (no allocation) so that the stages can borrow the workspace mutably
    let mut delayed = std::mem::take(&mut ws.delayed_commands);
    state.command_delay.push_and_delay(cmd, &mut delayed);
    let report = run_physics_stages(model, state, ws, &delayed, external);
    ws.delayed_commands = delayed;
    report
}

/// The stage list after the command delay.
fn run_physics_stages(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands, external: Option<&mut dyn WholeStepScheme>) -> StepReport {
    let mut report = StepReport::default();
    forward_positions(model, state, ws);
    collide(model, state, ws, &mut report);
    deformable_contacts(model, state, ws);
    dynamics_terms(model, state, ws);
    actuate(model, state, ws, cmd, &mut report);
    if !factor_and_free_velocity(model, state, ws) {
        report.singular_mass_matrix = true;
        return report;
    }
    let positions_integrated = match (external, ws.solver.stage().kind()) {
        (None, MethodKind::Impulse) => {
            let image_ready = impulse_stage(model, state, ws, &mut report);
            velocity_from_impulses(model, ws, image_ready);
            false
        }
        (external, kind) => {
            let with_rows = external.is_none() && kind == MethodKind::WholeStepOnRows;
            if with_rows {
                constraint_rows(model, state, ws, &mut report);
            }
            whole_step_stage(model, state, ws, cmd, external, with_rows, &mut report)
        }
    };
    if !commit_velocity(model, state, ws, cmd) {
        report.non_finite_state = true;
        return report;
    }
    measure(model, state, ws);
    integrate(model, state, ws, positions_integrated);
    report
}

/// Stage 1: body poses, velocities and world motion subspaces from `state.q`, `state.v`.
pub fn forward_positions(model: &Model, state: &State, ws: &mut Workspace) {
    kinematics::forward_kinematics(model, &state.q, &state.v, ws);
}

/// Stage 2: rigid contacts into `ws.contacts` (each pair's last normal kept in the state);
/// counts and the deepest penetration into `report`.
pub fn collide(model: &Model, state: &mut State, ws: &mut Workspace, report: &mut StepReport) {
    let coll = collision::detect(model, &ws.body_pose, &ws.body_velocity, &mut state.contact_pair_normals, &mut ws.collision, &mut ws.contacts);
    report.dropped_contacts = coll.dropped_contacts;
    report.unsupported_pairs = coll.unsupported_pairs;
    report.duplicate_points = coll.duplicate_points;
    report.side_points = coll.side_points;
    report.contacts = ws.contacts.len();
    report.max_penetration_m = ws.contacts.iter().map(|c| (-c.distance).max(0.0)).fold(0.0, f64::max);
}

/// Stage 2b: the deformable bodies' prescribed node velocities (nodes attached to moving
/// bodies) and their node contacts against the rigid geometry and each other, into `ws.fem`
/// (nothing without deformables). Both constraint-stage kinds read them.
pub fn deformable_contacts(model: &Model, state: &State, ws: &mut Workspace) {
    let Workspace { fem, body_pose, body_velocity, collision, .. } = ws;
    if let Some(f) = fem.as_mut() {
        crate::coupled::prescribe_node_velocities(model, body_pose, body_velocity, f);
        crate::coupled::collide_nodes(model, state, &collision.geom_pose, f);
    }
}

/// Stage 3: the mass matrix M(q) into `ws.mass_matrix` and the bias h(q, v) into `ws.bias`. With
/// the midpoint bias and the last step's history, the last step's bias stands in for h(q, v):
/// stage 5 needs it only for the bound of the midpoint prediction, then evaluates h at the
/// midpoint (one RNEA per step instead of two).
pub fn dynamics_terms(model: &Model, state: &State, ws: &mut Workspace) {
    dynamics::update_body_inertias(model, ws);
    dynamics::mass_matrix(model, ws);
    if model.midpoint_bias && has_step_history(state) {
        ws.bias.as_mut_slice().copy_from_slice(&state.last_step_bias);
    } else {
        dynamics::bias_forces(model, ws, &state.v);
    }
}

/// Whether `state.v` is the velocity the last step left (bit for bit), so that the last step's
/// velocity change and bias describe this one's start; `false` before the first step and after
/// `v` was written from outside (a reset, a replay, a test).
fn has_step_history(state: &State) -> bool {
    state.last_step_end_v.iter().zip(&state.v).all(|(a, b)| a.to_bits() == b.to_bits())
}

/// Stage 4: actuation and the implicit terms: `ws.mass_factor` ← M̃ (not yet factored),
/// `ws.generalized_force` ← f, `ws.applied_effort` ← the explicit part of each joint's effort;
/// joints saturated at their effort limit are counted in `report`.
pub fn actuate(model: &Model, state: &State, ws: &mut Workspace, cmd: &Commands, report: &mut StepReport) {
    let dt = model.timestep_s;
    let nv = model.nv;
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
}

/// Stage 5: M̃ = Lᵀ L into `ws.mass_factor` (also dense into `ws.mass_tilde` for methods that
/// read M̃ itself) and the free velocity v* = v + dt M̃⁻¹ f into `ws.free_velocity` (with the
/// midpoint re-evaluation of h when the model asks for it). `false` when M̃ is not positive
/// definite (the step is skipped).
pub fn factor_and_free_velocity(model: &Model, state: &State, ws: &mut Workspace) -> bool {
    let dt = model.timestep_s;
    let nv = model.nv;
    // velocity-space solvers (`dense_mass`) read M̃ itself, as a dense matrix; the others only its factor
    if ws.fem.is_some() || ws.solver.capabilities().dense_mass {
        ws.mass_factor.write_dense(ws.mass_tilde.as_mut_slice());
    }
    ws.start_velocity.as_mut_slice().copy_from_slice(&state.v);
    if !dynamics::factorize(ws) {
        return false;
    }

    // v* = v + M̃⁻¹ dt f
    free_velocity(model, state, ws, dt);
    if model.midpoint_bias {
        // Predictor-corrector on the velocity-dependent bias: re-evaluate h at a prediction of
        // the midpoint velocity, which removes the first-order energy drift of evaluating the
        // Coriolis / centrifugal terms at the start of the step. The unconstrained prediction
        // ½ (v + v*) is the start of a free fall for a robot at rest; the last step's velocity
        // change, v + ½ (v − v_prev), carries what the contacts did (rest predicts rest, and
        // the ground reaction is m g exactly) but after an impact it would carry the impact's
        // jump into this step. Per coordinate, the prediction is the extrapolation clamped to
        // the interval between v and ½ (v + v*): the constraints may only have held back the
        // free motion, never reversed or amplified it. With a history, v* here is computed
        // with the last step's (midpoint) bias in place of h(q, v) (stage 3): it only bounds
        // the prediction. Without a history (first step, or v written from outside since) v*
        // has h(q, v) and the prediction is ½ (v + v*).
        let history = has_step_history(state);
        for k in 0..nv {
            let (start, unconstrained) = (state.v[k], 0.5 * (state.v[k] + ws.free_velocity[k]));
            ws.scratch_nv[k] = if history {
                // max/min rather than clamp: no panic on a non-finite v*
                (start + 0.5 * state.last_step_dv[k]).max(start.min(unconstrained)).min(start.max(unconstrained))
            } else {
                unconstrained
            };
            ws.generalized_force[k] += ws.bias[k];
        }
        let v_mid = std::mem::take(&mut ws.scratch_nv); // moves the buffer, no allocation
        ws.start_body_velocity.copy_from_slice(&ws.body_velocity);
        kinematics::update_body_velocities(model, v_mid.as_slice(), ws);
        dynamics::bias_forces(model, ws, v_mid.as_slice());
        ws.scratch_nv = v_mid;
        for k in 0..nv {
            ws.generalized_force[k] -= ws.bias[k];
            ws.scratch_nv[k] = 0.0;
        }
        // the body velocities at v again (what `forward_positions` computed from `state.v`)
        ws.body_velocity.copy_from_slice(&ws.start_body_velocity);
        free_velocity(model, state, ws, dt);
    }
    true
}

/// Stage 6 for impulse solvers: the constraint rows (joint rows, J, G, warm start) and the
/// impulses into `ws.impulse` (contact rows in the method's layout, then joint rows). Scenes
/// with deformable bodies solve rigid rows, deformable contacts and welds together
/// ([`crate::coupled::solve`]). Returns whether the solver left the Z-space image of its
/// impulses, `Z λ`, in `ws.scratch_nv` ([`crate::contact::ImpulseSolver::row_image`]).
pub fn impulse_stage(model: &Model, state: &mut State, ws: &mut Workspace, report: &mut StepReport) -> bool {
    let m = constraint_rows(model, state, ws, report);
    if ws.fem.is_some() {
        report.solve = crate::coupled::solve(model, state, ws, m);
        let f = ws.fem.as_ref().unwrap();
        report.contacts += f.contacts.len();
        report.max_penetration_m = f.contacts.iter().map(|c| (-c.distance).max(0.0)).fold(report.max_penetration_m, f64::max);
        false
    } else {
        {
            let (problem, impulse, solver) = ws.split_for_solve();
            // run_stages chose this stage from the same `stage()`: it is an impulse solver
            if let ConstraintStage::Impulse(s) = solver.stage() {
                report.solve = s.solve(&problem, impulse);
            }
        }
        let Workspace { solver, scratch_nv, .. } = ws;
        match solver.stage() {
            ConstraintStage::Impulse(s) => match s.row_image() {
                Some(image) if image.len() == scratch_nv.len() => {
                    scratch_nv.as_mut_slice().copy_from_slice(image);
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// The velocity-level constraint rows of the step (joint rows, J, Z, the Delassus matrix unless
/// the method does not read it) and the warm start in `ws.impulse`; returns the number of rows. Impulse solvers and schemes of
/// kind [`MethodKind::WholeStepOnRows`] read them.
pub fn constraint_rows(model: &Model, state: &State, ws: &mut Workspace, report: &mut StepReport) -> usize {
    build_joint_rows(model, state, ws);
    let m = ws.num_rows();
    report.joint_rows = ws.joint_rows.len();
    build_jacobian(model, state, ws, model.timestep_s);
    // a sweep reads a row of G (m entries) or its factored row twice (a dot product and an
    // update over the row's trees): G is worth assembling only when its rows are the shorter
    let factored_len: usize = ws.row_ranges[..m].iter().map(|r| r[0].1 - r[0].0 + r[1].1 - r[1].0).sum();
    let caps = ws.solver.capabilities();
    // a method that assembles G itself when it needs it gets it here only with deformables
    let on_demand = caps.delassus_on_demand && model.deformables.is_empty();
    if !on_demand && (caps.delassus || m * m < 2 * factored_len) {
        build_delassus(model, ws, m);
    } else {
        build_factored_rows(model, ws, m);
    }
    warm_start(model, state, ws);
    m
}

/// After an impulse solve: v⁺ = v* + M̃⁻¹ Jᵀ λ = v* + L⁻¹ (Z λ) (M̃ = Lᵀ L, Z = L⁻ᵀ Jᵀ), plus
/// the deformable contacts' and welds' impulse on the rigid trees, into `ws.scratch_nv`. With
/// `image_ready`, `ws.scratch_nv` holds `Z λ` already (the solver kept it); else it is zero and
/// `Z λ` is summed here.
pub fn velocity_from_impulses(model: &Model, ws: &mut Workspace, image_ready: bool) {
    let nv = model.nv;
    let m = ws.num_rows();
    if !image_ready {
        crate::contact::sum_row_images(model, &ws.factor_jt, &ws.row_trees, &ws.impulse[..m], ws.scratch_nv.as_mut_slice());
    }
    if let Some(c) = ws.coupled.as_mut() {
        // deformable contacts on rigid trees: Z-space image L⁻ᵀ (J_Dᵀ λ_D)
        for t in &model.trees {
            ws.mass_factor.solve_lt(t.v_start, t.v_end, c.rigid_impulse.as_mut_slice());
        }
        for k in 0..nv {
            ws.scratch_nv[k] += c.rigid_impulse[k];
        }
    }
    for t in &model.trees {
        ws.mass_factor.solve_l(t.v_start, t.v_end, ws.scratch_nv.as_mut_slice());
    }
    for k in 0..nv {
        ws.scratch_nv[k] += ws.free_velocity[k];
    }
}

/// Stage 6 for whole-step schemes: the scheme (`external`, else the configured method's) reads
/// what stages 1–5 computed and writes v⁺ into `ws.scratch_nv` and the contact impulses into
/// `ws.impulse` (the method's row layout). Returns whether the scheme integrated the positions
/// itself.
pub fn whole_step_stage(
    model: &Model,
    state: &mut State,
    ws: &mut Workspace,
    cmd: &Commands,
    external: Option<&mut dyn WholeStepScheme>,
    with_rows: bool,
    report: &mut StepReport,
) -> bool {
    let (nc, nj) = (ws.contacts.len(), ws.joint_rows.len());
    let m = if with_rows { ws.num_rows() } else { 0 };
    let (contact_rows, nv) = (ws.contact_rows, model.nv);
    let Workspace {
        solver,
        body_pose,
        body_velocity,
        dof_axis,
        mass_matrix,
        mass_tilde,
        mass_factor,
        bias,
        generalized_force,
        free_velocity,
        contacts,
        scratch_nv,
        impulse,
        friction,
        row_lower,
        row_upper,
        delassus,
        free_constraint_velocity,
        free_row_velocity,
        jacobian,
        factor_jt,
        row_trees,
        row_groups,
        delassus_built,
        joint_rows,
        fem,
        ..
    } = ws;
    let rows = with_rows.then(|| crate::contact::ConstraintRows {
        problem: crate::contact::ContactProblem {
            num_contacts: nc,
            contact_rows,
            num_joint_rows: nj,
            friction: &friction[..nc],
            row_lower: &row_lower[..nj],
            row_upper: &row_upper[..nj],
            delassus: if *delassus_built { &delassus[..m * m] } else { &[] },
            free_velocity: &free_constraint_velocity[..m],
            primal: None,
            factored: None,
        },
        jacobian: &jacobian[..m * nv],
        free_row_velocity: &free_row_velocity[..m],
        factor_jt: &factor_jt[..m * nv],
        row_trees: &row_trees[..m],
        row_groups,
        joint_rows: &joint_rows[..nj],
    });
    let scheme: &mut dyn WholeStepScheme = match external {
        Some(s) => s,
        None => match solver.stage().scheme() {
            Some(s) => s,
            None => return false,
        },
    };
    let input = SchemeInput {
        model,
        commands: cmd,
        body_pose,
        body_velocity,
        dof_axis,
        mass_matrix,
        mass_tilde,
        mass_factor,
        bias,
        generalized_force,
        free_velocity,
        contacts,
        rows,
    };
    let mut output = SchemeOutput { velocity: scratch_nv.as_mut_slice(), impulse: impulse.as_mut_slice(), positions_integrated: false, fem: fem.as_mut() };
    report.solve = scheme.advance(&input, state, &mut output);
    let positions_integrated = output.positions_integrated;
    scheme.rewrite_contacts(contacts, impulse.as_mut_slice(), nj);
    report.contacts = contacts.len();
    if let Some(f) = fem.as_ref() {
        report.contacts += f.contacts.len();
        report.max_penetration_m = f.contacts.iter().map(|c| (-c.distance).max(0.0)).fold(report.max_penetration_m, f64::max);
    }
    positions_integrated
}

/// Stage 7: v⁺ (in `ws.scratch_nv`) into `state.v`, the accelerations, and the servo efforts
/// actually applied (the implicit part evaluated at v⁺). `false` when v⁺ is not finite: then the
/// velocities are zeroed and the positions kept (reported in [`StepReport::non_finite_state`]).
pub fn commit_velocity(model: &Model, state: &mut State, ws: &mut Workspace, cmd: &Commands) -> bool {
    let dt = model.timestep_s;
    let nv = model.nv;
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
        for k in 0..nv {
            state.v[k] = 0.0;
            ws.scratch_nv[k] = 0.0;
        }
        return false;
    }
    state.last_step_bias.copy_from_slice(ws.bias.as_slice());
    for k in 0..nv {
        state.last_step_dv[k] = ws.scratch_nv[k] - state.v[k];
        state.v[k] = ws.scratch_nv[k];
        state.last_step_end_v[k] = state.v[k];
        ws.scratch_nv[k] = 0.0;
    }
    true
}

/// Stage 8: the contact force on each body (`ws.body_contact_force`, rigid and deformable
/// contacts) and the F/T sensors (`state.sensors`).
pub fn measure(model: &Model, state: &mut State, ws: &mut Workspace) {
    accumulate_body_contact_forces(ws);
    crate::coupled::accumulate_contact_forces(model, ws);
    if !model.sensors.is_empty() {
        update_sensors(model, state, ws, model.timestep_s);
    }
}

/// Stage 9: positions (unless the method integrated them), FEM node positions, the warm start
/// for the next step, time and step count.
pub fn integrate(model: &Model, state: &mut State, ws: &mut Workspace, positions_integrated: bool) {
    let dt = model.timestep_s;
    if !positions_integrated {
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
    }
    save_warm_start(state, ws);
    state.time_s = advance_time(state.time_s, dt);
    state.step_count += 1;
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
fn accumulate_body_contact_forces(ws: &mut Workspace) {
    ws.body_contact_force.iter_mut().for_each(|f| *f = crate::math::Vec6::zeros());
    for i in 0..ws.contacts.len() {
        let c = &ws.contacts[i];
        let f = ws.contact_force_world(i);
        let w = crate::sensors::force_at_point(&f, &c.position) + crate::math::spatial(&ws.contact_torque_world(i), &Vec3::zeros());
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
    // moved out and back (no allocation); only the sensors' bodies, their ancestors and
    // subtrees, take part (`ws.sensor_bodies`)
    let v_mid = std::mem::take(&mut ws.scratch_nv);
    let acc = std::mem::take(&mut ws.acceleration);
    let bodies = std::mem::take(&mut ws.sensor_bodies);
    kinematics::update_body_velocities_of(model, v_mid.as_slice(), ws, &bodies);
    dynamics::sensor_rnea_forces(model, ws, v_mid.as_slice(), acc.as_slice(), &bodies);
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
    kinematics::update_body_velocities_of(model, &state.v, ws, &bodies);
    ws.sensor_bodies = bodies;
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
        integrate_joint_position(&body.joint, &mut state.q, &state.v, dt);
    }
}

/// Contact force of contact `i` of the last step in world coordinates (N): impulse / dt.
/// The force acts on body B (the second geometry); its opposite acts on A.
pub fn contact_force_world(_model: &Model, ws: &Workspace, i: usize) -> Vec3 {
    ws.contact_force_world(i)
}

#[cfg(test)]
mod scheme_tests;

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
