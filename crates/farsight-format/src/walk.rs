//! The parallelogram walk over the triangles, shared by the encoder ([`walk`], which
//! hands out recipes) and the decoder ([`unpredict`], which restores values in
//! place and sums face normals on the way): both remember the same edges and make
//! the same recipes, so positions and uvs predicted from it decode exactly.

use crate::predict::{add_face, face_normal};

/// Outgoing edges remembered per vertex for the parallelogram lookup; a vertex with
/// more simply forgets the rest (both sides forget the same ones).
const EDGES_PER_VERTEX: usize = 8;

/// Reusable buffers of [`walk_positions`].
#[derive(Default)]
pub(crate) struct WalkScratch {
    visited: Vec<bool>,
    counts: Vec<u8>,
    edges: Vec<EdgeBlock>,
}

/// One vertex's remembered outgoing edges, `[to, opposite]` each, in one cache line:
/// the walk writes three vertices' blocks per triangle, so a block that straddles
/// two lines would cost two misses where one does.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct EdgeBlock([[u32; 2]; EDGES_PER_VERTEX]);

impl WalkScratch {
    /// Room for `n` vertices' edges. Only ever grows: an edge slot is read only below
    /// its vertex's count, so stale slots need no clearing, and a walk over fewer
    /// vertices (a shared-positions record walks its positions, then its vertices)
    /// must not shrink the table the next walk refills.
    fn grow_edges(&mut self, n: usize) {
        if self.edges.len() < n {
            self.edges.resize(n, EdgeBlock::default());
        }
    }

    /// The third corner of the first remembered triangle holding the directed edge
    /// `b -> a`: the neighbour across `a -> b`.
    #[inline(always)]
    fn opposite(&self, b: u32, a: u32) -> Option<u32> {
        let c = self.counts[b as usize] as usize;
        self.edges[b as usize].0[..c]
            .iter()
            .find(|e| e[0] == a)
            .map(|e| e[1])
    }

    /// [`Self::remember_edges`] for a triangle of three vertices met for the first
    /// time, none of which has an edge yet: each corner's first slot.
    #[inline(always)]
    fn remember_fresh(&mut self, [v0, v1, v2]: [u32; 3]) {
        for (from, to, opp) in [(v0, v1, v2), (v1, v2, v0), (v2, v0, v1)] {
            self.edges[from as usize].0[0] = [to, opp];
            self.counts[from as usize] = 1;
        }
    }

    /// Remembers triangle `t`'s three directed edges with their opposite vertex, up to
    /// [`EDGES_PER_VERTEX`] per vertex. Encoder and decoder both call this after each
    /// triangle, so their parallelogram lookups agree.
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

/// The decoder's side of [`walk`]: replaces the zigzag residuals in `positions`
/// (components 0..3; w is kept) and `uvs` by the values, in the walk's order and with
/// its recipes, in one pass without building recipes. `PP`/`PU` say which of the two
/// hold residuals. Both slices carry one extra element at index `n`, which must be
/// zero: a copy of it is the `Zero` recipe, so every recipe is a parallelogram or a
/// midpoint (`Copy(a)` is the midpoint of `a` and `a`). Every index must be below `n`.
///
/// With `NS` (positions restored by this walk, or final already), it also sums the face normals into `sums` (resized to
/// `n`) exactly as [`crate::predict::normal_sums`] does, triangle by triangle once the triangle's
/// corners are final, saving that pass its second walk over the triangles.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn unpredict<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    indices: &[u32],
    n: usize,
    position_weight: i32,
    positions: &mut [[u16; 4]],
    uvs: &mut [[u16; 2]],
    normals: &mut [[u16; 2]],
    scratch: &mut WalkScratch,
    sums: &mut Vec<[f32; 4]>,
) {
    debug_assert!(!PP || positions.len() == n + 1);
    debug_assert!(!PU || uvs.len() == n + 1);
    debug_assert!(!PN || normals.len() == n + 1);
    if NS {
        sums.clear();
        sums.resize(n, [0.0; 4]);
    }
    let s = scratch;
    s.counts.clear();
    s.counts.resize(n, 0);
    s.grow_edges(n);
    let zero = n as u32;
    // First-use order (what the writer's fetch reordering gives): every vertex is met
    // first when it equals `next`, so "visited" is `v < next` and needs no table.
    // Triangles whose first two corners are known and whose third is known or `next`
    // (nearly all of them) take the branch-free path; a triangle that breaks the order
    // hands the rest of the walk to the general loop.
    let mut next = 0u32;
    let mut broken = None;
    'tris: for (ti, t) in indices.chunks_exact(3).enumerate() {
        let t = [t[0], t[1], t[2]];
        if t[0] < next && t[1] < next && t[2] <= next {
            // Corner 2 is new exactly when it is `next` (a branch that mispredicts
            // often; two branch-free forms that restored slot `next` either way, into
            // the slot or into a dump slot, both measured 2-3 ns per triangle slower:
            // the work on the half of triangles that add no vertex costs more than
            // the misses).
            if t[2] == next {
                let (pc, found) = match s.opposite(t[1], t[0]) {
                    Some(c) => (c, true),
                    None => (t[0], false),
                };
                let slot = next as usize;
                if PP {
                    let w = if found { position_weight } else { 0 };
                    restore_if::<4, 3>(positions, slot, [t[0], t[1], pc], w);
                }
                if PU || PN {
                    let w = if found { 8 } else { 0 };
                    if PU {
                        restore_if::<2, 2>(uvs, slot, [t[0], t[1], pc], w);
                    }
                    if PN {
                        restore_if::<2, 2>(normals, slot, [t[0], t[1], pc], w);
                    }
                }
                next += 1;
            }
        } else if t[0] == next && t[1] == t[0] + 1 && t[2] == t[1] + 1 {
            // Three new vertices (nearly every triangle of a flat-shaded mesh): the
            // general loop's recipes without its lookups. Corner 0 copies the last
            // vertex met, corner 1 copies corner 0, and corner 2 is the midpoint of
            // the two, since corner 1 has no remembered edge yet.
            let last = if next > 0 { next - 1 } else { zero };
            // (Every index is below `n`, so none of these sums overflows.)
            let [v0, v1, v2] = t;
            for (v, a, b) in [(v0, last, last), (v1, v0, v0), (v2, v0, v1)] {
                if PP {
                    restore_if::<4, 3>(positions, v as usize, [a, b, a], 0);
                }
                if PU {
                    restore_if::<2, 2>(uvs, v as usize, [a, b, a], 0);
                }
                if PN {
                    restore_if::<2, 2>(normals, v as usize, [a, b, a], 0);
                }
            }
            next = v2 + 1;
            s.remember_fresh(t);
            if NS {
                let [ia, ib, ic] = t.map(|i| i as usize);
                let f = face_normal(positions[ia], positions[ib], positions[ic]);
                add_face(sums, [ia, ib, ic], f);
            }
            continue;
        } else {
            for k in 0..3 {
                let v = t[k];
                if v < next {
                    continue;
                }
                if v != next {
                    broken = Some((ti, k));
                    break 'tris;
                }
                let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
                let last = if next > 0 { next - 1 } else { zero };
                let (pa, pb, pc) = recipe(s, a, b, a < next, b < next, last);
                if PP {
                    restore::<4, 3>(positions, v as usize, pa, pb, pc, position_weight);
                }
                if PU {
                    restore::<2, 2>(uvs, v as usize, pa, pb, pc, 8);
                }
                if PN {
                    restore::<2, 2>(normals, v as usize, pa, pb, pc, 8);
                }
                next += 1;
            }
        }
        s.remember_edges(&t);
        if NS {
            let [ia, ib, ic] = t.map(|i| i as usize);
            let f = face_normal(positions[ia], positions[ib], positions[ic]);
            add_face(sums, [ia, ib, ic], f);
        }
    }
    let Some((ti, k0)) = broken else {
        for v in next as usize..n {
            if PP {
                restore::<4, 3>(positions, v, zero, zero, None, 8);
            }
            if PU {
                restore::<2, 2>(uvs, v, zero, zero, None, 8);
            }
            if PN {
                restore::<2, 2>(normals, v, zero, zero, None, 8);
            }
        }
        return;
    };
    // The general walk from triangle `ti`, corner `k0` on, with the visited table.
    s.visited.clear();
    s.visited.resize(n, false);
    s.visited[..next as usize].fill(true);
    let mut last = if next > 0 { next - 1 } else { zero };
    for (i, t) in indices.chunks_exact(3).enumerate().skip(ti) {
        let t = [t[0], t[1], t[2]];
        let first = if i == ti { k0 } else { 0 };
        for k in first..3 {
            let v = t[k] as usize;
            if s.visited[v] {
                continue;
            }
            let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
            let (va, vb) = (s.visited[a as usize], s.visited[b as usize]);
            let (pa, pb, pc) = recipe(s, a, b, va, vb, last);
            if PP {
                restore::<4, 3>(positions, v, pa, pb, pc, position_weight);
            }
            if PU {
                restore::<2, 2>(uvs, v, pa, pb, pc, 8);
            }
            if PN {
                restore::<2, 2>(normals, v, pa, pb, pc, 8);
            }
            s.visited[v] = true;
            last = v as u32;
        }
        s.remember_edges(&t);
        if NS {
            let [ia, ib, ic] = t.map(|i| i as usize);
            let f = face_normal(positions[ia], positions[ib], positions[ic]);
            add_face(sums, [ia, ib, ic], f);
        }
    }
    for v in 0..n {
        if !s.visited[v] {
            if PP {
                restore::<4, 3>(positions, v, zero, zero, None, 8);
            }
            if PU {
                restore::<2, 2>(uvs, v, zero, zero, None, 8);
            }
            if PN {
                restore::<2, 2>(normals, v, zero, zero, None, 8);
            }
        }
    }
}

/// The decoder's recipe for a new vertex whose triangle's other corners are `a` and
/// `b` (known when `va`, `vb`), as [`walk`] makes it: corners (a, b, Some(c)) for a
/// parallelogram, (a, b, None) for a midpoint, and `Copy(x)` as (x, x, None).
#[inline(always)]
fn recipe(
    s: &WalkScratch,
    a: u32,
    b: u32,
    va: bool,
    vb: bool,
    last: u32,
) -> (u32, u32, Option<u32>) {
    if va && vb {
        (a, b, s.opposite(b, a))
    } else if va {
        (a, a, None)
    } else if vb {
        (b, b, None)
    } else {
        (last, last, None)
    }
}

/// `values[v]` = prediction + unzigzag(residual) on the first `C` components: the
/// [`parallelogram`] of weight `w` when `c` is given, else the midpoint of `a`, `b`
/// (the weight-0 parallelogram).
#[inline(always)]
fn restore<const N: usize, const C: usize>(
    values: &mut [[u16; N]],
    v: usize,
    a: u32,
    b: u32,
    c: Option<u32>,
    w: i32,
) {
    let (c, w) = match c {
        Some(c) => (c, w),
        None => (a, 0),
    };
    restore_if::<N, C>(values, v, [a, b, c], w);
}

/// [`restore`] of slot `slot` from corners `[a, b, c]` as the weight-`w` parallelogram
/// (weight 0: the midpoint of `a` and `b`).
#[inline(always)]
fn restore_if<const N: usize, const C: usize>(
    values: &mut [[u16; N]],
    slot: usize,
    [a, b, c]: [u32; 3],
    w: i32,
) {
    let (pa, pb, pc) = (values[a as usize], values[b as usize], values[c as usize]);
    #[cfg(target_arch = "x86_64")]
    {
        // Four lanes either way; a [u16; 2] rides in the low two.
        let wide =
            |p: [u16; N]| -> [u16; 4] { std::array::from_fn(|i| if i < N { p[i] } else { 0 }) };
        let r = crate::simd::restore::<C>(wide(pa), wide(pb), wide(pc), wide(values[slot]), w);
        values[slot] = std::array::from_fn(|i| r[i]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let r = &mut values[slot];
        for i in 0..C {
            r[i] = parallelogram(pa[i], pb[i], pc[i], w).wrapping_add(unzigzag(r[i]));
        }
    }
}

/// The parallelogram prediction `a + b - c` leaned towards the midpoint of `a` and
/// `b` by `w` (0..=8): `((a + b)(8 + w) - 2 w c) / 16`, rounded down, clamped to the
/// code range. `w = 8` is exactly `a + b - c`, `w = 0` the midpoint. The x86_64
/// decoder computes it in SSE2 (`simd::restore`); the encoder, the tests and other
/// targets use this form.
#[cfg(any(feature = "encode", test, not(target_arch = "x86_64")))]
#[inline(always)]
pub(crate) fn parallelogram(a: u16, b: u16, c: u16, w: i32) -> u16 {
    (((a as i32 + b as i32) * (8 + w) - 2 * w * c as i32) >> 4).clamp(0, 65535) as u16
}

/// Zigzag: small signed residuals become small unsigned numbers.
#[cfg(feature = "encode")]
#[inline]
pub(crate) fn zigzag(r: u16) -> u16 {
    let r = r as i16;
    ((r << 1) ^ (r >> 15)) as u16
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(z: u16) -> u16 {
    (z >> 1) ^ (0u16.wrapping_sub(z & 1))
}

#[cfg(all(test, feature = "encode"))]
mod tests {
    use super::*;
    use crate::predict::normal_sums;
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
