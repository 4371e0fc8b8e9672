//! The GPU half of cluster LOD (issue 29): the resident pool, the streamer's real
//! uploader into it, and the cut as a compute pass.
//!
//! - [`alloc`]: the pools' range allocator and its fragmentation bound.
//! - [`layout`]: where a level record's bytes go, and the table rows.
//! - [`pool`]: the GPU buffers and [`GpuUploader`], farsight-stream's `Uploader`.
//! - [`staging`]: the staging ring of mappable slices the copies go through.
//! - [`draw`]: a headless render pipeline (tests, tools) that pulls vertices from
//!   the pools and draws the cut's visible clusters with one indirect draw, lambert
//!   shaded.
//! - [`pbr`]: the plugin's draw: Bevy's mesh pipeline and PBR fragment shader over
//!   a vertex stage that pulls from the pools, one indirect draw per material.
//! - [`prepass`]: the visible clusters in Bevy's depth and normal prepasses,
//!   through Bevy's prepass pipeline over the same vertex pull.
//! - [`instances`]: [`LevelRequests`], the streamer's requests by a pruned search
//!   over each model's instances, and the changed instance rows written in runs.
//! - [`plugin`]: [`FarsightGpuClustersPlugin`], all of it hooked into Bevy's
//!   render world (opt-in).
//! - [`stats`]: [`GpuClusterStats`], the figures read in the main world, and
//!   [`GpuClusterTint`], the level tint switch.
//! - [`cut`]: the compute pass that asks every resident cluster of every instance
//!   farsight-cluster's two questions and writes the visible list and indirect draw.
//!
//! These are plain wgpu (the `wgpu` Bevy renders with): the render world hands
//! them its `RenderDevice`'s device and `RenderQueue`'s queue; tests run them on a
//! headless device.

pub mod alloc;
pub mod cut;
pub mod draw;
pub mod instances;
pub mod layout;
pub mod pbr;
pub mod plugin;
pub mod pool;
pub mod prepass;
pub mod staging;
pub mod stats;

pub use alloc::RangeAllocator;
pub use cut::{CutCamera, CutOutputs, CutPipeline, GpuInstance, InstanceTable, VisibleReadback};
pub use draw::{DrawCamera, DrawPipeline, DrawTarget};
pub use instances::LevelRequests;
pub use layout::{GpuCluster, GpuModel, LevelLayout};
pub use plugin::{FarsightGpuClustersPlugin, GpuClustersActive};
pub use pool::{GpuUploader, PoolBuffers, PoolSettings, UploadStats};
pub use staging::{RingAccount, StagingRing};
pub use stats::{GpuClusterStats, GpuClusterTint, PlacementFailure, PoolKind};

/// The GPU path's systems, one a set, so that benches can time them
/// (`benches/gpu_clusters.rs`) and apps order against them.
#[derive(bevy::ecs::schedule::SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuClusterSystems {
    /// Main world, `PostUpdate`: the instances' slots and the active camera.
    Gather,
    /// Main world, `First`: the render world's figures into [`GpuClusterStats`].
    Publish,
    /// `ExtractSchedule`: the marked slots, the camera, new models and the tint switch.
    Extract,
    /// Render world, `PrepareResources`: the streamer's frame and the instance rows.
    Prepare,
    /// `Core3d`: the cut's compute pass and the draw, encoded (both systems
    /// below).
    CutAndDraw,
    /// `Core3d`, in `Core3dSystems::Prepass`: the visible clusters into the
    /// active camera's depth and normal prepass textures (after the cut).
    Prepass,
    /// `Core3d`, before Bevy's main pass: the cut, the sort by material and the
    /// shadow cascades' cut and draws, encoded (within [`GpuClusterSystems::CutAndDraw`]).
    Cut,
    /// `Core3d`, after Bevy's main opaque pass: the draws into the view, encoded
    /// (within [`GpuClusterSystems::CutAndDraw`]).
    Draw,
}

/// A device on the first adapter wgpu finds, without a window (tests, benches and
/// tools: the plugin uses Bevy's device), when it can run the GPU path
/// ([`gpu_path_supported`] with the default pools); the error says why there is none.
pub fn headless_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), String> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter =
        bevy::tasks::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| e.to_string())?;
    let info = adapter.get_info();
    let (device, queue) =
        bevy::tasks::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .map_err(|e| e.to_string())?;
    if !gpu_path_supported(
        &adapter.get_downlevel_capabilities(),
        &device.limits(),
        &PoolSettings::default(),
    ) {
        return Err(format!(
            "{} lacks compute shaders, vertex-stage storage buffers, indirect draws or \
             the storage limits the pools need",
            info.name
        ));
    }
    Ok((device, queue, info))
}

/// Whether a device can run the GPU path: compute shaders, storage buffers read by
/// vertex shaders, indirect draws, and room for the draw's seven storage buffers
/// in one stage and the pools' bindings. Where it cannot (WebGL2), the CPU path is
/// the one to use.
pub fn gpu_path_supported(
    downlevel: &wgpu::DownlevelCapabilities,
    limits: &wgpu::Limits,
    pools: &PoolSettings,
) -> bool {
    use wgpu::DownlevelFlags as F;
    let needs = F::COMPUTE_SHADERS | F::VERTEX_STORAGE | F::INDIRECT_EXECUTION;
    let largest = (pools.vertices * layout::VERTEX_BYTES)
        .max(pools.indices * 4)
        .max(pools.clusters * std::mem::size_of::<GpuCluster>() as u64);
    downlevel.flags.contains(needs)
        && limits.max_storage_buffers_per_shader_stage >= 7
        && limits.max_storage_buffer_binding_size >= largest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webgl2_takes_the_cpu_path_and_a_full_device_the_gpu_path() {
        let pools = PoolSettings::default();
        let full = wgpu::DownlevelCapabilities::default();
        assert!(gpu_path_supported(&full, &wgpu::Limits::default(), &pools));
        let webgl2 = wgpu::DownlevelCapabilities {
            flags: wgpu::DownlevelFlags::empty(),
            ..Default::default()
        };
        let limits = wgpu::Limits::downlevel_webgl2_defaults();
        assert!(!gpu_path_supported(&webgl2, &limits, &pools));
        // Full flags but WebGL2's limits (no storage buffers) are not enough either.
        assert!(!gpu_path_supported(&full, &limits, &pools));
    }
}
