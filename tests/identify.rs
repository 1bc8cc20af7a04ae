//! System identification against ground truth: a "hardware" bag is made with contact_sim itself
//! from a scene whose true parameters differ from the nominal one (plus measurement noise and a
//! command delay), and `identify` must recover the true values from the nominal scene.

use crate::common::{path, repo};
use contact_sim::identify::synthetic::{record_hardware_bag, Noise};
use contact_sim::identify::{identify, optimizer::Settings, IdentifyOptions, IdentifyResult};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A fresh directory under target/identify-tests.
fn fresh_dir(name: &str) -> PathBuf {
    let d = repo().join("target/identify-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The arm problem of tests/data/identify/arm_problem.json.
struct ArmProblem(serde_json::Value);

impl ArmProblem {
    fn load() -> Self {
        ArmProblem(serde_json::from_str(&std::fs::read_to_string(path("tests/data/identify/arm_problem.json")).unwrap()).unwrap())
    }
    fn v(&self, keys: &[&str]) -> Vec<f64> {
        let mut x = &self.0;
        for k in keys {
            x = &x[*k];
        }
        x.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    }
    fn joints(&self) -> Vec<String> {
        self.0["joints"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    }
    /// The scene with the parameters of `set` (`true` or `nominal`); `script`: with the
    /// excitation as keyframes every 10 ms over `duration_s`.
    fn scene(&self, set: &str, script: Option<f64>) -> String {
        let joints = self.joints();
        let (kp, kd) = (self.v(&["gains", "kp"]), self.v(&["gains", "kd"]));
        let (fr, da, ar) = (self.v(&[set, "friction_nm"]), self.v(&[set, "damping_nms_per_rad"]), self.v(&[set, "armature_kg_m2"]));
        let delay = self.0[set]["command_delay_s"].as_f64().unwrap();
        let q0 = self.v(&["excitation", "q0"]);
        let mut y = String::new();
        writeln!(y, "timestep_s: 0.001\nground: {{enabled: false}}\ncommand_delay_s: {delay}\nrobots:\n  - urdf: {}\n    base: {{mode: fixed}}", path("urdf/arm7.urdf").display()).unwrap();
        let init: Vec<String> = joints.iter().zip(&q0).map(|(j, q)| format!("{j}: {q}")).collect();
        writeln!(y, "    initial_positions: {{{}}}", init.join(", ")).unwrap();
        writeln!(y, "    control:\n      default: {{mode: position, kp: 400.0, kd: 10.0}}\n      joints:").unwrap();
        for (i, j) in joints.iter().enumerate() {
            writeln!(y, "        {j}: {{mode: position, kp: {}, kd: {}}}", kp[i], kd[i]).unwrap();
        }
        writeln!(y, "    joints:").unwrap();
        for (i, j) in joints.iter().enumerate() {
            writeln!(y, "      {j}: {{friction: {}, damping: {}, armature: {}}}", fr[i], da[i], ar[i]).unwrap();
        }
        if let Some(duration) = script {
            y.push_str(&self.script(duration));
        }
        y
    }
    /// The excitation as script keyframes (position targets), every 10 ms.
    fn script(&self, duration_s: f64) -> String {
        let joints = self.joints();
        let e = |k: &str| self.v(&["excitation", k]);
        let (q0, a, f1, f2, phi) = (e("q0"), e("a"), e("f1_hz"), e("f2_hz"), e("phi"));
        let tau = std::f64::consts::TAU;
        let mut y = String::from("script:\n");
        for k in 0..=((duration_s / 0.01).round() as usize) {
            let t = k as f64 * 0.01;
            let pos: Vec<String> = (0..joints.len())
                .map(|j| format!("{}: {:.9}", joints[j], q0[j] + a[j] * ((tau * f1[j] * t + phi[j]).sin() + 0.5 * (tau * f2[j] * t).sin())))
                .collect();
            writeln!(y, "  - {{time_s: {t:.3}, positions: {{{}}}}}", pos.join(", ")).unwrap();
        }
        y
    }
    fn noise(&self) -> Noise {
        let n = &self.0["noise_std"];
        Noise { position: n["position_rad"].as_f64().unwrap(), velocity: n["velocity_rad_s"].as_f64().unwrap(), effort: n["effort_nm"].as_f64().unwrap(), seed: 1, ..Default::default() }
    }
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
    let mut params = String::from("parameters:\n");
    for j in pb.joints() {
        writeln!(params, "  - {{name: joint/{j}/friction, min: 0.0, max: 5.0}}\n  - {{name: joint/{j}/damping, min: 0.0, max: 10.0}}\n  - {{name: joint/{j}/armature, min: 0.0, max: 1.0}}").unwrap();
    }
    params.push_str("  - {name: commands/delay_s, min: 0.0, max: 0.02}\n");
    let r = run(&options(&dir, nominal, vec![hw], &params));
    assert!(r.cost.r#final < 1e-2 * r.cost.initial, "cost {} → {}", r.cost.initial, r.cost.r#final);
    for (i, j) in pb.joints().iter().enumerate() {
        assert_recovered(&r, &format!("joint/{j}/friction"), pb.v(&["true", "friction_nm"])[i]);
        assert_recovered(&r, &format!("joint/{j}/damping"), pb.v(&["true", "damping_nms_per_rad"])[i]);
        assert_recovered(&r, &format!("joint/{j}/armature"), pb.v(&["true", "armature_kg_m2"])[i]);
    }
    let delay = r.parameters.iter().find(|p| p.name == "commands/delay_s").unwrap();
    assert!((delay.value - 0.004).abs() <= 0.001, "delay {} s, true 0.004 s (one sample: 1 ms)", delay.value);
}
