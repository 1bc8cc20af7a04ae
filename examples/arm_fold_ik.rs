//! Joint targets of `config/examples/fem_mat_fold.yaml`: gripper-down inverse kinematics of the
//! 7-DOF arm (`urdf/arm7.urdf`) for a list of TCP (fingertip centre) targets, checked against
//! the crate's forward kinematics.
//!
//! The arm stands on the floor at world (`BASE_X`, 0, 0) facing +x. With `q1 = q3 = q5 = q7 = 0`
//! the arm moves in the x–z plane; `q2 + q4 + q6 = π` keeps the gripper pointing straight down
//! (hand z axis = world −z), so the TCP sits `L3 = 0.235 m` below the wrist (joint 6). The
//! shoulder (joint 2) is at base height 0.32 m; upper arm `L1 = 0.40 m`, forearm `L2 = 0.36 m`;
//! elbow up (`q4 > 0`).
//!
//! Run: `cargo run --release --example arm_fold_ik` — prints one script keyframe per target
//! (joint targets, and the arm's static gravity torques `g(q)` as feed-forward efforts, N·m)
//! with the FK error (m) of each.

use contact_sim::config::load_scene_str;
use contact_sim::math::Vec3;

/// Arm base position along world x (m).
const BASE_X: f64 = -0.58;
const SHOULDER_Z: f64 = 0.32;
const L1: f64 = 0.40;
const L2: f64 = 0.36;
const L3: f64 = 0.235;

/// (q2, q4, q6) for a gripper-down TCP at world (x, 0, z) (m), or `None` out of reach.
fn ik(x: f64, z: f64) -> Option<[f64; 3]> {
    let (dx, dz) = (x - BASE_X, z + L3 - SHOULDER_Z);
    let c4 = (dx * dx + dz * dz - L1 * L1 - L2 * L2) / (2.0 * L1 * L2);
    if !(-1.0..=1.0).contains(&c4) {
        return None;
    }
    let q4 = c4.acos();
    let q2 = dx.atan2(dz) - (L2 * q4.sin()).atan2(L1 + L2 * q4.cos());
    let q6 = std::f64::consts::PI - q2 - q4;
    Some([q2, q4, q6])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let yaml = format!("ground: {{enabled: false}}\nrobots:\n  - urdf: ../../urdf/arm7.urdf\n    base: {{mode: fixed, position: [{BASE_X}, 0, 0]}}\n");
    let scene = load_scene_str(&yaml, &repo.join("config/examples/_ik.yaml"))?;
    let model = &scene.model;
    let mut ws = contact_sim::workspace::Workspace::new(model, &scene.solver);
    let hand = model.body_id("hand").ok_or("no hand link")?;
    // (time s, TCP world x, TCP world z): hold at the mat's x = −0.15 m edge, lift, carry over
    // the fold line x = 0 and lay the edge down over the far half
    let targets = [(0.0, -0.15, 0.017), (0.4, -0.15, 0.017), (1.0, -0.13, 0.12), (1.6, -0.05, 0.19), (2.2, 0.05, 0.14), (2.8, 0.11, 0.05), (3.2, 0.12, 0.032)];
    for (t, x, z) in targets {
        let [q2, q4, q6] = ik(x, z).ok_or(format!("({x}, {z}) out of reach"))?;
        let mut q = model.q_init.clone();
        for (name, v) in [("arm_joint2", q2), ("arm_joint4", q4), ("arm_joint6", q6)] {
            let b = model.bodies.iter().find(|b| b.joint.name == name).ok_or(name)?;
            q[b.joint.q_index] = v;
            if v.abs() > 2.0 {
                return Err(format!("{name} = {v} beyond its ±2.0 rad limit").into());
            }
        }
        contact_sim::kinematics::forward_kinematics(model, &q, &model.v_init, &mut ws);
        // static gravity torques g(q) of the arm alone (the feed-forward efforts)
        contact_sim::dynamics::update_body_inertias(model, &mut ws);
        contact_sim::dynamics::bias_forces(model, &mut ws, &model.v_init);
        let tau = |name: &str| model.joint_dof(name).map(|k| ws.bias[k]).unwrap_or(0.0);
        let pose = ws.body_pose[hand];
        let tcp = pose * nalgebra::Point3::new(0.0, 0.0, 0.11);
        let down = pose.rotation * Vec3::z();
        let err = (tcp.coords - Vec3::new(x, 0.0, z)).norm();
        println!(
            "  # TCP ({x}, 0, {z}): FK error {err:.1e} m, hand z·(−z) {:.6}\n  - {{time_s: {t}, positions: {{arm_joint2: {q2:.6}, arm_joint4: {q4:.6}, arm_joint6: {q6:.6}}}, efforts: {{arm_joint2: {:.4}, arm_joint4: {:.4}, arm_joint6: {:.4}}}}}",
            -down.z,
            tau("arm_joint2"),
            tau("arm_joint4"),
            tau("arm_joint6")
        );
        if err > 1e-9 || (down.z + 1.0).abs() > 1e-9 {
            return Err("IK/FK mismatch".into());
        }
    }
    Ok(())
}
