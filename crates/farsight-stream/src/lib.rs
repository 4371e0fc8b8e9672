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

pub mod cluster;
pub mod io;
pub mod region;
pub mod sim;
pub mod tile;
