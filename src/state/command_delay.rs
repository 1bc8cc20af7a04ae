//! The command transport delay: the scene's `command_delay_s` (a bus, a controller cycle, a
//! motor driver's latency) between the commands a controller sends and the ones the joints act
//! on.
//!
//! Every step pushes the commands it was given into a ring of the last `⌈delay / dt⌉ + 1`
//! steps' commands, and the step acts on the commands of time `t − delay`: with
//! `delay = (n + f) dt` (`n` whole steps, `0 ≤ f < 1`), the targets and feed-forward efforts are
//! `(1 − f) c[k − n] + f c[k − n − 1]`, linear between the two steps around `t − delay`, so that
//! a response depends continuously on the delay (which system identification needs: a delay
//! rounded to whole steps has a zero derivative). The command mode and gains are the nearer
//! sample's. Before the ring has `n + 1` entries the oldest commands hold (a controller's first
//! command had not arrived yet: the joints hold what they were started with).
//!
//! The ring is part of [`super::State`]: a snapshot restores it, and a restored run continues
//! bit for bit. It is sized once from the model and never allocates in the step.

use super::Commands;
use crate::model::Model;

/// The last steps' commands (see the module docs).
#[derive(Clone, Debug, serde::Serialize)]
pub struct CommandDelayLine {
    /// Whole steps of delay `n`.
    whole_steps: usize,
    /// Fraction `f` of a further step, in `[0, 1)`.
    fraction: f64,
    /// Ring of `n + 2` command vectors (empty when there is no delay).
    ring: Vec<Commands>,
    /// Commands pushed so far (saturates at the ring's length).
    filled: usize,
    /// Slot of the newest entry.
    newest: usize,
}

impl CommandDelayLine {
    /// The delay line of `model` (`model.command_delay_s`, at `model.timestep_s`), empty.
    pub fn new(model: &Model) -> Self {
        let steps = if model.timestep_s > 0.0 { (model.command_delay_s / model.timestep_s).max(0.0) } else { 0.0 };
        // a delay within a rounding error of a whole number of steps is that number
        let rounded = steps.round();
        let steps = if (steps - rounded).abs() < 1e-9 { rounded } else { steps };
        let whole_steps = steps.floor() as usize;
        let fraction = steps - steps.floor();
        let len = if steps > 0.0 { whole_steps + 2 } else { 0 };
        CommandDelayLine { whole_steps, fraction, ring: (0..len).map(|_| Commands::new(model)).collect(), filled: 0, newest: 0 }
    }

    /// `true` when the model has no command delay (commands act in the step they are given).
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Pushes `given` (this step's commands) and writes the commands of `t − delay` into `out`.
    /// Allocates nothing.
    pub fn push_and_delay(&mut self, given: &Commands, out: &mut Commands) {
        let len = self.ring.len();
        if len == 0 {
            out.copy_from(given);
            return;
        }
        self.newest = if self.filled == 0 { 0 } else { (self.newest + 1) % len };
        self.ring[self.newest].copy_from(given);
        self.filled = (self.filled + 1).min(len);
        // the entry `back` steps before the newest, or the oldest one pushed
        let at = |back: usize| (self.newest + len - back.min(self.filled - 1)) % len;
        let (near, far) = (&self.ring[at(self.whole_steps)], &self.ring[at(self.whole_steps + 1)]);
        let f = self.fraction;
        for k in 0..out.position.len() {
            out.position[k] = (1.0 - f) * near.position[k] + f * far.position[k];
            out.velocity[k] = (1.0 - f) * near.velocity[k] + f * far.velocity[k];
            out.effort[k] = (1.0 - f) * near.effort[k] + f * far.effort[k];
            out.mode[k] = if f <= 0.5 { near.mode[k] } else { far.mode[k] };
        }
    }

    /// Empties the line (an episode restart: the next commands start a new history). Allocates
    /// nothing.
    pub fn clear(&mut self) {
        self.filled = 0;
        self.newest = 0;
    }

    /// Overwrites `self` with `other` (the line of the same model) without allocating.
    pub fn copy_from(&mut self, other: &CommandDelayLine) {
        debug_assert_eq!(self.ring.len(), other.ring.len());
        for (a, b) in self.ring.iter_mut().zip(&other.ring) {
            a.copy_from(b);
        }
        self.filled = other.filled;
        self.newest = other.newest;
    }
}

/// Serialize support for [`Commands`] inside the delay line (the state is serialized for
/// snapshots and debugging).
impl serde::Serialize for Commands {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Commands", 4)?;
        st.serialize_field("mode", &self.mode)?;
        st.serialize_field("position", &self.position)?;
        st.serialize_field("velocity", &self.velocity)?;
        st.serialize_field("effort", &self.effort)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ControlMode, ModelBuilder};

    fn model(delay_s: f64) -> Model {
        let mut b = ModelBuilder::new("test");
        b.timestep_s = 0.001;
        let mut m = b.finalize().unwrap();
        m.nv = 1;
        m.default_control = vec![ControlMode::Effort];
        m.command_delay_s = delay_s;
        m
    }

    fn effort_after(line: &mut CommandDelayLine, inputs: &[f64]) -> Vec<f64> {
        let m = model(0.0);
        let (mut given, mut out) = (Commands::new(&m), Commands::new(&m));
        inputs
            .iter()
            .map(|&e| {
                given.effort[0] = e;
                line.push_and_delay(&given, &mut out);
                out.effort[0]
            })
            .collect()
    }

    #[test]
    fn whole_steps_shift_the_commands_and_the_first_one_holds() {
        let mut line = CommandDelayLine::new(&model(0.003));
        assert_eq!(effort_after(&mut line, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), vec![1.0, 1.0, 1.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn a_fraction_of_a_step_interpolates_linearly() {
        let mut line = CommandDelayLine::new(&model(0.0025));
        let out = effort_after(&mut line, &[0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        // t − 2.5 dt lies halfway between the commands of k − 2 and k − 3
        assert_eq!(&out[3..], &[5.0, 15.0, 25.0]);
    }

    #[test]
    fn no_delay_passes_commands_through() {
        let mut line = CommandDelayLine::new(&model(0.0));
        assert!(line.is_empty());
        assert_eq!(effort_after(&mut line, &[1.0, 2.0]), vec![1.0, 2.0]);
    }
}
