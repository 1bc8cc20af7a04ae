//! The factored form of the contact problem (`G = Zᵀ Z`, [`FactoredRows`]): a method that does not
//! need the Delassus matrix (PGS) gets G only when its rows are the shorter; otherwise it reads
//! the factored rows and the step leaves G's assembly out. These tests pin that the two forms
//! give one solution and that the solution carries the weight it must.

use crate::common::*;
use contact_sim::contact::{ContactProblem, ImpulseSolver, PgsParams, PgsSolver, SolverConfig};
use contact_sim::sim::Simulation;
use contact_sim::state::State;

/// A simulation of a repository scene under PGS (the scene's own parameters when it is PGS's).
fn pgs_sim(file: &str) -> Simulation {
    let scene = scene_file(file);
    let config = match scene.solver.kind() {
        "pgs" => scene.solver.clone(),
        _ => SolverConfig::from_kind("pgs").unwrap(),
    };
    Simulation::from_scene(&scene, Some(&config))
}

/// PGS to a tight tolerance from `start` on `p`.
fn solve(p: &ContactProblem, start: &[f64]) -> (Vec<f64>, bool) {
    let params = PgsParams { max_iterations: 200_000, tolerance: 1e-14, relaxation: 1.0 };
    let mut solver = PgsSolver::with_factored(params, p.num_contacts, p.factored.map_or(0, |f| f.nv));
    let mut l = start.to_vec();
    let stats = solver.solve(p, &mut l);
    (l, stats.converged)
}

#[test]
fn pgs_on_the_factored_rows_finds_what_pgs_on_the_delassus_matrix_finds() {
    for file in ["config/examples/box_stack.yaml", "config/examples/arm_push_box.yaml", "config/default.yaml"] {
        let mut sim = pgs_sim(file);
        let mut before = State::new(&sim.model);
        let mut compared = 0;
        for step in 0..600 {
            before.copy_from(&sim.state);
            sim.step();
            let m = sim.workspace.num_rows();
            if step < 300 || m == 0 || sim.workspace.delassus_built {
                continue;
            }
            // the step's problem from the warm start it received, in factored form
            contact_sim::step::warm_start(&sim.model, &before, &mut sim.workspace);
            let start = sim.workspace.impulse[..m].to_vec();
            let (from_z, z_converged) = {
                let (p, _, _) = sim.workspace.split_for_solve();
                assert!(p.delassus.is_empty() && p.factored.is_some(), "{file}: step {step}: G assembled for PGS");
                solve(&p, &start)
            };
            // the same problem with G assembled, solved on G alone
            contact_sim::step::build_delassus(&sim.model, &mut sim.workspace, m);
            let (from_g, g_converged) = {
                let (mut p, _, _) = sim.workspace.split_for_solve();
                assert_eq!(p.delassus.len(), m * m);
                p.factored = None;
                solve(&p, &start)
            };
            assert!(z_converged && g_converged, "{file}: step {step}: converged on Z {z_converged}, on G {g_converged}");
            let scale = from_g.iter().fold(1e-12f64, |a, x| a.max(x.abs()));
            let diff = from_z.iter().zip(&from_g).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
            assert!(diff <= 1e-9 * scale, "{file}: step {step}: the two forms differ by {diff:.3e} N·s (largest impulse {scale:.3e})");
            compared += 1;
        }
        assert!(compared >= 100, "{file}: only {compared} steps took the factored form");
    }
}

#[test]
fn the_factored_stack_carries_its_weight_and_short_rows_keep_the_delassus_matrix() {
    // five 1 kg boxes at rest: the ground's normal impulses sum to m g dt every step
    let mut sim = pgs_sim("config/examples/box_stack.yaml");
    let dt = sim.model.timestep_s;
    let weight = 5.0 * 1.0 * sim.model.gravity.norm();
    for _ in 0..500 {
        sim.step();
    }
    for _ in 0..100 {
        sim.step();
        assert!(!sim.workspace.delassus_built, "the stack's 60 rows on 6-coordinate trees take the factored form");
        let ground: f64 = (0..sim.workspace.contacts.len()).filter(|&c| sim.workspace.contacts[c].body_a.is_none() || sim.workspace.contacts[c].body_b.is_none()).map(|c| sim.workspace.contact_impulse(c)[0]).sum();
        assert!((ground / dt - weight).abs() <= 1e-6 * weight, "ground force {:.9} N, weight {weight:.9} N", ground / dt);
    }
    // four feet on one 18-coordinate tree: rows of G (12 entries) are shorter than the factored
    // rows (18, read twice), so G is assembled
    let mut stand = pgs_sim("config/examples/quadruped_stand.yaml");
    for _ in 0..200 {
        stand.step();
    }
    assert!(stand.workspace.contacts.len() == 4 && stand.workspace.delassus_built);
}

/// A scene under PGS after 300 steps, its row count and the warm start the next step would get.
fn settled_warm_start(file: &str) -> (Simulation, usize, Vec<f64>) {
    let mut sim = pgs_sim(file);
    for _ in 0..300 {
        sim.step();
    }
    let m = sim.workspace.num_rows();
    contact_sim::step::warm_start(&sim.model, &sim.state, &mut sim.workspace);
    let start = sim.workspace.impulse[..m].to_vec();
    (sim, m, start)
}

/// The bit patterns of `v`, to compare impulses exactly.
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_warm_start_finds_each_contact_in_any_storage_order_and_the_first_of_equal_keys() {
    // the warm start looks the stored contacts up through a key-sorted index: the stored order
    // must not matter, and of two entries with one key the first stored wins (as a scan finds)
    for file in ["config/examples/box_stack.yaml", "config/default.yaml"] {
        let (mut sim, m, as_stored) = settled_warm_start(file);
        assert!(as_stored.iter().any(|&x| x > 0.0), "{file}: no warm start to compare");
        let mut reversed = sim.state.clone();
        reversed.warm_contacts.reverse();
        contact_sim::step::warm_start(&sim.model, &reversed, &mut sim.workspace);
        assert_eq!(bits(&as_stored), bits(&sim.workspace.impulse[..m]), "{file}: reversed storage");
        // a later copy of the first stored contact with another impulse is never read
        let mut doubled = sim.state.clone();
        let mut copy = doubled.warm_contacts[0];
        copy.impulse = [1e3; 4];
        doubled.warm_contacts.truncate(doubled.warm_contacts.capacity() - 1);
        doubled.warm_contacts.push(copy);
        let first_row = (0..sim.workspace.contacts.len()).find(|&c| sim.workspace.contacts[c].key == copy.key).map(|c| sim.workspace.contact_rows.start(c));
        contact_sim::step::warm_start(&sim.model, &doubled, &mut sim.workspace);
        if let Some(i) = first_row {
            assert_eq!(sim.workspace.impulse[i].to_bits(), as_stored[i].to_bits(), "{file}: the later copy was read");
        }
        assert!(first_row.is_some(), "{file}: the first stored contact is not among this step's");
    }
}

#[test]
fn a_contact_whose_features_were_renamed_keeps_its_impulse_and_a_far_or_taken_one_does_not() {
    // parry names a corner of two coincident faces by either face's vertex or an edge crossing,
    // and the name can change between steps while the point stays: the warm start then matches
    // the nearest stored contact of the same pair within WARM_MATCH_RADIUS_M, each at most once
    use contact_sim::step::WARM_MATCH_RADIUS_M;
    let (mut sim, m, by_key) = settled_warm_start("config/examples/box_stack.yaml");
    assert!(by_key.iter().filter(|&&x| x > 0.0).count() >= 20, "the resting stack's contacts carry load");
    // every stored feature renamed: each contact finds its own stored impulse by position
    let mut renamed = sim.state.clone();
    for w in renamed.warm_contacts.iter_mut() {
        w.key.feature_a ^= 0x5a5a;
        w.key.feature_b ^= 0xa5a5;
    }
    contact_sim::step::warm_start(&sim.model, &renamed, &mut sim.workspace);
    assert_eq!(bits(&by_key), bits(&sim.workspace.impulse[..m]), "renamed features: the impulses moved between contacts");
    // moved beyond the radius: no match, a cold start
    let mut far = renamed.clone();
    for w in far.warm_contacts.iter_mut() {
        w.position[2] += 1.5 * WARM_MATCH_RADIUS_M;
    }
    contact_sim::step::warm_start(&sim.model, &far, &mut sim.workspace);
    assert!(sim.workspace.impulse[..m].iter().all(|&x| x == 0.0), "a stored contact 1.5 radii away was matched");
    // one stored contact left of a pair: exactly one of the pair's contacts takes it
    let pair = renamed.warm_contacts[0].key.pair;
    let mut single = renamed.clone();
    let keep = single.warm_contacts[0];
    single.warm_contacts.retain(|w| w.key.pair != pair);
    single.warm_contacts.push(keep);
    contact_sim::step::warm_start(&sim.model, &single, &mut sim.workspace);
    let rows = sim.workspace.contact_rows;
    let warmed: Vec<usize> = (0..sim.workspace.contacts.len()).filter(|&c| sim.workspace.contacts[c].key.pair == pair && sim.workspace.impulse[rows.start(c)] > 0.0).collect();
    assert_eq!(warmed.len(), 1, "contacts of pair {pair} warmed from one stored contact: {warmed:?}");
    let c = &sim.workspace.contacts[warmed[0]];
    let at = contact_sim::math::Vec3::new(keep.position[0], keep.position[1], keep.position[2]);
    assert!((c.position - at).norm() <= WARM_MATCH_RADIUS_M, "the matched contact is not the stored one's point");
}

#[test]
fn the_image_pgs_keeps_is_the_sum_of_the_rows_images() {
    // after a few sweeps PGS hands its running y = Z λ to the step in place of Σᵢ λᵢ zᵢ: the two
    // agree to round-off, and the step's velocities follow from it
    use contact_sim::contact::ConstraintStage;
    let mut sim = pgs_sim("config/examples/box_stack.yaml");
    let mut handed = 0;
    for _ in 0..600 {
        let report = sim.step();
        let m = sim.workspace.num_rows();
        let nv = sim.model.nv;
        let mut summed = vec![0.0; nv];
        contact_sim::contact::sum_row_images(&sim.model, &sim.workspace.factor_jt, &sim.workspace.row_trees, &sim.workspace.impulse[..m], &mut summed);
        let ConstraintStage::Impulse(s) = sim.workspace.solver.stage() else { panic!("PGS is an impulse solver") };
        match s.row_image() {
            Some(image) => {
                assert!(report.solve.iterations <= 16, "an image after {} sweeps", report.solve.iterations);
                let scale = summed.iter().fold(1e-300f64, |a, x| a.max(x.abs()));
                let diff = image.iter().zip(&summed).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
                assert!(diff <= 1e-12 * scale, "image differs from the sum by {diff:.3e} (largest {scale:.3e})");
                handed += 1;
            }
            None => assert!(report.solve.iterations > 16, "no image after {} sweeps", report.solve.iterations),
        }
    }
    assert!(handed >= 500, "the image was handed over in {handed} of 600 steps");
}

/// G as assembled (`Zᵀ Z` with `Z = L⁻ᵀ Jᵀ`, a contact's rows and runs of joint rows in groups,
/// each entry summed over the trees both rows touch) equals the dense `J M̃⁻¹ Jᵀ`: contacts on
/// two trees (the box on the arm's fingers), feet on branches of one tree, limit and friction
/// rows, the mimic row that couples two fingers on sibling branches. Scenes: the default
/// (quadruped, arm with its mimic gripper, box), the trot
/// and the arm pushing a box, under newton (which reads G), every 50th step of 1.5 s; M̃⁻¹ from
/// the step's factor `M̃ = Lᵀ L`, unit vector by unit vector.
#[test]
fn the_assembled_delassus_matrix_is_the_dense_j_m_inverse_j_transpose() {
    for file in ["config/default.yaml", "config/examples/bisection_trot.yaml", "config/examples/arm_push_box.yaml"] {
        let scene = scene_file(file);
        let config = SolverConfig::from_kind("newton").unwrap();
        let mut sim = Simulation::from_scene(&scene, Some(&config));
        let nv = sim.model.nv;
        let (mut checked, mut worst) = (0, 0.0f64);
        for step in 0..1500 {
            sim.step();
            let m = sim.workspace.num_rows();
            if step % 50 != 49 || m == 0 {
                continue;
            }
            contact_sim::step::build_delassus(&sim.model, &mut sim.workspace, m);
            let j = nalgebra::DMatrix::from_row_slice(m, nv, &sim.workspace.jacobian[..m * nv]);
            // M̃⁻¹ column by column from the step's factor, per tree (M̃ is block diagonal)
            let mut m_inv = nalgebra::DMatrix::zeros(nv, nv);
            for tree in &sim.model.trees {
                for k in tree.v_start..tree.v_end {
                    let mut x = vec![0.0; nv];
                    x[k] = 1.0;
                    sim.workspace.mass_factor.solve(tree.v_start, tree.v_end, &mut x);
                    m_inv.column_mut(k).copy_from_slice(&x);
                }
            }
            let g = &j * m_inv * j.transpose();
            let scale = g.amax().max(1e-300);
            for a in 0..m {
                for b in 0..m {
                    let error = (sim.workspace.delassus[a * m + b] - g[(a, b)]).abs() / scale;
                    worst = worst.max(error);
                    assert!(error < 1e-12, "{file}: step {step}: G[{a}][{b}] = {} against {} (m = {m})", sim.workspace.delassus[a * m + b], g[(a, b)]);
                }
            }
            checked += 1;
        }
        println!("{file}: G checked at {checked} steps, largest error {worst:.1e} of max |G|");
        assert!(checked >= 20, "{file}: only {checked} steps with rows");
    }
}
