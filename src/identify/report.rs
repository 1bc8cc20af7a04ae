//! `index.html` of an identification: the verdict and warnings first, then the parameter table
//! with 95 % intervals, the correlation matrix, the cost history, the channels' RMSE before and
//! after, and per channel the measured signal with the simulation before and after the fit (and
//! the residual after). One self-contained file of inline SVG (plotters, as `compare`'s page).

use super::{ChannelTrace, IdentifyResult};
use crate::compare::report::{esc, svg_panels};
use plotters::prelude::*;

const MEASURED: RGBColor = RGBColor(214, 39, 40);
const BEFORE: RGBColor = RGBColor(160, 160, 160);
const AFTER: RGBColor = RGBColor(31, 119, 180);

/// The page.
pub fn page(r: &IdentifyResult, train: &[ChannelTrace], val: &[ChannelTrace]) -> Result<String, String> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>contact_sim: identification</title><style>");
    h.push_str("body{font-family:sans-serif;max-width:1000px;margin:1em auto;color:#222}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}h2{margin-top:1.5em;border-bottom:1px solid #ddd}.warn{background:#fff4d6;padding:6px 10px;border-left:4px solid #e0a800}.bound{background:#fde0dc}.ok{color:#1a7f37}.bad{color:#c62828}");
    h.push_str("</style></head><body>");
    h.push_str(&format!("<h1>Identification of {}</h1>", esc(&r.scene)));
    h.push_str(&format!(
        "<p>Bags: {}.<br>{} parameters, {} residuals; cost ½Σr² {:.4e} → <b>{:.4e}</b> in {} iterations ({} rollouts, {:.1} s on {} threads; stopped: {}). Residual scale s = {:.3} (≈ 1 when the model fits to the measurement noise).</p>",
        esc(&r.bags.join(", ")),
        r.parameters.len(),
        r.residuals,
        r.cost.initial,
        r.cost.r#final,
        r.iterations,
        r.rollouts,
        r.wall_s,
        r.threads,
        esc(&r.stop),
        r.residual_scale
    ));
    if let (Some(g), Some(c)) = (r.generalises, r.validation_cost) {
        let (class, verdict) = if g { ("ok", "The fit generalises") } else { ("bad", "The fit does not generalise") };
        h.push_str(&format!("<p class=\"{class}\"><b>{verdict}</b>: held-out cost {:.4e} with the initial parameters, {:.4e} with the fitted ones.</p>", c.initial, c.r#final));
    } else {
        h.push_str("<p>No held-out bag (<code>--validate</code>): whether the fit generalises is not known.</p>");
    }
    if !r.warnings.is_empty() {
        h.push_str("<h2>Warnings</h2>");
        for w in &r.warnings {
            h.push_str(&format!("<p class=\"warn\">{}</p>", esc(w)));
        }
    }
    h.push_str("<h2>Parameters</h2><table><tr><th>parameter</th><th>unit</th><th>initial</th><th>fitted</th><th>std</th><th>95 % interval</th><th>min</th><th>max</th></tr>");
    for p in &r.parameters {
        let interval = if p.at_bound { "at bound".to_string() } else if p.std.is_finite() { format!("[{:.5}, {:.5}]", p.value - 1.96 * p.std, p.value + 1.96 * p.std) } else { "not seen by the data".into() };
        h.push_str(&format!(
            "<tr{}><td>{}</td><td>{}</td><td>{:.5}</td><td><b>{:.5}</b></td><td>{:.2e}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if p.at_bound { " class=\"bound\"" } else { "" },
            esc(&p.name),
            esc(&p.unit),
            p.initial,
            p.value,
            p.std,
            interval,
            p.min,
            p.max
        ));
    }
    h.push_str("</table><p>Highlighted: held at a bound.</p>");
    h.push_str(&correlation_table(r));
    h.push_str("<h2>Cost history</h2>");
    h.push_str(&cost_plot(r)?);
    for (title, traces) in [("Training channels", train), ("Held-out channels", val)] {
        if traces.is_empty() {
            continue;
        }
        h.push_str(&format!("<h2>{title}</h2><table><tr><th>bag</th><th>channel</th><th>unit</th><th>noise std</th><th>RMSE before</th><th>RMSE after</th></tr>"));
        for t in traces {
            let c = &t.rmse;
            h.push_str(&format!(
                "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{:.3e}</td><td>{:.4e}</td><td>{:.4e}</td></tr>",
                esc(&c.bag),
                anchor(t),
                esc(&c.channel),
                esc(&c.unit),
                c.noise_std,
                c.rmse_before,
                c.rmse_after
            ));
        }
        h.push_str("</table>");
        for t in traces {
            let resid: Vec<f64> = t.after.iter().zip(&t.measured).map(|(a, m)| a - m).collect();
            let unit = &t.rmse.unit;
            let (l1, l2) = (format!("{} ({unit})", t.rmse.channel), format!("fitted − measured ({unit})"));
            let svg = svg_panels(&t.t, &[(l1.as_str(), vec![("measured", MEASURED, &t.measured[..]), ("before", BEFORE, &t.before[..]), ("after", AFTER, &t.after[..])]), (l2.as_str(), vec![("residual", AFTER, &resid[..])])])?;
            h.push_str(&format!("<h3 id=\"{}\">{} — {}</h3>{svg}", anchor(t), esc(&t.rmse.channel), esc(&t.rmse.bag)));
        }
    }
    h.push_str("</body></html>\n");
    Ok(h)
}

fn anchor(t: &ChannelTrace) -> String {
    let s: String = format!("{}-{}-{}", if t.training { "t" } else { "v" }, t.rmse.bag, t.rmse.channel).chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    s
}

/// The correlation matrix as a table, cells coloured by magnitude.
fn correlation_table(r: &IdentifyResult) -> String {
    let mut h = String::from("<h2>Correlation</h2><table><tr><th></th>");
    for i in 0..r.parameters.len() {
        h.push_str(&format!("<th title=\"{}\">{}</th>", esc(&r.parameters[i].name), i + 1));
    }
    h.push_str("</tr>");
    for (i, row) in r.correlation.iter().enumerate() {
        h.push_str(&format!("<tr><td>{} {}</td>", i + 1, esc(&r.parameters[i].name)));
        for c in row {
            match c {
                Some(c) => {
                    let a = c.abs();
                    let (rr, gg, bb) = if *c >= 0.0 { (255, (255.0 * (1.0 - 0.7 * a)) as u8, (255.0 * (1.0 - 0.7 * a)) as u8) } else { ((255.0 * (1.0 - 0.7 * a)) as u8, (255.0 * (1.0 - 0.7 * a)) as u8, 255) };
                    h.push_str(&format!("<td style=\"background:rgb({rr},{gg},{bb})\">{c:+.2}</td>"));
                }
                None => h.push_str("<td>-</td>"),
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><p>Correlation of the estimates (−1 … 1); near ±1: the data moves the two together. Empty: a parameter at a bound or not seen.</p>");
    h
}

/// The cost after each iteration (log scale), iteration 0 the initial cost.
fn cost_plot(r: &IdentifyResult) -> Result<String, String> {
    let pts: Vec<(f64, f64)> = std::iter::once((0.0, r.cost.initial)).chain(r.history.iter().map(|i| (i.iteration as f64, i.cost))).filter(|p| p.1 > 0.0 && p.1.is_finite()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (lo, hi) = pts.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
        let (lo, hi) = if lo.is_finite() && hi > 0.0 { (lo * 0.8, hi * 1.25) } else { (1e-3, 1.0) };
        let n = pts.last().map(|p| p.0).unwrap_or(1.0).max(1.0);
        let mut chart = ChartBuilder::on(&root).margin(8).x_label_area_size(34).y_label_area_size(80).build_cartesian_2d(0.0..n, (lo..hi).log_scale()).map_err(|e| e.to_string())?;
        chart.configure_mesh().x_desc("iteration").y_desc("cost ½Σr²").y_label_formatter(&|y| format!("{y:.2e}")).light_line_style(RGBColor(235, 235, 235)).draw().map_err(|e| e.to_string())?;
        chart.draw_series(LineSeries::new(pts.clone(), AFTER.stroke_width(2))).map_err(|e| e.to_string())?;
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, AFTER.filled()))).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}
