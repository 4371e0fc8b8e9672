//! Cells, materials, world/cell/chunk coordinates and the chunk-map hasher.

use std::hash::{BuildHasherDefault, Hasher};

use bytemuck::{Pod, Zeroable};
use glam::{IVec3, Vec3};

/// World units spanned by one cell on each axis (docs/design/voxel-terrain.md#cells-and-chunks).
pub const CELL_SIZE: f32 = 4.0;
/// Cells per chunk axis.
pub const CHUNK_CELLS: i32 = 32;
/// log2 of [`CHUNK_CELLS`].
pub const CHUNK_SHIFT: u32 = 5;
/// Cells in one chunk.
pub const CHUNK_VOLUME: usize = 32 * 32 * 32;
/// World units spanned by one chunk on each axis (128).
pub const CHUNK_SIZE: f32 = CELL_SIZE * CHUNK_CELLS as f32;

/// A terrain material id. 0 is air, 1 is water; every other id is a solid material
/// whose meaning (colour, texture) belongs to the renderer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Pod, Zeroable)]
#[repr(transparent)]
pub struct Material(pub u8);

impl Material {
    /// Empty space; a cell of air is always [`Cell::EMPTY`].
    pub const AIR: Material = Material(0);
    /// Water: meshed as water sheets, not as solid surface, and not collided with.
    pub const WATER: Material = Material(1);
    /// The generator's top layer (the upper 6 world units) below the snow line.
    pub const GRASS: Material = Material(2);
    /// The generator's material more than 20 world units below the surface.
    pub const ROCK: Material = Material(3);
    /// The generator's layer 6 to 20 world units below the surface.
    pub const DIRT: Material = Material(4);
    /// A solid material for editing; the generator does not place it.
    pub const SAND: Material = Material(5);
    /// The generator's top layer where the ground rises above three quarters of
    /// the hill height.
    pub const SNOW: Material = Material(6);
    /// A solid material for editing; the generator does not place it.
    pub const MUD: Material = Material(7);

    /// True for every id but air and water.
    #[inline]
    pub const fn is_solid(self) -> bool {
        self.0 > 1
    }
}

/// One cell: a material and an 8-bit occupancy (`fraction = occupancy / 255`).
/// Zero occupancy or air canonicalises to [`Cell::EMPTY`]. The solid and water
/// fractions are both read from this one record: a water cell has a water fraction
/// and no solid, any other non-empty cell a solid fraction and no water.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
#[repr(C)]
pub struct Cell {
    /// What the cell is made of; air only with zero occupancy.
    pub material: Material,
    /// How full the cell is, 0 (empty) to 255 (full).
    pub occupancy: u8,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 2);

impl Cell {
    /// The one empty value: air, zero occupancy.
    pub const EMPTY: Cell = Cell {
        material: Material::AIR,
        occupancy: 0,
    };

    /// A canonical cell: zero occupancy or air gives [`Cell::EMPTY`].
    #[inline]
    pub const fn new(material: Material, occupancy: u8) -> Cell {
        if occupancy == 0 || material.0 == 0 {
            Cell::EMPTY
        } else {
            Cell {
                material,
                occupancy,
            }
        }
    }

    /// A fully occupied cell of `material`.
    #[inline]
    pub const fn full(material: Material) -> Cell {
        Cell::new(material, 255)
    }

    /// True for a cell with nothing in it (air).
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.occupancy == 0
    }

    /// Solid occupancy, 0..=255 (0 for water and air).
    #[inline]
    pub const fn solid(self) -> u8 {
        if self.material.is_solid() {
            self.occupancy
        } else {
            0
        }
    }

    /// Water occupancy, 0..=255 (0 unless the material is water).
    #[inline]
    pub const fn water(self) -> u8 {
        if self.material.0 == Material::WATER.0 {
            self.occupancy
        } else {
            0
        }
    }

    /// Solid occupancy as a fraction in `[0, 1]`.
    #[inline]
    pub fn solid_fraction(self) -> f32 {
        self.solid() as f32 / 255.0
    }

    /// Water occupancy as a fraction in `[0, 1]`.
    #[inline]
    pub fn water_fraction(self) -> f32 {
        self.water() as f32 / 255.0
    }

    /// True when the canonical form holds (what a validator checks on stored cells).
    #[inline]
    pub const fn is_canonical(self) -> bool {
        (self.occupancy == 0) == (self.material.0 == 0)
    }
}

/// The chunk holding global cell `c`.
#[inline]
pub fn chunk_of_cell(c: IVec3) -> IVec3 {
    IVec3::new(c.x >> CHUNK_SHIFT, c.y >> CHUNK_SHIFT, c.z >> CHUNK_SHIFT)
}

/// Index of global cell `c` inside its chunk (x fastest, then y, then z).
#[inline]
pub fn local_index(c: IVec3) -> usize {
    let m = CHUNK_CELLS - 1;
    ((c.x & m) | ((c.y & m) << 5) | ((c.z & m) << 10)) as usize
}

/// First global cell of chunk `chunk`.
#[inline]
pub fn chunk_origin(chunk: IVec3) -> IVec3 {
    chunk * CHUNK_CELLS
}

/// World-space box of chunk `chunk`.
pub fn chunk_bounds(chunk: IVec3) -> farsight_geom::Aabb {
    let min = chunk.as_vec3() * CHUNK_SIZE;
    farsight_geom::Aabb::new(min, min + Vec3::splat(CHUNK_SIZE))
}

/// The cell holding world point `p` (no range check: callers validate first).
#[inline]
pub fn cell_at(p: Vec3) -> IVec3 {
    (p / CELL_SIZE).floor().as_ivec3()
}

/// A box of global cells, `min` inclusive, `max` exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CellBox {
    /// The first cell inside the box on each axis.
    pub min: IVec3,
    /// The first cell past the box on each axis; `max <= min` on an axis is empty.
    pub max: IVec3,
}

impl CellBox {
    /// A box from its corners, taken as given (no reordering).
    #[inline]
    pub const fn new(min: IVec3, max: IVec3) -> Self {
        Self { min, max }
    }

    /// True when the box holds no cell.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.min.cmpge(self.max).any()
    }

    /// The smallest box holding both; an empty box adds nothing.
    #[inline]
    pub fn union(self, o: CellBox) -> CellBox {
        if self.is_empty() {
            return o;
        }
        if o.is_empty() {
            return self;
        }
        CellBox::new(self.min.min(o.min), self.max.max(o.max))
    }

    /// The cells in both boxes (possibly an empty box).
    #[inline]
    pub fn intersect(self, o: CellBox) -> CellBox {
        CellBox::new(self.min.max(o.min), self.max.min(o.max))
    }

    /// True when the boxes share at least one cell (touching faces do not count).
    #[inline]
    pub fn intersects(&self, o: &CellBox) -> bool {
        !self.intersect(*o).is_empty()
    }

    /// The box grown by `pad` cells on every side (shrunk for a negative `pad`).
    #[inline]
    pub fn padded(self, pad: i32) -> CellBox {
        CellBox::new(self.min - IVec3::splat(pad), self.max + IVec3::splat(pad))
    }

    /// The box moved by `by` cells.
    #[inline]
    pub fn translated(self, by: IVec3) -> CellBox {
        CellBox::new(self.min + by, self.max + by)
    }

    /// Cell count (0 when empty).
    pub fn volume(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            let d = (self.max - self.min).as_i64vec3();
            (d.x * d.y * d.z) as u64
        }
    }

    /// The cells of one whole chunk, in chunk-local coordinates.
    pub const CHUNK_LOCAL: CellBox = CellBox {
        min: IVec3::ZERO,
        max: IVec3::splat(CHUNK_CELLS),
    };
}

/// FxHash-style hasher for chunk coordinates: three multiplies, no SipHash.
#[derive(Default, Clone, Copy)]
pub struct ChunkHasher(u64);

impl Hasher for ChunkHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(b as u32);
        }
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The hasher every chunk map uses.
pub type ChunkBuildHasher = BuildHasherDefault<ChunkHasher>;
/// A map keyed by chunk coordinate.
pub type ChunkMap<V> = std::collections::HashMap<IVec3, V, ChunkBuildHasher>;
/// A set of chunk coordinates.
pub type ChunkSet = std::collections::HashSet<IVec3, ChunkBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_empty_and_fractions() {
        assert_eq!(Cell::new(Material::ROCK, 0), Cell::EMPTY);
        assert_eq!(Cell::new(Material::AIR, 200), Cell::EMPTY);
        let w = Cell::new(Material::WATER, 51);
        assert_eq!((w.solid(), w.water()), (0, 51));
        assert!((w.water_fraction() - 0.2).abs() < 1e-6);
        let r = Cell::full(Material::ROCK);
        assert_eq!((r.solid(), r.water()), (255, 0));
    }

    #[test]
    fn coordinates_round_trip_negative_cells() {
        for c in [IVec3::new(-1, -33, 70), IVec3::new(31, 32, -32)] {
            let ch = chunk_of_cell(c);
            let l = c - chunk_origin(ch);
            assert!(l.cmpge(IVec3::ZERO).all() && l.cmplt(IVec3::splat(32)).all());
            assert_eq!(local_index(c), (l.x + 32 * l.y + 1024 * l.z) as usize);
        }
    }
}
