//! F/T sensors and contact wrenches: physics of the ideal reading, the emulation chain, and bad
//! sensor configuration.


use crate::common::*;
use contact_sim::config::load_scene_str;
use contact_sim::math::Vec3;
use contact_sim::sensors::{FtEmulation, FtSensorState};
use contact_sim::sim::Simulation;

const G: f64 = 9.81;

/// The arm holding a pose, with a wrist sensor (ideal) and optional emulation YAML.
fn arm_with_sensor(emulation: &str, extra: &str) -> Simulation {
    let yaml = format!(
        "ground: {{enabled: false}}\nrobots:\n  - urdf: ../../urdf/arm7.urdf\n    initial_positions: {{arm_joint2: 0.5, arm_joint4: 1.2, arm_joint6: 0.7}}\n    control:\n      default: {{mode: position, kp: 2000.0, kd: 50.0}}\n{extra}sensors:\n  - name: wrist\n    joint: wrist_ft_joint\n{emulation}"
    );
    let s = scene(&yaml);
    let mut sim = Simulation::from_scene(&s, None);
    sim.script = Default::default();
    sim
}

/// A sensor outside any model (for the emulation chain alone), sampled every step.
fn bare_sensor(e: &FtEmulation) -> contact_sim::sensors::ForceTorqueSensor {
    contact_sim::sensors::ForceTorqueSensor {
        name: "s".into(),
        joint: "j".into(),
        body: 0,
        x_body_sensor: contact_sim::math::Pose::identity(),
        emulation: e.clone(),
        steps_per_sample: 1,
        frame_id: "s".into(),
    }
}

/// Mass, centre of mass (world) of the subtree below `body`.
fn subtree_mass_com(sim: &Simulation, body: usize) -> (f64, Vec3) {
    let ws = &sim.workspace;
    let (mut m, mut mc) = (0.0, Vec3::zeros());
    for b in body..ws.subtree_end[body] {
        let bb = &sim.model.bodies[b];
        let c = ws.body_pose[b] * nalgebra::Point3::from(bb.com);
        m += bb.mass;
        mc += bb.mass * c.coords;
    }
    (m, mc / m)
}

#[test]
fn static_payload_reads_its_weight_and_moment_in_the_sensor_frame() {
    let mut sim = arm_with_sensor("", "");
    for _ in 0..3000 {
        sim.step();
    }
    let body = sim.model.sensors[0].body;
    let (m, c) = subtree_mass_com(&sim, body);
    assert!((m - 0.95).abs() < 1e-9, "hand + F/T link + fingers = 0.95 kg, got {m}");
    let x_ws = sim.workspace.body_pose[body] * sim.model.sensors[0].x_body_sensor;
    let r = x_ws.rotation;
    // expected: the payload pulls with its weight m g (world −z), moment (c − p) × m g
    let f_w = Vec3::new(0.0, 0.0, -m * G);
    let n_w = (c - x_ws.translation.vector).cross(&f_w);
    let (f_s, n_s) = (r.inverse() * f_w, r.inverse() * n_w);
    let reading = sim.state.sensors[0].ideal;
    for k in 0..3 {
        assert!((reading[k] - f_s[k]).abs() < 0.005 * m * G, "force axis {k}: {} vs {}", reading[k], f_s[k]);
        assert!((reading[3 + k] - n_s[k]).abs() < 0.005 * m * G * 0.1 + 1e-6, "moment axis {k}: {} vs {}", reading[3 + k], n_s[k]);
    }
    // the offset centre of mass gives a real moment here (not a trivial zero)
    assert!(n_s.norm() > 0.01, "moment {n_s:?}");
    // sign convention check in a z-down-pointing frame: the hand points down, so f_z ≈ +m g·cos
    let norm = (reading[0].powi(2) + reading[1].powi(2) + reading[2].powi(2)).sqrt();
    assert!((norm - m * G).abs() < 0.005 * m * G);
}

#[test]
fn accelerating_payload_matches_newton_euler() {
    // Swing the arm about joint 1 and joint 2 with effort commands: the ideal reading must equal
    // the Newton–Euler wrench of the payload subtree: f = Σ m (a_c − g), n = Σ I α + ω × I ω + r × f.
    let mut sim = arm_with_sensor("", "");
    for _ in 0..500 {
        sim.step();
    }
    let j1 = sim.model.joint_dof("arm_joint1").unwrap();
    let j2 = sim.model.joint_dof("arm_joint2").unwrap();
    sim.commands.mode[j1] = contact_sim::model::ControlMode::Effort;
    sim.commands.mode[j2] = contact_sim::model::ControlMode::Effort;
    sim.commands.effort[j1] = 60.0;
    sim.commands.effort[j2] = -40.0;
    let body = sim.model.sensors[0].body;
    let mut worst: f64 = 0.0;
    let mut largest: f64 = 0.0;
    for i in 0..300 {
        // state before the step: COM velocities of each subtree body
        let snapshot = |sim: &mut Simulation| {
            let (m, st, ws) = (&sim.model, &sim.state, &mut sim.workspace);
            contact_sim::kinematics::forward_kinematics(m, &st.q, &st.v, ws);
            (body..ws.subtree_end[body])
                .map(|b| {
                    let (c, vc, w) = contact_sim::kinematics::body_com_state(m, ws, b);
                    (c, vc, w, ws.body_pose[b].rotation)
                })
                .collect::<Vec<_>>()
        };
        let before = snapshot(&mut sim);
        sim.step();
        let reading = sim.state.sensors[0].ideal;
        let after = snapshot(&mut sim);
        if i < 20 {
            continue;
        }
        let dt = sim.model.timestep_s;
        // sensor pose at the start of the step (the reading is expressed there)
        let x_ws = {
            let (m, st) = (&sim.model, &sim.state);
            let mut q0 = st.q.clone();
            for k in 0..m.nv {
                q0[k] -= dt * st.v[k]; // fixed base: q and v have the same layout
            }
            let ws = &mut sim.workspace;
            contact_sim::kinematics::forward_kinematics(m, &q0, &st.v, ws);
            ws.body_pose[body] * m.sensors[0].x_body_sensor
        };
        let p = x_ws.translation.vector;
        let (mut f, mut n) = (Vec3::zeros(), Vec3::zeros());
        for (k, b) in (body..sim.workspace.subtree_end[body]).enumerate() {
            let bb = &sim.model.bodies[b];
            let (c0, v0, w0, r0) = before[k];
            let (_, v1, w1, _) = after[k];
            let a = (v1 - v0) / dt;
            let alpha = (w1 - w0) / dt;
            let w = 0.5 * (w0 + w1);
            let i_w = r0.to_rotation_matrix().into_inner() * bb.inertia_com * r0.to_rotation_matrix().into_inner().transpose();
            let fb = bb.mass * (a - sim.model.gravity);
            f += fb;
            n += i_w * alpha + w.cross(&(i_w * w)) + (c0 - p).cross(&fb);
        }
        // the child exerts the opposite of what it needs on the parent
        let r_inv = x_ws.rotation.inverse();
        let (fs, ns) = (r_inv * -f, r_inv * -n);
        let expect = [fs.x, fs.y, fs.z, ns.x, ns.y, ns.z];
        let scale = fs.norm();
        largest = largest.max((f + sim.model.gravity * 0.95).norm());
        for k in 0..3 {
            worst = worst.max((reading[k] - expect[k]).abs() / scale);
        }
        let nscale = ns.norm().max(0.05);
        for k in 3..6 {
            worst = worst.max((reading[k] - expect[k]).abs() / nscale);
        }
    }
    assert!(largest > 2.0, "the payload really accelerates (inertial force {largest} N)");
    assert!(worst < 0.01, "ideal reading differs from Newton–Euler by {:.3} %", 100.0 * worst);
}

#[test]
fn quadruped_foot_forces_sum_to_its_weight() {
    let s = scene_file("config/examples/quadruped_stand.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    for _ in 0..2000 {
        sim.step();
    }
    let mass = sim.model.tree_mass(0);
    let mut total = Vec3::zeros();
    for leg in ["LF", "RF", "LH", "RH"] {
        let b = sim.model.body_id(&format!("{leg}_foot")).unwrap();
        let w = contact_sim::sensors::body_contact_wrench(&sim.model, &sim.workspace, b);
        assert_eq!(w.points.len(), 1, "{leg}: one contact point");
        assert!(w.points[0].normal_force > 0.1 * mass * G, "{leg} carries its share");
        total += Vec3::new(w.world[0], w.world[1], w.world[2]);
    }
    assert!((total.z - mass * G).abs() / (mass * G) < 0.005, "feet carry {} N vs m g = {} N", total.z, mass * G);
}

#[test]
fn pushed_box_sliding_friction_equals_mu_n() {
    let s = scene_file("config/examples/arm_push_box.yaml");
    let mut sim = Simulation::from_scene(&s, None);
    let box_body = sim.model.body_id("box").unwrap();
    let mu = 0.35; // cardboard on default, the scene's material pair
    let mut sliding_steps = 0;
    while sim.state.time_s < 5.0 {
        sim.step();
        if object_velocity(&sim, "box").x > 0.02 {
            let (mut normal, mut friction) = (0.0, Vec3::zeros());
            for (i, c) in sim.workspace.contacts.iter().enumerate() {
                if c.body_b == Some(box_body) && c.body_a.is_none() {
                    let l = &sim.workspace.impulse[3 * i..3 * i + 3];
                    normal += l[0] / sim.model.timestep_s;
                    friction += (c.tangent1 * l[1] + c.tangent2 * l[2]) / sim.model.timestep_s;
                }
            }
            sliding_steps += 1;
            assert!((friction.norm() - mu * normal).abs() < 0.01 * mu * normal, "friction {} N vs μN = {} N", friction.norm(), mu * normal);
            assert!(friction.x < 0.0, "friction opposes the motion");
        }
    }
    assert!(sliding_steps > 500, "the box slid ({sliding_steps} steps)");
}

fn emulation(yaml: &str) -> FtEmulation {
    serde_yaml::from_str(yaml).unwrap()
}

fn run_chain(e: &FtEmulation, inputs: impl Fn(usize) -> [f64; 6], n: usize, period: f64) -> Vec<[f64; 6]> {
    let sensor = bare_sensor(e);
    let mut st = FtSensorState::new(&sensor);
    (0..n)
        .map(|i| {
            st.sample(e, &inputs(i), period);
            st.measured
        })
        .collect()
}

#[test]
fn noise_statistics_match_the_configuration() {
    let e = emulation("{bias: [1.0, -2.0, 0.5, 0.01, 0.0, -0.02], noise_std: [0.1, 0.2, 0.3, 0.01, 0.02, 0.03], seed: 42}");
    let out = run_chain(&e, |_| [0.0, 0.0, 10.0, 0.0, 0.0, 0.0], 10_000, 1e-3);
    let (bias, std) = (e.bias.values(), e.noise_std.values());
    for k in 0..6 {
        let mean = out.iter().map(|x| x[k]).sum::<f64>() / out.len() as f64;
        let var = out.iter().map(|x| (x[k] - mean).powi(2)).sum::<f64>() / (out.len() - 1) as f64;
        let expected_mean = bias[k] + if k == 2 { 10.0 } else { 0.0 };
        assert!((mean - expected_mean).abs() < 0.05 * std[k].max(bias[k].abs()), "axis {k}: mean {mean} vs {expected_mean}");
        assert!((var.sqrt() - std[k]).abs() < 0.05 * std[k], "axis {k}: std {} vs {}", var.sqrt(), std[k]);
    }
}

#[test]
fn filter_step_response_has_the_configured_time_constant() {
    let fc = 10.0;
    let tau = 1.0 / (2.0 * std::f64::consts::PI * fc);
    let dt = 1e-4;
    let e = emulation(&format!("{{cutoff_hz: {fc}}}"));
    let out = run_chain(&e, |i| if i == 0 { [0.0; 6] } else { [1.0; 6] }, 2000, dt);
    // first sample primes the filter at 0; the step starts at sample 1
    let k63 = out.iter().position(|x| x[0] >= 1.0 - (-1.0f64).exp()).unwrap();
    let t63 = (k63 as f64 - 1.0) * dt;
    assert!((t63 - tau).abs() < 0.02 * tau + dt, "63 % rise at {t63} s vs τ = {tau} s");
    // second order: two stages, slower (63 % at about 2.15 τ)
    let e2 = emulation(&format!("{{cutoff_hz: {fc}, filter_order: 2}}"));
    let out2 = run_chain(&e2, |i| if i == 0 { [0.0; 6] } else { [1.0; 6] }, 2000, dt);
    let k2 = out2.iter().position(|x| x[0] >= 1.0 - (-1.0f64).exp()).unwrap();
    assert!(((k2 as f64 - 1.0) * dt / tau - 2.146).abs() < 0.05, "second-order 63 % at {} τ", (k2 as f64 - 1.0) * dt / tau);
}

#[test]
fn saturation_clips_and_flags_quantization_rounds_delay_shifts() {
    let e = emulation("{range: [5.0, 5.0, 5.0, 1.0, 1.0, 1.0], resolution: 0.1}");
    let sensor = bare_sensor(&e);
    let mut st = FtSensorState::new(&sensor);
    st.sample(&e, &[7.0, -2.34, 0.0, 0.0, 0.0, -3.0], 1e-3);
    assert_eq!(st.measured[0], 5.0);
    assert!((st.measured[1] + 2.3).abs() < 1e-12, "quantized to 0.1: {}", st.measured[1]);
    assert_eq!(st.measured[5], -1.0);
    assert!(st.saturated);
    st.sample(&e, &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1e-3);
    assert!(!st.saturated);
    // delay: a ramp comes out 3 samples late
    let e = emulation("{delay_samples: 3}");
    let out = run_chain(&e, |i| [i as f64, 0.0, 0.0, 0.0, 0.0, 0.0], 20, 1e-3);
    for i in 3..20 {
        assert_eq!(out[i][0], (i - 3) as f64);
    }
}

#[test]
fn same_seed_same_readings_different_seed_different() {
    let a = run_chain(&emulation("{noise_std: 0.1, bias_drift_std: 0.01, seed: 5}"), |_| [0.0; 6], 100, 1e-3);
    let b = run_chain(&emulation("{noise_std: 0.1, bias_drift_std: 0.01, seed: 5}"), |_| [0.0; 6], 100, 1e-3);
    let c = run_chain(&emulation("{noise_std: 0.1, bias_drift_std: 0.01, seed: 6}"), |_| [0.0; 6], 100, 1e-3);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // and through a whole simulation
    let run = || {
        let mut sim = arm_with_sensor("    emulation: {noise_std: 0.05, seed: 9}\n", "");
        (0..200).map(|_| {
            sim.step();
            sim.state.sensors[0].measured
        }).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn sensor_rate_holds_readings_between_samples() {
    let mut sim = arm_with_sensor("    emulation: {rate_hz: 250.0, noise_std: 0.1, seed: 1}\n", "");
    let mut changes = 0;
    let mut last = [0.0; 6];
    for _ in 0..1000 {
        sim.step();
        if sim.state.sensors[0].measured != last {
            changes += 1;
            last = sim.state.sensors[0].measured;
        }
    }
    assert_eq!(changes, 250, "250 Hz over 1 s");
}

#[test]
fn published_frame_ids_default_to_the_child_link_or_the_sensor_name() {
    let base = "ground: {enabled: false}\nrobots:\n  - urdf: ../../urdf/arm7.urdf\nsensors:\n";
    let path = repo().join("config/examples/_sensor_test.yaml");
    let frame = |yaml: &str| load_scene_str(&format!("{base}{yaml}"), &path).unwrap().model.sensors[0].frame_id.clone();
    let child = frame("  - {name: s, joint: wrist_ft_joint}\n");
    assert_ne!(child, "s", "no offset: the child link's frame");
    assert_eq!(child, frame("  - {name: s, joint: wrist_ft_joint}\n")); // stable
    assert_eq!(frame("  - {name: s, joint: wrist_ft_joint, xyz: [0.0, 0.0, 0.01]}\n"), "s");
    assert_eq!(frame("  - {name: s, joint: wrist_ft_joint, frame_id: ft_sensor_link}\n"), "ft_sensor_link");
}

#[test]
fn bad_sensor_configuration_is_rejected_with_a_clear_message() {
    let base = "ground: {enabled: false}\nrobots:\n  - urdf: ../../urdf/arm7.urdf\nsensors:\n";
    let path = repo().join("config/examples/_sensor_test.yaml");
    let cases = [
        ("  - {name: s, joint: nope}\n", "no joint 'nope'"),
        ("  - {name: s, joint: arm_joint3}\n", "not a fixed joint"),
        ("  - {name: s, joint: wrist_ft_joint, emulation: {noise_std: -1.0}}\n", "noise_std"),
        ("  - {name: s, joint: wrist_ft_joint, emulation: {cutoff_hz: 600.0}}\n", "Nyquist"),
        ("  - {name: s, joint: wrist_ft_joint, emulation: {rate_hz: 300.0}}\n", "does not divide"),
        ("  - {name: s, joint: wrist_ft_joint, emulation: {nosie_std: 1.0}}\n", "unknown field `nosie_std`"),
        ("  - {name: s, joint: wrist_ft_joint, frame_id: ' '}\n", "frame_id"),
        ("  - {name: s, joint: wrist_ft_joint}\ncontact_wrench_links: [arm_link3, no_such_link]\n", "contact_wrench_links[1]"),
        ("  - {name: s, joint: wrist_ft_joint}\ncontact_wrench_links: [arm_link3, arm_link3]\n", "listed twice"),
    ];
    for (yaml, needle) in cases {
        let err = load_scene_str(&format!("{base}{yaml}"), &path).err().unwrap_or_else(|| panic!("{yaml} accepted")).to_string();
        assert!(err.contains(needle) && err.contains("_sensor_test.yaml"), "{yaml}: {err}");
    }
}
