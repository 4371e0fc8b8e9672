//! Tangents where a normal map needs them, and nowhere else.
//!
//! A normal map's texels are directions in the frame of the surface's uv
//! directions, so a renderer needs a tangent per vertex to read it; a material
//! without one never reads them. [`fit_tangents`] keeps the source's tangents on
//! sub-meshes whose material has a normal texture, makes them where the source
//! gave none ([`generate_tangents`]), and clears them everywhere else (they cost
//! 4 floats a vertex in full-precision files and an octahedral pair in cooked
//! ones, and a cooked chain stores none for a sub-mesh without them).

use glam::{Vec2, Vec3};

use crate::mesh::{Mesh, SubMesh};

/// Keeps or makes tangents on every sub-mesh of `mesh` whose material `normal_mapped`
/// says has a normal texture, and drops them on the others (zeroed,
/// `has_tangents` false).
pub fn fit_tangents(mesh: &mut Mesh, normal_mapped: impl Fn(&str) -> bool) {
    for s in &mut mesh.submeshes {
        if normal_mapped(&s.material) {
            if !s.has_tangents {
                generate_tangents(s);
            }
        } else {
            for v in &mut s.vertices {
                v.tangent = [0.0; 4];
            }
            s.has_tangents = false;
        }
    }
}

/// Gives every vertex of `s` a unit tangent along the direction its first uv
/// coordinate grows, perpendicular to its normal, with the handedness (w, +1 or
/// -1) glTF uses: the bitangent is `cross(normal, tangent) * w`. Each triangle's uv
/// gradient is added to its corners weighted by its area; a vertex whose triangles
/// give none (no uvs, degenerate uvs) gets any direction perpendicular to its normal.
pub fn generate_tangents(s: &mut SubMesh) {
    let n = s.vertices.len();
    let mut sum_u = vec![Vec3::ZERO; n];
    let mut sum_v = vec![Vec3::ZERO; n];
    for t in s.indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| &s.vertices[i as usize]);
        let (p0, p1, p2) = (
            Vec3::from(a.position),
            Vec3::from(b.position),
            Vec3::from(c.position),
        );
        let (w0, w1, w2) = (Vec2::from(a.uv), Vec2::from(b.uv), Vec2::from(c.uv));
        let (e1, e2) = (p1 - p0, p2 - p0);
        let (d1, d2) = (w1 - w0, w2 - w0);
        let det = d1.x * d2.y - d2.x * d1.y;
        if !det.is_finite() || det.abs() < 1e-20 {
            continue;
        }
        let area = e1.cross(e2).length();
        let du = ((e1 * d2.y - e2 * d1.y) / det).normalize_or_zero() * area;
        let dv = ((e2 * d1.x - e1 * d2.x) / det).normalize_or_zero() * area;
        for &i in t {
            sum_u[i as usize] += du;
            sum_v[i as usize] += dv;
        }
    }
    for ((v, u), b) in s.vertices.iter_mut().zip(&sum_u).zip(&sum_v) {
        let normal = Vec3::from(v.normal).normalize_or(Vec3::Z);
        let mut t = (*u - normal * normal.dot(*u)).normalize_or_zero();
        if t == Vec3::ZERO {
            t = normal.any_orthonormal_vector();
        }
        let w = if normal.cross(t).dot(*b) < 0.0 {
            -1.0
        } else {
            1.0
        };
        v.tangent = [t.x, t.y, t.z, w];
    }
    s.has_tangents = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::Vertex;

    /// A quad in the xy plane facing +z, its uvs `uv(corner)`.
    fn quad(uv: impl Fn([f32; 2]) -> [f32; 2]) -> SubMesh {
        let corners = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        SubMesh {
            name: "quad".into(),
            material: "m".into(),
            vertices: corners
                .iter()
                .map(|&[x, y]| Vertex {
                    position: [x, y, 0.0],
                    normal: [0.0, 0.0, 1.0],
                    uv: uv([x, y]),
                    tangent: [0.0; 4],
                })
                .collect(),
            indices: vec![0, 1, 2, 0, 2, 3],
            has_tangents: false,
        }
    }

    #[test]
    fn tangents_follow_u_and_handedness_follows_v() {
        let mut s = quad(|p| p);
        generate_tangents(&mut s);
        assert!(s.has_tangents);
        for v in &s.vertices {
            assert_eq!(v.tangent, [1.0, 0.0, 0.0, 1.0]);
        }
        // v running down the quad (a mirrored map): the same tangent, handedness -1.
        let mut s = quad(|[x, y]| [x, 1.0 - y]);
        generate_tangents(&mut s);
        for v in &s.vertices {
            assert_eq!(v.tangent, [1.0, 0.0, 0.0, -1.0]);
        }
        // u running along y: the tangent is +y.
        let mut s = quad(|[x, y]| [y, x]);
        generate_tangents(&mut s);
        for v in &s.vertices {
            let t = Vec3::new(v.tangent[0], v.tangent[1], v.tangent[2]);
            assert!((t - Vec3::Y).length() < 1e-6, "{t}");
        }
    }

    #[test]
    fn degenerate_uvs_still_give_unit_tangents_across_the_normal() {
        let mut s = quad(|_| [0.5, 0.5]);
        generate_tangents(&mut s);
        for v in &s.vertices {
            let t = Vec3::new(v.tangent[0], v.tangent[1], v.tangent[2]);
            assert!((t.length() - 1.0).abs() < 1e-6);
            assert!(t.dot(Vec3::Z).abs() < 1e-6);
        }
    }

    #[test]
    fn fit_keeps_makes_or_drops_by_material() {
        let mut kept = quad(|p| p);
        kept.material = "bumpy".into();
        kept.has_tangents = true;
        kept.vertices[0].tangent = [0.0, 1.0, 0.0, -1.0];
        let mut made = kept.clone();
        made.has_tangents = false;
        let mut dropped = kept.clone();
        dropped.material = "flat".into();
        let mut mesh = Mesh {
            name: "m".into(),
            submeshes: vec![kept, made, dropped],
        };
        fit_tangents(&mut mesh, |m| m == "bumpy");
        let [kept, made, dropped] = &mesh.submeshes[..] else {
            unreachable!()
        };
        assert!(kept.has_tangents && made.has_tangents && !dropped.has_tangents);
        assert_eq!(
            kept.vertices[0].tangent,
            [0.0, 1.0, 0.0, -1.0],
            "source kept"
        );
        assert_eq!(made.vertices[0].tangent, [1.0, 0.0, 0.0, 1.0], "made");
        assert!(dropped.vertices.iter().all(|v| v.tangent == [0.0; 4]));
    }
}
