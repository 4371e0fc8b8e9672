//! The visible clusters in Bevy's depth and normal prepasses.
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
//! Not drawn: motion vectors (an instance row holds its transform, not last
//! frame's, so a moving instance's motion is unknown: the pipeline is
//! specialized without `MOTION_VECTOR_PREPASS` and the clusters' pixels keep
//! what Bevy wrote there), the deferred G-buffer (`DeferredPrepass`), and
//! transparent or transmissive materials (Bevy leaves those out of the prepass
//! too).

use std::any::TypeId;
use std::sync::Arc;

use bevy::core_pipeline::prepass::ViewPrepassTextures;
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
}

/// The prepass key of the slot's material under the view's prepass key `view`,
/// `None` where Bevy leaves such a material out of the prepass (blended,
/// transmissive). Motion vectors and the G-buffer are not drawn.
fn slot_key(view: MeshPipelineKey, m: &StandardMaterial, msaa: &Msaa) -> Option<MeshPipelineKey> {
    match m.alpha_mode {
        AlphaMode::Opaque | AlphaMode::AlphaToCoverage | AlphaMode::Mask(_) => {}
        _ => return None,
    }
    if m.reads_view_transmission_texture() {
        return None;
    }
    Some(
        view.difference(MeshPipelineKey::MOTION_VECTOR_PREPASS | MeshPipelineKey::DEFERRED_PREPASS)
            | MeshPipelineKey::from_primitive_topology_and_strip_index(
                PrimitiveTopology::TriangleList,
                None,
            )
            | alpha_mode_pipeline_key(m.alpha_mode, msaa)
            // The StandardMaterial's prepass shader reads the material.
            | MeshPipelineKey::PREPASS_READS_MATERIAL,
    )
}

/// Render, `Queue`: the slots' prepass pipelines for the active camera's view,
/// where that view has a depth or normal prepass.
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
    if !view_key.intersects(MeshPipelineKey::DEPTH_PREPASS | MeshPipelineKey::NORMAL_PREPASS) {
        return;
    }
    draw.pipelines = pbr
        .slots
        .iter()
        .map(|slot| {
            let m = slot.material.as_ref()?;
            let key = slot_key(view_key, m, msaa)?;
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
    )>,
    mut r: ResMut<GpuRender>,
    mut pbr: ResMut<PbrDraw>,
    draw: Res<PrepassDraw>,
    view_groups: Option<Res<PrepassViewBindGroup>>,
    cache: Res<PipelineCache>,
    mut ctx: RenderContext,
) {
    let (extracted, depth, textures, offset) = view.into_inner();
    if draw.pipelines.iter().all(Option::is_none)
        || (textures.depth.is_none() && textures.normal.is_none())
    {
        return;
    }
    let Some(view_group) = view_groups
        .as_ref()
        .and_then(|g| Some((g.no_motion_vectors.as_ref()?, &g.empty_bind_group)))
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
    // The attachments Bevy's prepass has (normals in the first of four), so that
    // its targets and the pipelines' agree.
    let color_attachments = match &textures.normal {
        Some(normal) => vec![Some(normal.get_attachment()), None, None, None],
        None => Vec::new(),
    };
    let encoder = ctx.command_encoder();
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("farsight cluster prepass"),
        color_attachments: &color_attachments,
        depth_stencil_attachment: Some(depth.get_attachment(StoreOp::Store)),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    pass.set_bind_group(0, &**view_group.0, &[offset.offset]);
    pass.set_bind_group(1, &**view_group.1, &[]);
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
