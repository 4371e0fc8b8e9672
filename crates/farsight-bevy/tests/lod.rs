//! Headless `App` tests of the entity LOD plugin: no window, no GPU.

use bevy::asset::AssetPlugin;
use bevy::camera::visibility::VisibleEntities;
use bevy::camera::CameraPlugin;
use bevy::ecs::message::Messages;
use bevy::mesh::MeshPlugin;
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{
    FarsightLod, FarsightLodChanged, FarsightPlugin, FarsightSettings, FarsightWorld,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::any::TypeId;

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
        FarsightPlugin,
    ));
    app
}

fn cube(meshes: &mut Assets<Mesh>, half: f32) -> Handle<Mesh> {
    meshes.add(Mesh::from(Cuboid::new(2.0 * half, 2.0 * half, 2.0 * half)))
}

/// A camera at the origin looking down -Z.
fn camera(app: &mut App) -> Entity {
    app.world_mut()
        .spawn((Camera3d::default(), Transform::default()))
        .id()
}

/// The mirror holds exactly the entities with a mesh and a transform, each with its
/// world matrix and visibility.
fn assert_mirror_matches(app: &mut App) {
    let mut q = app
        .world_mut()
        .query::<(Entity, &GlobalTransform, &InheritedVisibility, &Mesh3d)>();
    let rows: Vec<_> = q
        .iter(app.world())
        .map(|(e, g, v, _)| (e, g.to_matrix(), v.get()))
        .collect();
    let fw = app.world().resource::<FarsightWorld>();
    assert_eq!(fw.len(), rows.len(), "mirrored entity count");
    let alive = (0..fw.store().len() as u32)
        .filter(|&i| fw.store().is_alive(farsight_view::ObjectId(i)))
        .count();
    assert_eq!(alive, rows.len(), "live objects in the store");
    for (e, world, visible) in rows {
        let o = fw
            .object(e)
            .unwrap_or_else(|| panic!("{e} is not mirrored"));
        assert_eq!(fw.entity(o), Some(e));
        assert_eq!(fw.store().world(o), Some(world), "world matrix of {e}");
        assert_eq!(fw.store().is_visible(o), visible, "visibility of {e}");
    }
}

#[test]
fn mirror_equals_world_under_random_spawns_despawns_reparenting_and_moves() {
    let mut app = app();
    camera(&mut app);
    let mesh = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        cube(&mut meshes, 0.5)
    };
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    // Roots may have children and never get a parent; children never have children.
    let mut roots: Vec<Entity> = Vec::new();
    let mut children: Vec<Entity> = Vec::new();
    let pos = |rng: &mut ChaCha8Rng| {
        Vec3::new(
            rng.random_range(-50.0..50.0),
            rng.random_range(-5.0..5.0),
            rng.random_range(-80.0..0.0),
        )
    };
    for step in 0..120 {
        for _ in 0..rng.random_range(1..12) {
            let w = app.world_mut();
            match rng.random_range(0..10) {
                0 | 1 => {
                    let t = Transform::from_translation(pos(&mut rng));
                    roots.push(w.spawn((Mesh3d(mesh.clone()), t)).id());
                }
                2 if !roots.is_empty() => {
                    let p = roots[rng.random_range(0..roots.len())];
                    let t = Transform::from_translation(pos(&mut rng) * 0.1);
                    children.push(w.spawn((Mesh3d(mesh.clone()), t, ChildOf(p))).id());
                }
                3 if !roots.is_empty() => {
                    let k = rng.random_range(0..roots.len());
                    let e = roots.swap_remove(k);
                    // Despawning a root despawns its children.
                    children.retain(|c| w.get::<ChildOf>(*c).is_none_or(|p| p.parent() != e));
                    w.despawn(e);
                }
                4 if !children.is_empty() => {
                    let e = children.swap_remove(rng.random_range(0..children.len()));
                    w.despawn(e);
                }
                5 if !children.is_empty() && !roots.is_empty() => {
                    let c = children[rng.random_range(0..children.len())];
                    if rng.random_bool(0.3) {
                        w.entity_mut(c).remove::<ChildOf>();
                    } else {
                        let p = roots[rng.random_range(0..roots.len())];
                        w.entity_mut(c).insert(ChildOf(p));
                    }
                }
                6 | 7 if !roots.is_empty() => {
                    let e = if rng.random_bool(0.5) || children.is_empty() {
                        roots[rng.random_range(0..roots.len())]
                    } else {
                        children[rng.random_range(0..children.len())]
                    };
                    let t = pos(&mut rng);
                    if let Some(mut tr) = w.get_mut::<Transform>(e) {
                        tr.translation = t;
                        tr.rotate_y(0.3);
                    }
                }
                8 if !roots.is_empty() => {
                    let e = roots[rng.random_range(0..roots.len())];
                    let v = if rng.random_bool(0.5) {
                        Visibility::Hidden
                    } else {
                        Visibility::Inherited
                    };
                    w.entity_mut(e).insert(v);
                }
                9 if !children.is_empty() => {
                    // Losing the mesh leaves the mirror; getting it back rejoins.
                    let e = children[rng.random_range(0..children.len())];
                    if w.get::<Mesh3d>(e).is_some() {
                        w.entity_mut(e).remove::<Mesh3d>();
                    } else {
                        w.entity_mut(e).insert(Mesh3d(mesh.clone()));
                    }
                }
                _ => {}
            }
        }
        app.update();
        assert_mirror_matches(&mut app);
        if step == 60 {
            assert!(app.world().resource::<FarsightWorld>().len() > 20);
        }
    }
}

fn drain_changes(app: &mut App) -> Vec<FarsightLodChanged> {
    app.world_mut()
        .resource_mut::<Messages<FarsightLodChanged>>()
        .drain()
        .collect()
}

fn mesh_of(app: &App, e: Entity) -> AssetId<Mesh> {
    app.world().get::<Mesh3d>(e).unwrap().id()
}

fn camera_sees(app: &App, cam: Entity, e: Entity) -> bool {
    app.world()
        .get::<VisibleEntities>(cam)
        .unwrap()
        .get(TypeId::of::<Mesh3d>())
        .contains(&e)
}

/// Seed 000's three levels (50 / 100 / 200 m), the finest not loaded yet.
#[test]
fn lod_swaps_mesh3d_and_falls_back_while_a_level_is_not_loaded() {
    let mut app = app();
    let cam = camera(&mut app);
    let (l0, l1, l2) = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        (
            meshes.reserve_handle(),
            cube(&mut meshes, 1.0),
            cube(&mut meshes, 1.0),
        )
    };
    let lod =
        FarsightLod::from_ranges([(l0.clone(), 50.0), (l1.clone(), 100.0), (l2.clone(), 200.0)])
            .unwrap();
    let e = app
        .world_mut()
        .spawn((
            Mesh3d(l0.clone()),
            Transform::from_xyz(0.0, 0.0, -30.0),
            lod,
        ))
        .id();
    app.update();
    // Level 0 is wanted and not loaded: the coarser level 1 stands in.
    assert_eq!(mesh_of(&app, e), l1.id());
    assert_eq!(
        drain_changes(&mut app),
        [FarsightLodChanged {
            entity: e,
            from: None,
            to: 1
        }]
    );
    let fw = app.world().resource::<FarsightWorld>();
    assert_eq!(fw.lod_level(e), Some(1));
    assert_eq!(fw.stats().lod_fallbacks, 1);
    assert!(fw.is_visible(e));

    // The streamed mesh arrives: within the LOD pass interval the entity draws it.
    app.world_mut()
        .resource_mut::<Assets<Mesh>>()
        .insert(l0.id(), Mesh::from(Cuboid::new(2.0, 2.0, 2.0)))
        .unwrap();
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(mesh_of(&app, e), l0.id());
    assert_eq!(
        drain_changes(&mut app),
        [FarsightLodChanged {
            entity: e,
            from: Some(1),
            to: 0
        }]
    );
    assert_eq!(
        app.world()
            .resource::<FarsightWorld>()
            .stats()
            .lod_fallbacks,
        0
    );

    // Moved to 150 m: level 2.
    app.world_mut()
        .get_mut::<Transform>(e)
        .unwrap()
        .translation
        .z = -150.0;
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(mesh_of(&app, e), l2.id());
    assert_eq!(
        app.world().resource::<FarsightWorld>().lod_level(e),
        Some(2)
    );
    assert_eq!(
        drain_changes(&mut app),
        [FarsightLodChanged {
            entity: e,
            from: Some(0),
            to: 2
        }]
    );

    // Level 2 unloaded: level 1 is the nearest loaded one (coarser first, then finer).
    app.world_mut()
        .resource_mut::<Assets<Mesh>>()
        .remove(l2.id());
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(mesh_of(&app, e), l1.id());
    assert!(camera_sees(&app, cam, e));
}

#[test]
fn distance_and_size_culled_entities_leave_the_cameras_list() {
    let mut app = app();
    let cam = camera(&mut app);
    let (big, small) = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        (cube(&mut meshes, 2.0), cube(&mut meshes, 0.05))
    };
    let near = app
        .world_mut()
        .spawn((Mesh3d(big.clone()), Transform::from_xyz(0.0, 0.0, -20.0)))
        .id();
    let far = app
        .world_mut()
        .spawn((Mesh3d(big.clone()), Transform::from_xyz(0.0, 0.0, -300.0)))
        .id();
    let tiny = app
        .world_mut()
        .spawn((Mesh3d(small), Transform::from_xyz(3.0, 0.0, -90.0)))
        .id();
    let behind = app
        .world_mut()
        .spawn((Mesh3d(big), Transform::from_xyz(0.0, 0.0, 40.0)))
        .id();
    app.update();
    app.update();
    for e in [near, far, tiny] {
        assert!(
            camera_sees(&app, cam, e),
            "no cull configured: {e} is drawn"
        );
    }
    assert!(
        !camera_sees(&app, cam, behind),
        "Bevy's frustum cull still runs"
    );

    {
        let mut s = app.world_mut().resource_mut::<FarsightSettings>();
        s.cull_max_distance = 200.0;
        s.cull_min_pixels = 4.0;
        s.viewport_height = Some(720.0);
    }
    app.update();
    assert!(camera_sees(&app, cam, near));
    assert!(!camera_sees(&app, cam, far), "further than 200 m");
    assert!(!camera_sees(&app, cam, tiny), "under 4 pixels");
    let fw = app.world().resource::<FarsightWorld>();
    assert!(fw.is_visible(near) && !fw.is_visible(far) && !fw.is_visible(tiny));
    // Culled by the camera, still a shadow caster (seed 002's scene list).
    let scene = &fw.visibility().objects.scene;
    assert!(scene.contains(&fw.object(far).unwrap().0));

    // Settings are live: lifting the cull brings them back next frame.
    app.world_mut()
        .resource_mut::<FarsightSettings>()
        .cull_max_distance = 0.0;
    app.update();
    assert!(camera_sees(&app, cam, far));
}

#[test]
fn removing_the_lod_component_keeps_the_entity_with_its_mesh() {
    let mut app = app();
    camera(&mut app);
    let (a, b) = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        (cube(&mut meshes, 1.0), cube(&mut meshes, 1.0))
    };
    let e = app
        .world_mut()
        .spawn((
            Mesh3d(a.clone()),
            Transform::from_xyz(0.0, 0.0, -80.0),
            FarsightLod::from_ranges([(a.clone(), 50.0), (b.clone(), 100.0)]).unwrap(),
        ))
        .id();
    app.update();
    assert_eq!(mesh_of(&app, e), b.id());
    app.world_mut().entity_mut(e).remove::<FarsightLod>();
    app.update();
    let fw = app.world().resource::<FarsightWorld>();
    let o = fw.object(e).expect("still mirrored");
    assert!(fw.store().lod(o).is_none());
    assert!(fw.is_visible(e));
    assert_mirror_matches(&mut app);
}
