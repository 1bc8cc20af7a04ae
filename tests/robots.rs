//! Robots from our URDFs: the quadruped standing and crouching, the arm pushing a box, mimic
//! joints, joint limits, joint damping and friction.


use crate::common::*;
use contact_sim::sim::Simulation;

fn base_height(sim: &Simulation) -> f64 {
    let r = &sim.model.robots[0];
    let b = sim.model.trees[r.tree].body_start;
    sim.state.q[sim.model.bodies[b].joint.q_index + 2]
}

#[test]
fn quadruped_stands_with_steady_base_height_and_carries_its_weight() {
    let scene = scene_file("config/examples/quadruped_stand.yaml");
    for solver in solver_kinds_for_scene(&scene) {
        let mut sim = Simulation::from_scene(&scene, Some(&contact_sim::contact::SolverConfig::from_kind(solver).unwrap()));
        let mass = sim.model.tree_mass(0);
        while sim.state.time_s < 1.0 {
            sim.step();
        }
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut worst_force: f64 = 0.0;
        while sim.state.time_s < 5.0 {
            let r = sim.step();
            assert_eq!(r.contacts, 4, "{solver}: four feet on the ground");
            let h = base_height(&sim);
            lo = lo.min(h);
            hi = hi.max(h);
            let f = contact_force_on_tree(&sim, 0);
            worst_force = worst_force.max((f.z - mass * 9.81).abs() / (mass * 9.81));
            assert_impulses_in_cone(&sim);
        }
        assert!(hi - lo < 1e-3, "{solver}: base height varied by {} m", hi - lo);
        // the URDF's standing posture puts the base at 0.4855 m; the PD sags under the load
        assert!((lo - 0.4855).abs() < 0.01, "{solver}: base height {lo}");
        assert!(worst_force < 0.005, "{solver}: foot forces off the weight by {:.3} %", 100.0 * worst_force);
    }
}

#[test]
fn quadruped_crouches_and_rises() {
    let scene = scene_file("config/examples/quadruped_crouch.yaml");
    let mut sim = Simulation::from_scene(&scene, None);
    let mut min_h = f64::INFINITY;
    while sim.state.time_s < 6.0 {
        sim.step();
        min_h = min_h.min(base_height(&sim));
        // the base stays level while crouching symmetrically
        let q = &sim.state.q[3..7];
        let tilt = 2.0 * (q[0] * q[0] + q[1] * q[1]).sqrt();
        assert!(tilt < 0.02, "base tilted {tilt} rad at t = {}", sim.state.time_s);
    }
    // thigh and shank 0.25 m each: at HFE 0.8 / KFE -1.6 the leg height is 0.5 cos 0.8 = 0.348 m
    // (vs 0.5 cos 0.4 = 0.461 m standing): the base drops by ≈ 0.112 m.
    let stand = 0.4855;
    assert!((stand - min_h - 0.112).abs() < 0.01, "crouch depth {} m", stand - min_h);
    assert!((base_height(&sim) - stand).abs() < 0.01, "rose back to {} m", base_height(&sim));
}

#[test]
fn arm_pushes_the_box_across_the_floor() {
    let scene = scene_file("config/examples/arm_push_box.yaml");
    let mut sim = Simulation::from_scene(&scene, None);
    let x0 = object_position(&sim, "box").x;
    while sim.state.time_s < 7.0 {
        sim.step();
    }
    let p = object_position(&sim, "box");
    // the fingertips travel from x = 0.45 to 0.75 m; the box's near face starts at 0.47 m
    assert!(p.x - x0 > 0.25, "box moved {} m", p.x - x0);
    assert!(p.y.abs() < 0.02 && (p.z - 0.06).abs() < 1e-3, "box pushed straight, still on the floor: {p:?}");
}

#[test]
fn mimic_finger_follows_its_leader() {
    let scene = scene_file("config/examples/arm_push_box.yaml");
    let mut sim = Simulation::from_scene(&scene, None);
    sim.script = Default::default();
    let left = sim.model.joint_dof("finger_left_joint").unwrap();
    let right_body = sim.model.joint_body("finger_right_joint").unwrap();
    let right_q = sim.model.bodies[right_body].joint.q_index;
    let left_q = sim.model.bodies[sim.model.joint_body("finger_left_joint").unwrap()].joint.q_index;
    sim.commands.position[left] = 0.03;
    let mut worst: f64 = 0.0;
    while sim.state.time_s < 1.0 {
        sim.step();
        worst = worst.max((sim.state.q[right_q] - sim.state.q[left_q]).abs());
    }
    assert!((sim.state.q[left_q] - 0.03).abs() < 1e-3, "left finger at {}", sim.state.q[left_q]);
    assert!(worst < 1e-3, "right finger deviated from the mimic coupling by {worst} m");
}

#[test]
fn joint_limits_hold_against_a_target_beyond_them() {
    let scene = scene_file("config/examples/arm_push_box.yaml");
    let mut sim = Simulation::from_scene(&scene, None);
    sim.script = Default::default();
    let b = sim.model.joint_body("arm_joint1").unwrap();
    let j = sim.model.bodies[b].joint.clone();
    let (_, hi) = j.position_limits.unwrap();
    sim.commands.position[j.v_index] = hi + 1.0;
    let mut max_q = f64::NEG_INFINITY;
    while sim.state.time_s < 3.0 {
        sim.step();
        max_q = max_q.max(sim.state.q[j.q_index]);
    }
    assert!(max_q <= hi + 2e-3, "arm_joint1 reached {max_q} beyond its limit {hi}");
    assert!(sim.state.q[j.q_index] > hi - 2e-3, "it rests at the limit: {}", sim.state.q[j.q_index]);
}

fn pendulum_with(friction: f64, damping: f64, q0: f64) -> Simulation {
    let scene = scene(&format!(
        "ground: {{enabled: false}}\nrobots:\n  - urdf: ../../urdf/pendulum.urdf\n    base: {{mode: fixed, position: [0, 0, 2]}}\n    initial_positions: {{pendulum_joint: {q0}}}\n"
    ));
    let mut model = scene.model.clone();
    let b = model.joint_body("pendulum_joint").unwrap();
    model.bodies[b].joint.friction = friction;
    model.bodies[b].joint.damping = damping;
    let mut sim = Simulation::new(model, &contact_sim::contact::SolverConfig::default());
    sim.script = Default::default();
    sim
}

#[test]
fn joint_coulomb_friction_holds_below_breakaway_and_stops_the_swing() {
    // gravity torque at 0.5 rad: m g L sin 0.5 = 4.70 N·m
    let mut sim = pendulum_with(6.0, 0.0, 0.5);
    for _ in 0..2000 {
        sim.step();
    }
    assert!((sim.state.q[0] - 0.5).abs() < 1e-6, "held by 6 N·m of friction: q = {}", sim.state.q[0]);
    let mut sim = pendulum_with(2.0, 0.0, 0.5);
    for _ in 0..20000 {
        sim.step();
    }
    // it ends at rest where |m g L sin q| ≤ friction
    let q = sim.state.q[0];
    assert!(sim.state.v[0].abs() < 1e-6, "still moving: {}", sim.state.v[0]);
    assert!(9.81 * q.sin().abs() <= 2.0 + 1e-3, "rests at q = {q} where gravity exceeds friction");
    assert!(q.abs() < 0.5, "it swung");
}

#[test]
fn joint_damping_decays_the_amplitude_at_the_predicted_rate() {
    // Linear damped oscillator I q̈ + d q̇ + m g L q = 0: amplitude ∝ exp(−d t / (2 I)).
    let d = 0.2;
    let mut sim = pendulum_with(0.0, d, 0.05);
    let i = {
        let b = &sim.model.bodies[sim.model.body_id("pole").unwrap()];
        b.inertia_com[(1, 1)] + b.mass * b.com.norm_squared()
    };
    let mut peaks = vec![];
    let mut prev = (sim.state.q[0], sim.state.v[0]);
    while sim.state.time_s < 10.0 {
        sim.step();
        let v = sim.state.v[0];
        if prev.1 > 0.0 && v <= 0.0 {
            peaks.push((sim.state.time_s, sim.state.q[0]));
        }
        prev = (sim.state.q[0], v);
    }
    let (t0, a0) = peaks[0];
    let (t1, a1) = *peaks.last().unwrap();
    let rate = (a0 / a1).ln() / (t1 - t0);
    let expected = d / (2.0 * i);
    assert!((rate - expected).abs() / expected < 0.02, "decay rate {rate} 1/s vs d/(2I) = {expected}");
}
