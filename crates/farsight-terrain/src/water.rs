//! Water sheets: always per cell, whatever the solid level. A top sheet for each
//! water cell open above at its fractional height, extended over neighbouring shore
//! cells so the solid surface cuts the outline, open vertical sides, and a wave-fade
//! value per vertex that falls to zero at the sheet's edge.

use bytemuck::{Pod, Zeroable};
use glam::IVec3;

use crate::cell::{chunk_of_cell, chunk_origin, Cell, CellBox, CELL_SIZE, CHUNK_CELLS};
use crate::field::{gather, INSIDE};
use crate::grid::CellSource;

/// One water vertex (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct WaterVertex {
    /// Position on the water's surface, world space.
    pub position: [f32; 3],
    /// Wave amplitude scale: 1 in open water, 0 on the sheet's outline.
    pub fade: f32,
}

/// A chunk's water geometry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaterMesh {
    /// The chunk's coordinate, in chunks.
    pub chunk: IVec3,
    /// The sheet's vertices.
    pub vertices: Vec<WaterVertex>,
    /// Triangles, three indices into `vertices` each.
    pub indices: Vec<u32>,
}

impl WaterMesh {
    /// True when the chunk has no water surface.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// True when no chunk the water mesher reads holds water (O(1) for uniform ones).
fn no_water(src: &impl CellSource, chunk: IVec3) -> bool {
    for z in -1..=1 {
        for y in -1..=1 {
            for x in -1..=1 {
                if let Some(c) = src.chunk_cells(chunk + IVec3::new(x, y, z)) {
                    match c.uniform() {
                        Some(cell) if cell.water() == 0 => {}
                        _ => return false,
                    }
                }
            }
        }
    }
    true
}

/// Mesh the water of `chunk` into `out`; `cells` is scratch.
pub fn mesh_water(src: &impl CellSource, chunk: IVec3, cells: &mut Vec<Cell>, out: &mut WaterMesh) {
    out.chunk = chunk;
    out.vertices.clear();
    out.indices.clear();
    if no_water(src, chunk) {
        return;
    }
    let o = chunk_origin(chunk);
    let region = CellBox::new(o - 1, o + CHUNK_CELLS + 1);
    gather(src, region, cells);
    let g = WaterCells {
        cells,
        d: (CHUNK_CELLS + 2) as usize,
        base: o.as_vec3() * CELL_SIZE,
    };
    for z in 0..CHUNK_CELLS {
        for y in 0..CHUNK_CELLS {
            for x in 0..CHUNK_CELLS {
                let c = g.at(x, y, z);
                if c.is_empty() && c.water() == 0 {
                    continue;
                }
                if let Some(h) = g.sheet_height(x, y, z) {
                    g.push_sheet(out, x, y, z, h);
                }
                if c.water() != 0 {
                    g.push_sides(out, x, y, z, c.water());
                }
            }
        }
    }
    debug_assert!(chunk_of_cell(o) == chunk);
}

/// A chunk's cells with a one-cell border, as [`mesh_water`] reads them (cell
/// coordinates are the chunk's, -1 to [`CHUNK_CELLS`]), and the chunk's origin in
/// metres.
struct WaterCells<'a> {
    cells: &'a [Cell],
    /// Cells along each axis (the chunk's and its border).
    d: usize,
    base: glam::Vec3,
}

impl WaterCells<'_> {
    /// The cell at (x, y, z).
    #[inline]
    fn at(&self, x: i32, y: i32, z: i32) -> Cell {
        let d = self.d;
        self.cells[(x + 1) as usize + d * ((y + 1) as usize + d * (z + 1) as usize)]
    }

    /// Nothing above (x, y, z): no water and not solid.
    #[inline]
    fn open_above(&self, x: i32, y: i32, z: i32) -> bool {
        let a = self.at(x, y + 1, z);
        a.water() == 0 && a.solid() < INSIDE
    }

    /// The water top of (x, y, z), as a fraction of the cell: a water cell with
    /// nothing above it.
    #[inline]
    fn top(&self, x: i32, y: i32, z: i32) -> Option<f32> {
        let c = self.at(x, y, z);
        (c.water() > 0 && self.open_above(x, y, z)).then(|| c.water() as f32 / 255.0)
    }

    /// Wave fade of the sheet corner at cell corner (x, z): the share of the four
    /// cells around it that are water tops. One value per position, so a sheet's
    /// edge and the open side below it move together.
    #[inline]
    fn corner_fade(&self, x: i32, y: i32, z: i32) -> f32 {
        let mut n = 0;
        for (ax, az) in [(-1, -1), (0, -1), (-1, 0), (0, 0)] {
            n += self.top(x + ax, y, z + az).is_some() as u32;
        }
        n as f32 / 4.0
    }

    /// Sheet height: own water, or the highest neighbouring water top for a shore
    /// cell (dry, open above).
    fn sheet_height(&self, x: i32, y: i32, z: i32) -> Option<f32> {
        if let Some(h) = self.top(x, y, z) {
            return Some(h);
        }
        if self.at(x, y, z).water() != 0 || !self.open_above(x, y, z) {
            return None;
        }
        let mut best: Option<f32> = None;
        for (dx, dz) in [
            (-1, -1),
            (0, -1),
            (1, -1),
            (-1, 0),
            (1, 0),
            (-1, 1),
            (0, 1),
            (1, 1),
        ] {
            if let Some(h) = self.top(x + dx, y, z + dz) {
                best = Some(best.map_or(h, |b| b.max(h)));
            }
        }
        best
    }

    /// The sheet quad of cell (x, y, z) at height `h` (a fraction of the cell).
    fn push_sheet(&self, out: &mut WaterMesh, x: i32, y: i32, z: i32, h: f32) {
        let base = self.base;
        let py = base.y + (y as f32 + h) * CELL_SIZE;
        let first = out.vertices.len() as u32;
        for (cx, cz) in [(0, 0), (0, 1), (1, 1), (1, 0)] {
            out.vertices.push(WaterVertex {
                position: [
                    base.x + (x + cx) as f32 * CELL_SIZE,
                    py,
                    base.z + (z + cz) as f32 * CELL_SIZE,
                ],
                fade: self.corner_fade(x + cx, y, z + cz),
            });
        }
        // (0,0) -> (0,1) -> (1,1) -> (1,0): counter-clockwise seen from +y.
        push_quad(out, first);
    }

    /// Open vertical sides of water cell (x, y, z) holding `w`: faces towards empty
    /// cells, wound to face out.
    fn push_sides(&self, out: &mut WaterMesh, x: i32, y: i32, z: i32, w: u8) {
        let base = self.base;
        let sheet_above = self.open_above(x, y, z);
        let h = if sheet_above { w as f32 / 255.0 } else { 1.0 };
        let (y0, y1) = (
            base.y + y as f32 * CELL_SIZE,
            base.y + (y as f32 + h) * CELL_SIZE,
        );
        for (dx, dz) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
            if !self.at(x + dx, y, z + dz).is_empty() {
                continue;
            }
            // The face's two horizontal corners (cell corners), ordered so
            // the quad faces out: a -> b runs with the water on the left
            // seen from outside, (a, y0) -> (b, y0) -> (b, y1) is then
            // counter-clockwise from the empty cell.
            let (fx, fz) = (2 * x + 1 + dx, 2 * z + 1 + dz); // doubled
            let (tx, tz) = (dz, -dx);
            let a = ((fx - tx) / 2, (fz - tz) / 2);
            let b = ((fx + tx) / 2, (fz + tz) / 2);
            let first = out.vertices.len() as u32;
            for ((cx, cz), py, upper) in
                [(a, y0, false), (b, y0, false), (b, y1, true), (a, y1, true)]
            {
                out.vertices.push(WaterVertex {
                    position: [
                        base.x + cx as f32 * CELL_SIZE,
                        py,
                        base.z + cz as f32 * CELL_SIZE,
                    ],
                    // The top edge meets the sheet's edge: the same fade.
                    fade: if upper && sheet_above {
                        self.corner_fade(cx, y, cz)
                    } else {
                        0.0
                    },
                });
            }
            push_quad(out, first);
        }
    }
}

/// The two triangles of the quad whose four corners start at vertex `first`.
#[inline]
fn push_quad(out: &mut WaterMesh, first: u32) {
    out.indices
        .extend_from_slice(&[first, first + 1, first + 2, first, first + 2, first + 3]);
}
