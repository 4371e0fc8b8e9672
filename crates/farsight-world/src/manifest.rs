//! The world description on disk: `world.ron` in the world's folder.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The manifest's file name inside a world folder.
pub const MANIFEST_FILE: &str = "world.ron";
/// The manifest version this crate reads and writes.
pub const WORLD_VERSION: u32 = 1;

/// Why a world could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a world manifest: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("{path}: world version {found}; this build reads version {WORLD_VERSION}")]
    Version { path: PathBuf, found: u32 },
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    #[error("{path}: {source}")]
    Scene {
        path: PathBuf,
        source: farsight_stream::region::SceneError,
    },
    #[error(transparent)]
    Model(#[from] farsight_stream::cluster::CookedModelError),
    #[error("{path}: {source}")]
    Terrain {
        path: PathBuf,
        source: farsight_terrain::TerrainFileError,
    },
}

/// The generated voxel terrain: its file and the generator's parameters (the flight
/// follows the ground through them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerrainEntry {
    pub file: String,
    pub seed: u32,
    pub base_height: f32,
    pub hill_height: f32,
    pub hill_scale: f32,
    /// Chunks per horizontal side.
    pub chunks_side: i32,
}

impl TerrainEntry {
    pub fn params(&self) -> farsight_terrain::TerrainParams {
        farsight_terrain::TerrainParams {
            seed: self.seed,
            base_height: self.base_height,
            hill_height: self.hill_height,
            hill_scale: self.hill_scale,
            caves: false,
            lake: None,
        }
    }
}

/// A cluster-LOD model: a cooked cluster file (`farsight cook mesh --clusters`), the
/// streaming format: its head gives each level's byte range, parent error and the
/// sphere around every error sphere. A file of several geometries (a cooked scene)
/// gives one model per geometry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub name: String,
    /// The cooked file, relative to the world folder.
    pub file: String,
    /// Which of the file's geometries (0, and absent, for a file of one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub geometry: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// One level of a baked building: drawn up to `until` metres (`None`: the last), and
/// the bytes its meshes hold once uploaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildingLevel {
    pub until: Option<f32>,
    pub bytes: u64,
}

/// A baked building (one file) with its box in world space.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildingEntry {
    pub id: String,
    pub file: String,
    /// Where the building's own coordinates are placed in the world.
    pub offset: [f32; 3],
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub levels: Vec<BuildingLevel>,
}

/// An entity-LOD prop design: each level's furthest distance, finest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropEntry {
    pub name: String,
    pub radius: f32,
    pub ranges: Vec<f32>,
}

/// What a region entity's `model` index names: models first, then buildings, then
/// props.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntityKind {
    Model(u32),
    Building(u32),
    Prop(u32),
}

/// `world.ron`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldManifest {
    pub version: u32,
    pub seed: u64,
    /// World size along x and z, from the origin.
    pub extent: [f32; 2],
    pub terrain: TerrainEntry,
    /// The region scene index, relative to the folder.
    pub scene: String,
    pub models: Vec<ModelEntry>,
    pub buildings: Vec<BuildingEntry>,
    pub props: Vec<PropEntry>,
}

impl WorldManifest {
    /// What entity `model` index `m` names, if anything.
    pub fn kind(&self, m: u32) -> Option<EntityKind> {
        let (nm, nb, np) = (
            self.models.len() as u32,
            self.buildings.len() as u32,
            self.props.len() as u32,
        );
        if m < nm {
            Some(EntityKind::Model(m))
        } else if m < nm + nb {
            Some(EntityKind::Building(m - nm))
        } else if m < nm + nb + np {
            Some(EntityKind::Prop(m - nm - nb))
        } else {
            None
        }
    }

    /// The entity `model` index of a kind.
    pub fn index_of(&self, kind: EntityKind) -> u32 {
        let (nm, nb) = (self.models.len() as u32, self.buildings.len() as u32);
        match kind {
            EntityKind::Model(i) => i,
            EntityKind::Building(i) => nm + i,
            EntityKind::Prop(i) => nm + nb + i,
        }
    }

    /// Writes the manifest into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), WorldError> {
        let path = dir.join(MANIFEST_FILE);
        let text =
            ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default()).map_err(|e| {
                WorldError::Manifest {
                    path: path.clone(),
                    message: e.to_string(),
                }
            })?;
        std::fs::write(&path, text).map_err(|source| WorldError::Io { path, source })
    }

    /// Reads and checks `dir/world.ron`.
    pub fn read(dir: &Path) -> Result<Self, WorldError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| WorldError::Io {
            path: path.clone(),
            source,
        })?;
        let m: WorldManifest = ron::from_str(&text).map_err(|e| WorldError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if m.version != WORLD_VERSION {
            return Err(WorldError::Version {
                path,
                found: m.version,
            });
        }
        m.check()
            .map_err(|what| WorldError::Invalid { path, what })?;
        Ok(m)
    }

    fn check(&self) -> Result<(), String> {
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !(finite(&self.extent) && self.extent.iter().all(|&e| e > 0.0)) {
            return Err(format!("extent {:?} is not positive", self.extent));
        }
        for (i, m) in self.models.iter().enumerate() {
            if m.file.is_empty() {
                return Err(format!("model {i} ({}) names no file", m.name));
            }
        }
        for (i, b) in self.buildings.iter().enumerate() {
            let ok = finite(&b.min) && finite(&b.max) && (0..3).all(|k| b.min[k] <= b.max[k]);
            if !ok || b.levels.is_empty() {
                return Err(format!("building {i} ({}): bad box or no level", b.id));
            }
        }
        for (i, p) in self.props.iter().enumerate() {
            let ok = p.radius.is_finite()
                && p.radius > 0.0
                && !p.ranges.is_empty()
                && finite(&p.ranges)
                && p.ranges.windows(2).all(|w| w[0] < w[1]);
            if !ok {
                return Err(format!("prop {i} ({}): bad radius or ranges", p.name));
            }
        }
        Ok(())
    }
}
