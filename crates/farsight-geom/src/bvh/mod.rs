//! The region BVH (docs/design/region-streaming-and-cluster-lod.md#the-region-bvh): a binary tree of axis-aligned boxes built by a top-down
//! median split on the longest centroid axis, all nodes in one flat `Vec` with the two
//! children of a node adjacent, queried with an iterative fixed-size stack.
//!
//! Split by operation like parry's BVH: [`build`](self::build) constructs,
//! [`query`](self::query) answers sphere, box and frustum queries (and holds the linear
//! scans they must equal), [`validation`](self::validation) checks the invariants.

mod build;
mod query;
mod validation;

pub use build::{Bvh, BvhBuildError, BvhBuilder, BvhNode, BVH_LEAF_SIZE};
pub use query::{linear_query_aabb, linear_query_frustum, linear_query_sphere, BVH_STACK_SIZE};
pub use validation::BvhValidationError;

#[cfg(test)]
mod tests;
