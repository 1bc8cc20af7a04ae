//! The arm's synthetic identification problem (tests/data/identify/arm_problem.json) as scenes
//! and noise: shared by tests/identify.rs and benches/identify.rs.
#![allow(dead_code)]

use contact_sim::identify::synthetic::Noise;
use std::fmt::Write as _;
use std::path::PathBuf;

fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The arm problem of tests/data/identify/arm_problem.json.
pub struct ArmProblem(serde_json::Value);

impl ArmProblem {
    pub fn load() -> Self {
        ArmProblem(serde_json::from_str(&std::fs::read_to_string(path("tests/data/identify/arm_problem.json")).unwrap()).unwrap())
    }
    pub fn v(&self, keys: &[&str]) -> Vec<f64> {
        let mut x = &self.0;
        for k in keys {
            x = &x[*k];
        }
        x.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    }
    pub fn joints(&self) -> Vec<String> {
        self.0["joints"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    }
    /// The scene with the parameters of `set` (`true` or `nominal`); `script`: with the
    /// excitation as keyframes every 10 ms over `duration_s`.
    pub fn scene(&self, set: &str, script: Option<f64>) -> String {
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
    pub fn script(&self, duration_s: f64) -> String {
        self.script_with(duration_s, 1.0)
    }
    /// The excitation with its frequencies scaled by `speed` (a held-out motion: 0.7 is slower,
    /// with other phases between the joints over time).
    pub fn script_with(&self, duration_s: f64, speed: f64) -> String {
        let joints = self.joints();
        let e = |k: &str| self.v(&["excitation", k]);
        let (q0, a, f1, f2, phi) = (e("q0"), e("a"), e("f1_hz"), e("f2_hz"), e("phi"));
        let tau = std::f64::consts::TAU;
        let mut y = String::from("script:\n");
        for k in 0..=((duration_s / 0.01).round() as usize) {
            let t = k as f64 * 0.01;
            let pos: Vec<String> = (0..joints.len())
                .map(|j| format!("{}: {:.9}", joints[j], q0[j] + a[j] * ((tau * speed * f1[j] * t + phi[j]).sin() + 0.5 * (tau * speed * f2[j] * t).sin())))
                .collect();
            writeln!(y, "  - {{time_s: {t:.3}, positions: {{{}}}}}", pos.join(", ")).unwrap();
        }
        y
    }
    /// The parameter file: friction, damping and armature of the first `joints` arm joints,
    /// and the command delay, within the problem's bounds.
    pub fn params(&self, joints: usize) -> String {
        let b = |k: &str| self.v(&["bounds", k]);
        let (f, d, a, t) = (b("friction_nm"), b("damping_nms_per_rad"), b("armature_kg_m2"), b("command_delay_s"));
        let mut out = String::from("parameters:\n");
        for j in self.joints().iter().take(joints) {
            writeln!(out, "  - {{name: joint/{j}/friction, min: {}, max: {}}}", f[0], f[1]).unwrap();
            writeln!(out, "  - {{name: joint/{j}/damping, min: {}, max: {}}}", d[0], d[1]).unwrap();
            writeln!(out, "  - {{name: joint/{j}/armature, min: {}, max: {}}}", a[0], a[1]).unwrap();
        }
        writeln!(out, "  - {{name: commands/delay_s, min: {}, max: {}}}", t[0], t[1]).unwrap();
        out
    }
    pub fn noise(&self) -> Noise {
        let n = &self.0["noise_std"];
        Noise { position: n["position_rad"].as_f64().unwrap(), velocity: n["velocity_rad_s"].as_f64().unwrap(), effort: n["effort_nm"].as_f64().unwrap(), seed: 1, ..Default::default() }
    }
}

