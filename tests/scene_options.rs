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

/// The free pendulum (urdf/pendulum.urdf, I = 1.00004 kg·m² about the pivot, m g L = 9.81 N·m)
/// with `extra` under its robot entry, released from `q0` rad, no ground.
fn pendulum_yaml(extra: &str, q0: f64) -> String {
    format!("ground: {{enabled: false}}\nrobots:\n  - urdf: ../../urdf/pendulum.urdf\n    base: {{mode: fixed, position: [0, 0, 2]}}\n    initial_positions: {{pendulum_joint: {q0}}}\n{extra}")
}

/// Mean period (s) of the joint's oscillation from its downward zero crossings over `seconds`.
fn period(sim: &mut Simulation, seconds: f64) -> f64 {
    let dof = sim.model.joint_dof("pendulum_joint").unwrap();
    let mut crossings = vec![];
    let mut last = sim.state.q[dof];
    for _ in 0..(seconds / sim.model.timestep_s) as usize {
        sim.step();
        let q = sim.state.q[dof];
        if last > 0.0 && q <= 0.0 {
            crossings.push(sim.state.time_s - sim.model.timestep_s * q / (q - last));
        }
        last = q;
    }
    (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64
}

#[test]
fn armature_adds_reflected_inertia_under_every_method() {
    // T = 2π √((I + a) / (m g L)): a = 1 kg·m² doubles the inertia, T × √2
    let yaml = pendulum_yaml("    joints: {pendulum_joint: {armature: 1.0}}\n", 0.05);
    let expected = std::f64::consts::TAU * ((1.00004 + 1.0) / 9.81f64).sqrt();
    let plain = std::f64::consts::TAU * (1.00004 / 9.81f64).sqrt();
    for kind in solver_kinds_for(&yaml) {
        let mut sim = crate::common::sim(&yaml, kind);
        let t = period(&mut sim, 12.0);
        assert!((t - expected).abs() < 2e-3 * expected, "{kind}: period {t} s, expected {expected} s (without armature {plain} s)");
        let m = &sim.model;
        let dof = m.joint_dof("pendulum_joint").unwrap();
        contact_sim::kinematics::forward_kinematics(m, &sim.state.q, &sim.state.v, &mut sim.workspace);
        contact_sim::dynamics::update_body_inertias(m, &mut sim.workspace);
        contact_sim::dynamics::mass_matrix(m, &mut sim.workspace);
        let mqq = sim.workspace.mass_matrix.get(dof, dof);
        assert!((mqq - 2.00004).abs() < 1e-6, "{kind}: M(q) diagonal {mqq}, expected I + a = 2.00004");
    }
}

#[test]
fn command_delay_shifts_the_response_by_the_delay() {
    // an effort step at 0.1 s: with a 20 ms delay the joint moves exactly as without, 20 steps later
    let script = "script:\n  - {time_s: 0.0, efforts: {pendulum_joint: 0.0}}\n  - {time_s: 0.1, efforts: {pendulum_joint: 0.0}}\n  - {time_s: 0.1001, efforts: {pendulum_joint: 2.0}}\n";
    let effort = "    control: {default: {mode: effort}}\n";
    let run = |delay: &str| {
        let mut sim = crate::common::sim(&format!("{delay}{}{script}", pendulum_yaml(effort, 0.0)), "pgs");
        let dof = sim.model.joint_dof("pendulum_joint").unwrap();
        (0..600)
            .map(|_| {
                sim.step();
                sim.state.q[dof]
            })
            .collect::<Vec<f64>>()
    };
    let (now, late) = (run(""), run("command_delay_s: 0.02\n"));
    assert!(now[300].abs() > 1e-3, "the effort moves the joint");
    for k in 0..580 {
        assert_eq!(late[k + 20].to_bits(), now[k].to_bits(), "step {k}: delayed {} vs {}", late[k + 20], now[k]);
    }
    // a delay of half a step interpolates: the response lies between the two whole-step ones
    let half = run("command_delay_s: 0.0205\n");
    let late21 = run("command_delay_s: 0.021\n");
    let (lo, hi) = (late[400].min(late21[400]), late[400].max(late21[400]));
    assert!(half[400] > lo && half[400] < hi, "{} not strictly between {lo} and {hi}", half[400]);
}

#[test]
fn joint_and_link_overrides_replace_the_urdf_values_and_unknown_names_are_refused() {
    let s = scene(&pendulum_yaml("    joints: {pendulum_joint: {friction: 0.3, damping: 0.7, effort_limit: 12.0}}\n    links: {pole: {mass_kg: 2.0, com_m: [0.0, 0.0, -0.5]}}\n", 0.0));
    let j = &s.model.bodies[s.model.joint_body("pendulum_joint").unwrap()].joint;
    assert_eq!((j.friction, j.damping, j.effort_limit), (0.3, 0.7, 12.0));
    let pole = &s.model.bodies[s.model.body_id("pole").unwrap()];
    assert_eq!(pole.mass, 2.0);
    assert!((pole.com - contact_sim::math::Vec3::new(0.0, 0.0, -0.5)).norm() < 1e-12);
    for (extra, needle) in [
        ("    joints: {no_such_joint: {friction: 0.3}}\n", "no movable joint 'no_such_joint'"),
        ("    links: {no_such_link: {mass_kg: 1.0}}\n", "no link 'no_such_link'"),
        ("    joints: {pendulum_joint: {armature: -1.0}}\n", "armature"),
        ("    links: {pole: {mass_kg: 0.0}}\n", "mass_kg: must be > 0"),
    ] {
        let e = contact_sim::config::load_scene_str(&pendulum_yaml(extra, 0.0), &path("config/examples/x.yaml")).err().unwrap_or_else(|| panic!("accepted: {extra}")).to_string();
        assert!(e.contains(needle), "{extra}: {e}");
    }
    let e = contact_sim::config::load_scene_str(&format!("command_delay_s: 2.0\n{}", pendulum_yaml("", 0.0)), &path("config/examples/x.yaml")).err().unwrap().to_string();
    assert!(e.contains("command_delay_s"), "{e}");
}
