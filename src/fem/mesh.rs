//! Tetrahedral meshes: storage, validation, surface extraction and the generators behind the
//! shipped example assets.
//!
//! Orientation convention (Gmsh's): a tetrahedron `[a, b, c, d]` is positively oriented when its
//! signed volume `V = (b − a)·((c − a) × (d − a)) / 6` is positive. Node coordinates are in metres
//! in the mesh's own frame; the scene's pose maps them to the world.

use crate::math::Vec3;

/// A linear (4-node) tetrahedral mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TetMesh {
    /// Node positions (m, mesh frame).
    pub nodes: Vec<Vec3>,
    /// Tetrahedra as 0-based node indices, positively oriented.
    pub tets: Vec<[usize; 4]>,
}

/// A problem found by [`TetMesh::validate`]: the 0-based element index and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshDefect {
    /// 0-based element index (in file order).
    pub element: usize,
    /// Description.
    pub reason: String,
}

/// Signed volume of the tetrahedron `(a, b, c, d)` (m³), positive for the Gmsh orientation.
pub fn signed_volume(a: &Vec3, b: &Vec3, c: &Vec3, d: &Vec3) -> f64 {
    (b - a).dot(&(c - a).cross(&(d - a))) / 6.0
}

impl TetMesh {
    /// Signed volume of tetrahedron `e` (m³).
    pub fn tet_volume(&self, e: usize) -> f64 {
        let [a, b, c, d] = self.tets[e];
        signed_volume(&self.nodes[a], &self.nodes[b], &self.nodes[c], &self.nodes[d])
    }

    /// Total volume (m³).
    pub fn volume(&self) -> f64 {
        (0..self.tets.len()).map(|e| self.tet_volume(e)).sum()
    }

    /// Checks references and element shapes. A tetrahedron is *degenerate* when
    /// `|V| ≤ 1e-9 · ℓ³` (ℓ its longest edge: flat or collapsed), *inverted* when `V < 0`.
    /// When every element is negatively oriented (a file using the opposite node-order
    /// convention), they are all flipped instead (`flipped = true` in the result); a mix of
    /// orientations is an error naming the minority elements' first one.
    pub fn validate(&mut self) -> Result<bool, MeshDefect> {
        if self.tets.is_empty() {
            return Err(MeshDefect { element: 0, reason: "the mesh has no tetrahedra".into() });
        }
        let n = self.nodes.len();
        for (e, t) in self.tets.iter().enumerate() {
            for &i in t {
                if i >= n {
                    return Err(MeshDefect { element: e, reason: format!("refers to node {} which does not exist ({} nodes)", i, n) });
                }
            }
            for a in 0..4 {
                for b in a + 1..4 {
                    if t[a] == t[b] {
                        return Err(MeshDefect { element: e, reason: format!("degenerate: node {} appears twice", t[a]) });
                    }
                }
            }
        }
        for (i, p) in self.nodes.iter().enumerate() {
            if !p.iter().all(|x| x.is_finite()) {
                return Err(MeshDefect { element: usize::MAX, reason: format!("node {i} has a non-finite coordinate") });
            }
        }
        let mut negative = 0usize;
        let mut first_negative = None;
        let mut first_positive = None;
        for e in 0..self.tets.len() {
            let t = self.tets[e];
            let v = self.tet_volume(e);
            let mut l: f64 = 0.0;
            for a in 0..4 {
                for b in a + 1..4 {
                    l = l.max((self.nodes[t[a]] - self.nodes[t[b]]).norm());
                }
            }
            if v.abs() <= 1e-9 * l * l * l || l == 0.0 {
                return Err(MeshDefect { element: e, reason: format!("degenerate tetrahedron (volume {v:.3e} m³, longest edge {l:.3e} m)") });
            }
            if v < 0.0 {
                negative += 1;
                first_negative.get_or_insert(e);
            } else {
                first_positive.get_or_insert(e);
            }
        }
        if negative == self.tets.len() {
            for t in &mut self.tets {
                t.swap(2, 3);
            }
            return Ok(true);
        }
        if negative > 0 {
            let (e, sign) = if negative * 2 <= self.tets.len() { (first_negative.unwrap(), "negative") } else { (first_positive.unwrap(), "positive") };
            return Err(MeshDefect {
                element: e,
                reason: format!("inverted tetrahedron ({sign} volume {:.3e} m³ while most elements have the opposite sign)", self.tet_volume(e)),
            });
        }
        Ok(false)
    }

    /// Boundary triangles: faces that belong to exactly one tetrahedron, oriented with the
    /// outward normal (counter-clockwise seen from outside).
    pub fn surface_triangles(&self) -> Vec<[usize; 3]> {
        let mut faces: Vec<([usize; 3], [usize; 3])> = Vec::with_capacity(4 * self.tets.len());
        for t in &self.tets {
            // faces opposite each vertex, ordered so the normal points away from it
            for f in [[t[1], t[2], t[3]], [t[0], t[3], t[2]], [t[0], t[1], t[3]], [t[0], t[2], t[1]]] {
                let mut key = f;
                key.sort_unstable();
                faces.push((key, f));
            }
        }
        faces.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = vec![];
        let mut i = 0;
        while i < faces.len() {
            let mut j = i + 1;
            while j < faces.len() && faces[j].0 == faces[i].0 {
                j += 1;
            }
            if j - i == 1 {
                out.push(faces[i].1);
            }
            i = j;
        }
        out
    }

    /// Sorted indices of the nodes on the boundary.
    pub fn surface_nodes(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.surface_triangles().iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// A box `[0, size]` split into `divisions` hexahedral cells, each cut into 6 tetrahedra
    /// along its main diagonal (Kuhn/Freudenthal split: conforming across cells).
    pub fn box_grid(size: [f64; 3], divisions: [usize; 3]) -> TetMesh {
        let [nx, ny, nz] = divisions;
        let id = |i: usize, j: usize, k: usize| (k * (ny + 1) + j) * (nx + 1) + i;
        let mut nodes = Vec::with_capacity((nx + 1) * (ny + 1) * (nz + 1));
        for k in 0..=nz {
            for j in 0..=ny {
                for i in 0..=nx {
                    nodes.push(Vec3::new(size[0] * i as f64 / nx as f64, size[1] * j as f64 / ny as f64, size[2] * k as f64 / nz as f64));
                }
            }
        }
        let mut tets = Vec::with_capacity(6 * nx * ny * nz);
        const PERMS: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    for p in PERMS {
                        let mut c = [i, j, k];
                        let mut t = [id(c[0], c[1], c[2]); 4];
                        for (s, &axis) in p.iter().enumerate() {
                            c[axis] += 1;
                            t[s + 1] = id(c[0], c[1], c[2]);
                        }
                        if signed_volume(&nodes[t[0]], &nodes[t[1]], &nodes[t[2]], &nodes[t[3]]) < 0.0 {
                            t.swap(2, 3);
                        }
                        tets.push(t);
                    }
                }
            }
        }
        TetMesh { nodes, tets }
    }

    /// A ball of `radius` centred at the origin: a `divisions³` cube grid mapped radially onto
    /// the sphere (`x ↦ r ‖x‖_∞ / ‖x‖₂ · x`), which keeps the grid's connectivity.
    pub fn ball(radius: f64, divisions: usize) -> TetMesh {
        let mut m = TetMesh::box_grid([2.0, 2.0, 2.0], [divisions; 3]);
        for p in &mut m.nodes {
            let x = *p - Vec3::new(1.0, 1.0, 1.0);
            let inf = x.amax();
            let two = x.norm();
            *p = if two > 0.0 { x * (radius * inf / two) } else { x };
        }
        for e in 0..m.tets.len() {
            if m.tet_volume(e) < 0.0 {
                m.tets[e].swap(2, 3);
            }
        }
        m
    }

    /// Translates every node by `offset` (m).
    pub fn translate(&mut self, offset: Vec3) {
        for p in &mut self.nodes {
            *p += offset;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_grid_volume_and_surface() {
        let mut m = TetMesh::box_grid([0.3, 0.2, 0.1], [3, 2, 2]);
        assert!(!m.validate().unwrap());
        assert!((m.volume() - 0.006).abs() < 1e-15);
        // boundary: 2 triangles per boundary cell face
        let faces = 2 * (3 * 2 + 3 * 2 + 2 * 2) * 2;
        assert_eq!(m.surface_triangles().len(), faces);
        // outward normals: the signed volume of the closed surface equals the volume
        let s: f64 = m.surface_triangles().iter().map(|f| m.nodes[f[0]].dot(&m.nodes[f[1]].cross(&m.nodes[f[2]])) / 6.0).sum();
        assert!((s - 0.006).abs() < 1e-12);
        assert_eq!(m.surface_nodes().len(), 4 * 3 * 3 - 2); // all but the 2 interior nodes
    }

    #[test]
    fn ball_is_valid_and_close_to_the_sphere_volume() {
        let mut m = TetMesh::ball(0.05, 8);
        assert!(!m.validate().unwrap());
        let exact = 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3);
        assert!((m.volume() - exact).abs() / exact < 0.05, "{} vs {exact}", m.volume());
    }

    #[test]
    fn all_negative_is_flipped_mixed_is_an_error() {
        let mut m = TetMesh::box_grid([1.0, 1.0, 1.0], [1, 1, 1]);
        for t in &mut m.tets {
            t.swap(0, 1);
        }
        assert!(m.validate().unwrap());
        assert!(m.volume() > 0.0);
        m.tets[3].swap(0, 1);
        let e = m.validate().unwrap_err();
        assert_eq!(e.element, 3);
        assert!(e.reason.contains("inverted"));
    }
}
