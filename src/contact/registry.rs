//! The one list of contact methods. Everything that names methods — the scene schema
//! ([`SolverConfig`]), the CLI's `--solver` ([`SolverKind`]), the node's `solver` parameter and
//! its choices, the launch files' choices (checked by a test), `bench` and the conformance
//! suite — comes from the `contact_methods!` invocation at the bottom of this file.
//!
//! Adding a method: implement [`MethodParams`] and [`ContactMethod`] in a new file of
//! `src/contact/`, then add one line `Variant(ParamsType)` below (the variant name in snake case
//! must equal the params' `NAME`; `tests/registry.rs` checks it).

use super::method::{Capabilities, ConstraintStage, ContactMethod, MethodParams, ParamError, Tolerance, UnitProbe};
use super::{BisectionParams, EcpParams, FrictionModel, LstableParams, NewtonParams, PgsParams, VfpiParams};
use crate::model::Model;

/// The loosest main stopping tolerance a method accepts, in its own unit (N·s, m/s, relative):
/// a converged solve must mean something.
pub const MAX_TOLERANCE: f64 = 1.0;

macro_rules! contact_methods {
    ($( $(#[$doc:meta])* $variant:ident($params:ty) ),+ $(,)?) => {
        /// Method selection and parameters, as written in a scene (`solver: {kind: NAME, ...}`).
        #[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum SolverConfig {
            $( $(#[$doc])* $variant($params), )+
        }

        /// A method's name, for command lines (`--solver`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum SolverKind {
            $( $(#[$doc])* $variant, )+
        }

        /// A built method with its scratch memory.
        pub enum Solver {
            $( $(#[$doc])* $variant(Box<<$params as MethodParams>::Runtime>), )+
        }

        impl SolverKind {
            /// Every method, in registry order.
            pub const ALL: &'static [SolverKind] = &[$( SolverKind::$variant ),+];
            /// The method's name.
            pub fn name(self) -> &'static str {
                match self { $( SolverKind::$variant => <$params as MethodParams>::NAME, )+ }
            }
            /// One-line summary.
            pub fn summary(self) -> &'static str {
                match self { $( SolverKind::$variant => <$params as MethodParams>::SUMMARY, )+ }
            }
            /// What it can do.
            pub fn capabilities(self) -> Capabilities {
                match self { $( SolverKind::$variant => <$params as MethodParams>::CAPABILITIES, )+ }
            }
            /// The method's default parameters.
            pub fn default_config(self) -> SolverConfig {
                match self { $( SolverKind::$variant => SolverConfig::$variant(<$params>::default()), )+ }
            }
        }

        impl SolverConfig {
            /// Every method's name, in registry order.
            pub const KINDS: &'static [&'static str] = &[$( <$params as MethodParams>::NAME ),+];
            /// The choices of the node's `solver` parameter: empty or `scene` (the scene's own
            /// method and parameters), then every method.
            pub const PARAMETER_CHOICES: &'static [&'static str] = &["", "scene", $( <$params as MethodParams>::NAME ),+];

            /// The method's name.
            pub fn kind(&self) -> &'static str {
                self.solver_kind().name()
            }
            /// The method, without its parameters.
            pub fn solver_kind(&self) -> SolverKind {
                match self { $( SolverConfig::$variant(_) => SolverKind::$variant, )+ }
            }
            /// What the method can do.
            pub fn capabilities(&self) -> Capabilities {
                self.solver_kind().capabilities()
            }
            /// The friction law the method's solution satisfies.
            pub fn friction_model(&self) -> FrictionModel {
                self.capabilities().friction
            }
            /// Checks every parameter's range, and that the main stopping tolerance is finite
            /// and at most `MAX_TOLERANCE` (1) in its unit (a looser one ends every solve before
            /// any contact is resolved while reporting it converged).
            pub fn validate(&self) -> Result<(), ParamError> {
                match self { $( SolverConfig::$variant(p) => p.validate(), )+ }?;
                let t = self.tolerance();
                if !(t.value >= 0.0 && t.value <= MAX_TOLERANCE) {
                    return Err(ParamError { field: format!("solver.{}", t.field), requirement: format!("must be finite and in [0, {MAX_TOLERANCE}] {}, got {}", t.unit, t.value) });
                }
                Ok(())
            }
            /// Why the method cannot simulate something in `model` beyond its capabilities
            /// ([`MethodParams::unsupported_in`]).
            pub fn unsupported_in(&self, model: &Model) -> Option<String> {
                match self { $( SolverConfig::$variant(p) => p.unsupported_in(model), )+ }
            }
            /// The method's own coverage rule beyond its [`crate::contact::SceneCoverage`]
            /// ([`MethodParams::outside_coverage`]).
            pub fn outside_coverage(&self, model: &Model) -> Option<String> {
                match self { $( SolverConfig::$variant(p) => p.outside_coverage(model), )+ }
            }
            /// The line `contact_sim bench` prints when this method ran
            /// ([`MethodParams::bench_note`]).
            pub fn bench_note(&self) -> Option<String> {
                match self { $( SolverConfig::$variant(p) => p.bench_note(), )+ }
            }
            /// The method's micro-benchmark of its unit of work ([`MethodParams::unit_probe`]).
            pub fn unit_probe(&self) -> Option<Box<dyn UnitProbe>> {
                match self { $( SolverConfig::$variant(p) => p.unit_probe(), )+ }
            }
            /// The main stopping tolerance, with its unit.
            pub fn tolerance(&self) -> Tolerance {
                match self { $( SolverConfig::$variant(p) => p.tolerance(), )+ }
            }
            /// Sets the main stopping tolerance.
            pub fn set_tolerance(&mut self, value: f64) {
                match self { $( SolverConfig::$variant(p) => p.set_tolerance(value), )+ }
            }
            /// The iteration cap.
            pub fn max_iterations(&self) -> u32 {
                match self { $( SolverConfig::$variant(p) => p.max_iterations(), )+ }
            }
            /// Sets the iteration cap.
            pub fn set_max_iterations(&mut self, n: u32) {
                match self { $( SolverConfig::$variant(p) => p.set_max_iterations(n), )+ }
            }
            /// Every parameter as `key=value`, for run and bench reports (e.g.
            /// `pgs(max_iterations=200, tolerance=1e-6, relaxation=1)`).
            pub fn describe(&self) -> String {
                let value = match self { $( SolverConfig::$variant(p) => serde_json::to_value(p), )+ };
                let fields = match value {
                    Ok(serde_json::Value::Object(map)) => map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
                    _ => String::new(),
                };
                format!("{}({fields})", self.kind())
            }
        }

        impl Solver {
            /// Builds the method for `model` (all scratch allocated here).
            pub fn new(config: &SolverConfig, model: &Model) -> Self {
                match config { $( SolverConfig::$variant(p) => Solver::$variant(Box::new(p.build(model))), )+ }
            }
            /// The method, without its parameters.
            pub fn solver_kind(&self) -> SolverKind {
                match self { $( Solver::$variant(_) => SolverKind::$variant, )+ }
            }
            /// The method's name.
            pub fn kind(&self) -> &'static str {
                self.solver_kind().name()
            }
            /// What the method can do.
            pub fn capabilities(&self) -> Capabilities {
                self.solver_kind().capabilities()
            }
            /// The parameters in use.
            pub fn config(&self) -> SolverConfig {
                match self { $( Solver::$variant(s) => SolverConfig::$variant(s.params().clone()), )+ }
            }
            /// Sets the main stopping tolerance (between steps).
            pub fn set_tolerance(&mut self, value: f64) {
                match self { $( Solver::$variant(s) => s.params_mut().set_tolerance(value), )+ }
            }
            /// Sets the iteration cap (between steps).
            pub fn set_max_iterations(&mut self, n: u32) {
                match self { $( Solver::$variant(s) => s.params_mut().set_max_iterations(n.max(1)), )+ }
            }
            /// The method's entry into the constraint stage.
            pub fn stage(&mut self) -> ConstraintStage<'_> {
                match self { $( Solver::$variant(s) => s.stage(), )+ }
            }
            /// Sizes the method's history in a new state before its first step
            /// ([`WholeStepScheme::prepare_state`](crate::contact::WholeStepScheme::prepare_state)).
            pub fn prepare_state(&mut self, state: &mut crate::state::State) {
                if let ConstraintStage::WholeStep(s) | ConstraintStage::WholeStepOnRows(s) = self.stage() {
                    s.prepare_state(state);
                }
            }
        }
    };
}

contact_methods! {
    /// Projected Gauss–Seidel on the Coulomb cone (the baseline).
    Pgs(PgsParams),
    /// Per-contact bisection with block SOR (Hwangbo et al. 2018, the RaiSim solver).
    Bisection(BisectionParams),
    /// V-FPI with contact nodalization and diagonalization (Lee, Lee & Lee); handles deformables.
    Vfpi(VfpiParams),
    /// L-stable compliant constraints: implicit Euler in constraint space (Drumwright).
    Lstable(LstableParams),
    /// Equivalent contact point: line and surface contact in a geometrically implicit step (Xie & Chakraborty).
    Ecp(EcpParams),
    /// Non-smooth Newton: position-level contact NCP, smooth friction, Krylov linear solves (Macklin et al.).
    Newton(NewtonParams),
}

impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig::Pgs(PgsParams::default())
    }
}

impl clap::ValueEnum for SolverKind {
    fn value_variants<'a>() -> &'a [Self] {
        SolverKind::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.summary()))
    }
}

impl std::fmt::Display for SolverKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SolverKind {
    type Err = String;
    /// Parses a method name; the error lists the valid names.
    fn from_str(name: &str) -> Result<Self, String> {
        SolverKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| format!("unknown solver '{name}' (known: {})", SolverConfig::KINDS.join(", ")))
    }
}

impl SolverConfig {
    /// The default parameters of a method, by name (`None` for an unknown name).
    pub fn from_kind(name: &str) -> Option<Self> {
        name.parse::<SolverKind>().ok().map(SolverKind::default_config)
    }

    /// The configuration a `--solver K` override gives on a scene configured with `self`: the
    /// scene's own parameters when it already uses `K`, otherwise `K`'s defaults.
    pub fn overridden_by(&self, kind: SolverKind) -> SolverConfig {
        if self.solver_kind() == kind { self.clone() } else { kind.default_config() }
    }

    /// Refuses a method that cannot simulate `model` (deformable bodies without the capability, a
    /// scene outside its [`crate::contact::SceneCoverage`]),
    /// naming the scene file and the methods that can.
    pub fn check_model(&self, model: &Model, scene_file: &str) -> Result<(), String> {
        if !model.deformables.is_empty() && !self.capabilities().deformables {
            let able: Vec<&str> = SolverKind::ALL.iter().filter(|k| k.capabilities().deformables).map(|k| k.name()).collect();
            return Err(format!(
                "{scene_file}: the scene has {} deformable bod{} and solver '{}' cannot simulate deformables; use one of: {}",
                model.deformables.len(),
                if model.deformables.len() == 1 { "y" } else { "ies" },
                self.kind(),
                able.join(", ")
            ));
        }
        if let Some(why) = self.unsupported_in(model) {
            return Err(format!("{scene_file}: {why}"));
        }
        let refuses = |cfg: &SolverConfig| cfg.outside_coverage(model);
        if let Some(why) = refuses(self) {
            let able: Vec<&str> = SolverKind::ALL.iter().filter(|k| refuses(&k.default_config()).is_none()).map(|k| k.name()).collect();
            return Err(format!("{scene_file}: solver '{}' cannot simulate this scene: {why}; use one of: {}", self.kind(), able.join(", ")));
        }
        Ok(())
    }
}
