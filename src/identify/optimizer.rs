//! Box-constrained Levenberg–Marquardt on a residual vector whose Jacobian is taken by finite
//! differences, every perturbed evaluation independent and run in parallel (rayon).
//!
//! The parameters are scaled to `u ∈ [0, 1]` by their bounds: linearly, or logarithmically
//! (`u = ln(x/min) / ln(max/min)`) when the bounds are positive and span at least a factor
//! [`LOG_SCALE_RATIO`] (a contact stiffness from 10³ to 10⁷ N/m), so that a step and a
//! finite difference are relative changes. Each iteration:
//! 1. the Jacobian `J = ∂r/∂u` by forward differences (step `fd_step` in `u`,
//!    backward at the upper bound; the other direction when one gives a non-finite residual
//!    or no effect, then the [`WIDER_STEPS`] while there is none), one rollout per parameter,
//!    all at once;
//! 2. the free set: a parameter at a bound whose gradient `g = Jᵀr` pushes it outward is held
//!    there (projected LM);
//! 3. steps `(JᵀJ + λ diag(JᵀJ)) δ = −g` on the free set for two damping values (λ and 10 λ) at
//!    once, clipped to the box; the better one is taken if it lowers the cost
//!    `½ Σ r²` (then λ shrinks), else λ grows ×100 and the pair is tried again (at most 8
//!    times).
//!
//! It stops when the relative decrease of the cost falls below `cost_tolerance`, the largest
//! scaled step below `step_tolerance`, no step lowers the cost, or after `max_iterations`.
//!
//! Why not a crate: the maintained Rust LM crates (`levenberg-marquardt`, argmin's
//! Gauss–Newton) have no bounds and evaluate the Jacobian through one callback, not as a batch
//! of independent rollouts; the bounded projected form above is about a hundred lines on
//! nalgebra's Cholesky.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Wider finite-difference steps (in the unit interval) tried when a parameter's step shows no
/// effect: a friction coefficient in a sticking regime has a zero derivative, but lowering it
/// far enough makes something slide. The column is then the secant over the first step with an
/// effect.
pub const WIDER_STEPS: [f64; 4] = [0.01, 0.05, 0.15, 0.3];

/// Bounds `0 < min` with `max / min` at least this are searched on a log scale.
pub const LOG_SCALE_RATIO: f64 = 100.0;

/// How a parameter maps to the unit interval of the search.
#[derive(Clone, Copy, Debug)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    fn new((lo, hi): (f64, f64)) -> Scale {
        Scale { lo, hi, log: lo > 0.0 && hi / lo >= LOG_SCALE_RATIO }
    }
    fn to_x(self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        if self.log {
            (self.lo * (self.hi / self.lo).powf(u)).clamp(self.lo, self.hi)
        } else {
            self.lo + u * (self.hi - self.lo)
        }
    }
    fn to_u(self, x: f64) -> f64 {
        if self.hi <= self.lo {
            0.0
        } else if self.log {
            ((x / self.lo).ln() / (self.hi / self.lo).ln()).clamp(0.0, 1.0)
        } else {
            ((x - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
        }
    }
    /// du/dx at x.
    fn du_dx(self, x: f64) -> f64 {
        if self.log {
            1.0 / (x * (self.hi / self.lo).ln())
        } else {
            1.0 / (self.hi - self.lo)
        }
    }
}

/// Optimiser settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Largest number of iterations (Jacobians).
    pub max_iterations: usize,
    /// Finite-difference step as a fraction of each parameter's bound width.
    pub fd_step: f64,
    /// Stop when an accepted step lowers the cost by less than this fraction.
    pub cost_tolerance: f64,
    /// Stop when the largest scaled step is below this.
    pub step_tolerance: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { max_iterations: 30, fd_step: 1e-3, cost_tolerance: 1e-6, step_tolerance: 1e-6 }
    }
}

/// One accepted (or final, rejected) iteration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Iteration {
    /// Iteration number (1-based).
    pub iteration: usize,
    /// Cost `½ Σ r²` after the iteration.
    pub cost: f64,
    /// Damping λ of the step taken.
    pub lambda: f64,
    /// Largest step of a parameter, as a fraction of its bound width.
    pub step: f64,
    /// The parameters that moved most (index, change in the parameter's unit), largest first.
    pub moved: Vec<(usize, f64)>,
    /// Rollouts so far.
    pub rollouts: usize,
}

/// What [`fit`] found.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The parameters.
    pub x: Vec<f64>,
    /// Cost at the start.
    pub cost_initial: f64,
    /// Cost at the end.
    pub cost_final: f64,
    /// Accepted iterations.
    pub history: Vec<Iteration>,
    /// Rollouts (residual evaluations) made.
    pub rollouts: usize,
    /// Why it stopped.
    pub stop: &'static str,
    /// The Jacobian `∂r/∂x` at the result (m × p, per unit of each parameter).
    pub jacobian: DMatrix<f64>,
    /// The residuals at the result.
    pub residuals: Vec<f64>,
    /// Parameters held at a bound at the end.
    pub at_bound: Vec<bool>,
    /// Parameters whose every perturbation gave a non-finite residual or no effect (their column
    /// is zero).
    pub unseen: Vec<bool>,
}

/// The residual function: parameters → residuals (`Err` when the parameters cannot be
/// simulated at all, e.g. a scene that does not load).
pub type Residuals<'a> = dyn Fn(&[f64]) -> Result<Vec<f64>, String> + Sync + 'a;

fn cost(r: &[f64]) -> f64 {
    if r.iter().all(|x| x.is_finite()) {
        0.5 * r.iter().map(|x| x * x).sum::<f64>()
    } else {
        f64::INFINITY
    }
}

/// Minimises `½ Σ r(x)²` over `x` within `bounds` from `x0` (see the module docs); calls
/// `progress` after every accepted iteration.
pub fn fit(r: &Residuals, x0: &[f64], bounds: &[(f64, f64)], settings: &Settings, progress: &mut dyn FnMut(&Iteration)) -> Result<Fit, String> {
    let p = x0.len();
    let scales: Vec<Scale> = bounds.iter().map(|&b| Scale::new(b)).collect();
    let width: Vec<f64> = bounds.iter().map(|(lo, hi)| hi - lo).collect();
    let to_x = |u: &[f64]| -> Vec<f64> { u.iter().zip(&scales).map(|(&u, s)| s.to_x(u)).collect() };
    let rollouts = AtomicUsize::new(0);
    let eval = |x: &[f64]| {
        rollouts.fetch_add(1, Ordering::Relaxed);
        r(x)
    };
    let mut u: Vec<f64> = x0.iter().zip(&scales).map(|(&x, s)| s.to_u(x)).collect();
    let mut res = eval(&to_x(&u))?;
    let cost0 = cost(&res);
    if !cost0.is_finite() {
        return Err("the simulation at the initial parameters is not finite (a step failed or diverged): check the scene and the initial values".into());
    }
    let mut c = cost0;
    let mut lambda = 1e-3;
    let mut history = Vec::new();
    let mut stop = "the largest number of iterations";
    let (mut jac, mut unseen) = jacobian(&eval, &u, &res, &to_x, &width, settings.fd_step)?;
    for it in 1..=settings.max_iterations {
        let g = jac.tr_mul(&DVector::from_column_slice(&res));
        let a = jac.tr_mul(&jac);
        let free: Vec<usize> = (0..p).filter(|&i| !((u[i] <= 0.0 && g[i] > 0.0) || (u[i] >= 1.0 && g[i] < 0.0)) && !unseen[i]).collect();
        if free.is_empty() {
            stop = "every parameter is held at a bound";
            break;
        }
        let mut accepted = None;
        for _attempt in 0..8 {
            let lambdas = [lambda, 10.0 * lambda];
            let trials: Vec<(f64, Vec<f64>, Result<Vec<f64>, String>)> = lambdas
                .par_iter()
                .map(|&l| {
                    let un = lm_step(&a, &g, &u, &free, l);
                    let rr = eval(&to_x(&un));
                    (l, un, rr)
                })
                .collect();
            let mut best: Option<(f64, Vec<f64>, Vec<f64>, f64)> = None;
            for (l, un, rr) in trials {
                let rr = rr?;
                let cn = cost(&rr);
                if cn < c && best.as_ref().is_none_or(|b| cn < b.3) {
                    best = Some((l, un, rr, cn));
                }
            }
            match best {
                Some(b) => {
                    accepted = Some(b);
                    break;
                }
                None => lambda *= 100.0,
            }
        }
        let Some((l, un, rn, cn)) = accepted else {
            stop = "no step lowers the cost (a minimum within the finite-difference accuracy)";
            break;
        };
        let step = un.iter().zip(&u).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let (xo, xn) = (to_x(&u), to_x(&un));
        let mut moved: Vec<(usize, f64)> = (0..p).map(|i| (i, xn[i] - xo[i])).filter(|m| m.1 != 0.0).collect();
        moved.sort_by(|a, b| (un[b.0] - u[b.0]).abs().total_cmp(&(un[a.0] - u[a.0]).abs()));
        moved.truncate(3);
        let decrease = (c - cn) / c.max(f64::MIN_POSITIVE);
        u = un;
        res = rn;
        c = cn;
        lambda = (l / 3.0).max(1e-12);
        let iteration = Iteration { iteration: it, cost: c, lambda: l, step, moved, rollouts: rollouts.load(Ordering::Relaxed) };
        progress(&iteration);
        history.push(iteration);
        (jac, unseen) = jacobian(&eval, &u, &res, &to_x, &width, settings.fd_step)?;
        if decrease < settings.cost_tolerance {
            stop = "the cost no longer decreases";
            break;
        }
        if step < settings.step_tolerance {
            stop = "the step is below the tolerance";
            break;
        }
    }
    let g = jac.tr_mul(&DVector::from_column_slice(&res));
    let at_bound = (0..p).map(|i| (u[i] <= 0.0 && g[i] >= 0.0) || (u[i] >= 1.0 && g[i] <= 0.0)).collect();
    // ∂r/∂x = ∂r/∂u · du/dx
    let x = to_x(&u);
    let mut jx = jac;
    for (j, s) in scales.iter().enumerate() {
        let mut col = jx.column_mut(j);
        if width[j] > 0.0 {
            col *= s.du_dx(x[j]);
        }
    }
    Ok(Fit { x, cost_initial: cost0, cost_final: c, history, rollouts: rollouts.load(Ordering::Relaxed), stop, jacobian: jx, residuals: res, at_bound, unseen })
}

/// The projected LM step from `u` on the `free` parameters with damping `lambda`, clipped to
/// the unit box.
fn lm_step(a: &DMatrix<f64>, g: &DVector<f64>, u: &[f64], free: &[usize], lambda: f64) -> Vec<f64> {
    let n = free.len();
    let scale = free.iter().map(|&i| a[(i, i)]).fold(0.0, f64::max).max(1e-300);
    let mut m = DMatrix::<f64>::zeros(n, n);
    let mut rhs = DVector::<f64>::zeros(n);
    for (r, &i) in free.iter().enumerate() {
        for (c, &j) in free.iter().enumerate() {
            m[(r, c)] = a[(i, j)];
        }
        m[(r, r)] += lambda * (a[(i, i)] + 1e-9 * scale);
        rhs[r] = -g[i];
    }
    let delta = match m.clone().cholesky() {
        Some(ch) => ch.solve(&rhs),
        None => m.svd(true, true).solve(&rhs, 1e-12 * scale).unwrap_or_else(|_| DVector::zeros(n)),
    };
    let mut out = u.to_vec();
    for (r, &i) in free.iter().enumerate() {
        out[i] = (u[i] + delta[r]).clamp(0.0, 1.0);
    }
    out
}

/// `∂r/∂u` by forward differences, one rollout per parameter in parallel (see the module
/// docs); the parameters no perturbation could evaluate are flagged and get a zero column.
fn jacobian(
    eval: &(dyn Fn(&[f64]) -> Result<Vec<f64>, String> + Sync),
    u: &[f64],
    r0: &[f64],
    to_x: &(dyn Fn(&[f64]) -> Vec<f64> + Sync),
    width: &[f64],
    fd_step: f64,
) -> Result<(DMatrix<f64>, Vec<bool>), String> {
    let p = u.len();
    let m = r0.len();
    // a change of the residuals below this (in noise units, over all of them) is no effect
    let flat = 1e-6 * (m as f64).sqrt();
    let columns: Vec<Result<Option<Vec<f64>>, String>> = (0..p)
        .into_par_iter()
        .map(|j| {
            if width[j] <= 0.0 {
                return Ok(None);
            }
            let mut steps = vec![fd_step];
            steps.extend(WIDER_STEPS.iter().copied().filter(|&h| h > fd_step));
            for step in steps {
                let forward = u[j] + step <= 1.0;
                for h in if forward { [step, -step] } else { [-step, step] } {
                    let mut up = u.to_vec();
                    up[j] += h;
                    if !(0.0..=1.0).contains(&up[j]) {
                        continue;
                    }
                    let r = eval(&to_x(&up))?;
                    if r.len() == m && r.iter().all(|x| x.is_finite()) {
                        let col: Vec<f64> = r.iter().zip(r0).map(|(a, b)| (a - b) / h).collect();
                        if col.iter().map(|c| (c * h) * (c * h)).sum::<f64>().sqrt() > flat {
                            return Ok(Some(col));
                        }
                        // no effect at this step: try the other side, then a wider step
                    }
                }
            }
            Ok(None)
        })
        .collect();
    let mut jac = DMatrix::<f64>::zeros(m, p);
    let mut unseen = vec![false; p];
    for (j, c) in columns.into_iter().enumerate() {
        match c? {
            Some(col) => jac.set_column(j, &DVector::from_vec(col)),
            None => unseen[j] = true,
        }
    }
    Ok((jac, unseen))
}
