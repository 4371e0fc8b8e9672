//! Run-time cluster LOD selection (docs/design/region-streaming-and-cluster-lod.md#choosing-the-cut).
//!
//! Two questions, both answered from the cluster records of `farsight-format`:
//!
//! - **The cut** ([`ClusterDag`], [`CutView`]): which clusters to draw for one
//!   instance. A cluster is drawn when its own error projects under the threshold
//!   (one pixel by default) and its parent group's error does not; because both sides
//!   of a group boundary carry the same error and sphere, exactly one side draws. The
//!   walk is hierarchical (level, then group, then cluster), so whole levels and
//!   groups whose parent error is already under the threshold are skipped;
//!   [`ClusterDag::cut_flat`] is the brute-force reference it must agree with.
//! - **Residency** ([`model_levels`], [`ModelLevels`]): per model, the finest level
//!   the GPU might draw (`fit`), the same with a 30% margin (`keep`), and `fit` plus
//!   the global pressure bias (`wanted`), the finest over all instances; with a
//!   distance-only fallback for models cooked without errors. The streamer
//!   (`farsight-stream`) consumes these three numbers and nothing else.
//!
//! Error projection is `farsight-lod`'s screen-space error rule
//! ([`farsight_lod::screen_space_error_px`]) at the distance to the nearest point
//! of the bounding sphere, so the CPU agrees with a GPU cull using the same camera.
//!
//! This crate is what a game links: it must not know about importers, the
//! simplifier, meshoptimizer's DAG builder or `farsight-mesh`, and it never
//! allocates in a per-frame call (callers own the output buffers).

mod cut;
mod dag;
mod levels;

pub use cut::{CutStats, CutView};
pub use dag::{ClusterBounds, ClusterDag, DagError, GroupNode, LevelNode};
pub use levels::{
    model_levels, model_levels_over, InstanceBounds, LevelMetric, LevelView, ModelLevels,
    KEEP_MARGIN,
};
