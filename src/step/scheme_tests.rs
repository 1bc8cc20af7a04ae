//! The whole-step seam: a scheme plugged in at the constraint stage drives the same pipeline as
//! an impulse solver (velocities committed, positions integrated unless the scheme did, its
//! impulses read by the contact forces and sensors).

use super::*;
use crate::config::load_scene_str;
use crate::sim::Simulation;
use std::path::Path;

const BOX_YAML: &str = "
name: scheme_test
timestep_s: 0.001
materials:
  default: {friction: 0.8}
objects:
  - name: box
    shape: {type: box, size: [0.2, 0.2, 0.2]}
    mass_kg: 2.0
    position: [0.0, 0.0, HEIGHT]
";

fn box_sim(height: f64) -> Simulation {
    let yaml = BOX_YAML.replace("HEIGHT", &height.to_string());
    let scene = load_scene_str(&yaml, Path::new("scheme_test.yaml")).unwrap();
    Simulation::from_scene(&scene, None)
}

/// v⁺ = v* (no constraint), positions left to the step.
struct FreeMotion;
impl WholeStepScheme for FreeMotion {
    fn advance(&mut self, input: &SchemeInput, _state: &mut State, out: &mut SchemeOutput) -> SolveStats {
        out.velocity.copy_from_slice(input.free_velocity.as_slice());
        SolveStats { iterations: 1, residual: 0.0, converged: true }
    }
}

/// Holds every body still and reports the weight of each tree, shared among its contacts, as
/// normal impulses; integrates the (unchanged) positions itself.
struct HoldAndReportWeight {
    weight_n: f64,
}
impl WholeStepScheme for HoldAndReportWeight {
    fn advance(&mut self, input: &SchemeInput, _state: &mut State, out: &mut SchemeOutput) -> SolveStats {
        out.velocity.fill(0.0);
        let n = input.contacts.len();
        let rows = crate::contact::ContactRows::POINT;
        for c in 0..n {
            out.impulse[rows.start(c)] = self.weight_n * input.model.timestep_s / n as f64;
            out.impulse[rows.start(c) + 1] = 0.0;
            out.impulse[rows.start(c) + 2] = 0.0;
        }
        out.positions_integrated = true;
        SolveStats { iterations: 1, residual: 0.0, converged: true }
    }
}

#[test]
fn a_free_motion_scheme_reproduces_contact_free_flight_exactly() {
    let (mut a, mut b) = (box_sim(1.0), box_sim(1.0));
    for _ in 0..200 {
        let ra = a.step();
        let rb = step_with_scheme(&b.model, &mut b.state, &mut b.workspace, &b.commands, &mut FreeMotion);
        assert_eq!((ra.contacts, rb.contacts), (0, 0), "the box must be in free flight");
        assert!(rb.solve.converged);
    }
    assert_eq!(a.state.q, b.state.q);
    assert_eq!(a.state.v, b.state.v);
    // and it fell: z = 1 − g t² / 2 to first order in dt
    let t = a.state.time_s;
    assert!((a.state.q[2] - (1.0 - 0.5 * 9.81 * t * t)).abs() < 2e-3, "z = {}", a.state.q[2]);
}

#[test]
fn the_pipeline_reads_a_schemes_impulses_and_respects_its_position_update() {
    let mut s = box_sim(0.1);
    let q0 = s.state.q.clone();
    let weight = 2.0 * 9.81;
    let mut scheme = HoldAndReportWeight { weight_n: weight };
    let r = step_with_scheme(&s.model, &mut s.state, &mut s.workspace, &s.commands, &mut scheme);
    assert!(r.contacts >= 4, "box corners on the ground: {} contacts", r.contacts);
    assert_eq!(s.state.q, q0, "the scheme integrated the positions: the step must not");
    assert!(s.state.v.iter().all(|v| *v == 0.0));
    // contact forces per body (what sensors, wrenches and bags read): the weight, upward
    let tree = &s.model.trees[0];
    let total: crate::math::Vec6 = (tree.body_start..tree.body_end).map(|b| s.workspace.body_contact_force[b]).sum();
    let force = Vec3::new(total[3], total[4], total[5]);
    assert!((force - Vec3::new(0.0, 0.0, weight)).norm() < 1e-9, "contact force on the box {force:?}");
    let sum: Vec3 = (0..s.workspace.contacts.len()).map(|i| s.workspace.contact_force_world(i)).sum();
    assert!((sum.z.abs() - weight).abs() < 1e-9);
}
