//! Deformable assets: mesh files (Gmsh 2.2 / 4.1, TetGen), validation errors, materials, the
//! scene's `deformables:` section, mass = ρ V, surface extraction.


use crate::common::*;
use contact_sim::config::{load_scene_str, read_tet_mesh, write_gmsh22, write_gmsh41, write_tetgen};
use contact_sim::fem::TetMesh;

fn load_err(yaml: &str) -> String {
    let path = repo().join("config/examples/_test_scene.yaml");
    match load_scene_str(yaml, &path) {
        Ok(_) => panic!("scene should not load"),
        Err(e) => e.to_string(),
    }
}

fn ball_scene(material: &str) -> String {
    format!(
        "solver: {{kind: vfpi}}\ndeformables:\n  - name: ball\n    mesh: ../../assets/meshes/soft_ball.msh\n    position: [0, 0, 0.04]\n    material: {material}\n"
    )
}

#[test]
fn the_three_formats_read_back_what_was_written() {
    let mesh = TetMesh::box_grid([0.3, 0.2, 0.1], [3, 2, 2]);
    let dir = std::env::temp_dir().join(format!("contact_sim_fem_mesh_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_gmsh22(&mesh, &dir.join("a.msh")).unwrap();
    write_gmsh41(&mesh, &dir.join("b.msh")).unwrap();
    write_tetgen(&mesh, &dir.join("c.node")).unwrap();
    for f in ["a.msh", "b.msh", "c.node", "c.ele"] {
        let m = read_tet_mesh(&dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(m.tets, mesh.tets, "{f}");
        let err = m.nodes.iter().zip(&mesh.nodes).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
        assert!(err < 1e-9, "{f}: coordinates differ by {err}");
        assert!((m.volume() - 0.006).abs() < 1e-12, "{f}: volume {}", m.volume());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn shipped_assets_load_and_are_valid() {
    for (f, nodes, tets) in [("soft_ball.msh", 1331, 6000), ("soft_mat.msh", 1250, 3456), ("finger_pad.node", 140, 432), ("soft_block.node", 196, 648)] {
        let m = read_tet_mesh(&repo().join("assets/meshes").join(f)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((m.nodes.len(), m.tets.len()), (nodes, tets), "{f}");
        assert!((0..m.tets.len()).all(|e| m.tet_volume(e) > 0.0));
    }
    // the ball's volume is within 1.5 % of the sphere's (r = 40 mm)
    let m = read_tet_mesh(&repo().join("assets/meshes/soft_ball.msh")).unwrap();
    let exact = 4.0 / 3.0 * std::f64::consts::PI * 0.04f64.powi(3);
    assert!((m.volume() - exact).abs() / exact < 0.015, "{} vs {exact}", m.volume());
}

#[test]
fn total_mass_is_density_times_volume() {
    let s = scene(&ball_scene("{density_kg_m3: 1100, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35}"));
    let d = &s.model.deformables[0];
    let mesh = read_tet_mesh(&repo().join("assets/meshes/soft_ball.msh")).unwrap();
    let expected = 1100.0 * mesh.volume();
    assert!((d.total_mass() - expected).abs() < 1e-12 * expected, "{} vs {expected}", d.total_mass());
    // ≈ 0.291 kg for the 40 mm ball
    assert!((d.total_mass() - 0.2913).abs() < 1e-3, "{}", d.total_mass());
    // the node positions are placed at the pose: centre at z = 0.04
    let zmin = d.rest.iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
    assert!(zmin.abs() < 1e-9, "lowest node at {zmin}");
    // surface: the 11³ grid's boundary nodes, all at radius 40 mm
    assert_eq!(d.surface_nodes.len(), 11usize.pow(3) - 9usize.pow(3));
    for &i in &d.surface_nodes {
        let r = (d.rest[i] - contact_sim::math::Vec3::new(0.0, 0.0, 0.04)).norm();
        assert!((r - 0.04).abs() < 1e-9, "surface node {i} at radius {r}");
    }
}

#[test]
fn bad_meshes_name_the_file_and_the_element() {
    let cases = [
        ("tet_inverted.msh", "tetrahedron 3", "inverted"),
        ("tet_degenerate.msh", "tetrahedron 2", "degenerate"),
        ("tet_missing_node.msh", "element 7", "node 9"),
        ("tet_missing_node.node", "tetrahedron 2", "node 5"),
        ("tet_quadratic.msh", "line 13", "quadratic"),
        ("tet.vtk", "format", "unknown tetrahedral mesh format '.vtk'"),
    ];
    for (f, element, what) in cases {
        let p = repo().join("tests/data/meshes").join(f);
        let e = read_tet_mesh(&p).expect_err(f).to_string();
        assert!(e.contains(f.split('.').next().unwrap()), "{f}: message does not name the file: {e}");
        assert!(e.contains(element), "{f}: message does not name '{element}': {e}");
        assert!(e.contains(what), "{f}: message does not say '{what}': {e}");
    }
    let e = read_tet_mesh(&repo().join("tests/data/meshes/nope.msh")).unwrap_err().to_string();
    assert!(e.contains("nope.msh") && e.contains("cannot read"), "{e}");
    // through a scene: the scene loader reports the mesh file's message
    let e = load_err(
        "solver: {kind: vfpi}\ndeformables:\n  - name: x\n    mesh: ../../tests/data/meshes/tet_inverted.msh\n    material: {density_kg_m3: 1000, youngs_modulus_pa: 1e5, poisson_ratio: 0.3}\n",
    );
    assert!(e.contains("tet_inverted.msh") && e.contains("tetrahedron 3"), "{e}");
}

#[test]
fn bad_materials_are_rejected_with_the_key() {
    for (material, key) in [
        ("{density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.5}", "material.poisson_ratio"),
        ("{density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.7}", "material.poisson_ratio"),
        ("{density_kg_m3: 1000, youngs_modulus_pa: 0, poisson_ratio: 0.3}", "material.youngs_modulus_pa"),
        ("{density_kg_m3: 1000, youngs_modulus_pa: -5, poisson_ratio: 0.3}", "material.youngs_modulus_pa"),
        ("{density_kg_m3: 0, youngs_modulus_pa: 1e6, poisson_ratio: 0.3}", "material.density_kg_m3"),
        ("{density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.3, rayleigh_mass_1_s: -1}", "material.rayleigh_mass_1_s"),
    ] {
        let e = load_err(&ball_scene(material));
        assert!(e.contains("_test_scene.yaml") && e.contains("deformables[0] ('ball')") && e.contains(key), "{material}: {e}");
    }
    // unknown keys are rejected
    let e = load_err(&ball_scene("{density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.3, colour: red}"));
    assert!(e.contains("unknown field `colour`"), "{e}");
    // deformables need the V-FPI solver
    let e = load_err(&ball_scene("{density_kg_m3: 1000, youngs_modulus_pa: 1e6, poisson_ratio: 0.3}").replace("solver: {kind: vfpi}\n", ""));
    assert!(e.contains("solver.kind") && e.contains("vfpi"), "{e}");
}

#[test]
fn attachments_select_nodes_and_name_bad_links() {
    let yaml = "solver: {kind: vfpi}\ndeformables:\n  - name: pad\n    mesh: ../../assets/meshes/finger_pad.node\n    material: {density_kg_m3: 1000, youngs_modulus_pa: 1e5, poisson_ratio: 0.3}\n    attachments: [{box_min: [-1, -1, 0.0119], box_max: [1, 1, 1], to: world}]\n";
    let s = scene(yaml);
    let pinned = s.model.deformables[0].attachment.iter().filter(|a| **a == contact_sim::fem::NodeAttachment::World).count();
    assert_eq!(pinned, 7 * 5, "the top layer of the 7 × 5 × 4 grid");
    let e = load_err(&yaml.replace("to: world", "to: {link: ghost}"));
    assert!(e.contains("attachments[0].to") && e.contains("ghost"), "{e}");
    let e = load_err(&yaml.replace("box_min: [-1, -1, 0.0119], box_max: [1, 1, 1]", "nodes: [500]"));
    assert!(e.contains("node 500 does not exist"), "{e}");
}
