//! `cargo bench`: the whole step (dynamics + collision + solve) on the quadruped standing, the
//! 5-box stack and the bisection paper's four experiments (issue 4), for every solver kind. `contact_sim bench` gives percentiles; this gives
//! criterion's confidence intervals.

use contact_sim::config::load_scene;
use contact_sim::contact::SolverConfig;
use contact_sim::sim::Simulation;
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;

fn step_benches(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for scene in [
        "config/examples/quadruped_stand.yaml",
        "config/examples/box_stack.yaml",
        "config/examples/bisection_trot.yaml",
        "config/examples/bisection_hang.yaml",
        "config/examples/bisection_drop.yaml",
        "config/examples/bisection_random.yaml",
    ] {
        let loaded = load_scene(&root.join(scene)).expect("scene loads");
        for kind in SolverConfig::KINDS {
            let mut sim = Simulation::from_scene(&loaded, Some(&SolverConfig::from_kind(kind).unwrap()));
            for _ in 0..500 {
                sim.step();
            }
            c.bench_function(&format!("step/{}/{kind}", loaded.name), |b| {
                b.iter(|| {
                    if sim.state.time_s > 20.0 {
                        sim.reset();
                    }
                    sim.step()
                })
            });
        }
    }
}

criterion_group!(benches, step_benches);
criterion_main!(benches);
