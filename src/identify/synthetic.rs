//! Synthetic "hardware" bags with known ground truth, for testing an identification set-up:
//! a scene (with the true parameters and a scripted excitation) is run and recorded as the
//! node records, and measurement noise is added to what a robot measures (joint states,
//! wrenches). Identifying from such a bag must recover the scene's parameters.

use crate::bag::msgs::Msg;
use crate::bag::{read_bag, BagWriter, WriterOptions};
use crate::config::Scene;
use crate::sim::Simulation;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use std::path::Path;

/// White Gaussian measurement noise (standard deviations) added to a synthetic bag.
#[derive(Clone, Debug)]
pub struct Noise {
    /// Joint positions (rad or m).
    pub position: f64,
    /// Joint velocities (rad/s or m/s).
    pub velocity: f64,
    /// Joint efforts (N·m or N).
    pub effort: f64,
    /// Wrench forces (N).
    pub force: f64,
    /// Wrench torques (N·m).
    pub torque: f64,
    /// Seed of the generator.
    pub seed: u64,
    /// Leave the efforts out of the joint states (a robot that does not measure them).
    pub drop_effort: bool,
}

impl Default for Noise {
    fn default() -> Self {
        Noise { position: 0.0, velocity: 0.0, effort: 0.0, force: 0.0, torque: 0.0, seed: 1, drop_effort: false }
    }
}

/// Runs `scene` (its script drives the joints) for `duration_s` and writes the recording, with
/// `noise` added to `/joint_states` and every wrench topic, as a bag at `out` (a new
/// directory).
pub fn record_hardware_bag(scene: &Scene, duration_s: f64, rate_hz: f64, noise: &Noise, out: &Path) -> Result<(), String> {
    if out.exists() {
        return Err(format!("{}: exists; a synthetic bag is written to a new directory", out.display()));
    }
    let clean = out.with_file_name(format!("{}.clean", out.file_name().and_then(|n| n.to_str()).unwrap_or("bag")));
    if clean.exists() {
        std::fs::remove_dir_all(&clean).map_err(|e| format!("{}: {e}", clean.display()))?;
    }
    let mut sim = Simulation::from_scene(scene, None);
    crate::bag::run::record_run(&mut sim, &clean, rate_hz, duration_s).map_err(|e| e.to_string())?;
    let bag = read_bag(&clean).map_err(|e| e.to_string())?;
    let mut w = BagWriter::create(out, &WriterOptions::default()).map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(bag.topics.len());
    for t in &bag.topics {
        ids.push(match t.msg_type {
            Some(ty) => Some(w.add_topic(&t.name, ty).map_err(|e| e.to_string())?),
            None => None,
        });
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(noise.seed);
    let mut gauss = |s: f64, x: &mut f64| {
        if s > 0.0 {
            *x += Normal::new(0.0, s).expect("σ > 0 and finite").sample(&mut rng);
        }
    };
    for m in &bag.messages {
        let Some(id) = ids[m.topic] else { continue };
        let name = crate::bag::reader::normalize_topic(&bag.topics[m.topic].name);
        let mut msg = m.msg.clone();
        match &mut msg {
            Msg::JointState(js) if name == "/joint_states" => {
                for x in &mut js.position {
                    gauss(noise.position, x);
                }
                for x in &mut js.velocity {
                    gauss(noise.velocity, x);
                }
                for x in &mut js.effort {
                    gauss(noise.effort, x);
                }
                if noise.drop_effort {
                    js.effort.clear();
                }
            }
            Msg::WrenchStamped(ws) => {
                for x in &mut ws.wrench.force {
                    gauss(noise.force, x);
                }
                for x in &mut ws.wrench.torque {
                    gauss(noise.torque, x);
                }
            }
            _ => {}
        }
        w.write(id, m.log_time_ns, &msg).map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    std::fs::remove_dir_all(&clean).map_err(|e| format!("{}: {e}", clean.display()))?;
    Ok(())
}
