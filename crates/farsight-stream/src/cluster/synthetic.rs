//! Generated cluster-LOD files for the simulation, the tests and the benches:
//! [`synthetic_level`] makes a valid level of a given size (grid patches of 8 x 8
//! vertices, one per cluster) and [`encode_cluster_file`] writes levels as one cooked
//! cluster file, the same format `farsight cook mesh --clusters` writes.

use farsight_format::{
    encode_cluster_level, error_bounds, push_cluster_slot, ClusterInfo, ClusterLevelEntry,
    ClusterLevelHeader, ClusterMeshManifest, ClusterVertex, FileWriter, FloatVertex, FormatError,
    RecordTag, Version, CLUSTER_SLOT_SHIFT,
};
use glam::Vec3;
use rand::Rng;

/// The parts of one cluster level record.
#[derive(Clone, Debug)]
pub struct LevelParts {
    /// The level record's header.
    pub header: ClusterLevelHeader,
    /// One entry per cluster.
    pub clusters: Vec<ClusterInfo>,
    /// The level's quantised vertices.
    pub vertices: Vec<ClusterVertex>,
    /// Triangle corners, indexing `vertices`, in cluster slots.
    pub indices: Vec<u32>,
}

/// Writes `levels` (finest first) as one cluster file: a streamed container
/// ([`Version::Streamed`]) with one level record each, the manifest's level entries
/// and its `error_bounds` around every cluster's error spheres.
pub fn encode_cluster_file(name: &str, levels: &[LevelParts]) -> Result<Vec<u8>, FormatError> {
    let first = levels.first().ok_or(FormatError::BadInput {
        what: "a cluster file needs a level",
        found: 0,
    })?;
    let mut w = FileWriter::new(Version::Streamed);
    let mut entries = Vec::with_capacity(levels.len());
    for parts in levels {
        let record = encode_cluster_level(
            &parts.header,
            &parts.clusters,
            &parts.vertices,
            &parts.indices,
        )?;
        let h = &parts.header;
        entries.push(ClusterLevelEntry {
            record: w.add_owned_record(RecordTag::CLUSTER_LEVEL, record),
            max_parent_error: h.max_parent_error,
            triangles: h.triangle_count,
            clusters: h.cluster_count,
            vertices: h.vertex_count,
            bytes: h.record_len() as u64,
        });
    }
    w.finish(&ClusterMeshManifest {
        name: name.to_owned(),
        bounds_min: first.header.bounds_min,
        bounds_max: first.header.bounds_max,
        levels: entries,
        materials: vec!["default".to_owned()],
        instances: Vec::new(),
        error_bounds: Some(error_bounds(levels.iter().map(|l| l.clusters.as_slice()))),
        ..Default::default()
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
