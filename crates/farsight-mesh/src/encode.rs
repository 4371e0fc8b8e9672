//! The cooked cluster-LOD file: each level record written once, straight into
//! the container (`FileWriter::finish_appended`: levels in parallel, or a small
//! file's appended in order); one geometry,
//! or several with the placements drawing them ([`encode_cluster_scene`]).

use std::sync::Mutex;

use farsight_format::{
    ClusterGeometryEntry, ClusterLevelEntry, ClusterLevelHeader, ClusterMeshManifest,
    ClusterVertex, FileWriter, Instance, RecordTag, Version, CLUSTER_SLOT_SHIFT,
    CLUSTER_SLOT_TRIANGLES,
};

use crate::error::CookError;
use crate::looks::Looks;
use crate::pack::{ClusterMesh, PackedLevel};
use crate::par;

impl ClusterMesh {
    /// Triangles of level `level`.
    pub fn triangle_count(&self, level: usize) -> usize {
        self.levels[level].triangle_count()
    }

    /// Encodes every level record and the manifest into a farsight container.
    /// Deterministic: the same mesh gives the same bytes.
    ///
    /// Each level record is written once, straight into the file: a first pass
    /// finds every level's vertex list (so its record length, hence the file
    /// layout, is known), then [`FileWriter::finish_appended`] has each level write
    /// its record in place, levels in parallel (or, in a small file, append it).
    /// No level buffer is built and copied.
    pub fn encode(&self) -> Result<Vec<u8>, CookError> {
        encode_cluster_scene(&[self], &[])
    }
}

/// Encodes several cluster meshes into one file, geometry 0 first, each stored once
/// in its own space with its own levels, and `placements` drawing them (each names
/// its geometry; every geometry drawn at least once). For one mesh and no
/// placements this is [`ClusterMesh::encode`]: the mesh's own `instances` go to
/// the manifest. With several meshes their own `instances` are not used.
/// Deterministic, on any number of threads.
pub fn encode_cluster_scene(
    meshes: &[&ClusterMesh],
    placements: &[Instance],
) -> Result<Vec<u8>, CookError> {
    encode_cluster_scene_with(meshes, placements, &Looks::default())
}

/// [`encode_cluster_scene`] with the materials and textures of `looks` in the
/// manifest (embedded textures as records after the levels). Empty looks give
/// [`encode_cluster_scene`]'s bytes.
pub fn encode_cluster_scene_with(
    meshes: &[&ClusterMesh],
    placements: &[Instance],
    looks: &Looks,
) -> Result<Vec<u8>, CookError> {
    if meshes.is_empty() {
        return Err(CookError::BadConfig {
            what: "a cluster file holds at least one geometry",
            found: 0.0,
        });
    }
    if meshes.len() > 1 || !placements.is_empty() {
        farsight_format::check_instances(placements, meshes.len())?;
    }
    let triangles = meshes
        .iter()
        .map(|m| m.levels.first().map_or(0, PackedLevel::triangle_count))
        .sum();
    let materials = meshes.iter().map(|m| m.materials.len()).max().unwrap_or(0);
    let small = par::small(triangles, materials);
    par::cook(small, || encode_on_pool(meshes, placements, looks))
}

/// The first level header fields of level `li` of `mesh`, its compact vertex list
/// holding `vertices`.
fn level_header(mesh: &ClusterMesh, li: usize, vertices: usize) -> ClusterLevelHeader {
    let level = &mesh.levels[li];
    ClusterLevelHeader {
        level: li as u32,
        cluster_count: level.clusters.len() as u32,
        vertex_count: vertices as u32,
        slot_shift: CLUSTER_SLOT_SHIFT,
        bounds_min: mesh.bounds.min.to_array(),
        max_parent_error: level.max_parent_error(),
        bounds_max: mesh.bounds.max.to_array(),
        max_error: level.max_error(),
        triangle_count: level.triangle_count() as u32,
        material_count: mesh.materials.len() as u32,
        reserved: [0; 2],
    }
}

fn encode_on_pool(
    meshes: &[&ClusterMesh],
    placements: &[Instance],
    looks: &Looks,
) -> Result<Vec<u8>, CookError> {
    let scratch = RemapPool::new(meshes.iter().map(|m| m.vertices.len()).max().unwrap_or(0));
    // Every (geometry, level), in record order.
    let order: Vec<(usize, usize)> = meshes
        .iter()
        .enumerate()
        .flat_map(|(g, m)| (0..m.levels.len()).map(move |li| (g, li)))
        .collect();
    let compact: Vec<Compact> = par::map(&order, |&(g, li)| {
        scratch.with(|remap| level_sources(&meshes[g].levels[li], remap))
    });
    let mut writer = FileWriter::new(Version::Streamed);
    let mut headers = Vec::with_capacity(order.len());
    let mut entries: Vec<Vec<ClusterLevelEntry>> = meshes
        .iter()
        .map(|m| Vec::with_capacity(m.levels.len()))
        .collect();
    for (&(g, li), compact) in order.iter().zip(&compact) {
        let header = level_header(meshes[g], li, compact.sources.len());
        let len = header.record_len();
        let record = writer.reserve_record(RecordTag::CLUSTER_LEVEL, len);
        debug_assert_eq!(
            record.0 as usize,
            headers.len(),
            "levels are the only records"
        );
        entries[g].push(ClusterLevelEntry {
            record,
            max_parent_error: header.max_parent_error,
            triangles: header.triangle_count,
            clusters: header.cluster_count,
            vertices: header.vertex_count,
            bytes: len as u64,
        });
        headers.push(header);
    }
    let material_table = looks.attach(&mut writer);
    let manifest = manifest_of(meshes, placements, entries, material_table);
    let fill = |record: farsight_format::RecordIndex, out: &mut [u8]| {
        let i = record.0 as usize;
        let (g, li) = order[i];
        let mesh = meshes[g];
        let level = &mesh.levels[li];
        headers[i].write_record(out, &level.clusters, |vertices, slots| {
            write_level(level, &compact[i], &mesh.packed, vertices, slots)
        })?;
        Ok::<(), CookError>(())
    };
    // Written in order (a small file, or one thread): each level appended.
    let append = |record: farsight_format::RecordIndex, out: &mut Vec<u8>| {
        let i = record.0 as usize;
        let (g, li) = order[i];
        let mesh = meshes[g];
        let level = &mesh.levels[li];
        let compact = &compact[i];
        let vertices = compact.sources.iter().map(|&v| &mesh.packed[v as usize]);
        headers[i].append_record(out, &level.clusters, vertices, |c| {
            &compact.local[level.offsets[c] as usize..level.offsets[c + 1] as usize]
        })?;
        Ok::<(), CookError>(())
    };
    writer.finish_appended(&manifest, fill, append)
}

/// The file's manifest: the first mesh's levels (`entries[0]`), materials and
/// bounds at the top (with its instances when it is the only geometry and nothing
/// is placed), every other mesh as a geometry, the placements and the material
/// table.
fn manifest_of(
    meshes: &[&ClusterMesh],
    placements: &[Instance],
    entries: Vec<Vec<ClusterLevelEntry>>,
    material_table: farsight_format::MaterialTable,
) -> ClusterMeshManifest {
    let bounds = |m: &ClusterMesh| {
        Some(farsight_format::error_bounds(
            m.levels.iter().map(|l| l.clusters.as_slice()),
        ))
    };
    let mut entries = entries.into_iter();
    let first = meshes[0];
    let one = meshes.len() == 1 && placements.is_empty();
    ClusterMeshManifest {
        name: first.name.clone(),
        bounds_min: first.bounds.min.to_array(),
        bounds_max: first.bounds.max.to_array(),
        levels: entries.next().unwrap_or_default(),
        materials: first.materials.clone(),
        instances: if one {
            first.instances.clone()
        } else {
            Vec::new()
        },
        error_bounds: bounds(first),
        geometries: meshes[1..]
            .iter()
            .zip(entries)
            .map(|(m, levels)| ClusterGeometryEntry {
                name: m.name.clone(),
                bounds_min: m.bounds.min.to_array(),
                bounds_max: m.bounds.max.to_array(),
                levels,
                materials: m.materials.clone(),
                error_bounds: bounds(m),
            })
            .collect(),
        placements: placements.to_vec(),
        material_table,
    }
}

/// A level's compact vertex list: its source vertices in first-use order, and
/// each of the level's indices as a position in that list (what its record
/// stores, copied as it stands).
struct Compact {
    sources: Vec<u32>,
    local: Vec<u32>,
}

/// The level's [`Compact`] list. `remap` is all `u32::MAX` before and after.
fn level_sources(level: &PackedLevel, remap: &mut [u32]) -> Compact {
    // Branch-free: every index is written at the list's end, which moves on
    // only for a vertex not seen before (about one index in five at level 0, too
    // many for a predictable branch).
    let mut sources = vec![0u32; level.indices.len().min(remap.len()) + 1];
    let mut local = Vec::with_capacity(level.indices.len());
    let mut len = 0;
    for &v in &level.indices {
        let r = &mut remap[v as usize];
        let new = *r == u32::MAX;
        sources[len] = v;
        *r = if new { len as u32 } else { *r };
        local.push(*r);
        len += usize::from(new);
    }
    sources.truncate(len);
    for &v in &sources {
        remap[v as usize] = u32::MAX;
    }
    Compact { sources, local }
}

/// Writes a level's vertices (`packed` in its compact list's order) and each
/// cluster's triangles, as positions in that list, at the start of its slot
/// (the record writer pads the slots).
fn write_level(
    level: &PackedLevel,
    compact: &Compact,
    packed: &[ClusterVertex],
    vertices: &mut [ClusterVertex],
    slots: &mut [u32],
) {
    for (&v, out) in compact.sources.iter().zip(vertices.iter_mut()) {
        *out = packed[v as usize];
    }
    let slot_len = 3 * CLUSTER_SLOT_TRIANGLES as usize;
    for (c, slot) in slots.chunks_exact_mut(slot_len).enumerate() {
        // A cluster too large for its slot is cut here and refused by the record
        // check (its triangle count is past the slot).
        let tris = &compact.local[level.offsets[c] as usize..level.offsets[c + 1] as usize];
        let n = tris.len().min(slot.len());
        slot[..n].copy_from_slice(&tris[..n]);
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
