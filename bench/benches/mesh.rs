//! Issue 4 section 7: cluster DAG build throughput against raw `clod_build` on the
//! same input in the same run, parallel cooking speed-up, and the cut.
//!
//! Run: `cargo bench -p farsight-bench --bench mesh`. Set `FARSIGHT_BENCH_2M=0` to
//! skip the generated 2M-triangle mesh. Groups: `mesh/dag_build` (the three tuning
//! meshes), `mesh/dag_corpus_1t` and `mesh/dag_corpus_2t` (issue 16: every mesh of
//! `../shared/data/meshes` and the generated stress cases, on pools of 1 and 2
//! threads, after an interleaved table of every mesh and the worst case),
//! `mesh/dag_build_2M`, `mesh/cook_set` (sequential against parallel), `mesh/cut_256`.
//! `FARSIGHT_BENCH_MESHES=a,b` keeps the corpus meshes whose names contain one of
//! the words; `FARSIGHT_BENCH_RUNS=N` sets the interleaved table's runs (default 5).

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

mod format_common;

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

/// `iters` runs of `f` timed on `pool` (entered once, so a tiny mesh's time is
/// not the hand-over into the pool), or on the caller's pool.
fn timed(pool: Option<&rayon::ThreadPool>, iters: u64, f: impl Fn() + Sync) -> Duration {
    let run = || {
        let t = std::time::Instant::now();
        for _ in 0..iters {
            f();
        }
        t.elapsed()
    };
    match pool {
        Some(p) => p.install(run),
        None => run(),
    }
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
    pool: Option<&rayon::ThreadPool>,
) {
    let config = ClusterConfig::default();
    let split = MaterialSplit::new(mesh);
    let inputs = split.raw_inputs();
    let tris = split.triangle_count() as u64;
    g.throughput(Throughput::Elements(tris));
    g.bench_function(
        BenchmarkId::new("raw_clod_build", format!("{name}/{tris}")),
        |b| {
            b.iter_custom(|iters| {
                timed(pool, iters, || {
                    std::hint::black_box(split.raw_builds(&config, &inputs));
                })
            })
        },
    );
    g.bench_function(
        BenchmarkId::new("cook_and_encode", format!("{name}/{tris}")),
        |b| {
            b.iter_custom(|iters| {
                timed(pool, iters, || {
                    std::hint::black_box(cook_clusters_encoded(mesh, &config).unwrap());
                })
            })
        },
    );
}

fn dag_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("mesh/dag_build");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for (name, mesh) in real_inputs() {
        dag_pair(&mut g, &name, &mesh, None);
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
    dag_pair(&mut g, "grid_2M", &mesh, None);
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

/// Every corpus file as the cook imports it (`import_prepared`: repaired, one part
/// per material), then issue 16's generated stress cases (each generated part its
/// own material; the 50 placed copies side by side), as (name, mesh).
fn corpus_inputs() -> Vec<(String, Mesh)> {
    let root = format_common::meshes_dir();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus directory") {
            let p = e.expect("corpus entry").path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if p.is_dir() && dir == root {
                dirs.push(p);
            } else if matches!(ext, "obj" | "glb" | "gltf") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out: Vec<(String, Mesh)> = files
        .iter()
        .map(|f| {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            let (p, _) = import_prepared(f).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, p.mesh)
        })
        .collect();
    for (name, parts) in format_common::stress_meshes() {
        let placed = name == "gen_placed50";
        let submeshes = parts
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let dz = if placed { 1.5 * i as f32 } else { 0.0 };
                let vertices = (0..m.positions.len())
                    .map(|v| {
                        let p = m.positions[v];
                        Vertex {
                            position: [p[0], p[1], p[2] + dz],
                            normal: m.normals.get(v).copied().unwrap_or([0.0, 1.0, 0.0]),
                            uv: m.uvs.get(v).copied().unwrap_or_default(),
                            tangent: [0.0; 4],
                        }
                    })
                    .collect();
                SubMesh {
                    name: format!("{name}/{i}"),
                    material: format!("m{i}"),
                    vertices,
                    indices: m.indices.clone(),
                    has_tangents: false,
                }
            })
            .collect();
        let mesh = Mesh {
            name: name.to_owned(),
            submeshes,
        };
        out.push((name.to_owned(), farsight_mesh::prepare(&mesh).mesh));
    }
    if let Ok(keep) = std::env::var("FARSIGHT_BENCH_MESHES") {
        let keep: Vec<&str> = keep.split(',').filter(|k| !k.is_empty()).collect();
        out.retain(|(n, _)| keep.iter().any(|k| n.contains(k)));
    }
    out
}

/// The interleaved table: on a pool of `threads`, per mesh, `runs` rounds of the
/// peer then ours, each keeping its fastest run (on a shared machine the figure
/// least disturbed by other work); prints the worst ratio, then every mesh, worst
/// first.
fn interleaved_table(meshes: &[(String, Mesh)], threads: usize, runs: usize) {
    let config = ClusterConfig::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let mut rows: Vec<(f64, String)> = Vec::new();
    for (name, mesh) in meshes {
        let split = MaterialSplit::new(mesh);
        let inputs = split.raw_inputs();
        let (mut raw, mut ours) = (Duration::MAX, Duration::MAX);
        pool.install(|| {
            for _ in 0..runs {
                let t = std::time::Instant::now();
                std::hint::black_box(split.raw_builds(&config, &inputs));
                raw = raw.min(t.elapsed());
                let t = std::time::Instant::now();
                std::hint::black_box(
                    cook_clusters_encoded(mesh, &config).unwrap_or_else(|e| panic!("{name}: {e}")),
                );
                ours = ours.min(t.elapsed());
            }
        });
        let ratio = ours.as_secs_f64() / raw.as_secs_f64();
        rows.push((
            ratio,
            format!(
                "  {name:<22} {:>7} tris {:>3} parts: raw clod_build {raw:>10.3?}, ours {ours:>10.3?}: {ratio:.3}x",
                split.triangle_count(),
                split.parts.len(),
            ),
        ));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    eprintln!(
        "mesh/dag_corpus, {threads} thread(s), best of {runs} interleaved runs, worst first:"
    );
    if let Some((w, row)) = rows.first() {
        let name = row.split_whitespace().next().unwrap_or("");
        eprintln!("  worst, {threads} thread(s): {name} {w:.3}x (target <= 1.10)");
    }
    for (_, row) in &rows {
        eprintln!("{row}");
    }
}

/// Issue 16 part 1: ours against raw `clod_build` on the same parts over the whole
/// corpus and the stress cases, on 1 and 2 threads: the interleaved table first
/// (skipped when the command's filter names another group), then criterion's pair
/// per mesh and thread count.
fn dag_corpus(c: &mut Criterion) {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    if !(filter.is_empty() || filter.contains("dag_corpus") || "mesh/dag_corpus".contains(&filter))
    {
        return;
    }
    let meshes = corpus_inputs();
    let runs = std::env::var("FARSIGHT_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    for threads in [1, 2] {
        interleaved_table(&meshes, threads, runs);
    }
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let mut g = c.benchmark_group(format!("mesh/dag_corpus_{threads}t"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for (name, mesh) in &meshes {
            dag_pair(&mut g, name, mesh, Some(&pool));
        }
        g.finish();
    }
}

criterion_group!(
    benches,
    dag_build,
    dag_corpus,
    dag_build_2m,
    parallel_cook,
    cut
);
criterion_main!(benches);
