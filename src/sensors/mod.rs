//! Force/torque sensor emulation and contact wrenches.
//!
//! # What an F/T sensor measures
//! A sensor sits on a **fixed** URDF joint (e.g. the wrist mount). Its ideal reading is the wrench
//! that the **child side** (everything below the joint: tool, payload, what they touch) exerts on
//! the **parent side** (the robot), expressed in the sensor frame S at the sensor origin:
//! `F_S = [f_S; n_S]` (N, N·m; force first, as geometry_msgs/Wrench).
//! Sign: a payload of mass m hanging at rest below a sensor whose z axis points up reads
//! `f_S = (0, 0, −m g)`: the payload pulls the sensor down. An offset centre of mass at r (from the
//! sensor origin, in S) adds the moment `n_S = r × f_S`.
//!
//! The reading comes from the dynamics of the step (recursive Newton–Euler over the child subtree
//! with the step's accelerations `a = (v⁺ − v)/dt`, velocity-product terms at the step's midpoint
//! velocity, gravity, and the contact impulses on the subtree), so inertial and contact forces
//! (friction included) are in it, not only gravity:
//! `F_child→parent = Σ_subtree f_contact − Σ_subtree (I a + v ×* I v − I a_g)`.
//!
//! # Emulation
//! Per sample (at `rate_hz`, or every step): ideal → + bias + drift (random walk) → + Gaussian
//! noise → low-pass filter (first or second order, cutoff `cutoff_hz`) → saturation at ±`range`
//! (flagged) → quantization to `resolution` → transport delay of `delay_samples` samples. Random
//! numbers come from a ChaCha8 generator seeded per sensor: the same seed gives the same readings.
//! Everything off (the default) gives the ideal reading.

use crate::error::InputError;
use crate::math::{Pose, Vec3, Vec6};
use crate::model::{BodyId, JointKind, Model};

pub use crate::model::sensor::{Axes, ForceTorqueSensor, FtEmulation, FtSensorConfig};
pub use crate::state::FtSensorState;


/// Builds the model's sensors from the scene, validating them.
pub fn build_sensors(configs: &[FtSensorConfig], model: &Model, file: &str) -> Result<Vec<ForceTorqueSensor>, InputError> {
    let mut out: Vec<ForceTorqueSensor> = vec![];
    for (i, c) in configs.iter().enumerate() {
        let el = |k: &str| format!("sensors[{i}] ('{}'){k}", c.name);
        if out.iter().any(|s| s.name == c.name) {
            return Err(InputError::invalid(file, el(".name"), "another sensor has this name"));
        }
        let body = model.joint_body(&c.joint).ok_or_else(|| InputError::invalid(file, el(".joint"), format!("no joint '{}' in the scene", c.joint)))?;
        if model.bodies[body].joint.kind != JointKind::Fixed || model.bodies[body].parent.is_none() {
            return Err(InputError::invalid(
                file,
                el(".joint"),
                format!("joint '{}' is not a fixed joint between two links: an F/T sensor must sit on a fixed joint", c.joint),
            ));
        }
        let e = &c.emulation;
        let step_rate = 1.0 / model.timestep_s;
        let rate = e.rate_hz.unwrap_or(step_rate);
        if !(rate > 0.0 && rate <= step_rate * (1.0 + 1e-9)) {
            return Err(InputError::invalid(file, el(".emulation.rate_hz"), format!("must be in (0, {step_rate}] Hz (the simulation step rate), got {rate}")));
        }
        let steps_per_sample = (step_rate / rate).round();
        if ((step_rate / rate) - steps_per_sample).abs() > 1e-6 {
            return Err(InputError::invalid(file, el(".emulation.rate_hz"), format!("{rate} Hz does not divide the step rate {step_rate} Hz")));
        }
        for (key, axes, allow_inf) in [("bias_drift_std", e.bias_drift_std, false), ("noise_std", e.noise_std, false), ("resolution", e.resolution, false)] {
            if axes.values().iter().any(|&x| !(x >= 0.0) || (!allow_inf && !x.is_finite())) {
                return Err(InputError::invalid(file, el(&format!(".emulation.{key}")), format!("must be ≥ 0 and finite, got {:?}", axes.values())));
            }
        }
        if e.bias.values().iter().any(|x| !x.is_finite()) {
            return Err(InputError::invalid(file, el(".emulation.bias"), "must be finite"));
        }
        if e.range.values().iter().any(|&x| !(x > 0.0)) {
            return Err(InputError::invalid(file, el(".emulation.range"), format!("must be > 0, got {:?}", e.range.values())));
        }
        if let Some(fc) = e.cutoff_hz {
            if !(fc > 0.0 && fc < 0.5 * rate) {
                return Err(InputError::invalid(file, el(".emulation.cutoff_hz"), format!("must be in (0, {}) Hz (below the Nyquist frequency of the {rate} Hz sample rate), got {fc}", 0.5 * rate)));
            }
        }
        if !(e.filter_order == 1 || e.filter_order == 2) {
            return Err(InputError::invalid(file, el(".emulation.filter_order"), format!("must be 1 or 2, got {}", e.filter_order)));
        }
        out.push(ForceTorqueSensor {
            name: c.name.clone(),
            joint: c.joint.clone(),
            body,
            x_body_sensor: crate::math::pose_from_xyz_rpy(c.xyz, c.rpy),
            emulation: c.emulation.clone(),
            steps_per_sample: steps_per_sample as u64,
            frame_id: match &c.frame_id {
                Some(f) if f.trim().is_empty() => return Err(InputError::invalid(file, el(".frame_id"), "must not be empty")),
                Some(f) => f.clone(),
                None if c.xyz == [0.0; 3] && c.rpy == [0.0; 3] => model.bodies[body].name.clone(),
                None => c.name.clone(),
            },
        });
    }
    Ok(out)
}

/// Spatial force (about the world origin, world axes) of a force `f` (N) applied at world point
/// `p`: `[p × f; f]`.
#[inline]
pub fn force_at_point(f: &Vec3, p: &Vec3) -> Vec6 {
    crate::math::spatial(&p.cross(f), f)
}

/// Re-expresses a spatial force `[n_O; f]` (world, about the world origin) at the origin of the
/// frame `x_ws` in its axes, returned as `[f; n]` (force first, the ROS Wrench order).
pub fn wrench_in_frame(w: &Vec6, x_ws: &Pose) -> [f64; 6] {
    let (n_o, f) = (crate::math::ang(w), crate::math::lin(w));
    let p = x_ws.translation.vector;
    let n_p = n_o - p.cross(&f);
    let r_inv = x_ws.rotation.inverse();
    let (fs, ns) = (r_inv * f, r_inv * n_p);
    [fs.x, fs.y, fs.z, ns.x, ns.y, ns.z]
}

/// Net contact wrench on one body (link or object), from the last step.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BodyContactWrench {
    /// Body name.
    pub body: String,
    /// Force (N) and torque about the body origin (N·m), world axes: `[fx fy fz tx ty tz]`.
    pub world: [f64; 6],
    /// The same in the body frame.
    pub local: [f64; 6],
    /// The individual contact points on this body.
    pub points: Vec<ContactPointReport>,
}

/// One contact point as seen by a body.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ContactPointReport {
    /// Position (m, world).
    pub position: [f64; 3],
    /// Unit normal pushing on this body (world).
    pub normal: [f64; 3],
    /// Normal force (N, ≥ 0).
    pub normal_force: f64,
    /// Friction force (N, world; tangential).
    pub friction_force: [f64; 3],
}

/// The contact wrench on `body` from the last step (uses `ws.contacts` / `ws.impulse`).
pub fn body_contact_wrench(model: &Model, ws: &crate::workspace::Workspace, body: BodyId) -> BodyContactWrench {
    let x = &ws.body_pose[body];
    let mut total = Vec6::zeros();
    let mut points = vec![];
    for (i, c) in ws.contacts.iter().enumerate() {
        let sign = if c.body_b == Some(body) {
            1.0
        } else if c.body_a == Some(body) {
            -1.0
        } else {
            continue;
        };
        let l = ws.contact_impulse(i);
        let dt = model.timestep_s;
        let fn_ = c.normal * (l[0] / dt) * sign;
        let ft = (c.tangent1 * l[1] + c.tangent2 * l[2]) * (sign / dt);
        total += force_at_point(&(fn_ + ft), &c.position) + crate::math::spatial(&(ws.contact_torque_world(i) * sign), &Vec3::zeros());
        points.push(ContactPointReport {
            position: c.position.into(),
            normal: (c.normal * sign).into(),
            normal_force: l[0] / dt,
            friction_force: ft.into(),
        });
    }
    let at_origin = wrench_in_frame(&total, &Pose::from_parts(x.translation, nalgebra::UnitQuaternion::identity()));
    BodyContactWrench { body: model.bodies[body].name.clone(), world: at_origin, local: wrench_in_frame(&total, x), points }
}
