//! Dense kernels shared by the contact methods: LU with partial pivoting (whole matrix or one
//! diagonal block), Cholesky, and the run-time AVX2 dispatch (`with_avx2!`) that compiles a
//! kernel a second time for 256-bit vectors without changing a bit of its results.
//!
//! Matrices are row-major slices `a[r * stride + c]`. Nothing here allocates.

/// Whether the CPU runs AVX2 (x86-64; detected once, then an atomic load: no lock, no allocation).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx2_available() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static DETECTED: AtomicU8 = AtomicU8::new(0);
    match DETECTED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let ok = std::arch::is_x86_feature_detected!("avx2");
            DETECTED.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
            ok
        }
    }
}

/// Which build of the dense kernels (and of the methods' kernels that use `with_avx2!`) runs on this machine: `"avx2"` or `"portable"`
/// (the results are the same bits; only the speed differs). Benchmarks print it.
pub fn kernel_build() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if avx2_available() {
        return "avx2";
    }
    "portable"
}

/// Calls `portable(args)` — an `#[inline(always)]` function — compiled for AVX2 when the CPU has
/// it. The hot loops it is used for (row updates of the LU here; a method's products and
/// Jacobian rows) are element-wise products and sums in a fixed order, never fused into multiply-adds
/// (Rust does not contract them), so the 256-bit build gives the same bits as the baseline
/// x86-64 build: results do not depend on the machine.
macro_rules! with_avx2 {
    ($portable:ident($($arg:expr),* $(,)?)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if $crate::math::dense::avx2_available() {
                #[target_feature(enable = "avx2")]
                unsafe fn wide<R>(f: impl FnOnce() -> R) -> R {
                    f()
                }
                // SAFETY: the CPU supports AVX2 (checked at run time)
                unsafe { wide(|| $portable($($arg),*)) }
            } else {
                $portable($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $portable($($arg),*)
        }
    }};
}
pub(crate) use with_avx2;

/// In-place LU factorisation with partial pivoting of the row-major `m × m` matrix `a`
/// (`P a = L U`, L unit lower); row operations with a zero multiplier are skipped, so a
/// block-diagonal matrix (independent contact islands) costs the sum of its blocks. Returns
/// false on a zero or non-finite pivot.
pub fn lu_in_place(a: &mut [f64], m: usize, pivot: &mut [usize]) -> bool {
    lu_in_place_block(a, m, 0, m, pivot)
}

/// [`lu_in_place`] on the `n × n` diagonal block of the row-major matrix `a` (row stride
/// `stride`) that starts at row and column `start`; `pivot` holds the block's local row pivots.
/// On a block that no nonzero outside it couples (a consecutive block of
/// `consecutive_blocks` in the Newton scheme) the factors are bit-identical to those of the whole matrix.
///
/// On x86-64 CPUs with AVX2 the same code runs compiled for 256-bit vectors: the same IEEE
/// operations in the same order, no fused multiply-add, so the results are bit-identical.
pub fn lu_in_place_block(a: &mut [f64], stride: usize, start: usize, n: usize, pivot: &mut [usize]) -> bool {
    with_avx2!(lu_in_place_block_portable(a, stride, start, n, pivot))
}

#[inline(always)]
pub(crate) fn lu_in_place_block_portable(a: &mut [f64], stride: usize, start: usize, n: usize, pivot: &mut [usize]) -> bool {
    let at = |r: usize, c: usize| (start + r) * stride + start + c;
    for k in 0..n {
        let (mut pr, mut best) = (k, a[at(k, k)].abs());
        for r in k + 1..n {
            let v = a[at(r, k)].abs();
            if v > best {
                (pr, best) = (r, v);
            }
        }
        if !(best > 0.0 && best.is_finite()) {
            return false;
        }
        pivot[k] = pr;
        if pr != k {
            // rows k < pr: the two row slices, swapped whole
            let (upper, lower) = a.split_at_mut(at(pr, 0));
            upper[at(k, 0)..at(k, n)].swap_with_slice(&mut lower[..n]);
        }
        let inv = 1.0 / a[at(k, k)];
        let (top, bottom) = a.split_at_mut((start + k + 1) * stride);
        // the pivot row's trailing zeros (rows of other independent groups of contacts) change
        // nothing: stop the updates at its last nonzero
        let urow = &top[at(k, k + 1)..at(k, n)];
        let width = urow.iter().rposition(|&u| u != 0.0).map_or(0, |j| j + 1);
        let urow = &urow[..width];
        for r in 0..n - k - 1 {
            // row k + 1 + r from column k (the multiplier) to the pivot row's last nonzero
            let base = r * stride + start + k;
            let row = &mut bottom[base..base + 1 + width];
            let Some((multiplier, rest)) = row.split_first_mut() else { continue };
            if *multiplier == 0.0 {
                continue;
            }
            let l = *multiplier * inv;
            *multiplier = l;
            for (o, u) in rest.iter_mut().zip(urow) {
                *o -= l * u;
            }
        }
    }
    true
}

/// `Σ aᵢ bᵢ` over the shorter of the two slices, in four running sums (entries `i mod 4`) added
/// as `(s₀ + s₁) + (s₂ + s₃)`: four dependency chains of a quarter of the length instead of one
/// (the substitutions below are latency-bound on their sums). A fixed order: the same bits on
/// every machine and build.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = [0.0f64; 4];
    let (ca, ra) = a.split_at(n - n % 4);
    let (cb, rb) = b.split_at(n - n % 4);
    for (x, y) in ca.chunks_exact(4).zip(cb.chunks_exact(4)) {
        s[0] += x[0] * y[0];
        s[1] += x[1] * y[1];
        s[2] += x[2] * y[2];
        s[3] += x[3] * y[3];
    }
    for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
        s[k] += x * y;
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// Solves `a x = b` in place (`x` holds b on entry) with the factors of [`lu_in_place`].
pub fn lu_solve(a: &[f64], m: usize, pivot: &[usize], x: &mut [f64]) {
    lu_solve_block(a, m, 0, pivot, x);
}

/// Solves with the factors of [`lu_in_place_block`] (the block at `start`, its size
/// `x.len()`): `x` holds the block's part of b on entry.
pub fn lu_solve_block(a: &[f64], stride: usize, start: usize, pivot: &[usize], x: &mut [f64]) {
    let n = x.len();
    let row = |r: usize| &a[(start + r) * stride + start..(start + r) * stride + start + n];
    for k in 0..n {
        x.swap(k, pivot[k]);
    }
    for r in 0..n {
        let s = dot(&row(r)[..r], &x[..r]);
        x[r] -= s;
    }
    for r in (0..n).rev() {
        let u = row(r);
        let s = dot(&u[r + 1..n], &x[r + 1..n]);
        x[r] = (x[r] - s) / u[r];
    }
}

/// Solves `M x = b` in place (`M` row-major `n × n`, overwritten by its LU factors; `b` becomes
/// `x`) with [`lu_in_place`] and [`lu_solve`]. `false` when `M` is singular to working
/// precision: a pivot of at most `1e-18 max|M|` (or `1e-300`), where the factors would be
/// meaningless.
pub fn lu_solve_in_place(mat: &mut [f64], n: usize, pivot: &mut [usize], b: &mut [f64]) -> bool {
    let scale = mat[..n * n].iter().fold(0.0f64, |s, x| s.max(x.abs()));
    if !lu_in_place(mat, n, pivot) {
        return false;
    }
    let floor = (1e-18 * scale).max(1e-300);
    if (0..n).any(|k| !(mat[k * n + k].abs() > floor)) {
        return false;
    }
    lu_solve(mat, n, pivot, &mut b[..n]);
    true
}

/// Dense Cholesky `A = L Lᵀ` of a row-major `m × m` matrix, in place (lower triangle holds L).
/// `false` when a pivot is not positive.
pub fn cholesky_in_place(a: &mut [f64], m: usize) -> bool {
    for j in 0..m {
        let mut d = a[j * m + j];
        for k in 0..j {
            d -= a[j * m + k] * a[j * m + k];
        }
        if !(d > 0.0) {
            return false;
        }
        let d = d.sqrt();
        a[j * m + j] = d;
        for i in j + 1..m {
            let mut s = a[i * m + j];
            for k in 0..j {
                s -= a[i * m + k] * a[j * m + k];
            }
            a[i * m + j] = s / d;
        }
    }
    true
}

/// Whether the `n × n` diagonal block at `start` of the row-major matrix `a` (row stride
/// `stride`) is exactly symmetric.
pub fn block_is_symmetric(a: &[f64], stride: usize, start: usize, n: usize) -> bool {
    (1..n).all(|i| (0..i).all(|j| a[(start + i) * stride + start + j] == a[(start + j) * stride + start + i]))
}

/// In-place Cholesky factorisation `A = Uᵀ U` (U upper triangular) of the symmetric `n × n`
/// diagonal block at `start` of the row-major matrix `a` (row stride `stride`), reading and
/// writing its upper triangle only. Right-looking, row by row: each pivot row is scaled, then
/// subtracted from the rows below it where it has a nonzero, up to its last nonzero (the row
/// updates of [`lu_in_place_block`] on the upper triangle, without pivoting: half its work).
/// Returns false on a pivot that is not positive and finite (a matrix that is not positive
/// definite).
pub fn cholesky_in_place_block(a: &mut [f64], stride: usize, start: usize, n: usize) -> bool {
    with_avx2!(cholesky_in_place_block_portable(a, stride, start, n))
}

#[inline(always)]
pub(crate) fn cholesky_in_place_block_portable(a: &mut [f64], stride: usize, start: usize, n: usize) -> bool {
    let at = |r: usize, c: usize| (start + r) * stride + start + c;
    for k in 0..n {
        let d = a[at(k, k)];
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let u = d.sqrt();
        a[at(k, k)] = u;
        let inv = 1.0 / u;
        let (top, bottom) = a.split_at_mut((start + k + 1) * stride);
        let urow = &mut top[at(k, k + 1)..at(k, n)];
        let width = urow.iter().rposition(|&x| x != 0.0).map_or(0, |j| j + 1);
        let urow = &mut urow[..width];
        for x in urow.iter_mut() {
            *x *= inv;
        }
        // row k + 1 + r from its diagonal to the pivot row's last nonzero
        for r in 0..width {
            let l = urow[r];
            if l == 0.0 {
                continue;
            }
            let base = r * stride + start + k + 1;
            for (o, x) in bottom[base + r..base + width].iter_mut().zip(&urow[r..]) {
                *o -= l * x;
            }
        }
    }
    true
}

/// Solves `Uᵀ U x = b` in place with the factor of [`cholesky_in_place_block`] (the block at
/// `start`, its size `x.len()`).
pub fn cholesky_solve_block(a: &[f64], stride: usize, start: usize, x: &mut [f64]) {
    let n = x.len();
    let row = |r: usize| &a[(start + r) * stride + start..(start + r) * stride + start + n];
    // Uᵀ y = b, by rows of U
    for p in 0..n {
        let u = row(p);
        let yp = x[p] / u[p];
        x[p] = yp;
        for (xj, uj) in x[p + 1..].iter_mut().zip(&u[p + 1..]) {
            *xj -= uj * yp;
        }
    }
    // U x = y
    for i in (0..n).rev() {
        let u = row(i);
        let s = dot(&u[i + 1..n], &x[i + 1..n]);
        x[i] = (x[i] - s) / u[i];
    }
}

/// Solves `L Lᵀ x = b` in place with the factor of [`cholesky_in_place`].
pub fn cholesky_solve(l: &[f64], m: usize, x: &mut [f64]) {
    for i in 0..m {
        let mut s = x[i];
        for k in 0..i {
            s -= l[i * m + k] * x[k];
        }
        x[i] = s / l[i * m + i];
    }
    for i in (0..m).rev() {
        let mut s = x[i];
        for k in i + 1..m {
            s -= l[k * m + i] * x[k];
        }
        x[i] = s / l[i * m + i];
    }
}
