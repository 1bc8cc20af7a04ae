//! The scheme's coupled contacts as one block (docs/ecp.md, "Closed loops: one block"): which
//! bodies and contacts go in, their problems from the sweeps' latest state, and the block's
//! solution written back where the sweeps read it.
//!
//! The block holds every object that presses on another object or a robot link at the sweeps'
//! latest state, every robot link pressing on such an object, and those contacts: the objects'
//! ground contacts, body–body and link–object contacts that pass an impulse. A contact that
//! touches with no normal impulse, or one below `EcpParams::block_min_impulse` of its lighter
//! side's weight impulse, stays out: its friction is undetermined to the square root of the
//! tolerance in the block's residual, and its limit-surface rows scale as `1/p_n`, which makes
//! the block's Newton matrix numerically singular. Its impulse stays frozen on its bodies while
//! the block is solved, and the sweeps after the block solve it. The robots' own ground
//! contacts stay Gauss–Seidel items, their impulses frozen in the robots' velocity while the
//! block is solved. The joint rows of a robot with a link in the block join it, all but a
//! friction row whose coordinate an active limit also holds (frozen the same way). After a solve the sweeps go on from the block's solution;
//! a sweep that changes no impulse ends the step.

use super::block::{BlockBody, BlockContact, BlockRow, BodyDynamics, LocalProblem, Owner};
use super::links::link_twist;
use super::mncp::{self, BodyPlaneProblem, SolveOutcome};
use super::scheme::{pair_exchange, EcpScheme, Exchange};
use super::{EcpBodyState, EcpStepper};
use crate::math::Vec3;

/// Most Newton iterations of one block solve. A block that converges does so in 1–10 from the
/// sweeps' state (the two-pad grasp, the arm pushing a box); one that has not by then is stuck
/// on a change of its contacts' active set, which the sweeps resolve better.
const BLOCK_MAX_ITERATIONS: u32 = 20;

/// A block solve that stops above its tolerance but within this many contact tolerances
/// (`EcpParams::tolerance`) is written back all the same (the sweeps then verify it).
const NEAR_SOLUTION: f64 = 1e3;

impl EcpScheme {
    /// Builds the block from the sweeps' latest state, solves it and, when it converges, writes
    /// its solution back (warm starts, exchanged impulses, end states, the robots' `velocity`).
    /// `None` when there is no block to solve (nothing coupled, a contact without a solve yet, or
    /// more unknowns than the scratch holds).
    pub(super) fn solve_block(&mut self, velocity: &mut [f64], gravity: &Vec3, h: f64) -> Option<SolveOutcome> {
        let g = gravity.norm().max(1.0);
        let gh = g * h;
        self.block.clear();
        self.block_of_slot.fill(usize::MAX);
        self.block_links.clear();
        // bodies: objects that press on another object or a link, then the links
        let coupled = |i: usize, s: &Self| (0..s.pairs.len()).any(|k| s.pair_in_block(k, gh) && (s.pairs[k].a == i || s.pairs[k].b == i)) || (0..s.link_pairs.len()).any(|k| s.link_pair_in_block(k, gh) && s.link_pairs[k].object == i);
        for i in 0..self.slots.len() {
            if !coupled(i, self) {
                continue;
            }
            let s = &self.slots[i];
            // the impulses of its contacts outside the block stay frozen on it
            let outside = self.impulse_on(i, !self.ground_in_block(i, gh), |k| !self.pair_in_block(k, gh), |k| !self.link_pair_in_block(k, gh));
            let (mb, v_free, w_free) = mncp::moving_body(&s.ecp_body, &s.start, &outside, gravity, h);
            self.block_of_slot[i] = self.block.bodies.len();
            self.block.bodies.push(BlockBody {
                dynamics: BodyDynamics::Object { mass_kg: s.ecp_body.mass_kg, inertia_world: mb.inertia_world },
                free_twist: twist6(&v_free, &w_free),
                twist: twist6(&s.end.velocity, &s.end.angular_velocity),
                scale: s.ecp_body.mass_kg * g * h,
            });
        }
        let first_link = self.block.bodies.len();
        for (k, p) in self.link_pairs.iter().enumerate() {
            if self.link_pair_in_block(k, gh) && !self.block_links.iter().any(|(l, _)| *l == p.link) {
                self.block_links.push((p.link, k));
                let m = p.link_body.mass_kg;
                self.block.bodies.push(BlockBody {
                    dynamics: BodyDynamics::Link { mass_kg: m, robot: p.link_jacobians().2 .0 },
                    free_twist: [0.0; 6],
                    twist: twist6(&p.end.velocity, &p.end.angular_velocity),
                    scale: m * g * h,
                });
            }
        }
        let nb = self.block.bodies.len();
        if nb == 0 || nb * nb > self.block.mobility.len() {
            return None;
        }
        // the links' cross-mobilities and their twists without the block's impulses
        for (i, &(_, ki)) in self.block_links.iter().enumerate() {
            for (j, &(_, kj)) in self.block_links.iter().enumerate() {
                let (jac, _, dofs_i) = self.link_pairs[ki].link_jacobians();
                let (_, y, dofs_j) = self.link_pairs[kj].link_jacobians();
                let nv = velocity.len();
                let same_robot = dofs_i == dofs_j;
                self.block.mobility[(first_link + i) * nb + first_link + j] = std::array::from_fn(|r| {
                    std::array::from_fn(|c| if same_robot { super::tree_range::dot_range(&jac[r * nv..(r + 1) * nv], &y[c * nv..(c + 1) * nv], dofs_i) } else { 0.0 })
                });
            }
        }
        // the joint rows of the robots with a link in the block, and their couplings
        let mut row_index = 0;
        for (joint, row) in self.links.active_rows() {
            // a friction row whose coordinate an active limit also holds stays a sweep item, its
            // impulse frozen: the two rows' split is a mode of stiffness 1/ε whose Newton step
            // crosses the friction bound or the limit's sign, and the block's line search then
            // fails (docs/ecp.md, "A coordinate's rows as one law")
            if self.links.friction_held_by_limit(joint, row) {
                continue;
            }
            let data = self.links.block_row(joint, row, velocity);
            let Some(&(_, k)) = self.block_links.iter().find(|(_, k)| self.link_pairs[*k].link_jacobians().2 .0 == data.robot) else { continue };
            if self.block.rows.len() == self.block.rows.capacity() {
                return None;
            }
            let scale = self.link_pairs[k].link_body.mass_kg * g * h;
            self.block.rows.push(BlockRow { kind: data.kind, robot: data.robot, free_velocity: data.velocity, minv: data.minv, scale, lambda: data.lambda, owner: (joint, row) });
            row_index += 1;
        }
        let nr = row_index;
        if nr * nb > self.block.row_link.len() || nr * nr > self.block.row_row.len() {
            return None;
        }
        for r in 0..nr {
            let (joint, row) = self.block.rows[r].owner;
            let data = self.links.block_row(joint, row, velocity);
            let along = |y: &[f64]| data.terms.iter().map(|&(i, a)| a * y[i]).sum::<f64>();
            for b in 0..nb {
                self.block.row_link[r * nb + b] = [0.0; 6];
            }
            for (i, &(_, k)) in self.block_links.iter().enumerate() {
                let (_, y, dofs) = self.link_pairs[k].link_jacobians();
                if dofs.0 != data.robot {
                    continue;
                }
                let nv = velocity.len();
                self.block.row_link[r * nb + first_link + i] = std::array::from_fn(|c| along(&y[c * nv..(c + 1) * nv]));
            }
            for q in 0..nr {
                let (jq, rq) = self.block.rows[q].owner;
                let other = self.links.block_row(jq, rq, velocity);
                self.block.row_row[r * nr + q] = if other.robot == data.robot { other.sign * along(other.y) } else { 0.0 };
            }
        }
        // rows without the block's impulses: J v + b less the links' applied wrenches and the
        // rows' own impulses
        for r in 0..nr {
            let mut u = self.block.rows[r].free_velocity;
            for (i, &(link, _)) in self.block_links.iter().enumerate() {
                let gl = self.block.row_link[r * nb + first_link + i];
                for p in self.link_pairs.iter().enumerate().filter(|&(k, p)| self.link_pair_in_block(k, gh) && p.link == link).map(|(_, p)| p) {
                    let w = p.applied_wrench();
                    u -= (0..6).map(|c| gl[c] * w[c]).sum::<f64>();
                }
            }
            for q in 0..nr {
                u -= self.block.row_row[r * nr + q] * self.block.rows[q].lambda;
            }
            self.block.rows[r].free_velocity = u;
        }
        for i in 0..self.block_links.len() {
            let (link, k) = self.block_links[i];
            let (jac, _, dofs) = self.link_pairs[k].link_jacobians();
            let mut free = link_twist(jac, velocity, dofs);
            for r in 0..nr {
                let (gl, lambda) = (self.block.row_link[r * nb + first_link + i], self.block.rows[r].lambda);
                for (f, g) in free.iter_mut().zip(gl) {
                    *f -= g * lambda;
                }
            }
            for j in 0..self.block_links.len() {
                let other = self.block_links[j].0;
                let a = self.block.mobility[(first_link + i) * nb + first_link + j];
                for p in self.link_pairs.iter().enumerate().filter(|&(k, p)| self.link_pair_in_block(k, gh) && p.link == other).map(|(_, p)| p) {
                    let w = p.applied_wrench();
                    for (r, f) in free.iter_mut().enumerate() {
                        *f -= (0..6).map(|c| a[r][c] * w[c]).sum::<f64>();
                    }
                }
            }
            let _ = link;
            self.block.bodies[first_link + i].free_twist = free;
        }
        // contacts: the objects' ground contacts, body pairs, link–object pairs
        for i in 0..self.slots.len() {
            let b = self.block_of_slot[i];
            let s = &self.slots[i];
            // only contacts that push at the sweeps' latest state: the block keeps their active
            // set, the sweeps after it check the others
            let pushing = self.ground_in_block(i, gh);
            let (Some(((pl, _), (_, mu))), Some(z), true) = (self.ground.zip(s.ground_pair), s.stepper.warm, b != usize::MAX && pushing) else { continue };
            let (mb, _, _) = mncp::moving_body(&s.ecp_body, &s.start, &(Vec3::zeros(), Vec3::zeros()), gravity, h);
            let scale = s.ecp_body.mass_kg * h * g;
            let problem = BodyPlaneProblem {
                h_s: h,
                body: super::block::probe(&mb),
                normal: pl.normal.into(),
                tangent1: pl.tangent1.into(),
                tangent2: pl.tangent2.into(),
                plane_offset_m: pl.offset_m,
                friction: mu,
                limit_surface: [self.params.e_t, self.params.e_o, self.params.e_r_m],
                k1: s.last.designated,
                gap_mode: self.params.gap_mode,
                impulse_scale: scale,
            };
            self.block.contacts.push(BlockContact::new(Owner::Ground(i), LocalProblem::Ground(problem), &z, [b, b], scale));
        }
        for k in 0..self.pairs.len() {
            if !self.pair_in_block(k, gh) {
                continue;
            }
            let p = &self.pairs[k];
            let (z, k1) = p.stepper.warm?;
            let (sa, sb) = (&self.slots[p.a], &self.slots[p.b]);
            let (ma, _, _) = mncp::moving_body(&sa.ecp_body, &sa.start, &(Vec3::zeros(), Vec3::zeros()), gravity, h);
            let (mb, _, _) = mncp::moving_body(&sb.ecp_body, &sb.start, &(Vec3::zeros(), Vec3::zeros()), gravity, h);
            let scale = sa.ecp_body.mass_kg.min(sb.ecp_body.mass_kg) * h * g;
            let problem = super::block::pair_problem(&ma, &mb, &p.n0, p.friction, [self.params.e_t, self.params.e_o, self.params.e_r_m], k1, h, scale);
            let bodies = [self.block_of_slot[p.a], self.block_of_slot[p.b]];
            self.block.contacts.push(BlockContact::new(Owner::Pair(k), LocalProblem::Pair(problem), &z, bodies, scale));
        }
        for k in 0..self.link_pairs.len() {
            if !self.link_pair_in_block(k, gh) {
                continue;
            }
            let p = &self.link_pairs[k];
            let s = &self.slots[p.object];
            let (problem, z, scale) = p.block_problem(&self.params, velocity, (&s.ecp_body, &s.start), gravity, h)?;
            let link = first_link + self.block_links.iter().position(|(l, _)| *l == p.link)?;
            let object = self.block_of_slot[p.object];
            let bodies = if p.link_is_a { [link, object] } else { [object, link] };
            self.block.contacts.push(BlockContact::new(Owner::LinkPair(k), LocalProblem::Pair(problem), &z, bodies, scale));
        }
        if !self.block.fits() {
            return None;
        }
        // the block's own tolerance a tenth of a contact's: the contacts' solves from its
        // solution then stop at once
        let outcome = self.block.solve(0.1 * self.params.tolerance, self.params.max_iterations.min(BLOCK_MAX_ITERATIONS));
        // a block that stalled close to a solution (a degenerate contact, e.g. a face meeting a
        // face at an edge) still starts the sweeps nearer to it than they were
        if outcome.converged || outcome.residual <= NEAR_SOLUTION * self.params.tolerance {
            self.accept_block(velocity, h);
        }
        Some(outcome)
    }

    /// Whether slot `i`'s ground contact joins the block: it passes more than
    /// `block_min_impulse` of the object's weight impulse (`gh`: gravity times step, m/s).
    fn ground_in_block(&self, i: usize, gh: f64) -> bool {
        let s = &self.slots[i];
        s.ground.force.norm() > self.params.block_min_impulse * s.ecp_body.mass_kg * gh
    }

    /// Whether body pair `k` joins the block: solved this step and passing more than
    /// `block_min_impulse` of the lighter body's weight impulse.
    fn pair_in_block(&self, k: usize, gh: f64) -> bool {
        let p = &self.pairs[k];
        let lighter = self.slots[p.a].ecp_body.mass_kg.min(self.slots[p.b].ecp_body.mass_kg);
        p.active && p.exchange.force.norm() > self.params.block_min_impulse * lighter * gh
    }

    /// Whether link–object pair `k` joins the block: solved this step and passing more than
    /// `block_min_impulse` of the lighter side's weight impulse.
    fn link_pair_in_block(&self, k: usize, gh: f64) -> bool {
        let p = &self.link_pairs[k];
        let lighter = self.slots[p.object].ecp_body.mass_kg.min(p.link_body.mass_kg);
        p.active && p.exchange.force.norm() > self.params.block_min_impulse * lighter * gh
    }

    /// Writes the converged block back: the objects' end states, each contact's warm start and
    /// exchanged impulse, the links' impulses into the robots' `velocity`.
    fn accept_block(&mut self, velocity: &mut [f64], h: f64) {
        for i in 0..self.slots.len() {
            let b = self.block_of_slot[i];
            if b == usize::MAX {
                continue;
            }
            let t = self.block.bodies[b].twist;
            let (v, w) = (Vec3::new(t[0], t[1], t[2]), Vec3::new(t[3], t[4], t[5]));
            let s = &mut self.slots[i];
            let (com, rotation) = EcpStepper::end_pose(&s.start, h, &v, &w);
            s.end = EcpBodyState { com_m: com, rotation, velocity: v, angular_velocity: w };
        }
        for c in 0..self.block.contacts.len() {
            let contact = self.block.contacts[c];
            match (contact.owner, contact.problem) {
                (Owner::Ground(i), LocalProblem::Ground(p)) => {
                    use super::mncp::idx;
                    let z: [f64; mncp::NZ] = std::array::from_fn(|k| contact.z[k]);
                    let s = &mut self.slots[i];
                    s.stepper.warm = Some(z);
                    s.stepper.warm_is_solution = Some(p.k1);
                    s.ground = if z[idx::PN] > 0.0 {
                        let (n, t, o) = (Vec3::from(p.normal), Vec3::from(p.tangent1), Vec3::from(p.tangent2));
                        let a1 = Vec3::new(z[idx::A1], z[idx::A1 + 1], z[idx::A1 + 2]);
                        let scale = p.impulse_scale;
                        Exchange { force: (n * z[idx::PN] + t * z[idx::PT] + o * z[idx::PO]) * scale, twist: n * (z[idx::PR] * scale), point_a: a1, point_b: a1 }
                    } else {
                        Exchange::default()
                    };
                }
                (Owner::Pair(k), LocalProblem::Pair(p)) => {
                    let pr = &mut self.pairs[k];
                    pr.stepper.warm = Some((contact.z, p.k1));
                    pr.stepper.warm_is_solution = true;
                    pr.exchange = pair_exchange(&p, &contact.z);
                }
                (Owner::LinkPair(k), LocalProblem::Pair(p)) => {
                    self.link_pairs[k].accept_block(&p, &contact.z, velocity, h);
                }
                _ => {}
            }
        }
        for r in 0..self.block.rows.len() {
            let row = self.block.rows[r];
            self.links.set_row_impulse(row.owner.0, row.owner.1, row.lambda, velocity);
        }
    }
}

fn twist6(v: &Vec3, w: &Vec3) -> [f64; 6] {
    [v.x, v.y, v.z, w.x, w.y, w.z]
}
