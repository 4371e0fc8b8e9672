//! Discrete LOD chains in a farsight container. `farsight-format` has no
//! discrete-mesh record yet, so this module defines one (tag `LOD1`):
//!
//! ```text
//! u32 vertex_count, u32 index_count, u32 zero, u32 zero   16 bytes
//! Vertex x vertex_count                                   48 bytes each
//! u32 x index_count
//! ```

use farsight_format::{
    Container, FileWriter, FormatError, Manifest, RecordIndex, RecordTag, Version,
};
use serde::{Deserialize, Serialize};

use crate::lod_chain::LodChain;
use crate::mesh::{SubMesh, Vertex};

/// Record tag of one sub-mesh of one discrete LOD level.
pub const LOD_SUBMESH_TAG: RecordTag = RecordTag(*b"LOD1");

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodSubMeshEntry {
    pub material: String,
    pub record: RecordIndex,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodLevelEntry {
    /// `<mesh>:lod<N>`.
    pub name: String,
    pub error: f32,
    pub max_distance: f32,
    pub triangles: u32,
    pub submeshes: Vec<LodSubMeshEntry>,
}

/// Manifest of a discrete LOD chain file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodChainManifest {
    pub name: String,
    pub levels: Vec<LodLevelEntry>,
}

impl Manifest for LodChainManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for l in &self.levels {
            for s in &l.submeshes {
                visit(s.record, LOD_SUBMESH_TAG);
            }
        }
    }
}

/// Encodes a chain; identical sub-meshes are stored once.
pub fn encode_lod_chain(name: &str, chain: &LodChain) -> Result<Vec<u8>, FormatError> {
    let mut writer = FileWriter::new(Version::Full);
    let mut levels = Vec::with_capacity(chain.levels.len());
    for l in &chain.levels {
        let submeshes = l
            .mesh
            .submeshes
            .iter()
            .map(|s| {
                let mut bytes =
                    Vec::with_capacity(16 + s.vertices.len() * 48 + s.indices.len() * 4);
                for w in [s.vertices.len() as u32, s.indices.len() as u32, 0, 0] {
                    bytes.extend_from_slice(&w.to_le_bytes());
                }
                bytes.extend_from_slice(bytemuck::cast_slice(&s.vertices));
                bytes.extend_from_slice(bytemuck::cast_slice(&s.indices));
                LodSubMeshEntry {
                    material: s.material.clone(),
                    record: writer.add_record(LOD_SUBMESH_TAG, &bytes),
                }
            })
            .collect();
        levels.push(LodLevelEntry {
            name: l.name.clone(),
            error: l.error,
            max_distance: l.max_distance,
            triangles: l.mesh.triangle_count() as u32,
            submeshes,
        });
    }
    writer.finish(&LodChainManifest {
        name: name.to_owned(),
        levels,
    })
}

/// Reads one sub-mesh record back, checking every length against the bytes.
pub fn decode_lod_submesh(bytes: &[u8], material: &str) -> Result<SubMesh, FormatError> {
    let bad = |what: &'static str, found: u64| FormatError::BadInput { what, found };
    if bytes.len() < 16 {
        return Err(bad(
            "LOD1 record shorter than its header",
            bytes.len() as u64,
        ));
    }
    let word = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let (vc, ic) = (word(0) as u64, word(1) as u64);
    if 16 + vc * 48 + ic * 4 != bytes.len() as u64 {
        return Err(bad(
            "LOD1 record length disagrees with its counts",
            bytes.len() as u64,
        ));
    }
    if ic % 3 != 0 {
        return Err(bad("LOD1 index count not a multiple of 3", ic));
    }
    let v_end = 16 + vc as usize * 48;
    let vertices: Vec<Vertex> = bytes[16..v_end]
        .chunks_exact(48)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let indices: Vec<u32> = bytes[v_end..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    if let Some(&i) = indices.iter().find(|&&i| i as u64 >= vc) {
        return Err(bad("LOD1 index past the vertex count", i as u64));
    }
    Ok(SubMesh {
        name: material.to_owned(),
        material: material.to_owned(),
        vertices,
        indices,
        has_tangents: false,
    })
}

/// Parses a chain file's manifest (records are read with [`decode_lod_submesh`]).
pub fn read_lod_chain(
    bytes: &farsight_format::AlignedBytes,
) -> Result<Container<'_, LodChainManifest>, FormatError> {
    Container::<LodChainManifest>::read(bytes)
}
