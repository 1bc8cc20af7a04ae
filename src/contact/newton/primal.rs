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
//! 2. `A_k` restricted to the free nodes (pinned and one-way driven nodes are not unknowns) is
//!    factored by a sparse Cholesky (`nalgebra_sparse::factorization::CscCholesky`): the node
//!    ordering (approximate minimum degree, the `amd` crate, on the node graph) and the symbolic
//!    analysis are done once at setup; each iteration only refactors the values.
//! 3. The free velocity of the nodes `ũ_k = u_k + A_k⁻¹ (−g₀(u_k))`; the rigid trees' free
//!    velocity `v*` and mass `M̃` are the step's.
//! 4. The Delassus matrix of the rows `W_k = J_n A_k⁻¹ J_nᵀ + J_r M̃⁻¹ J_rᵀ` (dense, one sparse
//!    solve per row with a node part; the solves run on the method's pool when `threads > 1`,
//!    each entry computed by the same sequence of operations, so the result does not depend on
//!    the thread count), and the rows' free velocity `J ũ_k`.
//! 5. The complementarity problem on these rows is solved by the rigid scheme's dense iteration
//!    ([`super::core::solve`]: min-map or Fischer–Burmeister normals, exact friction Jacobian by
//!    default, its globalization), warm-started from the previous outer iteration or step.
//! 6. `u_{k+1} = ũ_k + A_k⁻¹ J_nᵀ p`, `v = v* + M̃⁻¹ J_rᵀ p`.
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
use crate::math::{BranchMatrix, Vec3};
use crate::model::Model;
use crate::state::State;
use nalgebra_sparse::factorization::CscCholesky;
use nalgebra_sparse::CscMatrix;

/// No node / no rigid slot.
const NONE: u32 = u32::MAX;

/// The chord iteration keeps the step's factorisation (and Delassus matrix) while each outer
/// iteration divides the momentum residual by at least 1 / this; otherwise it refactors.
const CHORD_CONTRACTION: f64 = 0.5;

/// Approximate-minimum-degree ordering of an undirected graph given by its adjacency lists
/// (each list may or may not hold the vertex itself): `order[k]` is the vertex placed k-th.
/// Falls back to the natural order if the ordering library reports an invalid input.
pub(crate) fn fill_reducing_order(adjacency: &[Vec<usize>]) -> Vec<usize> {
    let n = adjacency.len();
    let mut ap = Vec::with_capacity(n + 1);
    let mut ai = vec![];
    ap.push(0i64);
    for (i, nb) in adjacency.iter().enumerate() {
        let mut col: Vec<i64> = nb.iter().map(|&j| j as i64).collect();
        col.push(i as i64);
        col.sort_unstable();
        col.dedup();
        ai.extend_from_slice(&col);
        ap.push(ai.len() as i64);
    }
    match amd::order(n as i64, &ap, &ai, &amd::Control::default()) {
        Ok((p, _, _)) => p.into_iter().map(|k| k as usize).collect(),
        Err(_) => (0..n).collect(),
    }
}

/// `x ← L⁻¹ x`, `L` lower triangular in CSC with the diagonal first in each column; columns
/// before `start` are skipped (the right-hand side is zero there).
fn lower_solve(l: &CscMatrix<f64>, x: &mut [f64], start: usize) {
    let (offsets, rows, vals) = (l.col_offsets(), l.row_indices(), l.values());
    for j in start..x.len() {
        let (a, b) = (offsets[j], offsets[j + 1]);
        let xj = x[j] / vals[a];
        x[j] = xj;
        if xj != 0.0 {
            for p in a + 1..b {
                x[rows[p]] -= vals[p] * xj;
            }
        }
    }
}

/// `x ← L⁻ᵀ x`.
fn upper_solve(l: &CscMatrix<f64>, x: &mut [f64]) {
    let (offsets, rows, vals) = (l.col_offsets(), l.row_indices(), l.values());
    for j in (0..x.len()).rev() {
        let (a, b) = (offsets[j], offsets[j + 1]);
        let mut s = x[j];
        for p in a + 1..b {
            s -= vals[p] * x[rows[p]];
        }
        x[j] = s / vals[a];
    }
}

/// `x ← A⁻¹ x` with `A = L Lᵀ`, the right-hand side zero before `start`.
fn chol_solve(l: &CscMatrix<f64>, x: &mut [f64], start: usize) {
    lower_solve(l, x, start);
    upper_solve(l, x);
}

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

/// `x ← M̃⁻¹ x` with the factor of `M̃`, tree by tree.
fn solve_mass(model: &Model, factor: &BranchMatrix, x: &mut [f64]) {
    for t in &model.trees {
        factor.solve(t.v_start, t.v_end, x);
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
    chol: CscCholesky<f64>,
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
    /// One solve buffer (length nf) per worker.
    columns: Vec<Vec<f64>>,
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
        let chol = CscCholesky::factor(&csc).expect("the rest-shape node matrix is positive definite");
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
            columns: (0..threads).map(|_| v(nf)).collect(),
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
    pub fn advance(&mut self, input: &SchemeInput, state: &mut State, fem: &mut FemWorkspace, velocity: &mut [f64], impulse: &mut [f64], resolved: &ResolvedNewton) -> NewtonStats {
        let opts = &resolved.options;
        let warm_start = resolved.warm_start;
        let model = input.model;
        let h = model.timestep_s;
        let (n3, nv, nf) = (self.n3, self.nv, self.nf);
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
        let (mut have_factor, mut last_momentum) = (false, f64::INFINITY);
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
            // factor the free part of A at the first iteration of the step, and again only when
            // the last iteration reduced the momentum residual by less than CHORD_CONTRACTION
            // (otherwise the chord iteration keeps the factor and the Delassus matrix)
            let e = if outer == 0 { f64::INFINITY } else { stats.momentum_residual_m_s };
            let refactor = !have_factor || e > CHORD_CONTRACTION * last_momentum;
            last_momentum = e;
            if refactor {
                for (v, &src) in self.values.iter_mut().zip(&self.value_source) {
                    *v = fem.system.a.values()[src];
                }
                if self.chol.refactor(&self.values).is_err() {
                    stats.momentum_residual_m_s = f64::INFINITY;
                    break;
                }
                have_factor = true;
                self.factorizations += 1;
                // W = J_n A⁻¹ J_nᵀ + J_r M̃⁻¹ J_rᵀ
                self.delassus_rows(m);
            }
            outer += 1;
            // ũ = u + A⁻¹ (−g₀)
            for j in 0..nf {
                self.rhs[j] = self.residual[self.dof_of[j]];
            }
            chol_solve(self.chol.l(), &mut self.rhs, 0);
            self.u_free.copy_from_slice(&self.u);
            for j in 0..nf {
                self.u_free[self.dof_of[j]] += self.rhs[j];
            }
            for i in 0..m {
                let mut w = self.node_dot(i, &self.u_free);
                if self.rigid[i] != NONE {
                    let s = self.rigid[i] as usize * nv;
                    w += self.rigid_jac[s..s + nv].iter().zip(input.free_velocity.iter()).map(|(a, b)| a * b).sum::<f64>();
                }
                self.free_row_velocity[i] = w;
            }
            // the NCP on the rows, warm-started from the last impulses
            self.y[..m].copy_from_slice(&self.p[..m]);
            let problem = NewtonProblem { delassus: &self.delassus[..m * m], free_row_velocity: &self.free_row_velocity[..m], rows: &self.laws[..m] };
            let mut it = NewtonIterate { impulse: &mut self.p[..m], velocity_impulse: &mut self.y[..m], free_weight: 1.0 };
            let inner = core::solve(&problem, opts, &mut self.scratch, &mut it);
            let s = it.free_weight;
            stats.linear_iterations += inner.newton_iterations;
            rows_residual = inner.residual_m_s;
            // u = s ũ + A⁻¹ J_nᵀ y (nodes), v = s v* + M̃⁻¹ J_rᵀ y
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
        stats
    }

    /// The Delassus matrix of rows `0..m` into `delassus` (row-major, symmetrised): one sparse
    /// solve per row with a free node, on the pool when there is one (each entry is computed by
    /// the same operations whatever the thread count), plus the rigid part.
    fn delassus_rows(&mut self, m: usize) {
        if m == 0 {
            return;
        }
        let PrimalFem { nv, nodes, coef, first_free, free_of, rigid, rigid_jac, rigid_minv, delassus, columns, pool, chol, .. } = self;
        let nv = *nv;
        let l = chol.l();
        let (nodes, coef, first_free, free_of, rigid, rigid_jac, rigid_minv) = (&*nodes, &*coef, &*first_free, &*free_of, &*rigid, &*rigid_jac, &*rigid_minv);
        // row i of W (entries j = 0..m) with the solve buffer `x`
        let row = |i: usize, x: &mut [f64], out: &mut [f64]| {
            out.fill(0.0);
            if first_free[i] != usize::MAX {
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
        for i in 0..m {
            for j in i + 1..m {
                let s = 0.5 * (w[i * m + j] + w[j * m + i]);
                w[i * m + j] = s;
                w[j * m + i] = s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_reducing_order_is_a_permutation_and_cuts_the_fill_of_a_grid() {
        // a 12 × 12 grid graph, numbered so that the natural order has a wide band
        let n = 12;
        let id = |i: usize, j: usize| ((i * n + j) * 5) % (n * n); // a scrambled numbering (5 is a unit mod 144)
        let mut seen = vec![false; n * n];
        let mut map = vec![0; n * n];
        for i in 0..n {
            for j in 0..n {
                let k = id(i, j);
                assert!(!seen[k], "numbering not bijective");
                seen[k] = true;
                map[i * n + j] = k;
            }
        }
        let mut adj = vec![vec![]; n * n];
        for i in 0..n {
            for j in 0..n {
                let a = map[i * n + j];
                if i + 1 < n {
                    let b = map[(i + 1) * n + j];
                    adj[a].push(b);
                    adj[b].push(a);
                }
                if j + 1 < n {
                    let b = map[i * n + j + 1];
                    adj[a].push(b);
                    adj[b].push(a);
                }
            }
        }
        let order = fill_reducing_order(&adj);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n * n).collect::<Vec<_>>());
        // fill of the Cholesky factor (symbolic elimination) in both orders
        let fill = |order: &[usize]| {
            let nn = order.len();
            let mut pos = vec![0; nn];
            for (k, &v) in order.iter().enumerate() {
                pos[v] = k;
            }
            let mut sets: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); nn];
            for (v, nb) in adj.iter().enumerate() {
                for &w in nb {
                    if pos[w] > pos[v] {
                        sets[pos[v]].insert(pos[w]);
                    }
                }
            }
            let mut total = 0;
            for k in 0..nn {
                let s: Vec<usize> = sets[k].iter().copied().collect();
                total += s.len();
                if let Some(&parent) = s.first() {
                    for &x in &s[1..] {
                        sets[parent].insert(x);
                    }
                }
            }
            total
        };
        let natural: Vec<usize> = (0..n * n).collect();
        let (f_amd, f_nat) = (fill(&order), fill(&natural));
        assert!(f_amd * 2 < f_nat, "amd fill {f_amd}, natural {f_nat}");
    }

    #[test]
    fn the_triangular_solves_invert_a_small_spd_matrix() {
        // A = tridiagonal(−1, 4, −1) of size 6, plus a far coupling
        let n = 6;
        let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
        for i in 0..n {
            dense[(i, i)] = 4.0;
            if i + 1 < n {
                dense[(i, i + 1)] = -1.0;
                dense[(i + 1, i)] = -1.0;
            }
        }
        dense[(0, 5)] = 0.5;
        dense[(5, 0)] = 0.5;
        let csc = CscMatrix::from(&dense);
        let chol = CscCholesky::factor(&csc).unwrap();
        let b: Vec<f64> = vec![0.0, 0.0, 1.0, -2.0, 0.5, 3.0];
        let mut x = b.clone();
        chol_solve(chol.l(), &mut x, 2);
        let ax = &dense * nalgebra::DVector::from_column_slice(&x);
        for i in 0..n {
            assert!((ax[i] - b[i]).abs() < 1e-12, "row {i}: {} vs {}", ax[i], b[i]);
        }
    }
}
