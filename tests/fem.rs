//! FEM alone: the discretisation against closed forms (cantilever, compressed block) and the
//! time stepping's conservation of momentum.


use crate::common::*;
use contact_sim::fem::{fem_momentum, Deformable, FemMaterial, FemSystem, TetMesh};
use contact_sim::math::Vec3;
use nalgebra_sparse::CsrMatrix;

/// Jacobi-preconditioned conjugate gradients on the free DOFs of `a u = f` (fixed DOFs: u = 0).
fn cg(a: &CsrMatrix<f64>, f: &[f64], fixed: &[bool]) -> Vec<f64> {
    let n = f.len();
    let mul = |x: &[f64]| {
        let mut y = vec![0.0; n];
        contact_sim::fem::csr_mul_rows(a, x, &mut y, 0..n);
        for i in 0..n {
            if fixed[i] {
                y[i] = 0.0;
            }
        }
        y
    };
    let mut diag = vec![1.0; n];
    for (r, row) in a.row_iter().enumerate() {
        for (&c, &v) in row.col_indices().iter().zip(row.values()) {
            if c == r {
                diag[r] = v;
            }
        }
    }
    let mut x = vec![0.0; n];
    let mut r: Vec<f64> = (0..n).map(|i| if fixed[i] { 0.0 } else { f[i] }).collect();
    let mut z: Vec<f64> = (0..n).map(|i| r[i] / diag[i]).collect();
    let mut p = z.clone();
    let mut rz: f64 = r.iter().zip(&z).map(|(a, b)| a * b).sum();
    let r0 = rz.sqrt();
    for _ in 0..20 * n {
        let ap = mul(&p);
        let alpha = rz / p.iter().zip(&ap).map(|(a, b)| a * b).sum::<f64>();
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
            z[i] = r[i] / diag[i];
        }
        let rz_new: f64 = r.iter().zip(&z).map(|(a, b)| a * b).sum();
        if rz_new.sqrt() < 1e-13 * r0 {
            break;
        }
        for i in 0..n {
            p[i] = z[i] + rz_new / rz * p[i];
        }
        rz = rz_new;
    }
    x
}

/// The rest stiffness matrix K of a body (N/m): the system matrix at h = 1 with a negligible
/// density (A = M + K).
fn stiffness(mesh: &TetMesh, e: f64, nu: f64) -> (CsrMatrix<f64>, Deformable) {
    let mat = FemMaterial { density_kg_m3: 1e-12, youngs_modulus_pa: e, poisson_ratio: nu, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.0, model: Default::default() };
    let body = Deformable::new("b", "test", mesh, mat, 0.5);
    let mut sys = FemSystem::new(std::slice::from_ref(&body));
    // backward Euler with h = 1 s and (almost) no mass: A = (h² + h β) K = K
    sys.integrator = contact_sim::fem::FemIntegrator::BackwardEuler;
    let x: Vec<f64> = mesh.nodes.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    let v = vec![0.0; x.len()];
    sys.assemble(std::slice::from_ref(&body), &x, &v, 1.0, &Vec3::zeros());
    (sys.a, body)
}

#[test]
fn cantilever_under_gravity_matches_euler_bernoulli_within_5_percent() {
    // L = 1 m, square 0.1 m section, clamped at x = 0, ν = 0 (no clamp-induced Poisson stiffening)
    let (l, h, e, rho, g): (f64, f64, f64, f64, f64) = (1.0, 0.1, 1.0e9, 1000.0, 9.81);
    let closed = rho * g * h * h * l.powi(4) / (8.0 * e * h.powi(4) / 12.0); // q L⁴ / (8 E I)
    let mut last_err = f64::INFINITY;
    // linear tetrahedra lock in bending: the error halves with each refinement (44 %, 17 %, 4.4 %)
    for div in [[20, 2, 2], [40, 4, 4], [80, 8, 8]] {
        let mesh = TetMesh::box_grid([l, h, h], div);
        let (k, body) = stiffness(&mesh, e, 0.0);
        let n = 3 * mesh.nodes.len();
        let mut f = vec![0.0; n];
        let mut fixed = vec![false; n];
        let mut vol = vec![0.0; mesh.nodes.len()];
        for (ei, t) in mesh.tets.iter().enumerate() {
            for &i in t {
                vol[i] += mesh.tet_volume(ei) / 4.0;
            }
        }
        for (i, p) in mesh.nodes.iter().enumerate() {
            f[3 * i + 2] = -rho * g * vol[i];
            if p.x < 1e-12 {
                fixed[3 * i..3 * i + 3].fill(true);
            }
        }
        let u = cg(&k, &f, &fixed);
        // mean vertical displacement of the tip section
        let tip: Vec<usize> = (0..mesh.nodes.len()).filter(|&i| (mesh.nodes[i].x - l).abs() < 1e-12).collect();
        let d = -tip.iter().map(|&i| u[3 * i + 2]).sum::<f64>() / tip.len() as f64;
        let err = (d - closed).abs() / closed;
        println!("{div:?}: tip deflection {d:.6e} m, closed form {closed:.6e} m, error {:.2} %", 100.0 * err);
        assert!(err < last_err, "refinement must reduce the error");
        last_err = err;
        let _ = body;
    }
    assert!(last_err < 0.05, "cantilever error {:.2} % ≥ 5 %", 100.0 * last_err);
}

#[test]
fn compressed_block_shows_e_and_nu() {
    // cube a = 0.1 m, E = 100 kPa, ν = 0.3, pressure P on the top face, rollers at the bottom:
    // linear tetrahedra pass the patch test, so u_z(top) = −P a / E and the lateral strain is
    // ν P / E, exactly (to solver precision).
    let (a, e, nu, pressure) = (0.1, 1.0e5, 0.3, 1000.0);
    let mesh = TetMesh::box_grid([a, a, a], [4, 4, 4]);
    let (k, body) = stiffness(&mesh, e, nu);
    let n = 3 * mesh.nodes.len();
    let mut f = vec![0.0; n];
    let mut fixed = vec![false; n];
    for (i, p) in mesh.nodes.iter().enumerate() {
        if p.z < 1e-12 {
            fixed[3 * i + 2] = true;
            if p.x < 1e-12 && p.y < 1e-12 {
                fixed[3 * i] = true;
                fixed[3 * i + 1] = true;
            }
            if (p.x - a).abs() < 1e-12 && p.y < 1e-12 {
                fixed[3 * i + 1] = true;
            }
        }
    }
    // consistent nodal loads of the top-face triangles
    let mut total = 0.0;
    for tri in &body.surface_triangles {
        let p: Vec<Vec3> = tri.iter().map(|&i| mesh.nodes[i]).collect();
        if p.iter().all(|q| (q.z - a).abs() < 1e-12) {
            let area = 0.5 * (p[1] - p[0]).cross(&(p[2] - p[0])).norm();
            for &i in tri {
                f[3 * i + 2] -= pressure * area / 3.0;
            }
            total += pressure * area;
        }
    }
    assert!((total - pressure * a * a).abs() < 1e-9);
    let u = cg(&k, &f, &fixed);
    let uz_expected = -pressure * a / e;
    let ux_expected = nu * pressure * a / e; // at x = a
    for (i, p) in mesh.nodes.iter().enumerate() {
        let uz = uz_expected * p.z / a;
        let ux = ux_expected * p.x / a;
        let uy = ux_expected * p.y / a;
        let err = ((u[3 * i] - ux).powi(2) + (u[3 * i + 1] - uy).powi(2) + (u[3 * i + 2] - uz).powi(2)).sqrt();
        assert!(err < 1e-6 * uz_expected.abs(), "node {i} at {p:?}: u = {:?}", &u[3 * i..3 * i + 3]);
    }
    // axial stiffness E A / a (N/m)
    let k_axial = pressure * a * a / -uz_expected;
    assert!((k_axial - e * a).abs() < 1e-9 * e * a);
}

#[test]
fn free_body_conserves_momentum() {
    for integrator in ["midpoint", "backward_euler"] {
        free_body_conserves_momentum_with(integrator);
    }
}

fn free_body_conserves_momentum_with(integrator: &str) {
    // a free, spinning, deforming ball without gravity or ground, 10 ms steps
    let yaml = format!("timestep_s: 0.01\ngravity: [0, 0, 0]\nground: {{enabled: false}}\ndeformable_integrator: {integrator}\nsolver: {{kind: vfpi, tolerance: 1.0e-11, max_iterations: 5000}}\ndeformables:\n  - name: ball\n    mesh: ../../assets/meshes/soft_ball.msh\n    linear_velocity: [0.3, -0.2, 0.1]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.35}}\n");
    let s = scene(&yaml);
    let mut sim = contact_sim::sim::Simulation::from_scene(&s, None);
    // add a spin and a squeeze mode on top of the translation
    let nodes = sim.state.fem_x.len() / 3;
    for i in 0..nodes {
        let p = Vec3::new(sim.state.fem_x[3 * i], sim.state.fem_x[3 * i + 1], sim.state.fem_x[3 * i + 2]);
        let w = Vec3::new(0.0, 0.0, 5.0).cross(&p) + Vec3::new(p.x, -p.y, 0.0) * 2.0;
        for c in 0..3 {
            sim.state.fem_v[3 * i + c] += w[c];
        }
    }
    let p0 = fem_momentum(&sim.model.deformables, &sim.state.fem_v);
    let mass = sim.model.deformables[0].total_mass();
    let mut worst: f64 = 0.0;
    for _ in 0..50 {
        let r = sim.step();
        assert!(r.solve.converged, "step {}: {:?}", sim.state.step_count, r.solve);
        worst = worst.max((fem_momentum(&sim.model.deformables, &sim.state.fem_v) - p0).norm());
    }
    println!("{integrator}: momentum {p0:?}, worst drift {worst:.3e} kg·m/s");
    assert!((p0 - Vec3::new(0.3, -0.2, 0.1) * mass).norm() < 1e-12, "symmetric extra modes carry no momentum");
    assert!(worst < 1e-6 * p0.norm(), "momentum drift {worst:e}");
    // still a ball: no blow-up
    assert!(sim.state.fem_v.iter().all(|v| v.abs() < 2.0));
}

/// Quasi-static squash of a cube (edge `a` = 0.1 m, 4 × 4 × 4 cells, E = 100 kPa, ν = 0.45) to
/// half its height between frictionless plates (rollers: bottom z = 0, top z prescribed, sides
/// free), solved by Newton's method on the assembled system (`A = K` with h = 1 s and a negligible
/// density, `b = −f_int`) in 10 load steps. Returns the final volume over the rest volume.
fn squashed_volume_ratio(model: contact_sim::fem::ElasticModel) -> f64 {
    let (a, e, nu) = (0.1, 1.0e5, 0.45);
    let mesh = TetMesh::box_grid([a, a, a], [4, 4, 4]);
    let mat = FemMaterial { density_kg_m3: 1e-12, youngs_modulus_pa: e, poisson_ratio: nu, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.0, model };
    let body = Deformable::new("b", "test", &mesh, mat, 0.5);
    let bodies = std::slice::from_ref(&body);
    let mut sys = FemSystem::new(bodies);
    let n = 3 * mesh.nodes.len();
    let mut fixed = vec![false; n];
    for (i, p) in mesh.nodes.iter().enumerate() {
        if p.z < 1e-12 || (p.z - a).abs() < 1e-12 {
            fixed[3 * i + 2] = true;
        }
        if p.z < 1e-12 && p.x < 1e-12 && p.y < 1e-12 {
            fixed[3 * i] = true;
            fixed[3 * i + 1] = true;
        }
        if p.z < 1e-12 && (p.x - a).abs() < 1e-12 && p.y < 1e-12 {
            fixed[3 * i + 1] = true;
        }
    }
    let mut x: Vec<f64> = mesh.nodes.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    let v = vec![0.0; n];
    let load_steps = 10;
    for k in 1..=load_steps {
        let height = a * (1.0 - 0.5 * k as f64 / load_steps as f64);
        // predictor: scale every z to the new height
        for (i, p) in mesh.nodes.iter().enumerate() {
            x[3 * i + 2] = p.z / a * height;
        }
        let mut converged = false;
        for _ in 0..50 {
            sys.assemble(bodies, &x, &v, 1.0, &Vec3::zeros());
            let residual = (0..n).filter(|&i| !fixed[i]).map(|i| sys.b[i].abs()).fold(0.0, f64::max);
            if residual < 1e-9 * e * a * a {
                converged = true;
                break;
            }
            let dx = cg(&sys.a, &sys.b, &fixed);
            for i in 0..n {
                x[i] += dx[i];
            }
        }
        assert!(converged, "{model:?}: load step {k} did not converge");
    }
    let volume: f64 = mesh
        .tets
        .iter()
        .map(|t| {
            let p = |k: usize| Vec3::new(x[3 * t[k]], x[3 * t[k] + 1], x[3 * t[k] + 2]);
            (p(1) - p(0)).cross(&(p(2) - p(0))).dot(&(p(3) - p(0))) / 6.0
        })
        .sum();
    volume / (a * a * a)
}

#[test]
fn stable_neo_hookean_keeps_the_volume_of_a_block_squashed_to_half_height() {
    use contact_sim::fem::ElasticModel;
    let nu: f64 = 0.45;
    let (mu, lambda) = (1.0 / (2.0 * (1.0 + nu)), nu / ((1.0 + nu) * (1.0 - 2.0 * nu)));
    let snh = squashed_volume_ratio(ElasticModel::StableNeoHookean);
    let cor = squashed_volume_ratio(ElasticModel::Corotational);
    // homogeneous uniaxial stress F = diag(s, s, 1/2) (linear tetrahedra represent it exactly):
    // Stable Neo-Hookean, P₁₁ = 0: μ s + (λ + μ)(s²/2 − α) s/2 = 0  ⇒  J = s²/2 = 1 − μ/(λ + μ);
    // co-rotational (linear elasticity on RᵀF − I): s − 1 = ν/2  ⇒  J = (1 + ν/2)²/2
    let snh_closed = 1.0 - mu / (lambda + mu);
    let cor_closed = 0.5 * (1.0 + 0.5 * nu).powi(2);
    println!("volume at half height, ν = {nu}: stable Neo-Hookean {snh:.6} (closed form {snh_closed:.6}), co-rotational {cor:.6} (closed form {cor_closed:.6})");
    assert!((snh - snh_closed).abs() < 1e-6, "stable Neo-Hookean volume ratio {snh} vs {snh_closed}");
    assert!((cor - cor_closed).abs() < 1e-6, "co-rotational volume ratio {cor} vs {cor_closed}");
    assert!(snh > cor + 0.1, "stable Neo-Hookean keeps much more volume: {snh} vs {cor}");
}

/// URDF of a 1 kg slider on a prismatic joint `pull` along world x, its origin at world
/// (1, 0, 0) at q = 0 (the bar's tip face), no collision geometry.
const PULLER_URDF: &str = r#"<?xml version="1.0"?>
<robot name="puller">
  <link name="puller_base"><inertial><mass value="1.0"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="slider"><inertial><mass value="1.0"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="pull" type="prismatic">
    <parent link="puller_base"/><child link="slider"/><origin xyz="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" effort="500" velocity="10.0"/>
  </joint>
</robot>
"#;

#[test]
fn prestretched_stable_neo_hookean_bar_with_the_matching_tip_load_stays_in_equilibrium() {
    // bar 1 × 0.1 × 0.1 m, 6 × 1 × 1 cells, ρ = 1000 kg/m³, E = 100 kPa, ν = 0 (uniaxial stress is
    // uniaxial strain: exact for linear tetrahedra); the x = 0 face pinned, the x = 1 m face welded
    // two-way to a slider pulled along +x with F = E A ε, ε = 10⁻³. Starting at x ← (1 + ε) x the
    // bar is in equilibrium: Stable Neo-Hookean gives P₁₁ = E ε exactly for F = diag(1 + ε, 1, 1)
    // (at ν = 0: α = 2, C₁ = D₁ = μ/2, P₁₁ = μ(1 + ε) + μ(ε − 1) = 2μ ε).
    let (e_mod, area, strain) = (1.0e5, 0.01, 1.0e-3);
    let load = e_mod * area * strain;
    let dir = repo().join("target/test-scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let urdf = dir.join("snh_puller.urdf");
    std::fs::write(&urdf, PULLER_URDF).unwrap();
    let mesh_file = dir.join("snh_bar.msh");
    contact_sim::config::write_gmsh41(&TetMesh::box_grid([1.0, 0.1, 0.1], [6, 1, 1]), &mesh_file).unwrap();
    let yaml = format!(
        "timestep_s: 0.01\ngravity: [0, 0, 0]\nground: {{enabled: false}}\nsolver: {{kind: vfpi, tolerance: 1.0e-10, residual_tolerance: 1.0e-9, max_iterations: 20000, virtual_node_gain: 1000}}\nrobots:\n  - urdf: {}\n    base: {{mode: fixed, position: [1.0, 0, 0]}}\n    control: {{default: {{mode: effort}}}}\ndeformables:\n  - name: bar\n    mesh: {}\n    material: {{model: stable_neo_hookean, density_kg_m3: 1000, youngs_modulus_pa: {e_mod}, poisson_ratio: 0.0}}\n    attachments:\n      - {{box_min: [-1, -1, -1], box_max: [1.0e-6, 1, 1], to: world}}\n      - {{box_min: [0.999999, -1, -1], box_max: [2, 1, 1], to: {{link: slider}}}}\nscript:\n  - {{time_s: 0.0, efforts: {{pull: {load}}}}}\n",
        urdf.display(),
        mesh_file.display(),
    );
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene(&yaml), None);
    assert_eq!(sim.model.deformables[0].material.model, contact_sim::fem::ElasticModel::StableNeoHookean);
    let rest = sim.model.deformables[0].rest.clone();
    let tip: Vec<usize> = (0..rest.len()).filter(|&i| (rest[i].x - 1.0).abs() < 1e-9).collect();
    assert_eq!(tip.len(), 4);
    // prestretch: the nodes and the slider carrying the tip's weld points
    for (i, p) in rest.iter().enumerate() {
        sim.state.fem_x[3 * i] = (1.0 + strain) * p.x;
    }
    let b = sim.model.joint_body("pull").unwrap();
    let (qi, vi) = (sim.model.bodies[b].joint.q_index, sim.model.bodies[b].joint.v_index);
    sim.state.q[qi] = strain;
    for _ in 0..60 {
        let r = sim.step();
        assert!(sim.state.is_finite());
        let _ = r;
    }
    let delta = tip.iter().map(|&i| sim.state.fem_x[3 * i] - rest[i].x).sum::<f64>() / tip.len() as f64;
    let speed = sim.state.fem_v.iter().fold(sim.state.v[vi].abs(), |m, v| m.max(v.abs()));
    println!("tip displacement {delta:.9e} m (expected {strain:e} m, error {:.2e} m), largest speed {speed:.2e} m/s, slider at {:.9e} m", (delta - strain).abs(), sim.state.q[qi]);
    assert!((delta - strain).abs() < 1e-5, "tip displacement {delta} m vs {strain} m");
    assert!(speed < 1e-4, "largest speed {speed} m/s");
}

/// The element phase of the assembly runs on a rayon pool when given one
/// (`FemSystem::assemble_on`); the scatter is serial in a fixed order. On real meshes (the
/// 6 000-tetrahedra soft ball of `fem_gripper_ball.yaml` and the tomato, two bodies so that the
/// second one's node offset is exercised), deformed and moving, for every elastic law and both
/// integrators: `A`, `b` and the element rotations are bit-identical serially and on 2 and 3
/// threads. And the assembled system is the physical one: internal forces and `K v` cancel over
/// a body, so `Σ b = mv Σ m v + h M g` per axis; `A` is symmetric.
#[test]
fn assembly_is_bit_identical_on_one_two_and_three_threads() {
    use contact_sim::config::read_tet_mesh;
    use contact_sim::fem::{ElasticModel, FemIntegrator};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let ball = read_tet_mesh(&root.join("assets/meshes/soft_ball.msh")).expect("mesh loads");
    let tomato = read_tet_mesh(&root.join("assets/meshes/tomato.msh")).expect("mesh loads");
    let pools: Vec<rayon::ThreadPool> = [2, 3].iter().map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()).collect();
    let (h, g) = (0.01, Vec3::new(0.0, 0.0, -9.81));
    let alpha = 0.3;
    for model in [ElasticModel::Corotational, ElasticModel::NeoHookean, ElasticModel::StableNeoHookean] {
        let mat = FemMaterial { density_kg_m3: 1100.0, youngs_modulus_pa: 5.0e5, poisson_ratio: 0.35, rayleigh_mass_1_s: alpha, rayleigh_stiffness_s: 0.002, model };
        let mut bodies = vec![Deformable::new("ball", "soft_ball.msh", &ball, mat.clone(), 0.8), Deformable::new("tomato", "tomato.msh", &tomato, mat, 0.8)];
        bodies[1].node_start = ball.nodes.len();
        assert!(bodies.iter().all(|d| d.tets.len() > contact_sim::fem::ASSEMBLY_CHUNK), "both bodies span several parallel chunks");
        // deformed (rotated, stretched, plus a pseudo-random jitter of 2 % of the ball's radius)
        // and moving
        let rot = *nalgebra::Rotation3::from_euler_angles(0.3, -0.2, 0.5).matrix();
        let deform = rot * contact_sim::math::Mat3::from_diagonal(&Vec3::new(1.05, 1.0, 0.9));
        let mut seed = 0x9E3779B97F4A7C15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let nodes: Vec<Vec3> = ball.nodes.iter().chain(&tomato.nodes).copied().collect();
        let x: Vec<f64> = nodes.iter().flat_map(|p| { let q = deform * p; [q.x, q.y, q.z] }).map(|c| c + 8e-4 * rnd()).collect();
        let v: Vec<f64> = (0..x.len()).map(|_| 0.1 * rnd()).collect();
        for integrator in [FemIntegrator::BackwardEuler, FemIntegrator::Midpoint] {
            let mut serial = FemSystem::new(&bodies);
            serial.integrator = integrator;
            serial.assemble(&bodies, &x, &v, h, &g);
            for pool in &pools {
                let mut par = FemSystem::new(&bodies);
                par.integrator = integrator;
                // twice: the second assembly overwrites the first one's values completely
                par.assemble_on(&bodies, &v, &x, h, &g, Some(pool));
                par.assemble_on(&bodies, &x, &v, h, &g, Some(pool));
                let what = format!("{model:?} {integrator:?} on {} threads", pool.current_num_threads());
                let bits = |s: &[f64]| s.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
                assert!(bits(serial.a.values()) == bits(par.a.values()), "{what}: A differs");
                assert!(bits(&serial.b) == bits(&par.b), "{what}: b differs");
                assert!(serial.rotation == par.rotation, "{what}: rotations differ");
            }
            // momentum balance of b per body and axis
            let mv = if integrator == FemIntegrator::Midpoint { 1.0 - 0.5 * h * alpha } else { 1.0 };
            for d in &bodies {
                for c in 0..3 {
                    let nodes = d.node_start..d.node_start + d.num_nodes();
                    let sum_b: f64 = nodes.clone().map(|i| serial.b[3 * i + c]).sum();
                    let scale: f64 = nodes.clone().map(|i| serial.b[3 * i + c].abs()).sum();
                    let want: f64 = nodes.clone().map(|i| mv * d.mass[i - d.node_start] * v[3 * i + c]).sum::<f64>() + h * d.total_mass() * g[c];
                    assert!((sum_b - want).abs() <= 1e-9 * scale, "{model:?} {integrator:?} {} axis {c}: Σb = {sum_b:e}, want {want:e} (scale {scale:e})", d.name);
                }
            }
            // symmetry of A
            let a = &serial.a;
            let scale = a.values().iter().fold(0.0f64, |m, x| m.max(x.abs()));
            for (r, row) in a.row_iter().enumerate() {
                for (&col, &val) in row.col_indices().iter().zip(row.values()) {
                    let t = a.get_entry(col, r).map(|e| e.into_value()).expect("symmetric pattern");
                    assert!((val - t).abs() <= 1e-10 * scale, "{model:?} {integrator:?}: A[{r},{col}] = {val:e}, A[{col},{r}] = {t:e}");
                }
            }
        }
    }
}
