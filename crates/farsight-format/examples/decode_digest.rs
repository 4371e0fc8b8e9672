//! Prints a digest of every decoded array of each cooked set named (`.set` files the
//! profiling examples save), one line per record: for checking that a decoder change
//! gives the same bits as the decoder before it (run the old and the new binary, diff
//! the output).
//!
//! `cargo run --release -p farsight-format --example decode_digest -- A.set [B.set ...]`

use farsight_format::{CookedSet, DecodeScratch};

/// FNV-1a over bytes: stable across builds and toolchains, unlike `DefaultHasher`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut scratch = DecodeScratch::default();
    let mut meshes = Vec::new();
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path)?;
        let set = CookedSet::parse(&bytes)?;
        // Twice into the same buffers: the second decode must not depend on what
        // the first left behind.
        for pass in 0..2 {
            set.decode_into(&mut meshes, &mut scratch)?;
            for (r, m) in meshes.iter().enumerate() {
                println!(
                    "{path} pass {pass} record {r}: {} verts {} indices: positions {:016x} normals {:016x} tangents {:016x} uvs {:016x} indices {:016x}",
                    m.positions.len(),
                    m.indices.len(),
                    fnv(bytemuck::cast_slice(&m.positions)),
                    fnv(bytemuck::cast_slice(&m.normals)),
                    fnv(bytemuck::cast_slice(&m.tangents)),
                    fnv(bytemuck::cast_slice(&m.uvs)),
                    fnv(bytemuck::cast_slice(&m.indices)),
                );
            }
        }
    }
    Ok(())
}
