//! The building files (docs/design/baked-buildings.md#the-full-and-cooked-files): the full file (version 1: the recipe, every level,
//! provenance, f32 meshes) and the cooked file (version 2: no recipe; placements and
//! their palettes, levels, groups with bounds and operands, rooms, portals, collision
//! hulls, and meshes cooked for a GPU), both in farsight-format's container. A mesh
//! several levels share is one record.
//!
//! Readers refuse by kind: the container checks identifier, version, checksum, every
//! length and every record index; the reader then checks the version is the one it
//! reads, revalidates the recipe and the ladder, and checks every mesh and every face
//! source against what it names.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use farsight_format::{
    encode_full, AlignedBytes, Container, CookedMesh, FileWriter, FormatError, FullMesh, Manifest,
    MeshData, RecordIndex, RecordTag, Version,
};
use serde::{Deserialize, Serialize};

use crate::baked::BakedBuilding;
use crate::mesh::{
    Aabb, ElementMesh, FaceSource, GroupBatch, MergedGroup, Mesh, MeshedBuilding, Operand,
    PartMeshes, PlacedCollider, Placement,
};
use crate::policy::{LodPolicy, PolicyError};
use crate::recipe::{Building, Portal, Pose, Room, Side};
use crate::sources::SourceTable;
use crate::validate::RecipeError;

/// The asset kind a building manifest declares.
pub const KIND: &str = "farsight-building";

/// Why a building file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The container refused the bytes (identifier, version word, checksum, a length,
    /// a record index or kind, the manifest's RON).
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A full file where a cooked one was expected, or the reverse.
    #[error("expected a {expected:?} building file, found {found:?}")]
    WrongVersion {
        /// The container version the reader takes.
        expected: Version,
        /// The version the file declares.
        found: Version,
    },
    /// The manifest declares another asset kind.
    #[error("the file holds `{found}`, not a building")]
    WrongKind {
        /// The kind the manifest declares.
        found: String,
    },
    /// The recipe no longer validates.
    #[error("the file's recipe: {0}")]
    Recipe(#[from] RecipeError),
    /// The ladder no longer checks.
    #[error("the file's ladder: {0}")]
    Policy(#[from] PolicyError),
    /// The structure record is not one this reader reads (its layout, its lengths,
    /// its compression or its text).
    #[error("building structure: {what}")]
    Layout {
        /// What was wrong with it.
        what: String,
    },
    /// The structure is inconsistent.
    #[error("level {level}: {what}")]
    Structure {
        /// The level, 0 the finest.
        level: usize,
        /// What disagrees with what.
        what: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ElementRec {
    element: String,
    binding: String,
    side: Side,
    mesh: RecordIndex,
    bounds: Aabb,
    /// Cooked files: the entry of the file's face-source table that holds this mesh's
    /// provenance in the cooked triangle order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PartRec {
    part: String,
    storey: Option<u32>,
    elements: Vec<ElementRec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct BatchRec {
    binding: String,
    side: Side,
    mesh: RecordIndex,
    bounds: Aabb,
    /// As [`ElementRec::sources`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct GroupRec {
    id: String,
    storey: Option<u32>,
    operands: Vec<Operand>,
    batches: Vec<BatchRec>,
    bounds: Aabb,
    pivot: [f32; 3],
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PlacementRec {
    instance: String,
    part: String,
    pose: Pose,
    group: Option<String>,
    /// Index into the manifest's palettes: the material each slot wears.
    palette: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct LevelRec {
    /// Indices into the manifest's placements.
    placements: Vec<u32>,
    parts: Vec<PartRec>,
    groups: Vec<GroupRec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ColliderRec {
    instance: String,
    hull: [[f32; 3]; 8],
}

/// The manifest of both files; the cooked file has no recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct BuildingManifest {
    kind: String,
    id: String,
    recipe: Option<Building>,
    ladder: Vec<LodPolicy>,
    colliders: Vec<ColliderRec>,
    rooms: Vec<Room>,
    portals: Vec<Portal>,
    /// Distinct palettes (slot -> material) the placements wear.
    palettes: Vec<BTreeMap<String, String>>,
    /// Every placement of any level, once.
    placements: Vec<PlacementRec>,
    levels: Vec<LevelRec>,
}

/// The record that holds a file's structure manifest (layout [`LAYOUT`]).
pub const STRUCTURE_TAG: RecordTag = RecordTag(*b"BST1");

/// The record of a cooked file's face sources: every cooked mesh's per-triangle
/// provenance in the cooked triangle order (a `u32` layout, the `u32` length of the
/// table, then the table as one zstd frame; the table's bytes are described in
/// `sources.rs`).
pub const SOURCES_TAG: RecordTag = RecordTag(*b"BSR1");

/// The layout of the structure record this crate writes and reads: a little-endian
/// `u32` layout, a `u32` length of the text, then that text (compact RON) as one zstd
/// frame.
pub const LAYOUT: u32 = 1;

/// The most bytes a structure record may unpack to (and the most it may unpack per
/// byte stored): a reader never allocates more than this for a file's structure.
const MAX_STRUCTURE: usize = 64 << 20;
const MAX_RATIO: usize = 1024;

/// The container's manifest: what a file is, and where its structure and meshes are.
/// The structure (the recipe, levels, placements, palettes, rooms, portals, hulls) is
/// one compressed record: as RON in the container it was most of a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct BuildingHead {
    kind: String,
    id: String,
    layout: u32,
    /// Mesh records are records `0..meshes`.
    meshes: u32,
    structure: RecordIndex,
    /// Full (recipe) or cooked.
    cooked: bool,
    /// Cooked files: the face-source record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<RecordIndex>,
}

impl BuildingHead {
    fn mesh_tag(&self) -> RecordTag {
        if self.cooked {
            RecordTag::MESH_COOKED
        } else {
            RecordTag::MESH_FULL
        }
    }
}

impl Manifest for BuildingHead {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        let tag = self.mesh_tag();
        for i in 0..self.meshes {
            visit(RecordIndex(i), tag);
        }
        visit(self.structure, STRUCTURE_TAG);
        if let Some(s) = self.sources {
            visit(s, SOURCES_TAG);
        }
    }
}

fn pack_structure(m: &BuildingManifest) -> Result<Vec<u8>, FileError> {
    let text = ron::to_string(m).map_err(|e| FileError::Layout {
        what: format!("the structure could not be written: {e}"),
    })?;
    pack("structure", text.as_bytes(), 3)
}

/// A record of `bytes` as [`LAYOUT`], their length and one zstd frame of them.
fn pack(what: &str, bytes: &[u8], level: i32) -> Result<Vec<u8>, FileError> {
    let packed = zstd::bulk::compress(bytes, level).map_err(|e| FileError::Layout {
        what: format!("the {what} could not be compressed: {e}"),
    })?;
    if bytes.len() > MAX_STRUCTURE || bytes.len() > packed.len() * MAX_RATIO {
        return Err(FileError::Layout {
            what: format!(
                "a {what} of {} bytes ({} packed) is past what a reader accepts",
                bytes.len(),
                packed.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(8 + packed.len());
    out.extend_from_slice(&LAYOUT.to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&packed);
    Ok(out)
}

/// The inverse of [`pack`], refusing a bad layout, a length past the caps and a frame
/// that does not unpack to exactly the length declared.
fn unpack(what: &str, bytes: &[u8]) -> Result<Vec<u8>, FileError> {
    let bad = |what: String| FileError::Layout { what };
    if bytes.len() < 8 {
        return Err(bad(format!(
            "a {what} record of {} bytes, under its 8-byte header",
            bytes.len()
        )));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let layout = word(0);
    if layout != LAYOUT {
        return Err(bad(format!(
            "{what} layout {layout}; this reader reads {LAYOUT}"
        )));
    }
    let len = word(4) as usize;
    let packed = &bytes[8..];
    if len > MAX_STRUCTURE || len > packed.len() * MAX_RATIO {
        return Err(bad(format!(
            "a {what} of {len} bytes from {} packed, past what a reader accepts",
            packed.len()
        )));
    }
    let out = zstd::bulk::decompress(packed, len)
        .map_err(|e| bad(format!("the {what} does not unpack: {e}")))?;
    if out.len() != len {
        return Err(bad(format!(
            "the {what} unpacks to {} bytes, not the {len} it declares",
            out.len()
        )));
    }
    Ok(out)
}

fn unpack_structure(bytes: &[u8]) -> Result<BuildingManifest, FileError> {
    let bad = |what: String| FileError::Layout { what };
    let text = unpack("structure", bytes)?;
    let text =
        std::str::from_utf8(&text).map_err(|e| bad(format!("the structure is not text: {e}")))?;
    ron::from_str(text).map_err(|e| {
        bad(format!(
            "the structure at {}:{}: {}",
            e.position.line, e.position.col, e.code
        ))
    })
}

/// The structure of a building file (full or cooked) as indented RON, as a reader
/// would want to diff it: the recipe (full files), the ladder, the hulls, rooms and
/// portals, the palettes and placements, and every level's parts and groups with
/// each mesh named by its record index. The file keeps this compact and compressed;
/// this spells it out. The container and the structure record are checked as a read
/// checks them, but the meshes are not decoded.
pub fn manifest_ron(bytes: &[u8]) -> Result<String, FileError> {
    let aligned = AlignedBytes::from(bytes);
    let file = Container::<BuildingHead>::read(&aligned)?;
    let head = file.manifest();
    if head.kind != KIND {
        return Err(FileError::WrongKind {
            found: head.kind.clone(),
        });
    }
    let m = unpack_structure(file.record(head.structure)?.bytes)?;
    ron::ser::to_string_pretty(&m, ron::ser::PrettyConfig::default()).map_err(|e| {
        FileError::Layout {
            what: format!("the structure could not be written as RON: {e}"),
        }
    })
}

/// A mesh as farsight-format's [`MeshData`] (face sources as provenance words).
pub fn to_mesh_data(m: &Mesh) -> MeshData {
    MeshData {
        positions: m.positions.clone(),
        normals: m.normals.clone(),
        tangents: m.tangents.clone(),
        uvs: m.uvs.clone(),
        indices: m.indices.clone(),
        provenance: m.sources.iter().map(|s| s.to_word()).collect(),
    }
}

fn from_mesh_data(d: MeshData) -> Mesh {
    Mesh {
        sources: d
            .provenance
            .iter()
            .map(|&w| FaceSource::from_word(w))
            .collect(),
        positions: d.positions,
        normals: d.normals,
        uvs: d.uvs,
        tangents: d.tangents,
        indices: d.indices,
    }
}

fn manifest_of(
    b: &BakedBuilding,
    recipe: Option<Building>,
    mut record: impl FnMut(&Arc<Mesh>) -> Result<(RecordIndex, Option<u32>), FileError>,
) -> Result<BuildingManifest, FileError> {
    let first = b.levels.first();
    let mut table = PlacementTable::default();
    let mut levels = Vec::with_capacity(b.levels.len());
    for l in &b.levels {
        let placements = l.placements.iter().map(|p| table.index(p)).collect();
        let parts = part_recs(l, &mut record)?;
        let groups = group_recs(l, &mut record)?;
        levels.push(LevelRec {
            placements,
            parts,
            groups,
        });
    }
    Ok(BuildingManifest {
        kind: KIND.to_string(),
        id: b.id().to_string(),
        recipe,
        ladder: b.ladder.clone(),
        colliders: first
            .map(|l| {
                l.colliders
                    .iter()
                    .map(|c| ColliderRec {
                        instance: c.instance.clone(),
                        hull: c.hull,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        rooms: first.map(|l| l.rooms.clone()).unwrap_or_default(),
        portals: first.map(|l| l.portals.clone()).unwrap_or_default(),
        palettes: table.palettes,
        placements: table.placements,
        levels,
    })
}

/// The manifest's distinct palettes and placements, built as the levels name them.
#[derive(Default)]
struct PlacementTable {
    palettes: Vec<BTreeMap<String, String>>,
    placements: Vec<PlacementRec>,
    by_instance: BTreeMap<String, usize>,
}

impl PlacementTable {
    /// The index of `p` in the table: its palette found or added, and its record
    /// shared with the last one of its instance when they are equal.
    fn index(&mut self, p: &Placement) -> u32 {
        let palette = match self.palettes.iter().position(|q| *q == *p.materials) {
            Some(i) => i,
            None => {
                self.palettes.push((*p.materials).clone());
                self.palettes.len() - 1
            }
        } as u32;
        let rec = PlacementRec {
            instance: p.instance.clone(),
            part: p.part.clone(),
            pose: p.pose,
            group: p.group.clone(),
            palette,
        };
        let at = match self.by_instance.get(&p.instance) {
            Some(&i) if self.placements[i] == rec => i,
            _ => {
                self.by_instance
                    .insert(p.instance.clone(), self.placements.len());
                self.placements.push(rec);
                self.placements.len() - 1
            }
        };
        at as u32
    }
}

/// A level's parts as records, each element's mesh written by `record`.
fn part_recs(
    l: &MeshedBuilding,
    record: &mut impl FnMut(&Arc<Mesh>) -> Result<(RecordIndex, Option<u32>), FileError>,
) -> Result<Vec<PartRec>, FileError> {
    let mut parts = Vec::with_capacity(l.parts.len());
    for p in &l.parts {
        let mut elements = Vec::with_capacity(p.elements.len());
        for e in &p.elements {
            let (mesh, sources) = record(&e.mesh)?;
            elements.push(ElementRec {
                element: e.element.clone(),
                binding: e.binding.clone(),
                side: e.side,
                mesh,
                bounds: e.bounds,
                sources,
            });
        }
        parts.push(PartRec {
            part: p.part.clone(),
            storey: p.storey,
            elements,
        });
    }
    Ok(parts)
}

/// A level's merged groups as records, each batch's mesh written by `record`.
fn group_recs(
    l: &MeshedBuilding,
    record: &mut impl FnMut(&Arc<Mesh>) -> Result<(RecordIndex, Option<u32>), FileError>,
) -> Result<Vec<GroupRec>, FileError> {
    let mut groups = Vec::with_capacity(l.groups.len());
    for g in &l.groups {
        let mut batches = Vec::with_capacity(g.batches.len());
        for bt in &g.batches {
            let (mesh, sources) = record(&bt.mesh)?;
            batches.push(BatchRec {
                binding: bt.binding.clone(),
                side: bt.side,
                mesh,
                bounds: bt.bounds,
                sources,
            });
        }
        groups.push(GroupRec {
            id: g.id.clone(),
            storey: g.storey,
            operands: g.operands.clone(),
            batches,
            bounds: g.bounds,
            pivot: g.pivot,
        });
    }
    Ok(groups)
}

/// A mesh's record: its bytes and, for a cooked record, the mesh's face-source words
/// in the cooked triangle order.
#[derive(Clone, Debug)]
struct Encoded {
    bytes: Vec<u8>,
    sources: Option<Vec<u32>>,
}

/// Writes records once per distinct mesh allocation (the container also stores
/// identical bytes once), then the structure record and, for a cooked file, the
/// face-source record.
fn write_with(
    b: &BakedBuilding,
    version: Version,
    recipe: Option<Building>,
    encode: &dyn Fn(&Mesh) -> Result<Encoded, FileError>,
    cache: Option<&RecordCache>,
) -> Result<Vec<u8>, FileError> {
    let tag = match version {
        Version::Full => RecordTag::MESH_FULL,
        Version::Cooked | Version::Streamed => RecordTag::MESH_COOKED,
    };
    let mut writer = FileWriter::new(version);
    let mut done: BTreeMap<usize, (RecordIndex, Option<u32>)> = BTreeMap::new();
    let mut table = SourceTable::default();
    let mut meshes = 0u32;
    let manifest = manifest_of(b, recipe, |m| {
        let key = Arc::as_ptr(m) as usize;
        if let Some(&r) = done.get(&key) {
            return Ok(r);
        }
        let encoded = match cache {
            Some(c) => c.get_or_encode(m, encode)?,
            None => encode(m)?,
        };
        let sources = encoded.sources.as_deref().map(|w| table.add(w));
        let r = writer.add_owned_record(tag, encoded.bytes);
        meshes = meshes.max(r.0 + 1);
        done.insert(key, (r, sources));
        Ok((r, sources))
    })?;
    let structure = writer.add_owned_record(STRUCTURE_TAG, pack_structure(&manifest)?);
    let cooked = version == Version::Cooked;
    let sources = if cooked {
        let bytes = pack("face-source table", &table.to_bytes(), 19)?;
        Some(writer.add_owned_record(SOURCES_TAG, bytes))
    } else {
        None
    };
    let head = BuildingHead {
        kind: KIND.to_string(),
        id: manifest.id.clone(),
        layout: LAYOUT,
        meshes,
        structure,
        cooked,
        sources,
    };
    Ok(writer.finish(&head)?)
}

/// Encoded mesh records by mesh allocation, for writing many files whose meshes are
/// shared (a city baked through one `bake::MeshCache`, feature `bake`): each mesh is encoded
/// once. One cache serves one kind of file (full, or cooked with one tangent
/// generator); the bytes are those written without it. It holds every mesh it saw.
#[derive(Debug, Default)]
pub struct RecordCache {
    records: Mutex<BTreeMap<usize, (Arc<Mesh>, Encoded)>>,
}

impl RecordCache {
    /// An empty cache.
    pub fn new() -> RecordCache {
        RecordCache::default()
    }

    fn get_or_encode(
        &self,
        m: &Arc<Mesh>,
        encode: &dyn Fn(&Mesh) -> Result<Encoded, FileError>,
    ) -> Result<Encoded, FileError> {
        let key = Arc::as_ptr(m) as usize;
        // Keyed by address, and holding the mesh so the address is never reused.
        let lock = || self.records.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, bytes)) = lock().get(&key) {
            return Ok(bytes.clone());
        }
        let bytes = encode(m)?;
        lock()
            .entry(key)
            .or_insert_with(|| (Arc::clone(m), bytes.clone()));
        Ok(bytes)
    }
}

impl BakedBuilding {
    /// The full file (version 1): recipe, every level, provenance, f32 meshes.
    pub fn write_full(&self) -> Result<Vec<u8>, FileError> {
        let recipe = self.recipe.clone().ok_or(FileError::Structure {
            level: 0,
            what: "a building read from a cooked file has no recipe to write".into(),
        })?;
        self.write_full_cached(recipe, None)
    }

    /// [`BakedBuilding::write_full`], encoding each mesh once over every file written
    /// with `cache`.
    pub fn write_full_with(&self, cache: &RecordCache) -> Result<Vec<u8>, FileError> {
        let recipe = self.recipe.clone().ok_or(FileError::Structure {
            level: 0,
            what: "a building read from a cooked file has no recipe to write".into(),
        })?;
        self.write_full_cached(recipe, Some(cache))
    }

    fn write_full_cached(
        &self,
        recipe: Building,
        cache: Option<&RecordCache>,
    ) -> Result<Vec<u8>, FileError> {
        write_with(
            self,
            Version::Full,
            Some(recipe),
            &|m| {
                Ok(Encoded {
                    bytes: encode_full(&to_mesh_data(m))?,
                    sources: None,
                })
            },
            cache,
        )
    }

    /// The cooked file (version 2), each mesh cooked with farsight-format's cooked
    /// encoding after `tangents` (the caller's generator, mikktspace in a game's
    /// content step) made its tangents once.
    #[cfg(feature = "bake")]
    pub fn write_cooked(
        &self,
        tangents: &(dyn Fn(&MeshData) -> Vec<[f32; 4]> + Sync),
    ) -> Result<Vec<u8>, FileError> {
        self.write_cooked_cached(tangents, None)
    }

    /// [`BakedBuilding::write_cooked`], cooking each mesh once over every file
    /// written with `cache` (pass one cache per tangent generator).
    #[cfg(feature = "bake")]
    pub fn write_cooked_with(
        &self,
        tangents: &(dyn Fn(&MeshData) -> Vec<[f32; 4]> + Sync),
        cache: &RecordCache,
    ) -> Result<Vec<u8>, FileError> {
        self.write_cooked_cached(tangents, Some(cache))
    }

    #[cfg(feature = "bake")]
    fn write_cooked_cached(
        &self,
        tangents: &(dyn Fn(&MeshData) -> Vec<[f32; 4]> + Sync),
        cache: Option<&RecordCache>,
    ) -> Result<Vec<u8>, FileError> {
        let options = farsight_format::CookConfig {
            generate_tangents: false,
            ..Default::default()
        };
        write_with(
            self,
            Version::Cooked,
            None,
            &|m| {
                let mut data = to_mesh_data(m);
                let words = std::mem::take(&mut data.provenance);
                data.tangents = tangents(&data);
                let bytes = farsight_format::cook_mesh(&data, &options)?;
                // The cook reorders triangles: trace each cooked triangle to its source.
                let cooked = CookedMesh::parse(&bytes)?.decode()?;
                let sources = Some(crate::sources::trace(&data, &words, &cooked));
                Ok(Encoded { bytes, sources })
            },
            cache,
        )
    }

    /// Reads a full or a cooked file, chosen by its version word.
    pub fn read(bytes: &[u8]) -> Result<BakedBuilding, FileError> {
        read_any(bytes, None)
    }

    /// Reads a full file; a cooked one is refused.
    pub fn read_full(bytes: &[u8]) -> Result<BakedBuilding, FileError> {
        read_any(bytes, Some(Version::Full))
    }

    /// Reads a cooked file; a full one is refused.
    pub fn read_cooked(bytes: &[u8]) -> Result<BakedBuilding, FileError> {
        read_any(bytes, Some(Version::Cooked))
    }
}

fn structure(level: usize, what: impl Into<String>) -> FileError {
    FileError::Structure {
        level,
        what: what.into(),
    }
}

fn read_any(bytes: &[u8], expected: Option<Version>) -> Result<BakedBuilding, FileError> {
    let aligned = AlignedBytes::from(bytes);
    let file = Container::<BuildingHead>::read(&aligned)?;
    let found = file.version();
    let head = check_head(&file, expected)?;
    let m = &unpack_structure(file.record(head.structure)?.bytes)?;
    let table = face_source_table(&file, found, head.sources)?;
    check_structure(found, head, m)?;
    let mut meshes = MeshRecords {
        file: &file,
        found,
        count: head.meshes,
        table: table.as_ref(),
        cache: BTreeMap::new(),
    };
    let colliders: Vec<PlacedCollider> = m
        .colliders
        .iter()
        .map(|c| PlacedCollider {
            instance: c.instance.clone(),
            hull: c.hull,
        })
        .collect();
    let palettes: Vec<Arc<BTreeMap<String, String>>> =
        m.palettes.iter().cloned().map(Arc::new).collect();
    let mut levels = Vec::with_capacity(m.levels.len());
    for (n, l) in m.levels.iter().enumerate() {
        let parts = read_parts(m, n, l, &mut meshes)?;
        let groups = read_groups(n, l, &mut meshes)?;
        let placements = read_placements(m, n, l, &palettes)?;
        levels.push(MeshedBuilding {
            id: m.id.clone(),
            placements,
            parts,
            groups,
            colliders: colliders.clone(),
            rooms: m.rooms.clone(),
            portals: m.portals.clone(),
        });
    }
    Ok(BakedBuilding {
        recipe: m.recipe.clone(),
        ladder: m.ladder.clone(),
        levels,
    })
}

/// The container's head, checked: the version the caller expects, the kind, the
/// structure layout, and a cooked flag that agrees with the version.
fn check_head<'f>(
    file: &'f Container<'_, BuildingHead>,
    expected: Option<Version>,
) -> Result<&'f BuildingHead, FileError> {
    let found = file.version();
    if let Some(expected) = expected {
        if expected != found {
            return Err(FileError::WrongVersion { expected, found });
        }
    }
    let head = file.manifest();
    if head.kind != KIND {
        return Err(FileError::WrongKind {
            found: head.kind.clone(),
        });
    }
    if head.layout != LAYOUT {
        return Err(FileError::Layout {
            what: format!("layout {}; this reader reads {LAYOUT}", head.layout),
        });
    }
    if head.cooked != (found == Version::Cooked) {
        return Err(structure(
            0,
            format!("a {found:?} file whose head says cooked: {}", head.cooked),
        ));
    }
    Ok(head)
}

/// A cooked file's face-source table, unpacked and parsed (a full file has none: its
/// face sources are in its mesh records).
type FaceSources = (Vec<u8>, Vec<crate::sources::SourceEntry>);

/// Reads the face-source record `sources` names, refusing one a full file has or a
/// cooked file lacks.
fn face_source_table(
    file: &Container<'_, BuildingHead>,
    found: Version,
    sources: Option<RecordIndex>,
) -> Result<Option<FaceSources>, FileError> {
    match (found, sources) {
        (Version::Full, None) => Ok(None),
        (Version::Full, Some(_)) => {
            Err(structure(0, "a full file with a cooked face-source record"))
        }
        (_, None) => Err(structure(0, "a cooked file without its face sources")),
        (_, Some(r)) => {
            let bytes = unpack("face-source table", file.record(r)?.bytes)?;
            let entries = crate::sources::parse(&bytes).map_err(|what| FileError::Layout {
                what: format!("face-source table: {what}"),
            })?;
            Ok(Some((bytes, entries)))
        }
    }
}

/// The structure against its head and its version: its kind and id, a recipe exactly
/// when the file is full (revalidated, with the file's id), the ladder (and its cells
/// against the recipe's reach) and one level per rung.
fn check_structure(
    found: Version,
    head: &BuildingHead,
    m: &BuildingManifest,
) -> Result<(), FileError> {
    if m.kind != KIND || m.id != head.id {
        return Err(structure(
            0,
            format!(
                "the structure of `{}` ({}) in a file of `{}`",
                m.id, m.kind, head.id
            ),
        ));
    }
    match (found, &m.recipe) {
        (Version::Full, None) => return Err(structure(0, "a full file without its recipe")),
        (Version::Cooked, Some(_)) => return Err(structure(0, "a cooked file with a recipe")),
        _ => {}
    }
    if let Some(r) = &m.recipe {
        crate::validate(r)?;
        if r.id != m.id {
            return Err(structure(
                0,
                format!("recipe `{}` in a file of `{}`", r.id, m.id),
            ));
        }
    }
    LodPolicy::check(&m.ladder)?;
    if let Some(r) = &m.recipe {
        LodPolicy::check_cells(&m.ladder, &r.reach())?;
    }
    if m.levels.len() != m.ladder.len() {
        return Err(structure(
            m.levels.len(),
            format!(
                "{} levels for a ladder of {}",
                m.levels.len(),
                m.ladder.len()
            ),
        ));
    }
    Ok(())
}

/// The file's mesh records as meshes, each decoded and checked once per (record,
/// face-source entry) however many levels name it.
struct MeshRecords<'f, 'a> {
    file: &'f Container<'a, BuildingHead>,
    found: Version,
    /// Mesh records are records `0..count`.
    count: u32,
    table: Option<&'f FaceSources>,
    cache: BTreeMap<(u32, Option<u32>), Arc<Mesh>>,
}

impl MeshRecords<'_, '_> {
    /// Mesh record `r` with face-source entry `sources` (cooked files), for level
    /// `level`: decoded, validated, and its face sources checked against it.
    fn mesh(
        &mut self,
        level: usize,
        r: RecordIndex,
        sources: Option<u32>,
    ) -> Result<Arc<Mesh>, FileError> {
        if let Some(m) = self.cache.get(&(r.0, sources)) {
            return Ok(Arc::clone(m));
        }
        if r.0 >= self.count {
            return Err(structure(
                level,
                format!("mesh record {} of {}", r.0, self.count),
            ));
        }
        let rec = self.file.record(r)?;
        let data = match self.found {
            Version::Full => FullMesh::parse(rec.bytes)?.to_mesh(),
            Version::Cooked | Version::Streamed => CookedMesh::parse(rec.bytes)?.decode()?,
        };
        data.validate()?;
        if self.found == Version::Full && data.provenance.len() != data.indices.len() / 3 {
            return Err(structure(
                level,
                format!("mesh record {} has no face sources", r.0),
            ));
        }
        let mut mesh = from_mesh_data(data);
        self.attach_sources(level, r, sources, &mut mesh)?;
        let m = Arc::new(mesh);
        self.cache.insert((r.0, sources), Arc::clone(&m));
        Ok(m)
    }

    /// Gives a cooked mesh its face sources from table entry `sources`, refusing an
    /// entry a full file names, one a cooked file lacks, and one of another length.
    fn attach_sources(
        &self,
        level: usize,
        r: RecordIndex,
        sources: Option<u32>,
        mesh: &mut Mesh,
    ) -> Result<(), FileError> {
        match (self.table, sources) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(structure(
                level,
                format!("mesh record {} names cooked face sources", r.0),
            )),
            (Some(_), None) => Err(structure(
                level,
                format!("mesh record {} has no face sources", r.0),
            )),
            (Some((bytes, entries)), Some(e)) => {
                let Some(entry) = entries.get(e as usize) else {
                    return Err(structure(
                        level,
                        format!("face-source entry {e} of {}", entries.len()),
                    ));
                };
                if entry.triangles != mesh.triangle_count() {
                    return Err(structure(
                        level,
                        format!(
                            "face-source entry {e} has {} triangles, mesh record {} has {}",
                            entry.triangles,
                            r.0,
                            mesh.triangle_count()
                        ),
                    ));
                }
                mesh.sources = entry.sources(bytes);
                Ok(())
            }
        }
    }
}

/// Level `n`'s parts with their meshes; in a full file every part and element must be
/// in the recipe and every face must name one of its element's shapes.
fn read_parts(
    m: &BuildingManifest,
    n: usize,
    l: &LevelRec,
    meshes: &mut MeshRecords,
) -> Result<Vec<PartMeshes>, FileError> {
    let mut parts = Vec::with_capacity(l.parts.len());
    for p in &l.parts {
        let recipe_part = m.recipe.as_ref().map(|r| r.part(&p.part));
        if let Some(None) = recipe_part {
            return Err(structure(
                n,
                format!("meshes of part `{}`, not in the recipe", p.part),
            ));
        }
        let mut elements = Vec::with_capacity(p.elements.len());
        for e in &p.elements {
            let mesh = meshes.mesh(n, e.mesh, e.sources)?;
            if let Some(Some(part)) = recipe_part {
                let Some(re) = part.elements.iter().find(|x| x.id == e.element) else {
                    return Err(structure(
                        n,
                        format!("element `{}` is not in part `{}`", e.element, p.part),
                    ));
                };
                let shapes = (1 + re.union.len() + re.cutters.len()) as u32;
                if let Some(s) = mesh.sources.iter().find(|s| s.operand >= shapes) {
                    return Err(structure(
                        n,
                        format!(
                            "element `{}` of part `{}`: a face names shape {} of {shapes}",
                            e.element, p.part, s.operand
                        ),
                    ));
                }
            }
            elements.push(ElementMesh {
                element: e.element.clone(),
                binding: e.binding.clone(),
                side: e.side,
                mesh,
                bounds: e.bounds,
            });
        }
        parts.push(PartMeshes {
            part: p.part.clone(),
            storey: p.storey,
            elements,
        });
    }
    Ok(parts)
}

/// Level `n`'s merged groups with their meshes; every face must name one of its
/// group's operands.
fn read_groups(
    n: usize,
    l: &LevelRec,
    meshes: &mut MeshRecords,
) -> Result<Vec<MergedGroup>, FileError> {
    let mut groups = Vec::with_capacity(l.groups.len());
    for g in &l.groups {
        let mut batches = Vec::with_capacity(g.batches.len());
        for b in &g.batches {
            let mesh = meshes.mesh(n, b.mesh, b.sources)?;
            if let Some(s) = mesh
                .sources
                .iter()
                .find(|s| s.operand as usize >= g.operands.len())
            {
                return Err(structure(
                    n,
                    format!(
                        "group `{}`: a face names operand {} of {}",
                        g.id,
                        s.operand,
                        g.operands.len()
                    ),
                ));
            }
            batches.push(GroupBatch {
                binding: b.binding.clone(),
                side: b.side,
                mesh,
                bounds: b.bounds,
            });
        }
        groups.push(MergedGroup {
            id: g.id.clone(),
            storey: g.storey,
            operands: g.operands.clone(),
            batches,
            bounds: g.bounds,
            pivot: g.pivot,
        });
    }
    Ok(groups)
}

/// Level `n`'s placements from the file's table, each wearing its palette, every
/// pose finite and a rotation.
fn read_placements(
    m: &BuildingManifest,
    n: usize,
    l: &LevelRec,
    palettes: &[Arc<BTreeMap<String, String>>],
) -> Result<Vec<Placement>, FileError> {
    let mut placements: Vec<Placement> = Vec::with_capacity(l.placements.len());
    for &i in &l.placements {
        let Some(p) = m.placements.get(i as usize) else {
            return Err(structure(
                n,
                format!("placement {i} of {}", m.placements.len()),
            ));
        };
        let Some(materials) = palettes.get(p.palette as usize) else {
            return Err(structure(
                n,
                format!(
                    "instance `{}` wears palette {} of {}",
                    p.instance,
                    p.palette,
                    m.palettes.len()
                ),
            ));
        };
        placements.push(Placement {
            instance: p.instance.clone(),
            part: p.part.clone(),
            pose: p.pose,
            group: p.group.clone(),
            materials: Arc::clone(materials),
        });
    }
    for p in &placements {
        if !p.pose.is_valid() {
            return Err(structure(
                n,
                format!(
                    "instance `{}` has a pose that is not finite or not a rotation",
                    p.instance
                ),
            ));
        }
    }
    Ok(placements)
}

#[cfg(all(test, feature = "bake"))]
mod tests {
    use super::*;
    use crate::recipe::{Element, Geometry, Instance, Part, Shape};

    fn building() -> Building {
        let wall = Element {
            id: "wall".into(),
            shape: Shape {
                geometry: Geometry::Box {
                    size: [6.0, 3.0, 0.3],
                },
                at: Pose::yawed([0.0, 1.5, 0.0], 0.0),
            },
            union: vec![],
            cutters: vec![Shape {
                geometry: Geometry::Box {
                    size: [1.8, 1.6, 0.3],
                },
                at: Pose::yawed([0.0, 1.6, 0.0], 0.0),
            }],
            side: Side::Exterior,
            binding: "facade".into(),
            far: false,
        };
        Building {
            id: "bay".into(),
            palette: BTreeMap::from([("facade".into(), "brick".into())]),
            parts: vec![Part {
                id: "wall".into(),
                storey: Some(0),
                elements: vec![wall],
            }],
            instances: (0..3)
                .map(|i| Instance {
                    id: format!("w{i}"),
                    part: "wall".into(),
                    pose: Pose::yawed([i as f32 * 6.0, 0.0, 0.0], 0.0),
                    attachment: None,
                    overrides: BTreeMap::new(),
                })
                .collect(),
            merge_groups: vec![],
            colliders: vec![],
            rooms: vec![],
            portals: vec![],
        }
    }

    /// The RON printed is indented, one field a line, and reads back to exactly the
    /// structure the file holds; a file of another kind or a cut one is refused.
    #[test]
    fn the_manifest_prints_as_indented_ron_that_reads_back() {
        let mut ladder = LodPolicy::ladder();
        ladder[2].cell = Some(crate::LodCell::Side(35.0));
        let baked = crate::bake::bake(&building(), &ladder, &crate::bake::ManifoldKernel).unwrap();
        for bytes in [
            baked.write_full().unwrap(),
            baked
                .write_cooked(&crate::tangents::uv_gradient_tangents)
                .unwrap(),
        ] {
            let text = manifest_ron(&bytes).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines.len() > 50, "{text}");
            assert!(
                lines.iter().any(|l| l.starts_with("    levels: [")),
                "{text}"
            );
            assert!(lines.iter().any(|l| l.starts_with("        ")), "{text}");
            let back: BuildingManifest = ron::from_str(&text).unwrap();
            let aligned = AlignedBytes::from(&bytes[..]);
            let file = Container::<BuildingHead>::read(&aligned).unwrap();
            let stored =
                unpack_structure(file.record(file.manifest().structure).unwrap().bytes).unwrap();
            assert_eq!(back, stored);
            assert_eq!(back.levels.len(), 3);
        }
        let full = baked.write_full().unwrap();
        assert!(manifest_ron(&full[..full.len() / 2]).is_err());
    }
}
