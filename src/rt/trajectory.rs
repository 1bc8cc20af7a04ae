//! Trajectory following on the real-time thread (trajectory_msgs/JointTrajectory semantics).
//!
//! A trajectory starts at `start_time` (sim time at reception plus the delay from its
//! `header.stamp`; 0 = immediately). Before its first point it moves from the state at the start
//! (an implicit point at `time_from_start = 0` with the measured position and velocity, as
//! ros2_controllers' joint_trajectory_controller does) unless the first point is itself at 0.
//! Between points positions are interpolated linearly or with cubic Hermite polynomials; the
//! velocity target is the derivative. After the last point the last position is held with zero
//! velocity. A joint that receives a direct command leaves the trajectory ([`ActiveTrajectory::release`]).
//!
//! Cubic interpolation without velocities in the message: interior points get the mean of the
//! adjacent segment slopes (zero where the slopes change sign, so no overshoot at turning
//! points), the last point gets zero.

use super::messages::{Interpolation, JointLayout, TrajectoryCommand};

/// The trajectory being followed, in storage swapped in from the command queue (no copies, no
/// allocation).
pub struct ActiveTrajectory {
    buf: Box<TrajectoryCommand>,
    start_time_s: f64,
    active: bool,
    start_pos: Vec<f64>,
    start_vel: Vec<f64>,
    owned: Vec<bool>,
    owned_count: usize,
    cursor: usize,
}

/// Cubic Hermite position and derivative on a segment of length `h` at fraction `s`.
#[inline]
fn hermite(p0: f64, v0: f64, p1: f64, v1: f64, h: f64, s: f64) -> (f64, f64) {
    let s2 = s * s;
    let s3 = s2 * s;
    let p = (2.0 * s3 - 3.0 * s2 + 1.0) * p0 + (s3 - 2.0 * s2 + s) * h * v0 + (-2.0 * s3 + 3.0 * s2) * p1 + (s3 - s2) * h * v1;
    let v = (6.0 * s2 - 6.0 * s) / h * p0 + (3.0 * s2 - 4.0 * s + 1.0) * v0 + (-6.0 * s2 + 6.0 * s) / h * p1 + (3.0 * s2 - 2.0 * s) * v1;
    (p, v)
}

impl ActiveTrajectory {
    /// Idle, with `spare` as its storage (sized like the queue's buffers).
    pub fn new(spare: TrajectoryCommand) -> Self {
        let n = spare.max_joints();
        ActiveTrajectory { buf: Box::new(spare), start_time_s: 0.0, active: false, start_pos: vec![0.0; n], start_vel: vec![0.0; n], owned: vec![false; n], owned_count: 0, cursor: 0 }
    }

    /// Whether a trajectory is being followed (until its last point's time).
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Sequence number of the current (or last) trajectory.
    pub fn seq(&self) -> u64 {
        self.buf.seq
    }

    /// Starts `next`, returning the previous storage for recycling. `now_s` is the sim time;
    /// `q(slot)` / `v(slot)` give the measured state of a joint slot.
    pub fn start(&mut self, next: Box<TrajectoryCommand>, now_s: f64, interpolation: Interpolation, q: impl Fn(usize) -> f64, v: impl Fn(usize) -> f64) -> Box<TrajectoryCommand> {
        let old = std::mem::replace(&mut self.buf, next);
        let nj = self.buf.num_joints.min(self.start_pos.len());
        self.start_time_s = now_s + self.buf.start_delay_s;
        for k in 0..nj {
            let s = self.buf.slots[k];
            self.start_pos[k] = q(s);
            self.start_vel[k] = v(s);
            self.owned[k] = true;
        }
        self.owned_count = nj;
        self.cursor = 0;
        self.active = self.buf.num_points > 0 && nj > 0;
        if self.active && interpolation == Interpolation::Cubic && !self.buf.has_velocities {
            self.estimate_velocities();
        }
        old
    }

    fn estimate_velocities(&mut self) {
        let b = &mut *self.buf;
        let (nj, np) = (b.num_joints, b.num_points);
        for k in 0..nj {
            for p in 0..np {
                let v = if p + 1 == np {
                    0.0
                } else {
                    let (t_prev, x_prev) = if p == 0 { (0.0, self.start_pos[k]) } else { (b.times[p - 1], b.positions[(p - 1) * nj + k]) };
                    let (t, x) = (b.times[p], b.positions[p * nj + k]);
                    let (t_next, x_next) = (b.times[p + 1], b.positions[(p + 1) * nj + k]);
                    let d_next = (x_next - x) / (t_next - t);
                    if t - t_prev <= 0.0 {
                        d_next
                    } else {
                        let d_prev = (x - x_prev) / (t - t_prev);
                        if d_prev * d_next <= 0.0 {
                            0.0
                        } else {
                            0.5 * (d_prev + d_next)
                        }
                    }
                };
                b.velocities[p * nj + k] = v;
            }
        }
    }

    /// A direct command took over joint `slot`: stop driving it. The trajectory ends when it
    /// drives no joint.
    pub fn release(&mut self, slot: usize) {
        if !self.active {
            return;
        }
        for k in 0..self.buf.num_joints.min(self.owned.len()) {
            if self.buf.slots[k] == slot && self.owned[k] {
                self.owned[k] = false;
                self.owned_count -= 1;
            }
        }
        if self.owned_count == 0 {
            self.active = false;
        }
    }

    /// Stops following (reset, watchdog).
    pub fn cancel(&mut self) {
        self.active = false;
    }

    /// Writes the targets at sim time `now_s` into the simulation's commands, as the real-time
    /// loop does before each step (a bag replay calls the same code): position-controlled joints
    /// get position and velocity targets, velocity-controlled joints the velocity; effort and
    /// passive joints are left alone.
    pub fn apply(&mut self, now_s: f64, interpolation: Interpolation, layout: &JointLayout, commands: &mut crate::step::Commands) {
        self.sample(now_s, interpolation, |slot, p, v| {
            let k = layout.joints[slot].v_index;
            match commands.mode[k] {
                crate::model::ControlMode::Position { .. } => {
                    commands.position[k] = p;
                    commands.velocity[k] = v;
                }
                crate::model::ControlMode::Velocity { .. } => commands.velocity[k] = v,
                _ => {}
            }
        });
    }

    /// Writes the targets at sim time `now_s` through `set(slot, position, velocity)`. Before the
    /// start time nothing is written; after the last point the last position is written with zero
    /// velocity once and the trajectory becomes inactive.
    pub fn sample(&mut self, now_s: f64, interpolation: Interpolation, mut set: impl FnMut(usize, f64, f64)) {
        if !self.active {
            return;
        }
        let tau = now_s - self.start_time_s;
        if tau < 0.0 {
            return;
        }
        let b = &*self.buf;
        let (nj, np) = (b.num_joints, b.num_points);
        let last_t = b.times[np - 1];
        if tau >= last_t {
            for k in 0..nj {
                if self.owned[k] {
                    set(b.slots[k], b.positions[(np - 1) * nj + k], 0.0);
                }
            }
            self.active = false;
            return;
        }
        // segment end index: first point with time > tau (cursor only moves forward)
        while self.cursor < np && b.times[self.cursor] <= tau {
            self.cursor += 1;
        }
        let i = self.cursor; // i < np since tau < last_t
        let (t0, t1) = (if i == 0 { 0.0 } else { b.times[i - 1] }, b.times[i]);
        let h = t1 - t0;
        let s = if h > 0.0 { (tau - t0) / h } else { 1.0 };
        for k in 0..nj {
            if !self.owned[k] {
                continue;
            }
            let (p0, v0) = if i == 0 { (self.start_pos[k], self.start_vel[k]) } else { (b.positions[(i - 1) * nj + k], b.velocities[(i - 1) * nj + k]) };
            let (p1, v1) = (b.positions[i * nj + k], b.velocities[i * nj + k]);
            let (p, v) = match interpolation {
                Interpolation::Linear => (p0 + (p1 - p0) * s, if h > 0.0 { (p1 - p0) / h } else { 0.0 }),
                Interpolation::Cubic => {
                    if h > 0.0 {
                        hermite(p0, v0, p1, v1, h, s)
                    } else {
                        (p1, v1)
                    }
                }
            };
            set(b.slots[k], p, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traj(slots: &[usize], times: &[f64], pos: &[&[f64]], vel: Option<&[&[f64]]>) -> Box<TrajectoryCommand> {
        let mut t = TrajectoryCommand::new(4, 8);
        t.num_joints = slots.len();
        t.slots[..slots.len()].copy_from_slice(slots);
        t.num_points = times.len();
        t.times[..times.len()].copy_from_slice(times);
        for (p, row) in pos.iter().enumerate() {
            for (k, &x) in row.iter().enumerate() {
                t.positions[p * slots.len() + k] = x;
            }
        }
        if let Some(vel) = vel {
            t.has_velocities = true;
            for (p, row) in vel.iter().enumerate() {
                for (k, &x) in row.iter().enumerate() {
                    t.velocities[p * slots.len() + k] = x;
                }
            }
        }
        Box::new(t)
    }

    fn at(a: &mut ActiveTrajectory, t: f64, interp: Interpolation) -> Vec<(usize, f64, f64)> {
        let mut out = vec![];
        a.sample(t, interp, |s, p, v| out.push((s, p, v)));
        out
    }

    #[test]
    fn linear_from_the_current_state_through_the_points_then_hold() {
        let mut a = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let _ = a.start(traj(&[2], &[1.0, 3.0], &[&[1.0], &[-1.0]], None), 10.0, Interpolation::Linear, |_| 0.0, |_| 0.0);
        assert!(a.is_active());
        let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
        let r = at(&mut a, 10.5, Interpolation::Linear);
        assert_eq!(r.len(), 1);
        assert!(r[0].0 == 2 && close(r[0].1, 0.5) && close(r[0].2, 1.0), "{r:?}");
        let r = at(&mut a, 12.0, Interpolation::Linear);
        assert!(close(r[0].1, 0.0) && close(r[0].2, -1.0), "{r:?}");
        let r = at(&mut a, 13.5, Interpolation::Linear);
        assert!(close(r[0].1, -1.0) && r[0].2 == 0.0);
        assert!(!a.is_active());
        assert!(at(&mut a, 14.0, Interpolation::Linear).is_empty());
    }

    #[test]
    fn delayed_start_writes_nothing_before_it() {
        let mut t = traj(&[0], &[1.0], &[&[1.0]], None);
        t.start_delay_s = 0.5;
        let mut a = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let _ = a.start(t, 0.0, Interpolation::Linear, |_| 0.0, |_| 0.0);
        assert!(at(&mut a, 0.4, Interpolation::Linear).is_empty());
        let r = at(&mut a, 1.0, Interpolation::Linear);
        assert!((r[0].1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn cubic_hits_points_and_given_velocities() {
        let mut a = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let _ = a.start(traj(&[0, 1], &[1.0, 2.0], &[&[1.0, 0.0], &[2.0, 1.0]], Some(&[&[0.5, 0.0], &[0.0, 0.0]])), 0.0, Interpolation::Cubic, |_| 0.0, |_| 0.0);
        // at a knot: position and velocity of the point
        let r = at(&mut a, 1.0, Interpolation::Cubic);
        assert!((r[0].1 - 1.0).abs() < 1e-12 && (r[0].2 - 0.5).abs() < 1e-12, "{r:?}");
        // velocity is the derivative of position (finite difference)
        let mut b = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let _ = b.start(traj(&[0, 1], &[1.0, 2.0], &[&[1.0, 0.0], &[2.0, 1.0]], Some(&[&[0.5, 0.0], &[0.0, 0.0]])), 0.0, Interpolation::Cubic, |_| 0.0, |_| 0.0);
        let e = 1e-6;
        let p1 = at(&mut b, 1.3, Interpolation::Cubic)[0].1;
        let r2 = at(&mut b, 1.3 + e, Interpolation::Cubic)[0];
        assert!(((r2.1 - p1) / e - r2.2).abs() < 1e-4);
    }

    #[test]
    fn cubic_without_velocities_does_not_overshoot_a_turning_point() {
        let mut a = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let _ = a.start(traj(&[0], &[1.0, 2.0, 3.0], &[&[1.0], &[2.0], &[0.0]], None), 0.0, Interpolation::Cubic, |_| 0.0, |_| 0.0);
        let mut max = f64::MIN;
        for i in 0..3000 {
            let r = at(&mut a, i as f64 * 1e-3, Interpolation::Cubic);
            if let Some(&(_, p, _)) = r.first() {
                max = max.max(p);
            }
        }
        assert!(max <= 2.0 + 1e-9, "overshoot {max}");
    }

    #[test]
    fn released_joints_are_left_alone_and_swap_returns_the_old_buffer() {
        let mut a = ActiveTrajectory::new(TrajectoryCommand::new(4, 8));
        let first = traj(&[0, 1], &[1.0], &[&[1.0, 1.0]], None);
        let first_ptr = &*first as *const TrajectoryCommand;
        let _spare = a.start(first, 0.0, Interpolation::Linear, |_| 0.0, |_| 0.0);
        a.release(1);
        let r = at(&mut a, 0.5, Interpolation::Linear);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, 0);
        a.release(0);
        assert!(!a.is_active());
        let back = a.start(traj(&[0], &[1.0], &[&[0.0]], None), 0.0, Interpolation::Linear, |_| 0.0, |_| 0.0);
        assert_eq!(&*back as *const TrajectoryCommand, first_ptr);
    }
}
