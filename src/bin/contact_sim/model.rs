//! `contact_sim model`: inspect a URDF (DOF, joints, masses, limits; M(q), h(q, v), RNEA).

use super::*;

pub fn model(urdf: &Path, floating: bool, q: Option<Vec<f64>>, v: Option<Vec<f64>>, a: Option<Vec<f64>>, json: bool, opts: &config::LoadOptions) -> Result<()> {
    let (model, warnings) = config::load_urdf_model(urdf, floating, opts)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let summary = report::model_summary(&model);
    let names = model.actuated_joint_names();
    let n1 = names.len();
    let base = if floating { 6 } else { 0 };
    use contact_sim::validate::{Range, JOINT_ACCELERATION, JOINT_POSITION, JOINT_VELOCITY};
    let check = |x: &Option<Vec<f64>>, what: &str, range: Range| -> Result<()> {
        if let Some(x) = x {
            if x.len() != n1 {
                bail!("--{what}: expected {n1} values (one per movable joint: {}), got {}", names.join(", "), x.len());
            }
            if let Some(i) = x.iter().position(|v| !v.is_finite()) {
                bail!("--{what}: value for joint '{}' is not finite", names[i]);
            }
            for (i, &value) in x.iter().enumerate() {
                contact_sim::validate::finite_in(value, range, &names[i]).map_err(|e| anyhow::anyhow!("--{what}: {e}"))?;
            }
        }
        Ok(())
    };
    check(&q, "q", JOINT_POSITION)?;
    check(&v, "v", JOINT_VELOCITY)?;
    check(&a, "a", JOINT_ACCELERATION)?;
    let mut dyn_out = None;
    if q.is_some() || v.is_some() || a.is_some() {
        let mut state = contact_sim::state::State::new(&model);
        let mut ws = contact_sim::workspace::Workspace::new(&model, &SolverConfig::default());
        let qa = q.unwrap_or(vec![0.0; n1]);
        let va = v.unwrap_or(vec![0.0; n1]);
        let aa = a.unwrap_or(vec![0.0; n1]);
        let mut acc = vec![0.0; model.nv];
        for (i, body) in model.bodies.iter().filter(|b| b.joint.kind.nv() == 1).enumerate() {
            state.q[body.joint.q_index] = qa[i];
            state.v[body.joint.v_index] = va[i];
            acc[body.joint.v_index] = aa[i];
        }
        kinematics::forward_kinematics(&model, &state.q, &state.v, &mut ws);
        dynamics::update_body_inertias(&model, &mut ws);
        dynamics::mass_matrix(&model, &mut ws);
        dynamics::bias_forces(&model, &mut ws, &state.v);
        let mut tau = vec![0.0; model.nv];
        dynamics::inverse_dynamics(&model, &mut ws, &state.v, &acc, &mut tau);
        let m: Vec<Vec<f64>> = (0..model.nv).map(|i| (0..model.nv).map(|j| ws.mass_matrix.get(i, j)).collect()).collect();
        dyn_out = Some((m, ws.bias.as_slice().to_vec(), tau));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            model: &'a report::ModelSummary,
            dof_names: &'a [String],
            mass_matrix: Option<&'a Vec<Vec<f64>>>,
            bias_forces: Option<&'a Vec<f64>>,
            inverse_dynamics: Option<&'a Vec<f64>>,
        }
        let o = Out {
            model: &summary,
            dof_names: &model.dof_names,
            mass_matrix: dyn_out.as_ref().map(|d| &d.0),
            bias_forces: dyn_out.as_ref().map(|d| &d.1),
            inverse_dynamics: dyn_out.as_ref().map(|d| &d.2),
        };
        println!("{}", serde_json::to_string_pretty(&o)?);
        return Ok(());
    }
    println!("{}: {} links, {} joints, DOF {} (nq {}), total mass {:.3} kg", urdf.display(), summary.links.len(), summary.joints.len(), summary.nv, summary.nq, summary.total_mass_kg);
    println!("\nlinks{:<21} {:>9} {:>28} {:>36} {:>4}", "", "mass kg", "com (link frame) m", "principal inertia kg·m²", "geom");
    for l in &summary.links {
        println!(
            "  {:<24} {:>9.4} [{:8.4} {:8.4} {:8.4}] [{:10.3e} {:10.3e} {:10.3e}] {:>4}",
            l.name, l.mass_kg, l.com_m[0], l.com_m[1], l.com_m[2], l.principal_inertia_kg_m2[0], l.principal_inertia_kg_m2[1], l.principal_inertia_kg_m2[2], l.collision_shapes
        );
    }
    println!("\njoints{:<20} {:<10} {:<22} {:>20} {:>9} {:>9} {:>8} {:>8}", "", "type", "parent", "limits", "vel lim", "effort", "damping", "friction");
    let opt = |x: Option<f64>| x.map(fixed3).unwrap_or_else(|| "-".into());
    for j in &summary.joints {
        let lim = j.limits.map(|(l, u)| format!("[{}, {}]", fixed3(l), fixed3(u))).unwrap_or_else(|| "-".into());
        println!(
            "  {:<24} {:<10} {:<22} {:>20} {:>9} {:>9} {:>8} {:>8}{}",
            j.name,
            format!("{:?}", j.kind).to_lowercase(),
            j.parent,
            lim,
            opt(j.velocity_limit),
            opt(j.effort_limit),
            fixed3(j.damping),
            fixed3(j.friction),
            j.mimics.as_ref().map(|m| format!("   mimic: {m}")).unwrap_or_default()
        );
    }
    if let Some((m, h, tau)) = dyn_out {
        let w = model.dof_names.iter().map(|n| n.len()).max().unwrap_or(4).max(4);
        println!(
            "\nmass matrix M(q) (kg·m², kg·m, kg; columns numbered as the rows){}",
            if base > 0 { "; the first 6 DOF are the floating base [v_body; ω_body]" } else { "" }
        );
        print!("{:>w$}    ", "");
        for j in 0..model.nv {
            print!(" {:>9}", format!("[{j}]"));
        }
        println!();
        for (i, row) in m.iter().enumerate() {
            print!("{:>w$} [{i:>2}]", model.dof_names[i]);
            for x in row {
                print!(" {:>9.4}", x);
            }
            println!();
        }
        println!("\n{:>w$} {:>14} {:>14}", "DOF", "h(q,v)", "τ = M a + h");
        for i in 0..model.nv {
            println!("{:>w$} {:>14.6} {:>14.6}", model.dof_names[i], h[i], tau[i]);
        }
    } else {
        println!("\n(give --q/--v/--a to print M(q), h(q,v) and inverse-dynamics torques)");
    }
    Ok(())
}

/// A table number with 3 decimals, or in scientific notation (`1.000e300`) when its magnitude
/// is 10⁶ or more, so that huge but finite values do not print hundreds of digits.
fn fixed3(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e6 {
        format!("{x:.3e}")
    } else {
        format!("{x:.3}")
    }
}
