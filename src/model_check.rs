//! `contact_sim model --check`: a sanity report of a URDF or of every robot of a scene.
//!
//! Loads each robot with the same loader the simulator uses (so it agrees with it on what is
//! accepted), then reports the load warnings per class, the triangle inequality of every link
//! inertia, how each link's inertial compares with its collision shape filled with a uniform
//! solid, and the mass and posture of the robot at q = 0.

use crate::config::{self, LoadOptions, LoadWarning, WarningClass};
use crate::error::InputError;
use crate::math::Vec3;
use std::collections::BTreeMap;
use std::path::Path;

/// Parses a comma-separated list of numbers; the empty string (or only blanks) is the empty
/// list.
pub fn parse_floats(s: &str) -> Result<Vec<f64>, String> {
    if s.trim().is_empty() {
        return Ok(vec![]);
    }
    s.split(',').map(|x| x.trim().parse::<f64>().map_err(|e| format!("'{}': {e}", x.trim()))).collect()
}

/// Counts warnings per class (every class listed, zeros included).
pub fn count_by_class(warnings: &[LoadWarning]) -> BTreeMap<WarningClass, usize> {
    let mut m = BTreeMap::new();
    for c in [WarningClass::IgnoredElement, WarningClass::Inertia, WarningClass::Mimic, WarningClass::Mesh, WarningClass::ShapeInertia, WarningClass::Posture] {
        m.insert(c, 0);
    }
    for w in warnings {
        *m.entry(w.class).or_insert(0) += 1;
    }
    m
}

/// Plausible densities of a link filled uniformly (kg/m³): foam to tungsten.
pub const DENSITY_RANGE_KG_M3: (f64, f64) = (50.0, 25_000.0);
/// How far (factor) the trace of a link's inertia may be from that of its collision shape filled
/// with a uniform solid of the link's mass before it is reported.
pub const INERTIA_FACTOR: f64 = 10.0;

/// One link of the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LinkCheck {
    /// Link name.
    pub name: String,
    /// Mass (kg).
    pub mass_kg: f64,
    /// Principal moments about the centre of mass, ascending (kg·m², as used after the policy).
    pub principal_inertia_kg_m2: [f64; 3],
    /// `I₃ − (I₁ + I₂)` when positive (kg·m²).
    pub triangle_violation_kg_m2: f64,
    /// Volume of the single collision shape (m³), when the link has exactly one.
    pub shape_volume_m3: Option<f64>,
    /// Mass / volume (kg/m³).
    pub density_kg_m3: Option<f64>,
    /// Trace of the declared inertia over that of the shape filled uniformly with the same mass.
    pub inertia_vs_shape: Option<f64>,
}

/// The report of one robot.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RobotCheck {
    /// Robot name.
    pub robot: String,
    /// Links.
    pub links: Vec<LinkCheck>,
    /// Total mass (kg).
    pub total_mass_kg: f64,
    /// Movable joints (DOF of the fixed-base robot).
    pub dof: usize,
    /// Whole-body centre of mass at the initial posture (m, root link frame).
    pub com_m: [f64; 3],
    /// Lowest collision point at the initial posture (m, z in the root link frame) and its link.
    pub lowest_collision: Option<(f64, String)>,
}

/// The report of a file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckReport {
    /// The file checked.
    pub file: String,
    /// Robots.
    pub robots: Vec<RobotCheck>,
    /// Load warnings and the check's own.
    pub warnings: Vec<LoadWarning>,
    /// Warnings per class.
    pub counts: BTreeMap<WarningClass, usize>,
}

/// Checks a URDF (fixed base, initial posture q = 0) or every robot of a scene (its initial
/// posture): the same loader as the simulator, then shape-vs-inertia consistency, triangle
/// inequality, posture (joints starting outside their limits, COM, lowest collision point).
pub fn check_file(path: &Path, opts: &LoadOptions) -> Result<CheckReport, InputError> {
    use crate::model::{GeomShape, TreeKind};
    let file = path.display().to_string();
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    let (model, mut warnings) = if ext == "yaml" || ext == "yml" {
        let s = config::load_scene_with(path, opts)?;
        (s.model, s.warnings)
    } else {
        config::load_urdf_model(path, false, opts)?
    };
    let mut ws = crate::workspace::Workspace::new(&model, &Default::default());
    crate::kinematics::forward_kinematics(&model, &model.q_init, &model.v_init, &mut ws);
    let mut robots = vec![];
    for t in &model.trees {
        let TreeKind::Robot(ri) = t.kind else { continue };
        let info = &model.robots[ri];
        let src = info.source.clone();
        let root_inv = ws.body_pose[t.body_start].inverse();
        let mut links = vec![];
        let (mut total, mut mc) = (0.0, Vec3::zeros());
        let mut lowest: Option<(f64, String)> = None;
        let mut dof = 0;
        for b in t.body_start..t.body_end {
            let body = &model.bodies[b];
            if body.joint.kind.nv() == 1 {
                dof += 1;
                if let Some((lo, hi)) = body.joint.position_limits {
                    let q = model.q_init[body.joint.q_index];
                    if q < lo || q > hi {
                        warnings.push(LoadWarning {
                            class: WarningClass::Posture,
                            file: src.clone(),
                            element: format!("joint '{}'", body.joint.name),
                            message: format!("starts at {q} outside its limits [{lo}, {hi}] (the limit constraint pushes it back at the first step)"),
                        });
                    }
                }
            }
            let pose = root_inv * ws.body_pose[b];
            total += body.mass;
            mc += body.mass * (pose * nalgebra::Point3::from(body.com)).coords;
            let (eig, _) = crate::urdf::principal_moments(&body.inertia_com);
            let geoms: Vec<_> = model.geoms.iter().filter(|g| g.body == Some(b)).collect();
            for g in &geoms {
                let aabb = g.parry_shape.compute_aabb(&crate::math::to_parry(&(pose * g.x_body_geom)));
                let z = aabb.mins.z;
                if lowest.as_ref().is_none_or(|l| z < l.0) {
                    lowest = Some((z, body.name.clone()));
                }
            }
            let mut lc = LinkCheck {
                name: body.name.clone(),
                mass_kg: body.mass,
                principal_inertia_kg_m2: [eig[0], eig[1], eig[2]],
                triangle_violation_kg_m2: crate::urdf::triangle_violation(&eig),
                shape_volume_m3: None,
                density_kg_m3: None,
                inertia_vs_shape: None,
            };
            if let [g] = geoms.as_slice() {
                if body.mass > 0.0 && !matches!(g.shape, GeomShape::Plane { .. }) {
                    let v = config::shape_volume(&g.shape);
                    if v > 0.0 {
                        let rho = body.mass / v;
                        let (i_shape, _) = crate::model::solid_inertia(&g.shape, body.mass);
                        let ratio = body.inertia_com.trace() / i_shape.trace().max(1e-300);
                        lc.shape_volume_m3 = Some(v);
                        lc.density_kg_m3 = Some(rho);
                        lc.inertia_vs_shape = Some(ratio);
                        let element = format!("link '{}'", body.name);
                        if rho < DENSITY_RANGE_KG_M3.0 || rho > DENSITY_RANGE_KG_M3.1 {
                            warnings.push(LoadWarning {
                                class: WarningClass::ShapeInertia,
                                file: src.clone(),
                                element: element.clone(),
                                message: format!(
                                    "mass {} kg in a collision shape of {v:.3e} m³ is a density of {rho:.4} kg/m³, outside the plausible {}–{} kg/m³ (wrong mass or wrong mesh scale?)",
                                    body.mass, DENSITY_RANGE_KG_M3.0, DENSITY_RANGE_KG_M3.1
                                ),
                            });
                        }
                        if !(1.0 / INERTIA_FACTOR..=INERTIA_FACTOR).contains(&ratio) {
                            warnings.push(LoadWarning {
                                class: WarningClass::ShapeInertia,
                                file: src.clone(),
                                element,
                                message: format!(
                                    "inertia is {ratio:.4} × that of its collision shape filled uniformly with the same mass (trace {:.4e} vs {:.4e} kg·m²): more than {INERTIA_FACTOR}× off",
                                    body.inertia_com.trace(),
                                    i_shape.trace()
                                ),
                            });
                        }
                    }
                }
            }
            links.push(lc);
        }
        let com = if total > 0.0 { mc / total } else { Vec3::zeros() };
        robots.push(RobotCheck { robot: info.name.clone(), links, total_mass_kg: total, dof, com_m: [com.x, com.y, com.z], lowest_collision: lowest });
    }
    let counts = count_by_class(&warnings);
    Ok(CheckReport { file, robots, warnings, counts })
}

/// Prints a [`CheckReport`] as tables.
pub fn print_report(r: &CheckReport) {
    println!("== {}", r.file);
    for rb in &r.robots {
        println!("  robot '{}': {} links, {} DOF, total mass {:.6} kg", rb.robot, rb.links.len(), rb.dof, rb.total_mass_kg);
        println!("  {:<24} {:>10} {:>36} {:>12} {:>12} {:>10}", "link", "mass kg", "principal inertia kg·m²", "triangle", "density", "I/I_shape");
        for l in &rb.links {
            let p = l.principal_inertia_kg_m2;
            let tri = if l.triangle_violation_kg_m2 > 0.0 { format!("-{:.2e}", l.triangle_violation_kg_m2) } else { "ok".into() };
            let opt = |x: Option<f64>, prec: usize| x.map(|v| format!("{v:.prec$}")).unwrap_or_else(|| "-".into());
            println!("  {:<24} {:>10.4} [{:10.3e} {:10.3e} {:10.3e}] {:>12} {:>12} {:>10}", l.name, l.mass_kg, p[0], p[1], p[2], tri, opt(l.density_kg_m3, 1), opt(l.inertia_vs_shape, 3));
        }
        println!("  whole-body COM at the initial posture (root frame): [{:.6}, {:.6}, {:.6}] m", rb.com_m[0], rb.com_m[1], rb.com_m[2]);
        if let Some((z, link)) = &rb.lowest_collision {
            println!("  lowest collision point: z = {z:.6} m in the root frame (link '{link}'); COM {:.6} m above it", rb.com_m[2] - z);
        }
    }
    for w in &r.warnings {
        println!("  WARNING [{}]: {w}", w.class.label());
    }
    let counts: Vec<String> = r.counts.iter().map(|(c, n)| format!("{} {n}", c.label())).collect();
    println!("  warnings per class: {}", counts.join(", "));
    println!("  => PASS ({} warning(s))", r.warnings.len());
}

/// `contact_sim model --check PATH`: prints the report (or JSON); `Err` when the file does not
/// load (the caller exits non-zero).
pub fn check_cli(path: &Path, opts: &LoadOptions, json: bool) -> Result<(), InputError> {
    let r = check_file(path, opts)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    } else {
        print_report(&r);
    }
    Ok(())
}
