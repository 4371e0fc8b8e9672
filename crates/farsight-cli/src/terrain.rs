//! `farsight terrain`: the voxel terrain (docs/design/voxel-terrain.md) end to end.
//!
//! Generates a terrain (value-noise hills, noise caves, a lake), flies a camera over
//! it at a fixed frame rate while carving and adding spheres every few frames, and
//! reports chunks meshed per level, meshing and publication times, edit-to-visible
//! frames, collider rebuilds and memory. Writes a PNG seen from above with chunks
//! coloured by their render level, and optionally saves the grid and reads it back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use farsight_terrain::{
    generate_chunk, read_grid, write_grid, CollisionCache, Material, TerrainGeneratorConfig,
    TerrainView, TerrainViewConfig, VoxelGrid, CELL_SIZE, CHUNK_CELLS, CHUNK_SIZE,
};
use glam::{IVec2, IVec3, Vec3};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct TerrainArgs {
    /// Terrain size in chunks per horizontal side (128 units each).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(i32).range(1..=4096))]
    pub size: i32,
    /// Frames to fly.
    #[arg(long, default_value_t = 360, value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: u32,
    /// Target frame time in milliseconds (the flight sleeps out the rest).
    #[arg(long, default_value_t = 16)]
    pub frame_ms: u64,
    /// Apply an edit every this many frames (0: no edits).
    #[arg(long, default_value_t = 6)]
    pub edit_every: u32,
    /// Background meshing threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Draw distance in world units (chunks are meshed one chunk beyond it).
    #[arg(long, default_value_t = 1500.0, value_parser = crate::output::positive_f32)]
    pub draw_distance: f32,
    /// Seed of the generated terrain.
    #[arg(long, default_value_t = 7)]
    pub seed: u32,
    /// Where to write the picture from above (PNG), chunks coloured by level.
    #[arg(long, default_value = "terrain.png")]
    pub png: PathBuf,
    /// Save the final grid here (a farsight container) and read it back.
    #[arg(long)]
    pub save: Option<PathBuf>,
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg:12} [{bar:30}] {pos}/{len} ({elapsed}, eta {eta})",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    b
}

pub fn run(args: TerrainArgs) -> Result<(), Box<dyn std::error::Error>> {
    check_args(&args)?;
    let (mut grid, params) = generate(&args);
    let mut view = TerrainView::new(
        TerrainViewConfig {
            draw_distance: args.draw_distance,
            ..Default::default()
        },
        args.threads as usize,
    );
    let mut collision = build_colliders(&grid);
    let flight = fly(&args, &params, &mut grid, &mut view, &mut collision)?;
    print_flight(&args, &flight, &collision);
    println!(
        "memory: cells {:.1} MiB ({} chunks, {} uniform), render+water meshes {:.1} MiB, colliders {:.1} MiB",
        grid.heap_bytes() as f64 / (1 << 20) as f64,
        grid.chunk_count(),
        grid.uniform_chunk_count(),
        view.mesh_bytes() as f64 / (1 << 20) as f64,
        collision.heap_bytes() as f64 / (1 << 20) as f64
    );
    write_png(&args, &params, &view, &flight.path)?;
    if let Some(p) = &args.save {
        save_and_read_back(&grid, p)?;
    }
    Ok(())
}

/// Checks the arguments and the output paths before any work.
fn check_args(args: &TerrainArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.size < 1 || args.frames == 0 || args.threads == 0 {
        return Err("--size, --frames and --threads must be at least 1".into());
    }
    if !(args.draw_distance.is_finite() && args.draw_distance > 0.0) {
        return Err(format!(
            "--draw-distance must be above 0, found {}",
            args.draw_distance
        )
        .into());
    }
    // Outputs are checked before the work, not after it.
    crate::output::check_output_file(&args.png, "picture")?;
    if let Some(p) = &args.save {
        crate::output::check_output_file(p, "terrain save")?;
    }
    Ok(())
}

/// Generates the terrain (heights in 0..2 chunks, caves below) and prints its size.
fn generate(args: &TerrainArgs) -> (VoxelGrid, TerrainGeneratorConfig) {
    let half = args.size as f32 * CHUNK_SIZE * 0.5;
    let params = TerrainGeneratorConfig {
        seed: args.seed,
        lake: Some((Vec3::new(half * 0.6, 110.0, half * 0.4), 140.0)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let mut grid = VoxelGrid::new();
    let columns: Vec<IVec2> = (0..args.size)
        .flat_map(|z| (0..args.size).map(move |x| IVec2::new(x, z)))
        .collect();
    let gen_bar = bar(columns.len() as u64, "generating");
    for c in &columns {
        for y in -1..2 {
            generate_chunk(&mut grid, &params, IVec3::new(c.x, y, c.y));
        }
        gen_bar.inc(1);
    }
    gen_bar.finish_and_clear();
    println!(
        "farsight terrain: {0}x{0} chunks ({1:.0} x {1:.0} units), {2} chunks stored ({3} uniform, {4:.1} MiB of cells), generated in {5:.2} s",
        args.size,
        args.size as f32 * CHUNK_SIZE,
        grid.chunk_count(),
        grid.uniform_chunk_count(),
        grid.heap_bytes() as f64 / (1 << 20) as f64,
        t0.elapsed().as_secs_f64()
    );
    (grid, params)
}

/// Builds a collider for every chunk and prints how long that took.
fn build_colliders(grid: &VoxelGrid) -> CollisionCache {
    let mut collision = CollisionCache::new(1);
    let t = Instant::now();
    let spinner = ProgressBar::new_spinner();
    spinner.set_message("building colliders for every chunk");
    spinner.enable_steady_tick(Duration::from_millis(100));
    let first = collision.update(grid);
    spinner.finish_and_clear();
    println!(
        "collision: {} colliders built in {:.0} ms ({})",
        first.rebuilt,
        t.elapsed().as_secs_f64() * 1e3,
        if first.parallel { "parallel" } else { "serial" }
    );
    collision
}

/// What the flight counted, for the report.
#[derive(Default)]
struct Flight {
    /// Camera position per frame.
    path: Vec<Vec3>,
    /// Edits not yet visible: (revision, frame applied).
    pending: Vec<(u64, u32)>,
    /// Frames from each visible edit to its publication.
    edit_frames: Vec<u32>,
    /// Chunks published per level.
    published: [usize; 4],
    dispatched: usize,
    stale: usize,
    mesh_time: Duration,
    publish_max: Duration,
    publish_sum: Duration,
    rebuilds: usize,
    rebuild_time: Duration,
}

/// Flies a diagonal at 60 units above the ground, a chunk in from the edges (a quarter
/// of the side on terrains too small for that, so start and end differ), editing the
/// ground ahead, meshing in the background and updating the colliders.
fn fly(
    args: &TerrainArgs,
    params: &TerrainGeneratorConfig,
    grid: &mut VoxelGrid,
    view: &mut TerrainView,
    collision: &mut CollisionCache,
) -> Result<Flight, Box<dyn std::error::Error>> {
    let half = args.size as f32 * CHUNK_SIZE * 0.5;
    let margin = CHUNK_SIZE.min(half * 0.5);
    let start = Vec3::new(margin, 0.0, margin);
    let end = Vec3::new(2.0 * half - margin, 0.0, 2.0 * half - margin);
    let mut out = Flight::default();
    let frame = Duration::from_millis(args.frame_ms);
    let fly = bar(args.frames as u64, "flying");
    for f in 0..args.frames {
        let t_frame = Instant::now();
        let s = f as f32 / (args.frames - 1).max(1) as f32;
        let mut cam = start.lerp(end, s);
        cam.y = params.height(cam.x, cam.z) + 60.0;
        out.path.push(cam);
        if args.edit_every > 0 && f % args.edit_every == 0 {
            let ahead = cam + (end - start).normalize_or(Vec3::X) * 80.0;
            if let Some(rev) = edit_ahead(grid, params, ahead, f / args.edit_every)? {
                out.pending.push((rev, f));
            }
        }
        let stats = view.update(grid, cam);
        for (a, b) in out.published.iter_mut().zip(stats.published_per_level) {
            *a += b;
        }
        out.dispatched += stats.dispatched;
        out.stale += stats.stale_dropped;
        out.mesh_time += stats.mesh_time;
        out.publish_max = out.publish_max.max(stats.publish_time);
        out.publish_sum += stats.publish_time;
        let visible = view.visible_revision();
        let edit_frames = &mut out.edit_frames;
        out.pending.retain(|&(rev, at)| {
            if rev <= visible {
                edit_frames.push(f - at);
                false
            } else {
                true
            }
        });
        let t = Instant::now();
        let up = collision.update(grid);
        out.rebuild_time += t.elapsed();
        out.rebuilds += up.rebuilt;
        fly.inc(1);
        if let Some(rest) = frame.checked_sub(t_frame.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    fly.finish_and_clear();
    Ok(out)
}

/// Edit number `n` on the ground at `ahead`: craters and boulders alternate, every third
/// on a chunk corner. Returns the grid revision when the edit changed anything.
fn edit_ahead(
    grid: &mut VoxelGrid,
    params: &TerrainGeneratorConfig,
    ahead: Vec3,
    n: u32,
) -> Result<Option<u64>, Box<dyn std::error::Error>> {
    let mut p = Vec3::new(ahead.x, params.height(ahead.x, ahead.z), ahead.z);
    if n % 3 == 0 {
        p.x = (p.x / CHUNK_SIZE).round() * CHUNK_SIZE;
        p.z = (p.z / CHUNK_SIZE).round() * CHUNK_SIZE;
    }
    let m = if n % 2 == 0 {
        Material::AIR
    } else {
        Material::ROCK
    };
    Ok(grid.set_sphere(p, 14.0, m)?.revision)
}

/// Prints what the flight published, how edits became visible, and collider rebuilds.
fn print_flight(args: &TerrainArgs, flight: &Flight, collision: &CollisionCache) {
    let published = &flight.published;
    let total: usize = published.iter().sum();
    println!(
        "flight: {} frames, {} chunks dispatched, {} published, {} stale results dropped",
        args.frames, flight.dispatched, total, flight.stale
    );
    println!(
        "  published per level (32/16/8/4 samples): {} / {} / {} / {}",
        published[0], published[1], published[2], published[3]
    );
    println!(
        "  meshing: {:.0} us per chunk on the workers; publication: mean {:.3} ms, max {:.3} ms per frame",
        flight.mesh_time.as_secs_f64() * 1e6 / total.max(1) as f64,
        flight.publish_sum.as_secs_f64() * 1e3 / args.frames as f64,
        flight.publish_max.as_secs_f64() * 1e3
    );
    if flight.edit_frames.is_empty() {
        println!("  edits: none became visible during the flight");
    } else {
        let mut edit_frames = flight.edit_frames.clone();
        edit_frames.sort_unstable();
        println!(
            "  edits: {} visible, edit-to-visible frames min {} median {} max {}; {} still pending at the end",
            edit_frames.len(),
            edit_frames[0],
            edit_frames[edit_frames.len() / 2],
            edit_frames[edit_frames.len() - 1],
            flight.pending.len()
        );
    }
    println!(
        "  collision: {} collider rebuilds, {:.1} ms total; {} colliders",
        flight.rebuilds,
        flight.rebuild_time.as_secs_f64() * 1e3,
        collision.len()
    );
}

/// Saves the final grid as a container, reads it back and prints its size.
fn save_and_read_back(grid: &VoxelGrid, p: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    write_grid(grid, p)?;
    let back = read_grid(p)?;
    let len = std::fs::metadata(p)
        .map_err(|e| crate::output::io_error(p, &e))?
        .len();
    println!(
        "saved {} ({:.1} MiB) and read it back in {:.0} ms: {} chunks",
        p.display(),
        len as f64 / (1 << 20) as f64,
        t.elapsed().as_secs_f64() * 1e3,
        back.chunk_count()
    );
    Ok(())
}

/// One pixel per cell column: the level colour of the top published chunk, shaded by
/// height, water in blue, the camera path in white.
fn write_png(
    args: &TerrainArgs,
    params: &TerrainGeneratorConfig,
    view: &TerrainView,
    path: &[Vec3],
) -> Result<(), Box<dyn std::error::Error>> {
    const COLOURS: [[u8; 3]; 4] = [[230, 80, 60], [240, 190, 60], [90, 190, 90], [70, 130, 220]];
    let w = (args.size * CHUNK_CELLS) as usize;
    let mut img = vec![0u8; w * w * 3];
    let mut top: std::collections::HashMap<(i32, i32), u8> = std::collections::HashMap::new();
    for (c, level, mesh) in view.published() {
        if mesh.is_some() {
            top.entry((c.x, c.z))
                .and_modify(|l| *l = (*l).min(level))
                .or_insert(level);
        }
    }
    for z in 0..w {
        for x in 0..w {
            let (wx, wz) = ((x as f32 + 0.5) * CELL_SIZE, (z as f32 + 0.5) * CELL_SIZE);
            let h = params.height(wx, wz);
            let shade =
                (0.55 + (h - params.base_height) / params.hill_height * 0.45).clamp(0.3, 1.0);
            let chunk = ((x as i32) / CHUNK_CELLS, (z as i32) / CHUNK_CELLS);
            let mut rgb = match top.get(&chunk) {
                Some(&l) => COLOURS[l as usize].map(|c| (c as f32 * shade) as u8),
                None => [(40.0 * shade) as u8; 3],
            };
            if let Some((c, _)) = params.lake {
                if h < c.y {
                    rgb = [rgb[0] / 3, rgb[1] / 2, 200];
                }
            }
            if x % CHUNK_CELLS as usize == 0 || z % CHUNK_CELLS as usize == 0 {
                rgb = rgb.map(|c| c / 2);
            }
            img[(z * w + x) * 3..][..3].copy_from_slice(&rgb);
        }
    }
    // Small terrains are drawn larger so the legend fits: at least 768 pixels.
    let k = 768u32.div_ceil(w as u32).max(1);
    let mut canvas = crate::picture::Canvas {
        width: w as u32,
        height: w as u32,
        pixels: img,
    }
    .upscaled(k);
    let px = k as f32 / CELL_SIZE;
    for pair in path.windows(2) {
        let (a, b) = (pair[0] * px, pair[1] * px);
        canvas.line(a.x, a.z, b.x, b.z, crate::picture::WHITE);
    }
    let world = args.size as f32 * CHUNK_SIZE;
    let bar = crate::picture::nice_length(world);
    let canvas = canvas.with_key(
        "TERRAIN FROM ABOVE: THE LEVEL EACH CHUNK DRAWS",
        &[
            (COLOURS[0], "LEVEL 0 (32 SAMPLES)"),
            (COLOURS[1], "LEVEL 1 (16)"),
            (COLOURS[2], "LEVEL 2 (8)"),
            (COLOURS[3], "LEVEL 3 (4)"),
            ([40, 40, 40], "NOT MESHED"),
            ([60, 80, 200], "WATER"),
            (crate::picture::WHITE, "CAMERA PATH"),
        ],
        px,
        bar,
        &format!("{bar:.0} UNITS"),
    );
    canvas.write_png(&args.png)?;
    println!(
        "wrote {} ({}x{} pixels, {k} per cell column of {:.0} units; legend and scale in the picture)",
        args.png.display(),
        canvas.width,
        canvas.height,
        CELL_SIZE
    );
    Ok(())
}
