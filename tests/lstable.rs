//! The L-stable method (`solver: {kind: lstable}`) in the engine: material stiffness (Hertz
//! spheres, linear springs), the paper's ramp (E7) and sphere stack (E8), and the heavy stack
//! that the iterative rigid solvers lose. The method also runs the shared conformance suite
//! (`tests/conformance.rs`), the robot tests (`tests/robots.rs`) and the allocation test.


use crate::common::*;
use contact_sim::math::Vec3;
use contact_sim::sim::Simulation;

const G: f64 = 9.81;

/// World height of an object's origin.
fn height(sim: &Simulation, name: &str) -> f64 {
    object_position(sim, name).z
}

/// A 1 kg sphere of radius 0.05 m resting on the ground: Hertz contact with E* = E/(1 − ν²)
/// sinks to d = (m g / (E* √r))^{2/3}, and carries m g.
#[test]
fn hertz_sphere_sinks_to_the_hertz_depth_and_carries_its_weight() {
    let (e, nu, r, m): (f64, f64, f64, f64) = (1e8, 0.3, 0.05, 1.0);
    let yaml = format!(
        "timestep_s: 0.001\nsolver: {{kind: lstable}}\nmaterials: {{default: {{friction: 0.5}}, rubber: {{friction: 0.5, youngs_modulus_pa: {e}, poisson_ratio: {nu}, contact_damping_n_s_per_m: 50.0}}}}\nobjects:\n  - {{name: ball, shape: {{type: sphere, radius: {r}}}, mass_kg: {m}, position: [0, 0, {r}], material: rubber}}\n"
    );
    let mut sim = crate::common::sim(&yaml, "lstable");
    while sim.state.time_s < 2.0 {
        let rep = sim.step();
        assert!(rep.solve.converged, "t = {}", sim.state.time_s);
    }
    let e_star = e / (1.0 - nu * nu);
    let depth_want = (m * G / (e_star * r.sqrt())).powf(2.0 / 3.0);
    let depth = r - height(&sim, "ball");
    println!("Hertz depth {depth:.4e} m (analytic {depth_want:.4e} m)");
    assert!((depth - depth_want).abs() <= 1e-3 * depth_want, "depth {depth} vs {depth_want}");
    let f = contact_force_on_tree(&sim, object_tree(&sim, "ball"));
    assert!((f.z - m * G).abs() <= 1e-6 * m * G, "{f:?}");
}

/// A box of a material with linear contact stiffness k on rigid ground sinks by m g / (4 k) (four
/// corners); on ground of the same material the two springs are in series (k/2) and it sinks
/// twice as far; with rigid materials the sink is below a micrometre.
#[test]
fn linear_contact_stiffness_sets_the_sink_of_a_resting_box() {
    let m = 2.0;
    for k in [1e5, 1e6, 1e7] {
        let yaml = format!(
            "timestep_s: 0.001\nsolver: {{kind: lstable}}\nmaterials: {{default: {{friction: 0.8}}, soft: {{friction: 0.8, contact_stiffness_n_per_m: {k}, contact_damping_n_s_per_m: 200.0}}}}\nobjects:\n  - {{name: box, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass_kg: {m}, position: [0, 0, 0.1], material: soft}}\n"
        );
        let mut sim = crate::common::sim(&yaml, "lstable");
        while sim.state.time_s < 3.0 {
            assert!(sim.step().solve.converged);
        }
        let sink = 0.1 - height(&sim, "box");
        let want = m * G / (4.0 * k);
        assert!((sink - want).abs() <= 1e-4 * want, "k {k}: sink {sink} vs {want}");
    }
    let series = "timestep_s: 0.001\nsolver: {kind: lstable}\nmaterials: {default: {friction: 0.8, contact_stiffness_n_per_m: 1.0e6, contact_damping_n_s_per_m: 200.0}}\nobjects:\n  - {name: box, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 2.0, position: [0, 0, 0.1]}\n";
    let mut sim = crate::common::sim(series, "lstable");
    while sim.state.time_s < 3.0 {
        sim.step();
    }
    let sink = 0.1 - height(&sim, "box");
    assert!((sink - 2.0 * m * G / 4e6).abs() <= 1e-4 * sink, "springs in series: sink {sink}");
    let mut sim = crate::common::sim("solver: {kind: lstable}\nobjects:\n  - {name: box, shape: {type: box, size: [0.2, 0.2, 0.2]}, mass_kg: 2.0, position: [0, 0, 0.1]}\n", "lstable");
    while sim.state.time_s < 1.0 {
        sim.step();
    }
    assert!((0.1 - height(&sim, "box")).abs() < 1e-6);
}

/// The paper's ramp (E7, 3-D): a 1 kg box on four Hertz feet (r = 0.01 m, E* = 1e11 Pa,
/// B_n = 1 N·s/m) on a 15° ramp, h = 0.01 s, friction damper 1e6/h, 1 s. The box slides
/// a T (T + h)/2 with a = g (sin 15° − μ cos 15°) (the discrete semi-implicit Euler value:
/// 1.28220, 0.68405, 0.085891 m for μ = 0, 0.125, 0.25) and sticks at μ = 0.375; the normal
/// force is m g cos 15° / 4 ≈ 2.37 N per foot (the paper: "around 2.5 N"); no friction at μ = 0.
#[test]
fn box_on_hertz_feet_slides_down_the_ramp_by_the_coulomb_distance() {
    let theta = 15f64.to_radians();
    let (s, c) = theta.sin_cos();
    let down = Vec3::new(c, 0.0, -s);
    let mut distances = Vec::new();
    for (mu, want) in [(0.0, 1.28220), (0.125, 0.68405), (0.25, 0.085891), (0.375, 0.0)] {
        // centre 0.035 m along the ramp normal (half height + foot radius), rotated with the ramp
        let lift = 0.025 + 0.01;
        let yaml = format!(
            "timestep_s: 0.01\nground: {{incline_deg: 15.0}}\nsolver: {{kind: lstable}}\nmaterials: {{default: {{friction: {mu}}}, foot: {{friction: {mu}, youngs_modulus_pa: 1.0e11, poisson_ratio: 0.0, contact_damping_n_s_per_m: 1.0}}}}\nrobots:\n  - urdf: ../../tests/data/ramp_box_feet.urdf\n    base: {{mode: floating, position: [{px}, 0, {pz}], rpy: [0, {theta}, 0]}}\n    material: foot\n",
            px = lift * s,
            pz = lift * c,
        );
        let mut sim = crate::common::sim(&yaml, "lstable");
        let base_q = sim.model.bodies[sim.model.trees[0].body_start].joint.q_index;
        let p0 = Vec3::new(sim.state.q[base_q], sim.state.q[base_q + 1], sim.state.q[base_q + 2]);
        let mut normal_per_foot = 0.0;
        while sim.state.time_s < 1.0 - 1e-9 {
            let rep = sim.step();
            assert!(rep.solve.converged, "μ {mu}: unconverged at t = {}", sim.state.time_s);
            assert_eq!(rep.contacts, 4);
            let ws = &sim.workspace;
            normal_per_foot = (0..4).map(|i| ws.contact_impulse(i)[0]).sum::<f64>() / 4.0 / 0.01;
            if mu == 0.0 {
                for i in 0..4 {
                    let l = ws.contact_impulse(i);
                    assert!(l[1] == 0.0 && l[2] == 0.0, "friction at μ = 0: {l:?}");
                }
            }
            assert_impulses_in_cone(&sim);
        }
        let p1 = Vec3::new(sim.state.q[base_q], sim.state.q[base_q + 1], sim.state.q[base_q + 2]);
        let d = (p1 - p0).dot(&down);
        println!("μ {mu}: slid {d:.6} m (discrete Coulomb {want} m), normal force per foot {normal_per_foot:.4} N");
        if want > 0.0 {
            assert!((d - want).abs() <= 2e-3 * want, "μ {mu}: slid {d} m, want {want}");
        } else {
            assert!(d.abs() < 1e-5, "μ {mu}: the box should stick, moved {d} m");
        }
        assert!((normal_per_foot - G * c / 4.0).abs() < 0.01, "normal force per foot {normal_per_foot}");
        distances.push(d);
    }
    assert!(distances.windows(2).all(|w| w[0] > w[1]), "distance must fall with μ: {distances:?}");
}

/// The paper's sphere stack (E8, reduced): 10 spheres (r 0.1 m, 1 kg) spaced 1 cm apart in mid
/// air, Hertz contacts (E = 1e11 Pa, ν = 0), μ 0.5, h = 0.01 s, 5 s: the stack stands without
/// walls, at rest, without lateral drift, and contact k from the ground carries (10 − k) m g.
#[test]
fn sphere_stack_stands_and_each_contact_carries_the_weight_above_it() {
    let n = 10;
    let mut yaml = String::from("timestep_s: 0.01\nsolver: {kind: lstable}\nmaterials: {default: {friction: 0.5, youngs_modulus_pa: 1.0e11, poisson_ratio: 0.0, contact_damping_n_s_per_m: 1.0}}\nobjects:\n");
    for k in 0..n {
        yaml += &format!("  - {{name: s{k}, shape: {{type: sphere, radius: 0.1}}, mass_kg: 1.0, position: [0, 0, {}]}}\n", 0.1 + 0.21 * k as f64);
    }
    let mut sim = crate::common::sim(&yaml, "lstable");
    while sim.state.time_s < 5.0 - 1e-9 {
        let rep = sim.step();
        assert!(rep.solve.converged, "unconverged at t = {}", sim.state.time_s);
    }
    for k in 0..n {
        let name = format!("s{k}");
        let p = object_position(&sim, &name);
        assert!(p.x.abs() < 1e-12 && p.y.abs() < 1e-12, "{name} drifted to {p:?}");
        let v = object_velocity(&sim, &name);
        assert!(v.norm() < 1e-3, "{name} still moves at {v:?}");
    }
    // contact forces by height: the contact at height z carries the spheres above it
    let ws = &sim.workspace;
    let mut by_height: Vec<(f64, f64)> = (0..ws.contacts.len()).map(|i| (ws.contacts[i].position.z, ws.contact_force_world(i).z.abs())).collect();
    by_height.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert_eq!(by_height.len(), n, "{by_height:?}");
    for (k, (_, f)) in by_height.iter().enumerate() {
        let want = (n - k) as f64 * G;
        assert!((f - want).abs() <= 1e-4 * want, "contact {k}: {f} N, want {want}");
    }
}

/// The heavy stack (five boxes, ×8 mass per level, 4096:1, heaviest on top): the L-stable step
/// (direct active-set solve of the compliant problem) holds it with no visible sinking, where the
/// iterative rigid solvers at their defaults let it sink. Prints all three.
#[test]
fn heavy_stack_stands_under_lstable_where_the_iterative_solvers_sink() {
    assert_heavy_stack_stands_where_iterative_solvers_sink("lstable");
}

/// A rigid box starting 1 m inside the ground is pushed out at the capped depenetration speed
/// (`contact.max_depenetration_speed_m_s`, 1 m/s), not launched by the `φ₀/h` feedback of a
/// rigid contact (1000 m/s at h = 1 ms).
#[test]
fn deep_initial_overlap_is_pushed_out_at_the_capped_speed() {
    let mut sim = crate::common::sim("objects:\n  - {name: buried, shape: {type: box, size: [0.4, 0.4, 2.0]}, mass_kg: 1, position: [0, 0, 0]}\n", "lstable");
    let mut vmax: f64 = 0.0;
    for _ in 0..500 {
        sim.step();
        vmax = vmax.max(object_velocity(&sim, "buried").z);
    }
    assert!(vmax < 1.1, "launched at {vmax} m/s");
    assert!(height(&sim, "buried") > 0.3, "rises steadily: z = {} m after 0.5 s", height(&sim, "buried"));
}

/// Contact wrenches read the method's impulses like any other's: the quadruped's four foot
/// wrenches sum to its weight, and the box the arm pushes slides with friction μ N opposing the
/// motion (arm_push_box, μ 0.35).
#[test]
fn contact_wrenches_read_lstable_forces() {
    let lstable = contact_sim::contact::SolverConfig::from_kind("lstable").unwrap();
    let mut sim = Simulation::from_scene(&scene_file("config/examples/quadruped_stand.yaml"), Some(&lstable));
    for _ in 0..2000 {
        sim.step();
    }
    let mass = sim.model.tree_mass(0);
    let mut total = Vec3::zeros();
    for leg in ["LF", "RF", "LH", "RH"] {
        let b = sim.model.body_id(&format!("{leg}_foot")).unwrap();
        let w = contact_sim::sensors::body_contact_wrench(&sim.model, &sim.workspace, b);
        total += Vec3::new(w.world[0], w.world[1], w.world[2]);
    }
    // the servoed legs still settle at 2 s (4.7e-5 off at this instant)
    assert!((total.z - mass * G).abs() <= 1e-3 * mass * G, "feet carry {} N vs m g = {} N", total.z, mass * G);

    let mut sim = Simulation::from_scene(&scene_file("config/examples/arm_push_box.yaml"), Some(&lstable));
    let box_body = sim.model.body_id("box").unwrap();
    let (mut sliding_steps, mut unconverged) = (0, 0);
    while sim.state.time_s < 5.0 {
        unconverged += usize::from(!sim.step().solve.converged);
        if object_velocity(&sim, "box").x > 0.02 {
            let (mut normal, mut friction) = (0.0, Vec3::zeros());
            for (i, c) in sim.workspace.contacts.iter().enumerate() {
                if c.body_b == Some(box_body) && c.body_a.is_none() {
                    let l = sim.workspace.contact_impulse(i);
                    normal += l[0] / sim.model.timestep_s;
                    friction += (c.tangent1 * l[1] + c.tangent2 * l[2]) / sim.model.timestep_s;
                }
            }
            sliding_steps += 1;
            assert!((friction.norm() - 0.35 * normal).abs() < 1e-3 * 0.35 * normal, "friction {} N vs μN = {} N", friction.norm(), 0.35 * normal);
            assert!(friction.x < 0.0, "friction opposes the motion");
        }
    }
    assert!(sliding_steps > 500, "the box slid ({sliding_steps} steps)");
    // known: on a few steps after 3 s the polish finds no role to change yet misses the
    // tolerance, and the Gauss–Seidel iterate is kept (23 of 5000 here; see the docs page)
    println!("arm push under lstable: {unconverged} of 5000 steps unconverged");
    assert!(unconverged <= 50, "{unconverged} unconverged steps");
}
