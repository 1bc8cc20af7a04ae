//! [`Simulation`]: model, state, workspace and commands together, with the scene's command
//! script. The convenient entry point for headless runs, benchmarks and tests.

use crate::config::{Keyframe, Scene};
use crate::contact::SolverConfig;
use crate::model::Model;
use crate::state::State;
use crate::step::{step, Commands, StepReport};
use crate::workspace::Workspace;

/// Per-joint command tracks built from scene keyframes.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// `(velocity index, [(time s, position target)])`, interpolated linearly.
    positions: Vec<(usize, Vec<(f64, f64)>)>,
    /// `(velocity index, [(time s, effort)])`, zero-order hold.
    efforts: Vec<(usize, Vec<(f64, f64)>)>,
}

impl Script {
    /// Builds tracks from keyframes (joint names already validated against `model`).
    pub fn new(model: &Model, keyframes: &[Keyframe]) -> Self {
        let mut s = Script::default();
        for k in keyframes {
            for (name, &value) in &k.positions {
                let dof = model.joint_dof(name).expect("validated");
                match s.positions.iter_mut().find(|(d, _)| *d == dof) {
                    Some((_, track)) => track.push((k.time_s, value)),
                    None => s.positions.push((dof, vec![(k.time_s, value)])),
                }
            }
            for (name, &value) in &k.efforts {
                let dof = model.joint_dof(name).expect("validated");
                match s.efforts.iter_mut().find(|(d, _)| *d == dof) {
                    Some((_, track)) => track.push((k.time_s, value)),
                    None => s.efforts.push((dof, vec![(k.time_s, value)])),
                }
            }
        }
        s
    }

    /// `true` when the script commands nothing.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty() && self.efforts.is_empty()
    }

    /// Writes the scripted targets at time `t` (s) into `cmd`. Before a joint's first keyframe its
    /// command is left unchanged.
    pub fn apply(&self, t: f64, cmd: &mut Commands) {
        for (dof, track) in &self.positions {
            if t < track[0].0 {
                continue;
            }
            let i = track.partition_point(|&(tk, _)| tk <= t);
            cmd.position[*dof] = if i >= track.len() {
                track[track.len() - 1].1
            } else {
                let (t0, v0) = track[i - 1];
                let (t1, v1) = track[i];
                if t1 > t0 { v0 + (v1 - v0) * (t - t0) / (t1 - t0) } else { v1 }
            };
        }
        for (dof, track) in &self.efforts {
            if t < track[0].0 {
                continue;
            }
            let i = track.partition_point(|&(tk, _)| tk <= t);
            cmd.effort[*dof] = track[i - 1].1;
        }
    }
}

/// A ready-to-step simulation.
pub struct Simulation {
    /// The model.
    pub model: Model,
    /// The current state.
    pub state: State,
    /// Scratch and derived data of the last step.
    pub workspace: Workspace,
    /// Commands applied at each step.
    pub commands: Commands,
    /// The scene's scripted targets (applied before each step).
    pub script: Script,
    initial_state: State,
    initial_commands: Commands,
}

impl Simulation {
    /// A simulation of `model` with the given solver.
    pub fn new(model: Model, solver: &SolverConfig) -> Self {
        let state = State::new(&model);
        let workspace = Workspace::new(&model, solver);
        let commands = Commands::new(&model);
        Simulation {
            initial_state: state.clone(),
            initial_commands: commands.clone(),
            model,
            state,
            workspace,
            commands,
            script: Script::default(),
        }
    }

    /// A simulation of a loaded scene, with its solver (or `solver_override`) and its script.
    pub fn from_scene(scene: &Scene, solver_override: Option<&SolverConfig>) -> Self {
        let mut sim = Simulation::new(scene.model.clone(), solver_override.unwrap_or(&scene.solver));
        sim.script = Script::new(&sim.model, &scene.script);
        sim
    }

    /// Applies the script and advances one step.
    pub fn step(&mut self) -> StepReport {
        self.script.apply(self.state.time_s, &mut self.commands);
        step(&self.model, &mut self.state, &mut self.workspace, &self.commands)
    }

    /// Back to the initial state and commands.
    pub fn reset(&mut self) {
        self.state.clone_from(&self.initial_state);
        self.commands.clone_from(&self.initial_commands);
    }
}
