//! Drawing the visible clusters without copies, headless: a render pipeline that
//! pulls each vertex from the pools as stored and one indirect draw for every
//! visible cluster of every instance (the [`CutOutputs`]' draw arguments), shaded by
//! a plain lambert term with an optional tint per level. It needs no Bevy (tests and
//! tools draw with it on a bare device); the plugin draws through [`super::pbr`]
//! instead, with Bevy's PBR shading and the models' materials, over the same vertex
//! pull (`pull.wgsl`).

use bytemuck::{Pod, Zeroable};
use glam::{Mat4, Vec3};

use super::cut::{CutOutputs, InstanceTable};
use super::pool::PoolBuffers;

/// The WGSL of the draw (after the shared tables).
pub const DRAW_WGSL: &str = concat!(
    include_str!("tables.wgsl"),
    include_str!("pull.wgsl"),
    include_str!("draw.wgsl")
);

/// The draw's uniform (the WGSL struct `DrawView`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuDrawView {
    clip_from_world: [[f32; 4]; 4],
    light: [f32; 4],
    tint_levels: u32,
    pad: [u32; 3],
}

/// One view's drawing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrawCamera {
    /// `projection * view`.
    pub clip_from_world: Mat4,
    /// Direction towards the light, world space.
    pub light: Vec3,
    /// Colour each cluster by its level.
    pub tint_levels: bool,
}

/// What a [`DrawPipeline`] draws into: the colour and depth formats, the sample
/// count and the depth comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrawTarget {
    /// The colour attachment's format.
    pub color: wgpu::TextureFormat,
    /// The depth attachment's format.
    pub depth: wgpu::TextureFormat,
    /// Samples per pixel (1 without MSAA).
    pub samples: u32,
    /// The depth test (`Less` for the tests' forward depth, `Greater` for Bevy's).
    pub depth_compare: wgpu::CompareFunction,
}

/// The render pipeline of the clusters, for one colour and depth format.
#[derive(Debug)]
pub struct DrawPipeline {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    pull_layout: wgpu::BindGroupLayout,
    pull: wgpu::ComputePipeline,
    uniform: wgpu::Buffer,
}

fn entries(
    count: u32,
    stages: wgpu::ShaderStages,
    last_writable: bool,
) -> Vec<wgpu::BindGroupLayoutEntry> {
    (0..count)
        .map(|binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: stages,
            ty: wgpu::BindingType::Buffer {
                ty: match binding {
                    0 => wgpu::BufferBindingType::Uniform,
                    b if last_writable && b == count - 1 => {
                        wgpu::BufferBindingType::Storage { read_only: false }
                    }
                    _ => wgpu::BufferBindingType::Storage { read_only: true },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect()
}

impl DrawPipeline {
    /// Compiles the draw for `color` and `depth` targets (depth compared `Less`).
    pub fn new(
        device: &wgpu::Device,
        color: wgpu::TextureFormat,
        depth: wgpu::TextureFormat,
    ) -> Self {
        Self::for_target(
            device,
            &DrawTarget {
                color,
                depth,
                samples: 1,
                depth_compare: wgpu::CompareFunction::Less,
            },
        )
    }

    /// The pipeline for `target`'s formats, sample count and depth test (Bevy's
    /// views: reversed depth, so `Greater`, and the camera's MSAA samples).
    pub fn for_target(device: &wgpu::Device, target: &DrawTarget) -> Self {
        let DrawTarget { color, depth, .. } = *target;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("farsight cluster draw"),
            source: wgpu::ShaderSource::Wgsl(DRAW_WGSL.into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight cluster draw"),
            entries: &entries(
                7,
                wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT,
                false,
            ),
        });
        let pull_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight vertex pull check"),
            entries: &entries(8, wgpu::ShaderStages::COMPUTE, true),
        });
        let pipeline_layout = |l: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("farsight cluster draw"),
                bind_group_layouts: &[Some(l)],
                immediate_size: 0,
            })
        };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("farsight cluster draw"),
            layout: Some(&pipeline_layout(&layout)),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vertex"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                cull_mode: None,
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: depth,
                depth_write_enabled: Some(true),
                depth_compare: Some(target.depth_compare),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: wgpu::MultisampleState {
                count: target.samples,
                ..Default::default()
            },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fragment"),
                compilation_options: Default::default(),
                targets: &[Some(color.into())],
            }),
            multiview_mask: None,
            cache: None,
        });
        let pull = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("farsight vertex pull check"),
            layout: Some(&pipeline_layout(&pull_layout)),
            module: &module,
            entry_point: Some("pull_all"),
            compilation_options: Default::default(),
            cache: None,
        });
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("farsight cluster draw view"),
            size: std::mem::size_of::<GpuDrawView>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self {
            layout,
            pipeline,
            pull_layout,
            pull,
            uniform,
        }
    }

    fn bind(
        &self,
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        pool: &PoolBuffers,
        instances: &InstanceTable,
        cut: &CutOutputs,
        extra: Option<&wgpu::Buffer>,
    ) -> wgpu::BindGroup {
        let buffers = [
            &self.uniform,
            &pool.clusters,
            &pool.models,
            &instances.buffer,
            &cut.visible,
            &pool.vertices,
            &pool.indices,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .into_iter()
            .chain(extra)
            .enumerate()
            .map(|(binding, b)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight cluster draw"),
            layout,
            entries: &entries,
        })
    }

    /// Records the draw of the cut's visible clusters into `pass` (one indirect
    /// draw, whatever the number of instances).
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pass: &mut wgpu::RenderPass<'_>,
        pool: &PoolBuffers,
        instances: &InstanceTable,
        cut: &CutOutputs,
        camera: &DrawCamera,
    ) {
        let view = GpuDrawView {
            clip_from_world: camera.clip_from_world.to_cols_array_2d(),
            light: camera.light.extend(0.0).to_array(),
            tint_levels: u32::from(camera.tint_levels),
            pad: [0; 3],
        };
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&view));
        let bind = self.bind(device, &self.layout, pool, instances, cut, None);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw_indirect(&cut.draw, 0);
    }

    /// Records the vertex pull of the first `clusters` visible clusters into
    /// `out` (two `vec4`s a slot vertex: model-space position and level, normal):
    /// the draw's own vertex fetch, for tests to compare with the file's vertices.
    #[allow(clippy::too_many_arguments)]
    pub fn pull_check(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        pool: &PoolBuffers,
        instances: &InstanceTable,
        cut: &CutOutputs,
        clusters: u32,
        out: &wgpu::Buffer,
    ) {
        let bind = self.bind(device, &self.pull_layout, pool, instances, cut, Some(out));
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&self.pull);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups((clusters * 384).div_ceil(64), 1, 1);
    }
}
