//! The laws of the rows: the NCP functions (paper §4.2), the friction compliance `W` (paper
//! App. A.2, with the slip speed in the denominator) and Coulomb's law's error on one contact, then
//! every row's law at an iterate, in the frozen-compliance form ([`evaluate_laws`]: contact normals
//! and joint limits §6 and App. A.1, friction §7 and App. A.2) and with the exact generalized
//! Jacobian ([`exact_laws`], [`NewtonJacobian::Exact`](super::NewtonJacobian::Exact); ours).

use super::{ComplementarityScale, NcpFunction, NewtonOptions, NewtonProblem, NewtonRow};
use crate::math::dense::with_avx2;

/// `φ_FB(a, b)` with its partials `(∂/∂a, ∂/∂b)`; at `(0, 0)` the paper's choice `(0, 1)`.
pub fn fischer_burmeister(a: f64, b: f64) -> (f64, f64, f64) {
    let root = a.hypot(b);
    if root == 0.0 {
        return (0.0, 0.0, 1.0);
    }
    (a + b - root, 1.0 - a / root, 1.0 - b / root)
}

/// `min(a, b)` with its partials (`(1, 0)` when `a ≤ b`).
pub fn min_map(a: f64, b: f64) -> (f64, f64, f64) {
    if a <= b {
        (a, 1.0, 0.0)
    } else {
        (b, 0.0, 1.0)
    }
}

/// Relative floor of the Fischer–Burmeister friction denominator against its numerator (keeps
/// `W ≥ 0` and at most `r_f / 1e-12` when the friction impulse lies far outside the cone or the
/// cone is vanishingly small).
const FRICTION_DENOMINATOR_FLOOR: f64 = 1e-12;

/// The friction compliance `W` (paper App. A.2, with the slip speed `a` in the denominator):
/// `a` the slip speed (m/s), `r_f` the friction scale, `cone` = `r_f μ λ_n` and `sigma` =
/// `r_f (μ λ_n − ‖λ_f‖)` (both m/s). Returns `W / r_f`-scaled compliance `W` in the units of `r_f`.
pub fn friction_compliance(ncp: NcpFunction, a: f64, r_f: f64, cone: f64, sigma: f64) -> f64 {
    match ncp {
        NcpFunction::FischerBurmeister => {
            let root = a.hypot(sigma);
            let num = root - sigma;
            if num <= 0.0 {
                return 0.0; // a = 0 inside the cone (and the 0/0 case): sticking, W = 0
            }
            let den = a + cone - root;
            // W/r_f is at most 1/FRICTION_DENOMINATOR_FLOOR: finite however small the cone
            if den <= FRICTION_DENOMINATOR_FLOOR * num {
                r_f / FRICTION_DENOMINATOR_FLOOR
            } else {
                r_f * num / den
            }
        }
        NcpFunction::MinMap => {
            if a <= sigma {
                0.0
            } else if a - sigma >= cone / FRICTION_DENOMINATOR_FLOOR {
                r_f / FRICTION_DENOMINATOR_FLOOR
            } else {
                r_f * (a - sigma) / cone
            }
        }
    }
}

/// The error of Coulomb's law with maximal dissipation on one contact (m/s):
/// `‖r p − Π(r p − w)‖` with Π the projection on the disk of radius `cone` (= `r μ p_n`, clamped
/// at 0); zero iff `p` is inside the cone and opposes the slip `w` when sliding, `w = 0` inside.
pub fn disk_residual(r: f64, p: [f64; 2], w: [f64; 2], cone: f64) -> f64 {
    let trial = [r * p[0] - w[0], r * p[1] - w[1]];
    let norm = trial[0].hypot(trial[1]);
    let radius = cone.max(0.0);
    let k = if norm > radius { radius / norm } else { 1.0 };
    (r * p[0] - k * trial[0]).hypot(r * p[1] - k * trial[1])
}

/// Where [`evaluate_laws`] writes, per row: the Jacobian scaling α, the diagonal of `C`, the
/// Newton residual η and the row's natural error (m/s).
pub struct RowLaws<'a> {
    /// α (FB partial on normal rows, 0 on inactive friction rows, 1 elsewhere).
    pub alpha: &'a mut [f64],
    /// `C`, the row's compliance in the Schur complement (m/s per N·s).
    pub compliance: &'a mut [f64],
    /// η (m/s).
    pub residual: &'a mut [f64],
    /// The natural residual of the row's law (m/s), for the stopping test.
    pub natural: &'a mut [f64],
}

/// Evaluates every row's law at the impulses `impulse` and row velocities `w = J̄ u`:
/// `inverse_effective_mass(i)` is `[J̄ H⁻¹ J̄ᵀ]ᵢᵢ`, the effective-mass complementarity scale
/// (paper eq. 66) of row `i`. Shared by the dense iteration ([`solve`](super::solve)) and the FEM iteration
/// ([`super::fem`](super::super::fem)).
pub fn evaluate_laws(rows: &[NewtonRow], opts: &NewtonOptions, impulse: &[f64], w: &[f64], inverse_effective_mass: impl Fn(usize) -> f64, out: RowLaws) {
    let h = opts.timestep_s;
    let m = rows.len();
    let scale = |i: usize| match opts.scale {
        ComplementarityScale::EffectiveMass => inverse_effective_mass(i),
        ComplementarityScale::Global => 1.0,
        ComplementarityScale::Identity => 1.0 / (h * h),
    };
    let mut i = 0;
    while i < m {
        match rows[i] {
            NewtonRow::Unilateral { gap } => {
                let r = scale(i);
                let (a, b) = (gap / h + w[i], r * impulse[i]);
                let (phi, da, db) = opts.ncp.value(a, b);
                out.alpha[i] = da;
                out.compliance[i] = db * r;
                out.residual[i] = phi;
                out.natural[i] = a.min(b).abs();
                i += 1;
            }
            NewtonRow::FrictionPair { normal_row, mu } => {
                let r_f = 0.5 * (scale(i) + scale(i + 1));
                let cone = r_f * mu * impulse[normal_row];
                if cone > 0.0 {
                    let slip = w[i].hypot(w[i + 1]);
                    // guard (ours): the friction impulse counts at most at the cone's radius, so an
                    // iterate outside the cone gets the sliding compliance `a / (μ p_n)`, which
                    // sends it to the cone along the slip, instead of the paper's unbounded W,
                    // which sends it to zero and, on redundant contact sets, into stick–slip limit
                    // cycles (the stopping test measures the cone separately, `disk_residual`)
                    let sigma = (cone - r_f * impulse[i].hypot(impulse[i + 1])).max(0.0);
                    let wf = friction_compliance(opts.ncp, slip, r_f, cone, sigma);
                    // Coulomb's law with maximal dissipation holds iff r_f p_f is the projection of
                    // r_f p_f − w_f on the disk of radius r_f μ p_n: the distance is the row's
                    // error (m/s), whatever W is
                    let natural = disk_residual(r_f, [impulse[i], impulse[i + 1]], [w[i], w[i + 1]], cone);
                    for k in [i, i + 1] {
                        out.alpha[k] = 1.0;
                        out.compliance[k] = wf;
                        out.residual[k] = w[k] + wf * impulse[k];
                        out.natural[k] = natural;
                    }
                } else {
                    for k in [i, i + 1] {
                        out.alpha[k] = 0.0;
                        out.compliance[k] = r_f;
                        out.residual[k] = r_f * impulse[k];
                        out.natural[k] = r_f * impulse[i].hypot(impulse[i + 1]);
                    }
                }
                i += 2;
            }
            NewtonRow::FrictionSecond => unreachable!("a friction pair's second row follows its first"),
            NewtonRow::BoundedFriction { bound } => {
                // a joint's Coulomb friction (not in the paper): the semismooth Newton step of the
                // mid function `r p − clamp(r p − w, −r B, r B)`: inside the bounds the row is the
                // hard `w = 0`, at a bound it is `p = ±B` (quadratic convergence; the frozen-W form
                // of contact friction stalls on a stuck joint loaded just past its bound)
                let r_f = scale(i);
                let trial = r_f * impulse[i] - w[i];
                let limit = r_f * bound;
                if trial.abs() < limit {
                    out.alpha[i] = 1.0;
                    out.compliance[i] = 0.0;
                    out.residual[i] = w[i];
                } else {
                    let target = bound.copysign(trial);
                    out.alpha[i] = 0.0;
                    out.compliance[i] = r_f;
                    out.residual[i] = r_f * (impulse[i] - target);
                }
                out.natural[i] = (r_f * impulse[i] - trial.clamp(-limit, limit)).abs();
                i += 1;
            }
            NewtonRow::Bilateral { error, compliance } => {
                out.alpha[i] = 1.0;
                out.compliance[i] = compliance;
                out.residual[i] = error / h + w[i] + compliance * impulse[i];
                out.natural[i] = out.residual[i].abs();
                i += 1;
            }
        }
    }
}

/// `√(x² + y²)` without `hypot`'s guard against overflow and underflow (impulses and velocities
/// are nowhere near either; `hypot` cost the exact iteration about a tenth of its time).
#[inline]
fn norm2(x: f64, y: f64) -> f64 {
    (x * x + y * y).sqrt()
}

/// Evaluates every row's natural residual `F` (m/s) at the impulses `p` and row velocities
/// `w = J̄ u` ([`NewtonJacobian::Exact`](super::NewtonJacobian::Exact)): `min(a, b)` (or FB) on unilateral rows,
/// `r p_f − Π(r p_f − w_f)` on friction pairs (Π: projection on the disk of radius `r μ p_n`),
/// the mid function on joint friction, the row itself on bilateral rows. Writes `F` into `f`, each
/// row's error into `natural`, and, when `jacobian` is given, the rows of the generalized
/// Jacobian `∂F/∂p = G_w D + G_p + ε I` into it (row-major `m × m`). The Jacobian comes with the
/// ends of the problem's consecutive blocks ([`consecutive_blocks`](super::consecutive_blocks); `[m]` for one block): a
/// row's entries are written over its block's columns only. The entries outside the blocks are
/// zero in exact arithmetic too; they keep whatever they held, and the LU, which runs block by
/// block, never reads them. Returns the largest error and `½‖F‖²`.
pub(super) fn exact_laws(prob: &NewtonProblem, opts: &NewtonOptions, p: &[f64], w: &[f64], f: &mut [f64], natural: &mut [f64], jacobian: Option<(&mut [f64], &[usize])>) -> (f64, f64) {
    with_avx2!(exact_laws_portable(prob, opts, p, w, f, natural, jacobian))
}

#[inline(always)]
pub(super) fn exact_laws_portable(prob: &NewtonProblem, opts: &NewtonOptions, p: &[f64], w: &[f64], f: &mut [f64], natural: &mut [f64], jacobian: Option<(&mut [f64], &[usize])>) -> (f64, f64) {
    let h = opts.timestep_s;
    let m = prob.dim();
    let d = prob.delassus;
    let scale = |i: usize| match opts.scale {
        ComplementarityScale::EffectiveMass => d[i * m + i],
        ComplementarityScale::Global => 1.0,
        ComplementarityScale::Identity => 1.0 / (h * h),
    };
    let one_block = [m];
    let (mut jac, block_ends) = match jacobian {
        Some((jac, ends)) => (Some(jac), ends),
        None => (None, &one_block[..]),
    };
    let mut i = 0;
    let mut block_start = 0;
    for &block_end in block_ends {
        let cols = block_start..block_end;
        // J[i] = gw · D[k] (+ ...): row i of the Jacobian as a combination of Delassus rows, over
        // the block's columns
        let set_row = |jac: &mut [f64], i: usize, k: usize, gw: f64| {
            let (dst, src) = (&mut jac[i * m + cols.start..i * m + cols.end], &d[k * m + cols.start..k * m + cols.end]);
            for (o, s) in dst.iter_mut().zip(src) {
                *o = gw * s;
            }
        };
        let add_row = |jac: &mut [f64], i: usize, k: usize, gw: f64| {
            if gw != 0.0 {
                let (dst, src) = (&mut jac[i * m + cols.start..i * m + cols.end], &d[k * m + cols.start..k * m + cols.end]);
                for (o, s) in dst.iter_mut().zip(src) {
                    *o += gw * s;
                }
            }
        };
        let clear_row = |jac: &mut [f64], i: usize| jac[i * m + cols.start..i * m + cols.end].fill(0.0);
        while i < block_end {
            match prob.rows[i] {
                NewtonRow::Unilateral { gap } => {
                    let r = scale(i);
                    let (a, b) = (gap / h + w[i], r * p[i]);
                    let (phi, da, db) = opts.ncp.value(a, b);
                    f[i] = phi;
                    natural[i] = a.min(b).abs();
                    if let Some(jac) = jac.as_deref_mut() {
                        set_row(jac, i, i, da);
                        jac[i * m + i] += db * r;
                    }
                    i += 1;
                }
                NewtonRow::FrictionPair { normal_row, mu } => {
                    let r = 0.5 * (scale(i) + scale(i + 1));
                    let radius = r * mu * p[normal_row];
                    let z = [r * p[i] - w[i], r * p[i + 1] - w[i + 1]];
                    let nz = norm2(z[0], z[1]);
                    if radius <= 0.0 {
                        // no normal impulse: the disk is a point, F = r p_f
                        f[i] = r * p[i];
                        f[i + 1] = r * p[i + 1];
                        if let Some(jac) = jac.as_deref_mut() {
                            clear_row(jac, i);
                            clear_row(jac, i + 1);
                            jac[i * m + i] = r;
                            jac[(i + 1) * m + i + 1] = r;
                        }
                    } else if nz <= radius {
                        // sticking: F = w_f
                        f[i] = w[i];
                        f[i + 1] = w[i + 1];
                        if let Some(jac) = jac.as_deref_mut() {
                            set_row(jac, i, i, 1.0);
                            set_row(jac, i + 1, i + 1, 1.0);
                        }
                    } else {
                        // sliding: F = r p_f − k z, k = R/‖z‖; with ẑ = z/‖z‖ and P = I − ẑẑᵀ,
                        // dF = r (I − k P) dp_f − r μ ẑ dp_n + k P dw_f
                        let k = radius / nz;
                        let zh = [z[0] / nz, z[1] / nz];
                        f[i] = r * p[i] - k * z[0];
                        f[i + 1] = r * p[i + 1] - k * z[1];
                        if let Some(jac) = jac.as_deref_mut() {
                            let proj = [[1.0 - zh[0] * zh[0], -zh[0] * zh[1]], [-zh[1] * zh[0], 1.0 - zh[1] * zh[1]]];
                            for a in 0..2 {
                                set_row(jac, i + a, i, k * proj[a][0]);
                                add_row(jac, i + a, i + 1, k * proj[a][1]);
                                for b in 0..2 {
                                    jac[(i + a) * m + i + b] += r * (if a == b { 1.0 } else { 0.0 } - k * proj[a][b]);
                                }
                                jac[(i + a) * m + normal_row] -= r * mu * zh[a];
                            }
                        }
                    }
                    let e = norm2(f[i], f[i + 1]);
                    natural[i] = e;
                    natural[i + 1] = e;
                    i += 2;
                }
                NewtonRow::FrictionSecond => unreachable!("a friction pair's second row follows its first"),
                NewtonRow::BoundedFriction { bound } => {
                    let r = scale(i);
                    let (trial, limit) = (r * p[i] - w[i], r * bound);
                    f[i] = r * p[i] - trial.clamp(-limit, limit);
                    if let Some(jac) = jac.as_deref_mut() {
                        if trial.abs() < limit {
                            set_row(jac, i, i, 1.0);
                        } else {
                            clear_row(jac, i);
                            jac[i * m + i] = r;
                        }
                    }
                    natural[i] = f[i].abs();
                    i += 1;
                }
                NewtonRow::Bilateral { error, compliance } => {
                    f[i] = error / h + w[i] + compliance * p[i];
                    if let Some(jac) = jac.as_deref_mut() {
                        set_row(jac, i, i, 1.0);
                        jac[i * m + i] += compliance;
                    }
                    natural[i] = f[i].abs();
                    i += 1;
                }
            }
        }
        block_start = block_end;
    }
    if let Some(jac) = jac {
        for i in 0..m {
            jac[i * m + i] += opts.regularization;
        }
    }
    let inf_norm = natural[..m].iter().fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(*e) });
    (inf_norm, 0.5 * f[..m].iter().map(|e| e * e).sum::<f64>())
}
