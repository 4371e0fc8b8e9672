//! Voxel terrain meshing beside the `fast-surface-nets` crate on the same fields in
//! the same run: a terrain height field, a sphere, a worst-case sine field and an
//! empty chunk, 32^3 cubes each. The peer meshes an f32 signed distance field; we
//! mesh the same function quantised to 8-bit occupancy (`0.5 - sdf`, clamped).
//! Geometry only (positions + indices; the peer always adds its normals), then our
//! full render mesh (normals, material sets, weights, skirts) from a grid chunk, the
//! O(1) uniform-chunk path, and collision building beside visual meshing of the same
//! chunks (the `terrain_collision` group also prints interleaved same-run ratios).
//! `terrain_edit_frame`: what a terrain edit costs the frame in farsight-world (issue
//! 27 item 21): a crater or a mound on the ground, then the 8 base meshes (coarsest
//! level) it makes stale, from the grid's coarse blocks beside the plain gather of a
//! snapshot (the peer, same run), and the refresh of the colliders it reaches.
//!
//! `cargo bench -p farsight-bench --bench terrain`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_terrain::{
    generate, reference_chunks, Cell, ChunkMesh, ChunkMesher, CollisionCache, CollisionMesher,
    Material, SampleField, SurfaceNets, TerrainGeneratorConfig, VoxelGrid, LEVELS,
};
use fast_surface_nets::ndshape::{ConstShape, ConstShape3u32};
use fast_surface_nets::{surface_nets, SurfaceNetsBuffer};
use glam::{IVec3, Vec3};

/// The peer's padded chunk: 34^3 samples, cubes over `[0, 33)`.
type PeerShape = ConstShape3u32<34, 34, 34>;

/// Signed distance (negative inside) of each named field at sample point `p`.
fn sdf(name: &str, p: Vec3) -> f32 {
    match name {
        "terrain" => {
            let params = TerrainGeneratorConfig::default();
            // One sample per cell: world = sample * 4; height in samples.
            p.y - (params.height(p.x * 4.0, p.z * 4.0) - 60.0) / 4.0
        }
        "sphere" => p.distance(Vec3::splat(16.0)) - 13.0,
        "sine" => (p.x * 1.3).sin() + (p.y * 1.3).sin() + (p.z * 1.3).sin(),
        _ => 1.0,
    }
}

fn peer_field(name: &str) -> Vec<f32> {
    (0..PeerShape::SIZE)
        .map(|i| {
            let [x, y, z] = PeerShape::delinearize(i);
            sdf(name, Vec3::new(x as f32, y as f32, z as f32))
        })
        .collect()
}

fn our_field(name: &str) -> SampleField {
    let mut f = SampleField::new();
    // Padded sample (x, y, z) is chunk sample (x - 2, ...); the peer's sample
    // (x, y, z) sits at the same point when ours is offset by one.
    f.fill_with(32, |x, y, z| {
        let p = Vec3::new(x as f32 - 1.0, y as f32 - 1.0, z as f32 - 1.0);
        let occ = (0.5 - sdf(name, p)).clamp(0.0, 1.0);
        ((occ * 255.0).round() as u8, 3)
    });
    f
}

fn meshing(c: &mut Criterion) {
    let mut g = c.benchmark_group("surface_nets_32");
    for name in ["terrain", "sphere", "sine", "empty"] {
        let peer = peer_field(name);
        let ours = our_field(name);
        let mut pbuf = SurfaceNetsBuffer::default();
        let mut sn = SurfaceNets::new();
        surface_nets(&peer, &PeerShape {}, [0; 3], [33; 3], &mut pbuf);
        sn.extract(&ours, IVec3::ZERO, 1.0, false);
        eprintln!(
            "{name}: peer {} vertices {} triangles, ours {} vertices {} triangles",
            pbuf.positions.len(),
            pbuf.indices.len() / 3,
            sn.positions.len(),
            sn.indices.len() / 3
        );
        g.bench_with_input(
            BenchmarkId::new("fast-surface-nets", name),
            &peer,
            |b, f| b.iter(|| surface_nets(f, &PeerShape {}, [0; 3], [33; 3], &mut pbuf)),
        );
        g.bench_with_input(
            BenchmarkId::new("farsight geometry", name),
            &ours,
            |b, f| b.iter(|| sn.extract(f, IVec3::ZERO, 1.0, false)),
        );
        g.bench_with_input(
            BenchmarkId::new("farsight +normals", name),
            &ours,
            |b, f| b.iter(|| sn.extract(f, IVec3::ZERO, 1.0, true)),
        );
    }
    g.finish();
}

/// Median of `rounds` interleaved timings of `a` and `b` (each round times both), so
/// load from other processes hits both sides alike: the same-run ratio.
fn interleaved_ratio(rounds: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let mut ta = Vec::with_capacity(rounds);
    let mut tb = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        a();
        ta.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        b();
        tb.push(t.elapsed().as_secs_f64());
    }
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    (ta[rounds / 2], tb[rounds / 2])
}

fn chunks(c: &mut Criterion) {
    let cases = reference_chunks();
    let (grid, chunk) = (&cases[0].1, cases[0].2);
    let mut mesher = ChunkMesher::new();
    let mut out = ChunkMesh::default();
    let mut g = c.benchmark_group("terrain_chunk");
    for level in 0..4u8 {
        g.bench_function(
            BenchmarkId::new("render mesh (field+normals+materials+skirts)", level),
            |b| b.iter(|| mesher.mesh_into(grid, chunk, level, &mut out)),
        );
    }
    g.bench_function("field build level 0", |b| {
        b.iter(|| mesher.field.build(grid, chunk, 0))
    });
    // A uniform chunk deep in the ground and one high in the air.
    let mut solid = VoxelGrid::new();
    solid
        .set_box(
            Vec3::splat(-300.0),
            Vec3::splat(300.0),
            Cell::full(Material::ROCK),
        )
        .unwrap();
    g.bench_function("uniform chunk (solid, 27 uniform neighbours)", |b| {
        b.iter(|| mesher.mesh_into(&solid, IVec3::ZERO, 0, &mut out))
    });
    g.bench_function("uniform chunk (empty, unwritten)", |b| {
        b.iter(|| mesher.mesh_into(grid, IVec3::new(0, 40, 0), 0, &mut out))
    });
    g.finish();
}

/// Collision build (full-detail extraction, flat-patch reduction, vertex merge and
/// the query grid: everything `CollisionCache` does per chunk) beside the visual
/// meshing of the same chunk at level 0, plus parry3d's `TriMesh` for reference.
fn collision(c: &mut Criterion) {
    let mut g = c.benchmark_group("terrain_collision");
    let mut mesher = ChunkMesher::new();
    let mut collider = CollisionMesher::new();
    let mut out = ChunkMesh::default();
    for (name, grid, chunk) in reference_chunks() {
        let col = collider.build_collider(&grid, chunk).unwrap();
        mesher.mesh_into(&grid, chunk, 0, &mut out);
        let (visual, build) = interleaved_ratio(
            60,
            || mesher.mesh_into(&grid, chunk, 0, &mut out),
            || {
                black_box(collider.build_collider(&grid, chunk));
            },
        );
        eprintln!(
            "{name}: render {} triangles, collision {} triangles; interleaved medians: visual \
             {:.0} us, collision build {:.0} us, ratio {:.2}x",
            out.triangle_count(),
            col.triangles,
            visual * 1e6,
            build * 1e6,
            build / visual
        );
        g.bench_function(BenchmarkId::new("visual mesh level 0", name), |b| {
            b.iter(|| mesher.mesh_into(&grid, chunk, 0, &mut out))
        });
        g.bench_function(BenchmarkId::new("collision build", name), |b| {
            b.iter(|| collider.build_collider(&grid, chunk))
        });
        g.bench_function(BenchmarkId::new("collision mesh only", name), |b| {
            b.iter(|| collider.build(&grid, chunk).indices.len())
        });
        if name == "hills+caves" {
            g.bench_function(BenchmarkId::new("parry TriMesh (to_trimesh)", name), |b| {
                b.iter(|| col.shape.to_trimesh())
            });
        }
    }
    g.finish();
}

/// One edit of the world's flight (a 10-unit crater or mound on the ground, 6 cells
/// from a chunk corner), then its frame's terrain work: the 8 stale chunks' base
/// meshes and the refresh of the held colliders it reaches. The edits alternate, so
/// the ground stays as it was every second iteration.
fn edit_frame(c: &mut Criterion) {
    let params = TerrainGeneratorConfig {
        caves: false,
        ..Default::default()
    };
    let mut grid = VoxelGrid::new();
    generate(
        &mut grid,
        &params,
        IVec3::new(0, -1, 0),
        IVec3::new(3, 1, 3),
    );
    let (x, z) = (256.0 + 24.0, 256.0 - 24.0);
    let centre = Vec3::new(x, params.height(x, z), z);
    let stale: Vec<IVec3> = (0..8)
        .map(|i| IVec3::new(1 + (i & 1), i >> 1 & 1, 1 + (i >> 2)))
        .collect();
    let mut held = CollisionCache::new(1);
    let near: Vec<IVec3> = (0..27)
        .map(|i| IVec3::new(1 + i % 3, i / 3 % 3 - 1, 1 + i / 9))
        .collect();
    held.build(&grid, &near);
    let mut mesher = ChunkMesher::new();
    let mut n = 0u32;
    let mut edit = |grid: &mut VoxelGrid| {
        n += 1;
        let m = if n % 2 == 0 {
            Material::AIR
        } else {
            Material::ROCK
        };
        grid.set_sphere(centre, 10.0, m).unwrap();
    };
    let coarsest = LEVELS - 1;
    let mut g = c.benchmark_group("terrain_edit_frame");
    g.bench_function("edit + 8 base meshes (coarse blocks)", |b| {
        b.iter(|| {
            edit(&mut grid);
            stale
                .iter()
                .map(|&s| mesher.mesh(&grid, s, coarsest).indices.len())
                .sum::<usize>()
        })
    });
    g.bench_function("edit + 8 base meshes (plain gather: a snapshot)", |b| {
        b.iter(|| {
            edit(&mut grid);
            let snap = grid.snapshot_of(&stale);
            stale
                .iter()
                .map(|&s| mesher.mesh(&snap, s, coarsest).indices.len())
                .sum::<usize>()
        })
    });
    g.bench_function("edit + collider refresh", |b| {
        b.iter(|| {
            edit(&mut grid);
            held.refresh(&grid).rebuilt
        })
    });
    g.finish();
}

criterion_group!(benches, meshing, chunks, collision, edit_frame);
criterion_main!(benches);
