//! Exact solutions of a robot's joint rows on one coordinate, and on the two coordinates a mimic
//! coupling ties together (docs/ecp.md, "Redundant joint rows").
//!
//! A one-coordinate joint can carry a lower limit, an upper limit and Coulomb friction. Solved
//! row by row, Gauss–Seidel only creeps towards how their impulses share the load: the friction
//! row's compliance `ε` (`FRICTION_ROW_COMPLIANCE` in `joint_rows`) makes the split unique but leaves
//! it a mode of stiffness `1/ε`, which the row updates move by about `ε` of the gap per sweep.
//! Together the rows are one monotone law between the coordinate's velocity `v` and the net
//! generalised impulse `Λ` they apply (N·s or N·m·s):
//!
//! - friction: `Λ_F(v) = clamp(−v / (ε m), −F, F)` (`m = (M̃⁻¹)_kk`, `F = f h` the impulse bound);
//! - lower limit `v ≥ v_lo`: at `v = v_lo` the limit adds any impulse ≥ 0;
//! - upper limit `v ≤ v_hi`: at `v = v_hi` the limit adds any impulse ≤ 0.
//!
//! Its graph is five pieces: the two limits (vertical) and slip backwards, stick and slip
//! forwards (affine, `Λ = p + q v` with `q ≤ 0`). [`solve_coordinate`] meets it with the
//! coordinate's response `v = a + m Λ`; [`solve_mimic_pair`] meets two coordinates' laws with
//! their 2 × 2 response and the mimic row `v_k + c v_l + b = 0` (multiplier `α = −c`), where the
//! follower's friction against the leader's was the slowest mode of the sweeps (440–480 of the
//! 7 000 steps of the arm pushing a box under ecp at the sweep cap at some placements).
//!
//! Each solve tries every pair of pieces and keeps the one whose conditions hold; with exact
//! arithmetic one does (the laws are monotone and the response positive definite), with
//! round-off the least violated one is taken.

/// One coordinate's joint rows: limits on its velocity (m/s or rad/s; `v_lo` from the lower
/// limit row `v + b₀ ≥ 0`, `v_hi` from the upper `−v + b₁ ≥ 0`) and its friction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct CoordinateLaw {
    /// `v ≥ v_lo` when the lower limit row is active.
    pub lower: Option<f64>,
    /// `v ≤ v_hi` when the upper limit row is active.
    pub upper: Option<f64>,
    /// Friction impulse bound `F` (N·s or N·m·s; 0: no friction).
    pub bound: f64,
    /// Friction compliance `ε m` while sticking (velocity per impulse; > 0).
    pub compliance: f64,
}

/// A piece of a [`CoordinateLaw`]'s graph.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Piece {
    /// `v = v_lo`, `Λ ≥ Λ_F(v_lo)`.
    Lower(f64),
    /// `v = v_hi`, `Λ ≤ Λ_F(v_hi)`.
    Upper(f64),
    /// `Λ = p + q v` for `v` in `[v_min, v_max]`.
    Affine { p: f64, q: f64, v_min: f64, v_max: f64 },
}

/// A coordinate's solution: its velocity, its rows' impulses `[lower, upper, friction]` (the
/// lower limit's ≥ 0, the upper's ≥ 0 acting along `−e_k`, the friction's within `±F`) and the
/// net `Λ = λ_lo − λ_hi + λ_F`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct CoordinateSolution {
    pub velocity: f64,
    pub impulses: [f64; 3],
}

impl CoordinateSolution {
    /// The net generalised impulse on the coordinate.
    pub fn net(&self) -> f64 {
        self.impulses[0] - self.impulses[1] + self.impulses[2]
    }
}

impl CoordinateLaw {
    /// The friction impulse at velocity `v`.
    pub fn friction(&self, v: f64) -> f64 {
        if self.bound > 0.0 {
            (-v / self.compliance).clamp(-self.bound, self.bound)
        } else {
            0.0
        }
    }

    /// The graph's pieces (at most five) and their count.
    fn pieces(&self) -> ([Piece; 5], usize) {
        let lo = self.lower.unwrap_or(f64::NEG_INFINITY);
        let hi = self.upper.unwrap_or(f64::INFINITY);
        let mut out = [Piece::Affine { p: 0.0, q: 0.0, v_min: lo, v_max: hi }; 5];
        let mut n = 0;
        if let Some(v) = self.lower {
            out[n] = Piece::Lower(v);
            n += 1;
        }
        if self.bound > 0.0 {
            let edge = self.bound * self.compliance;
            for (p, q, v_min, v_max) in [(self.bound, 0.0, lo, -edge), (0.0, -1.0 / self.compliance, -edge, edge), (-self.bound, 0.0, edge, hi)] {
                if v_min.max(lo) <= v_max.min(hi) {
                    out[n] = Piece::Affine { p, q, v_min: v_min.max(lo), v_max: v_max.min(hi) };
                    n += 1;
                }
            }
        } else if lo <= hi {
            out[n] = Piece::Affine { p: 0.0, q: 0.0, v_min: lo, v_max: hi };
            n += 1;
        }
        if let Some(v) = self.upper {
            out[n] = Piece::Upper(v);
            n += 1;
        }
        (out, n)
    }

    /// The rows' impulses for velocity `v` and net impulse `net` on `piece`.
    fn split(&self, piece: &Piece, v: f64, net: f64) -> CoordinateSolution {
        let friction = self.friction(v);
        let rest = net - friction;
        let impulses = match piece {
            Piece::Lower(_) => [rest.max(0.0), 0.0, friction],
            Piece::Upper(_) => [0.0, (-rest).max(0.0), friction],
            Piece::Affine { .. } => [0.0, 0.0, friction],
        };
        CoordinateSolution { velocity: v, impulses }
    }
}

/// How far `(v, Λ)` lies off `piece` (velocity units: impulses weighed by `m`).
fn violation(law: &CoordinateLaw, piece: &Piece, v: f64, net: f64, m: f64) -> f64 {
    match *piece {
        Piece::Lower(_) => m * (law.friction(v) - net).max(0.0),
        Piece::Upper(_) => m * (net - law.friction(v)).max(0.0),
        Piece::Affine { v_min, v_max, .. } => (v_min - v).max(0.0) + (v - v_max).max(0.0),
    }
}

/// The coordinate's rows solved together against its response `v = a + m Λ` (`a`: its
/// velocity without their impulses; `m = (M̃⁻¹)_kk > 0`). `None` when the law admits no
/// velocity (limits that contradict each other).
pub(super) fn solve_coordinate(law: &CoordinateLaw, a: f64, m: f64) -> Option<CoordinateSolution> {
    let (pieces, n) = law.pieces();
    let mut best: Option<(f64, CoordinateSolution)> = None;
    for piece in &pieces[..n] {
        let (v, net) = match *piece {
            Piece::Lower(v) | Piece::Upper(v) => (v, (v - a) / m),
            // v = a + m (p + q v)
            Piece::Affine { p, q, .. } => {
                let v = (a + m * p) / (1.0 - m * q);
                (v, (v - a) / m)
            }
        };
        let off = violation(law, piece, v, net, m);
        if best.is_none_or(|(b, _)| off < b) {
            best = Some((off, law.split(piece, v, net)));
        }
    }
    best.map(|(_, s)| s)
}

/// Two coordinates' response: `[v_k, v_l] = a + W [Λ_k + μ, Λ_l + c μ]` with `W` the 2 × 2
/// block of `M̃⁻¹` on them (row-major `[W_kk, W_kl, W_lk, W_ll]`, symmetric positive
/// definite), and the mimic row `v_k + c v_l + b = 0` whose impulse is `μ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct MimicPair {
    pub free: [f64; 2],
    pub mobility: [f64; 4],
    /// The mimic row's `c` (−multiplier) and bias `b` (m/s or rad/s).
    pub coef: f64,
    pub bias: f64,
}

/// The follower's and the leader's solutions and the mimic row's impulse μ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct MimicSolution {
    pub follower: CoordinateSolution,
    pub leader: CoordinateSolution,
    pub mimic: f64,
}

/// The follower's law `k`, the leader's law `l` and the mimic row solved together. `None` when
/// no pair of pieces holds within round-off (both coordinates on a limit with targets the mimic
/// row contradicts, or a singular response): the caller then keeps row-by-row updates.
pub(super) fn solve_mimic_pair(k: &CoordinateLaw, l: &CoordinateLaw, pair: &MimicPair) -> Option<MimicSolution> {
    let [w_kk, w_kl, w_lk, w_ll] = pair.mobility;
    let det = w_kk * w_ll - w_kl * w_lk;
    if !(det > 0.0 && w_kk > 0.0 && w_ll > 0.0) {
        return None;
    }
    // P = W⁻¹; with s = v_l the mimic row gives v_k = −b + α s (α = −c), and eliminating μ
    // leaves Λ_l + α Λ_k = h(s) = h0 + h1 s, h = d1ᵀ P (d0 + s d1), d0 = (−b − a_k, −a_l),
    // d1 = (α, 1)
    let p = [w_ll / det, -w_kl / det, -w_lk / det, w_kk / det];
    let alpha = -pair.coef;
    let (d0, d1) = ([-pair.bias - pair.free[0], -pair.free[1]], [alpha, 1.0]);
    let pd = |d: [f64; 2]| [p[0] * d[0] + p[1] * d[1], p[2] * d[0] + p[3] * d[1]];
    let (pd0, pd1) = (pd(d0), pd(d1));
    let (h0, h1) = (d1[0] * pd0[0] + d1[1] * pd0[1], d1[0] * pd1[0] + d1[1] * pd1[1]);
    let (pieces_k, nk) = k.pieces();
    let (pieces_l, nl) = l.pieces();
    let scale = w_kk.max(w_ll);
    let mut best: Option<(f64, MimicSolution)> = None;
    for pk in &pieces_k[..nk] {
        for pl in &pieces_l[..nl] {
            // s and the two nets on this pair of pieces
            let solved = match (*pk, *pl) {
                (Piece::Affine { p: p_k, q: q_k, .. }, Piece::Affine { p: p_l, q: q_l, .. }) => {
                    // p_l + q_l s + α (p_k + q_k (−b + α s)) = h0 + h1 s
                    let s = (h0 - p_l - alpha * p_k + alpha * q_k * pair.bias) / (q_l + alpha * alpha * q_k - h1);
                    let v_k = -pair.bias + alpha * s;
                    Some((s, p_k + q_k * v_k, p_l + q_l * s))
                }
                (Piece::Affine { p: p_k, q: q_k, .. }, Piece::Lower(s) | Piece::Upper(s)) => {
                    let v_k = -pair.bias + alpha * s;
                    let net_k = p_k + q_k * v_k;
                    Some((s, net_k, h0 + h1 * s - alpha * net_k))
                }
                (Piece::Lower(v_k) | Piece::Upper(v_k), Piece::Affine { p: p_l, q: q_l, .. }) if alpha != 0.0 => {
                    let s = (v_k + pair.bias) / alpha;
                    let net_l = p_l + q_l * s;
                    Some((s, (h0 + h1 * s - net_l) / alpha, net_l))
                }
                _ => None,
            };
            let Some((s, net_k, net_l)) = solved else { continue };
            let v_k = -pair.bias + alpha * s;
            if !(s.is_finite() && v_k.is_finite() && net_k.is_finite() && net_l.is_finite()) {
                continue;
            }
            let off = violation(k, pk, v_k, net_k, scale) + violation(l, pl, s, net_l, scale);
            if best.is_none_or(|(b, _)| off < b) {
                // μ from the follower's momentum: Λ_k + μ = (P (v − a))_k
                let g_k = pd0[0] + s * pd1[0];
                best = Some((off, MimicSolution { follower: k.split(pk, v_k, net_k), leader: l.split(pl, s, net_l), mimic: g_k - net_k }));
            }
        }
    }
    let tolerance = 1e-12 * (1.0 + pair.free[0].abs() + pair.free[1].abs() + pair.bias.abs());
    best.filter(|(off, _)| *off <= tolerance).map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic sequence in [−1, 1).
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn random_law(seed: &mut u64) -> CoordinateLaw {
        let lower = (lcg(seed) > -0.3).then(|| 1e-3 * lcg(seed));
        let upper = (lcg(seed) > 0.3).then(|| lower.unwrap_or(0.0).abs() + 1e-3 * (lcg(seed) + 1.0));
        let bound = if lcg(seed) > -0.5 { 1e-4 * (lcg(seed) + 1.0) } else { 0.0 };
        CoordinateLaw { lower, upper, bound, compliance: 1e-8 * (lcg(seed) + 1.5) }
    }

    /// The largest violation of the law's conditions by a coordinate's solution with net `net`
    /// (velocity units: impulses times `m`).
    fn law_error(law: &CoordinateLaw, s: &CoordinateSolution, m: f64) -> f64 {
        let [lo, hi, f] = s.impulses;
        let v = s.velocity;
        let mut e: f64 = 0.0;
        e = e.max(m * (-lo).max(0.0)).max(m * (-hi).max(0.0));
        if let Some(v_lo) = law.lower {
            e = e.max((v_lo - v).max(0.0)).max((m * lo).min(v - v_lo).abs());
        } else {
            e = e.max(m * lo.abs());
        }
        if let Some(v_hi) = law.upper {
            e = e.max((v - v_hi).max(0.0)).max((m * hi).min(v_hi - v).abs());
        } else {
            e = e.max(m * hi.abs());
        }
        // friction: λ_F = clamp(−v / (ε m), ±F)
        e.max(m * (f - law.friction(v)).abs())
    }

    #[test]
    fn a_coordinates_rows_solved_together_meet_every_condition_and_the_response() {
        let mut seed = 7;
        for case in 0..2000 {
            let law = random_law(&mut seed);
            let (a, m) = (1e-3 * lcg(&mut seed), 10.0 * (lcg(&mut seed) + 1.1));
            let s = solve_coordinate(&law, a, m).expect("a law with v_lo < v_hi admits a velocity");
            let response = (s.velocity - (a + m * s.net())).abs();
            let e = law_error(&law, &s, m);
            assert!(response < 1e-15 && e < 1e-15, "case {case}: {law:?}, a {a}, m {m}: {s:?}, response error {response:e}, law error {e:e}");
        }
    }

    #[test]
    fn a_coordinates_rows_agree_with_a_long_row_by_row_gauss_seidel() {
        // a limit pushing out of penetration and friction that must slip (the arm's finger):
        // the sweeps' row updates converge to the same impulses, some ten thousand sweeps later
        let law = CoordinateLaw { lower: Some(2.35e-8), upper: None, bound: 5e-5, compliance: 1e-8 * 5.0 };
        let (a, m) = (-1e-6, 5.0);
        let s = solve_coordinate(&law, a, m).unwrap();
        assert!((s.impulses[2] + 5e-5).abs() < 1e-18 && (s.velocity - 2.35e-8).abs() < 1e-18, "{s:?}");
        let sweep = |lo: &mut f64, f: &mut f64| {
            let v = a + m * (*lo + *f);
            *lo = (*lo - (v - 2.35e-8) / m).max(0.0);
            let v = a + m * (*lo + *f);
            *f = (*f - (v + law.compliance * *f) / (m + law.compliance)).clamp(-5e-5, 5e-5);
        };
        let (mut lo, mut f) = (0.0f64, 0.0f64);
        for _ in 0..200 {
            sweep(&mut lo, &mut f);
        }
        // after 200 sweeps the friction is still near where it started (each sweep moves it by
        // about v_lo / m = 4.7e-9 N·s) ...
        assert!((f - s.impulses[2]).abs() > 4e-5, "friction {f:e} after 200 sweeps");
        for _ in 200..20_000 {
            sweep(&mut lo, &mut f);
        }
        // ... and it reaches the solution after some 10 000
        assert!((f - s.impulses[2]).abs() < 1e-15 && (lo - s.impulses[0]).abs() < 1e-15, "{lo:e} {f:e} vs {s:?}");
    }

    #[test]
    fn a_mimic_pair_solved_together_meets_both_laws_the_mimic_row_and_the_response() {
        let mut seed = 11;
        let mut solved = 0;
        for case in 0..4000 {
            let (k, l) = (random_law(&mut seed), random_law(&mut seed));
            let (w_kk, w_ll) = (10.0 * (lcg(&mut seed) + 1.1), 10.0 * (lcg(&mut seed) + 1.1));
            let w_kl = 0.9 * (w_kk * w_ll).sqrt() * lcg(&mut seed);
            let coef = if lcg(&mut seed) > 0.0 { -1.0 } else { -0.5 * (lcg(&mut seed) + 1.5) };
            let pair = MimicPair { free: [1e-3 * lcg(&mut seed), 1e-3 * lcg(&mut seed)], mobility: [w_kk, w_kl, w_kl, w_ll], coef, bias: 1e-4 * lcg(&mut seed) };
            let Some(s) = solve_mimic_pair(&k, &l, &pair) else { continue };
            solved += 1;
            let (gk, gl) = (s.follower.net() + s.mimic, s.leader.net() + coef * s.mimic);
            let response = (s.follower.velocity - (pair.free[0] + w_kk * gk + w_kl * gl)).abs().max((s.leader.velocity - (pair.free[1] + w_kl * gk + w_ll * gl)).abs());
            let mimic = (s.follower.velocity + coef * s.leader.velocity + pair.bias).abs();
            let e = law_error(&k, &s.follower, w_kk).max(law_error(&l, &s.leader, w_ll));
            // the stick pieces' stiffness 1/ε = 1e8 amplifies round-off in the response to ~1e-11
            assert!(response < 1e-10 && mimic < 1e-12 && e < 1e-12, "case {case}: {k:?} {l:?} {pair:?}: {s:?}, response {response:e}, mimic {mimic:e}, laws {e:e}");
        }
        // only pairs whose limits contradict the mimic row go unsolved
        assert!(solved > 3000, "{solved} of 4000 solved");
    }
}
