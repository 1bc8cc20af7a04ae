//! The node's ROS parameters: names, types, defaults, validation, read-only rules.
//!
//! [`ParamStore`] implements r2r's `RosParams`, so the standard parameter services
//! (`~/list_parameters`, `~/get_parameters`, `~/set_parameters`, `~/describe_parameters`) serve
//! exactly the parameters declared here, invalid values are refused with a reason, and
//! read-only parameters (scene, solver, time mode, rates fixed at start, scheduling, queues) can
//! only be given at start-up (`--ros-args -p` or a parameter file). Runtime-tunable parameters
//! are forwarded to the real-time thread as control requests by the node.
//!
//! Besides the static list ([`STATIC_PARAMS`]), per-joint PD gains `gains.<joint>.kp` /
//! `gains.<joint>.kd` (position-mode joints; `kd` only for velocity-mode joints) and command
//! groups `groups.<name>.joints` / `groups.<name>.interface` (for each name in `command_groups`)
//! are declared once the scene is loaded.

use crate::contact::SolverConfig;
use crate::model::ControlMode;
use crate::rt::messages::JointLayout;
use r2r::indexmap::IndexMap;
use r2r::{Parameter, ParameterValue, RosParams};

/// The type and range of a parameter.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A double in `[min, max]` (integers are accepted and converted).
    Double {
        /// Minimum.
        min: f64,
        /// Maximum.
        max: f64,
    },
    /// An integer in `[min, max]`.
    Int {
        /// Minimum.
        min: i64,
        /// Maximum.
        max: i64,
    },
    /// A boolean.
    Bool,
    /// A string; one of `choices` unless empty.
    Str {
        /// Allowed values (empty = any).
        choices: &'static [&'static str],
    },
    /// A list of strings.
    StrArray,
    /// A list of integers ≥ 0.
    IntArray,
}

/// A declared parameter.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Name.
    pub name: String,
    /// Type and range.
    pub kind: Kind,
    /// Only settable at start-up.
    pub read_only: bool,
    /// Description (served by `describe_parameters`).
    pub description: &'static str,
    /// Default value.
    pub default: ParameterValue,
}

/// Builds a static parameter description row.
const fn row(name: &'static str, kind: Kind, read_only: bool, description: &'static str) -> (&'static str, Kind, bool, &'static str) {
    (name, kind, read_only, description)
}

const POS: f64 = f64::MAX;

/// The `solver_tolerance` description, with every method's unit and field from the registry.
fn solver_tolerance_description() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let units: Vec<String> = crate::contact::SolverKind::ALL
            .iter()
            .map(|k| {
                let t = k.default_config().tolerance();
                format!("{} {} ({})", k.name(), t.unit, t.field)
            })
            .collect();
        format!("Contact method's main stopping tolerance, in its own unit (logged at startup): {}.", units.join("; "))
    })
}

/// The static parameters: `(name, kind, read_only, description)`. Defaults come from
/// [`default_value`] (some depend on the scene).
pub const STATIC_PARAMS: &[(&str, Kind, bool, &str)] = &[
    row("scene", Kind::Str { choices: &[] }, true, "Scene file (YAML). Empty: the default scene (share/contact_sim/config/default.yaml)."),
    row("solver", Kind::Str { choices: SolverConfig::PARAMETER_CHOICES }, true, "Contact method; scene (or empty): the scene's method and parameters; the scene's kind: its parameters; another: that method's defaults."),
    row("time_mode", Kind::Str { choices: &["realtime", "sim_time", "lockstep"] }, true, "realtime (wall clock), sim_time (publishes /clock) or lockstep (one step per command)."),
    row("rate_hz", Kind::Double { min: 1.0, max: 100_000.0 }, true, "Loop rate in realtime mode (Hz); each cycle is a whole number of time steps."),
    row("publish_rate_hz", Kind::Double { min: 0.1, max: 100_000.0 }, false, "Rate of /joint_states, odometry and /clock, in sim time (Hz)."),
    row("real_time_factor", Kind::Double { min: 0.0, max: 1000.0 }, false, "sim_time mode: sim seconds per wall second; 0 = as fast as allowed."),
    row("solver_max_iterations", Kind::Int { min: 1, max: 1_000_000 }, false, "Contact solver iteration cap (default: the scene's)."),
    row("solver_tolerance", Kind::Double { min: 0.0, max: POS }, false, "Contact method's main stopping tolerance, in its own unit (logged at startup; the units come from the method registry)."),
    row("interpolation", Kind::Str { choices: &["linear", "cubic"] }, false, "Trajectory interpolation of positions (cubic: Hermite with the points' velocities)."),
    row("limit_policy", Kind::Str { choices: &["reject", "clamp"] }, false, "Commands beyond joint limits: reject the message or clamp the values."),
    row("watchdog_timeout_s", Kind::Double { min: 0.0, max: POS }, false, "No command for this long (s) fires the watchdog; 0 disables it."),
    row("watchdog_action", Kind::Str { choices: &["hold", "zero_effort", "damp"] }, false, "What the watchdog does: hold position, zero effort or damp."),
    row("watchdog_hold_kp", Kind::Double { min: 0.0, max: POS }, false, "Hold stiffness for joints without PD gains (N·m/rad or N/m)."),
    row("watchdog_hold_kd", Kind::Double { min: 0.0, max: POS }, false, "Hold damping for joints without PD gains (N·m·s/rad or N·s/m)."),
    row("watchdog_damping", Kind::Double { min: 0.0, max: POS }, false, "Gain of the damp action (N·m·s/rad or N·s/m)."),
    row("overrun_policy", Kind::Str { choices: &["skip", "catch_up"] }, true, "Missed deadlines: skip ahead or catch up (bounded by max_catch_up_cycles)."),
    row("max_catch_up_cycles", Kind::Int { min: 0, max: 1_000_000 }, true, "Catch-up bound (cycles); beyond it deadlines are skipped."),
    row("rt_policy", Kind::Str { choices: &["deadline", "fifo", "other"] }, true, "Scheduling of the loop thread: deadline (falls back to fifo), fifo (falls back to other), other."),
    row("rt_priority", Kind::Int { min: 1, max: 99 }, true, "SCHED_FIFO priority of the loop thread."),
    row("rt_deadline_runtime_us", Kind::Int { min: 0, max: 10_000_000 }, true, "SCHED_DEADLINE runtime budget per period (µs); 0 = 80 % of the period."),
    row("rt_cpu_affinity", Kind::IntArray, true, "CPUs the loop thread may run on; empty = any. (Excludes SCHED_DEADLINE.)"),
    row("rt_lock_memory", Kind::Bool, true, "mlockall() the process before the loop starts."),
    row("ros_thread_priority", Kind::Int { min: 0, max: 98 }, true, "SCHED_FIFO priority of the node's other threads (ROS executor, publisher, DDS), below rt_priority; 0 = normal scheduling."),
    row("on_failure", Kind::Str { choices: &["hold", "reset", "stop"] }, true, "A failed step (singular mass matrix, non-finite state): hold (keep the last good state, go on), reset (initial state, go on) or stop (pause stepping; ~/reset to go on). The cause is logged and shown in /diagnostics."),
    row("start_paused", Kind::Bool, true, "Start with stepping paused (~/pause false to run)."),
    row("diagnostics_rate_hz", Kind::Double { min: 0.01, max: 100.0 }, true, "Rate of /diagnostics (Hz)."),
    row("odom_frame", Kind::Str { choices: &[] }, true, "frame_id of the odometry messages, of the world-axes contact wrenches and of the contact markers (world-fixed)."),
    row("contact_markers_rate_hz", Kind::Double { min: 0.0, max: 1000.0 }, true, "Rate of contact_markers (visualization_msgs/MarkerArray, wall clock, Hz); 0 = off."),
    row("contact_marker_scale", Kind::Double { min: 0.0, max: POS }, true, "Length of the contact force arrows (m per N)."),
    row("max_contact_points", Kind::Int { min: 0, max: 100_000 }, true, "Contact points copied out of the loop per sample (preallocated); more are not drawn."),
    row("command_groups", Kind::StrArray, true, "Names of Float64MultiArray command groups (<name>/commands); empty: one position group per robot, named after it."),
    row("command_queue_size", Kind::Int { min: 1, max: 4096 }, true, "Joint commands in flight to the loop (the oldest is dropped when full)."),
    row("sample_queue_size", Kind::Int { min: 1, max: 65536 }, true, "States in flight from the loop (the oldest is dropped when full)."),
    row("max_trajectory_points", Kind::Int { min: 1, max: 100_000 }, true, "Points a JointTrajectory may have (preallocated)."),
    row("record_bag", Kind::Str { choices: &[] }, true, "Record a rosbag2 bag (MCAP) of every published topic and every received command into this new directory; empty = off. Written by a background thread (never the loop); closed on SIGINT/SIGTERM."),
    row("record_bag_queue_mb", Kind::Int { min: 1, max: 65_536 }, true, "Memory the bag's queue may hold while its writer thread falls behind (MiB); beyond it messages are dropped and counted (bag_messages_dropped in /diagnostics). 256 MiB is about a minute of the full recording under a 10 kHz command flood."),
    row("record_bag_max_file_mb", Kind::Int { min: 0, max: 1_048_576 }, true, "Split the bag into a new .mcap file after this many MiB of messages (like rosbag2's --max-bag-size; also bounds the writer's index memory); 0 = one file."),
    row("use_sim_time", Kind::Bool, false, "Standard ROS parameter; the node's stamps come from its own clock either way."),
];

/// Default of a static parameter given the loaded scene's solver settings.
pub fn default_value(name: &str, solver_iterations: i64, solver_tolerance: f64) -> ParameterValue {
    use ParameterValue as V;
    match name {
        "scene" => V::String(String::new()),
        "solver" => V::String("scene".into()),
        "time_mode" => V::String("realtime".into()),
        "rate_hz" | "publish_rate_hz" => V::Double(1000.0),
        "real_time_factor" => V::Double(1.0),
        "solver_max_iterations" => V::Integer(solver_iterations),
        "solver_tolerance" => V::Double(solver_tolerance),
        "interpolation" => V::String("cubic".into()),
        "limit_policy" => V::String("reject".into()),
        "watchdog_timeout_s" => V::Double(0.5),
        "watchdog_action" => V::String("hold".into()),
        "watchdog_hold_kp" => V::Double(100.0),
        "watchdog_hold_kd" => V::Double(10.0),
        "watchdog_damping" => V::Double(5.0),
        "overrun_policy" => V::String("skip".into()),
        "max_catch_up_cycles" => V::Integer(10),
        "rt_policy" => V::String("deadline".into()),
        "rt_priority" => V::Integer(80),
        "rt_deadline_runtime_us" => V::Integer(0),
        "rt_cpu_affinity" => V::IntegerArray(vec![]),
        "rt_lock_memory" => V::Bool(true),
        "ros_thread_priority" => V::Integer(0),
        "on_failure" => V::String("hold".into()),
        "start_paused" => V::Bool(false),
        "diagnostics_rate_hz" => V::Double(1.0),
        "odom_frame" => V::String("odom".into()),
        "contact_markers_rate_hz" => V::Double(30.0),
        "contact_marker_scale" => V::Double(0.002),
        "max_contact_points" => V::Integer(128),
        "command_groups" => V::StringArray(vec![]),
        "command_queue_size" => V::Integer(16),
        "sample_queue_size" => V::Integer(256),
        "max_trajectory_points" => V::Integer(256),
        "record_bag" => V::String(String::new()),
        "record_bag_queue_mb" => V::Integer(256),
        "record_bag_max_file_mb" => V::Integer(1024),
        "use_sim_time" => V::Bool(false),
        _ => V::NotSet,
    }
}

/// Validates `v` against `kind`; returns the normalised value (integers → doubles).
pub fn check_value(kind: Kind, v: &ParameterValue) -> Result<ParameterValue, String> {
    use ParameterValue as V;
    match (kind, v) {
        (Kind::Double { min, max }, V::Double(_) | V::Integer(_)) => {
            let x = match v {
                V::Integer(i) => *i as f64,
                V::Double(x) => *x,
                _ => f64::NAN,
            };
            if !x.is_finite() || x < min || x > max {
                Err(format!("{x} is outside [{min}, {}]", if max == POS { "∞".to_string() } else { max.to_string() }))
            } else {
                Ok(V::Double(x))
            }
        }
        (Kind::Int { min, max }, V::Integer(x)) => {
            if *x < min || *x > max {
                Err(format!("{x} is outside [{min}, {max}]"))
            } else {
                Ok(V::Integer(*x))
            }
        }
        (Kind::Bool, V::Bool(b)) => Ok(V::Bool(*b)),
        (Kind::Str { choices }, V::String(s)) => {
            if choices.is_empty() || choices.contains(&s.as_str()) {
                Ok(V::String(s.clone()))
            } else {
                Err(format!("'{s}' is not one of {choices:?}"))
            }
        }
        (Kind::StrArray, V::StringArray(a)) => Ok(V::StringArray(a.clone())),
        // an empty list in YAML has no element type: accept any empty array
        (Kind::StrArray, V::IntegerArray(a)) if a.is_empty() => Ok(V::StringArray(vec![])),
        // rcl's YAML parser reports an empty list (`[]`) as not set
        (Kind::StrArray, V::NotSet) => Ok(V::StringArray(vec![])),
        (Kind::IntArray, V::NotSet) => Ok(V::IntegerArray(vec![])),
        (Kind::IntArray, V::IntegerArray(a)) => {
            if a.iter().any(|&c| c < 0) {
                Err("CPU numbers must be ≥ 0".into())
            } else {
                Ok(V::IntegerArray(a.clone()))
            }
        }
        (Kind::IntArray, V::StringArray(a)) if a.is_empty() => Ok(V::IntegerArray(vec![])),
        (k, v) => Err(format!("wrong type {} (expected {})", v.type_name(), kind_name(k))),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Double { .. } => "double",
        Kind::Int { .. } => "integer",
        Kind::Bool => "boolean",
        Kind::Str { .. } => "string",
        Kind::StrArray => "string array",
        Kind::IntArray => "integer array",
    }
}

/// The declared parameters and their current values.
pub struct ParamStore {
    specs: IndexMap<String, Spec>,
    values: IndexMap<String, ParameterValue>,
    /// After start-up: read-only parameters refuse changes.
    locked: bool,
    /// Parameter overrides given at start-up that the node does not declare (reported once).
    pub unknown: Vec<String>,
    /// Start-up overrides that were invalid (`name: reason`).
    pub invalid: Vec<String>,
}

fn err(name: &str, msg: impl Into<String>) -> r2r::Error {
    r2r::Error::ParameterValueConv { name: name.to_string(), msg: msg.into() }
}

impl ParamStore {
    /// The parameters for a loaded scene: the static ones, the gains of `layout`'s joints
    /// (defaults from the scene) and the keys of the command groups `group_names`.
    pub fn new(layout: &JointLayout, solver_iterations: i64, solver_tolerance: f64, group_names: &[String]) -> Self {
        let mut specs = IndexMap::new();
        for &(name, kind, read_only, description) in STATIC_PARAMS {
            let description = if name == "solver_tolerance" { solver_tolerance_description() } else { description };
            specs.insert(name.to_string(), Spec { name: name.into(), kind, read_only, description, default: default_value(name, solver_iterations, solver_tolerance) });
        }
        for j in &layout.joints {
            match j.mode {
                ControlMode::Position { kp, kd } => {
                    for (suffix, v, d) in [("kp", kp, "PD stiffness of the joint (N·m/rad or N/m)"), ("kd", kd, "PD damping of the joint (N·m·s/rad or N·s/m)")] {
                        let n = format!("gains.{}.{suffix}", j.name);
                        specs.insert(n.clone(), Spec { name: n, kind: Kind::Double { min: 0.0, max: POS }, read_only: false, description: d, default: ParameterValue::Double(v) });
                    }
                }
                ControlMode::Velocity { kd } => {
                    let n = format!("gains.{}.kd", j.name);
                    specs.insert(n.clone(), Spec { name: n, kind: Kind::Double { min: 0.0, max: POS }, read_only: false, description: "Velocity servo gain of the joint (N·m·s/rad or N·s/m)", default: ParameterValue::Double(kd) });
                }
                _ => {}
            }
        }
        for g in group_names {
            let n = format!("groups.{g}.joints");
            specs.insert(n.clone(), Spec { name: n, kind: Kind::StrArray, read_only: true, description: "Joints of the command group, in the order of its array", default: ParameterValue::StringArray(vec![]) });
            let n = format!("groups.{g}.interface");
            specs.insert(n.clone(), Spec { name: n, kind: Kind::Str { choices: &["position", "velocity", "effort"] }, read_only: true, description: "What the group's values command: position, velocity or effort", default: ParameterValue::String("position".into()) });
        }
        let values = specs.iter().map(|(k, s)| (k.clone(), s.default.clone())).collect();
        ParamStore { specs, values, locked: false, unknown: vec![], invalid: vec![] }
    }

    /// Declares the read-only `groups.<name>.joints` and `groups.<name>.interface` of a default
    /// command group (one per robot, without `command_groups`), with the group's joints in
    /// array order and its interface as their values: they report the group (the
    /// forward_command_controller convention), and the node refuses a start-up value that differs.
    pub fn declare_default_group(&mut self, name: &str, joints: Vec<String>, interface: &str) {
        let n = format!("groups.{name}.joints");
        let joints = ParameterValue::StringArray(joints);
        self.specs.insert(n.clone(), Spec { name: n.clone(), kind: Kind::StrArray, read_only: true, description: "Joints of the command group <name>/commands, in the order of its array (without command_groups: the robot's joints that take commands, mimic followers left out; reported, not settable)", default: joints.clone() });
        self.values.insert(n, joints);
        let n = format!("groups.{name}.interface");
        let interface = ParameterValue::String(interface.to_string());
        self.specs.insert(n.clone(), Spec { name: n.clone(), kind: Kind::Str { choices: &["position", "velocity", "effort"] }, read_only: true, description: "What the group's values command: position, velocity or effort (without command_groups: reported, not settable)", default: interface.clone() });
        self.values.insert(n, interface);
    }

    /// Refuse changes of read-only parameters from now on.
    pub fn lock(&mut self) {
        self.locked = true;
    }

    /// The declared names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.specs.keys().map(|s| s.as_str())
    }

    /// A spec by name.
    pub fn spec(&self, name: &str) -> Option<&Spec> {
        self.specs.get(name)
    }

    /// Current value.
    pub fn value(&self, name: &str) -> &ParameterValue {
        self.values.get(name).unwrap_or(&ParameterValue::NotSet)
    }
    /// A double parameter (NaN if not a double).
    pub fn f64(&self, name: &str) -> f64 {
        match self.value(name) {
            ParameterValue::Double(x) => *x,
            ParameterValue::Integer(i) => *i as f64,
            _ => f64::NAN,
        }
    }
    /// An integer parameter (0 if not an integer).
    pub fn i64(&self, name: &str) -> i64 {
        match self.value(name) {
            ParameterValue::Integer(i) => *i,
            _ => 0,
        }
    }
    /// A boolean parameter.
    pub fn bool(&self, name: &str) -> bool {
        matches!(self.value(name), ParameterValue::Bool(true))
    }
    /// A string parameter ("" if not a string).
    pub fn str(&self, name: &str) -> &str {
        match self.value(name) {
            ParameterValue::String(s) => s,
            _ => "",
        }
    }
    /// A string-array parameter.
    pub fn strings(&self, name: &str) -> Vec<String> {
        match self.value(name) {
            ParameterValue::StringArray(a) => a.clone(),
            _ => vec![],
        }
    }
    /// An integer-array parameter.
    pub fn ints(&self, name: &str) -> Vec<i64> {
        match self.value(name) {
            ParameterValue::IntegerArray(a) => a.clone(),
            _ => vec![],
        }
    }

    fn validate(&self, name: &str, v: &ParameterValue) -> r2r::Result<ParameterValue> {
        let spec = self.specs.get(name).ok_or_else(|| r2r::Error::InvalidParameterName { name: name.to_string() })?;
        if self.locked && spec.read_only {
            if *v == self.values[name] {
                return Ok(v.clone());
            }
            return Err(err(name, "read-only at run time: set it at start-up (--ros-args -p or a parameter file)"));
        }
        check_value(spec.kind, v).map_err(|m| err(name, m))
    }

    /// Sets a value (validated). For use before the parameter handler exists.
    pub fn set(&mut self, name: &str, v: &ParameterValue) -> r2r::Result<()> {
        let v = self.validate(name, v)?;
        self.values.insert(name.to_string(), v);
        Ok(())
    }
}

impl RosParams for ParamStore {
    fn register_parameters(&mut self, _prefix: &str, _param: Option<Parameter>, params: &mut IndexMap<String, Parameter>) -> r2r::Result<()> {
        // start-up overrides
        let given: Vec<(String, ParameterValue)> = params.iter().map(|(k, p)| (k.clone(), p.value.clone())).collect();
        for (k, v) in given {
            if self.specs.contains_key(&k) {
                if let Err(e) = self.set(&k, &v) {
                    self.invalid.push(e.to_string());
                }
            } else {
                self.unknown.push(k.clone());
                params.shift_remove(&k);
            }
        }
        for (name, spec) in &self.specs {
            params.insert(name.clone(), Parameter { value: self.values[name].clone(), description: spec.description });
        }
        if !self.invalid.is_empty() {
            return Err(err("(start-up)", self.invalid.join("; ")));
        }
        Ok(())
    }

    fn get_parameter(&mut self, name: &str) -> r2r::Result<ParameterValue> {
        self.values.get(name).cloned().ok_or_else(|| r2r::Error::InvalidParameterName { name: name.to_string() })
    }

    fn set_parameter(&mut self, name: &str, v: &ParameterValue) -> r2r::Result<()> {
        self.set(name, v)
    }

    fn check_parameter(&self, name: &str, v: &ParameterValue) -> r2r::Result<()> {
        self.validate(name, v).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_validated() {
        use ParameterValue as V;
        assert_eq!(check_value(Kind::Double { min: 0.0, max: 10.0 }, &V::Integer(3)), Ok(V::Double(3.0)));
        assert!(check_value(Kind::Double { min: 0.0, max: 10.0 }, &V::Double(11.0)).is_err());
        assert!(check_value(Kind::Double { min: 0.0, max: 10.0 }, &V::Double(f64::NAN)).is_err());
        assert!(check_value(Kind::Str { choices: &["a"] }, &V::String("b".into())).is_err());
        assert!(check_value(Kind::Bool, &V::Integer(1)).is_err());
        assert_eq!(check_value(Kind::StrArray, &V::IntegerArray(vec![])), Ok(V::StringArray(vec![])));
    }

    #[test]
    fn read_only_after_lock() {
        let layout = JointLayout::default();
        let mut s = ParamStore::new(&layout, 100, 1e-9, &[]);
        s.set("time_mode", &ParameterValue::String("lockstep".into())).unwrap();
        s.lock();
        assert!(s.set("time_mode", &ParameterValue::String("realtime".into())).is_err());
        assert!(s.set("real_time_factor", &ParameterValue::Double(2.0)).is_ok());
        assert!(s.set("nope", &ParameterValue::Double(2.0)).is_err());
    }
}
