//! The immutable description of a scene: bodies, joints, geometry, materials, options.
//!
//! A [`Model`] is built once (from a scene file through [`crate::config`], or by hand with
//! [`ModelBuilder`]) and never changes while simulating. Everything that changes lives in
//! [`crate::state::State`] (the minimal snapshot) or [`crate::workspace::Workspace`] (derived
//! quantities and scratch).
//!
//! # Structure
//! The scene is a forest of kinematic trees. Every robot is one tree whose root is attached to the
//! world by a fixed or a free (floating-base) joint; every free rigid object is a one-body tree with
//! a free joint. Bodies are stored in topological order (parent index < child index) and each tree's
//! bodies, position coordinates and velocity coordinates are contiguous, so the mass matrix is
//! block diagonal with one block per tree.
//!
//! # Frames
//! A body's frame is its joint frame (the URDF convention: the child link frame coincides with the
//! joint frame). `X_PJ` is the joint frame in the parent body frame at zero displacement.
//!
//! # Generalized coordinates
//! - revolute / continuous / prismatic: one position (rad or m), one velocity (rad/s or m/s);
//! - free: position `[x, y, z, qx, qy, qz, qw]` (world, ROS quaternion order) and velocity
//!   `[v_x, v_y, v_z, ω_x, ω_y, ω_z]` of the body origin **in the body frame** (the Pinocchio
//!   convention); the summaries convert to world frame.

mod builder;
mod mass_bodies;
pub use crate::fem::DeformableContactOptions;
pub mod sensor;
pub mod tree;

pub use mass_bodies::MassBodies;
pub use builder::{check_inertia, convex_hull_vertices, hull_is_flat, solid_inertia, BaseMode, ModelBuilder, ObjectSpec, RobotSpec};

use crate::math::{Mat3, Pose, Vec3};
use parry3d_f64::shape::SharedShape;

/// Index of a body in [`Model::bodies`].
pub type BodyId = usize;

/// Kind of joint connecting a body to its parent (or to the world).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JointKind {
    /// Rigid connection, no coordinates.
    Fixed,
    /// Rotation about `axis` (rad).
    Revolute,
    /// Translation along `axis` (m).
    Prismatic,
    /// Six-DOF floating joint (7 positions, 6 velocities).
    Free,
}

impl JointKind {
    /// Number of position coordinates.
    pub fn nq(self) -> usize {
        match self {
            JointKind::Fixed => 0,
            JointKind::Revolute | JointKind::Prismatic => 1,
            JointKind::Free => 7,
        }
    }
    /// Number of velocity coordinates.
    pub fn nv(self) -> usize {
        match self {
            JointKind::Fixed => 0,
            JointKind::Revolute | JointKind::Prismatic => 1,
            JointKind::Free => 6,
        }
    }
}

/// A joint, as loaded from URDF (or generated for a floating base / free object).
#[derive(Clone, Debug)]
pub struct Joint {
    /// Joint name (unique in the scene).
    pub name: String,
    /// Joint kind.
    pub kind: JointKind,
    /// Unit axis in the joint (= child body) frame.
    pub axis: Vec3,
    /// Joint frame in the parent body frame (or in the world for roots), at zero displacement.
    pub x_parent_joint: Pose,
    /// First index of this joint's coordinates in `q`.
    pub q_index: usize,
    /// First index of this joint's coordinates in `v`.
    pub v_index: usize,
    /// Position limits `(lower, upper)` (rad or m), `None` for continuous / unlimited joints.
    pub position_limits: Option<(f64, f64)>,
    /// Velocity limit (rad/s or m/s); `f64::INFINITY` when not given.
    pub velocity_limit: f64,
    /// Effort limit (N·m or N); `f64::INFINITY` when not given.
    pub effort_limit: f64,
    /// Viscous damping (N·m·s/rad or N·s/m), integrated implicitly.
    pub damping: f64,
    /// Coulomb (dry) friction (N·m or N), enforced as a bounded constraint impulse.
    pub friction: f64,
    /// Armature: the reflected inertia of the drive (rotor inertia × gear ratio², kg·m² for a
    /// revolute joint, kg for a prismatic one), added to the joint's diagonal entry of M(q)
    /// (the scene's `robots[].joints.<name>.armature`; 0 by default).
    pub armature: f64,
}

/// A rigid body (URDF link).
#[derive(Clone, Debug)]
pub struct Body {
    /// Body name (URDF link name, or object name).
    pub name: String,
    /// Parent body, `None` when attached to the world.
    pub parent: Option<BodyId>,
    /// The joint connecting this body to its parent.
    pub joint: Joint,
    /// Mass (kg). Zero for massless frames (e.g. URDF links without `<inertial>`).
    pub mass: f64,
    /// Centre of mass in the body frame (m).
    pub com: Vec3,
    /// Rotational inertia about the centre of mass, in body axes (kg·m²).
    pub inertia_com: Mat3,
    /// Index of the tree this body belongs to.
    pub tree: usize,
    /// The nearest ancestor-or-self that moves with its own coordinates; bodies welded together
    /// through fixed joints share it. Used for collision filtering.
    pub moving_body: BodyId,
}

/// What a kinematic tree is.
#[derive(Clone, Debug, PartialEq)]
pub enum TreeKind {
    /// A robot from URDF; the index into [`Model::robots`].
    Robot(usize),
    /// A free (or static) rigid object; the index into [`Model::objects`].
    Object(usize),
}

/// A kinematic tree: contiguous ranges of bodies and coordinates.
#[derive(Clone, Debug)]
pub struct Tree {
    /// What the tree is.
    pub kind: TreeKind,
    /// Bodies `[body_start, body_end)`.
    pub body_start: usize,
    /// End of the body range.
    pub body_end: usize,
    /// Velocity coordinates `[v_start, v_end)`.
    pub v_start: usize,
    /// End of the velocity range.
    pub v_end: usize,
    /// Position coordinates `[q_start, q_end)`.
    pub q_start: usize,
    /// End of the position range.
    pub q_end: usize,
}

/// A robot loaded from URDF.
#[derive(Clone, Debug)]
pub struct RobotInfo {
    /// Robot name (URDF `<robot name>` or the scene's override).
    pub name: String,
    /// The URDF file it came from (for messages).
    pub source: String,
    /// Its tree.
    pub tree: usize,
    /// Bodies whose joint has one coordinate (the actuated joints), in URDF order.
    pub actuated_bodies: Vec<BodyId>,
    /// Whether the base floats.
    pub floating_base: bool,
}

/// A rigid object declared in the scene.
#[derive(Clone, Debug)]
pub struct ObjectInfo {
    /// Object name.
    pub name: String,
    /// Its body.
    pub body: BodyId,
    /// Its tree.
    pub tree: usize,
    /// `true` when fixed to the world (a static obstacle).
    pub fixed: bool,
}

/// Geometry of a collision shape, in the geometry frame G.
///
/// Cylinders and capsules have their axis along the geometry frame's z axis (URDF convention).
#[derive(Clone, Debug)]
pub enum GeomShape {
    /// Sphere of radius (m).
    Sphere {
        /// Radius (m).
        radius: f64,
    },
    /// Box with half extents (m).
    Box {
        /// Half extents along x, y, z (m).
        half_extents: Vec3,
    },
    /// Cylinder along z.
    Cylinder {
        /// Radius (m).
        radius: f64,
        /// Half of the length (m).
        half_length: f64,
    },
    /// Capsule along z (segment of length `2 half_length`, swept sphere of `radius`).
    Capsule {
        /// Radius (m).
        radius: f64,
        /// Half of the segment length (m).
        half_length: f64,
    },
    /// Convex hull of a mesh; `vertices` are the hull's vertices in G (m).
    Convex {
        /// Hull vertices (m).
        vertices: Vec<Vec3>,
    },
    /// The ground half-space `n·x ≤ offset` in world coordinates.
    Plane {
        /// Unit outward normal (world).
        normal: Vec3,
        /// Plane offset along the normal (m).
        offset: f64,
    },
}

/// A collision geometry attached to a body (or to the world for the ground).
#[derive(Clone)]
pub struct Geom {
    /// Name for messages: `"link/collision[0]"`, `"ground"`, an object name.
    pub name: String,
    /// Body it is attached to; `None` for the world.
    pub body: Option<BodyId>,
    /// Geometry frame in the body frame.
    pub x_body_geom: Pose,
    /// The shape, for the engine's own analytic half-space tests.
    pub shape: GeomShape,
    /// The shape for parry's narrow phase. Parry's cylinders and capsules lie along its y axis;
    /// their parry pose is `X_WG * parry_axis_fix()`.
    pub parry_shape: SharedShape,
    /// Material index into [`Model::materials`].
    pub material: usize,
    /// Radius of a sphere about the geometry origin that bounds the shape (m).
    pub bounding_radius: f64,
}

impl std::fmt::Debug for Geom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Geom").field("name", &self.name).field("body", &self.body).field("shape", &self.shape).finish()
    }
}

/// Rotation taking parry's y-axis shapes (cylinder, capsule) to the URDF z axis: +90° about x.
pub fn parry_axis_fix() -> Pose {
    Pose::rotation(Vec3::new(std::f64::consts::FRAC_PI_2, 0.0, 0.0))
}

/// A contact material.
#[derive(Clone, Debug)]
pub struct Material {
    /// Name used in the scene file.
    pub name: String,
    /// Coulomb friction coefficient μ (dimensionless).
    pub friction: f64,
    /// Contact stiffness and damping (read by compliant-contact methods; the
    /// rigid methods ignore it).
    pub compliance: ContactCompliance,
}

/// How stiff and how damped a material is in contact. Every field is optional: a material
/// without them is rigid, and a compliant method then uses its own (very stiff) default.
///
/// A pair of materials combines like two springs (and two dampers) in series. Spheres use Hertz
/// contact when both materials are elastic or one is rigid and the other elastic: effective
/// modulus `E* = 1 / ((1 − ν_a²)/E_a + (1 − ν_b²)/E_b)` (a rigid side adds no compliance) and force
/// `E* √r_eff d^{3/2}` at depth `d` (m), `r_eff` the sphere radius against a flat or convex
/// non-sphere and `r_a r_b / (r_a + r_b)` between two spheres. Other shapes use the linear
/// `stiffness_n_per_m`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactCompliance {
    /// Young's modulus E (Pa), for Hertz contact of spheres; `None`: rigid.
    pub youngs_modulus_pa: Option<f64>,
    /// Poisson's ratio ν (dimensionless, in [0, 0.5)).
    pub poisson_ratio: f64,
    /// Linear contact stiffness (N/m) for contacts that are not Hertz; `None`: rigid.
    pub stiffness_n_per_m: Option<f64>,
    /// Contact damping (N·s/m) along the normal; `None`: none.
    pub damping_n_s_per_m: Option<f64>,
}

impl ContactCompliance {
    /// Checks every field: finite, positive moduli, ν in [0, 0.5). The error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive = |v: Option<f64>| v.is_none_or(|x| x.is_finite() && x > 0.0);
        if !positive(self.youngs_modulus_pa) {
            return Err(("youngs_modulus_pa", format!("must be finite and > 0, got {:?}", self.youngs_modulus_pa)));
        }
        if !(self.poisson_ratio >= 0.0 && self.poisson_ratio < 0.5) {
            return Err(("poisson_ratio", format!("must be in [0, 0.5), got {}", self.poisson_ratio)));
        }
        if !positive(self.stiffness_n_per_m) {
            return Err(("contact_stiffness_n_per_m", format!("must be finite and > 0, got {:?}", self.stiffness_n_per_m)));
        }
        if !self.damping_n_s_per_m.is_none_or(|x| x.is_finite() && x >= 0.0) {
            return Err(("contact_damping_n_s_per_m", format!("must be finite and ≥ 0, got {:?}", self.damping_n_s_per_m)));
        }
        Ok(())
    }

    /// The compliance `(1 − ν²)/E` (1/Pa) of the Hertz law; 0 for a rigid material.
    pub fn hertz_compliance_per_pa(&self) -> f64 {
        self.youngs_modulus_pa.map_or(0.0, |e| (1.0 - self.poisson_ratio * self.poisson_ratio) / e)
    }
}

/// How two materials' friction coefficients combine when no pair entry exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FrictionCombine {
    /// μ = min(μa, μb)
    #[default]
    Min,
    /// μ = max(μa, μb)
    Max,
    /// μ = (μa + μb) / 2
    Average,
    /// μ = √(μa μb)
    Geometric,
}

/// A pair of geometries that may touch, found once when the model is built.
#[derive(Clone, Debug)]
pub struct CollisionPair {
    /// First geometry (for ground pairs: the ground).
    pub geom_a: usize,
    /// Second geometry.
    pub geom_b: usize,
    /// Coulomb friction coefficient of the pair.
    pub friction: f64,
    /// `true` when `geom_a` is the ground plane (handled analytically).
    pub with_ground: bool,
}

/// A `<mimic>` coupling: `q_follower = multiplier · q_leader + offset`, enforced as a bilateral
/// velocity constraint with position stabilization.
#[derive(Clone, Debug)]
pub struct MimicConstraint {
    /// Follower joint's body.
    pub follower: BodyId,
    /// Leader joint's body.
    pub leader: BodyId,
    /// Multiplier (dimensionless).
    pub multiplier: f64,
    /// Offset (rad or m).
    pub offset: f64,
}

/// Per-joint command mode and gains.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ControlMode {
    /// No actuation (passive joint).
    Passive,
    /// Joint PD: τ = kp (q_ref − q) + kd (v_ref − v) + τ_ff, integrated implicitly.
    Position {
        /// Stiffness (N·m/rad or N/m).
        kp: f64,
        /// Damping (N·m·s/rad or N·s/m).
        kd: f64,
    },
    /// Velocity servo: τ = kd (v_ref − v) + τ_ff, integrated implicitly.
    Velocity {
        /// Gain (N·m·s/rad or N·s/m).
        kd: f64,
    },
    /// Direct effort τ = τ_ff.
    Effort,
}

/// Contact detection and stabilization parameters shared by all solvers (the scene's `contact:`
/// section).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContactOptions {
    /// Maximum number of contact points per step; more are dropped and flagged.
    pub max_contacts: usize,
    /// Distance (m) below which separated shapes already generate (speculative) contacts.
    pub margin_m: f64,
    /// Penetration (m) tolerated without position correction.
    pub slop_m: f64,
    /// Fraction of the penetration beyond the slop corrected per step (Baumgarte, 0..1).
    pub erp: f64,
    /// Maximum number of contact points kept per geometry pair.
    pub max_points_per_pair: usize,
    /// Largest speed (m/s) at which the Baumgarte correction pushes penetrating shapes apart:
    /// `erp · (depth − slop) / dt` is capped at it, so that a body starting deep in another (1 m
    /// buried: 200 m/s at the defaults) is pushed out over several steps instead of launched.
    /// Ordinary penetrations (millimetres) stay far below it.
    pub max_depenetration_speed_m_s: f64,
    /// Node–node contact between deformable bodies and of a deformable with itself
    /// (`contact: {deformable_contact: {enabled: true}}`; see [`crate::fem::selfcontact`]).
    pub deformable_contact: DeformableContactOptions,
}

impl Default for ContactOptions {
    fn default() -> Self {
        Self {
            max_contacts: 256,
            margin_m: 0.002,
            slop_m: 0.0002,
            erp: 0.2,
            max_points_per_pair: 8,
            max_depenetration_speed_m_s: 1.0,
            deformable_contact: DeformableContactOptions::default(),
        }
    }
}

impl ContactOptions {
    /// The bias velocity (m/s) of a contact's normal row at signed distance `distance` (m,
    /// negative when penetrating) for a step of `dt` (s): a separated contact may close its gap
    /// in one step (`distance / dt`); a penetrating one is pushed apart by the Baumgarte term
    /// `−erp · (depth − slop) / dt`, at most [`ContactOptions::max_depenetration_speed_m_s`].
    pub fn normal_bias(&self, distance: f64, dt: f64) -> f64 {
        if distance >= 0.0 {
            distance / dt
        } else {
            -(self.erp * (-distance - self.slop_m).max(0.0) / dt).min(self.max_depenetration_speed_m_s)
        }
    }

    /// The penetration depth (m) beyond which [`ContactOptions::normal_bias`] is capped at
    /// `max_depenetration_speed_m_s` for a step of `dt` (s).
    pub fn capped_depth_m(&self, dt: f64) -> f64 {
        self.slop_m + self.max_depenetration_speed_m_s * dt / self.erp.max(f64::MIN_POSITIVE)
    }
}


/// The immutable scene description.
#[derive(Clone, Debug)]
pub struct Model {
    /// Bodies in topological order.
    pub bodies: Vec<Body>,
    /// Kinematic trees.
    pub trees: Vec<Tree>,
    /// Robots.
    pub robots: Vec<RobotInfo>,
    /// Free or static objects.
    pub objects: Vec<ObjectInfo>,
    /// Collision geometries.
    pub geoms: Vec<Geom>,
    /// Materials.
    pub materials: Vec<Material>,
    /// Candidate collision pairs.
    pub collision_pairs: Vec<CollisionPair>,
    /// Mimic couplings.
    pub mimics: Vec<MimicConstraint>,
    /// Number of position coordinates.
    pub nq: usize,
    /// Number of velocity coordinates.
    pub nv: usize,
    /// Name of each velocity coordinate (`joint`, or `object/vx` style for free joints).
    pub dof_names: Vec<String>,
    /// Body owning each velocity coordinate.
    pub dof_body: Vec<BodyId>,
    /// Gravity (m/s², world).
    pub gravity: Vec3,
    /// Time step (s).
    pub timestep_s: f64,
    /// Contact options.
    pub contact: ContactOptions,
    /// Default command mode per velocity coordinate.
    pub default_control: Vec<ControlMode>,
    /// Initial generalized positions.
    pub q_init: Vec<f64>,
    /// Initial generalized velocities.
    pub v_init: Vec<f64>,
    /// Ground geometry index, if any.
    pub ground_geom: Option<usize>,
    /// Evaluate the velocity-dependent bias at the midpoint velocity (predictor-corrector); see
    /// [`crate::step`].
    pub midpoint_bias: bool,
    /// Transport delay of the joint commands (s, ≥ 0): the step acts on the commands given
    /// this long before (the scene's `command_delay_s`; see [`crate::state::CommandDelayLine`]).
    pub command_delay_s: f64,
    /// Force/torque sensors (attached by [`crate::config`] after the model is built).
    pub sensors: Vec<sensor::ForceTorqueSensor>,
    /// Bodies whose net contact wrench is reported (the scene's `contact_wrench_links`).
    pub contact_wrench_bodies: Vec<BodyId>,
    /// Deformable (tetrahedral FEM) bodies, nodes numbered consecutively across bodies
    /// ([`crate::fem::Deformable::node_start`]).
    pub deformables: Vec<crate::fem::Deformable>,
    /// Time discretisation of the deformable bodies (the scene's `deformable_integrator`).
    pub fem_integrator: crate::fem::FemIntegrator,
}

/// Most scalar constraint rows one contact takes under any method (normal, two tangents,
/// torsion); the contact layer checks its layouts against it at compile time.
pub const MAX_ROWS_PER_CONTACT: usize = 4;

impl Model {
    /// Finds a body by name.
    pub fn body_id(&self, name: &str) -> Option<BodyId> {
        self.bodies.iter().position(|b| b.name == name)
    }
    /// Finds a body by the name of its joint.
    pub fn joint_body(&self, joint: &str) -> Option<BodyId> {
        self.bodies.iter().position(|b| b.joint.name == joint)
    }
    /// Velocity index of a one-DOF joint by name.
    pub fn joint_dof(&self, joint: &str) -> Option<usize> {
        self.joint_body(joint).filter(|&b| self.bodies[b].joint.kind.nv() == 1).map(|b| self.bodies[b].joint.v_index)
    }
    /// Names of all one-DOF joints in velocity order (what `/joint_states` publishes).
    pub fn actuated_joint_names(&self) -> Vec<String> {
        self.bodies.iter().filter(|b| b.joint.kind.nv() == 1).map(|b| b.joint.name.clone()).collect()
    }
    /// Total mass of a tree (kg).
    pub fn tree_mass(&self, tree: usize) -> f64 {
        let t = &self.trees[tree];
        self.bodies[t.body_start..t.body_end].iter().map(|b| b.mass).sum()
    }
    /// Maximum number of scalar constraint rows with `rows_per_contact` rows per contact (the
    /// contact method's layout) plus joint limits, joint friction and mimic rows.
    pub fn max_constraint_rows(&self, rows_per_contact: usize) -> usize {
        rows_per_contact * self.contact.max_contacts + self.max_joint_rows()
    }
    /// Maximum number of one-dimensional joint rows: for each one-DOF joint a lower-limit, an
    /// upper-limit and a friction slot, then one slot per mimic coupling.
    pub fn max_joint_rows(&self) -> usize {
        3 * self.one_dof_joint_count() + self.mimics.len()
    }
    /// Bytes of the step's dense buffers, estimated before they are allocated: the rigid
    /// Delassus matrix (rows², with rows the most rigid constraint rows a step can have under
    /// any method: [`MAX_ROWS_PER_CONTACT`] per contact plus the joint rows), the constraint
    /// Jacobian and its factor-solved copy (2·rows·nv), the dense mass matrix (nv²) and, with
    /// deformables, the coupled rigid–deformable Jacobian (3 rows per rigid contact and the joint rows,
    /// 3 per deformable surface and welded node, times nv). The deformable rows enter no dense
    /// square matrix: no contact method keeps them in one (they stay sparse or per node).
    /// [`crate::validate::MAX_STEP_MATRIX_BYTES`] bounds it at load.
    pub fn dense_step_bytes(&self) -> u128 {
        let rows = (MAX_ROWS_PER_CONTACT * self.contact.max_contacts + self.max_joint_rows()) as u128;
        let nv = self.nv as u128;
        let coupled_rows = if self.deformables.is_empty() {
            0
        } else {
            let surface: usize = self.deformables.iter().map(|d| d.surface_nodes.len()).sum();
            let welded = crate::fem::welded_node_count(&self.deformables);
            (self.max_constraint_rows(3) + 3 * surface + 3 * welded) as u128
        };
        8 * (rows * rows + 2 * rows * nv + coupled_rows * nv + nv * nv)
    }

    /// Checks the counts of bodies (`bodies`, with the world) and velocity coordinates (`nv`, of
    /// which `object_dof` belong to free objects) against [`crate::validate::MAX_BODIES`] and
    /// [`crate::validate::MAX_DOF`].
    pub fn check_counts(bodies: usize, nv: usize, object_dof: usize) -> Result<(), String> {
        use crate::validate::{MAX_BODIES, MAX_DOF};
        if bodies > MAX_BODIES {
            return Err(format!("{bodies} bodies (links and objects), more than the limit of {MAX_BODIES}"));
        }
        if nv > MAX_DOF {
            return Err(format!("{nv} velocity coordinates ({} of robots, {object_dof} of objects: 6 per free object), more than the limit of {MAX_DOF}", nv - object_dof));
        }
        Ok(())
    }

    /// Checks the model's sizes against the limits of [`crate::validate`] (bodies, velocity
    /// coordinates, chain length, collision pairs, dense step buffers) before any step buffer
    /// is allocated. The error is the reason, naming the limit and what to change.
    pub fn check_sizes(&self) -> Result<(), String> {
        use crate::validate::{MAX_CHAIN_DOF, MAX_COLLISION_PAIRS, MAX_STEP_MATRIX_BYTES};
        Self::check_counts(self.bodies.len(), self.nv, self.objects.iter().map(|o| self.bodies[o.body].joint.kind.nv()).sum())?;
        let mut chain = vec![0usize; self.bodies.len()];
        for (b, body) in self.bodies.iter().enumerate() {
            chain[b] = body.parent.map_or(0, |p| chain[p]) + body.joint.kind.nv();
            if chain[b] > MAX_CHAIN_DOF {
                return Err(format!(
                    "link '{}' ends a chain of {} joint coordinates from its root, more than the limit of {MAX_CHAIN_DOF} (the mass matrix's factorization costs the chain's length cubed every step)",
                    body.name, chain[b]
                ));
            }
        }
        if self.collision_pairs.len() > MAX_COLLISION_PAIRS {
            return Err(format!("{} candidate collision pairs, more than the limit of {MAX_COLLISION_PAIRS}: turn off self_collision, list collision_links or use fewer objects", self.collision_pairs.len()));
        }
        let bytes = self.dense_step_bytes();
        if bytes > MAX_STEP_MATRIX_BYTES as u128 {
            return Err(format!(
                "the step's dense buffers would take {:.3e} bytes, more than the limit of {MAX_STEP_MATRIX_BYTES} (2 GiB): lower contact.max_contacts ({}), or use fewer joints, objects or deformable surface nodes",
                bytes as f64, self.contact.max_contacts
            ));
        }
        Ok(())
    }

    /// Total number of deformable nodes.
    pub fn fem_nodes(&self) -> usize {
        self.deformables.iter().map(|d| d.num_nodes()).sum()
    }
    /// Number of one-DOF (revolute, continuous, prismatic) joints.
    pub fn one_dof_joint_count(&self) -> usize {
        self.bodies.iter().filter(|b| b.joint.kind.nv() == 1).count()
    }
}
