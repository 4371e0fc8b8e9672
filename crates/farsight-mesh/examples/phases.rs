//! What a cluster cook costs beyond meshoptimizer's `clod_build`, on rayon pools of
//! 1 and 2 threads (best of 3): `cargo run --release -p farsight-mesh --example
//! phases -- FILE...`. The criterion bench `mesh/dag_build` measures the same.

use std::time::{Duration, Instant};

use farsight_mesh::{cook_clusters, import_prepared, ClusterConfig, MaterialSplit};

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("runs > 0"))
}

fn main() {
    let config = ClusterConfig::default();
    for path in std::env::args().skip(1) {
        let (p, _) = import_prepared(path.as_ref()).expect("import");
        let split = MaterialSplit::new(&p.mesh);
        let inputs = split.raw_inputs();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            pool.install(|| {
                let (t_raw, _) = best(3, || split.raw_builds(&config, &inputs));
                let (t_cook, cooked) = best(3, || cook_clusters(&p.mesh, &config).expect("cook"));
                let (t_enc, bytes) = best(3, || cooked.encode().expect("encode"));
                let ours = t_cook + t_enc;
                println!(
                    "{path} ({} tris, {} materials) {threads} thread(s): raw clod_build {t_raw:?}, cook {t_cook:?} + encode {t_enc:?} ({} bytes): {:+.1}%",
                    split.triangle_count(),
                    split.parts.len(),
                    bytes.len(),
                    100.0 * (ours.as_secs_f64() / t_raw.as_secs_f64() - 1.0)
                );
            });
        }
    }
}
