//! Spatial algebra in world coordinates (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2).
//!
//! Conventions used everywhere in the engine:
//! - A spatial motion vector is `[ω; v]` (angular first), a spatial force is `[n; f]`
//!   (moment first). Both are expressed in **world coordinates, about the world origin**
//!   unless a name says otherwise.
//! - `X_AB` is the pose of frame B measured in frame A (Drake naming): `p_A = X_AB * p_B`.
//! - Quaternions are stored `[x, y, z, w]` (the ROS order) in generalized coordinates.

use nalgebra::{Isometry3, Matrix3, Matrix6, Translation3, UnitQuaternion, Vector3, Vector6};

/// 3-vector of f64.
pub type Vec3 = Vector3<f64>;
/// 3x3 matrix of f64.
pub type Mat3 = Matrix3<f64>;
/// Spatial 6-vector `[angular; linear]`.
pub type Vec6 = Vector6<f64>;
/// Spatial 6x6 matrix (inertias, transforms).
pub type Mat6 = Matrix6<f64>;
/// Rigid transform.
pub type Pose = Isometry3<f64>;

/// Skew-symmetric cross-product matrix: `skew(a) * b = a × b`.
#[inline]
pub fn skew(a: &Vec3) -> Mat3 {
    Mat3::new(0.0, -a.z, a.y, a.z, 0.0, -a.x, -a.y, a.x, 0.0)
}

/// Angular part of a spatial vector.
#[inline]
pub fn ang(v: &Vec6) -> Vec3 {
    Vec3::new(v[0], v[1], v[2])
}

/// Linear part of a spatial vector.
#[inline]
pub fn lin(v: &Vec6) -> Vec3 {
    Vec3::new(v[3], v[4], v[5])
}

/// Builds a spatial vector from angular and linear parts.
#[inline]
pub fn spatial(a: &Vec3, l: &Vec3) -> Vec6 {
    Vec6::new(a.x, a.y, a.z, l.x, l.y, l.z)
}

/// Motion cross product `v ×m m` (Featherstone eq. 2.31): rate of change of motion `m`
/// carried by a frame moving with spatial velocity `v`.
#[inline]
pub fn cross_motion(v: &Vec6, m: &Vec6) -> Vec6 {
    let (w, vl) = (ang(v), lin(v));
    let (mw, ml) = (ang(m), lin(m));
    spatial(&w.cross(&mw), &(w.cross(&ml) + vl.cross(&mw)))
}

/// Force cross product `v ×f f` (Featherstone eq. 2.32).
#[inline]
pub fn cross_force(v: &Vec6, f: &Vec6) -> Vec6 {
    let (w, vl) = (ang(v), lin(v));
    let (n, fl) = (ang(f), lin(f));
    spatial(&(w.cross(&n) + vl.cross(&fl)), &w.cross(&fl))
}

/// Spatial inertia (6x6, about the world origin, world coordinates) of a body of mass `m`
/// whose centre of mass is at `c` (world) and whose rotational inertia about the centre of
/// mass, in world axes, is `i_com` (Featherstone eq. 2.63).
pub fn spatial_inertia(m: f64, c: &Vec3, i_com: &Mat3) -> Mat6 {
    let cx = skew(c);
    let mut out = Mat6::zeros();
    let top_left = i_com + m * cx * cx.transpose();
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&top_left);
    out.fixed_view_mut::<3, 3>(0, 3).copy_from(&(m * cx));
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(m * cx.transpose()));
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(m * Mat3::identity()));
    out
}

/// Velocity of the material point at world position `p` for a body moving with spatial
/// velocity `v` (world coordinates, about the world origin): `v_lin + ω × p`.
#[inline]
pub fn point_velocity(v: &Vec6, p: &Vec3) -> Vec3 {
    lin(v) + ang(v).cross(p)
}

/// Pose from translation and roll-pitch-yaw (URDF convention: fixed-axis X, then Y, then Z,
/// i.e. `R = Rz(yaw) Ry(pitch) Rx(roll)`).
pub fn pose_from_xyz_rpy(xyz: [f64; 3], rpy: [f64; 3]) -> Pose {
    Isometry3::from_parts(
        Translation3::new(xyz[0], xyz[1], xyz[2]),
        UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2]),
    )
}

/// Quaternion exponential update `q ⊗ exp(ω_body dt)`, normalised.
pub fn integrate_rotation(q: &UnitQuaternion<f64>, omega_body: &Vec3, dt: f64) -> UnitQuaternion<f64> {
    let dq = UnitQuaternion::from_scaled_axis(omega_body * dt);
    let mut out = q * dq;
    out.renormalize();
    out
}

/// Converts a nalgebra pose to parry's glam pose.
#[inline]
pub fn to_parry(p: &Pose) -> parry3d_f64::math::Pose {
    let q = p.rotation.quaternion();
    parry3d_f64::math::Pose::from_parts(
        parry3d_f64::math::Vector::new(p.translation.x, p.translation.y, p.translation.z),
        parry3d_f64::math::Rotation::from_xyzw(q.i, q.j, q.k, q.w),
    )
}

/// Converts a parry vector to nalgebra.
#[inline]
pub fn from_parry_vec(v: parry3d_f64::math::Vector) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

/// Converts a nalgebra vector to parry.
#[inline]
pub fn to_parry_vec(v: &Vec3) -> parry3d_f64::math::Vector {
    parry3d_f64::math::Vector::new(v.x, v.y, v.z)
}

/// Two unit tangents completing the unit normal `n` to a right-handed frame `(n, t1, t2)`.
/// Deterministic (no dependence on history), continuous away from `n ≈ ±x`.
pub fn tangent_basis(n: &Vec3) -> (Vec3, Vec3) {
    let helper = if n.x.abs() < 0.57 { Vec3::x() } else { Vec3::y() };
    let t1 = n.cross(&helper).normalize();
    let t2 = n.cross(&t1);
    (t1, t2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_products_are_dual() {
        // (v ×f)ᵀ = -(v ×m) as operators: f·(v×m m) = -(v×f f)·m
        let v = Vec6::new(0.3, -1.0, 2.0, 0.5, 0.1, -0.7);
        let m = Vec6::new(1.0, 2.0, -0.5, 0.2, 0.3, 0.9);
        let f = Vec6::new(-0.4, 0.8, 1.5, 2.0, -1.0, 0.25);
        let lhs = f.dot(&cross_motion(&v, &m));
        let rhs = -cross_force(&v, &f).dot(&m);
        assert!((lhs - rhs).abs() < 1e-12);
    }

    #[test]
    fn spatial_inertia_gives_kinetic_energy() {
        // A point-like body of mass 2 at c moving with pure translation u: KE = ½ m |u|².
        let c = Vec3::new(1.0, -2.0, 0.5);
        let inertia = spatial_inertia(2.0, &c, &Mat3::zeros());
        let v = spatial(&Vec3::zeros(), &Vec3::new(0.0, 3.0, 0.0));
        let ke = 0.5 * v.dot(&(inertia * v));
        assert!((ke - 9.0).abs() < 1e-12);
        // Pure rotation ω about the origin: point velocity ω × c.
        let w = Vec3::new(0.0, 0.0, 1.5);
        let v = spatial(&w, &Vec3::zeros());
        let ke = 0.5 * v.dot(&(inertia * v));
        let expected = 0.5 * 2.0 * w.cross(&c).norm_squared();
        assert!((ke - expected).abs() < 1e-12);
    }

    #[test]
    fn tangent_basis_is_orthonormal_right_handed() {
        for n in [Vec3::z(), Vec3::x(), Vec3::new(1.0, 1.0, 1.0).normalize(), -Vec3::y()] {
            let (t1, t2) = tangent_basis(&n);
            assert!(t1.dot(&n).abs() < 1e-12 && t2.dot(&n).abs() < 1e-12 && t1.dot(&t2).abs() < 1e-12);
            assert!((n.cross(&t1) - t2).norm() < 1e-12);
        }
    }
}
