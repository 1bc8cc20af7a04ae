//! The Jacobi-preconditioned conjugate residual (paper §8.3), the linear solver of the
//! frozen-compliance iteration ([`LinearSolver::Pcr`](super::LinearSolver::Pcr)).

use super::delassus::dot;

/// Jacobi-preconditioned conjugate residual (paper §8.3) on `A x = b`, `A` symmetric positive
/// definite given by `apply` (`out = A v`), `inv_diag` the preconditioner `1 / diag(A)`. Starts
/// from `x` (zero for the paper's cold start); stops after `max_iterations` or when
/// `rᵀ z ≤ tol_rel² r₀ᵀ z₀`. Returns the iterations done. The preconditioned residual norm never
/// increases, which makes early termination safe.
pub fn conjugate_residual(
    apply: &mut dyn FnMut(&[f64], &mut [f64]),
    b: &[f64],
    inv_diag: &[f64],
    x: &mut [f64],
    max_iterations: u32,
    tol_rel: f64,
    scratch: &mut [Vec<f64>; 6],
) -> u32 {
    let m = b.len();
    let [r, z, p, az, ap, q] = scratch;
    let (r, z, p, az, ap, q) = (&mut r[..m], &mut z[..m], &mut p[..m], &mut az[..m], &mut ap[..m], &mut q[..m]);
    apply(x, az);
    for i in 0..m {
        r[i] = b[i] - az[i];
        z[i] = inv_diag[i] * r[i];
    }
    p.copy_from_slice(z);
    apply(z, az);
    ap.copy_from_slice(az);
    let mut rho = dot(z, az);
    let gamma0 = dot(r, z);
    const TINY: f64 = 1e-300;
    let mut k = 0;
    while k < max_iterations {
        for i in 0..m {
            q[i] = inv_diag[i] * ap[i];
        }
        let sigma = dot(ap, q);
        if sigma <= TINY || rho <= TINY {
            break;
        }
        let a = rho / sigma;
        for i in 0..m {
            x[i] += a * p[i];
            r[i] -= a * ap[i];
            z[i] -= a * q[i];
        }
        k += 1;
        if tol_rel > 0.0 && dot(r, z) <= tol_rel * tol_rel * gamma0 {
            break;
        }
        apply(z, az);
        let rho_next = dot(z, az);
        let beta = rho_next / rho;
        rho = rho_next;
        for i in 0..m {
            p[i] = z[i] + beta * p[i];
            ap[i] = az[i] + beta * ap[i];
        }
    }
    k
}
