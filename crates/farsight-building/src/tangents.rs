//! A plain tangent generator: each triangle's UV gradient summed per vertex, then
//! made orthogonal to the normal. The planar UVs of baked buildings make it exact
//! per face; a game's content step may pass mikktspace instead.

use farsight_format::MeshData;
use glam::{Vec2, Vec3};

/// Tangents (xyz and handedness) for `m`'s vertices from its positions, normals and
/// UVs; a vertex whose triangles have no UV gradient gets any vector orthogonal to
/// its normal.
pub fn uv_gradient_tangents(m: &MeshData) -> Vec<[f32; 4]> {
    let mut t = vec![Vec3::ZERO; m.positions.len()];
    let mut b = vec![Vec3::ZERO; m.positions.len()];
    for tri in m.indices.chunks_exact(3) {
        let [i, j, k] = [tri[0], tri[1], tri[2]].map(|x| x as usize);
        let p = [i, j, k].map(|v| Vec3::from(m.positions[v]));
        let u = [i, j, k].map(|v| Vec2::from(m.uvs[v]));
        let (e1, e2, d1, d2) = (p[1] - p[0], p[2] - p[0], u[1] - u[0], u[2] - u[0]);
        let r = d1.x * d2.y - d2.x * d1.y;
        if r.abs() < 1e-12 {
            continue;
        }
        let (s, w) = ((e1 * d2.y - e2 * d1.y) / r, (e2 * d1.x - e1 * d2.x) / r);
        for v in [i, j, k] {
            t[v] += s;
            b[v] += w;
        }
    }
    (0..m.positions.len())
        .map(|v| {
            let n = Vec3::from(m.normals[v]);
            let tt = (t[v] - n * n.dot(t[v]))
                .try_normalize()
                .unwrap_or_else(|| n.any_orthonormal_vector());
            let hand = if n.cross(tt).dot(b[v]) < 0.0 {
                -1.0
            } else {
                1.0
            };
            [tt.x, tt.y, tt.z, hand]
        })
        .collect()
}
