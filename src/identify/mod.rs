//! System identification: fits a scene's physical parameters to hardware bags
//! (`contact_sim identify`).
//!
//! Each hardware bag's recorded commands are replayed into the scene as `replay` does (one
//! [`crate::bag::replay::ReplayPlan`] per bag: the same validation, alignment and initial state),
//! the response is compared with the bag's measurements as `compare` reads them (joint
//! positions, velocities, efforts, wrench topics), and the noise-weighted sum of squared
//! residuals is minimised over the parameters within their bounds by a box-constrained
//! Levenberg–Marquardt method with finite-difference Jacobians whose rollouts run in parallel
//! ([`optimizer`]). Parameters are addressed by name and written back as ordinary scene keys
//! ([`params`]), so the fitted scene (`identified.yaml`) loads anywhere a scene does.
//!
//! Outputs in the output directory: `result.json` ([`IdentifyResult`]), `identified.yaml` and
//! `index.html` ([`report`]). See docs/identification.md.

pub mod optimizer;
pub mod params;
pub mod problem;
pub mod report;
pub mod stats;
pub mod synthetic;

use crate::bag::replay::ReplayConfig;
use crate::config::{LoadOptions, SceneFile};
use problem::{DataSet, Problem};
use std::path::{Path, PathBuf};

/// The files `identify` writes into its output directory.
pub const OUTPUT_FILES: [&str; 3] = ["result.json", "identified.yaml", "index.html"];

/// One entry of the parameter file.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamEntry {
    /// Parameter name ([`params`]).
    pub name: String,
    /// Lower bound (the parameter's unit).
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// Starting value; default: the scene's.
    #[serde(default)]
    pub initial: Option<f64>,
}

/// The parameter file (`--params`).
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamsFile {
    /// The parameters to fit.
    pub parameters: Vec<ParamEntry>,
}

/// What to identify from what.
#[derive(Clone, Debug)]
pub struct IdentifyOptions {
    /// The scene file (nominal parameters).
    pub scene: PathBuf,
    /// Scene loading options.
    pub load: LoadOptions,
    /// Training bags.
    pub bags: Vec<PathBuf>,
    /// Held-out bags, replayed with the initial and the fitted parameters.
    pub validate: Vec<PathBuf>,
    /// The parameter file.
    pub params: PathBuf,
    /// Output directory.
    pub out: PathBuf,
    /// Replay settings (topics, joint map, initial state).
    pub replay: ReplayConfig,
    /// Worker threads for the rollouts.
    pub threads: usize,
    /// Optimiser settings.
    pub settings: optimizer::Settings,
    /// Replace the outputs of an earlier run in `out`.
    pub force: bool,
}

/// One fitted parameter in `result.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FittedParameter {
    /// Name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Starting value.
    pub initial: f64,
    /// Fitted value.
    pub value: f64,
    /// Standard deviation (0 at a bound, infinite when the data does not see it).
    pub std: f64,
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// Held at a bound at the end.
    pub at_bound: bool,
}

/// Cost `½ Σ r²` of the noise-weighted residuals.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Cost {
    /// At the initial parameters.
    pub initial: f64,
    /// At the fitted ones.
    pub r#final: f64,
}

/// RMSE of one channel before and after the fit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ChannelRmse {
    /// The bag.
    pub bag: String,
    /// The channel (`arm_joint2 position`).
    pub channel: String,
    /// Unit.
    pub unit: String,
    /// With the initial parameters.
    pub rmse_before: f64,
    /// With the fitted ones.
    pub rmse_after: f64,
    /// Estimated noise (std) of the measurement.
    pub noise_std: f64,
}

/// `result.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct IdentifyResult {
    /// The scene fitted.
    pub scene: String,
    /// Training bags.
    pub bags: Vec<String>,
    /// The parameters.
    pub parameters: Vec<FittedParameter>,
    /// Cost before and after.
    pub cost: Cost,
    /// Accepted iterations.
    pub iterations: usize,
    /// Rollouts (one per bag set and parameter vector).
    pub rollouts: usize,
    /// Wall time (s).
    pub wall_s: f64,
    /// Worker threads.
    pub threads: usize,
    /// Why the optimiser stopped.
    pub stop: String,
    /// Residuals (noise-weighted samples) fitted.
    pub residuals: usize,
    /// `s`: RMS of the weighted residuals at the result (≈ 1 when the model fits to the noise).
    pub residual_scale: f64,
    /// Per-iteration history.
    pub history: Vec<optimizer::Iteration>,
    /// Correlation matrix of the parameters (parameter order; null where undefined).
    pub correlation: Vec<Vec<Option<f64>>>,
    /// Training channels before and after.
    pub training: Vec<ChannelRmse>,
    /// Held-out channels before and after.
    pub validation: Vec<ChannelRmse>,
    /// Does the fit generalise: the held-out cost fell (`None` without validation bags).
    pub generalises: Option<bool>,
    /// Held-out cost `½ Σ r²` before and after.
    pub validation_cost: Option<Cost>,
    /// Parameters the data cannot tell apart, parameters at a bound, replay problems.
    pub warnings: Vec<String>,
}

/// Signals of one channel for the report's plots.
pub struct ChannelTrace {
    /// Training (true) or held-out channel.
    pub training: bool,
    /// Which.
    pub rmse: ChannelRmse,
    /// Measurement times (s).
    pub t: Vec<f64>,
    /// Measured.
    pub measured: Vec<f64>,
    /// Simulated with the initial parameters.
    pub before: Vec<f64>,
    /// Simulated with the fitted parameters.
    pub after: Vec<f64>,
}

/// An error of `identify`: one line naming the file, key or option.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct IdentifyError(pub String);

fn err<T>(s: impl Into<String>) -> Result<T, IdentifyError> {
    Err(IdentifyError(s.into()))
}

/// Runs the identification (see the module docs); `progress` gets a line per iteration.
pub fn identify(opts: &IdentifyOptions, progress: &mut (dyn FnMut(&str) + Send)) -> Result<IdentifyResult, IdentifyError> {
    let started = std::time::Instant::now();
    check_outputs(opts)?;
    let problem = load_problem(opts)?;
    let names: Vec<String> = problem.params.iter().map(|p| p.name.clone()).collect();
    let training = problem::data_set(&opts.bags, &problem.nominal, &opts.replay).map_err(IdentifyError)?;
    let validation = problem::data_set(&opts.validate, &problem.nominal, &opts.replay).map_err(IdentifyError)?;
    let mut warnings: Vec<String> = training.bags.iter().chain(&validation.bags).flat_map(|b| b.plan.warnings.iter().cloned()).collect();
    let constant: Vec<&String> = training.constant.iter().chain(&validation.constant).collect();
    if !constant.is_empty() {
        warnings.push(format!("left out as not measured (the same value in every sample): {}", constant.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
    }
    progress(&format!(
        "identify: {} parameters, {} bags, {} channels, {} residuals, {} threads",
        problem.params.len(),
        training.bags.len(),
        training.channels.len(),
        training.residual_count(),
        opts.threads
    ));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.threads.max(1)).build().map_err(|e| IdentifyError(format!("--threads {}: {e}", opts.threads)))?;
    let residuals = |x: &[f64]| problem.residuals(x, &training);
    let mut line = |it: &optimizer::Iteration| {
        let moved: Vec<String> = it.moved.iter().map(|(i, d)| format!("{} {:+.4}", names[*i], d)).collect();
        progress(&format!("iteration {:>3}: cost {:.6e}  step {:.2e}  λ {:.1e}  rollouts {}  moved most: {}", it.iteration, it.cost, it.step, it.lambda, it.rollouts, moved.join(", ")));
    };
    let fit = pool.install(|| optimizer::fit(&residuals, &problem.initial, &problem.bounds, &opts.settings, &mut line)).map_err(IdentifyError)?;
    let unc = stats::uncertainty(&fit.jacobian, &fit.residuals, &names, &fit.at_bound);
    warnings.extend(unc.warnings.iter().cloned());
    for (i, p) in problem.params.iter().enumerate() {
        if fit.at_bound[i] {
            let (lo, hi) = problem.bounds[i];
            let which = if (fit.x[i] - lo).abs() <= (fit.x[i] - hi).abs() { "lower" } else { "upper" };
            warnings.push(format!("{} ends at its {which} bound ({}): the best fit may lie beyond it; widen the bound if that is physical", p.name, fit.x[i]));
        }
    }
    let (train_traces, _) = pool.install(|| traces(&problem, &training, &fit.x, true)).map_err(IdentifyError)?;
    let (val_traces, val_cost) = pool.install(|| traces(&problem, &validation, &fit.x, false)).map_err(IdentifyError)?;
    let generalises = val_cost.map(|c| c.r#final < c.initial);
    if generalises == Some(false) {
        warnings.push("the fit does not generalise: the held-out bags fit worse with the fitted parameters than with the initial ones".into());
    }
    let result = IdentifyResult {
        scene: opts.scene.display().to_string(),
        bags: problem::display_paths(&opts.bags),
        parameters: problem
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| FittedParameter {
                name: p.name.clone(),
                unit: p.unit.into(),
                initial: problem.initial[i],
                value: fit.x[i],
                std: unc.std[i],
                min: problem.bounds[i].0,
                max: problem.bounds[i].1,
                at_bound: fit.at_bound[i],
            })
            .collect(),
        cost: Cost { initial: fit.cost_initial, r#final: fit.cost_final },
        iterations: fit.history.len(),
        rollouts: fit.rollouts,
        wall_s: started.elapsed().as_secs_f64(),
        threads: opts.threads,
        stop: fit.stop.into(),
        residuals: fit.residuals.len(),
        residual_scale: unc.residual_scale,
        history: fit.history.clone(),
        correlation: unc.correlation.iter().map(|r| r.iter().map(|c| c.is_finite().then_some(*c)).collect()).collect(),
        training: train_traces.iter().map(|t| t.rmse.clone()).collect(),
        validation: val_traces.iter().map(|t| t.rmse.clone()).collect(),
        generalises,
        validation_cost: val_cost,
        warnings,
    };
    write_outputs(opts, &problem, &fit.x, &result, &train_traces, &val_traces)?;
    Ok(result)
}

/// Refuses an output directory holding an earlier run's files (unless `force`) or one of the
/// inputs.
fn check_outputs(opts: &IdentifyOptions) -> Result<(), IdentifyError> {
    if opts.bags.is_empty() {
        return err("identify: give at least one hardware bag with --bag");
    }
    if opts.out.exists() && !opts.out.is_dir() {
        return err(format!("--out {}: exists and is not a directory", opts.out.display()));
    }
    let inputs: Vec<PathBuf> = std::iter::once(&opts.scene).chain(&opts.bags).chain(&opts.validate).chain(std::iter::once(&opts.params)).filter_map(|p| p.canonicalize().ok()).collect();
    for f in OUTPUT_FILES {
        let path = opts.out.join(f);
        if let Ok(c) = path.canonicalize() {
            if inputs.contains(&c) {
                return err(format!("--out {}: would overwrite the input {}; choose another output directory", opts.out.display(), path.display()));
            }
            if !opts.force {
                return err(format!("--out {}: already holds {f} from an earlier run; choose a new directory or pass --force to replace it", opts.out.display()));
            }
        }
    }
    if opts.threads == 0 || opts.threads > MAX_THREADS {
        return err(format!("--threads: {} is outside [1, {MAX_THREADS}]", opts.threads));
    }
    Ok(())
}

/// Most worker threads `--threads` may ask for (each holds a simulation and a rollout's samples).
pub const MAX_THREADS: usize = 256;

/// Loads the scene and resolves and checks the parameter file.
fn load_problem(opts: &IdentifyOptions) -> Result<Problem, IdentifyError> {
    let scene_name = opts.scene.display().to_string();
    let text = crate::validate::read_text_bounded(&opts.scene, crate::validate::MAX_TEXT_FILE_BYTES).map_err(|e| IdentifyError(format!("{scene_name}: {e}")))?;
    let nominal = crate::config::load_scene_str_with(&text, &opts.scene, &opts.load).map_err(|e| IdentifyError(e.to_string()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| IdentifyError(format!("{scene_name}: {e}")))?;
    let file: SceneFile = serde_yaml::from_value(doc.clone()).map_err(|e| IdentifyError(format!("{scene_name}: {e}")))?;
    let pname = opts.params.display().to_string();
    let ptext = crate::validate::read_text_bounded(&opts.params, crate::validate::MAX_TEXT_FILE_BYTES).map_err(|e| IdentifyError(format!("{pname}: {e}")))?;
    let pf: ParamsFile = serde_yaml::from_str(&ptext).map_err(|e| IdentifyError(format!("{pname}: {e}")))?;
    if pf.parameters.is_empty() {
        return err(format!("{pname}: parameters: the list is empty; name at least one parameter"));
    }
    let (mut params, mut bounds, mut initial) = (vec![], vec![], vec![]);
    for (i, e) in pf.parameters.iter().enumerate() {
        let at = format!("{pname}: parameters[{i}] ('{}')", e.name);
        for (key, v) in [("min", Some(e.min)), ("max", Some(e.max)), ("initial", e.initial)] {
            if let Some(v) = v {
                if !v.is_finite() {
                    return err(format!("{at}: {key} is {v}; give a finite number"));
                }
            }
        }
        if e.min >= e.max {
            return err(format!("{at}: min {} is not below max {}; the bounds must satisfy min < max", e.min, e.max));
        }
        let resolved = params::resolve(&e.name, &nominal, &file).map_err(|m| IdentifyError(format!("{pname}: {m}")))?;
        for p in resolved {
            if params.iter().any(|q: &params::Parameter| q.name == p.name) {
                return err(format!("{at}: {} is listed twice", p.name));
            }
            let x0 = match (e.initial, p.scene_value) {
                (Some(v), _) | (None, Some(v)) => v,
                (None, None) => return err(format!("{at}: the scene does not set {}; give `initial`", p.name)),
            };
            if !(e.min..=e.max).contains(&x0) {
                let whence = if e.initial.is_some() { "initial" } else { "the scene's value" };
                return err(format!("{at}: {whence} {x0} {} is outside [min, max] = [{}, {}]", p.unit, e.min, e.max));
            }
            params.push(p);
            bounds.push((e.min, e.max));
            initial.push(x0);
        }
    }
    let problem = Problem { scene_path: opts.scene.clone(), doc, nominal, params, bounds, initial, load: opts.load.clone() };
    // every bound must make a scene that loads (a negative friction, a zero mass): said now, not
    // in the middle of the fit
    for (which, x) in [("min", problem.bounds.iter().map(|b| b.0).collect::<Vec<f64>>()), ("max", problem.bounds.iter().map(|b| b.1).collect())] {
        if let Err(e) = problem.scene(&x) {
            return err(format!("{pname}: with every parameter at its {which} the scene does not load: {e}; narrow the bounds to what the scene accepts"));
        }
    }
    Ok(problem)
}

/// Every channel of `data` simulated with the problem's initial and with the fitted `x`; the
/// set's cost before and after (`None` for an empty set).
fn traces(problem: &Problem, data: &DataSet, x: &[f64], training: bool) -> Result<(Vec<ChannelTrace>, Option<Cost>), String> {
    if data.bags.is_empty() {
        return Ok((vec![], None));
    }
    let (before, after) = rayon::join(|| problem.predict(&problem.initial, data), || problem.predict(x, data));
    let (before, after) = (before?, after?);
    let (mut cb, mut ca) = (0.0, 0.0);
    let mut out = vec![];
    for ((c, b), a) in data.channels.iter().zip(before).zip(after) {
        let rmse = |s: &[f64]| (s.iter().zip(&c.measured).map(|(s, m)| (s - m) * (s - m)).sum::<f64>() / c.measured.len() as f64).sqrt();
        let cost = |s: &[f64]| 0.5 * s.iter().zip(&c.measured).map(|(s, m)| ((s - m) / c.sigma).powi(2)).sum::<f64>();
        cb += cost(&b);
        ca += cost(&a);
        out.push(ChannelTrace {
            training,
            rmse: ChannelRmse { bag: data.bags[c.bag].name.clone(), channel: c.label.clone(), unit: c.unit.into(), rmse_before: rmse(&b), rmse_after: rmse(&a), noise_std: c.sigma },
            t: c.t_s.clone(),
            measured: c.measured.clone(),
            before: b,
            after: a,
        });
    }
    Ok((out, Some(Cost { initial: cb, r#final: ca })))
}

/// Writes `result.json`, `identified.yaml` and `index.html` into the output directory.
fn write_outputs(opts: &IdentifyOptions, problem: &Problem, x: &[f64], result: &IdentifyResult, train: &[ChannelTrace], val: &[ChannelTrace]) -> Result<(), IdentifyError> {
    let out = &opts.out;
    std::fs::create_dir_all(out).map_err(|e| IdentifyError(format!("--out {}: {e}", out.display())))?;
    let write = |name: &str, data: &str| std::fs::write(out.join(name), data).map_err(|e| IdentifyError(format!("{}: {e}", out.join(name).display())));
    write("result.json", &serde_json::to_string_pretty(result).map_err(|e| IdentifyError(e.to_string()))?)?;
    let mut doc = problem.document(x).map_err(IdentifyError)?;
    let scene_dir = problem::dir_of(&opts.scene);
    let scene_dir = if scene_dir.as_os_str().is_empty() { Path::new(".").to_path_buf() } else { scene_dir };
    params::rebase_paths(&mut doc, &scene_dir, out);
    let mut yaml = format!(
        "# {} with the parameters identified by `contact_sim identify` from {} ({} iterations, cost {:.4e} → {:.4e}).\n# Fitted:\n",
        opts.scene.display(),
        result.bags.join(", "),
        result.iterations,
        result.cost.initial,
        result.cost.r#final
    );
    for p in &result.parameters {
        let unit = if p.unit == "1" { String::new() } else { format!(" {}", p.unit) };
        yaml.push_str(&format!("#   {} = {}{unit} (± {:.3e}, was {})\n", p.name, p.value, p.std, p.initial));
    }
    yaml.push_str(&serde_yaml::to_string(&doc).map_err(|e| IdentifyError(e.to_string()))?);
    write("identified.yaml", &yaml)?;
    write("index.html", &report::page(result, train, val).map_err(IdentifyError)?)?;
    Ok(())
}
