//! One chunk's cells (uniform in O(1) memory or dense) and its edit history.

use std::sync::{Arc, OnceLock};

use crate::cell::{Cell, CellBox, CHUNK_VOLUME};
use crate::field::CoarseBlocks;

/// The cells of one 32^3 chunk. Shared by `Arc` between the grid and its snapshots;
/// a write goes through `Arc::make_mut`, which copies only when shared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkCells {
    /// Every cell equal (all empty, all full, one material): two bytes.
    Uniform(Cell),
    /// `CHUNK_VOLUME` cells, x fastest, then y, then z.
    Dense(Box<[Cell]>),
}

impl ChunkCells {
    /// The cell at chunk-local index `index` ([`local_index`](crate::local_index)
    /// order); panics past [`CHUNK_VOLUME`] for a dense chunk.
    #[inline]
    pub fn get(&self, index: usize) -> Cell {
        match self {
            ChunkCells::Uniform(c) => *c,
            ChunkCells::Dense(cells) => cells[index],
        }
    }

    /// `Some(cell)` when every cell equals `cell`.
    #[inline]
    pub fn uniform(&self) -> Option<Cell> {
        match self {
            ChunkCells::Uniform(c) => Some(*c),
            ChunkCells::Dense(_) => None,
        }
    }

    /// The dense cells, expanding a uniform chunk first.
    pub fn dense_mut(&mut self) -> &mut [Cell] {
        if let ChunkCells::Uniform(c) = *self {
            *self = ChunkCells::Dense(vec![c; CHUNK_VOLUME].into_boxed_slice());
        }
        match self {
            ChunkCells::Dense(cells) => cells,
            ChunkCells::Uniform(_) => unreachable!("expanded above"),
        }
    }

    /// Collapse a dense chunk whose cells are all equal to `Uniform`.
    pub fn collapse(&mut self) {
        if let ChunkCells::Dense(cells) = self {
            let first = cells[0];
            if cells.iter().all(|&c| c == first) {
                *self = ChunkCells::Uniform(first);
            }
        }
    }

    /// True when every cell is empty.
    pub fn is_all_empty(&self) -> bool {
        self.uniform() == Some(Cell::EMPTY)
    }

    /// Heap bytes held by this storage (0 for uniform chunks).
    pub fn heap_bytes(&self) -> usize {
        match self {
            ChunkCells::Uniform(_) => 0,
            ChunkCells::Dense(c) => std::mem::size_of_val::<[Cell]>(c),
        }
    }
}

/// How many edits a chunk remembers the bounds of (docs/design/voxel-terrain.md#edits-revisions-and-generations).
pub const EDIT_HISTORY: usize = 6;

/// The bounds (chunk-local cells) of a chunk's latest edits, newest last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EditHistory {
    entries: [(u64, CellBox); EDIT_HISTORY],
    len: u8,
    /// Revision of the newest edit that fell out of `entries` (0: none).
    expired: u64,
}

impl EditHistory {
    /// Records an edit at `revision` (increasing) touching `bounds`; the oldest of a
    /// full history expires.
    pub fn push(&mut self, revision: u64, bounds: CellBox) {
        if (self.len as usize) == EDIT_HISTORY {
            self.expired = self.entries[0].0;
            self.entries.copy_within(1.., 0);
            self.len -= 1;
        }
        self.entries[self.len as usize] = (revision, bounds);
        self.len += 1;
    }

    /// Union of the bounds of every edit after `since`, or `None` when some edit
    /// after `since` has expired (the whole chunk must then be assumed changed).
    pub fn changed_since(&self, since: u64) -> Option<CellBox> {
        if self.expired > since {
            return None;
        }
        Some(
            self.entries[..self.len as usize]
                .iter()
                .filter(|(r, _)| *r > since)
                .fold(CellBox::default(), |acc, (_, b)| acc.union(*b)),
        )
    }

    /// The retained edits as `(revision, bounds)`, oldest first.
    pub fn entries(&self) -> &[(u64, CellBox)] {
        &self.entries[..self.len as usize]
    }
}

/// A chunk as the grid stores it.
#[derive(Clone, Debug)]
pub struct ChunkEntry {
    /// The cells, shared with every snapshot taken since the last write.
    pub cells: Arc<ChunkCells>,
    /// Revision of the latest edit that changed this chunk.
    pub revision: u64,
    /// Revision at which this entry was created (written after being absent).
    pub created: u64,
    /// The bounds of the chunk's latest edits.
    pub history: EditHistory,
    /// A dense chunk's coarsest-level block samples, made on first use by a base
    /// mesh and dropped by every write ([`crate::CellSource::coarse_blocks`]).
    pub(crate) coarse: OnceLock<Box<CoarseBlocks>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::IVec3;

    #[test]
    fn history_keeps_six_and_reports_expiry() {
        let mut h = EditHistory::default();
        for r in 1..=8u64 {
            let b = CellBox::new(IVec3::splat(r as i32), IVec3::splat(r as i32 + 1));
            h.push(r, b);
        }
        assert_eq!(h.entries().len(), 6);
        assert_eq!(h.changed_since(1), None, "edit 2 expired");
        assert_eq!(
            h.changed_since(2),
            Some(CellBox::new(IVec3::splat(3), IVec3::splat(9)))
        );
        assert_eq!(
            h.changed_since(7),
            Some(CellBox::new(IVec3::splat(8), IVec3::splat(9)))
        );
        assert!(h.changed_since(8).unwrap().is_empty());
    }

    #[test]
    fn uniform_expands_and_collapses() {
        let mut c = ChunkCells::Uniform(Cell::EMPTY);
        assert_eq!(c.heap_bytes(), 0);
        c.dense_mut()[5] = Cell::full(crate::Material::ROCK);
        c.collapse();
        assert!(c.uniform().is_none());
        c.dense_mut()[5] = Cell::EMPTY;
        c.collapse();
        assert!(c.is_all_empty());
    }
}
