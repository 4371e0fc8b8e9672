//! Validation and repair shared by every importer: what cannot be trusted is an
//! error, what can be fixed is fixed and reported as a [`Warning`].

use glam::Vec3;

use crate::error::ImportErrorKind;
use crate::mesh::SubMesh;
use crate::Warning;

/// Validates a freshly read sub-mesh, then removes degenerate triangles and
/// generates normals where the source had none (all-zero or non-finite normals).
pub(crate) fn repair_submesh(
    s: &mut SubMesh,
    warnings: &mut Vec<Warning>,
) -> Result<(), ImportErrorKind> {
    validate_submesh(s)?;
    let removed = remove_degenerates(s);
    if removed > 0 {
        warnings.push(Warning::DegenerateTrianglesRemoved {
            submesh: s.name.clone(),
            count: removed,
        });
    }
    let duplicates = remove_duplicates(s);
    if duplicates > 0 {
        warnings.push(Warning::DuplicateTrianglesRemoved {
            submesh: s.name.clone(),
            count: duplicates,
        });
    }
    let usable = |n: [f32; 3]| {
        let v = Vec3::from(n);
        v.is_finite() && v.length_squared() > 1e-12
    };
    if !s.indices.is_empty()
        && s.indices
            .iter()
            .any(|&i| !usable(s.vertices[i as usize].normal))
    {
        generate_normals(s);
        warnings.push(Warning::NormalsGenerated {
            submesh: s.name.clone(),
        });
    }
    for v in &mut s.vertices {
        if !(v.uv[0].is_finite() && v.uv[1].is_finite()) {
            v.uv = [0.0; 2];
        }
        if !v.tangent.iter().all(|t| t.is_finite()) {
            v.tangent = [0.0; 4];
        }
    }
    Ok(())
}

/// The checks whose failure makes a sub-mesh unusable.
pub(crate) fn validate_submesh(s: &SubMesh) -> Result<(), ImportErrorKind> {
    if s.indices.len() % 3 != 0 {
        return Err(ImportErrorKind::IndexCountNotTriangles {
            submesh: s.name.clone(),
            count: s.indices.len(),
        });
    }
    let n = s.vertices.len();
    if let Some((position, &index)) = s.indices.iter().enumerate().find(|(_, &i)| i as usize >= n) {
        return Err(ImportErrorKind::IndexOutOfRange {
            submesh: s.name.clone(),
            position,
            index,
            vertex_count: n,
        });
    }
    if let Some((vertex, v)) = s
        .vertices
        .iter()
        .enumerate()
        .find(|(_, v)| !v.position.iter().all(|p| p.is_finite()))
    {
        return Err(ImportErrorKind::NonFinite {
            submesh: s.name.clone(),
            vertex,
            attribute: "position",
            value: v.position,
        });
    }
    Ok(())
}

/// Removes triangles with a repeated index or two corners at the same position, or
/// zero area; returns how many went.
pub(crate) fn remove_degenerates(s: &mut SubMesh) -> usize {
    let before = s.indices.len() / 3;
    let verts = &s.vertices;
    let mut kept = Vec::with_capacity(s.indices.len());
    for t in s.indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| Vec3::from(verts[i as usize].position));
        let degenerate = t[0] == t[1]
            || t[1] == t[2]
            || t[0] == t[2]
            || a == b
            || b == c
            || a == c
            || (b - a).cross(c - a).length_squared() == 0.0;
        if !degenerate {
            kept.extend_from_slice(t);
        }
    }
    s.indices = kept;
    before - s.indices.len() / 3
}

/// Removes every triangle whose corner positions (bit for bit, in winding order,
/// from any starting corner) repeat an earlier triangle's; returns how many went.
/// A triangle and its reverse (a two-sided sheet) are both kept.
pub(crate) fn remove_duplicates(s: &mut SubMesh) -> usize {
    let before = s.indices.len() / 3;
    let verts = &s.vertices;
    let key = |i: u32| verts[i as usize].position.map(f32::to_bits);
    let mut seen = std::collections::HashSet::with_capacity(before);
    let mut kept = Vec::with_capacity(s.indices.len());
    for t in s.indices.chunks_exact(3) {
        let p = [key(t[0]), key(t[1]), key(t[2])];
        // The rotation starting at the smallest corner: equal for equal cycles.
        let first = (0..3).min_by_key(|&i| p[i]).unwrap_or(0);
        let cycle = [p[first], p[(first + 1) % 3], p[(first + 2) % 3]];
        if seen.insert(cycle) {
            kept.extend_from_slice(t);
        }
    }
    s.indices = kept;
    before - s.indices.len() / 3
}

/// Area-weighted smooth normals, shared across vertices at the same position so a
/// UV seam does not show a lighting seam.
pub(crate) fn generate_normals(s: &mut SubMesh) {
    let positions: Vec<[f32; 3]> = s.vertices.iter().map(|v| v.position).collect();
    let remap = position_remap(&positions);
    let mut acc = vec![Vec3::ZERO; s.vertices.len()];
    for t in s.indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| Vec3::from(positions[i as usize]));
        let n = (b - a).cross(c - a);
        for &i in t {
            acc[remap[i as usize] as usize] += n;
        }
    }
    for (i, v) in s.vertices.iter_mut().enumerate() {
        let n = acc[remap[i] as usize].normalize_or_zero();
        v.normal = if n == Vec3::ZERO {
            [0.0, 0.0, 1.0]
        } else {
            n.to_array()
        };
    }
}

/// Up to this many vertices [`position_remap`] compares positions pairwise: under
/// meshoptimizer's hash table's fixed cost (its allocation and clearing).
const SMALL_WELD: usize = 48;

/// For each vertex, the first vertex with the same position (meshoptimizer's
/// position remap: coordinates compared as floats, so -0 equals 0 and a NaN
/// equals nothing; tested equal to it on random inputs, where it is not called).
pub(crate) fn position_remap(positions: &[[f32; 3]]) -> Vec<u32> {
    position_remap_by(positions, |p| *p)
}

/// [`position_remap`] of the positions `position` reads from `items` in place
/// (a mesh's vertices), with no copy of them gathered first.
pub(crate) fn position_remap_by<T>(items: &[T], position: impl Fn(&T) -> [f32; 3]) -> Vec<u32> {
    if items.is_empty() {
        return Vec::new();
    }
    if items.len() <= SMALL_WELD {
        return small_position_remap(items, position);
    }
    hashed_position_remap(items, position)
}

/// [`position_remap`] past a few vertices: meshoptimizer's algorithm (an open
/// addressing table of each position's first vertex, probed quadratically, its
/// hash of the coordinates' bits with -0 taken as 0), inlined: the library's
/// generic lookup costs about 130 instructions a vertex (a hasher called through
/// its comparison callback), this about a third. Any hash gives the same list:
/// the first vertex of a position is the one entered, and every later vertex at
/// that position (floats equal, so the same bits but for the zero's sign) probes
/// the same slots until it meets it; a NaN equals nothing and enters itself.
fn hashed_position_remap<T>(items: &[T], position: impl Fn(&T) -> [f32; 3]) -> Vec<u32> {
    const EMPTY: u32 = u32::MAX;
    let n = items.len();
    // At least a quarter of the slots stay empty (meshoptimizer's sizing), so a
    // probe always ends.
    let slots = (n + n / 4).next_power_of_two();
    let mask = slots - 1;
    let mut table = vec![EMPTY; slots];
    let mut out = Vec::with_capacity(n);
    for (i, p) in items.iter().map(&position).enumerate() {
        let [x, y, z] = p.map(|c| {
            let bits = c.to_bits();
            let bits = if bits == 0x8000_0000 { 0 } else { bits };
            bits ^ (bits >> 17)
        });
        let hash =
            x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663) ^ z.wrapping_mul(83_492_791);
        let mut at = hash as usize & mask;
        let mut probe = 0;
        let first = loop {
            let e = table[at];
            if e == EMPTY {
                table[at] = i as u32;
                break i as u32;
            }
            let q = position(&items[e as usize]);
            if q[0] == p[0] && q[1] == p[1] && q[2] == p[2] {
                break e;
            }
            probe += 1;
            at = (at + probe) & mask;
        };
        out.push(first);
    }
    out
}

/// [`position_remap`] of a few vertices (at most [`SMALL_WELD`]): each compared
/// with the first vertices of the positions before it, kept on the stack (no
/// allocation but the answer's).
fn small_position_remap<T>(items: &[T], position: impl Fn(&T) -> [f32; 3]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(items.len());
    let mut firsts = [[0.0f32; 3]; SMALL_WELD];
    let mut first_of = [0u32; SMALL_WELD];
    let mut count = 0;
    for (i, p) in items.iter().map(&position).enumerate() {
        let same = |q: &[f32; 3]| q[0] == p[0] && q[1] == p[1] && q[2] == p[2];
        let first = match firsts[..count].iter().position(same) {
            Some(k) => first_of[k],
            None => {
                firsts[count] = p;
                first_of[count] = i as u32;
                count += 1;
                i as u32
            }
        };
        out.push(first);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::remove_duplicates;

    /// meshoptimizer's position weld, the reference the welds are tested against.
    fn meshopt_position_remap(positions: &[[f32; 3]]) -> Vec<u32> {
        let adapter =
            meshopt::VertexDataAdapter::new(bytemuck::cast_slice(positions), 12, 0).unwrap();
        meshopt::generate_position_remap(&adapter)
    }

    /// The pairwise weld of a few vertices is meshoptimizer's: repeated positions,
    /// -0 beside 0, NaNs, every size up to the threshold and past it (through
    /// `position_remap`, which welds pairwise up to the threshold).
    #[test]
    fn a_small_weld_is_meshoptimizers() {
        let mut next = crate::test_numbers(0x9E37_79B9_7F4A_7C15);
        for round in 0..3000 {
            let n = 1 + round % (super::SMALL_WELD + 8);
            let coordinate = |k: u64| match k {
                0 => -0.0,
                1 => f32::NAN,
                2 => 0.0,
                k => k as f32 * 0.25,
            };
            let kinds = 2 + next(6);
            let positions: Vec<[f32; 3]> = (0..n)
                .map(|_| [0; 3].map(|_| coordinate(next(kinds))))
                .collect();
            assert_eq!(
                super::position_remap(&positions),
                meshopt_position_remap(&positions),
                "{positions:?}"
            );
        }
    }

    /// The hashed weld is meshoptimizer's on random inputs: few distinct
    /// coordinates (many repeated positions), -0 beside 0, NaNs, grids of
    /// integers (the hash's weak case), sizes around the table's powers of two.
    #[test]
    fn the_hashed_weld_is_meshoptimizers() {
        let mut next = crate::test_numbers(0x2545_F491_4F6C_DD1D);
        for round in 0..400u64 {
            let n = 1 + next(3000) as usize;
            let kinds = 2 + next(if round % 2 == 0 { 8 } else { 4000 });
            let coordinate = |k: u64| match k {
                0 => -0.0,
                1 => f32::NAN,
                2 => 0.0,
                k if round % 3 == 0 => k as f32,
                k => k as f32 * 0.37 - 100.0,
            };
            let positions: Vec<[f32; 3]> = (0..n)
                .map(|_| [0; 3].map(|_| coordinate(next(kinds))))
                .collect();
            assert_eq!(
                super::hashed_position_remap(&positions, |p| *p),
                meshopt_position_remap(&positions),
                "round {round}, {n} positions"
            );
        }
    }

    use crate::mesh::{SubMesh, Vertex};

    #[test]
    fn duplicate_triangles_go_and_reversed_ones_stay() {
        let at = |x: f32, y: f32| Vertex {
            position: [x, y, 0.0],
            ..Vertex::default()
        };
        // Vertex 4 repeats vertex 0's position under another index.
        let vertices = vec![
            at(0.0, 0.0),
            at(1.0, 0.0),
            at(0.0, 1.0),
            at(1.0, 1.0),
            at(0.0, 0.0),
        ];
        let mut s = SubMesh {
            name: "dup".into(),
            vertices,
            indices: vec![
                0, 1, 2, // kept
                1, 2, 0, // the same cycle: removed
                4, 1, 2, // the same positions through another index: removed
                0, 2, 1, // reversed (back face): kept
                1, 3, 2, // another triangle: kept
            ],
            material: "m".into(),
            has_tangents: false,
        };
        assert_eq!(remove_duplicates(&mut s), 2);
        assert_eq!(s.indices, vec![0, 1, 2, 0, 2, 1, 1, 3, 2]);
    }
}
