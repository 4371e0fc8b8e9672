//! Saving and loading a grid in the farsight container: a RON manifest listing
//! every chunk (uniform ones inline, dense ones as an LZ4-compressed `TVOX` record of
//! 32768 (material, occupancy) pairs). Loading validates everything and builds a new
//! grid, so a corrupt file leaves the caller's grid untouched.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use farsight_format::{
    AlignedBytes, Container, FileWriter, FormatError, Manifest, ReadConfig, RecordIndex, RecordTag,
    Version,
};
use glam::IVec3;
use serde::{Deserialize, Serialize};

use crate::cell::{Cell, Material, CELL_SIZE, CHUNK_CELLS, CHUNK_VOLUME};
use crate::chunk::{ChunkCells, ChunkEntry};
use crate::grid::{fresh_generation, VoxelGrid};

/// Record kind of one dense chunk.
pub const CHUNK_TAG: RecordTag = RecordTag(*b"TVOX");
/// The manifest's `kind` for terrain files.
pub const TERRAIN_KIND: &str = "farsight-terrain";
/// Version of the terrain manifest layout.
pub const TERRAIN_FORMAT: u32 = 1;
/// Largest chunk coordinate a file may hold.
pub const CHUNK_COORD_LIMIT: i32 = 1 << 22;

const DENSE_BYTES: usize = CHUNK_VOLUME * 2;

/// One chunk in the manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    /// The chunk's coordinate, in chunks; within [`CHUNK_COORD_LIMIT`] on every axis.
    pub coord: [i32; 3],
    /// `[material, occupancy]` of a uniform chunk.
    pub uniform: Option<[u8; 2]>,
    /// The `TVOX` record of a dense chunk.
    pub record: Option<RecordIndex>,
}

/// The manifest of a terrain file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerrainManifest {
    /// Always [`TERRAIN_KIND`]; anything else is another asset.
    pub kind: String,
    /// The manifest layout, [`TERRAIN_FORMAT`].
    pub format: u32,
    /// World units per cell when saved; must equal [`CELL_SIZE`] to load.
    pub cell_size: f32,
    /// Cells per chunk axis when saved; must equal [`CHUNK_CELLS`] to load.
    pub chunk_cells: u32,
    /// The grid's revision when saved; the loaded grid starts from it.
    pub revision: u64,
    /// Every stored chunk, once each.
    pub chunks: Vec<ChunkRef>,
}

impl Manifest for TerrainManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for c in &self.chunks {
            if let Some(r) = c.record {
                visit(r, CHUNK_TAG);
            }
        }
    }

    /// Terrain saves are written as version 1; the checksum does not cover the
    /// version word, so another one is refused here.
    fn check(&self, file: &farsight_format::RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Full)
    }
}

/// Why a terrain file was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum TerrainFileError {
    /// The container itself is damaged (identifier, checksum, table, manifest...).
    Format(FormatError),
    /// The file is a farsight container of another asset kind or manifest version.
    WrongKind {
        /// The manifest's `kind`.
        kind: String,
        /// The manifest's `format`.
        format: u32,
    },
    /// The file's cells or chunks are another size than this build's.
    UnsupportedLayout {
        /// The file's cell size, world units.
        cell_size: f32,
        /// The file's cells per chunk axis.
        chunk_cells: u32,
    },
    /// A chunk coordinate lies beyond [`CHUNK_COORD_LIMIT`].
    ChunkOutOfRange {
        /// The coordinate as stored.
        coord: [i32; 3],
    },
    /// The manifest lists one chunk twice.
    DuplicateChunk {
        /// The repeated coordinate.
        coord: [i32; 3],
    },
    /// A chunk entry is neither uniform nor dense, or both, or stores nothing.
    BadChunk {
        /// The chunk's coordinate.
        coord: [i32; 3],
        /// Which of those it is.
        reason: &'static str,
    },
    /// A dense record does not decompress to exactly 65536 bytes.
    BadRecord {
        /// The chunk's coordinate.
        coord: [i32; 3],
        /// Bytes it decompressed to (0 when it did not decompress at all).
        found: usize,
    },
    /// A cell that is not canonical (air with occupancy, or material without).
    NonCanonicalCell {
        /// The chunk's coordinate.
        coord: [i32; 3],
        /// The cell's chunk-local index (x fastest).
        index: usize,
        /// `[material, occupancy]` as stored.
        cell: [u8; 2],
    },
    /// The file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl std::fmt::Display for TerrainFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Format(e) => write!(f, "terrain file container: {e}"),
            Self::WrongKind { kind, format } => {
                write!(f, "not a terrain file: kind {kind:?} format {format} (expected {TERRAIN_KIND:?} {TERRAIN_FORMAT})")
            }
            Self::UnsupportedLayout { cell_size, chunk_cells } => write!(
                f,
                "cells of {cell_size} units in chunks of {chunk_cells}; this build uses {CELL_SIZE} and {CHUNK_CELLS}"
            ),
            Self::ChunkOutOfRange { coord } => write!(f, "chunk {coord:?} beyond +-{CHUNK_COORD_LIMIT}"),
            Self::DuplicateChunk { coord } => write!(f, "chunk {coord:?} listed twice"),
            Self::BadChunk { coord, reason } => write!(f, "chunk {coord:?}: {reason}"),
            Self::BadRecord { coord, found } => {
                write!(f, "chunk {coord:?}: record decodes to {found} bytes, expected {DENSE_BYTES}")
            }
            Self::NonCanonicalCell { coord, index, cell } => {
                write!(f, "chunk {coord:?} cell {index}: material {} occupancy {} is not canonical", cell[0], cell[1])
            }
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for TerrainFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Format(e) => Some(e),
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<FormatError> for TerrainFileError {
    fn from(e: FormatError) -> Self {
        Self::Format(e)
    }
}

/// The file bytes of `grid` (chunks in coordinate order: same grid, same bytes).
pub fn save_grid(grid: &VoxelGrid) -> Result<Vec<u8>, TerrainFileError> {
    let mut coords: Vec<IVec3> = grid.chunk_coords().collect();
    coords.sort_unstable_by_key(|c| (c.z, c.y, c.x));
    let mut writer = FileWriter::new(Version::Full);
    let mut chunks = Vec::with_capacity(coords.len());
    for c in coords {
        let cells = &grid.entry(c).expect("listed chunk").cells;
        let entry = match &**cells {
            ChunkCells::Uniform(u) => ChunkRef {
                coord: c.to_array(),
                uniform: Some([u.material.0, u.occupancy]),
                record: None,
            },
            ChunkCells::Dense(d) => {
                let bytes: &[u8] = bytemuck::cast_slice(d);
                let packed = lz4_flex::block::compress(bytes);
                ChunkRef {
                    coord: c.to_array(),
                    uniform: None,
                    record: Some(writer.add_record(CHUNK_TAG, &packed)),
                }
            }
        };
        chunks.push(entry);
    }
    let manifest = TerrainManifest {
        kind: TERRAIN_KIND.into(),
        format: TERRAIN_FORMAT,
        cell_size: CELL_SIZE,
        chunk_cells: CHUNK_CELLS as u32,
        revision: grid.revision(),
        chunks,
    };
    Ok(writer.finish(&manifest)?)
}

/// Write `grid` to `path`.
pub fn write_grid(grid: &VoxelGrid, path: impl AsRef<Path>) -> Result<(), TerrainFileError> {
    let bytes = save_grid(grid)?;
    std::fs::write(path.as_ref(), bytes).map_err(|source| TerrainFileError::Io {
        path: path.as_ref().into(),
        source,
    })
}

/// Read a grid from `path` (see [`load_grid`]).
pub fn read_grid(path: impl AsRef<Path>) -> Result<VoxelGrid, TerrainFileError> {
    let bytes = AlignedBytes::read_file(path.as_ref())?;
    load_grid(bytes.as_slice())
}

/// Parse and validate a terrain file into a new grid (fresh generation).
pub fn load_grid(bytes: &[u8]) -> Result<VoxelGrid, TerrainFileError> {
    load_grid_with(bytes, ReadConfig::default())
}

/// [`load_grid`] with container options (fuzzers turn the checksum off to reach
/// the checks behind it).
pub fn load_grid_with(bytes: &[u8], options: ReadConfig) -> Result<VoxelGrid, TerrainFileError> {
    let file = Container::<TerrainManifest>::read_with(bytes, options)?;
    let m = file.manifest();
    check_manifest(m)?;
    let mut grid = VoxelGrid::new();
    let mut buf = vec![0u8; DENSE_BYTES];
    for c in &m.chunks {
        let coord = c.coord;
        if coord
            .iter()
            .any(|v| v.unsigned_abs() > CHUNK_COORD_LIMIT as u32)
        {
            return Err(TerrainFileError::ChunkOutOfRange { coord });
        }
        let cells = match (c.uniform, c.record) {
            (Some(cell), None) => uniform_cells(coord, cell)?,
            (None, Some(r)) => dense_cells(coord, file.record(r)?.bytes, &mut buf)?,
            _ => {
                return Err(TerrainFileError::BadChunk {
                    coord,
                    reason: "needs exactly one of uniform or record",
                })
            }
        };
        let entry = ChunkEntry {
            cells: Arc::new(cells),
            revision: m.revision,
            created: m.revision,
            history: Default::default(),
            coarse: Default::default(),
        };
        if grid
            .chunks
            .insert(IVec3::from_array(coord), entry)
            .is_some()
        {
            return Err(TerrainFileError::DuplicateChunk { coord });
        }
    }
    grid.revision = m.revision;
    grid.generation = fresh_generation();
    Ok(grid)
}

/// The manifest's kind, format and layout are this reader's, and no record backs
/// two chunks.
fn check_manifest(m: &TerrainManifest) -> Result<(), TerrainFileError> {
    if m.kind != TERRAIN_KIND || m.format != TERRAIN_FORMAT {
        return Err(TerrainFileError::WrongKind {
            kind: m.kind.clone(),
            format: m.format,
        });
    }
    if m.cell_size != CELL_SIZE || m.chunk_cells != CHUNK_CELLS as u32 {
        return Err(TerrainFileError::UnsupportedLayout {
            cell_size: m.cell_size,
            chunk_cells: m.chunk_cells,
        });
    }
    // Each record backs one chunk, so a dense chunk's 64 KiB always come from its own
    // compressed bytes in the file (a shared record would multiply them).
    let mut records: Vec<(u32, usize)> = m
        .chunks
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.record.map(|r| (r.0, i)))
        .collect();
    records.sort_unstable();
    if let Some(w) = records.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(TerrainFileError::BadChunk {
            coord: m.chunks[w[1].1].coord,
            reason: "its record also backs another chunk",
        });
    }
    Ok(())
}

/// A uniform chunk's cell (material, occupancy): canonical and not empty.
fn uniform_cells(coord: [i32; 3], [m, o]: [u8; 2]) -> Result<ChunkCells, TerrainFileError> {
    let cell = Cell {
        material: Material(m),
        occupancy: o,
    };
    if !cell.is_canonical() {
        return Err(TerrainFileError::NonCanonicalCell {
            coord,
            index: 0,
            cell: [m, o],
        });
    }
    if cell.is_empty() {
        return Err(TerrainFileError::BadChunk {
            coord,
            reason: "an empty chunk is never stored",
        });
    }
    Ok(ChunkCells::Uniform(cell))
}

/// A dense chunk from its record's bytes (one LZ4 block of exactly
/// [`DENSE_BYTES`], unpacked into `buf`): every cell canonical, collapsed to uniform
/// where it is, and not empty.
fn dense_cells(
    coord: [i32; 3],
    bytes: &[u8],
    buf: &mut [u8],
) -> Result<ChunkCells, TerrainFileError> {
    let n = lz4_flex::block::decompress_into(bytes, buf)
        .map_err(|_| TerrainFileError::BadRecord { coord, found: 0 })?;
    if n != DENSE_BYTES {
        return Err(TerrainFileError::BadRecord { coord, found: n });
    }
    let mut dense = vec![Cell::EMPTY; CHUNK_VOLUME].into_boxed_slice();
    for (i, (d, p)) in dense.iter_mut().zip(buf.chunks_exact(2)).enumerate() {
        let cell = Cell {
            material: Material(p[0]),
            occupancy: p[1],
        };
        if !cell.is_canonical() {
            return Err(TerrainFileError::NonCanonicalCell {
                coord,
                index: i,
                cell: [p[0], p[1]],
            });
        }
        *d = cell;
    }
    let mut cells = ChunkCells::Dense(dense);
    cells.collapse();
    if cells.is_all_empty() {
        return Err(TerrainFileError::BadChunk {
            coord,
            reason: "an empty chunk is never stored",
        });
    }
    Ok(cells)
}
