//! Construction: top-down median split with `select_nth_unstable`.

use glam::Vec3;

use crate::Aabb;

/// Most regions a leaf holds before it is split.
pub const BVH_LEAF_SIZE: u32 = 4;

/// One node: 32 bytes, the box and either a leaf's range of regions (`count > 0`,
/// `first` indexes [`Bvh::leaf_ids`]) or an internal node's children (`count == 0`,
/// children at `first` and `first + 1`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhNode {
    pub min: Vec3,
    pub first: u32,
    pub max: Vec3,
    pub count: u32,
}

const _: () = assert!(std::mem::size_of::<BvhNode>() == 32);

impl BvhNode {
    #[inline]
    pub fn aabb(&self) -> Aabb {
        Aabb::new(self.min, self.max)
    }

    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.count > 0
    }
}

/// Why a set of boxes cannot be built into a tree.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BvhBuildError {
    /// A box has a non-finite coordinate or `min > max` on some axis. Zero-size boxes
    /// are fine.
    InvalidBox { index: u32, aabb: Aabb },
    /// More boxes than a `u32` index can name.
    TooMany { count: usize },
}

impl std::fmt::Display for BvhBuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidBox { index, aabb } => write!(
                f,
                "region {index} has an invalid box (min {:?}, max {:?}): coordinates must be finite with min <= max",
                aabb.min, aabb.max
            ),
            Self::TooMany { count } => write!(f, "{count} regions exceed the BVH's u32 index range"),
        }
    }
}

impl std::error::Error for BvhBuildError {}

/// A built tree. `nodes[0]` is the root when there is at least one region; an empty
/// world has no nodes and every query returns nothing.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    pub(crate) nodes: Vec<BvhNode>,
    /// Region boxes in leaf order, so a leaf reads its boxes contiguously.
    pub(crate) leaf_boxes: Vec<Aabb>,
    /// Region index (into the slice given to the build) for each leaf slot.
    pub(crate) leaf_ids: Vec<u32>,
    /// Leaf slots `[begin, end)` under each node: a subtree's regions are contiguous,
    /// so a node wholly inside a query reports them without testing (kept apart from
    /// the nodes: only the queries' shortcut reads it).
    pub(crate) ranges: Vec<[u32; 2]>,
}

impl Bvh {
    /// Builds a tree over `boxes`; region `i` is reported by queries as `i`.
    pub fn build(boxes: &[Aabb]) -> Result<Self, BvhBuildError> {
        let mut bvh = Bvh::default();
        BvhBuilder::default().rebuild(&mut bvh, boxes)?;
        Ok(bvh)
    }

    pub fn nodes(&self) -> &[BvhNode] {
        &self.nodes
    }

    /// Region index of every leaf slot, in leaf order.
    pub fn leaf_ids(&self) -> &[u32] {
        &self.leaf_ids
    }

    pub fn len(&self) -> usize {
        self.leaf_ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.leaf_ids.is_empty()
    }

    /// Depth of the deepest leaf (the root alone is depth 1; empty is 0).
    pub fn depth(&self) -> usize {
        let mut best = 0;
        let mut stack = vec![(0u32, 1usize)];
        if self.nodes.is_empty() {
            return 0;
        }
        while let Some((i, d)) = stack.pop() {
            let n = self.nodes[i as usize];
            best = best.max(d);
            if !n.is_leaf() {
                stack.push((n.first, d + 1));
                stack.push((n.first + 1, d + 1));
            }
        }
        best
    }
}

#[derive(Clone, Copy)]
struct Prim {
    c: Vec3,
    id: u32,
}

/// Reusable build scratch: rebuilding a tree of the same size allocates nothing.
#[derive(Default)]
pub struct BvhBuilder {
    prims: Vec<Prim>,
    stack: Vec<(u32, u32, u32)>,
}

impl std::fmt::Debug for BvhBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BvhBuilder")
            .field("capacity", &self.prims.capacity())
            .finish()
    }
}

impl BvhBuilder {
    /// Rebuilds `bvh` over `boxes`, reusing its buffers and this builder's scratch.
    /// On error `bvh` is left empty.
    pub fn rebuild(&mut self, bvh: &mut Bvh, boxes: &[Aabb]) -> Result<(), BvhBuildError> {
        bvh.nodes.clear();
        bvh.leaf_boxes.clear();
        bvh.leaf_ids.clear();
        bvh.ranges.clear();
        if boxes.len() >= u32::MAX as usize / 2 {
            return Err(BvhBuildError::TooMany { count: boxes.len() });
        }
        self.prims.clear();
        for (i, b) in boxes.iter().enumerate() {
            if !(b.min.is_finite() && b.max.is_finite() && b.min.cmple(b.max).all()) {
                self.prims.clear();
                return Err(BvhBuildError::InvalidBox {
                    index: i as u32,
                    aabb: *b,
                });
            }
            self.prims.push(Prim {
                c: (b.min + b.max) * 0.5,
                id: i as u32,
            });
        }
        if boxes.is_empty() {
            return Ok(());
        }
        let n = boxes.len() as u32;
        // A binary tree with leaves of one or more regions has fewer than 2n nodes.
        bvh.nodes.reserve(2 * n as usize);
        bvh.nodes.push(BvhNode {
            min: Vec3::ZERO,
            first: 0,
            max: Vec3::ZERO,
            count: n,
        });
        bvh.ranges.reserve(2 * n as usize);
        bvh.ranges.push([0, n]);
        self.stack.clear();
        self.stack.push((0, 0, n));
        while let Some((node, begin, end)) = self.stack.pop() {
            let count = end - begin;
            let range = &mut self.prims[begin as usize..end as usize];
            let leaf = |nodes: &mut Vec<BvhNode>| {
                nodes[node as usize].first = begin;
                nodes[node as usize].count = count;
            };
            if count <= BVH_LEAF_SIZE {
                leaf(&mut bvh.nodes);
                continue;
            }
            let mut cmin = range[0].c;
            let mut cmax = cmin;
            for p in range.iter() {
                cmin = cmin.min(p.c);
                cmax = cmax.max(p.c);
            }
            let e = cmax - cmin;
            let axis = if e.x >= e.y && e.x >= e.z {
                0
            } else if e.y >= e.z {
                1
            } else {
                2
            };
            if e[axis] <= 0.0 {
                // Every centre coincides: no split can separate them.
                leaf(&mut bvh.nodes);
                continue;
            }
            let mid = count / 2;
            // One monomorphic call per axis: the comparison reads a fixed field.
            let m = mid as usize;
            match axis {
                0 => range.select_nth_unstable_by(m, |a, b| a.c.x.total_cmp(&b.c.x)),
                1 => range.select_nth_unstable_by(m, |a, b| a.c.y.total_cmp(&b.c.y)),
                _ => range.select_nth_unstable_by(m, |a, b| a.c.z.total_cmp(&b.c.z)),
            };
            let left = bvh.nodes.len() as u32;
            let child = BvhNode {
                min: Vec3::ZERO,
                first: 0,
                max: Vec3::ZERO,
                count: 0,
            };
            bvh.nodes.push(child);
            bvh.nodes.push(child);
            bvh.ranges.push([begin, begin + mid]);
            bvh.ranges.push([begin + mid, end]);
            bvh.nodes[node as usize].first = left;
            bvh.nodes[node as usize].count = 0;
            self.stack.push((left + 1, begin + mid, end));
            self.stack.push((left, begin, begin + mid));
        }
        bvh.leaf_ids.extend(self.prims.iter().map(|p| p.id));
        bvh.leaf_boxes
            .extend(self.prims.iter().map(|p| boxes[p.id as usize]));
        // Children always sit after their parent, so one reverse pass refits every
        // internal node from boxes its children already have.
        for i in (0..bvh.nodes.len()).rev() {
            let n = bvh.nodes[i];
            let b = if n.is_leaf() {
                bvh.leaf_boxes[n.first as usize..(n.first + n.count) as usize]
                    .iter()
                    .fold(Aabb::EMPTY, |acc, b| acc.union(*b))
            } else {
                bvh.nodes[n.first as usize]
                    .aabb()
                    .union(bvh.nodes[n.first as usize + 1].aabb())
            };
            bvh.nodes[i].min = b.min;
            bvh.nodes[i].max = b.max;
        }
        Ok(())
    }
}
