//! Proof that `step` allocates nothing after warm-up: a counting global allocator that counts
//! only the allocations made on the measuring thread while measuring.
//!
//! Scenes: the quadruped standing (ground contacts), the 5-box stack (box-box manifolds from
//! parry), the default scene (quadruped crouching, arm pushing a box: contacts appear and
//! disappear, joint limits, mimic), a box pushed over on the ground (the scenes every method
//! covers), for every solver kind that can simulate the scene.

mod common;

use common::*;
use contact_sim::contact::SolverConfig;
use contact_sim::sim::Simulation;
#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{allocations_during, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn the_counter_sees_allocations() {
    // the instrument works: a Vec push is counted
    let n = allocations_during(|| {
        let v: Vec<u64> = (0..100).collect();
        std::hint::black_box(v);
    });
    assert!(n >= 1);
}

#[test]
fn step_does_not_allocate_after_warm_up() {
    for file in ["config/examples/quadruped_stand.yaml", "config/examples/box_stack.yaml", "config/default.yaml", "config/examples/ecp_box_tip.yaml", "config/examples/ecp_box_feet_standing.yaml", "config/examples/ecp_gripper_grasp.yaml", "config/examples/arm_drive_model.yaml"] {
        let scene = scene_file(file);
        for solver in solver_kinds_for_scene(&scene) {
            let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
            // warm-up: let every contact pair appear once
            for _ in 0..300 {
                sim.step();
            }
            let mut contacts = 0;
            let n = allocations_during(|| {
                for _ in 0..3000 {
                    contacts += sim.step().contacts;
                }
            });
            assert!(contacts > 0, "{file}: the measured steps had contacts");
            assert_eq!(n, 0, "{file} / {solver}: step allocated {n} times in 3000 steps");
            // the node's ~/reset path: back to the initial state, then stepping on
            let q0 = sim.model.q_init.clone();
            let n = allocations_during(|| {
                sim.reset();
                sim.step();
            });
            assert_eq!(n, 0, "{file} / {solver}: reset + step allocated {n} times");
            assert_eq!(sim.state.step_count, 1, "reset restarts the step count");
            assert!(sim.state.q.iter().zip(&q0).all(|(a, b)| (a - b).abs() < 0.01), "one step from the initial state");
        }
    }
}

/// The arch under Newton (`newton_arch.yaml`): convex-mesh blocks in face contact that overlap
/// by round-off (up to 0.04 mm). parry's polygonal-feature manifold would fall back to EPA on
/// every overlapping pair and build a new, allocating EPA each time (77 allocations per step
/// here, found with this test); the collision stage resolves the overlap with its own reusable
/// EPA first (`collision::separate_overlap`). Only Newton: the iterative solvers run this scene
/// at their sweep caps, several milliseconds per step (the scenes above cover them).
#[test]
fn overlapping_convex_mesh_pairs_do_not_allocate() {
    // EPA (overlapping convex pairs) grows its buffers when a query needs more polytope than any
    // before: the step's EPA has grown them when it is built, so one step of warm-up is enough
    // (an EPA grown on the arch's own first 200 steps allocated again thousands of steps later)
    let scene = scene_file("config/examples/newton_arch.yaml");
    for solver in ["newton", "pgs"] {
        let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind(solver).unwrap()));
        sim.step();
        let (mut contacts, mut deepest) = (0, 0.0f64);
        let n = allocations_during(|| {
            for _ in 0..3000 {
                let rep = sim.step();
                contacts += rep.contacts;
                deepest = deepest.max(rep.max_penetration_m);
            }
        });
        assert!(contacts > 0, "the measured steps had contacts");
        assert!(deepest > 0.0, "the measured steps had overlapping pairs (the case under test)");
        assert_eq!(n, 0, "newton_arch / {solver}: step allocated {n} times in 3000 steps");
    }
}

#[test]
fn bisection_experiments_do_not_allocate_across_episode_resets() {
    // the bisection experiments' scenes: periodic script (trot), feet-only collision (hang), episode resets
    // (drop every 3 s, random every 5 s) that `Simulation::step` performs in place
    for (file, steps) in [
        ("config/examples/bisection_trot.yaml", 1000),
        ("config/examples/bisection_hang.yaml", 1000),
        ("config/examples/bisection_drop.yaml", 3000),
        ("config/examples/bisection_random.yaml", 5000),
    ] {
        let scene = scene_file(file);
        let mut sim = Simulation::from_scene(&scene, None);
        for _ in 0..300 {
            sim.step();
        }
        let start = sim.state.step_count;
        let n = allocations_during(|| {
            for _ in 0..steps {
                sim.step();
            }
        });
        if let Some(period) = sim.reset_period_steps {
            assert!(start / period < sim.state.step_count / period, "{file}: the measured steps include a reset");
        }
        assert_eq!(n, 0, "{file}: Simulation::step allocated {n} times in {steps} steps");
    }
}

#[test]
fn deformable_scenes_do_not_allocate() {
    // the coupled V-FPI step: FEM assembly into the fixed CSR pattern, node collision, rigid
    // virtual nodes (gripper pads, finger on a box), two-way welds (the arm lifting the mat's
    // edge), serial path (threads: 1; the grasp scene runs on 2 threads, whose rayon pool
    // allocates internally: `install` from outside the pool pushes its job on rayon's injector
    // queue, a list of 63-slot blocks, so one block per 63 steps); the Stable Neo-Hookean
    // block's per-element 9×9 eigen-decompositions run on stack matrices
    for (file, warm, steps) in [("config/examples/fem_gripper_ball.yaml", 40, 40), ("config/examples/fem_finger_press.yaml", 80, 60), ("config/examples/fem_mat_fold.yaml", 45, 15), ("config/examples/fem_stable_neo_hookean.yaml", 40, 30)] {
        let scene = scene_file(file);
        let mut serial = scene.solver.clone();
        if let contact_sim::contact::SolverConfig::Vfpi(p) = &mut serial {
            p.threads = 1;
        }
        let mut sim = Simulation::from_scene(&scene, Some(&serial));
        for _ in 0..warm {
            sim.step();
        }
        let mut contacts = 0;
        let n = allocations_during(|| {
            for _ in 0..steps {
                contacts += sim.step().contacts;
            }
        });
        assert!(contacts > 0, "{file}: the measured steps had contacts");
        assert_eq!(n, 0, "{file}: step allocated {n} times in {steps} steps");
        let n = allocations_during(|| {
            sim.reset();
            sim.step();
        });
        assert_eq!(n, 0, "{file}: reset + step allocated {n} times");
    }
}

/// The tomato grasp under Newton's primal FEM form (`newton_tomato_scale.yaml`, threads: 1):
/// assembly, the sparse refactorisation and solves, the dense Delassus matrix and the NCP, through
/// the fingers' first contact (steps 100–160: 0.83–1.33 s).
#[test]
fn newton_primal_fem_grasp_does_not_allocate() {
    let scene = scene_file("config/examples/newton_tomato_scale.yaml");
    let mut sim = Simulation::from_scene(&scene, None);
    for _ in 0..100 {
        sim.step();
    }
    let mut contacts = 0;
    let n = allocations_during(|| {
        for _ in 0..60 {
            contacts = contacts.max(sim.step().contacts);
        }
    });
    assert!(contacts >= 10, "the measured steps had the grasp's contacts: {contacts}");
    assert_eq!(n, 0, "newton_tomato_scale: step allocated {n} times in 60 steps");
}

/// The gripper ball under Newton's primal FEM form (`fem_gripper_ball.yaml` with `solver: {kind:
/// newton}`, threads: 1; 1 331 nodes): the kept factor and the cached node columns of the
/// Delassus build, new contact nodes' columns, refactorisations when the chord test asks, while
/// the pads squeeze the ball (steps 60–80: 0.6–0.8 s); then a reset (fresh factor) and a step.
#[test]
fn newton_primal_fem_large_mesh_does_not_allocate() {
    let scene = scene_file("config/examples/fem_gripper_ball.yaml");
    let solver: SolverConfig = serde_yaml::from_str("{kind: newton, threads: 1}").unwrap();
    let mut sim = Simulation::from_scene(&scene, Some(&solver));
    for _ in 0..60 {
        sim.step();
    }
    let mut contacts = 0;
    let n = allocations_during(|| {
        for _ in 0..20 {
            contacts = contacts.max(sim.step().contacts);
        }
    });
    assert!(contacts >= 10, "the measured steps had the pads' contacts: {contacts}");
    assert_eq!(n, 0, "fem_gripper_ball under newton: step allocated {n} times in 20 steps");
    let n = allocations_during(|| {
        sim.reset();
        sim.step();
    });
    assert_eq!(n, 0, "fem_gripper_ball under newton: reset + step allocated {n} times");
}

#[test]
fn deformable_node_contacts_do_not_allocate() {
    // node–node contacts (contact.deformable_contact): a soft block dropped on a soft block,
    // measured while they touch (spatial hash, pairing sort, j-side FEM D-contacts)
    let lower = mesh_file("noalloc_blocks_lower.msh", &contact_sim::fem::TetMesh::box_grid([0.08, 0.08, 0.02], [4, 4, 2]));
    let upper = mesh_file("noalloc_blocks_upper.msh", &contact_sim::fem::TetMesh::box_grid([0.04, 0.04, 0.02], [2, 2, 2]));
    // the coupled V-FPI solve and the Newton scheme's FEM rows
    for solver in ["kind: vfpi, tolerance: 1.0e-6, max_iterations: 3000", "kind: newton", "kind: newton, fem_formulation: dual_rows"] {
        let yaml = format!(
            "timestep_s: 0.01\nsolver: {{{solver}}}\ncontact: {{deformable_contact: {{enabled: true}}}}\ndeformables:\n  - name: lower\n    mesh: {}\n    position: [-0.04, -0.04, 0]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.3}}\n  - name: upper\n    mesh: {}\n    position: [-0.02, -0.02, 0.03]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 2.0e5, poisson_ratio: 0.3}}\n",
            lower.display(),
            upper.display()
        );
        let mut sim = Simulation::from_scene(&scene(&yaml), None);
        for _ in 0..20 {
            sim.step();
        }
        let mut node_contacts = 0;
        let n = allocations_during(|| {
            for _ in 0..20 {
                sim.step();
                node_contacts += sim.workspace.fem.as_ref().unwrap().contacts.iter().filter(|c| c.other_node.is_some()).count();
            }
        });
        assert!(node_contacts > 0, "{solver}: the measured steps had node–node contacts");
        assert_eq!(n, 0, "{solver}: step with node–node contacts allocated {n} times");
    }
}

/// The default scene under Newton through the gripper's push on the sliding box (t = 3.3–3.7 s),
/// where the exact iteration stalls on a few steps and the proximal-point rescue runs (counted
/// by the scheme's `proximal_rounds`): the rescue allocates nothing either.
#[test]
fn newton_rescue_does_not_allocate() {
    let scene = scene_file("config/default.yaml");
    let mut sim = Simulation::from_scene(&scene, Some(&SolverConfig::from_kind("newton").unwrap()));
    while sim.state.time_s < 3.3 {
        sim.step();
    }
    let mut rescued = 0;
    let n = allocations_during(|| {
        for _ in 0..400 {
            sim.step();
            if let contact_sim::contact::Solver::Newton(scheme) = &sim.workspace.solver {
                rescued += usize::from(scheme.last_stats().proximal_rounds > 0);
            }
        }
    });
    assert!(rescued > 0, "no step of t = 3.3–3.7 s ran the proximal-point rescue: the case under test is gone");
    assert_eq!(n, 0, "default / newton: the steps of t = 3.3–3.7 s allocated {n} times");
}

/// An identification rollout (a replay into memory, `identify::problem::MemorySink`) allocates
/// per rollout (its sample buffers, the scene's simulation) but nothing per step: replaying 1 s
/// or 2 s of the same bag allocates the same number of times. The scene has a command delay.
#[test]
fn identification_rollouts_allocate_nothing_per_step() {
    use contact_sim::bag::replay::{ReplayConfig, ReplayPlan};
    use contact_sim::identify::problem::MemorySink;
    let scene = scene_file("config/examples/arm_drive_model.yaml");
    let dir = repo().join("target/no-alloc-identify");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let hw = dir.join("hw");
    contact_sim::identify::synthetic::record_hardware_bag(&scene, 2.0, 1000.0, &Default::default(), &hw).unwrap();
    let bag = contact_sim::bag::read_bag(&hw).unwrap();
    let count = |seconds: f64| {
        let cfg = ReplayConfig { duration_s: Some(seconds), ..Default::default() };
        let plan = ReplayPlan::prepare(&bag, &scene, &cfg).unwrap();
        let mut sim = plan.simulation(&scene);
        let mut sink = MemorySink::new(&plan);
        let outcome = std::cell::Cell::new(0);
        let n = allocations_during(|| outcome.set(plan.run(&mut sim, &mut sink).commands_applied));
        assert!(outcome.get() > 500, "the bag's commands are replayed");
        n
    };
    let (one, two) = (count(1.0), count(2.0));
    assert_eq!(one, two, "a rollout of 2 s allocated {two} times, one of 1 s {one}: something allocates per step");
}
