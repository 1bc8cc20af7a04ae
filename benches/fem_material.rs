//! `cargo bench --bench fem_material`: the cost of `FemSystem::assemble` (element forces and
//! tangent stiffness into the fixed CSR pattern, plus masses and gravity) on the 6 000-tetrahedra
//! soft ball (`assets/meshes/soft_ball.msh`) for each elastic law, at a deformed state (squashed
//! by 10 % along z, stretched 5 % along x and rotated) so that no element is at rest. Divide by
//! 6 000 for the cost per element.

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
    for (name, model) in [("corotational", ElasticModel::Corotational), ("neo_hookean", ElasticModel::NeoHookean), ("stable_neo_hookean", ElasticModel::StableNeoHookean)] {
        let mat = FemMaterial { density_kg_m3: 1100.0, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35, rayleigh_mass_1_s: 0.0, rayleigh_stiffness_s: 0.002, model };
        let body = Deformable::new("ball", "soft_ball.msh", &mesh, mat, 0.6);
        let bodies = std::slice::from_ref(&body);
        let mut sys = FemSystem::new(bodies);
        c.bench_function(&format!("assemble/soft_ball_6000_tets/{name}"), |b| b.iter(|| sys.assemble(bodies, &x, &v, 0.01, &Vec3::new(0.0, 0.0, -9.81))));
    }
}

criterion_group!(benches, assemble_benches);
criterion_main!(benches);
