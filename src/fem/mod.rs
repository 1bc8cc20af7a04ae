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

mod assembly;
mod material;
mod mesh;
pub mod selfcontact;
pub mod stable_neo_hookean;
pub use selfcontact::DeformableContactOptions;

pub use crate::math::sparse::{block3_mul_rows, csr_mul_rows};
pub use assembly::{polar_rotation, polar_rotation_fast, FemSystem, ASSEMBLY_CHUNK, GATHER_CHUNK};
pub use material::{ElasticModel, FemMaterial};
pub use mesh::{signed_volume, MeshDefect, TetMesh};

use crate::math::{Mat3, Vec3};

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
        crate::math::sparse::block3_mul_rows_scalar(&sys.a, &sys.block_cols, &v, &mut scalar, 0..n);
        // in two pieces, as the parallel chunks call it
        let half = 3 * (n / 6);
        block3_mul_rows(&sys.a, &sys.block_cols, &v, &mut dispatched[..half], 0..half);
        block3_mul_rows(&sys.a, &sys.block_cols, &v, &mut dispatched[half..], half..n);
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
        let (mut worst, mut orthogonality): (f64, f64) = (0.0, 0.0);
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
            orthogonality = orthogonality.max((r.transpose() * r - Mat3::identity()).abs().max());
        }
        assert!(worst < 1e-12, "largest entry difference {worst:e}");
        assert!(orthogonality < 1e-13, "largest entry of RᵀR − I {orthogonality:e}");
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
