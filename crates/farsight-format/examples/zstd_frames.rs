//! Times zstd frames as the cook writes them, with Huffman-coded literals (zstd's
//! default) and with raw literals, for the decode-time model of `cost.rs`: every
//! zstd frame the cook writes for every part of the `.parts` files given (from the
//! format bench's `FARSIGHT_BENCH_DUMP`), undone and compressed at level 19 both ways and decoded (best of RUNS, one reused
//! context). Prints `MODE stored decoded ns` per frame, MODE `H` or `R`, for a
//! least-squares fit (fixed, per stored byte, per decoded byte).
//!
//! `cargo run --release -p farsight-format --example zstd_frames -- RUNS A.parts B.parts ...`

use farsight_format::{cook_mesh, CookConfig, CookedMesh};
use zstd::zstd_safe::{CParameter, ParamSwitch};

#[path = "support/parts.rs"]
mod parts;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args
        .get(1)
        .ok_or("usage: zstd_frames RUNS FILE.parts...")?
        .parse()?;
    let opts = CookConfig::default();
    let mut z = zstd::bulk::Decompressor::new()?;
    let mut out = Vec::with_capacity(1 << 24);
    for path in &args[2..] {
        for m in parts::load(path)? {
            let record = cook_mesh(&m, &opts)?;
            let cooked = CookedMesh::parse(&record)?;
            // Each zstd frame the cook wrote, undone: what the cook compressed.
            let mut inputs: Vec<Vec<u8>> = Vec::new();
            for (d, s) in cooked.header.streams.iter().zip(cooked.streams) {
                let frame = match d.codec {
                    2 | 3 => s,
                    4 | 5 => {
                        let len = u32::from_le_bytes(s[..4].try_into()?) as usize;
                        &s[4..4 + len]
                    }
                    _ => continue,
                };
                inputs.push(zstd::bulk::decompress(frame, 1 << 26)?);
            }
            for data in &inputs {
                for raw_literals in [false, true] {
                    let mut zc = zstd::bulk::Compressor::new(19)?;
                    if raw_literals {
                        zc.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))?;
                    }
                    let frame = zc.compress(data)?;
                    let data = &data[..];
                    let mut best = f64::MAX;
                    for _ in 0..runs {
                        out.clear();
                        let t = std::time::Instant::now();
                        z.decompress_to_buffer(&frame, &mut out)?;
                        best = best.min(t.elapsed().as_nanos() as f64);
                    }
                    let mode = if raw_literals { 'R' } else { 'H' };
                    println!("{mode} {} {} {best}", frame.len(), data.len());
                }
            }
        }
    }
    Ok(())
}
