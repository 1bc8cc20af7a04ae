//! Forward-mode dual numbers: a value and its derivatives with respect to `N` seeded unknowns.
//!
//! The step's residual is written once, generic over `N`: with `N = 0` it evaluates the plain
//! value (the line search, the pose update), with `N` equal to the number of unknowns it yields
//! the exact Jacobian in one pass (no hand-derived blocks, no finite-difference noise).

use std::ops::{Add, Div, Mul, Neg, Sub};

/// `v + Σ d[i] ε_i` with `ε_i ε_j = 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual<const N: usize> {
    /// The value.
    pub v: f64,
    /// Derivatives with respect to the seeded unknowns.
    pub d: [f64; N],
}

impl<const N: usize> Dual<N> {
    /// A constant (all derivatives zero).
    #[inline]
    pub fn cst(v: f64) -> Self {
        Dual { v, d: [0.0; N] }
    }

    /// Unknown number `i` with value `v` (`∂/∂z_i = 1`); a constant when `i ≥ N`.
    #[inline]
    pub fn var(v: f64, i: usize) -> Self {
        let mut d = [0.0; N];
        if i < N {
            d[i] = 1.0;
        }
        Dual { v, d }
    }

    /// `f(v)` with derivative `df` at `v` (chain rule).
    #[inline]
    fn chain(self, value: f64, slope: f64) -> Self {
        let mut d = self.d;
        d.iter_mut().for_each(|x| *x *= slope);
        Dual { v: value, d }
    }

    /// Square root (the caller keeps the argument away from 0, where the slope is infinite).
    #[inline]
    pub fn sqrt(self) -> Self {
        let s = self.v.sqrt();
        self.chain(s, 0.5 / s)
    }

    /// Sine.
    #[inline]
    pub fn sin(self) -> Self {
        self.chain(self.v.sin(), self.v.cos())
    }

    /// Cosine.
    #[inline]
    pub fn cos(self) -> Self {
        self.chain(self.v.cos(), -self.v.sin())
    }

    /// The larger of two values, with the derivative of the larger one (a generalised
    /// derivative at ties).
    #[inline]
    pub fn max(self, other: Self) -> Self {
        if other.v > self.v {
            other
        } else {
            self
        }
    }
}

impl<const N: usize> Add for Dual<N> {
    type Output = Self;
    #[inline]
    fn add(mut self, o: Self) -> Self {
        self.v += o.v;
        self.d.iter_mut().zip(o.d.iter()).for_each(|(a, b)| *a += b);
        self
    }
}

impl<const N: usize> Sub for Dual<N> {
    type Output = Self;
    #[inline]
    fn sub(mut self, o: Self) -> Self {
        self.v -= o.v;
        self.d.iter_mut().zip(o.d.iter()).for_each(|(a, b)| *a -= b);
        self
    }
}

impl<const N: usize> Mul for Dual<N> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        let mut d = [0.0; N];
        for ((x, a), b) in d.iter_mut().zip(self.d.iter()).zip(o.d.iter()) {
            *x = a * o.v + self.v * b;
        }
        Dual { v: self.v * o.v, d }
    }
}

impl<const N: usize> Div for Dual<N> {
    type Output = Self;
    #[inline]
    fn div(self, o: Self) -> Self {
        let inv = 1.0 / o.v;
        let value = self.v * inv;
        let mut d = [0.0; N];
        for ((x, a), b) in d.iter_mut().zip(self.d.iter()).zip(o.d.iter()) {
            *x = (a - value * b) * inv;
        }
        Dual { v: value, d }
    }
}

impl<const N: usize> Neg for Dual<N> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        self.chain(-self.v, -1.0)
    }
}

impl<const N: usize> Add<f64> for Dual<N> {
    type Output = Self;
    #[inline]
    fn add(mut self, o: f64) -> Self {
        self.v += o;
        self
    }
}

impl<const N: usize> Sub<f64> for Dual<N> {
    type Output = Self;
    #[inline]
    fn sub(mut self, o: f64) -> Self {
        self.v -= o;
        self
    }
}

impl<const N: usize> Mul<f64> for Dual<N> {
    type Output = Self;
    #[inline]
    fn mul(self, o: f64) -> Self {
        self.chain(self.v * o, o)
    }
}

impl<const N: usize> Div<f64> for Dual<N> {
    type Output = Self;
    #[inline]
    fn div(self, o: f64) -> Self {
        self * (1.0 / o)
    }
}

/// A 3-vector of duals.
pub type V3<const N: usize> = [Dual<N>; 3];

// The vector helpers below write each derivative once, in the same order of operations as the
// scalar operators (`x y` has `∂ = ∂x y.v + x.v ∂y`), so their results are bit for bit those of
// the operator expressions in their docs, without the operators' temporaries of `8 (N + 1)` bytes
// each (on the arm under ECP they were a tenth of the step's time in `memmove`).

/// Entry `j` of `∂(x y)`, as [`Mul`] computes it.
#[inline(always)]
fn mul_d<const N: usize>(x: &Dual<N>, y: &Dual<N>, j: usize) -> f64 {
    x.d[j] * y.v + x.v * y.d[j]
}

/// `a + b`.
#[inline]
pub fn add3<const N: usize>(a: &V3<N>, b: &V3<N>) -> V3<N> {
    let mut r = [Dual::cst(0.0); 3];
    for k in 0..3 {
        r[k].v = a[k].v + b[k].v;
        for j in 0..N {
            r[k].d[j] = a[k].d[j] + b[k].d[j];
        }
    }
    r
}

/// `a − b`.
#[inline]
pub fn sub3<const N: usize>(a: &V3<N>, b: &V3<N>) -> V3<N> {
    let mut r = [Dual::cst(0.0); 3];
    for k in 0..3 {
        r[k].v = a[k].v - b[k].v;
        for j in 0..N {
            r[k].d[j] = a[k].d[j] - b[k].d[j];
        }
    }
    r
}

/// `c ← c + s a` (computed as `add3(c, scale3(a, s))`), in place.
#[inline]
pub fn add_scaled3<const N: usize>(c: &mut V3<N>, a: &V3<N>, s: &Dual<N>) {
    for k in 0..3 {
        c[k].v += a[k].v * s.v;
        for j in 0..N {
            c[k].d[j] += mul_d(&a[k], s, j);
        }
    }
}

/// `s a` (computed as `a[k] * s`).
#[inline]
pub fn scale3<const N: usize>(a: &V3<N>, s: Dual<N>) -> V3<N> {
    let mut r = [Dual::cst(0.0); 3];
    for k in 0..3 {
        r[k].v = a[k].v * s.v;
        for j in 0..N {
            r[k].d[j] = mul_d(&a[k], &s, j);
        }
    }
    r
}

/// `a · b` (computed as `a[0] * b[0] + a[1] * b[1] + a[2] * b[2]`).
#[inline]
pub fn dot3<const N: usize>(a: &V3<N>, b: &V3<N>) -> Dual<N> {
    let mut r = Dual::cst(a[0].v * b[0].v + a[1].v * b[1].v + a[2].v * b[2].v);
    for j in 0..N {
        r.d[j] = mul_d(&a[0], &b[0], j) + mul_d(&a[1], &b[1], j) + mul_d(&a[2], &b[2], j);
    }
    r
}

/// `a · c` for a constant `c`.
#[inline]
pub fn dot3c<const N: usize>(a: &V3<N>, c: &[f64; 3]) -> Dual<N> {
    a[0] * c[0] + a[1] * c[1] + a[2] * c[2]
}

/// `a × b` (computed as `[a[1] * b[2] − a[2] * b[1], …]`).
#[inline]
pub fn cross3<const N: usize>(a: &V3<N>, b: &V3<N>) -> V3<N> {
    let mut r = [Dual::cst(0.0); 3];
    for (k, (i1, i2)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
        r[k].v = a[i1].v * b[i2].v - a[i2].v * b[i1].v;
        for j in 0..N {
            r[k].d[j] = mul_d(&a[i1], &b[i2], j) - mul_d(&a[i2], &b[i1], j);
        }
    }
    r
}

/// A constant vector.
#[inline]
pub fn cst3<const N: usize>(c: &[f64; 3]) -> V3<N> {
    [Dual::cst(c[0]), Dual::cst(c[1]), Dual::cst(c[2])]
}

/// Fischer–Burmeister function `φ(a, b) = a + b − √(a² + b²)`: zero exactly when `a ≥ 0`,
/// `b ≥ 0`, `a b = 0`. At `(0, 0)` the derivative is the generalised one
/// `(1 − 1/√2, 1 − 1/√2)`.
#[inline]
pub fn fischer_burmeister<const N: usize>(a: Dual<N>, b: Dual<N>) -> Dual<N> {
    let r = (a.v * a.v + b.v * b.v).sqrt();
    let (ga, gb) = if r > 1e-300 { (1.0 - a.v / r, 1.0 - b.v / r) } else { (1.0 - std::f64::consts::FRAC_1_SQRT_2, 1.0 - std::f64::consts::FRAC_1_SQRT_2) };
    let mut d = [0.0; N];
    for ((x, da), db) in d.iter_mut().zip(a.d.iter()).zip(b.d.iter()) {
        *x = ga * da + gb * db;
    }
    Dual { v: a.v + b.v - r, d }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_quotients_and_functions_have_the_calculus_derivatives() {
        let x = Dual::<2>::var(0.7, 0);
        let y = Dual::<2>::var(-1.3, 1);
        let f = (x * y + x.sin()) / (y * y + 2.0) - x.cos() * 3.0 + (x * x + 1.0).sqrt();
        let (xv, yv) = (0.7f64, -1.3f64);
        let q = yv * yv + 2.0;
        let dfx = (yv + xv.cos()) / q + 3.0 * xv.sin() + xv / (xv * xv + 1.0).sqrt();
        let dfy = xv / q - (xv * yv + xv.sin()) * 2.0 * yv / (q * q);
        assert!((f.d[0] - dfx).abs() < 1e-14 && (f.d[1] - dfy).abs() < 1e-14, "{f:?} vs ({dfx}, {dfy})");
    }

    #[test]
    fn the_vector_helpers_equal_the_operator_expressions_bit_for_bit() {
        let mut next = crate::math::xorshift(0x51f1_5e3d_a7c2_0b44);
        let mut dual = || Dual::<7> { v: next(), d: std::array::from_fn(|_| next()) };
        for _ in 0..50 {
            let (a, b, s): (V3<7>, V3<7>, Dual<7>) = ([dual(), dual(), dual()], [dual(), dual(), dual()], dual());
            let same = |x: &V3<7>, y: &V3<7>| (0..3).all(|k| x[k].v.to_bits() == y[k].v.to_bits() && x[k].d.iter().zip(&y[k].d).all(|(p, q)| p.to_bits() == q.to_bits()));
            assert!(same(&add3(&a, &b), &[a[0] + b[0], a[1] + b[1], a[2] + b[2]]));
            assert!(same(&sub3(&a, &b), &[a[0] - b[0], a[1] - b[1], a[2] - b[2]]));
            assert!(same(&scale3(&a, s), &[a[0] * s, a[1] * s, a[2] * s]));
            let cross = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
            assert!(same(&cross3(&a, &b), &cross));
            let mut c = b;
            add_scaled3(&mut c, &a, &s);
            assert!(same(&c, &add3(&b, &scale3(&a, s))));
            let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
            let d = dot3(&a, &b);
            assert!(d.v.to_bits() == dot.v.to_bits() && d.d.iter().zip(&dot.d).all(|(p, q)| p.to_bits() == q.to_bits()));
        }
    }

    #[test]
    fn fischer_burmeister_is_zero_exactly_on_the_complementarity_set() {
        let fb = |a: f64, b: f64| fischer_burmeister(Dual::<0>::cst(a), Dual::<0>::cst(b)).v;
        assert_eq!(fb(0.0, 3.0), 0.0);
        assert_eq!(fb(2.0, 0.0), 0.0);
        assert!(fb(1.0, 1.0) > 0.5 && fb(-1.0, 2.0) < -0.5 && fb(1.0, -0.5) < -0.4);
    }
}
