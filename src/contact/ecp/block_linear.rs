//! The linear algebra of the block's Newton steps ([`super::block::Block::solve`]): the Newton
//! system `J d = b` solved by eliminating each contact's own unknowns, and the dense LU and
//! Cholesky solves it falls back on.
//!
//! The block's unknowns are the bodies' twists, each contact's own unknowns and the joint rows'
//! impulses; its rows are the bodies' momentum balances, each contact's own equations and the
//! joint rows' complementarity. A contact's equations read only its own unknowns and its
//! bodies' twists, so with the *global* unknowns `G` (twists and joint rows) and the contacts'
//! own unknowns `C`:
//!
//! ```text
//! ⎡ J_GG  J_GC ⎤ ⎡d_G⎤   ⎡b_G⎤        J_CC = diag(D_1, …, D_k)   (one block per contact)
//! ⎣ J_CG  J_CC ⎦ ⎣d_C⎦ = ⎣b_C⎦
//! ```
//!
//! Eliminating `d_C` leaves the Schur complement `S = J_GG − Σ_c J_Gc D_c⁻¹ J_cG` on the global
//! unknowns (`6·bodies + rows`: 18 for a cube between two pads, against 82 unknowns in all),
//! then `d_c = D_c⁻¹ (b_c − J_cG d_G)`. `J_cG` is nonzero only on the contact's bodies' twelve
//! (or six) columns. For the two-pad grasp this is about a fifth of the multiply-adds of the
//! dense LU of the whole system, and `J` is read, not overwritten.
//!
//! Each `D_c` and `S` is factored with partial pivoting; a pivot below 1e-13 of the matrix's
//! largest entry counts as singular and the caller falls back to the dense LU of the whole
//! system (then to Levenberg–Marquardt), as before.

/// Where a contact's own unknowns (and equations: the same indices) lie in the block, and its
/// bodies.
#[derive(Clone, Copy, Debug)]
pub(super) struct OwnUnknowns {
    /// Index of its first own unknown.
    pub(super) offset: usize,
    /// How many it has.
    pub(super) len: usize,
    /// Its block bodies (`[body, _]` with one side).
    pub(super) bodies: [usize; 2],
    /// How many bodies it touches (1 or 2).
    pub(super) sides: usize,
}

/// Scratch of [`SchurSolve::solve`], sized once.
#[derive(Clone, Debug, Default)]
pub(super) struct SchurSolve {
    /// The Schur complement `S` (row-major `g × g`), then its LU factor.
    s: Vec<f64>,
    /// The reduced right-hand side, then `d_G`.
    rhs: Vec<f64>,
    pivots: Vec<usize>,
    /// One contact's `D_c` (row-major), then its LU factor.
    local: Vec<f64>,
    local_pivots: Vec<usize>,
    /// Per contact, `D_c⁻¹ J_cG` on its bodies' columns (column by column) and `D_c⁻¹ b_c`.
    eliminated: Vec<f64>,
}

impl SchurSolve {
    /// Scratch for at most `bodies` bodies, `contacts` contacts of at most `own` unknowns each
    /// and `rows` joint rows (allocates).
    pub(super) fn with_capacity(bodies: usize, contacts: usize, own: usize, rows: usize) -> Self {
        let g = 6 * bodies + rows;
        SchurSolve {
            s: vec![0.0; g * g],
            rhs: vec![0.0; g],
            pivots: vec![0; g],
            local: vec![0.0; own * own],
            local_pivots: vec![0; own],
            eliminated: vec![0.0; contacts * own * 13],
        }
    }

    /// Solves `J d = b` in place (`jac` row-major `n × n`, unchanged; `b` overwritten by `d`)
    /// for a block of `bodies` bodies (unknowns `0..6·bodies`), `rows` joint rows (the last
    /// `rows` unknowns) and the contacts' own unknowns `contacts`. `false` (with `b`
    /// overwritten) when a contact's block or the Schur complement is singular, or the
    /// scratch is too small.
    pub(super) fn solve(&mut self, jac: &[f64], n: usize, bodies: usize, rows: usize, contacts: &[OwnUnknowns], b: &mut [f64]) -> bool {
        let (nb6, r0) = (6 * bodies, n - rows);
        let g = nb6 + rows;
        let global = |i: usize| if i < nb6 { i } else { r0 + i - nb6 };
        let need: usize = contacts.iter().map(|c| c.len * (6 * c.sides + 1)).sum();
        if g * g > self.s.len() || need > self.eliminated.len() || contacts.iter().any(|c| c.len > self.local_pivots.len()) {
            return false;
        }
        let (s, rhs) = (&mut self.s[..g * g], &mut self.rhs[..g]);
        for i in 0..g {
            let row = global(i) * n;
            for j in 0..g {
                s[i * g + j] = jac[row + global(j)];
            }
            rhs[i] = b[global(i)];
        }
        let mut at = 0;
        for c in contacts {
            let (o, l, w) = (c.offset, c.len, 6 * c.sides);
            let column = |k: usize| 6 * c.bodies[k / 6] + k % 6;
            let d = &mut self.local[..l * l];
            for r in 0..l {
                d[r * l..(r + 1) * l].copy_from_slice(&jac[(o + r) * n + o..(o + r) * n + o + l]);
            }
            let piv = &mut self.local_pivots[..l];
            if !lu_factor(d, piv, l) {
                return false;
            }
            // X = D⁻¹ J_cG column by column, then y = D⁻¹ b_c
            let x = &mut self.eliminated[at..at + l * (w + 1)];
            for k in 0..=w {
                let xk = &mut x[k * l..(k + 1) * l];
                for (r, v) in xk.iter_mut().enumerate() {
                    *v = if k < w { jac[(o + r) * n + column(k)] } else { b[o + r] };
                }
                lu_apply(d, piv, l, xk);
            }
            // S −= J_Gc X, rhs −= J_Gc y, over the global rows that read the contact
            for i in 0..g {
                let a = &jac[global(i) * n + o..global(i) * n + o + l];
                if a.iter().all(|v| *v == 0.0) {
                    continue;
                }
                for k in 0..=w {
                    let ax = dot(a, &x[k * l..(k + 1) * l]);
                    if k < w {
                        s[i * g + column(k)] -= ax;
                    } else {
                        rhs[i] -= ax;
                    }
                }
            }
            at += l * (w + 1);
        }
        if !lu_solve(s, &mut self.pivots[..g], rhs, g) {
            return false;
        }
        // d_c = y − X d_G
        let mut at = 0;
        for c in contacts {
            let (o, l, w) = (c.offset, c.len, 6 * c.sides);
            let x = &self.eliminated[at..at + l * (w + 1)];
            for r in 0..l {
                let mut v = x[w * l + r];
                for k in 0..w {
                    v -= x[k * l + r] * rhs[6 * c.bodies[k / 6] + k % 6];
                }
                b[o + r] = v;
            }
            at += l * (w + 1);
        }
        for i in 0..g {
            b[global(i)] = rhs[i];
        }
        b[..n].iter().all(|v| v.is_finite())
    }
}

/// Factors `a` (row-major `n × n`) in place as `P A = L U` by Gaussian elimination with partial
/// pivoting (`pivots[k]`: the row swapped with row `k`). `false` when a pivot falls below 1e-13
/// of the largest entry (numerically singular) or the matrix is zero or not finite.
fn lu_factor(a: &mut [f64], pivots: &mut [usize], n: usize) -> bool {
    let largest = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if !(largest > 0.0 && largest.is_finite()) {
        return false;
    }
    for k in 0..n {
        let p = (k..n).max_by(|&i, &j| a[i * n + k].abs().total_cmp(&a[j * n + k].abs())).unwrap_or(k);
        pivots[k] = p;
        if a[p * n + k].abs() <= 1e-13 * largest {
            return false;
        }
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
        }
        let inv = 1.0 / a[k * n + k];
        for i in k + 1..n {
            let f = a[i * n + k] * inv;
            a[i * n + k] = f;
            if f == 0.0 {
                continue;
            }
            for j in k + 1..n {
                a[i * n + j] -= f * a[k * n + j];
            }
        }
    }
    true
}

/// `b ← A⁻¹ b` with the factor of [`lu_factor`]: the row swaps in order, then `L` (unit lower,
/// its rows swapped with the matrix's) forward and `U` backward.
fn lu_apply(a: &[f64], pivots: &[usize], n: usize, b: &mut [f64]) {
    for (k, &p) in pivots[..n].iter().enumerate() {
        b.swap(k, p);
    }
    for k in 0..n {
        let bk = b[k];
        if bk != 0.0 {
            for i in k + 1..n {
                b[i] -= a[i * n + k] * bk;
            }
        }
    }
    for k in (0..n).rev() {
        let s = dot(&a[k * n + k + 1..(k + 1) * n], &b[k + 1..n]);
        b[k] = (b[k] - s) / a[k * n + k];
    }
}

/// Solves `A d = b` in place (`a` row-major n × n, overwritten by its LU factor; `b` by `d`) by
/// Gaussian elimination with partial pivoting. `false` when a pivot falls below 1e-13 of the
/// largest entry (numerically singular).
pub(super) fn lu_solve(a: &mut [f64], pivots: &mut [usize], b: &mut [f64], n: usize) -> bool {
    if !lu_factor(a, pivots, n) {
        return false;
    }
    lu_apply(a, pivots, n, b);
    b.iter().all(|v| v.is_finite())
}

/// Solves `A d = b` for a symmetric positive definite `A` (row-major n × n, overwritten by its
/// Cholesky factor; `b` by `d`). `false` when `A` is not positive definite.
pub(super) fn cholesky_solve(a: &mut [f64], b: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let d = a[j * n + j] - dot(&a[j * n..j * n + j], &a[j * n..j * n + j]);
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let l = d.sqrt();
        a[j * n + j] = l;
        for i in j + 1..n {
            let s = a[i * n + j] - dot(&a[i * n..i * n + j], &a[j * n..j * n + j]);
            a[i * n + j] = s / l;
        }
    }
    for i in 0..n {
        b[i] = (b[i] - dot(&a[i * n..i * n + i], &b[..i])) / a[i * n + i];
    }
    for i in (0..n).rev() {
        b[i] = (b[i] - (i + 1..n).map(|k| a[k * n + i] * b[k]).sum::<f64>()) / a[i * n + i];
    }
    b.iter().all(|v| v.is_finite())
}

/// `a · b` in four running sums: the products of one sum form a dependency chain a quarter as
/// long (the factorizations' inner products are latency-bound otherwise).
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut s = [0.0f64; 4];
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            s[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (s[0] + s[1]) + (s[2] + s[3]) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block-arrow system like the block's: two "bodies" (12 global unknowns), one joint
    /// row, two contacts of 5 own unknowns on bodies (0, 1) and (1, _), random couplings.
    #[test]
    fn the_schur_solve_equals_the_dense_lu() {
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let contacts = [OwnUnknowns { offset: 12, len: 5, bodies: [0, 1], sides: 2 }, OwnUnknowns { offset: 17, len: 5, bodies: [1, 0], sides: 1 }];
        let n = 12 + 10 + 1;
        let mut jac = vec![0.0; n * n];
        let global = |i: usize| i < 12 || i == n - 1;
        let owner = |i: usize| contacts.iter().position(|c| i >= c.offset && i < c.offset + c.len);
        let touches = |c: &OwnUnknowns, j: usize| j < 12 && (j / 6 == c.bodies[0] || (c.sides == 2 && j / 6 == c.bodies[1]));
        for i in 0..n {
            for j in 0..n {
                let coupled = match (owner(i), owner(j)) {
                    (Some(a), Some(b)) => a == b,
                    (Some(a), None) => touches(&contacts[a], j),
                    (None, _) => global(i),
                };
                if coupled {
                    jac[i * n + j] = rnd() + if i == j { 4.0 } else { 0.0 };
                }
            }
        }
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let mut schur = SchurSolve::with_capacity(2, 2, 5, 1);
        let mut d = b.clone();
        assert!(schur.solve(&jac, n, 2, 1, &contacts, &mut d));
        let (mut a, mut dense, mut piv) = (jac.clone(), b.clone(), vec![0; n]);
        assert!(lu_solve(&mut a, &mut piv, &mut dense, n));
        for i in 0..n {
            assert!((d[i] - dense[i]).abs() < 1e-12, "unknown {i}: {} against {}", d[i], dense[i]);
        }
        // and J d = b
        for i in 0..n {
            let r: f64 = (0..n).map(|j| jac[i * n + j] * d[j]).sum::<f64>() - b[i];
            assert!(r.abs() < 1e-12, "row {i}: residual {r}");
        }
    }

    #[test]
    fn dense_solves_agree_with_a_known_answer() {
        // A = [[4, 1, 0], [1, 3, 1], [0, 1, 2]], d = (1, -2, 3)
        let a0 = [4.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 2.0];
        let d = [1.0, -2.0, 3.0];
        let b0: Vec<f64> = (0..3).map(|i| (0..3).map(|j| a0[i * 3 + j] * d[j]).sum()).collect();
        let (mut a, mut b, mut p) = (a0, b0.clone(), [0; 3]);
        assert!(lu_solve(&mut a, &mut p, &mut b, 3));
        let (mut a2, mut b2) = (a0, b0);
        assert!(cholesky_solve(&mut a2, &mut b2, 3));
        for i in 0..3 {
            assert!((b[i] - d[i]).abs() < 1e-14 && (b2[i] - d[i]).abs() < 1e-14, "{b:?} {b2:?}");
        }
        // singular: refused
        let mut s = [1.0, 2.0, 2.0, 4.0];
        assert!(!lu_solve(&mut s, &mut [0; 2], &mut [1.0, 1.0], 2));
    }

    #[test]
    fn a_singular_contact_block_is_refused() {
        let contacts = [OwnUnknowns { offset: 6, len: 2, bodies: [0, 0], sides: 1 }];
        let n = 8;
        let mut jac = vec![0.0; n * n];
        for i in 0..6 {
            jac[i * n + i] = 1.0;
        }
        // the contact's own 2 × 2 block is [[1, 2], [2, 4]]
        jac[6 * n + 6] = 1.0;
        jac[6 * n + 7] = 2.0;
        jac[7 * n + 6] = 2.0;
        jac[7 * n + 7] = 4.0;
        let mut b = vec![1.0; n];
        assert!(!SchurSolve::with_capacity(1, 1, 2, 0).solve(&jac, n, 1, 0, &contacts, &mut b));
    }
}
