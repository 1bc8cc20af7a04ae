//! FEM bodies in the non-smooth Newton step, the paper's dual form (`fem_formulation:
//! dual_rows`, the `paper` preset; the default is [`super::primal`]): the deformables' nodes as velocity DOFs next to the
//! rigid trees' generalized velocities, elastic forces as compliant constraint rows (the paper's
//! *compliance form*, §9), node contacts and welds as rows, all in one Newton system.
//!
//! # Unknowns and rows
//!
//! `u = [u_nodes (3 per node, m/s, world) | v (the rigid trees' generalized velocities)]`, with
//! the block-diagonal mass `H = diag(m_i I₃ + S_i, M̃)`: lumped node masses plus the diagonal
//! geometric stiffness `S` (§6.3, below), and the step's `M̃` (joint damping and PD servos folded
//! in). Positions follow the iterate, `x = x⁻ + h u` (backward Euler, paper eq. 45).
//!
//! Every row `i` has a sparse geometric Jacobian `J̄ᵢ`: up to four node coefficients (3-vectors)
//! and, when it touches a movable rigid body, a dense row over the rigid velocities. The rows are,
//! in this order:
//!
//! - **elastic rows**, a fixed number per tetrahedron, re-evaluated at every Newton iterate
//!   (they are nonlinear in `x`). Each is a scalar strain `s(x)` with a *constant* stiffness `k`
//!   (energy `½ k V s²`, `V` the rest volume), so its compliance is diagonal. The strains are
//!   scaled by the element size `ℓ = V^{1/3}`, which puts their residuals in m/s like every other
//!   row: with `s' = ℓ s` the row reads `s'/h + J̄ᵢ Δu + (ℓ²/(k V h²)) p = 0` (impulse `p = h λ`).
//!   - *co-rotational* (7 rows): with `R` the polar rotation of `F` (frozen when differentiating)
//!     and `ε = sym(Rᵀ F) − I`: `ε_xx, ε_yy, ε_zz` (k = 2μ), the engineering shears `γ_yz, γ_xz,
//!     γ_xy` (k = μ) and `tr ε` (k = λ). Their energies sum to `V (μ ε:ε + λ/2 (tr ε)²)`, linear
//!     isotropic elasticity on the rotated-back strain (the paper's linear co-rotational model,
//!     its 6×6 compliance block split into diagonal rows with the same energy).
//!   - *Stable Neo-Hookean*: not available in this dual form (the scene is refused; the primal
//!     form, [`super::primal`], takes it from the FEM assembly). Written as ten constant-
//!     compliance rows (the nine `F_ij` with k = μ and `J − α` with k = λ + μ, the same energy as
//!     the paper's App. B without the log term), the iteration diverged on a resting ball once
//!     contacts appeared: the `F_ij` rows carry a rest prestress that the volume row balances,
//!     and the volume row's second derivative times that prestress — an indefinite term as large
//!     as the shear stiffness — is missing from the Newton matrix (docs/newton.md).
//! - the step's **rigid rows** (contacts, joint limits, joint friction, mimic couplings), exactly
//!   as in the rigid-only scheme;
//! - **node contacts** (node–ground, node–rigid body, node–node; found by the step before the
//!   scheme runs, [`crate::coupled::collide_nodes`]):
//!   normal and two friction rows each, the node's coefficient the contact frame's row, the other
//!   side's the opposite (a rigid body's point Jacobian, or the other node);
//! - **welds** (a node welded to a link): three bilateral rows, world axes, `x_node − p_link = 0`.
//!
//! # Iteration
//!
//! The laws of every row are [`super::core::evaluate_laws`], shared with the rigid-only scheme.
//! Each Newton iteration forms the momentum residual `g = H₀ (u − ũ) − J̄ᵀ (α∘p)` and solves the
//! Schur complement `[α∘J̄ H⁻¹ J̄ᵀ∘α + C + ε I] x = α∘J̄ H⁻¹ g − η` matrix-free with the
//! Jacobi-preconditioned conjugate residual (§8.3), then `p ← p + t x`,
//! `u ← u + t H⁻¹ (J̄ᵀ (α∘x) − g)`. Elastic impulses, node-contact impulses and weld impulses are
//! warm-started from the previous step (default preset); the velocity starts consistent with
//! them, `u⁰ = ũ + H⁻¹ J̄ᵀ p⁰`.
//!
//! **Safeguarded warm start** (ours, not in the paper, whose start is always `u = 0`, `λ = 0`):
//! the warm iterate is kept only when its stopping-test residual (the larger of the rows'
//! largest natural residual and the momentum residual, m/s) is at most the cold iterate's (`u⁰ = ũ`, `p⁰ = 0`). On a stiff body
//! (Y = 1 MPa, 6 000 tets, `(h √(Y/ρ) / ℓ)² ≈ 7 000`) the previous step's impulses, re-applied at
//! the new positions after an impact or a change of the contact set and with the geometric
//! stiffness having moved the previous iterate off the momentum balance, started the iteration
//! at residuals of 1–3 m/s (the cold start: `g h` = 0.098 m/s), where the co-rotational rows'
//! linearisation (the rotation frozen) no longer holds; from there full Newton steps diverged.
//! Costs two evaluations of the rows per step.
//!
//! **Line search** (optional, `elastic_line_search`, off by default): backtracking from the
//! step fraction `t` by halving, at most eight trials (down to `t/128`), on the merit
//! `gᵀ H⁻¹ g + Σᵢ ηᵢ² / Aᵢᵢ` (J) — the momentum residual in the inverse-mass norm plus the
//! Jacobi-weighted residuals of the position-level rows (elastic, contact normals, limits,
//! welds), friction rows left out since the frozen friction compliance makes their residual a
//! poor merit (paper §3.4 / §8: the line search "stalls with friction"). It accepts the first t
//! with Armijo's decrease, else the trial of smallest merit. Measured on the stiff resting
//! ball it hurts (see docs/newton.md): the inexact conjugate-residual direction with the frozen
//! rotation is often no descent direction of the merit, and the search ends at t = 1/128.
//!
//! **Node-step trust region** (optional, `node_step_limit` = c, off by default): the step length
//! is cut to the largest `t ≤ step_fraction` with `h t max |Δuₖ| ≤ c ℓ_min` (`ℓ = V^{1/3}`, the
//! smallest element), before the line search if that is on; impulses and velocities scale
//! together, so the momentum balance of each update is kept. Measured with c = 0.1 it kept a
//! stiff grasp from blowing up but made the stiff resting ball collapse (docs/newton.md).
//!
//! **Stopping test** (§3.6): the step has converged when both the rows' natural residuals and
//! the momentum residual `g`, measured as the velocity error `max |H₀⁻¹ g|` (m/s), are within
//! the tolerance. The Newton update balances momentum only when the mass block of the Newton
//! matrix is `H₀` and the rows do not move; the geometric stiffness and the co-rotational rows'
//! rotation leave `g ≠ 0`, so a test on the rows alone accepted iterates off the momentum
//! balance. Both parts are reported ([`NewtonStats::momentum_residual_m_s`]).
//!
//! **Geometric stiffness** (§6.3, node DOFs only): after each update the elastic rows' force
//! `J̄(x)ᵀ p` is compared before and after the rows move with `x`, at fixed `p`; per node, the
//! secant along the node's own step `c = δ·Δu / |Δu|²` (kg, a Rayleigh quotient) gives the
//! isotropic shift `S = max(S, −min(0, c))` added to the node's mass block (stabilising tension
//! adds mass; compression adds nothing). Nodes whose step is below 10⁻³ of the largest node step
//! are skipped. Reset every step. (A per-component secant `δ_k / Δu_k` divided by nearly-zero
//! components: on the resting tomato it grew the shift to 1.6·10³ times the node mass within a
//! step, which froze the nodes and stalled the iteration.)
//!
//! Not modelled under this scheme: the deformables' Rayleigh damping (the paper's FEM has none;
//! backward Euler and inelastic contact dissipate) and the midpoint integrator option (positions
//! are always `x⁻ + h u`).

use super::core::{conjugate_residual, evaluate_laws, NewtonOptions, NewtonRow, NewtonStats, RowLaws};
use super::ResolvedNewton;
use crate::contact::SchemeInput;
use crate::fem::{polar_rotation_fast, ElasticModel, FemWeld, FemWorkspace, NodeAttachment};
use crate::math::{BranchMatrix, Vec3};
use crate::model::Model;
use crate::model::tree::solve_mass;
use crate::state::State;

/// No node / no rigid row.
const NONE: u32 = u32::MAX;

/// Step lengths the line search tries at most (t, t/2, …, t/2⁷).
const LINE_SEARCH_TRIALS: usize = 8;

/// Sufficient decrease of the line search: accept t when the merit fell by at least this
/// fraction of it times t (Armijo's condition with a small slope).
const ARMIJO: f64 = 1e-4;

/// The largest of the rows' natural residuals (m/s; NaN counts as infinite).
fn max_residual(natural: &[f64]) -> f64 {
    natural.iter().fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(*e) })
}

/// The rows' part of the line search's merit, `Σ ηᵢ² / Aᵢᵢ` (J) over the position-level rows
/// (elastic, contact normals, limits, welds, mimic couplings) with `weight` = `1 / Aᵢᵢ`, the
/// Jacobi weights of the iteration's Schur complement; friction rows are left out.
fn row_merit(laws: &[NewtonRow], residual: &[f64], weight: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, law) in laws.iter().enumerate() {
        if matches!(law, NewtonRow::Bilateral { .. } | NewtonRow::Unilateral { .. }) {
            s += weight[i] * residual[i] * residual[i];
        }
    }
    s
}

/// The sparse geometric Jacobian of a step's rows.
struct Jacobian<'a> {
    nodes: &'a [[u32; 4]],
    coef: &'a [[Vec3; 4]],
    rigid: &'a [u32],
    rigid_jac: &'a [f64],
    n3: usize,
    nv: usize,
}

impl Jacobian<'_> {
    /// `J̄ᵢ u`.
    #[inline]
    fn row_dot(&self, i: usize, u: &[f64]) -> f64 {
        let mut s = 0.0;
        for (a, &nd) in self.nodes[i].iter().enumerate() {
            if nd == NONE {
                break;
            }
            let k = 3 * nd as usize;
            let c = &self.coef[i][a];
            s += c.x * u[k] + c.y * u[k + 1] + c.z * u[k + 2];
        }
        if self.rigid[i] != NONE {
            let r = self.rigid[i] as usize * self.nv;
            s += self.rigid_jac[r..r + self.nv].iter().zip(&u[self.n3..self.n3 + self.nv]).map(|(a, b)| a * b).sum::<f64>();
        }
        s
    }

    /// The node part of `[J̄ H⁻¹ J̄ᵀ]ᵢᵢ`, `Σ_a Σ_c (J̄ᵢ)²_{a,c} / H_{a,c}` (`hinv` per node DOF).
    #[inline]
    fn node_diagonal(&self, i: usize, hinv: &[f64]) -> f64 {
        let mut d = 0.0;
        for (a, &nd) in self.nodes[i].iter().enumerate() {
            if nd == NONE {
                break;
            }
            let k = 3 * nd as usize;
            let c = &self.coef[i][a];
            d += c.x * c.x * hinv[k] + c.y * c.y * hinv[k + 1] + c.z * c.z * hinv[k + 2];
        }
        d
    }

    /// `out = J̄ᵀ v` (rows `0..v.len()`, in row order).
    fn transpose_mul(&self, v: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        for (i, &vi) in v.iter().enumerate() {
            if vi == 0.0 {
                continue;
            }
            for (a, &nd) in self.nodes[i].iter().enumerate() {
                if nd == NONE {
                    break;
                }
                let k = 3 * nd as usize;
                let c = &self.coef[i][a];
                out[k] += c.x * vi;
                out[k + 1] += c.y * vi;
                out[k + 2] += c.z * vi;
            }
            if self.rigid[i] != NONE {
                let r = self.rigid[i] as usize * self.nv;
                for (o, j) in out[self.n3..self.n3 + self.nv].iter_mut().zip(&self.rigid_jac[r..r + self.nv]) {
                    *o += j * vi;
                }
            }
        }
    }
}

/// `v ← H⁻¹ v`: node DOFs by `hinv`, the rigid part by the factor of `M̃`.
fn apply_inverse_mass(model: &Model, factor: &BranchMatrix, hinv: &[f64], v: &mut [f64]) {
    let n3 = hinv.len();
    for (x, w) in v[..n3].iter_mut().zip(hinv) {
        *x *= w;
    }
    solve_mass(model, factor, &mut v[n3..]);
}


/// The rows of a deformables' step after the form's own rows, written into `K` node slots per
/// row (4 in the dual form, whose elastic rows span a tetrahedron; 2 in the primal form): the
/// step's rigid rows, then a normal row and a friction pair per node contact, then three
/// bilateral rows per welded node. Each row holds up to `K` node coefficients (world direction
/// per node) and, when it touches a robot link or a free body, one slot of the rigid Jacobian.
pub(super) struct StepRows<'a, const K: usize> {
    /// Row laws.
    pub laws: &'a mut [NewtonRow],
    /// Per row: the global node indices it acts on (`u32::MAX`: none).
    pub nodes: &'a mut [[u32; K]],
    /// Per row and node slot: the coefficient vector on that node's velocity (unitless direction).
    pub coef: &'a mut [[Vec3; K]],
    /// Per row: its slot in `rigid_jac` (`u32::MAX`: no rigid part).
    pub rigid: &'a mut [u32],
    /// Rigid Jacobian rows, `nv` per slot.
    pub rigid_jac: &'a mut [f64],
    /// Impulses (N·s): the warm start on return.
    pub p: &'a mut [f64],
}

/// Where [`push_step_rows`] put the rows.
pub(super) struct StepRowLayout {
    /// One past the last row.
    pub end: usize,
    /// First of the step's rigid rows.
    pub first_rigid: usize,
    /// Number of rigid rows (their impulses map onto the step's `impulse`).
    pub rigid_rows: usize,
    /// Number of rigid Jacobian slots used.
    pub slots: usize,
    /// First node-contact row (3 per contact, in `fem.contacts` order).
    pub first_node_contact: usize,
    /// First weld row (3 per weld, in `fem.welds` order).
    pub first_weld: usize,
}

/// Writes the step's rigid rows, the node contacts and the welds from row `start` on, with
/// their warm starts (the previous step's `impulse`, `warm_node` per node, the state's weld
/// impulses) when `warm_start`; fills `fem.welds`. Allocates nothing.
#[allow(clippy::too_many_arguments)]
pub(super) fn push_step_rows<const K: usize>(
    input: &SchemeInput,
    state: &State,
    fem: &mut FemWorkspace,
    out: StepRows<K>,
    start: usize,
    impulse: &[f64],
    warm_node: &[f64],
    warm_start: bool,
) -> StepRowLayout {
    let model = input.model;
    let nv = model.nv;
    let none = [NONE; K];
    let mut m = start;
    let mut slots = 0usize;
    let mut rigid_rows = 0;
    if let Some(rows) = input.rows.as_ref() {
        let mr = rows.problem.dim();
        super::rigid_row_laws(input, rows, state, &mut out.laws[..m + mr], m);
        for i in 0..mr {
            out.nodes[m + i] = none;
            out.rigid[m + i] = slots as u32;
            out.rigid_jac[slots * nv..(slots + 1) * nv].copy_from_slice(&rows.jacobian[i * nv..(i + 1) * nv]);
            slots += 1;
            out.p[m + i] = if warm_start { impulse[i] } else { 0.0 };
        }
        m += mr;
        rigid_rows = mr;
    }
    // one rigid slot for row `i` when the point Jacobian of `body` at `point` along `dir` (with
    // the sign of the body's side) is not zero
    let mut rigid_slot = |i: usize, body: usize, point: &Vec3, dir: &Vec3, rigid: &mut [u32], rigid_jac: &mut [f64]| {
        rigid[i] = NONE;
        let row = &mut rigid_jac[slots * nv..(slots + 1) * nv];
        row.fill(0.0);
        crate::model::tree::add_point_jacobian_row(model, input.dof_axis, body, point, dir, -1.0, row);
        if row.iter().any(|x| *x != 0.0) {
            rigid[i] = slots as u32;
            slots += 1;
        }
    };
    let max_correction = model.timestep_s * model.contact.max_depenetration_speed_m_s;
    let first_node_contact = m;
    for c in fem.contacts.iter() {
        let friction_of = |g: usize| model.deformables.iter().find(|d| g >= d.node_start && g < d.node_start + d.num_nodes()).map(|d| d.friction).unwrap_or(0.5);
        let mut mu = friction_of(c.node);
        if let Some(o) = c.other_node {
            mu = mu.min(friction_of(o));
        }
        out.laws[m] = NewtonRow::Unilateral { gap: c.distance.max(-max_correction) };
        out.laws[m + 1] = NewtonRow::FrictionPair { normal_row: m, mu };
        out.laws[m + 2] = NewtonRow::FrictionSecond;
        for r in 0..3 {
            let i = m + r;
            let dir = c.frame.row(r).transpose();
            let mut nodes = none;
            let mut coef = [Vec3::zeros(); K];
            nodes[0] = c.node as u32;
            nodes[1] = c.other_node.map_or(NONE, |o| o as u32);
            coef[0] = dir;
            coef[1] = -dir;
            out.nodes[i] = nodes;
            out.coef[i] = coef;
            out.rigid[i] = NONE;
            if let Some(b) = c.body {
                rigid_slot(i, b, &c.position, &dir, out.rigid, out.rigid_jac);
            }
            out.p[i] = if warm_start { warm_node[3 * c.node + r] } else { 0.0 };
        }
        m += 3;
    }
    let first_weld = m;
    fem.welds.clear();
    for d in &model.deformables {
        for (ln, at) in d.attachment.iter().enumerate() {
            let NodeAttachment::Body(b, off) = *at else { continue };
            if fem.welds.len() == fem.welds.capacity() {
                break;
            }
            let g = d.node_start + ln;
            let p_link = (input.body_pose[b] * nalgebra::Point3::from(off)).coords;
            let p_node = Vec3::new(state.fem_x[3 * g], state.fem_x[3 * g + 1], state.fem_x[3 * g + 2]);
            let err = p_node - p_link;
            fem.welds.push(FemWeld { node: g, body: b, position: p_link, error: err, impulse: [0.0; 3], jv_row: None });
            for r in 0..3 {
                let i = m + r;
                let dir = Vec3::ith(r, 1.0);
                out.laws[i] = NewtonRow::Bilateral { error: err[r], compliance: 0.0 };
                let mut nodes = none;
                let mut coef = [Vec3::zeros(); K];
                nodes[0] = g as u32;
                coef[0] = dir;
                out.nodes[i] = nodes;
                out.coef[i] = coef;
                rigid_slot(i, b, &p_link, &dir, out.rigid, out.rigid_jac);
                out.p[i] = if warm_start { state.fem_weld_impulse[3 * g + r] } else { 0.0 };
            }
            m += 3;
        }
    }
    StepRowLayout { end: m, first_rigid: start, rigid_rows, slots, first_node_contact, first_weld }
}

/// Reports the impulses `p` of the rows of [`push_step_rows`]: the rigid rows' into `impulse`
/// and the node contacts' into `fem.contacts`, each projected exactly into its friction cone;
/// the welds' into `fem.welds` and the state; the node contacts' unprojected impulses into
/// `warm_node` (the next step's warm start). Allocates nothing.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_back_step_rows(
    input: &SchemeInput,
    state: &mut State,
    fem: &mut FemWorkspace,
    p: &mut [f64],
    laws: &[NewtonRow],
    layout: &StepRowLayout,
    warm_node: &mut [f64],
    impulse: &mut [f64],
) {
    let rigid = layout.first_rigid..layout.first_rigid + layout.rigid_rows;
    if let Some(rows) = input.rows.as_ref() {
        let nc = input.contacts.len();
        super::project_into_cones(rows.problem.contact_rows, &rows.problem.friction[..nc], &mut p[rigid.clone()], None);
    }
    warm_node.fill(0.0);
    for (k, c) in fem.contacts.iter_mut().enumerate() {
        let i = layout.first_node_contact + 3 * k;
        warm_node[3 * c.node..3 * c.node + 3].copy_from_slice(&p[i..i + 3]);
        let mu = match laws[i + 1] {
            NewtonRow::FrictionPair { mu, .. } => mu,
            _ => 0.0,
        };
        let l = &mut p[i..i + 3];
        l[0] = l[0].max(0.0);
        let (radius, norm) = (mu * l[0], l[1].hypot(l[2]));
        if norm > radius {
            let s = if norm > 0.0 { radius / norm } else { 0.0 };
            l[1] *= s;
            l[2] *= s;
        }
        c.impulse = [l[0], l[1], l[2]];
    }
    impulse[..layout.rigid_rows].copy_from_slice(&p[rigid]);
    for (k, w) in fem.welds.iter_mut().enumerate() {
        let i = layout.first_weld + 3 * k;
        w.impulse = [p[i], p[i + 1], p[i + 2]];
        state.fem_weld_impulse[3 * w.node..3 * w.node + 3].copy_from_slice(&w.impulse);
    }
}

/// The FEM part of the Newton scheme: the row structure and the scratch, sized once.
pub struct FemNewton {
    n3: usize,
    nv: usize,
    /// Number of elastic rows (they come first).
    elastic_rows: usize,
    /// Per tetrahedron (global order): its first elastic row.
    tet_row: Vec<usize>,
    /// Per tetrahedron: the strain scale ℓ = V^{1/3} (m).
    tet_length: Vec<f64>,
    /// Per elastic row: its compliance in the Schur complement `ℓ² / (k V h²)` (m/s per N·s);
    /// infinite for a row without stiffness (λ = 0 at ν = 0), which is then left out.
    elastic_compliance: Vec<f64>,
    /// Per elastic row: its rest value (SNH volume row: α; co-rotational: 0), subtracted from s.
    laws: Vec<NewtonRow>,
    nodes: Vec<[u32; 4]>,
    coef: Vec<[Vec3; 4]>,
    rigid: Vec<u32>,
    rigid_jac: Vec<f64>,
    /// `[J̄ H₀⁻¹ J̄ᵀ]ᵢᵢ` of the step (H₀ without geometric stiffness): the complementarity scale.
    diag0: Vec<f64>,
    /// The rigid part of `diag0`.
    rigid_diag: Vec<f64>,
    p: Vec<f64>,
    best_p: Vec<f64>,
    w: Vec<f64>,
    alpha: Vec<f64>,
    compliance: Vec<f64>,
    residual: Vec<f64>,
    natural: Vec<f64>,
    rhs: Vec<f64>,
    x: Vec<f64>,
    inv_diag: Vec<f64>,
    scaled: Vec<f64>,
    cr: [Vec<f64>; 6],
    u: Vec<f64>,
    best_u: Vec<f64>,
    u_free: Vec<f64>,
    du: Vec<f64>,
    g: Vec<f64>,
    tmp: Vec<f64>,
    /// Node masses per DOF (kg, 3 per node).
    mass: Vec<f64>,
    /// `1 / (m + S)` per node DOF; 0 for prescribed nodes.
    hinv: Vec<f64>,
    /// Geometric-stiffness shift S per node DOF (kg).
    shift: Vec<f64>,
    /// `J̄_elᵀ p` before the rows moved (N·s per node DOF).
    elastic_force: Vec<f64>,
    /// Positions at the iterate (m).
    pos: Vec<f64>,
    /// Warm start: elastic impulses, node-contact impulses per node (contact frame).
    warm_elastic: Vec<f64>,
    warm_node: Vec<f64>,
    rigid_tmp: Vec<f64>,
    /// The line search's base iterate `(u, p)` and, for the geometric stiffness, `J̄ᵀ p` and
    /// `J̄ᵀ x` of the elastic rows at the base positions (N·s per DOF).
    base_u: Vec<f64>,
    base_p: Vec<f64>,
    force_base: Vec<f64>,
    force_step: Vec<f64>,
}

impl FemNewton {
    /// The structure for `model`'s deformables (rows for every tetrahedron, the step's rigid
    /// rows, a contact per surface node and the welds).
    pub fn new(model: &Model) -> Self {
        let h = model.timestep_s;
        let nodes_total = model.fem_nodes();
        let (n3, nv) = (3 * nodes_total, model.nv);
        let mut tet_row = vec![];
        let mut tet_length = vec![];
        let mut elastic_compliance = vec![];
        let mut warm_elastic = vec![];
        let mut nodes = vec![];
        for d in &model.deformables {
            let (lambda, mu) = (d.material.lame_lambda(), d.material.lame_mu());
            let stiffness: &[f64] = match d.material.model {
                ElasticModel::Corotational => &[2.0 * mu, 2.0 * mu, 2.0 * mu, mu, mu, mu, lambda],
                ElasticModel::NeoHookean | ElasticModel::StableNeoHookean => &[],
            };
            for (e, t) in d.tets.iter().enumerate() {
                let v = d.volume[e];
                let l = v.cbrt();
                tet_row.push(elastic_compliance.len());
                tet_length.push(l);
                let ids = t.map(|a| (d.node_start + a) as u32);
                for &k in stiffness {
                    elastic_compliance.push(if k > 0.0 { l * l / (k * v * h * h) } else { f64::INFINITY });
                    nodes.push(ids);
                    warm_elastic.push(0.0);
                }
            }
        }
        let elastic_rows = elastic_compliance.len();
        let surface: usize = model.deformables.iter().map(|d| d.surface_nodes.len()).sum();
        let welded = crate::fem::welded_node_count(&model.deformables);
        let rigid_rows = model.max_constraint_rows(crate::contact::ContactRows::POINT.len());
        let other = rigid_rows + 3 * surface + 3 * welded;
        let cap = elastic_rows + other;
        nodes.resize(cap, [NONE; 4]);
        let v = |k: usize| vec![0.0; k];
        let mut mass = v(n3);
        for d in &model.deformables {
            for (i, m) in d.mass.iter().enumerate() {
                mass[3 * (d.node_start + i)..3 * (d.node_start + i) + 3].fill(*m);
            }
        }
        FemNewton {
            n3,
            nv,
            elastic_rows,
            tet_row,
            tet_length,
            elastic_compliance,
            laws: vec![NewtonRow::Bilateral { error: 0.0, compliance: 0.0 }; cap],
            nodes,
            coef: vec![[Vec3::zeros(); 4]; cap],
            rigid: vec![NONE; cap],
            rigid_jac: v(other * nv),
            diag0: v(cap),
            rigid_diag: v(cap),
            p: v(cap),
            best_p: v(cap),
            w: v(cap),
            alpha: v(cap),
            compliance: v(cap),
            residual: v(cap),
            natural: v(cap),
            rhs: v(cap),
            x: v(cap),
            inv_diag: v(cap),
            scaled: v(cap),
            cr: std::array::from_fn(|_| v(cap)),
            u: v(n3 + nv),
            best_u: v(n3 + nv),
            u_free: v(n3 + nv),
            du: v(n3 + nv),
            g: v(n3 + nv),
            tmp: v(n3 + nv),
            mass,
            hinv: v(n3),
            shift: v(n3),
            elastic_force: v(n3),
            pos: v(n3),
            warm_elastic,
            warm_node: v(n3),
            rigid_tmp: v(nv),
            base_u: v(n3 + nv),
            base_p: v(cap),
            force_base: v(n3 + nv),
            force_step: v(n3 + nv),
        }
    }

    /// Evaluates the elastic rows at the positions `self.pos`: their Jacobian, their law
    /// (`Bilateral` with the error chosen so that `error/h + J̄ᵢ u = s'(x)/h`) and `w = J̄ u`.
    fn evaluate_elastic(&mut self, model: &Model, h: f64) {
        let mut e_global = 0;
        for d in &model.deformables {
            for (e, t) in d.tets.iter().enumerate() {
                let row0 = self.tet_row[e_global];
                let l = self.tet_length[e_global];
                e_global += 1;
                let gr = &d.grads[e];
                let xs = t.map(|a| {
                    let k = 3 * (d.node_start + a);
                    Vec3::new(self.pos[k], self.pos[k + 1], self.pos[k + 2])
                });
                let f = xs[0] * gr[0].transpose() + xs[1] * gr[1].transpose() + xs[2] * gr[2].transpose() + xs[3] * gr[3].transpose();
                let mut strain = [0.0; 7];
                let count = match d.material.model {
                    ElasticModel::Corotational => {
                        let r = polar_rotation_fast(&f);
                        let g = r.transpose() * f;
                        strain[..7].copy_from_slice(&[
                            g[(0, 0)] - 1.0,
                            g[(1, 1)] - 1.0,
                            g[(2, 2)] - 1.0,
                            g[(1, 2)] + g[(2, 1)],
                            g[(0, 2)] + g[(2, 0)],
                            g[(0, 1)] + g[(1, 0)],
                            g[(0, 0)] + g[(1, 1)] + g[(2, 2)] - 3.0,
                        ]);
                        let (c0, c1, c2) = (r.column(0).into_owned(), r.column(1).into_owned(), r.column(2).into_owned());
                        for a in 0..4 {
                            let ga = gr[a] * l;
                            let rows = [c0 * ga.x, c1 * ga.y, c2 * ga.z, c1 * ga.z + c2 * ga.y, c0 * ga.z + c2 * ga.x, c0 * ga.y + c1 * ga.x];
                            for (k, c) in rows.iter().enumerate() {
                                self.coef[row0 + k][a] = *c;
                            }
                            self.coef[row0 + 6][a] = rows[0] + rows[1] + rows[2];
                        }
                        7
                    }
                    // refused at scene load (`SolverConfig::check_model`): its rows diverge, see docs/newton.md
                    ElasticModel::NeoHookean | ElasticModel::StableNeoHookean => 0,
                };
                for k in 0..count {
                    let i = row0 + k;
                    let compliance = self.elastic_compliance[i];
                    if compliance.is_infinite() {
                        // no stiffness (λ = 0): the row is left out, its impulse driven to 0
                        self.coef[i] = [Vec3::zeros(); 4];
                        self.w[i] = 0.0;
                        self.laws[i] = NewtonRow::Bilateral { error: 0.0, compliance: 1.0 };
                        continue;
                    }
                    let mut w = 0.0;
                    for (a, c) in self.coef[i].iter().enumerate() {
                        let j = 3 * self.nodes[i][a] as usize;
                        w += c.x * self.u[j] + c.y * self.u[j + 1] + c.z * self.u[j + 2];
                    }
                    self.w[i] = w;
                    self.laws[i] = NewtonRow::Bilateral { error: l * strain[k] - h * w, compliance };
                }
            }
        }
    }

    /// `u = u_base + t Δu`, `p = p_base + t x` (the iterate at step length t).
    fn set_step(&mut self, t: f64, m: usize) {
        let n = self.n3 + self.nv;
        for k in 0..n {
            self.u[k] = self.base_u[k] + t * self.du[k];
        }
        for i in 0..m {
            self.p[i] = self.base_p[i] + t * self.x[i];
        }
    }

    /// Evaluates every row at the iterate `(u, p)`: positions `x = x⁻ + h u`, the elastic rows'
    /// Jacobian and law, `w = J̄ u` and the laws (α, C, η and the natural residual) of rows
    /// `0..m`.
    fn evaluate_iterate(&mut self, input: &SchemeInput, x_start: &[f64], opts: &NewtonOptions, m: usize) {
        let h = input.model.timestep_s;
        for k in 0..self.n3 {
            self.pos[k] = x_start[k] + h * self.u[k];
        }
        self.evaluate_elastic(input.model, h);
        let jac = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3: self.n3, nv: self.nv };
        for i in self.elastic_rows..m {
            self.w[i] = jac.row_dot(i, &self.u);
        }
        let diag0 = &self.diag0;
        let laws = RowLaws { alpha: &mut self.alpha[..m], compliance: &mut self.compliance[..m], residual: &mut self.residual[..m], natural: &mut self.natural[..m] };
        evaluate_laws(&self.laws[..m], opts, &self.p[..m], &self.w[..m], |i| diag0[i], laws);
    }

    /// The stopping test's residual (the largest natural residual of rows `0..m`, m/s) at the
    /// iterate `(u, p)`.
    fn start_residual(&mut self, input: &SchemeInput, x_start: &[f64], opts: &NewtonOptions, m: usize) -> f64 {
        self.evaluate_iterate(input, x_start, opts, m);
        self.momentum_residual(input, m);
        max_residual(&self.natural[..m]).max(self.momentum_velocity_error())
    }

    /// The momentum residual as a velocity error (m/s for node DOFs, the generalized velocity's
    /// unit for rigid DOFs): the largest entry of `H₀⁻¹ g`, where `g = H₀ (u − ũ) − J̄ᵀ (α∘p)`
    /// is in `g` and `H⁻¹ g` in `tmp` ([`Self::momentum_residual`]). `H₀` is the mass block
    /// without the geometric stiffness: this measures how far the iterate is from the momentum
    /// balance of the step (paper §3.6 asks for both this and the constraint residual to be
    /// small). Prescribed nodes count zero.
    fn momentum_velocity_error(&self) -> f64 {
        let n3 = self.n3;
        let mut e = 0.0f64;
        for k in 0..n3 {
            if self.hinv[k] > 0.0 {
                let v = self.g[k].abs() / self.mass[k];
                e = if v.is_nan() { f64::INFINITY } else { e.max(v) };
            }
        }
        // the rigid part of tmp is M̃⁻¹ g (the shift acts on node DOFs only)
        for v in &self.tmp[n3..n3 + self.nv] {
            e = if v.is_nan() { f64::INFINITY } else { e.max(v.abs()) };
        }
        e
    }

    /// The momentum residual `g = H₀ (u − ũ) − J̄ᵀ (α∘p)` (N·s) of the iterate into `g`, `H⁻¹ g`
    /// into `tmp`; returns `gᵀ H⁻¹ g` (J), the momentum part of the line search's merit.
    fn momentum_residual(&mut self, input: &SchemeInput, m: usize) -> f64 {
        let (n3, nv) = (self.n3, self.nv);
        let n = n3 + nv;
        for i in 0..m {
            self.scaled[i] = self.alpha[i] * self.p[i];
        }
        let jac = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3, nv };
        jac.transpose_mul(&self.scaled[..m], &mut self.tmp[..n]);
        for k in 0..n3 {
            self.g[k] = self.mass[k] * (self.u[k] - self.u_free[k]) - self.tmp[k];
        }
        for r in 0..nv {
            let mut s = 0.0;
            for c in 0..nv {
                s += input.mass_tilde[(r, c)] * (self.u[n3 + c] - self.u_free[n3 + c]);
            }
            self.g[n3 + r] = s - self.tmp[n3 + r];
        }
        self.tmp[..n].copy_from_slice(&self.g[..n]);
        apply_inverse_mass(input.model, input.mass_factor, &self.hinv, &mut self.tmp[..n]);
        self.g[..n].iter().zip(&self.tmp[..n]).map(|(a, b)| a * b).sum()
    }

    /// One step of the coupled system (see the module docs). Writes the rigid velocity into
    /// `velocity`, the rigid rows' impulses into `impulse`, the node velocities into
    /// `state.fem_v` and the node contacts and welds (with impulses) into `fem`.
    ///
    /// Long by design: one numeric algorithm read top to bottom against the paper, whose
    /// intermediate values feed each other in a fixed order (splitting it would move state into
    /// parameter structs without making a step of it separately meaningful).
    #[allow(clippy::too_many_arguments)]
    pub fn advance(
        &mut self,
        input: &SchemeInput,
        state: &mut State,
        fem: &mut FemWorkspace,
        velocity: &mut [f64],
        impulse: &mut [f64],
        resolved: &ResolvedNewton,
    ) -> NewtonStats {
        let ResolvedNewton { options: ref opts, warm_start, start_from_free_velocity, geometric_stiffness, elastic_line_search, node_step_limit, .. } = *resolved;
        // the trust region's largest node displacement per iteration (m)
        let max_node_step = node_step_limit * self.tet_length.iter().fold(f64::INFINITY, |a, &l| a.min(l));
        let model = input.model;
        let h = model.timestep_s;
        let (n3, nv) = (self.n3, self.nv);
        let n = n3 + nv;
        // ũ: nodes under gravity (prescribed ones at their velocity), the rigid v*
        for g in 0..n3 / 3 {
            for c in 0..3 {
                let k = 3 * g + c;
                if fem.system.prescribed[g] {
                    self.u_free[k] = fem.system.prescribed_velocity[k];
                    self.hinv[k] = 0.0;
                } else {
                    self.u_free[k] = state.fem_v[k] + h * model.gravity[c];
                    self.hinv[k] = 1.0 / self.mass[k];
                }
            }
        }
        self.u_free[n3..n].copy_from_slice(input.free_velocity.as_slice());
        self.shift.fill(0.0);
        // rows: elastic (structure fixed), then the step's rigid rows, node contacts, welds
        let el = self.elastic_rows;
        if warm_start {
            self.p[..el].copy_from_slice(&self.warm_elastic);
        } else {
            self.p[..el].fill(0.0);
        }
        let m = el;
        let layout = push_step_rows(
            input,
            state,
            fem,
            StepRows { laws: &mut self.laws, nodes: &mut self.nodes, coef: &mut self.coef, rigid: &mut self.rigid, rigid_jac: &mut self.rigid_jac, p: &mut self.p },
            m,
            impulse,
            &self.warm_node,
            warm_start,
        );
        let m = layout.end;
        // the complementarity scale [J̄ H₀⁻¹ J̄ᵀ]ᵢᵢ (node part, plus the rigid part through M̃⁻¹)
        for i in el..m {
            let d = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3, nv }.node_diagonal(i, &self.hinv);
            let mut rd = 0.0;
            if self.rigid[i] != NONE {
                let r = self.rigid[i] as usize * nv;
                self.rigid_tmp.copy_from_slice(&self.rigid_jac[r..r + nv]);
                solve_mass(model, input.mass_factor, &mut self.rigid_tmp);
                rd = self.rigid_tmp.iter().zip(&self.rigid_jac[r..r + nv]).map(|(a, b)| a * b).sum();
            }
            self.rigid_diag[i] = rd;
            self.diag0[i] = d + rd;
        }
        self.rigid_diag[..el].fill(0.0);
        // start: u⁰ = s ũ + H⁻¹ J̄ᵀ p⁰ (prescribed nodes at their velocity)
        let s0 = if start_from_free_velocity { 1.0 } else { 0.0 };
        for k in 0..n {
            let prescribed = k < n3 && self.hinv[k] == 0.0;
            self.u[k] = if prescribed { self.u_free[k] } else { s0 * self.u_free[k] };
        }
        // elastic rows need positions for their Jacobian: evaluate at x⁻ first
        self.pos.copy_from_slice(&state.fem_x);
        self.evaluate_elastic(model, h);
        {
            let jac = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3, nv };
            jac.transpose_mul(&self.p[..m], &mut self.tmp[..n]);
        }
        apply_inverse_mass(model, input.mass_factor, &self.hinv, &mut self.tmp[..n]);
        for k in 0..n {
            self.u[k] += self.tmp[k];
        }
        if warm_start {
            // keep the warm start only where it beats the cold one (u = s ũ, p = 0) on the
            // stopping test's residual: the previous step's impulses, re-applied at the new
            // positions after an impact or a change of the contact set, can start the iteration
            // far outside the region where the elastic rows' linearisation holds
            let res_warm = self.start_residual(input, &state.fem_x, opts, m);
            self.base_u[..n].copy_from_slice(&self.u[..n]);
            self.base_p[..m].copy_from_slice(&self.p[..m]);
            for k in 0..n {
                let prescribed = k < n3 && self.hinv[k] == 0.0;
                self.u[k] = if prescribed { self.u_free[k] } else { s0 * self.u_free[k] };
            }
            self.p[..m].fill(0.0);
            let res_cold = self.start_residual(input, &state.fem_x, opts, m);
            if res_warm <= res_cold {
                self.u[..n].copy_from_slice(&self.base_u[..n]);
                self.p[..m].copy_from_slice(&self.base_p[..m]);
            }
        }

        let mut stats = NewtonStats::default();
        let mut best = f64::INFINITY;
        let mut best_parts = (f64::INFINITY, f64::INFINITY);
        let eps = opts.regularization;
        let mut have_force = false;
        loop {
            self.evaluate_iterate(input, &state.fem_x, opts, m);
            let jac = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3, nv };
            if geometric_stiffness && have_force {
                // secant of the elastic force at fixed p over the last update (node DOFs only)
                jac.transpose_mul(&self.p[..el], &mut self.tmp[..n]);
                // per node, the secant along the node's own step (a Rayleigh quotient
                // `δ·Δu / |Δu|²`, isotropic): a per-component quotient `δ_k / Δu_k` divides by
                // components that are nearly zero and grew the shift to 10³ times the node mass
                // on the resting tomato, which froze the nodes and stalled the iteration; nodes
                // whose step is below 10⁻³ of the largest one are left as they are
                let fastest = (0..n3 / 3).fold(0.0f64, |a, j| a.max(self.du[3 * j].hypot(self.du[3 * j + 1]).hypot(self.du[3 * j + 2])));
                for j in 0..n3 / 3 {
                    let k = 3 * j;
                    let d2 = self.du[k] * self.du[k] + self.du[k + 1] * self.du[k + 1] + self.du[k + 2] * self.du[k + 2];
                    if self.hinv[k] == 0.0 || d2 <= (1e-3 * fastest).powi(2) || d2 == 0.0 {
                        continue;
                    }
                    let c = (0..3).map(|a| (self.tmp[k + a] - self.elastic_force[k + a]) * self.du[k + a]).sum::<f64>() / d2;
                    for a in 0..3 {
                        self.shift[k + a] = self.shift[k + a].max(-c.min(0.0));
                        self.hinv[k + a] = 1.0 / (self.mass[k + a] + self.shift[k + a]);
                    }
                }
            }
            // §3.6: both the rows' residual and the momentum residual (g = H₀ (u − ũ) − J̄ᵀ (α∘p),
            // as a velocity error) must be small; g and H⁻¹ g (in tmp) serve the Newton step too
            let momentum_merit = self.momentum_residual(input, m);
            let row_res = max_residual(&self.natural[..m]);
            let momentum_res = self.momentum_velocity_error();
            let res = row_res.max(momentum_res);
            stats.residual_m_s = row_res;
            stats.momentum_residual_m_s = momentum_res;
            if res < best {
                best = res;
                best_parts = (row_res, momentum_res);
                self.best_p[..m].copy_from_slice(&self.p[..m]);
                self.best_u[..n].copy_from_slice(&self.u[..n]);
            }
            if opts.tolerance_m_s > 0.0 && res <= opts.tolerance_m_s {
                stats.converged = true;
                break;
            }
            if stats.newton_iterations >= opts.max_newton_iterations {
                break;
            }
            // g = H₀ (u − ũ) − J̄ᵀ (α∘p) is in g, H⁻¹ g in tmp (above)
            let jac = Jacobian { nodes: &self.nodes, coef: &self.coef, rigid: &self.rigid, rigid_jac: &self.rigid_jac, n3, nv };
            // b = α∘J̄ H⁻¹ g − η
            for i in 0..m {
                self.rhs[i] = self.alpha[i] * jac.row_dot(i, &self.tmp) - self.residual[i];
                // Jacobi preconditioner 1 / diag(A) with the current H
                let d = self.rigid_diag[i] + jac.node_diagonal(i, &self.hinv);
                self.inv_diag[i] = 1.0 / (self.alpha[i] * self.alpha[i] * d + self.compliance[i] + eps);
            }
            let merit0 = momentum_merit + row_merit(&self.laws[..m], &self.residual[..m], &self.inv_diag[..m]);
            self.x[..m].fill(0.0);
            {
                let (alpha, compliance, hinv) = (&self.alpha[..m], &self.compliance[..m], &self.hinv);
                let (scaled, tmp) = (&mut self.scaled, &mut self.tmp);
                let mut apply = |v: &[f64], out: &mut [f64]| {
                    for i in 0..m {
                        scaled[i] = alpha[i] * v[i];
                    }
                    jac.transpose_mul(&scaled[..m], &mut tmp[..n]);
                    apply_inverse_mass(model, input.mass_factor, hinv, &mut tmp[..n]);
                    for i in 0..m {
                        out[i] = alpha[i] * jac.row_dot(i, tmp) + (compliance[i] + eps) * v[i];
                    }
                };
                stats.linear_iterations += conjugate_residual(&mut apply, &self.rhs[..m], &self.inv_diag[..m], &mut self.x[..m], opts.max_linear_iterations, opts.linear_tolerance, &mut self.cr);
            }
            stats.newton_iterations += 1;
            // the full direction Δu = H⁻¹ (J̄ᵀ (α∘x) − g) into du
            for i in 0..m {
                self.scaled[i] = self.alpha[i] * self.x[i];
            }
            jac.transpose_mul(&self.scaled[..m], &mut self.du[..n]);
            for k in 0..n {
                self.du[k] -= self.g[k];
            }
            apply_inverse_mass(model, input.mass_factor, &self.hinv, &mut self.du[..n]);
            if geometric_stiffness {
                // J̄ᵀ p at the rows' current positions is linear in the step: J̄ᵀ p + t J̄ᵀ x
                jac.transpose_mul(&self.p[..el], &mut self.force_base[..n]);
                jac.transpose_mul(&self.x[..el], &mut self.force_step[..n]);
            }
            self.base_u[..n].copy_from_slice(&self.u[..n]);
            self.base_p[..m].copy_from_slice(&self.p[..m]);
            let mut t = opts.step_fraction;
            if max_node_step > 0.0 {
                let fastest = self.du[..n3].iter().fold(0.0f64, |a, d| a.max(d.abs()));
                if h * t * fastest > max_node_step {
                    t = max_node_step / (h * fastest);
                }
            }
            if elastic_line_search {
                // backtracking on the merit (module docs): the first t with sufficient decrease,
                // else the trial with the smallest merit
                let (mut best_t, mut best_merit) = (t, f64::INFINITY);
                for _ in 0..LINE_SEARCH_TRIALS {
                    self.set_step(t, m);
                    self.evaluate_iterate(input, &state.fem_x, opts, m);
                    let merit = self.momentum_residual(input, m) + row_merit(&self.laws[..m], &self.residual[..m], &self.inv_diag[..m]);
                    if merit <= (1.0 - ARMIJO * t) * merit0 {
                        best_t = t;
                        break;
                    }
                    if merit < best_merit {
                        (best_t, best_merit) = (t, merit);
                    }
                    t *= 0.5;
                }
                t = best_t;
            }
            self.set_step(t, m);
            for k in 0..n {
                self.du[k] *= t;
            }
            if geometric_stiffness {
                for k in 0..n3 {
                    self.elastic_force[k] = self.force_base[k] + t * self.force_step[k];
                }
                have_force = true;
            }
        }
        if !stats.converged && opts.tolerance_m_s > 0.0 && best < stats.residual_m_s.max(stats.momentum_residual_m_s) {
            self.p[..m].copy_from_slice(&self.best_p[..m]);
            self.u[..n].copy_from_slice(&self.best_u[..n]);
            (stats.residual_m_s, stats.momentum_residual_m_s) = best_parts;
        }
        // outputs: the iterate's velocity, the impulses reported exactly inside their cones
        state.fem_v.copy_from_slice(&self.u[..n3]);
        velocity[..nv].copy_from_slice(&self.u[n3..n]);
        self.warm_elastic.copy_from_slice(&self.p[..el]);
        write_back_step_rows(input, state, fem, &mut self.p, &self.laws, &layout, &mut self.warm_node, impulse);
        stats
    }
}
