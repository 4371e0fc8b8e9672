//! Issue 4 section 7: cluster DAG build throughput against raw `clod_build` on the
//! same input in the same run, parallel cooking speed-up, and the cut.
//!
//! Run: `cargo bench -p farsight-bench --bench mesh`. Set `FARSIGHT_BENCH_2M=0` to
//! skip the generated 2M-triangle mesh. Groups: `mesh/dag_build` (real meshes),
//! `mesh/dag_build_2M`, `mesh/cook_set` (sequential against parallel), `mesh/cut_256`.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use farsight_cluster::{ClusterDag, CutView};
use farsight_format::{AlignedBytes, ClusterLevel, ClusterMeshManifest, Container};
use farsight_lod::ProjectionInfo;
use farsight_mesh::{
    cook_clusters, cook_clusters_encoded, cook_file, import_prepared, ClusterConfig, CookKind,
    MaterialSplit, Mesh, SubMesh, Vertex,
};
use glam::Vec3;
use rand::{Rng, SeedableRng};

fn mesh_path(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/meshes"
    ))
    .join(rel);
    assert!(p.exists(), "bench mesh missing: {}", p.display());
    p
}

/// A bumpy height-field grid of `n * n * 2` triangles with UVs.
fn grid(n: u32) -> Mesh {
    let mut vertices = Vec::with_capacity(((n + 1) * (n + 1)) as usize);
    for y in 0..=n {
        for x in 0..=n {
            let (fx, fy) = (x as f32 / n as f32, y as f32 / n as f32);
            let h = 0.02 * (fx * 40.0).sin() * (fy * 37.0).cos() + 0.05 * (fx * 5.0).cos();
            vertices.push(Vertex {
                position: [fx, h, fy],
                normal: [0.0, 1.0, 0.0],
                uv: [fx, fy],
                tangent: [0.0; 4],
            });
        }
    }
    let row = n + 1;
    let mut indices = Vec::with_capacity((n * n * 6) as usize);
    for y in 0..n {
        for x in 0..n {
            let i = y * row + x;
            indices.extend_from_slice(&[i, i + row, i + 1, i + 1, i + row, i + row + 1]);
        }
    }
    Mesh {
        name: format!("grid{n}"),
        submeshes: vec![SubMesh {
            name: "grid".into(),
            material: "m".into(),
            vertices,
            indices,
            has_tangents: false,
        }],
    }
}

fn real_inputs() -> Vec<(String, Mesh)> {
    ["bunny.obj", "pirate.obj", "FlightHelmet/FlightHelmet.gltf"]
        .iter()
        .map(|m| {
            (
                m.rsplit('/').next().unwrap().to_owned(),
                import_prepared(&mesh_path(m)).unwrap().0.mesh,
            )
        })
        .collect()
}

/// Ours against the peer on one input: meshoptimizer's `clod_build` alone (one
/// call per material part, parts in parallel as the cook runs them, same seam
/// locks, attributes and configuration) and the whole cook (`clod_build` + seam
/// locking + stamping + trust checks + material check + vertex packing + record
/// encoding + container). The budget: ours at most 1.10x the peer.
fn dag_pair(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mesh: &Mesh,
) {
    let config = ClusterConfig::default();
    let split = MaterialSplit::new(mesh);
    let inputs = split.raw_inputs();
    let tris = split.triangle_count() as u64;
    g.throughput(Throughput::Elements(tris));
    g.bench_function(
        BenchmarkId::new("raw_clod_build", format!("{name}/{tris}")),
        |b| b.iter(|| split.raw_builds(&config, &inputs)),
    );
    g.bench_function(
        BenchmarkId::new("cook_and_encode", format!("{name}/{tris}")),
        |b| b.iter(|| cook_clusters_encoded(mesh, &config).unwrap()),
    );
}

fn dag_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("mesh/dag_build");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for (name, mesh) in real_inputs() {
        dag_pair(&mut g, &name, &mesh);
    }
    g.finish();
}

/// The generated 2M-triangle grid on its own group (about 10 s a sample pair), so
/// a filter can run it alone or skip it (`FARSIGHT_BENCH_2M=0`).
fn dag_build_2m(c: &mut Criterion) {
    if std::env::var("FARSIGHT_BENCH_2M").is_ok_and(|s| s == "0") {
        return;
    }
    let mesh = farsight_mesh::prepare(&grid(1000)).mesh;
    let mut g = c.benchmark_group("mesh/dag_build_2M");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(20));
    dag_pair(&mut g, "grid_2M", &mesh);
    g.finish();
}

/// The same set of files cooked one after another on one thread, and by
/// `cook_files` on a pool of two threads, in the same run (issue: at least 1.7x).
fn parallel_cook(c: &mut Criterion) {
    let paths: Vec<PathBuf> = [
        "FlightHelmet/FlightHelmet.gltf",
        "FlightHelmet/FlightHelmet.gltf",
        "pirate.obj",
        "bunny.obj",
    ]
    .iter()
    .map(|m| mesh_path(m))
    .collect();
    let kind = CookKind::Clusters(ClusterConfig::default());
    let mut g = c.benchmark_group("mesh/cook_set");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(8));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    g.bench_function("sequential_1_thread", |b| {
        b.iter(|| {
            one.install(|| {
                paths
                    .iter()
                    .map(|p| cook_file(p, &kind).unwrap())
                    .collect::<Vec<_>>()
            })
        })
    });
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    g.bench_function("cook_files_2_threads", |b| {
        b.iter(|| two.install(|| farsight_mesh::cook_files(&paths, &kind)))
    });
    g.finish();
}

fn cut(c: &mut Criterion) {
    let (mesh, _) = import_prepared(&mesh_path("FlightHelmet/FlightHelmet.gltf")).unwrap();
    let bytes = cook_clusters(&mesh.mesh, &ClusterConfig::default())
        .unwrap()
        .encode()
        .unwrap();
    let aligned = AlignedBytes::from(&bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
    let levels: Vec<ClusterLevel<'_>> = file
        .manifest()
        .levels
        .iter()
        .map(|l| ClusterLevel::parse(file.record(l.record).unwrap().bytes).unwrap())
        .collect();
    let dag = ClusterDag::from_levels(&levels).unwrap();
    let radius = mesh.bounds.radius();
    let center = mesh.bounds.center();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    // Instances from 1 to 200 radii away, as a scene's instances of one model.
    let views: Vec<CutView> = (0..256)
        .map(|_| {
            let dir = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            )
            .normalize_or(Vec3::X);
            CutView {
                camera_local: center + dir * radius * rng.random_range(1.0f32..200.0),
                scale: 1.0,
                projection: ProjectionInfo::perspective(60f32.to_radians()),
                viewport_height: 1080.0,
                threshold_px: 1.0,
            }
        })
        .collect();
    let mut out = Vec::with_capacity(dag.clusters.len());
    let (mut hv, mut hn, mut fv, mut drawn) = (0u64, 0u64, 0u64, 0u64);
    for v in &views {
        let s = dag.cut(v, &mut out);
        hv += s.clusters_visited as u64;
        hn += s.nodes_visited as u64;
        drawn += s.clusters_drawn as u64;
        fv += dag.cut_flat(v, &mut out).clusters_visited as u64;
    }
    let n = views.len() as u64;
    eprintln!(
        "cut per instance (FlightHelmet, {} clusters): hierarchy visits {} clusters + {} nodes, flat visits {}, draws {}",
        dag.clusters.len(),
        hv / n,
        hn / n,
        fv / n,
        drawn / n
    );
    let mut g = c.benchmark_group("mesh/cut_256_instances");
    g.throughput(Throughput::Elements(hv + hn));
    g.bench_function("hierarchy", |b| {
        b.iter(|| {
            views
                .iter()
                .map(|v| dag.cut(v, &mut out).clusters_drawn)
                .sum::<u32>()
        })
    });
    g.throughput(Throughput::Elements(fv));
    g.bench_function("flat", |b| {
        b.iter(|| {
            views
                .iter()
                .map(|v| dag.cut_flat(v, &mut out).clusters_drawn)
                .sum::<u32>()
        })
    });
    g.finish();
}

criterion_group!(benches, dag_build, dag_build_2m, parallel_cook, cut);
criterion_main!(benches);
