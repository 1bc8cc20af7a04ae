//! Collision detection: broad phase, narrow phase, contact points.
//!
//! - **Candidate pairs** are fixed when the model is built ([`Model::collision_pairs`]): every
//!   geometry against the ground, geometries of different trees, and (opt-in) non-adjacent links of
//!   the same robot.
//! - **Broad phase**: bounding-sphere culling of the candidate pairs with the contact margin.
//! - **Narrow phase**: shape-vs-ground is analytic here (sphere, box, capsule, cylinder, convex
//!   hull against a half-space; it gives the full contact patch as points); shape-vs-shape uses
//!   parry's convex-convex manifold generation (SAT for boxes, GJK + polygonal feature clipping
//!   otherwise).
//!
//! Contact convention: for a pair (A, B), the unit normal `n` points **from A toward B**, the
//! signed distance is negative when penetrating, and the relative velocity is
//! `u = v_B(p) − v_A(p)`; the contact impulse acts `+λ` on B and `−λ` on A. For ground pairs A is
//! the ground.
//!
//! Allocation: the ground tests allocate nothing; parry's manifold generation writes into a
//! per-pair point buffer reserved here. Parry's polygonal-feature manifold falls back from GJK to
//! EPA when two shapes overlap, and builds a new (allocating) EPA on every such call; so
//! overlapping pairs (other than box–box, which parry solves by SAT) are first resolved here
//! with one reusable EPA, whose buffers are grown when it is built (`grown_epa`), and the
//! manifold is then generated with the second shape moved out of the overlap along the
//! penetration normal (`separate_overlap`). The step allocates nothing.

mod patch;
pub use patch::{keep_patch_corners, SIDE_TOLERANCE_M};

use crate::math::{from_parry_vec, tangent_basis, to_parry, to_parry_vec, Pose, Vec3};
use crate::model::{parry_axis_fix, GeomShape, Model};
use crate::state::ContactKey;
use parry3d_f64::query::epa::EPA;
use parry3d_f64::query::gjk::{self, CsoPoint, GJKResult, VoronoiSimplex};
use parry3d_f64::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d_f64::shape::{Shape, ShapeType};

/// A contact point of the current step.
#[derive(Clone, Copy, Debug)]
pub struct Contact {
    /// Identity across steps.
    pub key: ContactKey,
    /// Body of the first geometry (`None`: world / ground).
    pub body_a: Option<usize>,
    /// Body of the second geometry.
    pub body_b: Option<usize>,
    /// Geometry indices.
    pub geom_a: usize,
    /// Second geometry.
    pub geom_b: usize,
    /// Contact point (world, m).
    pub position: Vec3,
    /// Unit normal from A toward B (world).
    pub normal: Vec3,
    /// First unit tangent (world); `(normal, tangent1, tangent2)` is right-handed.
    pub tangent1: Vec3,
    /// Second unit tangent (world).
    pub tangent2: Vec3,
    /// Signed distance (m), negative when penetrating.
    pub distance: f64,
    /// Coulomb friction coefficient.
    pub friction: f64,
}

/// Per-pair scratch for parry and the world poses of geometries.
pub struct CollisionScratch {
    /// World pose of each geometry, `X_WG`.
    pub geom_pose: Vec<Pose>,
    /// Bound on the speed of any point of each geometry (m/s).
    pub geom_speed: Vec<f64>,
    /// Each geometry's bounding sphere and speed bound, `[x, y, z, radius, speed]` (m, m, m, m,
    /// m/s; centre in the world): what the broad phase reads, packed so that a pair that is
    /// clearly apart costs two small loads.
    geom_sphere: Vec<[f64; 5]>,
    manifolds: Vec<ContactManifold<(), ()>>,
    /// GJK simplex and EPA polytope for the overlap test of [`separate_overlap`], reused by
    /// every pair (their buffers keep their capacity).
    simplex: VoronoiSimplex,
    epa: EPA,
}

impl CollisionScratch {
    /// Reserves everything the narrow phase needs.
    pub fn new(model: &Model) -> Self {
        let manifolds = model
            .collision_pairs
            .iter()
            .map(|_| {
                let mut m = ContactManifold::<(), ()>::new();
                m.points.reserve(4 * model.contact.max_points_per_pair.max(8));
                m
            })
            .collect();
        CollisionScratch {
            geom_pose: vec![Pose::identity(); model.geoms.len()],
            geom_speed: vec![0.0; model.geoms.len()],
            geom_sphere: vec![[0.0; 5]; model.geoms.len()],
            manifolds,
            simplex: VoronoiSimplex::new(),
            epa: grown_epa(),
        }
    }
}

/// An EPA whose buffers have already grown to what its longest queries need. EPA keeps its
/// buffers between queries but grows them (allocates) when a query needs more polytope than any
/// before it: a pair of voussoirs overlapping in a new way, thousands of steps in, allocated in
/// the step. EPA stops after 100 expansions; on two deeply overlapping spheres, whose round
/// difference it can only approach facet by facet, it runs to that cap at several depths and
/// directions, which grows its buffers beyond what flat-faced shapes ask for.
fn grown_epa() -> EPA {
    use parry3d_f64::shape::Ball;
    let mut epa = EPA::new();
    let mut simplex = VoronoiSimplex::new();
    let ball = Ball::new(1.0);
    for (k, depth) in [1.9, 1.5, 1.0, 0.5, 0.1].iter().enumerate() {
        let dir = parry3d_f64::math::Vector::new(1.0, 0.3 * k as f64, 0.7 - 0.1 * k as f64).normalize();
        let pos12 = parry3d_f64::math::Pose::from_translation(dir * (2.0 - depth));
        simplex.reset(CsoPoint::from_shapes(&pos12, &ball, &ball, dir));
        if gjk::closest_points(&pos12, &ball, &ball, 0.0, true, &mut simplex) == GJKResult::Intersection {
            let _ = epa.closest_points(&pos12, &ball, &ball, &simplex);
        }
    }
    epa
}

/// Result flags of collision detection.
#[derive(Clone, Copy, Debug, Default)]
pub struct CollisionReport {
    /// Contacts dropped because `max_contacts` was reached.
    pub dropped_contacts: usize,
    /// Pairs parry could not handle.
    pub unsupported_pairs: usize,
    /// Manifold points dropped as copies of another point of the same pair (within
    /// [`DUPLICATE_POINT_M`]).
    pub duplicate_points: usize,
    /// Manifold points dropped inside or on a side of their patch's convex hull
    /// ([`keep_patch_corners`]).
    pub side_points: usize,
}

/// Finds all contacts into `contacts` (whose capacity is not exceeded).
///
/// A pair generates (speculative) contacts when its gap is below the margin
/// `contact.margin_m + dt (s_a + s_b)`, where `s_g = |v_origin| + |ω| r_bound` bounds the speed of
/// any point of geometry g: nothing moving at the current velocities can pass through a surface
/// within one step unseen.
///
/// `pair_normals` ([`crate::state::State::contact_pair_normals`]) is the narrow phase's history:
/// each pair's last contact normal, the first search direction of its next GJK query (read
/// before, written after each query).
pub fn detect(
    model: &Model,
    body_pose: &[Pose],
    body_velocity: &[crate::math::Vec6],
    pair_normals: &mut [[f64; 6]],
    scratch: &mut CollisionScratch,
    contacts: &mut Vec<Contact>,
) -> CollisionReport {
    let mut report = CollisionReport::default();
    contacts.clear();
    for (g, geom) in model.geoms.iter().enumerate() {
        // the pose and speed in locals, stored once: read back from the scratch right after
        // its store, the translation straddled two stores and stalled the load (perf annotate of
        // the default scene: a third of this function's own time)
        let pose = match geom.body {
            Some(b) => body_pose[b] * geom.x_body_geom,
            None => geom.x_body_geom,
        };
        let c = pose.translation.vector;
        let speed = match geom.body {
            Some(b) => {
                let v = &body_velocity[b];
                let w = Vec3::new(v[0], v[1], v[2]);
                crate::math::point_velocity(v, &c).norm() + w.norm() * geom.bounding_radius
            }
            None => 0.0,
        };
        scratch.geom_pose[g] = pose;
        scratch.geom_speed[g] = speed;
        scratch.geom_sphere[g] = [c.x, c.y, c.z, geom.bounding_radius, speed];
    }
    let dt = model.timestep_s;
    let max_per_pair = model.contact.max_points_per_pair;
    for (pi, pair) in model.collision_pairs.iter().enumerate() {
        let (sa, sb) = (&scratch.geom_sphere[pair.geom_a], &scratch.geom_sphere[pair.geom_b]);
        let margin = model.contact.margin_m + dt * (sa[4] + sb[4]);
        if !pair.with_ground {
            // broad phase: bounding spheres. Squared distances first (no square root) with a
            // slack far above round-off, so that only pairs clearly apart are skipped there; the
            // test that decides is the exact one below.
            let d = Vec3::new(sa[0] - sb[0], sa[1] - sb[1], sa[2] - sb[2]);
            let reach = sa[3] + sb[3] + margin;
            if reach >= 0.0 && d.norm_squared() > reach * reach * (1.0 + 1e-9) {
                continue;
            }
        }
        let (ga, gb) = (&model.geoms[pair.geom_a], &model.geoms[pair.geom_b]);
        let (xa, xb) = (scratch.geom_pose[pair.geom_a], scratch.geom_pose[pair.geom_b]);
        let mut push = |contacts: &mut Vec<Contact>, position: Vec3, normal: Vec3, distance: f64, fa: u32, fb: u32| {
            if contacts.len() == contacts.capacity() {
                report.dropped_contacts += 1;
                return;
            }
            let (t1, t2) = tangent_basis(&normal);
            contacts.push(Contact {
                key: ContactKey { pair: pi as u32, feature_a: fa, feature_b: fb },
                body_a: ga.body,
                body_b: gb.body,
                geom_a: pair.geom_a,
                geom_b: pair.geom_b,
                position,
                normal,
                tangent1: t1,
                tangent2: t2,
                distance,
                friction: pair.friction,
            });
        };
        if pair.with_ground {
            let GeomShape::Plane { normal, offset } = ga.shape else { unreachable!("ground is a plane") };
            let centre = xb.translation.vector;
            if normal.dot(&centre) - offset - gb.bounding_radius > margin {
                continue;
            }
            ground_contacts(&gb.shape, &xb, &normal, offset, margin, max_per_pair, |p, d, f| push(contacts, p, normal, d, 0, f));
            continue;
        }
        let d = xa.translation.vector - xb.translation.vector;
        let gap = d.norm() - ga.bounding_radius - gb.bounding_radius;
        if gap > margin {
            continue;
        }
        let (pa, pb) = (parry_pose(&ga.shape, &xa), parry_pose(&gb.shape, &xb));
        let pos12 = to_parry(&pa).inv_mul(&to_parry(&pb));
        let (s1, s2) = (ga.parry_shape.as_ref(), gb.parry_shape.as_ref());
        let manifold = &mut scratch.manifolds[pi];
        let last = &pair_normals[pi];
        manifold.local_n1 = to_parry_vec(&Vec3::new(last[0], last[1], last[2]));
        manifold.local_n2 = to_parry_vec(&Vec3::new(last[3], last[4], last[5]));
        let separation = separate_overlap(&pos12, s1, s2, margin, manifold.local_n1.try_normalize(), &mut scratch.simplex, &mut scratch.epa);
        let mut pos12_query = pos12;
        if let Some((n, s)) = separation {
            pos12_query.translation += n * s;
        }
        manifold.points.clear();
        let res = DefaultQueryDispatcher.contact_manifold_convex_convex(
            &pos12_query,
            s1,
            s2,
            None,
            None,
            margin + separation.map_or(0.0, |(_, s)| s),
            manifold,
        );
        let (n1, n2) = (from_parry_vec(manifold.local_n1), from_parry_vec(manifold.local_n2));
        pair_normals[pi] = [n1.x, n1.y, n1.z, n2.x, n2.y, n2.z];
        if res.is_err() {
            report.unsupported_pairs += 1;
            continue;
        }
        let n_w = pa.rotation * from_parry_vec(manifold.local_n1);
        if !(n_w.norm() > 0.5) {
            continue;
        }
        let n_w = n_w.normalize();
        let first_of_pair = contacts.len();
        for (k, c) in manifold.points.iter().enumerate() {
            let p1 = pa * nalgebra::Point3::from(from_parry_vec(c.local_p1));
            let p2 = pb * nalgebra::Point3::from(from_parry_vec(c.local_p2));
            // with B moved out for the query, the distance is measured again at the true poses
            let dist = if separation.is_some() { (p2.coords - p1.coords).dot(&n_w) } else { c.dist };
            if k >= max_per_pair || dist > margin {
                continue;
            }
            let mid = (p1.coords + p2.coords) * 0.5;
            // parry's polygonal clipping can return one point twice (box–box, seen on the
            // default scene's finger on the box); a second contact at the same point with the same
            // normal is the same constraint again, and the copy makes the contact problem singular
            if contacts[first_of_pair..].iter().any(|o| (o.position - mid).norm() <= DUPLICATE_POINT_M) {
                report.duplicate_points += 1;
                continue;
            }
            push(contacts, mid, n_w, dist, c.fid1.0, c.fid2.0);
        }
        report.side_points += keep_patch_corners(contacts, first_of_pair, &n_w);
    }
    report
}

/// Manifold points of one pair closer than this (m) are one contact: the later ones are dropped
/// (counted in [`CollisionReport::duplicate_points`]). A micrometre is far below any patch a
/// rigid contact resolves and far above the round-off between two copies of a clipped point.
pub const DUPLICATE_POINT_M: f64 = 1e-6;

/// How far beyond the penetration depth [`separate_overlap`] moves the second shape (m): enough
/// that parry's GJK sees two separate shapes despite EPA's tolerance on the depth.
const SEPARATION_M: f64 = 1e-4;

/// For a pair that parry would send through GJK + EPA while overlapping: the penetration
/// normal `n` (unit, in A's frame, from A toward B) and a distance `s` (m, the penetration depth
/// plus [`SEPARATION_M`], doubled until parry's query sees the moved pair apart) by which moving
/// B along `n` separates the shapes. For a pair that touches (apart by less than [`TOUCHING_M`])
/// the pair's last normal and [`SEPARATION_M`]. `None` when the shapes neither overlap nor
/// touch, or when parry treats the pair without EPA (box–box by SAT, balls analytically,
/// capsule–capsule by segments). `init_dir` is the pair's last normal (A's frame), GJK's first
/// search direction as in parry's manifold. The GJK simplex and the EPA polytope are the caller's, reused
/// across calls: this is the allocation-free replacement of parry's own fallback, which builds
/// a new EPA per call. Moving B rigidly along the contact normal leaves the contact features,
/// and so the clipped manifold, unchanged; the caller measures the distances at the true poses.
fn separate_overlap(
    pos12: &parry3d_f64::math::Pose,
    s1: &dyn Shape,
    s2: &dyn Shape,
    prediction: f64,
    init_dir: Option<parry3d_f64::math::Vector>,
    simplex: &mut VoronoiSimplex,
    epa: &mut EPA,
) -> Option<(parry3d_f64::math::Vector, f64)> {
    let (t1, t2) = (s1.shape_type(), s2.shape_type());
    let special = matches!((t1, t2), (ShapeType::Cuboid, ShapeType::Cuboid) | (ShapeType::Capsule, ShapeType::Capsule))
        || t1 == ShapeType::Ball
        || t2 == ShapeType::Ball;
    if special {
        return None;
    }
    let (g1, g2) = (s1.as_support_map()?, s2.as_support_map()?);
    // most pairs tested here are apart, and the pair's last normal still separates them: when the
    // plane it spans leaves more than TOUCHING_M between A's farthest point along it and B's
    // nearest, the shapes are farther apart than that and GJK would return no overlap either
    // (measured on the arm pushing the box: 72 % of the calls, one GJK query saved each)
    if let Some(n) = init_dir {
        let a_far = g1.local_support_point(n);
        let b_near = g2.support_point(pos12, -n);
        if (b_near - a_far).dot(n) > TOUCHING_M {
            return None;
        }
    }
    let dir = init_dir.or_else(|| pos12.translation.try_normalize()).unwrap_or(parry3d_f64::math::Vector::X);
    simplex.reset(CsoPoint::from_shapes(pos12, g1, g2, dir));
    // the same query as parry's manifold makes (exact distances, the pair's last normal as the
    // first search direction), so that what it would call an intersection is resolved here.
    // EPA fails on a degenerate simplex (the origin on the difference's boundary: shapes touching
    // with no measurable overlap; seen on the arch, once in 750 steps): then move B out along the
    // pair's last normal, or along the line between the centres, from zero depth.
    // Touching shapes (apart by less than TOUCHING_M) are moved out the same way: GJK's direction
    // between them is the difference of two nearly equal points, noise at such distances, and
    // parry's manifold would clip the features facing it (seen on the arch: a normal 60° off the
    // joint's and points 0.37 m deep between two voussoirs 4e-11 m apart); moved apart by
    // SEPARATION_M, the query's direction is the true one.
    let (n, depth) = match gjk::closest_points(pos12, g1, g2, prediction, true, simplex) {
        GJKResult::Intersection => match epa.closest_points(pos12, g1, g2, simplex) {
            Some((p1, p2, n)) => (n, (p1 - p2).dot(n).max(0.0)),
            None => (dir, 0.0),
        },
        GJKResult::ClosestPoints(p1, p2, gjk_dir) if (p2 - p1).dot(gjk_dir) < TOUCHING_M => {
            // touching apart (distance ≥ 0 along GJK's axis g): moving B by s along a direction
            // with n·g ≥ ½ opens the gap along g by at least s/2, so the moved pair is apart and
            // the query below would confirm it at its first try (a resting contact of a convex
            // pair: every step on the arm pushing the box)
            if dir.dot(gjk_dir) >= 0.5 {
                return Some((dir, SEPARATION_M));
            }
            (dir, 0.0)
        }
        _ => return None,
    };
    // parry's manifold query at the moved pose must not see an intersection, or it runs its own,
    // allocating EPA: make the same query here, and double the extra distance while the moved
    // pair still intersects (EPA's depth is a tolerance-bound estimate; zero after its failure)
    // EPA's direction can be far off on a nearly degenerate overlap (seen on the arch: a normal
    // with a component across the arch's plane, still intersecting after every doubling); then
    // the line between the centres, along which two convex shapes always come apart
    let centres = pos12.translation.try_normalize().unwrap_or(n);
    for way in [n, centres] {
        let mut extra = SEPARATION_M;
        for _ in 0..SEPARATION_RETRIES {
            let s = depth + extra;
            let mut moved = *pos12;
            moved.translation += way * s;
            let dir = init_dir.or_else(|| moved.translation.try_normalize()).unwrap_or(parry3d_f64::math::Vector::X);
            simplex.reset(CsoPoint::from_shapes(&moved, g1, g2, dir));
            if gjk::closest_points(&moved, g1, g2, prediction + s, true, simplex) != GJKResult::Intersection {
                return Some((way, s));
            }
            extra *= 2.0;
        }
    }
    Some((n, depth + SEPARATION_M * 2f64.powi(SEPARATION_RETRIES as i32)))
}

/// Below this distance (m) two shapes count as touching for [`separate_overlap`]: GJK's
/// direction between them is not trusted, and B is moved out along the pair's last normal before
/// the manifold query. A micrometre, as [`DUPLICATE_POINT_M`].
const TOUCHING_M: f64 = 1e-6;

/// Doublings of [`SEPARATION_M`] at most while the moved pair still intersects.
const SEPARATION_RETRIES: u32 = 8;

/// Parry's pose for a geometry (cylinders and capsules lie along parry's y axis).
pub(crate) fn parry_pose(shape: &GeomShape, x_wg: &Pose) -> Pose {
    match shape {
        GeomShape::Cylinder { .. } | GeomShape::Capsule { .. } => x_wg * parry_axis_fix(),
        _ => *x_wg,
    }
}

/// Contacts of a shape at pose `x` against the half-space `n·p ≤ offset`. Calls
/// `emit(point_on_shape_world, signed_distance, feature)` for each point within `margin`.
pub fn ground_contacts(shape: &GeomShape, x: &Pose, n: &Vec3, offset: f64, margin: f64, max_points: usize, mut emit: impl FnMut(Vec3, f64, u32)) {
    let phi = |p: &Vec3| n.dot(p) - offset;
    let mut count = 0usize;
    let mut try_point = |p: Vec3, d: f64, f: u32, count: &mut usize| {
        if d <= margin && *count < max_points {
            emit(p, d, f);
            *count += 1;
        }
    };
    let c = x.translation.vector;
    match shape {
        GeomShape::Sphere { radius } => {
            let d = phi(&c) - radius;
            try_point(c - n * *radius, d, 0, &mut count);
        }
        GeomShape::Capsule { radius, half_length } => {
            let axis = x.rotation * Vec3::z();
            for (f, s) in [(0u32, 1.0), (1u32, -1.0)] {
                let e = c + axis * (s * half_length);
                try_point(e - n * *radius, phi(&e) - radius, f, &mut count);
            }
        }
        GeomShape::Box { half_extents: h } => {
            // Deepest vertices first so that the per-pair cap keeps the support patch.
            let mut verts = [(0.0f64, Vec3::zeros(), 0u32); 8];
            for i in 0..8u32 {
                let local = Vec3::new(
                    if i & 1 == 0 { -h.x } else { h.x },
                    if i & 2 == 0 { -h.y } else { h.y },
                    if i & 4 == 0 { -h.z } else { h.z },
                );
                let p = x * nalgebra::Point3::from(local);
                verts[i as usize] = (phi(&p.coords), p.coords, i);
            }
            // the deepest `max_points` within the margin, then emitted in vertex order: the four
            // corners of a box resting flat are at depths equal to round-off, whose order changes
            // from step to step; in vertex order the contacts keep their rows from step to step
            verts.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            let kept = verts.iter().take(max_points).take_while(|v| v.0 <= margin).count();
            verts[..kept].sort_unstable_by_key(|v| v.2);
            for &(d, p, f) in &verts[..kept] {
                try_point(p, d, f, &mut count);
            }
        }
        GeomShape::Cylinder { radius, half_length } => {
            let axis = x.rotation * Vec3::z();
            // Direction within the cap plane toward the ground.
            let down = -(n - axis * n.dot(&axis));
            let down_norm = down.norm();
            let (u, w) = if down_norm > 1e-9 {
                let u = down / down_norm;
                (u, axis.cross(&u))
            } else {
                let (t1, t2) = tangent_basis(&axis);
                (t1, t2)
            };
            // Per cap: the lowest rim point exactly (rolling stays smooth), plus three more rim
            // points so that a cylinder standing on a cap has a supporting triangle+.
            for (cap, s) in [(0u32, 1.0), (1u32, -1.0)] {
                let cc = c + axis * (s * half_length);
                for (k, (cu, cw)) in [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)].into_iter().enumerate() {
                    let p = cc + (u * cu + w * cw) * *radius;
                    try_point(p, phi(&p), cap * 4 + k as u32, &mut count);
                }
            }
        }
        GeomShape::Convex { vertices } => {
            // Emit the deepest points first (selection without allocation: repeated scans).
            let mut last = f64::NEG_INFINITY;
            let mut last_idx = usize::MAX;
            for _ in 0..max_points {
                let mut best = (f64::INFINITY, usize::MAX);
                for (i, v) in vertices.iter().enumerate() {
                    let d = phi(&(x * nalgebra::Point3::from(*v)).coords);
                    let after_last = d > last || (d == last && i > last_idx);
                    if after_last && (d < best.0 || (d == best.0 && i < best.1)) {
                        best = (d, i);
                    }
                }
                if best.1 == usize::MAX || best.0 > margin {
                    break;
                }
                let p = (x * nalgebra::Point3::from(vertices[best.1])).coords;
                try_point(p, best.0, best.1 as u32, &mut count);
                last = best.0;
                last_idx = best.1;
            }
        }
        GeomShape::Plane { .. } => {}
    }
}

/// The deepest contact of a point `p` (world, m) with the model's geometry within `margin` (m):
/// `(signed distance m, outward normal of the geometry at the closest point, geometry index)`,
/// or `None` when every geometry is farther. Used for deformable surface nodes (one contact per
/// node keeps the coupled solve's surrogate Delassus operator diagonal).
pub fn deepest_geom_contact(model: &Model, geom_pose: &[Pose], p: &Vec3, margin: f64) -> Option<(f64, Vec3, usize)> {
    let p = *p;
    let mut best: Option<(f64, Vec3, usize)> = None;
    for (gi, geom) in model.geoms.iter().enumerate() {
        let (dist, normal) = match &geom.shape {
            crate::model::GeomShape::Plane { normal, offset } => (normal.dot(&p) - offset, *normal),
            shape => {
                let x_wg = geom_pose[gi];
                let c = x_wg.translation.vector;
                if (p - c).norm() > geom.bounding_radius + margin {
                    continue;
                }
                let pp = parry_pose(shape, &x_wg);
                let local = pp.inverse_transform_point(&nalgebra::Point3::from(p));
                let proj = geom.parry_shape.project_local_point(crate::math::to_parry_vec(&local.coords), false);
                let q = pp * nalgebra::Point3::from(crate::math::from_parry_vec(proj.point));
                let delta = p - q.coords;
                let len = delta.norm();
                if len < 1e-12 {
                    // the point lies on the surface (a node resting on it after an exact
                    // solve): distance 0 and the normal of the face nearest to a point nudged
                    // 10 nm towards the geometry's centre (skipping it would drop the contact
                    // for a step and let the node fall through)
                    let inward = c - p;
                    let l = inward.norm();
                    if l < 1e-12 {
                        continue;
                    }
                    let nudged = p + inward * (1e-8 / l);
                    let local2 = pp.inverse_transform_point(&nalgebra::Point3::from(nudged));
                    let proj2 = geom.parry_shape.project_local_point(crate::math::to_parry_vec(&local2.coords), false);
                    let out = (pp * nalgebra::Point3::from(crate::math::from_parry_vec(proj2.point))).coords - nudged;
                    let len2 = out.norm();
                    if !proj2.is_inside || len2 < 1e-12 {
                        continue;
                    }
                    (0.0, out / len2)
                } else if proj.is_inside {
                    (-len, -delta / len)
                } else {
                    (len, delta / len)
                }
            }
        };
        if dist < margin && best.map(|b| dist < b.0).unwrap_or(true) {
            best = Some((dist, normal, gi));
        }
    }
    best
}

#[cfg(test)]
mod separation_tests {
    use super::*;
    use parry3d_f64::math::{Pose as PPose, Vector};
    use parry3d_f64::shape::{Cuboid, Cylinder, SupportMap};

    /// GJK's distance between the shapes from a fresh simplex (negative: they intersect).
    fn distance(pos12: &PPose, g1: &dyn SupportMap, g2: &dyn SupportMap) -> (f64, Vector) {
        let mut simplex = VoronoiSimplex::new();
        let dir = pos12.translation.try_normalize().unwrap_or(Vector::X);
        simplex.reset(CsoPoint::from_shapes(pos12, g1, g2, dir));
        match gjk::closest_points(pos12, g1, g2, 10.0, true, &mut simplex) {
            GJKResult::ClosestPoints(p1, p2, d) => ((p2 - p1).dot(d), d),
            GJKResult::Intersection => (-1.0, dir),
            _ => (f64::INFINITY, dir),
        }
    }

    #[test]
    fn separation_is_found_for_touching_and_overlapping_pairs_and_only_for_them() {
        // the arm's wrist cylinder and the pushed box, at poses from overlapping to apart, some
        // (half of those apart) moved to touch (1e-9 m apart along GJK's axis), with the last normal exact, off, reversed or none:
        // None only for pairs GJK finds apart by at least TOUCHING_M; a separation always moves
        // the second shape out of the first
        let (cyl, cube) = (Cylinder::new(0.0175, 0.04), Cuboid::new(Vector::new(0.06, 0.06, 0.06)));
        let (mut simplex, mut epa) = (VoronoiSimplex::new(), grown_epa());
        let mut rand = crate::math::xorshift(0x9e3779b97f4a7c15);
        let (mut apart, mut touching, mut separated) = (0, 0, 0);
        for k in 0..3000 {
            let u = Vector::new(rand(), rand(), rand()).normalize();
            let axisangle = Vector::new(rand(), rand(), rand()) * 1.5;
            let mut pos12 = PPose::new(u * (0.11 + 0.06 * rand()), axisangle);
            let (d, g) = distance(&pos12, &cyl, &cube);
            if k % 2 == 0 && d > 0.0 && d.is_finite() {
                pos12.translation -= g * (d - 1e-9);
            }
            let (d, g) = distance(&pos12, &cyl, &cube);
            let init = match (k / 2) % 4 {
                0 => None,
                1 => Some((g + Vector::new(rand(), rand(), rand()) * 0.4).normalize()),
                2 => Some(g),
                _ => Some(-g),
            };
            match separate_overlap(&pos12, &cyl, &cube, 0.01, init, &mut simplex, &mut epa) {
                None => {
                    assert!(d >= 0.5 * TOUCHING_M, "case {k}: no separation for a pair {d:.3e} m apart");
                    apart += 1;
                }
                Some((n, s)) => {
                    let mut moved = pos12;
                    moved.translation += n * s;
                    let (after, _) = distance(&moved, &cyl, &cube);
                    assert!(after > 0.0, "case {k}: still intersecting after the separation ({d:.3e} m before)");
                    if d >= 0.0 { touching += 1 } else { separated += 1 }
                }
            }
        }
        assert!(apart > 300 && touching > 300 && separated > 300, "apart {apart}, touching {touching}, overlapping {separated}");
    }
}
