//! Cluster files and cooked LOD chains as Bevy assets: `asset_server.load`, load
//! states, hot reload (with Bevy's `file_watcher`).
//!
//! Every farsight file ends in `.farsight`, so Bevy chooses among this crate's
//! loaders by the handle's asset type; each loader then reads what kind of file it
//! was given ([`describe_kind`]) and refuses another kind with a message naming what
//! it found, rather than failing somewhere in a manifest it was never meant to read.
//!
//! - [`ClusterModelLoader`] makes a [`ClusterModelAsset`]: the file's head (one model
//!   per geometry) and each geometry's coarsest level, read and checked on Bevy's IO
//!   pool. The finer levels stream from the same file while it is drawn, so the asset
//!   must come from the file system (Bevy's default asset source).
//!   [`FarsightClusterModel::from_asset`](crate::FarsightClusterModel::from_asset)
//!   draws it.
//! - [`LodChainLoader`] makes a [`LodChainAsset`] from a cooked LOD chain (`farsight
//!   cook mesh --lod-chain --cooked`): one mesh per level (a level's sub-meshes
//!   merged, labelled `level{N}`) and the distance each level draws to, the same
//!   levels split per material (`level{N}/part{P}`), and the file's materials as
//!   `StandardMaterial`s with their textures ([`MaterialAssets`]).
//!   [`FarsightLod::from_chain`](crate::FarsightLod::from_chain) builds the LOD
//!   component from it, and [`FarsightLodChain`] does so by itself once the handle
//!   has loaded. The chain's manifest is read here, so an app needs no bake-time crate.

use std::path::PathBuf;
use std::sync::Arc;

use bevy::asset::io::Reader;
use bevy::asset::{AssetLoader, LoadContext, RenderAssetUsages};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use farsight_format::{
    AlignedBytes, Container, CookedMesh, CookedSet, FormatError, Manifest, MaterialTable, MeshData,
    RawFile, RecordIndex, RecordTag,
};
use farsight_stream::cluster::{CookedModel, CookedModelError};
use serde::{Deserialize, Serialize};

use crate::clusters::ResidentLevel;
use crate::materials::MaterialAssets;

/// Why a farsight file was refused by [`ClusterModelLoader`] or [`LodChainLoader`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FarsightAssetError {
    /// The file could not be read.
    #[error("could not read the file: {0}")]
    Io(#[from] std::io::Error),
    /// The file is a farsight file of another kind, or no farsight file.
    #[error("{found}, not {expected}")]
    WrongKind {
        /// The kind the loader reads.
        expected: &'static str,
        /// What the file is, in words ([`describe_kind`]).
        found: String,
    },
    /// The file's levels stream from disk: it must be in the file system.
    #[error("cluster models stream their levels from files; this one is in asset source {name}")]
    NotAFile {
        /// The asset source it came from.
        name: String,
    },
    /// The cluster file's head was refused.
    #[error(transparent)]
    Cluster(#[from] CookedModelError),
    /// A geometry's coarsest level failed its check.
    #[error("geometry {geometry}, coarsest level {level}: {reason}")]
    CoarsestLevel {
        /// The geometry.
        geometry: usize,
        /// Its coarsest level's number.
        level: usize,
        /// Why the level was refused.
        reason: String,
    },
    /// The chain file was refused by its reader.
    #[error("not a usable LOD chain: {0}")]
    Format(#[from] FormatError),
    /// A chain stored at full precision (`LOD1` records) is a bake-time file.
    #[error("a full-precision LOD chain; cook it for drawing with `farsight cook mesh --lod-chain --cooked`")]
    FullPrecisionChain,
    /// A level whose sub-meshes hold more vertices than one mesh indexes.
    #[error("LOD chain level {level}: {vertices} vertices do not fit one mesh")]
    TooManyVertices {
        /// The level.
        level: usize,
        /// Its sub-meshes' vertices together.
        vertices: u64,
    },
}

/// What kind of farsight file `bytes` hold, in words ("a cluster model file", "a
/// building file", "a cooked LOD chain file", ...; for anything else, what was found).
pub fn describe_kind(bytes: &[u8]) -> String {
    let aligned = AlignedBytes::from(bytes);
    let raw = match RawFile::read(aligned.as_slice()) {
        Ok(r) => r,
        Err(e) => return format!("not a farsight file ({e})"),
    };
    let mut tags: Vec<RecordTag> = raw.records().map(|r| r.tag).collect();
    tags.sort_by_key(|t| t.0);
    tags.dedup();
    if tags.contains(&RecordTag::CLUSTER_LEVEL) {
        return "a cluster model file".into();
    }
    if tags.contains(&farsight_building::file::STRUCTURE_TAG) {
        return "a building file".into();
    }
    if tags.contains(&farsight_terrain::CHUNK_TAG) {
        return "a terrain file".into();
    }
    if let Ok(chain) = raw.parse::<LodChainManifest>() {
        return if chain.cooked {
            "a cooked LOD chain file".into()
        } else {
            "a full-precision LOD chain file".into()
        };
    }
    let tags: Vec<String> = tags.iter().map(ToString::to_string).collect();
    format!(
        "a farsight file of another kind (version {}, records {})",
        raw.version() as u32,
        if tags.is_empty() {
            "none".into()
        } else {
            tags.join(", ")
        }
    )
}

/// A cooked cluster file loaded as an asset: a model per geometry, each with its
/// coarsest level already read. Draw it with
/// [`FarsightClusterModel::from_asset`](crate::FarsightClusterModel::from_asset).
#[derive(Asset, TypePath, Debug)]
pub struct ClusterModelAsset {
    /// The file the finer levels stream from.
    path: PathBuf,
    /// Per geometry: the model and its coarsest level, decoded.
    geometries: Vec<(CookedModel, Arc<ResidentLevel>)>,
}

impl ClusterModelAsset {
    /// The file in the file system the levels stream from.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Geometries in the file (one model each).
    pub fn geometry_count(&self) -> usize {
        self.geometries.len()
    }

    /// Geometry `g`'s model, as the streamer opens it.
    pub fn model(&self, g: usize) -> Option<&CookedModel> {
        self.geometries.get(g).map(|(m, _)| m)
    }

    /// Geometry `g`'s model and its coarsest level.
    pub(crate) fn geometry(&self, g: usize) -> Option<(&CookedModel, &Arc<ResidentLevel>)> {
        self.geometries.get(g).map(|(m, l)| (m, l))
    }
}

/// Loads cooked cluster files (`farsight cook mesh --clusters`) as
/// [`ClusterModelAsset`]s, from the default (file system) asset source.
#[derive(TypePath)]
pub struct ClusterModelLoader {
    /// The default asset source's folder in the file system.
    root: PathBuf,
}

impl ClusterModelLoader {
    /// A loader for assets under `root`, the folder of Bevy's default asset source
    /// (`AssetPlugin::file_path` under the base path Bevy resolves it from).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }
}

impl AssetLoader for ClusterModelLoader {
    type Asset = ClusterModelAsset;
    type Settings = ();
    type Error = FarsightAssetError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        load_context: &mut LoadContext<'_>,
    ) -> Result<ClusterModelAsset, FarsightAssetError> {
        let asset_path = load_context.path();
        if let Some(source) = asset_path.source().as_str() {
            return Err(FarsightAssetError::NotAFile {
                name: source.to_owned(),
            });
        }
        let path = self.root.join(asset_path.path());
        let models = match CookedModel::open_all(&path) {
            Ok(m) => m,
            Err(CookedModelError::Format { .. }) => {
                // Another kind of file, most likely: say which.
                let mut bytes = Vec::new();
                reader.read_to_end(&mut bytes).await?;
                let found = describe_kind(&bytes);
                if found != "a cluster model file" {
                    return Err(FarsightAssetError::WrongKind {
                        expected: "a cluster model file",
                        found,
                    });
                }
                CookedModel::open_all(&path)?
            }
            Err(e) => return Err(e.into()),
        };
        let mut geometries = Vec::with_capacity(models.len());
        for (g, model) in models.into_iter().enumerate() {
            let level = model.level_count() - 1;
            let l = ResidentLevel::read(&model, level).map_err(|reason| {
                FarsightAssetError::CoarsestLevel {
                    geometry: g,
                    level,
                    reason,
                }
            })?;
            geometries.push((model, Arc::new(l)));
        }
        Ok(ClusterModelAsset { path, geometries })
    }

    fn extensions(&self) -> &[&str] {
        &["farsight"]
    }
}

/// The manifest of a LOD chain file as drawing needs it: geometry 0's levels (the
/// file may hold more, and an instance table, which are not read). The fields are
/// those `farsight cook mesh --lod-chain` writes; the loader's tests load files that
/// tool's code wrote, so the two cannot drift apart unseen.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct LodChainManifest {
    name: String,
    levels: Vec<ChainLevelEntry>,
    #[serde(default)]
    cooked: bool,
    #[serde(default)]
    sets: bool,
    /// The materials the sub-meshes name, and their textures.
    #[serde(default, skip_serializing_if = "MaterialTable::is_empty")]
    material_table: MaterialTable,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ChainLevelEntry {
    name: String,
    error: f32,
    max_distance: f32,
    triangles: u32,
    submeshes: Vec<ChainSubMeshEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ChainSubMeshEntry {
    material: String,
    record: RecordIndex,
    #[serde(default)]
    part: u32,
}

/// The tag of a full-precision chain's sub-mesh record.
const FULL_CHAIN_TAG: RecordTag = RecordTag(*b"LOD1");

impl LodChainManifest {
    fn record_tag(&self) -> RecordTag {
        match (self.cooked, self.sets) {
            (true, true) => RecordTag::MESH_COOKED_SET,
            (true, false) => RecordTag::MESH_COOKED,
            _ => FULL_CHAIN_TAG,
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
        self.material_table.visit_records(visit);
    }

    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        self.material_table.check(file)
    }
}

/// One level of a [`LodChainAsset`].
#[derive(Clone, Debug, PartialEq)]
pub struct LodChainLevel {
    /// The level's sub-meshes as one mesh (labelled `level{N}`).
    pub mesh: Handle<Mesh>,
    /// Furthest distance the level draws at, as the cook chose it.
    pub max_distance: f32,
    /// The level's simplification error, in model units.
    pub error: f32,
    /// Triangles the level draws.
    pub triangles: u32,
}

/// A cooked LOD chain loaded as an asset: one mesh per level, finest first, and
/// the same levels split by material.
#[derive(Asset, TypePath, Clone, Debug)]
pub struct LodChainAsset {
    /// The chain's name (its source mesh).
    pub name: String,
    /// Every sub-mesh of a level in one mesh (for a single material of the user's).
    pub levels: Vec<LodChainLevel>,
    /// The file's materials as `StandardMaterial`s (labelled `material{N}`), shared
    /// by every level and every entity drawing the chain.
    pub materials: MaterialAssets,
    /// One per material the sub-meshes name, in the order they first appear: that
    /// material's sub-meshes of each level as one mesh (labelled `level{N}/part{P}`;
    /// a level without any holds a mesh of no triangles).
    pub parts: Vec<LodChainPart>,
}

/// The sub-meshes of one material, level by level (see [`LodChainAsset::parts`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LodChainPart {
    /// The material name the sub-meshes give.
    pub material_name: String,
    /// Its `StandardMaterial`, `None` where the file's table does not define it.
    pub material: Option<Handle<StandardMaterial>>,
    /// The part's mesh per level, with the chain's distances.
    pub levels: Vec<LodChainLevel>,
}

/// Loads cooked LOD chain files (`farsight cook mesh --lod-chain --cooked`) as
/// [`LodChainAsset`]s.
#[derive(Default, TypePath)]
pub struct LodChainLoader;

impl AssetLoader for LodChainLoader {
    type Asset = LodChainAsset;
    type Settings = ();
    type Error = FarsightAssetError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        load_context: &mut LoadContext<'_>,
    ) -> Result<LodChainAsset, FarsightAssetError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let aligned = AlignedBytes::from(bytes.as_slice());
        drop(bytes);
        let file = match Container::<LodChainManifest>::read(aligned.as_slice()) {
            Ok(f) => f,
            Err(e) => {
                let found = describe_kind(aligned.as_slice());
                return Err(match found.as_str() {
                    "a cooked LOD chain file" => e.into(),
                    "a full-precision LOD chain file" => FarsightAssetError::FullPrecisionChain,
                    _ => FarsightAssetError::WrongKind {
                        expected: "a cooked LOD chain file",
                        found,
                    },
                });
            }
        };
        let manifest = file.manifest();
        if !manifest.cooked {
            return Err(FarsightAssetError::FullPrecisionChain);
        }
        let materials = MaterialAssets::load(&manifest.material_table, file.raw(), load_context);
        let mut names: Vec<&str> = Vec::new();
        for s in manifest.levels.iter().flat_map(|l| &l.submeshes) {
            if !names.contains(&s.material.as_str()) {
                names.push(&s.material);
            }
        }
        let mut levels = Vec::with_capacity(manifest.levels.len());
        let mut part_levels: Vec<Vec<LodChainLevel>> = vec![Vec::new(); names.len()];
        for (i, l) in manifest.levels.iter().enumerate() {
            let mut parts = Vec::with_capacity(l.submeshes.len());
            for s in &l.submeshes {
                let record = file.record(s.record)?;
                parts.push(if record.tag == RecordTag::MESH_COOKED_SET {
                    let set = CookedSet::parse(record.bytes)?;
                    if s.part as usize >= set.part_count() {
                        return Err(FormatError::BadField {
                            section: farsight_format::Section::Manifest,
                            field: "sub-mesh part",
                            found: s.part as u64,
                        }
                        .into());
                    }
                    set.decode_part(s.part as usize)?
                } else {
                    CookedMesh::parse(record.bytes)?.decode()?
                });
            }
            let level = |mesh| LodChainLevel {
                mesh,
                max_distance: l.max_distance,
                error: l.error,
                triangles: l.triangles,
            };
            let mesh = merged_mesh(i, &parts.iter().collect::<Vec<_>>())?;
            levels.push(level(
                load_context.add_labeled_asset(format!("level{i}"), mesh),
            ));
            for (p, name) in names.iter().enumerate() {
                let mine: Vec<&MeshData> = l
                    .submeshes
                    .iter()
                    .zip(&parts)
                    .filter(|(s, _)| s.material == *name)
                    .map(|(_, d)| d)
                    .collect();
                let mesh = if mine.is_empty() {
                    let at = parts.iter().find_map(|d| d.positions.first().copied());
                    empty_mesh(at.unwrap_or([0.0; 3]))
                } else {
                    merged_mesh(i, &mine)?
                };
                let mesh = load_context.add_labeled_asset(format!("level{i}/part{p}"), mesh);
                part_levels[p].push(LodChainLevel {
                    triangles: mine.iter().map(|d| d.indices.len() as u32 / 3).sum(),
                    ..level(mesh)
                });
            }
        }
        let parts = names
            .iter()
            .zip(part_levels)
            .map(|(name, levels)| LodChainPart {
                material_name: (*name).to_owned(),
                material: materials.get(name).cloned(),
                levels,
            })
            .collect();
        Ok(LodChainAsset {
            name: manifest.name.clone(),
            levels,
            materials,
            parts,
        })
    }

    fn extensions(&self) -> &[&str] {
        &["farsight"]
    }
}

/// One Bevy mesh of a level's sub-meshes: positions and normals, UVs and tangents
/// where every sub-mesh has them.
fn merged_mesh(level: usize, parts: &[&MeshData]) -> Result<Mesh, FarsightAssetError> {
    let vertices: u64 = parts.iter().map(|p| p.positions.len() as u64).sum();
    if vertices > u32::MAX as u64 {
        return Err(FarsightAssetError::TooManyVertices { level, vertices });
    }
    let all_uvs = parts.iter().all(|p| p.uvs.len() == p.positions.len());
    let all_tangents = parts.iter().all(|p| p.tangents.len() == p.positions.len());
    let n = vertices as usize;
    let (mut pos, mut nor) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut uvs = Vec::with_capacity(if all_uvs { n } else { 0 });
    let mut tan = Vec::with_capacity(if all_tangents { n } else { 0 });
    let mut idx = Vec::with_capacity(parts.iter().map(|p| p.indices.len()).sum());
    for p in parts {
        let base = pos.len() as u32;
        pos.extend_from_slice(&p.positions);
        nor.extend((0..p.positions.len()).map(|i| p.normals.get(i).copied().unwrap_or([0.0; 3])));
        if all_uvs {
            uvs.extend_from_slice(&p.uvs);
        }
        if all_tangents {
            tan.extend_from_slice(&p.tangents);
        }
        idx.extend(p.indices.iter().map(|&i| base + i));
    }
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    );
    mesh.insert_attribute(Mesh::ATTRIBUTE_POSITION, pos);
    mesh.insert_attribute(Mesh::ATTRIBUTE_NORMAL, nor);
    if all_uvs {
        mesh.insert_attribute(Mesh::ATTRIBUTE_UV_0, uvs);
    }
    if all_tangents {
        mesh.insert_attribute(Mesh::ATTRIBUTE_TANGENT, tan);
    }
    mesh.insert_indices(Indices::U32(idx));
    Ok(mesh)
}

/// A mesh of no triangles and one vertex at `at` (inside the chain's box): its
/// bounds exist, so a part's level without sub-meshes counts as loaded and draws
/// nothing.
fn empty_mesh(at: [f32; 3]) -> Mesh {
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    );
    mesh.insert_attribute(Mesh::ATTRIBUTE_POSITION, vec![at]);
    mesh.insert_attribute(Mesh::ATTRIBUTE_NORMAL, vec![[0.0, 1.0, 0.0]]);
    mesh.insert_indices(Indices::U32(Vec::new()));
    mesh
}

/// Draws a cooked LOD chain: once the handle has loaded, the entity gets the
/// [`FarsightLod`](crate::FarsightLod) of its levels (at the distances the cook
/// chose) and, if it has none, a `Mesh3d` of the finest level. A chain reloaded
/// (hot reload) replaces the component. The file's materials draw it (a chain of
/// several split into one child per material), unless the entity has a
/// `StandardMaterial` of its own.
#[derive(Component, Clone, Debug, PartialEq)]
#[require(Transform, Visibility)]
pub struct FarsightLodChain(pub Handle<LodChainAsset>);
