//! The cooked cluster-LOD file: each level record written once, straight into
//! the container (`FileWriter::finish_filled`), levels in parallel.

use std::sync::Mutex;

use farsight_format::{
    ClusterLevelEntry, ClusterLevelHeader, ClusterMeshManifest, ClusterVertex, FileWriter,
    RecordTag, Version, CLUSTER_SLOT_SHIFT, CLUSTER_SLOT_TRIANGLES,
};

use crate::error::CookError;
use crate::pack::{ClusterMesh, PackedLevel};
use crate::par;

impl ClusterMesh {
    pub fn triangle_count(&self, level: usize) -> usize {
        self.levels[level].triangle_count()
    }

    /// Encodes every level record and the manifest into a farsight container.
    /// Deterministic: the same mesh gives the same bytes.
    ///
    /// Each level record is written once, straight into the file: a first pass
    /// finds every level's vertex list (so its record length, hence the file
    /// layout, is known), then [`FileWriter::finish_filled`] has each level write
    /// its record in place, levels in parallel. No level buffer is built and copied.
    pub fn encode(&self) -> Result<Vec<u8>, CookError> {
        let triangles = self.levels.first().map_or(0, PackedLevel::triangle_count);
        let small = par::small(triangles, self.materials.len());
        par::cook(small, || self.encode_on_pool())
    }

    fn encode_on_pool(&self) -> Result<Vec<u8>, CookError> {
        let min = self.bounds.min.to_array();
        let max = self.bounds.max.to_array();
        let scratch = RemapPool::new(self.vertices.len());
        let sources: Vec<Vec<u32>> = par::map(&self.levels, |level| {
            scratch.with(|remap| level_sources(level, remap))
        });
        let mut writer = FileWriter::new(Version::Streamed);
        let mut headers = Vec::with_capacity(self.levels.len());
        let mut entries = Vec::with_capacity(self.levels.len());
        for (li, (level, sources)) in self.levels.iter().zip(&sources).enumerate() {
            let header = ClusterLevelHeader {
                level: li as u32,
                cluster_count: level.clusters.len() as u32,
                vertex_count: sources.len() as u32,
                slot_shift: CLUSTER_SLOT_SHIFT,
                bounds_min: min,
                max_parent_error: level.max_parent_error(),
                bounds_max: max,
                max_error: level.max_error(),
                triangle_count: level.triangle_count() as u32,
                material_count: self.materials.len() as u32,
                reserved: [0; 2],
            };
            let len = header.record_len();
            let record = writer.reserve_record(RecordTag::CLUSTER_LEVEL, len);
            debug_assert_eq!(record.0 as usize, li, "levels are the only records");
            entries.push(ClusterLevelEntry {
                record,
                max_parent_error: header.max_parent_error,
                triangles: header.triangle_count,
                clusters: header.cluster_count,
                vertices: header.vertex_count,
                bytes: len as u64,
            });
            headers.push(header);
        }
        let manifest = ClusterMeshManifest {
            name: self.name.clone(),
            bounds_min: min,
            bounds_max: max,
            levels: entries,
            materials: self.materials.clone(),
            instances: self.instances.clone(),
            error_bounds: Some(farsight_format::error_bounds(
                self.levels.iter().map(|l| l.clusters.as_slice()),
            )),
        };
        writer.finish_filled(&manifest, |record, out| {
            let li = record.0 as usize;
            let (level, sources) = (&self.levels[li], &sources[li]);
            scratch.with(|remap| {
                headers[li].write_record(out, &level.clusters, |vertices, slots| {
                    write_level(level, sources, &self.packed, remap, vertices, slots)
                })
            })?;
            Ok::<(), CookError>(())
        })
    }
}

/// A level's compact vertex list: its source vertices in first-use order.
/// `remap` is all `u32::MAX` before and after.
fn level_sources(level: &PackedLevel, remap: &mut [u32]) -> Vec<u32> {
    // Branch-free: every index is written at the list's end, which moves on
    // only for a vertex not seen before (about one index in five at level 0, too
    // many for a predictable branch).
    let mut sources = vec![0u32; level.indices.len().min(remap.len()) + 1];
    let mut len = 0;
    for &v in &level.indices {
        let r = &mut remap[v as usize];
        let new = *r == u32::MAX;
        sources[len] = v;
        *r = if new { len as u32 } else { *r };
        len += usize::from(new);
    }
    sources.truncate(len);
    for &v in &sources {
        remap[v as usize] = u32::MAX;
    }
    sources
}

/// Writes a level's vertices (`packed` in `sources` order) and each cluster's
/// triangles, as indices into that list, at the start of its slot (the record
/// writer pads the slots). `remap` is all `u32::MAX` before and after.
fn write_level(
    level: &PackedLevel,
    sources: &[u32],
    packed: &[ClusterVertex],
    remap: &mut [u32],
    vertices: &mut [ClusterVertex],
    slots: &mut [u32],
) {
    for ((i, &v), out) in sources.iter().enumerate().zip(vertices.iter_mut()) {
        remap[v as usize] = i as u32;
        *out = packed[v as usize];
    }
    let slot_len = 3 * CLUSTER_SLOT_TRIANGLES as usize;
    for (c, slot) in slots.chunks_exact_mut(slot_len).enumerate() {
        // A cluster too large for its slot is cut here and refused by the record
        // check (its triangle count is past the slot).
        for (out, &v) in slot.iter_mut().zip(level.cluster_triangles(c)) {
            *out = remap[v as usize];
        }
    }
    for &v in sources {
        remap[v as usize] = u32::MAX;
    }
}

/// Vertex remap tables (`u32::MAX` everywhere between uses) shared by the level
/// passes of one encode: one per thread at work, not one per level, so a large
/// mesh does not fault in a fresh table for every level.
struct RemapPool {
    len: usize,
    free: Mutex<Vec<Vec<u32>>>,
}

impl RemapPool {
    fn new(len: usize) -> Self {
        Self {
            len,
            free: Mutex::new(Vec::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut [u32]) -> R) -> R {
        let taken = self.free.lock().map(|mut free| free.pop()).unwrap_or(None);
        let mut remap = taken.unwrap_or_else(|| vec![u32::MAX; self.len]);
        let r = f(&mut remap);
        if let Ok(mut free) = self.free.lock() {
            free.push(remap);
        }
        r
    }
}
