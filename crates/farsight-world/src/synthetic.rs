//! A generated world at any size, written without the bake tools: terrain from the
//! demo generator, synthetic cluster models (valid level files of chosen sizes),
//! building entries with level sizes but no mesh files, and props, placed in a grid
//! of regions. The scale runs and the benchmarks use it; `farsight world build`
//! makes real content.

use std::path::Path;

use farsight_format::NO_PARENT_ERROR;
use farsight_geom::Aabb;
use farsight_stream::cluster::{encode_cluster_file, synthetic_level};
use farsight_stream::region::{write_scene, EntityRecord, RegionSpec, RegionState};
use farsight_terrain::{generate_chunk, write_grid, TerrainGeneratorConfig, VoxelGrid, CHUNK_SIZE};
use glam::{IVec3, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::manifest::{
    BuildingEntry, BuildingLevel, EntityKind, ModelEntry, PropEntry, TerrainEntry, WorldError,
    WorldManifest, WORLD_VERSION,
};

/// The size of a generated world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyntheticConfig {
    /// The world is `regions_side x regions_side` regions (plus region 0, the base).
    pub regions_side: u32,
    /// Buildings (generated box sizes, no files), each in a region of its own spot.
    pub buildings: u32,
    /// Entities in all, buildings included.
    pub objects: u64,
    /// Distinct cluster models; a fifth of the other objects are their instances.
    pub models: u32,
    /// Levels of each generated cluster model.
    pub model_levels: u8,
    /// Terrain chunk columns per side (three chunks tall).
    pub chunks_side: i32,
    /// The seed every random choice is drawn from.
    pub seed: u64,
}

impl SyntheticConfig {
    /// Issue 14's scale: 100k regions, 10k buildings, 1M objects, 1,875 terrain chunks.
    pub fn scale() -> Self {
        Self {
            regions_side: 317,
            buildings: 10_000,
            objects: 1_000_000,
            models: 64,
            model_levels: 5,
            chunks_side: 25,
            seed: 1,
        }
    }

    /// A tenth of the scale's regions and objects on the same ground.
    pub fn medium() -> Self {
        Self {
            regions_side: 100,
            buildings: 1_000,
            objects: 100_000,
            models: 32,
            ..Self::scale()
        }
    }

    /// Seconds to write: tests.
    pub fn small() -> Self {
        Self {
            regions_side: 16,
            buildings: 40,
            objects: 2_000,
            models: 8,
            model_levels: 4,
            chunks_side: 5,
            seed: 1,
        }
    }
}

/// The entity-LOD prop designs every world carries.
pub fn default_props() -> Vec<PropEntry> {
    let prop = |name: &str, radius, ranges: &[f32]| PropEntry {
        name: name.into(),
        radius,
        ranges: ranges.to_vec(),
    };
    vec![
        prop("lamp", 2.5, &[30.0, 80.0, 200.0]),
        prop("tree", 5.0, &[50.0, 150.0, 450.0]),
        prop("bench", 1.2, &[20.0, 60.0]),
    ]
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorldError + '_ {
    move |source| WorldError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Generates the terrain's columns (three chunks tall) and writes its file.
fn write_terrain(dir: &Path, terrain: &TerrainEntry) -> Result<(), WorldError> {
    let params = terrain.params();
    let mut grid = VoxelGrid::new();
    for z in 0..terrain.chunks_side {
        for x in 0..terrain.chunks_side {
            for y in -1..2 {
                generate_chunk(&mut grid, &params, IVec3::new(x, y, z));
            }
        }
    }
    let tpath = dir.join(&terrain.file);
    write_grid(&grid, &tpath).map_err(|source| WorldError::Terrain {
        path: tpath.clone(),
        source,
    })?;
    drop(grid);
    Ok(())
}

/// Writes `spec.models` synthetic cluster models, one cooked cluster file each: their
/// entries, and the radius each reaches.
fn write_models(
    dir: &Path,
    spec: &SyntheticConfig,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<ModelEntry>, Vec<f32>), WorldError> {
    let mut models = Vec::with_capacity(spec.models as usize);
    let mut radii = Vec::with_capacity(spec.models as usize);
    let levels = spec.model_levels.clamp(1, 16);
    let mdir = dir.join("models");
    std::fs::create_dir_all(&mdir).map_err(io(&mdir))?;
    for m in 0..spec.models {
        let radius = rng.random_range(2.0..8.0f32);
        let finest = rng.random_range(64u64 << 10..=256 << 10);
        let errors: Vec<f32> = (0..levels)
            .map(|l| {
                if l + 1 == levels {
                    NO_PARENT_ERROR
                } else {
                    radius * 0.005 * (1u32 << l) as f32
                }
            })
            .collect();
        let parts: Vec<_> = (0..levels)
            .map(|l| {
                let own = if l == 0 {
                    radius * 0.0025
                } else {
                    errors[l as usize - 1]
                };
                synthetic_level(
                    l as u32,
                    (finest >> l).max(4096),
                    radius,
                    own,
                    errors[l as usize],
                    rng,
                )
            })
            .collect();
        // One cooked cluster file per model, the streaming format.
        let name = format!("models/m{m}.farsight");
        let path = dir.join(&name);
        let bytes = encode_cluster_file(&format!("model {m}"), &parts).map_err(|e| {
            WorldError::Invalid {
                path: path.clone(),
                what: e.to_string(),
            }
        })?;
        std::fs::write(&path, &bytes).map_err(io(&path))?;
        models.push(ModelEntry {
            name: format!("m{m}"),
            file: name,
            geometry: 0,
        });
        // The synthetic patches reach 1.5 radii out.
        radii.push(radius * 1.5);
    }
    Ok((models, radii))
}

/// Region 0, the base spanning the world, then a `per` x `per` grid of empty cells.
fn region_cells(side: f32, per: u32) -> Vec<RegionSpec> {
    let rsize = side / per as f32;
    let mut regions: Vec<RegionSpec> = Vec::with_capacity(1 + (per * per) as usize);
    regions.push(RegionSpec {
        name: "base".into(),
        bounds: Aabb::new(Vec3::new(0.0, -200.0, 0.0), Vec3::new(side, 600.0, side)),
        authored: RegionState::Unloaded,
        entities: Vec::new(),
    });
    for i in 0..per * per {
        let (x, z) = ((i % per) as f32 * rsize, (i / per) as f32 * rsize);
        regions.push(RegionSpec {
            name: format!("cell {} {}", i % per, i / per),
            bounds: Aabb::new(
                Vec3::new(x, -50.0, z),
                Vec3::new(x + rsize, 400.0, z + rsize),
            ),
            authored: RegionState::Unloaded,
            entities: Vec::new(),
        });
    }
    regions
}

/// Building `b` of a generated world: a box of random size at a random spot of the
/// ground, with four levels of sizes only (no file).
fn random_building(
    b: u32,
    side: f32,
    params: &TerrainGeneratorConfig,
    rng: &mut ChaCha8Rng,
) -> BuildingEntry {
    let (x, z) = (rng.random_range(0.0..side), rng.random_range(0.0..side));
    let (w, d, h) = (
        rng.random_range(8.0..14.0f32),
        rng.random_range(8.0..14.0f32),
        rng.random_range(20.0..120.0f32),
    );
    let g = params.height(x, z);
    let lo = Vec3::new(x - w, g, z - d);
    let hi = Vec3::new(x + w, g + h, z + d);
    let finest = rng.random_range(200u64 << 10..=600 << 10);
    BuildingEntry {
        id: format!("b{b}"),
        // Generated: sizes only, no mesh file.
        file: String::new(),
        offset: [0.0; 3],
        min: lo.to_array(),
        max: hi.to_array(),
        levels: [Some(60.0), Some(150.0), Some(400.0), None]
            .iter()
            .enumerate()
            .map(|(l, &until)| BuildingLevel {
                until,
                bytes: (finest >> (2 * l)).max(2048),
            })
            .collect(),
    }
}

/// Writes a generated world into `dir` (which must exist) and returns its manifest.
/// `progress(step)` is told each step as it starts.
pub fn generate(
    dir: &Path,
    spec: &SyntheticConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<WorldManifest, WorldError> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let terrain = TerrainEntry {
        file: "terrain.farsight".into(),
        seed: spec.seed as u32,
        base_height: 100.0,
        hill_height: 50.0,
        hill_scale: 500.0,
        chunks_side: spec.chunks_side.max(1),
    };
    let params = terrain.params();
    let side = terrain.chunks_side as f32 * CHUNK_SIZE;
    progress("terrain");
    write_terrain(dir, &terrain)?;

    progress("models");
    let (models, radii) = write_models(dir, spec, &mut rng)?;

    progress("placing");
    let mut buildings = Vec::with_capacity(spec.buildings as usize);
    let per = spec.regions_side.max(1);
    let mut placer = Placer {
        regions: region_cells(side, per),
        per,
        rsize: side / per as f32,
        id: 0,
    };
    let mut manifest = WorldManifest {
        version: WORLD_VERSION,
        seed: spec.seed,
        extent: [side, side],
        terrain,
        scene: String::new(),
        models,
        buildings: Vec::new(),
        props: default_props(),
    };
    let nm = spec.models;
    let nb = spec.buildings;
    for b in 0..nb {
        let building = random_building(b, side, &params, &mut rng);
        let (lo, hi) = (Vec3::from(building.min), Vec3::from(building.max));
        buildings.push(building);
        placer.place(nm + b, (lo + hi) * 0.5, lo, hi);
    }
    let scatter = Scatter {
        side,
        params: &params,
        radii: &radii,
        props: &manifest.props,
        models: nm,
        buildings: nb,
    };
    scatter.place(
        &mut placer,
        spec.objects.saturating_sub(nb as u64),
        &mut rng,
    );
    manifest.buildings = buildings;
    debug_assert_eq!(manifest.index_of(EntityKind::Prop(0)), nm + nb);
    progress("regions");
    let regions = placer.regions;
    let index = write_scene(&dir.join("scene"), &regions).map_err(|source| WorldError::Scene {
        path: dir.join("scene"),
        source,
    })?;
    manifest.scene = index
        .strip_prefix(dir)
        .unwrap_or(&index)
        .to_string_lossy()
        .into_owned();
    manifest.write(dir)?;
    Ok(manifest)
}

/// The scene's regions (the base region, then a `per` x `per` grid of cells of
/// `rsize` metres) as entities are placed into them, numbering the entities from 1.
struct Placer {
    regions: Vec<RegionSpec>,
    per: u32,
    rsize: f32,
    /// The last entity id given.
    id: u32,
}

impl Placer {
    /// Places an entity of `model` (scale 1) at `position` in the cell holding it,
    /// growing the cell's bounds to its box `lo`..`hi`.
    fn place(&mut self, model: u32, position: Vec3, lo: Vec3, hi: Vec3) {
        self.id += 1;
        let x = ((position.x / self.rsize) as u32).min(self.per - 1);
        let z = ((position.z / self.rsize) as u32).min(self.per - 1);
        let r = &mut self.regions[1 + (z * self.per + x) as usize];
        r.bounds = Aabb::new(r.bounds.min.min(lo), r.bounds.max.max(hi));
        r.entities.push(EntityRecord {
            id: self.id,
            model,
            position,
            scale: 1.0,
        });
    }
}

/// What the scattered objects are drawn from: the world's side, its terrain, the
/// models' radii and the props; entity models are numbered models, then buildings,
/// then props.
struct Scatter<'a> {
    side: f32,
    params: &'a TerrainGeneratorConfig,
    radii: &'a [f32],
    props: &'a [PropEntry],
    models: u32,
    buildings: u32,
}

impl Scatter<'_> {
    /// Places `count` objects at random on the ground: every fifth a model (when
    /// there are models) raised by half its radius, the others props.
    fn place(&self, placer: &mut Placer, count: u64, rng: &mut ChaCha8Rng) {
        let (side, nm, nb) = (self.side, self.models, self.buildings);
        for i in 0..count {
            let (x, z) = (rng.random_range(0.0..side), rng.random_range(0.0..side));
            let g = self.params.height(x, z);
            if i % 5 == 0 && nm > 0 {
                let k = rng.random_range(0..nm);
                let r = self.radii[k as usize];
                let p = Vec3::new(x, g + r * 0.5, z);
                placer.place(k, p, p - Vec3::splat(r), p + Vec3::splat(r));
            } else {
                let k = rng.random_range(0..self.props.len() as u32);
                let r = self.props[k as usize].radius;
                let p = Vec3::new(x, g, z);
                placer.place(nm + nb + k, p, p - Vec3::splat(r), p + Vec3::splat(r));
            }
        }
    }
}
