//! The Stable Neo-Hookean law (Macklin et al. 2019, "Non-Smooth Newton Methods for Deformable
//! Multi-Body Dynamics", §9.2.2 and App. B; after Smith et al. 2018, "Stable Neo-Hookean Flesh
//! Simulation") for the linear tetrahedra of [`super::FemSystem`].
//!
//! # Energy
//! With the deformation gradient `F` (dimensionless), `I_C = ‖F‖²_F = tr(FᵀF)` and `J = det F`,
//!
//! ```text
//!   Ψ(F) = C₁ (I_C − 3) + D₁ (J − α)²        (J/m³)
//!   C₁ = μ/2,  D₁ = (λ + μ)/2,  α = 1 + μ/(λ + μ)
//! ```
//!
//! with the Lamé parameters `μ`, `λ` (Pa) of the material's Young's modulus and Poisson ratio.
//! As in the paper, the `−μ/2 ln(I_C + 1)` term of Smith et al. is left out; the paper leaves the
//! parameters to Smith et al., and without that term the choice above is the one that is
//! stress-free at rest (`2C₁ + 2D₁(1 − α) = 0`) and linearises to isotropic linear elasticity
//! (`P ≈ λ tr(ε) I + 2μ ε`). There is no logarithm: the law is defined for inverted elements
//! (`J ≤ 0`), where the volume term pushes `J` back up.
//!
//! # Stress and Hessian
//! First Piola–Kirchhoff stress (Pa): `P = ∂Ψ/∂F = 2C₁ F + 2D₁ (J − α) cof F`, with
//! `cof F = ∂J/∂F` (columns `f₁×f₂, f₂×f₀, f₀×f₁` for the columns `f_i` of `F`). The paper's
//! App. B prints `(J − 1)` in the gradient; its own Hessian (and stress-freeness at rest) needs
//! `(J − α)`, which we use.
//!
//! Hessian (Pa), on `vec F` stacked column by column (nalgebra's storage order, entry `(i, j)` at
//! `i + 3j`): `∂²Ψ/∂F² = 2C₁ I₉ + 2D₁ g gᵀ + 2D₁ (J − α) H_J` with `g = vec(cof F)` and `H_J =
//! ∂²J/∂F²`, whose 3×3 block `(k, l)` is `∂(∂J/∂f_k)/∂f_l`: zero on the diagonal and
//! `±[f_m]×` off it (`[a]×` the cross-product matrix). It is indefinite in general (already at
//! rest the rotation modes sit at zero, and under stretch or compression some go negative), so
//! the implicit step uses its projection to the positive semi-definite cone, `Q max(Λ, 0) Qᵀ`
//! (the paper's §9.2.2 "projected to SPD"; Teran et al. 2005 do the same per element), from the
//! Hessian's eigensystem in closed form (Smith et al. 2018, §4.2): six twist/flip modes with
//! eigenvalues `2C₁ ± 2D₁(J − α) σ_k` and three scaling modes of a 3×3 matrix in the singular
//! values (see [`StableNeoHookean::eigensystem`]). It matches a numerical 9×9 eigen-decomposition
//! ([`project_psd`], the unit tests' reference) to round-off and costs a 3×3 SVD and a 3×3
//! eigen-decomposition per element.
//!
//! # Element
//! For a tetrahedron with rest volume `V` (m³) and shape-function gradients `g_a` (1/m),
//! `F = Σ_a x_a g_aᵀ`; the internal force on node `a` (N, the gradient of the element energy,
//! the force *on* the node is its opposite) is `f_a = V P g_a` and the stiffness block
//! `K_ab = V Σ_{j,l} g_a[j] g_b[l] H_(j,l)` (N/m, `H_(j,l)` the 3×3 block of the projected Hessian
//! coupling column `j` of `F` with column `l`).

use crate::math::{skew, Mat3, Vec3};
use nalgebra::{SMatrix, SymmetricEigen};

/// 9×9 matrix on `vec F` (column-major stacking), Pa.
pub type Mat9 = SMatrix<f64, 9, 9>;

/// The Stable Neo-Hookean coefficients of one material (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StableNeoHookean {
    /// `C₁ = μ/2` (Pa).
    pub c1: f64,
    /// `D₁ = (λ + μ)/2` (Pa).
    pub d1: f64,
    /// `α = 1 + μ/(λ + μ)` (dimensionless): the rest volume ratio the volume term aims at.
    pub alpha: f64,
}

/// Cofactor matrix `cof F = det(F) F⁻ᵀ = ∂(det F)/∂F`, defined for every `F` (singular and
/// inverted included): its columns are `f₁×f₂, f₂×f₀, f₀×f₁`.
pub fn cofactor(f: &Mat3) -> Mat3 {
    let (f0, f1, f2) = (f.column(0).into_owned(), f.column(1).into_owned(), f.column(2).into_owned());
    Mat3::from_columns(&[f1.cross(&f2), f2.cross(&f0), f0.cross(&f1)])
}

impl StableNeoHookean {
    /// The coefficients for the Lamé parameters `lambda` (λ, Pa) and `mu` (μ, Pa); needs
    /// `λ + μ > 0` (true for every accepted material: `E > 0`, `−1 < ν < 0.5`).
    pub fn from_lame(lambda: f64, mu: f64) -> Self {
        StableNeoHookean { c1: 0.5 * mu, d1: 0.5 * (lambda + mu), alpha: 1.0 + mu / (lambda + mu) }
    }

    /// Energy density `Ψ(F)` (J/m³). Not zero at rest: `Ψ(I) = D₁ (1 − α)²`, a constant that
    /// does not enter any force.
    pub fn energy_density(&self, f: &Mat3) -> f64 {
        let jm = f.determinant() - self.alpha;
        self.c1 * (f.norm_squared() - 3.0) + self.d1 * jm * jm
    }

    /// First Piola–Kirchhoff stress `P = 2C₁ F + 2D₁ (J − α) cof F` (Pa).
    pub fn pk1(&self, f: &Mat3) -> Mat3 {
        f * (2.0 * self.c1) + cofactor(f) * (2.0 * self.d1 * (f.determinant() - self.alpha))
    }

    /// The exact Hessian `∂²Ψ/∂F²` (Pa) on `vec F` (column-major), symmetric, in general
    /// indefinite.
    pub fn hessian(&self, f: &Mat3) -> Mat9 {
        let cof = cofactor(f);
        let g = nalgebra::SVector::<f64, 9>::from_column_slice(cof.as_slice());
        let s = 2.0 * self.d1 * (f.determinant() - self.alpha);
        let mut h = g * g.transpose() * (2.0 * self.d1);
        for i in 0..9 {
            h[(i, i)] += 2.0 * self.c1;
        }
        // ∂²J/∂f_k∂f_l = ε_klm [f_m]× for k ≠ l (f_m the remaining column)
        for (k, l, m) in [(0, 1, 2), (1, 2, 0), (2, 0, 1)] {
            let b = skew(&f.column(m).into_owned()) * s;
            // block (k, l) = −[f_m]×, block (l, k) = +[f_m]× (its transpose)
            for r in 0..3 {
                for c in 0..3 {
                    h[(3 * k + r, 3 * l + c)] -= b[(r, c)];
                    h[(3 * l + r, 3 * k + c)] += b[(r, c)];
                }
            }
        }
        h
    }

    /// The Hessian projected to the positive semi-definite cone (Pa): its eigen-decomposition
    /// `Σ_m λ_m vec(Q_m) vec(Q_m)ᵀ` (see [`StableNeoHookean::eigensystem`]) with negative `λ_m`
    /// set to zero. Allocates nothing.
    pub fn projected_hessian(&self, f: &Mat3) -> Mat9 {
        let (u, modes) = self.eigensystem(f);
        let mut h = Mat9::zeros();
        for (lambda, b, v) in modes.iter() {
            if *lambda > 0.0 {
                let q = u * b * v.transpose();
                let q = nalgebra::SVector::<f64, 9>::from_column_slice(q.as_slice());
                h += q * q.transpose() * *lambda;
            }
        }
        h
    }

    /// The nine eigenpairs of the Hessian in closed form (Smith et al. 2018, §4.2, for this
    /// energy): with the rotation-variant SVD `F = U Σ Vᵀ` (`U`, `V` rotations, `σ₃` negative for
    /// an inverted element), every eigenvector is `Q = U B Vᵀ` with a 3×3 `B`:
    ///
    /// - *twist* `B = (e_i e_jᵀ − e_j e_iᵀ)/√2`, eigenvalue `2C₁ + 2D₁(J − α) σ_k`, and
    /// - *flip* `B = (e_i e_jᵀ + e_j e_iᵀ)/√2`, eigenvalue `2C₁ − 2D₁(J − α) σ_k`, for the three
    ///   pairs `(i, j)` (`k` the third index);
    /// - *scaling* `B = diag(w)` with `(λ, w)` the eigenpairs of the 3×3 Hessian in the singular
    ///   values, `A_ii = 2C₁ + 2D₁ (J/σ_i)²`, `A_ij = 2D₁ σ_k (2J − α)` (`J/σ_i` the product of
    ///   the other two).
    ///
    /// Returns `U` and, per mode, `(eigenvalue, B, V)` (the same `V` for all; kept per mode so
    /// that `Q = U B Vᵀ` reads directly). Allocates nothing.
    pub fn eigensystem(&self, f: &Mat3) -> (Mat3, [(f64, Mat3, Mat3); 9]) {
        let (u, sigma, v) = rotation_variant_svd(f);
        let j = sigma.x * sigma.y * sigma.z;
        let s = 2.0 * self.d1 * (j - self.alpha);
        let c = 2.0 * self.c1;
        let cof = Vec3::new(sigma.y * sigma.z, sigma.x * sigma.z, sigma.x * sigma.y);
        let k0 = 2.0 * j - self.alpha;
        let mut a = Mat3::zeros();
        for i in 0..3 {
            for l in 0..3 {
                a[(i, l)] = if i == l { c + 2.0 * self.d1 * cof[i] * cof[i] } else { 2.0 * self.d1 * sigma[3 - i - l] * k0 };
            }
        }
        let eig = SymmetricEigen::new(a);
        let r = std::f64::consts::FRAC_1_SQRT_2;
        let mut modes = [(0.0, Mat3::zeros(), v); 9];
        for m in 0..3 {
            modes[m] = (eig.eigenvalues[m], Mat3::from_diagonal(&eig.eigenvectors.column(m).into_owned()), v);
        }
        for (n, (i, l, k)) in [(0, 1, 2), (0, 2, 1), (1, 2, 0)].into_iter().enumerate() {
            let mut twist = Mat3::zeros();
            twist[(i, l)] = r;
            twist[(l, i)] = -r;
            let mut flip = Mat3::zeros();
            flip[(i, l)] = r;
            flip[(l, i)] = r;
            modes[3 + 2 * n] = (c + s * sigma[k], twist, v);
            modes[4 + 2 * n] = (c - s * sigma[k], flip, v);
        }
        (u, modes)
    }

    /// Internal forces `f_a = V P g_a` (N; the force *on* node `a` is `−f_a`) and the 4×4 blocks
    /// `K_ab` (N/m) of the projected stiffness of one tetrahedron with deformation gradient `f`,
    /// shape-function gradients `grads` (1/m) and rest volume `volume` (m³):
    /// `K_ab = V Σ_m max(λ_m, 0) (Q_m g_a)(Q_m g_b)ᵀ` over the Hessian's eigenpairs.
    pub fn element(&self, f: &Mat3, grads: &[Vec3; 4], volume: f64) -> ([Vec3; 4], [[Mat3; 4]; 4]) {
        let p = self.pk1(f);
        let forces = grads.map(|g| p * g * volume);
        let (u, modes) = self.eigensystem(f);
        let v = modes[0].2;
        // in the U frame: Q_m g_a = U B_m (Vᵀ g_a)
        let gh = grads.map(|g| v.transpose() * g);
        let mut kh = [[Mat3::zeros(); 4]; 4];
        for (lambda, b, _) in modes.iter() {
            if *lambda <= 0.0 {
                continue;
            }
            let w = gh.map(|g| b * g);
            for a in 0..4 {
                for c in a..4 {
                    kh[a][c] += w[a] * w[c].transpose() * (*lambda * volume);
                }
            }
        }
        let mut k = [[Mat3::zeros(); 4]; 4];
        for a in 0..4 {
            for c in a..4 {
                let blk = u * kh[a][c] * u.transpose();
                k[a][c] = blk;
                k[c][a] = blk.transpose();
            }
        }
        (forces, k)
    }
}

/// The rotation-variant SVD `F = U diag(σ) Vᵀ` with `U`, `V` proper rotations: from the
/// ordinary SVD, a reflection in `U` or `V` is moved into the sign of `σ₃` (the smallest), so
/// `σ₃ < 0` exactly when `det F < 0`.
pub fn rotation_variant_svd(f: &Mat3) -> (Mat3, Vec3, Mat3) {
    let svd = f.svd(true, true);
    let (mut u, mut v) = (svd.u.unwrap(), svd.v_t.unwrap().transpose());
    let mut sigma = svd.singular_values;
    // nalgebra sorts the singular values in decreasing order: index 2 is the smallest
    if u.determinant() < 0.0 {
        let mut col = u.column_mut(2);
        col *= -1.0;
        sigma[2] = -sigma[2];
    }
    if v.determinant() < 0.0 {
        let mut col = v.column_mut(2);
        col *= -1.0;
        sigma[2] = -sigma[2];
    }
    (u, sigma, v)
}

/// `h` (symmetric) with its negative eigenvalues clamped to zero, by a numerical 9×9 symmetric
/// eigen-decomposition (stack matrices, allocates nothing): the reference the closed-form
/// [`StableNeoHookean::projected_hessian`] is tested against.
pub fn project_psd(h: &Mat9) -> Mat9 {
    let eig = SymmetricEigen::new(*h);
    if eig.eigenvalues.iter().all(|&l| l >= 0.0) {
        return *h;
    }
    let mut q_scaled = eig.eigenvectors;
    for (i, &l) in eig.eigenvalues.iter().enumerate() {
        let mut c = q_scaled.column_mut(i);
        c *= l.max(0.0);
    }
    let p = q_scaled * eig.eigenvectors.transpose();
    // symmetrise the round-off
    (p + p.transpose()) * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// A tomato-like material: E = 0.1 MPa, ν = 0.45.
    fn law() -> (StableNeoHookean, f64, f64) {
        let (e, nu) = (1.0e5, 0.45);
        let mu = e / (2.0 * (1.0 + nu));
        let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
        (StableNeoHookean::from_lame(lambda, mu), lambda, mu)
    }

    /// Deformation gradients: rotations times stretches, large strains, some inverted.
    fn samples() -> Vec<Mat3> {
        let mut r = rng(0x9E3779B97F4A7C15);
        let mut out = vec![Mat3::identity()];
        for k in 0..200 {
            let rot = nalgebra::Rotation3::new(Vec3::new(r(), r(), r()) * 2.0).into_inner();
            let mut s = Mat3::identity() + Mat3::from_fn(|_, _| 0.5 * r());
            if k % 4 == 0 {
                s.set_column(1, &(-s.column(1)));
            }
            out.push(rot * s);
        }
        out
    }

    fn rel(a: f64, b: f64, scale: f64) -> f64 {
        (a - b).abs() / scale
    }

    #[test]
    fn stress_is_the_gradient_of_the_energy_and_the_hessian_the_derivative_of_the_stress() {
        let (law, _, mu) = law();
        let (mut worst_p, mut worst_h): (f64, f64) = (0.0, 0.0);
        for f in samples() {
            let p = law.pk1(&f);
            let h = law.hessian(&f);
            // symmetric
            assert!((h - h.transpose()).abs().max() <= 1e-12 * h.abs().max());
            let eps = 1e-6 * f.norm().max(1.0);
            let p_scale = p.abs().max().max(mu);
            let h_scale = h.abs().max();
            for idx in 0..9 {
                let mut fp = f;
                let mut fm = f;
                fp.as_mut_slice()[idx] += eps;
                fm.as_mut_slice()[idx] -= eps;
                // central differences: P_idx = ∂Ψ/∂F_idx
                let fd = (law.energy_density(&fp) - law.energy_density(&fm)) / (2.0 * eps);
                worst_p = worst_p.max(rel(fd, p.as_slice()[idx], p_scale));
                // column idx of the Hessian = ∂ vec P / ∂F_idx
                let dp = (law.pk1(&fp) - law.pk1(&fm)) / (2.0 * eps);
                for r in 0..9 {
                    worst_h = worst_h.max(rel(dp.as_slice()[r], h[(r, idx)], h_scale));
                }
            }
        }
        println!("largest relative error: stress {worst_p:.2e}, Hessian {worst_h:.2e}");
        assert!(worst_p <= 1e-6, "P vs finite differences of Ψ: {worst_p:e}");
        assert!(worst_h <= 1e-6, "Hessian vs finite differences of P: {worst_h:e}");
    }

    #[test]
    fn closed_form_eigensystem_reconstructs_the_hessian() {
        let (law, _, _) = law();
        let mut worst: f64 = 0.0;
        for f in samples() {
            let h = law.hessian(&f);
            let (u, modes) = law.eigensystem(&f);
            assert!((u.determinant() - 1.0).abs() < 1e-9 && (modes[0].2.determinant() - 1.0).abs() < 1e-9, "U, V rotations");
            let mut sum = Mat9::zeros();
            let mut basis = [nalgebra::SVector::<f64, 9>::zeros(); 9];
            for (m, (lambda, b, v)) in modes.iter().enumerate() {
                let q = u * b * v.transpose();
                basis[m] = nalgebra::SVector::<f64, 9>::from_column_slice(q.as_slice());
                sum += basis[m] * basis[m].transpose() * *lambda;
            }
            // orthonormal eigenvectors
            for m in 0..9 {
                for n in 0..9 {
                    let d = basis[m].dot(&basis[n]) - if m == n { 1.0 } else { 0.0 };
                    assert!(d.abs() < 1e-9, "basis {m}·{n}");
                }
            }
            worst = worst.max((sum - h).abs().max() / h.abs().max());
        }
        println!("closed-form eigensystem: largest relative entry error {worst:.2e}");
        assert!(worst < 1e-9, "{worst:e}");
    }

    #[test]
    fn projected_hessian_is_psd_and_exact_where_the_hessian_is() {
        let (law, _, mu) = law();
        let (mut clamped, mut exact) = (0, 0);
        for f in samples() {
            let h = law.hessian(&f);
            let hp = law.projected_hessian(&f);
            let scale = h.abs().max();
            assert!((hp - hp.transpose()).abs().max() <= 1e-12 * scale);
            let eig_p = SymmetricEigen::new(hp).eigenvalues;
            assert!(eig_p.iter().all(|&l| l >= -1e-10 * scale), "projected eigenvalues {eig_p:?}");
            // the closed form equals the numerical projection (nearest PSD matrix)
            let reference = project_psd(&h);
            assert!((hp - reference).abs().max() <= 1e-9 * scale, "closed form vs numerical projection");
            let eig = SymmetricEigen::new(h).eigenvalues;
            if eig.iter().all(|&l| l >= 0.0) {
                exact += 1;
                assert!((hp - h).abs().max() <= 1e-9 * scale);
            } else {
                clamped += 1;
                // the projection differs from H by the negative part, whose Frobenius norm is
                // the norm of the negative eigenvalues
                let neg: f64 = eig.iter().map(|l| l.min(0.0).powi(2)).sum::<f64>().sqrt();
                assert!(((hp - h).norm() - neg).abs() <= 1e-9 * scale, "{} vs {neg}", (hp - h).norm());
                // positive eigen-directions are kept: vᵀ Hp v = vᵀ H v for them
                let e = SymmetricEigen::new(h);
                for (i, &l) in e.eigenvalues.iter().enumerate() {
                    let v = e.eigenvectors.column(i);
                    let q = (v.transpose() * hp * v)[(0, 0)];
                    assert!((q - l.max(0.0)).abs() <= 1e-9 * scale);
                }
            }
        }
        println!("{exact} samples with a PSD Hessian, {clamped} projected");
        assert!(clamped > 0 && exact > 0, "the samples cover both cases");
        // at rest: PSD with the three rotation modes at zero stiffness
        let h0 = law.hessian(&Mat3::identity());
        let e0 = SymmetricEigen::new(h0).eigenvalues;
        assert!(e0.iter().all(|&l| l >= -1e-9 * mu));
        assert_eq!(e0.iter().filter(|l| l.abs() < 1e-9 * mu).count(), 3, "three rotation modes: {e0:?}");
    }

    #[test]
    fn element_stiffness_is_the_projected_hessian_mapped_by_the_shape_gradients() {
        // K_ab = V Σ_jl g_a[j] g_b[l] H⁺_(j,l), H⁺ from the numerical projection
        let (law, _, _) = law();
        let rest = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.02, 0.09, 0.0), Vec3::new(0.03, 0.02, 0.08)];
        let dm = Mat3::from_columns(&[rest[1] - rest[0], rest[2] - rest[0], rest[3] - rest[0]]);
        let dm_inv = dm.try_inverse().unwrap();
        let (g1, g2, g3) = (dm_inv.row(0).transpose(), dm_inv.row(1).transpose(), dm_inv.row(2).transpose());
        let grads = [-(g1 + g2 + g3), g1, g2, g3];
        let volume = dm.determinant() / 6.0;
        for f in samples() {
            let (_, k) = law.element(&f, &grads, volume);
            let hp = project_psd(&law.hessian(&f));
            let scale = hp.abs().max() * volume * 100.0 * 100.0;
            for a in 0..4 {
                for b in 0..4 {
                    let mut want = Mat3::zeros();
                    for j in 0..3 {
                        for l in 0..3 {
                            want += hp.fixed_view::<3, 3>(3 * j, 3 * l) * (grads[a][j] * grads[b][l] * volume);
                        }
                    }
                    assert!((k[a][b] - want).abs().max() <= 1e-9 * scale, "K[{a}][{b}]: {} vs {want}", k[a][b]);
                }
            }
        }
    }

    #[test]
    fn rest_is_stress_free_and_small_strain_is_linear_elasticity() {
        let (law, lambda, mu) = law();
        let p0 = law.pk1(&Mat3::identity());
        assert!(p0.abs().max() < 1e-9 * mu, "{p0}");
        let mut r = rng(7);
        for _ in 0..20 {
            let grad_u = Mat3::from_fn(|_, _| 1e-6 * r());
            let eps = (grad_u + grad_u.transpose()) * 0.5;
            let linear = Mat3::identity() * (lambda * eps.trace()) + eps * (2.0 * mu);
            let p = law.pk1(&(Mat3::identity() + grad_u));
            // error of second order in the strain: |∇u|² (λ + μ) ~ 1e-12 (λ + μ)
            let err = (p - linear).abs().max();
            assert!(err < 1e-3 * linear.abs().max(), "P {p} vs linear {linear}");
        }
        // ν = 0 (λ = 0, α = 2, C₁ = D₁ = μ/2), F = diag(1 + ε, 1, 1):
        // P₁₁ = μ (1 + ε) + μ (1 + ε − 2) = 2μ ε = E ε exactly
        let law0 = StableNeoHookean::from_lame(0.0, 0.5e5);
        let p = law0.pk1(&Mat3::from_diagonal(&Vec3::new(1.001, 1.0, 1.0)));
        assert!((p[(0, 0)] - 1e5 * 1e-3).abs() < 1e-9 * 1e2, "{p}");
    }

    /// The shape gradients `∇N_a` (1/m) of the tetrahedron `rest` and its volume (m³).
    fn shape_gradients(rest: &[Vec3; 4]) -> ([Vec3; 4], f64) {
        let dm = Mat3::from_columns(&[rest[1] - rest[0], rest[2] - rest[0], rest[3] - rest[0]]);
        let dm_inv = dm.try_inverse().unwrap();
        let g1 = dm_inv.row(0).transpose();
        let g2 = dm_inv.row(1).transpose();
        let g3 = dm_inv.row(2).transpose();
        ([-(g1 + g2 + g3), g1, g2, g3], dm.determinant() / 6.0)
    }

    #[test]
    fn inverted_element_is_pushed_back() {
        let (law, _, _) = law();
        // a unit right tetrahedron with its apex pushed through the base: J = −0.5
        let rest = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let (grads, _) = shape_gradients(&rest);
        let mut x = rest;
        x[3] = Vec3::new(0.1, 0.2, -0.5);
        let def = |x: &[Vec3; 4]| (0..4).fold(Mat3::zeros(), |acc, a| acc + x[a] * grads[a].transpose());
        let volume = 1.0 / 6.0;
        let f = def(&x);
        assert!(f.determinant() < 0.0);
        let (forces, _) = law.element(&f, &grads, volume);
        // the force on the nodes (−f_a) raises J: dJ = Σ_a (cof F g_a)·dx_a
        let cof = cofactor(&f);
        let rate: f64 = (0..4).map(|a| (cof * grads[a]).dot(&(-forces[a]))).sum();
        assert!(rate > 0.0, "dJ/dt along the elastic force {rate}");
        // gradient flow (explicit small steps along the force) un-inverts the element
        let step = 0.2 / (law.c1 + law.d1);
        for _ in 0..2000 {
            let f = def(&x);
            let (forces, _) = law.element(&f, &grads, volume);
            for a in 0..4 {
                x[a] -= forces[a] * step;
            }
        }
        let j = def(&x).determinant();
        assert!((j - 1.0).abs() < 0.05, "J after the relaxation {j}");
    }

    #[test]
    fn element_stiffness_is_the_derivative_of_the_element_force_where_the_hessian_is_psd() {
        let (law, _, _) = law();
        let mut r = rng(11);
        let rest = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.02, 0.09, 0.0), Vec3::new(0.03, 0.02, 0.08)];
        let (grads, volume) = shape_gradients(&rest);
        let def = |x: &[Vec3; 4]| (0..4).fold(Mat3::zeros(), |acc, a| acc + x[a] * grads[a].transpose());
        let mut tested = 0;
        for _ in 0..50 {
            // near J = α the Hessian is PSD (2C₁ ≥ 2D₁ |J − α| σ), no clamp: K is the exact tangent
            let s = (law.alpha + 0.04 * r()).cbrt();
            let rot = nalgebra::Rotation3::new(Vec3::new(r(), r(), r())).into_inner();
            let shear = Mat3::identity() * s + Mat3::from_fn(|_, _| 0.01 * r());
            let x = rest.map(|p| rot * shear * p);
            let f = def(&x);
            if SymmetricEigen::new(law.hessian(&f)).eigenvalues.iter().any(|&l| l < 0.0) {
                continue;
            }
            tested += 1;
            let (_, k) = law.element(&f, &grads, volume);
            let scale = k.iter().flatten().map(|b| b.abs().max()).fold(0.0, f64::max);
            let eps = 1e-7;
            for b in 0..4 {
                for c in 0..3 {
                    let (mut xp, mut xm) = (x, x);
                    xp[b][c] += eps;
                    xm[b][c] -= eps;
                    let (fp, _) = law.element(&def(&xp), &grads, volume);
                    let (fm, _) = law.element(&def(&xm), &grads, volume);
                    for a in 0..4 {
                        let col = (fp[a] - fm[a]) / (2.0 * eps);
                        let exact = k[a][b].column(c);
                        assert!((col - exact).abs().max() <= 1e-6 * scale, "K[{a}][{b}] column {c}: {col} vs {exact}");
                    }
                }
            }
        }
        assert!(tested > 10, "{tested}");
    }
}
