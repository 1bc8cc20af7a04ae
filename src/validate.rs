//! Range checks for the numbers read from input files (scene YAML, URDF, tet meshes).
//!
//! Every number is checked where it is read, with [`finite_in`] (one value) or [`finite3_in`]
//! (a vector): NaN, ±∞ and values outside the [`Range`] of their kind are refused with a reason
//! naming the field (`<limit lower> is NaN`, `mass_kg = 1e300 kg is outside the accepted range
//! [0, 1e9] kg`); the caller adds the file and the element ([`crate::error::InputError`]).
//!
//! The ranges are wide: they accept every physical robot, object or scene and refuse only values
//! that overflow the arithmetic or mean a typo (a mass of 10³⁰⁰ kg, a position 10¹⁰ m away).
//! `docs/configuration.md` lists them.

use std::fmt;

/// An accepted closed interval for one kind of quantity, with its unit (for messages).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Smallest accepted value.
    pub min: f64,
    /// Largest accepted value.
    pub max: f64,
    /// Unit, for messages (`kg`, `m`, `rad`, empty for dimensionless).
    pub unit: &'static str,
}

impl Range {
    const fn new(min: f64, max: f64, unit: &'static str) -> Self {
        Range { min, max, unit }
    }

    /// `true` when `x` is finite and inside the range.
    pub fn contains(&self, x: f64) -> bool {
        x.is_finite() && x >= self.min && x <= self.max
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", show(self.min), show(self.max))?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// Mass of a body or link (kg). Objects that move must be heavier than 0.
pub const MASS_KG: Range = Range::new(0.0, 1e9, "kg");
/// Density of an object (kg/m³): osmium is 2.26·10⁴.
pub const DENSITY_KG_M3: Range = Range::new(0.0, 1e5, "kg/m³");
/// An entry of a rotational inertia matrix (kg·m²).
pub const INERTIA_KG_M2: Range = Range::new(-1e12, 1e12, "kg·m²");
/// A coordinate of a position or an offset (m): 1000 km from the origin.
pub const POSITION_M: Range = Range::new(-1e6, 1e6, "m");
/// A size (length, radius, edge) of a collision shape (m).
pub const SIZE_M: Range = Range::new(0.0, 1e4, "m");
/// An angle of an orientation given as roll-pitch-yaw (rad).
pub const ANGLE_RAD: Range = Range::new(-1e3, 1e3, "rad");
/// A component of an initial linear velocity (m/s).
pub const LINEAR_VELOCITY_M_S: Range = Range::new(-1e4, 1e4, "m/s");
/// A component of an initial angular velocity (rad/s).
pub const ANGULAR_VELOCITY_RAD_S: Range = Range::new(-1e4, 1e4, "rad/s");
/// A joint position: target, initial position, limit, mimic offset (rad or m).
pub const JOINT_POSITION: Range = Range::new(-1e6, 1e6, "rad or m");
/// A joint effort: scripted feed-forward effort (N·m or N).
pub const JOINT_EFFORT: Range = Range::new(-1e9, 1e9, "N·m or N");
/// A joint's position limit (rad or m): any finite value (a limit beyond the joint's reach is
/// never active).
pub const JOINT_POSITION_LIMIT: Range = Range::new(f64::MIN, f64::MAX, "rad or m");
/// A joint's effort or velocity limit in a URDF (N·m or N, rad/s or m/s); 0 and +∞ mean
/// unlimited, so only NaN and negative values are refused.
pub const JOINT_LIMIT: Range = Range::new(0.0, f64::INFINITY, "");
/// A PD gain `kp` (N·m/rad or N/m) or `kd` (N·m·s/rad or N·s/m), or a joint's damping or
/// friction.
pub const GAIN: Range = Range::new(0.0, 1e12, "");
/// Transport delay of joint commands (s).
pub const COMMAND_DELAY_S: Range = Range::new(0.0, 1.0, "s");
/// Joint velocity (`model --v`): beyond it the bias terms overflow.
pub const JOINT_VELOCITY: Range = Range::new(-1e6, 1e6, "rad/s or m/s");
/// Joint acceleration (`model --a`).
pub const JOINT_ACCELERATION: Range = Range::new(-1e9, 1e9, "rad/s² or m/s²");
/// Armature (reflected drive inertia) of a joint.
pub const ARMATURE: Range = Range::new(0.0, 1e6, "kg·m² or kg");
/// A mimic multiplier (dimensionless).
pub const MULTIPLIER: Range = Range::new(-1e3, 1e3, "");
/// A component of a direction (joint axis, incline axis) before normalisation.
pub const DIRECTION: Range = Range::new(-1e6, 1e6, "");
/// A time in a command script (s).
pub const SCRIPT_TIME_S: Range = Range::new(0.0, 1e9, "s");
/// The ground's incline (deg).
pub const INCLINE_DEG: Range = Range::new(-90.0, 90.0, "deg");
/// A contact distance: `contact.margin_m`, `contact.slop_m` (m).
pub const CONTACT_DISTANCE_M: Range = Range::new(0.0, 1.0, "m");
/// `contact.max_depenetration_speed_m_s` (m/s); 0 turns the position correction off.
pub const DEPENETRATION_SPEED_M_S: Range = Range::new(0.0, 1e4, "m/s");
/// Mass ratio between two bodies that can touch above which loading warns: the iterative
/// contact solvers converge slowly or not at all past it (light bodies are thrown, stacks under
/// a heavy body sink), so results are not to be trusted. A body welded to others counts with
/// their mass; bodies fixed to the world and the ground do not count.
pub const MASS_RATIO_WARN: f64 = 1e4;
/// The time step (s).
pub const TIMESTEP_S: Range = Range::new(1e-7, 1.0, "s");
/// A component of gravity (m/s²).
pub const GRAVITY_M_S2: Range = Range::new(-1e3, 1e3, "m/s²");

/// A number for messages and tables: scientific notation for very large or very small
/// magnitudes (`1e300`, not 301 digits), plain otherwise.
pub fn show(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.abs() >= 1e6 || (x != 0.0 && x.abs() < 1e-4) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `Ok(value)` when `value` is in `range` (NaN and −∞ never are; +∞ only when the range's
/// maximum is +∞); otherwise the reason, naming the field `what`.
pub fn finite_in(value: f64, range: Range, what: &str) -> Result<f64, String> {
    let in_range = !value.is_nan() && value >= range.min && value <= range.max && (value.is_finite() || range.max == f64::INFINITY && value > 0.0);
    if in_range {
        return Ok(value);
    }
    let unit = if range.unit.is_empty() { String::new() } else { format!(" {}", range.unit) };
    Err(if value.is_nan() {
        format!("{what} is NaN")
    } else if value.is_infinite() {
        format!("{what} is {}infinite", if value < 0.0 { "negative " } else { "" })
    } else {
        format!("{what} = {}{unit} is outside the accepted range {range}", show(value))
    })
}

/// [`finite_in`] for each component of a vector; the field is named `what[i]`.
pub fn finite3_in(v: [f64; 3], range: Range, what: &str) -> Result<[f64; 3], String> {
    for (i, &x) in v.iter().enumerate() {
        finite_in(x, range, &format!("{what}[{i}]"))?;
    }
    Ok(v)
}

/// A position (m) and roll-pitch-yaw orientation (rad), each checked: the pose of an object,
/// a base, a URDF `<origin>`; `names` names the two fields (`["position", "rpy"]`).
pub fn pose_in_range(xyz: [f64; 3], rpy: [f64; 3], names: [&str; 2]) -> Result<(), String> {
    finite3_in(xyz, POSITION_M, names[0])?;
    finite3_in(rpy, ANGLE_RAD, names[1])?;
    Ok(())
}

/// The names of a URDF `<origin>`'s fields, for [`pose_in_range`].
pub const URDF_ORIGIN: [&str; 2] = ["<origin xyz>", "<origin rpy>"];

/// A direction: finite components in [`DIRECTION`] and a non-zero length, so that it normalises
/// to a finite unit vector.
pub fn direction(v: [f64; 3], what: &str) -> Result<crate::math::Vec3, String> {
    finite3_in(v, DIRECTION, what)?;
    let v = crate::math::Vec3::from(v);
    let n = v.norm();
    if !(n > 1e-9) {
        return Err(format!("{what} must be a non-zero vector, got [{}, {}, {}]", show(v.x), show(v.y), show(v.z)));
    }
    Ok(v / n)
}

// ---------------------------------------------------------------------------------------------
// input files and capacities
// ---------------------------------------------------------------------------------------------

/// Young's modulus of a deformable (Pa): above zero, at most 10¹² (diamond is 1.2·10¹²; the
/// FEM step's conditioning grows with E·Δt²/(ρ·h²)).
pub const YOUNGS_MODULUS_PA: Range = Range::new(0.0, 1e12, "Pa");
/// Rayleigh mass-proportional damping α (1/s).
pub const RAYLEIGH_MASS_1_S: Range = Range::new(0.0, 1e4, "1/s");
/// Rayleigh stiffness-proportional damping β (s).
pub const RAYLEIGH_STIFFNESS_S: Range = Range::new(0.0, 1e2, "s");
/// Friction coefficient μ (dimensionless): a material's, a pair's, a deformable's. 10 is far
/// above any measured pair (rubber on rough concrete is about 1.2); beyond it nothing slides.
pub const FRICTION: Range = Range::new(0.0, 10.0, "");

/// Largest URDF, scene or tet-mesh text file read (bytes): 256 MiB, far above any real robot
/// description (the largest URDF of our corpus is a few hundred kB).
pub const MAX_TEXT_FILE_BYTES: u64 = 256 << 20;

/// Largest collision-mesh file read (bytes): 512 MiB.
pub const MAX_MESH_FILE_BYTES: u64 = 512 << 20;

/// Largest single bag (MCAP) file read (bytes): 16 GiB. The whole file is held in memory.
pub const MAX_BAG_FILE_BYTES: u64 = 16 << 30;

/// Deepest element nesting accepted in XML input (URDF, Collada). A URDF is about six levels
/// deep; the parsers recurse once per level, so unbounded nesting would overflow the stack.
pub const MAX_XML_DEPTH: usize = 256;

/// Largest `contact.max_contacts` (contacts per step). The step's buffers are sized from it at
/// load time, the Delassus matrix with the square of the rows (up to 4 per contact): 4 096
/// contacts is 0.5 GiB of it, and far above what one step solves in real time.
pub const MAX_CONTACTS: usize = 4096;

/// Most velocity coordinates (degrees of freedom) of a scene's rigid bodies: robots' joints plus
/// 6 per free object (and per floating base). The step holds a dense nv × nv matrix.
pub const MAX_DOF: usize = 4096;

/// Longest chain of joint coordinates from a root to a link. The mass matrix's factorization
/// (LᵀL over the tree) costs the chain's length cubed per step: a 1 024-coordinate chain takes
/// about 0.06 s per step, a 5 000-coordinate one 15 s.
pub const MAX_CHAIN_DOF: usize = 1024;

/// Most nodes of one tetrahedral mesh (3 coordinates each; the benchmarks' largest has 10 000).
pub const MAX_FEM_NODES: usize = 200_000;

/// Most tetrahedra of one tetrahedral mesh.
pub const MAX_FEM_TETS: usize = 1_000_000;

/// Most bodies (links, objects and the world) of a scene.
pub const MAX_BODIES: usize = 10_000;

/// Most candidate collision pairs (pairs of collision shapes that may touch).
pub const MAX_COLLISION_PAIRS: usize = 1_000_000;

/// Most steps one `contact_sim run` or `replay` may simulate (10¹⁰: about 115 days of simulated
/// time at 1 kHz).
pub const MAX_RUN_STEPS: u64 = 10_000_000_000;

/// Largest estimated size of the step's dense buffers (bytes): 2 GiB. See
/// [`crate::model::Model::dense_step_bytes`].
pub const MAX_STEP_MATRIX_BYTES: u64 = 2 << 30;

/// Longest chain of mimic joints (a joint mimicking a joint that mimics another, …) resolved to
/// its independent joint. Real robots have chains of one or two.
pub const MAX_MIMIC_CHAIN: usize = 64;

/// Largest `contact.max_points_per_pair` (contact points kept per pair of shapes).
pub const MAX_POINTS_PER_PAIR: usize = 1024;

/// Reads a whole input file of at most `max_bytes` bytes. Refuses paths that are not regular
/// files after following symlinks (`/dev/zero`, a FIFO, a directory), files larger than the
/// limit, and files that grow past it while being read. The error is the reason, without the
/// file name (the caller adds it).
pub fn read_bounded(path: &std::path::Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() { "a directory" } else { "a device, pipe or socket" };
        return Err(format!("not a regular file ({kind}); refused"));
    }
    if meta.len() > max_bytes {
        return Err(format!("file is {} bytes, more than the limit of {max_bytes} bytes", meta.len()));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("file grew past the limit of {max_bytes} bytes while being read"));
    }
    Ok(bytes)
}

/// [`read_bounded`] for UTF-8 text.
pub fn read_text_bounded(path: &std::path::Path, max_bytes: u64) -> Result<String, String> {
    String::from_utf8(read_bounded(path, max_bytes)?).map_err(|e| format!("not UTF-8 text: {}", e.utf8_error()))
}

/// Most attributes accepted on one XML element. A URDF element has at most a handful; the XML
/// parser checks attribute names for duplicates in quadratic time, so 100 000 attributes on one
/// element would take tens of seconds.
pub const MAX_XML_ATTRIBUTES: usize = 256;

/// Checks the shape of XML `text` before it is parsed, without parsing it (comments, CDATA
/// sections, processing instructions, declarations and quoted attribute values are skipped):
/// no element nested deeper than `max_depth`, no element with more than [`MAX_XML_ATTRIBUTES`]
/// attributes, and one root element (a second one, which the parser would silently drop, is
/// refused). Other malformed XML passes: the parser reports it. The error names the line.
pub fn xml_shape_within(text: &str, max_depth: usize) -> Result<(), String> {
    let b = text.as_bytes();
    let (mut i, mut depth, mut line) = (0usize, 0usize, 1usize);
    let mut root_seen = false;
    let skip_to = |from: usize, end: &[u8]| -> usize { b[from..].windows(end.len()).position(|w| w == end).map_or(b.len(), |p| from + p + end.len()) };
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'<' => {
                let rest = &b[i..];
                let end = if rest.starts_with(b"<!--") {
                    skip_to(i + 4, b"-->")
                } else if rest.starts_with(b"<![CDATA[") {
                    skip_to(i + 9, b"]]>")
                } else if rest.starts_with(b"<?") {
                    skip_to(i + 2, b"?>")
                } else {
                    // a tag: to its '>' outside quotes
                    let mut j = i + 1;
                    let mut quote = 0u8;
                    let mut attributes = 0usize;
                    while j < b.len() && !(quote == 0 && b[j] == b'>') {
                        if quote == 0 && (b[j] == b'"' || b[j] == b'\'') {
                            quote = b[j];
                        } else if b[j] == quote {
                            quote = 0;
                        } else if quote == 0 && b[j] == b'=' {
                            attributes += 1;
                        }
                        j += 1;
                    }
                    let is_start = !rest.starts_with(b"</") && !rest.starts_with(b"<!");
                    if is_start && attributes > MAX_XML_ATTRIBUTES {
                        return Err(format!("an element with {attributes} attributes (line {line}), more than the limit of {MAX_XML_ATTRIBUTES}"));
                    }
                    if is_start && depth == 0 {
                        if root_seen {
                            return Err(format!("a second root element (line {line}): an XML document has exactly one"));
                        }
                        root_seen = true;
                    }
                    if rest.starts_with(b"</") {
                        depth = depth.saturating_sub(1);
                    } else if is_start && !(j > i + 1 && j < b.len() && b[j - 1] == b'/') {
                        depth += 1;
                        if depth > max_depth {
                            return Err(format!("elements nested deeper than {max_depth} levels (line {line})"));
                        }
                    }
                    (j + 1).min(b.len())
                };
                line += b[i..end].iter().filter(|&&c| c == b'\n').count();
                i = end;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_nan_infinities_and_out_of_range_values_naming_the_field() {
        assert_eq!(finite_in(2.0, MASS_KG, "mass_kg"), Ok(2.0));
        assert_eq!(finite_in(f64::NAN, MASS_KG, "mass_kg").unwrap_err(), "mass_kg is NaN");
        assert_eq!(finite_in(f64::NEG_INFINITY, JOINT_LIMIT, "<limit effort>").unwrap_err(), "<limit effort> is negative infinite");
        assert_eq!(finite_in(f64::INFINITY, JOINT_LIMIT, "<limit effort>"), Ok(f64::INFINITY));
        assert!(finite_in(f64::INFINITY, MASS_KG, "m").is_err());
        let e = finite_in(1e300, MASS_KG, "mass_kg").unwrap_err();
        assert!(e.contains("1e300 kg") && e.contains("[0, 1e9] kg"), "{e}");
        assert!(finite3_in([0.0, f64::NAN, 0.0], POSITION_M, "position").unwrap_err().starts_with("position[1] is NaN"));
    }

    #[test]
    fn directions_that_overflow_or_vanish_are_refused() {
        assert!(direction([1e308, 1e308, 0.0], "axis").is_err());
        assert!(direction([0.0, 0.0, 0.0], "axis").unwrap_err().contains("non-zero"));
        let d = direction([0.0, 3.0, 4.0], "axis").unwrap();
        assert!((d.norm() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn xml_depth_counts_elements_only() {
        let ok = "<?xml version=\"1.0\"?><!-- <a><b><c> --><robot a=\"<x>\"><link/><link><![CDATA[<q><q>]]></link></robot>";
        assert_eq!(xml_shape_within(ok, 2), Ok(()));
        assert!(xml_shape_within(ok, 1).unwrap_err().contains("(line 1)"));
        let deep = format!("<robot>\n{}{}</robot>", "<visual>".repeat(300), "</visual>".repeat(300));
        assert_eq!(xml_shape_within(&deep, MAX_XML_DEPTH).unwrap_err(), "elements nested deeper than 256 levels (line 2)");
    }

    #[test]
    fn xml_with_two_roots_or_too_many_attributes_is_refused_before_parsing() {
        let two = "<?xml version=\"1.0\"?>\n<robot name=\"a\"><link name=\"l\"/></robot>\n<robot name=\"b\"/>";
        assert!(xml_shape_within(two, MAX_XML_DEPTH).unwrap_err().starts_with("a second root element (line 3)"));
        let many: String = (0..MAX_XML_ATTRIBUTES + 1).map(|i| format!(" a{i}=\"1\"")).collect();
        let e = xml_shape_within(&format!("<robot{many}/>"), MAX_XML_DEPTH).unwrap_err();
        assert_eq!(e, format!("an element with {} attributes (line 1), more than the limit of {MAX_XML_ATTRIBUTES}", MAX_XML_ATTRIBUTES + 1));
        let fine: String = (0..MAX_XML_ATTRIBUTES).map(|i| format!(" a{i}=\"x=y\"")).collect();
        assert_eq!(xml_shape_within(&format!("<robot{fine}/>"), MAX_XML_DEPTH), Ok(()));
    }
}
