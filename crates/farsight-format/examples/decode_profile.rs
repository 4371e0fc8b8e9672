//! Cooks an OBJ and decodes it over and over, for profilers (`perf record`): prints
//! the record's counts and per-stream codecs, then the best of the decode runs in ns
//! per triangle.
//!
//! `cargo run --release -p farsight-format --example decode_profile -- IN.obj [RUNS]
//! [OPTIONS]`, OPTIONS a comma-separated list of `no-positions`, `no-uvs`,
//! `no-normals` (predictions off) and `no-entropy`.

use farsight_format::{cook_mesh, CookOptions, CookedMesh, DecodeScratch, MeshData};

#[path = "../tests/support/obj.rs"]
mod obj;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(input) = args.get(1) else {
        return Err(
            "usage: decode_profile IN.obj [RUNS] [no-positions,no-uvs,no-normals,no-entropy]"
                .into(),
        );
    };
    let runs: usize = args.get(2).map_or(Ok(2000), |r| r.parse())?;
    let m = obj::obj_mesh(input)?;
    let flags = args.get(3).map_or("", String::as_str);
    let off = |name: &str| flags.split(',').any(|f| f == name);
    let cook = CookOptions {
        predict_positions: !off("no-positions"),
        predict_uvs: !off("no-uvs"),
        predict_normals: !off("no-normals"),
        entropy: !off("no-entropy"),
        ..CookOptions::default()
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
