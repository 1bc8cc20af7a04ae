//! The minimal simulation snapshot: everything needed to continue a run bit-for-bit.
//!
//! `State` is `Clone`: copying it is how reset, replay and snapshots work. Derived quantities
//! (poses, mass matrix, contacts) live in [`crate::workspace::Workspace`] and are recomputed from
//! the state at every step.

use crate::model::{ControlMode, Model};

mod command_delay;
mod sensor;
pub use command_delay::CommandDelayLine;
pub use sensor::FtSensorState;

/// The most rows a contact can have in any layout ([`crate::contact::ContactRows`]): the size of
/// a remembered contact impulse.
pub const MAX_ROWS_PER_CONTACT: usize = 4;

/// Identifies a contact point across steps, for warm starting. Ordered by pair, then features
/// (the order in which the narrow phase emits contacts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct ContactKey {
    /// Index into [`Model::collision_pairs`].
    pub pair: u32,
    /// Feature of the first geometry (vertex / face id).
    pub feature_a: u32,
    /// Feature of the second geometry.
    pub feature_b: u32,
}

/// A contact impulse remembered from the previous step.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct WarmContact {
    /// Which contact.
    pub key: ContactKey,
    /// Impulse per row of the contact layout ([`crate::contact::ContactRows`]; point contact:
    /// `[normal, tangent1, tangent2]` in N·s, then torsion in N·m·s), unused rows 0.
    pub impulse: [f64; MAX_ROWS_PER_CONTACT],
    /// Contact normal (world) when it was stored, to rotate the tangential part.
    pub normal: [f64; 3],
    /// Contact point (world, m) when it was stored: the match of a contact whose features
    /// changed ([`crate::step::warm_start`]).
    pub position: [f64; 3],
}

/// The simulation state.
#[derive(Clone, Debug, serde::Serialize)]
pub struct State {
    /// Simulation time (s).
    pub time_s: f64,
    /// Steps taken since the initial state.
    pub step_count: u64,
    /// Generalized positions (see [`crate::model`] for the layout).
    pub q: Vec<f64>,
    /// Generalized velocities.
    pub v: Vec<f64>,
    /// Contact impulses of the previous step (warm start); capacity fixed at
    /// `max_contacts`.
    pub warm_contacts: Vec<WarmContact>,
    /// Joint-row impulses of the previous step by slot (N·m·s or N·s); see
    /// [`Model::max_joint_rows`].
    pub warm_joint_rows: Vec<f64>,
    /// Force/torque sensor states (readings, filters, delay lines, noise generators), one per
    /// [`Model::sensors`].
    pub sensors: Vec<FtSensorState>,
    /// Deformable node positions (m, world), 3 per node ([`Model::deformables`] order).
    pub fem_x: Vec<f64>,
    /// Deformable node velocities (m/s, world), 3 per node.
    pub fem_v: Vec<f64>,
    /// Previous step's weld impulse on each welded deformable node (N·s, world axes; 3 per
    /// node, zero for unwelded nodes): the warm start of the weld's drift compensation
    /// (see [`crate::fem`], "Welds").
    pub fem_weld_impulse: Vec<f64>,
    /// The last step's velocity change `v⁺ − v` (same layout and units as [`State::v`],
    /// contact and joint impulses included): the second-order prediction of the midpoint
    /// velocity `v + ½ (v − v_prev)` for the velocity-dependent bias (docs/time-stepping.md,
    /// "Midpoint bias"). Used only while [`State::v`] still equals
    /// [`State::last_step_end_v`] bit for bit.
    pub last_step_dv: Vec<f64>,
    /// The last step's bias `h` (N or N·m per coordinate, the layout of [`State::v`]), evaluated
    /// at its midpoint velocity: with the midpoint bias it stands in for `h(q, v)` in the bound
    /// of this step's midpoint prediction (docs/time-stepping.md, "Midpoint bias"). Used with
    /// [`State::last_step_dv`].
    pub last_step_bias: Vec<f64>,
    /// [`State::v`] as the last step left it; empty history (NaN) before the first step. When
    /// `v` was written from outside since (a reset, a replay, a test), the prediction falls
    /// back to the unconstrained `½ (v + v*)`.
    pub last_step_end_v: Vec<f64>,
    /// The contact method's history between steps that the warm starts above do not hold (a
    /// kept factorisation's source, node warm starts, ...), in a layout the method owns and
    /// documents. Empty in a new state: the method sizes it at its first step (the one
    /// allocation) and reads an empty or all-zero history as "a new run".
    pub method_history: Vec<f64>,
    /// Per collision pair ([`Model::collision_pairs`]), the contact normal of its last narrow-
    /// phase query in each geometry's frame (`[n1; n2]`, unit, zero before the first): the
    /// first search direction of the next query's GJK.
    pub contact_pair_normals: Vec<[f64; 6]>,
    /// The contact method's history as a type of its own (for history that is not a flat
    /// vector, e.g. the equivalent-contact-point scheme's per-body solutions). `None` in a new
    /// state: the method creates it at its first step and reads `None` as "a new run".
    #[serde(skip)]
    pub method_state: Option<Box<dyn MethodState>>,
    /// The commands of the last steps, for the scene's command transport delay
    /// ([`Model::command_delay_s`]; empty without one).
    pub command_delay: CommandDelayLine,
}

/// A contact method's history between steps in a type of its own ([`State::method_state`]):
/// cloned with the state, overwritten without allocating when a state is restored.
pub trait MethodState: std::any::Any + std::fmt::Debug + Send + Sync {
    /// A boxed copy (allocates: for snapshots, never in the step).
    fn boxed_clone(&self) -> Box<dyn MethodState>;
    /// Overwrites `self` with `other` without allocating; `false` (and `self` unchanged) when
    /// `other` is another method's history or of another model's size.
    fn copy_from_dyn(&mut self, other: &dyn MethodState) -> bool;
    /// Back to the history of a new run, without allocating.
    fn reset(&mut self);
    /// The history as `Any`, for the method to read its own type back.
    fn as_any(&self) -> &dyn std::any::Any;
    /// The history as `Any`, for the method to write its own type.
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl Clone for Box<dyn MethodState> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl State {
    /// The model's initial state.
    pub fn new(model: &Model) -> Self {
        State {
            time_s: 0.0,
            step_count: 0,
            q: model.q_init.clone(),
            v: model.v_init.clone(),
            warm_contacts: Vec::with_capacity(model.contact.max_contacts),
            warm_joint_rows: vec![0.0; model.max_joint_rows()],
            sensors: model.sensors.iter().map(FtSensorState::new).collect(),
            fem_x: model.deformables.iter().flat_map(|d| d.rest.iter().flat_map(|p| [p.x, p.y, p.z])).collect(),
            fem_v: model
                .deformables
                .iter()
                .flat_map(|d| {
                    let v = d.initial_velocity;
                    d.attachment.iter().flat_map(move |a| if matches!(a, crate::fem::NodeAttachment::Free) { [v.x, v.y, v.z] } else { [0.0; 3] })
                })
                .collect(),
            fem_weld_impulse: vec![0.0; 3 * model.deformables.iter().map(|d| d.num_nodes()).sum::<usize>()],
            last_step_dv: vec![0.0; model.nv],
            last_step_bias: vec![0.0; model.nv],
            last_step_end_v: vec![f64::NAN; model.nv],
            method_history: Vec::new(),
            contact_pair_normals: vec![[0.0; 6]; model.collision_pairs.len()],
            method_state: None,
            command_delay: CommandDelayLine::new(model),
        }
    }

    /// Overwrites `self` with `other` (a state of the same model) without allocating: the
    /// real-time reset path. (The derived `clone_from` reallocates the vectors.) Warm contacts
    /// beyond `self`'s capacity are dropped.
    pub fn copy_from(&mut self, other: &State) {
        self.copy_motion_from(other);
        self.time_s = other.time_s;
        self.step_count = other.step_count;
        for (d, s) in self.sensors.iter_mut().zip(&other.sensors) {
            d.copy_from(s);
        }
    }

    /// Overwrites the motion of `self` with `other`'s: positions, velocities, deformable nodes,
    /// weld impulses, warm starts, the method's history and the last step's velocity change (so
    /// a restored copy continues bit for bit as the original would); keeps the time, the step
    /// count and the sensors' state (an episode restart). Allocates nothing once `self`'s method
    /// history has grown to `other`'s length. The exhaustive destructuring makes a new field a
    /// compile error here rather than a silently stale reset.
    pub fn copy_motion_from(&mut self, other: &State) {
        let State { time_s: _, step_count: _, q, v, warm_contacts, warm_joint_rows, sensors: _, fem_x, fem_v, fem_weld_impulse, last_step_dv, last_step_bias, last_step_end_v, method_history, contact_pair_normals, method_state, command_delay } =
            other;
        self.command_delay.copy_from(command_delay);
        let copied = match (self.method_state.as_mut(), method_state.as_ref()) {
            (Some(mine), Some(theirs)) => mine.copy_from_dyn(theirs.as_ref()),
            (Some(mine), None) => {
                mine.reset();
                true
            }
            (None, None) => true,
            (None, Some(_)) => false,
        };
        if !copied {
            // another method's history, or none yet here: allocates (not on a real-time reset,
            // where both states come from the same simulation)
            self.method_state = method_state.clone();
        }
        self.contact_pair_normals.copy_from_slice(contact_pair_normals);
        self.method_history.clear();
        self.method_history.extend_from_slice(method_history);
        self.last_step_dv.copy_from_slice(last_step_dv);
        self.last_step_bias.copy_from_slice(last_step_bias);
        self.last_step_end_v.copy_from_slice(last_step_end_v);
        self.fem_x.copy_from_slice(fem_x);
        self.fem_v.copy_from_slice(fem_v);
        self.fem_weld_impulse.copy_from_slice(fem_weld_impulse);
        self.q.copy_from_slice(q);
        self.v.copy_from_slice(v);
        self.warm_contacts.clear();
        let room = warm_contacts.len().min(self.warm_contacts.capacity());
        self.warm_contacts.extend_from_slice(&warm_contacts[..room]);
        self.warm_joint_rows.copy_from_slice(warm_joint_rows);
    }

    /// `true` when every coordinate is finite.
    pub fn is_finite(&self) -> bool {
        self.q.iter().chain(self.v.iter()).chain(self.fem_x.iter()).chain(self.fem_v.iter()).all(|x| x.is_finite())
    }
}

/// Targets and modes for the actuated joints, indexed by velocity coordinate.
#[derive(Clone, Debug, Default)]
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
