//! The GPU half of cluster LOD (issue 29): the resident pool, the streamer's real
//! uploader into it, and the cut as a compute pass.
//!
//! - [`alloc`]: the pools' range allocator and its fragmentation bound.
//! - [`layout`]: where a level record's bytes go, and the table rows.
//! - [`pool`]: the GPU buffers and [`GpuUploader`], farsight-stream's `Uploader`.
//! - [`staging`]: the staging ring of mappable slices the copies go through.
//! - [`draw`]: the render pipeline that pulls vertices from the pools and draws
//!   the cut's visible clusters with one indirect draw.
//! - [`cut`]: the compute pass that asks every resident cluster of every instance
//!   farsight-cluster's two questions and writes the visible list and indirect draw.
//!
//! These are plain wgpu (the `wgpu` Bevy renders with): the render world hands
//! them its `RenderDevice`'s device and `RenderQueue`'s queue; tests run them on a
//! headless device.

pub mod alloc;
pub mod cut;
pub mod draw;
pub mod layout;
pub mod pool;
pub mod staging;

pub use alloc::RangeAllocator;
pub use cut::{CutCamera, CutOutputs, CutPipeline, GpuInstance, InstanceTable, VisibleReadback};
pub use draw::{DrawCamera, DrawPipeline};
pub use layout::{GpuCluster, GpuModel, LevelLayout};
pub use pool::{GpuUploader, PoolBuffers, PoolSettings, UploadStats};
pub use staging::{RingAccount, StagingRing};

/// A device on the first adapter wgpu finds, without a window (tests, benches and
/// tools: the plugin uses Bevy's device); the error says why there is none.
pub fn headless_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), String> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter =
        bevy::tasks::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| e.to_string())?;
    let info = adapter.get_info();
    let (device, queue) =
        bevy::tasks::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .map_err(|e| e.to_string())?;
    Ok((device, queue, info))
}
