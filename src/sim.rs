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
    /// Position targets (rad or m), interpolated linearly between keyframes.
    positions: Vec<Track>,
    /// Efforts (N·m or N), held from one keyframe to the next.
    efforts: Vec<Track>,
    /// The script repeats with this period (s): times are read modulo it.
    period_s: Option<f64>,
}

/// One joint's keyframes and where the last lookup found the time.
#[derive(Clone, Debug, Default)]
struct Track {
    /// Velocity index of the joint.
    dof: usize,
    /// `(time s, value)`, in the order of the scene's keyframes (times non-decreasing).
    keys: Vec<(f64, f64)>,
    /// The number of keys at or before the time of the last lookup: the next lookup, a step
    /// later, finds the same segment or the next one without a search.
    cursor: usize,
}

impl Track {
    /// The number of keys with time `≤ t` (what `partition_point` returns), from the cursor when
    /// `t` is in its segment or the next one, by binary search otherwise (time went back, a period
    /// wrapped, or a jump).
    fn keys_up_to(&mut self, t: f64) -> usize {
        let keys = &self.keys;
        let at_or_before = |i: usize| i == 0 || keys[i - 1].0 <= t;
        let after = |i: usize| i == keys.len() || keys[i].0 > t;
        let c = self.cursor;
        let i = if at_or_before(c) && after(c) {
            c
        } else if c < keys.len() && at_or_before(c + 1) && after(c + 1) {
            c + 1
        } else {
            keys.partition_point(|&(tk, _)| tk <= t)
        };
        self.cursor = i;
        i
    }
}

impl Script {
    /// Builds tracks from keyframes (joint names already validated against `model`).
    pub fn new(model: &Model, keyframes: &[Keyframe]) -> Self {
        let mut s = Script::default();
        for k in keyframes {
            for (name, &value) in &k.positions {
                let dof = model.joint_dof(name).expect("validated");
                match s.positions.iter_mut().find(|track| track.dof == dof) {
                    Some(track) => track.keys.push((k.time_s, value)),
                    None => s.positions.push(Track { dof, keys: vec![(k.time_s, value)], cursor: 0 }),
                }
            }
            for (name, &value) in &k.efforts {
                let dof = model.joint_dof(name).expect("validated");
                match s.efforts.iter_mut().find(|track| track.dof == dof) {
                    Some(track) => track.keys.push((k.time_s, value)),
                    None => s.efforts.push(Track { dof, keys: vec![(k.time_s, value)], cursor: 0 }),
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
    /// command is left unchanged. Any `t` may follow any other; times that move forward step by
    /// step are found without a search. Allocates nothing.
    pub fn apply(&mut self, t: f64, cmd: &mut Commands) {
        let t = match self.period_s {
            Some(p) if p > 0.0 => t.rem_euclid(p),
            _ => t,
        };
        for track in &mut self.positions {
            let i = track.keys_up_to(t);
            if i == 0 {
                continue;
            }
            let keys = &track.keys;
            cmd.position[track.dof] = if i >= keys.len() {
                keys[keys.len() - 1].1
            } else {
                let (t0, v0) = keys[i - 1];
                let (t1, v1) = keys[i];
                if t1 > t0 { v0 + (v1 - v0) * (t - t0) / (t1 - t0) } else { v1 }
            };
        }
        for track in &mut self.efforts {
            let i = track.keys_up_to(t);
            if i > 0 {
                cmd.effort[track.dof] = track.keys[i - 1].1;
            }
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
        let mut state = State::new(&model);
        let mut workspace = Workspace::new(&model, solver);
        workspace.solver.prepare_state(&mut state);
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

#[cfg(test)]
mod tests {
    use super::Track;

    #[test]
    fn the_cursor_finds_the_segment_a_binary_search_finds_whatever_the_order_of_times() {
        // keys with repeated times (a step in a track), lookups forward by small and large steps,
        // backward, and outside the keys at both ends
        let keys = vec![(0.0, 0.0), (0.1, 1.0), (0.1, 2.0), (0.25, 3.0), (0.4, 4.0), (1.0, 5.0), (1.0, 6.0), (2.5, 7.0)];
        let mut track = Track { dof: 0, keys: keys.clone(), cursor: 0 };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut t = -0.2;
        for k in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            t = match k % 5 {
                0 => u * 3.2 - 0.3,              // anywhere
                1 => t - 0.05 * u,               // back a little
                _ => t + 0.002 + 0.01 * u,       // forward, a step at a time
            };
            let probe = if k % 97 == 0 { keys[(k / 97) % keys.len()].0 } else { t }; // exactly on a key
            let expected = keys.partition_point(|&(tk, _)| tk <= probe);
            assert_eq!(track.keys_up_to(probe), expected, "t = {probe}");
        }
    }
}
