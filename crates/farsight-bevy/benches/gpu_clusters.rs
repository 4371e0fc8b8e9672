//! The cluster plugin's CPU cost per frame, GPU path against CPU path, and the GPU
//! memory each spends per resident triangle (issue 29, "Measured").
//!
//! # Scene
//! 30 cluster models: every mesh of `../shared/data/meshes` cooked with clusters (as
//! `farsight cook mesh --clusters`; geometry 0 of each file), then bumpy generated
//! grids of 2k to 30k triangles to make 30. N instances (1k, 10k; 100k with
//! `FARSIGHT_BENCH_SIZES`), model `i % 30`, each scaled to a 1 m radius on a grid of
//! 4 m lots, seeded turns. One camera flying a circle over the grid at 12 m, turning
//! and moving every frame, rendering into a 320 x 180 image. A headless Bevy app with
//! `DefaultPlugins` (no window, no pipelined rendering) on the adapter wgpu finds
//! (lavapipe here); without one that can run the GPU path the bench prints why and
//! measures nothing.
//!
//! # The sides
//! - `gpu/N`: [`FarsightGpuClustersPlugin`], camera moving, 1% of the instances
//!   moved each frame (a different 1% each frame).
//! - `gpu_static/N`: the same with no instance moved: against `gpu/N`, the cost per
//!   changed transform.
//! - `gpu_still/N`: the camera still (1% moved): against `gpu/N`, whether cut
//!   changes cost the CPU anything.
//! - `gpu_idle/N`: the camera still and no instance moved: what every unchanged
//!   instance costs, with no streaming (against the floor below).
//! - `cpu/N`: the CPU path (one Bevy `Mesh` per instance rewritten when its cut
//!   changes), camera moving, 1% moved. 100k CPU-path instances are skipped unless
//!   `FARSIGHT_BENCH_CPU_100K=1` (100k meshes of their own).
//!
//! # Timed
//! Only the plugin's own systems, by marker systems that read the clock around
//! them, with every timed schedule on the single-threaded executor (the systems
//! themselves still use other threads): GPU path: [`GpuClusterSystems`] (main-world
//! gather, extract, prepare with the streamer's frame, the cut and draw encoded in
//! `Core3d`); CPU path: `FarsightSet::Clusters` (streaming, cuts, mesh rewrites).
//! Bevy's own extraction and upload of the CPU path's meshes is not counted (the
//! bench prints the whole frame beside it), nor the GPU's (lavapipe's) work. Each
//! span is checked in the built schedule to hold only the systems it names. Each
//! criterion iteration is one `App::update`; the time recorded is the sum of the
//! spans. 30 frames run before measuring (the streamer brings levels in;
//! `FARSIGHT_BENCH_WARM_FRAMES` sets how many).
//!
//! The floor, printed beside the GPU path's spans (not in the sum): a bare system
//! with a `Changed<GlobalTransform>` query over the same instances, run after the
//! gather span: what Bevy itself costs to skip an unchanged entity.
//! `FARSIGHT_BENCH_REQUESTS=1` instead times the streamer's requests alone
//! (`LevelRequests`, no app) over the scene's 1k, 10k and 100k instances.
//!
//! # Memory
//! Printed before the timings: per corpus model, the GPU path's pool bytes really
//! taken (vertex, index and cluster-table allocators' used units, the resident list)
//! with every level resident, per resident triangle; and, after the CPU path's
//! frames, its Bevy meshes' vertex and index bytes per instance and per drawn
//! triangle.
//!
//! Dev profile (Bevy at opt-level 1, as the tests build it):
//! `cargo bench --workspace --bench gpu_clusters --profile dev`
//! (`FARSIGHT_BENCH_SIZES=1000,10000,100000` picks the sizes,
//! `FARSIGHT_BENCH_SIDES=gpu,gpu_static` the sides).

use std::any::TypeId;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bevy::app::ScheduleRunnerPlugin;
use bevy::camera::visibility::VisibilitySystems;
use bevy::camera::RenderTarget;
use bevy::core_pipeline::core_3d::main_opaque_pass_3d;
use bevy::core_pipeline::schedule::Core3d;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::core_pipeline::Core3dSystems;
use bevy::ecs::schedule::graph::Direction;
use bevy::ecs::schedule::{
    ApplyDeferred, InternedScheduleLabel, InternedSystemSet, ScheduleLabel, SingleThreadedExecutor,
    SystemKey, SystemSet,
};
use bevy::pbr::{per_view_shadow_pass, LATE_SHADOW_PASS};
use bevy::prelude::*;
use bevy::render::pipelined_rendering::PipelinedRenderingPlugin;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::{ExtractSchedule, Render, RenderApp, RenderSystems};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use farsight_bevy::gpu::{
    headless_device, FarsightGpuClustersPlugin, GpuClusterSystems, GpuUploader, PoolSettings,
};
use farsight_bevy::prelude::*;
use farsight_bevy::FarsightSet;
use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_stream::cluster::{CookedModel, Uploader};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MODELS: usize = 30;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    Gpu,
    GpuStatic,
    GpuStill,
    GpuIdle,
    Cpu,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Gpu => "gpu",
            Side::GpuStatic => "gpu_static",
            Side::GpuStill => "gpu_still",
            Side::GpuIdle => "gpu_idle",
            Side::Cpu => "cpu",
        }
    }
}

/// Spans: gather (or the CPU path's set), extract, prepare, cut, draw; then the
/// floor (not in the timed sum).
const SPANS: usize = 6;
/// The spans summed into the time recorded.
const TIMED: usize = 5;
/// The floor's span.
const FLOOR: usize = 5;
const NAMES: [&str; SPANS] = ["gather", "extract", "prepare", "cut", "draw", "floor"];

/// The floor: what Bevy itself costs to skip the unchanged instances, a bare
/// `Changed<GlobalTransform>` query over the same entities.
fn floor(q: Query<&GlobalTransform, (Changed<GlobalTransform>, With<FarsightClusterModel>)>) {
    let mut n = 0usize;
    for gt in &q {
        n += std::hint::black_box(gt).translation().x.is_finite() as usize;
    }
    std::hint::black_box(n);
}

/// The clock of one world's markers.
#[derive(Resource, Default, Clone)]
struct Clock {
    open: [Option<Instant>; SPANS],
    total: [Duration; SPANS],
}

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Begin(usize);

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct End(usize);

fn begin<const I: usize>(mut c: ResMut<Clock>) {
    c.open[I] = Some(Instant::now());
}

fn end<const I: usize>(mut c: ResMut<Clock>) {
    if let Some(t) = c.open[I].take() {
        c.total[I] += t.elapsed();
    }
}

/// A bumpy grid of `2 * q * q` triangles as OBJ text (positions only).
fn grid_obj(q: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut s = String::new();
    for y in 0..=q {
        for x in 0..=q {
            let h: f32 = rng.random_range(-0.02..0.02);
            let (u, v) = (x as f32 / q as f32, y as f32 / q as f32);
            let z = 0.15 * (u * 9.0).sin() * (v * 7.0).cos() + h;
            s += &format!("v {u} {z} {v}\n");
        }
    }
    let at = |x: usize, y: usize| y * (q + 1) + x + 1;
    for y in 0..q {
        for x in 0..q {
            let (a, b, c, d) = (at(x, y), at(x + 1, y), at(x + 1, y + 1), at(x, y + 1));
            s += &format!("f {a} {c} {b}\nf {a} {d} {c}\n");
        }
    }
    s
}

/// The 30 cooked model files: the corpus, then generated grids.
fn model_files() -> Vec<PathBuf> {
    let dir = farsight_testkit::scratch("gpu_clusters_bench");
    let kind = CookKind::Clusters(ClusterConfig::default());
    let mut out = Vec::new();
    let mut sources = farsight_testkit::corpus();
    sources.truncate(MODELS);
    for (k, _) in (sources.len()..MODELS).enumerate() {
        let q = 32 + 8 * k;
        let obj = dir.join(format!("grid{k}.obj"));
        std::fs::write(&obj, grid_obj(q, k as u64)).unwrap();
        sources.push(obj);
    }
    for src in sources {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let path = dir.join(format!("{name}.farsight"));
        let bytes = cook_file(&src, &kind)
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
            .bytes;
        std::fs::write(&path, bytes).unwrap();
        out.push(path);
    }
    out
}

/// The GPU path's pool bytes per resident triangle, every level of each model
/// resident, from the allocators' used units.
fn gpu_memory(files: &[PathBuf]) {
    let Ok((device, queue, _)) = headless_device() else {
        return;
    };
    let units = [32u64, 4, 64];
    println!(
        "GPU path, every level resident, bytes per resident triangle (vertex pool + index pool + \
         cluster table + resident list, allocated units)"
    );
    let (mut all_bytes, mut all_tris) = (0u64, 0u64);
    for file in files {
        let model = CookedModel::open(file).unwrap();
        let bytes = std::fs::read(file).unwrap();
        let mut up = GpuUploader::new(&device, queue.clone(), PoolSettings::default());
        let before = up.free_units();
        let m = up.add_cooked(&model).unwrap();
        let mut tris = 0u64;
        for (l, level) in model.levels().enumerate() {
            let at = level.offset as usize;
            up.queue_copy(m, l as u8, 0, &bytes[at..at + level.bytes as usize]);
            tris += u64::from(level.triangles);
        }
        up.end_frame();
        for l in 0..model.level_count() {
            up.level_ready(m, l as u8);
        }
        up.end_frame();
        let after = up.free_units();
        let used: Vec<u64> = (0..3).map(|k| (before[k] - after[k]) * units[k]).collect();
        // The resident list: one u32 per resident cluster.
        let resident = up.stats().resident_clusters * 4;
        let total = used.iter().sum::<u64>() + resident;
        all_bytes += total;
        all_tris += tris;
        println!(
            "  {:<28} {:>8} tris: vertices {:>9} B, indices {:>9} B, table {:>8} B, resident {:>6} B: {:.1} B/tri",
            file.file_name().unwrap().to_string_lossy(),
            tris,
            used[0],
            used[1],
            used[2],
            resident,
            total as f64 / tris as f64
        );
    }
    println!(
        "  all {MODELS} models: {all_bytes} B for {all_tris} resident triangles: {:.1} B/tri, once per model whatever its instances",
        all_bytes as f64 / all_tris as f64
    );
}

/// The moving parts of a scene.
#[derive(Resource)]
struct Scene {
    objects: Vec<Entity>,
    camera: Entity,
    frame: u64,
    half: f32,
    side: Side,
}

fn build(n: usize, side: Side, files: &[PathBuf]) -> App {
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                ..default()
            })
            .disable::<WinitPlugin>()
            .disable::<PipelinedRenderingPlugin>(),
        ScheduleRunnerPlugin::run_loop(Duration::ZERO),
        FarsightPlugin,
    ));
    let gpu = side != Side::Cpu;
    if gpu {
        app.add_plugins(FarsightGpuClustersPlugin::default());
        // The extract span's markers go in before the plugin's systems (added in
        // `finish`): the schedule's order then keeps the span's systems together,
        // where markers added later had unrelated extraction systems between them.
        let render = app.get_sub_app_mut(RenderApp).unwrap();
        render.init_resource::<Clock>();
        render.add_systems(
            ExtractSchedule,
            (
                begin::<1>
                    .in_set(Begin(1))
                    .before(GpuClusterSystems::Extract),
                end::<1>.in_set(End(1)).after(GpuClusterSystems::Extract),
            ),
        );
    }
    app.finish();
    app.cleanup();
    app.init_resource::<Clock>();
    app.edit_schedule(PostUpdate, |s| {
        s.set_executor(SingleThreadedExecutor::new());
    });
    if gpu {
        app.add_systems(
            PostUpdate,
            (
                begin::<0>
                    .in_set(Begin(0))
                    .after(bevy::transform::TransformSystems::Propagate)
                    .after(VisibilitySystems::VisibilityPropagate)
                    .after(FarsightSet::Regions)
                    .after(FarsightSet::Terrain)
                    .before(GpuClusterSystems::Gather),
                end::<0>.in_set(End(0)).after(GpuClusterSystems::Gather),
                (begin::<FLOOR>, floor, end::<FLOOR>).chain().after(End(0)),
            ),
        );
        let render = app.get_sub_app_mut(RenderApp).unwrap();
        render.init_resource::<Clock>();
        for label in [ExtractSchedule.intern(), Render.intern(), Core3d.intern()] {
            render.edit_schedule(label, |s| {
                s.set_executor(SingleThreadedExecutor::new());
            });
        }
        render.add_systems(
            Render,
            (
                begin::<2>
                    .in_set(Begin(2))
                    .in_set(RenderSystems::PrepareResources)
                    .before(GpuClusterSystems::Prepare),
                end::<2>
                    .in_set(End(2))
                    .in_set(RenderSystems::PrepareResources)
                    .after(GpuClusterSystems::Prepare),
            ),
        );
        render.add_systems(
            Core3d,
            (
                begin::<3>
                    .in_set(Begin(3))
                    .after(per_view_shadow_pass::<LATE_SHADOW_PASS>)
                    .before(GpuClusterSystems::Cut),
                end::<3>
                    .in_set(End(3))
                    .after(GpuClusterSystems::Cut)
                    .before(Core3dSystems::MainPass),
                begin::<4>
                    .in_set(Begin(4))
                    .in_set(Core3dSystems::MainPass)
                    .after(main_opaque_pass_3d)
                    .before(GpuClusterSystems::Draw),
                end::<4>
                    .in_set(End(4))
                    .in_set(Core3dSystems::MainPass)
                    .after(GpuClusterSystems::Draw),
            ),
        );
    } else {
        app.add_systems(
            PostUpdate,
            (
                begin::<0>
                    .in_set(Begin(0))
                    .after(bevy::transform::TransformSystems::Propagate)
                    .after(VisibilitySystems::VisibilityPropagate)
                    .after(FarsightSet::Regions)
                    .after(FarsightSet::Terrain)
                    .before(FarsightSet::Clusters),
                end::<0>
                    .in_set(End(0))
                    .after(FarsightSet::Clusters)
                    .before(FarsightSet::Mirror),
            ),
        );
    }
    let image = {
        let mut images = app.world_mut().resource_mut::<Assets<Image>>();
        let mut img = Image::new_target_texture(320, 180, TextureFormat::Rgba8UnormSrgb, None);
        img.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        images.add(img)
    };
    let world = app.world_mut();
    let white = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::default());
    let radii: Vec<(Vec3, f32)> = files
        .iter()
        .map(|f| {
            let [x, y, z, r] = CookedModel::open(f).unwrap().error_bounds();
            (Vec3::new(x, y, z), r)
        })
        .collect();
    let side_len = (n as f32).sqrt().ceil() as usize;
    let half = side_len as f32 * 2.0;
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let objects: Vec<Entity> = (0..n)
        .map(|i| {
            let m = i % files.len();
            let (c, r) = radii[m];
            let s = 1.0 / r;
            let at = Vec3::new(
                (i % side_len) as f32 * 4.0 - half,
                1.0,
                (i / side_len) as f32 * 4.0 - half,
            );
            let turn = Quat::from_rotation_y(rng.random_range(0.0..std::f32::consts::TAU));
            let t = Transform::from_translation(at - turn * (c * s))
                .with_rotation(turn)
                .with_scale(Vec3::splat(s));
            world
                .spawn((
                    FarsightClusterModel::new(&files[m]),
                    t,
                    MeshMaterial3d(white.clone()),
                ))
                .id()
        })
        .collect();
    let camera = world
        .spawn((
            Camera3d::default(),
            Tonemapping::None,
            Msaa::Off,
            RenderTarget::Image(image.into()),
            Transform::default(),
        ))
        .id();
    app.insert_resource(Scene {
        objects,
        camera,
        frame: 0,
        half,
        side,
    });
    app
}

/// One frame: the camera moves along its circle (unless still), 1% of the
/// instances move (unless static), update.
fn frame(app: &mut App) {
    let world = app.world_mut();
    let (camera, eye, target, range, side) = {
        let mut s = world.resource_mut::<Scene>();
        s.frame += 1;
        let a = if matches!(s.side, Side::GpuStill | Side::GpuIdle) {
            0.0
        } else {
            s.frame as f32 * 0.01
        };
        let r = s.half * 0.5;
        let eye = Vec3::new(r * a.cos(), 12.0, r * a.sin());
        let target = eye + Vec3::new(-a.sin(), -0.15, a.cos()) * 100.0;
        let n = s.objects.len();
        let k = (n / 100).max(1);
        let first = (s.frame as usize * k) % n;
        (s.camera, eye, target, first..(first + k).min(n), s.side)
    };
    *world.get_mut::<Transform>(camera).unwrap() =
        Transform::from_translation(eye).looking_at(target, Vec3::Y);
    if !matches!(side, Side::GpuStatic | Side::GpuIdle) {
        let up = if world.resource::<Scene>().frame % 2 == 0 {
            0.25
        } else {
            -0.25
        };
        for i in range {
            let e = world.resource::<Scene>().objects[i];
            world.get_mut::<Transform>(e).unwrap().translation.y += up;
        }
    }
    app.update();
}

/// Checks that between each pair of markers in `label`'s built schedule lie only
/// systems of `sets` (and sync points); panics naming the span otherwise. Returns
/// how many systems the span holds.
fn check_span(
    world: &World,
    label: InternedScheduleLabel,
    i: usize,
    sets: &[InternedSystemSet],
) -> usize {
    let schedule = world.resource::<Schedules>().get(label).unwrap();
    let graph = schedule.graph();
    let keys: Vec<(SystemKey, TypeId)> = schedule
        .systems()
        .unwrap()
        .map(|(k, s)| (k, s.system_type()))
        .collect();
    let members = |sets: &[InternedSystemSet]| -> Vec<SystemKey> {
        sets.iter()
            .flat_map(|&set| graph.systems_in_set(set).into_iter().flatten().copied())
            .collect()
    };
    let at = |set: InternedSystemSet| {
        let k = members(&[set])[0];
        keys.iter().position(|&(key, _)| key == k).unwrap()
    };
    let allowed = members(sets);
    let sync = TypeId::of::<ApplyDeferred>();
    let mut count = 0;
    if std::env::var("FARSIGHT_BENCH_DEBUG").is_ok() {
        eprintln!(
            "span {i}: {}..{}",
            at(Begin(i).intern()),
            at(End(i).intern())
        );
        for &(k, _) in &keys {
            let sets: Vec<String> = graph
                .hierarchy()
                .graph()
                .neighbors_directed(k.into(), Direction::Incoming)
                .map(|n| graph.get_node_name(&n))
                .collect();
            eprintln!("  {sets:?}");
        }
    }
    for &(k, t) in &keys[at(Begin(i).intern()) + 1..at(End(i).intern())] {
        if t == sync {
            continue;
        }
        if !allowed.contains(&k) {
            // Named by their sets (system names need Bevy's `debug` feature).
            let sets: Vec<String> = graph
                .hierarchy()
                .graph()
                .neighbors_directed(k.into(), Direction::Incoming)
                .map(|n| graph.get_node_name(&n))
                .collect();
            panic!(
                "a system of no timed set runs inside span {} of {label:?}, in sets {sets:?}",
                NAMES[i]
            );
        }
        count += 1;
    }
    count
}

/// The CPU path's Bevy meshes: vertex and index bytes, instances, drawn triangles.
fn cpu_mesh_bytes(app: &App) -> (u64, u64, u64) {
    let world = app.world();
    let meshes = world.resource::<Assets<Mesh>>();
    let (mut bytes, mut inst, mut tris) = (0u64, 0u64, 0u64);
    for e in &world.resource::<Scene>().objects {
        let Some(cut) = world.get::<ClusterCut>(*e) else {
            continue;
        };
        let Some(mesh) = cut.mesh.as_ref().and_then(|h| meshes.get(h)) else {
            continue;
        };
        bytes += (mesh.get_vertex_size() as usize * mesh.count_vertices()) as u64;
        bytes += mesh.indices().map_or(0, |i| match i {
            bevy::mesh::Indices::U16(v) => 2 * v.len(),
            bevy::mesh::Indices::U32(v) => 4 * v.len(),
        }) as u64;
        inst += 1;
        tris += u64::from(cut.triangles);
    }
    (bytes, inst, tris)
}

/// The streamer's requests alone (`LevelRequests`, no app) over the scene's
/// instances, the camera moving as in `frame`: ns a frame, to see what of the
/// prepare span grows with the instances.
fn requests_alone(n: usize, files: &[PathBuf]) {
    use farsight_bevy::gpu::LevelRequests;
    use farsight_cluster::{InstanceBounds, LevelView};
    use farsight_lod::ProjectionInfo;
    let models: Vec<CookedModel> = files
        .iter()
        .map(|f| CookedModel::open(f).unwrap())
        .collect();
    let metrics: Vec<Vec<f32>> = models.iter().map(CookedModel::parent_errors).collect();
    let side_len = (n as f32).sqrt().ceil() as usize;
    let half = side_len as f32 * 2.0;
    let mut levels = LevelRequests::new();
    for i in 0..n {
        let m = i % files.len();
        let [x, y, z, r] = models[m].error_bounds();
        let s = 1.0 / r;
        let at = Vec3::new(
            (i % side_len) as f32 * 4.0 - half,
            1.0,
            (i / side_len) as f32 * 4.0 - half,
        );
        let t = Transform::from_translation(at - Vec3::new(x, y, z) * s).with_scale(Vec3::splat(s));
        let b = InstanceBounds::placed_geometry(&models[m].geometry(), &t.to_matrix());
        levels.set(i as u32, m as u32, b);
    }
    let proj = Mat4::perspective_rh(std::f32::consts::FRAC_PI_4, 16.0 / 9.0, 0.1, 1000.0);
    let mut out = Vec::new();
    let frames = 200;
    let t = Instant::now();
    for f in 0..frames {
        let a = f as f32 * 0.01;
        let r = half * 0.5;
        let view = LevelView {
            camera: Vec3::new(r * a.cos(), 12.0, r * a.sin()),
            projection: ProjectionInfo::from_matrix(&proj),
            viewport_height: 180.0,
            threshold_px: 1.0,
            bias: 0,
        };
        levels.requests(
            &metrics,
            &view,
            |m| models[m as usize].level_count() as u8 - 1,
            &mut out,
        );
    }
    eprintln!(
        "gpu_clusters/requests_alone/{n}: {:.3} ms a frame",
        t.elapsed().as_secs_f64() * 1e3 / frames as f64
    );
}

fn bench(c: &mut Criterion) {
    if std::env::var("FARSIGHT_BENCH_REQUESTS").is_ok() {
        let files = model_files();
        for n in [1_000, 10_000, 100_000] {
            requests_alone(n, &files);
        }
        return;
    }
    if let Err(e) = headless_device() {
        eprintln!("gpu_clusters: no adapter can run the GPU path ({e}): nothing measured");
        return;
    }
    let files = model_files();
    gpu_memory(&files);
    let mut sizes = vec![1_000, 10_000];
    if let Ok(list) = std::env::var("FARSIGHT_BENCH_SIZES") {
        sizes = list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
    }
    let warm: usize = std::env::var("FARSIGHT_BENCH_WARM_FRAMES")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(30);
    // `FARSIGHT_BENCH_SIDES=gpu,gpu_static` runs the sides listed only.
    let sides_list = std::env::var("FARSIGHT_BENCH_SIDES").ok();
    let sides: Option<Vec<&str>> = sides_list.as_deref().map(|l| l.split(',').collect());
    let cpu_100k = std::env::var("FARSIGHT_BENCH_CPU_100K").as_deref() == Ok("1");
    let mut g = c.benchmark_group("gpu_clusters");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for &n in &sizes {
        for side in [
            Side::Cpu,
            Side::Gpu,
            Side::GpuStatic,
            Side::GpuStill,
            Side::GpuIdle,
        ] {
            let name = side.name();
            if sides.as_ref().is_some_and(|l| !l.contains(&name)) {
                continue;
            }
            if side == Side::Cpu && n >= 100_000 && !cpu_100k {
                eprintln!(
                    "gpu_clusters/cpu/{n}: skipped (one Bevy mesh per instance; \
                     FARSIGHT_BENCH_CPU_100K=1 runs it)"
                );
                continue;
            }
            let built = Instant::now();
            let mut app = build(n, side, &files);
            for _ in 0..warm {
                frame(&mut app);
            }
            eprintln!(
                "gpu_clusters/{name}/{n}: built and {warm} frames in {:.1} s",
                built.elapsed().as_secs_f64()
            );
            if side == Side::Cpu {
                let sets = [FarsightSet::Clusters.intern()];
                let k = check_span(app.world(), PostUpdate.intern(), 0, &sets);
                eprintln!("gpu_clusters/cpu/{n}: {k} systems timed");
            } else {
                check_span(
                    app.world(),
                    PostUpdate.intern(),
                    0,
                    &[GpuClusterSystems::Gather.intern()],
                );
                let render = app.get_sub_app(RenderApp).unwrap().world();
                for (i, label, set) in [
                    (1, ExtractSchedule.intern(), GpuClusterSystems::Extract),
                    (2, Render.intern(), GpuClusterSystems::Prepare),
                    (3, Core3d.intern(), GpuClusterSystems::Cut),
                    (4, Core3d.intern(), GpuClusterSystems::Draw),
                ] {
                    check_span(render, label, i, &[set.intern()]);
                }
            }
            let totals = |app: &App| {
                let main = app.world().resource::<Clock>().total;
                let render = app
                    .get_sub_app(RenderApp)
                    .unwrap()
                    .world()
                    .get_resource::<Clock>()
                    .map_or([Duration::ZERO; SPANS], |c| c.total);
                let mut t = main;
                for k in 1..SPANS {
                    t[k] += render[k];
                }
                t
            };
            let start = totals(&app);
            let (mut frames, mut wall) = (0u64, Duration::ZERO);
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    let before = totals(&app);
                    let t = Instant::now();
                    for _ in 0..iters {
                        frame(&mut app);
                    }
                    wall += t.elapsed();
                    frames += iters;
                    let after = totals(&app);
                    (0..TIMED).map(|k| after[k] - before[k]).sum()
                })
            });
            let end = totals(&app);
            let per = |k: usize| (end[k] - start[k]).as_secs_f64() * 1e3 / frames.max(1) as f64;
            let spans: Vec<String> = (0..TIMED)
                .map(|k| format!("{} {:.3}", NAMES[k], per(k)))
                .collect();
            eprintln!(
                "gpu_clusters/{name}/{n}: mean over {frames} frames: timed {:.3} ms ({}); whole \
                 App::update {:.1} ms",
                (0..TIMED).map(per).sum::<f64>(),
                if side == Side::Cpu {
                    format!("FarsightSet::Clusters {:.3}", per(0))
                } else {
                    format!(
                        "{}; floor, a bare Changed<GlobalTransform> query over the instances, \
                         {:.3}",
                        spans.join(", "),
                        per(FLOOR)
                    )
                },
                wall.as_secs_f64() * 1e3 / frames.max(1) as f64
            );
            if side == Side::Cpu {
                let (bytes, inst, tris) = cpu_mesh_bytes(&app);
                eprintln!(
                    "gpu_clusters/cpu/{n}: Bevy meshes {bytes} B (vertices + indices) for {inst} \
                     instances drawing {tris} triangles: {:.0} B per instance, {:.1} B per drawn \
                     triangle",
                    bytes as f64 / inst.max(1) as f64,
                    bytes as f64 / tris.max(1) as f64
                );
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
