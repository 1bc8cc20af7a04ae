//! The HTML comparison page: the metrics tables (joints, wrenches, contact events), then per joint the position, velocity and
//! effort of both bags overlaid with the position error below, and per wrench topic the force
//! norms overlaid with their difference. Plots are inline SVG (plotters), so the page is one
//! self-contained file.

use super::{format_table, CompareReport, PlotData};
use plotters::prelude::*;
use std::path::Path;

const SIM: RGBColor = RGBColor(31, 119, 180);
const HW: RGBColor = RGBColor(214, 39, 40);
const ERR: RGBColor = RGBColor(90, 90, 90);

/// `s` escaped for HTML text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `(min, max)` of the finite values, widened when flat.
fn bounds<'a>(vs: impl Iterator<Item = &'a f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &v in vs {
        if v.is_finite() {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    // a flat signal (e.g. a zero error) gets a readable band around it
    let pad = if hi > lo { (hi - lo) * 0.05 } else { 1e-3 * (1.0 + hi.abs()) };
    (lo - pad, hi + pad)
}

/// Finite `(t, v)` runs (NaN splits a line).
fn runs(t: &[f64], v: &[f64], stride: usize) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![vec![]];
    for i in (0..t.len().min(v.len())).step_by(stride.max(1)) {
        if v[i].is_finite() {
            out.last_mut().unwrap().push((t[i], v[i]));
        } else if !out.last().unwrap().is_empty() {
            out.push(vec![]);
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

/// One panel of a plot: its y label and its lines (label, colour, values on the shared times).
pub type Panel<'a> = (&'a str, Vec<(&'a str, RGBColor, &'a [f64])>);

/// Above this many decimals a tick label is written in scientific notation.
const MAX_FIXED_DECIMALS: usize = 6;

/// A y tick label with `prec` decimals; a value that rounds to zero has no sign ("-0.000").
/// Beyond [`MAX_FIXED_DECIMALS`] (a residual of 10⁻⁹) the label is scientific, with the
/// significant digits the tick spacing needs at the axis's magnitude `mag` (⌊log₁₀ max |y|⌋).
fn tick_label(y: f64, prec: usize, mag: i32) -> String {
    if prec > MAX_FIXED_DECIMALS {
        let digits = (prec as i32 + mag).clamp(1, 9) as usize;
        return format!("{y:.digits$e}");
    }
    let s = format!("{y:.prec$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// Panels stacked over the shared times `t` (s) as one inline SVG; NaN splits a line.
pub fn svg_panels(t: &[f64], panels: &[Panel]) -> Result<String, String> {
    let mut svg = String::new();
    let stride = t.len().div_ceil(1500).max(1);
    {
        let h = 190 * panels.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (960, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels.len(), 1));
        let (t0, t1) = (t.first().copied().unwrap_or(0.0), t.last().copied().unwrap_or(1.0).max(t.first().copied().unwrap_or(0.0) + 1e-6));
        // each panel's y range and tick decimals (as many as the tick spacing needs)
        let axes: Vec<(f64, f64, usize, i32)> = panels
            .iter()
            .map(|(_, lines)| {
                let (lo, hi) = bounds(lines.iter().flat_map(|l| l.2.iter()));
                let mag = lo.abs().max(hi.abs()).max(f64::MIN_POSITIVE).log10().floor() as i32;
                (lo, hi, ((-((hi - lo) / 8.0).log10()).ceil().max(0.0) as usize).min(30), mag)
            })
            .collect();
        // the y label area fits the longest tick label (at most the longer end's) beside the
        // axis title, about 6.2 px a character at the 9.7 px label font; 78 px for up to 8
        // characters. One width for every panel, so that their time axes line up.
        let longest = axes.iter().map(|&(lo, hi, prec, mag)| tick_label(lo, prec, mag).len().max(tick_label(hi, prec, mag).len())).max().unwrap_or(0);
        let y_label_area = (26.0 + 6.5 * longest as f64).ceil().max(78.0) as u32;
        for (area, ((ylabel, lines), &(lo, hi, prec, mag))) in areas.iter().zip(panels.iter().zip(&axes)) {
            let mut chart = ChartBuilder::on(area)
                .margin(6)
                .x_label_area_size(34)
                .y_label_area_size(y_label_area)
                .build_cartesian_2d(t0..t1, lo..hi)
                .map_err(|e| e.to_string())?;
            // a tick at zero computed as a round-off (6e-30) reads 0
            let fmt = move |y: &f64| tick_label(if y.abs() < 1e-9 * (hi - lo) { 0.0 } else { *y }, prec, mag);
            chart.configure_mesh().x_desc("t (s)").y_desc(*ylabel).y_label_formatter(&fmt).light_line_style(RGBColor(235, 235, 235)).draw().map_err(|e| e.to_string())?;
            for (k, (label, color, v)) in lines.iter().enumerate() {
                // the first series drawn wider, so that identical curves both show
                let width = if k == 0 && lines.len() > 1 { 3 } else { 1 };
                let mut first = true;
                for run in runs(t, v, stride) {
                    let s = chart.draw_series(LineSeries::new(run, color.stroke_width(width))).map_err(|e| e.to_string())?;
                    if first {
                        let c = *color;
                        s.label(*label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
                        first = false;
                    }
                }
            }
            chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.8)).border_style(RGBColor(180, 180, 180)).draw().map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Writes `dir/index.html` (and `dir/compare.json`): the comparison as a page a person reads
/// at a glance. Returns the page's path.
pub fn write_html(dir: &Path, report: &CompareReport, plot: &PlotData) -> Result<std::path::PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut h = String::new();
    h.push_str("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>contact_sim: sim vs hardware</title><style>");
    h.push_str("body{font-family:sans-serif;max-width:1000px;margin:1em auto;color:#222}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}.bad{background:#fde0dc}pre{background:#f7f7f7;padding:8px;font-size:12px;overflow-x:auto}h2{margin-top:1.5em;border-bottom:1px solid #ddd}.sim{color:#1f77b4}.hw{color:#d62728}svg{max-width:100%;height:auto}");
    h.push_str("</style></head><body>");
    h.push_str(&format!(
        "<h1>Simulation vs hardware</h1><p><b class=\"sim\">sim</b>: {}<br><b class=\"hw\">hw</b>: {}</p>",
        esc(&report.sim_bag),
        esc(&report.hw_bag)
    ));
    let a = &report.alignment;
    h.push_str(&format!(
        "<p>Time offset <b>{:+.1} ms</b> (hardware later than simulation; {} time base, {} cross-correlation peak {:.3}, grid {:.2} ms, overlap {:.2} s). Errors are sim − hw after alignment.</p>",
        a.offset_s * 1e3,
        a.time_base,
        a.signal,
        a.peak_correlation,
        a.grid_dt_s * 1e3,
        a.overlap_s
    ));
    // joint table, the worst position RMSE highlighted
    if !report.joints.is_empty() {
        let worst = report.joints.iter().filter_map(|j| j.position.map(|m| m.rmse)).fold(0.0f64, f64::max);
        h.push_str("<h2>Joints</h2><table><tr><th>joint</th><th>pos RMSE</th><th>pos max</th><th>pos r</th><th>vel RMSE</th><th>vel max</th><th>vel r</th><th>eff RMSE</th><th>eff max</th><th>eff r</th></tr>");
        let cell = |m: Option<&super::Metric>| match m {
            Some(m) => format!("<td>{:.4}</td><td>{:.4}</td><td>{}</td>", m.rmse, m.max_abs, m.correlation.map(|c| format!("{c:.3}")).unwrap_or("-".into())),
            None => "<td>-</td><td>-</td><td>-</td>".into(),
        };
        for j in &report.joints {
            let bad = j.position.is_some_and(|m| worst > 0.0 && m.rmse >= 0.5 * worst);
            h.push_str(&format!(
                "<tr{}><td><a href=\"#j-{}\">{}</a></td>{}{}{}</tr>",
                if bad { " class=\"bad\"" } else { "" },
                esc(&j.name),
                esc(&j.name),
                cell(j.position.as_ref()),
                cell(j.velocity.as_ref()),
                cell(j.effort.as_ref())
            ));
        }
        h.push_str("</table><p>position rad or m, velocity rad/s or m/s, effort N·m or N; r: correlation. Highlighted: position RMSE at least half the worst.</p>");
    }
    if !report.wrenches.is_empty() {
        h.push_str("<h2>Wrenches</h2><table><tr><th>topic</th><th>F RMSE (N)</th><th>F max (N)</th><th>F bias (N)</th><th>T RMSE (N·m)</th><th>T bias (N·m)</th></tr>");
        for w in &report.wrenches {
            let v3 = |v: [f64; 3]| format!("[{:.2}, {:.2}, {:.2}]", v[0], v[1], v[2]);
            h.push_str(&format!("<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{:.4}</td><td>{}</td></tr>", esc(&w.topic), w.force_rmse_n, w.force_max_n, v3(w.force_bias_n), w.torque_rmse_nm, v3(w.torque_bias_nm)));
        }
        h.push_str("</table>");
    }
    if !report.contact_events.is_empty() {
        h.push_str("<h2>Contact events</h2><table><tr><th>topic</th><th>onsets sim (s)</th><th>onsets hw (s)</th><th>Δt (ms)</th><th>losses sim (s)</th><th>losses hw (s)</th><th>Δt (ms)</th></tr>");
        let list = |v: &[f64], scale: f64| if v.is_empty() { "-".to_string() } else { v.iter().map(|x| format!("{:.3}", x * scale)).collect::<Vec<_>>().join(", ") };
        for e in &report.contact_events {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.topic),
                list(&e.sim_onsets_s, 1.0),
                list(&e.hw_onsets_s, 1.0),
                list(&e.onset_errors_s, 1e3),
                list(&e.sim_losses_s, 1.0),
                list(&e.hw_losses_s, 1.0),
                list(&e.loss_errors_s, 1e3)
            ));
        }
        h.push_str(&format!("</table><p>In contact while the force exceeds {} N; hardware times aligned; Δt = hardware − simulation, nearest event.</p>", report.contact_events[0].threshold_n));
    }
    h.push_str(&format!("<h2>Summary</h2><pre>{}</pre>", esc(&format_table(report))));
    if !report.warnings.is_empty() {
        h.push_str("<h2>Warnings</h2><ul>");
        for w in &report.warnings {
            h.push_str(&format!("<li>{}</li>", esc(w)));
        }
        h.push_str("</ul>");
    }
    for (name, [p, v, e]) in &plot.joints {
        let err: Vec<f64> = p[0].iter().zip(&p[1]).map(|(a, b)| a - b).collect();
        let svg = svg_panels(
            &plot.t,
            &[
                ("position (rad | m)", vec![("sim", SIM, &p[0][..]), ("hw", HW, &p[1][..])]),
                ("velocity (rad/s | m/s)", vec![("sim", SIM, &v[0][..]), ("hw", HW, &v[1][..])]),
                ("effort (N·m | N)", vec![("sim", SIM, &e[0][..]), ("hw", HW, &e[1][..])]),
                ("position error (rad | m)", vec![("sim − hw", ERR, &err[..])]),
            ],
        )?;
        h.push_str(&format!("<h2 id=\"j-{}\">{}</h2>{svg}", esc(name), esc(name)));
    }
    for (topic, [s, hw]) in &plot.wrenches {
        let err: Vec<f64> = s.iter().zip(hw).map(|(a, b)| a - b).collect();
        let svg = svg_panels(&plot.t, &[("|F| (N)", vec![("sim", SIM, &s[..]), ("hw", HW, &hw[..])]), ("|F| sim − hw (N)", vec![("difference", ERR, &err[..])])])?;
        h.push_str(&format!("<h2>{}</h2>{svg}", esc(topic)));
    }
    h.push_str("</body></html>\n");
    let page = dir.join("index.html");
    std::fs::write(&page, h).map_err(|e| format!("{}: {e}", page.display()))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    let jp = dir.join("compare.json");
    std::fs::write(&jp, json).map_err(|e| format!("{}: {e}", jp.display()))?;
    Ok(page)
}
