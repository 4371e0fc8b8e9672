//! Building levels from their files: what an I/O thread does to make one level of a
//! baked building resident (open the file, read it whole, check and decode it), and
//! what the loop learns of it ([`BuildingDone`], an I/O completion like a region's).
//!
//! A building file (docs/design/baked-buildings.md#the-full-and-cooked-files, full or cooked: the reader chooses by its version
//! word) holds every level behind one checksum, so a level is read by reading the
//! file; what is kept is the count of bytes read, as the loop's uploader counts
//! cluster levels without keeping them.

use std::io::Read;
use std::path::Path;

use farsight_building::{BakedBuilding, FileError};
use serde::{Deserialize, Serialize};

/// Reads of one building level that fail before the level is given up: the first
/// and three retries (the cluster levels' rule for a failed read, docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget, for every system).
pub(crate) const BUILDING_TRIES: u8 = 4;

/// The largest building file the loop reads (a baked building of the metropolis is
/// well under a megabyte): a longer file is refused before it is read.
pub const MAX_BUILDING_FILE: u64 = 1 << 30;

/// A building file read that finished: the level it was read for, whether the file
/// read, checked and decoded, and the bytes read from disk (what a missing file
/// reads is 0). The I/O completion of the building system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildingDone {
    /// The building, by its index in `world.ron`.
    pub building: u32,
    /// The level the file was read for.
    pub level: u8,
    /// The file read, checked and decoded.
    pub ok: bool,
    /// Bytes read from disk.
    pub bytes: u64,
}

/// Why a building file gave no level.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BuildingFileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{size} bytes, more than a building file may hold ({MAX_BUILDING_FILE})")]
    TooLarge { size: u64 },
    #[error("{0}")]
    File(#[from] FileError),
    #[error("holds building `{found}`, but world.ron names `{expected}`")]
    WrongBuilding { expected: String, found: String },
    #[error("holds {found} levels, but world.ron lists {expected}")]
    Levels { expected: usize, found: usize },
    #[error("level {level} holds no mesh")]
    EmptyLevel { level: u8 },
}

/// What an I/O thread hands back: the bytes read, and whether they held the level.
#[derive(Debug)]
pub(crate) struct BuildingRead {
    pub bytes: u64,
    pub result: Result<(), BuildingFileError>,
}

/// Reads `path` whole and checks it holds building `id` with `levels` levels, level
/// `level` among them with meshes; every mesh of the file is decoded and checked.
pub(crate) fn read_building_level(path: &Path, id: &str, levels: usize, level: u8) -> BuildingRead {
    let mut bytes = Vec::new();
    let result = read_capped(path, &mut bytes).and_then(|()| check(&bytes, id, levels, level));
    BuildingRead {
        bytes: bytes.len() as u64,
        result,
    }
}

fn read_capped(path: &Path, out: &mut Vec<u8>) -> Result<(), BuildingFileError> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > MAX_BUILDING_FILE {
        return Err(BuildingFileError::TooLarge { size });
    }
    out.reserve_exact(size as usize);
    // A file growing while read is still stopped at the cap.
    file.take(MAX_BUILDING_FILE + 1).read_to_end(out)?;
    if out.len() as u64 > MAX_BUILDING_FILE {
        return Err(BuildingFileError::TooLarge {
            size: out.len() as u64,
        });
    }
    Ok(())
}

fn check(bytes: &[u8], id: &str, levels: usize, level: u8) -> Result<(), BuildingFileError> {
    let baked = BakedBuilding::read(bytes)?;
    if baked.id() != id {
        return Err(BuildingFileError::WrongBuilding {
            expected: id.to_owned(),
            found: baked.id().to_owned(),
        });
    }
    if baked.level_count() != levels {
        return Err(BuildingFileError::Levels {
            expected: levels,
            found: baked.level_count(),
        });
    }
    let has_mesh = baked
        .level(level as usize)
        .is_some_and(|l| l.pieces().next().is_some());
    if !has_mesh {
        return Err(BuildingFileError::EmptyLevel { level });
    }
    Ok(())
}
