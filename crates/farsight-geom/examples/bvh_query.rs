//! Sphere queries with about 100 hits at 100k regions, timed as the best of many
//! passes over 256 queries (steadier than a mean on a shared machine):
//! `cargo run --release -p farsight-geom --example bvh_query`

use farsight_geom::Bvh;

#[path = "support/world.rs"]
mod world;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let boxes = world::regions(n);
    let queries = world::queries(n, 256);
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
