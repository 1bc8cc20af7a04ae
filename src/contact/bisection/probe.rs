//! The bisection's unit of work for `contact_sim bench`: one single-contact solve (the paper's
//! Table I), sampled on every contact of every timed step given the other contacts' impulses.

use super::{BisectionParams, SingleContact};
use crate::contact::{ContactProblem, UnitProbe, UnitTiming};
use std::hint::black_box;
use std::time::Instant;

/// The recorded single-contact problems: the prepared block, the local free velocity, μ, and
/// whether the contact slides (the bisection case).
pub(crate) struct SingleContactProbe {
    params: BisectionParams,
    samples: Vec<(SingleContact, [f64; 3], f64, bool)>,
}

impl SingleContactProbe {
    pub(crate) fn new(params: BisectionParams) -> Self {
        SingleContactProbe { params, samples: Vec::new() }
    }
}

impl UnitProbe for SingleContactProbe {
    fn record(&mut self, p: &ContactProblem, solution: &[f64]) {
        for c in 0..p.num_contacts {
            let single = SingleContact::new(p, c, &self.params);
            let local = SingleContact::local_free_velocity(p, c, solution);
            let mu = p.friction[c];
            self.samples.push((single, local, mu, single.case(local, mu) == 2));
        }
    }

    /// The means time whole passes over the samples in their order, so that the branch
    /// predictor cannot learn one problem's bisection path (the best of three passes); each
    /// solve is also timed alone, less the cost of reading the clock, for the percentiles.
    fn time(&self) -> UnitTiming {
        let (samples, prm) = (&self.samples, &self.params);
        let pass = |only_slip: bool| -> f64 {
            let n = samples.iter().filter(|s| s.3 || !only_slip).count();
            if n == 0 {
                return f64::NAN;
            }
            (0..3)
                .map(|_| {
                    let t0 = Instant::now();
                    for (single, local, mu, slip) in samples {
                        if *slip || !only_slip {
                            black_box(single.solve(black_box(*local), black_box(*mu), prm));
                        }
                    }
                    t0.elapsed().as_secs_f64() * 1e6 / n as f64
                })
                .fold(f64::INFINITY, f64::min)
        };
        let (all, slip) = (pass(false), pass(true));
        let mut clock: Vec<f64> = (0..1000)
            .map(|_| {
                let t0 = Instant::now();
                t0.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        clock.sort_by(f64::total_cmp);
        let overhead = clock[clock.len() / 2];
        let mut each: Vec<f64> = samples
            .iter()
            .map(|(single, local, mu, _)| {
                let t0 = Instant::now();
                black_box(single.solve(black_box(*local), black_box(*mu), prm));
                (t0.elapsed().as_secs_f64() * 1e6 - overhead).max(0.0)
            })
            .collect();
        each.sort_by(f64::total_cmp);
        let sliding = samples.iter().filter(|s| s.3).count();
        UnitTiming { samples: samples.len(), mean_us: all, each_us: each, sliding_fraction: sliding as f64 / samples.len().max(1) as f64, sliding_mean_us: slip }
    }
}
