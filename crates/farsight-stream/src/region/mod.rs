//! World regions (docs/design/region-streaming-and-cluster-lod.md#region-states): boxes holding entities, streamed by
//! sources through the region BVH.
//!
//! [`RegionStreamer`] decides, a pure function of (state, sources, completed loads)
//! per frame; [`RegionWorld`] carries the decisions out, reading region files on
//! worker threads and creating or dropping entities through an [`EntitySink`].
//! [`scene`] is the file layout: a scene index and one file per region, both in the
//! farsight container.

pub mod scene;
mod state;
mod streamer;
mod world;

pub use scene::{
    read_region_file, write_region_file, write_scene, EntityRecord, RegionSpec, Scene, SceneError,
    SceneManifest, SceneRegion,
};
pub use state::{ActualState, RegionState, RegionStatus, StreamingSource, Transition};
pub use streamer::{LoadCompletion, RegionFrame, RegionStreamer, DEFAULT_REGION_HYSTERESIS};
pub use world::{CountingSink, EntitySink, RegionWorld};

#[cfg(test)]
mod tests;
