//! URDFs as they exist in the wild (issue 17): what must load, with which warning, and what is
//! still refused. Small fixtures of our own in tests/data/wild/.

mod common;

use common::*;
use std::process::Command;

/// Runs the CLI from the repository root: (exit code, stdout, stderr).
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(repo()).output().expect("run contact_sim");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn warning_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("warning: ")).collect()
}

#[test]
fn elements_without_physics_are_ignored_with_one_warning_per_kind() {
    let f = "tests/data/wild/ignored_elements.urdf";
    // the URDF parser alone refuses the file (a <texture/> without filename)
    let text = std::fs::read_to_string(repo().join(f)).unwrap();
    assert!(urdf_rs::read_from_string(&text).is_err(), "fixture no longer exercises the filter");

    let (code, stdout, stderr) = cli(&["model", f]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("2 links, 2 joints, DOF 1"), "{stdout}");
    let w = warning_lines(&stderr);
    let expect = [
        "warning: tests/data/wild/ignored_elements.urdf: <texture>: ignored (no filename; textures do not affect the physics), in the material of material 'skin', link 'base', link 'arm'",
        "warning: tests/data/wild/ignored_elements.urdf: <sensor_hint>: unknown element ignored, in link 'base'",
        "warning: tests/data/wild/ignored_elements.urdf: <hardware_note>: unknown element ignored, in joint 'hinge'",
        "warning: tests/data/wild/ignored_elements.urdf: <gazebo>: ignored (Gazebo-specific settings: no effect on this simulator), for reference 'base', reference 'arm', the robot",
        "warning: tests/data/wild/ignored_elements.urdf: <transmission>: ignored (actuator descriptions: joints are commanded directly): 'hinge_trans'",
        "warning: tests/data/wild/ignored_elements.urdf: <ros2_control>: ignored (hardware interfaces: commands come through the node's topics): 'GazeboSystem'",
        "warning: tests/data/wild/ignored_elements.urdf: <calibration_data>: unknown top-level element ignored: (unnamed)",
    ];
    assert_eq!(w, expect, "{stderr}");
}

#[test]
fn ignored_elements_do_not_change_the_model() {
    // the same robot without the extra elements has the same bodies, inertias and joints
    let (_, with, _) = cli(&["model", "tests/data/wild/ignored_elements.urdf", "--q", "0.3", "--v", "1", "--a", "2", "--json"]);
    let with: serde_json::Value = serde_json::from_str(&with).unwrap();
    assert_eq!(with["model"]["links"].as_array().unwrap().len(), 2);
    // pendulum-like arm: M = I_yy(com) + m d² = 0.021 + 1·0.25² about the hinge axis
    let m = with["mass_matrix"][0][0].as_f64().unwrap();
    assert!((m - (0.021 + 0.0625)).abs() < 1e-12, "M = {m}");
}
