//! Headless test of the regions plugin: real region files on disk, read by the
//! loader threads, entities spawned, shown and despawned around a streaming source.

use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::mesh::MeshPlugin;
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{FarsightPlugin, FarsightRegions, FarsightStreamingSource, RegionEntity};
use farsight_geom::Aabb;
use farsight_stream::region::{write_scene, EntityRecord, RegionSpec, RegionState};

fn region(name: &str, x: f32, n: u32) -> RegionSpec {
    RegionSpec {
        name: name.into(),
        bounds: Aabb::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 100.0, 20.0, 100.0)),
        authored: RegionState::Unloaded,
        entities: (0..n)
            .map(|i| EntityRecord {
                id: i,
                model: i % 3,
                position: Vec3::new(x + 10.0 + i as f32, 0.0, 50.0),
                scale: 1.0,
            })
            .collect(),
    }
}

fn members(app: &mut App) -> Vec<(u32, Visibility)> {
    let mut q = app.world_mut().query::<(&RegionEntity, &Visibility)>();
    let mut v: Vec<_> = q.iter(app.world()).map(|(r, v)| (r.region, *v)).collect();
    v.sort_by_key(|r| r.0);
    v
}

/// Members of the streamed regions (region 0, the base, stays resident).
fn streamed(app: &mut App) -> Vec<(u32, Visibility)> {
    members(app).into_iter().filter(|m| m.0 != 0).collect()
}

/// Runs frames (waiting for the loader between them) until `done` holds.
fn run_until(app: &mut App, mut done: impl FnMut(&mut App) -> bool) {
    for _ in 0..200 {
        app.update();
        if done(app) {
            return;
        }
        app.world()
            .resource::<FarsightRegions>()
            .wait_for_io(Duration::from_millis(20));
    }
    panic!(
        "the regions never reached the expected state: {:?}",
        members(app)
    );
}

#[test]
fn regions_spawn_around_a_source_and_despawn_when_it_leaves() {
    let dir = std::env::temp_dir().join(format!("farsight-bevy-regions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Region 0 is the base region, resident whenever another is loaded
    // (docs/design/region-streaming-and-cluster-lod.md, "Region states"); the
    // streamed ones follow.
    let index = write_scene(
        &dir,
        &[
            region("base", -5000.0, 1),
            region("west", 0.0, 7),
            region("east", 1000.0, 5),
        ],
    )
    .unwrap();

    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        FarsightPlugin,
    ));
    app.insert_resource(FarsightRegions::open(&index, 2).unwrap());
    let source = app
        .world_mut()
        .spawn((
            FarsightStreamingSource::active(60.0),
            Transform::from_xyz(50.0, 0.0, 50.0),
        ))
        .id();
    run_until(&mut app, |app| {
        let m = streamed(app);
        m.len() == 7 && m.iter().all(|&(r, v)| r == 1 && v == Visibility::Inherited)
    });
    let west = app
        .world()
        .resource::<FarsightRegions>()
        .entities(1)
        .to_vec();
    assert_eq!(west.len(), 7);
    let t = app.world().get::<Transform>(west[3]).unwrap();
    assert_eq!(t.translation, Vec3::new(13.0, 0.0, 50.0));

    // The source flies east: the west region's entities go, the east region's come.
    app.world_mut()
        .get_mut::<Transform>(source)
        .unwrap()
        .translation
        .x = 1050.0;
    run_until(&mut app, |app| {
        let m = streamed(app);
        m.len() == 5 && m.iter().all(|&(r, v)| r == 2 && v == Visibility::Inherited)
    });
    for e in west {
        assert!(
            app.world().get_entity(e).is_err(),
            "{e} outlived its region"
        );
    }
    assert!(app
        .world()
        .resource::<FarsightRegions>()
        .entities(1)
        .is_empty());
    let errors = app
        .world()
        .resource::<FarsightRegions>()
        .with_world(|w| w.errors().len());
    assert_eq!(errors, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
