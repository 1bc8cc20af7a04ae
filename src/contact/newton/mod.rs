//! Non-smooth Newton (`solver: {kind: newton}`): Macklin, Erleben, Müller, Chentanez, Jeschke and
//! Makoviychuk, *Non-Smooth Newton Methods for Deformable Multi-Body Dynamics* (ACM TOG 2019).
//!
//! One implicit (backward-Euler) step per time step: contacts and joint limits are
//! complementarity conditions at the *position* level (the end-of-step gap, no Baumgarte term),
//! friction is a smooth isotropic cone at the velocity level, and all of them are turned into
//! root-finding problems with an NCP function (Fischer–Burmeister in the paper and in our `paper`
//! preset, min-map in the default preset; paper §4). In the paper's form (`jacobian:
//! frozen_compliance`, the `paper` preset) friction is a per-contact compliance `W` frozen within
//! each Newton iteration (paper §7), which keeps every Newton system symmetric; the default
//! preset (`jacobian: exact`, ours) instead writes Coulomb's law as a projection on the friction
//! disk and takes its exact generalized Jacobian, solved by a dense LU with a line search
//! ([`core::NewtonJacobian`]). The frozen form's Newton iteration solves the Schur
//! complement on the multipliers with a Jacobi-preconditioned conjugate residual (paper §8.3) or,
//! as an option, a dense Cholesky factorisation; the complementarity preconditioner (paper eq.
//! 66) scales every NCP by the row's inverse effective mass, which is what keeps heavy-on-light
//! stacks standing. The iteration itself is in [`core`].
//!
//! In this engine the step works on generalized coordinates: `M̃` (the mass matrix with the
//! implicit joint damping and PD servos folded in) is the paper's mass block `H` (no geometric
//! stiffness on rigid DOFs: the paper applies it to particle DOFs only, see [`fem`]), the contact
//! and joint rows are the step's ([`crate::contact::ConstraintRows`]) and their Delassus matrix
//! `J̄ M̃⁻¹ J̄ᵀ` applies the Schur complement. The end-of-step gap of a contact is linearised at
//! the start of the step, `gap + h J̄ₙ u`, with the normal and the contact points fixed for the
//! step as in the paper's §6; positions follow from the engine's `q⁺ = q ⊕ h v⁺`.
//!
//! Presets ([`NewtonPreset`]): `paper` takes the paper's literal choices (start from `u = 0`,
//! `λ = 0`, damped step `t = 0.75`, fixed iteration counts, PCR with 40 iterations); the default
//! starts from the unconstrained velocity with the previous step's impulses, takes full steps,
//! factorises small systems densely and stops on a residual tolerance. The docs page
//! `docs/newton.md` has the measured differences (the paper's start drags free bodies: a falling
//! body reaches 7.81 m/s instead of 9.81 m/s after 1 s at 120 Hz with 4 iterations).
//!
//! Deformable bodies: by default ([`FemFormulation::Primal`], [`primal`], ours) the elastic
//! forces are eliminated — each outer iteration factors the sparse node matrix `M + h² K(x)`
//! and solves the contact, weld and rigid rows' complementarity problem densely with [`core`];
//! with [`FemFormulation::DualRows`] ([`fem`], the paper preset) the nodes join the unknowns,
//! co-rotational elastic forces are compliant rows (the paper's compliance form) and one Newton
//! system couples them with the rigid trees. The dual form accepts co-rotational materials only.

pub mod core;
pub mod fem;
pub mod primal;

use self::core::{ComplementarityScale, LinearSolver, NcpFunction, NewtonIterate, NewtonJacobian, NewtonOptions, NewtonProblem, NewtonRow, NewtonScratch, NewtonStats};
use super::method::{check_params, contact_method, Capabilities, MethodParams, ParamError, Tolerance};
use super::ContactRows;
use super::{JointRowKind, SchemeInput, SchemeOutput, SolveStats, WholeStepScheme};
use crate::model::Model;
use crate::state::State;

/// Which defaults the unset options take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NewtonPreset {
    /// Start from the unconstrained velocity and the previous step's impulses, full Newton steps,
    /// dense solves up to 128 rows, stop at `tolerance_m_s`, up to 30 iterations; an unconverged
    /// step keeps its best iterate.
    #[default]
    Default,
    /// The paper's literal choices: `u⁰ = 0`, `λ⁰ = 0` (no warm start), damped step `t = 0.75`,
    /// no line search, a fixed 6 Newton iterations of 40 PCR iterations each.
    Paper,
}

/// How a scene's deformable bodies enter the Newton step (docs/newton.md, "Deformable bodies").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FemFormulation {
    /// Elastic forces eliminated (ours, the default preset): per outer iteration a sparse
    /// Cholesky factorisation of the node matrix `M + h² K(x)` and a dense complementarity
    /// problem on the contact, weld and rigid rows only ([`primal`]).
    #[default]
    Primal,
    /// The paper's §9 compliance form (the `paper` preset): elastic forces as compliant rows, one
    /// matrix-free Newton system with the contacts ([`fem`]).
    DualRows,
}

/// `fem_formulation` from a scene, with an error that names the field.
fn deserialize_fem_formulation<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<FemFormulation>, D::Error> {
    use serde::Deserialize;
    match Option::<String>::deserialize(d)?.as_deref() {
        None => Ok(None),
        Some("primal") => Ok(Some(FemFormulation::Primal)),
        Some("dual_rows") => Ok(Some(FemFormulation::DualRows)),
        Some(other) => Err(serde::de::Error::custom(format!("fem_formulation: unknown value '{other}', expected 'primal' or 'dual_rows'"))),
    }
}

/// Non-smooth Newton parameters. Options left unset take the [`NewtonPreset`]'s value.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NewtonParams {
    /// `default` or `paper`.
    pub preset: NewtonPreset,
    /// The step has converged when every row's residual is at most this (m/s: a contact's
    /// end-of-step gap error divided by h, a friction row's slip error). The paper preset runs
    /// its fixed iteration count and uses it only to report convergence.
    pub tolerance_m_s: f64,
    /// Newton iterations at most (default preset 30, paper 6).
    pub max_iterations: Option<u32>,
    /// `pcr` (paper preset), `direct`, or `auto` (default preset: direct up to 128 rows, pcr
    /// above).
    pub linear_solver: Option<LinearSolver>,
    /// Conjugate-residual iterations per Newton iteration at most (default 40).
    pub linear_iterations: Option<u32>,
    /// Relative stop of the conjugate residual on its preconditioned residual (default preset
    /// 1e-12; paper 0: the whole budget).
    pub linear_tolerance: Option<f64>,
    /// Newton step fraction t (default preset 1, paper 0.75).
    pub step_fraction: Option<f64>,
    /// Backtracking line search. Default: on with the exact Jacobian, where a stall of the step's
    /// full steps goes to the proximal-point rescue and the rescue's rounds backtrack on
    /// `½‖F‖²` after theirs (docs/newton.md, "Globalization"); off with the frozen compliance,
    /// where it backtracks on the residual norm ‖η‖₂ and with friction stalls, as the paper
    /// found (on a sliding box it left 1 541 of 2 000 steps unconverged).
    pub line_search: Option<bool>,
    /// Backtracking line search of the deformables' Newton iteration on an energy-weighted merit
    /// of the momentum residual and the position-level rows (elastic, contact normals, limits,
    /// welds; friction rows left out). Off in both presets: measured on the stiff resting ball
    /// it stalls (steps of t = 1/128) and leaves residuals of metres per second where full steps
    /// reach 1e-4 m/s. Applies only to scenes with deformables in the dual form
    /// ([`FemFormulation::DualRows`]; refused with the primal form, which would ignore it); see
    /// [`fem`] and docs/newton.md ("Globalization").
    pub elastic_line_search: Option<bool>,
    /// Trust region of the deformables' Newton iteration: each iteration's step is shortened so
    /// that no node's end-of-step position moves (by `h t |Δu|`, per axis) more than this
    /// fraction of the smallest element size `ℓ = V^{1/3}`. Default 0 (no cap) in both presets:
    /// measured, it kept `fem_gripper_ball.yaml` from blowing up but made the resting stiff ball
    /// of `fem_ball_rest.yaml` collapse after 1.3 s. Applies only to scenes with deformables in
    /// the dual form ([`FemFormulation::DualRows`]; refused with the primal form, which would
    /// ignore it); see docs/newton.md ("Globalization").
    pub node_step_limit: Option<f64>,
    /// Start from the previous step's impulses (default preset on, paper off).
    pub warm_start: Option<bool>,
    /// Start the velocity from the unconstrained velocity `ũ` instead of 0 (default preset on,
    /// paper off: the paper's start drags bodies no constraint touches).
    pub start_from_free_velocity: Option<bool>,
    /// `min_map` (default preset) or `fischer_burmeister` (paper preset).
    pub ncp: Option<NcpFunction>,
    /// The linearisation of the rigid rows' laws: `exact` (default preset: the generalized
    /// Jacobian of the natural residuals, friction by projection on the disk, dense LU, with the
    /// Armijo line search on by default) or `frozen_compliance` (paper preset: the paper's frozen
    /// friction compliance, symmetric Schur complement). Scenes with deformables always use the
    /// frozen compliance.
    pub jacobian: Option<NewtonJacobian>,
    /// `effective_mass` (default), `global` or `identity`.
    pub complementarity_scale: ComplementarityScale,
    /// Diagonal regularisation ε of the Newton system (m/s per N·s; paper: 1e-6).
    pub regularization: f64,
    /// The diagonal geometric stiffness of the deformables' node DOFs in the dual form (paper
    /// §6.3; default on, as in the paper). The primal form uses the full tangent stiffness and
    /// refuses the key (it would be ignored).
    pub geometric_stiffness: Option<bool>,
    /// Deformables: `primal` (default preset: elastic forces eliminated, sparse Cholesky on the
    /// node velocities) or `dual_rows` (paper preset: the paper's compliant elastic rows).
    #[serde(deserialize_with = "deserialize_fem_formulation")]
    pub fem_formulation: Option<FemFormulation>,
    /// Worker threads of the method's own pool for the Delassus products of problems with at
    /// least 192 rows and, with deformables in the primal form, the sparse solves of their
    /// Delassus matrix (results bit-identical to the serial path). 1 (default): serial, which is
    /// the allocation- and lock-free path the real-time loop needs; above 1 rayon allocates and
    /// synchronises inside its pool.
    pub threads: usize,
}

impl Default for NewtonParams {
    fn default() -> Self {
        NewtonParams {
            preset: NewtonPreset::Default,
            tolerance_m_s: 1e-6,
            max_iterations: None,
            linear_solver: None,
            linear_iterations: None,
            linear_tolerance: None,
            step_fraction: None,
            line_search: None,
            elastic_line_search: None,
            node_step_limit: None,
            warm_start: None,
            start_from_free_velocity: None,
            ncp: None,
            jacobian: None,
            complementarity_scale: ComplementarityScale::EffectiveMass,
            regularization: 1e-6,
            geometric_stiffness: None,
            fem_formulation: None,
            threads: 1,
        }
    }
}

/// The options with the preset applied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedNewton {
    /// Options of the iteration.
    pub options: NewtonOptions,
    /// Warm start from the previous step's impulses.
    pub warm_start: bool,
    /// Start from ũ.
    pub start_from_free_velocity: bool,
    /// Diagonal geometric stiffness on deformable node DOFs.
    pub geometric_stiffness: bool,
    /// Backtracking line search of the deformables' iteration (see [`NewtonParams`]).
    pub elastic_line_search: bool,
    /// The deformables' trust region (fraction of the smallest element size; 0: none).
    pub node_step_limit: f64,
    /// How the deformables enter the step.
    pub fem_formulation: FemFormulation,
}

impl NewtonParams {
    /// The options in effect for time step `timestep_s`.
    pub fn resolve(&self, timestep_s: f64) -> ResolvedNewton {
        let paper = self.preset == NewtonPreset::Paper;
        let jacobian = self.jacobian.unwrap_or(if paper { NewtonJacobian::FrozenCompliance } else { NewtonJacobian::Exact });
        ResolvedNewton {
            options: NewtonOptions {
                timestep_s,
                ncp: self.ncp.unwrap_or(if paper { NcpFunction::FischerBurmeister } else { NcpFunction::MinMap }),
                scale: self.complementarity_scale,
                linear_solver: self.linear_solver.unwrap_or(if paper { LinearSolver::Pcr } else { LinearSolver::Auto }),
                max_newton_iterations: self.max_iterations.unwrap_or(if paper { 6 } else { 30 }),
                max_linear_iterations: self.linear_iterations.unwrap_or(40),
                linear_tolerance: self.linear_tolerance.unwrap_or(if paper { 0.0 } else { 1e-12 }),
                tolerance_m_s: if paper { 0.0 } else { self.tolerance_m_s },
                step_fraction: self.step_fraction.unwrap_or(if paper { 0.75 } else { 1.0 }),
                line_search: self.line_search.unwrap_or(jacobian == NewtonJacobian::Exact),
                regularization: self.regularization,
                jacobian,
            },
            warm_start: self.warm_start.unwrap_or(!paper),
            start_from_free_velocity: self.start_from_free_velocity.unwrap_or(!paper),
            geometric_stiffness: self.geometric_stiffness.unwrap_or(true),
            elastic_line_search: self.elastic_line_search.unwrap_or(false),
            node_step_limit: self.node_step_limit.unwrap_or(0.0),
            fem_formulation: self.fem_formulation.unwrap_or(if paper { FemFormulation::DualRows } else { FemFormulation::Primal }),
        }
    }
}

impl MethodParams for NewtonParams {
    type Runtime = NewtonScheme;
    const NAME: &'static str = "newton";
    const SUMMARY: &'static str = "non-smooth Newton: implicit step, position-level contact complementarity with effective-mass scaling, exact friction Jacobian (dense LU) or frozen friction compliance (Krylov or dense), after Macklin et al.";
    const CAPABILITIES: Capabilities = Capabilities { deformables: true, delassus_on_demand: true, ..Capabilities::RIGID_POINT_COULOMB };

    fn validate(&self) -> Result<(), ParamError> {
        let pos = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v > 0.0);
        // the deformables' options of the dual form: the primal form has no use for them, and a
        // setting that would be ignored is refused rather than dropped in silence
        let primal = self.resolve(1e-3).fem_formulation == FemFormulation::Primal;
        const DUAL_ONLY: &str = "applies only to the deformables' dual form (fem_formulation: dual_rows, the paper preset's); the primal form (the default preset's) solves with the full tangent stiffness and needs no such safeguard: remove the key or set fem_formulation: dual_rows";
        check_params(&[
            (!(primal && self.node_step_limit.is_some()), "node_step_limit", DUAL_ONLY),
            (!(primal && self.elastic_line_search.is_some()), "elastic_line_search", DUAL_ONLY),
            (!(primal && self.geometric_stiffness.is_some()), "geometric_stiffness", DUAL_ONLY),
            (self.tolerance_m_s.is_finite() && self.tolerance_m_s > 0.0, "tolerance_m_s", "must be finite and > 0"),
            (self.max_iterations.is_none_or(|n| n >= 1), "max_iterations", "must be ≥ 1"),
            (self.linear_iterations.is_none_or(|n| n >= 1), "linear_iterations", "must be ≥ 1"),
            (self.linear_tolerance.is_none_or(|v| v.is_finite() && (0.0..1.0).contains(&v)), "linear_tolerance", "must be in [0, 1)"),
            (self.step_fraction.is_none_or(|t| t > 0.0 && t <= 1.0), "step_fraction", "must be in (0, 1]"),
            (pos(Some(self.regularization)), "regularization", "must be finite and > 0"),
            (self.node_step_limit.is_none_or(|v| v.is_finite() && v >= 0.0), "node_step_limit", "must be finite and ≥ 0"),
            (self.threads >= 1 && self.threads <= 256, "threads", "must be in [1, 256]"),
        ])
    }
    fn tolerance(&self) -> Tolerance {
        Tolerance { value: self.tolerance_m_s, unit: "m/s", field: "tolerance_m_s" }
    }
    fn set_tolerance(&mut self, value: f64) {
        self.tolerance_m_s = value;
    }
    fn max_iterations(&self) -> u32 {
        self.resolve(1e-3).options.max_newton_iterations
    }
    fn set_max_iterations(&mut self, n: u32) {
        self.max_iterations = Some(n);
    }
    fn build(&self, model: &Model) -> NewtonScheme {
        NewtonScheme::new(self.clone(), model)
    }
    fn bench_note(&self) -> Option<String> {
        Some(format!("newton kernels: {} (LU, Delassus products, laws; the same results either way)", crate::math::dense::kernel_build()))
    }
    /// The dual form ([`FemFormulation::DualRows`], the paper preset) writes elasticity as
    /// constant-compliance co-rotational rows, so its deformables must be co-rotational
    /// (docs/newton.md, "Known limits"). The primal form takes the elastic force and stiffness
    /// from the FEM assembly and accepts every law (co-rotational, Neo-Hookean, Stable
    /// Neo-Hookean).
    fn unsupported_in(&self, model: &Model) -> Option<String> {
        if self.resolve(model.timestep_s).fem_formulation == FemFormulation::Primal {
            return None;
        }
        let (i, d) = model.deformables.iter().enumerate().find(|(_, d)| d.material.model != crate::fem::ElasticModel::Corotational)?;
        let law = match d.material.model {
            crate::fem::ElasticModel::Corotational => "corotational",
            crate::fem::ElasticModel::NeoHookean => "neo_hookean",
            crate::fem::ElasticModel::StableNeoHookean => "stable_neo_hookean",
        };
        Some(format!(
            "deformables[{i}] ('{}'): material.model '{law}' is not available with solver 'newton' in its dual form (fem_formulation: dual_rows, the paper preset: co-rotational only); use fem_formulation: primal, model: corotational, or solver: vfpi",
            d.name
        ))
    }
}

contact_method!(NewtonScheme, NewtonParams, WholeStepOnRows);

/// The Newton step with its scratch, sized for the model's largest row count.
pub struct NewtonScheme {
    /// Parameters.
    pub params: NewtonParams,
    rows: Vec<NewtonRow>,
    velocity_impulse: Vec<f64>,
    dv: Vec<f64>,
    scratch: NewtonScratch,
    last: NewtonStats,
    /// The deformables' rows and scratch (`None` without deformables or in the primal form).
    fem: Option<fem::FemNewton>,
    /// The deformables' primal solver (`None` without deformables or in the dual form).
    primal: Option<primal::PrimalFem>,
    /// The Delassus matrix, assembled here on the steps that need a Newton iteration (rigid
    /// scenes, where the rows stage leaves it out: `Capabilities::delassus_on_demand`);
    /// `rows²` (empty with deformables).
    delassus: Vec<f64>,
    /// `Zᵀ x` (an `nv`-vector): the factored rows' image of a row vector, for `D x = Z (Zᵀ x)`.
    row_image: Vec<f64>,
    /// D's diagonal (rows long), from the factored rows.
    diagonal: Vec<f64>,
}

impl NewtonScheme {
    /// Allocates the scratch for `model`.
    pub fn new(params: NewtonParams, model: &Model) -> Self {
        let rows = model.max_constraint_rows(ContactRows::POINT.len());
        let threads = params.threads;
        let formulation = params.resolve(model.timestep_s).fem_formulation;
        let deformables = !model.deformables.is_empty();
        NewtonScheme {
            params,
            rows: vec![NewtonRow::Bilateral { error: 0.0, compliance: 0.0 }; rows],
            velocity_impulse: vec![0.0; rows],
            dv: vec![0.0; model.nv],
            scratch: NewtonScratch::with_threads(rows, threads),
            last: NewtonStats::default(),
            fem: (deformables && formulation == FemFormulation::DualRows).then(|| fem::FemNewton::new(model)),
            primal: (deformables && formulation == FemFormulation::Primal).then(|| primal::PrimalFem::new(model, threads)),
            delassus: if deformables { Vec::new() } else { vec![0.0; rows * rows] },
            row_image: vec![0.0; model.nv],
            diagonal: vec![0.0; rows],
        }
    }

    /// What the last step's solve did (Newton and conjugate-residual iteration counts).
    pub fn last_stats(&self) -> NewtonStats {
        self.last
    }
}

/// The laws of the step's rigid rows (contact normals and friction pairs, joint limits, joint
/// friction, mimic couplings) into `out[offset..offset + m]`, friction pairs naming their normal
/// row by its index in `out`. A contact's or limit's correction is capped like every other
/// method's: the gap is at least `−h · contact.max_depenetration_speed_m_s`.
pub(crate) fn rigid_row_laws(input: &SchemeInput, rows: &super::ConstraintRows, state: &State, out: &mut [NewtonRow], offset: usize) {
    let model = input.model;
    let prob = &rows.problem;
    let layout = prob.contact_rows;
    // the deepest correction a step may ask for (m): a body that starts deep inside another
    // is pushed out at the capped speed instead of in one step
    let max_correction = model.timestep_s * model.contact.max_depenetration_speed_m_s;
    for (ci, contact) in input.contacts.iter().enumerate() {
        let i = offset + layout.start(ci);
        out[i] = NewtonRow::Unilateral { gap: contact.distance.max(-max_correction) };
        out[i + 1] = NewtonRow::FrictionPair { normal_row: i, mu: prob.friction[ci] };
        out[i + 2] = NewtonRow::FrictionSecond;
    }
    let first_joint_row = offset + prob.first_joint_row();
    for (r, row) in rows.joint_rows.iter().enumerate() {
        let joint = &model.bodies[model.dof_body[row.dof]].joint;
        let q = state.q[joint.q_index];
        out[first_joint_row + r] = match row.kind {
            JointRowKind::LowerLimit | JointRowKind::UpperLimit => {
                let (lo, hi) = joint.position_limits.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                let gap = if row.kind == JointRowKind::LowerLimit { q - lo } else { hi - q };
                NewtonRow::Unilateral { gap: gap.max(-max_correction) }
            }
            JointRowKind::Friction => NewtonRow::BoundedFriction { bound: prob.row_upper[r] },
            JointRowKind::Mimic => {
                let mimic = &model.mimics[row.slot - 3 * model.one_dof_joint_count()];
                let leader = state.q[model.bodies[mimic.leader].joint.q_index];
                NewtonRow::Bilateral { error: q - mimic.multiplier * leader - mimic.offset, compliance: 0.0 }
            }
        };
    }
}

/// Projects each contact's impulses (rows in `layout`, Coulomb coefficients `friction`) exactly
/// into its cone — `p_n ≥ 0`, `‖p_f‖ ≤ μ p_n` — and moves `shadow` (when given) by the same change.
/// The iterate meets the cone only to the tolerance; the reported forces (and, with `shadow`,
/// the motion) use impulses exactly inside it.
pub(crate) fn project_into_cones(layout: ContactRows, friction: &[f64], impulse: &mut [f64], mut shadow: Option<&mut [f64]>) {
    for (ci, &mu) in friction.iter().enumerate() {
        let i = layout.start(ci);
        let mut projected = [impulse[i].max(0.0), impulse[i + 1], impulse[i + 2]];
        let (radius, norm) = (mu * projected[0], impulse[i + 1].hypot(impulse[i + 2]));
        if norm > radius {
            let k = if norm > 0.0 { radius / norm } else { 0.0 };
            projected[1] *= k;
            projected[2] *= k;
        }
        for r in 0..3 {
            if let Some(y) = shadow.as_deref_mut() {
                y[i + r] += projected[r] - impulse[i + r];
            }
            impulse[i + r] = projected[r];
        }
    }
}

impl WholeStepScheme for NewtonScheme {
    fn prepare_state(&mut self, state: &mut State) {
        // the rigid form's kept factorisation ([`core::kept`]); the deformables' forms size theirs
        // at their first step
        if self.fem.is_none() && self.primal.is_none() {
            self.scratch.reserve_kept_factor(&mut state.method_history);
        }
    }

    fn advance(&mut self, input: &SchemeInput, state: &mut State, output: &mut SchemeOutput) -> SolveStats {
        let model = input.model;
        let nv = model.nv;
        let h = model.timestep_s;
        let resolved = self.params.resolve(h);
        let free_weight0 = if resolved.start_from_free_velocity { 1.0 } else { 0.0 };
        if let (Some(fs), Some(f)) = (self.primal.as_mut(), output.fem.as_deref_mut()) {
            let stats = fs.advance(input, state, f, output.velocity, output.impulse, &resolved);
            self.last = stats;
            // §3.6: converged when both the rows and the momentum balance are within the tolerance
            let residual = stats.residual_m_s.max(stats.momentum_residual_m_s);
            return SolveStats { iterations: stats.newton_iterations, residual, converged: residual <= self.params.tolerance_m_s };
        }
        if let (Some(fs), Some(f)) = (self.fem.as_mut(), output.fem.as_deref_mut()) {
            let stats = fs.advance(input, state, f, output.velocity, output.impulse, &resolved);
            self.last = stats;
            // §3.6: converged when both the rows and the momentum balance are within the tolerance
            let residual = stats.residual_m_s.max(stats.momentum_residual_m_s);
            return SolveStats { iterations: stats.newton_iterations, residual, converged: residual <= self.params.tolerance_m_s };
        }
        let Some(rows) = input.rows.as_ref() else {
            // run outside the registry (step_with_scheme): no rows, the free motion of the start iterate
            let mut it = NewtonIterate { impulse: &mut [], velocity_impulse: &mut [], free_weight: free_weight0 };
            let empty = NewtonProblem { delassus: &[], free_row_velocity: &[], rows: &[], row_trees: None };
            core::solve(&empty, &resolved.options, &mut self.scratch, &mut it);
            for (o, v) in output.velocity[..nv].iter_mut().zip(input.free_velocity.iter()) {
                *o = it.free_weight * v;
            }
            return SolveStats { converged: true, ..SolveStats::default() };
        };
        let prob = &rows.problem;
        let m = prob.dim();
        let layout = prob.contact_rows;
        rigid_row_laws(input, rows, state, &mut self.rows[..m], 0);
        let impulse = &mut output.impulse[..m];
        if !resolved.warm_start {
            impulse.fill(0.0);
        }
        self.velocity_impulse[..m].copy_from_slice(impulse);
        let mut it = NewtonIterate { impulse, velocity_impulse: &mut self.velocity_impulse[..m], free_weight: free_weight0 };
        // the factorisation kept between steps is history: it lives in the state
        self.scratch.lend_kept_factor(&mut state.method_history);
        let (free_rows, row_trees) = (&rows.free_row_velocity[..m], &rows.row_trees[..m]);
        let stats = if prob.delassus.is_empty() {
            // D on demand (rigid scenes): the warm start and the chord step on the factored rows
            // first, D assembled only when a Newton iteration is needed
            let z = rows.factor_jt;
            let d = &mut self.delassus[..m * m];
            crate::contact::delassus_diagonal(model, z, row_trees, &mut self.diagonal[..m]);
            for (i, g) in self.diagonal[..m].iter().enumerate() {
                d[i * m + i] = *g;
            }
            let view = NewtonProblem { delassus: &self.delassus[..m * m], free_row_velocity: free_rows, rows: &self.rows[..m], row_trees: Some(row_trees) };
            let image = &mut self.row_image;
            let apply = |x: &[f64], out: &mut [f64]| factored_product(model, z, row_trees, x, image, out);
            match core::first_look(&view, &resolved.options, &mut self.scratch, &mut it, apply) {
                Some(stats) => stats,
                None => {
                    crate::contact::assemble_delassus(model, z, row_trees, rows.row_groups, m, &mut self.delassus[..m * m]);
                    let problem = NewtonProblem { delassus: &self.delassus[..m * m], free_row_velocity: free_rows, rows: &self.rows[..m], row_trees: Some(row_trees) };
                    core::solve(&problem, &resolved.options, &mut self.scratch, &mut it)
                }
            }
        } else {
            let problem = NewtonProblem { delassus: &prob.delassus[..m * m], free_row_velocity: free_rows, rows: &self.rows[..m], row_trees: Some(row_trees) };
            core::solve(&problem, &resolved.options, &mut self.scratch, &mut it)
        };
        self.scratch.return_kept_factor(&mut state.method_history);
        let free_weight = it.free_weight;
        // the iterate meets the cone only to the tolerance: report (and move the bodies with)
        // impulses exactly inside it — p_n ≥ 0, ‖p_f‖ ≤ μ p_n — moving y by the same change so that
        // the motion and the reported forces agree
        project_into_cones(layout, &prob.friction[..input.contacts.len()], &mut output.impulse[..m], Some(&mut self.velocity_impulse[..m]));
        // v⁺ = s ũ + M̃⁻¹ J̄ᵀ y
        self.dv.fill(0.0);
        rows.velocity_change(model, input.mass_factor, &self.velocity_impulse[..m], &mut self.dv);
        for k in 0..nv {
            output.velocity[k] = free_weight * input.free_velocity[k] + self.dv[k];
        }
        self.last = stats;
        let converged = stats.residual_m_s <= self.params.tolerance_m_s;
        SolveStats { iterations: stats.newton_iterations + stats.kept_factor_solves, residual: stats.residual_m_s, converged }
    }
}

/// `out = D x` with `D = Zᵀ Z` from the factored rows `z` (row-major `m × nv`, row `i` on the
/// trees `row_trees[i]`): the image `y = Σ xᵢ zᵢ` into `image` (`nv` long), then
/// `outᵢ = zᵢ · y` over row `i`'s trees, in ascending coordinate order.
fn factored_product(model: &Model, z: &[f64], row_trees: &[(usize, usize)], x: &[f64], image: &mut [f64], out: &mut [f64]) {
    let nv = model.nv;
    image.fill(0.0);
    crate::contact::sum_row_images(model, z, row_trees, x, image);
    for (i, o) in out.iter_mut().enumerate() {
        let row = &z[i * nv..(i + 1) * nv];
        let (t0, t1) = row_trees[i];
        let mut s = 0.0;
        for t in [t0, t1] {
            if t != crate::contact::NO_TREE {
                let tr = &model.trees[t];
                s += row[tr.v_start..tr.v_end].iter().zip(&image[tr.v_start..tr.v_end]).map(|(a, b)| a * b).sum::<f64>();
            }
        }
        *o = s;
    }
}
