//! Every collision shape rests on the ground and on other shapes carrying its weight; self-collision
//! pairs skip adjacent links; `package://` mesh URIs resolve.


use crate::common::*;
use contact_sim::config::resolve_mesh_path;
use std::collections::HashMap;

const G: f64 = 9.81;

fn rests(shape_yaml: &str, z: f64, rpy: &str, mass: f64) {
    let yaml = format!(
        "materials: {{default: {{friction: 0.8}}}}\nobjects:\n  - {{name: o, shape: {shape_yaml}, mass_kg: {mass}, position: [0, 0, {z}], rpy: {rpy}}}\n"
    );
    for solver in solver_kinds_for(&yaml) {
        let mut sim = sim(&yaml, solver);
        let tree = object_tree(&sim, "o");
        let p0 = object_position(&sim, "o");
        while sim.state.time_s < 2.0 {
            sim.step();
        }
        let f = contact_force_on_tree(&sim, tree);
        assert!((f.z - mass * G).abs() / (mass * G) < 0.005, "{solver} {shape_yaml}: normal force {} N vs m g = {} N", f.z, mass * G);
        let moved = (object_position(&sim, "o") - p0).norm();
        assert!(moved < 1e-3, "{solver} {shape_yaml}: moved {moved} m");
        assert!(object_velocity(&sim, "o").norm() < 1e-4);
    }
}

#[test]
fn sphere_rests() {
    rests("{type: sphere, radius: 0.1}", 0.1, "[0, 0, 0]", 1.5);
}

#[test]
fn cylinder_rests_upright_and_on_its_side() {
    rests("{type: cylinder, radius: 0.1, length: 0.3}", 0.15, "[0, 0, 0]", 2.0);
    rests("{type: cylinder, radius: 0.1, length: 0.3}", 0.1, "[1.5707963267948966, 0, 0]", 2.0);
}

#[test]
fn capsule_rests_on_its_side() {
    rests("{type: capsule, radius: 0.05, length: 0.3}", 0.05, "[0, 1.5707963267948966, 0]", 1.0);
}

#[test]
fn convex_mesh_rests() {
    // the wedge prism from assets/ (0.2 m wide), lying on its flat base face
    let scene_yaml = "materials: {default: {friction: 0.8}}\nobjects:\n  - {name: o, shape: {type: mesh, file: ../../assets/meshes/wedge.obj}, mass_kg: 0.7, position: [0, 0, 0.3]}\n";
    let mut sim = sim(scene_yaml, "pgs");
    let tree = object_tree(&sim, "o");
    while sim.state.time_s < 3.0 {
        sim.step();
    }
    let f = contact_force_on_tree(&sim, tree);
    assert!((f.z - 0.7 * G).abs() / (0.7 * G) < 0.005, "normal force {} N", f.z);
    assert!(object_velocity(&sim, "o").norm() < 1e-3);
}

#[test]
fn sphere_on_box_on_ground_shape_shape_contact() {
    let yaml = "materials: {default: {friction: 0.8}}\nobjects:\n  - {name: box, shape: {type: box, size: [0.4, 0.4, 0.2]}, mass_kg: 3.0, position: [0, 0, 0.1]}\n  - {name: ball, shape: {type: sphere, radius: 0.05}, mass_kg: 0.5, position: [0.05, 0.02, 0.25]}\n  - {name: can, shape: {type: cylinder, radius: 0.04, length: 0.1}, mass_kg: 0.3, position: [-0.1, -0.1, 0.25]}\n";
    for solver in solver_kinds_for(yaml) {
        let mut sim = sim(yaml, solver);
        while sim.state.time_s < 2.0 {
            sim.step();
        }
        let ball = contact_force_on_tree(&sim, object_tree(&sim, "ball"));
        let can = contact_force_on_tree(&sim, object_tree(&sim, "can"));
        let bx = contact_force_on_tree(&sim, object_tree(&sim, "box"));
        assert!((ball.z - 0.5 * G).abs() < 0.005 * 0.5 * G, "{solver}: ball carried {} N", ball.z);
        assert!((can.z - 0.3 * G).abs() < 0.005 * 0.3 * G, "{solver}: can carried {} N", can.z);
        // the ground pushes the box up by its weight plus the loads; the net is its own weight
        assert!((bx.z - 3.0 * G).abs() < 0.005 * 3.0 * G, "{solver}: net on box {} N", bx.z);
        assert!((object_position(&sim, "ball").z - 0.25).abs() < 1e-3);
        assert!((object_position(&sim, "can").z - 0.25).abs() < 1e-3);
    }
}

#[test]
fn self_collision_skips_adjacent_links_only() {
    let yaml = "robots:\n  - urdf: ../../urdf/quadruped.urdf\n    base: {mode: floating, position: [0, 0, 0.5]}\n    self_collision: true\n";
    let s = scene(yaml);
    let m = &s.model;
    let name = |g: usize| m.geoms[g].body.map(|b| m.bodies[b].name.clone()).unwrap_or_else(|| "ground".into());
    let pairs: Vec<(String, String)> = m.collision_pairs.iter().map(|p| (name(p.geom_a), name(p.geom_b))).collect();
    let has = |a: &str, b: &str| pairs.iter().any(|(x, y)| (x == a && y == b) || (x == b && y == a));
    assert!(has("LF_shank", "RF_shank"), "non-adjacent links of different legs collide");
    assert!(has("base", "LF_shank"), "the base and a shank (not adjacent) collide");
    assert!(!has("LF_thigh", "LF_shank"), "parent and child links are skipped");
    assert!(!has("LF_shank", "LF_foot"), "links welded by a fixed joint are one body");
    assert!(has("ground", "LF_foot"));
    let without = scene("robots:\n  - urdf: ../../urdf/quadruped.urdf\n    base: {mode: floating, position: [0, 0, 0.5]}\n");
    assert!(without.model.collision_pairs.iter().all(|p| p.with_ground), "self-collision is off by default");
}

#[test]
fn package_uris_resolve_from_package_paths_and_ancestor_directories() {
    let data = path("tests/data");
    let mut packages = HashMap::new();
    packages.insert("my_robot_description".to_string(), data.clone());
    let p = resolve_mesh_path("package://my_robot_description/meshes/wedge.obj", &data, &packages).unwrap();
    assert!(p.ends_with("meshes/wedge.obj") && p.exists());
    // a URDF inside a directory named after its package finds it without configuration
    let p = resolve_mesh_path("package://data/meshes/tetra.stl", &data, &HashMap::new()).unwrap();
    assert!(p.exists());
    let e = resolve_mesh_path("package://nowhere_pkg/m.stl", &data, &HashMap::new()).unwrap_err();
    assert!(e.contains("nowhere_pkg"), "{e}");
    let e = resolve_mesh_path("meshes/missing.stl", &data, &HashMap::new()).unwrap_err();
    assert!(e.contains("missing.stl") && e.contains("does not exist"), "{e}");
}

/// parry's box–box manifold can return one point twice (the default scene's finger on the box
/// while it pushes, t ≈ 1.6–4 s): the collision stage keeps one contact per point. Over the
/// pushing phase under PGS, no pair reports two contacts within `DUPLICATE_POINT_M`, and the
/// copies were there to drop (counted in the step report; if parry stops producing them this
/// count goes to zero and the second assertion says so).
#[test]
fn a_manifold_point_is_reported_once() {
    let scene = scene_file("config/default.yaml");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, Some(&contact_sim::contact::SolverConfig::from_kind("pgs").unwrap()));
    let mut dropped = 0;
    while sim.state.time_s < 3.6 {
        let rep = sim.step();
        dropped += rep.duplicate_points;
        let contacts = &sim.workspace.contacts;
        for (i, a) in contacts.iter().enumerate() {
            for b in &contacts[i + 1..] {
                let same_pair = a.key.pair == b.key.pair;
                assert!(!same_pair || (a.position - b.position).norm() > contact_sim::collision::DUPLICATE_POINT_M, "t = {} s: pair {} reports a point twice: {:?}", sim.state.time_s, a.key.pair, a.position);
            }
        }
    }
    assert!(dropped > 0, "no duplicate manifold point was dropped over 3.6 s of the default scene");
}

/// Two faces lying on each other (the arch's joints: identical voussoir faces) give their patch's
/// four corners: parry's clipping of the coincident faces adds points on the sides where nearly
/// parallel edges cross and its GJK point anywhere on the patch, and these are dropped
/// (`collision::keep_patch_corners`, counted in `side_points`); touching pairs take their last
/// normal, so no phantom manifold (a random normal, points 0.37 m deep, seen before) appears.
#[test]
fn coincident_faces_give_their_patch_corners_and_no_phantom_depth() {
    let scene = scene_file("config/examples/newton_arch.yaml");
    let mut sim = contact_sim::sim::Simulation::from_scene(&scene, None);
    let (mut samples, mut four, mut dropped) = (0usize, 0usize, 0usize);
    while sim.state.time_s < 3.0 {
        let rep = sim.step();
        dropped += rep.side_points;
        assert!(rep.max_penetration_m < 1e-5, "t = {} s: a contact {} m deep between resting voussoirs", sim.state.time_s, rep.max_penetration_m);
        let mut per_pair: HashMap<u32, usize> = HashMap::new();
        for c in sim.workspace.contacts.iter().filter(|c| c.body_a.is_some()) {
            *per_pair.entry(c.key.pair).or_default() += 1;
        }
        assert_eq!(per_pair.len(), 8, "t = {} s: the arch's eight joints between voussoirs", sim.state.time_s);
        for (pair, n) in per_pair {
            assert!((3..=5).contains(&n), "t = {} s: joint {pair} has {n} points", sim.state.time_s);
            samples += 1;
            four += usize::from(n == 4);
        }
    }
    println!("joints with four points: {four} of {samples}; side points dropped: {dropped}");
    assert!(four as f64 >= 0.99 * samples as f64, "only {four} of {samples} joint samples are four corners");
    assert!(dropped > 0, "no side point was dropped: the case under test is gone");
}
