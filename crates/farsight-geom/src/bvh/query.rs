//! Queries: sphere (the streaming source), box and frustum, each an iterative walk
//! with a fixed-size stack, and the linear scans they must equal.

use glam::Vec3A;

use super::build::{split_point, BoxGroup, BVH_LEAF_SIZE};
use crate::{sphere_intersects_aabb, Aabb, Bvh, Frustum, Sphere};

/// Entries of the traversal stack. A median split halves the count at every level,
/// so a tree over fewer than 2^32 regions is at most 33 levels deep, and a
/// depth-first walk that pushes both children holds at most one entry per level.
pub const BVH_STACK_SIZE: usize = 64;

impl Bvh {
    /// Calls `hit(region)` for every region whose box passes `prim_test`, visiting
    /// only subtrees whose node box passes `node_test`. `node_test` must accept every
    /// box that encloses a box `prim_test` accepts.
    #[inline]
    pub fn traverse(
        &self,
        node_test: impl Fn(&Aabb) -> bool,
        prim_test: impl Fn(&Aabb) -> bool,
        mut hit: impl FnMut(u32),
    ) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; BVH_STACK_SIZE];
        let mut top = 1usize;
        while top > 0 {
            top -= 1;
            let node = self.nodes[stack[top] as usize];
            if !node_test(&node.aabb()) {
                continue;
            }
            if node.is_leaf() {
                let range = node.first() as usize..(node.first() + node.count()) as usize;
                for slot in range {
                    if prim_test(&self.slot_box(slot)) {
                        hit(self.leaf_ids[slot]);
                    }
                }
            } else {
                // Right child below the left on the stack, so the left is visited next.
                stack[top] = node.first() + 1;
                stack[top + 1] = node.first();
                top += 2;
            }
        }
    }

    /// Regions whose box the sphere touches (the clamp-to-box distance test of
    /// docs/design/region-streaming-and-cluster-lod.md#the-region-bvh: `|p - clamp(p, min, max)|^2 <= r^2`). Appends to `out`, in leaf
    /// order (not index order).
    ///
    /// A node whose farthest corner lies within the sphere reports its whole subtree
    /// with one copy of its run of leaf slots, untested: every box inside it is inside
    /// the sphere too. A leaf's regions are tested without a branch per region.
    pub fn query_sphere(&self, sphere: &Sphere, out: &mut Vec<u32>) {
        self.walk_sphere(sphere, &mut AppendTo(out));
    }

    /// Like [`query_sphere`](Self::query_sphere), calling `hit` per region.
    #[inline]
    pub fn for_each_in_sphere(&self, sphere: &Sphere, hit: impl FnMut(u32)) {
        self.walk_sphere(sphere, &mut CallEach(hit));
    }

    #[inline(always)]
    fn walk_sphere(&self, sphere: &Sphere, sink: &mut impl SphereSink) {
        if self.nodes.is_empty() {
            return;
        }
        let p = Vec3A::from(sphere.center);
        let r2 = sphere.radius * sphere.radius;
        let root = &self.nodes[0];
        if !touches(p, r2, &[root.min(), root.max()]) {
            return;
        }
        // Every entry on the stack is a node already known to touch the sphere, with
        // its run of leaf slots `(node, first slot, end slot)`: the run is implied by
        // the median split, so nodes need not store it.
        let mut stack = [(0u32, 0u32, 0u32); BVH_STACK_SIZE];
        let mut top = 0usize;
        let (mut i, mut begin, mut end) = (0u32, 0u32, self.leaf_ids.len() as u32);
        loop {
            let node = &self.nodes[i as usize];
            let (lo, hi) = (node.min(), node.max());
            // Every box inside the node is no farther from `p` on any axis than
            // the node's farthest corner, so this answer is exact for all of them.
            let far = (p - lo).abs().max((hi - p).abs());
            let range = begin as usize..end as usize;
            if far.dot(far) <= r2 {
                sink.all(&self.leaf_ids[range]);
            } else if node.is_leaf() {
                sink.test(p, r2, &self.leaf_boxes, range);
            } else {
                // Test both children here, and go on with the left (or only) one that
                // touches: one pop fewer per node, and a rejected child is never loaded
                // again.
                let mid = split_point(begin, end);
                let left = 2 * i + 1;
                let (a, b) = (&self.nodes[left as usize], &self.nodes[left as usize + 1]);
                let ta = touches(p, r2, &[a.min(), a.max()]);
                let tb = touches(p, r2, &[b.min(), b.max()]);
                match (ta, tb) {
                    (true, true) => {
                        stack[top] = (left + 1, mid, end);
                        top += 1;
                        (i, end) = (left, mid);
                    }
                    (true, false) => (i, end) = (left, mid),
                    (false, true) => (i, begin) = (left + 1, mid),
                    (false, false) => {
                        if top == 0 {
                            return;
                        }
                        top -= 1;
                        (i, begin, end) = stack[top];
                    }
                }
                continue;
            }
            if top == 0 {
                return;
            }
            top -= 1;
            (i, begin, end) = stack[top];
        }
    }

    /// Regions whose box overlaps `query` (touching counts). Appends to `out`.
    pub fn query_aabb(&self, query: &Aabb, out: &mut Vec<u32>) {
        let test = |b: &Aabb| query.intersects(b);
        self.traverse(test, test, |id| out.push(id));
    }

    /// Regions whose box [`Frustum::intersects_aabb`] accepts. Appends to `out`.
    pub fn query_frustum(&self, frustum: &Frustum, out: &mut Vec<u32>) {
        self.traverse(
            |b| frustum_node_test(frustum, b),
            |b| frustum.intersects_aabb(b),
            |id| out.push(id),
        );
    }
}

/// Where a sphere walk reports regions: whole runs, and leaves to test.
trait SphereSink {
    fn all(&mut self, ids: &[u32]);
    /// Tests the leaf slots `range` (boxes and ids in `groups`) against `(p, r2)`.
    fn test(&mut self, p: Vec3A, r2: f32, groups: &[BoxGroup], range: std::ops::Range<usize>);
}

/// Calls `f(mask, ids)` for every group of four slots that `range` covers: bit `k`
/// of `mask` is set when slot `k` of the group lies in `range` and its box touches the
/// sphere `(p, r2)`. Every run the walk tests starts on a group boundary (see
/// [`split_point`]); only the array's last group can end part-way.
#[inline(always)]
fn for_each_group(
    p: Vec3A,
    r2: f32,
    groups: &[BoxGroup],
    range: std::ops::Range<usize>,
    mut f: impl FnMut(u32, &[u32; 4]),
) {
    debug_assert_eq!(range.start % 4, 0);
    let first = range.start / 4;
    let full = range.len() / 4;
    for g in &groups[first..first + full] {
        f(g.touch_mask(p, r2), &g.ids);
    }
    let rest = range.len() % 4;
    if rest != 0 {
        let g = &groups[first + full];
        f(g.touch_mask(p, r2) & !(u32::MAX << rest), &g.ids);
    }
}

/// Boxes touched by the sphere `(p, r2)`, computed as `sphere_intersects_aabb` does.
#[inline(always)]
fn touches(p: Vec3A, r2: f32, b: &[Vec3A; 2]) -> bool {
    let d = p.clamp(b[0], b[1]) - p;
    d.dot(d) <= r2
}

/// Room a leaf test writes into. A lane writes at most at its own position in the
/// run (which starts on a group boundary), so a leaf's slots rounded up to whole
/// groups suffice, rounded up to a power of two so an index masked by it needs no
/// bounds check.
const LEAF_WINDOW: usize = (BVH_LEAF_SIZE as usize)
    .next_multiple_of(4)
    .next_power_of_two();

struct AppendTo<'a>(&'a mut Vec<u32>);

impl SphereSink for AppendTo<'_> {
    #[inline(always)]
    fn all(&mut self, ids: &[u32]) {
        self.0.extend_from_slice(ids);
    }

    /// All four ids of a group are written and the length advances by each lane's
    /// result: no branch per region. The window grows by a fixed size, so no copy
    /// call is made.
    #[inline(always)]
    fn test(&mut self, p: Vec3A, r2: f32, groups: &[BoxGroup], range: std::ops::Range<usize>) {
        let out = &mut *self.0;
        let start = out.len();
        let mut len = 0;
        if range.len() <= BVH_LEAF_SIZE as usize {
            out.extend_from_slice(&[0u32; LEAF_WINDOW]);
            let window: &mut [u32; LEAF_WINDOW] = (&mut out[start..start + LEAF_WINDOW])
                .try_into()
                .expect("window length");
            for_each_group(p, r2, groups, range, |mask, ids| {
                for (k, &id) in ids.iter().enumerate() {
                    window[len % LEAF_WINDOW] = id;
                    len += (mask >> k & 1) as usize;
                }
            });
        } else {
            // A leaf of coincident centres can hold any number of regions.
            out.resize(start + range.len() + 3, 0);
            let window = &mut out[start..];
            for_each_group(p, r2, groups, range, |mask, ids| {
                for (k, &id) in ids.iter().enumerate() {
                    window[len] = id;
                    len += (mask >> k & 1) as usize;
                }
            });
        }
        out.truncate(start + len);
    }
}

struct CallEach<F>(F);

impl<F: FnMut(u32)> SphereSink for CallEach<F> {
    #[inline(always)]
    fn all(&mut self, ids: &[u32]) {
        ids.iter().for_each(|&id| (self.0)(id));
    }

    #[inline(always)]
    fn test(&mut self, p: Vec3A, r2: f32, groups: &[BoxGroup], range: std::ops::Range<usize>) {
        for_each_group(p, r2, groups, range, |mut mask, ids| {
            while mask != 0 {
                (self.0)(ids[mask.trailing_zeros() as usize]);
                mask &= mask - 1;
            }
        });
    }
}

/// The frustum box test with a relative tolerance, so rounding in the centre/extent
/// form can never reject a node whose child box the exact test accepts.
#[inline]
fn frustum_node_test(f: &Frustum, b: &Aabb) -> bool {
    let c = b.center();
    let e = b.extent();
    let mut inside = true;
    for i in 0..6 {
        let n = f.planes[i];
        let dist = n.x * c.x + n.y * c.y + n.z * c.z + n.w;
        let radius = f.abs_normals[i].dot(e);
        let tol = 1e-5 * (dist.abs() + radius + c.abs().max_element());
        inside &= dist + radius + tol >= 0.0;
    }
    inside
}

/// Reference: every `i` whose box the sphere touches, in index order.
pub fn linear_query_sphere(boxes: &[Aabb], sphere: &Sphere, out: &mut Vec<u32>) {
    out.extend(
        (0..boxes.len() as u32).filter(|&i| sphere_intersects_aabb(sphere, &boxes[i as usize])),
    );
}

/// Reference: every `i` whose box overlaps `query`, in index order.
pub fn linear_query_aabb(boxes: &[Aabb], query: &Aabb, out: &mut Vec<u32>) {
    out.extend((0..boxes.len() as u32).filter(|&i| query.intersects(&boxes[i as usize])));
}

/// Reference: every `i` whose box the frustum accepts, in index order.
pub fn linear_query_frustum(boxes: &[Aabb], frustum: &Frustum, out: &mut Vec<u32>) {
    out.extend((0..boxes.len() as u32).filter(|&i| frustum.intersects_aabb(&boxes[i as usize])));
}
