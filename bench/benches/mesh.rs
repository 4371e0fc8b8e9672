//! Issue 4 section 7: cluster DAG build throughput against raw `clod_build` on the
//! same input in the same run, parallel cooking speed-up, and the cut.
//!
//! Run: `cargo bench -p farsight-bench --bench mesh`. Set `FARSIGHT_BENCH_2M=0` to
//! skip the generated 2M-triangle mesh.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use farsight_cluster::{ClusterDag, CutView};
use farsight_format::{AlignedBytes, ClusterLevel, ClusterMeshManifest, Container};
use farsight_lod::ProjectionInfo;
use farsight_mesh::{
    clod_build_raw, cook_clusters, cook_file, import_prepared, simplifier_attributes,
    ClusterConfig, CookKind, Mesh, SubMesh, Vertex,
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

fn inputs() -> Vec<(String, Mesh)> {
    let mut v: Vec<(String, Mesh)> = ["bunny.obj", "pirate.obj", "FlightHelmet/FlightHelmet.gltf"]
        .iter()
        .map(|m| {
            (
                m.rsplit('/').next().unwrap().to_owned(),
                import_prepared(&mesh_path(m)).unwrap().0.mesh,
            )
        })
        .collect();
    if std::env::var("FARSIGHT_BENCH_2M").map_or(true, |s| s != "0") {
        v.push(("grid_2M".into(), farsight_mesh::prepare(&grid(1000)).mesh));
    }
    v
}

fn dag_build(c: &mut Criterion) {
    let config = ClusterConfig::default();
    let mut g = c.benchmark_group("mesh/dag_build");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for (name, mesh) in inputs() {
        let (vertices, indices) = mesh.merged();
        let attributes = simplifier_attributes(&vertices);
        let tris = indices.len() as u64 / 3;
        g.throughput(Throughput::Elements(tris));
        // Peer: meshoptimizer's clod_build alone, same configuration and input.
        g.bench_function(
            BenchmarkId::new("raw_clod_build", format!("{name}/{tris}")),
            |b| b.iter(|| clod_build_raw(&config, &vertices, &indices, &attributes, None)),
        );
        // Ours: clod_build + stamping + trust checks + record encoding.
        g.bench_function(
            BenchmarkId::new("cook_and_encode", format!("{name}/{tris}")),
            |b| b.iter(|| cook_clusters(&mesh, &config).unwrap().encode().unwrap()),
        );
    }
    g.finish();
}

fn parallel_cook(c: &mut Criterion) {
    let paths: Vec<PathBuf> = (0..4)
        .map(|_| mesh_path("FlightHelmet/FlightHelmet.gltf"))
        .collect();
    let kind = CookKind::Clusters(ClusterConfig::default());
    let mut g = c.benchmark_group("mesh/cook_4_helmets");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(6));
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        g.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter(|| pool.install(|| farsight_mesh::cook_files(&paths, &kind)))
        });
    }
    // Sequential reference outside rayon: one file after another.
    g.bench_function("sequential_loop", |b| {
        b.iter(|| {
            paths
                .iter()
                .map(|p| cook_file(p, &kind).unwrap())
                .collect::<Vec<_>>()
        })
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

criterion_group!(benches, dag_build, parallel_cook, cut);
criterion_main!(benches);
