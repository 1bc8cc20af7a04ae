//! URDFs as they exist in the wild: lenient parsing, load warnings, the inertia policy.
//!
//! No file I/O here (see [`crate::config`]): [`parse_urdf_str`] turns URDF text into a
//! [`urdf_rs::Robot`], dropping the elements that do not affect the physics (`<gazebo>`,
//! `<transmission>`, `<ros2_control>`, unknown tags, a `<texture>` without a filename) with one
//! [`LoadWarning`] per kind of element; [`apply_inertia_check`] applies a robot's
//! [`InertiaCheck`] policy to a link's inertia.

use crate::error::InputError;
use crate::math::{Mat3, Vec3};
use nalgebra::SymmetricEigen;
use std::fmt;

/// What a [`LoadWarning`] is about (`contact_sim model --check` counts warnings per class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningClass {
    /// An element that does not affect the physics was ignored (`<gazebo>`, unknown tags, ...).
    IgnoredElement,
    /// An inertia violates the triangle inequality (kept or balanced, see [`InertiaCheck`]).
    Inertia,
    /// A `<mimic>` was ignored (on a fixed joint) or resolved through a chain.
    Mimic,
    /// A mesh was read with a conversion worth knowing (unit, up axis).
    Mesh,
    /// `model --check`: a link's inertial does not match its collision shape.
    ShapeInertia,
    /// `model --check`: something about the robot's posture or mass distribution.
    Posture,
    /// A scene's bodies start deep inside each other (pushed apart slowly, see
    /// [`crate::model::ContactOptions::max_depenetration_speed_m_s`]).
    Overlap,
    /// Two bodies that can touch differ in mass by more than
    /// [`crate::validate::MASS_RATIO_WARN`]: the contact solution is not to be trusted.
    MassRatio,
    /// A scene key that is accepted but probably not what was meant (an initial position
    /// outside the joint's limits, two script keyframes at one time).
    Scene,
}

impl WarningClass {
    /// Short label used in reports.
    pub fn label(self) -> &'static str {
        match self {
            WarningClass::IgnoredElement => "ignored_element",
            WarningClass::Inertia => "inertia",
            WarningClass::Mimic => "mimic",
            WarningClass::Mesh => "mesh",
            WarningClass::Scene => "scene",
            WarningClass::ShapeInertia => "shape_inertia",
            WarningClass::Posture => "posture",
            WarningClass::Overlap => "overlap",
            WarningClass::MassRatio => "mass_ratio",
        }
    }
}

/// A problem that does not stop loading: which file, which element, what was done about it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoadWarning {
    /// What kind of problem.
    pub class: WarningClass,
    /// The file.
    pub file: String,
    /// The element: `link 'x'`, `joint 'y' <mimic>`, `<gazebo>`.
    pub element: String,
    /// What is fishy and what the loader did.
    pub message: String,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.element, self.message)
    }
}

/// What to do with a link inertia that no rigid body can have (principal moments that violate
/// the triangle inequality `I₁ ≤ I₂ + I₃`, typically by a little in CAD exports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InertiaCheck {
    /// Refuse the URDF (an error naming the link).
    Strict,
    /// Keep the given values and warn once per link, naming it and the size of the violation
    /// (what rigid-body libraries such as Pinocchio do, which load any symmetric inertia). Also
    /// for (slightly) negative principal moments.
    #[default]
    Warn,
    /// Replace the inertia by the nearest valid one that is not smaller: the two smaller
    /// principal moments are raised (equally, principal axes kept) until the triangle inequality
    /// holds with equality; negative moments are raised to zero first. The change is printed.
    Balance,
}

impl InertiaCheck {
    /// The policy names, as written in scenes and on the command line.
    pub const NAMES: [&'static str; 3] = ["strict", "warn", "balance"];
}

impl std::str::FromStr for InertiaCheck {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "strict" => Ok(InertiaCheck::Strict),
            "warn" => Ok(InertiaCheck::Warn),
            "balance" => Ok(InertiaCheck::Balance),
            other => Err(format!("unknown inertia check '{other}' (expected one of: {})", InertiaCheck::NAMES.join(", "))),
        }
    }
}

/// Principal moments (ascending, kg·m²) and axes (columns) of a symmetric 3×3 inertia.
pub fn principal_moments(i: &Mat3) -> (Vec3, Mat3) {
    let e = SymmetricEigen::new(*i);
    let mut idx = [0usize, 1, 2];
    idx.sort_by(|&a, &b| e.eigenvalues[a].total_cmp(&e.eigenvalues[b]));
    let vals = Vec3::new(e.eigenvalues[idx[0]], e.eigenvalues[idx[1]], e.eigenvalues[idx[2]]);
    let vecs = Mat3::from_columns(&[e.eigenvectors.column(idx[0]).into_owned(), e.eigenvectors.column(idx[1]).into_owned(), e.eigenvectors.column(idx[2]).into_owned()]);
    (vals, vecs)
}

/// Tolerance (kg·m²) below which a triangle-inequality violation or a negative principal moment
/// is taken as rounding: 1e-9 of the largest diagonal entry.
fn inertia_tolerance(i: &Mat3) -> f64 {
    1e-9 * i.diagonal().abs().max().max(1e-12)
}

/// By how much (kg·m², ≥ 0) ascending principal moments violate the triangle inequality:
/// `I₃ − (I₁ + I₂)` when positive.
pub fn triangle_violation(moments: &Vec3) -> f64 {
    (moments[2] - moments[0] - moments[1]).max(0.0)
}

/// The nearest valid principal moments that are not smaller than `moments` (ascending):
/// negative moments raised to zero, then the two smaller raised equally by half the remaining
/// triangle deficit. With only raises allowed this is the Euclidean-nearest valid set: the
/// largest moment cannot usefully be raised, and the sum `I₁ + I₂` must grow by the deficit at
/// the least total squared change, which is an equal split.
pub fn balanced_moments(moments: &Vec3) -> Vec3 {
    let mut m = moments.map(|x| x.max(0.0));
    let d = triangle_violation(&m);
    if d > 0.0 {
        m[0] += 0.5 * d;
        m[1] += 0.5 * d;
    }
    m
}

/// Checks a link's mass (kg) and rotational inertia (kg·m², any frame) under `policy`.
/// Returns the inertia to use (changed only by [`InertiaCheck::Balance`]) and a warning message
/// when the inertia was not physical; `Err` names what is wrong when the link is refused.
/// Mass and non-finite values are always errors; negative principal moments are treated like
/// triangle violations (refused, kept with a warning, or raised to zero).
pub fn apply_inertia_check(mass: f64, i: &Mat3, policy: InertiaCheck) -> Result<(Mat3, Option<String>), String> {
    if !(mass >= 0.0 && mass.is_finite()) {
        return Err(format!("mass must be non-negative and finite, got {mass} kg"));
    }
    if i.iter().any(|x| !x.is_finite()) {
        return Err("inertia has non-finite entries".into());
    }
    let tol = inertia_tolerance(i);
    let (eig, axes) = principal_moments(i);
    let negative = eig[0] < -tol;
    let violation = triangle_violation(&eig);
    if !negative && violation <= tol {
        return Ok((*i, None));
    }
    let fmt3 = |v: &Vec3| format!("{:.6e}, {:.6e}, {:.6e}", v[0], v[1], v[2]);
    if negative && policy == InertiaCheck::Strict {
        return Err(format!("inertia tensor is not positive semi-definite (principal moments {} kg·m²): no rigid body has these principal moments (inertia_check: warn keeps them, balance fixes them)", fmt3(&eig)));
    }
    if negative && policy == InertiaCheck::Warn {
        return Ok((
            *i,
            Some(format!(
                "inertia tensor is not positive semi-definite (principal moments {} kg·m²); kept as given (inertia_check: warn; balance raises the negative moments)",
                fmt3(&eig)
            )),
        ));
    }
    let how_much = format!(
        "{:.6e} > {:.6e} + {:.6e} kg·m², by {:.3e} kg·m² ({:.3} % of the largest moment)",
        eig[2],
        eig[0],
        eig[1],
        violation,
        100.0 * violation / eig[2].abs().max(1e-300)
    );
    match policy {
        InertiaCheck::Strict => Err(format!(
            "inertia violates the triangle inequality ({how_much}): no rigid body has these principal moments (inertia_check: warn keeps them, balance fixes them)"
        )),
        InertiaCheck::Warn => Ok((*i, Some(format!("inertia violates the triangle inequality ({how_much}); kept as given (inertia_check: warn)")))),
        InertiaCheck::Balance => {
            let b = balanced_moments(&eig);
            let out = axes * Mat3::from_diagonal(&b) * axes.transpose();
            let why = if negative { "negative principal moment".to_string() } else { format!("triangle inequality violated by {violation:.3e} kg·m², {:.3} %", 100.0 * violation / eig[2].abs().max(1e-300)) };
            Ok((out, Some(format!("inertia balanced: principal moments [{}] → [{}] kg·m² ({why}; inertia_check: balance)", fmt3(&eig), fmt3(&b)))))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// lenient parsing
// ---------------------------------------------------------------------------------------------

const LINK_CHILDREN: [&str; 3] = ["inertial", "visual", "collision"];
const JOINT_CHILDREN: [&str; 9] = ["origin", "parent", "child", "axis", "limit", "calibration", "dynamics", "mimic", "safety_controller"];
const KNOWN_JOINT_TYPES: [&str; 7] = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical"];

/// Ignored elements of one kind, gathered so that each kind warns once.
struct Ignored {
    element: String,
    what: String,
    names: Vec<String>,
}

fn note(list: &mut Vec<Ignored>, element: String, what: &str, name: String) {
    match list.iter_mut().find(|g| g.element == element && g.what == what) {
        Some(g) => g.names.push(name),
        None => list.push(Ignored { element, what: what.to_string(), names: vec![name] }),
    }
}

fn name_list(names: &[String]) -> String {
    const SHOWN: usize = 6;
    let shown: Vec<&str> = names.iter().take(SHOWN).map(String::as_str).collect();
    let mut s = shown.join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", and {} more", names.len() - SHOWN));
    }
    s
}

/// Parses URDF text. Elements that do not affect the physics and that the URDF parser would
/// choke on or silently drop are removed first, with one warning per kind of element (naming
/// the links or references concerned). `file` names the file in messages.
pub fn parse_urdf_str(text: &str, file: &str) -> Result<(urdf_rs::Robot, Vec<LoadWarning>), InputError> {
    crate::validate::xml_shape_within(text, crate::validate::MAX_XML_DEPTH).map_err(|reason| InputError::Parse { file: file.to_string(), reason: format!("invalid URDF: {reason}") })?;
    let doc = match roxmltree::Document::parse(text) {
        Ok(d) => d,
        // Not well-formed for roxmltree (e.g. an undeclared namespace prefix): let the URDF
        // parser try; if it fails too, report roxmltree's message (it has the position).
        Err(xml_err) => {
            return urdf_rs::read_from_string(text)
                .map(|r| (r, vec![]))
                .map_err(|_| InputError::Parse { file: file.to_string(), reason: format!("invalid URDF: not well-formed XML: {xml_err}") })
        }
    };
    let root = doc.root_element();
    if root.tag_name().name() != "robot" {
        return Err(InputError::Parse { file: file.to_string(), reason: format!("invalid URDF: the root element is <{}>, expected <robot>", root.tag_name().name()) });
    }
    let mut remove: Vec<std::ops::Range<usize>> = vec![];
    let mut ignored: Vec<Ignored> = vec![];
    let attr = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap_or("?").to_string();
    let check_material = |m: roxmltree::Node, owner: String, remove: &mut Vec<std::ops::Range<usize>>, ignored: &mut Vec<Ignored>| {
        for t in m.children().filter(|c| c.is_element() && c.tag_name().name() == "texture") {
            if t.attribute("filename").is_none_or(|f| f.trim().is_empty()) {
                remove.push(t.range());
                note(ignored, "<texture>".into(), "ignored (no filename; textures do not affect the physics), in the material of", owner.clone());
            }
        }
    };
    for el in root.children().filter(|c| c.is_element()) {
        let tag = el.tag_name().name();
        match tag {
            "link" => {
                let link = attr(&el, "name");
                for c in el.children().filter(|c| c.is_element()) {
                    let ct = c.tag_name().name();
                    if !LINK_CHILDREN.contains(&ct) {
                        remove.push(c.range());
                        note(&mut ignored, format!("<{ct}>"), "unknown element ignored, in", format!("link '{link}'"));
                    } else if ct == "visual" {
                        for m in c.children().filter(|m| m.is_element() && m.tag_name().name() == "material") {
                            check_material(m, format!("link '{link}'"), &mut remove, &mut ignored);
                        }
                    }
                }
            }
            "joint" => {
                let joint = attr(&el, "name");
                if let Some(t) = el.attribute("type") {
                    if !KNOWN_JOINT_TYPES.contains(&t) {
                        return Err(InputError::invalid(
                            file,
                            format!("joint '{joint}'"),
                            format!("unknown joint type '{t}' (expected one of: {})", KNOWN_JOINT_TYPES.join(", ")),
                        ));
                    }
                }
                for c in el.children().filter(|c| c.is_element()) {
                    let ct = c.tag_name().name();
                    if !JOINT_CHILDREN.contains(&ct) {
                        remove.push(c.range());
                        note(&mut ignored, format!("<{ct}>"), "unknown element ignored, in", format!("joint '{joint}'"));
                    }
                }
            }
            "material" => check_material(el, format!("material '{}'", attr(&el, "name")), &mut remove, &mut ignored),
            "gazebo" => {
                remove.push(el.range());
                let r = el.attribute("reference").map(|r| format!("reference '{r}'")).unwrap_or_else(|| "the robot".into());
                note(&mut ignored, "<gazebo>".into(), "ignored (Gazebo-specific settings: no effect on this simulator), for", r);
            }
            "transmission" => {
                remove.push(el.range());
                note(&mut ignored, "<transmission>".into(), "ignored (actuator descriptions: joints are commanded directly):", format!("'{}'", attr(&el, "name")));
            }
            "ros2_control" => {
                remove.push(el.range());
                note(&mut ignored, "<ros2_control>".into(), "ignored (hardware interfaces: commands come through the node's topics):", format!("'{}'", attr(&el, "name")));
            }
            other => {
                remove.push(el.range());
                note(&mut ignored, format!("<{other}>"), "unknown top-level element ignored:", el.attribute("name").map(|n| format!("'{n}'")).unwrap_or_else(|| "(unnamed)".into()));
            }
        }
    }
    let warnings = ignored
        .into_iter()
        .map(|g| LoadWarning {
            class: WarningClass::IgnoredElement,
            file: file.to_string(),
            element: g.element,
            message: format!("{} {}", g.what, name_list(&g.names)),
        })
        .collect();
    let cleaned = if remove.is_empty() {
        text.to_string()
    } else {
        remove.sort_by_key(|r| r.start);
        let mut s = String::with_capacity(text.len());
        let mut at = 0;
        for r in &remove {
            if r.start >= at {
                s.push_str(&text[at..r.start]);
                at = r.end;
            }
        }
        s.push_str(&text[at..]);
        s
    };
    let robot = match urdf_rs::read_from_string(&cleaned) {
        Ok(r) => r,
        Err(e) => {
            // name the element at fault: parse each top-level element alone (without the parts
            // dropped above, so that a removed child is not blamed)
            let bad = root.children().filter(|c| c.is_element() && !remove.iter().any(|r| r.start == c.range().start)).find_map(|el| {
                let range = el.range();
                let mut alone = String::from("<robot name=\"r\">");
                let mut at = range.start;
                for r in remove.iter().filter(|r| r.start >= range.start && r.end <= range.end) {
                    if r.start >= at {
                        alone.push_str(&text[at..r.start]);
                        at = r.end;
                    }
                }
                alone.push_str(&text[at..range.end]);
                alone.push_str("</robot>");
                urdf_rs::read_from_string(&alone).err().map(|e| (el, e))
            });
            return Err(match bad {
                Some((el, e)) => InputError::invalid(
                    file,
                    format!("{} '{}' (line {})", el.tag_name().name(), el.attribute("name").unwrap_or("?"), doc.text_pos_at(el.range().start).row),
                    format!("invalid URDF: {}", one_line(&e.to_string())),
                ),
                None => InputError::Parse { file: file.to_string(), reason: format!("invalid URDF: {}", one_line(&e.to_string())) },
            });
        }
    };
    Ok((robot, warnings))
}

/// A parser message on one line, without the serde `custom: ` prefix.
fn one_line(msg: &str) -> String {
    let msg = msg.trim().strip_prefix("custom: ").unwrap_or(msg.trim());
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------------
// numbers
// ---------------------------------------------------------------------------------------------

/// Checks every number of a URDF that affects the physics against its physical range (see
/// [`crate::validate`]): link masses, inertias and `<origin>`s, collision origins and sizes,
/// joint origins, axes, limits, dynamics and mimic multipliers and offsets. Visuals are not
/// checked (they do not affect the physics). The error is `(element, reason)`:
/// `("joint 'knee'", "<limit lower> is NaN")`.
pub fn check_numbers(robot: &urdf_rs::Robot) -> Result<(), (String, String)> {
    use crate::validate::*;
    for l in &robot.links {
        let at = |element: String| move |reason: String| (element, reason);
        let el = format!("link '{}' <inertial>", l.name);
        let i = &l.inertial;
        pose_in_range(i.origin.xyz.0, i.origin.rpy.0, URDF_ORIGIN).map_err(at(el.clone()))?;
        finite_in(i.mass.value, MASS_KG, "<mass value>").map_err(at(el.clone()))?;
        let ii = &i.inertia;
        for (name, v) in [("ixx", ii.ixx), ("ixy", ii.ixy), ("ixz", ii.ixz), ("iyy", ii.iyy), ("iyz", ii.iyz), ("izz", ii.izz)] {
            finite_in(v, INERTIA_KG_M2, &format!("<inertia {name}>")).map_err(at(el.clone()))?;
        }
        for (ci, c) in l.collision.iter().enumerate() {
            let el = format!("link '{}' <collision> {ci}", l.name);
            pose_in_range(c.origin.xyz.0, c.origin.rpy.0, URDF_ORIGIN).map_err(at(el.clone()))?;
            match &c.geometry {
                urdf_rs::Geometry::Box { size } => finite3_in(size.0, SIZE_M, "<box size>").map(drop),
                urdf_rs::Geometry::Sphere { radius } => finite_in(*radius, SIZE_M, "<sphere radius>").map(drop),
                urdf_rs::Geometry::Cylinder { radius, length } | urdf_rs::Geometry::Capsule { radius, length } => {
                    finite_in(*radius, SIZE_M, "radius").and_then(|_| finite_in(*length, SIZE_M, "length")).map(drop)
                }
                urdf_rs::Geometry::Mesh { scale, .. } => scale.as_ref().map_or(Ok(()), |s| finite3_in(s.0, DIRECTION, "<mesh scale>").map(drop)),
            }
            .map_err(at(el))?;
        }
    }
    for j in &robot.joints {
        let el = format!("joint '{}'", j.name);
        let at = |reason: String| (el.clone(), reason);
        pose_in_range(j.origin.xyz.0, j.origin.rpy.0, URDF_ORIGIN).map_err(at)?;
        if matches!(j.joint_type, urdf_rs::JointType::Fixed) {
            continue;
        }
        direction(j.axis.xyz.0, "<axis xyz>").map_err(at)?;
        let lim = &j.limit;
        finite_in(lim.lower, JOINT_POSITION_LIMIT, "<limit lower>").map_err(at)?;
        finite_in(lim.upper, JOINT_POSITION_LIMIT, "<limit upper>").map_err(at)?;
        finite_in(lim.effort, JOINT_LIMIT, "<limit effort>").map_err(at)?;
        finite_in(lim.velocity, JOINT_LIMIT, "<limit velocity>").map_err(at)?;
        if let Some(d) = &j.dynamics {
            finite_in(d.damping, GAIN, "<dynamics damping>").map_err(at)?;
            finite_in(d.friction, GAIN, "<dynamics friction>").map_err(at)?;
        }
        if let Some(m) = &j.mimic {
            finite_in(m.multiplier.unwrap_or(1.0), MULTIPLIER, "<mimic multiplier>").map_err(at)?;
            finite_in(m.offset.unwrap_or(0.0), JOINT_POSITION, "<mimic offset>").map_err(at)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// mimic joints
// ---------------------------------------------------------------------------------------------

/// One mimic coupling `q_follower = multiplier · q_leader + offset`, with the leader an
/// independent (non-mimic) movable joint.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedMimic {
    /// The follower joint.
    pub follower: String,
    /// The root joint of its mimic chain.
    pub leader: String,
    /// Composed multiplier (dimensionless).
    pub multiplier: f64,
    /// Composed offset (rad or m).
    pub offset: f64,
}

/// The mimic couplings of a URDF, plus `(element, message)` warnings.
#[derive(Clone, Debug, Default)]
pub struct Mimics {
    /// One per movable joint with a `<mimic>`.
    pub mimics: Vec<ResolvedMimic>,
    /// Ignored tags and resolved chains.
    pub warnings: Vec<(String, String)>,
}

/// Resolves the `<mimic>` tags of a URDF:
/// - on a fixed joint (reduced models keep the tag after freezing the joint): ignored, warned;
/// - a chain (a joint mimicking a mimic joint) is resolved to the chain's root joint with the
///   composed multiplier and offset (`q_c = m_c (m_b q_a + o_b) + o_c`), warned;
/// - a missing or fixed leader: the `<mimic>` is ignored with a warning (the joint is independent);
/// - a cycle: an `(element, reason)` error naming the joints.
pub fn resolve_mimics(urdf: &urdf_rs::Robot) -> Result<Mimics, (String, String)> {
    use std::collections::HashMap;
    let joints: HashMap<&str, &urdf_rs::Joint> = urdf.joints.iter().map(|j| (j.name.as_str(), j)).collect();
    let movable = |j: &urdf_rs::Joint| !matches!(j.joint_type, urdf_rs::JointType::Fixed);
    // a mimic tag counts only on a movable joint
    fn tag(j: &urdf_rs::Joint) -> Option<&urdf_rs::Mimic> {
        if matches!(j.joint_type, urdf_rs::JointType::Fixed) {
            None
        } else {
            j.mimic.as_ref()
        }
    }
    let mut out = Mimics::default();
    for j in &urdf.joints {
        let Some(m) = &j.mimic else { continue };
        let element = format!("joint '{}' <mimic>", j.name);
        if !movable(j) {
            out.warnings.push((element, format!("joint '{}' is fixed: its <mimic> of '{}' is ignored", j.name, m.joint)));
            continue;
        }
        let (mut mult, mut off) = (m.multiplier.unwrap_or(1.0), m.offset.unwrap_or(0.0));
        if !(mult.is_finite() && off.is_finite()) {
            return Err((element, "multiplier and offset must be finite".into()));
        }
        let mut chain = vec![j.name.as_str()];
        let mut leader = m.joint.as_str();
        loop {
            if chain.len() > crate::validate::MAX_MIMIC_CHAIN {
                return Err((element, format!("mimic chain of more than {} joints ('{}' → '{}' → '{}' → …): make the joints mimic the independent joint directly", crate::validate::MAX_MIMIC_CHAIN, chain[0], chain[1], chain[2])));
            }
            if chain.contains(&leader) {
                chain.push(leader);
                return Err((element, format!("mimic cycle: {} (no joint of the cycle is independent)", chain.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(" → "))));
            }
            let lj = match joints.get(leader) {
                Some(lj) if movable(lj) => *lj,
                // as rigid-body libraries do without their mimic option: the joint is independent
                other => {
                    let what = if other.is_some() { "is a fixed joint" } else { "does not exist" };
                    out.warnings.push((element.clone(), format!("mimicked joint '{leader}' {what}: <mimic> ignored, joint '{}' is independent", j.name)));
                    break;
                }
            };
            match tag(lj) {
                Some(lm) => {
                    // q_leader = lm.mult · q_next + lm.off
                    let (m2, o2) = (lm.multiplier.unwrap_or(1.0), lm.offset.unwrap_or(0.0));
                    off += mult * o2;
                    mult *= m2;
                    chain.push(leader);
                    leader = lm.joint.as_str();
                }
                None => break,
            }
        }
        if !joints.get(leader).is_some_and(|lj| movable(lj)) {
            continue;
        }
        if !(crate::validate::MULTIPLIER.contains(mult) && crate::validate::JOINT_POSITION.contains(off)) {
            return Err((element, format!("the mimic chain to '{leader}' composes to multiplier {}, offset {}: outside [-1e3, 1e3] and [-1e6, 1e6]", crate::validate::show(mult), crate::validate::show(off))));
        }
        if chain.len() > 1 {
            let path: Vec<String> = chain.iter().chain(std::iter::once(&leader)).map(|n| format!("'{n}'")).collect();
            out.warnings.push((
                element,
                format!("mimic chain {} resolved to the independent joint '{leader}': multiplier {}, offset {}", path.join(" → "), short(mult), short(off)),
            ));
        }
        out.mimics.push(ResolvedMimic { follower: j.name.clone(), leader: leader.to_string(), multiplier: mult, offset: off });
    }
    Ok(out)
}

/// A number with at most 9 decimals, trailing zeros dropped (`-0.15`, `2`).
fn short(x: f64) -> String {
    let s = format!("{x:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}
