//! Tetrahedral finite elements for deformable bodies (method notes: `docs/fem.md`).
//!
//! | item | owns |
//! |---|---|
//! | [`TetMesh`] | a validated linear tetrahedral mesh, surface extraction, the example generators |
//! | [`FemMaterial`] | density, Young's modulus, Poisson ratio, Rayleigh damping, elastic law |
//! | [`Deformable`] | one body of the [`crate::model::Model`]: rest shape, lumped masses, shape gradients, pins, surface |
//! | [`FemSystem`] | the step's sparse system `A v⁺ = b + Jᵀλ` (nalgebra-sparse CSR with a fixed pattern) |
//!
//! # Discretisation
//! Linear tetrahedra with shape-function gradients `g_a` (1/m, constant per element), lumped
//! mass `m_i = Σ ρ V_e / 4`. The element stiffness at rest is
//! `K_ab = V (μ (g_a·g_b) I + μ g_b g_aᵀ + λ g_a g_bᵀ)` (isotropic linear elasticity).
//!
//! *Co-rotational* (the paper's §V-C model, Müller et al. 2004 warped stiffness): with
//! `F = Σ_a x_a g_aᵀ` and its polar rotation `R`, the internal force on node `a` is
//! `f_a = R Σ_b K_ab (Rᵀ x_b − X_b)` and the tangent stiffness `R K_ab Rᵀ` (rotation frozen:
//! the Gauss–Newton "outer-product" Hessian of the paper's eq. (8), `J_eᵀ K J_e` with `e` the
//! Voigt strain of the rotated-back displacement; the geometric term `E` is dropped).
//!
//! *Neo-Hookean* (`neo_hookean`): the exact force of the compressible law, the co-rotational
//! tangent above. *Stable Neo-Hookean* (`stable_neo_hookean`, Macklin et al. 2019 §9.2.2 and
//! App. B, module [`stable_neo_hookean`]): the exact force `f_a = V P g_a` and the tangent
//! blocks `K_ab` of the element's Hessian projected to positive semi-definite, both in world
//! axes (no rotation is factored out).
//!
//! # Time stepping
//! By default ([`FemIntegrator::BackwardEuler`]; the paper's midpoint form is the option
//! [`FemIntegrator::Midpoint`], scene key `deformable_integrator`), linearly implicit backward
//! Euler in impulse units, the same form as the rigid bodies' step
//! (`crate::step`), so that rigid and deformable velocities are both end-of-step velocities
//! and can share one V-FPI solve:
//!
//! ```text
//!   A v⁺ = b + Jᵀ λ,    A = (1 + h α) M + (h² + h β) K(x),    b = M v + h (f_ext − f_int(x))
//!   x⁺ = x + h v⁺
//! ```
//!
//! with `h` the step (s), Rayleigh damping `D = α M + β K`, λ contact impulses (N·s). The paper
//! (§III-A, eq. 9) writes the midpoint ("representative velocity") form `A = 2M/h + h/2 (K + E)`
//! in force units; any linearly implicit integrator gives the same
//! linear form for the solver, and the midpoint form reflects the velocity at sticking and
//! impacting contacts. We use backward Euler so that the end-of-step velocity is the one
//! the Signorini–Coulomb condition acts on (no reflection), at the price of numerical damping
//! of O(h) (negligible for the quasi-static grasping scenes; documented in the report).
//!
//! Pinned nodes (attachments to the world) keep zero velocity: their rows are excluded from
//! the iteration (W = 0) so the solve treats them as Dirichlet conditions; nodes driven one-way
//! by a link ([`NodeAttachment::BodyOneWay`], scene `two_way: false`) likewise, at the link
//! point's velocity.
//!
//! # Welds (two-way)
//! A node welded to a rigid link ([`NodeAttachment::Body`]) stays a free unknown of the solve and
//! gets one bilateral 3-D constraint ([`FemWeld`]) against a *virtual node* on the link point
//! (the paper's virtual-node D-contact, eqs. 14–15, with the link's point Jacobian `J_v`): in
//! world axes, `v_node − v_virtual + φ = 0` with `λ ∈ ℝ³` unclamped. The node receives `+λ`
//! and the link `−J_vᵀ λ`, so the link's dynamics (joint efforts, F/T sensors, free joints)
//! carry the deformable's weight and inertia. `φ = erp · (x_node − x_link point) / h −
//! λ_prev / k̃` corrects the position drift (Baumgarte, `contact.erp`) and the virtual-node
//! damper's steady creep `λ / k̃` (`docs/vfpi.md`). A welded node never also gets a contact
//! (one constraint per node keeps `J_c W J_cᵀ` diagonal, paper Prop. 3; `docs/fem.md`).

mod material;
mod mesh;
pub mod selfcontact;
pub mod stable_neo_hookean;
pub use selfcontact::DeformableContactOptions;

pub use crate::math::sparse::{block3_mul_rows, csr_mul_rows};
pub use material::{ElasticModel, FemMaterial};
pub use mesh::{signed_volume, MeshDefect, TetMesh};

use crate::math::{Mat3, Vec3};
use nalgebra_sparse::CsrMatrix;

/// What a node is attached to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeAttachment {
    /// Free.
    Free,
    /// Fixed in the world.
    World,
    /// Welded (two-way, see the module docs) to a point of a rigid body: body id and the point
    /// in the body frame (m).
    Body(usize, Vec3),
    /// Driven (one-way) by a point of a rigid body: the node's velocity is prescribed to the
    /// link point's and the link feels no reaction. Body id and the point in the body frame (m).
    /// For stiff servos where the reaction does not matter and the two-way weld's virtual
    /// nodes would slow the iteration (`docs/vfpi.md`, virtual-node gain).
    BodyOneWay(usize, Vec3),
}

/// One deformable body of the model (immutable).
#[derive(Clone, Debug)]
pub struct Deformable {
    /// Unique name.
    pub name: String,
    /// Mesh file it came from.
    pub source: String,
    /// Material.
    pub material: FemMaterial,
    /// Coulomb friction coefficient of its surface against anything.
    pub friction: f64,
    /// Rest positions (m, world frame at the initial pose).
    pub rest: Vec<Vec3>,
    /// Tetrahedra (local node indices, positively oriented).
    pub tets: Vec<[usize; 4]>,
    /// Index of this body's first node in the scene's node array ([`crate::state::State::fem_x`]
    /// holds 3 coordinates per node).
    pub node_start: usize,
    /// Lumped node masses (kg).
    pub mass: Vec<f64>,
    /// Rest volume of each tetrahedron (m³).
    pub volume: Vec<f64>,
    /// Shape-function gradients of each tetrahedron at rest (1/m).
    pub grads: Vec<[Vec3; 4]>,
    /// Attachment of each node.
    pub attachment: Vec<NodeAttachment>,
    /// Boundary nodes (local indices): the collision points.
    pub surface_nodes: Vec<usize>,
    /// Boundary triangles (local indices, outward normal).
    pub surface_triangles: Vec<[usize; 3]>,
    /// Initial velocity of every node (m/s, world).
    pub initial_velocity: Vec3,
}

impl Deformable {
    /// Builds a body from a validated mesh already placed in the world. Node masses are lumped
    /// (`ρ V / 4` per element and node).
    pub fn new(name: &str, source: &str, mesh: &TetMesh, material: FemMaterial, friction: f64) -> Self {
        let n = mesh.nodes.len();
        let mut mass = vec![0.0; n];
        let mut volume = Vec::with_capacity(mesh.tets.len());
        let mut grads = Vec::with_capacity(mesh.tets.len());
        for (e, t) in mesh.tets.iter().enumerate() {
            let v = mesh.tet_volume(e);
            volume.push(v);
            for &i in t {
                mass[i] += material.density_kg_m3 * v / 4.0;
            }
            let x = |k: usize| mesh.nodes[t[k]];
            let dm = Mat3::from_columns(&[x(1) - x(0), x(2) - x(0), x(3) - x(0)]);
            let dm_inv = dm.try_inverse().unwrap_or_else(Mat3::zeros);
            // rows of Dm⁻¹ are the gradients of nodes 1..3; node 0's is minus their sum
            let g1 = dm_inv.row(0).transpose();
            let g2 = dm_inv.row(1).transpose();
            let g3 = dm_inv.row(2).transpose();
            grads.push([-(g1 + g2 + g3), g1, g2, g3]);
        }
        Deformable {
            name: name.into(),
            source: source.into(),
            material,
            friction,
            rest: mesh.nodes.clone(),
            tets: mesh.tets.clone(),
            node_start: 0,
            mass,
            volume,
            grads,
            attachment: vec![NodeAttachment::Free; n],
            surface_nodes: mesh.surface_nodes(),
            surface_triangles: mesh.surface_triangles(),
            initial_velocity: Vec3::zeros(),
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.rest.len()
    }

    /// Total mass (kg).
    pub fn total_mass(&self) -> f64 {
        self.mass.iter().sum()
    }

    /// Rest stiffness block `K_ab` of element `e` (N/m), see the module docs.
    pub fn stiffness_block(&self, e: usize, a: usize, b: usize) -> Mat3 {
        let (lambda, mu) = (self.material.lame_lambda(), self.material.lame_mu());
        let g = &self.grads[e];
        let v = self.volume[e];
        (Mat3::identity() * (mu * g[a].dot(&g[b])) + g[b] * g[a].transpose() * mu + g[a] * g[b].transpose() * lambda) * v
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
/// applications", SIAM J. Sci. Stat. Comput. 7, 1986): quadratic convergence, 3–5 iterations of
/// a 3×3 inverse for the strains of our scenes, ~10× cheaper than the SVD. Elements that are
/// inverted or nearly degenerate (`det F ≤ 10⁻⁶ |F|³`; there the orthogonal factor is not a
/// rotation) and the rare non-converging case take the SVD path.
pub fn polar_rotation_fast(f: &Mat3) -> Mat3 {
    let scale = f.norm();
    if f.determinant() <= 1e-6 * scale * scale * scale {
        return polar_rotation(f);
    }
    let mut x = *f;
    for _ in 0..30 {
        let Some(inv) = x.try_inverse() else { break };
        let next = (x + inv.transpose()) * 0.5;
        let change = (next - x).abs().max();
        x = next;
        if change < 1e-14 {
            return x;
        }
    }
    polar_rotation(f)
}

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
    /// Per element (global order over bodies) and node pair `(a, b)`: the position of node b's
    /// 3-column block within node a's rows.
    block_pos: Vec<[[u32; 4]; 4]>,
    /// Per node: the position of its own block within its rows.
    diag_pos: Vec<u32>,
    /// Element rotations of the last assembly (the identity for Stable Neo-Hookean elements,
    /// which need none).
    pub rotation: Vec<Mat3>,
    /// Per element (global order): phase (a) of [`FemSystem::assemble_on`], its forces and
    /// scaled stiffness blocks.
    elements: Vec<ElementTerms>,
    /// Per node: `true` when its velocity is prescribed (pinned to the world or driven one-way
    /// by a link; two-way welded nodes are free unknowns held by [`FemWeld`] constraints).
    pub prescribed: Vec<bool>,
    /// Prescribed velocity of pinned and one-way driven nodes (m/s, world, 3 per node).
    pub prescribed_velocity: Vec<f64>,
    /// The time discretisation of the elastic and damping forces.
    pub integrator: FemIntegrator,
}

/// The time discretisation of the deformable bodies (see the module docs, "Time stepping").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FemIntegrator {
    /// Linearly implicit backward Euler: forces at `v⁺`, `x⁺ = x + h v⁺`
    /// (`A = (1 + hα) M + (h² + hβ) K`; O(h) numerical damping). The default.
    #[default]
    BackwardEuler,
    /// The paper's midpoint ("representative velocity") form, eq. (9): elastic and damping
    /// forces at `v̂ = (v + v⁺)/2`, positions `x⁺ = x + h v̂` (trapezoidal, no numerical
    /// damping), `A = (1 + hα/2) M + (h²/4 + hβ/2) K`. Its `A` is 3–4× better conditioned at
    /// 10 ms, but the undamped elastic vibration spoils the warm start: the resting soft ball
    /// (`fem_ball_rest.yaml`) needs 769 V-FPI iterations per step against 206 with backward
    /// Euler, and still carries 1.4 % lateral contact force after 2 s.
    Midpoint,
}

impl FemSystem {
    /// Builds the pattern for the deformables of a model.
    pub fn new(bodies: &[Deformable]) -> Self {
        let n_nodes: usize = bodies.iter().map(|b| b.num_nodes()).sum();
        let mut neighbours: Vec<Vec<usize>> = vec![vec![]; n_nodes];
        for d in bodies {
            for t in &d.tets {
                for &a in t {
                    for &b in t {
                        neighbours[d.node_start + a].push(d.node_start + b);
                    }
                }
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
        let mut prescribed = vec![false; n_nodes];
        for d in bodies {
            for (i, at) in d.attachment.iter().enumerate() {
                prescribed[d.node_start + i] = matches!(at, NodeAttachment::World | NodeAttachment::BodyOneWay(..));
            }
        }
        FemSystem {
            a,
            b: vec![0.0; n],
            block_pos,
            diag_pos,
            rotation: vec![Mat3::identity(); bodies.iter().map(|b| b.tets.len()).sum()],
            elements: vec![ElementTerms::ZERO; bodies.iter().map(|b| b.tets.len()).sum()],
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

    /// Assembles `A` and `b` (see [`FemSystem::assemble`]) in two phases:
    ///
    /// 1. per element, its rotation, nodal forces and the 16 scaled world-frame stiffness blocks
    ///    (and, for the midpoint integrator, the blocks times the nodal velocities). Elements
    ///    are independent: with a `pool`, every element of a body with more than
    ///    [`ASSEMBLY_CHUNK`] elements is computed first, in parallel (fixed chunks of that many
    ///    elements), into a per-element buffer sized in [`FemSystem::new`]; without one (or for
    ///    a smaller body), each element is computed just before its scatter into a stack
    ///    buffer. One function computes an element in both cases, so its output does not depend
    ///    on the thread count;
    /// 2. a serial scatter into the CSR values and `b`, in body, node and element order, so
    ///    that every sum is accumulated in one fixed order: `A` and `b` are bit-identical for
    ///    any pool (and to the single-pass assembly this replaced).
    ///
    /// Without a pool it allocates nothing; with one, rayon allocates inside its pool.
    pub fn assemble_on(&mut self, bodies: &[Deformable], x: &[f64], v: &[f64], h: f64, gravity: &Vec3, pool: Option<&rayon::ThreadPool>) {
        let integrator = self.integrator;
        let FemSystem { a, b, block_pos, diag_pos, rotation, elements, .. } = self;
        // phase (a) on the pool: every element's terms into the buffer
        let buffered = |d: &Deformable| pool.is_some() && d.tets.len() > ASSEMBLY_CHUNK;
        if let Some(p) = pool {
            let mut start = 0;
            for d in bodies {
                let n_e = d.tets.len();
                if buffered(d) {
                    let scales = StepScales::new(integrator, h, &d.material);
                    let out = &mut elements[start..start + n_e];
                    use rayon::prelude::*;
                    p.install(|| {
                        out.par_chunks_mut(ASSEMBLY_CHUNK).enumerate().for_each(|(k, chunk)| {
                            for (i, terms) in chunk.iter_mut().enumerate() {
                                element_terms(d, k * ASSEMBLY_CHUNK + i, x, v, &scales, terms);
                            }
                        })
                    });
                }
                start += n_e;
            }
        }
        // phase (b): the serial scatter, in the fixed order (serially, phase (a) of each element
        // runs just before its scatter, into a stack buffer: the same operations, no memory
        // traffic through the element buffer)
        a.values_mut().fill(0.0);
        let mut local = ElementTerms::ZERO;
        let mut e_global = 0;
        for d in bodies {
            let s = d.node_start;
            let scales = StepScales::new(integrator, h, &d.material);
            let from_buffer = buffered(d);
            // mass and external force
            for i in 0..d.num_nodes() {
                let gi = s + i;
                let m = d.mass[i];
                for c in 0..3 {
                    b[3 * gi + c] = scales.mv * m * v[3 * gi + c] + h * m * gravity[c];
                }
                let pos = diag_pos[gi] as usize;
                for c in 0..3 {
                    let idx = a.row_offsets()[3 * gi + c] + 3 * pos + c;
                    a.values_mut()[idx] += scales.m * m;
                }
            }
            // elements
            for (e, t) in d.tets.iter().enumerate() {
                let terms = if from_buffer {
                    &elements[e_global]
                } else {
                    element_terms(d, e, x, v, &scales, &mut local);
                    &local
                };
                rotation[e_global] = terms.rotation;
                for ka in 0..4 {
                    let gi = s + t[ka];
                    for c in 0..3 {
                        b[3 * gi + c] -= h * terms.force[ka][c];
                    }
                    for kb in 0..4 {
                        if scales.kv != 0.0 {
                            let kv = &terms.kv[ka][kb];
                            for c in 0..3 {
                                b[3 * gi + c] -= kv[c];
                            }
                        }
                        let k_rot = &terms.block[ka][kb];
                        let pos = block_pos[e_global][ka][kb] as usize;
                        for ra in 0..3 {
                            let base = a.row_offsets()[3 * gi + ra] + 3 * pos;
                            let vals = a.values_mut();
                            for cb in 0..3 {
                                vals[base + cb] += k_rot[(ra, cb)];
                            }
                        }
                    }
                }
                e_global += 1;
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

/// What one element contributes to the step system (phase (a) of [`FemSystem::assemble_on`]).
#[derive(Clone, Copy)]
struct ElementTerms {
    /// Polar rotation `R` of the deformation gradient (identity for Stable Neo-Hookean).
    rotation: Mat3,
    /// Internal force `f_a` on each of the 4 nodes (N, world).
    force: [Vec3; 4],
    /// Tangent block `(ab)` in world axes times the stiffness scale: `k R K_ab Rᵀ`, or `k K_ab`
    /// for Stable Neo-Hookean (kg).
    block: [[Mat3; 4]; 4],
    /// `block[a][b] v_b` (N·s), the midpoint integrator's `K v` term (unset for backward Euler).
    kv: [[Vec3; 4]; 4],
}

impl ElementTerms {
    const ZERO: ElementTerms = ElementTerms { rotation: Mat3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), force: [Vec3::new(0.0, 0.0, 0.0); 4], block: [[Mat3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0); 4]; 4], kv: [[Vec3::new(0.0, 0.0, 0.0); 4]; 4] };
}

/// Phase (a) for element `e` of body `d` at positions `x` and velocities `v` (global, 3 per
/// node): the one implementation of the element computation, for the serial and the parallel
/// path.
fn element_terms(d: &Deformable, e: usize, x: &[f64], v: &[f64], scales: &StepScales, out: &mut ElementTerms) {
    let s = d.node_start;
    let t = &d.tets[e];
    let p = |k: usize| Vec3::new(x[3 * (s + t[k])], x[3 * (s + t[k]) + 1], x[3 * (s + t[k]) + 2]);
    let xs = [p(0), p(1), p(2), p(3)];
    let g = &d.grads[e];
    let f_def = xs[0] * g[0].transpose() + xs[1] * g[1].transpose() + xs[2] * g[2].transpose() + xs[3] * g[3].transpose();
    // Stable Neo-Hookean: world-frame blocks of the projected Hessian, not R K₀ Rᵀ, and no
    // rotation
    let world_blocks = d.material.model == ElasticModel::StableNeoHookean;
    let r = if world_blocks { Mat3::identity() } else { polar_rotation_fast(&f_def) };
    out.rotation = r;
    // rotated-back displacement u_b = Rᵀ x_b − X_b
    let u = [0, 1, 2, 3].map(|k| r.transpose() * xs[k] - d.rest[t[k]]);
    let mut blocks = [[Mat3::zeros(); 4]; 4];
    if !world_blocks {
        for ka in 0..4 {
            for kb in 0..4 {
                blocks[ka][kb] = d.stiffness_block(e, ka, kb);
            }
        }
    }
    out.force = match d.material.model {
        ElasticModel::Corotational => [0, 1, 2, 3].map(|ka| r * (0..4).fold(Vec3::zeros(), |acc, kb| acc + blocks[ka][kb] * u[kb])),
        ElasticModel::NeoHookean => {
            let (lambda, mu) = (d.material.lame_lambda(), d.material.lame_mu());
            let j = f_def.determinant().max(1e-6);
            let f_inv_t = f_def.try_inverse().map(|m| m.transpose()).unwrap_or_else(Mat3::zeros);
            let pk1 = (f_def - f_inv_t) * mu + f_inv_t * (lambda * j.ln());
            [0, 1, 2, 3].map(|ka| pk1 * g[ka] * d.volume[e])
        }
        ElasticModel::StableNeoHookean => {
            let law = stable_neo_hookean::StableNeoHookean::from_lame(d.material.lame_lambda(), d.material.lame_mu());
            let (forces, k) = law.element(&f_def, g, d.volume[e]);
            blocks = k;
            forces
        }
    };
    for ka in 0..4 {
        for kb in 0..4 {
            let k_rot = if world_blocks { blocks[ka][kb] * scales.k } else { r * blocks[ka][kb] * r.transpose() * scales.k };
            out.block[ka][kb] = k_rot;
            if scales.kv != 0.0 {
                let gb = s + t[kb];
                let vb = Vec3::new(v[3 * gb], v[3 * gb + 1], v[3 * gb + 2]);
                out.kv[ka][kb] = k_rot * vb;
            }
        }
    }
}


/// A contact of a deformable surface node in the last step.
#[derive(Clone, Copy, Debug)]
pub struct FemContact {
    /// Global node index.
    pub node: usize,
    /// Geometry touched (index into [`crate::model::Model::geoms`]); `None` for a node–node
    /// contact.
    pub geom: Option<usize>,
    /// Rigid body in two-way contact (`None`: the ground, a static geometry or a node–node
    /// contact).
    pub body: Option<usize>,
    /// Node–node D-contact ([`selfcontact`]): the global index of the other node `j` (of
    /// another deformable or of the same one). `None` for ground / rigid contacts.
    pub other_node: Option<usize>,
    /// Contact point (m, world): the node position.
    pub position: Vec3,
    /// World → contact rotation, rows `n, t1, t2`; `n` points from the geometry (or from node
    /// `j`'s surface, along `j`'s outward normal) to the node.
    pub frame: Mat3,
    /// Signed distance (m, negative when penetrating); for a node–node contact the gap
    /// `(x_i − x_j)·n − thickness`.
    pub distance: f64,
    /// Impulse on the node in contact coordinates `[n, t1, t2]` (N·s); the body, or node `j`,
    /// receives the opposite (`−Rᵀλ` in world axes).
    pub impulse: [f64; 3],
}

/// A two-way weld of a deformable node to a rigid link in the last step (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct FemWeld {
    /// Global node index.
    pub node: usize,
    /// Rigid body the node is welded to.
    pub body: usize,
    /// The weld point on the link (m, world) at the start of the step.
    pub position: Vec3,
    /// Weld error `x_node − x_link point` at the start of the step (m, world).
    pub error: Vec3,
    /// Impulse on the node (N·s, world axes); the link receives the opposite at `position`.
    /// The mean force over the step is `impulse / h`.
    pub impulse: [f64; 3],
    /// Row of this weld's three virtual-node Jacobian rows (x, y, z) in
    /// [`crate::workspace::CoupledScratch::jv`], `None` when the link point cannot move (zero Jacobian).
    pub jv_row: Option<usize>,
}

/// Deformable-body scratch of the [`crate::workspace::Workspace`], sized once.
pub struct FemWorkspace {
    /// The sparse system.
    pub system: FemSystem,
    /// Contacts of deformable nodes this step (capacity: the surface nodes): the ground /
    /// rigid contacts first, then the node–node contacts ([`FemContact::other_node`]).
    pub contacts: Vec<FemContact>,
    /// Node–node contact detection scratch ([`selfcontact`]).
    pub node_contact: selfcontact::NodeContactScratch,
    /// Welds of deformable nodes to rigid links this step (capacity: the welded nodes).
    pub welds: Vec<FemWeld>,
    /// Node velocities at the start of the step (m/s, 3 per node; the midpoint position update).
    pub velocity_start: Vec<f64>,
}

impl FemWorkspace {
    /// Allocates everything for the deformable bodies (integrator and contact options from the
    /// model).
    pub fn new(deformables: &[Deformable], integrator: FemIntegrator, contact: &DeformableContactOptions) -> Self {
        let surface: usize = deformables.iter().map(|d| d.surface_nodes.len()).sum();
        let welded = welded_node_count(deformables);
        let mut system = FemSystem::new(deformables);
        system.integrator = integrator;
        FemWorkspace {
            system,
            contacts: Vec::with_capacity(surface),
            node_contact: selfcontact::NodeContactScratch::new(deformables, contact),
            welds: Vec::with_capacity(welded),
            velocity_start: vec![0.0; 3 * deformables.iter().map(|d| d.num_nodes()).sum::<usize>()],
        }
    }

    /// `Jᵀ` of this step's deformable contacts as a dense `n × 3·contacts` matrix (`n` = the
    /// deformable velocity coordinates, 3 per node): column `3c + r` holds row `r` of contact
    /// `c`'s frame (`n, t1, t2`) at its node, and its opposite at the other node of a node–node
    /// contact. For reference solves in tests and benchmarks (allocates; the step never calls it).
    pub fn dense_contact_jacobian_t(&self, n: usize) -> nalgebra::DMatrix<f64> {
        let mut jt = nalgebra::DMatrix::<f64>::zeros(n, 3 * self.contacts.len());
        for (ci, c) in self.contacts.iter().enumerate() {
            for r in 0..3 {
                for d in 0..3 {
                    jt[(3 * c.node + d, 3 * ci + r)] = c.frame[(r, d)];
                    if let Some(j) = c.other_node {
                        jt[(3 * j + d, 3 * ci + r)] = -c.frame[(r, d)];
                    }
                }
            }
        }
        jt
    }
}

/// Number of nodes welded to rigid links ([`NodeAttachment::Body`]) over `bodies`.
pub fn welded_node_count(bodies: &[Deformable]) -> usize {
    bodies.iter().map(|d| d.attachment.iter().filter(|a| matches!(a, NodeAttachment::Body(..))).count()).sum()
}

/// Total momentum of the deformable nodes (kg·m/s, world).
pub fn fem_momentum(deformables: &[Deformable], v: &[f64]) -> Vec3 {
    let mut p = Vec3::zeros();
    for d in deformables {
        for (i, m) in d.mass.iter().enumerate() {
            let g = d.node_start + i;
            p += Vec3::new(v[3 * g], v[3 * g + 1], v[3 * g + 2]) * *m;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_matvec_kernels_match_the_plain_csr_product() {
        let mesh = TetMesh::box_grid([0.1, 0.05, 0.05], [6, 3, 3]);
        let mat = FemMaterial { density_kg_m3: 1000.0, youngs_modulus_pa: 1e5, poisson_ratio: 0.3, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.0, model: ElasticModel::Corotational };
        let body = Deformable::new("b", "test", &mesh, mat, 0.5);
        let mut sys = FemSystem::new(std::slice::from_ref(&body));
        // a rotated, stretched configuration so that every block is full
        let rot = nalgebra::Rotation3::new(Vec3::new(0.3, -0.2, 0.5));
        let x: Vec<f64> = mesh.nodes.iter().flat_map(|p| { let q = rot * (p * 1.1); [q.x, q.y, q.z] }).collect();
        let v: Vec<f64> = (0..x.len()).map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0).collect();
        sys.assemble(std::slice::from_ref(&body), &x, &v, 0.01, &Vec3::new(0.0, 0.0, -9.81));
        let n = sys.dim();
        let (mut reference, mut scalar, mut dispatched) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        csr_mul_rows(&sys.a, &v, &mut reference, 0..n);
        crate::math::sparse::block3_mul_rows_scalar(&sys.a, &v, &mut scalar, 0..n);
        // in two pieces, as the parallel chunks call it
        let half = 3 * (n / 6);
        block3_mul_rows(&sys.a, &v, &mut dispatched[..half], 0..half);
        block3_mul_rows(&sys.a, &v, &mut dispatched[half..], half..n);
        let scale = reference.iter().fold(0.0f64, |m, y| m.max(y.abs()));
        for i in 0..n {
            assert!((scalar[i] - reference[i]).abs() <= 1e-13 * scale, "row {i}");
            assert!((dispatched[i] - reference[i]).abs() <= 1e-13 * scale, "row {i}");
        }
    }

    #[test]
    fn newton_polar_rotation_matches_the_svd_one_also_for_inverted_elements() {
        // deterministic pseudo-random F: rotations times stretches, some inverted
        let mut rnd = crate::math::xorshift(0x2545F4914F6CDD1D);
        let mut worst: f64 = 0.0;
        for k in 0..2000 {
            let axis = Vec3::new(rnd(), rnd(), rnd());
            let rot = nalgebra::Rotation3::new(axis * 2.0).into_inner();
            let mut stretch = Mat3::identity() + Mat3::from_fn(|_, _| 0.3 * rnd());
            stretch = (stretch + stretch.transpose()) * 0.5;
            if k % 5 == 0 {
                // invert: reflect one axis
                stretch.set_column(0, &(-stretch.column(0)));
            }
            let f = rot * stretch;
            if f.determinant().abs() < 1e-3 {
                continue;
            }
            let reference = polar_rotation(&f);
            let r = polar_rotation_fast(&f);
            assert!((r.determinant() - 1.0).abs() < 1e-9);
            worst = worst.max((r - reference).abs().max());
        }
        assert!(worst < 1e-8, "largest entry difference {worst:e}");
    }

    fn internal_force(model: ElasticModel, stretch: &Mat3) -> Vec<f64> {
        let mesh = TetMesh::box_grid([0.1, 0.1, 0.1], [1, 1, 1]);
        let mat = FemMaterial { density_kg_m3: 1e-12, youngs_modulus_pa: 1e5, poisson_ratio: 0.3, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.0, model };
        let body = Deformable::new("b", "t", &mesh, mat, 0.5);
        let mut sys = FemSystem::new(std::slice::from_ref(&body));
        let x: Vec<f64> = mesh.nodes.iter().flat_map(|p| {
            let q = stretch * p;
            [q.x, q.y, q.z]
        }).collect();
        sys.assemble(std::slice::from_ref(&body), &x, &vec![0.0; x.len()], 1.0, &Vec3::zeros());
        sys.b.iter().map(|b| -b).collect() // b = −h f_int with v = 0, g = 0, h = 1
    }

    #[test]
    fn neo_hookean_matches_corotational_for_small_strain_and_rotations_cost_nothing() {
        let eps = 1e-5;
        let f = Mat3::new(1.0 + eps, 0.3 * eps, 0.0, 0.0, 1.0 - 0.5 * eps, 0.2 * eps, 0.0, 0.0, 1.0 + 0.7 * eps);
        let a = internal_force(ElasticModel::Corotational, &f);
        let b = internal_force(ElasticModel::NeoHookean, &f);
        let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(scale > 0.0);
        let diff = a.iter().zip(&b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff < 1e-3 * scale, "difference {diff:e} of {scale:e}");
        // a pure rotation produces no elastic force in either model
        let r = *nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1).matrix();
        for model in [ElasticModel::Corotational, ElasticModel::NeoHookean] {
            let f = internal_force(model, &r);
            assert!(f.iter().all(|x| x.abs() < 1e-9), "{model:?}: {f:?}");
        }
    }

    #[test]
    fn stable_neo_hookean_cube_turned_inside_out_recovers_under_the_implicit_step() {
        // a free cube (6 tets, 0.1 m, E = 100 kPa, ν = 0.45, ρ = 1000 kg/m³, β = 0.01 s), all its
        // nodes mirrored through z = 0.05 m: every element has J = −1. Backward Euler steps of
        // 10 ms (A v⁺ = b, dense Cholesky: A is SPD with the projected stiffness) un-invert it.
        let mesh = TetMesh::box_grid([0.1, 0.1, 0.1], [1, 1, 1]);
        let mat = FemMaterial { density_kg_m3: 1000.0, youngs_modulus_pa: 1e5, poisson_ratio: 0.45, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.01, model: ElasticModel::StableNeoHookean };
        let body = Deformable::new("b", "t", &mesh, mat, 0.5);
        let bodies = std::slice::from_ref(&body);
        let mut sys = FemSystem::new(bodies);
        let mut x: Vec<f64> = mesh.nodes.iter().flat_map(|p| [p.x, p.y, 0.1 - p.z]).collect();
        let mut v = vec![0.0; x.len()];
        let det = |x: &[f64], e: usize| {
            let t = body.tets[e];
            let g = &body.grads[e];
            (0..4).fold(Mat3::zeros(), |acc, k| acc + Vec3::new(x[3 * t[k]], x[3 * t[k] + 1], x[3 * t[k] + 2]) * g[k].transpose()).determinant()
        };
        assert!((0..6).all(|e| (det(&x, e) + 1.0).abs() < 1e-12), "all elements start inverted");
        let h = 0.01;
        let n = x.len();
        for _ in 0..300 {
            sys.assemble(bodies, &x, &v, h, &Vec3::zeros());
            let mut a = nalgebra::DMatrix::<f64>::zeros(n, n);
            for (r, row) in sys.a.row_iter().enumerate() {
                for (&c, &val) in row.col_indices().iter().zip(row.values()) {
                    a[(r, c)] = val;
                }
            }
            let chol = a.cholesky().expect("A is SPD");
            let vn = chol.solve(&nalgebra::DVector::from_column_slice(&sys.b));
            v.copy_from_slice(vn.as_slice());
            for i in 0..n {
                x[i] += h * v[i];
            }
        }
        let js: Vec<f64> = (0..6).map(|e| det(&x, e)).collect();
        let speed = v.iter().fold(0.0f64, |m, s| m.max(s.abs()));
        // at rest again: J = 1 in every element (the rest shape up to a rigid motion)
        assert!(js.iter().all(|j| (j - 1.0).abs() < 1e-3), "J after 3 s: {js:?}");
        assert!(speed < 1e-3, "still moving at {speed} m/s");
    }

    #[test]
    fn stable_neo_hookean_matches_corotational_at_small_strain_in_force_and_system_matrix() {
        let eps = 1e-5;
        let f = Mat3::new(1.0 + eps, 0.3 * eps, 0.0, 0.0, 1.0 - 0.5 * eps, 0.2 * eps, 0.0, 0.0, 1.0 + 0.7 * eps);
        let a = internal_force(ElasticModel::Corotational, &f);
        let b = internal_force(ElasticModel::StableNeoHookean, &f);
        let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let diff = a.iter().zip(&b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff < 1e-3 * scale, "difference {diff:e} of {scale:e}");
        let r = *nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1).matrix();
        let f = internal_force(ElasticModel::StableNeoHookean, &r);
        assert!(f.iter().all(|x| x.abs() < 1e-9), "{f:?}");
        // at rest (and rotated) the projected Hessian is the linear-elastic stiffness, so the
        // system matrices agree with the co-rotational ones
        let mesh = TetMesh::box_grid([0.1, 0.05, 0.05], [2, 1, 1]);
        let system = |model: ElasticModel| {
            let mat = FemMaterial { density_kg_m3: 1000.0, youngs_modulus_pa: 1e5, poisson_ratio: 0.45, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.0, model };
            let body = Deformable::new("b", "t", &mesh, mat, 0.5);
            let mut sys = FemSystem::new(std::slice::from_ref(&body));
            let x: Vec<f64> = mesh.nodes.iter().flat_map(|p| {
                let q = r * p;
                [q.x, q.y, q.z]
            }).collect();
            sys.assemble(std::slice::from_ref(&body), &x, &vec![0.0; x.len()], 0.01, &Vec3::zeros());
            sys.a.values().to_vec()
        };
        let (ac, asnh) = (system(ElasticModel::Corotational), system(ElasticModel::StableNeoHookean));
        let scale = ac.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let diff = ac.iter().zip(&asnh).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff < 1e-9 * scale, "system matrices differ by {diff:e} of {scale:e}");
    }
}
