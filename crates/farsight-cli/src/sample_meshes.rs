//! The meshes that `stream-sim`, `world build` and the demo cook when the user names
//! none: the shared corpus (`../shared/data/meshes`) when it stands beside the
//! current folder, as in a checkout; else four meshes generated here and written as
//! OBJ files (with normals and uvs) to a temporary folder, so that the commands run
//! on a machine that has only the binary. The generated shapes are the kinds the
//! corpus holds: a smooth closed surface with uv seams and poles (a rock), a torus
//! (a surface of genus one), an open height field with a border (a terrain tile) and
//! a hard-surface model with split normals (a stepped tower). Same bytes on every
//! run: the noise is a hash of the lattice point, no random state.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::output::TempDir;

/// Where the default shared meshes are looked for, relative to the current folder.
pub const SHARED_MESHES: &str = "../shared/data/meshes";

/// A folder of meshes to cook: the user's or the shared one, or the generated
/// meshes in a temporary folder that lives as long as this value.
pub struct MeshSource {
    pub dir: PathBuf,
    /// How the reports name the source.
    pub label: String,
    _generated: Option<TempDir>,
}

impl MeshSource {
    /// `given`, the shared meshes when they are there, else the generated ones.
    pub fn resolve(given: Option<&Path>) -> Result<Self, String> {
        if let Some(dir) = given {
            return Ok(Self {
                dir: dir.to_path_buf(),
                label: dir.display().to_string(),
                _generated: None,
            });
        }
        let shared = Path::new(SHARED_MESHES);
        if shared.is_dir() {
            return Ok(Self {
                dir: shared.to_path_buf(),
                label: SHARED_MESHES.to_string(),
                _generated: None,
            });
        }
        let temp = TempDir::new("farsight-sample-meshes")?;
        let names = write_all(temp.path())?;
        Ok(Self {
            dir: temp.path().to_path_buf(),
            label: format!(
                "{} generated meshes ({}; {SHARED_MESHES} is not beside this folder)",
                names.len(),
                names.join(", ")
            ),
            _generated: Some(temp),
        })
    }
}

/// One generated mesh: positions, normals, uvs per vertex, and triangles.
#[derive(Default)]
pub struct Sample {
    pub positions: Vec<[f32; 3]>,
    pub normals: Vec<[f32; 3]>,
    pub uvs: Vec<[f32; 2]>,
    pub triangles: Vec<[u32; 3]>,
}

/// Writes every generated mesh as `NAME.obj` into `dir`; returns the names.
pub fn write_all(dir: &Path) -> Result<Vec<&'static str>, String> {
    let mut names = Vec::new();
    for (name, mesh) in samples() {
        let path = dir.join(format!("{name}.obj"));
        std::fs::write(&path, obj_text(name, &mesh))
            .map_err(|e| crate::output::io_error(&path, &e))?;
        names.push(name);
    }
    Ok(names)
}

/// The generated meshes, by name.
pub fn samples() -> [(&'static str, Sample); 4] {
    [
        ("rock", rock(128, 64)),
        ("torus", torus(160, 48)),
        ("terrain_tile", tile(100)),
        ("tower", tower()),
    ]
}

/// The mesh as OBJ text: `v`, `vt`, `vn`, then faces `a/a/a b/b/b c/c/c`.
pub fn obj_text(name: &str, m: &Sample) -> String {
    let mut s = String::with_capacity(64 * m.positions.len() + 32 * m.triangles.len());
    let _ = writeln!(s, "# farsight generated sample mesh\no {name}");
    for p in &m.positions {
        let _ = writeln!(s, "v {} {} {}", p[0], p[1], p[2]);
    }
    for t in &m.uvs {
        let _ = writeln!(s, "vt {} {}", t[0], t[1]);
    }
    for n in &m.normals {
        let _ = writeln!(s, "vn {} {} {}", n[0], n[1], n[2]);
    }
    for t in &m.triangles {
        let [a, b, c] = t.map(|i| i + 1);
        let _ = writeln!(s, "f {a}/{a}/{a} {b}/{b}/{b} {c}/{c}/{c}");
    }
    s
}

/// A value in [-1, 1] for the lattice point (x, y, z), from an integer hash.
fn lattice(x: i32, y: i32, z: i32) -> f32 {
    let mut h = (x as u32).wrapping_mul(0x8da6_b343)
        ^ (y as u32).wrapping_mul(0xd816_3841)
        ^ (z as u32).wrapping_mul(0xcb1a_b31f);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    h = h.wrapping_mul(0x297a_2d39);
    h ^= h >> 15;
    (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
}

/// Smooth value noise in [-1, 1]: the lattice values blended trilinearly with a
/// smoothstep.
fn noise(p: [f32; 3]) -> f32 {
    let i = p.map(|c| c.floor());
    let f: [f32; 3] = std::array::from_fn(|k| {
        let t = p[k] - i[k];
        t * t * (3.0 - 2.0 * t)
    });
    let [x, y, z] = i.map(|c| c as i32);
    let mut v = 0.0;
    for corner in 0..8 {
        let (dx, dy, dz) = (corner & 1, (corner >> 1) & 1, (corner >> 2) & 1);
        let w = [dx, dy, dz]
            .iter()
            .zip(f)
            .map(|(&d, t)| if d == 1 { t } else { 1.0 - t })
            .product::<f32>();
        v += w * lattice(x + dx, y + dy, z + dz);
    }
    v
}

/// Four octaves of [`noise`], about [-1, 1].
fn fbm(p: [f32; 3]) -> f32 {
    let (mut sum, mut amp, mut freq) = (0.0, 0.5, 1.0);
    for _ in 0..4 {
        sum += amp * noise(p.map(|c| c * freq));
        amp *= 0.5;
        freq *= 2.03;
    }
    sum
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn normalize(v: [f32; 3]) -> [f32; 3] {
    let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if l > 0.0 {
        v.map(|c| c / l)
    } else {
        [0.0, 1.0, 0.0]
    }
}

/// Area-weighted vertex normals, summed over the vertices that `canonical` maps to
/// one (the copies of a vertex along a uv seam or at a pole), so that the copies of
/// a position share its normal and the surface shows no seam.
fn smooth_normals(m: &mut Sample, canonical: impl Fn(u32) -> u32) {
    let mut sum = vec![[0.0f32; 3]; m.positions.len()];
    for t in &m.triangles {
        let [a, b, c] = t.map(|i| m.positions[i as usize]);
        let n = cross(sub(b, a), sub(c, a));
        for &v in t {
            let s = &mut sum[canonical(v) as usize];
            for k in 0..3 {
                s[k] += n[k];
            }
        }
    }
    m.normals = (0..m.positions.len() as u32)
        .map(|v| normalize(sum[canonical(v) as usize]))
        .collect();
}

/// A grid of `(nu + 1) x (nv + 1)` vertices from `at(u, v)` (u, v in [0, 1]), two
/// triangles a cell, skipping the cells' triangles that `skip` names.
fn grid(
    nu: u32,
    nv: u32,
    at: impl Fn(f32, f32) -> [f32; 3],
    uv_scale: [f32; 2],
    skip: impl Fn(u32, u32, bool) -> bool,
) -> Sample {
    let mut m = Sample::default();
    for j in 0..=nv {
        for i in 0..=nu {
            let (u, v) = (i as f32 / nu as f32, j as f32 / nv as f32);
            m.positions.push(at(u, v));
            m.uvs.push([u * uv_scale[0], v * uv_scale[1]]);
        }
    }
    let id = |i: u32, j: u32| j * (nu + 1) + i;
    for j in 0..nv {
        for i in 0..nu {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
            if !skip(i, j, false) {
                m.triangles.push([a, c, b]);
            }
            if !skip(i, j, true) {
                m.triangles.push([a, d, c]);
            }
        }
    }
    m
}

/// `t` in [0, 1), 1 taken back to 0: a closed surface's seam column.
fn wrap(t: f32) -> f32 {
    if t >= 1.0 {
        0.0
    } else {
        t
    }
}

/// A bumpy sphere: a latitude-longitude grid displaced by noise of the direction
/// (so the seam's two copies of a vertex stay at one position), one triangle per
/// cell in the rows at the poles.
fn rock(nu: u32, nv: u32) -> Sample {
    use std::f32::consts::{PI, TAU};
    // The seam's last column is the first one again and each pole one point, exactly.
    let dir = |u: f32, v: f32| {
        let (theta, phi) = (wrap(u) * TAU, v * PI);
        match v {
            0.0 => [0.0, 1.0, 0.0],
            1.0 => [0.0, -1.0, 0.0],
            _ => [phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin()],
        }
    };
    let at = |u: f32, v: f32| {
        let d = dir(u, v);
        let r = 1.0 + 0.25 * fbm(d.map(|c| c * 2.5 + 7.0));
        d.map(|c| c * r)
    };
    // In the first row the cell's top edge is the north pole: its triangle (a, c, b)
    // would have two corners there; in the last row the other one would.
    let mut m = grid(nu, nv, at, [2.0, 1.0], |_, j, second| {
        (j == 0 && !second) || (j == nv - 1 && second)
    });
    let canonical = move |v: u32| {
        let (i, j) = (v % (nu + 1), v / (nu + 1));
        if j == 0 || j == nv {
            j * (nu + 1)
        } else {
            j * (nu + 1) + i % nu
        }
    };
    smooth_normals(&mut m, canonical);
    m
}

/// A torus with ridges along its tube, its two seams closed by position.
fn torus(nu: u32, nv: u32) -> Sample {
    use std::f32::consts::TAU;
    let at = |u: f32, v: f32| {
        let (a, b) = (wrap(u) * TAU, wrap(v) * TAU);
        let r = 0.35 + 0.03 * (a * 24.0).sin() * (b * 3.0).cos();
        let ring = 1.0 + r * b.cos();
        [ring * a.cos(), r * b.sin(), ring * a.sin()]
    };
    let mut m = grid(nu, nv, at, [8.0, 2.0], |_, _, _| false);
    let canonical = move |v: u32| {
        let (i, j) = (v % (nu + 1), v / (nu + 1));
        (j % nv) * (nu + 1) + i % nu
    };
    smooth_normals(&mut m, canonical);
    m
}

/// A square height field of `n x n` cells, open at its border.
fn tile(n: u32) -> Sample {
    let at = |u: f32, v: f32| {
        let h = 0.3 * fbm([u * 4.0, 3.7, v * 4.0]) + 0.08 * fbm([u * 16.0, 1.3, v * 16.0]);
        [u * 2.0 - 1.0, h, v * 2.0 - 1.0]
    };
    let mut m = grid(n, n, at, [4.0, 4.0], |_, _, _| false);
    smooth_normals(&mut m, |v| v);
    m
}

/// A tower of four stepped boxes, closed (a floor under it, a roof on each tier),
/// each wall a grid of window quads with recessed corners, flat shaded: every face
/// has its own vertices and normal, so every edge between two faces is a normal
/// seam. Positions are integer lattice points times the cell size, so the edges
/// that walls, roofs and the floor share meet at the same floats.
fn tower() -> Sample {
    const CELL: f32 = 0.2;
    const STOREY: f32 = 0.15;
    let mut m = Sample::default();
    // (half width in cells, bottom and top storey)
    let tiers = [(6i32, 0i32, 16i32), (4, 16, 26), (2, 26, 34), (1, 34, 38)];
    let at = |x: i32, y: i32, z: i32| [x as f32 * CELL, y as f32 * STOREY, z as f32 * CELL];
    // A flat patch of lattice quads: corner + i * du + j * dv, `keep(i, j)` choosing
    // the cells, `inset(i, j)` pushing a vertex in along -normal.
    let patch = |m: &mut Sample,
                 (n_i, n_j): (i32, i32),
                 point: &dyn Fn(i32, i32) -> [i32; 3],
                 normal: [f32; 3],
                 keep: &dyn Fn(i32, i32) -> bool,
                 inset: &dyn Fn(i32, i32) -> bool| {
        let base = m.positions.len() as u32;
        for j in 0..=n_j {
            for i in 0..=n_i {
                let [x, y, z] = point(i, j);
                let mut p = at(x, y, z);
                if inset(i, j) {
                    for k in 0..3 {
                        p[k] -= normal[k] * 0.02;
                    }
                }
                m.positions.push(p);
                m.normals.push(normal);
                let (u, v) = if normal[1] != 0.0 {
                    (x as f32 * 0.25, z as f32 * 0.25)
                } else {
                    ((x + z) as f32 * 0.25, y as f32 * 0.5)
                };
                m.uvs.push([u, v]);
            }
        }
        let id = |i: i32, j: i32| base + (j * (n_i + 1) + i) as u32;
        for j in 0..n_j {
            for i in 0..n_i {
                if keep(i, j) {
                    let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
                    m.triangles.push([a, b, c]);
                    m.triangles.push([a, c, d]);
                }
            }
        }
    };
    let all = |_: i32, _: i32| true;
    let none = |_: i32, _: i32| false;
    for (t, &(w, y0, y1)) in tiers.iter().enumerate() {
        let (cols, rows) = (2 * w, y1 - y0);
        // Window recesses: the interior vertices at odd column and row.
        let window = |i: i32, j: i32| i % 2 == 1 && j % 2 == 1 && j < rows;
        // The four walls, each wound outwards: (corner, step along the wall, normal).
        let walls = [
            ([-w, w], [1, 0], [0.0, 0.0, 1.0]),
            ([w, w], [0, -1], [1.0, 0.0, 0.0]),
            ([w, -w], [-1, 0], [0.0, 0.0, -1.0]),
            ([-w, -w], [0, 1], [-1.0, 0.0, 0.0]),
        ];
        for (c, d, normal) in walls {
            let point = |i: i32, j: i32| [c[0] + d[0] * i, y0 + j, c[1] + d[1] * i];
            patch(&mut m, (cols, rows), &point, normal, &all, &window);
        }
        // The roof: the tier's square at its top, less the next tier's footprint.
        let inner = tiers.get(t + 1).map_or(0, |n| n.0);
        let keep = |i: i32, j: i32| {
            let (x, z) = (i - w, w - j - 1);
            !(inner > 0 && x >= -inner && x < inner && z >= -inner && z < inner)
        };
        let roof = |i: i32, j: i32| [i - w, y1, w - j];
        patch(&mut m, (cols, cols), &roof, [0.0, 1.0, 0.0], &keep, &none);
        if t == 0 {
            let floor = |i: i32, j: i32| [i - w, 0, j - w];
            patch(&mut m, (cols, cols), &floor, [0.0, -1.0, 0.0], &all, &none);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every triangle's winding agrees with its vertices' normals (faces point
    /// out), no triangle is degenerate, and every index is in range.
    #[test]
    fn samples_are_well_formed_and_face_outwards() {
        for (name, m) in samples() {
            let n = m.positions.len();
            assert!(m.triangles.len() >= 2000, "{name}: {}", m.triangles.len());
            assert_eq!(m.normals.len(), n, "{name}");
            assert_eq!(m.uvs.len(), n, "{name}");
            for t in &m.triangles {
                assert!(t.iter().all(|&i| (i as usize) < n), "{name}: {t:?}");
                let [a, b, c] = t.map(|i| m.positions[i as usize]);
                let face = cross(sub(b, a), sub(c, a));
                let area = face.iter().map(|c| c * c).sum::<f32>().sqrt();
                assert!(area > 1e-9, "{name}: degenerate {t:?}");
                let normal = t
                    .iter()
                    .map(|&i| m.normals[i as usize])
                    .fold([0.0; 3], |s, v| [s[0] + v[0], s[1] + v[1], s[2] + v[2]]);
                let dot: f32 = (0..3).map(|k| face[k] * normal[k]).sum();
                assert!(dot > 0.0, "{name}: triangle {t:?} faces inwards");
            }
        }
    }

    /// The closed shapes are closed: every edge, welded by position, is shared by
    /// exactly two triangles; the tile has an open border of 4 x 100 edges.
    #[test]
    fn rock_torus_and_tower_are_closed_and_the_tile_is_open() {
        use std::collections::HashMap;
        for (name, m) in samples() {
            let key = |i: u32| m.positions[i as usize].map(f32::to_bits);
            let mut edges: HashMap<([u32; 3], [u32; 3]), u32> = HashMap::new();
            for t in &m.triangles {
                for k in 0..3 {
                    let (a, b) = (key(t[k]), key(t[(k + 1) % 3]));
                    *edges
                        .entry(if a < b { (a, b) } else { (b, a) })
                        .or_default() += 1;
                }
            }
            let open = edges.values().filter(|&&c| c == 1).count();
            let over = edges.values().filter(|&&c| c > 2).count();
            assert_eq!(over, 0, "{name}: non-manifold edges");
            match name {
                "rock" | "torus" | "tower" => assert_eq!(open, 0, "{name}: open edges"),
                "terrain_tile" => assert_eq!(open, 400, "{name}"),
                other => panic!("{other}: a sample the test does not know"),
            }
        }
    }

    /// The same bytes on every call, and text the OBJ importer reads back.
    #[test]
    fn obj_text_is_stable_and_cooks() {
        let dir = TempDir::new("farsight-sample-test").unwrap();
        let names = write_all(dir.path()).unwrap();
        for name in names {
            let path = dir.path().join(format!("{name}.obj"));
            let bytes = std::fs::read(&path).unwrap();
            let again = samples()
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(n, m)| obj_text(n, &m))
                .unwrap();
            assert_eq!(bytes, again.as_bytes(), "{name}");
            let kind = farsight_mesh::CookKind::Clusters(farsight_mesh::ClusterConfig::default());
            let cooked =
                farsight_mesh::cook_file(&path, &kind).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!cooked.bytes.is_empty(), "{name}");
        }
    }
}
