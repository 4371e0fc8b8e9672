//! Discrete LOD chains in a farsight container, their sub-meshes stored one of two
//! ways ([`ChainRecords`]): full precision in this module's own record (tag `LOD1`,
//! file version 1), or cooked for a GPU as farsight-format's cooked mesh records
//! (tag `MSH2`, file version 2: quantised, predicted, meshopt + zstd coded). The
//! manifest says which (`cooked`); [`decode_lod_record`] reads either.
//!
//! ```text
//! LOD1: u32 vertex_count, u32 index_count, u32 zero, u32 zero   16 bytes
//!       Vertex x vertex_count                                   48 bytes each
//!       u32 x index_count
//! ```

use farsight_format::{
    cook_mesh, Container, CookOptions, CookedMesh, FileWriter, FormatError, Manifest, MeshData,
    Record, RecordIndex, RecordTag, Version,
};
use serde::{Deserialize, Serialize};

use crate::lod_chain::LodChain;
use crate::mesh::{SubMesh, Vertex};

/// How a chain file stores its sub-meshes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChainRecords {
    /// Full precision, `LOD1` records (48-byte vertices), file version 1.
    Full,
    /// Cooked records of farsight-format with these options, file version 2.
    Cooked(CookOptions),
}

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
    /// Sub-meshes are cooked records (`MSH2`) rather than `LOD1` (absent in files
    /// written before cooked chains existed: false).
    #[serde(default)]
    pub cooked: bool,
}

impl LodChainManifest {
    /// The tag every sub-mesh record of this file has.
    pub fn record_tag(&self) -> RecordTag {
        if self.cooked {
            RecordTag::MESH_COOKED
        } else {
            LOD_SUBMESH_TAG
        }
    }
}

impl Manifest for LodChainManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        let tag = self.record_tag();
        for l in &self.levels {
            for s in &l.submeshes {
                visit(s.record, tag);
            }
        }
    }
}

/// Encodes a chain with full-precision records; identical sub-meshes are stored once.
pub fn encode_lod_chain(name: &str, chain: &LodChain) -> Result<Vec<u8>, FormatError> {
    encode_lod_chain_as(name, chain, &ChainRecords::Full)
}

/// The format's mesh arrays of a sub-mesh: uvs only where the source had any (a
/// mesh without them has all-zero uvs here), tangents only where it had them.
fn mesh_data(s: &SubMesh) -> MeshData {
    let has_uvs = s.vertices.iter().any(|v| v.uv != [0.0; 2]);
    let v = &s.vertices;
    MeshData {
        positions: v.iter().map(|v| v.position).collect(),
        normals: v.iter().map(|v| v.normal).collect(),
        tangents: if s.has_tangents {
            v.iter().map(|v| v.tangent).collect()
        } else {
            Vec::new()
        },
        uvs: if has_uvs {
            v.iter().map(|v| v.uv).collect()
        } else {
            Vec::new()
        },
        indices: s.indices.clone(),
        provenance: Vec::new(),
    }
}

/// Encodes a chain with `records`; identical sub-meshes are stored once.
pub fn encode_lod_chain_as(
    name: &str,
    chain: &LodChain,
    records: &ChainRecords,
) -> Result<Vec<u8>, FormatError> {
    let (version, cooked) = match records {
        ChainRecords::Full => (Version::Full, false),
        ChainRecords::Cooked(_) => (Version::Cooked, true),
    };
    let mut writer = FileWriter::new(version);
    let mut levels = Vec::with_capacity(chain.levels.len());
    for l in &chain.levels {
        let submeshes = l
            .mesh
            .submeshes
            .iter()
            .map(|s| {
                let record = match records {
                    ChainRecords::Full => {
                        let mut bytes =
                            Vec::with_capacity(16 + s.vertices.len() * 48 + s.indices.len() * 4);
                        for w in [s.vertices.len() as u32, s.indices.len() as u32, 0, 0] {
                            bytes.extend_from_slice(&w.to_le_bytes());
                        }
                        bytes.extend_from_slice(bytemuck::cast_slice(&s.vertices));
                        bytes.extend_from_slice(bytemuck::cast_slice(&s.indices));
                        writer.add_record(LOD_SUBMESH_TAG, &bytes)
                    }
                    ChainRecords::Cooked(options) => writer
                        .add_record(RecordTag::MESH_COOKED, &cook_mesh(&mesh_data(s), options)?),
                };
                Ok(LodSubMeshEntry {
                    material: s.material.clone(),
                    record,
                })
            })
            .collect::<Result<Vec<_>, FormatError>>()?;
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
        cooked,
    })
}

/// Reads one sub-mesh record of a chain file back, either kind (by the record's
/// tag), checking every length against the bytes. A cooked record decodes to what
/// its precision kept; uvs and tangents it did not store come back zero.
pub fn decode_lod_record(record: &Record<'_>, material: &str) -> Result<SubMesh, FormatError> {
    if record.tag != RecordTag::MESH_COOKED {
        return decode_lod_submesh(record.bytes, material);
    }
    let m = CookedMesh::parse(record.bytes)?.decode()?;
    let vertices = (0..m.positions.len())
        .map(|i| Vertex {
            position: m.positions[i],
            normal: m.normals.get(i).copied().unwrap_or_default(),
            uv: m.uvs.get(i).copied().unwrap_or_default(),
            tangent: m.tangents.get(i).copied().unwrap_or_default(),
        })
        .collect();
    Ok(SubMesh {
        name: material.to_owned(),
        material: material.to_owned(),
        vertices,
        indices: m.indices,
        has_tangents: !m.tangents.is_empty(),
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
