//! The registry of contact methods is the one list: the scene schema, the CLI, the node's
//! `solver` parameter and the launch files accept exactly its names, and reject others with the
//! list. Also the regression tests of the bugs found while building it (a method that cannot
//! simulate deformables is refused; `--solver K` keeps the scene's parameters of K).

use contact_sim::config::load_scene_str;
use contact_sim::contact::{MethodKind, SolverConfig, SolverKind};
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(repo()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// box_rest.yaml with its solver replaced by `solver_yaml`.
fn box_rest_with(solver_yaml: &str) -> String {
    let text = std::fs::read_to_string(repo().join("config/examples/box_rest.yaml")).unwrap();
    let mut out: Vec<String> = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("solver:") {
            skipping = true;
            continue;
        }
        if skipping && (line.starts_with(' ') || line.is_empty()) {
            continue;
        }
        skipping = false;
        out.push(line.to_string());
    }
    out.push(format!("solver: {solver_yaml}"));
    out.join("\n")
}

#[test]
fn registry_names_are_unique_and_match_the_scene_schema() {
    assert!(!SolverConfig::KINDS.is_empty());
    let mut names: Vec<&str> = SolverConfig::KINDS.to_vec();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), SolverConfig::KINDS.len(), "duplicate method names");
    for &kind in SolverKind::ALL {
        // the serde tag (variant name in snake case) is the params' NAME
        let cfg: SolverConfig = serde_yaml::from_str(&format!("kind: {}", kind.name())).unwrap();
        assert_eq!(cfg.solver_kind(), kind);
        assert_eq!(cfg, kind.default_config());
        assert_eq!(cfg.kind(), kind.name());
        cfg.validate().unwrap_or_else(|e| panic!("{}: defaults invalid: {e:?}", kind.name()));
        let t = cfg.tolerance();
        assert!(!t.unit.is_empty() && t.value >= 0.0, "{}: tolerance {t:?}", kind.name());
        // the tolerance field named is the params field that holds it
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json[t.field].as_f64(), Some(t.value), "{}: field {}", kind.name(), t.field);
        let mut c2 = cfg.clone();
        c2.set_tolerance(0.125);
        c2.set_max_iterations(7);
        assert_eq!((c2.tolerance().value, c2.max_iterations()), (0.125, 7));
        assert!(!kind.summary().is_empty());
        assert_eq!(SolverConfig::from_kind(kind.name()), Some(kind.default_config()));
        assert_eq!(kind.name().parse::<SolverKind>(), Ok(kind));
    }
    assert_eq!(SolverConfig::PARAMETER_CHOICES[..2], ["", "scene"]);
    assert_eq!(&SolverConfig::PARAMETER_CHOICES[2..], SolverConfig::KINDS);
}

#[test]
fn scene_loader_accepts_every_method_and_rejects_an_unknown_one_with_the_list() {
    let path = repo().join("config/examples/box_rest.yaml");
    for &kind in SolverKind::ALL {
        let scene = load_scene_str(&box_rest_with(&format!("{{kind: {}}}", kind.name())), &path)
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        assert_eq!(scene.solver.solver_kind(), kind);
    }
    let err = load_scene_str(&box_rest_with("{kind: nosuchsolver}"), &path).unwrap_err().to_string();
    assert!(err.contains("box_rest.yaml") && err.contains("nosuchsolver"), "{err}");
    for name in SolverConfig::KINDS {
        assert!(err.contains(name), "error does not list '{name}': {err}");
    }
}

#[test]
fn cli_accepts_every_method_and_rejects_an_unknown_one_with_the_list() {
    for name in SolverConfig::KINDS {
        let (code, _, err) = cli(&["run", "config/examples/box_rest.yaml", "--duration", "0.01", "--quiet", "--solver", name]);
        assert_eq!(code, 0, "--solver {name}: {err}");
    }
    let (code, _, err) = cli(&["run", "config/examples/box_rest.yaml", "--duration", "0.01", "--solver", "nosuchsolver"]);
    assert_eq!(code, 2);
    for name in SolverConfig::KINDS {
        assert!(err.contains(name), "error does not list '{name}': {err}");
    }
    let (code, _, err) = cli(&["bench", "config/examples/box_rest.yaml", "--steps", "5", "--warmup", "0", "--solver", "pgs,nosuchsolver"]);
    assert_eq!(code, 2, "{err}");
    assert!(SolverConfig::KINDS.iter().all(|n| err.contains(n)), "{err}");
}

#[test]
fn help_texts_list_every_method() {
    for sub in ["run", "bench"] {
        let (code, out, _) = cli(&[sub, "--help"]);
        assert_eq!(code, 0);
        for name in SolverConfig::KINDS {
            assert!(out.contains(name), "`{sub} --help` does not list '{name}':\n{out}");
        }
    }
}

#[test]
fn node_parameter_accepts_every_method_and_rejects_an_unknown_one_with_the_list() {
    let scene = contact_sim::config::load_scene(&repo().join("config/examples/box_rest.yaml")).unwrap();
    for value in SolverConfig::PARAMETER_CHOICES {
        let cfg = scene.solver_for(value).unwrap_or_else(|e| panic!("'{value}': {e}"));
        if value.is_empty() || *value == "scene" {
            assert_eq!(cfg, scene.solver);
        } else {
            assert_eq!(cfg.kind(), *value);
        }
    }
    let err = scene.solver_for("nosuchsolver").unwrap_err();
    assert!(err.contains("nosuchsolver") && SolverConfig::KINDS.iter().all(|n| err.contains(n)), "{err}");
}

/// The launch files offer exactly the node parameter's choices.
#[test]
fn launch_files_offer_the_registry() {
    let py = std::fs::read_to_string(repo().join("launch/sim.launch.py")).unwrap();
    let start = py.find("\"solver\"").expect("solver argument");
    let choices = &py[start..];
    let list = &choices[choices.find("choices=[").unwrap() + 9..];
    let list = &list[..list.find(']').unwrap()];
    let offered: Vec<String> = list.split(',').map(|s| s.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty()).collect();
    let mut want: Vec<String> = vec!["scene".into()];
    want.extend(SolverConfig::KINDS.iter().map(|s| s.to_string()));
    assert_eq!(offered, want, "launch/sim.launch.py solver choices");
    let xml = std::fs::read_to_string(repo().join("launch/sim.launch.xml")).unwrap();
    let start = xml.find("<arg name=\"solver\"").expect("solver argument in sim.launch.xml");
    let arg = &xml[start..start + xml[start..].find("</arg>").expect("solver argument with choices")];
    let xml_choices: Vec<String> = arg.split("<choice value=\"").skip(1).map(|s| s[..s.find('"').unwrap()].to_string()).collect();
    assert_eq!(xml_choices, want, "launch/sim.launch.xml solver choices");
}

/// Bug: a method that cannot simulate deformables ran a deformable scene silently (the coupled
/// solve was skipped). It is refused everywhere, naming the scene.
#[test]
fn a_method_without_deformables_is_refused_on_a_deformable_scene() {
    let scene_file = "config/examples/fem_ball_rest.yaml";
    let scene = contact_sim::config::load_scene(&repo().join(scene_file)).unwrap();
    assert!(!scene.model.deformables.is_empty());
    for &kind in SolverKind::ALL {
        let cfg = kind.default_config();
        let result = cfg.check_model(&scene.model, scene_file);
        if kind.capabilities().deformables {
            assert!(result.is_ok());
            continue;
        }
        let err = result.unwrap_err();
        assert!(err.contains("fem_ball_rest.yaml") && err.contains(kind.name()), "{err}");
        let (code, _, err) = cli(&["run", scene_file, "--duration", "0.01", "--solver", kind.name()]);
        assert_eq!(code, 2, "run --solver {}: {err}", kind.name());
        assert!(err.contains("fem_ball_rest.yaml") && err.contains("deformable"), "{err}");
        let (code, _, err) = cli(&["bench", scene_file, "--steps", "2", "--warmup", "0", "--solver", kind.name()]);
        assert_eq!(code, 2, "bench --solver {}: {err}", kind.name());
        assert!(err.contains("fem_ball_rest.yaml") && err.contains("deformable"), "{err}");
        assert!(scene.solver_for(kind.name()).unwrap_err().contains("fem_ball_rest.yaml"));
    }
    // the simulation itself refuses too (library users)
    let pgs = SolverKind::ALL.iter().find(|k| !k.capabilities().deformables).unwrap().default_config();
    assert!(contact_sim::sim::Simulation::try_from_scene(&scene, Some(&pgs)).is_err());
}

/// Bug: `--solver K` replaced the scene's parameters of K by K's defaults. The scene's are kept
/// when the kind matches, and every run prints the parameters it used.
#[test]
fn solver_override_keeps_the_scene_parameters_and_prints_them() {
    let scene = contact_sim::config::load_scene(&repo().join("config/examples/arm_push_box.yaml")).unwrap();
    let own = scene.solver.solver_kind();
    assert_eq!(scene.solver.overridden_by(own), scene.solver);
    assert_ne!(scene.solver, own.default_config(), "the arm scene must tune its solver for this test to mean something");
    for &kind in SolverKind::ALL.iter().filter(|&&k| k != own) {
        assert_eq!(scene.solver.overridden_by(kind), kind.default_config());
    }
    let described = scene.solver.describe();
    let (code, out, err) = cli(&["run", "config/examples/arm_push_box.yaml", "--duration", "0.01", "--quiet", "--solver", own.name()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&described), "run output does not show the parameters used ({described}):\n{out}");
    let (code, out, err) = cli(&["bench", "config/examples/arm_push_box.yaml", "--steps", "3", "--warmup", "0", "--solver", own.name()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&described), "bench output does not show the parameters used ({described}):\n{out}");
}

/// Every method says how it enters the step in one place (its runtime's `stage()`), and a
/// method that reads the step's rows (impulse solvers, schemes on rows) starts a contact with
/// its normal row.
#[test]
fn every_method_declares_its_kind_and_rows() {
    let scene = contact_sim::config::load_scene(&repo().join("config/examples/box_rest.yaml")).unwrap();
    for &kind in SolverKind::ALL {
        let c = kind.capabilities();
        assert!(c.contact_rows.len() >= 3, "{}: a contact has at least a normal and two tangents", kind.name());
        let mut solver = contact_sim::contact::Solver::new(&kind.default_config(), &scene.model);
        if solver.stage().kind() != MethodKind::WholeStep {
            assert_eq!(c.contact_rows.rows()[0], contact_sim::contact::ContactRow::Normal, "{}", kind.name());
        }
    }
}

/// A method refuses what it cannot simulate beyond its capabilities through its own
/// `MethodParams::unsupported_in` (no method-specific code in the registry): newton's dual form
/// (`fem_formulation: dual_rows`, the paper preset) takes only co-rotational deformables and names
/// the body and the scene file for a Neo-Hookean or a Stable Neo-Hookean one; its default primal
/// form takes them.
#[test]
fn newton_refuses_a_neo_hookean_deformable_naming_the_body() {
    for (law, variant) in [("neo_hookean", "neo_hookean"), ("stable_neo_hookean", "stable_neo_hookean")] {
        let scene_file = "config/examples/fem_ball_rest.yaml";
        let text = std::fs::read_to_string(repo().join(scene_file)).unwrap();
        let text = text.replace("material: {density_kg_m3: 1100,", &format!("material: {{model: {law}, density_kg_m3: 1100,"));
        assert!(text.contains(law));
        let solver_of = |replacement: &str| {
            let scene = contact_sim::config::load_scene_str(&text.replace("solver: {kind: vfpi, tolerance: 1.0e-5, residual_tolerance: 3.0e-4, max_iterations: 3000}", replacement), &repo().join(scene_file)).unwrap();
            scene.solver.check_model(&scene.model, scene_file)
        };
        let primal = solver_of("solver: {kind: newton}");
        assert!(primal.is_ok(), "{law}: the primal form simulates it: {:?}", primal.err());
        let err = solver_of("solver: {kind: newton, fem_formulation: dual_rows}").expect_err("the dual form refuses it");
        assert!(err.contains("fem_ball_rest.yaml") && err.contains("deformables[0]") && err.contains("newton"), "{err}");
        assert!(err.contains(&format!("'{variant}'")) && err.contains("co-rotational only"), "{law}: {err}");
        let scene = contact_sim::config::load_scene_str(&text, &repo().join(scene_file)).unwrap();
        let vfpi = SolverKind::ALL.iter().find(|k| k.name() == "vfpi").unwrap().default_config();
        assert!(vfpi.check_model(&scene.model, scene_file).is_ok(), "vfpi simulates {law} bodies");
    }
}

/// The README's method-choice table has one row per method of the registry, no more, no less.
#[test]
fn the_readme_method_table_lists_the_registry() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme.find("<!-- methods:begin -->").expect("README.md: <!-- methods:begin --> marker");
    let end = readme.find("<!-- methods:end -->").expect("README.md: <!-- methods:end --> marker");
    let rows: Vec<String> = readme[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| l.split('`').next().unwrap().to_string())
        .collect();
    let mut listed = rows.clone();
    listed.sort();
    let mut registry: Vec<String> = SolverKind::ALL.iter().map(|k| k.name().to_string()).collect();
    registry.sort();
    assert_eq!(listed, registry, "README.md method table rows {rows:?}");
}
