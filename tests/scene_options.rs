//! Scene options added for the bisection experiments (docs/bisection.md): per-robot `collision_links` and
//! initial base velocity, a periodic `script_period_s`, and episode resets `reset_period_s`.


use crate::common::*;
use contact_sim::contact::SolverConfig;
use contact_sim::sim::Simulation;

const QUADRUPED: &str = "  - urdf: ../../urdf/quadruped.urdf
    material: rubber
    initial_positions: {LF_HFE: 0.4, LF_KFE: -0.8, RF_HFE: 0.4, RF_KFE: -0.8, LH_HFE: -0.4, LH_KFE: 0.8, RH_HFE: -0.4, RH_KFE: 0.8}
    control: {default: {mode: position, kp: 200.0, kd: 5.0}}
";

fn base_position(sim: &Simulation) -> [f64; 3] {
    [sim.state.q[0], sim.state.q[1], sim.state.q[2]]
}

#[test]
fn collision_links_keep_only_those_links_geometry() {
    let all = scene(&format!("materials: {{rubber: {{friction: 1.0}}}}\nrobots:\n{QUADRUPED}    base: {{mode: floating, position: [0, 0, 0.487]}}\n"));
    let feet = scene(&format!(
        "materials: {{rubber: {{friction: 1.0}}}}\nrobots:\n{QUADRUPED}    base: {{mode: floating, position: [0, 0, 0.487]}}\n    collision_links: [LF_foot, RF_foot, LH_foot, RH_foot]\n"
    ));
    let robot_geoms = |s: &contact_sim::config::Scene| -> Vec<String> { s.model.geoms.iter().filter(|g| g.body.is_some()).map(|g| g.name.clone()).collect() };
    // base box, 4 thighs, 4 shanks, 4 feet
    assert_eq!(robot_geoms(&all).len(), 13);
    let mut names = robot_geoms(&feet);
    names.sort();
    assert_eq!(names, ["LF_foot/collision[0]", "LH_foot/collision[0]", "RF_foot/collision[0]", "RH_foot/collision[0]"]);
    // only ground–foot pairs remain
    assert_eq!(feet.model.collision_pairs.len(), 4);
}

#[test]
fn upside_down_robot_falls_through_the_ground_until_its_feet_catch() {
    // the hang experiment, shortened: the torso passes the ground plane, the feet hold
    let s = scene_file("config/examples/bisection_hang.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let mut lowest: f64 = f64::INFINITY;
    for _ in 0..1500 {
        let r = sim.step();
        assert!(r.contacts <= 4);
        lowest = lowest.min(base_position(&sim)[2]);
        assert_impulses_in_cone(&sim);
    }
    let z = base_position(&sim)[2];
    assert!(z < -0.40 && z > -0.47, "the base hangs below the ground from the feet, z = {z}");
    assert!(lowest > -0.6, "the feet caught the fall: lowest base height {lowest}");
    assert_eq!(sim.workspace.contacts.len(), 4, "hanging from four feet");
}

#[test]
fn initial_base_velocity_is_world_frame() {
    // yawed by 90°: a world-frame +x velocity is body-frame −y
    let s = scene(&format!(
        "materials: {{rubber: {{friction: 1.0}}}}\nground: {{enabled: false}}\ngravity: [0, 0, 0]\nrobots:\n{QUADRUPED}    base: {{mode: floating, position: [0, 0, 1], rpy: [0, 0, 1.5707963267948966], linear_velocity: [1.0, 0, 0], angular_velocity: [0, 0, 0.5]}}\n"
    ));
    let mut sim = Simulation::from_scene(&s, Some(&SolverConfig::from_kind("bisection").unwrap()));
    let v = &sim.state.v[..6];
    assert!((v[0]).abs() < 1e-12 && (v[1] + 1.0).abs() < 1e-12 && (v[5] - 0.5).abs() < 1e-12, "{v:?}");
    for _ in 0..100 {
        sim.step();
    }
    let p = base_position(&sim);
    // the base origin moves at 1 m/s in world x (its centre of mass is at the origin)
    assert!((p[0] - 0.1).abs() < 2e-3 && p[1].abs() < 2e-3, "{p:?}");
}

#[test]
fn a_periodic_script_repeats_its_keyframes() {
    let text = "robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 50.0, kd: 2.0}}\nscript_period_s: 0.4\nscript:\n  - {time_s: 0.0, positions: {pendulum_joint: 0.0}}\n  - {time_s: 0.2, positions: {pendulum_joint: 1.0}}\n  - {time_s: 0.4, positions: {pendulum_joint: 0.0}}\n";
    let s = scene(text);
    assert_eq!(s.script_period_s, Some(0.4));
    let mut sim = Simulation::from_scene(&s, None);
    let k = sim.model.joint_dof("pendulum_joint").unwrap();
    let mut targets = vec![];
    for t in [0.1, 0.2, 0.5, 0.6, 1.3, 1.0] {
        sim.script.apply(t, &mut sim.commands);
        targets.push(sim.commands.position[k]);
    }
    let expect = [0.5, 1.0, 0.5, 1.0, 0.5, 1.0];
    for (got, want) in targets.iter().zip(expect) {
        assert!((got - want).abs() < 1e-9, "{targets:?}");
    }
}

#[test]
fn reset_period_restarts_episodes_and_the_script_goes_on() {
    let s = scene_file("config/examples/bisection_drop.yaml");
    assert_eq!(s.reset_period_s, Some(3.0));
    let mut sim = Simulation::from_scene(&s, None);
    assert_eq!(sim.reset_period_steps, Some(3000));
    let q0 = sim.state.q.clone();
    let mut first = vec![];
    for _ in 0..3000 {
        sim.step();
        first.push(base_position(&sim));
    }
    assert!((sim.state.time_s - 3.0).abs() < 1e-9);
    // the next step starts a new episode from the initial state, at t = 3 s
    sim.step();
    assert!((sim.state.time_s - 3.001).abs() < 1e-9, "time goes on");
    assert_eq!(sim.state.step_count, 3001);
    // this scene has no script, so the second episode repeats the first exactly
    assert_eq!(base_position(&sim), first[0]);
    for p in first.iter().skip(1).take(999) {
        sim.step();
        assert_eq!(base_position(&sim), *p);
    }
    assert_ne!(sim.state.q, q0);
}
