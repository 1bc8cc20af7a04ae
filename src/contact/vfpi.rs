//! V-FPI: velocity fixed-point iteration with contact nodalization and diagonalization — the
//! COND solver of Lee, Lee & Lee, "Large-Dimensional Multibody Dynamics Simulation Using Contact
//! Nodalization and Diagonalization" (method notes: `docs/vfpi.md`).
//!
//! # The problem (paper §III, eqs. 1, 9, 15)
//! One step's linear system `A x = b + J_cᵀ λ` over the *nodalized* unknowns
//! `x = [x_fem | x_rigid | x_virtual]`:
//! - `x_fem`: 3 velocities per deformable node (m/s, world), `A_fem` the sparse FEM matrix of
//!   [`crate::fem::FemSystem`];
//! - `x_rigid`: generalized velocities of the rigid trees, `A = M̃` (the step's mass matrix
//!   with its implicit damping/PD terms), `b = M̃ v*`;
//! - `x_virtual`: one *virtual node* per rigid contact (3 entries, in the contact frame) and per
//!   joint row (1 entry), tied to the body point by the implicit damper `k̃ (J_v x_rigid − x_v)`
//!   (eq. 14–15; `k̃ = k_v h` in impulse units).
//!
//! Units: the crate's impulse convention — `A` in kg, `b` and `λ` in N·s (the paper's λ is the
//! mean force, `λ_paper = λ / h`).
//!
//! # The iteration (paper Alg. 1–3)
//! ```text
//!   x* = x − W (A x − b)                               (20) gradient step, W diagonal
//!   λ_m = ProjectFC(−(η_m + φ_m) / γ_m),  η = J_c x*    (23, 26) one-shot per contact
//!   x** = x* + W J_cᵀ λ                                 (24)
//!   x⁺ = ν (u (x** − x) + x − x⁻) + x⁻                  (38) Chebyshev, under-relaxed
//! ```
//! `W` is the Frobenius-norm minimiser of `‖I − WA‖_F` with equal entries on the three
//! coordinates of a node (§IV-C, with the corrected expansion `w = Σ a_ii / Σ ‖A_i*‖²`).
//! Every node carries at most one contact (the collision stage keeps the deepest), so the
//! surrogate Delassus operator `J_c W J_cᵀ` is diagonal, `γ_m = w̄_i (+ w̄_j)` (Prop. 3).
//! `ProjectFC` is the paper's *strict* operator by default (normal clamp, then the disk), or the
//! *proximal* one (Euclidean cone projection, CCP). Stopping rule: `θ = ‖x⁺ − x‖₂ < tolerance`
//! (absolute, m/s: the paper's θ_th).
//!
//! Parallelism: the rows of the FEM block and the contacts are processed in fixed chunks on a
//! dedicated rayon pool (`threads > 1`); the serial path runs the very same chunks in order, and
//! every reduction sums per-chunk partials in chunk order, so both give bit-identical results.
//!
//! Deviations from the paper (each with its evidence in `docs/vfpi.md`): the Chebyshev under-relaxation `u`
//! (not in the printed Alg. 3), the `l_s` and `u` defaults; the normal offset `φ_n` is the crate's
//! speculative gap / Baumgarte term; the Frobenius `W` is recomputed every
//! step (the paper recycles it); the backward-Euler form of `A` (see [`crate::fem`]).

use super::nodal::{NodalConstraint, NodalSystem};
use super::method::{
    check_params, contact_method, tolerance_and_iterations, Capabilities, ImpulseSolver, MethodParams, NodalSolver, ParamError,
    SceneCoverage,
};
use super::problem::{ContactProblem, ContactRows};
use super::{FrictionModel, PgsParams, PgsSolver, SolveStats};
use crate::model::Model;
use crate::math::Mat3;

/// The contact operator (paper §IV-B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContactOperator {
    /// Clamp the normal, then project the tangential part on the disk `μ λ_n` (Prop. 4: the
    /// exact Signorini–Coulomb solution of the surrogate problem). The paper's default.
    #[default]
    Strict,
    /// Euclidean projection on the cone (Prop. 5: converges to the CCP solution).
    Proximal,
}

/// V-FPI parameters.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct VfpiParams {
    /// Iteration cap `l_max` (the paper does not give one; default 1000).
    pub max_iterations: u32,
    /// θ_th: stop when `‖x⁺ − x‖₂` (m/s, all unknowns) falls below this. The paper uses
    /// 1e-4 … 1e-6 at 10 ms; the rigid conformance scenes need 1e-8.
    pub tolerance: f64,
    /// Also require the true dynamics residual `‖W⁻¹ (x** − x)‖₂ = ‖A x − b − J_cᵀ λ‖₂`
    /// (N·s) to fall below this fraction of `‖b‖₂` (`docs/vfpi.md`: θ alone hides the
    /// slow modes of stiff bodies, whose iterates barely move). 0 disables it.
    pub residual_tolerance: f64,
    /// Virtual-node damper gain k_v (N·s/m). Accuracy ∝ 1/k_v (a resting point sinks at
    /// λ/k_v), iteration count grows with k_v (`docs/vfpi.md`).
    pub virtual_node_gain: f64,
    /// Chebyshev acceleration (paper Alg. 3).
    pub chebyshev: bool,
    /// First iteration with Chebyshev weights, l_s ≥ 3.
    pub chebyshev_start: u32,
    /// Under-relaxation u in (0, 1].
    pub under_relaxation: f64,
    /// Contact operator. With `strict`, iterations past `max_iterations / 2` use the proximal
    /// operator, which always converges (Thm. 2) but solves the CCP model.
    pub operator: ContactOperator,
    /// Worker threads of the dedicated pool; 1 runs the serial path. The serial path allocates
    /// nothing; with more threads rayon allocates internally (each solve enters the pool from
    /// outside through its injector queue, a list of 63-slot blocks: one block per 63 solves).
    pub threads: usize,
    /// Rigid-body correction between iterations (`docs/vfpi.md`, "Why the grasp needed more
    /// iterations than the paper"): each iteration first moves every rigid body, with the
    /// virtual nodes that its constraints do not hold, by its momentum step (the body's mass
    /// plus the stiffness of its held contacts). It removes the slow mode of a light body
    /// carrying many stiff virtual nodes and leaves the fixed point unchanged. On by default.
    pub rigid_correction: bool,
    /// Deformable translation correction between iterations (`docs/vfpi.md`, "The deformable
    /// body's own translation"): each iteration first moves the nodes of every deformable body
    /// that no constraint holds by one common velocity change, the Galerkin step of the body's
    /// momentum residual on that subspace. It removes the slow mode of a soft body translating
    /// against the nodes its contacts hold and leaves the fixed point unchanged. Off by default:
    /// it cuts the iterations of grasps and presses by a third, but slows a soft ball resting on
    /// the ground alone eightfold (measured, not understood; `docs/vfpi.md`).
    pub translation_correction: bool,
}

impl Default for VfpiParams {
    fn default() -> Self {
        VfpiParams {
            max_iterations: 1000,
            tolerance: 1e-8,
            residual_tolerance: 0.0,
            virtual_node_gain: 1e4,
            chebyshev: true,
            chebyshev_start: 10,
            under_relaxation: 0.9,
            operator: ContactOperator::Strict,
            threads: 1,
            rigid_correction: true,
            translation_correction: false,
        }
    }
}

/// Rows (FEM) and contacts per parallel chunk. Fixed, so that the serial and parallel paths
/// split (and sum) identically.
const CHUNK: usize = 768;
const TRACE: bool = false;
const CONTACT_CHUNK: usize = 64;

impl MethodParams for VfpiParams {
    type Runtime = VfpiSolver;
    const NAME: &'static str = "vfpi";
    const SUMMARY: &'static str = "velocity fixed-point iteration with contact nodalization (Lee, Lee & Lee); handles deformables";
    const CAPABILITIES: Capabilities =
        Capabilities { deformables: true, contact_rows: ContactRows::POINT, friction: FrictionModel::Coulomb, dense_mass: true, delassus: true, delassus_on_demand: false, coverage: SceneCoverage::AllRigid };

    fn validate(&self) -> Result<(), ParamError> {
        check_params(&[
            (self.max_iterations >= 1, "max_iterations", "must be ≥ 1"),
            (self.tolerance >= 0.0, "tolerance", "must be ≥ 0"),
            (self.residual_tolerance >= 0.0, "residual_tolerance", "must be ≥ 0"),
            (self.virtual_node_gain > 0.0 && self.virtual_node_gain.is_finite(), "virtual_node_gain", "must be > 0 and finite"),
            (self.chebyshev_start >= 3, "chebyshev_start", "must be ≥ 3"),
            (self.under_relaxation > 0.0 && self.under_relaxation <= 1.0, "under_relaxation", "must be in (0, 1]"),
            (self.threads >= 1 && self.threads <= 256, "threads", "must be in [1, 256]"),
        ])
    }
    // θ_th: the change of the iterate between two iterations
    tolerance_and_iterations!(tolerance, "m/s", max_iterations);
    fn build(&self, model: &Model) -> VfpiSolver {
        let (n, rows, constraints) = vfpi_sizes(model);
        VfpiSolver::new(self.clone(), n, rows, model.nv, constraints)
    }
}

/// V-FPI sizes of a model: `(unknowns, λ rows, constraints)`. Rigid contacts and joint rows are
/// virtual nodes; each deformable surface node can carry one contact, whose rigid side (if any)
/// is a 3-row virtual node.
pub fn vfpi_sizes(model: &Model) -> (usize, usize, usize) {
    let nodes: usize = model.deformables.iter().map(|d| d.num_nodes()).sum();
    let surface: usize = model.deformables.iter().map(|d| d.surface_nodes.len()).sum();
    let welded = crate::fem::welded_node_count(&model.deformables);
    let rigid_rows = model.max_constraint_rows(ContactRows::POINT.len());
    let virtual_rows = rigid_rows + 3 * surface + 3 * welded;
    let n = 3 * nodes + model.nv + virtual_rows;
    let rows = rigid_rows + 3 * surface + 3 * welded;
    let constraints = model.contact.max_contacts + model.max_joint_rows() + surface + welded;
    (n, rows, constraints)
}

contact_method!(VfpiSolver, VfpiParams, Impulse);

impl NodalSolver for VfpiSolver {
    fn virtual_node_gain(&self) -> f64 {
        self.params.virtual_node_gain
    }
    fn initial_guess(&mut self) -> &mut [f64] {
        &mut self.scratch.x
    }
    fn solve_nodal(&mut self, sys: &NodalSystem) -> SolveStats {
        VfpiSolver::solve_nodal(self, sys)
    }
    fn solution(&self) -> &[f64] {
        &self.scratch.x
    }
    fn impulses(&self) -> &[f64] {
        &self.scratch.lambda
    }
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool.as_ref()
    }
}

/// V-FPI scratch (sized once).
pub struct VfpiScratch {
    /// Current iterate; after a solve, the solution `[fem | rigid | virtual]`.
    pub x: Vec<f64>,
    x_prev: Vec<f64>,
    x0: Vec<f64>,
    xs: Vec<f64>,
    w: Vec<f64>,
    /// λ per constraint (3 or 1 entries each, in constraint order).
    pub lambda: Vec<f64>,
    lambda_offset: Vec<usize>,
    partial: Vec<f64>,
    a_tilde: Vec<f64>,
    /// Rigid correction: its `nv × nv` matrix (row-major, then its Cholesky factor), right-hand
    /// side and which virtual rows stay put.
    correction: Vec<f64>,
    correction_rhs: Vec<f64>,
    correction_pinned: Vec<bool>,
    /// Translation correction: per FEM node `r_k = Σ_{i free} A_ki` (3 × 3, row-major),
    /// whether a constraint holds the node, and per deformable body `C⁻¹` and `Σ_free b`.
    free_row_sums: Vec<f64>,
    node_held: Vec<bool>,
    translation_inverse: Vec<crate::math::Mat3>,
    translation_b: Vec<crate::math::Vec3>,
}

impl VfpiScratch {
    /// Scratch for up to `n` unknowns, `rows` constraint rows and `nv` rigid coordinates.
    pub fn new(n: usize, rows: usize, nv: usize) -> Self {
        VfpiScratch {
            x: vec![0.0; n],
            x_prev: vec![0.0; n],
            x0: vec![0.0; n],
            xs: vec![0.0; n],
            w: vec![0.0; n],
            lambda: vec![0.0; rows],
            lambda_offset: vec![0; rows + 1],
            partial: vec![0.0; 2 * (n / CHUNK + 2)],
            a_tilde: vec![0.0; nv * nv],
            correction: vec![0.0; nv * nv],
            correction_rhs: vec![0.0; nv],
            correction_pinned: vec![false; rows],
            free_row_sums: vec![0.0; 3 * n],
            node_held: vec![false; n / 3 + 1],
            // a body has at least 4 nodes (one tetrahedron): 12 unknowns
            translation_inverse: vec![crate::math::Mat3::zeros(); n / 12 + 1],
            translation_b: vec![crate::math::Vec3::zeros(); n / 12 + 1],
        }
    }
}

/// The V-FPI solver with its pool and scratch.
pub struct VfpiSolver {
    /// Parameters.
    pub params: VfpiParams,
    pool: Option<rayon::ThreadPool>,
    /// Scratch.
    pub scratch: VfpiScratch,
    constraints: Vec<NodalConstraint>,
    rigid_b: Vec<f64>,
    fallback: PgsSolver,
}

impl VfpiSolver {
    /// A solver for up to `n` unknowns (FEM + rigid + virtual), `rows` constraint rows and `nv`
    /// rigid coordinates; `contacts` bounds the number of constraints.
    pub fn new(params: VfpiParams, n: usize, rows: usize, nv: usize, constraints: usize) -> Self {
        let pool = if params.threads > 1 {
            rayon::ThreadPoolBuilder::new().num_threads(params.threads).thread_name(|i| format!("vfpi-{i}")).build().ok()
        } else {
            None
        };
        VfpiSolver {
            pool,
            scratch: VfpiScratch::new(n, rows, nv),
            constraints: Vec::with_capacity(constraints),
            rigid_b: vec![0.0; nv],
            fallback: PgsSolver::new(PgsParams::default(), constraints),
            params,
        }
    }

    /// Solves a nodalized system from the initial guess already in `scratch.x` (FEM and rigid
    /// parts; the virtual part is initialised to `J_v x_rigid`, the paper's warm start).
    pub fn solve_nodal(&mut self, sys: &NodalSystem) -> SolveStats {
        solve_nodal(&self.params, self.pool.as_ref(), &mut self.scratch, sys)
    }
}

#[inline]
fn run_chunks<F>(pool: Option<&rayon::ThreadPool>, data: &mut [f64], chunk: usize, f: F)
where
    F: Fn(usize, &mut [f64]) + Sync + Send,
{
    match pool {
        Some(p) => {
            use rayon::prelude::*;
            p.install(|| data.par_chunks_mut(chunk).enumerate().for_each(|(k, c)| f(k, c)));
        }
        None => data.chunks_mut(chunk).enumerate().for_each(|(k, c)| f(k, c)),
    }
}

/// The strict or proximal projection of `l` (contact coordinates) on the cone of `mu`.
#[inline]
fn project_cone(op: ContactOperator, mu: f64, l: &mut [f64; 3]) {
    match op {
        ContactOperator::Strict => {
            l[0] = l[0].max(0.0);
            let s = (l[1] * l[1] + l[2] * l[2]).sqrt();
            let lim = mu * l[0];
            if s > lim {
                let k = if s > 0.0 { lim / s } else { 0.0 };
                l[1] *= k;
                l[2] *= k;
            }
        }
        ContactOperator::Proximal => {
            let s = (l[1] * l[1] + l[2] * l[2]).sqrt();
            if s <= mu * l[0] {
                return;
            }
            if mu * s <= -l[0] {
                *l = [0.0; 3];
                return;
            }
            let n = (l[0] + mu * s) / (1.0 + mu * mu);
            let k = mu * n / s;
            *l = [n, l[1] * k, l[2] * k];
        }
    }
}

/// The V-FPI loop (free function so that callers can keep the system's slices borrowed from
/// the solver's neighbours).
pub fn solve_nodal(params: &VfpiParams, pool: Option<&rayon::ThreadPool>, s: &mut VfpiScratch, sys: &NodalSystem) -> SolveStats {
    match pool {
        // run the whole loop on a pool thread: the per-phase fork/joins then stay inside the
        // pool instead of waking it from outside twice per iteration
        Some(p) => p.install(|| solve_nodal_inner(params, Some(p), s, sys)),
        None => solve_nodal_inner(params, None, s, sys),
    }
}

fn solve_nodal_inner(params: &VfpiParams, pool: Option<&rayon::ThreadPool>, s: &mut VfpiScratch, sys: &NodalSystem) -> SolveStats {
    let nf = sys.n_fem();
    let n = sys.dim();
    let mut stats = SolveStats::default();

    layout_impulses(s, sys);
    diagonal_preconditioner(s, sys);
    warm_start_virtual_nodes(s, sys);
    s.x_prev[..n].copy_from_slice(&s.x[..n]);
    s.x0[..n].copy_from_slice(&s.x[..n]);
    let mut theta_first = f64::NAN;
    let mut halvings = 0;

    let b_norm = (sys.fem_b.iter().map(|x| x * x).sum::<f64>() + sys.rigid_b.iter().map(|x| x * x).sum::<f64>()).sqrt();
    let u = params.under_relaxation;
    let (mut nu, mut theta_prev) = (1.0f64, 0.0f64);
    let mut rho_max = 0.0f64;
    let (mut theta_best, mut since) = (f64::INFINITY, 0u32);
    let mut res_best = f64::INFINITY;
    let mut correct = params.rigid_correction && rigid_correction_applies(sys);
    let mut translate = params.translation_correction && translation_correction_setup(s, sys);
    // the corrections run in the strict half of the budget and are switched off for the rest of
    // the solve when the divergence guard restarts the iteration
    for l in 0..params.max_iterations {
        // from the second iteration on, λ holds the previous iteration's contact impulses
        if correct && l > 0 {
            rigid_correction(s, sys);
        }
        if translate && l > 0 {
            translation_correction(s, sys);
        }
        jacobi_step(pool, s, sys);
        // strict → proximal fallback for the second half of the budget (the strict operator's
        // convergence is only guaranteed for small steps and μ)
        let op = if l >= params.max_iterations / 2 { ContactOperator::Proximal } else { params.operator };
        solve_contacts(pool, s, sys, op);
        scatter_contact_impulses(s, sys);
        // (38) Chebyshev update and θ
        let (nu_l, uu) = if params.chebyshev { (nu, u) } else { (1.0, 1.0) };
        let (theta, residual) = chebyshev_update(pool, s, nf, n, nu_l, uu, params.residual_tolerance > 0.0);
        std::mem::swap(&mut s.x, &mut s.x_prev); // x ← x_new, x_prev ← old x
        stats.iterations = l + 1;
        stats.residual = theta;
        if TRACE && (l % 100 == 0 || l < 30) {
            eprintln!("vfpi l={l} theta={theta:.3e} res={residual:.3e} b={b_norm:.3e} nu={nu:.4}");
        }
        if theta_first.is_nan() {
            theta_first = theta;
        }
        // Divergence guard (docs/vfpi.md): the Frobenius W does not guarantee
        // ‖I − WA‖ < 1; when θ explodes, halve W and restart from the initial guess.
        if !theta.is_finite() || theta > 1e4 * theta_first.max(1e-12) {
            if halvings >= 20 {
                break;
            }
            halvings += 1;
            correct = false;
            translate = false;
            s.w[..n].iter_mut().for_each(|w| *w *= 0.5);
            s.x[..n].copy_from_slice(&s.x0[..n]);
            s.x_prev[..n].copy_from_slice(&s.x0[..n]);
            nu = 1.0;
            rho_max = 0.0;
            theta_best = f64::INFINITY;
            res_best = f64::INFINITY;
            theta_prev = 0.0;
            since = l + 1;
            theta_first = f64::NAN;
            continue;
        }
        if theta < params.tolerance && (params.residual_tolerance <= 0.0 || residual <= params.residual_tolerance * b_norm) {
            stats.converged = true;
            break;
        }
        if l + 1 >= params.max_iterations / 2 {
            // the proximal half of the budget runs the plain iteration
            correct = false;
            translate = false;
        }
        // ---- (39) spectral radius estimate and the next Chebyshev weight ----
        if params.chebyshev {
            let ls = params.chebyshev_start.max(3);
            // ρ (eq. 39) is the ratio θ_l / θ_{l−1}, but kept as the largest value seen so far
            // (capped at 0.9999) instead of the latest: with the live ratio ν chattered and the
            // iteration stalled on our FEM scenes; a monotone ρ gives a
            // monotone ν → 2 / (1 + √(1 − ρ²)).
            // Restart (ν = 1, ρ forgotten), \[N\]:
            // - when the true residual has doubled over its best since the last start (a change
            //   of the contact set can make the accelerated iteration diverge), and
            // - when θ has grown tenfold over its best, but only once the residual criterion is
            //   met (or off): while the residual is still large, θ grows as ν ramps up and a
            //   θ-triggered restart throws the acceleration away. On the soft-ball grasp this
            //   took the mean iterations from 413 to 219 and the steps at the cap from 11 to 0;
            //   on the resting ball from 206 to 41 (docs/benchmark-log.md, "V-FPI speed-ups").
            let ratio = if theta_prev > 0.0 { (theta / theta_prev).min(0.9999) } else { 0.0 };
            rho_max = rho_max.max(ratio);
            theta_best = theta_best.min(theta);
            res_best = res_best.min(residual);
            let k = l + 1 - since;
            let res_on = params.residual_tolerance > 0.0;
            let residual_met = !res_on || residual <= params.residual_tolerance * b_norm;
            let restart = (res_on && residual > 2.0 * res_best) || (theta > 10.0 * theta_best && residual_met);
            if k > ls && restart {
                since = l + 1;
                rho_max = 0.0;
                theta_best = theta;
                res_best = residual;
                nu = 1.0;
            } else {
                let rho = rho_max;
                nu = if k < ls {
                    1.0
                } else if k == ls {
                    2.0 / (2.0 - rho * rho)
                } else {
                    4.0 / (4.0 - rho * rho * nu)
                };
            }
        }
        theta_prev = theta;
    }
    if sys.constraints.is_empty() && n == 0 {
        stats.converged = true;
    }
    stats
}

/// The offset of each constraint's λ (1 or 3 entries) in `s.lambda`; zeroes λ.
fn layout_impulses(s: &mut VfpiScratch, sys: &NodalSystem) {
    let mut off = 0;
    for (c, k) in sys.constraints.iter().enumerate() {
        s.lambda_offset[c] = off;
        off += k.dim as usize;
    }
    s.lambda_offset[sys.constraints.len()] = off;
    s.lambda[..off].fill(0.0);
}

/// W, the diagonal approximate inverse (paper eq. 21) with the Frobenius-optimal diagonal
/// (`a_ii / Σ_j a_ij²` over the row): per FEM node (its three rows share one value), per rigid
/// coordinate of the augmented block `Ã = M̃ + k̃ Σ J_vᵀ J_v` (kept in `s.a_tilde`), and per
/// virtual node (`d / (k̃ (d + ‖J_v‖²))` over its `d` rows).
fn diagonal_preconditioner(s: &mut VfpiScratch, sys: &NodalSystem) {
    let nf = sys.n_fem();
    let nv = sys.nv;
    let nr0 = nf; // first rigid index
    let nv0 = nf + nv; // first virtual index
    let kt = sys.k_tilde;
    if let Some(a) = sys.fem {
        let (ro, vals) = (a.row_offsets(), a.values());
        for node in 0..nf / 3 {
            if sys.fem_fixed[node] {
                s.w[3 * node..3 * node + 3].fill(0.0);
                continue;
            }
            // the node's three rows are contiguous; its own block is the one whose first
            // column is 3 node (sums in row order, as row by row)
            let r2 = vals[ro[3 * node]..ro[3 * node + 3]].iter().fold(0.0, |acc, v| acc + v * v);
            let first = ro[3 * node] / 9;
            let blocks = &sys.fem_block_cols[first..first + (ro[3 * node + 1] - ro[3 * node]) / 3];
            let d = match blocks.iter().position(|&c| c as usize == 3 * node) {
                Some(b) => (0..3).fold(0.0, |acc, r| acc + vals[ro[3 * node + r] + 3 * b + r]),
                None => 0.0,
            };
            let w = if r2 > 0.0 { d / r2 } else { 0.0 };
            s.w[3 * node..3 * node + 3].fill(w);
        }
    }
    if nv > 0 {
        // Ã = M̃ + k̃ Σ J_rᵀ J_r (rigid block of the augmented matrix)
        s.a_tilde[..nv * nv].copy_from_slice(&sys.mass[..nv * nv]);
        for r in 0..sys.num_virtual {
            let row = &sys.jv[r * nv..(r + 1) * nv];
            for (cidx, &jc) in row.iter().enumerate() {
                if jc != 0.0 {
                    for (ridx, &jr) in row.iter().enumerate() {
                        s.a_tilde[cidx * nv + ridx] += kt * jr * jc;
                    }
                }
            }
        }
        for i in 0..nv {
            let mut r2 = 0.0;
            for j in 0..nv {
                let a = s.a_tilde[j * nv + i];
                r2 += a * a;
            }
            for r in 0..sys.num_virtual {
                let jr = sys.jv[r * nv + i];
                r2 += kt * kt * jr * jr;
            }
            let d = s.a_tilde[i * nv + i];
            s.w[nr0 + i] = if r2 > 0.0 { d / r2 } else { 0.0 };
        }
    }
    // virtual nodes: equal entries per constraint (its 1 or 3 rows)
    for k in sys.constraints.iter() {
        for (slot, is_virtual) in [(k.i, !k.i_is_fem), (k.j.unwrap_or(usize::MAX), k.j.is_some() && !k.j_is_fem)] {
            if !is_virtual {
                continue;
            }
            let d = k.dim as usize;
            let mut jn = 0.0;
            for r in 0..d {
                let row = slot - nv0 + r;
                jn += sys.jv[row * nv..(row + 1) * nv].iter().map(|x| x * x).sum::<f64>();
            }
            let w = d as f64 / (kt * (d as f64 + jn));
            s.w[slot..slot + d].fill(w);
        }
    }
}

/// Whether the rigid correction applies to this step: there are rigid coordinates and virtual
/// nodes.
fn rigid_correction_applies(sys: &NodalSystem) -> bool {
    sys.nv > 0 && sys.num_virtual > 0
}

/// The rigid correction \[N\] (`docs/vfpi.md`, "Why the grasp needed more iterations than
/// the paper"): a two-level step on the subspace where each rigid body moves together with its
/// free virtual nodes (`x_r += δ`, `x_v += J_v δ`) while its *pinned* ones stay.
///
/// - A virtual node's component is pinned when its own constraint holds it: all three
///   components of a contact with static geometry or another rigid body whose normal pushes
///   (`λ_n > 0`, sticking or sliding), or a joint row strictly inside its bounds. Moving the
///   body stretches its damper: stiffness `k̃`, force `k̃ J_v (x_v − J_v x_r)`.
/// - A virtual node against a deformable node moves with the body; its active components (the
///   normal with `λ_n > 0`, the tangents when sticking inside the cone) add the surrogate
///   stiffness `1/γ` of the contact (the deformable side stays); its force is `−λ` (side j).
/// - Other components (a separating contact, a clamped joint row) move with the body and pass
///   their impulse `λ`.
///
/// The correction runs in the strict half of the iteration budget only; the proximal half and a
/// restart after divergence run the plain iteration.
///
/// The body's residual on that subspace, `g = b_r − M̃ x_r + Σ (forces above)`, is solved with
/// `C δ = g`, `C = M̃ + Σ stiffnesses J_vᵀ J_v`, with the previous iteration's impulses. At a
/// fixed point `g = 0`, so the solution is unchanged. Allocation-free: `C` is factored in place
/// in the scratch.
fn rigid_correction(s: &mut VfpiScratch, sys: &NodalSystem) {
    let nv = sys.nv;
    let nf = sys.n_fem();
    let nr0 = nf; // first rigid index
    let nv0 = nf + nv; // first virtual index
    let kt = sys.k_tilde;
    let c = &mut s.correction[..nv * nv];
    c.copy_from_slice(&sys.mass[..nv * nv]); // symmetric: column- and row-major agree
    let g = &mut s.correction_rhs[..nv];
    for (i, gi) in g.iter_mut().enumerate() {
        let mut r = sys.rigid_b[i];
        for j in 0..nv {
            r -= sys.mass[j * nv + i] * s.x[nr0 + j];
        }
        *gi = r;
    }
    let pinned = &mut s.correction_pinned[..sys.num_virtual];
    pinned.fill(false);
    let add_outer = |c: &mut [f64], row: &[f64], k: f64| {
        for a in 0..nv {
            if row[a] == 0.0 {
                continue;
            }
            for b in 0..nv {
                c[a * nv + b] += row[a] * row[b] * k;
            }
        }
    };
    for (ci, k) in sys.constraints.iter().enumerate() {
        let vi = !k.i_is_fem;
        let vj = k.j.is_some() && !k.j_is_fem;
        if !vi && !vj {
            continue;
        }
        let o = s.lambda_offset[ci];
        let d = k.dim as usize;
        let lam = &s.lambda[o..o + d];
        let active = if d == 1 {
            [lam[0] > k.lo && lam[0] < k.hi, false, false]
        } else if k.bilateral {
            [true; 3]
        } else {
            let normal = lam[0] > 0.0;
            let sticking = normal && lam[1].hypot(lam[2]) < k.mu * lam[0] * (1.0 - 1e-9);
            [normal, sticking, sticking]
        };
        if k.i_is_fem {
            // a deformable node against a virtual node (side j): it moves with the body
            let (j, gamma) = (k.j.unwrap_or(0), s.w[k.i] + k.j.map(|j| s.w[j]).unwrap_or(0.0));
            for t in 0..d {
                let r = j - nv0 + t;
                let jr = &sys.jv[r * nv..(r + 1) * nv];
                for (gi, a) in g.iter_mut().zip(jr) {
                    *gi -= a * lam[t];
                }
                if active[t] && gamma > 0.0 {
                    add_outer(c, jr, 1.0 / gamma);
                }
            }
            continue;
        }
        for (side, sign) in [(Some(k.i), 1.0), (k.j.filter(|_| vj), -1.0)] {
            let Some(slot) = side else { continue };
            for t in 0..d {
                let r = slot - nv0 + t;
                let jr = &sys.jv[r * nv..(r + 1) * nv];
                // a contact whose normal pushes holds all three components (sticking or sliding:
                // releasing the tangents of a sliding contact lets the body overshoot where it
                // stops, and the contact then flips between stick and slip every iteration)
                let holds = if d == 3 && !k.bilateral { active[0] } else { active[t] };
                if holds {
                    pinned[r] = true;
                    let stretch = s.x[nv0 + r] - jr.iter().zip(&s.x[nr0..nr0 + nv]).map(|(a, b)| a * b).sum::<f64>();
                    for (gi, a) in g.iter_mut().zip(jr) {
                        *gi += kt * a * stretch;
                    }
                    add_outer(c, jr, kt);
                } else {
                    for (gi, a) in g.iter_mut().zip(jr) {
                        *gi += sign * a * lam[t];
                    }
                }
            }
        }
    }
    if !crate::math::dense::cholesky_in_place(c, nv) {
        return;
    }
    crate::math::dense::cholesky_solve(c, nv, g);
    for (i, gi) in g.iter().enumerate() {
        s.x[nr0 + i] += gi;
    }
    for r in 0..sys.num_virtual {
        if !pinned[r] {
            let jd: f64 = sys.jv[r * nv..(r + 1) * nv].iter().zip(g.iter()).map(|(a, b)| a * b).sum();
            s.x[nv0 + r] += jd;
        }
    }
}

/// Sets up the translation correction of this solve ([`translation_correction`]); false when no
/// deformable body has a free node (nothing to correct).
///
/// A node is held when it is prescribed or takes part in a 3-D constraint (any deformable
/// contact, active or not, and any weld): its velocity is the contact solve's, so the correction
/// leaves it. Per node `k` (every node of every body) `r_k = Σ_{i free} A_ki` as a 3 × 3 block:
/// its row sums `s_k = Σ_i A_ki` minus `Σ_{j held} A_kj = Σ_{j held} A_jkᵀ` (`A` symmetric),
/// read from the held nodes' rows only. Per body `C = Σ_{k free} r_k` and `Σ_{k free} b_k`.
fn translation_correction_setup(s: &mut VfpiScratch, sys: &NodalSystem) -> bool {
    let Some(a) = sys.fem else { return false };
    // (the scratch holds a body per 4 nodes, a tetrahedron's)
    if sys.fem_bodies.is_empty() || sys.fem_bodies.len() > s.translation_inverse.len() {
        return false;
    }
    let (ro, vals, cols) = (a.row_offsets(), a.values(), a.col_indices());
    let nodes = sys.n_fem() / 3;
    let held = &mut s.node_held[..nodes];
    held.copy_from_slice(&sys.fem_fixed[..nodes]);
    for k in sys.constraints.iter().filter(|k| k.dim == 3 && k.i_is_fem) {
        held[k.i / 3] = true;
        if let (Some(j), true) = (k.j, k.j_is_fem) {
            held[j / 3] = true;
        }
    }
    // s_k: the node-block pattern stores each row's entries as whole 3-column blocks
    for (node, out) in s.free_row_sums[..9 * nodes].chunks_exact_mut(9).enumerate() {
        for (r, row_out) in out.chunks_exact_mut(3).enumerate() {
            let row = 3 * node + r;
            let (mut c0, mut c1, mut c2) = (0.0, 0.0, 0.0);
            for b in vals[ro[row]..ro[row + 1]].chunks_exact(3) {
                c0 += b[0];
                c1 += b[1];
                c2 += b[2];
            }
            row_out.copy_from_slice(&[c0, c1, c2]);
        }
    }
    // minus the held columns: r_k[a][q] −= A(3j + q, 3k + a) over held j
    for j in 0..nodes {
        if !s.node_held[j] {
            continue;
        }
        for q in 0..3 {
            let row = 3 * j + q;
            for idx in (ro[row]..ro[row + 1]).step_by(3) {
                let k = cols[idx] / 3;
                for a in 0..3 {
                    s.free_row_sums[9 * k + 3 * a + q] -= vals[idx + a];
                }
            }
        }
    }
    let mut any = false;
    for (body, &(n0, n1)) in sys.fem_bodies.iter().enumerate() {
        let mut c = crate::math::Mat3::zeros();
        let mut b = crate::math::Vec3::zeros();
        let mut free = false;
        for node in (n0..n1).filter(|&node| !s.node_held[node]) {
            free = true;
            c += crate::math::Mat3::from_row_slice(&s.free_row_sums[9 * node..9 * node + 9]);
            b += crate::math::Vec3::new(sys.fem_b[3 * node], sys.fem_b[3 * node + 1], sys.fem_b[3 * node + 2]);
        }
        // C is symmetric up to round-off; a body whose C is not positive definite is left alone
        let c = (c + c.transpose()) * 0.5;
        let inverse = if free { c.cholesky().map(|f| f.inverse()) } else { None };
        any |= inverse.is_some();
        s.translation_inverse[body] = inverse.unwrap_or_else(crate::math::Mat3::zeros);
        s.translation_b[body] = b;
    }
    any
}

/// The deformable translation correction \[N\] (`docs/vfpi.md`, "The deformable body's own
/// translation"): per deformable body, its free nodes (those no constraint holds, see
/// [`translation_correction_setup`]) move by one common `δ`, the Galerkin step of the body's
/// momentum residual on that subspace, `C δ = g`:
///
/// `C = Σ_{i, k free} A_ik` (kg), `g = Σ_{i free} (b − A x)_i = Σ_free b − Σ_k r_kᵀ x_k` (N·s);
/// free nodes carry no impulse. The held nodes stay, so the elements between them and the free
/// nodes stiffen `C`: the step is the body settling against what holds it. `g = 0` at a fixed
/// point, so the solution is unchanged. One pass over the nodes per iteration, no allocation.
fn translation_correction(s: &mut VfpiScratch, sys: &NodalSystem) {
    for (body, &(n0, n1)) in sys.fem_bodies.iter().enumerate() {
        let inverse = s.translation_inverse[body];
        if inverse == crate::math::Mat3::zeros() {
            continue;
        }
        let (mut g0, mut g1, mut g2) = (0.0, 0.0, 0.0);
        for (r, x) in s.free_row_sums[9 * n0..9 * n1].chunks_exact(9).zip(s.x[3 * n0..3 * n1].chunks_exact(3)) {
            g0 += r[0] * x[0] + r[3] * x[1] + r[6] * x[2];
            g1 += r[1] * x[0] + r[4] * x[1] + r[7] * x[2];
            g2 += r[2] * x[0] + r[5] * x[1] + r[8] * x[2];
        }
        let g = s.translation_b[body] - crate::math::Vec3::new(g0, g1, g2);
        let d = inverse * g;
        for (x, _) in s.x[3 * n0..3 * n1].chunks_exact_mut(3).zip(&s.node_held[n0..n1]).filter(|(_, &held)| !held) {
            x[0] += d.x;
            x[1] += d.y;
            x[2] += d.z;
        }
    }
}

/// Warm start of the virtual nodes: `x_v = J_v x_rigid` (the rigid part of `s.x` holds the
/// initial guess).
fn warm_start_virtual_nodes(s: &mut VfpiScratch, sys: &NodalSystem) {
    let nf = sys.n_fem();
    let nv = sys.nv;
    let nr0 = nf; // first rigid index
    let nv0 = nf + nv; // first virtual index
    for r in 0..sys.num_virtual {
        let row = &sys.jv[r * nv..(r + 1) * nv];
        s.x[nv0 + r] = row.iter().zip(&s.x[nr0..nr0 + nv]).map(|(a, b)| a * b).sum();
    }
}

/// Eq. (20): the Jacobi step without contact, `x* = x − W (A x − b)`, into `s.xs` (FEM rows in
/// parallel chunks; rigid rows `Ã x_r − k̃ J_vᵀ x_v − b_r`; virtual rows `k̃ (x_v − J_v x_r)`).
fn jacobi_step(pool: Option<&rayon::ThreadPool>, s: &mut VfpiScratch, sys: &NodalSystem) {
    let nf = sys.n_fem();
    let nv = sys.nv;
    let nr0 = nf; // first rigid index
    let nv0 = nf + nv; // first virtual index
    let n = sys.dim();
    let kt = sys.k_tilde;
    {
        let (x, w) = (&s.x[..n], &s.w[..n]);
        if let Some(a) = sys.fem {
            let b = sys.fem_b;
            run_chunks(pool, &mut s.xs[..nf], CHUNK, |k, out| {
                let r0 = k * CHUNK;
                crate::fem::block3_mul_rows(a, sys.fem_block_cols, x, out, r0..r0 + out.len());
                for (t, o) in out.iter_mut().enumerate() {
                    let i = r0 + t;
                    *o = x[i] - w[i] * (*o - b[i]);
                }
            });
        }
        // rigid rows: Ã x_r − k̃ J_vᵀ x_v − b_r
        for i in 0..nv {
            let mut r = -sys.rigid_b[i];
            for j in 0..nv {
                r += s.a_tilde[j * nv + i] * x[nr0 + j];
            }
            for v in 0..sys.num_virtual {
                r -= kt * sys.jv[v * nv + i] * x[nv0 + v];
            }
            s.xs[nr0 + i] = x[nr0 + i] - w[nr0 + i] * r;
        }
        // virtual rows: k̃ (x_v − J_v x_r)
        for v in 0..sys.num_virtual {
            let jx: f64 = sys.jv[v * nv..(v + 1) * nv].iter().zip(&x[nr0..nr0 + nv]).map(|(a, b)| a * b).sum();
            s.xs[nv0 + v] = x[nv0 + v] - w[nv0 + v] * kt * (x[nv0 + v] - jx);
        }
    }
}

/// Eqs. (23, 26): the one-shot contact solve of every constraint on the diagonal system,
/// `λ = proj(−(η + φ) / γ)` with `η` the constraint velocity of `x*` and `γ = w_i + w_j`, in
/// parallel over constraint chunks; into `s.lambda`.
fn solve_contacts(pool: Option<&rayon::ThreadPool>, s: &mut VfpiScratch, sys: &NodalSystem, op: ContactOperator) {
    let n = sys.dim();
    {
        let (xs, w, lo) = (&s.xs[..n], &s.w[..n], &s.lambda_offset);
        let cons = sys.constraints;
        let nlam = lo[cons.len()];
        // λ for chunk k of constraints lives in lambda[lo[k*C] .. lo[min((k+1)*C, nc)]]: the
        // chunks of the λ array are not uniform, so run over constraints chunks manually.
        let solve_one = |c: usize, out: &mut [f64]| {
            let k = &cons[c];
            let xi = &xs[k.i..k.i + k.dim as usize];
            if k.dim == 1 {
                let eta = xi[0] - k.j.map(|j| xs[j]).unwrap_or(0.0);
                let gamma = w[k.i] + k.j.map(|j| w[j]).unwrap_or(0.0);
                out[0] = if gamma > 0.0 { (-(eta + k.bias[0]) / gamma).clamp(k.lo, k.hi) } else { 0.0 };
                return;
            }
            let vi = nalgebra::Vector3::new(xi[0], xi[1], xi[2]);
            let mut vij = vi;
            if let (Some(j), true) = (k.j, k.j_is_fem) {
                vij -= nalgebra::Vector3::new(xs[j], xs[j + 1], xs[j + 2]); // node–node: world axes
            }
            let mut eta = if k.i_is_fem { k.frame * vij } else { vij };
            if let (Some(j), false) = (k.j, k.j_is_fem) {
                eta -= nalgebra::Vector3::new(xs[j], xs[j + 1], xs[j + 2]);
            }
            let gamma = w[k.i] + k.j.map(|j| w[j]).unwrap_or(0.0);
            if gamma <= 0.0 {
                out[..3].fill(0.0);
                return;
            }
            let mut lam = [-(eta[0] + k.bias[0]) / gamma, -(eta[1] + k.bias[1]) / gamma, -(eta[2] + k.bias[2]) / gamma];
            if !k.bilateral {
                project_cone(op, k.mu, &mut lam);
            }
            out[..3].copy_from_slice(&lam);
        };
        let ncons = cons.len();
        match pool {
            Some(p) if ncons > CONTACT_CHUNK => {
                use rayon::prelude::*;
                // split λ at constraint-chunk boundaries (disjoint mutable pieces)
                let base = s.lambda[..nlam].as_mut_ptr() as usize;
                p.install(|| {
                    let nchunk = ncons.div_ceil(CONTACT_CHUNK);
                    (0..nchunk).into_par_iter().for_each(|ck| {
                        let c0 = ck * CONTACT_CHUNK;
                        let c1 = (c0 + CONTACT_CHUNK).min(ncons);
                        let (a, b) = (lo[c0], lo[c1]);
                        // SAFETY: constraint chunks own the disjoint ranges λ[a..b] of one
                        // live &mut borrow of `s.lambda`, which outlives the pool call.
                        let piece = unsafe { std::slice::from_raw_parts_mut((base as *mut f64).add(a), b - a) };
                        for c in c0..c1 {
                            let o = lo[c] - a;
                            solve_one(c, &mut piece[o..o + cons[c].dim as usize]);
                        }
                    });
                });
            }
            _ => {
                for c in 0..ncons {
                    let o = lo[c];
                    let d = cons[c].dim as usize;
                    let mut tmp = [0.0; 3];
                    solve_one(c, &mut tmp[..d]);
                    s.lambda[o..o + d].copy_from_slice(&tmp[..d]);
                }
            }
        }
    }
}

/// Eq. (24): `x** = x* + W J_cᵀ λ` into `s.xs` (one contact per node: the updates are disjoint).
fn scatter_contact_impulses(s: &mut VfpiScratch, sys: &NodalSystem) {
    for (c, k) in sys.constraints.iter().enumerate() {
        let o = s.lambda_offset[c];
        let d = k.dim as usize;
        if d == 1 {
            let lam = s.lambda[o];
            s.xs[k.i] += s.w[k.i] * lam;
            if let Some(j) = k.j {
                s.xs[j] -= s.w[j] * lam;
            }
            continue;
        }
        let lam = nalgebra::Vector3::new(s.lambda[o], s.lambda[o + 1], s.lambda[o + 2]);
        let fi = if k.i_is_fem { k.frame.transpose() * lam } else { lam };
        let wi = s.w[k.i];
        for t in 0..3 {
            s.xs[k.i + t] += wi * fi[t];
        }
        if let Some(j) = k.j {
            let wj = s.w[j];
            let fj = if k.j_is_fem { fi } else { lam };
            for t in 0..3 {
                s.xs[j + t] -= wj * fj[t];
            }
        }
    }
}

/// Eq. (38): the Chebyshev-weighted update `x_new = ν (u (x** − x) + x − x_prev) + x_prev` into
/// `s.x_prev` (the caller swaps it with `s.x`); returns `θ = ‖x_new − x‖₂` and, when
/// `residual_on`, the true residual `‖W⁻¹ (x** − x)‖₂` (N·s).
#[allow(clippy::too_many_arguments)]
fn chebyshev_update(pool: Option<&rayon::ThreadPool>, s: &mut VfpiScratch, nf: usize, n: usize, nu_l: f64, uu: f64, residual_on: bool) -> (f64, f64) {
    let nchunks = nf.div_ceil(CHUNK);
    {
        let (x, xs) = (&s.x[..n], &s.xs[..n]);
        let w = &s.w[..n];
        let res_on = residual_on;
        let upd = |i: usize, xp: &mut f64, res: &mut f64| -> f64 {
            let xn = nu_l * (uu * (xs[i] - x[i]) + x[i] - *xp) + *xp;
            let d = xn - x[i];
            if res_on && w[i] > 0.0 {
                let r = (xs[i] - x[i]) / w[i];
                *res += r * r;
            }
            *xp = xn;
            d * d
        };
        let partial = &mut s.partial;
        // FEM rows in chunks (partials per chunk), then the small rigid + virtual tail
        let xp = &mut s.x_prev[..n];
        let (xp_fem, xp_tail) = xp.split_at_mut(nf);
        {
            let pslice = &mut partial[..2 * nchunks];
            let pptr = pslice.as_mut_ptr() as usize;
            run_chunks(pool, xp_fem, CHUNK, |k, c| {
                let r0 = k * CHUNK;
                let (mut acc, mut res) = (0.0, 0.0);
                for (t, v) in c.iter_mut().enumerate() {
                    acc += upd(r0 + t, v, &mut res);
                }
                // SAFETY: as below, chunk k alone writes partial[nchunks + k]
                unsafe { *(pptr as *mut f64).add(nchunks + k) = res };
                // SAFETY: chunk k alone writes partial[k] (k < nchunks, the slice is borrowed
                // mutably for the whole call)
                unsafe { *(pptr as *mut f64).add(k) = acc };
            });
        }
        let (mut tail, mut tail_res) = (0.0, 0.0);
        for (t, v) in xp_tail.iter_mut().enumerate() {
            tail += upd(nf + t, v, &mut tail_res);
        }
        partial[2 * nchunks] = tail;
        partial[2 * nchunks + 1] = tail_res;
    }
    let theta = (s.partial[..nchunks].iter().sum::<f64>() + s.partial[2 * nchunks]).sqrt();
    let residual = (s.partial[nchunks..2 * nchunks].iter().sum::<f64>() + s.partial[2 * nchunks + 1]).sqrt();
    (theta, residual)
}

impl ImpulseSolver for VfpiSolver {
    /// Rigid scenes: every contact and joint row becomes a virtual node on the problem's primal
    /// view (`M̃`, `J`, `v*`); the impulses are the virtual nodes' λ. Without a primal view
    /// (hand-built problems) the solve falls back to PGS.
    ///
    /// Virtual-node drift compensation \[N\]: at convergence a virtual node's body point moves at
    /// `ν − λ/k̃` (paper Prop. 2; `docs/vfpi.md`), so a resting contact sinks and a sticking one creeps at
    /// `λ/k̃`. The warm-start impulse (the previous step's λ, which equals this step's at rest)
    /// is added to the offset, `φ −= λ_warm / k̃`, which cancels the drift at steady state and
    /// leaves the converged λ unchanged elsewhere up to `(λ − λ_warm)/k̃`.
    fn solve(&mut self, p: &ContactProblem, impulse: &mut [f64]) -> SolveStats {
        let Some(pr) = p.primal else {
            return self.fallback.solve(p, impulse);
        };
        let nv = pr.nv;
        let m = p.dim();
        let h = pr.timestep_s;
        let kt = self.params.virtual_node_gain * h;
        self.constraints.clear();
        // bias b = u_free − J v*
        for c in 0..p.num_contacts {
            let i = p.contact_row(c);
            let row = &pr.jacobian[i * nv..(i + 1) * nv];
            let jv: f64 = row.iter().zip(pr.free_velocity).map(|(a, b)| a * b).sum();
            self.constraints.push(NodalConstraint {
                i: nv + i,
                i_is_fem: false,
                j: None,
                j_is_fem: false,
                dim: 3,
                frame: Mat3::identity(),
                bias: [p.free_velocity[i] - jv - impulse[i] / kt, -impulse[i + 1] / kt, -impulse[i + 2] / kt],
                mu: p.friction[c],
                lo: 0.0,
                hi: 0.0,
                bilateral: false,
            });
        }
        for r in 0..p.num_joint_rows {
            let i = p.first_joint_row() + r;
            let row = &pr.jacobian[i * nv..(i + 1) * nv];
            let jv: f64 = row.iter().zip(pr.free_velocity).map(|(a, b)| a * b).sum();
            self.constraints.push(NodalConstraint {
                i: nv + i,
                i_is_fem: false,
                j: None,
                j_is_fem: false,
                dim: 1,
                frame: Mat3::identity(),
                bias: [p.free_velocity[i] - jv - impulse[i] / kt, 0.0, 0.0],
                mu: 0.0,
                lo: p.row_lower[r],
                hi: p.row_upper[r],
                bilateral: false,
            });
        }
        // b = M̃ v*; initial guess: the previous step's velocity (paper: previous v̂)
        for i in 0..nv {
            let mut s = 0.0;
            for j in 0..nv {
                s += pr.mass[j * nv + i] * pr.free_velocity[j];
            }
            self.rigid_b[i] = s;
        }
        self.scratch.x[..nv].copy_from_slice(&pr.initial_velocity[..nv]);
        let sys = NodalSystem {
            fem: None,
            fem_block_cols: &[],
            fem_b: &[],
            fem_fixed: &[],
            nv,
            mass: pr.mass,
            rigid_b: &self.rigid_b,
            jv: &pr.jacobian[..m * nv],
            num_virtual: m,
            constraints: &self.constraints,
            k_tilde: kt,
            fem_bodies: &[],
        };
        let stats = solve_nodal(&self.params, self.pool.as_ref(), &mut self.scratch, &sys);
        // λ in row order equals the constraint order (3 per contact, then 1 per joint row)
        impulse[..m].copy_from_slice(&self.scratch.lambda[..m]);
        stats
    }

    fn nodal(&mut self) -> Option<&mut dyn NodalSolver> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra_sparse::CsrMatrix;

    #[test]
    fn proximal_projection_is_the_euclidean_one() {
        let mut l = [-1.0, 3.0, 0.0];
        project_cone(ContactOperator::Proximal, 0.5, &mut l);
        // closest point of the cone: on the boundary ray (1, 0.5)/√1.25
        let d = [1.0 / 1.25f64.sqrt(), 0.5 / 1.25f64.sqrt()];
        let t = -1.0 * d[0] + 3.0 * d[1];
        assert!((l[0] - t * d[0]).abs() < 1e-12 && (l[1] - t * d[1]).abs() < 1e-12);
        let mut l = [-1.0, 0.1, 0.0];
        project_cone(ContactOperator::Proximal, 0.5, &mut l);
        assert_eq!(l, [0.0; 3]);
        let mut l = [2.0, 3.0, 4.0];
        project_cone(ContactOperator::Strict, 0.5, &mut l);
        assert!((l[1].hypot(l[2]) - 1.0).abs() < 1e-12);
    }

    /// A random symmetric positive definite `3 N × 3 N` matrix with dense node blocks (the
    /// node-block pattern of the FEM system), as CSR.
    fn spd_blocks(nodes: usize, next: &mut impl FnMut() -> f64) -> CsrMatrix<f64> {
        let n = 3 * nodes;
        let b = nalgebra::DMatrix::from_fn(n, n, |_, _| next());
        let a = b.transpose() * &b + nalgebra::DMatrix::identity(n, n) * (n as f64);
        let (mut offsets, mut cols, mut vals) = (vec![0], vec![], vec![]);
        for r in 0..n {
            for c in 0..n {
                cols.push(c);
                vals.push(a[(r, c)]);
            }
            offsets.push(cols.len());
        }
        CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).unwrap()
    }

    /// The translation correction is the Galerkin step on "the free nodes move together": after
    /// it, each body's momentum residual summed over its free nodes vanishes, the held nodes
    /// (a contact's, a prescribed one) have not moved, and a second correction moves nothing.
    #[test]
    fn translation_correction_zeroes_each_bodys_momentum_residual_over_its_free_nodes() {
        let mut next = crate::math::xorshift(0x5eed_7c0c);
        // two bodies of 5 and 4 nodes; A block diagonal per body
        let (a1, a2) = (spd_blocks(5, &mut next), spd_blocks(4, &mut next));
        let n = 27;
        let (mut offsets, mut cols, mut vals) = (vec![0], vec![], vec![]);
        for (a, shift) in [(&a1, 0), (&a2, 15)] {
            for r in 0..a.nrows() {
                let row = a.row(r);
                cols.extend(row.col_indices().iter().map(|c| c + shift));
                vals.extend_from_slice(row.values());
                offsets.push(cols.len());
            }
        }
        let a = CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).unwrap();
        let b: Vec<f64> = (0..n).map(|_| next()).collect();
        let mut fixed = vec![false; 9];
        fixed[7] = true; // a prescribed node of the second body
        // a ground contact on node 1 of the first body (held whatever its impulse)
        let contact = NodalConstraint { i: 3, i_is_fem: true, j: None, j_is_fem: false, dim: 3, frame: Mat3::identity(), bias: [0.0; 3], mu: 0.5, lo: 0.0, hi: 0.0, bilateral: false };
        let constraints = [contact];
        let block_cols = crate::math::sparse::node_block_columns(&a);
        let sys = NodalSystem { fem: Some(&a), fem_block_cols: &block_cols, fem_b: &b, fem_fixed: &fixed, nv: 0, mass: &[], rigid_b: &[], jv: &[], num_virtual: 0, constraints: &constraints, k_tilde: 1.0, fem_bodies: &[(0, 5), (5, 9)] };
        let mut s = VfpiScratch::new(n, 3, 0);
        assert!(translation_correction_setup(&mut s, &sys));
        for x in s.x[..n].iter_mut() {
            *x = next();
        }
        let before = s.x.clone();
        translation_correction(&mut s, &sys);
        let momentum = |x: &[f64], body: (usize, usize), held: &[usize]| {
            let ax = &a * &nalgebra::DVector::from_column_slice(&x[..n]);
            let mut g = [0.0; 3];
            for node in (body.0..body.1).filter(|k| !held.contains(k)) {
                for r in 0..3 {
                    g[r] += b[3 * node + r] - ax[3 * node + r];
                }
            }
            g
        };
        for (body, held) in [((0, 5), vec![1]), ((5, 9), vec![7])] {
            let g0 = momentum(&before, body, &held);
            let g1 = momentum(&s.x, body, &held);
            assert!(g0.iter().any(|g| g.abs() > 1e-2), "the test starts off the subspace's solution: {g0:?}");
            assert!(g1.iter().all(|g| g.abs() < 1e-12), "body {body:?}: residual over the free nodes {g1:?} (before {g0:?})");
            // the free nodes moved by one common δ, the held ones not at all
            let first_free = (body.0..body.1).find(|k| !held.contains(k)).unwrap();
            let d: Vec<f64> = (0..3).map(|r| s.x[3 * first_free + r] - before[3 * first_free + r]).collect();
            for node in body.0..body.1 {
                for r in 0..3 {
                    let moved = s.x[3 * node + r] - before[3 * node + r];
                    let expected = if held.contains(&node) { 0.0 } else { d[r] };
                    assert!((moved - expected).abs() < 1e-13, "node {node}: moved {moved}, expected {expected}");
                }
            }
        }
        let once = s.x.clone();
        translation_correction(&mut s, &sys);
        let again = s.x.iter().zip(&once).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(again < 1e-13, "a second correction moved the nodes by {again}");
    }
}
