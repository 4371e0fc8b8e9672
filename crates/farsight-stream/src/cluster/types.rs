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
    pub frames_in_flight: u32,
    /// GPU memory available to levels (resident plus loading).
    pub memory_capacity: u64,
    /// Frames a level stays resident at least before it may be evicted.
    pub evict_after_frames: u64,
    /// Retries of a failed read before the level is marked failed.
    pub max_retries: u8,
    /// Frames of pressure (or calm) before the bias moves by one.
    pub bias_frames: u32,
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
    pub file: u32,
    pub offset: u64,
    pub bytes: u64,
}

/// A model description the scheduler cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelDescError {
    #[error("model {model} has {levels} levels; a model needs 1 to {MAX_LEVELS}")]
    LevelCount { model: u32, levels: usize },
}

/// A cluster-LOD model: levels finest first (level 0 = LOD0), so the last one is the
/// coarsest, which is always resident.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDesc {
    pub levels: Vec<LevelDesc>,
}

/// What the LOD selection asked of one model this frame (level indices, 0 finest).
/// `fit`: the finest level the GPU might draw; `keep`: the same test with the 30%
/// margin (finer or equal to `fit`); `wanted`: `fit` plus the global bias, clamped to
/// the coarsest. A model nobody sees asks for its coarsest level only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelRequest {
    pub fit: u8,
    pub keep: u8,
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
    pub request: u64,
    pub ok: bool,
}

/// One thing the scheduler decided this frame. The driver carries these out in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Read `len` bytes at `offset` of level file `file`; report as `request`.
    Read {
        request: u64,
        model: u32,
        level: u8,
        chunk: u16,
        file: u32,
        offset: u64,
        len: u64,
    },
    /// Copy the bytes of read `request` into the staging ring at `staging_offset`
    /// and queue their upload to the level's chunk `chunk`.
    Copy {
        request: u64,
        model: u32,
        level: u8,
        chunk: u16,
        staging_offset: u64,
        len: u64,
    },
    /// Every chunk arrived and was queued on an earlier frame: the level may be drawn.
    Ready { model: u32, level: u8 },
    /// Free the level's GPU memory.
    Evict { model: u32, level: u8 },
    /// A read failed more than `max_retries` times: the level will not load.
    Failed { model: u32, level: u8 },
}

/// Counters of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    pub frame: u64,
    pub bytes_uploaded: u64,
    pub reads_issued: u32,
    pub retries: u32,
    pub levels_ready: u32,
    pub evictions: u32,
    pub failures: u32,
    pub levels_resident: u64,
    pub levels_loading: u32,
    pub bytes_resident: u64,
    /// Visible models with no resident level to draw.
    pub holes: u32,
    pub bias: u8,
    pub budget_exhausted: bool,
    pub staging_full: bool,
    pub memory_full: bool,
}
