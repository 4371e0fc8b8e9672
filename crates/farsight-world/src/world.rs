//! The one frame loop.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use farsight_cluster::{model_levels, InstanceBounds, LevelMetric, LevelView};
use farsight_geom::{Aabb, Frustum};
use farsight_lod::ProjectionInfo;
use farsight_stream::cluster::{
    stream_inputs, ChunkCompletion, ClusterScheduler, ClusterStreamer, CookedModel, Decision,
    FrameStats, LevelFile, ModelDesc, ModelRequest, SchedulerConfig, Uploader,
};
use farsight_stream::io::IoPool;
use farsight_stream::region::{
    read_region_file, EntityRecord, LoadCompletion, RegionFrame, RegionState, RegionStreamer,
    Scene, SceneError, StreamingSource,
};
use farsight_terrain::{
    affected_chunks, chunk_bounds, chunk_distance, read_grid, removal_affected, CacheUpdate,
    Changes, ChunkCells, ChunkMesh, ChunkMesher, ChunkSet, CollisionCache, Material, TerrainView,
    TerrainViewConfig, VoxelGrid, CHUNK_SIZE,
};
use farsight_view::{
    Camera, CameraId, CameraStore, EntityLod, EntityLodLevel, FrameContext, MaterialHandle,
    MeshHandle, ObjectDesc, ObjectId, ObjectStore, Projection, RenderConfig, Residency,
    VisibilitySystem,
};
use glam::{IVec3, Mat4, Vec3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::budget::{order, Ask, Bias, Budget, SystemId, SYSTEMS};
use crate::building_io::{read_building_level, BuildingDone, BuildingRead, BUILDING_TRIES};
use crate::hash::DecisionHash;
use crate::manifest::{positive, BadField, EntityKind, WorldError, WorldManifest};
use crate::record::{FrameInput, TerrainPublication};

/// Frames a level nobody wants stays resident (the cluster levels' eviction rule, docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget, for every
/// system).
const EVICT_AFTER_FRAMES: u32 = 60;

/// Vertical field of view of the flight camera.
pub const FOV_Y: f32 = std::f32::consts::FRAC_PI_3;
const ASPECT: f32 = 16.0 / 9.0;
const VIEWPORT_HEIGHT: f32 = 1080.0;

/// Colliders of the band just beyond the collision radius built per frame at most:
/// the colliders' build budget. Colliders are built on the CPU for the physics
/// engine, not uploaded, so they take memory from the pool and no upload; within
/// the radius every missing collider is built at once (docs/design/voxel-terrain.md#collision: collision builds
/// are synchronous with the request).
const COLLIDER_BUILDS_PER_FRAME: usize = 4;

/// Base meshes remade per frame at most for chunks an edit made stale, nearest the
/// camera first (issue 27 item 21: an edit near chunks drawn at the coarsest level
/// makes 25-35 stale, and remaking them all in the edit's frame took 15-30 ms).
pub const BASES_PER_FRAME: usize = 8;

/// What a collider not built yet is taken to cost before any was built.
const COLLIDER_ESTIMATE: u64 = 64 << 10;

/// Objects the regions create per frame at most outside loading screens (at least
/// one region a frame, whatever its size): a region whose read finished waits,
/// still loading, until the budget lets it in, nearest the camera first (issue 27
/// item 21: a prefetch target's 3,000 regions landed in two frames and created
/// 12,000-18,000 objects each, 10-30 ms). A loading screen creates everything.
pub const REGION_OBJECTS_PER_FRAME: usize = 2048;

/// Region reads in flight at most outside loading screens, nearest the camera
/// first: a prefetch target asks for 3,000 at once, and reading them all at once
/// took the cores from the frame's own work for several frames.
pub const REGION_READS_IN_FLIGHT: usize = 128;

/// Colliders of a prefetched teleport target built per frame at most, nearest the
/// target first (42-50 within its collision radius were built in the frame the
/// target appeared, 6-20 ms). The camera's own radius is still built at once: on
/// arrival the target is the camera, and whatever the prefetch did not build then is.
pub const PREFETCH_COLLIDERS_PER_FRAME: usize = 4;

fn default_collision_radius() -> f32 {
    192.0
}

/// How the loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldConfig {
    /// The memory and upload budget every system shares.
    pub budget: Budget,
    /// Radius of the camera's streaming source.
    pub source_radius: f32,
    /// Threads reading region and level files.
    pub io_threads: usize,
    /// Background terrain meshing threads.
    pub mesh_threads: usize,
    /// Terrain draw distance and the objects' cull distance.
    pub draw_distance: f32,
    /// Every terrain chunk within this distance of the camera has its collider,
    /// built at once, as protected as a coarsest level; within it of a teleport's
    /// prefetched target they are built [`PREFETCH_COLLIDERS_PER_FRAME`] a frame
    /// (as protected once built); the band one chunk beyond is built ahead under
    /// the pools, and colliders farther than two chunks beyond are freed.
    #[serde(default = "default_collision_radius")]
    pub collision_radius: f32,
}

impl Default for WorldConfig {
    fn default() -> Self {
        Self {
            budget: Budget::default(),
            source_radius: 300.0,
            io_threads: 2,
            mesh_threads: 1,
            draw_distance: 700.0,
            collision_radius: default_collision_radius(),
        }
    }
}

/// Threads of one kind the settings may ask for.
const MAX_THREADS: usize = 256;

impl WorldConfig {
    /// Checks every setting against what the loop can run with (a recording's
    /// settings are edited by hand as well): the first value refused, named.
    pub fn check(&self) -> Result<(), BadField> {
        let b = &self.budget;
        if b.memory == 0 {
            return Err(BadField::new(
                "budget.memory",
                b.memory,
                "no memory to hold",
            ));
        }
        if b.upload == 0 {
            return Err(BadField::new(
                "budget.upload",
                b.upload,
                "nothing to upload with",
            ));
        }
        if !(b.reserve.is_finite() && (0.0..=1.0).contains(&b.reserve)) {
            return Err(BadField::new(
                "budget.reserve",
                b.reserve,
                "not a share between 0 and 1",
            ));
        }
        if b.bias_frames == 0 {
            return Err(BadField::new(
                "budget.bias_frames",
                b.bias_frames,
                "the bias must wait at least one frame",
            ));
        }
        if b.max_bias > MAX_BIAS {
            return Err(BadField::new(
                "budget.max_bias",
                b.max_bias,
                "above the loop's highest bias, 4",
            ));
        }
        positive("source_radius", self.source_radius)?;
        positive("draw_distance", self.draw_distance)?;
        if !(self.collision_radius.is_finite() && self.collision_radius >= 0.0) {
            return Err(BadField::new(
                "collision_radius",
                self.collision_radius,
                "not a finite distance of zero or more",
            ));
        }
        for (field, n) in [
            ("io_threads", self.io_threads),
            ("mesh_threads", self.mesh_threads),
        ] {
            if !(1..=MAX_THREADS).contains(&n) {
                return Err(BadField::new(field, n, "not between 1 and 256 threads"));
            }
        }
        Ok(())
    }
}

/// The highest bias the loop coarsens by (four steps, docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget).
const MAX_BIAS: u8 = 4;

/// One system's share of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SystemFrame {
    /// The system's time this frame on the loop's thread.
    pub time: Duration,
    /// Resident bytes after the frame.
    pub memory: u64,
    /// Bytes uploaded this frame.
    pub upload: u64,
    /// Visible things with nothing to draw.
    pub holes: u32,
}

/// Where the terrain's frame time went, phase by phase (inside
/// [`SystemId::Terrain`]'s time; the pools' share is not in it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TerrainSplit {
    /// Applying the frame's edits to the grid.
    pub edits: Duration,
    /// The background mesher's view: its update and the meshes it published.
    pub view: Duration,
    /// After an edit: dropping stale pending meshes and remaking stale drawn ones
    /// as base meshes.
    pub stale: Duration,
    /// Base meshes of chunks coming into range with nothing to draw.
    pub base: Duration,
    /// Colliders: those an edit reached rebuilt, far ones freed, near ones built.
    pub colliders: Duration,
}

/// What one frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameReport {
    /// The frame, counted from the world's opening.
    pub frame: u32,
    /// A loading-screen frame (nothing drawn, no hole counted).
    pub loading: bool,
    /// Each system's share, in [`SystemId::ALL`] order.
    pub systems: [SystemFrame; SYSTEMS],
    /// Each system's decision hash, in [`SystemId::ALL`] order.
    pub hashes: [u64; SYSTEMS],
    /// The one bias after the frame (levels coarser than desired).
    pub bias: u8,
    /// Resident bytes of every system together after the frame.
    pub memory: u64,
    /// Bytes every system uploaded this frame.
    pub upload: u64,
    /// Memory or upload passed the budget.
    pub over_budget: bool,
    /// Regions per actual state: unloaded, loading, resident, active, unloading.
    pub regions: [usize; 5],
    /// Objects the visibility pass found visible.
    pub visible: u32,
    /// Objects loaded (in the store).
    pub objects: u32,
    /// Objects the regions created this frame (their regions' reads had finished).
    pub objects_created: u32,
    /// Objects removed with their regions this frame.
    pub objects_removed: u32,
    /// Objects whose entity-LOD level the visibility pass switched this frame.
    pub lod_switches: u32,
    /// Terrain chunks in view drawing their base mesh (the coarsest level, made on
    /// the loop's thread) because no finer mesh of theirs was published and
    /// uploaded yet: without the base each would be a hole.
    pub terrain_base_drawn: u32,
    /// Terrain base meshes made this frame (after an edit, for chunks coming into
    /// range with nothing to draw, for room in the pool), and how many of them the
    /// frame's own thread made (the others were made on the worker threads).
    pub terrain_bases_made: u32,
    /// Of those, made on the frame's own thread.
    pub terrain_bases_made_on_frame: u32,
    /// The terrain's time phase by phase.
    pub terrain_split: TerrainSplit,
    /// Chunks still drawing a mesh an edit made stale after the frame: each waits
    /// for its base ([`BASES_PER_FRAME`] are remade a frame, nearest first).
    pub terrain_stale: u32,
    /// Terrain colliders held after the frame, and their bytes (part of the
    /// terrain's memory).
    pub colliders: u32,
    /// The colliders' bytes.
    pub collider_bytes: u64,
    /// Colliders built this frame.
    pub colliders_built: u32,
    /// Held colliders an edit reached, rebuilt this frame.
    pub colliders_rebuilt: u32,
    /// Building file reads that finished this frame.
    pub building_reads: u32,
    /// The bytes those reads read from disk.
    pub building_read_bytes: u64,
    /// Of those, reads whose file was missing, unreadable or refused by its checks.
    pub building_read_errors: u32,
    /// Building levels given up so far (every try failed): a coarser level is drawn
    /// instead, or nothing when it was a building's coarsest.
    pub building_levels_failed: u32,
}

impl FrameReport {
    /// Holes in any system (a loading screen draws nothing, so has none).
    pub fn holes(&self) -> u32 {
        if self.loading {
            0
        } else {
            self.systems.iter().map(|s| s.holes).sum()
        }
    }
}

/// Level memory as the renderer would hold it, counted, not kept.
#[derive(Debug, Default)]
struct CountingUploader;

impl Uploader for CountingUploader {
    fn queue_copy(&mut self, _: u32, _: u8, _: u64, _: &[u8]) {}
    fn level_ready(&mut self, _: u32, _: u8) {}
    fn evict(&mut self, _: u32, _: u8) {}
}

type LoadResult = Result<Vec<EntityRecord>, SceneError>;

/// What an I/O thread hands back: a region's entities or a building level's read.
enum IoDone {
    Region(LoadResult),
    Building(BuildingRead),
}

/// The I/O side: threads and files while live, recorded completions in a replay.
enum Io {
    Live {
        /// Region reads and building file reads, on the same threads.
        regions: IoPool<IoDone>,
        drained: Vec<(u64, IoDone)>,
        /// Region reads submitted and not yet drained.
        region_reads: usize,
        /// Regions the streamer asked to read, not submitted yet
        /// ([`REGION_READS_IN_FLIGHT`]).
        unread: Vec<u32>,
        /// Region reads drained and not yet handed to the streamer
        /// ([`REGION_OBJECTS_PER_FRAME`]): (region, read and parsed).
        landed: Vec<(u32, bool)>,
        arrived: HashMap<u32, Vec<EntityRecord>>,
        clusters: Box<ClusterStreamer<CountingUploader>>,
        view: Box<TerrainView>,
        /// Last published (level, mesh identity) per chunk.
        seen: HashMap<IVec3, (u8, usize)>,
    },
    Replay {
        scheduler: Box<ClusterScheduler>,
        decisions: Vec<Decision>,
        completions: Vec<ChunkCompletion>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Obj {
    Free,
    Model {
        model: u32,
        center: Vec3,
        radius: f32,
        scale: f32,
    },
    Building(u32),
    Prop,
}

/// What an [`Ask`] is for.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// A cluster level: loading (its memory already held), or to start.
    Cluster {
        loading: bool,
    },
    /// A building level: its file to read (`start`: the memory is held from then
    /// on), or its upload once read (`need`: memory not held yet, 0 when held).
    Building {
        building: u32,
        level: u8,
        need: u64,
        start: bool,
    },
    Chunk {
        chunk: [i32; 3],
    },
    /// A collider of the band beyond the collision radius, and the memory it is
    /// taken to need.
    Collider {
        chunk: IVec3,
        need: u64,
    },
}

/// A building level on its way from its file: read (and checked) on an I/O thread,
/// then uploaded under the budget.
#[derive(Clone, Copy, Debug)]
struct BuildingLoad {
    level: u8,
    /// The file was read and checked; the upload goes on.
    read: bool,
    /// Reads of it that failed so far.
    failures: u8,
}

#[derive(Clone, Copy, Debug)]
struct Uploaded {
    level: u8,
    bytes: u64,
    empty: bool,
}

/// The pools' first pass: the cluster scheduler's share of this frame.
struct Plan {
    /// Bytes the scheduler may upload.
    upload: u64,
    /// The memory it may hold.
    memory: u64,
    /// Some ask did not fit.
    short: bool,
}

/// The pools' second pass: what buildings and terrain were granted.
struct Grants {
    building_hash: u64,
    terrain_hash: u64,
    building_upload: u64,
    terrain_upload: u64,
    /// Some ask did not fit.
    starved: bool,
}

/// The grants' running state over the asks: upload left this frame, memory held,
/// the buildings' and terrain's decision hashes and upload bytes, whether some ask
/// did not fit, and the colliders built so far this frame.
struct GrantPass {
    upload_left: u64,
    held: u64,
    hb: DecisionHash,
    ht: DecisionHash,
    bytes_b: u64,
    bytes_t: u64,
    starved: bool,
    prebuilt: usize,
}

/// A world opened from its folder, and the loop over it: one state per system,
/// which [`World::step`] runs in named phases (I/O, regions, visibility, terrain
/// inputs, cluster requests, the pools' plan, clusters, the grants to buildings
/// and terrain, the budget).
pub struct World {
    dir: PathBuf,
    manifest: WorldManifest,
    config: WorldConfig,
    frame: u32,
    io: Io,
    regions: Regions,
    vis: Visibility,
    clusters: Clusters,
    buildings: Buildings,
    terrain: Terrain,
    pools: Pools,
}

/// The regions: the scene on disk, the streamer's states and the objects each
/// created region put in the store.
struct Regions {
    scene: Scene,
    streamer: RegionStreamer,
    frame: RegionFrame,
    completions: Vec<LoadCompletion>,
    objects: Vec<Vec<ObjectId>>,
    /// Objects created and removed this frame.
    created: u32,
    removed: u32,
}

/// The visibility pass over every loaded object, and what each object is.
struct Visibility {
    store: ObjectStore,
    objects: Vec<Obj>,
    cameras: CameraStore,
    camera: CameraId,
    pass: VisibilitySystem,
    settings: RenderConfig,
    in_view: Vec<bool>,
    prop_lods: Vec<EntityLod>,
}

/// The cluster models: their level metrics and this frame's requests.
struct Clusters {
    metrics: Vec<Vec<f32>>,
    /// Per model: the sphere around every error sphere (model space), and the index
    /// of its coarsest level.
    model_bounds: Vec<[f32; 4]>,
    coarsest: Vec<u8>,
    requests: Vec<ModelRequest>,
    model_levels: Vec<Option<farsight_cluster::ModelLevels>>,
    model_screen: Vec<f32>,
    model_visible: Vec<bool>,
    stats: FrameStats,
}

/// The buildings: resident level masks, and the object drawing each building.
struct Buildings {
    resident: Vec<u32>,
    object: Vec<Option<ObjectId>>,
    /// The frame since which each building has held levels nobody wants
    /// (`u32::MAX`: none).
    spare_since: Vec<u32>,
    /// Per building: the level being made resident from its file, if any.
    load: Vec<Option<BuildingLoad>>,
    /// Per building: its region is active (it shows once it has a level to draw).
    active: Vec<bool>,
    /// Per building: levels given up after every try failed.
    failed: Vec<u32>,
    /// Hash of this frame's building read completions.
    io_hash: u64,
}

impl Buildings {
    /// `n` buildings, none loaded.
    fn new(n: usize) -> Self {
        Self {
            resident: vec![0; n],
            object: vec![None; n],
            spare_since: vec![u32::MAX; n],
            load: vec![None; n],
            active: vec![false; n],
            failed: vec![0; n],
            io_hash: 0,
        }
    }
}

/// The terrain: the grid, its colliders, and the meshes drawn or waiting.
struct Terrain {
    grid: VoxelGrid,
    /// The colliders: a range around the streaming sources (a ranged cache).
    collision: CollisionCache,
    /// This frame's streaming sources (camera, prefetch target).
    sources: [Vec3; 2],
    n_sources: usize,
    /// Chunks a surface may lie in: the grid's written chunks and one more on each
    /// side, for the grid version it was taken at.
    chunk_range: (IVec3, IVec3),
    range_version: (u64, u64),
    /// The largest collider built so far: what one not built yet is taken to cost.
    collider_estimate: u64,
    /// Bytes the terrain uploaded this frame before the pools ran: base meshes
    /// remade after an edit.
    early_upload: u64,
    edit_hash: u64,
    colliders_built: u32,
    colliders_rebuilt: u32,
    collider_hash: u64,
    near: Vec<(f32, IVec3)>,
    collider_list: Vec<IVec3>,
    pending: BTreeMap<[i32; 3], TerrainPublication>,
    uploaded: BTreeMap<[i32; 3], Uploaded>,
    dense: Vec<IVec3>,
    /// The terrain's base: a chunk that comes within preload range with nothing to
    /// draw gets its coarsest mesh made at once (on the worker threads when there
    /// are several), so the background mesher's speed never decides whether a
    /// chunk is drawn (its finer meshes replace the base when they are published
    /// and uploaded).
    base_mesher: ChunkMesher,
    /// Base meshes pending upload or drawn.
    base_meshes: BTreeMap<[i32; 3], Arc<ChunkMesh>>,
    /// Chunks whose pending publication is their base mesh.
    base_pending: BTreeSet<[i32; 3]>,
    /// Hash of this frame's base meshes.
    base_hash: u64,
    /// Base meshes made this frame, and those of them made on the frame thread.
    remakes: u32,
    frame_remakes: u32,
    /// This frame's terrain time, phase by phase.
    split: TerrainSplit,
    /// Chunks drawing a mesh an edit made stale, waiting for their base.
    stale: BTreeSet<[i32; 3]>,
    /// Hash of this frame's stale-queue remakes.
    stale_hash: u64,
    /// The collider refresh made beside the stale queue's remakes this frame.
    collider_update: Option<CacheUpdate>,
}

impl Terrain {
    /// The terrain over `grid`, nothing drawn or held yet.
    fn new(grid: VoxelGrid) -> Self {
        let dense = dense_chunks(&grid);
        Self {
            collision: CollisionCache::new(1),
            sources: [Vec3::ZERO; 2],
            n_sources: 0,
            chunk_range: (IVec3::ZERO, IVec3::ZERO),
            range_version: (u64::MAX, u64::MAX),
            collider_estimate: COLLIDER_ESTIMATE,
            early_upload: 0,
            edit_hash: 0,
            colliders_built: 0,
            colliders_rebuilt: 0,
            collider_hash: 0,
            near: Vec::new(),
            collider_list: Vec::new(),
            grid,
            pending: BTreeMap::new(),
            uploaded: BTreeMap::new(),
            dense,
            base_mesher: ChunkMesher::new(),
            base_meshes: BTreeMap::new(),
            base_pending: BTreeSet::new(),
            base_hash: 0,
            remakes: 0,
            frame_remakes: 0,
            split: TerrainSplit::default(),
            stale: BTreeSet::new(),
            stale_hash: 0,
            collider_update: None,
        }
    }
}

/// The pools every system's asks go through, and the one bias.
struct Pools {
    bias: Bias,
    /// Every system together held more than the finer levels may (last frame).
    memory_tight: bool,
    asks: Vec<Ask>,
    targets: Vec<Target>,
    /// Bytes already sent of uploads that span frames: (0, building, level) or
    /// (1, chunk).
    partial: BTreeMap<(u8, [i32; 3]), u64>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("dir", &self.dir)
            .field("frame", &self.frame)
            .finish()
    }
}

/// The cluster scheduler as created: the whole pool as its upper bound (each frame
/// the pools hand it its share), chunks of a quarter of a frame's upload so a share
/// smaller than the pool still copies, and no bias of its own: the loop's one bias
/// is in its requests.
fn scheduler_config(budget: &Budget) -> SchedulerConfig {
    let upload = budget.upload.max(1);
    SchedulerConfig {
        upload_budget: upload,
        chunk_size: (upload / 4).clamp(1, 8 << 20),
        staging_size: upload * 3,
        frames_in_flight: 3,
        memory_capacity: budget.memory,
        bias_frames: budget.bias_frames,
        max_bias: 0,
        ..SchedulerConfig::default()
    }
}

/// Pixels of a bounding sphere's radius at `distance` from the camera (to its
/// surface): the one screen size every system's asks are ordered by.
fn screen_px(radius: f32, distance: f32) -> f32 {
    radius * VIEWPORT_HEIGHT * 0.5 / ((FOV_Y * 0.5).tan() * distance.max(1e-3))
}

impl World {
    /// Opens the world in `dir` to fly it: starts the I/O threads and the terrain's
    /// meshing threads.
    pub fn open(dir: &Path, config: WorldConfig) -> Result<Self, WorldError> {
        Self::open_with(dir, config, true)
    }

    /// Opens the world in `dir` to replay a recording: no threads; every I/O
    /// completion comes from the recording.
    pub fn open_replay(dir: &Path, config: WorldConfig) -> Result<Self, WorldError> {
        Self::open_with(dir, config, false)
    }

    fn open_with(dir: &Path, config: WorldConfig, live: bool) -> Result<Self, WorldError> {
        config.check().map_err(WorldError::Config)?;
        let manifest = WorldManifest::read(dir)?;
        let scene_path = dir.join(&manifest.scene);
        let scene = Scene::open(&scene_path).map_err(|source| WorldError::Scene {
            path: scene_path.clone(),
            source,
        })?;
        let streamer = RegionStreamer::new(scene.bounds(), scene.authored())
            .expect("Scene::open checked every box");
        let terrain_path = dir.join(&manifest.terrain.file);
        let grid = read_grid(&terrain_path).map_err(|source| WorldError::Terrain {
            path: terrain_path.clone(),
            source,
        })?;
        // Each model is a cooked cluster file, opened from its head alone.
        let cooked = manifest
            .models
            .iter()
            .map(|m| CookedModel::open_geometry(dir.join(&m.file), m.geometry as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let (descs, level_files) = stream_inputs(&cooked);
        let sched = scheduler_config(&config.budget);
        ClusterScheduler::try_new(sched, &descs).map_err(|e| WorldError::Invalid {
            path: dir.join(crate::MANIFEST_FILE),
            what: e.to_string(),
        })?;
        let metrics: Vec<Vec<f32>> = cooked.iter().map(|m| m.parent_errors()).collect();
        let model_bounds: Vec<[f32; 4]> = cooked.iter().map(|m| m.error_bounds()).collect();
        let coarsest: Vec<u8> = cooked.iter().map(|m| m.level_count() as u8 - 1).collect();
        let io = open_io(&config, sched, &descs, level_files, cooked, live);
        let mut cameras = CameraStore::new();
        let camera = cameras.insert(Camera::looking_at(
            projection(),
            Vec3::new(0.0, 100.0, 0.0),
            Vec3::new(1.0, 100.0, 1.0),
        ));
        let prop_lods = prop_lods(dir, &manifest)?;
        let n_models = manifest.models.len();
        let n_buildings = manifest.buildings.len();
        let settings = RenderConfig {
            cull_min_pixels: 1.0,
            cull_max_distance: config.draw_distance,
            viewport_height: VIEWPORT_HEIGHT,
            ..RenderConfig::default()
        };
        let n_regions = streamer.len();
        Ok(Self {
            dir: dir.to_owned(),
            clusters: Clusters {
                requests: coarsest.iter().map(|&c| ModelRequest::unseen(c)).collect(),
                metrics,
                model_bounds,
                coarsest,
                model_levels: vec![None; n_models],
                model_screen: vec![0.0; n_models],
                model_visible: vec![false; n_models],
                stats: FrameStats::default(),
            },
            buildings: Buildings::new(n_buildings),
            regions: Regions {
                objects: vec![Vec::new(); n_regions],
                scene,
                streamer,
                frame: RegionFrame::default(),
                completions: Vec::new(),
                created: 0,
                removed: 0,
            },
            vis: Visibility {
                store: {
                    // The pass reads each object's world box (32 bytes) instead of
                    // its matrix and local box, transformed once when it is created
                    // (the objects never move): the same decisions, fewer bytes
                    // and no transform per object per frame.
                    let mut store = ObjectStore::new();
                    store.keep_world_boxes(true);
                    store
                },
                objects: Vec::new(),
                cameras,
                camera,
                pass: VisibilitySystem::new(),
                settings,
                in_view: Vec::new(),
                prop_lods,
            },
            terrain: Terrain::new(grid),
            pools: Pools {
                bias: Bias::default(),
                memory_tight: false,
                asks: Vec::new(),
                targets: Vec::new(),
                partial: BTreeMap::new(),
            },
            io,
            manifest,
            config,
            frame: 0,
        })
    }

    /// The world's manifest.
    pub fn manifest(&self) -> &WorldManifest {
        &self.manifest
    }

    /// The settings the loop runs with.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// The world folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The region streamer (each region's state).
    pub fn streamer(&self) -> &RegionStreamer {
        &self.regions.streamer
    }

    /// The object store every loaded object is in.
    pub fn store(&self) -> &ObjectStore {
        &self.vis.store
    }

    /// The voxel grid, edits included.
    pub fn grid(&self) -> &VoxelGrid {
        &self.terrain.grid
    }

    /// The terrain chunks uploaded, with their level (`None`: known empty).
    pub fn terrain_levels(&self) -> impl Iterator<Item = (IVec3, Option<u8>)> + '_ {
        self.terrain
            .uploaded
            .iter()
            .map(|(c, u)| (IVec3::from_array(*c), (!u.empty).then_some(u.level)))
    }

    /// Every loaded object with its kind, box and the level it draws (`None`: none).
    pub fn objects(&self) -> impl Iterator<Item = (EntityKind, Aabb, Option<u8>)> + '_ {
        let vis = &self.vis.pass.visibility().objects;
        self.vis
            .objects
            .iter()
            .enumerate()
            .filter_map(move |(i, o)| {
                let id = ObjectId(i as u32);
                let mut bounds = *vis.bounds.get(i)?;
                // The pass writes no box for an object with no level to draw (a building
                // whose file failed): its placed box from the store.
                if bounds.is_empty() {
                    let placed = self.vis.store.world(id).unwrap_or(Mat4::IDENTITY);
                    bounds = farsight_geom::transform_aabb(&placed, &self.vis.store.bounds(id));
                }
                let level = || {
                    self.vis.store.lod(id).and_then(|l| l.current()).or(vis
                        .lod_level
                        .get(i)
                        .copied()
                        .filter(|&l| l != u8::MAX))
                };
                match *o {
                    Obj::Free => None,
                    Obj::Model { model, .. } => Some((
                        EntityKind::Model(model),
                        bounds,
                        self.drawn_cluster_level(model),
                    )),
                    Obj::Building(b) => Some((EntityKind::Building(b), bounds, level())),
                    Obj::Prop => Some((EntityKind::Prop(0), bounds, level())),
                }
            })
    }

    fn drawn_cluster_level(&self, model: u32) -> Option<u8> {
        let fit = self.clusters.requests.get(model as usize)?.fit;
        match &self.io {
            Io::Live { clusters, .. } => clusters.scheduler().drawn_level(model, fit),
            Io::Replay { scheduler, .. } => scheduler.drawn_level(model, fit),
        }
    }

    /// Whether everything around the camera is streamed in and drawn: no region
    /// loading, every model's coarsest level resident, the terrain meshed and
    /// uploaded, every building in an active region drawing a level (or its
    /// coarsest level given up: a hole, counted, not waited for).
    pub fn ready(&self) -> bool {
        self.waiting_on().is_none()
    }

    /// What a loading screen still waits for, if anything.
    pub fn waiting_on(&self) -> Option<&'static str> {
        let counts = self.regions.streamer.counts();
        if counts[1] > 0 || counts[4] > 0 {
            return Some("regions loading or unloading");
        }
        let scheduler: &ClusterScheduler = match &self.io {
            Io::Live {
                clusters,
                region_reads,
                view,
                ..
            } => {
                if *region_reads > 0 {
                    return Some("region reads");
                }
                // A paused mesher is not waited for: the terrain's base draws.
                if !view.is_paused() && (view.pending_count() > 0 || view.ready_count() > 0) {
                    return Some("terrain meshing");
                }
                clusters.scheduler()
            }
            Io::Replay { scheduler, .. } => scheduler,
        };
        let models = (0..self.manifest.models.len() as u32).all(|m| {
            let c = scheduler.coarsest(m);
            scheduler.is_resident(m, c) || scheduler.is_failed(m, c)
        });
        if !models {
            return Some("coarsest cluster levels");
        }
        // A building whose coarsest level was given up is not waited for (it is a
        // hole, counted as one).
        let buildings = (0..self.buildings.object.len())
            .all(|b| !self.buildings.active[b] || self.building_shows(b as u32));
        if !buildings {
            return Some("building meshes");
        }
        // A chunk that draws an older mesh is not waited for (under pressure the
        // bias may keep it coarser on purpose).
        let undrawn = self
            .terrain
            .pending
            .keys()
            .any(|c| self.terrain.uploaded.get(c).is_none_or(|u| u.empty));
        if undrawn {
            return Some("terrain uploads");
        }
        None
    }

    /// Pauses (or resumes) the terrain's background meshing (live only): a game
    /// pausing background work, or a test standing in for a mesher that cannot keep
    /// up. Chunks keep drawing what they drew, and chunks coming into range draw
    /// their base mesh.
    pub fn set_terrain_meshing_paused(&mut self, paused: bool) {
        if let Io::Live { view, .. } = &mut self.io {
            view.set_paused(paused);
        }
    }

    /// The base mesh (coarsest level, made on the loop's thread) `chunk` draws or
    /// is about to draw until a published mesh replaces it.
    pub fn terrain_base_mesh(&self, chunk: IVec3) -> Option<&Arc<ChunkMesh>> {
        self.terrain.base_meshes.get(&chunk.to_array())
    }

    /// The terrain colliders held: every chunk within the collision radius of a
    /// streaming source, and what the pools let the band beyond keep.
    pub fn collision(&self) -> &CollisionCache {
        &self.terrain.collision
    }

    /// The base mesh `chunk` draws now (not one waiting for its upload), if it
    /// draws its base.
    pub fn terrain_drawn_base(&self, chunk: IVec3) -> Option<&Arc<ChunkMesh>> {
        let key = chunk.to_array();
        let drawn = self.terrain.uploaded.get(&key).is_some_and(|u| !u.empty);
        (drawn && !self.terrain.base_pending.contains(&key))
            .then(|| self.terrain.base_meshes.get(&key))
            .flatten()
    }

    /// Waits a little for I/O (live only), for loading screens faster than the disk.
    pub fn wait_for_io(&mut self, timeout: Duration) {
        if let Io::Live {
            regions,
            drained,
            clusters,
            ..
        } = &mut self.io
        {
            if regions.in_flight() > 0 {
                regions.wait_some(timeout, drained);
            } else if clusters.reads_in_flight() > 0 {
                clusters.wait_for_io(timeout);
            } else {
                std::thread::sleep(timeout);
            }
        }
    }

    /// Runs one frame live: the I/O that completed is written into `input`.
    pub fn step(&mut self, input: &mut FrameInput) -> FrameReport {
        input.regions_done.clear();
        input.chunks_done.clear();
        input.terrain.clear();
        input.buildings_done.clear();
        self.run(input, true)
    }

    /// Runs one recorded frame.
    pub fn replay(&mut self, input: &FrameInput) -> FrameReport {
        let mut input = input.clone();
        self.run(&mut input, false)
    }

    /// The one bias every system coarsens by.
    fn bias(&self) -> u8 {
        self.pools.bias.bias
    }

    fn run(&mut self, input: &mut FrameInput, live: bool) -> FrameReport {
        let mut report = FrameReport {
            frame: self.frame,
            loading: input.loading,
            ..FrameReport::default()
        };
        let camera = Vec3::from_array(input.camera);
        let target = Vec3::from_array(input.target);
        let bias = self.bias();

        // I/O that completed (live): region reads and building file reads.
        self.drain_io(input);

        // Regions.
        let t = Instant::now();
        let h = self.stream_regions(input, live, camera);
        self.building_completions(input, &mut report);
        report.systems[SystemId::Regions as usize].time = t.elapsed();
        report.hashes[SystemId::Regions as usize] = h;
        report.objects_created = self.regions.created;
        report.objects_removed = self.regions.removed;

        // Visibility over every loaded object.
        let frustum = self.visibility_phase(camera, target, bias, &mut report);

        // Terrain: edits, view and publication (live), colliders: its asks for the
        // pools are known before any system is granted anything.
        let t = Instant::now();
        self.terrain_inputs(input, live, camera);
        let terrain_time = t.elapsed();

        // Cluster-level requests from the same view.
        let t = Instant::now();
        self.cluster_requests(camera, bias);
        let request_time = t.elapsed();

        // The pools: every system's asks in one order; the scheduler's share.
        let t = Instant::now();
        self.gather_asks(camera, bias);
        let plan = self.plan();
        let plan_time = t.elapsed();

        // Cluster-level residency within its share.
        let t = Instant::now();
        let hc = self.cluster_step(input, plan.upload, plan.memory);
        let cs = self.clusters.stats;
        report.systems[SystemId::Clusters as usize] = SystemFrame {
            time: request_time + t.elapsed(),
            memory: cs.bytes_resident,
            upload: cs.bytes_uploaded,
            holes: cs.holes,
        };
        report.hashes[SystemId::Clusters as usize] = hc;

        // Buildings and terrain take what the clusters left, in the same order.
        let t = Instant::now();
        let grants = self.apply_grants(cs, camera);
        let share_time = t.elapsed();
        self.report_buildings(&grants, share_time / 2, &frustum, &mut report);
        self.report_terrain(
            &grants,
            terrain_time + share_time / 2,
            camera,
            &frustum,
            &mut report,
        );

        // The budget: one bias from every system's pressure.
        self.budget_phase(&plan, &grants, plan_time, &mut report);
        report.regions = self.regions.streamer.counts();
        self.frame += 1;
        report
    }

    /// The visibility pass from this frame's camera, at the bias's LOD scale; the
    /// frustum the holes are counted in.
    fn visibility_phase(
        &mut self,
        camera: Vec3,
        target: Vec3,
        bias: u8,
        report: &mut FrameReport,
    ) -> Frustum {
        let t = Instant::now();
        let vis = &mut self.vis;
        *vis.cameras.get_mut(vis.camera).expect("the flight camera") =
            Camera::looking_at(projection(), camera, target);
        vis.settings.lod.lod_bias = 1.0 + 0.5 * bias as f32;
        let ctx = FrameContext {
            frame: self.frame as u64,
            host_view: None,
            cameras: &vis.cameras,
            world_epoch: 0,
            settings: &vis.settings,
            stereo_eyes: None,
        };
        vis.pass.update(&mut vis.store, &ctx);
        let out = vis.pass.visibility();
        vis.in_view.clear();
        vis.in_view.resize(vis.objects.len(), false);
        let mut hv = DecisionHash::default();
        for &i in &out.objects.visible {
            if let Some(v) = vis.in_view.get_mut(i as usize) {
                *v = true;
            }
            hv.u32(i);
            hv.u32(out.objects.lod_level.get(i as usize).copied().unwrap_or(0) as u32);
        }
        report.visible = out.objects.visible.len() as u32;
        report.objects = vis.store.len() as u32;
        report.lod_switches = vis.pass.stats().lod_switches;
        report.systems[SystemId::Visibility as usize].time = t.elapsed();
        report.hashes[SystemId::Visibility as usize] = hv.value();
        Frustum::from_view_projection(&(out.projection * out.view))
    }

    /// The buildings' share of the report.
    fn report_buildings(
        &self,
        grants: &Grants,
        time: Duration,
        frustum: &Frustum,
        report: &mut FrameReport,
    ) {
        report.building_levels_failed = self.buildings.failed.iter().map(|m| m.count_ones()).sum();
        report.systems[SystemId::Buildings as usize] = SystemFrame {
            time,
            memory: self.building_memory(),
            upload: grants.building_upload,
            holes: self.building_holes(frustum),
        };
        report.hashes[SystemId::Buildings as usize] = grants.building_hash;
    }

    /// The terrain's share of the report.
    fn report_terrain(
        &self,
        grants: &Grants,
        time: Duration,
        camera: Vec3,
        frustum: &Frustum,
        report: &mut FrameReport,
    ) {
        let t = &self.terrain;
        let (terrain_holes, base_drawn) = self.terrain_holes(camera, frustum);
        report.terrain_base_drawn = base_drawn;
        report.terrain_bases_made = t.remakes;
        report.terrain_bases_made_on_frame = t.frame_remakes;
        report.terrain_split = t.split;
        report.terrain_stale = t.stale.len() as u32;
        report.colliders = t.collision.len() as u32;
        report.collider_bytes = t.collision.heap_bytes() as u64;
        report.colliders_built = t.colliders_built;
        report.colliders_rebuilt = t.colliders_rebuilt;
        report.systems[SystemId::Terrain as usize] = SystemFrame {
            time,
            memory: self.terrain_memory(),
            upload: grants.terrain_upload,
            holes: terrain_holes,
        };
        report.hashes[SystemId::Terrain as usize] = grants.terrain_hash;
    }

    /// The budget: one bias from every system's pressure, and the frame's totals.
    fn budget_phase(
        &mut self,
        plan: &Plan,
        grants: &Grants,
        plan_time: Duration,
        report: &mut FrameReport,
    ) {
        let cs = self.clusters.stats;
        let memory = cs.bytes_resident
            + report.systems[SystemId::Buildings as usize].memory
            + report.systems[SystemId::Terrain as usize].memory;
        let upload = cs.bytes_uploaded + grants.building_upload + grants.terrain_upload;
        let b = self.config.budget;
        let held = self.held(self.scheduler().held_bytes());
        self.pools.memory_tight = held > b.fine_memory();
        let pressure = plan.short
            || grants.starved
            || cs.budget_exhausted
            || cs.memory_full
            || self.pools.memory_tight;
        self.pools.bias.update(pressure, &b);
        report.memory = memory;
        report.upload = upload;
        report.over_budget = memory > b.memory || upload > b.upload;
        report.bias = self.bias();
        let mut hb = DecisionHash::default();
        hb.u64(memory);
        hb.u64(upload);
        hb.u64(plan.upload);
        hb.u64(plan.memory);
        hb.u32(report.bias as u32);
        report.hashes[SystemId::Budget as usize] = hb.value();
        report.systems[SystemId::Budget as usize] = SystemFrame {
            time: plan_time,
            memory,
            upload,
            ..SystemFrame::default()
        };
    }

    /// Collects the I/O that completed (live): region reads into the landed queue
    /// (their entities kept for the region's creation; [`World::admit_regions`]
    /// hands them to the streamer), building file reads into `buildings_done`,
    /// each in the order of its id.
    fn drain_io(&mut self, input: &mut FrameInput) {
        let Io::Live {
            regions,
            drained,
            arrived,
            region_reads,
            landed,
            ..
        } = &mut self.io
        else {
            return;
        };
        regions.drain(drained);
        drained.sort_unstable_by_key(|d| (matches!(d.1, IoDone::Building(_)), d.0));
        for (id, done) in drained.drain(..) {
            match done {
                IoDone::Region(result) => {
                    *region_reads -= 1;
                    let region = id as u32;
                    let ok = match result {
                        Ok(e) => {
                            arrived.insert(region, e);
                            true
                        }
                        Err(e) => {
                            log::error!("region {region} failed to load: {e}");
                            false
                        }
                    };
                    landed.push((region, ok));
                }
                IoDone::Building(read) => {
                    let (building, level) = ((id >> 8) as u32, id as u8);
                    if let Err(e) = &read.result {
                        let entry = &self.manifest.buildings[building as usize];
                        log::warn!(
                            "building {} level {level}: {}: {e}",
                            entry.id,
                            self.dir.join(&entry.file).display()
                        );
                    }
                    input.buildings_done.push(BuildingDone {
                        building,
                        level,
                        ok: read.result.is_ok(),
                        bytes: read.bytes,
                    });
                }
            }
        }
    }

    /// Hands the streamer the region reads that landed (live): every one on a
    /// loading screen; otherwise nearest the camera first while their objects fit
    /// in [`REGION_OBJECTS_PER_FRAME`] (at least one region a frame). The others
    /// wait, still loading, for the next frames. What is handed over is the frame's
    /// recorded `regions_done`, so a replay creates the same regions.
    fn admit_regions(&mut self, input: &mut FrameInput, camera: Vec3) {
        let Io::Live {
            landed, arrived, ..
        } = &mut self.io
        else {
            return;
        };
        if landed.is_empty() {
            return;
        }
        let mut taken = landed.len();
        if !input.loading {
            let rank = RegionRank::new(&self.regions.streamer, &self.config, camera, input);
            landed.sort_unstable_by(|a, b| rank.cmp(a.0, b.0));
            let mut objects = 0;
            for (i, &(r, ok)) in landed.iter().enumerate() {
                let n = if ok {
                    arrived.get(&r).map_or(0, Vec::len)
                } else {
                    0
                };
                if i > 0 && objects + n > REGION_OBJECTS_PER_FRAME {
                    taken = i;
                    break;
                }
                objects += n;
            }
        }
        input.regions_done.extend(landed.drain(..taken));
    }

    fn stream_regions(&mut self, input: &mut FrameInput, live: bool, camera: Vec3) -> u64 {
        self.regions.completions.clear();
        self.regions.created = 0;
        self.regions.removed = 0;
        debug_assert!(live || matches!(self.io, Io::Replay { .. }));
        self.admit_regions(input, camera);
        self.regions.completions.extend(
            input
                .regions_done
                .iter()
                .map(|&(region, ok)| LoadCompletion { region, ok }),
        );
        let mut sources = [StreamingSource {
            position: camera,
            radius: self.config.source_radius,
            target: RegionState::Active,
        }; 2];
        let n = if let Some(p) = input.prefetch {
            sources[1] = StreamingSource {
                position: Vec3::from_array(p),
                radius: self.config.source_radius,
                target: RegionState::Resident,
            };
            2
        } else {
            1
        };
        self.regions.streamer.update(
            &sources[..n],
            &self.regions.completions,
            &mut self.regions.frame,
        );
        let mut h = DecisionHash::default();
        let f = std::mem::take(&mut self.regions.frame);
        for (tag, list) in [
            (1u32, &f.loads),
            (2, &f.creates),
            (3, &f.drops),
            (4, &f.activates),
            (5, &f.deactivates),
        ] {
            h.u32(tag);
            list.iter().for_each(|&r| h.u32(r));
        }
        for &r in &f.creates {
            let entities = match &mut self.io {
                Io::Live { arrived, .. } => arrived.remove(&r).unwrap_or_default(),
                // A replay reads the file the recorded completion says arrived.
                Io::Replay { .. } => {
                    read_region_file(&self.regions.scene.region_path(r)).unwrap_or_default()
                }
            };
            self.create_region(r, &entities);
        }
        for &r in &f.activates {
            self.set_region_visible(r, true);
        }
        for &r in &f.deactivates {
            self.set_region_visible(r, false);
        }
        for &r in &f.drops {
            self.drop_region(r);
        }
        if let Io::Live {
            regions,
            region_reads,
            unread,
            ..
        } = &mut self.io
        {
            unread.extend_from_slice(&f.loads);
            let room = if input.loading {
                unread.len()
            } else {
                REGION_READS_IN_FLIGHT.saturating_sub(*region_reads)
            };
            if room < unread.len() {
                let rank = RegionRank::new(&self.regions.streamer, &self.config, camera, input);
                unread.sort_unstable_by(|&a, &b| rank.cmp(a, b));
            }
            for r in unread.drain(..room.min(unread.len())) {
                let path: Arc<Path> = Arc::from(self.regions.scene.region_path(r));
                *region_reads += 1;
                regions.submit(r as u64, move || IoDone::Region(read_region_file(&path)));
            }
        }
        self.regions.frame = f;
        h.value()
    }

    fn put_object(&mut self, d: ObjectDesc, o: Obj) -> ObjectId {
        let id = self.vis.store.insert(d);
        let i = id.0 as usize;
        if self.vis.objects.len() <= i {
            self.vis.objects.resize(i + 1, Obj::Free);
        }
        self.vis.objects[i] = o;
        id
    }

    fn create_region(&mut self, region: u32, entities: &[EntityRecord]) {
        let mut ids = std::mem::take(&mut self.regions.objects[region as usize]);
        for e in entities {
            let Some(kind) = self.manifest.kind(e.model) else {
                log::warn!("region {region}: entity {} names no model", e.id);
                continue;
            };
            let placed = Mat4::from_scale_rotation_translation(
                Vec3::splat(e.scale),
                glam::Quat::IDENTITY,
                e.position,
            );
            let (desc, obj) = match kind {
                EntityKind::Model(m) => {
                    let [x, y, z, radius] = self.clusters.model_bounds[m as usize];
                    let c = Vec3::new(x, y, z);
                    let r = Vec3::splat(radius);
                    let mut d = ObjectDesc::new(
                        placed,
                        Aabb::new(c - r, c + r),
                        MeshHandle(m),
                        MaterialHandle(0),
                    );
                    d.visible = false;
                    let o = Obj::Model {
                        model: m,
                        center: placed.transform_point3(c),
                        radius: radius * e.scale,
                        scale: e.scale,
                    };
                    (d, o)
                }
                EntityKind::Building(b) => {
                    let entry = &self.manifest.buildings[b as usize];
                    let levels: Vec<EntityLodLevel> = entry
                        .levels
                        .iter()
                        .enumerate()
                        .map(|(l, lv)| {
                            let mut level = EntityLodLevel::new(
                                MeshHandle(1_000_000 + b * 8 + l as u32),
                                lv.until.unwrap_or(1.0e9),
                                entry.id.as_str(),
                            );
                            level.residency = Residency::NotResident;
                            level
                        })
                        .collect();
                    let Ok(mut lod) = EntityLod::new(levels) else {
                        log::warn!("building {}: levels refused", entry.id);
                        continue;
                    };
                    let mask = self.buildings.resident[b as usize];
                    for l in 0..entry.levels.len() {
                        if mask & (1 << l) != 0 {
                            lod.set_residency(l, Residency::Resident);
                        }
                    }
                    let mut d = ObjectDesc::new(
                        Mat4::IDENTITY,
                        Aabb::new(Vec3::from_array(entry.min), Vec3::from_array(entry.max)),
                        MeshHandle(1_000_000 + b * 8),
                        MaterialHandle(1),
                    );
                    d.visible = false;
                    d.lod = Some(lod);
                    (d, Obj::Building(b))
                }
                EntityKind::Prop(p) => {
                    let r = Vec3::splat(self.manifest.props[p as usize].radius);
                    let mut d = ObjectDesc::new(
                        placed,
                        Aabb::new(-r, r),
                        MeshHandle(2_000_000 + p * 8),
                        MaterialHandle(2),
                    );
                    d.visible = false;
                    d.lod = Some(self.vis.prop_lods[p as usize].clone());
                    (d, Obj::Prop)
                }
            };
            let mut desc = desc;
            desc.entity = e.id as u64;
            let id = self.put_object(desc, obj);
            if let Obj::Building(b) = obj {
                self.buildings.object[b as usize] = Some(id);
            }
            ids.push(id);
            self.regions.created += 1;
        }
        self.regions.objects[region as usize] = ids;
    }

    /// A building of an active region shows once it has a level to draw, or once
    /// its coarsest level was given up (then it is a hole while in view); until
    /// then it is on its way, as a region being read is.
    fn set_region_visible(&mut self, region: u32, on: bool) {
        for &id in &self.regions.objects[region as usize] {
            let show = match self.vis.objects[id.0 as usize] {
                Obj::Building(b) => {
                    self.buildings.active[b as usize] = on;
                    on && self.building_shows(b)
                }
                _ => on,
            };
            self.vis.store.set_visible(id, show);
        }
    }

    /// Whether building `b` has a level to draw or can never have one.
    fn building_shows(&self, b: u32) -> bool {
        let b = b as usize;
        let coarsest = self.manifest.buildings[b].levels.len() - 1;
        self.buildings.resident[b] != 0 || self.buildings.failed[b] & (1 << coarsest) != 0
    }

    /// Shows building `b` if its region is active and it now shows.
    fn show_building(&mut self, b: u32) {
        if let Some(id) = self.buildings.object[b as usize] {
            if self.buildings.active[b as usize] && self.building_shows(b) {
                self.vis.store.set_visible(id, true);
            }
        }
    }

    fn drop_region(&mut self, region: u32) {
        let ids = std::mem::take(&mut self.regions.objects[region as usize]);
        for &id in &ids {
            if let Obj::Building(b) = self.vis.objects[id.0 as usize] {
                // Its meshes go with it.
                self.buildings.resident[b as usize] = 0;
                self.buildings.spare_since[b as usize] = u32::MAX;
                self.buildings.object[b as usize] = None;
                self.buildings.active[b as usize] = false;
                // A read still in flight is forgotten when it lands.
                self.buildings.load[b as usize] = None;
                self.pools
                    .partial
                    .retain(|k, _| !(k.0 == 0 && k.1[0] == b as i32));
            }
            self.vis.objects[id.0 as usize] = Obj::Free;
            self.vis.store.remove(id);
        }
        self.regions.removed += ids.len() as u32;
        let mut ids = ids;
        ids.clear();
        self.regions.objects[region as usize] = ids;
    }

    /// Each model's request from the same view: the finest level any visible
    /// instance needs, `wanted` that plus the bias. Under memory pressure what is
    /// kept coarsens too, so levels finer than `wanted` may be evicted.
    fn cluster_requests(&mut self, camera: Vec3, bias: u8) {
        let view = LevelView {
            camera,
            projection: ProjectionInfo::perspective(FOV_Y),
            viewport_height: VIEWPORT_HEIGHT,
            threshold_px: 1.0,
            bias: bias as u32,
        };
        self.clusters
            .model_levels
            .iter_mut()
            .for_each(|l| *l = None);
        self.clusters
            .model_visible
            .iter_mut()
            .for_each(|v| *v = false);
        self.clusters.model_screen.iter_mut().for_each(|s| *s = 0.0);
        for (i, o) in self.vis.objects.iter().enumerate() {
            let Obj::Model {
                model,
                center,
                radius,
                scale,
            } = *o
            else {
                continue;
            };
            if !self.vis.store.is_visible(ObjectId(i as u32)) {
                continue;
            }
            let m = model as usize;
            let inst = InstanceBounds {
                center,
                radius,
                scale,
            };
            let l = model_levels(
                LevelMetric::ParentErrors(&self.clusters.metrics[m]),
                &inst,
                &view,
            );
            self.clusters.model_levels[m] =
                Some(self.clusters.model_levels[m].map_or(l, |o| o.finest(l)));
            if self.vis.in_view.get(i).copied().unwrap_or(false) {
                self.clusters.model_visible[m] = true;
                let d = center.distance(camera) - radius;
                self.clusters.model_screen[m] =
                    self.clusters.model_screen[m].max(screen_px(radius, d));
            }
        }
        let tight = self.pools.memory_tight;
        for (m, r) in self.clusters.requests.iter_mut().enumerate() {
            let c = self.clusters.coarsest[m];
            *r = match self.clusters.model_levels[m] {
                Some(l) => {
                    let wanted = ModelRequest::wanted_for(l.fit as u8, bias, c);
                    ModelRequest {
                        fit: l.fit as u8,
                        keep: if tight {
                            (l.keep as u8).max(wanted)
                        } else {
                            l.keep as u8
                        },
                        wanted,
                        screen_size: self.clusters.model_screen[m],
                        visible: self.clusters.model_visible[m],
                    }
                }
                None => ModelRequest::unseen(c),
            };
        }
    }

    /// The scheduler's step under this frame's share of the pools.
    fn cluster_step(&mut self, input: &mut FrameInput, upload: u64, memory: u64) -> u64 {
        let mut h = DecisionHash::default();
        let stats = match &mut self.io {
            Io::Live { clusters, .. } => {
                clusters.set_budgets(upload, memory);
                let stats = clusters.frame(&self.clusters.requests);
                input.chunks_done.extend(
                    clusters
                        .last_completions()
                        .iter()
                        .map(|c| (c.request, c.ok)),
                );
                clusters
                    .last_decisions()
                    .iter()
                    .for_each(|d| hash_decision(&mut h, d));
                stats
            }
            Io::Replay {
                scheduler,
                decisions,
                completions,
            } => {
                scheduler.set_budgets(upload, memory);
                completions.clear();
                completions.extend(
                    input
                        .chunks_done
                        .iter()
                        .map(|&(request, ok)| ChunkCompletion { request, ok }),
                );
                decisions.clear();
                let stats = scheduler.step(&self.clusters.requests, completions, decisions);
                decisions.iter().for_each(|d| hash_decision(&mut h, d));
                stats
            }
        };
        h.u64(upload);
        h.u64(memory);
        h.u64(stats.bytes_uploaded);
        h.u64(stats.bytes_resident);
        h.u32(stats.holes);
        self.clusters.stats = stats;
        h.value()
    }

    fn scheduler(&self) -> &ClusterScheduler {
        match &self.io {
            Io::Live { clusters, .. } => clusters.scheduler(),
            Io::Replay { scheduler, .. } => scheduler,
        }
    }

    fn terrain_inputs(&mut self, input: &mut FrameInput, live: bool, camera: Vec3) {
        let t = Instant::now();
        let before = (self.terrain.grid.generation(), self.terrain.grid.revision());
        for e in &input.edits {
            let material = if e.carve {
                Material::AIR
            } else {
                Material::ROCK
            };
            if let Err(err) =
                self.terrain
                    .grid
                    .set_sphere(Vec3::from_array(e.center), e.radius, material)
            {
                log::warn!("terrain edit refused: {err}");
            }
        }
        self.terrain.split.edits = t.elapsed();
        let t = Instant::now();
        if let (true, Io::Live { view, seen, .. }) = (live, &mut self.io) {
            view.update(&self.terrain.grid, camera);
            let mut out: Vec<TerrainPublication> = Vec::new();
            for (c, level, mesh) in view.published() {
                let id = mesh.map_or(0, |m| Arc::as_ptr(m) as usize);
                if seen.get(&c) != Some(&(level, id)) {
                    seen.insert(c, (level, id));
                    out.push(TerrainPublication {
                        chunk: c.to_array(),
                        level,
                        bytes: mesh.map_or(0, |m| m.heap_bytes() as u64),
                        empty: mesh.is_none_or(|m| m.is_empty()),
                    });
                }
            }
            let gone: Vec<IVec3> = seen
                .keys()
                .filter(|c| view.level(**c).is_none())
                .copied()
                .collect();
            for c in gone {
                seen.remove(&c);
                out.push(TerrainPublication {
                    chunk: c.to_array(),
                    level: u8::MAX,
                    bytes: 0,
                    empty: true,
                });
            }
            out.sort_by_key(|p| p.chunk);
            input.terrain = out;
        }
        for p in &input.terrain {
            if p.level == u8::MAX {
                self.terrain.pending.remove(&p.chunk);
                self.terrain.uploaded.remove(&p.chunk);
            } else if p.empty {
                self.terrain.pending.remove(&p.chunk);
                self.terrain.uploaded.insert(
                    p.chunk,
                    Uploaded {
                        level: p.level,
                        bytes: 0,
                        empty: true,
                    },
                );
            } else {
                self.terrain.pending.insert(p.chunk, *p);
                self.pools.partial.remove(&(1, p.chunk));
            }
            if p.level == u8::MAX || p.empty {
                self.terrain.base_meshes.remove(&p.chunk);
                self.terrain.stale.remove(&p.chunk);
            }
            self.terrain.base_pending.remove(&p.chunk);
        }
        self.terrain.early_upload = 0;
        self.terrain.remakes = 0;
        self.terrain.frame_remakes = 0;
        self.terrain.split.view = t.elapsed();
        let t = Instant::now();
        self.edited(before, camera);
        self.remake_stale(camera);
        self.terrain.split.stale = t.elapsed();
        let t = Instant::now();
        self.base(camera);
        self.terrain.split.base = t.elapsed();
        let t = Instant::now();
        self.colliders(input, camera);
        self.terrain.split.colliders = t.elapsed();
    }

    /// After an edit, every chunk whose pending mesh read an edited cell loses it,
    /// and every chunk whose drawn mesh did joins the stale queue: its base mesh
    /// (the coarsest level, from the edited grid) replaces the stale one within a
    /// few frames, nearest the camera first ([`World::remake_stale`]), whether or
    /// not the background mesher keeps up (paused, or its result still on the way:
    /// its serial makes any older result void); the mesher's result replaces the
    /// base when it is published and uploaded. An edited chunk beyond preload range
    /// drops its mesh (docs/design/voxel-terrain.md#render-levels-and-residency: it cannot reappear stale).
    fn edited(&mut self, before: (u64, u64), camera: Vec3) {
        let mut h = DecisionHash::default();
        if before == (self.terrain.grid.generation(), self.terrain.grid.revision()) {
            self.terrain.edit_hash = 0;
            return;
        }
        let Changes::Delta { changed, removed } =
            self.terrain.grid.changes_since(before.0, before.1)
        else {
            unreachable!("an edit keeps the grid's generation");
        };
        let coarsest = farsight_terrain::LEVELS - 1;
        // Chunks whose drawn mesh read an edited cell (at the level it draws), and
        // those whose pending mesh did (at its level).
        let (mut drawn, mut pending) = (ChunkSet::default(), ChunkSet::default());
        {
            let (up, pend) = (&self.terrain.uploaded, &self.terrain.pending);
            // A chunk drawn as empty was found empty at its level: an edit beyond
            // that level's reach cannot give it a surface, so it keeps its state (the
            // coarsest reach, 17 cells, remade the base of every empty neighbour of
            // nearly every edit on the frame).
            let drawn_level = |c: IVec3| up.get(&c.to_array()).map_or(coarsest, |u| u.level);
            let pending_level = |c: IVec3| pend.get(&c.to_array()).map_or(coarsest, |p| p.level);
            for ch in &changed {
                affected_chunks(ch.global_bounds(), drawn_level, &mut drawn);
                affected_chunks(ch.global_bounds(), pending_level, &mut pending);
            }
        }
        for &r in &removed {
            removal_affected(r, &mut drawn);
            removal_affected(r, &mut pending);
        }
        // Chunks an edit made dense (or uniform) join (or leave) the base's list.
        for c in changed
            .iter()
            .map(|ch| ch.chunk)
            .chain(removed.iter().copied())
        {
            let dense = self
                .terrain
                .grid
                .entry(c)
                .is_some_and(|e| matches!(*e.cells, ChunkCells::Dense(_)));
            let at = self
                .terrain
                .dense
                .binary_search_by_key(&(c.x, c.y, c.z), |d| (d.x, d.y, d.z));
            match (at, dense) {
                (Err(i), true) => self.terrain.dense.insert(i, c),
                (Ok(i), false) => {
                    self.terrain.dense.remove(i);
                }
                _ => {}
            }
        }
        // A stale pending mesh is never uploaded (the mesher's next result, or the
        // base, takes its place).
        let mut list: Vec<IVec3> = pending
            .into_iter()
            .filter(|c| self.terrain.pending.contains_key(&c.to_array()))
            .collect();
        list.sort_unstable_by_key(|c| (c.x, c.y, c.z));
        for c in &list {
            let key = c.to_array();
            self.terrain.pending.remove(&key);
            self.pools.partial.remove(&(1, key));
            if self.terrain.base_pending.remove(&key) {
                self.terrain.base_meshes.remove(&key);
            }
            key.iter().for_each(|&x| h.u32(x as u32));
        }
        // A stale drawn mesh within preload range waits in the stale queue for its
        // base (the nearest ones are remade this very frame); one beyond is dropped.
        list.clear();
        list.extend(
            drawn
                .into_iter()
                .filter(|c| self.terrain.uploaded.contains_key(&c.to_array())),
        );
        list.sort_unstable_by_key(|c| (c.x, c.y, c.z));
        let preload = self.config.draw_distance + CHUNK_SIZE;
        for c in list {
            let key = c.to_array();
            key.iter().for_each(|&x| h.u32(x as u32));
            if chunk_distance(camera, c) > preload {
                self.terrain.uploaded.remove(&key);
                self.terrain.stale.remove(&key);
                if !self.terrain.base_pending.contains(&key) {
                    self.terrain.base_meshes.remove(&key);
                }
                h.u32(u32::MAX);
            } else {
                self.terrain.stale.insert(key);
            }
        }
        self.terrain.edit_hash = h.value();
    }

    /// Remakes the base meshes of the stale queue's chunks nearest the camera, at
    /// most [`BASES_PER_FRAME`] a frame (made on the worker threads), each replacing
    /// the chunk's stale drawn mesh; the others keep drawing theirs a few frames
    /// more. A chunk leaves the queue once it draws a mesh made after the edit (its
    /// base here, a publication uploaded, a base drawn to make room) or nothing.
    fn remake_stale(&mut self, camera: Vec3) {
        self.terrain.stale_hash = 0;
        if self.terrain.stale.is_empty() {
            return;
        }
        let mut h = DecisionHash::default();
        let uploaded = &self.terrain.uploaded;
        self.terrain.stale.retain(|k| uploaded.contains_key(k));
        let mut queue: Vec<(f32, IVec3)> = self
            .terrain
            .stale
            .iter()
            .map(|&k| {
                let c = IVec3::from_array(k);
                (chunk_distance(camera, c), c)
            })
            .collect();
        queue.sort_unstable_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((a.1.x, a.1.y, a.1.z).cmp(&(b.1.x, b.1.y, b.1.z)))
        });
        queue.truncate(BASES_PER_FRAME);
        let remade: Vec<IVec3> = queue.into_iter().map(|(_, c)| c).collect();
        let coarsest = farsight_terrain::LEVELS - 1;
        // The colliders an edit reached are rebuilt meanwhile, on the same workers
        // (`colliders` takes the update): the frame waits for the longer of the
        // two, not for both one after the other.
        let (grid, collision) = (&self.terrain.grid, &mut self.terrain.collision);
        let (meshes, update) =
            rayon::join(|| make_bases(grid, &remade), || collision.refresh(grid));
        self.terrain.collider_update = Some(update);
        self.terrain.remakes += remade.len() as u32;
        for (c, mesh) in remade.into_iter().zip(meshes) {
            let key = c.to_array();
            self.terrain.stale.remove(&key);
            key.iter().for_each(|&x| h.u32(x as u32));
            let bytes = mesh.heap_bytes() as u64;
            h.u64(bytes);
            if self.terrain.base_pending.remove(&key) {
                // The base waiting for its upload is this one now.
                self.terrain.pending.remove(&key);
                self.pools.partial.remove(&(1, key));
            }
            if mesh.is_empty() {
                self.terrain.base_meshes.remove(&key);
                self.terrain.uploaded.insert(
                    key,
                    Uploaded {
                        level: coarsest,
                        bytes: 0,
                        empty: true,
                    },
                );
            } else {
                self.terrain.early_upload += bytes;
                self.draw_base(key, mesh);
            }
        }
        h.u64(self.terrain.stale.len() as u64);
        self.terrain.stale_hash = h.value();
    }

    /// The colliders every source needs now: held ones an edit reached are rebuilt,
    /// those far from every source freed, and every chunk within the collision
    /// radius of a source built here and now (a source never stands on a chunk
    /// without its collider).
    fn colliders(&mut self, input: &FrameInput, camera: Vec3) {
        let mut h = DecisionHash::default();
        self.terrain.sources[0] = camera;
        self.terrain.n_sources = 1;
        if let Some(p) = input.prefetch {
            self.terrain.sources[1] = Vec3::from_array(p);
            self.terrain.n_sources = 2;
        }
        self.terrain.colliders_built = 0;
        let up = match self.terrain.collider_update.take() {
            Some(up) => up,
            None => self.terrain.collision.refresh(&self.terrain.grid),
        };
        self.terrain.colliders_rebuilt = up.rebuilt as u32;
        h.u64(up.rebuilt as u64);
        h.u64(up.removed as u64);
        let version = (self.terrain.grid.generation(), self.terrain.grid.revision());
        if self.terrain.range_version != version {
            self.terrain.range_version = version;
            let mut coords = self.terrain.grid.chunk_coords();
            if let Some(first) = coords.next() {
                let (lo, hi) = coords.fold((first, first), |(lo, hi), c| (lo.min(c), hi.max(c)));
                self.terrain.chunk_range = (lo - IVec3::ONE, hi + IVec3::ONE);
            } else {
                self.terrain.chunk_range = (IVec3::ONE, IVec3::ZERO);
            }
        }
        let radius = self.config.collision_radius;
        let retain = radius + 2.0 * CHUNK_SIZE;
        let sources = &self.terrain.sources[..self.terrain.n_sources];
        self.terrain.collider_list.clear();
        self.terrain.collider_list.extend(
            self.terrain
                .collision
                .held()
                .filter(|&c| source_distance(sources, c) > retain),
        );
        self.terrain
            .collider_list
            .sort_unstable_by_key(|c| (c.x, c.y, c.z));
        for &c in &self.terrain.collider_list {
            self.terrain.collision.evict(c);
            h.u32(0x8000_0000);
            c.to_array().iter().for_each(|&x| h.u32(x as u32));
        }
        self.near_sources(radius);
        self.terrain.collider_list.clear();
        let collision = &self.terrain.collision;
        // Within the camera's radius every collider is built now; a prefetched
        // target's are built a few a frame, nearest it first, before it is reached.
        let mut prefetched = 0;
        for &(_, c) in &self.terrain.near {
            if collision.holds(c) {
                continue;
            }
            if source_distance(&[camera], c) > radius {
                if prefetched == PREFETCH_COLLIDERS_PER_FRAME {
                    continue;
                }
                prefetched += 1;
            }
            self.terrain.collider_list.push(c);
        }
        if !self.terrain.collider_list.is_empty() {
            self.terrain
                .collision
                .build(&self.terrain.grid, &self.terrain.collider_list);
            let list = std::mem::take(&mut self.terrain.collider_list);
            for &c in &list {
                let bytes = self.collider_built(c);
                c.to_array().iter().for_each(|&x| h.u32(x as u32));
                h.u64(bytes);
            }
            self.terrain.collider_list = list;
        }
        self.terrain.collider_hash = h.value();
    }

    /// Counts a collider just built: its bytes (0 for a chunk without surface,
    /// nothing to upload) and the estimate for those not built yet.
    fn collider_built(&mut self, c: IVec3) -> u64 {
        let bytes = if self.terrain.collision.collider(c).is_some() {
            self.terrain.collision.bytes_of(c) as u64
        } else {
            0
        };
        self.terrain.collider_estimate = self.terrain.collider_estimate.max(bytes);
        self.terrain.colliders_built += 1;
        bytes
    }

    /// The chunks of the grid's range within `reach` of a source, with their
    /// distance to the nearest source, nearest first, into `near`.
    fn near_sources(&mut self, reach: f32) {
        self.terrain.near.clear();
        let (lo, hi) = self.terrain.chunk_range;
        let sources = &self.terrain.sources[..self.terrain.n_sources];
        let chunk = |p: f32| (p / CHUNK_SIZE).floor() as i32;
        for s in sources {
            let a = IVec3::new(chunk(s.x - reach), chunk(s.y - reach), chunk(s.z - reach)).max(lo);
            let b = IVec3::new(chunk(s.x + reach), chunk(s.y + reach), chunk(s.z + reach)).min(hi);
            for z in a.z..=b.z {
                for y in a.y..=b.y {
                    for x in a.x..=b.x {
                        let c = IVec3::new(x, y, z);
                        let d = source_distance(sources, c);
                        if d <= reach {
                            self.terrain.near.push((d, c));
                        }
                    }
                }
            }
        }
        self.terrain.near.sort_unstable_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((a.1.x, a.1.y, a.1.z).cmp(&(b.1.x, b.1.y, b.1.z)))
        });
        self.terrain.near.dedup_by_key(|n| n.1);
    }

    /// Gives every dense chunk within preload range that has nothing drawn and
    /// nothing pending its base mesh (the coarsest level), made here and now.
    fn base(&mut self, camera: Vec3) {
        let preload = self.config.draw_distance + CHUNK_SIZE;
        let coarsest = farsight_terrain::LEVELS - 1;
        let mut h = DecisionHash::default();
        let new: Vec<IVec3> = self
            .terrain
            .dense
            .iter()
            .copied()
            .filter(|&c| {
                let key = c.to_array();
                chunk_distance(camera, c) <= preload
                    && !self.terrain.uploaded.contains_key(&key)
                    && !self.terrain.pending.contains_key(&key)
            })
            .collect();
        let meshes = self.make_bases(&new);
        for (c, mesh) in new.into_iter().zip(meshes) {
            let key = c.to_array();
            let p = TerrainPublication {
                chunk: key,
                level: coarsest,
                bytes: mesh.heap_bytes() as u64,
                empty: mesh.is_empty(),
            };
            key.iter().for_each(|&x| h.u32(x as u32));
            h.u64(p.bytes);
            if p.empty {
                self.terrain.uploaded.insert(
                    key,
                    Uploaded {
                        level: coarsest,
                        bytes: 0,
                        empty: true,
                    },
                );
            } else {
                self.terrain.pending.insert(key, p);
                self.terrain.base_pending.insert(key);
                self.terrain.base_meshes.insert(key, Arc::new(mesh));
            }
        }
        self.terrain.base_hash = h.value();
    }

    fn building_bytes(&self, b: u32, mask: u32) -> u64 {
        self.manifest.buildings[b as usize]
            .levels
            .iter()
            .enumerate()
            .filter(|(l, _)| mask & (1 << l) != 0)
            .map(|(_, lv)| lv.bytes)
            .sum()
    }

    /// Bytes every system holds: cluster levels resident or loading (`clusters`),
    /// building meshes, terrain meshes and colliders.
    fn held(&self, clusters: u64) -> u64 {
        clusters + self.building_memory() + self.terrain_memory()
    }

    /// Building levels resident, and those on their way from their files.
    fn building_memory(&self) -> u64 {
        self.buildings
            .resident
            .iter()
            .zip(&self.buildings.load)
            .enumerate()
            .map(|(b, (&m, load))| {
                let loading = load.map_or(0, |l| 1 << l.level);
                self.building_bytes(b as u32, m | loading)
            })
            .sum()
    }

    /// Starts (live) the read of `building`'s file for `level`, after `failures`
    /// failed reads of it; a replay takes the completion from the recording.
    fn start_building_read(&mut self, building: u32, level: u8, failures: u8) {
        self.buildings.load[building as usize] = Some(BuildingLoad {
            level,
            read: false,
            failures,
        });
        if let Io::Live { regions, .. } = &mut self.io {
            let entry = &self.manifest.buildings[building as usize];
            let path = self.dir.join(&entry.file);
            let id = entry.id.clone();
            let levels = entry.levels.len();
            regions.submit(((building as u64) << 8) | level as u64, move || {
                IoDone::Building(read_building_level(&path, &id, levels, level))
            });
        }
    }

    /// The building file reads that finished: a level read and checked goes on to
    /// its upload; a failed read is tried again, and after the last try the level
    /// is given up, loudly (the coarser level is drawn, or, for the coarsest,
    /// nothing: a hole while it is in view). Reads of levels no longer on their way
    /// (their region dropped) are counted and otherwise ignored.
    fn building_completions(&mut self, input: &FrameInput, report: &mut FrameReport) {
        let mut h = DecisionHash::default();
        for d in &input.buildings_done {
            report.building_reads += 1;
            report.building_read_bytes += d.bytes;
            report.building_read_errors += u32::from(!d.ok);
            let b = d.building as usize;
            let Some(Some(load)) = self.buildings.load.get(b).copied() else {
                continue;
            };
            if load.read || load.level != d.level {
                continue;
            }
            h.u32(d.building);
            h.u32(d.level as u32);
            h.u32(d.ok as u32);
            if d.ok {
                self.buildings.load[b] = Some(BuildingLoad { read: true, ..load });
                continue;
            }
            let failures = load.failures + 1;
            if failures < BUILDING_TRIES {
                self.start_building_read(d.building, d.level, failures);
                continue;
            }
            self.buildings.load[b] = None;
            self.buildings.failed[b] |= 1 << d.level;
            self.show_building(d.building);
            let entry = &self.manifest.buildings[b];
            let instead = if d.level as usize + 1 == entry.levels.len() {
                "its coarsest level: the building is not drawn"
            } else {
                "a coarser level is drawn instead"
            };
            log::error!(
                "building {} level {}: its file {} failed {failures} reads and is given up; {instead}",
                entry.id,
                d.level,
                self.dir.join(&entry.file).display(),
            );
        }
        self.buildings.io_hash = h.value();
    }

    fn terrain_memory(&self) -> u64 {
        self.terrain.uploaded.values().map(|u| u.bytes).sum::<u64>()
            + self.terrain.collision.heap_bytes() as u64
    }

    /// Every system's asks of the pools, in the pools' one order.
    fn gather_asks(&mut self, camera: Vec3, bias: u8) {
        self.pools.asks.clear();
        self.pools.targets.clear();
        self.collider_asks();
        self.cluster_asks();
        self.building_asks(camera);
        self.terrain_asks(camera, bias);
        order(&mut self.pools.asks);
    }

    /// The asks of the colliders ahead.
    fn collider_asks(&mut self) {
        // Colliders: the band one chunk beyond the radius, built ahead so a moving
        // source finds its colliders there (within the radius all are held).
        let radius = self.config.collision_radius;
        self.near_sources(radius + CHUNK_SIZE);
        let chunk_radius = chunk_bounds(IVec3::ZERO).radius();
        for &(d, c) in &self.terrain.near {
            if d <= radius || self.terrain.collision.holds(c) {
                continue;
            }
            self.pools.asks.push(Ask {
                rank: 1,
                screen: screen_px(chunk_radius, d),
                bytes: 0,
                key: self.pools.targets.len() as u64,
            });
            self.pools.targets.push(Target::Collider {
                chunk: c,
                need: self.terrain.collider_estimate,
            });
        }
    }

    /// The cluster scheduler's asks.
    fn cluster_asks(&mut self) {
        // Clusters: per model, every level from the coarsest missing one to the
        // wanted one (the scheduler starts them coarse to fine): those loading ask
        // for their upload, those to start for their memory and their upload.
        let sched = match &self.io {
            Io::Live { clusters, .. } => clusters.scheduler(),
            Io::Replay { scheduler, .. } => scheduler,
        };
        for (m, r) in self.clusters.requests.iter().enumerate() {
            let m = m as u32;
            let c = sched.coarsest(m);
            for level in (r.wanted.min(c)..=c).rev() {
                if sched.is_resident(m, level) {
                    continue;
                }
                if sched.is_failed(m, level) {
                    break;
                }
                self.pools.asks.push(Ask {
                    rank: c - level,
                    screen: r.screen_size,
                    bytes: sched.level_desc(m, level).bytes,
                    key: self.pools.targets.len() as u64,
                });
                self.pools.targets.push(Target::Cluster {
                    loading: sched.is_loading(m, level),
                });
            }
        }
    }

    /// The buildings' asks.
    fn building_asks(&mut self, camera: Vec3) {
        // Buildings: every loaded building with nothing to draw asks for its
        // coarsest level (a region's buildings load it as soon as the region is
        // read, shown when it is in); a visible one asks one level finer than the
        // finest resident, towards the desired one.
        for (b, obj) in self.buildings.object.iter().enumerate() {
            let Some(id) = *obj else { continue };
            let mask = self.buildings.resident[b];
            if mask != 0 && !self.vis.store.is_visible(id) && self.buildings.load[b].is_none() {
                continue;
            }
            let Some(lod) = self.vis.store.lod(id) else {
                continue;
            };
            let n = lod.level_count() as u8;
            let coarsest = n - 1;
            let desired = lod.desired().min(coarsest);
            let entry = &self.manifest.buildings[b];
            // A level on its way from its file goes on (its file read first); a
            // building without a file (generated sizes) uploads at once.
            let (level, start) = match self.buildings.load[b] {
                Some(load) if !load.read => continue,
                Some(load) => (load.level, false),
                None => {
                    let want = if mask == 0 {
                        Some(coarsest)
                    } else {
                        let finest = mask.trailing_zeros() as u8;
                        (desired < finest).then(|| finest - 1)
                    };
                    // A level given up is not asked for again: the coarser level
                    // stays drawn, or nothing.
                    match want {
                        Some(l) if self.buildings.failed[b] & (1 << l) == 0 => {
                            (l, !entry.file.is_empty())
                        }
                        _ => continue,
                    }
                }
            };
            let bytes = entry.levels[level as usize].bytes;
            let bounds = self.vis.store.bounds(id);
            let r = (bounds.max - bounds.min).length() * 0.5;
            let d = bounds.center().distance(camera) - r;
            let key = (0u8, [b as i32, level as i32, 0]);
            let done = self.pools.partial.get(&key).copied().unwrap_or(0);
            // Memory is held from the start of a file's read.
            let need = if start || entry.file.is_empty() {
                bytes
            } else {
                0
            };
            self.pools.asks.push(Ask {
                rank: coarsest - level,
                screen: screen_px(r, d),
                bytes: if start { 0 } else { bytes.saturating_sub(done) },
                key: self.pools.targets.len() as u64,
            });
            self.pools.targets.push(Target::Building {
                building: b as u32,
                level,
                need,
                start,
            });
        }
    }

    /// The terrain chunks' asks.
    fn terrain_asks(&mut self, camera: Vec3, bias: u8) {
        // Terrain: a chunk drawing nothing asks first; a change of level ranks as
        // the level it brings.
        for (c, p) in &self.terrain.pending {
            let old = self.terrain.uploaded.get(c);
            // Under pressure a chunk that draws something keeps it rather than go finer.
            if old.is_some_and(|o| !o.empty && p.level < o.level && p.level < bias) {
                continue;
            }
            let rank = if old.is_none_or(|o| o.empty) {
                0
            } else {
                1 + (farsight_terrain::LEVELS - 1).saturating_sub(p.level)
            };
            let chunk = IVec3::from_array(*c);
            let radius = farsight_terrain::chunk_bounds(chunk).radius();
            let done = self.pools.partial.get(&(1, *c)).copied().unwrap_or(0);
            self.pools.asks.push(Ask {
                rank,
                screen: screen_px(radius, chunk_distance(camera, chunk)),
                bytes: p.bytes.saturating_sub(done),
                key: self.pools.targets.len() as u64,
            });
            self.pools.targets.push(Target::Chunk { chunk: *c });
        }
    }

    /// The pools' first pass over every ask in order: what the cluster scheduler's
    /// asks are granted is its (upload, memory capacity) for this frame.
    fn plan(&self) -> Plan {
        let b = &self.config.budget;
        let cluster_held = self.scheduler().held_bytes();
        let mut held = self.held(cluster_held);
        let mut upload_left = b.upload.saturating_sub(self.terrain.early_upload);
        let (mut upload, mut memory) = (0u64, 0u64);
        let mut starved = false;
        for a in &self.pools.asks {
            let (need, freed) = match self.pools.targets[a.key as usize] {
                Target::Cluster { loading } => (if loading { 0 } else { a.bytes }, 0),
                Target::Building { need, .. } => (need, 0),
                Target::Collider { need, .. } => (need, 0),
                Target::Chunk { chunk } => (
                    self.terrain.pending.get(&chunk).map_or(0, |p| p.bytes),
                    self.terrain.uploaded.get(&chunk).map_or(0, |u| u.bytes),
                ),
            };
            let waits_upload = upload_left == 0 && a.bytes > 0;
            if !b.fits(a.rank, held, need, freed) || waits_upload {
                starved = true;
                continue;
            }
            let up = a.bytes.min(upload_left);
            starved |= up < a.bytes;
            upload_left -= up;
            held = (held + need).saturating_sub(freed);
            if let Target::Cluster { .. } = self.pools.targets[a.key as usize] {
                upload += up;
                memory += need;
            }
        }
        Plan {
            upload,
            memory: cluster_held + memory,
            short: starved,
        }
    }

    /// The pools' second pass: buildings and terrain take, in the same order, what
    /// the cluster scheduler left of the upload and of the memory.
    fn apply_grants(&mut self, cs: FrameStats, camera: Vec3) -> Grants {
        let b = self.config.budget;
        let mut g = GrantPass {
            upload_left: b
                .upload
                .saturating_sub(cs.bytes_uploaded + self.terrain.early_upload),
            held: self.held(self.scheduler().held_bytes()),
            hb: DecisionHash::default(),
            ht: DecisionHash::default(),
            bytes_b: 0,
            bytes_t: self.terrain.early_upload,
            starved: false,
            prebuilt: 0,
        };
        for i in 0..self.pools.asks.len() {
            let a = self.pools.asks[i];
            let target = self.pools.targets[a.key as usize];
            let upload = match target {
                Target::Cluster { .. } => continue,
                Target::Collider { chunk, need } => {
                    self.grant_collider(&mut g, a.rank, chunk, need);
                    continue;
                }
                Target::Chunk { chunk } => (
                    self.terrain.pending.get(&chunk).map_or(0, |p| p.bytes),
                    self.terrain.uploaded.get(&chunk).map_or(0, |u| u.bytes),
                    (1u8, chunk),
                ),
                Target::Building {
                    building,
                    level,
                    need,
                    start: true,
                    ..
                } => {
                    // The read starts when its memory fits; it uploads nothing yet.
                    if !b.fits(a.rank, g.held, need, 0) {
                        g.starved = true;
                        continue;
                    }
                    g.held += need;
                    self.start_building_read(building, level, 0);
                    g.hb.u32(0x4000_0000 | building);
                    g.hb.u32(level as u32);
                    continue;
                }
                Target::Building {
                    building,
                    level,
                    need,
                    ..
                } => (need, 0, (0u8, [building as i32, level as i32, 0])),
            };
            self.grant_upload(&mut g, a, target, upload);
        }
        self.free_spare_building_levels(&mut g.hb);
        self.make_room(camera, &mut g.hb, &mut g.ht);
        g.hb.u64(self.buildings.io_hash);
        let ht = &mut g.ht;
        ht.u64(self.terrain.base_hash);
        ht.u64(self.terrain.edit_hash);
        ht.u64(self.terrain.stale_hash);
        ht.u64(self.terrain.collider_hash);
        ht.u64(self.terrain.grid.revision());
        ht.u64(self.terrain.collision.version().1);
        Grants {
            building_hash: g.hb.value(),
            terrain_hash: g.ht.value(),
            building_upload: g.bytes_b,
            terrain_upload: g.bytes_t,
            starved: g.starved,
        }
    }

    /// A collider of the far band, built now when the frame's few builds are not
    /// used up and the pool has room for it (nearest first).
    fn grant_collider(&mut self, g: &mut GrantPass, rank: u8, chunk: IVec3, need: u64) {
        if g.prebuilt == COLLIDER_BUILDS_PER_FRAME {
            return;
        }
        if !self.config.budget.fits(rank, g.held, need, 0) {
            g.starved = true;
            return;
        }
        g.prebuilt += 1;
        let before = self.terrain.collision.heap_bytes() as u64;
        self.terrain.collision.build(&self.terrain.grid, &[chunk]);
        let bytes = self.collider_built(chunk);
        g.held = (g.held + self.terrain.collision.heap_bytes() as u64).saturating_sub(before);
        chunk.to_array().iter().for_each(|&x| g.ht.u32(x as u32));
        g.ht.u64(bytes);
    }

    /// An upload (a building level or a terrain chunk: the memory it needs, what it
    /// frees, its key) granted when its memory fits and upload is left: in full,
    /// or, when larger than what is left, in part, going on over several frames.
    fn grant_upload(
        &mut self,
        g: &mut GrantPass,
        a: Ask,
        target: Target,
        (need, freed, key): (u64, u64, (u8, [i32; 3])),
    ) {
        if !self.config.budget.fits(a.rank, g.held, need, freed) || g.upload_left == 0 {
            g.starved = true;
            return;
        }
        let done = self.pools.partial.get(&key).copied().unwrap_or(0);
        if a.bytes > g.upload_left {
            g.starved = true;
            self.pools.partial.insert(key, done + g.upload_left);
            match target {
                Target::Building { .. } => g.bytes_b += g.upload_left,
                _ => g.bytes_t += g.upload_left,
            }
            let h = if key.0 == 0 { &mut g.hb } else { &mut g.ht };
            key.1.iter().for_each(|&x| h.u32(x as u32));
            h.u64(done + g.upload_left);
            g.upload_left = 0;
            return;
        }
        self.pools.partial.remove(&key);
        g.upload_left -= a.bytes;
        g.held = (g.held + need).saturating_sub(freed);
        let (to_b, to_t) = self.uploaded_in_full(target, a.bytes, &mut g.hb, &mut g.ht);
        g.bytes_b += to_b;
        g.bytes_t += to_t;
    }

    /// An upload granted in full: the building level becomes resident (and shows),
    /// the chunk draws its published mesh. The bytes it uploaded, for the buildings
    /// and for the terrain.
    fn uploaded_in_full(
        &mut self,
        target: Target,
        bytes: u64,
        hb: &mut DecisionHash,
        ht: &mut DecisionHash,
    ) -> (u64, u64) {
        match target {
            Target::Building {
                building, level, ..
            } => {
                self.buildings.resident[building as usize] |= 1 << level;
                self.buildings.load[building as usize] = None;
                if let Some(id) = self.buildings.object[building as usize] {
                    if let Some(lod) = self.vis.store.lod_mut(id) {
                        lod.set_residency(level as usize, Residency::Resident);
                    }
                }
                self.show_building(building);
                hb.u32(building);
                hb.u32(level as u32);
                return (bytes, 0);
            }
            Target::Chunk { chunk } => {
                if let Some(p) = self.terrain.pending.remove(&chunk) {
                    // A published mesh replaces the base; the base stays drawn
                    // while it is what was uploaded.
                    if !self.terrain.base_pending.remove(&chunk) {
                        self.terrain.base_meshes.remove(&chunk);
                    }
                    self.terrain.stale.remove(&chunk);
                    self.terrain.uploaded.insert(
                        chunk,
                        Uploaded {
                            level: p.level,
                            bytes: p.bytes,
                            empty: false,
                        },
                    );
                    chunk.iter().for_each(|&x| ht.u32(x as u32));
                    ht.u32(p.level as u32);
                    return (0, bytes);
                }
            }
            Target::Cluster { .. } | Target::Collider { .. } => {}
        }
        (0, 0)
    }

    /// Buildings free levels finer than both the drawn and the desired level once
    /// nobody has wanted them for as many frames as cluster levels wait (a camera
    /// going back and forth does not reload them), or at once when memory is tight.
    fn free_spare_building_levels(&mut self, hb: &mut DecisionHash) {
        let frame = self.frame;
        let tight = self.pools.memory_tight;
        for (b, obj) in self.buildings.object.iter().enumerate() {
            let Some(id) = *obj else { continue };
            let Some(lod) = self.vis.store.lod_mut(id) else {
                continue;
            };
            let keep = lod.current().unwrap_or(u8::MAX).min(lod.desired());
            let mask = self.buildings.resident[b];
            let spare = mask & ((1u32 << keep.min(31)) - 1);
            if spare == 0 {
                self.buildings.spare_since[b] = u32::MAX;
                continue;
            }
            if self.buildings.spare_since[b] == u32::MAX {
                self.buildings.spare_since[b] = frame;
            }
            if !tight && frame - self.buildings.spare_since[b] < EVICT_AFTER_FRAMES {
                continue;
            }
            self.buildings.spare_since[b] = u32::MAX;
            for l in 0..(keep.min(31)) {
                if mask & (1 << l) != 0 {
                    self.buildings.resident[b] &= !(1 << l);
                    lod.set_residency(l as usize, Residency::NotResident);
                    hb.u32(0x8000_0000 | b as u32);
                    hb.u32(l as u32);
                }
            }
        }
    }

    /// Gives back what the pool lacks, at the end of every frame. Some of a frame's
    /// memory is taken before any pool is asked: colliders within the collision
    /// radius of a source (at once for the camera's move, a few a frame for a
    /// prefetch target), colliders an edit rebuilt, base meshes remade after an
    /// edit, a collider built ahead that came out larger than its estimate. Whatever
    /// the order in which reads and meshes completed before, the pool may then be
    /// full of levels granted earlier, so room is made here until every system
    /// together holds at most the pool again:
    /// 1. colliders beyond the radius, farthest first, while the finer levels hold
    ///    more than they may (they are only built ahead);
    /// 2. building levels finer than the level each building draws and desires;
    /// 3. terrain chunks drawing a mesh finer than their base, farthest first: each
    ///    draws its base (made here) instead, and its finer mesh waits for room
    ///    again, so no chunk becomes a hole.
    ///
    /// Only memory no system can give back (colliders within the radius, coarsest
    /// levels, cluster levels the scheduler holds) can leave the pool exceeded.
    fn make_room(&mut self, camera: Vec3, hb: &mut DecisionHash, ht: &mut DecisionHash) {
        let b = self.config.budget;
        let fine = b.fine_memory();
        let mut held = self.held(self.scheduler().held_bytes());
        if held <= fine {
            return;
        }
        let radius = self.config.collision_radius;
        let sources = &self.terrain.sources[..self.terrain.n_sources];
        self.terrain.near.clear();
        self.terrain
            .near
            .extend(self.terrain.collision.colliders().filter_map(|col| {
                let d = source_distance(sources, col.chunk);
                (d > radius).then_some((d, col.chunk))
            }));
        farthest_first(&mut self.terrain.near);
        for &(_, c) in &self.terrain.near {
            if held <= fine {
                break;
            }
            held -= self.terrain.collision.evict(c) as u64;
            ht.u32(0x8000_0000);
            c.to_array().iter().for_each(|&x| ht.u32(x as u32));
        }
        // The map slots of evicted colliders stay as capacity: the held bytes again.
        held = self.held(self.scheduler().held_bytes());
        if held <= b.memory {
            return;
        }
        self.free_building_levels(held, hb);
        held = self.held(self.scheduler().held_bytes());
        if held <= b.memory {
            return;
        }
        self.coarsen_terrain(held, camera, ht);
    }

    /// [`World::make_room`]'s second step: building levels finer than the level each
    /// building draws and desires, building by building, until the pool holds.
    fn free_building_levels(&mut self, mut held: u64, hb: &mut DecisionHash) {
        let b = self.config.budget;
        for bi in 0..self.buildings.object.len() {
            if held <= b.memory {
                break;
            }
            let Some(id) = self.buildings.object[bi] else {
                continue;
            };
            let Some(lod) = self.vis.store.lod_mut(id) else {
                continue;
            };
            let keep = lod.current().unwrap_or(u8::MAX).min(lod.desired()).min(31);
            let mask = self.buildings.resident[bi];
            for l in 0..keep {
                if held <= b.memory {
                    break;
                }
                if mask & (1 << l) == 0 {
                    continue;
                }
                self.buildings.resident[bi] &= !(1 << l);
                lod.set_residency(l as usize, Residency::NotResident);
                held -= self.manifest.buildings[bi].levels[l as usize].bytes;
                hb.u32(0x8000_0000 | bi as u32);
                hb.u32(l as u32);
            }
        }
    }

    /// [`World::make_room`]'s last step: terrain chunks drawing a mesh finer than
    /// their base, farthest first, draw their base instead until the pool holds.
    fn coarsen_terrain(&mut self, mut held: u64, camera: Vec3, ht: &mut DecisionHash) {
        let b = self.config.budget;
        let coarsest = farsight_terrain::LEVELS - 1;
        self.terrain.near.clear();
        self.terrain.near.extend(
            self.terrain
                .uploaded
                .iter()
                .filter(|(_, u)| !u.empty && u.level < coarsest)
                .map(|(c, _)| {
                    let c = IVec3::from_array(*c);
                    (chunk_distance(camera, c), c)
                }),
        );
        farthest_first(&mut self.terrain.near);
        let near = std::mem::take(&mut self.terrain.near);
        for &(_, c) in &near {
            if held <= b.memory {
                break;
            }
            let key = c.to_array();
            let Some(old) = self.terrain.uploaded.get(&key).copied() else {
                continue;
            };
            let mesh = self
                .terrain
                .base_mesher
                .mesh(&self.terrain.grid, c, coarsest);
            self.terrain.remakes += 1;
            self.terrain.frame_remakes += 1;
            let bytes = mesh.heap_bytes() as u64;
            // A base without surface would lose the chunk's surface, not coarsen it.
            if mesh.is_empty() || bytes >= old.bytes {
                continue;
            }
            ht.u32(0x4000_0000);
            key.iter().for_each(|&x| ht.u32(x as u32));
            ht.u64(bytes);
            held -= old.bytes - bytes;
            // The finer mesh comes back when the pool has room for it (unless a
            // newer publication waits already).
            self.terrain
                .pending
                .entry(key)
                .or_insert(TerrainPublication {
                    chunk: key,
                    level: old.level,
                    bytes: old.bytes,
                    empty: false,
                });
            self.draw_base(key, mesh);
        }
        self.terrain.near = near;
        if held > b.memory {
            log::warn!(
                "the pool of {} bytes is exceeded by memory no system can give back: {held} held",
                b.memory
            );
        }
    }

    /// Base meshes (the coarsest level) of `chunks` from the grid, in their order.
    /// More than one are made on the worker threads, the frame thread waiting and
    /// making none of them (docs/design/voxel-terrain.md#background-meshing-and-stale-results keeps render meshing off the frame); a single
    /// one is made here. Either way each chunk's mesh is the same bytes.
    fn make_bases(&mut self, chunks: &[IVec3]) -> Vec<ChunkMesh> {
        let coarsest = farsight_terrain::LEVELS - 1;
        self.terrain.remakes += chunks.len() as u32;
        if chunks.len() <= 1 {
            self.terrain.frame_remakes += chunks.len() as u32;
            return chunks
                .iter()
                .map(|&c| {
                    self.terrain
                        .base_mesher
                        .mesh(&self.terrain.grid, c, coarsest)
                })
                .collect();
        }
        make_bases(&self.terrain.grid, chunks)
    }

    /// `chunk` draws `mesh`, its base (not empty), from this frame on.
    fn draw_base(&mut self, chunk: [i32; 3], mesh: ChunkMesh) {
        self.terrain.stale.remove(&chunk);
        let bytes = mesh.heap_bytes() as u64;
        self.terrain.base_meshes.insert(chunk, Arc::new(mesh));
        self.terrain.uploaded.insert(
            chunk,
            Uploaded {
                level: farsight_terrain::LEVELS - 1,
                bytes,
                empty: false,
            },
        );
    }

    fn building_holes(&self, frustum: &Frustum) -> u32 {
        let mut holes = 0;
        for (b, obj) in self.buildings.object.iter().enumerate() {
            let Some(id) = *obj else { continue };
            if !self.vis.store.is_visible(id) || self.buildings.resident[b] != 0 {
                continue;
            }
            if frustum.intersects_aabb(&self.vis.store.bounds(id)) {
                holes += 1;
            }
        }
        holes
    }

    /// Chunks in view that hold cells of more than one kind (a surface may cross
    /// them) and draw no mesh, unless known empty; and those drawing their base.
    fn terrain_holes(&self, camera: Vec3, frustum: &Frustum) -> (u32, u32) {
        let reach = self.config.draw_distance;
        let (mut holes, mut base) = (0, 0);
        for &c in &self.terrain.dense {
            if chunk_distance(camera, c) > reach {
                continue;
            }
            if !frustum.intersects_aabb(&farsight_terrain::chunk_bounds(c)) {
                continue;
            }
            let key = c.to_array();
            if !self.terrain.uploaded.contains_key(&key) {
                holes += 1;
            } else if self.terrain.base_meshes.contains_key(&key)
                && !self.terrain.base_pending.contains(&key)
            {
                base += 1;
            }
        }
        (holes, base)
    }
}

/// Base meshes (the coarsest level) of `chunks` from `grid`, in their order, made on
/// the worker threads (one mesher each): the same bytes whatever the thread count.
fn make_bases(grid: &VoxelGrid, chunks: &[IVec3]) -> Vec<ChunkMesh> {
    let coarsest = farsight_terrain::LEVELS - 1;
    chunks
        .par_iter()
        .map_init(ChunkMesher::new, |m, &c| m.mesh(grid, c, coarsest))
        .collect()
}

/// The I/O side: live, the cluster streamer's and the regions' threads and the
/// terrain's background mesher; in a replay, a scheduler fed by the recording.
fn open_io(
    config: &WorldConfig,
    sched: SchedulerConfig,
    descs: &[ModelDesc],
    level_files: Vec<LevelFile>,
    cooked: Vec<CookedModel>,
    live: bool,
) -> Io {
    if live {
        let clusters = ClusterStreamer::new(
            sched,
            descs,
            level_files,
            config.io_threads.max(1),
            CountingUploader,
        )
        .with_level_check(Arc::new(cooked));
        let view = TerrainView::new(
            TerrainViewConfig {
                draw_distance: config.draw_distance,
                ..TerrainViewConfig::default()
            },
            config.mesh_threads.max(1),
        );
        Io::Live {
            regions: IoPool::new(config.io_threads.max(1), "farsight-world-io"),
            drained: Vec::new(),
            region_reads: 0,
            unread: Vec::new(),
            landed: Vec::new(),
            arrived: HashMap::new(),
            clusters: Box::new(clusters),
            view: Box::new(view),
            seen: HashMap::new(),
        }
    } else {
        Io::Replay {
            scheduler: Box::new(ClusterScheduler::new(sched, descs)),
            decisions: Vec::new(),
            completions: Vec::new(),
        }
    }
}

/// The order region reads are submitted and landed reads handed to the streamer:
/// the regions the camera's own sphere reaches first, then by distance to the
/// nearest streaming source, the region's id breaking ties.
struct RegionRank<'a> {
    bounds: &'a [Aabb],
    camera: Vec3,
    prefetch: Option<Vec3>,
    /// The camera's sphere for a loaded region, squared.
    reach_sq: f32,
}

impl<'a> RegionRank<'a> {
    fn new(
        streamer: &'a RegionStreamer,
        config: &WorldConfig,
        camera: Vec3,
        input: &FrameInput,
    ) -> Self {
        let reach = config.source_radius * farsight_stream::region::DEFAULT_REGION_HYSTERESIS;
        Self {
            bounds: streamer.bounds(),
            camera,
            prefetch: input.prefetch.map(Vec3::from_array),
            reach_sq: reach * reach,
        }
    }

    /// Region `r`'s key: beyond the camera's sphere, and its squared distance.
    fn key(&self, r: u32) -> (bool, f32) {
        let b = &self.bounds[r as usize];
        let d = b.distance_squared(self.camera);
        match self.prefetch {
            Some(p) if d > self.reach_sq => (true, b.distance_squared(p).min(d)),
            _ => (d > self.reach_sq, d),
        }
    }

    fn cmp(&self, a: u32, b: u32) -> std::cmp::Ordering {
        let (ka, kb) = (self.key(a), self.key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(a.cmp(&b))
    }
}

/// Each props design's entity LOD, from the manifest.
fn prop_lods(dir: &Path, manifest: &WorldManifest) -> Result<Vec<EntityLod>, WorldError> {
    manifest
        .props
        .iter()
        .enumerate()
        .map(|(p, d)| {
            let levels = d
                .ranges
                .iter()
                .enumerate()
                .map(|(l, &r)| {
                    EntityLodLevel::new(
                        MeshHandle(2_000_000 + p as u32 * 8 + l as u32),
                        r,
                        d.name.as_str(),
                    )
                })
                .collect();
            EntityLod::new(levels).map_err(|e| WorldError::Invalid {
                path: dir.join(crate::MANIFEST_FILE),
                what: format!("prop {p} ({}): {e}", d.name),
            })
        })
        .collect::<Result<Vec<_>, _>>()
}

/// The grid's chunks holding cells of more than one kind, in coordinate order.
fn dense_chunks(grid: &VoxelGrid) -> Vec<IVec3> {
    let mut dense = grid
        .chunk_coords()
        .filter(|&c| {
            grid.entry(c)
                .is_some_and(|e| matches!(*e.cells, ChunkCells::Dense(_)))
        })
        .collect::<Vec<_>>();
    dense.sort_by_key(|c| (c.x, c.y, c.z));
    dense
}

/// Sorts (distance, chunk) pairs farthest first, ties by chunk.
fn farthest_first(near: &mut [(f32, IVec3)]) {
    near.sort_unstable_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then((a.1.x, a.1.y, a.1.z).cmp(&(b.1.x, b.1.y, b.1.z)))
    });
}

/// Distance from the nearest of `sources` to `chunk`'s box.
fn source_distance(sources: &[Vec3], chunk: IVec3) -> f32 {
    let b = chunk_bounds(chunk);
    sources
        .iter()
        .map(|&s| b.distance_squared(s))
        .fold(f32::INFINITY, f32::min)
        .sqrt()
}

fn projection() -> Projection {
    Projection::Perspective {
        fov_y: FOV_Y,
        aspect: ASPECT,
        near: 0.5,
        far: 5000.0,
    }
}

fn hash_decision(h: &mut DecisionHash, d: &Decision) {
    std::hash::Hash::hash(d, h);
}
