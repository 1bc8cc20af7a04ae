//! Per-step V-FPI trace of a scene (development aid): step, contacts, iterations, θ, converged.
use contact_sim::config::load_scene;
use contact_sim::sim::Simulation;
fn main() {
    let path = std::env::args().nth(1).expect("scene");
    let scene = load_scene(std::path::Path::new(&path)).unwrap();
    let mut sim = Simulation::from_scene(&scene, None);
    let steps = (scene.duration_s / sim.model.timestep_s).round() as usize;
    let t0 = std::time::Instant::now();
    for k in 0..steps {
        let t = std::time::Instant::now();
        let r = sim.step();
        println!("{k} {} {} {:.3e} {} {:.2}", r.contacts, r.solve.iterations, r.solve.residual, r.solve.converged, t.elapsed().as_secs_f64() * 1e3);
    }
    eprintln!("total {:.3} s", t0.elapsed().as_secs_f64());
}
