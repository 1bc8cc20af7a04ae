//! The analytic reference for the pendulum tests (shared by the RT unit tests in
//! `src/rt/tests.rs` and the DDS tests in `tests/ros_node.rs`, included with `#[path]`).

/// The pendulum of urdf/pendulum.urdf: I θ'' = τ − m g L sin θ, integrated with RK4 (the
/// reference for the simulator's motion).
pub fn pendulum_reference(tau: f64, t: f64) -> (f64, f64) {
    let (m, g, l, i) = (1.0, 9.81, 1.0, 1.00004);
    let acc = |q: f64| (tau - m * g * l * q.sin()) / i;
    let n = ((t / 1e-4).ceil() as usize).max(1);
    let h = t / n as f64;
    let (mut q, mut v) = (0.0f64, 0.0f64);
    for _ in 0..n {
        let (k1q, k1v) = (v, acc(q));
        let (k2q, k2v) = (v + 0.5 * h * k1v, acc(q + 0.5 * h * k1q));
        let (k3q, k3v) = (v + 0.5 * h * k2v, acc(q + 0.5 * h * k2q));
        let (k4q, k4v) = (v + h * k3v, acc(q + h * k3q));
        q += h / 6.0 * (k1q + 2.0 * k2q + 2.0 * k3q + k4q);
        v += h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
    }
    (q, v)
}
