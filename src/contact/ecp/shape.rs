//! Convex shapes as intersections of smooth convex inequalities `f_i(η) ≤ 0` in the shape's own
//! frame (η: coordinates in the geometry frame, m). Every inequality is scaled so that its
//! gradient has unit length on the surface: `f_i` is then a first-order signed distance (m).

use super::dual::{Dual, V3};
use crate::math::{Mat3, Vec3};

/// Most inequalities of a supported shape (the box's six faces).
pub const MAX_INEQUALITIES: usize = 6;

/// A convex shape handled by the equivalent-contact-point step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConvexShape {
    /// Box centred on the geometry origin: six faces `±η_k − h_k ≤ 0`.
    Box {
        /// Half extents along the geometry axes (m).
        half_extents_m: [f64; 3],
    },
    /// Sphere centred on the geometry origin: `(η·η − ρ²)/(2ρ) ≤ 0`.
    Sphere {
        /// Radius ρ (m).
        radius_m: f64,
    },
    /// Cylinder along the geometry z axis: side `(η_x² + η_y² − ρ²)/(2ρ) ≤ 0`, caps `±η_z − ℓ ≤ 0`.
    Cylinder {
        /// Radius ρ (m).
        radius_m: f64,
        /// Half length ℓ (m).
        half_length_m: f64,
    },
}

impl ConvexShape {
    /// Number of inequalities (box 6, sphere 1, cylinder 3).
    pub fn inequality_count(&self) -> usize {
        match self {
            ConvexShape::Box { .. } => 6,
            ConvexShape::Sphere { .. } => 1,
            ConvexShape::Cylinder { .. } => 3,
        }
    }

    /// `Some((k, s))` when inequality `i` has the constant gradient `s e_k` (`s = ±1`): a box face,
    /// a cylinder cap.
    #[inline]
    pub fn constant_gradient(&self, i: usize) -> Option<(usize, f64)> {
        match (self, i) {
            (ConvexShape::Box { .. }, _) => Some((i / 2, if i % 2 == 0 { 1.0 } else { -1.0 })),
            (ConvexShape::Cylinder { .. }, 1) => Some((2, 1.0)),
            (ConvexShape::Cylinder { .. }, 2) => Some((2, -1.0)),
            _ => None,
        }
    }

    /// `f_i(η)` (m) and its gradient with respect to η (unit length on the surface).
    /// Box inequality `i` is face `±e_{i/2}` (even `i`: +, odd: −); cylinder 0 is the side, 1 the
    /// `+z` cap, 2 the `−z` cap.
    #[inline]
    pub fn inequality<const N: usize>(&self, i: usize, eta: &V3<N>) -> (Dual<N>, V3<N>) {
        let zero = Dual::cst(0.0);
        match *self {
            ConvexShape::Box { half_extents_m: h } => {
                let (k, s) = (i / 2, if i % 2 == 0 { 1.0 } else { -1.0 });
                let mut g = [zero; 3];
                g[k] = Dual::cst(s);
                (eta[k] * s - h[k], g)
            }
            ConvexShape::Sphere { radius_m: r } => {
                let f = (eta[0] * eta[0] + eta[1] * eta[1] + eta[2] * eta[2] - r * r) / (2.0 * r);
                (f, [eta[0] / r, eta[1] / r, eta[2] / r])
            }
            ConvexShape::Cylinder { radius_m: r, half_length_m: l } => match i {
                0 => ((eta[0] * eta[0] + eta[1] * eta[1] - r * r) / (2.0 * r), [eta[0] / r, eta[1] / r, zero]),
                1 => (eta[2] - l, [zero, zero, Dual::cst(1.0)]),
                _ => (-eta[2] - l, [zero, zero, Dual::cst(-1.0)]),
            },
        }
    }

    /// Signed distance of the shape to the plane `n·ξ = d` (m, negative when it crosses it) at
    /// centre `c` and rotation `rot` (geometry to world).
    pub fn plane_gap(&self, c: &Vec3, rot: &Mat3, n: &Vec3, d: f64) -> f64 {
        let centre = n.dot(c) - d;
        let nl = rot.transpose() * n; // plane normal in shape coordinates
        match *self {
            ConvexShape::Box { half_extents_m: h } => centre - (h[0] * nl.x.abs() + h[1] * nl.y.abs() + h[2] * nl.z.abs()),
            ConvexShape::Sphere { radius_m } => centre - radius_m,
            ConvexShape::Cylinder { radius_m, half_length_m } => {
                centre - half_length_m * nl.z.abs() - radius_m * (nl.x * nl.x + nl.y * nl.y).sqrt()
            }
        }
    }

    /// Guesses of the contact point toward the plane normal `n` (world) at centre `c`, rotation
    /// `rot`: the lowest point, the middle of the lowest edge (line), the centre of the lowest
    /// face (patch), ordered by the feature that lies flattest on the plane (a face whose corners
    /// are within 1 % of the shape's size in height first, then such an edge, else the point).
    /// Smooth shapes repeat their support point where a feature does not exist.
    pub fn contact_guesses(&self, c: &Vec3, rot: &Mat3, n: &Vec3) -> [Vec3; 3] {
        let nl = rot.transpose() * n;
        let sgn = |x: f64| if x > 0.0 { 1.0 } else { -1.0 };
        match *self {
            ConvexShape::Box { half_extents_m: h } => {
                // the lowest vertex, then release the axes most parallel to the plane first
                let lowest = Vec3::new(-sgn(nl.x) * h[0], -sgn(nl.y) * h[1], -sgn(nl.z) * h[2]);
                let mut order = [0usize, 1, 2];
                order.sort_by(|&a, &b| nl[a].abs().total_cmp(&nl[b].abs()));
                let mut edge = lowest;
                edge[order[0]] = 0.0;
                let mut face = edge;
                face[order[1]] = 0.0;
                let edge_rise = 2.0 * h[order[0]] * nl[order[0]].abs();
                let face_rise = edge_rise + 2.0 * h[order[1]] * nl[order[1]].abs();
                flattest_first([c + rot * lowest, c + rot * edge, c + rot * face], edge_rise, face_rise, 0.01 * self.size_m())
            }
            ConvexShape::Sphere { radius_m } => [c - n * radius_m; 3],
            ConvexShape::Cylinder { radius_m, half_length_m } => {
                let radial = Vec3::new(nl.x, nl.y, 0.0);
                let rim = if radial.norm() > 1e-9 { -radial.normalize() * radius_m } else { Vec3::zeros() };
                let cap = -sgn(nl.z) * half_length_m;
                let lowest = Vec3::new(rim.x, rim.y, cap);
                let line = Vec3::new(rim.x, rim.y, 0.0);
                let face = Vec3::new(0.0, 0.0, cap);
                let line_rise = 2.0 * half_length_m * nl.z.abs();
                let face_rise = 2.0 * radius_m * (nl.x * nl.x + nl.y * nl.y).sqrt();
                let [p, l, f] = [c + rot * lowest, c + rot * line, c + rot * face];
                if face_rise < 0.01 * self.size_m() {
                    [f, p, l]
                } else {
                    flattest_first([p, l, f], line_rise, f64::INFINITY, 0.01 * self.size_m())
                }
            }
        }
    }

    /// Inequalities that may be active where the shape meets a plane of normal `n`, best first
    /// (the designated inequality k1 of the contact conditions): those whose outward normal at
    /// the support point is most opposed to `n`. Returns the list and its length.
    pub fn designated_candidates(&self, rot: &Mat3, n: &Vec3) -> ([usize; 3], usize) {
        let nl = rot.transpose() * n;
        match *self {
            ConvexShape::Box { .. } => {
                // face i has outward normal ±e_k: alignment with −n is ∓nl_k
                let mut faces = [0usize, 1, 2, 3, 4, 5];
                let align = |i: usize| if i % 2 == 0 { -nl[i / 2] } else { nl[i / 2] };
                faces.sort_by(|&a, &b| align(b).total_cmp(&align(a)));
                ([faces[0], faces[1], faces[2]], 3)
            }
            ConvexShape::Sphere { .. } => ([0, 0, 0], 1),
            ConvexShape::Cylinder { .. } => {
                let cap = if nl.z < 0.0 { 1 } else { 2 };
                let side_alignment = (nl.x * nl.x + nl.y * nl.y).sqrt();
                if nl.z.abs() > side_alignment {
                    ([cap, 0, 0], 2)
                } else {
                    ([0, cap, 0], 2)
                }
            }
        }
    }

    /// Radius of the smallest sphere about the geometry origin that contains the shape (m).
    pub fn bounding_radius_m(&self) -> f64 {
        match *self {
            ConvexShape::Box { half_extents_m: h } => (h[0] * h[0] + h[1] * h[1] + h[2] * h[2]).sqrt(),
            ConvexShape::Sphere { radius_m } => radius_m,
            ConvexShape::Cylinder { radius_m, half_length_m } => radius_m.hypot(half_length_m),
        }
    }

    /// Lower bound of the shape's size (m), for relative tolerances.
    pub fn size_m(&self) -> f64 {
        match *self {
            ConvexShape::Box { half_extents_m: h } => h[0].min(h[1]).min(h[2]),
            ConvexShape::Sphere { radius_m } => radius_m,
            ConvexShape::Cylinder { radius_m, half_length_m } => radius_m.min(half_length_m),
        }
    }
}

/// `[point, edge, face]` guesses reordered: the face first when its corners rise less than
/// `tolerance` (m) above the lowest point, else the edge when its far end does, else as given.
fn flattest_first(guesses: [Vec3; 3], edge_rise: f64, face_rise: f64, tolerance: f64) -> [Vec3; 3] {
    let [point, edge, face] = guesses;
    if face_rise < tolerance {
        [face, edge, point]
    } else if edge_rise < tolerance {
        [edge, point, face]
    } else {
        guesses
    }
}
