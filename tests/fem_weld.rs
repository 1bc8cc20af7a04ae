//! Two-way welds of deformable nodes to robot links (issue 7): the link carries the
//! deformable's weight (F/T sensor, joint effort, weld forces) and its inertia (a free joint
//! pushed by a constant force accelerates the link and the block together).

mod common;

use common::*;
use contact_sim::math::Vec3;
use contact_sim::sim::Simulation;

const G: f64 = 9.81;
const M_CARRIAGE: f64 = 1.0;
const M_HOLDER: f64 = 0.5;
/// Block edge (m) and density (kg/m³): 0.216 m³·1e-3 · 2000 = 0.432 kg.
const EDGE: f64 = 0.06;
const RHO: f64 = 2000.0;

/// A one-axis hoist: a fixed base, the prismatic joint `lift` along `axis` (1 kg carriage) and,
/// on the fixed joint `ft_joint`, a 0.5 kg holder without collision geometry, whose origin is
/// the carriage's (world (0, 0, 1) at q = 0) and whose frame (the sensor frame) is turned 90°
/// about y: sensor x = world −z, sensor z = world +x.
fn hoist_urdf(axis: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<robot name="hoist">
  <link name="hoist_base"><inertial><mass value="1.0"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="carriage"><inertial><mass value="{M_CARRIAGE}"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="holder"><inertial><mass value="{M_HOLDER}"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="lift" type="prismatic">
    <parent link="hoist_base"/><child link="carriage"/><origin xyz="0 0 0"/><axis xyz="{axis}"/>
    <limit lower="-0.5" upper="0.5" effort="500" velocity="10.0"/>
  </joint>
  <joint name="ft_joint" type="fixed"><parent link="carriage"/><child link="holder"/><origin xyz="0 0 0" rpy="0 1.5707963267948966 0"/></joint>
</robot>
"#
    )
}

/// A scene with the hoist at world (0, 0, 1) and a 60 mm FEM cube hanging below the holder,
/// its top face (16 nodes) welded to it. `control` is the robot's control block.
fn hoist_scene(tag: &str, axis: &str, control: &str, extra: &str) -> Simulation {
    let dir = repo().join("target/test-scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let urdf = dir.join(format!("hoist_{tag}.urdf"));
    std::fs::write(&urdf, hoist_urdf(axis)).unwrap();
    let mesh = dir.join(format!("weld_cube_{tag}.msh"));
    contact_sim::config::write_gmsh41(&contact_sim::fem::TetMesh::box_grid([EDGE; 3], [3, 3, 3]), &mesh).unwrap();
    let yaml = format!(
        "timestep_s: 0.01\nground: {{enabled: false}}\nsolver: {{kind: vfpi, tolerance: 1.0e-6, residual_tolerance: 1.0e-4, max_iterations: 5000, virtual_node_gain: 1000}}\nrobots:\n  - urdf: {}\n    base: {{mode: fixed, position: [0, 0, 1.0]}}\n    control: {control}\ndeformables:\n  - name: block\n    mesh: {}\n    position: [{h}, {h}, {z}]\n    material: {{density_kg_m3: {RHO}, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.3, rayleigh_stiffness_s: 0.01}}\n    attachments: [{{box_min: [-1, -1, 0.9999], box_max: [1, 1, 2], to: {{link: holder}}}}]\nsensors:\n  - {{name: hoist_ft, joint: ft_joint}}\n{extra}",
        urdf.display(),
        mesh.display(),
        h = -EDGE / 2.0,
        z = 1.0 - EDGE,
    );
    Simulation::from_scene(&scene(&yaml), None)
}

/// Sum of the last step's weld forces on the deformable nodes (N, world).
fn weld_force_on_nodes(sim: &Simulation) -> Vec3 {
    let f = sim.workspace.fem.as_ref().unwrap();
    f.welds.iter().map(|w| Vec3::new(w.impulse[0], w.impulse[1], w.impulse[2])).sum::<Vec3>() / sim.model.timestep_s
}

#[test]
fn hanging_block_weighs_on_the_sensor_and_the_joint() {
    let mut sim = hoist_scene("z", "0 0 1", "{default: {mode: position, kp: 20000, kd: 500}}", "");
    let m_block = sim.model.deformables[0].total_mass();
    assert!((m_block - RHO * EDGE.powi(3)).abs() < 1e-9 * m_block, "lumped mass {m_block} vs ρ V");
    assert_eq!(sim.workspace.fem.as_ref().unwrap().welds.capacity(), 16, "the top face (4 × 4 nodes) is welded");
    let k = sim.model.joint_dof("lift").unwrap();
    let mut unconverged = 0;
    for _ in 0..200 {
        let r = sim.step();
        unconverged += usize::from(!r.solve.converged);
        assert!(sim.state.is_finite());
    }
    let reading = sim.state.sensors[0].ideal;
    let weld = weld_force_on_nodes(&sim);
    let effort = sim.workspace.applied_effort[k];
    let (w_block, w_sensor, w_joint) = (m_block * G, (M_HOLDER + m_block) * G, (M_CARRIAGE + M_HOLDER + m_block) * G);
    println!("block {m_block:.4} kg: weld force on nodes {weld:?} N (m g = {w_block:.4}), sensor {reading:?} (expected x +{w_sensor:.4}), lift effort {effort:.4} N (expected {w_joint:.4}), unconverged steps {unconverged}");
    // the welds hold the block: +m g on the nodes (world z up)
    assert!((weld.z - w_block).abs() < 0.01 * w_block, "weld force {} N vs m g {w_block} N", weld.z);
    assert!(weld.x.hypot(weld.y) < 1e-3 * w_block, "sideways weld force {weld:?}");
    // the sensor reads the pull of holder + block on the carriage, world −z = sensor +x, and no
    // moment (the block hangs centred below the sensor origin)
    assert!((reading[0] - w_sensor).abs() < 0.01 * w_sensor, "sensor x {} N vs +{w_sensor} N", reading[0]);
    assert!(reading[1].hypot(reading[2]) < 1e-3 * w_sensor, "sensor y, z {reading:?}");
    assert!(reading[3..].iter().all(|t| t.abs() < 1e-3 * w_sensor * EDGE), "sensor moment {reading:?}");
    // the position servo lifts everything
    assert!((effort - w_joint).abs() < 0.01 * w_joint, "lift effort {effort} N vs {w_joint} N");
    assert!(unconverged < 10, "{unconverged} of 200 steps did not converge");
    // the weld holds: welded nodes stay on their link points (sub-millimetre)
    let worst = sim.workspace.fem.as_ref().unwrap().welds.iter().map(|w| w.error.norm()).fold(0.0, f64::max);
    assert!(worst < 1e-4, "weld error {worst} m");
}

#[test]
fn pushed_free_carriage_accelerates_with_the_block() {
    // horizontal lift, effort-controlled: a constant 10 N along x accelerates carriage, holder
    // and block together, a = F / (m_carriage + m_holder + m_block) (one-way welds: F / 1.5 kg)
    let f = 10.0;
    let mut sim = hoist_scene(
        "x",
        "1 0 0",
        "{default: {mode: effort}}",
        &format!("script:\n  - {{time_s: 0.0, efforts: {{lift: {f}}}}}\n"),
    );
    let m_block = sim.model.deformables[0].total_mass();
    let m_total = M_CARRIAGE + M_HOLDER + m_block;
    let k = sim.model.joint_dof("lift").unwrap();
    let steps = 30;
    let mut iterations = 0;
    for _ in 0..steps {
        let r = sim.step();
        assert!(r.solve.converged, "t = {}: {:?}", sim.state.time_s, r.solve);
        iterations += r.solve.iterations;
    }
    println!("mean iterations {:.1}", iterations as f64 / steps as f64);
    let t = sim.state.time_s;
    let p_rigid = (M_CARRIAGE + M_HOLDER) * sim.state.v[k];
    let p_fem = contact_sim::fem::fem_momentum(&sim.model, &sim.state.fem_v);
    let x = sim.state.q[sim.model.bodies.iter().find(|b| b.joint.v_index == k && b.joint.kind.nv() == 1).unwrap().joint.q_index];
    // backward Euler from rest under a constant force: x_n = F h² n (n + 1) / (2 m)
    let n = steps as f64;
    let x_expected = f * 0.01 * 0.01 * n * (n + 1.0) / (2.0 * m_total);
    println!("t = {t:.2}: momentum rigid {p_rigid:.4} + block {:.4} = {:.4} N·s (F t = {:.4}), carriage x {x:.5} m (F h² n (n + 1) / (2 m) = {x_expected:.5})", p_fem.x, p_rigid + p_fem.x, f * t);
    // momentum balance: the only external x force is F
    assert!((p_rigid + p_fem.x - f * t).abs() < 0.01 * f * t, "momentum {} vs F t {}", p_rigid + p_fem.x, f * t);
    // the block moves with the carriage (the weld drags it), so the carriage sees the total mass
    assert!((p_fem.x / m_block - sim.state.v[k]).abs() < 0.05 * sim.state.v[k], "block {} m/s vs carriage {} m/s", p_fem.x / m_block, sim.state.v[k]);
    assert!((x - x_expected).abs() < 0.03 * x_expected, "carriage x {x} m vs {x_expected} m (total mass {m_total} kg)");
}
