//! The coupled contacts of a step solved as one block (docs/ecp.md, "Closed loops: one block").
//!
//! The Gauss–Seidel sweeps of the scheme solve each contact with its neighbours frozen. Where the
//! contacts close a loop (a cube held between two pads of one gripper, a box pushed by two links
//! of an arm while it rests on the ground) a sweep can crawl or cycle: each contact's solve undoes
//! part of the last one's. Here every coupled contact and every body it moves go into one mixed
//! complementarity problem, as Xie & Chakraborty write it (Sec. IV: all bodies and contacts
//! concatenated), solved by the same semismooth Newton / Levenberg–Marquardt iteration as one
//! contact ([`super::mncp::solve`]) on a dense Jacobian.
//!
//! # Unknowns and rows
//!
//! - Per body, its end-of-step twist `ν = (v, ω)` (world, at its centre of mass; 6 unknowns) and
//!   six dynamics rows:
//!   - a free object: `(M (ν − ν_free) − Σ_c W_c) / S` with `M = diag(m, I⁰)`, `ν_free` its twist
//!     under gravity and the gyroscopic term, `W_c` the impulses of its contacts (moments about
//!     the end-of-step centre of mass) and `S = m |g| h`;
//!   - a robot link: `m (ν − ν_free − Σ_l' Λ⁻¹_{l l'} W_l') / S`, `Λ⁻¹_{l l'} = J_l M̃⁻¹ J_l'ᵀ`
//!     the cross-mobility of two links of one robot (zero between robots), `W_l'` the impulses of
//!     the block's contacts on link `l'` (moments about its start-of-step centre of mass),
//!     `ν_free` the link's twist with none of them applied, `m` the robot's mass.
//! - Per contact, the rows and unknowns of its own problem other than the bodies' twists (a
//!   body–ground contact 18, a body–body or link–object contact 23: ECPs, friction, multipliers,
//!   `p_n`, `σ`), exactly as in [`super::mncp`] and [`super::pair`].
//!
//! A contact's wrench and its derivatives come from its own residual evaluated with *probe*
//! bodies ([`probe`]): a free object with no mass and inertia leaves `−W/P` in its dynamics rows,
//! a link with unit mass and identity mobility leaves `ν/P − W/P`; the rest of the residual (the
//! end pose, the frame, the moment arms) is the contact's own. The square system has
//! `6 · bodies + Σ contact unknowns` rows (the two-pad grasp: 82).
//!
//! Allocates nothing after [`Block::with_capacity`]: the Jacobian and the factor live in
//! scratch sized for every contact and body of the scene.

use super::mncp::{self, BodyPlaneProblem, MovingBody, NZ};
use super::pair::{BodyPairProblem, NZ_PAIR};
use super::mncp::SolveOutcome;
use super::block_linear::{cholesky_solve, lu_solve, OwnUnknowns, SchurSolve};

/// The problem of one contact of the block, with probe bodies in place of its bodies (both
/// variants are stored by value: the block holds one per contact, allocated once).
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum LocalProblem {
    /// A body against the ground plane (24 unknowns; the body's twist first).
    Ground(BodyPlaneProblem),
    /// Two bodies (35 unknowns; A's twist, then B's).
    Pair(BodyPairProblem),
}

impl LocalProblem {
    /// Unknowns of the contact problem.
    fn len(&self) -> usize {
        match self {
            LocalProblem::Ground(_) => NZ,
            LocalProblem::Pair(_) => NZ_PAIR,
        }
    }

    /// Twists among the unknowns (first `6 · sides`).
    fn sides(&self) -> usize {
        match self {
            LocalProblem::Ground(_) => 1,
            LocalProblem::Pair(_) => 2,
        }
    }
}

/// A body of the block with a probe's mass: a free object without mass or inertia, a robot
/// link with unit mass and identity mobility (module docs). The rest (start pose, shape,
/// geometry frame) is the body's.
pub(super) fn probe(body: &MovingBody) -> MovingBody {
    let mut p = *body;
    p.velocity = [0.0; 3];
    p.angular_velocity = [0.0; 3];
    p.impulse_linear = [0.0; 3];
    p.impulse_angular = [0.0; 3];
    match body.mobility {
        Some(_) => {
            p.mass_kg = 1.0;
            p.mobility = Some(std::array::from_fn(|i| std::array::from_fn(|j| if i == j { 1.0 } else { 0.0 })));
        }
        None => {
            p.mass_kg = 0.0;
            p.inertia_world = [[0.0; 3]; 3];
        }
    }
    p
}

/// A pair problem of the block: bodies `a` and `b` (their [`MovingBody`] at the start of the
/// step, turned into probes), the expected normal `n0` (from B into A; fixes the reference
/// tangent), friction coefficient, limit-surface scales `[e_t, e_o, e_r]`, designated inequality
/// `k1` and impulse scale (N·s).
#[allow(clippy::too_many_arguments)]
pub(super) fn pair_problem(a: &MovingBody, b: &MovingBody, n0: &crate::math::Vec3, friction: f64, limit_surface: [f64; 3], k1: usize, h: f64, scale: f64) -> BodyPairProblem {
    BodyPairProblem { h_s: h, a: probe(a), b: probe(b), tangent_ref: crate::math::tangent_basis(n0).0.into(), friction, limit_surface, k1, impulse_scale: scale, tangential_compliance: 0.0, friction_ref: [0.0; 6] }
}

/// One contact of the block.
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockContact {
    /// Its problem with probe bodies.
    pub(super) problem: LocalProblem,
    /// Its unknowns (the first [`LocalProblem::len`] entries; twists included, kept in step
    /// with the bodies').
    pub(super) z: [f64; NZ_PAIR],
    /// Block bodies of side A (the ground contact's body) and B.
    pub(super) bodies: [usize; 2],
    /// Impulse scale P of the problem (N·s).
    pub(super) scale: f64,
    /// Index of its first own unknown in the block.
    offset: usize,
    /// Whose contact it is: the scheme's index of its owner.
    pub(super) owner: Owner,
}

/// The scheme's contact a block contact stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    /// The ground contact of object slot `i`.
    Ground(usize),
    /// Body pair `k`.
    Pair(usize),
    /// Link–object pair `k`.
    LinkPair(usize),
}

impl BlockContact {
    /// A contact of `problem` (probe bodies) starting from `z`, between block bodies `bodies`
    /// (`[body, _]` for a ground contact), impulse scale `scale` (N·s), standing for `owner`.
    pub(super) fn new(owner: Owner, problem: LocalProblem, z: &[f64], bodies: [usize; 2], scale: f64) -> Self {
        let mut zz = [0.0; NZ_PAIR];
        zz[..problem.len()].copy_from_slice(&z[..problem.len()]);
        BlockContact { problem, z: zz, bodies, scale, offset: 0, owner }
    }
}

/// How a body of the block moves.
#[derive(Clone, Copy, Debug)]
pub(super) enum BodyDynamics {
    /// A free object: mass (kg), world inertia at the start (kg·m², row-major).
    Object { mass_kg: f64, inertia_world: [[f64; 3]; 3] },
    /// A robot link: the robot's mass (kg; the scale of its rows), its robot (links of one
    /// robot are coupled by their cross-mobility).
    Link { mass_kg: f64, robot: usize },
}

/// One body of the block.
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockBody {
    pub(super) dynamics: BodyDynamics,
    /// Its twist without the block's contacts `(v, ω)` (world, m/s and rad/s).
    pub(super) free_twist: [f64; 6],
    /// Its end-of-step twist: the start of the solve, then its result.
    pub(super) twist: [f64; 6],
    /// Row scale S = m |g| h (N·s).
    pub(super) scale: f64,
}

/// The complementarity of a robot's joint row (the impulse solvers' rows, docs/ecp.md "Robot
/// links").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum RowKind {
    /// `J v + b = 0`, `λ` free (a mimic coupling).
    Bilateral,
    /// `0 ≤ λ ⊥ J v + b ≥ 0` (a joint limit).
    Unilateral,
    /// `|λ| ≤ bound` (N·m·s or N·s), `J v = 0` while strictly inside (joint friction).
    Box { bound: f64 },
}

/// One joint row of a robot in the block: its impulse `λ` is one more unknown, its
/// complementarity one more row; it moves the robot's links and its other rows through
/// `J_r M̃⁻¹ J_bᵀ` and `J_r M̃⁻¹ J_r'ᵀ`.
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockRow {
    pub(super) kind: RowKind,
    /// The robot (links of other robots do not move it).
    pub(super) robot: usize,
    /// Its velocity `J v + b` with none of the block's impulses (links' contacts, rows)
    /// applied (m/s or rad/s).
    pub(super) free_velocity: f64,
    /// `J M̃⁻¹ Jᵀ` (per kg or per kg·m²).
    pub(super) minv: f64,
    /// Row scale S: the robot's weight impulse (N·s).
    pub(super) scale: f64,
    /// Its impulse (N·m·s or N·s): the start of the solve, then its result.
    pub(super) lambda: f64,
    /// Whose row it is: the scheme's (joint, row) index.
    pub(super) owner: (usize, usize),
}

/// The block: its bodies, contacts, the links' cross-mobilities and the scratch of the solve.
#[derive(Clone, Debug, Default)]
pub(super) struct Block {
    pub(super) bodies: Vec<BlockBody>,
    pub(super) contacts: Vec<BlockContact>,
    /// `Λ⁻¹_{l l'}` per pair of block bodies (row-major over bodies, 6 × 6 each; zero unless both
    /// are links of one robot).
    pub(super) mobility: Vec<[[f64; 6]; 6]>,
    /// The robots' joint rows, `J_r M̃⁻¹ J_bᵀ` per row and body (row-major over rows, zero
    /// unless the body is a link of the row's robot; m/s per N·s) and `J_r M̃⁻¹ J_r'ᵀ` per
    /// pair of rows (zero across robots).
    pub(super) rows: Vec<BlockRow>,
    pub(super) row_link: Vec<[f64; 6]>,
    pub(super) row_row: Vec<f64>,
    /// Scratch: each row's scaled velocity `(J v + b)/(J M̃⁻¹ Jᵀ S)`.
    row_velocity: Vec<f64>,
    x: Vec<f64>,
    trial: Vec<f64>,
    phi: Vec<f64>,
    phi_trial: Vec<f64>,
    jac: Vec<f64>,
    lhs: Vec<f64>,
    dir: Vec<f64>,
    rhs: Vec<f64>,
    pivots: Vec<usize>,
    /// The contacts' own unknowns for the Schur-complement solve, and its scratch.
    own: Vec<OwnUnknowns>,
    schur: SchurSolve,
}

impl Block {
    /// A block for at most `bodies` bodies, `contacts` contacts and `rows` joint rows
    /// (allocates all scratch).
    pub(super) fn with_capacity(bodies: usize, contacts: usize, rows: usize) -> Self {
        let n = 6 * bodies + contacts * (NZ_PAIR - 12) + rows;
        Block {
            bodies: Vec::with_capacity(bodies),
            contacts: Vec::with_capacity(contacts),
            mobility: vec![[[0.0; 6]; 6]; bodies * bodies],
            rows: Vec::with_capacity(rows),
            row_link: vec![[0.0; 6]; rows * bodies],
            row_row: vec![0.0; rows * rows],
            row_velocity: vec![0.0; rows],
            x: vec![0.0; n],
            trial: vec![0.0; n],
            phi: vec![0.0; n],
            phi_trial: vec![0.0; n],
            jac: vec![0.0; n * n],
            lhs: vec![0.0; n * n],
            dir: vec![0.0; n],
            rhs: vec![0.0; n],
            pivots: vec![0; n],
            own: Vec::with_capacity(contacts),
            schur: SchurSolve::with_capacity(bodies, contacts, (NZ_PAIR - 12).max(NZ - 6), rows),
        }
    }

    /// Empties the block for a new solve.
    pub(super) fn clear(&mut self) {
        self.bodies.clear();
        self.contacts.clear();
        self.rows.clear();
    }

    /// Unknowns of the block.
    fn len(&self) -> usize {
        6 * self.bodies.len() + self.contacts.iter().map(|c| c.problem.len() - 6 * c.problem.sides()).sum::<usize>() + self.rows.len()
    }

    /// Index of the first joint row's unknown.
    fn rows_start(&self) -> usize {
        self.len() - self.rows.len()
    }

    /// Whether the scratch holds a block of this size.
    pub(super) fn fits(&self) -> bool {
        let (n, nb, nr) = (self.len(), self.bodies.len(), self.rows.len());
        n <= self.x.len() && nb * nb <= self.mobility.len() && nr * nb <= self.row_link.len() && nr * nr <= self.row_row.len()
    }

    /// Solves the block from the bodies' twists and the contacts' unknowns (Newton steps,
    /// Levenberg–Marquardt when the Newton step is singular or fails the Armijo test); on return
    /// the bodies' `twist` and the contacts' `z` hold the last iterate. Stops at `‖Φ‖∞ ≤
    /// tolerance` or after `max_iterations` Jacobians.
    pub(super) fn solve(&mut self, tolerance: f64, max_iterations: u32) -> SolveOutcome {
        let n = self.len();
        let mut offset = 6 * self.bodies.len();
        self.own.clear();
        for c in &mut self.contacts {
            c.offset = offset;
            let (len, sides) = (c.problem.len() - 6 * c.problem.sides(), c.problem.sides());
            self.own.push(OwnUnknowns { offset, len, bodies: c.bodies, sides });
            offset += len;
        }
        let mut x = std::mem::take(&mut self.x);
        for (b, body) in self.bodies.iter().enumerate() {
            x[6 * b..6 * b + 6].copy_from_slice(&body.twist);
        }
        for c in &self.contacts {
            let own = 6 * c.problem.sides();
            x[c.offset..c.offset + c.problem.len() - own].copy_from_slice(&c.z[own..c.problem.len()]);
        }
        let r0 = self.rows_start();
        for (r, row) in self.rows.iter().enumerate() {
            x[r0 + r] = row.lambda / row.scale;
        }
        let mut phi = std::mem::take(&mut self.phi);
        self.residual(&x[..n], &mut phi[..n], false);
        let mut out = SolveOutcome { iterations: 0, residual: inf_norm(&phi[..n]), converged: false };
        // the residual three iterations ago: a solve that has not halved it since has stalled
        let mut history = [f64::INFINITY; 3];
        while out.iterations < max_iterations && out.residual > tolerance && out.residual.is_finite() {
            if out.residual > 0.5 * history[out.iterations as usize % 3] {
                break;
            }
            history[out.iterations as usize % 3] = out.residual;
            self.residual(&x[..n], &mut phi[..n], true);
            out.iterations += 1;
            let psi = merit(&phi[..n]);
            let mut accepted = false;
            // Newton: J d = −Φ, the contacts' own unknowns eliminated first (block_linear.rs);
            // the dense LU of the whole system where a contact's block or the rest is singular
            for (d, p) in self.dir[..n].iter_mut().zip(&phi[..n]) {
                *d = -p;
            }
            let (nb, nr) = (self.bodies.len(), self.rows.len());
            let mut solved = self.schur.solve(&self.jac[..n * n], n, nb, nr, &self.own, &mut self.dir[..n]);
            if !solved {
                self.lhs[..n * n].copy_from_slice(&self.jac[..n * n]);
                for (d, p) in self.dir[..n].iter_mut().zip(&phi[..n]) {
                    *d = -p;
                }
                solved = lu_solve(&mut self.lhs[..n * n], &mut self.pivots[..n], &mut self.dir[..n], n);
            }
            // a Newton step that does not halve the merit is taken as a sign of a (near-)singular
            // Jacobian, e.g. loads shared between rigid supports: Levenberg–Marquardt instead
            if solved {
                accepted = self.line_search(&mut x[..n], psi, 0.5);
            }
            // Levenberg–Marquardt: (JᵀJ + λ I) d = −Jᵀ Φ
            let mut lambda = 1e-10 * norm(&phi[..n]).max(1.0);
            while !accepted && lambda < 1e6 {
                self.normal_equations(&phi[..n], lambda);
                self.dir[..n].copy_from_slice(&self.rhs[..n]);
                if cholesky_solve(&mut self.lhs[..n * n], &mut self.dir[..n], n) {
                    accepted = self.line_search(&mut x[..n], psi, 1.0);
                }
                lambda *= 100.0;
            }
            if !accepted {
                break;
            }
            std::mem::swap(&mut phi, &mut self.phi_trial);
            out.residual = inf_norm(&phi[..n]);
        }
        out.converged = out.residual <= tolerance;
        self.scatter(&x[..n]);
        self.x = x;
        self.phi = phi;
        out
    }

    /// `lhs ← Jᵀ J + λ I` (lower triangle) and `rhs ← −Jᵀ Φ`, row by row over the Jacobian's
    /// nonzero entries (a contact's row touches at most its own unknowns and its bodies').
    #[allow(clippy::needless_range_loop)] // rows of the Jacobian, by index
    fn normal_equations(&mut self, phi: &[f64], lambda: f64) {
        let n = phi.len();
        self.lhs[..n * n].fill(0.0);
        self.rhs[..n].fill(0.0);
        for k in 0..n {
            let row = &self.jac[k * n..(k + 1) * n];
            let mut nonzero = 0;
            for (i, v) in row.iter().enumerate() {
                if *v != 0.0 {
                    self.pivots[nonzero] = i;
                    nonzero += 1;
                }
            }
            for a in 0..nonzero {
                let i = self.pivots[a];
                let ri = row[i];
                self.rhs[i] -= ri * phi[k];
                for &j in &self.pivots[..=a] {
                    self.lhs[i * n + j] += ri * row[j];
                }
            }
        }
        for i in 0..n {
            self.lhs[i * n + i] += lambda;
        }
    }

    /// Armijo backtracking along `dir` from `x` (merit `psi`), accepting only a merit at most
    /// `ratio · psi`; the accepted point replaces `x`, its residual is left in `phi_trial`.
    fn line_search(&mut self, x: &mut [f64], psi: f64, ratio: f64) -> bool {
        let n = x.len();
        let mut theta = 1.0;
        let mut trial = std::mem::take(&mut self.trial);
        let mut phi = std::mem::take(&mut self.phi_trial);
        let mut accepted = false;
        while theta >= 1e-10 {
            for i in 0..n {
                trial[i] = x[i] + theta * self.dir[i];
            }
            self.residual(&trial[..n], &mut phi[..n], false);
            let psi_trial = merit(&phi[..n]);
            if psi_trial.is_finite() && psi_trial <= (1.0 - 1e-4 * theta).min(ratio) * psi {
                x.copy_from_slice(&trial[..n]);
                accepted = true;
                break;
            }
            theta *= 0.5;
        }
        self.trial = trial;
        self.phi_trial = phi;
        accepted
    }

    /// Writes the block unknowns `x` into the bodies' twists and the contacts' `z`.
    fn scatter(&mut self, x: &[f64]) {
        for (b, body) in self.bodies.iter_mut().enumerate() {
            body.twist.copy_from_slice(&x[6 * b..6 * b + 6]);
        }
        for c in &mut self.contacts {
            gather(c, x);
        }
        let r0 = self.rows_start();
        for (r, row) in self.rows.iter_mut().enumerate() {
            row.lambda = x[r0 + r] * row.scale;
        }
    }

    /// The block residual Φ(x) into `phi`; with `jacobian`, also ∂Φ/∂x into the scratch
    /// (row-major).
    #[allow(clippy::needless_range_loop)] // rows and columns of one matrix, by index
    fn residual(&mut self, x: &[f64], phi: &mut [f64], jacobian: bool) {
        let n = x.len();
        let nb = self.bodies.len();
        if jacobian {
            self.jac[..n * n].fill(0.0);
        }
        // the bodies' own terms: M (ν − ν_free) / S, or m (ν − ν_free) / S for a link
        for (b, body) in self.bodies.iter().enumerate() {
            let nu: [f64; 6] = std::array::from_fn(|k| x[6 * b + k] - body.free_twist[k]);
            let (lin, ang) = match body.dynamics {
                BodyDynamics::Object { mass_kg, inertia_world } => {
                    (mass_kg, std::array::from_fn::<[f64; 3], 3, _>(|i| std::array::from_fn(|j| inertia_world[i][j])))
                }
                BodyDynamics::Link { mass_kg, .. } => {
                    (mass_kg, std::array::from_fn(|i| std::array::from_fn(|j| if i == j { mass_kg } else { 0.0 })))
                }
            };
            for k in 0..3 {
                phi[6 * b + k] = lin * nu[k] / body.scale;
                phi[6 * b + 3 + k] = (0..3).map(|j| ang[k][j] * nu[3 + j]).sum::<f64>() / body.scale;
                if jacobian {
                    self.jac[(6 * b + k) * n + 6 * b + k] = lin / body.scale;
                    for j in 0..3 {
                        self.jac[(6 * b + 3 + k) * n + 6 * b + 3 + j] = ang[k][j] / body.scale;
                    }
                }
            }
        }
        // the joint rows: their impulses on the links' rows, and the rows' scaled velocity
        // ũ_r = (J_r v + b)/(J_r M̃⁻¹ J_rᵀ S_r) with the rows' impulses (the links' contacts are
        // added below); the complementarity is applied at the end
        let r0 = n - self.rows.len();
        let nr = self.rows.len();
        for (r, row) in self.rows.iter().enumerate() {
            let lambda = x[r0 + r] * row.scale;
            for l in 0..nb {
                let BodyDynamics::Link { mass_kg, robot } = self.bodies[l].dynamics else { continue };
                if robot != row.robot {
                    continue;
                }
                let g = &self.row_link[r * nb + l];
                let f = mass_kg / self.bodies[l].scale;
                for k in 0..6 {
                    phi[6 * l + k] -= f * g[k] * lambda;
                    if jacobian {
                        self.jac[(6 * l + k) * n + r0 + r] -= f * g[k] * row.scale;
                    }
                }
            }
            let to_scaled = 1.0 / (row.minv * row.scale);
            let mut u = row.free_velocity;
            for (q, other) in self.rows.iter().enumerate() {
                let d = self.row_row[r * nr + q];
                u += d * x[r0 + q] * other.scale;
                if jacobian {
                    self.jac[(r0 + r) * n + r0 + q] = d * other.scale * to_scaled;
                }
            }
            self.row_velocity[r] = u * to_scaled;
        }
        // the contacts: own rows as they are; wrenches into their bodies' rows
        for ci in 0..self.contacts.len() {
            let mut c = self.contacts[ci];
            gather(&mut c, x);
            let len = c.problem.len();
            let sides = c.problem.sides();
            let mut value = [0.0; NZ_PAIR];
            let mut local = [[0.0; NZ_PAIR]; NZ_PAIR];
            match &c.problem {
                LocalProblem::Ground(p) => {
                    let z: [f64; NZ] = std::array::from_fn(|i| c.z[i]);
                    if jacobian {
                        let (v, j) = mncp::residual_and_jacobian(p, &z);
                        for r in 0..NZ {
                            value[r] = v[r];
                            for k in 0..NZ {
                                local[r][k] = j[(r, k)];
                            }
                        }
                    } else {
                        value[..NZ].copy_from_slice(&mncp::residual_value(p, &z));
                    }
                }
                LocalProblem::Pair(p) => {
                    if jacobian {
                        let (v, j) = mncp::residual_and_jacobian(p, &c.z);
                        for r in 0..NZ_PAIR {
                            value[r] = v[r];
                            for k in 0..NZ_PAIR {
                                local[r][k] = j[(r, k)];
                            }
                        }
                    } else {
                        value = mncp::residual_value(p, &c.z);
                    }
                }
            }
            // global column of local unknown k
            let column = |k: usize| if k < 6 * sides { 6 * c.bodies[k / 6] + k % 6 } else { c.offset + k - 6 * sides };
            for r in 6 * sides..len {
                let row = c.offset + r - 6 * sides;
                phi[row] = value[r];
                if jacobian {
                    for (k, d) in local[r][..len].iter().enumerate() {
                        self.jac[row * n + column(k)] += d;
                    }
                }
            }
            for s in 0..sides {
                let b = c.bodies[s];
                match self.bodies[b].dynamics {
                    BodyDynamics::Object { .. } => {
                        // rows hold −W/P: add P/S of them
                        let f = c.scale / self.bodies[b].scale;
                        for k in 0..6 {
                            phi[6 * b + k] += f * value[6 * s + k];
                            if jacobian {
                                for (j, d) in local[6 * s + k][..len].iter().enumerate() {
                                    self.jac[(6 * b + k) * n + column(j)] += f * d;
                                }
                            }
                        }
                    }
                    BodyDynamics::Link { robot, .. } => {
                        // rows hold ν/P − W/P: W = ν − P · rows; every link l of the robot
                        // receives −m Λ⁻¹_{l b} W / S
                        let wrench: [f64; 6] = std::array::from_fn(|k| x[6 * b + k] - c.scale * value[6 * s + k]);
                        for l in 0..nb {
                            let BodyDynamics::Link { mass_kg, robot: rl } = self.bodies[l].dynamics else { continue };
                            if rl != robot {
                                continue;
                            }
                            let a = &self.mobility[l * nb + b];
                            let f = mass_kg / self.bodies[l].scale;
                            for k in 0..6 {
                                phi[6 * l + k] -= f * (0..6).map(|j| a[k][j] * wrench[j]).sum::<f64>();
                                if jacobian {
                                    for j in 0..6 {
                                        let g = f * a[k][j];
                                        if g == 0.0 {
                                            continue;
                                        }
                                        // ∂W_j = e_(ν_b, j) − P ∂rows_j
                                        self.jac[(6 * l + k) * n + 6 * b + j] -= g;
                                        for (m, d) in local[6 * s + j][..len].iter().enumerate() {
                                            self.jac[(6 * l + k) * n + column(m)] += g * c.scale * d;
                                        }
                                    }
                                }
                            }
                        }
                        // the robot's joint rows move with W: ũ_r += J_r M̃⁻¹ J_bᵀ W / (minv S)
                        for (r, row) in self.rows.iter().enumerate() {
                            if row.robot != robot {
                                continue;
                            }
                            let g = &self.row_link[r * nb + b];
                            let to_scaled = 1.0 / (row.minv * row.scale);
                            self.row_velocity[r] += (0..6).map(|j| g[j] * wrench[j]).sum::<f64>() * to_scaled;
                            if jacobian {
                                for j in 0..6 {
                                    let gj = g[j] * to_scaled;
                                    if gj == 0.0 {
                                        continue;
                                    }
                                    self.jac[(r0 + r) * n + 6 * b + j] += gj;
                                    for (m, d) in local[6 * s + j][..len].iter().enumerate() {
                                        self.jac[(r0 + r) * n + column(m)] -= gj * c.scale * d;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // the joint rows' complementarity on (λ̃, ũ): the row of ∂ũ becomes ∂F
        for (r, row) in self.rows.iter().enumerate() {
            let (value, d_lambda, d_u) = row_complementarity(row.kind, row.scale, x[r0 + r], self.row_velocity[r]);
            phi[r0 + r] = value;
            if jacobian {
                for v in &mut self.jac[(r0 + r) * n..(r0 + r + 1) * n] {
                    *v *= d_u;
                }
                self.jac[(r0 + r) * n + r0 + r] += d_lambda;
            }
        }
    }
}

/// The complementarity of a joint row `F(λ̃, ũ)` (scaled impulse and velocity, `bound` scaled
/// too) and its derivatives `(∂F/∂λ̃, ∂F/∂ũ)`: a bilateral row `ũ`; a unilateral row the
/// Fischer–Burmeister function `λ̃ + ũ − √(λ̃² + ũ²)`; a box (friction) row `λ̃ − clamp(λ̃ − w̃,
/// −bound, bound)` on its compliant velocity `w̃ = ũ + ε λ̃` (ε
/// [`super::joint_rows::FRICTION_ROW_COMPLIANCE`], the sweeps' own law).
fn row_complementarity(kind: RowKind, scale: f64, lambda: f64, u: f64) -> (f64, f64, f64) {
    match kind {
        RowKind::Bilateral => (u, 0.0, 1.0),
        RowKind::Unilateral => {
            let r = lambda.hypot(u);
            if r < 1e-300 {
                let d = 1.0 - std::f64::consts::FRAC_1_SQRT_2;
                return (0.0, d, d);
            }
            (lambda + u - r, 1.0 - lambda / r, 1.0 - u / r)
        }
        RowKind::Box { bound } => {
            let b = bound / scale;
            let eps = super::joint_rows::FRICTION_ROW_COMPLIANCE;
            let w = u + eps * lambda;
            let t = lambda - w;
            if t > b {
                (lambda - b, 1.0, 0.0)
            } else if t < -b {
                (lambda + b, 1.0, 0.0)
            } else {
                (w, eps, 1.0)
            }
        }
    }
}

/// Copies a contact's unknowns out of the block vector `x` (its bodies' twists and its own).
fn gather(c: &mut BlockContact, x: &[f64]) {
    let sides = c.problem.sides();
    for s in 0..sides {
        let b = c.bodies[s];
        c.z[6 * s..6 * s + 6].copy_from_slice(&x[6 * b..6 * b + 6]);
    }
    let len = c.problem.len();
    c.z[6 * sides..len].copy_from_slice(&x[c.offset..c.offset + len - 6 * sides]);
}

fn inf_norm(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn merit(x: &[f64]) -> f64 {
    0.5 * x.iter().map(|v| v * v).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::ecp::{ConvexShape, EcpBody, EcpBodyState, EcpParams, EcpPlane, EcpStepper};
    use crate::math::{Mat3, Pose, Vec3};
    use nalgebra::UnitQuaternion;

    /// A 1 kg, 0.2 m cube sliding at 0.5 m/s on the ground (μ 0.3, h 0.01 s), solved by the
    /// single-contact step: its problem, the body, its solution and designated inequality.
    fn sliding_cube() -> (EcpBody, EcpBodyState, Vec3, f64, EcpPlane, [f64; NZ], usize) {
        let body = EcpBody { mass_kg: 1.0, inertia_body: Mat3::identity() * (0.04 / 6.0), shape: ConvexShape::Box { half_extents_m: [0.1; 3] }, geom_in_body: Pose::identity() };
        let start = EcpBodyState { com_m: Vec3::new(0.0, 0.0, 0.1), rotation: UnitQuaternion::identity(), velocity: Vec3::new(0.5, 0.0, 0.0), angular_velocity: Vec3::zeros() };
        let (gravity, h) = (Vec3::new(0.0, 0.0, -9.8), 0.01);
        let plane = EcpPlane::new(Vec3::z(), 0.0, 0.3);
        let mut end = start;
        let c = EcpStepper::new(EcpParams::default()).step(&body, &mut end, Some(&plane), &gravity, h, &Vec3::zeros(), &Vec3::zeros());
        assert!(c.solve.converged && c.in_contact);
        (body, start, gravity, h, plane, c.unknowns, c.designated)
    }

    fn ground_problem(body: &MovingBody, plane: &EcpPlane, k1: usize, h: f64, scale: f64) -> BodyPlaneProblem {
        BodyPlaneProblem {
            h_s: h,
            body: *body,
            normal: plane.normal.into(),
            tangent1: plane.tangent1.into(),
            tangent2: plane.tangent2.into(),
            plane_offset_m: plane.offset_m,
            friction: plane.friction,
            limit_surface: [1.0; 3],
            k1,
            gap_mode: mncp::GapMode::SignedGap,
            impulse_scale: scale,
        }
    }

    #[test]
    fn a_block_of_one_contact_finds_the_single_contact_solution() {
        // the probe bodies split a contact's residual into its wrench and the body's own rows
        // exactly: a block holding one free object and its ground contact, started off the
        // solution, lands on the single-contact step's solution (p_n = m g h, friction μ m g h
        // against the slip); likewise with the body as a robot link of mobility Λ⁻¹
        let (body, start, gravity, h, plane, solution, k1) = sliding_cube();
        let scale = body.mass_kg * gravity.norm() * h;
        let (moving, v_free, w_free) = mncp::moving_body(&body, &start, &(Vec3::zeros(), Vec3::zeros()), &gravity, h);
        let mut block = Block::with_capacity(1, 1, 0);
        block.bodies.push(BlockBody {
            dynamics: BodyDynamics::Object { mass_kg: body.mass_kg, inertia_world: moving.inertia_world },
            free_twist: [v_free.x, v_free.y, v_free.z, w_free.x, w_free.y, w_free.z],
            twist: [0.4, 0.01, -0.02, 0.0, 0.05, 0.0],
            scale,
        });
        let mut z = solution;
        z[mncp::idx::PN] *= 1.3;
        z[mncp::idx::PT] *= 0.7;
        let problem = ground_problem(&probe(&moving), &plane, k1, h, scale);
        block.contacts.push(BlockContact::new(Owner::Ground(0), LocalProblem::Ground(problem), &z, [0, 0], scale));
        let outcome = block.solve(1e-12, 30);
        assert!(outcome.converged, "{outcome:?}");
        let worst = (0..NZ).map(|k| (block.contacts[0].z[k] - solution[k]).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-9, "block and single-contact solutions differ by {worst}");
        let friction = plane.tangent1 * solution[mncp::idx::PT] + plane.tangent2 * solution[mncp::idx::PO];
        assert!((solution[mncp::idx::PN] - 1.0).abs() < 1e-9 && (friction - Vec3::new(-0.3, 0.0, 0.0)).norm() < 1e-9, "p_n {}, friction {friction:?} (over m g h)", solution[mncp::idx::PN]);

        // the same cube as a robot link: mobility Λ⁻¹ = diag(1/m, I⁻¹) plus a coupling, its twist
        // without the contact ν_free; the block's link rows against the contact's own link rows
        let mut mobility = [[0.0; 6]; 6];
        for k in 0..3 {
            mobility[k][k] = 1.0 / body.mass_kg;
            mobility[3 + k][3 + k] = 6.0 / 0.04;
        }
        mobility[0][4] = 2.0;
        mobility[4][0] = 2.0;
        let link = MovingBody { mobility: Some(mobility), impulse_linear: [0.0; 3], impulse_angular: [0.0; 3], velocity: v_free.into(), angular_velocity: w_free.into(), ..moving };
        let reference = ground_problem(&link, &plane, k1, h, scale);
        let mut z_ref = solution;
        let single = mncp::solve(&reference, &mut z_ref, 1e-12, 60);
        assert!(single.converged, "{single:?}");
        let mut block = Block::with_capacity(1, 1, 0);
        block.bodies.push(BlockBody { dynamics: BodyDynamics::Link { mass_kg: body.mass_kg, robot: 0 }, free_twist: [v_free.x, v_free.y, v_free.z, w_free.x, w_free.y, w_free.z], twist: [0.0; 6], scale });
        block.mobility[0] = mobility;
        let problem = ground_problem(&probe(&link), &plane, k1, h, scale);
        block.contacts.push(BlockContact::new(Owner::Ground(0), LocalProblem::Ground(problem), &solution, [0, 0], scale));
        let outcome = block.solve(1e-12, 30);
        assert!(outcome.converged, "{outcome:?}");
        let worst = (0..NZ).map(|k| (block.contacts[0].z[k] - z_ref[k]).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-9, "link: block and single-contact solutions differ by {worst}");
    }
}
