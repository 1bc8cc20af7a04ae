//! System identification against ground truth: a "hardware" bag is made with contact_sim itself
//! from a scene whose true parameters differ from the nominal one (plus measurement noise and a
//! command delay), and `identify` must recover the true values from the nominal scene.

use crate::common::arm_problem::ArmProblem;
use crate::common::{path, repo};
use contact_sim::identify::synthetic::{record_hardware_bag, Noise};
use contact_sim::identify::{identify, optimizer::Settings, IdentifyOptions, IdentifyResult};
use std::path::PathBuf;

/// A fresh directory under target/identify-tests.
fn fresh_dir(name: &str) -> PathBuf {
    let d = repo().join("target/identify-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options(dir: &std::path::Path, scene: PathBuf, bags: Vec<PathBuf>, params: &str) -> IdentifyOptions {
    let pf = dir.join("params.yaml");
    std::fs::write(&pf, params).unwrap();
    IdentifyOptions {
        scene,
        load: Default::default(),
        bags,
        validate: vec![],
        params: pf,
        out: dir.join("out"),
        replay: Default::default(),
        threads: 2,
        settings: Settings { max_iterations: 25, ..Default::default() },
        force: false,
    }
}

fn run(opts: &IdentifyOptions) -> IdentifyResult {
    let r = identify(opts, &mut |l| eprintln!("{l}")).unwrap_or_else(|e| panic!("{e}"));
    for p in &r.parameters {
        eprintln!("{:<36} initial {:>10.5} fitted {:>10.5} ± {:.2e}{}", p.name, p.initial, p.value, p.std, if p.at_bound { " (at bound)" } else { "" });
    }
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    r
}

/// Asserts that `name` was recovered within 5 % of `truth` or two reported standard deviations.
fn assert_recovered(r: &IdentifyResult, name: &str, truth: f64) {
    let p = r.parameters.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no parameter {name}"));
    let err = (p.value - truth).abs();
    assert!(err <= 0.05 * truth.abs() || err <= 2.0 * p.std, "{name}: fitted {} ± {}, true {truth} (error {:.1} %)", p.value, p.std, 100.0 * err / truth.abs());
}

#[test]
fn free_space_arm_recovers_friction_damping_armature_and_delay() {
    let pb = ArmProblem::load();
    let dir = fresh_dir("arm_free");
    let duration = 6.0;
    let truth = contact_sim::config::load_scene_str(&pb.scene("true", Some(duration)), &dir.join("true.yaml")).unwrap();
    let hw = dir.join("hw_bag");
    record_hardware_bag(&truth, duration, 1000.0, &pb.noise(), &hw).unwrap();
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, pb.scene("nominal", None)).unwrap();
    // a held-out bag: another motion (the excitation at 0.7× its frequencies) of the true arm
    let held_out_scene = format!("{}{}", pb.scene("true", None), pb.script_with(3.0, 0.7));
    let held_out_truth = contact_sim::config::load_scene_str(&held_out_scene, &dir.join("held_out.yaml")).unwrap();
    let held_out = dir.join("held_out_bag");
    record_hardware_bag(&held_out_truth, 3.0, 1000.0, &Noise { seed: 2, ..pb.noise() }, &held_out).unwrap();
    let mut opts = options(&dir, nominal, vec![hw], &pb.params(7));
    opts.validate = vec![held_out];
    let r = run(&opts);
    assert!(r.cost.r#final < 1e-2 * r.cost.initial, "cost {} → {}", r.cost.initial, r.cost.r#final);
    assert_eq!(r.generalises, Some(true), "the fit generalises to the held-out motion");
    let positions: Vec<_> = r.validation.iter().filter(|c| c.channel.ends_with("position") && c.channel.starts_with("arm_")).collect();
    assert_eq!(positions.len(), 7);
    for c in positions {
        assert!(c.rmse_after < 0.2 * c.rmse_before && c.rmse_after < 3.0 * c.noise_std, "{}: held-out RMSE {} → {} (noise {})", c.channel, c.rmse_before, c.rmse_after, c.noise_std);
    }
    for (i, j) in pb.joints().iter().enumerate() {
        assert_recovered(&r, &format!("joint/{j}/friction"), pb.v(&["true", "friction_nm"])[i]);
        assert_recovered(&r, &format!("joint/{j}/damping"), pb.v(&["true", "damping_nms_per_rad"])[i]);
        assert_recovered(&r, &format!("joint/{j}/armature"), pb.v(&["true", "armature_kg_m2"])[i]);
    }
    let delay = r.parameters.iter().find(|p| p.name == "commands/delay_s").unwrap();
    assert!((delay.value - 0.004).abs() <= 0.001, "delay {} s, true 0.004 s (one sample: 1 ms)", delay.value);
}

/// `rel` (a scene of the repository) with its `../../urdf/` paths made absolute and each
/// `(from, to)` replaced exactly once.
fn edited_scene(rel: &str, edits: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(path(rel)).unwrap().replace("../../urdf/", &format!("{}/", path("urdf").display()));
    for (from, to) in edits {
        assert_eq!(text.matches(from).count(), 1, "{rel}: '{from}' must occur once");
        text = text.replace(from, to);
    }
    text
}

/// Records the "hardware" bag of `true_yaml` (written to `dir/true.yaml`) over `duration_s`.
fn hardware_bag(dir: &std::path::Path, true_yaml: &str, duration_s: f64, noise: &Noise) -> PathBuf {
    let file = dir.join("true.yaml");
    std::fs::write(&file, true_yaml).unwrap();
    let scene = contact_sim::config::load_scene(&file).unwrap();
    let hw = dir.join("hw_bag");
    record_hardware_bag(&scene, duration_s, 1000.0, noise, &hw).unwrap();
    hw
}

#[test]
fn a_wrist_payload_mass_and_centre_of_mass_from_the_ft_sensor_and_efforts() {
    let pb = ArmProblem::load();
    let dir = fresh_dir("payload");
    let duration = 4.0;
    let sensor = "sensors:\n  - {name: wrist_ft, joint: wrist_ft_joint}\n";
    // the true hand carries a payload: 1.1 kg instead of 0.6, its centre of mass off the axis
    let truth = format!("{}    links:\n      hand: {{mass_kg: 1.1, com_m: [0.012, -0.008, 0.055]}}\n{sensor}{}", pb.scene("nominal", None), pb.script(duration));
    let noise = Noise { force: 0.05, torque: 0.002, ..pb.noise() };
    let hw = hardware_bag(&dir, &truth, duration, &noise);
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, format!("{}{sensor}", pb.scene("nominal", None))).unwrap();
    let params = "parameters:\n  - {name: body/hand/mass_kg, min: 0.1, max: 3.0}\n  - {name: body/hand/com_m, min: -0.1, max: 0.15}\n";
    let r = run(&options(&dir, nominal, vec![hw], params));
    assert!(r.training.iter().any(|c| c.channel.contains("wrist_ft/wrench")), "the sensor's channels are fitted");
    assert_recovered(&r, "body/hand/mass_kg", 1.1);
    for (axis, truth) in [("x", 0.012), ("y", -0.008), ("z", 0.055)] {
        let p = r.parameters.iter().find(|p| p.name == format!("body/hand/com_m/{axis}")).unwrap();
        assert!((p.value - truth).abs() < 1e-3 || (p.value - truth).abs() <= 2.0 * p.std, "com {axis}: {} ± {}, true {truth}", p.value, p.std);
    }
    // the fitted scene loads as any scene and carries the payload
    let fitted = contact_sim::config::load_scene(&dir.join("out/identified.yaml")).unwrap();
    let hand = fitted.model.body_id("hand").unwrap();
    assert!((fitted.model.bodies[hand].mass - 1.1).abs() < 0.055);
}

#[test]
fn the_arm_pushing_a_box_gives_the_box_floor_friction_and_the_box_mass() {
    let dir = fresh_dir("push");
    let truth = edited_scene("tests/data/bag_push.yaml", &[("mass_kg: 0.5\n", "mass_kg: 0.8\n"), ("friction: 0.35}", "friction: 0.5}")]);
    let noise = Noise { position: 1e-4, velocity: 2e-3, effort: 0.05, force: 0.05, torque: 0.002, ..Default::default() };
    let hw = hardware_bag(&dir, &truth, 3.0, &noise);
    let params = "parameters:\n  - {name: body/box/mass_kg, min: 0.1, max: 2.0}\n  - {name: material_pair/cardboard/default/friction, min: 0.05, max: 1.5}\n";
    let r = run(&options(&dir, path("tests/data/bag_push.yaml"), vec![hw], params));
    assert_recovered(&r, "body/box/mass_kg", 0.8);
    assert_recovered(&r, "material_pair/cardboard/default/friction", 0.5);
}

/// The quadruped (lstable, compliant rubber feet) standing and crouching.
fn quadruped_scene(friction: f64, stiffness: f64) -> String {
    edited_scene(
        "config/examples/quadruped_crouch.yaml",
        &[
            ("rubber: {friction: 1.0}", &format!("rubber: {{friction: {friction}, contact_stiffness_n_per_m: {stiffness}, contact_damping_n_s_per_m: 400.0}}")),
            ("duration_s: 6.0\n", "duration_s: 6.0\nsolver: {kind: lstable}\ncontact_wrench_links: [LF_foot, RF_foot, LH_foot, RH_foot]\n"),
        ],
    )
}

#[test]
fn the_standing_and_crouching_quadruped_gives_foot_friction_and_contact_stiffness() {
    let dir = fresh_dir("quadruped");
    let noise = Noise { position: 1e-4, velocity: 2e-3, effort: 0.05, force: 0.2, torque: 0.01, ..Default::default() };
    let hw = hardware_bag(&dir, &quadruped_scene(0.3, 2.0e4), 4.0, &noise);
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, quadruped_scene(0.8, 1.0e5)).unwrap();
    let params = "parameters:\n  - {name: material/rubber/friction, min: 0.05, max: 1.5}\n  - {name: material/rubber/contact_stiffness_n_per_m, min: 1.0e3, max: 1.0e7}\n";
    let r = run(&options(&dir, nominal, vec![hw], params));
    assert_recovered(&r, "material/rubber/friction", 0.3);
    assert_recovered(&r, "material/rubber/contact_stiffness_n_per_m", 2.0e4);
}

#[test]
fn parameters_the_data_cannot_separate_are_named_and_bounds_hold() {
    // With no effort measured and zero velocity targets, a servo's kd and the joint's viscous
    // damping act alike (−(kd + c) v): only their sum is seen.
    let pb = ArmProblem::load();
    let dir = fresh_dir("inseparable");
    let duration = 3.0;
    let hw = hardware_bag(&dir, &pb.scene("true", Some(duration)), duration, &Noise { drop_effort: true, ..pb.noise() });
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, pb.scene("true", None)).unwrap();
    let params = "parameters:\n  - {name: joint/arm_joint7/kd, min: 1.0, max: 3.0}\n  - {name: joint/arm_joint7/damping, min: 0.0, max: 0.6, initial: 0.5}\n";
    let r = run(&options(&dir, nominal, vec![hw], params));
    let w = r.warnings.join("\n");
    assert!(w.contains("joint/arm_joint7/kd") && w.contains("joint/arm_joint7/damping") && (w.contains("cannot tell apart") || w.contains("correlated")), "{w}");
    let sum: f64 = r.parameters.iter().map(|p| p.value).sum();
    assert!((sum - 2.15).abs() < 0.02, "kd + damping = {sum}, true 2.15");
    for p in &r.parameters {
        assert!(p.value >= p.min && p.value <= p.max, "{} = {} outside [{}, {}]", p.name, p.value, p.min, p.max);
    }
    let page = std::fs::read_to_string(dir.join("out/index.html")).unwrap();
    assert!(page.contains("cannot tell apart") || page.contains("correlated"));
}

#[test]
fn bad_input_gets_one_clear_error_each() {
    let pb = ArmProblem::load();
    let dir = fresh_dir("bad_input");
    let hw = hardware_bag(&dir, &pb.scene("true", Some(0.5)), 0.5, &Noise::default());
    let nominal = dir.join("nominal.yaml");
    std::fs::write(&nominal, pb.scene("nominal", None)).unwrap();
    let error = |params: &str, edit: &dyn Fn(&mut IdentifyOptions)| -> String {
        let mut o = options(&dir, nominal.clone(), vec![hw.clone()], params);
        edit(&mut o);
        match identify(&o, &mut |_| {}) {
            Ok(_) => panic!("accepted: {params}"),
            Err(e) => e.to_string(),
        }
    };
    let good = "parameters:\n  - {name: joint/arm_joint2/friction, min: 0.0, max: 5.0}\n";
    let e = error("parameters:\n  - {name: joint/arm_joint9/friction, min: 0.0, max: 5.0}\n", &|_| {});
    assert!(e.contains("joint/arm_joint9/friction") && e.contains("arm_joint2") && e.contains("material/"), "{e}");
    let e = error("parameters:\n  - {name: joint/arm_joint2/friction, min: 2.0, max: 1.0}\n", &|_| {});
    assert!(e.contains("min 2 is not below max 1") && e.contains("params.yaml"), "{e}");
    let e = error("parameters:\n  - {name: joint/arm_joint2/friction, min: .nan, max: 1.0}\n", &|_| {});
    assert!(e.contains("min is NaN"), "{e}");
    let e = error("parameters:\n  - {name: joint/arm_joint2/friction, min: 0.0, max: 1.0, initial: 3.0}\n", &|_| {});
    assert!(e.contains("outside [min, max]"), "{e}");
    let e = error("parameters:\n  - {name: joint/arm_joint2/friction, min: -1.0, max: 1.0, initial: 0.1}\n", &|_| {});
    assert!(e.contains("at its min the scene does not load") && e.contains("friction"), "{e}");
    // a bag of another robot: none of the scene's joints
    let e = error(good, &|o| o.replay.joint_map = [("arm_joint1", "j1"), ("arm_joint2", "j2"), ("arm_joint3", "j3"), ("arm_joint4", "j4"), ("arm_joint5", "j5"), ("arm_joint6", "j6"), ("arm_joint7", "j7"), ("finger_left_joint", "f1"), ("finger_right_joint", "f2")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect());
    assert!(e.contains("nothing to fit") && e.contains("--joint-map"), "{e}");
    // outputs never overwrite an input or an earlier run
    std::fs::create_dir_all(dir.join("inplace")).unwrap();
    std::fs::copy(&nominal, dir.join("inplace/identified.yaml")).unwrap();
    let e = error(good, &|o| {
        o.scene = dir.join("inplace/identified.yaml");
        o.out = dir.join("inplace");
        o.force = true;
    });
    assert!(e.contains("would overwrite the input"), "{e}");
    std::fs::create_dir_all(dir.join("earlier")).unwrap();
    std::fs::write(dir.join("earlier/result.json"), "{}").unwrap();
    let e = error(good, &|o| o.out = dir.join("earlier"));
    assert!(e.contains("already holds result.json") && e.contains("--force"), "{e}");
}


/// A bag whose replay would hold more samples than a rollout may (a day of joint states,
/// one a minute, replayed at 1 kHz: 8.6·10⁷ samples of 3 values) is refused before any rollout
/// allocates them, naming the bag and the limit; at 1 Hz the same bag is accepted.
#[test]
fn a_rollout_larger_than_its_memory_limit_is_refused_before_allocation() {
    use contact_sim::bag::msgs::{Header, JointState, Msg, MsgType};
    let dir = fresh_dir("rollout_limit");
    let bag = dir.join("day");
    let mut w = contact_sim::bag::BagWriter::create(&bag, &Default::default()).unwrap();
    let t = w.add_topic("/joint_states", MsgType::JointState).unwrap();
    for (at_s, q) in (0..=1440u64).map(|k| (60 * k, (k as f64 * 0.1).sin())) {
        let m = JointState { header: Header::new(at_s as i64 * 1_000_000_000, ""), name: vec!["pendulum_joint".into()], position: vec![q], velocity: vec![0.0], effort: vec![0.0] };
        w.write(t, at_s * 1_000_000_000, &Msg::JointState(m)).unwrap();
    }
    w.finish().unwrap();
    let scene = contact_sim::config::load_scene_str("robots:\n  - urdf: ../../urdf/pendulum.urdf\n", &repo().join("config/examples/x.yaml")).unwrap();
    let replay = contact_sim::bag::replay::ReplayConfig { rate_hz: Some(1000.0), ..Default::default() };
    let e = contact_sim::identify::problem::data_set(&[bag.clone()], &scene, &replay).err().expect("refused");
    assert!(e.contains(&bag.display().to_string()) && e.contains("86400001 samples of 3 values") && e.contains(&format!("limit of {} bytes per rollout", contact_sim::identify::problem::MAX_ROLLOUT_BYTES)), "{e}");
    // the same day at 1 Hz fits
    let replay = contact_sim::bag::replay::ReplayConfig { rate_hz: Some(1.0), ..Default::default() };
    if let Err(e) = contact_sim::identify::problem::data_set(&[bag], &scene, &replay) {
        panic!("{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
