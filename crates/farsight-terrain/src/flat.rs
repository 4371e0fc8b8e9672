//! Flat-patch reduction for collision meshes: a rectangle of coplanar, regular
//! Surface Nets quads keeps every perimeter vertex and becomes a fan from a new
//! centre vertex, so neighbours that share the perimeter see no T-junction. Then
//! vertices at bit-identical positions are merged. Flat arrays only: flat quads are
//! grouped by sorting one key per quad, every scratch buffer is reused.

use crate::surface_nets::SurfaceNets;

/// A collision triangle mesh with shared vertices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollisionMesh {
    /// Vertex positions, world space; each position appears once.
    pub vertices: Vec<[f32; 3]>,
    /// Triangles as three indices into `vertices`.
    pub indices: Vec<[u32; 3]>,
}

impl CollisionMesh {
    /// True when the mesh has no triangle.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// One reduced rectangle: its centre and its perimeter in `FlatScratch::ring`.
#[derive(Clone, Copy, Debug)]
struct Fan {
    center: [f32; 3],
    ring: (u32, u32),
    facing_pos: bool,
}

/// Reusable buffers of [`reduce_flat`].
#[derive(Clone, Debug, Default)]
pub(crate) struct FlatScratch {
    uses: Vec<u8>,
    /// (group key, tangent u, tangent v, quad) of every flat regular quad.
    regular: Vec<(u64, u16, u16, u32)>,
    grid: Vec<u32>,
    used: Vec<bool>,
    reduced: Vec<bool>,
    keep: Vec<u32>,
    alias: Vec<u32>,
    fans: Vec<Fan>,
    ring: Vec<u32>,
}

/// Offsets this close to 1 may round onto the next cube's vertex.
const ALIAS_OFFSET: f32 = 1.0 - 1.0 / 1024.0;

/// Reduce `sn` (extracted from a field of padded size `dim`) into `out`.
pub(crate) fn reduce_flat(
    sn: &SurfaceNets,
    dim: usize,
    s: &mut FlatScratch,
    out: &mut CollisionMesh,
) {
    out.vertices.clear();
    out.indices.clear();
    let nq = sn.quad_count();
    let nv = sn.positions.len();
    s.uses.clear();
    s.uses.resize(nv, 0);
    for q in 0..nq {
        for v in sn.quad(q) {
            s.uses[v as usize] = s.uses[v as usize].saturating_add(1);
        }
    }
    let coords = |v: u32| {
        let b = sn.vertex_base[v as usize] as usize;
        [b % dim, b / dim % dim, b / (dim * dim)]
    };
    // Flat, regular quads keyed by (axis, facing, plane bits); sorting the keys
    // makes each group one run, in an order independent of any hash.
    s.regular.clear();
    for q in 0..nq {
        let a = sn.quad_axis[q] as usize;
        let (t1, t2) = ((a + 1) % 3, (a + 2) % 3);
        let vs = sn.quad(q);
        let plane = sn.positions[vs[0] as usize][a].to_bits();
        let regular = vs.iter().all(|&v| {
            let o = sn.vertex_offset[v as usize];
            sn.positions[v as usize][a].to_bits() == plane && o[t1] == 0.5 && o[t2] == 0.5
        });
        if !regular {
            continue;
        }
        // The cube at vs[2] is the quad's emitting cube c; in winding
        // [c-t1-t2, c-t2, c, c-t1] the quad faces +axis, reversed it faces -axis.
        let c = coords(vs[2]);
        let facing_pos = coords(vs[1])[t1] == c[t1];
        let key = ((a as u64) << 33) | ((facing_pos as u64) << 32) | plane as u64;
        s.regular.push((key, c[t1] as u16, c[t2] as u16, q as u32));
    }
    s.regular.sort_unstable_by_key(|e| e.0);
    s.reduced.clear();
    s.reduced.resize(nq, false);
    s.fans.clear();
    s.ring.clear();
    let mut i = 0;
    while i < s.regular.len() {
        let key = s.regular[i].0;
        let mut j = i + 1;
        while j < s.regular.len() && s.regular[j].0 == key {
            j += 1;
        }
        reduce_group(sn, dim, s, i..j, key);
        i = j;
    }
    merge_aliases(sn, dim, &mut s.alias);
    s.keep.clear();
    s.keep.resize(nv, u32::MAX);
    let (keep, alias) = (&mut s.keep, &s.alias);
    let mut map = |v: u32, out: &mut CollisionMesh| -> u32 {
        let v = alias[v as usize] as usize;
        if keep[v] == u32::MAX {
            keep[v] = out.vertices.len() as u32;
            out.vertices.push(sn.positions[v]);
        }
        keep[v]
    };
    let push = |t: [u32; 3], out: &mut CollisionMesh| {
        if t[0] != t[1] && t[1] != t[2] && t[0] != t[2] {
            out.indices.push(t);
        }
    };
    for q in 0..nq {
        if s.reduced[q] {
            continue;
        }
        let [a, b, c, d] = sn.quad(q).map(|v| map(v, out));
        push([a, b, c], out);
        push([a, c, d], out);
    }
    for f in &s.fans {
        let ci = out.vertices.len() as u32;
        out.vertices.push(f.center);
        let ring = &mut s.ring[f.ring.0 as usize..f.ring.1 as usize];
        for v in ring.iter_mut() {
            *v = map(*v, out);
        }
        for k in 0..ring.len() {
            let (p, n) = (ring[k], ring[(k + 1) % ring.len()]);
            push(if f.facing_pos { [ci, p, n] } else { [ci, n, p] }, out);
        }
    }
}

/// `alias[v]`: the lowest vertex at `v`'s bit-identical position. Only a cube's
/// forward neighbours can coincide with it, and only when its offset rounds to 1 on
/// the axes between them; vertices come in ascending cube order, so the neighbour
/// is found by binary search.
fn merge_aliases(sn: &SurfaceNets, dim: usize, alias: &mut Vec<u32>) {
    let nv = sn.positions.len();
    alias.clear();
    alias.extend(0..nv as u32);
    let step = [1, dim, dim * dim];
    for v in 0..nv {
        let o = sn.vertex_offset[v];
        let mut m = 0usize;
        for (a, &x) in o.iter().enumerate() {
            m |= ((x >= ALIAS_OFFSET) as usize) << a;
        }
        let mut sub = m;
        while sub != 0 {
            let off: usize = (0..3).filter(|a| sub >> a & 1 != 0).map(|a| step[a]).sum();
            let target = sn.vertex_base[v] + off as u32;
            if let Ok(u) = sn.vertex_base.binary_search(&target) {
                if sn.positions[u].map(f32::to_bits) == sn.positions[v].map(f32::to_bits) {
                    alias[u] = alias[v];
                }
            }
            sub = (sub - 1) & m;
        }
    }
}

/// Cover one plane's quads (`s.regular[range]`) with maximal rectangles, greedily
/// row by row; each rectangle whose interior vertices only it uses becomes a fan.
fn reduce_group(
    sn: &SurfaceNets,
    dim: usize,
    s: &mut FlatScratch,
    range: std::ops::Range<usize>,
    key: u64,
) {
    let a = (key >> 33) as usize;
    let facing_pos = (key >> 32) & 1 != 0;
    let group = &s.regular[range];
    let (mut umin, mut vmin, mut umax, mut vmax) = (usize::MAX, usize::MAX, 0, 0);
    for &(_, u, v, _) in group {
        let (u, v) = (u as usize, v as usize);
        umin = umin.min(u);
        vmin = vmin.min(v);
        umax = umax.max(u);
        vmax = vmax.max(v);
    }
    let p = PlaneGrid {
        sn,
        dim,
        t1: (a + 1) % 3,
        t2: (a + 2) % 3,
        umin,
        vmin,
        w: umax - umin + 1,
        h: vmax - vmin + 1,
    };
    let (w, h) = (p.w, p.h);
    if group.len() < 6 {
        return; // the smallest reducible rectangle is 2 x 3
    }
    let grid = &mut s.grid;
    grid.clear();
    grid.resize(w * h, u32::MAX);
    for &(_, u, v, q) in group {
        grid[(u as usize - umin) + w * (v as usize - vmin)] = q;
    }
    let used = &mut s.used;
    used.clear();
    used.resize(w * h, false);
    for v0 in 0..h {
        for u0 in 0..w {
            let i0 = u0 + w * v0;
            if used[i0] || grid[i0] == u32::MAX {
                continue;
            }
            let (rw, rh) = p.rect_at(grid, used, u0, v0);
            if rw * rh <= rw + rh {
                continue;
            }
            // Interior vertices must be used by this rectangle's quads only.
            let (gu, gv) = (u0 + umin, v0 + vmin);
            let ok = (1..rh).all(|v| {
                (1..rw).all(|u| s.uses[p.vertex_at(grid, gu + u, gv + v, 1, 1) as usize] == 4)
            });
            if !ok {
                continue;
            }
            for v in 0..rh {
                for u in 0..rw {
                    used[u0 + u + w * (v0 + v)] = true;
                    s.reduced[grid[u0 + u + w * (v0 + v)] as usize] = true;
                }
            }
            let ring_start = s.ring.len();
            p.push_ring(grid, (gu, gv), (rw, rh), &mut s.ring);
            let p0 = sn.positions[s.ring[ring_start] as usize];
            let p1 = sn.positions[s.ring[ring_start + rw + rh] as usize];
            s.fans.push(Fan {
                center: std::array::from_fn(|k| (p0[k] + p1[k]) * 0.5),
                ring: (ring_start as u32, s.ring.len() as u32),
                facing_pos,
            });
        }
    }
}

/// One plane's quads on their tangent grid: axes `t1` and `t2` of the plane,
/// `w` x `h` cells from (`umin`, `vmin`); a cell holds its quad or `u32::MAX`.
struct PlaneGrid<'a> {
    sn: &'a SurfaceNets,
    /// Cubes along each axis of the extraction.
    dim: usize,
    t1: usize,
    t2: usize,
    umin: usize,
    vmin: usize,
    w: usize,
    h: usize,
}

impl PlaneGrid<'_> {
    /// The cube coordinates of vertex `v`.
    #[inline]
    fn coords(&self, v: u32) -> [usize; 3] {
        let dim = self.dim;
        let b = self.sn.vertex_base[v as usize] as usize;
        [b % dim, b / dim % dim, b / (dim * dim)]
    }

    /// Vertex of the cube at tangent coords (u - du, v - dv): a corner of quad (u, v).
    #[inline]
    fn vertex_at(&self, grid: &[u32], u: usize, v: usize, du: usize, dv: usize) -> u32 {
        let q = grid[(u - self.umin) + self.w * (v - self.vmin)] as usize;
        *self
            .sn
            .quad(q)
            .iter()
            .find(|&&x| {
                let c = self.coords(x);
                c[self.t1] + du == u && c[self.t2] + dv == v
            })
            .expect("a quad's corners cover its four cubes")
    }

    /// The widest free row from grid cell (u0, v0), then as many rows of that
    /// width as are free: the rectangle's width and height in cells.
    #[inline]
    fn rect_at(&self, grid: &[u32], used: &[bool], u0: usize, v0: usize) -> (usize, usize) {
        let (w, h) = (self.w, self.h);
        let free = |u: usize, v: usize| grid[u + w * v] != u32::MAX && !used[u + w * v];
        let mut rw = 1;
        while u0 + rw < w && free(u0 + rw, v0) {
            rw += 1;
        }
        let mut rh = 1;
        'grow: while v0 + rh < h {
            for u in u0..u0 + rw {
                if !free(u, v0 + rh) {
                    break 'grow;
                }
            }
            rh += 1;
        }
        (rw, rh)
    }

    /// The perimeter of the `rw` x `rh` rectangle at tangent coords (gu, gv),
    /// counter-clockwise in (t1, t2): cube coords from (gu-1, gv-1) to
    /// (gu+rw-1, gv+rh-1).
    fn push_ring(
        &self,
        grid: &[u32],
        (gu, gv): (usize, usize),
        (rw, rh): (usize, usize),
        ring: &mut Vec<u32>,
    ) {
        let corner = |cu: usize, cv: usize| -> u32 {
            // Cube (cu, cv) is corner (du, dv) of quad (cu+du, cv+dv) inside the rect.
            let qu = (cu + 1).min(gu + rw - 1);
            let qv = (cv + 1).min(gv + rh - 1);
            self.vertex_at(grid, qu, qv, qu - cu, qv - cv)
        };
        for u in 0..rw {
            ring.push(corner(gu - 1 + u, gv - 1));
        }
        for v in 0..rh {
            ring.push(corner(gu + rw - 1, gv - 1 + v));
        }
        for u in (1..=rw).rev() {
            ring.push(corner(gu - 1 + u, gv + rh - 1));
        }
        for v in (1..=rh).rev() {
            ring.push(corner(gu - 1, gv - 1 + v));
        }
    }
}
