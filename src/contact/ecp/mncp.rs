//! One body against a plane over one step: the mixed nonlinear complementarity problem of the
//! geometrically implicit step (Xie & Chakraborty, Sec. IV, eqs. 7–19), its residual and its
//! semismooth Newton / Levenberg–Marquardt solver.
//!
//! # Unknowns (24 for every shape: shapes with fewer inequalities pad theirs with `l_i = 0`)
//!
//! | index | unknown | unit |
//! |---|---|---|
//! | 0–2 | `v`: end-of-step velocity of the centre of mass (world) | m/s |
//! | 3–5 | `ω`: end-of-step angular velocity (world) | rad/s |
//! | 6–8 | `a1`: contact point on the body, the equivalent contact point (ECP) | m |
//! | 9–11 | `a2`: contact point on the plane | m |
//! | 12, 13 | `p_t`, `p_o`: friction impulses along the tangents, over `P` | – |
//! | 14 | `p_r`: friction moment impulse about the normal, over `P · 1 m` | – |
//! | 15–20 | `l_i`: multipliers of the shape's inequalities (`l_{k1}` in m, others ratios) | – |
//! | 21 | `l_g`: multiplier of the plane's inequality | – |
//! | 22 | `p_n`: normal impulse, over `P` | – |
//! | 23 | `σ`: multiplier of the friction limit surface | m/s |
//!
//! `P = m |g| h` (the weight impulse of one step) scales every impulse to order one.
//!
//! # Equations (residual rows)
//!
//! - 0–5, Newton–Euler with backward-Euler velocities (Sec. III-A, eq. 7), over `P`:
//!   `m (v − v⁰) − (n p_n + t p_t + o p_o) − p_ext,lin = 0`,
//!   `I⁰ (ω − ω⁰) − r × (n p_n + t p_t + o p_o) − n p_r − p_ext,ang = 0`, `r = a1 − x⁺`.
//! - 6–8, 9–11, the closest-point conditions at the end-of-step pose (Sec. IV-A, eqs. 11–12):
//!   `a1 − a2 + l_{k1} c = 0`, `c + l_g n = 0` with `c = ∇f_{k1}(a1) + Σ_{i≠k1} l_i ∇f_i(a1)`.
//! - 12–14, the maximal-power-dissipation friction conditions with an ellipsoidal limit surface
//!   (Sec. III-C, eq. 9): `e_t² μ p_n v_t + p_t σ = 0` (likewise `o`, and `r` with the spin
//!   `n·ω`), `v_t = t·(v + ω × r)`.
//! - 15–20, per shape inequality `i ≠ k1`: `φ(l_i, −f_i(a1))`; padding: `l_i`.
//!   For `k1` ([`GapMode`]): signed gap `f_{k1}(a1) = 0`; paper `φ(l_{k1}, −f_{k1}(a1))`.
//! - 21: `φ(l_g, −(n·a2 − d))`.
//! - 22: signed gap `φ(p_n, l_{k1})`; paper `φ(p_n, max_i f_i(a2))` (eq. 17).
//! - 23: `φ(σ, μ² p_n² − p_t²/e_t² − p_o²/e_o² − p_r²/e_r²)`.
//!
//! `φ` is the Fischer–Burmeister function. The end-of-step pose is `x⁺ = x⁰ + h v`,
//! `R⁺ = exp(h [ω]×) R⁰`, the same map the step writes back.

use super::dual::{add3, add_scaled3, cross3, cst3, dot3, dot3c, fischer_burmeister, scale3, sub3, Dual, V3};
use super::shape::{ConvexShape, MAX_INEQUALITIES};
use nalgebra::{Const, DimMin, SMatrix, SVector};

/// Number of unknowns (and equations) of one body–plane problem.
pub const NZ: usize = 24;

/// Index of the first unknown of each block.
pub(crate) mod idx {
    pub const V: usize = 0;
    pub const W: usize = 3;
    pub const A1: usize = 6;
    pub const A2: usize = 9;
    pub const PT: usize = 12;
    pub const PO: usize = 13;
    pub const PR: usize = 14;
    pub const L: usize = 15;
    pub const LG: usize = 21;
    pub const PN: usize = 22;
    pub const SIGMA: usize = 23;
}

/// How the non-penetration condition enters the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapMode {
    /// `f_{k1}(a1) = 0` and `0 ≤ p_n ⊥ l_{k1} ≥ 0`: `l_{k1} ‖c‖` is the signed distance along
    /// the common normal, so a penetrating end pose cannot satisfy the conditions.
    #[default]
    SignedGap,
    /// The paper's literal form: `0 ≤ l_{k1} ⊥ −f_{k1}(a1) ≥ 0` and
    /// `0 ≤ p_n ⊥ max_i f_i(a2) ≥ 0`. Admits penetrating solutions (see `docs/ecp.md`).
    PaperMax,
}

/// Everything the residual needs besides the unknowns (f64 data of one body and the plane).
#[derive(Clone, Copy, Debug)]
pub struct BodyPlaneProblem {
    /// Time step h (s).
    pub h_s: f64,
    /// The body: start-of-step state, applied impulses (gravity and gyroscopic term included),
    /// shape and geometry frame.
    pub body: MovingBody,
    /// Plane normal n (unit, world; from the plane into the body's side).
    pub normal: [f64; 3],
    /// First tangent t (world).
    pub tangent1: [f64; 3],
    /// Second tangent o (world).
    pub tangent2: [f64; 3],
    /// Plane offset d: the plane is `n·ξ = d` (m).
    pub plane_offset_m: f64,
    /// Friction coefficient μ.
    pub friction: f64,
    /// Limit-surface scales `e_t`, `e_o` (dimensionless) and `e_r` (m).
    pub limit_surface: [f64; 3],
    /// The designated inequality k1.
    pub k1: usize,
    /// Non-penetration form.
    pub gap_mode: GapMode,
    /// Impulse scale P (N·s).
    pub impulse_scale: f64,
}

/// One moving body of a contact problem: start-of-step data and the impulses it receives
/// besides this contact.
#[derive(Clone, Copy, Debug)]
pub struct MovingBody {
    /// Mass m (kg).
    pub mass_kg: f64,
    /// World inertia about the centre of mass at the start of the step (kg·m², row-major).
    pub inertia_world: [[f64; 3]; 3],
    /// Centre of mass at the start of the step (world, m).
    pub com_m: [f64; 3],
    /// Velocity of the centre of mass at the start (world, m/s).
    pub velocity: [f64; 3],
    /// Angular velocity at the start (world, rad/s).
    pub angular_velocity: [f64; 3],
    /// Impulse over the step besides this contact: gravity, the body's other contacts (N·s).
    pub impulse_linear: [f64; 3],
    /// Angular impulse about the centre of mass besides this contact: gyroscopic term, other
    /// contacts (N·m·s).
    pub impulse_angular: [f64; 3],
    /// The shape.
    pub shape: ConvexShape,
    /// Columns of the geometry axes in world at the start of the step.
    pub geom_axes: [[f64; 3]; 3],
    /// Geometry origin minus centre of mass at the start (world, m).
    pub geom_offset_m: [f64; 3],
    /// `None` for a free object (its own Newton–Euler equation with `mass_kg` and
    /// `inertia_world`). For a robot link, its operational-space mobility
    /// `Λ⁻¹ = J M̃⁻¹ Jᵀ` (row-major 6 × 6, world axes, rows `(v, ω)` of the centre of mass, columns
    /// the force (N·s) and the moment about the start-of-step centre of mass (N·m·s); m/s per
    /// N·s, rad/s per N·m·s, ...): the rows become `ν − ν_free − Λ⁻¹ W = 0` with `ν_free` in
    /// `velocity`, `angular_velocity` (the link's twist without this contact) and moments about
    /// the start-of-step centre of mass (docs/ecp.md, "Robot links"). `mass_kg` is then only the
    /// reference mass of the scaling and `impulse_linear`, `impulse_angular` are zero.
    pub mobility: Option<[[f64; 6]; 6]>,
}

impl MovingBody {
    /// The point moments are taken about: the end-of-step centre of mass `com_end` for a free
    /// object (Sec. III-A), the start-of-step one for a robot link (where its mobility is).
    #[inline]
    pub(crate) fn moment_pivot<const N: usize>(&self, com_end: &V3<N>) -> V3<N> {
        match self.mobility {
            None => *com_end,
            Some(_) => cst3(&self.com_m),
        }
    }
}

fn arr3(v: &crate::math::Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// Start-of-step data of a body for a contact problem, with `extra` = (linear, angular) impulses
/// of its other contacts (N·s, N·m·s about the centre of mass): the [`MovingBody`] and the free
/// end velocities (gravity, gyroscopic term and `extra`, no contact of this pair).
pub fn moving_body(body: &super::EcpBody, s: &super::EcpBodyState, extra: &(crate::math::Vec3, crate::math::Vec3), gravity: &crate::math::Vec3, h: f64) -> (MovingBody, crate::math::Vec3, crate::math::Vec3) {
    let m = body.mass_kg;
    let r0 = s.rotation.to_rotation_matrix().into_inner();
    let inertia = r0 * body.inertia_body * r0.transpose();
    let p_lin = gravity * (m * h) + extra.0;
    let p_ang = -(s.angular_velocity.cross(&(inertia * s.angular_velocity))) * h + extra.1;
    let geom_rot = r0 * body.geom_in_body.rotation.to_rotation_matrix().into_inner();
    let mb = MovingBody {
        mass_kg: m,
        inertia_world: std::array::from_fn(|i| std::array::from_fn(|j| inertia[(i, j)])),
        com_m: arr3(&s.com_m),
        velocity: arr3(&s.velocity),
        angular_velocity: arr3(&s.angular_velocity),
        impulse_linear: arr3(&p_lin),
        impulse_angular: arr3(&p_ang),
        shape: body.shape,
        geom_axes: std::array::from_fn(|j| arr3(&geom_rot.column(j).into_owned())),
        geom_offset_m: arr3(&(r0 * body.geom_in_body.translation.vector)),
        mobility: None,
    };
    let w_free = s.angular_velocity + inertia.try_inverse().unwrap_or_else(crate::math::Mat3::zeros) * p_ang;
    (mb, s.velocity + p_lin / m, w_free)
}

/// `exp(φ) u` for a constant `u`, with `(sin θ/θ, (1 − cos θ)/θ²)` given.
#[inline]
fn rotate<const N: usize>(phi: &V3<N>, a: Dual<N>, b: Dual<N>, u: &[f64; 3]) -> V3<N> {
    let u = cst3::<N>(u);
    let pu = cross3(phi, &u);
    let ppu = cross3(phi, &pu);
    add3(&add3(&u, &scale3(&pu, a)), &scale3(&ppu, b))
}

/// Rodrigues coefficients `(sin θ/θ, (1 − cos θ)/θ²)` of `exp([φ]×)`, `θ = ‖φ‖` (series below
/// θ = 1e-4, where they are exact to round-off and stay differentiable at φ = 0).
#[inline]
fn rodrigues<const N: usize>(phi: &V3<N>) -> (Dual<N>, Dual<N>) {
    let t2 = dot3(phi, phi);
    if t2.v < 1e-8 {
        let t4 = t2 * t2;
        (Dual::cst(1.0) - t2 / 6.0 + t4 / 120.0, Dual::cst(0.5) - t2 / 24.0 + t4 / 720.0)
    } else {
        let t = t2.sqrt();
        (t.sin() / t, (Dual::cst(1.0) - t.cos()) / t2)
    }
}

/// `exp([φ]×) u` in plain numbers, with the same Rodrigues formula as the residual (the pose the
/// step writes back is the pose the constraints saw).
pub(crate) fn rotate_vector(phi: &crate::math::Vec3, u: &crate::math::Vec3) -> crate::math::Vec3 {
    let phi_d = [Dual::<0>::cst(phi.x), Dual::cst(phi.y), Dual::cst(phi.z)];
    let (a, b) = rodrigues(&phi_d);
    let r = rotate(&phi_d, a, b, &[u.x, u.y, u.z]);
    crate::math::Vec3::new(r[0].v, r[1].v, r[2].v)
}

/// The end-of-step pose for end velocities `v`, `ω`: centre of mass, geometry origin and the
/// geometry axes (world).
#[inline]
pub(crate) fn end_pose<const N: usize>(p: &BodyPlaneProblem, v: &V3<N>, w: &V3<N>) -> (V3<N>, V3<N>, [V3<N>; 3]) {
    pose_after(p.h_s, &p.body.com_m, &p.body.geom_axes, &p.body.geom_offset_m, v, w)
}

/// The pose map `x⁺ = x⁰ + h v`, `R⁺ = exp(h [ω]×) R⁰` applied to a body whose centre of mass is
/// `com` and whose geometry axes and origin offset (world, at the start) are `axes`, `offset`:
/// the end centre of mass, geometry origin and axes.
#[inline]
pub(crate) fn pose_after<const N: usize>(h: f64, com: &[f64; 3], axes: &[[f64; 3]; 3], offset: &[f64; 3], v: &V3<N>, w: &V3<N>) -> (V3<N>, V3<N>, [V3<N>; 3]) {
    let com = add3(&cst3(com), &scale3(v, Dual::cst(h)));
    let phi = scale3(w, Dual::cst(h));
    let (a, b) = rodrigues(&phi);
    let axes = [rotate(&phi, a, b, &axes[0]), rotate(&phi, a, b, &axes[1]), rotate(&phi, a, b, &axes[2])];
    let origin = add3(&com, &rotate(&phi, a, b, offset));
    (com, origin, axes)
}

/// The six dynamics rows of one body over the impulse scale `P`, with the contact force `F` and
/// moment `M` (about [`MovingBody::moment_pivot`]) already in units of `P`. A free object:
/// Newton–Euler with backward-Euler velocities (Sec. III-A, eq. 7), `m (v − v⁰)/P − F − p_lin/P`
/// and `I⁰ (ω − ω⁰)/P − M − p_ang/P`. A robot link (`mobility = Λ⁻¹`): the operational-space
/// form `m (ν − ν_free)/P − m Λ⁻¹ (F, M)`, `m` the reference mass (same scale as the free form).
#[inline]
pub(crate) fn body_rows<const N: usize>(body: &MovingBody, inv_scale: f64, (v, w): (&V3<N>, &V3<N>), (force, moment): (&V3<N>, &V3<N>), out: &mut [Dual<N>]) {
    let (mass, v0, w0) = (body.mass_kg, &body.velocity, &body.angular_velocity);
    if let Some(a) = &body.mobility {
        let wrench = [force[0], force[1], force[2], moment[0], moment[1], moment[2]];
        for k in 0..6 {
            let nu = if k < 3 { (v[k] - v0[k]) * (mass * inv_scale) } else { (w[k - 3] - w0[k - 3]) * (mass * inv_scale) };
            out[k] = (0..6).fold(nu, |acc, j| acc - wrench[j] * (mass * a[k][j]));
        }
        return;
    }
    let (inertia, p_lin, p_ang) = (&body.inertia_world, &body.impulse_linear, &body.impulse_angular);
    for k in 0..3 {
        out[k] = (v[k] - v0[k]) * (mass * inv_scale) - force[k] - p_lin[k] * inv_scale;
        let iw = (0..3).fold(Dual::cst(0.0), |acc, j| acc + (w[j] - w0[j]) * inertia[k][j]);
        out[3 + k] = iw * inv_scale - moment[k] - p_ang[k] * inv_scale;
    }
}

/// The friction rows (Sec. III-C, eq. 9) for the sliding velocities `(v_t, v_o)` and spin `v_r`:
/// `e² μ p_n v + p σ` per row, and the limit-surface slack `ζ = μ² p_n² − Σ (p/e)²`.
#[inline]
pub(crate) fn friction_rows<const N: usize>(mu_pn: Dual<N>, e: &[f64; 3], slip: [Dual<N>; 3], p: [Dual<N>; 3], sigma: Dual<N>) -> ([Dual<N>; 3], Dual<N>) {
    let rows = std::array::from_fn(|k| mu_pn * (e[k] * e[k]) * slip[k] + p[k] * sigma);
    let zeta = (0..3).fold(mu_pn * mu_pn, |acc, k| acc - p[k] * p[k] / (e[k] * e[k]));
    (rows, zeta)
}

/// `c = ∇f_{k1}(ξ) + Σ_{i≠k1} l_i ∇f_i(ξ)` (eq. 11; all inequalities with `k1 = None`) and every
/// `f_i(ξ)`, for the shape at geometry origin `origin` and axes `axes`; `l` holds one multiplier
/// per inequality. The shape coordinates of ξ are computed once for all inequalities.
#[inline]
pub(crate) fn gradient_combination<const N: usize>(
    shape: &ConvexShape,
    k1: Option<usize>,
    l: &[Dual<N>],
    xi: &V3<N>,
    origin: &V3<N>,
    axes: &[V3<N>; 3],
) -> (V3<N>, [Dual<N>; MAX_INEQUALITIES]) {
    let eta = shape_coordinates(xi, origin, axes);
    let mut f_at = [Dual::cst(0.0); MAX_INEQUALITIES];
    let mut c = [Dual::cst(0.0); 3];
    if let Some(k) = k1 {
        (f_at[k], c) = inequality_world(shape, k, &eta, axes);
    }
    for i in 0..shape.inequality_count() {
        if Some(i) != k1 {
            let (f, grad) = inequality_world(shape, i, &eta, axes);
            f_at[i] = f;
            add_scaled3(&mut c, &grad, &l[i]);
        }
    }
    (c, f_at)
}

/// The shape coordinates `η = Aᵀ (ξ − o)` of the world point ξ, for geometry origin `o` and axes
/// `A` (columns).
#[inline]
fn shape_coordinates<const N: usize>(xi: &V3<N>, origin: &V3<N>, axes: &[V3<N>; 3]) -> V3<N> {
    let rel = sub3(xi, origin);
    [dot3(&axes[0], &rel), dot3(&axes[1], &rel), dot3(&axes[2], &rel)]
}

/// `f_i` and its world gradient `A ∇_η f_i` at the shape coordinates η, for geometry axes `A`
/// (columns). An inequality of constant gradient `±e_k` (a box face, a cylinder cap) takes
/// `±A e_k` as it is: the product `A g` gives the same numbers (up to the sign of zero entries)
/// with three products and two sums of duals.
#[inline]
fn inequality_world<const N: usize>(shape: &ConvexShape, i: usize, eta: &V3<N>, axes: &[V3<N>; 3]) -> (Dual<N>, V3<N>) {
    let (f, g) = shape.inequality(i, eta);
    let grad = match shape.constant_gradient(i) {
        Some((k, s)) if s > 0.0 => axes[k],
        Some((k, _)) => [-axes[k][0], -axes[k][1], -axes[k][2]],
        None => add3(&add3(&scale3(&axes[0], g[0]), &scale3(&axes[1], g[1])), &scale3(&axes[2], g[2])),
    };
    (f, grad)
}

/// `f_i` at the world point ξ and its world gradient, for geometry origin and axes.
#[inline]
fn inequality_at<const N: usize>(shape: &ConvexShape, i: usize, xi: &V3<N>, origin: &V3<N>, axes: &[V3<N>; 3]) -> (Dual<N>, V3<N>) {
    inequality_world(shape, i, &shape_coordinates(xi, origin, axes), axes)
}

/// The residual Φ(z) (module docs), generic over the number of seeded derivatives.
pub fn residual<const N: usize>(p: &BodyPlaneProblem, z: &[Dual<N>; NZ], out: &mut [Dual<N>; NZ]) {
    let v = [z[idx::V], z[idx::V + 1], z[idx::V + 2]];
    let w = [z[idx::W], z[idx::W + 1], z[idx::W + 2]];
    let a1 = [z[idx::A1], z[idx::A1 + 1], z[idx::A1 + 2]];
    let a2 = [z[idx::A2], z[idx::A2 + 1], z[idx::A2 + 2]];
    let (pt, po, pr, pn, sigma, lg) = (z[idx::PT], z[idx::PO], z[idx::PR], z[idx::PN], z[idx::SIGMA], z[idx::LG]);
    let scale = p.impulse_scale;
    let (com, origin, axes) = end_pose(p, &v, &w);
    let (n, t, o) = (cst3::<N>(&p.normal), cst3::<N>(&p.tangent1), cst3::<N>(&p.tangent2));

    // Newton–Euler (over P): unknown impulses are already in units of P
    let force = add3(&add3(&scale3(&n, pn), &scale3(&t, pt)), &scale3(&o, po));
    let r = sub3(&a1, &p.body.moment_pivot(&com));
    let moment = add3(&cross3(&r, &force), &scale3(&n, pr));
    body_rows(&p.body, 1.0 / scale, (&v, &w), (&force, &moment), &mut out[0..6]);

    // closest-point conditions
    let m = p.body.shape.inequality_count();
    let (c, f_at_a1) = gradient_combination(&p.body.shape, Some(p.k1), &z[idx::L..idx::L + MAX_INEQUALITIES], &a1, &origin, &axes);
    let f_k1 = f_at_a1[p.k1];
    let l_k1 = z[idx::L + p.k1];
    let gap_vec = add3(&sub3(&a1, &a2), &scale3(&c, l_k1));
    let normal_vec = add3(&c, &scale3(&n, lg));
    out[6..9].copy_from_slice(&gap_vec);
    out[9..12].copy_from_slice(&normal_vec);

    // friction: maximal power dissipation on the ellipsoidal limit surface
    let vp = add3(&v, &cross3(&w, &r));
    let mu_pn = pn * p.friction;
    let (rows, zeta) = friction_rows(mu_pn, &p.limit_surface, [dot3(&t, &vp), dot3(&o, &vp), dot3c(&w, &p.normal)], [pt, po, pr], sigma);
    out[12..15].copy_from_slice(&rows);

    // complementarity
    for i in 0..MAX_INEQUALITIES {
        out[15 + i] = if i >= m {
            z[idx::L + i]
        } else if i != p.k1 {
            fischer_burmeister(z[idx::L + i], -f_at_a1[i])
        } else {
            match p.gap_mode {
                GapMode::SignedGap => f_k1,
                GapMode::PaperMax => fischer_burmeister(l_k1, -f_k1),
            }
        };
    }
    out[21] = fischer_burmeister(lg, -(dot3(&n, &a2) - p.plane_offset_m));
    out[22] = match p.gap_mode {
        GapMode::SignedGap => fischer_burmeister(pn, l_k1),
        GapMode::PaperMax => {
            let mut worst = inequality_at(&p.body.shape, 0, &a2, &origin, &axes).0;
            for i in 1..m {
                worst = worst.max(inequality_at(&p.body.shape, i, &a2, &origin, &axes).0);
            }
            fischer_burmeister(pn, worst)
        }
    };
    out[23] = fischer_burmeister(sigma, zeta);
}

/// A square system `Φ(z) = 0` of `NZ` unknowns whose residual is written once, generic over the
/// number of seeded dual-number derivatives (plain values with `N = 0`, the exact Jacobian with
/// `N = NZ`).
pub trait MncpSystem<const NZ: usize> {
    /// Writes Φ(z) into `out`.
    fn eval<const N: usize>(&self, z: &[Dual<N>; NZ], out: &mut [Dual<N>; NZ]);
}

impl MncpSystem<NZ> for BodyPlaneProblem {
    fn eval<const N: usize>(&self, z: &[Dual<N>; NZ], out: &mut [Dual<N>; NZ]) {
        residual(self, z, out)
    }
}

/// Φ(z) as plain numbers.
pub fn residual_value<S: MncpSystem<M>, const M: usize>(p: &S, z: &[f64; M]) -> [f64; M] {
    let zd: [Dual<0>; M] = std::array::from_fn(|i| Dual::cst(z[i]));
    let mut out = [Dual::cst(0.0); M];
    p.eval(&zd, &mut out);
    std::array::from_fn(|i| out[i].v)
}

/// Φ(z) and its Jacobian ∂Φ/∂z (exact, by forward-mode dual numbers).
#[inline]
pub fn residual_and_jacobian<S: MncpSystem<M>, const M: usize>(p: &S, z: &[f64; M]) -> (SVector<f64, M>, SMatrix<f64, M, M>) {
    // set in place: building the M duals with `from_fn` copied each one twice
    let mut zd = [Dual::<M>::cst(0.0); M];
    for (i, d) in zd.iter_mut().enumerate() {
        d.v = z[i];
        d.d[i] = 1.0;
    }
    let mut out = [Dual::cst(0.0); M];
    p.eval(&zd, &mut out);
    let phi = SVector::<f64, M>::from_fn(|i, _| out[i].v);
    let jac = SMatrix::<f64, M, M>::from_fn(|i, j| out[i].d[j]);
    (phi, jac)
}

/// What one solve from one initial guess did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveOutcome {
    /// Jacobian evaluations (Newton iterations).
    pub iterations: u32,
    /// ‖Φ‖∞ at exit.
    pub residual: f64,
    /// ‖Φ‖∞ ≤ tolerance.
    pub converged: bool,
}

fn inf_norm(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

fn merit<const M: usize>(x: &[f64; M]) -> f64 {
    0.5 * x.iter().map(|v| v * v).sum::<f64>()
}

/// Armijo backtracking along `dir` from `z` (merit `psi`): the accepted point, or `None` below a
/// step of 1e-10.
fn line_search<S: MncpSystem<M>, const M: usize>(p: &S, z: &[f64; M], psi: f64, dir: &SVector<f64, M>) -> Option<([f64; M], [f64; M])> {
    let mut theta = 1.0;
    while theta >= 1e-10 {
        let trial: [f64; M] = std::array::from_fn(|i| z[i] + theta * dir[i]);
        let phi = residual_value(p, &trial);
        let psi_trial = merit(&phi);
        if psi_trial.is_finite() && psi_trial <= (1.0 - 1e-4 * theta) * psi {
            return Some((trial, phi));
        }
        theta *= 0.5;
    }
    None
}

/// Solves Φ(z) = 0 from `z` (updated in place): semismooth Newton steps on the generalised
/// Jacobian, Levenberg–Marquardt steps `(JᵀJ + λI) d = −JᵀΦ` when the Newton step is singular or
/// fails the Armijo test, Armijo backtracking on `½‖Φ‖²`. Stops at `‖Φ‖∞ ≤ tolerance` or after
/// `max_iterations` Jacobians. Allocates nothing (fixed-size matrices on the stack).
pub fn solve<S: MncpSystem<M>, const M: usize>(p: &S, z: &mut [f64; M], tolerance: f64, max_iterations: u32) -> SolveOutcome
where
    Const<M>: DimMin<Const<M>, Output = Const<M>>,
{
    let mut phi = residual_value(p, z);
    let mut out = SolveOutcome { iterations: 0, residual: inf_norm(&phi), converged: false };
    while out.iterations < max_iterations {
        if out.residual <= tolerance {
            out.converged = true;
            return out;
        }
        if !out.residual.is_finite() {
            return out;
        }
        let (phi_v, jac) = residual_and_jacobian(p, z);
        out.iterations += 1;
        let psi = merit(&phi);
        let mut accepted = None;
        // the LU takes the Jacobian over (no copy of the M × M matrix); the rarer
        // Levenberg–Marquardt path evaluates it again
        if let Some(d) = jac.lu().solve(&(-phi_v)) {
            if d.iter().all(|x| x.is_finite()) {
                accepted = line_search(p, z, psi, &d);
            }
        }
        if accepted.is_none() {
            let (phi_v, jac) = residual_and_jacobian(p, z);
            let jt = jac.transpose();
            let jtj = jt * jac;
            let g = jt * phi_v;
            let mut lambda = 1e-10 * phi_v.norm().max(1.0);
            while accepted.is_none() && lambda < 1e6 {
                let mut a = jtj;
                for i in 0..M {
                    a[(i, i)] += lambda;
                }
                if let Some(ch) = a.cholesky() {
                    let d = ch.solve(&(-g));
                    accepted = line_search(p, z, psi, &d);
                }
                lambda *= 100.0;
            }
        }
        match accepted {
            Some((znew, phinew)) => {
                *z = znew;
                phi = phinew;
                out.residual = inf_norm(&phi);
            }
            None => return out,
        }
    }
    out.converged = out.residual <= tolerance;
    out
}
