//! A cluster level from its file bytes to bytes ready for the GPU, against gltfpack's
//! own file of the same mesh decoded as a loader does (issue 29 part 5, restating
//! issue 16's decode figure; target: at most 1.0x on every corpus mesh from 1,000
//! triangles).
//!
//! Ours is what the streamer's worker does with a level it read (farsight-stream's
//! `ClusterStreamer` with its level check): [`CookedModel::check_level`] (length,
//! CRC-32, the record's layout and header against the manifest, the error bounds),
//! then one copy into the staging ring. Nothing is unpacked: the 32-byte vertices
//! and the cluster slots go to the GPU pools as stored (the GPU path's
//! `GpuUploader`; `tests/it/gpu_cut.rs` checks the pools hold the file's bytes).
//! Each mesh of `../shared/data/meshes` is cooked with clusters, as `farsight cook
//! mesh --clusters` does, each level in its own buffer as the worker assembles it.
//! Two figures: level 0 (the whole mesh at full detail, what gltfpack's file holds)
//! and every level of the file (the cost per triangle of any level streamed).
//!
//! gltfpack's side is `format_gltfpack.rs`'s: the same parts written as a glTF,
//! packed by gltfpack@1.3.0 (16-bit positions, uvs and normals, meshopt-coded), zstd
//! -19 over its BIN chunk, decoded with zstd and meshoptimizer's decoders and filters
//! and left quantised (`format_common::gltfpack`). Run by
//! `GLTFPACK=path/to/cli.js cargo bench -p farsight-bench --bench cluster_upload`
//! (`bench/gltfpack_compare.sh` installs gltfpack and sets it); without GLTFPACK only
//! our side is timed, and the bench says so.
//!
//! Criterion times each side per mesh (throughput in triangles); then a table gives
//! ns per triangle on one thread, best of `FARSIGHT_BENCH_RUNS` (default 200)
//! interleaved runs, and the ratio.

mod format_common;

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_stream::cluster::CookedModel;
use format_common::gltfpack::{pack, peer_decode, peer_views, PeerView};
use format_common::{corpus_files, corpus_parts, glb_bin_chunk, kept, triangles, write_gltf};

/// One level as the worker holds it once read: its model, index and bytes.
struct Level {
    model: usize,
    level: usize,
    bytes: Vec<u8>,
}

/// gltfpack's file of a mesh: its BIN chunk after zstd -19, its compressed views, its
/// triangles.
struct Peer {
    zbin: Vec<u8>,
    views: Vec<PeerView>,
    triangles: u64,
}

/// One corpus mesh, cooked with clusters.
struct Case {
    name: &'static str,
    models: Vec<CookedModel>,
    /// Level 0 of every geometry.
    finest: Vec<Level>,
    finest_triangles: u64,
    /// Every level of every geometry.
    all: Vec<Level>,
    all_triangles: u64,
    peer: Option<Peer>,
}

/// What the worker does with each level: check it, copy it into the staging ring.
/// Returns the bytes made ready.
fn make_ready(models: &[CookedModel], levels: &[Level], staging: &mut [u8]) -> usize {
    let mut n = 0;
    for l in levels {
        models[l.model]
            .check_level(l.level, &l.bytes)
            .expect("a cooked level passes its check");
        staging[..l.bytes.len()].copy_from_slice(&l.bytes);
        n += l.bytes.len();
    }
    n
}

fn cases() -> Vec<Case> {
    let gltfpack = std::env::var("GLTFPACK").ok();
    if gltfpack.is_none() {
        eprintln!(
            "cluster_upload: GLTFPACK is not set (bench/gltfpack_compare.sh installs gltfpack \
             and sets it): only our side is timed"
        );
    }
    let dir = std::env::temp_dir().join("farsight-cluster-upload");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = Vec::new();
    for (name, rel, path) in corpus_files() {
        if !kept(name) {
            continue;
        }
        let cooked = cook_file(&path, &CookKind::Clusters(ClusterConfig::default()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .bytes;
        let file = dir.join(format!("{name}.farsight"));
        std::fs::write(&file, &cooked).unwrap();
        let models = CookedModel::open_all(&file).unwrap();
        let (mut finest, mut all) = (Vec::new(), Vec::new());
        let (mut finest_triangles, mut all_triangles) = (0, 0);
        for (m, model) in models.iter().enumerate() {
            for (l, level) in model.levels().enumerate() {
                let at = level.offset as usize;
                let bytes = cooked[at..at + level.bytes as usize].to_vec();
                let tris = u64::from(level.triangles);
                all_triangles += tris;
                if l == 0 {
                    finest_triangles += tris;
                    finest.push(Level {
                        model: m,
                        level: l,
                        bytes: bytes.clone(),
                    });
                }
                all.push(Level {
                    model: m,
                    level: l,
                    bytes,
                });
            }
        }
        let peer = gltfpack.as_deref().map(|cli| {
            let parts = corpus_parts(&rel);
            let glb = pack(cli, &write_gltf(&parts, &dir.join(name), name));
            Peer {
                zbin: zstd::bulk::compress(glb_bin_chunk(&glb), 19).unwrap(),
                views: peer_views(&glb),
                triangles: triangles(&parts) as u64,
            }
        });
        out.push(Case {
            name,
            models,
            finest,
            finest_triangles,
            all,
            all_triangles,
            peer,
        });
    }
    out
}

fn bench(c: &mut Criterion) {
    let cases = cases();
    let largest = cases
        .iter()
        .flat_map(|c| c.all.iter().map(|l| l.bytes.len()))
        .max()
        .unwrap_or(0);
    let mut staging = vec![0u8; largest];
    let mut z = zstd::bulk::Decompressor::new().unwrap();
    let (mut bin, mut out) = (Vec::new(), Vec::new());
    let mut g = c.benchmark_group("cluster_upload");
    for case in &cases {
        g.throughput(Throughput::Elements(case.finest_triangles));
        g.bench_function(BenchmarkId::new("level0", case.name), |b| {
            b.iter(|| black_box(make_ready(&case.models, &case.finest, &mut staging)))
        });
        g.throughput(Throughput::Elements(case.all_triangles));
        g.bench_function(BenchmarkId::new("all_levels", case.name), |b| {
            b.iter(|| black_box(make_ready(&case.models, &case.all, &mut staging)))
        });
        if let Some(p) = &case.peer {
            g.throughput(Throughput::Elements(p.triangles));
            g.bench_function(BenchmarkId::new("gltfpack", case.name), |b| {
                b.iter(|| black_box(peer_decode(&p.zbin, &p.views, &mut bin, &mut out, &mut z)))
            });
        }
    }
    g.finish();
    table(&cases, &mut staging);
}

/// ns per triangle, best of the interleaved runs, and the ratio to gltfpack's.
fn table(cases: &[Case], staging: &mut [u8]) {
    let runs: usize = std::env::var("FARSIGHT_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    println!(
        "\nfile bytes to bytes ready for the GPU, ns per triangle, one thread, best of {runs} \
         interleaved runs (ours: check + staging copy, left as stored; gltfpack's: zstd + \
         meshopt decoders and filters, left quantised). tris: gltfpack's; ours per triangle \
         stored; ratios: the whole mesh's time, ours (level 0; every level scaled to level \
         0's triangles) over gltfpack's"
    );
    println!(
        "{:<20} {:>8} {:>9} {:>8} {:>10} {:>8} {:>9} {:>10} {:>6}",
        "mesh",
        "tris",
        "gltfpack",
        "level 0",
        "all levels",
        "ratio 0",
        "ratio all",
        "B/tri l. 0",
        "parts"
    );
    let mut z = zstd::bulk::Decompressor::new().unwrap();
    let (mut bin, mut out) = (Vec::new(), Vec::new());
    let mut worst = ("", f64::NEG_INFINITY);
    for case in cases {
        let best = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64
        };
        let (mut peer, mut finest, mut all) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..runs {
            if let Some(p) = &case.peer {
                peer = peer.min(best(&mut || {
                    black_box(peer_decode(&p.zbin, &p.views, &mut bin, &mut out, &mut z));
                }));
            }
            finest = finest.min(best(&mut || {
                black_box(make_ready(&case.models, &case.finest, staging));
            }));
            all = all.min(best(&mut || {
                black_box(make_ready(&case.models, &case.all, staging));
            }));
        }
        // The ratios are of whole-mesh times: a file may store a repeated part once
        // (cakeBirthday: 444 triangles stored for gltfpack's 1,332), so its
        // triangles per level are not gltfpack's.
        let ratio = finest / peer;
        let ratio_all = all * case.finest_triangles as f64 / (peer * case.all_triangles as f64);
        let finest = finest / case.finest_triangles as f64;
        let all = all / case.all_triangles as f64;
        let (peer, tris) = match &case.peer {
            Some(p) => (peer / p.triangles as f64, p.triangles),
            None => (f64::NAN, case.finest_triangles),
        };
        let bytes: usize = case.finest.iter().map(|l| l.bytes.len()).sum();
        println!(
            "{:<20} {:>8} {:>9.2} {:>8.2} {:>10.2} {:>8.3} {:>9.3} {:>10.1} {:>6}",
            case.name,
            tris,
            peer,
            finest,
            all,
            ratio,
            ratio_all,
            bytes as f64 / case.finest_triangles as f64,
            case.models.len()
        );
        if tris >= 1000 && ratio.is_finite() && ratio > worst.1 {
            worst = (case.name, ratio);
        }
    }
    println!(
        "worst ratio of level 0 to gltfpack's file from 1,000 triangles: {} {:.3} (target <= 1.0)",
        worst.0, worst.1
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
