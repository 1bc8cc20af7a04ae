//! [`RunRecorder`]: records a headless run (or any loop stepping a [`Simulation`]) as the node
//! would publish it: the node's topics at a fixed rate, the commands whenever they change
//! (`joint_commands`, full position / velocity / effort vectors of the actuated joints, stamped
//! with the time of the step they were applied to), diagnostics at 1 Hz, and once at the start
//! the latched `robot_description` of every robot and `tf_static` of the fixed bases (so that the
//! bag shows the robot in Foxglove or RViz). Stamps and log times are simulation time (ns). The
//! queue is lossless (batch runs).

use super::msgs;
use super::topics::{record_latched, SampleTopicOptions, SampleTopics};
use crate::bag::robots::{latched_messages, RobotDescription};
use super::{BagError, BagRecorder, RecordHandle, RecorderOptions, RecordingSummary};
use crate::rt::messages::{JointLayout, Sample, StepSummary};
use crate::sim::Simulation;
use crate::step::StepReport;
use std::path::Path;

/// Records a run; see the module docs.
pub struct RunRecorder {
    rec: BagRecorder,
    h: RecordHandle,
    topics: SampleTopics,
    layout: JointLayout,
    sample: Sample,
    every: u64,
    diag_every: u64,
    last_cmd: Option<[Vec<f64>; 3]>,
    names: Vec<String>,
}

impl RunRecorder {
    /// Creates the bag at `dir` (a new directory) for `sim`'s model, recording at `rate_hz`.
    pub fn start(dir: &Path, rate_hz: f64, sim: &Simulation) -> Result<Self, BagError> {
        let rate = rate_hz;
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(BagError::Invalid { path: dir.display().to_string(), reason: format!("record rate must be positive, got {rate} Hz") });
        }
        let dt = sim.model.timestep_s;
        let opts = RecorderOptions { lossless: true, ..Default::default() };
        let mut rec = BagRecorder::start(dir, &opts)?;
        let layout = JointLayout::new(&sim.model);
        let topic_opts = SampleTopicOptions::default();
        let topics = SampleTopics::register(&mut rec, &layout, &topic_opts);
        // robot_description per robot and tf_static, once, latched, as the node records them
        let robots = RobotDescription::from_model(&sim.model).map_err(|reason| BagError::Invalid { path: dir.display().to_string(), reason })?;
        let start_ns = crate::rt::clock::secs_to_ns(sim.state.time_s);
        record_latched(&mut rec, &topic_opts.namespace, start_ns, latched_messages(&robots, &topic_opts.odom_frame, start_ns));
        let h = rec.handle();
        Ok(RunRecorder {
            rec,
            h,
            topics,
            sample: Sample::new(&layout),
            names: layout.joints.iter().map(|j| j.name.clone()).collect(),
            layout,
            every: ((1.0 / (rate * dt)).round() as u64).max(1),
            diag_every: ((1.0 / dt).round() as u64).max(1),
            last_cmd: None,
        })
    }

    /// Call once before the first step (`stepped` = `None`) and after every step with the time
    /// before the step and its report; `rtf` is the real-time factor for the diagnostics.
    pub fn tick(&mut self, sim: &Simulation, stepped: Option<(f64, &StepReport)>, rtf: f64) {
        let ns = |t: f64| crate::rt::clock::secs_to_ns(t);
        if let Some((t_before, r)) = stepped {
            let c = &sim.commands;
            let cmd = [0, 1, 2].map(|a| self.layout.joints.iter().map(|j| [&c.position, &c.velocity, &c.effort][a][j.v_index]).collect::<Vec<f64>>());
            if self.last_cmd.as_ref() != Some(&cmd) {
                let msg = msgs::JointState { header: msgs::Header::new(ns(t_before), ""), name: self.names.clone(), position: cmd[0].clone(), velocity: cmd[1].clone(), effort: cmd[2].clone() };
                self.h.record(self.topics.joint_commands, ns(t_before) as u64, msgs::Msg::JointState(msg));
                self.last_cmd = Some(cmd);
            }
            self.sample.step = StepSummary {
                contacts: r.contacts,
                iterations: r.solve.iterations,
                residual: r.solve.residual,
                converged: r.solve.converged,
                saturated_joints: r.saturated_joints,
                max_penetration_m: r.max_penetration_m,
                ..Default::default()
            };
        }
        let k = sim.state.step_count;
        if k % self.every == 0 {
            self.sample.fill_physics(&self.layout, sim);
            self.topics.record_sample(&self.h, &self.sample, ns(sim.state.time_s));
        }
        if k % self.diag_every == 0 && k > 0 {
            let d = SampleTopics::headless_diagnostics(&self.sample, ns(sim.state.time_s), rtf);
            self.topics.record_diagnostics(&self.h, ns(sim.state.time_s), d);
        }
    }

    /// Closes the bag.
    pub fn finish(self) -> Result<RecordingSummary, BagError> {
        drop(self.h);
        self.rec.finish()
    }
}


/// Runs `sim` for `duration_s` (its script applies) and records it at `rate_hz` into `dir`.
pub fn record_run(sim: &mut Simulation, dir: &Path, rate_hz: f64, duration_s: f64) -> Result<RecordingSummary, BagError> {
    let mut r = RunRecorder::start(dir, rate_hz, sim)?;
    r.tick(sim, None, 0.0);
    let steps = (duration_s / sim.model.timestep_s).round() as u64;
    for _ in 0..steps {
        let t = sim.state.time_s;
        let rep = sim.step();
        r.tick(sim, Some((t, &rep)), 0.0);
    }
    r.finish()
}
