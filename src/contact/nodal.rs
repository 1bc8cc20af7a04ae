//! The nodalized rigid–FEM system (Lee, Lee & Lee's contact nodalization): what the coupled
//! rigid–FEM solve ([`crate::coupled`]) builds each step and a [`NodalSolver`](super::NodalSolver)
//! solves. Unknowns `x = [x_fem | x_rigid | x_virtual]`: 3 velocities per deformable node (m/s,
//! world), the rigid trees' generalized velocities, and one virtual node per rigid contact (3
//! entries, contact frame) or joint row (1 entry). Units: `A` in kg, `b` and `λ` in N·s.

use crate::math::Mat3;
use nalgebra_sparse::CsrMatrix;

/// One nodal contact or joint row of a nodalized rigid–FEM system.
#[derive(Clone, Copy, Debug)]
pub struct NodalConstraint {
    /// Index in `x` of the first coordinate of side i (a FEM node `3 n` or a virtual node).
    pub i: usize,
    /// Side i is a FEM node in world coordinates (use `frame`); otherwise a virtual node in
    /// contact coordinates.
    pub i_is_fem: bool,
    /// Side j of a D-contact: index in `x` of its first coordinate, a virtual node in contact
    /// coordinates, or a FEM node in world coordinates (`j_is_fem`).
    pub j: Option<usize>,
    /// Side j is a FEM node in world coordinates (a node–node contact, [`crate::fem::selfcontact`]):
    /// `η = R (v_i − v_j)`, node i receives `+w̄_i Rᵀλ`, node j `−w̄_j Rᵀλ`, `γ = w̄_i + w̄_j`.
    /// Requires `i_is_fem` and `dim == 3`.
    pub j_is_fem: bool,
    /// 3 (contact) or 1 (joint row).
    pub dim: u8,
    /// World → contact rotation, rows `n, t1, t2` (FEM side only). The normal points from j
    /// (or the static geometry) toward i.
    pub frame: Mat3,
    /// Offset φ (m/s, contact coordinates `[n, t1, t2]`; entry 0 for a joint row): the
    /// Signorini–Coulomb conditions act on `R (v_i − v_j) + φ`. The normal entry is the gap /
    /// Baumgarte term (the paper leaves it open); rigid rows add the virtual-node drift compensation
    /// `−λ_warm / k̃` (the nodal solver's drift compensation).
    pub bias: [f64; 3],
    /// Friction coefficient (contacts).
    pub mu: f64,
    /// Impulse bounds of a joint row (N·s).
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// A bilateral 3-D constraint (a weld, dim 3): `λ` is free in ℝ³ (no cone, no clamp), so the
    /// solve enforces `R (v_i − v_j) + φ = 0`. `mu` is ignored.
    pub bilateral: bool,
}

/// A nodalized system (see the module docs). `x` layout: `[fem | rigid | virtual]`.
pub struct NodalSystem<'a> {
    /// FEM matrix (`3 N × 3 N`, kg), if any, with [`crate::fem::FemSystem`]'s node-block
    /// pattern (see [`crate::fem::block3_mul_rows`]).
    pub fem: Option<&'a CsrMatrix<f64>>,
    /// The first column of each 3×3 block of `fem` ([`crate::math::sparse::node_block_columns`];
    /// empty without deformables).
    pub fem_block_cols: &'a [u32],
    /// FEM right-hand side (N·s).
    pub fem_b: &'a [f64],
    /// Prescribed FEM nodes (excluded from the iteration).
    pub fem_fixed: &'a [bool],
    /// Number of rigid generalized velocities.
    pub nv: usize,
    /// Rigid `M̃`, column-major `nv × nv` (kg, kg·m, kg·m²).
    pub mass: &'a [f64],
    /// Rigid right-hand side `M̃ v*` (N·s).
    pub rigid_b: &'a [f64],
    /// Virtual-node Jacobian rows, row-major `virtual × nv`.
    pub jv: &'a [f64],
    /// Number of virtual scalar coordinates.
    pub num_virtual: usize,
    /// The constraints.
    pub constraints: &'a [NodalConstraint],
    /// Damper gain in impulse units, k̃ = k_v h (kg).
    pub k_tilde: f64,
    /// Node ranges `[first, end)` of the deformable bodies (node indices: unknowns `3 first ..
    /// 3 end`); `A` has no block between two bodies. Empty for a system without deformables.
    pub fem_bodies: &'a [(usize, usize)],
}

impl NodalSystem<'_> {
    /// FEM unknowns (3 per node).
    pub fn n_fem(&self) -> usize {
        self.fem_b.len()
    }
    /// Total unknowns.
    pub fn dim(&self) -> usize {
        self.n_fem() + self.nv + self.num_virtual
    }
}
