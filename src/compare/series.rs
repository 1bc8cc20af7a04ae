//! Signals read from bags as time series: what [`crate::compare`] and system identification
//! ([`crate::identify`]) measure. Times are the header stamps (the log time when a stamp is zero).

use crate::bag::msgs::{Msg, MsgType};
use crate::bag::reader::Bag;

/// A sampled signal (times in s, increasing).
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Times (s).
    pub t: Vec<f64>,
    /// Values.
    pub v: Vec<f64>,
}

impl Series {
    /// The value at `t` (s), linear between samples; NaN outside the sampled range.
    pub fn at(&self, t: f64) -> f64 {
        let n = self.t.len();
        if n == 0 || t < self.t[0] - 1e-9 || t > self.t[n - 1] + 1e-9 {
            return f64::NAN;
        }
        let i = self.t.partition_point(|&x| x <= t);
        if i == 0 {
            return self.v[0];
        }
        if i >= n {
            return self.v[n - 1];
        }
        let (t0, t1) = (self.t[i - 1], self.t[i]);
        if t1 <= t0 {
            return self.v[i];
        }
        let s = (t - t0) / (t1 - t0);
        if s == 0.0 {
            self.v[i - 1]
        } else {
            self.v[i - 1] + s * (self.v[i] - self.v[i - 1])
        }
    }
    /// First and last sample time (s).
    pub fn range(&self) -> Option<(f64, f64)> {
        Some((*self.t.first()?, *self.t.last()?))
    }
}

/// Joint series of one bag: name → [position, velocity, effort].
pub struct JointSeries {
    /// Joint names (mapped to the simulation's).
    pub names: Vec<String>,
    /// Per joint, position, velocity and effort (times in ns until [`crate::compare`] rebases them).
    pub series: Vec<[Series; 3]>,
    /// Stamps (ns) of the joint states.
    pub stamps_ns: Vec<i64>,
}

/// A message's time (ns): its header stamp, else (zero stamp) its log time.
pub fn msg_time_ns(m: &crate::bag::BagMessage) -> i64 {
    m.msg.stamp_ns().filter(|&s| s > 0).unwrap_or(m.log_time_ns as i64)
}

/// The joint states on `topic` as per-joint series (times in ns; names through `map`); `None`,
/// with a warning, when the topic is missing, of another type or empty.
pub fn joint_series(bag: &Bag, topic: &str, map: &dyn Fn(&str) -> String, warnings: &mut Vec<String>) -> Option<JointSeries> {
    let ti = match bag.expect_topic(topic, MsgType::JointState) {
        Ok(Some(i)) => i,
        Ok(None) => {
            warnings.push(format!("{}: no topic '{topic}': no joint comparison", bag.path.display()));
            return None;
        }
        Err(e) => {
            warnings.push(e);
            return None;
        }
    };
    let mut js = JointSeries { names: vec![], series: vec![], stamps_ns: vec![] };
    let mut msgs: Vec<&crate::bag::BagMessage> = bag.messages_on(ti).collect();
    msgs.sort_by_key(|m| msg_time_ns(m));
    for m in msgs {
        let Msg::JointState(s) = &m.msg else { continue };
        let t = msg_time_ns(m);
        if js.stamps_ns.last() == Some(&t) {
            continue;
        }
        js.stamps_ns.push(t);
        for (i, n) in s.name.iter().enumerate() {
            let n = map(n);
            let k = match js.names.iter().position(|x| *x == n) {
                Some(k) => k,
                None => {
                    js.names.push(n);
                    js.series.push(Default::default());
                    js.names.len() - 1
                }
            };
            for (a, arr) in [&s.position, &s.velocity, &s.effort].into_iter().enumerate() {
                if let Some(&x) = arr.get(i) {
                    if x.is_finite() {
                        js.series[k][a].t.push(t as f64);
                        js.series[k][a].v.push(x);
                    }
                }
            }
        }
    }
    if js.stamps_ns.is_empty() {
        warnings.push(format!("{}: topic '{topic}' has no readable message", bag.path.display()));
        return None;
    }
    Some(js)
}

/// A WrenchStamped topic's force (N) and torque (N·m) components as series, in seconds from
/// `origin` (ns); repeated or out-of-order times dropped.
pub fn wrench_series(bag: &Bag, ti: usize, origin: i64) -> [Series; 6] {
    six_series(bag, ti, origin, |m| match m {
        Msg::WrenchStamped(w) => Some([w.wrench.force[0], w.wrench.force[1], w.wrench.force[2], w.wrench.torque[0], w.wrench.torque[1], w.wrench.torque[2]]),
        _ => None,
    })
}

/// Six components of each message on topic `ti` (`pick`) as series, in seconds from `origin`
/// (ns), in time order; repeated or out-of-order times dropped.
fn six_series(bag: &Bag, ti: usize, origin: i64, pick: impl Fn(&Msg) -> Option<[f64; 6]>) -> [Series; 6] {
    let mut out: [Series; 6] = Default::default();
    let mut msgs: Vec<&crate::bag::BagMessage> = bag.messages_on(ti).collect();
    msgs.sort_by_key(|m| msg_time_ns(m));
    for m in msgs {
        let Some(values) = pick(&m.msg) else { continue };
        let t = to_s(msg_time_ns(m) as f64, origin);
        if out[0].t.last().is_some_and(|&l| l >= t) {
            continue;
        }
        for (a, x) in values.into_iter().enumerate() {
            out[a].t.push(t);
            out[a].v.push(x);
        }
    }
    out
}

/// Nanoseconds `ns` as seconds from `origin` (ns).
pub fn to_s(ns: f64, origin: i64) -> f64 {
    (ns - origin as f64) * 1e-9
}

/// An Odometry topic's position (m, world) and linear velocity (m/s, child frame) components as
/// series `[x y z vx vy vz]`, in seconds from `origin` (ns); repeated or out-of-order times
/// dropped.
pub fn odometry_series(bag: &Bag, ti: usize, origin: i64) -> [Series; 6] {
    six_series(bag, ti, origin, |m| match m {
        Msg::Odometry(o) => Some([o.position[0], o.position[1], o.position[2], o.linear[0], o.linear[1], o.linear[2]]),
        _ => None,
    })
}
