//! The run-time state of an emulated force/torque sensor: the emulation chain's memory (bias
//! drift, filter stages, the transport-delay ring and the noise generator), so that restoring a
//! [`State`](super::State) reproduces the sensor's readings bit for bit.

use crate::model::sensor::{ForceTorqueSensor, FtEmulation};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// The run-time state of one sensor (part of [`crate::state::State`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FtSensorState {
    /// Latest ideal wrench `[fx fy fz tx ty tz]` in the sensor frame (N, N·m).
    pub ideal: [f64; 6],
    /// Latest emulated reading (N, N·m), updated at the sensor rate.
    pub measured: [f64; 6],
    /// The latest reading was clipped at the range on some axis.
    pub saturated: bool,
    /// Samples taken.
    pub samples: u64,
    drift: [f64; 6],
    filter: [[f64; 6]; 2],
    filter_primed: bool,
    /// Ring of the last `delay_samples + 1` processed samples.
    delay: Vec<[f64; 6]>,
    delay_head: usize,
    #[serde(skip)]
    rng: ChaCha8Rng,
}

impl FtSensorState {
    /// Initial state for a sensor.
    pub fn new(sensor: &ForceTorqueSensor) -> Self {
        FtSensorState {
            ideal: [0.0; 6],
            measured: [0.0; 6],
            saturated: false,
            samples: 0,
            drift: [0.0; 6],
            filter: [[0.0; 6]; 2],
            filter_primed: false,
            delay: vec![[0.0; 6]; sensor.emulation.delay_samples + 1],
            delay_head: 0,
            rng: ChaCha8Rng::seed_from_u64(sensor.emulation.seed),
        }
    }

    /// Copies `other` into `self` without allocating (the delay lines have equal lengths for the
    /// same sensor), for allocation-free resets.
    pub fn copy_from(&mut self, other: &FtSensorState) {
        self.ideal = other.ideal;
        self.measured = other.measured;
        self.saturated = other.saturated;
        self.samples = other.samples;
        self.drift = other.drift;
        self.filter = other.filter;
        self.filter_primed = other.filter_primed;
        self.delay.copy_from_slice(&other.delay);
        self.delay_head = other.delay_head;
        self.rng.clone_from(&other.rng);
    }

    /// Takes one sample of the ideal wrench `ideal` (already in the sensor frame) through the
    /// emulation chain. `sample_period_s` is 1/rate. Allocation-free.
    pub fn sample(&mut self, e: &FtEmulation, ideal: &[f64; 6], sample_period_s: f64) {
        self.ideal = *ideal;
        let (bias, drift_std, noise_std) = (e.bias.values(), e.bias_drift_std.values(), e.noise_std.values());
        let (resolution, range) = (e.resolution.values(), e.range.values());
        let mut x = [0.0; 6];
        for k in 0..6 {
            let n: f64 = if noise_std[k] > 0.0 { StandardNormal.sample(&mut self.rng) } else { 0.0 };
            x[k] = ideal[k] + bias[k] + self.drift[k] + noise_std[k] * n;
            if drift_std[k] > 0.0 {
                let w: f64 = StandardNormal.sample(&mut self.rng);
                self.drift[k] += drift_std[k] * sample_period_s.sqrt() * w;
            }
        }
        if let Some(fc) = e.cutoff_hz {
            // exact discretization of dy/dt = (x − y)/τ, τ = 1/(2π f_c), per stage
            let alpha = 1.0 - (-2.0 * std::f64::consts::PI * fc * sample_period_s).exp();
            if !self.filter_primed {
                self.filter = [x; 2];
                self.filter_primed = true;
            }
            for stage in 0..e.filter_order as usize {
                let input = if stage == 0 { x } else { self.filter[stage - 1] };
                for k in 0..6 {
                    self.filter[stage][k] += alpha * (input[k] - self.filter[stage][k]);
                }
            }
            x = self.filter[e.filter_order as usize - 1];
        }
        let mut saturated = false;
        for k in 0..6 {
            if x[k].abs() > range[k] {
                x[k] = x[k].clamp(-range[k], range[k]);
                saturated = true;
            }
            if resolution[k] > 0.0 {
                x[k] = (x[k] / resolution[k]).round() * resolution[k];
            }
        }
        // transport delay: the ring holds the last delay+1 samples
        let n = self.delay.len();
        self.delay[self.delay_head] = x;
        let out = self.delay[(self.delay_head + 1) % n];
        self.delay_head = (self.delay_head + 1) % n;
        self.measured = if self.samples + 1 >= n as u64 { out } else { [0.0; 6] };
        self.saturated = saturated;
        self.samples += 1;
    }
}
