//! Bad input gets one clear line naming the file and the element, a non-zero exit, never a panic.


use crate::common::*;
use std::process::Command;

fn run_cli(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(repo()).output().expect("run contact_sim");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

/// Asserts a clean failure whose one-line message contains every `needle`.
fn assert_clean_error(args: &[&str], needles: &[&str]) {
    let (code, stderr) = run_cli(args);
    assert_ne!(code, 0, "{args:?} succeeded");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got: {stderr}");
    for n in needles {
        assert!(lines[0].contains(n), "{args:?}: message lacks '{n}': {}", lines[0]);
    }
}

#[test]
fn broken_urdfs_name_the_file_and_element() {
    assert_clean_error(&["model", "tests/data/broken_missing_parent.urdf"], &["broken_missing_parent.urdf", "parent link 'ghost_link'"]);
    assert_clean_error(&["model", "tests/data/broken_inertia.urdf", "--inertia-check", "strict"], &["broken_inertia.urdf", "link 'bad_link'", "triangle inequality"]);
    assert_clean_error(&["model", "tests/data/broken_negative_mass.urdf"], &["broken_negative_mass.urdf", "link 'neg_link'", "mass"]);
    assert_clean_error(&["model", "tests/data/broken_joint_type.urdf"], &["broken_joint_type.urdf", "joint 'weird_joint'", "helical"]);
    assert_clean_error(&["model", "tests/data/broken_missing_mesh.urdf"], &["broken_missing_mesh.urdf", "link 'mesh_link'", "does_not_exist.stl", "does not exist"]);
    assert_clean_error(&["model", "tests/data/not_xml.urdf"], &["not_xml.urdf"]);
    assert_clean_error(&["model", "tests/data/no_such_file.urdf"], &["no_such_file.urdf", "cannot read"]);
}

#[test]
fn mesh_robot_loads_its_convex_hulls() {
    let (code, stderr) = run_cli(&["model", "tests/data/mesh_robot.urdf"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn bad_scene_files_name_the_file_and_key() {
    let p = write_scene("unknown_key.yaml", "timestep_s: 0.001\nobjects:\n  - name: b\n    shape: {type: box, size: [1, 1, 1]}\n    mass_kg: 1\n    colour: red\n");
    assert_clean_error(&["run", &p], &["unknown_key.yaml", "unknown field `colour`", "line 6"]);
    let p = write_scene("wrong_type.yaml", "timestep_s: fast\n");
    assert_clean_error(&["run", &p], &["wrong_type.yaml", "timestep_s", "invalid type"]);
    let p = write_scene("bad_shape.yaml", "objects:\n  - {name: b, shape: {type: torus, radius: 1}, mass_kg: 1}\n");
    assert_clean_error(&["run", &p], &["bad_shape.yaml", "torus"]);
    let p = write_scene("neg_mass.yaml", "objects:\n  - {name: b, shape: {type: sphere, radius: 0.1}, mass_kg: -1}\n");
    assert_clean_error(&["run", &p], &["neg_mass.yaml", "objects[0]", "mass_kg"]);
    let p = write_scene("bad_joint.yaml", "robots:\n  - urdf: ../../urdf/pendulum.urdf\n    initial_positions: {no_such_joint: 0.1}\n");
    assert_clean_error(&["run", &p], &["bad_joint.yaml", "no_such_joint"]);
    let p = write_scene("bad_urdf_path.yaml", "robots:\n  - urdf: missing.urdf\n");
    assert_clean_error(&["run", &p], &["missing.urdf", "cannot read"]);
    let p = write_scene("bad_material.yaml", "objects:\n  - {name: b, shape: {type: sphere, radius: 0.1}, mass_kg: 1, material: steel}\n");
    assert_clean_error(&["run", &p], &["bad_material.yaml", "unknown material 'steel'"]);
    let p = write_scene("bad_solver.yaml", "solver: {kind: pgs, max_iterations: 10, warp: 9}\n");
    assert_clean_error(&["run", &p], &["bad_solver.yaml", "warp"]);
    // a Newton option of the deformables' dual form under the primal form would be ignored
    let p = write_scene("ignored_newton_option.yaml", "solver: {kind: newton, node_step_limit: 0.1}\n");
    assert_clean_error(&["run", &p], &["ignored_newton_option.yaml", "solver.node_step_limit", "fem_formulation: dual_rows"]);
    let p = write_scene("dual_newton_option.yaml", "objects:\n  - {name: b, shape: {type: sphere, radius: 0.1}, mass_kg: 1, position: [0, 0, 1]}\nsolver: {kind: newton, fem_formulation: dual_rows, node_step_limit: 0.1}\n");
    let (code, stderr) = run_cli(&["run", &p, "--duration", "0.01"]);
    assert_eq!(code, 0, "the dual form takes node_step_limit: {stderr}");
    let p = write_scene("missing_mesh_object.yaml", "objects:\n  - {name: m, shape: {type: mesh, file: nothing.stl}, mass_kg: 1}\n");
    assert_clean_error(&["run", &p], &["missing_mesh_object.yaml", "objects[0]", "nothing.stl"]);
}

#[test]
fn bad_robot_and_episode_options_name_the_file_and_key() {
    let robot = "robots:\n  - urdf: ../../urdf/quadruped.urdf\n    base: {mode: floating, position: [0, 0, 0.5]}\n";
    let p = write_scene("bad_collision_link.yaml", &format!("{robot}    collision_links: [LF_foot, LF_toe]\n"));
    assert_clean_error(&["run", &p], &["bad_collision_link.yaml", "robots['quadruped'].collision_links.LF_toe", "no such link"]);
    let p = write_scene("collisionless_link.yaml", &format!("{robot}    collision_links: [LF_hip]\n"));
    assert_clean_error(&["run", &p], &["collisionless_link.yaml", "collision_links.LF_hip", "no <collision> geometry"]);
    let p = write_scene("collision_links_type.yaml", &format!("{robot}    collision_links: LF_foot\n"));
    assert_clean_error(&["run", &p], &["collision_links_type.yaml", "collision_links", "invalid type"]);
    let p = write_scene(
        "fixed_base_velocity.yaml",
        "robots:\n  - urdf: ../../urdf/pendulum.urdf\n    base: {mode: fixed, linear_velocity: [1, 0, 0]}\n",
    );
    assert_clean_error(&["run", &p], &["fixed_base_velocity.yaml", "base.linear_velocity", "floating base"]);
    let p = write_scene("bad_script_period.yaml", "script_period_s: -0.4\n");
    assert_clean_error(&["run", &p], &["bad_script_period.yaml", "script_period_s", "positive"]);
    let p = write_scene("bad_reset_period.yaml", "reset_period_s: 0\n");
    assert_clean_error(&["run", &p], &["bad_reset_period.yaml", "reset_period_s", "positive"]);
    let p = write_scene(
        "keyframe_beyond_period.yaml",
        "robots:\n  - urdf: ../../urdf/pendulum.urdf\n    control: {default: {mode: position, kp: 50.0, kd: 1.0}}\nscript_period_s: 0.5\nscript:\n  - {time_s: 0.0, positions: {pendulum_joint: 0.1}}\n  - {time_s: 0.7, positions: {pendulum_joint: 0.2}}\n",
    );
    assert_clean_error(&["run", &p], &["keyframe_beyond_period.yaml", "script[1].time_s", "script_period_s"]);
}

#[test]
fn bad_command_line_values_are_reported() {
    assert_clean_error(&["run", "config/examples/box_rest.yaml", "--solver", "magic"], &["--solver", "magic"]);
    assert_clean_error(&["run", "config/examples/box_rest.yaml", "--duration", "-1"], &["--duration"]);
    assert_clean_error(&["model", "urdf/pendulum.urdf", "--q", "0.1,0.2"], &["--q", "expected 1 values"]);
    assert_clean_error(&["model", "urdf/pendulum.urdf", "--q", "NaN"], &["--q", "pendulum_joint", "not finite"]);
}

#[test]
fn run_writes_a_json_summary() {
    let out = repo().join("target/test-scenes/summary.json");
    let _ = std::fs::remove_file(&out);
    let (code, stderr) = run_cli(&["run", "config/examples/box_rest.yaml", "--duration", "0.2", "--quiet", "--summary", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!((v["sim_time_s"].as_f64().unwrap() - 0.2).abs() < 1e-9);
    assert!((v["bodies"][0]["position_m"][2].as_f64().unwrap() - 0.1).abs() < 1e-4, "the box rests at z = 0.1");
}

#[test]
fn run_summary_reports_where_a_deformable_body_rests() {
    // the 40 mm soft ball dropped from 2 mm above the ground rests on it: its lowest node on the
    // ground (within 0.1 mm), its node centroid above its starting foot print (1 mm) and lower
    // than its 40 mm radius by the sag under its own weight (less than 1 mm)
    let out = repo().join("target/test-scenes/summary_deformable.json");
    let _ = std::fs::remove_file(&out);
    let (code, stderr) = run_cli(&["run", "config/examples/fem_ball_rest.yaml", "--duration", "0.5", "--quiet", "--summary", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ball = &v["deformables"][0];
    assert_eq!(ball["name"], "ball");
    let c: Vec<f64> = (0..3).map(|k| ball["node_centroid_m"][k].as_f64().unwrap()).collect();
    let lowest = ball["lowest_node_z_m"].as_f64().unwrap();
    assert!(lowest.abs() < 1e-4, "lowest node at z = {lowest} m");
    assert!(c[0].abs() < 1e-3 && c[1].abs() < 1e-3, "centroid moved sideways: {c:?}");
    assert!(c[2] < 0.04 && c[2] > 0.039, "centroid at z = {} m", c[2]);
}

#[test]
fn bad_welds_name_the_file_and_key() {
    let pad = |attachment: &str| {
        format!(
            "timestep_s: 0.01\nsolver: {{kind: vfpi}}\nrobots:\n  - urdf: ../../urdf/finger_press.urdf\n    base: {{mode: fixed, position: [0, 0, 0.087]}}\ndeformables:\n  - name: pad\n    mesh: ../../assets/meshes/finger_pad.node\n    position: [0, 0, 0.075]\n    material: {{density_kg_m3: 1070, youngs_modulus_pa: 8.3e4, poisson_ratio: 0.42}}\n    attachments: [{attachment}]\n"
        )
    };
    let p = write_scene("weld_unknown_link.yaml", &pad("{box_min: [-1, -1, 0.0869], box_max: [1, 1, 1], to: {link: ghost_finger}}"));
    assert_clean_error(&["run", &p], &["weld_unknown_link.yaml", "deformables[0] ('pad').attachments[0].to", "no link or object named 'ghost_finger'"]);
    let p = write_scene("weld_empty_box.yaml", &pad("{box_min: [-1, -1, 0.5], box_max: [1, 1, 1], to: {link: finger}}"));
    assert_clean_error(&["run", &p], &["weld_empty_box.yaml", "deformables[0] ('pad').attachments[0]", "selects no node", "box_min [-1.0, -1.0, 0.5]", "span"]);
    let p = write_scene("weld_half_box.yaml", &pad("{box_min: [-1, -1, 0.0869], to: {link: finger}}"));
    assert_clean_error(&["run", &p], &["weld_half_box.yaml", "attachments[0]", "both box_min and box_max"]);
    let p = write_scene("weld_bad_node.yaml", &pad("{nodes: [0, 5000], to: {link: finger}}"));
    assert_clean_error(&["run", &p], &["weld_bad_node.yaml", "attachments[0].nodes", "node 5000 does not exist"]);
    let p = write_scene("pin_one_way.yaml", &pad("{box_min: [-1, -1, 0.0869], box_max: [1, 1, 1], to: world, two_way: false}"));
    assert_clean_error(&["run", &p], &["pin_one_way.yaml", "attachments[0].two_way", "link only"]);
    let p = write_scene("weld_unknown_key.yaml", &pad("{box_min: [-1, -1, 0.0869], box_max: [1, 1, 1], to: {link: finger}, stiffness: 5}"));
    assert_clean_error(&["run", &p], &["weld_unknown_key.yaml", "stiffness"]);
}

#[test]
fn bad_deformable_contact_options_name_the_file_and_key() {
    let ball = |contact: &str| format!("timestep_s: 0.01\nsolver: {{kind: vfpi}}\ncontact: {contact}\ndeformables:\n  - name: ball\n    mesh: ../../assets/meshes/soft_ball.msh\n    position: [0, 0, 0.042]\n    material: {{density_kg_m3: 1100, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35}}\n");
    let p = write_scene("deformable_contact_unknown_key.yaml", &ball("{deformable_contact: {enabled: true, thickness: 0.004}}"));
    assert_clean_error(&["run", &p], &["deformable_contact_unknown_key.yaml", "unknown field `thickness`", "thickness_m"]);
    let p = write_scene("deformable_contact_negative.yaml", &ball("{deformable_contact: {enabled: true, thickness_m: -0.004}}"));
    assert_clean_error(&["run", &p], &["deformable_contact_negative.yaml", "contact.deformable_contact.thickness_m", "≥ 0"]);
    let p = write_scene("deformable_contact_nan.yaml", &ball("{deformable_contact: {enabled: true, rest_exclusion_m: .nan}}"));
    assert_clean_error(&["run", &p], &["deformable_contact_nan.yaml", "contact.deformable_contact.rest_exclusion_m"]);
}

#[test]
fn bench_paired_with_refuses_what_it_cannot_pair() {
    assert_clean_error(
        &["bench", "config/examples/box_stack.yaml", "--paired-with", "config/examples/ecp_gripper_grasp.yaml", "--steps", "1"],
        &["--paired-with", "box_stack.yaml", "ecp_gripper_grasp.yaml", "same model"],
    );
    assert_clean_error(&["bench", "config/examples/box_stack.yaml", "config/examples/box_stack.yaml", "--paired-with", "config/examples/box_stack.yaml"], &["--paired-with", "exactly one scene", "2 given"]);
    assert_clean_error(&["bench", "config/examples/box_stack.yaml", "--paired-with", "config/examples/box_stack.yaml", "--solver", "pgs"], &["--paired-with", "--solver"]);
    assert_clean_error(&["bench", "config/examples/box_stack.yaml", "--paired-with", "config/examples/box_stack.yaml", "--steps", "0"], &["--steps", "≥ 1"]);
}

#[test]
fn bench_paired_with_itself_takes_every_step_bit_for_bit() {
    // B stepped from A's state with A's own configuration: the same step, bit for bit
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim"))
        .args(["bench", "config/examples/ecp_gripper_grasp.yaml", "--paired-with", "config/examples/ecp_gripper_grasp.yaml", "--steps", "400", "--warmup", "0", "--json"])
        .current_dir(repo())
        .output()
        .expect("run contact_sim");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["steps"], 400);
    assert_eq!(v["max_velocity_difference"], 0.0, "{v}");
    for key in ["iterations_mean", "iterations_max", "unconverged_steps", "failed_steps", "solver_params"] {
        assert_eq!(v["a"][key], v["b"][key], "{key}: {v}");
    }
    assert!(v["a"]["iterations_mean"].as_f64().unwrap() > 0.0, "the grasp's contacts were solved: {v}");
}
