//! Queries: sphere (the streaming source), box and frustum, each an iterative walk
//! with a fixed-size stack, and the linear scans they must equal.

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
                let range = node.first as usize..(node.first + node.count) as usize;
                for (b, &id) in self.leaf_boxes[range.clone()]
                    .iter()
                    .zip(&self.leaf_ids[range])
                {
                    if prim_test(b) {
                        hit(id);
                    }
                }
            } else {
                // Far child first on the stack so the near (left) one is visited next.
                stack[top] = node.first + 1;
                stack[top + 1] = node.first;
                top += 2;
            }
        }
    }

    /// Regions whose box the sphere touches (the clamp-to-box distance test of
    /// seed 003: `|p - clamp(p, min, max)|^2 <= r^2`). Appends to `out`.
    pub fn query_sphere(&self, sphere: &Sphere, out: &mut Vec<u32>) {
        self.for_each_in_sphere(sphere, |id| out.push(id));
    }

    /// Like [`query_sphere`](Self::query_sphere), calling `hit` per region. A node
    /// whose farthest corner lies within the sphere reports its whole subtree without
    /// testing it: every box inside it is inside the sphere too.
    #[inline]
    pub fn for_each_in_sphere(&self, sphere: &Sphere, mut hit: impl FnMut(u32)) {
        if self.nodes.is_empty() {
            return;
        }
        let p = sphere.center;
        let r2 = sphere.radius * sphere.radius;
        let mut stack = [0u32; BVH_STACK_SIZE];
        let mut top = 1usize;
        while top > 0 {
            top -= 1;
            let i = stack[top] as usize;
            let node = self.nodes[i];
            let near = p - p.clamp(node.min, node.max);
            if near.dot(near) > r2 {
                continue;
            }
            let far = (p - node.min).abs().max((p - node.max).abs());
            if far.dot(far) <= r2 {
                let [begin, end] = self.ranges[i];
                for &id in &self.leaf_ids[begin as usize..end as usize] {
                    hit(id);
                }
            } else if node.is_leaf() {
                let range = node.first as usize..(node.first + node.count) as usize;
                for (b, &id) in self.leaf_boxes[range.clone()]
                    .iter()
                    .zip(&self.leaf_ids[range])
                {
                    if sphere_intersects_aabb(sphere, b) {
                        hit(id);
                    }
                }
            } else {
                stack[top] = node.first + 1;
                stack[top + 1] = node.first;
                top += 2;
            }
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
