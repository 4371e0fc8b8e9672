//! Many cluster models on a plane, drawn through the GPU path: every corpus mesh
//! cooked as a cluster file, instanced thousands of times, the cut chosen by a
//! compute pass every frame and the figures of that path on screen.
//!
//! `cargo run --release -p farsight-bevy --example clusters -- --instances 10000`
//!
//! Fly with WASD, Q/E, Shift, the mouse with the right button held. T tints the
//! clusters by level (green level 0, yellow 1, red 2, blue 3, purple 4, cyan 5).
//! The text in the corner says which path draws (the GPU path where the device has
//! compute shaders, the CPU path elsewhere), the clusters tested and drawn a frame,
//! the pools' resident bytes and the bytes uploaded in the last frame.
//!
//! - `--instances N` (default 10,000): instances, the corpus's models in turn, on a
//!   square grid.
//! - `--meshes DIR`: the meshes to cook (default: the shared corpus,
//!   `../shared/data/meshes` beside the checkout, else the vendored `testdata/meshes`).
//!   Each `.obj`, `.glb` and `.gltf` in it, and each folder holding one, is cooked
//!   with `--clusters` (as `farsight cook mesh`) once into the cache folder.
//! - `--cache DIR`: where the cooked files go (default: `farsight-clusters-cache` in
//!   the system's temporary folder); a file is cooked again when its source's size
//!   or time changes.
//! - `--no-tint`: start with the tint off (the sabotaged run of `.ci/screenshots`).
//! - `--cpu`: the CPU path even where the GPU path could run, to compare.
//! - `--screenshot PATH --frames N --size WxH`: renders N frames without a window,
//!   saves a PNG and exits.

mod common;

use std::path::{Path, PathBuf};

use bevy::asset::RenderAssetUsages;
use bevy::light::NotShadowCaster;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use common::{Args, FlyCamera, Screenshot};
use farsight_bevy::gpu::{
    FarsightGpuClustersPlugin, GpuClusterStats, GpuClusterTint, GpuClustersActive,
};
use farsight_bevy::{
    ClusterCut, CookedModel, FarsightClusterModel, FarsightClusters, FarsightPlugin,
};
use farsight_mesh::{cook_file, CookKind};

fn fail(msg: String) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

/// Distance between neighbouring instances, in metres (each model is scaled to a
/// sphere of radius 1 m).
const SPACING: f32 = 3.5;

fn main() {
    let args = Args::parse(&[
        "--instances=",
        "--meshes=",
        "--cache=",
        "--no-tint",
        "--cpu",
    ]);
    let instances: u32 = match args.value("--instances") {
        None => 10_000,
        Some(v) => v
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| fail(format!("--instances wants a count above 0, found {v:?}"))),
    };
    let meshes = match args.value("--meshes") {
        Some(d) => PathBuf::from(d),
        None => default_meshes(),
    };
    let cache = args.value("--cache").map_or_else(
        || std::env::temp_dir().join("farsight-clusters-cache"),
        PathBuf::from,
    );
    let models = cook_all(&meshes, &cache);
    let mut app = common::app(&args, "farsight: clusters");
    app.add_plugins(FarsightPlugin);
    if !args.has("--cpu") {
        app.add_plugins(FarsightGpuClustersPlugin::default());
    }
    app.insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.95)))
        .insert_resource(GpuClusterTint::new(!args.has("--no-tint")))
        .insert_resource(Field { models, instances })
        .add_systems(Startup, (setup, hud::setup).chain())
        .add_systems(
            Update,
            (common::fly_camera, toggle_tint, hud::update, hud::place),
        );
    if app.run().is_error() {
        std::process::exit(1);
    }
}

/// The shared corpus when the checkout has it beside it, else the vendored meshes;
/// neither: an error naming both folders.
fn default_meshes() -> PathBuf {
    let shared = farsight_testkit::shared_meshes();
    if shared.is_dir() {
        return shared;
    }
    let vendored = farsight_testkit::testdata_meshes();
    if vendored.is_dir() {
        println!(
            "{} is absent: drawing the vendored meshes of {}",
            shared.display(),
            vendored.display()
        );
        return vendored;
    }
    fail(format!(
        "no meshes: neither {} (the shared corpus) nor {} exists; pass --meshes DIR",
        shared.display(),
        vendored.display()
    ))
}

/// A cooked model of the field: its file and what places it on the ground.
struct Model {
    name: String,
    /// Every geometry of the file and its transform in the file's scene.
    parts: Vec<(FarsightClusterModel, Transform)>,
    /// Scene space to the field: scaled to a radius of 1 m, standing on y = 0.
    fit: Transform,
}

#[derive(Resource)]
struct Field {
    models: Vec<Model>,
    instances: u32,
}

/// The meshes of `dir` a cook reads: `.obj`, `.glb` and `.gltf` files, and such a
/// file in each sub-folder (the one named as the folder, else the first), by name.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let is_mesh = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["obj", "glb", "gltf"].contains(&e.to_ascii_lowercase().as_str()))
    };
    let list = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for p in list(dir) {
        if p.is_dir() {
            let inside: Vec<PathBuf> = list(&p).into_iter().filter(|f| is_mesh(f)).collect();
            let own = inside
                .iter()
                .find(|f| f.file_stem() == p.file_name())
                .or(inside.first());
            out.extend(own.cloned());
        } else if is_mesh(&p) {
            out.push(p);
        }
    }
    out
}

/// Every mesh of `dir` cooked into `cache` (once: a cooked file whose source has
/// the same size and time is used again), on a few threads; a mesh that does not
/// cook is skipped with a message; none at all ends the program.
fn cook_all(dir: &Path, cache: &Path) -> Vec<Model> {
    let srcs = sources(dir);
    if srcs.is_empty() {
        fail(format!(
            "no .obj, .glb or .gltf meshes in {}",
            dir.display()
        ));
    }
    std::fs::create_dir_all(cache).unwrap_or_else(|e| fail(format!("{}: {e}", cache.display())));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let cooked: Vec<Option<Model>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(src) = srcs.get(k) else { break };
                        done.push((k, cook_one(src, cache)));
                    }
                    done
                })
            })
            .collect();
        let mut all: Vec<(usize, Option<Model>)> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect();
        all.sort_by_key(|(k, _)| *k);
        all.into_iter().map(|(_, m)| m).collect()
    });
    let models: Vec<Model> = cooked.into_iter().flatten().collect();
    if models.is_empty() {
        fail(format!("no mesh of {} cooked", dir.display()));
    }
    println!(
        "{} models cooked into {}: {}",
        models.len(),
        cache.display(),
        models
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    models
}

/// One mesh cooked into its own folder of `cache` (its textures beside it), or
/// found there from an earlier run.
fn cook_one(src: &Path, cache: &Path) -> Option<Model> {
    let name = src.file_name()?.to_string_lossy().into_owned();
    let meta = std::fs::metadata(src).ok()?;
    let time = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let dir = cache.join(format!(
        "{name}-{}-{time}-{}",
        meta.len(),
        env!("CARGO_PKG_VERSION")
    ));
    let file = dir.join("model.farsight");
    if !file.is_file() {
        let kind = CookKind::Clusters(Default::default());
        let out = match cook_file(src, &kind) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("skipped {}: {e}", src.display());
                return None;
            }
        };
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| out.looks.write_beside(&dir).map(|_| ()))
            .and_then(|()| {
                // Written whole under another name first: a cut-short run leaves no
                // half file that a later one would take for cooked.
                let part = dir.join("model.farsight.part");
                std::fs::write(&part, &out.bytes)?;
                std::fs::rename(&part, &file)
            });
        if let Err(e) = written {
            fail(format!("{}: {e}", dir.display()));
        }
    }
    let parts = match FarsightClusterModel::scene(&file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipped {}: {e}", file.display());
            return None;
        }
    };
    // The scene's bounds: the box around every part's error sphere, placed.
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for (m, t) in &parts {
        let [x, y, z, r] = CookedModel::open_geometry(&file, m.geometry)
            .ok()?
            .error_bounds();
        let c = t.transform_point(Vec3::new(x, y, z));
        let r = r * t.scale.abs().max_element();
        lo = lo.min(c - r);
        hi = hi.max(c + r);
    }
    let radius = ((hi - lo) * 0.5).length().max(1e-6);
    let s = 1.0 / radius;
    let centre = (lo + hi) * 0.5;
    let fit = Transform::from_translation(Vec3::new(-centre.x * s, -lo.y * s, -centre.z * s))
        .with_scale(Vec3::splat(s));
    Some(Model { name, parts, fit })
}

/// A small deterministic hash (the field is the same every run).
fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

fn setup(
    mut commands: Commands,
    field: Res<Field>,
    shot: Option<Res<Screenshot>>,
    tint: Res<GpuClusterTint>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let side = (field.instances as f32).sqrt().ceil() as u32;
    let extent = side as f32 * SPACING;
    for i in 0..field.instances {
        let (gx, gz) = (i % side, i / side);
        let h = hash(i);
        let model = &field.models[(h % field.models.len() as u32) as usize];
        let jitter = |k: u32| ((hash(h ^ k) % 1000) as f32 / 1000.0 - 0.5) * SPACING * 0.4;
        let at = Vec3::new(
            gx as f32 * SPACING + jitter(1),
            0.0,
            gz as f32 * SPACING + jitter(2),
        );
        let turn = Quat::from_rotation_y((hash(h ^ 3) % 360) as f32 * std::f32::consts::PI / 180.0);
        let root = Transform::from_translation(at).with_rotation(turn) * model.fit;
        commands
            .spawn((root, Visibility::default()))
            .with_children(|p| {
                for (m, t) in &model.parts {
                    let mut m = m.clone();
                    if tint.on {
                        m = m.with_level_colors(farsight_bevy::LEVEL_TINTS.to_vec());
                    }
                    // No material of ours: each model draws with its file's
                    // materials and textures, on either path.
                    p.spawn((m, *t));
                }
            });
    }
    // The ground under the field.
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(extent + 40.0, extent + 40.0))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.42, 0.42, 0.4),
            perceptual_roughness: 1.0,
            ..default()
        })),
        Transform::from_xyz(extent * 0.5, 0.0, extent * 0.5),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 8000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::default().looking_to(Vec3::new(-0.4, -1.0, 0.6), Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 500.0,
        ..default()
    });
    // From a corner of the field, low, looking along its diagonal: near models
    // draw their finest levels, far ones their coarsest.
    let eye = Vec3::new(-3.0, 3.0, -3.0);
    let look = Vec3::new(extent.min(60.0) * 0.5, 0.0, extent.min(60.0) * 0.5);
    let (fly, t) = FlyCamera::looking(eye, look, 12.0);
    commands.spawn(common::camera(fly, t, shot.as_deref()));
}

/// T: the tint by level on or off, on both paths.
fn toggle_tint(
    keys: Res<ButtonInput<KeyCode>>,
    mut tint: ResMut<GpuClusterTint>,
    mut models: Query<&mut FarsightClusterModel>,
) {
    if !keys.just_pressed(KeyCode::KeyT) {
        return;
    }
    tint.on = !tint.on;
    for mut m in &mut models {
        m.level_colors = tint.on.then(|| farsight_bevy::LEVEL_TINTS.to_vec());
    }
}

/// The figures on screen: text drawn with a small pixel font into an image shown
/// on a quad in front of the camera, in the top-left corner (the examples build
/// Bevy without its UI and text crates).
mod hud {
    use super::*;

    /// Glyphs 5 pixels wide and 7 high, a row a byte (the low five bits, the
    /// leftmost pixel the highest); upper case, digits and a little punctuation.
    const GLYPHS: &[(char, [u8; 7])] = &[
        ('0', [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E]),
        ('1', [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E]),
        ('2', [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F]),
        ('3', [0x1E, 0x01, 0x01, 0x0E, 0x01, 0x01, 0x1E]),
        ('4', [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02]),
        ('5', [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E]),
        ('6', [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E]),
        ('7', [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08]),
        ('8', [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E]),
        ('9', [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C]),
        ('A', [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11]),
        ('B', [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E]),
        ('C', [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E]),
        ('D', [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C]),
        ('E', [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F]),
        ('F', [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10]),
        ('G', [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F]),
        ('H', [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11]),
        ('I', [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E]),
        ('J', [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C]),
        ('K', [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11]),
        ('L', [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F]),
        ('M', [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11]),
        ('N', [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11]),
        ('O', [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E]),
        ('P', [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10]),
        ('Q', [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D]),
        ('R', [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11]),
        ('S', [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E]),
        ('T', [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04]),
        ('U', [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E]),
        ('V', [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04]),
        ('W', [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A]),
        ('X', [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11]),
        ('Y', [0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04]),
        ('Z', [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F]),
        (':', [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00]),
        ('.', [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C]),
        (',', [0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08]),
        ('/', [0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10]),
        ('-', [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00]),
        ('(', [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02]),
        (')', [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08]),
        ('=', [0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00]),
        ('%', [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03]),
    ];

    /// Characters a line holds, and lines.
    const COLUMNS: u32 = 44;
    const LINES: u32 = 6;
    /// Pixels of a character cell and of the margin.
    const CELL: (u32, u32) = (6, 9);
    const MARGIN: u32 = 3;
    /// Metres in front of the camera the quad stands (just past its near plane).
    const DEPTH: f32 = 0.2;

    /// The text's image, its quad and the text last drawn.
    #[derive(Resource)]
    pub struct Hud {
        image: Handle<Image>,
        quad: Entity,
        text: Vec<String>,
    }

    fn size() -> (u32, u32) {
        (COLUMNS * CELL.0 + 2 * MARGIN, LINES * CELL.1 + 2 * MARGIN)
    }

    pub fn setup(
        mut commands: Commands,
        mut images: ResMut<Assets<Image>>,
        mut meshes: ResMut<Assets<Mesh>>,
        mut materials: ResMut<Assets<StandardMaterial>>,
        camera: Query<Entity, With<Camera3d>>,
    ) {
        let (w, h) = size();
        let image = images.add(Image::new_fill(
            Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            &[0, 0, 0, 0],
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::default(),
        ));
        let material = materials.add(StandardMaterial {
            base_color_texture: Some(image.clone()),
            unlit: true,
            alpha_mode: AlphaMode::Blend,
            ..default()
        });
        let quad = commands
            .spawn((
                Mesh3d(meshes.add(Rectangle::new(1.0, 1.0))),
                MeshMaterial3d(material),
                Transform::from_xyz(0.0, 0.0, -DEPTH),
                NotShadowCaster,
            ))
            .id();
        if let Some(cam) = camera.iter().next() {
            commands.entity(cam).add_child(quad);
        }
        commands.insert_resource(Hud {
            image,
            quad,
            text: Vec::new(),
        });
    }

    fn mib(bytes: u64) -> String {
        format!("{:.1} MIB", bytes as f64 / f64::from(1 << 20))
    }

    /// The lines of the text for this frame.
    fn lines(
        gpu: bool,
        stats: &GpuClusterStats,
        clusters: &FarsightClusters,
        cuts: &Query<&ClusterCut>,
        tint: bool,
        instances: u32,
    ) -> Vec<String> {
        let mut l = Vec::new();
        if gpu {
            l.push("GPU PATH: THE CUT IN A COMPUTE PASS".to_string());
            l.push(format!("INSTANCES {instances} ({} PARTS)", stats.instances));
            l.push(format!(
                "TESTED {}  DRAWN {} (FRAME {}/{})",
                stats.clusters_tested, stats.clusters_drawn, stats.drawn_frame, stats.frame
            ));
            l.push(format!(
                "RESIDENT {} OF {}  UPLOAD {} KIB",
                mib(stats.resident_bytes),
                mib(stats.pool_bytes),
                stats.uploaded_bytes.div_ceil(1024)
            ));
            let pool = match stats.last_placement_failure {
                Some(f) if f.fragmented() => format!("POOL TOO FRAGMENTED: {:?}", f.pool),
                Some(f) => format!("POOL FULL: {:?}", f.pool),
                None => "POOLS OK".to_string(),
            };
            l.push(format!("OVERFLOW {}  {pool}", stats.visible_overflow));
        } else {
            let (n, tris) = cuts
                .iter()
                .fold((0u32, 0u64), |(n, t), c| (n + 1, t + c.triangles as u64));
            let s = clusters.stats();
            l.push("CPU PATH: A CUT AND A MESH PER INSTANCE".to_string());
            l.push(format!("INSTANCES {instances}  PARTS {n}"));
            l.push(format!("TRIANGLES DRAWN {tris}"));
            l.push(format!(
                "RESIDENT {}  UPLOADED {}",
                mib(s.bytes_resident),
                mib(s.bytes_uploaded)
            ));
            l.push(String::new());
        }
        l.push(format!(
            "T: TINT BY LEVEL {}",
            if tint { "ON" } else { "OFF" }
        ));
        l.iter().map(|s| s.to_uppercase()).collect()
    }

    /// Redraws the text when it changed; prints it every 100 frames.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        mut hud: ResMut<Hud>,
        mut images: ResMut<Assets<Image>>,
        active: Option<Res<GpuClustersActive>>,
        stats: Option<Res<GpuClusterStats>>,
        clusters: Res<FarsightClusters>,
        cuts: Query<&ClusterCut>,
        tint: Res<GpuClusterTint>,
        field: Res<Field>,
        mut frame: Local<u32>,
    ) {
        let text = lines(
            active.is_some(),
            &stats.as_deref().copied().unwrap_or_default(),
            &clusters,
            &cuts,
            tint.on,
            field.instances,
        );
        *frame += 1;
        if *frame % 100 == 0 {
            println!("frame {}: {}", *frame, text.join(" | "));
        }
        if text == hud.text {
            return;
        }
        let Some(mut image) = images.get_mut(&hud.image) else {
            return;
        };
        let (w, h) = size();
        let Some(data) = image.data.as_mut() else {
            return;
        };
        // A dark, half transparent panel, the text light grey on it.
        for px in data.chunks_exact_mut(4) {
            px.copy_from_slice(&[0, 0, 0, 150]);
        }
        for (row, line) in text.iter().enumerate() {
            for (col, ch) in line.chars().take(COLUMNS as usize).enumerate() {
                let Some((_, glyph)) = GLYPHS.iter().find(|(c, _)| *c == ch) else {
                    continue;
                };
                let (x0, y0) = (MARGIN + col as u32 * CELL.0, MARGIN + row as u32 * CELL.1);
                for (gy, bits) in glyph.iter().enumerate() {
                    for gx in 0..5u32 {
                        if bits & (0x10 >> gx) != 0 {
                            let (x, y) = (x0 + gx, y0 + gy as u32);
                            let at = ((y * w + x) * 4) as usize;
                            data[at..at + 4].copy_from_slice(&[235, 235, 235, 255]);
                        }
                    }
                }
            }
        }
        debug_assert_eq!(data.len(), (w * h * 4) as usize);
        hud.text = text;
    }

    /// Keeps the quad in the top-left corner at whole pixels per texel, whatever
    /// the viewport's size.
    pub fn place(
        hud: Res<Hud>,
        cameras: Query<(&Camera, &Projection), With<Camera3d>>,
        mut quads: Query<&mut Transform>,
    ) {
        let Some((cam, Projection::Perspective(p))) = cameras.iter().next() else {
            return;
        };
        let Some(view) = cam.logical_viewport_size() else {
            return;
        };
        let Ok(mut t) = quads.get_mut(hud.quad) else {
            return;
        };
        let (w, h) = size();
        // Screen pixels per texel: 1 up to 720 pixels high, more above.
        let k = (view.y / 720.0).ceil().max(1.0);
        let per_px = 2.0 * DEPTH * (p.fov * 0.5).tan() / view.y;
        let (qw, qh) = (w as f32 * k * per_px, h as f32 * k * per_px);
        let half = Vec2::new(view.x, view.y) * 0.5 * per_px;
        let want = Transform::from_xyz(-half.x + qw * 0.5, half.y - qh * 0.5, -DEPTH)
            .with_scale(Vec3::new(qw, qh, 1.0));
        if *t != want {
            *t = want;
        }
    }
}
