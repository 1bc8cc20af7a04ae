//! Material models of deformable bodies and their parameter checks.
//!
//! Isotropic linear elasticity with Lamé parameters `μ = E / (2 (1 + ν))`,
//! `λ = E ν / ((1 + ν)(1 − 2ν))`. Damping is Rayleigh: `D = α M + β K` (α in 1/s, β in s).

/// The constitutive law.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ElasticModel {
    /// Co-rotational linear elasticity (the paper's FEM, §V-C): per element the rotation `R` of
    /// the polar decomposition `F = R S` is factored out and linear elasticity acts on
    /// `Rᵀ x − X`.
    #[default]
    Corotational,
    /// Compressible Neo-Hookean, `Ψ = μ/2 (I₁ − 3) − μ ln J + λ/2 (ln J)²`. The elastic force is
    /// exact; the implicit system matrix uses the co-rotational stiffness at the current rotation
    /// (a Gauss–Newton surrogate of the Hessian, as allowed by the paper's §III-A).
    NeoHookean,
    /// Stable Neo-Hookean (Macklin et al. 2019, §9.2.2 and App. B), `Ψ = C₁ (I_C − 3) + D₁ (J − α)²`
    /// with `C₁ = μ/2`, `D₁ = (λ + μ)/2`, `α = 1 + μ/(λ + μ)`: no logarithm, so defined for
    /// inverted elements. Exact force; the implicit system matrix uses the exact Hessian projected
    /// to positive semi-definite per element (`stable_neo_hookean` module). Not available with
    /// solver `newton`.
    StableNeoHookean,
}

/// Material of a deformable body.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FemMaterial {
    /// Mass density ρ (kg/m³).
    pub density_kg_m3: f64,
    /// Young's modulus E (Pa).
    pub youngs_modulus_pa: f64,
    /// Poisson ratio ν, in (−1, 0.5).
    pub poisson_ratio: f64,
    /// Rayleigh mass-proportional damping α (1/s).
    #[serde(default)]
    pub rayleigh_mass_1_s: f64,
    /// Rayleigh stiffness-proportional damping β (s).
    #[serde(default)]
    pub rayleigh_stiffness_s: f64,
    /// Constitutive law (`corotational` default, `neo_hookean` or `stable_neo_hookean`).
    #[serde(default)]
    pub model: ElasticModel,
}

impl FemMaterial {
    /// Lamé's first parameter λ (Pa).
    pub fn lame_lambda(&self) -> f64 {
        let (e, nu) = (self.youngs_modulus_pa, self.poisson_ratio);
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    }
    /// Shear modulus μ (Pa).
    pub fn lame_mu(&self) -> f64 {
        self.youngs_modulus_pa / (2.0 * (1.0 + self.poisson_ratio))
    }

    /// Checks the ranges; on failure returns `(key, reason)`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        use crate::validate::{finite_in, DENSITY_KG_M3, RAYLEIGH_MASS_1_S, RAYLEIGH_STIFFNESS_S, YOUNGS_MODULUS_PA};
        if !(self.density_kg_m3 > 0.0) {
            return Err(("density_kg_m3", format!("must be > 0, got {}", self.density_kg_m3)));
        }
        finite_in(self.density_kg_m3, DENSITY_KG_M3, "ρ").map_err(|r| ("density_kg_m3", r))?;
        if !(self.youngs_modulus_pa > 0.0) {
            return Err(("youngs_modulus_pa", format!("must be > 0 (E ≤ 0 has no elastic energy minimum), got {}", self.youngs_modulus_pa)));
        }
        finite_in(self.youngs_modulus_pa, YOUNGS_MODULUS_PA, "E").map_err(|r| ("youngs_modulus_pa", r))?;
        finite_in(self.rayleigh_mass_1_s, RAYLEIGH_MASS_1_S, "α").map_err(|r| ("rayleigh_mass_1_s", r))?;
        finite_in(self.rayleigh_stiffness_s, RAYLEIGH_STIFFNESS_S, "β").map_err(|r| ("rayleigh_stiffness_s", r))?;
        if !(self.poisson_ratio > -1.0 && self.poisson_ratio < 0.5) {
            return Err((
                "poisson_ratio",
                format!("must be in (−1, 0.5) (ν ≥ 0.5 is incompressible: λ is infinite or negative), got {}", self.poisson_ratio),
            ));
        }
        Ok(())
    }
}
