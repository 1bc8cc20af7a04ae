//! Typed scene-file schema. Every struct rejects unknown keys; units are in the key names.
//!
//! A minimal scene:
//! ```yaml
//! timestep_s: 0.001
//! objects:
//!   - name: box
//!     shape: {type: box, size: [0.2, 0.2, 0.2]}
//!     mass_kg: 1.0
//!     position: [0, 0, 0.1]
//! ```

use crate::contact::SolverConfig;
use crate::model::FrictionCombine;
pub use crate::sim::Keyframe;
use std::collections::BTreeMap;

fn default_timestep() -> f64 {
    0.001
}
fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}
fn default_true() -> bool {
    true
}
fn default_material() -> String {
    "default".into()
}
fn default_y_axis() -> [f64; 3] {
    [0.0, 1.0, 0.0]
}
fn default_scale() -> [f64; 3] {
    [1.0, 1.0, 1.0]
}

/// The scene file.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Scene name (defaults to the file stem; `""` is refused).
    #[serde(default, deserialize_with = "optional_name")]
    pub name: Option<String>,
    /// Time step (s).
    #[serde(default = "default_timestep")]
    pub timestep_s: f64,
    /// Gravity (m/s², world).
    #[serde(default = "default_gravity")]
    pub gravity: [f64; 3],
    /// Evaluate the Coriolis/centrifugal bias at the midpoint velocity of the step (one extra
    /// RNEA per step; removes the first-order energy drift of plain semi-implicit Euler).
    #[serde(default = "default_true")]
    pub midpoint_bias: bool,
    /// Default duration of `contact_sim run` (s).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Transport delay of the joint commands (s, in `[0, 1]`): every run, replay and the node
    /// act on the commands given this long before, linearly between steps (see
    /// [`crate::state::CommandDelayLine`]). Default 0.
    #[serde(default)]
    pub command_delay_s: f64,
    /// Ground plane.
    #[serde(default)]
    pub ground: GroundConfig,
    /// Materials by name (`default` always exists, μ = 0.8 unless redefined).
    #[serde(default)]
    pub materials: BTreeMap<String, MaterialConfig>,
    /// Friction for specific material pairs.
    #[serde(default)]
    pub material_pairs: Vec<MaterialPairConfig>,
    /// How two materials' μ combine when no pair is given.
    #[serde(default)]
    pub friction_combine: FrictionCombine,
    /// ROS package name → directory, for `package://` URIs in URDFs.
    #[serde(default)]
    pub package_paths: BTreeMap<String, String>,
    /// Robots.
    #[serde(default)]
    pub robots: Vec<RobotConfig>,
    /// Rigid objects.
    #[serde(default)]
    pub objects: Vec<ObjectConfig>,
    /// Deformable (tetrahedral FEM) bodies; scenes with any need a method that simulates
    /// deformables (its `Capabilities::deformables`; the loader names them).
    #[serde(default)]
    pub deformables: Vec<DeformableConfig>,
    /// Time discretisation of the deformables: `backward_euler` (default) or `midpoint` (the
    /// COND paper's eq. 9; see [`crate::fem::FemIntegrator`]).
    #[serde(default)]
    pub deformable_integrator: crate::fem::FemIntegrator,
    /// Contact solver.
    #[serde(default)]
    pub solver: SolverConfig,
    /// Contact detection and stabilization.
    #[serde(default)]
    pub contact: crate::model::ContactOptions,
    /// Scripted joint targets for headless runs.
    #[serde(default)]
    pub script: Vec<Keyframe>,
    /// Repeat the script with this period (s): keyframe times are read modulo it, so one cycle
    /// of keyframes in `[0, script_period_s]` drives a periodic motion such as a gait.
    #[serde(default)]
    pub script_period_s: Option<f64>,
    /// Every this many seconds of simulated time, headless runs put the robots and objects back
    /// in their initial state (positions, velocities, warm start); time and the script go on,
    /// so a script longer than the period gives each episode new targets (RL-style data
    /// collection).
    #[serde(default)]
    pub reset_period_s: Option<f64>,
    /// What a run does after a step fails (singular mass matrix, non-finite state): `stop`,
    /// `reset` or `hold` (see [`crate::sim::FailurePolicy`]). Default: `stop` for
    /// `contact_sim run` (whose `--on-failure` overrides it).
    #[serde(default)]
    pub on_failure: Option<crate::sim::FailurePolicy>,
    /// Force/torque sensors on fixed joints.
    #[serde(default)]
    pub sensors: Vec<crate::sensors::FtSensorConfig>,
    /// Links or objects whose net contact wrench is reported (ROS topics
    /// `contact_wrenches/<link>`, `contact_sim run --csv` default, bag recording).
    #[serde(default)]
    pub contact_wrench_links: Vec<String>,
}

/// The ground half-space.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundConfig {
    /// Whether there is a ground.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Incline (deg): the ground normal is +z rotated by this angle about `incline_axis`. With the
    /// default y axis and a positive angle the surface descends toward +x.
    #[serde(default)]
    pub incline_deg: f64,
    /// Axis of the incline rotation (world).
    #[serde(default = "default_y_axis")]
    pub incline_axis: [f64; 3],
    /// Material name.
    #[serde(default = "default_material")]
    pub material: String,
}

impl Default for GroundConfig {
    fn default() -> Self {
        GroundConfig { enabled: true, incline_deg: 0.0, incline_axis: default_y_axis(), material: default_material() }
    }
}

/// A material.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialConfig {
    /// Coulomb friction coefficient.
    pub friction: f64,
    /// Young's modulus (Pa) for Hertz contact of spheres (compliant-contact methods);
    /// absent: rigid.
    #[serde(default)]
    pub youngs_modulus_pa: Option<f64>,
    /// Poisson's ratio (dimensionless, [0, 0.5)), used with `youngs_modulus_pa`.
    #[serde(default = "default_poisson_ratio")]
    pub poisson_ratio: f64,
    /// Linear contact stiffness (N/m) for non-sphere contacts (compliant methods); absent: rigid.
    #[serde(default)]
    pub contact_stiffness_n_per_m: Option<f64>,
    /// Contact damping along the normal (N·s/m, compliant methods); absent: none.
    #[serde(default)]
    pub contact_damping_n_s_per_m: Option<f64>,
}

fn default_poisson_ratio() -> f64 {
    0.3
}

impl MaterialConfig {
    /// The contact compliance these fields describe.
    pub fn compliance(&self) -> crate::model::ContactCompliance {
        crate::model::ContactCompliance {
            youngs_modulus_pa: self.youngs_modulus_pa,
            poisson_ratio: self.poisson_ratio,
            stiffness_n_per_m: self.contact_stiffness_n_per_m,
            damping_n_s_per_m: self.contact_damping_n_s_per_m,
        }
    }
}

/// Friction of one material pair.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialPairConfig {
    /// First material.
    pub a: String,
    /// Second material.
    pub b: String,
    /// Coulomb friction coefficient.
    pub friction: f64,
}

/// How a robot's base is attached.
#[derive(Clone, Copy, Debug, serde::Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum BaseModeConfig {
    /// Welded to the world.
    #[default]
    Fixed,
    /// Free-floating (legged and mobile robots).
    Floating,
}

/// Base attachment and initial pose.
#[derive(Clone, Debug, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct BaseConfig {
    /// `fixed` or `floating`.
    #[serde(default)]
    pub mode: BaseModeConfig,
    /// Position of the root link (m, world).
    #[serde(default)]
    pub position: [f64; 3],
    /// Orientation, roll-pitch-yaw (rad).
    #[serde(default)]
    pub rpy: [f64; 3],
    /// Initial linear velocity of the root link's origin (m/s, world); floating bases only.
    #[serde(default)]
    pub linear_velocity: [f64; 3],
    /// Initial angular velocity of the root link (rad/s, world); floating bases only.
    #[serde(default)]
    pub angular_velocity: [f64; 3],
}

/// A joint's command mode in the scene file: `{mode: passive | effort}`,
/// `{mode: position, kp, kd}` or `{mode: velocity, kd}`. A key the mode does not have (a `kp`
/// on a passive joint) or does not know is refused: serde's internally tagged enums would
/// ignore it (read through [`ControlModeFields`]).
#[derive(Clone, Copy, Debug, serde::Deserialize, PartialEq)]
#[serde(try_from = "ControlModeFields")]
pub enum ControlModeConfig {
    /// Unactuated.
    Passive,
    /// PD to a position target: `kp` (N·m/rad or N/m), `kd` (N·m·s/rad or N·s/m).
    Position {
        /// Stiffness.
        kp: f64,
        /// Damping.
        kd: f64,
    },
    /// Velocity servo with gain `kd` (N·m·s/rad or N·s/m).
    Velocity {
        /// Gain.
        kd: f64,
    },
    /// Direct effort.
    Effort,
}

/// The keys of a command mode as written, before [`ControlModeConfig`] checks them.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlModeFields {
    mode: String,
    #[serde(default)]
    kp: Option<f64>,
    #[serde(default)]
    kd: Option<f64>,
}

impl TryFrom<ControlModeFields> for ControlModeConfig {
    type Error = String;
    fn try_from(f: ControlModeFields) -> Result<Self, String> {
        let needs = |what: &str, v: Option<f64>| v.ok_or_else(|| format!("mode {}: give {what}", f.mode));
        let refuse = |what: &str, v: Option<f64>| match v {
            Some(_) => Err(format!("mode {}: has no {what} (a {} joint has no such gain); remove it or use mode position", f.mode, f.mode)),
            None => Ok(()),
        };
        match f.mode.as_str() {
            "passive" | "effort" => {
                refuse("kp", f.kp)?;
                refuse("kd", f.kd)?;
                Ok(if f.mode == "passive" { ControlModeConfig::Passive } else { ControlModeConfig::Effort })
            }
            "position" => Ok(ControlModeConfig::Position { kp: needs("kp", f.kp)?, kd: needs("kd", f.kd)? }),
            "velocity" => {
                refuse("kp", f.kp)?;
                Ok(ControlModeConfig::Velocity { kd: needs("kd", f.kd)? })
            }
            other => Err(format!("unknown mode '{other}', expected one of passive, position, velocity, effort")),
        }
    }
}

impl Default for ControlModeConfig {
    fn default() -> Self {
        ControlModeConfig::Passive
    }
}

/// Command modes of a robot's joints.
#[derive(Clone, Debug, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    /// Mode of joints not listed in `joints`.
    #[serde(default)]
    pub default: ControlModeConfig,
    /// Per-joint modes.
    #[serde(default)]
    pub joints: BTreeMap<String, ControlModeConfig>,
}

/// A robot in the scene.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotConfig {
    /// URDF path (relative to the scene file).
    pub urdf: String,
    /// Name override (`""` is refused; null or absent: the URDF's robot name).
    #[serde(default, deserialize_with = "optional_name")]
    pub name: Option<String>,
    /// Base attachment.
    #[serde(default)]
    pub base: BaseConfig,
    /// Initial joint positions (rad or m).
    #[serde(default)]
    pub initial_positions: BTreeMap<String, f64>,
    /// Material of all collision geometry.
    #[serde(default = "default_material")]
    pub material: String,
    /// Per-link material.
    #[serde(default)]
    pub link_materials: BTreeMap<String, String>,
    /// Collide non-adjacent links with each other.
    #[serde(default)]
    pub self_collision: bool,
    /// Only these links' `<collision>` geometry is used (e.g. the feet of a legged robot); the
    /// other links pass through everything. Default: every link with collision geometry.
    #[serde(default)]
    pub collision_links: Option<Vec<String>>,
    /// Package name → directory for this robot's `package://` URIs.
    #[serde(default)]
    pub package_paths: BTreeMap<String, String>,
    /// Joint command modes and gains.
    #[serde(default)]
    pub control: ControlConfig,
    /// Per-joint dynamics overriding (or adding to) the URDF's: friction, damping, armature,
    /// effort limit. What `contact_sim identify` writes.
    #[serde(default)]
    pub joints: BTreeMap<String, JointDynamicsConfig>,
    /// Per-link mass and centre of mass overriding the URDF's `<inertial>`.
    #[serde(default)]
    pub links: BTreeMap<String, LinkInertialConfig>,
    /// What to do with link inertias that violate the triangle inequality: `strict` (refuse),
    /// `warn` (keep them, warn once per link; the default), `balance` (nearest valid inertia).
    /// The command line's `--inertia-check` overrides it.
    #[serde(default)]
    pub inertia_check: Option<crate::urdf::InertiaCheck>,
}

/// A joint's dynamics in the scene file; each key present overrides the URDF. Units are the
/// joint's: N·m and rad for a revolute joint, N and m for a prismatic one.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JointDynamicsConfig {
    /// Coulomb friction (N·m or N, ≥ 0; URDF `<dynamics friction>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friction: Option<f64>,
    /// Viscous damping (N·m·s/rad or N·s/m, ≥ 0; URDF `<dynamics damping>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damping: Option<f64>,
    /// Reflected drive inertia added to M(q)'s diagonal (kg·m² or kg, ≥ 0; not in URDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armature: Option<f64>,
    /// Effort limit (N·m or N, > 0; URDF `<limit effort>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort_limit: Option<f64>,
}

/// A link's mass properties in the scene file; each key present overrides the URDF's
/// `<inertial>`.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkInertialConfig {
    /// Mass (kg, > 0). The rotational inertia scales with it (same radii of gyration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mass_kg: Option<f64>,
    /// Centre of mass in the link frame (m); the rotational inertia about it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub com_m: Option<[f64; 3]>,
}

/// Shape of an object.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ShapeConfig {
    /// Box with full edge lengths (m).
    Box {
        /// Edge lengths.
        size: [f64; 3],
    },
    /// Sphere.
    Sphere {
        /// Radius (m).
        radius: f64,
    },
    /// Cylinder along the object's z axis.
    Cylinder {
        /// Radius (m).
        radius: f64,
        /// Length (m).
        length: f64,
    },
    /// Capsule along the object's z axis.
    Capsule {
        /// Radius (m).
        radius: f64,
        /// Length of the cylindrical part (m).
        length: f64,
    },
    /// Convex hull of an STL/OBJ mesh.
    Mesh {
        /// Path (relative to the scene file).
        file: String,
        /// Per-axis scale.
        #[serde(default = "default_scale")]
        scale: [f64; 3],
    },
}

/// A rigid object.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectConfig {
    /// Unique name (a non-empty string: YAML `null` and `""` are refused).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// Shape.
    pub shape: ShapeConfig,
    /// Mass (kg); or give `density_kg_m3`.
    #[serde(default)]
    pub mass_kg: Option<f64>,
    /// Density (kg/m³).
    #[serde(default)]
    pub density_kg_m3: Option<f64>,
    /// Initial position (m, world).
    #[serde(default)]
    pub position: [f64; 3],
    /// Initial orientation, roll-pitch-yaw (rad).
    #[serde(default)]
    pub rpy: [f64; 3],
    /// Initial linear velocity (m/s, world).
    #[serde(default)]
    pub linear_velocity: [f64; 3],
    /// Initial angular velocity (rad/s, world).
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    /// Material.
    #[serde(default = "default_material")]
    pub material: String,
    /// Static obstacle.
    #[serde(default)]
    pub fixed: bool,
}

fn default_one() -> f64 {
    1.0
}
fn default_fem_friction() -> f64 {
    0.5
}

/// A deformable body: a tetrahedral mesh with an FEM material.
///
/// ```yaml
/// deformables:
///   - name: ball
///     mesh: ../../assets/meshes/soft_ball.msh   # Gmsh 2.2/4.1 ASCII, or TetGen .node/.ele
///     position: [0, 0, 0.04]
///     material: {density_kg_m3: 1100, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35,
///                rayleigh_stiffness_s: 0.002}
///     friction: 0.6
///     attachments: [{box_min: [-1, -1, -1], box_max: [1, 1, 0.001], to: world}]
/// ```
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeformableConfig {
    /// Unique name (a non-empty string: YAML `null` and `""` are refused).
    #[serde(deserialize_with = "name")]
    pub name: String,
    /// Mesh file (relative to the scene): `.msh` (Gmsh ASCII 2.2 / 4.1), `.node` or `.ele`
    /// (TetGen).
    pub mesh: String,
    /// Uniform scale applied to the mesh coordinates before the pose.
    #[serde(default = "default_one")]
    pub scale: f64,
    /// Position of the mesh origin (m, world).
    #[serde(default)]
    pub position: [f64; 3],
    /// Orientation, roll-pitch-yaw (rad).
    #[serde(default)]
    pub rpy: [f64; 3],
    /// Initial velocity of every node (m/s, world).
    #[serde(default)]
    pub linear_velocity: [f64; 3],
    /// Material.
    pub material: crate::fem::FemMaterial,
    /// Coulomb friction coefficient of the surface against anything.
    #[serde(default = "default_fem_friction")]
    pub friction: f64,
    /// Attachments: nodes pinned to the world or welded to a link.
    #[serde(default)]
    pub attachments: Vec<AttachmentConfig>,
}

/// What attached nodes hold on to.
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(untagged)]
pub enum AttachTarget {
    /// `world`.
    World(WorldTag),
    /// `{link: name}`: a robot link or object; see [`AttachmentConfig::two_way`].
    Link(LinkRef),
}

/// `{link: name}` (no other key).
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkRef {
    /// Link or object name.
    pub link: String,
}

/// The literal `world`.
#[derive(Clone, Copy, Debug, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WorldTag {
    /// Fixed in the world.
    World,
}

/// A set of attached nodes: explicit (0-based) node indices and/or all nodes whose world
/// position at the initial pose lies in an axis-aligned box.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentConfig {
    /// 0-based node indices (file order).
    #[serde(default)]
    pub nodes: Vec<usize>,
    /// Lower corner of the selection box (m, world).
    #[serde(default)]
    pub box_min: Option<[f64; 3]>,
    /// Upper corner of the selection box (m, world).
    #[serde(default)]
    pub box_max: Option<[f64; 3]>,
    /// `world` or `{link: name}`.
    pub to: AttachTarget,
    /// Links only: `true` (default) welds the nodes two-way (a bilateral constraint per node
    /// against a virtual node on the link point: the link carries the deformable's weight and
    /// inertia, see [`crate::fem`]); `false` drives them one-way (their velocity is the link
    /// point's, the link feels nothing; cheaper for stiff servos).
    #[serde(default = "default_true")]
    pub two_way: bool,
}

/// Checks a name given in a scene file: not empty or blank, no control characters (names become
/// topic, frame and column names).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("a name must not be empty or blank, got {name:?}"));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("a name must not contain control characters, got {name:?}"));
    }
    Ok(())
}

/// Deserializes a required name: a string that passes [`check_name`] (YAML `null` is refused,
/// not read as the text "null").
pub fn name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::de::Error;
    match <Option<String> as serde::Deserialize>::deserialize(d)? {
        None => Err(D::Error::custom("a name is required here, got null")),
        Some(n) => check_name(&n).map(|()| n).map_err(D::Error::custom),
    }
}

/// Deserializes an optional name: null or a string that passes [`check_name`].
pub fn optional_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::Error;
    match <Option<String> as serde::Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(n) => check_name(&n).map(|()| Some(n)).map_err(D::Error::custom),
    }
}
