//! `contact_sim identify`: the scene's parameters fitted to hardware bags.

use super::*;
use contact_sim::identify::{self as id, IdentifyOptions};

/// The command line of `identify`.
pub struct Args {
    pub scene: PathBuf,
    pub bags: Vec<PathBuf>,
    pub params: PathBuf,
    pub out: PathBuf,
    pub validate: Vec<PathBuf>,
    pub threads: Option<usize>,
    pub max_iterations: usize,
    pub joint_map: Vec<String>,
    pub config: Option<PathBuf>,
    pub initial_state: bool,
    pub force: bool,
    pub load: config::LoadOptions,
}

pub fn identify(a: Args) -> Result<()> {
    let mut replay = replay::replay_config(a.config.as_deref())?;
    replay.joint_map.extend(parse_joint_map(&a.joint_map)?);
    replay.initial_state |= a.initial_state;
    if a.max_iterations == 0 {
        bail!("--max-iterations: must be at least 1");
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let opts = IdentifyOptions {
        scene: a.scene,
        load: a.load,
        bags: a.bags,
        validate: a.validate,
        params: a.params,
        out: a.out,
        replay,
        threads,
        settings: id::optimizer::Settings { max_iterations: a.max_iterations, ..Default::default() },
        force: a.force,
    };
    let r = id::identify(&opts, &mut |line| eprintln!("{line}"))?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    println!("{:<44} {:>12} {:>12} {:>10}  {}", "parameter", "initial", "fitted", "std", "unit");
    for p in &r.parameters {
        println!("{:<44} {:>12.6} {:>12.6} {:>10.2e}  {}{}", p.name, p.initial, p.value, p.std, p.unit, if p.at_bound { "  (at bound)" } else { "" });
    }
    println!(
        "cost {:.4e} → {:.4e} in {} iterations, {} rollouts, {:.1} s on {} threads ({})",
        r.cost.initial, r.cost.r#final, r.iterations, r.rollouts, r.wall_s, r.threads, r.stop
    );
    if let Some(g) = r.generalises {
        println!("held-out bags: the fit {}", if g { "generalises (their cost fell)" } else { "does NOT generalise (their cost rose)" });
    }
    println!("wrote {}/{{result.json, identified.yaml, index.html}}", opts.out.display());
    Ok(())
}
