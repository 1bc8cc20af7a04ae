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
use nalgebra_sparse::factorization::CscCholesky;
use nalgebra_sparse::CscMatrix;

/// No node / no rigid slot.
const NONE: u32 = u32::MAX;

/// The chord iteration keeps the factorisation (within the step and into the next steps) while
/// each outer iteration divides the momentum residual by at least 1 / this; otherwise it
/// refactors.
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


/// The sparse Cholesky factor `A = L Lᵀ` of the node matrix: the pattern of `L` from
/// `nalgebra_sparse`'s symbolic analysis (elimination tree, column counts) at setup; the numeric
/// refactorisation is our left-looking loop, the same operations in the same order as
/// `CscCholesky::refactor` (so the factor is bit-identical to it), but each update from a column
/// `j` of `L` reads only its entries at and below the current row (found by a per-column cursor)
/// instead of scanning the whole column: about half the memory traffic. Allocation-free.
struct NodeFactor {
    /// The pattern of the factored matrix (CSC, rows sorted; both triangles may be present).
    a_offsets: Vec<usize>,
    a_rows: Vec<usize>,
    l: CscMatrix<f64>,
    /// The pattern of `L` by rows, strictly left of the diagonal: row `k` holds the columns
    /// `row_cols[row_offsets[k]..row_offsets[k + 1]]`, ascending.
    row_offsets: Vec<usize>,
    row_cols: Vec<usize>,
    /// Per column of `L`: its entry in the row being computed.
    next: Vec<usize>,
    work: Vec<f64>,
}

impl NodeFactor {
    /// Analyses and factors `a` (symmetric positive definite; `None` otherwise).
    fn new(a: &CscMatrix<f64>) -> Option<Self> {
        let l = CscCholesky::factor(a).ok()?.take_l();
        let n = l.nrows();
        let (offsets, rows) = (l.col_offsets(), l.row_indices());
        let mut count = vec![0usize; n + 1];
        for j in 0..n {
            for &r in &rows[offsets[j] + 1..offsets[j + 1]] {
                count[r + 1] += 1;
            }
        }
        for k in 0..n {
            count[k + 1] += count[k];
        }
        let mut fill = count.clone();
        let mut row_cols = vec![0; count[n]];
        for j in 0..n {
            for &r in &rows[offsets[j] + 1..offsets[j + 1]] {
                row_cols[fill[r]] = j;
                fill[r] += 1;
            }
        }
        Some(NodeFactor { a_offsets: a.col_offsets().to_vec(), a_rows: a.row_indices().to_vec(), l, row_offsets: count, row_cols, next: vec![0; n], work: vec![0.0; n] })
    }

    /// The factor `L` (lower triangular, CSC, the diagonal first in each column).
    fn l(&self) -> &CscMatrix<f64> {
        &self.l
    }

    /// Refactors with new `values` on the analysed pattern; `Err` when the matrix is not
    /// positive definite (the factor is then invalid).
    fn refactor(&mut self, values: &[f64]) -> Result<(), ()> {
        let NodeFactor { a_offsets, a_rows, l, row_offsets, row_cols, next, work } = self;
        let n = work.len();
        let (offsets, rows, lv) = l.csc_data_mut();
        next.copy_from_slice(&offsets[..n]);
        for k in 0..n {
            // the lower part of column k of A
            work[k] = 0.0;
            for p in a_offsets[k]..a_offsets[k + 1] {
                let r = a_rows[p];
                if r >= k {
                    work[r] = values[p];
                }
            }
            // minus L[k.., j] L[k, j] for every column j < k with L[k, j] ≠ 0
            for &j in &row_cols[row_offsets[k]..row_offsets[k + 1]] {
                let start = next[j];
                let factor = -lv[start];
                next[j] = start + 1;
                for p in start..offsets[j + 1] {
                    work[rows[p]] += lv[p] * factor;
                }
            }
            let diag = work[k];
            if !(diag > 0.0) {
                return Err(());
            }
            let denom = diag.sqrt();
            for p in offsets[k]..offsets[k + 1] {
                let r = rows[p];
                lv[p] = work[r] / denom;
                work[r] = 0.0;
            }
            next[k] = offsets[k] + 1;
        }
        Ok(())
    }
}

/// The node columns of the Delassus build, `Y_n = L⁻¹ E_n` (`E_n` the three unit columns of a
/// free node's DOFs, `A = L Lᵀ` the node matrix's factor in the solver's order), so that the node
/// part of the rows' Delassus matrix is `J_n A⁻¹ J_nᵀ = (L⁻¹ J_nᵀ)ᵀ (L⁻¹ J_nᵀ)`, assembled from the
/// 3 × 3 Gram blocks `Y_nᵀ Y_m` of the nodes the rows touch. `Y_n` is nonzero only on the reach of
/// the node's DOFs in the elimination tree of `L` (the path from them to the root; Gilbert and
/// Peierls' sparse triangular solve), so each column costs a forward solve over that path only,
/// and a Gram block a dot product over the common part of two paths. The columns depend on the
/// factor alone: they are kept across steps until the factor changes, and only the nodes new to
/// the rows are solved.
struct NodeColumns {
    /// Elimination-tree parent of each free DOF (`usize::MAX` at a root).
    parent: Vec<usize>,
    /// The longest reach of a node (DOFs), the stride of the slot storage.
    max_reach: usize,
    /// Slots: at most this many nodes cached.
    capacity: usize,
    /// Per free node (solver order, DOF / 3): its slot, or `NONE`.
    slot_of: Vec<u32>,
    /// Per slot: its free node.
    slot_node: Vec<u32>,
    /// Per slot: the length of its reach.
    reach_len: Vec<usize>,
    /// Per slot: its reach (ascending free DOFs), `max_reach` apart.
    reach: Vec<u32>,
    /// Per slot: `Y_n` on its reach, three values per reach entry, `3 max_reach` apart.
    values: Vec<f64>,
    /// Slots in use (the first `used` slots hold valid columns for the current factor).
    used: usize,
    /// Slots assigned in this build whose columns are still to be solved: `used_before..used`.
    used_before: usize,
    /// The step's nodes: per step index, its slot; per slot, its step index (`NONE` otherwise).
    step_slots: Vec<u32>,
    step_index: Vec<u32>,
    /// Per row and node end: the step index of its node (`NONE` when none or prescribed).
    row_node: Vec<[u32; 2]>,
    /// The step's node count.
    step_count: usize,
    /// Gram blocks `Y_sᵀ Y_t` of the step's nodes, row-major 3 × 3 per pair `(s, t)`, `s ≤ t`
    /// stored at `9 (s d + t)` with `d` the step's node count (at most `capacity / 2`).
    gram: Vec<f64>,
    /// Reach scratch.
    mark: Vec<bool>,
}

impl NodeColumns {
    /// Sizes the cache for the factor `l` (its pattern is fixed by the symbolic analysis) of a
    /// matrix of `free_nodes` nodes, for at most `max_step_nodes` nodes in one step's rows.
    fn new(l: &CscMatrix<f64>, free_nodes: usize, max_step_nodes: usize) -> Self {
        let nf = l.nrows();
        let (o, r) = (l.col_offsets(), l.row_indices());
        let parent: Vec<usize> = (0..nf).map(|j| if o[j + 1] > o[j] + 1 { r[o[j] + 1] } else { usize::MAX }).collect();
        let mut mark = vec![false; nf];
        let mut path = Vec::with_capacity(nf);
        let mut max_reach = 0;
        for n in 0..free_nodes {
            reach_of(&parent, 3 * n, &mut mark, &mut path);
            max_reach = max_reach.max(path.len());
            for &k in &path {
                mark[k as usize] = false;
            }
            path.clear();
        }
        let step_cap = max_step_nodes.min(free_nodes);
        let capacity = (2 * step_cap).min(free_nodes);
        NodeColumns {
            parent,
            max_reach,
            capacity,
            slot_of: vec![NONE; free_nodes],
            slot_node: vec![NONE; capacity],
            reach_len: vec![0; capacity],
            reach: vec![0; capacity * max_reach],
            values: vec![0.0; 3 * capacity * max_reach],
            used: 0,
            used_before: 0,
            step_count: 0,
            step_slots: vec![NONE; capacity],
            step_index: vec![NONE; capacity],
            row_node: vec![],
            gram: vec![0.0; 9 * step_cap * step_cap],
            mark,
        }
    }

    /// Calls `f(reach, Y, c)` for each node of row `i` (at most two): the node's elimination-tree
    /// reach, its cached columns `Y` (3 per reach entry) and its coefficient `c` in the row.
    fn for_each_row_node(&self, i: usize, coef: &[Vec3; 2], mut f: impl FnMut(&[u32], &[f64], Vec3)) {
        for a in 0..2 {
            let k = self.row_node[i][a];
            if k == NONE {
                continue;
            }
            let slot = self.step_slots[k as usize] as usize;
            let (reach, y) = self.columns(slot);
            f(reach, y, coef[a]);
        }
    }

    /// `Σ_a c_aᵀ Y_aᵀ z` over the nodes of row `i` (`coef` its node coefficients, `z` per free
    /// DOF): the row's part of `J_n L⁻ᵀ z`.
    fn row_dot(&self, i: usize, coef: &[Vec3; 2], z: &[f64]) -> f64 {
        let mut s = 0.0;
        self.for_each_row_node(i, coef, |reach, y, c| {
            for (e, &j) in reach.iter().enumerate() {
                s += (c.x * y[3 * e] + c.y * y[3 * e + 1] + c.z * y[3 * e + 2]) * z[j as usize];
            }
        });
        s
    }

    /// `w += weight Σ_a Y_a c_a` over the nodes of row `i`: the row's part of `L⁻¹ J_nᵀ y`.
    fn row_scatter(&self, i: usize, coef: &[Vec3; 2], weight: f64, w: &mut [f64]) {
        self.for_each_row_node(i, coef, |reach, y, c| {
            let c = c * weight;
            for (e, &j) in reach.iter().enumerate() {
                w[j as usize] += c.x * y[3 * e] + c.y * y[3 * e + 1] + c.z * y[3 * e + 2];
            }
        });
    }

    /// The reach and the columns (three values per reach entry) of `slot`.
    fn columns(&self, slot: usize) -> (&[u32], &[f64]) {
        let (stride, len) = (self.max_reach, self.reach_len[slot]);
        (&self.reach[slot * stride..slot * stride + len], &self.values[3 * slot * stride..3 * (slot * stride + len)])
    }

    /// Drops every cached column (the factor changed).
    fn invalidate(&mut self) {
        for s in 0..self.used {
            self.slot_of[self.slot_node[s] as usize] = NONE;
        }
        self.used = 0;
    }
}

/// The reach of the free DOFs `3 n .. 3 n + 3` (`first = 3 n`) in the elimination tree `parent`,
/// appended to `path` in ascending order (each entry marked in `mark`; the caller unmarks).
fn reach_of(parent: &[usize], first: usize, mark: &mut [bool], path: &mut Vec<u32>) {
    let start = path.len();
    for c in 0..3 {
        let mut k = first + c;
        while k != usize::MAX && !mark[k] {
            mark[k] = true;
            path.push(k as u32);
            k = parent[k];
        }
    }
    path[start..].sort_unstable();
}

/// `Y = L⁻¹ E_n` of the free node whose DOFs start at `first`, over its `reach` (ascending), into
/// `out` (three values per reach entry), with the zeroed buffer `x` (3 values per free DOF,
/// zeroed again on return).
fn node_columns(l: &CscMatrix<f64>, first: usize, reach: &[u32], x: &mut [f64], out: &mut [f64]) {
    let (offsets, rows, vals) = (l.col_offsets(), l.row_indices(), l.values());
    for c in 0..3 {
        x[3 * (first + c) + c] = 1.0;
    }
    for &j in reach {
        let j = j as usize;
        let (a, b) = (offsets[j], offsets[j + 1]);
        let d = vals[a];
        let v = [x[3 * j] / d, x[3 * j + 1] / d, x[3 * j + 2] / d];
        x[3 * j..3 * j + 3].copy_from_slice(&v);
        for p in a + 1..b {
            let (r, lv) = (3 * rows[p], vals[p]);
            x[r] -= lv * v[0];
            x[r + 1] -= lv * v[1];
            x[r + 2] -= lv * v[2];
        }
    }
    for (e, &j) in reach.iter().enumerate() {
        let j = 3 * j as usize;
        out[3 * e..3 * e + 3].copy_from_slice(&x[j..j + 3]);
        x[j..j + 3].fill(0.0);
    }
}

/// The 3 × 3 block `Y_sᵀ Y_t` (row-major) of two node columns over their reaches (ascending; the
/// columns vanish elsewhere), summed over the common entries in ascending order.
fn gram_block(reach_s: &[u32], ys: &[f64], reach_t: &[u32], yt: &[f64], out: &mut [f64]) {
    let mut g = [0.0; 9];
    let (mut a, mut b) = (0, 0);
    while a < reach_s.len() && b < reach_t.len() {
        match reach_s[a].cmp(&reach_t[b]) {
            std::cmp::Ordering::Less => a += 1,
            std::cmp::Ordering::Greater => b += 1,
            std::cmp::Ordering::Equal => {
                let (u, v) = (&ys[3 * a..3 * a + 3], &yt[3 * b..3 * b + 3]);
                for r in 0..3 {
                    for c in 0..3 {
                        g[3 * r + c] += u[r] * v[c];
                    }
                }
                a += 1;
                b += 1;
            }
        }
    }
    out.copy_from_slice(&g);
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
    fn node_column_gram_blocks_equal_the_inverse_blocks() {
        // A = a 3D grid Laplacian of 4 × 4 × 3 nodes with 3 DOFs per node (coupled within the
        // node), plus a mass term: SPD; ordered by AMD like the scheme's node matrix
        let (nx, ny, nz) = (4, 4, 3);
        let nn = nx * ny * nz;
        let id = |i: usize, j: usize, k: usize| (i * ny + j) * nz + k;
        let mut adj = vec![vec![]; nn];
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    let a = id(i, j, k);
                    for (di, dj, dk) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        let (b0, b1, b2) = (i + di, j + dj, k + dk);
                        if b0 < nx && b1 < ny && b2 < nz {
                            let b = id(b0, b1, b2);
                            adj[a].push(b);
                            adj[b].push(a);
                        }
                    }
                }
            }
        }
        let order = fill_reducing_order(&adj);
        let mut pos = vec![0; nn];
        for (k, &v) in order.iter().enumerate() {
            pos[v] = k;
        }
        let n = 3 * nn;
        let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
        for a in 0..nn {
            let pa = pos[a];
            for c in 0..3 {
                for d in 0..3 {
                    dense[(3 * pa + c, 3 * pa + d)] += if c == d { 7.0 + adj[a].len() as f64 } else { 0.3 + 0.1 * (c + d) as f64 };
                }
            }
            for &b in &adj[a] {
                let pb = pos[b];
                for c in 0..3 {
                    dense[(3 * pa + c, 3 * pb + c)] -= 1.0;
                    dense[(3 * pa + c, 3 * pb + (c + 1) % 3)] -= 0.2;
                    dense[(3 * pb + (c + 1) % 3, 3 * pa + c)] -= 0.2;
                }
            }
        }
        // structural entries for the whole 3 × 3 blocks, as in the assembled node matrix
        let csc = CscMatrix::from(&dense);
        let chol = CscCholesky::factor(&csc).unwrap();
        let l = chol.l();
        let mut nc = NodeColumns::new(l, nn, nn);
        assert!(nc.max_reach < n, "the reach of a node is shorter than the matrix: {}", nc.max_reach);
        let mut x = vec![0.0; 3 * n];
        let cols: Vec<(Vec<u32>, Vec<f64>)> = (0..nn)
            .map(|p| {
                let mut path = vec![];
                reach_of(&nc.parent, 3 * p, &mut nc.mark, &mut path);
                for &k in &path {
                    nc.mark[k as usize] = false;
                }
                let mut y = vec![0.0; 3 * path.len()];
                node_columns(l, 3 * p, &path, &mut x, &mut y);
                (path, y)
            })
            .collect();
        assert!(x.iter().all(|&v| v == 0.0), "the solve buffer is left zeroed");
        // E_pᵀ A⁻¹ E_q from full solves
        for p in (0..nn).step_by(5) {
            for q in (0..nn).step_by(3) {
                let mut g = [0.0; 9];
                gram_block(&cols[p].0, &cols[p].1, &cols[q].0, &cols[q].1, &mut g);
                for d in 0..3 {
                    let mut e = vec![0.0; n];
                    e[3 * q + d] = 1.0;
                    chol_solve(l, &mut e, 0);
                    for c in 0..3 {
                        let exact = e[3 * p + c];
                        assert!((g[3 * c + d] - exact).abs() < 1e-13 * (1.0 + exact.abs()), "nodes {p}, {q}, ({c}, {d}): {} vs {exact}", g[3 * c + d]);
                    }
                }
            }
        }
    }

    #[test]
    fn the_node_factor_is_bit_identical_to_csc_cholesky_and_refuses_an_indefinite_matrix() {
        // a banded SPD matrix with a far coupling, refactored with new values
        let n = 40;
        let build = |shift: f64| {
            let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
            for i in 0..n {
                dense[(i, i)] = 4.0 + shift + 0.01 * i as f64;
                for d in [1, 3, 7] {
                    if i + d < n {
                        let v = -0.5 / d as f64 - 0.001 * (i as f64);
                        dense[(i, i + d)] = v;
                        dense[(i + d, i)] = v;
                    }
                }
            }
            dense[(0, n - 1)] = 0.3;
            dense[(n - 1, 0)] = 0.3;
            CscMatrix::from(&dense)
        };
        let a = build(0.0);
        let mut ours = NodeFactor::new(&a).unwrap();
        let mut theirs = CscCholesky::factor(&a).unwrap();
        let b = build(0.37);
        ours.refactor(b.values()).unwrap();
        theirs.refactor(b.values()).unwrap();
        assert_eq!(ours.l().col_offsets(), theirs.l().col_offsets());
        assert_eq!(ours.l().row_indices(), theirs.l().row_indices());
        let same = ours.l().values().iter().zip(theirs.l().values()).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "the factors differ");
        // L Lᵀ reproduces the matrix
        let l = nalgebra::DMatrix::from(ours.l());
        let diff = (&l * l.transpose() - nalgebra::DMatrix::from(&b)).abs().max();
        assert!(diff < 1e-12, "|L Lᵀ − A| = {diff}");
        // an indefinite matrix (diagonal −1 at the end) is refused
        let bad = build(-100.0);
        assert!(ours.refactor(bad.values()).is_err());
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
