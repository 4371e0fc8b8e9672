//! Describing records without knowing the manifest type: what `farsight inspect`
//! prints per record.

use crate::cooked::{Codec, STREAMS};
use crate::{
    ClusterLevel, CookedMesh, CookedSet, DecodeScratch, FormatError, FullMesh, Record, RecordTag,
    SetCodec,
};

/// One stream of a record as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSummary {
    /// The stream's name ("positions", "indices", ...).
    pub name: &'static str,
    /// "raw", "meshopt", "meshopt+zstd" or "f32"/"u32" arrays.
    pub codec: &'static str,
    /// Bytes stored in the record.
    pub stored_bytes: u64,
    /// Bytes it decodes to.
    pub decoded_bytes: u64,
}

/// What a record holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSummary {
    /// The record's kind.
    pub tag: RecordTag,
    /// The record's size in bytes.
    pub bytes: u64,
    /// Vertices it holds.
    pub vertices: u64,
    /// Triangles it holds.
    pub triangles: u64,
    /// A line of kind-specific facts (bits, bounds, errors).
    pub detail: String,
    /// Its streams or arrays, in stored order.
    pub streams: Vec<StreamSummary>,
}

impl RecordSummary {
    /// Stored bytes per triangle, if the record has triangles.
    pub fn bytes_per_triangle(&self) -> Option<f64> {
        (self.triangles > 0).then(|| self.bytes as f64 / self.triangles as f64)
    }
}

fn s(name: &'static str, codec: &'static str, stored: u64, decoded: u64) -> StreamSummary {
    StreamSummary {
        name,
        codec,
        stored_bytes: stored,
        decoded_bytes: decoded,
    }
}

/// Validates and summarises a record of a kind this crate defines; records of other
/// kinds are summarised by size alone.
pub fn describe_record(record: &Record<'_>) -> Result<RecordSummary, FormatError> {
    let bytes = record.bytes.len() as u64;
    let mut out = RecordSummary {
        tag: record.tag,
        bytes,
        vertices: 0,
        triangles: 0,
        detail: String::new(),
        streams: Vec::new(),
    };
    match record.tag {
        RecordTag::MESH_FULL => describe_full(record.bytes, &mut out)?,
        RecordTag::MESH_COOKED => describe_cooked(record.bytes, &mut out)?,
        RecordTag::MESH_COOKED_SET => describe_set(record.bytes, &mut out)?,
        RecordTag::CLUSTER_LEVEL => describe_cluster_level(record.bytes, &mut out)?,
        _ => {}
    }
    Ok(out)
}

/// A full-precision mesh record: its arrays.
fn describe_full(bytes: &[u8], out: &mut RecordSummary) -> Result<(), FormatError> {
    let m = FullMesh::parse(bytes)?;
    let n = m.positions.len() as u64;
    out.vertices = n;
    out.triangles = m.indices.len() as u64 / 3;
    out.detail = format!(
        "bounds {:?}..{:?}",
        m.header.bounds_min, m.header.bounds_max
    );
    out.streams.push(s("positions", "f32x3", n * 12, n * 12));
    for (name, len, codec) in [
        ("normals", m.normals.len() * 12, "f32x3"),
        ("uvs", m.uvs.len() * 8, "f32x2"),
        ("indices", m.indices.len() * 4, "u32"),
        ("provenance", m.provenance.len() * 4, "u32"),
    ] {
        if len > 0 {
            out.streams.push(s(name, codec, len as u64, len as u64));
        }
    }
    Ok(())
}

/// A cooked mesh record: its bits, damping, bounds and coded streams.
fn describe_cooked(bytes: &[u8], out: &mut RecordSummary) -> Result<(), FormatError> {
    let m = CookedMesh::parse(bytes)?;
    let h = m.header;
    out.vertices = h.vertex_count as u64;
    out.triangles = h.index_count as u64 / 3;
    out.detail = format!(
        "bits: position {} uv {} normal {} tangent {}; position damping {}/8; bounds {:?}..{:?}",
        h.position_bits,
        h.uv_bits,
        h.normal_bits,
        h.tangent_bits,
        h.position_damping,
        h.bounds_min,
        h.bounds_max
    );
    if h.uv_axes != 0 {
        out.detail.push_str("; uvs predicted from positions");
    }
    for (i, d) in h.streams.iter().enumerate() {
        if d.decoded_len == 0 {
            continue;
        }
        let codec = match d.codec {
            c if c == Codec::Raw as u32 => "raw",
            c if c == Codec::Meshopt as u32 => "meshopt",
            c if c == Codec::MeshoptZstd as u32 => "meshopt+zstd",
            c if c == Codec::Buckets as u32 => "buckets+zstd",
            c if c == Codec::BucketsZigzag as u32 => "zigzag buckets+zstd",
            c if c == Codec::BucketsRanged as u32 => "buckets+rANS",
            c if c == Codec::BucketsRangedZigzag as u32 => "zigzag buckets+rANS",
            _ => "planes+zstd",
        };
        let name = ["positions", "normals", "tangents", "uvs", "indices"][i];
        let _ = STREAMS[i];
        out.streams
            .push(s(name, codec, d.stored_len as u64, d.decoded_len as u64));
    }
    Ok(())
}

/// A cooked set: its parts and ranges, and its body (decoded to count vertices).
fn describe_set(bytes: &[u8], out: &mut RecordSummary) -> Result<(), FormatError> {
    let set = CookedSet::parse(bytes)?;
    let h = set.header;
    let mut buf = Vec::new();
    let body = set.body(&mut buf, &mut DecodeScratch::default())?;
    let mut record_triangles = Vec::with_capacity(set.record_count());
    for r in 0..set.record_count() {
        let m = set.record(body, r)?;
        out.vertices += m.header.vertex_count as u64;
        record_triangles.push(m.triangle_count() as u64);
    }
    let spans: Vec<u64> = set.spans().map(|s| s.triangle_count as u64).collect();
    out.triangles = (0..set.part_count())
        .filter_map(|p| set.part_slot(p))
        .map(|s| spans[s])
        .sum();
    let codec = if h.body_codec == SetCodec::Zstd as u32 {
        "zstd"
    } else {
        "raw"
    };
    out.detail = format!(
        "{} parts drawing {} distinct ranges of {} records ({} triangles stored once); triangles counted per part",
        h.part_count,
        h.slot_count,
        h.record_count,
        record_triangles.iter().sum::<u64>()
    );
    out.streams.push(s(
        "records",
        codec,
        h.body_stored_len as u64,
        h.body_len as u64,
    ));
    Ok(())
}

/// A cluster level: its errors and arrays.
fn describe_cluster_level(bytes: &[u8], out: &mut RecordSummary) -> Result<(), FormatError> {
    let l = ClusterLevel::parse(bytes)?;
    let h = l.header;
    out.vertices = h.vertex_count as u64;
    out.triangles = h.triangle_count as u64;
    // The top level's clusters have no parent: its error is f32::MAX.
    let parent = if h.max_parent_error == f32::MAX {
        "none (top level)".to_owned()
    } else {
        h.max_parent_error.to_string()
    };
    out.detail = format!(
        "level {}: {} clusters, max error {}, max parent error {parent}",
        h.level, h.cluster_count, h.max_error
    );
    let slots = l.indices.len() as u64 * 4;
    out.streams.push(s(
        "clusters",
        "ClusterInfo",
        l.clusters.len() as u64 * 48,
        l.clusters.len() as u64 * 48,
    ));
    out.streams.push(s(
        "vertices",
        "ClusterVertex",
        h.vertex_count as u64 * 32,
        h.vertex_count as u64 * 32,
    ));
    out.streams.push(s("indices", "u32 slots", slots, slots));
    Ok(())
}
