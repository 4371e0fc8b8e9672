//! The validator: run after every build in the tests.

use super::build::split_point;
use crate::Bvh;

/// What [`Bvh::validate`] found wrong.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BvhValidationError {
    /// A node's box does not enclose a child's box (or a leaf's region box).
    NotEnclosing {
        /// The enclosing node's slot in [`Bvh::nodes`].
        node: u32,
        /// The child's node slot, or its leaf slot when `leaf_slot` is true.
        child: u32,
        /// True when `child` is a leaf slot (a region box) rather than a node.
        leaf_slot: bool,
    },
    /// A child index or leaf range points outside the arrays.
    OutOfRange {
        /// The node's slot in [`Bvh::nodes`].
        node: u32,
    },
    /// A node was reached twice or never.
    NodeReach {
        /// The node's slot in [`Bvh::nodes`].
        node: u32,
        /// How many times a walk from the root reached it (should be 1).
        times: u32,
    },
    /// A region was reached `times` times instead of once.
    RegionReach {
        /// The region's index in the slice given to the build.
        region: u32,
        /// How many leaf slots name it (should be 1).
        times: u32,
    },
    /// The arrays disagree in length: `leaf_boxes` groups of four boxes for
    /// `leaf_ids` regions.
    Lengths {
        /// Groups of four region boxes stored.
        leaf_boxes: usize,
        /// Region ids stored (one per leaf slot).
        leaf_ids: usize,
    },
    /// A leaf's slots are not the run the median split implies for it (see
    /// [`BvhNode`](crate::BvhNode)): queries that report a whole subtree would
    /// report the wrong regions.
    Range {
        /// The leaf's slot in [`Bvh::nodes`].
        node: u32,
        /// The run of leaf slots, `[begin, end)`, the median split implies for it.
        range: [u32; 2],
    },
}

impl std::fmt::Display for BvhValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid BVH: {self:?}")
    }
}

impl std::error::Error for BvhValidationError {}

impl Bvh {
    /// Checks the invariants: every node box encloses its children's boxes (a leaf's
    /// box encloses its regions'), every node and every region is reachable from the
    /// root exactly once (a slot nothing reaches must be [`BvhNode::UNUSED`](crate::BvhNode::UNUSED)), the
    /// children of node `h` are at `2h + 1` and `2h + 2`, and every
    /// leaf holds the run of slots the median split implies (so a subtree's regions
    /// are the contiguous run its queries report).
    pub fn validate(&self) -> Result<(), BvhValidationError> {
        let n_regions = self.leaf_ids.len();
        if self.leaf_boxes.len() != n_regions.div_ceil(4) {
            return Err(BvhValidationError::Lengths {
                leaf_boxes: self.leaf_boxes.len(),
                leaf_ids: n_regions,
            });
        }
        let mut region_seen = vec![0u32; n_regions];
        let mut node_seen = vec![0u32; self.nodes.len()];
        if self.nodes.is_empty() {
            return if n_regions == 0 {
                Ok(())
            } else {
                Err(BvhValidationError::RegionReach {
                    region: self.leaf_ids[0],
                    times: 0,
                })
            };
        }
        let mut stack = vec![(0u32, 0u32, n_regions as u32)];
        while let Some((i, begin, end)) = stack.pop() {
            node_seen[i as usize] += 1;
            if node_seen[i as usize] > 1 {
                return Err(BvhValidationError::NodeReach { node: i, times: 2 });
            }
            let node = self.nodes[i as usize];
            let b = node.aabb();
            if node.is_leaf()
                && [node.first(), node.first().wrapping_add(node.count())] != [begin, end]
            {
                return Err(BvhValidationError::Range {
                    node: i,
                    range: [begin, end],
                });
            }
            if !node.is_leaf() && end - begin < 2 {
                return Err(BvhValidationError::Range {
                    node: i,
                    range: [begin, end],
                });
            }
            if node.is_leaf() {
                let end = node.first() as usize + node.count() as usize;
                if end > n_regions {
                    return Err(BvhValidationError::OutOfRange { node: i });
                }
                for slot in node.first() as usize..end {
                    if !b.contains(&self.slot_box(slot)) {
                        return Err(BvhValidationError::NotEnclosing {
                            node: i,
                            child: slot as u32,
                            leaf_slot: true,
                        });
                    }
                    let id = self.leaf_ids[slot] as usize;
                    if id >= n_regions {
                        return Err(BvhValidationError::OutOfRange { node: i });
                    }
                    region_seen[id] += 1;
                }
            } else {
                let c = node.first();
                // The heap layout the sphere walk relies on.
                if c != 2 * i + 1 || c as usize + 1 >= self.nodes.len() {
                    return Err(BvhValidationError::OutOfRange { node: i });
                }
                for child in [c, c + 1] {
                    if !b.contains(&self.nodes[child as usize].aabb()) {
                        return Err(BvhValidationError::NotEnclosing {
                            node: i,
                            child,
                            leaf_slot: false,
                        });
                    }
                }
                let mid = split_point(begin, end);
                stack.push((c, begin, mid));
                stack.push((c + 1, mid, end));
            }
        }
        if let Some((node, &times)) = node_seen
            .iter()
            .enumerate()
            .find(|&(k, &t)| t != 1 && !(t == 0 && self.nodes[k].is_unused()))
        {
            return Err(BvhValidationError::NodeReach {
                node: node as u32,
                times,
            });
        }
        if let Some((region, &times)) = region_seen.iter().enumerate().find(|(_, &t)| t != 1) {
            return Err(BvhValidationError::RegionReach {
                region: region as u32,
                times,
            });
        }
        Ok(())
    }
}
