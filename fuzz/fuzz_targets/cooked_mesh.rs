//! The cooked mesh record reader and decoder (zstd, meshopt, dequantisation).
#![no_main]

use farsight_format::{CookedMesh, DecodeScratch, MeshData};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = CookedMesh::parse(data) {
        let mut out = MeshData::default();
        let mut scratch = DecodeScratch::default();
        if m.decode_into(&mut out, &mut scratch).is_ok() {
            let n = m.header.vertex_count;
            assert!(out.indices.iter().all(|&i| i < n));
            assert_eq!(out.positions.len(), n as usize);
        }
    }
});
