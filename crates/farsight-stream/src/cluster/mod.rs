//! Budgeted cluster-level streaming (seed 003 "Third Step: Streaming It In").
//!
//! [`ClusterScheduler`] is the decision maker: a pure function of its state, the
//! frame's [`ModelRequest`]s and the reads that completed, producing [`Decision`]s
//! (reads to issue, copies to queue, levels that became ready, evictions, failures).
//! [`ClusterStreamer`] carries those decisions out with real worker threads reading
//! real files, a staging ring, and an [`Uploader`] the renderer implements
//! ([`CpuUploader`] for tests and the demo). Recording the inputs and completions of
//! a run and feeding them to a fresh scheduler replays the same decisions.

mod driver;
mod level_file;
mod scheduler;
mod types;
mod upload;

pub use driver::{ClusterStreamer, LevelCheck, LevelFile};
pub use level_file::{
    check_level_file, encode_level_file, synthetic_level, LevelFileError, LevelFileSummary,
    LevelParts,
};
pub use scheduler::ClusterScheduler;
pub use types::{
    ChunkCompletion, Decision, FrameStats, LevelDesc, ModelDesc, ModelDescError, ModelRequest,
    SchedulerConfig, MAX_LEVELS,
};
pub use upload::{CpuUploader, Uploader};

#[cfg(test)]
mod level_file_tests;
#[cfg(test)]
mod tests;
