//! The GPU half of cluster LOD (issue 29): the resident pool, the streamer's real
//! uploader into it, and the cut as a compute pass.
//!
//! - [`alloc`]: the pools' range allocator and its fragmentation bound.
//! - [`layout`]: where a level record's bytes go, and the table rows.
//! - [`pool`]: the GPU buffers and [`GpuUploader`], farsight-stream's `Uploader`.
//! - [`cut`]: the compute pass that asks every resident cluster of every instance
//!   farsight-cluster's two questions and writes the visible list and indirect draw.
//!
//! These are plain wgpu (the `wgpu` Bevy renders with): the render world hands
//! them its `RenderDevice`'s device and `RenderQueue`'s queue; tests run them on a
//! headless device.

pub mod alloc;
pub mod cut;
pub mod layout;
pub mod pool;

pub use alloc::RangeAllocator;
pub use cut::{CutCamera, CutOutputs, CutPipeline, GpuInstance, InstanceTable, VisibleReadback};
pub use layout::{GpuCluster, GpuModel, LevelLayout};
pub use pool::{GpuUploader, PoolBuffers, PoolSettings, UploadStats};
