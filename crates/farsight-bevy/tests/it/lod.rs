//! Headless `App` tests of the entity LOD plugin: no window, no GPU.

use bevy::asset::AssetPlugin;
use bevy::camera::primitives::{Aabb, MeshAabb};
use bevy::camera::visibility::{NoAutoAabb, VisibleEntities};
use bevy::camera::CameraPlugin;
use bevy::ecs::message::Messages;
use bevy::mesh::MeshPlugin;
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{
    FarsightConfig, FarsightLod, FarsightLodChanged, FarsightPlugin, FarsightWorld,
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

/// Three levels of the test city's buildings (50 / 100 / 200 m:
/// docs/design/entity-lod.md, "The test city"), the finest not loaded yet.
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
        let mut s = app.world_mut().resource_mut::<FarsightConfig>();
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
    // Culled by the camera, still a shadow caster (the scene list of docs/design/visibility-pass.md).
    let scene = &fw.visibility().objects.scene;
    assert!(scene.contains(&fw.object(far).unwrap().0));

    // Settings are live: lifting the cull brings them back next frame.
    app.world_mut()
        .resource_mut::<FarsightConfig>()
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

/// The `Aabb` Bevy computes for a mesh asset.
fn own_box(app: &App, mesh: AssetId<Mesh>) -> Aabb {
    app.world()
        .resource::<Assets<Mesh>>()
        .get(mesh)
        .and_then(|m| m.compute_aabb())
        .unwrap()
}

/// The plugin keeps each LOD entity's `Aabb` itself (Bevy's `NoAutoAabb`, so a swap
/// costs Bevy no bounds pass): after every level swap, and after the drawn mesh asset
/// changes in place, it is exactly the box Bevy computes for the drawn mesh, and
/// Bevy's frustum cull decides by it. Without the LOD component Bevy keeps it again.
#[test]
fn the_kept_aabb_is_the_drawn_levels_own_box_after_every_swap() {
    let mut app = app();
    let cam = camera(&mut app);
    // Levels of different sizes and centres, so a box left from another level shows.
    let levels: Vec<Handle<Mesh>> = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        vec![
            meshes.add(Mesh::from(Cuboid::new(2.0, 12.0, 2.0))),
            meshes.add(
                Mesh::from(Cuboid::new(4.0, 1.0, 3.0)).translated_by(Vec3::new(1.5, 0.5, 0.0)),
            ),
            meshes.add(Sphere::new(1.0).mesh().ico(1).unwrap()),
        ]
    };
    let lod = FarsightLod::from_ranges(levels.iter().cloned().zip([50.0, 100.0, 200.0])).unwrap();
    let e = app
        .world_mut()
        .spawn((
            Mesh3d(levels[0].clone()),
            Transform::from_xyz(0.0, 0.0, -30.0),
            lod,
        ))
        .id();
    assert!(
        app.world().get::<NoAutoAabb>(e).is_some(),
        "required by FarsightLod"
    );
    let kept = |app: &App| *app.world().get::<Aabb>(e).unwrap();
    let mut seen = Vec::new();
    for z in [-30.0, -80.0, -150.0, -80.0, -30.0, -150.0] {
        app.world_mut()
            .get_mut::<Transform>(e)
            .unwrap()
            .translation
            .z = z;
        for _ in 0..5 {
            app.update();
        }
        let level = app
            .world()
            .resource::<FarsightWorld>()
            .lod_level(e)
            .unwrap();
        seen.push(level);
        let drawn = mesh_of(&app, e);
        assert_eq!(drawn, levels[level as usize].id());
        assert_eq!(
            kept(&app),
            own_box(&app, drawn),
            "the box of level {level} at z = {z}"
        );
        assert!(camera_sees(&app, cam, e), "in view at z = {z}");
    }
    assert_eq!(seen, [0, 1, 2, 1, 0, 2]);

    // Below the view at 150 m (its edge 150 tan 22.5 = 62.1 m down): level 0's box
    // (up to y = -60) would reach into it, the drawn level 2's (up to -65) does not.
    // farsight's own cull measures the finest level's box and keeps the entity, so
    // Bevy's cull, reading the kept box, is what drops it.
    app.world_mut().get_mut::<Transform>(e).unwrap().translation = Vec3::new(0.0, -66.0, -150.0);
    app.update();
    assert_eq!(mesh_of(&app, e), levels[2].id());
    assert!(app.world().resource::<FarsightWorld>().is_visible(e));
    assert!(!camera_sees(&app, cam, e), "the drawn level is out of view");

    // The drawn level's mesh changes in place (now up to y = -61): the box follows
    // without a swap, and the entity is back in view.
    {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        *meshes.get_mut(&levels[2]).unwrap() =
            Mesh::from(Cuboid::new(1.0, 4.0, 1.0)).translated_by(Vec3::new(0.0, 3.0, 0.0));
    }
    app.update();
    app.update();
    assert_eq!(mesh_of(&app, e), levels[2].id());
    assert_eq!(kept(&app), own_box(&app, levels[2].id()));
    assert!(
        camera_sees(&app, cam, e),
        "the changed level reaches into view"
    );

    // Without the LOD component, Bevy keeps the box again: a mesh the user swaps in
    // gets its own box from Bevy's `calculate_bounds`.
    app.world_mut().get_mut::<Transform>(e).unwrap().translation = Vec3::new(0.0, 0.0, -30.0);
    app.world_mut().entity_mut(e).remove::<FarsightLod>();
    app.update();
    assert!(app.world().get::<NoAutoAabb>(e).is_none());
    app.world_mut().get_mut::<Mesh3d>(e).unwrap().0 = levels[1].clone();
    app.update();
    assert_eq!(kept(&app), own_box(&app, levels[1].id()));
    assert!(camera_sees(&app, cam, e));
}

/// Two cameras, as a split screen or a minimap has: levels follow the camera marked
/// with `FarsightLodCamera`, whichever camera Bevy would otherwise take, and
/// follow the other one once the mark moves.
#[test]
fn the_marked_camera_chooses_the_levels_every_camera_draws() {
    use farsight_bevy::FarsightLodCamera;
    let mut app = app();
    let (near, far) = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        (cube(&mut meshes, 0.5), cube(&mut meshes, 0.6))
    };
    // The main view close to the entity, a minimap camera high above it.
    let main = app
        .world_mut()
        .spawn((Camera3d::default(), Transform::from_xyz(0.0, 0.0, 10.0)))
        .id();
    let minimap = app
        .world_mut()
        .spawn((
            Camera3d::default(),
            Camera {
                order: 1,
                ..default()
            },
            Transform::from_xyz(0.0, 150.0, 0.0).looking_at(Vec3::ZERO, Vec3::Z),
        ))
        .id();
    let e = app
        .world_mut()
        .spawn((
            Mesh3d(near.clone()),
            FarsightLod::from_ranges([(near.clone(), 40.0), (far.clone(), 400.0)]).unwrap(),
        ))
        .id();
    app.update();
    app.update();
    assert_eq!(
        mesh_of(&app, e),
        near.id(),
        "unmarked: the first camera decides"
    );
    app.world_mut()
        .entity_mut(minimap)
        .insert(FarsightLodCamera);
    app.update();
    app.update();
    assert_eq!(mesh_of(&app, e), far.id(), "the marked minimap decides");
    assert_eq!(
        app.world().resource::<FarsightWorld>().camera(),
        Some(minimap)
    );
    app.world_mut()
        .entity_mut(minimap)
        .remove::<FarsightLodCamera>();
    app.world_mut().entity_mut(main).insert(FarsightLodCamera);
    app.update();
    app.update();
    assert_eq!(
        mesh_of(&app, e),
        near.id(),
        "the mark moved back to the main view"
    );
    assert_eq!(app.world().resource::<FarsightWorld>().camera(), Some(main));
}
