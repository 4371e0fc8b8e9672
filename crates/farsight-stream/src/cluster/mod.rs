//! Budgeted cluster-level streaming (docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget).
//!
//! [`ClusterScheduler`] is the decision maker: a pure function of its state, the
//! frame's [`ModelRequest`]s and the reads that completed, producing [`Decision`]s
//! (reads to issue, copies to queue, levels that became ready, evictions, failures).
//! [`ClusterStreamer`] carries those decisions out with real worker threads reading
//! real files, a staging ring, and an [`Uploader`] the renderer implements
//! ([`CpuUploader`] for tests and the demo). Recording the inputs and completions of
//! a run and feeding them to a fresh scheduler replays the same decisions.
//!
//! Models are cooked cluster files ([`CookedModel`], what `farsight cook mesh
//! --clusters` writes): opened from their head alone, each level a byte range the
//! streamer reads and checks on its own ([`LevelCheck`]).

mod cooked;
mod driver;
mod scheduler;
mod synthetic;
mod types;
mod upload;

pub use cooked::{
    read_head, stream_inputs, CookedLevel, CookedModel, CookedModelError, LevelCheck,
    LevelFileError, LevelSummary,
};
pub use driver::{ClusterStreamer, LevelFile};
pub use scheduler::ClusterScheduler;
// Generated cluster files for the simulation, tests and benches: not API.
#[doc(hidden)]
pub use synthetic::{encode_cluster_file, synthetic_level, LevelParts};
pub use types::{
    ChunkCompletion, Decision, FrameStats, LevelDesc, ModelDesc, ModelDescError, ModelRequest,
    SchedulerConfig, MAX_LEVELS,
};
pub use upload::{CpuUploader, Uploader};

#[cfg(test)]
mod cooked_tests;
#[cfg(test)]
mod tests;
