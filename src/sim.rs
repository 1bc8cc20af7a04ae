//! [`Simulation`]: model, state, workspace and commands together, with the scene's command
//! script. The convenient entry point for headless runs, benchmarks and tests.

use std::collections::BTreeMap;
use crate::contact::SolverConfig;
use crate::model::Model;
use crate::state::State;
use crate::state::Commands;
use crate::step::{step, StepReport};
use crate::workspace::Workspace;

/// A keyframe of the headless command script: position targets are interpolated linearly
/// between keyframes; efforts are held until the next keyframe that names the joint.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Keyframe {
    /// Time of the keyframe (s).
    pub time_s: f64,
    /// Position targets by joint (rad or m).
    #[serde(default)]
    pub positions: BTreeMap<String, f64>,
    /// Feed-forward efforts by joint (N·m or N).
    #[serde(default)]
    pub efforts: BTreeMap<String, f64>,
}

/// What a run does after a step fails (singular mass matrix, non-finite state; see
/// [`StepReport::failure_cause`]): the scene's `on_failure`, `contact_sim run --on-failure`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicy {
    /// Stop the run: `contact_sim run` exits with status 3 naming the first failed step (the
    /// default of the command line).
    #[default]
    Stop,
    /// Put the robots and objects back in their initial state (as an episode reset: time and
    /// the script go on) and continue.
    Reset,
    /// Keep the last good state (the failed step changed nothing, velocities of a non-finite
    /// step are zeroed) and continue; the failures are counted.
    Hold,
}

impl FailurePolicy {
    /// Every policy, by name.
    pub const NAMES: [&'static str; 3] = ["stop", "reset", "hold"];

    /// The policy's name in scene files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FailurePolicy::Stop => "stop",
            FailurePolicy::Reset => "reset",
            FailurePolicy::Hold => "hold",
        }
    }
}

impl std::str::FromStr for FailurePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stop" => Ok(FailurePolicy::Stop),
            "reset" => Ok(FailurePolicy::Reset),
            "hold" => Ok(FailurePolicy::Hold),
            _ => Err(format!("unknown on_failure policy '{s}' (expected one of: {})", FailurePolicy::NAMES.join(", "))),
        }
    }
}

/// A failed step: which one, when, why.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StepFailure {
    /// The step's number, counted from 1 over the steps attempted in the run.
    pub step: u64,
    /// Simulated time at the start of the step (s).
    pub time_s: f64,
    /// What went wrong ([`StepReport::failure_cause`]).
    pub cause: &'static str,
}

impl StepFailure {
    /// The failure of a step, if it failed: `step` is its number (from 1), `time_s` the
    /// simulated time at its start (s).
    pub fn of(report: &StepReport, step: u64, time_s: f64) -> Option<Self> {
        report.failure_cause().map(|cause| StepFailure { step, time_s, cause })
    }
}

impl std::fmt::Display for StepFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {} (t = {:.6} s) failed: {}", self.step, self.time_s, self.cause)
    }
}

/// Per-joint command tracks built from scene keyframes.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// `(velocity index, [(time s, position target)])`, interpolated linearly.
    positions: Vec<(usize, Vec<(f64, f64)>)>,
    /// `(velocity index, [(time s, effort)])`, zero-order hold.
    efforts: Vec<(usize, Vec<(f64, f64)>)>,
    /// The script repeats with this period (s): times are read modulo it.
    period_s: Option<f64>,
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

    /// The same script, repeating with period `period_s` (s): at time `t` it commands what it
    /// commands at `t mod period_s`.
    pub fn periodic(mut self, period_s: f64) -> Self {
        self.period_s = Some(period_s);
        self
    }

    /// `true` when the script commands nothing.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty() && self.efforts.is_empty()
    }

    /// Writes the scripted targets at time `t` (s) into `cmd`. Before a joint's first keyframe its
    /// command is left unchanged.
    pub fn apply(&self, t: f64, cmd: &mut Commands) {
        let t = match self.period_s {
            Some(p) if p > 0.0 => t.rem_euclid(p),
            _ => t,
        };
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
    /// Episode length in steps: every this many steps, [`Simulation::step`] first calls
    /// [`Simulation::restart_episode`] (the scene's `reset_period_s`).
    pub reset_period_steps: Option<u64>,
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
            reset_period_steps: None,
        }
    }

    /// Applies the script and advances one step (restarting the episode first when the reset
    /// period has elapsed).
    pub fn step(&mut self) -> StepReport {
        if let Some(n) = self.reset_period_steps {
            if self.state.step_count > 0 && self.state.step_count % n == 0 {
                self.restart_episode();
            }
        }
        self.script.apply(self.state.time_s, &mut self.commands);
        step(&self.model, &mut self.state, &mut self.workspace, &self.commands)
    }

    /// Applies `policy` after a failed step: [`FailurePolicy::Reset`] restarts the episode
    /// ([`Simulation::restart_episode`]); `Hold` and `Stop` leave the last good state (the
    /// caller stops on `Stop`). Allocates nothing.
    pub fn apply_failure_policy(&mut self, policy: FailurePolicy) {
        if policy == FailurePolicy::Reset {
            self.restart_episode();
        }
    }

    /// Back to the initial positions, velocities and commands, with no warm start, keeping the
    /// time and step count (so the script goes on). Allocates nothing.
    pub fn restart_episode(&mut self) {
        // the initial state has no warm start and no weld impulses
        self.state.copy_motion_from(&self.initial_state);
        self.commands.copy_from(&self.initial_commands);
    }

    /// Back to the initial state and commands. Allocates nothing.
    pub fn reset(&mut self) {
        self.state.copy_from(&self.initial_state);
        self.commands.copy_from(&self.initial_commands);
    }
}
