//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use contact_sim::config::{load_scene_str, Scene};
use contact_sim::contact::SolverConfig;
use contact_sim::math::Vec3;
use contact_sim::model::TreeKind;
use contact_sim::sim::Simulation;
use std::path::{Path, PathBuf};

pub mod arm_problem;
pub mod mcap_bytes;

/// Repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Writes `mesh` as a Gmsh 4.1 file `name` in Cargo's scratch directory for integration tests
/// (`target/tmp/`, nothing left in the system's temporary directory) and returns its path.
/// Tests running at once may write the same file: each writes its own copy, then renames it
/// into place, so a reader never sees a partly written mesh.
pub fn mesh_file(name: &str, mesh: &contact_sim::fem::TetMesh) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("meshes");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let tmp = dir.join(format!("{name}.{}.{thread}.tmp", std::process::id()));
    contact_sim::config::write_gmsh41(mesh, &tmp).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// Loads a scene from YAML text as if it lived in `config/examples/` (relative paths resolve
/// from there).
pub fn scene(yaml: &str) -> Scene {
    let path = repo().join("config/examples/_test_scene.yaml");
    match load_scene_str(yaml, &path) {
        Ok(s) => s,
        Err(e) => panic!("test scene does not load: {e}"),
    }
}

/// Loads a scene file of the repository.
pub fn scene_file(rel: &str) -> Scene {
    contact_sim::config::load_scene(&repo().join(rel)).unwrap_or_else(|e| panic!("{e}"))
}

/// A simulation of `yaml` with the given solver kind.
pub fn sim(yaml: &str, solver: &str) -> Simulation {
    let s = scene(yaml);
    Simulation::from_scene(&s, Some(&SolverConfig::from_kind(solver).expect("solver kind")))
}

/// Every solver kind; the conformance suite runs each.
pub fn solver_kinds() -> &'static [&'static str] {
    SolverConfig::KINDS
}

/// The solver kinds that can simulate `scene` (a method refuses the scenes outside its
/// coverage, e.g. contact between two bodies); always includes the baseline `pgs`.
pub fn solver_kinds_for_scene(scene: &Scene) -> Vec<&'static str> {
    let kinds: Vec<&'static str> =
        SolverConfig::KINDS.iter().copied().filter(|k| SolverConfig::from_kind(k).unwrap().check_model(&scene.model, "scene").is_ok()).collect();
    assert!(kinds.contains(&"pgs"), "the baseline must simulate every rigid test scene");
    kinds
}

/// [`solver_kinds_for_scene`] of a YAML text.
pub fn solver_kinds_for(yaml: &str) -> Vec<&'static str> {
    solver_kinds_for_scene(&scene(yaml))
}

/// World position of an object's origin.
pub fn object_position(sim: &Simulation, name: &str) -> Vec3 {
    let o = sim.model.objects.iter().find(|o| o.name == name).expect("object");
    let q = &sim.state.q[sim.model.bodies[o.body].joint.q_index..];
    Vec3::new(q[0], q[1], q[2])
}

/// World linear velocity of an object's centre of mass (body-frame velocity rotated to world).
pub fn object_velocity(sim: &Simulation, name: &str) -> Vec3 {
    let o = sim.model.objects.iter().find(|o| o.name == name).expect("object");
    let j = &sim.model.bodies[o.body].joint;
    let q = &sim.state.q[j.q_index..j.q_index + 7];
    let rot = nalgebra::UnitQuaternion::new_normalize(nalgebra::Quaternion::new(q[6], q[3], q[4], q[5]));
    let v = &sim.state.v[j.v_index..j.v_index + 3];
    rot * Vec3::new(v[0], v[1], v[2])
}

/// Sum over the last step's contacts touching `body` of the contact force acting on it (N, world).
pub fn contact_force_on_body(sim: &Simulation, body: usize) -> Vec3 {
    let ws = &sim.workspace;
    let mut f = Vec3::zeros();
    for (i, c) in ws.contacts.iter().enumerate() {
        let fw = ws.contact_force_world(i);
        if c.body_b == Some(body) {
            f += fw;
        }
        if c.body_a == Some(body) {
            f -= fw;
        }
    }
    f
}

/// Contact force on a whole tree (robot or object) from the last step (N, world).
pub fn contact_force_on_tree(sim: &Simulation, tree: usize) -> Vec3 {
    let t = &sim.model.trees[tree];
    (t.body_start..t.body_end).map(|b| contact_force_on_body(sim, b)).sum()
}

/// Index of the tree of an object by name.
pub fn object_tree(sim: &Simulation, name: &str) -> usize {
    sim.model.trees.iter().position(|t| matches!(t.kind, TreeKind::Object(o) if sim.model.objects[o].name == name)).unwrap()
}

/// Asserts every contact impulse of the last step lies inside its friction cone (with a small
/// relative tolerance) and has a non-negative normal part.
pub fn assert_impulses_in_cone(sim: &Simulation) {
    let ws = &sim.workspace;
    for (i, c) in ws.contacts.iter().enumerate() {
        let l = ws.contact_impulse(i);
        assert!(l[0] >= -1e-12, "negative normal impulse {}", l[0]);
        let t = (l[1] * l[1] + l[2] * l[2]).sqrt();
        assert!(t <= c.friction * l[0] * (1.0 + 1e-6) + 1e-12, "impulse outside the cone: |λt| = {t}, μ λn = {}", c.friction * l[0]);
    }
}

/// Path relative to the repository root.
pub fn path(rel: &str) -> PathBuf {
    repo().join(Path::new(rel))
}

/// Writes a scene file under target/test-scenes (the base of its relative paths) and returns its
/// path.
#[allow(dead_code)]
pub fn write_scene(name: &str, text: &str) -> String {
    let dir = repo().join("target/test-scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The heavy stack (`config/examples/box_stack_heavy.yaml`: five boxes, ×8 mass per level,
/// 4096:1, heaviest on top) for 5 s under `solver`, then under PGS and bisection at their
/// defaults. Prints each and asserts that `solver` keeps the top box and every contact within
/// 1 mm with no unconverged step, while each iterative solver fails: it lets the top box sink
/// more than 1 mm, or stops short of its tolerance in more than half of the steps (PGS since the
/// collision stage no longer reports a box–box point twice: its 500 sweeps hold the stack within
/// 0.2 mm but converge in none of the 5 000 steps).
pub fn assert_heavy_stack_stands_where_iterative_solvers_sink(solver: &str) {
    let scene = scene_file("config/examples/box_stack_heavy.yaml");
    let mut results = Vec::new();
    for kind in [solver, "pgs", "bisection"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(kind).unwrap()));
        let top0 = object_position(&sim, "box4").z;
        let (mut deepest, mut unconverged, mut steps): (f64, usize, usize) = (0.0, 0, 0);
        while sim.state.time_s < 5.0 {
            let rep = sim.step();
            deepest = deepest.max(rep.max_penetration_m);
            unconverged += usize::from(!rep.solve.converged);
            steps += 1;
        }
        let sink = top0 - object_position(&sim, "box4").z;
        println!("{kind:9}: top box sank {:.3} mm, deepest penetration {:.3} mm, unconverged steps {unconverged}", sink * 1e3, deepest * 1e3);
        results.push((kind, sink, deepest, unconverged, steps));
    }
    let (_, sink, deepest, unconverged, _) = results[0];
    assert!(sink < 1e-3 && deepest < 1e-3 && unconverged == 0, "{solver}: sink {sink} m, deepest {deepest} m, {unconverged} unconverged");
    assert!(results[1..].iter().all(|&(_, s, _, u, steps)| s > 1e-3 || 2 * u > steps), "the iterative solvers were expected to sink or to stop short of their tolerance: {results:?}");
}
