//! The GPU path in Bevy's depth and normal prepasses (issue 29): a camera with
//! `DepthPrepass` and `NormalPrepass` sees the cluster models in its prepass
//! textures as it sees Bevy's meshes. Each render reads the two textures back
//! through a compute pass of the test's own (they cannot be copied: Bevy makes
//! them without `COPY_SRC`) where SSAO reads them, before the main pass, and the GPU path's textures are
//! compared with the CPU path's for the same scene, pixel by pixel. A run with
//! the GPU path's prepass draw switched off (its system set never runs) must fail
//! the same comparison. A camera with a motion-vector prepass reads its motion
//! vectors back likewise on a frame where the models and the camera move, against
//! the CPU path's, and a run with every previous transform the current one must
//! fail. Skips where no adapter can run the GPU path, unless
//! `FARSIGHT_REQUIRE_GPU=1`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bevy::camera::RenderTarget;
use bevy::core_pipeline::prepass::{
    DepthPrepass, MotionVectorPrepass, NormalPrepass, ViewPrepassTextures,
};
use bevy::core_pipeline::schedule::Core3d;
use bevy::core_pipeline::Core3dSystems;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::renderer::{RenderContext, RenderDevice, ViewQuery};
use bevy::render::{ExtractSchedule, Render, RenderApp, RenderSystems};
use farsight_bevy::gpu::prepass::StillPreviousRows;
use farsight_bevy::gpu::{FarsightGpuClustersPlugin, GpuClusterSystems, GpuClustersActive};
use farsight_bevy::prelude::*;
use farsight_mesh::{cook_file, ClusterConfig, CookKind};

use crate::gpu_bevy::{
    cook_helmet, have_gpu, headless_app, run_child, watch_pipelines, watch_textures, Ready,
    TexturesBound,
};

/// Set in the child process that renders one scene: `DIR|MODE|OUT`.
const CHILD: &str = "FARSIGHT_GPU_PREPASS_CHILD";
const W: u32 = 320;
const H: u32 = 240;

/// The probe's compute pass: per pixel the prepass depth and the normal texture's
/// RGB (or the motion vector texture's RG and 0), four floats.
const PROBE_WGSL: &str = "
@group(0) @binding(0) var depth_tex: texture_depth_2d;
@group(0) @binding(1) var normal_tex: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(8, 8)
fn probe(@builtin(global_invocation_id) id: vec3<u32>) {
    let size = textureDimensions(depth_tex);
    if id.x >= size.x || id.y >= size.y {
        return;
    }
    let p = vec2<i32>(id.xy);
    // A depth-only view binds a 1x1 stand-in for the normals.
    let n = textureLoad(normal_tex, min(p, vec2<i32>(textureDimensions(normal_tex)) - 1), 0);
    out[id.y * size.x + id.x] = vec4<f32>(textureLoad(depth_tex, p, 0), n.xyz);
}
";

/// The render world's reader of the prepass textures.
#[derive(Resource)]
struct Probe {
    /// Made on the first frame (the device is known then).
    gpu: Option<ProbeGpu>,
    /// Set by the test when the scene has settled.
    armed: Arc<AtomicBool>,
    /// `armed` as extracted with the frame being rendered (pipelined rendering
    /// renders a frame while the next one updates).
    live: bool,
    /// Read the motion vectors in place of the normals.
    motion: bool,
    copied: bool,
    sink: Arc<Mutex<Option<Vec<f32>>>>,
}

/// The probe's pipeline and buffers.
struct ProbeGpu {
    pipeline: wgpu::ComputePipeline,
    out: wgpu::Buffer,
    read: wgpu::Buffer,
    /// Bound for the normals where the view has no normal prepass.
    no_normals: wgpu::TextureView,
}

impl ProbeGpu {
    fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("prepass probe"),
            source: wgpu::ShaderSource::Wgsl(PROBE_WGSL.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("prepass probe"),
            layout: None,
            module: &module,
            entry_point: Some("probe"),
            compilation_options: Default::default(),
            cache: None,
        });
        let size = u64::from(W * H) * 16;
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("prepass probe"),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        Self {
            pipeline,
            out: buffer(U::STORAGE | U::COPY_SRC),
            read: buffer(U::MAP_READ | U::COPY_DST),
            no_normals: device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some("prepass probe: no normals"),
                    size: wgpu::Extent3d::default(),
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: wgpu::TextureFormat::Rgb10a2Unorm,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING,
                    view_formats: &[],
                })
                .create_view(&Default::default()),
        }
    }
}

/// `Core3d`, where SSAO runs (after `Core3dSystems::Prepass`, before the main
/// pass): once armed, the prepass textures into the probe's buffer.
fn probe_prepass(
    view: ViewQuery<&ViewPrepassTextures>,
    mut probe: ResMut<Probe>,
    device: Res<RenderDevice>,
    mut ctx: RenderContext,
) {
    let textures = view.into_inner();
    let Some(depth) = textures.depth_view() else {
        return;
    };
    if probe.copied || !probe.live {
        return;
    }
    let device = device.wgpu_device();
    let motion = probe.motion;
    let gpu = probe.gpu.get_or_insert_with(|| ProbeGpu::new(device));
    let second = if motion {
        textures.motion_vectors_view()
    } else {
        textures.normal_view()
    };
    let normal = second.map_or(&gpu.no_normals, |v| &**v);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("prepass probe"),
        layout: &gpu.pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(depth),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::TextureView(normal),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: gpu.out.as_entire_binding(),
            },
        ],
    });
    let encoder = ctx.command_encoder();
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&gpu.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(W.div_ceil(8), H.div_ceil(8), 1);
    }
    encoder.copy_buffer_to_buffer(&gpu.out, 0, &gpu.read, 0, gpu.out.size());
    probe.copied = true;
}

/// `ExtractSchedule`: whether the frame extracted is to be read.
fn arm_probe(mut probe: ResMut<Probe>) {
    probe.live = probe.armed.load(Ordering::Relaxed);
}

/// Render, `Cleanup` (after the frame was submitted): the probe's copy mapped
/// and handed to the test.
fn read_probe(probe: Res<Probe>, device: Res<RenderDevice>) {
    let Some(gpu) = probe.gpu.as_ref() else {
        return;
    };
    if !probe.copied || probe.sink.lock().unwrap().is_some() {
        return;
    }
    gpu.read
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device
        .wgpu_device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let floats = bytemuck::cast_slice::<u8, f32>(&gpu.read.slice(..).get_mapped_range()).to_vec();
    gpu.read.unmap();
    *probe.sink.lock().unwrap() = Some(floats);
}

/// The FlightHelmet (its file's materials: normal maps where the shared corpus
/// has its textures) and a bunny with a material of the user's, cooked with
/// `--clusters` in `dir`, beside a Bevy ground plane, seen by a camera with depth
/// and normal prepasses: through the GPU path (`gpu`), the CPU path (`cpu`), or
/// the GPU path with its prepass draw switched off (`gpu-unprepassed`, the
/// sabotaged run); `gpu-depth` / `cpu-depth`: the camera with a depth prepass
/// only; `gpu-motion` / `cpu-motion`: the camera with depth and motion-vector
/// prepasses, the models and the camera moved on the frame read (see [`moved`]),
/// and `gpu-motion-still` the GPU path with every previous transform the current
/// one (the sabotaged run). Per pixel (rows of `W`): prepass depth, then the
/// normal texture's RGB (zeros without a normal prepass) or the motion vector and 0.
fn render_prepass(dir: &Path, mode: &str) -> Vec<f32> {
    let mut app = headless_app(dir);
    let cpu = mode.starts_with("cpu");
    if !cpu {
        app.add_plugins(FarsightGpuClustersPlugin::default());
    }
    let image = {
        let mut images = app.world_mut().resource_mut::<Assets<Image>>();
        let mut img = Image::new_target_texture(W, H, TextureFormat::Rgba8UnormSrgb, None);
        img.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        images.add(img)
    };
    let bound = TexturesBound::default();
    app.insert_resource(bound.clone())
        .add_systems(Update, watch_textures);
    let ready = Ready::default();
    let armed = Arc::new(AtomicBool::new(false));
    let sink = Arc::new(Mutex::new(None));
    let render_app = app.get_sub_app_mut(RenderApp).unwrap();
    render_app
        .insert_resource(ready.clone())
        .insert_resource(Probe {
            gpu: None,
            armed: armed.clone(),
            live: false,
            motion: mode.contains("motion"),
            copied: false,
            sink: sink.clone(),
        })
        .add_systems(Render, watch_pipelines.in_set(RenderSystems::Cleanup))
        .add_systems(Render, read_probe.in_set(RenderSystems::Cleanup))
        .add_systems(ExtractSchedule, arm_probe)
        // Where SSAO reads the prepass textures: after the prepass, before the
        // main pass.
        .add_systems(
            Core3d,
            probe_prepass
                .after(Core3dSystems::Prepass)
                .before(Core3dSystems::MainPass),
        );
    if mode == "gpu-unprepassed" {
        render_app.configure_sets(Core3d, GpuClusterSystems::Prepass.run_if(|| false));
    }
    if mode == "gpu-motion-still" {
        render_app.insert_resource(StillPreviousRows);
    }
    app.finish();
    app.cleanup();
    let motion = mode.contains("motion");
    // Motion runs: a bunny behind the camera, placed first (the GPU path's slot 0),
    // despawned on the frame read so that the helmet or the bunny takes its slot.
    let extra = motion.then(|| {
        let e = app
            .world_mut()
            .spawn((
                FarsightClusterModel::new(dir.join("bunny.farsight")),
                Transform::from_xyz(0.0, 0.0, 6.0).with_scale(Vec3::splat(0.001)),
            ))
            .id();
        for _ in 0..30 {
            app.update();
        }
        e
    });
    let world = app.world_mut();
    let helmet = world
        .spawn((
            FarsightClusterModel::new(dir.join("helmet.farsight")),
            Transform::from_xyz(-0.15, 0.0, 0.0),
        ))
        .id();
    let bunny = dir.join("bunny.farsight");
    let [x, y, z, r] = farsight_stream::cluster::CookedModel::open(&bunny)
        .unwrap()
        .error_bounds();
    let s = 0.18 / r;
    let orange = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::from_color(Color::srgb(0.9, 0.45, 0.2)));
    let bunny = world
        .spawn((
            FarsightClusterModel::new(&bunny),
            Transform::from_translation(Vec3::new(0.35, 0.2, 0.0) - s * Vec3::new(x, y, z))
                .with_scale(Vec3::splat(s))
                .with_rotation(Quat::from_rotation_y(-0.6)),
            MeshMaterial3d(orange),
        ))
        .id();
    // A Bevy mesh through the helmet's base: both paths' prepasses hold it, and
    // the models hide parts of it.
    let ground = world
        .resource_mut::<Assets<Mesh>>()
        .add(Plane3d::default().mesh().size(3.0, 3.0));
    let grey = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::from_color(Color::srgb(0.7, 0.7, 0.7)));
    world.spawn((
        Mesh3d(ground),
        MeshMaterial3d(grey),
        Transform::from_xyz(0.0, 0.05, 0.0),
    ));
    world.spawn((
        DirectionalLight::default(),
        Transform::from_xyz(-1.0, 2.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let mut camera = world.spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        DepthPrepass,
        Msaa::Off,
        RenderTarget::Image(image.into()),
        Transform::from_xyz(0.2, 0.45, 1.1).looking_at(Vec3::new(0.1, 0.3, 0.0), Vec3::Y),
    ));
    if motion {
        camera.insert(MotionVectorPrepass);
    } else if !mode.ends_with("depth") {
        camera.insert(NormalPrepass);
    }
    let camera = camera.id();
    let start = std::time::Instant::now();
    while !(ready.0.load(Ordering::Relaxed) && bound.0.load(Ordering::Relaxed)) {
        assert!(
            start.elapsed().as_secs() < 300,
            "pipelines still compiling or textures loading"
        );
        app.update();
    }
    // Frames for the levels to stream in and the materials' bind groups.
    for _ in 0..60 {
        app.update();
    }
    let active = app.world().contains_resource::<GpuClustersActive>();
    assert_eq!(active, !cpu, "the GPU path chosen in the {mode} run");
    if let Some(extra) = extra {
        // The frame before the one read: the helmet moves (and then stops). The
        // frame read: the bunny and the camera move, the extra bunny goes.
        let [helmet_step, bunny_step, camera_step] = moved();
        let step = |app: &mut App, e: Entity, by: Transform| {
            let mut t = app.world_mut().get_mut::<Transform>(e).unwrap();
            *t = by * *t;
        };
        step(&mut app, helmet, helmet_step);
        app.update();
        step(&mut app, bunny, bunny_step);
        step(&mut app, camera, camera_step);
        app.world_mut().despawn(extra);
    }
    armed.store(true, Ordering::Relaxed);
    for _ in 0..60 {
        if sink.lock().unwrap().is_some() {
            break;
        }
        app.update();
    }
    let probed = sink.lock().unwrap().take();
    probed.expect("the prepass never read back")
}

/// The motion runs' steps (each applied before the transform): the helmet's on
/// the frame before the one read (it stands still on the frame read, so its
/// motion there is the camera's only), the bunny's and the camera's on the frame
/// read. A few pixels each; the bunny's a turn about its upright axis through its
/// place and a shift.
fn moved() -> [Transform; 3] {
    let turn = Quat::from_rotation_y(0.2);
    let bunny_at = Vec3::new(0.35, 0.2, 0.0);
    [
        Transform::from_xyz(0.03, 0.01, -0.02),
        Transform::from_translation(bunny_at - turn * bunny_at + Vec3::new(0.02, 0.0, 0.02))
            .with_rotation(turn),
        Transform::from_xyz(-0.015, 0.01, 0.0),
    ]
}

/// The prepass as two PNGs beside `path`: the normal texture (black where
/// nothing covers a pixel) and the depth, brightest nearest.
fn save_pngs(path: &Path, probed: &[f32]) {
    let far = probed.chunks_exact(4).map(|p| p[0]).fold(0.0f32, f32::max);
    let covered = |p: &[f32]| p[0] > 0.0;
    let normals = probed.chunks_exact(4).flat_map(|p| {
        let c = |v: f32| {
            if covered(p) {
                (v * 255.0).round() as u8
            } else {
                0
            }
        };
        [c(p[1]), c(p[2]), c(p[3]), 255]
    });
    let depth = probed.chunks_exact(4).flat_map(|p| {
        let g = (p[0] / far.max(f32::MIN_POSITIVE) * 255.0).round() as u8;
        [g, g, g, 255]
    });
    for (name, rgba) in [
        ("png", normals.collect::<Vec<u8>>()),
        ("depth.png", depth.collect()),
    ] {
        let file =
            std::io::BufWriter::new(std::fs::File::create(path.with_extension(name)).unwrap());
        let mut enc = png::Encoder::new(file, W, H);
        enc.set_color(png::ColorType::Rgba);
        enc.write_header().unwrap().write_image_data(&rgba).unwrap();
    }
}

/// How two prepasses differ.
#[derive(Debug)]
struct PrepassDifference {
    /// Pixels covered (depth above the cleared 0) in either.
    covered: usize,
    /// Share of those covered in one only.
    coverage: f64,
    /// Over pixels covered in both: mean relative difference of the depths
    /// (reversed infinite perspective: depth is near / distance).
    depth: f64,
    /// Over pixels covered in both: mean absolute difference per channel of the
    /// normal texture (0-255, as stored in its 10-bit channels scaled).
    normal: [f64; 3],
}

impl PrepassDifference {
    /// Whether the two prepasses agree within the stated tolerances.
    fn agrees(&self) -> bool {
        self.coverage <= MAX_COVERAGE
            && self.depth <= MAX_DEPTH
            && self.normal.iter().all(|&n| n <= MAX_NORMAL)
    }
}

fn compare(a: &[f32], b: &[f32]) -> PrepassDifference {
    let (mut covered, mut one, mut both) = (0usize, 0usize, 0usize);
    let mut depth = 0.0f64;
    let mut normal = [0.0f64; 3];
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let (cp, cq) = (p[0] > 0.0, q[0] > 0.0);
        if !cp && !cq {
            continue;
        }
        covered += 1;
        if cp != cq {
            one += 1;
            continue;
        }
        both += 1;
        depth += f64::from((p[0] - q[0]).abs() / p[0].max(q[0]));
        for c in 0..3 {
            normal[c] += f64::from((p[c + 1] - q[c + 1]).abs()) * 255.0;
        }
    }
    let n = both.max(1) as f64;
    PrepassDifference {
        covered,
        coverage: one as f64 / covered.max(1) as f64,
        depth: depth / n,
        normal: normal.map(|s| s / n),
    }
}

// Measured on lavapipe (Mesa 22.3.6): 0 pixels covered in one only, 1.4e-9 of
// relative depth, at most 6e-6 per normal channel; with the prepass draw off:
// 0.147 of the pixels, 0.044 and 15.7.

/// Largest share of covered pixels covered in one prepass only.
const MAX_COVERAGE: f64 = 0.005;
/// Largest mean relative depth difference over pixels covered in both.
const MAX_DEPTH: f64 = 1e-4;
/// Largest mean normal difference per channel (0-255) over pixels covered in both.
const MAX_NORMAL: f64 = 1.5;

/// In a child process (`CHILD` set): renders its job and returns `None`. Else,
/// where the GPU path can run, the scene cooked in a scratch folder and a
/// function rendering it in a mode through a child process running `test`.
fn renderer(test: &str) -> Option<impl Fn(&str) -> Vec<f32>> {
    if let Ok(job) = std::env::var(CHILD) {
        let [dir, mode, out] = job.splitn(3, '|').collect::<Vec<_>>()[..] else {
            panic!("bad {CHILD}: {job}");
        };
        let probed = render_prepass(Path::new(dir), mode);
        std::fs::write(out, bytemuck::cast_slice::<f32, u8>(&probed)).unwrap();
        if mode.contains("motion") {
            save_motion_png(Path::new(out), &probed);
        } else {
            save_pngs(Path::new(out), &probed);
        }
        return None;
    }
    if !have_gpu() {
        return None;
    }
    let dir = farsight_testkit::scratch(&format!("gpu_prepass_{test}"));
    cook_helmet(&dir);
    let kind = CookKind::Clusters(ClusterConfig::default());
    let bunny = cook_file(&farsight_testkit::mesh("bunny.obj"), &kind).unwrap();
    std::fs::write(dir.join("bunny.farsight"), &bunny.bytes).unwrap();
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let test = format!("{module}::{test}");
    Some(move |mode: &str| {
        let out = dir.join(format!("prepass-{mode}.f32"));
        let job = format!("{}|{mode}|{}", dir.display(), out.display());
        run_child(&test, CHILD, &job, mode);
        eprintln!("{mode}: {}", out.display());
        bytemuck::cast_slice::<u8, f32>(&std::fs::read(out).unwrap()).to_vec()
    })
}

/// The motion vectors as a PNG beside `path`: grey where still, red for motion to
/// the right, green for motion down, 16 levels a pixel; black where nothing
/// covers a pixel.
fn save_motion_png(path: &Path, probed: &[f32]) {
    let rgba: Vec<u8> = probed
        .chunks_exact(4)
        .flat_map(|p| {
            if p[0] <= 0.0 {
                return [0, 0, 0, 255];
            }
            let c = |v: f32| (128.0 + v * 16.0).clamp(0.0, 255.0).round() as u8;
            [c(p[1] * W as f32), c(p[2] * H as f32), 128, 255]
        })
        .collect();
    let file = std::io::BufWriter::new(std::fs::File::create(path.with_extension("png")).unwrap());
    let mut enc = png::Encoder::new(file, W, H);
    enc.set_color(png::ColorType::Rgba);
    enc.write_header().unwrap().write_image_data(&rgba).unwrap();
}

/// How two motion-vector prepasses differ.
#[derive(Debug)]
struct MotionDifference {
    /// Pixels covered (depth above the cleared 0) in either.
    covered: usize,
    /// Share of those covered in one only.
    coverage: f64,
    /// Over pixels covered in both: mean length of the motion vectors' difference, in pixels.
    mean_px: f64,
    /// Over pixels covered in both: share whose motion differs by over half a pixel.
    over_half_px: f64,
    /// Over pixels covered in both: mean length of the reference's motion, in pixels.
    reference_px: f64,
}

impl MotionDifference {
    fn of(a: &[f32], reference: &[f32]) -> Self {
        let (mut covered, mut one, mut both, mut over) = (0usize, 0usize, 0usize, 0usize);
        let (mut sum, mut motion) = (0.0f64, 0.0f64);
        let px = |p: &[f32]| Vec2::new(p[1] * W as f32, p[2] * H as f32);
        for (p, q) in a.chunks_exact(4).zip(reference.chunks_exact(4)) {
            let (cp, cq) = (p[0] > 0.0, q[0] > 0.0);
            if !cp && !cq {
                continue;
            }
            covered += 1;
            if cp != cq {
                one += 1;
                continue;
            }
            both += 1;
            let d = px(p).distance(px(q));
            sum += f64::from(d);
            over += usize::from(d > 0.5);
            motion += f64::from(px(q).length());
        }
        let n = both.max(1) as f64;
        Self {
            covered,
            coverage: one as f64 / covered.max(1) as f64,
            mean_px: sum / n,
            over_half_px: over as f64 / n,
            reference_px: motion / n,
        }
    }

    /// Whether the two agree within the stated tolerances.
    fn agrees(&self) -> bool {
        self.coverage <= MAX_COVERAGE
            && self.mean_px <= MAX_MOTION_PX
            && self.over_half_px <= MAX_MOTION_OFF
    }
}

// Measured on lavapipe (Mesa 22.3.6), 320x240, 42,493 pixels covered, 5.2 px of
// motion on average: 0 pixels covered in one only, 6.8e-7 px of mean difference,
// none over half a pixel; with previous = current: 0.46 px, 6.2 % over half a
// pixel (the bunny). Also refused when tried: last frame's rows not reset (the
// stopped helmet keeps its motion) 2.6 px, 25 %; the previous of a slot refilled
// by a despawn taken from the despawned instance 6.3 px, 6.2 %.

/// Largest mean difference of the motion vectors, in pixels, over pixels covered in both.
const MAX_MOTION_PX: f64 = 0.05;
/// Largest share of pixels covered in both whose motion differs by over half a pixel.
const MAX_MOTION_OFF: f64 = 0.01;

/// The cluster models write Bevy's motion vectors as the CPU path's meshes do:
/// with a camera with depth and motion-vector prepasses, on the frame the
/// helmet, the bunny (turned) and the camera move, the GPU path's motion vector
/// texture against the CPU path's: at most `MAX_COVERAGE` of the covered pixels
/// covered in one only, the motion within `MAX_MOTION_PX` on average and at most
/// `MAX_MOTION_OFF` of the pixels off by over half a pixel. With every previous
/// transform the current one (the sabotaged run: only the camera's motion
/// shows on the models), the same check fails.
#[test]
fn the_gpu_path_writes_motion_vectors_as_the_cpu_path() {
    let Some(render) = renderer("the_gpu_path_writes_motion_vectors_as_the_cpu_path") else {
        return;
    };
    let cpu = render("cpu-motion");
    let d = MotionDifference::of(&render("gpu-motion"), &cpu);
    eprintln!("motion vectors, GPU against CPU path: {d:?}");
    assert!(
        d.covered > (W * H / 5) as usize && d.reference_px > 1.0,
        "too little covered or moving: {d:?}"
    );
    assert!(
        d.agrees(),
        "the GPU path's motion vectors differ from the CPU path's: {d:?}"
    );
    let d = MotionDifference::of(&render("gpu-motion-still"), &cpu);
    eprintln!("motion vectors with previous = current: {d:?}");
    assert!(
        !d.agrees(),
        "motion vectors without the models' own motion passed: {d:?}"
    );
}

/// The cluster models are in the prepass textures of a camera with depth and
/// normal prepasses, as the CPU path's meshes are: the GPU path's prepass depth
/// and normals against the CPU path's for the FlightHelmet (its file's materials,
/// normal maps included where the shared corpus has the textures), a bunny with a
/// user's material and a Bevy ground plane: at most `MAX_COVERAGE` of the covered
/// pixels covered in one only, depths within `MAX_DEPTH` relative on average,
/// normals within `MAX_NORMAL` per channel on average; likewise the depth of a
/// camera with a depth prepass alone. With the GPU path's
/// prepass draw switched off (the sabotaged run), the models are missing and the
/// same check fails.
#[test]
fn the_gpu_path_draws_into_the_prepass_as_the_cpu_path() {
    let Some(render) = renderer("the_gpu_path_draws_into_the_prepass_as_the_cpu_path") else {
        return;
    };
    let gpu = render("gpu");
    let cpu = render("cpu");
    let d = compare(&gpu, &cpu);
    eprintln!("GPU against CPU path's prepass: {d:?}");
    assert!(
        d.covered > (W * H / 5) as usize,
        "the prepass covers only {} pixels",
        d.covered
    );
    assert!(
        d.agrees(),
        "the GPU path's prepass differs from the CPU path's: {d:?}"
    );
    // A depth prepass alone: the pipelines without a fragment stage.
    let d = compare(&render("gpu-depth"), &render("cpu-depth"));
    eprintln!("depth prepass only: {d:?}");
    assert!(
        d.covered > (W * H / 5) as usize && d.agrees(),
        "with a depth prepass alone the GPU path's differs from the CPU path's: {d:?}"
    );
    let sabotaged = render("gpu-unprepassed");
    let d = compare(&sabotaged, &cpu);
    eprintln!("without the GPU path's prepass draw: {d:?}");
    assert!(
        !d.agrees(),
        "a prepass without the models passed for one with them: {d:?}"
    );
}
