//! Cluster levels on disk: one farsight container per level, holding one cluster level
//! record of the format crate ([`ClusterLevel`]) and a [`ClusterMeshManifest`] naming
//! it. The streamer reads such a file in chunks and, once every chunk has arrived,
//! checks the whole file with the format reader ([`check_level_file`]) on the worker
//! thread that read the last chunk; a file that fails counts as a failed read.
//!
//! [`synthetic_level`] makes a valid level of a given size for the simulation, the
//! tests and the benches: grid patches of 8 x 8 vertices, one per cluster.

use farsight_format::{
    encode_cluster_level, push_cluster_slot, AlignedBytes, ClusterInfo, ClusterLevel,
    ClusterLevelEntry, ClusterLevelHeader, ClusterMeshManifest, ClusterVertex, Container,
    FileWriter, FloatVertex, FormatError, RecordTag, Version, CLUSTER_SLOT_SHIFT, RECORD_ALIGN,
};
use glam::Vec3;
use rand::Rng;

/// Why a level file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LevelFileError {
    #[error("not a valid farsight cluster file: {0}")]
    Format(#[from] FormatError),
    #[error("a level file holds exactly one level; its manifest lists {found}")]
    LevelCount { found: usize },
    #[error("the level's record is a {found:?} record, not a cluster level")]
    RecordTag { found: RecordTag },
}

/// What a valid level file holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelFileSummary {
    pub level: u32,
    pub clusters: u32,
    pub triangles: u32,
    pub max_parent_error: f32,
}

/// Validates a level file with the format reader: the container (identifier,
/// version, lengths, CRC-32, directory, manifest), then the one cluster level record
/// ([`ClusterLevel::parse`]); the reader checks the manifest's copies of the record's
/// counts, size and error ([`FormatError::ManifestDisagrees`]).
/// Copies the bytes once when they are not 16-byte aligned (records are read in
/// place); never allocates more than `bytes` holds.
pub fn check_level_file(bytes: &[u8]) -> Result<LevelFileSummary, LevelFileError> {
    let copy;
    let bytes = if (bytes.as_ptr() as usize) % RECORD_ALIGN == 0 {
        bytes
    } else {
        copy = AlignedBytes::from(bytes);
        copy.as_slice()
    };
    let file = Container::<ClusterMeshManifest>::read(bytes)?;
    let levels = &file.manifest().levels;
    let [entry] = levels.as_slice() else {
        return Err(LevelFileError::LevelCount {
            found: levels.len(),
        });
    };
    let record = file.record(entry.record)?;
    if record.tag != RecordTag::CLUSTER_LEVEL {
        return Err(LevelFileError::RecordTag { found: record.tag });
    }
    let level = ClusterLevel::parse(record.bytes)?;
    let h = &level.header;
    Ok(LevelFileSummary {
        level: h.level,
        clusters: h.cluster_count,
        triangles: h.triangle_count,
        max_parent_error: h.max_parent_error,
    })
}

/// The parts of one cluster level record.
#[derive(Clone, Debug)]
pub struct LevelParts {
    pub header: ClusterLevelHeader,
    pub clusters: Vec<ClusterInfo>,
    pub vertices: Vec<ClusterVertex>,
    pub indices: Vec<u32>,
}

/// Writes `parts` as a level file (a cooked container with one cluster level record).
pub fn encode_level_file(name: &str, parts: &LevelParts) -> Result<Vec<u8>, FormatError> {
    let record = encode_cluster_level(
        &parts.header,
        &parts.clusters,
        &parts.vertices,
        &parts.indices,
    )?;
    let mut w = FileWriter::new(Version::Cooked);
    let index = w.add_record(RecordTag::CLUSTER_LEVEL, &record);
    let h = &parts.header;
    w.finish(&ClusterMeshManifest {
        name: name.to_owned(),
        bounds_min: h.bounds_min,
        bounds_max: h.bounds_max,
        levels: vec![ClusterLevelEntry {
            record: index,
            max_parent_error: h.max_parent_error,
            triangles: h.triangle_count,
            clusters: h.cluster_count,
            vertices: h.vertex_count,
            bytes: record.len() as u64,
        }],
        materials: vec!["default".to_owned()],
        instances: Vec::new(),
        error_bounds: None,
    })
}

const GRID: u32 = 8;
/// Bytes one grid-patch cluster adds to a record.
const CLUSTER_BYTES: u64 = (std::mem::size_of::<ClusterInfo>()
    + (GRID * GRID) as usize * std::mem::size_of::<ClusterVertex>()
    + 3 * (1usize << CLUSTER_SLOT_SHIFT) * 4) as u64;

/// A valid level of about `target_bytes` (at least one cluster): grid patches on a
/// sphere of `radius`, every cluster with error `error` and parent error
/// `parent_error` (`NO_PARENT_ERROR` for a coarsest level).
pub fn synthetic_level(
    level: u32,
    target_bytes: u64,
    radius: f32,
    error: f32,
    parent_error: f32,
    rng: &mut impl Rng,
) -> LevelParts {
    let count = (target_bytes / CLUSTER_BYTES).max(1) as u32;
    let (min, max) = ([-radius * 1.5; 3], [radius * 1.5; 3]);
    let mut clusters = Vec::with_capacity(count as usize);
    let mut vertices = Vec::with_capacity((count * GRID * GRID) as usize);
    let mut indices = Vec::new();
    let mut tris = Vec::with_capacity(6 * ((GRID - 1) * (GRID - 1)) as usize);
    let step = radius * 0.1;
    for c in 0..count {
        let dir = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize_or(Vec3::Y);
        let (u, v) = dir.any_orthonormal_pair();
        let centre = dir * radius;
        let base = vertices.len() as u32;
        for j in 0..GRID {
            for i in 0..GRID {
                let off = (i as f32 - 3.5) * step * u + (j as f32 - 3.5) * step * v;
                let fv = FloatVertex {
                    position: (centre + off).to_array(),
                    normal: dir.to_array(),
                    tangent: [u.x, u.y, u.z, 1.0],
                    uv: [i as f32 / 7.0, j as f32 / 7.0],
                };
                vertices.push(ClusterVertex::pack(&fv, min, max));
            }
        }
        tris.clear();
        for j in 0..GRID - 1 {
            for i in 0..GRID - 1 {
                let a = base + j * GRID + i;
                tris.extend_from_slice(&[a, a + 1, a + GRID, a + 1, a + GRID + 1, a + GRID]);
            }
        }
        push_cluster_slot(&tris, &mut indices);
        let s = [centre.x, centre.y, centre.z, step * 5.0];
        clusters.push(ClusterInfo {
            sphere: s,
            parent_sphere: [centre.x, centre.y, centre.z, step * 10.0],
            error,
            parent_error,
            triangle_count: (tris.len() / 3) as u16,
            material: 0,
            group: c / 4,
        });
    }
    let triangles = clusters.iter().map(|c| c.triangle_count as u32).sum();
    LevelParts {
        header: ClusterLevelHeader {
            level,
            cluster_count: count,
            vertex_count: vertices.len() as u32,
            slot_shift: CLUSTER_SLOT_SHIFT,
            bounds_min: min,
            max_parent_error: parent_error,
            bounds_max: max,
            max_error: error,
            triangle_count: triangles,
            material_count: 1,
            reserved: [0; 2],
        },
        clusters,
        vertices,
        indices,
    }
}
