//! The bodies that carry mass in the whole-model dynamics passes (CRBA, RNEA). A body on a fixed
//! joint (a foot, a flange, an F/T link, a tool) moves exactly as its nearest ancestor with
//! coordinates: the same spatial velocity and acceleration in world coordinates. Its Newton–Euler
//! force `I a + v ×* I v` is linear in its inertia, so adding its world inertia to that
//! ancestor's gives the same subtree forces, `M(q)` and `h(q, v)`, with fewer bodies in the
//! passes. Bodies welded to the world carry nothing: no coordinate lies above them.

use super::{BodyId, JointKind, Model};

/// The bodies that carry mass in the whole-model dynamics passes: those with coordinates, each
/// carrying the bodies welded to it by fixed joints (module documentation).
#[derive(Clone, Debug)]
pub struct MassBodies {
    /// Bodies with coordinates, ascending (parents first).
    pub bodies: Vec<BodyId>,
    /// For each body of the model: its nearest strict ancestor with coordinates (`None` for a
    /// root, or when only welded bodies lie above it). Read for [`MassBodies::bodies`] only.
    pub parent: Vec<Option<BodyId>>,
    /// `(welded body, the moving body that carries it)`, ascending in the welded body.
    pub welded: Vec<(BodyId, BodyId)>,
    /// For each body of the model: whether it floats free and carries nothing (a free joint at
    /// the root, no body below it: a box, a ball). Its mass matrix block is constant in its own
    /// axes ([`crate::dynamics::mass_matrix`]).
    pub lone_free: Vec<bool>,
}

impl MassBodies {
    /// The mass bodies of `model` (from its topology and joint kinds only).
    pub fn new(model: &Model) -> Self {
        let moves = |b: BodyId| model.bodies[b].joint.kind != JointKind::Fixed;
        // the nearest ancestor-or-self with coordinates, if any
        let mut carrier: Vec<Option<BodyId>> = Vec::with_capacity(model.bodies.len());
        let mut parent = Vec::with_capacity(model.bodies.len());
        let (mut bodies, mut welded) = (vec![], vec![]);
        for (b, body) in model.bodies.iter().enumerate() {
            let above = body.parent.and_then(|p| carrier[p]);
            parent.push(above);
            if moves(b) {
                carrier.push(Some(b));
                bodies.push(b);
            } else {
                carrier.push(above);
                if let Some(m) = above {
                    welded.push((b, m));
                }
            }
        }
        let lone_free = (0..model.bodies.len())
            .map(|b| model.bodies[b].parent.is_none() && model.bodies[b].joint.kind == JointKind::Free && model.bodies.iter().all(|o| o.parent != Some(b)))
            .collect();
        MassBodies { bodies, parent, welded, lone_free }
    }
}
