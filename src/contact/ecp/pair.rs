//! Two moving convex bodies in contact over one step: the closest-point conditions between two
//! convex bodies at their end-of-step poses (Xie & Chakraborty, Sec. IV, eqs. 11–17, with both
//! bodies' Newton–Euler rows), in the signed-gap form, solved with [`super::mncp::solve`].
//!
//! Body A carries the designated inequality `k1`; the contact normal `n = −c/‖c‖` points from B
//! into A (`c` is A's outward normal combination at `a1`). The contact force `F = n p_n + t p_t +
//! o p_o` and the friction moment `n p_r` act on A at `a1`, their opposites on B at `a2`.
//!
//! # Unknowns (35)
//!
//! | index | unknown | unit |
//! |---|---|---|
//! | 0–2, 3–5 | `v_A`, `ω_A` (world) | m/s, rad/s |
//! | 6–8, 9–11 | `v_B`, `ω_B` (world) | m/s, rad/s |
//! | 12–14 | `a1` on A: the equivalent contact point | m |
//! | 15–17 | `a2` on B | m |
//! | 18, 19, 20 | `p_t`, `p_o` over `P`, `p_r` over `P · 1 m` | – |
//! | 21–26 | multipliers of A's inequalities (`l_{k1}` in m, others ratios) | – |
//! | 27–32 | multipliers of B's inequalities | – |
//! | 33 | `p_n` over `P` | – |
//! | 34 | `σ` | m/s |
//!
//! # Rows
//!
//! - 0–5, 6–11: Newton–Euler of A and of B (over `P`), `r_A = a1 − x_A⁺`, `r_B = a2 − x_B⁺`.
//! - 12–14: `a1 − a2 + l_{k1} c = 0`; 15–17: `c + Σ_j l_j ∇g_j(a2) = 0`.
//! - 18–20: friction with the relative velocity `(v_A + ω_A × r_A) − (v_B + ω_B × r_B)` on the
//!   tangents and the relative spin `n·(ω_A − ω_B)`.
//! - 21–26: `f_{k1}(a1) = 0`, `φ(l_i, −f_i(a1))` for `i ≠ k1`, padding `l_i`.
//! - 27–32: `φ(l_j, −g_j(a2))`, padding `l_j`.
//! - 33: `φ(p_n, l_{k1})`; 34: `φ(σ, ζ)`.
//!
//! The tangents `(t, o)` are a fixed reference pair `(t⁰, o⁰)` made orthogonal to the current
//! normal (`t = (t⁰ − n (n·t⁰))/‖·‖`, `o = n × t`), so they follow the normal inside the solve
//! and never flip.

use super::dual::{add3, cross3, cst3, dot3, fischer_burmeister, scale3, sub3, Dual, V3};
use super::mncp::{friction_rows, gradient_combination, moving_body, body_rows, pose_after, MncpSystem, MovingBody};
use super::shape::MAX_INEQUALITIES;

/// Number of unknowns (and equations) of one body–body problem.
pub const NZ_PAIR: usize = 35;

/// Index of the first unknown of each block.
pub(crate) mod idx {
    pub const VA: usize = 0;
    pub const WA: usize = 3;
    pub const VB: usize = 6;
    pub const WB: usize = 9;
    pub const A1: usize = 12;
    pub const A2: usize = 15;
    pub const PT: usize = 18;
    pub const PO: usize = 19;
    pub const PR: usize = 20;
    pub const LA: usize = 21;
    pub const LB: usize = 27;
    pub const PN: usize = 33;
    pub const SIGMA: usize = 34;
}

/// Two moving bodies touching over one step.
#[derive(Clone, Copy, Debug)]
pub struct BodyPairProblem {
    /// Time step h (s).
    pub h_s: f64,
    /// Body A (carries the designated inequality k1).
    pub a: MovingBody,
    /// Body B.
    pub b: MovingBody,
    /// Reference first tangent t⁰ (unit, world), held fixed during the solve.
    pub tangent_ref: [f64; 3],
    /// Friction coefficient μ.
    pub friction: f64,
    /// Limit-surface scales `e_t`, `e_o` (dimensionless) and `e_r` (m).
    pub limit_surface: [f64; 3],
    /// The designated inequality of A.
    pub k1: usize,
    /// Impulse scale P (N·s).
    pub impulse_scale: f64,
    /// Tangential compliance c (m/s per unit of scaled friction impulse; 0: rigid, the paper's
    /// rows): the friction rows hold `slip + c (p − p_ref)` in place of the slip, `p` the
    /// friction impulses `(p_t, p_o, p_r)` over `P`. While the contact sticks, its two sides move
    /// apart tangentially by `c h (p − p_ref)` in a step: an elastic tangential stiffness of
    /// `P / (c h²)` (N/m) with `p_ref` the previous step's friction.
    pub tangential_compliance: f64,
    /// `p_ref` of [`Self::tangential_compliance`]: the previous step's friction force on A over
    /// `P` (world, entries 0–2; its components on this step's tangents are taken) and its friction
    /// moment on A over `P · 1 m` (world, entries 3–5; its component on the normal).
    pub friction_ref: [f64; 6],
}

fn v3<const N: usize>(z: &[Dual<N>; NZ_PAIR], i: usize) -> V3<N> {
    [z[i], z[i + 1], z[i + 2]]
}

/// The body–body residual (module docs), generic over the number of seeded derivatives.
pub fn pair_residual<const N: usize>(p: &BodyPairProblem, z: &[Dual<N>; NZ_PAIR], out: &mut [Dual<N>; NZ_PAIR]) {
    let (va, wa, vb, wb) = (v3(z, idx::VA), v3(z, idx::WA), v3(z, idx::VB), v3(z, idx::WB));
    let (a1, a2) = (v3(z, idx::A1), v3(z, idx::A2));
    let (pt, po, pr, pn, sigma) = (z[idx::PT], z[idx::PO], z[idx::PR], z[idx::PN], z[idx::SIGMA]);
    let (com_a, origin_a, axes_a) = pose_after(p.h_s, &p.a.com_m, &p.a.geom_axes, &p.a.geom_offset_m, &va, &wa);
    let (com_b, origin_b, axes_b) = pose_after(p.h_s, &p.b.com_m, &p.b.geom_axes, &p.b.geom_offset_m, &vb, &wb);

    // closest points: c is A's outward normal combination at a1, −c B's at a2
    let (c, f_a) = gradient_combination(&p.a.shape, Some(p.k1), &z[idx::LA..idx::LA + MAX_INEQUALITIES], &a1, &origin_a, &axes_a);
    let (d, g_b) = gradient_combination(&p.b.shape, None, &z[idx::LB..idx::LB + MAX_INEQUALITIES], &a2, &origin_b, &axes_b);
    let l_k1 = z[idx::LA + p.k1];
    out[12..15].copy_from_slice(&add3(&sub3(&a1, &a2), &scale3(&c, l_k1)));
    out[15..18].copy_from_slice(&add3(&c, &d));

    // contact frame: n from B into A, tangents following n
    let inv_norm = Dual::cst(1.0) / dot3(&c, &c).sqrt();
    let n = scale3(&c, -inv_norm);
    let t_ref = cst3::<N>(&p.tangent_ref);
    let t_raw = sub3(&t_ref, &scale3(&n, dot3(&n, &t_ref)));
    let t = scale3(&t_raw, Dual::cst(1.0) / dot3(&t_raw, &t_raw).sqrt());
    let o = cross3(&n, &t);

    // Newton–Euler of both bodies (over P)
    let inv_scale = 1.0 / p.impulse_scale;
    let force = add3(&add3(&scale3(&n, pn), &scale3(&t, pt)), &scale3(&o, po));
    let (r_a, r_b) = (sub3(&a1, &p.a.moment_pivot(&com_a)), sub3(&a2, &p.b.moment_pivot(&com_b)));
    let twist = scale3(&n, pr);
    let moment_a = add3(&cross3(&r_a, &force), &twist);
    let (force_b, moment_b) = (scale3(&force, Dual::cst(-1.0)), scale3(&add3(&cross3(&r_b, &force), &twist), Dual::cst(-1.0)));
    let (ba, bb) = (&p.a, &p.b);
    body_rows(ba, inv_scale, (&va, &wa), (&force, &moment_a), &mut out[0..6]);
    body_rows(bb, inv_scale, (&vb, &wb), (&force_b, &moment_b), &mut out[6..12]);

    // friction on the relative motion at the contact
    let slip = sub3(&add3(&va, &cross3(&wa, &r_a)), &add3(&vb, &cross3(&wb, &r_b)));
    let spin = dot3(&n, &sub3(&wa, &wb));
    // with the tangential compliance c: `slip + c (p − p_ref)` in place of the slip (docs/ecp.md,
    // "A tangential compliance for robot links")
    let (f_ref, m_ref) = (cst3::<N>(&[p.friction_ref[0], p.friction_ref[1], p.friction_ref[2]]), cst3::<N>(&[p.friction_ref[3], p.friction_ref[4], p.friction_ref[5]]));
    let c_t = p.tangential_compliance;
    let compliant = [
        dot3(&t, &slip) + (pt - dot3(&t, &f_ref)) * c_t,
        dot3(&o, &slip) + (po - dot3(&o, &f_ref)) * c_t,
        spin + (pr - dot3(&n, &m_ref)) * c_t,
    ];
    let (rows, zeta) = friction_rows(pn * p.friction, &p.limit_surface, compliant, [pt, po, pr], sigma);
    out[18..21].copy_from_slice(&rows);

    // complementarity
    let (ma, mb) = (p.a.shape.inequality_count(), p.b.shape.inequality_count());
    for i in 0..MAX_INEQUALITIES {
        let (la, lb) = (z[idx::LA + i], z[idx::LB + i]);
        out[21 + i] = if i >= ma {
            la
        } else if i == p.k1 {
            f_a[i]
        } else {
            fischer_burmeister(la, -f_a[i])
        };
        out[27 + i] = if i >= mb { lb } else { fischer_burmeister(lb, -g_b[i]) };
    }
    out[33] = fischer_burmeister(pn, l_k1);
    out[34] = fischer_burmeister(sigma, zeta);
}

impl MncpSystem<NZ_PAIR> for BodyPairProblem {
    fn eval<const N: usize>(&self, z: &[Dual<N>; NZ_PAIR], out: &mut [Dual<N>; NZ_PAIR]) {
        pair_residual(self, z, out)
    }
}

use super::mncp::{self, SolveOutcome};
use super::{EcpBody, EcpBodyState, EcpParams, EcpStepper};
use crate::math::{Mat3, Vec3};

fn arr(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

fn vec_at(z: &[f64; NZ_PAIR], i: usize) -> Vec3 {
    Vec3::new(z[i], z[i + 1], z[i + 2])
}

/// The contact frame `(n, t, o)` of a solution `z` (n from B into A, module docs).
pub fn contact_frame(p: &BodyPairProblem, z: &[f64; NZ_PAIR]) -> [Vec3; 3] {
    let zd: [Dual<0>; NZ_PAIR] = std::array::from_fn(|i| Dual::cst(z[i]));
    let (va, wa) = (v3(&zd, idx::VA), v3(&zd, idx::WA));
    let (_, origin, axes) = pose_after(p.h_s, &p.a.com_m, &p.a.geom_axes, &p.a.geom_offset_m, &va, &wa);
    let (c, _) = gradient_combination(&p.a.shape, Some(p.k1), &zd[idx::LA..idx::LA + MAX_INEQUALITIES], &v3(&zd, idx::A1), &origin, &axes);
    let n = -Vec3::new(c[0].v, c[1].v, c[2].v).normalize();
    let t_ref = Vec3::from(p.tangent_ref);
    let t = (t_ref - n * n.dot(&t_ref)).normalize();
    [n, t, n.cross(&t)]
}

/// One start of a pair's solve: the Newton solve of `problem` from `z` (updated in place), then,
/// where it ends unconverged with the bodies apart (`l_{k1} > 0`) and `free` is given, a second
/// solve from the separated branch of its geometry: `z` with no impulse and the end velocities
/// `free = [v_A, ω_A, v_B, ω_B]` the bodies reach without this contact (docs/ecp.md, "A pair
/// that has come apart"). Keeps the better of the two; returns its outcome, the Newton
/// iterations of both solves and whether the second ran.
///
/// Near `p_n = 0` the friction rows are degenerate (`p σ` and `μ² p_n² − Σ (p/e)²` are both flat
/// in `p` at `p_n = σ = 0`), and a start that comes out of contact with a small friction impulse
/// left over can stall there: its Newton directions grow, the line search takes steps of 1e-6,
/// and the left-over friction keeps a robot link's momentum rows off by more than the tolerance.
pub(crate) fn solve_start(problem: &BodyPairProblem, z: &mut [f64; NZ_PAIR], params: &EcpParams, free: Option<&[Vec3; 4]>) -> (SolveOutcome, u32, bool) {
    let outcome = mncp::solve(problem, z, params.tolerance, params.max_iterations);
    let Some(free) = free.filter(|_| !outcome.converged && z[idx::LA + problem.k1] > 0.0) else {
        return (outcome, outcome.iterations, false);
    };
    let mut apart = *z;
    for (k, v) in free.iter().enumerate() {
        apart[3 * k..3 * k + 3].copy_from_slice(&arr(v));
    }
    for i in [idx::PT, idx::PO, idx::PR, idx::PN] {
        apart[i] = 0.0;
    }
    // with p_n = 0 any σ ≥ 0 solves the limit-surface row; a σ of order one makes the friction
    // rows `e² μ p_n v + p σ` hold p at 0 (with σ → 0 they are flat in p, as above)
    apart[idx::SIGMA] = apart[idx::SIGMA].max(1.0);
    let second = mncp::solve(problem, &mut apart, params.tolerance, params.max_iterations);
    let iterations = outcome.iterations + second.iterations;
    if second.residual < outcome.residual {
        *z = apart;
        (second, iterations, true)
    } else {
        (outcome, iterations, true)
    }
}

/// Centre and rotation of a body's geometry at the end pose for velocities `(v, ω)`.
fn geom_at(body: &EcpBody, s: &EcpBodyState, h: f64, v: &Vec3, w: &Vec3) -> (Vec3, Mat3) {
    let (com, rot) = EcpStepper::end_pose(s, h, v, w);
    let geom = crate::math::Pose::from_parts(com.into(), rot) * body.geom_in_body;
    (geom.translation.vector, geom.rotation.to_rotation_matrix().into_inner())
}

/// Gap between the bodies along `n0` (from B into A) at the end poses for the given velocities:
/// A's lowest point along `n0` minus B's highest (m; ≤ 0 when they overlap along `n0`).
pub fn gap_along(a: &EcpBody, sa: &EcpBodyState, (va, wa): (&Vec3, &Vec3), b: &EcpBody, sb: &EcpBodyState, (vb, wb): (&Vec3, &Vec3), h: f64, n0: &Vec3) -> f64 {
    let (ca, ra) = geom_at(a, sa, h, va, wa);
    let (cb, rb) = geom_at(b, sb, h, vb, wb);
    // A's gap to the plane n0·ξ = 0 is its lowest point; B's gap to the plane with −n0 is minus its highest
    a.shape.plane_gap(&ca, &ra, n0, 0.0) + b.shape.plane_gap(&cb, &rb, &(-n0), 0.0)
}

/// The contact of one step between two bodies.
#[derive(Clone, Copy, Debug, Default)]
pub struct PairContact {
    /// The bodies touch at the end of the step (`p_n > 0`).
    pub in_contact: bool,
    /// Equivalent contact point on A at the end of the step (world, m).
    pub ecp_m: Vec3,
    /// Contact frame: normal from B into A, tangents (world).
    pub frame: [Vec3; 3],
    /// `[p_n, p_t, p_o, p_r]` on A (N·s, N·s, N·s, N·m·s); B receives the opposite.
    pub impulse: [f64; 4],
    /// Contact point on B (world, m; equal to the ECP in contact).
    pub point_b_m: Vec3,
    /// End velocities of A and B: `[v_A, ω_A, v_B, ω_B]` (world).
    pub velocities: [Vec3; 4],
    /// What the solve did (iterations summed over the guesses tried).
    pub solve: SolveOutcome,
}

/// Solves the contact of one pair of moving bodies; keeps its previous solution as warm start.
#[derive(Clone, Debug, Default)]
pub struct PairStepper {
    /// The last accepted unknowns and their designated inequality.
    pub(super) warm: Option<([f64; NZ_PAIR], usize)>,
    /// The warm start solves this pair with its neighbours as they are now (a block solve
    /// just wrote it): the next solve starts from it as it is, velocities included (reset to
    /// the start-of-step ones otherwise, which on an ill-conditioned loop lands on another root
    /// within the tolerance). Cleared by that solve.
    pub(super) warm_is_solution: bool,
    /// [`BodyPairProblem::tangential_compliance`] of the problems it solves (0 for two objects).
    pub(super) tangential_compliance: f64,
    /// [`BodyPairProblem::friction_ref`] of this step's problems.
    pub(super) friction_ref: [f64; 6],
}

impl PairStepper {
    /// Forgets the warm start.
    pub fn reset(&mut self) {
        self.warm = None;
        self.warm_is_solution = false;
    }

    /// One solve of the pair (A = `a`, B = `b`) over a step of `h` (s): `extra_*` are the
    /// impulses of the bodies' other contacts (frozen), `n0` the expected normal from B into A
    /// (orders the initial guesses and fixes the reference tangent). Allocates nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        params: &EcpParams,
        (a, sa, extra_a): (&EcpBody, &EcpBodyState, &(Vec3, Vec3)),
        (b, sb, extra_b): (&EcpBody, &EcpBodyState, &(Vec3, Vec3)),
        gravity: &Vec3,
        h: f64,
        friction: f64,
        n0: &Vec3,
    ) -> PairContact {
        let (ma, va_free, wa_free) = moving_body(a, sa, extra_a, gravity, h);
        let (mb, vb_free, wb_free) = moving_body(b, sb, extra_b, gravity, h);
        self.solve_moving(params, (a, sa, ma, (va_free, wa_free)), (b, sb, mb, (vb_free, wb_free)), gravity, h, friction, n0)
    }

    /// One solve of the pair with each side given as its [`MovingBody`] (a free object's
    /// Newton–Euler data, or a robot link's mobility with its twist without this contact, see
    /// [`MovingBody::mobility`]) and its velocities without this contact `(v_free, ω_free)`;
    /// `sa`, `sb` are the start-of-step states (the guesses' velocities). Allocates nothing.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve_moving(
        &mut self,
        params: &EcpParams,
        (a, sa, ma, (va_free, wa_free)): (&EcpBody, &EcpBodyState, MovingBody, (Vec3, Vec3)),
        (b, sb, mb, (vb_free, wb_free)): (&EcpBody, &EcpBodyState, MovingBody, (Vec3, Vec3)),
        gravity: &Vec3,
        h: f64,
        friction: f64,
        n0: &Vec3,
    ) -> PairContact {
        let scale = a.mass_kg.min(b.mass_kg) * h * gravity.norm().max(1.0);
        let (t0, _) = crate::math::tangent_basis(n0);
        let mut problem = BodyPairProblem {
            h_s: h,
            a: ma,
            b: mb,
            tangent_ref: arr(&t0),
            friction,
            limit_surface: [params.e_t, params.e_o, params.e_r_m],
            k1: 0,
            impulse_scale: scale,
            tangential_compliance: self.tangential_compliance,
            friction_ref: self.friction_ref,
        };
        let (ca, ra) = geom_at(a, sa, h, &va_free, &wa_free);
        let (cb, rb) = geom_at(b, sb, h, &vb_free, &wb_free);
        let (k1_list, k1_count) = a.shape.designated_candidates(&ra, n0);
        let points = a.shape.contact_guesses(&ca, &ra, n0);
        // B's highest point along n0 and its inequality most aligned with n0
        let top_b = -b.shape.plane_gap(&cb, &rb, &(-n0), 0.0);
        let face_b = b.shape.designated_candidates(&rb, &(-n0)).0[0];
        let rel = sa.velocity - sb.velocity;
        let approach = (-n0.dot(&rel)).max(0.0);
        let pn_guess = (a.mass_kg * approach + (-n0.dot(&Vec3::from(ma.impulse_linear))).max(0.0)) / scale;
        let v0 = [sa.velocity, sa.angular_velocity, sb.velocity, sb.angular_velocity];
        let set_velocities = |z: &mut [f64; NZ_PAIR]| {
            for (k, v) in v0.iter().enumerate() {
                z[3 * k..3 * k + 3].copy_from_slice(&arr(v));
            }
        };
        let guess = |point: &Vec3, k1: usize| -> [f64; NZ_PAIR] {
            let mut z = [0.0; NZ_PAIR];
            set_velocities(&mut z);
            let clearance = n0.dot(point) - top_b;
            z[idx::A1..idx::A1 + 3].copy_from_slice(&arr(point));
            z[idx::A2..idx::A2 + 3].copy_from_slice(&arr(&(point - n0 * clearance)));
            z[idx::LA + k1] = clearance.max(0.0);
            z[idx::LB + face_b] = 1.0;
            z[idx::PN] = pn_guess;
            z[idx::SIGMA] = (rel - n0 * n0.dot(&rel)).norm();
            z
        };
        let free = [va_free, wa_free, vb_free, wb_free];
        let mut tried_separated = false;
        let total = 1 + k1_count * points.len();
        let mut best: Option<([f64; NZ_PAIR], usize, SolveOutcome)> = None;
        let mut iterations = 0;
        for s in 0..total {
            let (mut z, k1) = if s == 0 {
                match self.warm {
                    Some((w, k1)) => {
                        let mut z = w;
                        if !self.warm_is_solution {
                            set_velocities(&mut z);
                        }
                        (z, k1)
                    }
                    None => continue,
                }
            } else {
                let k1 = k1_list[(s - 1) / points.len()];
                (guess(&points[(s - 1) % points.len()], k1), k1)
            };
            problem.k1 = k1;
            let retry = if tried_separated { None } else { Some(&free) };
            let (outcome, used, retried) = solve_start(&problem, &mut z, params, retry);
            tried_separated |= retried;
            iterations += used;
            if outcome.residual.is_finite() && best.as_ref().is_none_or(|(_, _, b)| outcome.residual < b.residual) {
                best = Some((z, k1, outcome));
            }
            if outcome.converged {
                break;
            }
        }
        self.warm_is_solution = false;
        let Some((z, k1, outcome)) = best else {
            self.warm = None;
            return PairContact {
                velocities: [va_free, wa_free, vb_free, wb_free],
                solve: SolveOutcome { iterations, residual: f64::INFINITY, converged: false },
                ..Default::default()
            };
        };
        self.warm = Some((z, k1));
        problem.k1 = k1;
        let frame = contact_frame(&problem, &z);
        PairContact {
            in_contact: z[idx::PN] > 0.0,
            ecp_m: vec_at(&z, idx::A1),
            frame,
            impulse: [z[idx::PN] * scale, z[idx::PT] * scale, z[idx::PO] * scale, z[idx::PR] * scale],
            point_b_m: vec_at(&z, idx::A2),
            velocities: [vec_at(&z, idx::VA), vec_at(&z, idx::WA), vec_at(&z, idx::VB), vec_at(&z, idx::WB)],
            solve: SolveOutcome { iterations, ..outcome },
        }
    }
}
