//! The GPU path in Bevy's render world: [`FarsightGpuClustersPlugin`].
//!
//! Main world, `PostUpdate` after transform propagation: each
//! [`FarsightClusterModel`] entity gets a slot in an instance list (its model and
//! world transform; only new, changed and moved slots are marked), models are
//! opened from their files, and the active camera's cut parameters are taken.
//! Extract: the marked slots, the camera and (when a model was added) the models.
//! Render world, `PrepareResources`: the streamer (farsight-stream's, over
//! [`GpuUploader`]) runs its frame with requests made from the instances and the
//! camera, and the marked instance rows are written. `Core3d`, after Bevy's main
//! opaque pass, for the active camera's view only: the cut's compute pass, then one
//! indirect draw of the visible clusters into the view's colour and depth.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use bevy::core_pipeline::core_3d::main_opaque_pass_3d;
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

use super::instances::{self, LevelRequests};
use super::stats::{self, GpuClusterStats, GpuClusterTint, RenderStats, SharedStats};
use super::{
    gpu_path_supported, CutCamera, CutOutputs, CutPipeline, DrawCamera, DrawPipeline, DrawTarget,
    GpuClusterSystems, GpuInstance, GpuUploader, InstanceTable, PoolSettings,
};
use crate::{
    ClusterModelAsset, FarsightClusterConfig, FarsightClusterModel, FarsightClusters,
    FarsightLodCamera, FarsightSet,
};

/// Draws [`FarsightClusterModel`]s through the GPU path (resident pools, the cut as
/// a compute pass, vertex pulling) instead of the CPU path's per-instance meshes.
/// Opt-in: add it after `DefaultPlugins` and `FarsightPlugin`. It takes over only
/// where [`gpu_path_supported`] holds for Bevy's device (then
/// [`GpuClustersActive`] is present and the CPU path's systems do not run);
/// elsewhere (WebGL2) the CPU path stays. Not yet: Bevy's PBR shading (the clusters
/// are lit by one fixed light), prepass and shadow passes, reloaded assets, views
/// other than the active camera's.
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
        render_app
            .insert_resource(state)
            .insert_resource(stats)
            .init_resource::<GpuClusterTint>()
            .add_systems(
                ExtractSchedule,
                (extract, stats::extract_tint).in_set(GpuClusterSystems::Extract),
            )
            .add_systems(
                Render,
                prepare
                    .in_set(RenderSystems::PrepareResources)
                    .in_set(GpuClusterSystems::Prepare),
            )
            .add_systems(Render, stats::read_counters.in_set(RenderSystems::Cleanup))
            .add_systems(
                Core3d,
                cut_and_draw
                    .after(main_opaque_pass_3d)
                    .in_set(Core3dSystems::MainPass)
                    .in_set(GpuClusterSystems::CutAndDraw),
            );
        app.insert_resource(GpuClustersActive)
            .insert_resource(shared)
            .add_systems(First, stats::publish)
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
    clip_from_world: Mat4,
}

/// The main world's side: opened models and the instance slots.
#[derive(Resource, Default)]
struct GpuMain {
    models: Vec<CookedModel>,
    by_key: HashMap<(PathBuf, usize), u32>,
    failed: HashSet<PathBuf>,
    /// Bumped when a model is added (the render world restarts its streamer).
    generation: u64,
    slots: HashMap<Entity, u32>,
    owners: Vec<Entity>,
    placed: Vec<(u32, Affine3A)>,
    /// Slots written this frame (new, changed, moved by a removal).
    changed: Vec<u32>,
    /// Instances whose model is not open yet (retried each frame).
    waiting: HashSet<Entity>,
    camera: Option<ViewData>,
    settings: FarsightClusterConfig,
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
    /// Gives `e` its slot (new) or rewrites it, marked; `reopen`: its model
    /// component changed (or it has no slot yet). False when its model is not open
    /// (an asset still loading, or a file that failed).
    fn place(
        &mut self,
        e: Entity,
        model: &FarsightClusterModel,
        gt: &GlobalTransform,
        reopen: bool,
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
        let row = (m, gt.affine());
        let s = slot.unwrap_or_else(|| {
            self.owners.push(e);
            self.placed.push(row);
            self.slots.insert(e, self.owners.len() as u32 - 1);
            self.owners.len() as u32 - 1
        });
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
        (Entity, Ref<FarsightClusterModel>, &GlobalTransform),
        Or<(Changed<FarsightClusterModel>, Changed<GlobalTransform>)>,
    >,
    all: Query<(Ref<FarsightClusterModel>, &GlobalTransform)>,
    mut removed: RemovedComponents<FarsightClusterModel>,
) {
    let main = &mut *main;
    main.changed.clear();
    if let Some(c) = clusters {
        main.settings = c.settings;
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
        let Ok((model, gt)) = all.get(e) else {
            return false;
        };
        !main.place(e, &model, gt, true, assets.as_deref())
    });
    for (e, model, gt) in &changed {
        if waiting.contains(&e) {
            continue;
        }
        if !main.place(e, &model, gt, model.is_changed(), assets.as_deref()) {
            waiting.insert(e);
        }
    }
    main.waiting = waiting;
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
                clip_from_world,
            }
        });
}

/// The render world's side: the pools (inside the streamer's uploader), the
/// instance table, the cut's outputs and the pipelines.
#[derive(Resource)]
struct GpuRender {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pools: PoolSettings,
    skip_cut: bool,
    generation: u64,
    models: Vec<CookedModel>,
    metrics: Vec<Vec<f32>>,
    // The streamer's reader channels are `Send`, not `Sync`.
    streamer: Option<Mutex<ClusterStreamer<GpuUploader>>>,
    placed: Vec<(u32, Affine3A)>,
    pending: Vec<u32>,
    table: InstanceTable,
    outputs: CutOutputs,
    cut: CutPipeline,
    draws: HashMap<DrawTarget, DrawPipeline>,
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
            draws: HashMap::new(),
            view: None,
            settings: FarsightClusterConfig::default(),
            requests: Vec::new(),
            levels: LevelRequests::new(),
            rows: Vec::new(),
            visible_capacity: None,
        }
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
fn extract(main: Extract<Res<GpuMain>>, mut r: ResMut<GpuRender>) {
    let r = &mut *r;
    if main.generation != r.generation {
        r.generation = main.generation;
        r.models.clone_from(&main.models);
        r.metrics = r.models.iter().map(CookedModel::parent_errors).collect();
        r.streamer = None;
    }
    r.placed.resize(main.placed.len(), (0, Affine3A::IDENTITY));
    r.levels.truncate(main.placed.len() as u32);
    for &s in &main.changed {
        if let Some(&(m, t)) = main.placed.get(s as usize) {
            r.placed[s as usize] = (m, t);
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
            let (m, t) = placed[s as usize];
            GpuInstance::new(m, &t)
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
    }
    stats.prepared(up, &r.placed, r.outputs.capacity);
}

/// The cut for the active camera's view, then its visible clusters drawn into the
/// view after Bevy's opaque pass.
fn cut_and_draw(
    view: ViewQuery<(&ExtractedView, &ViewTarget, &ViewDepthTexture, &Msaa)>,
    mut r: ResMut<GpuRender>,
    mut stats: ResMut<RenderStats>,
    tint: Res<GpuClusterTint>,
    mut ctx: RenderContext,
) {
    let (extracted, target, depth, msaa) = view.into_inner();
    let r = &mut *r;
    let Some(v) = r.view else {
        return;
    };
    if extracted.retained_view_entity.main_entity != MainEntity::from(v.entity) {
        return;
    }
    let Some(streamer) = r.streamer.as_mut() else {
        return;
    };
    let up = streamer
        .get_mut()
        .unwrap_or_else(PoisonError::into_inner)
        .uploader();
    let key = DrawTarget {
        color: target.main_texture_format(),
        depth: depth.texture.format(),
        samples: msaa.samples(),
        depth_compare: wgpu::CompareFunction::Greater,
    };
    let device = &r.device;
    let draw = r
        .draws
        .entry(key)
        .or_insert_with(|| DrawPipeline::for_target(device, &key));
    let encoder = ctx.command_encoder();
    if !r.skip_cut {
        r.cut.encode(
            device,
            &r.queue,
            encoder,
            up.buffers(),
            up.max_resident(),
            &r.table,
            &v.cut,
            &r.outputs,
        );
    }
    stats.copy_counters(encoder, &r.outputs);
    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("farsight clusters"),
        color_attachments: &[Some(target.get_color_attachment())],
        depth_stencil_attachment: Some(depth.get_attachment(wgpu::StoreOp::Store)),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    draw.draw(
        device,
        &r.queue,
        &mut pass,
        up.buffers(),
        &r.table,
        &r.outputs,
        &DrawCamera {
            clip_from_world: v.clip_from_world,
            light: Vec3::new(0.4, 1.0, 0.6).normalize(),
            tint_levels: tint.on,
        },
    );
}
