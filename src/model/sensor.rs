//! Force/torque sensor descriptions: where a sensor sits and how its readings are emulated
//! (data only; the measurement is [`crate::sensors`]).

use super::BodyId;
use crate::math::Pose;

/// A value per wrench axis `[fx, fy, fz, tx, ty, tz]`, written in YAML either as one number for
/// all six axes or as a list of six.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Axes {
    /// The same value on every axis.
    All(f64),
    /// One value per axis.
    Each([f64; 6]),
}

impl Axes {
    /// The six values.
    pub fn values(&self) -> [f64; 6] {
        match *self {
            Axes::All(x) => [x; 6],
            Axes::Each(v) => v,
        }
    }
}

fn zero_axes() -> Axes {
    Axes::All(0.0)
}
fn infinite_axes() -> Axes {
    Axes::All(f64::INFINITY)
}
fn default_order() -> u8 {
    1
}

/// Sensor emulation parameters (the scene's `sensors[].emulation`). Forces in N, torques in N·m.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FtEmulation {
    /// Constant bias added to the reading.
    #[serde(default = "zero_axes")]
    pub bias: Axes,
    /// Bias drift: a random walk with this standard deviation per √s.
    #[serde(default = "zero_axes")]
    pub bias_drift_std: Axes,
    /// White Gaussian noise standard deviation per sample.
    #[serde(default = "zero_axes")]
    pub noise_std: Axes,
    /// Low-pass cutoff (Hz); none when absent. Must be below the Nyquist frequency.
    #[serde(default)]
    pub cutoff_hz: Option<f64>,
    /// Filter order: 1 (time constant 1/(2π f_c)) or 2 (two such stages, critically damped).
    #[serde(default = "default_order")]
    pub filter_order: u8,
    /// Quantization step (0: none).
    #[serde(default = "zero_axes")]
    pub resolution: Axes,
    /// Measuring range: readings are clipped to ±range and flagged (inf: none).
    #[serde(default = "infinite_axes")]
    pub range: Axes,
    /// Sample rate (Hz); default: every simulation step. Must divide into the step rate.
    #[serde(default)]
    pub rate_hz: Option<f64>,
    /// Transport delay in samples.
    #[serde(default)]
    pub delay_samples: usize,
    /// Seed of the noise generator.
    #[serde(default)]
    pub seed: u64,
}

impl Default for FtEmulation {
    fn default() -> Self {
        FtEmulation {
            bias: zero_axes(),
            bias_drift_std: zero_axes(),
            noise_std: zero_axes(),
            cutoff_hz: None,
            filter_order: 1,
            resolution: zero_axes(),
            range: infinite_axes(),
            rate_hz: None,
            delay_samples: 0,
            seed: 0,
        }
    }
}

/// A sensor in the scene file.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtSensorConfig {
    /// Sensor name (topics: `<name>/wrench`; a non-empty string).
    #[serde(deserialize_with = "crate::config::scene::name")]
    pub name: String,
    /// The fixed URDF joint it sits on.
    pub joint: String,
    /// Sensor frame relative to the joint (child link) frame: translation (m).
    #[serde(default)]
    pub xyz: [f64; 3],
    /// Sensor frame relative to the joint frame: roll, pitch, yaw (rad).
    #[serde(default)]
    pub rpy: [f64; 3],
    /// Emulation; absent: ideal.
    #[serde(default)]
    pub emulation: FtEmulation,
    /// `frame_id` of the published readings (a TF frame of the sensor, e.g. from the robot
    /// description); default: the name of the joint's child link when `xyz` and `rpy` are zero,
    /// else the sensor name.
    #[serde(default)]
    pub frame_id: Option<String>,
}

/// A force/torque sensor of the model.
#[derive(Clone, Debug)]
pub struct ForceTorqueSensor {
    /// Name.
    pub name: String,
    /// The fixed joint it sits on.
    pub joint: String,
    /// The joint's child body: the sensor measures the subtree rooted here.
    pub body: BodyId,
    /// Sensor frame in the child body frame.
    pub x_body_sensor: Pose,
    /// Emulation parameters.
    pub emulation: FtEmulation,
    /// Steps between samples (1: every step).
    pub steps_per_sample: u64,
    /// `frame_id` of the published readings (see [`FtSensorConfig::frame_id`]).
    pub frame_id: String,
}
