//! The parallelogram walk over the triangles, shared by the encoder ([`walk`], which
//! hands out recipes) and the decoder ([`unpredict`], which restores values in
//! place and sums face normals on the way): both remember the same edges and make
//! the same recipes, so positions and uvs predicted from it decode exactly.

#[cfg(feature = "encode")]
use crate::coding::parallelogram;

/// Outgoing edges remembered per vertex for the parallelogram lookup; a vertex with
/// more simply forgets the rest (both sides forget the same ones).
pub(crate) const EDGES_PER_VERTEX: usize = 8;

/// Reusable buffers of [`walk_positions`].
#[derive(Default)]
pub(crate) struct WalkScratch {
    pub(crate) visited: Vec<bool>,
    pub(crate) counts: Vec<u8>,
    pub(crate) edges: Vec<EdgeBlock>,
}

/// One vertex's remembered outgoing edges, `[to, opposite]` each, in one cache line:
/// the walk writes three vertices' blocks per triangle, so a block that straddles
/// two lines would cost two misses where one does.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct EdgeBlock(pub(crate) [[u32; 2]; EDGES_PER_VERTEX]);

impl WalkScratch {
    /// Room for `n` vertices' edges. Only ever grows: an edge slot is read only below
    /// its vertex's count, so stale slots need no clearing, and a walk over fewer
    /// vertices (a shared-positions record walks its positions, then its vertices)
    /// must not shrink the table the next walk refills.
    pub(crate) fn grow_edges(&mut self, n: usize) {
        if self.edges.len() < n {
            self.edges.resize(n, EdgeBlock::default());
        }
    }

    /// Remembers triangle `t`'s three directed edges with their opposite vertex, up to
    /// [`EDGES_PER_VERTEX`] per vertex. Encoder and decoder both call this after each
    /// triangle (the decoder's form is in `unwalk.rs`), so their parallelogram lookups
    /// agree.
    #[cfg(feature = "encode")]
    #[inline(always)]
    fn remember_edges(&mut self, t: &[u32]) {
        for k in 0..3 {
            let (from, to, opp) = (t[k] as usize, t[(k + 1) % 3], t[(k + 2) % 3]);
            let c = self.counts[from] as usize;
            if c < EDGES_PER_VERTEX {
                self.edges[from].0[c] = [to, opp];
                self.counts[from] += 1;
            }
        }
    }
}

/// How a vertex is predicted from vertices met before it (indices into the vertex
/// arrays). The walk depends on the triangles alone, so one walk serves positions and
/// uvs alike.
#[cfg(feature = "encode")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recipe {
    /// `a + b - c`, clamped to the code range.
    Parallelogram(u32, u32, u32),
    /// `(a + b) / 2`.
    Midpoint(u32, u32),
    /// A copy of one vertex.
    Copy(u32),
    /// Zero (the first vertex, and vertices no triangle uses).
    Zero,
}

#[cfg(feature = "encode")]
impl Recipe {
    /// The prediction over `N` u16 components, parallelograms weighted by `w`
    /// (0..=8, see [`parallelogram`]); every vertex named must be final.
    #[inline]
    pub(crate) fn predict<const N: usize>(self, v: &[[u16; N]], w: i32) -> [u16; N] {
        match self {
            Recipe::Parallelogram(a, b, c) => {
                let (pa, pb, pc) = (v[a as usize], v[b as usize], v[c as usize]);
                std::array::from_fn(|i| parallelogram(pa[i], pb[i], pc[i], w))
            }
            Recipe::Midpoint(a, b) => {
                let (pa, pb) = (v[a as usize], v[b as usize]);
                std::array::from_fn(|i| ((pa[i] as u32 + pb[i] as u32) / 2) as u16)
            }
            Recipe::Copy(a) => v[a as usize],
            Recipe::Zero => [0; N],
        }
    }
}

/// The parallelogram walk, shared by encoder and decoder so both predict alike.
/// Triangles are walked in order; the first time a vertex is met it is predicted
/// from its triangle's other two corners and the vertex opposite them across their
/// edge (`a + b - c`), or the edge midpoint, or one known corner, or the previously
/// met vertex; vertices no triangle uses come last, predicted as zero.
/// `visit(v, recipe)` is called once per vertex, in an order where every vertex a
/// recipe names was visited before. Every index must be below `n`.
#[cfg(feature = "encode")]
pub(crate) fn walk(
    indices: &[u32],
    n: usize,
    scratch: &mut WalkScratch,
    mut visit: impl FnMut(usize, Recipe),
) {
    let s = scratch;
    s.visited.clear();
    s.visited.resize(n, false);
    s.counts.clear();
    s.counts.resize(n, 0);
    s.grow_edges(n);
    let mut last = None;
    for t in indices.chunks_exact(3) {
        for k in 0..3 {
            let v = t[k] as usize;
            if s.visited[v] {
                continue;
            }
            let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
            let (va, vb) = (s.visited[a as usize], s.visited[b as usize]);
            let recipe = if va && vb {
                // The neighbour across a->b holds the directed edge b->a.
                let c = s.counts[b as usize] as usize;
                let found = s.edges[b as usize].0[..c]
                    .iter()
                    .find(|e| e[0] == a)
                    .map(|e| e[1]);
                match found {
                    Some(c) => Recipe::Parallelogram(a, b, c),
                    None => Recipe::Midpoint(a, b),
                }
            } else if va {
                Recipe::Copy(a)
            } else if vb {
                Recipe::Copy(b)
            } else {
                last.map_or(Recipe::Zero, Recipe::Copy)
            };
            visit(v, recipe);
            s.visited[v] = true;
            last = Some(v as u32);
        }
        s.remember_edges(t);
    }
    for v in 0..n {
        if !s.visited[v] {
            visit(v, Recipe::Zero);
        }
    }
}

#[cfg(all(test, feature = "encode"))]
mod tests {
    use super::*;
    use crate::coding::zigzag;
    use crate::predict::normal_sums;
    use crate::unwalk::unpredict;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Encodes residuals with the encoder's [`walk`] and recipes (as `cook.rs` does),
    /// restores them with [`unpredict`] and checks values and normal sums.
    fn round_trip(indices: &[u32], n: usize, rng: &mut ChaCha8Rng) {
        let pos: Vec<[u16; 4]> = (0..n)
            .map(|_| {
                [
                    rng.random(),
                    rng.random(),
                    rng.random(),
                    rng.random_range(0..2),
                ]
            })
            .collect();
        let uvs: Vec<[u16; 2]> = (0..n).map(|_| [rng.random(), rng.random()]).collect();
        let nor: Vec<[u16; 2]> = (0..n).map(|_| [rng.random(), rng.random()]).collect();
        let w = rng.random_range(0..=8);
        let mut rp: Vec<[u16; 4]> = pos.clone();
        let mut ru: Vec<[u16; 2]> = uvs.clone();
        let mut rn: Vec<[u16; 2]> = nor.clone();
        walk(indices, n, &mut WalkScratch::default(), |v, r| {
            let (p, q, o) = (r.predict(&pos, w), r.predict(&uvs, 8), r.predict(&nor, 8));
            rn[v] = [0, 1].map(|i| zigzag(nor[v][i].wrapping_sub(o[i])));
            rp[v] = [0, 1, 2, 3].map(|i| {
                if i < 3 {
                    zigzag(pos[v][i].wrapping_sub(p[i]))
                } else {
                    pos[v][3]
                }
            });
            ru[v] = [0, 1].map(|i| zigzag(uvs[v][i].wrapping_sub(q[i])));
        });
        rp.push([0; 4]);
        ru.push([0; 2]);
        rn.push([0; 2]);
        let (mut scratch, mut sums) = (WalkScratch::default(), Vec::new());
        let mut tn = rn.clone();
        unpredict::<true, true, true, false>(
            indices,
            n,
            w,
            &mut rp,
            &mut ru,
            &mut tn,
            &mut scratch,
            &mut sums,
        );
        assert_eq!(&rp[..n], &pos[..], "positions");
        assert_eq!(&ru[..n], &uvs[..], "uvs");
        assert_eq!(tn, rn, "normals untouched without PN");
        // Normals restored by the same walk (no geometric sums then).
        let (mut rp2, mut ru2) = (vec![[0u16; 4]; n + 1], vec![[0u16; 2]; n + 1]);
        unpredict::<false, false, false, true>(
            indices,
            n,
            w,
            &mut rp2,
            &mut ru2,
            &mut rn,
            &mut scratch,
            &mut sums,
        );
        assert_eq!(&rn[..n], &nor[..], "normals");
        let mut expected = Vec::new();
        normal_sums(&pos, indices, &mut expected);
        let bits = |v: &Vec<[f32; 4]>| -> Vec<[u32; 4]> {
            v.iter().map(|s| s.map(f32::to_bits)).collect()
        };
        assert_eq!(bits(&sums), bits(&expected), "normal sums");
    }

    /// Renumbers vertices in order of first use (what the writer's fetch order gives).
    fn first_use_order(indices: &mut [u32], n: usize) {
        let mut map = vec![u32::MAX; n];
        let mut next = 0;
        for i in indices.iter_mut() {
            if map[*i as usize] == u32::MAX {
                map[*i as usize] = next;
                next += 1;
            }
            *i = map[*i as usize];
        }
    }

    #[test]
    fn the_ordered_fast_path_and_the_general_walk_restore_what_the_encoder_walked() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for case in 0..400 {
            let n = rng.random_range(1..60);
            let tris = rng.random_range(0..80);
            // A strip-like run (each triangle reusing an edge of the last) with some
            // random triangles and repeated corners mixed in.
            let mut idx: Vec<u32> = Vec::new();
            for t in 0..tris {
                if t > 0 && rng.random_bool(0.8) {
                    let l = idx.len();
                    let (a, b) = (idx[l - 2], idx[l - 1]);
                    idx.extend([b, a, rng.random_range(0..n as u32)]);
                } else {
                    idx.extend((0..3).map(|_| rng.random_range(0..n as u32)));
                }
            }
            match case % 3 {
                // Entirely in first-use order.
                0 => first_use_order(&mut idx, n),
                // In order, then broken from a random triangle on.
                1 => {
                    first_use_order(&mut idx, n);
                    let from = rng.random_range(0..=idx.len() / 3) * 3;
                    for i in &mut idx[from..] {
                        if rng.random_bool(0.3) {
                            *i = rng.random_range(0..n as u32);
                        }
                    }
                }
                // Any order.
                _ => {}
            }
            round_trip(&idx, n, &mut rng);
        }
    }

    #[test]
    fn triangles_of_three_new_vertices_restore_what_the_encoder_walked() {
        // Flat-shaded soups (every triangle its own three vertices, the decoder's
        // fresh-triangle path) with triangles over earlier vertices mixed in, in
        // first-use order, from the first triangle and after a first shared one.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for case in 0..200 {
            let tris = rng.random_range(1..50);
            let n = 3 * tris + 2;
            let (mut idx, mut fresh) = (Vec::new(), 0u32);
            for t in 0..tris {
                if (t > 0 || case % 2 == 1) && rng.random_bool(0.25) {
                    let m = (fresh as usize).max(3) as u32;
                    idx.extend((0..3).map(|_| rng.random_range(0..m)));
                } else {
                    idx.extend([fresh, fresh + 1, fresh + 2]);
                    fresh += 3;
                }
            }
            first_use_order(&mut idx, n);
            round_trip(&idx, n, &mut rng);
        }
    }
}
