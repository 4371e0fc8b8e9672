//! Where a level record's bytes go on the GPU, and the rows of the GPU's tables.
//!
//! A level record ([`farsight_format::ClusterLevel`]) is a header, the cluster
//! records, the 32-byte vertices and the fixed index slots, in that order. The
//! vertices and indices are copied into the pools as they are stored; the header
//! and cluster records (about 3% of a level) are gathered on the CPU and become
//! rows of the cluster table ([`GpuCluster`]), which add what the shader needs to
//! find a cluster's slot and vertices in the pools.

use bytemuck::{Pod, Zeroable};
use farsight_format::{ClusterInfo, ClusterLevelHeader, ClusterVertex, CLUSTER_SLOT_TRIANGLES};

/// Bytes of a level record's header.
pub const HEADER_BYTES: u64 = std::mem::size_of::<ClusterLevelHeader>() as u64;
/// Bytes of one cluster record.
pub const INFO_BYTES: u64 = std::mem::size_of::<ClusterInfo>() as u64;
/// Bytes of one stored vertex (and of one vertex-pool unit).
pub const VERTEX_BYTES: u64 = std::mem::size_of::<ClusterVertex>() as u64;
/// Indices of one cluster slot (and index-pool units per cluster).
pub const SLOT_INDICES: u64 = 3 * CLUSTER_SLOT_TRIANGLES as u64;

/// A level record's regions, from its cluster count and size (the manifest's):
/// the vertex count is what is left once header, records and slots are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelLayout {
    /// Clusters in the level.
    pub clusters: u32,
    /// Vertices in the level's compact list.
    pub vertices: u32,
}

/// A level size that no record of that cluster count can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a level of {clusters} clusters cannot be {bytes} bytes long")]
pub struct LayoutError {
    /// The cluster count given.
    pub clusters: u32,
    /// The record size given.
    pub bytes: u64,
}

/// Which pool a piece of a copy goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The header and cluster records, gathered on the CPU.
    Head,
    /// The vertices, copied to the vertex pool.
    Vertices,
    /// The index slots, copied to the index pool.
    Indices,
}

/// One piece of a copy: `len` bytes starting `src` bytes into the copy, landing
/// `dst` bytes into the level's part of `region`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The region the bytes belong to.
    pub region: Region,
    /// Offset in the copied bytes.
    pub src: u64,
    /// Offset in the region.
    pub dst: u64,
    /// Length in bytes.
    pub len: u64,
}

impl LevelLayout {
    /// The layout of a `bytes`-long record of `clusters` clusters.
    pub fn new(clusters: u32, bytes: u64) -> Result<Self, LayoutError> {
        let fixed = HEADER_BYTES + u64::from(clusters) * (INFO_BYTES + SLOT_INDICES * 4);
        let err = LayoutError { clusters, bytes };
        let rest = bytes.checked_sub(fixed).ok_or(err)?;
        if rest % VERTEX_BYTES != 0 {
            return Err(err);
        }
        let vertices = u32::try_from(rest / VERTEX_BYTES).map_err(|_| err)?;
        Ok(Self { clusters, vertices })
    }

    /// Bytes of the header and cluster records.
    pub fn head_bytes(&self) -> u64 {
        HEADER_BYTES + u64::from(self.clusters) * INFO_BYTES
    }

    /// Bytes of the vertices.
    pub fn vertex_bytes(&self) -> u64 {
        u64::from(self.vertices) * VERTEX_BYTES
    }

    /// Indices of the level (whole slots).
    pub fn index_count(&self) -> u64 {
        u64::from(self.clusters) * SLOT_INDICES
    }

    /// The record's size.
    pub fn record_bytes(&self) -> u64 {
        self.head_bytes() + self.vertex_bytes() + self.index_count() * 4
    }

    /// Splits a copy of `len` bytes at `offset` of the record into its pieces, in
    /// order; bytes past the record are dropped.
    pub fn split(&self, offset: u64, len: u64) -> impl Iterator<Item = Piece> {
        let v0 = self.head_bytes();
        let i0 = v0 + self.vertex_bytes();
        let end = self.record_bytes();
        let regions = [
            (Region::Head, 0, v0),
            (Region::Vertices, v0, i0),
            (Region::Indices, i0, end),
        ];
        let (a, b) = (offset, offset.saturating_add(len));
        regions.into_iter().filter_map(move |(region, r0, r1)| {
            let (s, e) = (a.max(r0), b.min(r1));
            (s < e).then(|| Piece {
                region,
                src: s - a,
                dst: s - r0,
                len: e - s,
            })
        })
    }
}

/// One row of the GPU's cluster table (64 bytes, the WGSL struct `Cluster` of
/// `cut.wgsl`): the cluster's record plus where its slot and vertices lie.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCluster {
    /// Centre and radius of the sphere its own error is measured from (model space);
    /// it encloses the cluster, so the frustum test uses it too.
    pub sphere: [f32; 4],
    /// The parent group's sphere.
    pub parent_sphere: [f32; 4],
    /// The cluster's own error.
    pub error: f32,
    /// The parent group's error ([`farsight_format::NO_PARENT_ERROR`] at the top).
    pub parent_error: f32,
    /// The model (a row of the model table).
    pub model: u32,
    /// Real triangles in the low 16 bits, the material in the high 16.
    pub triangles_material: u32,
    /// The slot's first index in the index pool.
    pub first_index: u32,
    /// The level's first vertex in the vertex pool (the slot's indices add to it).
    pub vertex_base: u32,
    /// The level number, 0 finest.
    pub level: u32,
    /// The cluster's index within its level record.
    pub index_in_level: u32,
}
const _: () = assert!(std::mem::size_of::<GpuCluster>() == 64);

/// Where a level lies in the pools, for [`pack_clusters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelPlacement {
    /// The model's row in the model table.
    pub model: u32,
    /// The level number.
    pub level: u32,
    /// First index-pool unit of the level's slots.
    pub first_index: u32,
    /// First vertex-pool unit of the level's vertices.
    pub vertex_base: u32,
}

/// The cluster-table rows of a level from its header and cluster records (the
/// record's first [`LevelLayout::head_bytes`] bytes), appended to `out`.
pub fn pack_clusters(infos: &[ClusterInfo], at: LevelPlacement, out: &mut Vec<GpuCluster>) {
    out.extend(infos.iter().enumerate().map(|(c, info)| GpuCluster {
        sphere: info.sphere,
        parent_sphere: info.parent_sphere,
        error: info.error,
        parent_error: info.parent_error,
        model: at.model,
        triangles_material: u32::from(info.triangle_count) | u32::from(info.material) << 16,
        first_index: at.first_index + c as u32 * SLOT_INDICES as u32,
        vertex_base: at.vertex_base,
        level: at.level,
        index_in_level: c as u32,
    }));
}

/// One row of the GPU's model table (48 bytes, the WGSL struct `Model`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuModel {
    /// Lower corner of the bounds the positions are quantised in.
    pub bounds_min: [f32; 3],
    /// The finest resident level: its clusters' own error counts as zero, so it
    /// stands in for the finer levels that are not resident.
    pub finest_resident: u32,
    /// Upper corner of the quantisation bounds.
    pub bounds_max: [f32; 3],
    /// First entry of the model's resident clusters in the resident list.
    pub resident_start: u32,
    /// Resident clusters of the model (those of its ready levels).
    pub resident_count: u32,
    /// Zero.
    pub pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<GpuModel>() == 48);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_splits_into_head_vertices_and_indices() {
        let l = LevelLayout::new(2, 64 + 2 * 48 + 10 * 32 + 2 * 384 * 4).unwrap();
        assert_eq!(l.vertices, 10);
        assert_eq!(l.head_bytes(), 160);
        let all: Vec<Piece> = l.split(0, l.record_bytes()).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(
            all[1],
            Piece {
                region: Region::Vertices,
                src: 160,
                dst: 0,
                len: 320
            }
        );
        // A chunk across the vertex / index boundary.
        let p: Vec<Piece> = l.split(400, 200).collect();
        assert_eq!(
            p,
            [
                Piece {
                    region: Region::Vertices,
                    src: 0,
                    dst: 240,
                    len: 80
                },
                Piece {
                    region: Region::Indices,
                    src: 80,
                    dst: 0,
                    len: 120
                },
            ]
        );
        // Every byte lands exactly once whatever the chunking.
        for chunk in [1, 3, 7, 64, 1000] {
            let mut seen = 0;
            let mut at = 0;
            while at < l.record_bytes() {
                seen += l.split(at, chunk).map(|p| p.len).sum::<u64>();
                at += chunk;
            }
            assert_eq!(seen, l.record_bytes());
        }
    }

    #[test]
    fn sizes_no_record_can_have_are_refused() {
        assert!(LevelLayout::new(1, 10).is_err());
        assert!(LevelLayout::new(1, 64 + 48 + 384 * 4 + 31).is_err());
        assert!(LevelLayout::new(0, 64).is_ok());
    }

    #[test]
    fn rows_point_at_their_slot_and_level() {
        let info = ClusterInfo {
            sphere: [1.0, 2.0, 3.0, 4.0],
            parent_sphere: [1.0, 2.0, 3.0, 5.0],
            error: 0.5,
            parent_error: 1.0,
            triangle_count: 100,
            material: 3,
            group: 0,
        };
        let mut rows = Vec::new();
        let at = LevelPlacement {
            model: 7,
            level: 2,
            first_index: 768,
            vertex_base: 40,
        };
        pack_clusters(&[info, info], at, &mut rows);
        assert_eq!(rows[1].first_index, 768 + 384);
        assert_eq!(rows[1].triangles_material, 100 | 3 << 16);
        assert_eq!(
            (rows[1].vertex_base, rows[1].level, rows[1].index_in_level),
            (40, 2, 1)
        );
    }
}
