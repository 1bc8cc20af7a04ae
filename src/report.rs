//! Run summaries and model inspection, as plain data (serialised to JSON by the CLI).

use crate::kinematics;
use crate::model::{JointKind, Model, TreeKind};
use crate::step::StepReport;
use crate::workspace::Workspace;

/// Running statistics over steps.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunStats {
    /// Steps taken.
    pub steps: u64,
    /// Mean number of contacts per step.
    pub contacts_mean: f64,
    /// Largest number of contacts in a step.
    pub contacts_max: usize,
    /// Mean solver iterations per step.
    pub iterations_mean: f64,
    /// Largest iteration count.
    pub iterations_max: u32,
    /// Steps whose solver did not reach its tolerance.
    pub unconverged_steps: u64,
    /// Contacts dropped for capacity, summed over steps.
    pub dropped_contacts: u64,
    /// Steps with saturated joints.
    pub saturated_steps: u64,
    /// Steps skipped for a singular mass matrix or a non-finite state.
    pub failed_steps: u64,
    /// Deepest penetration seen (m).
    pub max_penetration_m: f64,
    /// The unconverged step with the largest solver residual, if any.
    pub worst_unconverged: Option<UnconvergedStep>,
}

/// A step whose contact solver stopped before its tolerance.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct UnconvergedStep {
    /// Step number, from 1.
    pub step: u64,
    /// The solver's residual at exit (in the method's own unit, [`crate::contact::SolverConfig::tolerance`]).
    pub residual: f64,
    /// Iterations performed.
    pub iterations: u32,
    /// Contacts in the step.
    pub contacts: usize,
}

/// Fraction of unconverged steps above which a run warns that its contact results are not to
/// be trusted (when the residual is large too, see [`UNCONVERGED_WARN_RESIDUAL`]): 1 %.
pub const UNCONVERGED_WARN_FRACTION: f64 = 0.01;

/// Worst residual, relative to the scene's scale ([`residual_scale`]), above which unconverged
/// steps make a run's contact results untrustworthy: 10⁻³.
pub const UNCONVERGED_WARN_RESIDUAL: f64 = 1e-3;

/// The scale a solver residual in `unit` is measured against: for an impulse (N·s) the scene's
/// weight over one step (total mass × |g| × dt, with |g| at least 1 m/s²), for a velocity (m/s)
/// |g| × dt; dimensionless residuals (relative, scaled) are their own scale (1).
pub fn residual_scale(model: &Model, unit: &str) -> f64 {
    let g = model.gravity.norm().max(1.0);
    let mass: f64 = model.bodies.iter().map(|b| b.mass).sum::<f64>().max(1e-9);
    match unit {
        "N·s" => mass * g * model.timestep_s,
        "m/s" => g * model.timestep_s,
        _ => 1.0,
    }
}

impl RunStats {
    /// The warning when more than [`UNCONVERGED_WARN_FRACTION`] of the steps ended unconverged
    /// and the worst residual is above [`UNCONVERGED_WARN_RESIDUAL`] × `scale` (see
    /// [`residual_scale`]; `unit` is the residual's), with the numbers: count, share, worst
    /// residual, its step, contacts and iterations. `None` otherwise.
    pub fn unconverged_warning(&self, scale: f64, unit: &str) -> Option<String> {
        let share = self.unconverged_steps as f64 / self.steps.max(1) as f64;
        let w = self.worst_unconverged?;
        let relative = w.residual / scale;
        (share > UNCONVERGED_WARN_FRACTION && !(relative <= UNCONVERGED_WARN_RESIDUAL)).then(|| {
            format!(
                "the contact solver stopped before its tolerance in {} of {} steps ({:.1} %) with a largest residual of {:.3e} {unit} ({:.1e} of the scale {:.3e} {unit}) at step {} ({} contacts, {} iterations): contact forces and motions are not to be trusted",
                self.unconverged_steps,
                self.steps,
                100.0 * share,
                w.residual,
                relative,
                scale,
                w.step,
                w.contacts,
                w.iterations
            )
        })
    }

    /// Accumulates one step's report.
    pub fn add(&mut self, r: &StepReport) {
        let n = self.steps as f64;
        self.contacts_mean = (self.contacts_mean * n + r.contacts as f64) / (n + 1.0);
        self.iterations_mean = (self.iterations_mean * n + r.solve.iterations as f64) / (n + 1.0);
        self.steps += 1;
        self.contacts_max = self.contacts_max.max(r.contacts);
        self.iterations_max = self.iterations_max.max(r.solve.iterations);
        if !r.solve.converged {
            self.unconverged_steps += 1;
            if self.worst_unconverged.is_none_or(|w| !(w.residual >= r.solve.residual)) {
                self.worst_unconverged = Some(UnconvergedStep { step: self.steps, residual: r.solve.residual, iterations: r.solve.iterations, contacts: r.contacts });
            }
        }
        self.dropped_contacts += r.dropped_contacts as u64;
        if r.saturated_joints > 0 {
            self.saturated_steps += 1;
        }
        if r.singular_mass_matrix || r.non_finite_state {
            self.failed_steps += 1;
        }
        self.max_penetration_m = self.max_penetration_m.max(r.max_penetration_m);
    }
}

/// Pose and velocity of a floating base or object, world frame.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BodyPoseReport {
    /// Robot or object name.
    pub name: String,
    /// Origin position (m).
    pub position_m: [f64; 3],
    /// Orientation quaternion `[x, y, z, w]`.
    pub orientation_xyzw: [f64; 4],
    /// Orientation as roll, pitch, yaw (rad).
    pub rpy_rad: [f64; 3],
    /// Linear velocity of the origin (m/s, world).
    pub linear_velocity_m_s: [f64; 3],
    /// Angular velocity (rad/s, world).
    pub angular_velocity_rad_s: [f64; 3],
}

/// Poses of every robot root and object after forward kinematics in `ws`.
pub fn body_poses(model: &Model, ws: &Workspace) -> Vec<BodyPoseReport> {
    model
        .trees
        .iter()
        .map(|t| {
            let b = t.body_start;
            let name = match t.kind {
                TreeKind::Robot(r) => model.robots[r].name.clone(),
                TreeKind::Object(o) => model.objects[o].name.clone(),
            };
            let x = &ws.body_pose[b];
            let p = x.translation.vector;
            let q = x.rotation.quaternion();
            let (r, pi, y) = x.rotation.euler_angles();
            let v = &ws.body_velocity[b];
            let lin = kinematics::point_velocity(ws, Some(b), &p);
            BodyPoseReport {
                name,
                position_m: [p.x, p.y, p.z],
                orientation_xyzw: [q.i, q.j, q.k, q.w],
                rpy_rad: [r, pi, y],
                linear_velocity_m_s: [lin.x, lin.y, lin.z],
                angular_velocity_rad_s: [v[0], v[1], v[2]],
            }
        })
        .collect()
}

/// One joint in a model summary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JointSummary {
    /// Joint name.
    pub name: String,
    /// Kind.
    pub kind: JointKind,
    /// Parent link (or `world`).
    pub parent: String,
    /// Child link.
    pub child: String,
    /// Axis in the joint frame.
    pub axis: [f64; 3],
    /// Position limits (rad or m).
    pub limits: Option<(f64, f64)>,
    /// Velocity limit (rad/s or m/s), `null` when unlimited.
    pub velocity_limit: Option<f64>,
    /// Effort limit (N·m or N), `null` when unlimited.
    pub effort_limit: Option<f64>,
    /// Viscous damping.
    pub damping: f64,
    /// Coulomb friction.
    pub friction: f64,
    /// Index in the velocity vector (one-DOF joints).
    pub v_index: Option<usize>,
    /// `follower = multiplier · leader + offset`, if this joint mimics another.
    pub mimics: Option<String>,
}

/// One link in a model summary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LinkSummary {
    /// Link name.
    pub name: String,
    /// Mass (kg).
    pub mass_kg: f64,
    /// Centre of mass in the link frame (m).
    pub com_m: [f64; 3],
    /// Principal moments of inertia about the centre of mass (kg·m²).
    pub principal_inertia_kg_m2: [f64; 3],
    /// Number of collision shapes.
    pub collision_shapes: usize,
}

/// The model summary printed by `contact_sim model`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModelSummary {
    /// Number of position coordinates.
    pub nq: usize,
    /// Number of velocity coordinates (DOF).
    pub nv: usize,
    /// Total mass (kg).
    pub total_mass_kg: f64,
    /// Links.
    pub links: Vec<LinkSummary>,
    /// Joints.
    pub joints: Vec<JointSummary>,
}

/// Summarises a model.
pub fn model_summary(model: &Model) -> ModelSummary {
    let fin = |x: f64| if x.is_finite() { Some(x) } else { None };
    let links = model
        .bodies
        .iter()
        .map(|b| {
            let e = nalgebra::SymmetricEigen::new(b.inertia_com).eigenvalues;
            let mut p = [e[0], e[1], e[2]];
            p.sort_by(f64::total_cmp);
            LinkSummary {
                name: b.name.clone(),
                mass_kg: b.mass,
                com_m: [b.com.x, b.com.y, b.com.z],
                principal_inertia_kg_m2: p,
                collision_shapes: model.geoms.iter().filter(|g| g.body == Some(model.body_id(&b.name).unwrap())).count(),
            }
        })
        .collect();
    let joints = model
        .bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let j = &b.joint;
            let mimic = model.mimics.iter().find(|m| m.follower == i).map(|m| {
                format!("{} = {} · {} + {}", j.name, m.multiplier, model.bodies[m.leader].joint.name, m.offset)
            });
            JointSummary {
                name: j.name.clone(),
                kind: j.kind,
                parent: b.parent.map(|p| model.bodies[p].name.clone()).unwrap_or_else(|| "world".into()),
                child: b.name.clone(),
                axis: [j.axis.x, j.axis.y, j.axis.z],
                limits: j.position_limits,
                velocity_limit: fin(j.velocity_limit),
                effort_limit: fin(j.effort_limit),
                damping: j.damping,
                friction: j.friction,
                v_index: if j.kind.nv() == 1 { Some(j.v_index) } else { None },
                mimics: mimic,
            }
        })
        .collect();
    ModelSummary { nq: model.nq, nv: model.nv, total_mass_kg: model.bodies.iter().map(|b| b.mass).sum(), links, joints }
}

/// The `p`-quantile (0 ≤ p ≤ 1) of an ascending-sorted sample: the element at the nearest rank
/// `round(p (n − 1))`. NaN for an empty sample.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

/// The `p`-quantile of an unsorted sample (sorts a copy; allocates). NaN when empty.
pub fn quantile(sample: &[f64], p: f64) -> f64 {
    let mut v = sample.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, p)
}

#[cfg(test)]
mod percentile_tests {
    use super::{percentile, quantile};

    #[test]
    fn nearest_rank_quantiles() {
        let x: Vec<f64> = (0..=100).map(f64::from).collect();
        assert_eq!(percentile(&x, 0.5), 50.0);
        assert_eq!(percentile(&x, 0.99), 99.0);
        assert_eq!(percentile(&x, 1.0), 100.0);
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.0), 1.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
