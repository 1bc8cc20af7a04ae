//! What the data says about the fitted parameters: standard deviations, correlations and the
//! directions it cannot see.
//!
//! With the residuals weighted by their noise, the covariance of the least-squares estimate is
//! `C = s² (JᵀJ)⁻¹` (J = ∂r/∂x at the result), where `s² = Σ r² / (m − p)` rescales it when the
//! noise estimate was off (s ≈ 1 when the model fits to the noise). Parameters held at a bound
//! are left out of the inverse (their std is reported as 0: the bound, not the data, fixes
//! them). A 95 % interval is `x ± 1.96 std`.
//!
//! **Identifiability.** The columns of J are normalised to unit length and decomposed
//! (SVD). A singular value below [`WEAK_DIRECTION`] of the largest means a combination of
//! parameters that changes the residuals (almost) not at all: the data cannot tell those
//! parameters apart, and the warning names the parameters that make up that direction. A
//! pair whose correlation exceeds [`STRONG_CORRELATION`] in magnitude is named as well.

use nalgebra::DMatrix;

/// Relative singular value below which a direction of the normalised Jacobian is not
/// identifiable.
pub const WEAK_DIRECTION: f64 = 1e-3;
/// Correlation above which two parameters are reported as hard to separate.
pub const STRONG_CORRELATION: f64 = 0.98;

/// Uncertainty of a fit.
#[derive(Clone, Debug)]
pub struct Uncertainty {
    /// Standard deviation per parameter (its unit); infinite when the data does not see it.
    pub std: Vec<f64>,
    /// Correlation matrix (p × p; NaN where a std is 0 or infinite).
    pub correlation: Vec<Vec<f64>>,
    /// The residual scale `s` (1 when the residuals are as large as the estimated noise).
    pub residual_scale: f64,
    /// Warnings naming parameters the data cannot tell apart.
    pub warnings: Vec<String>,
}

/// The uncertainty of the fit `x` with Jacobian `jac` (m × p, per parameter unit) and residuals
/// `r`; `names` for the warnings, `held` for parameters at a bound.
pub fn uncertainty(jac: &DMatrix<f64>, r: &[f64], names: &[String], held: &[bool]) -> Uncertainty {
    let (m, p) = jac.shape();
    let dof = (m.saturating_sub(p)).max(1) as f64;
    let s2 = r.iter().map(|x| x * x).sum::<f64>() / dof;
    let free: Vec<usize> = (0..p).filter(|&i| !held[i]).collect();
    let norms: Vec<f64> = (0..p).map(|j| jac.column(j).norm()).collect();
    let mut warnings = Vec::new();
    for j in 0..p {
        if norms[j] == 0.0 {
            warnings.push(format!("the data does not see {}: changing it changes no fitted channel", names[j]));
        }
    }
    // normalised Jacobian of the free, seen parameters
    let seen: Vec<usize> = free.iter().copied().filter(|&j| norms[j] > 0.0).collect();
    let mut std = vec![f64::INFINITY; p];
    for j in 0..p {
        if held[j] {
            std[j] = 0.0;
        }
    }
    let mut cov = DMatrix::<f64>::from_element(p, p, f64::NAN);
    if !seen.is_empty() {
        let mut jn = DMatrix::<f64>::zeros(m, seen.len());
        for (c, &j) in seen.iter().enumerate() {
            jn.set_column(c, &(jac.column(j) / norms[j]));
        }
        let svd = jn.clone().svd(false, true);
        let smax = svd.singular_values.max();
        let vt = svd.v_t.as_ref().expect("asked for V");
        for (k, &sv) in svd.singular_values.iter().enumerate() {
            if sv < WEAK_DIRECTION * smax {
                let row = vt.row(k);
                let mut parts: Vec<(f64, &str)> = row.iter().zip(&seen).filter(|(c, _)| c.abs() > 0.2).map(|(c, &j)| (*c, names[j].as_str())).collect();
                parts.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
                let combo: Vec<String> = parts.iter().map(|(c, n)| format!("{c:+.2}·{n}")).collect();
                warnings.push(format!(
                    "the data cannot tell apart {}: the combination {} (normalised) barely changes the fitted channels (relative singular value {:.1e}); fix all but one of them, or record a motion that excites them differently",
                    parts.iter().map(|p| p.1).collect::<Vec<_>>().join(" and "),
                    combo.join(" "),
                    sv / smax
                ));
            }
        }
        // covariance in normalised coordinates: (JnᵀJn)⁻¹ = V Σ⁻² Vᵀ with weak directions
        // kept (they give the large variances they deserve), then scaled back
        let n = seen.len();
        let mut cn = DMatrix::<f64>::zeros(n, n);
        for (k, &sv) in svd.singular_values.iter().enumerate() {
            let w = if sv > 1e-14 * smax { 1.0 / (sv * sv) } else { f64::INFINITY };
            let v = vt.row(k);
            for a in 0..n {
                for b in 0..n {
                    cn[(a, b)] += w * v[a] * v[b];
                }
            }
        }
        for (a, &i) in seen.iter().enumerate() {
            for (b, &j) in seen.iter().enumerate() {
                cov[(i, j)] = s2 * cn[(a, b)] / (norms[i] * norms[j]);
            }
            std[i] = cov[(i, i)].max(0.0).sqrt();
        }
    }
    let mut correlation = vec![vec![f64::NAN; p]; p];
    for i in 0..p {
        for j in 0..p {
            if std[i] > 0.0 && std[j] > 0.0 && std[i].is_finite() && std[j].is_finite() {
                correlation[i][j] = (cov[(i, j)] / (std[i] * std[j])).clamp(-1.0, 1.0);
            }
        }
    }
    for i in 0..p {
        for j in i + 1..p {
            let c = correlation[i][j];
            if c.abs() > STRONG_CORRELATION && !warnings.iter().any(|w| w.contains(&names[i]) && w.contains(&names[j])) {
                warnings.push(format!("{} and {} are correlated {c:+.3}: the data barely tells them apart", names[i], names[j]));
            }
        }
    }
    Uncertainty { std, correlation, residual_scale: s2.sqrt(), warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_fit_recovers_the_textbook_standard_errors() {
        // r = (a + b t − y) / σ with σ = 1 at t = 0..4: cov = s² (XᵀX)⁻¹
        let t = [0.0, 1.0, 2.0, 3.0, 4.0];
        let jac = DMatrix::from_fn(5, 2, |i, j| if j == 0 { 1.0 } else { t[i] });
        let r = [0.1, -0.2, 0.05, 0.1, -0.05];
        let u = uncertainty(&jac, &r, &["a".into(), "b".into()], &[false, false]);
        let s2 = r.iter().map(|x| x * x).sum::<f64>() / 3.0;
        // (XᵀX)⁻¹ = [[0.6, -0.2], [-0.2, 0.1]]
        assert!((u.std[0] - (0.6 * s2).sqrt()).abs() < 1e-12, "{:?}", u.std);
        assert!((u.std[1] - (0.1 * s2).sqrt()).abs() < 1e-12);
        assert!((u.correlation[0][1] - (-0.2 / (0.6f64 * 0.1).sqrt())).abs() < 1e-12);
        assert!(u.warnings.is_empty());
    }

    #[test]
    fn two_parameters_with_the_same_effect_are_named() {
        let jac = DMatrix::from_fn(6, 3, |i, j| match j {
            0 | 1 => (i as f64).sin() * if j == 0 { 1.0 } else { 2.0 },
            _ => (i as f64).cos(),
        });
        let u = uncertainty(&jac, &[0.1; 6], &["kd".into(), "damping".into(), "mass".into()], &[false; 3]);
        let w = u.warnings.join("\n");
        assert!(w.contains("cannot tell apart") && w.contains("kd") && w.contains("damping") && !w.contains("mass"), "{w}");
    }
}
