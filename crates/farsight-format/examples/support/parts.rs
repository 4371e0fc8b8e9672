//! The `.parts` files the format bench writes with `FARSIGHT_BENCH_DUMP` (each part a
//! u32 length and a full-precision record), shared by the profiling examples.

use farsight_format::{FullMesh, MeshData};

/// Every part of the `.parts` file at `path`; a truncated file is an error.
pub fn load(path: &str) -> Result<Vec<MeshData>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path)?;
    let mut parts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let truncated = || format!("{path}: a part runs past the end at byte {at}");
        let len = bytes.get(at..at + 4).ok_or_else(truncated)?;
        let len = u32::from_le_bytes(len.try_into()?) as usize;
        let record = bytes.get(at + 4..at + 4 + len).ok_or_else(truncated)?;
        parts.push(FullMesh::parse(record)?.to_mesh());
        at += 4 + len;
    }
    Ok(parts)
}
