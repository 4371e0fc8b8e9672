//! `farsight demo`: a city block through the visibility pass.
//!
//! Builds the block (500 buildings by default, three LOD levels at 50 / 100 / 200 m),
//! flies a camera along the street, and prints the first frame's table of distance
//! bands and levels, then per-frame visible and caster counts, LOD switches, the pass
//! time and the memory held per object; draws the first frame from above.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use farsight_view::scenes::{city_block, CityLayout};
use farsight_view::{
    Camera, CameraStore, FrameContext, ObjectId, ObjectStore, PassStats, Projection, RenderConfig,
    Residency, VisibilitySystem,
};
use glam::{Mat4, Vec3};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Number of objects (buildings and street lamps); handles 1,000,000 and more.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub objects: u64,
    /// Frames to fly the camera along the street.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: u32,
    /// Worker threads for the pass (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: u16,
    /// Seed of the generated city.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the city block, not the terrain and streaming parts.
    #[arg(long)]
    pub city_only: bool,
    /// Folder for everything the demo writes: its pictures and the streamed world,
    /// kept. Without it the pictures go to the current folder
    /// (`farsight-demo-*.png`) and the world to a temporary folder removed at exit.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// Where the demo's files go.
struct Outputs {
    city_png: PathBuf,
    terrain_png: PathBuf,
    stream_png: PathBuf,
    /// `None`: stream-sim's temporary folder.
    world: Option<PathBuf>,
}

impl Outputs {
    fn new(args: &DemoArgs) -> Result<Self, String> {
        let o = match &args.out {
            Some(dir) => {
                crate::output::check_output_dir(dir, "demo's output")?;
                crate::output::create_dir(dir)?;
                Outputs {
                    city_png: dir.join("city.png"),
                    terrain_png: dir.join("terrain.png"),
                    stream_png: dir.join("stream.png"),
                    world: Some(dir.join("world")),
                }
            }
            None => Outputs {
                city_png: "farsight-demo-city.png".into(),
                terrain_png: "farsight-demo-terrain.png".into(),
                stream_png: "farsight-demo-stream.png".into(),
                world: None,
            },
        };
        crate::output::check_output_file(&o.city_png, "city picture")?;
        if !args.city_only {
            crate::output::check_output_file(&o.terrain_png, "terrain picture")?;
            crate::output::check_output_file(&o.stream_png, "streaming picture")?;
            if let Some(w) = &o.world {
                crate::output::check_output_dir(w, "world folder")?;
            }
        }
        Ok(o)
    }
}

/// Building designs whose LOD0 is still streaming in for the first frames, so the
/// resident fallback shows.
const STREAMING_DESIGNS: u32 = 3;
const LOD0_ARRIVES_AT_FRAME: u64 = 40;
const FOV_Y_DEGREES: f32 = 60.0;
const ASPECT: f32 = 16.0 / 9.0;

pub fn run(args: DemoArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.objects == 0 || args.frames == 0 {
        return Err("--objects and --frames must be at least 1".into());
    }
    let outputs = Outputs::new(&args)?;
    let objects = args.objects as usize;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads as usize)
        .build()?;
    let threads = pool.current_num_threads();

    let t0 = Instant::now();
    let mut store = ObjectStore::new();
    let layout = city_block(&mut store, objects, args.seed);
    set_lod0_residency(&mut store, Residency::Loading);
    println!(
        "farsight demo: {} objects ({} rows x {} columns along a {:.0} m street), built in {:.0} ms, {} threads",
        args.objects,
        2 * layout.rows_per_side,
        layout.columns,
        layout.length(),
        t0.elapsed().as_secs_f64() * 1e3,
        threads
    );

    let flight = fly_city(&args, &pool, &mut store, &layout, &outputs.city_png)?;
    print_flight(&args, &flight, objects);
    print_memory(&store, objects);
    if args.city_only {
        return Ok(());
    }
    run_terrain_and_streaming(&outputs)
}

/// What the flight along the street measured, frame by frame.
struct CityFlight {
    /// Pass time per frame.
    times: Vec<Duration>,
    /// (frame, camera x, the pass's statistics) per frame.
    per_frame: Vec<(u64, f32, PassStats)>,
    /// LOD switches over the whole flight.
    total_switches: u64,
}

/// Flies the camera along the street, running the visibility pass each frame on the
/// pool; LOD0 arrives at frame [`LOD0_ARRIVES_AT_FRAME`]. Draws the first frame's picture.
fn fly_city(
    args: &DemoArgs,
    pool: &rayon::ThreadPool,
    store: &mut ObjectStore,
    layout: &CityLayout,
    city_png: &Path,
) -> Result<CityFlight, Box<dyn std::error::Error>> {
    let mut cams = CameraStore::new();
    let projection = Projection::Perspective {
        fov_y: FOV_Y_DEGREES.to_radians(),
        aspect: ASPECT,
        near: 0.1,
        far: 5000.0,
    };
    let cam = cams.insert(Camera::new(projection, camera_at(layout, 0.0)));
    let settings = RenderConfig {
        cull_min_pixels: 2.0,
        cull_max_distance: 1500.0,
        ..Default::default()
    };
    let mut sys = VisibilitySystem::new();

    let work = args.objects * args.frames as u64;
    let bar = if work >= 20_000_000 {
        let b = ProgressBar::new(args.frames as u64);
        b.set_style(ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} frames {msg}",
        )?);
        b
    } else {
        ProgressBar::hidden()
    };

    let mut times = Vec::with_capacity(args.frames as usize);
    let mut per_frame: Vec<(u64, f32, PassStats)> = Vec::with_capacity(args.frames as usize);
    let mut total_switches = 0u64;
    for f in 0..args.frames as u64 {
        if f == LOD0_ARRIVES_AT_FRAME {
            set_lod0_residency(store, Residency::Resident);
        }
        let t = f as f32 / (args.frames.max(2) - 1) as f32;
        cams.get_mut(cam).expect("camera").world = Some(camera_at(layout, t));
        let ctx = FrameContext {
            frame: f,
            host_view: None,
            cameras: &cams,
            world_epoch: 0,
            settings: &settings,
            stereo_eyes: None,
        };
        let start = Instant::now();
        pool.install(|| {
            sys.update(store, &ctx);
        });
        let dt = start.elapsed();
        times.push(dt);
        let stats = sys.stats();
        total_switches += stats.lod_switches as u64;
        per_frame.push((f, camera_x(layout, t), stats));
        if f == 0 {
            print_seed_table(store, &sys);
            let vis = sys.visibility();
            crate::city_picture::draw(
                store,
                vis,
                layout,
                &settings,
                FOV_Y_DEGREES.to_radians(),
                ASPECT,
                city_png,
            )?;
        }
        bar.inc(1);
        bar.set_message(format!("{:.2} ms/frame", dt.as_secs_f64() * 1e3));
    }
    bar.finish_and_clear();

    Ok(CityFlight {
        times,
        per_frame,
        total_switches,
    })
}

/// Prints every few frames of the flight, the pass time statistics and the LOD switches.
fn print_flight(args: &DemoArgs, flight: &CityFlight, objects: usize) {
    let (times, per_frame) = (&flight.times, &flight.per_frame);
    println!(
        "\nFlight along the street ({} frames, every {}th shown):",
        args.frames,
        step(args.frames)
    );
    println!(
        "{:>6} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "frame", "camera x", "visible", "casters", "drawn", "lod pass", "switches", "pass ms"
    );
    for (i, (f, x, s)) in per_frame.iter().enumerate() {
        if i as u32 % step(args.frames) == 0 || i + 1 == per_frame.len() {
            println!(
                "{:>6} {:>9.1} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9.3}",
                f,
                x,
                s.visible,
                s.casters,
                s.drawn,
                if s.lod_pass { "yes" } else { "-" },
                s.lod_switches,
                times[i].as_secs_f64() * 1e3
            );
        }
    }
    let mut sorted = times.clone();
    sorted.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    let pct = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    println!(
        "\nPass time over {} frames: mean {:.3} ms, median {:.3} ms, p99 {:.3} ms, max {:.3} ms; {:.1} ns per object per frame",
        times.len(),
        mean.as_secs_f64() * 1e3,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        sorted.last().expect("frames").as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e9 / objects as f64
    );
    let last = per_frame.last().expect("frames").2;
    println!(
        "LOD switches: {} in total, {:.1} per frame; invalid objects skipped: {}",
        flight.total_switches,
        flight.total_switches as f64 / args.frames as f64,
        last.invalid
    );
}

/// The terrain and streaming demos at a small size, writing their pictures to `outputs`.
fn run_terrain_and_streaming(outputs: &Outputs) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n== Voxel terrain: `farsight terrain` at demo size");
    crate::terrain::run(crate::terrain::TerrainArgs {
        size: 8,
        frames: 120,
        frame_ms: 16,
        edit_every: 6,
        threads: 2,
        draw_distance: 1500.0,
        seed: 7,
        png: outputs.terrain_png.clone(),
        save: None,
    })?;

    println!("\n== Regions and cluster streaming: `farsight stream-sim` at demo size");
    crate::stream_sim::run(crate::stream_sim::StreamSimArgs {
        out: outputs.world.clone(),
        regions_side: 32,
        models: None,
        meshes: None,
        frames: 360,
        teleport_frame: None,
        budget_mib: 10.0,
        radius: 350.0,
        io_threads: 2,
        fps: 60.0,
        print_every: 60,
        png: outputs.stream_png.clone(),
        seed: 1,
    })?;
    println!(
        "\nPictures: {}, {}, {}",
        outputs.city_png.display(),
        outputs.terrain_png.display(),
        outputs.stream_png.display()
    );
    Ok(())
}

/// The memory held per object: the process's resident memory (everything: store,
/// pass outputs, the binary) and the store's own columns.
fn print_memory(store: &ObjectStore, objects: usize) {
    // Resident memory first: counting the columns allocates a little itself.
    let rss = crate::output::resident_bytes();
    let columns = store.heap_bytes();
    println!(
        "memory: {} resident, {} per object; the store's columns {}, {:.0} bytes per object",
        rss.map_or("unknown".to_string(), crate::output::mib),
        rss.map_or("unknown".to_string(), |r| format!(
            "{:.0} bytes",
            r as f64 / objects as f64
        )),
        crate::output::mib(columns as u64),
        columns as f64 / objects as f64
    );
}

fn step(frames: u32) -> u32 {
    (frames / 12).max(1)
}

fn camera_x(layout: &CityLayout, t: f32) -> f32 {
    -10.0 + t * (layout.length() + 10.0)
}

/// The camera at street level, a tenth of the way from one end at `t = 0`.
fn camera_at(layout: &CityLayout, t: f32) -> Mat4 {
    let eye = Vec3::new(camera_x(layout, t), 1.7, 0.0);
    Mat4::look_at_rh(eye, eye + Vec3::new(1.0, -0.02, 0.0), Vec3::Y).inverse()
}

fn set_lod0_residency(store: &mut ObjectStore, r: Residency) {
    for (_, lod) in store.lods_mut() {
        // `scenes::building_mesh(design, 0)` is `MeshHandle(design * 3)`.
        if lod.levels()[0].mesh.0 / 3 < STREAMING_DESIGNS {
            lod.set_residency(0, r);
        }
    }
}

/// The first frame's table: distance band, buildings, desired LOD, outcome.
fn print_seed_table(store: &ObjectStore, sys: &VisibilitySystem) {
    let vis = sys.visibility();
    let cam = vis.camera_position;
    let bands: [(f32, f32, &str); 4] = [
        (0.0, 50.0, "0-50m"),
        (50.0, 100.0, "50-100m"),
        (100.0, 200.0, "100-200m"),
        (200.0, f32::INFINITY, "200m+"),
    ];
    #[derive(Default, Clone)]
    struct Row {
        buildings: u32,
        desired: [u32; 3],
        drawn: [u32; 3],
        fallback: u32,
    }
    let mut rows = vec![Row::default(); 4];
    for &i in &vis.objects.scene {
        let id = ObjectId(i);
        let Some(lod) = store.lod(id) else { continue };
        let d = cam.distance(vis.objects.bounds[i as usize].center());
        let b = bands
            .iter()
            .position(|&(lo, hi, _)| d >= lo && d < hi)
            .expect("bands cover all");
        let r = &mut rows[b];
        r.buildings += 1;
        r.desired[lod.desired() as usize] += 1;
        if let Some(c) = lod.current() {
            r.drawn[c as usize] += 1;
        }
        r.fallback += lod.using_fallback() as u32;
    }
    println!("\nFrame 0, camera at one end of the block:");
    println!(
        "{:<10} {:>9}  {:<16} outcome",
        "distance", "buildings", "desired LOD"
    );
    for (r, (_, _, name)) in rows.iter().zip(bands) {
        let desired = (0..3)
            .filter(|&l| r.desired[l] > 0)
            .map(|l| format!("LOD{l} x{}", r.desired[l]))
            .collect::<Vec<_>>()
            .join(", ");
        let drawn = (0..3)
            .filter(|&l| r.drawn[l] > 0)
            .map(|l| format!("LOD{l} x{}", r.drawn[l]))
            .collect::<Vec<_>>()
            .join(", ");
        let outcome = if r.fallback > 0 {
            format!(
                "{drawn} ({} on a resident fallback while LOD0 streams in)",
                r.fallback
            )
        } else {
            drawn
        };
        println!(
            "{:<10} {:>9}  {:<16} {}",
            name, r.buildings, desired, outcome
        );
    }
    let s = sys.stats();
    println!(
        "visible {} of {} drawn, {} shadow casters first in the scene list",
        s.visible, s.drawn, s.casters
    );
}
