//! One contact patch between two convex shapes, reduced to its corners.
//!
//! Parry's manifold of two convex polyhedra (polygonal-feature clipping) returns the clipped
//! polygon's vertices and, in 3-D, the GJK point of deepest penetration as one more point. On two
//! faces that lie on each other (a voussoir on the next, a block on a block) that polygon is
//! ill-conditioned: two nearly parallel edges cross anywhere along their length, so points appear
//! on the patch's sides at places that move from step to step, and the GJK point lands anywhere
//! on the patch. None of these points adds a constraint. All points of one manifold share its
//! normal, and over a planar patch the gap and its rate, `n · (v_B(p) − v_A(p))`, are affine in the
//! point `p`: at a point inside the patch's convex hull, or on one of its sides, they are a convex
//! combination of their values at the hull's corners. Such a point only repeats the corners'
//! constraints, and the repeated rows make the contact problem singular (its Delassus matrix loses
//! rank) and change size from step to step.
//!
//! [`keep_patch_corners`] therefore keeps the corners of the patch's convex hull in the contact
//! plane and drops the other points, with two tolerances of the same micrometre scale as
//! [`super::DUPLICATE_POINT_M`]: a point within [`SIDE_TOLERANCE_M`] of the chord between its hull
//! neighbours counts as on the side, and a point is dropped only if it lies no deeper than the
//! deepest corner by more than [`SIDE_TOLERANCE_M`] (a patch that is not planar keeps its
//! deepest point).

use super::Contact;
use crate::math::Vec3;

/// A manifold point within this distance (m) of the line through its two hull neighbours is on the
/// patch's side and dropped; also the depth slack of [`keep_patch_corners`]. A micrometre: the
/// side points of two coincident faces lie 1e-9–1e-8 m off the corners' chord, and a rigid contact
/// resolves no feature this small.
pub const SIDE_TOLERANCE_M: f64 = 1e-6;

/// Patches with more points than this are left as they are (parry's convex manifolds have far
/// fewer; the fixed bound keeps the reduction allocation-free).
const MAX_PATCH_POINTS: usize = 16;

/// Keeps the corners of the contact patch `contacts[first..]` (the points of one convex pair, one
/// normal) and drops the points inside its convex hull or on its sides, keeping the order of the
/// kept points. Returns the number dropped. Two points or fewer are left alone.
pub fn keep_patch_corners(contacts: &mut Vec<Contact>, first: usize, normal: &Vec3) -> usize {
    let n = contacts.len() - first;
    if n <= 2 || n > MAX_PATCH_POINTS {
        return 0;
    }
    // the points share the manifold's normal, and so its tangents
    let (t1, t2) = (contacts[first].tangent1, contacts[first].tangent2);
    debug_assert!((contacts[first].normal - normal).norm() < 1e-12);
    let mut uv = [[0.0f64; 2]; MAX_PATCH_POINTS];
    for (k, c) in contacts[first..].iter().enumerate() {
        uv[k] = [c.position.dot(&t1), c.position.dot(&t2)];
    }
    // Andrew's monotone chain on the points sorted by (u, v), exact (a point is popped when the
    // turn at it is not strictly convex); then the hull's points within SIDE_TOLERANCE_M of the
    // chord between their neighbours are dropped, cyclically. (With the tolerance inside the
    // chain, a corner at the end of a side nearly parallel to the sort's axis could be popped as
    // lying on the line of that side, and the chains' first and last points always stayed.)
    let mut order = [0usize; MAX_PATCH_POINTS];
    for (k, o) in order.iter_mut().enumerate().take(n) {
        *o = k;
    }
    order[..n].sort_unstable_by(|&a, &b| uv[a][0].total_cmp(&uv[b][0]).then(uv[a][1].total_cmp(&uv[b][1])).then(a.cmp(&b)));
    let turns_left = |o: usize, a: usize, b: usize| {
        let (ax, ay) = (uv[a][0] - uv[o][0], uv[a][1] - uv[o][1]);
        let (bx, by) = (uv[b][0] - uv[o][0], uv[b][1] - uv[o][1]);
        // twice the triangle's area over the chord o→b is a's distance from the chord (compared
        // squared: no square root)
        let cross = bx * ay - by * ax;
        cross < 0.0 && cross * cross > SIDE_TOLERANCE_M * SIDE_TOLERANCE_M * (bx * bx + by * by)
    };
    let strictly_left = |o: usize, a: usize, b: usize| {
        let (ax, ay) = (uv[a][0] - uv[o][0], uv[a][1] - uv[o][1]);
        let (bx, by) = (uv[b][0] - uv[o][0], uv[b][1] - uv[o][1]);
        bx * ay - by * ax < 0.0
    };
    let mut hull = [0usize; 2 * MAX_PATCH_POINTS];
    let mut len = 0;
    for pass in 0..2 {
        let floor = len;
        for step in 0..n {
            let p = if pass == 0 { order[step] } else { order[n - 1 - step] };
            while len >= floor + 2 && !strictly_left(hull[len - 2], hull[len - 1], p) {
                len -= 1;
            }
            hull[len] = p;
            len += 1;
        }
        // the last point of each chain is the first of the other
        len -= 1;
    }
    // the exact hull's points within SIDE_TOLERANCE_M of the chord between their neighbours,
    // pass after pass until none is left (at most one pass per point)
    loop {
        let (mut k, before) = (0, len);
        while len > 3 && k < len {
            let (prev, next) = (hull[(k + len - 1) % len], hull[(k + 1) % len]);
            if turns_left(prev, hull[k], next) {
                k += 1;
            } else {
                hull.copy_within(k + 1..len, k);
                len -= 1;
            }
        }
        if len == before {
            break;
        }
    }
    let mut corner = [false; MAX_PATCH_POINTS];
    for &k in &hull[..len] {
        corner[k] = true;
    }
    let corners = corner[..n].iter().filter(|&&c| c).count();
    if corners < 2 || corners == n {
        return 0;
    }
    let deepest_corner = contacts[first..].iter().enumerate().filter(|(k, _)| corner[*k]).map(|(_, c)| c.distance).fold(f64::INFINITY, f64::min);
    // a point deeper than every corner (a patch that is not planar) stays
    for (k, c) in contacts[first..].iter().enumerate() {
        if !corner[k] && c.distance < deepest_corner - SIDE_TOLERANCE_M {
            corner[k] = true;
        }
    }
    let mut kept = first;
    for k in 0..n {
        if corner[k] {
            if kept != first + k {
                contacts.swap(kept, first + k);
            }
            kept += 1;
        }
    }
    let dropped = contacts.len() - kept;
    contacts.truncate(kept);
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::tangent_basis;
    use crate::state::ContactKey;

    fn point(x: f64, y: f64, distance: f64, feature: u32) -> Contact {
        let normal = Vec3::z();
        let (tangent1, tangent2) = tangent_basis(&normal);
        Contact { key: ContactKey { pair: 0, feature_a: feature, feature_b: 0 }, body_a: None, body_b: Some(0), geom_a: 0, geom_b: 1, position: Vec3::new(x, y, 0.0), normal, tangent1, tangent2, distance, friction: 0.5 }
    }

    fn features(c: &[Contact]) -> Vec<u32> {
        c.iter().map(|c| c.key.feature_a).collect()
    }

    #[test]
    fn a_square_patch_keeps_its_four_corners_in_their_order() {
        // corners, a point inside, two points on the sides (one 1e-9 m off the chord)
        let mut c = vec![point(0.0, 0.0, -1e-9, 1), point(0.3, 0.0, -1e-9, 2), point(0.1, 0.2, -1e-9, 3), point(0.3, 0.4, -1e-9, 4), point(0.0, 0.176, -1e-9, 5), point(0.3 + 1e-9, 0.17, -1e-9, 6), point(0.0, 0.4, -1e-9, 7)];
        assert_eq!(keep_patch_corners(&mut c, 0, &Vec3::z()), 3);
        assert_eq!(features(&c), vec![1, 2, 4, 7]);
    }

    #[test]
    fn a_side_point_that_sorts_first_or_last_is_still_dropped() {
        // a rectangle in the tangent plane's (u, v) coordinates, its right side along v with the
        // corners' u equal to 1e-10 m, and a point in that side's middle 5e-10 m further right:
        // it sorts last, so the monotone chains end there (seen on the arch: parry's extra point
        // kept as a fifth corner in 2 % of the joints)
        let (t1, t2) = tangent_basis(&Vec3::z());
        let at = |u: f64, v: f64, feature: u32| {
            let p = u * t1 + v * t2;
            point(p.x, p.y, 0.0, feature)
        };
        for middle_u in [0.4 + 5e-10, 0.4 - 5e-10] {
            let mut c = vec![at(0.0, -0.2, 1), at(0.4, -0.2, 2), at(0.4 + 1e-10, 0.2, 3), at(0.0, 0.2, 4), at(middle_u, 0.0, 5)];
            assert_eq!(keep_patch_corners(&mut c, 0, &Vec3::z()), 1, "middle point at u = {middle_u}");
            assert_eq!(features(&c), vec![1, 2, 3, 4]);
        }
    }

    #[test]
    fn a_patch_that_is_not_planar_keeps_its_deepest_point_and_short_patches_stay() {
        let mut c = vec![point(0.0, 0.0, 0.0, 1), point(1.0, 0.0, 0.0, 2), point(0.0, 1.0, 0.0, 3), point(0.2, 0.2, -1e-3, 4)];
        assert_eq!(keep_patch_corners(&mut c, 0, &Vec3::z()), 0);
        assert_eq!(c.len(), 4);
        // a segment with a point on it: the ends stay
        let mut s = vec![point(0.0, 0.0, 0.0, 1), point(0.5, 0.0, 0.0, 2), point(1.0, 0.0, 0.0, 3)];
        assert_eq!(keep_patch_corners(&mut s, 0, &Vec3::z()), 1);
        assert_eq!(features(&s), vec![1, 3]);
        // two points, and the contacts before `first`, are left alone
        let mut t = vec![point(5.0, 5.0, 0.0, 9), point(0.0, 0.0, 0.0, 1), point(0.5, 0.0, 0.0, 2)];
        assert_eq!(keep_patch_corners(&mut t, 1, &Vec3::z()), 0);
        assert_eq!(features(&t), vec![9, 1, 2]);
    }
}
