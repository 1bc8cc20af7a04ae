//! Unit tests of the primal form's building blocks: the fill-reducing order, the node columns'
//! Gram blocks, the node factor against `CscCholesky`, the triangular solves.

use super::columns::reach_of;
use super::*;
use nalgebra_sparse::factorization::CscCholesky;

#[test]
fn the_fill_reducing_order_is_a_permutation_and_cuts_the_fill_of_a_grid() {
    // a 12 × 12 grid graph, numbered so that the natural order has a wide band
    let n = 12;
    let id = |i: usize, j: usize| ((i * n + j) * 5) % (n * n); // a scrambled numbering (5 is a unit mod 144)
    let mut seen = vec![false; n * n];
    let mut map = vec![0; n * n];
    for i in 0..n {
        for j in 0..n {
            let k = id(i, j);
            assert!(!seen[k], "numbering not bijective");
            seen[k] = true;
            map[i * n + j] = k;
        }
    }
    let mut adj = vec![vec![]; n * n];
    for i in 0..n {
        for j in 0..n {
            let a = map[i * n + j];
            if i + 1 < n {
                let b = map[(i + 1) * n + j];
                adj[a].push(b);
                adj[b].push(a);
            }
            if j + 1 < n {
                let b = map[i * n + j + 1];
                adj[a].push(b);
                adj[b].push(a);
            }
        }
    }
    let order = fill_reducing_order(&adj);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..n * n).collect::<Vec<_>>());
    // fill of the Cholesky factor (symbolic elimination) in both orders
    let fill = |order: &[usize]| {
        let nn = order.len();
        let mut pos = vec![0; nn];
        for (k, &v) in order.iter().enumerate() {
            pos[v] = k;
        }
        let mut sets: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); nn];
        for (v, nb) in adj.iter().enumerate() {
            for &w in nb {
                if pos[w] > pos[v] {
                    sets[pos[v]].insert(pos[w]);
                }
            }
        }
        let mut total = 0;
        for k in 0..nn {
            let s: Vec<usize> = sets[k].iter().copied().collect();
            total += s.len();
            if let Some(&parent) = s.first() {
                for &x in &s[1..] {
                    sets[parent].insert(x);
                }
            }
        }
        total
    };
    let natural: Vec<usize> = (0..n * n).collect();
    let (f_amd, f_nat) = (fill(&order), fill(&natural));
    assert!(f_amd * 2 < f_nat, "amd fill {f_amd}, natural {f_nat}");
}

#[test]
fn node_column_gram_blocks_equal_the_inverse_blocks() {
    // A = a 3D grid Laplacian of 4 × 4 × 3 nodes with 3 DOFs per node (coupled within the
    // node), plus a mass term: SPD; ordered by AMD like the scheme's node matrix
    let (nx, ny, nz) = (4, 4, 3);
    let nn = nx * ny * nz;
    let id = |i: usize, j: usize, k: usize| (i * ny + j) * nz + k;
    let mut adj = vec![vec![]; nn];
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let a = id(i, j, k);
                for (di, dj, dk) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                    let (b0, b1, b2) = (i + di, j + dj, k + dk);
                    if b0 < nx && b1 < ny && b2 < nz {
                        let b = id(b0, b1, b2);
                        adj[a].push(b);
                        adj[b].push(a);
                    }
                }
            }
        }
    }
    let order = fill_reducing_order(&adj);
    let mut pos = vec![0; nn];
    for (k, &v) in order.iter().enumerate() {
        pos[v] = k;
    }
    let n = 3 * nn;
    let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
    for a in 0..nn {
        let pa = pos[a];
        for c in 0..3 {
            for d in 0..3 {
                dense[(3 * pa + c, 3 * pa + d)] += if c == d { 7.0 + adj[a].len() as f64 } else { 0.3 + 0.1 * (c + d) as f64 };
            }
        }
        for &b in &adj[a] {
            let pb = pos[b];
            for c in 0..3 {
                dense[(3 * pa + c, 3 * pb + c)] -= 1.0;
                dense[(3 * pa + c, 3 * pb + (c + 1) % 3)] -= 0.2;
                dense[(3 * pb + (c + 1) % 3, 3 * pa + c)] -= 0.2;
            }
        }
    }
    // structural entries for the whole 3 × 3 blocks, as in the assembled node matrix
    let csc = CscMatrix::from(&dense);
    let chol = CscCholesky::factor(&csc).unwrap();
    let l = chol.l();
    let mut nc = NodeColumns::new(l, nn, nn);
    assert!(nc.max_reach < n, "the reach of a node is shorter than the matrix: {}", nc.max_reach);
    let mut x = vec![0.0; 3 * n];
    let cols: Vec<(Vec<u32>, Vec<f64>)> = (0..nn)
        .map(|p| {
            let mut path = vec![];
            reach_of(&nc.parent, 3 * p, &mut nc.mark, &mut path);
            for &k in &path {
                nc.mark[k as usize] = false;
            }
            let mut y = vec![0.0; 3 * path.len()];
            node_columns(l, 3 * p, &path, &mut x, &mut y);
            (path, y)
        })
        .collect();
    assert!(x.iter().all(|&v| v == 0.0), "the solve buffer is left zeroed");
    // E_pᵀ A⁻¹ E_q from full solves
    for p in (0..nn).step_by(5) {
        for q in (0..nn).step_by(3) {
            let mut g = [0.0; 9];
            gram_block(&cols[p].0, &cols[p].1, &cols[q].0, &cols[q].1, &mut g);
            for d in 0..3 {
                let mut e = vec![0.0; n];
                e[3 * q + d] = 1.0;
                chol_solve(l, &mut e, 0);
                for c in 0..3 {
                    let exact = e[3 * p + c];
                    assert!((g[3 * c + d] - exact).abs() < 1e-13 * (1.0 + exact.abs()), "nodes {p}, {q}, ({c}, {d}): {} vs {exact}", g[3 * c + d]);
                }
            }
        }
    }
}

#[test]
fn the_node_factor_is_bit_identical_to_csc_cholesky_and_refuses_an_indefinite_matrix() {
    // a banded SPD matrix with a far coupling, refactored with new values
    let n = 40;
    let build = |shift: f64| {
        let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
        for i in 0..n {
            dense[(i, i)] = 4.0 + shift + 0.01 * i as f64;
            for d in [1, 3, 7] {
                if i + d < n {
                    let v = -0.5 / d as f64 - 0.001 * (i as f64);
                    dense[(i, i + d)] = v;
                    dense[(i + d, i)] = v;
                }
            }
        }
        dense[(0, n - 1)] = 0.3;
        dense[(n - 1, 0)] = 0.3;
        CscMatrix::from(&dense)
    };
    let a = build(0.0);
    let mut ours = NodeFactor::new(&a).unwrap();
    let mut theirs = CscCholesky::factor(&a).unwrap();
    let b = build(0.37);
    ours.refactor(b.values()).unwrap();
    theirs.refactor(b.values()).unwrap();
    assert_eq!(ours.l().col_offsets(), theirs.l().col_offsets());
    assert_eq!(ours.l().row_indices(), theirs.l().row_indices());
    let same = ours.l().values().iter().zip(theirs.l().values()).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "the factors differ");
    // L Lᵀ reproduces the matrix
    let l = nalgebra::DMatrix::from(ours.l());
    let diff = (&l * l.transpose() - nalgebra::DMatrix::from(&b)).abs().max();
    assert!(diff < 1e-12, "|L Lᵀ − A| = {diff}");
    // an indefinite matrix (diagonal −1 at the end) is refused
    let bad = build(-100.0);
    assert!(ours.refactor(bad.values()).is_err());
}

#[test]
fn the_triangular_solves_invert_a_small_spd_matrix() {
    // A = tridiagonal(−1, 4, −1) of size 6, plus a far coupling
    let n = 6;
    let mut dense = nalgebra::DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        dense[(i, i)] = 4.0;
        if i + 1 < n {
            dense[(i, i + 1)] = -1.0;
            dense[(i + 1, i)] = -1.0;
        }
    }
    dense[(0, 5)] = 0.5;
    dense[(5, 0)] = 0.5;
    let csc = CscMatrix::from(&dense);
    let chol = CscCholesky::factor(&csc).unwrap();
    let b: Vec<f64> = vec![0.0, 0.0, 1.0, -2.0, 0.5, 3.0];
    let mut x = b.clone();
    chol_solve(chol.l(), &mut x, 2);
    let ax = &dense * nalgebra::DVector::from_column_slice(&x);
    for i in 0..n {
        assert!((ax[i] - b[i]).abs() < 1e-12, "row {i}: {} vs {}", ax[i], b[i]);
    }
}
