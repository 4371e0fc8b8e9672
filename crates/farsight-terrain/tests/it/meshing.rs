//! Render meshing across chunk borders: seams, skirts, materials.

use std::collections::HashMap;

use farsight_terrain::*;
use glam::{IVec3, Vec3};

fn hills() -> TerrainGeneratorConfig {
    TerrainGeneratorConfig {
        base_height: 40.0,
        hill_height: 70.0,
        hill_scale: 150.0,
        caves: false,
        ..Default::default()
    }
}

fn world(params: &TerrainGeneratorConfig, max: IVec3) -> VoxelGrid {
    let mut g = VoxelGrid::new();
    generate(&mut g, params, IVec3::ZERO, max);
    g
}

fn key(p: [f32; 3]) -> [u32; 3] {
    p.map(f32::to_bits)
}

#[test]
fn no_crack_between_equal_level_neighbours() {
    let params = TerrainGeneratorConfig {
        caves: true,
        base_height: 70.0,
        ..hills()
    };
    let g = world(&params, IVec3::new(2, 1, 2));
    let mut mesher = ChunkMesher::new();
    for level in 0..LEVELS {
        // Every edge of the union of all chunk meshes (welded by bit-identical
        // positions) must be used by an even number of triangles, except on the
        // outer boundary of the meshed block.
        let mut edges: HashMap<([u32; 3], [u32; 3]), u32> = HashMap::new();
        let mut tris = 0;
        for z in 0..3 {
            for y in 0..2 {
                for x in 0..3 {
                    let m = mesher.mesh(&g, IVec3::new(x, y, z), level);
                    for t in m.surface_indices().chunks_exact(3) {
                        tris += 1;
                        for k in 0..3 {
                            let a = key(m.vertices[t[k] as usize].position);
                            let b = key(m.vertices[t[(k + 1) % 3] as usize].position);
                            *edges.entry((a.min(b), a.max(b))).or_default() += 1;
                        }
                    }
                }
            }
        }
        assert!(tris > 200, "level {level}: {tris} triangles");
        let s = (1 << level) as f32 * CELL_SIZE;
        let near_outer = |p: [u32; 3]| {
            let p = Vec3::from(p.map(f32::from_bits));
            let (lo, hi) = (Vec3::splat(0.0), Vec3::new(3.0, 2.0, 3.0) * CHUNK_SIZE);
            (p - lo).min_element() < 1.5 * s || (hi - p).min_element() < 1.5 * s
        };
        for ((a, b), n) in edges {
            assert!(
                n % 2 == 0 || (near_outer(a) && near_outer(b)),
                "level {level}: crack at edge {:?}-{:?} used {n} times",
                a.map(f32::from_bits),
                b.map(f32::from_bits)
            );
        }
    }
}

fn ray_hits(origin: Vec3, dir: Vec3, meshes: &[&ChunkMesh]) -> bool {
    for m in meshes {
        for t in m.indices.chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| Vec3::from(m.vertices[t[k] as usize].position));
            let (e1, e2) = (b - a, c - a);
            let p = dir.cross(e2);
            let det = e1.dot(p);
            if det.abs() < 1e-9 {
                continue;
            }
            let inv = 1.0 / det;
            let s = origin - a;
            let u = s.dot(p) * inv;
            if !(-1e-4..=1.0 + 1e-4).contains(&u) {
                continue;
            }
            let q = s.cross(e1);
            let v = dir.dot(q) * inv;
            if v < -1e-4 || u + v > 1.0 + 1e-4 {
                continue;
            }
            if e2.dot(q) * inv > 0.0 {
                return true;
            }
        }
    }
    false
}

#[test]
fn skirts_cover_the_seam_for_every_level_pair() {
    // Generate a margin of chunks around the two meshed columns so no world edge
    // (a cliff where the terrain stops) lies near the rays.
    let mut g = VoxelGrid::new();
    generate(&mut g, &hills(), IVec3::new(-1, 0, -1), IVec3::new(2, 1, 1));
    let mut mesher = ChunkMesher::new();
    let border = CHUNK_SIZE;
    for a in 0..LEVELS {
        for b in 0..LEVELS {
            if a == b {
                continue;
            }
            let left = [
                mesher.mesh(&g, IVec3::new(0, 0, 0), a),
                mesher.mesh(&g, IVec3::new(0, 1, 0), a),
            ];
            let right = [
                mesher.mesh(&g, IVec3::new(1, 0, 0), b),
                mesher.mesh(&g, IVec3::new(1, 1, 0), b),
            ];
            let all = [&left[0], &left[1], &right[0], &right[1]];
            // A grid of rays from above and from a grazing angle over the seam strip.
            for dir in [
                Vec3::NEG_Y,
                Vec3::new(0.6, -1.0, 0.0).normalize(),
                Vec3::new(-0.6, -1.0, 0.3).normalize(),
            ] {
                for i in 0..25 {
                    for j in 0..30 {
                        let x = border - 12.0 + i as f32;
                        let z = 10.0 + j as f32 * 3.4;
                        // Aim at the true surface point so the ray crosses the seam there.
                        let target = Vec3::new(x, hills().height(x, z), z);
                        let start = target - dir * 200.0;
                        if !ray_hits(start, dir, &all) {
                            for (k, m) in all.iter().enumerate() {
                                for (vi, v) in m.vertices.iter().enumerate() {
                                    let p = Vec3::from(v.position);
                                    if (p.x - x).abs() < 9.0 && (p.z - z).abs() < 9.0 {
                                        eprintln!(
                                            "mesh {k} v{vi} {p} n {:?} skirt {}",
                                            v.normal,
                                            m.indices[m.skirt_start..].contains(&(vi as u32))
                                        );
                                    }
                                }
                            }
                            panic!("levels {a}/{b}: ray at x {x} z {z} dir {dir} falls through");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn materials_sorted_shared_per_quad_and_weights_sum_to_255() {
    let mut g = world(&hills(), IVec3::new(1, 1, 1));
    g.paint_box(
        Vec3::new(20.0, 0.0, 20.0),
        Vec3::new(60.0, 200.0, 60.0),
        Material::SAND,
    )
    .unwrap();
    g.paint_box(
        Vec3::new(50.0, 0.0, 30.0),
        Vec3::new(90.0, 200.0, 50.0),
        Material::MUD,
    )
    .unwrap();
    let mut mesher = ChunkMesher::new();
    let mut multi = 0;
    for level in 0..LEVELS {
        for c in [IVec3::ZERO, IVec3::new(0, 1, 0)] {
            let m = mesher.mesh(&g, c, level);
            for v in &m.vertices {
                assert_eq!(
                    v.weights.iter().map(|&w| w as u32).sum::<u32>(),
                    255,
                    "{v:?}"
                );
                let used = v.materials.iter().take_while(|&&x| x != 0).count().max(1);
                assert!(
                    v.materials[..used].windows(2).all(|w| w[0] < w[1]),
                    "unsorted {v:?}"
                );
                assert!(v.materials[used..].iter().all(|&x| x == 0));
                assert!(v.materials[..used].iter().all(|&x| x != Material::WATER.0));
                if used > 1 {
                    multi += 1;
                }
            }
            for q in m.surface_indices().chunks_exact(6) {
                let set = m.vertices[q[0] as usize].materials;
                assert!(q.iter().all(|&i| m.vertices[i as usize].materials == set));
            }
            // Normals point out of the solid: up-facing ground has positive y.
            let up = m.vertices.iter().filter(|v| v.normal[1] > 0.3).count();
            assert!(
                m.is_empty() || up * 2 > m.vertices.len(),
                "level {level} chunk {c}: {up} of {} up",
                m.vertices.len()
            );
        }
    }
    assert!(
        multi > 50,
        "painted borders give blended vertices ({multi})"
    );
}

#[test]
fn an_unwritten_chunk_meshes_surface_from_a_written_neighbour() {
    let mut g = VoxelGrid::new();
    // Solid from the very bottom of chunk y=1 upward: the crossing edge runs from the
    // last sample of chunk y=0 (unwritten) to the first of y=1, so y=0 owns it.
    g.set_box(
        Vec3::new(-300.0, 128.0, -300.0),
        Vec3::new(300.0, 200.0, 300.0),
        Cell::full(Material::ROCK),
    )
    .unwrap();
    assert!(g.entry(IVec3::ZERO).is_none());
    let m = ChunkMesher::new().mesh(&g, IVec3::ZERO, 0);
    assert!(
        !m.is_empty(),
        "the empty chunk owns the downward-facing surface"
    );
    assert!(m.vertices.iter().all(|v| v.normal[1] < -0.9));
}

#[test]
fn uniform_chunks_take_the_early_out() {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::splat(-200.0),
        Vec3::splat(300.0),
        Cell::full(Material::ROCK),
    )
    .unwrap();
    let mut mesher = ChunkMesher::new();
    assert!(!mesher.extract_surface(&g, IVec3::ZERO, 0, true));
    assert!(surface_impossible(&g, IVec3::new(50, 50, 50), 3));
    assert!(mesher.mesh(&g, IVec3::ZERO, 0).is_empty());
    assert!(
        !surface_impossible(&g, IVec3::new(2, 0, 0), 0),
        "a neighbour is solid, this one air"
    );
}

#[test]
fn base_meshes_from_the_grids_coarse_blocks_match_the_plain_gather() {
    // The live grid keeps each dense chunk's coarsest-level blocks; a snapshot keeps
    // none, so its meshes average the cells: the bytes must be the same, after
    // edits of several materials across chunk faces too.
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::ZERO,
        IVec3::new(2, 1, 2),
    );
    let level = LEVELS - 1;
    let mut m = ChunkMesher::new();
    let mut compare = |g: &VoxelGrid| {
        let snap = g.snapshot();
        let mut surfaces = 0;
        for z in -1..=3 {
            for y in -1..=2 {
                for x in -1..=3 {
                    let c = IVec3::new(x, y, z);
                    let fast = m.mesh(g, c, level);
                    let plain = m.mesh(&snap, c, level);
                    assert_eq!(fast, plain, "chunk {c}");
                    surfaces += usize::from(!fast.is_empty());
                }
            }
        }
        assert!(surfaces > 5, "{surfaces}");
    };
    compare(&g);
    for (i, x) in [124.0f32, 130.0, 250.0, 260.0].into_iter().enumerate() {
        let m = [
            Material::DIRT,
            Material::AIR,
            Material::SAND,
            Material::ROCK,
        ][i];
        g.set_sphere(
            Vec3::new(x, 100.0 + 10.0 * i as f32, 256.0 - x / 2.0),
            12.0,
            m,
        )
        .unwrap();
        compare(&g);
    }
}

#[test]
fn the_grids_memory_counts_the_coarse_blocks_it_keeps() {
    // A base mesh makes the dense chunks' blocks on the live grid; the grid's
    // bytes grow by exactly theirs, and a write that drops them gives them back.
    let mut g = VoxelGrid::new();
    generate(
        &mut g,
        &TerrainGeneratorConfig::default(),
        IVec3::ZERO,
        IVec3::new(1, 1, 1),
    );
    let cells = g.heap_bytes();
    let mut m = ChunkMesher::new();
    for z in 0..=1 {
        for x in 0..=1 {
            m.mesh(&g, IVec3::new(x, 0, z), LEVELS - 1);
        }
    }
    let with = g.heap_bytes();
    // The bases read their neighbours' blocks too.
    let around = -1..=2;
    let blocks: usize = around
        .clone()
        .flat_map(|z| around.clone().map(move |y| (y, z)))
        .flat_map(|(y, z)| (-1..=2).map(move |x| IVec3::new(x, y, z)))
        .filter_map(|c| {
            g.entry(c)
                .and_then(|_| g.coarse_blocks(c))
                .map(|b| b.heap_bytes())
        })
        .sum();
    assert!(blocks > 0, "no chunk kept blocks");
    assert_eq!(
        g.heap_bytes(),
        with,
        "asking made blocks the bases had not made"
    );
    assert_eq!(with, cells + blocks);
    g.set_sphere(Vec3::new(60.0, 60.0, 60.0), 6.0, Material::AIR)
        .unwrap();
    assert!(
        g.heap_bytes() < cells + blocks,
        "a write keeps its chunk's blocks"
    );
}
