//! A robot link (a gripper pad, a foot) in equivalent-contact-point contact with a free object
//! (docs/ecp.md, "Robot links against objects").
//!
//! The pair problem of [`super::pair`] with one side a robot link: the link's rows are
//! `ν − ν_free − Λ⁻¹ W = 0` with its operational-space mobility `Λ⁻¹ = J M̃⁻¹ Jᵀ` and its twist
//! without this contact `ν_free = J v⁺ − Λ⁻¹ W_this` ([`super::MovingBody::mobility`]), the
//! other side the object's Newton–Euler equation with its other contacts frozen. Each solve is
//! one item of the Gauss–Seidel sweeps that also hold the objects' ground and body–body contacts
//! and the robots' ground contacts and joint rows; the change of the link's impulse updates the
//! robot's generalised velocity, `v⁺ ← v⁺ + M̃⁻¹ Jᵀ ΔW`, and the object's impulse is frozen for
//! its other contacts like a body–body pair's.

use super::history::PairHistory;
use super::links::{apply_link_wrench, link_free_motion, link_kinematics, link_mobility, link_twist};
use super::{carry_to_start, contact_key, mncp, pair, EcpBody, EcpBodyState, EcpParams, EcpStepper, Exchange, SolvedContact};
use crate::collision::Contact;
use crate::contact::SchemeInput;
use crate::math::{Pose, Vec3};
use crate::model::{Model, TreeKind};
use nalgebra::{Translation3, UnitQuaternion};

/// One robot-link geometry and one free object that can touch (a collision pair).
#[derive(Clone, Debug)]
pub(super) struct LinkObjectPair {
    /// Index into `Model::collision_pairs`.
    pub(super) pair: usize,
    /// The link (body index) and its geometry.
    pub(super) link: usize,
    pub(super) link_geom: usize,
    /// The object: its slot in the scheme.
    pub(super) object: usize,
    /// The link is side A of the pair problem (the body of the collision pair's second
    /// geometry, which carries the designated inequality; the normal points from B into A).
    pub(super) link_is_a: bool,
    /// The link's tree velocity range.
    dofs: (usize, usize),
    com_local: Vec3,
    /// The link's shape and geometry frame; `mass_kg` its robot's mass (reference of the scale).
    pub(super) link_body: EcpBody,
    /// Friction coefficient of the pair.
    pub(super) friction: f64,
    pub(super) stepper: pair::PairStepper,
    /// Solved this step (close enough to touch).
    pub(super) active: bool,
    /// Expected normal from B into A.
    pub(super) n0: Vec3,
    /// The link's start-of-step state and its end-of-step estimate (first-order twist pose).
    pub(super) start: EcpBodyState,
    pub(super) end: EcpBodyState,
    /// The impulse between the two (force on A, friction moment on A, points on A and B).
    pub(super) exchange: Exchange,
    /// The impulse on the link applied in `v⁺`: force (N·s) and moment about its start-of-step
    /// centre of mass (N·m·s), world.
    wrench: [f64; 6],
    /// The last solve.
    pub(super) last: pair::PairContact,
    /// `J` (6 × nv), `M̃⁻¹ Jᵀ` (stored transposed, 6 × nv), `Λ⁻¹`.
    jac: Vec<f64>,
    y: Vec<f64>,
    mobility: [[f64; 6]; 6],
}

/// The link–object pairs of `model`, with `slot_of(geom)` the scheme's object slot of a free
/// object's geometry and `tangential_compliance` their contacts' compliance
/// ([`super::EcpParams::link_tangential_compliance`]). Allocates all scratch.
pub(super) fn build(model: &Model, slot_of: impl Fn(usize) -> Option<usize>, tangential_compliance: f64) -> Vec<LinkObjectPair> {
    let nv = model.nv;
    let link_of = |g: usize| {
        let b = model.geoms[g].body?;
        matches!(model.trees[model.bodies[b].tree].kind, TreeKind::Robot(_)).then_some(b)
    };
    let mut out = Vec::new();
    for (k, p) in model.collision_pairs.iter().enumerate() {
        if p.with_ground {
            continue;
        }
        let (link_geom, object_geom, link_is_a) = match (link_of(p.geom_a), link_of(p.geom_b)) {
            (None, Some(_)) => (p.geom_b, p.geom_a, true),
            (Some(_), None) => (p.geom_a, p.geom_b, false),
            _ => continue,
        };
        let (Some(object), Some(shape)) = (slot_of(object_geom), super::convex_shape(&model.geoms[link_geom].shape)) else { continue };
        let link = model.geoms[link_geom].body.unwrap_or_default();
        let body = &model.bodies[link];
        let tree = &model.trees[body.tree];
        let mass: f64 = model.bodies[tree.body_start..tree.body_end].iter().map(|b| b.mass).sum();
        let geom_in_body = Pose::from_parts(Translation3::from(-body.com), UnitQuaternion::identity()) * model.geoms[link_geom].x_body_geom;
        out.push(LinkObjectPair {
            pair: k,
            link,
            link_geom,
            object,
            link_is_a,
            dofs: (tree.v_start, tree.v_end),
            com_local: body.com,
            link_body: EcpBody { mass_kg: mass.max(1e-6), inertia_body: body.inertia_com, shape, geom_in_body },
            friction: p.friction,
            stepper: pair::PairStepper { tangential_compliance, ..Default::default() },
            active: false,
            n0: Vec3::z(),
            start: super::rest_state(),
            end: super::rest_state(),
            exchange: Exchange::default(),
            wrench: [0.0; 6],
            last: pair::PairContact::default(),
            jac: vec![0.0; 6 * nv],
            y: vec![0.0; 6 * nv],
            mobility: [[0.0; 6]; 6],
        });
    }
    out
}

impl LinkObjectPair {
    /// Start of a step: the link's kinematics; whether the pair can touch by the end of the step
    /// (bounding spheres, then the gap along the expected normal `n0` at the free end poses,
    /// within 1 % of the sizes plus the relative travel); when it can, `M̃⁻¹ Jᵀ`, `Λ⁻¹` and the
    /// previous step's impulse re-applied to `velocity` (the warm start). `object` is the
    /// object's start state and free velocities.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn prepare(&mut self, input: &SchemeInput, velocity: &mut [f64], object: (&EcpBody, &EcpBodyState, (Vec3, Vec3)), n0: Vec3, h: f64) {
        self.start = link_kinematics(input, self.link, &self.com_local, &mut self.jac);
        self.end = self.start;
        let dofs = self.dofs;
        let twist = link_twist(&self.jac, velocity, dofs);
        let (vl, wl) = (Vec3::new(twist[0], twist[1], twist[2]), Vec3::new(twist[3], twist[4], twist[5]));
        let (bo, so, (vo, wo)) = object;
        let (sl, bl) = (&self.start, &self.link_body);
        // n0 from B into A; the A/B roles of link and object
        let n0 = if n0.norm() > 1e-9 { n0.normalize() } else { if self.link_is_a { sl.com_m - so.com_m } else { so.com_m - sl.com_m }.try_normalize(1e-12).unwrap_or_else(Vec3::z) };
        let margin = 0.01 * (bl.shape.size_m() + bo.shape.size_m()) + h * ((sl.velocity - so.velocity).norm() + (vl - vo).norm());
        let reach = |b: &EcpBody| b.shape.bounding_radius_m() + b.geom_in_body.translation.vector.norm();
        let gap = if self.link_is_a {
            pair::gap_along(bl, sl, (&vl, &wl), bo, so, (&vo, &wo), h, &n0)
        } else {
            pair::gap_along(bo, so, (&vo, &wo), bl, sl, (&vl, &wl), h, &n0)
        };
        let near = (sl.com_m - so.com_m).norm() <= reach(bl) + reach(bo) + margin && gap <= margin;
        self.n0 = n0;
        self.active = near;
        if !near {
            self.stepper.reset();
            self.exchange = Exchange::default();
            self.wrench = [0.0; 6];
            self.last = pair::PairContact::default();
            return;
        }
        // the warm start's exchange acts where the link and the object will be at this step's end
        self.exchange = if self.link_is_a { self.exchange.carried(sl, Some(so), h) } else { self.exchange.carried(so, Some(sl), h) };
        // the previous step's friction, the reference of the tangential compliance: the exchanged
        // impulse less its part along the last solve's normal, over this step's scale
        let scale = bo.mass_kg.min(bl.mass_kg) * input.model.gravity.norm().max(1.0) * h;
        let n_last = if self.last.in_contact { self.last.frame[0] } else { n0 };
        let friction = (self.exchange.force - n_last * n_last.dot(&self.exchange.force)) / scale;
        let moment = self.exchange.twist / scale;
        self.stepper.friction_ref = [friction.x, friction.y, friction.z, moment.x, moment.y, moment.z];
        link_mobility(input, dofs, &self.jac, &mut self.y, &mut self.mobility);
        // warm start: the last impulse on the link, its moment about the new centre of mass
        let (force, twist, point) = self.on_link();
        let moment = (point - self.start.com_m).cross(&force) + twist;
        self.wrench = [force.x, force.y, force.z, moment.x, moment.y, moment.z];
        apply_link_wrench(&self.wrench, &self.y, velocity, dofs);
    }

    /// The exchanged impulse as it acts on the link: force (N·s), friction moment (N·m·s), point.
    fn on_link(&self) -> (Vec3, Vec3, Vec3) {
        let e = &self.exchange;
        if self.link_is_a {
            (e.force, e.twist, e.point_a)
        } else {
            (-e.force, -e.twist, e.point_b)
        }
    }

    /// Solves the pair with everything else frozen: the robot's other impulses in `velocity`,
    /// the object's other contacts in `object_extra` (linear N·s, angular N·m·s about its
    /// current end-of-step centre of mass). Applies the change of the link's impulse to
    /// `velocity`; returns the object's end state, the Newton iterations and the change of the
    /// impulse over the lighter side's weight impulse.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn solve(&mut self, params: &EcpParams, velocity: &mut [f64], object: (&EcpBody, &EcpBodyState, &(Vec3, Vec3)), gravity: &Vec3, h: f64) -> (EcpBodyState, u32, f64) {
        let dofs = self.dofs;
        // ν_free = J v⁺ − Λ⁻¹ W (this pair's own share removed)
        let (ml, (vl, wl)) = link_free_motion(&self.link_body, &self.start, &self.jac, &self.mobility, &self.wrench, velocity, dofs, h);
        let (bo, so, extra) = object;
        let (mo, vo, wo) = mncp::moving_body(bo, so, extra, gravity, h);
        let link_side = (&self.link_body, &self.start, ml, (vl, wl));
        let object_side = (bo, so, mo, (vo, wo));
        let c = if self.link_is_a {
            self.stepper.solve_moving(params, link_side, object_side, gravity, h, self.friction, &self.n0)
        } else {
            self.stepper.solve_moving(params, object_side, link_side, gravity, h, self.friction, &self.n0)
        };
        self.last = c;
        let [n, t, o] = c.frame;
        let [pn, pt, po, pr] = c.impulse;
        let exchange = if c.in_contact { Exchange { force: n * pn + t * pt + o * po, twist: n * pr, point_a: c.ecp_m, point_b: c.point_b_m } } else { Exchange::default() };
        let scale = bo.mass_kg.min(self.link_body.mass_kg) * gravity.norm().max(1.0) * h;
        let change = exchange.change(&self.exchange, scale);
        self.exchange = exchange;
        let (force, twist, point) = self.on_link();
        let moment = (point - self.start.com_m).cross(&force) + twist;
        let wrench = [force.x, force.y, force.z, moment.x, moment.y, moment.z];
        let delta: [f64; 6] = std::array::from_fn(|r| wrench[r] - self.wrench[r]);
        apply_link_wrench(&delta, &self.y, velocity, dofs);
        self.wrench = wrench;
        let [va, wa, vb, wb] = c.velocities;
        let ((v_link, w_link), (v_obj, w_obj)) = if self.link_is_a { ((va, wa), (vb, wb)) } else { ((vb, wb), (va, wa)) };
        let (com, rotation) = EcpStepper::end_pose(&self.start, h, &v_link, &w_link);
        self.end = EcpBodyState { com_m: com, rotation, velocity: v_link, angular_velocity: w_link };
        let (com, rotation) = EcpStepper::end_pose(so, h, &v_obj, &w_obj);
        (EcpBodyState { com_m: com, rotation, velocity: v_obj, angular_velocity: w_obj }, c.solve.iterations, change)
    }

    /// The link's start-of-step Jacobian `J` (6 × nv, row-major), `M̃⁻¹ Jᵀ` (stored
    /// transposed) and its tree's velocity range: the cross-mobility of two links of one robot
    /// is `J_l (M̃⁻¹ J_l'ᵀ)` over that range.
    pub(super) fn link_jacobians(&self) -> (&[f64], &[f64], (usize, usize)) {
        (&self.jac, &self.y, self.dofs)
    }

    /// The impulse on the link applied in the robot's velocity: force (N·s) and moment about its
    /// start-of-step centre of mass (N·m·s), world.
    pub(super) fn applied_wrench(&self) -> [f64; 6] {
        self.wrench
    }

    /// The pair's problem as one contact of the block (docs/ecp.md, "Closed loops: one block"):
    /// both sides as [`super::block::probe`] bodies, the last solve's unknowns (`None` before
    /// a solve) and the impulse scale (N·s). `object`: the object's body and start state.
    pub(super) fn block_problem(&self, params: &EcpParams, velocity: &[f64], object: (&EcpBody, &EcpBodyState), gravity: &Vec3, h: f64) -> Option<(pair::BodyPairProblem, [f64; pair::NZ_PAIR], f64)> {
        let (z, k1) = self.stepper.warm?;
        let (ml, _) = link_free_motion(&self.link_body, &self.start, &self.jac, &self.mobility, &self.wrench, velocity, self.dofs, h);
        let (bo, so) = object;
        let (mo, _, _) = mncp::moving_body(bo, so, &(Vec3::zeros(), Vec3::zeros()), gravity, h);
        let (a, b, ma, mb) = if self.link_is_a { (ml, mo, self.link_body.mass_kg, bo.mass_kg) } else { (mo, ml, bo.mass_kg, self.link_body.mass_kg) };
        let scale = ma.min(mb) * h * gravity.norm().max(1.0);
        let mut problem = super::block::pair_problem(&a, &b, &self.n0, self.friction, [params.e_t, params.e_o, params.e_r_m], k1, h, scale);
        (problem.tangential_compliance, problem.friction_ref) = (self.stepper.tangential_compliance, self.stepper.friction_ref);
        Some((problem, z, scale))
    }

    /// Takes the block's solution `z` of [`Self::block_problem`]'s `problem`: the warm start,
    /// the exchanged impulse, the link's end state, and the change of its impulse applied to the
    /// robot's `velocity`.
    pub(super) fn accept_block(&mut self, problem: &pair::BodyPairProblem, z: &[f64; pair::NZ_PAIR], velocity: &mut [f64], h: f64) {
        self.stepper.warm = Some((*z, problem.k1));
        self.stepper.warm_is_solution = true;
        self.exchange = super::scheme::pair_exchange(problem, z);
        let (force, twist, point) = self.on_link();
        let moment = (point - self.start.com_m).cross(&force) + twist;
        let wrench = [force.x, force.y, force.z, moment.x, moment.y, moment.z];
        let delta: [f64; 6] = std::array::from_fn(|r| wrench[r] - self.wrench[r]);
        apply_link_wrench(&delta, &self.y, velocity, self.dofs);
        self.wrench = wrench;
        let at = if self.link_is_a { 0 } else { 6 };
        let (v, w) = (Vec3::new(z[at], z[at + 1], z[at + 2]), Vec3::new(z[at + 3], z[at + 4], z[at + 5]));
        let (com, rotation) = EcpStepper::end_pose(&self.start, h, &v, &w);
        self.end = EcpBodyState { com_m: com, rotation, velocity: v, angular_velocity: w };
    }

    /// The pair's contact as the engine reports it, when in contact: the ECP as a material point
    /// of A carried to its start pose (`object` the object's start and end states), normal from
    /// B into A, impulses on A.
    pub(super) fn report(&self, model: &Model, object: (usize, usize, &EcpBodyState, &EcpBodyState)) -> Option<SolvedContact> {
        if !(self.active && self.last.in_contact) {
            return None;
        }
        let (obj_body, obj_geom, obj_start, obj_end) = object;
        let ((body_a, geom_a, start_a, end_a), (body_b, geom_b)) = if self.link_is_a {
            ((self.link, self.link_geom, &self.start, &self.end), (obj_body, obj_geom))
        } else {
            ((obj_body, obj_geom, obj_start, obj_end), (self.link, self.link_geom))
        };
        let [n, t, o] = self.last.frame;
        Some(SolvedContact {
            pair: self.pair,
            contact: Contact {
                key: contact_key(self.pair),
                body_a: Some(body_b),
                body_b: Some(body_a),
                geom_a: geom_b,
                geom_b: geom_a,
                position: carry_to_start(start_a, end_a, &self.last.ecp_m),
                normal: n,
                tangent1: t,
                tangent2: o,
                distance: 0.0,
                friction: model.collision_pairs[self.pair].friction,
            },
            impulse: self.last.impulse,
        })
    }
}

impl LinkObjectPair {
    /// The pair's history (see [`super::history`]).
    pub(super) fn history(&self) -> PairHistory {
        PairHistory { warm: self.stepper.warm, active: self.active, n0: self.n0, exchange: self.exchange, last: self.last, start: self.start, end: self.end, wrench: self.wrench }
    }

    /// Takes the pair's history.
    pub(super) fn set_history(&mut self, h: &PairHistory) {
        (self.stepper.warm, self.active, self.n0, self.exchange, self.last) = (h.warm, h.active, h.n0, h.exchange, h.last);
        self.stepper.warm_is_solution = false;
        (self.start, self.end, self.wrench) = (h.start, h.end, h.wrench);
    }
}
