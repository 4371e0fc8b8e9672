//! The world `farsight world build -o DIR` writes, drawn in Bevy: voxel terrain, the
//! baked metropolis in its bands, cooked cluster models drawn from their streamed
//! levels, entity-LOD props; everything placed from the world's region files, which
//! stream around the camera.
//!
//! `cargo run --release -p farsight-bevy --example world -- --dir DIR`
//!
//! Fly with WASD, Q/E, Shift, the mouse with the right button held. T tints levels:
//! model clusters, building pieces and props, green level 0, yellow level 1, red
//! level 2 and coarser; with the tint off, building pieces wear their kit's materials
//! and cluster models their files' materials and textures (a model spawned with the
//! tint on keeps a plain material under its level colours). The cluster models
//! draw through the GPU path (`FarsightGpuClustersPlugin`: the cut in a compute
//! pass, tinted green, yellow, red by level through `GpuClusterTint`) where the
//! device has compute shaders, and through the CPU path elsewhere.
//!
//! - `--dir DIR`: a folder written by `farsight world build -o DIR`. Without it, a
//!   small world (`--grid 2`) is built into a temporary folder by the `farsight`
//!   binary next to this example (`cargo build -p farsight-cli` first), since world
//!   building links the bake-time crates and lives in farsight-cli.
//! - `--screenshot PATH --frames N --size WxH` renders N frames without a window,
//!   saves a PNG and exits; `--no-tint` starts with the tint off, `--no-models` leaves
//!   the cluster models out (the sabotaged run of `.ci/screenshots`).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::prelude::*;
use common::{Args, FlyCamera, Screenshot};
use farsight_bevy::gpu::{
    FarsightGpuClustersPlugin, GpuClusterStats, GpuClusterTint, GpuClustersActive,
};
use farsight_bevy::{
    BuildingAsset, BuildingLevelTint, BuildingPalette, FarsightBuilding, FarsightClusterModel,
    FarsightClusters, FarsightLod, FarsightLodChanged, FarsightPlugin, FarsightRegions,
    FarsightStreamingSource, FarsightTerrain, RegionEntity,
};
use farsight_stream::cluster::CookedModel;
use farsight_stream::region::{read_region_file, Scene};
use farsight_terrain::{read_grid, TerrainViewConfig};
use farsight_world::{EntityKind, WorldManifest};

fn fail(msg: String) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

/// The world folder and what was read of it at startup.
#[derive(Resource)]
struct WorldDir {
    dir: PathBuf,
    manifest: WorldManifest,
    /// Where the camera starts and what it looks at.
    eye: Vec3,
    target: Vec3,
    models: bool,
}

#[derive(Resource)]
struct Tint {
    on: bool,
    tints: [Handle<StandardMaterial>; 3],
    plain_model: Handle<StandardMaterial>,
    plain_prop: Handle<StandardMaterial>,
    /// Per prop design, per level: its mesh.
    props: Vec<Vec<Handle<Mesh>>>,
}

/// A prop's own material shown with the tint off, and its drawn level.
#[derive(Component)]
struct Prop(u8);

fn main() {
    let args = Args::parse(&["--no-tint", "--no-models", "--dir="]);
    let (dir, temp) = match args.value("--dir") {
        Some(d) => (
            std::path::absolute(d).unwrap_or_else(|e| fail(format!("--dir {d}: {e}"))),
            None,
        ),
        None => {
            let dir = std::env::temp_dir().join(format!("farsight-world-{}", std::process::id()));
            build_world(&dir).unwrap_or_else(|e| fail(e));
            (dir.clone(), Some(dir))
        }
    };
    let manifest = WorldManifest::read(&dir).unwrap_or_else(|e| fail(e.to_string()));
    let (eye, target) = viewpoint(&dir, &manifest).unwrap_or_else(|e| fail(e));
    let mut app = common::app_with_assets(&args, "farsight: world", Some(&dir));
    // Cluster models draw through the GPU path where the device runs it, else
    // through the CPU path (the plugin chooses; see the README).
    app.add_plugins((FarsightPlugin, FarsightGpuClustersPlugin::default()))
        .insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.95)))
        .insert_resource(WorldDir {
            dir: dir.clone(),
            manifest,
            eye,
            target,
            models: !args.has("--no-models"),
        })
        .insert_resource(StartTint(!args.has("--no-tint")))
        .insert_resource(BuildingLevelTint::new(!args.has("--no-tint")))
        .insert_resource(GpuClusterTint::new(!args.has("--no-tint")))
        .add_systems(Startup, setup)
        .add_systems(
            Update,
            (
                common::fly_camera,
                toggle_tint,
                dress,
                retint_models,
                retint_props,
                common::report_building_failures,
            ),
        )
        .add_systems(Last, report_clusters);
    let exit = app.run();
    if let Some(t) = temp {
        std::fs::remove_dir_all(t).ok();
    }
    if exit.is_error() {
        std::process::exit(1);
    }
}

#[derive(Resource)]
struct StartTint(bool);

/// A small world built by the `farsight` binary beside this example.
fn build_world(dir: &Path) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/<profile>/examples/world -> target/<profile>/farsight
    let farsight = exe
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join("farsight"))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            "no --dir and no farsight binary beside the example: run `cargo run -p \
             farsight-cli -- world build -o DIR --grid 2`, then pass --dir DIR"
                .to_string()
        })?;
    println!("building a small world into {} ...", dir.display());
    let status = std::process::Command::new(&farsight)
        .args(["world", "build", "--grid", "2", "-o"])
        .arg(dir)
        .status()
        .map_err(|e| format!("{}: {e}", farsight.display()))?;
    if !status.success() {
        return Err(format!(
            "{} world build failed ({status})",
            farsight.display()
        ));
    }
    Ok(())
}

/// A view over a cluster model just outside the city, looking across it at the
/// city: the model close by, the buildings behind it, the terrain around.
fn viewpoint(dir: &Path, m: &WorldManifest) -> Result<(Vec3, Vec3), String> {
    let params = m.terrain.params();
    let (lo, hi) = m.buildings.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), b| (lo.min(Vec3::from(b.min)), hi.max(Vec3::from(b.max))),
    );
    let (centre, city_radius) = if lo.x <= hi.x {
        ((lo + hi) * 0.5, (hi - lo).with_y(0.0).length() * 0.5)
    } else {
        let (x, z) = (m.extent[0] * 0.5, m.extent[1] * 0.5);
        (Vec3::new(x, params.height(x, z), z), 0.0)
    };
    let bounds: Vec<[f32; 4]> = m
        .models
        .iter()
        .map(|e| {
            CookedModel::open_geometry(dir.join(&e.file), e.geometry as usize)
                .map(|c| c.error_bounds())
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let scene = Scene::open(&dir.join(&m.scene)).map_err(|e| e.to_string())?;
    // (distance to the city centre, the model's centre, its radius), in the world.
    let mut best: Option<(f32, Vec3, f32)> = None;
    for r in 0..scene.manifest.regions.len() as u32 {
        let records = read_region_file(&scene.region_path(r)).map_err(|e| e.to_string())?;
        for rec in records {
            let Some(EntityKind::Model(k)) = m.kind(rec.model) else {
                continue;
            };
            let [x, y, z, radius] = bounds[k as usize];
            let at = rec.position + Vec3::new(x, y, z) * rec.scale;
            let radius = radius * rec.scale;
            let d = at.with_y(0.0).distance(centre.with_y(0.0));
            if d > city_radius + radius + 10.0 && best.is_none_or(|b| d < b.0) {
                best = Some((d, at, radius));
            }
        }
    }
    Ok(match best {
        Some((_, at, radius)) => {
            let away = (at - centre).with_y(0.0).normalize_or(Vec3::X);
            // Beyond the model, looking over it at the city: the model in front, the
            // buildings behind it, the terrain to the horizon.
            let eye = at + away * radius * 6.0;
            let eye = eye.with_y(params.height(eye.x, eye.z).max(at.y) + radius * 1.5);
            (eye, at.lerp(centre, 0.1).with_y(at.y))
        }
        None => (centre + Vec3::new(-120.0, 80.0, -120.0), centre),
    })
}

#[allow(clippy::too_many_arguments)]
fn setup(
    mut commands: Commands,
    world: Res<WorldDir>,
    start: Res<StartTint>,
    shot: Option<Res<Screenshot>>,
    mut clusters: ResMut<FarsightClusters>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut images: ResMut<Assets<Image>>,
    mut palette: ResMut<BuildingPalette>,
) {
    let m = &world.manifest;
    // The buildings wear their kit's materials: either built-in kit (their material
    // names differ), whichever the world was built with.
    for kit in ["corporate", "dark-city"]
        .into_iter()
        .filter_map(farsight_building::Kit::builtin)
    {
        palette.add_kit(&kit, &mut materials, &mut images);
    }
    // Terrain: the world's voxel file, meshed on the terrain plugin's workers.
    let terrain_path = world.dir.join(&m.terrain.file);
    let grid = read_grid(&terrain_path)
        .unwrap_or_else(|e| fail(format!("{}: {e}", terrain_path.display())));
    let settings = TerrainViewConfig {
        draw_distance: m.extent[0].max(m.extent[1]) * 1.5,
        ..Default::default()
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let mut terrain = FarsightTerrain::new(grid, settings, threads);
    if shot.is_some() {
        terrain.settle(world.eye, Duration::from_secs(120));
    }
    commands.spawn(terrain);
    // Regions: every entity of the world comes from them.
    let index = world.dir.join(&m.scene);
    let regions = FarsightRegions::open(&index, 2)
        .unwrap_or_else(|e| fail(format!("{}: {e}", index.display())));
    commands.insert_resource(regions);
    // Every model file opened before any instance spawns: one streamer start.
    if world.models {
        for model in &m.models {
            if let Err(e) = clusters.open(&world.dir.join(&model.file)) {
                fail(e.to_string());
            }
        }
    }
    let props = m
        .props
        .iter()
        .map(|p| {
            (0..p.ranges.len())
                .map(|l| {
                    let mesh: Mesh = match l {
                        0 => Sphere::new(p.radius).mesh().ico(4).unwrap(),
                        1 => Sphere::new(p.radius).mesh().ico(1).unwrap(),
                        _ => Cuboid::from_length(p.radius * 1.6).into(),
                    };
                    meshes.add(mesh.translated_by(Vec3::Y * p.radius))
                })
                .collect()
        })
        .collect();
    commands.insert_resource(Tint {
        on: start.0,
        tints: common::level_tints(&mut materials),
        plain_model: materials.add(StandardMaterial {
            base_color: Color::srgb(0.85, 0.82, 0.78),
            perceptual_roughness: 0.8,
            ..default()
        }),
        plain_prop: materials.add(Color::srgb(0.35, 0.45, 0.3)),
        props,
    });
    commands.spawn((
        DirectionalLight {
            illuminance: 9000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::default().looking_to(Vec3::new(-0.4, -1.0, 0.6), Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 500.0,
        ..default()
    });
    let (fly, t) = FlyCamera::looking(world.eye, world.target, 40.0);
    let far = m.extent[0].max(m.extent[1]) * 3.0;
    commands.spawn((
        Camera3d::default(),
        Tonemapping::AcesFitted,
        Projection::Perspective(PerspectiveProjection { far, ..default() }),
        Msaa::Off,
        t,
        fly,
        // Regions stream around the camera.
        FarsightStreamingSource::active(m.extent[0].max(m.extent[1]) * 0.75),
        common::render_target(shot.as_deref()),
    ));
}

/// The tint of each level of a model's clusters.
fn model_colors() -> Vec<Color> {
    common::LEVEL_TINTS.to_vec()
}

/// Region entities get what their record names: a cluster model, a building, a prop.
fn dress(
    mut commands: Commands,
    world: Res<WorldDir>,
    tint: Res<Tint>,
    server: Res<AssetServer>,
    added: Query<(Entity, &RegionEntity), Added<RegionEntity>>,
    mut has_materials: Local<std::collections::HashMap<PathBuf, bool>>,
) {
    let m = &world.manifest;
    for (e, r) in &added {
        let mut ec = commands.entity(e);
        match m.kind(r.record.model) {
            Some(EntityKind::Model(i)) if world.models => {
                let entry = &m.models[i as usize];
                let file = world.dir.join(&entry.file);
                // A file without materials (an OBJ without its .mtl) wears the plain one.
                let own = *has_materials.entry(file.clone()).or_insert_with(|| {
                    CookedModel::open(&file)
                        .is_ok_and(|m| !m.manifest().material_table.materials.is_empty())
                });
                let mut model =
                    FarsightClusterModel::new(file).with_geometry(entry.geometry as usize);
                if tint.on {
                    model = model.with_level_colors(model_colors());
                }
                if tint.on || !own {
                    ec.insert((model, MeshMaterial3d(tint.plain_model.clone())));
                } else {
                    ec.insert(model);
                }
            }
            Some(EntityKind::Building(i)) => {
                let b = &m.buildings[i as usize];
                let handle: Handle<BuildingAsset> = server.load(b.file.clone());
                ec.insert((
                    FarsightBuilding(handle),
                    Transform::from_translation(Vec3::from(b.offset)),
                ));
            }
            Some(EntityKind::Prop(i)) => {
                let levels = &tint.props[i as usize];
                let lod = FarsightLod::from_ranges(
                    levels
                        .iter()
                        .cloned()
                        .zip(m.props[i as usize].ranges.iter().copied()),
                );
                let Ok(lod) = lod else { continue };
                let mat = if tint.on {
                    tint.tints[0].clone()
                } else {
                    tint.plain_prop.clone()
                };
                ec.insert((Mesh3d(levels[0].clone()), MeshMaterial3d(mat), lod, Prop(0)));
            }
            _ => {}
        }
    }
}

/// T tints models, props and (through the plugin's setting) building pieces.
fn toggle_tint(
    keys: Res<ButtonInput<KeyCode>>,
    mut tint: ResMut<Tint>,
    mut pieces: ResMut<BuildingLevelTint>,
    mut gpu: ResMut<GpuClusterTint>,
) {
    if keys.just_pressed(KeyCode::KeyT) {
        tint.on = !tint.on;
        pieces.on = tint.on;
        gpu.on = tint.on;
    }
}

/// Models take their level colours or the file's.
fn retint_models(tint: Res<Tint>, mut models: Query<&mut FarsightClusterModel>) {
    if tint.is_changed() && !tint.is_added() {
        for mut model in &mut models {
            model.level_colors = tint.on.then(model_colors);
        }
    }
}

/// Props follow their LOD messages; a toggle repaints them all.
fn retint_props(
    tint: Res<Tint>,
    mut changed: MessageReader<FarsightLodChanged>,
    mut props: Query<(&mut Prop, &mut MeshMaterial3d<StandardMaterial>)>,
) {
    for ev in changed.read() {
        if let Ok((mut p, _)) = props.get_mut(ev.entity) {
            p.0 = ev.to;
        }
    }
    for (p, mut m) in &mut props {
        let want = if tint.on {
            &tint.tints[(p.0 as usize).min(2)]
        } else {
            &tint.plain_prop
        };
        if m.0 != *want {
            m.0 = want.clone();
        }
    }
}

/// Every 40 frames: what the cluster models draw and what the streamer holds.
fn report_clusters(
    mut frame: Local<u32>,
    clusters: Res<FarsightClusters>,
    cuts: Query<&farsight_bevy::ClusterCut>,
    gpu: Option<Res<GpuClustersActive>>,
    stats: Res<GpuClusterStats>,
) {
    *frame += 1;
    if std::env::var_os("FARSIGHT_TRACE").is_some() {
        eprintln!(
            "trace frame {} at {:?}",
            *frame,
            std::time::SystemTime::now()
        );
    }
    if *frame % 40 != 0 {
        return;
    }
    if gpu.is_some() {
        println!(
            "frame {}: GPU path, {} cluster model instances: {} clusters tested, {} drawn \
             (frame {}); {:.1} MiB resident in the pools",
            *frame,
            stats.instances,
            stats.clusters_tested,
            stats.clusters_drawn,
            stats.drawn_frame,
            stats.resident_bytes as f64 / (1 << 20) as f64
        );
        return;
    }
    let (mut n, mut tris, mut rebuilds) = (0, 0u64, 0);
    for c in &cuts {
        n += 1;
        tris += c.triangles as u64;
        rebuilds += c.rebuilds;
    }
    let s = clusters.stats();
    println!(
        "frame {}: {n} cluster model instances draw {tris} triangles ({rebuilds} mesh rewrites so far); {} levels resident, {:.1} MiB",
        *frame,
        s.levels_resident,
        s.bytes_resident as f64 / (1 << 20) as f64
    );
}
