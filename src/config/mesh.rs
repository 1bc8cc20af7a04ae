//! Triangle-mesh files for collision geometry: STL (ASCII or binary), Wavefront OBJ and Collada
//! (`.dae`), read with the `mesh-loader` crate. Collada files are honoured as authored: the
//! `<unit meter="...">` scale (applied by the reader) and the `<up_axis>` (rotated here to the
//! URDF's Z-up convention).

use crate::math::{Mat3, Vec3};
use std::path::Path;

/// Collada's `<up_axis>`: which file axis points up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpAxis {
    /// X up (COLLADA: right −Y, up +X, in +Z).
    X,
    /// Y up (right +X, up +Y, in +Z).
    Y,
    /// Z up (right +X, up +Z, in −Y): the URDF convention, no rotation.
    Z,
}

impl UpAxis {
    /// The rotation taking file coordinates to Z-up coordinates (right → +X, up → +Z).
    pub fn to_z_up(self) -> Mat3 {
        match self {
            // file (x, y, z) → (−y, −z, x)
            UpAxis::X => Mat3::new(0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0),
            // file (x, y, z) → (x, −z, y): +90° about x
            UpAxis::Y => Mat3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0),
            UpAxis::Z => Mat3::identity(),
        }
    }
}

/// The `<asset><up_axis>` of Collada text (Y up when absent, as the COLLADA specification says).
pub fn collada_up_axis(text: &str) -> Result<UpAxis, String> {
    crate::validate::xml_shape_within(text, crate::validate::MAX_XML_DEPTH)?;
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    let asset = doc.root_element().children().find(|n| n.is_element() && n.tag_name().name() == "asset");
    let up = asset.and_then(|a| a.children().find(|n| n.is_element() && n.tag_name().name() == "up_axis")).and_then(|n| n.text()).map(str::trim);
    match up {
        None | Some("Y_UP") => Ok(UpAxis::Y),
        Some("Z_UP") => Ok(UpAxis::Z),
        Some("X_UP") => Ok(UpAxis::X),
        Some(other) => Err(format!("unknown <up_axis> '{other}' (expected X_UP, Y_UP or Z_UP)")),
    }
}

/// Reads the vertex positions (m, Z up) of an STL, OBJ or Collada mesh, and for Collada the up
/// axis it was rotated from.
pub fn read_mesh_vertices(path: &Path) -> Result<(Vec<Vec3>, Option<UpAxis>), String> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    let bytes: Vec<u8> = crate::validate::read_bounded(path, crate::validate::MAX_MESH_FILE_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
    let loader = mesh_loader::Loader::default();
    // a binary STL whose 80-byte header starts with "solid" (common exporter output) is taken for
    // ASCII by the reader: blank the header of a file whose size is that of a binary STL
    fn binary_stl_header_fixed(mut b: Vec<u8>) -> Vec<u8> {
        if b.len() >= 84 && b.starts_with(b"solid") {
            let n = u32::from_le_bytes([b[80], b[81], b[82], b[83]]) as usize;
            if 84 + 50 * n == b.len() {
                b[..80].fill(b' ');
            }
        }
        b
    }
    let (scene, up) = match ext.as_str() {
        "stl" => (loader.load_stl_from_slice(&binary_stl_header_fixed(bytes), path).map_err(|e| format!("invalid STL {}: {e}", path.display()))?, None),
        "obj" => (loader.load_obj_from_slice(&bytes, path).map_err(|e| format!("invalid OBJ {}: {e}", path.display()))?, None),
        "dae" => {
            let text = std::str::from_utf8(&bytes).map_err(|e| format!("invalid Collada {}: not UTF-8: {e}", path.display()))?;
            let up = collada_up_axis(text).map_err(|e| format!("invalid Collada {}: {e}", path.display()))?;
            (loader.load_collada_from_slice(&bytes, path).map_err(|e| format!("invalid Collada {}: {e}", path.display()))?, Some(up))
        }
        other => return Err(format!("unsupported mesh format '.{other}' of {} (use STL, OBJ or Collada .dae)", path.display())),
    };
    // NaN, ∞ and absurd coordinates (3·10³⁸ fits an STL's f32) would poison the hull and the
    // inertia: refused naming the vertex
    for (i, v) in scene.meshes.iter().flat_map(|m| m.vertices.iter()).enumerate() {
        let v = [v[0] as f64, v[1] as f64, v[2] as f64];
        crate::validate::finite3_in(v, crate::validate::POSITION_M, &format!("vertex {i}")).map_err(|e| format!("invalid mesh {}: {e} (file units, before any scale)", path.display()))?;
    }
    let r = up.map(UpAxis::to_z_up).unwrap_or_else(Mat3::identity);
    let pts = scene.meshes.iter().flat_map(|m| m.vertices.iter()).map(|v| r * Vec3::new(v[0] as f64, v[1] as f64, v[2] as f64)).collect();
    Ok((pts, up))
}
