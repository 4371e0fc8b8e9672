//! The GPU path inside a Bevy app (issue 29): a headless app with
//! `FarsightGpuClustersPlugin` renders instances of a cooked cluster model into an
//! image, and the picture shows them; the same app with the cut's dispatch skipped
//! must fail the same check. Skips with a reason where no adapter can run the GPU
//! path, unless `FARSIGHT_REQUIRE_GPU=1`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bevy::app::ScheduleRunnerPlugin;
use bevy::asset::AssetPlugin;
use bevy::camera::RenderTarget;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::prelude::*;
use bevy::render::gpu_readback::{Readback, ReadbackComplete};
use bevy::render::render_resource::{
    CachedPipelineState, PipelineCache, PipelineDescriptor, TextureFormat, TextureUsages,
};
use bevy::render::{Render, RenderApp, RenderSystems};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use farsight_bevy::gpu::{
    FarsightGpuClustersPlugin, GpuClusterStats, GpuClusterTint, GpuClustersActive, LevelLayout,
    PoolKind, PoolSettings,
};
use farsight_bevy::prelude::*;
use farsight_mesh::{cook_file, ClusterConfig, CookKind};

const REQUIRE_GPU: &str = "FARSIGHT_REQUIRE_GPU";
const W: u32 = 320;
const H: u32 = 180;

/// Whether this machine has an adapter for the GPU path (else says why, or fails
/// when one is required).
pub(crate) fn have_gpu() -> bool {
    let required = std::env::var(REQUIRE_GPU).is_ok_and(|v| v == "1");
    match farsight_bevy::gpu::headless_device() {
        Ok((.., info)) => {
            eprintln!("adapter: {info:?}");
            true
        }
        Err(e) if !required => {
            eprintln!("skipped: no GPU adapter with compute ({e}); set {REQUIRE_GPU}=1 to fail");
            false
        }
        Err(e) => panic!("{REQUIRE_GPU}=1 but no GPU adapter: {e}"),
    }
}

fn cook(mesh: &Path, dir: &Path) -> PathBuf {
    cook_as(mesh, dir, "bunny.farsight")
}

fn cook_as(mesh: &Path, dir: &Path, name: &str) -> PathBuf {
    let kind = CookKind::Clusters(ClusterConfig::default());
    let bytes = cook_file(mesh, &kind)
        .unwrap_or_else(|e| panic!("{}: {e}", mesh.display()))
        .bytes;
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A windowless app that updates as fast as it can, with Bevy's default plugins
/// and the farsight plugin, whose asset folder is `assets`.
pub(crate) fn headless_app(assets: &Path) -> App {
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                ..default()
            })
            .set(AssetPlugin {
                file_path: assets.to_string_lossy().into_owned(),
                ..default()
            })
            .disable::<WinitPlugin>(),
        ScheduleRunnerPlugin::run_loop(std::time::Duration::ZERO),
        FarsightPlugin,
    ));
    app
}

/// Runs `test` (its path in this program) alone in a child process with `var`
/// set to `job`, for one render of `mode`; fails where the child fails.
pub(crate) fn run_child(test: &str, var: &str, job: &str, mode: &str) {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env(var, job)
        .status()
        .unwrap();
    assert!(status.success(), "the {mode} render failed");
}

/// The FlightHelmet cooked with `--clusters` into `dir/helmet.farsight`, its
/// materials' textures beside it: the shared corpus's copy where there is one
/// (textured), else the vendored one (no textures). Whether it is textured.
pub(crate) fn cook_helmet(dir: &Path) -> bool {
    let kind = CookKind::Clusters(ClusterConfig::default());
    let shared = farsight_testkit::shared_meshes().join("FlightHelmet/FlightHelmet.gltf");
    let textured = shared.exists();
    let helmet = if textured {
        shared
    } else {
        farsight_testkit::mesh("FlightHelmet/FlightHelmet.gltf")
    };
    let out = cook_file(&helmet, &kind).unwrap();
    std::fs::write(dir.join("helmet.farsight"), &out.bytes).unwrap();
    out.looks.write_beside(dir).unwrap();
    eprintln!("{} cooked", helmet.display());
    textured
}

/// The file whose bounds place the instances and the camera: `FILE.layout` beside
/// `file` where there is one (a reload test keeps the scene of the file it replaces).
fn layout_of(file: &Path) -> PathBuf {
    let layout = file.with_extension("layout");
    if layout.exists() {
        layout
    } else {
        file.to_owned()
    }
}

/// The GPU path's figures a reload test compares: resident clusters and bytes,
/// clusters tested and drawn.
fn pool_figures(s: &GpuClusterStats) -> [u64; 4] {
    [
        s.resident_clusters,
        s.resident_bytes,
        s.clusters_tested,
        u64::from(s.clusters_drawn),
    ]
}

/// Frames until the GPU path has settled: nothing uploaded, the same pool
/// figures, and a drawn count read back from these frames, 20 frames in a row.
fn settle(app: &mut App) {
    let stats = |app: &App| *app.world().resource::<GpuClusterStats>();
    let from = stats(app).frame;
    let (mut last, mut calm) = (pool_figures(&stats(app)), 0);
    for _ in 0..2000 {
        app.update();
        let s = stats(app);
        let now = pool_figures(&s);
        calm = if now == last && s.uploaded_bytes == 0 && s.drawn_frame > from {
            calm + 1
        } else {
            0
        };
        last = now;
        if calm == 20 {
            return;
        }
    }
    panic!("the GPU path never settled: {:?}", stats(app));
}

/// Whether the render world's pipeline cache has compiled every pipeline asked
/// for, and at least one render pipeline.
#[derive(Resource, Clone, Default)]
pub(crate) struct Ready(pub(crate) Arc<AtomicBool>);

pub(crate) fn watch_pipelines(cache: Res<PipelineCache>, ready: Res<Ready>) {
    let waiting = cache.waiting_pipelines().next().is_some();
    let drawn = cache.pipelines().any(|p| {
        matches!(
            p.descriptor,
            PipelineDescriptor::RenderPipelineDescriptor(_)
        ) && matches!(p.state, CachedPipelineState::Ok(_))
    });
    ready.0.store(drawn && !waiting, Ordering::Relaxed);
}

/// The picture, once read back.
#[derive(Resource, Clone, Default)]
struct Picture(Arc<Mutex<Option<Vec<u8>>>>);

/// Renders three instances of `file` (and a red cube in front of the middle one,
/// drawn by Bevy) for `frames` frames, then reads the image back: RGBA rows of `W` pixels.
/// Also returns whether the GPU path was chosen, whether any instance got a
/// CPU-path mesh, and the GPU path's figures at the end.
fn render(file: &Path, frames: u32, mode: &str) -> (Vec<u8>, bool, bool, GpuClusterStats) {
    let skip_cut = mode == "no-cut";
    let mut app = headless_app(file.parent().unwrap());
    if mode != "cpu" {
        app.add_plugins(FarsightGpuClustersPlugin {
            skip_cut,
            // Room for a few visible clusters only: the rest overflow.
            visible_capacity: (mode == "overflow").then_some(OVERFLOW_CAPACITY),
            // A vertex pool too small for the bunny's finer levels.
            pools: if mode == "tiny-pools" {
                PoolSettings {
                    vertices: coarser_vertices(file),
                    ..default()
                }
            } else {
                default()
            },
        });
    }
    if mode == "tint" {
        app.insert_resource(GpuClusterTint::new(true));
    }
    let image = {
        let mut images = app.world_mut().resource_mut::<Assets<Image>>();
        let mut img = Image::new_target_texture(W, H, TextureFormat::Rgba8UnormSrgb, None);
        img.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        images.add(img)
    };
    let picture = Picture::default();
    app.insert_resource(picture.clone());
    // Bevy compiles its pipelines (the cube's) in the background: frames count
    // from when none is waiting any more.
    let ready = Ready::default();
    app.get_sub_app_mut(RenderApp)
        .unwrap()
        .insert_resource(ready.clone())
        .add_systems(Render, watch_pipelines.in_set(RenderSystems::Cleanup));
    app.finish();
    app.cleanup();
    let world = app.world_mut();
    let [x, y, z, r] = farsight_stream::cluster::CookedModel::open(layout_of(file))
        .unwrap()
        .error_bounds();
    let center = Vec3::new(x, y, z);
    // The CPU path's material: as light as the GPU path's lit side, unlit.
    let white = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color: Color::srgb(0.8, 0.8, 0.8),
            unlit: true,
            ..default()
        });
    // Three bunnies side by side, the camera back far enough for all of them.
    let mut bunnies = Vec::new();
    for (i, dx) in [-2.2f32, 0.0, 2.2].into_iter().enumerate() {
        bunnies.push(
            world
                .spawn((
                    if mode == "asset" || mode == "reload" {
                        let name = file.file_name().unwrap().to_string_lossy().into_owned();
                        FarsightClusterModel::from_asset(world.resource::<AssetServer>().load(name))
                    } else {
                        FarsightClusterModel::new(file)
                    },
                    Transform::from_translation(Vec3::new(dx * r, 0.0, 0.0) - center)
                        .with_rotation(Quat::from_rotation_y(i as f32 * 0.8)),
                    MeshMaterial3d(white.clone()),
                ))
                .id(),
        );
    }
    let mut meshes = world.resource_mut::<Assets<Mesh>>();
    let cube = meshes.add(Cuboid::new(0.3 * r, 0.3 * r, 0.3 * r));
    let red = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color: Color::srgb(1.0, 0.0, 0.0),
            unlit: true,
            ..default()
        });
    world.spawn((
        Mesh3d(cube),
        MeshMaterial3d(red),
        Transform::from_xyz(0.0, 0.0, 1.2 * r),
    ));
    world.spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        Tonemapping::None,
        if mode == "msaa" {
            Msaa::Sample4
        } else {
            Msaa::Off
        },
        RenderTarget::Image(image.clone().into()),
        Transform::from_xyz(0.0, 0.6 * r, 4.5 * r).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let start = std::time::Instant::now();
    while !ready.0.load(Ordering::Relaxed) {
        assert!(start.elapsed().as_secs() < 300, "pipelines still compiling");
        app.update();
    }
    let timed = std::time::Instant::now();
    for _ in 0..frames {
        app.update();
    }
    eprintln!(
        "{mode}: {:.1} ms a frame ({frames} frames once the pipelines were ready)",
        timed.elapsed().as_secs_f64() * 1000.0 / f64::from(frames)
    );
    if mode == "despawn" {
        // The left and middle bunnies go: the right one's row moves into slot 0
        // and must be uploaded again there.
        app.world_mut().despawn(bunnies[0]);
        app.world_mut().despawn(bunnies[1]);
        for _ in 0..frames {
            app.update();
        }
    }
    if mode == "reload" {
        // The file under the asset folder rewritten with another model, as an
        // editor saving it would, then reloaded (what Bevy's file watcher does).
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let new = file.with_file_name("new.farsight");
        std::fs::write(file, std::fs::read(&new).unwrap()).unwrap();
        let head = farsight_stream::cluster::CookedModel::open(&new)
            .unwrap()
            .error_bounds();
        let server = app.world().resource::<AssetServer>().clone();
        let handle: Handle<farsight_bevy::ClusterModelAsset> = server.load(name.clone());
        server.reload(name);
        let reloaded = |app: &App| {
            let assets = app
                .world()
                .resource::<Assets<farsight_bevy::ClusterModelAsset>>();
            assets
                .get(&handle)
                .and_then(|a| a.model(0))
                .is_some_and(|m| m.error_bounds() == head)
        };
        for _ in 0..5000 {
            if reloaded(&app) {
                break;
            }
            app.update();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(reloaded(&app), "the asset never took the new file");
    }
    if mode == "asset" || mode == "reload" {
        settle(&mut app);
    }
    let sink = picture.0.clone();
    app.world_mut()
        .spawn(Readback::texture(image))
        .observe(move |ev: On<ReadbackComplete>| {
            *sink.lock().unwrap() = Some(ev.data.clone());
        });
    for _ in 0..600 {
        if picture.0.lock().unwrap().is_some() {
            break;
        }
        app.update();
    }
    let data = picture.0.lock().unwrap().take().expect("never read back");
    let active = app.world().contains_resource::<GpuClustersActive>();
    let mut cpu_meshes = app
        .world_mut()
        .query_filtered::<(), (With<FarsightClusterModel>, With<Mesh3d>)>();
    let cpu = cpu_meshes.iter(app.world()).next().is_some();
    let stats = app
        .world()
        .get_resource::<GpuClusterStats>()
        .copied()
        .unwrap_or_default();
    // Rows come padded to 256 bytes.
    let stride = (W as usize * 4).div_ceil(256) * 256;
    let rgba = (0..H as usize)
        .flat_map(|row| data[row * stride..row * stride + W as usize * 4].to_vec())
        .collect();
    (rgba, active, cpu, stats)
}

/// The visible list's capacity in the `overflow` run.
const OVERFLOW_CAPACITY: u32 = 8;
/// The vertex pool's size in the `tiny-pools` run: the coarsest level fits, the
/// next finer one (which the view wants) does not.
fn coarser_vertices(file: &Path) -> u64 {
    let model = farsight_stream::cluster::CookedModel::open(file).unwrap();
    let v: Vec<u64> = model
        .levels()
        .map(|l| u64::from(LevelLayout::new(l.clusters, l.bytes).unwrap().vertices))
        .collect();
    let n = v.len();
    assert!(n >= 2, "the test model has one level");
    v[n - 1] + v[n - 2] - 1
}

/// The figures a run of `mode` must show in the main world's [`GpuClusterStats`].
fn check_stats(mode: &str, s: &GpuClusterStats, instances: u32) {
    eprintln!("{mode}: {s:?}");
    if mode == "cpu" {
        assert_eq!(
            *s,
            GpuClusterStats::default(),
            "GPU figures on the CPU path"
        );
        return;
    }
    assert_eq!(s.instances, instances);
    assert!(s.resident_clusters > 0, "nothing resident");
    // One model: every instance tests its every resident cluster.
    assert_eq!(
        s.clusters_tested,
        u64::from(instances) * s.resident_clusters,
        "clusters tested against instances x resident clusters"
    );
    assert!(s.resident_bytes > 0 && s.resident_bytes <= s.pool_bytes);
    assert!(s.uploaded_total >= s.resident_bytes / 2, "uploads {s:?}");
    if mode == "no-cut" {
        // The cut never ran: its counters were never written.
        assert_eq!(s.clusters_drawn, 0);
        return;
    }
    // Read back a frame or two late, never ahead.
    assert!(s.drawn_frame > 0, "no count read back");
    assert!(
        s.drawn_frame <= s.frame && s.frame - s.drawn_frame <= 4,
        "the drawn count is of frame {} at frame {}",
        s.drawn_frame,
        s.frame
    );
    assert!(s.clusters_drawn > 0, "no cluster drawn");
    assert!(
        u64::from(s.clusters_drawn) <= s.clusters_tested,
        "more drawn than tested"
    );
    match mode {
        "overflow" => {
            assert_eq!(s.visible_capacity, OVERFLOW_CAPACITY);
            assert!(s.visible_overflow > 0, "the overflow is not reported");
            assert_eq!(s.clusters_drawn, OVERFLOW_CAPACITY);
        }
        _ => {
            assert_eq!(s.visible_overflow, 0, "an overflow without a small list");
            assert!(s.visible_capacity >= s.clusters_drawn);
        }
    }
    match mode {
        "tiny-pools" => {
            let f = s
                .last_placement_failure
                .expect("the full pool is not reported");
            assert!(s.placement_failures > 0);
            assert_eq!(f.pool, PoolKind::Vertices);
            assert!(!f.fragmented(), "an empty pool reported fragmented: {f}");
            assert!(f.needed > f.free);
        }
        _ => assert_eq!(s.placement_failures, 0, "{:?}", s.last_placement_failure),
    }
}

/// Share of pixels that are lit grey (the GPU path's lambert shading): neither
/// the black clear colour nor the red cube.
fn grey_share(rgba: &[u8]) -> f64 {
    let grey = rgba
        .chunks_exact(4)
        .filter(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            r > 40 && (r - g).abs() < 12 && (r - b).abs() < 12
        })
        .count();
    grey as f64 / (rgba.len() / 4) as f64
}

fn save(path: &Path, rgba: &[u8]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut enc = png::Encoder::new(file, W, H);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header().unwrap().write_image_data(rgba).unwrap();
}

/// Per pixel: whether a model covers it (neither the clear colour nor the cube).
fn silhouette(rgba: &[u8]) -> Vec<bool> {
    rgba.chunks_exact(4)
        .map(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            r + g + b > 60 && !(r > 200 && g < 40 && b < 40)
        })
        .collect()
}

/// Share of pixels of the red cube (drawn by Bevy's own pipeline: the frame was
/// rendered at all).
fn red_share(rgba: &[u8]) -> f64 {
    let red = rgba
        .chunks_exact(4)
        .filter(|p| p[0] > 200 && p[1] < 40 && p[2] < 40)
        .count();
    red as f64 / (rgba.len() / 4) as f64
}

/// Set in the child process that renders one picture: `FILE|MODE|OUT`.
const CHILD: &str = "FARSIGHT_GPU_BEVY_CHILD";

/// One picture in a process of its own (a second Bevy renderer in one process
/// renders nothing): this test program again, told by [`CHILD`] what to draw.
fn render_in_child(file: &Path, mode: &str, out: &Path) -> Vec<u8> {
    let job = format!("{}|{mode}|{}", file.display(), out.display());
    child_picture(
        "a_bevy_app_draws_cluster_models_through_the_gpu_path",
        CHILD,
        &job,
        out,
    )
}

/// Runs test `test` of this program in a child process with `var` set to `job`
/// (`…|MODE|…`), and reads the picture it writes to `out`.
fn child_picture(test: &str, var: &str, job: &str, out: &Path) -> Vec<u8> {
    // The test's name in this program: its module path less the program's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let mode = job.split('|').nth(1).unwrap_or(job);
    run_child(&format!("{module}::{test}"), var, job, mode);
    std::fs::read(out).unwrap()
}

/// The model is drawn through the GPU path (and not the CPU one): at least 3% of
/// the picture is the GPU path's grey; with two of the three instances despawned,
/// the CPU path draws the same silhouettes (within 5% of the pixels); only the
/// right one is drawn; given as an asset, the same; with 4x MSAA they cover about as much; with the cut never dispatched, none is, while
/// the red cube Bevy draws in front of the middle one is whole in every picture.
#[test]
fn a_bevy_app_draws_cluster_models_through_the_gpu_path() {
    if let Ok(job) = std::env::var(CHILD) {
        let [file, mode, out] = job.splitn(3, '|').collect::<Vec<_>>()[..] else {
            panic!("bad {CHILD}: {job}");
        };
        let (rgba, active, cpu, stats) = render(Path::new(file), 30, mode);
        check_stats(mode, &stats, if mode == "despawn" { 1 } else { 3 });
        assert_eq!(
            active,
            mode != "cpu",
            "the GPU path chosen (or not) against the plugins given"
        );
        assert_eq!(cpu, mode == "cpu", "CPU-path meshes in the {mode} run");
        std::fs::write(out, &rgba).unwrap();
        std::fs::write(
            Path::new(out).with_extension("stats"),
            format!("{:?}", pool_figures(&stats)),
        )
        .unwrap();
        save(&Path::new(out).with_extension("png"), &rgba);
        return;
    }
    if !have_gpu() {
        return;
    }
    let dir = farsight_testkit::scratch("gpu_bevy");
    let file = cook(&farsight_testkit::mesh("bunny.obj"), &dir);
    let rgba = render_in_child(&file, "cut", &dir.join("gpu_path.rgba"));
    let (grey, red) = (grey_share(&rgba), red_share(&rgba));
    eprintln!(
        "{}: grey {grey:.3}, red {red:.4}",
        dir.join("gpu_path.png").display()
    );
    assert!(red > 0.002, "Bevy's cube is missing: red {red:.4}");
    let cube = red;
    assert!(grey > 0.03, "the models cover {grey:.4} of the picture");
    let all = grey;
    // The same scene through the CPU path: the same silhouettes (the cut's metric
    // is the CPU cut's; shading differs, so only coverage is compared).
    let cpu = render_in_child(&file, "cpu", &dir.join("cpu_path.rgba"));
    let (a, b) = (silhouette(&rgba), silhouette(&cpu));
    let union = a.iter().zip(&b).filter(|(x, y)| **x || **y).count();
    let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    eprintln!("GPU against CPU path: {differ} of {union} model pixels differ");
    assert!(
        union > 0 && differ * 20 < union,
        "the paths' silhouettes differ in {differ} of {union} pixels"
    );
    // With MSAA (Bevy's default) the draw's pipeline takes the view's samples.
    let rgba = render_in_child(&file, "msaa", &dir.join("gpu_path_msaa.rgba"));
    let grey = grey_share(&rgba);
    eprintln!("with 4x MSAA: grey {grey:.3}");
    assert!(
        (grey - all).abs() < 0.2 * all,
        "with MSAA the models cover {grey:.4}, without {all:.4}"
    );
    // The model given as an asset (loaded through Bevy's asset server).
    let rgba = render_in_child(&file, "asset", &dir.join("gpu_path_asset.rgba"));
    let grey = grey_share(&rgba);
    eprintln!("as an asset: grey {grey:.3}");
    assert!(
        (grey - all).abs() < 0.05 * all,
        "given as an asset the models cover {grey:.4}, as a file {all:.4}"
    );
    // Two instances despawned: one bunny left, on the right of the picture.
    let rgba = render_in_child(&file, "despawn", &dir.join("gpu_path_despawn.rgba"));
    let grey = grey_share(&rgba);
    let left = grey_share(
        &rgba[..]
            .chunks_exact(W as usize * 4)
            .flat_map(|row| row[..W as usize * 4 / 2].to_vec())
            .collect::<Vec<u8>>(),
    );
    eprintln!("despawned two of three: grey {grey:.3}, in the left half {left:.4}");
    assert!(
        grey > 0.15 * all && grey < 0.5 * all,
        "one bunny of three left should cover about a third: {grey:.4} of {all:.4}"
    );
    assert!(left < 0.001, "a despawned bunny is still drawn: {left:.4}");
    // Sabotaged: the cut is never dispatched, so its draw draws nothing.
    let rgba = render_in_child(&file, "no-cut", &dir.join("gpu_path_no_cut.rgba"));
    let (grey, red) = (grey_share(&rgba), red_share(&rgba));
    eprintln!(
        "{}: grey {grey:.3}, red {red:.4}",
        dir.join("gpu_path_no_cut.png").display()
    );
    assert!(grey < 0.001, "models drawn without a cut: {grey:.4}");
    // The cube is in front of the middle bunny: drawn over it or not, it covers
    // as much (the clusters are depth-tested against Bevy's depth).
    assert!(
        (red - cube).abs() < 0.05 * red,
        "the cube covers {cube:.4} in front of the bunny, {red:.4} alone"
    );
}

/// A cluster file under the asset folder rewritten (the bunny's replaced by the
/// alien's) while three instances of it are drawn, and reloaded: the GPU path
/// drops the old file's levels and streams and draws the new file's. Once settled,
/// its pools hold what a fresh app drawing the new file holds (resident clusters
/// and bytes, clusters tested and drawn, from `GpuClusterStats`) and the pictures'
/// silhouettes match, where before the reload they did not.
#[test]
fn a_reloaded_cluster_file_is_streamed_and_drawn_anew_on_the_gpu_path() {
    if std::env::var(CHILD).is_ok() || !have_gpu() {
        return;
    }
    let figures = |out: &Path| std::fs::read_to_string(out.with_extension("stats")).unwrap();
    // The scene: the bunny's bounds place the instances in every run.
    let dir = farsight_testkit::scratch("gpu_bevy_reload");
    let bunny = cook(&farsight_testkit::mesh("bunny.obj"), &dir);
    std::fs::copy(&bunny, bunny.with_extension("layout")).unwrap();
    let alien = cook_as(&farsight_testkit::mesh("alien.glb"), &dir, "new.farsight");
    // A fresh app drawing the alien's file in the same scene.
    let fresh_dir = farsight_testkit::scratch("gpu_bevy_reload_fresh");
    let fresh = fresh_dir.join("bunny.farsight");
    std::fs::copy(&alien, &fresh).unwrap();
    std::fs::copy(&bunny, fresh.with_extension("layout")).unwrap();
    let out = fresh_dir.join("fresh.rgba");
    let want = render_in_child(&fresh, "asset", &out);
    let want_figures = figures(&out);
    let out = dir.join("before.rgba");
    let before = render_in_child(&bunny, "asset", &out);
    let before_figures = figures(&out);
    let out = dir.join("reloaded.rgba");
    let got = render_in_child(&bunny, "reload", &out);
    let got_figures = figures(&out);
    eprintln!(
        "[resident clusters, resident bytes, tested, drawn]: bunny {before_figures}, \
         reloaded {got_figures}, the alien's file in a fresh app {want_figures}"
    );
    assert_ne!(
        before_figures, want_figures,
        "the two files give the same figures"
    );
    assert_eq!(
        got_figures, want_figures,
        "after the reload the pools differ from a fresh app's with the new file"
    );
    let differ = |a: &[u8], b: &[u8]| {
        let (a, b) = (silhouette(a), silhouette(b));
        let union = a.iter().zip(&b).filter(|(x, y)| **x || **y).count();
        let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        (differ, union)
    };
    let (d, u) = differ(&before, &want);
    eprintln!("bunny against alien: {d} of {u} model pixels differ");
    assert!(
        d * 5 > u,
        "the two models draw alike: {d} of {u} pixels differ"
    );
    let (d, u) = differ(&got, &want);
    eprintln!("reloaded against fresh: {d} of {u} model pixels differ");
    assert!(
        u > 0 && d * 50 < u,
        "the reloaded file draws unlike a fresh app's: {d} of {u} pixels differ"
    );
}

/// Share of pixels in the draw's level tints (green, yellow, red): hued, bright.
fn tinted_share(rgba: &[u8]) -> f64 {
    let tinted = rgba
        .chunks_exact(4)
        .filter(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            let (max, min) = (r.max(g).max(b), r.min(g).min(b));
            max > 40 && (max - min) * 2 > max && !(r > 200 && g < 40 && b < 40)
        })
        .count();
    tinted as f64 / (rgba.len() / 4) as f64
}

/// The GPU path's figures in the main world (each child run checks them:
/// `check_stats`): clusters tested are instances x resident clusters, the drawn
/// count is read back a frame or two late; a visible list made too small reports
/// its overflow and draws what it holds; a vertex pool too small reports a full
/// pool (the coarser levels still draw). `GpuClusterTint` turns the level tint on:
/// the grey of the plain shading gives way to the levels' colours.
#[test]
fn the_gpu_path_reports_its_figures_and_tints_by_level() {
    if std::env::var(CHILD).is_ok() || !have_gpu() {
        return;
    }
    let dir = farsight_testkit::scratch("gpu_bevy_stats");
    let file = cook(&farsight_testkit::mesh("bunny.obj"), &dir);
    let rgba = render_in_child(&file, "overflow", &dir.join("overflow.rgba"));
    let grey = grey_share(&rgba);
    eprintln!(
        "{} clusters drawn of the overflowing list: grey {grey:.4}",
        OVERFLOW_CAPACITY
    );
    let rgba = render_in_child(&file, "tiny-pools", &dir.join("tiny_pools.rgba"));
    let grey = grey_share(&rgba);
    eprintln!("with a vertex pool too small for the finest levels: grey {grey:.4}");
    assert!(grey > 0.03, "a full pool leaves holes: grey {grey:.4}");
    let rgba = render_in_child(&file, "tint", &dir.join("tint.rgba"));
    let (grey, tinted) = (grey_share(&rgba), tinted_share(&rgba));
    eprintln!(
        "{}: tinted {tinted:.3}, grey {grey:.4}",
        dir.join("tint.png").display()
    );
    assert!(tinted > 0.03, "the level tint is not drawn: {tinted:.4}");
    assert!(grey < 0.005, "grey clusters with the tint on: {grey:.4}");
}

/// Set in the child process that renders one picture of the PBR scene: `DIR|MODE|OUT`.
const PBR_CHILD: &str = "FARSIGHT_GPU_PBR_CHILD";
const PW: u32 = 320;
const PH: u32 = 240;

/// Whether every texture of every `StandardMaterial` has loaded.
#[derive(Resource, Clone, Default)]
pub(crate) struct TexturesBound(pub(crate) Arc<AtomicBool>);

pub(crate) fn watch_textures(
    bound: Res<TexturesBound>,
    materials: Res<Assets<StandardMaterial>>,
    images: Res<Assets<Image>>,
) {
    let ok = |h: &Option<Handle<Image>>| h.as_ref().is_none_or(|h| images.contains(h));
    let all = materials.iter().all(|(_, m)| {
        ok(&m.base_color_texture)
            && ok(&m.normal_map_texture)
            && ok(&m.metallic_roughness_texture)
            && ok(&m.occlusion_texture)
            && ok(&m.emissive_texture)
    });
    bound.0.store(all && materials.len() > 2, Ordering::Relaxed);
}

/// The FlightHelmet (its file's materials and textures) and a bunny (a lit
/// material of the user's) cooked with `--clusters` in `dir`, lit by a directional
/// light and ambient light, seen through distance fog and Reinhard tonemapping:
/// through the GPU path (`gpu`), the CPU path (`cpu`), or the GPU path with the
/// helmet's materials replaced by the bunny's (`gpu-plain`, the sabotaged run).
/// `shadow-gpu` / `shadow-cpu`: the bunny alone, casting nothing (`NotShadowCaster`:
/// the GPU path casts no shadows yet), in the shadow of a plate above the picture
/// (a Bevy mesh); `shadow-gpu-uncast`: the plate casts nothing either (the sabotaged
/// run). `cast-gpu` / `cast-cpu`: the bunny just outside the camera's view casts
/// its shadow onto a ground plane in it; `cast-gpu-away`: the bunny far away (the
/// sabotaged run). `point-…` / `spot-…`: the same ground and the bunny just outside
/// the view, a second bunny in the view, lit by a point light or a spot light with
/// shadow maps instead of the directional light (`…-gpu`, `…-cpu`); `…-gpu-uncast-out`:
/// the bunny outside the view casts nothing, `…-gpu-uncast`: the one inside casts
/// nothing (the sabotaged runs). `cast-gpu-recast`: as `cast-gpu`, the bunny spawned
/// with `NotShadowCaster`, removed 30 frames before the picture. RGBA rows of `PW` pixels.
fn render_pbr_scene(dir: &Path, mode: &str) -> Vec<u8> {
    let lamp = ["point", "spot"].into_iter().find(|k| mode.starts_with(k));
    let cast = mode.starts_with("cast") || lamp.is_some();
    let shadow = mode.starts_with("shadow");
    let mut app = headless_app(dir);
    let cpu = mode.ends_with("cpu");
    if !cpu {
        app.add_plugins(FarsightGpuClustersPlugin::default());
    }
    let image = {
        let mut images = app.world_mut().resource_mut::<Assets<Image>>();
        let mut img = Image::new_target_texture(PW, PH, TextureFormat::Rgba8UnormSrgb, None);
        img.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        images.add(img)
    };
    let picture = Picture::default();
    let bound = TexturesBound::default();
    app.insert_resource(picture.clone())
        .insert_resource(bound.clone())
        .add_systems(Update, watch_textures);
    let ready = Ready::default();
    app.get_sub_app_mut(RenderApp)
        .unwrap()
        .insert_resource(ready.clone())
        .add_systems(Render, watch_pipelines.in_set(RenderSystems::Cleanup));
    app.finish();
    app.cleanup();
    let world = app.world_mut();
    let orange = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color: Color::srgb(0.9, 0.45, 0.2),
            perceptual_roughness: 0.4,
            ..default()
        });
    if !shadow && !cast {
        let helmet = dir.join("helmet.farsight");
        let mut h = world.spawn((
            FarsightClusterModel::new(&helmet),
            Transform::from_xyz(-0.15, 0.0, 0.0),
        ));
        if mode == "gpu-plain" {
            h.insert(MeshMaterial3d(orange.clone()));
        }
    }
    let bunny = dir.join("bunny.farsight");
    let [x, y, z, r] = farsight_stream::cluster::CookedModel::open(&bunny)
        .unwrap()
        .error_bounds();
    let s = 0.18 / r;
    let centre = match mode {
        "cast-gpu-away" => Vec3::new(-30.0, 0.35, 0.0),
        // Higher under the point or spot light, so that its shadow reaches the view.
        _ if lamp.is_some() => Vec3::new(-1.3, 0.7, 0.0),
        _ if cast => Vec3::new(-1.3, 0.35, 0.0),
        _ => Vec3::new(0.35, 0.2, 0.0),
    };
    let mut b = world.spawn((
        FarsightClusterModel::new(&bunny),
        Transform::from_translation(centre - s * Vec3::new(x, y, z))
            .with_scale(Vec3::splat(s))
            .with_rotation(Quat::from_rotation_y(-0.6)),
        MeshMaterial3d(orange.clone()),
    ));
    if !cast || mode.ends_with("-uncast-out") || mode == "cast-gpu-recast" {
        b.insert(bevy::light::NotShadowCaster);
    }
    let recast = (mode == "cast-gpu-recast").then(|| b.id());
    if lamp.is_some() {
        let mut a = world.spawn((
            FarsightClusterModel::new(&bunny),
            Transform::from_translation(Vec3::new(-0.35, 0.18, 0.25) - s * Vec3::new(x, y, z))
                .with_scale(Vec3::splat(s))
                .with_rotation(Quat::from_rotation_y(0.9)),
            MeshMaterial3d(orange.clone()),
        ));
        if mode.ends_with("-uncast") {
            a.insert(bevy::light::NotShadowCaster);
        }
    }
    let towards_light = if cast {
        Vec3::new(-2.0, 1.0, 0.0).normalize()
    } else {
        Vec3::new(-1.0, 2.0, 2.0).normalize()
    };
    if cast {
        let ground = world
            .resource_mut::<Assets<Mesh>>()
            .add(Plane3d::default().mesh().size(4.0, 4.0));
        let grey = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial::from_color(Color::srgb(0.7, 0.7, 0.7)));
        world.spawn((Mesh3d(ground), MeshMaterial3d(grey), Transform::IDENTITY));
    }
    if shadow {
        let plate = world
            .resource_mut::<Assets<Mesh>>()
            .add(Cuboid::new(0.14, 0.01, 0.14));
        let mut p = world.spawn((
            Mesh3d(plate),
            MeshMaterial3d(orange),
            Transform::from_translation(centre + 0.8 * towards_light),
        ));
        if mode == "shadow-gpu-uncast" {
            p.insert(bevy::light::NotShadowCaster);
        }
    }
    // The point and spot lights: up on the left, beyond the bunny outside the view.
    // The point light's shadows fall in two of its cube faces: the outside bunny's
    // in the one below it (-Y), the inside bunny's across that one and +X.
    let lamp_at =
        Transform::from_xyz(-1.9, 1.6, 0.0).looking_at(Vec3::new(-0.4, 0.0, 0.0), Vec3::Y);
    match lamp {
        Some("point") => world.spawn((
            PointLight {
                intensity: 250_000.0,
                range: 10.0,
                shadow_maps_enabled: true,
                ..default()
            },
            lamp_at,
        )),
        Some(_) => world.spawn((
            SpotLight {
                intensity: 250_000.0,
                range: 10.0,
                outer_angle: 0.9,
                inner_angle: 0.6,
                shadow_maps_enabled: true,
                ..default()
            },
            lamp_at,
        )),
        None => world.spawn((
            DirectionalLight {
                illuminance: 6000.0,
                shadow_maps_enabled: shadow || cast,
                ..default()
            },
            Transform::from_translation(towards_light).looking_at(Vec3::ZERO, Vec3::Y),
        )),
    };
    world.insert_resource(GlobalAmbientLight {
        brightness: 600.0,
        ..default()
    });
    world.spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        Tonemapping::Reinhard,
        DistanceFog {
            color: Color::srgb(0.3, 0.35, 0.45),
            falloff: FogFalloff::Linear {
                start: 0.8,
                end: 2.5,
            },
            ..default()
        },
        Msaa::Off,
        RenderTarget::Image(image.clone().into()),
        if cast {
            Transform::from_xyz(0.0, 1.2, 1.2).looking_at(Vec3::ZERO, Vec3::Y)
        } else {
            Transform::from_xyz(0.2, 0.45, 1.1).looking_at(Vec3::new(0.1, 0.3, 0.0), Vec3::Y)
        },
    ));
    let start = std::time::Instant::now();
    while !(ready.0.load(Ordering::Relaxed) && bound.0.load(Ordering::Relaxed)) {
        assert!(
            start.elapsed().as_secs() < 300,
            "pipelines still compiling or textures loading"
        );
        app.update();
    }
    // Frames for the levels to stream in and the materials' bind groups.
    for frame in 0..60 {
        if let (Some(b), 30) = (recast, frame) {
            // `cast-gpu-recast`: the bunny casts from here on.
            app.world_mut()
                .entity_mut(b)
                .remove::<bevy::light::NotShadowCaster>();
        }
        app.update();
    }
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    eprintln!(
        "{mode}: {} materials, {} with a base colour texture",
        materials.len(),
        materials
            .iter()
            .filter(|(_, m)| m.base_color_texture.is_some())
            .count()
    );
    // The path asked for draws: the GPU path makes no mesh for a cluster model.
    let active = app.world().contains_resource::<GpuClustersActive>();
    assert_eq!(active, !cpu, "the GPU path chosen in the {mode} run");
    let meshes = app
        .world_mut()
        .query_filtered::<(), With<Mesh3d>>()
        .iter(app.world())
        .count();
    let plates = usize::from(shadow || cast);
    assert_eq!(meshes > plates, cpu, "{meshes} meshes in the {mode} run");
    let sink = picture.0.clone();
    app.world_mut()
        .spawn(Readback::texture(image))
        .observe(move |ev: On<ReadbackComplete>| {
            *sink.lock().unwrap() = Some(ev.data.clone());
        });
    for _ in 0..600 {
        if picture.0.lock().unwrap().is_some() {
            break;
        }
        app.update();
    }
    let data = picture.0.lock().unwrap().take().expect("never read back");
    let stride = (PW as usize * 4).div_ceil(256) * 256;
    (0..PH as usize)
        .flat_map(|row| data[row * stride..row * stride + PW as usize * 4].to_vec())
        .collect()
}

/// One picture of [`render_pbr_scene`] in a process of its own (this test program
/// again, told by [`PBR_CHILD`] what to draw); its PNG lies beside the RGBA file
/// `pbr-MODE.rgba` in `dir`.
fn render_pbr_in_child(dir: &Path, mode: &str) -> Vec<u8> {
    let out = dir.join(format!("pbr-{mode}.rgba"));
    let job = format!("{}|{mode}|{}", dir.display(), out.display());
    child_picture("the_gpu_path_shades_as_the_cpu_path", PBR_CHILD, &job, &out)
}

/// Mean absolute difference per channel (R, G, B) over the pixels either picture
/// covers (not the black clear colour), and those pixels' count.
fn mean_difference(a: &[u8], b: &[u8]) -> ([f64; 3], usize) {
    let mut sum = [0u64; 3];
    let mut n = 0;
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let lit = |p: &[u8]| p[..3].iter().map(|&c| u32::from(c)).sum::<u32>() > 6;
        if !lit(p) && !lit(q) {
            continue;
        }
        n += 1;
        for c in 0..3 {
            sum[c] += u64::from(p[c].abs_diff(q[c]));
        }
    }
    (sum.map(|s| s as f64 / n.max(1) as f64), n)
}

/// Share of pixels whose colours differ by more than 24 (0-255) in some channel.
fn strong_difference(a: &[u8], b: &[u8]) -> f64 {
    let n = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(p, q)| (0..3).any(|c| p[c].abs_diff(q[c]) > 24))
        .count();
    n as f64 / (a.len() / 4) as f64
}

/// The largest share of pixels the GPU path's picture may have strongly different
/// from the CPU path's where a shadow is compared.
const MAX_STRONG_SHARE: f64 = 0.005;

/// The largest mean absolute difference per channel (0-255) the GPU path's
/// picture may have from the CPU path's over the models' pixels.
const MAX_MEAN_DIFF: f64 = 3.0;

/// The GPU path shades as Bevy's meshes do: the FlightHelmet with its file's
/// textured materials (base colour, normal, occlusion-roughness-metal maps) and a
/// bunny with a lit material of the user's, under a directional light, ambient
/// light, distance fog and Reinhard tonemapping, drawn by the GPU path and by the
/// CPU path (Bevy meshes, Bevy's StandardMaterial pipeline) from the same camera:
/// the pictures differ by at most `MAX_MEAN_DIFF` per channel on average over the
/// models' pixels. With the helmet's materials replaced (the sabotaged run) the
/// same check fails. Likewise a bunny receiving a Bevy mesh's shadow (directional
/// light with shadow maps), against the same bunny with the shadow gone; and the
/// shadow a bunny just outside the camera's view casts onto a Bevy ground plane
/// (the GPU path's cut for shadows has no frustum test), against the ground with
/// the bunny far away.
#[test]
fn the_gpu_path_shades_as_the_cpu_path() {
    if let Ok(job) = std::env::var(PBR_CHILD) {
        let [dir, mode, out] = job.splitn(3, '|').collect::<Vec<_>>()[..] else {
            panic!("bad {PBR_CHILD}: {job}");
        };
        let rgba = render_pbr_scene(Path::new(dir), mode);
        std::fs::write(out, &rgba).unwrap();
        let file = std::io::BufWriter::new(
            std::fs::File::create(Path::new(out).with_extension("png")).unwrap(),
        );
        let mut enc = png::Encoder::new(file, PW, PH);
        enc.set_color(png::ColorType::Rgba);
        enc.write_header().unwrap().write_image_data(&rgba).unwrap();
        return;
    }
    if !have_gpu() {
        return;
    }
    let dir = farsight_testkit::scratch("gpu_pbr");
    // The shared corpus's helmet has its textures; the vendored copy has none (its
    // materials' factors are compared alone).
    let textured = cook_helmet(&dir);
    let images = std::fs::read_dir(&dir).unwrap().count() - 1;
    eprintln!("{images} images beside it");
    assert!(
        !textured || images >= 10,
        "the textured helmet has {images} images"
    );
    cook(&farsight_testkit::mesh("bunny.obj"), &dir);
    let render = |mode: &str| render_pbr_in_child(&dir, mode);
    let gpu = render("gpu");
    let cpu = render("cpu");
    let (diff, pixels) = mean_difference(&gpu, &cpu);
    let differ = gpu
        .chunks_exact(4)
        .zip(cpu.chunks_exact(4))
        .filter(|(a, b)| a != b)
        .count();
    eprintln!(
        "{}: GPU against CPU path, mean difference {diff:.3?} over {pixels} model pixels \
         ({differ} pixels differ at all)",
        dir.display()
    );
    assert!(
        pixels > (PW * PH / 20) as usize,
        "the models cover only {pixels} pixels"
    );
    assert!(
        diff.iter().all(|&d| d <= MAX_MEAN_DIFF),
        "the GPU path's picture differs from the CPU path's by {diff:.2?} per channel"
    );
    let plain = render("gpu-plain");
    let (diff, _) = mean_difference(&plain, &cpu);
    eprintln!("without the helmet's materials: mean difference {diff:.2?}");
    assert!(
        diff.iter().any(|&d| d > MAX_MEAN_DIFF),
        "a helmet without its materials passed for the CPU path's: {diff:.2?}"
    );
    // Shadows received: the bunny in a Bevy mesh's shadow, through both paths.
    let gpu = render("shadow-gpu");
    let cpu = render("shadow-cpu");
    let (diff, pixels) = mean_difference(&gpu, &cpu);
    let differ = gpu
        .chunks_exact(4)
        .zip(cpu.chunks_exact(4))
        .filter(|(a, b)| a != b)
        .count();
    eprintln!(
        "in a shadow: mean difference {diff:.3?} over {pixels} pixels ({differ} differ at all)"
    );
    // The bunny is a `NotShadowCaster` on both paths: it does not shadow itself.
    assert!(
        differ * 200 < pixels,
        "{differ} of {pixels} pixels differ: does the GPU path's bunny shadow itself?"
    );
    assert!(
        diff.iter().all(|&d| d <= MAX_MEAN_DIFF),
        "in a shadow the GPU path's picture differs from the CPU path's by {diff:.2?}"
    );
    let unshadowed = render("shadow-gpu-uncast");
    let (diff, _) = mean_difference(&unshadowed, &cpu);
    eprintln!("without the shadow: mean difference {diff:.2?}");
    assert!(
        diff.iter().any(|&d| d > MAX_MEAN_DIFF),
        "a bunny out of the shadow passed for one in it: {diff:.2?}"
    );
    // Shadows cast: the bunny just outside the camera's view shadows the ground.
    let gpu = render("cast-gpu");
    let cpu = render("cast-cpu");
    let share = strong_difference(&gpu, &cpu);
    eprintln!("cast from outside the view: {share:.4} of the pixels differ by more than 24");
    assert!(
        share <= MAX_STRONG_SHARE,
        "the GPU path's cast shadow differs from the CPU path's in {share:.4} of the pixels"
    );
    let away = render("cast-gpu-away");
    let share = strong_difference(&away, &cpu);
    eprintln!("with the bunny away: {share:.4} of the pixels differ by more than 24");
    assert!(
        share > MAX_STRONG_SHARE,
        "a ground without the bunny's shadow passed for one with it: {share:.4}"
    );
    // `NotShadowCaster` removed from the bunny while it is drawn: it casts again.
    let recast = render("cast-gpu-recast");
    let share = strong_difference(&recast, &cpu);
    eprintln!(
        "with NotShadowCaster removed on the way: {share:.4} of the pixels differ by more than 24"
    );
    assert!(
        share <= MAX_STRONG_SHARE,
        "a bunny whose NotShadowCaster was removed still casts nothing: {share:.4}"
    );
}

/// Whether picture `a` passes for `b` where shadows are compared: at most
/// `MAX_STRONG_SHARE` of the pixels strongly different and at most
/// `MAX_MEAN_DIFF` per channel on average over the lit pixels; with the figures.
fn shadows_match(a: &[u8], b: &[u8]) -> (bool, f64, [f64; 3]) {
    let share = strong_difference(a, b);
    let (diff, _) = mean_difference(a, b);
    let ok = share <= MAX_STRONG_SHARE && diff.iter().all(|&d| d <= MAX_MEAN_DIFF);
    (ok, share, diff)
}

/// Cluster models cast into point lights' cube maps and spot lights' maps as
/// Bevy's meshes do: a bunny just outside the camera's view and one in it shadow a
/// Bevy ground plane under a point light (the shadows in two of its cube faces),
/// then under a spot light (shadow maps on, no directional light); the GPU path's
/// picture passes for the
/// CPU path's (`shadows_match`). The same check refuses the GPU path's picture
/// where the bunny outside the view casts nothing, and where the one inside casts
/// nothing (`NotShadowCaster`, the sabotaged runs).
#[test]
fn cluster_models_cast_into_point_and_spot_lights() {
    if std::env::var(PBR_CHILD).is_ok() || !have_gpu() {
        return;
    }
    let dir = farsight_testkit::scratch("gpu_lamps");
    cook(&farsight_testkit::mesh("bunny.obj"), &dir);
    for lamp in ["point", "spot"] {
        let gpu = render_pbr_in_child(&dir, &format!("{lamp}-gpu"));
        let cpu = render_pbr_in_child(&dir, &format!("{lamp}-cpu"));
        let (ok, share, diff) = shadows_match(&gpu, &cpu);
        eprintln!(
            "{}: {lamp} light, GPU against CPU path: {share:.4} of the pixels differ by \
             more than 24, mean difference {diff:.3?}",
            dir.display()
        );
        assert!(
            ok,
            "under a {lamp} light the GPU path's shadows differ from the CPU path's: \
             {share:.4} strongly, {diff:.2?} on average"
        );
        for (sabotage, which) in [("uncast-out", "outside"), ("uncast", "inside")] {
            let off = render_pbr_in_child(&dir, &format!("{lamp}-gpu-{sabotage}"));
            let (ok, share, diff) = shadows_match(&off, &cpu);
            eprintln!(
                "{lamp} light, the bunny {which} the view casting nothing: {share:.4} \
                 strongly different, mean difference {diff:.3?}"
            );
            assert!(
                !ok,
                "under a {lamp} light, a bunny {which} the view casting nothing passed \
                 for one casting: {share:.4}, {diff:.2?}"
            );
        }
    }
}
