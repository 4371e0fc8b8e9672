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

/// Parallelogram prediction of quantised positions (or uvs: any `N` u16 components), shared by encoder and decoder so
/// both walk exactly the same way. Triangles are walked in order; the first time a
/// vertex is met it is predicted from its triangle's other two corners and the vertex
/// opposite them across their edge (`a + b - c`), or the edge midpoint, or one known
/// corner, or the previous vertex; vertices no triangle uses are predicted as zero.
/// `visit(v, prediction, pos)` must leave `pos[v]` holding vertex `v`'s true position:
/// the encoder leaves it (and records the residual), the decoder adds the residual.
/// Every index must be below `pos.len()`.
pub(crate) fn walk_positions<const N: usize>(
    indices: &[u32],
    pos: &mut [[u16; N]],
    scratch: &mut WalkScratch,
    mut visit: impl FnMut(usize, [u16; N], &mut [[u16; N]]),
) {
    let n = pos.len();
    let s = scratch;
    s.visited.clear();
    s.visited.resize(n, false);
    s.counts.clear();
    s.counts.resize(n, 0);
    s.edges.resize(n * EDGES_PER_VERTEX, [0; 2]);
    let mut last = [0u16; N];
    for t in indices.chunks_exact(3) {
        for k in 0..3 {
            let v = t[k] as usize;
            if s.visited[v] {
                continue;
            }
            let a = t[(k + 1) % 3] as usize;
            let b = t[(k + 2) % 3] as usize;
            let (va, vb) = (s.visited[a], s.visited[b]);
            let pred = if va && vb {
                // The neighbour across a->b holds the directed edge b->a.
                let base = b * EDGES_PER_VERTEX;
                let found = s.edges[base..base + s.counts[b] as usize]
                    .iter()
                    .find(|e| e[0] as usize == a)
                    .map(|e| e[1] as usize);
                let (pa, pb) = (pos[a], pos[b]);
                match found {
                    Some(c) => {
                        let pc = pos[c];
                        std::array::from_fn(|i| {
                            (pa[i] as i32 + pb[i] as i32 - pc[i] as i32).clamp(0, 65535) as u16
                        })
                    }
                    None => std::array::from_fn(|i| ((pa[i] as u32 + pb[i] as u32) / 2) as u16),
                }
            } else if va {
                pos[a]
            } else if vb {
                pos[b]
            } else {
                last
            };
            visit(v, pred, pos);
            s.visited[v] = true;
            last = pos[v];
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
            visit(v, [0; N], pos);
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
