//! Derived quantities and scratch memory, sized once from the [`Model`].
//!
//! Every buffer the step needs is allocated here, in [`Workspace::new`]; the step only writes into
//! them (vectors are filled up to a capacity fixed at construction; overflow is reported as a flag
//! in [`crate::step::StepReport`]). This is what makes the step allocation-free.

use crate::collision::CollisionScratch;
use crate::contact::{Contact, ContactProblem, ContactRows, Solver, SolverConfig};
use crate::math::{Pose, SpatialInertia, Vec6};
use crate::model::Model;
use nalgebra::{DMatrix, DVector};
use crate::math::BranchMatrix;

pub use crate::contact::{JointRow, JointRowKind};

/// Derived data and scratch.
pub struct Workspace {
    /// Pose of each body in the world, `X_WB`.
    pub body_pose: Vec<Pose>,
    /// Spatial velocity of each body (world coordinates, about the world origin).
    pub body_velocity: Vec<Vec6>,
    /// The body velocities at the step's start velocity, kept while the midpoint bias
    /// re-evaluation moves `body_velocity` to the midpoint and restored after it.
    pub start_body_velocity: Vec<Vec6>,
    /// Motion subspace column of each velocity coordinate (world coordinates, about the world
    /// origin).
    pub dof_axis: Vec<Vec6>,
    /// Spatial inertia of each body alone (world coordinates, about the world origin).
    pub body_inertia: Vec<SpatialInertia>,
    /// Which bodies carry mass in the whole-model dynamics passes, and what they carry (bodies
    /// welded by fixed joints ride with their moving ancestor).
    pub mass_bodies: crate::model::MassBodies,
    /// Spatial inertia of each body of [`crate::model::MassBodies::bodies`] together with the
    /// bodies welded to it (world coordinates, about the world origin); other entries unused.
    pub moving_inertia: Vec<SpatialInertia>,
    /// Composite (subtree) inertia scratch.
    pub composite_inertia: Vec<SpatialInertia>,
    /// Spatial acceleration scratch per body.
    pub body_acc: Vec<Vec6>,
    /// Spatial force scratch per body.
    pub body_force: Vec<Vec6>,
    /// Mass matrix M(q) (block diagonal per tree, branch-sparse within a tree).
    pub mass_matrix: BranchMatrix,
    /// The commands the step acts on under a command delay (see [`crate::state::CommandDelayLine`]).
    pub delayed_commands: crate::state::Commands,
    /// Factor L of M̃ = M + dt·D = Lᵀ L (Featherstone's LTL factorization, RBDA §6.5): L has
    /// the sparsity of M̃'s lower triangle (no fill-in).
    pub mass_factor: BranchMatrix,
    /// M̃ of the step before factorization, dense (read by velocity-space solvers: filled only
    /// for methods whose `Capabilities::dense_mass` is set, and in scenes with deformables).
    pub mass_tilde: DMatrix<f64>,
    /// Generalized velocity at the start of the step.
    pub start_velocity: DVector<f64>,
    /// Bias forces h(q, v) = C(q, v) v + g(q) (N·m or N).
    pub bias: DVector<f64>,
    /// Generalized force of this step, including implicit-PD terms (N·m or N).
    pub generalized_force: DVector<f64>,
    /// Applied actuator effort of this step (N·m or N), what a joint-state `effort` reports.
    pub applied_effort: DVector<f64>,
    /// Velocity before constraints, v* (rad/s or m/s).
    pub free_velocity: DVector<f64>,
    /// Scratch vector of size nv.
    pub scratch_nv: DVector<f64>,
    /// Index of each body among one-DOF joints, `usize::MAX` otherwise.
    pub one_dof_index: Vec<usize>,
    /// Contacts of this step (capacity `max_contacts`).
    pub contacts: Vec<Contact>,
    /// Joint rows of this step.
    pub joint_rows: Vec<JointRow>,
    /// Constraint Jacobian, row-major `rows × nv`.
    pub jacobian: Vec<f64>,
    /// Z = L⁻ᵀ Jᵀ stored row-major `rows × nv` (row i is L⁻ᵀ J_iᵀ), so that G = Zᵀ Z.
    pub factor_jt: Vec<f64>,
    /// Delassus matrix G = J M̃⁻¹ Jᵀ, row-major `rows × rows`.
    pub delassus: Vec<f64>,
    /// Constraint velocity before impulses, `J v* + b`.
    pub free_constraint_velocity: Vec<f64>,
    /// `J v*` per row, without the impulse solvers' bias `b` (m/s or rad/s).
    pub free_row_velocity: Vec<f64>,
    /// Impulses (N·s, N·m·s).
    pub impulse: Vec<f64>,
    /// Friction coefficient per contact.
    pub friction: Vec<f64>,
    /// Impulse lower bound per joint row.
    pub row_lower: Vec<f64>,
    /// Impulse upper bound per joint row.
    pub row_upper: Vec<f64>,
    /// Trees touched by each constraint row (second is `usize::MAX` when one).
    pub row_trees: Vec<(usize, usize)>,
    /// The coordinate ranges `[start, end)` of each row's trees, ascending (an empty range where
    /// the row touches fewer than two): where the row's entries of J and Z can be nonzero.
    pub row_ranges: Vec<[(usize, usize); 2]>,
    /// Whether this step's rows have G in `delassus` (always for the methods that need it,
    /// [`crate::contact::Capabilities::delassus`]; the others may work on Z alone).
    pub delassus_built: bool,
    /// The state's stored warm-start contacts in key order (indices into
    /// `State::warm_contacts`, ties in storage order), for [`crate::step::warm_start`]'s lookups.
    pub warm_order: Vec<u32>,
    /// Per stored warm-start contact (`State::warm_contacts` order), whether a contact of this
    /// step took its impulse ([`crate::step::warm_start`]).
    pub warm_taken: Vec<bool>,
    /// This step's rows in groups that touch the same trees, `(first row, count)`: each
    /// contact's rows, then consecutive joint rows by up to three ([`crate::step::build_delassus`]).
    pub row_groups: Vec<(usize, usize)>,
    /// One past the last body of each body's subtree (bodies are in depth-first order, so a
    /// subtree is the contiguous range `[b, subtree_end[b])`).
    pub subtree_end: Vec<usize>,
    /// The bodies an F/T sensor's reading depends on, ascending: each sensor's child body, its
    /// ancestors and its subtree (the sensors' dynamics pass runs on these only).
    pub sensor_bodies: Vec<usize>,
    /// Whether a body lies in a sensor's subtree (its child body or below): the sensors' pass
    /// needs forces there, and only accelerations on the ancestors above.
    pub in_sensor_subtree: Vec<bool>,
    /// Contact force on each body from the last step (spatial force about the world origin, N).
    pub body_contact_force: Vec<Vec6>,
    /// Parent of each velocity coordinate (Featherstone's λ, RBDA §6.5): the previous
    /// coordinate on the path to the root, [`NO_DOF`] for a tree's first one. `λ(k) < k`; the
    /// mass matrix is nonzero only between a coordinate and its ancestors (branch-induced
    /// sparsity), which [`crate::dynamics::factorize`] keeps without fill-in.
    pub dof_parent: Vec<usize>,
    /// Generalized acceleration of the last step, (v⁺ − v)/dt.
    pub acceleration: DVector<f64>,
    /// Collision scratch.
    pub collision: CollisionScratch,
    /// The contact solver and its scratch.
    pub solver: Solver,
    /// Time step (s) of the model.
    pub timestep_s: f64,
    /// Deformable-body scratch (`None` without deformables).
    pub fem: Option<crate::fem::FemWorkspace>,
    /// Scratch of the coupled rigid–FEM solve (`None` without deformables).
    pub coupled: Option<CoupledScratch>,
    /// The rows of each contact in [`Workspace::impulse`], [`Workspace::jacobian`] and the
    /// Delassus matrix: the configured method's layout.
    pub contact_rows: ContactRows,
}

/// Scratch of the coupled rigid–FEM solve ([`crate::coupled`]), sized once from the model.
pub struct CoupledScratch {
    /// Jacobian rows of the virtual nodes (rigid rows, rigid sides of deformable contacts,
    /// welds), row-major `rows × nv`.
    pub jv: Vec<f64>,
    /// Constraints of the coupled solve.
    pub constraints: Vec<crate::contact::NodalConstraint>,
    /// `M̃ v*` of the rigid part (N·s).
    pub rigid_b: Vec<f64>,
    /// Generalized impulse of the deformable contacts and welds on the rigid trees (N·s).
    pub rigid_impulse: Vec<f64>,
    /// Solve statistics of the last step.
    pub last_solve: crate::contact::SolveStats,
    /// Node ranges `[first, end)` of the deformable bodies ([`crate::contact::NodalSystem::fem_bodies`]).
    pub fem_bodies: Vec<(usize, usize)>,
}

impl CoupledScratch {
    /// Allocates everything for `model` (which has deformable bodies).
    pub fn new(model: &Model) -> Self {
        let surface: usize = model.deformables.iter().map(|d| d.surface_nodes.len()).sum();
        let welded = crate::fem::welded_node_count(&model.deformables);
        let rows = model.max_constraint_rows(crate::contact::ContactRows::POINT.len()) + 3 * surface + 3 * welded;
        CoupledScratch {
            jv: vec![0.0; rows * model.nv],
            constraints: Vec::with_capacity(model.contact.max_contacts + model.max_joint_rows() + surface + welded),
            rigid_b: vec![0.0; model.nv],
            rigid_impulse: vec![0.0; model.nv],
            last_solve: crate::contact::SolveStats::default(),
            fem_bodies: model.deformables.iter().map(|d| (d.node_start, d.node_start + d.num_nodes())).collect(),
        }
    }
}

/// [`Workspace::dof_parent`] of a root coordinate.
pub const NO_DOF: usize = crate::math::branch_matrix::NO_PARENT;

impl Workspace {
    /// Allocates every buffer the step will use.
    pub fn new(model: &Model, solver: &SolverConfig) -> Self {
        let nb = model.bodies.len();
        let nv = model.nv;
        let contact_rows = solver.capabilities().contact_rows;
        let rows = model.max_constraint_rows(contact_rows.len());
        let mut one_dof_index = vec![usize::MAX; nb];
        let mut k = 0;
        for (i, b) in model.bodies.iter().enumerate() {
            if b.joint.kind.nv() == 1 {
                one_dof_index[i] = k;
                k += 1;
            }
        }
        let mut subtree_end: Vec<usize> = (1..=nb).collect();
        for b in (0..nb).rev() {
            if let Some(p) = model.bodies[b].parent {
                subtree_end[p] = subtree_end[p].max(subtree_end[b]);
            }
        }
        // velocity-coordinate parents: a joint's first coordinate hangs on the last coordinate of
        // the nearest ancestor body that has any; further coordinates of the same joint chain on
        let mut dof_parent = vec![NO_DOF; nv];
        let mut last_dof = vec![NO_DOF; nb];
        for (b, body) in model.bodies.iter().enumerate() {
            let inherited = body.parent.map(|p| last_dof[p]).unwrap_or(NO_DOF);
            let (v0, nj) = (body.joint.v_index, body.joint.kind.nv());
            for k in v0..v0 + nj {
                dof_parent[k] = if k == v0 { inherited } else { k - 1 };
            }
            last_dof[b] = if nj > 0 { v0 + nj - 1 } else { inherited };
        }
        let mut on_sensor_path = vec![false; nb];
        for sensor in &model.sensors {
            let mut b = Some(sensor.body);
            while let Some(x) = b {
                on_sensor_path[x] = true;
                b = model.bodies[x].parent;
            }
            on_sensor_path[sensor.body..subtree_end[sensor.body]].fill(true);
        }
        let mut in_sensor_subtree = vec![false; nb];
        for sensor in &model.sensors {
            in_sensor_subtree[sensor.body..subtree_end[sensor.body]].fill(true);
        }
        let sensor_bodies = (0..nb).filter(|&b| on_sensor_path[b]).collect();
        Workspace {
            sensor_bodies,
            in_sensor_subtree,
            subtree_end,
            mass_matrix: BranchMatrix::new(&dof_parent),
            delayed_commands: crate::state::Commands::new(model),
            mass_factor: BranchMatrix::new(&dof_parent),
            dof_parent,
            body_contact_force: vec![Vec6::zeros(); nb],
            acceleration: DVector::zeros(nv),
            body_pose: vec![Pose::identity(); nb],
            body_velocity: vec![Vec6::zeros(); nb],
            start_body_velocity: vec![Vec6::zeros(); nb],
            dof_axis: vec![Vec6::zeros(); nv],
            body_inertia: vec![SpatialInertia::zeros(); nb],
            mass_bodies: crate::model::MassBodies::new(model),
            moving_inertia: vec![SpatialInertia::zeros(); nb],
            composite_inertia: vec![SpatialInertia::zeros(); nb],
            body_acc: vec![Vec6::zeros(); nb],
            body_force: vec![Vec6::zeros(); nb],
            mass_tilde: DMatrix::zeros(nv, nv),
            start_velocity: DVector::zeros(nv),
            bias: DVector::zeros(nv),
            generalized_force: DVector::zeros(nv),
            applied_effort: DVector::zeros(nv),
            free_velocity: DVector::zeros(nv),
            scratch_nv: DVector::zeros(nv),
            one_dof_index,
            contacts: Vec::with_capacity(model.contact.max_contacts),
            joint_rows: Vec::with_capacity(model.max_joint_rows()),
            jacobian: vec![0.0; rows * nv],
            factor_jt: vec![0.0; rows * nv],
            delassus: vec![0.0; rows * rows],
            free_constraint_velocity: vec![0.0; rows],
            free_row_velocity: vec![0.0; rows],
            impulse: vec![0.0; rows],
            friction: vec![0.0; model.contact.max_contacts],
            row_lower: vec![0.0; model.max_joint_rows()],
            row_upper: vec![0.0; model.max_joint_rows()],
            row_trees: vec![(0, usize::MAX); rows],
            row_ranges: vec![[(0, 0); 2]; rows],
            delassus_built: true,
            warm_order: Vec::with_capacity(model.contact.max_contacts),
            warm_taken: Vec::with_capacity(model.contact.max_contacts),
            row_groups: Vec::with_capacity(rows),
            collision: CollisionScratch::new(model),
            solver: Solver::new(solver, model),
            timestep_s: model.timestep_s,
            fem: if model.deformables.is_empty() { None } else { Some(crate::fem::FemWorkspace::new(&model.deformables, model.fem_integrator, &model.contact.deformable_contact)) },
            coupled: if model.deformables.is_empty() { None } else { Some(CoupledScratch::new(model)) },
            contact_rows,
        }
    }

    /// Number of constraint rows of the current step.
    pub fn num_rows(&self) -> usize {
        self.first_joint_row() + self.joint_rows.len()
    }

    /// First scalar row of contact `c`.
    #[inline]
    pub fn contact_row(&self, c: usize) -> usize {
        self.contact_rows.start(c)
    }

    /// First joint row of the current step (after every contact's rows).
    #[inline]
    pub fn first_joint_row(&self) -> usize {
        self.contact_rows.start(self.contacts.len())
    }

    /// The impulse of contact `i` of the last step in its frame (N·s): `[normal, tangent 1,
    /// tangent 2]`, acting on body B (the opposite on A). Torsional rows are not included.
    pub fn contact_impulse(&self, i: usize) -> [f64; 3] {
        let r = self.contact_row(i);
        [self.impulse[r], self.impulse[r + 1], self.impulse[r + 2]]
    }

    /// The friction moment of contact `i` of the last step about its normal, in world
    /// coordinates (N·m, acting on body B; its opposite on A): the torsion row's impulse / dt
    /// along the normal when the method's [`ContactRows`] have one,
    /// else zero.
    pub fn contact_torque_world(&self, i: usize) -> crate::math::Vec3 {
        match self.contact_rows.rows().iter().position(|r| *r == crate::contact::ContactRow::Torsion) {
            Some(k) => self.contacts[i].normal * (self.impulse[self.contact_row(i) + k] / self.timestep_s),
            None => crate::math::Vec3::zeros(),
        }
    }

    /// The force of contact `i` of the last step in world coordinates (N): impulse / dt, acting
    /// on body B (the second geometry); its opposite acts on A.
    pub fn contact_force_world(&self, i: usize) -> crate::math::Vec3 {
        let c = &self.contacts[i];
        let l = self.contact_impulse(i);
        (c.normal * l[0] + c.tangent1 * l[1] + c.tangent2 * l[2]) / self.timestep_s
    }

    /// The current step's contact problem (a view into this workspace), the impulses it is
    /// solved into (`num_rows()` long; on entry the warm start) and the configured solver, as
    /// disjoint borrows: `let (p, impulse, solver) = ws.split_for_solve(); solver.solve(&p, impulse)`.
    pub fn split_for_solve(&mut self) -> (ContactProblem<'_>, &mut [f64], &mut Solver) {
        let (nc, nj) = (self.contacts.len(), self.joint_rows.len());
        let m = self.num_rows();
        let contact_rows = self.contact_rows;
        let nv = self.free_velocity.len();
        let dt = self.timestep_s;
        let Workspace {
            friction, row_lower, row_upper, delassus, free_constraint_velocity, impulse, solver, mass_tilde, jacobian, free_velocity, start_velocity, factor_jt, row_ranges, delassus_built, ..
        } = self;
        let delassus: &[f64] = if *delassus_built { &delassus[..m * m] } else { &[] };
        let factored = Some(crate::contact::FactoredRows { nv, z: &factor_jt[..m * nv], ranges: &row_ranges[..m] });
        let primal = Some(crate::contact::PrimalView {
            nv,
            mass: mass_tilde.as_slice(),
            jacobian: &jacobian[..m * nv],
            free_velocity: free_velocity.as_slice(),
            initial_velocity: start_velocity.as_slice(),
            timestep_s: dt,
        });
        let problem = ContactProblem {
            num_contacts: nc,
            contact_rows,
            num_joint_rows: nj,
            friction: &friction[..nc],
            row_lower: &row_lower[..nj],
            row_upper: &row_upper[..nj],
            delassus,
            free_velocity: &free_constraint_velocity[..m],
            primal,
            factored,
        };
        (problem, &mut impulse[..m], solver)
    }
}
