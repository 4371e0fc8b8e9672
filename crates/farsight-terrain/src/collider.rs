//! A chunk's collision shape: the reduced triangle mesh with 16-bit fixed-point
//! positions and 16-bit corners, over an implicit bounding-volume tree with 8-bit
//! boxes, with ray and sphere queries.
//!
//! Layout (issue 16: a collider holds no more than its chunk's cells):
//! - positions are `u16` per axis on a world-aligned lattice of 1/256 unit (coarser
//!   only for a shape wider than 256 units, such as a coarse picking copy), so a
//!   vertex two neighbouring chunks share lands on the same lattice point in both and
//!   no crack opens at a chunk seam;
//! - triangles are sorted along a Morton curve of their centroids and cut into
//!   `2^k` leaves of [`LEAF`] to `2 * LEAF` consecutive triangles (fewer only in
//!   a shape with fewer triangles); the tree over the leaves
//!   is complete, so children and leaf ranges are arithmetic and only the boxes are
//!   stored: 6 bytes a node, each box rounded outwards onto 255 steps of the shape's
//!   bounds. No triangle is listed twice, no pointer is stored.
//!
//! Rejected: parry3d's `TriMesh` as the built shape. Its BVH build and topology
//! pass cost 5.7-8.7x the chunk's render meshing (BENCHMARKS.md). A uniform grid of
//! triangle lists (the previous layout) listed every triangle in 3.3 cells on
//! average and took 1.6x the cells' memory with f32 positions. A physics engine
//! that wants parry's shape (with internal edge fixing for contact normals) asks
//! for it with `ChunkShape::to_trimesh` (feature `parry`).

use farsight_geom::Aabb;
use glam::Vec3;

/// Fewest triangles in a tree leaf (leaves hold up to twice as many).
const LEAF: usize = 6;
/// Margin around the mesh bounds and each triangle's box, so rays at a box face
/// never skip a triangle through rounding.
const MARGIN: f32 = 1.0 / 64.0;
/// Finest position lattice step: 1/256 unit (a cell is 4 units), so a shape up to
/// 256 units wide fits 16 bits per axis.
const FINEST_STEP_LOG2: i32 = -8;
/// Traversal stack: one more than the deepest tree (leaves are at most 2^32 / 8).
const STACK: usize = 40;

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

    fn heap_bytes(&self) -> usize {
        match self {
            Indices::Short(v) => v.capacity() * 2,
            Indices::Long(v) => v.capacity() * 4,
        }
    }
}

/// A triangle mesh over an implicit bounding-volume tree (see the module notes).
/// Corners are 16-bit indices whenever they fit (a chunk's collider always does:
/// fewer than 65,536 vertices), else 32.
#[derive(Clone, Debug, Default)]
pub struct ChunkShape {
    /// Vertex `i` is `origin + positions[i] * step`.
    positions: Vec<[u16; 3]>,
    origin: Vec3,
    step: f32,
    /// Three corners per triangle, counter-clockwise seen from outside the solid,
    /// in tree order.
    triangles: Indices,
    bounds: Aabb,
    /// Leaves of the tree (a power of two; 0 for a shape that answers nothing).
    leaves: usize,
    /// Node boxes in heap order (children of `n` are `2n + 1` and `2n + 2`; leaf
    /// `j` is node `leaves - 1 + j`): low corner then high corner, each axis in 255
    /// steps of `bounds`.
    nodes: Vec<[u8; 6]>,
    /// One box step per axis.
    node_step: Vec3,
}

/// Where the heap bytes of a [`ChunkShape`] go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShapeBytes {
    /// The quantised vertex positions (6 bytes each).
    pub positions: usize,
    /// The triangle index list.
    pub triangles: usize,
    /// The query tree's nodes (6 bytes each).
    pub tree: usize,
}

impl ShapeBytes {
    /// The three parts together.
    pub fn total(&self) -> usize {
        self.positions + self.triangles + self.tree
    }
}

impl std::ops::AddAssign for ShapeBytes {
    fn add_assign(&mut self, o: Self) {
        self.positions += o.positions;
        self.triangles += o.triangles;
        self.tree += o.tree;
    }
}

/// A ray hit on one shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeHit {
    /// Ray parameter (in units of the ray direction).
    pub t: f32,
    /// The index of the triangle hit (as in [`ChunkShape::triangle`]).
    pub triangle: u32,
    /// Unit normal of the hit triangle, pointing out of the solid.
    pub normal: Vec3,
}

impl ChunkShape {
    /// Index `vertices` and `triangles` (which must reference them). Positions are
    /// rounded onto the lattice (at most 1/512 unit off for a shape up to 256 units
    /// wide); the queries answer for the rounded mesh.
    pub fn new(vertices: Vec<[f32; 3]>, triangles: Vec<[u32; 3]>) -> Self {
        let mut s = Self::default();
        s.quantize(&vertices);
        s.build(&triangles);
        s
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Vertex `i`, as the queries see it.
    #[inline]
    pub fn vertex(&self, i: u32) -> Vec3 {
        let q = self.positions[i as usize];
        self.origin + Vec3::new(q[0] as f32, q[1] as f32, q[2] as f32) * self.step
    }

    /// Every vertex, in order.
    pub fn vertices(&self) -> impl Iterator<Item = Vec3> + '_ {
        (0..self.positions.len() as u32).map(|i| self.vertex(i))
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

    /// The box around the rounded vertices with a 1/64-unit margin; the default
    /// (empty) box for a shape with no triangles.
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// Nodes of the query tree.
    pub fn tree_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.heap_breakdown().total()
    }

    /// Heap bytes held, by part.
    pub fn heap_breakdown(&self) -> ShapeBytes {
        ShapeBytes {
            positions: self.positions.capacity() * 6,
            triangles: self.triangles.heap_bytes(),
            tree: self.nodes.capacity() * 6,
        }
    }

    #[inline]
    fn corners(&self, t: u32) -> [Vec3; 3] {
        let [a, b, c] = self.triangle(t);
        [self.vertex(a), self.vertex(b), self.vertex(c)]
    }

    /// Rounds `vertices` onto the coarsest-needed power-of-two lattice aligned to
    /// the world origin. Non-finite input leaves no vertex the queries can reach.
    fn quantize(&mut self, vertices: &[[f32; 3]]) {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for &v in vertices {
            let v = Vec3::from(v);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if vertices.is_empty() || !lo.is_finite() || !hi.is_finite() {
            self.positions = vec![[0; 3]; vertices.len()];
            self.step = f32::NAN;
            return;
        }
        // One step more than the extent needs: the origin rounds down.
        let mut k = FINEST_STEP_LOG2;
        while (hi - lo).max_element() / 2f32.powi(k) >= 65_534.0 {
            k += 1;
        }
        let step = 2f32.powi(k);
        let origin = (lo / step).floor() * step;
        self.origin = origin;
        self.step = step;
        self.positions = vertices
            .iter()
            .map(|&v| {
                let q = ((Vec3::from(v) - origin) / step).round();
                [q.x as u16, q.y as u16, q.z as u16]
            })
            .collect();
    }

    /// Sorts the triangles along a Morton curve and builds the tree's boxes.
    fn build(&mut self, triangles: &[[u32; 3]]) {
        let n = triangles.len();
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for i in 0..self.positions.len() as u32 {
            let v = self.vertex(i);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if n == 0 || !lo.is_finite() || !hi.is_finite() {
            self.triangles =
                Indices::new(triangles.iter().flatten().copied(), self.positions.len());
            self.bounds = Aabb::default();
            self.leaves = 0;
            return;
        }
        let (lo, hi) = (lo - MARGIN, hi + MARGIN);
        self.bounds = Aabb { min: lo, max: hi };
        let ext = hi - lo;
        // Morton codes of the centroids, 10 bits per axis, sorted with their index.
        let scale = Vec3::splat(1023.0) / ext;
        let mut keys: Vec<u64> = triangles
            .iter()
            .enumerate()
            .map(|(t, c)| {
                let m = (self.vertex(c[0]) + self.vertex(c[1]) + self.vertex(c[2])) / 3.0;
                let q = ((m - lo) * scale).clamp(Vec3::ZERO, Vec3::splat(1023.0));
                let code = spread(q.x as u32) | spread(q.y as u32) << 1 | spread(q.z as u32) << 2;
                (code as u64) << 32 | t as u64
            })
            .collect();
        radix_sort_30(&mut keys);
        self.triangles = Indices::new(
            keys.iter()
                .flat_map(|k| triangles[(*k & 0xFFFF_FFFF) as usize]),
            self.positions.len(),
        );
        drop(keys);
        // The leaves, then every inner node as the union of its children.
        // The most leaves (a power of two) that keep `LEAF` triangles in each.
        let leaves = 1usize << (n / LEAF).max(1).ilog2();
        self.leaves = leaves;
        self.node_step = ext / 255.0;
        let inv = Vec3::splat(255.0) / ext;
        let mut nodes = vec![[0u8; 6]; 2 * leaves - 1];
        for j in 0..leaves {
            let (a, b) = self.leaf_range(j);
            let mut bl = Vec3::splat(f32::INFINITY);
            let mut bh = Vec3::splat(f32::NEG_INFINITY);
            for t in a..b {
                for p in self.corners(t as u32) {
                    bl = bl.min(p);
                    bh = bh.max(p);
                }
            }
            nodes[leaves - 1 + j] = if a == b {
                // An empty leaf (fewer triangles than leaves): a box nothing reaches.
                [255, 255, 255, 0, 0, 0]
            } else {
                let l = ((bl - MARGIN - lo) * inv)
                    .floor()
                    .clamp(Vec3::ZERO, Vec3::splat(255.0));
                let h = ((bh + MARGIN - lo) * inv)
                    .ceil()
                    .clamp(Vec3::ZERO, Vec3::splat(255.0));
                [l.x, l.y, l.z, h.x, h.y, h.z].map(|x| x as u8)
            };
        }
        for i in (0..leaves - 1).rev() {
            let (l, r) = (nodes[2 * i + 1], nodes[2 * i + 2]);
            nodes[i] = [
                l[0].min(r[0]),
                l[1].min(r[1]),
                l[2].min(r[2]),
                l[3].max(r[3]),
                l[4].max(r[4]),
                l[5].max(r[5]),
            ];
        }
        self.nodes = nodes;
    }

    /// Triangles of leaf `j`: an even share of them, in tree order.
    #[inline]
    fn leaf_range(&self, j: usize) -> (usize, usize) {
        let n = self.triangle_count();
        (j * n / self.leaves, (j + 1) * n / self.leaves)
    }

    /// Box of node `i`, in world units.
    #[inline]
    fn node_box(&self, i: usize) -> (Vec3, Vec3) {
        let q = self.nodes[i];
        let min = self.bounds.min;
        let s = self.node_step;
        (
            min + Vec3::new(q[0] as f32, q[1] as f32, q[2] as f32) * s,
            min + Vec3::new(q[3] as f32, q[4] as f32, q[5] as f32) * s,
        )
    }

    /// Entry parameter of the ray into node `i`'s box within `[0, limit]`, if any.
    #[inline]
    fn node_enter(&self, i: usize, o: Vec3, inv: Vec3, limit: f32) -> Option<f32> {
        let (lo, hi) = self.node_box(i);
        let t0 = (lo - o) * inv;
        let t1 = (hi - o) * inv;
        let near = t0.min(t1).max_element().max(0.0);
        let far = t0.max(t1).min_element().min(limit);
        (near <= far).then_some(near)
    }

    /// The nearest hit of `origin + t * dir` with `t` in `[0, max_t]` (both faces
    /// count: a ray from inside the solid hits too). A non-finite origin or
    /// direction, or a NaN `max_t`, hits nothing.
    pub fn cast_ray(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<ShapeHit> {
        if self.leaves == 0 || !origin.is_finite() || !dir.is_finite() || max_t.is_nan() {
            return None;
        }
        // A zero (or subnormal) component gets a large finite inverse: a box face
        // through the origin then gives 0, never 0 * inf.
        let inv = Vec3::from(
            dir.to_array()
                .map(|d| if d.abs() < 1e-30 { 1e30 } else { 1.0 / d }),
        );
        let mut limit = max_t;
        let mut best: Option<u32> = None;
        let mut stack = [(0usize, 0f32); STACK];
        let mut sp = 0;
        if let Some(t) = self.node_enter(0, origin, inv, limit) {
            stack[0] = (0, t);
            sp = 1;
        }
        let first_leaf = self.leaves - 1;
        while sp > 0 {
            sp -= 1;
            let (n, enter) = stack[sp];
            if enter > limit {
                continue;
            }
            if n >= first_leaf {
                let (a, b) = self.leaf_range(n - first_leaf);
                for t in a as u32..b as u32 {
                    if let Some(h) = ray_triangle(origin, dir, self.corners(t), limit) {
                        if best.is_none() || h < limit {
                            limit = h;
                            best = Some(t);
                        }
                    }
                }
                continue;
            }
            let (l, r) = (2 * n + 1, 2 * n + 2);
            match (
                self.node_enter(l, origin, inv, limit),
                self.node_enter(r, origin, inv, limit),
            ) {
                (Some(tl), Some(tr)) => {
                    // The nearer child on top, visited first.
                    let (near, far) = if tl <= tr {
                        ((l, tl), (r, tr))
                    } else {
                        ((r, tr), (l, tl))
                    };
                    stack[sp] = far;
                    stack[sp + 1] = near;
                    sp += 2;
                }
                (Some(t), None) => {
                    stack[sp] = (l, t);
                    sp += 1;
                }
                (None, Some(t)) => {
                    stack[sp] = (r, t);
                    sp += 1;
                }
                (None, None) => {}
            }
        }
        best.map(|tri| ShapeHit {
            t: limit,
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
        if self.leaves == 0 || self.bounds.distance_squared(center) > radius * radius {
            return None;
        }
        let mut best: Option<(Vec3, f32)> = None;
        let mut limit = radius * radius;
        let mut stack = [0usize; STACK];
        stack[0] = 0;
        let mut sp = 1;
        let first_leaf = self.leaves - 1;
        while sp > 0 {
            sp -= 1;
            let n = stack[sp];
            let (lo, hi) = self.node_box(n);
            // Squared distance from the centre to the box (0 inside it).
            let d = (lo - center).max(center - hi).max(Vec3::ZERO);
            if d.length_squared() > limit {
                continue;
            }
            if n >= first_leaf {
                let (a, b) = self.leaf_range(n - first_leaf);
                for t in a as u32..b as u32 {
                    let p = closest_on_triangle(center, self.corners(t));
                    let d2 = p.distance_squared(center);
                    if d2 <= limit {
                        limit = d2;
                        best = Some((p, d2));
                    }
                }
                continue;
            }
            stack[sp] = 2 * n + 2;
            stack[sp + 1] = 2 * n + 1;
            sp += 2;
        }
        best.map(|(p, d2)| (p, d2.sqrt()))
    }

    /// Linear scans over every triangle: the references the tree is tested against.
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

    /// parry3d's `TriMesh` of this shape (the rounded positions the queries use)
    /// with duplicate merging and internal-edge fixing, for a rigid-body solver.
    /// Costs several render meshings; built only when asked, never by the cache.
    /// `None` for a mesh parry refuses. Needs the `parry` feature.
    #[cfg(feature = "parry")]
    pub fn to_trimesh(&self) -> Option<parry3d::shape::TriMesh> {
        use parry3d::shape::{TriMesh, TriMeshFlags};
        let v = self
            .vertices()
            .map(|p| parry3d::math::Vector::new(p.x, p.y, p.z))
            .collect();
        let flags = TriMeshFlags::MERGE_DUPLICATE_VERTICES | TriMeshFlags::FIX_INTERNAL_EDGES;
        TriMesh::with_flags(v, self.triangles().collect(), flags).ok()
    }
}

/// The low 10 bits of `x` spread to every third bit (a Morton code axis).
#[inline]
fn spread(x: u32) -> u32 {
    let mut x = x & 0x3FF;
    x = (x | x << 16) & 0x0300_00FF;
    x = (x | x << 8) & 0x0300_F00F;
    x = (x | x << 4) & 0x030C_30C3;
    (x | x << 2) & 0x0924_9249
}

/// Sorts keys by their high 32 bits, of which only the low 30 are used: three
/// stable counting passes of 10 bits, so equal codes keep their triangle order.
fn radix_sort_30(keys: &mut Vec<u64>) {
    let mut tmp = vec![0u64; keys.len()];
    let mut count = [0u32; 1024];
    for pass in 0..3 {
        let shift = 32 + 10 * pass;
        count.fill(0);
        for k in keys.iter() {
            count[((k >> shift) & 0x3FF) as usize] += 1;
        }
        let mut sum = 0;
        for c in count.iter_mut() {
            let n = *c;
            *c = sum;
            sum += n;
        }
        for &k in keys.iter() {
            let c = &mut count[((k >> shift) & 0x3FF) as usize];
            tmp[*c as usize] = k;
            *c += 1;
        }
        std::mem::swap(keys, &mut tmp);
    }
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
