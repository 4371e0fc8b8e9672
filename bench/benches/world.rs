//! The one frame loop of farsight-world over generated worlds at two sizes (1k regions
//! / 10k objects and 10k regions / 100k objects): one frame of a flight back and
//! forth along the first leg, every system included, after the loading screen. In
//! the same run, the floor of its largest part: the visibility pass alone over a
//! city block of as many objects as the loop has loaded. Beside criterion's mean, the
//! bench prints the distribution of every frame it stepped (mean, median, p99, max,
//! frames over 16.7 ms) and the split by system of the frames with a terrain edit
//! (one every 25 frames), which a mean hides.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_view::scenes::city_block;
use farsight_view::{
    Camera, CameraStore, FrameContext, ObjectStore, Projection, RenderConfig, VisibilitySystem,
};
use farsight_world::{
    generate, Flight, FrameInput, SyntheticConfig, SystemId, World, WorldConfig, SYSTEMS,
};
use glam::Vec3;

fn sizes() -> [(&'static str, SyntheticConfig); 2] {
    let small = SyntheticConfig {
        regions_side: 32,
        buildings: 100,
        objects: 10_000,
        models: 16,
        ..SyntheticConfig::medium()
    };
    [
        ("1k_regions_10k_objects", small),
        ("10k_regions_100k_objects", SyntheticConfig::medium()),
    ]
}

/// Frame `i` of a flight back and forth along the first leg (no teleport).
fn pose(flight: &Flight, i: u32) -> farsight_world::FlightFrame {
    let (n, k) = (600, i % 1200);
    flight.frame(if k < n { k } else { 2 * n - 1 - k })
}

fn world_frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("world/frame");
    g.sample_size(20);
    for (name, spec) in sizes() {
        let dir = std::env::temp_dir().join(format!(
            "farsight-bench-world-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        generate(&dir, &spec, &mut |_| {}).unwrap();
        let mut world = World::open(&dir, WorldConfig::default()).unwrap();
        let flight = Flight::new(world.manifest(), 1800);
        let mut input = FrameInput::default();
        let f0 = pose(&flight, 0);
        input.camera = f0.camera.to_array();
        input.target = f0.target.to_array();
        input.loading = true;
        for _ in 0..20_000 {
            world.step(&mut input);
            if world.ready() {
                break;
            }
            world.wait_for_io(Duration::from_millis(1));
        }
        input.loading = false;
        let mut i = 0u32;
        // The split by system over every frame criterion ran (warm-up included).
        let mut split = [Duration::ZERO; SYSTEMS];
        let (mut holes, mut over) = (0u32, 0u32);
        // Every frame's loop time, and the split of the frames with an edit.
        let mut frame_times: Vec<Duration> = Vec::with_capacity(1 << 16);
        let mut edit_split = [Duration::ZERO; SYSTEMS];
        let mut edit_frames = 0u32;
        g.bench_function(BenchmarkId::new("loop", name), |b| {
            b.iter(|| {
                let f = pose(&flight, i);
                i += 1;
                input.camera = f.camera.to_array();
                input.target = f.target.to_array();
                input.edits = f.edits;
                let edit = !input.edits.is_empty();
                let r = world.step(&mut input);
                for (t, s) in split.iter_mut().zip(&r.systems) {
                    *t += s.time;
                }
                if edit {
                    edit_frames += 1;
                    for (t, s) in edit_split.iter_mut().zip(&r.systems) {
                        *t += s.time;
                    }
                }
                frame_times.push(r.systems.iter().map(|s| s.time).sum());
                holes += u32::from(r.holes() > 0);
                over += u32::from(r.over_budget);
                r
            })
        });
        let frames = i.max(1) as f64;
        let parts: Vec<String> = SystemId::ALL
            .iter()
            .map(|s| {
                let ms = split[*s as usize].as_secs_f64() * 1e3 / frames;
                let name = if *s == SystemId::Budget {
                    "pools"
                } else {
                    s.name()
                };
                format!("{name} {ms:.3}")
            })
            .collect();
        println!(
            "world/frame/loop/{name}: split by system, ms per frame over {i} frames: {}; {} objects loaded; frames with a hole {holes}, over budget {over}",
            parts.join(", "),
            world.store().len()
        );
        println!(
            "{}",
            distribution(name, &mut frame_times, &edit_split, edit_frames)
        );
        // The floor: the visibility pass alone over as many objects.
        let n = world.store().len().max(1);
        let mut store = ObjectStore::new();
        let layout = city_block(&mut store, n, 1);
        let mut cams = CameraStore::new();
        let projection = Projection::Perspective {
            fov_y: 60f32.to_radians(),
            aspect: 16.0 / 9.0,
            near: 0.5,
            far: 5000.0,
        };
        let eye = Vec3::new(0.0, 30.0, -20.0);
        let cam = Camera::looking_at(projection, eye, eye + Vec3::new(0.3, -0.2, 1.0));
        cams.insert(cam);
        let settings = RenderConfig {
            cull_min_pixels: 1.0,
            cull_max_distance: 700.0,
            ..RenderConfig::default()
        };
        let mut pass = VisibilitySystem::new();
        let _ = layout;
        let mut frame = 0u64;
        g.bench_function(BenchmarkId::new("floor_visibility_pass_alone", name), |b| {
            b.iter(|| {
                frame += 1;
                let ctx = FrameContext {
                    frame,
                    host_view: None,
                    cameras: &cams,
                    world_epoch: 0,
                    settings: &settings,
                    stereo_eyes: None,
                };
                pass.update(&mut store, &ctx);
                pass.stats().visible
            })
        });
        drop(world);
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.finish();
}

/// One line: the loop's time per frame over `frames` (mean, median, p99, max, frames
/// over 16.7 ms) and the mean split by system of the `edits` frames with an edit.
fn distribution(
    name: &str,
    frames: &mut [Duration],
    edit_split: &[Duration; SYSTEMS],
    edits: u32,
) -> String {
    if frames.is_empty() {
        return format!("world/frame/loop/{name}: no frame stepped");
    }
    frames.sort_unstable();
    let n = frames.len();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q: f64| ms(frames[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]);
    let mean = frames.iter().map(|d| ms(*d)).sum::<f64>() / n as f64;
    let over = frames.iter().filter(|d| ms(**d) > 16.7).count();
    let parts: Vec<String> = SystemId::ALL
        .iter()
        .map(|s| {
            let v = ms(edit_split[*s as usize]) / edits.max(1) as f64;
            let name = if *s == SystemId::Budget {
                "pools"
            } else {
                s.name()
            };
            format!("{name} {v:.3}")
        })
        .collect();
    format!(
        "world/frame/loop/{name}: every frame stepped ({}): mean {mean:.3} ms, median {:.3}, p99 {:.3}, max {:.3}, {over} over 16.7 ms; the {edits} frames with a terrain edit, ms per frame by system: {}",
        frames.len(),
        at(0.5),
        at(0.99),
        frames.last().map_or(0.0, |d| ms(*d)),
        parts.join(", ")
    )
}

criterion_group!(benches, world_frame);
criterion_main!(benches);
