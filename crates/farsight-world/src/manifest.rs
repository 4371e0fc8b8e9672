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
    /// A file of the world could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The manifest is not the RON a world manifest is.
    #[error("{path}: not a world manifest: {message}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The manifest is of a world version this build does not read.
    #[error("{path}: world version {found}; this build reads version {WORLD_VERSION}")]
    Version {
        /// The manifest.
        path: PathBuf,
        /// The version it holds.
        found: u32,
    },
    /// The world is readable but not consistent (a model or prop the loop refuses).
    #[error("{path}: {what}")]
    Invalid {
        /// The file that holds the inconsistency.
        path: PathBuf,
        /// What is wrong, in words.
        what: String,
    },
    /// A field of the manifest holds a value the loop refuses.
    #[error("{path}: {bad}")]
    Field {
        /// The manifest.
        path: PathBuf,
        /// The field, its value and why it is refused.
        #[source]
        bad: BadField,
    },
    /// The loop's settings hold a value it refuses.
    #[error("world settings: {0}")]
    Config(#[source] BadField),
    /// The region scene (its index or a region file) could not be opened.
    #[error("{path}: {source}")]
    Scene {
        /// The scene index.
        path: PathBuf,
        /// Why the scene was refused.
        source: farsight_stream::region::SceneError,
    },
    /// A cooked cluster model could not be opened from its head.
    #[error(transparent)]
    Model(#[from] farsight_stream::cluster::CookedModelError),
    /// The terrain file could not be read.
    #[error("{path}: {source}")]
    Terrain {
        /// The terrain file.
        path: PathBuf,
        /// Why it was refused.
        source: farsight_terrain::TerrainFileError,
    },
}

/// The generated voxel terrain: its file and the generator's parameters (the flight
/// follows the ground through them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerrainEntry {
    /// The terrain file, relative to the world folder.
    pub file: String,
    /// The generator's seed.
    pub seed: u32,
    /// Height of the ground's mean level, in metres.
    pub base_height: f32,
    /// How far the hills rise above and sink below that level, in metres.
    pub hill_height: f32,
    /// Horizontal size of a hill, in metres.
    pub hill_scale: f32,
    /// Chunks per horizontal side.
    pub chunks_side: i32,
}

impl TerrainEntry {
    /// The generator that made the terrain, from these fields.
    pub fn params(&self) -> farsight_terrain::TerrainGeneratorConfig {
        farsight_terrain::TerrainGeneratorConfig {
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
    /// A name for reports.
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
    /// Farthest camera distance this level is drawn at, in metres (`None`: no limit).
    pub until: Option<f32>,
    /// Bytes its meshes hold once uploaded (each shared mesh counted once).
    pub bytes: u64,
}

/// A baked building (one file) with its box in world space.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildingEntry {
    /// The building's id, from its recipe.
    pub id: String,
    /// The baked building file, relative to the world folder.
    pub file: String,
    /// Where the building's own coordinates are placed in the world.
    pub offset: [f32; 3],
    /// Low corner of the building's world-space box.
    pub min: [f32; 3],
    /// High corner of the building's world-space box.
    pub max: [f32; 3],
    /// Its levels, finest first.
    pub levels: Vec<BuildingLevel>,
}

/// An entity-LOD prop design: each level's furthest distance, finest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropEntry {
    /// The design's name, for reports.
    pub name: String,
    /// Radius of the prop's bounding sphere, in metres.
    pub radius: f32,
    /// Each level's farthest camera distance, in metres, finest first.
    pub ranges: Vec<f32>,
}

/// What a region entity's `model` index names: models first, then buildings, then
/// props.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// A cluster-LOD model, by its index in `models`.
    Model(u32),
    /// A baked building, by its index in `buildings`.
    Building(u32),
    /// An entity-LOD prop design, by its index in `props`.
    Prop(u32),
}

/// `world.ron`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldManifest {
    /// The world format version ([`WORLD_VERSION`] when written).
    pub version: u32,
    /// The seed the world was built or generated from.
    pub seed: u64,
    /// World size along x and z, from the origin.
    pub extent: [f32; 2],
    /// The voxel terrain.
    pub terrain: TerrainEntry,
    /// The region scene index, relative to the folder.
    pub scene: String,
    /// The cluster-LOD models.
    pub models: Vec<ModelEntry>,
    /// The baked buildings.
    pub buildings: Vec<BuildingEntry>,
    /// The entity-LOD prop designs.
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
        m.check().map_err(|bad| WorldError::Field { path, bad })?;
        Ok(m)
    }

    /// Every hand-editable field against what the loop can use.
    fn check(&self) -> Result<(), BadField> {
        for (k, &e) in self.extent.iter().enumerate() {
            positive(&format!("extent[{k}]"), e)?;
        }
        let t = &self.terrain;
        folder_path("terrain.file", &t.file, false)?;
        finite("terrain.base_height", t.base_height)?;
        finite("terrain.hill_height", t.hill_height)?;
        positive("terrain.hill_scale", t.hill_scale)?;
        if !(1..=MAX_CHUNKS_SIDE).contains(&t.chunks_side) {
            return Err(BadField::new(
                "terrain.chunks_side",
                t.chunks_side,
                "not between 1 and 4096 chunks",
            ));
        }
        folder_path("scene", &self.scene, false)?;
        for (i, m) in self.models.iter().enumerate() {
            folder_path(&format!("models[{i}].file"), &m.file, false)?;
        }
        for (i, b) in self.buildings.iter().enumerate() {
            let at = |f: &str| format!("buildings[{i}].{f}");
            // Empty: a generated building, sizes without meshes.
            folder_path(&at("file"), &b.file, true)?;
            finite3(&at("offset"), &b.offset)?;
            finite3(&at("min"), &b.min)?;
            finite3(&at("max"), &b.max)?;
            if (0..3).any(|k| b.min[k] > b.max[k]) {
                return Err(BadField::new(
                    &at("max"),
                    format!("{:?} (min {:?})", b.max, b.min),
                    "below the box's min on some axis",
                ));
            }
            if b.levels.is_empty() || b.levels.len() > MAX_LEVELS {
                return Err(BadField::new(
                    &at("levels"),
                    format!("{} levels", b.levels.len()),
                    "not between 1 and 8 levels",
                ));
            }
            let mut before = 0.0f32;
            for (l, lv) in b.levels.iter().enumerate() {
                let last = l + 1 == b.levels.len();
                match lv.until {
                    None if !last => {
                        return Err(BadField::new(
                            &at(&format!("levels[{l}].until")),
                            "None",
                            "only the last level may draw without a limit",
                        ))
                    }
                    Some(u) if !(u.is_finite() && u > before) => {
                        return Err(BadField::new(
                            &at(&format!("levels[{l}].until")),
                            u,
                            "not a finite distance beyond the finer level's",
                        ))
                    }
                    Some(u) => before = u,
                    None => {}
                }
                if lv.bytes > MAX_LEVEL_BYTES {
                    return Err(BadField::new(
                        &at(&format!("levels[{l}].bytes")),
                        lv.bytes,
                        "more than 4 GiB for one level's meshes",
                    ));
                }
            }
        }
        for (i, p) in self.props.iter().enumerate() {
            positive(&format!("props[{i}].radius"), p.radius)?;
            let field = format!("props[{i}].ranges");
            let ok = !p.ranges.is_empty()
                && p.ranges.len() <= MAX_LEVELS
                && p.ranges.iter().all(|r| r.is_finite() && *r > 0.0)
                && p.ranges.windows(2).all(|w| w[0] < w[1]);
            if !ok {
                return Err(BadField::new(
                    &field,
                    format!("{:?}", p.ranges),
                    "not 1 to 8 finite positive distances, each beyond the one before",
                ));
            }
        }
        Ok(())
    }
}

/// Levels a building or a prop may have (the entity LOD component's limit).
const MAX_LEVELS: usize = 8;

/// The most bytes one building level's meshes may claim: beyond any pool, and small
/// enough that every sum of them stays far from overflowing.
pub const MAX_LEVEL_BYTES: u64 = 1 << 32;

/// Chunks per side the terrain entry may name.
const MAX_CHUNKS_SIDE: i32 = 4096;

/// One value of a hand-editable file (`world.ron`, a recording, a loop's settings)
/// that the loop refuses: where it is, what was found, and what it must be.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("`{field}` is {found}: {rule}")]
pub struct BadField {
    /// Where the value sits, as a path of fields (`buildings[3].offset`).
    pub field: String,
    /// The value found.
    pub found: String,
    /// What was wrong with it.
    pub rule: &'static str,
}

impl BadField {
    pub(crate) fn new(field: &str, found: impl std::fmt::Debug, rule: &'static str) -> Self {
        Self {
            field: field.to_owned(),
            found: format!("{found:?}"),
            rule,
        }
    }
}

pub(crate) fn finite(field: &str, v: f32) -> Result<(), BadField> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(BadField::new(field, v, "not a finite number"))
    }
}

pub(crate) fn positive(field: &str, v: f32) -> Result<(), BadField> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(BadField::new(field, v, "not a finite number above zero"))
    }
}

pub(crate) fn finite3(field: &str, v: &[f32; 3]) -> Result<(), BadField> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(BadField::new(field, v, "not three finite numbers"))
    }
}

/// A path a world names: relative to the world folder and staying inside it (no
/// root, drive or `..`), empty only where `may_be_empty`.
fn folder_path(field: &str, p: &str, may_be_empty: bool) -> Result<(), BadField> {
    if p.is_empty() {
        return if may_be_empty {
            Ok(())
        } else {
            Err(BadField::new(field, p, "names no file"))
        };
    }
    let path = Path::new(p);
    let inside = !path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if inside {
        Ok(())
    } else {
        Err(BadField::new(
            field,
            p,
            "not a path inside the world folder (absolute, or with `..`)",
        ))
    }
}
