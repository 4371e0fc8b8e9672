//! Cluster models into every shadow map Bevy renders: the active camera's
//! directional cascades, and every point light's six cube faces and every spot
//! light's map.
//!
//! Bevy renders point and spot shadow maps once a frame for all cameras: each
//! cube face and each spot map is a view of its own (a `RootNonCameraView`) whose
//! `Core3d` run comes before any camera's, and whose `ShadowView` holds the depth
//! attachment (a layer of the point lights' cube array or of the directional and
//! spot lights' 2D array, `CORE_3D_DEPTH_FORMAT`, reversed depth). The cube faces
//! look down the axes through a 90 degree `perspective_infinite_reverse_rh` with
//! the light's `shadow_map_near_z`, a spot map through `spot_light_clip_from_view`;
//! Bevy's prepass draws a mesh there with its plain clip-space depth (no linear
//! depth, no depth clamp, which only directional cascades get) and no bias (the
//! receiver offsets its lookup by the light's depth and normal biases). The
//! clusters go the same way: [`cast_into_light`] draws them depth-only into the
//! view's attachment after Bevy's late shared shadow pass, with the view's own
//! `clip_from_world`; `shadow.wgsl` leaves the depth as the projection gives it
//! where the view is a perspective one.
//!
//! Every shadow view of a frame draws the one cut for shadows (the active
//! camera's metric, no frustum test: a model outside the camera's view still
//! casts, at the level the camera would draw it), encoded by whichever of these
//! runs comes first in the frame. The views' matrices are written together in
//! [`prepare_shadow_views`]: queue writes all land before the frame's command
//! buffers, so one buffer holds every view at an offset of its own.

use std::collections::HashMap;
use std::sync::PoisonError;

use bevy::pbr::{LightEntity, ShadowView, ViewLightEntities};
use bevy::prelude::*;
use bevy::render::renderer::{RenderContext, ViewQuery};
use bevy::render::sync_world::MainEntity;
use bevy::render::view::ExtractedView;
use glam::Mat4;

use super::{CutCamera, GpuRender, ShadowDraw};

/// This frame's shadow views and the state of its cut for shadows.
#[derive(Default)]
pub(super) struct LightCasts {
    /// Each shadow view's index in [`ShadowDraw`]'s view buffer, this frame.
    index: HashMap<Entity, u32>,
    /// The bind group over the pools and the cut for shadows, once encoded this
    /// frame.
    bind: Option<wgpu::BindGroup>,
}

/// A shadow view's `clip_from_world`, and whether it is orthographic (a
/// directional cascade).
fn clip_from_world(view: &ExtractedView) -> (Mat4, bool) {
    let m = view
        .clip_from_world
        .unwrap_or_else(|| view.clip_from_view * view.world_from_view.to_matrix().inverse());
    (m, view.clip_from_view.w_axis.w == 1.0)
}

/// Render world, after the instance rows: the frame's shadow views (the active
/// camera's directional cascades, every point light's faces and every spot
/// light's map) written into [`ShadowDraw`]'s buffer, and the cut for shadows
/// marked not yet encoded.
pub(super) fn prepare_shadow_views(
    mut r: ResMut<GpuRender>,
    cameras: Query<(&ExtractedView, &ViewLightEntities)>,
    lights: Query<(Entity, &ExtractedView, &LightEntity), With<ShadowView>>,
) {
    let r = &mut *r;
    r.casts.index.clear();
    r.casts.bind = None;
    let Some(v) = r.view else {
        return;
    };
    let camera = MainEntity::from(v.entity);
    let cascades = cameras
        .iter()
        .filter(|(e, _)| e.retained_view_entity.main_entity == camera)
        .flat_map(|(_, l)| l.lights.iter().copied());
    let shared = lights
        .iter()
        .filter(|(.., kind)| !matches!(kind, LightEntity::Directional { .. }))
        .map(|(e, ..)| e);
    let mut matrices = Vec::new();
    for e in cascades.chain(shared) {
        let Ok((_, view, _)) = lights.get(e) else {
            continue;
        };
        if r.casts.index.contains_key(&e) {
            continue;
        }
        r.casts.index.insert(e, matrices.len() as u32);
        matrices.push(clip_from_world(view));
    }
    if matrices.is_empty() {
        return;
    }
    let device = &r.device;
    let shadows = r.shadows.get_or_insert_with(|| {
        ShadowDraw::new(device, bevy::core_pipeline::core_3d::CORE_3D_DEPTH_FORMAT)
    });
    shadows.write_views(device, &r.queue, &matrices);
}

/// Draws the cut for shadows into shadow view `light` (encoding the cut first
/// when no view has yet this frame); nothing where the view was not prepared or
/// the path has nothing to draw.
pub(super) fn cast(
    r: &mut GpuRender,
    encoder: &mut wgpu::CommandEncoder,
    light: Entity,
    shadow: &ShadowView,
) {
    let Some(&index) = r.casts.index.get(&light) else {
        return;
    };
    let Some(v) = r.view else {
        return;
    };
    if r.skip_cut {
        return;
    }
    let (Some(streamer), Some(shadows)) = (r.streamer.as_mut(), r.shadows.as_ref()) else {
        return;
    };
    let up = streamer
        .get_mut()
        .unwrap_or_else(PoisonError::into_inner)
        .uploader();
    if r.casts.bind.is_none() {
        let unculled = CutCamera {
            frustum: false,
            ..v.cut
        };
        r.cut.encode(
            &r.device,
            &r.queue,
            encoder,
            up.buffers(),
            up.max_resident(),
            &r.table,
            &unculled,
            &r.shadow_outputs,
        );
        r.casts.bind = Some(shadows.bind(&r.device, up.buffers(), &r.table, &r.shadow_outputs));
    }
    let Some(bind) = r.casts.bind.as_ref() else {
        return;
    };
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("farsight cluster shadows"),
        color_attachments: &[],
        depth_stencil_attachment: Some(
            shadow.depth_attachment.get_attachment(wgpu::StoreOp::Store),
        ),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    shadows.draw(&mut pass, bind, &r.shadow_outputs, index);
}

/// `Core3d`, for a point light's cube face or a spot light's map (views shared
/// by all cameras, run before them): the clusters into the view's shadow map,
/// after Bevy's shadow pass drew its meshes there.
pub(super) fn cast_into_light(
    view: ViewQuery<(Entity, &ShadowView, &LightEntity)>,
    mut r: ResMut<GpuRender>,
    mut ctx: RenderContext,
) {
    let (light, shadow, kind) = view.into_inner();
    if matches!(kind, LightEntity::Directional { .. }) {
        return;
    }
    cast(&mut r, ctx.command_encoder(), light, shadow);
}
