//! Scene files (YAML), URDF and mesh loading: the only place that reads files.
//!
//! [`load_scene`] reads a scene, its URDFs and meshes, validates everything and returns a
//! [`Scene`] whose [`Model`] is ready to simulate. Every error names the file and the element at
//! fault (see [`InputError`]). Unknown keys are rejected.

pub mod mesh;
pub(crate) mod scene;
mod simulation;
mod tetmesh;

pub use scene::*;
pub use tetmesh::{read_tet_mesh, tetgen_pair, write_gmsh22, write_gmsh41, write_tetgen};

use crate::contact::SolverConfig;
use parry3d_f64::shape::Shape;
use crate::error::InputError;
use crate::math::{pose_from_xyz_rpy, Vec3};
use crate::model::{BaseMode, ControlMode, GeomShape, Model, ModelBuilder, ObjectSpec, RobotSpec};
pub use crate::urdf::{InertiaCheck, LoadWarning, WarningClass};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A loaded scene: the model plus the run settings from the file.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Scene name.
    pub name: String,
    /// The file it came from.
    pub file: PathBuf,
    /// The model.
    pub model: Model,
    /// The configured solver.
    pub solver: SolverConfig,
    /// Scripted joint targets for headless runs.
    pub script: Vec<Keyframe>,
    /// Period (s) with which the script repeats, if any.
    pub script_period_s: Option<f64>,
    /// Period (s) of the episode resets of headless runs, if any.
    pub reset_period_s: Option<f64>,
    /// Default run duration (s).
    pub duration_s: f64,
    /// The scene's `on_failure` policy, if it gives one.
    pub on_failure: Option<crate::sim::FailurePolicy>,
    /// Problems that did not stop loading (ignored URDF elements, non-physical inertias kept or
    /// balanced, ...); the caller prints them.
    pub warnings: Vec<LoadWarning>,
}

/// Command-line overrides for loading robots (`--inertia-check`, `--package-path`).
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Inertia policy for every robot, overriding the scene's `inertia_check`.
    pub inertia_check: Option<InertiaCheck>,
    /// Package name → directory for `package://` URIs (over the scene's `package_paths`).
    pub package_paths: Vec<(String, PathBuf)>,
    /// Directories holding packages (`DIR/NAME`), searched before `ROS_PACKAGE_PATH`.
    pub package_roots: Vec<PathBuf>,
}

impl LoadOptions {
    /// Adds a `--package-path` argument: `NAME=DIR` (one package) or `DIR` (a directory of
    /// packages).
    pub fn add_package_path(&mut self, arg: &str) -> Result<(), String> {
        match arg.split_once('=') {
            Some((name, dir)) if !name.is_empty() && !dir.is_empty() && !name.contains('/') => {
                self.package_paths.push((name.to_string(), PathBuf::from(dir)));
                Ok(())
            }
            Some(_) => Err(format!("--package-path '{arg}': expected NAME=DIR or DIR")),
            None => {
                self.package_roots.push(PathBuf::from(arg));
                Ok(())
            }
        }
    }
}

/// Reads and validates a scene file.
pub fn load_scene(path: &Path) -> Result<Scene, InputError> {
    load_scene_with(path, &LoadOptions::default())
}

/// Reads and validates a scene file with command-line overrides.
pub fn load_scene_with(path: &Path, opts: &LoadOptions) -> Result<Scene, InputError> {
    let text = crate::validate::read_text_bounded(path, crate::validate::MAX_TEXT_FILE_BYTES).map_err(|reason| InputError::Io { file: path.display().to_string(), reason })?;
    load_scene_str_with(&text, path, opts)
}

/// Parses a scene from text; `path` names the file for messages and is the base of relative
/// paths.
pub fn load_scene_str(text: &str, path: &Path) -> Result<Scene, InputError> {
    load_scene_str_with(text, path, &LoadOptions::default())
}

/// [`load_scene_str`] with command-line overrides.
pub fn load_scene_str_with(text: &str, path: &Path, opts: &LoadOptions) -> Result<Scene, InputError> {
    let file = path.display().to_string();
    let cfg: SceneFile = serde_yaml::from_str(text).map_err(|e| InputError::Parse { file: file.clone(), reason: e.to_string() })?;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    build_scene(cfg, &file, &base_dir, path, opts)
}

fn build_scene(cfg: SceneFile, file: &str, base_dir: &Path, path: &Path, opts: &LoadOptions) -> Result<Scene, InputError> {
    check_scene_numbers(&cfg, file)?;
    let mut b = ModelBuilder::new(file);
    b.timestep_s = cfg.timestep_s;
    b.gravity = Vec3::from(cfg.gravity);
    b.midpoint_bias = cfg.midpoint_bias;
    b.contact = cfg.contact.clone();
    for (name, m) in &cfg.materials {
        scene::check_name(name).map_err(|r| InputError::invalid(file, format!("materials.{name:?}"), r))?;
        b.material(name, m.friction)?;
        b.material_compliance(name, m.compliance())?;
    }
    for p in &cfg.material_pairs {
        b.material_pair(&p.a, &p.b, p.friction)?;
    }
    b.friction_combine(cfg.friction_combine);
    if cfg.ground.enabled {
        let t = cfg.ground.incline_deg.to_radians();
        let axis = crate::validate::direction(cfg.ground.incline_axis, "incline_axis").map_err(|r| InputError::invalid(file, "ground", r))?;
        let n = nalgebra::UnitQuaternion::from_scaled_axis(axis * t) * Vec3::z();
        b.ground(n, &cfg.ground.material)?;
    }
    for (ri, r) in cfg.robots.iter().enumerate() {
        let element = format!("robots[{ri}]");
        let urdf_path = resolve_relative(base_dir, &r.urdf);
        let mut spec = load_robot_with(&urdf_path, r, &cfg.package_paths, base_dir, opts)?;
        spec.name = r.name.clone();
        let _ = &element;
        b.add_robot(spec)?;
    }
    for (oi, o) in cfg.objects.iter().enumerate() {
        let element = format!("objects[{oi}] ('{}')", o.name);
        let shape = object_shape(&o.shape, base_dir, file, &element)?;
        let volume = shape_volume(&shape);
        let mass = match (o.mass_kg, o.density_kg_m3) {
            (Some(m), None) => m,
            (None, Some(rho)) => rho * volume,
            (None, None) if o.fixed => 0.0,
            (None, None) => return Err(InputError::invalid(file, format!("{element}"), "give mass_kg or density_kg_m3")),
            (Some(_), Some(_)) => return Err(InputError::invalid(file, format!("{element}"), "give either mass_kg or density_kg_m3, not both")),
        };
        b.add_object(
            ObjectSpec {
                name: o.name.clone(),
                shape,
                mass,
                pose: pose_from_xyz_rpy(o.position, o.rpy),
                linear_velocity: Vec3::from(o.linear_velocity),
                angular_velocity: Vec3::from(o.angular_velocity),
                material: o.material.clone(),
                fixed: o.fixed,
            },
            &element,
        )?;
    }
    let mut warnings = std::mem::take(&mut b.warnings);
    let mut model = b.finalize()?;
    model.command_delay_s = cfg.command_delay_s;
    warnings.extend(deep_overlaps(&model, file));
    warnings.extend(mass_ratio_warning(&model, file));
    model.sensors = crate::sensors::build_sensors(&cfg.sensors, &model, file)?;
    for (i, name) in cfg.contact_wrench_links.iter().enumerate() {
        let body = model.body_id(name).ok_or_else(|| InputError::invalid(file, format!("contact_wrench_links[{i}]"), format!("no link or object named '{name}' in the scene")))?;
        if model.contact_wrench_bodies.contains(&body) {
            return Err(InputError::invalid(file, format!("contact_wrench_links[{i}]"), format!("'{name}' is listed twice")));
        }
        model.contact_wrench_bodies.push(body);
    }
    // script joints must exist and be commanded in a mode that reads the value
    for (ki, k) in cfg.script.iter().enumerate() {
        for (name, position) in k.positions.keys().map(|n| (n, true)).chain(k.efforts.keys().map(|n| (n, false))) {
            let Some(dof) = model.joint_dof(name) else {
                return Err(InputError::invalid(file, format!("script[{ki}].{name}"), "no such movable joint in the scene"));
            };
            let mode = model.default_control[dof];
            let read = match mode {
                ControlMode::Position { .. } => true,
                ControlMode::Velocity { .. } | ControlMode::Effort => !position,
                ControlMode::Passive => false,
            };
            if !read {
                let what = if position { "a position target" } else { "an effort" };
                return Err(InputError::invalid(file, format!("script[{ki}].{}.{name}", if position { "positions" } else { "efforts" }), format!("{what} for a joint in {mode:?} mode, which ignores it; give the joint a mode that uses it (control.joints)")));
            }
        }
        if ki > 0 && k.time_s < cfg.script[ki - 1].time_s {
            return Err(InputError::invalid(file, format!("script[{ki}].time_s"), "keyframes must be in time order"));
        }
        if ki > 0 && k.time_s == cfg.script[ki - 1].time_s {
            warnings.push(LoadWarning { class: WarningClass::Scene, file: file.into(), element: format!("script[{ki}].time_s"), message: format!("same time as script[{}] ({} s): the later keyframe's targets apply from then on, the earlier one's never", ki - 1, k.time_s) });
        }
    }
    // initial positions outside the joint's limits: accepted (the limit rows push back), said
    for (ri, r) in cfg.robots.iter().enumerate() {
        for (name, &q) in &r.initial_positions {
            let Some(body) = model.joint_body(name) else { continue };
            if let Some((lo, hi)) = model.bodies[body].joint.position_limits {
                if q < lo - 1e-9 || q > hi + 1e-9 {
                    warnings.push(LoadWarning { class: WarningClass::Scene, file: file.into(), element: format!("robots[{ri}].initial_positions.{name}"), message: format!("{q} is outside the joint's limits [{lo}, {hi}]: the limit pushes it back in the first steps") });
                }
            }
        }
    }
    for (key, value) in [("duration_s", cfg.duration_s), ("script_period_s", cfg.script_period_s), ("reset_period_s", cfg.reset_period_s)] {
        if let Some(d) = value {
            if !(d > 0.0 && d.is_finite()) {
                return Err(InputError::invalid(file, key, format!("must be positive, got {d}")));
            }
        }
    }
    if let (Some(period), Some(last)) = (cfg.script_period_s, cfg.script.last()) {
        if last.time_s > period {
            return Err(InputError::invalid(
                file,
                format!("script[{}].time_s", cfg.script.len() - 1),
                format!("keyframe at {} s is beyond script_period_s = {period} s", last.time_s),
            ));
        }
    }
    validate_solver(&cfg.solver, file)?;
    build_deformables(&cfg, &mut model, file, base_dir)?;
    model.check_sizes().map_err(|reason| InputError::invalid(file, "size", reason))?;
    model.fem_integrator = cfg.deformable_integrator;
    Ok(Scene {
        name: cfg.name.clone().unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()),
        file: path.to_path_buf(),
        model,
        solver: cfg.solver,
        script: cfg.script,
        script_period_s: cfg.script_period_s,
        reset_period_s: cfg.reset_period_s,
        duration_s: cfg.duration_s.unwrap_or(5.0),
        on_failure: cfg.on_failure,
        warnings,
    })
}

/// Checks every number of a scene file against its physical range ([`crate::validate`]):
/// time step, gravity, ground, contact distances, robot bases, initial positions and gains, object sizes,
/// masses, densities, poses and velocities, script keyframes, deformable poses and velocities.
/// The URDFs' numbers are checked when the robots are added
/// ([`crate::urdf::check_numbers`]), the solver's by [`validate_solver`].
fn check_scene_numbers(cfg: &SceneFile, file: &str) -> Result<(), InputError> {
    use crate::validate::*;
    let at = |element: String| move |reason: String| InputError::invalid(file, element, reason);
    finite_in(cfg.timestep_s, TIMESTEP_S, "timestep_s").map_err(at("timestep_s".into()))?;
    finite_in(cfg.command_delay_s, COMMAND_DELAY_S, "command_delay_s").map_err(at("command_delay_s".into()))?;
    finite3_in(cfg.gravity, GRAVITY_M_S2, "gravity").map_err(at("gravity".into()))?;
    finite_in(cfg.ground.incline_deg, INCLINE_DEG, "incline_deg").map_err(at("ground".into()))?;
    finite_in(cfg.contact.margin_m, CONTACT_DISTANCE_M, "margin_m").map_err(at("contact".into()))?;
    finite_in(cfg.contact.slop_m, CONTACT_DISTANCE_M, "slop_m").map_err(at("contact".into()))?;
    let motion = |el: String, xyz: [f64; 3], rpy: [f64; 3], lin: [f64; 3], ang: Option<[f64; 3]>| -> Result<(), InputError> {
        pose_in_range(xyz, rpy, ["position", "rpy"]).map_err(at(el.clone()))?;
        finite3_in(lin, LINEAR_VELOCITY_M_S, "linear_velocity").map_err(at(el.clone()))?;
        ang.map_or(Ok(()), |a| finite3_in(a, ANGULAR_VELOCITY_RAD_S, "angular_velocity").map(drop)).map_err(at(el))
    };
    for (ri, r) in cfg.robots.iter().enumerate() {
        let el = format!("robots[{ri}]");
        motion(format!("{el}.base"), r.base.position, r.base.rpy, r.base.linear_velocity, Some(r.base.angular_velocity))?;
        for (joint, &q) in &r.initial_positions {
            finite_in(q, JOINT_POSITION, joint).map_err(at(format!("{el}.initial_positions")))?;
        }
        for (joint, d) in &r.joints {
            let jel = format!("{el}.joints.{joint}");
            for (key, value, range) in [("friction", d.friction, GAIN), ("damping", d.damping, GAIN), ("armature", d.armature, ARMATURE), ("effort_limit", d.effort_limit, JOINT_LIMIT)] {
                if let Some(x) = value {
                    finite_in(x, range, key).map_err(at(jel.clone()))?;
                }
            }
            if d.effort_limit == Some(0.0) {
                return Err(InputError::invalid(file, jel, "effort_limit: must be > 0 N·m or N"));
            }
        }
        for (link, l) in &r.links {
            let lel = format!("{el}.links.{link}");
            if let Some(m) = l.mass_kg {
                finite_in(m, MASS_KG, "mass_kg").map_err(at(lel.clone()))?;
                if m <= 0.0 {
                    return Err(InputError::invalid(file, lel, format!("mass_kg: must be > 0 kg, got {m}")));
                }
            }
            if let Some(c) = l.com_m {
                finite3_in(c, POSITION_M, "com_m").map_err(at(lel.clone()))?;
            }
        }
        let modes = std::iter::once(("default".to_string(), &r.control.default)).chain(r.control.joints.iter().map(|(k, v)| (format!("joints.{k}"), v)));
        for (key, mode) in modes {
            let cel = format!("{el}.control.{key}");
            match *mode {
                ControlModeConfig::Position { kp, kd } => {
                    finite_in(kp, GAIN, "kp").map_err(at(cel.clone()))?;
                    finite_in(kd, GAIN, "kd").map_err(at(cel))?;
                }
                ControlModeConfig::Velocity { kd } => {
                    finite_in(kd, GAIN, "kd").map_err(at(cel))?;
                }
                ControlModeConfig::Passive | ControlModeConfig::Effort => {}
            }
        }
    }
    for (oi, o) in cfg.objects.iter().enumerate() {
        let el = format!("objects[{oi}] ('{}')", o.name);
        motion(el.clone(), o.position, o.rpy, o.linear_velocity, Some(o.angular_velocity))?;
        if let Some(m) = o.mass_kg {
            finite_in(m, MASS_KG, "mass_kg").map_err(at(el.clone()))?;
        }
        if let Some(d) = o.density_kg_m3 {
            finite_in(d, DENSITY_KG_M3, "density_kg_m3").map_err(at(el.clone()))?;
        }
        let sel = format!("{el}.shape");
        match &o.shape {
            ShapeConfig::Box { size } => finite3_in(*size, SIZE_M, "size").map(drop),
            ShapeConfig::Sphere { radius } => finite_in(*radius, SIZE_M, "radius").map(drop),
            ShapeConfig::Cylinder { radius, length } | ShapeConfig::Capsule { radius, length } => {
                finite_in(*radius, SIZE_M, "radius").and_then(|_| finite_in(*length, SIZE_M, "length")).map(drop)
            }
            ShapeConfig::Mesh { scale, .. } => finite3_in(*scale, DIRECTION, "scale").map(drop),
        }
        .map_err(at(sel))?;
    }
    for (ki, k) in cfg.script.iter().enumerate() {
        let el = format!("script[{ki}]");
        finite_in(k.time_s, SCRIPT_TIME_S, "time_s").map_err(at(el.clone()))?;
        for (joint, &q) in &k.positions {
            finite_in(q, JOINT_POSITION, &format!("positions.{joint}")).map_err(at(el.clone()))?;
        }
        for (joint, &f) in &k.efforts {
            finite_in(f, JOINT_EFFORT, &format!("efforts.{joint}")).map_err(at(el.clone()))?;
        }
    }
    for (di, d) in cfg.deformables.iter().enumerate() {
        let el = format!("deformables[{di}] ('{}')", d.name);
        motion(el.clone(), d.position, d.rpy, d.linear_velocity, None)?;
        finite_in(d.scale, SIZE_M, "scale").map_err(at(el))?;
    }
    Ok(())
}

/// One warning per pair of bodies that starts deeper in each other than the depth at which the
/// depenetration speed is capped ([`crate::model::ContactOptions::capped_depth_m`]): they are
/// pushed apart at `contact.max_depenetration_speed_m_s` over many steps, not in one.
fn deep_overlaps(model: &Model, file: &str) -> Vec<LoadWarning> {
    let mut ws = crate::workspace::Workspace::new(model, &SolverConfig::default());
    crate::kinematics::forward_kinematics(model, &model.q_init, &model.v_init, &mut ws);
    let mut pair_normals = vec![[0.0; 6]; model.collision_pairs.len()];
    crate::collision::detect(model, &ws.body_pose, &ws.body_velocity, &mut pair_normals, &mut ws.collision, &mut ws.contacts);
    let deep = model.contact.capped_depth_m(model.timestep_s);
    // deepest penetration per geometry pair, in contact order
    let mut pairs: Vec<((usize, usize), f64)> = vec![];
    for c in ws.contacts.iter().filter(|c| -c.distance > deep) {
        match pairs.iter_mut().find(|(k, _)| *k == (c.geom_a, c.geom_b)) {
            Some((_, d)) => *d = d.max(-c.distance),
            None => pairs.push(((c.geom_a, c.geom_b), -c.distance)),
        }
    }
    let speed = model.contact.max_depenetration_speed_m_s;
    pairs
        .into_iter()
        .map(|((a, b), depth)| {
            let name = |g: usize| format!("'{}'", model.geoms[g].name);
            LoadWarning {
                class: WarningClass::Overlap,
                file: file.to_string(),
                element: format!("{} and {}", name(a), name(b)),
                message: if speed > 0.0 {
                    format!(
                        "start {:.1} mm inside each other (the initial poses overlap): pushed apart at no more than contact.max_depenetration_speed_m_s = {speed} m/s, for about {:.2} s",
                        depth * 1e3,
                        depth / speed
                    )
                } else {
                    format!("start {:.1} mm inside each other (the initial poses overlap) and contact.max_depenetration_speed_m_s = 0: never pushed apart", depth * 1e3)
                },
            }
        })
        .collect()
}

/// One warning when two bodies that can touch (a collision pair, the ground and bodies fixed to
/// the world left out) differ in mass by more than [`crate::validate::MASS_RATIO_WARN`], naming
/// the pair with the largest ratio, both masses and how many pairs are above the threshold.
/// A body counts with the bodies welded to it (the same moving body).
fn mass_ratio_warning(model: &Model, file: &str) -> Option<LoadWarning> {
    let group_mass = |b: usize| {
        let m = model.bodies[b].moving_body;
        model.bodies.iter().filter(|x| x.moving_body == m).map(|x| x.mass).sum::<f64>()
    };
    let fixed_to_world = |b: usize| {
        let m = &model.bodies[model.bodies[b].moving_body];
        m.parent.is_none() && m.joint.kind == crate::model::JointKind::Fixed
    };
    let mut worst: Option<(f64, usize, usize)> = None;
    let mut above = 0usize;
    for p in model.collision_pairs.iter().filter(|p| !p.with_ground) {
        let (Some(a), Some(b)) = (model.geoms[p.geom_a].body, model.geoms[p.geom_b].body) else { continue };
        if fixed_to_world(a) || fixed_to_world(b) {
            continue;
        }
        let (ma, mb) = (group_mass(a), group_mass(b));
        if !(ma > 0.0 && mb > 0.0) {
            continue;
        }
        let ratio = ma.max(mb) / ma.min(mb);
        if ratio > crate::validate::MASS_RATIO_WARN {
            above += 1;
            if worst.is_none_or(|(r, _, _)| ratio > r) {
                worst = Some((ratio, a, b));
            }
        }
    }
    let (ratio, a, b) = worst?;
    let (a, b) = if group_mass(a) <= group_mass(b) { (a, b) } else { (b, a) };
    let show = crate::validate::show;
    Some(LoadWarning {
        class: WarningClass::MassRatio,
        file: file.to_string(),
        element: format!("'{}' and '{}'", model.bodies[a].name, model.bodies[b].name),
        message: format!(
            "mass ratio {:.1e} ({} kg against {} kg) between bodies that can touch, above {}: contact results are not to be trusted (light bodies thrown, slow or no solver convergence){}",
            ratio,
            show(group_mass(a)),
            show(group_mass(b)),
            show(crate::validate::MASS_RATIO_WARN),
            if above > 1 { format!("; {above} pairs of bodies are above the threshold") } else { String::new() }
        ),
    })
}

/// Checks solver parameters' ranges (each method validates its own, see
/// [`crate::contact::MethodParams::validate`]).
pub fn validate_solver(s: &SolverConfig, file: &str) -> Result<(), InputError> {
    s.validate().map_err(|e| InputError::invalid(file, e.field, e.requirement))
}

impl Scene {
    /// The method for a `--solver` option or the node's `solver` parameter: empty or `scene`:
    /// the scene's own; the scene's kind: the scene's parameters of it; another method: its
    /// defaults. Refused (naming the scene) when the method cannot simulate the scene, or with
    /// the list of methods when the name is unknown.
    pub fn solver_for(&self, value: &str) -> Result<SolverConfig, String> {
        let cfg = if value.is_empty() || value == "scene" {
            self.solver.clone()
        } else {
            let kind: crate::contact::SolverKind = value.parse()?;
            self.solver.overridden_by(kind)
        };
        cfg.check_model(&self.model, &self.file.display().to_string())?;
        Ok(cfg)
    }
}

fn resolve_relative(base: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn control_mode(c: &ControlModeConfig) -> ControlMode {
    match *c {
        ControlModeConfig::Passive => ControlMode::Passive,
        ControlModeConfig::Position { kp, kd } => ControlMode::Position { kp, kd },
        ControlModeConfig::Velocity { kd } => ControlMode::Velocity { kd },
        ControlModeConfig::Effort => ControlMode::Effort,
    }
}

/// Loads one URDF as a model on its own (fixed base at the origin, or floating), with its load
/// warnings: what `contact_sim model` inspects.
pub fn load_urdf_model(urdf_path: &Path, floating: bool, opts: &LoadOptions) -> Result<(Model, Vec<LoadWarning>), InputError> {
    // the scene's defaults for a robot entry
    let mut rc: RobotConfig = serde_yaml::from_str("urdf: ''").expect("a minimal robot entry parses");
    rc.urdf = urdf_path.display().to_string();
    rc.base.mode = if floating { BaseModeConfig::Floating } else { BaseModeConfig::Fixed };
    let spec = load_robot_with(urdf_path, &rc, &Default::default(), Path::new("."), opts)?;
    let mut b = ModelBuilder::new(urdf_path.display().to_string());
    b.add_robot(spec)?;
    let warnings = std::mem::take(&mut b.warnings);
    Ok((b.finalize()?, warnings))
}

/// Reads a URDF file and the meshes it references.
pub fn load_robot(urdf_path: &Path, r: &RobotConfig, scene_packages: &BTreeMap<String, String>, scene_dir: &Path) -> Result<RobotSpec, InputError> {
    load_robot_with(urdf_path, r, scene_packages, scene_dir, &LoadOptions::default())
}

/// [`load_robot`] with command-line overrides (inertia policy, package paths).
pub fn load_robot_with(urdf_path: &Path, r: &RobotConfig, scene_packages: &BTreeMap<String, String>, scene_dir: &Path, opts: &LoadOptions) -> Result<RobotSpec, InputError> {
    let file = urdf_path.display().to_string();
    let (mut urdf, mut warnings) = read_urdf_with_warnings(urdf_path)?;
    let joint_armature = apply_dynamics_overrides(&mut urdf, r, &file)?;
    let urdf_dir = urdf_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut packages: HashMap<String, PathBuf> = HashMap::new();
    for (k, v) in scene_packages.iter().chain(r.package_paths.iter()) {
        packages.insert(k.clone(), resolve_relative(scene_dir, v));
    }
    for (k, v) in &opts.package_paths {
        packages.insert(k.clone(), v.clone());
    }
    let mut mesh_hulls = HashMap::new();
    for link in &urdf.links {
        for (ci, c) in link.collision.iter().enumerate() {
            if let urdf_rs::Geometry::Mesh { filename, scale } = &c.geometry {
                let element = format!("link '{}' <collision> {ci} mesh '{filename}'", link.name);
                let mesh_path = resolve_mesh_path_in(filename, &urdf_dir, &packages, &opts.package_roots).map_err(|reason| InputError::invalid(&file, &element, reason))?;
                let s = scale.map(|s| Vec3::new(s[0], s[1], s[2])).unwrap_or(Vec3::new(1.0, 1.0, 1.0));
                let (pts, up) = mesh::read_mesh_vertices(&mesh_path).map_err(|reason| InputError::invalid(&file, &element, reason))?;
                if let Some(axis @ (mesh::UpAxis::X | mesh::UpAxis::Y)) = up {
                    warnings.push(LoadWarning {
                        class: WarningClass::Mesh,
                        file: file.clone(),
                        element: element.clone(),
                        message: format!("Collada file is {axis:?}_UP: rotated to the URDF's Z-up convention (check the collision geometry's orientation)"),
                    });
                }
                let pts: Vec<Vec3> = pts.iter().map(|p| p.component_mul(&s)).collect();
                let hull = crate::model::convex_hull_vertices(&pts)
                    .filter(|h| !crate::model::hull_is_flat(h))
                    .ok_or_else(|| InputError::invalid(&file, &element, "mesh is degenerate (flat or fewer than 4 distinct points)"))?;
                mesh_hulls.insert((link.name.clone(), ci), hull);
            }
        }
    }
    let inertia_check = opts.inertia_check.or(r.inertia_check).unwrap_or_default();
    let base_pose = pose_from_xyz_rpy(r.base.position, r.base.rpy);
    Ok(RobotSpec {
        urdf,
        source: file,
        name: r.name.clone(),
        base: match r.base.mode {
            BaseModeConfig::Fixed => BaseMode::Fixed(base_pose),
            BaseModeConfig::Floating => BaseMode::Floating(base_pose),
        },
        initial_positions: r.initial_positions.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        mesh_hulls,
        material: r.material.clone(),
        link_materials: r.link_materials.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        self_collision: r.self_collision,
        collision_links: r.collision_links.clone(),
        base_linear_velocity: Vec3::from(r.base.linear_velocity),
        base_angular_velocity: Vec3::from(r.base.angular_velocity),
        default_control: control_mode(&r.control.default),
        joint_control: r.control.joints.iter().map(|(k, v)| (k.clone(), control_mode(v))).collect(),
        inertia_check,
        joint_armature,
        warnings,
    })
}

/// Applies the scene's `joints` (friction, damping, effort limit) and `links` (mass, centre of
/// mass) overrides to the parsed URDF; returns the armature by joint name. An unknown or fixed
/// joint, or an unknown link or one without `<inertial>`, is refused naming it.
fn apply_dynamics_overrides(urdf: &mut urdf_rs::Robot, r: &RobotConfig, file: &str) -> Result<HashMap<String, f64>, InputError> {
    let mut armature = HashMap::new();
    for (name, d) in &r.joints {
        let movable = urdf.joints.iter().filter(|j| !matches!(j.joint_type, urdf_rs::JointType::Fixed)).map(|j| j.name.as_str()).collect::<Vec<_>>().join(", ");
        let Some(j) = urdf.joints.iter_mut().find(|j| &j.name == name && !matches!(j.joint_type, urdf_rs::JointType::Fixed)) else {
            return Err(InputError::invalid(file, format!("scene key joints.{name}"), format!("no movable joint '{name}' in this URDF (movable joints: {movable})")));
        };
        if d.friction.is_some() || d.damping.is_some() {
            let dy = j.dynamics.get_or_insert(urdf_rs::Dynamics { damping: 0.0, friction: 0.0 });
            if let Some(f) = d.friction {
                dy.friction = f;
            }
            if let Some(c) = d.damping {
                dy.damping = c;
            }
        }
        if let Some(e) = d.effort_limit {
            j.limit.effort = e;
        }
        if let Some(a) = d.armature {
            armature.insert(name.clone(), a);
        }
    }
    for (name, l) in &r.links {
        let names: Vec<&str> = urdf.links.iter().map(|l| l.name.as_str()).collect::<Vec<_>>();
        let names = names.join(", ");
        let Some(link) = urdf.links.iter_mut().find(|k| &k.name == name) else {
            return Err(InputError::invalid(file, format!("scene key links.{name}"), format!("no link '{name}' in this URDF (links: {names})")));
        };
        let inertial = &mut link.inertial;
        if let Some(m) = l.mass_kg {
            let old = inertial.mass.value;
            if old > 0.0 {
                let s = m / old;
                let i = &mut inertial.inertia;
                for x in [&mut i.ixx, &mut i.ixy, &mut i.ixz, &mut i.iyy, &mut i.iyz, &mut i.izz] {
                    *x *= s;
                }
            }
            inertial.mass.value = m;
        }
        if let Some(c) = l.com_m {
            inertial.origin.xyz = urdf_rs::Vec3(c);
        }
    }
    Ok(armature)
}

/// Reads and parses a URDF file, turning parser errors into messages that name the element.
/// Elements that do not affect the physics are dropped (see [`read_urdf_with_warnings`]).
pub fn read_urdf(path: &Path) -> Result<urdf_rs::Robot, InputError> {
    read_urdf_with_warnings(path).map(|(r, _)| r)
}

/// Reads and parses a URDF file leniently ([`crate::urdf::parse_urdf_str`]): `<gazebo>`,
/// `<transmission>`, `<ros2_control>`, unknown tags and textures without a filename are dropped
/// with one warning per kind.
pub fn read_urdf_with_warnings(path: &Path) -> Result<(urdf_rs::Robot, Vec<LoadWarning>), InputError> {
    let file = path.display().to_string();
    let text = crate::validate::read_text_bounded(path, crate::validate::MAX_TEXT_FILE_BYTES).map_err(|reason| InputError::Io { file: file.clone(), reason })?;
    crate::urdf::parse_urdf_str(&text, &file)
}

/// Resolves a URDF mesh reference: `package://pkg/rel` (scene `package_paths`, then
/// `ROS_PACKAGE_PATH`, `AMENT_PREFIX_PATH/share`, then an ancestor directory of the URDF named
/// `pkg`), `file://abs`, or a path relative to the URDF's directory.
pub fn resolve_mesh_path(filename: &str, urdf_dir: &Path, packages: &HashMap<String, PathBuf>) -> Result<PathBuf, String> {
    resolve_mesh_path_in(filename, urdf_dir, packages, &[])
}

/// [`resolve_mesh_path`] with extra directories holding packages (`root/pkg`), searched after
/// `packages` and before `ROS_PACKAGE_PATH`.
pub fn resolve_mesh_path_in(filename: &str, urdf_dir: &Path, packages: &HashMap<String, PathBuf>, package_roots: &[PathBuf]) -> Result<PathBuf, String> {
    let path = if let Some(rest) = filename.strip_prefix("package://") {
        // `package:///pkg/...` (an extra slash) is common in the wild and means the same
        let rest = rest.trim_start_matches('/');
        let (pkg, rel) = rest.split_once('/').ok_or_else(|| format!("malformed package URI '{filename}'"))?;
        let mut candidates: Vec<PathBuf> = vec![];
        if let Some(p) = packages.get(pkg) {
            candidates.push(p.clone());
        }
        candidates.extend(package_roots.iter().map(|r| r.join(pkg)));
        if let Ok(rpp) = std::env::var("ROS_PACKAGE_PATH") {
            candidates.extend(rpp.split(':').filter(|s| !s.is_empty()).map(|d| Path::new(d).join(pkg)));
        }
        if let Ok(app) = std::env::var("AMENT_PREFIX_PATH") {
            candidates.extend(app.split(':').filter(|s| !s.is_empty()).map(|d| Path::new(d).join("share").join(pkg)));
        }
        let mut dir = Some(urdf_dir);
        while let Some(d) = dir {
            if d.file_name().map(|n| n == pkg).unwrap_or(false) {
                candidates.push(d.to_path_buf());
            }
            dir = d.parent();
        }
        candidates
            .iter()
            .map(|c| c.join(rel))
            .find(|p| p.exists())
            .ok_or_else(|| format!("package '{pkg}' not found (give --package-path {pkg}=DIR, or add it to the scene's package_paths, ROS_PACKAGE_PATH or AMENT_PREFIX_PATH)"))?
    } else if let Some(abs) = filename.strip_prefix("file://") {
        PathBuf::from(abs)
    } else {
        resolve_relative(urdf_dir, filename)
    };
    if !path.exists() {
        return Err(format!("mesh file {} does not exist", path.display()));
    }
    Ok(path)
}

/// Reads the vertex positions of an STL (ASCII or binary), OBJ or Collada mesh (m, Z up; see
/// [`mesh::read_mesh_vertices`]).
pub fn read_mesh_points(path: &Path) -> Result<Vec<Vec3>, String> {
    mesh::read_mesh_vertices(path).map(|(p, _)| p)
}

fn object_shape(s: &ShapeConfig, base_dir: &Path, file: &str, element: &str) -> Result<GeomShape, InputError> {
    Ok(match s {
        ShapeConfig::Box { size } => GeomShape::Box { half_extents: Vec3::from(*size) * 0.5 },
        ShapeConfig::Sphere { radius } => GeomShape::Sphere { radius: *radius },
        ShapeConfig::Cylinder { radius, length } => GeomShape::Cylinder { radius: *radius, half_length: 0.5 * length },
        ShapeConfig::Capsule { radius, length } => GeomShape::Capsule { radius: *radius, half_length: 0.5 * length },
        ShapeConfig::Mesh { file: mesh, scale } => {
            let p = resolve_relative(base_dir, mesh);
            if !p.exists() {
                return Err(InputError::invalid(file, format!("{element}.shape.file"), format!("mesh file {} does not exist", p.display())));
            }
            let pts = read_mesh_points(&p).map_err(|r| InputError::invalid(file, format!("{element}.shape.file"), r))?;
            let s = Vec3::from(*scale);
            let pts: Vec<Vec3> = pts.iter().map(|p| p.component_mul(&s)).collect();
            let hull = crate::model::convex_hull_vertices(&pts)
                .filter(|h| !crate::model::hull_is_flat(h))
                .ok_or_else(|| InputError::invalid(file, format!("{element}.shape.file"), "mesh is degenerate (flat or fewer than 4 points)"))?;
            GeomShape::Convex { vertices: hull }
        }
    })
}

/// Volume of a shape (m³).
pub fn shape_volume(s: &GeomShape) -> f64 {
    use std::f64::consts::PI;
    match s {
        GeomShape::Sphere { radius } => 4.0 / 3.0 * PI * radius.powi(3),
        GeomShape::Box { half_extents } => 8.0 * half_extents.x * half_extents.y * half_extents.z,
        GeomShape::Cylinder { radius, half_length } => PI * radius * radius * 2.0 * half_length,
        GeomShape::Capsule { radius, half_length } => PI * radius * radius * 2.0 * half_length + 4.0 / 3.0 * PI * radius.powi(3),
        GeomShape::Convex { vertices } => {
            let pts: Vec<_> = vertices.iter().map(crate::math::to_parry_vec).collect();
            parry3d_f64::shape::ConvexPolyhedron::from_convex_hull(&pts).map(|h| h.mass_properties(1.0).mass()).unwrap_or(0.0)
        }
        GeomShape::Plane { .. } => 0.0,
    }
}

/// Loads the scene's deformable bodies into `model`: meshes (validated, errors name the mesh
/// file and element), materials, pose, attachments.
fn build_deformables(cfg: &SceneFile, model: &mut Model, file: &str, base_dir: &Path) -> Result<(), InputError> {
    use crate::fem::{Deformable, NodeAttachment};
    if cfg.deformables.is_empty() {
        return Ok(());
    }
    if !cfg.solver.capabilities().deformables {
        let able: Vec<&str> =
            crate::contact::SolverKind::ALL.iter().filter(|k| k.capabilities().deformables).map(|k| k.name()).collect();
        return Err(InputError::invalid(
            file,
            "solver.kind",
            format!("scenes with deformables need a method that simulates them (one of: {}), not '{}'", able.join(", "), cfg.solver.kind()),
        ));
    }
    // link poses at the initial configuration, for welded attachments
    let mut ws = crate::workspace::Workspace::new(model, &SolverConfig::default());
    crate::kinematics::forward_kinematics(model, &model.q_init, &model.v_init, &mut ws);
    let mut node_start = 0;
    for (di, d) in cfg.deformables.iter().enumerate() {
        let el = format!("deformables[{di}] ('{}')", d.name);
        if cfg.deformables[..di].iter().any(|o| o.name == d.name) || model.body_id(&d.name).is_some() {
            return Err(InputError::invalid(file, &el, format!("name '{}' is already used", d.name)));
        }
        d.material.check().map_err(|(key, reason)| InputError::invalid(file, format!("{el}.material.{key}"), reason))?;
        crate::validate::finite_in(d.friction, crate::validate::FRICTION, "μ").map_err(|r| InputError::invalid(file, format!("{el}.friction"), r))?;
        if !(d.scale > 0.0 && d.scale.is_finite()) {
            return Err(InputError::invalid(file, format!("{el}.scale"), format!("must be > 0, got {}", d.scale)));
        }
        let mesh_path = resolve_relative(base_dir, &d.mesh);
        let mut mesh = read_tet_mesh(&mesh_path)?;
        let pose = pose_from_xyz_rpy(d.position, d.rpy);
        for p in &mut mesh.nodes {
            *p = (pose * nalgebra::Point3::from(*p * d.scale)).coords;
        }
        let mut body = Deformable::new(&d.name, &mesh_path.display().to_string(), &mesh, d.material.clone(), d.friction);
        body.node_start = node_start;
        body.initial_velocity = Vec3::from(d.linear_velocity);
        for (ai, a) in d.attachments.iter().enumerate() {
            let ael = format!("{el}.attachments[{ai}]");
            let target = match &a.to {
                AttachTarget::World(_) => None,
                AttachTarget::Link(LinkRef { link }) => {
                    Some(model.body_id(link).ok_or_else(|| InputError::invalid(file, format!("{ael}.to"), format!("no link or object named '{link}'")))?)
                }
            };
            let mut selected = a.nodes.clone();
            if let Some(&bad) = selected.iter().find(|&&n| n >= body.num_nodes()) {
                return Err(InputError::invalid(file, format!("{ael}.nodes"), format!("node {bad} does not exist (the mesh has {} nodes)", body.num_nodes())));
            }
            match (a.box_min, a.box_max) {
                (Some(lo), Some(hi)) => {
                    for (key, v) in [("box_min", lo), ("box_max", hi)] {
                        crate::validate::finite3_in(v, crate::validate::POSITION_M, key).map_err(|r| InputError::invalid(file, format!("{ael}.{key}"), r))?;
                    }
                    for (i, p) in body.rest.iter().enumerate() {
                        if (0..3).all(|k| p[k] >= lo[k] && p[k] <= hi[k]) {
                            selected.push(i);
                        }
                    }
                }
                (None, None) => {}
                _ => return Err(InputError::invalid(file, &ael, "give both box_min and box_max")),
            }
            if selected.is_empty() {
                let reason = match (a.box_min, a.box_max) {
                    (Some(lo), Some(hi)) => {
                        let (mut mlo, mut mhi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
                        for p in &body.rest {
                            for k in 0..3 {
                                mlo[k] = mlo[k].min(p[k]);
                                mhi[k] = mhi[k].max(p[k]);
                            }
                        }
                        format!("selects no node: box_min {lo:?} – box_max {hi:?} m contains none of the mesh's nodes (world, at the initial pose, they span {mlo:?} – {mhi:?} m)")
                    }
                    _ => "selects no node (give `nodes` or `box_min` and `box_max`)".to_string(),
                };
                return Err(InputError::invalid(file, &ael, reason));
            }
            if !a.two_way && target.is_none() {
                return Err(InputError::invalid(file, format!("{ael}.two_way"), "applies to welds to a link only (`to: world` pins the nodes)"));
            }
            for i in selected {
                body.attachment[i] = match target {
                    None => NodeAttachment::World,
                    Some(b) => {
                        let point = ws.body_pose[b].inverse_transform_point(&nalgebra::Point3::from(body.rest[i])).coords;
                        if a.two_way {
                            NodeAttachment::Body(b, point)
                        } else {
                            NodeAttachment::BodyOneWay(b, point)
                        }
                    }
                };
            }
        }
        node_start += body.num_nodes();
        model.deformables.push(body);
    }
    Ok(())
}
