//! The consecutive blocks of a problem's rows that no nonzero of its Delassus matrix couples, on
//! which the exact iteration factorises its Newton matrix block by block (ours, not in the paper).

use super::{NewtonProblem, NewtonRow};

/// Splits the rows of a problem into consecutive blocks that no nonzero of its Delassus matrix
/// couples (with a contact's three rows always in one block): the blocks' ends go to `ends`
/// (ascending, the last one `m`) and their count is returned. The exact iteration's Newton
/// matrix `G_w D + G_p + ε I` has the same blocks (its rows combine the Delassus rows of one
/// contact), so each block is factorised on its own ([`lu_in_place_block`](crate::math::dense::lu_in_place_block)), bit for bit as
/// the whole matrix would be, without the whole matrix's search and skip over the other blocks'
/// zeros. In the default scene the quadruped's feet and the arm with its box are two blocks.
/// With the rows' trees given ([`NewtonProblem::row_trees`]) the coupling of two rows is read
/// from them (rows that share a tree may still have a zero entry: the blocks are then coarser
/// than `D`'s, which changes no bit of the factors). `reach` is scratch of length `m`,
/// `tree_last_row` of length `2m`.
pub fn consecutive_blocks(prob: &NewtonProblem, reach: &mut [usize], tree_last_row: &mut [(usize, usize)], ends: &mut [usize]) -> usize {
    let m = prob.dim();
    let d = prob.delassus;
    if let Some(row_trees) = prob.row_trees {
        // from the end: the last row that touches each tree seen so far (a handful of trees)
        let mut trees = 0;
        for i in (0..m).rev() {
            reach[i] = i;
            let (t0, t1) = row_trees[i];
            for t in [t0, t1] {
                if t == crate::contact::NO_TREE {
                    continue;
                }
                let last = match tree_last_row[..trees].iter().find(|(tree, _)| *tree == t) {
                    Some(&(_, last)) => last,
                    None => {
                        tree_last_row[trees] = (t, i);
                        trees += 1;
                        i
                    }
                };
                reach[i] = reach[i].max(last);
            }
        }
    } else {
        for i in 0..m {
            // D is symmetric: the upper triangle gives every coupling of a row to a later one
            reach[i] = d[i * m + i + 1..(i + 1) * m].iter().rposition(|v| *v != 0.0).map_or(i, |j| i + 1 + j);
        }
    }
    for i in 0..m {
        if let NewtonRow::FrictionPair { normal_row, .. } = prob.rows[i] {
            reach[normal_row] = reach[normal_row].max(i + 1);
            reach[i] = reach[i].max(i + 1);
        }
    }
    let (mut count, mut block_reach) = (0, 0);
    for i in 0..m {
        block_reach = block_reach.max(reach[i]);
        if block_reach == i {
            ends[count] = i + 1;
            count += 1;
        }
    }
    count
}
