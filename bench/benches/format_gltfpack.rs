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

mod format_common;

use std::process::Command;

use farsight_format::{cook_mesh, cook_mesh_set, CookOptions};
use format_common::{bench_meshes, glb_bin_chunk, triangles, write_gltf};

fn main() {
    // cargo bench passes `--bench`; nothing else to parse.
    let Ok(cli) = std::env::var("GLTFPACK") else {
        eprintln!("format_gltfpack: set GLTFPACK=path/to/gltfpack/cli.js (bench/gltfpack_compare.sh does)");
        return;
    };
    let dir = std::env::temp_dir().join("farsight-gltfpack");
    let opts = CookOptions {
        tangent_bits: 8,
        generate_tangents: false,
        generate_normals: false,
        entropy: false,
        ..CookOptions::default()
    };
    let cooked_opts = CookOptions {
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
    for (name, parts) in bench_meshes() {
        let tris = triangles(&parts) as f64;
        let input = write_gltf(&parts, &dir.join(name), name);
        let output = dir.join(name).join(format!("{name}.packed.glb"));
        let status = Command::new("node")
            .arg(&cli)
            .args(["-i"])
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .args(["-cc", "-vp", "16", "-vt", "16", "-vn", "16", "-km", "-kn"])
            .status()
            .expect("node must be installed to run gltfpack");
        assert!(status.success(), "gltfpack failed on {}", input.display());
        let glb = std::fs::read(&output).unwrap();
        let theirs = zstd::bulk::compress(glb_bin_chunk(&glb), 19).unwrap().len();
        let mut plain = Vec::new();
        let mut per_part = 0;
        for m in &parts {
            plain.extend_from_slice(&cook_mesh(m, &opts).unwrap());
            per_part += cook_mesh(m, &cooked_opts).unwrap().len();
        }
        let fmt = cook_mesh_set(&parts, &cooked_opts).unwrap().len();
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
}
