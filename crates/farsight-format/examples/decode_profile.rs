//! Cooks an OBJ and decodes it over and over, for profilers (`perf record`): prints
//! the record's counts and per-stream codecs, then the best of the decode runs in ns
//! per triangle.
//!
//! `cargo run --release -p farsight-format --example decode_profile -- IN.obj [RUNS]
//! [OPTIONS]`, OPTIONS a comma-separated list of `no-positions`, `no-uvs`,
//! `no-normals` (predictions off) and `no-entropy`. IN may also be a `.parts` file
//! (the format bench's `FARSIGHT_BENCH_DUMP`), cooked as one set (options
//! `no-entropy`, `as-gltfpack`: cooked as the gltfpack comparison cooks,
//! `growth=F`: [`CookConfig::speed_growth`] set to F, and `save=OUT.set`), or a
//! `.set` file saved so, decoded without cooking.

use farsight_format::{cook_mesh, CookConfig, CookedMesh, DecodeScratch, MeshData};

#[path = "../tests/support/obj.rs"]
mod obj;
#[path = "support/parts.rs"]
mod parts;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(input) = args.get(1) else {
        return Err(
            "usage: decode_profile IN.obj [RUNS] [no-positions,no-uvs,no-normals,no-entropy]"
                .into(),
        );
    };
    let runs: usize = args.get(2).map_or(Ok(2000), |r| r.parse())?;
    let flags = args.get(3).map_or("", String::as_str);
    if input.ends_with(".parts") || input.ends_with(".set") {
        return profile_set(input, runs, flags);
    }
    let m = obj::obj_mesh(input)?;
    let off = |name: &str| flags.split(',').any(|f| f == name);
    let cook = CookConfig {
        predict_positions: !off("no-positions"),
        predict_uvs: !off("no-uvs"),
        predict_normals: !off("no-normals"),
        entropy: !off("no-entropy"),
        ..CookConfig::default()
    };
    let record = cook_mesh(&m, &cook)?;
    let cooked = CookedMesh::parse(&record)?;
    let h = &cooked.header;
    let tris = cooked.triangle_count() as f64;
    println!(
        "{input}: {} triangles, {} vertices, flags {:#x}, damping {}, {:.2} bytes per triangle",
        cooked.triangle_count(),
        h.vertex_count,
        h.flags,
        h.position_damping,
        record.len() as f64 / tris
    );
    for (name, d) in ["positions", "normals", "tangents", "uvs", "indices"]
        .iter()
        .zip(&h.streams)
    {
        println!(
            "  {name:<10} codec {} stored {:>7} coded {:>7} decoded {:>7}",
            d.codec, d.stored_len, d.coded_len, d.decoded_len
        );
    }
    let (mut out, mut scratch) = (MeshData::default(), DecodeScratch::default());
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        cooked.decode_into(&mut out, &mut scratch)?;
        std::hint::black_box(&out);
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    println!("decode: best of {runs}: {:.1} ns per triangle", best / tris);
    Ok(())
}

/// A `.parts` file (from the format bench's `FARSIGHT_BENCH_DUMP`): cooks the parts
/// as one set and prints where its decode spends its time.
fn profile_set(path: &str, runs: usize, flags: &str) -> Result<(), Box<dyn std::error::Error>> {
    use farsight_format::{cook_mesh_set, CookedSet};
    let parts = if path.ends_with(".set") {
        Vec::new()
    } else {
        parts::load(path)?
    };
    let off = |name: &str| flags.split(',').any(|f| f == name);
    // `as-gltfpack`: the options of the gltfpack comparison (no tangents or normals
    // generated, 8-bit tangents), as `format_gltfpack` cooks.
    let like_gltfpack = flags.split(',').any(|f| f == "as-gltfpack");
    let base = if like_gltfpack {
        CookConfig {
            tangent_bits: 8,
            generate_tangents: false,
            generate_normals: false,
            ..CookConfig::default()
        }
    } else {
        CookConfig::default()
    };
    let growth = flags
        .split(',')
        .find_map(|f| f.strip_prefix("growth="))
        .map_or(Ok(base.speed_growth), str::parse)?;
    let opts = CookConfig {
        entropy: !off("no-entropy"),
        speed_growth: growth,
        ..base
    };
    // A `.set` file is a cooked set written by an earlier run (`save=PATH` among the
    // options): decoded as it is, so a profiler sees the decode alone.
    let set_bytes = if path.ends_with(".set") {
        std::fs::read(path)?
    } else {
        cook_mesh_set(&parts, &opts)?
    };
    if let Some(out) = flags.split(',').find_map(|f| f.strip_prefix("save=")) {
        std::fs::write(out, &set_bytes)?;
    }
    let set = CookedSet::parse(&set_bytes)?;
    let best = |f: &mut dyn FnMut()| {
        let mut best = f64::MAX;
        for _ in 0..runs {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_nanos() as f64);
        }
        best
    };
    let mut scratch = DecodeScratch::default();
    let mut buf = Vec::new();
    let body_ns = best(&mut || {
        std::hint::black_box(set.body(&mut buf, &mut scratch).unwrap().len());
    });
    let body = set.body(&mut buf, &mut scratch)?.to_vec();
    let tris: usize = (0..set.record_count())
        .map(|r| set.record(&body, r).unwrap().triangle_count() as usize)
        .sum();
    let mut meshes = Vec::new();
    let total = best(&mut || set.decode_into(&mut meshes, &mut scratch).unwrap());
    println!(
        "{path}: {} parts, {} records, {tris} triangles, {} bytes, body codec {}, body {} -> {}",
        set.part_count(),
        set.record_count(),
        set_bytes.len(),
        set.header.body_codec,
        set.header.body_stored_len,
        set.header.body_len
    );
    println!(
        "set decode {:.0} ns ({:.1} ns/tri); body {:.0} ns ({:.1} ns/tri)",
        total,
        total / tris as f64,
        body_ns,
        body_ns / tris as f64
    );
    let mut out = MeshData::default();
    for r in 0..set.record_count() {
        let m = set.record(&body, r)?;
        let h = &m.header;
        let ns = best(&mut || m.decode_into(&mut out, &mut scratch).unwrap());
        let codecs: Vec<String> = h
            .streams
            .iter()
            .map(|d| format!("{}:{}", d.codec, d.stored_len))
            .collect();
        println!(
            "  record {r}: {} tris {} verts flags {:#x}: {:.0} ns ({:.1}/tri, estimated {:.1})  streams {}",
            m.triangle_count(),
            h.vertex_count,
            h.flags,
            ns,
            ns / m.triangle_count().max(1) as f64,
            m.estimated_decode_ns() / m.triangle_count().max(1) as f64,
            codecs.join(" ")
        );
    }
    Ok(())
}
