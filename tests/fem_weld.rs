//! Two-way welds of deformable nodes to robot links (docs/fem.md): the link carries the
//! deformable's weight (F/T sensor, joint effort, weld forces) and its inertia (a free joint
//! pushed by a constant force accelerates the link and the block together).


use crate::common::*;
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
    let p_fem = contact_sim::fem::fem_momentum(&sim.model.deformables, &sim.state.fem_v);
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

#[test]
fn spinning_free_body_carries_a_welded_block_with_momentum_conserved() {
    // zero gravity: a free 1 kg cube (100 mm) spins at 2 rad/s about world z and drifts at
    // 0.1 m/s along y, with the 60 mm FEM block (at rest) welded (two-way) to its +x face. The
    // welds are internal forces: the total momentum stays at its initial value, the centre of
    // mass of the pair moves in a straight line at P / M, and the pair turns at the rate its
    // angular momentum gives (the point Jacobian's angular part: the welds torque the hub).
    // The momentum error per step is bounded by the dynamics residual the solve stops at
    // (residual_tolerance · ‖b‖), so that is set well below the 1e-3 asked of 60 steps: at 1e-5
    // the iteration with the rigid correction stops at 2.5e-3 (docs/vfpi.md).
    let dir = repo().join("target/test-scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let mesh = dir.join("weld_cube_spin.msh");
    contact_sim::config::write_gmsh41(&contact_sim::fem::TetMesh::box_grid([EDGE; 3], [3, 3, 3]), &mesh).unwrap();
    let yaml = format!(
        "timestep_s: 0.01\ngravity: [0, 0, 0]\nground: {{enabled: false}}\nsolver: {{kind: vfpi, tolerance: 1.0e-7, residual_tolerance: 1.0e-7, max_iterations: 20000, virtual_node_gain: 1000}}\nobjects:\n  - {{name: hub, shape: {{type: box, size: [0.1, 0.1, 0.1]}}, mass_kg: 1.0, position: [0, 0, 0], linear_velocity: [0, 0.1, 0], angular_velocity: [0, 0, 2.0]}}\ndeformables:\n  - name: block\n    mesh: {}\n    position: [0.05, {h}, {h}]\n    material: {{density_kg_m3: {RHO}, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.3, rayleigh_stiffness_s: 0.01}}\n    attachments: [{{box_min: [-1, -1, -1], box_max: [0.0501, 1, 1], to: {{link: hub}}}}]\n",
        mesh.display(),
        h = -EDGE / 2.0,
    );
    let mut sim = Simulation::from_scene(&scene(&yaml), None);
    let m_block = sim.model.deformables[0].total_mass();
    let m_hub = 1.0;
    let momentum = |sim: &Simulation| object_velocity(sim, "hub") * m_hub + contact_sim::fem::fem_momentum(&sim.model.deformables, &sim.state.fem_v);
    let com = |sim: &Simulation| {
        let d = &sim.model.deformables[0];
        let x = &sim.state.fem_x;
        let fem: Vec3 = d.mass.iter().enumerate().map(|(i, m)| Vec3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2]) * *m).sum();
        (object_position(sim, "hub") * m_hub + fem) / (m_hub + m_block)
    };
    // the block starts at rest while the hub spins and drifts: the first step's weld impulse
    // brings it along; from then on the momentum must not change at all
    sim.step();
    let (p1, c1, t1) = (momentum(&sim), com(&sim), sim.state.time_s);
    let mut unconverged = 0;
    for _ in 0..60 {
        let r = sim.step();
        unconverged += usize::from(!r.solve.converged);
        assert!(sim.state.is_finite());
    }
    let (p2, c2, t2) = (momentum(&sim), com(&sim), sim.state.time_s);
    let c_expected = c1 + p1 / (m_hub + m_block) * (t2 - t1);
    // angular momentum about the pair's centre of mass c (z): initially the hub's spin I ω₀ minus
    // the moment of its drift, m (r_hub − c) × v₀; afterwards the pair turns as one body at ω
    // with I_total = I_hub + m_hub |r_hub − c|² + Σ m_i |x_i − c|² (in the xy plane, at rest shape)
    let d = &sim.model.deformables[0];
    let c0 = (d.rest.iter().zip(&d.mass).map(|(p, m)| p * *m).sum::<Vec3>()) / (m_hub + m_block);
    let i_hub = m_hub * 0.1 * 0.1 / 6.0;
    let l0 = i_hub * 2.0 + m_hub * (-c0.x * 0.1); // (r_hub − c) × v₀ = (−c.x, −c.y, 0) × (0, 0.1, 0)
    let i_total = i_hub + m_hub * c0.xy().norm_squared() + d.rest.iter().zip(&d.mass).map(|(p, m)| m * (p - c0).xy().norm_squared()).sum::<f64>();
    let omega_expected = l0 / i_total;
    let j = &sim.model.bodies[sim.model.objects[0].body].joint;
    let omega = sim.state.v[j.v_index + 5];
    println!("momentum {p1:?} → {p2:?} N·s; COM {c2:?} vs straight line {c_expected:?} m; hub spin {omega:.5} rad/s (angular momentum {l0:.3e} N·m·s / I {i_total:.3e} kg·m² = {omega_expected:.5}); unconverged {unconverged}");
    assert!((p2 - p1).norm() < 1e-3 * p1.norm().max(0.05), "momentum changed from {p1:?} to {p2:?}");
    // the first step is a plastic collision (spin 2 → 0.24 rad/s in 10 ms): the free body's
    // velocity-product term, evaluated at the step's start, costs ~2 % of the momentum there
    assert!((p1 - Vec3::new(0.0, 0.1, 0.0)).norm() < 0.03 * 0.1, "the first step's welds changed the momentum: {p1:?}");
    assert!((c2 - c_expected).norm() < 1e-4, "COM {c2:?} off the straight line {c_expected:?}");
    assert!((omega - omega_expected).abs() < 0.02 * omega_expected, "hub spin {omega} rad/s vs {omega_expected} rad/s from angular momentum");
    assert!(unconverged <= 3, "{unconverged} of 60 steps did not converge");
}

#[test]
fn welded_mat_is_bit_identical_serial_and_parallel() {
    // the arm holding the mat (50 welds, ~600 contacts: the parallel constraint chunks mix
    // bilateral welds and cone-projected contacts): 1 and 2 solver threads agree to the bit
    let yaml = std::fs::read_to_string(repo().join("config/examples/fem_mat_fold.yaml")).unwrap().replace("../../", &format!("{}/", repo().display()));
    let run = |threads: usize| {
        let y = yaml.replace("virtual_node_gain: 1000}", &format!("virtual_node_gain: 1000, threads: {threads}}}"));
        assert_ne!(y, yaml, "the solver line changed");
        let mut sim = Simulation::from_scene(&scene(&y), None);
        for _ in 0..8 {
            sim.step();
        }
        let welds: Vec<[f64; 3]> = sim.workspace.fem.as_ref().unwrap().welds.iter().map(|w| w.impulse).collect();
        (sim.state.fem_x.clone(), sim.state.q.clone(), welds)
    };
    let (a, b) = (run(1), run(2));
    assert!(a.2.iter().any(|w| w[2] != 0.0), "the welds carry load");
    assert!(a.0.iter().zip(&b.0).all(|(x, y)| x.to_bits() == y.to_bits()), "node positions differ");
    assert!(a.1.iter().zip(&b.1).all(|(x, y)| x.to_bits() == y.to_bits()), "arm q differs");
    assert!(a.2.iter().zip(&b.2).all(|(x, y)| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())), "weld impulses differ");
}
