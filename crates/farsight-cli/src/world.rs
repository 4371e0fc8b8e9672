//! `farsight world`: build a world on disk (terrain, a baked metropolis, cooked
//! cluster models, entity-LOD props, all in regions), fly it through the one frame
//! loop of farsight-world under one budget, and replay a recorded flight.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use farsight_building::bake::{bake, ManifoldKernel};
use farsight_building::{block_origin, metropolis, Kit, LodPolicy};
use farsight_stream::cluster::CookedModel;
use farsight_stream::region::{write_scene, ActualState, EntityRecord, RegionSpec, RegionState};
use farsight_terrain::{generate_chunk, write_grid, TerrainGeneratorConfig, VoxelGrid, CHUNK_SIZE};
use farsight_world::{
    Budget, BuildingEntry, BuildingLevel, EntityKind, Flight, FrameInput, FrameReport, ModelEntry,
    Recording, SystemId, TerrainEntry, World, WorldConfig, WorldManifest, SYSTEMS, WORLD_VERSION,
};
use glam::{IVec3, Vec3};
use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

mod models;

use crate::picture::{Canvas, Rgb, WHITE};
use crate::sample_meshes::MeshSource;
use models::{cook_models, model_inputs, Footprint, ModelFate, ModelInput};

#[derive(clap::Args)]
pub struct WorldArgs {
    #[command(subcommand)]
    pub what: WorldWhat,
}

#[derive(clap::Subcommand)]
pub enum WorldWhat {
    /// Build a world folder: voxel terrain, a metropolis of baked buildings, cooked
    /// cluster models and props, placed in region files.
    Build(BuildArgs),
    /// Fly through a world with one frame loop under one memory and upload budget.
    Fly(FlyArgs),
    /// Re-run a recorded flight and compare every decision of every frame.
    Replay(ReplayArgs),
    /// Write a generated world of any size (synthetic models, building sizes without
    /// meshes, props, terrain) to measure the loop at scale.
    Generate(GenerateArgs),
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// The world folder to write (made if missing; must be empty if it exists).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Regions per side (the world has this squared, plus region 0).
    #[arg(long, default_value_t = 317, value_parser = clap::value_parser!(u32).range(1..=2000))]
    pub regions_side: u32,
    /// Buildings.
    #[arg(long, default_value_t = 10_000)]
    pub buildings: u32,
    /// Entities in all, buildings included.
    #[arg(long, default_value_t = 1_000_000)]
    pub objects: u64,
    /// Distinct cluster models.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub models: u32,
    /// Terrain chunk columns per side (three chunks each).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(i32).range(1..=200))]
    pub chunks_side: i32,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// The world folder to write (made if missing; must be empty if it exists).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// A folder of meshes (.obj, .glb, .gltf) to cook into cluster models, and of
    /// cluster files `farsight cook mesh --clusters` wrote, taken as they are
    /// (default: the shared meshes in ../shared/data/meshes when they are there,
    /// else four generated meshes).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// Blocks per side of the metropolis (N x N buildings).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub grid: u32,
    /// The building kit: `corporate` or `dark-city`.
    #[arg(long, default_value = "corporate")]
    pub kit: String,
    /// Seed of the terrain, the city and the placements.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Model instances per city block.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub models_per_block: u32,
    /// Props per city block.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub props_per_block: u32,
    /// Side of a region, in world units.
    #[arg(long, default_value_t = 64.0, value_parser = crate::output::positive_f32)]
    pub region_size: f32,
    /// Scale of every model instance: 1 keeps each model's authored size (glTF is
    /// in metres, as the world is).
    #[arg(long, default_value_t = 1.0, value_parser = crate::output::positive_f32)]
    pub model_scale: f32,
}

#[derive(clap::Args)]
pub struct FlyArgs {
    /// The world folder (`farsight world build -o DIR`).
    pub dir: PathBuf,
    /// Frames to fly (two teleports split the flight in three legs).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(3..))]
    pub frames: u32,
    /// Record every input and decision hash here, for `farsight world replay`.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Resident memory budget across every system, MiB.
    #[arg(long, default_value_t = 256.0, value_parser = crate::output::positive_f64)]
    pub memory_mib: f64,
    /// Upload budget per frame across every system, MiB.
    #[arg(long, default_value_t = 4.0, value_parser = crate::output::positive_f64)]
    pub upload_mib: f64,
    /// Radius of the camera's streaming source, in world units.
    #[arg(long, default_value_t = 300.0, value_parser = crate::output::positive_f32)]
    pub radius: f32,
    /// Terrain draw distance and object cull distance, in world units.
    #[arg(long, default_value_t = 600.0, value_parser = crate::output::positive_f32)]
    pub draw_distance: f32,
    /// Picture of the world from above at the last frame (PNG).
    #[arg(long, default_value = "world-above.png")]
    pub png: PathBuf,
    /// Plot of memory and uploads per frame per system against the budget (PNG).
    #[arg(long, default_value = "world-budget.png")]
    pub plot: PathBuf,
    /// Most loading-screen frames to wait at the start and after each teleport.
    #[arg(long, default_value_t = 5000)]
    pub max_loading_frames: u32,
}

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// A recording written by `farsight world fly --record FILE`.
    pub file: PathBuf,
}

pub fn run(args: WorldArgs) -> Result<(), Box<dyn std::error::Error>> {
    match args.what {
        WorldWhat::Build(a) => build(a),
        WorldWhat::Fly(a) => fly(a),
        WorldWhat::Replay(a) => replay(a),
        WorldWhat::Generate(a) => generate(a),
    }
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template("{spinner} {msg:22} [{bar:30}] {pos}/{len} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    b
}

const MIB: f64 = 1024.0 * 1024.0;

/// Side of one metropolis block: the step between two [`block_origin`]s.
fn block_side() -> f32 {
    block_origin(1, 0)[0] - block_origin(0, 0)[0]
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| crate::output::io_error(path, &e))
}

fn mkdir(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| crate::output::io_error(path, &e))
}

/// A box's lowest and highest corners.
type Corners = ([f32; 3], [f32; 3]);

/// The height at which a model whose box is `corners` (model space), scaled by
/// `scale` and placed at `(x, z)`, stands on `ground`: the box's floor on the lowest
/// ground under its four bottom corners and its centre, so that no corner floats
/// on a slope (the uphill side sinks instead).
fn stand_on_ground(
    ground: &impl Fn(f32, f32) -> f32,
    x: f32,
    z: f32,
    (lo, hi): Corners,
    scale: f32,
) -> f32 {
    let (lo, hi) = (Vec3::from(lo) * scale, Vec3::from(hi) * scale);
    let mid = (lo + hi) * 0.5;
    let floor = [
        (lo.x, lo.z),
        (lo.x, hi.z),
        (hi.x, lo.z),
        (hi.x, hi.z),
        (mid.x, mid.z),
    ]
    .iter()
    .map(|&(dx, dz)| ground(x + dx, z + dz))
    .fold(f32::INFINITY, f32::min);
    floor - lo.y
}

fn check_empty_out(out: &Path) -> Result<(), String> {
    crate::output::check_output_dir(out, "world folder")?;
    if out.is_dir() && std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!("{}: the world folder is not empty", out.display()));
    }
    Ok(())
}

fn generate(a: GenerateArgs) -> Result<(), Box<dyn std::error::Error>> {
    check_empty_out(&a.out)?;
    if a.objects < a.buildings as u64 {
        return Err(format!(
            "--objects {} is fewer than --buildings {}",
            a.objects, a.buildings
        )
        .into());
    }
    crate::output::create_dir(&a.out)?;
    let spec = farsight_world::SyntheticConfig {
        regions_side: a.regions_side,
        buildings: a.buildings,
        objects: a.objects,
        models: a.models,
        model_levels: 5,
        chunks_side: a.chunks_side,
        seed: a.seed,
    };
    let spinner = ProgressBar::new_spinner();
    spinner.enable_steady_tick(Duration::from_millis(100));
    let t = Instant::now();
    let m = farsight_world::generate(&a.out, &spec, &mut |step| {
        spinner.set_message(format!("writing {step}"))
    })?;
    spinner.finish_and_clear();
    let (files, bytes) = crate::output::tree_size(&a.out);
    println!(
        "generated world {}: {} regions (+ the base), {} buildings, {} objects, {} models, {} x {} terrain columns; {files} files, {} in {:.1} s",
        a.out.display(),
        a.regions_side as u64 * a.regions_side as u64,
        m.buildings.len(),
        a.objects,
        m.models.len(),
        a.chunks_side,
        a.chunks_side,
        crate::output::mib(bytes),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn build(a: BuildArgs) -> Result<(), Box<dyn std::error::Error>> {
    // Everything that can be refused is refused before the work.
    let kit = Kit::builtin(&a.kit)
        .ok_or_else(|| format!("--kit {}: not a built-in kit (corporate, dark-city)", a.kit))?;
    check_empty_out(&a.out)?;
    let sources = MeshSource::resolve(a.models.as_deref())?;
    let inputs = model_inputs(&sources.dir)?;
    crate::output::create_dir(&a.out)?;
    let start = Instant::now();
    let out = &a.out;

    // The world: the city in the middle, two chunks of country around it.
    let block = block_side();
    let city = a.grid as f32 * block;
    let margin = 2.0 * CHUNK_SIZE;
    let chunks_side = ((city + 2.0 * margin) / CHUNK_SIZE).ceil() as i32;
    let side = chunks_side as f32 * CHUNK_SIZE;
    let city_origin = Vec3::new((side - city) * 0.5, 0.0, (side - city) * 0.5);
    let (terrain, params, terrain_chunks) = build_terrain(out, a.seed, chunks_side)?;

    // The metropolis.
    let buildings = bake_city(&kit, &a, out, city_origin, &params)?;

    // The models.
    let cooked = cook_models(&inputs, out)?;
    let model_bounds: Vec<([f32; 4], Corners)> =
        cooked.iter().map(|c| (c.bounds, c.aabb)).collect();
    let models: Vec<ModelEntry> = cooked.into_iter().map(|c| c.entry).collect();
    let props = farsight_world::default_props();
    let mut manifest = WorldManifest {
        version: WORLD_VERSION,
        seed: a.seed,
        extent: [side, side],
        terrain,
        scene: String::new(),
        models,
        buildings,
        props,
    };

    // Regions: region 0 the base, then a grid of cells holding what stands in them.
    let cells = Cells::new(side, a.region_size);
    let mut placing = Placing {
        regions: region_grid(side, a.region_size, cells.per_side),
        placer: Placer::default(),
        rng: ChaCha8Rng::seed_from_u64(a.seed ^ 0x5eed_3001d),
    };
    for (i, b) in manifest.buildings.iter().enumerate() {
        let (lo, hi) = (Vec3::from(b.min), Vec3::from(b.max));
        let m = manifest.index_of(EntityKind::Building(i as u32));
        let c = (lo + hi) * 0.5;
        placing.place(cells.cell(c), m, c, 1.0, (lo, hi));
    }
    let fates = place_models(&a, &manifest, &model_bounds, &params, &cells, &mut placing);
    place_props(&a, &manifest, &params, &cells, &mut placing);
    let regions = placing.regions;
    let entity_count: usize = regions.iter().map(|r| r.entities.len()).sum();
    let index = write_scene(&out.join("scene"), &regions)?;
    manifest.scene = index
        .strip_prefix(out)
        .unwrap_or(&index)
        .to_string_lossy()
        .into_owned();
    manifest.write(out)?;

    print_build_summary(&BuildSummary {
        a: &a,
        out,
        manifest: &manifest,
        inputs: &inputs,
        sources: &sources,
        model_bounds: &model_bounds,
        fates: &fates,
        regions: regions.len(),
        entity_count,
        terrain_chunks,
        chunks_side,
        side,
        start,
    });
    Ok(())
}

/// `world build`'s grid of region cells over a world `side` units wide.
struct Cells {
    side: f32,
    region_size: f32,
    per_side: u32,
}

impl Cells {
    fn new(side: f32, region_size: f32) -> Self {
        Cells {
            side,
            region_size,
            per_side: (side / region_size).ceil() as u32,
        }
    }

    /// The region (1 + cell index) holding the point `p`.
    fn cell(&self, p: Vec3) -> usize {
        let x = ((p.x / self.region_size) as u32).min(self.per_side - 1);
        let z = ((p.z / self.region_size) as u32).min(self.per_side - 1);
        1 + (z * self.per_side + x) as usize
    }
}

/// The regions being filled, the entity ids, and the placements' random stream.
struct Placing {
    regions: Vec<RegionSpec>,
    placer: Placer,
    rng: ChaCha8Rng,
}

impl Placing {
    fn place(&mut self, region: usize, model: u32, position: Vec3, scale: f32, b: (Vec3, Vec3)) {
        self.placer
            .place(&mut self.regions, region, model, position, scale, b);
    }
}

/// Places `--models-per-block` model instances per block (and four more). Models keep
/// their authored size (times --model-scale) and stand on ground clear of the
/// buildings; one wider than a region cell goes to the base region, which spans the
/// world, and one wider than the world is left out. Returns what became of each model.
fn place_models(
    a: &BuildArgs,
    manifest: &WorldManifest,
    model_bounds: &[([f32; 4], Corners)],
    params: &TerrainGeneratorConfig,
    cells: &Cells,
    p: &mut Placing,
) -> Vec<ModelFate> {
    let side = cells.side;
    let blocks = a.grid * a.grid;
    let ground = |x: f32, z: f32| params.height(x, z);
    let scale = a.model_scale;
    let taken: Vec<Footprint> = manifest
        .buildings
        .iter()
        .map(|b| Footprint::new([b.min[0], b.min[2]], [b.max[0], b.max[2]]))
        .collect();
    let mut fates = vec![ModelFate::default(); manifest.models.len()];
    for _ in 0..blocks * a.models_per_block + 4 {
        let k = p.rng.random_range(0..manifest.models.len()) as u32;
        let fate = &mut fates[k as usize];
        let ([cx, cy, cz, radius], (lo, hi)) = model_bounds[k as usize];
        let size = [(hi[0] - lo[0]) * scale, (hi[2] - lo[2]) * scale];
        let Some(spot) = models::free_spot(&mut p.rng, size, side, &taken) else {
            match size[0].max(size[1]) > side {
                true => fate.too_wide += 1,
                false => fate.no_room += 1,
            }
            continue;
        };
        let (x, z) = (spot.min[0] - lo[0] * scale, spot.min[1] - lo[2] * scale);
        let y = stand_on_ground(&ground, x, z, (lo, hi), scale);
        let position = Vec3::new(x, y, z);
        let w = position + Vec3::new(cx, cy, cz) * scale;
        let r = Vec3::splat(radius * scale);
        let region = if size[0].max(size[1]) > a.region_size {
            fate.in_base += 1;
            0
        } else {
            let [mx, mz] = spot.centre();
            cells.cell(Vec3::new(mx, 0.0, mz))
        };
        let m = manifest.index_of(EntityKind::Model(k));
        p.place(region, m, position, scale, (w - r, w + r));
    }
    fates
}

/// Places `--props-per-block` props per block anywhere on the ground.
fn place_props(
    a: &BuildArgs,
    manifest: &WorldManifest,
    params: &TerrainGeneratorConfig,
    cells: &Cells,
    p: &mut Placing,
) {
    let side = cells.side;
    for _ in 0..a.grid * a.grid * a.props_per_block {
        let k = p.rng.random_range(0..manifest.props.len()) as u32;
        let (x, z) = (
            p.rng.random_range(0.02..0.98) * side,
            p.rng.random_range(0.02..0.98) * side,
        );
        let position = Vec3::new(x, params.height(x, z), z);
        let r = Vec3::splat(manifest.props[k as usize].radius);
        let m = manifest.index_of(EntityKind::Prop(k));
        p.place(
            cells.cell(position),
            m,
            position,
            1.0,
            (position - r, position + r),
        );
    }
}

/// The terrain of `world build`: rolling ground over `chunks_side` x `chunks_side`
/// columns, written to the world folder; its entry, its generator and the chunks
/// stored.
fn build_terrain(
    out: &Path,
    seed: u64,
    chunks_side: i32,
) -> Result<(TerrainEntry, TerrainGeneratorConfig, usize), Box<dyn std::error::Error>> {
    let terrain = TerrainEntry {
        file: "terrain.farsight".into(),
        seed: seed as u32,
        base_height: 100.0,
        hill_height: 50.0,
        hill_scale: 500.0,
        chunks_side,
    };
    let params: TerrainGeneratorConfig = terrain.params();
    let mut grid = VoxelGrid::new();
    let b = bar((chunks_side * chunks_side) as u64, "generating terrain");
    for z in 0..chunks_side {
        for x in 0..chunks_side {
            for y in -1..2 {
                generate_chunk(&mut grid, &params, IVec3::new(x, y, z));
            }
            b.inc(1);
        }
    }
    b.finish_and_clear();
    write_grid(&grid, out.join(&terrain.file))
        .map_err(|e| format!("{}: {e}", out.join(&terrain.file).display()))?;
    let terrain_chunks = grid.chunk_count();
    drop(grid);
    Ok((terrain, params, terrain_chunks))
}

/// The metropolis of `world build`, baked (in parallel) into the world folder, each
/// building on the ground in the middle of its block.
fn bake_city(
    kit: &Kit,
    a: &BuildArgs,
    out: &Path,
    city_origin: Vec3,
    params: &TerrainGeneratorConfig,
) -> Result<Vec<BuildingEntry>, Box<dyn std::error::Error>> {
    let block = block_side();
    let buildings = metropolis(kit, a.grid, a.seed);
    let ladder = LodPolicy::ladder();
    mkdir(&out.join("buildings"))?;
    let b = bar(buildings.len() as u64, "baking buildings");
    let baked: Vec<Result<BuildingEntry, String>> = buildings
        .par_iter()
        .enumerate()
        .map(|(k, recipe)| {
            let baked = bake(recipe, &ladder, &ManifoldKernel).map_err(|e| e.to_string())?;
            let bytes = baked.write_full().map_err(|e| e.to_string())?;
            let file = format!("buildings/{}.farsight", recipe.id);
            write(&out.join(&file), &bytes)?;
            let mut lo = Vec3::splat(f32::MAX);
            let mut hi = Vec3::splat(f32::MIN);
            let mut levels = Vec::new();
            for (l, level) in baked.levels.iter().enumerate() {
                let mut seen = std::collections::BTreeSet::new();
                let mut level_bytes = 0u64;
                for piece in level.pieces() {
                    if l == 0 {
                        lo = lo.min(Vec3::from(piece.placed_bounds.min));
                        hi = hi.max(Vec3::from(piece.placed_bounds.max));
                    }
                    if seen.insert(std::sync::Arc::as_ptr(piece.mesh) as usize) {
                        let m = piece.mesh;
                        level_bytes += (m.positions.len() * 48 + m.indices.len() * 4) as u64;
                    }
                }
                levels.push(BuildingLevel {
                    until: baked.ladder.get(l).and_then(|p| p.until),
                    bytes: level_bytes.max(1),
                });
            }
            if lo.x > hi.x {
                return Err(format!("building {} has no geometry", recipe.id));
            }
            // The metropolis lists its blocks row by row; each building stands in the
            // middle of its block, on the ground under the middle of its footprint.
            let centre = city_origin
                + Vec3::from(block_origin(k as u32 % a.grid, k as u32 / a.grid))
                + Vec3::new(block * 0.5, 0.0, block * 0.5);
            let c = centre + (lo + hi) * 0.5;
            let offset = centre + Vec3::new(0.0, params.height(c.x, c.z), 0.0);
            b.inc(1);
            Ok(BuildingEntry {
                id: recipe.id.clone(),
                file,
                offset: offset.to_array(),
                min: (lo + offset).to_array(),
                max: (hi + offset).to_array(),
                levels,
            })
        })
        .collect();
    b.finish_and_clear();
    Ok(baked.into_iter().collect::<Result<_, _>>()?)
}

/// `world build`'s regions: region 0 the base, spanning the world, then a
/// `per_side` x `per_side` grid of cells `size` wide, all empty.
fn region_grid(side: f32, size: f32, per_side: u32) -> Vec<RegionSpec> {
    let mut regions: Vec<RegionSpec> = Vec::with_capacity(1 + (per_side * per_side) as usize);
    regions.push(RegionSpec {
        name: "base".into(),
        bounds: farsight_geom::Aabb::new(Vec3::new(0.0, -200.0, 0.0), Vec3::new(side, 600.0, side)),
        authored: RegionState::Unloaded,
        entities: Vec::new(),
    });
    for i in 0..per_side * per_side {
        let (x, z) = ((i % per_side) as f32 * size, (i / per_side) as f32 * size);
        regions.push(RegionSpec {
            name: format!("cell {} {}", i % per_side, i / per_side),
            bounds: farsight_geom::Aabb::new(
                Vec3::new(x, -50.0, z),
                Vec3::new(x + size, 400.0, z + size),
            ),
            authored: RegionState::Unloaded,
            entities: Vec::new(),
        });
    }
    regions
}

/// Puts entities in regions, each with the next id, growing the region's box to
/// hold the entity's.
#[derive(Default)]
struct Placer {
    id: u32,
}

impl Placer {
    fn place(
        &mut self,
        regions: &mut [RegionSpec],
        region: usize,
        model: u32,
        position: Vec3,
        scale: f32,
        bounds: (Vec3, Vec3),
    ) {
        self.id += 1;
        let r = &mut regions[region];
        r.bounds = farsight_geom::Aabb::new(r.bounds.min.min(bounds.0), r.bounds.max.max(bounds.1));
        r.entities.push(EntityRecord {
            id: self.id,
            model,
            position,
            scale,
        });
    }
}

/// What `world build` made, for its summary.
struct BuildSummary<'a> {
    a: &'a BuildArgs,
    out: &'a Path,
    manifest: &'a WorldManifest,
    inputs: &'a [ModelInput],
    sources: &'a MeshSource,
    model_bounds: &'a [([f32; 4], Corners)],
    fates: &'a [ModelFate],
    regions: usize,
    entity_count: usize,
    terrain_chunks: usize,
    chunks_side: i32,
    side: f32,
    start: Instant,
}

/// `world build`'s summary: each part's files and bytes, and what became of the
/// models.
fn print_build_summary(w: &BuildSummary) {
    let BuildSummary {
        a,
        out,
        manifest,
        regions,
        entity_count,
        terrain_chunks,
        chunks_side,
        side,
        start,
        ..
    } = *w;
    let size = |p: &str| crate::output::tree_size(&out.join(p));
    let (_, terrain_bytes) = size(&manifest.terrain.file);
    let (bf, bb) = size("buildings");
    let (mf, mb) = size("models");
    let (sf, sb) = size("scene");
    let (files, total) = crate::output::tree_size(out);
    println!(
        "world: {} written in {:.1} s ({:.0} x {:.0} units)",
        out.display(),
        start.elapsed().as_secs_f64(),
        side,
        side
    );
    println!(
        "  terrain    {terrain_chunks:>7} chunks stored ({chunks_side} x {chunks_side} columns)  {:>10}",
        crate::output::mib(terrain_bytes)
    );
    println!(
        "  buildings  {:>7} baked ({} kit, {} x {} blocks), {bf} files  {:>10}",
        manifest.buildings.len(),
        a.kit,
        a.grid,
        a.grid,
        crate::output::mib(bb)
    );
    print_models_summary(w, mf, mb);
    println!(
        "  regions    {:>7} (region 0 the base), {entity_count} entities, {sf} files  {:>10}",
        regions,
        crate::output::mib(sb)
    );
    println!(
        "  total      {files:>7} files  {:>10}",
        crate::output::mib(total)
    );
}

/// The models' lines of `world build`'s summary: how many were cooked from where,
/// their sizes, and what became of the instances that could not stand in a cell.
fn print_models_summary(w: &BuildSummary, mf: u64, mb: u64) {
    let BuildSummary {
        a,
        out,
        manifest,
        inputs,
        sources,
        model_bounds,
        fates,
        side,
        ..
    } = *w;
    let scale = a.model_scale;
    let levels: usize = manifest
        .models
        .iter()
        .filter_map(|m| CookedModel::open_geometry(out.join(&m.file), m.geometry as usize).ok())
        .map(|m| m.level_count())
        .sum();
    println!(
        "  models     {:>7} cooked ({levels} levels) from {}, {mf} files  {:>10}",
        manifest.models.len(),
        sources.label,
        crate::output::mib(mb)
    );
    let as_they_are: Vec<String> = inputs
        .iter()
        .filter_map(|i| match i {
            ModelInput::Cooked(p) => Some(p.display().to_string()),
            ModelInput::Source(_) => None,
        })
        .collect();
    if !as_they_are.is_empty() {
        println!(
            "             taken as they are (cluster files already cooked): {}",
            as_they_are.join(", ")
        );
    }
    let across = |k: usize| {
        let (lo, hi) = model_bounds[k].1;
        (hi[0] - lo[0]).max(hi[2] - lo[2]) * scale
    };
    let (small, large) = (0..model_bounds.len())
        .map(across)
        .fold((f32::MAX, 0.0f32), |(s, l), w| (s.min(w), l.max(w)));
    println!(
        "             {small:.2} to {large:.2} units across at --model-scale {scale} (1 keeps the authored size; glTF is in metres)"
    );
    for (k, fate) in fates.iter().enumerate() {
        let name = &manifest.models[k].name;
        if fate.in_base > 0 {
            println!(
                "             {name}: {:.1} units across, wider than a region ({}): {} instances in region 0, the base, which spans the world",
                across(k),
                a.region_size,
                fate.in_base
            );
        }
        if fate.too_wide > 0 {
            println!(
                "             {name}: {:.1} units across, wider than the world ({side:.0}): {} instances left out (a smaller --model-scale places them)",
                across(k),
                fate.too_wide
            );
        }
        if fate.no_room > 0 {
            println!(
                "             {name}: {} instances left out, no ground clear of the buildings found for them",
                fate.no_room
            );
        }
    }
}

/// Per-frame figures kept for the report and the plot.
struct Frame {
    report: FrameReport,
    camera: Vec3,
    /// Terrain edits the frame applied.
    edits: usize,
    /// The whole step, as the caller waited for it.
    wall: Duration,
}

/// Runs one frame live and keeps its input, hashes and report.
fn step(world: &mut World, input: &mut FrameInput, rec: &mut Recording, frames: &mut Vec<Frame>) {
    let t = Instant::now();
    let r = world.step(input);
    let wall = t.elapsed();
    rec.frames.push(input.clone());
    rec.hashes.push(r.hashes);
    frames.push(Frame {
        report: r,
        camera: Vec3::from_array(input.camera),
        edits: input.edits.len(),
        wall,
    });
}

fn fly(a: FlyArgs) -> Result<(), Box<dyn std::error::Error>> {
    crate::output::check_output_file(&a.png, "picture")?;
    crate::output::check_output_file(&a.plot, "plot")?;
    if let Some(r) = &a.record {
        crate::output::check_output_file(r, "recording")?;
    }
    let config = WorldConfig {
        budget: Budget {
            memory: (a.memory_mib * MIB) as u64,
            upload: (a.upload_mib * MIB) as u64,
            ..Budget::default()
        },
        source_radius: a.radius,
        draw_distance: a.draw_distance,
        ..WorldConfig::default()
    };
    let dir = a
        .dir
        .canonicalize()
        .map_err(|e| crate::output::io_error(&a.dir, &e))?;
    let rss_before = crate::output::resident_bytes();
    let mut world = World::open(&dir, config)?;
    let rss_open = crate::output::resident_bytes();
    let m = world.manifest();
    println!(
        "world {}: {} regions, {} buildings, {} models, {} props designs; budget {:.0} MiB resident, {:.1} MiB uploaded per frame",
        dir.display(),
        world.streamer().len(),
        m.buildings.len(),
        m.models.len(),
        m.props.len(),
        a.memory_mib,
        a.upload_mib
    );
    let flight = Flight::new(world.manifest(), a.frames);
    let mut recording = Recording {
        world: dir.clone(),
        config,
        frames: Vec::new(),
        hashes: Vec::new(),
    };
    let mut frames: Vec<Frame> = Vec::new();
    let loading = fly_frames(&mut world, &flight, &a, &mut recording, &mut frames);

    let flown: Vec<&Frame> = frames.iter().filter(|f| !f.report.loading).collect();
    println!(
        "loading screens: {} (the start and each teleport), {} frames, {:.2} s{}",
        loading.screens,
        loading.frames,
        loading.time.as_secs_f64(),
        if loading.unfinished > 0 {
            format!(", {} gave up at --max-loading-frames", loading.unfinished)
        } else {
            String::new()
        }
    );
    print_system_table(&flown);
    print_loop_and_memory(&world, &config, &frames, &flown, (rss_before, rss_open));
    print_flight_lines(&a, &config.budget, &recording, &flown);
    write_flight_outputs(&a, &world, &config.budget, &recording, &frames, &flown)
}

/// The loop's time per frame, the objects, the memory after opening and at the end,
/// and the colliders.
fn print_loop_and_memory(
    world: &World,
    config: &WorldConfig,
    frames: &[Frame],
    flown: &[&Frame],
    (rss_before, rss_open): (Option<u64>, Option<u64>),
) {
    let loop_ms: Vec<f64> = flown
        .iter()
        .map(|f| {
            f.report
                .systems
                .iter()
                .map(|s| s.time.as_secs_f64())
                .sum::<f64>()
                * 1e3
        })
        .collect();
    let max_bias = frames.iter().map(|f| f.report.bias).max().unwrap_or(0);
    println!(
        "loop: {:.3} ms per frame on average, {:.3} ms at most; {} objects loaded at most, {} visible at most; bias at most {max_bias}",
        loop_ms.iter().sum::<f64>() / loop_ms.len().max(1) as f64,
        loop_ms.iter().cloned().fold(0.0, f64::max),
        frames.iter().map(|f| f.report.objects).max().unwrap_or(0),
        frames.iter().map(|f| f.report.visible).max().unwrap_or(0),
    );
    print_frame_times(flown);
    let regions = world.streamer().len() as u64;
    if let (Some(a0), Some(a1), Some(a2)) = (rss_before, rss_open, crate::output::resident_bytes())
    {
        let objects = world.store().len().max(1) as u64;
        println!(
            "memory: {:.1} MiB resident after opening ({} bytes per region, {regions} regions), {:.1} MiB at the end; the object store {} bytes per object ({objects} slots)",
            a1 as f64 / MIB,
            a1.saturating_sub(a0) / regions.max(1),
            a2 as f64 / MIB,
            world.store().heap_bytes() as u64 / objects,
        );
    }
    println!(
        "colliders (in the terrain's memory): every chunk within {:.0} of a source, at most {} held, {:.2} MiB at most; {} built",
        config.collision_radius,
        frames.iter().map(|f| f.report.colliders).max().unwrap_or(0),
        frames.iter().map(|f| f.report.collider_bytes).max().unwrap_or(0) as f64 / MIB,
        frames.iter().map(|f| f.report.colliders_built as u64).sum::<u64>(),
    );
}

/// The flight's frames, teleports and edits against the budget, and the frames where
/// a system had a hole or a terrain chunk drew its base mesh.
fn print_flight_lines(a: &FlyArgs, budget: &Budget, recording: &Recording, flown: &[&Frame]) {
    let edits: usize = recording.frames.iter().map(|f| f.edits.len()).sum();
    println!(
        "flight: {} frames, 2 teleports, {edits} terrain edits; budget {:.1} MiB resident, {:.2} MiB per frame uploaded",
        a.frames,
        budget.memory as f64 / MIB,
        budget.upload as f64 / MIB
    );
    for s in SystemId::ALL.iter().take(SYSTEMS - 1) {
        let n = flown
            .iter()
            .filter(|f| f.report.systems[*s as usize].holes > 0)
            .count();
        if n > 0 {
            println!("  frames where {} had a hole: {n}", s.name());
        }
    }
    let base = flown
        .iter()
        .filter(|f| f.report.terrain_base_drawn > 0)
        .count();
    if base > 0 {
        println!(
            "  frames where a terrain chunk in view drew its base mesh (its finer mesh not yet published): {base}, {} chunks at most",
            flown
                .iter()
                .map(|f| f.report.terrain_base_drawn)
                .max()
                .unwrap_or(0)
        );
    }
}

/// Writes the recording (with --record), the picture from above and the budget plot,
/// then prints the frames with a hole and over budget.
fn write_flight_outputs(
    a: &FlyArgs,
    world: &World,
    budget: &Budget,
    recording: &Recording,
    frames: &[Frame],
    flown: &[&Frame],
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = &a.record {
        recording.write(path)?;
        println!(
            "recorded {} frames (inputs, I/O completions and decision hashes) to {}",
            recording.frames.len(),
            path.display()
        );
    }
    draw_above(world, flown, &a.png)?;
    println!(
        "wrote {} (the world from above at the last frame; legend in the picture)",
        a.png.display()
    );
    draw_plot(frames, budget, &a.plot)?;
    println!(
        "wrote {} (memory and uploads per frame per system against the budget)",
        a.plot.display()
    );
    let holes = flown.iter().filter(|f| f.report.holes() > 0).count();
    let over = frames.iter().filter(|f| f.report.over_budget).count();
    println!("frames with a hole: {holes}");
    println!("frames over budget: {over}");
    Ok(())
}

/// Per system over the flown frames: time per frame and at most, memory on average
/// and at most, uploads in all and at most.
fn print_system_table(flown: &[&Frame]) {
    println!(
        "{:<11} {:>9} {:>9} {:>12} {:>12} {:>13} {:>13}",
        "system", "ms/frame", "ms max", "memory MiB", "memory max", "upload total", "upload max"
    );
    for s in SystemId::ALL {
        let i = s as usize;
        let n = flown.len().max(1) as f64;
        let ms: Vec<f64> = flown
            .iter()
            .map(|f| f.report.systems[i].time.as_secs_f64() * 1e3)
            .collect();
        let mem: Vec<u64> = flown.iter().map(|f| f.report.systems[i].memory).collect();
        let up: Vec<u64> = flown.iter().map(|f| f.report.systems[i].upload).collect();
        println!(
            "{:<11} {:>9.3} {:>9.3} {:>12.2} {:>12.2} {:>13.2} {:>13.3}",
            if s == SystemId::Budget {
                "pools+all"
            } else {
                s.name()
            },
            ms.iter().sum::<f64>() / n,
            ms.iter().cloned().fold(0.0, f64::max),
            mem.iter().sum::<u64>() as f64 / n / MIB,
            mem.iter().max().copied().unwrap_or(0) as f64 / MIB,
            up.iter().sum::<u64>() as f64 / MIB,
            up.iter().max().copied().unwrap_or(0) as f64 / MIB,
        );
    }
}

/// What the loading screens of a flight took.
#[derive(Default)]
struct Loading {
    /// Loading screens shown (the start and each teleport).
    screens: u32,
    /// Frames they drew.
    frames: u32,
    time: Duration,
    /// Screens that gave up at `--max-loading-frames`.
    unfinished: u32,
}

/// Flies `flight`: a loading screen at the start and at each teleport, then one
/// frame per flight frame, each kept in `frames` and `recording`.
fn fly_frames(
    world: &mut World,
    flight: &Flight,
    a: &FlyArgs,
    recording: &mut Recording,
    frames: &mut Vec<Frame>,
) -> Loading {
    let mut l = Loading::default();
    let b = bar(a.frames as u64, "flying");
    let mut input = FrameInput::default();
    for f in 0..a.frames {
        let ff = flight.frame(f);
        input.camera = ff.camera.to_array();
        input.target = ff.target.to_array();
        input.prefetch = ff.prefetch.map(|p| p.to_array());
        if f == 0 || ff.teleport {
            // A loading screen: frames drawing nothing until the world around the
            // camera is in.
            l.screens += 1;
            let t = Instant::now();
            input.loading = true;
            input.edits.clear();
            let mut n = 0;
            loop {
                step(world, &mut input, recording, frames);
                n += 1;
                if (n > 2 && world.ready()) || n >= a.max_loading_frames {
                    break;
                }
                world.wait_for_io(Duration::from_millis(2));
            }
            if !world.ready() {
                l.unfinished += 1;
            }
            l.frames += n;
            l.time += t.elapsed();
        }
        input.loading = false;
        input.edits = ff.edits;
        step(world, &mut input, recording, frames);
        b.inc(1);
    }
    b.finish_and_clear();
    l
}

/// The flown frames' step times (mean, median, p99, max, frames over 16.7 ms), and
/// the slowest frames split by system and the terrain's phases: what a mean hides.
fn print_frame_times(flown: &[&Frame]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut order: Vec<&Frame> = flown.to_vec();
    order.sort_by_key(|f| f.wall);
    let Some(last) = order.last() else {
        return;
    };
    let n = order.len();
    let at = |q: f64| ms(order[((n as f64 * q).ceil() as usize).clamp(1, n) - 1].wall);
    let edits = flown.iter().filter(|f| f.edits > 0).count();
    println!(
        "step: {:.3} ms per frame on average, median {:.3}, p99 {:.3}, max {:.3}; {} of {n} frames over 16.7 ms; {edits} frames with a terrain edit",
        flown.iter().map(|f| ms(f.wall)).sum::<f64>() / n as f64,
        at(0.5),
        at(0.99),
        ms(last.wall),
        flown.iter().filter(|f| ms(f.wall) > 16.7).count(),
    );
    let edit: Vec<&&Frame> = flown.iter().filter(|f| f.edits > 0).collect();
    if !edit.is_empty() {
        let terrain = |f: &Frame| ms(f.report.systems[SystemId::Terrain as usize].time);
        println!(
            "  the {} frames with an edit: step {:.3} ms on average, {:.3} at most; terrain {:.3} on average, {:.3} at most",
            edit.len(),
            edit.iter().map(|f| ms(f.wall)).sum::<f64>() / edit.len() as f64,
            edit.iter().map(|f| ms(f.wall)).fold(0.0, f64::max),
            edit.iter().map(|f| terrain(f)).sum::<f64>() / edit.len() as f64,
            edit.iter().map(|f| terrain(f)).fold(0.0, f64::max),
        );
    }
    println!("  slowest frames, ms: step = systems (terrain: edits view stale base colliders)");
    for f in order.iter().rev().take(5) {
        let r = &f.report;
        let sys: Vec<String> = SystemId::ALL
            .iter()
            .map(|s| format!("{} {:.2}", s.name(), ms(r.systems[*s as usize].time)))
            .collect();
        let t = r.terrain_split;
        println!(
            "  frame {}: {:.2} = {} (terrain: {:.2} {:.2} {:.2} {:.2} {:.2}); {} edits, {} bases ({} on the frame thread), {} colliders built, {} rebuilt",
            r.frame,
            ms(f.wall),
            sys.join(", "),
            ms(t.edits),
            ms(t.view),
            ms(t.stale),
            ms(t.base),
            ms(t.colliders),
            f.edits,
            r.terrain_bases_made,
            r.terrain_bases_made_on_frame,
            r.colliders_built,
            r.colliders_rebuilt,
        );
    }
    let most = |f: fn(&FrameReport) -> u32| flown.iter().map(|x| f(&x.report)).max().unwrap_or(0);
    println!(
        "  a flown frame's work at most: {} objects created, {} removed, {} colliders built, {} object slots culled",
        most(|r| r.objects_created),
        most(|r| r.objects_removed),
        most(|r| r.colliders_built),
        most(|r| r.objects),
    );
}

fn replay(a: ReplayArgs) -> Result<(), Box<dyn std::error::Error>> {
    let rec = Recording::read(&a.file)?;
    let mut world = World::open_replay(&rec.world, rec.config)?;
    let b = bar(rec.frames.len() as u64, "replaying");
    for (i, input) in rec.frames.iter().enumerate() {
        let r = world.replay(input);
        if let Err(m) = rec.compare(i, &r.hashes) {
            b.finish_and_clear();
            return Err(format!("{}: replay differs at {m}", a.file.display()).into());
        }
        b.inc(1);
    }
    b.finish_and_clear();
    println!(
        "replayed {} frames of {}: every decision of every system matches the recording",
        rec.frames.len(),
        a.file.display()
    );
    Ok(())
}

const LEVEL_COLOURS: [Rgb; 5] = [
    [230, 50, 50],
    [240, 150, 40],
    [235, 225, 60],
    [70, 190, 230],
    [150, 110, 230],
];

fn draw_above(world: &World, frames: &[&Frame], path: &Path) -> Result<(), String> {
    let m = world.manifest();
    let side = m.extent[0].max(m.extent[1]);
    let size = 1024u32;
    let scale = size as f32 / side;
    let mut img = Canvas::new(size, size, [0, 0, 0]);
    shade_terrain(&mut img, &m.terrain.params(), size, scale);
    draw_chunk_levels(&mut img, world, scale);
    draw_region_states(&mut img, world, scale);
    draw_objects_above(&mut img, world, scale);
    for w in frames.windows(2) {
        let (p, q) = (w[0].camera * scale, w[1].camera * scale);
        if p.distance(q) < 40.0 {
            img.line(p.x, p.z, q.x, q.z, WHITE);
        }
    }
    let bar = crate::picture::nice_length(side);
    let entries: Vec<(Rgb, &str)> = vec![
        (LEVEL_COLOURS[0], "LEVEL 0 (FINEST)"),
        (LEVEL_COLOURS[1], "LEVEL 1"),
        (LEVEL_COLOURS[2], "LEVEL 2"),
        (LEVEL_COLOURS[3], "LEVEL 3"),
        (LEVEL_COLOURS[4], "LEVEL 4+"),
        ([90, 90, 90], "NOTHING DRAWN"),
        ([150, 150, 150], "BUILDING NOT LOADED (OUTLINE)"),
        ([100, 140, 90], "TERRAIN (SHADED)"),
        ([20, 20, 20], "CHUNK NOT UPLOADED (HATCHED)"),
        ([90, 230, 120], "REGION ACTIVE"),
        ([80, 130, 240], "REGION RESIDENT"),
        ([240, 220, 60], "REGION LOADING"),
        ([250, 250, 250], "PROP"),
        (WHITE, "CAMERA PATH"),
    ];
    let key = img.with_key(
        "WORLD FROM ABOVE: BOXES BUILDINGS, DIAMONDS MODELS, CORNER DOTS CHUNK LEVELS",
        &entries,
        scale,
        bar,
        &format!("{bar:.0} UNITS"),
    );
    key.write_png(path)
}

/// Terrain shaded by height and slope, one sample per pixel.
fn shade_terrain(img: &mut Canvas, params: &TerrainGeneratorConfig, size: u32, scale: f32) {
    let (lo, hi) = (
        params.base_height - params.hill_height,
        params.base_height + params.hill_height,
    );
    for py in 0..size {
        for px in 0..size {
            let (x, z) = ((px as f32 + 0.5) / scale, (py as f32 + 0.5) / scale);
            let h = params.height(x, z);
            let dx = params.height(x + 2.0, z) - h;
            let dz = params.height(x, z + 2.0) - h;
            let shade = (0.75 - 0.25 * (dx + dz)).clamp(0.35, 1.1);
            let t = ((h - lo) / (hi - lo)).clamp(0.0, 1.0);
            let base = [60.0 + 90.0 * t, 95.0 + 60.0 * t, 55.0 + 30.0 * t];
            img.put(
                px as i64,
                py as i64,
                [
                    (base[0] * shade) as u8,
                    (base[1] * shade) as u8,
                    (base[2] * shade) as u8,
                ],
            );
        }
    }
}

/// Terrain chunks without an uploaded mesh are darkened; each uploaded chunk's level
/// is a dot in its corner.
fn draw_chunk_levels(img: &mut Canvas, world: &World, scale: f32) {
    let m = world.manifest();
    let mut drawn = std::collections::HashMap::new();
    for (c, level) in world.terrain_levels() {
        let e = drawn.entry((c.x, c.z)).or_insert(None);
        if let Some(l) = level {
            *e = Some(e.map_or(l, |o: u8| o.min(l)));
        }
    }
    let cs = CHUNK_SIZE * scale;
    for cz in 0..m.terrain.chunks_side {
        for cx in 0..m.terrain.chunks_side {
            let (x0, y0) = ((cx as f32 * cs) as i64, (cz as f32 * cs) as i64);
            match drawn.get(&(cx, cz)).copied().flatten() {
                Some(l) => img.fill(
                    x0 + 2,
                    y0 + 2,
                    x0 + 8,
                    y0 + 8,
                    LEVEL_COLOURS[l as usize % 5],
                ),
                None => {
                    for y in y0..y0 + cs as i64 {
                        for x in x0..x0 + cs as i64 {
                            if (x + y) % 3 == 0 {
                                img.put(x, y, [20, 20, 20]);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Regions: loaded cells outlined by state.
fn draw_region_states(img: &mut Canvas, world: &World, scale: f32) {
    let streamer = world.streamer();
    for (r, b) in streamer.bounds().iter().enumerate().skip(1) {
        let c: Rgb = match streamer.actual(r as u32) {
            ActualState::Active => [90, 230, 120],
            ActualState::Resident => [80, 130, 240],
            ActualState::Loading => [240, 220, 60],
            ActualState::Unloading => [240, 140, 50],
            ActualState::Unloaded => continue,
        };
        img.frame(
            (b.min.x * scale) as i64,
            (b.min.z * scale) as i64,
            (b.max.x * scale) as i64,
            (b.max.z * scale) as i64,
            c,
        );
    }
}

/// Every building of the world, loaded or not, outlined; loaded objects by kind and
/// level on top.
fn draw_objects_above(img: &mut Canvas, world: &World, scale: f32) {
    let m = world.manifest();
    for b in &m.buildings {
        img.frame(
            (b.min[0] * scale) as i64,
            (b.min[2] * scale) as i64,
            (b.max[0] * scale) as i64,
            (b.max[2] * scale) as i64,
            [150, 150, 150],
        );
    }
    for (kind, b, level) in world.objects() {
        let (x0, y0, x1, y1) = (
            (b.min.x * scale) as i64,
            (b.min.z * scale) as i64,
            (b.max.x * scale) as i64,
            (b.max.z * scale) as i64,
        );
        let c = level.map_or([90, 90, 90], |l| LEVEL_COLOURS[l as usize % 5]);
        match kind {
            EntityKind::Building(_) => {
                img.fill(x0, y0, x1.max(x0 + 2), y1.max(y0 + 2), c);
                img.frame(x0, y0, x1.max(x0 + 2), y1.max(y0 + 2), [10, 10, 10]);
            }
            EntityKind::Model(_) => {
                let (cx, cy) = ((x0 + x1) / 2, (y0 + y1) / 2);
                let r = ((x1 - x0) / 2).max(3);
                for d in -r..=r {
                    img.put(cx + d, cy + r - d.abs(), c);
                    img.put(cx + d, cy - r + d.abs(), c);
                }
                img.fill(cx - 1, cy - 1, cx + 2, cy + 2, c);
            }
            EntityKind::Prop(_) => img.fill(x0, y0, x0 + 2, y0 + 2, [250, 250, 250]),
        }
    }
}

const SYSTEM_COLOURS: [Rgb; 5] = [
    [120, 120, 120],
    [200, 200, 200],
    [230, 80, 200],
    [240, 150, 40],
    [90, 200, 110],
];

fn draw_plot(frames: &[Frame], budget: &Budget, path: &Path) -> Result<(), String> {
    let (w, h) = (1200u32, 760u32);
    let mut img = Canvas::new(w, h, [16, 16, 20]);
    let n = frames.len().max(2);
    let panels = [
        (
            "RESIDENT MEMORY PER SYSTEM, STACKED (MIB)",
            budget.memory,
            true,
        ),
        (
            "UPLOADS PER FRAME PER SYSTEM, STACKED (MIB)",
            budget.upload,
            false,
        ),
    ];
    let systems = [SystemId::Clusters, SystemId::Buildings, SystemId::Terrain];
    for (p, (title, limit, memory)) in panels.iter().enumerate() {
        let top = 30 + p as i64 * 370;
        let (left, right, bottom) = (70i64, w as i64 - 20, top + 320);
        let peak = frames
            .iter()
            .map(|f| {
                if *memory {
                    f.report.memory
                } else {
                    f.report.upload
                }
            })
            .max()
            .unwrap_or(0)
            .max(*limit) as f64
            * 1.1;
        let y_of = |v: f64| bottom - ((v / peak) * (bottom - top) as f64) as i64;
        let x_of = |i: usize| left + ((i as f64 / (n - 1) as f64) * (right - left) as f64) as i64;
        img.text(left, top - 22, title, 2, WHITE);
        img.frame(left, top, right, bottom, [120, 120, 120]);
        for (i, f) in frames.iter().enumerate() {
            if f.report.loading {
                img.fill(
                    x_of(i),
                    top + 1,
                    x_of(i + 1).max(x_of(i) + 1),
                    bottom,
                    [40, 40, 60],
                );
            }
            let mut acc = 0.0;
            for s in systems {
                let sf = f.report.systems[s as usize];
                let v = if *memory { sf.memory } else { sf.upload } as f64;
                let (y0, y1) = (y_of(acc), y_of(acc + v));
                img.fill(
                    x_of(i),
                    y1,
                    x_of(i + 1).max(x_of(i) + 1),
                    y0,
                    SYSTEM_COLOURS[s as usize],
                );
                acc += v;
            }
        }
        let yb = y_of(*limit as f64);
        img.fill(left, yb - 1, right, yb + 1, [255, 60, 60]);
        img.text(
            left + 4,
            yb - 12,
            &format!("BUDGET {:.1}", *limit as f64 / MIB),
            1,
            [255, 90, 90],
        );
        img.text(4, top, &format!("{:.1}", peak / MIB), 1, WHITE);
        img.text(4, bottom - 8, "0", 1, WHITE);
        img.text(
            right - 80,
            bottom + 4,
            &format!("FRAME {}", frames.len()),
            1,
            WHITE,
        );
    }
    let entries: Vec<(Rgb, &str)> = vec![
        (SYSTEM_COLOURS[2], "CLUSTER LEVELS"),
        (SYSTEM_COLOURS[3], "BUILDING MESHES"),
        (SYSTEM_COLOURS[4], "TERRAIN MESHES AND COLLIDERS"),
        ([255, 60, 60], "BUDGET"),
        ([40, 40, 60], "LOADING SCREEN"),
    ];
    let per_frame = (w as f32 - 90.0) / (n - 1) as f32;
    let span = crate::picture::nice_length(n as f32);
    let key = img.with_key(
        "MEMORY AND UPLOADS PER FRAME AGAINST THE ONE BUDGET",
        &entries,
        per_frame,
        span,
        &format!("{span:.0} FRAMES"),
    );
    key.write_png(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a slope and on a bump, the placed box's floor touches the ground at its
    /// lowest point beneath it and floats nowhere: at every sampled point under the
    /// footprint the ground is at or above the floor, or below it by no more than
    /// what the ground drops between the sampled corners.
    #[test]
    fn models_stand_on_the_lowest_ground_under_them() {
        let slope = |x: f32, z: f32| 0.3 * x - 0.1 * z + 5.0;
        let bump = |x: f32, z: f32| 10.0 - 0.05 * (x * x + z * z);
        // A flat tile (y from -0.3 to 0.3) and a tall model standing on y = 1.
        for corners in [
            ([-1.0, -0.3, -1.0], [1.0, 0.3, 1.0]),
            ([-0.5, 1.0, -0.5], [0.5, 4.0, 0.5]),
        ] {
            for scale in [1.0, 6.5] {
                let (x, z) = (3.0, -2.0);
                let (lo, hi) = (Vec3::from(corners.0) * scale, Vec3::from(corners.1) * scale);
                // A plane's lowest point under a box is a corner: the floor touches it.
                let y = stand_on_ground(&slope, x, z, corners, scale);
                let floor = y + lo.y;
                let lowest = [(lo.x, lo.z), (lo.x, hi.z), (hi.x, lo.z), (hi.x, hi.z)]
                    .iter()
                    .map(|&(dx, dz)| slope(x + dx, z + dz))
                    .fold(f32::INFINITY, f32::min);
                assert!((floor - lowest).abs() < 1e-4, "{floor} {lowest}");
                for i in 0..=8 {
                    for j in 0..=8 {
                        let px = x + lo.x + (hi.x - lo.x) * i as f32 / 8.0;
                        let pz = z + lo.z + (hi.z - lo.z) * j as f32 / 8.0;
                        assert!(slope(px, pz) >= floor - 1e-4, "floats at ({px}, {pz})");
                    }
                }
                // On a bump whose top is under the centre, the lowest sample is a
                // corner too: the centre sinks, no corner floats.
                let y = stand_on_ground(&bump, 0.0, 0.0, corners, scale);
                let corner = bump(lo.x, lo.z);
                assert!((y + lo.y - corner).abs() < 1e-4, "{} {corner}", y + lo.y);
                assert!(bump(0.0, 0.0) >= y + lo.y);
            }
        }
    }
}
