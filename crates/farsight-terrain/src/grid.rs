//! The sparse grid: a chunk map, generation and revision, the removal log,
//! snapshots and change queries.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use glam::IVec3;

use crate::cell::{chunk_of_cell, local_index, Cell, CellBox, ChunkMap};
use crate::chunk::{ChunkCells, ChunkEntry};
use crate::field::CoarseBlocks;

/// Removals remembered before a lagging reader is told to refresh everything.
pub const REMOVAL_HISTORY: usize = 1024;

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

pub(crate) fn fresh_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Ordering::Relaxed)
}

/// Read access to chunk cells: the live grid or a snapshot. Meshing, water and
/// collision read through this, so they never care which one they were given.
pub trait CellSource: Sync {
    /// The cells of `chunk`, `None` when unwritten (every cell empty).
    fn chunk_cells(&self, chunk: IVec3) -> Option<&ChunkCells>;

    /// The cell at global cell coordinate `c`.
    #[inline]
    fn cell(&self, c: IVec3) -> Cell {
        self.chunk_cells(chunk_of_cell(c))
            .map_or(Cell::EMPTY, |ch| ch.get(local_index(c)))
    }

    /// The coarsest level's block samples of the dense chunk `chunk`, when this
    /// source keeps them (the live grid makes them on first use and drops them when
    /// the chunk is written); `None` and the mesher averages the cells itself. The
    /// field is the same either way.
    #[inline]
    fn coarse_blocks(&self, chunk: IVec3) -> Option<&CoarseBlocks> {
        let _ = chunk;
        None
    }
}

/// A sparse voxel grid of 32^3-cell chunks. See the crate docs.
#[derive(Debug)]
pub struct VoxelGrid {
    pub(crate) chunks: ChunkMap<ChunkEntry>,
    pub(crate) generation: u64,
    pub(crate) revision: u64,
    pub(crate) removals: VecDeque<(IVec3, u64)>,
    /// Revision of the newest removal that fell out of `removals` (0: none).
    pub(crate) removals_expired: u64,
}

impl Default for VoxelGrid {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for VoxelGrid {
    /// Shares every chunk; the clone gets a fresh generation so nobody reads its
    /// revisions as a continuation of this grid's.
    fn clone(&self) -> Self {
        Self {
            chunks: self.chunks.clone(),
            generation: fresh_generation(),
            revision: self.revision,
            removals: self.removals.clone(),
            removals_expired: self.removals_expired,
        }
    }
}

impl CellSource for VoxelGrid {
    #[inline]
    fn chunk_cells(&self, chunk: IVec3) -> Option<&ChunkCells> {
        self.chunks.get(&chunk).map(|e| &*e.cells)
    }

    fn coarse_blocks(&self, chunk: IVec3) -> Option<&CoarseBlocks> {
        let e = self.chunks.get(&chunk)?;
        match &*e.cells {
            ChunkCells::Dense(cells) => {
                Some(e.coarse.get_or_init(|| Box::new(CoarseBlocks::of(cells))))
            }
            ChunkCells::Uniform(_) => None,
        }
    }
}

impl VoxelGrid {
    /// An empty grid (every cell air) with a generation no other grid has.
    pub fn new() -> Self {
        Self {
            chunks: ChunkMap::default(),
            generation: fresh_generation(),
            revision: 0,
            removals: VecDeque::new(),
            removals_expired: 0,
        }
    }

    /// Identity of this grid's revision sequence.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Revision of the latest edit that changed something (0 for a new grid).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Number of written (stored) chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Coordinates of every stored chunk (arbitrary order).
    pub fn chunk_coords(&self) -> impl Iterator<Item = IVec3> + '_ {
        self.chunks.keys().copied()
    }

    /// The stored chunk `chunk` with its revisions and edit history; `None` for an
    /// unwritten (all-air) chunk.
    pub fn entry(&self, chunk: IVec3) -> Option<&ChunkEntry> {
        self.chunks.get(&chunk)
    }

    /// Bytes of dense cell storage held (shared chunks counted once per holder),
    /// and of the coarse blocks kept for base meshes ([`CoarseBlocks`]).
    pub fn heap_bytes(&self) -> usize {
        self.chunks
            .values()
            .map(|e| e.cells.heap_bytes() + e.coarse.get().map_or(0, |c| c.heap_bytes()))
            .sum()
    }

    /// Number of chunks stored as one uniform value.
    pub fn uniform_chunk_count(&self) -> usize {
        self.chunks
            .values()
            .filter(|e| e.cells.uniform().is_some())
            .count()
    }

    /// A read-only view sharing every chunk. Cheap: one reference count per chunk,
    /// no cell is copied. Later writes to the grid copy the chunks they touch.
    pub fn snapshot(&self) -> GridSnapshot {
        GridSnapshot {
            chunks: self
                .chunks
                .iter()
                .map(|(k, e)| (*k, e.cells.clone()))
                .collect(),
            generation: self.generation,
            revision: self.revision,
        }
    }

    /// A snapshot holding only `chunks` and the neighbours their meshing reads
    /// (the 26 around each; every level's padding stays inside them).
    pub fn snapshot_of(&self, chunks: &[IVec3]) -> GridSnapshot {
        let mut out = ChunkMap::default();
        for &c in chunks {
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let n = c + IVec3::new(dx, dy, dz);
                        if let Some(e) = self.chunks.get(&n) {
                            out.entry(n).or_insert_with(|| e.cells.clone());
                        }
                    }
                }
            }
        }
        GridSnapshot {
            chunks: out,
            generation: self.generation,
            revision: self.revision,
        }
    }

    /// Write one cell (a one-cell edit). Returns the new revision if it changed.
    pub fn set_cell(&mut self, c: IVec3, cell: Cell) -> Option<u64> {
        let cell = Cell::new(cell.material, cell.occupancy);
        if self.cell(c) == cell {
            return None;
        }
        let chunk = chunk_of_cell(c);
        let local = c - crate::cell::chunk_origin(chunk);
        self.revision += 1;
        let rev = self.revision;
        self.apply_chunk_changes(
            chunk,
            &[(local_index(c) as u16, cell)],
            CellBox::new(local, local + 1),
            rev,
        );
        Some(rev)
    }

    /// Apply precomputed changes (local index, new cell) to one chunk and stamp it.
    pub(crate) fn apply_chunk_changes(
        &mut self,
        chunk: IVec3,
        changes: &[(u16, Cell)],
        local_bounds: CellBox,
        revision: u64,
    ) {
        debug_assert!(!changes.is_empty());
        let entry = self.chunks.entry(chunk).or_insert_with(|| ChunkEntry {
            cells: Arc::new(ChunkCells::Uniform(Cell::EMPTY)),
            revision,
            created: revision,
            history: Default::default(),
            coarse: Default::default(),
        });
        let cells = Arc::make_mut(&mut entry.cells);
        let dense = cells.dense_mut();
        for &(i, c) in changes {
            dense[i as usize] = c;
        }
        cells.collapse();
        entry.coarse = Default::default();
        entry.revision = revision;
        entry.history.push(revision, local_bounds);
        if entry.cells.is_all_empty() {
            self.chunks.remove(&chunk);
            self.removals.push_back((chunk, revision));
            if self.removals.len() > REMOVAL_HISTORY {
                if let Some((_, r)) = self.removals.pop_front() {
                    self.removals_expired = r;
                }
            }
        }
    }

    /// Check the grid's invariants: canonical cells, no stored empty chunk,
    /// collapsed uniform chunks, revisions in order. Returns the first violation.
    pub fn validate(&self) -> Result<(), String> {
        for (k, e) in &self.chunks {
            if e.cells.is_all_empty() {
                return Err(format!("chunk {k} is empty but stored"));
            }
            if e.revision > self.revision || e.created > e.revision {
                return Err(format!(
                    "chunk {k} has revision {} beyond the grid's {}",
                    e.revision, self.revision
                ));
            }
            match &*e.cells {
                ChunkCells::Uniform(c) if !c.is_canonical() => {
                    return Err(format!("chunk {k} uniform cell {c:?} not canonical"))
                }
                ChunkCells::Dense(cells) => {
                    if let Some(c) = cells.iter().find(|c| !c.is_canonical()) {
                        return Err(format!("chunk {k} holds non-canonical {c:?}"));
                    }
                    if cells.iter().all(|&c| c == cells[0]) {
                        return Err(format!("chunk {k} is uniform but stored dense"));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A read-only, reference-counted view of some or all of a grid's chunks.
#[derive(Clone, Debug, Default)]
pub struct GridSnapshot {
    chunks: ChunkMap<Arc<ChunkCells>>,
    generation: u64,
    revision: u64,
}

impl GridSnapshot {
    /// The grid's generation when the snapshot was taken.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The grid's revision when the snapshot was taken.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Chunks the snapshot holds.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }
    /// True when this snapshot shares `chunk`'s storage with `grid` (no copy made).
    pub fn shares_chunk_with(&self, grid: &VoxelGrid, chunk: IVec3) -> bool {
        match (self.chunks.get(&chunk), grid.chunks.get(&chunk)) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, &b.cells),
            _ => false,
        }
    }
}

impl CellSource for GridSnapshot {
    #[inline]
    fn chunk_cells(&self, chunk: IVec3) -> Option<&ChunkCells> {
        self.chunks.get(&chunk).map(|c| &**c)
    }
}
