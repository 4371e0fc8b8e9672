//! Voxel terrain meshing beside the `fast-surface-nets` crate on the same fields in
//! the same run: a terrain height field, a sphere, a worst-case sine field and an
//! empty chunk, 32^3 cubes each. The peer meshes an f32 signed distance field; we
//! mesh the same function quantised to 8-bit occupancy (`0.5 - sdf`, clamped).
//! Geometry only (positions + indices; the peer always adds its normals), then our
//! full render mesh (normals, material sets, weights, skirts) from a grid chunk, the
//! O(1) uniform-chunk path, and collision building of the same chunk.
//!
//! `cargo bench -p farsight-bench --bench terrain`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_terrain::{
    generate, ChunkMesh, ChunkMesher, CollisionMesher, SampleField, SurfaceNets, TerrainParams,
    VoxelGrid,
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
            let params = TerrainParams::default();
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

fn chunks(c: &mut Criterion) {
    let params = TerrainParams::default();
    let mut grid = VoxelGrid::new();
    generate(&mut grid, &params, IVec3::new(0, 0, 0), IVec3::new(2, 2, 2));
    // Pick the grid chunk with the most surface.
    let mut mesher = ChunkMesher::new();
    let chunk = (0..3)
        .flat_map(|y| [IVec3::new(1, y, 1)])
        .max_by_key(|&c| mesher.mesh(&grid, c, 0).indices.len())
        .unwrap();
    let mut out = ChunkMesh::default();
    let mut g = c.benchmark_group("terrain_chunk");
    for level in 0..4u8 {
        g.bench_function(
            BenchmarkId::new("render mesh (field+normals+materials+skirts)", level),
            |b| b.iter(|| mesher.mesh_into(&grid, chunk, level, &mut out)),
        );
    }
    g.bench_function("field build level 0", |b| {
        b.iter(|| mesher.field.build(&grid, chunk, 0))
    });
    let mut collider = CollisionMesher::new();
    g.bench_function("collision mesh (flat-patch reduced)", |b| {
        b.iter(|| collider.build(&grid, chunk).indices.len())
    });
    g.bench_function("collision mesh + parry TriMesh", |b| {
        b.iter(|| collider.build_collider(&grid, chunk))
    });
    let mesh = collider.build(&grid, chunk).clone();
    g.bench_function("parry TriMesh::new only (no internal-edge fixing)", |b| {
        b.iter(|| {
            let v = mesh
                .vertices
                .iter()
                .map(|p| parry3d::math::Vector::new(p[0], p[1], p[2]))
                .collect();
            parry3d::shape::TriMesh::new(v, mesh.indices.clone()).map(|t| t.indices().len())
        })
    });
    // A uniform chunk deep in the ground and one high in the air.
    let mut solid = VoxelGrid::new();
    solid
        .set_box(
            Vec3::splat(-300.0),
            Vec3::splat(300.0),
            farsight_terrain::Cell::full(farsight_terrain::Material::ROCK),
        )
        .unwrap();
    g.bench_function("uniform chunk (solid, 27 uniform neighbours)", |b| {
        b.iter(|| mesher.mesh_into(&solid, IVec3::ZERO, 0, &mut out))
    });
    g.bench_function("uniform chunk (empty, unwritten)", |b| {
        b.iter(|| mesher.mesh_into(&grid, IVec3::new(0, 40, 0), 0, &mut out))
    });
    g.finish();
}

criterion_group!(benches, meshing, chunks);
criterion_main!(benches);
