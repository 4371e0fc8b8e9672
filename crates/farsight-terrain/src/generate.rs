//! A deterministic demo terrain: value-noise hills, noise caves and a lake. Used by
//! the `farsight terrain` command, tests and benchmarks.

use glam::{IVec3, Vec3};

use crate::cell::{chunk_origin, Cell, CellBox, Material, CELL_SIZE, CHUNK_CELLS};
use crate::grid::VoxelGrid;

#[inline]
fn hash(x: i32, y: i32, z: i32, seed: u32) -> f32 {
    let mut h = (x as u32).wrapping_mul(0x8da6_b343)
        ^ (y as u32).wrapping_mul(0xd816_3841)
        ^ (z as u32).wrapping_mul(0xcb1a_b31f)
        ^ seed.wrapping_mul(0x9e37_79b9);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    h = h.wrapping_mul(0x297a_2d39);
    h ^= h >> 15;
    (h & 0xff_ffff) as f32 / 0xff_ffff as f32
}

#[inline]
fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

/// Trilinear value noise in `[0, 1]`, one lattice point per unit.
pub fn value_noise(p: Vec3, seed: u32) -> f32 {
    let f = p.floor();
    let i = f.as_ivec3();
    let t = p - f;
    let (u, v, w) = (smooth(t.x), smooth(t.y), smooth(t.z));
    let c = |dx, dy, dz| hash(i.x + dx, i.y + dy, i.z + dz, seed);
    let x00 = c(0, 0, 0) + (c(1, 0, 0) - c(0, 0, 0)) * u;
    let x10 = c(0, 1, 0) + (c(1, 1, 0) - c(0, 1, 0)) * u;
    let x01 = c(0, 0, 1) + (c(1, 0, 1) - c(0, 0, 1)) * u;
    let x11 = c(0, 1, 1) + (c(1, 1, 1) - c(0, 1, 1)) * u;
    let y0 = x00 + (x10 - x00) * v;
    let y1 = x01 + (x11 - x01) * v;
    y0 + (y1 - y0) * w
}

/// Parameters of [`generate`]. Heights are world units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TerrainGeneratorConfig {
    /// Seed of the noise: the same seed gives the same terrain, cell for cell.
    pub seed: u32,
    /// Height of the lowest ground (before the lake's bowl), world units.
    pub base_height: f32,
    /// How far hills rise above `base_height` at most (a little less in practice),
    /// world units.
    pub hill_height: f32,
    /// Horizontal size of the largest hills.
    pub hill_scale: f32,
    /// Carve noise caves more than 12 units below the surface.
    pub caves: bool,
    /// Water fills air below this height inside the lake circle.
    pub lake: Option<(Vec3, f32)>,
}

impl Default for TerrainGeneratorConfig {
    fn default() -> Self {
        Self {
            seed: 7,
            base_height: 100.0,
            hill_height: 90.0,
            hill_scale: 400.0,
            caves: true,
            lake: None,
        }
    }
}

impl TerrainGeneratorConfig {
    /// Terrain height at world `(x, z)`.
    pub fn height(&self, x: f32, z: f32) -> f32 {
        let mut h = 0.0;
        let mut amp = 1.0;
        let mut freq = 1.0 / self.hill_scale;
        for o in 0..4 {
            h += amp * value_noise(Vec3::new(x * freq, 0.5 + o as f32, z * freq), self.seed);
            amp *= 0.45;
            freq *= 2.1;
        }
        let mut height = self.base_height + self.hill_height * (h / 1.8);
        if let Some((c, r)) = self.lake {
            let d = Vec3::new(x - c.x, 0.0, z - c.z).length();
            if d < r * 1.5 {
                // A bowl below the water level.
                let t = (d / (r * 1.5)).min(1.0);
                let bowl = c.y - 12.0 + 24.0 * t * t;
                height = height.min(bowl.max(c.y - 12.0));
            }
        }
        height
    }

    /// The cell at global cell `c`.
    pub fn cell(&self, c: IVec3) -> Cell {
        let p = (c.as_vec3() + 0.5) * CELL_SIZE;
        let h = self.height(p.x, p.z);
        let mut solid = ((0.5 + (h - p.y) / CELL_SIZE).clamp(0.0, 1.0) * 255.0).round() as u8;
        if self.caves && solid > 0 && p.y < h - 12.0 {
            let n = value_noise(p / 48.0 + Vec3::splat(17.0), self.seed ^ 0x5eed);
            let carve = ((n - 0.62) * 12.0).clamp(0.0, 1.0);
            solid = (solid as f32 * (1.0 - carve)).round() as u8;
        }
        if solid > 0 {
            let material = if p.y > h - 6.0 {
                if h > self.base_height + self.hill_height * 0.75 {
                    Material::SNOW
                } else {
                    Material::GRASS
                }
            } else if p.y > h - 20.0 {
                Material::DIRT
            } else {
                Material::ROCK
            };
            return Cell::new(material, solid);
        }
        if let Some((c, r)) = self.lake {
            let d = Vec3::new(p.x - c.x, 0.0, p.z - c.z).length();
            if d < r * 1.5 && p.y < c.y {
                let w = ((c.y - (p.y - CELL_SIZE * 0.5)) / CELL_SIZE).clamp(0.0, 1.0);
                return Cell::new(Material::WATER, (w * 255.0).round() as u8);
            }
        }
        Cell::EMPTY
    }
}

/// Write the terrain into the chunks `min..=max` of `grid` (one revision per chunk).
pub fn generate(grid: &mut VoxelGrid, params: &TerrainGeneratorConfig, min: IVec3, max: IVec3) {
    for z in min.z..=max.z {
        for y in min.y..=max.y {
            for x in min.x..=max.x {
                generate_chunk(grid, params, IVec3::new(x, y, z));
            }
        }
    }
}

/// Write one chunk of the terrain.
pub fn generate_chunk(grid: &mut VoxelGrid, params: &TerrainGeneratorConfig, chunk: IVec3) {
    let o = chunk_origin(chunk);
    grid.edit_region(CellBox::new(o, o + CHUNK_CELLS), |c, _| params.cell(c));
}

/// The chunks the terrain benchmarks and the `collider_speed` example measure: the
/// densest chunk of the demo terrain (hills and caves), flat ground (reduced to fans)
/// and a crater in flat ground, each with its grid and chunk coordinate.
pub fn reference_chunks() -> Vec<(&'static str, VoxelGrid, IVec3)> {
    let mut hills = VoxelGrid::new();
    generate(
        &mut hills,
        &TerrainGeneratorConfig::default(),
        IVec3::ZERO,
        IVec3::splat(2),
    );
    let mut mesher = crate::mesh::ChunkMesher::new();
    let dense = (0..3)
        .map(|y| IVec3::new(1, y, 1))
        .max_by_key(|&c| mesher.mesh(&hills, c, 0).indices.len())
        .unwrap_or(IVec3::ONE);
    let mut flat = VoxelGrid::new();
    let ground = Cell::full(Material::GRASS);
    flat.set_box(
        Vec3::new(-300.0, -100.0, -300.0),
        Vec3::new(400.0, 50.0, 400.0),
        ground,
    )
    .expect("a finite box");
    let mut crater = flat.clone();
    crater
        .set_sphere(Vec3::new(64.0, 52.0, 64.0), 40.0, Material::AIR)
        .expect("a finite sphere");
    vec![
        ("hills+caves", hills, dense),
        ("flat", flat, IVec3::ZERO),
        ("crater", crater, IVec3::ZERO),
    ]
}
