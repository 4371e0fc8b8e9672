//! Collider build and query speed on the chunks the `terrain_collision` bench uses
//! (`reference_chunks`: the densest demo chunk, flat ground, a crater), as medians
//! of interleaved rounds: visual meshing at level 0 beside the collider build, then
//! 512 random ray casts and 512 sphere contacts near the surface. Two builds of this
//! example (before and after a change) run alternately give a same-load comparison
//! on a shared machine, without criterion.
//!
//! `cargo run --release -p farsight-terrain --example collider_speed [ROUNDS]`

use std::hint::black_box;
use std::time::Instant;

use farsight_terrain::{reference_chunks, ChunkMesh, ChunkMesher, ChunkShape, CollisionMesher};
use glam::Vec3;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let mut mesher = ChunkMesher::new();
    let mut collider = CollisionMesher::new();
    let mut out = ChunkMesh::default();
    for (name, grid, chunk) in reference_chunks() {
        let col = collider.build_collider(&grid, chunk).expect("a surface");
        let (rays, spheres) = queries(&col.shape);
        let mut t = [const { Vec::new() }; 4];
        let mut hits = (0, 0);
        for _ in 0..rounds {
            let s = Instant::now();
            mesher.mesh_into(&grid, chunk, 0, &mut out);
            t[0].push(s.elapsed().as_secs_f64());
            let s = Instant::now();
            black_box(collider.build_collider(&grid, chunk));
            t[1].push(s.elapsed().as_secs_f64());
            let s = Instant::now();
            hits.0 = rays
                .iter()
                .filter(|(o, d)| col.shape.cast_ray(*o, *d, 64.0).is_some())
                .count();
            t[2].push(s.elapsed().as_secs_f64());
            let s = Instant::now();
            hits.1 = spheres
                .iter()
                .filter(|c| col.shape.closest_within(**c, 2.0).is_some())
                .count();
            t[3].push(s.elapsed().as_secs_f64());
        }
        let [visual, build, ray, sphere] = t.map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2] * 1e6
        });
        println!(
            "{name}: {} triangles, {} B; visual {visual:.0} us, collider build {build:.0} us \
             ({:.2}x); 512 rays {ray:.1} us ({} hit), 512 spheres {sphere:.1} us ({} touch)",
            col.triangles,
            col.shape.heap_bytes(),
            build / visual,
            hits.0,
            hits.1
        );
    }
}

/// 512 rays from random points of the shape's bounds in random directions, and 512
/// sphere centres within 2 units of surface points found by vertical rays (a small
/// xorshift generator: the example needs no dependency).
fn queries(shape: &ChunkShape) -> (Vec<(Vec3, Vec3)>, Vec<Vec3>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let b = shape.bounds();
    let point =
        |unit: &mut dyn FnMut() -> f32| b.min + (b.max - b.min) * Vec3::new(unit(), unit(), unit());
    let rays = (0..512)
        .map(|_| {
            let o = point(&mut unit);
            let d = (Vec3::new(unit(), unit(), unit()) * 2.0 - 1.0).normalize_or(Vec3::Y);
            (o, d)
        })
        .collect();
    let mut spheres = Vec::with_capacity(512);
    for _ in 0..100_000 {
        if spheres.len() == 512 {
            break;
        }
        let mut o = point(&mut unit);
        o.y = b.max.y;
        if let Some(h) = shape.cast_ray(o, Vec3::NEG_Y, b.max.y - b.min.y) {
            let jitter = (Vec3::new(unit(), unit(), unit()) * 2.0 - 1.0) * 1.2;
            spheres.push(o - Vec3::Y * h.t + jitter);
        }
    }
    (rays, spheres)
}
