//! `contact_sim compare`: a simulated bag against a hardware bag.

use super::*;


#[allow(clippy::too_many_arguments)]
pub fn compare(sim_bag: &Path, hw_bag: &Path, report: Option<PathBuf>, json: Option<PathBuf>, joint_map: Vec<String>, joint_states_topic: String, max_lag: f64, time_base: &str, contact_threshold: f64, force: bool) -> Result<()> {
    let time_base = match time_base {
        "auto" => contact_sim::compare::TimeBase::Auto,
        "absolute" => contact_sim::compare::TimeBase::Absolute,
        "relative" => contact_sim::compare::TimeBase::Relative,
        other => bail!("--time-base: '{other}' is not one of auto, absolute, relative"),
    };
    if !(max_lag >= 0.0 && max_lag.is_finite()) {
        bail!("--max-lag: must be ≥ 0, got {max_lag}");
    }
    if !(contact_threshold >= 0.0 && contact_threshold.is_finite()) {
        bail!("--contact-threshold: must be a finite force ≥ 0 N, got {contact_threshold}");
    }
    let (page, page_json) = (report.as_ref().map(|d| d.join("index.html")), report.as_ref().map(|d| d.join("compare.json")));
    let mut outs: Vec<(&str, &Path)> = vec![];
    if let (Some(p), Some(j)) = (&page, &page_json) {
        outs.push(("--report", p.as_path()));
        outs.push(("--report", j.as_path()));
    }
    if let Some(j) = json.as_ref().filter(|j| j.as_os_str() != "-") {
        outs.push(("--json", j.as_path()));
    }
    outputs::check(&[sim_bag, hw_bag], &outs, force)?;
    let opts = contact_sim::compare::CompareOptions { joint_states_topic, max_lag_s: max_lag, time_base, contact_threshold_n: contact_threshold, joint_map: parse_joint_map(&joint_map)? };
    let sim = read_bag_warn(sim_bag)?;
    let hw = read_bag_warn(hw_bag)?;
    let (rep, plot) = contact_sim::compare::compare(&sim, &hw, &opts);
    for w in rep.warnings.iter().filter(|w| !sim.warnings.contains(w) && !hw.warnings.contains(w)) {
        eprintln!("warning: {w}");
    }
    print!("{}", contact_sim::compare::format_table(&rep));
    if rep.joints.is_empty() && rep.wrenches.is_empty() {
        bail!("nothing to compare: no joint or wrench topic in both bags (joint states read from '{}', --joint-states-topic)", opts.joint_states_topic);
    }
    let json_text = serde_json::to_string_pretty(&rep)?;
    if let Some(dir) = &report {
        let page = contact_sim::compare::report::write_html(dir, &rep, &plot).map_err(|e| anyhow::anyhow!("--report: {e}"))?;
        println!("report written to {} (and compare.json)", page.display());
    }
    match (json, &report) {
        (Some(p), _) if p.as_os_str() == "-" => println!("{json_text}"),
        (Some(p), _) => {
            std::fs::write(&p, &json_text).with_context(|| format!("--json: cannot write {}", p.display()))?;
            println!("JSON written to {}", p.display());
        }
        (None, _) => {}
    }
    Ok(())
}
