//! Writes the example tetrahedral meshes shipped in `assets/meshes/` (all generated here, no
//! third-party assets):
//!
//! | file | format | what |
//! |---|---|---|
//! | `soft_ball.msh` | Gmsh 4.1 ASCII | ball, radius 40 mm, 11³ nodes (3 993 DOF), cube grid mapped onto the sphere |
//! | `soft_mat.msh` | Gmsh 2.2 ASCII | mat 300 × 300 × 10 mm, 25 × 25 × 2 nodes (3 750 DOF) |
//! | `finger_pad.node/.ele` | TetGen | finger pad 30 × 20 × 12 mm, 7 × 5 × 4 nodes (420 DOF) |
//! | `tomato.msh` | Gmsh 4.1 ASCII | ball, radius 35 mm, 5³ nodes, 384 tets (the size of the paper's 319-tet tomato) |
//!
//! Run: `cargo run --release --example gen_meshes [OUT_DIR]` (default `assets/meshes`).

use contact_sim::config::{write_gmsh22, write_gmsh41, write_tetgen};
use contact_sim::fem::TetMesh;
use contact_sim::math::Vec3;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "assets/meshes".into()));
    std::fs::create_dir_all(&dir)?;
    let ball = TetMesh::ball(0.04, 10);
    write_gmsh41(&ball, &dir.join("soft_ball.msh"))?;
    // mat centred on its origin in x, y; bottom face at z = 0
    let mut mat = TetMesh::box_grid([0.3, 0.3, 0.01], [24, 24, 1]);
    mat.translate(Vec3::new(-0.15, -0.15, 0.0));
    write_gmsh22(&mat, &dir.join("soft_mat.msh"))?;
    // finger pad: centred in x, y, contact face at z = 0, back face (to weld) at z = 0.012
    let mut pad = TetMesh::box_grid([0.03, 0.02, 0.012], [6, 4, 3]);
    pad.translate(Vec3::new(-0.015, -0.01, 0.0));
    write_tetgen(&pad, &dir.join("finger_pad.node"))?;
    let tomato = TetMesh::ball(0.035, 4);
    write_gmsh41(&tomato, &dir.join("tomato.msh"))?;
    for (name, m) in [("soft_ball", &ball), ("soft_mat", &mat), ("finger_pad", &pad), ("tomato", &tomato)] {
        println!("{name}: {} nodes ({} DOF), {} tets, volume {:.6e} m³", m.nodes.len(), 3 * m.nodes.len(), m.tets.len(), m.volume());
    }
    Ok(())
}
