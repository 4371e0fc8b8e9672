//! The padded sample field a chunk is meshed from: solid occupancy and material per
//! sample, two samples of padding on every side, one sample per `2^level` cells.

use glam::IVec3;

use crate::cell::{chunk_of_cell, chunk_origin, local_index, Cell, CellBox, CHUNK_CELLS};
use crate::chunk::ChunkCells;
use crate::grid::CellSource;

/// Samples of padding on each side of the owned samples.
pub const PAD: usize = 2;
/// Number of render levels (32, 16, 8, 4 samples per chunk axis).
pub const LEVELS: u8 = 4;
/// Occupancy at or above which a sample counts as inside the solid (the 0.5 crossing
/// lies between 127 and 128; 128 is the high bit, which the mesher packs directly).
pub const INSIDE: u8 = 128;

/// Samples per chunk axis at `level`.
#[inline]
pub const fn samples_per_axis(level: u8) -> usize {
    (CHUNK_CELLS as usize) >> level
}

/// A padded field of `dim^3` samples (`dim = n + 4`), x fastest. Sample `(i, j, k)`
/// of the chunk lives at padded index `(i + 2, j + 2, k + 2)`.
#[derive(Clone, Debug, Default)]
pub struct SampleField {
    n: usize,
    dim: usize,
    pub(crate) solid: Vec<u8>,
    pub(crate) material: Vec<u8>,
    cells: Vec<Cell>,
    votes: Vec<(u8, u32)>,
}

impl SampleField {
    /// An empty field; its buffers grow to the first level built and are reused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Owned samples per axis.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Padded samples per axis.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Solid occupancy per padded sample (0 to 255), `dim^3` of them, x fastest.
    pub fn solid(&self) -> &[u8] {
        &self.solid
    }

    /// Material id per padded sample (0 where the sample holds no solid).
    pub fn material(&self) -> &[u8] {
        &self.material
    }

    fn reset(&mut self, n: usize) {
        assert!((1..=60).contains(&n), "samples per axis {n} outside 1..=60");
        self.n = n;
        self.dim = n + 2 * PAD;
        let len = self.dim * self.dim * self.dim;
        self.solid.resize(len, 0);
        self.material.resize(len, 0);
    }

    /// Fill from a function of padded sample coordinates (`0..dim`), returning
    /// solid occupancy and material. For tests and benchmarks.
    pub fn fill_with(&mut self, n: usize, mut f: impl FnMut(usize, usize, usize) -> (u8, u8)) {
        self.reset(n);
        let d = self.dim;
        for z in 0..d {
            for y in 0..d {
                for x in 0..d {
                    let (s, m) = f(x, y, z);
                    let i = x + d * (y + d * z);
                    self.solid[i] = s;
                    self.material[i] = if s > 0 { m } else { 0 };
                }
            }
        }
    }

    /// Sample `chunk` of `src` at `level`: full detail copies cells, coarser levels
    /// average solid occupancy over each `2^level` block and vote its material,
    /// exposed solid cells (a 6-neighbour below half full) counting 8 times.
    pub fn build(&mut self, src: &impl CellSource, chunk: IVec3, level: u8) {
        self.build_with(src, chunk, level, true);
    }

    /// [`SampleField::build`]; `uniform_blocks` takes a coarse sample whose block lies
    /// in a uniform (or unwritten) chunk straight from that chunk's one cell instead
    /// of averaging its cells (the same value: every cell of the block is that cell).
    /// Off only in the test that compares the two.
    fn build_with(&mut self, src: &impl CellSource, chunk: IVec3, level: u8, uniform_blocks: bool) {
        assert!(level < LEVELS, "level {level} out of range");
        let n = samples_per_axis(level);
        self.reset(n);
        let d = self.dim;
        let origin = chunk_origin(chunk);
        if level == 0 {
            let min = origin - PAD as i32;
            let mut cells = std::mem::take(&mut self.cells);
            gather(src, CellBox::new(min, min + d as i32), &mut cells);
            for (i, c) in cells.iter().enumerate() {
                let s = c.solid();
                self.solid[i] = s;
                self.material[i] = if s > 0 { c.material.0 } else { 0 };
            }
            self.cells = cells;
            return;
        }
        let s = 1usize << level;
        // One extra cell each side for the exposure test.
        let min = origin - (PAD * s) as i32 - 1;
        let cd = d * s + 2;
        let mut cells = std::mem::take(&mut self.cells);
        gather(src, CellBox::new(min, min + cd as i32), &mut cells);
        let mut votes = std::mem::take(&mut self.votes);
        let volume = (s * s * s) as u32;
        let cdd = cd * cd;
        // A block of `s` cells starts on a multiple of `s`, which divides the chunk
        // size, so it lies inside one chunk: one of the 3 x 3 x 3 around `chunk`
        // (the padding is under half a chunk). The uniform ones, by that index.
        let mut uniform = [None::<Cell>; 27];
        if uniform_blocks {
            for (i, u) in uniform.iter_mut().enumerate() {
                let n = chunk + IVec3::new(i as i32 % 3, i as i32 / 3 % 3, i as i32 / 9) - 1;
                *u = match src.chunk_cells(n) {
                    None => Some(Cell::EMPTY),
                    Some(c) => c.uniform(),
                };
            }
        }
        let block_chunk =
            |x: usize| ((x * s) as i32 - (PAD * s) as i32).div_euclid(CHUNK_CELLS) + 1;
        for z in 0..d {
            for y in 0..d {
                for x in 0..d {
                    let i = x + d * (y + d * z);
                    let k = block_chunk(x) + 3 * block_chunk(y) + 9 * block_chunk(z);
                    if let Some(cell) = uniform[k as usize] {
                        let v = cell.solid();
                        self.solid[i] = v;
                        self.material[i] = if v == 0 { 0 } else { cell.material.0 };
                        continue;
                    }
                    let base = (1 + x * s) + cd * (1 + y * s) + cdd * (1 + z * s);
                    let mut sum = 0u32;
                    let mut first = 0u8;
                    let mut mixed = false;
                    for bz in 0..s {
                        for by in 0..s {
                            let row = base + cd * by + cdd * bz;
                            for c in &cells[row..row + s] {
                                let v = c.solid();
                                if v > 0 {
                                    sum += v as u32;
                                    if first == 0 {
                                        first = c.material.0;
                                    } else if c.material.0 != first {
                                        mixed = true;
                                    }
                                }
                            }
                        }
                    }
                    let avg = ((sum + volume / 2) / volume) as u8;
                    self.solid[i] = avg;
                    self.material[i] = if avg == 0 {
                        0
                    } else if !mixed {
                        first
                    } else {
                        vote(&cells, base, s, cd, &mut votes)
                    };
                }
            }
        }
        self.votes = votes;
        self.cells = cells;
    }
}

/// Material vote over one block: weight = occupancy, times 8 when exposed.
fn vote(cells: &[Cell], base: usize, s: usize, cd: usize, votes: &mut Vec<(u8, u32)>) -> u8 {
    votes.clear();
    let cdd = cd * cd;
    for bz in 0..s {
        for by in 0..s {
            for bx in 0..s {
                let i = base + bx + cd * by + cdd * bz;
                let c = cells[i];
                let v = c.solid();
                if v == 0 {
                    continue;
                }
                let exposed = [i - 1, i + 1, i - cd, i + cd, i - cdd, i + cdd]
                    .iter()
                    .any(|&j| cells[j].solid() < INSIDE);
                let w = v as u32 * if exposed { 8 } else { 1 };
                match votes.iter_mut().find(|(m, _)| *m == c.material.0) {
                    Some(e) => e.1 += w,
                    None => votes.push((c.material.0, w)),
                }
            }
        }
    }
    votes
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |e| e.0)
}

/// Copy the cells of `region` (global cells) into `out`, x fastest, row by row
/// from each chunk the region overlaps; unwritten chunks read empty.
pub fn gather(src: &impl CellSource, region: CellBox, out: &mut Vec<Cell>) {
    let dims = region.max - region.min;
    let (dx, dy) = (dims.x as usize, dims.y as usize);
    out.clear();
    out.resize(region.volume() as usize, Cell::EMPTY);
    let lo = chunk_of_cell(region.min);
    let hi = chunk_of_cell(region.max - 1);
    for cz in lo.z..=hi.z {
        for cy in lo.y..=hi.y {
            for cx in lo.x..=hi.x {
                let chunk = IVec3::new(cx, cy, cz);
                let Some(cells) = src.chunk_cells(chunk) else {
                    continue;
                };
                let o = chunk_origin(chunk);
                let part = region.intersect(CellBox::new(o, o + CHUNK_CELLS));
                let run = (part.max.x - part.min.x) as usize;
                for z in part.min.z..part.max.z {
                    for y in part.min.y..part.max.y {
                        let dst = (part.min.x - region.min.x) as usize
                            + dx * ((y - region.min.y) as usize + dy * (z - region.min.z) as usize);
                        let dst = &mut out[dst..dst + run];
                        match cells {
                            ChunkCells::Uniform(c) => dst.fill(*c),
                            ChunkCells::Dense(d) => {
                                let s = local_index(IVec3::new(part.min.x, y, z));
                                dst.copy_from_slice(&d[s..s + run]);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// True when `chunk` at `level` cannot have a solid surface: every chunk its padded
/// field reads is uniform and all sit on the same side of the 0.5 crossing. O(1):
/// at most 27 map look-ups, no cell is read.
pub fn surface_impossible(src: &impl CellSource, chunk: IVec3, level: u8) -> bool {
    let read = crate::changes::read_box(chunk, level);
    let lo = chunk_of_cell(read.min);
    let hi = chunk_of_cell(read.max - 1);
    let mut side = None;
    for cz in lo.z..=hi.z {
        for cy in lo.y..=hi.y {
            for cx in lo.x..=hi.x {
                let inside = match src.chunk_cells(IVec3::new(cx, cy, cz)) {
                    None => false,
                    Some(c) => match c.uniform() {
                        Some(cell) => cell.solid() >= INSIDE,
                        None => return false,
                    },
                };
                if *side.get_or_insert(inside) != inside {
                    return false;
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Material;
    use crate::generate::{generate, TerrainGeneratorConfig};
    use crate::grid::VoxelGrid;
    use glam::Vec3;

    #[test]
    fn uniform_blocks_give_the_averaged_field() {
        // Hills with caves and a lake (dense, water), a solid uniform block, an air
        // uniform chunk and unwritten chunks around.
        let mut g = VoxelGrid::new();
        let params = TerrainGeneratorConfig {
            lake: Some((Vec3::new(150.0, 100.0, 150.0), 60.0)),
            ..Default::default()
        };
        generate(&mut g, &params, IVec3::new(0, 0, 0), IVec3::new(2, 1, 2));
        g.set_box(
            Vec3::new(0.0, -128.0, 0.0),
            Vec3::new(256.0, 0.0, 256.0),
            Cell::full(Material::ROCK),
        )
        .unwrap();
        g.set_box(
            Vec3::new(256.0, 0.0, 0.0),
            Vec3::new(384.0, 128.0, 128.0),
            Cell::EMPTY,
        )
        .unwrap();
        let (mut fast, mut plain) = (SampleField::new(), SampleField::new());
        let mut uniform_seen = 0;
        for level in 1..LEVELS {
            for z in -1..=3 {
                for y in -1..=2 {
                    for x in -1..=3 {
                        let c = IVec3::new(x, y, z);
                        fast.build_with(&g, c, level, true);
                        plain.build_with(&g, c, level, false);
                        assert_eq!(fast.solid, plain.solid, "chunk {c} level {level}");
                        assert_eq!(fast.material, plain.material, "chunk {c} level {level}");
                        uniform_seen +=
                            usize::from(g.chunk_cells(c).is_some_and(|ch| ch.uniform().is_some()));
                    }
                }
            }
        }
        assert!(uniform_seen > 3, "{uniform_seen}");
    }
}
