//! Drumwright's L-stable compliant-constraint step (`solver: {kind: lstable}`).
//!
//! E. Drumwright, *An Unconditionally Stable First-Order Constraint Solver for Multibody
//! Systems*. Every constraint — contact normal, friction direction, joint limit, mimic coupling —
//! is a stiff spring–damper along a scalar constraint function φ(q). The step evaluates the mass
//! matrix, the Jacobians and the forces once at its start, predicts the end-of-step constraint
//! state with implicit Euler *in constraint space* (paper §4, eqs. 36–39), reads the constraint
//! forces off the spring–damper laws at that prediction, and advances the bodies with
//! semi-implicit Euler using those forces. Implicit Euler makes the constraint response L-stable:
//! stiffness never limits the step size, a duplicated or redundant constraint needs no extra
//! regularisation (the compliance regularises), and penetration is removed without bounce.
//!
//! In this engine the step works on generalized coordinates: `M̃` (the mass matrix with the
//! implicit joint damping and PD servos folded in, see [`crate::step`]) takes the place of the
//! paper's M, `v* = v + h M̃⁻¹ f` its unconstrained velocity, and the Jacobian rows are the step's
//! contact and joint rows ([`crate::contact::ConstraintRows`]). The problem is solved for the
//! impulses `p = h λ` (derivation in [`core`]), and `v⁺ = v* + M̃⁻¹ Jᵀ p`; positions follow with
//! the engine's `q⁺ = q ⊕ h v⁺` (paper eq. 36, quaternions renormalised).
//!
//! Stiffness and damping per row:
//! - contact normals: from the two materials ([`crate::model::ContactCompliance`]): Hertz
//!   `E* √(r d^{3/2})` for spheres as a secant stiffness `K = E* √(r d₀)` on `φ = −d` (paper §6.4
//!   writes `φ = d^{3/2}`, `K = E* √r`; that law has the wrong sign and vanishes at first touch,
//!   so we follow the corrected form, which the paper allows by making K state dependent), linear
//!   springs otherwise, and [`LstableParams::rigid_stiffness_n_per_m`] for rigid materials;
//!   speculative contacts (still separated at the start of the step) carry no damping, so that
//!   they only push when the predicted end-of-step gap closes;
//! - friction rows: a damper `B_f = friction_damping_n / h` (paper §6.4: `10⁶ / h`), clipped to
//!   the Coulomb cone;
//! - joint limits and mimic couplings: [`LstableParams::limit_stiffness`] and
//!   [`LstableParams::limit_damping`] (paper §5.4: `K = 10¹²`, `B = 0`); joint Coulomb friction
//!   is a friction damper bounded by the joint's friction impulse.
//!
//! Modes: [`LstableMode::C`] (default) enforces the paper's stated laws exactly; [`LstableMode::P`]
//! is the paper's literal program (needs the conic back-end). Back-ends: [`LstableBackend::Nsgs`]
//! (default, allocation-free block Gauss–Seidel) and [`LstableBackend::Clarabel`] (interior-point
//! conic solver; allocates per solve). The docs page `docs/lstable.md` has the measured
//! differences.

pub mod conic;
pub mod core;
pub mod dense;

use self::core::{row_compliance, row_position_feedback, ImpulseProblem, NsgsOptions, PolishScratch, RowKind};
use super::method::{check_params, contact_method, tolerance_and_iterations, Capabilities, MethodParams, ParamError};
use super::ContactRows;
use super::{Contact, JointRowKind, SchemeInput, SchemeOutput, SolveStats, WholeStepScheme};
use crate::model::{GeomShape, Model};
use crate::state::State;

/// Which discrete laws the step enforces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum LstableMode {
    /// Complementarity-consistent: `λ = max(0, spring force)` exactly on unilateral rows and
    /// normals, friction the damper force clipped to the cone.
    #[default]
    C,
    /// The paper's literal minimum-norm program (§5.3, §6.2–6.3, Appendix A); for comparison.
    P,
}

/// Which solver handles the inequality cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LstableBackend {
    /// Block Gauss–Seidel with exact block solves (Mode C only); allocation-free.
    #[default]
    Nsgs,
    /// The `clarabel` interior-point conic solver (Mode C with the cone-radius fixed point, or
    /// Mode P); allocates its problem data on every solve.
    Clarabel,
}

/// L-stable step parameters.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LstableParams {
    /// `C` (default) or `P` (paper-literal; requires `backend: clarabel`).
    pub mode: LstableMode,
    /// `nsgs` (default) or `clarabel`.
    pub backend: LstableBackend,
    /// Stopping tolerance (dimensionless): NSGS stops when a sweep changes no impulse by more
    /// than this times the largest impulse; the conic back-end uses it for its gap and
    /// feasibility and for the cone-radius fixed point.
    pub tolerance: f64,
    /// NSGS sweeps (or cone-radius fixed-point iterations with `clarabel`) at most.
    pub max_iterations: u32,
    /// `h B_f` (N): the friction damper is `B_f = friction_damping_n / h` (N·s/m); the creep
    /// speed of a stuck contact is `friction force / B_f`. Paper §6.4: 10⁶.
    pub friction_damping_n: f64,
    /// Normal stiffness (N/m) of contacts between rigid materials (no stiffness given in the
    /// scene's materials). The default keeps a 100 kg body within 1e-8 m of the surface.
    pub rigid_stiffness_n_per_m: f64,
    /// Smallest depth (m) at which the Hertz secant stiffness `E* √(r d)` is evaluated (first
    /// touch and speculative contacts, where `d = 0` would give no stiffness at all).
    pub hertz_min_depth_m: f64,
    /// Stiffness of joint limits and mimic couplings (N/m or N·m/rad). Paper §5.4: 10¹².
    pub limit_stiffness: f64,
    /// Damping of joint limits and mimic couplings (N·s/m or N·m·s/rad). Paper §5.4: 0.
    pub limit_damping: f64,
    /// Mode P only: the weight ζ of `‖λ_n‖²` and `‖λ_u‖²` in the paper's objective (1/s);
    /// `None`: the paper's `1/h`.
    pub zeta: Option<f64>,
}

impl Default for LstableParams {
    fn default() -> Self {
        LstableParams {
            mode: LstableMode::C,
            backend: LstableBackend::Nsgs,
            tolerance: 1e-9,
            max_iterations: 300,
            friction_damping_n: 1e6,
            rigid_stiffness_n_per_m: 1e11,
            hertz_min_depth_m: 1e-6,
            limit_stiffness: 1e12,
            limit_damping: 0.0,
            zeta: None,
        }
    }
}

impl MethodParams for LstableParams {
    type Runtime = LstableScheme;
    const NAME: &'static str = "lstable";
    const SUMMARY: &'static str = "L-stable compliant constraints: implicit Euler in constraint space, physical stiffness and damping (Drumwright)";
    const CAPABILITIES: Capabilities = Capabilities::RIGID_POINT_COULOMB;

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.tolerance > 0.0 && self.tolerance.is_finite(), "tolerance", "must be finite and > 0"),
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.friction_damping_n > 0.0 && self.friction_damping_n.is_finite(), "friction_damping_n", "must be finite and > 0"),
            (self.rigid_stiffness_n_per_m > 0.0 && self.rigid_stiffness_n_per_m.is_finite(), "rigid_stiffness_n_per_m", "must be finite and > 0"),
            (self.hertz_min_depth_m > 0.0 && self.hertz_min_depth_m.is_finite(), "hertz_min_depth_m", "must be finite and > 0"),
            (self.limit_stiffness > 0.0 && self.limit_stiffness.is_finite(), "limit_stiffness", "must be finite and > 0"),
            (self.limit_damping >= 0.0 && self.limit_damping.is_finite(), "limit_damping", "must be finite and ≥ 0"),
            (self.zeta.is_none_or(|z| z > 0.0 && z.is_finite()), "zeta", "must be finite and > 0"),
            (!(self.mode == LstableMode::P && self.backend == LstableBackend::Nsgs), "backend", "mode P needs `backend: clarabel` (Gauss–Seidel cannot enforce its w ≥ 0 rows)"),
        ])
    }
    tolerance_and_iterations!(tolerance, "relative", max_iterations);
    fn build(&self, model: &Model) -> LstableScheme {
        LstableScheme::new(self.clone(), model)
    }
}

contact_method!(LstableScheme, LstableParams, WholeStepOnRows);

/// The L-stable step with its scratch, sized for the model's largest row count.
pub struct LstableScheme {
    /// Parameters.
    pub params: LstableParams,
    /// `A = J M̃⁻¹ Jᵀ + diag(ε)`, row-major (capacity `rows²`).
    a: Vec<f64>,
    /// Cholesky scratch (capacity `rows²`).
    factor: Vec<f64>,
    /// `c = J v* + position feedback`.
    c: Vec<f64>,
    /// Row kinds.
    kinds: Vec<RowKind>,
    /// Per row: the paper's `D = h (h K + B)` (Mode P's friction slack weight).
    compliance_scale: Vec<f64>,
    /// Velocity change M̃⁻¹ Jᵀ p.
    dv: Vec<f64>,
    /// Scratch of the active-set polish.
    polish: PolishScratch,
}

impl LstableScheme {
    /// Allocates the scratch for `model`.
    pub fn new(params: LstableParams, model: &Model) -> Self {
        let rows = model.max_constraint_rows(ContactRows::POINT.len());
        LstableScheme {
            params,
            a: vec![0.0; rows * rows],
            factor: vec![0.0; rows * rows],
            c: vec![0.0; rows],
            kinds: vec![RowKind::Bilateral; rows],
            compliance_scale: vec![0.0; rows],
            dv: vec![0.0; model.nv],
            polish: PolishScratch::new(rows),
        }
    }
}

/// A contact's normal law: stiffness (N/m), damping (N·s/m), and whether both materials are
/// rigid (the stiffness is then [`LstableParams::rigid_stiffness_n_per_m`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormalLaw {
    /// K (N/m).
    pub stiffness_n_per_m: f64,
    /// B (N·s/m).
    pub damping_n_s_per_m: f64,
    /// Neither material gives a stiffness.
    pub rigid: bool,
}

/// The normal law of a contact, from its two materials (springs and dampers in series; Hertz
/// secant stiffness for spheres with an elastic side).
pub fn contact_normal_law(model: &Model, contact: &Contact, params: &LstableParams) -> NormalLaw {
    let (ga, gb) = (&model.geoms[contact.geom_a], &model.geoms[contact.geom_b]);
    let (ma, mb) = (&model.materials[ga.material].compliance, &model.materials[gb.material].compliance);
    let sphere_radius = |shape: &GeomShape| match shape {
        GeomShape::Sphere { radius } => Some(*radius),
        _ => None,
    };
    let r_eff = match (sphere_radius(&ga.shape), sphere_radius(&gb.shape)) {
        (Some(a), Some(b)) => Some(a * b / (a + b)),
        (Some(r), None) | (None, Some(r)) => Some(r),
        (None, None) => None,
    };
    let series = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x * y / (x + y)),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    };
    let hertz_compliance = ma.hertz_compliance_per_pa() + mb.hertz_compliance_per_pa();
    let (stiffness, rigid) = match r_eff {
        Some(r) if hertz_compliance > 0.0 => {
            let depth = (-contact.distance).max(params.hertz_min_depth_m);
            ((r * depth).sqrt() / hertz_compliance, false)
        }
        _ => match series(ma.stiffness_n_per_m, mb.stiffness_n_per_m) {
            Some(k) => (k, false),
            None => (params.rigid_stiffness_n_per_m, true),
        },
    };
    let damping = series(ma.damping_n_s_per_m, mb.damping_n_s_per_m).unwrap_or(0.0);
    NormalLaw { stiffness_n_per_m: stiffness, damping_n_s_per_m: damping, rigid }
}

impl WholeStepScheme for LstableScheme {
    fn advance(&mut self, input: &SchemeInput, state: &mut State, output: &mut SchemeOutput) -> SolveStats {
        let model = input.model;
        let nv = model.nv;
        let h = model.timestep_s;
        output.velocity[..nv].copy_from_slice(input.free_velocity.as_slice());
        let Some(rows) = input.rows.as_ref() else {
            // run outside the registry (step_with_scheme): no rows were built, nothing to solve
            return SolveStats { converged: true, ..SolveStats::default() };
        };
        let prob = &rows.problem;
        let m = prob.dim();
        let layout = prob.contact_rows;
        let eps_friction = 1.0 / self.params.friction_damping_n;
        // per row: kind, compliance ε, position feedback
        for (ci, contact) in input.contacts.iter().enumerate() {
            let i = layout.start(ci);
            let law = contact_normal_law(model, contact, &self.params);
            let (k, phi0) = (law.stiffness_n_per_m, contact.distance);
            let b = if phi0 > 0.0 { 0.0 } else { law.damping_n_s_per_m };
            let mut feedback = row_position_feedback(h, k, b, phi0);
            if law.rigid {
                // a rigid contact's feedback is a position correction: capped like the other
                // methods' (a body that starts deep inside another is pushed out, not launched);
                // a compliant contact's is its spring force and is left alone
                feedback = feedback.max(-model.contact.max_depenetration_speed_m_s);
            }
            self.set_row(i, RowKind::Normal, row_compliance(h, k, b), feedback, h * (h * k + b));
            for r in 1..layout.len() {
                let kind = RowKind::Friction { normal_row: i, mu: prob.friction[ci] };
                self.set_row(i + r, kind, eps_friction, 0.0, self.params.friction_damping_n);
            }
        }
        let first_joint_row = prob.first_joint_row();
        for (r, row) in rows.joint_rows.iter().enumerate() {
            let i = first_joint_row + r;
            let joint = &model.bodies[model.dof_body[row.dof]].joint;
            let q = state.q[joint.q_index];
            let (kl, bl) = (self.params.limit_stiffness, self.params.limit_damping);
            match row.kind {
                JointRowKind::LowerLimit | JointRowKind::UpperLimit => {
                    let (lo, hi) = joint.position_limits.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                    let gap = if row.kind == JointRowKind::LowerLimit { q - lo } else { hi - q };
                    let b = if gap > 0.0 { 0.0 } else { bl };
                    self.set_row(i, RowKind::Unilateral, row_compliance(h, kl, b), row_position_feedback(h, kl, b, gap), h * (h * kl + b));
                }
                JointRowKind::Friction => {
                    let kind = RowKind::Box { lo: prob.row_lower[r], hi: prob.row_upper[r] };
                    self.set_row(i, kind, eps_friction, 0.0, self.params.friction_damping_n);
                }
                JointRowKind::Mimic => {
                    let mi = row.slot - 3 * model.one_dof_joint_count();
                    let mimic = &model.mimics[mi];
                    let ql = state.q[model.bodies[mimic.leader].joint.q_index];
                    let err = q - mimic.multiplier * ql - mimic.offset;
                    self.set_row(i, RowKind::Bilateral, row_compliance(h, kl, bl), row_position_feedback(h, kl, bl, err), h * (h * kl + bl));
                }
            }
        }
        // c = J v* + feedback (set_row left the feedback in c); A = Delassus + diag(ε) (set_row
        // left ε on the diagonal of A)
        for i in 0..m {
            let jrow = &rows.jacobian[i * nv..(i + 1) * nv];
            let u: f64 = jrow.iter().zip(input.free_velocity.iter()).map(|(j, v)| j * v).sum();
            self.c[i] += u;
        }
        for i in 0..m {
            let eps = self.a[i];
            let (src, dst) = (&prob.delassus[i * m..(i + 1) * m], &mut self.factor[i * m..(i + 1) * m]);
            dst.copy_from_slice(src);
            dst[i] += eps;
        }
        std::mem::swap(&mut self.a, &mut self.factor);
        let problem = ImpulseProblem { a: &self.a[..m * m], c: &self.c[..m], kinds: &self.kinds[..m] };
        let impulse = &mut output.impulse[..m];
        let stats = solve(&self.params, &problem, &self.compliance_scale[..m], h, &mut self.factor, &mut self.polish, impulse);
        // v⁺ = v* + M̃⁻¹ Jᵀ p
        self.dv.fill(0.0);
        rows.velocity_change(model, input.mass_factor, impulse, &mut self.dv);
        for k in 0..nv {
            output.velocity[k] += self.dv[k];
        }
        stats
    }
}

impl LstableScheme {
    /// Records row `i`: its kind, its compliance ε (parked in `a[i]` until A is assembled), its
    /// position feedback (in `c[i]`, J v* is added later) and the paper's `D = h (h K + B)`.
    fn set_row(&mut self, i: usize, kind: RowKind, eps: f64, feedback: f64, compliance_scale: f64) {
        self.kinds[i] = kind;
        self.a[i] = eps;
        self.c[i] = feedback;
        self.compliance_scale[i] = compliance_scale;
    }
}

/// Solves the step's impulse problem with the configured mode and back-end; `p` holds the warm
/// start on entry. `compliance_scale` is the paper's `D` per row (Mode P), `scratch` at least
/// `m²` long.
pub fn solve(
    params: &LstableParams,
    prob: &ImpulseProblem,
    compliance_scale: &[f64],
    h: f64,
    scratch: &mut [f64],
    polish: &mut PolishScratch,
    p: &mut [f64],
) -> SolveStats {
    let m = prob.dim();
    if m == 0 {
        return SolveStats { converged: true, ..SolveStats::default() };
    }
    if prob.is_bilateral_only() {
        let ok = core::solve_bilateral(prob, scratch, p);
        return SolveStats { iterations: 1, residual: 0.0, converged: ok };
    }
    match (params.mode, params.backend) {
        (LstableMode::C, LstableBackend::Nsgs) => solve_mode_c(params, prob, polish, p),
        (LstableMode::C, LstableBackend::Clarabel) => conic::solve_mode_c(prob, params.tolerance, params.max_iterations, p),
        (LstableMode::P, _) => {
            let zeta = params.zeta.unwrap_or(1.0 / h);
            conic::solve_mode_p(prob, compliance_scale, zeta, params.tolerance, p)
        }
    }
}

/// Sweeps of Gauss–Seidel before the first active-set polish.
const SWEEPS_BEFORE_POLISH: u32 = 8;

/// Impulse floor (N·s) of the relative stopping tests.
const IMPULSE_FLOOR: f64 = 1e-12;

/// Mode C with the allocation-free back-end: Gauss–Seidel sweeps to find the active set, then an
/// exact active-set polish ([`core::polish`]); if the polish is not accepted, Gauss–Seidel goes on
/// up to the sweep limit and polishes once more. `residual` is the natural residual at exit.
fn solve_mode_c(params: &LstableParams, prob: &ImpulseProblem, polish: &mut PolishScratch, p: &mut [f64]) -> SolveStats {
    let first = NsgsOptions { max_sweeps: SWEEPS_BEFORE_POLISH.min(params.max_iterations), tolerance: params.tolerance, impulse_floor: IMPULSE_FLOOR };
    let mut stats = core::solve_mode_c_nsgs(prob, &first, p);
    let mut done = stats.converged && core::natural_residual(prob, p, IMPULSE_FLOOR) <= params.tolerance;
    if !done {
        done = core::polish(prob, polish, params.tolerance, IMPULSE_FLOOR, p);
    }
    if !done && params.max_iterations > stats.iterations {
        let rest = NsgsOptions { max_sweeps: params.max_iterations - stats.iterations, ..first };
        let more = core::solve_mode_c_nsgs(prob, &rest, p);
        stats.iterations += more.iterations;
        done = core::polish(prob, polish, params.tolerance, IMPULSE_FLOOR, p) || more.converged;
    }
    stats.residual = core::natural_residual(prob, p, IMPULSE_FLOOR);
    stats.converged = done;
    stats
}
