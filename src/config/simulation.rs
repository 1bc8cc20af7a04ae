//! A [`Simulation`] of a loaded [`Scene`]: its model, its method (or an override) and its
//! command script. Here rather than in `sim` so that the simulation layer needs no scene files.

use super::Scene;
use crate::contact::SolverConfig;
use crate::sim::{Script, Simulation};

impl Simulation {
    /// A simulation of a loaded scene, with its solver (or `solver_override`) and its script;
    /// refused (naming the scene) when the method cannot simulate the scene (deformables).
    pub fn try_from_scene(scene: &Scene, solver_override: Option<&SolverConfig>) -> Result<Self, String> {
        solver_override.unwrap_or(&scene.solver).check_model(&scene.model, &scene.file.display().to_string())?;
        Ok(Self::from_scene(scene, solver_override))
    }

    /// A simulation of a loaded scene, with its solver (or `solver_override`) and its script.
    /// The caller checks that the method can simulate the scene ([`Simulation::try_from_scene`]).
    pub fn from_scene(scene: &Scene, solver_override: Option<&SolverConfig>) -> Self {
        let mut sim = Simulation::new(scene.model.clone(), solver_override.unwrap_or(&scene.solver));
        sim.script = Script::new(&sim.model, &scene.script);
        if let Some(p) = scene.script_period_s {
            sim.script = std::mem::take(&mut sim.script).periodic(p);
        }
        sim.reset_period_steps = scene.reset_period_s.map(|p| ((p / sim.model.timestep_s).round() as u64).max(1));
        sim
    }
}
