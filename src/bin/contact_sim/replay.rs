//! `contact_sim replay`: a hardware bag's commands into a scene, the response recorded.

use super::*;


#[allow(clippy::too_many_arguments)]
pub fn replay(hw_bag: &Path, scene: &Path, out: &Path, config: Option<PathBuf>, joint_map: Vec<String>, initial_state: bool, command_topics: Vec<String>, rate: Option<f64>, limit_policy: Option<String>) -> Result<()> {
    let mut cfg = replay_config(config.as_deref())?;
    cfg.joint_map.extend(parse_joint_map(&joint_map)?);
    cfg.initial_state |= initial_state;
    if !command_topics.is_empty() {
        cfg.joint_command_topics = command_topics;
    }
    if rate.is_some() {
        cfg.rate_hz = rate;
    }
    if let Some(p) = limit_policy {
        cfg.limit_policy = p;
    }
    let inputs: Vec<&Path> = [Some(hw_bag), Some(scene), config.as_deref()].into_iter().flatten().collect();
    outputs::check(&inputs, &[("--out", out)], false)?;
    let scene = load(scene)?;
    let hw = read_bag_warn(hw_bag)?;
    let start = Instant::now();
    let r = bag::replay::replay(&hw, &scene, &cfg, out)?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "replayed {} commands and {} trajectories from {} into '{}' over {:.3} s ({:.2} s wall){}",
        r.commands_applied,
        r.trajectories,
        hw_bag.display(),
        scene.name,
        r.sim_duration_s,
        start.elapsed().as_secs_f64(),
        if r.initial_state_from_bag { ", initial state from the bag" } else { "" }
    );
    println!("simulated response written to {} ({} messages at {:.0} Hz)", out.display(), r.recording.bag.messages, r.rate_hz);
    Ok(())
}

/// The replay settings of `--config` (defaults without one).
pub fn replay_config(config: Option<&Path>) -> Result<bag::replay::ReplayConfig> {
    Ok(match config {
        Some(p) => {
            let text = contact_sim::validate::read_text_bounded(p, contact_sim::validate::MAX_TEXT_FILE_BYTES).map_err(|e| anyhow::anyhow!("--config {}: {e}", p.display()))?;
            serde_yaml::from_str(&text).with_context(|| format!("{}", p.display()))?
        }
        None => Default::default(),
    })
}
