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
//!
//! ```
//! use farsight_cluster::{ClusterDag, CutView};
//! use farsight_format::ClusterInfo;
//! use farsight_lod::ProjectionInfo;
//! use glam::Vec3;
//!
//! // Two exact clusters (level 0) simplified into one cluster 0.1 units off (level 1).
//! let info = |sphere, error, parent_sphere, parent_error| ClusterInfo {
//!     sphere,
//!     parent_sphere,
//!     error,
//!     parent_error,
//!     triangle_count: 64,
//!     material: 0,
//!     group: 0,
//! };
//! let whole = [0.0, 0.0, 0.0, 2.0];
//! let fine = [
//!     info([-1.0, 0.0, 0.0, 1.0], 0.0, whole, 0.1),
//!     info([1.0, 0.0, 0.0, 1.0], 0.0, whole, 0.1),
//! ];
//! let coarse = [info(whole, 0.1, whole, f32::MAX)];
//! let dag = ClusterDag::from_infos(&[&fine[..], &coarse[..]]).unwrap();
//!
//! let mut view = CutView {
//!     camera_local: Vec3::new(0.0, 0.0, 10.0),
//!     scale: 1.0,
//!     projection: ProjectionInfo::perspective(60f32.to_radians()),
//!     viewport_height: 1000.0,
//!     threshold_px: 1.0,
//! };
//! let mut draw = Vec::new();
//! // 8 m from the sphere, 0.1 units cover about 11 pixels: the exact pair draws.
//! dag.cut(&view, &mut draw);
//! assert_eq!(draw, [0, 1]);
//! // 1 km away they cover under a tenth of a pixel: the simplified cluster draws.
//! view.camera_local.z = 1000.0;
//! let stats = dag.cut(&view, &mut draw);
//! assert_eq!(draw, [2]);
//! assert_eq!(stats.clusters_drawn, 1);
//! ```
#![warn(missing_docs)]

mod cut;
mod dag;
mod levels;

pub use cut::{CutStats, CutView};
pub use dag::{ClusterBounds, ClusterDag, DagError, GroupNode, LevelNode};
pub use levels::{
    model_levels, model_levels_over, InstanceBounds, LevelMetric, LevelView, ModelLevels,
    KEEP_MARGIN,
};
