//! Unit tests of the Newton core: the NCP functions (paper §4.2), the friction compliance
//! (paper App. A.2), the conjugate residual (paper §8.3), the paper's scalar example, the exact
//! Jacobian against differences, the rescues, the consecutive blocks and the block LU, and the
//! AVX2 kernels.

use super::delassus::block_delassus_product_serial;
use super::laws::{exact_laws, exact_laws_portable};
use super::rescue::{projected_sweeps, proximal_point};
use super::*;
use crate::math::dense::{block_is_symmetric, cholesky_in_place, cholesky_in_place_block, cholesky_in_place_block_portable, cholesky_solve, cholesky_solve_block, lu_in_place, lu_in_place_block, lu_in_place_block_portable, lu_solve, lu_solve_block};

#[test]
fn fischer_burmeister_values_of_the_paper() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(fischer_burmeister(3.0, 4.0).0, 2.0));
    assert!(close(fischer_burmeister(0.0, 5.0).0, 0.0));
    assert!(close(fischer_burmeister(5.0, 0.0).0, 0.0));
    assert!(close(fischer_burmeister(-1.0, 0.0).0, -2.0));
    assert!(close(fischer_burmeister(2.0, -3.0).0, -1.0 - 13f64.sqrt()));
    let (_, da, db) = fischer_burmeister(3.0, 4.0);
    assert!(close(da, 0.4) && close(db, 0.2));
    assert_eq!(fischer_burmeister(0.0, 0.0), (0.0, 0.0, 1.0));
}

#[test]
fn ncp_functions_vanish_exactly_on_complementary_pairs() {
    // deterministic pseudo-random pairs, including exact zeros
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((x % 2001) as f64 - 1000.0) / 100.0
    };
    for k in 0..5000 {
        let (mut a, mut b) = (next(), next());
        if k % 3 == 0 {
            a = 0.0;
        }
        if k % 5 == 0 {
            b = 0.0;
        }
        let complementary = a >= 0.0 && b >= 0.0 && a * b == 0.0;
        for f in [fischer_burmeister, min_map] {
            let (phi, _, _) = f(a, b);
            assert_eq!(phi.abs() < 1e-12, complementary, "φ({a}, {b}) = {phi}");
        }
    }
}

/// Friction compliance at the numbers of the paper's friction illustration (r_f = 1,
/// slip a = 0.5 m/s, μ λ_n = 5 N): FB and min-map against the closed forms.
#[test]
fn friction_compliance_table() {
    let (a, cone) = (0.5, 5.0);
    let fb = [0.052494, 0.016780, 0.100000, 2.457226, 21.102369];
    let mm = [0.0, 0.0, 0.1, 0.7, 1.1];
    for (k, lf) in [0.0, 2.5, 5.0, 8.0, 10.0].into_iter().enumerate() {
        let w = friction_compliance(NcpFunction::FischerBurmeister, a, 1.0, cone, cone - lf);
        assert!((w - fb[k]).abs() < 1e-6, "W_FB(|λ_f| = {lf}) = {w}, want {}", fb[k]);
        let w = friction_compliance(NcpFunction::MinMap, a, 1.0, cone, cone - lf);
        assert!((w - mm[k]).abs() < 1e-12, "W_min(|λ_f| = {lf}) = {w}, want {}", mm[k]);
    }
    // past the FB denominator's zero (|λ_f| = 10.477) the guard keeps W finite and ≥ 0
    for lf in [10.4, 10.477226, 10.5, 20.0, 1e6] {
        let w = friction_compliance(NcpFunction::FischerBurmeister, a, 1.0, cone, cone - lf);
        assert!(w.is_finite() && w >= 0.0, "|λ_f| = {lf}: W = {w}");
    }
    // sticking (no slip, inside the cone) is a hard row
    assert_eq!(friction_compliance(NcpFunction::FischerBurmeister, 0.0, 1.0, cone, 2.0), 0.0);
    assert_eq!(friction_compliance(NcpFunction::FischerBurmeister, 0.0, 1.0, 0.0, 0.0), 0.0);
}

fn spd(n: usize, seed: u64, spread: f64) -> Vec<f64> {
    let mut x = seed;
    let mut rnd = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((x >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    let b: Vec<f64> = (0..n * n).map(|_| rnd()).collect();
    let s: Vec<f64> = (0..n).map(|i| spread.powf(2.0 * (i as f64 / (n - 1) as f64) - 1.0)).collect();
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let mut v = 0.0;
            for k in 0..n {
                v += b[i * n + k] * b[j * n + k];
            }
            a[i * n + j] = s[i] * s[j] * (v + if i == j { 0.5 } else { 0.0 });
        }
    }
    a
}

/// PCR on a random SPD matrix scaled over 10^±3: the preconditioned residual never grows,
/// the relative residual falls below 1e-6 within 200 iterations, and the result equals a
/// dense Cholesky solve.
#[test]
fn conjugate_residual_is_monotone_and_matches_cholesky() {
    let n = 60;
    let a = spd(n, 7, 1e3);
    let b: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
    let inv_diag: Vec<f64> = (0..n).map(|i| 1.0 / a[i * n + i]).collect();
    let mut scratch: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; n]);
    let mut apply = |v: &[f64], out: &mut [f64]| delassus_product(&a, n, v, out, None);
    // the preconditioned residual after each iteration count
    let mut last = f64::INFINITY;
    let initial: f64 = (0..n).map(|i| b[i] * b[i] * inv_diag[i]).sum::<f64>().sqrt();
    for k in 1..=200 {
        let mut x = vec![0.0; n];
        conjugate_residual(&mut apply, &b, &inv_diag, &mut x, k, 0.0, &mut scratch);
        let mut ax = vec![0.0; n];
        delassus_product(&a, n, &x, &mut ax, None);
        let pres: f64 = (0..n).map(|i| (b[i] - ax[i]).powi(2) * inv_diag[i]).sum::<f64>().sqrt();
        // monotone down to round-off (1e-10 of the initial residual)
        assert!(pres <= last * (1.0 + 1e-9) + 1e-10 * initial, "iteration {k}: {pres} > {last}");
        last = pres;
    }
    let mut x = vec![0.0; n];
    conjugate_residual(&mut apply, &b, &inv_diag, &mut x, 200, 0.0, &mut scratch);
    let mut l = a.clone();
    assert!(cholesky_in_place(&mut l, n));
    let mut exact = b.clone();
    cholesky_solve(&l, n, &mut exact);
    let mut ax = vec![0.0; n];
    delassus_product(&a, n, &x, &mut ax, None);
    let rel = (0..n).map(|i| (b[i] - ax[i]).powi(2)).sum::<f64>().sqrt() / b.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(rel < 1e-6, "relative residual {rel}");
    let err = (0..n).map(|i| (x[i] - exact[i]).abs()).fold(0.0, f64::max) / exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(err < 1e-6, "PCR vs Cholesky: {err}");
}

/// The Delassus product gives the same bits on a pool of 2 or 3 threads as serially.
#[test]
fn parallel_delassus_product_is_bit_identical() {
    let n = PARALLEL_ROWS + 37;
    let a = spd(n, 11, 10.0);
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut serial = vec![0.0; n];
    delassus_product(&a, n, &x, &mut serial, None);
    for threads in [2, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut par = vec![0.0; n];
        delassus_product(&a, n, &x, &mut par, Some(&pool));
        for i in 0..n {
            assert_eq!(serial[i].to_bits(), par[i].to_bits(), "{threads} threads, row {i}");
        }
    }
}

/// A consistent singular system (duplicated rows, J Jᵀ + ε I): PCR stays finite and monotone.
#[test]
fn conjugate_residual_on_a_redundant_system() {
    let (n, eps) = (12, 1e-6);
    let mut jac = vec![0.0; n * 4];
    for i in 0..n {
        jac[i * 4 + i % 4] = 1.0;
        jac[i * 4 + (i + 1) % 4] = 0.5;
    }
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = (0..4).map(|k| jac[i * 4 + k] * jac[j * 4 + k]).sum::<f64>() + if i == j { eps } else { 0.0 };
        }
    }
    let b: Vec<f64> = (0..n).map(|i| jac[i * 4] + 2.0 * jac[i * 4 + 1]).collect(); // in the range of J
    let inv_diag: Vec<f64> = (0..n).map(|i| 1.0 / a[i * n + i]).collect();
    let mut scratch: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; n]);
    let mut x = vec![0.0; n];
    let mut apply = |v: &[f64], out: &mut [f64]| delassus_product(&a, n, v, out, None);
    conjugate_residual(&mut apply, &b, &inv_diag, &mut x, 50, 0.0, &mut scratch);
    let mut ax = vec![0.0; n];
    delassus_product(&a, n, &x, &mut ax, None);
    let res = (0..n).map(|i| (b[i] - ax[i]).powi(2)).sum::<f64>().sqrt();
    assert!(x.iter().all(|v| v.is_finite()) && res < 1e-4, "residual {res}");
}

fn options(ncp: NcpFunction, n: u32) -> NewtonOptions {
    NewtonOptions {
        timestep_s: 1.0,
        ncp,
        scale: ComplementarityScale::EffectiveMass,
        linear_solver: LinearSolver::Direct,
        max_newton_iterations: n,
        max_linear_iterations: 10,
        linear_tolerance: 0.0,
        tolerance_m_s: 0.0,
        step_fraction: 1.0,
        line_search: false,
        regularization: 0.0,
        jacobian: NewtonJacobian::FrozenCompliance,
    }
}

/// The paper's scalar example of the preconditioner: `0 ≤ c(λ) = λ/4 − 1/8 ⊥ λ ≥ 0` with
/// `r = 1/4` (the slope). Scalar Newton on `FB(c(λ), r λ)` with this module's partials
/// reproduces the paper's iterates; as one unilateral row (h = 1, D = 1/4, gap = −1/8) the
/// solver lands on λ = 0.5 in one min-map step from 0 and from 3, and FB converges to it.
#[test]
fn scalar_complementarity_example() {
    let scalar_newton = |start: f64, n: usize| {
        let mut l = start;
        for _ in 0..n {
            let (phi, da, db) = fischer_burmeister(0.25 * l - 0.125, 0.25 * l);
            l -= phi / (0.25 * da + 0.25 * db);
        }
        l
    };
    for (k, want) in [0.333333, 0.466005, 0.498768, 0.499998].into_iter().enumerate() {
        let got = scalar_newton(0.0, k + 1);
        assert!((got - want).abs() < 1e-6, "FB iterate {}: {got}, want {want}", k + 1);
    }
    for (k, want) in [0.304107, 0.453165, 0.497609, 0.499994].into_iter().enumerate() {
        let got = scalar_newton(3.0, k + 1);
        assert!((got - want).abs() < 1e-6, "FB iterate {} from 3: {got}, want {want}", k + 1);
    }
    let d = [0.25];
    let free = [0.0];
    let rows = [NewtonRow::Unilateral { gap: -0.125 }];
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let run = |ncp, start: f64, n| {
        let (mut p, mut y) = ([start], [start]);
        let mut scr = NewtonScratch::new(1);
        let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
        solve(&prob, &options(ncp, n), &mut scr, &mut it);
        p[0]
    };
    for start in [0.0, 3.0] {
        assert!((run(NcpFunction::MinMap, start, 1) - 0.5).abs() < 1e-12);
        assert!((run(NcpFunction::FischerBurmeister, start, 12) - 0.5).abs() < 1e-9);
    }
}

/// Eight rows of every kind at a generic point (a contact pressed in, one at zero gap, a
/// separated normal, joint friction): `D` (SPD), the rows, `J̄ũ` and the impulses.
fn mixed_rows_problem() -> (Vec<f64>, [NewtonRow; 8], [f64; 8], [f64; 8]) {
    let rows = [
        NewtonRow::Unilateral { gap: -0.001 },
        NewtonRow::FrictionPair { normal_row: 0, mu: 0.4 },
        NewtonRow::FrictionSecond,
        NewtonRow::Unilateral { gap: 0.0 },
        NewtonRow::FrictionPair { normal_row: 3, mu: 0.9 },
        NewtonRow::FrictionSecond,
        NewtonRow::Unilateral { gap: 0.002 },
        NewtonRow::BoundedFriction { bound: 0.05 },
    ];
    let free = [-0.3, 2.0, -1.0, -0.2, 0.01, 0.02, -0.5, 0.3];
    let p = [0.3, -0.05, 0.02, 0.2, 0.001, -0.002, 0.1, 0.01];
    (spd(8, 7, 10.0), rows, free, p)
}

/// The exact Jacobian ([`NewtonJacobian::Exact`]) against central differences of `F` on a
/// random SPD Delassus matrix with two contacts, a joint limit and a joint-friction row at a
/// generic point (the pieces are whatever the point selects; the sliding piece is covered
/// by the next test): every entry agrees (away from the pieces' boundaries the natural
/// residual is smooth, so the generalized Jacobian is the Jacobian).
#[test]
fn exact_jacobian_matches_finite_differences() {
    let (d, rows, free, p) = mixed_rows_problem();
    let m = rows.len();
    let mut opts = options(NcpFunction::MinMap, 1);
    opts.timestep_s = 0.01;
    opts.jacobian = NewtonJacobian::Exact;
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let eval = |p: &[f64], jac: Option<&mut [f64]>| {
        let mut w = vec![0.0; m];
        delassus_product(&d, m, p, &mut w, None);
        for i in 0..m {
            w[i] += free[i];
        }
        let (mut f, mut nat) = (vec![0.0; m], vec![0.0; m]);
        let one_block = [m];
        exact_laws(&prob, &opts, p, &w, &mut f, &mut nat, jac.map(|j| (j, &one_block[..])));
        f
    };
    let mut jac = vec![0.0; m * m];
    eval(&p, Some(&mut jac));
    let step = 1e-7;
    for j in 0..m {
        let (mut hi, mut lo) = (p, p);
        hi[j] += step;
        lo[j] -= step;
        let (fh, fl) = (eval(&hi, None), eval(&lo, None));
        for i in 0..m {
            let fd = (fh[i] - fl[i]) / (2.0 * step);
            assert!((fd - jac[i * m + j]).abs() < 1e-5 * (1.0 + fd.abs()), "∂F{i}/∂p{j}: exact {} vs differences {fd}", jac[i * m + j]);
        }
    }
}

/// A 2 kg point pressed onto the ground (normal row velocity −0.01 m/s) and sliding at
/// 0.5 m/s, μ = 0.5: the normal impulse is m · 0.01 = 0.02 N·s and friction is μ pₙ =
/// 0.01 N·s against the slip, leaving 0.5 − 0.01/2 = 0.495 m/s. The exact Jacobian reaches it
/// to round-off within 3 iterations from zero impulses.
#[test]
fn exact_jacobian_solves_a_sliding_contact_in_a_few_iterations() {
    let d = [0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.5];
    let free = [-0.01, 0.5, 0.0];
    let rows = [NewtonRow::Unilateral { gap: 0.0 }, NewtonRow::FrictionPair { normal_row: 0, mu: 0.5 }, NewtonRow::FrictionSecond];
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let mut opts = options(NcpFunction::MinMap, 3);
    opts.timestep_s = 0.001;
    opts.tolerance_m_s = 1e-12;
    opts.jacobian = NewtonJacobian::Exact;
    let (mut p, mut y) = ([0.0; 3], [0.0; 3]);
    let mut scr = NewtonScratch::new(3);
    let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
    let stats = solve(&prob, &opts, &mut scr, &mut it);
    assert!(stats.converged, "{stats:?}");
    assert!((p[0] - 0.02).abs() < 1e-12 && (p[1] + 0.01).abs() < 1e-12 && p[2].abs() < 1e-12, "{p:?}");
}

/// A redundant contact set: a 2 kg point touched by two coincident contacts (μ = 0.5;
/// D = J M⁻¹ Jᵀ of rank 3 on 6 rows), pressed down at 0.01 m/s and sliding at 0.5 m/s along
/// x. The split between the contacts is not unique, the totals are: normal m · 0.01 =
/// 0.02 N·s, friction μ · 0.02 = 0.01 N·s against the slip. Returns D, J̄ũ and the rows.
fn redundant_sliding_problem() -> (Vec<f64>, Vec<f64>, [NewtonRow; 6]) {
    let mass = 2.0;
    let dirs = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let jac: Vec<[f64; 3]> = (0..6).map(|i| dirs[i % 3]).collect();
    let m = 6;
    let d: Vec<f64> = (0..m * m).map(|k| (0..3).map(|c| jac[k / m][c] * jac[k % m][c]).sum::<f64>() / mass).collect();
    let v_free = [0.5, 0.0, -0.01];
    let free: Vec<f64> = jac.iter().map(|j| (0..3).map(|c| j[c] * v_free[c]).sum()).collect();
    (d, free, two_contacts())
}

/// The rows of two contacts (μ = 0.5, zero gaps), rows 0–2 and 3–5.
fn two_contacts() -> [NewtonRow; 6] {
    [
        NewtonRow::Unilateral { gap: 0.0 },
        NewtonRow::FrictionPair { normal_row: 0, mu: 0.5 },
        NewtonRow::FrictionSecond,
        NewtonRow::Unilateral { gap: 0.0 },
        NewtonRow::FrictionPair { normal_row: 3, mu: 0.5 },
        NewtonRow::FrictionSecond,
    ]
}

/// The normal and friction totals of [`redundant_sliding_problem`]'s two contacts.
fn redundant_totals(p: &[f64]) -> (f64, f64, f64) {
    (p[0] + p[3], p[1] + p[4], p[2] + p[5])
}

/// The rescue's projected Gauss–Seidel sweeps on the redundant sliding contact reach the
/// totals, and the exact iteration started there converges.
#[test]
fn projected_sweeps_solve_a_redundant_sliding_contact() {
    let (d, free, rows) = redundant_sliding_problem();
    let m = 6;
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let opts = exact_options(1e-9);
    let (mut p, mut w) = ([0.0; 6], [0.0; 6]);
    projected_sweeps(&prob, &opts, &mut p, &mut w, 200);
    let (n, fx, fy) = redundant_totals(&p);
    assert!((n - 0.02).abs() < 1e-12 && (fx + 0.01).abs() < 1e-12 && fy.abs() < 1e-12, "sweeps: {p:?}");
    assert!(p[0] >= 0.0 && p[3] >= 0.0 && p[1].hypot(p[2]) <= 0.5 * p[0] + 1e-15 && p[4].hypot(p[5]) <= 0.5 * p[3] + 1e-15, "cones: {p:?}");
    let mut y = p;
    let mut scr = NewtonScratch::new(m);
    let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
    let stats = solve(&prob, &opts, &mut scr, &mut it);
    let (n, fx, fy) = redundant_totals(&p);
    assert!(stats.converged && (n - 0.02).abs() < 1e-9 && (fx + 0.01).abs() < 1e-9 && fy.abs() < 1e-9, "{stats:?} {p:?}");
}

/// The proximal-point rescue on the redundant sliding contact, from a start far from any
/// solution (all the normal impulse, three times too much, on one contact and friction the
/// wrong way on the other): its rounds converge to the laws' own tolerance with the right
/// totals, the iterate inside both cones.
#[test]
fn proximal_point_solves_a_redundant_sliding_contact_from_a_poor_start() {
    let (d, free, rows) = redundant_sliding_problem();
    let m = 6;
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let opts = exact_options(1e-9);
    let mut p = [0.06, 0.0, 0.0, 0.0, 0.01, 0.0];
    let mut y = p;
    let mut scr = NewtonScratch::new(m);
    let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
    let stats = proximal_point(&prob, &opts, f64::INFINITY, &mut scr, &mut it);
    let (n, fx, fy) = redundant_totals(&p);
    assert!(stats.converged && stats.residual_m_s <= 1e-9 && stats.proximal_rounds >= 1, "{stats:?}");
    assert!((n - 0.02).abs() < 1e-9 && (fx + 0.01).abs() < 1e-9 && fy.abs() < 1e-9, "{p:?}");
    assert!(p[0] >= -1e-12 && p[3] >= -1e-12 && p[1].hypot(p[2]) <= 0.5 * p[0] + 1e-9 && p[4].hypot(p[5]) <= 0.5 * p[3] + 1e-9, "cones: {p:?}");
}

/// The consecutive blocks of a problem with two independent contacts and a joint row coupled
/// to the second one, and the block-by-block LU against the whole matrix's, bit for bit.
#[test]
fn block_lu_is_bit_identical_to_the_whole_matrix_lu() {
    let m = 7;
    // rows 0–2: contact A; 3–5: contact B; 6: a joint row coupled to contact B only
    let mut d = vec![0.0; m * m];
    let mut seed = 7u64;
    let mut rand = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 11) as f64) / ((1u64 << 53) as f64) - 0.5
    };
    for block in [0..3, 3..7] {
        for r in block.clone() {
            for c in block.clone() {
                d[r * m + c] = rand();
            }
            d[r * m + r] += 3.0;
        }
    }
    // symmetric pattern (the values need not be: J is unsymmetric)
    let rows: Vec<NewtonRow> = two_contacts().into_iter().chain([NewtonRow::Bilateral { error: 0.0, compliance: 0.0 }]).collect();
    let free = [0.0; 7];
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let (mut reach, mut trees, mut ends) = ([0; 7], [(0, 0); 14], [0; 7]);
    assert_eq!(consecutive_blocks(&prob, &mut reach, &mut trees, &mut ends), 2);
    assert_eq!(&ends[..2], &[3, 7]);
    // the same blocks from the rows' trees: contact A on tree 4 against the world, contact B
    // between trees 2 and 9, the joint row on tree 9
    let none = crate::contact::NO_TREE;
    let row_trees = [(4, none), (4, none), (4, none), (2, 9), (2, 9), (2, 9), (9, none)];
    let by_trees = NewtonProblem { row_trees: Some(&row_trees), ..prob };
    let mut tree_ends = [0; 7];
    assert_eq!(consecutive_blocks(&by_trees, &mut reach, &mut trees, &mut tree_ends), 2);
    assert_eq!(&tree_ends[..2], &[3, 7]);
    // contact A on tree 9 too: one block
    let coupled = [(4, 9), (4, 9), (4, 9), (2, 9), (2, 9), (2, 9), (9, none)];
    assert_eq!(consecutive_blocks(&NewtonProblem { row_trees: Some(&coupled), ..prob }, &mut reach, &mut trees, &mut tree_ends), 1);
    assert_eq!(tree_ends[0], 7);
    let b: Vec<f64> = (0..m).map(|_| rand()).collect();
    let (mut whole, mut pivot) = (d.clone(), [0; 7]);
    let mut x_whole = b.clone();
    assert!(lu_in_place(&mut whole, m, &mut pivot));
    lu_solve(&whole, m, &pivot, &mut x_whole);
    let mut blocks = d.clone();
    let mut x_blocks = b.clone();
    let mut start = 0;
    for &end in &ends[..2] {
        assert!(lu_in_place_block(&mut blocks, m, start, end - start, &mut pivot[..end - start]));
        lu_solve_block(&blocks, m, start, &pivot[..end - start], &mut x_blocks[start..end]);
        start = end;
    }
    assert_eq!(whole, blocks);
    assert_eq!(x_whole, x_blocks);
    // and it solves the system
    for r in 0..m {
        let ax: f64 = (0..m).map(|c| d[r * m + c] * x_whole[c]).sum();
        assert!((ax - b[r]).abs() < 1e-12);
    }
}

/// The default preset's exact iteration at a 1 ms step (min-map, line search, ε = 1e-6).
fn exact_options(tolerance_m_s: f64) -> NewtonOptions {
    NewtonOptions { timestep_s: 0.001, tolerance_m_s, jacobian: NewtonJacobian::Exact, line_search: true, regularization: 1e-6, ..options(NcpFunction::MinMap, 30) }
}

/// The AVX2 build of the exact iteration's kernels (chosen at run time on x86-64 CPUs that
/// have it) gives the same bits as the portable build: the LU of a 37-row matrix with
/// pivoting, the Cholesky of an SPD one, a block Delassus product, and the laws with their
/// Jacobian. On a CPU without AVX2 both sides run the portable code.
#[test]
fn the_avx2_build_is_bit_identical_to_the_portable_one() {
    let n = 37;
    let mut a = spd(n, 5, 1e2);
    for (k, v) in a.iter_mut().enumerate() {
        // unsymmetric, with pivoting
        *v += ((k * 7919 % 101) as f64 - 50.0) * 1e-2;
    }
    let (mut wide, mut portable) = (a.clone(), a.clone());
    let (mut pivot_wide, mut pivot_portable) = (vec![0; n], vec![0; n]);
    assert!(lu_in_place_block(&mut wide, n, 0, n, &mut pivot_wide));
    assert!(lu_in_place_block_portable(&mut portable, n, 0, n, &mut pivot_portable));
    assert_eq!(pivot_wide, pivot_portable);
    assert!(wide.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.to_bits()));
    // the Cholesky of the blocks of Delassus rows, likewise
    let (mut wide, mut portable) = (spd(n, 5, 1e2), spd(n, 5, 1e2));
    assert!(cholesky_in_place_block(&mut wide, n, 0, n));
    assert!(cholesky_in_place_block_portable(&mut portable, n, 0, n));
    assert!(wide.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.to_bits()));
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let ends = [12, n];
    let (mut out_wide, mut out_portable) = (vec![0.0; n], vec![0.0; n]);
    block_delassus_product(&a, n, &ends, &x, &mut out_wide, None);
    block_delassus_product_serial(&a, n, &ends, &x, &mut out_portable);
    assert!(out_wide.iter().zip(&out_portable).all(|(x, y)| x.to_bits() == y.to_bits()));
    let (d, rows, free, p) = mixed_rows_problem();
    let m = rows.len();
    let opts = exact_options(1e-9);
    let prob = NewtonProblem { delassus: &d, free_row_velocity: &free, rows: &rows, row_trees: None };
    let one_block = [m];
    let laws = |wide: bool| {
        let (mut f, mut natural, mut jac) = (vec![0.0; m], vec![0.0; m], vec![0.0; m * m]);
        let values = if wide {
            exact_laws(&prob, &opts, &p, &free, &mut f, &mut natural, Some((&mut jac, &one_block[..])))
        } else {
            exact_laws_portable(&prob, &opts, &p, &free, &mut f, &mut natural, Some((&mut jac, &one_block[..])))
        };
        (values.0.to_bits(), values.1.to_bits(), [f, natural, jac].concat().iter().map(|v| v.to_bits()).collect::<Vec<_>>())
    };
    assert_eq!(laws(true), laws(false));
}

/// The row-combination product of a symmetric matrix agrees bit for bit with the row-dot one.
#[test]
fn symmetric_product_is_bit_identical_to_the_row_product() {
    let n = 37;
    let b = spd(n, 11, 1e3);
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            a[i * n + j] = b[i * n + j];
            a[j * n + i] = b[i * n + j];
        }
    }
    let x: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 0.0 } else { (i as f64 * 0.37).sin() }).collect();
    let (mut rows, mut combined) = (vec![0.0; n], vec![0.0; n]);
    delassus_product(&a, n, &x, &mut rows, None);
    symmetric_delassus_product(&a, n, &x, &mut combined, None);
    assert!(rows.iter().zip(&combined).all(|(r, c)| r == c), "{rows:?} {combined:?}");
}

/// LU with partial pivoting solves a system whose first pivot is zero.
#[test]
fn lu_solves_with_pivoting() {
    let a0 = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
    let x_true = [1.0, -2.0, 0.5];
    let b: Vec<f64> = (0..3).map(|r| (0..3).map(|c| a0[r * 3 + c] * x_true[c]).sum()).collect();
    let (mut a, mut piv, mut x) = (a0, [0usize; 3], [b[0], b[1], b[2]]);
    assert!(lu_in_place(&mut a, 3, &mut piv));
    lu_solve(&a, 3, &piv, &mut x);
    for k in 0..3 {
        assert!((x[k] - x_true[k]).abs() < 1e-14, "{x:?}");
    }
}

/// The exact iteration's Cholesky for blocks of Delassus rows ([`cholesky_in_place_block`]):
/// on a banded symmetric positive definite block inside a larger matrix (the stack's block
/// tridiagonal Delassus matrix, zeros outside the band, over 10^±2 in scale) it solves the
/// system as LU with pivoting does (to 1e-12 relative), leaves the rows outside the block
/// alone, and refuses a matrix with a negative eigenvalue.
#[test]
fn the_profile_cholesky_solves_a_banded_block_like_lu_and_refuses_an_indefinite_one() {
    let (n, m, start, band) = (24, 30, 3, 5);
    let dense = spd(n, 11, 1e2);
    let mut banded = dense.clone();
    for i in 0..n {
        for j in 0..n {
            if i.abs_diff(j) > band {
                banded[i * n + j] = 0.0;
            }
        }
        // diagonal dominance keeps the cut matrix positive definite
        let off: f64 = (0..n).filter(|&j| j != i).map(|j| banded[i * n + j].abs()).sum();
        banded[i * n + i] = banded[i * n + i].abs() + off;
    }
    let mut big = vec![7.0; m * m];
    for i in 0..n {
        big[(start + i) * m + start..(start + i) * m + start + n].copy_from_slice(&banded[i * n..(i + 1) * n]);
    }
    let untouched: Vec<f64> = (0..m * m).filter(|&k| !(start..start + n).contains(&(k / m))).map(|k| big[k]).collect();
    assert!(block_is_symmetric(&big, m, start, n));
    let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.61).cos()).collect();
    let mut x_chol = b.clone();
    assert!(cholesky_in_place_block(&mut big, m, start, n));
    cholesky_solve_block(&big, m, start, &mut x_chol);
    let (mut lu, mut pivot, mut x_lu) = (banded.clone(), vec![0; n], b.clone());
    assert!(lu_in_place(&mut lu, n, &mut pivot));
    lu_solve(&lu, n, &pivot, &mut x_lu);
    let scale = x_lu.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    for i in 0..n {
        assert!((x_chol[i] - x_lu[i]).abs() <= 1e-12 * scale, "row {i}: {} vs {}", x_chol[i], x_lu[i]);
        let ax: f64 = (0..n).map(|j| banded[i * n + j] * x_chol[j]).sum();
        assert!((ax - b[i]).abs() < 1e-10 * banded[i * n + i].abs().max(1.0), "row {i}: A x − b = {}", ax - b[i]);
    }
    let after: Vec<f64> = (0..m * m).filter(|&k| !(start..start + n).contains(&(k / m))).map(|k| big[k]).collect();
    assert_eq!(untouched, after);
    // an indefinite matrix: refused, not a NaN factor
    let mut indefinite = banded.clone();
    indefinite[5 * n + 5] = -1.0;
    assert!(!cholesky_in_place_block(&mut indefinite, n, 0, n));
    // an unsymmetric one is not taken for symmetric
    banded[2 * n + 1] += 1e-9;
    assert!(!block_is_symmetric(&banded, n, 0, n));
}

/// The factorisation kept from one solve ([`super::kept`]) ends the next solve of a nearby
/// problem (the free row velocities moved by 1e-7 m/s, as between two steps at rest) in one
/// solve, without a new Jacobian, to the tolerance and to the impulses a fresh solve finds; on
/// a problem far from it (a contact that separates) the chord step misses the tolerance, is
/// dropped, and the Newton iteration gives the bits it gives without a kept factorisation.
#[test]
fn a_kept_factorisation_ends_a_nearby_solve_and_a_stale_one_is_dropped() {
    let (d, rows, free, p0) = mixed_rows_problem();
    let m = rows.len();
    let opts = exact_options(1e-9);
    // solves `free` from `warm`, with the kept factorisation `history` lent when given
    let solve_from = |free: &[f64], warm: &[f64], history: Option<&mut Vec<f64>>| {
        let prob = NewtonProblem { delassus: &d, free_row_velocity: free, rows: &rows, row_trees: None };
        let mut scr = NewtonScratch::new(m);
        let (mut p, mut y) = (warm.to_vec(), warm.to_vec());
        let mut it = NewtonIterate { impulse: &mut p, velocity_impulse: &mut y, free_weight: 1.0 };
        let stats = match history {
            Some(h) => {
                scr.lend_kept_factor(h);
                let stats = solve(&prob, &opts, &mut scr, &mut it);
                scr.return_kept_factor(h);
                stats
            }
            None => solve(&prob, &opts, &mut scr, &mut it),
        };
        (stats, p)
    };
    let mut history = Vec::new();
    let (first, p1) = solve_from(&free, &p0, Some(&mut history));
    assert!(first.converged && first.newton_iterations > 0 && first.kept_factor_solves == 0, "{first:?}");
    assert!(kept::matches(&history, m, &[m]), "a factorisation is kept");
    // nearby: one solve with the kept factor
    let near: Vec<f64> = free.iter().enumerate().map(|(i, f)| f + 1e-7 * (1.0 + i as f64 * 0.1)).collect();
    let (chord, p_chord) = solve_from(&near, &p1, Some(&mut history.clone()));
    assert!(chord.converged && chord.newton_iterations == 0 && chord.kept_factor_solves == 1, "{chord:?}");
    assert!(chord.residual_m_s <= 1e-9);
    let (fresh, p_fresh) = solve_from(&near, &p1, None);
    assert!(fresh.converged && fresh.newton_iterations >= 1, "{fresh:?}");
    let gap = p_chord.iter().zip(&p_fresh).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(gap < 1e-9, "the chord step's impulses against a fresh solve's: {gap:e} N·s apart");
    // far: the pressed contact's row velocity reversed, it separates
    let mut far = free;
    far[0] = 0.5;
    let (dropped, p_dropped) = solve_from(&far, &p1, Some(&mut history.clone()));
    assert!(dropped.converged && dropped.kept_factor_solves == 1 && dropped.newton_iterations >= 1, "{dropped:?}");
    let (without, p_without) = solve_from(&far, &p1, None);
    assert_eq!(dropped.newton_iterations, without.newton_iterations);
    assert!(p_dropped.iter().zip(&p_without).all(|(a, b)| a.to_bits() == b.to_bits()), "{p_dropped:?} vs {p_without:?}");
    // a factorisation serves kept::MAX_USES chord steps, then the Newton iteration runs again
    let mut used = history.clone();
    for _ in 0..kept::MAX_USES as usize {
        assert!(kept::matches(&used, m, &[m]));
        kept::note_use(&mut used);
    }
    assert!(!kept::matches(&used, m, &[m]));
    let (renewed, _) = solve_from(&near, &p1, Some(&mut used));
    assert!(renewed.converged && renewed.kept_factor_solves == 0 && renewed.newton_iterations >= 1, "{renewed:?}");
    assert!(kept::matches(&used, m, &[m]), "the new factorisation is kept");
}

/// A block whose rows 2, 5 and 9 have their diagonal alone (a joint's friction at its bound, an
/// open contact): the split solve (division on those rows, LU on the other nine) solves
/// `A x = b` as the LU of the whole block does, to round-off; the kept record of a split block
/// beside a whole-LU block gives the same bits again in the chord step's solve.
#[test]
fn a_block_with_decoupled_rows_is_solved_by_a_division_and_a_smaller_lu() {
    use super::decoupled::{factor_and_solve, split_rows};
    use super::kept::BlockFactor;
    let n = 12;
    let mut a = spd(n, 11, 1e2);
    for (k, v) in a.iter_mut().enumerate() {
        *v += ((k * 7919 % 101) as f64 - 50.0) * 1e-2;
    }
    let alone = [2, 5, 9];
    for &r in &alone {
        for c in 0..n {
            if c != r {
                a[r * n + c] = 0.0;
            }
        }
        a[r * n + r] = 0.3 + r as f64;
    }
    let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.61).cos()).collect();
    let mut order = vec![0; n];
    let coupled = split_rows(&a, n, 0, n, &mut order);
    assert_eq!(coupled, n - alone.len());
    assert_eq!(&order[coupled..], &alone);
    assert!(order[..coupled].windows(2).all(|w| w[0] < w[1]) && !order[..coupled].iter().any(|r| alone.contains(r)));
    let (mut factor, mut pivot, mut x, mut work) = (vec![0.0; n * n], vec![0; n], b.clone(), vec![0.0; n]);
    assert!(factor_and_solve(&a, n, 0, &order, coupled, &mut factor, &mut pivot, &mut x, &mut work));
    let (mut whole, mut whole_pivot, mut x_whole) = (a.clone(), vec![0; n], b.clone());
    assert!(lu_in_place(&mut whole, n, &mut whole_pivot));
    lu_solve(&whole, n, &whole_pivot, &mut x_whole);
    for r in 0..n {
        let ax: f64 = (0..n).map(|c| a[r * n + c] * x[c]).sum();
        assert!((ax - b[r]).abs() < 1e-12, "row {r}: A x − b = {}", ax - b[r]);
        assert!((x[r] - x_whole[r]).abs() < 1e-12 * x_whole[r].abs().max(1.0), "row {r}: {} against the whole LU's {}", x[r], x_whole[r]);
    }
    for &r in &alone {
        assert_eq!(x[r], b[r] / a[r * n + r], "a decoupled row is one division");
    }
    // a zero diagonal on a decoupled row is singular, not a division by zero
    let mut zero = a.clone();
    zero[5 * n + 5] = 0.0;
    assert!(!factor_and_solve(&zero, n, 0, &order, coupled, &mut factor.clone(), &mut pivot.clone(), &mut b.clone(), &mut work));

    // the kept record: block 0 the split one (rows 0..12), block 1 a whole LU (rows 12..16)
    let m = n + 4;
    let mut big = vec![0.0; m * m];
    for r in 0..n {
        big[r * m..r * m + n].copy_from_slice(&a[r * n..(r + 1) * n]);
    }
    let small = spd(4, 3, 10.0);
    for r in 0..4 {
        big[(n + r) * m + n..(n + r) * m + m].copy_from_slice(&small[r * 4..(r + 1) * 4]);
    }
    let mut rhs: Vec<f64> = (0..m).map(|i| (i as f64 * 0.29).sin()).collect();
    let (mut order_m, mut pivot_m, mut split_factors) = (vec![0; m], vec![0; m], vec![0.0; m * m]);
    assert_eq!(split_rows(&big, m, 0, n, &mut order_m[..n]), coupled);
    let mut dense = big.clone();
    assert!(factor_and_solve(&big, m, 0, &order_m[..n], coupled, &mut split_factors[..n * m], &mut pivot_m[..n], &mut rhs[..n], &mut work));
    assert!(lu_in_place_block(&mut dense, m, n, 4, &mut pivot_m[n..]));
    lu_solve_block(&dense, m, n, &pivot_m[n..], &mut rhs[n..]);
    let kinds = [BlockFactor::SplitLu { coupled }, BlockFactor::Lu];
    let mut kept_record = Vec::with_capacity(kept::capacity(m));
    kept::record(&mut kept_record, &dense, m, &[n, m], &kinds, &pivot_m, &order_m, &split_factors);
    assert!(kept::matches(&kept_record, m, &[n, m]));
    let mut chord: Vec<f64> = (0..m).map(|i| (i as f64 * 0.29).sin()).collect();
    let (mut pivot_scratch, mut order_scratch, mut work_m) = (vec![0; m], vec![0; m], vec![0.0; m]);
    kept::solve(&kept_record, &mut chord, &mut pivot_scratch, &mut order_scratch, &mut work_m);
    assert!(chord.iter().zip(&rhs).all(|(c, r)| c.to_bits() == r.to_bits()), "the kept solve repeats the step's solve bit for bit");
}
