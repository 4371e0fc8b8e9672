//! The terrain in rapier3d: chunk colliders on one fixed body, a ball comes to rest on
//! the surface, and an edit replaces only the changed chunks' shapes.

use std::sync::Arc;

use farsight_terrain::*;
use glam::{IVec3, Vec3};
use rapier3d::prelude::{ColliderBuilder, PhysicsWorld, RigidBodyBuilder, Vector};

fn hills() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    let p = TerrainGeneratorConfig {
        base_height: 40.0,
        hill_height: 30.0,
        caves: false,
        ..Default::default()
    };
    generate(&mut g, &p, IVec3::new(0, 0, 0), IVec3::new(1, 0, 1));
    g
}

#[test]
fn a_ball_dropped_on_the_terrain_comes_to_rest_on_it() {
    let mut grid = hills();
    // A level terrace across the chunk corner (a ball on a hillside rolls on).
    grid.set_box(
        Vec3::new(96.0, 0.0, 96.0),
        Vec3::new(163.0, 63.0, 163.0),
        Cell::full(Material::GRASS),
    )
    .unwrap();
    grid.set_box(
        Vec3::new(96.0, 64.0, 96.0),
        Vec3::new(163.0, 127.0, 163.0),
        Cell::EMPTY,
    )
    .unwrap();
    let mut cache = CollisionCache::new(1);
    cache.update(&grid);
    let mut world = PhysicsWorld::default();
    let mut terrain = RapierTerrain::new(&mut world);
    let s = terrain.sync(&mut world, &cache);
    assert_eq!(s.added, cache.colliders().count());
    assert!(s.added >= 4);
    for c in cache.colliders() {
        let h = terrain.collider(c.chunk).unwrap();
        let col = &world.colliders[h];
        assert_eq!(col.parent(), Some(terrain.body()), "one fixed terrain body");
        assert_eq!(
            (col.friction(), col.restitution()),
            (GRASS_FRICTION, GRASS_RESTITUTION)
        );
    }
    assert!(world.bodies[terrain.body()].is_fixed());

    let (x, z) = (128.0, 128.0);
    let ground = cache
        .cast_ray(Vec3::new(x, 500.0, z), Vec3::NEG_Y, 1000.0)
        .expect("terrain under the drop point")
        .point;
    let r = 2.0;
    let (ball, _) = world.insert(
        RigidBodyBuilder::dynamic().translation(Vector::new(x, ground.y + 30.0, z)),
        ColliderBuilder::ball(r),
    );
    for _ in 0..900 {
        world.step();
    }
    let b = &world.bodies[ball];
    let p = b.translation();
    let v = b.linvel();
    let under = cache
        .cast_ray(Vec3::new(p.x, p.y, p.z), Vec3::NEG_Y, 100.0)
        .expect("still above the terrain");
    eprintln!(
        "ball at {:?}, speed {:.4}, gap {:.4}",
        p,
        v.length(),
        under.distance
    );
    assert!(v.length() < 0.05, "still moving at {}", v.length());
    // On the terrace, one radius above the surface, near where it fell.
    assert!(
        (under.distance - r).abs() < 0.05,
        "gap {} for radius {r}",
        under.distance
    );
    assert!((ground.y - 64.0).abs() < 0.5, "terrace at {}", ground.y);
    assert!(
        Vec3::new(p.x - x, 0.0, p.z - z).length() < 8.0,
        "rolled to {p:?}"
    );
}

#[test]
fn after_an_edit_only_the_changed_chunks_shapes_are_replaced() {
    let mut grid = hills();
    let mut cache = CollisionCache::new(1);
    cache.update(&grid);
    let mut world = PhysicsWorld::default();
    let mut terrain = RapierTerrain::new(&mut world);
    let total = terrain.sync(&mut world, &cache).added;
    let before: Vec<_> = cache.colliders().cloned().collect();
    // A small crater in the middle of chunk (0, 0, 0).
    let top = cache
        .cast_ray(Vec3::new(64.0, 500.0, 64.0), Vec3::NEG_Y, 1000.0)
        .unwrap()
        .point;
    grid.set_sphere(top, 6.0, Material::AIR).unwrap();
    cache.update(&grid);
    let changed = before
        .iter()
        .filter(|old| {
            !cache
                .collider(old.chunk)
                .is_some_and(|c| Arc::ptr_eq(c, old))
        })
        .count();
    let s = terrain.sync(&mut world, &cache);
    assert!(changed >= 1 && changed < total, "{changed} of {total}");
    assert_eq!(s.replaced + s.removed, changed);
    assert_eq!(s.kept, total - changed);
    assert_eq!(s.added, 0);
    // Nothing changed: nothing replaced.
    let again = terrain.sync(&mut world, &cache);
    assert_eq!((again.replaced, again.added, again.removed), (0, 0, 0));
}
