//! Cooked table size against gltfpack at the same bit depths (issue 3, target: at most
//! 0.9x). Run by `bench/gltfpack_compare.sh`, which installs gltfpack@1.3.0 with npm
//! and sets GLTFPACK to its cli.js; without GLTFPACK this target says so and exits.
//!
//! Both sides are quantised (16-bit positions and uvs, 16-bit normals; tangents at
//! gltfpack's cap of 8 bits on both sides), meshopt-coded, and then compressed by the
//! same entropy coder, zstd level 19: "plain" compresses our records written with the
//! entropy layer off as one buffer, exactly as gltfpack's BIN chunk is; "written" is
//! the cooked record as the format stores it (its own per-stream zstd layer, which
//! picks meshopt+zstd or byte planes+zstd per stream), all of a mesh's parts in one
//! cooked set record (`cook_mesh_set`: identical parts stored once, the body stored
//! raw or as one zstd frame, whichever is smaller); "per part" is the older layout,
//! one record per part, printed beside it. Tangents are kept where the
//! source has them (FlightHelmet) and not generated elsewhere, and normals are not
//! invented for a mesh without them (bunny), as gltfpack does.
//!
//! The second table decodes both files side by side, one thread, best of
//! `FARSIGHT_BENCH_RUNS` (default 200) interleaved runs: gltfpack's as a loader
//! would, zstd over its BIN chunk, then meshoptimizer's decoders and filters on every
//! compressed buffer view (`peer_decode`; what that leaves is quantised, which a
//! renderer uploads as it is under KHR_mesh_quantization), against our cooked set
//! decoded to what a renderer uploads from it (f32 positions, unit normals and
//! tangents, f32 uvs, u32 indices).

mod format_common;

use farsight_format::{cook_mesh, cook_mesh_set, CookConfig, CookedSet, DecodeScratch};
use format_common::gltfpack::{pack, peer_decode, peer_views, PeerView};
use format_common::{bench_meshes, glb_bin_chunk, triangles, write_gltf};

fn main() {
    // cargo bench passes `--bench`; nothing else to parse.
    let Ok(cli) = std::env::var("GLTFPACK") else {
        eprintln!("format_gltfpack: set GLTFPACK=path/to/gltfpack/cli.js (bench/gltfpack_compare.sh does)");
        return;
    };
    let dir = std::env::temp_dir().join("farsight-gltfpack");
    let opts = CookConfig {
        tangent_bits: 8,
        generate_tangents: false,
        generate_normals: false,
        entropy: false,
        ..CookConfig::default()
    };
    let cooked_opts = CookConfig {
        entropy: true,
        ..opts
    };
    println!(
        "{:<13} {:>7} {:>15} {:>17} {:>16} {:>12} {:>14} {:>13}",
        "mesh",
        "tris",
        "gltfpack+zstd",
        "ours meshopt+zstd",
        "ours as written",
        "ratio plain",
        "ratio per part",
        "ratio written"
    );
    let mut worst = ("", 0.0f64);
    let mut decoded = Vec::new();
    for (name, parts) in bench_meshes() {
        let tris = triangles(&parts) as f64;
        let input = write_gltf(&parts, &dir.join(name), name);
        let glb = pack(&cli, &input);
        let theirs = zstd::bulk::compress(glb_bin_chunk(&glb), 19).unwrap().len();
        let mut plain = Vec::new();
        let mut per_part = 0;
        for m in &parts {
            plain.extend_from_slice(&cook_mesh(m, &opts).unwrap());
            per_part += cook_mesh(m, &cooked_opts).unwrap().len();
        }
        let set = cook_mesh_set(&parts, &cooked_opts).unwrap();
        let fmt = set.len();
        let zglb = zstd::bulk::compress(glb_bin_chunk(&glb), 19).unwrap();
        decoded.push((name, tris, set, zglb, peer_views(&glb)));
        let ours = zstd::bulk::compress(&plain, 19).unwrap().len();
        let ratio = ours as f64 / theirs as f64;
        let ratio_part = per_part as f64 / theirs as f64;
        let ratio_fmt = fmt as f64 / theirs as f64;
        if ratio_fmt > worst.1 {
            worst = (name, ratio_fmt);
        }
        println!(
            "{:<13} {:>7} {:>15.2} {:>17.2} {:>16.2} {:>12.3} {:>14.3} {:>13.3}",
            name,
            tris,
            theirs as f64 / tris,
            ours as f64 / tris,
            fmt as f64 / tris,
            ratio,
            ratio_part,
            ratio_fmt
        );
    }
    println!(
        "bytes per triangle; worst ratio of the file as written to gltfpack+zstd: {} {:.3} (target <= 0.9)",
        worst.0, worst.1
    );
    decode_table(&decoded);
}

/// What the decode table times for one mesh: its name, triangles, our cooked set,
/// gltfpack's BIN chunk after zstd -19, and gltfpack's compressed views.
type DecodeCase = (&'static str, f64, Vec<u8>, Vec<u8>, Vec<PeerView>);

/// Decode time per triangle, gltfpack's file against our cooked set, interleaved.
fn decode_table(files: &[DecodeCase]) {
    let runs: usize = std::env::var("FARSIGHT_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    println!(
        "\ndecode, ns per triangle, one thread, best of {runs} interleaved runs (ours: to f32 arrays; gltfpack's: zstd + meshopt decoders and filters, left quantised)"
    );
    println!(
        "{:<13} {:>7} {:>10} {:>10} {:>8}",
        "mesh", "tris", "gltfpack", "ours", "ratio"
    );
    let mut z = zstd::bulk::Decompressor::new().unwrap();
    let (mut bin, mut out) = (Vec::new(), Vec::new());
    let (mut meshes, mut scratch) = (Vec::new(), DecodeScratch::default());
    let mut worst = [("", 0.0f64, 0.0f64); 2]; // from 1,000 triangles, under
    for (name, tris, set, zbin, views) in files {
        let set = CookedSet::parse(set).unwrap();
        let (mut peer, mut ours) = (f64::MAX, f64::MAX);
        for _ in 0..runs {
            let t = std::time::Instant::now();
            std::hint::black_box(peer_decode(zbin, views, &mut bin, &mut out, &mut z));
            peer = peer.min(t.elapsed().as_nanos() as f64);
            let t = std::time::Instant::now();
            set.decode_into(&mut meshes, &mut scratch).unwrap();
            std::hint::black_box(&meshes);
            ours = ours.min(t.elapsed().as_nanos() as f64);
        }
        let (peer, ours) = (peer / tris, ours / tris);
        println!(
            "{:<13} {:>7} {:>10.1} {:>10.1} {:>8.2}",
            name,
            tris,
            peer,
            ours,
            ours / peer
        );
        let w = &mut worst[usize::from(*tris < 1000.0)];
        if ours > w.1 {
            *w = (name, ours, peer);
        }
    }
    for (what, (name, ours, peer)) in ["from 1,000 triangles", "under 1,000"].iter().zip(worst) {
        println!(
            "worst decode {what}: {name} {ours:.1} ns per triangle (gltfpack's file {peer:.1}, ratio {:.2})",
            ours / peer
        );
    }
}
