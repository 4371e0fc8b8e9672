//! Cooked cluster files as the streamer reads them: the file `farsight cook mesh
//! --clusters` writes ([`Version::Streamed`](farsight_format::Version::Streamed)).
//!
//! [`CookedModel::open`] reads only the file's head (header, manifest, directory;
//! its own checksum) and gives the streamer's model description: each level a
//! contiguous byte range with its own CRC-32, its triangles and max parent error,
//! and the sphere around every error sphere of every level. The streamer then reads
//! a level's range with its I/O backend and, on the worker that read its last chunk,
//! checks that range alone ([`CookedModel::check_level`]: checksum, record layout,
//! the manifest's copies of its header, the error bounds). A bad level fails alone;
//! the other levels stream.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use farsight_format::{
    AlignedBytes, ClusterGeometry, ClusterMeshManifest, FileHead, FormatError, RecordRange,
    RECORD_ALIGN,
};

use super::driver::LevelFile;
use super::types::{LevelDesc, ModelDesc, MAX_LEVELS};

/// Why a level's bytes were refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LevelFileError {
    /// The bytes do not decode as a cluster level record.
    #[error("not a valid farsight cluster level: {0}")]
    Format(#[from] FormatError),
    /// The check was asked about a model or level it does not know.
    #[error("model {model} has no level {level}")]
    NoSuchLevel {
        /// The model's index.
        model: u32,
        /// The level asked for, 0 finest.
        level: u8,
    },
}

/// Why a cooked cluster file could not be opened as a streamer model. Each variant
/// names the file once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CookedModelError {
    /// The file's head could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The head is not a streamed cluster container with a sound manifest.
    #[error("{}: not a streamable farsight cluster file: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What the container reader found.
        source: FormatError,
    },
    /// No levels, or more than [`MAX_LEVELS`].
    #[error("{}: {found} levels; a streamed model has 1 to {MAX_LEVELS}", path.display())]
    LevelCount {
        /// The file.
        path: PathBuf,
        /// The levels it has.
        found: usize,
    },
    /// The file was cooked before error bounds were recorded.
    #[error("{}: the manifest has no error_bounds (cook it again)", path.display())]
    NoErrorBounds {
        /// The file.
        path: PathBuf,
    },
    /// The geometry asked for is past the file's geometries.
    #[error("{}: no geometry {geometry}; the file holds {count}", path.display())]
    NoSuchGeometry {
        /// The file.
        path: PathBuf,
        /// The geometry asked for.
        geometry: usize,
        /// Geometries the file holds.
        count: usize,
    },
}

/// What a level that passed its check holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelSummary {
    /// The level's number from its record header, 0 finest.
    pub level: u32,
    /// Clusters in the level.
    pub clusters: u32,
    /// Real triangles in the level (slot padding not counted).
    pub triangles: u32,
    /// The level's largest parent error, in model units.
    pub max_parent_error: f32,
}

/// One level of a cooked model as the streamer sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CookedLevel {
    /// Byte offset of the level record in the file.
    pub offset: u64,
    /// Bytes of the level record: what streaming it in costs.
    pub bytes: u64,
    /// CRC-32 of those bytes.
    pub crc: u32,
    /// Real triangles in the level, from the manifest.
    pub triangles: u32,
    /// Clusters in the level, from the manifest.
    pub clusters: u32,
    /// The level's largest parent error ([`farsight_format::NO_PARENT_ERROR`] for
    /// the coarsest): the number level selection decides by.
    pub max_parent_error: f32,
}

/// One geometry of a cooked cluster file opened for streaming: the file's manifest
/// and the byte range of every level of the geometry, from the file's head alone.
/// Most files hold one geometry; a scene of several distinct meshes holds one per
/// mesh, each its own streamer model ([`CookedModel::open_all`]), placed by the
/// manifest's [`ClusterMeshManifest::all_placements`].
#[derive(Clone, Debug)]
pub struct CookedModel {
    path: PathBuf,
    manifest: ClusterMeshManifest,
    geometry: usize,
    ranges: Vec<RecordRange>,
    error_bounds: [f32; 4],
}

impl CookedModel {
    /// Opens a cooked cluster file: reads and verifies its head only (a first read
    /// of [`FileHead::MIN_PREFIX`] bytes, a second when the head is longer), parses
    /// the manifest and checks it names 1 to [`MAX_LEVELS`] level records whose
    /// sizes are the directory's, and has its `error_bounds`. Refuses files of
    /// another version with `WrongVersion`. Geometry 0 of a file of several.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CookedModelError> {
        Self::open_geometry(path, 0)
    }

    /// Geometry `geometry` of a cooked cluster file (see [`CookedModel::open`]).
    pub fn open_geometry(
        path: impl AsRef<Path>,
        geometry: usize,
    ) -> Result<Self, CookedModelError> {
        let path = path.as_ref();
        Self::from_head_geometry(path, &read_head(path)?, geometry)
    }

    /// Every geometry of a cooked cluster file, geometry 0 first, from one read of
    /// its head.
    pub fn open_all(path: impl AsRef<Path>) -> Result<Vec<Self>, CookedModelError> {
        let path = path.as_ref();
        let head = read_head(path)?;
        let manifest = parse_manifest(path, &head)?;
        (0..manifest.geometry_count())
            .map(|g| Self::from_manifest(path, &head, manifest.clone(), g))
            .collect()
    }

    /// The model described by a verified file head (see [`CookedModel::open`]):
    /// geometry 0.
    pub fn from_head(path: &Path, head: &FileHead) -> Result<Self, CookedModelError> {
        Self::from_head_geometry(path, head, 0)
    }

    /// Geometry `geometry` of the file whose verified head this is.
    pub fn from_head_geometry(
        path: &Path,
        head: &FileHead,
        geometry: usize,
    ) -> Result<Self, CookedModelError> {
        Self::from_manifest(path, head, parse_manifest(path, head)?, geometry)
    }

    /// Geometry `geometry` of a manifest [`parse_manifest`] read from `head`.
    fn from_manifest(
        path: &Path,
        head: &FileHead,
        manifest: ClusterMeshManifest,
        geometry: usize,
    ) -> Result<Self, CookedModelError> {
        let format = |source| CookedModelError::Format {
            path: path.to_owned(),
            source,
        };
        let Some(g) = manifest.geometry(geometry) else {
            return Err(CookedModelError::NoSuchGeometry {
                path: path.to_owned(),
                geometry,
                count: manifest.geometry_count(),
            });
        };
        let n = g.levels.len();
        if n == 0 || n > MAX_LEVELS {
            return Err(CookedModelError::LevelCount {
                path: path.to_owned(),
                found: n,
            });
        }
        let Some(error_bounds) = g.error_bounds else {
            return Err(CookedModelError::NoErrorBounds {
                path: path.to_owned(),
            });
        };
        let mut ranges = Vec::with_capacity(n);
        for (li, l) in g.levels.iter().enumerate() {
            let r = head.record(l.record).map_err(format)?;
            if r.len != l.bytes {
                return Err(format(FormatError::ManifestDisagrees {
                    level: li as u32,
                    field: "bytes",
                    manifest: l.bytes as f64,
                    record: r.len as f64,
                }));
            }
            ranges.push(r);
        }
        Ok(Self {
            path: path.to_owned(),
            manifest,
            geometry,
            ranges,
            error_bounds,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's manifest (every geometry, the placements).
    pub fn manifest(&self) -> &ClusterMeshManifest {
        &self.manifest
    }

    /// Which of the file's geometries this model is (0 for most files).
    pub fn geometry_index(&self) -> usize {
        self.geometry
    }

    /// This model's geometry in the manifest (name, bounds, materials, level entries).
    pub fn geometry(&self) -> ClusterGeometry<'_> {
        self.manifest
            .geometry(self.geometry)
            .expect("opened from this manifest")
    }

    /// Levels, finest first.
    pub fn level_count(&self) -> usize {
        self.ranges.len()
    }

    /// Level `i` (0 the finest).
    pub fn level(&self, i: usize) -> Option<CookedLevel> {
        let (r, e) = (self.ranges.get(i)?, &self.geometry().levels[i]);
        Some(CookedLevel {
            offset: r.offset,
            bytes: r.len,
            crc: r.crc,
            triangles: e.triangles,
            clusters: e.clusters,
            max_parent_error: e.max_parent_error,
        })
    }

    /// Every level, finest first.
    pub fn levels(&self) -> impl Iterator<Item = CookedLevel> + '_ {
        (0..self.level_count()).filter_map(|i| self.level(i))
    }

    /// Each level's largest parent error, finest first (the coarsest is
    /// [`farsight_format::NO_PARENT_ERROR`]): `LevelMetric::ParentErrors` of
    /// `farsight-cluster`'s level selection.
    pub fn parent_errors(&self) -> Vec<f32> {
        self.levels().map(|l| l.max_parent_error).collect()
    }

    /// Centre xyz and radius (model space) of the sphere around every cluster's own
    /// and parent error sphere of every level: the instance bound level selection
    /// measures from.
    pub fn error_bounds(&self) -> [f32; 4] {
        self.error_bounds
    }

    /// Bytes of every level together.
    pub fn total_bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.len).sum()
    }

    /// The scheduler's description of this model, its levels in file `file` (an
    /// index into the [`LevelFile`] list given to the streamer).
    pub fn desc(&self, file: u32) -> ModelDesc {
        ModelDesc {
            levels: self
                .ranges
                .iter()
                .map(|r| LevelDesc {
                    file,
                    offset: r.offset,
                    bytes: r.len,
                })
                .collect(),
        }
    }

    /// Checks the bytes read for level `level` on their own: their length and
    /// CRC-32 (the directory's), then the record ([`ClusterLevelEntry::check_record`]:
    /// layout, the manifest's copies of its header, the error bounds). Copies the
    /// bytes once when they are not 16-byte aligned; never allocates more than
    /// `bytes` holds.
    ///
    /// [`ClusterLevelEntry::check_record`]: farsight_format::ClusterLevelEntry::check_record
    pub fn check_level(&self, level: usize, bytes: &[u8]) -> Result<LevelSummary, LevelFileError> {
        let (Some(range), Some(entry)) =
            (self.ranges.get(level), self.geometry().levels.get(level))
        else {
            return Err(LevelFileError::NoSuchLevel {
                model: 0,
                level: level.min(u8::MAX as usize) as u8,
            });
        };
        range.verify(bytes)?;
        let copy;
        let bytes = if (bytes.as_ptr() as usize) % RECORD_ALIGN == 0 {
            bytes
        } else {
            copy = AlignedBytes::from(bytes);
            copy.as_slice()
        };
        let parsed = entry.check_record(level as u32, bytes, Some(self.error_bounds))?;
        let h = &parsed.header;
        Ok(LevelSummary {
            level: h.level,
            clusters: h.cluster_count,
            triangles: h.triangle_count,
            max_parent_error: h.max_parent_error,
        })
    }
}

/// The manifest of a verified head, its own checks passed (error bounds, placements).
fn parse_manifest(path: &Path, head: &FileHead) -> Result<ClusterMeshManifest, CookedModelError> {
    let format = |source| CookedModelError::Format {
        path: path.to_owned(),
        source,
    };
    let manifest: ClusterMeshManifest = head.parse().map_err(format)?;
    manifest.check_error_bounds().map_err(format)?;
    manifest.check_placements().map_err(format)?;
    Ok(manifest)
}

/// Reads and verifies a file's head: a first read of [`FileHead::MIN_PREFIX`]
/// bytes, a second when the head is longer. With it, a reader finds and checks any
/// record of the file (a texture's bytes) without reading the rest.
pub fn read_head(path: &Path) -> Result<FileHead, CookedModelError> {
    let io = |source| CookedModelError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut prefix = Vec::new();
    let mut want = (FileHead::MIN_PREFIX as u64).min(len);
    let head = loop {
        prefix.resize(want as usize, 0);
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.read_exact(&mut prefix).map_err(io)?;
        match FileHead::read(&prefix, len) {
            Err(FormatError::Truncated { needed, .. }) if needed > want && needed <= len => {
                want = needed;
            }
            r => break r,
        }
    };
    head.map_err(|source| CookedModelError::Format {
        path: path.to_owned(),
        source,
    })
}

/// The scheduler's model descriptions and the streamer's file list for `models`:
/// model `m`'s levels lie in file `m`.
pub fn stream_inputs(models: &[CookedModel]) -> (Vec<ModelDesc>, Vec<LevelFile>) {
    let descs = (0..models.len() as u32)
        .map(|m| models[m as usize].desc(m))
        .collect();
    let files = models
        .iter()
        .map(|m| LevelFile {
            path: m.path.clone(),
        })
        .collect();
    (descs, files)
}

/// Checks a level's complete bytes on the worker thread that read its last chunk
/// (see [`ClusterStreamer::with_level_check`](super::ClusterStreamer::with_level_check)).
pub trait LevelCheck: Send + Sync {
    /// Checks the bytes of level `level` of model `model`.
    fn check(&self, model: u32, level: u8, bytes: &[u8]) -> Result<(), LevelFileError>;
}

/// Model `m` of the streamer is `self[m]`.
impl LevelCheck for Vec<CookedModel> {
    fn check(&self, model: u32, level: u8, bytes: &[u8]) -> Result<(), LevelFileError> {
        let m = self
            .get(model as usize)
            .ok_or(LevelFileError::NoSuchLevel { model, level })?;
        match m.check_level(level as usize, bytes) {
            Err(LevelFileError::NoSuchLevel { level, .. }) => {
                Err(LevelFileError::NoSuchLevel { model, level })
            }
            r => r.map(drop),
        }
    }
}
