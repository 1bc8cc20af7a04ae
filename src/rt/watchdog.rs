//! The command watchdog: when no command has arrived for `timeout_s`, it fires once; the loop
//! then applies the configured [`WatchdogAction`] until the next command, which restores the
//! configured modes (with position targets at the current positions):
//! - `hold`: PD to the positions at the moment it fired (the joint's own gains for position
//!   joints, `hold_kp`/`hold_kd` for the others) plus the bias torque h(q, v) of the last step as
//!   feed-forward (gravity compensation, so the hold does not sag by the PD's steady-state error);
//! - `zero_effort`: effort mode with zero effort (the robot goes limp);
//! - `damp`: velocity servo to zero with gain `damping`.
//!
//! The watchdog is armed by the first command (a simulator that has never been commanded keeps
//! its initial targets) and while a trajectory runs it is fed by the loop. Times are seconds in
//! the loop's clock: wall time in `realtime` and `lockstep` modes, sim time in `sim_time` mode.

pub use super::messages::WatchdogAction;

/// Watchdog settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WatchdogConfig {
    /// Time without commands before the watchdog fires (s); ≤ 0 disables it.
    pub timeout_s: f64,
    /// What happens then.
    pub action: WatchdogAction,
    /// Stiffness used by `hold` for joints without PD gains (N·m/rad or N/m).
    pub hold_kp: f64,
    /// Damping used by `hold` for joints without PD gains (N·m·s/rad or N·s/m).
    pub hold_kd: f64,
    /// Gain of the `damp` action (N·m·s/rad or N·s/m).
    pub damping: f64,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        WatchdogConfig { timeout_s: 0.5, action: WatchdogAction::Hold, hold_kp: 100.0, hold_kd: 10.0, damping: 5.0 }
    }
}

/// The watchdog state machine (no allocation, no clock of its own).
#[derive(Clone, Debug, Default)]
pub struct Watchdog {
    last_feed_s: Option<f64>,
    tripped: bool,
}

/// What [`Watchdog::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchdogEvent {
    /// Nothing changed.
    None,
    /// The watchdog fired now: apply the action.
    Fired,
}

impl Watchdog {
    /// A disarmed watchdog.
    pub fn new() -> Self {
        Self::default()
    }
    /// A command arrived at `now_s`. Returns `true` when the watchdog had fired (the caller
    /// restores the configured modes).
    pub fn feed(&mut self, now_s: f64) -> bool {
        self.last_feed_s = Some(now_s);
        std::mem::replace(&mut self.tripped, false)
    }
    /// Checks the timeout at `now_s`.
    pub fn poll(&mut self, now_s: f64, timeout_s: f64) -> WatchdogEvent {
        if self.tripped || timeout_s <= 0.0 || !timeout_s.is_finite() {
            return WatchdogEvent::None;
        }
        match self.last_feed_s {
            Some(t) if now_s - t > timeout_s => {
                self.tripped = true;
                WatchdogEvent::Fired
            }
            _ => WatchdogEvent::None,
        }
    }
    /// Whether it has fired and no command arrived since.
    pub fn is_tripped(&self) -> bool {
        self.tripped
    }
    /// Disarms (reset): it waits for a new first command.
    pub fn disarm(&mut self) {
        self.last_feed_s = None;
        self.tripped = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_once_after_the_timeout_and_clears_on_the_next_command() {
        let mut w = Watchdog::new();
        assert_eq!(w.poll(100.0, 0.5), WatchdogEvent::None, "not armed before the first command");
        assert!(!w.feed(1.0));
        assert_eq!(w.poll(1.4, 0.5), WatchdogEvent::None);
        assert_eq!(w.poll(1.51, 0.5), WatchdogEvent::Fired);
        assert!(w.is_tripped());
        assert_eq!(w.poll(5.0, 0.5), WatchdogEvent::None, "fires once");
        assert!(w.feed(5.0), "the next command reports the recovery");
        assert!(!w.is_tripped());
        assert_eq!(w.poll(5.2, 0.5), WatchdogEvent::None);
    }

    #[test]
    fn disabled_and_disarmed() {
        let mut w = Watchdog::new();
        w.feed(0.0);
        assert_eq!(w.poll(10.0, 0.0), WatchdogEvent::None);
        assert_eq!(w.poll(10.0, f64::NAN), WatchdogEvent::None);
        w.disarm();
        assert_eq!(w.poll(100.0, 0.5), WatchdogEvent::None);
    }
}
