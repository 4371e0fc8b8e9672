//! Discrete LOD chains in a farsight container, their sub-meshes stored one of two
//! ways ([`ChainRecords`]): full precision in this module's own record (tag `LOD1`,
//! file version 1), or cooked for a GPU as farsight-format's cooked mesh records
//! (file version 2: quantised, predicted, meshopt + zstd coded), each level's
//! sub-meshes the parts of one cooked set record (tag `MSS1`; files written before
//! sets: one `MSH2` record per sub-mesh). The manifest says which (`cooked`,
//! `sets`); [`decode_lod_entry`] reads any. A source that draws several meshes
//! several times keeps each mesh's chain once, with an instance table placing them.
//!
//! ```text
//! LOD1: u32 vertex_count, u32 index_count, u32 zero, u32 zero   16 bytes
//!       Vertex x vertex_count                                   48 bytes each
//!       u32 x index_count
//! ```

use farsight_format::{
    check_instances, cook_mesh_set, Container, CookConfig, CookedMesh, CookedSet, FileWriter,
    FormatError, Instance, Manifest, MaterialTable, MeshData, RawFile, Record, RecordIndex,
    RecordTag, Section, Version,
};
use serde::{Deserialize, Serialize};

use crate::lod_chain::LodChain;
use crate::looks::Looks;
use crate::mesh::{SubMesh, Vertex};

/// How a chain file stores its sub-meshes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChainRecords {
    /// Full precision, `LOD1` records (48-byte vertices), file version 1.
    Full,
    /// Cooked records of farsight-format with these options, file version 2.
    Cooked(CookConfig),
}

/// Record tag of one sub-mesh of one discrete LOD level.
pub const LOD_SUBMESH_TAG: RecordTag = RecordTag(*b"LOD1");

/// One sub-mesh of a level in a chain file's manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodSubMeshEntry {
    /// The material it is drawn with (a name of the file's material table).
    pub material: String,
    /// The sub-mesh's record; in a file of cooked sets ([`LodChainManifest::sets`]),
    /// its level's set record, of which it is part [`Self::part`].
    pub record: RecordIndex,
    /// The part of the set record this sub-mesh draws (0 in other files).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub part: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// One level of a chain in a chain file's manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodLevelEntry {
    /// `<mesh>:lod<N>`.
    pub name: String,
    /// How far simplification moved the surface, in mesh units (0 for the source).
    pub error: f32,
    /// Furthest distance the level draws at (60-degree field of view, bias 1).
    pub max_distance: f32,
    /// Triangles of the level, all sub-meshes.
    pub triangles: u32,
    /// Its sub-meshes, one per material.
    pub submeshes: Vec<LodSubMeshEntry>,
}

/// One geometry of a file whose source draws several distinct meshes: its name and
/// its own LOD chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodGeometryEntry {
    /// The geometry's name.
    pub name: String,
    /// Its chain, near to far.
    pub levels: Vec<LodLevelEntry>,
}

/// Manifest of a discrete LOD chain file.
///
/// Geometry 0 is `name` and `levels` (for most files the only one); a source that
/// draws several distinct meshes several times has one more chain per further mesh
/// in `geometries` (geometry 1 first), and `instances` places them: each geometry is
/// stored once, in its own space.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodChainManifest {
    /// Name of geometry 0 (the mesh's name).
    pub name: String,
    /// Geometry 0's chain, near to far.
    pub levels: Vec<LodLevelEntry>,
    /// Sub-meshes are cooked records (`MSH2`) rather than `LOD1` (absent in files
    /// written before cooked chains existed: false).
    #[serde(default)]
    pub cooked: bool,
    /// Cooked sub-meshes are stored as one cooked set record (`MSS1`) per level,
    /// each sub-mesh a part of it (absent in files written before: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sets: bool,
    /// Geometries 1.. (see the type's docs); empty for a file of one geometry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geometries: Vec<LodGeometryEntry>,
    /// Where the geometries are drawn when the source placed them more than once;
    /// empty (and absent) for a mesh drawn once, as cooked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<Instance>,
    /// The definitions of the materials the sub-meshes name, and their textures.
    /// Empty (and absent) where the source defined none, and in files written
    /// before materials were kept.
    #[serde(default, skip_serializing_if = "MaterialTable::is_empty")]
    pub material_table: MaterialTable,
}

impl LodChainManifest {
    /// The tag every sub-mesh record of this file has.
    pub fn record_tag(&self) -> RecordTag {
        match (self.cooked, self.sets) {
            (true, true) => RecordTag::MESH_COOKED_SET,
            (true, false) => RecordTag::MESH_COOKED,
            _ => LOD_SUBMESH_TAG,
        }
    }

    /// Geometries in the file (1 plus [`Self::geometries`]).
    pub fn geometry_count(&self) -> usize {
        1 + self.geometries.len()
    }

    /// The levels of geometry `g`, finest first, or `None` past the last.
    pub fn geometry_levels(&self, g: usize) -> Option<&[LodLevelEntry]> {
        match g {
            0 => Some(&self.levels),
            g => self.geometries.get(g - 1).map(|e| e.levels.as_slice()),
        }
    }

    /// Every geometry's levels, geometry 0 first.
    pub fn all_levels(&self) -> impl Iterator<Item = &LodLevelEntry> {
        (0..self.geometry_count()).flat_map(|g| self.geometry_levels(g).expect("in range").iter())
    }
}

impl Manifest for LodChainManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        let tag = self.record_tag();
        for l in self.all_levels() {
            for s in &l.submeshes {
                visit(s.record, tag);
            }
        }
        self.material_table.visit_records(visit);
    }

    /// The version word is the one the manifest's records are written with (1 for
    /// full precision, 2 for cooked: the checksum does not cover it, so a swapped
    /// word is caught here), the instance table places the file's geometries
    /// ([`check_instances`]) and a set file's parts exist in their records.
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(if self.cooked {
            Version::Cooked
        } else {
            Version::Full
        })?;
        if self.sets && !self.cooked {
            return Err(FormatError::BadField {
                section: Section::Manifest,
                field: "sets without cooked",
                found: 1,
            });
        }
        check_instances(&self.instances, self.geometry_count())?;
        self.material_table.check(file)?;
        if self.sets {
            for l in self.all_levels() {
                for s in &l.submeshes {
                    let set = CookedSet::parse(file.record(s.record)?.bytes)?;
                    if s.part as usize >= set.part_count() {
                        return Err(FormatError::BadField {
                            section: Section::Manifest,
                            field: "sub-mesh part",
                            found: s.part as u64,
                        });
                    }
                }
            }
        }
        Ok(())
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
    encode_lod_chains(&[(name, chain)], &[], records)
}

/// Encodes the chains of several geometries (`(name, chain)`, geometry 0 first) and
/// the instances placing them (empty for one geometry drawn where it is) into one
/// file with `records`. Cooked sub-meshes are written as one cooked set record per
/// level (parts alike stored once); identical records are stored once.
pub fn encode_lod_chains(
    geometries: &[(&str, &LodChain)],
    instances: &[Instance],
    records: &ChainRecords,
) -> Result<Vec<u8>, FormatError> {
    encode_lod_chains_with(geometries, instances, records, &Looks::default())
}

/// [`encode_lod_chains`] with the materials and textures of `looks` in the
/// manifest (embedded textures as records after the sub-meshes'). Empty looks
/// give [`encode_lod_chains`]' bytes.
pub fn encode_lod_chains_with(
    geometries: &[(&str, &LodChain)],
    instances: &[Instance],
    records: &ChainRecords,
    looks: &Looks,
) -> Result<Vec<u8>, FormatError> {
    let (version, cooked) = match records {
        ChainRecords::Full => (Version::Full, false),
        ChainRecords::Cooked(_) => (Version::Cooked, true),
    };
    check_instances(instances, geometries.len())?;
    let Some(((name, _), _)) = geometries.split_first() else {
        return Err(FormatError::BadInput {
            what: "a chain file needs a geometry",
            found: 0,
        });
    };
    let mut writer = FileWriter::new(version);
    let mut entries = Vec::with_capacity(geometries.len());
    for (geometry_name, chain) in geometries {
        let mut levels = Vec::with_capacity(chain.levels.len());
        for l in &chain.levels {
            let subs = &l.mesh.submeshes;
            let submeshes = match records {
                ChainRecords::Full => subs
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
                            part: 0,
                        }
                    })
                    .collect(),
                ChainRecords::Cooked(options) => {
                    let parts: Vec<MeshData> = subs.iter().map(mesh_data).collect();
                    let record = writer
                        .add_record(RecordTag::MESH_COOKED_SET, &cook_mesh_set(&parts, options)?);
                    subs.iter()
                        .enumerate()
                        .map(|(p, s)| LodSubMeshEntry {
                            material: s.material.clone(),
                            record,
                            part: p as u32,
                        })
                        .collect()
                }
            };
            levels.push(LodLevelEntry {
                name: l.name.clone(),
                error: l.error,
                max_distance: l.max_distance,
                triangles: l.mesh.triangle_count() as u32,
                submeshes,
            });
        }
        entries.push(LodGeometryEntry {
            name: (*geometry_name).to_owned(),
            levels,
        });
    }
    let levels = std::mem::take(&mut entries[0].levels);
    let material_table = looks.attach(&mut writer);
    writer.finish(&LodChainManifest {
        name: (*name).to_owned(),
        levels,
        cooked,
        sets: cooked,
        geometries: entries.split_off(1),
        instances: instances.to_vec(),
        material_table,
    })
}

/// Reads sub-mesh `entry` of a chain file back, any kind (by its record's tag: a
/// cooked set's part, a cooked record, a full-precision record), checking every
/// length against the bytes.
pub fn decode_lod_entry(
    record: &Record<'_>,
    entry: &LodSubMeshEntry,
) -> Result<SubMesh, FormatError> {
    if record.tag != RecordTag::MESH_COOKED_SET {
        return decode_lod_record(record, &entry.material);
    }
    let set = CookedSet::parse(record.bytes)?;
    if entry.part as usize >= set.part_count() {
        return Err(FormatError::BadField {
            section: Section::Manifest,
            field: "sub-mesh part",
            found: entry.part as u64,
        });
    }
    let m = set.decode_part(entry.part as usize)?;
    Ok(submesh_of(m, &entry.material))
}

fn submesh_of(m: MeshData, material: &str) -> SubMesh {
    let vertices = (0..m.positions.len())
        .map(|i| Vertex {
            position: m.positions[i],
            normal: m.normals.get(i).copied().unwrap_or_default(),
            uv: m.uvs.get(i).copied().unwrap_or_default(),
            tangent: m.tangents.get(i).copied().unwrap_or_default(),
        })
        .collect();
    SubMesh {
        name: material.to_owned(),
        material: material.to_owned(),
        vertices,
        indices: m.indices,
        has_tangents: !m.tangents.is_empty(),
    }
}

/// Reads one sub-mesh record of a chain file back, `LOD1` or `MSH2` (by the
/// record's tag; a cooked set's part: [`decode_lod_entry`]), checking every length against the bytes. A cooked record decodes to what
/// its precision kept; uvs and tangents it did not store come back zero.
pub fn decode_lod_record(record: &Record<'_>, material: &str) -> Result<SubMesh, FormatError> {
    if record.tag != RecordTag::MESH_COOKED {
        return decode_lod_submesh(record.bytes, material);
    }
    let m = CookedMesh::parse(record.bytes)?.decode()?;
    Ok(submesh_of(m, material))
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
