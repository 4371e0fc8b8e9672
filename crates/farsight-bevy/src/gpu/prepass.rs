//! The visible clusters in Bevy's depth, normal and motion-vector prepasses.
//!
//! A camera with `DepthPrepass` or `NormalPrepass` has its prepass textures read by
//! SSAO, screen-space reflections, `LOAD_PREPASS_NORMALS` shading (the main pass
//! of a normal-prepass view takes its normals from the prepass texture) and user
//! effects. Bevy's prepass draws Bevy's meshes only; this module's `draw` adds the clusters
//! the cut chose for the view, one indirect draw per material slot, into the same
//! textures.
//!
//! The pipeline is Bevy's prepass pipeline: `PrepassPipelineSpecializer` (with
//! the `StandardMaterial`'s prepass fragment shader, `pbr_prepass.wgsl`) under the
//! view's prepass key (`ViewKeyPrepassCache`) and the slot's alpha mode, then
//! `StandardMaterial::specialize` for the material's key, with the vertex stage
//! swapped for the pulling one of `pbr.wgsl` (under `PREPASS_PIPELINE` it writes
//! the prepass's `VertexOutput`) and group 2 for the pools. So the normal is the
//! one Bevy's prepass writes for a mesh of that material (normal map and double
//! sidedness included, encoded `n * 0.5 + 0.5` into `Rgb10a2Unorm`), alpha-mask
//! materials discard as Bevy's do, and the clip position is computed by the same
//! code as the main pass's, whose equal depth test then passes. Groups 0 and 1 are
//! Bevy's (`PrepassViewBindGroup`), 3 the slot's material bind group.
//!
//! Order in `Core3d`: in `Core3dSystems::Prepass`, after Bevy's `late_prepass`
//! (the last prepass that draws into these textures: the early one clears them)
//! and after the cut (`cut_and_cast`, which runs after Bevy's shadow pass), so
//! before SSAO (`after(Core3dSystems::Prepass)`), the deferred lighting and the
//! main pass. The clusters go into the view's depth texture and the normal
//! texture, and the depth texture is then copied again into the prepass depth
//! texture, as Bevy's prepass does.
//!
//! Motion vectors (a camera with `MotionVectorPrepass`: TAA and motion blur read
//! them): the pipeline keeps the view's `MOTION_VECTOR_PREPASS`, group 0 is
//! Bevy's motion-vector view bind group (the previous view's uniforms at the
//! view's `PreviousViewUniformOffset`), and group 1, empty in Bevy's prepass,
//! holds `PreviousRows`: per instance slot its transform on the frame before,
//! kept at the cost of what changed (no per-frame work over every instance). The
//! vertex stage hands the prepass fragment shader the vertex's previous world
//! position as Bevy's prepass does with a mesh's `previous_world_from_local`, and
//! the fragment shader writes the motion against the previous view. A new
//! instance has no motion on its first frame, as Bevy's meshes. A device with
//! fewer than nine storage buffers in a vertex stage gets no cluster motion
//! vectors (and no cluster prepass on a motion-vector camera).
//!
//! Not drawn: the deferred G-buffer (`DeferredPrepass`), and transparent or
//! transmissive materials (Bevy leaves those out of the prepass too).

use std::any::TypeId;
use std::sync::Arc;

use bevy::core_pipeline::prepass::{PreviousViewUniformOffset, ViewPrepassTextures};
use bevy::material::key::{ErasedMaterialKey, ErasedMaterialPipelineKey, ErasedMeshPipelineKey};
use bevy::material::MaterialProperties;
use bevy::mesh::{MeshVertexBufferLayoutRef, PrimitiveTopology};
use bevy::pbr::{
    alpha_mode_pipeline_key, Material, MaterialPipelineKey, MeshPipelineKey, PrepassFragmentShader,
    PrepassPipeline, PrepassPipelineSpecializer, PrepassViewBindGroup, StandardMaterialKey,
    ViewKeyPrepassCache,
};
use bevy::prelude::*;
use bevy::render::render_resource::{
    AsBindGroup, BindGroupLayoutDescriptor, CachedRenderPipelineId, PipelineCache,
    RenderPipelineDescriptor, SpecializedMeshPipeline, SpecializedRenderPipeline,
    SpecializedRenderPipelines, StoreOp,
};
use bevy::render::renderer::{RenderContext, ViewQuery};
use bevy::render::sync_world::MainEntity;
use bevy::render::view::{ExtractedView, ViewDepthTexture, ViewUniformOffset};

use super::pbr::{self, PbrDraw, PbrSpecializer};
use super::plugin::GpuRender;

/// Specializes the prepass pipeline of a material slot: Bevy's prepass pipeline
/// and `StandardMaterial`'s specialization, the vertex stage the pulling one.
#[derive(Clone)]
pub(crate) struct PrepassSpecializer {
    prepass: PrepassPipeline,
    layout: MeshVertexBufferLayoutRef,
    vertex: Handle<Shader>,
    fragment: Handle<Shader>,
    pool_layout: BindGroupLayoutDescriptor,
    material_layout: BindGroupLayoutDescriptor,
    /// Group 1 of a motion-vector pipeline: the previous rows.
    previous_layout: BindGroupLayoutDescriptor,
}

impl PrepassSpecializer {
    /// Over Bevy's prepass pipeline and the PBR draw's vertex stage and layouts,
    /// with the `StandardMaterial`'s prepass fragment shader (loaded as Bevy's
    /// materials load it).
    fn new(
        prepass: PrepassPipeline,
        pbr: &PbrSpecializer,
        vertex: Handle<Shader>,
        assets: &AssetServer,
    ) -> Self {
        let fragment = match StandardMaterial::prepass_fragment_shader() {
            bevy::shader::ShaderRef::Handle(h) => h,
            bevy::shader::ShaderRef::Path(path) => assets.load(path),
            // Bevy's prepass would fall back to its own default prepass shader.
            bevy::shader::ShaderRef::Default => prepass.default_prepass_shader.clone(),
        };
        Self {
            layout: pbr.layout.clone(),
            vertex,
            fragment,
            pool_layout: pbr.pool_layout.clone(),
            material_layout: pbr.material_layout.clone(),
            previous_layout: BindGroupLayoutDescriptor::new(
                "farsight previous instance rows",
                &[wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: true },
                        has_dynamic_offset: false,
                        min_binding_size: wgpu::BufferSize::new(PREVIOUS_ROW),
                    },
                    count: None,
                }],
            ),
            prepass,
        }
    }
}

impl SpecializedRenderPipeline for PrepassSpecializer {
    type Key = (MeshPipelineKey, StandardMaterialKey);

    fn specialize(&self, (mesh_key, material_key): Self::Key) -> RenderPipelineDescriptor {
        // What Bevy's prepass reads of a prepared material: its layout (without
        // bindless: the slots' bind groups are plain) and its prepass shader.
        let mut properties = MaterialProperties {
            material_layout: Some(self.material_layout.clone()),
            prepass_enabled: true,
            ..default()
        };
        properties.add_shader(PrepassFragmentShader, self.fragment.clone());
        let bevy_prepass = PrepassPipelineSpecializer {
            pipeline: self.prepass.clone(),
            properties: Arc::new(properties),
        };
        let key = ErasedMaterialPipelineKey {
            mesh_key: ErasedMeshPipelineKey::new(mesh_key),
            material_key: ErasedMaterialKey::new(material_key),
            type_id: TypeId::of::<StandardMaterial>(),
        };
        let mut d = bevy_prepass
            .specialize(key, &self.layout)
            .expect("the pulled vertex's attributes are all known to the prepass pipeline");
        d.vertex.shader = self.vertex.clone();
        d.vertex.entry_point = Some("vertex".into());
        d.vertex.buffers.clear();
        d.layout.truncate(2);
        if mesh_key.contains(MeshPipelineKey::MOTION_VECTOR_PREPASS) {
            // Bevy's empty group 1 holds the previous rows.
            d.layout[1] = self.previous_layout.clone();
        }
        d.layout.push(self.pool_layout.clone());
        d.layout.push(self.material_layout.clone());
        let key = MaterialPipelineKey::<StandardMaterial> {
            mesh_key,
            bind_group_data: material_key,
        };
        StandardMaterial::specialize(&self.prepass.material_pipeline, &mut d, &self.layout, key)
            .expect("StandardMaterial's specialization does not fail");
        d.label = Some("farsight cluster prepass".into());
        d
    }
}

/// The render world's side of the prepass draw.
#[derive(Resource, Default)]
pub(crate) struct PrepassDraw {
    specializer: Option<PrepassSpecializer>,
    /// Per material slot its prepass pipeline (`None`: the slot's material is not
    /// in the prepass, or not loaded).
    pipelines: Vec<Option<CachedRenderPipelineId>>,
    /// The pipelines write motion vectors.
    motion: bool,
}

/// The prepass key of the slot's material under the view's prepass key `view`,
/// `None` where Bevy leaves such a material out of the prepass (blended,
/// transmissive). The G-buffer is not drawn; motion vectors are where `motion`.
fn slot_key(
    view: MeshPipelineKey,
    m: &StandardMaterial,
    msaa: &Msaa,
    motion: bool,
) -> Option<MeshPipelineKey> {
    match m.alpha_mode {
        AlphaMode::Opaque | AlphaMode::AlphaToCoverage | AlphaMode::Mask(_) => {}
        _ => return None,
    }
    if m.reads_view_transmission_texture() {
        return None;
    }
    let mut dropped = MeshPipelineKey::DEFERRED_PREPASS;
    if !motion {
        dropped |= MeshPipelineKey::MOTION_VECTOR_PREPASS;
    }
    Some(
        view.difference(dropped)
            | MeshPipelineKey::from_primitive_topology_and_strip_index(
                PrimitiveTopology::TriangleList,
                None,
            )
            | alpha_mode_pipeline_key(m.alpha_mode, msaa)
            // The StandardMaterial's prepass shader reads the material.
            | MeshPipelineKey::PREPASS_READS_MATERIAL,
    )
}

/// The vertex stage's storage buffers with the previous rows: the pools' eight
/// and one. A device with fewer draws no motion vectors for the clusters.
const MOTION_STORAGE_BUFFERS: u32 = 9;

/// Render, `Queue`: the slots' prepass pipelines for the active camera's view,
/// where that view has a depth, normal or motion-vector prepass.
#[allow(clippy::too_many_arguments)]
pub(crate) fn queue(
    r: Res<GpuRender>,
    pbr: Res<PbrDraw>,
    mut draw: ResMut<PrepassDraw>,
    views: Query<(&ExtractedView, &Msaa)>,
    keys: Option<Res<ViewKeyPrepassCache>>,
    prepass: Option<Res<PrepassPipeline>>,
    assets: Option<Res<AssetServer>>,
    cache: Res<PipelineCache>,
    mut pipelines: ResMut<SpecializedRenderPipelines<PrepassSpecializer>>,
    device: Res<bevy::render::renderer::RenderDevice>,
) {
    let draw = &mut *draw;
    draw.pipelines.clear();
    if draw.specializer.is_none() {
        let (Some(prepass), Some(spec), Some(assets)) = (prepass, pbr.specializer.as_ref(), assets)
        else {
            return;
        };
        draw.specializer = Some(PrepassSpecializer::new(
            prepass.clone(),
            spec,
            pbr.vertex.clone(),
            &assets,
        ));
    }
    let (Some(spec), Some(keys), Some(active)) = (draw.specializer.as_ref(), keys, r.active_view())
    else {
        return;
    };
    let Some((view_key, msaa)) = views
        .iter()
        .find(|(e, _)| e.retained_view_entity.main_entity == MainEntity::from(active))
        .and_then(|(e, msaa)| Some((*keys.get(&e.retained_view_entity)?, msaa)))
    else {
        return;
    };
    if !view_key.intersects(
        MeshPipelineKey::DEPTH_PREPASS
            | MeshPipelineKey::NORMAL_PREPASS
            | MeshPipelineKey::MOTION_VECTOR_PREPASS,
    ) {
        return;
    }
    let motion = device.limits().max_storage_buffers_per_shader_stage >= MOTION_STORAGE_BUFFERS;
    draw.motion = motion && view_key.contains(MeshPipelineKey::MOTION_VECTOR_PREPASS);
    draw.pipelines = pbr
        .slots
        .iter()
        .map(|slot| {
            let m = slot.material.as_ref()?;
            let key = slot_key(view_key, m, msaa, motion)?;
            Some(pipelines.specialize(&cache, spec, (key, m.bind_group_data())))
        })
        .collect();
}

/// `Core3d`, in `Core3dSystems::Prepass` after Bevy's prepasses and the cut: the
/// active camera's visible clusters into its depth and normal prepass textures,
/// one indirect draw per material slot.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw(
    view: ViewQuery<(
        &ExtractedView,
        &ViewDepthTexture,
        &ViewPrepassTextures,
        &ViewUniformOffset,
        Option<&PreviousViewUniformOffset>,
    )>,
    mut r: ResMut<GpuRender>,
    mut pbr: ResMut<PbrDraw>,
    draw: Res<PrepassDraw>,
    previous: Res<PreviousRows>,
    view_groups: Option<Res<PrepassViewBindGroup>>,
    cache: Res<PipelineCache>,
    mut ctx: RenderContext,
) {
    let (extracted, depth, textures, offset, previous_offset) = view.into_inner();
    if draw.pipelines.iter().all(Option::is_none)
        || (textures.depth.is_none()
            && textures.normal.is_none()
            && textures.motion_vectors.is_none())
    {
        return;
    }
    // Group 0: the view (and, with motion vectors, the previous view).
    let Some(groups) = view_groups.as_ref() else {
        return;
    };
    let view_group = match (draw.motion, previous_offset) {
        (true, Some(p)) => groups
            .motion_vectors
            .as_ref()
            .map(|g| (g, vec![offset.offset, p.offset])),
        (true, None) => None,
        (false, _) => groups
            .no_motion_vectors
            .as_ref()
            .map(|g| (g, vec![offset.offset])),
    };
    let (Some((view_group, view_offsets)), Some(previous_rows)) =
        (view_group, previous.buffer.as_ref())
    else {
        return;
    };
    let Some((active, device, pools, instances)) = r.draw_inputs() else {
        return;
    };
    if extracted.retained_view_entity.main_entity != MainEntity::from(active) {
        return;
    }
    let pbr = &mut *pbr;
    let (Some(spec), Some(bins)) = (pbr.specializer.as_ref(), pbr.bins.as_ref()) else {
        return;
    };
    let record = pbr
        .mesh_record
        .get_or_insert_with(|| pbr::mesh_record_buffer(device));
    let pool_layout = cache.get_bind_group_layout(&spec.pool_layout);
    let pool_group = pbr::pool_bind_group(device, &pool_layout, record, pools, instances, bins);
    // Group 1: Bevy's empty group, or the previous rows.
    let previous_group;
    let group1 = if let (true, Some(layout)) = (
        draw.motion,
        draw.specializer.as_ref().map(|s| &s.previous_layout),
    ) {
        previous_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("farsight previous instance rows"),
            layout: &cache.get_bind_group_layout(layout),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: previous_rows.as_entire_binding(),
            }],
        });
        &previous_group
    } else {
        &*groups.empty_bind_group
    };
    // The attachments Bevy's prepass has (normals, motion vectors, then the
    // G-buffer's two), so that its targets and the pipelines' agree.
    let mut color_attachments = vec![
        textures.normal.as_ref().map(|t| t.get_attachment()),
        textures.motion_vectors.as_ref().map(|t| t.get_attachment()),
        None,
        None,
    ];
    if color_attachments.iter().all(Option::is_none) {
        color_attachments.clear();
    }
    let encoder = ctx.command_encoder();
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("farsight cluster prepass"),
        color_attachments: &color_attachments,
        depth_stencil_attachment: Some(depth.get_attachment(StoreOp::Store)),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    pass.set_bind_group(0, &**view_group, &view_offsets);
    pass.set_bind_group(1, group1, &[]);
    for (s, (slot, id)) in pbr.slots.iter().zip(&draw.pipelines).enumerate() {
        let (Some(group), Some(id)) = (slot.bind_group.as_ref(), id) else {
            continue;
        };
        let Some(pipeline) = cache.get_render_pipeline(*id) else {
            continue;
        };
        pass.set_pipeline(pipeline);
        pass.set_bind_group(2, &pool_group, &[(s as u64 * bins.stride) as u32]);
        pass.set_bind_group(3, &**group, &[]);
        pass.draw_indirect(&bins.args, 16 * s as u64);
    }
    drop(pass);
    // The prepass depth texture is a copy of the view's depth (Bevy's prepass,
    // or its deferred prepass, copied it before the clusters were in it).
    if let Some(prepass_depth) = &textures.depth {
        encoder.copy_texture_to_texture(
            depth.texture.as_image_copy(),
            prepass_depth.texture.texture.as_image_copy(),
            textures.size,
        );
    }
}

/// A test hook (the sabotaged run of `tests/it/gpu_prepass.rs`): where this
/// resource is in the render world, every instance's previous transform is its
/// current one, so moving instances draw no motion of their own.
#[doc(hidden)]
#[derive(Resource, Clone, Copy, Debug, Default)]
pub struct StillPreviousRows;

/// The instances' previous transforms (the motion vectors' `previous_world_from_local`):
/// per slot the three affine rows it had on the frame before, on the GPU.
///
/// Kept at the cost of what changed: each frame the slots written this frame get
/// their instance's transform before the write (`GpuMain::previous`; none for a
/// new instance, whose previous is its current: no motion on its first frame, as
/// Bevy's meshes), and the slots written last frame get their current transform
/// (they stopped moving, or are overwritten by this frame's write). A slot moved
/// by a despawn's swap-removal is written this frame, so its new instance's
/// previous is that instance's own. All rows are written only when the buffer
/// grows.
#[derive(Resource, Default)]
pub(crate) struct PreviousRows {
    buffer: Option<wgpu::Buffer>,
    capacity: u32,
    /// Rows to write this frame, `(slot, rows)`, later ones winning.
    writes: Vec<(u32, [[f32; 4]; 3])>,
    /// The buffer is to be made again at `capacity`.
    grow: bool,
    /// Slots written last frame.
    last: Vec<u32>,
    /// One run of rows, as written.
    run: Vec<[[f32; 4]; 3]>,
}

/// Bytes of one previous row.
const PREVIOUS_ROW: u64 = 48;

/// `ExtractSchedule`, after the plugin's extract: the previous rows this frame
/// changes.
pub(crate) fn extract_previous(
    main: bevy::render::Extract<Res<super::plugin::GpuMain>>,
    still: Option<Res<StillPreviousRows>>,
    mut rows: ResMut<PreviousRows>,
) {
    let rows = &mut *rows;
    let current = |s: u32| main.placed.get(s as usize).map(|p| affine_rows(&p.1));
    rows.writes.clear();
    let len = main.placed.len() as u32;
    if len > rows.capacity {
        rows.capacity = len.next_power_of_two();
        rows.grow = true;
        rows.writes
            .extend((0..len).filter_map(|s| Some((s, current(s)?))));
    } else {
        for &s in &rows.last {
            if let Some(r) = current(s) {
                rows.writes.push((s, r));
            }
        }
    }
    rows.last.clear();
    for &s in &main.changed {
        if let Some(r) = current(s) {
            rows.writes.push((s, r));
            rows.last.push(s);
        }
    }
    if still.is_none() {
        for (s, t) in &main.previous {
            rows.writes.push((*s, affine_rows(t)));
        }
    }
}

/// The first three rows of `t`, as the instance table holds them.
fn affine_rows(t: &bevy::math::Affine3A) -> [[f32; 4]; 3] {
    let m = Mat4::from(*t);
    [0, 1, 2].map(|i| m.row(i).to_array())
}

/// Render, `PrepareResources`: this frame's previous rows written, one
/// `write_buffer` per run of consecutive slots.
pub(crate) fn write_previous(
    mut rows: ResMut<PreviousRows>,
    device: Res<bevy::render::renderer::RenderDevice>,
    queue: Res<bevy::render::renderer::RenderQueue>,
) {
    let rows = &mut *rows;
    if rows.grow || rows.buffer.is_none() {
        rows.grow = false;
        rows.buffer = Some(device.wgpu_device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("farsight previous instance rows"),
            size: u64::from(rows.capacity.max(1)) * PREVIOUS_ROW,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }));
    }
    let Some(buffer) = rows.buffer.as_ref() else {
        return;
    };
    // By slot, the last write of a slot winning (the sort is stable).
    rows.writes.sort_by_key(|w| w.0);
    let mut i = 0;
    while i < rows.writes.len() {
        let first = rows.writes[i].0;
        rows.run.clear();
        let mut next = first;
        while i < rows.writes.len() && rows.writes[i].0 <= next {
            let (s, r) = rows.writes[i];
            if s + 1 == next {
                // A later write of the slot just taken.
                *rows.run.last_mut().expect("a row of the run") = r;
            } else {
                rows.run.push(r);
                next = s + 1;
            }
            i += 1;
        }
        queue.write_buffer(
            buffer,
            u64::from(first) * PREVIOUS_ROW,
            bytemuck::cast_slice(&rows.run),
        );
    }
}
