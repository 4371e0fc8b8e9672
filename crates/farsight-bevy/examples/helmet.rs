//! A textured model three ways, for the eye and for `.ci/screenshots`: the corpus's
//! FlightHelmet through Bevy's own glTF loader, and the same file cooked by farsight
//! as a cluster model and as a cooked LOD chain, drawn by the plugin with the file's
//! materials and textures, all from the same camera under the same lights.
//!
//! `cargo run --release -p farsight-bevy --example helmet -- --source clusters`
//!
//! - `--source gltf|clusters|chain` (default `clusters`): what draws the helmet.
//! - `--file PATH`: the cooked file to draw (`farsight cook mesh FlightHelmet.gltf -o
//!   PATH --clusters`, or `--lod-chain --cooked`), its textures beside it; without
//!   it the example cooks `--gltf` into a temporary folder at startup.
//! - `--gltf PATH`: the source (default: the shared corpus's FlightHelmet).
//! - `--no-textures`: every material drawn without its textures (the sabotaged run
//!   of `.ci/screenshots`, whose picture must not pass for the glTF loader's).
//! - `--tint` (T): cluster levels tinted (green level 0, yellow 1, red 2 and
//!   coarser), a debug view.
//! - `--screenshot PATH --frames N --size WxH`: renders N frames without a window
//!   once every texture is bound, saves a PNG and exits.
//!
//! The camera stands close enough that level 0 draws: the picture is about the
//! materials, not the levels.

mod common;

use std::path::{Path, PathBuf};

use bevy::gltf::{Gltf, GltfMesh};
use bevy::prelude::*;
use common::{Args, FlyCamera, Screenshot, ScreenshotHold};
use farsight_bevy::farsight_format::CookConfig;
use farsight_bevy::{
    ClusterCut, FarsightClusterModel, FarsightLodChain, FarsightPlugin, LodChainAsset, LEVEL_TINTS,
};
use farsight_mesh::{cook_file, ChainRecords, CookKind, LodChainConfig};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    Gltf,
    Clusters,
    Chain,
}

#[derive(Resource)]
struct Helmet {
    source: Source,
    /// The file drawn, in the asset folder.
    file: PathBuf,
    tint: bool,
    no_textures: bool,
}

fn fail(msg: String) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

fn main() {
    let args = Args::parse(&["--source=", "--file=", "--gltf=", "--no-textures", "--tint"]);
    let source = match args.value("--source").unwrap_or("clusters") {
        "gltf" => Source::Gltf,
        "clusters" => Source::Clusters,
        "chain" => Source::Chain,
        s => fail(format!(
            "--source wants gltf, clusters or chain, found {s:?}"
        )),
    };
    let gltf = args.value("--gltf").map_or_else(
        || farsight_testkit::shared_meshes().join("FlightHelmet/FlightHelmet.gltf"),
        PathBuf::from,
    );
    // Absolute: Bevy resolves a relative asset folder against the executable's.
    let absolute =
        |p: &Path| std::path::absolute(p).unwrap_or_else(|e| fail(format!("{}: {e}", p.display())));
    let file = match (source, args.value("--file")) {
        (Source::Gltf, _) => absolute(&gltf),
        (_, Some(f)) => absolute(Path::new(f)),
        (_, None) => cook(&gltf, source),
    };
    if !file.exists() {
        fail(format!("{} does not exist", file.display()));
    }
    let dir = file.parent().unwrap_or(Path::new(".")).to_owned();
    let mut app = common::app_with_assets(&args, "farsight: helmet", Some(&dir));
    app.add_plugins(FarsightPlugin)
        .insert_resource(Helmet {
            source,
            file,
            tint: args.has("--tint"),
            no_textures: args.has("--no-textures"),
        })
        .add_systems(Startup, setup)
        .insert_resource(ScreenshotHold(true))
        .add_systems(
            Update,
            (
                common::fly_camera,
                toggle_tint,
                unbind_textures,
                hold_until_bound,
                spawn_gltf,
            ),
        );
    app.run();
}

/// `gltf` cooked as `source` asks into a temporary folder, its textures beside it.
fn cook(gltf: &Path, source: Source) -> PathBuf {
    let kind = match source {
        Source::Chain => CookKind::LodChain(
            LodChainConfig::default(),
            ChainRecords::Cooked(CookConfig::default()),
        ),
        _ => CookKind::Clusters(Default::default()),
    };
    let out = cook_file(gltf, &kind).unwrap_or_else(|e| fail(format!("{}: {e}", gltf.display())));
    let dir = std::env::temp_dir().join(format!("farsight-helmet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
    let file = dir.join("helmet.farsight");
    std::fs::write(&file, &out.bytes).unwrap_or_else(|e| fail(format!("{}: {e}", file.display())));
    out.looks
        .write_beside(&dir)
        .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
    file
}

fn setup(
    mut commands: Commands,
    helmet: Res<Helmet>,
    server: Res<AssetServer>,
    shot: Option<Res<Screenshot>>,
) {
    let name = helmet
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match helmet.source {
        Source::Gltf => {
            commands.insert_resource(GltfSource(server.load(name)));
        }
        Source::Chain => {
            let chain: Handle<LodChainAsset> = server.load(name);
            commands.spawn(FarsightLodChain(chain));
        }
        Source::Clusters => {
            let models = FarsightClusterModel::scene(&helmet.file)
                .unwrap_or_else(|e| fail(format!("{}: {e}", helmet.file.display())));
            for (model, t) in models {
                let model = if helmet.tint {
                    model.with_level_colors(LEVEL_TINTS.to_vec())
                } else {
                    model
                };
                commands.spawn((model, t));
            }
        }
    }
    // A key light from the upper left front and a soft fill: no shadows, so the
    // pictures compare the materials, not shadow-map sampling.
    commands.spawn((
        DirectionalLight {
            illuminance: 6000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(-1.0, 2.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 600.0,
        ..default()
    });
    commands.insert_resource(ClearColor(Color::srgb(0.1, 0.1, 0.12)));
    let (fly, t) = FlyCamera::looking(Vec3::new(0.3, 0.45, 0.95), Vec3::new(0.0, 0.34, 0.0), 0.5);
    commands.spawn(common::camera(fly, t, shot.as_deref()));
}

/// The glTF file as Bevy's loader reads it.
#[derive(Resource)]
struct GltfSource(Handle<Gltf>);

/// Spawns every primitive of the loaded glTF with the mesh and material Bevy's
/// loader made, once (the helmet's nodes have no transforms; the scene spawner is
/// left out, it needs every component type registered for reflection).
fn spawn_gltf(
    mut commands: Commands,
    source: Option<Res<GltfSource>>,
    gltfs: Res<Assets<Gltf>>,
    meshes: Res<Assets<GltfMesh>>,
    server: Res<AssetServer>,
    mut done: Local<bool>,
) {
    let (false, Some(source)) = (*done, source) else {
        return;
    };
    let Some(gltf) = gltfs.get(&source.0) else {
        return;
    };
    let Some(all) = gltf
        .meshes
        .iter()
        .map(|h| meshes.get(h))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    for p in all.iter().flat_map(|m| &m.primitives) {
        let mut e = commands.spawn(Mesh3d(p.mesh.clone()));
        // Bevy's glTF loader adds each material's `StandardMaterial` beside its
        // `GltfMaterial`, labelled `<material>/std`.
        let standard = p.material.as_ref().and_then(|m| {
            let path = server.get_path(m)?.into_owned();
            let label = format!("{}/std", path.label()?);
            Some(server.load::<StandardMaterial>(path.clone().with_label(label)))
        });
        if let Some(m) = standard {
            e.insert(MeshMaterial3d(m));
        }
    }
    *done = true;
}

/// T tints the cluster levels (a debug view), and back.
fn toggle_tint(
    keys: Res<ButtonInput<KeyCode>>,
    mut helmet: ResMut<Helmet>,
    mut models: Query<&mut FarsightClusterModel, With<ClusterCut>>,
) {
    if !keys.just_pressed(KeyCode::KeyT) {
        return;
    }
    helmet.tint = !helmet.tint;
    for mut m in &mut models {
        m.level_colors = helmet.tint.then(|| LEVEL_TINTS.to_vec());
    }
}

/// `--no-textures`: takes every texture off every material, each frame (the
/// sabotaged run).
fn unbind_textures(helmet: Res<Helmet>, mut materials: ResMut<Assets<StandardMaterial>>) {
    if !helmet.no_textures {
        return;
    }
    let ids: Vec<_> = materials
        .iter()
        .filter(|(_, m)| m.base_color_texture.is_some() || m.normal_map_texture.is_some())
        .map(|(id, _)| id)
        .collect();
    for id in ids {
        if let Some(mut m) = materials.get_mut(id) {
            m.base_color_texture = None;
            m.normal_map_texture = None;
            m.metallic_roughness_texture = None;
            m.occlusion_texture = None;
            m.emissive_texture = None;
        }
    }
}

/// Holds the screenshot until the helmet is drawn with every texture its materials
/// name loaded (a material whose image is missing is not drawn at all).
/// The first frame it finds every texture bound, it prints how long that took from
/// the model's spawn (the figure BENCHMARKS.md gives).
fn hold_until_bound(
    mut hold: ResMut<ScreenshotHold>,
    mut spawned: Local<Option<std::time::Instant>>,
    mut said: Local<bool>,
    materials: Res<Assets<StandardMaterial>>,
    images: Res<Assets<Image>>,
    drawn: Query<(), (With<Mesh3d>, With<MeshMaterial3d<StandardMaterial>>)>,
) {
    let spawned = *spawned.get_or_insert_with(std::time::Instant::now);
    let bound = |h: &Option<Handle<Image>>| h.as_ref().is_none_or(|h| images.contains(h));
    let all = materials.iter().all(|(_, m)| {
        bound(&m.base_color_texture)
            && bound(&m.normal_map_texture)
            && bound(&m.metallic_roughness_texture)
            && bound(&m.occlusion_texture)
            && bound(&m.emissive_texture)
    });
    hold.0 = drawn.is_empty() || !all;
    let textures = materials
        .iter()
        .filter(|(_, m)| m.base_color_texture.is_some())
        .count();
    if !hold.0 && !*said {
        *said = true;
        println!(
            "{} materials ({textures} textured) drawn, every texture bound, {:.0} ms after the spawn",
            materials.len(),
            spawned.elapsed().as_secs_f64() * 1000.0
        );
    }
}
