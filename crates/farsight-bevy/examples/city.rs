//! The test city block of docs/design/entity-lod.md in Bevy: 500 buildings with
//! three levels each (50 / 100 / 200 m) and street lamps, drawn through
//! `FarsightPlugin`.
//!
//! `cargo run --release -p farsight-bevy --example city`
//!
//! Fly with WASD, Q/E, Shift, the mouse with the right button held. T tints the
//! levels (green level 0, yellow level 1, red level 2). `--screenshot PATH --frames N`
//! renders N frames without a window, saves a PNG and exits; `--no-tint` starts with
//! the tint off.

mod common;

use bevy::camera::RenderTarget;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::NotShadowCaster;
use bevy::prelude::*;
use common::{Args, FlyCamera, Screenshot};
use farsight_bevy::{FarsightLod, FarsightLodChanged, FarsightPlugin, FarsightWorld};
use farsight_view::{scenes, ObjectId, ObjectStore};

#[derive(Resource)]
struct Palette {
    tint: bool,
    tints: [Handle<StandardMaterial>; 3],
}

/// A building's own material, shown with the tint off.
#[derive(Component)]
struct Plain(Handle<StandardMaterial>);

fn main() {
    let args = Args::parse(&["--no-tint"]);
    let mut app = common::app(&args, "farsight: city block");
    app.add_plugins(FarsightPlugin)
        .insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.95)))
        .insert_resource(Config {
            tint: !args.has("--no-tint"),
            buildings: 500,
        })
        .add_systems(Startup, setup)
        .add_systems(Update, (common::fly_camera, toggle_tint, retint));
    app.run();
}

#[derive(Resource)]
struct Config {
    tint: bool,
    buildings: usize,
}

fn setup(
    mut commands: Commands,
    config: Res<Config>,
    shot: Option<Res<Screenshot>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    // The block exactly as farsight-view generates it for its tests and benchmarks.
    let mut store = ObjectStore::new();
    let layout = scenes::city_block(&mut store, config.buildings, 0xC17E);

    // A unit building standing on the origin: level 0 carries a roof box.
    let body = Mesh::from(Cuboid::new(1.0, 1.0, 1.0)).translated_by(Vec3::Y * 0.5);
    let mut detailed = body.clone();
    detailed
        .merge(&Mesh::from(Cuboid::new(0.5, 0.08, 0.5)).translated_by(Vec3::Y * 1.04))
        .expect("two cuboids share their attributes");
    let levels = [
        meshes.add(detailed),
        meshes.add(body.clone()),
        meshes.add(Mesh::from(Cuboid::new(1.0, 1.0, 1.0)).translated_by(Vec3::Y * 0.5)),
    ];
    let lamp = meshes.add(Mesh::from(Cylinder::new(0.5, 1.0)).translated_by(Vec3::Y * 0.5));
    let lamp_mat = materials.add(StandardMaterial {
        base_color: Color::srgb(0.95, 0.9, 0.7),
        emissive: LinearRgba::rgb(2.0, 1.8, 1.2),
        ..default()
    });
    let designs: Vec<_> = (0..layout.designs)
        .map(|d| {
            let g = 0.45 + 0.03 * d as f32;
            materials.add(Color::srgb(g, g * 0.97, g * 0.92))
        })
        .collect();
    let tints = common::level_tints(&mut materials);

    for i in 0..store.len() as u32 {
        let id = ObjectId(i);
        let world = store.world(id).expect("the block places every object");
        let b = store.bounds(id);
        let size = b.max - b.min;
        let t = Transform::from_matrix(world) * Transform::from_scale(size);
        match store.lod(id) {
            Some(lod) => {
                let design = store.material(id).0 as usize % designs.len();
                let ranges = lod.levels().iter().map(|l| l.max_distance);
                let plain = designs[design].clone();
                let first = if config.tint {
                    tints[0].clone()
                } else {
                    plain.clone()
                };
                commands.spawn((
                    Mesh3d(levels[0].clone()),
                    MeshMaterial3d(first),
                    Plain(plain),
                    t,
                    FarsightLod::from_ranges(levels.iter().cloned().zip(ranges))
                        .expect("the test city's levels are ordered"),
                ));
            }
            None => {
                commands.spawn((
                    Mesh3d(lamp.clone()),
                    MeshMaterial3d(lamp_mat.clone()),
                    t,
                    NotShadowCaster,
                ));
            }
        }
    }
    let length = layout.length();
    let ground = meshes.add(Plane3d::default().mesh().size(length * 2.5, 600.0));
    commands.spawn((
        Mesh3d(ground),
        MeshMaterial3d(materials.add(Color::srgb(0.3, 0.32, 0.3))),
        Transform::from_xyz(length * 0.5, 0.0, 0.0),
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
    // Above the street's start, looking down it: all three levels in view.
    let (fly, t) = FlyCamera::looking(
        Vec3::new(-30.0, 28.0, 6.0),
        Vec3::new(length * 0.45, 0.0, 0.0),
        30.0,
    );
    let target: RenderTarget = common::render_target(shot.as_deref());
    commands.spawn((
        Camera3d::default(),
        // A tonemapper without lookup tables: the examples build without `tonemapping_luts`.
        Tonemapping::AcesFitted,
        Msaa::Off,
        t,
        fly,
        target,
    ));
    commands.insert_resource(Palette {
        tint: config.tint,
        tints,
    });
}

fn toggle_tint(keys: Res<ButtonInput<KeyCode>>, mut palette: ResMut<Palette>) {
    if keys.just_pressed(KeyCode::KeyT) {
        palette.tint = !palette.tint;
    }
}

/// Tints follow the LOD messages; a toggle repaints every building.
fn retint(
    palette: Res<Palette>,
    fw: Res<FarsightWorld>,
    mut changes: MessageReader<FarsightLodChanged>,
    mut q: Query<(Entity, &Plain, &mut MeshMaterial3d<StandardMaterial>)>,
) {
    let paint = |level: Option<u8>, plain: &Plain| match (palette.tint, level) {
        (true, Some(l)) => palette.tints[(l as usize).min(2)].clone(),
        _ => plain.0.clone(),
    };
    if palette.is_changed() {
        for (e, plain, mut m) in &mut q {
            m.0 = paint(fw.lod_level(e), plain);
        }
        changes.clear();
        return;
    }
    for c in changes.read() {
        if let Ok((_, plain, mut m)) = q.get_mut(c.entity) {
            m.0 = paint(Some(c.to), plain);
        }
    }
}
