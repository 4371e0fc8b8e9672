//! The cut on the GPU: a compute pass over every (instance, resident cluster of its
//! model) that writes the visible clusters and the indirect draw of them.
//!
//! This is the plain form: every resident cluster of every instance is tested,
//! with no hierarchy over groups. One test is a few dozen float operations on a
//! 64-byte row, so the pass is bound by reading the table; the hierarchy would
//! skip whole levels and groups, which pays only when most of a model's resident
//! clusters are far finer than the cut (many levels resident at once). The
//! streamer keeps few levels past the cut (`keep` is the fit with a 30% margin),
//! so the plain pass tests about twice what it draws. Measured (BENCHMARKS.md,
//! `benches/gpu_cut.rs`): about 0.1 us a cluster test on lavapipe, a CPU
//! rasteriser; a hierarchy earns its bookkeeping only past that.

use bytemuck::{Pod, Zeroable};
use farsight_geom::Frustum;
use farsight_lod::ProjectionInfo;
use glam::{Affine3A, Mat4, Vec3};

use super::pool::PoolBuffers;

/// The WGSL of the cut (`cut` and `finish` entry points).
pub const CUT_WGSL: &str = concat!(include_str!("tables.wgsl"), include_str!("cut.wgsl"));

/// Invocations of one workgroup of the cut.
const WORKGROUP: u32 = 64;
/// Most workgroups along one dispatch dimension.
const MAX_GROUPS: u32 = 65_535;

/// One instance as the GPU sees it (112 bytes, the WGSL struct `Instance`):
/// written when the instance is added or its transform changes, never per frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuInstance {
    /// The first three rows of the model-to-world matrix.
    pub world_from_local: [[f32; 4]; 3],
    /// The first three rows of its inverse.
    pub local_from_world: [[f32; 4]; 3],
    /// The instance's model (its row in the model table).
    pub model: u32,
    /// The largest axis scale: model units to world units, conservative for a
    /// non-uniform scale as the CPU cut's.
    pub scale: f32,
    /// The material slot drawing all of the instance (the plugin's slot of the
    /// entity's own `MeshMaterial3d`), or [`GpuInstance::NO_MATERIAL`]: each
    /// cluster draws with its model's material for it. The cut ignores it.
    pub material: u32,
    /// [`GpuInstance::NO_SHADOW`] where the instance casts no shadow (the entity's
    /// `NotShadowCaster`), else zero.
    pub flags: u32,
}
const _: () = assert!(std::mem::size_of::<GpuInstance>() == 112);

fn rows(m: &Affine3A) -> [[f32; 4]; 3] {
    let m = Mat4::from(*m);
    [0, 1, 2].map(|i| m.row(i).to_array())
}

impl GpuInstance {
    /// [`GpuInstance::material`] when the instance draws with its file's materials.
    pub const NO_MATERIAL: u32 = u32::MAX;
    /// [`GpuInstance::flags`]: the instance casts no shadow.
    pub const NO_SHADOW: u32 = 1;

    /// The row of an instance of `model` placed by `transform`.
    pub fn new(model: u32, transform: &Affine3A) -> Self {
        let scale = transform
            .matrix3
            .x_axis
            .length()
            .max(transform.matrix3.y_axis.length())
            .max(transform.matrix3.z_axis.length());
        Self {
            world_from_local: rows(transform),
            local_from_world: rows(&transform.inverse()),
            model,
            scale,
            material: Self::NO_MATERIAL,
            flags: 0,
        }
    }

    /// The camera in the model's space, computed as the shader does.
    pub fn camera_local(&self, camera: Vec3) -> Vec3 {
        affine(&self.local_from_world, camera)
    }

    /// A model-space point in world space, computed as the shader does.
    pub fn to_world(&self, p: Vec3) -> Vec3 {
        affine(&self.world_from_local, p)
    }
}

/// The shader's affine product, operation for operation.
fn affine(r: &[[f32; 4]; 3], p: Vec3) -> Vec3 {
    let row = |r: &[f32; 4]| r[0] * p.x + r[1] * p.y + r[2] * p.z + r[3];
    Vec3::new(row(&r[0]), row(&r[1]), row(&r[2]))
}

/// The camera of one cut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CutCamera {
    /// `projection * view`, for the frustum planes.
    pub view_projection: Mat4,
    /// The camera's position in world space.
    pub position: Vec3,
    /// The projection as error projection needs it.
    pub projection: ProjectionInfo,
    /// Viewport height in pixels.
    pub viewport_height: f32,
    /// Largest error on screen, in pixels.
    pub threshold_px: f32,
    /// Test the cluster spheres against the frustum (off: the cut alone).
    pub frustum: bool,
}

/// The uniform of the cut (144 bytes, the WGSL struct `View`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuView {
    planes: [[f32; 4]; 6],
    camera: [f32; 4],
    p11: f32,
    orthographic: u32,
    viewport_height: f32,
    threshold_px: f32,
    instance_count: u32,
    groups_y: u32,
    visible_capacity: u32,
    frustum: u32,
}
const _: () = assert!(std::mem::size_of::<GpuView>() == 144);

/// The compute pipelines of the cut.
#[derive(Clone, Debug)]
pub struct CutPipeline {
    layout: wgpu::BindGroupLayout,
    cut: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
}

/// What one view's cut writes: the visible `(instance, cluster row)` pairs, their
/// count and the indirect draw arguments (`wgpu::util::DrawIndirectArgs`).
#[derive(Clone, Debug)]
pub struct CutOutputs {
    view: wgpu::Buffer,
    /// `(instance, cluster row)` pairs, `capacity` of them at most.
    pub visible: wgpu::Buffer,
    /// Two counters: visible clusters found, and those past the capacity.
    pub counter: wgpu::Buffer,
    /// The indirect draw: 384 vertices (one slot) per instance, an instance per
    /// visible cluster.
    pub draw: wgpu::Buffer,
    /// Most visible clusters the list holds.
    pub capacity: u32,
}

/// The instance rows on the GPU; a row is written when it changes.
#[derive(Clone, Debug)]
pub struct InstanceTable {
    /// The [`GpuInstance`] rows.
    pub buffer: wgpu::Buffer,
    /// Rows in use.
    pub len: u32,
    /// Rows the buffer holds.
    pub capacity: u32,
}

impl InstanceTable {
    /// A table of `capacity` rows.
    pub fn new(device: &wgpu::Device, capacity: u32) -> Self {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("farsight instances"),
            size: u64::from(capacity.max(1)) * std::mem::size_of::<GpuInstance>() as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self {
            buffer,
            len: 0,
            capacity: capacity.max(1),
        }
    }

    /// Writes rows from `first` on (the rows whose transform changed); returns
    /// false, writing nothing, when they do not fit.
    pub fn write(&mut self, queue: &wgpu::Queue, first: u32, rows: &[GpuInstance]) -> bool {
        let end = u64::from(first) + rows.len() as u64;
        if end > u64::from(self.capacity) {
            return false;
        }
        let at = u64::from(first) * std::mem::size_of::<GpuInstance>() as u64;
        queue.write_buffer(&self.buffer, at, bytemuck::cast_slice(rows));
        self.len = self.len.max(end as u32);
        true
    }
}

/// The visible list read back (tests and tools only: it waits for the GPU).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VisibleReadback {
    /// `(instance, cluster row)` pairs, in the GPU's order.
    pub visible: Vec<[u32; 2]>,
    /// Visible clusters past the list's capacity (not in `visible`).
    pub overflow: u32,
    /// The indirect draw's instance count.
    pub draw_instances: u32,
}

/// Why a readback failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadbackError {
    /// The device did not finish.
    #[error("waiting for the GPU: {0}")]
    Poll(#[from] wgpu::PollError),
    /// The buffer could not be mapped.
    #[error("mapping the readback buffer: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
}

impl CutPipeline {
    /// Compiles the cut's shader and pipelines on `device`.
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("farsight cut"),
            source: wgpu::ShaderSource::Wgsl(CUT_WGSL.into()),
        });
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let write = wgpu::BufferBindingType::Storage { read_only: false };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight cut"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform),
                entry(1, read),
                entry(2, read),
                entry(3, read),
                entry(4, read),
                entry(5, write),
                entry(6, write),
                entry(7, write),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("farsight cut"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |entry_point| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("farsight cut"),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Self {
            cut: pipeline("cut"),
            finish: pipeline("finish"),
            layout,
        }
    }

    /// The output buffers of one view, holding up to `capacity` visible clusters.
    pub fn outputs(&self, device: &wgpu::Device, capacity: u32) -> CutOutputs {
        let buffer = |label, size: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        CutOutputs {
            view: buffer(
                "farsight cut view",
                std::mem::size_of::<GpuView>() as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            visible: buffer(
                "farsight visible clusters",
                u64::from(capacity.max(1)) * 8,
                U::STORAGE | U::COPY_SRC,
            ),
            counter: buffer(
                "farsight cut counter",
                8,
                U::STORAGE | U::COPY_DST | U::COPY_SRC,
            ),
            draw: buffer(
                "farsight cluster draw",
                16,
                U::STORAGE | U::INDIRECT | U::COPY_SRC,
            ),
            capacity: capacity.max(1),
        }
    }

    /// Records the cut of `instances` seen by `camera` into `encoder`: clears the
    /// counters, tests every resident cluster of every instance, writes the draw.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        pool: &PoolBuffers,
        max_resident: u32,
        instances: &InstanceTable,
        camera: &CutCamera,
        out: &CutOutputs,
    ) {
        let n = instances.len;
        let groups_y = n.clamp(1, MAX_GROUPS);
        let view = GpuView {
            planes: Frustum::from_view_projection(&camera.view_projection)
                .planes
                .map(|p| p.to_array()),
            camera: camera.position.extend(1.0).to_array(),
            p11: camera.projection.p11,
            orthographic: u32::from(camera.projection.orthographic),
            viewport_height: camera.viewport_height,
            threshold_px: camera.threshold_px,
            instance_count: n,
            groups_y,
            visible_capacity: out.capacity,
            frustum: u32::from(camera.frustum),
        };
        queue.write_buffer(&out.view, 0, bytemuck::bytes_of(&view));
        encoder.clear_buffer(&out.counter, 0, None);
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight cut"),
            layout: &self.layout,
            entries: &[
                (0, &out.view),
                (1, &pool.clusters),
                (2, &pool.models),
                (3, &pool.resident),
                (4, &instances.buffer),
                (5, &out.visible),
                (6, &out.counter),
                (7, &out.draw),
            ]
            .map(|(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            }),
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("farsight cut"),
            timestamp_writes: None,
        });
        pass.set_bind_group(0, &bind, &[]);
        if n > 0 && max_resident > 0 {
            pass.set_pipeline(&self.cut);
            pass.dispatch_workgroups(
                max_resident.div_ceil(WORKGROUP),
                groups_y,
                n.div_ceil(groups_y),
            );
        }
        pass.set_pipeline(&self.finish);
        pass.dispatch_workgroups(1, 1, 1);
    }
}

impl CutPipeline {
    /// [`CutPipeline::encode`] of `pool`'s resident clusters in a command buffer of
    /// its own, submitted at once.
    pub fn submit(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pool: &super::GpuUploader,
        instances: &InstanceTable,
        camera: &CutCamera,
        out: &CutOutputs,
    ) {
        let mut encoder = device.create_command_encoder(&Default::default());
        self.encode(
            device,
            queue,
            &mut encoder,
            pool.buffers(),
            pool.max_resident(),
            instances,
            camera,
            out,
        );
        queue.submit([encoder.finish()]);
    }
}

impl CutOutputs {
    /// Copies the visible list, counters and draw back and waits for them (tests
    /// and tools; a frame never reads the cut back).
    pub fn read_back(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<VisibleReadback, ReadbackError> {
        let size = self.visible.size() + 8 + 16;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("farsight cut readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        let vis = self.visible.size();
        encoder.copy_buffer_to_buffer(&self.visible, 0, &staging, 0, vis);
        encoder.copy_buffer_to_buffer(&self.counter, 0, &staging, vis, 8);
        encoder.copy_buffer_to_buffer(&self.draw, 0, &staging, vis + 8, 16);
        queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        device.poll(wgpu::PollType::wait_indefinitely())?;
        rx.recv().unwrap_or(Ok(()))?;
        let bytes = staging.slice(..).get_mapped_range().to_vec();
        staging.unmap();
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let v = (vis / 4) as usize;
        let (found, overflow) = (words[v], words[v + 1]);
        let kept = found.min(self.capacity) as usize;
        Ok(VisibleReadback {
            visible: words[..2 * kept]
                .chunks_exact(2)
                .map(|p| [p[0], p[1]])
                .collect(),
            overflow,
            draw_instances: words[v + 3],
        })
    }
}
