//! Vector operations over one robot tree's range of velocity coordinates, as the ECP scheme's
//! links and joint rows apply them: a tree's impulses move only its own coordinates.

use crate::contact::SchemeInput;

/// `Σ_k row[k] x[k]` over the velocity range `dofs`.
pub(super) fn dot_range(row: &[f64], x: &[f64], (s, e): (usize, usize)) -> f64 {
    (s..e).map(|k| row[k] * x[k]).sum()
}

/// `x ← x + a · y` over the velocity range `dofs`.
pub(super) fn axpy_range(a: f64, y: &[f64], x: &mut [f64], (s, e): (usize, usize)) {
    if a != 0.0 {
        for k in s..e {
            x[k] += a * y[k];
        }
    }
}

/// `out ← M̃⁻¹ out` on one tree (M̃ = Lᵀ L).
pub(super) fn solve_mass(input: &SchemeInput, (s, e): (usize, usize), out: &mut [f64]) {
    input.mass_factor.solve(s, e, out);
}
