//! Deformable contact: a ball resting on the ground, a gripper lifting it (stick / slip),
//! penetration, V-FPI against PGS, serial vs parallel.

mod common;

use common::*;
use contact_sim::math::Vec3;
use contact_sim::sim::Simulation;

const G: f64 = 9.81;

/// Net contact force on the deformable nodes (N, world) of the last step.
fn fem_contact_force(sim: &Simulation) -> Vec3 {
    let f = sim.workspace.fem.as_ref().unwrap();
    let dt = sim.model.timestep_s;
    f.contacts.iter().map(|c| c.frame.transpose() * Vec3::new(c.impulse[0], c.impulse[1], c.impulse[2]) / dt).sum()
}

#[test]
fn resting_ball_carries_its_weight() {
    let s = scene_file("config/examples/fem_ball_rest.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let m = sim.model.deformables[0].total_mass();
    let mut worst_pen: f64 = 0.0;
    let mut iters = 0;
    let steps = 200;
    for k in 0..steps {
        let r = sim.step();
        let _ = k;
        iters += r.solve.iterations;
        if k > 20 {
            worst_pen = worst_pen.max(r.max_penetration_m);
        }
        if k % 20 == 0 {
            let f = fem_contact_force(&sim);
            println!("t={:.2} contacts={} fz={:.4} (mg={:.4}) pen={:.2e} it={}", sim.state.time_s, r.contacts, f.z, m * G, r.max_penetration_m, r.solve.iterations);
        }
    }
    let f = fem_contact_force(&sim);
    println!("mean iterations {:.1}", iters as f64 / steps as f64);
    assert!((f.z - m * G).abs() < 0.01 * m * G, "normal force {} vs m g {}", f.z, m * G);
    assert!(f.x.hypot(f.y) < 0.01 * m * G, "friction on a resting ball: {f:?}");
    assert!(worst_pen < 5e-4, "penetration {worst_pen} m");
}

/// Mean node position (m) of the first deformable.
fn centroid(sim: &Simulation) -> Vec3 {
    let x = &sim.state.fem_x;
    let n = x.len() / 3;
    (0..n).map(|i| Vec3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2])).sum::<Vec3>() / n as f64
}

fn run_grasp(mu: f64) -> (Vec3, Vec3, f64) {
    let mut s = scene_file("config/examples/fem_gripper_ball.yaml");
    s.model.deformables[0].friction = mu;
    let mut sim = Simulation::from_scene(&s, None);
    let c0 = centroid(&sim);
    let mut worst_pen: f64 = 0.0;
    while sim.state.time_s < 1.5 - 1e-9 {
        let r = sim.step();
        if sim.state.time_s > 0.3 {
            worst_pen = worst_pen.max(r.max_penetration_m);
        }
    }
    (c0, centroid(&sim), worst_pen)
}

#[test]
fn gripper_lifts_the_ball_when_friction_suffices_and_it_slips_otherwise() {
    // squeeze 5 N per finger: holding needs μ ≥ m g / (2 · 5 N) = 0.29
    let (c0, c1, pen) = run_grasp(0.8);
    println!("μ = 0.8: centroid {c0:?} -> {c1:?}, penetration {pen:.2e} m");
    let lift = c1.z - c0.z;
    assert!(lift > 0.045 && lift < 0.055, "μ = 0.8: the ball rose {lift} m, the gripper 0.05 m");
    assert!(pen < 2e-3, "penetration {pen} m");
    let (c0, c1, _) = run_grasp(0.1);
    let lift = c1.z - c0.z;
    println!("μ = 0.1: centroid {c0:?} -> {c1:?}");
    assert!(lift < 0.01, "μ = 0.1: the ball should slip out, rose {lift} m");
}
