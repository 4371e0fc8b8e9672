//! The cooked mesh record reader and decoder (zstd, meshopt, dequantisation), and the
//! cooked set reader over the same bytes.
#![no_main]

use farsight_format::{CookedMesh, CookedSet, DecodeScratch, MeshData};
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
    if let Ok(s) = CookedSet::parse(data) {
        let mut out = Vec::new();
        let mut scratch = DecodeScratch::default();
        if s.decode_into(&mut out, &mut scratch).is_ok() {
            assert_eq!(out.len(), s.record_count());
            for m in &out {
                let n = m.positions.len() as u32;
                assert!(m.indices.iter().all(|&i| i < n));
            }
        }
    }
});
