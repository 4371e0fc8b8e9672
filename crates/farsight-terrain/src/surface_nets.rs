//! Surface Nets over a [`SampleField`]: one vertex per cube that straddles the 0.5
//! crossing, at the mean of its edge crossings; one quad per crossing sample edge
//! whose lower sample the chunk owns. One pass: the cubes of a quad always precede
//! the cube that emits it, so their vertices already exist.

use glam::IVec3;

use crate::field::{SampleField, INSIDE, PAD};

/// Crossing level in occupancy units (0.5 * 255).
const ISO: f32 = 127.5;

/// The 12 cube edges as corner pairs; corner `c` sits at `(c & 1, c >> 1 & 1, c >> 2)`.
const EDGES: [(u8, u8); 12] = [
    (0, 1),
    (2, 3),
    (4, 5),
    (6, 7), // along x
    (0, 2),
    (1, 3),
    (4, 6),
    (5, 7), // along y
    (0, 4),
    (1, 5),
    (2, 6),
    (3, 7), // along z
];

/// For each corner mask, the set of edges whose ends differ.
const EDGE_MASK: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut m = 0;
    while m < 256 {
        let mut e = 0;
        let mut bits = 0u16;
        while e < 12 {
            let (a, b) = EDGES[e];
            if ((m >> a) & 1) != ((m >> b) & 1) {
                bits |= 1 << e;
            }
            e += 1;
        }
        t[m] = bits;
        m += 1;
    }
    t
};

/// Pack the inside bits (high bit of each byte) of up to 64 samples into a word.
#[inline]
pub(crate) fn pack_inside(row: &[u8]) -> u64 {
    debug_assert!(row.len() <= 64);
    let mut bits = 0u64;
    let mut chunks = row.chunks_exact(8);
    let mut shift = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let t = (w >> 7) & 0x0101_0101_0101_0101;
        bits |= (t.wrapping_mul(0x0102_0408_1020_4080) >> 56) << shift;
        shift += 8;
    }
    for (i, &v) in chunks.remainder().iter().enumerate() {
        bits |= ((v >= INSIDE) as u64) << (shift + i);
    }
    bits
}

/// Output and scratch of the mesher. Reuse one per thread: `extract` clears the
/// outputs and keeps every capacity, so steady-state meshing does not allocate.
#[derive(Clone, Debug, Default)]
pub struct SurfaceNets {
    rows: Vec<u64>,
    cube_vertex: Vec<u32>,
    /// Vertex positions in world units.
    pub positions: Vec<[f32; 3]>,
    /// Unit normals pointing out of the solid (empty unless requested).
    pub normals: Vec<[f32; 3]>,
    /// Two triangles per quad: `(v0, v1, v2), (v0, v2, v3)`.
    pub indices: Vec<u32>,
    /// Padded field index of each vertex's cube corner 0.
    pub vertex_base: Vec<u32>,
    /// Each vertex's position inside its cube, in sample units (0..1 per axis).
    pub vertex_offset: Vec<[f32; 3]>,
    /// The sample edge axis (0, 1, 2) of each quad.
    pub quad_axis: Vec<u8>,
}

impl SurfaceNets {
    /// Empty buffers; they grow to the largest surface extracted and are reused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties every buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.positions.clear();
        self.normals.clear();
        self.indices.clear();
        self.vertex_base.clear();
        self.vertex_offset.clear();
        self.quad_axis.clear();
    }

    /// Quads extracted (two triangles, six indices each).
    pub fn quad_count(&self) -> usize {
        self.indices.len() / 6
    }

    /// The four vertices of quad `q`, in winding order.
    #[inline]
    pub fn quad(&self, q: usize) -> [u32; 4] {
        let i = &self.indices[q * 6..q * 6 + 6];
        [i[0], i[1], i[2], i[5]]
    }

    /// Mesh `field`. Sample `(i, j, k)` of the chunk maps to world position
    /// `(sample_origin + (i, j, k) + 0.5) * scale`; equal-detail neighbours pass
    /// origins that differ by whole samples, so their shared vertices are
    /// bit-identical.
    pub fn extract(
        &mut self,
        field: &SampleField,
        sample_origin: IVec3,
        scale: f32,
        normals: bool,
    ) {
        self.clear();
        let n = field.n();
        let d = field.dim();
        let dd = d * d;
        let solid = field.solid();
        self.rows.resize(dd, 0);
        for (r, row) in self.rows.iter_mut().zip(solid.chunks_exact(d)) {
            *r = pack_inside(row);
        }
        if self.rows.iter().all(|&r| r == 0) {
            return;
        }
        self.cube_vertex.resize(d * dd, u32::MAX);
        // Cube corners run over padded 1..=n+1; only straddling cubes get a vertex
        // and only their entries are ever read back, so the map is never cleared.
        let range = ((1u64 << (n + 1)) - 1) << 1;
        let corner_offset: [usize; 8] =
            std::array::from_fn(|c| (c & 1) + d * ((c >> 1) & 1) + dd * (c >> 2));
        let origin = sample_origin.as_vec3() - PAD as f32 + 0.5;
        for z in 1..=n + 1 {
            for y in 1..=n + 1 {
                let r = y + d * z;
                let (a0, a1, a2, a3) = (
                    self.rows[r],
                    self.rows[r + 1],
                    self.rows[r + d],
                    self.rows[r + d + 1],
                );
                let and = a0 & a1 & a2 & a3;
                let or = a0 | a1 | a2 | a3;
                let mut straddle = (or | (or >> 1)) & !(and & (and >> 1)) & range;
                while straddle != 0 {
                    let x = straddle.trailing_zeros() as usize;
                    straddle &= straddle - 1;
                    let base = x + d * y + dd * z;
                    let v: [u8; 8] = std::array::from_fn(|c| solid[base + corner_offset[c]]);
                    let mut mask = 0usize;
                    for (c, &s) in v.iter().enumerate() {
                        mask |= ((s >= INSIDE) as usize) << c;
                    }
                    let off = vertex_offset(&v, mask);
                    let id = self.positions.len() as u32;
                    self.cube_vertex[base] = id;
                    self.positions.push([
                        (origin.x + x as f32 + off[0]) * scale,
                        (origin.y + y as f32 + off[1]) * scale,
                        (origin.z + z as f32 + off[2]) * scale,
                    ]);
                    self.vertex_base.push(base as u32);
                    self.vertex_offset.push(off);
                    if normals {
                        self.normals.push(normal_at(solid, base, off, d));
                    }
                    // Quads for the three edges leaving corner 0, if owned.
                    if x < PAD || y < PAD || z < PAD {
                        continue;
                    }
                    self.push_quads(base, id, mask, d);
                }
            }
        }
    }

    /// The quads of the three edges leaving corner 0 of the cube at `base` (whose
    /// vertex is `id` and corner mask `mask`) that the surface crosses, each wound
    /// to face out of the solid; `d` is the padded field's side.
    #[inline(always)]
    fn push_quads(&mut self, base: usize, id: u32, mask: usize, d: usize) {
        let dd = d * d;
        let inside0 = mask & 1 != 0;
        let cv = &self.cube_vertex;
        // (axis, corner bit across the edge, first and second tangent steps)
        for (axis, bit, s1, s2) in [(0u8, 2, d, dd), (1, 4, dd, 1), (2, 16, 1, d)] {
            if ((mask & bit) != 0) == inside0 {
                continue;
            }
            let q0 = cv[base - s1 - s2];
            let q1 = cv[base - s2];
            let q2 = id;
            let q3 = cv[base - s1];
            let quad = if inside0 {
                [q0, q1, q2, q3]
            } else {
                [q0, q3, q2, q1]
            };
            self.indices
                .extend_from_slice(&[quad[0], quad[1], quad[2], quad[0], quad[2], quad[3]]);
            self.quad_axis.push(axis);
        }
    }
}

/// A straddling cube's vertex, in the cube (0 to 1 on each axis): the mean of the
/// points where the iso level crosses its edges, from its eight corner samples `v`
/// and their inside mask `mask`.
#[inline(always)]
fn vertex_offset(v: &[u8; 8], mask: usize) -> [f32; 3] {
    let mut edges = EDGE_MASK[mask];
    let mut sum = [0.0f32; 3];
    let count = edges.count_ones() as f32;
    while edges != 0 {
        let e = edges.trailing_zeros() as usize;
        edges &= edges - 1;
        let (a, b) = EDGES[e];
        let (va, vb) = (v[a as usize] as f32, v[b as usize] as f32);
        let t = (ISO - va) / (vb - va);
        let axis = e >> 2;
        for (k, s) in sum.iter_mut().enumerate() {
            *s += if k == axis { t } else { ((a >> k) & 1) as f32 };
        }
    }
    [sum[0] / count, sum[1] / count, sum[2] / count]
}

/// Central-difference gradient at the 8 corners, trilinearly interpolated at `off`,
/// negated and normalised: the outward normal of the solid.
#[inline]
fn normal_at(solid: &[u8], base: usize, off: [f32; 3], d: usize) -> [f32; 3] {
    let dd = d * d;
    // The 4x4x4 block around the cube, copied row by row (one bounds check per
    // row), then read at constant offsets.
    let mut b = [0u8; 64];
    let start = base - 1 - d - dd;
    for z in 0..4 {
        for y in 0..4 {
            let s = start + d * y + dd * z;
            b[4 * y + 16 * z..4 * y + 16 * z + 4].copy_from_slice(&solid[s..s + 4]);
        }
    }
    let wx = [1.0 - off[0], off[0]];
    let wy = [1.0 - off[1], off[1]];
    let wz = [1.0 - off[2], off[2]];
    let mut g = [0.0f32; 3];
    for (cz, wz) in wz.iter().enumerate() {
        for (cy, wy) in wy.iter().enumerate() {
            let wyz = wy * wz;
            for (cx, wx) in wx.iter().enumerate() {
                let w = wx * wyz;
                let p = (cx + 1) + 4 * (cy + 1) + 16 * (cz + 1);
                g[0] += w * (b[p + 1] as f32 - b[p - 1] as f32);
                g[1] += w * (b[p + 4] as f32 - b[p - 4] as f32);
                g[2] += w * (b[p + 16] as f32 - b[p - 16] as f32);
            }
        }
    }
    let len = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    if len > 0.0 {
        [-g[0] / len, -g[1] / len, -g[2] / len]
    } else {
        [0.0, 1.0, 0.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn pack_matches_scalar() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for len in [1, 7, 8, 13, 36, 64] {
            let row: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let scalar = row
                .iter()
                .enumerate()
                .fold(0u64, |b, (i, &v)| b | (((v >= INSIDE) as u64) << i));
            assert_eq!(pack_inside(&row), scalar, "len {len}");
        }
    }

    fn sphere_field(n: usize, c: f32, r: f32) -> SampleField {
        let mut f = SampleField::new();
        f.fill_with(n, |x, y, z| {
            let p = glam::Vec3::new(x as f32, y as f32, z as f32) - 2.0;
            let occ = (0.5 + r - p.distance(glam::Vec3::splat(c))).clamp(0.0, 1.0);
            ((occ * 255.0).round() as u8, 3)
        });
        f
    }

    #[test]
    fn sphere_is_closed_and_faces_out() {
        let f = sphere_field(32, 15.3, 9.0);
        let mut sn = SurfaceNets::new();
        sn.extract(&f, IVec3::ZERO, 1.0, true);
        assert!(sn.quad_count() > 500);
        // Closed: every undirected edge used by exactly two triangles, opposite ways.
        let mut edges = std::collections::HashMap::new();
        for t in sn.indices.chunks_exact(3) {
            for k in 0..3 {
                *edges.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
            }
        }
        for (&(a, b), &n) in &edges {
            assert_eq!(n, 1, "directed edge {a}-{b} used {n} times");
            if !edges.contains_key(&(b, a)) {
                let d = f.dim();
                for v in [a, b] {
                    let base = sn.vertex_base[v as usize] as usize;
                    let (x, y, z) = (base % d, base / d % d, base / (d * d));
                    eprintln!("vertex {v} cube {x} {y} {z}");
                }
                for (q, t) in sn.indices.chunks_exact(6).enumerate() {
                    if t.contains(&a) && t.contains(&b) {
                        let cubes: Vec<_> = t
                            .iter()
                            .map(|&v| {
                                let b = sn.vertex_base[v as usize] as usize;
                                (b % d, b / d % d, b / (d * d))
                            })
                            .collect();
                        eprintln!("quad {q} axis {} {:?}", sn.quad_axis[q], cubes);
                    }
                }
                panic!("open edge {a}-{b}");
            }
        }
        let c = glam::Vec3::splat(15.3 + 0.5);
        for t in sn.indices.chunks_exact(3) {
            let p: Vec<glam::Vec3> = t
                .iter()
                .map(|&i| glam::Vec3::from(sn.positions[i as usize]))
                .collect();
            let n = (p[1] - p[0]).cross(p[2] - p[0]);
            let centroid = (p[0] + p[1] + p[2]) / 3.0;
            assert!(n.dot(centroid - c) > 0.0, "triangle faces inward");
            for &i in t {
                let vn = glam::Vec3::from(sn.normals[i as usize]);
                assert!(vn.dot((glam::Vec3::from(sn.positions[i as usize]) - c).normalize()) > 0.8);
            }
            for q in &p {
                assert!(
                    (q.distance(c) - 9.0).abs() < 0.6,
                    "vertex {q} off the sphere"
                );
            }
        }
    }

    /// Plain reference: every cube, every edge, no bit tricks.
    fn reference(f: &SampleField) -> (Vec<[f32; 3]>, Vec<u32>) {
        let (n, d) = (f.n(), f.dim());
        let at = |x: usize, y: usize, z: usize| f.solid()[x + d * (y + d * z)];
        let mut ids = std::collections::HashMap::new();
        let mut pos = Vec::new();
        for z in 1..=n + 1 {
            for y in 1..=n + 1 {
                for x in 1..=n + 1 {
                    let v: [u8; 8] =
                        std::array::from_fn(|c| at(x + (c & 1), y + ((c >> 1) & 1), z + (c >> 2)));
                    let ins = v.iter().filter(|&&s| s >= INSIDE).count();
                    if ins == 0 || ins == 8 {
                        continue;
                    }
                    let mut sum = [0.0f32; 3];
                    let mut cnt = 0.0;
                    for (e, &(a, b)) in EDGES.iter().enumerate() {
                        let (va, vb) = (v[a as usize], v[b as usize]);
                        if (va >= INSIDE) == (vb >= INSIDE) {
                            continue;
                        }
                        let t = (ISO - va as f32) / (vb as f32 - va as f32);
                        for (k, s) in sum.iter_mut().enumerate() {
                            *s += if k == e >> 2 {
                                t
                            } else {
                                ((a >> k) & 1) as f32
                            };
                        }
                        cnt += 1.0;
                    }
                    ids.insert((x, y, z), pos.len() as u32);
                    pos.push([
                        x as f32 - 1.5 + sum[0] / cnt,
                        y as f32 - 1.5 + sum[1] / cnt,
                        z as f32 - 1.5 + sum[2] / cnt,
                    ]);
                }
            }
        }
        let mut idx = Vec::new();
        for z in 2..n + 2 {
            for y in 2..n + 2 {
                for x in 2..n + 2 {
                    let inside = at(x, y, z) >= INSIDE;
                    let steps = [(1usize, 0usize, 0usize), (0, 1, 0), (0, 0, 1)];
                    for axis in 0..3 {
                        let (ex, ey, ez) = steps[axis];
                        if (at(x + ex, y + ey, z + ez) >= INSIDE) == inside {
                            continue;
                        }
                        let (t1, t2) = (steps[(axis + 1) % 3], steps[(axis + 2) % 3]);
                        let c = |a: (usize, usize, usize), b: (usize, usize, usize)| {
                            ids[&(x - a.0 - b.0, y - a.1 - b.1, z - a.2 - b.2)]
                        };
                        let o = (0, 0, 0);
                        let q = [c(t1, t2), c(o, t2), c(o, o), c(t1, o)];
                        let q = if inside { q } else { [q[0], q[3], q[2], q[1]] };
                        idx.extend_from_slice(&[q[0], q[1], q[2], q[0], q[2], q[3]]);
                    }
                }
            }
        }
        (pos, idx)
    }

    #[test]
    fn matches_reference_on_random_fields() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut f = SampleField::new();
        let mut sn = SurfaceNets::new();
        for round in 0..12 {
            let n = [4, 8, 16, 32][round % 4];
            let bias: u8 = rng.random();
            f.fill_with(n, |_, _, _| {
                (
                    if rng.random_bool(0.5) {
                        bias
                    } else {
                        rng.random()
                    },
                    2,
                )
            });
            sn.extract(&f, IVec3::ZERO, 1.0, false);
            let (pos, idx) = reference(&f);
            assert_eq!(sn.positions, pos, "round {round}");
            let mut a: Vec<[u32; 6]> = sn
                .indices
                .chunks_exact(6)
                .map(|c| c.try_into().unwrap())
                .collect();
            let mut b: Vec<[u32; 6]> = idx.chunks_exact(6).map(|c| c.try_into().unwrap()).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "round {round}");
        }
    }

    #[test]
    fn empty_and_full_fields_give_nothing() {
        let mut f = SampleField::new();
        let mut sn = SurfaceNets::new();
        for v in [0u8, 255] {
            f.fill_with(32, |_, _, _| (v, 2));
            sn.extract(&f, IVec3::ZERO, 1.0, true);
            assert!(sn.positions.is_empty() && sn.indices.is_empty());
        }
    }
}
