//! Cluster-LOD models (docs/design/region-streaming-and-cluster-lod.md) in Bevy:
//! cooked cluster files streamed level by level, each model drawn from the cut of
//! its resident levels.
//!
//! A [`FarsightClusterModel`] names a cooked cluster file (`farsight cook mesh
//! --clusters`). Its head is opened with farsight-stream's
//! [`CookedModel::open`]; one [`ClusterStreamer`] over every model file reads the
//! levels on its worker threads, where each level is checked on its own and decoded,
//! so the frame only takes finished levels. Each frame, for the active 3D camera:
//!
//! 1. every instance's fit, keep and wanted come from farsight-cluster's
//!    [`model_levels`] (the finest over a model's instances), and the streamer
//!    runs one frame with those requests;
//! 2. the cut of each instance is farsight-cluster's [`ClusterDag::cut`] over the
//!    model's *resident* levels: the finest resident level `L` of the chain down
//!    from the coarsest stands in for every finer level (its own error counts as
//!    zero), so the cut is complete over what is resident and a finer level that has
//!    not arrived is drawn as the coarser one, never as a hole;
//! 3. when the cut changed, the instance's one `Mesh` is rewritten in place (the
//!    same asset): its index buffer the real triangles of the cut's clusters, its
//!    vertices only those they use, level by level (a renderer that shades every
//!    vertex of an index range, as lavapipe does, pays for the cut, not the model).
//!
//! A level that fails its check is retried by the streamer, then marked failed; the
//! coarser resident level stays drawn.
//!
//! The coarsest level of a model is read, checked and decoded when the model is
//! opened (it is the smallest), and kept for the model's life: an instance draws it
//! on its first frame, and a streamer rebuilt for a new model never takes it away.
//! The streamer may still read it once; that copy is dropped.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use farsight_cluster::{
    model_levels, ClusterDag, CutView, InstanceBounds, LevelMetric, LevelView, ModelLevels,
};
use farsight_format::{
    AlignedBytes, ClusterInfo, ClusterLevel, CLUSTER_SLOT_TRIANGLES, NO_PARENT_ERROR,
};
use farsight_lod::ProjectionInfo;
use farsight_stream::cluster::{
    ClusterScheduler, ClusterStreamer, CookedModel, CookedModelError, FrameStats, LevelCheck,
    LevelFile, LevelFileError, ModelDesc, ModelRequest, SchedulerConfig, Uploader,
};

use crate::assets::{ClusterModelAsset, ClusterModelLoader};
use crate::materials::{finish_images, MaterialAssets, MaterialSink, PendingImages};
use crate::FarsightSet;

/// A cluster-LOD model drawn from its cooked file's streamed levels: a file path
/// ([`FarsightClusterModel::new`]) or a loaded asset
/// ([`FarsightClusterModel::from_asset`]). The plugin keeps the cut of the instance
/// in [`ClusterCut`] and draws it from the frame the model is opened (its coarsest
/// level is read then):
///
/// - with the file's materials (one `StandardMaterial` per material of the file,
///   shared by every instance and level, its textures loaded beside the file:
///   [`MaterialAssets`]): a geometry of one material is drawn by the entity's own
///   `Mesh3d`, one of several by a child entity per material ([`ClusterCut::parts`]),
///   each cluster by the part of the material it names;
/// - with the user's material where the entity has a `MeshMaterial3d<StandardMaterial>`
///   when the model is opened: one `Mesh3d` on the entity draws every cluster.
///
/// A file without materials gets a `Mesh3d` and no material: give it one.
#[derive(Component, Clone, Debug, PartialEq)]
#[require(Transform, Visibility)]
pub struct FarsightClusterModel {
    /// The cooked cluster file (empty for a model drawn from an asset).
    pub file: PathBuf,
    /// The cluster file as an asset (`asset_server.load("ship.farsight")`); drawn
    /// once it has loaded, and opened again when it is reloaded.
    pub asset: Option<Handle<ClusterModelAsset>>,
    /// Which of the file's geometries (0 for a file of one; a cooked scene of
    /// several meshes holds one per mesh: [`FarsightClusterModel::scene`]).
    pub geometry: usize,
    /// Colours per level (0 the finest; the last repeats for coarser levels) written
    /// as vertex colours instead of the file's, to see the cut; `None` keeps the
    /// file's vertex colours.
    pub level_colors: Option<Vec<Color>>,
}

impl FarsightClusterModel {
    /// Geometry 0 of the cooked cluster file `file`, opened when spawned.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        Self {
            file: file.into(),
            asset: None,
            geometry: 0,
            level_colors: None,
        }
    }

    /// Geometry 0 of a cluster file loaded as an asset
    /// (`asset_server.load("ship.farsight")`): drawn from the frame it has loaded.
    pub fn from_asset(asset: Handle<ClusterModelAsset>) -> Self {
        Self {
            file: PathBuf::new(),
            asset: Some(asset),
            geometry: 0,
            level_colors: None,
        }
    }

    /// Geometry `geometry` of the file.
    pub fn with_geometry(mut self, geometry: usize) -> Self {
        self.geometry = geometry;
        self
    }

    /// Everything a cooked file draws, from its head: one model and its transform
    /// (relative to the scene's root) per placement of the manifest
    /// ([`ClusterMeshManifest::all_placements`]: glTF nodes sharing meshes,
    /// `EXT_mesh_gpu_instancing`), or the one geometry where it is for a file
    /// that places nothing. Spawn each as a child of the scene's root.
    ///
    /// [`ClusterMeshManifest::all_placements`]: farsight_format::ClusterMeshManifest::all_placements
    pub fn scene(file: impl Into<PathBuf>) -> Result<Vec<(Self, Transform)>, CookedModelError> {
        let file = file.into();
        let model = CookedModel::open(&file)?;
        let placements = model.manifest().all_placements();
        if placements.is_empty() {
            return Ok(vec![(Self::new(file), Transform::IDENTITY)]);
        }
        Ok(placements
            .iter()
            .map(|p| {
                let m = Mat4::from_cols_array(&p.transform);
                (
                    Self::new(file.clone()).with_geometry(p.geometry as usize),
                    Transform::from_matrix(m),
                )
            })
            .collect())
    }

    /// Tints each level's vertices (see [`FarsightClusterModel::level_colors`]).
    pub fn with_level_colors(mut self, colors: Vec<Color>) -> Self {
        self.level_colors = Some(colors);
        self
    }
}

/// What the plugin draws of one [`FarsightClusterModel`] instance (added by the
/// plugin).
#[derive(Component, Clone, Debug, Default)]
pub struct ClusterCut {
    /// The streamer's model index, `None` while the file is not opened.
    pub model: Option<u32>,
    /// The instance's mesh (the same asset for the instance's whole life); `None`
    /// where the cut is drawn in [`ClusterCut::parts`].
    pub mesh: Option<Handle<Mesh>>,
    /// One per material of a geometry of several drawn with the file's materials
    /// (see [`FarsightClusterModel`]): the child entity drawing that material's
    /// clusters of the cut. Empty where [`ClusterCut::mesh`] draws the cut.
    pub parts: Vec<ClusterCutPart>,
    /// The finest resident level the cut was made over (`None`: nothing drawn yet).
    pub finest_resident: Option<u8>,
    /// The cut: (level, cluster index in that level's record), level-major.
    pub clusters: Vec<(u8, u32)>,
    /// Vertices of each level in the mesh's vertex list (only those the cut uses;
    /// empty where the cut is drawn in [`ClusterCut::parts`]).
    pub vertex_ranges: Vec<(u8, Range<u32>)>,
    /// Real triangles the cut draws (in the mesh, or in all its parts).
    pub triangles: u32,
    /// Times the index buffer was rebuilt.
    pub rebuilds: u64,
    /// Cut clusters as the DAG numbers them, to see a change.
    dag_ids: Vec<u32>,
}

/// One material's clusters of an instance's cut (see [`ClusterCut::parts`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterCutPart {
    /// The material: an index into the geometry's material names.
    pub material: u16,
    /// The child entity drawing it.
    pub entity: Entity,
    /// Its mesh (the same asset for the instance's whole life).
    pub mesh: Handle<Mesh>,
    /// Vertices of each level in the mesh's vertex list.
    pub vertex_ranges: Vec<(u8, Range<u32>)>,
    /// Real triangles in its index buffer.
    pub triangles: u32,
}

impl ClusterCut {
    /// The coarsest and finest level the cut draws.
    pub fn level_span(&self) -> Option<(u8, u8)> {
        let fine = self.clusters.iter().map(|c| c.0).min()?;
        let coarse = self.clusters.iter().map(|c| c.0).max()?;
        Some((fine, coarse))
    }
}

/// A decoded level: vertices in float form and the level's cluster records.
#[derive(Debug)]
pub struct ResidentLevel {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    uvs: Vec<[f32; 2]>,
    colors: Vec<[f32; 4]>,
    /// Tangents (xyz, handedness), only for a model some of whose materials have a
    /// normal map ([`needs_tangents`]); empty otherwise.
    tangents: Vec<[f32; 4]>,
    clusters: Vec<ClusterInfo>,
    /// The record's slot indices (CLUSTER_SLOT_TRIANGLES triangles per cluster).
    indices: Vec<u32>,
}

/// True when a material `model`'s geometry names has a normal map: its meshes
/// then carry tangents (the cook keeps or makes them for those materials).
pub(crate) fn needs_tangents(model: &CookedModel) -> bool {
    let table = &model.manifest().material_table;
    model
        .geometry()
        .materials
        .iter()
        .any(|name| table.get(name).is_some_and(|m| m.normal_texture.is_some()))
}

impl ResidentLevel {
    fn decode(level: &ClusterLevel<'_>, with_tangents: bool) -> Self {
        let h = &level.header;
        let n = level.vertices.len();
        let (mut positions, mut normals, mut uvs, mut colors) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut tangents = Vec::with_capacity(if with_tangents { n } else { 0 });
        for v in level.vertices {
            let f = v.unpack(h.bounds_min, h.bounds_max);
            positions.push(f.position);
            normals.push(f.normal);
            uvs.push(f.uv);
            colors.push(v.color.map(|c| c as f32 / 255.0));
            if with_tangents {
                tangents.push(f.tangent);
            }
        }
        Self {
            positions,
            normals,
            uvs,
            colors,
            tangents,
            clusters: level.clusters.to_vec(),
            indices: level.indices.to_vec(),
        }
    }

    /// Reads level `level` of `model` from its file, checks it as the streamer's
    /// workers do and decodes it. The read is the level's recorded size, which the
    /// file's head was checked to hold. Tangents are kept where [`needs_tangents`].
    pub(crate) fn read(model: &CookedModel, level: usize) -> Result<Self, String> {
        let range = model
            .level(level)
            .ok_or_else(|| format!("no level {level}"))?;
        let path = model.path();
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if range
            .offset
            .checked_add(range.bytes)
            .is_none_or(|end| end > len)
        {
            return Err(format!(
                "{}: level {level} lies past the end of the file ({len} bytes)",
                path.display()
            ));
        }
        file.seek(SeekFrom::Start(range.offset)).map_err(io)?;
        let mut bytes = vec![0; range.bytes as usize];
        file.read_exact(&mut bytes).map_err(io)?;
        let checked = |bytes: &[u8]| -> Result<Self, LevelFileError> {
            model.check_level(level, bytes)?;
            let copy = AlignedBytes::from(bytes);
            let parsed = ClusterLevel::parse(copy.as_slice())?;
            Ok(Self::decode(&parsed, needs_tangents(model)))
        };
        checked(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The real triangles of cluster `c`.
    fn cluster_indices(&self, c: u32) -> &[u32] {
        let slot = 3 * CLUSTER_SLOT_TRIANGLES as usize;
        let start = c as usize * slot;
        let n = 3 * self.clusters[c as usize].triangle_count as usize;
        &self.indices[start..start + n]
    }
}

type Decoded = Arc<Mutex<HashMap<(u32, u8), Arc<ResidentLevel>>>>;

/// The check run on the worker that read a level's last chunk: farsight-stream's
/// own (checksum, record, manifest, error bounds), then the decode, so the frame
/// only takes a finished level.
struct CheckAndDecode {
    models: Vec<CookedModel>,
    decoded: Decoded,
}

impl LevelCheck for CheckAndDecode {
    fn check(&self, model: u32, level: u8, bytes: &[u8]) -> Result<(), LevelFileError> {
        self.models.check(model, level, bytes)?;
        let copy = AlignedBytes::from(bytes);
        let parsed = ClusterLevel::parse(copy.as_slice())?;
        let tangents = self.models.get(model as usize).is_some_and(needs_tangents);
        let d = Arc::new(ResidentLevel::decode(&parsed, tangents));
        self.decoded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((model, level), d);
        Ok(())
    }
}

/// The renderer's side of the streamer: a level is drawable once the streamer says
/// it is ready (every chunk arrived and was queued on an earlier frame).
struct LevelStore {
    decoded: Decoded,
    ready: HashMap<(u32, u8), Arc<ResidentLevel>>,
    /// Each model's coarsest level, read when it was opened: always drawable.
    pinned: HashMap<(u32, u8), Arc<ResidentLevel>>,
    bytes_queued: u64,
}

impl LevelStore {
    /// Level `level` of model `m`, if drawable.
    fn get(&self, m: u32, level: u8) -> Option<&ResidentLevel> {
        self.pinned
            .get(&(m, level))
            .or_else(|| self.ready.get(&(m, level)))
            .map(|l| &**l)
    }
}

impl Uploader for LevelStore {
    fn queue_copy(&mut self, _model: u32, _level: u8, _offset: u64, bytes: &[u8]) {
        // The level's bytes were decoded on the worker that checked them; the mesh
        // upload happens when a cut uses the level.
        self.bytes_queued += bytes.len() as u64;
    }

    fn level_ready(&mut self, model: u32, level: u8) {
        let d = self
            .decoded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(model, level));
        match d {
            // The pinned coarsest level is already drawn: the streamed copy goes.
            Some(_) if self.pinned.contains_key(&(model, level)) => {}
            Some(d) => {
                self.ready.insert((model, level), d);
            }
            None => error!("cluster model {model} level {level}: ready but never decoded"),
        }
    }

    fn evict(&mut self, model: u32, level: u8) {
        self.ready.remove(&(model, level));
        self.decoded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(model, level));
    }
}

/// Settings of the cluster plugin, read when the streamer is (re)built and each frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FarsightClusterConfig {
    /// The streamer's budgets and chunking (farsight-stream).
    pub scheduler: SchedulerConfig,
    /// Reader threads.
    pub io_threads: usize,
    /// Largest error on screen, pixels (one: docs/design/region-streaming-and-cluster-lod.md,
    /// "Choosing the cut").
    pub threshold_px: f32,
    /// Viewport height for screen errors; `None` takes the camera's.
    pub viewport_height: Option<f32>,
}

impl Default for FarsightClusterConfig {
    fn default() -> Self {
        Self {
            scheduler: SchedulerConfig::default(),
            io_threads: 2,
            threshold_px: 1.0,
            viewport_height: None,
        }
    }
}

/// The cluster models and their streamer.
#[derive(Resource)]
pub struct FarsightClusters {
    /// Read when the streamer is (re)built and each frame.
    pub settings: FarsightClusterConfig,
    models: Vec<CookedModel>,
    /// Per model: its coarsest level, read when it was opened (`None` if that read
    /// failed: the streamer then brings it).
    pinned: Vec<Option<Arc<ResidentLevel>>>,
    metrics: Vec<Vec<f32>>,
    by_path: HashMap<(PathBuf, usize), u32>,
    /// Files that did not open, with why (said once).
    failed: HashMap<PathBuf, String>,
    // The reader pool's channels are `Send`, not `Sync`; only the frame system locks.
    streamer: Option<Mutex<ClusterStreamer<LevelStore>>>,
    /// Per model: the DAG of its resident chain and the level it starts at.
    dags: Vec<Option<(u8, ClusterDag)>>,
    requests: Vec<ModelRequest>,
    levels: Vec<Option<ModelLevels>>,
    stats: FrameStats,
    /// Each opened file's materials (every geometry and instance of it shares them).
    materials: HashMap<PathBuf, MaterialAssets>,
}

impl Default for FarsightClusters {
    fn default() -> Self {
        Self::new(FarsightClusterConfig::default())
    }
}

impl FarsightClusters {
    /// No model yet, with these settings.
    pub fn new(settings: FarsightClusterConfig) -> Self {
        Self {
            settings,
            models: Vec::new(),
            pinned: Vec::new(),
            metrics: Vec::new(),
            by_path: HashMap::new(),
            failed: HashMap::new(),
            streamer: None,
            dags: Vec::new(),
            requests: Vec::new(),
            levels: Vec::new(),
            stats: FrameStats::default(),
            materials: HashMap::new(),
        }
    }

    /// The materials of the file model `m` was opened from, once made (the first
    /// frame it was opened in an app with `StandardMaterial` assets).
    pub fn materials(&self, m: u32) -> Option<&MaterialAssets> {
        self.materials.get(self.models.get(m as usize)?.path())
    }

    /// Opens a model file's head (once per path) and returns its model index. A new
    /// model restarts the streamer on the next frame (its levels stream again), so
    /// open every file a scene knows before spawning it. Geometry 0 of a file of
    /// several ([`FarsightClusters::open_geometry`]).
    pub fn open(&mut self, file: &Path) -> Result<u32, CookedModelError> {
        self.open_geometry(file, 0)
    }

    /// Opens geometry `geometry` of a loaded cluster asset (once per file and
    /// geometry; the asset already holds the coarsest level) and returns its model
    /// index (see [`FarsightClusters::open`]).
    pub fn open_asset(
        &mut self,
        asset: &ClusterModelAsset,
        geometry: usize,
    ) -> Result<u32, CookedModelError> {
        let key = (asset.path().to_owned(), geometry);
        if let Some(&m) = self.by_path.get(&key) {
            return Ok(m);
        }
        let Some((model, coarsest)) = asset.geometry(geometry) else {
            return Err(CookedModelError::NoSuchGeometry {
                path: key.0,
                geometry,
                count: asset.geometry_count(),
            });
        };
        Ok(self.add_model(key, model.clone(), Some(coarsest.clone())))
    }

    /// A cluster asset was loaded again (its file changed): the models opened from
    /// it take its new head and coarsest level, and the streamer restarts.
    fn reload_asset(&mut self, asset: &ClusterModelAsset) {
        for g in 0..asset.geometry_count() {
            let key = (asset.path().to_owned(), g);
            let (Some(&m), Some((model, coarsest))) = (self.by_path.get(&key), asset.geometry(g))
            else {
                continue;
            };
            let m = m as usize;
            self.metrics[m] = model.parent_errors();
            self.models[m] = model.clone();
            self.pinned[m] = Some(coarsest.clone());
            self.dags[m] = None;
            self.streamer = None;
        }
        // Its materials are made again from the new head.
        self.materials.remove(asset.path());
    }

    /// Opens geometry `geometry` of a model file (once per file and geometry) and
    /// returns its model index (see [`FarsightClusters::open`]).
    pub fn open_geometry(&mut self, file: &Path, geometry: usize) -> Result<u32, CookedModelError> {
        let key = (file.to_owned(), geometry);
        if let Some(&m) = self.by_path.get(&key) {
            return Ok(m);
        }
        let model = CookedModel::open_geometry(file, geometry)?;
        let coarsest = model.level_count() - 1;
        let pinned = match ResidentLevel::read(&model, coarsest) {
            Ok(l) => Some(Arc::new(l)),
            Err(e) => {
                error!("cluster model {}: its coarsest level could not be read when opened, it streams in: {e}", file.display());
                None
            }
        };
        Ok(self.add_model(key, model, pinned))
    }

    /// Adds an opened model and its coarsest level under `key`.
    fn add_model(
        &mut self,
        key: (PathBuf, usize),
        model: CookedModel,
        pinned: Option<Arc<ResidentLevel>>,
    ) -> u32 {
        let m = self.models.len() as u32;
        self.metrics.push(model.parent_errors());
        self.models.push(model);
        self.pinned.push(pinned);
        self.dags.push(None);
        self.by_path.insert(key, m);
        self.streamer = None;
        m
    }

    /// The opened models, in model-index order.
    pub fn models(&self) -> &[CookedModel] {
        &self.models
    }

    /// The last frame's streaming counters.
    pub fn stats(&self) -> FrameStats {
        self.stats
    }

    /// The last frame's levels of model `m`.
    pub fn levels(&self, m: u32) -> Option<ModelLevels> {
        self.levels.get(m as usize).copied().flatten()
    }

    fn with_streamer<R>(&self, f: impl FnOnce(&ClusterStreamer<LevelStore>) -> R) -> Option<R> {
        let s = self.streamer.as_ref()?;
        Some(f(&s.lock().unwrap_or_else(PoisonError::into_inner)))
    }

    /// Level `level` of model `m` is resident (drawable): streamed in, or the
    /// coarsest level read when the model was opened.
    pub fn is_resident(&self, m: u32, level: u8) -> bool {
        let pinned = self.pinned.get(m as usize).is_some_and(|p| p.is_some())
            && self
                .models
                .get(m as usize)
                .is_some_and(|model| model.level_count() == level as usize + 1);
        pinned
            || self
                .with_streamer(|s| s.scheduler().is_resident(m, level))
                .unwrap_or(false)
    }

    /// Level `level` of model `m` failed to load.
    pub fn is_failed(&self, m: u32, level: u8) -> bool {
        self.with_streamer(|s| s.scheduler().is_failed(m, level))
            .unwrap_or(false)
    }

    /// Reads that failed, retries included.
    pub fn read_errors(&self) -> u64 {
        self.with_streamer(|s| s.read_errors()).unwrap_or(0)
    }

    /// Reads in flight or levels loading.
    pub fn busy(&self) -> bool {
        self.streamer.is_some()
            && (self.stats.levels_loading > 0
                || self.with_streamer(|s| s.reads_in_flight()).unwrap_or(0) > 0)
    }

    /// Waits up to `timeout` for a level read to finish (tests, loading screens).
    pub fn wait_for_io(&self, timeout: Duration) {
        if let Some(s) = &self.streamer {
            s.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wait_for_io(timeout);
        }
    }

    fn ensure_streamer(&mut self) {
        if self.streamer.is_some() || self.models.is_empty() {
            return;
        }
        let descs: Vec<ModelDesc> = (0..self.models.len() as u32)
            .map(|m| self.models[m as usize].desc(m))
            .collect();
        let files = self
            .models
            .iter()
            .map(|m| LevelFile {
                path: m.path().to_owned(),
            })
            .collect();
        let decoded = Decoded::default();
        let check = Arc::new(CheckAndDecode {
            models: self.models.clone(),
            decoded: decoded.clone(),
        });
        let pinned = self
            .pinned
            .iter()
            .zip(&self.models)
            .enumerate()
            .filter_map(|(m, (p, model))| {
                let level = model.level_count() as u8 - 1;
                Some(((m as u32, level), p.clone()?))
            })
            .collect();
        let store = LevelStore {
            decoded,
            ready: HashMap::new(),
            pinned,
            bytes_queued: 0,
        };
        let s = ClusterStreamer::new(
            self.settings.scheduler,
            &descs,
            files,
            self.settings.io_threads.max(1),
            store,
        )
        .with_level_check(check);
        self.streamer = Some(Mutex::new(s));
        self.dags.iter_mut().for_each(|d| *d = None);
    }
}

/// Cluster assets that loaded or were reloaded: the models drawn from them are
/// registered (again) by [`register`].
fn asset_events(
    mut clusters: ResMut<FarsightClusters>,
    assets: Res<Assets<ClusterModelAsset>>,
    mut events: MessageReader<AssetEvent<ClusterModelAsset>>,
    mut models: Query<&mut FarsightClusterModel>,
) {
    for ev in events.read() {
        let (AssetEvent::LoadedWithDependencies { id } | AssetEvent::Modified { id }) = *ev else {
            continue;
        };
        if let (AssetEvent::Modified { .. }, Some(a)) = (ev, assets.get(id)) {
            clusters.reload_asset(a);
        }
        for mut model in &mut models {
            if model.asset.as_ref().is_some_and(|h| h.id() == id) {
                model.set_changed();
            }
        }
    }
}

/// The folder of Bevy's default asset source, in the file system: a cluster file's
/// textures under it load through the asset server.
#[derive(Resource, Clone, Debug)]
pub(crate) struct AssetRoot(pub PathBuf);

/// What [`register`] needs to make a file's materials (absent in an app without
/// images or standard materials: models are then drawn without them).
#[derive(bevy::ecs::system::SystemParam)]
struct MaterialParams<'w> {
    asset_server: Option<Res<'w, AssetServer>>,
    root: Option<Res<'w, AssetRoot>>,
    images: Option<ResMut<'w, Assets<Image>>>,
    materials: Option<ResMut<'w, Assets<StandardMaterial>>>,
    pending: ResMut<'w, PendingImages>,
}

impl MaterialParams<'_> {
    /// Makes the materials of the file model `m` was opened from, once per file.
    fn ensure(&mut self, clusters: &mut FarsightClusters, m: u32) {
        let (Some(server), Some(images), Some(materials)) = (
            self.asset_server.as_deref(),
            self.images.as_deref_mut(),
            self.materials.as_deref_mut(),
        ) else {
            return;
        };
        let model = &clusters.models[m as usize];
        if clusters.materials.contains_key(model.path()) {
            return;
        }
        let mut sink = MaterialSink {
            asset_server: server,
            asset_root: self.root.as_deref().map(|r| r.0.as_path()),
            images,
            materials,
            pending: &mut self.pending,
        };
        let made =
            MaterialAssets::create(&model.manifest().material_table, model.path(), &mut sink);
        clusters.materials.insert(model.path().to_owned(), made);
    }
}

/// Opens the files of new or changed [`FarsightClusterModel`]s, makes their
/// materials and gives them a [`ClusterCut`]. A model drawn from an asset that has
/// not loaded yet gets a cut without a model; [`asset_events`] brings it back here
/// once it has.
fn register(
    mut commands: Commands,
    mut clusters: ResMut<FarsightClusters>,
    assets: Res<Assets<ClusterModelAsset>>,
    mut material_params: MaterialParams,
    mut q: Query<
        (Entity, &FarsightClusterModel, Option<&mut ClusterCut>),
        Changed<FarsightClusterModel>,
    >,
) {
    for (e, model, cut) in &mut q {
        let opened = match &model.asset {
            Some(h) => match assets.get(h) {
                Some(a) => clusters.open_asset(a, model.geometry).map(Some),
                None => Ok(None),
            },
            None => clusters
                .open_geometry(&model.file, model.geometry)
                .map(Some),
        };
        let m = match opened {
            Ok(m) => m,
            Err(err) => {
                let c = &mut *clusters;
                if !c.failed.contains_key(&model.file) {
                    error!("cluster model not drawn: {err}");
                    c.failed.insert(model.file.clone(), err.to_string());
                }
                None
            }
        };
        if let Some(m) = m {
            material_params.ensure(&mut clusters, m);
        }
        match cut {
            Some(mut cut) => {
                if cut.model != m {
                    // Another file's parts are not this one's: made again.
                    for p in &cut.parts {
                        commands.entity(p.entity).despawn();
                    }
                    *cut = ClusterCut {
                        mesh: cut.mesh.clone(),
                        ..ClusterCut::default()
                    };
                }
                cut.model = m;
                // A changed tint rewrites the vertices.
                cut.finest_resident = None;
                cut.dag_ids.clear();
            }
            None => {
                commands.entity(e).insert(ClusterCut {
                    model: m,
                    ..ClusterCut::default()
                });
            }
        }
    }
}

/// The camera the cut is made for: the marked [`FarsightLodCamera`] of lowest order,
/// else the lowest-order active 3D camera.
fn active_camera<'a>(
    cameras: impl Iterator<Item = (&'a Camera, &'a GlobalTransform, &'a Projection, bool)>,
) -> Option<(&'a Camera, &'a GlobalTransform, &'a Projection)> {
    cameras
        .filter(|(c, ..)| c.is_active)
        .min_by_key(|(c, .., marked)| (!marked, c.order))
        .map(|(c, t, p, _)| (c, t, p))
}

/// The cameras the cluster models may follow (the active one is chosen).
type ClusterCameras<'w, 's> = Query<
    'w,
    's,
    (
        &'static Camera,
        &'static GlobalTransform,
        &'static Projection,
        Has<crate::FarsightLodCamera>,
    ),
    With<Camera3d>,
>;

/// Every cluster model instance, with what its cut and requests read.
type ClusterInstances<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static FarsightClusterModel,
        &'static mut ClusterCut,
        &'static GlobalTransform,
        Option<&'static ViewVisibility>,
        Has<MeshMaterial3d<StandardMaterial>>,
    ),
>;

/// The streamer's frame, then each instance's cut and mesh.
fn stream_and_cut(
    mut commands: Commands,
    mut clusters: ResMut<FarsightClusters>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut remap: Local<Remap>,
    mut out: Local<Vec<u32>>,
    cameras: ClusterCameras,
    mut instances: ClusterInstances,
    parts_seen: Query<&ViewVisibility>,
) {
    let c = &mut *clusters;
    c.ensure_streamer();
    let Some(streamer) = c.streamer.as_mut() else {
        return;
    };
    let streamer = streamer.get_mut().unwrap_or_else(PoisonError::into_inner);
    let Some((cam, cam_t, proj)) = active_camera(cameras.iter()) else {
        return;
    };
    let projection = ProjectionInfo::from_matrix(&proj.get_clip_from_view());
    let view = LevelView {
        camera: cam_t.translation(),
        projection,
        viewport_height: c
            .settings
            .viewport_height
            .or_else(|| cam.physical_viewport_size().map(|s| s.y as f32))
            .unwrap_or(720.0),
        threshold_px: c.settings.threshold_px,
        bias: streamer.scheduler().bias() as u32,
    };
    // 1. Requests: the finest answer over every instance of a model.
    let requests = Requests {
        models: &c.models,
        metrics: &c.metrics,
        levels: &mut c.levels,
        requests: &mut c.requests,
    };
    requests.gather(streamer.scheduler(), &view, &instances, &parts_seen);
    c.stats = streamer.frame(&c.requests);
    // 2. Cuts over the resident chains, 3. meshes rewritten where a cut changed.
    let mut recut = Recut {
        store: streamer.uploader(),
        models: &c.models,
        dags: &mut c.dags,
        materials: &c.materials,
        view: &view,
        commands: &mut commands,
        meshes: &mut meshes,
        remap: &mut remap,
        out: &mut out,
    };
    for (e, model, mut cut, gt, _, user_material) in &mut instances {
        recut.instance(e, model, &mut cut, gt, user_material);
    }
}

/// Step 1 of a frame: what every model's instances ask of the streamer.
struct Requests<'a> {
    models: &'a [CookedModel],
    metrics: &'a [Vec<f32>],
    levels: &'a mut Vec<Option<ModelLevels>>,
    requests: &'a mut Vec<ModelRequest>,
}

impl Requests<'_> {
    /// The finest levels any instance of each model needs, its largest size on
    /// screen and whether any of it is seen, as the streamer's requests.
    fn gather(
        self,
        scheduler: &ClusterScheduler,
        view: &LevelView,
        instances: &ClusterInstances,
        parts_seen: &Query<&ViewVisibility>,
    ) {
        let n = self.models.len();
        self.levels.clear();
        self.levels.resize(n, None);
        self.requests.clear();
        self.requests
            .extend((0..n).map(|m| ModelRequest::unseen(scheduler.coarsest(m as u32))));
        for (_, _, cut, gt, vis, _) in instances {
            let Some(m) = cut.model else { continue };
            let mu = m as usize;
            let inst =
                InstanceBounds::placed_geometry(&self.models[mu].geometry(), &gt.to_matrix());
            let l = model_levels(LevelMetric::ParentErrors(&self.metrics[mu]), &inst, view);
            self.levels[mu] = Some(self.levels[mu].map_or(l, |o| o.finest(l)));
            let d = (inst.center.distance(view.camera) - inst.radius).max(1e-3);
            let px = inst.radius * view.viewport_height * 0.5 * view.projection.p11 / d;
            let r = &mut self.requests[mu];
            r.screen_size = r.screen_size.max(px);
            // Drawn in parts, the instance itself has no mesh for Bevy to find visible.
            r.visible |= if cut.parts.is_empty() {
                vis.is_none_or(|v| v.get())
            } else {
                cut.parts
                    .iter()
                    .any(|p| parts_seen.get(p.entity).is_ok_and(|v| v.get()))
            };
        }
        for (m, r) in self.requests.iter_mut().enumerate() {
            if let Some(l) = self.levels[m] {
                let coarsest = scheduler.coarsest(m as u32);
                r.fit = l.fit as u8;
                r.keep = l.keep as u8;
                r.wanted = ModelRequest::wanted_for(l.fit as u8, view.bias as u8, coarsest);
            }
        }
    }
}

/// Steps 2 and 3 of a frame: each instance's cut over its model's resident chain,
/// and its mesh rewritten where the cut changed.
struct Recut<'a, 'w, 's> {
    store: &'a LevelStore,
    models: &'a [CookedModel],
    dags: &'a mut [Option<(u8, ClusterDag)>],
    materials: &'a HashMap<PathBuf, MaterialAssets>,
    view: &'a LevelView,
    commands: &'a mut Commands<'w, 's>,
    meshes: &'a mut Assets<Mesh>,
    remap: &'a mut Remap,
    out: &'a mut Vec<u32>,
}

impl Recut<'_, '_, '_> {
    /// Instance `e`'s cut this frame, and its meshes when the cut changed.
    fn instance(
        &mut self,
        e: Entity,
        model: &FarsightClusterModel,
        cut: &mut ClusterCut,
        gt: &GlobalTransform,
        user_material: bool,
    ) {
        let Some(m) = cut.model else { return };
        let levels = self.models[m as usize].level_count() as u8;
        let Some(finest) = resident_chain(self.store, m, levels) else {
            // Nothing resident (the coarsest level could not be read when the
            // model opened and has not streamed in, or failed): nothing to draw.
            return;
        };
        let slot = &mut self.dags[m as usize];
        if slot.as_ref().is_none_or(|(l, _)| *l != finest) {
            *slot = chain_dag(self.store, m, finest, levels).map(|d| (finest, d));
        }
        let Some((_, dag)) = slot.as_ref() else {
            return;
        };
        let world = gt.to_matrix();
        let cut_view = CutView {
            camera_local: world.inverse().transform_point3(self.view.camera),
            scale: InstanceBounds::placed_geometry(&self.models[m as usize].geometry(), &world)
                .scale,
            projection: self.view.projection,
            viewport_height: self.view.viewport_height,
            threshold_px: self.view.threshold_px,
        };
        dag.cut(&cut_view, self.out);
        let chain_changed = cut.finest_resident != Some(finest);
        if !chain_changed && *self.out == cut.dag_ids {
            return;
        }
        cut.dag_ids.clone_from(self.out);
        cut.clusters.clear();
        cut.clusters.extend(self.out.iter().map(|&i| {
            let b = &dag.clusters[i as usize];
            (finest + b.level as u8, b.index_in_level)
        }));
        let opened = &self.models[m as usize];
        if cut.mesh.is_none() && cut.parts.is_empty() {
            let file = self.materials.get(opened.path());
            attach_meshes(
                self.commands,
                self.meshes,
                e,
                cut,
                opened,
                file,
                user_material,
            );
        }
        let w = MeshWrite {
            store: self.store,
            model: m,
            tint: model.level_colors.as_deref().filter(|c| !c.is_empty()),
            tangents: needs_tangents(opened),
            clusters: &cut.clusters,
        };
        if let Some(h) = &cut.mesh {
            if let Some(mut mesh) = self.meshes.get_mut(h) {
                cut.triangles = w.write(&mut mesh, None, &mut cut.vertex_ranges, self.remap);
            }
        } else {
            let mut triangles = 0;
            for part in &mut cut.parts {
                if let Some(mut mesh) = self.meshes.get_mut(&part.mesh) {
                    let only = Some(part.material);
                    part.triangles = w.write(&mut mesh, only, &mut part.vertex_ranges, self.remap);
                    triangles += part.triangles;
                }
            }
            cut.triangles = triangles;
        }
        cut.finest_resident = Some(finest);
        cut.rebuilds += 1;
    }
}

/// Gives a newly drawn instance `e` its mesh or meshes (see
/// [`FarsightClusterModel`]): one child per material where the geometry has several
/// and the file's materials draw it (`file`, the user gave none), else one `Mesh3d`
/// on the entity, with the file's material where the user gave none.
fn attach_meshes(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    e: Entity,
    cut: &mut ClusterCut,
    model: &CookedModel,
    file: Option<&MaterialAssets>,
    user_material: bool,
) {
    let names = model.geometry().materials;
    let material = |i: usize| names.get(i).and_then(|n| file?.get(n)).cloned();
    let mut new_mesh = || {
        meshes.add(Mesh::new(
            PrimitiveTopology::TriangleList,
            RenderAssetUsages::default(),
        ))
    };
    let file_drawn = !user_material && (0..names.len()).any(|i| material(i).is_some());
    if file_drawn && names.len() > 1 {
        for i in 0..names.len().min(u16::MAX as usize + 1) {
            let mesh = new_mesh();
            let mut child = commands.spawn((Mesh3d(mesh.clone()), ChildOf(e)));
            if let Some(m) = material(i) {
                child.insert(MeshMaterial3d(m));
            }
            cut.parts.push(ClusterCutPart {
                material: i as u16,
                entity: child.id(),
                mesh,
                vertex_ranges: Vec::new(),
                triangles: 0,
            });
        }
        return;
    }
    let mesh = new_mesh();
    let mut ec = commands.entity(e);
    ec.insert(Mesh3d(mesh.clone()));
    if let (true, Some(m)) = (file_drawn, material(0)) {
        ec.insert(MeshMaterial3d(m));
    }
    cut.mesh = Some(mesh);
}

/// The finest level of the resident chain down from the coarsest: levels
/// `L..levels` are all resident. `None` when the coarsest is not.
fn resident_chain(store: &LevelStore, m: u32, levels: u8) -> Option<u8> {
    let mut finest = None;
    for l in (0..levels).rev() {
        if store.get(m, l).is_none() {
            break;
        }
        finest = Some(l);
    }
    finest
}

/// The DAG of levels `finest..levels`, the finest one's own errors zero: it stands in
/// for every finer level, so the cut draws it wherever a finer one would be drawn.
fn chain_dag(store: &LevelStore, m: u32, finest: u8, levels: u8) -> Option<ClusterDag> {
    let mut infos: Vec<Vec<ClusterInfo>> = Vec::new();
    for l in finest..levels {
        let mut v = store.get(m, l)?.clusters.clone();
        if l == finest {
            v.iter_mut().for_each(|c| c.error = 0.0);
        }
        if l + 1 == levels {
            // The coarsest level always draws (no parent), whatever it recorded.
            v.iter_mut().for_each(|c| c.parent_error = NO_PARENT_ERROR);
        }
        infos.push(v);
    }
    let refs: Vec<&[ClusterInfo]> = infos.iter().map(Vec::as_slice).collect();
    match ClusterDag::from_infos(&refs) {
        Ok(d) => Some(d),
        Err(e) => {
            error!("cluster model {m}: resident levels do not form a DAG: {e}");
            None
        }
    }
}

/// Per level, the mesh vertex of each of the level's vertices the mesh being
/// written uses (`u32::MAX`: not used), and the entries set since the last reset;
/// kept between rewrites, every entry `u32::MAX` between two.
#[derive(Default)]
struct Remap {
    tables: Vec<Vec<u32>>,
    touched: Vec<u32>,
}

impl Remap {
    /// Level `l`'s table, at least `len` long.
    fn table(&mut self, l: u8, len: usize) {
        if self.tables.len() <= l as usize {
            self.tables.resize_with(l as usize + 1, Vec::new);
        }
        let t = &mut self.tables[l as usize];
        if t.len() < len {
            t.resize(len, u32::MAX);
        }
    }

    /// Clears the entries of level `l` set since the last reset.
    fn reset(&mut self, l: Option<u8>) {
        if let Some(t) = l.and_then(|l| self.tables.get_mut(l as usize)) {
            for &i in &self.touched {
                t[i as usize] = u32::MAX;
            }
        }
        self.touched.clear();
    }
}

/// What a mesh of an instance's cut is written from.
struct MeshWrite<'a> {
    store: &'a LevelStore,
    model: u32,
    /// Colours per level written instead of the file's vertex colours.
    tint: Option<&'a [Color]>,
    /// Write the levels' tangents (some material has a normal map).
    tangents: bool,
    /// The cut: (level, cluster), level-major.
    clusters: &'a [(u8, u32)],
}

impl MeshWrite<'_> {
    /// Rewrites `mesh` from the cut's clusters (those of material `only`, or all):
    /// only the vertices they use, level by level (so each level's vertices are one
    /// range, recorded in `ranges`), and their real triangles. Returns the
    /// triangles written.
    fn write(
        &self,
        mesh: &mut Mesh,
        only: Option<u16>,
        ranges: &mut Vec<(u8, Range<u32>)>,
        remap: &mut Remap,
    ) -> u32 {
        let (mut p, mut n, mut uv, mut col) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut tan = Vec::new();
        let mut idx = match mesh.remove_indices() {
            Some(Indices::U32(v)) => v,
            _ => Vec::new(),
        };
        idx.clear();
        ranges.clear();
        let mut current: Option<u8> = None;
        for &(l, c) in self.clusters {
            let Some(r) = self.store.get(self.model, l) else {
                continue;
            };
            if only.is_some_and(|mat| r.clusters[c as usize].material != mat) {
                continue;
            }
            if current != Some(l) {
                remap.reset(current);
                current = Some(l);
                let start = p.len() as u32;
                ranges.push((l, start..start));
                remap.table(l, r.positions.len());
            }
            let tint = self.tint.map(|colors| {
                colors[(l as usize).min(colors.len() - 1)]
                    .to_linear()
                    .to_f32_array()
            });
            let Remap { tables, touched } = &mut *remap;
            let table = &mut tables[l as usize];
            for &i in r.cluster_indices(c) {
                let slot = &mut table[i as usize];
                if *slot == u32::MAX {
                    *slot = p.len() as u32;
                    touched.push(i);
                    let i = i as usize;
                    p.push(r.positions[i]);
                    n.push(r.normals[i]);
                    uv.push(r.uvs[i]);
                    col.push(tint.unwrap_or(r.colors[i]));
                    if self.tangents {
                        tan.push(r.tangents.get(i).copied().unwrap_or([1.0, 0.0, 0.0, 1.0]));
                    }
                }
                idx.push(*slot);
            }
            if let Some((_, range)) = ranges.last_mut() {
                range.end = p.len() as u32;
            }
        }
        remap.reset(current);
        let triangles = (idx.len() / 3) as u32;
        if p.is_empty() {
            // No cluster of this material in the cut: one vertex and no triangle,
            // so the mesh is never an empty buffer.
            p.push([0.0; 3]);
            n.push([0.0, 0.0, 1.0]);
            uv.push([0.0; 2]);
            col.push([1.0; 4]);
            if self.tangents {
                tan.push([1.0, 0.0, 0.0, 1.0]);
            }
        }
        mesh.insert_attribute(Mesh::ATTRIBUTE_POSITION, p);
        mesh.insert_attribute(Mesh::ATTRIBUTE_NORMAL, n);
        mesh.insert_attribute(Mesh::ATTRIBUTE_UV_0, uv);
        mesh.insert_attribute(Mesh::ATTRIBUTE_COLOR, col);
        if self.tangents {
            mesh.insert_attribute(Mesh::ATTRIBUTE_TANGENT, tan);
        }
        mesh.insert_indices(Indices::U32(idx));
        triangles
    }
}

/// Cluster-LOD models. Added by [`crate::FarsightPlugin`]; it does nothing until an
/// entity has a [`FarsightClusterModel`].
#[derive(Default)]
pub struct FarsightClustersPlugin;

impl Plugin for FarsightClustersPlugin {
    fn build(&self, app: &mut App) {
        // The default asset source's folder: the loader opens the files there, since
        // a model's finer levels stream from its file while it is drawn.
        let file_path = app
            .get_added_plugins::<bevy::asset::AssetPlugin>()
            .first()
            .map_or_else(
                || bevy::asset::AssetPlugin::default().file_path,
                |p| p.file_path.clone(),
            );
        let root = bevy::asset::io::file::FileAssetReader::new(file_path)
            .root_path()
            .clone();
        app.init_asset::<ClusterModelAsset>()
            .register_asset_loader(ClusterModelLoader::new(root.clone()))
            .insert_resource(AssetRoot(root))
            .init_resource::<FarsightClusters>()
            .init_resource::<PendingImages>()
            .configure_sets(
                PostUpdate,
                FarsightSet::Clusters
                    .after(bevy::transform::TransformSystems::Propagate)
                    .before(FarsightSet::Mirror),
            )
            .add_systems(
                PostUpdate,
                (asset_events, register, stream_and_cut)
                    .chain()
                    .in_set(FarsightSet::Clusters),
            )
            .add_systems(PreUpdate, finish_images);
    }
}
