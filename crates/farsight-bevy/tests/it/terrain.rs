//! Headless tests of the terrain plugin: background meshing, publication into
//! entities, replacement after edits, and that what is shown is the current grid.

use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::ecs::message::Messages;
use bevy::mesh::{MeshPlugin, VertexAttributeValues};
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{
    FarsightPlugin, FarsightTerrain, TerrainChunk, TerrainEdit, TerrainEdited, TerrainOp,
};
use farsight_terrain::{
    generate, ChunkMesher, Material, TerrainGeneratorConfig, TerrainViewConfig, VoxelGrid,
};

fn app() -> (App, Entity) {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        FarsightPlugin,
    ));
    let mut grid = VoxelGrid::new();
    let params = TerrainGeneratorConfig {
        base_height: 40.0,
        hill_height: 30.0,
        caves: false,
        ..Default::default()
    };
    generate(
        &mut grid,
        &params,
        IVec3::new(-1, 0, -1),
        IVec3::new(1, 0, 1),
    );
    let settings = TerrainViewConfig {
        draw_distance: 400.0,
        ..Default::default()
    };
    let terrain = app
        .world_mut()
        .spawn(FarsightTerrain::new(grid, settings, 2))
        .id();
    app.world_mut()
        .spawn((Camera3d::default(), Transform::from_xyz(0.0, 120.0, 0.0)));
    (app, terrain)
}

/// Frames until the view has nothing pending and every published chunk has its
/// entity.
fn settle(app: &mut App, terrain: Entity) {
    for _ in 0..400 {
        app.update();
        let cam = Vec3::new(0.0, 120.0, 0.0);
        let mut t = app.world_mut().get_mut::<FarsightTerrain>(terrain).unwrap();
        if t.settle(cam, Duration::from_millis(50)) {
            app.update();
            return;
        }
    }
    panic!("the terrain never settled");
}

/// Every chunk entity draws exactly what meshing the current grid gives at its
/// level: nothing stale, nothing missing.
fn assert_shown_is_current(app: &mut App, terrain: Entity) -> usize {
    let mut q = app.world_mut().query::<(Entity, &TerrainChunk, &Mesh3d)>();
    let rows: Vec<_> = q
        .iter(app.world())
        .map(|(e, c, m)| (e, *c, m.0.clone()))
        .collect();
    let t = app.world().get::<FarsightTerrain>(terrain).unwrap();
    let meshes = app.world().resource::<Assets<Mesh>>();
    let mut mesher = ChunkMesher::new();
    assert_eq!(rows.len(), t.shown_chunks().count());
    for (e, c, h) in &rows {
        assert_eq!(c.terrain, terrain);
        let want = mesher.mesh(t.grid(), c.chunk, c.level);
        let shown = t.chunk_mesh(c.chunk).unwrap();
        assert_eq!(shown.vertices, want.vertices, "chunk {} is stale", c.chunk);
        assert_eq!(shown.indices, want.indices);
        let mesh = meshes.get(h).expect("uploaded");
        let Some(VertexAttributeValues::Float32x3(p)) = mesh.attribute(Mesh::ATTRIBUTE_POSITION)
        else {
            panic!("{e} has no positions");
        };
        assert_eq!(p.len(), want.vertices.len());
        assert_eq!(mesh.indices().unwrap().len(), want.indices.len());
    }
    rows.len()
}

#[test]
fn published_chunks_become_entities_and_edits_replace_them() {
    let (mut app, terrain) = app();
    settle(&mut app, terrain);
    let n = assert_shown_is_current(&mut app, terrain);
    assert!(n >= 9, "the 3x3 chunks of ground are drawn, found {n}");

    let chunk = IVec3::ZERO;
    let entity = app
        .world()
        .get::<FarsightTerrain>(terrain)
        .unwrap()
        .shown_chunks()
        .find(|(c, _)| *c == chunk)
        .map(|(_, e)| e)
        .unwrap();
    let before = app
        .world()
        .get::<FarsightTerrain>(terrain)
        .unwrap()
        .chunk_mesh(chunk)
        .unwrap()
        .clone();

    // Dig a crater, then at once fill part of it: only the second result may show.
    let centre = Vec3::new(64.0, 40.0, 64.0);
    for (radius, material) in [(20.0, Material::AIR), (8.0, Material::ROCK)] {
        app.world_mut().write_message(TerrainEdit {
            terrain,
            op: TerrainOp::Sphere {
                center: centre,
                radius,
                material,
            },
        });
    }
    // A refused edit changes nothing and says why.
    app.world_mut().write_message(TerrainEdit {
        terrain,
        op: TerrainOp::Sphere {
            center: Vec3::NAN,
            radius: 3.0,
            material: Material::AIR,
        },
    });
    settle(&mut app, terrain);
    let results: Vec<_> = app
        .world_mut()
        .resource_mut::<Messages<TerrainEdited>>()
        .drain()
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results[0]
        .result
        .as_ref()
        .is_ok_and(|r| r.cells_changed > 0));
    assert!(results[1].result.is_ok());
    assert!(results[2].result.is_err());

    assert_shown_is_current(&mut app, terrain);
    let t = app.world().get::<FarsightTerrain>(terrain).unwrap();
    let after = t.chunk_mesh(chunk).unwrap();
    assert_ne!(after.vertices, before.vertices, "the crater is drawn");
    let same_entity = t.shown_chunks().find(|(c, _)| *c == chunk).map(|(_, e)| e);
    assert_eq!(
        same_entity,
        Some(entity),
        "a replaced mesh keeps its entity"
    );

    // Colliders for a physics plugin follow the same grid.
    let mut t = app.world_mut().get_mut::<FarsightTerrain>(terrain).unwrap();
    t.update_colliders();
    assert!(t.colliders().count() >= 9);
}
