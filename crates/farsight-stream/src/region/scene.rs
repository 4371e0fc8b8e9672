//! The scene on disk: an index file listing every region (its section: name, box,
//! authored state, file) and one file per region holding its entities, both in the
//! farsight container (`farsight-format`).
//!
//! One file per region, rather than every region's entities as records of the index,
//! because the container checks a whole file at once: a region is read with one
//! sequential read of its own file, and a corrupt region file fails that region only.

use std::path::{Path, PathBuf};

use farsight_format::{
    AlignedBytes, Container, FileWriter, FormatError, Manifest, RawFile, RecordIndex, RecordTag,
    Version,
};
use farsight_geom::Aabb;
use glam::Vec3;
use serde::{Deserialize, Serialize};

use super::state::RegionState;

/// Record kind of a region's entity table.
pub const ENTITY_TABLE: RecordTag = RecordTag(*b"RENT");
/// Bytes of one [`EntityRecord`] on disk.
pub const ENTITY_RECORD_SIZE: usize = 24;

/// One entity of a region: what the engine needs to create it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EntityRecord {
    /// The entity's id, chosen by the scene's author; passed through to the sink.
    pub id: u32,
    /// The engine's model or prefab index.
    pub model: u32,
    /// Where the entity stands, world space; finite.
    pub position: Vec3,
    /// Its uniform scale; finite.
    pub scale: f32,
}

impl EntityRecord {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.model.to_le_bytes());
        for v in self.position.to_array() {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.scale.to_le_bytes());
    }

    fn read(b: &[u8]) -> Self {
        let f = |i: usize| f32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Self {
            id: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
            model: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
            position: Vec3::new(f(8), f(12), f(16)),
            scale: f(20),
        }
    }
}

/// A region's section of the scene index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SceneRegion {
    /// A name for messages and tools.
    pub name: String,
    /// The region box's lowest corner, world space.
    pub min: [f32; 3],
    /// The region box's highest corner, `>= min` on every axis.
    pub max: [f32; 3],
    /// The state the scene's author gave the region.
    pub authored: RegionState,
    /// The region's file, relative to the index.
    pub file: String,
}

/// The manifest of a scene index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SceneManifest {
    /// Every region; its index here is its number everywhere else.
    pub regions: Vec<SceneRegion>,
}

impl Manifest for SceneManifest {
    fn visit_records(&self, _visit: &mut dyn FnMut(RecordIndex, RecordTag)) {}

    /// Scene indexes are written as version 1 (the checksum does not cover the
    /// version word, so another one is refused here).
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Full)
    }
}

/// The manifest of a region file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegionManifest {
    /// The region's name, as in the scene index.
    pub name: String,
    /// Entities in the table; the reader checks it against the table's size.
    pub entity_count: u32,
    /// The [`ENTITY_TABLE`] record: [`ENTITY_RECORD_SIZE`] bytes per entity.
    pub entities: RecordIndex,
}

impl Manifest for RegionManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        visit(self.entities, ENTITY_TABLE);
    }

    /// Region files are written as version 1, as scene indexes are.
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Full)
    }
}

/// What a scene is made of when writing one.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSpec {
    /// A name for messages and tools.
    pub name: String,
    /// The region's box, world space.
    pub bounds: Aabb,
    /// The state the region starts in.
    pub authored: RegionState,
    /// The entities its file holds.
    pub entities: Vec<EntityRecord>,
}

/// Why a scene or a region could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SceneError {
    /// The file is not a sound farsight container of the expected kind.
    #[error("{path}: {source}")]
    Format {
        /// The file read or written.
        path: PathBuf,
        /// What the container reader or writer found.
        #[source]
        source: FormatError,
    },
    /// A region's box has a non-finite corner or `min > max` on some axis.
    #[error("{path}: region {region} ({name}) has an invalid box {min:?}..{max:?}")]
    BadBounds {
        /// The scene index.
        path: PathBuf,
        /// The region's number.
        region: u32,
        /// The region's name.
        name: String,
        /// The lowest corner as stored.
        min: [f32; 3],
        /// The highest corner as stored.
        max: [f32; 3],
    },
    /// A region's file name is absolute or climbs out of the index's folder.
    #[error("{path}: region {region} names file {file:?}, which leaves the scene folder")]
    BadFileName {
        /// The scene index.
        path: PathBuf,
        /// The region's number.
        region: u32,
        /// The file name as stored.
        file: String,
    },
    /// The entity table is not a whole number of records.
    #[error("{path}: the entity table is {len} bytes, not a multiple of {ENTITY_RECORD_SIZE}")]
    EntityTableSize {
        /// The region file.
        path: PathBuf,
        /// The table's size in bytes.
        len: usize,
    },
    /// The manifest's entity count disagrees with the table.
    #[error("{path}: the manifest says {stated} entities, the table holds {found}")]
    EntityCount {
        /// The region file.
        path: PathBuf,
        /// The count the manifest states.
        stated: u32,
        /// The records the table holds.
        found: usize,
    },
    /// An entity's position or scale is NaN or infinite.
    #[error("{path}: entity {index} has a non-finite position or scale")]
    BadEntity {
        /// The region file.
        path: PathBuf,
        /// The entity's position in the table.
        index: usize,
    },
    /// A folder could not be created or a file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
}

/// Writes `index.farsight` and `region-<i>.farsight` for every region into `dir`;
/// returns the index path.
pub fn write_scene(dir: &Path, regions: &[RegionSpec]) -> Result<PathBuf, SceneError> {
    std::fs::create_dir_all(dir).map_err(|source| SceneError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut manifest = SceneManifest {
        regions: Vec::with_capacity(regions.len()),
    };
    for (i, r) in regions.iter().enumerate() {
        let file = format!("region-{i}.farsight");
        write_region_file(&dir.join(&file), r)?;
        manifest.regions.push(SceneRegion {
            name: r.name.clone(),
            min: r.bounds.min.to_array(),
            max: r.bounds.max.to_array(),
            authored: r.authored,
            file,
        });
    }
    let path = dir.join("index.farsight");
    FileWriter::new(Version::Full)
        .write_to(&manifest, &path)
        .map_err(|source| SceneError::Format {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// Writes one region's file.
pub fn write_region_file(path: &Path, r: &RegionSpec) -> Result<(), SceneError> {
    let mut table = Vec::with_capacity(r.entities.len() * ENTITY_RECORD_SIZE);
    for e in &r.entities {
        e.write(&mut table);
    }
    let mut w = FileWriter::new(Version::Full);
    let entities = w.add_record(ENTITY_TABLE, &table);
    let manifest = RegionManifest {
        name: r.name.clone(),
        entity_count: r.entities.len() as u32,
        entities,
    };
    w.write_to(&manifest, path)
        .map_err(|source| SceneError::Format {
            path: path.to_owned(),
            source,
        })
}

/// A scene index, read and checked: region boxes finite with `min <= max`, file
/// names that stay inside the scene's folder.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The index's folder: region file names are relative to it.
    pub dir: PathBuf,
    /// The checked index.
    pub manifest: SceneManifest,
}

impl Scene {
    /// Reads a scene index and checks every region's box and file name; region
    /// files are not opened.
    pub fn open(index: &Path) -> Result<Self, SceneError> {
        let fmt = |source| SceneError::Format {
            path: index.to_owned(),
            source,
        };
        let bytes = AlignedBytes::read_file(index).map_err(fmt)?;
        let manifest = Container::<SceneManifest>::read(&bytes)
            .map_err(fmt)?
            .into_manifest();
        for (i, r) in manifest.regions.iter().enumerate() {
            let b = Aabb::new(Vec3::from(r.min), Vec3::from(r.max));
            if !(b.min.is_finite() && b.max.is_finite() && b.min.cmple(b.max).all()) {
                return Err(SceneError::BadBounds {
                    path: index.to_owned(),
                    region: i as u32,
                    name: r.name.clone(),
                    min: r.min,
                    max: r.max,
                });
            }
            let p = Path::new(&r.file);
            if p.is_absolute()
                || p.components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(SceneError::BadFileName {
                    path: index.to_owned(),
                    region: i as u32,
                    file: r.file.clone(),
                });
            }
        }
        Ok(Self {
            dir: index.parent().unwrap_or(Path::new(".")).to_owned(),
            manifest,
        })
    }

    /// Every region's box, in region order.
    pub fn bounds(&self) -> Vec<Aabb> {
        self.manifest
            .regions
            .iter()
            .map(|r| Aabb::new(Vec3::from(r.min), Vec3::from(r.max)))
            .collect()
    }

    /// Every region's authored state, in region order.
    pub fn authored(&self) -> Vec<RegionState> {
        self.manifest.regions.iter().map(|r| r.authored).collect()
    }

    /// The path of region `region`'s file. Panics when there is no such region.
    pub fn region_path(&self, region: u32) -> PathBuf {
        self.dir.join(&self.manifest.regions[region as usize].file)
    }
}

/// Reads and checks one region file (runs on a worker thread).
pub fn read_region_file(path: &Path) -> Result<Vec<EntityRecord>, SceneError> {
    let fmt = |source| SceneError::Format {
        path: path.to_owned(),
        source,
    };
    let bytes = AlignedBytes::read_file(path).map_err(fmt)?;
    let file = Container::<RegionManifest>::read(&bytes).map_err(fmt)?;
    let m = file.manifest();
    let table = file.record(m.entities).map_err(fmt)?.bytes;
    if table.len() % ENTITY_RECORD_SIZE != 0 {
        return Err(SceneError::EntityTableSize {
            path: path.to_owned(),
            len: table.len(),
        });
    }
    let found = table.len() / ENTITY_RECORD_SIZE;
    if found != m.entity_count as usize {
        return Err(SceneError::EntityCount {
            path: path.to_owned(),
            stated: m.entity_count,
            found,
        });
    }
    let mut out = Vec::with_capacity(found);
    for (index, chunk) in table.chunks_exact(ENTITY_RECORD_SIZE).enumerate() {
        let e = EntityRecord::read(chunk);
        if !(e.position.is_finite() && e.scale.is_finite()) {
            return Err(SceneError::BadEntity {
                path: path.to_owned(),
                index,
            });
        }
        out.push(e);
    }
    Ok(out)
}
