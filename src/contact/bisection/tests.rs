//! Unit tests of the per-contact bisection solver (kept out of the solver file).

#![allow(clippy::needless_range_loop)]
use super::*;
use crate::contact::{ImpulseSolver, PgsParams, PgsSolver};
use nalgebra::{DMatrix, Matrix3, SymmetricEigen};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

// ---------- helpers ----------


/// An owned problem with a `view()`.
struct Owned {
    nc: usize,
    nj: usize,
    mu: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    g: Vec<f64>,
    u: Vec<f64>,
}
impl Owned {
    fn view(&self) -> ContactProblem<'_> {
        ContactProblem {
            num_contacts: self.nc,
            contact_rows: crate::contact::ContactRows::POINT,
            num_joint_rows: self.nj,
            friction: &self.mu,
            row_lower: &self.lo,
            row_upper: &self.hi,
            delassus: &self.g,
            free_velocity: &self.u,
            primal: None,
            factored: None,
        }
    }
    fn dim(&self) -> usize {
        3 * self.nc + self.nj
    }
    fn velocity(&self, lambda: &[f64]) -> Vec<f64> {
        let p = self.view();
        (0..self.dim()).map(|i| p.row_velocity(i, lambda)).collect()
    }
}

/// One contact with block `g` and free velocity `u`, both in the problem's [n, t1, t2] order.
fn single(g: [[f64; 3]; 3], u: [f64; 3], mu: f64) -> Owned {
    Owned { nc: 1, nj: 0, mu: vec![mu], lo: vec![], hi: vec![], g: g.iter().flatten().copied().collect(), u: u.to_vec() }
}

/// Converts a paper-order (x, y, z) 3×3 matrix to problem order [n, t1, t2].
fn to_problem_order(gx: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut g = [[0.0; 3]; 3];
    for a in 0..3 {
        for b in 0..3 {
            g[MAP[a]][MAP[b]] = gx[a][b];
        }
    }
    g
}

fn exact_params() -> BisectionParams {
    BisectionParams { max_iterations: 10_000, tolerance_impulse: 1e-13, tolerance_velocity: 1e-13, ..BisectionParams::default() }
}

fn run(o: &Owned, prm: BisectionParams, warm: &[f64]) -> (Vec<f64>, SolveStats) {
    let mut s = BisectionSolver::new(prm, o.nc, o.nj);
    let mut l = warm.to_vec();
    let st = s.solve(&o.view(), &mut l);
    (l, st)
}

fn run_pgs(o: &Owned) -> (Vec<f64>, SolveStats) {
    let mut s = PgsSolver::new(PgsParams { max_iterations: 2_000_000, tolerance: 1e-12, relaxation: 1.0 }, o.nc);
    let mut l = vec![0.0; o.dim()];
    let st = s.solve(&o.view(), &mut l);
    (l, st)
}

/// Random SPD 3×3 block G = R diag(σ) Rᵀ with eigenvalues in [σ_lo, σ_hi] (paper order).
fn random_spd3(rng: &mut ChaCha8Rng, s_lo: f64, s_hi: f64) -> [[f64; 3]; 3] {
    let a = Matrix3::from_fn(|_, _| rng.random_range::<f64, _>(-1.0..=1.0));
    let q = a.qr().q();
    let d = Matrix3::from_diagonal(&nalgebra::Vector3::new(rng.random_range::<f64, _>(s_lo..=s_hi), rng.random_range::<f64, _>(s_lo..=s_hi), rng.random_range::<f64, _>(s_lo..=s_hi)));
    let g = q * d * q.transpose();
    let mut out = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            out[i][j] = 0.5 * (g[(i, j)] + g[(j, i)]);
        }
    }
    out
}

fn block_from(gx: [[f64; 3]; 3]) -> Block {
    let o = single(to_problem_order(gx), [0.0; 3], 1.0);
    Block::new(&o.view(), 0, BisectionParams::default().singular_threshold)
}

/// E(λ) = ½ (λ − λ^{v=0})ᵀ G (λ − λ^{v=0}) (paper order).
fn energy(gx: &[[f64; 3]; 3], lv0: [f64; 3], l: [f64; 3]) -> f64 {
    let d = [l[0] - lv0[0], l[1] - lv0[1], l[2] - lv0[2]];
    let mut e = 0.0;
    for a in 0..3 {
        for b in 0..3 {
            e += d[a] * gx[a][b] * d[b];
        }
    }
    0.5 * e
}

/// Brute-force minimum of E over the conic section {v_z = 0, ‖λ_t‖ = μ λ_z} (paper order):
/// dense θ sampling over all angles with r > 0, then golden-section refinement.
fn brute_force_slip(gx: &[[f64; 3]; 3], c: [f64; 3], mu: f64, lv0: [f64; 3]) -> ([f64; 3], f64) {
    let pt = |th: f64| -> Option<[f64; 3]> {
        let den = gx[2][2] / mu + gx[2][0] * th.cos() + gx[2][1] * th.sin();
        if den <= 0.0 {
            return None;
        }
        let r = -c[2] / den;
        Some([r * th.cos(), r * th.sin(), r / mu])
    };
    let e_at = |th: f64| pt(th).map(|l| energy(gx, lv0, l)).unwrap_or(f64::INFINITY);
    let n = 20_000;
    let h = std::f64::consts::TAU / n as f64;
    let mut best = (0.0, f64::INFINITY);
    for k in 0..n {
        let th = k as f64 * h;
        let e = e_at(th);
        if e < best.1 {
            best = (th, e);
        }
    }
    let (mut a, mut b) = (best.0 - h, best.0 + h);
    let gr = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..200 {
        let x1 = b - gr * (b - a);
        let x2 = a + gr * (b - a);
        if e_at(x1) < e_at(x2) {
            b = x2;
        } else {
            a = x1;
        }
    }
    let th = 0.5 * (a + b);
    let l = pt(th).unwrap();
    (l, energy(gx, lv0, l))
}

/// G = J M⁻¹ Jᵀ for a random J (m × n) and SPD M; `iso[c]` makes contact c's 3×3 diagonal
/// block g_c I (rows of J whitened), for comparisons with the Coulomb PGS.
fn random_delassus(rng: &mut ChaCha8Rng, nc: usize, nj: usize, extra_dof: usize, iso: bool) -> DMatrix<f64> {
    let m = 3 * nc + nj;
    let n = m + extra_dof;
    let a = DMatrix::from_fn(n, n, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
    let mass = &a * a.transpose() + DMatrix::identity(n, n) * (0.5 * n as f64);
    let minv = mass.clone().cholesky().unwrap().inverse();
    let mut j = DMatrix::from_fn(m, n, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
    if iso {
        for c in 0..nc {
            let ji = j.rows(3 * c, 3).into_owned();
            let b = &ji * &minv * ji.transpose();
            let eig = SymmetricEigen::new(b);
            let inv_sqrt = &eig.eigenvectors
                * DMatrix::from_diagonal(&eig.eigenvalues.map(|x| 1.0 / x.sqrt()))
                * eig.eigenvectors.transpose();
            let gc = rng.random_range::<f64, _>(0.5..=2.0);
            let w = inv_sqrt * ji * gc.sqrt();
            j.rows_mut(3 * c, 3).copy_from(&w);
        }
    }
    let g = &j * minv * j.transpose();
    (&g + g.transpose()) * 0.5
}

fn owned_from(g: &DMatrix<f64>, nc: usize, nj: usize, u: Vec<f64>, mu: Vec<f64>, lo: Vec<f64>, hi: Vec<f64>) -> Owned {
    let m = 3 * nc + nj;
    let mut gv = vec![0.0; m * m];
    for i in 0..m {
        for k in 0..m {
            gv[i * m + k] = g[(i, k)];
        }
    }
    Owned { nc, nj, mu, lo, hi, g: gv, u }
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
    let n: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    d / n.max(1e-300)
}

// ---------- single contact: the three cases ----------


/// The bisection (exact settings, cold start) and PGS solutions of `o` agree to 1e-6 (relative)
/// and the bisection's satisfies the physical conditions.
fn assert_bisection_agrees_with_pgs(o: &Owned, case: usize) {
    let (lp, sp) = run_pgs(o);
    assert!(sp.converged, "case {case}: PGS did not converge: {sp:?}");
    let (lb, sb) = run(o, exact_params(), &vec![0.0; o.dim()]);
    assert!(sb.converged, "case {case}: {sb:?}");
    let d = rel_diff(&lb, &lp);
    assert!(d < 1e-6, "case {case}: relative difference {d}\n{lb:?}\n{lp:?}");
    let (imp, vel) = o.view().violation(&lb);
    assert!(imp < 1e-10 && vel < 1e-9, "violation {imp} {vel}");
}

#[test]
fn open_contact_gives_zero_impulse() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for k in 0..50 {
        let gx = random_spd3(&mut rng, 0.1, 3.0);
        let g = to_problem_order(gx);
        let un = if k == 0 { 0.0 } else { rng.random_range::<f64, _>(1e-6..=2.0) };
        let u = [un, rng.random_range::<f64, _>(-2.0..=2.0), rng.random_range::<f64, _>(-2.0..=2.0)];
        let o = single(g, u, rng.random_range::<f64, _>(0.1..=2.0));
        // a non-zero warm start must be removed
        let (l, st) = run(&o, BisectionParams::default(), &[0.3, 0.1, -0.1]);
        assert_eq!(l, vec![0.0; 3], "case {k}");
        assert!(st.converged && st.residual <= 1e-6, "{st:?}");
    }
}

#[test]
fn sticking_contact_is_minus_g_inverse_u_free() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for k in 0..100 {
        let gx = random_spd3(&mut rng, 0.1, 3.0);
        let mu = rng.random_range::<f64, _>(0.2..=1.5);
        // λ_true strictly inside the cone, u_free = −G λ_true
        let ln = rng.random_range::<f64, _>(0.1..=2.0);
        let rt = rng.random_range::<f64, _>(0.0..=0.95) * mu * ln;
        let th = rng.random_range::<f64, _>(0.0..=std::f64::consts::TAU);
        let lt = [ln, rt * th.cos(), rt * th.sin()];
        let g = to_problem_order(gx);
        let u: Vec<f64> = (0..3).map(|i| -(0..3).map(|j| g[i][j] * lt[j]).sum::<f64>()).collect();
        if u[0] >= 0.0 {
            continue; // open by the model's rule (c_n ≥ 0), although −G⁻¹u is also admissible
        }
        let o = single(g, [u[0], u[1], u[2]], mu);
        let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
        assert!(st.converged, "{st:?}");
        for i in 0..3 {
            assert!((l[i] - lt[i]).abs() <= 1e-12 * (1.0 + ln), "case {k}: {l:?} vs {lt:?}");
        }
        assert!(o.velocity(&l).iter().all(|v| v.abs() < 1e-12));
    }
}

#[test]
fn sliding_isotropic_closed_form() {
    // closed form: G = 2I, c = (1, 0.5, −1) (x, y, z), μ = 0.3
    let o = single([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]], [-1.0, 1.0, 0.5], 0.3);
    let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
    assert!(st.converged);
    assert!((l[0] - 0.5).abs() < 1e-12 && (l[1] + 0.134164).abs() < 1e-6 && (l[2] + 0.067082).abs() < 1e-6, "{l:?}");

    // random isotropic G = g I: λ_n = −u_n/g, λ_t = −μ λ_n u_t,free/‖u_t,free‖ when
    // ‖u_t,free‖/g > μ λ_n; friction opposes the resulting slip (Coulomb = MDP here)
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut n = 0;
    while n < 200 {
        let gs = rng.random_range::<f64, _>(0.1..=5.0);
        let mu = rng.random_range::<f64, _>(0.05..=2.0);
        let u = [rng.random_range::<f64, _>(-2.0..=-0.01), rng.random_range::<f64, _>(-3.0..=3.0), rng.random_range::<f64, _>(-3.0..=3.0)];
        let ln = -u[0] / gs;
        let ut = norm2(u[1], u[2]);
        if ut / gs <= mu * ln * 1.001 {
            continue; // sticking
        }
        n += 1;
        let o = single([[gs, 0.0, 0.0], [0.0, gs, 0.0], [0.0, 0.0, gs]], u, mu);
        let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
        assert!(st.converged);
        let expect = [ln, -mu * ln * u[1] / ut, -mu * ln * u[2] / ut];
        for i in 0..3 {
            assert!((l[i] - expect[i]).abs() < 1e-12 * (1.0 + ln), "{l:?} vs {expect:?}");
        }
        let v = o.velocity(&l);
        assert!(v[0].abs() < 1e-12, "u_n = {}", v[0]);
        assert!((norm2(l[1], l[2]) - mu * l[0]).abs() < 1e-12);
        // maximal dissipation: λ_t = −μ λ_n v_t/‖v_t‖
        let vt = norm2(v[1], v[2]);
        assert!(vt > 0.0);
        assert!((l[1] + mu * l[0] * v[1] / vt).abs() < 1e-10 && (l[2] + mu * l[0] * v[2] / vt).abs() < 1e-10);
    }
}

#[test]
fn sliding_anisotropic_matches_prototype_regression_values() {
    let prm = BisectionParams::default();
    // reference values of an independent prototype (paper order x, y, z)
    let gx = [[2.0, 0.3, 0.2], [0.3, 1.5, -0.1], [0.2, -0.1, 1.0]];
    let c = [0.8, -0.4, -0.5];
    let l = solve_contact(&block_from(gx), c, 0.4, &prm);
    let expect = [-0.188645, 0.112390, 0.548968];
    for i in 0..3 {
        assert!((l[i] - expect[i]).abs() < 2e-6, "{l:?}");
    }
    let lv0 = [-0.526969, 0.415188, 0.646913];
    let blk = block_from(gx);
    let s = blk.solve(c);
    for i in 0..3 {
        assert!((-s[i] - lv0[i]).abs() < 2e-6);
    }
    let e = energy(&gx, [-s[0], -s[1], -s[2]], l);
    assert!((e - 0.1476985).abs() < 1e-6, "E = {e}");
    // v = c + G λ = (0.566220, −0.342906, 0); friction not exactly opposite to v_t
    let v: Vec<f64> = (0..3).map(|a| c[a] + (0..3).map(|b| gx[a][b] * l[b]).sum::<f64>()).collect();
    assert!((v[0] - 0.566220).abs() < 2e-6 && (v[1] + 0.342906).abs() < 2e-6 && v[2].abs() < 1e-12, "{v:?}");
    let cosang = -(l[0] * v[0] + l[1] * v[1]) / (norm2(l[0], l[1]) * norm2(v[0], v[1]));
    assert!((cosang - 0.99997).abs() < 1e-5 && cosang < 1.0 - 1e-6, "cos = {cosang}");

    // prototype reference: coupled normal–tangential
    let gx = [[1.0, 0.0, 0.6], [0.0, 1.0, 0.0], [0.6, 0.0, 1.0]];
    let c = [1.0, 0.0, -0.5];
    let blk = block_from(gx);
    let l = solve_contact(&blk, c, 0.9, &prm);
    let expect = [-0.978261, 0.0, 1.086957];
    for i in 0..3 {
        assert!((l[i] - expect[i]).abs() < 2e-6, "{l:?}");
    }
    let s = blk.solve(c);
    let e = energy(&gx, [-s[0], -s[1], -s[2]], l);
    assert!((e - 0.3548116).abs() < 1e-6, "E = {e}");
}

/// Random sliding problems (ellipses, parabolas, hyperbolas) against brute force.
fn slip_cases(seed: u64, count: usize, mut f: impl FnMut([[f64; 3]; 3], [f64; 3], f64)) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut n = 0;
    while n < count {
        let gx = random_spd3(&mut rng, 0.05, 3.0);
        let mu = rng.random_range::<f64, _>(0.2..=3.0);
        let c = [rng.random_range::<f64, _>(-2.0..=2.0), rng.random_range::<f64, _>(-2.0..=2.0), rng.random_range::<f64, _>(-2.0..=-0.01)];
        let blk = block_from(gx);
        let s = blk.solve(c);
        if mu * -s[2] >= norm2(s[0], s[1]) {
            continue; // sticking
        }
        n += 1;
        f(gx, c, mu);
    }
}

#[test]
fn sliding_matches_brute_force_including_hyperbolic_sections() {
    let prm = BisectionParams::default();
    let mut hyperbolic = 0;
    slip_cases(4, 300, |gx, c, mu| {
        let blk = block_from(gx);
        let s = blk.solve(c);
        let lv0 = [-s[0], -s[1], -s[2]];
        let l = solve_contact(&blk, c, mu, &prm);
        let (lb, eb) = brute_force_slip(&gx, c, mu, lv0);
        let e = energy(&gx, lv0, l);
        assert!(e <= eb + 1e-9 * (1.0 + eb), "E = {e} > brute {eb}; {l:?} vs {lb:?}");
        let scale = 1.0 + norm3(lb);
        for i in 0..3 {
            assert!((l[i] - lb[i]).abs() < 1e-5 * scale, "{l:?} vs {lb:?}");
        }
        // v_z = 0 and ‖λ_t‖ = μ λ_z
        let vz = c[2] + gx[2][0] * l[0] + gx[2][1] * l[1] + gx[2][2] * l[2];
        assert!(vz.abs() < 1e-12 * scale);
        assert!((norm2(l[0], l[1]) - mu * l[2]).abs() < 1e-12 * scale);
        if gx[2][2] / mu < norm2(gx[2][0], gx[2][1]) {
            hyperbolic += 1;
        }
    });
    assert!(hyperbolic > 10, "only {hyperbolic} hyperbolic/parabolic sections");
}

#[test]
fn paper_visibility_sign_fails_negative_control() {
    let prm = BisectionParams::default();
    let (mut wrong, mut total) = (0, 0);
    slip_cases(5, 200, |gx, c, mu| {
        let blk = block_from(gx);
        let s = blk.solve(c);
        let lv0 = [-s[0], -s[1], -s[2]];
        let (_, eb) = brute_force_slip(&gx, c, mu, lv0);
        let l = solve_contact_impl::<true>(&blk, c, mu, &prm);
        total += 1;
        if energy(&gx, lv0, l) > eb + 1e-9 * (1.0 + eb) {
            wrong += 1;
        }
    });
    assert!(wrong * 2 > total, "literal paper sign failed only {wrong}/{total}");
}

#[test]
fn frictionless_contact() {
    let gx = [[2.0, 0.3, 0.2], [0.3, 1.5, -0.1], [0.2, -0.1, 1.0]];
    let o = single(to_problem_order(gx), [-0.5, 0.8, -0.4], 0.0);
    let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
    assert!(st.converged);
    assert!((l[0] - 0.5).abs() < 1e-14 && l[1] == 0.0 && l[2] == 0.0, "{l:?}");
}

// ---------- ill-conditioned and singular blocks ----------

/// G = Q diag(1, 1e-4, 1e-8) Qᵀ (condition number 1e8), paper order.
fn ill_conditioned(rng: &mut ChaCha8Rng) -> [[f64; 3]; 3] {
    let a = Matrix3::from_fn(|_, _| rng.random_range::<f64, _>(-1.0..=1.0));
    let q = a.qr().q();
    let g = q * Matrix3::from_diagonal(&nalgebra::Vector3::new(1.0, 1e-4, 1e-8)) * q.transpose();
    let mut out = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            out[i][j] = 0.5 * (g[(i, j)] + g[(j, i)]);
        }
    }
    out
}

#[test]
fn ill_conditioned_block_cond_1e8() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let prm = BisectionParams::default();
    let (mut sticks, mut slips) = (0, 0);
    for _ in 0..300 {
        let gx = ill_conditioned(&mut rng);
        let blk = block_from(gx);
        assert_eq!(blk.shift, 0.0, "cond 1e8 must be solved exactly");
        // choose λ^{v=0} and set c = −G λ^{v=0}: E is then evaluated without G⁻¹
        let mu = rng.random_range::<f64, _>(0.2..=1.5);
        let lv0 = [rng.random_range::<f64, _>(-1.0..=1.0), rng.random_range::<f64, _>(-1.0..=1.0), rng.random_range::<f64, _>(0.05..=1.0)];
        let c: [f64; 3] = std::array::from_fn(|a| -(0..3).map(|b| gx[a][b] * lv0[b]).sum::<f64>());
        if !(c[2] < 0.0) {
            continue;
        }
        let l = solve_contact(&blk, c, mu, &prm);
        assert!(l.iter().all(|x| x.is_finite()));
        let v: [f64; 3] = std::array::from_fn(|a| c[a] + (0..3).map(|b| gx[a][b] * l[b]).sum::<f64>());
        if mu * lv0[2] >= norm2(lv0[0], lv0[1]) {
            sticks += 1;
            // λ = −G⁻¹ c to the accuracy the conditioning allows
            for i in 0..3 {
                assert!((l[i] - lv0[i]).abs() < 1e-6, "{l:?} vs {lv0:?}");
            }
            assert!(norm3(v) < 1e-12, "{v:?}");
        } else {
            slips += 1;
            let (lb, eb) = brute_force_slip(&gx, c, mu, lv0);
            let e = energy(&gx, lv0, l);
            assert!(e <= eb + 1e-9 * (1.0 + eb), "E = {e} > {eb}; {l:?} vs {lb:?}");
            assert!(v[2].abs() < 1e-12 && (norm2(l[0], l[1]) - mu * l[2]).abs() < 1e-12);
            assert!(norm3(l) < 1e3, "blew up: {l:?}");
        }
    }
    assert!(sticks > 20 && slips > 20, "{sticks} sticks, {slips} slips");
}

/// Sliding problems on ill-conditioned blocks (condition numbers up to 10⁸, and wide
/// eigenvalue spreads), `c = −G λ^{v=0}` with `λ^{v=0}` outside the cone, at impulse scale
/// `scale`. Calls `f(block, c, μ, λ^{v=0})` with `λ^{v=0} = −G⁻¹ c` as the solver computes it.
fn ill_conditioned_slip_cases(seed: u64, count: usize, scale: (f64, f64), mut f: impl FnMut(&Block, [f64; 3], f64, [f64; 3])) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut n = 0;
    while n < count {
        let gx = match n % 3 {
            0 => ill_conditioned(&mut rng),
            1 => random_spd3(&mut rng, 1e-5, 3.0),
            _ => random_spd3(&mut rng, 0.05, 3.0),
        };
        let mu = rng.random_range::<f64, _>(0.1..=2.0);
        let sc = 10f64.powf(rng.random_range::<f64, _>(scale.0.log10()..=scale.1.log10()));
        let lv = [rng.random_range::<f64, _>(-1.0..=1.0) * sc, rng.random_range::<f64, _>(-1.0..=1.0) * sc, rng.random_range::<f64, _>(0.0..=1.0) * sc];
        let c: [f64; 3] = std::array::from_fn(|a| -(0..3).map(|b| gx[a][b] * lv[b]).sum::<f64>());
        let blk = block_from(gx);
        if !(c[2] < 0.0) || blk.inactive {
            continue;
        }
        let s = blk.solve(c);
        let lv0 = [-s[0], -s[1], -s[2]];
        if mu * lv0[2] >= norm2(lv0[0], lv0[1]) {
            continue; // sticking
        }
        n += 1;
        f(&blk, c, mu, lv0);
    }
}

/// The sliding case's safeguarded Illinois root finder against the paper's plain halving run
/// until the bracket is one ulp wide, on 6 000 sliding problems with ill-conditioned blocks:
/// the impulses agree to 10⁻⁹ (relative), and it needs fewer than half the gradient
/// evaluations of the halving at the same tolerance. (Fails if the trial point is always the
/// midpoint, or if the bracket update is given the wrong sign.)
#[test]
fn illinois_root_finder_matches_plain_halving_with_fewer_evaluations() {
    let prm = BisectionParams::default();
    // the reference: plain halving until the bracket is one ulp wide
    let exact = BisectionParams { bisection_tolerance: 0.0, max_bisection_iterations: 2000, ..prm.clone() };
    let (mut ev_new, mut ev_half, mut cases, mut worst) = (0u64, 0u64, 0u64, 0.0f64);
    let mut check = |prm: &BisectionParams, blk: &Block, c: [f64; 3], mu: f64, lv0: [f64; 3]| {
        let (l, e_new) = slip::<false, false>(blk, c, mu, lv0, prm);
        let (lh, e_half) = slip::<false, true>(blk, c, mu, lv0, prm);
        let (lr, _) = slip::<false, true>(blk, c, mu, lv0, &exact);
        let d = [l[0] - lr[0], l[1] - lr[1], l[2] - lr[2]];
        let rel = norm3(d) / norm3(lr);
        assert!(rel <= 1e-9, "relative error {rel:e} (halving: {:e}): {l:?} vs {lr:?} (G = {:?}, c = {c:?}, μ = {mu})", rel_diff(&lh, &lr), blk.g);
        worst = worst.max(rel);
        ev_new += u64::from(e_new);
        ev_half += u64::from(e_half);
        cases += 1;
    };
    // impulses of order 1, tolerance 10⁻¹⁰ N·s
    let tight = BisectionParams { bisection_tolerance: 1e-10, ..prm.clone() };
    ill_conditioned_slip_cases(12, 3000, (0.3, 3.0), |blk, c, mu, lv0| check(&tight, blk, c, mu, lv0));
    // 10⁻⁵ to 10 N·s with the tolerance scaled to 10⁻¹⁰ of the impulse
    ill_conditioned_slip_cases(13, 3000, (1e-5, 10.0), |blk, c, mu, lv0| {
        let tol = 1e-10 * norm3(lv0);
        check(&BisectionParams { bisection_tolerance: tol, ..prm.clone() }, blk, c, mu, lv0)
    });
    eprintln!("{cases} cases: {ev_new} gradient evaluations (Illinois) vs {ev_half} (halving), worst relative difference {worst:e}");
    assert!(2 * ev_new < ev_half, "{ev_new} vs {ev_half} evaluations");
}

#[test]
fn singular_blocks_stay_finite() {
    // rank 1: one DOF (a pinned link), J = aᵀ, G = a aᵀ / m; rank 2: two DOFs
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for rank in [1usize, 2] {
        for _ in 0..50 {
            let j = DMatrix::from_fn(3, rank, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
            let minv = DMatrix::from_diagonal(&nalgebra::DVector::from_fn(rank, |_, _| rng.random_range::<f64, _>(0.5..=2.0)));
            let vstar = nalgebra::DVector::from_fn(rank, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
            let g = &j * &minv * j.transpose();
            let u = &j * &vstar; // consistent: u_free ∈ range(J)
            let o = owned_from(&g, 1, 0, u.iter().copied().collect(), vec![rng.random_range::<f64, _>(0.3..=1.5)], vec![], vec![]);
            let (l, st) = run(&o, BisectionParams::default(), &[0.0; 3]);
            assert!(l.iter().all(|x| x.is_finite() && x.abs() < 1e3), "{l:?}");
            assert!(st.converged, "{st:?}");
            let v = o.velocity(&l);
            assert!(v[0] > -1e-6, "penetrating: {v:?}");
            assert!(l[0] >= 0.0 && norm2(l[1], l[2]) <= o.mu[0] * l[0] * (1.0 + 1e-12) + 1e-15);
            // the physical velocity of the DOFs after the impulse never gains energy
            let dv = &minv * j.transpose() * nalgebra::DVector::from_column_slice(&l);
            let vplus = &vstar + dv;
            let m = minv.map(|x| if x != 0.0 { 1.0 / x } else { 0.0 });
            let ke = |w: &nalgebra::DVector<f64>| 0.5 * (w.transpose() * &m * w)[(0, 0)];
            assert!(ke(&vplus) <= ke(&vstar) + 1e-9);
        }
    }
    // an all-zero block: no mobility, impulse 0
    let o = single([[0.0; 3]; 3], [-1.0, 0.0, 0.0], 0.5);
    let (l, st) = run(&o, BisectionParams::default(), &[1.0, 0.0, 0.0]);
    assert_eq!(l, vec![0.0; 3]);
    assert!(st.converged);
}

// ---------- multi-contact ----------

fn random_u(rng: &mut ChaCha8Rng, nc: usize, nj: usize) -> Vec<f64> {
    let mut u = Vec::new();
    for _ in 0..nc {
        u.push(rng.random_range::<f64, _>(-1.0..=0.3));
        u.push(rng.random_range::<f64, _>(-1.0..=1.0));
        u.push(rng.random_range::<f64, _>(-1.0..=1.0));
    }
    for _ in 0..nj {
        u.push(rng.random_range::<f64, _>(-1.0..=1.0));
    }
    u
}

#[test]
fn multi_contact_agrees_with_pgs() {
    // isotropic diagonal blocks: the per-contact MDP solution is Coulomb's, so both solvers
    // have the same fixed points
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for case in 0..30 {
        let nc = 2 + case % 5;
        let g = random_delassus(&mut rng, nc, 0, 3, true);
        let u = random_u(&mut rng, nc, 0);
        let mu: Vec<f64> = (0..nc).map(|_| rng.random_range::<f64, _>(0.1..=0.8)).collect();
        let o = owned_from(&g, nc, 0, u, mu, vec![], vec![]);
        assert_bisection_agrees_with_pgs(&o, case);
    }
}

#[test]
fn multi_contact_anisotropic_is_a_per_contact_fixed_point() {
    // general blocks (MDP ≠ Coulomb): every contact's impulse must be the exact local MDP
    // solution given the others, checked against brute force
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for case in 0..20 {
        let nc = 2 + case % 4;
        let g = random_delassus(&mut rng, nc, 0, 3, false);
        let u = random_u(&mut rng, nc, 0);
        let mu: Vec<f64> = (0..nc).map(|_| rng.random_range::<f64, _>(0.2..=1.0)).collect();
        let o = owned_from(&g, nc, 0, u, mu.clone(), vec![], vec![]);
        let (l, st) = run(&o, BisectionParams { tolerance_impulse: 1e-11, tolerance_velocity: 1e-11, max_iterations: 5000, ..Default::default() }, &vec![0.0; o.dim()]);
        assert!(st.converged, "case {case}: {st:?}");
        let p = o.view();
        for c in 0..nc {
            let i = 3 * c;
            let gx: [[f64; 3]; 3] = std::array::from_fn(|a| std::array::from_fn(|b| p.g(i + MAP[a], i + MAP[b])));
            let li = [l[i + 1], l[i + 2], l[i]];
            let cv: [f64; 3] = std::array::from_fn(|a| p.row_velocity(i + MAP[a], &l) - (0..3).map(|b| gx[a][b] * li[b]).sum::<f64>());
            let v: [f64; 3] = std::array::from_fn(|a| p.row_velocity(i + MAP[a], &l));
            let blk = block_from(gx);
            let s = blk.solve(cv);
            let lv0 = [-s[0], -s[1], -s[2]];
            if cv[2] >= 0.0 {
                assert!(norm3(li) < 1e-9, "open contact with impulse {li:?}");
                assert!(v[2] >= -1e-9);
            } else if mu[c] * lv0[2] >= norm2(lv0[0], lv0[1]) {
                assert!(norm3(v) < 1e-9, "sticking contact slips: {v:?}");
            } else {
                let (lb, eb) = brute_force_slip(&gx, cv, mu[c], lv0);
                let e = energy(&gx, lv0, li);
                assert!(e <= eb + 1e-9 * (1.0 + eb) && norm3([li[0] - lb[0], li[1] - lb[1], li[2] - lb[2]]) < 1e-6, "{li:?} vs {lb:?}");
                assert!(v[2].abs() < 1e-9);
                // dissipative: friction does negative work on the slip
                assert!(li[0] * v[0] + li[1] * v[1] <= 0.0);
            }
        }
    }
}

#[test]
fn multi_contact_with_an_ill_conditioned_block() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for case in 0..10 {
        // contact 0's Jacobian rows nearly dependent → its block has condition ~1e8
        let nc = 3;
        let n = 3 * nc + 3;
        let a = DMatrix::from_fn(n, n, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
        let mass = &a * a.transpose() + DMatrix::identity(n, n) * (0.5 * n as f64);
        let minv = mass.cholesky().unwrap().inverse();
        let mut j = DMatrix::from_fn(3 * nc, n, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
        let r0 = j.row(0).into_owned();
        let r1 = j.row(1).into_owned();
        let noise = DMatrix::from_fn(1, n, |_, _| rng.random_range::<f64, _>(-1.0..=1.0));
        j.row_mut(2).copy_from(&(r0 * 0.7 - r1 * 0.4 + noise * 1e-4));
        let g = &j * &minv * j.transpose();
        let g = (&g + g.transpose()) * 0.5;
        let b0 = g.view((0, 0), (3, 3)).into_owned();
        let ev = b0.symmetric_eigenvalues();
        let cond = ev.max() / ev.min();
        assert!(cond > 1e7 && cond < 1e10, "cond {cond}");
        let u = random_u(&mut rng, nc, 0);
        let mu: Vec<f64> = (0..nc).map(|_| rng.random_range::<f64, _>(0.3..=1.0)).collect();
        let o = owned_from(&g, nc, 0, u, mu, vec![], vec![]);
        let (l, st) = run(&o, BisectionParams { max_iterations: 2000, ..Default::default() }, &vec![0.0; o.dim()]);
        assert!(l.iter().all(|x| x.is_finite() && x.abs() < 1e3), "case {case}: {l:?}");
        assert!(st.converged, "case {case}: {st:?}");
        let v = o.velocity(&l);
        for c in 0..nc {
            assert!(v[3 * c] > -1e-5, "case {case}: penetration {}", v[3 * c]);
        }
    }
}

// ---------- joint rows ----------

#[test]
fn joint_rows_closed_form() {
    // one bilateral row: λ = −u/G; a limit row with u ≥ 0: λ = 0; a friction row saturates
    let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![f64::NEG_INFINITY], hi: vec![f64::INFINITY], g: vec![2.0], u: vec![-3.0] };
    let (l, st) = run(&o, BisectionParams::default(), &[0.0]);
    assert!(st.converged && (l[0] - 1.5).abs() < 1e-15);
    let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![0.0], hi: vec![f64::INFINITY], g: vec![2.0], u: vec![0.5] };
    let (l, _) = run(&o, BisectionParams::default(), &[4.0]);
    assert_eq!(l[0], 0.0);
    let o = Owned { nc: 0, nj: 1, mu: vec![], lo: vec![-0.2], hi: vec![0.2], g: vec![2.0], u: vec![-3.0] };
    let (l, _) = run(&o, BisectionParams::default(), &[0.0]);
    assert_eq!(l[0], 0.2);
    // two coupled bilateral rows (a mimic pair): the linear system G λ = −u
    let o = Owned { nc: 0, nj: 2, mu: vec![], lo: vec![f64::NEG_INFINITY; 2], hi: vec![f64::INFINITY; 2], g: vec![2.0, 0.9, 0.9, 1.0], u: vec![1.0, -2.0] };
    let (l, st) = run(&o, exact_params(), &[0.0; 2]);
    assert!(st.converged);
    let det = 2.0 * 1.0 - 0.81;
    let expect = [-(1.0 * 1.0 - 0.9 * -2.0) / det, -(2.0 * -2.0 - 0.9 * 1.0) / det];
    assert!((l[0] - expect[0]).abs() < 1e-11 && (l[1] - expect[1]).abs() < 1e-11, "{l:?} vs {expect:?}");
}

#[test]
fn contacts_and_joint_rows_agree_with_pgs() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..20 {
        let nc = 1 + case % 4;
        let nj = 4;
        let g = random_delassus(&mut rng, nc, nj, 3, true);
        let u = random_u(&mut rng, nc, nj);
        let mu: Vec<f64> = (0..nc).map(|_| rng.random_range::<f64, _>(0.1..=0.8)).collect();
        // bilateral (mimic), lower limit, upper limit, joint friction
        let lo = vec![f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY, -0.1];
        let hi = vec![f64::INFINITY, f64::INFINITY, 0.0, 0.1];
        let o = owned_from(&g, nc, nj, u, mu, lo, hi);
        assert_bisection_agrees_with_pgs(&o, case);
    }
}

// ---------- convergence, warm start, schedule, config ----------

#[test]
fn converges_with_small_residual_and_warm_start_helps() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let nc = 4;
    let g = random_delassus(&mut rng, nc, 2, 4, false);
    let u = random_u(&mut rng, nc, 2);
    let o = owned_from(&g, nc, 2, u, vec![0.6; nc], vec![0.0, -0.05], vec![f64::INFINITY, 0.05]);
    let prm = BisectionParams::default();
    let (l, st) = run(&o, prm.clone(), &vec![0.0; o.dim()]);
    assert!(st.converged && st.residual <= prm.tolerance_impulse, "{st:?}");
    assert!(st.iterations >= 2);
    // the physical velocity residual is also within tolerance: normal velocities
    let v = o.velocity(&l);
    for c in 0..nc {
        assert!(v[3 * c] > -1e-5);
    }
    // warm-started from the solution: one sweep
    let (l2, st2) = run(&o, prm.clone(), &l);
    assert!(st2.converged && st2.iterations == 1, "{st2:?}");
    assert!(rel_diff(&l2, &l) < 1e-6);
    // a warm start outside the cones / bounds or non-finite is projected, not trusted
    let mut bad = vec![5.0; o.dim()];
    bad[0] = f64::NAN;
    bad[1] = -1.0;
    let (l3, st3) = run(&o, prm.clone(), &bad);
    assert!(st3.converged && l3.iter().all(|x| x.is_finite()));
    // capacity smaller than the problem: still solved, same answer to the tolerance (the
    // relaxed iterate is returned instead of the local exact solutions)
    let mut small = BisectionSolver::new(prm, 1, 0);
    let mut l4 = vec![0.0; o.dim()];
    let st4 = small.solve(&o.view(), &mut l4);
    assert!(st4.converged);
    assert!(l4.iter().zip(&l).all(|(a, b)| (a - b).abs() < 1e-5), "{l4:?} vs {l:?}");
    // empty problem
    let e = Owned { nc: 0, nj: 0, mu: vec![], lo: vec![], hi: vec![], g: vec![], u: vec![] };
    let (_, st5) = run(&e, BisectionParams::default(), &[]);
    assert!(st5.converged && st5.iterations == 0);
}

#[test]
fn relaxation_schedule() {
    let p = BisectionParams::default();
    let mut a = p.relaxation;
    for s in 1..=300 {
        a = p.next_relaxation(a);
        let expect = 0.7 + 0.3 * 0.99f64.powi(s);
        assert!((a - expect).abs() < 1e-12, "sweep {s}: {a} vs {expect}");
    }
}

#[test]
fn reports_unconverged_at_the_iteration_limit() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let nc = 5;
    let g = random_delassus(&mut rng, nc, 0, 1, false);
    let u = random_u(&mut rng, nc, 0);
    let o = owned_from(&g, nc, 0, u, vec![0.8; nc], vec![], vec![]);
    let (l, st) = run(&o, BisectionParams { max_iterations: 1, tolerance_impulse: 0.0, tolerance_velocity: 0.0, ..Default::default() }, &vec![0.0; o.dim()]);
    assert!(!st.converged && st.iterations == 1 && st.residual > 0.0);
    assert!(l.iter().all(|x| x.is_finite()));
}

#[test]
fn yaml_config() {
    use crate::contact::SolverConfig;
    let c: SolverConfig = serde_yaml::from_str("kind: bisection\nmax_iterations: 50\nrelaxation_min: 0.5\n").unwrap();
    match &c {
        SolverConfig::Bisection(p) => {
            assert_eq!(p.max_iterations, 50);
            assert_eq!(p.relaxation_min, 0.5);
            assert_eq!(p.relaxation_decay, 0.99);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.kind(), "bisection");
    assert!(serde_yaml::from_str::<SolverConfig>("kind: bisection\nbogus: 1\n").is_err());
    assert_eq!(SolverConfig::from_kind("bisection"), Some(SolverConfig::Bisection(BisectionParams::default())));
    assert!(SolverConfig::KINDS.contains(&"bisection"));
}

/// Reference case (`docs/bisection.md`): a box (m = 2 kg, edge 0.3 m) on the ground at its 4 corners, sliding at
/// v_x = 0.3 m/s, μ = 0.8, dt = 1 ms. Returns (λ, Δv of the body (linear, angular)).
fn sliding_box(prm: BisectionParams) -> (Vec<f64>, [f64; 6], SolveStats) {
    let (m, h, mu, dt, g) = (2.0, 0.15, 0.8, 1e-3, 9.81);
    let inertia = m * (0.3f64.powi(2) + 0.3f64.powi(2)) / 12.0;
    let minv = [1.0 / m, 1.0 / m, 1.0 / m, 1.0 / inertia, 1.0 / inertia, 1.0 / inertia];
    let vfree = [0.3, 0.0, -g * dt, 0.0, 0.0, 0.0];
    let corners = [[h, h, -h], [h, -h, -h], [-h, h, -h], [-h, -h, -h]];
    // rows [n, t1, t2] = [z, x, y]; J row for direction d at r: [d, r × d]
    let mut jac = Vec::new();
    for r in &corners {
        for d in [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
            let rxd = [r[1] * d[2] - r[2] * d[1], r[2] * d[0] - r[0] * d[2], r[0] * d[1] - r[1] * d[0]];
            jac.push([d[0], d[1], d[2], rxd[0], rxd[1], rxd[2]]);
        }
    }
    let n = jac.len();
    let mut gm = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            gm[i * n + k] = (0..6).map(|a| jac[i][a] * minv[a] * jac[k][a]).sum();
        }
    }
    let u: Vec<f64> = jac.iter().map(|row| (0..6).map(|a| row[a] * vfree[a]).sum()).collect();
    let o = Owned { nc: 4, nj: 0, mu: vec![mu; 4], lo: vec![], hi: vec![], g: gm, u };
    let (l, st) = run(&o, prm, &vec![0.0; n]);
    let dv: [f64; 6] = std::array::from_fn(|a| minv[a] * (0..n).map(|i| jac[i][a] * l[i]).sum::<f64>());
    (l, dv, st)
}

#[test]
fn sliding_box_on_four_corners_matches_prototype() {
    let (l, dv, st) = sliding_box(BisectionParams { tolerance_impulse: 1e-12, tolerance_velocity: 1e-12, max_iterations: 1000, ..Default::default() });
    assert!(st.converged, "{st:?}");
    let sum_n: f64 = (0..4).map(|c| l[3 * c]).sum();
    assert!((sum_n - 2.0 * 9.81e-3).abs() < 1e-10, "Σλ_n = {sum_n}");
    // MDP friction per corner is not anti-parallel to its slip: |Δv_x| below μ g dt, within 10 %
    let mu_g_dt = 0.8 * 9.81e-3;
    assert!(-dv[0] <= mu_g_dt && -dv[0] > 0.9 * mu_g_dt, "Δv_x = {}", dv[0]);
    assert!((dv[0] + 7.49e-3).abs() < 1e-5, "Δv_x = {} vs prototype −7.49e-3", dv[0]);
    // front corners (+x, the direction of motion) carry more load (tipping torque)
    assert!(l[0] + l[3] > l[6] + l[9], "{l:?}");
    // the reference prototype: a small spurious yaw rate of about 7e-4 rad/s with a fixed order
    assert!(dv[5].abs() < 1e-3, "ω_z = {}", dv[5]);
}
