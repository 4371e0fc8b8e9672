//! Cooks files in parallel and prints where the time went:
//! `cargo run --release -p farsight-mesh --example cook_many -- THREADS FILE...`

use std::time::Instant;

use farsight_mesh::{
    build_dag, cook_clusters, cook_files, import_prepared, ClusterConfig, CookKind,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let paths: Vec<std::path::PathBuf> = args.map(Into::into).collect();
    let config = ClusterConfig::default();
    // Breakdown on the first file, single-threaded.
    if let Some(first) = paths.first() {
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        one.install(|| {
            let (p, _) = import_prepared(first).unwrap();
            let (v, i) = p.mesh.merged();
            let t = Instant::now();
            let built = build_dag(&config, &v, &i);
            let t_dag = t.elapsed();
            let t = Instant::now();
            let cooked = cook_clusters(&p.mesh, &config).unwrap();
            let t_cook = t.elapsed();
            let t = Instant::now();
            let bytes = cooked.encode().unwrap();
            let t_enc = t.elapsed();
            println!(
                "{}: build_dag {t_dag:?} ({} stuck groups), cook_clusters {t_cook:?}, encode {t_enc:?}, {} bytes",
                first.display(),
                built.stuck_groups,
                bytes.len()
            );
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let t = Instant::now();
    let results = pool.install(|| cook_files(&paths, &CookKind::Clusters(config)));
    println!(
        "{} files on {threads} threads: {:?}",
        results.len(),
        t.elapsed()
    );
    for r in results {
        r.unwrap();
    }
}
