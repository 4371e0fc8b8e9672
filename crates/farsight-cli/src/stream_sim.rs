//! `farsight stream-sim`: a generated world of regions and cluster-LOD models on
//! disk, flown through by a scripted camera with a teleport; prints what streaming
//! did each frame and in total, and draws the regions from above as a PNG.

use std::path::PathBuf;
use std::time::Instant;

use farsight_stream::cluster::SchedulerConfig;
use farsight_stream::region::ActualState;
use farsight_stream::sim::{generate, Sim, SimConfig, SimFrame};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct StreamSimArgs {
    /// Folder the world is written to (scene index, region files, and one farsight
    /// cluster-level file per model level).
    #[arg(long, default_value = "stream-sim-world")]
    pub dir: PathBuf,
    /// The world is N x N regions of 100 units.
    #[arg(long, default_value_t = 64)]
    pub regions_side: u32,
    /// Distinct cluster-LOD models, each placed many times.
    #[arg(long, default_value_t = 300)]
    pub models: u32,
    /// Levels per model (finest first, each half the size of the one below).
    #[arg(long, default_value_t = 6)]
    pub levels: u8,
    /// Size range of a model's finest level, in KiB.
    #[arg(long, default_value_t = 256)]
    pub finest_kib_min: u64,
    #[arg(long, default_value_t = 2048)]
    pub finest_kib_max: u64,
    #[arg(long, default_value_t = 1200)]
    pub frames: u32,
    /// Frame of the teleport (default: half way).
    #[arg(long)]
    pub teleport_frame: Option<u32>,
    /// Upload budget per frame, MiB.
    #[arg(long, default_value_t = 10.0)]
    pub budget_mib: f64,
    /// Radius of the camera's streaming source.
    #[arg(long, default_value_t = 350.0)]
    pub radius: f32,
    #[arg(long, default_value_t = 2)]
    pub io_threads: usize,
    /// Frames per second to pace the flight at, as a game would (0: as fast as possible).
    #[arg(long, default_value_t = 60.0)]
    pub fps: f64,
    /// Print a line every N frames (0: only the totals).
    #[arg(long, default_value_t = 60)]
    pub print_every: u32,
    #[arg(long, default_value = "stream-sim.png")]
    pub png: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

const MIB: f64 = 1024.0 * 1024.0;

pub fn run(args: StreamSimArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.regions_side == 0 || args.models == 0 || args.levels == 0 || args.levels > 32 {
        return Err("--regions-side and --models must be positive and --levels in 1..=32".into());
    }
    if args.finest_kib_min == 0 || args.finest_kib_min > args.finest_kib_max {
        return Err("--finest-kib-min must be positive and at most --finest-kib-max".into());
    }
    if args.budget_mib.is_nan() || args.budget_mib <= 0.0 {
        return Err("--budget-mib must be positive".into());
    }
    let scheduler = SchedulerConfig {
        upload_budget: (args.budget_mib * MIB) as u64,
        ..SchedulerConfig::default()
    };
    let config = SimConfig {
        dir: args.dir.clone(),
        regions_side: args.regions_side,
        region_size: 100.0,
        models: args.models,
        max_instances_per_region: 8,
        levels: args.levels,
        finest_bytes: (args.finest_kib_min << 10, args.finest_kib_max << 10),
        frames: args.frames,
        teleport_frame: args.teleport_frame.unwrap_or(args.frames / 2),
        source_radius: args.radius,
        seed: args.seed,
        scheduler,
        io_threads: args.io_threads,
    };
    let spinner = ProgressBar::new_spinner();
    spinner.set_message(format!(
        "writing {} regions and {} models to {}",
        args.regions_side * args.regions_side,
        args.models,
        args.dir.display()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(100));
    let t = Instant::now();
    let (models, index, files) = generate(&config)?;
    let disk: u64 = models
        .iter()
        .flat_map(|m| m.desc.levels.iter())
        .map(|l| l.bytes)
        .sum();
    spinner.finish_and_clear();
    println!(
        "world: {} regions, {} models ({} levels as farsight cluster-level files, {:.1} MiB) written to {} in {:.2} s",
        args.regions_side * args.regions_side,
        args.models,
        args.models as u64 * args.levels as u64,
        disk as f64 / MIB,
        args.dir.display(),
        t.elapsed().as_secs_f64()
    );
    let mut sim = Sim::new(config.clone(), models, &index, files)?;
    let t = Instant::now();
    let warm = sim.warm_up(100_000);
    println!(
        "loading screen: every model's coarsest level resident after {warm} frames ({:.2} s)",
        t.elapsed().as_secs_f64()
    );

    let bar = ProgressBar::new(args.frames as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames {msg}")
            .expect("a valid template"),
    );
    let budget = scheduler.upload_budget as f64;
    let mut frames: Vec<SimFrame> = Vec::with_capacity(args.frames as usize);
    let t = Instant::now();
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
    let wall = t.elapsed().as_secs_f64();
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
    write_png(&args.png, &sim, &frames, &ever_active)?;
    println!("wrote {} (regions from above: grey unloaded, dark green active earlier, yellow loading, orange unloading, blue resident, green active, red failed; white: camera path)", args.png.display());
    Ok(())
}

fn write_png(
    path: &std::path::Path,
    sim: &Sim,
    frames: &[SimFrame],
    ever_active: &[bool],
) -> Result<(), Box<dyn std::error::Error>> {
    let streamer = sim.regions().streamer();
    let side = sim.config().regions_side;
    let world = side as f32 * sim.config().region_size;
    let size = 1024u32;
    let scale = size as f32 / world;
    let mut img = vec![16u8; (size * size * 3) as usize];
    let put = |img: &mut [u8], x: i64, y: i64, c: [u8; 3]| {
        if x >= 0 && y >= 0 && (x as u32) < size && (y as u32) < size {
            let i = ((y as u32 * size + x as u32) * 3) as usize;
            img[i..i + 3].copy_from_slice(&c);
        }
    };
    for (r, b) in streamer.bounds().iter().enumerate() {
        let c = if streamer.load_failed(r as u32) {
            [220, 40, 40]
        } else {
            match streamer.actual(r as u32) {
                ActualState::Unloaded if ever_active[r] => [40, 85, 55],
                ActualState::Unloaded => [60, 60, 60],
                ActualState::Loading => [230, 200, 40],
                ActualState::Resident => [60, 110, 220],
                ActualState::Active => [60, 190, 90],
                ActualState::Unloading => [230, 130, 40],
            }
        };
        let (x0, x1) = ((b.min.x * scale) as i64, (b.max.x * scale) as i64);
        let (y0, y1) = ((b.min.z * scale) as i64, (b.max.z * scale) as i64);
        // One pixel of gap shows the grid.
        for y in y0..(y1 - 1).max(y0 + 1) {
            for x in x0..(x1 - 1).max(x0 + 1) {
                put(&mut img, x, y, c);
            }
        }
    }
    for w in frames.windows(2) {
        if w[1].teleported {
            continue;
        }
        let (a, b) = (w[0].camera * scale, w[1].camera * scale);
        let steps = ((b - a).length().ceil() as i64).max(1);
        for s in 0..=steps {
            let p = a + (b - a) * (s as f32 / steps as f32);
            put(&mut img, p.x as i64, p.z as i64, [255, 255, 255]);
        }
    }
    if let Some(t) = frames.iter().find(|f| f.teleported) {
        let p = t.camera * scale;
        for d in -6..=6i64 {
            put(&mut img, p.x as i64 + d, p.z as i64 + d, [255, 60, 200]);
            put(&mut img, p.x as i64 + d, p.z as i64 - d, [255, 60, 200]);
        }
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), size, size);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(&img)?;
    Ok(())
}
