//! The L-stable method on the paper's small systems (Drumwright, §4–6), through its dense
//! reference path `contact_sim::contact::lstable::dense::dense_step`: integrator checks, the
//! bilateral linear-solve case, unilateral semantics (Mode C against the paper-literal Mode P)
//! and friction. Expected values are the analytic ones or those of an independent prototype of the
//! method, as written next to each test. The engine-level tests are in `tests/lstable.rs`.

use contact_sim::contact::lstable::core::RowKind;
use contact_sim::contact::lstable::dense::{dense_step, DenseRow};
use contact_sim::contact::{LstableBackend, LstableMode, LstableParams};
use nalgebra::{DMatrix, DVector};

const G: f64 = 9.81;

fn mode_c() -> LstableParams {
    LstableParams { tolerance: 1e-12, max_iterations: 2000, ..LstableParams::default() }
}

fn mode_p() -> LstableParams {
    LstableParams { mode: LstableMode::P, backend: LstableBackend::Clarabel, tolerance: 1e-10, ..LstableParams::default() }
}

fn row(kind: RowKind, jacobian: &[f64], phi0: f64, stiffness: f64, damping: f64) -> DenseRow {
    DenseRow { kind, jacobian: jacobian.to_vec(), phi0, stiffness, damping }
}

/// One step of a unit particle on a bilateral spring φ = x: returns (x₁, v₁, λ₁).
fn particle_step(x0: f64, v0: f64, k: f64, b: f64, h: f64) -> (f64, f64, f64) {
    let mass = DMatrix::from_element(1, 1, 1.0);
    let r = [row(RowKind::Bilateral, &[1.0], x0, k, b)];
    let s = dense_step(&mass, &r, &DVector::from_element(1, v0), &DVector::zeros(1), h, &mode_c(), &[]).unwrap();
    let v1 = s.velocity[0];
    (x0 + h * v1, v1, s.force[0])
}

/// Spectral radius of the 2×2 map (x, v) ↦ (x₁, v₁), built column by column from two steps.
fn spectral_radius(k: f64, b: f64, h: f64) -> f64 {
    let (a, c, _) = particle_step(1.0, 0.0, k, b, h);
    let (bb, d, _) = particle_step(0.0, 1.0, k, b, h);
    let (tr, det) = (a + d, a * d - bb * c);
    let disc = tr * tr / 4.0 - det;
    if disc < 0.0 {
        det.sqrt()
    } else {
        (tr / 2.0).abs() + disc.sqrt()
    }
}

/// A3: the step is implicit Euler on the constraint oscillator: amplification 1/√(1 + h²K/m).
#[test]
fn spring_step_has_the_implicit_euler_amplification() {
    for (h, k, want) in [(1e-5, 1e6, 0.9999500), (1e-2, 1e6, 0.0995037), (0.1, 1e15, 3.1623e-7)] {
        let rho = spectral_radius(k, 0.0, h);
        // at K = 1e15, h = 0.1 the map's entries cancel 13 digits: 1e-3 relative
        let tol = if k > 1e12 { 1e-3 } else { 1e-5 };
        assert!((rho - want).abs() <= tol * want, "h {h}, K {k}: ρ = {rho}, want {want}");
    }
}

/// A2 against the method: the same spring with a semi-implicit (symplectic) Euler penalty force
/// is unstable at K = 10⁷, h = 10⁻³ (ρ = 7.864), where the method's step is not.
#[test]
fn penalty_spring_diverges_where_the_l_stable_step_does_not() {
    let (h, k, b): (f64, f64, f64) = (1e-3, 1e7, 1.0);
    // semi-implicit Euler (paper eqs. 11–12, damping at the new velocity):
    // v₁ = (v₀ − h k x₀) / (1 + h b), x₁ = x₀ + h v₁
    let d = 1.0 + h * b;
    let map = [[1.0 - h * h * k / d, h / d], [-h * k / d, 1.0 / d]];
    let (tr, det) = (map[0][0] + map[1][1], map[0][0] * map[1][1] - map[0][1] * map[1][0]);
    let disc = tr * tr / 4.0 - det;
    let rho_penalty = if disc < 0.0 { det.sqrt() } else { (tr / 2.0).abs() + disc.sqrt() };
    assert!((rho_penalty - 7.8640).abs() < 1e-3, "{rho_penalty}");
    assert!(spectral_radius(k, b, h) < 1.0);
}

/// B1: one step of the particle equals implicit Euler exactly, and 50 steps follow its map.
#[test]
fn bilateral_particle_is_exactly_implicit_euler() {
    let (x1, v1, l1) = particle_step(1e-3, 0.0, 1e6, 0.0, 1e-2);
    assert!((v1 + 10.0 / 101.0).abs() < 1e-15, "{v1}");
    assert!((x1 - 1e-3 / 101.0).abs() < 1e-18, "{x1}");
    assert!((l1 + 9.90099).abs() < 1e-5, "{l1}");
    for b in [0.0, 5.0] {
        let (k, h) = (1e6, 1e-2);
        let (mut x, mut v) = (1e-3, 0.0);
        let (mut xr, mut vr) = (1e-3f64, 0.0f64);
        for _ in 0..50 {
            (x, v, _) = particle_step(x, v, k, b, h);
            vr = (vr - h * k * xr) / (1.0 + h * b + h * h * k);
            xr += h * vr;
            // round-off accumulates over the 50 steps: 1e-11 relative
            assert!((x - xr).abs() <= 1e-11 * xr.abs() && (v - vr).abs() <= 1e-11 * vr.abs(), "B = {b}: ({x}, {v}) vs ({xr}, {vr})");
        }
    }
}

/// B2: L-stability: K = 10¹⁵ at h = 0.1 removes the displacement in one step without overshoot.
#[test]
fn extreme_stiffness_at_a_large_step_is_damped_in_one_step() {
    let (x1, v1, _) = particle_step(1e-3, 0.0, 1e15, 0.0, 0.1);
    // x₁ = x₀ + h v₁ cancels 13 digits: it is exact to round-off of x₀ (1e-19)
    assert!((x1 - 1e-3 / (1.0 + 1e13)).abs() < 1e-19, "{x1}");
    assert!((v1 + 0.01).abs() < 1e-12, "{v1}");
}

/// A planar body in absolute coordinates (x, y, θ), pinned at `anchor` (world) by the body point
/// `u` (body frame): φ = p + R(θ) u − anchor (2 rows).
fn pin_rows(q: &[f64], body: usize, nv: usize, u: [f64; 2], anchor: [f64; 2], other: Option<(usize, [f64; 2])>, k: f64, b: f64) -> [DenseRow; 2] {
    let point = |bi: usize, uu: [f64; 2]| {
        let (x, y, t) = (q[3 * bi], q[3 * bi + 1], q[3 * bi + 2]);
        let (s, c) = t.sin_cos();
        ([x + c * uu[0] - s * uu[1], y + s * uu[0] + c * uu[1]], [-s * uu[0] - c * uu[1], c * uu[0] - s * uu[1]])
    };
    let (pa, da) = point(body, u);
    let mut rows = [row(RowKind::Bilateral, &vec![0.0; nv], 0.0, k, b), row(RowKind::Bilateral, &vec![0.0; nv], 0.0, k, b)];
    let mut target = anchor;
    for a in 0..2 {
        rows[a].jacobian[3 * body + a] = 1.0;
        rows[a].jacobian[3 * body + 2] = da[a];
    }
    if let Some((ob, ou)) = other {
        let (pb, db) = point(ob, ou);
        target = pb;
        for a in 0..2 {
            rows[a].jacobian[3 * ob + a] -= 1.0;
            rows[a].jacobian[3 * ob + 2] -= db[a];
        }
    }
    for a in 0..2 {
        rows[a].phi0 = pa[a] - target[a];
    }
    rows
}

/// A chain of `links` planar bodies (mass m, inertia j), link 0 pinned at the world origin by its
/// point `u0`; link i+1's point `u0` pinned to link i's point `u1`. Returns the largest joint
/// deviation |φ(q_k)| (m), the largest |E − E₀| (J) and the largest generalized speed over `t_end`.
fn simulate_chain(links: usize, m: f64, j: f64, u0: [f64; 2], u1: [f64; 2], q0: Vec<f64>, k: f64, b: f64, h: f64, t_end: f64, duplicate: bool) -> (f64, f64, f64, Vec<f64>) {
    let nv = 3 * links;
    let mass = DMatrix::from_diagonal(&DVector::from_iterator(nv, (0..links).flat_map(|_| [m, m, j])));
    let force = DVector::from_iterator(nv, (0..links).flat_map(|_| [0.0, -m * G, 0.0]));
    let (mut q, mut v) = (q0, DVector::zeros(nv));
    let energy = |q: &[f64], v: &DVector<f64>| 0.5 * (v.transpose() * &mass * v)[0] + (0..links).map(|i| m * G * q[3 * i + 1]).sum::<f64>();
    let e0 = energy(&q, &v);
    let (mut dev, mut de, mut vmax) = (0.0f64, 0.0f64, 0.0f64);
    let mut warm = Vec::new();
    let steps = (t_end / h).round() as usize;
    let mut forces = Vec::new();
    for _ in 0..steps {
        let mut rows = Vec::new();
        for i in 0..links {
            let pins = if i == 0 { pin_rows(&q, 0, nv, u0, [0.0, 0.0], None, k, b) } else { pin_rows(&q, i, nv, u0, [0.0, 0.0], Some((i - 1, u1)), k, b) };
            rows.extend(pins.iter().cloned());
            if duplicate {
                rows.extend(pins.iter().cloned());
            }
        }
        let s = dense_step(&mass, &rows, &v, &force, h, &mode_c(), &warm).unwrap();
        assert!(s.stats.converged);
        v = s.velocity;
        for k in 0..nv {
            q[k] += h * v[k];
        }
        warm = s.force.clone();
        forces = s.force;
        for i in 0..links {
            let pins = if i == 0 { pin_rows(&q, 0, nv, u0, [0.0, 0.0], None, k, b) } else { pin_rows(&q, i, nv, u0, [0.0, 0.0], Some((i - 1, u1)), k, b) };
            dev = dev.max(pins[0].phi0.hypot(pins[1].phi0));
        }
        de = de.max((energy(&q, &v) - e0).abs());
        vmax = vmax.max(v.amax());
        assert!(q.iter().all(|x| x.is_finite()), "non-finite state");
    }
    (dev, de, vmax, forces)
}

/// B4 (paper E4): the pendulum in absolute coordinates, K = 10¹⁵: the joint deviation is
/// ≈ g h²/2 (second order per step, not accumulated) and the energy error first order in h.
/// Prototype values: deviation 0.0465, 4.90e-4, 4.905e-6, 4.905e-8 and |ΔE| 0.0964, 0.00954,
/// 0.000953 for h = 0.1 … 1e-4.
#[test]
fn pendulum_joint_deviation_is_second_order_in_the_step() {
    let cases = [(0.1, 0.0465, None), (1e-2, 4.90e-4, Some(0.0964)), (1e-3, 4.905e-6, Some(0.00954)), (1e-4, 4.905e-8, Some(0.000953))];
    let mut prev: Option<f64> = None;
    for (h, want_dev, want_e) in cases {
        let (dev, de, _, _) = simulate_chain(1, 1.0, 1.0, [1.0, 0.0], [0.0, 0.0], vec![-1.0, 0.0, 0.0], 1e15, 1.0, h, 1.0, false);
        println!("h {h:e}: max joint deviation {dev:.4e} m (prototype {want_dev:e}), max |ΔE| {de:.4e} J");
        assert!((dev - want_dev).abs() <= 0.1 * want_dev, "h {h}: deviation {dev}, want {want_dev}");
        if let Some(e) = want_e {
            assert!((de - e).abs() <= 0.1 * e, "h {h}: |ΔE| {de}, want {e}");
        }
        if let Some(p) = prev {
            let ratio = p / dev;
            assert!((80.0..=120.0).contains(&ratio), "deviation ratio between decades {ratio}");
        }
        prev = Some(dev);
    }
}

/// B3: duplicating every joint row changes nothing but splits the force equally: the
/// trajectory equals one copy with (2K, 2B).
#[test]
fn redundant_rows_split_the_force_and_leave_the_motion_unchanged() {
    let (k, b, h) = (1e8, 2.0, 1e-3);
    let q0 = vec![-1.0, 0.0, 0.0];
    let (dev_dup, de_dup, _, f_dup) = simulate_chain(1, 1.0, 1.0, [1.0, 0.0], [0.0, 0.0], q0.clone(), k, b, h, 0.5, true);
    let (dev_one, de_one, _, f_one) = simulate_chain(1, 1.0, 1.0, [1.0, 0.0], [0.0, 0.0], q0, 2.0 * k, 2.0 * b, h, 0.5, false);
    assert!((dev_dup - dev_one).abs() <= 1e-9 * dev_one, "{dev_dup} vs {dev_one}");
    assert!((de_dup - de_one).abs() <= 1e-6 * de_one.max(1e-9), "{de_dup} vs {de_one}");
    // rows (x, y, x', y'): each copy carries half of the single row's force
    for a in 0..2 {
        assert!((f_dup[a] - f_dup[a + 2]).abs() <= 1e-9 * f_one[a].abs(), "{f_dup:?}");
        assert!((f_dup[a] + f_dup[a + 2] - f_one[a]).abs() <= 1e-6 * f_one[a].abs(), "{f_dup:?} vs {f_one:?}");
    }
}

/// B5: a 5-link chain at h = 0.05 behaves the same for K from 10⁴ to 10¹⁵ (the prototype:
/// deviation 0.23–0.25 m, max speed 18–19), while a symplectic-Euler penalty chain diverges at
/// K = 10⁶.
#[test]
fn five_link_chain_is_stable_for_any_stiffness() {
    let q0: Vec<f64> = (0..5).flat_map(|i| [0.5 + i as f64, 0.0, 0.0]).collect();
    for k in [1e4, 1e6, 1e9, 1e12, 1e15] {
        let (dev, _, vmax, _) = simulate_chain(5, 1.0, 1.0 / 12.0, [-0.5, 0.0], [0.5, 0.0], q0.clone(), k, 1.0, 0.05, 30.0, false);
        println!("K {k:e}: max joint deviation {dev:.3} m, max speed {vmax:.2}");
        assert!(dev < 0.3, "K {k}: deviation {dev}");
    }
    // the same chain with explicit penalty forces λ = −Kφ − Bφ̇ and symplectic Euler
    let (k, b, h) = (1e6, 1.0, 0.05);
    let nv = 15;
    let mut q = q0;
    let mut v = vec![0.0; nv];
    let inv_mass: Vec<f64> = (0..5).flat_map(|_| [1.0, 1.0, 12.0]).collect();
    let mut diverged = false;
    for _ in 0..600 {
        let mut f: Vec<f64> = (0..5).flat_map(|_| [0.0, -G, 0.0]).collect();
        for i in 0..5 {
            let pins = if i == 0 { pin_rows(&q, 0, nv, [-0.5, 0.0], [0.0, 0.0], None, k, b) } else { pin_rows(&q, i, nv, [-0.5, 0.0], [0.0, 0.0], Some((i - 1, [0.5, 0.0])), k, b) };
            for r in &pins {
                let rate: f64 = r.jacobian.iter().zip(&v).map(|(a, b)| a * b).sum();
                let lambda = -k * r.phi0 - b * rate;
                for (fk, jk) in f.iter_mut().zip(&r.jacobian) {
                    *fk += jk * lambda;
                }
            }
        }
        for i in 0..nv {
            v[i] += h * inv_mass[i] * f[i];
            q[i] += h * v[i];
        }
        if !q.iter().all(|x| x.is_finite() && x.abs() < 1e6) {
            diverged = true;
            break;
        }
    }
    assert!(diverged, "the penalty chain should blow up at K = 1e6, h = 0.05");
}

/// C1: one unilateral row: both modes give λ = max(0, r / (1 + D W)).
#[test]
fn single_unilateral_row_is_the_clipped_spring_force_in_both_modes() {
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for _ in 0..200 {
        // particle of mass 1/W on a unilateral spring at φ₀, velocity v₀
        let (w, k, b, h) = (0.1 + 10.0 * rnd(), 10f64.powf(2.0 + 8.0 * rnd()), 10.0 * rnd(), 10f64.powf(-4.0 + 2.0 * rnd()));
        let (phi0, v0) = (-1e-3 + 2e-3 * rnd(), -1.0 + 2.0 * rnd());
        let mass = DMatrix::from_element(1, 1, 1.0 / w);
        let rows = [row(RowKind::Unilateral, &[1.0], phi0, k, b)];
        // r = −K φ₀ − (hK + B) φ̇₀ (f = 0), D = h (hK + B)
        let r = -k * phi0 - (h * k + b) * v0;
        let unclipped = r / (1.0 + h * (h * k + b) * w);
        let want = unclipped.max(0.0);
        let c = dense_step(&mass, &rows, &DVector::from_element(1, v0), &DVector::zeros(1), h, &mode_c(), &[]).unwrap();
        assert!((c.force[0] - want).abs() <= 1e-9 * unclipped.abs(), "Mode C: {} vs {want}", c.force[0]);
        // the interior point stops at its gap tolerance: ~1e-3 N on these problems
        let p = dense_step(&mass, &rows, &DVector::from_element(1, v0), &DVector::zeros(1), h, &mode_p(), &[]).unwrap();
        assert!((p.force[0] - want).abs() <= 1e-6 * unclipped.abs() + 5e-3, "Mode P: {} vs {want}", p.force[0]);
    }
}

/// C3: two coupled unilateral rows (W = [[1, 1], [1, 1]], D = I, b = (−1, 0.1)): Mode C obeys
/// the max law, λ = (0.5, 0); the paper's literal QP puts force on the uncompressed row,
/// λ = (0.4, 0.2).
#[test]
fn mode_p_violates_the_max_law_on_coupled_rows_and_mode_c_does_not() {
    // two rows on the first coordinate of a unit mass: W = [[1, 1], [1, 1]]; with h = 1, K = 1,
    // B = 0: ε = R = 1 and b_i = K φ₀,i / (h (hK + B)) = φ₀,i
    let h = 1.0;
    let mass = DMatrix::identity(2, 2);
    let rows = [row(RowKind::Unilateral, &[1.0, 0.0], -1.0, 1.0, 0.0), row(RowKind::Unilateral, &[1.0, 0.0], 0.1, 1.0, 0.0)];
    let v0 = DVector::zeros(2);
    let c = dense_step(&mass, &rows, &v0, &DVector::zeros(2), h, &mode_c(), &[]).unwrap();
    assert!((c.force[0] - 0.5).abs() < 1e-9 && c.force[1].abs() < 1e-9, "Mode C {:?}", c.force);
    let p = dense_step(&mass, &rows, &v0, &DVector::zeros(2), h, &LstableParams { zeta: Some(1.0), ..mode_p() }, &[]).unwrap();
    assert!((p.force[0] - 0.4).abs() < 1e-6 && (p.force[1] - 0.2).abs() < 1e-6, "Mode P {:?}", p.force);
}

/// The four-legged table (small-angle plate, q = (z, α, β), M = diag(10, 1, 2)): leg height
/// z + y α − x β for legs at (x, y) relative to the centre of mass. Returns the leg forces after
/// `t_end` and the largest leg lift-off (m) in the last second.
fn table(com: (f64, f64), params: &LstableParams, t_end: f64) -> ([f64; 4], f64) {
    let legs = [(0.5, 0.3), (0.5, -0.3), (-0.5, -0.3), (-0.5, 0.3)];
    let mass = DMatrix::from_diagonal(&DVector::from_vec(vec![10.0, 1.0, 2.0]));
    let force = DVector::from_vec(vec![-10.0 * G, 0.0, 0.0]);
    let (k, b, h) = (1e9, 1.0, 0.01);
    let mut q = DVector::zeros(3);
    let mut v = DVector::zeros(3);
    let mut warm = Vec::new();
    let mut lift: f64 = 0.0;
    let steps = (t_end / h).round() as usize;
    let mut forces = [0.0; 4];
    for step in 0..steps {
        let rows: Vec<DenseRow> = legs
            .iter()
            .map(|&(x, y)| {
                let (xr, yr) = (x - com.0, y - com.1);
                let jac = [1.0, yr, -xr];
                row(RowKind::Unilateral, &jac, q[0] + yr * q[1] - xr * q[2], k, b)
            })
            .collect();
        let s = dense_step(&mass, &rows, &v, &force, h, params, &warm).unwrap();
        v = s.velocity;
        q += &v * h;
        warm = s.force.clone();
        forces.copy_from_slice(&s.force);
        if step as f64 * h > t_end - 1.0 {
            for &(x, y) in &legs {
                let (xr, yr) = (x - com.0, y - com.1);
                lift = lift.max(q[0] + yr * q[1] - xr * q[2]);
            }
        }
    }
    (forces, lift)
}

/// C4: the four-legged table settles on the elastic load distribution
/// F_i = m g / 4 (1 + x_i x_c / 0.25 + y_i y_c / 0.09) in Mode C (to 1e-6); the paper-literal
/// Mode P rocks forever for a centre of mass at (0.35, 0) (the prototype: the back legs lift off
/// by up to 10.9 mm).
#[test]
fn four_legged_table_settles_on_the_elastic_distribution_in_mode_c() {
    let legs = [(0.5, 0.3), (0.5, -0.3), (-0.5, -0.3), (-0.5, 0.3)];
    for com in [(0.0, 0.0), (0.2, 0.1), (0.35, 0.0)] {
        let (f, lift) = table(com, &mode_c(), 3.0);
        for (i, &(x, y)) in legs.iter().enumerate() {
            let want = 10.0 * G / 4.0 * (1.0 + x * com.0 / 0.25 + y * com.1 / 0.09);
            assert!((f[i] - want).abs() <= 1e-6 * want, "com {com:?} leg {i}: {} vs {want}", f[i]);
        }
        assert!(lift <= 1e-6, "Mode C table lifted a leg by {lift} m");
    }
    let (f, lift) = table((0.35, 0.0), &mode_p(), 3.0);
    println!("Mode P table, com (0.35, 0): leg forces {f:?}, largest lift-off in the last second {:.2} mm", lift * 1e3);
    assert!(lift > 1e-3, "Mode P was expected to rock (lift-off {lift} m)");
}

/// D1/D2: a particle sliding at 1 m/s on a plane (planar, rows n and r): Mode C gives the weight
/// as normal force and μ m g of friction, the slip drops by μ g h; the paper-literal Mode P with
/// ζ = 1/h inflates the normal force and launches the particle. μ = 0: no friction at all.
#[test]
fn sliding_particle_gets_coulomb_friction_in_mode_c_and_is_launched_by_mode_p() {
    let (kn, h, mu) = (1e10, 0.01, 0.25);
    let mass = DMatrix::identity(2, 2); // (tangential, normal)
    let force = DVector::from_vec(vec![0.0, -G]);
    let v0 = DVector::from_vec(vec![1.0, 0.0]);
    let rows = |mu: f64| [row(RowKind::Normal, &[0.0, 1.0], -G / kn, kn, 1.0), row(RowKind::Friction { normal_row: 0, mu }, &[1.0, 0.0], 0.0, 0.0, 1e6 / h)];
    let c = dense_step(&mass, &rows(mu), &v0, &force, h, &mode_c(), &[]).unwrap();
    assert!((c.force[0] - G).abs() < 1e-6 * G, "λ_n {}", c.force[0]);
    assert!((c.force[1] + 2.4525).abs() < 1e-6, "λ_r {}", c.force[1]);
    assert!((c.velocity[0] - 0.975475).abs() < 1e-9 && c.velocity[1].abs() < 1e-9, "{:?}", c.velocity);
    let p = dense_step(&mass, &rows(mu), &v0, &force, h, &mode_p(), &[]).unwrap();
    println!("Mode P (ζ = 1/h): λ_n {:.1} N, λ_r {:.1} N, normal velocity after the step {:.2} m/s", p.force[0], p.force[1], p.velocity[1]);
    assert!(p.force[0] > 100.0 && p.velocity[1] > 1.0, "Mode P was expected to inflate λ_n: {:?}", p.force);
    let free = dense_step(&mass, &rows(0.0), &v0, &force, h, &mode_c(), &[]).unwrap();
    assert_eq!(free.force[1], 0.0);
    assert!((free.velocity[0] - 1.0).abs() < 1e-15);
}

/// D5: the Gauss–Seidel + polish back-end and the interior-point back-end agree on random
/// contact problems (Mode C).
#[test]
fn gauss_seidel_and_interior_point_back_ends_agree() {
    let mut seed = 99u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for trial in 0..40 {
        // a free rigid body (6 coordinates) touching a plane at 1–4 random points
        let contacts = 1 + trial % 4;
        let mass = DMatrix::from_diagonal(&DVector::from_vec(vec![2.0, 2.0, 2.0, 0.02, 0.03, 0.025]));
        let force = DVector::from_vec(vec![(rnd() - 0.5) * 20.0, (rnd() - 0.5) * 20.0, -2.0 * G, 0.0, 0.0, 0.0]);
        let v0 = DVector::from_fn(6, |i, _| if i == 2 { -0.5 * rnd() } else { (rnd() - 0.5) * 0.4 });
        let mu = 0.2 + 0.8 * rnd();
        let mut rows = Vec::new();
        for _ in 0..contacts {
            let (x, y) = ((rnd() - 0.5) * 0.2, (rnd() - 0.5) * 0.2);
            let z = -0.1;
            // rows of the point velocity v + ω × r along z, x, y
            let n = rows.len();
            rows.push(row(RowKind::Normal, &[0.0, 0.0, 1.0, y, -x, 0.0], -1e-4 * rnd(), 10f64.powf(4.0 + 6.0 * rnd()), rnd()));
            rows.push(row(RowKind::Friction { normal_row: n, mu }, &[1.0, 0.0, 0.0, 0.0, z, -y], 0.0, 0.0, 1e4));
            rows.push(row(RowKind::Friction { normal_row: n, mu }, &[0.0, 1.0, 0.0, -z, 0.0, x], 0.0, 0.0, 1e4));
        }
        let h = 0.01;
        let gs = dense_step(&mass, &rows, &v0, &force, h, &mode_c(), &[]).unwrap();
        let ip = dense_step(&mass, &rows, &v0, &force, h, &LstableParams { backend: LstableBackend::Clarabel, tolerance: 1e-11, max_iterations: 500, ..mode_c() }, &[]).unwrap();
        assert!(gs.stats.converged, "trial {trial}: {:?}", gs.stats);
        let scale = gs.force.iter().fold(1e-9f64, |s, f| s.max(f.abs()));
        for (a, b) in gs.force.iter().zip(&ip.force) {
            assert!((a - b).abs() <= 1e-6 * scale, "trial {trial}: {:?} vs {:?}", gs.force, ip.force);
        }
    }
}

/// The paper's elastic-foundation cube (E6): a 1 m, 8 kg cube on an n × n Winkler foundation
/// (frictionless unilateral rows at the bottom face's sample points, K = E A / L with L = 1 m,
/// B = 1 N·s/m), an extra downward load `load` at the body point ½ (cos 10t, sin 10t, 1).
/// Generalized coordinates: centre position p and rotation R; velocities (v, ω) in world axes
/// (the cube's inertia is isotropic, so no gyroscopic term).
struct Foundation {
    n: usize,
    stiffness: f64,
    load: f64,
}

const CUBE_MASS: f64 = 8.0;
const CUBE_INERTIA: f64 = 8.0 / 6.0;

impl Foundation {
    /// Body-frame sample points of the bottom face.
    fn points(&self) -> Vec<nalgebra::Vector3<f64>> {
        let n = self.n;
        (0..n * n).map(|k| nalgebra::Vector3::new(((k % n) as f64 + 0.5) / n as f64 - 0.5, ((k / n) as f64 + 0.5) / n as f64 - 0.5, -0.5)).collect()
    }
    /// Gravity and the rotating load at time t: generalized force (force; torque about the centre).
    fn applied(&self, t: f64, rot: &nalgebra::UnitQuaternion<f64>) -> DVector<f64> {
        let r = rot * nalgebra::Vector3::new(0.5 * (10.0 * t).cos(), 0.5 * (10.0 * t).sin(), 0.5);
        let f = nalgebra::Vector3::new(0.0, 0.0, -self.load);
        let tau = r.cross(&f);
        DVector::from_vec(vec![0.0, 0.0, -CUBE_MASS * G - self.load, tau.x, tau.y, tau.z])
    }
    fn mass() -> DMatrix<f64> {
        DMatrix::from_diagonal(&DVector::from_vec(vec![CUBE_MASS, CUBE_MASS, CUBE_MASS, CUBE_INERTIA, CUBE_INERTIA, CUBE_INERTIA]))
    }
    /// (φ_i, G_i) of every element: height of the sample point, Jacobian of its vertical speed.
    fn rows(&self, p: &nalgebra::Vector3<f64>, rot: &nalgebra::UnitQuaternion<f64>) -> Vec<(f64, [f64; 6])> {
        self.points()
            .iter()
            .map(|b| {
                let r = rot * b;
                (p.z + r.z, [0.0, 0.0, 1.0, r.y, -r.x, 0.0])
            })
            .collect()
    }
    /// The L-stable method with step h for 1 s: final (p, q) as 7 numbers.
    fn lstable(&self, h: f64) -> ([f64; 7], Vec<f64>) {
        let (mut p, mut rot) = (nalgebra::Vector3::new(0.0, 0.0, 0.5), nalgebra::UnitQuaternion::identity());
        let mut v = DVector::zeros(6);
        let area = 1.0 / (self.n * self.n) as f64;
        let mut warm = Vec::new();
        let steps = (1.0 / h).round() as usize;
        for s in 0..steps {
            let rows: Vec<DenseRow> = self.rows(&p, &rot).iter().map(|(phi, g)| row(RowKind::Unilateral, g, *phi, self.stiffness * area, 1.0)).collect();
            let st = dense_step(&Self::mass(), &rows, &v, &self.applied(s as f64 * h, &rot), h, &mode_c(), &warm).unwrap();
            assert!(st.stats.converged, "step {s}: {:?}", st.stats);
            v = st.velocity;
            warm = st.force;
            p += nalgebra::Vector3::new(v[0], v[1], v[2]) * h;
            rot = nalgebra::UnitQuaternion::from_scaled_axis(nalgebra::Vector3::new(v[3], v[4], v[5]) * h) * rot;
        }
        let q = rot.quaternion();
        ([p.x, p.y, p.z, q.w, q.i, q.j, q.k], warm)
    }
    /// The continuous model λ_i = max(0, −K φ_i − B φ̇_i), integrated by an adaptive
    /// Dormand–Prince RK45 to a tight tolerance: the reference (the paper used MATLAB's ode45).
    fn reference(&self) -> [f64; 7] {
        let area = 1.0 / (self.n * self.n) as f64;
        let k = self.stiffness * area;
        // state: p (3), quaternion w,i,j,k (4), v (3), ω (3)
        let deriv = |t: f64, y: &[f64; 13]| -> [f64; 13] {
            let p = nalgebra::Vector3::new(y[0], y[1], y[2]);
            let rot = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(y[3], y[4], y[5], y[6]));
            let vel = [y[7], y[8], y[9], y[10], y[11], y[12]];
            let mut f = self.applied(t, &rot);
            for (phi, g) in self.rows(&p, &rot) {
                let rate: f64 = g.iter().zip(&vel).map(|(a, b)| a * b).sum();
                let lambda = (-k * phi - rate).max(0.0);
                for a in 0..6 {
                    f[a] += g[a] * lambda;
                }
            }
            let w = nalgebra::Quaternion::new(0.0, y[10], y[11], y[12]);
            let qd = w * nalgebra::Quaternion::new(y[3], y[4], y[5], y[6]) * 0.5;
            [y[7], y[8], y[9], qd.w, qd.i, qd.j, qd.k, f[0] / CUBE_MASS, f[1] / CUBE_MASS, f[2] / CUBE_MASS, f[3] / CUBE_INERTIA, f[4] / CUBE_INERTIA, f[5] / CUBE_INERTIA]
        };
        let mut y = [0.0; 13];
        y[2] = 0.5;
        y[3] = 1.0;
        let (mut t, mut dt) = (0.0f64, 1e-6f64);
        // Dormand–Prince 5(4) tableau
        let c = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0];
        let a: [&[f64]; 7] = [
            &[],
            &[1.0 / 5.0],
            &[3.0 / 40.0, 9.0 / 40.0],
            &[44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0],
            &[19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0],
            &[9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0],
            &[35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
        ];
        let b4 = [5179.0 / 57600.0, 0.0, 7571.0 / 16695.0, 393.0 / 640.0, -92097.0 / 339200.0, 187.0 / 2100.0, 1.0 / 40.0];
        let b5 = [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0];
        while t < 1.0 {
            dt = dt.min(1.0 - t);
            let mut ks = [[0.0; 13]; 7];
            for s in 0..7 {
                let mut ys = y;
                for (j, aj) in a[s].iter().enumerate() {
                    for i in 0..13 {
                        ys[i] += dt * aj * ks[j][i];
                    }
                }
                ks[s] = deriv(t + c[s] * dt, &ys);
            }
            let (mut y5, mut err) = (y, 0.0f64);
            for i in 0..13 {
                let (mut s5, mut s4) = (0.0, 0.0);
                for s in 0..7 {
                    s5 += b5[s] * ks[s][i];
                    s4 += b4[s] * ks[s][i];
                }
                y5[i] += dt * s5;
                let scale = 1e-12 + 1e-10 * y[i].abs().max(y5[i].abs());
                err = err.max((dt * (s5 - s4)).abs() / scale);
            }
            if err <= 1.0 {
                t += dt;
                y = y5;
                let qn = (y[3] * y[3] + y[4] * y[4] + y[5] * y[5] + y[6] * y[6]).sqrt();
                for i in 3..7 {
                    y[i] /= qn;
                }
            }
            dt *= (0.9 * err.max(1e-10).powf(-0.2)).clamp(0.2, 5.0);
        }
        [y[0], y[1], y[2], y[3], y[4], y[5], y[6]]
    }
}

/// E6 without load (reduced check): after 1 s on 100 elements every element carries
/// m g / 100 = 0.7848 N and the cube has sunk m g / E (1 m² of foundation, 1 m deep).
#[test]
fn cube_on_elastic_foundation_settles_to_a_uniform_load() {
    for e in [1e7, 1e11] {
        let cube = Foundation { n: 10, stiffness: e, load: 0.0 };
        let (q, forces) = cube.lstable(0.01);
        for f in &forces {
            assert!((f - CUBE_MASS * G / 100.0).abs() < 1e-6, "E {e}: element force {f}");
        }
        let sink = 0.5 - q[2];
        let want = CUBE_MASS * G / e;
        assert!((sink - want).abs() <= 1e-6 * want + 1e-15, "E {e}: sink {sink}, want {want}");
    }
}

/// E6 with the rotating load, 100 elements, h = 0.01 s: the error at 1 s of the generalized
/// coordinates (position and quaternion) against an RK45 integration of the continuous model,
/// printed beside the paper's Table 2 (its errors are against MATLAB's ode45). Asserted: every run
/// stays finite and on the foundation, and the 5 N errors are of the paper's order (< 1e-4).
#[test]
fn cube_on_elastic_foundation_under_a_rotating_load_tracks_the_reference() {
    let paper = [(5.0, 1e7, 2.96e-5), (5.0, 1e11, 2.91e-7), (50.0, 1e7, 0.813), (50.0, 1e11, 0.814)];
    for (load, e, table2) in paper {
        let cube = Foundation { n: 10, stiffness: e, load };
        let (q, _) = cube.lstable(0.01);
        let reference = cube.reference();
        let err = q.iter().zip(&reference).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
        println!("load {load:>4} N, E {e:.0e}: error at 1 s {err:.3e} (paper's Table 2: {table2:.3e}); height {:.6} m", q[2]);
        assert!(q.iter().all(|x| x.is_finite()) && q[2] > 0.4 && q[2] < 0.6, "{q:?}");
        if load == 5.0 {
            assert!(err < 1e-4, "load {load}, E {e}: error {err}");
        }
    }
}
