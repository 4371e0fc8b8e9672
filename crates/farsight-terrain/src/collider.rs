//! A chunk's collision shape: the reduced triangle mesh plus a uniform grid of
//! triangle lists, built in two counting passes (no sort, no tree, no hash map),
//! with ray and sphere queries. A grid cell is about two voxel cells wide, so a
//! query tests a handful of triangles per cell it crosses.
//!
//! Rejected: parry3d's `TriMesh` as the built shape. Its BVH build and topology
//! pass cost 5.7-8.7x the chunk's render meshing (BENCHMARKS.md); this grid costs a
//! small fraction of it. A physics engine that wants parry's shape (with internal
//! edge fixing for contact normals) asks for it with `ChunkShape::to_trimesh`
//! (feature `parry`).

use farsight_geom::Aabb;
use glam::Vec3;

/// Target grid cell edge in world units (two voxel cells).
const GRID_CELL: f32 = 8.0;
/// Most grid cells per axis (a chunk spans 128 units plus its border vertices).
const GRID_MAX: usize = 20;
const _: () = assert!(GRID_MAX <= u8::MAX as usize, "cell ranges are stored as u8");
/// Margin around the mesh bounds and each triangle's box when binning, so rays at a
/// cell boundary never skip a triangle through rounding.
const MARGIN: f32 = 1.0 / 64.0;

/// Indices stored in 16 bits when every value fits (a chunk's collider always does:
/// fewer than 65,536 vertices and triangles), else in 32.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Indices {
    Short(Vec<u16>),
    Long(Vec<u32>),
}

impl Default for Indices {
    fn default() -> Self {
        Indices::Short(Vec::new())
    }
}

impl Indices {
    /// `values`, each below `bound`.
    fn new(values: impl Iterator<Item = u32>, bound: usize) -> Self {
        if bound <= 1 << 16 {
            Indices::Short(values.map(|v| v as u16).collect())
        } else {
            Indices::Long(values.collect())
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Indices::Short(v) => v.len(),
            Indices::Long(v) => v.len(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> u32 {
        match self {
            Indices::Short(v) => v[i] as u32,
            Indices::Long(v) => v[i],
        }
    }

    #[inline]
    fn for_each(&self, range: std::ops::Range<usize>, mut f: impl FnMut(u32)) {
        match self {
            Indices::Short(v) => v[range].iter().for_each(|&x| f(x as u32)),
            Indices::Long(v) => v[range].iter().for_each(|&x| f(x)),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Indices::Short(v) => v.capacity() * 2,
            Indices::Long(v) => v.capacity() * 4,
        }
    }
}

/// A triangle mesh with a uniform-grid index over it. Triangle corners and the
/// grid's triangle lists are 16-bit indices whenever they fit (issue 16: a collider
/// holds no more than its chunk's cells).
#[derive(Clone, Debug, Default)]
pub struct ChunkShape {
    pub vertices: Vec<[f32; 3]>,
    /// Three corners per triangle, counter-clockwise seen from outside the solid.
    triangles: Indices,
    bounds: Aabb,
    dims: [usize; 3],
    /// Grid cell size per axis and its inverse.
    cell: Vec3,
    inv: Vec3,
    /// `start[c]..start[c + 1]` indexes `items` for grid cell `c` (x fastest).
    start: Vec<u32>,
    items: Indices,
}

/// A ray hit on one shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeHit {
    /// Ray parameter (in units of the ray direction).
    pub t: f32,
    pub triangle: u32,
    /// Unit normal of the hit triangle, pointing out of the solid.
    pub normal: Vec3,
}

impl ChunkShape {
    /// Index `vertices` and `triangles` (which must reference them).
    pub fn new(mut vertices: Vec<[f32; 3]>, triangles: Vec<[u32; 3]>) -> Self {
        vertices.shrink_to_fit();
        let corners = Indices::new(triangles.iter().flatten().copied(), vertices.len());
        let mut s = Self {
            vertices,
            triangles: corners,
            ..Default::default()
        };
        s.build();
        s
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangles.len() / 3
    }

    /// The corners (vertex indices) of triangle `t`.
    #[inline]
    pub fn triangle(&self, t: u32) -> [u32; 3] {
        let i = 3 * t as usize;
        [
            self.triangles.get(i),
            self.triangles.get(i + 1),
            self.triangles.get(i + 2),
        ]
    }

    /// Every triangle's corners, in order.
    pub fn triangles(&self) -> impl Iterator<Item = [u32; 3]> + '_ {
        (0..self.triangle_count() as u32).map(|t| self.triangle(t))
    }

    pub fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// Grid cells per axis.
    pub fn grid_dims(&self) -> [usize; 3] {
        self.dims
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.vertices.capacity() * 12
            + self.triangles.heap_bytes()
            + self.start.capacity() * 4
            + self.items.heap_bytes()
    }

    #[inline]
    fn corners(&self, t: u32) -> [Vec3; 3] {
        let [a, b, c] = self.triangle(t);
        let v = &self.vertices;
        [
            Vec3::from(v[a as usize]),
            Vec3::from(v[b as usize]),
            Vec3::from(v[c as usize]),
        ]
    }

    fn build(&mut self) {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for &v in &self.vertices {
            let v = Vec3::from(v);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let tris = self.triangle_count();
        if tris == 0 || !lo.is_finite() || !hi.is_finite() {
            self.bounds = Aabb::default();
            self.dims = [0; 3];
            self.start = vec![0];
            return;
        }
        let (lo, hi) = (lo - MARGIN, hi + MARGIN);
        self.bounds = Aabb { min: lo, max: hi };
        let ext = hi - lo;
        let mut dims = [1usize; 3];
        for (a, d) in dims.iter_mut().enumerate() {
            *d = ((ext[a] / GRID_CELL).ceil() as usize).clamp(1, GRID_MAX);
        }
        self.dims = dims;
        let dv = Vec3::new(dims[0] as f32, dims[1] as f32, dims[2] as f32);
        self.cell = ext / dv;
        self.inv = dv / ext;
        let cells = dims[0] * dims[1] * dims[2];
        // Pass 1: count each triangle into every cell its (padded) box touches.
        let mut start = std::mem::take(&mut self.start);
        start.clear();
        start.resize(cells + 1, 0);
        let ranges: Vec<[u8; 6]> = (0..tris as u32).map(|t| self.cell_range(t)).collect();
        for r in &ranges {
            let (a, b) = unpack(r);
            for z in a[2]..=b[2] {
                for y in a[1]..=b[1] {
                    let row = dims[0] * (y + dims[1] * z);
                    for x in a[0]..=b[0] {
                        start[row + x] += 1;
                    }
                }
            }
        }
        // Inclusive prefix sums: start[c] is the end of cell c's run.
        let mut sum = 0u32;
        for s in start.iter_mut() {
            sum += *s;
            *s = sum;
        }
        // Pass 2: place each triangle by decrementing; start[c] ends as its start.
        let mut items = vec![0u32; sum as usize];
        for (t, r) in ranges.iter().enumerate().rev() {
            let (a, b) = unpack(r);
            for z in a[2]..=b[2] {
                for y in a[1]..=b[1] {
                    let row = dims[0] * (y + dims[1] * z);
                    for x in a[0]..=b[0] {
                        let s = &mut start[row + x];
                        *s -= 1;
                        items[*s as usize] = t as u32;
                    }
                }
            }
        }
        start.shrink_to_fit();
        self.start = start;
        self.items = Indices::new(items.into_iter(), tris);
    }

    /// Grid cell of point `p`, clamped into the grid.
    #[inline]
    fn cell_of(&self, p: Vec3) -> [usize; 3] {
        // Clamped at 0 first, so truncation is the floor (and no libm call).
        let c = ((p - self.bounds.min) * self.inv).max(Vec3::ZERO);
        [
            (c.x as usize).min(self.dims[0] - 1),
            (c.y as usize).min(self.dims[1] - 1),
            (c.z as usize).min(self.dims[2] - 1),
        ]
    }

    /// The grid cells triangle `t`'s padded box touches: low and high corner.
    #[inline]
    fn cell_range(&self, t: u32) -> [u8; 6] {
        let [a, b, c] = self.corners(t);
        let lo = self.cell_of(a.min(b).min(c) - MARGIN);
        let hi = self.cell_of(a.max(b).max(c) + MARGIN);
        [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]].map(|x| x as u8)
    }

    /// Calls `f` with each triangle listed in grid cell `(x, y, z)`.
    #[inline]
    fn cell_items(&self, x: usize, y: usize, z: usize, f: impl FnMut(u32)) {
        let c = x + self.dims[0] * (y + self.dims[1] * z);
        self.items
            .for_each(self.start[c] as usize..self.start[c + 1] as usize, f);
    }

    /// The nearest hit of `origin + t * dir` with `t` in `[0, max_t]` (both faces
    /// count: a ray from inside the solid hits too). A non-finite origin or
    /// direction, or a NaN `max_t`, hits nothing.
    pub fn cast_ray(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<ShapeHit> {
        if self.triangle_count() == 0 || !origin.is_finite() || !dir.is_finite() || max_t.is_nan() {
            return None;
        }
        let inv = dir.recip();
        let t0 = (self.bounds.min - origin) * inv;
        let t1 = (self.bounds.max - origin) * inv;
        // NaN (0 * inf) on an axis the ray runs along a slab face: treat as open.
        let near = t0.min(t1);
        let far = t0.max(t1);
        let mut enter = 0.0f32;
        let mut exit = max_t;
        for a in 0..3 {
            if dir[a] == 0.0 {
                if origin[a] < self.bounds.min[a] || origin[a] > self.bounds.max[a] {
                    return None;
                }
                continue;
            }
            enter = enter.max(near[a]);
            exit = exit.min(far[a]);
        }
        if enter > exit {
            return None;
        }
        // 3D DDA (Amanatides-Woo) from the entry point.
        let mut cell = self.cell_of(origin + dir * enter);
        let mut step = [0isize; 3];
        let mut next = Vec3::splat(f32::INFINITY);
        let mut delta = Vec3::splat(f32::INFINITY);
        for a in 0..3 {
            if dir[a] > 0.0 {
                step[a] = 1;
                let edge = self.bounds.min[a] + (cell[a] + 1) as f32 * self.cell[a];
                next[a] = (edge - origin[a]) * inv[a];
                delta[a] = self.cell[a] * inv[a];
            } else if dir[a] < 0.0 {
                step[a] = -1;
                let edge = self.bounds.min[a] + cell[a] as f32 * self.cell[a];
                next[a] = (edge - origin[a]) * inv[a];
                delta[a] = -self.cell[a] * inv[a];
            }
        }
        let mut best: Option<(f32, u32)> = None;
        // A ray visits at most one cell per step along each axis.
        for _ in 0..self.dims.iter().sum::<usize>() {
            let limit = best.map_or(max_t, |b| b.0);
            self.cell_items(cell[0], cell[1], cell[2], |t| {
                if let Some(h) = ray_triangle(origin, dir, self.corners(t), limit) {
                    if best.is_none_or(|b| h < b.0) {
                        best = Some((h, t));
                    }
                }
            });
            let a = if next.x <= next.y && next.x <= next.z {
                0
            } else if next.y <= next.z {
                1
            } else {
                2
            };
            let cell_exit = next[a];
            if best.is_some_and(|b| b.0 <= cell_exit) || cell_exit > exit {
                break;
            }
            let c = cell[a] as isize + step[a];
            if c < 0 || c >= self.dims[a] as isize {
                break;
            }
            cell[a] = c as usize;
            next[a] += delta[a];
        }
        best.map(|(t, tri)| ShapeHit {
            t,
            triangle: tri,
            normal: self.normal(tri),
        })
    }

    /// Unit normal of triangle `t` by its winding.
    pub fn normal(&self, t: u32) -> Vec3 {
        let [a, b, c] = self.corners(t);
        (b - a).cross(c - a).normalize_or_zero()
    }

    /// The closest point of the mesh to `center` within `radius`, with its distance.
    pub fn closest_within(&self, center: Vec3, radius: f32) -> Option<(Vec3, f32)> {
        if self.triangle_count() == 0 || self.bounds.distance_squared(center) > radius * radius {
            return None;
        }
        let a = self.cell_of(center - radius);
        let b = self.cell_of(center + radius);
        let mut best: Option<(Vec3, f32)> = None;
        let mut limit = radius * radius;
        for z in a[2]..=b[2] {
            for y in a[1]..=b[1] {
                for x in a[0]..=b[0] {
                    self.cell_items(x, y, z, |t| {
                        let p = closest_on_triangle(center, self.corners(t));
                        let d2 = p.distance_squared(center);
                        if d2 <= limit {
                            limit = d2;
                            best = Some((p, d2));
                        }
                    });
                }
            }
        }
        best.map(|(p, d2)| (p, d2.sqrt()))
    }

    /// Linear scans over every triangle: the references the grid is tested against.
    pub fn cast_ray_linear(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<ShapeHit> {
        let mut best: Option<(f32, u32)> = None;
        for t in 0..self.triangle_count() as u32 {
            let limit = best.map_or(max_t, |b| b.0);
            if let Some(h) = ray_triangle(origin, dir, self.corners(t), limit) {
                if best.is_none_or(|b| h < b.0) {
                    best = Some((h, t));
                }
            }
        }
        best.map(|(t, tri)| ShapeHit {
            t,
            triangle: tri,
            normal: self.normal(tri),
        })
    }

    /// See [`ChunkShape::cast_ray_linear`].
    pub fn closest_within_linear(&self, center: Vec3, radius: f32) -> Option<(Vec3, f32)> {
        let mut best: Option<(Vec3, f32)> = None;
        for t in 0..self.triangle_count() as u32 {
            let p = closest_on_triangle(center, self.corners(t));
            let d2 = p.distance_squared(center);
            if d2 <= radius * radius && best.is_none_or(|b| d2 < b.1) {
                best = Some((p, d2));
            }
        }
        best.map(|(p, d2)| (p, d2.sqrt()))
    }

    /// parry3d's `TriMesh` of this shape with duplicate merging and internal-edge
    /// fixing, for a rigid-body solver. Costs several render meshings; built only
    /// when asked, never by the cache. `None` for a mesh parry refuses. Needs the
    /// `parry` feature.
    #[cfg(feature = "parry")]
    pub fn to_trimesh(&self) -> Option<parry3d::shape::TriMesh> {
        use parry3d::shape::{TriMesh, TriMeshFlags};
        let v = self
            .vertices
            .iter()
            .map(|p| parry3d::math::Vector::new(p[0], p[1], p[2]))
            .collect();
        let flags = TriMeshFlags::MERGE_DUPLICATE_VERTICES | TriMeshFlags::FIX_INTERNAL_EDGES;
        TriMesh::with_flags(v, self.triangles().collect(), flags).ok()
    }
}

#[inline]
fn unpack(r: &[u8; 6]) -> ([usize; 3], [usize; 3]) {
    (
        [r[0] as usize, r[1] as usize, r[2] as usize],
        [r[3] as usize, r[4] as usize, r[5] as usize],
    )
}

/// Möller–Trumbore, both faces: the ray parameter of the hit in `[0, max_t]`.
#[inline]
pub(crate) fn ray_triangle(o: Vec3, d: Vec3, [a, b, c]: [Vec3; 3], max_t: f32) -> Option<f32> {
    let e1 = b - a;
    let e2 = c - a;
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - a;
    let u = s.dot(p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) * inv;
    (t >= 0.0 && t <= max_t).then_some(t)
}

/// Closest point of triangle `abc` to `p` (Ericson, Real-Time Collision Detection
/// 5.1.5: Voronoi regions of the vertices, then edges, then the face).
pub(crate) fn closest_on_triangle(p: Vec3, [a, b, c]: [Vec3; 3]) -> Vec3 {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(ap);
    let d2 = ac.dot(ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let d3 = ab.dot(bp);
    let d4 = ac.dot(bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let d5 = ab.dot(cp);
    let d6 = ac.dot(cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}
