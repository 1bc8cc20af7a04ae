//! Tetrahedral mesh files: Gmsh `.msh` (ASCII 2.2 and 4.1) and TetGen `.node` / `.ele`.
//!
//! Only linear tetrahedra (Gmsh element type 4, TetGen 4-node elements) are read; points, lines
//! and triangles in a Gmsh file (physical groups, boundary elements) are skipped, any other
//! volume element is an error. Node numbers are the file's (Gmsh tags, TetGen numbers with
//! their 0- or 1-based first index); the returned [`TetMesh`] is 0-based and validated
//! ([`TetMesh::validate`]): every error names the file and the line or element at fault.

use crate::error::InputError;
use crate::fem::TetMesh;
use crate::math::Vec3;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Reads a tetrahedral mesh: `.msh` (Gmsh ASCII 2.2 / 4.1), `.node` or `.ele` (TetGen; the
/// other file of the pair is found next to it).
pub fn read_tet_mesh(path: &Path) -> Result<TetMesh, InputError> {
    let file = path.display().to_string();
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    let (mut mesh, elem_file) = match ext.as_str() {
        "msh" => {
            let text = read(path)?;
            (parse_gmsh(&text, &file)?, file.clone())
        }
        "node" | "ele" => {
            let node_path = path.with_extension("node");
            let ele_path = path.with_extension("ele");
            let nodes = read(&node_path)?;
            let eles = read(&ele_path)?;
            (parse_tetgen(&nodes, &node_path, &eles, &ele_path)?, ele_path.display().to_string())
        }
        other => {
            return Err(InputError::invalid(
                &file,
                "format",
                format!("unknown tetrahedral mesh format '.{other}' (use Gmsh .msh (ASCII 2.2 or 4.1) or TetGen .node/.ele)"),
            ))
        }
    };
    use crate::validate::{MAX_FEM_NODES, MAX_FEM_TETS};
    if mesh.nodes.len() > MAX_FEM_NODES || mesh.tets.len() > MAX_FEM_TETS {
        return Err(InputError::invalid(
            &file,
            "size",
            format!("{} nodes and {} tetrahedra, more than the limits of {MAX_FEM_NODES} nodes and {MAX_FEM_TETS} tetrahedra per mesh", mesh.nodes.len(), mesh.tets.len()),
        ));
    }
    mesh.validate().map_err(|d| {
        let element = if d.element == usize::MAX { "nodes".to_string() } else { format!("tetrahedron {} (element {} in file order)", d.element + 1, d.element + 1) };
        InputError::invalid(&elem_file, element, d.reason)
    })?;
    Ok(mesh)
}

fn read(path: &Path) -> Result<String, InputError> {
    crate::validate::read_text_bounded(path, crate::validate::MAX_TEXT_FILE_BYTES).map_err(|reason| InputError::Io { file: path.display().to_string(), reason })
}

/// Line-oriented tokenizer that remembers line numbers (1-based) for messages.
struct Lines<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    file: &'a str,
    line: usize,
    /// The text's length (bytes), to check counts read from headers against.
    len: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, file: &'a str) -> Self {
        Lines { lines: text.lines().enumerate(), file, line: 0, len: text.len() }
    }
    /// Next non-empty line (TetGen `#` comments removed when `comments`).
    fn next(&mut self, comments: bool) -> Option<&'a str> {
        for (i, l) in self.lines.by_ref() {
            self.line = i + 1;
            let l = if comments { l.split('#').next().unwrap_or("") } else { l };
            let l = l.trim();
            if !l.is_empty() {
                return Some(l);
            }
        }
        None
    }
    fn expect(&mut self, comments: bool, what: &str) -> Result<&'a str, InputError> {
        self.next(comments).ok_or_else(|| InputError::Parse { file: self.file.into(), reason: format!("unexpected end of file, expected {what}") })
    }
    /// A count read from a header, checked against the file's size before anything is sized or
    /// looped from it: every counted item takes a line of at least two bytes.
    fn count(&self, n: usize, what: &str) -> Result<usize, InputError> {
        if n > self.len / 2 + 1 {
            return Err(self.err(format!("{what} {n} is more than a file of {} bytes can hold (wrong header or cut file)", self.len)));
        }
        Ok(n)
    }
    fn err(&self, reason: impl std::fmt::Display) -> InputError {
        InputError::invalid(self.file, format!("line {}", self.line), reason.to_string())
    }
    fn next_numbers<T: std::str::FromStr>(&mut self, comments: bool, what: &str, n: usize) -> Result<Vec<T>, InputError> {
        let l = self.expect(comments, what)?;
        self.numbers(l, n, what)
    }
    fn numbers<T: std::str::FromStr>(&self, l: &str, n: usize, what: &str) -> Result<Vec<T>, InputError> {
        let v: Result<Vec<T>, _> = l.split_whitespace().map(str::parse).collect();
        match v {
            Ok(v) if v.len() >= n => Ok(v),
            Ok(v) => Err(self.err(format!("{what}: expected at least {n} numbers, found {}", v.len()))),
            Err(_) => Err(self.err(format!("{what}: not a number in '{l}'"))),
        }
    }
}

fn parse_gmsh(text: &str, file: &str) -> Result<TetMesh, InputError> {
    let mut ls = Lines::new(text, file);
    let mut version = None;
    let mut tags: HashMap<u64, usize> = HashMap::new();
    let mut nodes: Vec<Vec3> = vec![];
    // (element tag, node tags, line)
    let mut raw_tets: Vec<(u64, [u64; 4], usize)> = vec![];
    while let Some(l) = ls.next(false) {
        match l {
            "$MeshFormat" => {
                let f = ls.expect(false, "the $MeshFormat line")?;
                let parts: Vec<&str> = f.split_whitespace().collect();
                if parts.len() < 3 {
                    return Err(ls.err("malformed $MeshFormat"));
                }
                if parts[1] != "0" {
                    return Err(ls.err("binary Gmsh files are not supported: save as ASCII (Mesh.Binary = 0)"));
                }
                version = match parts[0] {
                    "2.2" | "2.1" | "2" | "2.0" => Some(2),
                    "4.1" => Some(4),
                    v => return Err(ls.err(format!("unsupported Gmsh format version {v} (use 2.2 or 4.1 ASCII)"))),
                };
                expect_end(&mut ls, "$EndMeshFormat")?;
            }
            "$Nodes" => {
                let v = version.ok_or_else(|| ls.err("$Nodes before $MeshFormat"))?;
                if v == 2 {
                    let n: Vec<usize> = ls.next_numbers(false, "node count", 1)?;
                    for _ in 0..ls.count(n[0], "node count")? {
                        let l = ls.expect(false, "a node line")?;
                        let x: Vec<f64> = ls.numbers(l, 4, "node")?;
                        add_node(&mut tags, &mut nodes, x[0] as u64, Vec3::new(x[1], x[2], x[3]), &ls)?;
                    }
                } else {
                    let h: Vec<usize> = ls.next_numbers(false, "$Nodes header", 4)?;
                    ls.count(h[1], "$Nodes node count")?;
                    for _ in 0..ls.count(h[0], "$Nodes block count")? {
                        let b: Vec<usize> = ls.next_numbers(false, "entity block header", 4)?;
                        let (parametric, count) = (b[2] != 0, ls.count(b[3], "node block size")?);
                        let mut block_tags = Vec::with_capacity(count);
                        for _ in 0..count {
                            let t: Vec<u64> = ls.next_numbers(false, "node tag", 1)?;
                            block_tags.push(t[0]);
                        }
                        for &t in &block_tags {
                            let x: Vec<f64> = ls.next_numbers(false, "node coordinates", if parametric { 4 } else { 3 })?;
                            add_node(&mut tags, &mut nodes, t, Vec3::new(x[0], x[1], x[2]), &ls)?;
                        }
                    }
                }
                expect_end(&mut ls, "$EndNodes")?;
            }
            "$Elements" => {
                let v = version.ok_or_else(|| ls.err("$Elements before $MeshFormat"))?;
                if v == 2 {
                    let n: Vec<usize> = ls.next_numbers(false, "element count", 1)?;
                    for _ in 0..ls.count(n[0], "element count")? {
                        let l = ls.expect(false, "an element line")?;
                        let x: Vec<u64> = ls.numbers(l, 3, "element")?;
                        let (tag, ty, ntags) = (x[0], x[1], x[2] as usize);
                        let conn = &x[3 + ntags.min(x.len() - 3)..];
                        gmsh_element(ty, tag, conn, &ls, &mut raw_tets)?;
                    }
                } else {
                    let h: Vec<usize> = ls.next_numbers(false, "$Elements header", 4)?;
                    ls.count(h[1], "$Elements element count")?;
                    for _ in 0..ls.count(h[0], "$Elements block count")? {
                        let b: Vec<u64> = ls.next_numbers(false, "entity block header", 4)?;
                        let (ty, count) = (b[2], ls.count(usize::try_from(b[3]).unwrap_or(usize::MAX), "element block size")?);
                        for _ in 0..count {
                            let x: Vec<u64> = ls.next_numbers(false, "element", 1)?;
                            gmsh_element(ty, x[0], &x[1..], &ls, &mut raw_tets)?;
                        }
                    }
                }
                expect_end(&mut ls, "$EndElements")?;
            }
            s if s.starts_with('$') && !s.starts_with("$End") => {
                // skip unknown sections ($Entities, $PhysicalNames, ...)
                let end = format!("$End{}", &s[1..]);
                loop {
                    match ls.next(false) {
                        Some(l) if l == end => break,
                        Some(_) => {}
                        None => return Err(ls.err(format!("section {s} has no {end}"))),
                    }
                }
            }
            other => return Err(ls.err(format!("unexpected '{other}' outside a section"))),
        }
    }
    if version.is_none() {
        return Err(InputError::Parse { file: file.into(), reason: "not a Gmsh file: no $MeshFormat section".into() });
    }
    let mut tets = Vec::with_capacity(raw_tets.len());
    for (tag, conn, line) in raw_tets {
        let mut t = [0usize; 4];
        for (k, c) in conn.iter().enumerate() {
            t[k] = *tags.get(c).ok_or_else(|| {
                InputError::invalid(file, format!("element {tag} (line {line})"), format!("refers to node {c}, which is not in $Nodes"))
            })?;
        }
        tets.push(t);
    }
    Ok(TetMesh { nodes, tets })
}

fn expect_end(ls: &mut Lines, end: &str) -> Result<(), InputError> {
    match ls.next(false) {
        Some(l) if l == end => Ok(()),
        Some(l) => Err(ls.err(format!("expected {end}, found '{l}' (counts in the section header do not match its content)"))),
        None => Err(ls.err(format!("missing {end}"))),
    }
}

fn add_node(tags: &mut HashMap<u64, usize>, nodes: &mut Vec<Vec3>, tag: u64, p: Vec3, ls: &Lines) -> Result<(), InputError> {
    if tags.insert(tag, nodes.len()).is_some() {
        return Err(ls.err(format!("node {tag} is defined twice")));
    }
    nodes.push(node_position(p, tag, ls)?);
    Ok(())
}

/// A node's coordinates, each finite and in [`crate::validate::POSITION_M`].
fn node_position(p: Vec3, tag: u64, ls: &Lines) -> Result<Vec3, InputError> {
    crate::validate::finite3_in(p.into(), crate::validate::POSITION_M, &format!("node {tag} coordinate")).map_err(|r| ls.err(r))?;
    Ok(p)
}

fn gmsh_element(ty: u64, tag: u64, conn: &[u64], ls: &Lines, out: &mut Vec<(u64, [u64; 4], usize)>) -> Result<(), InputError> {
    match ty {
        // point, line, triangle, quad (boundary / physical-group elements): not part of the volume
        15 | 1 | 2 | 3 | 8 | 9 => Ok(()),
        4 => {
            if conn.len() < 4 {
                return Err(ls.err(format!("element {tag}: a tetrahedron needs 4 nodes, found {}", conn.len())));
            }
            out.push((tag, [conn[0], conn[1], conn[2], conn[3]], ls.line));
            Ok(())
        }
        11 => Err(ls.err(format!("element {tag}: quadratic (10-node) tetrahedra are not supported; mesh with order 1"))),
        other => Err(ls.err(format!("element {tag}: element type {other} is not a linear tetrahedron (only type 4 volumes are supported)"))),
    }
}

fn parse_tetgen(node_text: &str, node_path: &Path, ele_text: &str, ele_path: &Path) -> Result<TetMesh, InputError> {
    let nf = node_path.display().to_string();
    let ef = ele_path.display().to_string();
    let mut ls = Lines::new(node_text, &nf);
    let h: Vec<usize> = ls.next_numbers(true, ".node header", 2)?;
    if h[1] != 3 {
        return Err(ls.err(format!("dimension {} (expected 3)", h[1])));
    }
    let mut nodes = Vec::with_capacity(ls.count(h[0], ".node count")?);
    let mut first = None;
    for i in 0..h[0] {
        let x: Vec<f64> = ls.next_numbers(true, "node", 4)?;
        let id = x[0] as i64;
        let base = *first.get_or_insert(id);
        if base != 0 && base != 1 {
            return Err(ls.err(format!("node numbering must start at 0 or 1, starts at {base}")));
        }
        if id != base + i as i64 {
            return Err(ls.err(format!("node {id} out of sequence (expected {})", base + i as i64)));
        }
        nodes.push(node_position(Vec3::new(x[1], x[2], x[3]), id as u64, &ls)?);
    }
    let base = first.unwrap_or(0) as u64;
    let mut ls = Lines::new(ele_text, &ef);
    let h: Vec<usize> = ls.next_numbers(true, ".ele header", 2)?;
    if h[1] != 4 {
        return Err(ls.err(format!("{} nodes per tetrahedron: only linear (4-node) tetrahedra are supported", h[1])));
    }
    let mut tets = Vec::with_capacity(ls.count(h[0], ".ele count")?);
    for _ in 0..h[0] {
        let x: Vec<u64> = ls.next_numbers(true, "tetrahedron", 5)?;
        let mut t = [0usize; 4];
        for k in 0..4 {
            let n = x[1 + k];
            if n < base || (n - base) as usize >= nodes.len() {
                return Err(InputError::invalid(&ef, format!("tetrahedron {} (line {})", x[0], ls.line), format!("refers to node {n}, which is not in {nf}")));
            }
            t[k] = (n - base) as usize;
        }
        tets.push(t);
    }
    Ok(TetMesh { nodes, tets })
}

/// Writes `mesh` as Gmsh ASCII 2.2 (1-based tags, elementary/physical tag 1).
pub fn write_gmsh22(mesh: &TetMesh, path: &Path) -> Result<(), InputError> {
    let mut s = String::from("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n");
    let _ = writeln!(s, "{}", mesh.nodes.len());
    for (i, p) in mesh.nodes.iter().enumerate() {
        let _ = writeln!(s, "{} {:.9} {:.9} {:.9}", i + 1, p.x, p.y, p.z);
    }
    let _ = writeln!(s, "$EndNodes\n$Elements\n{}", mesh.tets.len());
    for (e, t) in mesh.tets.iter().enumerate() {
        let _ = writeln!(s, "{} 4 2 1 1 {} {} {} {}", e + 1, t[0] + 1, t[1] + 1, t[2] + 1, t[3] + 1);
    }
    s.push_str("$EndElements\n");
    write(path, &s)
}

/// Writes `mesh` as Gmsh ASCII 4.1 (one volume entity, 1-based tags).
pub fn write_gmsh41(mesh: &TetMesh, path: &Path) -> Result<(), InputError> {
    let (n, m) = (mesh.nodes.len(), mesh.tets.len());
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n");
    let _ = writeln!(s, "1 {n} 1 {n}\n3 1 0 {n}");
    for i in 0..n {
        let _ = writeln!(s, "{}", i + 1);
    }
    for p in &mesh.nodes {
        let _ = writeln!(s, "{:.9} {:.9} {:.9}", p.x, p.y, p.z);
    }
    let _ = writeln!(s, "$EndNodes\n$Elements\n1 {m} 1 {m}\n3 1 4 {m}");
    for (e, t) in mesh.tets.iter().enumerate() {
        let _ = writeln!(s, "{} {} {} {} {}", e + 1, t[0] + 1, t[1] + 1, t[2] + 1, t[3] + 1);
    }
    s.push_str("$EndElements\n");
    write(path, &s)
}

/// Writes `mesh` as TetGen `.node` + `.ele` next to `path` (1-based numbering).
pub fn write_tetgen(mesh: &TetMesh, path: &Path) -> Result<(), InputError> {
    let mut s = format!("# written by contact_sim\n{} 3 0 0\n", mesh.nodes.len());
    for (i, p) in mesh.nodes.iter().enumerate() {
        let _ = writeln!(s, "{} {:.9} {:.9} {:.9}", i + 1, p.x, p.y, p.z);
    }
    write(&path.with_extension("node"), &s)?;
    let mut s = format!("# written by contact_sim\n{} 4 0\n", mesh.tets.len());
    for (e, t) in mesh.tets.iter().enumerate() {
        let _ = writeln!(s, "{} {} {} {} {}", e + 1, t[0] + 1, t[1] + 1, t[2] + 1, t[3] + 1);
    }
    write(&path.with_extension("ele"), &s)
}

fn write(path: &Path, s: &str) -> Result<(), InputError> {
    std::fs::write(path, s).map_err(|e| InputError::Io { file: path.display().to_string(), reason: format!("cannot write: {e}") })
}

/// The path of the `.ele` file paired with a TetGen `.node` file (and vice versa).
pub fn tetgen_pair(path: &Path) -> (PathBuf, PathBuf) {
    (path.with_extension("node"), path.with_extension("ele"))
}
