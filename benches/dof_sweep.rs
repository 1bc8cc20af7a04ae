//! The DOF sweep: V-FPI against PGS over deformable-sheet sizes (~1 k → 30 k DOF at the
//! paper's 10 ms step; PGS up to `--pgs-max-dof`, its dense Delassus matrix grows as n²).
//!
//! ```text
//! cargo bench --bench dof_sweep -- [--steps N] [--pgs-max-dof N] [--threads N] [--json]
//! ```
//! Defaults: 10 timed steps (at most 50), PGS up to 12 000 DOF, one V-FPI thread. This is a
//! method experiment, so it lives with the benchmarks rather than in the CLI (shared code names
//! no method).

use anyhow::{bail, Result};
use contact_sim::config;
use contact_sim::sim::Simulation;
use std::time::Instant;

fn main() -> Result<()> {
    let (mut steps, mut pgs_max_dof, mut threads, mut json) = (10usize, 12000usize, 1usize, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> Result<usize> {
            let v = args.next().ok_or_else(|| anyhow::anyhow!("{name}: needs a value"))?;
            v.parse().map_err(|_| anyhow::anyhow!("{name}: '{v}' is not a whole number"))
        };
        match a.as_str() {
            "--steps" => steps = value("--steps")?,
            "--pgs-max-dof" => pgs_max_dof = value("--pgs-max-dof")?,
            "--threads" => threads = value("--threads")?,
            "--json" => json = true,
            "--bench" => {} // passed by `cargo bench`
            other => bail!("unknown argument '{other}': takes --steps N, --pgs-max-dof N, --threads N, --json"),
        }
    }
    if steps == 0 || threads == 0 {
        bail!("--steps and --threads: must be ≥ 1");
    }
    dof_sweep(steps.min(50), pgs_max_dof, threads, json)
}

/// One row of the DOF sweep.
#[derive(serde::Serialize)]
struct SweepRow {
    /// Sheet cells per side.
    cells: usize,
    dof: usize,
    contacts: usize,
    /// V-FPI: mean wall time of the whole step (ms) and of the solve's iterations.
    vfpi_step_ms: f64,
    vfpi_iterations: f64,
    /// PGS on the last step's problem: sparse Cholesky of A, Delassus J A⁻¹ Jᵀ, PGS sweeps (ms).
    pgs_factor_ms: Option<f64>,
    pgs_delassus_ms: Option<f64>,
    pgs_solve_ms: Option<f64>,
    pgs_iterations: Option<u32>,
    /// max |λ_vfpi − λ_pgs| / max |λ_pgs|
    pgs_vs_vfpi: Option<f64>,
}

/// V-FPI vs PGS on a soft sheet (E = 100 kPa, 10 mm thick, 12.5 mm cells, one layer) sliding
/// down a 20° incline with μ = 0.3 (tan 20° = 0.36 > μ): every bottom node is in sliding
/// contact, so each step's solution differs from the last. Timed: `steps` steps after 10
/// settling steps.
fn dof_sweep(steps: usize, pgs_max_dof: usize, threads: usize, json: bool) -> Result<()> {
    use contact_sim::contact::{ContactProblem, ImpulseSolver, PgsParams, PgsSolver};
    use nalgebra_sparse::{factorization::CscCholesky, CscMatrix};
    let dir = TempDir::create(std::env::temp_dir().join(format!("contact_sim_sweep_{}", std::process::id())))?;
    let dir = &dir.0;
    let mut rows = vec![];
    for cells in [12usize, 18, 26, 36, 50, 70] {
        let size = 0.0125 * cells as f64;
        let mut mesh = contact_sim::fem::TetMesh::box_grid([size, size, 0.01], [cells, cells, 1]);
        mesh.translate(contact_sim::math::Vec3::new(-size / 2.0, -size / 2.0, 0.0));
        // node order with the thin z direction fastest, then x, then y: a banded A, so that the
        // (non-reordering) sparse Cholesky of the PGS baseline fills in only within the band
        let mut order: Vec<usize> = (0..mesh.nodes.len()).collect();
        let key = |p: &contact_sim::math::Vec3| ((p.y / 0.0125).round() as i64, (p.x / 0.0125).round() as i64, (p.z * 1e4).round() as i64);
        order.sort_by_key(|&i| key(&mesh.nodes[i]));
        let mut new_index = vec![0; order.len()];
        for (k, &i) in order.iter().enumerate() {
            new_index[i] = k;
        }
        mesh.nodes = order.iter().map(|&i| mesh.nodes[i]).collect();
        for t in &mut mesh.tets {
            for v in t.iter_mut() {
                *v = new_index[*v];
            }
        }
        let path = dir.join(format!("sheet_{cells}.msh"));
        config::write_gmsh41(&mesh, &path)?;
        let yaml = format!(
            "timestep_s: 0.01\nground: {{incline_deg: 20}}\nsolver: {{kind: vfpi, tolerance: 1.0e-3, residual_tolerance: 1.0e-3, max_iterations: 3000, threads: {threads}}}\ndeformables:\n  - name: sheet\n    mesh: {}\n    rpy: [0, 0.3490658503988659, 0]\n    material: {{density_kg_m3: 1000, youngs_modulus_pa: 1.0e5, poisson_ratio: 0.35, rayleigh_stiffness_s: 0.005}}\n    friction: 0.3\n",
            path.display()
        );
        let scene = config::load_scene_str(&yaml, &dir.join("sweep.yaml"))?;
        let mut sim = Simulation::from_scene(&scene, None);
        for _ in 0..10 {
            sim.step();
        }
        let t0 = Instant::now();
        let mut its = 0u64;
        for _ in 0..steps {
            its += sim.step().solve.iterations as u64;
        }
        let vfpi_ms = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
        let f = sim.workspace.fem.as_ref().unwrap();
        let n = f.system.dim();
        let nc = f.contacts.len();
        let mut row = SweepRow {
            cells,
            dof: n,
            contacts: nc,
            vfpi_step_ms: vfpi_ms,
            vfpi_iterations: its as f64 / steps as f64,
            pgs_factor_ms: None,
            pgs_delassus_ms: None,
            pgs_solve_ms: None,
            pgs_iterations: None,
            pgs_vs_vfpi: None,
        };
        if n <= pgs_max_dof && nc > 0 {
            // A is symmetric: its CSR arrays are also its CSC arrays
            let a = &f.system.a;
            let csc = CscMatrix::try_from_csc_data(n, n, a.row_offsets().to_vec(), a.col_indices().to_vec(), a.values().to_vec()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
            let t = Instant::now();
            let chol = CscCholesky::factor(&csc).map_err(|e| anyhow::anyhow!("Cholesky: {e:?}"))?;
            row.pgs_factor_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let jt = f.dense_contact_jacobian_t(n);
            let ainv_jt = chol.solve(&jt);
            let g = jt.transpose() * &ainv_jt;
            let v_free = chol.solve(&nalgebra::DMatrix::from_column_slice(n, 1, &f.system.b));
            let mut u = jt.transpose() * v_free;
            row.pgs_delassus_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            let dt = sim.model.timestep_s;
            for (ci, c) in f.contacts.iter().enumerate() {
                u[3 * ci] += sim.model.contact.normal_bias(c.distance, dt);
            }
            let mu = vec![0.3; nc];
            let gt = g.transpose();
            let p = ContactProblem { num_contacts: nc, contact_rows: contact_sim::contact::ContactRows::POINT, num_joint_rows: 0, friction: &mu, row_lower: &[], row_upper: &[], delassus: gt.as_slice(), free_velocity: u.as_slice(), primal: None, factored: None };
            // same accuracy target as V-FPI's: impulses to ~1e-3 of the largest
            let scale = f.contacts.iter().map(|c| c.impulse[0].abs()).fold(0.0, f64::max);
            let mut pgs = PgsSolver::new(PgsParams { max_iterations: 10_000, tolerance: 1e-4 * scale, relaxation: 1.0 }, nc);
            let mut lam = vec![0.0; 3 * nc];
            let t = Instant::now();
            let st = pgs.solve(&p, &mut lam);
            row.pgs_solve_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            row.pgs_iterations = Some(st.iterations);
            let vf: Vec<f64> = f.contacts.iter().flat_map(|c| c.impulse).collect();
            let lmax = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            row.pgs_vs_vfpi = Some(vf.iter().zip(&lam).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / lmax);
        }
        if !json {
            let opt = |x: Option<f64>| x.map(|v| format!("{v:10.1}")).unwrap_or_else(|| format!("{:>10}", "-"));
            if rows.is_empty() {
                println!("{:>6} {:>8} {:>8} {:>12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9}", "cells", "DOF", "contacts", "vfpi ms/st", "iters", "chol ms", "delass ms", "pgs ms", "pgs total", "Δλ rel");
            }
            let total = match (row.pgs_factor_ms, row.pgs_delassus_ms, row.pgs_solve_ms) {
                (Some(a), Some(b), Some(c)) => Some(a + b + c),
                _ => None,
            };
            println!(
                "{:>6} {:>8} {:>8} {:>12.2} {:>8.1} {} {} {} {} {:>9}",
                row.cells, row.dof, row.contacts, row.vfpi_step_ms, row.vfpi_iterations, opt(row.pgs_factor_ms), opt(row.pgs_delassus_ms), opt(row.pgs_solve_ms), opt(total),
                row.pgs_vs_vfpi.map(|x| format!("{x:.1e}")).unwrap_or_else(|| "-".into())
            );
        }
        rows.push(row);
    }
    // growth exponents: slope of log(time) vs log(DOF) between the smallest and largest runs
    let slope = |pts: &[(f64, f64)]| if pts.len() >= 2 { (pts[pts.len() - 1].1 / pts[0].1).ln() / (pts[pts.len() - 1].0 / pts[0].0).ln() } else { f64::NAN };
    let v: Vec<(f64, f64)> = rows.iter().map(|r| (r.dof as f64, r.vfpi_step_ms)).collect();
    let p: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((r.dof as f64, r.pgs_factor_ms? + r.pgs_delassus_ms? + r.pgs_solve_ms?))).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"rows": rows, "vfpi_exponent": slope(&v), "pgs_exponent": slope(&p)}))?);
    } else {
        println!("growth exponent (time ∝ DOF^k, first to last row): V-FPI k = {:.2}, PGS (Cholesky + Delassus + sweeps) k = {:.2}", slope(&v), slope(&p));
    }

    Ok(())
}

/// A temporary directory removed when dropped: on success, on an error returned with `?` and
/// on a panic that unwinds.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn create(path: std::path::PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    /// The directory is removed when a step after its creation fails.
    #[test]
    fn temp_dir_is_removed_on_error() {
        let path = std::env::temp_dir().join(format!("contact_sim_sweep_test_{}", std::process::id()));
        let run = || -> std::io::Result<()> {
            let dir = super::TempDir::create(path.clone())?;
            std::fs::write(dir.0.join("sheet.msh"), "x")?;
            assert!(dir.0.join("sheet.msh").exists());
            Err(std::io::Error::other("a failed sweep"))
        };
        assert!(run().is_err());
        assert!(!path.exists(), "{} left behind", path.display());
    }
}
