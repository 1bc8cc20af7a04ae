//! The contact problem every solver reads.
//!
//! One step's constraints are linearised at the velocity level (Anitescu–Potra style):
//!
//! ```text
//!   u = G λ + u_free,      G = J M̃⁻¹ Jᵀ  (Delassus matrix),  u_free = J v* + b
//! ```
//!
//! where `v*` is the velocity the system would reach without constraint impulses, `b` the
//! position-stabilization / speculative bias and M̃ the mass matrix with the implicit damping and
//! PD terms of the step. Rows are ordered: for each contact `c`, the rows of its
//! [`ContactRows`] layout starting at `contact_row(c)` (for the point layout `3c, 3c+1, 3c+2`:
//! the normal and the two tangents of its frame); then one row per joint constraint (limits,
//! joint friction, mimic couplings) from `first_joint_row()` on.
//!
//! Conditions a solution satisfies (the "physical constraints" of Hwangbo et al. 2018, §III):
//! - contact c: either open (`λ_c = 0`, `u_n ≥ 0`), sticking (`u_c = 0`, `‖λ_t‖ ≤ μ λ_n`) or
//!   sliding (`u_n = 0`, `‖λ_t‖ = μ λ_n`, `λ_t = −μ λ_n u_t/‖u_t‖`: maximal dissipation);
//! - joint row r: `λ_r ∈ [lo_r, hi_r]` with `u_r ≥ 0` at `lo`, `u_r ≤ 0` at `hi`, `u_r = 0` inside.

/// Read-only view of one step's constraint problem.
#[derive(Clone, Copy, Debug)]
pub struct ContactProblem<'a> {
    /// Number of contacts.
    pub num_contacts: usize,
    /// The rows of each contact (the method's layout).
    pub contact_rows: ContactRows,
    /// Number of one-dimensional joint rows after the contact rows.
    pub num_joint_rows: usize,
    /// Coulomb friction coefficient per contact.
    pub friction: &'a [f64],
    /// Lower impulse bound per joint row (N·s or N·m·s; `-inf` for bilateral).
    pub row_lower: &'a [f64],
    /// Upper impulse bound per joint row.
    pub row_upper: &'a [f64],
    /// Delassus matrix G, row-major `dim × dim` (m/s per N·s). Empty when the configured method
    /// does not read it ([`crate::contact::Capabilities::delassus`]): then [`Self::factored`]
    /// holds the same operator in factored form.
    pub delassus: &'a [f64],
    /// Constraint velocity without impulses, `u_free` (m/s or rad/s).
    pub free_velocity: &'a [f64],
    /// The velocity-space form of the same problem, for solvers that iterate on velocities
    /// (V-FPI); `None` for hand-built problems.
    pub primal: Option<PrimalView<'a>>,
    /// G in factored form, `G = Zᵀ Z` over each row's trees; `None` for hand-built problems.
    pub factored: Option<FactoredRows<'a>>,
}

/// The rows of G in factored form: with `M̃ = Lᵀ L` and `Z = L⁻ᵀ Jᵀ`, `G[i][j] = z_i · z_j`,
/// summed over the trees both rows touch (a row is zero outside its trees' coordinates). A
/// solver that keeps `y = Z λ` (an `nv`-vector) reads a row's velocity as
/// `u_i = u_free,i + z_i · y` and updates `y += z_i Δλ_i` at the cost of the row's trees' length
/// instead of the problem's size.
#[derive(Clone, Copy, Debug)]
pub struct FactoredRows<'a> {
    /// Number of generalized velocities (the length of a row of Z).
    pub nv: usize,
    /// `z_i = L⁻ᵀ J_iᵀ` per row, row-major `dim × nv` (√s/√kg-scaled velocity units).
    pub z: &'a [f64],
    /// The coordinate ranges `[start, end)` each row touches (one or two trees; an empty range
    /// where it touches fewer), in ascending order.
    pub ranges: &'a [[(usize, usize); 2]],
}

impl FactoredRows<'_> {
    /// `z_i · x` over row `i`'s coordinates, in ascending coordinate order.
    #[inline]
    pub fn dot(&self, i: usize, x: &[f64]) -> f64 {
        let row = &self.z[i * self.nv..(i + 1) * self.nv];
        let mut s = 0.0;
        for &(a, b) in &self.ranges[i] {
            for k in a..b {
                s += row[k] * x[k];
            }
        }
        s
    }

    /// `G[i][j] = z_i · z_j` over row `i`'s coordinates (rows of one contact share theirs).
    #[inline]
    pub fn g(&self, i: usize, j: usize) -> f64 {
        self.dot(i, &self.z[j * self.nv..(j + 1) * self.nv])
    }

    /// `y += z_i · delta` over row `i`'s coordinates.
    #[inline]
    pub fn add_row(&self, i: usize, delta: f64, y: &mut [f64]) {
        let row = &self.z[i * self.nv..(i + 1) * self.nv];
        for &(a, b) in &self.ranges[i] {
            for k in a..b {
                y[k] += row[k] * delta;
            }
        }
    }
}

/// The problem in velocity space: `M̃ v⁺ = M̃ v* + Jᵀ λ`, `u = J v⁺ + (u_free − J v*)`.
#[derive(Clone, Copy, Debug)]
pub struct PrimalView<'a> {
    /// Number of generalized velocities.
    pub nv: usize,
    /// M̃ (the step's mass matrix with implicit damping / PD terms), column-major `nv × nv`.
    pub mass: &'a [f64],
    /// Constraint Jacobian J, row-major `rows × nv` (same rows as the Delassus matrix).
    pub jacobian: &'a [f64],
    /// v*: the velocity without constraint impulses.
    pub free_velocity: &'a [f64],
    /// The velocity at the start of the step (an initial guess for v⁺).
    pub initial_velocity: &'a [f64],
    /// Time step (s).
    pub timestep_s: f64,
}

impl<'a> ContactProblem<'a> {
    /// Number of scalar rows.
    #[inline]
    pub fn dim(&self) -> usize {
        self.first_joint_row() + self.num_joint_rows
    }
    /// First scalar row of contact `c` (its normal row).
    #[inline]
    pub fn contact_row(&self, c: usize) -> usize {
        self.contact_rows.start(c)
    }
    /// First joint row (after every contact's rows).
    #[inline]
    pub fn first_joint_row(&self) -> usize {
        self.contact_rows.start(self.num_contacts)
    }
    /// Entry `G[i][j]`.
    #[inline]
    pub fn g(&self, i: usize, j: usize) -> f64 {
        self.delassus[i * self.dim() + j]
    }
    /// Row `i` of G.
    #[inline]
    pub fn g_row(&self, i: usize) -> &'a [f64] {
        let n = self.dim();
        &self.delassus[i * n..(i + 1) * n]
    }
    /// Constraint velocity of row `i` for impulses `lambda`: `u_i = (G λ)_i + u_free,i`.
    #[inline]
    pub fn row_velocity(&self, i: usize, lambda: &[f64]) -> f64 {
        let row = self.g_row(i);
        let mut u = self.free_velocity[i];
        for (g, l) in row.iter().zip(lambda) {
            u += g * l;
        }
        u
    }

    /// The worst violation of the physical conditions listed in the module docs, as
    /// `(impulse error N·s, velocity error m/s)`: cone / bound violation, and for each contact the
    /// velocity error of the case it is in (penetrating normal velocity when open, slip when
    /// strictly inside the cone, normal velocity and misalignment of the friction when sliding).
    pub fn violation(&self, lambda: &[f64]) -> (f64, f64) {
        let mut imp: f64 = 0.0;
        let mut vel: f64 = 0.0;
        for c in 0..self.num_contacts {
            let i = self.contact_row(c);
            let mu = self.friction[c];
            let (ln, lt) = (lambda[i], [lambda[i + 1], lambda[i + 2]]);
            let un = self.row_velocity(i, lambda);
            let ut = [self.row_velocity(i + 1, lambda), self.row_velocity(i + 2, lambda)];
            let lt_norm = (lt[0] * lt[0] + lt[1] * lt[1]).sqrt();
            let ut_norm = (ut[0] * ut[0] + ut[1] * ut[1]).sqrt();
            imp = imp.max((-ln).max(0.0)).max((lt_norm - mu * ln).max(0.0));
            if ln <= 0.0 {
                // open: must not approach
                vel = vel.max((-un).max(0.0));
            } else {
                vel = vel.max(un.abs());
                if lt_norm < mu * ln * (1.0 - 1e-9) {
                    vel = vel.max(ut_norm); // sticking
                } else {
                    // sliding: λ_t = −μ λ_n û_t
                    if ut_norm > 0.0 {
                        let e = [lt[0] + mu * ln * ut[0] / ut_norm, lt[1] + mu * ln * ut[1] / ut_norm];
                        imp = imp.max((e[0] * e[0] + e[1] * e[1]).sqrt());
                    }
                }
            }
        }
        for r in 0..self.num_joint_rows {
            let i = self.first_joint_row() + r;
            let (lo, hi) = (self.row_lower[r], self.row_upper[r]);
            let l = lambda[i];
            let u = self.row_velocity(i, lambda);
            imp = imp.max((lo - l).max(0.0)).max((l - hi).max(0.0));
            let at_lo = l <= lo + 1e-15;
            let at_hi = l >= hi - 1e-15;
            let e = if at_lo && at_hi { 0.0 } else if at_lo { (-u).max(0.0) } else if at_hi { u.max(0.0) } else { u.abs() };
            vel = vel.max(e);
        }
        (imp, vel)
    }
}

/// One scalar row of a contact, in the contact frame (normal `n`, tangents `t1`, `t2` of
/// [`crate::collision::Contact`]; the impulse acts on body B, its opposite on A).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContactRow {
    /// Along the contact normal (N·s, ≥ 0: push only).
    Normal,
    /// Along the first tangent (N·s).
    Tangent1,
    /// Along the second tangent (N·s).
    Tangent2,
    /// Torsional friction about the normal (N·m·s).
    Torsion,
}

/// The rows of one contact, in order. Row `r` of contact `c` is scalar row
/// `c * len() + r` of the problem; joint rows follow all contact rows. Every layout starts with
/// the normal and the two tangents (the step builds those three rows together).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactRows {
    rows: &'static [ContactRow],
}

impl ContactRows {
    /// Point contact with Coulomb friction: normal, tangent 1, tangent 2.
    pub const POINT: ContactRows = ContactRows { rows: &[ContactRow::Normal, ContactRow::Tangent1, ContactRow::Tangent2] };
    /// Point contact with torsional friction: normal, tangent 1, tangent 2, torsion.
    pub const POINT_TORSION: ContactRows =
        ContactRows { rows: &[ContactRow::Normal, ContactRow::Tangent1, ContactRow::Tangent2, ContactRow::Torsion] };

    /// Rows per contact.
    #[inline]
    pub const fn len(&self) -> usize {
        self.rows.len()
    }
    /// `false`: a contact has at least its normal row.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// The rows, in order.
    #[inline]
    pub fn rows(&self) -> &'static [ContactRow] {
        self.rows
    }
    /// First scalar row of contact `c`.
    #[inline]
    pub const fn start(&self, c: usize) -> usize {
        c * self.rows.len()
    }
}

// the model sizes the step's buffers (and bounds them at load) with at most this many rows per
// contact
const _: () = assert!(ContactRows::POINT.len() <= crate::model::MAX_ROWS_PER_CONTACT && ContactRows::POINT_TORSION.len() <= crate::model::MAX_ROWS_PER_CONTACT);
