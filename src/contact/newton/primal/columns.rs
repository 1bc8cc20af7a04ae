//! The node-column cache of the primal form's Delassus build (step 4 of the outer iteration in
//! the module docs): the columns `Y_n = L⁻¹ E_n` of the rows' nodes, each solved over its reach in
//! the elimination tree of `L`, kept until the factor changes, and their 3 × 3 Gram blocks.

use super::NONE;
use crate::math::Vec3;
use nalgebra_sparse::CscMatrix;


/// The node columns of the Delassus build, `Y_n = L⁻¹ E_n` (`E_n` the three unit columns of a
/// free node's DOFs, `A = L Lᵀ` the node matrix's factor in the solver's order), so that the node
/// part of the rows' Delassus matrix is `J_n A⁻¹ J_nᵀ = (L⁻¹ J_nᵀ)ᵀ (L⁻¹ J_nᵀ)`, assembled from the
/// 3 × 3 Gram blocks `Y_nᵀ Y_m` of the nodes the rows touch. `Y_n` is nonzero only on the reach of
/// the node's DOFs in the elimination tree of `L` (the path from them to the root; Gilbert and
/// Peierls' sparse triangular solve), so each column costs a forward solve over that path only,
/// and a Gram block a dot product over the common part of two paths. The columns depend on the
/// factor alone: they are kept across steps until the factor changes, and only the nodes new to
/// the rows are solved.
pub(super) struct NodeColumns {
    /// Elimination-tree parent of each free DOF (`usize::MAX` at a root).
    pub(super) parent: Vec<usize>,
    /// The longest reach of a node (DOFs), the stride of the slot storage.
    pub(super) max_reach: usize,
    /// Slots: at most this many nodes cached.
    pub(super) capacity: usize,
    /// Per free node (solver order, DOF / 3): its slot, or `NONE`.
    pub(super) slot_of: Vec<u32>,
    /// Per slot: its free node.
    pub(super) slot_node: Vec<u32>,
    /// Per slot: the length of its reach.
    pub(super) reach_len: Vec<usize>,
    /// Per slot: its reach (ascending free DOFs), `max_reach` apart.
    pub(super) reach: Vec<u32>,
    /// Per slot: `Y_n` on its reach, three values per reach entry, `3 max_reach` apart.
    pub(super) values: Vec<f64>,
    /// Slots in use (the first `used` slots hold valid columns for the current factor).
    pub(super) used: usize,
    /// Slots assigned in this build whose columns are still to be solved: `used_before..used`.
    pub(super) used_before: usize,
    /// The step's nodes: per step index, its slot; per slot, its step index (`NONE` otherwise).
    pub(super) step_slots: Vec<u32>,
    pub(super) step_index: Vec<u32>,
    /// Per row and node end: the step index of its node (`NONE` when none or prescribed).
    pub(super) row_node: Vec<[u32; 2]>,
    /// The step's node count.
    pub(super) step_count: usize,
    /// Gram blocks `Y_sᵀ Y_t` of the step's nodes, row-major 3 × 3 per pair `(s, t)`, `s ≤ t`
    /// stored at `9 (s d + t)` with `d` the step's node count (at most `capacity / 2`).
    pub(super) gram: Vec<f64>,
    /// Reach scratch.
    pub(super) mark: Vec<bool>,
}

impl NodeColumns {
    /// Sizes the cache for the factor `l` (its pattern is fixed by the symbolic analysis) of a
    /// matrix of `free_nodes` nodes, for at most `max_step_nodes` nodes in one step's rows.
    pub(super) fn new(l: &CscMatrix<f64>, free_nodes: usize, max_step_nodes: usize) -> Self {
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
    pub(super) fn for_each_row_node(&self, i: usize, coef: &[Vec3; 2], mut f: impl FnMut(&[u32], &[f64], Vec3)) {
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
    pub(super) fn row_dot(&self, i: usize, coef: &[Vec3; 2], z: &[f64]) -> f64 {
        let mut s = 0.0;
        self.for_each_row_node(i, coef, |reach, y, c| {
            for (e, &j) in reach.iter().enumerate() {
                s += (c.x * y[3 * e] + c.y * y[3 * e + 1] + c.z * y[3 * e + 2]) * z[j as usize];
            }
        });
        s
    }

    /// `w += weight Σ_a Y_a c_a` over the nodes of row `i`: the row's part of `L⁻¹ J_nᵀ y`.
    pub(super) fn row_scatter(&self, i: usize, coef: &[Vec3; 2], weight: f64, w: &mut [f64]) {
        self.for_each_row_node(i, coef, |reach, y, c| {
            let c = c * weight;
            for (e, &j) in reach.iter().enumerate() {
                w[j as usize] += c.x * y[3 * e] + c.y * y[3 * e + 1] + c.z * y[3 * e + 2];
            }
        });
    }

    /// The reach and the columns (three values per reach entry) of `slot`.
    pub(super) fn columns(&self, slot: usize) -> (&[u32], &[f64]) {
        let (stride, len) = (self.max_reach, self.reach_len[slot]);
        (&self.reach[slot * stride..slot * stride + len], &self.values[3 * slot * stride..3 * (slot * stride + len)])
    }

    /// Drops every cached column (the factor changed).
    pub(super) fn invalidate(&mut self) {
        for s in 0..self.used {
            self.slot_of[self.slot_node[s] as usize] = NONE;
        }
        self.used = 0;
    }
}

/// The reach of the free DOFs `3 n .. 3 n + 3` (`first = 3 n`) in the elimination tree `parent`,
/// appended to `path` in ascending order (each entry marked in `mark`; the caller unmarks).
pub(super) fn reach_of(parent: &[usize], first: usize, mark: &mut [bool], path: &mut Vec<u32>) {
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
pub(super) fn node_columns(l: &CscMatrix<f64>, first: usize, reach: &[u32], x: &mut [f64], out: &mut [f64]) {
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
pub(super) fn gram_block(reach_s: &[u32], ys: &[f64], reach_t: &[u32], yt: &[f64], out: &mut [f64]) {
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
