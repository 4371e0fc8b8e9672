//! The scheduler's plain-data inputs and outputs.

/// Most levels a model may have: level masks are `u32`.
pub const MAX_LEVELS: usize = 32;

/// Tuning of [`ClusterScheduler`](super::ClusterScheduler); defaults in
/// docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// Bytes copied to the GPU per frame at most.
    pub upload_budget: u64,
    /// Largest read; a level is cut into chunks of at most this size.
    pub chunk_size: u64,
    /// Size of the staging ring, split into `frames_in_flight` slices.
    pub staging_size: u64,
    /// Frames the GPU may still be reading a staging slice from; the ring has one
    /// slice per frame in flight (3 by default).
    pub frames_in_flight: u32,
    /// GPU memory available to levels (resident plus loading).
    pub memory_capacity: u64,
    /// Frames a level stays resident at least before it may be evicted.
    pub evict_after_frames: u64,
    /// Retries of a failed read before the level is marked failed.
    pub max_retries: u8,
    /// Frames of pressure (or calm) before the bias moves by one.
    pub bias_frames: u32,
    /// The highest the global bias rises under pressure (4 by default).
    pub max_bias: u8,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        const MB: u64 = 1 << 20;
        Self {
            upload_budget: 10 * MB,
            chunk_size: 8 * MB,
            staging_size: 33 * MB,
            frames_in_flight: 3,
            memory_capacity: 2048 * MB,
            evict_after_frames: 60,
            max_retries: 3,
            bias_frames: 120,
            max_bias: 4,
        }
    }
}

impl SchedulerConfig {
    /// Bytes of one staging slice.
    pub fn slice_size(&self) -> u64 {
        self.staging_size / self.frames_in_flight.max(1) as u64
    }

    /// The chunk size actually used: never more than a frame's budget or a slice, so
    /// every chunk can be copied in some frame.
    pub fn effective_chunk(&self) -> u64 {
        self.chunk_size
            .min(self.upload_budget)
            .min(self.slice_size())
            .max(1)
    }
}

/// One level of a model as stored: its bytes lie at `offset..offset + bytes` of file
/// `file` (an index the caller maps to a path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelDesc {
    /// The caller's number for the file holding the level.
    pub file: u32,
    /// The level's first byte in that file.
    pub offset: u64,
    /// The level's size in bytes: what it reads, uploads and keeps resident.
    pub bytes: u64,
}

/// A model description the scheduler cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelDescError {
    /// A model with no levels, or more than [`MAX_LEVELS`].
    #[error("model {model} has {levels} levels; a model needs 1 to {MAX_LEVELS}")]
    LevelCount {
        /// The model's index in the list given.
        model: u32,
        /// The number of levels it has.
        levels: usize,
    },
}

/// A cluster-LOD model: levels finest first (level 0 = LOD0), so the last one is the
/// coarsest, which is always resident.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDesc {
    /// The levels, finest first: 1 to [`MAX_LEVELS`] of them.
    pub levels: Vec<LevelDesc>,
}

/// What the LOD selection asked of one model this frame (level indices, 0 finest).
/// `fit`: the finest level the GPU might draw; `keep`: the same test with the 30%
/// margin (finer or equal to `fit`); `wanted`: `fit` plus the global bias, clamped to
/// the coarsest. A model nobody sees asks for its coarsest level only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelRequest {
    /// The finest level the GPU might draw now.
    pub fit: u8,
    /// The finest level to keep resident (`<= fit`).
    pub keep: u8,
    /// The finest level to load (`>= fit`, at most the coarsest).
    pub wanted: u8,
    /// Size on screen (pixels of the bounding sphere's radius, say): larger loads first.
    pub screen_size: f32,
    /// In view this frame: a visible model with nothing resident is a hole.
    pub visible: bool,
}

impl ModelRequest {
    /// The request of a model nobody sees: only the coarsest level.
    pub fn unseen(coarsest: u8) -> Self {
        Self {
            fit: coarsest,
            keep: coarsest,
            wanted: coarsest,
            screen_size: 0.0,
            visible: false,
        }
    }

    /// `fit + bias` clamped to `coarsest`: the `wanted` rule (docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs).
    pub fn wanted_for(fit: u8, bias: u8, coarsest: u8) -> u8 {
        fit.saturating_add(bias).min(coarsest)
    }
}

/// A finished read, as the I/O side reports it: `ok == false` for any failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkCompletion {
    /// The `request` of the [`Decision::Read`] that finished.
    pub request: u64,
    /// True when the bytes arrived and passed their check.
    pub ok: bool,
}

/// One thing the scheduler decided this frame. The driver carries these out in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Read `len` bytes at `offset` of level file `file`; report as `request`.
    Read {
        /// The id to report the read's completion under; unique over a run.
        request: u64,
        /// The model's index.
        model: u32,
        /// The level, 0 finest.
        level: u8,
        /// The chunk within the level, from 0.
        chunk: u16,
        /// The caller's file number ([`LevelDesc::file`]).
        file: u32,
        /// The first byte to read, in the file.
        offset: u64,
        /// Bytes to read; at most the effective chunk size.
        len: u64,
    },
    /// Copy the bytes of read `request` into the staging ring at `staging_offset`
    /// and queue their upload to the level's chunk `chunk`.
    Copy {
        /// The read whose bytes to copy.
        request: u64,
        /// The model's index.
        model: u32,
        /// The level, 0 finest.
        level: u8,
        /// The chunk within the level, from 0.
        chunk: u16,
        /// Where in the staging ring the bytes go (inside this frame's slice).
        staging_offset: u64,
        /// Bytes to copy: the read's length.
        len: u64,
    },
    /// Every chunk arrived and was queued on an earlier frame: the level may be drawn.
    Ready {
        /// The model's index.
        model: u32,
        /// The level, 0 finest.
        level: u8,
    },
    /// Free the level's GPU memory.
    Evict {
        /// The model's index.
        model: u32,
        /// The level, 0 finest (never the coarsest).
        level: u8,
    },
    /// A read failed more than `max_retries` times: the level will not load.
    Failed {
        /// The model's index.
        model: u32,
        /// The level, 0 finest.
        level: u8,
    },
}

/// Counters of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// The frame these counters describe (the scheduler's own count).
    pub frame: u64,
    /// Bytes queued for upload this frame; at most the upload budget.
    pub bytes_uploaded: u64,
    /// Reads issued this frame, retries included.
    pub reads_issued: u32,
    /// Reads issued again after a failure.
    pub retries: u32,
    /// Levels that became drawable this frame.
    pub levels_ready: u32,
    /// Levels evicted this frame.
    pub evictions: u32,
    /// Levels given up this frame (out of retries, or too large to chunk).
    pub failures: u32,
    /// Levels resident at the end of the frame, over every model.
    pub levels_resident: u64,
    /// Levels being loaded at the end of the frame.
    pub levels_loading: u32,
    /// Bytes of the resident levels.
    pub bytes_resident: u64,
    /// Visible models with no resident level to draw.
    pub holes: u32,
    /// The global bias after this frame (0 to `max_bias`).
    pub bias: u8,
    /// A copy or a new load waited because the frame's upload budget ran out.
    pub budget_exhausted: bool,
    /// A copy waited because this frame's staging slice was full.
    pub staging_full: bool,
    /// A load waited because it would exceed the memory capacity.
    pub memory_full: bool,
}
