//! Render meshes of one chunk: Surface Nets vertices with normals, per-quad
//! material sets with 8-bit weights, and skirts along the open border of coarse
//! levels. [`ChunkMesher`] owns every scratch buffer, so meshing reuses memory.

use bytemuck::{Pod, Zeroable};
use glam::{IVec3, Vec3};

use crate::cell::{chunk_origin, Material, CELL_SIZE};
use crate::field::{samples_per_axis, surface_impossible, SampleField};
use crate::grid::CellSource;
use crate::surface_nets::SurfaceNets;

/// One render vertex (32 bytes, `Pod`, uploadable as is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct TerrainVertex {
    /// Position, world space.
    pub position: [f32; 3],
    /// Unit normal pointing out of the solid.
    pub normal: [f32; 3],
    /// Up to 4 material ids, sorted ascending, the same on every vertex of a quad;
    /// unused slots hold 0 with weight 0.
    pub materials: [u8; 4],
    /// Weights of `materials`, summing to exactly 255.
    pub weights: [u8; 4],
}

const _: () = assert!(std::mem::size_of::<TerrainVertex>() == 32);

/// A chunk's render mesh at one level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChunkMesh {
    /// The chunk's coordinate, in chunks.
    pub chunk: IVec3,
    /// The render level, 0 (full detail) to [`LEVELS`](crate::LEVELS) - 1.
    pub level: u8,
    /// The vertices, world space.
    pub vertices: Vec<TerrainVertex>,
    /// Triangles; those from `skirt_start` on are skirts (render only).
    pub indices: Vec<u32>,
    /// Where the skirt triangles begin in `indices` (its length when none).
    pub skirt_start: usize,
}

impl ChunkMesh {
    /// True when the chunk has no surface at this level.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
    /// The surface triangles without skirts (what picking uses).
    pub fn surface_indices(&self) -> &[u32] {
        &self.indices[..self.skirt_start]
    }
    /// Triangles, skirts included.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// Heap bytes the vertex and index buffers hold (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.vertices.capacity() * 32 + self.indices.capacity() * 4
    }
}

/// Depth of the skirt hung below a coarse mesh's open border, in world units.
pub fn skirt_depth(level: u8) -> f32 {
    2.0 * (1u32 << level) as f32 * CELL_SIZE
}

/// Meshes chunks; keep one per worker thread.
#[derive(Debug, Default)]
pub struct ChunkMesher {
    /// The sample field of the last chunk meshed.
    pub field: SampleField,
    /// The raw Surface Nets output of the last chunk meshed.
    pub surface: SurfaceNets,
    vmat: Vec<[u8; 8]>,
    vwt: Vec<[u16; 8]>,
    vlen: Vec<u8>,
    first_rv: Vec<u32>,
    next_rv: Vec<u32>,
    edges: Vec<(u64, u32, u32)>,
}

impl ChunkMesher {
    /// A mesher with empty scratch buffers; they grow to the largest chunk seen.
    pub fn new() -> Self {
        Self::default()
    }

    /// Build the field of `chunk` at `level` and extract its surface (geometry,
    /// plus normals if asked). Returns false, having done no work, when the chunk
    /// and every chunk it reads are uniform on one side of the surface.
    pub fn extract_surface(
        &mut self,
        src: &impl CellSource,
        chunk: IVec3,
        level: u8,
        normals: bool,
    ) -> bool {
        if surface_impossible(src, chunk, level) {
            self.surface.clear();
            return false;
        }
        self.field.build(src, chunk, level);
        let s = 1i32 << level;
        let sample_origin = chunk_origin(chunk) / s;
        self.surface
            .extract(&self.field, sample_origin, CELL_SIZE * s as f32, normals);
        true
    }

    /// The render mesh of `chunk` at `level`.
    pub fn mesh(&mut self, src: &impl CellSource, chunk: IVec3, level: u8) -> ChunkMesh {
        let mut out = ChunkMesh::default();
        self.mesh_into(src, chunk, level, &mut out);
        out
    }

    /// As [`ChunkMesher::mesh`], reusing `out`'s buffers.
    pub fn mesh_into(
        &mut self,
        src: &impl CellSource,
        chunk: IVec3,
        level: u8,
        out: &mut ChunkMesh,
    ) {
        out.chunk = chunk;
        out.level = level;
        out.vertices.clear();
        out.indices.clear();
        out.skirt_start = 0;
        if !self.extract_surface(src, chunk, level, true) || self.surface.indices.is_empty() {
            return;
        }
        debug_assert_eq!(samples_per_axis(level), self.field.n());
        self.vertex_materials();
        self.build_quads(out);
        out.skirt_start = out.indices.len();
        // The seed hangs skirts on coarse meshes only. A fine mesh beside a coarse one
        // that sits lower at the seam then shows a crack from the coarse side at
        // grazing angles (tests/it/meshing.rs found it), so every level gets skirts.
        self.skirts(out, level);
    }

    /// Solid material contributions of each vertex's 8 samples (air adds nothing).
    fn vertex_materials(&mut self) {
        let d = self.field.dim();
        let dd = d * d;
        let (solid, mat) = (self.field.solid(), self.field.material());
        let nv = self.surface.positions.len();
        self.vmat.clear();
        self.vwt.clear();
        self.vlen.clear();
        for &base in &self.surface.vertex_base {
            let mut m = [0u8; 8];
            let mut w = [0u16; 8];
            let mut len = 0usize;
            for c in 0..8 {
                let p = base as usize + (c & 1) + d * ((c >> 1) & 1) + dd * (c >> 2);
                let s = solid[p];
                if s == 0 {
                    continue;
                }
                let id = mat[p];
                match m[..len].iter().position(|&x| x == id) {
                    Some(k) => w[k] += s as u16,
                    None => {
                        m[len] = id;
                        w[len] = s as u16;
                        len += 1;
                    }
                }
            }
            self.vmat.push(m);
            self.vwt.push(w);
            self.vlen.push(len as u8);
        }
        debug_assert_eq!(self.vmat.len(), nv);
    }

    fn build_quads(&mut self, out: &mut ChunkMesh) {
        let nv = self.surface.positions.len();
        self.first_rv.clear();
        self.first_rv.resize(nv, u32::MAX);
        self.next_rv.clear();
        for q in 0..self.surface.quad_count() {
            let quad = self.surface.quad(q);
            let mut rv = [0u32; 4];
            // Fast path: every vertex sees one and the same material.
            let m0 = self.vmat[quad[0] as usize][0];
            if quad
                .iter()
                .all(|&v| self.vlen[v as usize] == 1 && self.vmat[v as usize][0] == m0)
            {
                for (slot, &v) in quad.iter().enumerate() {
                    rv[slot] =
                        self.render_vertex(v as usize, [m0, 0, 0, 0], || [255, 0, 0, 0], out);
                }
            } else {
                // Combined contributions of the quad's vertices.
                let mut cm = [0u8; 32];
                let mut cw = [0u32; 32];
                let mut cl = 0;
                for &v in &quad {
                    let v = v as usize;
                    for k in 0..self.vlen[v] as usize {
                        let id = self.vmat[v][k];
                        match cm[..cl].iter().position(|&x| x == id) {
                            Some(j) => cw[j] += self.vwt[v][k] as u32,
                            None => {
                                cm[cl] = id;
                                cw[cl] = self.vwt[v][k] as u32;
                                cl += 1;
                            }
                        }
                    }
                }
                let set = top_four(&cm[..cl], &cw[..cl]);
                for (slot, &v) in quad.iter().enumerate() {
                    let v = v as usize;
                    let (vm, vw) = (self.vmat[v], self.vwt[v]);
                    rv[slot] = self.render_vertex(
                        v,
                        set,
                        || vertex_weights(&set, &vm, &vw, &cm[..cl], &cw[..cl]),
                        out,
                    );
                }
            }
            out.indices
                .extend_from_slice(&[rv[0], rv[1], rv[2], rv[0], rv[2], rv[3]]);
        }
    }

    /// The render vertex of shared vertex `v` with material `set`, made on first use
    /// (the weights depend only on the vertex and the set, so reuse is exact).
    #[inline]
    fn render_vertex(
        &mut self,
        v: usize,
        set: [u8; 4],
        weights: impl FnOnce() -> [u8; 4],
        out: &mut ChunkMesh,
    ) -> u32 {
        let mut r = self.first_rv[v];
        while r != u32::MAX && out.vertices[r as usize].materials != set {
            r = self.next_rv[r as usize];
        }
        if r == u32::MAX {
            r = out.vertices.len() as u32;
            out.vertices.push(TerrainVertex {
                position: self.surface.positions[v],
                normal: self.surface.normals[v],
                materials: set,
                weights: weights(),
            });
            self.next_rv.push(self.first_rv[v]);
            self.first_rv[v] = r;
        }
        r
    }

    /// Hang a skirt below every open border edge (an edge of exactly one quad): its
    /// lower edge sits `skirt_depth` inside the solid and, moved along the surface
    /// ([`skirt_flare`]), one sample of its level out past the chunk face, so it
    /// also covers a gap along the surface to a neighbour at another level.
    fn skirts(&mut self, out: &mut ChunkMesh, level: u8) {
        let depth = skirt_depth(level);
        let flare = (1u32 << level) as f32 * CELL_SIZE;
        let lo = chunk_origin(out.chunk).as_vec3() * CELL_SIZE;
        let hi = lo + crate::cell::CHUNK_SIZE;
        let sn = &self.surface;
        self.edges.clear();
        // Open edges only occur next to the outermost cubes; gather the edges that
        // touch a cube within two samples of the padded domain's edge (their
        // partners share that vertex, so they are gathered too).
        let d = self.field.dim();
        let n = self.field.n();
        let border = |v: u32| {
            let b = sn.vertex_base[v as usize] as usize;
            let (x, y, z) = (b % d, b / d % d, b / (d * d));
            x <= 2 || y <= 2 || z <= 2 || x >= n || y >= n || z >= n
        };
        for q in 0..sn.quad_count() {
            let s = sn.quad(q);
            let r = &out.indices[q * 6..q * 6 + 6];
            let rv = [r[0], r[1], r[2], r[5]];
            for k in 0..4 {
                let (a, b) = (s[k], s[(k + 1) % 4]);
                if !border(a) && !border(b) {
                    continue;
                }
                let key = ((a.min(b) as u64) << 32) | a.max(b) as u64;
                self.edges.push((key, rv[k], rv[(k + 1) % 4]));
            }
        }
        self.edges.sort_unstable_by_key(|e| e.0);
        let mut i = 0;
        while i < self.edges.len() {
            let mut j = i + 1;
            while j < self.edges.len() && self.edges[j].0 == self.edges[i].0 {
                j += 1;
            }
            if j - i == 1 {
                let (_, a, b) = self.edges[i];
                let base = out.vertices.len() as u32;
                for v in [a, b] {
                    let mut t = out.vertices[v as usize];
                    let p = Vec3::from(t.position);
                    let n = Vec3::from(t.normal);
                    let outward = Vec3::select(p.cmplt(lo + flare), Vec3::NEG_ONE, Vec3::ZERO)
                        + Vec3::select(p.cmpgt(hi - flare), Vec3::ONE, Vec3::ZERO);
                    let p = p - n * depth + skirt_flare(outward, n, flare);
                    t.position = p.to_array();
                    out.vertices.push(t);
                }
                let (a2, b2) = (base, base + 1);
                // Both windings: the skirt is seen from either side of the crack.
                out.indices
                    .extend_from_slice(&[a, a2, b2, a, b2, b, a, b2, a2, a, b, b2]);
            }
            i = j;
        }
    }
}

/// How far a skirt's lower edge reaches past the chunk face(s) `outward` points
/// through, for a border vertex with normal `n`: along the surface, not along the
/// face's axis. Where a surface meets the face at a slant (a crater wall running
/// nearly along the seam), the gap between two levels' borders lies along the
/// surface and is wider than their offset across the face by `1 / sin` of that
/// angle; a flare straight across the face covered only the offset, and a sliver of
/// the terrain behind showed through. The skirt moves along the surface's tangent
/// towards the face far enough to cross it by `flare`, at most `2 * flare` in all;
/// a surface nearly parallel to the face keeps the straight flare.
fn skirt_flare(outward: Vec3, n: Vec3, flare: f32) -> Vec3 {
    let o = outward.normalize_or_zero();
    let along = o - n * n.dot(o);
    let across = along.dot(o);
    if across < 0.1 {
        return outward * flare;
    }
    // `along * k` goes `k * across` along `o`; a vertex at an edge or corner of the
    // chunk (two or three faces) goes `flare` across each, as before.
    let reach = flare * outward.length();
    let k = (reach / across).min(2.0 * reach / along.length());
    along * k
}

/// Up to four materials with the largest weights (ties to the lower id), sorted by
/// id; unused slots are 0. A quad with no solid contribution gets rock.
fn top_four(m: &[u8], w: &[u32]) -> [u8; 4] {
    let mut order: [usize; 32] = std::array::from_fn(|i| i);
    let order = &mut order[..m.len()];
    order.sort_unstable_by(|&a, &b| w[b].cmp(&w[a]).then(m[a].cmp(&m[b])));
    let mut set = [0u8; 4];
    let k = order.len().min(4);
    for (s, &o) in set.iter_mut().zip(order.iter()) {
        *s = m[o];
    }
    if k == 0 {
        set[0] = Material::ROCK.0;
        return set;
    }
    set[..k].sort_unstable();
    set
}

/// 8-bit weights of `set` for one vertex, summing to 255, the rounding remainder
/// to the largest. A vertex with nothing in the set uses the quad's totals.
fn vertex_weights(set: &[u8; 4], vm: &[u8; 8], vw: &[u16; 8], qm: &[u8], qw: &[u32]) -> [u8; 4] {
    let mut w = [0u32; 4];
    let used = set.iter().take_while(|&&m| m != 0).count().max(1);
    for (k, &m) in set[..used].iter().enumerate() {
        w[k] = vm
            .iter()
            .zip(vw)
            .filter(|(x, _)| **x == m)
            .map(|(_, &x)| x as u32)
            .sum();
    }
    if w.iter().sum::<u32>() == 0 {
        for (k, &m) in set[..used].iter().enumerate() {
            w[k] = qm
                .iter()
                .zip(qw)
                .filter(|(x, _)| **x == m)
                .map(|(_, &x)| x)
                .sum();
        }
    }
    let total: u32 = w.iter().sum();
    if total == 0 {
        return [255, 0, 0, 0];
    }
    let mut out = [0u8; 4];
    let mut sum = 0u32;
    let mut largest = 0;
    for k in 0..used {
        out[k] = (w[k] * 255 / total) as u8;
        sum += out[k] as u32;
        if w[k] > w[largest] {
            largest = k;
        }
    }
    out[largest] += (255 - sum) as u8;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_255_with_remainder_to_largest() {
        let set = [3, 5, 9, 0];
        let w = vertex_weights(
            &set,
            &[3, 5, 9, 0, 0, 0, 0, 0],
            &[100, 100, 101, 0, 0, 0, 0, 0],
            &[],
            &[],
        );
        assert_eq!(w.iter().map(|&x| x as u32).sum::<u32>(), 255);
        assert_eq!(w, [84, 84, 87, 0]);
        assert_eq!(
            top_four(&[9, 2, 7, 4, 5], &[10, 50, 50, 1, 20]),
            [2, 5, 7, 9]
        );
    }
}
