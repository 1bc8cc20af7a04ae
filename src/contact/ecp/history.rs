//! The ECP scheme's history between steps, kept in the state ([`State::method_state`]) so that
//! restoring a state reproduces a run bit for bit: per free object, per pair of objects, per
//! robot-link geometry, per joint row and per link–object pair, the previous solution (the
//! Newton warm start of its contact problem), the impulses the contacts exchanged (the warm
//! start of the Gauss–Seidel sweeps) and the start and end states they were solved at.

use super::pair::{PairContact, NZ_PAIR};
use super::scheme::{rest_state, Exchange};
use super::stepper::{EcpBodyState, EcpContact};
use super::NZ;
use crate::math::Vec3;
use crate::state::{MethodState, State};

/// A free object's, or a robot-link geometry's, contact with the ground.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyHistory {
    /// The last accepted unknowns (the next solve's first guess).
    pub(super) warm: Option<[f64; NZ]>,
    /// The last solve.
    pub(super) last: EcpContact,
    /// The ground contact's impulses (free objects), N·s and N·m·s.
    pub(super) ground: Exchange,
    /// Whether the geometry was near the ground (robot links).
    pub(super) active: bool,
    /// Start-of-step state and end-of-step estimate of the last step.
    pub(super) start: EcpBodyState,
    pub(super) end: EcpBodyState,
    /// The impulse applied in `v⁺` (robot links: force N·s, moment N·m·s about the centre of
    /// mass, world).
    pub(super) wrench: [f64; 6],
    /// The last contact's force (N·s), friction moment (N·m·s) and ECP (m, world): robot links.
    pub(super) force: Vec3,
    pub(super) twist: Vec3,
    pub(super) point: Vec3,
}

impl BodyHistory {
    /// The history of a new run (as the scheme is built).
    pub(super) fn fresh() -> Self {
        BodyHistory {
            warm: None,
            last: EcpContact::default(),
            ground: Exchange::default(),
            active: false,
            start: rest_state(),
            end: rest_state(),
            wrench: [0.0; 6],
            force: Vec3::zeros(),
            twist: Vec3::zeros(),
            point: Vec3::zeros(),
        }
    }
}

/// The contact of two moving bodies (two free objects, or a robot link and a free object).
#[derive(Clone, Copy, Debug)]
pub(super) struct PairHistory {
    /// The last accepted unknowns and their designated inequality.
    pub(super) warm: Option<([f64; NZ_PAIR], usize)>,
    /// Whether the pair was solved (near enough to touch).
    pub(super) active: bool,
    /// The expected normal from B into A.
    pub(super) n0: Vec3,
    /// The impulses the two exchanged (N·s, N·m·s).
    pub(super) exchange: Exchange,
    /// The last solve.
    pub(super) last: PairContact,
    /// The link's start and end state and applied impulse (link–object pairs).
    pub(super) start: EcpBodyState,
    pub(super) end: EcpBodyState,
    pub(super) wrench: [f64; 6],
}

impl PairHistory {
    /// The history of a new run (as the scheme is built).
    pub(super) fn fresh() -> Self {
        PairHistory {
            warm: None,
            active: false,
            n0: Vec3::z(),
            exchange: Exchange::default(),
            last: PairContact::default(),
            start: rest_state(),
            end: rest_state(),
            wrench: [0.0; 6],
        }
    }
}

/// A joint's limit and friction rows (robot links).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct JointHistory {
    /// Rows active in the last step (lower limit, upper limit, friction) and their bias (m/s or
    /// rad/s).
    pub(super) active: [bool; 3],
    pub(super) bias: [f64; 2],
    /// Their impulses (N·m·s or N·s): the next step's warm start.
    pub(super) lambda: [f64; 3],
    /// The friction impulse bound of the last step (N·m·s or N·s).
    pub(super) friction_bound: f64,
}

/// The whole history, in the order of the scheme's objects, object pairs, link geometries,
/// joint rows and link–object pairs.
#[derive(Clone, Debug, Default)]
pub(super) struct EcpHistory {
    pub(super) objects: Vec<BodyHistory>,
    pub(super) pairs: Vec<PairHistory>,
    pub(super) links: Vec<BodyHistory>,
    pub(super) joints: Vec<JointHistory>,
    pub(super) link_pairs: Vec<PairHistory>,
}

impl EcpHistory {
    /// The sizes (objects, pairs, links, joints, link pairs).
    pub(super) fn shape(&self) -> [usize; 5] {
        [self.objects.len(), self.pairs.len(), self.links.len(), self.joints.len(), self.link_pairs.len()]
    }

    /// The history in `state` if it is this scheme's, of the sizes `shape`.
    pub(super) fn of(state: &State, shape: [usize; 5]) -> Option<&EcpHistory> {
        state.method_state.as_ref()?.as_any().downcast_ref::<EcpHistory>().filter(|h| h.shape() == shape)
    }

    /// The same, to write.
    pub(super) fn of_mut(state: &mut State, shape: [usize; 5]) -> Option<&mut EcpHistory> {
        state.method_state.as_mut()?.as_any_mut().downcast_mut::<EcpHistory>().filter(|h| h.shape() == shape)
    }
}

impl MethodState for EcpHistory {
    fn boxed_clone(&self) -> Box<dyn MethodState> {
        Box::new(self.clone())
    }
    fn copy_from_dyn(&mut self, other: &dyn MethodState) -> bool {
        let Some(o) = other.as_any().downcast_ref::<EcpHistory>() else { return false };
        if o.shape() != self.shape() {
            return false;
        }
        self.objects.copy_from_slice(&o.objects);
        self.pairs.copy_from_slice(&o.pairs);
        self.links.copy_from_slice(&o.links);
        self.joints.copy_from_slice(&o.joints);
        self.link_pairs.copy_from_slice(&o.link_pairs);
        true
    }
    fn reset(&mut self) {
        self.objects.fill(BodyHistory::fresh());
        self.pairs.fill(PairHistory::fresh());
        self.links.fill(BodyHistory::fresh());
        self.joints.fill(JointHistory::default());
        self.link_pairs.fill(PairHistory::fresh());
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
