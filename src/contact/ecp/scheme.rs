//! The ECP whole-step scheme: every free object's contacts (with the ground, through its
//! [`EcpStepper`], and with other objects, [`super::pair`]), the robot links' contacts and joint
//! rows (`links`) and the link–object pairs (`link_object`), coupled by Gauss–Seidel sweeps over
//! the contacts, each contact's problem solved in full with the other contacts of its bodies
//! frozen at their latest impulses (docs/ecp.md, "Bodies touching each other", "Robot links
//! against objects"), where Xie & Chakraborty (Sec. IV) solve one MNCP with all bodies and
//! contacts concatenated; and the solved contacts as the engine reports them.

use super::{block, convex_shape, link_object, links, mncp, pair, EcpBody, EcpBodyState, EcpContact, EcpParams, EcpPlane, EcpStepper};
use crate::collision::Contact;
use crate::contact::{ContactRows, SchemeInput, SchemeOutput, SolveStats, WholeStepScheme};
use crate::math::{Pose, Vec3};
use crate::model::{GeomShape, JointKind, Model};
use crate::state::State;
use super::history::{BodyHistory, EcpHistory, JointHistory, PairHistory};
use nalgebra::{Quaternion, UnitQuaternion};

/// A point of a body at the end of the step (`end` pose) carried, as a material point, to the
/// start-of-step pose `start` (where the engine's contacts and body poses of the step are).
pub(super) fn carry_to_start(start: &EcpBodyState, end: &EcpBodyState, point: &Vec3) -> Vec3 {
    start.com_m + start.rotation * (end.rotation.inverse() * (point - end.com_m))
}

/// A material point of a body, where the last step's end left it (this step's start pose
/// `start`), carried to this step's expected end at the body's start twist:
/// `p + h (v + ω × (p − x⁰))`. The warm start's exchanged impulses act at the last step's
/// end-of-step points; a contact solved this step acts at this step's. Carried forward, the
/// frozen ones agree with the solved ones on a body in steady motion, so that the last step's
/// solution is again a fixed point of the sweeps (docs/ecp.md, "Robot links against objects").
pub(super) fn carry_over_step(start: &EcpBodyState, point: &Vec3, h: f64) -> Vec3 {
    point + (start.velocity + start.angular_velocity.cross(&(point - start.com_m))) * h
}

impl Exchange {
    /// The exchange's points carried to this step's expected end with their bodies
    /// ([`carry_over_step`]): `a` the state of the body at `point_a`, `b` of the body at
    /// `point_b` (`None`: the ground, whose point stays).
    pub(super) fn carried(&self, a: &EcpBodyState, b: Option<&EcpBodyState>, h: f64) -> Exchange {
        Exchange { point_a: carry_over_step(a, &self.point_a, h), point_b: b.map_or(self.point_b, |b| carry_over_step(b, &self.point_b, h)), ..*self }
    }
}

/// The contact key of the one contact the scheme reports for collision pair `pair`.
pub(super) fn contact_key(pair: usize) -> crate::state::ContactKey {
    crate::state::ContactKey { pair: pair as u32, feature_a: u32::MAX, feature_b: u32::MAX }
}

/// A body at rest at the origin (placeholder state before the first step).
pub(super) fn rest_state() -> EcpBodyState {
    EcpBodyState { com_m: Vec3::zeros(), rotation: UnitQuaternion::identity(), velocity: Vec3::zeros(), angular_velocity: Vec3::zeros() }
}

/// The impulse a contact passes between its bodies over a step: `force` (N·s) at `point_a` and
/// the friction moment `twist` (N·m·s) on A, their opposites at `point_b` on B (none for the
/// ground). Points at the end of the step (world).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Exchange {
    pub(super) force: Vec3,
    pub(super) twist: Vec3,
    pub(super) point_a: Vec3,
    pub(super) point_b: Vec3,
}

impl Exchange {
    /// Largest change of the impulses from `other`, over `scale` (N·s).
    pub(super) fn change(&self, other: &Exchange, scale: f64) -> f64 {
        ((self.force - other.force).norm() + (self.twist - other.twist).norm()) / scale
    }
}

/// One free object the scheme moves.
#[derive(Clone, Debug)]
pub(super) struct Slot {
    pub(super) body: usize,
    pub(super) q_index: usize,
    pub(super) v_index: usize,
    pub(super) geom: usize,
    pub(super) ecp_body: EcpBody,
    pub(super) stepper: EcpStepper,
    pub(super) last: EcpContact,
    /// The ground pair of its geometry: index and friction coefficient.
    pub(super) ground_pair: Option<(usize, f64)>,
    /// Its ground contact's impulses (previous sweep / step).
    pub(super) ground: Exchange,
    /// Start-of-step state and the current end-of-step estimate.
    pub(super) start: EcpBodyState,
    pub(super) end: EcpBodyState,
}

/// Two free objects that can touch: A is the body of the collision pair's second geometry.
#[derive(Clone, Debug)]
pub(super) struct BodyPair {
    pub(super) pair: usize,
    pub(super) a: usize,
    pub(super) b: usize,
    pub(super) friction: f64,
    pub(super) stepper: pair::PairStepper,
    /// Solved this step (close enough to touch).
    pub(super) active: bool,
    /// Expected normal from B into A.
    pub(super) n0: Vec3,
    pub(super) exchange: Exchange,
    pub(super) last: pair::PairContact,
}

/// A contact the scheme solved, in the form the rest of the engine reads ([`Contact`] plus its
/// impulse rows in the [`ContactRows::POINT_TORSION`] layout).
#[derive(Clone, Copy, Debug)]
pub(super) struct SolvedContact {
    /// Index into `Model::collision_pairs`.
    pub(super) pair: usize,
    /// The contact: the ECP as a material point of body B carried to the start-of-step pose
    /// (where the engine's collision contacts and body poses of the step are), the contact frame
    /// (normal from A into B).
    pub(super) contact: Contact,
    /// `[p_n, p_t, p_o, p_r]` on body B (N·s, N·s, N·s, N·m·s).
    pub(super) impulse: [f64; 4],
}

/// The ECP whole-step scheme: one [`EcpStepper`] per free object, the ground plane.
pub struct EcpScheme {
    pub(super) params: EcpParams,
    pub(super) slots: Vec<Slot>,
    /// The ground: plane, geometry index.
    pub(super) ground: Option<(EcpPlane, usize)>,
    /// Per tree: moved by a slot (else it moves freely, without contact).
    pub(super) owned_trees: Vec<bool>,
    /// Per collision pair: its contacts are the scheme's (replaced by the solved ECP).
    pub(super) owned_pairs: Vec<bool>,
    /// The contacts of the last step (capacity: one per collision pair).
    pub(super) solved: Vec<SolvedContact>,
    /// Pairs of free objects that can touch.
    pub(super) pairs: Vec<BodyPair>,
    /// Gauss–Seidel sweeps of the last step.
    pub(super) last_sweeps: u32,
    /// Newton iterations (Jacobian evaluations) of the current step, over every solve.
    pub(super) step_iterations: u32,
    /// Scratch of the cold-start estimate: slots by height, load per slot (N·s).
    pub(super) order: Vec<usize>,
    pub(super) load: Vec<f64>,
    /// Robot links that can touch the ground, with their robots' joint rows.
    pub(super) links: links::RobotLinks,
    /// Robot-link geometries that can touch a free object.
    pub(super) link_pairs: Vec<link_object::LinkObjectPair>,
    /// The coupled contacts as one block (docs/ecp.md, "Closed loops: one block"), and its
    /// scratch: per object slot its block body (`usize::MAX`: none), the block's links
    /// `(link body, a link–object pair of it)`.
    pub(super) block: block::Block,
    pub(super) block_of_slot: Vec<usize>,
    pub(super) block_links: Vec<(usize, usize)>,
}

/// The impulse a pair problem's solution `z` exchanges: force and friction moment on A (N·s,
/// N·m·s), the ECP on A and the point on B; none when the bodies are apart (`p_n = 0`).
pub(super) fn pair_exchange(problem: &pair::BodyPairProblem, z: &[f64; pair::NZ_PAIR]) -> Exchange {
    use pair::idx;
    if z[idx::PN] <= 0.0 {
        return Exchange::default();
    }
    let [n, t, o] = pair::contact_frame(problem, z);
    let p = problem.impulse_scale;
    let at = |i: usize| Vec3::new(z[i], z[i + 1], z[i + 2]);
    Exchange { force: (n * z[idx::PN] + t * z[idx::PT] + o * z[idx::PO]) * p, twist: n * (z[idx::PR] * p), point_a: at(idx::A1), point_b: at(idx::A2) }
}

impl EcpScheme {
    /// Builds the scheme for `model`: one slot per free object with a supported shape.
    pub fn new(params: EcpParams, model: &Model) -> Self {
        let ground = model.ground_geom.and_then(|g| match model.geoms[g].shape {
            GeomShape::Plane { normal, offset } => Some((EcpPlane::new(normal, offset, 0.0), g)),
            _ => None,
        });
        let mut slots = Vec::new();
        for o in &model.objects {
            let b = &model.bodies[o.body];
            if o.fixed || b.joint.kind != JointKind::Free {
                continue;
            }
            let Some(geom) = model.geoms.iter().position(|g| g.body == Some(o.body)) else { continue };
            let Some(shape) = convex_shape(&model.geoms[geom].shape) else { continue };
            let ecp_body = EcpBody { mass_kg: b.mass, inertia_body: b.inertia_com, shape, geom_in_body: model.geoms[geom].x_body_geom };
            slots.push(Slot {
                body: o.body,
                q_index: b.joint.q_index,
                v_index: b.joint.v_index,
                geom,
                ecp_body,
                stepper: EcpStepper::new(params.clone()),
                last: EcpContact::default(),
                ground_pair: ground.and_then(|(_, g)| Self::ground_pair(model, g, geom)),
                ground: Exchange::default(),
                start: rest_state(),
                end: rest_state(),
            });
        }
        let mut owned_trees = vec![false; model.trees.len()];
        for s in &slots {
            owned_trees[model.bodies[s.body].tree] = true;
        }
        let n_slots = slots.len();
        let slot_of = |g: usize| slots.iter().position(|s| s.geom == g);
        let mut pairs = Vec::new();
        for (k, p) in model.collision_pairs.iter().enumerate() {
            if let (false, Some(b), Some(a)) = (p.with_ground, slot_of(p.geom_a), slot_of(p.geom_b)) {
                pairs.push(BodyPair {
                    pair: k,
                    a,
                    b,
                    friction: p.friction,
                    stepper: pair::PairStepper::default(),
                    active: false,
                    n0: Vec3::z(),
                    exchange: Exchange::default(),
                    last: pair::PairContact::default(),
                });
            }
        }
        let link_pairs = link_object::build(model, slot_of, params.link_tangential_compliance);
        let links = links::RobotLinks::new(&params, model, ground.map(|(_, g)| g));
        let mut link_bodies: Vec<usize> = link_pairs.iter().map(|p| p.link).collect();
        link_bodies.sort_unstable();
        link_bodies.dedup();
        let block = block::Block::with_capacity(n_slots + link_bodies.len(), n_slots + pairs.len() + link_pairs.len(), 3 * links.joint_count());
        let owned_pairs = model
            .collision_pairs
            .iter()
            .enumerate()
            .map(|(k, p)| {
                (p.with_ground && slot_of(p.geom_b).is_some()) || pairs.iter().any(|bp| bp.pair == k) || links.owns_pair(k) || link_pairs.iter().any(|lp| lp.pair == k)
            })
            .collect();
        EcpScheme {
            params,
            slots,
            ground,
            owned_trees,
            owned_pairs,
            solved: Vec::with_capacity(model.collision_pairs.len()),
            pairs,
            last_sweeps: 0,
            step_iterations: 0,
            order: (0..n_slots).collect(),
            load: vec![0.0; n_slots],
            links,
            block,
            block_of_slot: vec![usize::MAX; n_slots],
            block_links: Vec::with_capacity(link_pairs.len()),
            link_pairs,
        }
    }

    /// Fills `solved` with the last step's contacts in contact (the ECP carried, as a material
    /// point of the pushed body, to its start-of-step pose).
    fn report(&mut self, model: &Model) {
        let carry = |s: &Slot, point: &Vec3| carry_to_start(&s.start, &s.end, point);
        let key = contact_key;
        for slot in &self.slots {
            let (c, Some((pl, g)), Some((pair, mu))) = (&slot.last, self.ground, slot.ground_pair) else { continue };
            if c.in_contact {
                self.solved.push(SolvedContact {
                    pair,
                    contact: Contact {
                        key: key(pair),
                        body_a: None,
                        body_b: Some(slot.body),
                        geom_a: g,
                        geom_b: slot.geom,
                        position: carry(slot, &c.ecp_m),
                        normal: pl.normal,
                        tangent1: pl.tangent1,
                        tangent2: pl.tangent2,
                        distance: 0.0,
                        friction: mu,
                    },
                    impulse: [c.normal_impulse, c.tangent_impulse[0], c.tangent_impulse[1], c.torsion_impulse],
                });
            }
        }
        for p in self.pairs.iter().filter(|p| p.active && p.last.in_contact) {
            let (sa, sb) = (&self.slots[p.a], &self.slots[p.b]);
            let [n, t, o] = p.last.frame;
            self.solved.push(SolvedContact {
                pair: p.pair,
                contact: Contact {
                    key: key(p.pair),
                    body_a: Some(sb.body),
                    body_b: Some(sa.body),
                    geom_a: sb.geom,
                    geom_b: sa.geom,
                    position: carry(sa, &p.last.ecp_m),
                    normal: n,
                    tangent1: t,
                    tangent2: o,
                    distance: 0.0,
                    friction: model.collision_pairs[p.pair].friction,
                },
                impulse: p.last.impulse,
            });
        }
        if let Some((pl, g)) = self.ground {
            self.links.report(&pl, g, &mut self.solved);
        }
        for lp in &self.link_pairs {
            let s = &self.slots[lp.object];
            if let Some(c) = lp.report(model, (s.body, s.geom, &s.start, &s.end)) {
                self.solved.push(c);
            }
        }
    }

    /// The last step's contacts between a robot link and a free object: `(link body index,
    /// object body index, link is side A, contact)`; side B pushes side A with the contact's
    /// impulse, the normal points from B into A (ECP at the end of the step on A).
    pub fn last_link_object_contacts(&self) -> impl Iterator<Item = (usize, usize, bool, &pair::PairContact)> {
        self.link_pairs.iter().filter(|p| p.active).map(|p| (p.link, self.slots[p.object].body, p.link_is_a, &p.last))
    }

    /// Gauss–Seidel sweeps over the contacts in the last step (1 when no two bodies touch).
    pub fn last_sweeps(&self) -> u32 {
        self.last_sweeps
    }

    /// Gauss–Seidel sweeps over the robot links' contacts and joint rows in the last step (0
    /// without robots touching the ground).
    pub fn last_link_sweeps(&self) -> u32 {
        self.links.last_sweeps
    }

    /// The last step's contact of each robot-link geometry that can touch the ground: `(link
    /// body index, geometry index, contact)` (ECP at the end of the step on the first-order
    /// twist pose; impulses on the link).
    pub fn last_link_contacts(&self) -> impl Iterator<Item = (usize, usize, &EcpContact)> {
        self.links.last_contacts()
    }

    /// The last step's contacts between two free objects: `(body A, body B, contact)` (B pushes A
    /// with the contact's impulse).
    pub fn last_pair_contacts(&self) -> impl Iterator<Item = (usize, usize, &pair::PairContact)> {
        self.pairs.iter().filter(|p| p.active).map(|p| (self.slots[p.a].body, self.slots[p.b].body, &p.last))
    }

    /// The impulses of slot `i`'s contacts other than its ground contact (when `skip_ground`)
    /// and the body pair `skip_pair`: linear (N·s) and angular about its current end-of-step
    /// centre of mass (N·m·s).
    fn frozen_impulse(&self, i: usize, skip_ground: bool, skip_pair: Option<usize>, skip_link_pair: Option<usize>) -> (Vec3, Vec3) {
        self.impulse_on(i, !skip_ground, |k| Some(k) != skip_pair, |k| Some(k) != skip_link_pair)
    }

    /// The impulses on slot `i` of its ground contact (when `ground`), its active body pairs
    /// `k` with `pair(k)` and its active link–object pairs `k` with `link_pair(k)`: linear (N·s)
    /// and angular about its current end-of-step centre of mass (N·m·s).
    pub(super) fn impulse_on(&self, i: usize, ground: bool, pair: impl Fn(usize) -> bool, link_pair: impl Fn(usize) -> bool) -> (Vec3, Vec3) {
        let com = self.slots[i].end.com_m;
        let (mut lin, mut ang) = (Vec3::zeros(), Vec3::zeros());
        if ground {
            let e = &self.slots[i].ground;
            lin += e.force;
            ang += (e.point_a - com).cross(&e.force) + e.twist;
        }
        for (k, p) in self.pairs.iter().enumerate() {
            if !p.active || !pair(k) {
                continue;
            }
            let e = &p.exchange;
            if p.a == i {
                lin += e.force;
                ang += (e.point_a - com).cross(&e.force) + e.twist;
            } else if p.b == i {
                lin -= e.force;
                ang -= (e.point_b - com).cross(&e.force) + e.twist;
            }
        }
        for (k, p) in self.link_pairs.iter().enumerate() {
            if !p.active || p.object != i || !link_pair(k) {
                continue;
            }
            let e = &p.exchange;
            if p.link_is_a {
                lin -= e.force;
                ang -= (e.point_b - com).cross(&e.force) + e.twist;
            } else {
                lin += e.force;
                ang += (e.point_a - com).cross(&e.force) + e.twist;
            }
        }
        (lin, ang)
    }

    /// Cold start of the sweeps: the contacts without impulses from the previous step get the
    /// static load they would carry (each body's weight plus what rests on it, shared equally
    /// among the contacts below it, highest bodies first), so that a stack starts near its
    /// solution instead of propagating the weight one level per sweep.
    fn estimate_cold_loads(&mut self, gravity: &Vec3, h: f64) {
        let Some(up) = (-gravity).try_normalize(1e-12) else { return };
        let slots = &self.slots;
        self.order.sort_unstable_by(|&i, &j| up.dot(&slots[j].start.com_m).total_cmp(&up.dot(&slots[i].start.com_m)));
        for (i, s) in self.slots.iter().enumerate() {
            self.load[i] = s.ecp_body.mass_kg * gravity.norm() * h;
        }
        for k in 0..self.order.len() {
            let i = self.order[k];
            let slot = self.slots[i].clone();
            let on_ground = match (self.ground, slot.ground_pair) {
                (Some((pl, _)), Some(_)) => {
                    let geom = Pose::from_parts(slot.start.com_m.into(), slot.start.rotation) * slot.ecp_body.geom_in_body;
                    let gap = slot.ecp_body.shape.plane_gap(&geom.translation.vector, &geom.rotation.to_rotation_matrix().into_inner(), &pl.normal, pl.offset_m);
                    gap <= 0.01 * slot.ecp_body.shape.size_m()
                }
                _ => false,
            };
            let below = |p: &BodyPair, slots: &[Slot]| p.active && (p.a == i || p.b == i) && {
                let other = if p.a == i { p.b } else { p.a };
                up.dot(&slots[other].start.com_m) < up.dot(&slot.start.com_m)
            };
            let supports = self.pairs.iter().filter(|p| below(p, &self.slots)).count() + on_ground as usize;
            if supports == 0 {
                continue;
            }
            let share = self.load[i] / supports as f64;
            let com = slot.start.com_m;
            if on_ground && self.slots[i].ground.force == Vec3::zeros() {
                self.slots[i].ground = Exchange { force: up * share, twist: Vec3::zeros(), point_a: com, point_b: com };
            }
            for p in 0..self.pairs.len() {
                if !below(&self.pairs[p], &self.slots) {
                    continue;
                }
                let (a, b) = (self.pairs[p].a, self.pairs[p].b);
                let other = if a == i { b } else { a };
                self.load[other] += share;
                if self.pairs[p].exchange.force == Vec3::zeros() {
                    // force on A: up when A is the upper body
                    let force = if a == i { up * share } else { -up * share };
                    self.pairs[p].exchange = Exchange { force, twist: Vec3::zeros(), point_a: com, point_b: com };
                }
            }
        }
    }

    /// Solves slot `i` against the ground with its other contacts frozen; returns the change of
    /// its ground impulse (relative to its weight impulse).
    fn solve_ground(&mut self, i: usize, gravity: &Vec3, h: f64) -> f64 {
        let extra = self.frozen_impulse(i, true, None, None);
        let plane = self.ground.zip(self.slots[i].ground_pair).map(|((pl, _), (_, mu))| EcpPlane { friction: mu, ..pl });
        let slot = &mut self.slots[i];
        slot.stepper.params.clone_from(&self.params);
        let mut end = slot.start;
        let c = slot.stepper.step(&slot.ecp_body, &mut end, plane.as_ref(), gravity, h, &extra.0, &extra.1);
        slot.end = end;
        slot.last = c;
        self.step_iterations += c.solve.iterations;
        let exchange = match (c.in_contact, plane) {
            (true, Some(pl)) => Exchange {
                force: pl.normal * c.normal_impulse + pl.tangent1 * c.tangent_impulse[0] + pl.tangent2 * c.tangent_impulse[1],
                twist: pl.normal * c.torsion_impulse,
                point_a: c.ecp_m,
                point_b: c.ecp_m,
            },
            _ => Exchange::default(),
        };
        let change = exchange.change(&slot.ground, slot.ecp_body.mass_kg * gravity.norm().max(1.0) * h);
        slot.ground = exchange;
        change
    }

    /// Solves body pair `k` with both bodies' other contacts frozen; returns the change of its
    /// impulse (relative to the lighter body's weight impulse).
    fn solve_pair(&mut self, k: usize, gravity: &Vec3, h: f64) -> f64 {
        let (a, b) = (self.pairs[k].a, self.pairs[k].b);
        let (extra_a, extra_b) = (self.frozen_impulse(a, false, Some(k), None), self.frozen_impulse(b, false, Some(k), None));
        let (sa, sb) = (self.slots[a].start, self.slots[b].start);
        let (ba, bb) = (self.slots[a].ecp_body, self.slots[b].ecp_body);
        let p = &mut self.pairs[k];
        let c = p.stepper.solve(&self.params, (&ba, &sa, &extra_a), (&bb, &sb, &extra_b), gravity, h, p.friction, &p.n0);
        p.last = c;
        self.step_iterations += c.solve.iterations;
        let [n, t, o] = c.frame;
        let [pn, pt, po, pr] = c.impulse;
        let exchange = if c.in_contact {
            Exchange { force: n * pn + t * pt + o * po, twist: n * pr, point_a: c.ecp_m, point_b: c.point_b_m }
        } else {
            Exchange::default()
        };
        let change = exchange.change(&p.exchange, ba.mass_kg.min(bb.mass_kg) * gravity.norm().max(1.0) * h);
        p.exchange = exchange;
        let [va, wa, vb, wb] = c.velocities;
        for (slot, v, w, start) in [(a, va, wa, sa), (b, vb, wb, sb)] {
            let (com, rotation) = EcpStepper::end_pose(&start, h, &v, &w);
            self.slots[slot].end = EcpBodyState { com_m: com, rotation, velocity: v, angular_velocity: w };
        }
        change
    }

    /// Solves link–object pair `k` with the object's other contacts frozen and the robot's other
    /// impulses in `velocity`; returns the change of its impulse (relative to the lighter side's
    /// weight impulse).
    fn solve_link_pair(&mut self, k: usize, velocity: &mut [f64], gravity: &Vec3, h: f64) -> f64 {
        let i = self.link_pairs[k].object;
        let extra = self.frozen_impulse(i, false, None, Some(k));
        let (so, bo) = (self.slots[i].start, self.slots[i].ecp_body);
        let (end, iterations, change) = self.link_pairs[k].solve(&self.params, velocity, (&bo, &so, &extra), gravity, h);
        self.slots[i].end = end;
        self.step_iterations += iterations;
        change
    }

    /// The contacts the last step solved, as the engine reports them: `(collision pair index,
    /// contact, [p_n, p_t, p_o, p_r])` with the ECP carried to the start-of-step pose.
    pub fn reported_contacts(&self) -> impl Iterator<Item = (usize, &Contact, [f64; 4])> {
        self.solved.iter().map(|c| (c.pair, &c.contact, c.impulse))
    }

    /// The last step's contact of each free object with the ground: `(body index, contact)`.
    pub fn last_contacts(&self) -> impl Iterator<Item = (usize, &EcpContact)> {
        self.slots.iter().map(|s| (s.body, &s.last))
    }

    /// Index and friction coefficient of the ground pair of `geom` (`None` when they cannot touch).
    fn ground_pair(model: &Model, ground: usize, geom: usize) -> Option<(usize, f64)> {
        model.collision_pairs.iter().position(|p| p.with_ground && p.geom_a == ground && p.geom_b == geom).map(|i| (i, model.collision_pairs[i].friction))
    }
}

impl WholeStepScheme for EcpScheme {
    /// One step: every body's contacts (with the ground and with other bodies) solved by
    /// Gauss–Seidel sweeps over the contacts, each contact's problem (body–ground, 24 unknowns;
    /// body–body, 35) solved in full with the other contacts of its bodies frozen at their
    /// latest impulses, until no impulse changes (docs/ecp.md, "Bodies touching each other").
    ///
    /// Long by design: one numeric algorithm read top to bottom against the paper, whose
    /// intermediate values feed each other in a fixed order (splitting it would move state into
    /// parameter structs without making a step of it separately meaningful).
    fn advance(&mut self, input: &SchemeInput, state: &mut State, output: &mut SchemeOutput) -> SolveStats {
        let model = input.model;
        let h = model.timestep_s;
        let gravity = model.gravity;
        output.velocity.copy_from_slice(input.free_velocity.as_slice());
        let rows = ContactRows::POINT_TORSION;
        output.impulse[..rows.start(input.contacts.len())].fill(0.0);
        self.solved.clear();
        self.load_history(state);
        for slot in &mut self.slots {
            let (qi, vi) = (slot.q_index, slot.v_index);
            let q = &state.q[qi..qi + 7];
            let rot = UnitQuaternion::new_normalize(Quaternion::new(q[6], q[3], q[4], q[5]));
            let v = &state.v[vi..vi + 6];
            slot.start = EcpBodyState {
                com_m: Vec3::new(q[0], q[1], q[2]),
                rotation: rot,
                velocity: rot * Vec3::new(v[0], v[1], v[2]),
                angular_velocity: rot * Vec3::new(v[3], v[4], v[5]),
            };
            slot.end = slot.start;
            // the warm start's ground contact acts where the body will be at this step's end
            slot.ground = slot.ground.carried(&slot.start, None, h);
        }
        // which body pairs can touch by the end of the step: close at their free end poses
        // along the expected normal (the collision normal at the start, else centre to centre)
        let mut any_pair = false;
        for k in 0..self.pairs.len() {
            let (a, b) = (self.pairs[k].a, self.pairs[k].b);
            let (sa, sb) = (self.slots[a].start, self.slots[b].start);
            let mut n0 = Vec3::zeros();
            for c in input.contacts.iter().filter(|c| c.key.pair as usize == self.pairs[k].pair) {
                n0 += c.normal;
            }
            if n0.norm() < 1e-9 {
                n0 = sa.com_m - sb.com_m;
            }
            let n0 = n0.try_normalize(1e-12).unwrap_or_else(Vec3::z);
            let (ba, bb) = (&self.slots[a].ecp_body, &self.slots[b].ecp_body);
            let free = |body: &EcpBody, s: &EcpBodyState| mncp::moving_body(body, s, &(Vec3::zeros(), Vec3::zeros()), &gravity, h);
            let ((_, va, wa), (_, vb, wb)) = (free(ba, &sa), free(bb, &sb));
            let margin = 0.01 * (ba.shape.size_m() + bb.shape.size_m()) + h * (sa.velocity - sb.velocity).norm();
            let reach = |body: &EcpBody| body.shape.bounding_radius_m() + body.geom_in_body.translation.vector.norm();
            let near = (sa.com_m - sb.com_m).norm() <= reach(ba) + reach(bb) + margin
                && pair::gap_along(ba, &sa, (&va, &wa), bb, &sb, (&vb, &wb), h, &n0) <= margin;
            let p = &mut self.pairs[k];
            if !near {
                p.stepper.reset();
                p.exchange = Exchange::default();
                p.last = pair::PairContact::default();
            }
            if near {
                p.exchange = p.exchange.carried(&sa, Some(&sb), h);
            }
            p.active = near;
            p.n0 = n0;
            any_pair |= near;
        }
        // robots whose links can touch objects: their link contacts, the objects' contacts and
        // their joint rows in one set of sweeps (docs/ecp.md, "Robot links against objects")
        let joined = !self.link_pairs.is_empty();
        // without a ground plane the robots have no ground slots, only joint rows: any plane
        let plane = Some(self.ground.map_or_else(|| EcpPlane::new(Vec3::z(), 0.0, 0.0), |(pl, _)| pl));
        let mut any_link_pair = false;
        if joined {
            if let (false, Some(pl)) = (self.links.is_empty(), plane) {
                self.links.prepare(input, state, output.velocity, &pl);
            }
            for k in 0..self.link_pairs.len() {
                let i = self.link_pairs[k].object;
                let (so, bo) = (self.slots[i].start, self.slots[i].ecp_body);
                let (_, vo, wo) = mncp::moving_body(&bo, &so, &(Vec3::zeros(), Vec3::zeros()), &gravity, h);
                let mut n0 = Vec3::zeros();
                for c in input.contacts.iter().filter(|c| c.key.pair as usize == self.link_pairs[k].pair) {
                    n0 += c.normal;
                }
                self.link_pairs[k].prepare(input, output.velocity, (&bo, &so, (vo, wo)), n0, h);
                any_link_pair |= self.link_pairs[k].active;
            }
        }
        if any_pair || any_link_pair {
            self.estimate_cold_loads(&gravity, h);
        }
        // Gauss–Seidel sweeps, alternating direction; the previous step's impulses start them
        let (n_slots, n_items) = (self.slots.len(), self.slots.len() + self.pairs.len());
        let coupled = any_pair || joined;
        let sweeps = if coupled { self.params.max_sweeps } else { 1 };
        let mut stats = SolveStats { iterations: 0, residual: 0.0, converged: true };
        let mut sweeps_done = 0;
        let mut link_iterations = 0;
        let mut next_block = self.params.block_after_sweeps;
        self.step_iterations = 0;
        for sweep in 0..sweeps {
            let mut change: f64 = 0.0;
            for k in 0..n_items {
                let item = if sweep % 2 == 0 { k } else { n_items - 1 - k };
                if item < n_slots {
                    change = change.max(self.solve_ground(item, &gravity, h));
                } else if self.pairs[item - n_slots].active {
                    change = change.max(self.solve_pair(item - n_slots, &gravity, h));
                }
            }
            if joined {
                for k in 0..self.link_pairs.len() {
                    let k = if sweep % 2 == 0 { k } else { self.link_pairs.len() - 1 - k };
                    if self.link_pairs[k].active {
                        change = change.max(self.solve_link_pair(k, output.velocity, &gravity, h));
                    }
                }
                if let (false, Some(pl)) = (self.links.is_empty(), plane) {
                    let (iterations, moved) = self.links.sweep(&self.params, output.velocity, &pl, &gravity, h, sweep);
                    link_iterations += iterations;
                    change = change.max(moved);
                }
            }
            sweeps_done += 1;
            if change <= self.params.sweep_tolerance {
                break;
            }
            stats.converged &= sweep + 1 < sweeps || !coupled;
            // the step's Newton budget spent: the step ends here, unconverged
            if self.step_iterations + link_iterations >= self.params.max_step_iterations {
                stats.converged = false;
                break;
            }
            // the sweeps have not settled: the coupled contacts as one block, the sweeps then
            // go on from its solution (docs/ecp.md, "Closed loops: one block"); after a block
            // that did not converge, the sweeps go on alone ten times as long before the next
            let every = self.params.block_after_sweeps;
            if coupled && every > 0 && sweep + 1 == next_block && sweep + 1 < sweeps {
                next_block += every;
                if let Some(outcome) = self.solve_block(output.velocity, &gravity, h) {
                    self.step_iterations += outcome.iterations;
                    if !outcome.converged {
                        next_block += 9 * every;
                    }
                }
            }
        }
        self.last_sweeps = sweeps_done;
        stats.iterations = self.step_iterations + link_iterations;
        for slot in &self.slots {
            stats.residual = stats.residual.max(slot.last.solve.residual);
            stats.converged &= slot.last.solve.converged;
        }
        for p in self.pairs.iter().filter(|p| p.active) {
            stats.residual = stats.residual.max(p.last.solve.residual);
            stats.converged &= p.last.solve.converged;
        }
        for p in self.link_pairs.iter().filter(|p| p.active) {
            stats.residual = stats.residual.max(p.last.solve.residual);
            stats.converged &= p.last.solve.converged;
        }
        // positions and body-frame velocities at the end pose
        for slot in &self.slots {
            let (qi, vi) = (slot.q_index, slot.v_index);
            let (start, end) = (slot.start, slot.end);
            let (com, r) = EcpStepper::end_pose(&start, h, &end.velocity, &end.angular_velocity);
            let c = r.quaternion();
            state.q[qi..qi + 7].copy_from_slice(&[com.x, com.y, com.z, c.i, c.j, c.k, c.w]);
            let (vb, wb) = (r.inverse() * end.velocity, r.inverse() * end.angular_velocity);
            output.velocity[vi..vi + 6].copy_from_slice(&[vb.x, vb.y, vb.z, wb.x, wb.y, wb.z]);
        }
        // robots: their links' ground contacts and joint rows (v⁺ of their trees in the output)
        if let (false, Some(pl)) = (self.links.is_empty(), plane) {
            if joined {
                let settled = stats.converged || sweeps_done < sweeps;
                self.links.finish(sweeps_done, settled, &mut stats);
            } else {
                let link_stats = self.links.advance(&self.params, input, state, output.velocity, &pl);
                stats.iterations += link_stats.iterations;
                stats.residual = stats.residual.max(link_stats.residual);
                stats.converged &= link_stats.converged;
            }
        }
        self.report(model);
        // trees the scheme does not move as free objects: robots (v⁺ from their link contacts and
        // joint rows above, or v⁺ = v* for robots that cannot touch the ground) and, only when a
        // scene outside the coverage was built without `check_model`, anything else (free
        // motion); positions with the engine's map
        for (t, tree) in model.trees.iter().enumerate() {
            if !self.owned_trees[t] {
                for b in tree.body_start..tree.body_end {
                    crate::model::tree::integrate_joint_position(&model.bodies[b].joint, &mut state.q, output.velocity, h);
                }
            }
        }
        output.positions_integrated = true;
        self.save_history(state);
        stats
    }

    /// Replaces the collision contacts of the pairs the scheme owns (a box on its face: four
    /// corners) by one contact per solved patch at its ECP, with the normal impulse, the friction
    /// impulses and the friction moment on its four rows.
    fn rewrite_contacts(&mut self, contacts: &mut Vec<Contact>, impulse: &mut [f64], num_joint_rows: usize) {
        let rows = ContactRows::POINT_TORSION;
        let nr = rows.len();
        let joint_start = rows.start(contacts.len());
        // keep the contacts of other pairs, with their rows
        let mut kept = 0;
        for i in 0..contacts.len() {
            if self.owned_pairs.get(contacts[i].key.pair as usize).copied().unwrap_or(false) {
                continue;
            }
            contacts[kept] = contacts[i];
            impulse.copy_within(rows.start(i)..rows.start(i) + nr, rows.start(kept));
            kept += 1;
        }
        contacts.truncate(kept);
        let added = self.solved.len().min(contacts.capacity() - kept);
        impulse.copy_within(joint_start..joint_start + num_joint_rows, rows.start(kept + added));
        for c in &self.solved[..added] {
            let r = rows.start(contacts.len());
            impulse[r..r + nr].copy_from_slice(&c.impulse);
            contacts.push(c.contact);
        }
    }
}

impl Slot {
    fn history(&self) -> BodyHistory {
        BodyHistory { warm: self.stepper.warm, last: self.last, ground: self.ground, start: self.start, end: self.end, ..BodyHistory::fresh() }
    }
    fn set_history(&mut self, h: &BodyHistory) {
        (self.stepper.warm, self.last, self.ground, self.start, self.end) = (h.warm, h.last, h.ground, h.start, h.end);
        self.stepper.warm_is_solution = None;
    }
}

impl BodyPair {
    fn history(&self) -> PairHistory {
        PairHistory { warm: self.stepper.warm, active: self.active, n0: self.n0, exchange: self.exchange, last: self.last, ..PairHistory::fresh() }
    }
    fn set_history(&mut self, h: &PairHistory) {
        (self.stepper.warm, self.active, self.n0, self.exchange, self.last) = (h.warm, h.active, h.n0, h.exchange, h.last);
        self.stepper.warm_is_solution = false;
    }
}

impl EcpScheme {
    /// The sizes of this scheme's history ([`EcpHistory::shape`]).
    fn history_shape(&self) -> [usize; 5] {
        let (links, joints) = self.links.history_len();
        [self.slots.len(), self.pairs.len(), links, joints, self.link_pairs.len()]
    }

    /// Takes the history the last step left in `state`, or that of a new run when the state
    /// holds none of this scheme's (allocates nothing).
    fn load_history(&mut self, state: &State) {
        let shape = self.history_shape();
        match EcpHistory::of(state, shape) {
            Some(h) => {
                self.slots.iter_mut().zip(&h.objects).for_each(|(s, h)| s.set_history(h));
                self.pairs.iter_mut().zip(&h.pairs).for_each(|(p, h)| p.set_history(h));
                self.links.set_history(&h.links, &h.joints);
                self.link_pairs.iter_mut().zip(&h.link_pairs).for_each(|(p, h)| p.set_history(h));
            }
            None => {
                self.slots.iter_mut().for_each(|s| s.set_history(&BodyHistory::fresh()));
                self.pairs.iter_mut().for_each(|p| p.set_history(&PairHistory::fresh()));
                self.links.reset_history();
                self.link_pairs.iter_mut().for_each(|p| p.set_history(&PairHistory::fresh()));
            }
        }
    }

    /// Leaves this step's history in `state` (creating it at the first step of a state that
    /// has none: the one allocation).
    fn save_history(&self, state: &mut State) {
        let shape = self.history_shape();
        if EcpHistory::of(state, shape).is_none() {
            let (links, joints) = self.links.history_len();
            state.method_state = Some(Box::new(EcpHistory {
                objects: vec![BodyHistory::fresh(); self.slots.len()],
                pairs: vec![PairHistory::fresh(); self.pairs.len()],
                links: vec![BodyHistory::fresh(); links],
                joints: vec![JointHistory::default(); joints],
                link_pairs: vec![PairHistory::fresh(); self.link_pairs.len()],
            }));
        }
        let Some(h) = EcpHistory::of_mut(state, shape) else { return };
        h.objects.iter_mut().zip(&self.slots).for_each(|(h, s)| *h = s.history());
        h.pairs.iter_mut().zip(&self.pairs).for_each(|(h, p)| *h = p.history());
        self.links.history(&mut h.links, &mut h.joints);
        h.link_pairs.iter_mut().zip(&self.link_pairs).for_each(|(h, p)| *h = p.history());
    }
}
