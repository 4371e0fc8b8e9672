//! The streaming benchmarks' region world, shared by `bench/benches/stream.rs` and the
//! `bvh_query` example (each includes this file with `#[path]`).

use farsight_geom::{Aabb, Sphere};
use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Regions on a ground plane with a 10-unit spacing on average and 8-unit boxes: a
/// sphere of radius 52 touches about 100 of them whatever the count.
pub fn regions(n: usize) -> Vec<Aabb> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let side = (n as f32).sqrt() * 10.0;
    (0..n)
        .map(|_| {
            let c = Vec3::new(
                rng.random_range(0.0..side),
                rng.random_range(0.0..20.0),
                rng.random_range(0.0..side),
            );
            Aabb::from_center_extent(c, Vec3::new(4.0, 10.0, 4.0))
        })
        .collect()
}

pub const QUERY_RADIUS: f32 = 52.0;

pub fn queries(n: usize, count: usize) -> Vec<Sphere> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let side = (n as f32).sqrt() * 10.0;
    (0..count)
        .map(|_| {
            Sphere::new(
                Vec3::new(
                    rng.random_range(0.1 * side..0.9 * side),
                    10.0,
                    rng.random_range(0.1 * side..0.9 * side),
                ),
                QUERY_RADIUS,
            )
        })
        .collect()
}
