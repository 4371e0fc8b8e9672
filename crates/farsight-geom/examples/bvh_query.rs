//! Sphere queries with about 100 hits at 100k regions, timed as the best of many
//! passes over 256 queries (steadier than a mean on a shared machine):
//! `cargo run --release -p farsight-geom --example bvh_query`

use farsight_geom::{Aabb, Bvh, Sphere};
use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let side = (n as f32).sqrt() * 10.0;
    let boxes: Vec<Aabb> = (0..n)
        .map(|_| {
            let c = Vec3::new(
                rng.random_range(0.0..side),
                rng.random_range(0.0..20.0),
                rng.random_range(0.0..side),
            );
            Aabb::from_center_extent(c, Vec3::new(4.0, 10.0, 4.0))
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let queries: Vec<Sphere> = (0..256)
        .map(|_| {
            let c = Vec3::new(
                rng.random_range(0.1 * side..0.9 * side),
                10.0,
                rng.random_range(0.1 * side..0.9 * side),
            );
            Sphere::new(c, 52.0)
        })
        .collect();
    let bvh = Bvh::build(&boxes).expect("valid boxes");
    let mut out = Vec::with_capacity(1024);
    let mut best = f64::INFINITY;
    let mut hits = 0;
    for _ in 0..400 {
        let t = std::time::Instant::now();
        hits = 0;
        for q in &queries {
            out.clear();
            bvh.query_sphere(std::hint::black_box(q), &mut out);
            hits += out.len();
        }
        best = best.min(t.elapsed().as_secs_f64() / queries.len() as f64);
    }
    println!(
        "{n} regions, leaf size {}: {:.1} hits per query, best pass {:.1} ns per query",
        farsight_geom::BVH_LEAF_SIZE,
        hits as f64 / queries.len() as f64,
        best * 1e9
    );
}
