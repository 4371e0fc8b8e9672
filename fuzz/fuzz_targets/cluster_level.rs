//! The cluster level record reader.
#![no_main]

use farsight_format::{AlignedBytes, ClusterLevel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let aligned = AlignedBytes::from(data);
    if let Ok(l) = ClusterLevel::parse(&aligned) {
        assert!(l.indices.iter().all(|&i| i < l.header.vertex_count));
    }
});
