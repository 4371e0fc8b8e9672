//! The plugin's draw of the visible clusters with Bevy's own PBR shading.
//!
//! The pass stays a `Core3d` system of its own (the pools, the cut and the draw
//! are raw wgpu, and nothing of them goes through Bevy's phases), but its
//! pipeline is Bevy's: `PbrSpecializer` asks `MeshPipeline::specialize` for the
//! pipeline of a mesh with positions, normals, both uv sets, tangents and colours
//! under the view's `MeshPipelineKey` (from `ViewKeyCache`) and the material's
//! alpha mode, then `StandardMaterial::specialize` for the material's own key, and
//! swaps in the vertex stage of `pbr.wgsl`, which pulls the vertices from the
//! pools. The fragment stage is bevy_pbr's own `pbr.wgsl` (the
//! `StandardMaterial`'s fragment shader), so a cluster is lit, shadowed, fogged and
//! tonemapped by the same code as a mesh with the same material. The bind groups
//! are the ones that shader reads: 0 and 1 the view's (`MeshViewBindGroup`), 2 the
//! pools plus bevy_pbr's `mesh` array (one record: a shadow receiver), 3 the
//! material's, made by `StandardMaterial`'s `AsBindGroup` without bindless.
//!
//! Per material slot (a `StandardMaterial` some instance draws with) one indirect
//! draw: [`MaterialBins`] sorts the cut's visible list by slot on the GPU and
//! writes each slot's draw arguments. A material whose textures have not loaded
//! waits (its clusters are not drawn), as a Bevy mesh with it would.
//!
//! Phase items in Bevy's `Opaque3d` phase were the other way: they would sort and
//! batch with Bevy's meshes, but each item's draw goes through Bevy's mesh and
//! material bookkeeping (a mesh allocator slab, a material bind group slot per
//! entity), which an indirect draw of pooled clusters has none of; the pass after
//! the opaque pass keeps the cut, the sort and the draws in one command encoder.
//!
//! Shadows: [`ShadowDraw`] draws the clusters depth-only into every shadow map Bevy
//! renders, each after Bevy's own shadow pass drew its meshes there: the active
//! camera's directional cascades, every point light's six cube faces and every spot
//! light's map, each with its view's own `clip_from_world` (a cascade's depth
//! clamped onto its near plane as Bevy's prepass does; a point or spot view's
//! reversed perspective depth as the projection gives it, no bias, which the
//! receiver applies). All of them draw one cut for shadows a frame, the camera's
//! metric without the frustum test (so a model outside the camera's view casts, at
//! the level the camera would draw it); an instance with `NotShadowCaster` casts
//! nothing. The depth and normal prepasses: `super::prepass`. Not yet: a material's
//! cull mode in the shadow draw (it culls no face), render layers, transparent
//! materials drawn in order, lightmaps.

use bevy::asset::RenderAssetUsages;
use bevy::ecs::system::{StaticSystemParam, SystemParamItem};
use bevy::mesh::{Mesh, MeshVertexBufferLayoutRef, MeshVertexBufferLayouts, PrimitiveTopology};
use bevy::pbr::{
    alpha_mode_pipeline_key, MaterialPipeline, MaterialPipelineKey, MeshPipeline, MeshPipelineKey,
    StandardMaterialKey,
};
use bevy::prelude::*;
use bevy::render::render_resource::{
    AsBindGroup, AsBindGroupError, BindGroup, BindGroupLayoutDescriptor, CachedRenderPipelineId,
    OwnedBindingResource, PipelineCache, RenderPipelineDescriptor, SpecializedMeshPipeline,
    SpecializedRenderPipeline,
};
use bevy::render::renderer::RenderDevice;
use bevy::shader::ShaderDefVal;
use bytemuck::{Pod, Zeroable};
use glam::Mat4;

use super::cut::{CutOutputs, InstanceTable};
use super::pool::PoolBuffers;

/// The WGSL of the PBR draw's vertex stage (Bevy imports first, then the tables).
pub const PBR_WGSL: &str = concat!(
    include_str!("pbr.wgsl"),
    include_str!("tables.wgsl"),
    include_str!("pull.wgsl")
);

/// The WGSL of the sort by material slot.
pub const BINS_WGSL: &str = concat!(include_str!("tables.wgsl"), include_str!("bins.wgsl"));

/// The bind group of the material slot `material`.
const MATERIAL_GROUP: u32 = 3;

/// The uniform of one slot's draw (the WGSL struct `DrawSlot`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuDrawSlot {
    slot: u32,
    slot_count: u32,
    tint_levels: u32,
    pad: u32,
}

/// The uniform of the sort (the WGSL struct `BinParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuBinParams {
    slot_count: u32,
    capacity: u32,
    pad: [u32; 2],
}

/// bevy_pbr's `Mesh` record (176 bytes): the identity transform, a shadow
/// receiver with a positive determinant, material slot 0.
fn mesh_record() -> [u8; 176] {
    let mut words = [0u32; 44];
    // world_from_local and previous_world_from_local: 3x4, rows of the affine.
    for m in [0, 12] {
        words[m] = 1f32.to_bits();
        words[m + 5] = 1f32.to_bits();
        words[m + 10] = 1f32.to_bits();
    }
    // local_from_world_transpose_a (mat2x4) and _b: the identity's 3x3 packed.
    words[24] = 1f32.to_bits();
    words[28] = 1f32.to_bits();
    words[32] = 1f32.to_bits();
    // flags: SHADOW_RECEIVER | SIGN_DETERMINANT_MODEL_3X3.
    words[33] = (1 << 29) | (1 << 31);
    bytemuck::cast(words)
}

/// The sort of the visible list by material slot and the slots' indirect draws.
#[derive(Debug)]
pub struct MaterialBins {
    layout: wgpu::BindGroupLayout,
    plan_layout: wgpu::BindGroupLayout,
    plan: wgpu::ComputePipeline,
    count: wgpu::ComputePipeline,
    offsets: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    params: wgpu::Buffer,
    dispatch: wgpu::Buffer,
    /// Counts, starts and cursors of the slots.
    pub bins: wgpu::Buffer,
    /// A `DrawIndirectArgs` per slot.
    pub args: wgpu::Buffer,
    /// The visible pairs sorted by slot.
    pub sorted: wgpu::Buffer,
    /// The slots' draw uniforms, one every `stride` bytes.
    pub slot_uniforms: wgpu::Buffer,
    /// Bytes between two slots' uniforms (the device's uniform offset alignment).
    pub stride: u64,
    slots: u32,
    capacity: u32,
}

fn buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16),
        usage,
        mapped_at_creation: false,
    })
}

impl MaterialBins {
    /// The sort's pipelines, its buffers empty until [`MaterialBins::fit`] grows
    /// them.
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("farsight material bins"),
            source: wgpu::ShaderSource::Wgsl(BINS_WGSL.into()),
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
        use wgpu::BufferBindingType as T;
        let read = T::Storage { read_only: true };
        let write = T::Storage { read_only: false };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight material bins"),
            entries: &[
                entry(0, T::Uniform),
                entry(1, read),
                entry(2, read),
                entry(3, read),
                entry(4, read),
                entry(5, read),
                entry(6, write),
                entry(7, write),
                entry(8, write),
            ],
        });
        // The dispatch arguments are written in a pass of their own: a buffer
        // cannot be both written and read as indirect arguments in one pass.
        let plan_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight material bins plan"),
            entries: &[entry(0, T::Uniform), entry(1, read), entry(9, write)],
        });
        let pipeline = |entry_point, layout: &wgpu::BindGroupLayout| {
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("farsight material bins"),
                bind_group_layouts: &[Some(layout)],
                immediate_size: 0,
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("farsight material bins"),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        use wgpu::BufferUsages as U;
        let align = u64::from(device.limits().min_uniform_buffer_offset_alignment).max(1);
        let stride = (std::mem::size_of::<GpuDrawSlot>() as u64).div_ceil(align) * align;
        Self {
            plan: pipeline("plan", &plan_layout),
            count: pipeline("count", &layout),
            offsets: pipeline("offsets", &layout),
            scatter: pipeline("scatter", &layout),
            layout,
            plan_layout,
            params: buffer(device, "farsight bins params", 16, U::UNIFORM | U::COPY_DST),
            dispatch: buffer(
                device,
                "farsight bins dispatch",
                12,
                U::STORAGE | U::INDIRECT,
            ),
            bins: buffer(device, "farsight bins", 0, U::STORAGE | U::COPY_DST),
            args: buffer(device, "farsight slot draws", 0, U::STORAGE | U::INDIRECT),
            sorted: buffer(device, "farsight sorted visible", 0, U::STORAGE),
            slot_uniforms: buffer(
                device,
                "farsight slot uniforms",
                0,
                U::UNIFORM | U::COPY_DST,
            ),
            stride,
            slots: 0,
            capacity: 0,
        }
    }

    /// Grows the buffers to `slots` slots and the cut's `capacity`.
    pub fn fit(&mut self, device: &wgpu::Device, slots: u32, capacity: u32) {
        use wgpu::BufferUsages as U;
        if slots > self.slots {
            let n = u64::from(slots.next_power_of_two());
            self.bins = buffer(device, "farsight bins", 12 * n, U::STORAGE | U::COPY_DST);
            self.args = buffer(
                device,
                "farsight slot draws",
                16 * n,
                U::STORAGE | U::INDIRECT,
            );
            self.slot_uniforms = buffer(
                device,
                "farsight slot uniforms",
                self.stride * n,
                U::UNIFORM | U::COPY_DST,
            );
            self.slots = n as u32;
        }
        if capacity > self.capacity {
            self.sorted = buffer(
                device,
                "farsight sorted visible",
                8 * u64::from(capacity),
                U::STORAGE,
            );
            self.capacity = capacity;
        }
    }

    /// Writes the slots' uniforms: `slots` slots, levels tinted or not.
    pub fn write_slots(&self, queue: &wgpu::Queue, slots: u32, tint_levels: bool) {
        let mut bytes = vec![0u8; (self.stride * u64::from(slots)) as usize];
        for s in 0..slots {
            let at = (self.stride * u64::from(s)) as usize;
            let row = GpuDrawSlot {
                slot: s,
                slot_count: slots,
                tint_levels: u32::from(tint_levels),
                pad: 0,
            };
            bytes[at..at + 16].copy_from_slice(bytemuck::bytes_of(&row));
        }
        if !bytes.is_empty() {
            queue.write_buffer(&self.slot_uniforms, 0, &bytes);
        }
    }

    /// Records the sort of `cut`'s visible list into `slots` slots by the
    /// `material_map` (per model: first entry and count, then the entries).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        pool: &PoolBuffers,
        instances: &InstanceTable,
        cut: &CutOutputs,
        material_map: &wgpu::Buffer,
        slots: u32,
    ) {
        let params = GpuBinParams {
            slot_count: slots,
            capacity: cut.capacity.min(self.capacity),
            pad: [0; 2],
        };
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        encoder.clear_buffer(&self.bins, 0, None);
        let plan = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight material bins plan"),
            layout: &self.plan_layout,
            entries: &[(0, &self.params), (1, &cut.counter), (9, &self.dispatch)].map(
                |(binding, b)| wgpu::BindGroupEntry {
                    binding,
                    resource: b.as_entire_binding(),
                },
            ),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("farsight material bins plan"),
                timestamp_writes: None,
            });
            pass.set_bind_group(0, &plan, &[]);
            pass.set_pipeline(&self.plan);
            pass.dispatch_workgroups(1, 1, 1);
        }
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight material bins"),
            layout: &self.layout,
            entries: &[
                (0, &self.params),
                (1, &cut.counter),
                (2, &cut.visible),
                (3, &pool.clusters),
                (4, &instances.buffer),
                (5, material_map),
                (6, &self.bins),
                (7, &self.args),
                (8, &self.sorted),
            ]
            .map(|(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            }),
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("farsight material bins"),
            timestamp_writes: None,
        });
        pass.set_bind_group(0, &bind, &[]);
        pass.set_pipeline(&self.count);
        pass.dispatch_workgroups_indirect(&self.dispatch, 0);
        pass.set_pipeline(&self.offsets);
        pass.dispatch_workgroups(1, 1, 1);
        pass.set_pipeline(&self.scatter);
        pass.dispatch_workgroups_indirect(&self.dispatch, 0);
    }
}

/// Specializes the PBR draw's pipeline: Bevy's mesh pipeline and
/// `StandardMaterial`'s specialization with the vertex stage swapped for the
/// pulling one and group 2 for the pools.
#[derive(Clone)]
pub(crate) struct PbrSpecializer {
    mesh: MeshPipeline,
    /// The pulled vertex's attributes, as a mesh's (the prepass specializes over them too).
    pub layout: MeshVertexBufferLayoutRef,
    vertex: Handle<Shader>,
    fragment: Handle<Shader>,
    pub pool_layout: BindGroupLayoutDescriptor,
    pub material_layout: BindGroupLayoutDescriptor,
}

impl PbrSpecializer {
    /// The specializer over `mesh`, its vertex layout registered in `layouts`.
    pub fn new(
        mesh: MeshPipeline,
        layouts: &mut MeshVertexBufferLayouts,
        device: &RenderDevice,
        vertex: Handle<Shader>,
        fragment: Handle<Shader>,
    ) -> Self {
        // The attributes a pulled vertex has (the mesh's own buffers are unused).
        let layout = Mesh::new(
            PrimitiveTopology::TriangleList,
            RenderAssetUsages::RENDER_WORLD,
        )
        .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, vec![[0f32; 3]])
        .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, vec![[0f32; 3]])
        .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, vec![[0f32; 2]])
        .with_inserted_attribute(Mesh::ATTRIBUTE_UV_1, vec![[0f32; 2]])
        .with_inserted_attribute(Mesh::ATTRIBUTE_TANGENT, vec![[0f32; 4]])
        .with_inserted_attribute(Mesh::ATTRIBUTE_COLOR, vec![[0f32; 4]])
        .get_mesh_vertex_buffer_layout(layouts);
        let storage = |binding, stages| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: stages,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let v = wgpu::ShaderStages::VERTEX;
        let mut pool = vec![storage(0, wgpu::ShaderStages::VERTEX_FRAGMENT)];
        pool.extend((1..8).map(|b| storage(b, v)));
        pool.push(wgpu::BindGroupLayoutEntry {
            binding: 8,
            visibility: v,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(16),
            },
            count: None,
        });
        Self {
            mesh,
            layout,
            vertex,
            fragment,
            pool_layout: BindGroupLayoutDescriptor::new("farsight cluster pools", &pool),
            material_layout: BindGroupLayoutDescriptor::new(
                "farsight cluster material",
                &StandardMaterial::bind_group_layout_entries(device, true),
            ),
        }
    }
}

impl SpecializedRenderPipeline for PbrSpecializer {
    type Key = (MeshPipelineKey, StandardMaterialKey);

    fn specialize(&self, (mesh_key, material_key): Self::Key) -> RenderPipelineDescriptor {
        let mut d = self
            .mesh
            .specialize(mesh_key, &self.layout)
            .expect("the pulled vertex's attributes are all known to the mesh pipeline");
        let group = ShaderDefVal::UInt("MATERIAL_BIND_GROUP".into(), MATERIAL_GROUP);
        d.vertex.shader = self.vertex.clone();
        d.vertex.entry_point = Some("vertex".into());
        d.vertex.buffers.clear();
        d.vertex.shader_defs.push(group.clone());
        if let Some(f) = d.fragment.as_mut() {
            f.shader = self.fragment.clone();
            f.shader_defs.push(group);
        }
        d.layout.truncate(2);
        d.layout.push(self.pool_layout.clone());
        d.layout.push(self.material_layout.clone());
        let pipeline = MaterialPipeline {
            mesh_pipeline: self.mesh.clone(),
        };
        let key = MaterialPipelineKey::<StandardMaterial> {
            mesh_key,
            bind_group_data: material_key,
        };
        <StandardMaterial as bevy::pbr::Material>::specialize(&pipeline, &mut d, &self.layout, key)
            .expect("StandardMaterial's specialization does not fail");
        d.label = Some("farsight cluster pbr".into());
        d
    }
}

/// One material slot: a `StandardMaterial` some instance draws with.
pub(crate) struct Slot {
    pub id: AssetId<StandardMaterial>,
    /// The material as last extracted (`None` until its asset exists).
    pub material: Option<StandardMaterial>,
    pub bind_group: Option<BindGroup>,
    pub pipeline: Option<(MeshPipelineKey, CachedRenderPipelineId)>,
}

/// The render world's side of the PBR draw.
#[derive(Resource)]
pub(crate) struct PbrDraw {
    pub vertex: Handle<Shader>,
    pub fragment: Handle<Shader>,
    pub specializer: Option<PbrSpecializer>,
    pub slots: Vec<Slot>,
    /// Per model two words (first entry, count), then the entries.
    pub material_map: Vec<u32>,
    pub map_buffer: Option<wgpu::Buffer>,
    pub bins: Option<MaterialBins>,
    /// bevy_pbr's `mesh` array of one record.
    pub mesh_record: Option<wgpu::Buffer>,
    /// The main world's slot generation these slots are from.
    pub generation: u64,
}

impl PbrDraw {
    pub fn new(vertex: Handle<Shader>, fragment: Handle<Shader>) -> Self {
        Self {
            vertex,
            fragment,
            specializer: None,
            slots: Vec::new(),
            material_map: Vec::new(),
            map_buffer: None,
            bins: None,
            mesh_record: None,
            generation: 0,
        }
    }

    /// Replaces the slots (kept where the same material stays in the same slot)
    /// and the material map.
    pub fn set_slots(&mut self, ids: &[AssetId<StandardMaterial>], map: Vec<u32>) {
        let mut old: Vec<Option<Slot>> = std::mem::take(&mut self.slots)
            .into_iter()
            .map(Some)
            .collect();
        self.slots = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                old.get_mut(i)
                    .and_then(|s| s.take_if(|s| s.id == id))
                    .unwrap_or(Slot {
                        id,
                        material: None,
                        bind_group: None,
                        pipeline: None,
                    })
            })
            .collect();
        self.material_map = map;
        self.map_buffer = None;
    }
}

/// Compiles (through the pipeline cache) the pipelines of the slots for the view
/// whose key is `view_key`.
pub(crate) fn specialize_slots(
    draw: &mut PbrDraw,
    view_key: MeshPipelineKey,
    cache: &PipelineCache,
    pipelines: &mut bevy::render::render_resource::SpecializedRenderPipelines<PbrSpecializer>,
) {
    let Some(spec) = draw.specializer.as_ref() else {
        return;
    };
    let msaa = Msaa::from_samples(view_key.msaa_samples());
    for slot in &mut draw.slots {
        let Some(m) = slot.material.as_ref() else {
            continue;
        };
        let mesh_key = view_key
            | MeshPipelineKey::from_primitive_topology_and_strip_index(
                PrimitiveTopology::TriangleList,
                None,
            )
            | alpha_mode_pipeline_key(m.alpha_mode, &msaa);
        if slot.pipeline.is_some_and(|(k, _)| k == mesh_key) {
            continue;
        }
        let key = (mesh_key, m.bind_group_data());
        slot.pipeline = Some((mesh_key, pipelines.specialize(cache, spec, key)));
    }
}

/// Makes the bind groups of slots whose material has none yet (one whose images
/// have not loaded waits for them).
pub(crate) fn prepare_slot_bind_groups(
    draw: &mut PbrDraw,
    device: &RenderDevice,
    cache: &PipelineCache,
    param: &mut SystemParamItem<'_, '_, <StandardMaterial as AsBindGroup>::Param>,
) {
    let Some(spec) = draw.specializer.as_ref() else {
        return;
    };
    let layout = cache.get_bind_group_layout(&spec.material_layout);
    for slot in &mut draw.slots {
        let (Some(m), None) = (slot.material.as_ref(), slot.bind_group.as_ref()) else {
            continue;
        };
        match m.unprepared_bind_group(&layout, device, param, true) {
            Ok(unprepared) => {
                // The factors come as bytes (`#[data]`): a uniform buffer each.
                let data: Vec<Option<wgpu::Buffer>> = unprepared
                    .bindings
                    .iter()
                    .map(|(_, resource)| match resource {
                        OwnedBindingResource::Data(bytes) => Some(uniform_buffer(device, bytes)),
                        _ => None,
                    })
                    .collect();
                let entries: Vec<wgpu::BindGroupEntry> = unprepared
                    .bindings
                    .iter()
                    .zip(&data)
                    .map(|((binding, resource), data)| wgpu::BindGroupEntry {
                        binding: *binding,
                        resource: match data {
                            Some(b) => b.as_entire_binding(),
                            None => resource.get_binding(),
                        },
                    })
                    .collect();
                slot.bind_group =
                    Some(device.create_bind_group("farsight cluster material", &layout, &entries));
            }
            Err(AsBindGroupError::RetryNextUpdate) => {}
            Err(e) => {
                error!("farsight GPU path: material {:?} not drawn: {e}", slot.id);
                slot.material = None;
            }
        }
    }
}

/// A uniform buffer holding `bytes`.
fn uniform_buffer(device: &RenderDevice, bytes: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    device
        .wgpu_device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("farsight cluster material factors"),
            contents: bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

/// The system parameter [`prepare_slot_bind_groups`] needs.
pub(crate) type MaterialParam<'w, 's> =
    StaticSystemParam<'w, 's, <StandardMaterial as AsBindGroup>::Param>;

/// The mesh record buffer (made once).
pub(crate) fn mesh_record_buffer(device: &wgpu::Device) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("farsight cluster mesh record"),
        contents: &mesh_record(),
        usage: wgpu::BufferUsages::STORAGE,
    })
}

/// The material map's buffer (made when the slots change).
pub(crate) fn map_buffer(device: &wgpu::Device, map: &[u32]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let words: Vec<u32> = if map.is_empty() {
        vec![0; 4]
    } else {
        map.to_vec()
    };
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("farsight material map"),
        contents: bytemuck::cast_slice(&words),
        usage: wgpu::BufferUsages::STORAGE,
    })
}

/// Group 2 of the PBR draw and of the prepass draw: bevy_pbr's `mesh` record,
/// the pools, the instance table, the visible list sorted by slot, the slots'
/// counts and a slot's uniform (its dynamic offset picks the slot).
pub(crate) fn pool_bind_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    record: &wgpu::Buffer,
    pools: &PoolBuffers,
    instances: &InstanceTable,
    bins: &MaterialBins,
) -> wgpu::BindGroup {
    let buffers = [
        record,
        &pools.clusters,
        &pools.models,
        &instances.buffer,
        &bins.sorted,
        &pools.vertices,
        &pools.indices,
        &bins.bins,
    ];
    let mut entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(binding, b)| wgpu::BindGroupEntry {
            binding: binding as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    entries.push(wgpu::BindGroupEntry {
        binding: 8,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &bins.slot_uniforms,
            offset: 0,
            size: wgpu::BufferSize::new(16),
        }),
    });
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("farsight cluster pools"),
        layout,
        entries: &entries,
    })
}

/// The WGSL of the shadow cast (after the shared tables and the vertex pull).
pub const SHADOW_WGSL: &str = concat!(
    include_str!("tables.wgsl"),
    include_str!("pull.wgsl"),
    include_str!("shadow.wgsl")
);

/// One shadow view's uniform (the WGSL struct `ShadowView`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuShadowView {
    clip_from_world: [[f32; 4]; 4],
    orthographic: u32,
    pad: [u32; 3],
}

/// The clusters into lights' shadow maps (directional cascades, point lights' cube
/// faces, spot lights' maps): a depth-only pipeline over the vertex pull, one
/// indirect draw per shadow view of a cut made for shadows (the camera's metric
/// without its frustum test).
#[derive(Debug)]
pub struct ShadowDraw {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    views: wgpu::Buffer,
    stride: u64,
    capacity: u32,
}

impl ShadowDraw {
    /// The pipeline for shadow maps of `depth` format (reversed depth, as Bevy's).
    pub fn new(device: &wgpu::Device, depth: wgpu::TextureFormat) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("farsight cluster shadows"),
            source: wgpu::ShaderSource::Wgsl(SHADOW_WGSL.into()),
        });
        let entry = |binding, ty, dynamic| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: dynamic,
                min_binding_size: None,
            },
            count: None,
        };
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let mut entries = vec![entry(0, wgpu::BufferBindingType::Uniform, true)];
        entries.extend((1..7).map(|b| entry(b, read, false)));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("farsight cluster shadows"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("farsight cluster shadows"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("farsight cluster shadows"),
            layout: Some(&pipeline_layout),
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
                depth_compare: Some(wgpu::CompareFunction::GreaterEqual),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: None,
            multiview_mask: None,
            cache: None,
        });
        let align = u64::from(device.limits().min_uniform_buffer_offset_alignment).max(1);
        let stride = (std::mem::size_of::<GpuShadowView>() as u64).div_ceil(align) * align;
        Self {
            layout,
            pipeline,
            views: buffer(
                device,
                "farsight shadow views",
                0,
                wgpu::BufferUsages::UNIFORM,
            ),
            stride,
            capacity: 0,
        }
    }

    /// Writes the shadow views' matrices (`(clip_from_world, orthographic)`), the
    /// buffer grown to hold them.
    pub fn write_views(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        views: &[(Mat4, bool)],
    ) {
        let n = views.len() as u32;
        if n > self.capacity {
            self.capacity = n.next_power_of_two();
            self.views = buffer(
                device,
                "farsight shadow views",
                self.stride * u64::from(self.capacity),
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            );
        }
        let mut bytes = vec![0u8; (self.stride * u64::from(n)) as usize];
        for (i, (m, ortho)) in views.iter().enumerate() {
            let row = GpuShadowView {
                clip_from_world: m.to_cols_array_2d(),
                orthographic: u32::from(*ortho),
                pad: [0; 3],
            };
            let at = i * self.stride as usize;
            bytes[at..at + std::mem::size_of::<GpuShadowView>()]
                .copy_from_slice(bytemuck::bytes_of(&row));
        }
        if !bytes.is_empty() {
            queue.write_buffer(&self.views, 0, &bytes);
        }
    }

    /// The bind group over the pools and a shadow cut's outputs.
    pub fn bind(
        &self,
        device: &wgpu::Device,
        pool: &PoolBuffers,
        instances: &InstanceTable,
        cut: &CutOutputs,
    ) -> wgpu::BindGroup {
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.views,
                offset: 0,
                size: wgpu::BufferSize::new(std::mem::size_of::<GpuShadowView>() as u64),
            }),
        }];
        let buffers = [
            &pool.clusters,
            &pool.models,
            &instances.buffer,
            &cut.visible,
            &pool.vertices,
            &pool.indices,
        ];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight cluster shadows"),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Records the draw of `cut`'s clusters into shadow view `view` (its index in
    /// the last [`ShadowDraw::write_views`]).
    pub fn draw(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        bind: &wgpu::BindGroup,
        cut: &CutOutputs,
        view: u32,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[(self.stride * u64::from(view)) as u32]);
        pass.draw_indirect(&cut.draw, 0);
    }
}
