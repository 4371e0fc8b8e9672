//! farsight-stream owns what exists in memory, and when (docs/design/entity-lod.md#tile-streaming and
//! docs/design/region-streaming-and-cluster-lod.md): world
//! regions and their authored/desired/actual states driven by streaming sources
//! through the region BVH of `farsight-geom`, the region loader that reads scene
//! files on worker threads, tile LOD streaming (one active level per tile, chosen by
//! `farsight-lod`'s tile rule), and budgeted streaming of cluster-LOD levels.
//!
//! Every per-frame decision here is a pure function of (state, inputs, completed
//! I/O): the I/O itself runs on worker threads ([`io`]) and comes back as explicit
//! completions, so a recorded run replays to the same decisions. This crate must not
//! know about GPUs, meshes' contents or how an engine stores entities: it reaches
//! them through traits ([`cluster::Uploader`], [`region::EntitySink`]). It never
//! selects a LOD itself: fit/keep/wanted levels and tile levels come from
//! `farsight-lod` (or `farsight-cluster`) rules.
//!
//! The three streamers a game drives once per frame are re-exported here:
//! [`RegionWorld`] (regions of entities), [`ClusterStreamer`] (cluster-LOD levels of
//! cooked models) and [`TileStreamer`] (one level per tile); the modules hold the
//! rest of each one's vocabulary.
//!
//! ```
//! use std::time::Duration;
//! use farsight_geom::Aabb;
//! use farsight_stream::region::{write_scene, ActualState, CountingSink, EntityRecord, RegionSpec};
//! use farsight_stream::{RegionState, RegionWorld, StreamingSource};
//! use glam::Vec3;
//!
//! // A scene of three 10 m regions along +x, two entities in each, nothing loaded.
//! let dir = std::env::temp_dir().join(format!("farsight-stream-doc-{}", std::process::id()));
//! let regions: Vec<RegionSpec> = [0.0, 100.0, 1000.0]
//!     .iter()
//!     .map(|&x| RegionSpec {
//!         name: format!("at {x}"),
//!         bounds: Aabb::from_center_extent(Vec3::new(x, 0.0, 0.0), Vec3::splat(5.0)),
//!         authored: RegionState::Unloaded,
//!         entities: (0..2)
//!             .map(|id| EntityRecord { id, model: 0, position: Vec3::new(x, 0.0, 0.0), scale: 1.0 })
//!             .collect(),
//!     })
//!     .collect();
//! let index = write_scene(&dir, &regions).unwrap();
//!
//! // A player at x = 100 pulls in what lies within 50 m; files load on one worker.
//! let mut world = RegionWorld::open(&index, CountingSink::default(), 1).unwrap();
//! let player = StreamingSource {
//!     position: Vec3::new(100.0, 0.0, 0.0),
//!     radius: 50.0,
//!     target: RegionState::Active,
//! };
//! for _ in 0..500 {
//!     world.frame(&[player]);
//!     if world.streamer().actual(1) == ActualState::Active {
//!         break;
//!     }
//!     world.wait_for_io(Duration::from_millis(10));
//! }
//! assert_eq!(world.streamer().actual(1), ActualState::Active);
//! assert_eq!(world.sink().entities[&1], 2);
//! // Region 0 is raised to at least resident whenever another region loads; the
//! // far region stays unloaded.
//! assert!(world.streamer().actual(0).is_loaded());
//! assert_eq!(world.streamer().actual(2), ActualState::Unloaded);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![warn(missing_docs)]

pub mod cluster;
pub mod io;
pub mod region;
// The streaming simulation behind `farsight stream-sim` and the end-to-end tests: not API.
#[doc(hidden)]
pub mod sim;
pub mod tile;

pub use cluster::{
    ClusterScheduler, ClusterStreamer, CookedModel, CpuUploader, ModelRequest, SchedulerConfig,
    Uploader,
};
pub use region::{EntitySink, RegionState, RegionStreamer, RegionWorld, StreamingSource};
pub use tile::{TileManifest, TileSink, TileStreamer};
