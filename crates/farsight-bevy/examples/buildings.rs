//! The metropolis of docs/design/baked-buildings.md in Bevy: a kit's buildings baked
//! with the default ladder (as authored to 60 m, simplified to 250 m, coarsest
//! beyond), written as cooked building files and loaded back through
//! `BuildingLoader`, each piece drawn in its band with Bevy's `VisibilityRange`.
//!
//! `cargo run --release -p farsight-bevy --example buildings`
//!
//! Pieces wear the kit's materials (its colours, roughness and metalness). Fly with
//! WASD, Q/E, Shift, the mouse with the right button held. T tints pieces by the first
//! level they draw instead (green level 0, yellow level 1, red level 2), and back.
//!
//! - `--grid N` blocks a side (default 6), `--kit corporate|dark-city`, `--seed S`:
//!   what is baked at startup into a temporary folder.
//! - `--dir DIR` reads a folder written by `farsight bake buildings` instead (cooked
//!   files when there are any, else the full ones); buildings named `KIT-I-J` stand
//!   on block (I, J).
//! - `--screenshot PATH --frames N` renders N frames without a window, saves a PNG and
//!   exits; `--tint` starts with the level tint on, `--no-kit` leaves the kit's
//!   materials out (pieces wear colours made up from their material names: the
//!   sabotaged run of `.ci/screenshots`).

mod common;

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use common::{Args, FlyCamera, Screenshot};
use farsight_bevy::{
    BuildingAsset, BuildingLevelTint, BuildingPalette, FarsightBuilding, FarsightPlugin,
};
use farsight_building::bake::{bake, ManifoldKernel};
use farsight_building::{block_origin, metropolis, uv_gradient_tangents, Kit, LodPolicy};

/// The building files to load, each with where it stands.
#[derive(Resource)]
struct City {
    files: Vec<(String, Vec3)>,
    extent: f32,
    /// The kits whose materials the buildings wear.
    kits: Vec<Kit>,
    /// A temporary folder this run baked into, removed at exit.
    temp: Option<PathBuf>,
}

fn fail(msg: String) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

fn main() {
    let args = Args::parse(&[
        "--tint", "--no-kit", "--dir=", "--grid=", "--kit=", "--seed=",
    ]);
    let (dir, mut city) = match args.value("--dir") {
        Some(d) => {
            // Absolute: Bevy resolves a relative asset folder against the executable's.
            let dir = std::path::absolute(d).unwrap_or_else(|e| fail(format!("--dir {d}: {e}")));
            let city = read_dir(&dir).unwrap_or_else(|e| fail(e));
            (dir, city)
        }
        None => {
            let grid: u32 = args.value("--grid").map_or(6, |g| {
                g.parse()
                    .ok()
                    .filter(|&n| (1..=64).contains(&n))
                    .unwrap_or_else(|| fail(format!("--grid wants 1 to 64, found {g:?}")))
            });
            let seed: u64 = args.value("--seed").map_or(4, |s| {
                s.parse()
                    .unwrap_or_else(|_| fail(format!("--seed wants a number, found {s:?}")))
            });
            let kit_name = args.value("--kit").unwrap_or("corporate");
            let kit = Kit::builtin(kit_name).unwrap_or_else(|| {
                fail(format!(
                    "--kit wants corporate or dark-city, found {kit_name:?}"
                ))
            });
            let dir =
                std::env::temp_dir().join(format!("farsight-buildings-{}", std::process::id()));
            let city = bake_city(&kit, grid, seed, &dir).unwrap_or_else(|e| fail(e));
            (dir, city)
        }
    };
    // `App::run` leaves an empty app behind: the temporary folder is taken first.
    let temp = city.temp.clone();
    if args.has("--no-kit") {
        city.kits.clear();
    }
    let mut app = common::app_with_assets(&args, "farsight: buildings", Some(&dir));
    app.add_plugins(FarsightPlugin)
        .insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.95)))
        .insert_resource(city)
        .insert_resource(BuildingLevelTint::new(args.has("--tint")))
        .add_systems(Startup, setup)
        .add_systems(
            Update,
            (
                common::fly_camera,
                common::toggle_building_tint,
                common::report_building_failures,
            ),
        );
    let exit = app.run();
    if let Some(t) = temp {
        std::fs::remove_dir_all(t).ok();
    }
    if exit.is_error() {
        std::process::exit(1);
    }
}

/// Bakes the metropolis into `dir` as cooked files (tangents from the UVs), as a
/// content step would.
fn bake_city(kit: &Kit, grid: u32, seed: u64, dir: &Path) -> Result<City, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let start = std::time::Instant::now();
    let ladder = LodPolicy::ladder();
    let mut files = Vec::new();
    for (k, b) in metropolis(kit, grid, seed).iter().enumerate() {
        let baked = bake(b, &ladder, &ManifoldKernel).map_err(|e| format!("{}: {e}", b.id))?;
        let bytes = baked
            .write_cooked(&uv_gradient_tangents)
            .map_err(|e| format!("{}: {e}", b.id))?;
        let name = format!("{}.cooked.farsight", b.id);
        let path = dir.join(&name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let (i, j) = (k as u32 % grid, k as u32 / grid);
        files.push((name, Vec3::from(block_origin(i, j))));
    }
    println!(
        "baked {} buildings of the {} kit in {:.2} s into {}",
        files.len(),
        kit.id,
        start.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(City {
        files,
        extent: grid as f32 * 60.0,
        kits: vec![kit.clone()],
        temp: Some(dir.to_path_buf()),
    })
}

/// The building files of a folder written by `farsight bake buildings`.
fn read_dir(dir: &Path) -> Result<City, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("--dir {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".farsight"))
        .collect();
    names.sort();
    let cooked = names.iter().any(|n| n.ends_with(".cooked.farsight"));
    names.retain(|n| n.ends_with(".cooked.farsight") == cooked);
    if names.is_empty() {
        return Err(format!(
            "--dir {}: no .farsight building files in it",
            dir.display()
        ));
    }
    let mut extent = 60.0f32;
    let files = names
        .into_iter()
        .map(|n| {
            let stem = n.split('.').next().unwrap_or_default();
            // KIT-I-J stands on block (I, J); anything else at the origin.
            let mut it = stem.rsplitn(3, '-');
            let (j, i) = (it.next(), it.next());
            let at = match (
                i.and_then(|i| i.parse().ok()),
                j.and_then(|j| j.parse().ok()),
            ) {
                (Some(i), Some(j)) => Vec3::from(block_origin(i, j)),
                _ => Vec3::ZERO,
            };
            extent = extent.max(at.x + 60.0).max(at.z + 60.0);
            (n, at)
        })
        .collect();
    // Whichever built-in kit baked them: their material names differ.
    let kits = ["corporate", "dark-city"]
        .into_iter()
        .filter_map(Kit::builtin)
        .collect();
    Ok(City {
        files,
        extent,
        kits,
        temp: None,
    })
}

fn setup(
    mut commands: Commands,
    city: Res<City>,
    server: Res<AssetServer>,
    shot: Option<Res<Screenshot>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut images: ResMut<Assets<Image>>,
    mut palette: ResMut<BuildingPalette>,
) {
    for kit in &city.kits {
        palette.add_kit(kit, &mut materials, &mut images);
    }
    for (name, at) in &city.files {
        let handle: Handle<BuildingAsset> = server.load(name.clone());
        commands.spawn((FarsightBuilding(handle), Transform::from_translation(*at)));
    }
    let e = city.extent;
    let ground = meshes.add(Plane3d::default().mesh().size(e * 3.0, e * 3.0));
    commands.spawn((
        Mesh3d(ground),
        MeshMaterial3d(materials.add(Color::srgb(0.3, 0.32, 0.3))),
        Transform::from_xyz(e * 0.5 - 30.0, -0.05, e * 0.5 - 30.0),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 9000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(0.0, 50.0, 0.0).looking_at(Vec3::new(-0.4, -1.0, 0.6), Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 400.0,
        ..default()
    });
    // Above the first block's corner, looking down across the city: the first
    // building within 60 m (level 0), the middle to 250 m (level 1), the far blocks
    // beyond.
    let (fly, t) = FlyCamera::looking(
        Vec3::new(-10.0, 75.0, -10.0),
        Vec3::new(e * 0.85, 0.0, e * 0.85),
        40.0,
    );
    commands.spawn(common::camera(fly, t, shot.as_deref()));
}
