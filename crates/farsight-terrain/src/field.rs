//! The padded sample field a chunk is meshed from: solid occupancy and material per
//! sample, two samples of padding on every side, one sample per `2^level` cells.

use glam::IVec3;

use crate::cell::{
    chunk_of_cell, chunk_origin, local_index, Cell, CellBox, CHUNK_CELLS, CHUNK_VOLUME,
};
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
    /// of averaging its cells (the same value: every cell of the block is that cell),
    /// and at the coarsest level a dense chunk's block from the source's
    /// [`CoarseBlocks`] when it keeps them. Off only in the tests that compare the two.
    fn build_with(&mut self, src: &impl CellSource, chunk: IVec3, level: u8, uniform_blocks: bool) {
        assert!(level < LEVELS, "level {level} out of range");
        let n = samples_per_axis(level);
        self.reset(n);
        let d = self.dim;
        let origin = chunk_origin(chunk);
        if uniform_blocks && level == LEVELS - 1 && self.build_from_blocks(src, chunk) {
            return;
        }
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
                    let (sum, first, mixed) = block_sum(&cells, base, s, cd);
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

impl SampleField {
    /// The coarsest level's field from the 27 chunks around `chunk`: a uniform one's
    /// cell, a dense one's [`CoarseBlocks`] (its open votes settled here with the
    /// neighbour's face cells). False, having written nothing, when the source keeps
    /// no blocks for a dense chunk the field reads.
    fn build_from_blocks(&mut self, src: &impl CellSource, chunk: IVec3) -> bool {
        enum Part<'a> {
            Cell(Cell),
            Blocks(IVec3, &'a CoarseBlocks),
        }
        let mut parts: [Part<'_>; 27] = std::array::from_fn(|_| Part::Cell(Cell::EMPTY));
        for (i, p) in parts.iter_mut().enumerate() {
            let c = chunk + IVec3::new(i as i32 % 3, i as i32 / 3 % 3, i as i32 / 9) - 1;
            *p = match src.chunk_cells(c) {
                None => Part::Cell(Cell::EMPTY),
                Some(cells) => match cells.uniform() {
                    Some(cell) => Part::Cell(cell),
                    None => match src.coarse_blocks(c) {
                        Some(b) => Part::Blocks(c, b),
                        None => return false,
                    },
                },
            };
        }
        let d = self.dim;
        let s = COARSE_SIDE as i32;
        let mut votes = std::mem::take(&mut self.votes);
        // Sample `x` starts at cell `(x - PAD) * s` of the chunk: in chunk `q` (-1, 0
        // or 1 from it), block `b` of that chunk.
        let at = |x: usize| {
            let cell = (x as i32 - PAD as i32) * s;
            let q = cell.div_euclid(CHUNK_CELLS);
            (
                (q + 1) as usize,
                (cell.rem_euclid(CHUNK_CELLS) / s) as usize,
            )
        };
        for z in 0..d {
            let (qz, bz) = at(z);
            for y in 0..d {
                let (qy, by) = at(y);
                for x in 0..d {
                    let (qx, bx) = at(x);
                    let i = x + d * (y + d * z);
                    let (v, m) = match &parts[qx + 3 * qy + 9 * qz] {
                        Part::Cell(cell) => (cell.solid(), cell.material.0),
                        Part::Blocks(c, b) => {
                            let k = bx + COARSE_BLOCKS * (by + COARSE_BLOCKS * bz);
                            (b.solid[k], b.material(src, *c, k, &mut votes))
                        }
                    };
                    self.solid[i] = v;
                    self.material[i] = if v == 0 { 0 } else { m };
                }
            }
        }
        self.votes = votes;
        true
    }
}

/// Cells per block side at the coarsest level.
const COARSE_SIDE: usize = 1 << (LEVELS - 1);
/// Blocks per chunk axis at the coarsest level.
const COARSE_BLOCKS: usize = CHUNK_CELLS as usize / COARSE_SIDE;

/// A dense chunk's samples at the coarsest level, from its own cells: each
/// `8^3` block's averaged solid occupancy and voted material, as
/// [`SampleField::build`] makes them. A block's vote can depend on cells of a
/// neighbouring chunk (an exposure test reads each cell's six neighbours); where it
/// does and the cells inside cannot settle it, the block keeps the weights it knows
/// and its face cells whose exposure the neighbour decides, and the field settles
/// it when built. A base mesh then reads 512 samples instead of gathering `66^3`
/// cells (issue 27 item 21), and its bytes are the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoarseBlocks {
    solid: [u8; COARSE_BLOCKS * COARSE_BLOCKS * COARSE_BLOCKS],
    material: [u8; COARSE_BLOCKS * COARSE_BLOCKS * COARSE_BLOCKS],
    /// Blocks whose vote the neighbouring chunks settle, by block index.
    open: Vec<OpenVote>,
}

/// A block vote that depends on a neighbouring chunk's cells.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OpenVote {
    block: u8,
    /// Weight per material of the cells whose exposure the chunk decides.
    votes: Vec<(u8, u32)>,
    /// Face cells (chunk-local index, material, solid occupancy) whose in-chunk
    /// neighbours are all inside the solid: exposed when a neighbour across the
    /// face is not.
    cells: Vec<(u16, u8, u8)>,
}

impl CoarseBlocks {
    /// Bytes these blocks hold, the box they live in included (a grid's
    /// [`crate::VoxelGrid::heap_bytes`] counts them beside the cells).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.open.capacity() * std::mem::size_of::<OpenVote>()
            + self
                .open
                .iter()
                .map(|o| {
                    o.votes.capacity() * std::mem::size_of::<(u8, u32)>()
                        + o.cells.capacity() * std::mem::size_of::<(u16, u8, u8)>()
                })
                .sum::<usize>()
    }

    /// The blocks of a dense chunk's cells (`CHUNK_VOLUME` of them, x fastest).
    pub fn of(cells: &[Cell]) -> Self {
        assert_eq!(cells.len(), CHUNK_VOLUME, "a chunk's cells");
        let n = CHUNK_CELLS as usize;
        let (s, nb) = (COARSE_SIDE, COARSE_BLOCKS);
        let volume = (s * s * s) as u32;
        let mut out = CoarseBlocks {
            solid: [0; COARSE_BLOCKS * COARSE_BLOCKS * COARSE_BLOCKS],
            material: [0; COARSE_BLOCKS * COARSE_BLOCKS * COARSE_BLOCKS],
            open: Vec::new(),
        };
        let mut lo: Vec<(u8, u32, u32)> = Vec::new();
        for k in 0..nb * nb * nb {
            let b = [k % nb, k / nb % nb, k / (nb * nb)].map(|x| x * s);
            let (sum, first, mixed) = block_sum(cells, b[0] + n * (b[1] + n * b[2]), s, n);
            let avg = ((sum + volume / 2) / volume) as u8;
            out.solid[k] = avg;
            if avg == 0 || !mixed {
                out.material[k] = if avg == 0 { 0 } else { first };
                continue;
            }
            // The vote: (material, weight of known exposure, occupancy left open).
            lo.clear();
            let mut open = OpenVote {
                block: k as u8,
                votes: Vec::new(),
                cells: Vec::new(),
            };
            for z in b[2]..b[2] + s {
                for y in b[1]..b[1] + s {
                    for x in b[0]..b[0] + s {
                        let i = x + n * (y + n * z);
                        let c = cells[i];
                        let v = c.solid();
                        if v == 0 {
                            continue;
                        }
                        let p = [x, y, z];
                        let mut exposed = false;
                        let mut face = false;
                        for (axis, step) in [1, n, n * n].into_iter().enumerate() {
                            for (edge, j) in [(0, i.wrapping_sub(step)), (n - 1, i + step)] {
                                if p[axis] == edge {
                                    face = true;
                                } else if cells[j].solid() < INSIDE {
                                    exposed = true;
                                }
                            }
                        }
                        let m = c.material.0;
                        let e = match lo.iter_mut().position(|e| e.0 == m) {
                            Some(e) => e,
                            None => {
                                lo.push((m, 0, 0));
                                lo.len() - 1
                            }
                        };
                        if exposed || !face {
                            lo[e].1 += v as u32 * if exposed { 8 } else { 1 };
                        } else {
                            lo[e].2 += v as u32;
                            open.cells.push((i as u16, m, v));
                        }
                    }
                }
            }
            // Settled when one material wins however the open cells turn out: its
            // least weight beats every other's most (ties to the lower id).
            let least = |e: &(u8, u32, u32)| e.1 + e.2;
            let most = |e: &(u8, u32, u32)| e.1 + 8 * e.2;
            let winner = lo.iter().find(|w| {
                lo.iter()
                    .all(|o| o.0 == w.0 || least(w) > most(o) || (least(w) == most(o) && w.0 < o.0))
            });
            match winner {
                Some(w) => out.material[k] = w.0,
                None => {
                    open.votes = lo.iter().filter(|e| e.1 > 0).map(|e| (e.0, e.1)).collect();
                    out.open.push(open);
                }
            }
        }
        out
    }

    /// Blocks whose vote waits for the neighbouring chunks (for tests).
    #[doc(hidden)]
    pub fn open_blocks(&self) -> usize {
        self.open.len()
    }

    /// Block `k`'s material, settling an open vote with the cells of the chunks
    /// around `chunk` (this one's coordinate) in `src`.
    fn material(
        &self,
        src: &impl CellSource,
        chunk: IVec3,
        k: usize,
        votes: &mut Vec<(u8, u32)>,
    ) -> u8 {
        let Ok(at) = self.open.binary_search_by_key(&(k as u8), |o| o.block) else {
            return self.material[k];
        };
        let open = &self.open[at];
        votes.clear();
        votes.extend_from_slice(&open.votes);
        let n = CHUNK_CELLS;
        // The six chunks across this one's faces, looked up once per block.
        let around: [Option<&ChunkCells>; 6] = std::array::from_fn(|f| {
            let mut c = chunk;
            c[f / 2] += if f % 2 == 0 { -1 } else { 1 };
            src.chunk_cells(c)
        });
        for &(i, m, v) in &open.cells {
            let i = i as i32;
            let p = IVec3::new(i % n, i / n % n, i / (n * n));
            let mut exposed = false;
            for axis in 0..3 {
                for (side, (edge, step)) in [(0, -1), (n - 1, 1)].into_iter().enumerate() {
                    if p[axis] == edge && !exposed {
                        let mut q = p;
                        q[axis] += step;
                        let cell =
                            around[2 * axis + side].map_or(Cell::EMPTY, |c| c.get(local_index(q)));
                        exposed = cell.solid() < INSIDE;
                    }
                }
            }
            let w = v as u32 * if exposed { 8 } else { 1 };
            match votes.iter_mut().find(|(x, _)| *x == m) {
                Some(e) => e.1 += w,
                None => votes.push((m, w)),
            }
        }
        votes
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map_or(0, |e| e.0)
    }
}

/// Solid occupancy summed over the `s^3` block of `cells` (rows `side` cells long)
/// starting at `base`, the first solid cell's material and whether another solid
/// material follows it.
#[inline]
fn block_sum(cells: &[Cell], base: usize, s: usize, side: usize) -> (u32, u8, bool) {
    let mut sum = 0u32;
    let mut first = 0u8;
    let mut mixed = false;
    for bz in 0..s {
        for by in 0..s {
            let row = base + side * (by + side * bz);
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
    (sum, first, mixed)
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

    /// Hills (grass over dirt over rock), a lake, and balls and slabs of other
    /// materials across chunk faces, edges and corners, half of them carved.
    fn patchwork() -> VoxelGrid {
        let mut g = VoxelGrid::new();
        let params = TerrainGeneratorConfig {
            lake: Some((Vec3::new(200.0, 100.0, 200.0), 50.0)),
            ..Default::default()
        };
        generate(&mut g, &params, IVec3::new(0, 0, 0), IVec3::new(2, 1, 2));
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut unit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let materials = [
            Material::ROCK,
            Material::DIRT,
            Material::GRASS,
            Material(5),
            Material::AIR,
        ];
        for i in 0..60 {
            // Near a chunk face on every axis: a multiple of 128 plus or minus a few cells.
            let near = |u: f32, v: f32| (1.0 + (u * 2.0).floor()) * 128.0 + (v - 0.5) * 40.0;
            let p = Vec3::new(
                near(unit(), unit()),
                60.0 + unit() * 100.0,
                near(unit(), unit()),
            );
            let m = materials[i % materials.len()];
            if i % 3 == 0 {
                g.set_box(p, p + Vec3::new(30.0, 6.0, 30.0), Cell::full(m))
                    .unwrap();
            } else {
                g.set_sphere(p, 4.0 + unit() * 14.0, m).unwrap();
            }
        }
        g
    }

    /// Builds every chunk around the patchwork at the coarsest level from the
    /// grid's blocks and by averaging its cells; returns the open blocks seen.
    fn compare_coarsest(g: &VoxelGrid) -> usize {
        let (mut fast, mut plain) = (SampleField::new(), SampleField::new());
        let level = LEVELS - 1;
        let mut open = 0;
        for z in -1..=3 {
            for y in -1..=2 {
                for x in -1..=3 {
                    let c = IVec3::new(x, y, z);
                    fast.build_with(g, c, level, true);
                    plain.build_with(g, c, level, false);
                    assert_eq!(fast.solid, plain.solid, "chunk {c}");
                    assert_eq!(fast.material, plain.material, "chunk {c}");
                    open += g.coarse_blocks(c).map_or(0, |b| b.open_blocks());
                }
            }
        }
        open
    }

    #[test]
    fn coarse_blocks_give_the_averaged_field_and_follow_edits() {
        let mut g = patchwork();
        let open = compare_coarsest(&g);
        assert!(
            open > 0,
            "no vote waited for a neighbour: the test would not see one"
        );
        let kept = |g: &VoxelGrid| g.entry(IVec3::new(1, 0, 1)).unwrap().coarse.get().is_some();
        assert!(kept(&g));
        // Writes drop the chunk's blocks (and only they change): the field follows
        // edits inside a chunk and across its faces.
        for (i, p) in [
            (128.0, 120.0, 128.0),
            (250.0, 100.0, 140.0),
            (130.0, 128.0, 255.0),
        ]
        .into_iter()
        .enumerate()
        {
            let m = if i % 2 == 0 {
                Material::AIR
            } else {
                Material(6)
            };
            g.set_sphere(Vec3::new(p.0, p.1, p.2), 9.0, m).unwrap();
            if i == 0 {
                assert!(!kept(&g), "a write drops the chunk's blocks");
            }
            compare_coarsest(&g);
        }
    }
}
