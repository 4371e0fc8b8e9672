//! Geometric normal prediction for cooked records.
//!
//! A vertex normal is predicted from the mesh itself: the sum of the cross products of
//! its triangles' edges, taken on the quantised integer positions. Integer sums are
//! exact and do not depend on the order or rotation of triangles, so the encoder and
//! any decoder get the same prediction bit for bit. The stream then stores the
//! wrapping difference between the octahedral code and the predicted code, which is
//! small wherever the authored normal is close to the surface's own, and the coder
//! takes small numbers for little. Hard edges predict well too: a split vertex only
//! sums the faces on its side.

/// Predicted octahedral codes of `bits` bits, one per vertex, into `out` (cleared).
/// `sums` is scratch. Every index must be below `positions.len()`.
pub(crate) fn predict_normals(
    positions: &[[u16; 4]],
    indices: &[u32],
    bits: u32,
    sums: &mut Vec<[i64; 3]>,
    out: &mut Vec<[i16; 2]>,
) {
    sums.clear();
    sums.resize(positions.len(), [0; 3]);
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| positions[i as usize]);
        let e1 = [0, 1, 2].map(|k| b[k] as i64 - a[k] as i64);
        let e2 = [0, 1, 2].map(|k| c[k] as i64 - a[k] as i64);
        let f = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        for &i in t {
            let s = &mut sums[i as usize];
            s[0] += f[0];
            s[1] += f[1];
            s[2] += f[2];
        }
    }
    let scale = ((1i32 << (bits - 1)) - 1) as f64;
    out.clear();
    out.extend(sums.iter().map(|s| {
        let n = [s[0] as f64, s[1] as f64, s[2] as f64];
        let l1 = n[0].abs() + n[1].abs() + n[2].abs();
        if l1 == 0.0 {
            return [0, 0];
        }
        let (x, y) = (n[0] / l1, n[1] / l1);
        let (x, y) = if n[2] < 0.0 {
            let sx = if x >= 0.0 { 1.0 } else { -1.0 };
            let sy = if y >= 0.0 { 1.0 } else { -1.0 };
            ((1.0 - y.abs()) * sx, (1.0 - x.abs()) * sy)
        } else {
            (x, y)
        };
        [(x * scale).round() as i16, (y * scale).round() as i16]
    }));
}

/// Outgoing edges remembered per vertex for the parallelogram lookup; a vertex with
/// more simply forgets the rest (both sides forget the same ones).
const EDGES_PER_VERTEX: usize = 8;

/// Reusable buffers of [`walk_positions`].
#[derive(Default)]
pub(crate) struct WalkScratch {
    visited: Vec<bool>,
    counts: Vec<u8>,
    edges: Vec<[u32; 2]>,
}

/// How a vertex is predicted from vertices met before it (indices into the vertex
/// arrays). The walk depends on the triangles alone, so one walk serves positions and
/// uvs alike.
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

impl Recipe {
    /// The prediction over `N` u16 components; every vertex named must be final.
    #[inline]
    pub(crate) fn predict<const N: usize>(self, v: &[[u16; N]]) -> [u16; N] {
        match self {
            Recipe::Parallelogram(a, b, c) => {
                let (pa, pb, pc) = (v[a as usize], v[b as usize], v[c as usize]);
                std::array::from_fn(|i| {
                    (pa[i] as i32 + pb[i] as i32 - pc[i] as i32).clamp(0, 65535) as u16
                })
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
    s.edges.resize(n * EDGES_PER_VERTEX, [0; 2]);
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
                let base = b as usize * EDGES_PER_VERTEX;
                let found = s.edges[base..base + s.counts[b as usize] as usize]
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
        for k in 0..3 {
            let (from, to, opp) = (t[k] as usize, t[(k + 1) % 3], t[(k + 2) % 3]);
            let c = s.counts[from] as usize;
            if c < EDGES_PER_VERTEX {
                s.edges[from * EDGES_PER_VERTEX + c] = [to, opp];
                s.counts[from] += 1;
            }
        }
    }
    for v in 0..n {
        if !s.visited[v] {
            visit(v, Recipe::Zero);
        }
    }
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
