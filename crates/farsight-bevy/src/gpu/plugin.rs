//! The GPU path in Bevy's render world: [`FarsightGpuClustersPlugin`].
//!
//! Main world, `PostUpdate` after transform propagation: each
//! [`FarsightClusterModel`] entity gets a slot in an instance list (its model and
//! world transform; only new, changed and moved slots are marked), models are
//! opened from their files, and the active camera's cut parameters are taken.
//! Extract: the marked slots, the camera and (when a model was added) the models.
//! Render world, `PrepareResources`: the streamer (farsight-stream's, over
//! [`GpuUploader`]) runs its frame with requests made from the instances and the
//! camera, and the marked instance rows are written; `Queue` and
//! `PrepareBindGroups`: the material slots' pipelines and bind groups
//! ([`super::pbr`]). `Core3d`, for the active camera's view only: after Bevy's
//! shadow pass, the cut's compute pass, the sort of its visible clusters by
//! material slot, and the clusters into the view's directional shadow cascades
//! (from a cut without the frustum test); for each point light's cube face and
//! spot light's map (views of their own, run before the cameras), the clusters
//! after Bevy's shadow pass (`lights`); where the view has a depth or normal
//! prepass, in `Core3dSystems::Prepass` after Bevy's prepasses and the cut (so
//! before SSAO), the clusters into its prepass textures ([`super::prepass`]);
//! after Bevy's main opaque pass, one
//! indirect draw per slot into the view's colour and depth, shaded by Bevy's PBR
//! fragment shader with the slot's `StandardMaterial`.
//!
//! Materials: each cluster draws with its file's material (made as the CPU path
//! makes them), an instance with a `MeshMaterial3d<StandardMaterial>` with that
//! material for all of its clusters (read when the instance is added or its
//! component changes), and a model whose file has no materials with a default
//! `StandardMaterial` (the CPU path draws nothing there).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use bevy::core_pipeline::core_3d::main_opaque_pass_3d;
use bevy::core_pipeline::prepass::node::late_prepass;
use bevy::core_pipeline::schedule::Core3d;
use bevy::core_pipeline::Core3dSystems;
use bevy::prelude::*;
use bevy::render::renderer::{RenderAdapter, RenderContext, RenderDevice, RenderQueue, ViewQuery};
use bevy::render::sync_world::MainEntity;
use bevy::render::view::{ExtractedView, ViewDepthTexture, ViewTarget};
use bevy::render::{Extract, ExtractSchedule, Render, RenderApp, RenderSystems};
use farsight_cluster::{InstanceBounds, LevelView};
use farsight_lod::ProjectionInfo;
use farsight_stream::cluster::{stream_inputs, ClusterStreamer, CookedModel, ModelRequest};
use glam::{Affine3A, Mat4};

use bevy::pbr::{
    per_view_shadow_pass, shared_shadow_pass, MeshViewBindGroup, ShadowView, ViewKeyCache,
    ViewLightEntities, LATE_SHADOW_PASS,
};
use bevy::render::render_resource::{PipelineCache, SpecializedRenderPipelines};
use bevy::render::renderer::RenderDevice as BevyDevice;

mod lights;

use super::instances::{self, LevelRequests};
use super::pbr::{self, MaterialBins, PbrDraw, PbrSpecializer, ShadowDraw};
use super::prepass;
use super::stats::{self, GpuClusterStats, GpuClusterTint, RenderStats, SharedStats};
use super::{
    gpu_path_supported, CutCamera, CutOutputs, CutPipeline, GpuClusterSystems, GpuInstance,
    GpuUploader, InstanceTable, PoolSettings,
};
use crate::clusters::AssetRoot;
use crate::materials::{MaterialAssets, MaterialSink, PendingImages};
use crate::{
    ClusterModelAsset, FarsightClusterConfig, FarsightClusterModel, FarsightClusters,
    FarsightLodCamera, FarsightSet,
};

/// Draws [`FarsightClusterModel`]s through the GPU path (resident pools, the cut as
/// a compute pass, vertex pulling) instead of the CPU path's per-instance meshes.
/// Opt-in: add it after `DefaultPlugins` and `FarsightPlugin`. It takes over only
/// where [`gpu_path_supported`] holds for Bevy's device (then
/// [`GpuClustersActive`] is present and the CPU path's systems do not run);
/// elsewhere (WebGL2) the CPU path stays. Clusters cast shadows into directional,
/// point and spot lights' maps; a camera's depth and normal prepasses hold the
/// clusters, and its motion vectors ([`super::prepass`]; not a deferred G-buffer).
/// A cluster asset reloaded (its file changed) is drawn from the new file, streamed
/// into fresh pools. Not yet: views other than the active camera's.
#[derive(Clone, Debug, Default)]
pub struct FarsightGpuClustersPlugin {
    /// The pools' sizes and the staging ring.
    pub pools: PoolSettings,
    /// For tests of the pictures: the cut's compute pass is never dispatched, so
    /// nothing is drawn (a sabotaged run a pixel check must fail).
    pub skip_cut: bool,
    /// Most visible clusters the cut's list holds; `None`: every resident cluster
    /// of every instance, up to the device's storage binding limit. Visible
    /// clusters past it are not drawn and are counted in
    /// [`GpuClusterStats::visible_overflow`].
    pub visible_capacity: Option<u32>,
}

/// Present in the main world when [`FarsightGpuClustersPlugin`] chose the GPU path.
#[derive(Resource, Clone, Copy, Debug)]
pub struct GpuClustersActive;

impl Plugin for FarsightGpuClustersPlugin {
    fn build(&self, app: &mut App) {
        // Everything else waits for `finish`: the device is known only then.
        app.init_resource::<GpuClusterTint>()
            .init_resource::<GpuClusterStats>();
    }

    fn finish(&self, app: &mut App) {
        let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
            return;
        };
        let world = render_app.world();
        let (Some(adapter), Some(device), Some(queue)) = (
            world.get_resource::<RenderAdapter>(),
            world.get_resource::<RenderDevice>(),
            world.get_resource::<RenderQueue>(),
        ) else {
            warn!(
                "farsight: no render device when FarsightGpuClustersPlugin finished (add it \
                 after DefaultPlugins); the CPU path draws"
            );
            return;
        };
        let device = device.wgpu_device().clone();
        if !gpu_path_supported(
            &adapter.get_downlevel_capabilities(),
            &device.limits(),
            &self.pools,
        ) {
            info!("farsight: this device cannot run the GPU cluster path; the CPU path draws");
            return;
        }
        let queue = wgpu::Queue::clone(queue);
        let shared = SharedStats::default();
        let stats = RenderStats::new(&device, shared.clone());
        let mut state = GpuRender::new(device, queue, self.pools, self.skip_cut);
        state.visible_capacity = self.visible_capacity;
        let vertex = app
            .world_mut()
            .resource_mut::<Assets<Shader>>()
            .add(Shader::from_wgsl(
                pbr::PBR_WGSL,
                "farsight/cluster_pbr.wgsl",
            ));
        let fragment = match <StandardMaterial as bevy::pbr::Material>::fragment_shader() {
            bevy::shader::ShaderRef::Path(path) => app.world().resource::<AssetServer>().load(path),
            bevy::shader::ShaderRef::Handle(h) => h,
            bevy::shader::ShaderRef::Default => {
                warn!("farsight: StandardMaterial names no fragment shader; the CPU path draws");
                return;
            }
        };
        let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
            return;
        };
        render_app
            .insert_resource(state)
            .insert_resource(PbrDraw::new(vertex, fragment))
            .insert_resource(stats)
            .init_resource::<GpuClusterTint>()
            .init_resource::<SpecializedRenderPipelines<PbrSpecializer>>()
            .init_resource::<SpecializedRenderPipelines<prepass::PrepassSpecializer>>()
            .init_resource::<prepass::PrepassDraw>()
            .init_resource::<prepass::PreviousRows>()
            .add_systems(
                ExtractSchedule,
                (extract, stats::extract_tint).in_set(GpuClusterSystems::Extract),
            )
            .add_systems(
                Render,
                (prepare, lights::prepare_shadow_views)
                    .chain()
                    .in_set(RenderSystems::PrepareResources)
                    .in_set(GpuClusterSystems::Prepare),
            )
            .add_systems(ExtractSchedule, prepass::extract_previous.after(extract))
            .add_systems(
                Render,
                prepass::write_previous.in_set(RenderSystems::PrepareResources),
            )
            .add_systems(Render, stats::read_counters.in_set(RenderSystems::Cleanup))
            .add_systems(Render, queue_pbr.in_set(RenderSystems::Queue))
            .add_systems(
                Render,
                prepass::queue.in_set(RenderSystems::Queue).after(queue_pbr),
            )
            .add_systems(
                Render,
                prepare_pbr_bind_groups.in_set(RenderSystems::PrepareBindGroups),
            )
            .add_systems(
                Core3d,
                (
                    cut_and_cast
                        .after(per_view_shadow_pass::<LATE_SHADOW_PASS>)
                        .before(Core3dSystems::MainPass)
                        .in_set(GpuClusterSystems::CutAndDraw)
                        .in_set(GpuClusterSystems::Cut),
                    lights::cast_into_light
                        .after(shared_shadow_pass::<LATE_SHADOW_PASS>)
                        .before(Core3dSystems::MainPass)
                        .in_set(GpuClusterSystems::CutAndDraw),
                    cut_and_draw
                        .after(main_opaque_pass_3d)
                        .in_set(Core3dSystems::MainPass)
                        .in_set(GpuClusterSystems::CutAndDraw)
                        .in_set(GpuClusterSystems::Draw),
                    // Before SSAO and the other readers of the prepass textures.
                    prepass::draw
                        .after(cut_and_cast)
                        .after(late_prepass)
                        .in_set(Core3dSystems::Prepass)
                        .in_set(GpuClusterSystems::Prepass),
                ),
            );
        app.insert_resource(GpuClustersActive)
            .insert_resource(shared)
            .add_systems(First, stats::publish.in_set(GpuClusterSystems::Publish))
            .init_resource::<GpuMain>()
            .configure_sets(
                PostUpdate,
                FarsightSet::Clusters.run_if(not(resource_exists::<GpuClustersActive>)),
            )
            .add_systems(
                PostUpdate,
                gather
                    .after(bevy::transform::TransformSystems::Propagate)
                    .in_set(GpuClusterSystems::Gather),
            );
    }
}

/// The active camera's parameters for the cut and the draw.
#[derive(Clone, Copy, Debug)]
struct ViewData {
    entity: Entity,
    cut: CutCamera,
}

/// The main world's side: opened models and the instance slots.
#[derive(Resource, Default)]
pub(crate) struct GpuMain {
    models: Vec<CookedModel>,
    by_key: HashMap<(PathBuf, usize), u32>,
    failed: HashSet<PathBuf>,
    /// Bumped when a model is added (the render world restarts its streamer).
    generation: u64,
    slots: HashMap<Entity, u32>,
    owners: Vec<Entity>,
    pub(crate) placed: Vec<(u32, Affine3A, u32, u32)>,
    /// Slots written this frame (new, changed, moved by a removal).
    pub(crate) changed: Vec<u32>,
    /// Of the slots written this frame, those whose instance had a row before:
    /// the transform it had (the motion vectors' previous transform).
    pub(crate) previous: Vec<(u32, Affine3A)>,
    /// Instances whose model is not open yet (retried each frame).
    waiting: HashSet<Entity>,
    camera: Option<ViewData>,
    settings: FarsightClusterConfig,
    /// The material slots: every `StandardMaterial` some instance draws with.
    mat_slots: Vec<Handle<StandardMaterial>>,
    mat_slot_of: HashMap<AssetId<StandardMaterial>, u32>,
    /// Per model, the slot of each material its geometry names.
    model_slots: Vec<Vec<u32>>,
    /// Per model two words (first entry, count), then the entries.
    material_map: Vec<u32>,
    /// Bumped when the material slots or the map change.
    slots_generation: u64,
    /// Materials modified this frame.
    modified: HashSet<AssetId<StandardMaterial>>,
    /// Models reloaded whose material slots are not made again yet.
    reloaded: Vec<u32>,
    file_materials: HashMap<PathBuf, MaterialAssets>,
    default_material: Option<Handle<StandardMaterial>>,
}

impl GpuMain {
    /// The material slot of `material`, made when new.
    fn material_slot(&mut self, material: &Handle<StandardMaterial>) -> u32 {
        if let Some(&s) = self.mat_slot_of.get(&material.id()) {
            return s;
        }
        let s = self.mat_slots.len() as u32;
        self.mat_slots.push(material.clone());
        self.mat_slot_of.insert(material.id(), s);
        self.slots_generation += 1;
        s
    }

    /// The material slots of the models opened or reloaded since the last call
    /// (their files' materials made as the CPU path makes them), and the material
    /// map.
    fn model_materials(&mut self, p: &mut GpuMaterialParams) {
        if self.model_slots.len() == self.models.len() && self.reloaded.is_empty() {
            return;
        }
        for m in std::mem::take(&mut self.reloaded) {
            if (m as usize) < self.model_slots.len() {
                self.model_slots[m as usize] = self.slots_of(m, p);
            }
        }
        while self.model_slots.len() < self.models.len() {
            let slots = self.slots_of(self.model_slots.len() as u32, p);
            self.model_slots.push(slots);
        }
        let n = self.model_slots.len() as u32;
        self.material_map.clear();
        let mut at = 2 * n;
        for s in &self.model_slots {
            self.material_map.extend([at, s.len() as u32]);
            at += s.len() as u32;
        }
        for s in &self.model_slots {
            self.material_map.extend_from_slice(s);
        }
        self.slots_generation += 1;
    }

    /// The material slots of model `m`'s geometry (its file's materials made when
    /// not made yet).
    fn slots_of(&mut self, m: u32, p: &mut GpuMaterialParams) -> Vec<u32> {
        let model = self.models[m as usize].clone();
        let path = model.path().to_owned();
        if !self.file_materials.contains_key(&path) {
            if let (Some(server), Some(images), Some(materials)) = (
                p.asset_server.as_deref(),
                p.images.as_deref_mut(),
                p.materials.as_deref_mut(),
            ) {
                let mut sink = MaterialSink {
                    asset_server: server,
                    asset_root: p.root.as_deref().map(|r| r.0.as_path()),
                    images,
                    materials,
                    pending: &mut p.pending,
                };
                let made =
                    MaterialAssets::create(&model.manifest().material_table, &path, &mut sink);
                self.file_materials.insert(path.clone(), made);
            }
        }
        let handles: Vec<Option<Handle<StandardMaterial>>> = model
            .geometry()
            .materials
            .iter()
            .map(|n| {
                self.file_materials
                    .get(&path)
                    .and_then(|f| f.get(n))
                    .cloned()
            })
            .collect();
        let mut slots = Vec::with_capacity(handles.len().max(1));
        for h in handles {
            let h = h.unwrap_or_else(|| self.default_material(p));
            slots.push(self.material_slot(&h));
        }
        if slots.is_empty() {
            let h = self.default_material(p);
            slots.push(self.material_slot(&h));
        }
        slots
    }

    /// A cluster asset was loaded again (its file changed): the models opened from
    /// it take the new file's geometry, their instances are marked (their bounds
    /// change), their materials are made again, and the render world restarts its
    /// streamer over fresh pools (the old file's levels are dropped with them).
    fn reload(&mut self, asset: &ClusterModelAsset) {
        let mut any = false;
        for g in 0..asset.geometry_count() {
            let key = (asset.path().to_owned(), g);
            let (Some(&m), Some(model)) = (self.by_key.get(&key), asset.model(g)) else {
                continue;
            };
            self.models[m as usize] = model.clone();
            self.reloaded.push(m);
            any = true;
        }
        if !any {
            return;
        }
        self.file_materials.remove(asset.path());
        self.generation += 1;
        for (s, row) in self.placed.iter().enumerate() {
            if self.reloaded.contains(&row.0) {
                self.changed.push(s as u32);
            }
        }
    }

    /// The material of a model whose file has none (`StandardMaterial::default()`).
    fn default_material(&mut self, p: &mut GpuMaterialParams) -> Handle<StandardMaterial> {
        if let Some(h) = &self.default_material {
            return h.clone();
        }
        let h = p
            .materials
            .as_deref_mut()
            .map(|m| m.add(StandardMaterial::default()))
            .unwrap_or_default();
        self.default_material = Some(h.clone());
        h
    }
}

/// What [`gather`] needs to make the files' materials (as the CPU path does).
#[derive(bevy::ecs::system::SystemParam)]
struct GpuMaterialParams<'w, 's> {
    asset_server: Option<Res<'w, AssetServer>>,
    root: Option<Res<'w, AssetRoot>>,
    images: Option<ResMut<'w, Assets<Image>>>,
    materials: Option<ResMut<'w, Assets<StandardMaterial>>>,
    pending: ResMut<'w, PendingImages>,
    events: MessageReader<'w, 's, AssetEvent<StandardMaterial>>,
}

impl GpuMain {
    /// The model index of `model`, opening its file the first time (a model given
    /// as an asset: `None` until the asset has loaded).
    fn open(
        &mut self,
        model: &FarsightClusterModel,
        assets: Option<&Assets<ClusterModelAsset>>,
    ) -> Option<u32> {
        if let Some(handle) = &model.asset {
            let asset = assets?.get(handle)?;
            let key = (asset.path().to_owned(), model.geometry);
            if let Some(&m) = self.by_key.get(&key) {
                return Some(m);
            }
            let Some(cooked) = asset.model(model.geometry) else {
                if self.failed.insert(key.0.clone()) {
                    error!(
                        "cluster model {} not drawn: no geometry {} (the file has {})",
                        key.0.display(),
                        model.geometry,
                        asset.geometry_count()
                    );
                }
                return None;
            };
            return Some(self.add(key, cooked.clone()));
        }
        let key = (model.file.clone(), model.geometry);
        if let Some(&m) = self.by_key.get(&key) {
            return Some(m);
        }
        if self.failed.contains(&model.file) {
            return None;
        }
        let opened = CookedModel::open_all(&model.file)
            .map_err(|e| e.to_string())
            .and_then(|all| {
                let n = all.len();
                all.into_iter()
                    .nth(model.geometry)
                    .ok_or_else(|| format!("no geometry {} (the file has {n})", model.geometry))
            });
        match opened {
            Ok(c) => Some(self.add(key, c)),
            Err(e) => {
                error!("cluster model {} not drawn: {e}", model.file.display());
                self.failed.insert(model.file.clone());
                None
            }
        }
    }
}

impl GpuMain {
    /// An instance's material slot (`NO_MATERIAL`: its model's own) and flags.
    fn looks(
        &mut self,
        user: Option<&MeshMaterial3d<StandardMaterial>>,
        no_cast: bool,
    ) -> (u32, u32) {
        let material = user.map_or(GpuInstance::NO_MATERIAL, |u| self.material_slot(&u.0));
        let flags = if no_cast { GpuInstance::NO_SHADOW } else { 0 };
        (material, flags)
    }

    /// Gives `e` its slot (new) or rewrites it, marked; `reopen`: its model
    /// component changed (or it has no slot yet). False when its model is not open
    /// (an asset still loading, or a file that failed).
    fn place(
        &mut self,
        e: Entity,
        model: &FarsightClusterModel,
        gt: &GlobalTransform,
        reopen: bool,
        (material, flags): (u32, u32),
        assets: Option<&Assets<ClusterModelAsset>>,
    ) -> bool {
        let slot = self.slots.get(&e).copied();
        let m = match slot {
            Some(s) if !reopen => self.placed[s as usize].0,
            _ => match self.open(model, assets) {
                Some(m) => m,
                None => return false,
            },
        };
        let row = (m, gt.affine(), material, flags);
        let s = slot.unwrap_or_else(|| {
            self.owners.push(e);
            self.placed.push(row);
            self.slots.insert(e, self.owners.len() as u32 - 1);
            self.owners.len() as u32 - 1
        });
        if slot.is_some() {
            self.previous.push((s, self.placed[s as usize].1));
        }
        self.placed[s as usize] = row;
        self.changed.push(s);
        true
    }

    /// Adds a model (the render world restarts its streamer with it).
    fn add(&mut self, key: (PathBuf, usize), model: CookedModel) -> u32 {
        let m = self.models.len() as u32;
        self.models.push(model);
        self.by_key.insert(key, m);
        self.generation += 1;
        m
    }
}

/// The instances' slots, marked where new or changed, and the active camera.
#[allow(clippy::type_complexity)]
fn gather(
    mut main: ResMut<GpuMain>,
    clusters: Option<Res<FarsightClusters>>,
    assets: Option<Res<Assets<ClusterModelAsset>>>,
    cameras: Query<
        (
            Entity,
            &Camera,
            &GlobalTransform,
            &Projection,
            Has<FarsightLodCamera>,
        ),
        With<Camera3d>,
    >,
    changed: Query<
        (
            Entity,
            Ref<FarsightClusterModel>,
            &GlobalTransform,
            Option<&MeshMaterial3d<StandardMaterial>>,
            Has<bevy::light::NotShadowCaster>,
        ),
        Or<(
            Changed<FarsightClusterModel>,
            Changed<GlobalTransform>,
            Changed<MeshMaterial3d<StandardMaterial>>,
            Changed<bevy::light::NotShadowCaster>,
        )>,
    >,
    all: Query<(
        Ref<FarsightClusterModel>,
        &GlobalTransform,
        Option<&MeshMaterial3d<StandardMaterial>>,
        Has<bevy::light::NotShadowCaster>,
    )>,
    mut removed: RemovedComponents<FarsightClusterModel>,
    mut uncast: RemovedComponents<bevy::light::NotShadowCaster>,
    mut unpainted: RemovedComponents<MeshMaterial3d<StandardMaterial>>,
    mut reloads: MessageReader<AssetEvent<ClusterModelAsset>>,
    mut params: GpuMaterialParams,
) {
    let main = &mut *main;
    main.changed.clear();
    main.previous.clear();
    main.modified.clear();
    for ev in params.events.read() {
        if let AssetEvent::Modified { id } = *ev {
            main.modified.insert(id);
        }
    }
    if let Some(c) = clusters {
        main.settings = c.settings;
    }
    for ev in reloads.read() {
        if let (AssetEvent::Modified { id }, Some(assets)) = (*ev, assets.as_deref()) {
            if let Some(asset) = assets.get(id) {
                main.reload(asset);
            }
        }
    }
    for e in removed.read() {
        main.waiting.remove(&e);
        let Some(slot) = main.slots.remove(&e) else {
            continue;
        };
        main.owners.swap_remove(slot as usize);
        main.placed.swap_remove(slot as usize);
        if let Some(&moved) = main.owners.get(slot as usize) {
            main.slots.insert(moved, slot);
            main.changed.push(slot);
        }
    }
    // Only new and changed instances, and those whose model was not open yet.
    let mut waiting = std::mem::take(&mut main.waiting);
    waiting.retain(|&e| {
        let Ok((model, gt, user, no_cast)) = all.get(e) else {
            return false;
        };
        let looks = main.looks(user, no_cast);
        !main.place(e, &model, gt, true, looks, assets.as_deref())
    });
    for (e, model, gt, user, no_cast) in &changed {
        if waiting.contains(&e) {
            continue;
        }
        let looks = main.looks(user, no_cast);
        if !main.place(e, &model, gt, model.is_changed(), looks, assets.as_deref()) {
            waiting.insert(e);
        }
    }
    // A removed `NotShadowCaster` or user material changes how an instance looks,
    // and no change filter sees a removal.
    for e in uncast.read().chain(unpainted.read()) {
        if waiting.contains(&e) || changed.contains(e) || !main.slots.contains_key(&e) {
            continue;
        }
        let Ok((model, gt, user, no_cast)) = all.get(e) else {
            continue;
        };
        let looks = main.looks(user, no_cast);
        if !main.place(e, &model, gt, false, looks, assets.as_deref()) {
            waiting.insert(e);
        }
    }
    main.waiting = waiting;
    main.model_materials(&mut params);
    main.camera = cameras
        .iter()
        .filter(|(_, c, ..)| c.is_active)
        .min_by_key(|(_, c, .., marked)| (!marked, c.order))
        .map(|(entity, cam, gt, proj, _)| {
            let clip_from_view = proj.get_clip_from_view();
            let clip_from_world = clip_from_view * gt.to_matrix().inverse();
            let viewport_height = main
                .settings
                .viewport_height
                .or_else(|| cam.physical_viewport_size().map(|s| s.y as f32))
                .unwrap_or(720.0);
            ViewData {
                entity,
                cut: CutCamera {
                    view_projection: clip_from_world,
                    position: gt.translation(),
                    projection: ProjectionInfo::from_matrix(&clip_from_view),
                    viewport_height,
                    threshold_px: main.settings.threshold_px,
                    frustum: true,
                },
            }
        });
}

/// The render world's side: the pools (inside the streamer's uploader), the
/// instance table, the cut's outputs and the pipelines.
#[derive(Resource)]
pub(crate) struct GpuRender {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pools: PoolSettings,
    skip_cut: bool,
    generation: u64,
    models: Vec<CookedModel>,
    metrics: Vec<Vec<f32>>,
    // The streamer's reader channels are `Send`, not `Sync`.
    streamer: Option<Mutex<ClusterStreamer<GpuUploader>>>,
    placed: Vec<(u32, Affine3A, u32, u32)>,
    pending: Vec<u32>,
    table: InstanceTable,
    outputs: CutOutputs,
    /// The cut for shadows: the camera's metric, no frustum test.
    shadow_outputs: CutOutputs,
    shadows: Option<ShadowDraw>,
    /// This frame's shadow views ([`lights`]).
    casts: lights::LightCasts,
    cut: CutPipeline,
    view: Option<ViewData>,
    settings: FarsightClusterConfig,
    requests: Vec<ModelRequest>,
    /// Per model, the tree its requests are searched in.
    levels: LevelRequests,
    /// Rows of one run of changed instances, as written.
    rows: Vec<GpuInstance>,
    visible_capacity: Option<u32>,
}

impl GpuRender {
    fn new(device: wgpu::Device, queue: wgpu::Queue, pools: PoolSettings, skip_cut: bool) -> Self {
        let cut = CutPipeline::new(&device);
        Self {
            table: InstanceTable::new(&device, 64),
            outputs: cut.outputs(&device, 1 << 12),
            shadow_outputs: cut.outputs(&device, 1 << 12),
            shadows: None,
            casts: lights::LightCasts::default(),
            cut,
            device,
            queue,
            pools,
            skip_cut,
            generation: 0,
            models: Vec::new(),
            metrics: Vec::new(),
            streamer: None,
            placed: Vec::new(),
            pending: Vec::new(),
            view: None,
            settings: FarsightClusterConfig::default(),
            requests: Vec::new(),
            levels: LevelRequests::new(),
            rows: Vec::new(),
            visible_capacity: None,
        }
    }

    /// The active camera (the view the cut is for).
    pub(crate) fn active_view(&self) -> Option<Entity> {
        self.view.map(|v| v.entity)
    }

    /// What a draw of the visible clusters reads: the active camera, the device,
    /// the pools and the instance table (`None` before the streamer starts).
    pub(crate) fn draw_inputs(
        &mut self,
    ) -> Option<(Entity, &wgpu::Device, &super::PoolBuffers, &InstanceTable)> {
        let v = self.view?;
        let streamer = self.streamer.as_mut()?;
        let up = streamer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .uploader();
        Some((v.entity, &self.device, up.buffers(), &self.table))
    }

    /// The streamer over fresh pools holding every model (after a model was added).
    fn start_streamer(&mut self) {
        let mut up = GpuUploader::new(&self.device, self.queue.clone(), self.pools);
        for m in &self.models {
            if let Err(e) = up.add_cooked(m) {
                error!("farsight GPU path: {e}; no cluster model is drawn");
                return;
            }
        }
        let (descs, files) = stream_inputs(&self.models);
        let s = ClusterStreamer::new(
            self.settings.scheduler,
            &descs,
            files,
            self.settings.io_threads.max(1),
            up,
        )
        .with_level_check(Arc::new(self.models.clone()));
        self.streamer = Some(Mutex::new(s));
    }
}

/// The marked slots, the camera and new models into the render world.
fn extract(
    main: Extract<Res<GpuMain>>,
    materials: Extract<Option<Res<Assets<StandardMaterial>>>>,
    mut r: ResMut<GpuRender>,
    mut draw: ResMut<PbrDraw>,
) {
    let r = &mut *r;
    if draw.generation != main.slots_generation {
        draw.generation = main.slots_generation;
        let ids: Vec<AssetId<StandardMaterial>> = main.mat_slots.iter().map(Handle::id).collect();
        draw.set_slots(&ids, main.material_map.clone());
    }
    for slot in &mut draw.slots {
        if slot.material.is_none() || main.modified.contains(&slot.id) {
            slot.material = materials.as_ref().and_then(|m| m.get(slot.id)).cloned();
            slot.bind_group = None;
            slot.pipeline = None;
        }
    }
    if main.generation != r.generation {
        r.generation = main.generation;
        r.models.clone_from(&main.models);
        r.metrics = r.models.iter().map(CookedModel::parent_errors).collect();
        r.streamer = None;
    }
    r.placed
        .resize(main.placed.len(), (0, Affine3A::IDENTITY, 0, 0));
    r.levels.truncate(main.placed.len() as u32);
    for &s in &main.changed {
        if let Some(&(m, t, material, flags)) = main.placed.get(s as usize) {
            r.placed[s as usize] = (m, t, material, flags);
            r.pending.push(s);
            let Some(model) = r.models.get(m as usize) else {
                continue;
            };
            let bounds = InstanceBounds::placed_geometry(&model.geometry(), &Mat4::from(t));
            r.levels.set(s, m, bounds);
        }
    }
    r.view = main.camera;
    r.settings = main.settings;
}

/// The streamer's frame (its copies go into the pools) and the instance rows.
fn prepare(mut r: ResMut<GpuRender>, mut stats: ResMut<RenderStats>) {
    let r = &mut *r;
    if r.streamer.is_none() && !r.models.is_empty() {
        r.start_streamer();
    }
    let (Some(view), Some(streamer)) = (r.view, r.streamer.as_mut()) else {
        return;
    };
    let streamer = streamer.get_mut().unwrap_or_else(PoisonError::into_inner);
    // Requests: the finest answer over every instance of a model, as the CPU path.
    let cam = &view.cut;
    let level_view = LevelView {
        camera: cam.position,
        projection: cam.projection,
        viewport_height: cam.viewport_height,
        threshold_px: cam.threshold_px,
        bias: streamer.scheduler().bias() as u32,
    };
    let scheduler = streamer.scheduler();
    r.levels.requests(
        &r.metrics,
        &level_view,
        |m| scheduler.coarsest(m),
        &mut r.requests,
    );
    streamer.frame(&r.requests);
    // Instance rows: only the marked ones, all of them when the table grows.
    let len = r.placed.len() as u32;
    if len > r.table.capacity {
        r.table = InstanceTable::new(&r.device, len.next_power_of_two());
        r.pending = (0..len).collect();
    }
    r.pending.retain(|&s| s < len);
    r.pending.sort_unstable();
    r.pending.dedup();
    let placed = &r.placed;
    instances::write_rows(
        &mut r.table,
        &r.queue,
        &r.pending,
        |s| {
            let (m, t, material, flags) = placed[s as usize];
            let mut row = GpuInstance::new(m, &t);
            row.material = material;
            row.flags = flags;
            row
        },
        &mut r.rows,
    );
    r.pending.clear();
    r.table.len = len;
    // The visible list: room for every resident cluster of every instance.
    let up = streamer.uploader();
    let limit = (r.device.limits().max_storage_buffer_binding_size / 8).min(u64::from(u32::MAX));
    let limit = r
        .visible_capacity
        .map_or(limit, |c| limit.min(u64::from(c.max(1))));
    let need = (u64::from(len) * u64::from(up.max_resident())).min(limit) as u32;
    if need > r.outputs.capacity || u64::from(r.outputs.capacity) > limit {
        r.outputs = r
            .cut
            .outputs(&r.device, need.next_power_of_two().min(limit as u32));
        r.shadow_outputs = r.cut.outputs(&r.device, r.outputs.capacity);
    }
    let levels = &r.levels;
    stats.prepared(
        up,
        r.placed.len() as u32,
        |m| levels.count(m),
        r.outputs.capacity,
    );
}

/// The material slots' pipelines for the active camera's view (its key from
/// Bevy's `ViewKeyCache`), compiled by the pipeline cache.
fn queue_pbr(
    r: Res<GpuRender>,
    mut draw: ResMut<PbrDraw>,
    views: Query<&ExtractedView>,
    keys: Res<ViewKeyCache>,
    cache: Res<PipelineCache>,
    mut pipelines: ResMut<SpecializedRenderPipelines<PbrSpecializer>>,
    mesh_pipeline: Option<Res<bevy::pbr::MeshPipeline>>,
    mut layouts: ResMut<bevy::mesh::MeshVertexBufferLayouts>,
    device: Res<BevyDevice>,
) {
    let draw = &mut *draw;
    if draw.specializer.is_none() {
        let Some(mesh) = mesh_pipeline else {
            return;
        };
        draw.specializer = Some(PbrSpecializer::new(
            mesh.clone(),
            &mut layouts,
            &device,
            draw.vertex.clone(),
            draw.fragment.clone(),
        ));
    }
    let Some(v) = r.view else {
        return;
    };
    let Some(key) = views
        .iter()
        .find(|e| e.retained_view_entity.main_entity == MainEntity::from(v.entity))
        .and_then(|e| keys.get(&e.retained_view_entity))
    else {
        return;
    };
    pbr::specialize_slots(draw, *key, &cache, &mut pipelines);
}

/// The material slots' bind groups (a material whose images have not loaded
/// waits for them).
fn prepare_pbr_bind_groups(
    mut draw: ResMut<PbrDraw>,
    device: Res<BevyDevice>,
    cache: Res<PipelineCache>,
    mut param: pbr::MaterialParam,
) {
    pbr::prepare_slot_bind_groups(&mut draw, &device, &cache, &mut param);
}

/// Before Bevy's main pass, for the active camera's view: the cut, the sort of its
/// visible clusters by material slot, and, where the view has directional
/// shadow cascades, the cut for shadows (the camera's metric without the frustum
/// test: a model outside the view still casts) drawn into each cascade after
/// Bevy's shadow pass (`lights::cast`).
fn cut_and_cast(
    view: ViewQuery<(&ExtractedView, Option<&ViewLightEntities>)>,
    shadow_views: Query<&ShadowView>,
    mut r: ResMut<GpuRender>,
    mut draw: ResMut<PbrDraw>,
    mut stats: ResMut<RenderStats>,
    tint: Res<GpuClusterTint>,
    mut ctx: RenderContext,
) {
    let (extracted, view_lights) = view.into_inner();
    let r = &mut *r;
    let draw = &mut *draw;
    let Some(v) = r.view else {
        return;
    };
    if r.skip_cut || extracted.retained_view_entity.main_entity != MainEntity::from(v.entity) {
        return;
    }
    let Some(streamer) = r.streamer.as_mut() else {
        return;
    };
    let up = streamer
        .get_mut()
        .unwrap_or_else(PoisonError::into_inner)
        .uploader();
    let device = &r.device;
    let slots = draw.slots.len() as u32;
    let bins = draw.bins.get_or_insert_with(|| MaterialBins::new(device));
    bins.fit(device, slots, r.outputs.capacity);
    bins.write_slots(&r.queue, slots, tint.on);
    if draw.map_buffer.is_none() {
        draw.map_buffer = Some(pbr::map_buffer(device, &draw.material_map));
    }
    let (Some(map), Some(bins)) = (draw.map_buffer.as_ref(), draw.bins.as_ref()) else {
        return;
    };
    let pools = up.buffers();
    let encoder = ctx.command_encoder();
    r.cut.encode(
        device,
        &r.queue,
        encoder,
        pools,
        up.max_resident(),
        &r.table,
        &v.cut,
        &r.outputs,
    );
    stats.copy_counters(encoder, &r.outputs);
    bins.encode(
        device, &r.queue, encoder, pools, &r.table, &r.outputs, map, slots,
    );
    // Directional lights' cascades of this view (point and spot lights' maps
    // are drawn in their own views' runs: `lights::cast_into_light`).
    for &e in view_lights.map(|l| l.lights.as_slice()).unwrap_or_default() {
        if let Ok(shadow) = shadow_views.get(e) {
            lights::cast(r, encoder, e, shadow);
        }
    }
}

/// The active camera's visible clusters (cut and sorted by [`cut_and_cast`]),
/// drawn one indirect draw per material slot into the view after Bevy's opaque
/// pass.
#[allow(clippy::too_many_arguments)]
fn cut_and_draw(
    view: ViewQuery<(
        &ExtractedView,
        &ViewTarget,
        &ViewDepthTexture,
        &MeshViewBindGroup,
    )>,
    mut r: ResMut<GpuRender>,
    mut draw: ResMut<PbrDraw>,
    cache: Res<PipelineCache>,
    mut ctx: RenderContext,
) {
    let (extracted, target, depth, view_bind_group) = view.into_inner();
    let r = &mut *r;
    let draw = &mut *draw;
    let Some(v) = r.view else {
        return;
    };
    if extracted.retained_view_entity.main_entity != MainEntity::from(v.entity) {
        return;
    }
    let Some(streamer) = r.streamer.as_mut() else {
        return;
    };
    let Some(spec) = draw.specializer.as_ref() else {
        return;
    };
    let up = streamer
        .get_mut()
        .unwrap_or_else(PoisonError::into_inner)
        .uploader();
    let device = &r.device;
    let record = draw
        .mesh_record
        .get_or_insert_with(|| pbr::mesh_record_buffer(device));
    let Some(bins) = draw.bins.as_ref() else {
        return;
    };
    let pool_layout = cache.get_bind_group_layout(&spec.pool_layout);
    let pools = up.buffers();
    let pool_group = pbr::pool_bind_group(device, &pool_layout, record, pools, &r.table, bins);
    let encoder = ctx.command_encoder();
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("farsight clusters"),
        color_attachments: &[Some(target.get_color_attachment())],
        depth_stencil_attachment: Some(depth.get_attachment(wgpu::StoreOp::Store)),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    pass.set_bind_group(0, &*view_bind_group.main, &view_bind_group.main_offsets);
    pass.set_bind_group(1, &*view_bind_group.binding_array, &[]);
    for (s, slot) in draw.slots.iter().enumerate() {
        let (Some(group), Some((_, id))) = (slot.bind_group.as_ref(), slot.pipeline) else {
            continue;
        };
        let Some(pipeline) = cache.get_render_pipeline(id) else {
            continue;
        };
        pass.set_pipeline(pipeline);
        pass.set_bind_group(2, &pool_group, &[(s as u64 * bins.stride) as u32]);
        pass.set_bind_group(3, &**group, &[]);
        pass.draw_indirect(&bins.args, 16 * s as u64);
    }
}
