//! The streaming simulation behind `farsight stream-sim` and the end-to-end tests: a
//! generated world of regions holding instances of cooked cluster-LOD models (the
//! files `farsight cook mesh --clusters` writes; [`write_synthetic_models`] makes
//! some without the cook), written to real files, flown through by a scripted
//! camera with a teleport. Regions stream around the camera; every instance in an
//! active region asks for levels through `farsight-cluster`'s fit/keep/wanted rule;
//! the cluster streamer loads them from the cooked files, each level checked alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use farsight_cluster::{model_levels, InstanceBounds, LevelMetric, LevelView, ModelLevels};
use farsight_geom::{Aabb, Frustum, Sphere};
use farsight_lod::ProjectionInfo;
use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cluster::{
    encode_cluster_file, stream_inputs, synthetic_level, ClusterStreamer, CookedModel, CpuUploader,
    FrameStats, LevelCheck, LevelParts, ModelDesc, ModelRequest, SchedulerConfig,
};
use crate::region::{
    write_scene, EntityRecord, EntitySink, RegionSpec, RegionState, RegionWorld, SceneError,
    StreamingSource,
};
use farsight_format::NO_PARENT_ERROR;

/// What to generate and how to fly.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The folder the scene is written into (`dir/scene`).
    pub dir: PathBuf,
    /// The world is `regions_side x regions_side` regions.
    pub regions_side: u32,
    /// The side of one square region, world units.
    pub region_size: f32,
    /// Each region holds 0 to this many model instances, drawn at random.
    pub max_instances_per_region: u32,
    /// Radius in world units of a placed instance's error bounds, drawn from this
    /// range (each instance is scaled to it, whatever its model's own size).
    pub instance_radius: (f32, f32),
    /// Frames the flight lasts.
    pub frames: u32,
    /// The camera jumps across the world at this frame.
    pub teleport_frame: u32,
    /// Reach of the camera's streaming source, world units.
    pub source_radius: f32,
    /// Seed of the world's generator: the same seed writes the same scene.
    pub seed: u64,
    /// The cluster scheduler's budgets.
    pub scheduler: SchedulerConfig,
    /// Worker threads of each loader (regions and cluster levels).
    pub io_threads: usize,
}

impl SimConfig {
    /// A small world for tests: seconds, not minutes.
    pub fn small(dir: PathBuf) -> Self {
        Self {
            dir,
            regions_side: 16,
            region_size: 100.0,
            max_instances_per_region: 6,
            instance_radius: (3.0, 15.0),
            frames: 400,
            teleport_frame: 200,
            source_radius: 250.0,
            seed: 1,
            scheduler: SchedulerConfig::default(),
            io_threads: 2,
        }
    }

    fn world_size(&self) -> f32 {
        self.regions_side as f32 * self.region_size
    }
}

/// Per-model data the simulation keeps beside the files.
#[derive(Clone, Debug)]
pub struct SimModel {
    /// Centre of the model's error bounds, model space.
    pub centre: Vec3,
    /// Radius of the model's error bounds, model space.
    pub radius: f32,
    /// Largest parent error of each level, finest first (the coarsest is `f32::MAX`).
    pub errors: Vec<f32>,
    /// Where each level's bytes are, for the scheduler.
    pub desc: ModelDesc,
}

impl SimModel {
    /// The simulation's view of a cooked model whose levels are in file `file`.
    pub fn of(model: &CookedModel, file: u32) -> Self {
        let b = model.error_bounds();
        Self {
            centre: Vec3::new(b[0], b[1], b[2]),
            radius: b[3].max(1e-6),
            errors: model.parent_errors(),
            desc: model.desc(file),
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SceneError {
    let path = path.to_owned();
    move |source| SceneError::Io { path, source }
}

/// Writes `count` generated cluster-LOD models as cooked cluster files
/// (`dir/model-<m>.farsight`, every level in one file) for tests and benches that
/// run without the cook: `levels` levels each, the finest of a size drawn from
/// `finest_bytes`, each coarser half the size of the one below. Returns the paths.
pub fn write_synthetic_models(
    dir: &Path,
    count: u32,
    levels: u8,
    finest_bytes: (u64, u64),
    seed: u64,
) -> Result<Vec<PathBuf>, SceneError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let mut paths = Vec::with_capacity(count as usize);
    for m in 0..count {
        let radius = rng.random_range(3.0..15.0f32);
        let finest = rng.random_range(finest_bytes.0..=finest_bytes.1);
        let errors: Vec<f32> = (0..levels)
            .map(|l| {
                if l + 1 == levels {
                    NO_PARENT_ERROR
                } else {
                    radius * 0.005 * (1u32 << l) as f32
                }
            })
            .collect();
        let parts: Vec<LevelParts> = (0..levels)
            .map(|l| {
                // A level's own error is its finer neighbour's parent error.
                let own = if l == 0 {
                    radius * 0.0025
                } else {
                    errors[l as usize - 1]
                };
                let bytes = (finest >> l).max(4096);
                synthetic_level(l as u32, bytes, radius, own, errors[l as usize], &mut rng)
            })
            .collect();
        let path = dir.join(format!("model-{m}.farsight"));
        let bytes = encode_cluster_file(&format!("model {m}"), &parts).map_err(|source| {
            SceneError::Format {
                path: path.clone(),
                source,
            }
        })?;
        std::fs::write(&path, &bytes).map_err(io_error(&path))?;
        paths.push(path);
    }
    Ok(paths)
}

/// Writes the world's scene: an index and region files whose entities are
/// instances of `models` (entity `model` indexes it), each scaled to a radius in
/// `config.instance_radius`. Returns the scene index path.
pub fn generate(config: &SimConfig, models: &[CookedModel]) -> Result<PathBuf, SceneError> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    std::fs::create_dir_all(&config.dir).map_err(io_error(&config.dir))?;
    let radii: Vec<f32> = models
        .iter()
        .map(|m| m.error_bounds()[3].max(1e-6))
        .collect();
    let (r0, r1) = config.instance_radius;
    let side = config.regions_side;
    let s = config.region_size;
    let mut regions = Vec::with_capacity((side * side) as usize);
    let mut id = 0;
    for i in 0..side * side {
        let (x, z) = ((i % side) as f32 * s, (i / side) as f32 * s);
        let n = if models.is_empty() {
            0
        } else {
            rng.random_range(0..=config.max_instances_per_region)
        };
        let entities = (0..n)
            .map(|_| {
                id += 1;
                let model = rng.random_range(0..models.len() as u32);
                EntityRecord {
                    id,
                    model,
                    position: Vec3::new(
                        x + rng.random_range(0.0..s),
                        0.0,
                        z + rng.random_range(0.0..s),
                    ),
                    scale: rng.random_range(r0..=r1) / radii[model as usize],
                }
            })
            .collect();
        regions.push(RegionSpec {
            name: format!("cell {} {}", i % side, i / side),
            bounds: Aabb::new(Vec3::new(x, -20.0, z), Vec3::new(x + s, 60.0, z + s)),
            authored: RegionState::Unloaded,
            entities,
        });
    }
    write_scene(&config.dir.join("scene"), &regions)
}

/// Keeps each loaded region's entities, as an engine would.
#[derive(Debug, Default)]
pub struct SimSink {
    /// The entities of each created region.
    pub regions: HashMap<u32, Vec<EntityRecord>>,
    /// Whether each created region is active.
    pub active: HashMap<u32, bool>,
}

impl EntitySink for SimSink {
    fn create(&mut self, region: u32, entities: &[EntityRecord]) {
        self.regions.insert(region, entities.to_vec());
    }
    fn set_active(&mut self, region: u32, active: bool) {
        self.active.insert(region, active);
    }
    fn drop_region(&mut self, region: u32) {
        self.regions.remove(&region);
        self.active.remove(&region);
    }
}

/// One simulated frame.
#[derive(Clone, Copy, Debug)]
pub struct SimFrame {
    /// The frame's number, from 0.
    pub frame: u32,
    /// The camera's position, world space.
    pub camera: Vec3,
    /// True on the frame the camera jumped.
    pub teleported: bool,
    /// Regions per actual state: Unloaded, Loading, Resident, Active, Unloading.
    pub regions: [usize; 5],
    /// Models with an instance in view in an active region.
    pub visible_models: u32,
    /// The cluster scheduler's counters for the frame.
    pub cluster: FrameStats,
}

/// The running simulation.
pub struct Sim {
    config: SimConfig,
    models: Vec<SimModel>,
    cooked: Arc<Vec<CookedModel>>,
    regions: RegionWorld<SimSink>,
    clusters: ClusterStreamer<CpuUploader>,
    requests: Vec<ModelRequest>,
    levels: Vec<Option<ModelLevels>>,
    visible: Vec<bool>,
    screen: Vec<f32>,
    frame: u32,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("frame", &self.frame).finish()
    }
}

const VIEWPORT_HEIGHT: f32 = 1080.0;
const FOV_Y: f32 = std::f32::consts::FRAC_PI_3; // 60 degrees

impl Sim {
    /// The simulation over the scene at `index` (see [`generate`]) and the cooked
    /// models its entities name: model `m`'s levels stream from its file, each
    /// checked on its own as it arrives.
    pub fn new(
        config: SimConfig,
        cooked: Vec<CookedModel>,
        index: &Path,
    ) -> Result<Self, SceneError> {
        let regions = RegionWorld::open(index, SimSink::default(), config.io_threads)?;
        let (descs, files) = stream_inputs(&cooked);
        let models: Vec<SimModel> = cooked
            .iter()
            .zip(0u32..)
            .map(|(c, m)| SimModel::of(c, m))
            .collect();
        let cooked = Arc::new(cooked);
        let check: Arc<dyn LevelCheck> = Arc::clone(&cooked) as Arc<dyn LevelCheck>;
        let clusters = ClusterStreamer::new(
            config.scheduler,
            &descs,
            files,
            config.io_threads,
            CpuUploader::default(),
        )
        .with_level_check(check);
        let n = models.len();
        Ok(Self {
            requests: models
                .iter()
                .map(|m| ModelRequest::unseen(m.desc.levels.len() as u8 - 1))
                .collect(),
            levels: vec![None; n],
            visible: vec![false; n],
            screen: vec![0.0; n],
            config,
            models,
            cooked,
            regions,
            clusters,
            frame: 0,
        })
    }

    /// The cooked models, in the streamer's model order.
    pub fn cooked(&self) -> &[CookedModel] {
        &self.cooked
    }

    /// The simulation's view of each model.
    pub fn models(&self) -> &[SimModel] {
        &self.models
    }

    /// The region loader.
    pub fn regions(&self) -> &RegionWorld<SimSink> {
        &self.regions
    }

    /// The cluster-level streamer.
    pub fn clusters(&self) -> &ClusterStreamer<CpuUploader> {
        &self.clusters
    }

    /// The configuration the simulation runs.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The loading screen: frames until every model's coarsest level is resident (at
    /// most `limit`). Returns the frames it took.
    pub fn warm_up(&mut self, limit: u32) -> u32 {
        let unseen: Vec<ModelRequest> = self.requests.clone();
        for f in 0..limit {
            let all = (0..self.models.len() as u32).all(|m| {
                let s = self.clusters.scheduler();
                s.is_resident(m, s.coarsest(m)) || s.is_failed(m, s.coarsest(m))
            });
            if all {
                return f;
            }
            self.clusters.frame(&unseen);
            self.clusters.wait_for_io(Duration::from_millis(1));
        }
        limit
    }

    /// Camera position and forward direction at `frame`: a wavy flight along the
    /// diagonal for the first part, a jump to the far corner at the teleport frame,
    /// then a flight back.
    pub fn camera_at(&self, frame: u32) -> (Vec3, Vec3) {
        let w = self.config.world_size();
        let before = frame < self.config.teleport_frame;
        let (start, dir, t) = if before {
            (
                Vec3::new(0.1 * w, 30.0, 0.1 * w),
                Vec3::new(1.0, 0.0, 0.35).normalize(),
                frame as f32,
            )
        } else {
            (
                Vec3::new(0.9 * w, 30.0, 0.85 * w),
                Vec3::new(-1.0, 0.0, -0.2).normalize(),
                (frame - self.config.teleport_frame) as f32,
            )
        };
        let speed = 2.5;
        let side = Vec3::new(-dir.z, 0.0, dir.x);
        let p = start + dir * speed * t + side * (t * 0.02).sin() * 0.05 * w;
        let p = p.clamp(Vec3::new(0.0, 0.0, 0.0), Vec3::new(w, 100.0, w));
        (p, (dir + side * (t * 0.02).cos() * 0.1).normalize())
    }

    /// Runs one frame of the flight.
    pub fn step(&mut self) -> SimFrame {
        let frame = self.frame;
        let (camera, forward) = self.camera_at(frame);
        let teleported = frame == self.config.teleport_frame && frame > 0;
        let source = StreamingSource {
            position: camera,
            radius: self.config.source_radius,
            target: RegionState::Active,
        };
        self.regions.frame(&[source]);
        let proj = Mat4::perspective_rh(FOV_Y, 16.0 / 9.0, 0.5, 5000.0);
        let view = Mat4::look_at_rh(camera, camera + forward, Vec3::Y);
        let frustum = Frustum::from_view_projection(&(proj * view));
        let level_view = LevelView {
            camera,
            projection: ProjectionInfo::perspective(FOV_Y),
            viewport_height: VIEWPORT_HEIGHT,
            threshold_px: 1.0,
            bias: self.clusters.scheduler().bias() as u32,
        };
        self.levels.iter_mut().for_each(|l| *l = None);
        self.visible.iter_mut().for_each(|v| *v = false);
        self.screen.iter_mut().for_each(|s| *s = 0.0);
        let sink = self.regions.sink();
        for (region, entities) in &sink.regions {
            if sink.active.get(region) != Some(&true) {
                continue;
            }
            for e in entities {
                let m = e.model as usize;
                let model = &self.models[m];
                let inst = InstanceBounds {
                    center: e.position + model.centre * e.scale,
                    radius: model.radius * e.scale,
                    scale: e.scale,
                };
                let l = model_levels(LevelMetric::ParentErrors(&model.errors), &inst, &level_view);
                self.levels[m] = Some(self.levels[m].map_or(l, |o| o.finest(l)));
                if frustum.intersects_sphere(&Sphere::new(inst.center, inst.radius)) {
                    self.visible[m] = true;
                    let d = (inst.center.distance(camera) - inst.radius).max(1e-3);
                    let px = inst.radius * VIEWPORT_HEIGHT * 0.5 / ((FOV_Y * 0.5).tan() * d);
                    self.screen[m] = self.screen[m].max(px);
                }
            }
        }
        let mut visible_models = 0;
        for (m, r) in self.requests.iter_mut().enumerate() {
            let c = self.models[m].desc.levels.len() as u8 - 1;
            *r = match self.levels[m] {
                Some(l) => ModelRequest {
                    fit: l.fit as u8,
                    keep: l.keep as u8,
                    wanted: l.wanted as u8,
                    screen_size: self.screen[m],
                    visible: self.visible[m],
                },
                None => ModelRequest::unseen(c),
            };
            visible_models += u32::from(self.visible[m]);
        }
        let cluster = self.clusters.frame(&self.requests);
        self.frame += 1;
        SimFrame {
            frame,
            camera,
            teleported,
            regions: self.regions.streamer().counts(),
            visible_models,
            cluster,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripted_flight_and_teleport_have_no_holes_and_respect_the_budget() {
        let dir = std::env::temp_dir().join(format!("farsight-sim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut config = SimConfig::small(dir.clone());
        // A tight budget so the run is under pressure and loads take many frames.
        config.scheduler.upload_budget = 512 << 10;
        config.scheduler.chunk_size = 256 << 10;
        let paths =
            write_synthetic_models(&dir.join("models"), 40, 5, (64 << 10, 256 << 10), 1).unwrap();
        let cooked: Vec<CookedModel> = paths
            .iter()
            .map(|p| CookedModel::open(p).unwrap())
            .collect();
        let index = generate(&config, &cooked).unwrap();
        let budget = config.scheduler.upload_budget;
        let mut sim = Sim::new(config.clone(), cooked, &index).unwrap();
        let warm = sim.warm_up(5000);
        assert!(warm < 5000, "the coarsest levels loaded");
        let mut uploaded = 0;
        let mut max_active = 0;
        let mut saw_teleport = false;
        let mut visible_frames = 0;
        for _ in 0..config.frames {
            let f = sim.step();
            assert_eq!(
                f.cluster.holes, 0,
                "frame {}: a visible model had nothing to draw",
                f.frame
            );
            assert!(
                f.cluster.bytes_uploaded <= budget,
                "frame {}: {} bytes",
                f.frame,
                f.cluster.bytes_uploaded
            );
            uploaded += f.cluster.bytes_uploaded;
            max_active = max_active.max(f.regions[3]);
            saw_teleport |= f.teleported;
            visible_frames += u32::from(f.visible_models > 0);
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(saw_teleport);
        assert!(max_active > 4, "regions streamed in around the camera");
        assert!(visible_frames > config.frames / 2, "models were in view");
        assert!(uploaded > 0);
        assert!(sim.clusters().uploader().max_frame_bytes <= budget);
        // Every level is a range of its model's cooked file checked on arrival, and
        // what reached the uploader is that whole, valid level.
        assert_eq!(sim.clusters().read_errors(), 0);
        let mut checked = 0;
        for (m, model) in sim.models.iter().enumerate() {
            for l in 0..model.desc.levels.len() as u8 {
                if let Some(bytes) = sim.clusters().uploader().level(m as u32, l) {
                    let summary = sim.cooked()[m].check_level(l as usize, bytes).unwrap();
                    assert_eq!(summary.level, l as u32);
                    checked += 1;
                }
            }
        }
        assert!(checked > sim.models.len(), "finer levels arrived too");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
