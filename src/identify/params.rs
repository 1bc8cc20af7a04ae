//! The parameter seam: physical parameters of a scene addressed by name, read from the loaded
//! model and written back into the scene file's YAML, so that a fitted value is an ordinary
//! scene key that `run`, `replay`, `compare` and the node load as they are.
//!
//! Names (units are the scene's; a revolute joint's are N·m, rad and kg·m², a prismatic one's N,
//! m and kg):
//!
//! | name | scene key written | unit |
//! |---|---|---|
//! | `joint/<j>/friction` | `robots[r].joints.<j>.friction` | N·m or N |
//! | `joint/<j>/damping` | `robots[r].joints.<j>.damping` | N·m·s/rad or N·s/m |
//! | `joint/<j>/armature` | `robots[r].joints.<j>.armature` | kg·m² or kg |
//! | `joint/<j>/effort_limit` | `robots[r].joints.<j>.effort_limit` | N·m or N |
//! | `joint/<j>/kp`, `joint/<j>/kd` | `robots[r].control.joints.<j>` | N·m/rad, N·m·s/rad |
//! | `body/<b>/mass_kg` | `robots[r].links.<b>.mass_kg`, or `objects[i].mass_kg` | kg |
//! | `body/<b>/com_m` (3 values `/x`, `/y`, `/z`) | `robots[r].links.<b>.com_m` | m, link frame |
//! | `material/<m>/friction` | `materials.<m>.friction` | 1 |
//! | `material/<m>/contact_stiffness_n_per_m`, `…/contact_damping_n_s_per_m`, `…/youngs_modulus_pa` | `materials.<m>.<key>` | N/m, N·s/m, Pa |
//! | `material_pair/<a>/<b>/friction` | `material_pairs[{a, b}].friction` | 1 |
//! | `sensor/<s>/force_bias_n` (3 values), `sensor/<s>/torque_bias_nm` (3 values) | `sensors[i].emulation.bias` | N, N·m, sensor frame |
//! | `commands/delay_s` | `command_delay_s` | s |
//!
//! A name with three values (`com_m`, the biases) stands for its three components, which may
//! also be named one by one (`body/box/com_m/z`).

use crate::config::{Scene, SceneFile};
use crate::model::{ControlMode, FrictionCombine, Model, TreeKind};
use serde_yaml::{Mapping, Value};
use std::fmt::Write as _;

/// What a parameter name addresses. `robot`, `object` and `sensor` index the scene file's
/// lists (`robots`, `objects`, `sensors`), which the model keeps in the same order.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A key of a robot joint's dynamics.
    JointDynamics {
        /// Robot index.
        robot: usize,
        /// Joint name.
        joint: String,
        /// `friction`, `damping`, `armature` or `effort_limit`.
        key: &'static str,
    },
    /// A position or velocity servo gain.
    JointGain {
        /// Robot index.
        robot: usize,
        /// Joint name.
        joint: String,
        /// `kp` or `kd`.
        key: &'static str,
    },
    /// A robot link's mass.
    LinkMass {
        /// Robot index.
        robot: usize,
        /// Link name.
        link: String,
    },
    /// One component of a robot link's centre of mass (link frame).
    LinkCom {
        /// Robot index.
        robot: usize,
        /// Link name.
        link: String,
        /// 0 x, 1 y, 2 z.
        axis: usize,
    },
    /// An object's mass.
    ObjectMass {
        /// Object index.
        object: usize,
    },
    /// A material key.
    Material {
        /// Material name.
        material: String,
        /// `friction` or a compliance key.
        key: &'static str,
    },
    /// The friction of a material pair.
    MaterialPair {
        /// One material.
        a: String,
        /// The other.
        b: String,
    },
    /// One axis of a sensor's constant bias (sensor frame).
    SensorBias {
        /// Sensor index.
        sensor: usize,
        /// 0–2 force x y z, 3–5 torque x y z.
        axis: usize,
    },
    /// The command transport delay.
    CommandDelay,
}

/// One scalar parameter: its name, what it addresses, its unit and value in the nominal scene.
#[derive(Clone, Debug)]
pub struct Parameter {
    /// Full name (`joint/arm_joint2/friction`, `body/box/com_m/z`).
    pub name: String,
    /// What it addresses.
    pub target: Target,
    /// Unit, for reports.
    pub unit: &'static str,
    /// Value in the scene as loaded (`None` when the scene has none, e.g. a rigid material's
    /// stiffness: then the parameter file must give `initial`).
    pub scene_value: Option<f64>,
}

const JOINT_KEYS: [&str; 6] = ["friction", "damping", "armature", "effort_limit", "kp", "kd"];
const MATERIAL_KEYS: [&str; 4] = ["friction", "contact_stiffness_n_per_m", "contact_damping_n_s_per_m", "youngs_modulus_pa"];
const AXES: [&str; 3] = ["x", "y", "z"];

/// Resolves `name` against the scene into its scalar parameters (three for a vector name).
/// An unknown name is refused naming it and listing the names that exist.
pub fn resolve(name: &str, scene: &Scene, file: &SceneFile) -> Result<Vec<Parameter>, String> {
    let model = &scene.model;
    let parts: Vec<&str> = name.split('/').collect();
    let unknown = |what: &str| format!("parameter '{name}': {what}; the parameters of this scene are:\n{}", available(model, file));
    let one = |target: Target, unit: &'static str| -> Result<Vec<Parameter>, String> {
        let scene_value = read(&target, model, file);
        Ok(vec![Parameter { name: name.to_string(), target, unit, scene_value }])
    };
    match parts.as_slice() {
        ["joint", joint, key] => {
            let Some(body) = model.joint_body(joint).filter(|&b| model.bodies[b].joint.kind.nv() == 1) else {
                return Err(unknown(&format!("no movable one-coordinate joint '{joint}'")));
            };
            let TreeKind::Robot(robot) = model.trees[model.bodies[body].tree].kind else { return Err(unknown(&format!("'{joint}' is not a robot joint"))) };
            let prismatic = model.bodies[body].joint.kind == crate::model::JointKind::Prismatic;
            let Some(&key) = JOINT_KEYS.iter().find(|k| **k == *key) else { return Err(unknown(&format!("no joint key '{key}' (keys: {})", JOINT_KEYS.join(", ")))) };
            let unit = match (key, prismatic) {
                ("friction" | "effort_limit", false) => "N·m",
                ("friction" | "effort_limit", true) => "N",
                ("damping" | "kd", false) => "N·m·s/rad",
                ("damping" | "kd", true) => "N·s/m",
                ("armature", false) => "kg·m²",
                ("armature", true) => "kg",
                (_, false) => "N·m/rad",
                (_, true) => "N/m",
            };
            let target = if key == "kp" || key == "kd" {
                let dof = model.bodies[body].joint.v_index;
                match (model.default_control[dof], key) {
                    (ControlMode::Position { .. }, _) | (ControlMode::Velocity { .. }, "kd") => {}
                    (mode, _) => return Err(format!("parameter '{name}': joint '{joint}' is in {mode:?} mode, which has no gain {key}")),
                }
                Target::JointGain { robot, joint: joint.to_string(), key }
            } else {
                Target::JointDynamics { robot, joint: joint.to_string(), key }
            };
            one(target, unit)
        }
        ["body", body, rest @ ..] => {
            let Some(b) = model.body_id(body) else { return Err(unknown(&format!("no link or object '{body}'"))) };
            let tree = &model.trees[model.bodies[b].tree];
            match (rest, &tree.kind) {
                (["mass_kg"], TreeKind::Robot(r)) => one(Target::LinkMass { robot: *r, link: body.to_string() }, "kg"),
                (["mass_kg"], TreeKind::Object(o)) => one(Target::ObjectMass { object: *o }, "kg"),
                (["com_m", axes @ ..], TreeKind::Robot(r)) => {
                    let picked = pick_axes(axes).map_err(|w| unknown(&w))?;
                    Ok(picked
                        .into_iter()
                        .map(|axis| {
                            let target = Target::LinkCom { robot: *r, link: body.to_string(), axis };
                            Parameter { name: format!("body/{body}/com_m/{}", AXES[axis]), scene_value: read(&target, model, file), target, unit: "m" }
                        })
                        .collect())
                }
                (["com_m", ..], TreeKind::Object(_)) => Err(format!("parameter '{name}': '{body}' is an object, whose centre of mass is its shape's centroid; only its mass_kg can be fitted")),
                _ => Err(unknown(&format!("no body key '{}' (keys: mass_kg, com_m)", rest.join("/")))),
            }
        }
        ["material", material, key] => {
            if !model.materials.iter().any(|m| m.name == *material) {
                return Err(unknown(&format!("no material '{material}'")));
            }
            let Some(&key) = MATERIAL_KEYS.iter().find(|k| **k == *key) else { return Err(unknown(&format!("no material key '{key}' (keys: {})", MATERIAL_KEYS.join(", ")))) };
            let unit = match key {
                "friction" => "1",
                "contact_stiffness_n_per_m" => "N/m",
                "contact_damping_n_s_per_m" => "N·s/m",
                _ => "Pa",
            };
            one(Target::Material { material: material.to_string(), key }, unit)
        }
        ["material_pair", a, b, "friction"] => {
            for m in [a, b] {
                if !model.materials.iter().any(|x| x.name == *m) {
                    return Err(unknown(&format!("no material '{m}'")));
                }
            }
            one(Target::MaterialPair { a: a.to_string(), b: b.to_string() }, "1")
        }
        ["sensor", sensor, key, axes @ ..] => {
            let Some(s) = model.sensors.iter().position(|x| x.name == *sensor) else { return Err(unknown(&format!("no sensor '{sensor}'"))) };
            let (first, unit) = match *key {
                "force_bias_n" => (0, "N"),
                "torque_bias_nm" => (3, "N·m"),
                other => return Err(unknown(&format!("no sensor key '{other}' (keys: force_bias_n, torque_bias_nm)"))),
            };
            let picked = pick_axes(axes).map_err(|w| unknown(&w))?;
            Ok(picked
                .into_iter()
                .map(|i| {
                    let target = Target::SensorBias { sensor: s, axis: first + i };
                    Parameter { name: format!("sensor/{sensor}/{key}/{}", AXES[i]), scene_value: read(&target, model, file), target, unit }
                })
                .collect())
        }
        ["commands", "delay_s"] => one(Target::CommandDelay, "s"),
        _ => Err(unknown("not a parameter name")),
    }
}

/// The components a vector name's last part picks: none → all three, `x`, `y` or `z` → one.
fn pick_axes(axes: &[&str]) -> Result<Vec<usize>, String> {
    match axes {
        [] => Ok(vec![0, 1, 2]),
        [a] => AXES.iter().position(|x| x == a).map(|i| vec![i]).ok_or_else(|| format!("no axis '{a}' (x, y, z)")),
        _ => Err("too many parts".into()),
    }
}

/// Every parameter name the scene has, one category per line.
pub fn available(model: &Model, file: &SceneFile) -> String {
    let mut out = String::new();
    let joints: Vec<&str> = model.bodies.iter().filter(|b| b.joint.kind.nv() == 1 && matches!(model.trees[b.tree].kind, TreeKind::Robot(_))).map(|b| b.joint.name.as_str()).collect();
    if !joints.is_empty() {
        let _ = writeln!(out, "  joint/<joint>/{{{}}} for joint in: {}", JOINT_KEYS.join(","), joints.join(", "));
    }
    let links: Vec<&str> = model.bodies.iter().filter(|b| b.mass > 0.0 && matches!(model.trees[b.tree].kind, TreeKind::Robot(_))).map(|b| b.name.as_str()).collect();
    if !links.is_empty() {
        let _ = writeln!(out, "  body/<link>/{{mass_kg,com_m}} for link in: {}", links.join(", "));
    }
    let objects: Vec<&str> = model.objects.iter().zip(&file.objects).filter(|(_, o)| !o.fixed).map(|(_, o)| o.name.as_str()).collect();
    if !objects.is_empty() {
        let _ = writeln!(out, "  body/<object>/mass_kg for object in: {}", objects.join(", "));
    }
    let materials: Vec<&str> = model.materials.iter().map(|m| m.name.as_str()).collect();
    let _ = writeln!(out, "  material/<material>/{{{}}} for material in: {}", MATERIAL_KEYS.join(","), materials.join(", "));
    let _ = writeln!(out, "  material_pair/<a>/<b>/friction for two of those materials");
    let sensors: Vec<&str> = model.sensors.iter().map(|s| s.name.as_str()).collect();
    if !sensors.is_empty() {
        let _ = writeln!(out, "  sensor/<sensor>/{{force_bias_n,torque_bias_nm}} for sensor in: {}", sensors.join(", "));
    }
    let _ = write!(out, "  commands/delay_s");
    out
}

/// The parameter's value in the loaded scene (`None` when the scene does not set it).
fn read(target: &Target, model: &Model, file: &SceneFile) -> Option<f64> {
    let joint = |j: &str| model.joint_body(j).map(|b| &model.bodies[b].joint);
    match target {
        Target::JointDynamics { joint: j, key, .. } => {
            let j = joint(j)?;
            let v = match *key {
                "friction" => j.friction,
                "damping" => j.damping,
                "armature" => j.armature,
                _ => j.effort_limit,
            };
            v.is_finite().then_some(v)
        }
        Target::JointGain { joint: j, key, .. } => match (model.default_control[joint(j)?.v_index], *key) {
            (ControlMode::Position { kp, .. }, "kp") => Some(kp),
            (ControlMode::Position { kd, .. }, _) | (ControlMode::Velocity { kd }, _) => Some(kd),
            _ => None,
        },
        Target::LinkMass { link, .. } => model.body_id(link).map(|b| model.bodies[b].mass),
        Target::LinkCom { link, axis, .. } => model.body_id(link).map(|b| model.bodies[b].com[*axis]),
        Target::ObjectMass { object } => model.trees.iter().find(|t| t.kind == TreeKind::Object(*object)).map(|t| model.bodies[t.body_start].mass),
        Target::Material { material, key } => {
            let m = model.materials.iter().find(|m| &m.name == material)?;
            match *key {
                "friction" => Some(m.friction),
                "contact_stiffness_n_per_m" => m.compliance.stiffness_n_per_m,
                "contact_damping_n_s_per_m" => m.compliance.damping_n_s_per_m,
                _ => m.compliance.youngs_modulus_pa,
            }
        }
        Target::MaterialPair { a, b } => {
            if let Some(p) = file.material_pairs.iter().find(|p| (&p.a == a && &p.b == b) || (&p.a == b && &p.b == a)) {
                return Some(p.friction);
            }
            let mu = |n: &str| model.materials.iter().find(|m| m.name == n).map(|m| m.friction);
            let (fa, fb) = (mu(a)?, mu(b)?);
            Some(match file.friction_combine {
                FrictionCombine::Min => fa.min(fb),
                FrictionCombine::Max => fa.max(fb),
                FrictionCombine::Average => 0.5 * (fa + fb),
                FrictionCombine::Geometric => (fa * fb).sqrt(),
            })
        }
        Target::SensorBias { sensor, axis } => Some(model.sensors[*sensor].emulation.bias.values()[*axis]),
        Target::CommandDelay => Some(model.command_delay_s),
    }
}

/// Writes `value` for `target` into the scene document `doc` (the scene file as YAML), creating
/// the keys it needs. `model` (the nominal scene's) supplies a servo's current mode and other
/// gain, and a sensor's other bias axes.
pub fn write(doc: &mut Value, target: &Target, value: f64, model: &Model) -> Result<(), String> {
    let num = |x: f64| Value::from(x);
    match target {
        Target::JointDynamics { robot, joint, key } => {
            let j = map_at(robot_entry(doc, *robot)?, &["joints", joint])?;
            j.insert((*key).into(), num(value));
        }
        Target::JointGain { robot, joint, key } => {
            let dof = model.joint_dof(joint).ok_or_else(|| format!("no joint '{joint}'"))?;
            let r = robot_entry(doc, *robot)?;
            let entry = map_at(r, &["control", "joints", joint])?;
            if entry.is_empty() {
                // the joint had no entry of its own: start from the mode it runs in
                match model.default_control[dof] {
                    ControlMode::Position { kp, kd } => {
                        entry.insert("mode".into(), "position".into());
                        entry.insert("kp".into(), num(kp));
                        entry.insert("kd".into(), num(kd));
                    }
                    ControlMode::Velocity { kd } => {
                        entry.insert("mode".into(), "velocity".into());
                        entry.insert("kd".into(), num(kd));
                    }
                    other => return Err(format!("joint '{joint}' is in {other:?} mode, which has no gain {key}")),
                }
            }
            entry.insert((*key).into(), num(value));
        }
        Target::LinkMass { robot, link } => {
            map_at(robot_entry(doc, *robot)?, &["links", link])?.insert("mass_kg".into(), num(value));
        }
        Target::LinkCom { robot, link, axis } => {
            let body = model.body_id(link).ok_or_else(|| format!("no link '{link}'"))?;
            let l = map_at(robot_entry(doc, *robot)?, &["links", link])?;
            let mut com: [f64; 3] = match l.get("com_m") {
                Some(v) => serde_yaml::from_value(v.clone()).map_err(|e| format!("links.{link}.com_m: {e}"))?,
                None => model.bodies[body].com.into(),
            };
            com[*axis] = value;
            l.insert("com_m".into(), serde_yaml::to_value(com).map_err(|e| e.to_string())?);
        }
        Target::ObjectMass { object } => {
            let o = seq_entry(doc, "objects", *object)?;
            o.remove("density_kg_m3");
            o.insert("mass_kg".into(), num(value));
        }
        Target::Material { material, key } => {
            let m = map_at(root(doc)?, &["materials", material])?;
            if !m.contains_key("friction") {
                // a material the scene did not define (the built-in `default`): keep its μ
                let mu = model.materials.iter().find(|x| &x.name == material).map(|x| x.friction).unwrap_or(0.8);
                m.insert("friction".into(), num(mu));
            }
            m.insert((*key).into(), num(value));
        }
        Target::MaterialPair { a, b } => {
            let pairs = root(doc)?.entry("material_pairs".into()).or_insert_with(|| Value::Sequence(vec![]));
            let Value::Sequence(list) = pairs else { return Err("material_pairs is not a list".into()) };
            let same = |p: &Value| {
                let (pa, pb) = (p.get("a").and_then(Value::as_str), p.get("b").and_then(Value::as_str));
                (pa == Some(a) && pb == Some(b)) || (pa == Some(b) && pb == Some(a))
            };
            match list.iter_mut().find(|p| same(p)) {
                Some(Value::Mapping(p)) => {
                    p.insert("friction".into(), num(value));
                }
                _ => {
                    let mut p = Mapping::new();
                    p.insert("a".into(), a.as_str().into());
                    p.insert("b".into(), b.as_str().into());
                    p.insert("friction".into(), num(value));
                    list.push(Value::Mapping(p));
                }
            }
        }
        Target::SensorBias { sensor, axis } => {
            let s = seq_entry(doc, "sensors", *sensor)?;
            let e = map_value(s.entry("emulation".into()).or_insert_with(|| Value::Mapping(Mapping::new())), "emulation")?;
            let mut bias = match e.get("bias") {
                Some(v) => serde_yaml::from_value::<crate::sensors::Axes>(v.clone()).map_err(|x| format!("sensors[{sensor}].emulation.bias: {x}"))?.values(),
                None => model.sensors[*sensor].emulation.bias.values(),
            };
            bias[*axis] = value;
            e.insert("bias".into(), serde_yaml::to_value(bias).map_err(|x| x.to_string())?);
        }
        Target::CommandDelay => {
            root(doc)?.insert("command_delay_s".into(), num(value));
        }
    }
    Ok(())
}

fn root(doc: &mut Value) -> Result<&mut Mapping, String> {
    map_value(doc, "the scene")
}

fn map_value<'a>(v: &'a mut Value, what: &str) -> Result<&'a mut Mapping, String> {
    if v.is_null() {
        *v = Value::Mapping(Mapping::new());
    }
    v.as_mapping_mut().ok_or_else(|| format!("{what} is not a mapping"))
}

/// `doc[list][i]` as a mapping.
fn seq_entry<'a>(doc: &'a mut Value, list: &str, i: usize) -> Result<&'a mut Mapping, String> {
    let l = root(doc)?.get_mut(list).and_then(Value::as_sequence_mut).ok_or_else(|| format!("the scene has no list '{list}'"))?;
    let e = l.get_mut(i).ok_or_else(|| format!("{list}[{i}] does not exist"))?;
    map_value(e, &format!("{list}[{i}]"))
}

fn robot_entry(doc: &mut Value, robot: usize) -> Result<&mut Mapping, String> {
    seq_entry(doc, "robots", robot)
}

/// The mapping at `path` below `m`, created where missing.
fn map_at<'a>(mut m: &'a mut Mapping, path: &[&str]) -> Result<&'a mut Mapping, String> {
    for (i, key) in path.iter().enumerate() {
        let v = m.entry((*key).into()).or_insert_with(|| Value::Mapping(Mapping::new()));
        m = map_value(v, &path[..=i].join("."))?;
    }
    Ok(m)
}

/// The scene file's keys that hold paths relative to the scene file: rewritten when the scene is
/// written elsewhere ([`rebase_paths`]).
pub fn rebase_paths(doc: &mut Value, from_dir: &std::path::Path, to_dir: &std::path::Path) {
    let fix = |v: &mut Value| {
        if let Some(s) = v.as_str() {
            let p = std::path::Path::new(s);
            if p.is_relative() {
                let abs = from_dir.join(p);
                let abs = abs.canonicalize().unwrap_or(abs);
                *v = Value::from(relative_path(&abs, to_dir).display().to_string());
            }
        }
    };
    let Some(root) = doc.as_mapping_mut() else { return };
    if let Some(Value::Mapping(pp)) = root.get_mut("package_paths") {
        pp.values_mut().for_each(fix);
    }
    if let Some(Value::Sequence(robots)) = root.get_mut("robots") {
        for r in robots.iter_mut().filter_map(Value::as_mapping_mut) {
            if let Some(u) = r.get_mut("urdf") {
                fix(u);
            }
            if let Some(Value::Mapping(pp)) = r.get_mut("package_paths") {
                pp.values_mut().for_each(fix);
            }
        }
    }
    if let Some(Value::Sequence(objects)) = root.get_mut("objects") {
        for o in objects.iter_mut().filter_map(Value::as_mapping_mut) {
            if let Some(Value::Mapping(shape)) = o.get_mut("shape") {
                if let Some(f) = shape.get_mut("file") {
                    fix(f);
                }
            }
        }
    }
    if let Some(Value::Sequence(defs)) = root.get_mut("deformables") {
        for d in defs.iter_mut().filter_map(Value::as_mapping_mut) {
            if let Some(m) = d.get_mut("mesh") {
                fix(m);
            }
        }
    }
}

/// `target` relative to the directory `base` (both absolute), else `target` itself.
fn relative_path(target: &std::path::Path, base: &std::path::Path) -> std::path::PathBuf {
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    let (t, b): (Vec<_>, Vec<_>) = (target.components().collect(), base.components().collect());
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return target.to_path_buf();
    }
    let mut out = std::path::PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
}
