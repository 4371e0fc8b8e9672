//! Change queries ("what changed since (generation, revision)") and the neighbour
//! invalidation rule shared by render meshing and collision.

use glam::IVec3;

use crate::cell::{chunk_origin, CellBox, ChunkSet, CHUNK_CELLS};
use crate::grid::VoxelGrid;

/// Why a reader must rebuild everything instead of applying a delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FullRefresh {
    /// The reader followed another grid (or a clone): revisions are not comparable.
    GenerationMismatch {
        /// The generation the reader followed.
        reader: u64,
        /// The grid's generation.
        grid: u64,
    },
    /// The reader claims a revision the grid has not reached.
    FromTheFuture {
        /// The revision the reader claims.
        reader: u64,
        /// The grid's revision.
        grid: u64,
    },
    /// Removals after the reader's revision have left the retained history.
    HistoryExpired {
        /// The revision the reader last saw.
        reader: u64,
        /// The revision of the newest removal that left the history: a reader
        /// older than it gets a full refresh.
        oldest_retained: u64,
    },
}

/// One changed chunk: the chunk-local cell bounds of its edits since the reader's
/// revision, or the whole chunk when that history expired or the chunk is new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkChange {
    /// The chunk's coordinate (in chunks).
    pub chunk: IVec3,
    /// The edited cells, chunk-local (`0..32` on each axis); the whole chunk when
    /// `whole` is set.
    pub bounds: CellBox,
    /// True when the chunk was removed and written again since the reader's
    /// revision, or its edit history no longer reaches that revision: treat every
    /// cell as changed. (A chunk written after being absent at the reader's revision
    /// reports its edits' bounds: it read as empty before them.)
    pub whole: bool,
}

impl ChunkChange {
    /// The edited cells in global cell coordinates.
    pub fn global_bounds(&self) -> CellBox {
        self.bounds.translated(chunk_origin(self.chunk))
    }
}

/// The answer to [`VoxelGrid::changes_since`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changes {
    /// No delta can be given: rebuild everything from the grid.
    Full(FullRefresh),
    /// Exactly what changed since the reader's revision.
    Delta {
        /// Chunks written since (created or edited), sorted by z, then y, then x.
        changed: Vec<ChunkChange>,
        /// Chunks removed since (and not written again), sorted the same way.
        removed: Vec<IVec3>,
    },
}

impl VoxelGrid {
    /// What changed since a reader last saw `(generation, revision)`.
    pub fn changes_since(&self, generation: u64, revision: u64) -> Changes {
        if generation != self.generation {
            return Changes::Full(FullRefresh::GenerationMismatch {
                reader: generation,
                grid: self.generation,
            });
        }
        if revision > self.revision {
            return Changes::Full(FullRefresh::FromTheFuture {
                reader: revision,
                grid: self.revision,
            });
        }
        if revision < self.removals_expired {
            return Changes::Full(FullRefresh::HistoryExpired {
                reader: revision,
                oldest_retained: self.removals_expired,
            });
        }
        // Chunks removed since the reader's revision, written again or not.
        let mut removed_since: Vec<IVec3> = self
            .removals
            .iter()
            .rev()
            .take_while(|(_, r)| *r > revision)
            .map(|(c, _)| *c)
            .collect();
        removed_since.sort_unstable_by_key(|c| (c.z, c.y, c.x));
        removed_since.dedup();
        let was_removed = |c: IVec3| {
            removed_since
                .binary_search_by_key(&(c.z, c.y, c.x), |r| (r.z, r.y, r.x))
                .is_ok()
        };
        let mut changed = Vec::new();
        for (&chunk, e) in &self.chunks {
            if e.revision <= revision {
                continue;
            }
            // A chunk written since the reader's revision after being absent then
            // (unwritten: every cell empty) changed only where its edits since its
            // creation wrote, which its history holds: a mound rising into the air
            // chunk above reaches its edit's neighbours, not all 26 (issue 27 item
            // 21). One removed since then held other cells at the reader's revision;
            // one whose creating edit is not in its history (loaded from a file, or
            // the history moved past it) is taken whole.
            let replaced = e.created > revision
                && (was_removed(chunk) || !e.history.entries().iter().any(|h| h.0 == e.created));
            let (bounds, whole) = if replaced {
                (CellBox::CHUNK_LOCAL, true)
            } else {
                match e.history.changed_since(revision) {
                    Some(b) => (b, false),
                    None => (CellBox::CHUNK_LOCAL, true),
                }
            };
            changed.push(ChunkChange {
                chunk,
                bounds,
                whole,
            });
        }
        removed_since.retain(|c| !self.chunks.contains_key(c));
        let removed = removed_since;
        changed.sort_unstable_by_key(|c| (c.chunk.z, c.chunk.y, c.chunk.x));
        Changes::Delta { changed, removed }
    }
}

/// Cells a chunk's mesh reads beyond its own at `level` (0 = full detail): two
/// samples of padding, each `2^level` cells wide, plus one cell at coarse levels
/// where material voting looks at each cell's neighbours.
#[inline]
pub const fn read_reach(level: u8) -> i32 {
    if level == 0 {
        2
    } else {
        (2 << level) + 1
    }
}

/// The box of global cells whose contents a chunk's mesh at `level` depends on.
pub fn read_box(chunk: IVec3, level: u8) -> CellBox {
    CellBox::new(chunk_origin(chunk), chunk_origin(chunk) + CHUNK_CELLS).padded(read_reach(level))
}

/// Add to `out` every chunk (the edited one and its 26 neighbours) whose mesh at
/// the level `level_of(chunk)` reads a cell of `edited` (global cells).
pub fn affected_chunks(edited: CellBox, level_of: impl Fn(IVec3) -> u8, out: &mut ChunkSet) {
    if edited.is_empty() {
        return;
    }
    let lo = crate::cell::chunk_of_cell(edited.min - 17);
    let hi = crate::cell::chunk_of_cell(edited.max - 1 + 17);
    for z in lo.z..=hi.z {
        for y in lo.y..=hi.y {
            for x in lo.x..=hi.x {
                let c = IVec3::new(x, y, z);
                if read_box(c, level_of(c)).intersects(&edited) {
                    out.insert(c);
                }
            }
        }
    }
}

/// Cells a chunk's collision mesh reads beyond its own: one. It is extracted at full
/// detail without normals, so its cubes reach one sample past each face; the second
/// sample of padding is there for the render mesh's central differences only.
pub const COLLISION_REACH: i32 = 1;

/// Add to `out` every chunk whose collision mesh reads a cell of `edited` (global
/// cells): a subset of what [`affected_chunks`] finds at full detail, so an edit two
/// cells from a face leaves the neighbour's collider alone.
pub fn collision_affected(edited: CellBox, out: &mut ChunkSet) {
    if edited.is_empty() {
        return;
    }
    let lo = crate::cell::chunk_of_cell(edited.min - COLLISION_REACH);
    let hi = crate::cell::chunk_of_cell(edited.max - 1 + COLLISION_REACH);
    for z in lo.z..=hi.z {
        for y in lo.y..=hi.y {
            for x in lo.x..=hi.x {
                out.insert(IVec3::new(x, y, z));
            }
        }
    }
}

/// A removed chunk conservatively invalidates itself and its 26 neighbours.
pub fn removal_affected(chunk: IVec3, out: &mut ChunkSet) {
    for z in -1..=1 {
        for y in -1..=1 {
            for x in -1..=1 {
                out.insert(chunk + IVec3::new(x, y, z));
            }
        }
    }
}
