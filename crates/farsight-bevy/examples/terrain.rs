//! Voxel terrain in Bevy: hills, a lake with waves, caves; fly and dig.
//!
//! `cargo run --release -p farsight-bevy --example terrain`
//!
//! Fly with WASD, Q/E, Shift, the mouse with the right button held; the left button
//! digs where the view's centre meets the ground, F fills. `--screenshot PATH
//! --frames N` renders without a window (the terrain is meshed first), saves a PNG
//! and exits.

mod common;

use std::time::Duration;

use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::prelude::*;
use common::{Args, FlyCamera, Screenshot};
use farsight_bevy::{FarsightPlugin, FarsightTerrain, TerrainEdit, TerrainOp};
use farsight_terrain::{generate, Material, TerrainGeneratorConfig, TerrainViewConfig, VoxelGrid};

#[derive(Resource)]
struct TerrainEntity(Entity);

fn main() {
    let args = Args::parse(&[]);
    let mut app = common::app(&args, "farsight: terrain");
    app.add_plugins(FarsightPlugin)
        .insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.95)))
        .add_systems(Startup, setup)
        .add_systems(Update, (common::fly_camera, dig));
    app.run();
}

fn setup(mut commands: Commands, shot: Option<Res<Screenshot>>) {
    let lake = Vec3::new(300.0, 92.0, 260.0);
    let params = TerrainGeneratorConfig {
        lake: Some((lake, 90.0)),
        ..Default::default()
    };
    let mut grid = VoxelGrid::new();
    generate(
        &mut grid,
        &params,
        IVec3::new(-2, 0, -2),
        IVec3::new(6, 1, 6),
    );
    let settings = TerrainViewConfig {
        draw_distance: 1100.0,
        ..Default::default()
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let mut terrain = FarsightTerrain::new(grid, settings, threads);
    let eye = Vec3::new(40.0, 210.0, 40.0);
    if shot.is_some() {
        // A picture of a half-meshed terrain says nothing: mesh what the view wants.
        terrain.settle(eye, Duration::from_secs(120));
    }
    let t = commands.spawn(terrain).id();
    commands.insert_resource(TerrainEntity(t));
    commands.spawn((
        DirectionalLight {
            illuminance: 10000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::default().looking_to(Vec3::new(-0.3, -1.0, -0.5), Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 500.0,
        ..default()
    });
    let (fly, tr) = FlyCamera::looking(eye, lake, 60.0);
    let projection = PerspectiveProjection {
        far: 3000.0,
        ..default()
    };
    commands.spawn((
        Camera3d::default(),
        Tonemapping::AcesFitted,
        Projection::Perspective(projection),
        Msaa::Off,
        tr,
        fly,
        common::render_target(shot.as_deref()),
    ));
}

/// Left button: carve a sphere where the view's centre hits the ground; F: fill.
fn dig(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    cam: Query<&GlobalTransform, With<FlyCamera>>,
    terrain: Res<TerrainEntity>,
    mut terrains: Query<&mut FarsightTerrain>,
    mut edits: MessageWriter<TerrainEdit>,
) {
    let carve = buttons.just_pressed(MouseButton::Left);
    let fill = keys.just_pressed(KeyCode::KeyF);
    if !carve && !fill {
        return;
    }
    let (Ok(cam), Ok(mut t)) = (cam.single(), terrains.get_mut(terrain.0)) else {
        return;
    };
    t.update_colliders();
    let Some(hit) = t
        .collision()
        .cast_ray(cam.translation(), cam.forward().as_vec3(), 2000.0)
    else {
        return;
    };
    edits.write(TerrainEdit {
        terrain: terrain.0,
        op: TerrainOp::Sphere {
            center: hit.point,
            radius: 14.0,
            material: if carve { Material::AIR } else { Material::ROCK },
        },
    });
}
