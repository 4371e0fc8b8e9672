//! Collision meshes and the collision cache.

use std::collections::HashMap;
use std::sync::Arc;

use farsight_terrain::*;
use glam::{IVec3, Vec3};

use crate::common::flat_world;

#[test]
fn flat_terrain_collision_halves_triangles_without_t_junctions() {
    let g = flat_world();
    let mut m = CollisionMesher::new();
    let full = m.unreduced_triangles(&g, IVec3::ZERO);
    let mesh = m.build(&g, IVec3::ZERO).clone();
    assert!(full > 1000);
    assert!(
        mesh.indices.len() * 2 <= full,
        "{} of {full} triangles",
        mesh.indices.len()
    );
    // Every edge is used by one or two triangles; twice means opposite directions;
    // once only on the chunk's outer rim (no T-junction inside).
    let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
    for t in &mesh.indices {
        for k in 0..3 {
            *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
        }
    }
    let mut interior = 0;
    for (&(a, b), &n) in &directed {
        assert_eq!(n, 1, "directed edge used twice");
        if directed.contains_key(&(b, a)) {
            interior += 1;
            continue;
        }
        for v in [a, b] {
            let p = Vec3::from(mesh.vertices[v as usize]);
            let rim = p.x < 4.0 || p.x > 124.0 || p.z < 4.0 || p.z > 124.0;
            assert!(rim, "open edge inside the chunk at {p}");
        }
    }
    assert!(interior > 100);
    // Vertices are unique (merged).
    let mut seen = std::collections::HashSet::new();
    for v in &mesh.vertices {
        assert!(seen.insert(v.map(f32::to_bits)), "duplicate vertex {v:?}");
    }
    // Every triangle faces up, flat at the surface height.
    for t in &mesh.indices {
        let [a, b, c] = t.map(|i| Vec3::from(mesh.vertices[i as usize]));
        assert!((b - a).cross(c - a).y > 0.0);
        assert!((a.y - 52.0).abs() < 1e-3);
    }
}

#[test]
fn curved_terrain_collision_is_watertight_between_patches() {
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig {
            caves: false,
            ..Default::default()
        },
        IVec3::new(-1, 0, -1),
        IVec3::new(1, 2, 1),
    );
    g.set_box(
        Vec3::new(20.0, 0.0, 20.0),
        Vec3::new(100.0, 120.0, 100.0),
        Cell::EMPTY,
    )
    .unwrap();
    g.set_box(
        Vec3::new(20.0, 0.0, 20.0),
        Vec3::new(100.0, 100.0, 100.0),
        Cell::full(Material::ROCK),
    )
    .unwrap();
    let mut m = CollisionMesher::new();
    for y in 0..3 {
        let mesh = m.build(&g, IVec3::new(0, y, 0)).clone();
        let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
        for t in &mesh.indices {
            for k in 0..3 {
                *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        for &(a, b) in directed.keys() {
            if !directed.contains_key(&(b, a)) {
                let p =
                    Vec3::from(mesh.vertices[a as usize]) - Vec3::new(0.0, y as f32 * 128.0, 0.0);
                let rim = p.min_element() < 4.0 || p.max_element() > 124.0;
                assert!(rim, "open edge inside chunk y={y} at {p}");
            }
        }
    }
}

#[test]
fn cache_rebuilds_only_what_changed_and_answers_queries() {
    let mut g = flat_world();
    let mut cache = CollisionCache::new(1);
    let first = cache.update(&g);
    assert!(first.full_refresh && first.parallel);
    assert_eq!(cache.version(), (g.generation(), g.revision()));
    let keep = cache.collider(IVec3::new(2, 0, 2)).unwrap().clone();
    let edited = cache.collider(IVec3::ZERO).unwrap().clone();
    // An interior edit: one chunk rebuilds, the others keep their shapes.
    g.set_sphere(Vec3::new(64.0, 52.0, 64.0), 10.0, Material::AIR)
        .unwrap();
    let up = cache.update(&g);
    assert_eq!(
        (up.rebuilt, up.full_refresh, up.parallel),
        (1, false, false)
    );
    assert!(Arc::ptr_eq(
        &keep,
        cache.collider(IVec3::new(2, 0, 2)).unwrap()
    ));
    assert!(!Arc::ptr_eq(&edited, cache.collider(IVec3::ZERO).unwrap()));
    assert_eq!(
        cache.update(&g),
        CacheUpdate::default(),
        "nothing new, nothing rebuilt"
    );
    // Rays: the flat floor at 52, the crater deeper.
    let hit = cache
        .cast_ray(Vec3::new(200.0, 300.0, 30.0), Vec3::NEG_Y, 1000.0)
        .unwrap();
    assert!((hit.point.y - 52.0).abs() < 1e-3, "{hit:?}");
    assert!(hit.normal.y > 0.99);
    let crater = cache
        .cast_ray(Vec3::new(64.0, 300.0, 64.0), Vec3::NEG_Y, 1000.0)
        .unwrap();
    assert!(crater.point.y < 46.0, "{crater:?}");
    assert!(cache
        .cast_ray(Vec3::new(64.0, 300.0, 64.0), Vec3::Y, 1000.0)
        .is_none());
    // Spheres.
    assert!(cache
        .sphere_contact(Vec3::new(200.0, 55.0, 30.0), 4.0)
        .is_some());
    assert!(cache
        .sphere_contact(Vec3::new(200.0, 60.0, 30.0), 4.0)
        .is_none());
    // A border edit reaches the neighbour; a large edit builds in parallel.
    g.set_box(
        Vec3::new(120.0, 40.0, 40.0),
        Vec3::new(127.0, 60.0, 50.0),
        Cell::EMPTY,
    )
    .unwrap();
    let up = cache.update(&g);
    assert_eq!(up.rebuilt, 2, "edit near the x face rebuilds both sides");
    g.set_box(
        Vec3::new(-300.0, 40.0, -300.0),
        Vec3::new(400.0, 60.0, 400.0),
        Cell::full(Material::SAND),
    )
    .unwrap();
    assert!(cache.update(&g).parallel);
}

#[test]
fn an_edit_two_cells_from_a_face_leaves_the_neighbours_collider_alone() {
    // A collision mesh reads one cell past each face (no normals), so an edit two
    // cells inside chunk 0 must not rebuild chunk (1, 0, 0): rebuilding it was a
    // wasted full-detail build on the frame of every edit near a face.
    let mut g = flat_world();
    let mut cache = CollisionCache::new(1);
    cache.update(&g);
    let neighbour = IVec3::new(1, 0, 0);
    let before = cache.collider(neighbour).unwrap().clone();
    let edited = cache.collider(IVec3::ZERO).unwrap().clone();
    for y in [11, 12] {
        g.set_cell(IVec3::new(CHUNK_CELLS - 2, y, 10), Cell::EMPTY);
    }
    let up = cache.update(&g);
    assert_eq!((up.rebuilt, up.removed), (1, 0), "{up:?}");
    assert!(!Arc::ptr_eq(&edited, cache.collider(IVec3::ZERO).unwrap()));
    assert!(Arc::ptr_eq(&before, cache.collider(neighbour).unwrap()));
    // And the kept collider is what a fresh build of the edited grid makes.
    let mut fresh = CollisionCache::new(2);
    fresh.update(&g);
    let (kept, new) = (
        cache.collider(neighbour).unwrap(),
        fresh.collider(neighbour).unwrap(),
    );
    assert_eq!(kept.triangles, new.triangles);
    assert_eq!(kept.shape.bounds(), new.shape.bounds());
    for i in 0..40 {
        let o = Vec3::new(124.0 + i as f32 * 0.5, 80.0, 36.0 + (i % 7) as f32 * 1.3);
        let (a, b) = (
            cache.cast_ray(o, Vec3::NEG_Y, 100.0),
            fresh.cast_ray(o, Vec3::NEG_Y, 100.0),
        );
        assert_eq!(a.map(|h| h.point), b.map(|h| h.point), "ray at {o}");
    }
}

/// Meshes to query: a hilly chunk with caves (small triangles), flat ground (large
/// fan triangles), and a crater.
fn query_shapes() -> Vec<ChunkShape> {
    let mut hills = VoxelGrid::new();
    generate(
        &mut hills,
        &TerrainGeneratorConfig::default(),
        IVec3::new(0, 0, 0),
        IVec3::new(0, 1, 0),
    );
    let mut flat = flat_world();
    let mut m = CollisionMesher::new();
    let mut out = Vec::new();
    for y in 0..2 {
        if let Some(c) = m.build_collider(&hills, IVec3::new(0, y, 0)) {
            out.push(c.shape);
        }
    }
    out.push(m.build_collider(&flat, IVec3::ZERO).unwrap().shape);
    flat.set_sphere(Vec3::new(64.0, 52.0, 64.0), 30.0, Material::AIR)
        .unwrap();
    out.push(m.build_collider(&flat, IVec3::ZERO).unwrap().shape);
    assert!(out.len() >= 3);
    out
}

#[test]
fn grid_queries_match_a_scan_of_every_triangle() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut hits = 0;
    for shape in query_shapes() {
        let b = shape.bounds().padded(Vec3::splat(40.0));
        let parry = shape.to_trimesh().expect("parry accepts the mesh");
        let mut disagree = 0;
        let rays = 1500;
        for i in 0..rays {
            let o = b.min + (b.max - b.min) * Vec3::from(rng.random::<[f32; 3]>());
            let mut d = Vec3::from(rng.random::<[f32; 3]>()) * 2.0 - 1.0;
            if i % 2 == 0 {
                // Aimed at a vertex (with a little jitter): grazing hits near edges.
                let v = shape.vertex(rng.random_range(0..shape.vertex_count() as u32));
                let jitter = (Vec3::from(rng.random::<[f32; 3]>()) - 0.5) * 0.2;
                d = (v + jitter - o) * rng.random_range(0.2..1.0);
            }
            if i % 8 == 1 {
                // Axis-parallel rays: zero components exercise the slab and DDA edges.
                let a = rng.random_range(0..3);
                d = Vec3::ZERO;
                d[a] = if rng.random() { 1.5 } else { -0.5 };
            }
            let max_t = if i % 5 == 0 {
                f32::INFINITY
            } else {
                rng.random_range(0.0..400.0)
            };
            let fast = shape.cast_ray(o, d, max_t);
            let slow = shape.cast_ray_linear(o, d, max_t);
            assert_eq!(
                fast.map(|h| h.t),
                slow.map(|h| h.t),
                "ray {o} {d} max {max_t}"
            );
            if let Some(h) = fast {
                hits += 1;
                assert!((h.normal.length() - 1.0).abs() < 1e-4);
            }
            // An independent implementation: parry's ray cast on its own TriMesh.
            let ray = parry3d::query::Ray::new(
                parry3d::math::Vector::new(o.x, o.y, o.z),
                parry3d::math::Vector::new(d.x, d.y, d.z),
            );
            use parry3d::query::RayCast;
            let p = parry.cast_local_ray(&ray, max_t, true);
            match (fast, p) {
                (Some(a), Some(t)) if (a.t - t).abs() <= 1e-3 * (1.0 + t) => {}
                (None, None) => {}
                _ => disagree += 1,
            }
        }
        assert!(
            disagree * 200 <= rays,
            "{disagree} of {rays} rays differ from parry"
        );
        for _ in 0..500 {
            let c = b.min + (b.max - b.min) * Vec3::from(rng.random::<[f32; 3]>());
            let r = rng.random_range(0.0..30.0);
            let fast = shape.closest_within(c, r);
            let slow = shape.closest_within_linear(c, r);
            assert_eq!(fast.map(|x| x.1), slow.map(|x| x.1), "sphere {c} r {r}");
        }
    }
    assert!(hits > 2500, "only {hits} hits");
}

#[test]
fn queries_with_nan_or_infinite_input_hit_nothing() {
    let shape = &query_shapes()[0];
    let c = shape.bounds().center();
    for (o, d, t) in [
        (c, Vec3::new(f32::NAN, -1.0, 0.0), 100.0),
        (Vec3::new(f32::INFINITY, 0.0, 0.0), Vec3::NEG_Y, 100.0),
        (c, Vec3::NEG_Y, f32::NAN),
        (c, Vec3::ZERO, 100.0),
    ] {
        assert!(shape.cast_ray(o, d, t).is_none(), "{o} {d} {t}");
    }
    let _ = shape.closest_within(Vec3::NAN, 5.0);
    let _ = shape.closest_within(c, f32::NAN);
}

#[test]
fn collision_meshes_have_unique_vertices_and_no_degenerate_triangles() {
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::new(-1, 0, -1),
        IVec3::new(0, 1, 0),
    );
    let mut m = CollisionMesher::new();
    let mut total = 0;
    for c in g.chunk_coords().collect::<Vec<_>>() {
        let mesh = m.build(&g, c).clone();
        let mut seen = std::collections::HashSet::new();
        for v in &mesh.vertices {
            assert!(seen.insert(v.map(f32::to_bits)), "duplicate vertex {v:?}");
        }
        for t in &mesh.indices {
            assert!(t[0] != t[1] && t[1] != t[2] && t[0] != t[2]);
            assert!(t.iter().all(|&i| (i as usize) < mesh.vertices.len()));
        }
        total += mesh.indices.len();
    }
    assert!(total > 10_000);
}

#[test]
fn collision_builds_are_deterministic_serial_or_parallel() {
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::new(-1, 0, -1),
        IVec3::new(1, 1, 1),
    );
    // Parallel (a full refresh of many chunks) against one reused serial mesher.
    let mut cache = CollisionCache::new(1);
    assert!(cache.update(&g).parallel);
    let mut m = CollisionMesher::new();
    let mut n = 0;
    for col in cache.colliders() {
        let again = m.build_collider(&g, col.chunk).unwrap();
        assert_eq!(
            again.shape.vertices().collect::<Vec<_>>(),
            col.shape.vertices().collect::<Vec<_>>(),
            "chunk {}",
            col.chunk
        );
        assert_eq!(
            again.shape.triangles().collect::<Vec<_>>(),
            col.shape.triangles().collect::<Vec<_>>(),
            "chunk {}",
            col.chunk
        );
        n += 1;
    }
    assert!(n > 10);
}

/// Issue 16 part 5: the heap bytes of the colliders of the CLI's terrain (same
/// generator, same lake), headers and map slots included, against its cells: at most
/// as many. 16-bit corners and grid lists took them from 2.5x the cells to 1.6x at
/// the CLI's default size; 16-bit positions and the implicit tree (no triangle
/// listed twice) to below 1x. `FARSIGHT_TERRAIN_SIZE` sets the side in chunks (the
/// CLI's default is 24; CI runs 6).
#[test]
fn collider_memory_stays_within_the_cells_memory() {
    let size: i32 = std::env::var("FARSIGHT_TERRAIN_SIZE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let half = size as f32 * CHUNK_SIZE * 0.5;
    let params = TerrainGeneratorConfig {
        lake: Some((Vec3::new(half * 0.6, 110.0, half * 0.4), 140.0)),
        ..Default::default()
    };
    let mut grid = VoxelGrid::new();
    for z in 0..size {
        for x in 0..size {
            for y in -1..2 {
                generate_chunk(&mut grid, &params, IVec3::new(x, y, z));
            }
        }
    }
    let mut cache = CollisionCache::new(2);
    cache.update(&grid);
    let (cells, colliders) = (grid.heap_bytes(), cache.heap_bytes());
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let parts = cache.heap_breakdown();
    let (mut vertices, mut triangles) = (0, 0);
    for c in cache.colliders() {
        vertices += c.shape.vertex_count();
        triangles += c.shape.triangle_count();
    }
    eprintln!(
        "size {size}: cells {:.1} MiB, colliders {:.1} MiB ({:.2}x; {} colliders, {vertices} \
         vertices, {triangles} triangles): positions {:.1}, corners {:.1}, tree {:.1}, \
         headers and map {:.1}",
        mib(cells),
        mib(colliders),
        colliders as f64 / cells as f64,
        cache.len(),
        mib(parts.positions),
        mib(parts.triangles),
        mib(parts.tree),
        mib(colliders - parts.total()),
    );
    assert!(colliders > 0);
    assert!(
        colliders <= cells,
        "colliders {:.1} MiB > the cells' {:.1} MiB",
        mib(colliders),
        mib(cells)
    );
}

/// Colliders hold 16-bit positions on a world-aligned lattice of 1/256 unit: every
/// vertex stays within half a step of the extracted mesh, a vertex that two chunks
/// both build rounds to the same point in each (no crack at a seam), and rays
/// against the rounded shape answer as parry does on the unrounded mesh.
#[test]
fn rounded_positions_stay_on_the_mesh_and_agree_across_chunk_seams() {
    use parry3d::query::RayCast;
    use rand::{Rng, SeedableRng};
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::new(0, 0, 0),
        IVec3::new(1, 1, 1),
    );
    let mut m = CollisionMesher::new();
    let mut rounded: HashMap<[u32; 3], [u32; 3]> = HashMap::new();
    let (mut shared, mut rays, mut disagree) = (0, 0, 0);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for c in g.chunk_coords().collect::<Vec<_>>() {
        let mesh = m.build(&g, c).clone();
        if mesh.is_empty() {
            continue;
        }
        let shape = ChunkShape::new(mesh.vertices.clone(), mesh.indices.clone());
        assert_eq!(shape.vertex_count(), mesh.vertices.len());
        for (i, &v) in mesh.vertices.iter().enumerate() {
            let q = shape.vertex(i as u32);
            assert!(
                (q - Vec3::from(v)).abs().max_element() <= 1.0 / 512.0 + 1e-5,
                "{v:?} rounds to {q}"
            );
            let bits = q.to_array().map(f32::to_bits);
            if let Some(before) = rounded.insert(v.map(f32::to_bits), bits) {
                assert_eq!(before, bits, "{v:?} at a seam");
                shared += 1;
            }
        }
        let exact = parry3d::shape::TriMesh::new(
            mesh.vertices
                .iter()
                .map(|p| parry3d::math::Vector::new(p[0], p[1], p[2]))
                .collect(),
            mesh.indices.clone(),
        )
        .unwrap();
        let b = shape.bounds().padded(Vec3::splat(20.0));
        for _ in 0..400 {
            let o = b.min + (b.max - b.min) * Vec3::from(rng.random::<[f32; 3]>());
            let d = Vec3::from(rng.random::<[f32; 3]>()) * 2.0 - 1.0;
            let ray = parry3d::query::Ray::new(
                parry3d::math::Vector::new(o.x, o.y, o.z),
                parry3d::math::Vector::new(d.x, d.y, d.z),
            );
            rays += 1;
            match (
                shape.cast_ray(o, d, 300.0),
                exact.cast_local_ray(&ray, 300.0, true),
            ) {
                (Some(a), Some(t)) if (a.t - t).abs() * d.length() <= 0.01 => {}
                (None, None) => {}
                _ => disagree += 1,
            }
        }
    }
    assert!(shared > 100, "only {shared} vertices on seams");
    assert!(
        disagree * 200 <= rays,
        "{disagree} of {rays} rays differ from the unrounded mesh"
    );
}

/// A ranged cache (issue 14): it holds only the chunks built into it, each equal to
/// the whole-grid cache's collider, chunks without surface held as known empty; an
/// edit rebuilds the held chunks it reaches and adds none (never a stale collider);
/// an evicted chunk costs nothing.
#[test]
fn a_ranged_cache_holds_what_it_built_and_refreshes_it_after_an_edit() {
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::new(-2, -1, -2),
        IVec3::new(2, 1, 2),
    );
    let same = |a: &ChunkCollider, b: &ChunkCollider| {
        a.shape.vertices().eq(b.shape.vertices()) && a.shape.triangles().eq(b.shape.triangles())
    };
    let mut full = CollisionCache::new(1);
    full.update(&g);
    let wanted: Vec<IVec3> = (-1..=0)
        .flat_map(|x| (-1..=1).flat_map(move |y| (-1..=0).map(move |z| IVec3::new(x, y, z))))
        .collect();
    let mut ranged = CollisionCache::new(1);
    let report = ranged.build(&g, &wanted);
    assert!(report.parallel, "more than 8 chunks build in parallel");
    assert!(ranged.len() < full.len() && !ranged.is_empty());
    for &c in &wanted {
        assert!(ranged.holds(c), "chunk {c} held");
        match (full.collider(c), ranged.collider(c)) {
            (Some(a), Some(b)) => assert!(same(a, b), "chunk {c}"),
            (None, None) => assert!(ranged.bytes_of(c) > 0, "a known-empty chunk is counted"),
            _ => panic!("chunk {c}: the ranged cache disagrees with the full one"),
        }
    }
    assert!(!ranged.holds(IVec3::new(2, 0, 2)));
    let total: usize = ranged.held().map(|c| ranged.bytes_of(c)).sum();
    assert!(total <= ranged.heap_bytes());

    // Carve at a held chunk's corner: every held chunk it reaches is rebuilt (equal
    // to a fresh full cache), the unheld neighbours stay unheld.
    let ground = TerrainGeneratorConfig::default().height(0.0, 0.0);
    g.set_sphere(Vec3::new(0.0, ground, 0.0), 40.0, Material::AIR)
        .unwrap();
    let held = ranged.held().count();
    let up = ranged.refresh(&g);
    assert!(up.rebuilt > 0 && !up.full_refresh, "{up:?}");
    full.update(&g);
    for &c in &wanted {
        match (full.collider(c), ranged.collider(c)) {
            (Some(a), Some(b)) => assert!(same(a, b), "chunk {c} after the edit"),
            (None, None) => {}
            _ => panic!("chunk {c}: stale after the edit"),
        }
    }
    assert_eq!(
        ranged.held().count(),
        held,
        "the refresh added no chunk and dropped none"
    );
    assert_eq!(ranged.refresh(&g), CacheUpdate::default(), "current");

    let c = ranged.colliders().next().unwrap().chunk;
    let (bytes, heap) = (ranged.bytes_of(c), ranged.heap_bytes());
    let freed = ranged.evict(c);
    assert!(freed > 0 && freed < bytes, "the slot stays as capacity");
    assert_eq!(ranged.heap_bytes(), heap - freed);
    assert!(!ranged.holds(c) && ranged.bytes_of(c) == 0);
}
