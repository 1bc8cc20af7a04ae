//! A robot's joint rows in the ECP sweeps (docs/ecp.md, "Robot links" and "A coordinate's rows
//! as one law"): which rows exist each step (limits, friction, mimic couplings; the impulse
//! solvers' rows and speculative activation), and one Gauss–Seidel item per joint — its
//! coordinate's rows solved as one law — and per mimic coupling, solved with its follower's and
//! leader's rows ([`super::joint_law`]).

use super::joint_law;
use super::tree_range::{axpy_range, solve_mass};
use crate::contact::SchemeInput;
use crate::model::Model;

/// Joint limit and joint friction rows of one one-coordinate joint of a robot (docs/ecp.md,
/// "Robot links"): the same rows and speculative activation as the impulse solvers', solved
/// inside the sweeps ([`solve_joint`]). A mimic coupling is an entry of its own.
#[derive(Clone, Debug)]
pub(super) struct JointRows {
    /// Velocity coordinate (and position coordinate) of the joint.
    pub(super) dof: usize,
    pub(super) q_index: usize,
    /// Its tree's velocity range.
    pub(super) dofs: (usize, usize),
    pub(super) limits: Option<(f64, f64)>,
    /// Coulomb friction (N·m or N) and its impulse bound `f h` this step (N·m·s or N·s).
    pub(super) friction: f64,
    pub(super) friction_bound: f64,
    /// A mimic coupling instead of limit and friction rows: the leader's velocity coordinate,
    /// `−multiplier` (the row is `v_k − multiplier v_leader`), the leader's position coordinate,
    /// the multiplier and the offset (rad or m).
    pub(super) mimic: Option<(usize, f64, usize, f64, f64)>,
    /// For a mimic row: the follower's and the leader's own rows (indices into the joints), when
    /// both have them.
    pub(super) partners: Option<(usize, usize)>,
    /// `M̃⁻¹ Jᵀ` of the row (`J = e_k`, or `e_k − multiplier e_leader` for a mimic row; length
    /// nv) and `J M̃⁻¹ Jᵀ`.
    pub(super) y: Vec<f64>,
    pub(super) minv: f64,
    /// Rows this step: lower limit, upper limit, friction; their velocity bias (m/s or rad/s)
    /// and impulses λ (N·m·s or N·s; kept as the next step's warm start).
    pub(super) active: [bool; 3],
    pub(super) bias: [f64; 2],
    pub(super) lambda: [f64; 3],
}

impl JointRows {
    /// The rows of coordinate `dof` (position coordinate `q_index`) of a tree spanning `dofs`
    /// in a model of `nv` velocities: no limit, no friction, no mimic, nothing active yet.
    pub(super) fn new(dof: usize, q_index: usize, dofs: (usize, usize), nv: usize) -> Self {
        JointRows {
            dof,
            q_index,
            dofs,
            limits: None,
            friction: 0.0,
            friction_bound: 0.0,
            mimic: None,
            partners: None,
            y: vec![0.0; nv],
            minv: 0.0,
            active: [false; 3],
            bias: [0.0; 2],
            lambda: [0.0; 3],
        }
    }
}

/// Which joint rows exist this step (the impulse solvers' speculative activation), their bias
/// and `M̃⁻¹ e_k`; the previous step's impulses re-applied to `velocity`.
pub(super) fn prepare_joint(j: &mut JointRows, model: &Model, input: &SchemeInput, state: &crate::state::State, velocity: &mut [f64], h: f64) {
    let (k, q) = (j.dof, state.q[j.q_index]);
    let erp = model.contact.erp;
    j.active = [false; 3];
    if let Some((l, coef, ql, multiplier, offset)) = j.mimic {
        // bilateral: always active, its impulse in λ[0]
        j.active[0] = true;
        j.bias[0] = erp * (q - multiplier * state.q[ql] - offset) / h;
        j.y.fill(0.0);
        j.y[k] = 1.0;
        j.y[l] += coef;
        solve_mass(input, j.dofs, &mut j.y);
        j.minv = j.y[k] + coef * j.y[l];
        axpy_range(j.lambda[0], &j.y, velocity, j.dofs);
        return;
    }
    if let Some((lo, hi)) = j.limits {
        let reach = (input.free_velocity[k].abs() + state.v[k].abs()) * h + model.contact.margin_m;
        let bias = |gap: f64| if gap >= 0.0 { gap / h } else { erp * gap / h };
        (j.active[0], j.bias[0]) = (q - lo <= reach, bias(q - lo));
        (j.active[1], j.bias[1]) = (hi - q <= reach, bias(hi - q));
    }
    j.active[2] = j.friction > 0.0;
    j.friction_bound = j.friction * h;
    for r in 0..3 {
        if !j.active[r] {
            j.lambda[r] = 0.0;
        }
    }
    if !j.active.iter().any(|a| *a) {
        return;
    }
    j.y.fill(0.0);
    j.y[k] = 1.0;
    solve_mass(input, j.dofs, &mut j.y);
    j.minv = j.y[k];
    let warm = j.lambda[0] - j.lambda[1] + j.lambda[2];
    axpy_range(warm, &j.y, velocity, j.dofs);
}

/// Compliance of a joint friction row while it sticks (dimensionless): the row holds
/// `v_k + ε (M̃⁻¹)_kk λ = 0` instead of `v_k = 0`, a creep of ε times the velocity change its own
/// impulse makes (1e-8: below 1e-11 m/s or rad/s on the arm's fingers).
///
/// Joint rows can be redundant: a limit and friction on one coordinate, or a mimic row and the
/// friction of both fingers, hold fewer coordinates than they have rows. Where their targets
/// differ (a violated limit's or mimic row's Baumgarte bias asks the coordinate to move, its
/// friction asks it to stick) the solution has that friction at its bound, but the exact rows'
/// Jacobian is singular there and the block's Newton iterations stalled at the least-squares
/// compromise (a residual of 2.3e-8 in four finger rows of the arm pushing a box under ecp, at
/// every block of a step), while the sweeps crept towards the bound by 2e-10 N·s a sweep. With
/// the compliance each friction row is strictly monotone, the problem has one solution, and the
/// block and the sweeps solve the same law (docs/ecp.md, "Redundant joint rows").
pub(super) const FRICTION_ROW_COMPLIANCE: f64 = 1e-8;

/// One Gauss–Seidel item of the joint rows. A joint's rows on its coordinate — lower limit
/// `v_k + b ≥ 0`, upper `−v_k + b ≥ 0` (impulses ≥ 0, complementary), friction
/// `v_k + ε (M̃⁻¹)_kk λ = 0` with `|λ| ≤ f h` (ε [`FRICTION_ROW_COMPLIANCE`]; the rows of the
/// impulse solvers, `J = ±e_k`) — are solved together and exactly, as one law
/// ([`joint_law::solve_coordinate`]). A mimic row `v_k − c v_l + b = 0` (`J = e_k − c e_l`) is
/// solved with its follower's and leader's rows ([`joint_law::solve_mimic_pair`]) when both have
/// rows this step, otherwise alone. Row by row, Gauss–Seidel crept along the split of a limit and
/// a sticking friction on one coordinate, and along the mimic row against the fingers' friction,
/// by about ε of the gap per sweep (docs/ecp.md, "A coordinate's rows as one law").
///
/// Adds the generalised impulse the item applies, `Σ Δλ Jᵀ` (N·m·s or N·s), to
/// `impulse_change` (length nv): the rows move the robot only through it (see
/// [`super::links::RobotLinks::sweep`] for why the sweeps measure that and not the rows). Measured row by row,
/// the drift along a free split kept the sweeps going to their cap (838 of 1 000 steps of the
/// arm opening its gripper).
pub(super) fn solve_joint(joints: &mut [JointRows], index: usize, velocity: &mut [f64], impulse_change: &mut [f64]) {
    if joints[index].mimic.is_none() {
        solve_coordinate_exactly(&mut joints[index], velocity, impulse_change);
        return;
    }
    if solve_mimic_exactly(joints, index, velocity, impulse_change) {
        return;
    }
    let j = &mut joints[index];
    let (k, Some((l, coef, ..))) = (j.dof, j.mimic) else { return };
    if j.minv <= 0.0 {
        return;
    }
    let u = velocity[k] + coef * velocity[l] + j.bias[0];
    let d = -u / j.minv;
    axpy_range(d, &j.y, velocity, j.dofs);
    j.lambda[0] += d;
    impulse_change[k] += d;
    impulse_change[l] += coef * d;
}

/// Whether a joint's rows exist this step (and `y`, `minv` hold `M̃⁻¹ e_k` and its entry).
fn has_rows(j: &JointRows) -> bool {
    j.mimic.is_none() && j.minv > 0.0 && j.active.iter().any(|a| *a)
}

/// A joint's active rows as one law ([`joint_law::CoordinateLaw`]).
fn coordinate_law(j: &JointRows) -> joint_law::CoordinateLaw {
    joint_law::CoordinateLaw {
        lower: j.active[0].then(|| -j.bias[0]),
        upper: j.active[1].then_some(j.bias[1]),
        bound: if j.active[2] { j.friction_bound } else { 0.0 },
        compliance: FRICTION_ROW_COMPLIANCE * j.minv,
    }
}

/// A joint's net generalised impulse on its coordinate.
fn joint_net(j: &JointRows) -> f64 {
    j.lambda[0] - j.lambda[1] + j.lambda[2]
}

/// The rows of one coordinate (limits and friction) solved together and exactly
/// ([`joint_law::solve_coordinate`]); their change of impulse applied to `velocity` and added to
/// `impulse_change`.
fn solve_coordinate_exactly(j: &mut JointRows, velocity: &mut [f64], impulse_change: &mut [f64]) {
    if !has_rows(j) {
        return;
    }
    let k = j.dof;
    let old = joint_net(j);
    let Some(s) = joint_law::solve_coordinate(&coordinate_law(j), velocity[k] - j.minv * old, j.minv) else { return };
    j.lambda = s.impulses;
    let d = joint_net(j) - old;
    axpy_range(d, &j.y, velocity, j.dofs);
    impulse_change[k] += d;
}

/// The mimic row `index` with its follower's and leader's rows, solved together and exactly
/// ([`joint_law::solve_mimic_pair`]). `false` (nothing changed) when the two coordinates do not
/// both have rows this step or the pair has no exact solution.
fn solve_mimic_exactly(joints: &mut [JointRows], index: usize, velocity: &mut [f64], impulse_change: &mut [f64]) -> bool {
    let m = &joints[index];
    let (Some((fi, li)), Some((l, coef, ..))) = (m.partners, m.mimic) else { return false };
    let (f, ld) = (&joints[fi], &joints[li]);
    if !(has_rows(f) && has_rows(ld)) {
        return false;
    }
    let k = m.dof;
    let mobility = [f.y[k], ld.y[k], f.y[l], ld.y[l]];
    let mu = m.lambda[0];
    let (g_k, g_l) = (joint_net(f) + mu, joint_net(ld) + coef * mu);
    let free = [velocity[k] - mobility[0] * g_k - mobility[1] * g_l, velocity[l] - mobility[2] * g_k - mobility[3] * g_l];
    let pair = joint_law::MimicPair { free, mobility, coef, bias: m.bias[0] };
    let Some(s) = joint_law::solve_mimic_pair(&coordinate_law(f), &coordinate_law(ld), &pair) else { return false };
    let (d_k, d_l) = (s.follower.net() + s.mimic - g_k, s.leader.net() + coef * s.mimic - g_l);
    joints[fi].lambda = s.follower.impulses;
    joints[li].lambda = s.leader.impulses;
    joints[index].lambda[0] = s.mimic;
    let dofs = joints[fi].dofs;
    axpy_range(d_k, &joints[fi].y, velocity, dofs);
    axpy_range(d_l, &joints[li].y, velocity, dofs);
    impulse_change[k] += d_k;
    impulse_change[l] += d_l;
    true
}
