//! The full-precision mesh record reader.
#![no_main]

use farsight_format::{AlignedBytes, FullMesh};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let aligned = AlignedBytes::from(data);
    if let Ok(m) = FullMesh::parse(&aligned) {
        let n = m.header.vertex_count;
        assert!(m.indices.iter().all(|&i| i < n));
    }
});
