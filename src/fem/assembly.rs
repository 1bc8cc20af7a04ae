//! The step system of the deformable bodies, `A v⁺ = b + Jᵀ λ` ([`FemSystem`]), and its
//! assembly (see the module docs of [`crate::fem`] for the discretisation and the time
//! stepping).
//!
//! # The rotated stiffness from rotated gradients
//! The co-rotational and Neo-Hookean tangent block of element `e` between its nodes `a` and `b`
//! is `R K_ab Rᵀ` with the rest block `K_ab = V (μ (g_a·g_b) I + μ g_b g_aᵀ + λ g_a g_bᵀ)`.
//! With the rotated gradients `r_a = R g_a` (and `g_a·g_b = r_a·r_b`, `R` orthogonal) it is
//!
//! ```text
//!   R K_ab Rᵀ = V (μ (r_a·r_b) I + μ r_b r_aᵀ + λ r_a r_bᵀ)
//! ```
//!
//! so an element keeps only its four `r_a` and `k V μ`, `k V λ` (`k` the step's stiffness
//! scale), and each of its 16 blocks costs 18 multiply-adds where it is added to `A`, instead of
//! two 3×3 products per block. Likewise the co-rotational force
//! `f_a = R Σ_b K_ab u_b` (`u_b = Rᵀ x_b − X_b`) is `f_a = V R P g_a` with the rotated-back
//! displacement gradient `E = Σ_b u_b g_bᵀ` and the linear stress `P = μ (E + Eᵀ) + λ tr(E) I`
//! (each of the three terms of `K_ab` summed over `b`: `E g_a`, `Eᵀ g_a`, `tr(E) g_a`).
//! Stable Neo-Hookean has no rotation to factor out: its 16 world-frame blocks are kept whole.
//!
//! # Order of the sums
//! Every entry of `A` and `b` is accumulated in one fixed order — first the mass term, then the
//! elements in their global order — whether the assembly runs serially (each element computed
//! just before its scatter) or on a pool (elements in parallel into a buffer, then each node's
//! three rows gathered from its elements, nodes in parallel). Both give bit-identical `A` and `b`.

use super::{Deformable, ElasticModel, FemIntegrator, FemMaterial, NodeAttachment};
use crate::math::{Mat3, Vec3};
use nalgebra_sparse::CsrMatrix;

/// The deformable part of a step's linear system, `A v⁺ = b + Jᵀ λ` (impulse units: A in kg,
/// b in N·s), for all deformable bodies of a model (block diagonal per body).
///
/// The sparsity pattern (3×3 blocks between nodes sharing an element) is built once; assembly
/// only overwrites values, so stepping allocates nothing.
pub struct FemSystem {
    /// System matrix (3 rows per node; kg).
    pub a: CsrMatrix<f64>,
    /// Right-hand side (N·s).
    pub b: Vec<f64>,
    /// The first column of each 3×3 block of `a`, compactly
    /// ([`crate::math::sparse::node_block_columns`]), for [`super::block3_mul_rows`].
    pub block_cols: Vec<u32>,
    /// Per element (global order over bodies) and node pair `(a, b)`: the position of node b's
    /// 3-column block within node a's rows.
    block_pos: Vec<[[u32; 4]; 4]>,
    /// Per node: the position of its own block within its rows.
    diag_pos: Vec<u32>,
    /// Per node `i`, `node_elements[node_element_start[i]..node_element_start[i + 1]]` are its
    /// elements, in increasing global order, each as `4 e + k` (element `e`, local index `k`):
    /// the parallel gather of [`FemSystem::assemble_on`].
    node_element_start: Vec<u32>,
    /// See `node_element_start`.
    node_elements: Vec<u32>,
    /// Element rotations of the last assembly (the identity for Stable Neo-Hookean elements,
    /// which need none).
    pub rotation: Vec<Mat3>,
    /// Per element (global order): its terms, the pool's buffer of
    /// [`FemSystem::assemble_on`].
    elements: Vec<ElementTerms>,
    /// Per element (global order) when some body is Stable Neo-Hookean, else empty: its 16
    /// scaled world-frame tangent blocks (kg), the pool's buffer.
    world_blocks: Vec<WorldBlocks>,
    /// Per node: `true` when its velocity is prescribed (pinned to the world or driven one-way
    /// by a link; two-way welded nodes are free unknowns held by [`super::FemWeld`] constraints).
    pub prescribed: Vec<bool>,
    /// Prescribed velocity of pinned and one-way driven nodes (m/s, world, 3 per node).
    pub prescribed_velocity: Vec<f64>,
    /// The time discretisation of the elastic and damping forces.
    pub integrator: FemIntegrator,
}

/// The 16 tangent blocks `(a, b)` of one element (kg).
type WorldBlocks = [[Mat3; 4]; 4];

impl FemSystem {
    /// Builds the pattern for the deformables of a model.
    pub fn new(bodies: &[Deformable]) -> Self {
        let n_nodes: usize = bodies.iter().map(|b| b.num_nodes()).sum();
        let mut neighbours: Vec<Vec<usize>> = vec![vec![]; n_nodes];
        let mut incident: Vec<Vec<u32>> = vec![vec![]; n_nodes];
        let mut e_global = 0u32;
        for d in bodies {
            for t in &d.tets {
                for (ka, &a) in t.iter().enumerate() {
                    incident[d.node_start + a].push(4 * e_global + ka as u32);
                    for &b in t {
                        neighbours[d.node_start + a].push(d.node_start + b);
                    }
                }
                e_global += 1;
            }
        }
        for (i, nb) in neighbours.iter_mut().enumerate() {
            nb.push(i);
            nb.sort_unstable();
            nb.dedup();
        }
        let n = 3 * n_nodes;
        let mut offsets = Vec::with_capacity(n + 1);
        let mut cols = vec![];
        offsets.push(0);
        for nb in neighbours.iter() {
            for _ in 0..3 {
                for &j in nb {
                    cols.extend_from_slice(&[3 * j, 3 * j + 1, 3 * j + 2]);
                }
                offsets.push(cols.len());
            }
        }
        let nnz = cols.len();
        let diag_pos = neighbours.iter().enumerate().map(|(i, nb)| nb.binary_search(&i).unwrap() as u32).collect();
        let a = CsrMatrix::try_from_csr_data(n, n, offsets, cols, vec![0.0; nnz]).expect("valid CSR pattern");
        let mut block_pos = vec![];
        for d in bodies {
            for t in &d.tets {
                let mut p = [[0u32; 4]; 4];
                for (ka, &a) in t.iter().enumerate() {
                    let nb = &neighbours[d.node_start + a];
                    for (kb, &b) in t.iter().enumerate() {
                        p[ka][kb] = nb.binary_search(&(d.node_start + b)).unwrap() as u32;
                    }
                }
                block_pos.push(p);
            }
        }
        let mut node_element_start = Vec::with_capacity(n_nodes + 1);
        node_element_start.push(0);
        let mut node_elements = vec![];
        for inc in &incident {
            node_elements.extend_from_slice(inc);
            node_element_start.push(node_elements.len() as u32);
        }
        let mut prescribed = vec![false; n_nodes];
        for d in bodies {
            for (i, at) in d.attachment.iter().enumerate() {
                prescribed[d.node_start + i] = matches!(at, NodeAttachment::World | NodeAttachment::BodyOneWay(..));
            }
        }
        let n_elements = e_global as usize;
        let any_world = bodies.iter().any(|d| d.material.model == ElasticModel::StableNeoHookean);
        FemSystem {
            block_cols: crate::math::sparse::node_block_columns(&a),
            a,
            b: vec![0.0; n],
            block_pos,
            diag_pos,
            node_element_start,
            node_elements,
            rotation: vec![Mat3::identity(); n_elements],
            elements: vec![ElementTerms::ZERO; n_elements],
            world_blocks: if any_world { vec![[[Mat3::zeros(); 4]; 4]; n_elements] } else { vec![] },
            prescribed,
            prescribed_velocity: vec![0.0; n],
            integrator: FemIntegrator::default(),
        }
    }

    /// Number of scalar unknowns (3 per node).
    pub fn dim(&self) -> usize {
        self.b.len()
    }

    /// Assembles `A` and `b` at positions `x` and velocities `v` (3 per node, m and m/s) for a
    /// step `h` (s) under `gravity` (m/s²), serially: [`FemSystem::assemble_on`] without a pool.
    /// Allocates nothing.
    pub fn assemble(&mut self, bodies: &[Deformable], x: &[f64], v: &[f64], h: f64, gravity: &Vec3) {
        self.assemble_on(bodies, x, v, h, gravity, None);
    }

    /// Assembles `A` and `b` (see [`FemSystem::assemble`]).
    ///
    /// Serially (no `pool`, or a body of at most [`ASSEMBLY_CHUNK`] elements), each element's
    /// terms are computed into a stack buffer just before they are scattered into `A` and `b`.
    /// With a `pool`, a larger body is assembled in two parallel phases:
    ///
    /// 1. every element's terms (rotation, nodal forces, rotated gradients or world blocks) into
    ///    a per-element buffer sized in [`FemSystem::new`], in fixed chunks of
    ///    [`ASSEMBLY_CHUNK`] elements;
    /// 2. each node's three rows of `A` and `b` gathered from its elements in their global
    ///    order, in fixed chunks of [`GATHER_CHUNK`] nodes.
    ///
    /// One function computes an element and one adds its blocks in every case, and each entry's
    /// sum runs in the same order (see the module docs): `A`, `b` and the rotations are
    /// bit-identical for any pool. Without a pool it allocates nothing; with one, rayon
    /// allocates inside its pool.
    pub fn assemble_on(&mut self, bodies: &[Deformable], x: &[f64], v: &[f64], h: f64, gravity: &Vec3, pool: Option<&rayon::ThreadPool>) {
        let integrator = self.integrator;
        let mut e_start = 0;
        for d in bodies {
            let scales = StepScales::new(integrator, h, &d.material);
            let n_e = d.tets.len();
            match pool {
                Some(p) if n_e > ASSEMBLY_CHUNK => p.install(|| self.assemble_body_parallel(d, e_start, x, v, h, gravity, &scales)),
                _ => self.assemble_body_serial(d, e_start, x, v, h, gravity, &scales),
            }
            e_start += n_e;
        }
    }

    /// One body's rows, each element computed just before its scatter (first element: global
    /// index `e_start`).
    #[allow(clippy::too_many_arguments)]
    fn assemble_body_serial(&mut self, d: &Deformable, e_start: usize, x: &[f64], v: &[f64], h: f64, gravity: &Vec3, scales: &StepScales) {
        let s = d.node_start;
        let FemSystem { a, b, block_pos, diag_pos, rotation, .. } = self;
        let (offsets, _, values) = a.csr_data_mut();
        let rows = offsets[3 * s]..offsets[3 * (s + d.num_nodes())];
        values[rows].fill(0.0);
        for i in 0..d.num_nodes() {
            let gi = s + i;
            node_mass_terms(d, i, v, h, gravity, scales, &mut b[3 * gi..3 * gi + 3]);
            for c in 0..3 {
                values[offsets[3 * gi + c] + 3 * diag_pos[gi] as usize + c] += scales.m * d.mass[i];
            }
        }
        let mut terms = ElementTerms::ZERO;
        let mut world = [[Mat3::zeros(); 4]; 4];
        for (e, t) in d.tets.iter().enumerate() {
            element_terms(d, e, x, v, scales, &mut terms, &mut world);
            rotation[e_start + e] = terms.rotation;
            for ka in 0..4 {
                let gi = s + t[ka];
                add_element_rows(&terms, &world, ka, h, &block_pos[e_start + e][ka], |c| offsets[3 * gi + c], values, &mut b[3 * gi..3 * gi + 3]);
            }
        }
    }

    /// One body's rows in the two parallel phases of [`FemSystem::assemble_on`] (call inside the
    /// pool).
    #[allow(clippy::too_many_arguments)]
    fn assemble_body_parallel(&mut self, d: &Deformable, e_start: usize, x: &[f64], v: &[f64], h: f64, gravity: &Vec3, scales: &StepScales) {
        use rayon::prelude::*;
        let n_e = d.tets.len();
        let FemSystem { a, b, block_pos, diag_pos, node_element_start, node_elements, rotation, elements, world_blocks, .. } = self;
        // phase 1: the elements
        let terms = &mut elements[e_start..e_start + n_e];
        let rot = &mut rotation[e_start..e_start + n_e];
        let compute = |k: usize, i: usize, t: &mut ElementTerms, w: &mut WorldBlocks, r: &mut Mat3| {
            element_terms(d, k * ASSEMBLY_CHUNK + i, x, v, scales, t, w);
            *r = t.rotation;
        };
        if d.material.model == ElasticModel::StableNeoHookean {
            let world = &mut world_blocks[e_start..e_start + n_e];
            terms.par_chunks_mut(ASSEMBLY_CHUNK).zip(rot.par_chunks_mut(ASSEMBLY_CHUNK)).zip(world.par_chunks_mut(ASSEMBLY_CHUNK)).enumerate().for_each(|(k, ((tc, rc), wc))| {
                for (i, ((t, r), w)) in tc.iter_mut().zip(rc.iter_mut()).zip(wc.iter_mut()).enumerate() {
                    compute(k, i, t, w, r);
                }
            });
        } else {
            terms.par_chunks_mut(ASSEMBLY_CHUNK).zip(rot.par_chunks_mut(ASSEMBLY_CHUNK)).enumerate().for_each(|(k, (tc, rc))| {
                let mut unused = [[Mat3::zeros(); 4]; 4];
                for (i, (t, r)) in tc.iter_mut().zip(rc.iter_mut()).enumerate() {
                    compute(k, i, t, &mut unused, r);
                }
            });
        }
        // phase 2: each node's rows from its elements
        let s = d.node_start;
        let n = d.num_nodes();
        let (offsets, _, values) = a.csr_data_mut();
        let gather = Gather { d, h, gravity, v, scales, offsets, diag_pos, block_pos, node_element_start, node_elements, elements, world_blocks };
        let rows = offsets[3 * s]..offsets[3 * (s + n)];
        gather.nodes(s..s + n, &mut values[rows.clone()], rows.start, &mut b[3 * s..3 * (s + n)]);
    }
}

/// Nodes per parallel work item of the gather phase of [`FemSystem::assemble_on`] (the results
/// do not depend on it).
pub const GATHER_CHUNK: usize = 96;

/// What the gather phase of [`FemSystem::assemble_on`] reads (one body).
struct Gather<'a> {
    d: &'a Deformable,
    h: f64,
    gravity: &'a Vec3,
    v: &'a [f64],
    scales: &'a StepScales,
    offsets: &'a [usize],
    diag_pos: &'a [u32],
    block_pos: &'a [[[u32; 4]; 4]],
    node_element_start: &'a [u32],
    node_elements: &'a [u32],
    elements: &'a [ElementTerms],
    world_blocks: &'a [WorldBlocks],
}

impl Gather<'_> {
    /// Rows of the global nodes `nodes` into `values` (their CSR values, the first at global
    /// position `base`) and `b` (their 3 entries each); halves in parallel down to
    /// [`GATHER_CHUNK`] nodes.
    fn nodes(&self, nodes: std::ops::Range<usize>, values: &mut [f64], base: usize, b: &mut [f64]) {
        if nodes.len() > GATHER_CHUNK {
            // split at a multiple of the chunk, so the work items do not depend on the depth
            let mid = nodes.start + (nodes.len() / 2).div_ceil(GATHER_CHUNK) * GATHER_CHUNK;
            let mid_base = self.offsets[3 * mid];
            let (v0, v1) = values.split_at_mut(mid_base - base);
            let (b0, b1) = b.split_at_mut(3 * (mid - nodes.start));
            rayon::join(|| self.nodes(nodes.start..mid, v0, base, b0), || self.nodes(mid..nodes.end, v1, mid_base, b1));
            return;
        }
        values.fill(0.0);
        let s = self.d.node_start;
        let empty = [[Mat3::zeros(); 4]; 4];
        for (k, gi) in nodes.clone().enumerate() {
            let i = gi - s;
            let b_i = &mut b[3 * k..3 * k + 3];
            node_mass_terms(self.d, i, self.v, self.h, self.gravity, self.scales, b_i);
            for c in 0..3 {
                values[self.offsets[3 * gi + c] - base + 3 * self.diag_pos[gi] as usize + c] += self.scales.m * self.d.mass[i];
            }
            let incident = &self.node_elements[self.node_element_start[gi] as usize..self.node_element_start[gi + 1] as usize];
            for &code in incident {
                let (e, ka) = ((code / 4) as usize, (code % 4) as usize);
                let world = self.world_blocks.get(e).unwrap_or(&empty);
                add_element_rows(&self.elements[e], world, ka, self.h, &self.block_pos[e][ka], |c| self.offsets[3 * gi + c] - base, values, b_i);
            }
        }
    }
}

/// Node `i`'s (local index) mass and external terms of `b`: `b_i = mv m_i v_i + h m_i g` (N·s).
fn node_mass_terms(d: &Deformable, i: usize, v: &[f64], h: f64, gravity: &Vec3, scales: &StepScales, b_i: &mut [f64]) {
    let gi = d.node_start + i;
    let m = d.mass[i];
    for c in 0..3 {
        b_i[c] = scales.mv * m * v[3 * gi + c] + h * m * gravity[c];
    }
}

/// Adds element `terms`' contribution to the three rows of its local node `ka`: the blocks
/// `(ka, kb)` into `values` at `row_start(c) + 3 pos[kb]` (row `c` of the node) and
/// `−h f_ka − (K v)_ka` into `b_a`. The one place an element's blocks enter `A`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn add_element_rows(terms: &ElementTerms, world: &WorldBlocks, ka: usize, h: f64, pos: &[u32; 4], row_start: impl Fn(usize) -> usize, values: &mut [f64], b_a: &mut [f64]) {
    for c in 0..3 {
        b_a[c] -= h * terms.force[ka][c];
    }
    if terms.has_kv {
        for c in 0..3 {
            b_a[c] -= terms.kv[ka][c];
        }
    }
    let rows = [row_start(0), row_start(1), row_start(2)];
    for kb in 0..4 {
        let block = terms.block(world, ka, kb);
        let p = 3 * pos[kb] as usize;
        for ra in 0..3 {
            let at = rows[ra] + p;
            let vals = &mut values[at..at + 3];
            for cb in 0..3 {
                vals[cb] += block[(ra, cb)];
            }
        }
    }
}

/// Elements per parallel work item of [`FemSystem::assemble_on`] (a fixed chunking; the results
/// do not depend on it).
pub const ASSEMBLY_CHUNK: usize = 128;

/// The coefficients of one body's step system: `A = m M + k K`,
/// `b = mv M v + h (f_ext − f_int) − kv K v` (see the module docs, "Time stepping").
struct StepScales {
    /// Mass scale `m` (1).
    m: f64,
    /// Stiffness scale `k` (s²).
    k: f64,
    /// Scale of the `K v` term of `b` (s²; 0 for backward Euler).
    kv: f64,
    /// Scale of the momentum `M v` in `b` (1).
    mv: f64,
}

impl StepScales {
    fn new(integrator: FemIntegrator, h: f64, material: &FemMaterial) -> Self {
        let (alpha, beta) = (material.rayleigh_mass_1_s, material.rayleigh_stiffness_s);
        let (m, k, kv) = match integrator {
            FemIntegrator::BackwardEuler => (1.0 + h * alpha, h * h + h * beta, 0.0),
            FemIntegrator::Midpoint => (1.0 + 0.5 * h * alpha, 0.25 * h * h + 0.5 * h * beta, 0.25 * h * h + 0.5 * h * beta),
        };
        let mv = match integrator {
            FemIntegrator::BackwardEuler => 1.0,
            FemIntegrator::Midpoint => 1.0 - 0.5 * h * alpha,
        };
        StepScales { m, k, kv, mv }
    }
}

/// What one element contributes to the step system (computed by `element_terms`).
#[derive(Clone, Copy)]
struct ElementTerms {
    /// Polar rotation `R` of the deformation gradient (identity for Stable Neo-Hookean).
    rotation: Mat3,
    /// Internal force `f_a` on each of the 4 nodes (N, world).
    force: [Vec3; 4],
    /// Rotated gradients `r_a = R g_a` (1/m; unused for Stable Neo-Hookean).
    rotated_grad: [Vec3; 4],
    /// `k V μ` and `k V λ` (kg·m²): the tangent block is
    /// `k R K_ab Rᵀ = kVμ (r_a·r_b) I + kVμ r_b r_aᵀ + kVλ r_a r_bᵀ` (kg).
    k_mu: f64,
    /// See `k_mu`.
    k_lambda: f64,
    /// The tangent blocks are the element's world blocks (Stable Neo-Hookean), not the rotated
    /// rest blocks.
    world: bool,
    /// `Σ_b block(a, b) v_b` (N·s), the midpoint integrator's `K v` term, when `has_kv`.
    kv: [Vec3; 4],
    /// The integrator has a `K v` term (midpoint).
    has_kv: bool,
}

impl ElementTerms {
    const ZERO: ElementTerms = ElementTerms {
        rotation: Mat3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        force: [Vec3::new(0.0, 0.0, 0.0); 4],
        rotated_grad: [Vec3::new(0.0, 0.0, 0.0); 4],
        k_mu: 0.0,
        k_lambda: 0.0,
        world: false,
        kv: [Vec3::new(0.0, 0.0, 0.0); 4],
        has_kv: false,
    };

    /// The scaled tangent block `(a, b)` (kg): from `world` (this element's world blocks) for
    /// Stable Neo-Hookean, else from the rotated gradients (module docs).
    #[inline(always)]
    fn block(&self, world: &WorldBlocks, a: usize, b: usize) -> Mat3 {
        if self.world {
            return world[a][b];
        }
        let (ra, rb) = (&self.rotated_grad[a], &self.rotated_grad[b]);
        let d = self.k_mu * ra.dot(rb);
        let (p, q) = (rb * self.k_mu, ra * self.k_lambda);
        Mat3::from_fn(|i, j| p[i] * ra[j] + q[i] * rb[j] + if i == j { d } else { 0.0 })
    }
}

/// Element `e` of body `d` at positions `x` and velocities `v` (global, 3 per node): its terms
/// into `out`, and for Stable Neo-Hookean its scaled world blocks into `world`. The one
/// implementation of the element computation, for the serial and the parallel path.
fn element_terms(d: &Deformable, e: usize, x: &[f64], v: &[f64], scales: &StepScales, out: &mut ElementTerms, world: &mut WorldBlocks) {
    let s = d.node_start;
    let t = &d.tets[e];
    let p = |k: usize| Vec3::new(x[3 * (s + t[k])], x[3 * (s + t[k]) + 1], x[3 * (s + t[k]) + 2]);
    let xs = [p(0), p(1), p(2), p(3)];
    let g = &d.grads[e];
    let vol = d.volume[e];
    let f_def = xs[0] * g[0].transpose() + xs[1] * g[1].transpose() + xs[2] * g[2].transpose() + xs[3] * g[3].transpose();
    let (lambda, mu) = (d.material.lame_lambda(), d.material.lame_mu());
    out.world = d.material.model == ElasticModel::StableNeoHookean;
    out.has_kv = scales.kv != 0.0;
    if out.world {
        // world-frame blocks of the projected Hessian, no rotation
        let law = super::stable_neo_hookean::StableNeoHookean::from_lame(lambda, mu);
        let (forces, k) = law.element(&f_def, g, vol);
        out.rotation = Mat3::identity();
        out.force = forces;
        for ka in 0..4 {
            for kb in 0..4 {
                world[ka][kb] = k[ka][kb] * scales.k;
            }
        }
    } else {
        let r = polar_rotation_fast(&f_def);
        out.rotation = r;
        out.rotated_grad = [r * g[0], r * g[1], r * g[2], r * g[3]];
        out.k_mu = scales.k * vol * mu;
        out.k_lambda = scales.k * vol * lambda;
        out.force = match d.material.model {
            // f_a = V R P g_a, P = μ (E + Eᵀ) + λ tr(E) I, E = Σ_b (Rᵀ x_b − X_b) g_bᵀ
            ElasticModel::Corotational => {
                let rt = r.transpose();
                let u = [rt * xs[0] - d.rest[t[0]], rt * xs[1] - d.rest[t[1]], rt * xs[2] - d.rest[t[2]], rt * xs[3] - d.rest[t[3]]];
                let strain = u[0] * g[0].transpose() + u[1] * g[1].transpose() + u[2] * g[2].transpose() + u[3] * g[3].transpose();
                let stress = (strain + strain.transpose()) * mu + Mat3::identity() * (lambda * strain.trace());
                let rp = r * stress * vol;
                [rp * g[0], rp * g[1], rp * g[2], rp * g[3]]
            }
            _ => {
                // Neo-Hookean: the exact force of the compressible law
                let j = f_def.determinant().max(1e-6);
                let f_inv_t = f_def.try_inverse().map(|m| m.transpose()).unwrap_or_else(Mat3::zeros);
                let pk1 = (f_def - f_inv_t) * mu + f_inv_t * (lambda * j.ln());
                g.map(|ga| pk1 * ga * vol)
            }
        };
    }
    if out.has_kv {
        let vb = [0, 1, 2, 3].map(|k| Vec3::new(v[3 * (s + t[k])], v[3 * (s + t[k]) + 1], v[3 * (s + t[k]) + 2]));
        let kv_scale = scales.kv / scales.k;
        for ka in 0..4 {
            let mut sum = Vec3::zeros();
            for kb in 0..4 {
                sum += out.block(world, ka, kb) * vb[kb];
            }
            out.kv[ka] = sum * kv_scale;
        }
    }
}

/// Rotation of the polar decomposition `F = R S` (proper: `det R = +1`, also for inverted
/// elements, where the singular vector of the smallest singular value is flipped).
pub fn polar_rotation(f: &Mat3) -> Mat3 {
    let svd = f.svd(true, true);
    let (mut u, v_t) = (svd.u.unwrap(), svd.v_t.unwrap());
    let r = u * v_t;
    if r.determinant() < 0.0 {
        // nalgebra sorts singular values in decreasing order: flip the last column of U
        let mut c = u.column_mut(2);
        c *= -1.0;
        return u * v_t;
    }
    r
}

/// [`polar_rotation`] by Newton's iteration for the orthogonal polar factor,
/// `X ← (X + X⁻ᵀ)/2` from `X = F` (Higham, "Computing the polar decomposition — with
/// applications", SIAM J. Sci. Stat. Comput. 7, 1986), with `X⁻ᵀ` from the cofactors (rows
/// `x₁×x₂, x₂×x₀, x₀×x₁` over `det X`, `xᵢ` the rows of `X`). The convergence is quadratic,
/// `‖X_{k+1} − R‖ ≈ ‖X_k − R‖² / (2 σ_min)`, and each change `‖X_{k+1} − X_k‖` is about the
/// error of `X_k`: the iteration stops at the first change (Frobenius norm) below `10⁻⁷`, whose iterate is then
/// within about `10⁻¹⁴` of `R` (2–4 iterations at the strains of our scenes, ~10× cheaper than
/// the SVD). Elements that are inverted or nearly degenerate (`det F ≤ 10⁻⁶ |F|³`; there the
/// orthogonal factor is not a rotation) and the rare non-converging case take the SVD path.
pub fn polar_rotation_fast(f: &Mat3) -> Mat3 {
    let scale = f.norm();
    if f.determinant() <= 1e-6 * scale * scale * scale {
        return polar_rotation(f);
    }
    let mut x = *f;
    for _ in 0..30 {
        let rows = [x.row(0).transpose(), x.row(1).transpose(), x.row(2).transpose()];
        let cof = [rows[1].cross(&rows[2]), rows[2].cross(&rows[0]), rows[0].cross(&rows[1])];
        let det = rows[0].dot(&cof[0]);
        // (X + X⁻ᵀ)/2 keeps det X > 0 (its singular values are (σ + 1/σ)/2)
        if !(det > 0.0) {
            break;
        }
        let half_inv_det = 0.5 / det;
        let next = Mat3::from_fn(|i, j| 0.5 * x[(i, j)] + half_inv_det * cof[i][j]);
        // the change's Frobenius norm (at least its largest entry), squared
        let change2 = (next - x).norm_squared();
        x = next;
        if change2 < 1e-14 {
            return x;
        }
    }
    polar_rotation(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::TetMesh;

    /// The rotated-gradient forms of the module docs against the textbook ones, on deformed
    /// elements of a real mesh: every block `k R K_ab Rᵀ` (with `K_ab` from
    /// [`Deformable::stiffness_block`]) and every co-rotational force `R Σ_b K_ab (Rᵀ x_b − X_b)`
    /// agree to 1e-12 of their largest entry; the midpoint `K v` term is `Σ_b block(a, b) v_b`.
    #[test]
    fn rotated_gradient_blocks_and_forces_equal_the_rotated_rest_stiffness() {
        let mesh = TetMesh::box_grid([0.2, 0.1, 0.1], [4, 2, 2]);
        let mat = FemMaterial { density_kg_m3: 1000.0, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.4, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.01, model: ElasticModel::Corotational };
        let d = Deformable::new("bar", "bar", &mesh, mat, 0.5);
        let mut rnd = crate::math::xorshift(0x51D7_3A9C_0E44_B2F1);
        let rot = *nalgebra::Rotation3::from_euler_angles(0.7, -0.4, 1.1).matrix();
        let x: Vec<f64> = d.rest.iter().flat_map(|p| {
            let q = rot * Vec3::new(1.1 * p.x, 0.95 * p.y, p.z) + Vec3::new(0.01 * rnd(), 0.01 * rnd(), 0.01 * rnd());
            [q.x, q.y, q.z]
        }).collect();
        let v: Vec<f64> = (0..x.len()).map(|_| rnd()).collect();
        let scales = StepScales::new(FemIntegrator::Midpoint, 0.01, &d.material);
        let (mut worst_block, mut worst_force, mut worst_kv) = (0.0f64, 0.0f64, 0.0f64);
        for (e, t) in d.tets.iter().enumerate() {
            let mut terms = ElementTerms::ZERO;
            let mut world = [[Mat3::zeros(); 4]; 4];
            element_terms(&d, e, &x, &v, &scales, &mut terms, &mut world);
            let r = terms.rotation;
            let xb = |k: usize| Vec3::new(x[3 * t[k]], x[3 * t[k] + 1], x[3 * t[k] + 2]);
            let vb = |k: usize| Vec3::new(v[3 * t[k]], v[3 * t[k] + 1], v[3 * t[k] + 2]);
            for ka in 0..4 {
                let mut force = Vec3::zeros();
                let mut kv = Vec3::zeros();
                for kb in 0..4 {
                    let k_ab = d.stiffness_block(e, ka, kb);
                    let want = r * k_ab * r.transpose() * scales.k;
                    let got = terms.block(&world, ka, kb);
                    worst_block = worst_block.max((got - want).abs().max() / want.abs().max().max(1e-300));
                    force += k_ab * (r.transpose() * xb(kb) - d.rest[t[kb]]);
                    kv += want * vb(kb);
                }
                let force = r * force;
                worst_force = worst_force.max((terms.force[ka] - force).abs().max() / force.abs().max());
                worst_kv = worst_kv.max((terms.kv[ka] - kv).abs().max() / kv.abs().max());
            }
        }
        assert!(worst_block < 1e-12, "blocks differ by {worst_block:e} of their size");
        assert!(worst_force < 1e-12, "forces differ by {worst_force:e} of their size");
        assert!(worst_kv < 1e-12, "K v terms differ by {worst_kv:e} of their size");
    }
}
