//! Deformable–deformable contact: node–node D-contacts between the surface nodes of two
//! deformables, or of one deformable with itself (scene `contact.deformable_contact`, off by
//! default; [`DeformableContactOptions`]).
//!
//! # Model
//! The simplest form that keeps the COND contact diagonalization exact (digest §2.1 "D-contact,
//! nodes i, j", §2.4): both sides are real FEM nodes, so no virtual node is needed and the
//! surrogate Delassus block is `γ = w̄_i + w̄_j` (times `I₃`). A contact pairs a surface node
//! `i` with a surface node `j`:
//! - **normal** `n` (unit, from `j`'s body toward `i`): from the two nodes' outward vertex
//!   normals `n_i, n_j` (area-weighted means of the normals of their incident surface
//!   triangles, current configuration) and their *flatness* `f = |Σ A n| / Σ A` (1 inside a
//!   flat face, 1/√2 on an edge, 1/√3 at a box corner): `n ∝ f_j⁴ n_j − f_i⁴ n_i`. So a
//!   corner node resting on a flat face uses the face's normal (a corner's averaged normal
//!   would tilt the contact by up to 55°), and two flat faces use their common normal. The
//!   frame rows are `n, t1, t2` (world → contact, [`crate::math::tangent_basis`]);
//! - **gap** `g = (x_i − x_j)·n − t` (m, negative when penetrating) with the contact thickness
//!   `t` (`thickness_m`, default half the mean surface edge length): node-to-node contact on a
//!   coarse surface would otherwise let the layers interpenetrate between the nodes;
//! - **signs**: the Signorini–Coulomb conditions act on `R (v_i − v_j) + φ` (`φ` the usual gap /
//!   Baumgarte offset); node `i` receives `+Rᵀλ` and node `j` `−Rᵀλ` (λ in N·s, contact
//!   coordinates `[n, t1, t2]`), so the pair's momentum is conserved exactly;
//! - **friction**: the smaller of the two bodies' coefficients.
//!
//! # Detection (allocation-free after construction)
//! Every step: a uniform spatial hash (counting sort into `2^k ≥ 2 S` buckets, `S` the surface
//! nodes, cell size `max t + max e + margin + 2 h v_max`, `e` the mean surface edge length),
//! then for every eligible surface node `i` the surface node `j` with the smallest
//! `key = g + |lateral offset|` (the gap plus the distance of `x_i − x_j` off the normal line:
//! the node most directly across, deepest first) among those that
//! 1. belongs to another deformable, or to the same one with a **rest distance** of at least
//!    `rest_exclusion_m` (default 3 mean surface edge lengths: topological neighbours are kept
//!    apart by the elasticity; the two layers of a folded mat are far apart at rest);
//! 2. faces `i`: `n_i · n_j < 0.5 − f_i f_j` (`f` the flatness below). Two nodes inside flat
//!    faces must be within 60° of opposite (rejects the side face of a block standing on a
//!    face, and co-facing nodes of one surface); an edge or corner node, whose averaged normal
//!    is tilted by 45–55°, gets a looser cone (the edges of stacked blocks still touch);
//! 3. lies within `t + e_j + margin + h |v_i − v_j|` (the edge length `e_j` of j's body lets
//!    a node find its partner while it is laterally offset by up to an edge: a node passing
//!    between the nodes of a coarse surface is never closer than ~0.7 edge to one of them) and
//!    has a speculative gap `g < margin + h |v_i − v_j|`, and `i` is not behind `j`'s surface
//!    by more than that reach (`(x_i − x_j)·n ≥ −(margin + h |v_i − v_j|)`): a node found
//!    deeper than one step's travel past the surface is on the far side of the other layer
//!    (a wrong pairing, or a layer already crossed), and pushing it back along `n` would drive
//!    it through; it is left alone (the skin keeps correct pairs far from this bound).
//!
//! **One constraint per node** (digest §8.1, else `Γ` is not diagonal): a node that already has
//! a ground / rigid contact or a weld keeps it and takes no part in node–node contacts (neither
//! side); the candidate pairs are accepted smallest key first, each accepted pair uses up both
//! nodes; a node whose partner was taken searches once more among the unused nodes. Nodes
//! pinned to the world or driven one-way by a link (prescribed velocity, `W = 0`) may be side
//! `j` of any number of contacts: with `w̄_j = 0` they add nothing to `Γ`.

use crate::fem::{Deformable, FemContact, NodeAttachment};
use crate::math::{Mat3, Vec3};

/// Deformable–deformable contact (the scene's `contact.deformable_contact` section): node–node
/// D-contacts between the surface nodes of two deformables, or of one deformable with itself
/// (see [`crate::fem::selfcontact`] for the detection rule, frames and signs).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeformableContactOptions {
    /// Detect node–node contacts (off by default: it costs a spatial hash per step).
    pub enabled: bool,
    /// Contact thickness (m): two surface nodes are in contact when their distance along the
    /// normal falls below it. Node-to-node contact on a coarse surface lets the layers
    /// interpenetrate *between* nodes, so the thickness keeps them apart by about half an edge.
    /// Default (`null`): half the mean surface edge length of each body, averaged over the
    /// two bodies of a pair.
    pub thickness_m: Option<f64>,
    /// Self-contact exclusion (m): two nodes of the same body whose *rest* distance is below
    /// this never contact each other (they are topological neighbours, kept apart by the
    /// elasticity). Default (`null`): 3 mean surface edge lengths of the body.
    pub rest_exclusion_m: Option<f64>,
}

const FREE: u8 = 0;
const TAKEN: u8 = 1;
const PRESCRIBED: u8 = 2;

/// Scratch of the node–node contact detection, sized once for a model's deformables.
#[derive(Clone, Debug, Default)]
pub struct NodeContactScratch {
    enabled: bool,
    surf_node: Vec<u32>,
    surf_body: Vec<u32>,
    slot_of: Vec<u32>,
    body_of: Vec<u32>,
    normal: Vec<Vec3>,
    flatness: Vec<f64>,
    thickness: Vec<f64>,
    edge: Vec<f64>,
    exclusion: Vec<f64>,
    cell_start: Vec<u32>,
    cell_entries: Vec<u32>,
    cell_of: Vec<u32>,
    status: Vec<u8>,
    candidates: Vec<(f64, f64, u32, u32)>,
}

/// Mean length (m) of the surface triangles' edges of `d` at rest (0 without a surface).
pub fn mean_surface_edge(d: &Deformable) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for t in &d.surface_triangles {
        for k in 0..3 {
            sum += (d.rest[t[k]] - d.rest[t[(k + 1) % 3]]).norm();
            n += 1;
        }
    }
    if n > 0 {
        sum / n as f64
    } else {
        0.0
    }
}

impl NodeContactScratch {
    /// Sizes everything for `bodies` (empty when `opts.enabled` is false).
    pub fn new(bodies: &[Deformable], opts: &DeformableContactOptions) -> Self {
        if !opts.enabled || bodies.is_empty() {
            return NodeContactScratch::default();
        }
        let total: usize = bodies.iter().map(|d| d.num_nodes()).sum();
        let mut s = NodeContactScratch { enabled: true, slot_of: vec![u32::MAX; total], body_of: vec![0; total], ..Default::default() };
        for (b, d) in bodies.iter().enumerate() {
            for g in d.node_start..d.node_start + d.num_nodes() {
                s.body_of[g] = b as u32;
            }
            for &ln in &d.surface_nodes {
                s.slot_of[d.node_start + ln] = s.surf_node.len() as u32;
                s.surf_node.push((d.node_start + ln) as u32);
                s.surf_body.push(b as u32);
            }
            let e = mean_surface_edge(d);
            s.thickness.push(opts.thickness_m.unwrap_or(0.5 * e));
            s.exclusion.push(opts.rest_exclusion_m.unwrap_or(3.0 * e));
            s.edge.push(e);
        }
        let n = s.surf_node.len();
        let buckets = (2 * n).max(2).next_power_of_two();
        s.normal = vec![Vec3::zeros(); n];
        s.flatness = vec![0.0; n];
        s.cell_start = vec![0; buckets + 1];
        s.cell_entries = vec![0; n];
        s.cell_of = vec![0; n];
        s.status = vec![FREE; total];
        s.candidates = Vec::with_capacity(n);
        s
    }

    /// Whether node–node contact is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Contact thickness (m) of body `b` (see the module docs).
    pub fn thickness(&self, b: usize) -> f64 {
        self.thickness.get(b).copied().unwrap_or(0.0)
    }

    /// Index of the deformable that owns global node `g`.
    pub fn body_of(&self, g: usize) -> usize {
        self.body_of[g] as usize
    }

    #[inline]
    fn cell(p: &Vec3, inv: f64) -> [i64; 3] {
        [(p.x * inv).floor() as i64, (p.y * inv).floor() as i64, (p.z * inv).floor() as i64]
    }

    #[inline]
    fn hash(c: [i64; 3], mask: usize) -> usize {
        let h = c[0].wrapping_mul(73_856_093) ^ c[1].wrapping_mul(19_349_663) ^ c[2].wrapping_mul(83_492_791);
        (h as u64 as usize) & mask
    }

    /// Appends this step's node–node contacts to `contacts` (which already holds the ground /
    /// rigid contacts of the step; their nodes are skipped). `x`, `v`: node positions (m) and
    /// velocities (m/s), 3 per node, world. Does not allocate.
    pub fn detect(&mut self, bodies: &[Deformable], x: &[f64], v: &[f64], dt: f64, margin: f64, contacts: &mut Vec<FemContact>) {
        if !self.enabled {
            return;
        }
        let pos = |g: usize| Vec3::new(x[3 * g], x[3 * g + 1], x[3 * g + 2]);
        let vel = |g: usize| Vec3::new(v[3 * g], v[3 * g + 1], v[3 * g + 2]);
        // node status: taken by a contact or weld, prescribed (may be side j of many), free
        for d in bodies {
            for (ln, at) in d.attachment.iter().enumerate() {
                self.status[d.node_start + ln] = match at {
                    NodeAttachment::Free => FREE,
                    NodeAttachment::Body(..) => TAKEN,
                    NodeAttachment::World | NodeAttachment::BodyOneWay(..) => PRESCRIBED,
                };
            }
        }
        for c in contacts.iter() {
            self.status[c.node] = TAKEN;
        }
        // outward vertex normals (area-weighted)
        self.normal.fill(Vec3::zeros());
        self.flatness.fill(0.0);
        for d in bodies {
            for t in &d.surface_triangles {
                let (a, b, c) = (d.node_start + t[0], d.node_start + t[1], d.node_start + t[2]);
                let n = (pos(b) - pos(a)).cross(&(pos(c) - pos(a)));
                let area = n.norm();
                for g in [a, b, c] {
                    let s = self.slot_of[g] as usize;
                    self.normal[s] += n;
                    self.flatness[s] += area;
                }
            }
        }
        for (n, f) in self.normal.iter_mut().zip(self.flatness.iter_mut()) {
            let l = n.norm();
            if l > 0.0 {
                *f = l / *f; // |Σ A n| / Σ A: 1 on a flat face, 1/√2 on an edge, 1/√3 at a corner
                *n /= l;
            }
        }
        // spatial hash
        let ns = self.surf_node.len();
        let v_max = self.surf_node.iter().map(|&g| vel(g as usize).norm()).fold(0.0, f64::max);
        let t_max = self.thickness.iter().copied().fold(0.0, f64::max);
        let e_max = self.edge.iter().copied().fold(0.0, f64::max);
        let cell = (t_max + e_max + margin + 2.0 * dt * v_max).max(1e-6);
        let inv = 1.0 / cell;
        let mask = self.cell_start.len() - 2;
        self.cell_start.fill(0);
        for s in 0..ns {
            let h = Self::hash(Self::cell(&pos(self.surf_node[s] as usize), inv), mask);
            self.cell_of[s] = h as u32;
            self.cell_start[h] += 1;
        }
        for k in 1..=mask + 1 {
            self.cell_start[k] += self.cell_start[k - 1];
        }
        for s in 0..ns {
            let h = self.cell_of[s] as usize;
            self.cell_start[h] -= 1;
            self.cell_entries[self.cell_start[h] as usize] = s as u32;
        }
        // candidate pairs: the closest eligible partner of every free node
        self.candidates.clear();
        for si in 0..ns {
            if self.status[self.surf_node[si] as usize] != FREE {
                continue;
            }
            if let Some((key, gap, sj)) = self.closest(bodies, x, v, dt, margin, inv, mask, si) {
                self.candidates.push((key, gap, si as u32, sj as u32));
            }
        }
        self.candidates.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        // accept deepest first; then one retry for the nodes whose partner was taken
        for pass in 0..2 {
            for k in 0..self.candidates.len() {
                let (_, mut gap, si, mut sj) = self.candidates[k];
                let gi = self.surf_node[si as usize] as usize;
                if self.status[gi] != FREE {
                    continue;
                }
                if pass == 1 {
                    match self.closest(bodies, x, v, dt, margin, inv, mask, si as usize) {
                        Some((_, g, s)) => (gap, sj) = (g, s as u32),
                        None => continue,
                    }
                }
                let gj = self.surf_node[sj as usize] as usize;
                if self.status[gj] == TAKEN || contacts.len() == contacts.capacity() {
                    continue;
                }
                self.status[gi] = TAKEN;
                if self.status[gj] == FREE {
                    self.status[gj] = TAKEN;
                }
                let (si, sj) = (si as usize, sj as usize);
                let n = Self::pair_normal(self.normal[si], self.flatness[si], self.normal[sj], self.flatness[sj]);
                let (t1, t2) = crate::math::tangent_basis(&n);
                contacts.push(FemContact {
                    node: gi,
                    geom: None,
                    body: None,
                    other_node: Some(gj),
                    position: pos(gi),
                    frame: Mat3::from_rows(&[n.transpose(), t1.transpose(), t2.transpose()]),
                    distance: gap,
                    impulse: [0.0; 3],
                });
            }
        }
    }

    /// The contact normal of a pair (unit, from j toward i): the flatness-weighted mean of j's
    /// outward normal and the opposite of i's, `n ∝ f_j⁴ n_j − f_i⁴ n_i` (see the module docs).
    #[inline]
    fn pair_normal(ni: Vec3, fi: f64, nj: Vec3, fj: f64) -> Vec3 {
        let (wi, wj) = (fi.powi(4), fj.powi(4));
        let n = nj * wj - ni * wi;
        let l = n.norm();
        if l > 1e-12 {
            n / l
        } else {
            nj
        }
    }

    /// The best eligible partner of surface slot `si` (see the module docs; nodes already taken
    /// this step are skipped): the smallest `key = gap + lateral offset` (m); returns the key,
    /// the gap and the partner's slot.
    #[allow(clippy::too_many_arguments)]
    fn closest(&self, bodies: &[Deformable], x: &[f64], v: &[f64], dt: f64, margin: f64, inv: f64, mask: usize, si: usize) -> Option<(f64, f64, usize)> {
        let gi = self.surf_node[si] as usize;
        let bi = self.surf_body[si] as usize;
        let xi = Vec3::new(x[3 * gi], x[3 * gi + 1], x[3 * gi + 2]);
        let vi = Vec3::new(v[3 * gi], v[3 * gi + 1], v[3 * gi + 2]);
        let ni = self.normal[si];
        let rest_i = bodies[bi].rest[gi - bodies[bi].node_start];
        let c = Self::cell(&xi, inv);
        let mut best: Option<(f64, f64, usize)> = None; // (key, gap, slot)
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let h = Self::hash([c[0] + dx, c[1] + dy, c[2] + dz], mask);
                    for e in self.cell_start[h]..self.cell_start[h + 1] {
                        let sj = self.cell_entries[e as usize] as usize;
                        if sj == si {
                            continue;
                        }
                        let gj = self.surf_node[sj] as usize;
                        if self.status[gj] == TAKEN {
                            continue;
                        }
                        let bj = self.surf_body[sj] as usize;
                        if bj == bi && (bodies[bj].rest[gj - bodies[bj].node_start] - rest_i).norm() < self.exclusion[bi] {
                            continue;
                        }
                        let nj = self.normal[sj];
                        if ni.dot(&nj) >= 0.5 - self.flatness[si] * self.flatness[sj] {
                            continue;
                        }
                        let xj = Vec3::new(x[3 * gj], x[3 * gj + 1], x[3 * gj + 2]);
                        let vj = Vec3::new(v[3 * gj], v[3 * gj + 1], v[3 * gj + 2]);
                        let thick = 0.5 * (self.thickness[bi] + self.thickness[bj]);
                        let reach = margin + dt * (vi - vj).norm();
                        let dist = (xi - xj).norm();
                        if dist >= thick + self.edge[bj] + reach {
                            continue;
                        }
                        let n = Self::pair_normal(ni, self.flatness[si], nj, self.flatness[sj]);
                        let along = (xi - xj).dot(&n);
                        let gap = along - thick;
                        if gap >= reach || along < -reach {
                            continue; // apart, or i behind j's surface: the wrong side (see docs)
                        }
                        let key = gap + (xi - xj - n * along).norm();
                        if best.map(|b| key < b.0).unwrap_or(true) {
                            best = Some((key, gap, sj));
                        }
                    }
                }
            }
        }
        best
    }
}
