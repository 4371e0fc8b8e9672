//! `farsight stream-sim`: a generated world of regions holding instances of cooked
//! real meshes (the cluster files `farsight cook mesh --clusters` writes: the
//! user's `--models`, or the shared meshes cooked on the fly), flown through by a
//! scripted camera with a teleport; prints what streaming did each frame and in
//! total, and draws the regions from above as a PNG.

use std::path::{Path, PathBuf};
use std::time::Instant;

use farsight_stream::cluster::{CookedModel, SchedulerConfig};
use farsight_stream::region::ActualState;
use farsight_stream::sim::{generate, Sim, SimConfig, SimFrame};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::sample_meshes::MeshSource;

/// What the world places: the user's cooked cluster files, or meshes cooked first.
enum Source<'a> {
    Cooked(&'a Path),
    Meshes(MeshSource),
}

#[derive(clap::Args)]
pub struct StreamSimArgs {
    /// Keep the generated world (scene index, region files, and the cluster files
    /// cooked on the fly) in this folder. Without it the world goes to a temporary
    /// folder removed at exit.
    #[arg(long, visible_alias = "dir")]
    pub out: Option<PathBuf>,
    /// The world is N x N regions of 100 units.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub regions_side: u32,
    /// A folder of cooked cluster files (`farsight cook mesh --clusters`, `.farsight`)
    /// to place, each many times. Without it the meshes of --meshes are cooked on the
    /// fly.
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// Without --models: the folder of .gltf, .glb and .obj meshes (and folders of
    /// them) cooked into cluster files before the flight (default: the shared meshes
    /// in ../shared/data/meshes when they are there, else four generated meshes).
    #[arg(long, conflicts_with = "models")]
    pub meshes: Option<PathBuf>,
    /// Frames to fly.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: u32,
    /// Frame of the teleport (default: half way).
    #[arg(long)]
    pub teleport_frame: Option<u32>,
    /// Upload budget per frame, MiB.
    #[arg(long, default_value_t = 10.0, value_parser = crate::output::positive_f64)]
    pub budget_mib: f64,
    /// Radius of the camera's streaming source, in world units.
    #[arg(long, default_value_t = 350.0, value_parser = crate::output::positive_f32)]
    pub radius: f32,
    /// Threads reading level files from disk.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub io_threads: u16,
    /// Frames per second to pace the flight at, as a game would (0: as fast as possible).
    #[arg(long, default_value_t = 60.0, value_parser = crate::output::non_negative_f64)]
    pub fps: f64,
    /// Print a line every N frames (0: only the totals).
    #[arg(long, default_value_t = 60)]
    pub print_every: u32,
    /// Where to write the picture of the regions from above (PNG).
    #[arg(long, default_value = "stream-sim.png")]
    pub png: PathBuf,
    /// Seed of the generated world.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

const MIB: f64 = 1024.0 * 1024.0;

pub fn run(args: StreamSimArgs) -> Result<(), Box<dyn std::error::Error>> {
    check_args(&args)?;
    // Inputs and outputs are checked before the work; the world goes to a
    // temporary folder unless --out names one.
    crate::output::check_output_file(&args.png, "picture")?;
    if let Some(d) = &args.out {
        crate::output::check_output_dir(d, "world folder")?;
    }
    let source = match &args.models {
        Some(d) => Source::Cooked(d),
        None => Source::Meshes(MeshSource::resolve(args.meshes.as_deref())?),
    };
    let inputs = match &source {
        Source::Cooked(d) => model_files(d, "--models", &["farsight"])?,
        Source::Meshes(m) => model_files(&m.dir, "--meshes", &["gltf", "glb", "obj"])?,
    };
    let temp;
    let dir = match &args.out {
        Some(d) => {
            crate::output::create_dir(d)?;
            d.clone()
        }
        None => {
            temp = crate::output::TempDir::new("farsight-stream-sim")?;
            temp.path().to_path_buf()
        }
    };
    let scheduler = SchedulerConfig {
        upload_budget: (args.budget_mib * MIB) as u64,
        ..SchedulerConfig::default()
    };
    let config = SimConfig {
        dir: dir.clone(),
        regions_side: args.regions_side,
        region_size: 100.0,
        max_instances_per_region: 8,
        instance_radius: (3.0, 15.0),
        frames: args.frames,
        teleport_frame: args.teleport_frame.unwrap_or(args.frames / 2),
        source_radius: args.radius,
        seed: args.seed,
        scheduler,
        io_threads: args.io_threads as usize,
    };
    let t = Instant::now();
    let cooked = match &source {
        Source::Cooked(_) => open_models(&inputs)?,
        Source::Meshes(_) => cook_models(&inputs, &dir.join("models"))?,
    };
    let spinner = ProgressBar::new_spinner();
    spinner.set_message(format!(
        "writing {} regions to {}",
        args.regions_side * args.regions_side,
        dir.display()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(100));
    let index = generate(&config, &cooked)?;
    spinner.finish_and_clear();
    print_world(&args, &source, &cooked, &dir, t);
    let budget = scheduler.upload_budget as f64;
    let mut sim = Sim::new(config.clone(), cooked, &index)?;
    let t = Instant::now();
    let warm = sim.warm_up(100_000);
    println!(
        "loading screen: every model's coarsest level resident after {warm} frames ({:.2} s)",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let (frames, ever_active, busy) = fly(&args, &mut sim, budget);
    let wall = t.elapsed().as_secs_f64();
    print_totals(&args, &sim, &frames, budget, wall, busy);
    write_png(&args.png, &sim, &frames, &ever_active)?;
    println!(
        "wrote {} (the regions from above at the end, coloured by state; legend and scale in the picture)",
        args.png.display()
    );
    Ok(())
}

/// What was written: the regions, each cooked model's levels, the files and where.
fn print_world(
    args: &StreamSimArgs,
    source: &Source,
    cooked: &[CookedModel],
    dir: &Path,
    t: Instant,
) {
    let disk: u64 = cooked.iter().map(CookedModel::total_bytes).sum();
    let levels: usize = cooked.iter().map(CookedModel::level_count).sum();
    let (file_count, file_bytes) = crate::output::tree_size(dir);
    println!(
        "world: {} regions, {} cooked models ({levels} levels, {:.1} MiB of levels, {}) in {:.2} s",
        args.regions_side * args.regions_side,
        cooked.len(),
        disk as f64 / MIB,
        match source {
            Source::Cooked(d) => format!("from {}", d.display()),
            Source::Meshes(m) => format!("cooked on the fly from {}", m.label),
        },
        t.elapsed().as_secs_f64()
    );
    for m in cooked {
        let tris: Vec<String> = m.levels().map(|l| l.triangles.to_string()).collect();
        println!(
            "  {:<28} {:>2} levels, {:>8.1} KiB, triangles per level {}",
            m.geometry().name,
            m.level_count(),
            m.total_bytes() as f64 / 1024.0,
            tris.join(" ")
        );
    }
    println!(
        "  wrote {file_count} files, {} to {}{}",
        crate::output::mib(file_bytes),
        dir.display(),
        if args.out.is_some() {
            " (kept)"
        } else {
            " (a temporary folder, removed at exit; --out DIR keeps it)"
        }
    );
}

/// The values `stream-sim` refuses, refused before any work.
fn check_args(args: &StreamSimArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.regions_side == 0 {
        return Err("--regions-side must be positive".into());
    }
    if !(args.budget_mib.is_finite() && args.budget_mib > 0.0) {
        return Err("--budget-mib must be positive".into());
    }
    let ok =
        args.radius.is_finite() && args.radius > 0.0 && args.fps.is_finite() && args.fps >= 0.0;
    if !ok {
        return Err("--radius must be positive and --fps 0 or more".into());
    }
    if let Some(t) = args.teleport_frame.filter(|&t| t >= args.frames) {
        return Err(format!("--teleport-frame {t} is not below --frames {}", args.frames).into());
    }
    Ok(())
}

/// Steps the simulation `args.frames` frames (paced at `args.fps`), printing a line
/// every `args.print_every`: every frame's figures, which regions were ever active,
/// and the seconds spent stepping.
fn fly(args: &StreamSimArgs, sim: &mut Sim, budget: f64) -> (Vec<SimFrame>, Vec<bool>, f64) {
    let bar = ProgressBar::new(args.frames as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames {msg}")
            .expect("a valid template"),
    );
    let mut frames: Vec<SimFrame> = Vec::with_capacity(args.frames as usize);
    println!(
        "{:>6} {:>25} {:>20} {:>9} {:>6} {:>4} {:>7} {:>6}",
        "frame",
        "regions U/L/R/A/u",
        "uploaded MiB/budget",
        "resident",
        "evict",
        "bias",
        "visible",
        "holes"
    );
    let frame_time = (args.fps > 0.0).then(|| std::time::Duration::from_secs_f64(1.0 / args.fps));
    let mut busy = 0.0f64;
    let mut ever_active = vec![false; sim.regions().streamer().len()];
    for _ in 0..args.frames {
        let start = Instant::now();
        let f = sim.step();
        let spent = start.elapsed();
        let streamer = sim.regions().streamer();
        for (r, was) in ever_active.iter_mut().enumerate() {
            *was |= streamer.actual(r as u32) == ActualState::Active;
        }
        busy += spent.as_secs_f64();
        if let Some(ft) = frame_time {
            std::thread::sleep(ft.saturating_sub(spent));
        }
        if args.print_every > 0 && (f.frame % args.print_every == 0 || f.teleported) {
            let r = f.regions;
            let line = format!(
                "{:>6} {:>25} {:>20} {:>9} {:>6} {:>4} {:>7} {:>6}{}",
                f.frame,
                format!("{}/{}/{}/{}/{}", r[0], r[1], r[2], r[3], r[4]),
                format!(
                    "{:.2}/{:.2}",
                    f.cluster.bytes_uploaded as f64 / MIB,
                    budget / MIB
                ),
                f.cluster.levels_resident,
                f.cluster.evictions,
                f.cluster.bias,
                f.visible_models,
                f.cluster.holes,
                if f.teleported { "  <- teleport" } else { "" }
            );
            // A hidden bar (output not a terminal) drops its println: print directly.
            if bar.is_hidden() {
                println!("{line}");
            } else {
                bar.println(line);
            }
        }
        bar.set_message(format!(
            "bias {} resident {}",
            f.cluster.bias, f.cluster.levels_resident
        ));
        bar.inc(1);
        frames.push(f);
    }
    bar.finish_and_clear();
    (frames, ever_active, busy)
}

/// The totals over the flight: uploads against the budget, evictions, pressure,
/// the bias, what is resident, holes and failed regions.
fn print_totals(
    args: &StreamSimArgs,
    sim: &Sim,
    frames: &[SimFrame],
    budget: f64,
    wall: f64,
    busy: f64,
) {
    let total: u64 = frames.iter().map(|f| f.cluster.bytes_uploaded).sum();
    let max = frames
        .iter()
        .map(|f| f.cluster.bytes_uploaded)
        .max()
        .unwrap_or(0);
    let evictions: u64 = frames.iter().map(|f| f.cluster.evictions as u64).sum();
    let hole_frames = frames.iter().filter(|f| f.cluster.holes > 0).count();
    let pressured = frames
        .iter()
        .filter(|f| f.cluster.budget_exhausted || f.cluster.staging_full || f.cluster.memory_full)
        .count();
    let max_bias = frames.iter().map(|f| f.cluster.bias).max().unwrap_or(0);
    let last = frames.last().map(|f| f.cluster);
    println!(
    "totals over {} frames in {:.2} s (streaming work {:.3} ms per frame: regions, levels, scheduler, copies):",
    args.frames,
    wall,
    busy * 1e3 / args.frames.max(1) as f64
);
    println!(
        "  uploaded {:.1} MiB, at most {:.2} MiB in a frame against a budget of {:.2} MiB ({})",
        total as f64 / MIB,
        max as f64 / MIB,
        budget / MIB,
        if max as f64 <= budget {
            "never exceeded"
        } else {
            "EXCEEDED"
        }
    );
    println!("  evictions {evictions}; frames under pressure {pressured}; bias at most {max_bias}, at the end {}", last.map_or(0, |l| l.bias));
    println!(
        "  levels resident at the end {} ({:.1} MiB); failed reads or level checks {}",
        last.map_or(0, |l| l.levels_resident),
        last.map_or(0, |l| l.bytes_resident) as f64 / MIB,
        sim.clusters().read_errors()
    );
    println!("  frames in which a visible model had nothing to draw: {hole_frames}");
    let failed = (0..sim.regions().streamer().len() as u32)
        .filter(|&r| sim.regions().streamer().load_failed(r))
        .count();
    println!("  regions that failed to load: {failed}");
}

/// The files of `dir` (and of its folders, one level down) whose extension is one
/// of `exts`, sorted; an error naming `dir` once if there are none.
fn model_files(
    dir: &Path,
    flag: &str,
    exts: &[&str],
) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let list = |d: &Path| -> Result<Vec<PathBuf>, std::io::Error> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d)? {
            out.push(e?.path());
        }
        Ok(out)
    };
    let top = list(dir).map_err(|e| format!("{flag} {}: {e}", dir.display()))?;
    let wanted = |p: &Path| {
        p.is_file()
            && p.extension()
                .is_some_and(|e| exts.contains(&e.to_string_lossy().to_ascii_lowercase().as_str()))
    };
    let mut files = Vec::new();
    for p in top {
        if p.is_dir() {
            files.extend(
                list(&p)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| wanted(p)),
            );
        } else if wanted(&p) {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{flag} {}: no .{} files in it",
            dir.display(),
            exts.join(", .")
        )
        .into());
    }
    Ok(files)
}

/// Opens cooked cluster files, a model per geometry; the first that fails is the
/// error (it names its path).
fn open_models(paths: &[PathBuf]) -> Result<Vec<CookedModel>, Box<dyn std::error::Error>> {
    let mut models = Vec::new();
    for p in paths {
        models.extend(CookedModel::open_all(p)?);
    }
    Ok(models)
}

/// Cooks every mesh into a cluster file in `dir` (in parallel, one mesh per core)
/// and opens each as a streamer model. A mesh that does not cook is skipped with a
/// line naming it; none cooking is an error.
fn cook_models(
    meshes: &[PathBuf],
    dir: &Path,
) -> Result<Vec<CookedModel>, Box<dyn std::error::Error>> {
    crate::output::create_dir(dir)?;
    let kind = farsight_mesh::CookKind::Clusters(farsight_mesh::ClusterConfig::default());
    let bar = ProgressBar::new(meshes.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:20}] {pos}/{len} meshes cooked ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    let results: Vec<Result<PathBuf, String>> = meshes
        .par_iter()
        .enumerate()
        .map(|(i, input)| {
            let stem = input
                .file_stem()
                .unwrap_or(input.as_os_str())
                .to_string_lossy();
            let out = dir.join(format!("{i:03}-{stem}.farsight"));
            let r = farsight_mesh::cook_file(input, &kind)
                .and_then(|c| {
                    farsight_mesh::write_atomically(&out, &c.bytes)?;
                    // The images its materials name live beside it.
                    c.looks.write_beside(dir).map_err(|source| {
                        farsight_mesh::CookError::Write {
                            path: dir.to_owned(),
                            source,
                        }
                    })?;
                    Ok(())
                })
                .map(|()| out)
                .map_err(|e| {
                    let text = e.to_string();
                    if text.contains(&input.display().to_string()) {
                        text
                    } else {
                        format!("{}: {text}", input.display())
                    }
                });
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut cooked = Vec::new();
    for r in results {
        match r {
            Ok(path) => cooked.extend(CookedModel::open_all(&path)?),
            Err(e) => println!("  skipped {e}"),
        }
    }
    if cooked.is_empty() {
        return Err(format!("none of the {} meshes cooked", meshes.len()).into());
    }
    Ok(cooked)
}

fn write_png(
    path: &std::path::Path,
    sim: &Sim,
    frames: &[SimFrame],
    ever_active: &[bool],
) -> Result<(), Box<dyn std::error::Error>> {
    use crate::picture::{Canvas, Rgb};
    const UNLOADED: Rgb = [60, 60, 60];
    const WAS_ACTIVE: Rgb = [40, 85, 55];
    const LOADING: Rgb = [230, 200, 40];
    const RESIDENT: Rgb = [60, 110, 220];
    const ACTIVE: Rgb = [60, 190, 90];
    const UNLOADING: Rgb = [230, 130, 40];
    const FAILED: Rgb = [220, 40, 40];
    const TELEPORT: Rgb = [255, 60, 200];
    let streamer = sim.regions().streamer();
    let side = sim.config().regions_side;
    let world = side as f32 * sim.config().region_size;
    let size = 1024u32;
    let scale = size as f32 / world;
    let mut img = Canvas::new(size, size, [16, 16, 16]);
    for (r, b) in streamer.bounds().iter().enumerate() {
        let c = if streamer.load_failed(r as u32) {
            FAILED
        } else {
            match streamer.actual(r as u32) {
                ActualState::Unloaded if ever_active[r] => WAS_ACTIVE,
                ActualState::Unloaded => UNLOADED,
                ActualState::Loading => LOADING,
                ActualState::Resident => RESIDENT,
                ActualState::Active => ACTIVE,
                ActualState::Unloading => UNLOADING,
            }
        };
        let (x0, x1) = ((b.min.x * scale) as i64, (b.max.x * scale) as i64);
        let (y0, y1) = ((b.min.z * scale) as i64, (b.max.z * scale) as i64);
        // One pixel of gap shows the grid.
        img.fill(x0, y0, (x1 - 1).max(x0 + 1), (y1 - 1).max(y0 + 1), c);
    }
    for w in frames.windows(2) {
        if w[1].teleported {
            continue;
        }
        let (a, b) = (w[0].camera * scale, w[1].camera * scale);
        img.line(a.x, a.z, b.x, b.z, crate::picture::WHITE);
    }
    if let Some(t) = frames.iter().find(|f| f.teleported) {
        let p = t.camera * scale;
        for d in -6..=6i64 {
            img.put(p.x as i64 + d, p.z as i64 + d, TELEPORT);
            img.put(p.x as i64 + d, p.z as i64 - d, TELEPORT);
        }
    }
    let bar = crate::picture::nice_length(world);
    let img = img.with_key(
        "REGIONS FROM ABOVE AT THE LAST FRAME",
        &[
            (ACTIVE, "ACTIVE"),
            (RESIDENT, "RESIDENT"),
            (LOADING, "LOADING"),
            (UNLOADING, "UNLOADING"),
            (WAS_ACTIVE, "UNLOADED, ACTIVE EARLIER"),
            (UNLOADED, "UNLOADED"),
            (FAILED, "FAILED TO LOAD"),
            (crate::picture::WHITE, "CAMERA PATH"),
            (TELEPORT, "TELEPORT TARGET"),
        ],
        scale,
        bar,
        &format!("{bar:.0} UNITS"),
    );
    img.write_png(path)?;
    Ok(())
}
