//! Golden trajectories: every shipped scene, stepped a fixed number of steps, must reproduce the
//! recorded positions, velocities, impulse sums and contact counts to 1e-12 (relative to the
//! value's scale). It pins the engine's behaviour through refactors: a change that moves any
//! trajectory by more than round-off shows up here.
//!
//! Re-record (only after a deliberate change of physics, with the reason in the commit):
//! `CONTACT_SIM_BLESS=1 cargo test --release --test suite golden::`.
//!
//! Four rigid scenes also run under every method of the registry that can simulate them, so each
//! method's path is pinned, not only the one the scene configures. FEM scenes use the AVX2/FMA kernels when the CPU
//! has them, whose round-off differs from the scalar path; a recording made on the other path is
//! compared at a looser 1e-6 (still far below any physical change).

use contact_sim::config::load_scene;
use contact_sim::contact::{SolverConfig, SolverKind};
use contact_sim::sim::Simulation;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Steps per sample, samples per scene.
const STEPS_PER_SAMPLE: usize = 100;
const SAMPLES: usize = 3;
/// Every this many FEM coordinates is kept (the meshes have thousands).
const FEM_STRIDE: usize = 37;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Sample {
    step: u64,
    q: Vec<f64>,
    v: Vec<f64>,
    contacts: usize,
    joint_rows: usize,
    /// Sum of |impulse| over the rows of the last step (N·s).
    impulse_abs_sum: f64,
    fem_x: Vec<f64>,
    fem_v: Vec<f64>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Golden {
    scene: String,
    solver: String,
    /// Whether the FEM kernels ran on the AVX2/FMA path when this was recorded.
    simd: bool,
    samples: Vec<Sample>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn simd_path() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn strided(x: &[f64]) -> Vec<f64> {
    x.iter().step_by(FEM_STRIDE).copied().collect()
}

fn record(scene_path: &Path, solver: Option<&str>) -> Golden {
    let scene = load_scene(scene_path).unwrap_or_else(|e| panic!("{}: {e}", scene_path.display()));
    let cfg = solver.map(|k| SolverConfig::from_kind(k).expect("known kind"));
    let mut sim = Simulation::from_scene(&scene, cfg.as_ref());
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let mut report = None;
        for _ in 0..STEPS_PER_SAMPLE {
            report = Some(sim.step());
        }
        let report = report.unwrap();
        let impulse_abs_sum = sim.workspace.impulse.iter().map(|x| x.abs()).sum();
        samples.push(Sample {
            step: sim.state.step_count,
            q: sim.state.q.clone(),
            v: sim.state.v.clone(),
            contacts: report.contacts,
            joint_rows: report.joint_rows,
            impulse_abs_sum,
            fem_x: strided(&sim.state.fem_x),
            fem_v: strided(&sim.state.fem_v),
        });
    }
    Golden {
        scene: scene_path.strip_prefix(repo()).unwrap_or(scene_path).display().to_string(),
        solver: solver.unwrap_or(scene.solver.kind()).to_string(),
        simd: simd_path(),
        samples,
    }
}

/// Largest relative difference between two slices (scale: max(1, |a|)).
fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "length changed");
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(1.0)).fold(0.0, f64::max)
}

/// The first difference beyond `tol`, described.
fn compare(want: &Golden, got: &Golden, tol: f64) -> Option<String> {
    for (w, g) in want.samples.iter().zip(&got.samples) {
        let checks = [
            ("q", max_rel_diff(&w.q, &g.q)),
            ("v", max_rel_diff(&w.v, &g.v)),
            ("impulse_abs_sum", max_rel_diff(&[w.impulse_abs_sum], &[g.impulse_abs_sum])),
            ("fem_x", max_rel_diff(&w.fem_x, &g.fem_x)),
            ("fem_v", max_rel_diff(&w.fem_v, &g.fem_v)),
        ];
        for (name, d) in checks {
            if !(d <= tol) {
                return Some(format!("step {}: {name} differs by {d:.3e} (tolerance {tol:.0e})", w.step));
            }
        }
        if (w.contacts, w.joint_rows) != (g.contacts, g.joint_rows) {
            return Some(format!(
                "step {}: contacts/joint rows {}/{} became {}/{}",
                w.step, w.contacts, w.joint_rows, g.contacts, g.joint_rows
            ));
        }
    }
    None
}

/// The runs pinned: every scene with its own solver, rigid scenes also under each rigid method.
fn cases() -> Vec<(PathBuf, Option<&'static str>)> {
    let mut scenes = vec![repo().join("config/default.yaml")];
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo().join("config/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    examples.sort();
    scenes.extend(examples);
    let mut out = Vec::new();
    for s in scenes {
        out.push((s.clone(), None));
        let name = s.file_stem().unwrap().to_string_lossy().to_string();
        if ["default", "quadruped_stand", "arm_push_box", "box_stack"].contains(&name.as_str()) {
            // every method of the registry that can simulate the scene
            let scene = load_scene(&s).unwrap_or_else(|e| panic!("{}: {e}", s.display()));
            for &k in SolverKind::ALL {
                if k.default_config().check_model(&scene.model, &name).is_ok() {
                    out.push((s.clone(), Some(k.name())));
                }
            }
        }
    }
    out
}

fn golden_file(scene: &Path, solver: Option<&str>) -> PathBuf {
    let stem = scene.file_stem().unwrap().to_string_lossy();
    let tag = solver.unwrap_or("scene");
    repo().join(format!("tests/data/golden/{stem}.{tag}.json"))
}

#[test]
fn every_scene_reproduces_its_golden_trajectory() {
    let bless = std::env::var_os("CONTACT_SIM_BLESS").is_some();
    let mut failures = Vec::new();
    for (scene, solver) in cases() {
        let got = record(&scene, solver);
        let file = golden_file(&scene, solver);
        if bless {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, serde_json::to_string_pretty(&got).unwrap()).unwrap();
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (record with CONTACT_SIM_BLESS=1)", file.display()));
        let want: Golden = serde_json::from_str(&text).unwrap();
        let has_fem = !want.samples[0].fem_x.is_empty();
        let tol = if has_fem && want.simd != got.simd { 1e-6 } else { 1e-12 };
        if let Some(why) = compare(&want, &got, tol) {
            failures.push(format!("{} [{}]: {why}", want.scene, want.solver));
        }
    }
    assert!(failures.is_empty(), "golden trajectories changed:\n{}", failures.join("\n"));
}

/// The comparison is not blind: a perturbation of 1e-9 in one coordinate is reported.
#[test]
fn a_small_perturbation_is_detected() {
    let g = record(&repo().join("config/examples/box_rest.yaml"), None);
    let mut h = g.clone();
    h.samples[1].q[2] += 1e-9;
    assert!(compare(&g, &g, 1e-12).is_none());
    let why = compare(&g, &h, 1e-12).expect("perturbation must be detected");
    assert!(why.contains(" q "), "{why}");
}
