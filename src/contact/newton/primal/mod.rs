//! FEM bodies in the non-smooth Newton step, primal form (`fem_formulation: primal`, the default
//! preset): the elastic forces are *not* rows; they are eliminated into a sparse node matrix, and
//! only the contact, weld and rigid rows remain in the complementarity problem.
//!
//! This departs from the paper's §9, which writes elasticity as compliant constraint rows next
//! to the contacts (our `dual_rows` form, [`super::fem`]). With 7 co-rotational rows per
//! tetrahedron that dual system has many more rows than node DOFs and is rank-deficient, and its
//! matrix-free Krylov solves were found to stall (docs/newton.md, "Why FEM steps stall above the
//! tolerance"). The primal form solves the same backward-Euler step with the same rows and laws.
//!
//! # One outer (elastic) iteration at the iterate `u_k`
//!
//! With node positions `x_k = x⁻ + h u_k` (backward Euler, paper eq. 45):
//!
//! 1. `A_k = (1 + hα) M + (h² + hβ) K(x_k)` and `b_k = M u⁻ + h (f_ext − f_int(x_k))`, assembled
//!    by [`crate::fem::FemSystem::assemble`] (co-rotational stiffness at the current rotation, no
//!    geometric stiffness; α, β the Rayleigh coefficients). The momentum residual of the nodes
//!    without contact impulses is `−g₀(u_k) = b_k − (1 + hα) M u_k − hβ K u_k` (N·s).
//! 2. `A_k = L Lᵀ` restricted to the free nodes (pinned and one-way driven nodes are not
//!    unknowns) is factored by a sparse Cholesky: the node ordering (approximate minimum degree,
//!    the `amd` crate, on the node graph) and the symbolic analysis
//!    (`nalgebra_sparse::factorization::CscCholesky`) are done once at setup; a refactorisation
//!    only recomputes the values (`NodeFactor`, bit-identical to `CscCholesky::refactor`).
//! 3. The free velocity of the nodes `ũ_k = u_k + A_k⁻¹ (−g₀(u_k))`; the rigid trees' free
//!    velocity `v*` and mass `M̃` are the step's.
//! 4. The Delassus matrix of the rows `W_k = J_n A_k⁻¹ J_nᵀ + J_r M̃⁻¹ J_rᵀ` (dense; the node
//!    part from the Gram blocks of the rows' node columns `L⁻¹ E_n`, cached until the factor
//!    changes, see `NodeColumns`; new columns and the blocks run on the method's pool when
//!    `threads > 1`, each entry computed by the same sequence of operations, so the result does
//!    not depend on the thread count), and the rows' free velocity `J ũ_k`.
//! 5. The complementarity problem on these rows is solved by the rigid scheme's dense iteration
//!    ([`super::core::solve`]: min-map or Fischer–Burmeister normals, exact friction Jacobian by
//!    default, its globalization), warm-started from the previous outer iteration or step.
//! 6. `u_{k+1} = ũ_k + A_k⁻¹ J_nᵀ p`, `v = v* + M̃⁻¹ J_rᵀ p` (with the node columns, 3 and 6
//!    take one forward solve `z = L⁻¹ (−g₀)` and one backward solve of `s z + L⁻¹ J_nᵀ p`).
//!
//! The factor is kept across outer iterations and across steps while each iteration at least
//! halves the momentum residual (chord iteration, `CHORD_CONTRACTION`); the stopping test does
//! not depend on which factor was used.
//!
//! The step has converged (paper §3.6) when the rows' natural residual (from the last NCP solve,
//! exact since the rows are linear in `u` for the step) and the momentum residual at the new
//! positions, `max_i |g₀(u_{k+1}) − J_nᵀ p|_i / m_i` (m/s; the error of linearising the
//! co-rotational forces at `x_k`), are both at most the tolerance. Rigid DOFs balance momentum
//! by construction. Reported: [`super::core::NewtonStats::newton_iterations`] = outer iterations,
//! [`super::core::NewtonStats::linear_iterations`] = the NCP's Newton iterations summed over them.
//!
//! Start: `u₀ = u⁻` (the previous velocity; positions extrapolated) for the free nodes, the
//! prescribed velocity for the others, the previous step's impulses as the NCP's warm start.

use super::core::{self, NewtonIterate, NewtonProblem, NewtonRow, NewtonScratch, NewtonStats};
use super::ResolvedNewton;
use crate::contact::SchemeInput;
use crate::fem::{FemIntegrator, FemSystem, FemWorkspace};
use crate::math::Vec3;
use crate::model::Model;
use crate::model::tree::solve_mass;
use crate::state::State;
use nalgebra_sparse::CscMatrix;

mod columns;
mod factor;
#[cfg(test)]
mod tests;

use columns::{gram_block, node_columns, NodeColumns};
use factor::{chol_solve, fill_reducing_order, lower_solve, upper_solve, NodeFactor};

/// No node / no rigid slot.
const NONE: u32 = u32::MAX;

/// The chord iteration keeps the factorisation (within the step and into the next steps) while
/// each outer iteration divides the momentum residual by at least 1 / this; otherwise it
/// refactors.
const CHORD_CONTRACTION: f64 = 0.5;

/// `out += sign · J_nᵀ y` over `rows` (N·s on the node DOFs, 3 per node; `sign` ±1, so that
/// adding and taking out again restores `out` exactly).
fn add_node_impulses(nodes: &[[u32; 2]], coef: &[[Vec3; 2]], y: &[f64], rows: std::ops::Range<usize>, sign: f64, out: &mut [f64]) {
    for i in rows {
        for a in 0..2 {
            let nd = nodes[i][a];
            if nd == NONE {
                continue;
            }
            let k = 3 * nd as usize;
            let c = coef[i][a] * (sign * y[i]);
            out[k] += c.x;
            out[k + 1] += c.y;
            out[k + 2] += c.z;
        }
    }
}

/// The primal FEM solver of the Newton scheme: ordering, symbolic factorisation and scratch,
/// sized once.
pub struct PrimalFem {
    n3: usize,
    nv: usize,
    /// Free (unknown) DOFs.
    nf: usize,
    /// Per free DOF in the solver's order: its global node DOF.
    dof_of: Vec<usize>,
    /// Per global node DOF: its free index, or `NONE` when prescribed.
    free_of: Vec<u32>,
    /// Per value of the reduced, permuted CSC matrix: the index of the same entry in the
    /// assembled CSR matrix `A` (symmetric, so `A[i][j]` is read for `(j, i)`).
    value_source: Vec<usize>,
    values: Vec<f64>,
    chol: NodeFactor,
    /// Per node DOF: `1 + hα` and `hβ / (h² + hβ)` of its body (Rayleigh damping).
    mass_scale: Vec<f64>,
    damping_share: Vec<f64>,
    any_damping: bool,
    mass: Vec<f64>,
    // rows
    laws: Vec<NewtonRow>,
    nodes: Vec<[u32; 2]>,
    coef: Vec<[Vec3; 2]>,
    /// Per row: its earliest free index (the sparse right-hand side's start).
    first_free: Vec<usize>,
    rigid: Vec<u32>,
    rigid_jac: Vec<f64>,
    rigid_minv: Vec<f64>,
    delassus: Vec<f64>,
    free_row_velocity: Vec<f64>,
    p: Vec<f64>,
    y: Vec<f64>,
    scratch: NewtonScratch,
    // vectors
    u: Vec<f64>,
    u_free: Vec<f64>,
    residual: Vec<f64>,
    au: Vec<f64>,
    pos: Vec<f64>,
    rhs: Vec<f64>,
    /// One solve buffer (length 3 nf: three right-hand sides interleaved) per worker.
    columns: Vec<Vec<f64>>,
    /// The Delassus build's node columns `Y_n = L⁻¹ E_n` (see [`NodeColumns`]).
    node_cols: NodeColumns,
    /// Whether `chol` holds a factorisation (kept across steps by the chord iteration).
    have_factor: bool,
    /// Whether `node_cols` holds the columns of every row's nodes for the current factor (set
    /// by the Delassus build; the free and updated velocities then take one solve, not two).
    columns_valid: bool,
    /// The factor restored from the state's history at the start of this step (the cached
    /// node columns belong to another factor).
    factor_restored: bool,
    rigid_v: Vec<f64>,
    warm_node: Vec<f64>,
    pool: Option<rayon::ThreadPool>,
    /// Factorisations of the node matrix in the last step.
    factorizations: u32,
}

impl PrimalFem {
    /// Orders the free nodes, analyses the factorisation at the rest shape and sizes the scratch
    /// for `model` (rows: the step's rigid rows, a contact per surface node, the welds);
    /// `threads > 1` gives the Delassus solves their own pool.
    pub fn new(model: &Model, threads: usize) -> Self {
        let h = model.timestep_s;
        let bodies = &model.deformables;
        let nodes_total = model.fem_nodes();
        let (n3, nv) = (3 * nodes_total, model.nv);
        let mut sys = FemSystem::new(bodies);
        let rest: Vec<f64> = bodies.iter().flat_map(|d| d.rest.iter().flat_map(|p| [p.x, p.y, p.z])).collect();
        sys.assemble(bodies, &rest, &vec![0.0; n3], h, &model.gravity);
        let prescribed = sys.prescribed.clone();
        // the node graph of the free nodes, from the matrix's block pattern
        let free_nodes: Vec<usize> = (0..nodes_total).filter(|&g| !prescribed[g]).collect();
        let mut node_index = vec![NONE; nodes_total];
        for (k, &g) in free_nodes.iter().enumerate() {
            node_index[g] = k as u32;
        }
        let a = &sys.a;
        let adjacency: Vec<Vec<usize>> = free_nodes
            .iter()
            .map(|&g| {
                let row = 3 * g;
                a.row(row).col_indices().iter().step_by(3).map(|&c| c / 3).filter(|&j| node_index[j] != NONE).map(|j| node_index[j] as usize).collect()
            })
            .collect();
        let order = fill_reducing_order(&adjacency);
        let nf = 3 * free_nodes.len();
        let mut dof_of = vec![0; nf];
        let mut free_of = vec![NONE; n3];
        for (k, &local) in order.iter().enumerate() {
            let g = free_nodes[local];
            for c in 0..3 {
                dof_of[3 * k + c] = 3 * g + c;
                free_of[3 * g + c] = (3 * k + c) as u32;
            }
        }
        // the reduced, permuted matrix in CSC: column j (old DOF dof_of[j]) holds row dof_of[j]
        // of the CSR matrix (symmetric), restricted to free DOFs
        let mut offsets = Vec::with_capacity(nf + 1);
        let mut rows = vec![];
        let mut value_source = vec![];
        offsets.push(0);
        let mut col: Vec<(usize, usize)> = vec![];
        for &old in &dof_of {
            col.clear();
            let (start, end) = (a.row_offsets()[old], a.row_offsets()[old + 1]);
            for idx in start..end {
                let c = a.col_indices()[idx];
                if free_of[c] != NONE {
                    col.push((free_of[c] as usize, idx));
                }
            }
            col.sort_unstable();
            for &(r, idx) in &col {
                rows.push(r);
                value_source.push(idx);
            }
            offsets.push(rows.len());
        }
        let values: Vec<f64> = value_source.iter().map(|&i| a.values()[i]).collect();
        let csc = CscMatrix::try_from_csc_data(nf, nf, offsets, rows, values.clone()).expect("valid CSC pattern");
        // A = M + h² K at rest is symmetric positive definite (every free node has mass)
        let chol = NodeFactor::new(&csc).expect("the rest-shape node matrix is positive definite");
        let mut mass = vec![0.0; n3];
        let mut mass_scale = vec![1.0; n3];
        let mut damping_share = vec![0.0; n3];
        for d in bodies {
            let (alpha, beta) = (d.material.rayleigh_mass_1_s, d.material.rayleigh_stiffness_s);
            for (i, m) in d.mass.iter().enumerate() {
                for c in 0..3 {
                    let k = 3 * (d.node_start + i) + c;
                    mass[k] = *m;
                    mass_scale[k] = 1.0 + h * alpha;
                    damping_share[k] = h * beta / (h * h + h * beta);
                }
            }
        }
        let any_damping = damping_share.iter().any(|&s| s != 0.0);
        let surface: usize = bodies.iter().map(|d| d.surface_nodes.len()).sum();
        let welded = crate::fem::welded_node_count(bodies);
        let rigid_rows = model.max_constraint_rows(crate::contact::ContactRows::POINT.len());
        let cap = rigid_rows + 3 * surface + 3 * welded;
        let threads = threads.max(1);
        let mut node_cols = NodeColumns::new(chol.l(), free_nodes.len(), cap / 3 + 1);
        node_cols.row_node = vec![[NONE; 2]; cap];
        let v = |k: usize| vec![0.0; k];
        PrimalFem {
            n3,
            nv,
            nf,
            dof_of,
            free_of,
            value_source,
            values,
            chol,
            mass_scale,
            damping_share,
            any_damping,
            mass,
            laws: vec![NewtonRow::Bilateral { error: 0.0, compliance: 0.0 }; cap],
            nodes: vec![[NONE; 2]; cap],
            coef: vec![[Vec3::zeros(); 2]; cap],
            first_free: vec![0; cap],
            rigid: vec![NONE; cap],
            rigid_jac: v(cap * nv),
            rigid_minv: v(cap * nv),
            delassus: v(cap * cap),
            free_row_velocity: v(cap),
            p: v(cap),
            y: v(cap),
            scratch: NewtonScratch::with_threads(cap, threads),
            u: v(n3),
            u_free: v(n3),
            residual: v(n3),
            au: v(n3),
            pos: v(n3),
            rhs: v(nf),
            columns: (0..threads).map(|_| v(3 * nf)).collect(),
            node_cols,
            have_factor: false,
            columns_valid: false,
            factor_restored: false,
            rigid_v: v(nv),
            warm_node: v(n3),
            factorizations: 0,
            pool: if threads > 1 { rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("newton-fem-{i}")).build().ok() } else { None },
        }
    }

    /// Factorisations of the node matrix in the last step (1 when the chord iteration kept the
    /// first one throughout).
    pub fn last_factorizations(&self) -> u32 {
        self.factorizations
    }

    /// `J_nᵢ x` over the node part of row `i` (`x` per global node DOF).
    #[inline]
    fn node_dot(&self, i: usize, x: &[f64]) -> f64 {
        let mut s = 0.0;
        for a in 0..2 {
            let nd = self.nodes[i][a];
            if nd == NONE {
                continue;
            }
            let k = 3 * nd as usize;
            let c = &self.coef[i][a];
            s += c.x * x[k] + c.y * x[k + 1] + c.z * x[k + 2];
        }
        s
    }

    /// The momentum residual `−g₀(u) = b − (1 + hα) M u − hβ K u` of the free node DOFs into
    /// `residual` (N·s; 0 on prescribed DOFs), from the assembled system at `x = x⁻ + h u`.
    fn momentum(&mut self, sys: &FemSystem) {
        if self.any_damping {
            crate::fem::csr_mul_rows(&sys.a, &self.u, &mut self.au, 0..self.n3);
        }
        for k in 0..self.n3 {
            if self.free_of[k] == NONE {
                self.residual[k] = 0.0;
                continue;
            }
            let mu = self.mass_scale[k] * self.mass[k] * self.u[k];
            let damping = if self.any_damping { self.damping_share[k] * (self.au[k] - mu) } else { 0.0 };
            self.residual[k] = sys.b[k] - mu - damping;
        }
    }

    /// One step (see the module docs). Writes the rigid velocity into `velocity`, the rigid
    /// rows' impulses into `impulse`, the node velocities into `state.fem_v` and the node
    /// contacts and welds (with impulses) into `fem`.
    ///
    /// Long by design: one numeric algorithm read top to bottom against the paper, whose
    /// intermediate values feed each other in a fixed order (splitting it would move state into
    /// parameter structs without making a step of it separately meaningful).
    pub fn advance(&mut self, input: &SchemeInput, state: &mut State, fem: &mut FemWorkspace, velocity: &mut [f64], impulse: &mut [f64], resolved: &ResolvedNewton) -> NewtonStats {
        let opts = &resolved.options;
        let warm_start = resolved.warm_start;
        let model = input.model;
        let h = model.timestep_s;
        let (n3, nv, nf) = (self.n3, self.nv, self.nf);
        // the history the last step left in the state: the node warm start and the factor
        self.restore_history(state);
        // rows: the step's rigid rows first (so that their impulses map onto `impulse`), then the
        // node contacts, then the welds
        let layout = super::fem::push_step_rows(
            input,
            state,
            fem,
            super::fem::StepRows { laws: &mut self.laws, nodes: &mut self.nodes, coef: &mut self.coef, rigid: &mut self.rigid, rigid_jac: &mut self.rigid_jac, p: &mut self.p },
            0,
            impulse,
            &self.warm_node,
            warm_start,
        );
        let m = layout.end;
        // prescribed nodes drop out of the rows' node part (their velocity is known)
        for i in 0..m {
            let mut first = usize::MAX;
            for a in 0..2 {
                let nd = self.nodes[i][a];
                if nd == NONE {
                    continue;
                }
                let f = self.free_of[3 * nd as usize];
                if f != NONE {
                    first = first.min(f as usize - f as usize % 3);
                }
            }
            self.first_free[i] = first;
        }
        // the rigid part: M̃⁻¹ J_rᵀ per slot, J_r,i M̃⁻¹ J_r,jᵀ into a base Delassus, J_r v*
        for s in 0..layout.slots {
            let (a, b) = (s * nv, (s + 1) * nv);
            self.rigid_minv[a..b].copy_from_slice(&self.rigid_jac[a..b]);
            solve_mass(model, input.mass_factor, &mut self.rigid_minv[a..b]);
        }
        // start iterate: the previous velocity (prescribed nodes: their velocity)
        for k in 0..n3 {
            let g = k / 3;
            self.u[k] = if fem.system.prescribed[g] { fem.system.prescribed_velocity[k] } else { state.fem_v[k] };
        }
        self.y[..m].copy_from_slice(&self.p[..m]);
        let integrator = fem.system.integrator;
        fem.system.integrator = FemIntegrator::BackwardEuler;
        let mut stats = NewtonStats::default();
        let mut rows_residual = f64::INFINITY;
        let mut outer = 0u32;
        let mut last_momentum = f64::INFINITY;
        self.factorizations = 0;
        let max_outer = opts.max_newton_iterations.max(1);
        loop {
            // assemble at x = x⁻ + h u, the velocities of the step's start (b = M u⁻ + h (f_ext − f_int(x)))
            for k in 0..n3 {
                self.pos[k] = state.fem_x[k] + h * self.u[k];
            }
            fem.system.assemble_on(&model.deformables, &self.pos, &state.fem_v, h, &model.gravity, self.pool.as_ref());
            self.momentum(&fem.system);
            if outer > 0 {
                // §3.6: the momentum residual with the contact impulses, as a velocity error
                // add J_nᵀ y to the residual (scatter), then measure
                add_node_impulses(&self.nodes, &self.coef, &self.y, layout.first_node_contact..m, 1.0, &mut self.residual);
                let mut e = 0.0f64;
                for k in 0..n3 {
                    if self.free_of[k] != NONE {
                        let v = self.residual[k].abs() / self.mass[k];
                        e = if v.is_nan() { f64::INFINITY } else { e.max(v) };
                    }
                }
                // take J_nᵀ y back out: the Newton step's right-hand side is −g₀
                add_node_impulses(&self.nodes, &self.coef, &self.y, layout.first_node_contact..m, -1.0, &mut self.residual);
                stats.momentum_residual_m_s = e;
                stats.residual_m_s = rows_residual;
                if opts.tolerance_m_s > 0.0 && e <= opts.tolerance_m_s && rows_residual <= opts.tolerance_m_s {
                    stats.converged = true;
                    break;
                }
                if outer >= max_outer || !e.is_finite() {
                    break;
                }
            }
            // factor the free part of A when there is no factor yet, and again only when the
            // last iteration reduced the momentum residual by less than CHORD_CONTRACTION; the
            // chord iteration otherwise keeps the factor, within the step and across steps (the
            // convergence test is the same: the rows' residual is exact for any factor, the
            // momentum residual is measured with the assembled forces)
            let e = if outer == 0 { f64::INFINITY } else { stats.momentum_residual_m_s };
            let refactor = !self.have_factor || e > CHORD_CONTRACTION * last_momentum;
            last_momentum = e;
            if refactor {
                for (v, &src) in self.values.iter_mut().zip(&self.value_source) {
                    *v = fem.system.a.values()[src];
                }
                if self.chol.refactor(&self.values).is_err() {
                    self.have_factor = false;
                    self.node_cols.invalidate();
                    stats.momentum_residual_m_s = f64::INFINITY;
                    break;
                }
                self.have_factor = true;
                self.factorizations += 1;
            }
            if refactor || outer == 0 {
                // W = J_n A⁻¹ J_nᵀ + J_r M̃⁻¹ J_rᵀ (the step's rows are new at its first iteration)
                let factor_changed = refactor || std::mem::take(&mut self.factor_restored);
                self.delassus_rows(m, factor_changed);
            }
            outer += 1;
            // ũ = u + A⁻¹ (−g₀) and J ũ; with the node columns Y = L⁻¹ E_n of the rows
            // (`columns_valid`), only z = L⁻¹ (−g₀) is needed here: J_n A⁻¹ (−g₀) = Σ cᵀ Yᵀ z
            for j in 0..nf {
                self.rhs[j] = self.residual[self.dof_of[j]];
            }
            if self.columns_valid {
                lower_solve(self.chol.l(), &mut self.rhs, 0);
                self.u_free.copy_from_slice(&self.u);
            } else {
                chol_solve(self.chol.l(), &mut self.rhs, 0);
                self.u_free.copy_from_slice(&self.u);
                for j in 0..nf {
                    self.u_free[self.dof_of[j]] += self.rhs[j];
                }
            }
            for i in 0..m {
                let mut w = self.node_dot(i, &self.u_free);
                if self.columns_valid {
                    w += self.node_cols.row_dot(i, &self.coef[i], &self.rhs);
                }
                if self.rigid[i] != NONE {
                    let s = self.rigid[i] as usize * nv;
                    w += self.rigid_jac[s..s + nv].iter().zip(input.free_velocity.iter()).map(|(a, b)| a * b).sum::<f64>();
                }
                self.free_row_velocity[i] = w;
            }
            // the NCP on the rows, warm-started from the last impulses
            self.y[..m].copy_from_slice(&self.p[..m]);
            let problem = NewtonProblem { delassus: &self.delassus[..m * m], free_row_velocity: &self.free_row_velocity[..m], rows: &self.laws[..m], row_trees: None };
            let mut it = NewtonIterate { impulse: &mut self.p[..m], velocity_impulse: &mut self.y[..m], free_weight: 1.0 };
            let inner = core::solve(&problem, opts, &mut self.scratch, &mut it);
            let s = it.free_weight;
            stats.linear_iterations += inner.newton_iterations;
            rows_residual = inner.residual_m_s;
            // u = s ũ + A⁻¹ J_nᵀ y (nodes), v = s v* + M̃⁻¹ J_rᵀ y; with the node columns,
            // u = s u + L⁻ᵀ (s z + Σ_i y_i Y c_i): one backward solve
            if self.columns_valid {
                for v in self.rhs.iter_mut() {
                    *v *= s;
                }
                for i in layout.first_node_contact..m {
                    if self.y[i] != 0.0 {
                        self.node_cols.row_scatter(i, &self.coef[i], self.y[i], &mut self.rhs);
                    }
                }
                upper_solve(self.chol.l(), &mut self.rhs);
                for j in 0..nf {
                    let k = self.dof_of[j];
                    self.u[k] = s * self.u[k] + self.rhs[j];
                }
            } else {
                self.rhs.fill(0.0);
                for i in layout.first_node_contact..m {
                    for a in 0..2 {
                        let nd = self.nodes[i][a];
                        if nd == NONE {
                            continue;
                        }
                        let f = self.free_of[3 * nd as usize];
                        if f == NONE {
                            continue;
                        }
                        let c = self.coef[i][a] * self.y[i];
                        let f = f as usize;
                        self.rhs[f] += c.x;
                        self.rhs[f + 1] += c.y;
                        self.rhs[f + 2] += c.z;
                    }
                }
                chol_solve(self.chol.l(), &mut self.rhs, 0);
                for j in 0..nf {
                    let k = self.dof_of[j];
                    self.u[k] = s * self.u_free[k] + self.rhs[j];
                }
            }
            for r in 0..nv {
                self.rigid_v[r] = s * input.free_velocity[r];
            }
            for i in 0..m {
                if self.rigid[i] != NONE && self.y[i] != 0.0 {
                    let sl = self.rigid[i] as usize * nv;
                    for r in 0..nv {
                        self.rigid_v[r] += self.rigid_minv[sl + r] * self.y[i];
                    }
                }
            }
        }
        fem.system.integrator = integrator;
        stats.newton_iterations = outer;
        if !stats.converged {
            stats.residual_m_s = rows_residual;
        }
        // outputs: the velocities, the impulses reported exactly inside their cones
        state.fem_v.copy_from_slice(&self.u);
        velocity[..nv].copy_from_slice(&self.rigid_v);
        super::fem::write_back_step_rows(input, state, fem, &mut self.p, &self.laws, &layout, &mut self.warm_node, impulse);
        self.save_history(state);
        stats
    }

    /// Length of this form's history in [`State::method_history`]: the node contacts' warm
    /// start (3 per node, N·s), whether a factor is kept (1 or 0), and the values of the free
    /// part of A it was computed from (kg).
    fn history_len(&self) -> usize {
        self.n3 + 1 + self.values.len()
    }

    /// Reads the history the last step left in `state` (or none: a state of a new run, whose
    /// history is empty or zero, starts with no factor and a zero warm start). The factor kept
    /// across steps (the chord iteration) is the one computed from the stored values: when the
    /// runtime holds another one (the state was restored, or the runtime is new), it refactors
    /// from them, so that a restored state continues bit for bit. Allocates only when the
    /// state's history has not been sized yet (a state from `State::new`, first step).
    fn restore_history(&mut self, state: &mut State) {
        let len = self.history_len();
        if state.method_history.len() != len {
            state.method_history.clear();
            state.method_history.resize(len, 0.0);
        }
        let (warm, rest) = state.method_history.split_at(self.n3);
        self.warm_node.copy_from_slice(warm);
        let (kept, values) = (rest[0] != 0.0, &rest[1..]);
        if !kept {
            self.have_factor = false;
            return;
        }
        let same = self.have_factor && self.values.iter().zip(values).all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            self.values.copy_from_slice(values);
            self.have_factor = self.chol.refactor(&self.values).is_ok();
            self.factor_restored = true;
        }
    }

    /// Writes this step's history into `state` (see [`Self::restore_history`]).
    fn save_history(&mut self, state: &mut State) {
        let n3 = self.n3;
        let h = &mut state.method_history;
        h[..n3].copy_from_slice(&self.warm_node);
        h[n3] = if self.have_factor { 1.0 } else { 0.0 };
        // the values change only with a factorisation (a restored factor's are already there)
        if self.have_factor && self.factorizations > 0 {
            h[n3 + 1..].copy_from_slice(&self.values);
        }
    }

    /// The Delassus matrix of rows `0..m` into `delassus` (row-major, symmetrised) with the
    /// current factor: the node part from the Gram blocks of the rows' node columns
    /// ([`NodeColumns`]; the columns of nodes new to the cache are solved on the pool when there
    /// is one, each by the same operations whatever the thread count), plus the rigid part.
    /// `factor_changed` drops the cached columns. Falls back to one full solve per row
    /// ([`Self::delassus_rows_direct`]) when the rows touch more nodes than the cache holds.
    fn delassus_rows(&mut self, m: usize, factor_changed: bool) {
        if m == 0 {
            self.columns_valid = false;
            return;
        }
        if factor_changed {
            self.node_cols.invalidate();
        }
        if !self.assign_node_slots(m) {
            self.node_cols.invalidate();
            self.columns_valid = false;
            self.delassus_rows_direct(m);
            return;
        }
        self.columns_valid = true;
        let PrimalFem { nv, coef, rigid, rigid_jac, rigid_minv, delassus, columns, pool, chol, node_cols, .. } = self;
        let nv = *nv;
        let l = chol.l();
        let nc = node_cols;
        let stride = nc.max_reach;
        // the columns of the nodes new to the cache
        {
            let (lo, hi) = (nc.used_before, nc.used);
            let (reach, reach_len, slot_node) = (&nc.reach, &nc.reach_len, &nc.slot_node);
            let values = &mut nc.values[3 * lo * stride..3 * hi * stride];
            let solve = |s: usize, x: &mut [f64], out: &mut [f64]| {
                let r = &reach[s * stride..s * stride + reach_len[s]];
                node_columns(l, 3 * slot_node[s] as usize, r, x, &mut out[..3 * reach_len[s]]);
            };
            match pool.as_ref() {
                Some(pool) if hi - lo > 1 => {
                    let workers = columns.len();
                    let chunk = (hi - lo).div_ceil(workers);
                    pool.install(|| {
                        use rayon::prelude::*;
                        values.par_chunks_mut(chunk * 3 * stride).zip(columns.par_iter_mut()).enumerate().for_each(|(c, (block, x))| {
                            for (k, out) in block.chunks_mut(3 * stride).enumerate() {
                                solve(lo + c * chunk + k, x, out);
                            }
                        });
                    });
                }
                _ => {
                    let x = &mut columns[0];
                    for (k, out) in values.chunks_mut(3 * stride).enumerate() {
                        solve(lo + k, x, out);
                    }
                }
            }
        }
        // the Gram blocks of the step's nodes, row s of the upper triangle per task
        let d = nc.step_count;
        {
            let (reach, reach_len, values, step_slots) = (&nc.reach, &nc.reach_len, &nc.values, &nc.step_slots);
            let block_row = |si: usize, out: &mut [f64]| {
                let s = step_slots[si] as usize;
                let (rs, ys) = (&reach[s * stride..s * stride + reach_len[s]], &values[3 * s * stride..3 * (s * stride + reach_len[s])]);
                for ti in si..d {
                    let t = step_slots[ti] as usize;
                    let (rt, yt) = (&reach[t * stride..t * stride + reach_len[t]], &values[3 * t * stride..3 * (t * stride + reach_len[t])]);
                    gram_block(rs, ys, rt, yt, &mut out[9 * ti..9 * ti + 9]);
                }
            };
            let gram = &mut nc.gram[..9 * d * d];
            match pool.as_ref() {
                Some(pool) if d > 1 => pool.install(|| {
                    use rayon::prelude::*;
                    gram.par_chunks_mut(9 * d).enumerate().for_each(|(si, out)| block_row(si, out));
                }),
                _ => {
                    for (si, out) in gram.chunks_mut(9 * d).enumerate() {
                        block_row(si, out);
                    }
                }
            }
        }
        // W_ij = Σ_ab c_iaᵀ (Y_aᵀ Y_b) c_jb + J_r,i M̃⁻¹ J_r,jᵀ
        let (gram, row_node) = (&nc.gram, &nc.row_node);
        let w = &mut delassus[..m * m];
        for i in 0..m {
            for j in 0..m {
                let mut s = 0.0;
                for a in 0..2 {
                    let si = row_node[i][a];
                    if si == NONE {
                        continue;
                    }
                    let ci = coef[i][a];
                    for b in 0..2 {
                        let sj = row_node[j][b];
                        if sj == NONE {
                            continue;
                        }
                        let cj = coef[j][b];
                        let (si, sj) = (si as usize, sj as usize);
                        // the block (si, sj) is stored for si ≤ sj; (sj, si) is its transpose
                        let (g, tr) = if si <= sj { (&gram[9 * (si * d + sj)..9 * (si * d + sj) + 9], false) } else { (&gram[9 * (sj * d + si)..9 * (sj * d + si) + 9], true) };
                        let (u, v) = ([ci.x, ci.y, ci.z], [cj.x, cj.y, cj.z]);
                        for r in 0..3 {
                            for c in 0..3 {
                                let e = if tr { g[3 * c + r] } else { g[3 * r + c] };
                                s += u[r] * e * v[c];
                            }
                        }
                    }
                }
                if rigid[i] != NONE && rigid[j] != NONE {
                    let (si, sj) = (rigid[i] as usize * nv, rigid[j] as usize * nv);
                    s += rigid_jac[si..si + nv].iter().zip(&rigid_minv[sj..sj + nv]).map(|(a, b)| a * b).sum::<f64>();
                }
                w[i * m + j] = s;
            }
        }
        for i in 0..m {
            for j in i + 1..m {
                let s = 0.5 * (w[i * m + j] + w[j * m + i]);
                w[i * m + j] = s;
                w[j * m + i] = s;
            }
        }
    }

    /// Gives every free node of rows `0..m` a slot in the column cache (new slots' reaches
    /// computed, their columns left to solve: `used_before..used`) and a step index; false when
    /// the step's nodes do not fit (the cache is then left to be dropped).
    fn assign_node_slots(&mut self, m: usize) -> bool {
        let PrimalFem { nodes, free_of, node_cols: nc, .. } = self;
        // clear the last step's indices
        for k in 0..nc.step_count {
            nc.step_index[nc.step_slots[k] as usize] = NONE;
        }
        nc.step_count = 0;
        // make room: drop the cache if this step could overflow it
        let mut needed = 0;
        for i in 0..m {
            for a in 0..2 {
                if nodes[i][a] != NONE && free_of[3 * nodes[i][a] as usize] != NONE {
                    needed += 1;
                }
            }
        }
        let step_cap = nc.capacity / 2;
        if nc.used + needed.min(step_cap) > nc.capacity {
            nc.invalidate();
        }
        nc.used_before = nc.used;
        for i in 0..m {
            for a in 0..2 {
                nc.row_node[i][a] = NONE;
                let nd = nodes[i][a];
                if nd == NONE || free_of[3 * nd as usize] == NONE {
                    continue;
                }
                let free_node = free_of[3 * nd as usize] as usize / 3;
                let mut s = nc.slot_of[free_node];
                if s == NONE {
                    if nc.used == nc.capacity {
                        return false;
                    }
                    s = nc.used as u32;
                    nc.used += 1;
                    nc.slot_of[free_node] = s;
                    nc.slot_node[s as usize] = free_node as u32;
                }
                let su = s as usize;
                if nc.step_index[su] == NONE {
                    if nc.step_count == step_cap {
                        return false;
                    }
                    nc.step_index[su] = nc.step_count as u32;
                    nc.step_slots[nc.step_count] = s;
                    nc.step_count += 1;
                }
                nc.row_node[i][a] = nc.step_index[su];
            }
        }
        // the reaches of the new slots
        let stride = nc.max_reach;
        for s in nc.used_before..nc.used {
            let mut len = 0;
            let first = 3 * nc.slot_node[s] as usize;
            let dst = &mut nc.reach[s * stride..(s + 1) * stride];
            for c in 0..3 {
                let mut k = first + c;
                while k != usize::MAX && !nc.mark[k] {
                    nc.mark[k] = true;
                    dst[len] = k as u32;
                    len += 1;
                    k = nc.parent[k];
                }
            }
            let r = &mut dst[..len];
            r.sort_unstable();
            for &k in r.iter() {
                nc.mark[k as usize] = false;
            }
            nc.reach_len[s] = len;
        }
        true
    }

    /// The Delassus matrix of rows `0..m` into `delassus` (row-major, symmetrised): one sparse
    /// solve per row with a free node, on the pool when there is one (each entry is computed by
    /// the same operations whatever the thread count), plus the rigid part.
    fn delassus_rows_direct(&mut self, m: usize) {
        if m == 0 {
            return;
        }
        let PrimalFem { nv, nodes, coef, first_free, free_of, rigid, rigid_jac, rigid_minv, delassus, columns, pool, chol, .. } = self;
        let nv = *nv;
        let l = chol.l();
        let (nodes, coef, first_free, free_of, rigid, rigid_jac, rigid_minv) = (&*nodes, &*coef, &*first_free, &*free_of, &*rigid, &*rigid_jac, &*rigid_minv);
        // row i of W (entries j = 0..m) with the solve buffer `x`
        let nf = l.nrows();
        let row = |i: usize, x: &mut [f64], out: &mut [f64]| {
            out.fill(0.0);
            if first_free[i] != usize::MAX {
                // the buffer holds three right-hand sides for the node columns; one is used here
                let x = &mut x[..nf];
                x.fill(0.0);
                for a in 0..2 {
                    let nd = nodes[i][a];
                    if nd == NONE || free_of[3 * nd as usize] == NONE {
                        continue;
                    }
                    let f = free_of[3 * nd as usize] as usize;
                    let c = coef[i][a];
                    x[f] += c.x;
                    x[f + 1] += c.y;
                    x[f + 2] += c.z;
                }
                chol_solve(l, x, first_free[i]);
                for (j, o) in out.iter_mut().enumerate() {
                    let mut s = 0.0;
                    for a in 0..2 {
                        let nd = nodes[j][a];
                        if nd == NONE || free_of[3 * nd as usize] == NONE {
                            continue;
                        }
                        let f = free_of[3 * nd as usize] as usize;
                        let c = coef[j][a];
                        s += c.x * x[f] + c.y * x[f + 1] + c.z * x[f + 2];
                    }
                    *o = s;
                }
            }
            if rigid[i] != NONE {
                let si = rigid[i] as usize * nv;
                for (j, o) in out.iter_mut().enumerate() {
                    if rigid[j] != NONE {
                        let sj = rigid[j] as usize * nv;
                        *o += rigid_jac[si..si + nv].iter().zip(&rigid_minv[sj..sj + nv]).map(|(a, b)| a * b).sum::<f64>();
                    }
                }
            }
        };
        let w = &mut delassus[..m * m];
        match pool.as_ref() {
            Some(pool) if m > 1 => {
                let workers = columns.len();
                let chunk = m.div_ceil(workers);
                pool.install(|| {
                    use rayon::prelude::*;
                    w.par_chunks_mut(chunk * m).zip(columns.par_iter_mut()).enumerate().for_each(|(c, (block, x))| {
                        for (r, out) in block.chunks_mut(m).enumerate() {
                            row(c * chunk + r, x, out);
                        }
                    });
                });
            }
            _ => {
                let x = &mut columns[0];
                for (i, out) in w.chunks_mut(m).enumerate() {
                    row(i, x, out);
                }
            }
        }
        // the node columns expect zeroed buffers
        for x in columns.iter_mut() {
            x.fill(0.0);
        }
        for i in 0..m {
            for j in i + 1..m {
                let s = 0.5 * (w[i * m + j] + w[j * m + i]);
                w[i * m + j] = s;
                w[j * m + i] = s;
            }
        }
    }
}
