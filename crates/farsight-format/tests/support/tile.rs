//! A generated terrain tile whose uvs follow its positions, for farsight-format's
//! tests and the format benches (each includes this file with `#[path]`): an
//! `n x n` quad height field over [-1, 1] in x and z, its inner vertices moved
//! off the lattice by up to a third of a cell (as a tile cut from a triangulated
//! survey or an eroded, relaxed mesh is), heights from hashed value noise, normals
//! from the height function, uvs an affine map of (x, z).

use farsight_format::MeshData;

/// A value in [-1, 1] for the lattice point (x, z), from an integer hash.
fn lattice(x: i32, z: i32, seed: u32) -> f32 {
    let mut h = (x as u32).wrapping_mul(0x9e37_79b1) ^ (z as u32).wrapping_mul(0x85eb_ca77) ^ seed;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^= h >> 16;
    (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
}

/// Smooth value noise: the lattice blended bilinearly with a smoothstep.
fn noise(x: f32, z: f32, seed: u32) -> f32 {
    let (ix, iz) = (x.floor(), z.floor());
    let s = |t: f32| t * t * (3.0 - 2.0 * t);
    let (fx, fz) = (s(x - ix), s(z - iz));
    let (ix, iz) = (ix as i32, iz as i32);
    let a = lattice(ix, iz, seed) * (1.0 - fx) + lattice(ix + 1, iz, seed) * fx;
    let b = lattice(ix, iz + 1, seed) * (1.0 - fx) + lattice(ix + 1, iz + 1, seed) * fx;
    a * (1.0 - fz) + b * fz
}

/// Height at (x, z): five octaves of noise, about +-0.3.
fn height(x: f32, z: f32) -> f32 {
    let (mut sum, mut amp, mut freq) = (0.0, 0.2, 2.0);
    for octave in 0..5 {
        sum += amp * noise(x * freq, z * freq, octave);
        amp *= 0.5;
        freq *= 2.1;
    }
    sum
}

/// The tile: `(n + 1)^2` vertices, `2 n^2` triangles, uvs `uv_scale * (x + 1) / 2`
/// and likewise for z.
pub fn terrain_tile(n: u32, uv_scale: f32) -> MeshData {
    let mut m = MeshData::default();
    let e = 1e-3;
    for j in 0..=n {
        for i in 0..=n {
            let inner = i > 0 && j > 0 && i < n && j < n;
            let jitter = |seed| {
                if inner {
                    lattice(i as i32, j as i32, seed) / (3.0 * n as f32)
                } else {
                    0.0
                }
            };
            let (u, v) = (
                i as f32 / n as f32 + jitter(101),
                j as f32 / n as f32 + jitter(202),
            );
            let (x, z) = (u * 2.0 - 1.0, v * 2.0 - 1.0);
            m.positions.push([x, height(x, z), z]);
            let dx = (height(x + e, z) - height(x - e, z)) / (2.0 * e);
            let dz = (height(x, z + e) - height(x, z - e)) / (2.0 * e);
            let l = (dx * dx + 1.0 + dz * dz).sqrt();
            m.normals.push([-dx / l, 1.0 / l, -dz / l]);
            m.uvs.push([u * uv_scale, v * uv_scale]);
        }
    }
    let row = n + 1;
    for j in 0..n {
        for i in 0..n {
            let a = j * row + i;
            m.indices
                .extend_from_slice(&[a, a + row, a + 1, a + 1, a + row, a + row + 1]);
        }
    }
    m
}
