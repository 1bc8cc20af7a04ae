//! Spatial algebra in world coordinates (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2).
//!
//! Conventions used everywhere in the engine:
//! - A spatial motion vector is `[ω; v]` (angular first), a spatial force is `[n; f]`
//!   (moment first). Both are expressed in **world coordinates, about the world origin**
//!   unless a name says otherwise.
//! - `X_AB` is the pose of frame B measured in frame A (Drake naming): `p_A = X_AB * p_B`.
//! - Quaternions are stored `[x, y, z, w]` (the ROS order) in generalized coordinates.

pub mod branch_matrix;
pub mod dense;
pub mod sparse;

pub use branch_matrix::BranchMatrix;

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
/// mass, in world axes, is `i_com` (Featherstone eq. 2.63). The dense form of
/// [`SpatialInertia`], for tests and reports.
pub fn spatial_inertia(m: f64, c: &Vec3, i_com: &Mat3) -> Mat6 {
    SpatialInertia::from_com(m, c, i_com).to_matrix()
}

/// A rigid-body spatial inertia about the world origin in world coordinates, stored by its 10
/// independent numbers (Featherstone *RBDA* §2.13, eq. 2.63):
/// `I = [[Ī, [h]×], [[h]×ᵀ, m 1]]` with mass `m`, first moment `h = m c` (c: centre of mass)
/// and rotational inertia about the origin `Ī = I_c + m [c]×[c]×ᵀ`. Applying it to a motion
/// `[ω; v]` costs 24 multiplications instead of the 36 of the dense 6×6, and composite
/// inertias add 10 numbers instead of 36.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialInertia {
    /// Mass m (kg).
    pub mass: f64,
    /// First moment h = m c about the world origin (kg·m).
    pub first_moment: Vec3,
    /// Rotational inertia about the world origin, world axes (kg·m²).
    pub rotational: Mat3,
}

impl SpatialInertia {
    /// The zero inertia (a massless body).
    pub fn zeros() -> Self {
        SpatialInertia { mass: 0.0, first_moment: Vec3::zeros(), rotational: Mat3::zeros() }
    }

    /// From mass `m` (kg), centre of mass `c` (m, world) and the rotational inertia about the
    /// centre of mass in world axes `i_com` (kg·m²): `Ī = I_c + m (|c|² 1 − c cᵀ)`.
    #[inline]
    pub fn from_com(m: f64, c: &Vec3, i_com: &Mat3) -> Self {
        let rotational = i_com + m * (Mat3::identity() * c.norm_squared() - c * c.transpose());
        SpatialInertia { mass: m, first_moment: m * c, rotational }
    }

    /// `I · [ω; v] = [Ī ω + h × v; m v − h × ω]`: the momentum of a body moving with spatial
    /// velocity `[ω; v]`, or the force for a spatial acceleration.
    #[inline]
    pub fn apply(&self, motion: &Vec6) -> Vec6 {
        let (w, v) = (ang(motion), lin(motion));
        let h = &self.first_moment;
        spatial(&(self.rotational * w + h.cross(&v)), &(self.mass * v - h.cross(&w)))
    }

    /// The dense 6×6 matrix.
    pub fn to_matrix(&self) -> Mat6 {
        let hx = skew(&self.first_moment);
        let mut out = Mat6::zeros();
        out.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rotational);
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&hx);
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&hx.transpose());
        out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(self.mass * Mat3::identity()));
        out
    }
}

impl std::ops::AddAssign for SpatialInertia {
    #[inline]
    fn add_assign(&mut self, other: SpatialInertia) {
        self.mass += other.mass;
        self.first_moment += other.first_moment;
        self.rotational += other.rotational;
    }
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

/// Deterministic pseudo-random numbers in [-1, 1) (xorshift64), for the unit tests.
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> f64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
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
    fn structured_inertia_applies_like_the_dense_matrix() {
        let i_c = Mat3::new(0.3, 0.01, -0.02, 0.01, 0.2, 0.03, -0.02, 0.03, 0.25);
        let a = SpatialInertia::from_com(1.7, &Vec3::new(0.4, -0.1, 0.9), &i_c);
        let b = SpatialInertia::from_com(0.6, &Vec3::new(-0.2, 0.5, 0.1), &(0.5 * i_c));
        let mut sum = a;
        sum += b;
        let dense = a.to_matrix() + b.to_matrix();
        let v = Vec6::new(0.3, -1.0, 2.0, 0.5, 0.1, -0.7);
        assert!((sum.apply(&v) - dense * v).norm() < 1e-12);
        assert!((a.apply(&v) - a.to_matrix() * v).norm() < 1e-12);
        assert!((dense - dense.transpose()).norm() < 1e-15, "symmetric");
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
