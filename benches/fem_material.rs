//! `cargo bench --bench fem_material`: the cost of `FemSystem::assemble` (element forces and
//! tangent stiffness into the fixed CSR pattern, plus masses and gravity) on the 6 000-tetrahedra
//! soft ball (`assets/meshes/soft_ball.msh`) for each elastic law, at a deformed state (squashed
//! by 10 % along z, stretched 5 % along x and rotated) so that no element is at rest. Divide by
//! 6 000 for the cost per element. And one Stable Neo-Hookean element alone, closed-form
//! eigensystem against a numerical 9×9 eigen-decomposition. `assemble_2_threads/*`: the same
//! assembly with its element phase on a 2-thread rayon pool (`FemSystem::assemble_on`).

use contact_sim::config::read_tet_mesh;
use contact_sim::fem::{Deformable, ElasticModel, FemMaterial, FemSystem};
use contact_sim::math::{Mat3, Vec3};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;

fn assemble_benches(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mesh = read_tet_mesh(&root.join("assets/meshes/soft_ball.msh")).expect("mesh loads");
    let rot = *nalgebra::Rotation3::from_euler_angles(0.3, -0.2, 0.5).matrix();
    let deform = rot * Mat3::from_diagonal(&Vec3::new(1.05, 1.0, 0.9));
    let x: Vec<f64> = mesh.nodes.iter().flat_map(|p| {
        let q = deform * p;
        [q.x, q.y, q.z]
    }).collect();
    let v = vec![0.0; x.len()];
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a 2-thread pool");
    for (name, model) in [("corotational", ElasticModel::Corotational), ("neo_hookean", ElasticModel::NeoHookean), ("stable_neo_hookean", ElasticModel::StableNeoHookean)] {
        let mat = FemMaterial { density_kg_m3: 1100.0, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.002, model };
        let body = Deformable::new("ball", "soft_ball.msh", &mesh, mat, 0.6);
        let bodies = std::slice::from_ref(&body);
        let mut sys = FemSystem::new(bodies);
        c.bench_function(&format!("assemble/soft_ball_6000_tets/{name}"), |b| b.iter(|| sys.assemble(bodies, &x, &v, 0.01, &Vec3::new(0.0, 0.0, -9.81))));
        // the element phase on a 2-thread pool (the scatter stays serial; same A and b)
        c.bench_function(&format!("assemble_2_threads/soft_ball_6000_tets/{name}"), |b| b.iter(|| sys.assemble_on(bodies, &x, &v, 0.01, &Vec3::new(0.0, 0.0, -9.81), Some(&pool))));
    }
}

/// One element's force and projected stiffness, Stable Neo-Hookean: the closed-form
/// eigensystem (what `assemble` uses) against the numerical 9×9 symmetric eigen-decomposition of
/// the Hessian mapped by the shape gradients (the reference the unit tests compare it with).
fn element_benches(c: &mut Criterion) {
    use contact_sim::fem::stable_neo_hookean::{project_psd, StableNeoHookean};
    let law = StableNeoHookean::from_lame(0.35 * 1.0e6 / (1.35 * 0.3), 1.0e6 / 2.7);
    let rest = [Vec3::zeros(), Vec3::new(0.01, 0.0, 0.0), Vec3::new(0.002, 0.009, 0.0), Vec3::new(0.003, 0.002, 0.008)];
    let dm = Mat3::from_columns(&[rest[1] - rest[0], rest[2] - rest[0], rest[3] - rest[0]]);
    let dm_inv = dm.try_inverse().unwrap();
    let (g1, g2, g3) = (dm_inv.row(0).transpose(), dm_inv.row(1).transpose(), dm_inv.row(2).transpose());
    let grads = [-(g1 + g2 + g3), g1, g2, g3];
    let volume = dm.determinant() / 6.0;
    let f = *nalgebra::Rotation3::from_euler_angles(0.3, -0.2, 0.5).matrix() * Mat3::new(1.05, 0.02, 0.0, 0.01, 0.97, 0.03, 0.0, -0.02, 0.9);
    c.bench_function("snh_element/closed_form", |b| b.iter(|| law.element(std::hint::black_box(&f), &grads, volume)));
    c.bench_function("snh_element/numerical_9x9_eigen", |b| {
        b.iter(|| {
            let f = std::hint::black_box(&f);
            let p = law.pk1(f);
            let forces = grads.map(|g| p * g * volume);
            let h = project_psd(&law.hessian(f));
            let mut k = [[Mat3::zeros(); 4]; 4];
            for a in 0..4 {
                for bb in 0..4 {
                    for j in 0..3 {
                        for l in 0..3 {
                            k[a][bb] += h.fixed_view::<3, 3>(3 * j, 3 * l) * (grads[a][j] * grads[bb][l] * volume);
                        }
                    }
                }
            }
            (forces, k)
        })
    });
}

criterion_group!(benches, assemble_benches, element_benches);
criterion_main!(benches);
