//! URDFs as they exist in the wild: what must load, with which warning, and what is
//! still refused. Small fixtures of our own in tests/data/wild/.


use crate::common::*;
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

// ---------------------------------------------------------------------------------------------
// inertia_check: strict | warn | balance
// ---------------------------------------------------------------------------------------------

use contact_sim::math::{Mat3, Vec3};
use contact_sim::urdf::{apply_inertia_check, balanced_moments, principal_moments, triangle_violation, InertiaCheck};

const CAD: &str = "tests/data/wild/cad_inertia.urdf";

#[test]
fn inertia_warn_is_the_default_and_keeps_the_values() {
    let (code, stdout, stderr) = cli(&["model", CAD, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let w = warning_lines(&stderr);
    assert_eq!(w.len(), 2, "one warning per bad link: {stderr}");
    assert_eq!(
        w[0],
        "warning: tests/data/wild/cad_inertia.urdf: link 'shin' <inertial>: inertia violates the triangle inequality (1.000000e-2 > 4.000000e-3 + 5.900000e-3 kg·m², by 1.000e-4 kg·m² (1.000 % of the largest moment)); kept as given (inertia_check: warn)"
    );
    assert!(w[1].contains("link 'foot' <inertial>: inertia violates the triangle inequality") && w[1].contains("kept as given"), "{}", w[1]);
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let shin = j["model"]["links"].as_array().unwrap().iter().find(|l| l["name"] == "shin").unwrap();
    let p: Vec<f64> = shin["principal_inertia_kg_m2"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let mut p = p.clone();
    p.sort_by(f64::total_cmp);
    for (a, b) in p.iter().zip([0.0040, 0.0059, 0.0100]) {
        assert!((a - b).abs() < 1e-15, "kept values: {p:?}");
    }
    // the explicit flag gives the same
    let (_, _, stderr2) = cli(&["model", CAD, "--inertia-check", "warn"]);
    assert_eq!(warning_lines(&stderr2), w);
}

#[test]
fn inertia_strict_refuses_naming_the_link_and_the_violation() {
    let (code, _, stderr) = cli(&["model", CAD, "--inertia-check", "strict"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "error: tests/data/wild/cad_inertia.urdf: link 'shin' <inertial>: inertia violates the triangle inequality (1.000000e-2 > 4.000000e-3 + 5.900000e-3 kg·m², by 1.000e-4 kg·m² (1.000 % of the largest moment)): no rigid body has these principal moments (inertia_check: warn keeps them, balance fixes them)"
    );
    let (code, _, stderr) = cli(&["model", CAD, "--inertia-check", "nearest"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown inertia check 'nearest' (expected one of: strict, warn, balance)"), "{stderr}");
}

#[test]
fn inertia_balance_prints_the_change_and_the_result_is_valid() {
    let (code, stdout, stderr) = cli(&["model", CAD, "--inertia-check", "balance", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let w = warning_lines(&stderr);
    assert_eq!(
        w[0],
        "warning: tests/data/wild/cad_inertia.urdf: link 'shin' <inertial>: inertia balanced: principal moments [4.000000e-3, 5.900000e-3, 1.000000e-2] → [4.050000e-3, 5.950000e-3, 1.000000e-2] kg·m² (triangle inequality violated by 1.000e-4 kg·m², 1.000 %; inertia_check: balance)"
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for l in j["model"]["links"].as_array().unwrap() {
        let mut p: Vec<f64> = l["principal_inertia_kg_m2"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        p.sort_by(f64::total_cmp);
        assert!(p[2] <= p[0] + p[1] + 1e-15, "{}: {p:?}", l["name"]);
    }
}

/// Random symmetric inertias violating the triangle inequality, in random frames: the balanced
/// one keeps the principal axes and the largest moment, holds the inequality with equality, is
/// never smaller than the given one, and is the nearest such inertia (checked against random
/// valid raise-only candidates).
#[test]
fn balanced_inertia_is_the_nearest_valid_one_that_is_not_smaller() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    for _ in 0..200 {
        let (a, b) = (rng.random_range(0.1..1.0), rng.random_range(0.1..1.0));
        let c = (a + b) * rng.random_range(1.001..1.5);
        let rot = nalgebra::Rotation3::from_scaled_axis(Vec3::new(rng.random_range(-3.0..3.0), rng.random_range(-3.0..3.0), rng.random_range(-3.0..3.0))).into_inner();
        let i = rot * Mat3::from_diagonal(&Vec3::new(a, b, c)) * rot.transpose();
        assert!(apply_inertia_check(1.0, &i, InertiaCheck::Strict).is_err());
        let (kept, note) = apply_inertia_check(1.0, &i, InertiaCheck::Warn).unwrap();
        assert_eq!(kept, i);
        assert!(note.unwrap().contains("kept as given"));
        let (out, note) = apply_inertia_check(1.0, &i, InertiaCheck::Balance).unwrap();
        assert!(note.unwrap().starts_with("inertia balanced"));
        let (given, _) = principal_moments(&i);
        let (got, _) = principal_moments(&out);
        assert!(triangle_violation(&got) < 1e-12, "{got:?}");
        assert!((got[2] - given[2]).abs() < 1e-12 && (got[0] + got[1] - got[2]).abs() < 1e-12, "equality, largest kept: {given:?} → {got:?}");
        assert!(got[0] >= given[0] - 1e-12 && got[1] >= given[1] - 1e-12, "raised only");
        // same principal axes: out - i is diagonal in i's principal frame
        let (_, axes) = principal_moments(&i);
        let d = axes.transpose() * (out - i) * axes;
        assert!(d[(0, 1)].abs() + d[(0, 2)].abs() + d[(1, 2)].abs() < 1e-12, "axes kept: {d}");
        // nearest among valid raise-only moments
        let best = (got - given).norm();
        for _ in 0..200 {
            let x = given[0] + rng.random_range(0.0..(c - a - b + 0.1));
            let y = (given[2] - x).max(given[1]) + rng.random_range(0.0..0.05);
            let z = given[2] + rng.random_range(0.0..0.05);
            let cand = Vec3::new(x, y, z);
            if z <= x + y {
                assert!((cand - given).norm() >= best - 1e-12, "{cand:?} is nearer than {got:?} to {given:?}");
            }
        }
    }
    // negative moments are raised to zero first
    assert_eq!(balanced_moments(&Vec3::new(-1e-3, 1.0, 1.0)), Vec3::new(0.0, 1.0, 1.0));
    let bad = Mat3::from_diagonal(&Vec3::new(-1e-3, 1.0, 1.0));
    let e = apply_inertia_check(1.0, &bad, InertiaCheck::Strict).unwrap_err();
    assert!(e.contains("not positive semi-definite"), "{e}");
    let (kept, note) = apply_inertia_check(1.0, &bad, InertiaCheck::Warn).unwrap();
    assert_eq!(kept, bad, "warn keeps even a (slightly) indefinite inertia, as Pinocchio does");
    assert!(note.unwrap().contains("not positive semi-definite (principal moments -1.000000e-3, 1.000000e0, 1.000000e0 kg·m²); kept as given"));
    let (fixed, _) = apply_inertia_check(1.0, &bad, InertiaCheck::Balance).unwrap();
    assert!((fixed - Mat3::from_diagonal(&Vec3::new(0.0, 1.0, 1.0))).norm() < 1e-12);
    // mass problems are never a matter of policy
    assert!(apply_inertia_check(-1.0, &Mat3::identity(), InertiaCheck::Balance).unwrap_err().contains("mass must be non-negative"));
}

#[test]
fn inertia_check_per_robot_in_the_scene_and_the_cli_overrides_it() {
    // no ground: the legs hang below the base at the origin (a deep overlap would warn too)
    let robot = "ground: {enabled: false}\nrobots:\n  - urdf: ../../tests/data/wild/cad_inertia.urdf\n";
    let strict = write_scene("inertia_strict.yaml", &format!("{robot}    inertia_check: strict\n"));
    let (code, _, stderr) = cli(&["run", &strict, "--duration", "0.01", "--quiet"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cad_inertia.urdf: link 'shin' <inertial>: inertia violates the triangle inequality"), "{stderr}");
    // the command line wins over the scene
    let (code, _, stderr) = cli(&["run", &strict, "--duration", "0.01", "--quiet", "--inertia-check", "balance"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(warning_lines(&stderr).len(), 2, "{stderr}");
    assert!(warning_lines(&stderr).iter().all(|l| l.contains("inertia balanced")), "{stderr}");
    // default (no key): warn
    let plain = write_scene("inertia_default.yaml", robot);
    let (code, _, stderr) = cli(&["run", &plain, "--duration", "0.01", "--quiet"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(warning_lines(&stderr).iter().all(|l| l.contains("kept as given")) && warning_lines(&stderr).len() == 2, "{stderr}");
    // a bad value names the key
    let bad = write_scene("inertia_bad.yaml", &format!("{robot}    inertia_check: loose\n"));
    let (code, _, stderr) = cli(&["run", &bad, "--duration", "0.01", "--quiet"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("inertia_bad.yaml") && stderr.contains("unknown variant `loose`") && stderr.contains("strict"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// <mimic>: fixed joints, chains, cycles; robots without movable joints
// ---------------------------------------------------------------------------------------------

#[test]
fn mimic_on_a_fixed_joint_is_ignored_and_chains_resolve_to_the_root_joint() {
    let (code, stdout, stderr) = cli(&["model", "tests/data/wild/mimic.urdf", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        warning_lines(&stderr),
        [
            "warning: tests/data/wild/mimic.urdf: joint 'c' <mimic>: mimic chain 'c' → 'b' → 'a' resolved to the independent joint 'a': multiplier 1, offset -0.15",
            "warning: tests/data/wild/mimic.urdf: joint 'frozen' <mimic>: joint 'frozen' is fixed: its <mimic> of 'a' is ignored",
        ]
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mimic_of = |name: &str| j["model"]["joints"].as_array().unwrap().iter().find(|x| x["name"] == name).unwrap()["mimics"].clone();
    assert!(mimic_of("b").as_str().unwrap().contains('a'), "{}", mimic_of("b"));
    assert!(mimic_of("c").as_str().unwrap().contains('a'), "c follows a directly: {}", mimic_of("c"));
    assert!(mimic_of("frozen").is_null());

    // in a scene: the initial positions follow the composed coupling and the coupling holds while
    // the leader moves
    let s = scene(
        "timestep_s: 0.001\nground: {enabled: false}\nrobots:\n  - urdf: ../../tests/data/wild/mimic.urdf\n    initial_positions: {a: 0.4}\n    control: {default: {mode: passive}}\n",
    );
    let m = &s.model;
    let q = |name: &str, qv: &[f64]| qv[m.bodies[m.body_id(&format!("l{name}")).unwrap()].joint.q_index];
    assert!((q("b", &m.q_init) - 0.9).abs() < 1e-12);
    assert!((q("c", &m.q_init) - 0.25).abs() < 1e-12);
    assert_eq!(m.mimics.len(), 2);
    let mut sim = contact_sim::sim::Simulation::from_scene(&s, None);
    for _ in 0..300 {
        sim.step();
    }
    let qv = sim.state.q.clone();
    assert!((q("a", &qv) - 0.4).abs() > 1e-3, "the pendulums swing under gravity");
    assert!((q("c", &qv) - (q("a", &qv) - 0.15)).abs() < 1e-3, "q_c = q_a - 0.15: a {} c {}", q("a", &qv), q("c", &qv));
    assert!((q("b", &qv) - (2.0 * q("a", &qv) + 0.1)).abs() < 1e-3, "q_b = 2 q_a + 0.1");
}

#[test]
fn mimic_cycles_are_refused_naming_the_joints() {
    let (code, _, stderr) = cli(&["model", "tests/data/wild/mimic_cycle.urdf"]);
    assert_eq!(code, 2);
    assert_eq!(stderr.trim(), "error: tests/data/wild/mimic_cycle.urdf: joint 'b' <mimic>: mimic cycle: 'b' → 'c' → 'd' → 'b' (no joint of the cycle is independent)");
}

#[test]
fn model_works_on_a_robot_without_movable_joints() {
    let (code, stdout, stderr) = cli(&["model", "tests/data/wild/no_movable_joint.urdf", "--q", "", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["model"]["nv"], 0);
    assert_eq!(j["mass_matrix"].as_array().unwrap().len(), 0);
    assert_eq!(j["inverse_dynamics"].as_array().unwrap().len(), 0);
    let (code, _, stderr) = cli(&["model", "tests/data/wild/no_movable_joint.urdf", "--q", "", "--v", "", "--a", ""]);
    assert_eq!(code, 0, "{stderr}");
    // a value where there is no joint is still an error
    let (code, _, stderr) = cli(&["model", "tests/data/wild/no_movable_joint.urdf", "--q", "0.1"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--q: expected 0 values"), "{stderr}");
    let (code, _, stderr) = cli(&["model", "urdf/pendulum.urdf", "--q", "x"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("'x'"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// --package-path
// ---------------------------------------------------------------------------------------------

#[test]
fn package_path_on_the_command_line_finds_package_meshes() {
    let f = "tests/data/wild/package_mesh.urdf";
    let (code, _, stderr) = cli(&["model", f]);
    assert_eq!(code, 2);
    assert!(stderr.contains("package 'some_description' not found (give --package-path some_description=DIR"), "{stderr}");
    for arg in ["some_description=tests/data/wild/fake_ws/some_description", "tests/data/wild/fake_ws"] {
        let (code, stdout, stderr) = cli(&["model", f, "--package-path", "other=/nowhere", "--package-path", arg]);
        assert_eq!(code, 0, "{arg}: {stderr}");
        assert!(stdout.contains("base") && stdout.contains("    1\n"), "one collision shape: {stdout}");
    }
    let (code, _, stderr) = cli(&["model", f, "--package-path", "=x"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--package-path '=x': expected NAME=DIR or DIR"), "{stderr}");
    // on run, with a scene
    let p = write_scene("package_mesh.yaml", "robots:\n  - urdf: ../../tests/data/wild/package_mesh.urdf\n    base: {mode: fixed, position: [0, 0, 1]}\n");
    let (code, _, stderr) = cli(&["run", &p, "--duration", "0.01", "--quiet"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = cli(&["run", &p, "--duration", "0.01", "--quiet", "--package-path", "some_description=tests/data/wild/fake_ws/some_description"]);
    assert_eq!(code, 0, "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Collada meshes: unit, up axis, URDF scale
// ---------------------------------------------------------------------------------------------

/// Bounds (m) of the first collision geometry's convex hull of a one-link URDF.
fn hull_bounds(rel: &str) -> (Vec3, Vec3, Vec<contact_sim::urdf::LoadWarning>) {
    let (model, warnings) = contact_sim::config::load_urdf_model(&repo().join(rel), false, &Default::default()).unwrap_or_else(|e| panic!("{e}"));
    let g = model.geoms.iter().find(|g| g.body.is_some()).expect("a collision geometry");
    let contact_sim::model::GeomShape::Convex { vertices } = &g.shape else { panic!("mesh → convex hull") };
    assert_eq!(vertices.len(), 8, "a box hull has 8 vertices");
    let lo = vertices.iter().fold(Vec3::repeat(f64::INFINITY), |a, v| a.inf(v));
    let hi = vertices.iter().fold(Vec3::repeat(f64::NEG_INFINITY), |a, v| a.sup(v));
    (lo, hi, warnings)
}

fn assert_close(a: Vec3, b: Vec3, what: &str) {
    assert!((a - b).norm() < 1e-6, "{what}: {a:?} vs {b:?}");
}

#[test]
fn collada_meshes_honour_unit_up_axis_and_scale() {
    // a 10 x 20 x 30 cm box written in centimetres, one corner at the origin
    let (lo, hi, w) = hull_bounds("tests/data/wild/collada_z_up.urdf");
    assert_close(lo, Vec3::zeros(), "Z_UP min");
    assert_close(hi, Vec3::new(0.1, 0.2, 0.3), "Z_UP max: centimetres → metres");
    assert!(w.is_empty(), "{w:?}");
    // Y_UP: the file's +y is up (world +z), its +z points toward the viewer (world −y)
    let (lo, hi, w) = hull_bounds("tests/data/wild/collada_y_up.urdf");
    assert_close(lo, Vec3::new(0.0, -0.3, 0.0), "Y_UP min");
    assert_close(hi, Vec3::new(0.1, 0.0, 0.2), "Y_UP max");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].class, contact_sim::urdf::WarningClass::Mesh);
    assert!(w[0].to_string().contains("Collada file is Y_UP: rotated to the URDF's Z-up convention"), "{}", w[0]);
    // the URDF scale multiplies the file's (already metric) coordinates
    let (lo, hi, _) = hull_bounds("tests/data/wild/collada_scaled.urdf");
    assert_close(lo, Vec3::zeros(), "scaled min");
    assert_close(hi, Vec3::new(0.2, 0.2, 0.15), "scale 2 1 0.5");
    // the volume the collision shape encloses: 0.2 · 0.2 · 0.15 m³
    let (model, _) = contact_sim::config::load_urdf_model(&repo().join("tests/data/wild/collada_scaled.urdf"), false, &Default::default()).unwrap();
    let g = model.geoms.iter().find(|g| g.body.is_some()).unwrap();
    let vol = contact_sim::config::shape_volume(&g.shape);
    assert!((vol - 0.006).abs() < 1e-8, "volume {vol} m³");
}

#[test]
fn stl_and_obj_meshes_still_load_through_the_new_reader() {
    let (code, stdout, stderr) = cli(&["model", "tests/data/mesh_robot.urdf"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.is_empty());
    let tetra = contact_sim::config::read_mesh_points(&repo().join("tests/data/meshes/tetra.stl")).unwrap();
    assert!(tetra.len() >= 4);
    let wedge = contact_sim::config::read_mesh_points(&repo().join("tests/data/meshes/wedge.obj")).unwrap();
    assert!(wedge.len() >= 6);
    let e = contact_sim::config::read_mesh_points(&repo().join("tests/data/meshes/tet.vtk")).unwrap_err();
    assert!(e.contains("unsupported mesh format '.vtk'") && e.contains("Collada"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// model --check
// ---------------------------------------------------------------------------------------------

#[test]
fn model_check_reports_warnings_per_class_and_fails_on_broken_files() {
    let (code, stdout, stderr) = cli(&["model", "--check", CAD]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  warnings per class: ignored_element 0, inertia 2, mimic 0, mesh 0, shape_inertia 1, posture 0\n"), "{stdout}");
    assert!(stdout.contains("WARNING [inertia]: tests/data/wild/cad_inertia.urdf: link 'shin' <inertial>: inertia violates the triangle inequality"), "{stdout}");
    // foot: 0.5 kg in a 3 cm sphere has trace 3·(2/5)·0.5·0.03² = 5.4e-4 against the declared 5.8e-3
    assert!(
        stdout.contains("WARNING [shape_inertia]: tests/data/wild/cad_inertia.urdf: link 'foot': inertia is 10.7407 × that of its collision shape filled uniformly with the same mass (trace 5.8000e-3 vs 5.4000e-4 kg·m²): more than 10× off"),
        "{stdout}"
    );
    assert!(stdout.contains("=> PASS (3 warning(s))"), "{stdout}");
    // the shin row shows the violation of 1e-4 kg·m²
    assert!(stdout.lines().any(|l| l.trim_start().starts_with("shin") && l.contains("-1.00e-4")), "{stdout}");

    // JSON: counts per class, the density of the thigh box (2 kg / 0.003 m³)
    let (_, stdout, _) = cli(&["model", "--check", CAD, "--json"]);
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["counts"]["inertia"], 2);
    assert_eq!(j["counts"]["shape_inertia"], 1);
    let thigh = &j["robots"][0]["links"][0];
    assert_eq!(thigh["name"], "thigh");
    assert!((thigh["density_kg_m3"].as_f64().unwrap() - 2.0 / 0.003).abs() < 1e-9);

    // ignored elements and mimic warnings are counted too, and a scene checks every robot
    let (_, stdout, _) = cli(&["model", "--check", "tests/data/wild/ignored_elements.urdf"]);
    assert!(stdout.contains("warnings per class: ignored_element 7,"), "{stdout}");
    let p = write_scene(
        "check_two.yaml",
        "robots:\n  - urdf: ../../tests/data/wild/mimic.urdf\n    initial_positions: {a: 3.0}\n  - urdf: ../../urdf/pendulum.urdf\n",
    );
    let (code, stdout, stderr) = cli(&["model", "--check", &p]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("robot 'mimic'") && stdout.contains("robot 'pendulum'"), "{stdout}");
    // a = 3 rad is beyond its ±2 limit, b = 2·3 + 0.1 and c = 3 − 0.15 follow it out
    assert!(stdout.contains("tests/data/wild/mimic.urdf: joint 'a': starts at 3 outside its limits [-2, 2]"), "{stdout}");
    assert!(stdout.contains("mimic 2, mesh 0, shape_inertia 1, posture 3"), "{stdout}");

    // broken files fail with the loader's one-line error
    for f in ["tests/data/broken_missing_parent.urdf", "tests/data/not_xml.urdf", "tests/data/wild/mimic_cycle.urdf"] {
        let (code, _, stderr) = cli(&["model", "--check", f]);
        assert_eq!(code, 2, "{f}");
        assert!(stderr.starts_with(&format!("error: {f}")), "{stderr}");
    }
    let (code, _, _) = cli(&["model", "--check", "tests/data/broken_inertia.urdf"]);
    assert_eq!(code, 0, "warn is the default");
    let (code, _, stderr) = cli(&["model", "--check", "--inertia-check", "strict", "tests/data/broken_inertia.urdf"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("link 'bad_link' <inertial>: inertia violates the triangle inequality"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// found in the corpus (scripts/urdf-corpus): what Pinocchio loads, we load
// ---------------------------------------------------------------------------------------------

#[test]
fn corpus_cases_load_with_warnings() {
    let dir = repo().join("target/test-urdfs");
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    let inertial = r#"<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>"#;
    // a mimic of a joint that is not in this (reduced) model; a joint moving only a massless
    // link; a binary STL whose header starts with "solid"; an extra slash in package:///
    let mut stl = vec![b' '; 80];
    stl[..11].copy_from_slice(b"solid exprt");
    let tris: [[[f32; 3]; 3]; 4] = [
        [[0.0, 0.0, 0.0], [0.0, 0.1, 0.0], [0.1, 0.0, 0.0]],
        [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.1]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.1], [0.0, 0.1, 0.0]],
        [[0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]],
    ];
    stl.extend_from_slice(&(tris.len() as u32).to_le_bytes());
    for t in tris {
        stl.extend(std::iter::repeat_n(0u8, 12));
        for v in t {
            for x in v {
                stl.extend_from_slice(&x.to_le_bytes());
            }
        }
        stl.extend_from_slice(&[0, 0]);
    }
    std::fs::write(dir.join("meshes/solid_header.stl"), &stl).unwrap();
    let urdf = format!(
        r#"<robot name="corpus_cases">
  <link name="base">{inertial}<collision><geometry><mesh filename="package:///test-urdfs/meshes/solid_header.stl"/></geometry></collision></link>
  <link name="finger">{inertial}</link>
  <link name="tip"/>
  <joint name="finger_joint" type="revolute"><parent link="base"/><child link="finger"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="index_q1"/></joint>
  <joint name="tip_joint" type="revolute"><parent link="finger"/><child link="tip"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"#
    );
    std::fs::write(dir.join("corpus_cases.urdf"), urdf).unwrap();
    let (code, stdout, stderr) = cli(&["model", "target/test-urdfs/corpus_cases.urdf", "--json", "--q", "0.1,0.2", "--package-path", "target"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        warning_lines(&stderr),
        [
            "warning: target/test-urdfs/corpus_cases.urdf: joint 'tip_joint': moves only massless links: its row of the mass matrix is zero; kept (simulate it under position or velocity control, or with <dynamics damping>; better: give the child link an <inertial>)",
            "warning: target/test-urdfs/corpus_cases.urdf: joint 'finger_joint' <mimic>: mimicked joint 'index_q1' does not exist: <mimic> ignored, joint 'finger_joint' is independent",
        ]
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["model"]["nv"], 2);
    assert_eq!(j["mass_matrix"][1][1], 0.0, "zero row of the massless joint");
    assert_eq!(j["model"]["links"][0]["collision_shapes"], 1, "the binary STL was read");
}
