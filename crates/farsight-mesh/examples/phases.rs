//! What a cluster cook costs beyond meshoptimizer's `clod_build`, on a rayon pool of
//! THREADS threads: `cargo run --release -p farsight-mesh --example phases --
//! THREADS RUNS FILE...`. Peer and ours run interleaved and each keeps its fastest
//! run, which on a shared machine is the figure least disturbed by other work. The
//! criterion bench `mesh/dag_build` measures the same pair.

use std::time::{Duration, Instant};

use farsight_mesh::{cook_clusters_encoded, import_prepared, ClusterConfig, MaterialSplit};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let config = ClusterConfig::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    for path in args {
        let (p, _) = import_prepared(path.as_ref()).expect("import");
        let split = MaterialSplit::new(&p.mesh);
        let inputs = split.raw_inputs();
        let (mut raw, mut ours) = (Duration::MAX, Duration::MAX);
        let mut bytes = 0;
        pool.install(|| {
            for _ in 0..runs {
                let t = Instant::now();
                std::hint::black_box(split.raw_builds(&config, &inputs));
                raw = raw.min(t.elapsed());
                let t = Instant::now();
                let (_, b) = cook_clusters_encoded(&p.mesh, &config).expect("cook");
                ours = ours.min(t.elapsed());
                bytes = b.len();
            }
        });
        println!(
            "{path} ({} tris, {} materials), {threads} thread(s), best of {runs}: raw clod_build {raw:?}, cook and encode {ours:?} ({bytes} bytes): {:+.1}%",
            split.triangle_count(),
            split.parts.len(),
            100.0 * (ours.as_secs_f64() / raw.as_secs_f64() - 1.0)
        );
    }
}
