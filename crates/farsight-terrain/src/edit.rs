//! Region edits: set box, sphere add/carve, fill, paint. Each first finds the cells
//! that change, then applies them together under one revision.

use glam::{IVec3, Vec3};

use crate::cell::{
    chunk_of_cell, chunk_origin, local_index, Cell, CellBox, Material, CELL_SIZE, CHUNK_CELLS,
};
use crate::grid::{CellSource, VoxelGrid};

/// Largest number of cells one edit may cover (about 4 km on a side at 4 units).
pub const EDIT_CELL_LIMIT: u64 = 1 << 30;
/// Largest cell coordinate magnitude an edit may reach (keeps chunk maths in i32).
pub const CELL_COORD_LIMIT: f32 = (1 << 28) as f32;

/// Why an edit was refused. Nothing is written when an edit is refused.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EditError {
    /// A coordinate or radius was NaN or infinite.
    NonFinite {
        /// Which input ("box min", "sphere centre", "sphere radius").
        what: &'static str,
        /// Its value (a radius repeated in all three lanes).
        value: [f32; 3],
    },
    /// `min > max` on some axis.
    InvertedBox {
        /// The box's lower corner as given, world units.
        min: [f32; 3],
        /// The box's upper corner as given, world units.
        max: [f32; 3],
    },
    /// A negative sphere radius.
    NegativeRadius {
        /// The radius given, world units.
        radius: f32,
    },
    /// The region reaches beyond the addressable cell range.
    OutOfRange {
        /// Which input.
        what: &'static str,
        /// Its value, world units.
        value: [f32; 3],
    },
    /// The region covers more cells than [`EDIT_CELL_LIMIT`].
    TooLarge {
        /// Cells the region covers.
        cells: u64,
        /// [`EDIT_CELL_LIMIT`].
        limit: u64,
    },
    /// Painting needs a solid material (not air or water).
    NotSolid {
        /// The material given.
        material: Material,
    },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::NonFinite { what, value } => write!(f, "{what} is not finite: {value:?}"),
            EditError::InvertedBox { min, max } => {
                write!(f, "edit box min {min:?} exceeds max {max:?}")
            }
            EditError::NegativeRadius { radius } => write!(f, "sphere radius {radius} is negative"),
            EditError::OutOfRange { what, value } => {
                write!(f, "{what} {value:?} is beyond the addressable grid")
            }
            EditError::TooLarge { cells, limit } => {
                write!(f, "edit covers {cells} cells, the limit is {limit}")
            }
            EditError::NotSolid { material } => {
                write!(f, "material {} is not a solid material", material.0)
            }
        }
    }
}

impl std::error::Error for EditError {}

/// What an edit did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EditReport {
    /// The revision stamped on the changed chunks; `None` when nothing changed.
    pub revision: Option<u64>,
    /// Cells whose value differs from before the edit.
    pub cells_changed: u64,
    /// Chunks with at least one changed cell (written, created or removed).
    pub chunks_changed: u32,
}

fn check_point(what: &'static str, p: Vec3) -> Result<(), EditError> {
    if !p.is_finite() {
        return Err(EditError::NonFinite {
            what,
            value: p.to_array(),
        });
    }
    if (p / CELL_SIZE).abs().max_element() >= CELL_COORD_LIMIT {
        return Err(EditError::OutOfRange {
            what,
            value: p.to_array(),
        });
    }
    Ok(())
}

/// The cells whose centres lie inside the world box `[min, max]`.
fn cells_in_box(min: Vec3, max: Vec3) -> Result<CellBox, EditError> {
    check_point("box min", min)?;
    check_point("box max", max)?;
    if min.cmpgt(max).any() {
        return Err(EditError::InvertedBox {
            min: min.to_array(),
            max: max.to_array(),
        });
    }
    let lo = (min / CELL_SIZE - 0.5).ceil().as_ivec3();
    let hi = (max / CELL_SIZE - 0.5).floor().as_ivec3() + 1;
    let b = CellBox::new(lo, hi);
    let cells = b.volume();
    if cells > EDIT_CELL_LIMIT {
        return Err(EditError::TooLarge {
            cells,
            limit: EDIT_CELL_LIMIT,
        });
    }
    Ok(b)
}

#[inline]
fn cell_center(c: IVec3) -> Vec3 {
    (c.as_vec3() + 0.5) * CELL_SIZE
}

/// One chunk's changes found by phase 1 of an edit: (chunk, (local index, new cell), local bounds).
type PendingChunk = (IVec3, Vec<(u16, Cell)>, CellBox);

impl VoxelGrid {
    /// Set every cell whose centre lies in `[min, max]` to `cell`.
    pub fn set_box(&mut self, min: Vec3, max: Vec3, cell: Cell) -> Result<EditReport, EditError> {
        let region = cells_in_box(min, max)?;
        let cell = Cell::new(cell.material, cell.occupancy);
        Ok(self.edit_region(region, |_, _| cell))
    }

    /// Make air and `material` cells whose centres lie in the box full `material`;
    /// other materials are left alone (fill a basin with water, fill a hole).
    pub fn fill_box(
        &mut self,
        min: Vec3,
        max: Vec3,
        material: Material,
    ) -> Result<EditReport, EditError> {
        let region = cells_in_box(min, max)?;
        let full = Cell::full(material);
        Ok(self.edit_region(region, |_, old| {
            if old.is_empty() || old.material == material {
                full
            } else {
                old
            }
        }))
    }

    /// Change the material of solid cells whose centres lie in the box, keeping
    /// their occupancy. Geometry does not change.
    pub fn paint_box(
        &mut self,
        min: Vec3,
        max: Vec3,
        material: Material,
    ) -> Result<EditReport, EditError> {
        if !material.is_solid() {
            return Err(EditError::NotSolid { material });
        }
        let region = cells_in_box(min, max)?;
        Ok(self.edit_region(region, |_, old| {
            if old.solid() > 0 {
                Cell::new(material, old.occupancy)
            } else {
                old
            }
        }))
    }

    /// Add a smooth sphere of `material` (or carve one out with `Material::AIR`).
    /// Coverage falls from full to none over one cell around the radius, so the
    /// surface lands on the sphere at the 0.5 crossing.
    pub fn set_sphere(
        &mut self,
        center: Vec3,
        radius: f32,
        material: Material,
    ) -> Result<EditReport, EditError> {
        check_point("sphere centre", center)?;
        if !radius.is_finite() {
            return Err(EditError::NonFinite {
                what: "sphere radius",
                value: [radius; 3],
            });
        }
        if radius < 0.0 {
            return Err(EditError::NegativeRadius { radius });
        }
        let r = Vec3::splat(radius + CELL_SIZE);
        let region = cells_in_box(center - r, center + r)?;
        let carve = material == Material::AIR;
        Ok(self.edit_region(region, |c, old| {
            let d = cell_center(c).distance(center);
            let cover = ((0.5 + (radius - d) / CELL_SIZE).clamp(0.0, 1.0) * 255.0).round() as u8;
            if carve {
                let keep = old.occupancy.min(255 - cover);
                Cell::new(old.material, keep)
            } else if cover > old.solid() {
                Cell::new(material, cover)
            } else {
                old
            }
        }))
    }

    /// The edit engine: evaluate `f(cell, old)` over `region`, collect the cells
    /// that differ per chunk, then apply all chunks under one new revision.
    pub fn edit_region(
        &mut self,
        region: CellBox,
        mut f: impl FnMut(IVec3, Cell) -> Cell,
    ) -> EditReport {
        if region.is_empty() {
            return EditReport::default();
        }
        // Phase 1: find what changes (reads only).
        let mut pending: Vec<PendingChunk> = Vec::new();
        let cmin = chunk_of_cell(region.min);
        let cmax = chunk_of_cell(region.max - 1);
        for cz in cmin.z..=cmax.z {
            for cy in cmin.y..=cmax.y {
                for cx in cmin.x..=cmax.x {
                    let chunk = IVec3::new(cx, cy, cz);
                    let origin = chunk_origin(chunk);
                    let local = region.translated(-origin).intersect(CellBox::CHUNK_LOCAL);
                    let cells = self.chunk_cells(chunk);
                    let mut changes = Vec::new();
                    let mut bounds = CellBox::default();
                    for z in local.min.z..local.max.z {
                        for y in local.min.y..local.max.y {
                            for x in local.min.x..local.max.x {
                                let l = IVec3::new(x, y, z);
                                let i = local_index(l);
                                let old = cells.map_or(Cell::EMPTY, |c| c.get(i));
                                let new = f(origin + l, old);
                                let new = Cell::new(new.material, new.occupancy);
                                if new != old {
                                    changes.push((i as u16, new));
                                    bounds = bounds.union(CellBox::new(l, l + 1));
                                }
                            }
                        }
                    }
                    if !changes.is_empty() {
                        pending.push((chunk, changes, bounds));
                    }
                }
            }
        }
        if pending.is_empty() {
            return EditReport::default();
        }
        // Phase 2: apply together.
        self.revision += 1;
        let rev = self.revision;
        let mut report = EditReport {
            revision: Some(rev),
            ..Default::default()
        };
        for (chunk, changes, bounds) in pending {
            report.cells_changed += changes.len() as u64;
            report.chunks_changed += 1;
            self.apply_chunk_changes(chunk, &changes, bounds, rev);
        }
        report
    }
}

const _: () = assert!(CHUNK_CELLS == 32);
